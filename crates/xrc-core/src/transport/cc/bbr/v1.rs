//! BBR version 1 ("Bottleneck Bandwidth and Round-trip propagation time"),
//! as Linux runs it (`net/ipv4/tcp_bbr.c`).
//!
//! # Sources
//!
//! * Linux `net/ipv4/tcp_bbr.c`. The copy I followed is the bpf-next mirror
//!   `kernel-patches/bpf`, blob at commit `1a5b75743c86`: a v6.10-or-later
//!   tree (it has the `bbr_main(sk, ack, flag, rs)` signature and the
//!   `BTF_KFUNCS_START` kfunc table). I checked its model-update, init and
//!   hook functions against the v6.6-era copy of the same mirror (commit
//!   `97a70177`, `bbr_main(sk, rs)`, `BTF_SET8`) and an older v5.x copy in
//!   `torvalds/linux` (commit `02dc96ef`, `tp->snd_cwnd` accessors). The one
//!   behavioural difference I found: the v5.x copy starts the round counter
//!   at `next_rtt_delivered = 0` rather than `tp->delivered`, which is the
//!   same here because `init` runs before anything is delivered. The
//!   version followed has the ACK-aggregation allowance (`extra_acked`,
//!   Linux 5.1) and the EDT-aware in-flight estimate
//!   (`bbr_packets_in_net_at_edt`, 4.20).
//! * Linux `lib/win_minmax.c` (Kathleen Nichols' windowed min/max tracker),
//!   reimplemented as [`WindowedMax`] in the family's shared parts.
//! * N. Cardwell, Y. Cheng, C. S. Gunn, S. Hassas Yeganeh, V. Jacobson,
//!   "BBR: Congestion-Based Congestion Control", ACM Queue 14(5), 2016.
//! * N. Cardwell, Y. Cheng, S. Hassas Yeganeh, V. Jacobson,
//!   draft-cardwell-iccrg-bbr-congestion-control-00 (2017), for the v1
//!   semantics and names (BtlBw, RTprop, gain cycling). Where the draft and
//!   Linux differ in detail, Linux wins.
//!
//! # The model
//!
//! On every ACK (Linux `cong_control`, here [`CongestionControl::cong_control`]):
//!
//! ```text
//!   BtlBw   = max  of delivery-rate samples over the last 10 round trips
//!   RTprop  = min  of RTT samples over the last 10 s
//!   BDP     = BtlBw · RTprop
//!   pacing  = pacing_gain · BtlBw · mss · (1 − 1 %)
//!   cwnd   → cwnd_gain · BDP + extra_acked + quantization budget   (≥ 4)
//! ```
//!
//! A delivery-rate sample is `delivered / interval` from the framework's
//! `tcp_rate.c` port ([`RateSample`]). Application-limited samples enter the
//! filter only if they are at least the current maximum. Rounds are counted by
//! delivery: a round ends on the ACK of a packet sent after the previous round
//! ended (`rs.prior_delivered ≥ next_rtt_delivered`). The window moves toward
//! its target by at most the number of segments this ACK delivered (a
//! slow-start-like ramp) and drops to the target at once only after the pipe
//! was found full.
//!
//! State machine (Linux's diagram, redrawn):
//!
//! ```text
//!          init
//!           │
//!           ▼
//!   ┌──► STARTUP ───────────────┐   pacing 2.89, cwnd 2.89 (high_gain)
//!   │       │ pipe full          │
//!   │       ▼                    │
//!   │     DRAIN ─────────────────┤   pacing 0.35 (1/high_gain), cwnd 2.89
//!   │       │ in flight ≤ BDP    │
//!   │       ▼                    │
//!   ├──► PROBE_BW ◄──┐ phase     │   pacing 5/4, 3/4, 1, 1, 1, 1, 1, 1; cwnd 2
//!   │       │  └─────┘ change    │
//!   │       │                    │ RTprop not refreshed for 10 s
//!   │       ▼                    ▼   (from any mode but PROBE_RTT)
//!   └──── PROBE_RTT ◄────────────┘   pacing 1, cwnd 1, window capped at 4
//!         after ≥ 200 ms and ≥ 1 round at ≤ 4 packets:
//!         PROBE_BW if the pipe was found full, else STARTUP
//! ```
//!
//! * STARTUP → DRAIN: in three consecutive non-application-limited rounds the
//!   maximum bandwidth grew by less than 25 % (`full_bw_thresh`,
//!   `full_bw_cnt`). Entering DRAIN sets `ssthresh` to the in-flight target
//!   for one BDP, as Linux does (only traces and the framework read it).
//! * DRAIN → PROBE_BW: the packets estimated to be in the network at the next
//!   departure time are at most the one-BDP in-flight target.
//! * PROBE_BW: 8 phases of gain `[5/4, 3/4, 1, 1, 1, 1, 1, 1]`. Each phase
//!   lasts one RTprop of delivery time; the 5/4 phase also waits until in
//!   flight reaches 5/4 of the BDP target (or a loss), the 3/4 phase ends early
//!   once in flight falls to the BDP target. Entering PROBE_BW picks the
//!   phase before the start at random among 7 (never the 3/4 phase; see
//!   "Randomness").
//! * PROBE_RTT: cwnd ≤ 4 segments; samples taken meanwhile are marked
//!   application-limited. Left once 200 ms have passed (counted from the
//!   moment in flight first fell to ≤ 4) and a round has ended since.
//!
//! Loss handling (Linux's "packet conservation"): entering fast recovery sets
//! `cwnd = in_flight + acked` and, for the first round of recovery, keeps
//! `cwnd ≥ in_flight + acked` (one new segment per segment delivered). Every
//! ACK first subtracts the segments it marked lost. After the first round the
//! normal ramp (at most +acked per ACK) resumes. Leaving recovery (or a
//! timeout's Loss state) restores at least the window saved on entry
//! (`prior_cwnd`, from the `ssthresh` hook). A timeout also resets the
//! full-pipe reference bandwidth and counts as a round for the policer test.
//!
//! Long-term ("LT") bandwidth, for token-bucket policers: starting at the
//! first loss, intervals of 4–16 rounds end on a loss; an interval whose loss
//! rate is ≥ 50/256 (≈ 20 %) yields `delivered / time`. Two consecutive such
//! intervals within 1/8 (or 4 kbit/s) of each other mean "policed": BBR then
//! uses their average as its bandwidth with pacing gain 1 for 48 rounds of
//! PROBE_BW, and starts over. An application-limited sample or an interval
//! longer than 16 rounds restarts the sampling.
//!
//! ACK aggregation: `extra_acked` is the largest excess of segments ACKed in
//! an epoch over `BtlBw · epoch length`, kept as the maximum of two
//! 5-round windows, capped at cwnd and at 100 ms of `BtlBw`. Once the pipe was
//! found full it is added to the cwnd target.
//!
//! # Fixed-point scales, all as in Linux
//!
//! | quantity | unit / scale | notes |
//! |---|---|---|
//! | bandwidth (`bw`, `full_bw`, `lt_bw`, the filter) | segments per µs × 2²⁴ (`BW_SCALE`), u32 | 1 unit ≈ 715 bit/s at 1500 B; u32 reaches ≈ 3 Tbit/s |
//! | gains (`pacing_gain`, `cwnd_gain`, `full_bw_thresh`, `lt_bw_ratio`, `extra_acked_gain`) | 1/256 (`BBR_SCALE` = 8, `BBR_UNIT` = 256) | 10-bit fields in Linux: ≤ 1023 |
//! | high gain | `256·2885/1000 + 1` = 739 → 2.8867 (2/ln 2 = 2.8854) | drain gain `256·1000/2885` = 88 → 0.34375 |
//! | PROBE_BW gains | 320 (1.25), 192 (0.75), 256 (1.0) ×6 | |
//! | `min_rtt_us`, rtt, intervals | µs; `min_rtt_us = u32::MAX` = none yet | µs stamps are `⌊t/1000⌋` of the ns clock |
//! | `cycle_mstamp`, `delivered_mstamp`, ACK epoch | µs (`tcp_mstamp`) | |
//! | `lt_last_stamp` | ms, u32 | |
//! | `min_rtt_stamp`, `probe_rtt_done_stamp` | jiffies at [`Config::hz`], u32, wrapping | |
//! | pacing rate | bytes/s (`sk_pacing_rate`) = `bw·mss·gain/256 · 990000 / 2²⁴` | exposed ×8 as a [`BitRate`] |
//! | BDP | `⌈(bw·min_rtt_us·gain/256) / 2²⁴⌉` segments | rounded up, as Linux |
//!
//! # Randomness
//!
//! Linux draws the PROBE_BW start phase with `get_random_u32_below(7)`. Here
//! the draw comes from a SplitMix64 stream reduced to `0..7` by Lemire's
//! multiply-shift with rejection (exactly uniform). Its state is the
//! flow's named stream of the scenario's master seed (`flow/<k>/cc`, see
//! [`Bbr::seeded`]) XORed with [`Config::seed`] (default 0), so flows differ,
//! seeds differ, and a run is reproducible from the scenario alone. The
//! stream advances only at PROBE_BW entries.
//!
//! # Deviations from Linux
//!
//! 1. Clocks. Jiffies are `⌊now·HZ/10⁹⌋` at [`Config::hz`] (default 1000),
//!    truncated to u32 and compared wrap-safely as `after()` does; the µs
//!    clock is `⌊now/1000⌋`. `msecs_to_jiffies` rounds up exactly (Linux's
//!    HZ = 300 path approximates it). RTT samples in µs are rebuilt as the
//!    difference of the truncated µs stamps of the ACK and of the send
//!    (`now − rtt`), as `tcp_stamp_us_delta` computes them. A rate-sample
//!    interval in µs is the difference of µs stamps when it is the ACK phase
//!    (`now − prior_time`), else (send phase) the ns interval truncated to µs.
//! 2. Sentinels. `probe_rtt_done_stamp` is an `Option` instead of "0 = unset"
//!    (Linux misfires when the stamp is exactly jiffy 0). Counters that are
//!    u32 in Linux and can wrap there (`tp->delivered`, `tp->lost`,
//!    `next_rtt_delivered`) are u64 and never wrap. Values Linux truncates
//!    into narrow fields (u32 bandwidth from a u64 division, u16
//!    `extra_acked`) saturate instead; neither happens below 3 Tbit/s or
//!    65 535-segment windows. The pacing-rate product is computed in 128 bits
//!    (Linux's u64 overflows above ≈ 2.9 Tbit/s).
//! 3. TSO/GSO, simplified. The simulator sends one segment per packet, but
//!    the in-flight budget keeps Linux's `3·tso_segs_goal` term because Linux
//!    adds it regardless of the NIC: `tso_segs_goal = min(max((pacing_rate >>
//!    10) / mss, min_tso_segs), 127)` with `sk_pacing_shift` = 10,
//!    `min_tso_segs` = 1 below `min_tso_rate` (1.2 Mbit/s) else 2, and the
//!    byte cap `GSO_LEGACY_MAX_SIZE − 1 − MAX_TCP_HEADER` = 65 536 − 1 − 320
//!    (x86-64's `MAX_TCP_HEADER`; the device's `gso_max_size` is ignored, as
//!    Linux ignores it here too). On a 20 Mbit/s path the goal is 2 at gain 1
//!    (budget +6 segments) and 4 at STARTUP's gain (+12).
//! 4. Earliest departure time. Linux's `bbr_packets_in_net_at_edt` reads
//!    `tp->tcp_wstamp_ns`, the pacing schedule's next departure. The
//!    framework's equivalent (its `pace_next`) is not in [`ConnView`]; it is
//!    rebuilt as `last_send + mss·8 / pacing_rate`, which is what the
//!    framework schedules after a full-sized segment (it paces payload
//!    bytes, as Linux does), using the pacing rate in force before this
//!    ACK.
//! 5. `tp->delivered_mstamp` is not in [`ConnView`]; it is tracked here as
//!    Linux maintains it: set to `now` on every ACK that delivered something,
//!    and to the send time when a segment leaves with nothing outstanding
//!    (seen here as [`CaEvent::TxStart`] with `packets_out == 0`).
//! 6. `tp->app_limited`. In PROBE_RTT Linux writes the connection's
//!    app-limited mark (`delivered + in_flight`) so that samples of packets
//!    sent then are flagged application-limited. An algorithm here cannot
//!    write the framework's mark, so BBR keeps its own with the same set and
//!    clear rules (cleared on the first ACK with `delivered` beyond it) and
//!    flags a sample when its packet was sent while the mark was set (its
//!    `prior_delivered` lies between the `delivered` counts at which the mark
//!    was set and cleared), ORed with the framework's own flag. It also
//!    counts as "application-limited" for the idle-restart test in
//!    `cwnd_event`. The last activation is remembered (they are 10 s apart).
//! 7. `rs.is_ack_delayed` (Linux's `FLAG_ACK_MAYBE_DELAYED`, set for an ACK
//!    of a lone sub-MSS runt) is not in [`RateSample`]; it is taken as false.
//!    With full-sized segments Linux never sets it either.
//! 8. `rs.delivered` for a sample whose interval the framework rejected
//!    (shorter than the minimum RTT) is `None` here, but Linux still fills
//!    `delivered` and only invalidates `interval_us`; BBR's "delivered > 0"
//!    test (which ends an idle restart) is therefore rebuilt from
//!    `view.delivered − rs.prior_delivered` when the ACK delivered something.
//! 9. `undo_cwnd` has no view; it resets the long-term sampler with the
//!    `delivered`, `lost` and `delivered_mstamp` seen at the latest hook.
//! 10. A pacing rate of 0 (only possible if the long-term estimate averages
//!     to 0) is reported as `None`, i.e. unpaced, as Linux skips pacing when
//!     `sk_pacing_rate` is 0; the framework would otherwise wait 1 s per
//!     packet.
//! 11. Parameters that are `static const` in Linux are per-connection
//!     [`Config`] fields with Linux's values as defaults; `seed` and `hz` are
//!     additions.
//!
//! # Framework notes (see `docs/algorithms/bbr.md`)
//!
//! Where the sender still differs from Linux in ways BBR can see: it paces
//! the first 10 segments; there is no connection handshake, so `init` sees
//! no RTT and BBR paces the initial window at its nominal 1 ms RTT rate.

