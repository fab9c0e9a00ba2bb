//! TCP-Illinois, as Linux runs it (`net/ipv4/tcp_illinois.c`).
//!
//! # Sources
//!
//! * Linux `net/ipv4/tcp_illinois.c` ("Implemented from description in
//!   paper and ns-2 simulation", S. Hemminger, 2007; module version 1.0).
//!   The code index holds no copy from `kernel-patches/bpf` and only old
//!   `torvalds/linux` ones, so I read: `tedd-an/bluetooth-next`
//!   at `4d813b13d298` (v5.x: `ack_sample` hook, `tcp_reno_undo_cwnd`,
//!   `tcp_in_slow_start`); a v5.19+ copy with the `tcp_snd_cwnd()` accessors
//!   and the `decr` temporary in `ssthresh`; the v5.19 patch itself ("tcp:
//!   add accessors to read/set tp->snd_cwnd", which changed nothing else);
//!   and, for history, `torvalds/linux` at `0d946db93a62` and `bba606880aa3`
//!   (before v4.6: the RTT came as an argument, slow start was
//!   `cwnd <= ssthresh`, no explicit `undo_cwnd`). The algorithm and its
//!   arithmetic are the same in all of them since v4.6.
//! * S. Liu, T. Başar, R. Srikant, "TCP-Illinois: A loss- and delay-based
//!   congestion control algorithm for high-speed networks", Performance
//!   Evaluation 65(6–7), 2008 (extended version of VALUETOOLS 2006).
//!
//! # The model
//!
//! Reno's AIMD with an additive increase α and a multiplicative decrease β
//! that depend on the average queuing delay `d_a` (the paper's `f1`, `f2`
//! with its η1 = 0.01, η2 = 0.1, η3 = 0.8, which Linux hard-codes):
//!
//! ```text
//!   per ACK:   cwnd += α / cwnd            per loss:  cwnd −= β · cwnd
//!
//!   α = α_max                          if d_a ≤ d1
//!       κ1 / (κ2 + d_a)                otherwise        (α_max at d1, α_min at d_m)
//!   β = β_min                          if d_a ≤ d2
//!       κ3 + κ4 · d_a                  if d2 < d_a < d3  (β_min at d2, β_max at d3)
//!       β_max                          otherwise
//!   d1 = d_m/100,  d2 = d_m/10,  d3 = 8·d_m/10
//! ```
//!
//! with `d_m` the largest queuing delay seen (`max_rtt − base_rtt`, both
//! over the whole connection) and `d_a` the mean RTT of the last round minus
//! `base_rtt`. After `d_a` has once left the low-delay zone, α returns to
//! α_max only after θ rounds back in it, and is held meanwhile. (Linux
//! counts those rounds since α last returned to α_max or the last timeout:
//! a high-delay round in between does not restart the count, although its
//! comment speaks of "5 good RTT's".) α and β are recomputed once per round
//! (on the first ACK beyond the `snd_nxt` recorded at the previous update),
//! from that round's RTT samples. Below `win_thresh` segments they are Reno's, α = 1 and β = ½; a timeout
//! also resets them to Reno's. Slow start is Reno's, without carrying
//! leftover ACKs into congestion avoidance.
//!
//! Fixed point, as in Linux:
//!
//! | quantity | scale | defaults |
//! |---|---|---|
//! | α | 1/128 (`ALPHA_SHIFT` = 7) | α_min = 38 (0.297), α_max = 1280 (10.0), α_base = 128 (1.0) |
//! | β | 1/64 (`BETA_SHIFT` = 6) | β_min = 8 (0.125), β_max = β_base = 32 (0.5) |
//! | RTTs, delays | µs, u32; sum u64 | samples clamped at `RTT_MAX = U32_MAX / α_max` (3.36 s) |
//!
//! ```text
//!   α = (d_m'·α_max) / (d_m' + (d_a'·(α_max − α_min)) / α_min),  d_m' = d_m − d1, d_a' = d_a − d1
//!   β = (β_min·d3 − β_max·d2 + (β_max − β_min)·d_a) / (d3 − d2)          (u32, wrapping as in C)
//!   per ACK in avoidance: cnt += acked_pkts; if (cnt·α >> 7) ≥ cwnd { cwnd += (cnt·α >> 7)/cwnd; cnt = 0 }
//!   ssthresh = max(cwnd − (cwnd·β >> 6), 2)
//! ```
//!
//! `acked_pkts` is the number of segments the ACK cumulatively acknowledged
//! (Linux's `ack_sample.pkts_acked`, a u16 here as there), not the
//! `acked` argument of `cong_avoid` (which also counts newly SACKed ones).
//!
//! Linux behaviour kept on purpose: `init` sets α to α_max (not 1), so
//! until the first update the first round grows fast; with no delay
//! variation yet (`d_m = 0`), `d_a ≤ d2 = 0` gives β = β_min, so a first
//! loss before any queuing has been seen cuts the window by only 1/8;
//! `max_rtt` is never aged ("TODO" in Linux), so one RTT spike fixes `d_m`
//! for the connection's life; the update uses the window at the time of the
//! update for the `win_thresh` test.
//!
//! # Deviations from Linux
//!
//! 1. Clocks: an RTT sample in µs is the difference of the ACK's and the
//!    sent segment's µs clocks (`⌊t/1000⌋` of the simulator's ns clock), as
//!    `tcp_stamp_us_delta` on `tcp_mstamp`.
//! 2. Sequence numbers are 64-bit bytes that never wrap, so `after(ack,
//!    end_seq)` is a plain `>`.
//! 3. α_min, α_max, β_min and β_max are parameters ([`Config`]); in Linux
//!    they are compile-time constants. β_base stays tied to β_max and RTT_MAX
//!    to α_max as Linux's macros define them; α_base is 1.0. The two Linux
//!    module parameters, `win_thresh` and `theta`, are per connection and
//!    fixed at construction. Validation: 1 ≤ α_min ≤ α_max ≤ 4294 (RTT_MAX
//!    at least 1 s), 1 ≤ β_min ≤ β_max ≤ 63, 1 ≤ θ ≤ 255 (`rtt_low` is a u8:
//!    a larger θ could never be reached), `win_thresh` ≤ 2³¹ − 1.
//! 4. No `get_info`; observers ([`Illinois::alpha`], [`Illinois::beta`],
//!    [`Illinois::base_rtt`], …) and [`CongestionControl::queuing_delay`]
//!    (the `d_a` of the last update) expose the state.
//!
//! `undo_cwnd` is Reno's, as in Linux.

