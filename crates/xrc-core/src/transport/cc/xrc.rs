//! XRC sender: explicit rate control driven by the base station's feedback.
//!
//! Reference: M. Kheirkhah, M. M. Kassem, G. Fairhurst, M. K. Marina,
//! "XRC: An Explicit Rate Control for Future Cellular Networks", IEEE ICC
//! 2022, §III-B. The agent half (capacity and HoL delay written into ACKs)
//! is `ran::agent`.
//!
//! The model, with the paper's equation numbers:
//!
//! ```text
//! (2)  twnd = R_exp · RTT_min                       target window
//! (3)  σ    = max( mean_j RTT_j − RTT_min , HoL_exp ) queuing delay, per window of data
//!      bottleneck = Internet  if HoL_exp ≤ λ and (mean RTT − RTT_min) − HoL_exp > λ
//!                   wireless  otherwise
//! ```
//!
//! State diagram (evaluated once per window of data, i.e. per round trip):
//!
//! ```text
//!            no feedback / stale ──────────────► Reno (standard TCP)
//!  feedback: cwnd < twnd, σ ≤ λ  ──────────────► Ramp    (reach twnd within `ramp_rtts` RTTs)
//!            cwnd ≥ twnd, σ ≤ λ  ──────────────► Probe   (+`probe_segments` per RTT)
//!            σ > λ, wireless     ── first round ► cwnd := twnd, then Hold (+probe per RTT)
//!                                ── N rounds    ► Unfair  (α large until σ ≤ λ or a loss)
//!            Internet bottleneck ──────────────► Internet (Reno AI, capped at twnd)
//!  any loss  ──────────────────────────────────► standard recovery (Reno ssthresh), then as above
//! ```
//!
//! Choices where the paper is silent, each a parameter:
//! 1. *Window of data* is a round: from a segment being sent until it is
//!    acknowledged (`snd_una` passes the `snd_nxt` recorded at the round's
//!    start). σ and the bottleneck location are re-evaluated at each round's
//!    end. HoL_exp is the mean of the HoL values received during the round,
//!    like the RTT term: a single HoL reading is dominated by the burst
//!    structure of the radio link (HARQ retransmissions stall RLC in-order
//!    delivery for 8 ms and release the ACKs in a burst), which would make
//!    the sender reset on noise.
//! 2. *Fast ramp "within 2 RTTs"*: at each round start the gap twnd − cwnd is
//!    measured and spread evenly over `ramp_rtts` rounds (α = gap / ramp_rtts
//!    segments per RTT), never overshooting twnd.
//! 3. *Slow probing* is one segment per RTT (`probe_segments`), Reno's rate.
//! 4. *Reset* sets cwnd to twnd when σ first exceeds λ; while σ stays above
//!    λ at a wireless bottleneck the sender keeps probing slowly, and after
//!    `unfair_after_rtts` (N = 10) such rounds enters the unfairness mode.
//!    The paper enters that mode "when XRC flow competes with non-XRC
//!    flows"; the sender cannot see them, so a round counts only if the
//!    sender was also *starved*: it delivered less than R_exp · RTT_min /
//!    (RTT_min + λ), what its explicit rate gives with a budget's worth of
//!    queue. A lone XRC flow whose σ sits above λ because of radio jitter
//!    (HARQ stalls, uplink grants) gets its rate and never turns unfair.
//! 5. *Unfairness mode*: α = `unfair_gain` × cwnd per RTT (1.0 = doubling,
//!    like slow start) until σ ≤ λ at a round end, or a loss.
//! 6. *Standard loss recovery*: ssthresh = max(cwnd/2, 2) (Reno) and the
//!    framework's SACK/PRR recovery; after recovery the ramp brings the
//!    window back to twnd.
//! 7. *Internet bottleneck*: Reno additive increase, capped at twnd.
//! 8. *No feedback*: before the first feedback, or when none has arrived for
//!    `feedback_timeout_ms`, the sender is Reno (slow start, AIMD).
//! 9. RTT_min is the smallest RTT sample since the connection started (the
//!    paper's definition), from the framework's per-ACK samples.
//! 10. *Instantaneous decrease* (§III: the sender "instantaneously
//!     increase\[s\]/decrease\[s\] its sending rate"): on every ACK, a window
//!     more than a budget's worth of data (R_exp · λ) above twnd is cut to
//!     twnd at once, so a capacity drop does not wait for the round's end.
//!     The unfairness mode is exempt.
//!
//! **Arithmetic.** The paper's sender (`xrc`) computes in integers, exactly as
//! its Linux port does (`crates/xrc-kernel/bpf/xrc.bpf.c`, a BPF program,
//! which has no floating point), so that the same ACKs give the same window
//! in both ([`int`]; the replay test of `xrc-kernel`):
//! - eq. (2), twnd = round(R · RTT_min / MSS), and the budget's worth of
//!   segments, ceil(R · λ / MSS), are exact integer quotients;
//! - choice 4's comparison, delivered < R · RTT_min / (RTT_min + λ) over the
//!   round, is made between two exact 128-bit products;
//! - window growth is carried in 2^-20 segments ([`int::FP_SHIFT`]), and the
//!   parameters `probe_segments`, `ramp_rtts` and `unfair_gain` are taken in
//!   2^-20 segments, thousandths and thousandths (rounded to the nearest).
//!
//! `xrc2`'s own rules keep their floating point (it runs in a real kernel
//! through the user-space shim, which runs this very code).
//!
//! `xrc2` (`cc::xrc2`) runs this sender with its own rule (`Rule::AirAware`)
//! and its window and pacing (`track`, `Mode::Track`); every such branch is
//! taken only when those are set, so the paper's sender is unchanged.

use serde::{Deserialize, Serialize};

use super::helpers::{cong_avoid_ai, reno_cong_avoid, reno_ssthresh};
use super::CcConfig;
use super::{AckSample, CaState, CongestionControl, ConnView, Feedback, Signals, Window};
use crate::units::{SimDuration, SimTime};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Queuing budget λ, ms (paper: 10 ms).
    pub budget_ms: f64,
    /// Round trips over which the ramp closes the gap to twnd (paper: 2).
    pub ramp_rtts: f64,
    /// Window growth per RTT while probing, segments (paper: one).
    pub probe_segments: f64,
    /// Rounds with σ > λ at a wireless bottleneck before the unfairness
    /// mode (paper: N = 10).
    pub unfair_after_rtts: u32,
    /// Growth per RTT in the unfairness mode, as a fraction of cwnd.
    pub unfair_gain: f64,
    /// Feedback older than this is ignored and the sender falls back to Reno.
    pub feedback_timeout_ms: f64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            budget_ms: 10.0,
            ramp_rtts: 2.0,
            probe_segments: 1.0,
            unfair_after_rtts: 10,
            unfair_gain: 1.0,
            feedback_timeout_ms: 1000.0,
        }
    }
}

