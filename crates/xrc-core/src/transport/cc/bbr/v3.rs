//! BBR version 3, as Google's Linux module runs it (the `BBR_VERSION 3`
//! `net/ipv4/tcp_bbr.c` of the google/bbr repository).
//!
//! # Sources
//!
//! * Google's BBRv3 `net/ipv4/tcp_bbr.c`, blob at commit `001a430b3ddb` of
//!   the `google/bbr` repository (the v3 module: `bbr_main(sk, rs)`,
//!   `BTF_SET8`, ECN/PLB support, `skb_marked_lost` hook,
//!   `bbr_run_loss_probe_recovery`), and the matching `net/ipv4/tcp_rate.c`
//!   (commit `0b496e28b986`: `tcp_set_tx_in_flight` snapshots packets in
//!   flight at transmit time into the skb and `tcp_rate_skb_delivered`
//!   copies it into the rate sample). The per-sample loss count (`rs.lost`
//!   = `tp->lost` now minus `tp->lost` when the sampled packet was sent) is
//!   from the same series' patch "count packets lost over TCP rate sampling
//!   interval"; the tail-loss-probe signals from its patches "record
//!   app-limited status of TLP-repaired flight" (`tlp_orig_data_app_limited`),
//!   "inform CC module of losses repaired by TLP probe"
//!   (`CA_EVENT_TLP_RECOVERY`, raised in `tcp_process_tlp_ack` before the
//!   window reduction) and "introduce is_acking_tlp_retrans_seq into
//!   rate_sample" (an ACK matching the probe's retransmission, which may be
//!   for the original or the probe).
//! * draft-ietf-ccwg-bbr (BBR v3 specification) for the names and intent
//!   (inflight_hi / inflight_lo, bw_hi / bw_lo, PROBE_BW DOWN / CRUISE /
//!   REFILL / UP). Where the draft and Google's code differ in detail, the
//!   code wins.
//! * The v1 module [`super::v1`] documents the clocks, fixed-point scales and
//!   the EDT / `delivered_mstamp` / `app_limited` emulations both versions
//!   take from the family's shared parts.
//!
//! # Per-packet records
//!
//! v3 reads, for the sampled packet of each ACK and for each packet marked
//! lost, what the kernel snapshot in its skb at transmission
//! (`tcp_skb_cb.tx`): packets in flight with it (`tx.in_flight`), `tp->lost`
//! (`tx.lost`) and whether the connection was application-limited
//! (`tx.is_app_limited`). The framework hands these over exactly: BBRv3's
//! [`CongestionControl::on_packet_sent`] returns that record for every
//! transmission (a retransmission or probe replaces it, as
//! `tcp_rate_skb_sent` overwrites `tx`), the rate sample carries the
//! sampled packet's record (`rs.tx_in_flight`, `rs.lost`), and
//! [`CongestionControl::on_packet_lost`] is `bbr_skb_marked_lost`, called
//! once per marking right after it is counted in `tp->lost`. A repaired
//! tail loss arrives through [`CongestionControl::on_tlp_recovery`] with the
//! probed segment's record from before the probe, and the ACK at the
//! probe's sequence as `rs.is_acking_tlp_retrans_seq`.
//!
//! # The model
//!
//! ```text
//!   max_bw    = max(bw_hi[0], bw_hi[1])           two PROBE_BW cycles of max delivery rate
//!   bw        = min(max_bw, bw_lo)                 bw_lo: short-term bound after loss
//!   min_rtt   = min RTT over 10 s; PROBE_RTT when no new min for 5 s (probe_rtt_min)
//!   pacing    = pacing_gain · bw · (1 − 1 %)
//!   cwnd     → cwnd_gain · bw · min_rtt + extra_acked, ≥ max(3·tso_goal, 4) [+2 in UP]
//!   cwnd     ≤ inflight_hi (probing) or inflight_hi − 15 % headroom (cruise, PROBE_RTT);
//!   cwnd     ≤ inflight_lo (short-term bound after loss)
//! ```
//!
//! ```text
//!          init
//!           │
//!           ▼
//!   ┌──► STARTUP ── bw plateau (3 rounds < 25 %) or ≥ 6 loss events with > 2 % loss in a recovery round
//!   │       ▼
//!   │     DRAIN ─── in flight ≤ BDP ──► PROBE_BW:
//!   │                                    DOWN (0.91) ─► CRUISE (1.0) ─► REFILL (1.0) ─► UP (1.25) ─┐
//!   │                                     ▲  in flight ≤ min(BDP,      after 2–3 s, or   one round   │
//!   │                                     │  inflight_hi − headroom)   min(63, BDP) rounds           │
//!   │                                     └──────── loss > 2 % of tx_in_flight, bw plateau, ────────┘
//!   │                                               or in flight reached inflight_hi
//!   └──── PROBE_RTT (cwnd ≤ max(4, BDP/2) for ≥ 200 ms and a round) → CRUISE, or STARTUP
//! ```
//!
//! The loss response: a loss outside bandwidth probing cuts `bw_lo` and
//! `inflight_lo` by β = 30 % once per round (not below the latest round's
//! delivery rate and volume). While probing (STARTUP, REFILL, UP), a
//! sample or a lost packet whose losses since its transmission exceed 2 % of
//! the data in flight at its transmission (`tx_in_flight`) sets
//! `inflight_hi` to that in-flight level (or 70 % of the target, if higher)
//! and ends the probe. Without such losses `inflight_hi` grows in UP by an
//! amount that doubles every round while the window is the limit.
//!
//! Fixed-point scales are those of v1 (bandwidth in segments/µs × 2²⁴, gains
//! in 1/256). v3 gains: STARTUP pacing `256·277/100 + 1` = 710 (2.773 ≈
//! 4 ln 2), STARTUP and PROBE_BW cwnd 512 (2.0, plus 64 = 0.25 in UP), DRAIN
//! 88, PROBE_BW pacing UP 320, DOWN `256·91/100` = 232 (0.906), CRUISE and
//! REFILL 256; β = `256·30/100` = 76, loss threshold `256·2/100` = 5 (1.95 %),
//! headroom `256·15/100` = 38 (14.8 %), PROBE_RTT cwnd gain 128.
//!
//! # Randomness
//!
//! `bbr_pick_probe_wait` draws 0..2 rounds and 0..1 s. The draws come from a
//! SplitMix64 stream whose state is the flow's named stream of the master
//! seed XORed with [`Config::seed`], as in v1 (Lemire's unbiased reduction).
//!
//! # Deviations from Google's BBRv3
//!
//! 1. Clocks, sentinels, EDT, `delivered_mstamp`, `tp->app_limited` in
//!    PROBE_RTT, `is_ack_delayed`, rejected-interval `delivered`, u64
//!    counters and saturating narrow fields: as in v1 (its deviations 1, 2,
//!    4–8). BBR's own write of `tp->app_limited` in PROBE_RTT is kept as
//!    v1's mark, and the mark is part of each packet's record
//!    (`tx.is_app_limited` = the framework's flag or the mark at
//!    transmission).
//! 2. ECN and PLB are absent from the framework, so every ECN/PLB branch of
//!    v3 is inert, exactly as in Linux without ECN negotiation
//!    (`bbr_can_use_ecn` false, PLB off): `ecn_eligible` stays 0,
//!    `rs.delivered_ce = 0`.
//! 3. `tp->is_cwnd_limited` is read from [`ConnView::is_cwnd_limited`], which
//!    adds Linux's slow-start clause of `tcp_is_cwnd_limited` when cwnd <
//!    ssthresh (after DRAIN, ssthresh is the DRAIN-time BDP target).
//! 4. TSO: the burst goal is v3's `bbr_tso_segs_generic` with
//!    `GSO_LEGACY_MAX_SIZE`, `sk_pacing_shift` = 10 and
//!    `sysctl_tcp_min_tso_segs` = 2; segments are still sent one per packet,
//!    so `pcount` is always 1 (`bbr_inflight_hi_from_lost_skb`) and the
//!    kernel's adjustments of `tx.in_flight` when an skb is split or merged
//!    never apply.
//! 5. `mode()` reports the PROBE_BW phase: `"probe_bw_down"`,
//!    `"probe_bw_cruise"`, `"probe_bw_refill"`, `"probe_bw_up"` (Linux's
//!    `tcp_info.bbr_phase`); the others are `"startup"`, `"drain"`,
//!    `"probe_rtt"`.
//! 6. Parameters are per-connection [`Config`] fields with v3's values as
//!    defaults (Google's module compiles them in).
//! 7. The body of the "introduce is_acking_tlp_retrans_seq" patch was not
//!    available to us (only its message and v3's use of the flag); the
//!    framework sets the flag where the message puts it: on an ACK exactly
//!    at the outstanding probe retransmission's sequence that is neither a
//!    D-SACK of the probe nor a pure duplicate ACK (`tcp_process_tlp_ack`'s
//!    remaining case).
//!
//! Framework differences that matter for v3 are listed in
//! `docs/algorithms/bbr3.md`. The sender sets `cwnd = ssthresh` when fast
//! recovery ends. v3 has no cwnd restore on recovery exit (only on Loss exit), so
//! every recovery ends with cwnd at the DRAIN-time BDP target; Linux
//! skips that step for `cong_control` algorithms.

use serde::{Deserialize, Serialize};

use super::common::{
    bdp, bdp_segments, check_hz, check_range, cwnd_toward_target, edt_burst, jiffies, mode_gains, msecs_to_jiffies,
    packets_in_net_at_edt, raw_bytes_per_sec, sat_u32, saved_cwnd, tso_segs, us, AckAggregation, AppLimitedMark,
    FullBw, MinRtt, Pacing, PacingRule, ProbeRttHold, Rng, Rounds, Sample, GSO_LEGACY_MAX_SIZE, PACING_SHIFT,
    USEC_PER_SEC,
};
pub use super::common::{Mode, BBR_SCALE, BBR_UNIT, BW_SCALE, BW_UNIT};
use crate::transport::cc::{
    CaEvent, CaState, CongestionControl, ConnView, LostPacket, PacketRecord, RateSample, SentPacket, Window,
    INFINITE_SSTHRESH,
};
use crate::units::{BitRate, SimDuration, SimTime};

/// Linux's `~0U` for "no bound yet" (`inflight_hi`, `inflight_lo`, `bw_lo`).
pub const UNSET: u32 = u32::MAX;

/// `sysctl_tcp_min_tso_segs` default.
const MIN_TSO_SEGS: u32 = 2;
/// `TCPCB_IN_FLIGHT_MAX`: `tx.in_flight` is a 20-bit field.
const IN_FLIGHT_MAX: u32 = (1 << 20) - 1;

/// PROBE_BW phases (`enum bbr_pacing_gain_phase`, the `cycle_idx`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Phase {
    /// Push in flight up to probe for bandwidth (pacing 1.25).
    #[default]
    Up,
    /// Drain the queue the probe built (pacing 0.91).
    Down,
    /// Use the pipe with headroom (pacing 1.0).
    Cruise,
    /// Refill the pipe before probing (pacing 1.0).
    Refill,
}

impl Phase {
    fn index(self) -> usize {
        match self {
            Phase::Up => 0,
            Phase::Down => 1,
            Phase::Cruise => 2,
            Phase::Refill => 3,
        }
    }
}

/// What the incoming ACKs say about probing (`enum bbr_ack_phase`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum AckPhase {
    #[default]
    Init,
    Refilling,
    ProbeStarting,
    ProbeFeedback,
    ProbeStopping,
}