use serde::{Deserialize, Serialize};

use super::helpers::slow_start;
use super::{AckSample, CaState, CongestionControl, ConnView, Window};
use crate::units::{SimDuration, SimTime};

/// `ALPHA_SHIFT`: α is in 1/128.
pub const ALPHA_SHIFT: u32 = 7;
/// `ALPHA_SCALE`, also `ALPHA_BASE` (α = 1.0, Reno).
pub const ALPHA_SCALE: u32 = 1 << ALPHA_SHIFT;
/// `BETA_SHIFT`: β is in 1/64.
pub const BETA_SHIFT: u32 = 6;
/// `BETA_SCALE`.
pub const BETA_SCALE: u32 = 1 << BETA_SHIFT;
/// Linux's initial `base_rtt`, µs.
const RTT_UNSET: u32 = 0x7fff_ffff;

/// Illinois' parameters: Linux's two module parameters (`win_thresh`,
/// `theta`) and its four compile-time constants, with Linux's values.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Smallest additive increase, 1/128 segment per RTT (`ALPHA_MIN`,
    /// 38 = 0.297).
    pub alpha_min: u32,
    /// Largest additive increase, 1/128 segment per RTT (`ALPHA_MAX`,
    /// 1280 = 10.0).
    pub alpha_max: u32,
    /// Smallest decrease factor, 1/64 (`BETA_MIN`, 8 = 0.125).
    pub beta_min: u32,
    /// Largest decrease factor, 1/64 (`BETA_MAX`, 32 = 0.5); also β below
    /// `win_thresh` and after a timeout (`BETA_BASE`).
    pub beta_max: u32,
    /// Rounds of low delay before α may return to α_max.
    pub theta: u32,
    /// Below this window, segments, α and β are Reno's.
    pub win_thresh: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            alpha_min: (3 * ALPHA_SCALE) / 10,
            alpha_max: 10 * ALPHA_SCALE,
            beta_min: BETA_SCALE / 8,
            beta_max: BETA_SCALE / 2,
            theta: 5,
            win_thresh: 15,
        }
    }
}

/// `alpha_max` above this would clamp RTT samples below one second.
const ALPHA_MAX_LIMIT: u32 = u32::MAX / 1_000_000;

impl super::CcConfig for Config {
    fn build(self, _stream: u64) -> Box<dyn super::CongestionControl> {
        Box::new(Illinois::new(self))
    }

    fn validate(&self) -> Result<(), String> {
        if self.alpha_min == 0 || self.alpha_min > self.alpha_max {
            return Err(format!(
                "alpha_min must be in 1..=alpha_max ({}) (units of 1/128), got {}",
                self.alpha_max, self.alpha_min
            ));
        }
        if self.alpha_max > ALPHA_MAX_LIMIT {
            return Err(format!(
                "alpha_max must be at most {ALPHA_MAX_LIMIT} (units of 1/128; RTT samples are clamped at \
                 U32_MAX/alpha_max us), got {}",
                self.alpha_max
            ));
        }
        if self.beta_max >= BETA_SCALE {
            return Err(format!(
                "beta_max must be in 1..=63 (units of 1/64), got {}",
                self.beta_max
            ));
        }
        if self.beta_min == 0 || self.beta_min > self.beta_max {
            return Err(format!(
                "beta_min must be in 1..=beta_max ({}) (units of 1/64), got {}",
                self.beta_max, self.beta_min
            ));
        }
        if self.theta == 0 || self.theta > u8::MAX as u32 {
            return Err(format!("theta must be in 1..=255 rounds, got {}", self.theta));
        }
        if self.win_thresh > i32::MAX as u32 {
            return Err(format!(
                "win_thresh must be at most {} segments, got {}",
                i32::MAX,
                self.win_thresh
            ));
        }
        Ok(())
    }
}