impl CcConfig for Config {
    fn build(self, _stream: u64) -> Box<dyn super::CongestionControl> {
        Box::new(Xrc::new(self))
    }

    fn validate(&self) -> Result<(), String> {
        let pos = |n: &str, v: f64| {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(format!("{n} must be a positive number, got {v}"))
            }
        };
        crate::units::check_duration_ms("budget_ms", self.budget_ms, false)?;
        pos("ramp_rtts", self.ramp_rtts)?;
        pos("probe_segments", self.probe_segments)?;
        crate::units::check_range(
            "probe_segments",
            self.probe_segments,
            0.0,
            crate::transport::MAX_WINDOW_SEGMENTS as f64,
        )?;
        pos("unfair_gain", self.unfair_gain)?;
        crate::units::check_range("ramp_rtts", self.ramp_rtts, 0.001, 1000.0)?;
        crate::units::check_range("unfair_gain", self.unfair_gain, 0.001, 100.0)?;
        crate::units::check_duration_ms("feedback_timeout_ms", self.feedback_timeout_ms, false)?;
        Ok(())
    }
}

/// Where the sender believes the bottleneck is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Bottleneck {
    Wireless,
    Internet,
}

/// The sender's operating mode.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// No (fresh) feedback: standard TCP.
    Reno,
    /// cwnd below twnd: fast increase.
    Ramp,
    /// At or above twnd: one segment per RTT.
    Probe,
    /// σ above budget after a reset, counting rounds toward unfairness.
    Hold,
    /// Unfairness mode against loss-based competitors.
    Unfair,
    /// Internet bottleneck: Reno capped at twnd.
    Internet,
    /// `xrc2` at a wireless bottleneck: the window is the tracking window
    /// and pacing holds the queue at its target (`cc::xrc2`).
    Track,
}

#[derive(Clone, Debug, Default)]
struct RoundStats {
    sum_rtt_ns: u128,
    samples: u64,
    sum_hol_ns: u128,
    hol_samples: u64,
    sum_rate_bps: u128,
    /// `xrc2`: sum of the agent's air-delay field (zero where absent).
    sum_air_ns: u128,
    /// `xrc2` (deviation 12): the least HoL field of the round.
    min_hol: Option<SimDuration>,
    /// The most, for the swing `floor_swing` reads.
    max_hol: SimDuration,
    /// The least and the most rate field, for `floor_rate_swing`.
    min_rate: Option<u64>,
    max_rate: u64,
    start: SimTime,
    start_delivered: u64,
}

/// Which bottleneck-location rule the sender runs.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Rule {
    /// The paper's (§III-B), `xrc`.
    Paper,
    /// The end-to-end queuing delay less the agent's air-interface delay
    /// estimate, `xrc2` (see `cc::xrc2`).
    AirAware,
}

pub struct Xrc {
    cfg: Config,
    rule: Rule,
    /// `xrc2`: mean of the air-delay field over the last completed round
    /// with feedback (`None` before one).
    air_mean: Option<SimDuration>,
    budget: SimDuration,
    feedback_timeout: SimDuration,
    rate_bps: Option<u64>,
    /// Latest HoL delay received.
    hol: SimDuration,
    /// Mean HoL delay over the last completed round.
    hol_mean: SimDuration,
    /// `xrc2` (deviation 12): the least HoL delay of the last completed
    /// round (`None` before one).
    hol_least: Option<SimDuration>,
    /// `xrc2` (deviation 12): whether, in the last completed round, the
    /// HoL field swung (its most less its least) by `floor_swing` or more
    /// and the rate field by `floor_rate_swing` of its mean or more.
    hol_swung: bool,
    last_feedback: Option<SimTime>,
    min_rtt: Option<SimDuration>,
    round: RoundStats,
    round_end: u64,
    round_start_cwnd: u32,
    /// σ and its end-to-end part from the last completed round.
    sigma: Option<SimDuration>,
    sigma_e2e: Option<SimDuration>,
    bottleneck: Bottleneck,
    over_budget_rounds: u32,
    /// The last round delivered less than the explicit rate allows.
    starved: bool,
    mode: Mode,
    /// Fractional window growth carried between ACKs, segments (`xrc2`'s
    /// unfairness mode).
    credit: f64,
    /// The same for the paper's sender, segments × 2^20 ([`int`]).
    credit_fp: u64,
    /// Ramp speed, segments per RTT × 2^20, fixed while the ramp lasts.
    ramp_fp: u64,
    /// The connection's MSS, learned from the first view (for traces).
    mss_hint: u32,
    /// `xrc2`: the queue-tracking window and pacing; `None` for the paper's sender.
    track: Option<super::xrc2::Track>,
    /// `xrc2`: the latest air-delay field (zero without it).
    air: SimDuration,
    /// `xrc2` (deviation 9): calm rounds left before a competitor seen by
    /// a pulse is forgotten (0: none known).
    contended: u32,
    /// `xrc2` (deviation 9): rounds left in which the queue a pulse left
    /// behind drains at the HoL-reactive pace.
    draining: u32,
    /// `xrc2` (deviation 9): the most a pulse may raise cwnd to.
    pulse_limit: u32,
    /// `xrc2` (deviation 10): the latest buffer-room field (`None` without it).
    room: Option<u16>,
    /// `xrc2` (deviation 10): the room pulse under way, if any.
    room_pulse: Option<RoomPulse>,
    /// `xrc2` (deviation 11): rounds since the last pulse began (`u32::MAX`
    /// before the first).
    since_pulse: u32,
}

/// `xrc2` deviation 10: a burst of the buffer's free room, then a short
/// unpaced hold that keeps the buffer full.
#[derive(Copy, Clone, Debug, PartialEq)]
struct RoomPulse {
    /// When the burst was released.
    start: SimTime,
    /// When the hold ends; `None` until the burst is out.
    hold_end: Option<SimTime>,
}

