//! What BBR v1 and v3 share, computed the same way in both kernels: the
//! fixed-point scales, Linux's windowed max filter, the rate sample in
//! Linux's types, the clocks, the model pieces (modes, rounds, the min-RTT
//! filter, PROBE_RTT's hold, the full-pipe test, the mode gains and the
//! cwnd ramp), pacing-rate and BDP arithmetic, the
//! departure-time estimate of packets still in the network, the
//! ACK-aggregation estimate, BBR's application-limited mark and the seeded
//! generator. Each item names the Linux function it follows; the
//! emulations (clocks, EDT, `delivered_mstamp`, `tp->app_limited`) are v1's
//! numbered deviations, which v3 inherits. The functions named are those
//! of Linux's `net/ipv4/tcp_bbr.c` (v1) and of Google's BBRv3
//! `net/ipv4/tcp_bbr.c` (the `google/bbr` v3 branch), which keep the same
//! names for these pieces.

use crate::transport::cc::{CaState, ConnView, RateSample};
use crate::units::{BitRate, SimDuration, SimTime};

/// `BW_SCALE`: bandwidth is in segments per µs, times 2²⁴.
pub const BW_SCALE: u32 = 24;
/// `BW_UNIT` = 2²⁴.
pub const BW_UNIT: u64 = 1 << BW_SCALE;
/// `BBR_SCALE`: gains are in 1/256.
pub const BBR_SCALE: u32 = 8;
/// `BBR_UNIT` = 256 (a gain of 1.0).
pub const BBR_UNIT: u32 = 1 << BBR_SCALE;
/// `GSO_LEGACY_MAX_SIZE`, bytes.
pub(super) const GSO_LEGACY_MAX_SIZE: u64 = 65_536;
/// `MAX_TCP_HEADER` on x86-64, bytes (v1 deviation 3).
pub(super) const MAX_TCP_HEADER: u64 = 320;
/// Linux's default `sk_pacing_shift`: TSO bursts of about 1 ms of data.
pub(super) const PACING_SHIFT: u32 = 10;
/// `ack_epoch_acked` is a 20-bit field.
const ACK_EPOCH_ACKED_MAX: u32 = 0xF_FFFF;
/// `bbr_ack_epoch_acked_reset_thresh` = 2²⁰.
const ACK_EPOCH_ACKED_RESET: u32 = 1 << 20;
/// `extra_acked_win_rtts` is a 5-bit field.
const EXTRA_ACKED_WIN_RTTS_MAX: u32 = 0x1F;
pub(super) const USEC_PER_SEC: u64 = 1_000_000;
pub(super) const USEC_PER_MSEC: u64 = 1_000;

/// Linux `struct minmax` with `minmax_running_max`: the best, second-best
/// and third-best maxima of a stream over a sliding window of `win` time
/// units, kept so the three are spread over the window. Time is BBR's round
/// count (u32, wrapping).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct WindowedMax {
    /// (time, value), best first; the times never decrease along the array.
    s: [(u32, u32); 3],
}

impl WindowedMax {
    /// Forgets everything and starts from one sample.
    pub fn reset(&mut self, t: u32, v: u32) -> u32 {
        self.s = [(t, v); 3];
        v
    }

    /// The windowed maximum.
    pub fn get(&self) -> u32 {
        self.s[0].1
    }

    /// Adds a sample taken at `t`; returns the new maximum.
    pub fn update(&mut self, win: u32, t: u32, v: u32) -> u32 {
        // A new overall maximum, or the whole window has gone stale.
        if v >= self.s[0].1 || t.wrapping_sub(self.s[2].0) > win {
            return self.reset(t, v);
        }
        if v >= self.s[1].1 {
            self.s[1] = (t, v);
            self.s[2] = (t, v);
        } else if v >= self.s[2].1 {
            self.s[2] = (t, v);
        }
        self.age(win, (t, v))
    }