/// Where the current α and β came from (for [`CongestionControl::mode`]).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Params {
    /// `init`: α = α_max, β = β_max, until the first update.
    #[default]
    Init,
    /// Reno's α = 1, β = ½: window below `win_thresh`, or after a timeout.
    Reno,
    /// From the delays, α = α_max (low delay).
    AlphaMax,
    /// From the delays, α below α_max (or held while waiting θ rounds).
    DelayScaled,
}

/// Linux `struct illinois`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct State {
    /// Sum of this round's RTT samples, µs.
    sum_rtt: u64,
    /// RTT samples this round (u16, as Linux).
    cnt_rtt: u16,
    /// Smallest RTT since the connection started, µs.
    base_rtt: u32,
    /// Largest RTT since the connection started, µs.
    max_rtt: u32,
    /// The round ends on the first ACK beyond this (bytes).
    end_seq: u64,
    /// Additive increase, 1/128.
    alpha: u32,
    /// Multiplicative decrease, 1/64.
    beta: u32,
    /// Segments the current ACK acknowledged (u16).
    acked: u16,
    /// The average delay has left the low-delay zone.
    rtt_above: bool,
    /// Consecutive low-delay rounds since then (u8).
    rtt_low: u8,
}

/// TCP-Illinois congestion control.
#[derive(Clone, Debug)]
pub struct Illinois {
    cfg: Config,
    st: State,
    source: Params,
    /// `d_a` and `d_m` of the last delay-based update, µs.
    last_da: Option<u32>,
    last_dm: Option<u32>,
    slow_start: bool,
}

impl Illinois {
    pub fn new(cfg: Config) -> Self {
        let st = State {
            sum_rtt: 0,
            cnt_rtt: 0,
            base_rtt: RTT_UNSET,
            max_rtt: 0,
            end_seq: 0,
            alpha: cfg.alpha_max,
            beta: cfg.beta_max,
            acked: 0,
            rtt_above: false,
            rtt_low: 0,
        };
        Illinois {
            cfg,
            st,
            source: Params::Init,
            last_da: None,
            last_dm: None,
            slow_start: true,
        }
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    // ----- observers -----

    /// α in Linux's unit, 1/128 segment per RTT.
    pub fn alpha_raw(&self) -> u32 {
        self.st.alpha
    }
    /// β in Linux's unit, 1/64.
    pub fn beta_raw(&self) -> u32 {
        self.st.beta
    }
    /// α, segments per RTT.
    pub fn alpha(&self) -> f64 {
        self.st.alpha as f64 / ALPHA_SCALE as f64
    }
    /// β, the fraction of the window a loss removes.
    pub fn beta(&self) -> f64 {
        self.st.beta as f64 / BETA_SCALE as f64
    }
    /// Where α and β came from.
    pub fn params(&self) -> Params {
        self.source
    }
    /// Smallest RTT sample of the connection.
    pub fn base_rtt(&self) -> Option<SimDuration> {
        (self.st.base_rtt != RTT_UNSET).then(|| SimDuration::from_micros(self.st.base_rtt as u64))
    }
    /// Largest RTT sample of the connection (clamped at RTT_MAX).
    pub fn max_rtt(&self) -> Option<SimDuration> {
        (self.st.max_rtt > 0).then(|| SimDuration::from_micros(self.st.max_rtt as u64))
    }
    /// Maximum queuing delay `d_m` at the last delay-based update.
    pub fn max_delay(&self) -> Option<SimDuration> {
        self.last_dm.map(|us| SimDuration::from_micros(us as u64))
    }
    /// `snd_nxt` at the last update: the next is due on an ACK beyond it.
    pub fn round_end_seq(&self) -> u64 {
        self.st.end_seq
    }
    /// RTT samples in the current round.
    pub fn round_samples(&self) -> u16 {
        self.st.cnt_rtt
    }

    // ----- Linux helpers -----

    /// `RTT_MAX`.
    fn rtt_max(&self) -> u32 {
        u32::MAX / self.cfg.alpha_max
    }

    /// `rtt_reset`: a new round starts at the current `snd_nxt`.
    fn rtt_reset(&mut self, c: &ConnView) {
        self.st.end_seq = c.snd_nxt;
        self.st.cnt_rtt = 0;
        self.st.sum_rtt = 0;
    }

    /// Linux `alpha()`: the additive increase for average delay `da` and
    /// maximum delay `dm` (µs); updates the low-delay hysteresis.
    fn alpha_for(&mut self, da: u32, dm: u32) -> u32 {
        let (amin, amax) = (self.cfg.alpha_min, self.cfg.alpha_max);
        let d1 = dm / 100;
        if da <= d1 {
            if !self.st.rtt_above {
                return amax;
            }
            // Hold α until theta low-delay rounds in a row.
            self.st.rtt_low = self.st.rtt_low.wrapping_add(1);
            if (self.st.rtt_low as u32) < self.cfg.theta {
                return self.st.alpha;
            }
            self.st.rtt_low = 0;
            self.st.rtt_above = false;
            return amax;
        }
        self.st.rtt_above = true;
        let dm = dm - d1;
        let da = da - d1;
        dm.wrapping_mul(amax) / dm.wrapping_add(da.wrapping_mul(amax - amin) / amin)
    }

    /// Linux `beta()`: the decrease factor for average delay `da` and
    /// maximum delay `dm` (µs).
    fn beta_for(&self, da: u32, dm: u32) -> u32 {
        let (bmin, bmax) = (self.cfg.beta_min, self.cfg.beta_max);
        let d2 = dm / 10;
        if da <= d2 {
            return bmin;
        }
        let d3 = dm.wrapping_mul(8) / 10;
        if da >= d3 || d3 <= d2 {
            return bmax;
        }
        bmin.wrapping_mul(d3)
            .wrapping_sub(bmax.wrapping_mul(d2))
            .wrapping_add((bmax - bmin).wrapping_mul(da))
            / (d3 - d2)
    }

    /// `update_params`: once per round.
    fn update_params(&mut self, w: &Window, c: &ConnView) {
        if w.cwnd < self.cfg.win_thresh {
            self.st.alpha = ALPHA_SCALE;
            self.st.beta = self.cfg.beta_max;
            self.source = Params::Reno;
        } else if self.st.cnt_rtt > 0 {
            let dm = self.st.max_rtt.wrapping_sub(self.st.base_rtt);
            let da = ((self.st.sum_rtt / self.st.cnt_rtt as u64) as u32).wrapping_sub(self.st.base_rtt);
            self.st.alpha = self.alpha_for(da, dm);
            self.st.beta = self.beta_for(da, dm);
            self.source = if self.st.alpha == self.cfg.alpha_max {
                Params::AlphaMax
            } else {
                Params::DelayScaled
            };
            self.last_da = Some(da);
            self.last_dm = Some(dm);
        }
        self.rtt_reset(c);
    }

    fn note_window(&mut self, w: &Window) {
        self.slow_start = w.in_slow_start();
    }
}

/// An RTT sample in Linux's µs (deviation 1).
fn rtt_us(now: SimTime, rtt: SimDuration) -> u32 {
    let sent = now.as_nanos().saturating_sub(rtt.as_nanos());
    (now.as_nanos() / 1_000 - sent / 1_000).min(u32::MAX as u64) as u32
}

impl CongestionControl for Illinois {
    /// A Linux kernel module: when paced (`tcp.pacing`), its skbs are
    /// `tcp_tso_autosize`'s size.
    fn tso_segs(&self, autosize: u32) -> u32 {
        autosize
    }