/// BBRv3's parameters; the defaults are Google's compiled-in values. Gains
/// and fractions are in 1/256.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Mixed into the connection's random stream (probe wait), which comes
    /// from the master seed. Not in Linux.
    pub seed: u64,
    /// `CONFIG_HZ`: 100, 250, 300 or 1000.
    pub hz: u32,
    pub min_rtt_win_sec: u32,
    pub probe_rtt_mode_ms: u32,
    /// PROBE_RTT is due when no lower RTT was seen for this long.
    pub probe_rtt_win_ms: u32,
    /// PROBE_RTT window as a fraction of BDP.
    pub probe_rtt_cwnd_gain: u32,
    /// Halve the RTT-based TSO allowance per 2^this µs of min RTT (0 = off).
    pub tso_rtt_shift: u32,
    pub pacing_margin_percent: u32,
    pub startup_pacing_gain: u32,
    pub startup_cwnd_gain: u32,
    pub drain_gain: u32,
    pub cwnd_gain: u32,
    /// PROBE_BW pacing gains for UP, DOWN, CRUISE, REFILL.
    pub pacing_gains: [u32; 4],
    pub cwnd_min_target: u32,
    pub full_bw_thresh: u32,
    pub full_bw_cnt: u32,
    pub extra_acked_gain: u32,
    pub extra_acked_win_rtts: u32,
    pub extra_acked_max_us: u32,
    /// Multiplicative cut of `bw_lo`/`inflight_lo` on loss (β).
    pub beta: u32,
    /// Loss rate (of `tx_in_flight`) that means in flight is too high.
    pub loss_thresh: u32,
    /// Loss-marking events in a STARTUP recovery round that end STARTUP.
    pub full_loss_cnt: u32,
    /// Headroom left below `inflight_hi` when cruising.
    pub inflight_headroom: u32,
    /// Extra cwnd gain in UP, in units of 1/4.
    pub bw_probe_cwnd_gain: u32,
    /// Reno-coexistence bound on rounds between probes.
    pub bw_probe_max_rounds: u32,
    pub bw_probe_rand_rounds: u32,
    /// Wall-clock wait between probes: base + random(rand), µs.
    pub bw_probe_base_us: u32,
    pub bw_probe_rand_us: u32,
    /// Skip the model update on uneventful app-limited ACKs
    /// (`bbr_fast_path`).
    pub fast_path: bool,
    /// Respond to a loss repaired by a tail loss probe
    /// (`bbr_loss_probe_recovery`).
    pub loss_probe_recovery: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            seed: 0,
            hz: 1000,
            min_rtt_win_sec: 10,
            probe_rtt_mode_ms: 200,
            probe_rtt_win_ms: 5000,
            probe_rtt_cwnd_gain: BBR_UNIT / 2,
            tso_rtt_shift: 9,
            pacing_margin_percent: 1,
            startup_pacing_gain: BBR_UNIT * 277 / 100 + 1,
            startup_cwnd_gain: BBR_UNIT * 2,
            drain_gain: BBR_UNIT * 1000 / 2885,
            cwnd_gain: BBR_UNIT * 2,
            pacing_gains: [BBR_UNIT * 5 / 4, BBR_UNIT * 91 / 100, BBR_UNIT, BBR_UNIT],
            cwnd_min_target: 4,
            full_bw_thresh: BBR_UNIT * 5 / 4,
            full_bw_cnt: 3,
            extra_acked_gain: BBR_UNIT,
            extra_acked_win_rtts: 5,
            extra_acked_max_us: 100 * 1000,
            beta: BBR_UNIT * 30 / 100,
            loss_thresh: BBR_UNIT * 2 / 100,
            full_loss_cnt: 6,
            inflight_headroom: BBR_UNIT * 15 / 100,
            bw_probe_cwnd_gain: 1,
            bw_probe_max_rounds: 63,
            bw_probe_rand_rounds: 2,
            bw_probe_base_us: 2 * USEC_PER_SEC as u32,
            bw_probe_rand_us: USEC_PER_SEC as u32,
            fast_path: true,
            loss_probe_recovery: true,
        }
    }
}

impl crate::transport::cc::CcConfig for Config {
    fn build(self, stream: u64) -> Box<dyn crate::transport::cc::CongestionControl> {
        Box::new(Bbr3::seeded(self, stream))
    }

    fn validate(&self) -> Result<(), String> {
        check_hz(self.hz)?;
        let range = check_range;
        range("min_rtt_win_sec", self.min_rtt_win_sec as u64, 1, 2_000_000)?;
        range("probe_rtt_mode_ms", self.probe_rtt_mode_ms as u64, 0, 2_000_000_000)?;
        // Linux requires probe_rtt_win_ms ≤ min_rtt_win_sec · 1000.
        range(
            "probe_rtt_win_ms",
            self.probe_rtt_win_ms as u64,
            1,
            self.min_rtt_win_sec as u64 * 1000,
        )?;
        range("probe_rtt_cwnd_gain", self.probe_rtt_cwnd_gain as u64, 0, 1 << 16)?;
        range("tso_rtt_shift", self.tso_rtt_shift as u64, 0, 31)?;
        range("pacing_margin_percent", self.pacing_margin_percent as u64, 0, 99)?;
        // 10-bit gain fields in Linux.
        range("startup_pacing_gain", self.startup_pacing_gain as u64, 1, 1023)?;
        range("startup_cwnd_gain", self.startup_cwnd_gain as u64, 1, 1023)?;
        range("drain_gain", self.drain_gain as u64, 1, 1023)?;
        range("cwnd_gain", self.cwnd_gain as u64, 1, 1023 - 3 * BBR_UNIT as u64 / 4)?;
        for (i, g) in self.pacing_gains.iter().enumerate() {
            range(&format!("pacing_gains[{i}]"), *g as u64, 1, 1023)?;
        }
        range("cwnd_min_target", self.cwnd_min_target as u64, 1, 1 << 20)?;
        range("full_bw_thresh", self.full_bw_thresh as u64, 1, 1 << 16)?;
        range("full_bw_cnt", self.full_bw_cnt as u64, 1, 3)?;
        range("extra_acked_gain", self.extra_acked_gain as u64, 0, 1 << 16)?;
        range("extra_acked_win_rtts", self.extra_acked_win_rtts as u64, 1, 31)?;
        range("beta", self.beta as u64, 0, BBR_UNIT as u64)?;
        // loss_thresh is 8 bits in Linux (the divisor 256 − loss_thresh > 0).
        range("loss_thresh", self.loss_thresh as u64, 0, BBR_UNIT as u64 - 1)?;
        range("full_loss_cnt", self.full_loss_cnt as u64, 0, 15)?;
        range("inflight_headroom", self.inflight_headroom as u64, 0, BBR_UNIT as u64)?;
        range("bw_probe_cwnd_gain", self.bw_probe_cwnd_gain as u64, 0, 3)?;
        // rounds_since_probe is an 8-bit counter.
        range("bw_probe_max_rounds", self.bw_probe_max_rounds as u64, 1, 255)?;
        range("bw_probe_rand_rounds", self.bw_probe_rand_rounds as u64, 1, 255)?;
        range("bw_probe_rand_us", self.bw_probe_rand_us as u64, 1, u32::MAX as u64)?;
        Ok(())
    }
}

/// BBRv3 for one connection (Google's `struct bbr` plus the framework
/// values it needs).
#[derive(Clone, Debug)]
pub struct Bbr3 {
    cfg: Config,
    /// The master seed's draw for this flow (`bbr_init` restarts from it).
    stream: u64,
    rng: Rng,
    mode: Mode,
    cycle_idx: Phase,
    ack_phase: AckPhase,
    /// The min RTT (`min_rtt_us`, `min_rtt_stamp`): adopts
    /// `probe_rtt_min` when that is lower or after `min_rtt_win_sec`.
    min_rtt: MinRtt,
    /// PROBE_RTT's hold (`probe_rtt_done_stamp`, `probe_rtt_round_done`).
    probe_rtt: ProbeRttHold,
    /// The min-RTT filter over `probe_rtt_win_ms` (`probe_rtt_min_us`,
    /// `probe_rtt_min_stamp`).
    probe_rtt_min: MinRtt,
    /// Round counting (`next_rtt_delivered`, `round_start`).
    rounds: Rounds,
    cycle_mstamp: u64,
    prev_ca_state: CaState,
    bw_probe_up_rounds: u32,
    try_fast_path: bool,
    idle_restart: bool,
    init_cwnd: u32,
    pacing_gain: u32,
    cwnd_gain: u32,
    full_bw_reached: bool,
    prior_cwnd: u32,
    /// The full-pipe test's reference bandwidth and count (`full_bw`,
    /// `full_bw_cnt`).
    full: FullBw,
    /// ACK-aggregation estimate (`extra_acked`).
    agg: AckAggregation,
    full_bw_now: bool,
    loss_in_cycle: bool,
    loss_round_delivered: u64,
    undo_bw_lo: u32,
    undo_inflight_lo: u32,
    undo_inflight_hi: u32,
    bw_latest: u32,
    bw_lo: u32,
    bw_hi: [u32; 2],
    inflight_latest: u32,
    inflight_lo: u32,
    inflight_hi: u32,
    bw_probe_up_cnt: u32,
    bw_probe_up_acks: u32,
    probe_wait_us: u32,
    bw_probe_samples: bool,
    prev_probe_too_high: bool,
    stopped_risky_probe: bool,
    rounds_since_probe: u32,
    loss_round_start: bool,
    loss_in_round: bool,
    loss_events_in_round: u32,
    initialized: bool,
    /// The bandwidth sample of the ACK being processed (`ctx->sample_bw`).
    sample_bw: u32,

    // ----- framework values and emulations -----
    pacing: Pacing,
    mss: u32,
    delivered_mstamp: u64,
    al: AppLimitedMark,
    target_cwnd: Option<u32>,
}

impl Bbr3 {
    pub fn new(cfg: Config) -> Self {
        Self::seeded(cfg, 0)
    }

