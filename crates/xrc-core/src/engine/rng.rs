//! Seeded pseudo-random numbers: one master seed, one named stream per
//! component.
//!
//! The generator is xoshiro256++ (Blackman and Vigna, "Scrambled linear
//! pseudorandom number generators", 2021), seeded through SplitMix64 as its
//! authors recommend. A component's stream is derived from the master seed and
//! the component's name (FNV-1a hash), so adding a component never shifts the
//! numbers another component draws. Nothing is ever seeded from the operating
//! system.

/// A xoshiro256++ generator.
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01B3);
    }
    h
}

impl Rng {
    pub fn from_seed(seed: u64) -> Self {
        let mut st = seed;
        let s = [
            splitmix64(&mut st),
            splitmix64(&mut st),
            splitmix64(&mut st),
            splitmix64(&mut st),
        ];
        Rng { s }
    }

    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1) with 53 bits of precision.
    pub fn uniform(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in [lo, hi).
    pub fn uniform_range(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.uniform()
    }

    /// Uniform integer in [0, n) without modulo bias (Lemire's method). `n > 0`.
    pub fn below(&mut self, n: u64) -> u64 {
        assert!(n > 0, "Rng::below(0)");
        loop {
            let m = (self.next_u64() as u128) * (n as u128);
            let lo = m as u64;
            if lo >= n || lo >= n.wrapping_neg() % n {
                return (m >> 64) as u64;
            }
        }
    }

    /// `true` with probability `p` (clamped to [0, 1]).
    pub fn bernoulli(&mut self, p: f64) -> bool {
        self.uniform() < p
    }

    /// Standard normal deviate (Marsaglia's polar method; the second deviate
    /// is discarded so the stream position depends only on the call count
    /// and the rejection draws).
    pub fn standard_normal(&mut self) -> f64 {
        loop {
            let u = 2.0 * self.uniform() - 1.0;
            let v = 2.0 * self.uniform() - 1.0;
            let s = u * u + v * v;
            if s > 0.0 && s < 1.0 {
                return u * (-2.0 * s.ln() / s).sqrt();
            }
        }
    }

    /// Exponential deviate with the given mean.
    pub fn exponential(&mut self, mean: f64) -> f64 {
        -mean * (1.0 - self.uniform()).ln()
    }
}

/// Derives independent, named random streams from one master seed.
#[derive(Clone, Copy, Debug)]
pub struct RngStreams {
    master: u64,
}

impl RngStreams {
    pub fn new(master_seed: u64) -> Self {
        RngStreams { master: master_seed }
    }
    pub fn master_seed(&self) -> u64 {
        self.master
    }
    /// The stream for the component called `name` (for example `"harq/ue3"`).
    pub fn stream(&self, name: &str) -> Rng {
        let mut st = self.master ^ fnv1a64(name.as_bytes());
        Rng::from_seed(splitmix64(&mut st))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_and_name_give_the_same_stream() {
        let a: Vec<u64> = (0..10)
            .map({
                let mut r = RngStreams::new(42).stream("channel/ue0");
                move |_| r.next_u64()
            })
            .collect();
        let b: Vec<u64> = (0..10)
            .map({
                let mut r = RngStreams::new(42).stream("channel/ue0");
                move |_| r.next_u64()
            })
            .collect();
        assert_eq!(a, b);
    }

    #[test]
    fn different_names_give_different_streams() {
        let s = RngStreams::new(42);
        assert_ne!(s.stream("a").next_u64(), s.stream("b").next_u64());
    }

    #[test]
    fn xoshiro_matches_its_reference_output_for_a_known_state() {
        // Reference: xoshiro256plusplus.c with s = {1, 2, 3, 4}; first output
        // is rotl(1 + 4, 23) + 1 = 41943041.
        let mut r = Rng { s: [1, 2, 3, 4] };
        assert_eq!(r.next_u64(), 41943041);
    }

    #[test]
    fn uniform_is_in_the_unit_interval_and_has_the_right_mean() {
        let mut r = Rng::from_seed(1);
        let n = 100_000;
        let mut sum = 0.0;
        for _ in 0..n {
            let u = r.uniform();
            assert!((0.0..1.0).contains(&u));
            sum += u;
        }
        assert!((sum / n as f64 - 0.5).abs() < 0.01);
    }

    #[test]
    fn normal_deviates_have_zero_mean_and_unit_variance() {
        let mut r = Rng::from_seed(3);
        let n = 200_000;
        let xs: Vec<f64> = (0..n).map(|_| r.standard_normal()).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64;
        assert!(mean.abs() < 0.01, "mean {mean}");
        assert!((var - 1.0).abs() < 0.02, "var {var}");
    }

    #[test]
    fn below_stays_below_its_bound() {
        let mut r = Rng::from_seed(9);
        for n in [1u64, 2, 3, 7, 1000] {
            for _ in 0..1000 {
                assert!(r.below(n) < n);
            }
        }
    }
}