    /// Moves the choices along as time passes.
    fn age(&mut self, win: u32, new: (u32, u32)) -> u32 {
        let dt = new.0.wrapping_sub(self.s[0].0);
        if dt > win {
            // The best has expired: promote the others, the sample is third.
            // The second may have expired too.
            self.s = [self.s[1], self.s[2], new];
            if new.0.wrapping_sub(self.s[0].0) > win {
                self.s = [self.s[1], self.s[2], new];
            }
        } else if self.s[1].0 == self.s[0].0 && dt > win / 4 {
            // A quarter window without a second choice: take this one.
            self.s[1] = new;
            self.s[2] = new;
        } else if self.s[2].0 == self.s[1].0 && dt > win / 2 {
            // Half a window without a third choice: take this one.
            self.s[2] = new;
        }
        self.s[0].1
    }
}

/// The rate sample in Linux's types and units: signed counts with −1 for
/// "invalid", µs times. v3's fields (`tx_in_flight`, `lost`,
/// `is_acking_tlp_retrans_seq`) stay zero for v1.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Sample {
    pub(super) delivered: i64,
    pub(super) interval_us: i64,
    pub(super) prior_delivered: u64,
    pub(super) prior_in_flight: u32,
    pub(super) acked_sacked: u32,
    pub(super) losses: u32,
    pub(super) rtt_us: i64,
    pub(super) is_app_limited: bool,
    /// Packets in flight when the sampled packet was sent, itself included.
    pub(super) tx_in_flight: u32,
    /// Packets marked lost since the sampled packet was sent.
    pub(super) lost: u32,
    /// The ACK matches a tail loss probe's retransmission.
    pub(super) is_acking_tlp_retrans_seq: bool,
}

impl Sample {
    /// The framework's sample in Linux's terms (v1 deviations 1, 7, 8);
    /// `is_app_limited` is the framework's flag, which each version may
    /// widen with its own mark.
    pub(super) fn from_rate(now: SimTime, rs: &RateSample, c: &ConnView) -> Sample {
        let delivered = match rs.delivered {
            Some(d) => d as i64,
            None if rs.acked_sacked > 0 => c.delivered.saturating_sub(rs.prior_delivered) as i64,
            None => -1,
        };
        let interval_us = if rs.delivered.is_some() {
            if rs.interval == now.saturating_since(rs.prior_time) {
                (us(now) - us(rs.prior_time)) as i64
            } else {
                rs.interval.as_micros() as i64
            }
        } else {
            -1
        };
        let rtt_us = match rs.rtt {
            Some(r) => {
                let sent = SimTime::from_nanos(now.as_nanos().saturating_sub(r.as_nanos()));
                (us(now) - us(sent)) as i64
            }
            None => -1,
        };
        Sample {
            delivered,
            interval_us,
            prior_delivered: rs.prior_delivered,
            prior_in_flight: rs.prior_in_flight,
            acked_sacked: rs.acked_sacked,
            losses: rs.losses,
            rtt_us,
            is_app_limited: rs.is_app_limited,
            ..Sample::default()
        }
    }
}

/// BBR's stand-in for its writes to `tp->app_limited` (v1 deviation 6).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) struct AppLimitedMark {
    /// The mark: application-limited until `delivered` exceeds this; 0 = off.
    until: u64,
    /// `delivered` when the latest activation began.
    from: u64,
    /// `delivered` when it was cleared; `None` while active.
    to: Option<u64>,
}

impl Default for AppLimitedMark {
    fn default() -> Self {
        AppLimitedMark {
            until: 0,
            from: u64::MAX,
            to: Some(0),
        }
    }
}

impl AppLimitedMark {
    pub(super) fn set(&mut self, delivered: u64, until: u64) {
        if self.until == 0 {
            self.from = delivered;
            self.to = None;
        }
        self.until = until.max(1);
    }
    /// As `tcp_rate_gen` clears `tp->app_limited`.
    pub(super) fn clear_if_passed(&mut self, delivered: u64) {
        if self.until != 0 && delivered > self.until {
            self.until = 0;
            self.to = Some(delivered);
        }
    }
    pub(super) fn active(&self) -> bool {
        self.until != 0
    }
    /// Was a packet whose send-time `delivered` snapshot is `d` sent while
    /// the mark was set?
    pub(super) fn covers(&self, d: u64) -> bool {
        d >= self.from && self.to.is_none_or(|to| d < to)
    }
}

