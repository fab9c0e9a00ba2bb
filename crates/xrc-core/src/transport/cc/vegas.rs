//! TCP Vegas, as Linux runs it (`net/ipv4/tcp_vegas.c`, `tcp_vegas.h`).
//!
//! # Sources
//!
//! * Linux `net/ipv4/tcp_vegas.c` and `net/ipv4/tcp_vegas.h`. The code
//!   index holds no copy from `kernel-patches/bpf`, and its `torvalds/linux`
//!   copy is old (`09c434b8a004`, v5.2 era, before the v5.19
//!   `tcp_snd_cwnd()` accessors). I read a 6.17-era mirror (`Kingxukai/linux`,
//!   stored blob at commit `9b44fff655e2c6f4cc53cb499dd2c038e99cb013`, with
//!   the accessors) and a 6.18-based fork (`Aarav90-cpu/linux-kotlin`,
//!   commit `a663adb68e0e`) whose unresolved merge shows the current
//!   mainline side: the v7.1 split of `CA_EVENT_TX_START` into its own hook
//!   `cwnd_event_tx_start` (same effect: both restart Vegas) and
//!   `WRITE_ONCE` around `snd_ssthresh`. All agree on everything below.
//!   `tcp_current_ssthresh` and `tcp_in_cwnd_reduction` are from
//!   `include/net/tcp.h`; `tcp_slow_start` and `tcp_reno_*` from
//!   `net/ipv4/tcp_cong.c` (the crate's [`helpers`](super::helpers)).
//! * L. S. Brakmo, S. W. O'Malley, L. L. Peterson, "TCP Vegas: New
//!   Techniques for Congestion Detection and Avoidance", ACM SIGCOMM 1994
//!   (and Brakmo & Peterson, IEEE JSAC 13(8), 1995, which the Linux file
//!   cites).
//!
//! # The model
//!
//! Once per round trip (the first ACK that covers data sent after the
//! previous decision, `ack > beg_snd_nxt`), with `base` the smallest RTT
//! ever seen and `rtt` the smallest RTT sample of the round that just ended:
//!
//! ```text
//!   Expected = cwnd / base        Actual = cwnd / rtt
//!   target   = Actual · base = cwnd · base / rtt
//!   Diff     = cwnd · (rtt − base) / base          segments queued (Linux's form)
//!
//!   slow start:  Diff > γ  →  cwnd = min(cwnd, target + 1), leave slow start
//!                else      →  Reno slow start (one segment per ACKed segment, every ACK)
//!   avoidance:   Diff > β  →  cwnd − 1
//!                Diff < α  →  cwnd + 1
//!                else      →  hold
//! ```
//!
//! The paper's `Diff = (Expected − Actual) · base = cwnd − target =
//! cwnd · (rtt − base)/rtt`; Linux divides by `base` instead, i.e. it uses
//! `(Expected − Actual) · rtt`, larger by `rtt/base`. The thresholds are
//! therefore met with fewer queued segments than the paper's reading when
//! the queuing delay is large relative to `base`. This module follows Linux.
//!
//! Between decisions the window does not change in congestion avoidance; in
//! slow start it grows on every ACK, as Reno. Losses are handled as Reno
//! (`ssthresh = max(cwnd/2, 2)`). This is Linux's reading of the paper,
//! which differs from the paper in that slow start grows every RTT (the
//! paper: every other RTT), the "actual" rate is measured from ACKs and the
//! minimum RTT of the round, and the window is set to the measured rate on
//! leaving slow start (see the comment heading Linux's file).
//!
//! All arithmetic is Linux's: RTTs in µs as u32 with one added to every
//! sample ("never zero"), `target = ⌊(u64) cwnd·base / rtt⌋`,
//! `Diff = ⌊(u32) cwnd·(rtt − base) / base⌋` (the product wraps as in C
//! once it passes 2³²), and α, β, γ compared with `Diff` as unsigned. The
//! decision falls back to Reno's `cong_avoid` when the round had two RTT
//! samples or fewer (Linux: probably only delayed ACKs). After every
//! decision `ssthresh` is raised to `tcp_current_ssthresh` (¾·cwnd when not
//! in a window reduction).
//!
//! Vegas is off (Reno `cong_avoid`) in every state but Open, and is
//! restarted — decision boundary at the current `snd_nxt`, sample count
//! cleared — on each return to Open. `CwndRestart` and `TxStart` (sending
//! with nothing in flight: after idle, and the first retransmission after a
//! timeout) re-run `init`, which also forgets `base`.
//!
//! # Deviations from Linux
//!
//! 1. Clocks: an RTT sample in µs is the difference of the ACK's and the
//!    sent segment's µs clocks (`⌊t/1000⌋` of the simulator's ns clock), as
//!    `tcp_stamp_us_delta` on Linux's `tcp_mstamp`. A sample larger than
//!    2³¹ − 1 µs is clamped there (Linux truncates it into the s32 of
//!    `ack_sample`).
//! 2. Sequence numbers are 64-bit bytes that never wrap, so `after(ack,
//!    beg_snd_nxt)` is a plain `>`.
//! 3. Parameters are per connection and fixed at construction (Linux: global
//!    `int` module parameters, writable at run time). `alpha` must be at
//!    least 1 and at most `beta`, and all three at most 2³¹ − 1 (Linux takes
//!    any `int`; a negative one compares as a huge unsigned value).
//! 4. `get_info` (`INET_DIAG_VEGASINFO`) is replaced by the observers
//!    ([`Vegas::base_rtt`], [`Vegas::diff`], …) and the trace hooks
//!    [`CongestionControl::target_window`] (the last `target`) and
//!    [`CongestionControl::queuing_delay`] (`rtt − base` of the last decision).
//!
//! Behaviour worth knowing, as in Linux: Vegas does not check
//! `tcp_is_cwnd_limited` (only the Reno fallback does), so slow start grows
//! the window of an application-limited sender; `undo_cwnd` is Reno's.

