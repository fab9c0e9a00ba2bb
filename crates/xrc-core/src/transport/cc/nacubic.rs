//! NACubic: the backward-compatible scheme of Abbasloo, Xu, Chao, "Toward
//! Optimal Performance with Network Assisted TCP at Mobile Edge", USENIX
//! HotEdge 2019 (`shared/papers/natcp-nacubic-network-assisted-tcp.txt`),
//! with the authors' release <https://github.com/Soheil-ab/natcp> at
//! `fe419ea504a84407f2f156806be6b1cadee7b92e`. See `natcp` for the
//! NetAssist reports and what the code shows.
//!
//! "NACubic ... simply works on top of the current TCP and only caps Cwnd
//! and pacing rate to the values calculated using feedback information"
//! (§1). In the code (`src/server.cc`, `feedback == 3`): the connection runs
//! the kernel's CUBIC; every 50 ms the server sets `TCP_CWND_CLAMP` =
//! 2 · BW · minRTT bytes and `SO_MAX_PACING_RATE` = BW bytes/s.
//!
//! ```text
//!   snd_cwnd_clamp = α · (1/β) · minRTT · BW      (the NATCP window, α = 2)
//!   pacing rate    = min( Linux's rate, BW/β )    Linux: mss·max(cwnd, packets_out)/srtt × (2 | 1.2)
//! ```
//!
//! The window is CUBIC's (`cubic::Cubic`, Linux's `tcp_cubic.c`, unmodified
//! and held by composition: every hook is delegated), capped as Linux caps
//! `snd_cwnd` at `snd_cwnd_clamp`. When reports stop, it is plain CUBIC.
//!
//! Choices, numbered:
//! 1. *The cap* is `natcp::Report::window` (⌈α·BW·minRTT/(8·β·MSS)⌉, at
//!    least `min_cwnd` = 4) written into [`Window::cwnd_clamp`], which the
//!    framework and Linux's own helpers (`tcp_slow_start`,
//!    `tcp_cong_avoid_ai`) enforce; a report below the current window cuts
//!    it at once.
//! 2. *Pacing.* In Linux 4.13 setting `SO_MAX_PACING_RATE` turns on TCP's
//!    internal pacing (`sk_pacing_status` = `SK_PACING_NEEDED`), and
//!    `tcp_update_pacing_rate` sets `sk_pacing_rate` = min(its rate,
//!    `sk_max_pacing_rate`). So NACubic is paced while assisted, at the
//!    smaller of Linux's default rate (2× cwnd/srtt below ssthresh/2, 1.2×
//!    above) and BW/β (the per-flow share; the code's single flow gets BW).
//!    Linux's rate is computed from the window, ssthresh, packets out and
//!    srtt seen at the last hook (on an ACK in recovery, before PRR adjusts
//!    the window: one ACK late). Before any RTT sample Linux's rate is
//!    unlimited, so the cap alone applies.
//! 3. *Fallback* when no report arrived for `feedback_timeout_ms` (150 ms,
//!    three periods): the clamp is lifted and pacing stops (plain CUBIC, as
//!    before the first report). CUBIC's state is never touched, so it goes on
//!    from where the cap left it. A fresh report re-applies the cap.
//! 4. *Per-flow share* as in `natcp` (choice 3 there).

use serde::{Deserialize, Serialize};

use super::cubic::{self, Cubic};
use super::natcp::{self, Report};
use super::CcConfig;
use super::{
    AckFlags, AckSample, CaEvent, CaState, CongestionControl, ConnView, Feedback, RateSample, Signals, Window,
};
use crate::units::{BitRate, SimDuration, SimTime};

/// `snd_cwnd_clamp` with no cap (the framework's default).
const NO_CLAMP: u32 = u32::MAX / 2;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// α of the NATCP window used as the cap (paper and code: 2).
    pub alpha: f64,
    /// Without a report for this long the cap is lifted, ms.
    pub feedback_timeout_ms: f64,
    /// Smallest cap, segments.
    pub min_cwnd: u32,
    /// CUBIC's parameters.
    pub cubic: cubic::Config,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            alpha: 2.0,
            feedback_timeout_ms: 150.0,
            min_cwnd: natcp::BBR_MIN_CWND,
            cubic: cubic::Config::default(),
        }
    }
}

