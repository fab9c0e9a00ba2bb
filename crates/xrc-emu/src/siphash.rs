//! SipHash-2-4 (J.-P. Aumasson, D. J. Bernstein, "SipHash: a fast
//! short-input PRF", INDOCRYPT 2012), the keyed tag of the base station's
//! option (`feedback::tagged_option_bytes`). The kernel's sender computes
//! the same function in BPF (`crates/xrc-kernel/bpf/siphash.h`); the test
//! vector of the paper's appendix checks both sides' reading of it.

/// SipHash-2-4 of `msg` under the 128-bit key (k0, k1): the key's bytes
/// 0..8 and 8..16 as little-endian words.
pub fn siphash24(k0: u64, k1: u64, msg: &[u8]) -> u64 {
    let mut v = [
        k0 ^ 0x736f_6d65_7073_6575,
        k1 ^ 0x646f_7261_6e64_6f6d,
        k0 ^ 0x6c79_6765_6e65_7261,
        k1 ^ 0x7465_6462_7974_6573,
    ];
    fn round(v: &mut [u64; 4]) {
        v[0] = v[0].wrapping_add(v[1]);
        v[1] = v[1].rotate_left(13) ^ v[0];
        v[0] = v[0].rotate_left(32);
        v[2] = v[2].wrapping_add(v[3]);
        v[3] = v[3].rotate_left(16) ^ v[2];
        v[0] = v[0].wrapping_add(v[3]);
        v[3] = v[3].rotate_left(21) ^ v[0];
        v[2] = v[2].wrapping_add(v[1]);
        v[1] = v[1].rotate_left(17) ^ v[2];
        v[2] = v[2].rotate_left(32);
    }
    let mut words = msg.chunks_exact(8);
    for w in &mut words {
        let m = u64::from_le_bytes(w.try_into().unwrap());
        v[3] ^= m;
        round(&mut v);
        round(&mut v);
        v[0] ^= m;
    }
    let mut last = [0u8; 8];
    last[..words.remainder().len()].copy_from_slice(words.remainder());
    let b = u64::from_le_bytes(last) | ((msg.len() as u64 & 0xff) << 56);
    v[3] ^= b;
    round(&mut v);
    round(&mut v);
    v[0] ^= b;
    v[2] ^= 0xff;
    for _ in 0..4 {
        round(&mut v);
    }
    v[0] ^ v[1] ^ v[2] ^ v[3]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_papers_test_vector_comes_out() {
        // Appendix A: key 00 01 .. 0f, message 00 01 .. 0e (15 bytes).
        let key: Vec<u8> = (0..16).collect();
        let k0 = u64::from_le_bytes(key[..8].try_into().unwrap());
        let k1 = u64::from_le_bytes(key[8..].try_into().unwrap());
        let msg: Vec<u8> = (0..15).collect();
        assert_eq!(siphash24(k0, k1, &msg), 0xa129_ca61_49be_45e5);
    }
}