/// SplitMix64 (deterministic, per connection). Each version starts it at
/// its flow's draw from the master seed's named stream (`flow/<k>/cc`,
/// [`super::v1::Bbr::seeded`], [`super::v3::Bbr3::seeded`]) XORed with its
/// `Config::seed`, and restarts it there in `bbr_init`.
#[derive(Clone, Debug)]
pub(super) struct Rng(pub(super) u64);

impl Rng {
    pub(super) fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }
    /// Uniform in `0..n` (the contract of Linux `get_random_u32_below`).
    pub(super) fn below(&mut self, n: u32) -> u32 {
        debug_assert!(n > 0);
        let threshold = n.wrapping_neg() % n; // 2³² mod n
        loop {
            let m = self.next_u32() as u64 * n as u64;
            if (m as u32) >= threshold {
                return (m >> 32) as u32;
            }
        }
    }
}

/// Linux `after(a, b)` for u32 jiffies.
pub(super) fn after(a: u32, b: u32) -> bool {
    (b.wrapping_sub(a) as i32) < 0
}

/// `tcp_mstamp`: the µs clock.
pub(super) fn us(t: SimTime) -> u64 {
    t.as_nanos() / 1_000
}

/// `jiffies` at `hz` ticks per second, truncated to u32 (v1 deviation 1).
pub(super) fn jiffies(t: SimTime, hz: u32) -> u32 {
    t.ticks(hz) as u32
}

/// `msecs_to_jiffies`, rounded up exactly.
pub(super) fn msecs_to_jiffies(ms: u32, hz: u32) -> u32 {
    (ms as u64 * hz as u64).div_ceil(1000) as u32
}

pub(super) fn sat_u32(x: u64) -> u32 {
    x.min(u32::MAX as u64) as u32
}

/// `bbr_save_cwnd`: the last good window, kept over recovery and
/// PROBE_RTT (where only a larger window replaces it).
pub(super) fn saved_cwnd(prior_cwnd: u32, cwnd: u32, prev_ca_state: CaState, in_probe_rtt: bool) -> u32 {
    if !matches!(prev_ca_state, CaState::Recovery | CaState::Loss) && !in_probe_rtt {
        cwnd
    } else {
        prior_cwnd.max(cwnd)
    }
}

// ----- pacing, BDP and TSO arithmetic -----

/// `bbr_rate_bytes_per_sec`: a rate in Linux's bandwidth unit times a gain,
/// in bytes/s, less `margin_percent` (computed in 128 bits: v1 deviation
/// 2).
pub(super) fn rate_bytes_per_sec(rate: u64, mss: u32, gain: u32, margin_percent: u32) -> u64 {
    let mut r = rate as u128 * mss as u128;
    r *= gain as u128;
    r >>= BBR_SCALE;
    r *= (USEC_PER_SEC / 100 * (100 - margin_percent as u64)) as u128;
    (r >> BW_SCALE).min(u64::MAX as u128) as u64
}

/// A bandwidth in Linux's unit as a payload byte rate, bytes/s.
pub(super) fn raw_bytes_per_sec(bw: u32, mss: u32) -> u64 {
    ((bw as u128 * mss as u128 * USEC_PER_SEC as u128) >> BW_SCALE) as u64
}

/// The bandwidth of `bbr_init_pacing_rate_from_rtt`: `cwnd / srtt`, or
/// over a nominal 1 ms before any RTT sample; and whether an RTT was seen.
pub(super) fn initial_bw(srtt: Option<SimDuration>, cwnd: u32) -> (u32, bool) {
    let (rtt_us, seen) = match srtt {
        Some(srtt) => (srtt.as_micros().max(1), true),
        None => (USEC_PER_MSEC, false),
    };
    (sat_u32(cwnd as u64 * BW_UNIT / rtt_us), seen)
}

/// `bbr_bdp`: ⌈bw · min_rtt · gain⌉ segments, `None` before any RTT sample
/// (`min_rtt_us` = `~0U`).
pub(super) fn bdp(bw: u32, min_rtt_us: u32, gain: u32) -> Option<u32> {
    if min_rtt_us == u32::MAX {
        return None;
    }
    let w = bw as u128 * min_rtt_us as u128;
    let bdp = ((w * gain as u128) >> BBR_SCALE).div_ceil(BW_UNIT as u128);
    Some(bdp.min(u32::MAX as u128) as u32)
}