use serde::{Deserialize, Serialize};

use super::common::{
    bdp, bdp_segments, check_hz, check_range, cwnd_toward_target, edt_burst, jiffies, mode_gains, msecs_to_jiffies,
    packets_in_net_at_edt, rate_bytes_per_sec, raw_bytes_per_sec, sat_u32, saved_cwnd, tso_segs, us, AckAggregation,
    AppLimitedMark, FullBw, MinRtt, Pacing, PacingRule, ProbeRttHold, Rng, Rounds, Sample, PACING_SHIFT, USEC_PER_MSEC,
};
pub use super::common::{Mode, WindowedMax, BBR_SCALE, BBR_UNIT, BW_SCALE, BW_UNIT};
use crate::transport::cc::{CaEvent, CaState, CongestionControl, ConnView, RateSample, Window, INFINITE_SSTHRESH};
use crate::units::{BitRate, SimDuration, SimTime};
/// `CYCLE_LEN`: phases in the PROBE_BW gain cycle.
pub const CYCLE_LEN: usize = 8;
/// The PROBE_BW pacing gains, `BBR_UNIT` scale (`bbr_pacing_gain[]`).
pub const PACING_GAIN_CYCLE: [u32; CYCLE_LEN] = [
    BBR_UNIT * 5 / 4,
    BBR_UNIT * 3 / 4,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
    BBR_UNIT,
];
/// `TCP_INIT_CWND`.
const TCP_INIT_CWND: u32 = 10;
/// The largest TSO goal (`0x7F`).
const MAX_TSO_SEGS: u32 = 0x7f;

/// BBR's parameters. The defaults are the constants of Linux's
/// `tcp_bbr.c`; gains are in 1/256 (`BBR_UNIT`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Mixed into the connection's random stream (PROBE_BW start phase),
    /// which comes from the master seed. Not in Linux, which uses the
    /// kernel's RNG.
    pub seed: u64,
    /// The kernel's tick rate (`CONFIG_HZ`): 100, 250, 300 or 1000. It sets
    /// the resolution of the 10 s min-RTT window and the 200 ms PROBE_RTT.
    pub hz: u32,
    /// Length of the max-bandwidth filter, rounds (`bbr_bw_rtts` =
    /// `CYCLE_LEN + 2` = 10).
    pub bw_rtts: u32,
    /// Length of the min-RTT filter, seconds (`bbr_min_rtt_win_sec`).
    pub min_rtt_win_sec: u32,
    /// Minimum time at the PROBE_RTT window, ms (`bbr_probe_rtt_mode_ms`);
    /// 0 disables PROBE_RTT.
    pub probe_rtt_mode_ms: u32,
    /// Smallest window, and the PROBE_RTT window, segments
    /// (`bbr_cwnd_min_target`).
    pub cwnd_min_target: u32,
    /// STARTUP pacing and cwnd gain, 1/256 (`bbr_high_gain` = 739 ≈ 2/ln 2).
    pub high_gain: u32,
    /// DRAIN pacing gain, 1/256 (`bbr_drain_gain` = 88 ≈ ln 2 / 2).
    pub drain_gain: u32,
    /// PROBE_BW cwnd gain, 1/256 (`bbr_cwnd_gain` = 512).
    pub cwnd_gain: u32,
    /// Pace this many percent below the bandwidth estimate
    /// (`bbr_pacing_margin_percent`).
    pub pacing_margin_percent: u32,
    /// The PROBE_BW start phase is drawn among this many
    /// (`bbr_cycle_rand`).
    pub cycle_rand: u32,
    /// Growth that counts as "still growing" in STARTUP, 1/256
    /// (`bbr_full_bw_thresh` = 320 = 1.25).
    pub full_bw_thresh: u32,
    /// Rounds without such growth that mean the pipe is full
    /// (`bbr_full_bw_cnt`).
    pub full_bw_cnt: u32,
    /// Below this pacing rate the TSO goal is 1 segment, bit/s
    /// (`bbr_min_tso_rate`).
    pub min_tso_rate: u64,
    /// Minimum rounds in a long-term sampling interval
    /// (`bbr_lt_intvl_min_rtts`).
    pub lt_intvl_min_rtts: u32,
    /// Loss rate that makes an interval lossy, 1/256 (`bbr_lt_loss_thresh`
    /// = 50 ≈ 20 %).
    pub lt_loss_thresh: u32,
    /// Two intervals within this ratio are consistent, 1/256
    /// (`bbr_lt_bw_ratio` = 32 = 1/8).
    pub lt_bw_ratio: u32,
    /// ... or within this difference, bytes/s (`bbr_lt_bw_diff` = 500 =
    /// 4 kbit/s).
    pub lt_bw_diff: u32,
    /// Rounds of PROBE_BW on the long-term bandwidth before probing again
    /// (`bbr_lt_bw_max_rtts`).
    pub lt_bw_max_rtts: u32,
    /// Weight of `extra_acked` in the cwnd target, 1/256
    /// (`bbr_extra_acked_gain`); 0 disables the aggregation estimate.
    pub extra_acked_gain: u32,
    /// Length of each of the two `extra_acked` windows, rounds
    /// (`bbr_extra_acked_win_rtts`).
    pub extra_acked_win_rtts: u32,
    /// Cap of the aggregation allowance, µs of bandwidth
    /// (`bbr_extra_acked_max_us`).
    pub extra_acked_max_us: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            seed: 0,
            hz: 1000,
            bw_rtts: CYCLE_LEN as u32 + 2,
            min_rtt_win_sec: 10,
            probe_rtt_mode_ms: 200,
            cwnd_min_target: 4,
            high_gain: BBR_UNIT * 2885 / 1000 + 1,
            drain_gain: BBR_UNIT * 1000 / 2885,
            cwnd_gain: BBR_UNIT * 2,
            pacing_margin_percent: 1,
            cycle_rand: 7,
            full_bw_thresh: BBR_UNIT * 5 / 4,
            full_bw_cnt: 3,
            min_tso_rate: 1_200_000,
            lt_intvl_min_rtts: 4,
            lt_loss_thresh: 50,
            lt_bw_ratio: BBR_UNIT / 8,
            lt_bw_diff: 4000 / 8,
            lt_bw_max_rtts: 48,
            extra_acked_gain: BBR_UNIT,
            extra_acked_win_rtts: 5,
            extra_acked_max_us: 100 * 1000,
        }
    }
}

impl crate::transport::cc::CcConfig for Config {
    fn build(self, stream: u64) -> Box<dyn crate::transport::cc::CongestionControl> {
        Box::new(Bbr::seeded(self, stream))
    }

    fn validate(&self) -> Result<(), String> {
        check_hz(self.hz)?;
        let range = check_range;
        range("bw_rtts", self.bw_rtts as u64, 1, u32::MAX as u64 / 2)?;
        // min_rtt_win_sec·HZ jiffies must stay below 2³¹ for after().
        range("min_rtt_win_sec", self.min_rtt_win_sec as u64, 1, 2_000_000)?;
        range("probe_rtt_mode_ms", self.probe_rtt_mode_ms as u64, 0, 2_000_000_000)?;
        range("cwnd_min_target", self.cwnd_min_target as u64, 1, 1 << 20)?;
        // Linux keeps the gains in 10-bit fields.
        range("high_gain", self.high_gain as u64, 1, 1023)?;
        range("drain_gain", self.drain_gain as u64, 1, 1023)?;
        range("cwnd_gain", self.cwnd_gain as u64, 1, 1023)?;
        range("pacing_margin_percent", self.pacing_margin_percent as u64, 0, 99)?;
        range("cycle_rand", self.cycle_rand as u64, 1, CYCLE_LEN as u64)?;
        range("full_bw_thresh", self.full_bw_thresh as u64, 1, 1 << 16)?;
        // full_bw_cnt is a 2-bit counter.
        range("full_bw_cnt", self.full_bw_cnt as u64, 1, 3)?;
        range("min_tso_rate", self.min_tso_rate, 0, u64::MAX / 2)?;
        // lt_rtt_cnt is a 7-bit counter that must reach 4·lt_intvl_min_rtts + 1.
        range("lt_intvl_min_rtts", self.lt_intvl_min_rtts as u64, 1, 31)?;
        range("lt_loss_thresh", self.lt_loss_thresh as u64, 0, 1 << 16)?;
        range("lt_bw_ratio", self.lt_bw_ratio as u64, 0, 1 << 16)?;
        range("lt_bw_max_rtts", self.lt_bw_max_rtts as u64, 1, 127)?;
        range("extra_acked_gain", self.extra_acked_gain as u64, 0, 1 << 16)?;
        // extra_acked_win_rtts is a 5-bit counter.
        range("extra_acked_win_rtts", self.extra_acked_win_rtts as u64, 1, 31)?;
        Ok(())
    }
}

/// Order of the congestion states as Linux numbers them.
fn ca_ord(s: CaState) -> u8 {
    match s {
        CaState::Open => 0,
        CaState::Disorder => 1,
        CaState::Cwr => 2,
        CaState::Recovery => 3,
        CaState::Loss => 4,
    }
}