    fn name(&self) -> &'static str {
        "illinois"
    }

    /// `tcp_illinois_init`.
    fn init(&mut self, _now: SimTime, w: &mut Window, c: &ConnView) {
        *self = Illinois::new(self.cfg.clone());
        self.rtt_reset(c);
        self.note_window(w);
    }

    /// `tcp_illinois_ssthresh`: remove β of the window.
    fn ssthresh(&mut self, _now: SimTime, w: &Window, _c: &ConnView) -> u32 {
        let decr = w.cwnd.wrapping_mul(self.st.beta) >> BETA_SHIFT;
        w.cwnd.wrapping_sub(decr).max(2)
    }

    /// `tcp_illinois_cong_avoid`.
    fn cong_avoid(&mut self, _now: SimTime, w: &mut Window, c: &ConnView, acked: u32) {
        if c.snd_una > self.st.end_seq {
            self.update_params(w, c);
        }
        if c.is_cwnd_limited {
            if w.in_slow_start() {
                slow_start(w, acked);
            } else {
                w.cwnd_cnt = w.cwnd_cnt.wrapping_add(self.st.acked as u32);
                self.st.acked = 1;
                // cwnd += alpha / cwnd per ACKed segment, in 1/128 steps.
                let delta = w.cwnd_cnt.wrapping_mul(self.st.alpha) >> ALPHA_SHIFT;
                if delta >= w.cwnd {
                    w.cwnd = w.cwnd.wrapping_add(delta / w.cwnd).min(w.cwnd_clamp);
                    w.cwnd_cnt = 0;
                }
            }
        }
        self.note_window(w);
    }

    /// `tcp_illinois_state`: a timeout falls back to Reno's α and β.
    fn set_state(&mut self, _now: SimTime, w: &mut Window, c: &ConnView, new: CaState) {
        if new == CaState::Loss {
            self.st.alpha = ALPHA_SCALE;
            self.st.beta = self.cfg.beta_max;
            self.st.rtt_low = 0;
            self.st.rtt_above = false;
            self.source = Params::Reno;
            self.rtt_reset(c);
        }
        self.note_window(w);
    }