/// Segments in a TSO burst of `bytes`, capped at
/// `GSO_LEGACY_MAX_SIZE − 1 − MAX_TCP_HEADER` bytes, at least `min_segs`.
pub(super) fn tso_segs(bytes: u64, mss: u32, min_segs: u32) -> u32 {
    let bytes = bytes.min(GSO_LEGACY_MAX_SIZE - 1 - MAX_TCP_HEADER);
    sat_u32(bytes / mss.max(1) as u64).max(min_segs)
}

/// How a version turns a bandwidth into `sk_pacing_rate`
/// (`bbr_bw_to_pacing_rate`): its pacing margin, v3's floor of 1 byte/s,
/// and its STARTUP gain for `bbr_init_pacing_rate_from_rtt`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) struct PacingRule {
    pub(super) mss: u32,
    pub(super) margin_percent: u32,
    /// Smallest rate, bytes/s (v1: 0, v3: 1).
    pub(super) floor: u64,
    pub(super) startup_gain: u32,
}

impl PacingRule {
    /// `bbr_bw_to_pacing_rate` (no `sk_max_pacing_rate` cap: unlimited).
    pub(super) fn bytes_per_sec(&self, bw: u32, gain: u32) -> u64 {
        rate_bytes_per_sec(bw as u64, self.mss, gain, self.margin_percent).max(self.floor)
    }
}

/// `sk_pacing_rate` as BBR sets it, and `has_seen_rtt`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Pacing {
    /// Bytes/s; `None` before `init`.
    pub(super) rate: Option<u64>,
    /// An RTT sample has set the rate (`has_seen_rtt`).
    pub(super) has_seen_rtt: bool,
}

impl Pacing {
    /// `bbr_init_pacing_rate_from_rtt`: STARTUP gain · cwnd / srtt, or over
    /// a nominal 1 ms before any RTT sample.
    pub(super) fn init_from_rtt(&mut self, rule: &PacingRule, srtt: Option<SimDuration>, cwnd: u32) {
        let (bw, seen) = initial_bw(srtt, cwnd);
        self.has_seen_rtt |= seen;
        self.rate = Some(rule.bytes_per_sec(bw, rule.startup_gain));
    }

    /// `bbr_set_pacing_rate`: until the pipe is found full the rate only
    /// rises; the first RTT sample restarts it from the RTT.
    pub(super) fn set(
        &mut self,
        rule: &PacingRule,
        srtt: Option<SimDuration>,
        cwnd: u32,
        bw: u32,
        gain: u32,
        full_bw_reached: bool,
    ) {
        let rate = rule.bytes_per_sec(bw, gain);
        if !self.has_seen_rtt && srtt.is_some() {
            self.init_from_rtt(rule, srtt, cwnd);
        }
        if full_bw_reached || rate > self.rate.unwrap_or(0) {
            self.rate = Some(rate);
        }
    }

    /// The rate the framework paces at; 0 bytes/s is no pacing (Linux skips
    /// pacing when `sk_pacing_rate` is 0; v1 deviation 10).
    pub(super) fn bitrate(&self) -> Option<BitRate> {
        match self.rate {
            Some(r) if r > 0 => Some(BitRate::from_bps(r.saturating_mul(8))),
            _ => None,
        }
    }
}

/// The BDP estimate `bw · min_rtt` in segments, for traces; `None` before
/// any RTT or bandwidth sample.
pub(super) fn bdp_segments(bw: u32, min_rtt_us: u32) -> Option<f64> {
    if min_rtt_us == u32::MAX || bw == 0 {
        return None;
    }
    Some(bw as f64 * min_rtt_us as f64 / BW_UNIT as f64)
}

// ----- parameter checks -----

/// `CONFIG_HZ` must be one the kernel allows.
pub(super) fn check_hz(hz: u32) -> Result<(), String> {
    if !matches!(hz, 100 | 250 | 300 | 1000) {
        return Err(format!(
            "hz must be one of 100, 250, 300, 1000 (Linux CONFIG_HZ), got {hz}"
        ));
    }
    Ok(())
}

