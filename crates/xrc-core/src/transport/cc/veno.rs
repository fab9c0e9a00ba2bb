//! TCP Veno, as Linux runs it (`net/ipv4/tcp_veno.c`).
//!
//! # Sources
//!
//! * Linux `net/ipv4/tcp_veno.c`. I read the bpf-next mirror
//!   `kernel-patches/bpf` (stored blob of commit
//!   `b930a81d47d5395722386076b2e2eeac8d3582b9`, v6.x with the `tcp_snd_cwnd()`
//!   accessors) and compared it with a 6.17-era mirror (`Kingxukai/linux`,
//!   stored blob at commit `9b44fff655e2`) and a 6.18-based fork
//!   (`Aarav90-cpu/linux-kotlin`, commit `a663adb68e0e`) whose unresolved
//!   merge shows the current mainline side, with the v7.1
//!   `cwnd_event_tx_start` hook. Apart from that hook (same
//!   effect: `TX_START` re-runs `init`) and `>> 1` written `>> 1U`, the
//!   copies are identical. `tcp_slow_start`, `tcp_cong_avoid_ai` and
//!   `tcp_reno_*` are `net/ipv4/tcp_cong.c` (the crate's
//!   [`helpers`](super::helpers)).
//! * C. P. Fu, S. C. Liew, "TCP Veno: TCP Enhancement for Transmission over
//!   Wireless Access Networks", IEEE JSAC 21(2), February 2003.
//!
//! # The model
//!
//! Veno estimates the sender's backlog in the bottleneck queue as Vegas
//! does, `N = (cwnd/base − cwnd/rtt) · base = cwnd · (rtt − base)/rtt`, and
//! uses it for two things (β = 3 segments in the paper and in Linux):
//!
//! ```text
//!   additive increase:  N < β  → cwnd += 1/cwnd per ACK   (Reno, "non-congestive")
//!                       N ≥ β  → one segment every other RTT ("congestive")
//!   on a loss:          N < β  → ssthresh = 4/5 · cwnd        (probably a random loss)
//!                       N ≥ β  → ssthresh = 1/2 · cwnd        (probably congestion)
//! ```
//!
//! Linux computes `N` in half segments (`V_PARAM_SHIFT` = 1, β = 3 << 1 = 6):
//! `target = ⌊(u64) cwnd·base·2 / rtt⌋`, `diff = (u32)(2·cwnd − target)`,
//! on every ACK that reaches `cong_avoid` in Veno mode, and keeps the last
//! `diff` for `ssthresh`. RTTs are µs plus one ("never zero"), u32. `base`
//! is the smallest sample since the last (re)start; `rtt` is the smallest
//! sample since the previous `cong_avoid`, which with one ACK per segment
//! is the sample of this very ACK (Linux resets it at the end of every
//! `cong_avoid`, despite the "last rtt" in its comments).
//!
//! "Every other RTT" is Linux's: in the congestive state `snd_cwnd_cnt`
//! counts ACKed segments, and the ACK that finds it at `cwnd` or more resets
//! it and, on alternate occasions (`inc`), adds one segment. With one segment
//! per ACK that is +1 per `2·(cwnd + 1)` ACKs. In the non-congestive state
//! growth is `tcp_cong_avoid_ai(cwnd)`, +1 per `cwnd` ACKs. Slow start is
//! Reno's (`tcp_slow_start`); its leftover ACKs go to the rule above.
//!
//! Until three RTT samples have been taken (`cntrtt <= 2`), and in every
//! state but Open, `cong_avoid` is Reno's. The window never falls below two
//! segments in Veno mode.
//!
//! Linux quirks kept on purpose (users compare against Linux):
//!
//! * `cntrtt` is never reset (the reset is commented out in Linux), so the
//!   Reno fallback only covers the first three samples of the connection
//!   and, as the u16 wraps, three samples after every 65 536.
//! * A Veno step without an RTT sample since the previous `cong_avoid`
//!   finds `rtt` at 0x7fffffff: `target` is 0 and `diff = 2·cwnd`, so it
//!   counts as congestive, and a loss right after it halves the window. This
//!   happens on an ACK with no usable sample, and on every ACK that ends a
//!   recovery: `set_state(Open)` (`veno_enable`) runs between that ACK's
//!   `pkts_acked` and its `cong_avoid` and clears `rtt`.
//! * `diff` is only updated in Veno mode; a loss first seen as duplicate
//!   ACKs (state Disorder, Reno mode) is judged on the `diff` of the last
//!   ACK in Open.
//! * `TxStart` and `CwndRestart` re-run `init`: `base` is forgotten, `inc`
//!   set, but `cntrtt` and `diff` kept.
//!
//! # Deviations from Linux
//!
//! 1. Clocks: an RTT sample in µs is the difference of the ACK's and the
//!    sent segment's µs clocks (`⌊t/1000⌋` of the simulator's ns clock), as
//!    `tcp_stamp_us_delta` on `tcp_mstamp`; samples above 2³¹ − 1 µs are
//!    clamped (Linux truncates them into the s32 of `ack_sample`).
//! 2. β is a parameter ([`Config::beta`], whole segments); in Linux it is a
//!    compile-time constant (3 segments). It must be 1..=2³⁰ − 1.
//! 3. No `get_info`; the state is visible through observers
//!    ([`Veno::diff_half_segments`], [`Veno::base_rtt_us`], …) and the trace
//!    hooks: [`CongestionControl::target_window`] is `target/2` and
//!    [`CongestionControl::queuing_delay`] is `rtt − base`, both of the last
//!    Veno computation (`None` after a step without an RTT sample).
//!
//! `undo_cwnd` is Reno's, as in Linux.