/// BBR v1 for one connection (Linux `struct bbr` plus the few framework
/// values it needs).
#[derive(Clone, Debug)]
pub struct Bbr {
    cfg: Config,
    /// The random stream's initial state (`bbr_init` restarts it).
    rng_seed: u64,
    rng: Rng,
    mode: Mode,
    /// The RTprop filter (`min_rtt_us`, `min_rtt_stamp`) over
    /// `min_rtt_win_sec`.
    min_rtt: MinRtt,
    /// PROBE_RTT's hold (`probe_rtt_done_stamp`, `probe_rtt_round_done`).
    probe_rtt: ProbeRttHold,
    /// Max-bandwidth filter over rounds.
    bw: WindowedMax,
    /// Rounds elapsed (u32, wrapping, the filter's clock).
    rtt_cnt: u32,
    /// Round counting (`next_rtt_delivered`, `round_start`).
    rounds: Rounds,
    /// µs stamp (`delivered_mstamp`) when the current gain phase began.
    cycle_mstamp: u64,
    prev_ca_state: CaState,
    packet_conservation: bool,
    idle_restart: bool,
    lt_is_sampling: bool,
    lt_rtt_cnt: u32,
    lt_use_bw: bool,
    lt_bw: u32,
    lt_last_delivered: u64,
    /// ms stamp of the LT interval start.
    lt_last_stamp: u32,
    lt_last_lost: u64,
    pacing_gain: u32,
    cwnd_gain: u32,
    full_bw_reached: bool,
    cycle_idx: usize,
    /// Window saved on entering recovery or PROBE_RTT.
    prior_cwnd: u32,
    /// The full-pipe test's reference bandwidth and count (`full_bw`,
    /// `full_bw_cnt`).
    full: FullBw,
    /// ACK-aggregation estimate (`extra_acked`).
    agg: AckAggregation,

    // ----- framework values Linux reads from the socket -----
    /// `sk_pacing_rate` and `has_seen_rtt`.
    pacing: Pacing,
    /// `mss_cache`, bytes, as of the latest hook.
    mss: u32,
    /// `tp->delivered_mstamp`, µs (deviation 5).
    delivered_mstamp: u64,
    /// `tp->delivered` and `tp->lost` as of the latest hook (deviation 9).
    last_delivered: u64,
    last_lost: u64,
    /// Deviation 6.
    al: AppLimitedMark,
    /// The cwnd target of the latest ACK that computed one (observer).
    target_cwnd: Option<u32>,
}

impl Bbr {
    pub fn new(cfg: Config) -> Self {
        Self::seeded(cfg, 0)
    }

