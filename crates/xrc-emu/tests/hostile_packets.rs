//! Any process in a testbed's namespaces can write any bytes to the
//! emulator's devices (a raw socket, a broken stack, a fuzzer), so every
//! function that looks into a packet must take garbage without panicking:
//! the emulator thread would die with the run. These property tests feed
//! the parsers, the XRC option writer, the GSO planner and the capture
//! random bytes and mutated TCP/IPv4 packets (a fixed seed, so a failure
//! replays), and check the invariants each promises on what it accepts.

use xrc_emu::capture::Capture;
use xrc_emu::feedback::{add_option, read_option, Feedback};
use xrc_emu::gso::{super_header, Coalescer};
use xrc_emu::wire::parse_ipv4;
use xrc_emu::Dir;

/// xorshift64*: enough for test inputs, and the same sequence everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn byte(&mut self) -> u8 {
        self.next() as u8
    }
}

fn csum(acc: u32, b: &[u8]) -> u32 {
    let mut acc = acc;
    for c in b.chunks(2) {
        acc += u32::from(c[0]) << 8 | c.get(1).map_or(0, |&x| u32::from(x));
    }
    acc
}

fn fold(mut acc: u32) -> u16 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    !(acc as u16)
}

/// A well-formed TCP/IPv4 segment with both checksums right: `opts` TCP
/// option bytes (a multiple of 4), `payload` bytes of data.
fn segment(seq: u32, id: u16, flags: u8, opts: &[u8], payload: &[u8]) -> Vec<u8> {
    let doff = 20 + opts.len();
    let total = 20 + doff + payload.len();
    let mut p = vec![0u8; 20];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    p[4..6].copy_from_slice(&id.to_be_bytes());
    p[6] = 0x40; // DF
    p[8] = 64;
    p[9] = 6;
    p[12..16].copy_from_slice(&[10, 77, 0, 1]);
    p[16..20].copy_from_slice(&[10, 77, 0, 2]);
    let c = fold(csum(0, &p));
    p[10..12].copy_from_slice(&c.to_be_bytes());
    let mut t = vec![0u8; 20];
    t[0..2].copy_from_slice(&5201u16.to_be_bytes());
    t[2..4].copy_from_slice(&40000u16.to_be_bytes());
    t[4..8].copy_from_slice(&seq.to_be_bytes());
    t[8..12].copy_from_slice(&7u32.to_be_bytes());
    t[12] = ((doff / 4) as u8) << 4;
    t[13] = flags;
    t[14..16].copy_from_slice(&512u16.to_be_bytes());
    t.extend_from_slice(opts);
    t.extend_from_slice(payload);
    let mut acc = csum(0, &p[12..20]);
    acc += 6 + (t.len() as u32);
    let c = fold(csum(acc, &t));
    t[16..18].copy_from_slice(&c.to_be_bytes());
    p.extend_from_slice(&t);
    p
}

/// A timestamps option padded to 12 bytes.
fn ts(val: u32) -> Vec<u8> {
    let mut o = vec![1, 1, 8, 10];
    o.extend_from_slice(&val.to_be_bytes());
    o.extend_from_slice(&3u32.to_be_bytes());
    o
}

/// One input: random bytes, or a good segment with some of its bytes,
/// its length or its header fields spoiled.
fn hostile(r: &mut Rng) -> Vec<u8> {
    match r.below(4) {
        0 => (0..r.below(100)).map(|_| r.byte()).collect(),
        _ => {
            let opts = match r.below(3) {
                0 => Vec::new(),
                1 => ts(r.next() as u32),
                _ => (0..4 * r.below(11)).map(|_| r.byte()).collect(),
            };
            let payload: Vec<u8> = (0..[0, 1, 100, 1448][r.below(4)]).map(|_| r.byte()).collect();
            let mut p = segment(
                r.next() as u32,
                r.next() as u16,
                0x10 | (0x08 * r.below(2) as u8),
                &opts,
                &payload,
            );
            for _ in 0..r.below(4) {
                match r.below(6) {
                    0 => p.truncate(r.below(p.len() + 1)),
                    1 => p.extend((0..r.below(64)).map(|_| r.byte())),
                    2 if !p.is_empty() => p[0] = (p[0] & 0xf0) | r.below(16) as u8, // IHL
                    3 if p.len() > 32 => p[32] = (r.below(16) as u8) << 4,          // data offset
                    4 if p.len() > 3 => p[2..4].copy_from_slice(&(r.next() as u16).to_be_bytes()),
                    _ => {
                        if !p.is_empty() {
                            let i = r.below(p.len());
                            p[i] = r.byte();
                        }
                    }
                }
            }
            p
        }
    }
}