    /// A connection whose random stream starts at `stream ^ cfg.seed`
    /// (`stream`: a draw from the flow's named stream of the master seed).
    pub fn seeded(cfg: Config, stream: u64) -> Self {
        let rng = Rng(stream ^ cfg.seed);
        Bbr3 {
            cfg,
            stream,
            rng,
            mode: Mode::Startup,
            cycle_idx: Phase::Up,
            ack_phase: AckPhase::Init,
            min_rtt: MinRtt::default(),
            probe_rtt: ProbeRttHold::default(),
            probe_rtt_min: MinRtt::default(),
            rounds: Rounds::default(),
            cycle_mstamp: 0,
            prev_ca_state: CaState::Open,
            bw_probe_up_rounds: 0,
            try_fast_path: false,
            idle_restart: false,
            init_cwnd: 10,
            pacing_gain: 0,
            cwnd_gain: 0,
            full_bw_reached: false,
            prior_cwnd: 0,
            full: FullBw::default(),
            agg: AckAggregation::default(),
            full_bw_now: false,
            loss_in_cycle: false,
            loss_round_delivered: 0,
            undo_bw_lo: 0,
            undo_inflight_lo: 0,
            undo_inflight_hi: 0,
            bw_latest: 0,
            bw_lo: UNSET,
            bw_hi: [0; 2],
            inflight_latest: 0,
            inflight_lo: UNSET,
            inflight_hi: UNSET,
            bw_probe_up_cnt: UNSET,
            bw_probe_up_acks: 0,
            probe_wait_us: 0,
            bw_probe_samples: false,
            prev_probe_too_high: false,
            stopped_risky_probe: false,
            rounds_since_probe: 0,
            loss_round_start: false,
            loss_in_round: false,
            loss_events_in_round: 0,
            initialized: false,
            sample_bw: 0,
            pacing: Pacing::default(),
            mss: 1448,
            delivered_mstamp: 0,
            al: AppLimitedMark::default(),
            target_cwnd: None,
        }
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    // ----- observers -----

    pub fn bbr_mode(&self) -> Mode {
        self.mode
    }
    /// The PROBE_BW phase (meaningful in PROBE_BW).
    pub fn phase(&self) -> Phase {
        self.cycle_idx
    }
    pub fn ack_phase(&self) -> AckPhase {
        self.ack_phase
    }
    /// `bbr_bw` = min(max_bw, bw_lo), Linux's unit.
    pub fn bw_raw(&self) -> u32 {
        self.bbr_bw()
    }
    /// `bbr_max_bw` = `max(bw_hi[0], bw_hi[1])`, Linux's unit.
    pub fn max_bw_raw(&self) -> u32 {
        self.max_bw()
    }
    /// The bandwidth estimate as a payload bit rate.
    pub fn btl_bw(&self) -> BitRate {
        self.raw_to_bitrate(self.bbr_bw())
    }
    /// The short-term lower bound on bandwidth, if set.
    pub fn bw_lo(&self) -> Option<BitRate> {
        (self.bw_lo != UNSET).then(|| self.raw_to_bitrate(self.bw_lo))
    }
    /// The long-term upper bound on in-flight data, segments, if set.
    pub fn inflight_hi(&self) -> Option<u32> {
        (self.inflight_hi != UNSET).then_some(self.inflight_hi)
    }
    /// The short-term lower bound on in-flight data, segments, if set.
    pub fn inflight_lo(&self) -> Option<u32> {
        (self.inflight_lo != UNSET).then_some(self.inflight_lo)
    }
    pub fn min_rtt(&self) -> Option<SimDuration> {
        self.min_rtt.get()
    }
    pub fn pacing_gain(&self) -> f64 {
        self.pacing_gain as f64 / BBR_UNIT as f64
    }
    pub fn cwnd_gain(&self) -> f64 {
        self.cwnd_gain as f64 / BBR_UNIT as f64
    }
    pub fn pacing_gain_raw(&self) -> u32 {
        self.pacing_gain
    }
    pub fn cwnd_gain_raw(&self) -> u32 {
        self.cwnd_gain
    }
    pub fn full_bw_reached(&self) -> bool {
        self.full_bw_reached
    }
    pub fn extra_acked(&self) -> u32 {
        self.agg.max()
    }
    /// Wall-clock wait before the next bandwidth probe, from the phase start.
    pub fn probe_wait(&self) -> SimDuration {
        SimDuration::from_micros(self.probe_wait_us as u64)
    }
    pub fn rounds_since_probe(&self) -> u32 {
        self.rounds_since_probe
    }
    pub fn target_cwnd(&self) -> Option<u32> {
        self.target_cwnd
    }
    pub fn pacing_rate_bytes(&self) -> Option<u64> {
        self.pacing.rate
    }

    fn raw_to_bitrate(&self, bw: u32) -> BitRate {
        BitRate::from_bps(raw_bytes_per_sec(bw, self.mss).max(1).saturating_mul(8))
    }

    // ----- clocks (v1 deviation 1) -----

    fn jiffies(&self, t: SimTime) -> u32 {
        jiffies(t, self.cfg.hz)
    }
    fn msecs_to_jiffies(&self, ms: u32) -> u32 {
        msecs_to_jiffies(ms, self.cfg.hz)
    }

    fn note(&mut self, c: &ConnView) {
        if c.mss > 0 {
            self.mss = c.mss;
        }
    }

    /// The rate sample in Linux's terms, with v3's fields from the sampled
    /// packet's record (Google's `tcp_rate.c`: `tx_in_flight`, and `lost` =
    /// `tp->lost` − `tx.lost`; zero when no packet was sampled).
    fn linux_sample(&self, now: SimTime, rs: &RateSample, c: &ConnView) -> Sample {
        let mut s = Sample::from_rate(now, rs, c);
        if let Some(r) = rs.record {
            s.tx_in_flight = r.in_flight;
            s.lost = sat_u32(c.lost_total.saturating_sub(r.lost));
            s.is_app_limited |= r.app_limited;
        }
        s.is_acking_tlp_retrans_seq = rs.is_acking_tlp_retrans_seq;
        s
    }

    // ----- estimates -----

    fn max_bw(&self) -> u32 {
        self.bw_hi[0].max(self.bw_hi[1])
    }
    fn bbr_bw(&self) -> u32 {
        self.max_bw().min(self.bw_lo)
    }
    /// v3's `bbr_bw_to_pacing_rate`: through its `bbr_rate_bytes_per_sec`,
    /// floored at 1 byte/s; STARTUP at 4 ln 2.
    fn pacing_rule(&self) -> PacingRule {
        PacingRule {
            mss: self.mss,
            margin_percent: self.cfg.pacing_margin_percent,
            floor: 1,
            startup_gain: self.cfg.startup_pacing_gain,
        }
    }

    /// `bbr_set_pacing_rate`.
    fn set_pacing_rate(&mut self, c: &ConnView, cwnd: u32, bw: u32, gain: u32) {
        let rule = self.pacing_rule();
        self.pacing.set(&rule, c.srtt, cwnd, bw, gain, self.full_bw_reached);
    }

    /// `bbr_tso_segs_goal` via `bbr_tso_segs_generic` (deviation 4).
    fn tso_segs_goal(&self) -> u32 {
        let mut bytes = self.pacing.rate.unwrap_or(0) >> PACING_SHIFT;
        if self.cfg.tso_rtt_shift != 0 {
            let r = self.min_rtt.us >> self.cfg.tso_rtt_shift;
            if r < 32 {
                bytes += GSO_LEGACY_MAX_SIZE >> r;
            }
        }
        tso_segs(bytes, self.mss, MIN_TSO_SEGS)
    }

    fn save_cwnd(&mut self, cwnd: u32) {
        self.prior_cwnd = saved_cwnd(self.prior_cwnd, cwnd, self.prev_ca_state, self.mode == Mode::ProbeRtt);
    }

    fn bdp(&self, bw: u32, gain: u32) -> u32 {
        bdp(bw, self.min_rtt.us, gain).unwrap_or(self.init_cwnd)
    }

    /// v3's budget: at least 3 TSO bursts and the minimum window, +2 in UP.
    fn quantization_budget(&self, cwnd: u32) -> u32 {
        let tso = 3 * self.tso_segs_goal();
        let mut cwnd = cwnd.max(tso).max(self.cfg.cwnd_min_target);
        if self.mode == Mode::ProbeBw && self.cycle_idx == Phase::Up {
            cwnd = cwnd.saturating_add(2);
        }
        cwnd
    }

    fn inflight(&self, bw: u32, gain: u32) -> u32 {
        self.quantization_budget(self.bdp(bw, gain))
    }

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

    /// v3 adds the aggregation allowance in every mode.
    fn ack_aggregation_cwnd(&self) -> u32 {
        if self.cfg.extra_acked_gain == 0 {
            return 0;
        }
        self.agg
            .cwnd(self.cfg.extra_acked_gain, self.cfg.extra_acked_max_us, self.bbr_bw())
    }

    fn probe_rtt_cwnd(&self) -> u32 {
        self.cfg
            .cwnd_min_target
            .max(self.bdp(self.bbr_bw(), self.cfg.probe_rtt_cwnd_gain))
    }

    /// `bbr_set_cwnd` (v3: no packet conservation).
    fn set_cwnd(&mut self, w: &mut Window, acked: u32, bw: u32, gain: u32) {
        let mut cwnd = w.cwnd;
        if acked != 0 {
            let mut target = self.bdp(bw, gain);
            target = target.saturating_add(self.ack_aggregation_cwnd());
            target = self.quantization_budget(target);
            self.target_cwnd = Some(target);
            // Before the pipe is full v3 grows while below twice the
            // initial window (v1: while fewer than 10 were delivered).
            let early = cwnd < 2 * self.init_cwnd;
            (cwnd, self.try_fast_path) = cwnd_toward_target(
                cwnd,
                acked,
                target,
                self.full_bw_reached,
                early,
                self.cfg.cwnd_min_target,
            );
        }
        w.cwnd = cwnd.min(w.cwnd_clamp);
        if self.mode == Mode::ProbeRtt {
            w.cwnd = w.cwnd.min(self.probe_rtt_cwnd());
        }
    }

    // ----- rounds and samples -----

    /// `bbr_update_round_start`: v3 counts a round on any sample with a
    /// valid interval (v1 also requires a valid `delivered`).
    fn update_round_start(&mut self, c: &ConnView, s: &Sample) {
        self.rounds.update(s.interval_us > 0, s.prior_delivered, c.delivered);
    }

    /// `bbr_calculate_bw_sample`: rounded up.
    fn calculate_bw_sample(&mut self, s: &Sample) {
        self.sample_bw = 0;
        if s.interval_us > 0 && s.delivered >= 0 {
            let bw = (s.delivered as u64 * BW_UNIT).div_ceil(s.interval_us as u64);
            self.sample_bw = sat_u32(bw);
        }
    }

    /// `bbr_update_ack_aggregation`; in STARTUP the window is one round.
    fn update_ack_aggregation(&mut self, w: &Window, s: &Sample) {
        if self.cfg.extra_acked_gain == 0 {
            return;
        }
        let win_rtts = if self.full_bw_reached {
            self.cfg.extra_acked_win_rtts
        } else {
            1
        };
        let bw = self.bbr_bw();
        self.agg
            .update(s, self.rounds.start, win_rtts, bw, self.delivered_mstamp, w.cwnd);
    }

    // ----- PROBE_RTT and min RTT -----

    fn check_probe_rtt_done(&mut self, now: SimTime, w: &mut Window, c: &ConnView) {
        let j = self.jiffies(now);
        if !self.probe_rtt.done(j) {
            return;
        }
        self.probe_rtt_min.stamp = j;
        w.cwnd = w.cwnd.max(self.prior_cwnd);
        self.exit_probe_rtt(now, c);
    }

    fn exit_probe_rtt(&mut self, now: SimTime, c: &ConnView) {
        self.reset_lower_bounds();
        if self.full_bw_reached {
            self.mode = Mode::ProbeBw;
            // Reschedule the next probe, then cruise: in flight is below BDP.
            self.start_bw_probe_down(now, c);
            self.start_bw_probe_cruise();
        } else {
            self.mode = Mode::Startup;
        }
    }

    fn update_min_rtt(&mut self, now: SimTime, w: &mut Window, c: &ConnView, s: &Sample) {
        let j = self.jiffies(now);
        let probe_rtt_expired = self
            .probe_rtt_min
            .expired(j, self.msecs_to_jiffies(self.cfg.probe_rtt_win_ms));
        self.probe_rtt_min.update(s.rtt_us, j, probe_rtt_expired);
        let min_rtt_expired = self
            .min_rtt
            .expired(j, self.cfg.min_rtt_win_sec.wrapping_mul(self.cfg.hz));
        if self.probe_rtt_min.us <= self.min_rtt.us || min_rtt_expired {
            self.min_rtt = self.probe_rtt_min;
        }

        if self.cfg.probe_rtt_mode_ms > 0 && probe_rtt_expired && !self.idle_restart && self.mode != Mode::ProbeRtt {
            self.mode = Mode::ProbeRtt;
            self.save_cwnd(w.cwnd);
            self.probe_rtt.done_stamp = None;
            self.ack_phase = AckPhase::ProbeStopping;
            self.rounds.restart(c.delivered);
        }

        if self.mode == Mode::ProbeRtt {
            self.al.set(c.delivered, c.delivered + c.packets_in_flight as u64);
            let hold = self.msecs_to_jiffies(self.cfg.probe_rtt_mode_ms);
            // v3's PROBE_RTT window is a fraction of the BDP (v1: 4 packets).
            let window = self.probe_rtt_cwnd();
            if self
                .probe_rtt
                .on_ack(j, hold, c.packets_in_flight, window, &mut self.rounds, c.delivered)
            {
                self.check_probe_rtt_done(now, w, c);
            }
        }
        if s.delivered > 0 {
            self.idle_restart = false;
        }
    }

    fn update_gains(&mut self) {
        // PROBE_BW: the phase's pacing gain; UP adds to the cwnd gain.
        let mut probe_bw_cwnd = self.cfg.cwnd_gain;
        if self.cfg.bw_probe_cwnd_gain != 0 && self.cycle_idx == Phase::Up {
            probe_bw_cwnd += BBR_UNIT * self.cfg.bw_probe_cwnd_gain / 4;
        }
        let (p, cw) = mode_gains(
            self.mode,
            (self.cfg.startup_pacing_gain, self.cfg.startup_cwnd_gain),
            self.cfg.drain_gain,
            (self.cfg.pacing_gains[self.cycle_idx.index()], probe_bw_cwnd),
        );
        self.pacing_gain = p;
        self.cwnd_gain = cw;
    }

    // ----- bandwidth filter and bounds -----

    fn take_max_bw_sample(&mut self, bw: u32) {
        self.bw_hi[1] = self.bw_hi[1].max(bw);
    }

    fn advance_max_bw_filter(&mut self) {
        if self.bw_hi[1] == 0 {
            return;
        }
        self.bw_hi[0] = self.bw_hi[1];
        self.bw_hi[1] = 0;
    }

    fn reset_full_bw(&mut self) {
        self.full.reset();
        self.full_bw_now = false;
    }

    fn target_inflight(&self, w: &Window) -> u32 {
        self.inflight(self.bbr_bw(), BBR_UNIT).min(w.cwnd)
    }

    fn is_probing_bandwidth(&self) -> bool {
        self.mode == Mode::Startup
            || (self.mode == Mode::ProbeBw && matches!(self.cycle_idx, Phase::Refill | Phase::Up))
    }

    fn has_elapsed_in_phase(&self, now: SimTime, interval_us: u32) -> bool {
        us(now) as i64 - (self.cycle_mstamp + interval_us as u64) as i64 > 0
    }

    fn handle_queue_too_high_in_startup(&mut self) {
        self.full_bw_reached = true;
        let bdp = self.inflight(self.max_bw(), BBR_UNIT);
        self.inflight_hi = bdp.max(self.inflight_latest);
    }

    fn raise_inflight_hi_slope(&mut self, w: &Window) {
        let growth_this_round = 1u32 << self.bw_probe_up_rounds;
        self.bw_probe_up_rounds = (self.bw_probe_up_rounds + 1).min(30);
        self.bw_probe_up_cnt = (w.cwnd / growth_this_round).max(1);
    }

    fn probe_inflight_hi_upward(&mut self, w: &Window, c: &ConnView, s: &Sample) {
        if !c.is_cwnd_limited || w.cwnd < self.inflight_hi {
            return;
        }
        self.bw_probe_up_acks = self.bw_probe_up_acks.saturating_add(s.acked_sacked);
        if self.bw_probe_up_acks >= self.bw_probe_up_cnt {
            let delta = self.bw_probe_up_acks / self.bw_probe_up_cnt;
            self.bw_probe_up_acks -= delta * self.bw_probe_up_cnt;
            self.inflight_hi = self.inflight_hi.saturating_add(delta);
            self.try_fast_path = false;
        }
        if self.rounds.start {
            self.raise_inflight_hi_slope(w);
        }
    }

    /// `bbr_is_inflight_too_high`: losses since transmission above
    /// `loss_thresh` of what was in flight then (the ECN test is inert).
    fn is_inflight_too_high(&self, s: &Sample) -> bool {
        if s.lost > 0 && s.tx_in_flight > 0 {
            let thresh = (s.tx_in_flight as u64 * self.cfg.loss_thresh as u64) >> BBR_SCALE;
            if s.lost as u64 > thresh {
                return true;
            }
        }
        false
    }

    /// `bbr_inflight_hi_from_lost_skb`: the in-flight level at which the
    /// loss rate crossed the threshold, within this one-segment packet.
    fn inflight_hi_from_lost_skb(&self, s: &Sample) -> u32 {
        let pcount = 1i64;
        let inflight_prev = s.tx_in_flight as i64 - pcount;
        if inflight_prev < 0 {
            return UNSET;
        }
        let lost_prev = s.lost as i64 - pcount;
        if lost_prev < 0 {
            return UNSET;
        }
        let thresh = self.cfg.loss_thresh as u64;
        let budget = (inflight_prev as u64 * thresh + BBR_UNIT as u64 - 1) >> BBR_SCALE;
        let prefix = if lost_prev as u64 >= budget {
            0
        } else {
            ((budget - lost_prev as u64) << BBR_SCALE) / (BBR_UNIT as u64 - thresh)
        };
        sat_u32(inflight_prev as u64 + prefix)
    }

    fn inflight_with_headroom(&self) -> u32 {
        if self.inflight_hi == UNSET {
            return UNSET;
        }
        let headroom = ((self.inflight_hi as u64 * self.cfg.inflight_headroom as u64) >> BBR_SCALE).max(1) as u32;
        (self.inflight_hi as i64 - headroom as i64).max(self.cfg.cwnd_min_target as i64) as u32
    }

    fn bound_cwnd_for_inflight_model(&self, w: &mut Window) {
        if !self.initialized {
            return;
        }
        let mut cap = UNSET;
        if self.mode == Mode::ProbeBw && self.cycle_idx != Phase::Cruise {
            cap = self.inflight_hi;
        } else if self.mode == Mode::ProbeRtt || (self.mode == Mode::ProbeBw && self.cycle_idx == Phase::Cruise) {
            cap = self.inflight_with_headroom();
        }
        cap = cap.min(self.inflight_lo);
        cap = cap.max(self.cfg.cwnd_min_target);
        w.cwnd = w.cwnd.min(cap);
    }

    fn init_lower_bounds(&mut self, w: &Window, init_bw: bool) {
        if init_bw && self.bw_lo == UNSET {
            self.bw_lo = self.max_bw();
        }
        if self.inflight_lo == UNSET {
            self.inflight_lo = w.cwnd;
        }
    }

    fn loss_lower_bounds(&mut self) {
        let cut = (BBR_UNIT - self.cfg.beta) as u64;
        self.bw_lo = self.bw_latest.max(((self.bw_lo as u64 * cut) >> BBR_SCALE) as u32);
        self.inflight_lo = self
            .inflight_latest
            .max(((self.inflight_lo as u64 * cut) >> BBR_SCALE) as u32);
    }

    fn adapt_lower_bounds(&mut self, w: &Window) {
        if self.is_probing_bandwidth() {
            return;
        }
        if self.loss_in_round {
            self.init_lower_bounds(w, true);
            self.loss_lower_bounds();
        }
        self.bw_lo = self.bw_lo.max(1);
    }

    fn reset_lower_bounds(&mut self) {
        self.bw_lo = UNSET;
        self.inflight_lo = UNSET;
    }

    fn reset_congestion_signals(&mut self) {
        self.loss_in_round = false;
        self.loss_in_cycle = false;
        self.bw_latest = 0;
        self.inflight_latest = 0;
    }

    fn exit_loss_recovery(&mut self, w: &mut Window) {
        w.cwnd = w.cwnd.max(self.prior_cwnd);
        self.try_fast_path = false;
    }

    fn update_latest_delivery_signals(&mut self, c: &ConnView, s: &Sample) {
        self.loss_round_start = false;
        if s.interval_us <= 0 || s.acked_sacked == 0 {
            return;
        }
        self.bw_latest = self.bw_latest.max(self.sample_bw);
        self.inflight_latest = self.inflight_latest.max(sat_u32(s.delivered.max(0) as u64));
        if s.prior_delivered >= self.loss_round_delivered {
            self.loss_round_delivered = c.delivered;
            self.loss_round_start = true;
        }
    }

    /// `bbr_advance_latest_delivery_signals`: once per round; an ACK that
    /// may be for a probe's retransmission keeps the filter, so that a
    /// repaired tail loss is judged against the flight before it.
    fn advance_latest_delivery_signals(&mut self, s: &Sample) {
        if self.loss_round_start && !s.is_acking_tlp_retrans_seq {
            self.bw_latest = self.sample_bw;
            self.inflight_latest = sat_u32(s.delivered.max(0) as u64);
        }
    }

    fn update_congestion_signals(&mut self, w: &Window, s: &Sample) {
        if s.interval_us <= 0 || s.acked_sacked == 0 {
            return;
        }
        let bw = self.sample_bw;
        if !s.is_app_limited || bw >= self.max_bw() {
            self.take_max_bw_sample(bw);
        }
        self.loss_in_round |= s.losses > 0;
        if !self.loss_round_start {
            return;
        }
        self.adapt_lower_bounds(w);
        self.loss_in_round = false;
    }

    // ----- PROBE_BW state machine -----

    fn is_reno_coexistence_probe_time(&self, w: &Window) -> bool {
        let rounds = self.cfg.bw_probe_max_rounds.min(self.target_inflight(w));
        self.rounds_since_probe >= rounds
    }

    fn pick_probe_wait(&mut self) {
        self.rounds_since_probe = self.rng.below(self.cfg.bw_probe_rand_rounds);
        self.probe_wait_us = self
            .cfg
            .bw_probe_base_us
            .saturating_add(self.rng.below(self.cfg.bw_probe_rand_us));
    }

    fn set_cycle_idx(&mut self, p: Phase) {
        self.cycle_idx = p;
        self.try_fast_path = false;
    }

    fn start_bw_probe_refill(&mut self, c: &ConnView, up_rounds: u32) {
        self.reset_lower_bounds();
        self.bw_probe_up_rounds = up_rounds;
        self.bw_probe_up_acks = 0;
        self.stopped_risky_probe = false;
        self.ack_phase = AckPhase::Refilling;
        self.rounds.restart(c.delivered);
        self.set_cycle_idx(Phase::Refill);
    }

    fn start_bw_probe_up(&mut self, now: SimTime, w: &Window, c: &ConnView) {
        self.ack_phase = AckPhase::ProbeStarting;
        self.rounds.restart(c.delivered);
        self.cycle_mstamp = us(now);
        self.reset_full_bw();
        self.full.bw = self.sample_bw;
        self.set_cycle_idx(Phase::Up);
        self.raise_inflight_hi_slope(w);
    }

    fn start_bw_probe_down(&mut self, now: SimTime, c: &ConnView) {
        self.reset_congestion_signals();
        self.bw_probe_up_cnt = UNSET;
        self.pick_probe_wait();
        self.cycle_mstamp = us(now);
        self.ack_phase = AckPhase::ProbeStopping;
        self.rounds.restart(c.delivered);
        self.set_cycle_idx(Phase::Down);
    }

    fn start_bw_probe_cruise(&mut self) {
        if self.inflight_lo != UNSET {
            self.inflight_lo = self.inflight_lo.min(self.inflight_hi);
        }
        self.set_cycle_idx(Phase::Cruise);
    }

    fn handle_inflight_too_high(&mut self, now: SimTime, w: &Window, c: &ConnView, s: &Sample) {
        self.prev_probe_too_high = true;
        self.bw_probe_samples = false;
        if !s.is_app_limited {
            let floor = ((self.target_inflight(w) as u64 * (BBR_UNIT - self.cfg.beta) as u64) >> BBR_SCALE) as u32;
            self.inflight_hi = s.tx_in_flight.max(floor);
        }
        if self.mode == Mode::ProbeBw && self.cycle_idx == Phase::Up {
            self.start_bw_probe_down(now, c);
        }
    }

    /// Returns true if it decided a state transition.
    fn adapt_upper_bounds(&mut self, now: SimTime, w: &Window, c: &ConnView, s: &Sample) -> bool {
        if self.ack_phase == AckPhase::ProbeStarting && self.rounds.start {
            self.ack_phase = AckPhase::ProbeFeedback;
        }
        if self.ack_phase == AckPhase::ProbeStopping && self.rounds.start {
            // The samples of the probe are all in.
            self.bw_probe_samples = false;
            self.ack_phase = AckPhase::Init;
            if self.mode == Mode::ProbeBw && !s.is_app_limited {
                self.advance_max_bw_filter();
            }
            if self.mode == Mode::ProbeBw && self.stopped_risky_probe && !self.prev_probe_too_high {
                self.start_bw_probe_refill(c, 0);
                return true;
            }
        }
        if self.is_inflight_too_high(s) {
            if self.bw_probe_samples {
                self.handle_inflight_too_high(now, w, c, s);
            }
        } else {
            if self.inflight_hi == UNSET {
                return false;
            }
            if s.tx_in_flight > self.inflight_hi {
                self.inflight_hi = s.tx_in_flight;
            }
            if self.mode == Mode::ProbeBw && self.cycle_idx == Phase::Up {
                self.probe_inflight_hi_upward(w, c, s);
            }
        }
        false
    }

    fn check_time_to_probe_bw(&mut self, now: SimTime, w: &Window, c: &ConnView) -> bool {
        // (The ECN re-probe branch needs ecn_eligible: inert.)
        if self.has_elapsed_in_phase(now, self.probe_wait_us) || self.is_reno_coexistence_probe_time(w) {
            self.start_bw_probe_refill(c, 0);
            return true;
        }
        false
    }

    fn check_time_to_cruise(&self, inflight: u32, bw: u32) -> bool {
        if inflight > self.inflight_with_headroom() {
            return false;
        }
        inflight <= self.inflight(bw, BBR_UNIT)
    }

    fn update_cycle_phase(&mut self, now: SimTime, w: &Window, c: &ConnView, s: &Sample) {
        if !self.full_bw_reached {
            return;
        }
        if self.adapt_upper_bounds(now, w, c, s) {
            return;
        }
        if self.mode != Mode::ProbeBw {
            return;
        }
        let inflight = self.packets_in_net_at_edt(now, c, s.prior_in_flight);
        let bw = self.max_bw();
        match self.cycle_idx {
            Phase::Cruise => {
                self.check_time_to_probe_bw(now, w, c);
            }
            Phase::Refill => {
                if self.rounds.start {
                    self.bw_probe_samples = true;
                    self.start_bw_probe_up(now, w, c);
                }
            }
            Phase::Up => {
                let mut done = false;
                if self.prev_probe_too_high && inflight >= self.inflight_hi {
                    self.stopped_risky_probe = true;
                    done = true;
                } else if c.is_cwnd_limited && w.cwnd >= self.inflight_hi {
                    // inflight_hi is what limits growth: keep probing.
                    self.reset_full_bw();
                    self.full.bw = self.sample_bw;
                } else if self.full_bw_now {
                    done = true;
                }
                if done {
                    self.prev_probe_too_high = false;
                    self.start_bw_probe_down(now, c);
                }
            }
            Phase::Down => {
                if self.check_time_to_probe_bw(now, w, c) {
                    return;
                }
                if self.check_time_to_cruise(inflight, bw) {
                    self.start_bw_probe_cruise();
                }
            }
        }
    }

    // ----- STARTUP exit -----

    fn check_loss_too_high_in_startup(&mut self, c: &ConnView, s: &Sample) {
        if self.full_bw_reached {
            return;
        }
        if s.losses > 0 && self.loss_events_in_round < 0xf {
            self.loss_events_in_round += 1;
        }
        if self.cfg.full_loss_cnt != 0
            && self.loss_round_start
            && c.ca_state == CaState::Recovery
            && self.loss_events_in_round >= self.cfg.full_loss_cnt
            && self.is_inflight_too_high(s)
        {
            self.handle_queue_too_high_in_startup();
            return;
        }
        if self.loss_round_start {
            self.loss_events_in_round = 0;
        }
    }

    fn check_full_bw_reached(&mut self, s: &Sample) {
        if self.full_bw_now || s.is_app_limited {
            return;
        }
        // v3 tests every ACK's sample (v1: the max filter, on round
        // starts only); full_bw_now is false here.
        if self.full.grew(self.sample_bw, self.cfg.full_bw_thresh) {
            return;
        }
        if !self.rounds.start {
            return;
        }
        self.full_bw_now = self.full.plateau(self.cfg.full_bw_cnt);
        self.full_bw_reached |= self.full_bw_now;
    }

    fn check_drain(&mut self, now: SimTime, w: &mut Window, c: &ConnView) {
        if self.mode == Mode::Startup && self.full_bw_reached {
            self.mode = Mode::Drain;
            w.ssthresh = self.inflight(self.max_bw(), BBR_UNIT);
            self.reset_congestion_signals();
        }
        if self.mode == Mode::Drain
            && self.packets_in_net_at_edt(now, c, c.packets_in_flight) <= self.inflight(self.max_bw(), BBR_UNIT)
        {
            self.mode = Mode::ProbeBw;
            self.start_bw_probe_down(now, c);
        }
    }

    fn update_model(&mut self, now: SimTime, w: &mut Window, c: &ConnView, s: &Sample) {
        self.update_congestion_signals(w, s);
        self.update_ack_aggregation(w, s);
        self.check_loss_too_high_in_startup(c, s);
        self.check_full_bw_reached(s);
        self.check_drain(now, w, c);
        self.update_cycle_phase(now, w, c, s);
        self.update_min_rtt(now, w, c, s);
    }

    /// `bbr_run_fast_path`: returns (take the fast path, update the model).
    fn run_fast_path(&mut self, now: SimTime, w: &mut Window, c: &ConnView, s: &Sample) -> (bool, bool) {
        if self.cfg.fast_path
            && self.try_fast_path
            && s.is_app_limited
            && self.sample_bw < self.max_bw()
            && !self.loss_in_round
        {
            let prev_mode = self.mode;
            let prev_min_rtt = self.min_rtt.us;
            self.check_drain(now, w, c);
            self.update_cycle_phase(now, w, c, s);
            self.update_min_rtt(now, w, c, s);
            if self.mode == prev_mode && self.min_rtt.us == prev_min_rtt && self.try_fast_path {
                return (true, false);
            }
            return (false, false);
        }
        (false, true)
    }

    // ----- losses -----

    /// `bbr_note_loss`: this round trip is a loss round.
    fn note_loss(&mut self, delivered: u64) {
        if !self.loss_in_round {
            self.loss_round_delivered = delivered;
        }
        self.loss_in_round = true;
        self.loss_in_cycle = true;
    }
}

impl CongestionControl for Bbr3 {
    fn name(&self) -> &'static str {
        "bbr3"
    }