use serde::{Deserialize, Serialize};

use super::helpers::{reno_cong_avoid, reno_ssthresh, slow_start};
use super::{AckSample, CaEvent, CaState, CongestionControl, ConnView, Window};
use crate::units::{SimDuration, SimTime};

/// Linux's "no sample yet" value for `minRTT` and `baseRTT`, µs.
const RTT_UNSET: u32 = 0x7fff_ffff;
/// Fewer RTT samples than this in a round: use Reno (Linux `cntRTT <= 2`).
const MIN_SAMPLES: u16 = 3;

/// Vegas' parameters: Linux's module parameters and their defaults.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Below this many queued segments (`Diff`), add one segment per RTT.
    pub alpha: u32,
    /// Above this many queued segments, remove one segment per RTT.
    pub beta: u32,
    /// In slow start, more than this many queued segments end slow start.
    pub gamma: u32,
}

impl Default for Config {
    fn default() -> Self {
        // Linux's defaults; the 1994 paper used α = 1, β = 3 (and γ = 1).
        Config {
            alpha: 2,
            beta: 4,
            gamma: 1,
        }
    }
}

impl super::CcConfig for Config {
    fn build(self, _stream: u64) -> Box<dyn super::CongestionControl> {
        Box::new(Vegas::new(self))
    }

    fn validate(&self) -> Result<(), String> {
        let max = i32::MAX as u32;
        for (name, v) in [("alpha", self.alpha), ("beta", self.beta), ("gamma", self.gamma)] {
            if v > max {
                return Err(format!("{name} must be at most {max} segments, got {v}"));
            }
        }
        if self.alpha == 0 {
            return Err("alpha must be at least 1 segment (0 never grows the window)".into());
        }
        if self.alpha > self.beta {
            return Err(format!("alpha ({}) must not exceed beta ({})", self.alpha, self.beta));
        }
        Ok(())
    }
}

/// What the last once-per-RTT step did (for [`CongestionControl::mode`]).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Decision {
    /// No decision yet since the last (re)start.
    #[default]
    None,
    /// Too few RTT samples in the round: Reno's `cong_avoid`.
    Reno,
    /// Diff ≤ γ in slow start: keep slowly starting.
    SlowStart,
    /// Diff > γ in slow start: window set to the measured rate, slow start over.
    LeaveSlowStart,
    /// Diff < α: one segment more.
    Increase,
    /// α ≤ Diff ≤ β.
    Hold,
    /// Diff > β: one segment less.
    Decrease,
}

/// Linux `struct vegas` (the unused `beg_snd_una`, `beg_snd_cwnd` left out).
#[derive(Clone, Debug, PartialEq, Eq)]
struct State {
    /// The decision is due on the first ACK beyond this (bytes).
    beg_snd_nxt: u64,
    /// Vegas runs (state Open); otherwise Reno.
    doing_vegas_now: bool,
    /// RTT samples this round (u16, as Linux).
    cnt_rtt: u16,
    /// Smallest sample this round, µs + 1.
    min_rtt: u32,
    /// Smallest sample since the last (re)start, µs + 1.
    base_rtt: u32,
}