impl Xrc {
    pub fn new(cfg: Config) -> Self {
        let budget = SimDuration::try_from_millis_f64(cfg.budget_ms).unwrap_or(SimDuration::from_millis(10));
        let feedback_timeout =
            SimDuration::try_from_millis_f64(cfg.feedback_timeout_ms).unwrap_or(SimDuration::from_secs(1));
        Xrc {
            cfg,
            rule: Rule::Paper,
            air_mean: None,
            budget,
            feedback_timeout,
            rate_bps: None,
            hol: SimDuration::ZERO,
            hol_mean: SimDuration::ZERO,
            hol_least: None,
            hol_swung: false,
            last_feedback: None,
            min_rtt: None,
            round: RoundStats::default(),
            round_end: 0,
            round_start_cwnd: 0,
            sigma: None,
            sigma_e2e: None,
            bottleneck: Bottleneck::Wireless,
            over_budget_rounds: 0,
            starved: false,
            mode: Mode::Reno,
            credit: 0.0,
            credit_fp: 0,
            ramp_fp: 0,
            mss_hint: 1448,
            track: None,
            air: SimDuration::ZERO,
            contended: 0,
            draining: 0,
            pulse_limit: u32::MAX,
            room: None,
            room_pulse: None,
            since_pulse: u32::MAX,
        }
    }

    /// `xrc2`'s sender: the air-aware rule (`cc::xrc2` deviations 1–3) and
    /// the queue-tracking window and pacing (deviations 4–8).
    pub(super) fn with_track(cfg: Config, track: super::xrc2::Track) -> Self {
        Xrc {
            rule: Rule::AirAware,
            track: Some(track),
            ..Xrc::new(cfg)
        }
    }

    /// `xrc2`: the round trip of a packet that meets no queue, RTT_min + A,
    /// A the last round's mean air-delay field (the latest field before a
    /// round has ended; zero without the field).
    fn base_rtt(&self) -> Option<SimDuration> {
        Some(self.min_rtt? + self.air_mean.unwrap_or(self.air))
    }

    /// `xrc2`: the tracking window W, segments (`cc::xrc2` deviation 4).
    fn track_window(&self, mss: u32) -> Option<u32> {
        let t = self.track.as_ref()?;
        let base = self.base_rtt()?;
        if self.contended > 0 {
            // Deviation 9: the share R must fit through the queue the
            // competitor keeps, not only the room W leaves for one.
            return Some(t.contended_window(self.rate_bps?, base, self.hol_mean.max(self.hol), mss));
        }
        Some(t.window(self.rate_bps?, base, mss))
    }

    /// `xrc2` deviation 10, on every ACK with feedback: the burst is out
    /// once an ACK after the one that raised cwnd arrives (the sender sent
    /// it behind that ACK) or the window is full; the pulse then ends (a competitor is known) and
    /// for `pulse_hold` the sender is unpaced and its window grows by one
    /// segment an ACK (two segments out per ACK, a slow start's pace), so
    /// the buffer stays full long enough for the competitor's packets,
    /// which arrive behind the same TTIs' ACKs, to meet it full.
    fn advance_room_pulse(&mut self, now: SimTime, w: &mut Window, c: &ConnView) {
        let (Some(p), Some(t)) = (self.room_pulse, self.track.as_ref()) else {
            return;
        };
        match p.hold_end {
            None if now > p.start || c.packets_in_flight >= self.pulse_limit => {
                self.room_pulse = Some(RoomPulse {
                    hold_end: Some(now + t.pulse_hold),
                    ..p
                });
                self.contended = t.contend_memory;
                self.draining = 0;
                self.over_budget_rounds = 0;
                self.mode = Mode::Track;
            }
            Some(end) if now >= end => self.room_pulse = None,
            Some(_) => w.cwnd = w.cwnd.saturating_add(1).min(w.cwnd_clamp),
            None => {}
        }
    }

    /// `xrc2` deviation 10: in a room pulse (its burst or its hold).
    fn in_room_pulse(&self) -> bool {
        self.room_pulse.is_some()
    }

    /// `xrc2`: a competitor was seen recently (deviation 9).
    pub fn contended(&self) -> bool {
        self.contended > 0
    }

    /// `xrc2`: the window follows W on every ACK (deviation 4).
    fn follow_track(&self, w: &mut Window, mss: u32) {
        if let Some(t) = self.track_window(mss) {
            w.cwnd = t.min(w.cwnd_clamp);
            w.cwnd_cnt = 0;
        }
    }

    /// Eq. (2): twnd = R_exp · RTT_min, in segments of `mss` bytes.
    pub fn target_window(&self, mss: u32) -> Option<u32> {
        Some(int::target_window(self.rate_bps?, self.min_rtt?.as_nanos(), mss))
    }
    fn target_window_f64(&self) -> Option<f64> {
        let r = self.rate_bps? as f64;
        let rtt = self.min_rtt?.as_secs_f64();
        Some(r / 8.0 * rtt / self.mss_hint as f64)
    }

    pub fn sigma(&self) -> Option<SimDuration> {
        self.sigma
    }
    pub fn bottleneck(&self) -> Bottleneck {
        self.bottleneck
    }
    pub fn current_mode(&self) -> Mode {
        self.mode
    }
    pub fn explicit_rate_bps(&self) -> Option<u64> {
        self.rate_bps
    }

    /// The explicit rate times the budget, in segments: the queue XRC allows itself.
    fn budget_segments(&self, mss: u32) -> u32 {
        int::budget_segments(self.rate_bps.unwrap_or(0), self.budget.as_nanos(), mss)
    }

    fn feedback_fresh(&self, now: SimTime) -> bool {
        self.last_feedback
            .is_some_and(|t| now.saturating_since(t) <= self.feedback_timeout)
    }