/// A parameter within `lo..=hi`, named in the error.
pub(super) fn check_range(name: &str, v: u64, lo: u64, hi: u64) -> Result<(), String> {
    if v < lo || v > hi {
        Err(format!("{name} must be in {lo}..={hi}, got {v}"))
    } else {
        Ok(())
    }
}

// ----- departure time -----

/// The framework's next departure time: one payload's pacing gap after the
/// last send (Linux EDT pacing), never in the past; `now` when not pacing.
fn next_departure(now: SimTime, last_send: Option<SimTime>, pacing_rate: Option<u64>, mss: u32) -> SimTime {
    let (Some(last), Some(rate)) = (last_send, pacing_rate) else {
        return now;
    };
    match BitRate::from_bps(rate.saturating_mul(8)).tx_time(mss as u64) {
        Some(gap) => (last + gap).max(now),
        None => now,
    }
}

/// Packets still in the network after `interval` at bottleneck rate `bw`
/// (packets per µs, `BW_SCALE` fixed point).
fn in_net_after(inflight: u32, bw: u32, interval: SimDuration) -> u32 {
    let interval_us = interval.as_nanos() / 1_000;
    let delivered = sat_u32((bw as u64 * interval_us) >> BW_SCALE);
    inflight.saturating_sub(delivered)
}

/// `bbr_packets_in_net_at_edt`: `inflight` plus the departing `burst`, less
/// what the bottleneck will have delivered at `bw` by the next departure
/// (v1 deviation 4: the departure is rebuilt from the last send).
pub(super) fn packets_in_net_at_edt(
    now: SimTime,
    c: &ConnView,
    pacing_rate: Option<u64>,
    mss: u32,
    bw: u32,
    inflight_and_burst: u32,
) -> u32 {
    let edt = next_departure(now, c.last_send, pacing_rate, mss);
    in_net_after(inflight_and_burst, bw, edt.saturating_since(now))
}

/// The burst `bbr_packets_in_net_at_edt` adds while the pacing gain raises
/// in-flight data: one TSO goal.
pub(super) fn edt_burst(pacing_gain: u32, tso_segs_goal: u32) -> u32 {
    if pacing_gain > BBR_UNIT {
        tso_segs_goal
    } else {
        0
    }
}

// ----- ACK aggregation -----

/// The ACK-aggregation estimate (`bbr_update_ack_aggregation`,
/// `bbr_extra_acked`, `bbr_ack_aggregation_cwnd`): the largest excess of
/// segments ACKed in an epoch over what the bandwidth estimate expects,
/// as the max of two windows of rounds.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct AckAggregation {
    /// Start of the sampling epoch, µs (`ack_epoch_mstamp`).
    pub(super) epoch_mstamp: u64,
    /// Segments (S)ACKed in the epoch (`ack_epoch_acked`, 20 bits).
    pub(super) epoch_acked: u32,
    /// The max excess in each window (`extra_acked[2]`).
    pub(super) extra_acked: [u16; 2],
    /// Age of the current window, rounds (`extra_acked_win_rtts`, 5 bits).
    win_rtts: u32,
    /// The current window (`extra_acked_win_idx`).
    win_idx: usize,
}

impl AckAggregation {
    /// Starts a sampling epoch at `now_us` (init, restart from idle).
    pub(super) fn restart_epoch(&mut self, now_us: u64) {
        self.epoch_mstamp = now_us;
        self.epoch_acked = 0;
    }

    /// `bbr_extra_acked`.
    pub(super) fn max(&self) -> u32 {
        self.extra_acked[0].max(self.extra_acked[1]) as u32
    }