    /// `bbr_init`.
    fn init(&mut self, now: SimTime, w: &mut Window, c: &ConnView) {
        let cfg = self.cfg.clone();
        *self = Bbr3::seeded(cfg, self.stream);
        self.note(c);
        let j = self.jiffies(now);
        self.initialized = true;
        self.delivered_mstamp = us(now);
        self.init_cwnd = w.cwnd.min(0x7f);
        self.prior_cwnd = 0;
        w.ssthresh = INFINITE_SSTHRESH;
        self.rounds.restart(c.delivered);
        self.prev_ca_state = CaState::Open;
        self.probe_rtt_min = MinRtt::start(c.min_rtt, j);
        self.min_rtt = self.probe_rtt_min;
        let rule = self.pacing_rule();
        self.pacing.init_from_rtt(&rule, c.srtt, w.cwnd);
        self.mode = Mode::Startup;
        self.agg.restart_epoch(us(now));
        self.loss_round_delivered = c.delivered + 1;
    }

    /// `bbr_ssthresh`: save cwnd and the loss-adapted bounds for undo.
    fn ssthresh(&mut self, _now: SimTime, w: &Window, c: &ConnView) -> u32 {
        self.note(c);
        self.save_cwnd(w.cwnd);
        self.undo_bw_lo = self.bw_lo;
        self.undo_inflight_lo = self.inflight_lo;
        self.undo_inflight_hi = self.inflight_hi;
        w.ssthresh
    }