use serde::{Deserialize, Serialize};

use super::helpers::{cong_avoid_ai, reno_cong_avoid, slow_start};
use super::{AckSample, CaEvent, CaState, CongestionControl, ConnView, Window};
use crate::units::{SimDuration, SimTime};

/// `V_PARAM_SHIFT`: backlog and β are in half segments.
pub const V_PARAM_SHIFT: u32 = 1;
/// Linux's "no sample" value for `minrtt` and `basertt`, µs.
const RTT_UNSET: u32 = 0x7fff_ffff;
/// Reno until more than this many samples (Linux `cntrtt <= 2`).
const MIN_SAMPLES: u16 = 2;

/// Veno's parameter. Linux has no module parameters; β is its constant.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Backlog threshold, segments: at or above it the path is "congestive"
    /// (paper and Linux: 3).
    pub beta: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config { beta: 3 }
    }
}

impl super::CcConfig for Config {
    fn build(self, _stream: u64) -> Box<dyn super::CongestionControl> {
        Box::new(Veno::new(self))
    }

    fn validate(&self) -> Result<(), String> {
        let max = (i32::MAX as u32) >> V_PARAM_SHIFT;
        if self.beta == 0 || self.beta > max {
            return Err(format!("beta must be in 1..={max} segments, got {}", self.beta));
        }
        Ok(())
    }
}

/// Linux `struct veno`.
#[derive(Clone, Debug, PartialEq, Eq)]
struct State {
    doing_veno_now: bool,
    /// RTT samples since the connection started (u16, never reset).
    cnt_rtt: u16,
    /// Smallest sample since the last `cong_avoid`, µs + 1.
    min_rtt: u32,
    /// Smallest sample since the last (re)start, µs + 1.
    base_rtt: u32,
    /// The next congestive-state opportunity adds a segment.
    inc: bool,
    /// Backlog, half segments (u32, as computed by C).
    diff: u32,
}

impl Default for State {
    /// Linux zeroes the private area before `init`.
    fn default() -> Self {
        State {
            doing_veno_now: false,
            cnt_rtt: 0,
            min_rtt: 0,
            base_rtt: 0,
            inc: false,
            diff: 0,
        }
    }
}

/// TCP Veno congestion control.
#[derive(Clone, Debug)]
pub struct Veno {
    cfg: Config,
    /// β in half segments (`beta << V_PARAM_SHIFT`).
    beta: u32,
    st: State,
    /// `target` (half segments) and `rtt − base` (µs) of the last Veno step.
    last_target: Option<u64>,
    last_queue_us: Option<u32>,
    slow_start: bool,
}