impl CcConfig for Config {
    fn build(self, _stream: u64) -> Box<dyn super::CongestionControl> {
        Box::new(NaCubic::new(self))
    }

    fn validate(&self) -> Result<(), String> {
        natcp::validate_common(self.alpha, self.feedback_timeout_ms, self.min_cwnd)?;
        self.cubic.validate().map_err(|e| format!("cubic.{e}"))
    }
}

/// What Linux's `tcp_update_pacing_rate` reads, as of the last hook.
#[derive(Copy, Clone, Debug, Default)]
struct PacingInputs {
    cwnd: u32,
    ssthresh: u32,
    packets_out: u32,
    srtt: Option<SimDuration>,
}

pub struct NaCubic {
    cfg: Config,
    timeout: SimDuration,
    cubic: Cubic,
    report: Option<Report>,
    /// The cap in force, segments.
    cap: Option<u32>,
    mss: u32,
    pacing: PacingInputs,
}

impl NaCubic {
    pub fn new(cfg: Config) -> Self {
        let timeout =
            SimDuration::try_from_millis_f64(cfg.feedback_timeout_ms).unwrap_or(SimDuration::from_millis(150));
        let cubic = Cubic::new(cfg.cubic.clone());
        NaCubic {
            cfg,
            timeout,
            cubic,
            report: None,
            cap: None,
            mss: 1448,
            pacing: PacingInputs::default(),
        }
    }

    /// The CUBIC inside.
    pub fn cubic(&self) -> &Cubic {
        &self.cubic
    }
    pub fn cap(&self) -> Option<u32> {
        self.cap
    }

    /// Lifts the cap once the last report is too old (choice 3).
    fn check_fresh(&mut self, now: SimTime, w: &mut Window) {
        if self.cap.is_some() && !self.report.is_some_and(|r| r.fresh(now, self.timeout)) {
            self.cap = None;
            w.cwnd_clamp = NO_CLAMP;
        }
    }

    fn note(&mut self, w: &Window, c: &ConnView) {
        if c.mss > 0 {
            self.mss = c.mss;
        }
        self.pacing = PacingInputs {
            cwnd: w.cwnd,
            ssthresh: w.ssthresh,
            packets_out: c.packets_out,
            srtt: c.srtt,
        };
    }

    /// Linux `tcp_update_pacing_rate`, bit/s; `None` before an RTT sample
    /// (Linux leaves the rate unlimited).
    fn linux_rate_bps(&self) -> Option<u64> {
        let p = self.pacing;
        let srtt = p.srtt?.as_secs_f64();
        if srtt <= 0.0 {
            return None;
        }
        let ratio = if p.cwnd < p.ssthresh / 2 { 2.0 } else { 1.2 };
        let bytes = self.mss as f64 * p.cwnd.max(p.packets_out) as f64;
        Some((bytes * 8.0 * ratio / srtt) as u64)
    }
}

