//! Units as types: simulated time, durations, byte counts and bit rates.
//!
//! Simulated time is an integer count of nanoseconds since the start of the
//! run. Nothing in the simulator compares floating-point times; floats appear
//! only at the edges (configuration in, metrics out).

use std::fmt;
use std::ops::{Add, AddAssign, Div, Mul, Sub};

/// The longest span of simulated time any scenario value may take: 10^6 s
/// (11.6 days), also the longest run. Time is u64 nanoseconds, good for
/// 1.8·10^10 s, so a time plus a few such spans (a start plus a delay plus a
/// timeout) never overflows, and every such span is exact to the
/// nanosecond in an f64 of seconds or milliseconds.
pub const MAX_SPAN_S: f64 = 1e6;
/// [`MAX_SPAN_S`] in milliseconds.
pub const MAX_SPAN_MS: f64 = MAX_SPAN_S * 1e3;

/// The longest one-way propagation delay of a path: 10 s, 37 times a
/// geostationary satellite hop (0.27 s); anything longer is not a network
/// a TCP connection survives (Linux gives up after 15 retransmissions).
pub const MAX_ONE_WAY_DELAY_MS: f64 = 1e4;

/// The slowest and fastest link rates, Mbit/s: 1 kbit/s (a full packet
/// takes 12 s; below that the bit/s integer loses precision and nothing
/// happens in a run) to 1 Tbit/s (beyond any link modelled here; a byte
/// still takes a whole nanosecond).
pub const MIN_RATE_MBPS: f64 = 1e-3;
pub const MAX_RATE_MBPS: f64 = 1e6;

/// Checks that `v` is a number in `[lo, hi]`; the error reads "`name` must
/// be in [lo, hi], got v". NaN and infinities are outside every range.
pub fn check_range(name: &str, v: f64, lo: f64, hi: f64) -> Result<(), String> {
    if v.is_finite() && v >= lo && v <= hi {
        Ok(())
    } else {
        Err(format!(
            "{name} must be in [{}, {}], got {}",
            short(lo),
            short(hi),
            short(v)
        ))
    }
}

/// A duration parameter in milliseconds: from 1 µs (or 0 when `zero_ok`)
/// to the longest run, so it converts to nanoseconds exactly as given.
pub fn check_duration_ms(name: &str, v: f64, zero_ok: bool) -> Result<(), String> {
    check_range(name, v, if zero_ok { 0.0 } else { 1e-3 }, MAX_SPAN_MS)
}

/// `x as f64` for `x < 2^52`, by bit operations a compiler turns into
/// packed instructions (x86-64's baseline, SSE2, converts 64-bit integers
/// one at a time): 2^52's exponent or'ed into `x`'s bits gives 2^52 + x
/// exactly, and 2^52 is subtracted exactly. The caller guarantees the
/// bound.
#[inline]
pub fn small_u64_as_f64(x: u64) -> f64 {
    debug_assert!(x < 1 << 52, "{x} is not below 2^52");
    low_52_bits_as_f64(x)
}

/// [`small_u64_as_f64`] of `x`'s low 52 bits, for any `x`.
#[inline]
fn low_52_bits_as_f64(x: u64) -> f64 {
    f64::from_bits((x & ((1 << 52) - 1)) | 0x4330_0000_0000_0000) - 4_503_599_627_370_496.0
}

/// Appends `x as f64 * scale` for every `x` of `xs`. The values are
/// converted as [`small_u64_as_f64`] in the same pass that ORs them
/// together; only when that OR shows one at or above 2^52 are they
/// converted again, one at a time (the same values either way).
#[inline]
pub fn extend_u64_as_f64_scaled<I>(out: &mut Vec<f64>, xs: I, scale: f64)
where
    I: Iterator<Item = u64> + Clone,
{
    let start = out.len();
    let mut or = 0;
    out.extend(xs.clone().map(|x| {
        or |= x;
        low_52_bits_as_f64(x) * scale
    }));
    if or >= 1 << 52 {
        out.truncate(start);
        out.extend(xs.map(|x| x as f64 * scale));
    }
}

/// [`check_range`] for integers.
pub fn check_range_u64(name: &str, v: u64, lo: u64, hi: u64) -> Result<(), String> {
    if (lo..=hi).contains(&v) {
        Ok(())
    } else {
        Err(format!("{name} must be in [{lo}, {hi}], got {v}"))
    }
}