impl Veno {
    pub fn new(cfg: Config) -> Self {
        let beta = cfg.beta << V_PARAM_SHIFT;
        Veno {
            cfg,
            beta,
            st: State::default(),
            last_target: None,
            last_queue_us: None,
            slow_start: true,
        }
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    // ----- observers -----

    /// Veno (not Reno) handles `cong_avoid`: the connection is in Open.
    pub fn enabled(&self) -> bool {
        self.st.doing_veno_now
    }
    /// The backlog estimate `diff` in half segments (Linux's scale).
    pub fn diff_half_segments(&self) -> u32 {
        self.st.diff
    }
    /// The last backlog estimate put the path in the congestive state.
    pub fn congestive(&self) -> bool {
        self.st.diff >= self.beta
    }
    /// Smallest RTT since the last (re)start, as Linux keeps it (sample + 1 µs).
    pub fn base_rtt_us(&self) -> Option<u32> {
        (self.st.base_rtt != RTT_UNSET && self.st.base_rtt != 0).then_some(self.st.base_rtt)
    }
    /// RTT samples over the connection (u16, wrapping).
    pub fn samples(&self) -> u16 {
        self.st.cnt_rtt
    }
    /// The next congestive-state opportunity will add a segment.
    pub fn will_increase(&self) -> bool {
        self.st.inc
    }

    // ----- Linux helpers -----

    /// `veno_enable`.
    fn enable(&mut self) {
        self.st.doing_veno_now = true;
        self.st.min_rtt = RTT_UNSET;
    }

    /// `tcp_veno_init`.
    fn restart(&mut self) {
        self.st.base_rtt = RTT_UNSET;
        self.st.inc = true;
        self.enable();
    }

    /// The Veno branch of `tcp_veno_cong_avoid` (enough samples).
    fn grow(&mut self, w: &mut Window, acked: u32) {
        let rtt = self.st.min_rtt;
        let target = ((w.cwnd as u64 * self.st.base_rtt as u64) << V_PARAM_SHIFT) / rtt as u64;
        // C: a u32 minus a u64, stored in a u32.
        self.st.diff = (w.cwnd << V_PARAM_SHIFT).wrapping_sub(target as u32);
        // For the observers only: no sample on this ACK leaves nothing to show.
        let sampled = rtt != RTT_UNSET;
        self.last_target = sampled.then_some(target);
        self.last_queue_us = sampled.then(|| rtt.wrapping_sub(self.st.base_rtt));

        let mut acked = acked;
        let mut avoid = true;
        if w.in_slow_start() {
            acked = slow_start(w, acked);
            avoid = acked > 0;
        }
        if avoid {
            if self.st.diff < self.beta {
                let cwnd = w.cwnd;
                cong_avoid_ai(w, cwnd, acked);
            } else if w.cwnd_cnt >= w.cwnd {
                if self.st.inc && w.cwnd < w.cwnd_clamp {
                    w.cwnd += 1;
                    self.st.inc = false;
                } else {
                    self.st.inc = true;
                }
                w.cwnd_cnt = 0;
            } else {
                w.cwnd_cnt = w.cwnd_cnt.wrapping_add(acked);
            }
        }
        if w.cwnd < 2 {
            w.cwnd = 2;
        } else if w.cwnd > w.cwnd_clamp {
            w.cwnd = w.cwnd_clamp;
        }
    }

    fn note_window(&mut self, w: &Window) {
        self.slow_start = w.in_slow_start();
    }
}

/// An RTT sample in Linux's µs (deviation 1).
fn rtt_us(now: SimTime, rtt: SimDuration) -> u32 {
    let sent = now.as_nanos().saturating_sub(rtt.as_nanos());
    (now.as_nanos() / 1_000 - sent / 1_000).min(i32::MAX as u64) as u32
}

impl CongestionControl for Veno {
    /// A Linux kernel module: when paced (`tcp.pacing`), its skbs are
    /// `tcp_tso_autosize`'s size.
    fn tso_segs(&self, autosize: u32) -> u32 {
        autosize
    }

    fn name(&self) -> &'static str {
        "veno"
    }

    /// `tcp_veno_init` on a zeroed state.
    fn init(&mut self, _now: SimTime, w: &mut Window, _c: &ConnView) {
        self.st = State::default();
        self.restart();
        self.note_window(w);
    }