impl Default for State {
    fn default() -> Self {
        State {
            beg_snd_nxt: 0,
            doing_vegas_now: false,
            cnt_rtt: 0,
            min_rtt: RTT_UNSET,
            base_rtt: RTT_UNSET,
        }
    }
}

/// TCP Vegas congestion control.
#[derive(Clone, Debug)]
pub struct Vegas {
    cfg: Config,
    st: State,
    last: Decision,
    /// `Diff` and `target` of the last Vegas decision.
    last_diff: Option<u32>,
    last_target: Option<u32>,
    /// `rtt − base` of the last Vegas decision, µs.
    last_queue_us: Option<u32>,
    slow_start: bool,
}

impl Vegas {
    pub fn new(cfg: Config) -> Self {
        Vegas {
            cfg,
            st: State::default(),
            last: Decision::None,
            last_diff: None,
            last_target: None,
            last_queue_us: None,
            slow_start: true,
        }
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    // ----- observers -----

    /// Vegas (not Reno) decides the window: the connection is in Open.
    pub fn enabled(&self) -> bool {
        self.st.doing_vegas_now
    }
    /// Smallest RTT since the last (re)start, as Linux keeps it (sample + 1 µs).
    pub fn base_rtt_us(&self) -> Option<u32> {
        (self.st.base_rtt != RTT_UNSET).then_some(self.st.base_rtt)
    }
    /// [`Vegas::base_rtt_us`] as a duration.
    pub fn base_rtt(&self) -> Option<SimDuration> {
        self.base_rtt_us().map(|us| SimDuration::from_micros(us as u64))
    }
    /// Smallest RTT of the current round (sample + 1 µs), if any.
    pub fn round_min_rtt_us(&self) -> Option<u32> {
        (self.st.min_rtt != RTT_UNSET).then_some(self.st.min_rtt)
    }
    /// RTT samples taken in the current round.
    pub fn round_samples(&self) -> u16 {
        self.st.cnt_rtt
    }
    /// `snd_nxt` at the last decision: the next is due on an ACK beyond it.
    pub fn round_end_seq(&self) -> u64 {
        self.st.beg_snd_nxt
    }
    /// `Diff` (segments queued) at the last Vegas decision.
    pub fn diff(&self) -> Option<u32> {
        self.last_diff
    }
    /// What the last once-per-RTT step did.
    pub fn last_decision(&self) -> Decision {
        self.last
    }

    // ----- Linux helpers -----

    /// `vegas_enable`: decide again one round from now, with fresh samples.
    fn enable(&mut self, c: &ConnView) {
        self.st.doing_vegas_now = true;
        self.st.beg_snd_nxt = c.snd_nxt;
        self.st.cnt_rtt = 0;
        self.st.min_rtt = RTT_UNSET;
    }

    /// `tcp_vegas_init`: also forget the base RTT.
    fn restart(&mut self, c: &ConnView) {
        self.st.base_rtt = RTT_UNSET;
        self.enable(c);
        self.last = Decision::None;
    }

    /// The once-per-RTT step with enough samples (Linux's `else` branch).
    fn decide(&mut self, w: &mut Window, c: &ConnView, acked: u32) {
        let rtt = self.st.min_rtt;
        let base = self.st.base_rtt;
        let target = (w.cwnd as u64 * base as u64 / rtt as u64) as u32;
        let diff = w.cwnd.wrapping_mul(rtt.wrapping_sub(base)) / base;
        self.last_diff = Some(diff);
        self.last_target = Some(target);
        self.last_queue_us = Some(rtt.wrapping_sub(base));

        if diff > self.cfg.gamma && w.in_slow_start() {
            w.cwnd = w.cwnd.min(target.wrapping_add(1));
            w.ssthresh = w.ssthresh.min(w.cwnd);
            self.last = Decision::LeaveSlowStart;
        } else if w.in_slow_start() {
            slow_start(w, acked);
            self.last = Decision::SlowStart;
        } else if diff > self.cfg.beta {
            w.cwnd = w.cwnd.wrapping_sub(1);
            w.ssthresh = w.ssthresh.min(w.cwnd);
            self.last = Decision::Decrease;
        } else if diff < self.cfg.alpha {
            w.cwnd = w.cwnd.wrapping_add(1);
            self.last = Decision::Increase;
        } else {
            self.last = Decision::Hold;
        }

        if w.cwnd < 2 {
            w.cwnd = 2;
        } else if w.cwnd > w.cwnd_clamp {
            w.cwnd = w.cwnd_clamp;
        }
        w.ssthresh = current_ssthresh(w, c.ca_state);
    }

    fn note_window(&mut self, w: &Window) {
        self.slow_start = w.in_slow_start();
    }
}

/// Linux `tcp_current_ssthresh`: outside a window reduction (CWR,
/// Recovery), at least ¾ of the window.
fn current_ssthresh(w: &Window, state: CaState) -> u32 {
    if matches!(state, CaState::Cwr | CaState::Recovery) {
        w.ssthresh
    } else {
        w.ssthresh.max((w.cwnd >> 1) + (w.cwnd >> 2))
    }
}

/// An RTT sample in Linux's µs (deviation 1).
fn rtt_us(now: SimTime, rtt: SimDuration) -> u32 {
    let sent = now.as_nanos().saturating_sub(rtt.as_nanos());
    (now.as_nanos() / 1_000 - sent / 1_000).min(i32::MAX as u64) as u32
}

impl CongestionControl for Vegas {
    /// A Linux kernel module: when paced (`tcp.pacing`), its skbs are
    /// `tcp_tso_autosize`'s size.
    fn tso_segs(&self, autosize: u32) -> u32 {
        autosize
    }