    /// A connection whose random stream starts at `stream ^ cfg.seed`
    /// (`stream`: a draw from the flow's named stream of the master seed).
    pub fn seeded(cfg: Config, stream: u64) -> Self {
        let rng_seed = stream ^ cfg.seed;
        Bbr {
            cfg,
            rng_seed,
            rng: Rng(rng_seed),
            mode: Mode::Startup,
            min_rtt: MinRtt::default(),
            probe_rtt: ProbeRttHold::default(),
            bw: WindowedMax::default(),
            rtt_cnt: 0,
            rounds: Rounds::default(),
            cycle_mstamp: 0,
            prev_ca_state: CaState::Open,
            packet_conservation: false,
            idle_restart: false,
            lt_is_sampling: false,
            lt_rtt_cnt: 0,
            lt_use_bw: false,
            lt_bw: 0,
            lt_last_delivered: 0,
            lt_last_stamp: 0,
            lt_last_lost: 0,
            pacing_gain: 0,
            cwnd_gain: 0,
            full_bw_reached: false,
            cycle_idx: 0,
            prior_cwnd: 0,
            full: FullBw::default(),
            agg: AckAggregation::default(),
            pacing: Pacing::default(),
            mss: 1448,
            delivered_mstamp: 0,
            last_delivered: 0,
            last_lost: 0,
            al: AppLimitedMark::default(),
            target_cwnd: None,
        }
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    // ----- observers -----

    /// The current mode.
    pub fn bbr_mode(&self) -> Mode {
        self.mode
    }
    /// The bandwidth estimate BBR uses (the long-term one while policed), in
    /// Linux's unit (segments/µs × 2²⁴).
    pub fn bw_raw(&self) -> u32 {
        self.bbr_bw()
    }
    /// The windowed maximum delivery rate, same unit.
    pub fn max_bw_raw(&self) -> u32 {
        self.bw.get()
    }
    /// The bottleneck-bandwidth estimate as a payload bit rate (Linux's
    /// `bbr_bw_lo/hi` of `tcp_info`, times 8).
    pub fn btl_bw(&self) -> BitRate {
        self.raw_to_bitrate(self.bbr_bw())
    }
    /// The windowed maximum delivery rate as a payload bit rate.
    pub fn max_bw(&self) -> BitRate {
        self.raw_to_bitrate(self.bw.get())
    }
    /// The long-term (policer) bandwidth, if one was measured.
    pub fn lt_bw(&self) -> Option<BitRate> {
        (self.lt_bw != 0).then(|| self.raw_to_bitrate(self.lt_bw))
    }
    /// BBR is using the long-term bandwidth (it believes it is policed).
    pub fn lt_use_bw(&self) -> bool {
        self.lt_use_bw
    }
    /// The propagation-delay estimate (RTprop), if any RTT was seen.
    pub fn min_rtt(&self) -> Option<SimDuration> {
        self.min_rtt.get()
    }
    /// Current pacing gain, 1/256.
    pub fn pacing_gain_raw(&self) -> u32 {
        self.pacing_gain
    }
    /// Current cwnd gain, 1/256.
    pub fn cwnd_gain_raw(&self) -> u32 {
        self.cwnd_gain
    }
    /// Current pacing gain (e.g. 2.887 in STARTUP).
    pub fn pacing_gain(&self) -> f64 {
        self.pacing_gain as f64 / BBR_UNIT as f64
    }
    /// Current cwnd gain.
    pub fn cwnd_gain(&self) -> f64 {
        self.cwnd_gain as f64 / BBR_UNIT as f64
    }
    /// Index of the PROBE_BW gain phase (0 = the 5/4 phase).
    pub fn cycle_index(&self) -> usize {
        self.cycle_idx
    }
    /// STARTUP found the pipe full.
    pub fn full_bw_reached(&self) -> bool {
        self.full_bw_reached
    }
    /// Rounds elapsed (Linux `rtt_cnt`).
    pub fn round_count(&self) -> u32 {
        self.rtt_cnt
    }
    /// The first round of recovery is under way.
    pub fn packet_conservation(&self) -> bool {
        self.packet_conservation
    }
    /// Window saved on entering recovery or PROBE_RTT.
    pub fn prior_cwnd(&self) -> u32 {
        self.prior_cwnd
    }
    /// The ACK-aggregation estimate, segments (max of the two windows).
    pub fn extra_acked(&self) -> u32 {
        self.agg.max()
    }
    /// The cwnd target of the latest ACK that computed one, segments.
    pub fn target_cwnd(&self) -> Option<u32> {
        self.target_cwnd
    }
    /// The pacing rate, bytes/s (`sk_pacing_rate`).
    pub fn pacing_rate_bytes(&self) -> Option<u64> {
        self.pacing.rate
    }
    #[cfg(test)]
    fn lt_bw_raw_for_test(&self) -> u32 {
        self.lt_bw
    }

    fn raw_to_bitrate(&self, bw: u32) -> BitRate {
        BitRate::from_bps(raw_bytes_per_sec(bw, self.mss).saturating_mul(8))
    }

    // ----- clocks (deviation 1) -----

    fn jiffies(&self, t: SimTime) -> u32 {
        jiffies(t, self.cfg.hz)
    }
    fn msecs_to_jiffies(&self, ms: u32) -> u32 {
        msecs_to_jiffies(ms, self.cfg.hz)
    }

    /// The rate sample in Linux's terms (deviations 1, 6, 7, 8).
    fn linux_sample(&self, now: SimTime, rs: &RateSample, c: &ConnView) -> Sample {
        let mut s = Sample::from_rate(now, rs, c);
        let has_prior = rs.delivered.is_some() || rs.acked_sacked > 0;
        s.is_app_limited |= has_prior && self.al.covers(rs.prior_delivered);
        s
    }

    fn note(&mut self, c: &ConnView) {
        if c.mss > 0 {
            self.mss = c.mss;
        }
        self.last_delivered = c.delivered;
        self.last_lost = c.lost_total;
    }

    // ----- estimates -----

    /// `bbr_max_bw`.
    fn max_bw_est(&self) -> u32 {
        self.bw.get()
    }
    /// `bbr_bw`: the long-term estimate while policed, else the max filter.
    fn bbr_bw(&self) -> u32 {
        if self.lt_use_bw {
            self.lt_bw
        } else {
            self.bw.get()
        }
    }
    /// v1's `bbr_bw_to_pacing_rate`: the margin, no floor; STARTUP at
    /// high_gain.
    fn pacing_rule(&self) -> PacingRule {
        PacingRule {
            mss: self.mss,
            margin_percent: self.cfg.pacing_margin_percent,
            floor: 0,
            startup_gain: self.cfg.high_gain,
        }
    }

    /// `bbr_set_pacing_rate`.
    fn set_pacing_rate(&mut self, c: &ConnView, cwnd: u32, bw: u32, gain: u32) {
        let rule = self.pacing_rule();
        self.pacing.set(&rule, c.srtt, cwnd, bw, gain, self.full_bw_reached);
    }

    /// `bbr_min_tso_segs`.
    fn min_tso_segs(&self) -> u32 {
        if self.pacing.rate.unwrap_or(0) < self.cfg.min_tso_rate >> 3 {
            1
        } else {
            2
        }
    }

    /// `bbr_tso_segs_goal` (deviation 3).
    fn tso_segs_goal(&self) -> u32 {
        tso_segs(
            self.pacing.rate.unwrap_or(0) >> PACING_SHIFT,
            self.mss,
            self.min_tso_segs(),
        )
        .min(MAX_TSO_SEGS)
    }

    /// `bbr_save_cwnd`: remember the last good window.
    fn save_cwnd(&mut self, cwnd: u32) {
        self.prior_cwnd = saved_cwnd(self.prior_cwnd, cwnd, self.prev_ca_state, self.mode == Mode::ProbeRtt);
    }

    /// `bbr_bdp`: ⌈bw · min_rtt · gain⌉ segments; the initial window before
    /// any RTT sample.
    fn bdp(&self, bw: u32, gain: u32) -> u32 {
        bdp(bw, self.min_rtt.us, gain).unwrap_or(TCP_INIT_CWND)
    }

    /// `bbr_quantization_budget`: room for TSO bursts at both ends, rounded
    /// up to even, plus 2 in the probing phase.
    fn quantization_budget(&self, cwnd: u32) -> u32 {
        let mut cwnd = cwnd.saturating_add(3 * self.tso_segs_goal());
        cwnd = (cwnd.saturating_add(1)) & !1;
        if self.mode == Mode::ProbeBw && self.cycle_idx == 0 {
            cwnd = cwnd.saturating_add(2);
        }
        cwnd
    }

    /// `bbr_inflight`.
    fn inflight(&self, bw: u32, gain: u32) -> u32 {
        self.quantization_budget(self.bdp(bw, gain))
    }

    /// `bbr_packets_in_net_at_edt`: in flight less what the bottleneck will
    /// have delivered by the next departure (deviation 4); counting the
    /// departing burst when the gain raises in-flight data.
    fn packets_in_net_at_edt(&self, now: SimTime, c: &ConnView, inflight_now: u32) -> u32 {
        let burst = edt_burst(self.pacing_gain, self.tso_segs_goal());
        packets_in_net_at_edt(
            now,
            c,
            self.pacing.rate,
            self.mss,
            self.bbr_bw(),
            inflight_now.saturating_add(burst),
        )
    }

    /// `bbr_ack_aggregation_cwnd`: only once the pipe was found full.
    fn ack_aggregation_cwnd(&self) -> u32 {
        if self.cfg.extra_acked_gain == 0 || !self.full_bw_reached {
            return 0;
        }
        self.agg
            .cwnd(self.cfg.extra_acked_gain, self.cfg.extra_acked_max_us, self.bbr_bw())
    }

    // ----- window -----

    /// `bbr_set_cwnd_to_recover_or_restore`: returns the window and whether
    /// packet conservation decides it.
    fn recover_or_restore(&mut self, w: &Window, c: &ConnView, s: &Sample, acked: u32) -> (u32, bool) {
        let prev = self.prev_ca_state;
        let state = c.ca_state;
        let mut cwnd = w.cwnd;
        // Deduct what this ACK marked lost; the ramp below may add back.
        if s.losses > 0 {
            cwnd = (cwnd as i64 - s.losses as i64).max(1) as u32;
        }
        if state == CaState::Recovery && prev != CaState::Recovery {
            // First round of recovery: packet conservation, starting a round
            // now, and dropping window left unused.
            self.packet_conservation = true;
            self.rounds.restart(c.delivered);
            cwnd = c.packets_in_flight.saturating_add(acked);
        } else if ca_ord(prev) >= ca_ord(CaState::Recovery) && ca_ord(state) < ca_ord(CaState::Recovery) {
            // Recovery or Loss is over: restore the window saved on entry.
            cwnd = cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;
        if self.packet_conservation {
            return (cwnd.max(c.packets_in_flight.saturating_add(acked)), true);
        }
        (cwnd, false)
    }

    /// `bbr_set_cwnd`.
    fn set_cwnd(&mut self, w: &mut Window, c: &ConnView, s: &Sample, acked: u32, bw: u32, gain: u32) {
        let mut cwnd = w.cwnd;
        if acked != 0 {
            let (restored, conserving) = self.recover_or_restore(w, c, s, acked);
            cwnd = restored;
            if !conserving {
                let mut target = self.bdp(bw, gain);
                target = target.saturating_add(self.ack_aggregation_cwnd());
                target = self.quantization_budget(target);
                self.target_cwnd = Some(target);
                // Only cut the window once the pipe was found full.
                let early = c.delivered < TCP_INIT_CWND as u64;
                (cwnd, _) = cwnd_toward_target(
                    cwnd,
                    acked,
                    target,
                    self.full_bw_reached,
                    early,
                    self.cfg.cwnd_min_target,
                );
            }
        }
        w.cwnd = cwnd.min(w.cwnd_clamp);
        if self.mode == Mode::ProbeRtt {
            w.cwnd = w.cwnd.min(self.cfg.cwnd_min_target);
        }
    }

    // ----- gain cycling -----

    /// `bbr_is_next_cycle_phase`.
    fn is_next_cycle_phase(&self, now: SimTime, c: &ConnView, s: &Sample) -> bool {
        let elapsed = self.delivered_mstamp.saturating_sub(self.cycle_mstamp);
        let is_full_length = elapsed > self.min_rtt.us as u64;
        if self.pacing_gain == BBR_UNIT {
            return is_full_length;
        }
        let inflight = self.packets_in_net_at_edt(now, c, s.prior_in_flight);
        let bw = self.max_bw_est();
        if self.pacing_gain > BBR_UNIT {
            // Probe until in flight reaches gain·BDP, unless it is lossy.
            return is_full_length && (s.losses > 0 || inflight >= self.inflight(bw, self.pacing_gain));
        }
        // Drain phase: stop early once the queue is estimated empty.
        is_full_length || inflight <= self.inflight(bw, BBR_UNIT)
    }

    /// `bbr_advance_cycle_phase`.
    fn advance_cycle_phase(&mut self) {
        self.cycle_idx = (self.cycle_idx + 1) % CYCLE_LEN;
        self.cycle_mstamp = self.delivered_mstamp;
    }

    /// `bbr_update_cycle_phase`.
    fn update_cycle_phase(&mut self, now: SimTime, c: &ConnView, s: &Sample) {
        if self.mode == Mode::ProbeBw && self.is_next_cycle_phase(now, c, s) {
            self.advance_cycle_phase();
        }
    }

    /// `bbr_reset_probe_bw_mode`: random start phase (never the 3/4 one).
    fn reset_probe_bw_mode(&mut self) {
        self.mode = Mode::ProbeBw;
        let r = self.rng.below(self.cfg.cycle_rand) as usize;
        self.cycle_idx = CYCLE_LEN - 1 - r;
        self.advance_cycle_phase();
    }

    /// `bbr_reset_mode`.
    fn reset_mode(&mut self) {
        if !self.full_bw_reached {
            self.mode = Mode::Startup;
        } else {
            self.reset_probe_bw_mode();
        }
    }

    // ----- long-term (policer) bandwidth -----

    /// `bbr_reset_lt_bw_sampling_interval`.
    fn reset_lt_interval(&mut self, delivered: u64, lost: u64) {
        self.lt_last_stamp = (self.delivered_mstamp / USEC_PER_MSEC) as u32;
        self.lt_last_delivered = delivered;
        self.lt_last_lost = lost;
        self.lt_rtt_cnt = 0;
    }

    /// `bbr_reset_lt_bw_sampling`.
    fn reset_lt(&mut self, delivered: u64, lost: u64) {
        self.lt_bw = 0;
        self.lt_use_bw = false;
        self.lt_is_sampling = false;
        self.reset_lt_interval(delivered, lost);
    }

    /// `bbr_lt_bw_interval_done`.
    fn lt_interval_done(&mut self, bw: u32, delivered: u64, lost: u64) {
        if self.lt_bw != 0 {
            let diff = (bw as i64 - self.lt_bw as i64).unsigned_abs();
            let close_ratio = diff * BBR_UNIT as u64 <= self.cfg.lt_bw_ratio as u64 * self.lt_bw as u64;
            let close_abs = rate_bytes_per_sec(diff, self.mss, BBR_UNIT, self.cfg.pacing_margin_percent)
                <= self.cfg.lt_bw_diff as u64;
            if close_ratio || close_abs {
                // Two consistent lossy intervals: assume a policer.
                self.lt_bw = ((bw as u64 + self.lt_bw as u64) >> 1) as u32;
                self.lt_use_bw = true;
                self.pacing_gain = BBR_UNIT;
                self.lt_rtt_cnt = 0;
                return;
            }
        }
        self.lt_bw = bw;
        self.reset_lt_interval(delivered, lost);
    }

    /// `bbr_lt_bw_sampling`. `delivered` and `lost` are the connection's
    /// totals (`tp->delivered`, `tp->lost`).
    fn lt_bw_sampling(&mut self, losses: u32, is_app_limited: bool, delivered: u64, lost: u64) {
        if self.lt_use_bw {
            if self.mode == Mode::ProbeBw && self.rounds.start {
                self.lt_rtt_cnt += 1;
                if self.lt_rtt_cnt >= self.cfg.lt_bw_max_rtts {
                    self.reset_lt(delivered, lost);
                    self.reset_probe_bw_mode();
                }
            }
            return;
        }
        // Sample only from the first loss on, once the policer's bucket is
        // empty.
        if !self.lt_is_sampling {
            if losses == 0 {
                return;
            }
            self.reset_lt_interval(delivered, lost);
            self.lt_is_sampling = true;
        }
        if is_app_limited {
            self.reset_lt(delivered, lost);
            return;
        }
        if self.rounds.start {
            self.lt_rtt_cnt += 1;
        }
        if self.lt_rtt_cnt < self.cfg.lt_intvl_min_rtts {
            return;
        }
        if self.lt_rtt_cnt > 4 * self.cfg.lt_intvl_min_rtts {
            self.reset_lt(delivered, lost);
            return;
        }
        // End the interval on a loss.
        if losses == 0 {
            return;
        }
        let lost_i = lost.saturating_sub(self.lt_last_lost);
        let delivered_i = delivered.saturating_sub(self.lt_last_delivered);
        if delivered_i == 0 || (lost_i << BBR_SCALE) < self.cfg.lt_loss_thresh as u64 * delivered_i {
            return;
        }
        let t = ((self.delivered_mstamp / USEC_PER_MSEC) as u32).wrapping_sub(self.lt_last_stamp);
        if (t as i32) < 1 {
            return;
        }
        if t >= u32::MAX / USEC_PER_MSEC as u32 {
            self.reset_lt(delivered, lost);
            return;
        }
        let t_us = t as u64 * USEC_PER_MSEC;
        let bw = delivered_i * BW_UNIT / t_us;
        self.lt_interval_done(sat_u32(bw), delivered, lost);
    }

    // ----- model update -----

    /// `bbr_update_bw`: round counting and the max filter.
    fn update_bw(&mut self, c: &ConnView, s: &Sample) {
        let valid = s.delivered >= 0 && s.interval_us > 0;
        if self.rounds.update(valid, s.prior_delivered, c.delivered) {
            self.rtt_cnt = self.rtt_cnt.wrapping_add(1);
            self.packet_conservation = false;
        }
        if !valid {
            return;
        }
        self.lt_bw_sampling(s.losses, s.is_app_limited, c.delivered, c.lost_total);
        let bw = sat_u32(s.delivered as u64 * BW_UNIT / s.interval_us as u64);
        // Application-limited samples only count if they raise the estimate.
        if !s.is_app_limited || bw >= self.max_bw_est() {
            self.bw.update(self.cfg.bw_rtts, self.rtt_cnt, bw);
        }
    }

    /// `bbr_update_ack_aggregation`: windows of `extra_acked_win_rtts`
    /// rounds.
    fn update_ack_aggregation(&mut self, w: &Window, s: &Sample) {
        if self.cfg.extra_acked_gain == 0 {
            return;
        }
        let bw = self.bbr_bw();
        self.agg.update(
            s,
            self.rounds.start,
            self.cfg.extra_acked_win_rtts,
            bw,
            self.delivered_mstamp,
            w.cwnd,
        );
    }

    /// `bbr_check_full_bw_reached`.
    fn check_full_bw_reached(&mut self, s: &Sample) {
        if self.full_bw_reached || !self.rounds.start || s.is_app_limited {
            return;
        }
        if self.full.grew(self.max_bw_est(), self.cfg.full_bw_thresh) {
            return;
        }
        self.full_bw_reached = self.full.plateau(self.cfg.full_bw_cnt);
    }

    /// `bbr_check_drain`.
    fn check_drain(&mut self, now: SimTime, w: &mut Window, c: &ConnView) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain;
            w.ssthresh = self.inflight(self.max_bw_est(), BBR_UNIT);
        }
        if self.mode == Mode::Drain
            && self.packets_in_net_at_edt(now, c, c.packets_in_flight) <= self.inflight(self.max_bw_est(), BBR_UNIT)
        {
            self.reset_probe_bw_mode();
        }
    }

    /// `bbr_check_probe_rtt_done`.
    fn check_probe_rtt_done(&mut self, now: SimTime, w: &mut Window) {
        let j = self.jiffies(now);
        if !self.probe_rtt.done(j) {
            return;
        }
        // Do not probe again for a full window.
        self.min_rtt.stamp = j;
        w.cwnd = w.cwnd.max(self.prior_cwnd);
        self.reset_mode();
    }