    /// `bbr_update_ack_aggregation` for an ACK with sample `s`: windows of
    /// `win_rtts` rounds, the epoch judged against `bw` up to
    /// `delivered_mstamp`, the excess capped at `cwnd`.
    pub(super) fn update(
        &mut self,
        s: &Sample,
        round_start: bool,
        win_rtts: u32,
        bw: u32,
        delivered_mstamp: u64,
        cwnd: u32,
    ) {
        if s.acked_sacked == 0 || s.delivered < 0 || s.interval_us <= 0 {
            return;
        }
        if round_start {
            self.win_rtts = (self.win_rtts + 1).min(EXTRA_ACKED_WIN_RTTS_MAX);
            if self.win_rtts >= win_rtts {
                self.win_rtts = 0;
                self.win_idx ^= 1;
                self.extra_acked[self.win_idx] = 0;
            }
        }
        let epoch_us = delivered_mstamp.saturating_sub(self.epoch_mstamp);
        let mut expected = sat_u32(bw as u64 * epoch_us / BW_UNIT);
        // Restart the epoch when ACKs run at or below the expected rate, or
        // the count would overflow.
        if self.epoch_acked <= expected || self.epoch_acked.saturating_add(s.acked_sacked) >= ACK_EPOCH_ACKED_RESET {
            self.epoch_acked = 0;
            self.epoch_mstamp = delivered_mstamp;
            expected = 0;
        }
        self.epoch_acked = self.epoch_acked.saturating_add(s.acked_sacked).min(ACK_EPOCH_ACKED_MAX);
        let extra = (self.epoch_acked - expected).min(cwnd).min(u16::MAX as u32) as u16;
        if extra > self.extra_acked[self.win_idx] {
            self.extra_acked[self.win_idx] = extra;
        }
    }

    /// `bbr_ack_aggregation_cwnd`: the estimate times `gain` (1/256), at
    /// most `max_us` of `bw`.
    pub(super) fn cwnd(&self, gain: u32, max_us: u32, bw: u32) -> u32 {
        let max_aggr = sat_u32(bw as u64 * max_us as u64 / BW_UNIT);
        let aggr = sat_u32((gain as u64 * self.max() as u64) >> BBR_SCALE);
        aggr.min(max_aggr)
    }
}

// ----- the model pieces both kernels keep the same way -----

/// BBR's operating modes (`enum bbr_mode`): the same four in Linux's v1
/// (`net/ipv4/tcp_bbr.c`) and Google's v3 (`google/bbr` v3 branch); v3
/// divides PROBE_BW into phases of its own (`v3::Phase`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Mode {
    /// Ramp up quickly to fill the pipe.
    #[default]
    Startup,
    /// Drain the queue STARTUP built.
    Drain,
    /// Cycle the pacing gain around the estimated bandwidth.
    ProbeBw,
    /// Cut in-flight data to measure the propagation delay.
    ProbeRtt,
}

impl Mode {
    /// The trace label: `"startup"`, `"drain"`, `"probe_bw"`, `"probe_rtt"`.
    pub fn label(self) -> &'static str {
        match self {
            Mode::Startup => "startup",
            Mode::Drain => "drain",
            Mode::ProbeBw => "probe_bw",
            Mode::ProbeRtt => "probe_rtt",
        }
    }
}

/// Round trips counted by delivery (`next_rtt_delivered`, `round_start`):
/// a round ends on the ACK of a packet sent after the round began, i.e.
/// whose `prior_delivered` reaches the `delivered` count at which it began.
/// v1 does this in `bbr_update_bw` (and counts the rounds in `rtt_cnt`,
/// its max filter's clock, which v3 does not keep), v3 in
/// `bbr_update_round_start`; both restart a round at the same points
/// (recovery, PROBE_RTT; v3 also at each PROBE_BW phase change).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct Rounds {
    /// `delivered` at which the current round ends.
    pub(super) next_rtt_delivered: u64,
    /// This ACK started a new round.
    pub(super) start: bool,
}

impl Rounds {
    /// Starts a round now: it ends with the ACK of a packet sent from here on.
    pub(super) fn restart(&mut self, delivered: u64) {
        self.next_rtt_delivered = delivered;
    }

    /// Judges one ACK: `valid` is whether its rate sample counts (v1: a
    /// valid `delivered` and interval; v3: a valid interval), `delivered`
    /// the connection's count now. Returns (and keeps) whether a round
    /// started.
    pub(super) fn update(&mut self, valid: bool, prior_delivered: u64, delivered: u64) -> bool {
        self.start = valid && prior_delivered >= self.next_rtt_delivered;
        if self.start {
            self.next_rtt_delivered = delivered;
        }
        self.start
    }
}