    fn name(&self) -> &'static str {
        "vegas"
    }

    /// `tcp_vegas_init`.
    fn init(&mut self, _now: SimTime, w: &mut Window, c: &ConnView) {
        self.st = State::default();
        self.restart(c);
        self.note_window(w);
    }

    /// Vegas uses `tcp_reno_ssthresh`.
    fn ssthresh(&mut self, _now: SimTime, w: &Window, _c: &ConnView) -> u32 {
        reno_ssthresh(w)
    }

    /// `tcp_vegas_cong_avoid`.
    fn cong_avoid(&mut self, _now: SimTime, w: &mut Window, c: &ConnView, acked: u32) {
        if !self.st.doing_vegas_now {
            reno_cong_avoid(w, c, acked);
        } else if c.snd_una > self.st.beg_snd_nxt {
            self.st.beg_snd_nxt = c.snd_nxt;
            if self.st.cnt_rtt < MIN_SAMPLES {
                reno_cong_avoid(w, c, acked);
                self.last = Decision::Reno;
            } else {
                self.decide(w, c, acked);
            }
            self.st.cnt_rtt = 0;
            self.st.min_rtt = RTT_UNSET;
        } else if w.in_slow_start() {
            slow_start(w, acked);
        }
        self.note_window(w);
    }

    /// `tcp_vegas_state`: on in Open, off elsewhere.
    fn set_state(&mut self, _now: SimTime, w: &mut Window, c: &ConnView, new: CaState) {
        if new == CaState::Open {
            self.enable(c);
        } else {
            self.st.doing_vegas_now = false;
        }
        self.note_window(w);
    }

    /// `tcp_vegas_cwnd_event` (and v7.1's `cwnd_event_tx_start`).
    fn cwnd_event(&mut self, _now: SimTime, w: &mut Window, c: &ConnView, ev: CaEvent) {
        if matches!(ev, CaEvent::CwndRestart | CaEvent::TxStart) {
            self.restart(c);
        }
        self.note_window(w);
    }

    /// `tcp_vegas_pkts_acked`: the round's and the connection's minimum RTT.
    fn pkts_acked(&mut self, now: SimTime, w: &mut Window, _c: &ConnView, s: &AckSample) {
        if let Some(rtt) = s.rtt {
            let vrtt = rtt_us(now, rtt) + 1;
            self.st.base_rtt = self.st.base_rtt.min(vrtt);
            self.st.min_rtt = self.st.min_rtt.min(vrtt);
            self.st.cnt_rtt = self.st.cnt_rtt.wrapping_add(1);
        }
        self.note_window(w);
    }

    /// Linux uses `tcp_reno_undo_cwnd`.
    fn undo_cwnd(&mut self, _now: SimTime, w: &Window, prior_cwnd: u32) -> u32 {
        w.cwnd.max(prior_cwnd)
    }