    fn cong_avoid(&mut self, _now: SimTime, _w: &mut Window, _c: &ConnView, _acked: u32) {}

    /// `bbr_set_state`.
    fn set_state(&mut self, _now: SimTime, w: &mut Window, c: &ConnView, new: CaState) {
        if new == CaState::Loss {
            self.note(c);
            self.prev_ca_state = CaState::Loss;
            self.reset_full_bw();
            if !self.is_probing_bandwidth() && self.inflight_lo == UNSET {
                self.inflight_lo = w.cwnd.max(self.prior_cwnd);
            }
        } else {
            self.note(c);
            if self.prev_ca_state == CaState::Loss {
                self.exit_loss_recovery(w);
            }
        }
    }

    /// `bbr_cwnd_event` (only TX_START matters without ECN; the TLP
    /// recovery event is [`Self::on_tlp_recovery`]).
    fn cwnd_event(&mut self, now: SimTime, w: &mut Window, c: &ConnView, ev: CaEvent) {
        self.note(c);
        if ev != CaEvent::TxStart {
            return;
        }
        if c.packets_out == 0 {
            self.delivered_mstamp = us(now);
        }
        if !(c.app_limited || self.al.active()) {
            return;
        }
        self.idle_restart = true;
        self.agg.restart_epoch(us(now));
        if self.mode == Mode::ProbeBw {
            let bw = self.bbr_bw();
            self.set_pacing_rate(c, w.cwnd, bw, BBR_UNIT);
        } else if self.mode == Mode::ProbeRtt {
            self.check_probe_rtt_done(now, w, c);
        }
    }

    /// `bbr_undo_cwnd`: revert the loss-adapted bounds.
    fn undo_cwnd(&mut self, _now: SimTime, _w: &Window, _prior_cwnd: u32) -> u32 {
        self.reset_full_bw();
        self.loss_in_round = false;
        self.bw_lo = self.bw_lo.max(self.undo_bw_lo);
        self.inflight_lo = self.inflight_lo.max(self.undo_inflight_lo);
        self.inflight_hi = self.inflight_hi.max(self.undo_inflight_hi);
        self.try_fast_path = false;
        self.prior_cwnd
    }