    /// Ends the current round if `snd_una` passed its end: evaluates eq. (3)
    /// and the bottleneck location, and moves between modes.
    fn maybe_end_round(&mut self, w: &mut Window, c: &ConnView) {
        if c.snd_una < self.round_end {
            return;
        }
        self.starved = false;
        if self.round.samples > 0 {
            if let Some(min) = self.min_rtt {
                // Choice 4: the sender is starved when it delivered less than
                // its explicit rate allows with a budget's worth of queue
                // ahead of it: R · RTT_min / (RTT_min + λ).
                let span = c.now.saturating_since(self.round.start);
                if self.round.hol_samples > 0 && !span.is_zero() {
                    let r_exp = (self.round.sum_rate_bps / self.round.hol_samples as u128) as f64;
                    let delivered = c.delivered.saturating_sub(self.round.start_delivered);
                    self.starved = match self.rule {
                        Rule::Paper => int::starved(
                            delivered * c.mss as u64 * 8,
                            min.as_nanos(),
                            self.budget.as_nanos(),
                            r_exp as u64,
                            span.as_nanos(),
                        ),
                        Rule::AirAware => {
                            let got = delivered as f64 * c.mss as f64 * 8.0 / span.as_secs_f64();
                            let share = min.as_secs_f64() / (min.as_secs_f64() + self.budget.as_secs_f64());
                            got < r_exp * share
                        }
                    };
                }
                let mean = (self.round.sum_rtt_ns / self.round.samples as u128) as u64;
                let e2e = SimDuration::from_nanos(mean.saturating_sub(min.as_nanos()));
                let hol = if self.round.hol_samples > 0 {
                    SimDuration::from_nanos((self.round.sum_hol_ns / self.round.hol_samples as u128) as u64)
                } else {
                    self.hol
                };
                // `xrc2`: the radio link's own delay is not a queue.
                let e2e = match self.rule {
                    Rule::Paper => e2e,
                    Rule::AirAware => {
                        let air = if self.round.hol_samples > 0 {
                            SimDuration::from_nanos((self.round.sum_air_ns / self.round.hol_samples as u128) as u64)
                        } else {
                            self.air_mean.unwrap_or(SimDuration::ZERO)
                        };
                        self.air_mean = Some(air);
                        e2e.saturating_sub(air)
                    }
                };
                self.sigma_e2e = Some(e2e);
                self.hol_mean = hol;
                self.hol_least = self.round.min_hol;
                self.hol_swung = match (&self.track, self.round.min_hol, self.round.min_rate) {
                    (Some(t), Some(least), Some(least_rate)) => {
                        let mean = (self.round.sum_rate_bps / self.round.hol_samples as u128) as f64;
                        let rate_swing = (self.round.max_rate - least_rate) as f64 / mean.max(1.0);
                        self.round.max_hol.saturating_sub(least) >= t.floor_swing && rate_swing >= t.floor_rate_swing
                    }
                    _ => false,
                };
                // Eq. (3).
                self.sigma = Some(e2e.max(hol));
                // Bottleneck location (§III-B).
                self.bottleneck = if hol <= self.budget && e2e.saturating_sub(hol) > self.budget {
                    Bottleneck::Internet
                } else {
                    Bottleneck::Wireless
                };
            }
        }
        self.round = RoundStats {
            start: c.now,
            start_delivered: c.delivered,
            ..RoundStats::default()
        };
        self.round_end = c.snd_nxt;
        self.round_start_cwnd = w.cwnd;
        if self.feedback_fresh(c.now) {
            self.update_mode(w, c);
        } else {
            self.mode = Mode::Reno;
            self.over_budget_rounds = 0;
        }
    }

    fn update_mode(&mut self, w: &mut Window, c: &ConnView) {
        let Some(twnd) = self.target_window(c.mss) else {
            self.mode = Mode::Reno;
            return;
        };
        let over = self.sigma.is_some_and(|s| s > self.budget);
        if self.bottleneck == Bottleneck::Internet {
            self.over_budget_rounds = 0;
            self.mode = Mode::Internet;
            return;
        }
        if let Some(t) = &self.track {
            // `xrc2` (deviation 4): no ramp, probe, hold or reset; the
            // unfairness mode is entered and left as in choice 4, or
            // (deviation 9) after `contend_trigger` rounds over budget,
            // starved or not, while a competitor is known.
            let known = self.contended > 0;
            // Deviation 11: within `regrow_rounds` of the last pulse only σ
            // above `pulse_level` · λ counts towards the next one.
            self.since_pulse = self.since_pulse.saturating_add(1);
            // Deviation 13 (xrc2): never below `unfair_floor`.
            let level = if self.since_pulse <= t.regrow_rounds {
                t.pulse_level
            } else {
                self.budget
            }
            .max(t.unfair_floor);
            let over_pulse = self.sigma.is_some_and(|s| s > level);
            if over_pulse && (self.starved || known) {
                self.over_budget_rounds += 1;
            } else {
                self.over_budget_rounds = 0;
            }
            // Deviation 10: the room field says the UE's buffer is shared,
            // so starved rounds over budget need not wait for N, and a
            // pulse comes after `room_trigger` rounds.
            let shared = t.room_pulse && self.room.is_some();
            let need = match (known, shared) {
                (_, true) => t.room_trigger,
                (true, false) => t.contend_trigger,
                (false, false) => self.cfg.unfair_after_rtts,
            };
            let was = self.mode;
            self.mode = if self.over_budget_rounds > need || (was == Mode::Unfair && self.over_budget_rounds > 0) {
                Mode::Unfair
            } else {
                Mode::Track
            };
            if self.mode == Mode::Unfair && was != Mode::Unfair {
                self.since_pulse = 0;
                // Deviation 9: one round's growth at `unfair_gain`, then
                // hold: enough to fill the buffer the competitor keeps
                // near its budget, not a slow start that overshoots for
                // the round trip the loss takes to be seen.
                let gain = self.cfg.unfair_gain.min(t.pulse_gain_cap);
                self.pulse_limit = (w.cwnd as f64 * (1.0 + gain)).ceil() as u32;
                if let (true, Some(room)) = (t.room_pulse, self.room) {
                    // Deviation 10: release the room the agent reports
                    // (and `room_margin`) at once.
                    self.pulse_limit = c.packets_in_flight.saturating_add(room as u32 + t.room_margin).max(2);
                    w.cwnd = self.pulse_limit.min(w.cwnd_clamp);
                    w.cwnd_cnt = 0;
                    self.room_pulse = Some(RoomPulse {
                        start: c.now,
                        hold_end: None,
                    });
                }
            }
            self.draining = self.draining.saturating_sub(1);
            if !over {
                self.contended = self.contended.saturating_sub(1);
            }
            let _ = twnd;
            return;
        }
        if over {
            if self.starved {
                self.over_budget_rounds += 1;
            } else {
                self.over_budget_rounds = 0;
                if self.mode == Mode::Unfair {
                    self.mode = Mode::Probe; // got its share: leave, reset below
                }
            }
            match self.mode {
                Mode::Unfair => {}
                _ if self.over_budget_rounds > self.cfg.unfair_after_rtts => {
                    self.mode = Mode::Unfair;
                }
                Mode::Hold => {}
                _ => {
                    // Reset to the target window (§III-B, congestion avoidance).
                    w.cwnd = twnd.min(w.cwnd_clamp);
                    w.cwnd_cnt = 0;
                    self.credit = 0.0;
                    self.credit_fp = 0;
                    self.round_start_cwnd = w.cwnd;
                    self.mode = Mode::Hold;
                }
            }
        } else {
            self.over_budget_rounds = 0;
            if w.cwnd < twnd {
                // Choice 2: spread the gap over `ramp_rtts` rounds; keep the
                // speed while the ramp lasts so it ends on time, and speed up
                // if the target moved away.
                let needed = int::ramp(twnd - w.cwnd, int::milli(self.cfg.ramp_rtts));
                let keep = if self.mode == Mode::Ramp { self.ramp_fp } else { 0 };
                self.ramp_fp = needed.max(keep).max(int::fp(self.cfg.probe_segments));
                self.mode = Mode::Ramp;
            } else {
                self.mode = Mode::Probe;
            }
        }
    }