    fn mode(&self) -> &'static str {
        if !self.st.doing_vegas_now {
            return "reno";
        }
        if self.slow_start {
            return "slow_start";
        }
        match self.last {
            Decision::Increase => "increase",
            Decision::Hold => "hold",
            Decision::Decrease => "decrease",
            Decision::Reno => "reno",
            Decision::None | Decision::SlowStart | Decision::LeaveSlowStart => "cong_avoid",
        }
    }

    fn target_window(&self) -> Option<f64> {
        self.last_target.map(f64::from)
    }

    fn queuing_delay(&self) -> Option<SimDuration> {
        self.last_queue_us.map(|us| SimDuration::from_micros(us as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::cc::INFINITE_SSTHRESH;
    use crate::transport::cc::{registry, CcConfig};

    use crate::transport::cc::testkit::{self, ms, seg_view, us, Bulk};

    const MSS: u64 = testkit::MSS as u64;

    fn view(una_segs: u64, nxt_segs: u64, state: CaState, limited: bool) -> ConnView {
        seg_view(SimTime::ZERO, una_segs, nxt_segs, state, limited)
    }

    /// A bulk sender whose flight is always the full window (the kit's
    /// [`Bulk`]): one segment per ACK, `pkts_acked` then `cong_avoid`
    /// (none in Recovery), then the window is refilled; 1 ms per ACK from
    /// 1 s on.
    type Flow = Bulk<Vegas>;

    fn flow(cfg: Config, cwnd: u32, ssthresh: u32) -> Flow {
        Bulk::with_ssthresh(Vegas::new(cfg), cwnd, ssthresh)
    }

    impl Bulk<Vegas> {
        /// ACKs up to and including the one that triggers the next decision
        /// (the first beyond `beg_snd_nxt`), all with this RTT.
        fn round(&mut self, rtt: SimDuration) {
            let end = self.cc.round_end_seq();
            self.ack_through(end, rtt);
        }
    }

    /// A flow in congestion avoidance at `cwnd` whose first round (one ACK,
    /// one sample: Reno) is over and whose base RTT is 40 ms.
    fn in_avoidance(cwnd: u32) -> Flow {
        let mut f = flow(Config::default(), cwnd, 2);
        f.ack(ms(40)); // decision on ACK 1: 1 sample -> Reno AI (cwnd_cnt 1)
        assert_eq!(f.cc.last_decision(), Decision::Reno);
        assert_eq!(f.w.cwnd, cwnd);
        f
    }

    // ----- configuration -----

    #[test]
    fn the_defaults_are_linux_module_parameters() {
        let c = Config::default();
        assert_eq!((c.alpha, c.beta, c.gamma), (2, 4, 1));
        assert_eq!(c.validate(), Ok(()));
        assert_eq!(Vegas::new(c).name(), "vegas");
    }

    #[test]
    fn validation_names_the_bad_parameter() {
        let bad = |c: Config, name: &str| {
            let e = c.validate().unwrap_err();
            assert!(e.contains(name), "{e}");
        };
        bad(
            Config {
                alpha: 0,
                ..Config::default()
            },
            "alpha",
        );
        bad(
            Config {
                alpha: 5,
                beta: 4,
                gamma: 1,
            },
            "beta",
        );
        bad(
            Config {
                beta: u32::MAX,
                ..Config::default()
            },
            "beta",
        );
        bad(
            Config {
                gamma: 1 << 31,
                ..Config::default()
            },
            "gamma",
        );
        assert_eq!(
            Config {
                alpha: 1,
                beta: 3,
                gamma: 0
            }
            .validate(),
            Ok(())
        );
        assert_eq!(
            Config {
                alpha: 3,
                beta: 3,
                gamma: 1
            }
            .validate(),
            Ok(())
        );
    }

    #[test]
    fn the_registry_builds_vegas_from_a_parameter_table_and_rejects_unknown_keys() {
        let cc = registry::build("vegas", &serde_json::json!({"alpha": 1, "beta": 3})).unwrap();
        assert_eq!(cc.name(), "vegas");
        let e = registry::build("vegas", &serde_json::json!({"alpha": 6}))
            .err()
            .unwrap();
        assert!(e.contains("alpha"), "{e}");
        assert!(registry::build("vegas", &serde_json::json!({"delta": 1})).is_err());
        let r = registry::resolve("vegas", &serde_json::Value::Null).unwrap();
        assert_eq!(
            (r["alpha"].as_u64(), r["beta"].as_u64(), r["gamma"].as_u64()),
            (Some(2), Some(4), Some(1))
        );
    }

    // ----- slow start -----

    #[test]
    fn slow_start_grows_on_every_ack_and_ends_at_the_measured_rate_plus_one() {
        // Initial window 10. ACK 1 closes the round opened at init (1 sample:
        // Reno slow start, cwnd 11, next decision after snd_nxt = 10).
        // ACKs 2..10 slow-start to 20; ACK 11 decides on 10 samples at 40 ms
        // (Diff 0: slow start, cwnd 21, next decision after snd_nxt = 30).
        // ACKs 12..30 bring cwnd to 40; ACK 31 decides on samples at 50 ms:
        //   base = 40 001 us, rtt = 50 001 us
        //   target = 40 * 40001 / 50001 = 32,  Diff = 40 * 10000 / 40001 = 9 > gamma
        //   cwnd = min(40, 32 + 1) = 33, ssthresh = min(inf, 33) = 33, then
        //   max(33, 20 + 10) = 33: congestion avoidance.
        let mut f = flow(Config::default(), 10, INFINITE_SSTHRESH);
        f.ack(ms(40));
        assert_eq!((f.w.cwnd, f.cc.round_end_seq()), (11, 10 * MSS));
        for _ in 2..=10 {
            f.ack(ms(40));
        }
        assert_eq!(f.w.cwnd, 20);
        f.ack(ms(40));
        assert_eq!(f.cc.last_decision(), Decision::SlowStart);
        assert_eq!((f.w.cwnd, f.cc.round_end_seq(), f.cc.diff()), (21, 30 * MSS, Some(0)));
        assert_eq!(f.cc.base_rtt_us(), Some(40_001));
        for _ in 12..=30 {
            f.ack(ms(50));
        }
        assert_eq!((f.w.cwnd, f.w.ssthresh), (40, INFINITE_SSTHRESH));
        assert_eq!(f.cc.mode(), "slow_start");
        f.ack(ms(50));
        assert_eq!(f.cc.last_decision(), Decision::LeaveSlowStart);
        assert_eq!(f.cc.diff(), Some(9));
        assert_eq!(f.cc.target_window(), Some(32.0));
        assert_eq!(f.cc.queuing_delay(), Some(us(10_000)));
        assert_eq!((f.w.cwnd, f.w.ssthresh), (33, 33));
        assert_eq!(f.cc.mode(), "cong_avoid");
        assert_eq!(f.cc.round_samples(), 0);
    }

    #[test]
    fn a_queue_of_gamma_segments_or_fewer_does_not_end_slow_start() {
        // cwnd 20 at the decision, base 40 001 us: Diff = 20 * d / 40001.
        // d = 4 000 us -> 1 (= gamma): keep slow-starting (cwnd 21).
        // d = 4 001 us -> 2 > gamma: cwnd = min(20, 20*40001/44002 + 1 = 19).
        // ACK 1 sets the base; the round decided on ACK 11 (ACKs 2..11) has
        // every sample at 40 ms + d.
        for (extra_us, cwnd, ssthresh) in [(4_000u64, 21, INFINITE_SSTHRESH), (4_001, 19, 19)] {
            let mut f = flow(Config::default(), 10, INFINITE_SSTHRESH);
            f.ack(ms(40));
            for _ in 2..=10 {
                f.ack(us(40_000 + extra_us));
            }
            assert_eq!(f.w.cwnd, 20);
            f.ack(us(40_000 + extra_us));
            assert_eq!((f.w.cwnd, f.w.ssthresh), (cwnd, ssthresh), "+{extra_us} us");
        }
    }

    // ----- congestion avoidance: once per RTT -----

    #[test]
    fn in_avoidance_the_window_moves_once_per_rtt_by_diff_against_alpha_and_beta() {
        // cwnd 33, base 40 001 us. Diff = 33 * d / 40001:
        //   d = 1 000 -> 0 < alpha: +1        d = 4 000 -> 3: hold
        //   d = 8 000 -> 6 > beta:  -1, ssthresh = min(ss, 32) then max(.., 16 + 8)
        for (d, after, decision, mode, ssthresh) in [
            (1_000u64, 34, Decision::Increase, "increase", 25), // ss = max(2, 17 + 8)
            (4_000, 33, Decision::Hold, "hold", 24),            // ss = max(2, 16 + 8)
            (8_000, 32, Decision::Decrease, "decrease", 24),    // ss = max(min(2, 32), 16 + 8)
        ] {
            let mut f = in_avoidance(33);
            // The round opened by ACK 1 ends after snd_nxt = 33: ACKs 2..34.
            assert_eq!(f.cc.round_end_seq(), 33 * MSS);
            for n in 2..=33 {
                f.ack(us(40_000 + d));
                assert_eq!(f.w.cwnd, 33, "no change between decisions (ACK {n})");
            }
            f.ack(us(40_000 + d));
            assert_eq!(f.cc.last_decision(), decision, "d = {d} us");
            assert_eq!((f.w.cwnd, f.w.ssthresh), (after, ssthresh), "d = {d} us");
            assert_eq!(f.cc.mode(), mode);
        }
    }

    #[test]
    fn the_round_minimum_not_the_mean_sets_diff() {
        // One 40 ms sample among 100 ms ones: the round's minimum is 40 001 us,
        // Diff 0, +1.
        let mut f = in_avoidance(33);
        for n in 2..=34 {
            f.ack(if n == 20 { ms(40) } else { ms(100) });
        }
        assert_eq!((f.cc.last_decision(), f.w.cwnd), (Decision::Increase, 34));
    }

    #[test]
    fn a_round_with_two_samples_or_fewer_falls_back_to_reno() {
        // Only ACKs 33 and 34 carry an RTT: Reno's AI (cwnd_cnt 1 -> 2).
        let mut f = in_avoidance(33);
        for n in 2..=34 {
            f.ack_with((n >= 33).then_some(ms(80)));
        }
        assert_eq!(f.cc.last_decision(), Decision::Reno);
        assert_eq!((f.w.cwnd, f.w.cwnd_cnt), (33, 2));
        assert_eq!(f.cc.mode(), "reno");
        // Three samples are enough: ACKs 65..67 of the next round at 80 ms,
        // Diff = 33 * 40000 / 40001 = 32 > beta: -1.
        let end = f.cc.round_end_seq() / MSS;
        for n in 35..=end + 1 {
            f.ack_with((n + 3 > end + 1).then_some(ms(80)));
        }
        assert_eq!(f.cc.round_samples(), 0);
        assert_eq!(
            (f.cc.last_decision(), f.cc.diff(), f.w.cwnd),
            (Decision::Decrease, Some(32), 32)
        );
    }

    #[test]
    fn the_window_never_falls_below_two_segments() {
        // Round of 4 ACKs at cwnd 2 (the flight is still 4): Diff = 2 *
        // 360000 / 40001 = 17 > beta, 2 - 1 = 1 -> 2.
        let mut f = in_avoidance(4);
        f.w.cwnd = 2;
        f.round(ms(400));
        assert_eq!((f.cc.last_decision(), f.w.cwnd), (Decision::Decrease, 2));
    }

    // ----- losses and state changes -----

    #[test]
    fn a_loss_halves_the_window_as_reno() {
        let mut f = in_avoidance(33);
        let v = f.view();
        assert_eq!(f.cc.ssthresh(f.t, &f.w, &v), 16);
        f.w.cwnd = 3;
        assert_eq!(f.cc.ssthresh(f.t, &f.w, &v), 2);
        assert_eq!(f.cc.undo_cwnd(SimTime::ZERO, &f.w, 33), 33);
    }

    #[test]
    fn outside_open_vegas_is_off_and_reno_grows_the_window() {
        let mut f = in_avoidance(33);
        f.set_state(CaState::Disorder);
        assert!(!f.cc.enabled());
        assert_eq!(f.cc.mode(), "reno");
        // Reno AI on every ACK: cwnd_cnt 1 + 32 = 33 -> cwnd 34.
        for _ in 0..32 {
            f.ack(ms(60));
        }
        assert_eq!((f.w.cwnd, f.w.cwnd_cnt), (34, 0));
    }

    #[test]
    fn returning_to_open_restarts_the_round_but_keeps_the_base_rtt() {
        let mut f = in_avoidance(33);
        for _ in 0..10 {
            f.ack(ms(45));
        }
        f.set_state(CaState::Recovery);
        f.w.cwnd = 16;
        f.w.ssthresh = 16;
        f.set_state(CaState::Open);
        assert!(f.cc.enabled());
        assert_eq!(f.cc.round_end_seq(), f.nxt * MSS);
        assert_eq!((f.cc.round_samples(), f.cc.round_min_rtt_us()), (0, None));
        assert_eq!(f.cc.base_rtt_us(), Some(40_001));
        // The first decision after recovery comes a full round later.
        let nxt = f.nxt;
        while f.una < nxt {
            f.ack(ms(41));
        }
        assert_eq!(f.w.cwnd, 16);
        f.ack(ms(41));
        // Diff = 16 * 1000 / 40001 = 0: +1.
        assert_eq!((f.cc.last_decision(), f.w.cwnd), (Decision::Increase, 17));
    }

    #[test]
    fn sending_with_nothing_in_flight_forgets_the_base_rtt() {
        for ev in [CaEvent::TxStart, CaEvent::CwndRestart] {
            let mut f = in_avoidance(33);
            let v = f.view();
            f.cc.cwnd_event(f.t, &mut f.w, &v, ev);
            assert_eq!(f.cc.base_rtt_us(), None, "{ev:?}");
            assert_eq!(f.cc.round_end_seq(), f.nxt * MSS);
            // Other events leave Vegas alone.
            f.ack(ms(50));
            f.cc.cwnd_event(f.t, &mut f.w, &v, CaEvent::CompleteCwr);
            f.cc.cwnd_event(f.t, &mut f.w, &v, CaEvent::Loss);
            assert_eq!(f.cc.base_rtt_us(), Some(50_001));
        }
    }

    #[test]
    fn rtt_samples_are_counted_in_linux_microseconds_plus_one() {
        let mut f = in_avoidance(33);
        // Sent at 1.0004 ms (µs clock 1000), ACKed at 2 ms (µs clock 2000).
        let mut cc = Vegas::new(Config::default());
        let mut w = Window::new(10);
        let v = view(0, 10, CaState::Open, true);
        cc.init(SimTime::ZERO, &mut w, &v);
        let s = AckSample {
            pkts_acked: 1,
            rtt: Some(SimDuration::from_nanos(999_600)),
            in_flight: 10,
        };
        cc.pkts_acked(SimTime::from_nanos(2_000_000), &mut w, &v, &s);
        assert_eq!(cc.base_rtt_us(), Some(1_001));
        // A zero RTT still counts as 1 us.
        f.ack(SimDuration::ZERO);
        assert_eq!(f.cc.base_rtt_us(), Some(1));
    }

    // ----- end to end -----

    #[test]
    fn vegas_fills_a_20_mbit_dumbbell_with_a_short_queue() {
        use crate::scenario::config::ScenarioConfig;
        use crate::scenario::World;
        let cfg: ScenarioConfig = serde_json::from_value(serde_json::json!({
            "seed": 1, "duration_s": 10.0, "topology": "wired",
            "internet": {"rate_mbps": 20.0, "delay_ms": 20.0, "buffer_packets": 100},
            "flows": [{"cc": "vegas"}],
        }))
        .unwrap();
        let rec = World::new(cfg, None).unwrap().run().recorder;
        let t = &rec.flow_tput;
        let late: Vec<usize> = (0..t.len()).filter(|&i| t.t[i] >= 2.0).collect();
        let bytes: u64 = late.iter().map(|&i| t.bytes[i]).sum();
        let span = late.iter().map(|&i| t.t[i]).fold(0.0, f64::max) + 0.1 - 2.0;
        let goodput = bytes as f64 * 8.0 / span / 1e6;
        // 1448/1500 of 20 Mbit/s = 19.3 Mbit/s at most.
        assert!(goodput > 18.0 && goodput < 19.31, "goodput {goodput}");
        // Linux's Vegas overshoots in slow start (the round minimum lags the
        // queue): it leaves slow start at about 154 segments, twice the
        // 69-segment BDP, but under the 100-packet buffer, and then drains
        // one segment per RTT, for about 5.5 s. No drop at all.
        assert!(rec.drops.is_empty(), "{} drops", rec.drops.len());
        // From then on it keeps alpha..beta segments queued: 40 ms of
        // propagation plus a few segments of 0.6 ms each.
        let r = &rec.rtt;
        let late: Vec<f64> = (0..r.len()).filter(|&i| r.t[i] >= 7.0).map(|i| r.rtt_ms[i]).collect();
        let max = late.iter().cloned().fold(0.0, f64::max);
        assert!(!late.is_empty() && max < 46.0, "max RTT {max} ms");
    }
}