    /// `tcp_veno_ssthresh`: 4/5 of the window for a (probably) random loss,
    /// 1/2 for a congestive one.
    fn ssthresh(&mut self, _now: SimTime, w: &Window, _c: &ConnView) -> u32 {
        if self.st.diff < self.beta {
            (w.cwnd.wrapping_mul(4) / 5).max(2)
        } else {
            (w.cwnd >> 1).max(2)
        }
    }

    /// `tcp_veno_cong_avoid`.
    fn cong_avoid(&mut self, _now: SimTime, w: &mut Window, c: &ConnView, acked: u32) {
        if !self.st.doing_veno_now {
            reno_cong_avoid(w, c, acked);
            self.note_window(w);
            return;
        }
        if !c.is_cwnd_limited {
            self.note_window(w);
            return;
        }
        if self.st.cnt_rtt <= MIN_SAMPLES {
            reno_cong_avoid(w, c, acked);
        } else {
            self.grow(w, acked);
        }
        self.st.min_rtt = RTT_UNSET;
        self.note_window(w);
    }

    /// `tcp_veno_state`: on in Open, off elsewhere.
    fn set_state(&mut self, _now: SimTime, w: &mut Window, _c: &ConnView, new: CaState) {
        if new == CaState::Open {
            self.enable();
        } else {
            self.st.doing_veno_now = false;
        }
        self.note_window(w);
    }

    /// `tcp_veno_cwnd_event` (and v7.1's `cwnd_event_tx_start`).
    fn cwnd_event(&mut self, _now: SimTime, w: &mut Window, _c: &ConnView, ev: CaEvent) {
        if matches!(ev, CaEvent::CwndRestart | CaEvent::TxStart) {
            self.restart();
        }
        self.note_window(w);
    }