/// A number as a person would write it: `1e20` rather than twenty-one
/// digits, `0.0625` as is.
fn short(v: f64) -> String {
    if v != 0.0 && v.is_finite() && (v.abs() >= 1e9 || v.abs() < 1e-4) {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

/// A point in simulated time, in nanoseconds since the start of the run.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct SimTime(u64);

/// A non-negative span of simulated time, in nanoseconds.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct SimDuration(u64);

impl SimTime {
    pub const ZERO: SimTime = SimTime(0);
    pub const MAX: SimTime = SimTime(u64::MAX);

    pub const fn from_nanos(ns: u64) -> Self {
        SimTime(ns)
    }
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }
    pub fn as_millis_f64(self) -> f64 {
        self.0 as f64 * 1e-6
    }
    /// Time elapsed since `earlier`; zero if `earlier` is in the future.
    pub fn saturating_since(self, earlier: SimTime) -> SimDuration {
        SimDuration(self.0.saturating_sub(earlier.0))
    }
    /// The duration since the start of the run.
    pub const fn since_start(self) -> SimDuration {
        SimDuration(self.0)
    }
    /// Whole ticks of a `hz` clock since the start, rounded down (Linux's
    /// `jiffies` at `HZ = hz`): exact, in 64 bits while the product fits
    /// (below 213 days at 1,000 Hz) and in 128 bits past that. A 128-bit
    /// division is a library call; by 10^9 in 64 bits it is a multiplication.
    #[inline]
    pub fn ticks(self, hz: u32) -> u64 {
        match self.0.checked_mul(hz as u64) {
            Some(n) => n / 1_000_000_000,
            None => (self.0 as u128 * hz as u128 / 1_000_000_000) as u64,
        }
    }
    /// The first multiple of `period` (offset by `phase`) at or after `self`.
    pub fn next_boundary(self, period: SimDuration, phase: SimDuration) -> SimTime {
        debug_assert!(period.0 > 0);
        let p = period.0;
        let ph = phase.0 % p;
        if self.0 <= ph {
            return SimTime(ph);
        }
        let k = (self.0 - ph).div_ceil(p);
        SimTime(ph + k * p)
    }
}

impl SimDuration {
    pub const ZERO: SimDuration = SimDuration(0);
    pub const MAX: SimDuration = SimDuration(u64::MAX);

    pub const fn from_nanos(ns: u64) -> Self {
        SimDuration(ns)
    }
    pub const fn from_micros(us: u64) -> Self {
        SimDuration(us * 1_000)
    }
    pub const fn from_millis(ms: u64) -> Self {
        SimDuration(ms * 1_000_000)
    }
    pub const fn from_secs(s: u64) -> Self {
        SimDuration(s * 1_000_000_000)
    }
    /// Converts a non-negative, finite number of milliseconds, rounding to the
    /// nearest nanosecond. Returns `None` for negative, NaN or too large input.
    pub fn try_from_millis_f64(ms: f64) -> Option<Self> {
        Self::try_from_nanos_f64(ms * 1e6)
    }
    pub fn try_from_secs_f64(s: f64) -> Option<Self> {
        Self::try_from_nanos_f64(s * 1e9)
    }
    fn try_from_nanos_f64(ns: f64) -> Option<Self> {
        if ns.is_finite() && ns >= 0.0 && ns < u64::MAX as f64 {
            Some(SimDuration(ns.round() as u64))
        } else {
            None
        }
    }
    pub const fn as_nanos(self) -> u64 {
        self.0
    }
    pub fn as_micros(self) -> u64 {
        self.0 / 1_000
    }
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 * 1e-9
    }
    pub fn as_millis_f64(self) -> f64 {
        self.0 as f64 * 1e-6
    }
    pub fn saturating_sub(self, rhs: SimDuration) -> SimDuration {
        SimDuration(self.0.saturating_sub(rhs.0))
    }
    pub fn mul_f64(self, k: f64) -> SimDuration {
        debug_assert!(k >= 0.0);
        SimDuration((self.0 as f64 * k).round() as u64)
    }
    pub fn is_zero(self) -> bool {
        self.0 == 0
    }
}

impl Add<SimDuration> for SimTime {
    type Output = SimTime;
    fn add(self, rhs: SimDuration) -> SimTime {
        SimTime(self.0.saturating_add(rhs.0))
    }
}
impl AddAssign<SimDuration> for SimTime {
    fn add_assign(&mut self, rhs: SimDuration) {
        self.0 = self.0.saturating_add(rhs.0);
    }
}
impl Sub<SimDuration> for SimTime {
    type Output = SimTime;
    fn sub(self, rhs: SimDuration) -> SimTime {
        SimTime(self.0.saturating_sub(rhs.0))
    }
}
impl Add for SimDuration {
    type Output = SimDuration;
    fn add(self, rhs: SimDuration) -> SimDuration {
        SimDuration(self.0.saturating_add(rhs.0))
    }
}
impl AddAssign for SimDuration {
    fn add_assign(&mut self, rhs: SimDuration) {
        self.0 = self.0.saturating_add(rhs.0);
    }
}
impl Sub for SimDuration {
    type Output = SimDuration;
    fn sub(self, rhs: SimDuration) -> SimDuration {
        SimDuration(self.0.saturating_sub(rhs.0))
    }
}
impl Mul<u64> for SimDuration {
    type Output = SimDuration;
    fn mul(self, rhs: u64) -> SimDuration {
        SimDuration(self.0.saturating_mul(rhs))
    }
}
impl Div<u64> for SimDuration {
    type Output = SimDuration;
    fn div(self, rhs: u64) -> SimDuration {
        SimDuration(self.0 / rhs)
    }
}