#[test]
fn garbage_and_spoiled_segments_never_panic_the_parsers_or_the_option_writer() {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let mut out = Vec::new();
    let mut capture = Capture::new(96);
    let mut written = 0;
    for k in 0..50_000u64 {
        let p = hostile(&mut r);
        let info = parse_ipv4(&p);
        if let Some(i) = info {
            assert!(i.tcp.is_none_or(|t| t.n_sack as usize <= 4), "{p:02x?}");
        }
        let _ = read_option(&p);
        capture.on_read(k, if k % 2 == 0 { Dir::Down } else { Dir::Up }, &p, info.as_ref());
        let fb = Feedback::new(r.next() as u32, r.next() as u16);
        if add_option(&p, fb, 1500, &mut out) {
            written += 1;
            // What it accepted, it rewrote whole: 12 bytes longer, the
            // option readable, the segment's fields as they were.
            assert_eq!(out.len(), p.len() + 12);
            assert_eq!(read_option(&out), Some(fb), "{p:02x?}");
            let (a, b) = (parse_ipv4(&p), parse_ipv4(&out));
            if let (Some(a), Some(b)) = (a, b) {
                assert_eq!((a.src, a.dst, a.sport, a.dport), (b.src, b.dst, b.sport, b.dport));
                if let (Some(x), Some(y)) = (a.tcp, b.tcp) {
                    assert_eq!((x.seq, x.ack, x.flags, x.payload), (y.seq, y.ack, y.flags, y.payload));
                }
            }
        } else {
            assert!(out.is_empty());
        }
    }
    assert!(
        written > 1_000,
        "the spoiled segments still include many the writer takes: {written}"
    );
}

#[test]
fn the_gso_planner_puts_every_packet_of_a_hostile_instant_in_exactly_one_write_in_connection_order() {
    let mut r = Rng(0x051a_57e1_10dd_ba11);
    let mut co = Coalescer::new(65_535);
    let mut hdr = Vec::new();
    let mut merged = 0;
    for _ in 0..3_000 {
        // An instant: a run of good contiguous segments of one connection
        // (what merges), with hostile packets mixed in.
        let n = 1 + r.below(40);
        let mut seq = r.next() as u32;
        let (id0, tsv) = (r.next() as u16, r.next() as u32);
        let mut pkts: Vec<Vec<u8>> = Vec::new();
        for j in 0..n {
            if r.below(4) == 0 {
                pkts.push(hostile(&mut r));
            } else {
                let payload = vec![r.byte(); if r.below(20) == 0 { 700 } else { 1448 }];
                pkts.push(segment(seq, id0.wrapping_add(j as u16), 0x10, &ts(tsv), &payload));
                seq = seq.wrapping_add(payload.len() as u32);
            }
        }
        let refs: Vec<&[u8]> = pkts.iter().map(|p| p.as_slice()).collect();
        let groups = co.plan(&refs).to_vec();
        let mut seen = vec![0u32; n];
        for g in &groups {
            assert!(!g.members.is_empty());
            assert!(g.members.windows(2).all(|w| w[0] < w[1]), "a write keeps release order");
            for &m in &g.members {
                seen[m] += 1;
            }
            if g.members.len() > 1 {
                merged += 1;
                let v = super_header(&refs, &g.members, &mut hdr);
                let hlen = hdr.len();
                let total = hlen + g.members.iter().map(|&m| refs[m].len() - hlen).sum::<usize>();
                assert_eq!(u16::from_be_bytes([hdr[2], hdr[3]]) as usize, total);
                assert!(total <= 65_535);
                assert_eq!(v.bytes().len(), 10);
            }
        }
        assert!(
            seen.iter().all(|&c| c == 1),
            "every packet written exactly once: {seen:?}"
        );
    }
    assert!(merged > 500, "good runs were merged: {merged}");
}