    /// `tcp_illinois_acked`: every ACK records how much it acknowledged; RTT
    /// samples feed the round's mean and the connection's extremes.
    fn pkts_acked(&mut self, now: SimTime, w: &mut Window, _c: &ConnView, s: &AckSample) {
        self.st.acked = s.pkts_acked as u16;
        if let Some(rtt) = s.rtt {
            let rtt = rtt_us(now, rtt).min(self.rtt_max());
            self.st.base_rtt = self.st.base_rtt.min(rtt);
            self.st.max_rtt = self.st.max_rtt.max(rtt);
            self.st.cnt_rtt = self.st.cnt_rtt.wrapping_add(1);
            self.st.sum_rtt += rtt as u64;
        }
        self.note_window(w);
    }

    /// Linux uses `tcp_reno_undo_cwnd`.
    fn undo_cwnd(&mut self, _now: SimTime, w: &Window, prior_cwnd: u32) -> u32 {
        w.cwnd.max(prior_cwnd)
    }

    fn mode(&self) -> &'static str {
        if self.slow_start {
            return "slow_start";
        }
        match self.source {
            Params::Reno => "reno",
            Params::Init | Params::AlphaMax => "alpha_max",
            Params::DelayScaled => "delay_scaled",
        }
    }

    fn queuing_delay(&self) -> Option<SimDuration> {
        self.last_da.map(|us| SimDuration::from_micros(us as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::cc::{registry, CcConfig};

    use crate::transport::cc::testkit::{self, ms, seg_view, Bulk};

    const MSS: u64 = testkit::MSS as u64;

    fn view(una_segs: u64, nxt_segs: u64, state: CaState, limited: bool) -> ConnView {
        seg_view(SimTime::ZERO, una_segs, nxt_segs, state, limited)
    }

    /// A bulk sender, one segment per ACK, hooks in the framework's order
    /// (the kit's [`Bulk`]); 1 ms between ACKs from 1 s on; `growth`
    /// records the ACK index of every window change.
    type Flow = Bulk<Illinois>;

    fn flow(cfg: Config, cwnd: u32, ssthresh: u32) -> Flow {
        Bulk::with_ssthresh(Illinois::new(cfg), cwnd, ssthresh)
    }

    impl Bulk<Illinois> {
        /// ACKs up to and including the one that closes the current round
        /// (the first beyond `end_seq`), every sample at `rtt`: the update
        /// on that ACK sees exactly these samples.
        fn round(&mut self, rtt: SimDuration) {
            let end = self.cc.round_end_seq();
            self.ack_through(end, rtt);
        }
    }

    /// In congestion avoidance at 100 segments, base RTT 40 ms, and one
    /// round at 140 ms: d_m = 100 ms for the rest of the connection.
    fn with_max_delay_100ms() -> Flow {
        let mut f = flow(Config::default(), 100, 50);
        f.round(ms(40)); // ACK 1 closes the round opened at init
        f.round(ms(140));
        assert_eq!(f.cc.max_delay(), Some(ms(100)));
        f
    }

    // ----- configuration -----

    #[test]
    fn the_defaults_are_linuxs_constants_and_module_parameters() {
        let c = Config::default();
        assert_eq!((c.alpha_min, c.alpha_max, c.beta_min, c.beta_max), (38, 1280, 8, 32));
        assert_eq!((c.theta, c.win_thresh), (5, 15));
        assert_eq!(c.validate(), Ok(()));
        let cc = Illinois::new(c);
        // RTT_MAX = U32_MAX / ALPHA_MAX = 3 355 443 us.
        assert_eq!(cc.rtt_max(), 3_355_443);
        assert_eq!(cc.name(), "illinois");
    }

    #[test]
    fn validation_names_the_bad_parameter() {
        let bad = |f: fn(&mut Config), name: &str| {
            let mut c = Config::default();
            f(&mut c);
            let e = c.validate().unwrap_err();
            assert!(e.contains(name), "{e}");
        };
        bad(|c| c.alpha_min = 0, "alpha_min");
        bad(|c| c.alpha_min = 1281, "alpha_min");
        bad(|c| c.alpha_max = 5000, "alpha_max");
        bad(|c| c.beta_min = 0, "beta_min");
        bad(|c| c.beta_min = 33, "beta_min");
        bad(|c| c.beta_max = 64, "beta_max");
        bad(|c| c.theta = 0, "theta");
        bad(|c| c.theta = 256, "theta");
        bad(|c| c.win_thresh = u32::MAX, "win_thresh");
        let c = Config {
            alpha_min: 128,
            alpha_max: 128,
            beta_min: 32,
            beta_max: 32,
            theta: 255,
            win_thresh: 0,
        };
        assert_eq!(c.validate(), Ok(()));
    }

    #[test]
    fn the_registry_builds_illinois_from_a_parameter_table_and_rejects_unknown_keys() {
        let cc = registry::build("illinois", &serde_json::json!({"win_thresh": 10, "theta": 3})).unwrap();
        assert_eq!(cc.name(), "illinois");
        let e = registry::build("illinois", &serde_json::json!({"theta": 0}))
            .err()
            .unwrap();
        assert!(e.contains("theta"), "{e}");
        assert!(registry::build("illinois", &serde_json::json!({"gamma": 1})).is_err());
        let r = registry::resolve("illinois", &serde_json::Value::Null).unwrap();
        assert_eq!(
            (
                r["alpha_max"].as_u64(),
                r["beta_min"].as_u64(),
                r["win_thresh"].as_u64()
            ),
            (Some(1280), Some(8), Some(15))
        );
    }

    // ----- the alpha and beta curves -----

    #[test]
    fn alpha_is_alpha_max_at_low_delay_and_alpha_min_at_the_maximum_delay() {
        let mut cc = Illinois::new(Config::default());
        let dm = 100_000; // d1 = 1 000 us
        assert_eq!(cc.alpha_for(0, dm), 1280);
        assert_eq!(cc.alpha_for(1_000, dm), 1280);
        // da = dm: 99000*1280 / (99000 + 99000*1242/38) = 126720000 / 3334736 = 38.
        assert_eq!(cc.alpha_for(100_000, dm), 38);
        assert!(cc.st.rtt_above);
        // da = 45 ms: 126720000 / (99000 + 44000*1242/38 = 1438105) = 82 (0.64).
        assert_eq!(cc.alpha_for(45_000, dm), 82);
        // Just above d1: 126720000 / (99000 + 1*1242/38 = 32) = 1279.
        assert_eq!(cc.alpha_for(1_001, dm), 1279);
    }

    #[test]
    fn beta_rises_linearly_from_beta_min_at_d2_to_beta_max_at_d3() {
        let cc = Illinois::new(Config::default());
        let dm = 100_000; // d2 = 10 ms, d3 = 80 ms
        assert_eq!(cc.beta_for(0, dm), 8);
        assert_eq!(cc.beta_for(10_000, dm), 8);
        // (8*80000 - 32*10000 + 24*45000) / 70000 = 1400000 / 70000 = 20 (0.3125).
        assert_eq!(cc.beta_for(45_000, dm), 20);
        // (640000 - 320000 + 24*10001) / 70000 = 560024 / 70000 = 8.
        assert_eq!(cc.beta_for(10_001, dm), 8);
        assert_eq!(cc.beta_for(79_999, dm), 31);
        assert_eq!(cc.beta_for(80_000, dm), 32);
        // No delay variation: d2 = 0, any da = 0 <= d2.
        assert_eq!(cc.beta_for(0, 0), 8);
        // Tiny dm: d2 = 0, d3 = 72/10 = 7: (8*7 + 24*5) / 7 = 25.
        assert_eq!(cc.beta_for(5, 9), 25);
        // dm = 1: d2 = d3 = 0: beta_max.
        assert_eq!(cc.beta_for(1, 1), 32);
    }

    // ----- per-round updates through the hooks -----

    #[test]
    fn alpha_and_beta_follow_the_delay_of_each_round() {
        let mut f = flow(Config::default(), 100, 50);
        assert_eq!(
            (f.cc.alpha_raw(), f.cc.beta_raw(), f.cc.params()),
            (1280, 32, Params::Init)
        );
        // Round 1 (ACK 1 only) at 40 ms: dm = 0, da = 0: alpha_max, beta_min.
        f.round(ms(40));
        assert_eq!(
            (f.cc.alpha_raw(), f.cc.beta_raw(), f.cc.params()),
            (1280, 8, Params::AlphaMax)
        );
        assert_eq!(f.cc.round_end_seq(), 100 * MSS);
        assert_eq!(f.cc.mode(), "alpha_max");
        // Round 2 at 140 ms: dm = da = 100 ms: alpha_min, beta_max.
        f.round(ms(140));
        assert_eq!(
            (f.cc.alpha_raw(), f.cc.beta_raw(), f.cc.params()),
            (38, 32, Params::DelayScaled)
        );
        assert_eq!(f.cc.queuing_delay(), Some(ms(100)));
        assert_eq!(f.cc.mode(), "delay_scaled");
        // Round 3 at 85 ms: da = 45 ms.
        f.round(ms(85));
        assert_eq!((f.cc.alpha_raw(), f.cc.beta_raw()), (82, 20));
        assert_eq!(f.cc.base_rtt(), Some(ms(40)));
        assert_eq!(f.cc.max_rtt(), Some(ms(140)));
    }

    #[test]
    fn alpha_returns_to_alpha_max_only_after_theta_low_delay_rounds() {
        // Linux counts low-delay rounds since alpha last returned to
        // alpha_max (or the last timeout); a high-delay round in between
        // does not restart the count.
        let mut f = with_max_delay_100ms();
        f.round(ms(85));
        assert_eq!(f.cc.alpha_raw(), 82);
        // Low-delay rounds 1..4 hold alpha at 82 (beta drops at once).
        for r in 1..=4 {
            f.round(ms(40));
            assert_eq!((f.cc.alpha_raw(), f.cc.beta_raw()), (82, 8), "low round {r}");
        }
        f.round(ms(40));
        assert_eq!((f.cc.alpha_raw(), f.cc.params()), (1280, Params::AlphaMax));
        // Three low rounds, a high one, then low again: the fourth and
        // fifth low rounds since the reset.
        f.round(ms(85));
        for _ in 1..=3 {
            f.round(ms(40));
        }
        f.round(ms(85));
        assert_eq!(f.cc.alpha_raw(), 82);
        f.round(ms(40));
        assert_eq!(f.cc.alpha_raw(), 82);
        f.round(ms(40));
        assert_eq!(f.cc.alpha_raw(), 1280);
    }

    #[test]
    fn below_win_thresh_alpha_and_beta_are_renos() {
        // cwnd 13: ACK 1 (Reno, cnt 1); ACKs 2..13 reach cnt 13 -> cwnd 14;
        // ACK 14 closes the round at cwnd 14 < 15.
        let mut f = flow(Config::default(), 13, 10);
        f.round(ms(40));
        f.round(ms(140));
        assert_eq!(f.w.cwnd, 14);
        assert_eq!(
            (f.cc.alpha_raw(), f.cc.beta_raw(), f.cc.params()),
            (128, 32, Params::Reno)
        );
        assert_eq!(f.cc.mode(), "reno");
        f.w.cwnd = 14;
        assert_eq!(f.ssthresh(), 7);
    }

    #[test]
    fn the_window_at_the_update_decides_the_win_thresh_test() {
        // cwnd 14 -> 15 during the 40 ms round (alpha 1.0 from round 1):
        // the round-2 update at cwnd 15 uses the delays.
        let mut f = flow(Config::default(), 14, 10);
        f.round(ms(40)); // ACK 1: cwnd 14 < 15: Reno
        while f.w.cwnd < 15 {
            f.ack(ms(40));
        }
        let end = f.cc.round_end_seq() / MSS;
        while f.una < end {
            f.ack(ms(40));
        }
        f.ack(ms(40));
        assert_eq!(f.cc.params(), Params::AlphaMax);
    }

    // ----- the loss response -----

    #[test]
    fn a_loss_removes_beta_of_the_window() {
        let mut f = with_max_delay_100ms();
        f.round(ms(85)); // beta 20/64
        let cwnd = f.w.cwnd;
        assert_eq!(f.ssthresh(), cwnd - ((cwnd * 20) >> 6));
        f.w.cwnd = 100;
        assert_eq!(f.ssthresh(), 69); // 100 - 2000/64
        f.round(ms(140)); // beta 32/64
        f.w.cwnd = 100;
        assert_eq!(f.ssthresh(), 50);
        f.round(ms(40)); // beta 8/64
        f.w.cwnd = 100;
        assert_eq!(f.ssthresh(), 88); // 100 - 800/64
        f.w.cwnd = 2;
        assert_eq!(f.ssthresh(), 2);
    }

    #[test]
    fn a_first_loss_in_slow_start_before_any_queuing_keeps_seven_eighths() {
        // Slow start from 16 at a constant 40 ms: every update sees dm = 0,
        // hence beta_min. ACK 1 (17), ACKs 2..17 (33), ACKs 18..49 (65).
        let mut f = flow(Config::default(), 16, crate::transport::cc::INFINITE_SSTHRESH);
        f.round(ms(40));
        f.round(ms(40));
        f.round(ms(40));
        assert_eq!(f.cc.mode(), "slow_start");
        assert_eq!((f.acks, f.w.cwnd), (49, 65));
        assert_eq!(f.cc.beta_raw(), 8);
        assert_eq!(f.ssthresh(), 57); // 65 - 520/64
    }

    #[test]
    fn a_timeout_resets_alpha_and_beta_to_renos_and_restarts_the_round() {
        let mut f = with_max_delay_100ms();
        f.round(ms(85));
        f.nxt += 7;
        let v = f.view();
        f.cc.set_state(f.t, &mut f.w, &v, CaState::Loss);
        assert_eq!(
            (f.cc.alpha_raw(), f.cc.beta_raw(), f.cc.params()),
            (128, 32, Params::Reno)
        );
        assert_eq!((f.cc.round_end_seq(), f.cc.round_samples()), (f.nxt * MSS, 0));
        // The connection's extremes survive.
        assert_eq!((f.cc.base_rtt(), f.cc.max_rtt()), (Some(ms(40)), Some(ms(140))));
        // Recovery changes nothing.
        f.round(ms(85));
        let v = f.view();
        f.cc.set_state(f.t, &mut f.w, &v, CaState::Recovery);
        assert_eq!(f.cc.alpha_raw(), 82);
    }

    // ----- the growth law -----

    #[test]
    fn in_avoidance_the_window_grows_by_alpha_per_rtt() {
        // At cwnd W, +1 once cnt*alpha >> 7 >= W: after ceil(128 W / alpha) ACKs.
        // alpha_max (10/RTT): 10 ACKs at cwnd 100, then 11 at 101.
        let mut f = flow(Config::default(), 100, 50);
        f.round(ms(40)); // ACK 1: alpha_max; cnt = 1
        for _ in 2..=32 {
            f.ack(ms(40));
        }
        assert_eq!(f.growth, vec![(10, 101), (21, 102), (32, 103)]);

        // alpha_min (0.297/RTT) at cwnd 100: 12800/38 = 336.8 -> 337 ACKs.
        let mut f = with_max_delay_100ms();
        assert_eq!(f.cc.alpha_raw(), 38);
        let w0 = f.w.cwnd;
        f.w.cwnd_cnt = 0;
        f.growth.clear();
        let start = f.acks;
        let need = (128 * w0).div_ceil(38) as u64;
        while f.growth.is_empty() {
            f.ack(ms(140));
        }
        assert_eq!(f.growth[0], (start + need, w0 + 1));
    }

    #[test]
    fn a_stretch_ack_counts_its_cumulatively_acked_segments() {
        // cwnd 100, alpha 10: an ACK of 25 segments gives cnt 25, delta 250,
        // +2 segments at once.
        let mut f = flow(Config::default(), 100, 50);
        f.round(ms(40)); // cnt 1 -> delta 10 < 100
        f.w.cwnd_cnt = 0;
        f.t += ms(1);
        f.una += 25;
        let v = f.view();
        f.cc.pkts_acked(
            f.t,
            &mut f.w,
            &v,
            &AckSample {
                pkts_acked: 25,
                rtt: Some(ms(40)),
                in_flight: 100,
            },
        );
        f.cc.cong_avoid(f.t, &mut f.w, &v, 25);
        assert_eq!((f.w.cwnd, f.w.cwnd_cnt), (102, 0));
        // A second cong_avoid without a pkts_acked counts one segment.
        f.cc.cong_avoid(f.t, &mut f.w, &v, 25);
        assert_eq!(f.w.cwnd_cnt, 1);
    }

    #[test]
    fn slow_start_is_renos_without_carrying_leftover_acks() {
        let mut f = flow(Config::default(), 9, 10);
        f.t += ms(40);
        f.una = 3;
        let v = f.view();
        f.cc.pkts_acked(
            f.t,
            &mut f.w,
            &v,
            &AckSample {
                pkts_acked: 3,
                rtt: Some(ms(40)),
                in_flight: 9,
            },
        );
        f.cc.cong_avoid(f.t, &mut f.w, &v, 3);
        assert_eq!((f.w.cwnd, f.w.cwnd_cnt), (10, 0));
        assert_eq!(f.cc.mode(), "reno"); // the update at cwnd 9 < win_thresh
    }

    #[test]
    fn an_application_limited_sender_updates_alpha_but_does_not_grow() {
        let mut f = flow(Config::default(), 100, 50);
        f.t += ms(40);
        f.una = 1;
        let v = view(1, 100, CaState::Open, false);
        f.cc.pkts_acked(
            f.t,
            &mut f.w,
            &v,
            &AckSample {
                pkts_acked: 1,
                rtt: Some(ms(40)),
                in_flight: 100,
            },
        );
        f.cc.cong_avoid(f.t, &mut f.w, &v, 1);
        assert_eq!((f.w.cwnd, f.w.cwnd_cnt, f.cc.params()), (100, 0, Params::AlphaMax));
    }

    #[test]
    fn rtt_samples_are_clamped_at_rtt_max() {
        let mut f = flow(Config::default(), 100, 50);
        f.t = SimTime::from_nanos(10_000_000_000);
        f.ack(SimDuration::from_secs(5));
        assert_eq!(f.cc.max_rtt(), Some(SimDuration::from_micros(3_355_443)));
    }

    // ----- end to end -----

    #[test]
    fn illinois_fills_a_20_mbit_dumbbell() {
        use crate::scenario::config::ScenarioConfig;
        use crate::scenario::World;
        let cfg: ScenarioConfig = serde_json::from_value(serde_json::json!({
            "seed": 1, "duration_s": 10.0, "topology": "wired",
            "internet": {"rate_mbps": 20.0, "delay_ms": 20.0, "buffer_packets": 100},
            "flows": [{"cc": "illinois"}],
        }))
        .unwrap();
        let rec = World::new(cfg, None).unwrap().run().recorder;
        let t = &rec.flow_tput;
        let late: Vec<usize> = (0..t.len()).filter(|&i| t.t[i] >= 2.0).collect();
        let bytes: u64 = late.iter().map(|&i| t.bytes[i]).sum();
        let span = late.iter().map(|&i| t.t[i]).fold(0.0, f64::max) + 0.1 - 2.0;
        let goodput = bytes as f64 * 8.0 / span / 1e6;
        assert!(goodput > 18.0 && goodput < 19.31, "goodput {goodput}");
        assert!(!rec.retransmits.is_empty(), "loss-based: the buffer overflows");
    }
}