    /// `bbr_update_min_rtt`: the RTprop filter and PROBE_RTT.
    fn update_min_rtt(&mut self, now: SimTime, w: &mut Window, c: &ConnView, s: &Sample) {
        let j = self.jiffies(now);
        let win = self.cfg.min_rtt_win_sec.wrapping_mul(self.cfg.hz);
        let filter_expired = self.min_rtt.expired(j, win);
        self.min_rtt.update(s.rtt_us, j, filter_expired);

        if self.cfg.probe_rtt_mode_ms > 0 && filter_expired && !self.idle_restart && self.mode != Mode::ProbeRtt {
            self.mode = Mode::ProbeRtt;
            self.save_cwnd(w.cwnd);
            self.probe_rtt.done_stamp = None;
        }

        if self.mode == Mode::ProbeRtt {
            // Samples of packets sent now are app-limited (deviation 6).
            self.al.set(c.delivered, c.delivered + c.packets_in_flight as u64);
            // Hold the minimal flight for max(probe_rtt_mode_ms, one round).
            let hold = self.msecs_to_jiffies(self.cfg.probe_rtt_mode_ms);
            let window = self.cfg.cwnd_min_target;
            if self
                .probe_rtt
                .on_ack(j, hold, c.packets_in_flight, window, &mut self.rounds, c.delivered)
            {
                self.check_probe_rtt_done(now, w);
            }
        }
        // An idle restart ends with the first ACK that delivers data.
        if s.delivered > 0 {
            self.idle_restart = false;
        }
    }

    /// `bbr_update_gains`.
    fn update_gains(&mut self) {
        let probe_bw_pacing = if self.lt_use_bw {
            BBR_UNIT
        } else {
            PACING_GAIN_CYCLE[self.cycle_idx]
        };
        let (p, c) = mode_gains(
            self.mode,
            (self.cfg.high_gain, self.cfg.high_gain),
            self.cfg.drain_gain,
            (probe_bw_pacing, self.cfg.cwnd_gain),
        );
        self.pacing_gain = p;
        self.cwnd_gain = c;
    }

    /// `bbr_update_model`.
    fn update_model(&mut self, now: SimTime, w: &mut Window, c: &ConnView, s: &Sample) {
        self.update_bw(c, s);
        self.update_ack_aggregation(w, s);
        self.update_cycle_phase(now, c, s);
        self.check_full_bw_reached(s);
        self.check_drain(now, w, c);
        self.update_min_rtt(now, w, c, s);
        self.update_gains();
    }
}