/// A running minimum of RTT samples over a window of jiffies (Linux
/// `bbr_update_min_rtt`): a sample replaces the minimum when it is lower,
/// or whenever the window has expired since the minimum was taken. v1
/// keeps one (`min_rtt_us`, `min_rtt_stamp`, window
/// `bbr_min_rtt_win_sec`); v3 keeps it as `probe_rtt_min_us` /
/// `probe_rtt_min_stamp` (window `bbr_probe_rtt_win_ms`) and copies it
/// into its own `min_rtt_us` on its longer window.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) struct MinRtt {
    /// µs; `u32::MAX` (Linux `~0U`) = none yet.
    pub(super) us: u32,
    /// Jiffies when `us` was taken.
    pub(super) stamp: u32,
}

impl Default for MinRtt {
    fn default() -> Self {
        MinRtt { us: u32::MAX, stamp: 0 }
    }
}

impl MinRtt {
    /// Starts at the connection's minimum RTT, if it has one.
    pub(super) fn start(min_rtt: Option<SimDuration>, j: u32) -> MinRtt {
        MinRtt {
            us: min_rtt.map_or(u32::MAX, |m| sat_u32(m.as_micros())),
            stamp: j,
        }
    }

    /// The window of `win` jiffies since the minimum was taken has passed.
    pub(super) fn expired(&self, j: u32, win: u32) -> bool {
        after(j, self.stamp.wrapping_add(win))
    }

    /// Offers the sample of an ACK (`rtt_us` < 0: none); `expired` as
    /// [`Self::expired`] said before the update. `is_ack_delayed` is always
    /// false here (v1 deviation 7).
    pub(super) fn update(&mut self, rtt_us: i64, j: u32, expired: bool) {
        let is_ack_delayed = false;
        if rtt_us >= 0 && (rtt_us < self.us as i64 || (expired && !is_ack_delayed)) {
            self.us = sat_u32(rtt_us as u64);
            self.stamp = j;
        }
    }

    /// The minimum as a duration, if any sample was taken.
    pub(super) fn get(&self) -> Option<SimDuration> {
        (self.us != u32::MAX).then(|| SimDuration::from_micros(self.us as u64))
    }
}

/// How long PROBE_RTT holds its small window (`probe_rtt_done_stamp`,
/// `probe_rtt_round_done` of `bbr_update_min_rtt`, both kernels): from the
/// first ACK with in-flight data at most the PROBE_RTT window, at least
/// `bbr_probe_rtt_mode_ms` and one round.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct ProbeRttHold {
    /// Jiffies at which PROBE_RTT may end; `None` = in flight not yet low
    /// enough (v1 deviation 2: Linux's "0 = unset").
    pub(super) done_stamp: Option<u32>,
    /// A round has ended since the hold began.
    pub(super) round_done: bool,
}

impl ProbeRttHold {
    /// One ACK in PROBE_RTT at jiffy `j`, with `inflight` packets in flight
    /// and `window` the PROBE_RTT window; `hold` is
    /// `msecs_to_jiffies(bbr_probe_rtt_mode_ms)`. The hold starts a round
    /// when it begins. Returns whether the caller should test for the end
    /// (`bbr_check_probe_rtt_done`).
    pub(super) fn on_ack(
        &mut self,
        j: u32,
        hold: u32,
        inflight: u32,
        window: u32,
        rounds: &mut Rounds,
        delivered: u64,
    ) -> bool {
        if self.done_stamp.is_none() && inflight <= window {
            self.done_stamp = Some(j.wrapping_add(hold));
            self.round_done = false;
            rounds.restart(delivered);
            false
        } else if self.done_stamp.is_some() {
            if rounds.start {
                self.round_done = true;
            }
            self.round_done
        } else {
            false
        }
    }

    /// The hold's time is over at jiffy `j` (the test that opens
    /// `bbr_check_probe_rtt_done`).
    pub(super) fn done(&self, j: u32) -> bool {
        matches!(self.done_stamp, Some(done) if after(j, done))
    }
}

/// Full-pipe detection's reference bandwidth and count of rounds without
/// growth (`full_bw`, `full_bw_cnt` of `bbr_check_full_bw_reached`): the
/// pipe is full after `bbr_full_bw_cnt` rounds in which the bandwidth did
/// not reach `bbr_full_bw_thresh` times the reference. What is compared
/// and when differs: v1 tests its windowed max bandwidth only on round
/// starts; v3 tests each ACK's bandwidth sample on every ACK, counts only
/// on round starts, and also ends STARTUP on loss
/// (`bbr_check_loss_too_high_in_startup`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(super) struct FullBw {
    /// The reference bandwidth (`full_bw`), Linux's unit.
    pub(super) bw: u32,
    /// Rounds without growth (`full_bw_cnt`, a 2-bit field).
    pub(super) cnt: u32,
}