impl fmt::Debug for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.6}s", self.as_secs_f64())
    }
}
impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.6}s", self.as_secs_f64())
    }
}
impl fmt::Debug for SimDuration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.3}ms", self.as_millis_f64())
    }
}

/// A count of bytes.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Debug)]
pub struct Bytes(pub u64);

impl Bytes {
    pub const fn bits(self) -> u64 {
        self.0 * 8
    }
}
impl Add for Bytes {
    type Output = Bytes;
    fn add(self, rhs: Bytes) -> Bytes {
        Bytes(self.0 + rhs.0)
    }
}
impl AddAssign for Bytes {
    fn add_assign(&mut self, rhs: Bytes) {
        self.0 += rhs.0;
    }
}

/// A bit rate, in bits per second.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Debug)]
pub struct BitRate(u64);

impl BitRate {
    pub const ZERO: BitRate = BitRate(0);

    pub const fn from_bps(bps: u64) -> Self {
        BitRate(bps)
    }
    /// Converts a non-negative, finite rate in Mbit/s. `None` otherwise.
    pub fn try_from_mbps(mbps: f64) -> Option<Self> {
        let bps = mbps * 1e6;
        if bps.is_finite() && bps >= 0.0 && bps < u64::MAX as f64 {
            Some(BitRate(bps.round() as u64))
        } else {
            None
        }
    }
    pub const fn bps(self) -> u64 {
        self.0
    }
    pub fn mbps(self) -> f64 {
        self.0 as f64 * 1e-6
    }
    /// The rate that carries `bytes` in `over`; zero for an empty interval.
    pub fn from_bytes_over(bytes: u64, over: SimDuration) -> Self {
        if over.is_zero() {
            return BitRate(0);
        }
        BitRate(((bytes as u128 * 8 * 1_000_000_000) / over.as_nanos() as u128) as u64)
    }
    /// Time to serialize `bytes` at this rate, rounded up to the nanosecond.
    /// `None` for a zero rate (the bytes never leave).
    pub fn tx_time(self, bytes: u64) -> Option<SimDuration> {
        if self.0 == 0 {
            return None;
        }
        // A packet's bits in nanoseconds fit a u64 (up to 2.3 GB): the
        // same quotient without a 128-bit division on every transmission.
        if let Some(num) = bytes.checked_mul(8_000_000_000) {
            return Some(SimDuration(num.div_ceil(self.0)));
        }
        let ns = (bytes as u128 * 8 * 1_000_000_000).div_ceil(self.0 as u128);
        Some(SimDuration(ns.min(u64::MAX as u128) as u64))
    }
    /// Bytes carried at this rate during `d` (rounded down).
    pub fn bytes_in(self, d: SimDuration) -> u64 {
        ((self.0 as u128 * d.as_nanos() as u128) / 8_000_000_000) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_are_the_128_bit_quotient_for_every_time_and_clock() {
        let mut rng = crate::engine::rng::Rng::from_seed(11);
        for _ in 0..50_000 {
            let hz = [100u32, 250, 300, 1000, 1024, u32::MAX, 1 + rng.below(100_000) as u32][rng.below(7) as usize];
            // From nanoseconds to past the 64-bit product's range.
            let ns = rng.next_u64() >> rng.below(64);
            let want = (ns as u128 * hz as u128 / 1_000_000_000) as u64;
            assert_eq!(SimTime::from_nanos(ns).ticks(hz), want, "{ns} ns at {hz} Hz");
        }
        assert_eq!(SimTime::MAX.ticks(1000), u64::MAX / 1_000_000);
        assert_eq!(SimTime::from_nanos(3_999_999).ticks(250), 0);
        assert_eq!(SimTime::from_nanos(4_000_000).ticks(250), 1);
    }

    #[test]
    fn a_small_u64_becomes_the_same_f64_by_bits_as_by_conversion() {
        let mut rng = crate::engine::rng::Rng::from_seed(3);
        let edges = [0u64, 1, 2, 1 << 31, (1 << 32) + 7, (1 << 52) - 1, (1 << 52) - 2];
        let random = (0..10_000).map(|i| rng.next_u64() >> (12 + i % 52));
        for x in edges.into_iter().chain(random) {
            assert_eq!(small_u64_as_f64(x).to_bits(), (x as f64).to_bits(), "{x}");
        }
    }

    #[test]
    fn a_column_of_u64_becomes_the_same_scaled_f64s_whether_or_not_one_is_at_or_above_2_pow_52() {
        let mut rng = crate::engine::rng::Rng::from_seed(5);
        let small: Vec<u64> = (0..1000).map(|i| rng.next_u64() >> (12 + i % 52)).collect();
        let mut large = small.clone();
        large[517] = (1 << 52) + 3;
        large[3] = u64::MAX;
        for (xs, scale) in [(&small, 1e-6), (&large, 1e-6), (&large, 1.0), (&vec![], 2.0)] {
            let mut out = vec![7.5];
            extend_u64_as_f64_scaled(&mut out, xs.iter().copied(), scale);
            let expected: Vec<u64> = std::iter::once(7.5)
                .chain(xs.iter().map(|&x| x as f64 * scale))
                .map(f64::to_bits)
                .collect();
            assert_eq!(out.iter().map(|v| v.to_bits()).collect::<Vec<_>>(), expected);
        }
    }

    #[test]
    fn a_range_error_names_the_field_the_limits_and_the_value() {
        assert_eq!(
            check_range("internet.delay_ms", 1e20, 0.0, 1e4).unwrap_err(),
            "internet.delay_ms must be in [0, 10000], got 1e20"
        );
        assert_eq!(
            check_range("cell.tti_ms", 1e-12, 0.0625, 10.0).unwrap_err(),
            "cell.tti_ms must be in [0.0625, 10], got 1e-12"
        );
        assert!(check_range("x", f64::NAN, 0.0, 1.0).unwrap_err().ends_with("got NaN"));
        assert!(check_range("x", f64::INFINITY, 0.0, 1.0).is_err());
        assert!(check_range("x", 1.0, 0.0, 1.0).is_ok());
        assert_eq!(
            check_range_u64("tcp.initial_cwnd", 4_294_967_295, 1, 741_455).unwrap_err(),
            "tcp.initial_cwnd must be in [1, 741455], got 4294967295"
        );
    }

    #[test]
    fn every_time_within_the_longest_span_converts_to_nanoseconds() {
        assert!(SimDuration::try_from_secs_f64(MAX_SPAN_S).is_some());
        assert!(SimDuration::try_from_millis_f64(MAX_SPAN_S * 1e3).is_some());
        // A handful of maximal spans added together still fits in u64 ns.
        let d = SimDuration::try_from_secs_f64(MAX_SPAN_S).unwrap();
        assert!(d.as_nanos().checked_mul(1000).is_some());
    }

    #[test]
    fn serialization_time_of_a_full_packet_at_ten_megabits_is_1_2_ms() {
        let r = BitRate::try_from_mbps(10.0).unwrap();
        assert_eq!(r.tx_time(1500), Some(SimDuration::from_micros(1200)));
    }

    #[test]
    fn serialization_time_rounds_up_to_the_nanosecond() {
        let r = BitRate::from_bps(3);
        assert_eq!(r.tx_time(1).unwrap().as_nanos(), 2_666_666_667);
    }

    #[test]
    fn zero_rate_never_serializes() {
        assert_eq!(BitRate::ZERO.tx_time(1), None);
    }

    #[test]
    fn next_boundary_is_at_or_after_now() {
        let p = SimDuration::from_millis(10);
        let ph = SimDuration::from_millis(3);
        assert_eq!(
            SimTime::from_nanos(0).next_boundary(p, ph),
            SimTime::from_nanos(3_000_000)
        );
        assert_eq!(
            SimTime::from_nanos(3_000_000).next_boundary(p, ph),
            SimTime::from_nanos(3_000_000)
        );
        assert_eq!(
            SimTime::from_nanos(3_000_001).next_boundary(p, ph),
            SimTime::from_nanos(13_000_000)
        );
    }

    #[test]
    fn negative_or_nan_durations_are_rejected() {
        assert!(SimDuration::try_from_millis_f64(-1.0).is_none());
        assert!(SimDuration::try_from_millis_f64(f64::NAN).is_none());
        assert_eq!(
            SimDuration::try_from_millis_f64(1.5),
            Some(SimDuration::from_micros(1500))
        );
    }

    #[test]
    fn rate_from_bytes_over_interval() {
        let r = BitRate::from_bytes_over(1500, SimDuration::from_millis(1));
        assert_eq!(r.bps(), 12_000_000);
    }
}