    /// `bbr_main`.
    fn cong_control(&mut self, now: SimTime, w: &mut Window, c: &ConnView, rs: &RateSample) -> bool {
        if let Some(m) = (c.mss > 0).then_some(c.mss) {
            self.mss = m;
        }
        // Framework state BBR reads (v1 deviations 5, 6).
        if rs.acked_sacked > 0 {
            self.delivered_mstamp = us(now);
        }
        self.al.clear_if_passed(c.delivered);
        let s = self.linux_sample(now, rs, c);

        self.update_round_start(c, &s);
        if self.rounds.start {
            self.rounds_since_probe = (self.rounds_since_probe + 1).min(0xff);
            // ECN alpha and PLB need ECN: inert (deviation 2).
        }
        self.calculate_bw_sample(&s);
        self.update_latest_delivery_signals(c, &s);

        let (fast, update_model) = self.run_fast_path(now, w, c, &s);
        if !fast {
            if update_model {
                self.update_model(now, w, c, &s);
            }
            self.update_gains();
            let bw = self.bbr_bw();
            self.set_pacing_rate(c, w.cwnd, bw, self.pacing_gain);
            self.set_cwnd(w, s.acked_sacked, bw, self.cwnd_gain);
            self.bound_cwnd_for_inflight_model(w);
        }
        self.advance_latest_delivery_signals(&s);
        self.prev_ca_state = c.ca_state;
        self.loss_in_cycle |= s.lost > 0;
        self.note(c);
        true
    }

    /// Google's `tcp_rate_skb_sent` for v3: `tx.in_flight` (at most
    /// `TCPCB_IN_FLIGHT_MAX`), `tx.lost` and `tx.is_app_limited`.
    fn on_packet_sent(&mut self, _now: SimTime, p: &SentPacket) -> PacketRecord {
        PacketRecord {
            in_flight: p.in_flight.min(IN_FLIGHT_MAX),
            lost: p.lost,
            app_limited: p.app_limited || self.al.active(),
        }
    }

    /// `bbr_skb_marked_lost`: while probing, a rate sample of the flight up
    /// to the lost packet; if its loss rate is too high, the in-flight level
    /// at which it crossed the threshold becomes `inflight_hi`. (The kernel
    /// skips a packet already SACKed; the framework never marks one.)
    fn on_packet_lost(&mut self, now: SimTime, w: &Window, c: &ConnView, p: &LostPacket) {
        self.note(c);
        self.note_loss(c.delivered);
        if !self.bw_probe_samples {
            return;
        }
        let mut s = Sample {
            tx_in_flight: p.record.in_flight,
            lost: sat_u32(p.lost_total.saturating_sub(p.record.lost)),
            is_app_limited: p.record.app_limited,
            ..Sample::default()
        };
        if self.is_inflight_too_high(&s) {
            s.tx_in_flight = self.inflight_hi_from_lost_skb(&s);
            self.handle_inflight_too_high(now, w, c, &s);
        }
    }

    /// `bbr_run_loss_probe_recovery` (`CA_EVENT_TLP_RECOVERY`): a probe
    /// repaired the loss of one segment; while probing, judge it against
    /// the latest round's delivered volume.
    fn on_tlp_recovery(&mut self, now: SimTime, w: &Window, c: &ConnView, orig: &PacketRecord) {
        if !self.cfg.loss_probe_recovery {
            return;
        }
        self.note(c);
        self.note_loss(c.delivered);
        if !self.bw_probe_samples {
            return;
        }
        let s = Sample {
            lost: 1,
            tx_in_flight: self.inflight_latest.saturating_add(1),
            is_app_limited: orig.app_limited,
            ..Sample::default()
        };
        if self.is_inflight_too_high(&s) {
            self.handle_inflight_too_high(now, w, c, &s);
        }
    }

    fn pacing_rate(&self) -> Option<BitRate> {
        self.pacing.bitrate()
    }

    /// Linux paces BBR's skbs at its own TSO goal.
    fn tso_segs(&self, _autosize: u32) -> u32 {
        self.tso_segs_goal()
    }