impl CongestionControl for Bbr {
    fn name(&self) -> &'static str {
        "bbr"
    }

    /// `bbr_init`.
    fn init(&mut self, now: SimTime, w: &mut Window, c: &ConnView) {
        self.note(c);
        let j = self.jiffies(now);
        self.delivered_mstamp = us(now);
        self.rng = Rng(self.rng_seed);
        self.mode = Mode::Startup;
        self.prior_cwnd = 0;
        w.ssthresh = INFINITE_SSTHRESH;
        self.rtt_cnt = 0;
        self.rounds.restart(c.delivered);
        self.prev_ca_state = CaState::Open;
        self.packet_conservation = false;
        self.probe_rtt = ProbeRttHold::default();
        self.min_rtt = MinRtt::start(c.min_rtt, j);
        self.bw.reset(self.rtt_cnt, 0);
        self.pacing.has_seen_rtt = false;
        self.pacing_gain = 0;
        self.cwnd_gain = 0;
        let rule = self.pacing_rule();
        self.pacing.init_from_rtt(&rule, c.srtt, w.cwnd);
        self.rounds.start = false;
        self.idle_restart = false;
        self.full_bw_reached = false;
        self.full.reset();
        self.cycle_mstamp = 0;
        self.cycle_idx = 0;
        self.reset_lt(c.delivered, c.lost_total);
        self.agg = AckAggregation::default();
        self.agg.restart_epoch(us(now));
        self.al = AppLimitedMark::default();
        self.target_cwnd = None;
    }

    /// `bbr_ssthresh`: save the window for after recovery; ssthresh stays.
    fn ssthresh(&mut self, _now: SimTime, w: &Window, c: &ConnView) -> u32 {
        self.note(c);
        self.save_cwnd(w.cwnd);
        w.ssthresh
    }

    /// BBR sets the window in `cong_control`; never called.
    fn cong_avoid(&mut self, _now: SimTime, _w: &mut Window, _c: &ConnView, _acked: u32) {}

    /// `bbr_set_state`: a timeout ends a round, resets the full-pipe
    /// reference and counts as a loss for the policer test.
    fn set_state(&mut self, _now: SimTime, _w: &mut Window, c: &ConnView, new: CaState) {
        self.note(c);
        if new == CaState::Loss {
            self.prev_ca_state = CaState::Loss;
            self.full.bw = 0;
            self.rounds.start = true;
            self.lt_bw_sampling(1, false, c.delivered, c.lost_total);
        }
    }

    /// `bbr_cwnd_event`: restarting from idle while application-limited.
    fn cwnd_event(&mut self, now: SimTime, w: &mut Window, c: &ConnView, ev: CaEvent) {
        self.note(c);
        if ev != CaEvent::TxStart {
            return;
        }
        if c.packets_out == 0 {
            // tcp_rate_skb_sent restarts the delivery clock (deviation 5).
            self.delivered_mstamp = us(now);
        }
        if c.app_limited || self.al.active() {
            self.idle_restart = true;
            self.agg.restart_epoch(us(now));
            // Pace at the estimate: no need to hurry after idle.
            if self.mode == Mode::ProbeBw {
                let bw = self.bbr_bw();
                self.set_pacing_rate(c, w.cwnd, bw, BBR_UNIT);
            } else if self.mode == Mode::ProbeRtt {
                self.check_probe_rtt_done(now, w);
            }
        }
    }

    /// `bbr_undo_cwnd`: a spurious loss; restart full-pipe detection and
    /// long-term sampling, keep the window (deviation 9).
    fn undo_cwnd(&mut self, _now: SimTime, w: &Window, _prior_cwnd: u32) -> u32 {
        self.full.reset();
        self.reset_lt(self.last_delivered, self.last_lost);
        w.cwnd
    }

    /// `bbr_main`.
    fn cong_control(&mut self, now: SimTime, w: &mut Window, c: &ConnView, rs: &RateSample) -> bool {
        self.note(c);
        // What tcp_rate_gen does to state BBR reads (deviations 5, 6).
        if rs.acked_sacked > 0 {
            self.delivered_mstamp = us(now);
        }
        self.al.clear_if_passed(c.delivered);
        let s = self.linux_sample(now, rs, c);

        self.update_model(now, w, c, &s);
        let bw = self.bbr_bw();
        self.set_pacing_rate(c, w.cwnd, bw, self.pacing_gain);
        self.set_cwnd(w, c, &s, s.acked_sacked, bw, self.cwnd_gain);
        true
    }

    fn pacing_rate(&self) -> Option<BitRate> {
        self.pacing.bitrate()
    }

    /// Linux paces BBR's skbs at its own TSO goal.
    fn tso_segs(&self, _autosize: u32) -> u32 {
        self.tso_segs_goal()
    }

    fn mode(&self) -> &'static str {
        self.mode.label()
    }

    /// The BDP estimate, BtlBw · RTprop, segments.
    fn target_window(&self) -> Option<f64> {
        bdp_segments(self.bbr_bw(), self.min_rtt.us)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::cc::{registry, CcConfig};

    use crate::transport::cc::testkit::{at_ms as ms, ms as dur_ms, MSS};

    /// Linux's bandwidth unit for `pkts` segments per `per` (exact when
    /// `per` is a whole number of µs).
    fn bw_raw(pkts: u64, per: SimDuration) -> u32 {
        (pkts * BW_UNIT / per.as_micros()) as u32
    }

    /// A connection as the hooks see it: the framework's counters, driven by
    /// hand. Each `ack` call is one ACK processed in the framework's order.
    struct Conn {
        cc: Bbr,
        w: Window,
        now: SimTime,
        delivered: u64,
        lost: u64,
        in_flight: u32,
        state: CaState,
        srtt: Option<SimDuration>,
        last_send: Option<SimTime>,
        app_limited: bool,
        /// Segments per RTT that `steady` ACKs report as the delivery rate.
        rate_pkts: u64,
    }

    /// One ACK: what it delivered and the rate sample it produced.
    #[derive(Clone, Copy)]
    struct Ack {
        /// Segments newly delivered.
        acked: u32,
        /// Rate sample: segments delivered over `interval` (None = no sample).
        sample: Option<(u64, SimDuration)>,
        /// `delivered` when the sampled packet was sent.
        prior_delivered: u64,
        /// In flight before the ACK.
        prior_in_flight: u32,
        /// In flight after the ACK (before any transmission).
        in_flight: u32,
        rtt: Option<SimDuration>,
        losses: u32,
        app_limited: bool,
    }

    impl Conn {
        fn new(cfg: Config) -> Conn {
            let mut c = Conn {
                cc: Bbr::new(cfg),
                w: Window::new(10),
                now: SimTime::ZERO,
                delivered: 0,
                lost: 0,
                in_flight: 0,
                state: CaState::Open,
                srtt: None,
                last_send: None,
                app_limited: false,
                rate_pkts: 100,
            };
            let v = c.view();
            c.cc.init(SimTime::ZERO, &mut c.w, &v);
            c.in_flight = 10;
            c
        }
        fn view(&self) -> ConnView {
            ConnView {
                now: self.now,
                mss: MSS,
                packets_out: self.in_flight,
                packets_in_flight: self.in_flight,
                srtt: self.srtt,
                delivered: self.delivered,
                ca_state: self.state,
                app_limited: self.app_limited,
                lost_total: self.lost,
                last_send: self.last_send,
                ..ConnView::default()
            }
        }
        fn ack(&mut self, at: SimTime, a: Ack) {
            self.now = at;
            self.delivered += a.acked as u64;
            self.lost += a.losses as u64;
            self.in_flight = a.in_flight;
            if let Some(r) = a.rtt {
                self.srtt = Some(
                    self.srtt
                        .map_or(r, |s| SimDuration::from_nanos((7 * s.as_nanos() + r.as_nanos()) / 8)),
                );
            }
            let rs = RateSample {
                delivered: a.sample.map(|s| s.0),
                interval: a.sample.map_or(SimDuration::ZERO, |s| s.1),
                prior_delivered: if a.sample.is_some() || a.acked > 0 {
                    a.prior_delivered
                } else {
                    0
                },
                prior_time: SimTime::ZERO,
                prior_in_flight: a.prior_in_flight,
                acked_sacked: a.acked,
                losses: a.losses,
                rtt: a.rtt,
                is_app_limited: a.app_limited,
                is_retrans: false,
                ..RateSample::default()
            };
            let v = self.view();
            assert!(self.cc.cong_control(at, &mut self.w, &v, &rs));
        }
        /// A steady ACK: `acked` segments of a flight of `flight`, sent one
        /// flight ago; the rate sample is `rate_pkts` per `rtt`; the sender
        /// refills the flight afterwards.
        fn steady(&mut self, at: SimTime, acked: u32, flight: u32, rtt: SimDuration) {
            let prior = (self.delivered + acked as u64).saturating_sub(flight as u64);
            self.ack(
                at,
                Ack {
                    acked,
                    sample: Some((self.rate_pkts, rtt)),
                    prior_delivered: prior,
                    prior_in_flight: flight,
                    in_flight: flight - acked,
                    rtt: Some(rtt),
                    losses: 0,
                    app_limited: false,
                },
            );
            // The sender refills the flight.
            self.in_flight = flight;
        }
        /// One round as a single stretch ACK: the whole flight is
        /// delivered, the rate sample is `pkts` segments over `rtt`.
        fn round(&mut self, at: SimTime, pkts: u64, rtt: SimDuration, in_flight_after: u32) {
            let prior = self.delivered;
            self.ack(
                at,
                Ack {
                    acked: pkts as u32,
                    sample: Some((pkts, rtt)),
                    prior_delivered: prior,
                    prior_in_flight: self.in_flight,
                    in_flight: in_flight_after,
                    rtt: Some(rtt),
                    losses: 0,
                    app_limited: false,
                },
            );
        }
        fn set_state(&mut self, s: CaState) {
            self.state = s;
            let v = self.view();
            self.cc.set_state(self.now, &mut self.w, &v, s);
        }
    }

    /// Drives a connection through STARTUP at `bw` segments per `rtt` into
    /// PROBE_BW (the flight is kept at the BDP so DRAIN ends at once).
    fn in_probe_bw(cfg: Config, pkts_per_rtt: u64, rtt: SimDuration) -> (Conn, SimTime) {
        let mut c = Conn::new(cfg);
        let mut t = SimTime::ZERO;
        for _ in 0..6 {
            t += rtt;
            c.round(t, pkts_per_rtt, rtt, pkts_per_rtt as u32);
        }
        assert_eq!(c.cc.bbr_mode(), Mode::ProbeBw);
        (c, t)
    }

    // ----- configuration -----

    #[test]
    fn the_defaults_are_linux_constants() {
        let c = Config::default();
        assert_eq!((c.high_gain, c.drain_gain, c.cwnd_gain), (739, 88, 512));
        assert_eq!(
            (c.bw_rtts, c.min_rtt_win_sec, c.probe_rtt_mode_ms, c.cwnd_min_target),
            (10, 10, 200, 4)
        );
        assert_eq!(
            (c.full_bw_thresh, c.full_bw_cnt, c.cycle_rand, c.pacing_margin_percent),
            (320, 3, 7, 1)
        );
        assert_eq!(
            (
                c.lt_intvl_min_rtts,
                c.lt_loss_thresh,
                c.lt_bw_ratio,
                c.lt_bw_diff,
                c.lt_bw_max_rtts
            ),
            (4, 50, 32, 500, 48)
        );
        assert_eq!(
            (c.extra_acked_gain, c.extra_acked_win_rtts, c.extra_acked_max_us),
            (256, 5, 100_000)
        );
        assert_eq!(c.min_tso_rate, 1_200_000);
        assert_eq!(PACING_GAIN_CYCLE, [320, 192, 256, 256, 256, 256, 256, 256]);
        assert_eq!(c.validate(), Ok(()));
        // 2/ln 2 = 2.8854; Linux's fixed point gives 739/256 = 2.8867.
        assert!((c.high_gain as f64 / 256.0 - 2.0 / std::f64::consts::LN_2).abs() < 0.002);
    }

    #[test]
    fn validation_names_the_bad_parameter() {
        let bad = |f: fn(&mut Config), name: &str| {
            let mut c = Config::default();
            f(&mut c);
            let e = c.validate().unwrap_err();
            assert!(e.contains(name), "{e}");
        };
        bad(|c| c.hz = 1200, "hz");
        bad(|c| c.bw_rtts = 0, "bw_rtts");
        bad(|c| c.min_rtt_win_sec = 0, "min_rtt_win_sec");
        bad(|c| c.cwnd_min_target = 0, "cwnd_min_target");
        bad(|c| c.high_gain = 1024, "high_gain");
        bad(|c| c.drain_gain = 0, "drain_gain");
        bad(|c| c.cwnd_gain = 0, "cwnd_gain");
        bad(|c| c.pacing_margin_percent = 100, "pacing_margin_percent");
        bad(|c| c.cycle_rand = 0, "cycle_rand");
        bad(|c| c.cycle_rand = 9, "cycle_rand");
        bad(|c| c.full_bw_cnt = 4, "full_bw_cnt");
        bad(|c| c.lt_intvl_min_rtts = 32, "lt_intvl_min_rtts");
        bad(|c| c.lt_bw_max_rtts = 128, "lt_bw_max_rtts");
        bad(|c| c.extra_acked_win_rtts = 32, "extra_acked_win_rtts");
        let ok = Config {
            probe_rtt_mode_ms: 0,
            extra_acked_gain: 0,
            ..Config::default()
        };
        assert_eq!(ok.validate(), Ok(()));
    }

    #[test]
    fn the_registry_builds_bbr_from_a_parameter_table_and_rejects_unknown_keys() {
        let cc = registry::build("bbr", &serde_json::json!({"seed": 7, "cwnd_gain": 640})).unwrap();
        assert_eq!(cc.name(), "bbr");
        assert!(registry::build("bbr", &serde_json::json!({"high_gian": 700})).is_err());
        let e = registry::build("bbr", &serde_json::json!({"full_bw_cnt": 5}))
            .err()
            .unwrap();
        assert!(e.contains("full_bw_cnt"), "{e}");
        let resolved = registry::resolve("bbr", &serde_json::Value::Null).unwrap();
        assert_eq!(resolved["high_gain"], 739);
        assert_eq!(resolved["seed"], 0);
    }

    // ----- the windowed max filter -----

    // ----- STARTUP -----

    #[test]
    fn init_paces_the_initial_window_at_high_gain_over_a_nominal_millisecond() {
        let c = Conn::new(Config::default());
        assert_eq!(c.cc.bbr_mode(), Mode::Startup);
        assert_eq!(c.cc.mode(), "startup");
        assert_eq!(c.w.ssthresh, INFINITE_SSTHRESH);
        // bw = 10·2²⁴/1000; rate = bw·1448·739/256·990000/2²⁴ bytes/s.
        let bw = 10 * BW_UNIT / 1000;
        let expect = (((bw * 1448 * 739) >> 8) * 990_000) >> 24;
        assert_eq!(c.cc.pacing_rate_bytes(), Some(expect));
        assert_eq!(c.cc.pacing_rate().unwrap().bps(), expect * 8);
        assert_eq!(c.cc.min_rtt(), None);
    }

    #[test]
    fn startup_paces_at_2_89_times_the_bandwidth_and_grows_the_window_by_each_ack() {
        let mut c = Conn::new(Config::default());
        let rtt = dur_ms(40);
        c.rate_pkts = 10;
        // First ACK: the pacing rate is re-derived from the first srtt.
        c.steady(ms(40), 1, 10, rtt);
        assert_eq!(c.cc.pacing_gain_raw(), 739);
        assert_eq!(c.cc.cwnd_gain_raw(), 739);
        assert_eq!(c.w.cwnd, 11, "the window grows by the segment acknowledged");
        let mut cwnd = c.w.cwnd;
        let mut t = ms(40);
        // Each round doubles the delivery rate: 10, 20, 40, 80 per RTT.
        for k in 1..=4u64 {
            t += rtt;
            let pkts = 10 << k;
            c.round(t, pkts, rtt, 0);
            let bw = bw_raw(pkts, rtt);
            assert_eq!(c.cc.max_bw_raw(), bw);
            let expect = (((bw as u64 * 1448 * 739) >> 8) * 990_000) >> 24;
            assert_eq!(c.cc.pacing_rate_bytes(), Some(expect), "round {k}");
            // Below target the window grows by everything acknowledged.
            assert_eq!(c.w.cwnd, cwnd + pkts as u32);
            cwnd = c.w.cwnd;
            assert_eq!(c.cc.bbr_mode(), Mode::Startup);
            assert!(!c.cc.full_bw_reached());
        }
        assert!((c.cc.pacing_gain() - 2.8867).abs() < 1e-4);
    }

    #[test]
    fn startup_pacing_never_falls_when_the_estimate_does() {
        let mut c = Conn::new(Config::default());
        let rtt = dur_ms(40);
        c.round(ms(40), 40, rtt, 0);
        let high = c.cc.pacing_rate_bytes().unwrap();
        // A later, lower estimate (the old one expired) leaves the rate alone.
        c.cc.bw.reset(c.cc.rtt_cnt, 1);
        c.round(ms(80), 1, rtt, 0);
        assert_eq!(c.cc.pacing_rate_bytes(), Some(high));
    }

    #[test]
    fn the_pipe_is_full_after_three_rounds_growing_less_than_25_percent() {
        let mut c = Conn::new(Config::default());
        let rtt = dur_ms(40);
        let mut t = SimTime::ZERO;
        let mut round = |c: &mut Conn, pkts: u64| {
            t += rtt;
            // Keep a big flight so that DRAIN does not end at once.
            c.round(t, pkts, rtt, 1000);
        };
        round(&mut c, 100); // reference 100
        round(&mut c, 124); // +24 %: not growth, 1
        assert_eq!(c.cc.full.cnt, 1);
        round(&mut c, 126); // 1.26 × 100: growth, reference = 126
        assert_eq!((c.cc.full.cnt, c.cc.full.bw), (0, bw_raw(126, rtt)));
        round(&mut c, 130);
        round(&mut c, 140);
        assert!(!c.cc.full_bw_reached());
        assert_eq!(c.cc.bbr_mode(), Mode::Startup);
        round(&mut c, 150); // 150 < 1.25·126 = 157.5: third round
        assert!(c.cc.full_bw_reached());
        assert_eq!(c.cc.bbr_mode(), Mode::Drain);
        assert_eq!(c.cc.mode(), "drain");
    }

    #[test]
    fn application_limited_rounds_do_not_count_toward_a_full_pipe() {
        let mut c = Conn::new(Config::default());
        let rtt = dur_ms(40);
        c.round(ms(40), 100, rtt, 1000);
        for k in 2..=6 {
            let prior = c.delivered;
            c.ack(
                ms(40 * k),
                Ack {
                    acked: 100,
                    sample: Some((100, rtt)),
                    prior_delivered: prior,
                    prior_in_flight: 1000,
                    in_flight: 1000,
                    rtt: Some(rtt),
                    losses: 0,
                    app_limited: true,
                },
            );
        }
        assert!(!c.cc.full_bw_reached());
        assert_eq!(c.cc.full.cnt, 0);
        assert_eq!(c.cc.round_count(), 6);
    }

    // ----- DRAIN -----

    #[test]
    fn drain_paces_at_the_inverse_gain_until_in_flight_falls_to_the_bdp() {
        let mut c = Conn::new(Config::default());
        let rtt = dur_ms(40);
        let mut t = SimTime::ZERO;
        for _ in 0..4 {
            t += rtt;
            c.round(t, 100, rtt, 600);
        }
        assert_eq!(c.cc.bbr_mode(), Mode::Drain);
        // BDP = 100 segments. The one-BDP in-flight target adds 3 TSO goals.
        // On entering DRAIN the pacing rate was STARTUP's (2.89 × 2500
        // segments/s = 10.1 kB per ms: goal 6), so ssthresh = 100 + 18; at
        // DRAIN's own rate the goal is the minimum 2: 100 + 6.
        assert_eq!(c.w.ssthresh, 118, "entering DRAIN sets ssthresh as Linux does");
        let target = c.cc.inflight(c.cc.max_bw_raw(), BBR_UNIT);
        assert_eq!(target, 106);
        assert_eq!(c.cc.pacing_gain_raw(), 88);
        assert_eq!(c.cc.cwnd_gain_raw(), 739);
        // In flight falls as the queue drains; DRAIN holds until ≤ 106.
        for (i, flight) in [400u32, 200, 108].into_iter().enumerate() {
            c.steady(t + dur_ms(i as u64 + 1), 1, flight, rtt);
            assert_eq!(c.cc.bbr_mode(), Mode::Drain, "in flight {} after the ACK", flight - 1);
        }
        c.steady(t + dur_ms(10), 1, 107, rtt); // 106 after the ACK
        assert_eq!(c.cc.bbr_mode(), Mode::ProbeBw);
        assert_ne!(c.cc.cycle_index(), 1, "never starts in the 3/4 phase");
        assert_eq!(c.cc.cwnd_gain_raw(), 512);
    }

    // ----- PROBE_BW -----

    #[test]
    fn the_gain_cycle_is_five_quarters_three_quarters_then_six_phases_at_one() {
        let rtt = dur_ms(40);
        let (mut c, mut t) = in_probe_bw(
            Config {
                seed: 3,
                ..Config::default()
            },
            100,
            rtt,
        );
        let mut seen = Vec::new();
        // Walk two full cycles: each phase ends after one min RTT of
        // delivery time; the 5/4 phase also needs in flight ≥ 5/4 BDP.
        for _ in 0..16 {
            seen.push((c.cc.cycle_index(), c.cc.pacing_gain_raw()));
            let idx = c.cc.cycle_index();
            let flight = if idx == 0 { 140 } else { 100 };
            t += rtt + dur_ms(1);
            c.steady(t, 1, flight, rtt);
            assert_eq!(c.cc.cycle_index(), (idx + 1) % 8);
        }
        for (idx, gain) in &seen {
            assert_eq!(*gain, PACING_GAIN_CYCLE[*idx]);
        }
        let gains: Vec<u32> = seen.iter().map(|p| p.1).collect();
        let start = seen.iter().position(|p| p.0 == 0).unwrap();
        assert_eq!(&gains[start..start + 8], &[320, 192, 256, 256, 256, 256, 256, 256]);
    }

    #[test]
    fn the_probing_phase_waits_for_in_flight_to_reach_five_quarters_of_the_bdp() {
        let rtt = dur_ms(40);
        let (mut c, mut t) = in_probe_bw(Config::default(), 100, rtt);
        // Move to phase 0.
        while c.cc.cycle_index() != 0 {
            t += rtt + dur_ms(1);
            c.steady(t, 1, 100, rtt);
        }
        // 5/4 of BDP 100 is 125; at 1.25 × 2500 segments/s the TSO goal is
        // 3, so the budget is 9, rounded to even, plus 2 in this phase: 136.
        // In flight at the next departure counts the departing TSO burst.
        let need = c.cc.inflight(c.cc.max_bw_raw(), 320);
        let goal = c.cc.tso_segs_goal();
        assert_eq!((need, goal), (136, 3));
        t += rtt + dur_ms(1);
        c.steady(t, 1, need - goal - 1, rtt);
        assert_eq!(c.cc.cycle_index(), 0, "time is up but in flight is short");
        t += dur_ms(1);
        c.steady(t, 1, need - goal, rtt);
        assert_eq!(c.cc.cycle_index(), 1);
        assert_eq!(c.cc.pacing_gain_raw(), 192);
    }

    #[test]
    fn the_draining_phase_ends_early_once_in_flight_is_down_to_the_bdp() {
        let rtt = dur_ms(40);
        let (mut c, mut t) = in_probe_bw(Config::default(), 100, rtt);
        while c.cc.cycle_index() != 1 {
            t += rtt + dur_ms(1);
            let flight = if c.cc.cycle_index() == 0 { 140 } else { 100 };
            c.steady(t, 1, flight, rtt);
        }
        let phase_start = t;
        c.steady(phase_start + dur_ms(2), 1, 130, rtt);
        assert_eq!(c.cc.cycle_index(), 1);
        c.steady(phase_start + dur_ms(3), 1, 106, rtt);
        assert_eq!(c.cc.cycle_index(), 2, "well before one min RTT");
    }

    #[test]
    fn the_start_phase_is_random_but_reproducible_from_the_seed() {
        let rtt = dur_ms(40);
        // The phase on entering PROBE_BW (the fourth round here).
        let start = |seed| {
            let mut c = Conn::new(Config {
                seed,
                ..Config::default()
            });
            let mut t = SimTime::ZERO;
            while c.cc.bbr_mode() != Mode::ProbeBw {
                t += rtt;
                c.round(t, 100, rtt, 100);
            }
            c.cc.cycle_index()
        };
        let phases: Vec<usize> = (0..40).map(start).collect();
        assert_eq!(phases, (0..40).map(start).collect::<Vec<_>>());
        let mut distinct = phases.clone();
        distinct.sort();
        distinct.dedup();
        // Seven possible start phases: 0 and 2..=7, never 1.
        assert_eq!(distinct, vec![0, 2, 3, 4, 5, 6, 7]);
    }

    #[test]
    fn in_probe_bw_the_window_snaps_to_twice_the_bdp_plus_budget() {
        let rtt = dur_ms(40);
        let (mut c, mut t) = in_probe_bw(
            Config {
                extra_acked_gain: 0,
                ..Config::default()
            },
            100,
            rtt,
        );
        while c.cc.cycle_index() == 0 {
            t += rtt + dur_ms(1);
            c.steady(t, 1, 140, rtt);
        }
        c.w.cwnd = 500;
        t += dur_ms(1);
        c.steady(t, 1, 100, rtt);
        // 2·100 + aggregation allowance (0 here) + 6, even.
        assert_eq!(c.cc.extra_acked(), 0);
        assert_eq!(c.w.cwnd, 206);
        // BtlBw·RTprop in segments (the fixed-point bandwidth truncates).
        assert!((c.cc.target_window().unwrap() - 100.0).abs() < 0.01);
    }

    // ----- PROBE_RTT -----

    #[test]
    fn probe_rtt_starts_after_ten_seconds_without_a_new_minimum_and_holds_four_packets_for_200_ms() {
        let rtt = dur_ms(40);
        let (mut c, mut t) = in_probe_bw(Config::default(), 100, rtt);
        let stamp_ms = 40; // min RTT taken on the first ACK at 40 ms
        let longer = dur_ms(45);
        // Keep ACKing with a longer RTT until 10 s after the stamp.
        while t < ms(stamp_ms + 10_000) {
            t += dur_ms(10);
            c.steady(t, 1, 100, longer);
            assert_eq!(c.cc.bbr_mode(), Mode::ProbeBw, "at {t:?}");
        }
        let cwnd_before = c.w.cwnd;
        // At exactly 10 s the window has not expired (after() is strict).
        assert_eq!(t, ms(stamp_ms + 10_000));
        t += dur_ms(1);
        c.steady(t, 1, 100, longer);
        assert_eq!(c.cc.bbr_mode(), Mode::ProbeRtt);
        assert_eq!(c.cc.mode(), "probe_rtt");
        assert_eq!(c.w.cwnd, 4);
        assert_eq!(c.cc.prior_cwnd(), cwnd_before);
        assert_eq!((c.cc.pacing_gain_raw(), c.cc.cwnd_gain_raw()), (256, 256));
        // The expired filter takes the next sample as the new minimum.
        assert_eq!(c.cc.min_rtt(), Some(longer));
        // The flight drains; the 200 ms clock starts once it is ≤ 4.
        t += dur_ms(5);
        c.steady(t, 1, 50, longer);
        assert!(c.cc.probe_rtt.done_stamp.is_none());
        t += dur_ms(5);
        c.steady(t, 1, 5, longer); // 4 after the ACK
        let began = t;
        assert!(c.cc.probe_rtt.done_stamp.is_some());
        // A round passes, but 200 ms have not.
        let mut k = 0;
        while t < began + dur_ms(200) {
            t += dur_ms(20);
            k += 1;
            c.steady(t, 1, 4, longer);
            assert_eq!(c.cc.bbr_mode(), Mode::ProbeRtt, "ACK {k}");
            assert!(c.w.cwnd <= 4);
        }
        assert!(c.cc.probe_rtt.round_done);
        t += dur_ms(1);
        c.steady(t, 1, 4, longer);
        assert_eq!(c.cc.bbr_mode(), Mode::ProbeBw);
        // The saved window comes back, then this ACK's ramp applies.
        assert_eq!(c.w.cwnd, (cwnd_before + 1).min(c.cc.target_cwnd().unwrap()));
    }

    #[test]
    fn probe_rtt_waits_for_a_round_even_after_200_ms() {
        let rtt = dur_ms(40);
        let (mut c, mut t) = in_probe_bw(Config::default(), 100, rtt);
        t = t.max(ms(10_100));
        c.steady(t, 1, 4, dur_ms(45));
        assert_eq!(c.cc.bbr_mode(), Mode::ProbeRtt);
        assert!(c.cc.probe_rtt.done_stamp.is_some());
        // ACKs of packets sent before PROBE_RTT began do not end a round.
        let prior = c.cc.rounds.next_rtt_delivered - 1;
        for i in 1..=30 {
            c.ack(
                t + dur_ms(10 * i),
                Ack {
                    acked: 1,
                    sample: Some((100, rtt)),
                    prior_delivered: prior,
                    prior_in_flight: 4,
                    in_flight: 4,
                    rtt: Some(dur_ms(45)),
                    losses: 0,
                    app_limited: false,
                },
            );
        }
        assert_eq!(c.cc.bbr_mode(), Mode::ProbeRtt, "300 ms but no round");
        c.steady(t + dur_ms(310), 1, 4, dur_ms(45));
        assert_eq!(c.cc.bbr_mode(), Mode::ProbeBw);
    }

    #[test]
    fn a_new_minimum_rtt_postpones_probe_rtt() {
        let rtt = dur_ms(40);
        let (mut c, mut t) = in_probe_bw(Config::default(), 100, rtt);
        while t < ms(8_000) {
            t += dur_ms(10);
            c.steady(t, 1, 100, dur_ms(45));
        }
        c.steady(t + dur_ms(1), 1, 100, dur_ms(39));
        t += dur_ms(1);
        while t < ms(17_000) {
            t += dur_ms(10);
            c.steady(t, 1, 100, dur_ms(45));
            assert_eq!(c.cc.bbr_mode(), Mode::ProbeBw);
        }
        assert_eq!(c.cc.min_rtt(), Some(dur_ms(39)));
    }

    #[test]
    fn samples_of_packets_sent_during_probe_rtt_are_application_limited() {
        let rtt = dur_ms(40);
        let (mut c, t) = in_probe_bw(Config::default(), 100, rtt);
        let t = t.max(ms(10_100));
        c.steady(t, 1, 100, dur_ms(45));
        assert_eq!(c.cc.bbr_mode(), Mode::ProbeRtt);
        let set_at = c.delivered;
        // A low-rate sample of a packet sent after PROBE_RTT began is
        // flagged and kept out of the filter (it is below the max).
        let max = c.cc.max_bw_raw();
        let r = RateSample {
            delivered: Some(4),
            interval: rtt,
            prior_delivered: set_at,
            acked_sacked: 1,
            prior_in_flight: 4,
            rtt: Some(dur_ms(45)),
            ..RateSample::default()
        };
        let v = c.view();
        assert!(c.cc.linux_sample(t, &r, &v).is_app_limited);
        // One sent before is not.
        let r_old = RateSample {
            prior_delivered: set_at - 1,
            ..r
        };
        assert!(!c.cc.linux_sample(t, &r_old, &v).is_app_limited);
        c.delivered += 1;
        let v = c.view();
        assert!(c.cc.cong_control(t + dur_ms(1), &mut c.w, &v, &r));
        assert_eq!(c.cc.max_bw_raw(), max);
    }

    // ----- loss -----

    #[test]
    fn recovery_conserves_packets_for_one_round_then_restores_the_saved_window() {
        let rtt = dur_ms(40);
        let (mut c, mut t) = in_probe_bw(
            Config {
                extra_acked_gain: 0,
                ..Config::default()
            },
            100,
            rtt,
        );
        while c.cc.cycle_index() == 0 {
            t += rtt + dur_ms(1);
            c.steady(t, 1, 140, rtt);
        }
        c.w.cwnd = 300;
        t += dur_ms(1);
        c.steady(t, 1, 100, rtt);
        assert_eq!(c.w.cwnd, 206);
        // Loss detected: the framework asks for ssthresh (saving cwnd), then
        // enters Recovery.
        let v = c.view();
        let ss = c.cc.ssthresh(t, &c.w, &v);
        assert_eq!(ss, c.w.ssthresh, "BBR leaves ssthresh alone");
        assert_eq!(c.cc.prior_cwnd(), 206);
        c.set_state(CaState::Recovery);
        // First recovery ACK: 2 delivered (SACKed), 3 marked lost.
        t += dur_ms(1);
        let prior = c.delivered;
        c.ack(
            t,
            Ack {
                acked: 2,
                sample: Some((100, rtt)),
                prior_delivered: prior - 98,
                prior_in_flight: 100,
                in_flight: 95,
                rtt: Some(rtt),
                losses: 3,
                app_limited: false,
            },
        );
        assert!(c.cc.packet_conservation());
        assert_eq!(c.w.cwnd, 95 + 2, "cwnd = in flight + acked");
        // During the first round: never below in flight + acked.
        t += dur_ms(1);
        let prior = c.delivered - 90;
        c.ack(
            t,
            Ack {
                acked: 1,
                sample: Some((100, rtt)),
                prior_delivered: prior,
                prior_in_flight: 97,
                in_flight: 96,
                rtt: Some(rtt),
                losses: 1,
                app_limited: false,
            },
        );
        assert_eq!(c.w.cwnd, 97, "one lost deducted, then max(96, 96 + 1)");
        // A round later conservation ends and the window ramps by acked.
        t += rtt;
        c.in_flight = 97;
        let next = c.cc.rounds.next_rtt_delivered;
        c.ack(
            t,
            Ack {
                acked: 2,
                sample: Some((100, rtt)),
                prior_delivered: next,
                prior_in_flight: 97,
                in_flight: 95,
                rtt: Some(rtt),
                losses: 0,
                app_limited: false,
            },
        );
        assert!(!c.cc.packet_conservation());
        assert_eq!(c.w.cwnd, 99, "ramp: +acked toward the target");
        // Recovery ends: the saved window returns.
        c.state = CaState::Open;
        t += dur_ms(1);
        c.steady(t, 1, 95, rtt);
        assert_eq!(c.w.cwnd, 206);
    }

    #[test]
    fn losses_outside_recovery_are_deducted_from_the_window() {
        let rtt = dur_ms(40);
        let (mut c, t) = in_probe_bw(Config::default(), 100, rtt);
        c.w.cwnd = 150;
        let prior = c.delivered;
        c.ack(
            t + dur_ms(1),
            Ack {
                acked: 1,
                sample: Some((100, rtt)),
                prior_delivered: prior - 99,
                prior_in_flight: 100,
                in_flight: 95,
                rtt: Some(rtt),
                losses: 4,
                app_limited: false,
            },
        );
        assert_eq!(c.w.cwnd, 150 - 4 + 1);
    }

    #[test]
    fn a_timeout_ends_a_round_resets_the_full_pipe_reference_and_restores_after() {
        let rtt = dur_ms(40);
        let (mut c, t) = in_probe_bw(Config::default(), 100, rtt);
        let v = c.view();
        c.cc.ssthresh(t, &c.w, &v);
        let saved = c.cc.prior_cwnd();
        c.w.cwnd = 1; // the framework's tcp_enter_loss: in flight + 1
        c.in_flight = 0;
        c.set_state(CaState::Loss);
        assert_eq!(c.cc.full.bw, 0);
        assert!(c.cc.lt_is_sampling, "the timeout starts long-term sampling");
        // In Loss the window ramps by acked toward the target.
        let prior = c.delivered;
        c.ack(
            t + dur_ms(300),
            Ack {
                acked: 1,
                sample: Some((1, rtt)),
                prior_delivered: prior,
                prior_in_flight: 1,
                in_flight: 0,
                rtt: Some(rtt),
                losses: 0,
                app_limited: false,
            },
        );
        assert_eq!(c.w.cwnd, 4, "1 + 1, but never below cwnd_min_target");
        c.state = CaState::Open;
        c.steady(t + dur_ms(340), 1, 2, rtt);
        assert_eq!(c.w.cwnd, (saved + 1).min(c.cc.target_cwnd().unwrap()));
    }

    #[test]
    fn two_lossy_intervals_at_the_same_rate_switch_to_the_policed_rate() {
        let rtt = dur_ms(40);
        let (mut c, mut t) = in_probe_bw(Config::default(), 100, rtt);
        // A policer: 50 segments per RTT get through, 13 more are dropped.
        let mut lossy_round = |c: &mut Conn, loss: bool| {
            t += rtt;
            let prior = c.delivered;
            c.ack(
                t,
                Ack {
                    acked: 50,
                    sample: Some((50, rtt)),
                    prior_delivered: prior,
                    prior_in_flight: 60,
                    in_flight: 10,
                    rtt: Some(rtt),
                    losses: if loss { 13 } else { 0 },
                    app_limited: false,
                },
            );
        };
        lossy_round(&mut c, true); // the first loss starts sampling
        assert!(c.cc.lt_is_sampling);
        for _ in 0..2 {
            lossy_round(&mut c, true);
        }
        assert!(c.cc.lt_bw().is_none());
        // Fourth round of the interval, a loss, 39 lost of 150 (26 %).
        lossy_round(&mut c, true);
        assert_eq!(c.cc.lt_bw_raw_for_test(), bw_raw(50, rtt));
        assert!(!c.cc.lt_use_bw());
        for _ in 0..3 {
            lossy_round(&mut c, true);
        }
        assert!(!c.cc.lt_use_bw());
        lossy_round(&mut c, true);
        assert!(c.cc.lt_use_bw(), "policed");
        assert_eq!(c.cc.pacing_gain_raw(), 256);
        assert_eq!(c.cc.btl_bw(), c.cc.lt_bw().unwrap());
        // 48 rounds of PROBE_BW later BBR probes again.
        for _ in 0..48 {
            lossy_round(&mut c, false);
        }
        assert!(!c.cc.lt_use_bw());
        assert_eq!(c.cc.bbr_mode(), Mode::ProbeBw);
    }

    // ----- ACK aggregation -----

    #[test]
    fn aggregated_acks_raise_the_window_target_once_the_pipe_is_full() {
        let rtt = dur_ms(40);
        let (mut c, mut t) = in_probe_bw(Config::default(), 100, rtt);
        while c.cc.cycle_index() == 0 {
            t += rtt + dur_ms(1);
            c.steady(t, 1, 140, rtt);
        }
        // Forget the stretch ACKs used to get here.
        c.cc.agg.extra_acked = [0; 2];
        c.cc.agg.epoch_acked = 0;
        c.w.cwnd = 300;
        t += dur_ms(1);
        c.steady(t, 1, 100, rtt);
        // A lone ACK after a gap restarts the epoch: 1 extra segment.
        assert_eq!(c.cc.extra_acked(), 1);
        assert_eq!(c.w.cwnd, 208, "2·100 + 1 + 6, rounded to even");
        let burst = |c: &mut Conn, at: SimTime, n: u32| {
            let prior = c.delivered + n as u64 - 100;
            c.ack(
                at,
                Ack {
                    acked: n,
                    sample: Some((100, rtt)),
                    prior_delivered: prior,
                    prior_in_flight: 100,
                    in_flight: 100 - n,
                    rtt: Some(rtt),
                    losses: 0,
                    app_limited: false,
                },
            );
            c.in_flight = 100;
        };
        // 30 segments ACKed at once after 4 ms of silence: more than the
        // 10 expected restarts the epoch here with 30 extra.
        t += dur_ms(4);
        burst(&mut c, t, 30);
        assert_eq!(c.cc.extra_acked(), 30);
        assert_eq!(c.cc.target_cwnd(), Some(236));
        assert_eq!(c.w.cwnd, 236);
        // 10 more 1 ms later, when ⌊2.5⌋ = 2 were expected: 40 − 2.
        t += dur_ms(1);
        burst(&mut c, t, 10);
        assert_eq!(c.cc.extra_acked(), 38);
    }

    // ----- idle restart -----

    #[test]
    fn restarting_from_idle_while_app_limited_paces_at_the_estimate_in_probe_bw() {
        let rtt = dur_ms(40);
        let (mut c, t) = in_probe_bw(Config::default(), 100, rtt);
        c.in_flight = 0;
        c.app_limited = true;
        c.cc.pacing_gain = 320;
        let v = c.view();
        c.cc.cwnd_event(t + dur_ms(500), &mut c.w, &v, CaEvent::TxStart);
        assert!(c.cc.idle_restart);
        let bw = c.cc.bw_raw();
        assert_eq!(
            c.cc.pacing_rate_bytes(),
            Some(c.cc.pacing_rule().bytes_per_sec(bw, BBR_UNIT))
        );
        // The first ACK that delivers data ends the restart.
        c.steady(t + dur_ms(540), 1, 2, rtt);
        assert!(!c.cc.idle_restart);
    }

    #[test]
    fn no_probe_rtt_while_restarting_from_idle() {
        let rtt = dur_ms(40);
        let (mut c, _) = in_probe_bw(Config::default(), 100, rtt);
        c.in_flight = 0;
        c.app_limited = true;
        let v = c.view();
        c.cc.cwnd_event(ms(12_000), &mut c.w, &v, CaEvent::TxStart);
        // An ACK without delivered data after the filter expired.
        c.ack(
            ms(12_001),
            Ack {
                acked: 0,
                sample: None,
                prior_delivered: 0,
                prior_in_flight: 1,
                in_flight: 1,
                rtt: None,
                losses: 0,
                app_limited: true,
            },
        );
        assert_eq!(c.cc.bbr_mode(), Mode::ProbeBw);
    }

    // ----- end to end -----

    fn world_run(cfg: crate::scenario::ScenarioConfig) -> crate::metrics::Recorder {
        crate::scenario::World::new(cfg, None)
            .expect("valid scenario")
            .run()
            .recorder
    }

    /// The 20 Mbit/s, 40 ms RTT, 100-packet drop-tail dumbbell of
    /// `tests/common`, through the scenario front end.
    fn dumbbell(cc: &str, secs: f64) -> crate::scenario::ScenarioConfig {
        let json = serde_json::json!({
            "name": "dumbbell",
            "seed": 1,
            "duration_s": secs,
            "topology": "wired",
            "internet": {"rate_mbps": 20.0, "delay_ms": 20.0, "buffer_packets": 100},
            "flows": [{"id": "f0", "cc": cc}],
        });
        crate::scenario::ScenarioConfig::resolve(&json.to_string()).expect("valid scenario")
    }

    #[test]
    fn on_a_20_mbit_dumbbell_bbr_fills_the_link_with_a_short_queue_and_visits_every_mode() {
        let rec = world_run(dumbbell("bbr", 25.0));
        let (mut bytes, mut bins) = (0u64, 0u64);
        for i in 0..rec.flow_tput.len() {
            if rec.flow_tput.t[i] >= 2.0 {
                bytes += rec.flow_tput.bytes[i];
                bins += 1;
            }
        }
        let goodput = bytes as f64 * 8.0 / (bins as f64 * 0.1) / 1e6;
        let mut rtts: Vec<f64> = (0..rec.rtt.len())
            .filter(|&i| rec.rtt.t[i] >= 2.0)
            .map(|i| rec.rtt.rtt_ms[i])
            .collect();
        rtts.sort_by(f64::total_cmp);
        let median = rtts[rtts.len() / 2];
        // Payload share of a 20 Mbit/s link is 19.31 Mbit/s.
        assert!(goodput > 17.5 && goodput < 19.31, "goodput {goodput}");
        assert!(median > 40.0 && median < 60.0, "median RTT {median} ms");
        let names: Vec<&str> = rec.cwnd.mode.iter().map(|&m| rec.mode_names[m as usize]).collect();
        for m in ["startup", "drain", "probe_bw", "probe_rtt"] {
            assert!(names.contains(&m), "never in {m}");
        }
    }
}