    /// Adds `per_rtt_fp` segments × 2^20 per round trip, spread over the
    /// ACKs of the round (as many as the window at the round's start), in
    /// the integers of [`int`].
    fn grow_fp(&mut self, w: &mut Window, per_rtt_fp: u64, acked: u32) {
        self.credit_fp = self
            .credit_fp
            .saturating_add(int::credit(per_rtt_fp, acked, self.round_start_cwnd.max(1)));
        let whole = self.credit_fp >> int::FP_SHIFT;
        if whole > 0 {
            self.credit_fp -= whole << int::FP_SHIFT;
            w.cwnd = (w.cwnd as u64 + whole).min(w.cwnd_clamp as u64) as u32;
        }
    }

    /// The same in floating point (`xrc2`'s unfairness mode).
    fn grow(&mut self, w: &mut Window, per_rtt: f64, acked: u32) {
        let acks_per_round = self.round_start_cwnd.max(1) as f64;
        self.credit += per_rtt * acked as f64 / acks_per_round;
        if self.credit >= 1.0 {
            let whole = self.credit.floor();
            self.credit -= whole;
            w.cwnd = w.cwnd.saturating_add(whole as u32).min(w.cwnd_clamp);
        }
    }
}

/// The paper's sender's integer arithmetic, the same expressions as its BPF
/// port's (`crates/xrc-kernel/bpf/xrc.bpf.c`, which computes the 128-bit
/// ones by 32-bit limbs: `bpf/wide.h`). Rates are bit/s, times nanoseconds.
pub mod int {
    /// Window credit and `probe_segments` are segments × 2^FP_SHIFT.
    pub const FP_SHIFT: u32 = 20;

    /// `x` segments in 2^-20 segments, rounded to the nearest.
    pub fn fp(x: f64) -> u64 {
        (x * (1u64 << FP_SHIFT) as f64).round() as u64
    }

    /// `x` in thousandths, rounded to the nearest (at least one).
    pub fn milli(x: f64) -> u32 {
        ((x * 1000.0).round() as u32).max(1)
    }

    /// Eq. (2): round(R · t / (8 · mss)) segments for R bit/s and t ns,
    /// at least 2; u32::MAX if it does not fit.
    pub fn target_window(rate_bps: u64, min_rtt_ns: u64, mss: u32) -> u32 {
        let den = 16_000_000_000u128 * mss.max(1) as u128;
        let num = 2 * rate_bps as u128 * min_rtt_ns as u128 + den / 2;
        (num / den).clamp(2, u32::MAX as u128) as u32
    }

    /// ceil(R · λ / (8 · mss)) segments; u32::MAX if it does not fit.
    pub fn budget_segments(rate_bps: u64, budget_ns: u64, mss: u32) -> u32 {
        let den = 8_000_000_000u128 * mss.max(1) as u128;
        (rate_bps as u128 * budget_ns as u128)
            .div_ceil(den)
            .min(u32::MAX as u128) as u32
    }

    /// Choice 4: the round delivered `bits` in `span_ns`, less than the
    /// explicit rate `r_exp` allows with a budget's worth of queue ahead,
    /// r_exp · min / (min + λ): bits · (min + λ) · 10^9 < r_exp · min · span,
    /// each side saturating at 2^128 − 1.
    pub fn starved(bits: u64, min_rtt_ns: u64, budget_ns: u64, r_exp: u64, span_ns: u64) -> bool {
        let lhs = (bits as u128 * (min_rtt_ns + budget_ns) as u128).saturating_mul(1_000_000_000);
        let rhs = (r_exp as u128 * min_rtt_ns as u128).saturating_mul(span_ns as u128);
        lhs < rhs
    }

    /// Choice 2: a gap of `gap` segments closed over `ramp_milli` / 1000
    /// round trips, in segments per round trip × 2^20.
    pub fn ramp(gap: u32, ramp_milli: u32) -> u64 {
        ((gap as u64) << FP_SHIFT) * 1000 / ramp_milli.max(1) as u64
    }

    /// Choice 5: `gain_milli` / 1000 of the round's starting window per
    /// round trip, × 2^20.
    pub fn unfair(gain_milli: u32, round_start_cwnd: u32) -> u64 {
        ((gain_milli as u64 * round_start_cwnd as u64) << FP_SHIFT) / 1000
    }

    /// Credit earned by one ACK: per_rtt · acked / acks (floor, saturating).
    pub fn credit(per_rtt_fp: u64, acked: u32, acks: u32) -> u64 {
        (per_rtt_fp as u128 * acked as u128 / acks.max(1) as u128).min(u64::MAX as u128) as u64
    }
}