impl FullBw {
    /// Forgets the reference and the count.
    pub(super) fn reset(&mut self) {
        self.bw = 0;
        self.cnt = 0;
    }

    /// Is `bw` at least `thresh` (1/256) times the reference? If so it
    /// becomes the reference and the count restarts.
    pub(super) fn grew(&mut self, bw: u32, thresh: u32) -> bool {
        let bw_thresh = (self.bw as u64 * thresh as u64) >> BBR_SCALE;
        if bw as u64 >= bw_thresh {
            self.bw = bw;
            self.cnt = 0;
            return true;
        }
        false
    }

    /// Counts a round without growth; the pipe is full once `needed` were
    /// counted.
    pub(super) fn plateau(&mut self, needed: u32) -> bool {
        self.cnt = (self.cnt + 1) & 3;
        self.cnt >= needed
    }
}

/// `bbr_update_gains` for the modes both kernels treat alike: STARTUP at
/// its gains, DRAIN pacing at `drain` with STARTUP's cwnd gain, PROBE_RTT
/// at 1; PROBE_BW at `probe_bw`, the version's own (v1's 8-phase cycle or
/// the long-term rate's 1; v3's phase gains). Returns (pacing, cwnd) gains.
pub(super) fn mode_gains(mode: Mode, startup: (u32, u32), drain: u32, probe_bw: (u32, u32)) -> (u32, u32) {
    match mode {
        Mode::Startup => startup,
        Mode::Drain => (drain, startup.1),
        Mode::ProbeBw => probe_bw,
        Mode::ProbeRtt => (BBR_UNIT, BBR_UNIT),
    }
}

/// `bbr_set_cwnd`'s ramp toward `target` when not in packet conservation:
/// once the pipe was found full, grow by `acked` but not beyond the
/// target (so the window falls to it at once); before, grow by `acked`
/// while below the target or while `early` (v1: fewer than
/// `TCP_INIT_CWND` segments delivered; v3: cwnd below twice its initial
/// window); never below `min_target`. Returns the window and whether it
/// stopped at the target or did not grow (v3's `try_fast_path`).
pub(super) fn cwnd_toward_target(
    cwnd: u32,
    acked: u32,
    target: u32,
    full_bw_reached: bool,
    early: bool,
    min_target: u32,
) -> (u32, bool) {
    let (cwnd, at_target) = if full_bw_reached {
        let grown = cwnd.saturating_add(acked);
        if grown >= target {
            (target, true)
        } else {
            (grown, false)
        }
    } else if cwnd < target || early {
        (cwnd.saturating_add(acked), false)
    } else {
        (cwnd, true)
    };
    (cwnd.max(min_target), at_target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_max_filter_forgets_a_sample_eleven_rounds_after_it_was_taken() {
        let mut f = WindowedMax::default();
        f.reset(0, 0);
        assert_eq!(f.update(10, 1, 100), 100);
        for t in 2..=11 {
            assert_eq!(f.update(10, t, 50), 100, "round {t}");
        }
        assert_eq!(f.update(10, 12, 50), 50);
    }

    #[test]
    fn the_max_filter_falls_back_to_the_best_sample_still_in_the_window() {
        let mut f = WindowedMax::default();
        f.reset(0, 0);
        f.update(10, 1, 100);
        f.update(10, 3, 60);
        f.update(10, 4, 80); // a second choice from the second quarter
        for t in 5..=11 {
            f.update(10, t, 10);
        }
        // Round 12: the 100 has expired; the best remaining is the 80.
        assert_eq!(f.update(10, 12, 10), 80);
    }

    #[test]
    fn a_new_maximum_replaces_everything_at_once() {
        let mut f = WindowedMax::default();
        f.reset(0, 0);
        f.update(10, 1, 100);
        assert_eq!(f.update(10, 2, 150), 150);
        assert_eq!(f.s, [(2, 150); 3]);
    }
}