    /// `tcp_veno_pkts_acked`.
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
        if !self.st.doing_veno_now || self.st.cnt_rtt <= MIN_SAMPLES {
            "reno"
        } else if self.slow_start {
            "slow_start"
        } else if self.congestive() {
            "congestive"
        } else {
            "non_congestive"
        }
    }

    fn target_window(&self) -> Option<f64> {
        self.last_target.map(|t| t as f64 / (1u64 << V_PARAM_SHIFT) as f64)
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

    use crate::transport::cc::testkit::{ms, us, Bulk};

    /// A bulk sender, one segment per ACK, hooks in the framework's order
    /// (the kit's [`Bulk`]); 1 ms between ACKs, from 1 s on.
    type Flow = Bulk<Veno>;

    fn flow(cfg: Config, cwnd: u32, ssthresh: u32) -> Flow {
        Bulk::with_ssthresh(Veno::new(cfg), cwnd, ssthresh)
    }

    /// As `flow`, with three 40 ms samples already taken (base 40 001 us),
    /// so that Veno, not the Reno fallback, handles the first ACK.
    fn primed(cwnd: u32, ssthresh: u32) -> Flow {
        primed_with(Config::default(), cwnd, ssthresh)
    }

    fn primed_with(cfg: Config, cwnd: u32, ssthresh: u32) -> Flow {
        let mut f = flow(cfg, cwnd, ssthresh);
        let v = f.view();
        for _ in 0..3 {
            let s = AckSample {
                pkts_acked: 0,
                rtt: Some(ms(40)),
                in_flight: cwnd,
            };
            f.cc.pkts_acked(f.t, &mut f.w, &v, &s);
        }
        assert_eq!(f.cc.base_rtt_us(), Some(40_001));
        // As the end of a cong_avoid would: the next ACK's own sample
        // is the "rtt" of its Veno step.
        f.cc.st.min_rtt = RTT_UNSET;
        f
    }

    // ----- configuration -----

    #[test]
    fn the_default_beta_is_three_segments_as_in_linux_and_the_paper() {
        let c = Config::default();
        assert_eq!(c.beta, 3);
        assert_eq!(c.validate(), Ok(()));
        let v = Veno::new(c);
        assert_eq!(v.beta, 6); // 3 << V_PARAM_SHIFT
        assert_eq!(v.name(), "veno");
    }

    #[test]
    fn validation_names_the_bad_parameter() {
        for beta in [0, 1 << 30] {
            let e = Config { beta }.validate().unwrap_err();
            assert!(e.contains("beta"), "{e}");
        }
        assert_eq!(Config { beta: (1 << 30) - 1 }.validate(), Ok(()));
    }

    #[test]
    fn the_registry_builds_veno_from_a_parameter_table_and_rejects_unknown_keys() {
        let cc = registry::build("veno", &serde_json::json!({"beta": 2})).unwrap();
        assert_eq!(cc.name(), "veno");
        assert!(registry::build("veno", &serde_json::json!({"beta": 0}))
            .err()
            .unwrap()
            .contains("beta"));
        assert!(registry::build("veno", &serde_json::json!({"alpha": 1})).is_err());
        assert_eq!(registry::resolve("veno", &serde_json::Value::Null).unwrap()["beta"], 3);
    }

    // ----- backlog estimate and the loss response -----

    #[test]
    fn the_backlog_is_computed_in_half_segments_from_this_acks_rtt() {
        // cwnd 40, base 40 001 us.
        //   rtt 42 001: target = 2*40*40001/42001 = 76, diff = 80 - 76 = 4 < 6
        //   rtt 43 001: target = 2*40*40001/43001 = 74, diff = 80 - 74 = 6 >= 6
        for (rtt, diff, congestive, mode) in [(42_000u64, 4, false, "non_congestive"), (43_000, 6, true, "congestive")]
        {
            let mut f = primed(40, 20);
            f.ack(us(rtt));
            assert_eq!(f.cc.diff_half_segments(), diff, "rtt {rtt}");
            assert_eq!(f.cc.congestive(), congestive);
            assert_eq!(f.cc.mode(), mode);
            assert_eq!(f.cc.target_window(), Some((80 - diff) as f64 / 2.0));
            assert_eq!(f.cc.queuing_delay(), Some(us(rtt - 40_000)));
        }
    }

    #[test]
    fn a_loss_with_a_small_backlog_keeps_four_fifths_of_the_window() {
        let mut f = primed(40, 20);
        f.ack(ms(42));
        // 40 * 4 / 5 = 32.
        assert_eq!(f.ssthresh(), 32);
        f.w.cwnd = 2;
        assert_eq!(f.ssthresh(), 2);
    }

    #[test]
    fn a_loss_with_a_backlog_of_beta_or_more_halves_the_window() {
        let mut f = primed(40, 20);
        f.ack(ms(43));
        assert_eq!(f.ssthresh(), 20);
        f.w.cwnd = 41;
        assert_eq!(f.ssthresh(), 20);
        f.w.cwnd = 3;
        assert_eq!(f.ssthresh(), 2);
    }

    #[test]
    fn before_any_veno_computation_a_loss_counts_as_random() {
        // diff starts at 0 (Linux zeroes the state): 4/5.
        let mut f = flow(Config::default(), 50, INFINITE_SSTHRESH);
        assert_eq!(f.ssthresh(), 40);
    }

    #[test]
    fn an_ack_without_an_rtt_sample_reads_as_congestive_as_in_linux() {
        // minrtt stays 0x7fffffff: target = 2*40*40001/2147483647 = 0,
        // diff = 80.
        let mut f = primed(40, 20);
        f.ack(ms(41));
        assert!(!f.cc.congestive());
        f.ack_with(None);
        assert_eq!(f.cc.diff_half_segments(), 80);
        assert_eq!(f.ssthresh(), 20);
        // The trace hooks show nothing for such a step.
        assert_eq!((f.cc.target_window(), f.cc.queuing_delay()), (None, None));
    }

    #[test]
    fn the_ack_that_ends_a_recovery_reads_as_congestive_as_in_linux() {
        // Linux order on that ACK: pkts_acked (sample), set_state(Open)
        // (veno_enable clears minrtt), cong_avoid: no sample left, diff = 2*cwnd.
        let mut f = primed(40, 20);
        f.set_state(CaState::Recovery);
        f.ack(ms(41)); // no cong_avoid in Recovery
        f.t += ms(1);
        f.una += 1;
        let v = f.view();
        f.cc.pkts_acked(
            f.t,
            &mut f.w,
            &v,
            &AckSample {
                pkts_acked: 1,
                rtt: Some(ms(41)),
                in_flight: 40,
            },
        );
        f.set_state(CaState::Open);
        let v = f.view();
        f.cc.cong_avoid(f.t, &mut f.w, &v, 1);
        assert_eq!(f.cc.diff_half_segments(), 80);
        assert_eq!(f.cc.mode(), "congestive");
        // The next ACK has its own sample again: diff 2.
        f.ack(ms(41));
        assert_eq!(f.cc.diff_half_segments(), 2);
    }

    #[test]
    fn the_last_open_state_estimate_decides_a_loss_found_in_disorder() {
        let mut f = primed(40, 20);
        f.ack(ms(42));
        f.set_state(CaState::Disorder);
        // Reno mode in Disorder: long RTTs do not touch diff.
        for _ in 0..5 {
            f.ack(ms(90));
        }
        assert_eq!(f.cc.diff_half_segments(), 4);
        assert_eq!(f.cc.mode(), "reno");
        assert_eq!(f.ssthresh(), 32);
    }

    // ----- growth -----

    #[test]
    fn without_backlog_the_window_grows_one_segment_per_window_of_acks() {
        // rtt 41 001 us: diff = 80 - 3200080/41001 (= 78) = 2 < 6.
        let mut f = primed(40, 20);
        for n in 1..=40 {
            f.ack(ms(41));
            assert_eq!(f.w.cwnd, if n < 40 { 40 } else { 41 }, "ACK {n}");
        }
        for n in 41..=81 {
            f.ack(ms(41));
            assert_eq!(f.w.cwnd, if n < 81 { 41 } else { 42 }, "ACK {n}");
        }
    }

    #[test]
    fn with_backlog_the_window_grows_every_other_rtt() {
        // rtt 43 001 us keeps diff at 6 for cwnd 40..43 (target 74, 76, 78, 80).
        // snd_cwnd_cnt counts ACKs; the ACK finding it >= cwnd resets it and,
        // on alternate occasions, adds a segment:
        //   ACKs 1..40 count to 40; ACK 41: +1 (41), inc = 0
        //   ACKs 42..82 count to 41; ACK 83: no increase, inc = 1
        //   ACKs 84..124 count to 41; ACK 125: +1 (42)
        let mut f = primed(40, 20);
        for n in 1..=125 {
            f.ack(ms(43));
            assert!(f.cc.congestive(), "ACK {n}");
            let want = match n {
                1..=40 => 40,
                41..=124 => 41,
                _ => 42,
            };
            assert_eq!(f.w.cwnd, want, "ACK {n}");
        }
        assert!(!f.cc.will_increase());
        // Half of Reno's rate: over 2(cwnd + 1) ACKs one segment.
    }

    #[test]
    fn slow_start_is_renos_and_its_leftover_goes_to_the_veno_rule() {
        let mut f = primed(10, 12);
        // ACKs 1, 2 slow-start to 12.
        f.ack(ms(40));
        f.ack(ms(40));
        assert_eq!((f.w.cwnd, f.cc.mode()), (12, "non_congestive"));
        // A stretch ACK of 5 at cwnd 12 < ssthresh 20: 8 slow start, 0 left.
        f.w.ssthresh = 20;
        f.t += ms(1);
        let v = f.view();
        f.cc.pkts_acked(
            f.t,
            &mut f.w,
            &v,
            &AckSample {
                pkts_acked: 5,
                rtt: Some(ms(40)),
                in_flight: 12,
            },
        );
        f.cc.cong_avoid(f.t, &mut f.w, &v, 5);
        assert_eq!((f.w.cwnd, f.w.cwnd_cnt), (17, 0));
        f.t += ms(1);
        f.cc.pkts_acked(
            f.t,
            &mut f.w,
            &v,
            &AckSample {
                pkts_acked: 5,
                rtt: Some(ms(40)),
                in_flight: 17,
            },
        );
        f.cc.cong_avoid(f.t, &mut f.w, &v, 5);
        // 17 + 3 = 20, 2 left over: AI credit 2 (no backlog: diff 0).
        assert_eq!((f.w.cwnd, f.w.cwnd_cnt), (20, 2));
        assert_eq!(f.cc.diff_half_segments(), 0);
    }

    #[test]
    fn the_first_three_samples_of_the_connection_use_reno() {
        // ACK 1 and 2 (1 and 2 samples): Reno slow start; ACK 3: Veno.
        let mut f = flow(Config::default(), 10, INFINITE_SSTHRESH);
        f.ack(ms(43));
        f.ack(ms(43));
        assert_eq!((f.cc.mode(), f.w.cwnd, f.cc.diff_half_segments()), ("reno", 12, 0));
        f.ack(ms(43));
        assert_eq!(f.cc.mode(), "slow_start");
        assert_eq!(f.w.cwnd, 13);
    }

    #[test]
    fn the_sample_count_is_never_reset_as_in_linux() {
        let mut f = primed(40, 20);
        f.set_state(CaState::Recovery);
        f.set_state(CaState::Open);
        let v = f.view();
        f.cc.cwnd_event(f.t, &mut f.w, &v, CaEvent::TxStart);
        assert_eq!(f.cc.samples(), 3);
        assert_eq!(f.cc.base_rtt_us(), None);
        // So the next ACK is a Veno step; with base and rtt from the same
        // sample the backlog is 0.
        f.ack(ms(60));
        assert_eq!((f.cc.mode(), f.cc.diff_half_segments()), ("non_congestive", 0));
    }

    #[test]
    fn the_sample_count_wraps_like_linuxs_u16() {
        let mut f = primed(40, 20);
        f.cc.st.cnt_rtt = u16::MAX;
        f.ack(ms(43)); // wraps to 0: Reno (cwnd_cnt 1)
        assert_eq!((f.cc.samples(), f.cc.mode()), (0, "reno"));
        assert_eq!(f.w.cwnd_cnt, 1);
    }

    #[test]
    fn outside_open_veno_is_off_and_reno_grows_the_window() {
        let mut f = primed(40, 20);
        f.set_state(CaState::Loss);
        assert!(!f.cc.enabled());
        for _ in 0..40 {
            f.ack(ms(43)); // congestive RTTs, but Reno: +1 per 40
        }
        assert_eq!(f.w.cwnd, 41);
        f.set_state(CaState::Open);
        assert!(f.cc.enabled());
    }

    #[test]
    fn an_application_limited_sender_does_not_grow() {
        let mut f = primed(40, 20);
        f.limited = false;
        for _ in 0..100 {
            f.ack(ms(41));
        }
        assert_eq!((f.w.cwnd, f.w.cwnd_cnt), (40, 0));
    }

    #[test]
    fn the_window_stays_at_two_segments_or_more_in_veno_mode() {
        // beta 1 (2 half segments), cwnd 1, no sample: diff = 2 - 0 >= 2,
        // congestive, no increase yet (cwnd_cnt 0 < 1): 1 is raised to 2.
        let mut f = primed_with(Config { beta: 1 }, 1, 1);
        f.ack_with(None);
        assert!(f.cc.congestive());
        assert_eq!((f.w.cwnd, f.w.cwnd_cnt), (2, 1));
    }

    // ----- end to end -----

    #[test]
    fn veno_fills_a_20_mbit_dumbbell() {
        use crate::scenario::config::ScenarioConfig;
        use crate::scenario::World;
        let cfg: ScenarioConfig = serde_json::from_value(serde_json::json!({
            "seed": 1, "duration_s": 10.0, "topology": "wired",
            "internet": {"rate_mbps": 20.0, "delay_ms": 20.0, "buffer_packets": 100},
            "flows": [{"cc": "veno"}],
        }))
        .unwrap();
        let rec = World::new(cfg, None).unwrap().run().recorder;
        let t = &rec.flow_tput;
        let late: Vec<usize> = (0..t.len()).filter(|&i| t.t[i] >= 2.0).collect();
        let bytes: u64 = late.iter().map(|&i| t.bytes[i]).sum();
        let span = late.iter().map(|&i| t.t[i]).fold(0.0, f64::max) + 0.1 - 2.0;
        let goodput = bytes as f64 * 8.0 / span / 1e6;
        assert!(goodput > 18.0 && goodput < 19.31, "goodput {goodput}");
        // Loss-based: the 100-packet buffer overflows.
        assert!(!rec.retransmits.is_empty());
    }
}