impl CongestionControl for Xrc {
    fn name(&self) -> &'static str {
        match self.rule {
            Rule::Paper => "xrc",
            Rule::AirAware => "xrc2",
        }
    }

    fn signals(&self) -> Signals {
        Signals {
            xrc_air: self.rule == Rule::AirAware,
            ..Signals::default()
        }
    }

    fn ssthresh(&mut self, _now: SimTime, w: &Window, c: &ConnView) -> u32 {
        if self.contended > 0 {
            // `xrc2` deviation 9: a loss in a queue a competitor keeps full
            // is not this sender's excess; it keeps its share's window.
            if let Some(t) = self.track_window(c.mss) {
                return reno_ssthresh(w).max(t.min(w.cwnd_clamp));
            }
        }
        reno_ssthresh(w)
    }

    fn set_state(&mut self, _now: SimTime, _w: &mut Window, _c: &ConnView, new: CaState) {
        if matches!(new, CaState::Recovery | CaState::Loss) {
            let pulse = self.mode == Mode::Unfair;
            // A loss ends the unfairness mode (the competitors got their signal).
            if self.mode == Mode::Unfair {
                self.mode = if let Some(t) = &self.track {
                    // Deviation 9: the pulse found a competitor that
                    // answers losses; remember it, and let the queue the
                    // pulse left drain before holding the share.
                    self.contended = t.contend_memory;
                    self.draining = t.drain_rounds;
                    Mode::Track
                } else {
                    Mode::Hold
                };
            }
            // `xrc2` (deviation 9) counts on through a loss outside a
            // pulse: a competitor that keeps the buffer full drops a
            // packet every round, and the count would never reach N.
            if self.track.is_none() || pulse {
                self.over_budget_rounds = 0;
            }
            self.credit = 0.0;
            self.credit_fp = 0;
        }
    }

    fn pkts_acked(&mut self, _now: SimTime, _w: &mut Window, _c: &ConnView, s: &AckSample) {
        if let Some(r) = s.rtt {
            self.min_rtt = Some(self.min_rtt.map_or(r, |m| m.min(r)));
            self.round.sum_rtt_ns += r.as_nanos() as u128;
            self.round.samples += 1;
        }
    }

    fn on_feedback(&mut self, now: SimTime, w: &mut Window, c: &ConnView, fb: &Feedback) {
        let Feedback::Xrc(x) = fb else { return };
        self.mss_hint = c.mss;
        self.rate_bps = Some(x.rate_bps);
        self.hol = x.hol;
        self.round.sum_hol_ns += x.hol.as_nanos() as u128;
        self.round.min_hol = Some(self.round.min_hol.map_or(x.hol, |m| m.min(x.hol)));
        self.round.max_hol = self.round.max_hol.max(x.hol);
        self.round.min_rate = Some(self.round.min_rate.map_or(x.rate_bps, |m| m.min(x.rate_bps)));
        self.round.max_rate = self.round.max_rate.max(x.rate_bps);
        self.round.sum_rate_bps += x.rate_bps as u128;
        if let Some(a) = x.air {
            self.round.sum_air_ns += a.as_nanos() as u128;
            self.air = a;
        }
        self.round.hol_samples += 1;
        self.last_feedback = Some(now);
        self.room = x.room;
        if self.track.is_some() {
            self.advance_room_pulse(now, w, c);
            // `xrc2` (deviation 4): the window follows W, down at once.
            if self.mode == Mode::Track && !self.in_room_pulse() {
                self.follow_track(w, c.mss);
            }
            return;
        }
        // Choice 10: never more than a budget's worth of data above target.
        if !matches!(self.mode, Mode::Unfair | Mode::Reno) {
            if let (Some(twnd), Some(min)) = (self.target_window(c.mss), self.min_rtt) {
                let _ = min;
                let slack = self.budget_segments(c.mss);
                if w.cwnd > twnd.saturating_add(slack) {
                    w.cwnd = twnd.min(w.cwnd_clamp);
                    w.cwnd_cnt = 0;
                    self.credit = 0.0;
                    self.credit_fp = 0;
                    self.round_start_cwnd = w.cwnd;
                    self.mode = Mode::Hold;
                }
            }
        }
    }

    fn cong_avoid(&mut self, now: SimTime, w: &mut Window, c: &ConnView, acked: u32) {
        self.maybe_end_round(w, c);
        if !self.feedback_fresh(now) {
            self.mode = Mode::Reno;
        }
        // `xrc2` caps its Internet mode at W (deviation 4).
        let twnd = if self.track.is_some() {
            self.track_window(c.mss)
        } else {
            self.target_window(c.mss)
        };
        let (Some(twnd), false) = (twnd, self.mode == Mode::Reno) else {
            reno_cong_avoid(w, c, acked);
            // Leave Reno as soon as feedback and an RTT sample exist.
            if self.feedback_fresh(now) && self.target_window(c.mss).is_some() {
                self.update_mode(w, c);
            }
            return;
        };
        // `xrc2`'s window is a bound set from W, not grown by ACKs.
        if !c.is_cwnd_limited && self.mode != Mode::Track {
            return;
        }
        match self.mode {
            Mode::Reno => unreachable!("handled above"),
            Mode::Ramp => {
                if w.cwnd >= twnd {
                    self.mode = Mode::Probe;
                    self.grow_fp(w, int::fp(self.cfg.probe_segments), acked);
                } else {
                    self.grow_fp(w, self.ramp_fp, acked);
                    w.cwnd = w.cwnd.min(twnd);
                }
            }
            Mode::Probe | Mode::Hold => self.grow_fp(w, int::fp(self.cfg.probe_segments), acked),
            Mode::Track | Mode::Unfair if self.in_room_pulse() => {}
            Mode::Track => self.follow_track(w, c.mss),
            Mode::Unfair if self.track.is_none() => {
                let per_rtt = int::unfair(int::milli(self.cfg.unfair_gain), self.round_start_cwnd);
                self.grow_fp(w, per_rtt, acked);
            }
            Mode::Unfair => {
                let per_rtt = self.cfg.unfair_gain * self.round_start_cwnd as f64;
                self.grow(w, per_rtt, acked);
                if let Some(t) = &self.track {
                    // `xrc2` deviation 9: the pulse ends when its window is
                    // out, not a round trip later when its loss is seen.
                    w.cwnd = w.cwnd.min(self.pulse_limit.max(2));
                    if w.cwnd >= self.pulse_limit {
                        self.contended = t.contend_memory;
                        self.draining = t.drain_rounds;
                        self.over_budget_rounds = 0;
                        self.mode = Mode::Track;
                    }
                }
            }
            Mode::Internet => {
                if w.cwnd < twnd {
                    let cwnd = w.cwnd;
                    if w.in_slow_start() {
                        reno_cong_avoid(w, c, acked);
                    } else {
                        cong_avoid_ai(w, cwnd, acked);
                    }
                    w.cwnd = w.cwnd.min(twnd);
                }
            }
        }
    }

    fn target_window(&self) -> Option<f64> {
        if self.track.is_some() {
            return self.track_window(self.mss_hint).map(|t| t as f64);
        }
        self.target_window_f64()
    }

    /// `xrc2` paces (deviation 5) at a wireless or Internet bottleneck; the
    /// paper's sender, and `xrc2` without feedback or in the unfairness
    /// mode, does not.
    fn pacing_rate(&self) -> Option<crate::units::BitRate> {
        let t = self.track.as_ref()?;
        if !matches!(self.mode, Mode::Track | Mode::Internet) || self.in_room_pulse() {
            return None;
        }
        // Deviation 9: while a competitor is known and the pulse's queue
        // has drained, the sender does not yield below its share.
        let floor = if self.contended > 0 && self.draining == 0 {
            t.share_floor
        } else {
            super::xrc2::GAIN_MIN
        };
        // Deviation 12: the standing part of the queue, the least HoL of
        // the last round, unless the latest is lower; only after a round
        // in which the HoL and the rate swung (`hol_swung`), and while the
        // UE's queue is the flow's alone.
        let alone = self.room.is_none() && self.contended == 0;
        let hol = match (t.hol_floor, self.hol_least) {
            (true, Some(least)) if self.hol_swung && alone => least.min(self.hol),
            _ => self.hol,
        };
        Some(t.pacing(self.rate_bps?, hol, self.base_rtt()?, self.mss_hint, floor))
    }

    fn queuing_delay(&self) -> Option<SimDuration> {
        self.sigma
    }

    fn mode(&self) -> &'static str {
        match self.mode {
            Mode::Reno => "reno",
            Mode::Ramp => "ramp",
            Mode::Probe => "probe",
            Mode::Hold => "hold",
            Mode::Unfair => "unfair",
            Mode::Internet => "internet",
            Mode::Track => "track",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::XrcOption;
    use crate::transport::cc::CaState;

    use crate::transport::cc::testkit::MSS;

    fn view(now: SimTime, snd_una: u64, snd_nxt: u64) -> ConnView {
        ConnView {
            now,
            mss: MSS,
            snd_una,
            snd_nxt,
            packets_out: 0,
            packets_in_flight: 0,
            srtt: None,
            min_rtt: None,
            delivered: snd_una / MSS as u64,
            ca_state: CaState::Open,
            is_cwnd_limited: true,
            app_limited: false,
            ..ConnView::default()
        }
    }

    /// Drives `rounds` round trips of `rtt` with feedback (rate, HoL) on
    /// every ACK, one ACK per segment.
    struct Harness {
        x: Xrc,
        w: Window,
        now: SimTime,
        seq: u64,
    }

    impl Harness {
        fn new() -> Self {
            let mut w = Window::new(10);
            w.ssthresh = super::super::INFINITE_SSTHRESH;
            Harness {
                x: Xrc::new(Config::default()),
                w,
                now: SimTime::ZERO,
                seq: 0,
            }
        }
        fn round(&mut self, rtt_ms: u64, rate_mbps: f64, hol_ms: u64) {
            let n = self.w.cwnd;
            let end = self.seq + n as u64 * MSS as u64;
            self.now += SimDuration::from_millis(rtt_ms);
            for i in 0..n {
                self.seq += MSS as u64;
                let c = view(self.now, self.seq, end + (i as u64 + 1) * MSS as u64);
                let fb = Feedback::Xrc(XrcOption {
                    rate_bps: (rate_mbps * 1e6) as u64,
                    hol: SimDuration::from_millis(hol_ms),
                    air: None,
                    room: None,
                });
                self.x.on_feedback(self.now, &mut self.w, &c, &fb);
                let s = AckSample {
                    pkts_acked: 1,
                    rtt: Some(SimDuration::from_millis(rtt_ms)),
                    in_flight: n,
                };
                self.x.pkts_acked(self.now, &mut self.w, &c, &s);
                self.x.cong_avoid(self.now, &mut self.w, &c, 1);
            }
        }
    }

    #[test]
    fn target_window_is_rate_times_min_rtt_in_segments() {
        let mut x = Xrc::new(Config::default());
        x.rate_bps = Some(30_000_000);
        x.min_rtt = Some(SimDuration::from_millis(38));
        // 30e6/8 * 0.038 = 142500 bytes = 98.4 segments of 1448 bytes.
        assert_eq!(x.target_window(MSS), Some(98));
    }

    #[test]
    fn the_window_reaches_the_target_within_two_round_trips_of_feedback() {
        let mut h = Harness::new();
        // 30 Mbit/s, 38 ms: twnd = 98 segments.
        h.round(38, 30.0, 0); // first samples: leaves Reno
        let start = h.w.cwnd;
        assert!(start < 98, "still below target after one round: {start}");
        h.round(38, 30.0, 0);
        h.round(38, 30.0, 0);
        assert!(h.w.cwnd >= 96, "cwnd {} after two ramp rounds", h.w.cwnd);
        assert!(h.w.cwnd <= 99, "the ramp does not overshoot: {}", h.w.cwnd);
    }

    #[test]
    fn above_the_target_the_window_probes_one_segment_per_round_trip() {
        let mut h = Harness::new();
        for _ in 0..4 {
            h.round(38, 30.0, 0);
        }
        let before = h.w.cwnd;
        h.round(38, 30.0, 0);
        h.round(38, 30.0, 0);
        assert_eq!(h.x.current_mode(), Mode::Probe);
        assert!(
            (h.w.cwnd as i64 - before as i64 - 2).abs() <= 1,
            "{before} -> {}",
            h.w.cwnd
        );
    }

    #[test]
    fn queuing_delay_above_the_budget_resets_the_window_to_the_target() {
        let mut h = Harness::new();
        for _ in 0..4 {
            h.round(38, 30.0, 0);
        }
        h.w.cwnd = 150; // as if probing had overshot
        h.round(38, 30.0, 25); // HoL 25 ms > 10 ms budget
        h.round(38, 30.0, 25); // round end evaluates σ
        assert_eq!(h.x.current_mode(), Mode::Hold);
        assert!(h.w.cwnd <= 100, "reset to twnd (98), got {}", h.w.cwnd);
    }

    #[test]
    fn persistent_queuing_at_the_wireless_hop_enters_the_unfairness_mode_after_n_rounds() {
        let mut h = Harness::new();
        for _ in 0..4 {
            h.round(38, 30.0, 0);
        }
        // A competitor holds 40 ms of queue: the RTT is 80 ms, the HoL 40 ms,
        // and the explicit share halves to 15 Mbit/s.
        for _ in 0..10 {
            h.round(80, 15.0, 40);
            assert_ne!(h.x.current_mode(), Mode::Unfair);
        }
        // A round is judged when it ends (one round late), and the round in
        // which the window was cut to the new target delivered at the old
        // rate, so it does not count as starved.
        for _ in 0..3 {
            h.round(80, 15.0, 40);
        }
        assert_eq!(h.x.current_mode(), Mode::Unfair);
        let before = h.w.cwnd;
        h.round(80, 15.0, 40);
        assert!(
            h.w.cwnd >= before * 2 - 1,
            "unfair mode doubles per RTT: {before} -> {}",
            h.w.cwnd
        );
    }

    #[test]
    fn a_lone_flow_above_budget_from_jitter_that_gets_its_rate_never_turns_unfair() {
        let mut h = Harness::new();
        for _ in 0..4 {
            h.round(38, 30.0, 0);
        }
        // σ = 12 ms of jitter: above budget, but probing soon delivers the rate.
        for _ in 0..40 {
            h.round(50, 30.0, 12);
            assert_ne!(h.x.current_mode(), Mode::Unfair);
        }
    }

    #[test]
    fn a_capacity_drop_cuts_the_window_to_the_new_target_on_the_next_ack() {
        let mut h = Harness::new();
        for _ in 0..4 {
            h.round(38, 30.0, 0);
        }
        assert!(h.w.cwnd >= 98);
        let c = view(h.now, h.seq, h.seq);
        let fb = Feedback::Xrc(XrcOption {
            rate_bps: 6_000_000,
            hol: SimDuration::from_millis(3),
            air: None,
            room: None,
        });
        h.x.on_feedback(h.now, &mut h.w, &c, &fb);
        // 6 Mbit/s · 38 ms = 19.7 segments.
        assert_eq!(h.w.cwnd, 20);
    }

    #[test]
    fn end_to_end_delay_without_hol_delay_means_an_internet_bottleneck() {
        let mut h = Harness::new();
        h.round(38, 30.0, 0);
        for _ in 0..3 {
            h.round(38, 30.0, 0);
        }
        // RTT grows by 30 ms while the RLC HoL stays at 1 ms.
        h.round(68, 30.0, 1);
        h.round(68, 30.0, 1);
        assert_eq!(h.x.bottleneck(), Bottleneck::Internet);
        assert_eq!(h.x.current_mode(), Mode::Internet);
    }

    #[test]
    fn without_feedback_xrc_is_reno() {
        let mut x = Xrc::new(Config::default());
        let mut w = Window::new(10);
        let c = view(SimTime::ZERO, 0, 0);
        x.cong_avoid(SimTime::ZERO, &mut w, &c, 5);
        assert_eq!(w.cwnd, 15, "slow start");
        assert_eq!(x.current_mode(), Mode::Reno);
    }

    #[test]
    fn a_loss_halves_the_window_like_reno() {
        let mut x = Xrc::new(Config::default());
        let w = Window {
            cwnd: 80,
            ..Window::new(10)
        };
        assert_eq!(x.ssthresh(SimTime::ZERO, &w, &view(SimTime::ZERO, 0, 0)), 40);
    }

    #[test]
    fn the_integer_rules_give_what_the_real_valued_formulas_give_away_from_a_tie() {
        // The paper's formulas in reals, against xrc's integers, on random
        // rates (kbit/s, as the option carries them), RTTs (whole µs, as
        // the kernel measures them), budgets and segment sizes.
        let mut rng = crate::engine::rng::Rng::from_seed(7);
        let mut checked = 0;
        for _ in 0..200_000 {
            let r = (1 + rng.next_u64() % 2_000_000) * 1000;
            let t = (100 + rng.next_u64() % 2_000_000) * 1000;
            let lambda = (1 + rng.next_u64() % 100) * 1_000_000;
            let mss = 500 + (rng.next_u64() % 8500) as u32;
            let twnd = r as f64 / 8.0 * (t as f64 * 1e-9) / mss as f64;
            let slack = r as f64 / 8.0 * (lambda as f64 * 1e-9) / mss as f64;
            if (twnd - twnd.floor() - 0.5).abs() > 1e-6 {
                assert_eq!(
                    int::target_window(r, t, mss),
                    (twnd.round() as u32).max(2),
                    "{r} {t} {mss}"
                );
            }
            if (slack - slack.round()).abs() > 1e-6 {
                assert_eq!(
                    int::budget_segments(r, lambda, mss),
                    slack.ceil() as u32,
                    "{r} {lambda} {mss}"
                );
            }
            let bits = rng.next_u64() % (r / 4);
            let span = (1 + rng.next_u64() % 500) * 1_000_000;
            let got = bits as f64 / (span as f64 * 1e-9);
            let share = r as f64 * t as f64 / (t + lambda) as f64;
            if (got - share).abs() > 1e-6 * share {
                assert_eq!(int::starved(bits, t, lambda, r, span), got < share);
                checked += 1;
            }
        }
        assert!(checked > 190_000);
    }

    #[test]
    fn the_starved_test_saturates_rather_than_wraps_at_128_bits() {
        // Both sides past 2^128: each saturates, and equal sides are not "less".
        assert!(!int::starved(u64::MAX, u64::MAX / 2, u64::MAX / 2, u64::MAX, u64::MAX));
        // The right side alone past 2^128: starved.
        assert!(int::starved(1, 1, 0, u64::MAX, u64::MAX));
    }

    #[test]
    fn window_credit_in_fixed_point_adds_a_segment_per_round_trip_when_probing() {
        let mut h = Harness::new();
        for _ in 0..6 {
            h.round(38, 30.0, 0);
        }
        assert_eq!(h.x.current_mode(), Mode::Probe);
        let before = h.w.cwnd;
        for _ in 0..10 {
            h.round(38, 30.0, 0);
        }
        // One segment per round, credited ACK by ACK in 2^-20 segments.
        assert!(
            (h.w.cwnd as i64 - before as i64 - 10).abs() <= 1,
            "{before} -> {}",
            h.w.cwnd
        );
        assert_eq!(int::fp(1.0), 1 << 20);
        assert_eq!(
            int::credit(1 << 20, 1, 3) * 3,
            (1 << 20) - 1,
            "floored, never rounded up"
        );
    }

    #[test]
    fn bad_parameters_are_rejected_by_name() {
        let c = Config {
            budget_ms: -1.0,
            ..Config::default()
        };
        assert!(c.validate().unwrap_err().contains("budget_ms"));
    }
}