    fn mode(&self) -> &'static str {
        match self.mode {
            Mode::ProbeBw => match self.cycle_idx {
                Phase::Up => "probe_bw_up",
                Phase::Down => "probe_bw_down",
                Phase::Cruise => "probe_bw_cruise",
                Phase::Refill => "probe_bw_refill",
            },
            other => other.label(),
        }
    }

    fn target_window(&self) -> Option<f64> {
        bdp_segments(self.bbr_bw(), self.min_rtt.us)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::cc::{registry, CcConfig};
    use std::collections::VecDeque;

    use crate::transport::cc::testkit::{ms, MSS};

    /// A connection driven by hand as the framework would drive it: every
    /// segment remembers `delivered` when it was sent and the record BBRv3
    /// returned for it, ACKs are cumulative and in order, losses are
    /// reported one marking at a time, and the sender refills to a chosen
    /// flight after each ACK. Sequence numbers count segments.
    struct Conn {
        cc: Bbr3,
        w: Window,
        now: SimTime,
        /// Outstanding segments: the `delivered` snapshot and the record
        /// of each.
        segs: VecDeque<(u64, PacketRecord)>,
        una: u64,
        nxt: u64,
        delivered: u64,
        lost: u64,
        state: CaState,
        srtt: Option<SimDuration>,
        app_limited: bool,
        cwnd_limited: bool,
        /// Delivery rate the samples report, segments per second.
        rate: f64,
        rtt: SimDuration,
    }

    impl Conn {
        fn new(cfg: Config) -> Conn {
            let mut c = Conn {
                cc: Bbr3::new(cfg),
                w: Window::new(10),
                now: SimTime::ZERO,
                segs: VecDeque::new(),
                una: 0,
                nxt: 0,
                delivered: 0,
                lost: 0,
                state: CaState::Open,
                srtt: None,
                app_limited: false,
                cwnd_limited: true,
                rate: 2500.0,
                rtt: ms(40),
            };
            let v = c.view(0, 0);
            c.cc.init(SimTime::ZERO, &mut c.w, &v);
            c.send(10);
            // The first ACKs come about one RTT later.
            c.now = SimTime::ZERO + ms(36);
            c
        }
        fn in_flight(&self) -> u32 {
            self.segs.len() as u32
        }
        fn view(&self, lost_out: u32, sacked_out: u32) -> ConnView {
            ConnView {
                now: self.now,
                mss: MSS,
                snd_una: self.una * MSS as u64,
                snd_nxt: self.nxt * MSS as u64,
                packets_out: self.in_flight() + lost_out,
                packets_in_flight: self.in_flight(),
                srtt: self.srtt,
                min_rtt: None,
                delivered: self.delivered,
                ca_state: self.state,
                is_cwnd_limited: self.cwnd_limited,
                app_limited: self.app_limited,
                sacked_out,
                lost_out,
                lost_total: self.lost,
                last_send: None,
                ..ConnView::default()
            }
        }
        /// Sends `n` new segments.
        fn send(&mut self, n: u32) {
            for _ in 0..n {
                let p = SentPacket {
                    seq: self.nxt * MSS as u64,
                    len: MSS,
                    retransmission: false,
                    in_flight: self.in_flight() + 1,
                    delivered: self.delivered,
                    lost: self.lost,
                    app_limited: self.app_limited,
                };
                let r = self.cc.on_packet_sent(self.now, &p);
                self.segs.push_back((self.delivered, r));
                self.nxt += 1;
            }
        }
        /// Sends until `flight` segments are out.
        fn fill(&mut self, flight: u32) {
            let n = flight.saturating_sub(self.in_flight());
            self.send(n);
        }
        /// One ACK `dt` after the previous event: the first `lost` outstanding
        /// segments are found lost (SACKed around), the next `acked`
        /// delivered. The rate sample spans the newest delivered segment.
        fn ack(&mut self, dt: SimDuration, acked: u32, lost: u32) {
            self.now += dt;
            let prior_in_flight = self.in_flight();
            let hole = self.una;
            for _ in 0..lost {
                let (_, record) = self.segs.pop_front().expect("outstanding");
                self.lost += 1;
                let v = self.view(lost, 0);
                let p = LostPacket {
                    seq: self.una * MSS as u64,
                    len: MSS,
                    record,
                    lost_total: self.lost,
                };
                self.cc.on_packet_lost(self.now, &self.w, &v, &p);
                self.una += 1;
            }
            let mut prior = None;
            for _ in 0..acked {
                prior = self.segs.pop_front();
                self.una += 1;
                self.delivered += 1;
            }
            let r = self.rtt;
            self.srtt = Some(
                self.srtt
                    .map_or(r, |s| SimDuration::from_nanos((7 * s.as_nanos() + r.as_nanos()) / 8)),
            );
            let rs = match prior {
                Some((p, record)) => {
                    let d = self.delivered - p;
                    RateSample {
                        delivered: Some(d),
                        interval: SimDuration::from_nanos((d as f64 / self.rate * 1e9) as u64),
                        prior_delivered: p,
                        prior_time: SimTime::ZERO,
                        prior_in_flight,
                        acked_sacked: acked,
                        losses: lost,
                        rtt: Some(r),
                        is_app_limited: self.app_limited,
                        is_retrans: false,
                        record: Some(record),
                        ..RateSample::default()
                    }
                }
                None => RateSample {
                    prior_in_flight,
                    losses: lost,
                    ..RateSample::default()
                },
            };
            // With losses the ACK carried SACK blocks above the holes.
            let mut v = self.view(lost, if lost > 0 { acked } else { 0 });
            if lost > 0 {
                v.snd_una = hole * MSS as u64;
            }
            assert!(self.cc.cong_control(self.now, &mut self.w, &v, &rs));
        }
        /// `n` steady ACKs of one segment each, `gap` apart, refilling to
        /// `flight` after each.
        fn steady(&mut self, n: u32, gap: SimDuration, flight: u32) {
            for _ in 0..n {
                self.ack(gap, 1, 0);
                self.fill(flight);
            }
        }
        /// One round: a flight of `flight` ACKed one by one over one RTT.
        fn round(&mut self, flight: u32) {
            let gap = SimDuration::from_nanos(self.rtt.as_nanos() / flight.max(1) as u64);
            self.steady(flight, gap, flight);
        }
        fn set_state(&mut self, s: CaState) {
            self.state = s;
            let v = self.view(0, 0);
            self.cc.set_state(self.now, &mut self.w, &v, s);
        }
    }

    fn bw_raw(pkts_per_s: f64) -> u32 {
        (pkts_per_s * BW_UNIT as f64 / 1e6).ceil() as u32
    }

    /// STARTUP at 2500 segments/s (BDP 100 at 40 ms) until PROBE_BW.
    fn in_probe_bw(cfg: Config) -> Conn {
        let mut c = Conn::new(cfg);
        for k in 0..40 {
            // STARTUP overfills a little; DRAIN's slow pacing brings the
            // flight back to the BDP.
            let flight = if c.cc.bbr_mode() == Mode::Drain {
                100
            } else {
                c.w.cwnd.min(100 + 2 * k)
            };
            c.round(flight);
            if c.cc.bbr_mode() == Mode::ProbeBw {
                return c;
            }
        }
        panic!("never reached PROBE_BW: {:?}", c.cc.bbr_mode());
    }

    // ----- configuration -----

    #[test]
    fn the_defaults_are_googles_v3_constants() {
        let c = Config::default();
        assert_eq!(
            (c.startup_pacing_gain, c.startup_cwnd_gain, c.drain_gain, c.cwnd_gain),
            (710, 512, 88, 512)
        );
        assert_eq!(c.pacing_gains, [320, 232, 256, 256]);
        assert_eq!(
            (c.beta, c.loss_thresh, c.inflight_headroom, c.probe_rtt_cwnd_gain),
            (76, 5, 38, 128)
        );
        assert_eq!(
            (c.probe_rtt_win_ms, c.probe_rtt_mode_ms, c.min_rtt_win_sec),
            (5000, 200, 10)
        );
        assert_eq!((c.full_bw_thresh, c.full_bw_cnt, c.full_loss_cnt), (320, 3, 6));
        assert_eq!(
            (
                c.bw_probe_max_rounds,
                c.bw_probe_rand_rounds,
                c.bw_probe_base_us,
                c.bw_probe_rand_us
            ),
            (63, 2, 2_000_000, 1_000_000)
        );
        assert_eq!((c.bw_probe_cwnd_gain, c.tso_rtt_shift, c.cwnd_min_target), (1, 9, 4));
        assert_eq!(
            (c.extra_acked_gain, c.extra_acked_win_rtts, c.extra_acked_max_us),
            (256, 5, 100_000)
        );
        assert!(c.fast_path);
        assert_eq!(c.validate(), Ok(()));
        // 4 ln 2 = 2.7726; 710/256 = 2.7734.
        assert!((710.0 / 256.0 - 4.0 * std::f64::consts::LN_2).abs() < 0.001);
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
        bad(|c| c.probe_rtt_win_ms = 20_000, "probe_rtt_win_ms");
        bad(|c| c.loss_thresh = 256, "loss_thresh");
        bad(|c| c.beta = 300, "beta");
        bad(|c| c.pacing_gains[1] = 0, "pacing_gains[1]");
        bad(|c| c.bw_probe_cwnd_gain = 4, "bw_probe_cwnd_gain");
        bad(|c| c.full_bw_cnt = 0, "full_bw_cnt");
        bad(|c| c.bw_probe_rand_rounds = 0, "bw_probe_rand_rounds");
        bad(|c| c.full_loss_cnt = 16, "full_loss_cnt");
    }

    #[test]
    fn the_registry_builds_bbr3_and_rejects_unknown_keys() {
        let cc = registry::build("bbr3", &serde_json::json!({"seed": 3, "beta": 80})).unwrap();
        assert_eq!(cc.name(), "bbr3");
        assert!(registry::build("bbr3", &serde_json::json!({"betta": 80})).is_err());
        let r = registry::resolve("bbr3", &serde_json::Value::Null).unwrap();
        assert_eq!(r["startup_pacing_gain"], 710);
        assert_eq!(r["pacing_gains"], serde_json::json!([320, 232, 256, 256]));
    }

    // ----- STARTUP -----

    #[test]
    fn startup_paces_at_2_77_times_the_bandwidth_with_a_cwnd_gain_of_2() {
        let mut c = Conn::new(Config::default());
        c.rate = 250.0; // 10 segments per 40 ms
        c.round(10);
        assert_eq!(c.cc.bbr_mode(), Mode::Startup);
        assert_eq!((c.cc.pacing_gain_raw(), c.cc.cwnd_gain_raw()), (710, 512));
        assert_eq!(c.cc.mode(), "startup");
        let bw = c.cc.bw_raw();
        assert_eq!(bw, bw_raw(250.0));
        let expect = ((((bw as u64 * MSS as u64 * 710) >> 8) * 990_000) >> 24).max(1);
        assert_eq!(c.cc.pacing_rate_bytes(), Some(expect));
        // Below 2·init_cwnd the window grows by every segment ACKed.
        assert_eq!(c.w.cwnd, 20);
    }

    #[test]
    fn startup_ends_when_the_bandwidth_sample_grows_less_than_25_percent_for_three_rounds() {
        let mut c = Conn::new(Config::default());
        c.rate = 2500.0; // every sample reports the same rate
        let mut starts = 0;
        while !c.cc.full_bw_reached() {
            c.ack(ms(1), 1, 0);
            let f = c.w.cwnd.min(400);
            c.fill(f);
            starts += u32::from(c.cc.rounds.start);
            assert!(starts < 10);
        }
        // The first sample sets the reference; then three round starts
        // without 25 % growth.
        assert_eq!(starts, 4);
        assert_ne!(c.w.ssthresh, INFINITE_SSTHRESH, "entering DRAIN exports ssthresh");
        // In flight is already below the BDP, so DRAIN ends on the same ACK,
        // and DOWN hands over to CRUISE at once (check_drain runs before
        // the cycle update, as in Linux).
        assert_eq!(c.cc.bbr_mode(), Mode::ProbeBw);
        assert_eq!(c.cc.phase(), Phase::Cruise);
    }

    #[test]
    fn startup_ends_on_six_loss_events_with_more_than_2_percent_loss_in_a_recovery_round() {
        let mut c = Conn::new(Config::default());
        for _ in 0..3 {
            let f = c.w.cwnd;
            c.rate *= 2.0;
            c.round(f);
        }
        assert!(!c.cc.full_bw_reached());
        c.state = CaState::Recovery;
        // One round of recovery with a loss on every other ACK.
        let flight = c.in_flight();
        let start = c.delivered;
        let mut events = 0;
        while c.delivered < start + flight as u64 && !c.cc.full_bw_reached() {
            let lost = u32::from(events < 8 && (c.delivered & 1) == 0);
            events += lost;
            c.ack(ms(1), 1, lost);
            c.fill(flight);
        }
        assert!(c.cc.full_bw_reached(), "after {events} loss events");
        assert!(events >= 6);
        assert!(c.cc.inflight_hi().is_some());
    }

    // ----- PROBE_BW -----

    #[test]
    fn drain_leads_to_probe_bw_down_with_a_two_to_three_second_probe_wait_then_cruise() {
        let mut c = in_probe_bw(Config::default());
        // DRAIN ended in DOWN; in flight at BDP moves on to CRUISE.
        assert!(
            matches!(c.cc.phase(), Phase::Down | Phase::Cruise),
            "{:?}",
            c.cc.phase()
        );
        let wait = c.cc.probe_wait();
        assert!(
            wait >= SimDuration::from_secs(2) && wait < SimDuration::from_secs(3),
            "{wait:?}"
        );
        c.steady(5, ms(1), 90);
        assert_eq!(c.cc.phase(), Phase::Cruise);
        assert_eq!(c.cc.mode(), "probe_bw_cruise");
        assert_eq!(c.cc.pacing_gain_raw(), 256);
    }

    #[test]
    fn cruise_refills_after_the_probe_wait_then_probes_up_at_1_25_with_cwnd_gain_2_25() {
        let mut c = in_probe_bw(Config {
            bw_probe_max_rounds: 255,
            ..Config::default()
        });
        let started = c.now;
        let wait = c.cc.probe_wait();
        while c.cc.phase() != Phase::Refill {
            c.round(100);
            assert!(c.now < started + wait + ms(100), "no refill by {:?}", c.now);
        }
        assert!(c.now >= started + wait);
        assert_eq!(c.cc.pacing_gain_raw(), 256);
        // One round of REFILL, then UP.
        c.round(100);
        assert_eq!(c.cc.phase(), Phase::Up);
        assert_eq!((c.cc.pacing_gain_raw(), c.cc.cwnd_gain_raw()), (320, 576));
        assert_eq!(c.cc.mode(), "probe_bw_up");
    }

    #[test]
    fn reno_coexistence_starts_a_probe_after_as_many_rounds_as_the_bdp_in_packets() {
        // A 20-segment BDP: probe after 20 rounds (0.8 s), long before 2 s.
        let mut c = Conn::new(Config::default());
        c.rate = 500.0;
        for _ in 0..40 {
            let f = c.w.cwnd.min(20);
            c.round(f);
            if c.cc.bbr_mode() == Mode::ProbeBw {
                break;
            }
        }
        assert_eq!(c.cc.bbr_mode(), Mode::ProbeBw);
        let t0 = c.now;
        let mut rounds = 0;
        while c.cc.phase() != Phase::Refill {
            c.round(20);
            rounds += 1;
            assert!(rounds < 40);
        }
        assert!(
            c.now.saturating_since(t0) < SimDuration::from_secs(1),
            "before the 2 s wall-clock wait"
        );
        let target = c.cc.inflight(c.cc.bw_raw(), BBR_UNIT).min(c.w.cwnd);
        assert!(
            rounds as u32 >= target.saturating_sub(2) && rounds as u32 <= target + 1,
            "{rounds} rounds, target {target}"
        );
    }

    /// Drives a connection to the UP phase.
    fn in_probe_up(cfg: Config) -> Conn {
        let mut c = in_probe_bw(cfg);
        let mut n = 0;
        while c.cc.phase() != Phase::Up {
            c.round(100);
            n += 1;
            assert!(n < 200);
        }
        c
    }

    #[test]
    fn losses_above_2_percent_while_probing_set_inflight_hi_and_end_the_probe() {
        let mut c = in_probe_up(Config::default());
        assert!(c.cc.inflight_hi().is_none());
        let mut n = 0;
        // Probe: flight rises; then 4 losses in a flight of ~130 (3 %).
        while c.cc.phase() == Phase::Up && n < 4 {
            c.ack(ms(1), 1, 1);
            c.fill(130);
            n += 1;
        }
        assert_eq!(c.cc.phase(), Phase::Down, "after {n} losses");
        let hi = c.cc.inflight_hi().expect("inflight_hi set");
        assert!((90..=140).contains(&hi), "inflight_hi {hi}");
        assert!(c.cc.prev_probe_too_high);
        assert_eq!(c.cc.pacing_gain_raw(), 232);
    }

    #[test]
    fn without_losses_inflight_hi_grows_in_up_by_an_amount_that_doubles_each_round() {
        let mut c = in_probe_up(Config::default());
        c.cc.inflight_hi = 120;
        c.w.cwnd = 120;
        c.cc.bw_probe_up_rounds = 0;
        let cwnd = c.w.cwnd;
        c.cc.raise_inflight_hi_slope(&c.w);
        assert_eq!(c.cc.bw_probe_up_cnt, cwnd);
        c.cc.raise_inflight_hi_slope(&c.w);
        assert_eq!(c.cc.bw_probe_up_cnt, cwnd / 2);
        c.cc.raise_inflight_hi_slope(&c.w);
        assert_eq!(c.cc.bw_probe_up_cnt, cwnd / 4);
        // Window-limited ACKs raise inflight_hi by 1 per bw_probe_up_cnt ACKs.
        let before = c.cc.inflight_hi;
        let v = c.view(0, 0);
        let s = Sample {
            acked_sacked: 2 * cwnd / 4,
            ..Sample::default()
        };
        c.cc.rounds.start = false;
        c.cc.probe_inflight_hi_upward(&c.w, &v, &s);
        assert_eq!(c.cc.inflight_hi, before + 2);
    }

    #[test]
    fn a_loss_outside_probing_cuts_bw_lo_and_inflight_lo_by_30_percent_but_not_below_the_latest_round() {
        let mut c = in_probe_bw(Config::default());
        c.steady(5, ms(1), 90);
        assert_eq!(c.cc.phase(), Phase::Cruise);
        // A loss while cruising: the bounds are cut at the end of its round.
        c.ack(ms(1), 1, 1);
        c.fill(90);
        assert!(c.cc.loss_in_round);
        let mut n = 0;
        while c.cc.bw_lo().is_none() {
            c.ack(ms(1), 1, 0);
            c.fill(90);
            n += 1;
            assert!(n < 200);
        }
        assert!(c.cc.bw_raw() <= c.cc.max_bw_raw());
        assert!(
            c.w.cwnd <= c.cc.inflight_lo().unwrap().max(4),
            "cwnd bounded by inflight_lo"
        );
        // The rule itself: ×(1 − 76/256), floored at the latest round.
        c.cc.bw_lo = 1000;
        c.cc.inflight_lo = 100;
        c.cc.bw_latest = 10;
        c.cc.inflight_latest = 10;
        c.cc.loss_in_round = true;
        c.cc.adapt_lower_bounds(&c.w);
        assert_eq!((c.cc.bw_lo, c.cc.inflight_lo), (703, 70));
        c.cc.bw_latest = 900;
        c.cc.inflight_latest = 95;
        c.cc.adapt_lower_bounds(&c.w);
        assert_eq!((c.cc.bw_lo, c.cc.inflight_lo), (900, 95));
        // Not while probing.
        c.cc.cycle_idx = Phase::Up;
        c.cc.adapt_lower_bounds(&c.w);
        assert_eq!((c.cc.bw_lo, c.cc.inflight_lo), (900, 95));
    }

    #[test]
    fn the_bandwidth_filter_keeps_the_max_of_the_last_two_probe_cycles() {
        let mut c = in_probe_bw(Config::default());
        c.cc.bw_hi = [100, 200];
        c.cc.advance_max_bw_filter();
        assert_eq!(c.cc.bw_hi, [200, 0]);
        assert_eq!(c.cc.max_bw_raw(), 200);
        c.cc.take_max_bw_sample(150);
        c.cc.advance_max_bw_filter();
        assert_eq!(c.cc.max_bw_raw(), 150);
        // A window without samples keeps the old one.
        c.cc.advance_max_bw_filter();
        assert_eq!(c.cc.bw_hi, [150, 0]);
    }

    #[test]
    fn cruising_leaves_15_percent_headroom_below_inflight_hi() {
        let mut c = in_probe_bw(Config::default());
        c.steady(5, ms(1), 90);
        assert_eq!(c.cc.phase(), Phase::Cruise);
        c.cc.inflight_hi = 200;
        c.w.cwnd = 500;
        c.ack(ms(1), 1, 0);
        // 200 − ⌊200·38/256⌋ = 171.
        assert_eq!(c.w.cwnd, 171.min(c.cc.target_cwnd().unwrap()));
        c.cc.inflight_hi = 100;
        c.ack(ms(1), 1, 0);
        assert_eq!(c.w.cwnd, 86);
    }

    // ----- PROBE_RTT -----

    #[test]
    fn probe_rtt_comes_after_5_s_without_a_lower_rtt_and_holds_half_a_bdp_for_200_ms() {
        let mut c = in_probe_bw(Config::default());
        c.rtt = ms(45);
        let stamp = c.cc.probe_rtt_min.stamp;
        while c.cc.bbr_mode() != Mode::ProbeRtt {
            c.steady(1, ms(10), 100);
            assert!(c.now < SimTime::from_nanos(6_000_000_000));
        }
        let j = c.cc.jiffies(c.now);
        // Strictly after the 5 s window, on the first ACK (10 ms apart).
        assert!(
            (5001..=5010).contains(&j.wrapping_sub(stamp)),
            "{}",
            j.wrapping_sub(stamp)
        );
        assert_eq!(c.cc.mode(), "probe_rtt");
        // BDP/2 at 2500 segments/s and 40 ms: 50.0002 (bandwidth samples
        // are rounded up), rounded up again to 51.
        assert_eq!(c.cc.probe_rtt_cwnd(), 51);
        assert_eq!(c.w.cwnd, 51);
        // The flight falls to 51; then 200 ms and a round (51 ACKs in 40 ms).
        c.steady(1, ms(1), 51);
        let began = c.now;
        while c.cc.bbr_mode() == Mode::ProbeRtt {
            c.steady(1, SimDuration::from_micros(800), 51);
            assert!(c.now < began + ms(400));
        }
        assert!(c.now > began + ms(200));
        assert_eq!(c.cc.bbr_mode(), Mode::ProbeBw);
        assert_eq!(c.cc.phase(), Phase::Cruise, "PROBE_RTT exits to CRUISE");
        // The 10 s min_rtt filter still holds the 40 ms sample.
        assert_eq!(c.cc.min_rtt(), Some(ms(40)));
    }

    // ----- per-packet records and loss states -----

    #[test]
    fn each_packets_record_is_its_in_flight_at_transmission_and_the_sample_reads_it() {
        let mut c = Conn::new(Config::default());
        // The initial window: each packet counts itself.
        let records: Vec<u32> = c.segs.iter().map(|s| s.1.in_flight).collect();
        assert_eq!(records, (1..=10).collect::<Vec<_>>());
        // Two ACKed, five more sent: they carry 9..=13.
        c.ack(ms(40), 2, 0);
        c.send(5);
        assert_eq!(
            c.segs.back().unwrap().1,
            PacketRecord {
                in_flight: 13,
                lost: 0,
                app_limited: false
            }
        );
        // A sample of the 10th segment: tx_in_flight 10, and the losses
        // counted since it was sent.
        let rs = RateSample {
            delivered: Some(8),
            interval: ms(40),
            acked_sacked: 8,
            record: Some(PacketRecord {
                in_flight: 10,
                lost: 3,
                app_limited: false,
            }),
            ..RateSample::default()
        };
        let mut v = c.view(0, 0);
        v.lost_total = 5;
        let s = c.cc.linux_sample(c.now, &rs, &v);
        assert_eq!((s.tx_in_flight, s.lost), (10, 2));
        // No packet sampled: both zero, as the kernel's zeroed sample.
        let s = c.cc.linux_sample(c.now, &RateSample::default(), &v);
        assert_eq!((s.tx_in_flight, s.lost), (0, 0));
    }

    #[test]
    fn a_lost_packet_sent_while_probing_sets_inflight_hi_where_the_loss_rate_crossed_2_percent() {
        let mut c = in_probe_up(Config::default());
        c.cc.bw_probe_samples = true;
        let v = c.view(1, 0);
        // Sent with 200 in flight; 10 losses counted since, itself the
        // 10th: 5 % > 2 %.
        let p = LostPacket {
            seq: 0,
            len: MSS,
            record: PacketRecord {
                in_flight: 200,
                lost: 100,
                app_limited: false,
            },
            lost_total: 110,
        };
        c.cc.on_packet_lost(c.now, &c.w, &v, &p);
        // bbr_inflight_hi_from_lost_skb: 199 before it, 9 lost before it;
        // the 2 % budget of 199 is ⌈199·5/256⌉ = 4 ≤ 9: the threshold was
        // crossed before this packet, so inflight_hi is 199 (above 70 % of
        // the ~100-packet target). The probe ends (DOWN).
        assert_eq!(c.cc.inflight_hi(), Some(199));
        assert!(c.cc.prev_probe_too_high);
        assert_eq!(c.cc.phase(), Phase::Down);
        // Outside probing a marking only notes the loss round.
        let mut c = in_probe_bw(Config::default());
        c.steady(5, ms(1), 90);
        assert!(!c.cc.bw_probe_samples);
        c.cc.on_packet_lost(c.now, &c.w, &v, &p);
        assert!(c.cc.inflight_hi().is_none());
        assert!(c.cc.loss_in_round);
    }

    #[test]
    fn a_loss_repaired_by_a_tail_loss_probe_while_probing_counts_as_one_loss_of_the_latest_round() {
        let mut c = in_probe_up(Config::default());
        c.cc.bw_probe_samples = true;
        // One loss against a round of 30 delivered: 1 > ⌊31·5/256⌋ = 0.
        c.cc.inflight_latest = 30;
        let v = c.view(0, 0);
        c.cc.on_tlp_recovery(c.now, &c.w, &v, &PacketRecord::default());
        assert!(c.cc.prev_probe_too_high);
        assert_eq!(c.cc.phase(), Phase::Down);
        // An app-limited flight sets no inflight_hi but still ends the probe.
        let mut c = in_probe_up(Config::default());
        c.cc.bw_probe_samples = true;
        c.cc.inflight_latest = 30;
        let orig = PacketRecord {
            app_limited: true,
            ..PacketRecord::default()
        };
        c.cc.on_tlp_recovery(c.now, &c.w, &v, &orig);
        assert!(c.cc.inflight_hi().is_none());
        assert_eq!(c.cc.phase(), Phase::Down);
        // Switched off: nothing.
        let mut c = in_probe_up(Config {
            loss_probe_recovery: false,
            ..Config::default()
        });
        c.cc.bw_probe_samples = true;
        c.cc.on_tlp_recovery(c.now, &c.w, &v, &PacketRecord::default());
        assert!(!c.cc.loss_in_round);
        assert_eq!(c.cc.phase(), Phase::Up);
    }

    #[test]
    fn an_ack_that_may_be_for_a_probe_keeps_the_latest_round_filter() {
        let mut c = in_probe_bw(Config::default());
        c.cc.loss_round_start = true;
        c.cc.inflight_latest = 77;
        c.cc.sample_bw = 5;
        let s = Sample {
            delivered: 3,
            is_acking_tlp_retrans_seq: true,
            ..Sample::default()
        };
        c.cc.advance_latest_delivery_signals(&s);
        assert_eq!(c.cc.inflight_latest, 77);
        let s = Sample {
            delivered: 3,
            ..Sample::default()
        };
        c.cc.advance_latest_delivery_signals(&s);
        assert_eq!((c.cc.inflight_latest, c.cc.bw_latest), (3, 5));
    }

    #[test]
    fn a_timeout_resets_full_bw_seeds_inflight_lo_and_the_window_returns_when_loss_ends() {
        let mut c = in_probe_bw(Config::default());
        c.steady(5, ms(1), 90);
        // tcp_enter_loss: everything marked lost (one hook per marking),
        // then ssthresh, then cwnd = in flight + 1 and the Loss state.
        let outstanding = c.segs.len() as u32;
        let v = c.view(outstanding, 0);
        while let Some((_, record)) = c.segs.pop_front() {
            c.lost += 1;
            let p = LostPacket {
                seq: 0,
                len: MSS,
                record,
                lost_total: c.lost,
            };
            c.cc.on_packet_lost(c.now, &c.w, &v, &p);
        }
        c.cc.ssthresh(c.now, &c.w, &v);
        assert!(c.cc.loss_in_round);
        let saved = c.cc.prior_cwnd;
        c.w.cwnd = 1;
        c.set_state(CaState::Loss);
        assert_eq!(c.cc.full.bw, 0);
        assert!(c.cc.inflight_lo().is_some());
        c.set_state(CaState::Open);
        assert_eq!(c.w.cwnd, saved);
    }

    // ----- end to end -----

    #[test]
    fn on_a_20_mbit_dumbbell_bbr3_fills_the_link_without_loss_and_cycles_through_its_phases() {
        let json = serde_json::json!({
            "name": "dumbbell",
            "seed": 1,
            "duration_s": 12.0,
            "topology": "wired",
            "internet": {"rate_mbps": 20.0, "delay_ms": 20.0, "buffer_packets": 100},
            "flows": [{"id": "f0", "cc": "bbr3"}],
        });
        let cfg = crate::scenario::ScenarioConfig::resolve(&json.to_string()).expect("valid scenario");
        let rec = crate::scenario::World::new(cfg, None).expect("valid").run().recorder;
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
        assert!(goodput > 17.0 && goodput < 19.31, "goodput {goodput}");
        assert!(median > 40.0 && median < 50.0, "median RTT {median} ms");
        assert!(rec.retransmits.is_empty(), "2·BDP fits in the 100-packet buffer");
        let names: Vec<&str> = rec.cwnd.mode.iter().map(|&m| rec.mode_names[m as usize]).collect();
        for m in [
            "startup",
            "drain",
            "probe_bw_down",
            "probe_bw_cruise",
            "probe_bw_refill",
            "probe_bw_up",
            "probe_rtt",
        ] {
            assert!(names.contains(&m), "never in {m}");
        }
    }
}