impl CongestionControl for NaCubic {
    fn name(&self) -> &'static str {
        "nacubic"
    }

    fn init(&mut self, now: SimTime, w: &mut Window, c: &ConnView) {
        self.cubic.init(now, w, c);
        self.note(w, c);
    }

    fn ssthresh(&mut self, now: SimTime, w: &Window, c: &ConnView) -> u32 {
        self.cubic.ssthresh(now, w, c)
    }

    fn cong_avoid(&mut self, now: SimTime, w: &mut Window, c: &ConnView, acked: u32) {
        self.check_fresh(now, w);
        self.cubic.cong_avoid(now, w, c, acked);
        w.cwnd = w.cwnd.min(w.cwnd_clamp);
        self.note(w, c);
    }

    fn set_state(&mut self, now: SimTime, w: &mut Window, c: &ConnView, new: CaState) {
        self.cubic.set_state(now, w, c, new);
        self.note(w, c);
    }

    fn cwnd_event(&mut self, now: SimTime, w: &mut Window, c: &ConnView, ev: CaEvent) {
        self.cubic.cwnd_event(now, w, c, ev);
    }

    fn in_ack_event(&mut self, now: SimTime, w: &mut Window, c: &ConnView, flags: AckFlags) {
        self.check_fresh(now, w);
        self.cubic.in_ack_event(now, w, c, flags);
    }

    fn pkts_acked(&mut self, now: SimTime, w: &mut Window, c: &ConnView, s: &AckSample) {
        self.cubic.pkts_acked(now, w, c, s);
        self.note(w, c);
    }

    fn undo_cwnd(&mut self, now: SimTime, w: &Window, prior_cwnd: u32) -> u32 {
        self.cubic.undo_cwnd(now, w, prior_cwnd).min(w.cwnd_clamp)
    }

    fn cong_control(&mut self, _now: SimTime, _w: &mut Window, _c: &ConnView, _rs: &RateSample) -> bool {
        false
    }

    fn on_feedback(&mut self, now: SimTime, w: &mut Window, c: &ConnView, fb: &Feedback) {
        let Some(r) = Report::from_feedback(now, fb) else {
            return;
        };
        if c.mss > 0 {
            self.mss = c.mss;
        }
        self.report = Some(r);
        let cap = r.window(self.cfg.alpha, self.mss, self.cfg.min_cwnd);
        self.cap = Some(cap);
        w.cwnd_clamp = cap;
        w.cwnd = w.cwnd.min(cap);
        self.note(w, c);
    }

    fn pacing_rate(&self) -> Option<BitRate> {
        self.cap?;
        let r = self.report?;
        let max = r.pacing(1.0, self.mss, self.cfg.min_cwnd).bps();
        let rate = self.linux_rate_bps().map_or(max, |l| l.min(max)).max(1);
        Some(BitRate::from_bps(rate))
    }

    fn signals(&self) -> Signals {
        Signals {
            net_assist: true,
            ..Signals::default()
        }
    }

    fn mode(&self) -> &'static str {
        match (self.cap.is_some(), self.cubic.mode()) {
            (true, "slow_start") => "capped_slow_start",
            (true, _) => "capped",
            (false, m) => m,
        }
    }

    fn target_window(&self) -> Option<f64> {
        self.cap.map(|c| c as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::cc::{registry, CcConfig};

    use crate::transport::cc::testkit::{at_ms as at, MSS};

    fn view(now: SimTime, srtt_ms: Option<u64>) -> ConnView {
        ConnView {
            now,
            mss: MSS,
            is_cwnd_limited: true,
            srtt: srtt_ms.map(SimDuration::from_millis),
            ..ConnView::default()
        }
    }

    fn report(n: &mut NaCubic, w: &mut Window, now: SimTime, mbps: u64, rtt_ms: u64, flows: u32) {
        let fb = Feedback::NetAssist {
            bw_bps: mbps * 1_000_000,
            min_rtt: SimDuration::from_millis(rtt_ms),
            flows,
        };
        n.on_feedback(now, w, &view(now, None), &fb);
    }

    /// The framework's order for one ACK in Open state: cong_control
    /// (declined), cong_avoid, then the clamp.
    fn ack(n: &mut NaCubic, w: &mut Window, now: SimTime, acked: u32, srtt_ms: u64) {
        let v = view(now, Some(srtt_ms));
        assert!(!n.cong_control(now, w, &v, &RateSample::default()));
        n.cong_avoid(now, w, &v, acked);
        w.cwnd = w.cwnd.clamp(1, w.cwnd_clamp);
    }

    #[test]
    fn slow_start_is_capped_by_the_natcp_window() {
        let mut n = NaCubic::new(Config::default());
        let mut w = Window::new(10);
        n.init(SimTime::ZERO, &mut w, &view(SimTime::ZERO, None));
        // 2 · 12 Mbit/s · 40 ms = 120 000 bytes = 82.9 → 83 segments.
        report(&mut n, &mut w, at(50), 12, 40, 1);
        assert_eq!(n.cap(), Some(83));
        for _ in 0..100 {
            ack(&mut n, &mut w, at(60), 2, 40);
        }
        assert_eq!(w.cwnd, 83);
        assert_eq!(n.mode(), "capped_slow_start");
    }

    #[test]
    fn a_lower_report_cuts_the_window_and_two_flows_halve_the_cap() {
        let mut n = NaCubic::new(Config::default());
        let mut w = Window::new(10);
        w.cwnd = 150;
        report(&mut n, &mut w, at(50), 12, 40, 1);
        assert_eq!(w.cwnd, 83);
        report(&mut n, &mut w, at(100), 12, 40, 2);
        // 60 000 bytes = 41.4 → 42 segments.
        assert_eq!(w.cwnd, 42);
        assert_eq!(w.cwnd_clamp, 42);
    }

    #[test]
    fn after_the_timeout_the_cap_is_lifted_and_cubic_grows_past_it() {
        let mut n = NaCubic::new(Config::default());
        let mut w = Window::new(10);
        n.init(SimTime::ZERO, &mut w, &view(SimTime::ZERO, None));
        report(&mut n, &mut w, at(50), 12, 40, 1);
        for _ in 0..100 {
            ack(&mut n, &mut w, at(60), 2, 40);
        }
        assert_eq!(w.cwnd, 83);
        ack(&mut n, &mut w, at(200), 2, 40);
        assert_eq!(w.cwnd, 83, "150 ms after the report the cap still holds");
        ack(&mut n, &mut w, at(201), 2, 40);
        assert_eq!(w.cwnd, 85, "151 ms: plain CUBIC (still in slow start)");
        assert_eq!(n.cap(), None);
        assert_eq!(w.cwnd_clamp, NO_CLAMP);
        assert_eq!(n.pacing_rate(), None);
        assert_eq!(n.mode(), "slow_start");
    }

    #[test]
    fn pacing_is_the_smaller_of_linux_rate_and_the_reported_bandwidth() {
        let mut n = NaCubic::new(Config::default());
        let mut w = Window::new(10);
        n.init(SimTime::ZERO, &mut w, &view(SimTime::ZERO, None));
        assert_eq!(n.pacing_rate(), None, "plain CUBIC is not paced");
        report(&mut n, &mut w, at(50), 12, 40, 1);
        // No RTT sample yet: Linux's rate is unlimited, the cap applies.
        assert_eq!(n.pacing_rate(), Some(BitRate::from_bps(12_000_000)));
        // cwnd 10, srtt 40 ms, slow start: 2 · 10 · 1448 · 8 / 0.04 = 5.792 Mbit/s.
        ack(&mut n, &mut w, at(60), 0, 40);
        assert_eq!(w.cwnd, 10);
        assert_eq!(n.pacing_rate(), Some(BitRate::from_bps(5_792_000)));
        // cwnd 83: 2 · 83 · 1448 · 8 / 0.04 = 48 Mbit/s > 12: the cap.
        for _ in 0..100 {
            ack(&mut n, &mut w, at(60), 2, 40);
        }
        assert_eq!(n.pacing_rate(), Some(BitRate::from_bps(12_000_000)));
    }

    #[test]
    fn losses_are_cubic_s_and_respect_the_cap() {
        let mut n = NaCubic::new(Config::default());
        let mut w = Window::new(10);
        report(&mut n, &mut w, at(50), 12, 40, 1);
        w.cwnd = 80;
        // CUBIC's β = 717/1024: 80 → 56.
        assert_eq!(n.ssthresh(at(60), &w, &view(at(60), Some(40))), 56);
        assert_eq!(n.undo_cwnd(SimTime::ZERO, &w, 200), 83, "undo never exceeds the cap");
        assert!(n.signals().net_assist);
    }

    #[test]
    fn bad_parameters_are_rejected_by_name() {
        assert!(Config {
            min_cwnd: 0,
            ..Config::default()
        }
        .validate()
        .unwrap_err()
        .contains("min_cwnd"));
        assert!(Config {
            alpha: -2.0,
            ..Config::default()
        }
        .validate()
        .unwrap_err()
        .contains("alpha"));
        assert!(registry::build("nacubic", &serde_json::json!({"cubic": {"hz": 7}}))
            .err()
            .unwrap()
            .contains("hz"));
    }
}
