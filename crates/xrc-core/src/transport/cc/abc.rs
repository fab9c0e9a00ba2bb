//! ABC sender (Accel-Brake Control): P. Goyal, A. Agarwal, R. Netravali,
//! M. Alizadeh, H. Balakrishnan, "ABC: A Simple Explicit Congestion
//! Controller for Wireless Networks", USENIX NSDI 2020 (arXiv 1905.03429),
//! and the authors' code <https://github.com/prateshg/ABC-NSDI2020> at
//! `b1693cbbeb877c2e144111637586fde1bb8e9537`: `tcp_abc.c` (the basic Linux
//! endpoint) and `tcp_abccubic.c` (the endpoint "with modifications for
//! coexistence with non-ABC routers", paper §4.1). The router half (marking)
//! is `ran::abc`; the receiver echoes how many of the data packets an ACK
//! covers were marked accelerate and brake.
//!
//! # The model
//!
//! The router marks a fraction f(t) of packets *accelerate* and the rest
//! *brake*; the sender
//!
//! ```text
//!   accelerate:  w ← w + 1          (send two packets for the one acknowledged)
//!   brake:       w ← w − 1          (send none)
//!   every ACKed packet: w ← w + 1/w (additive increase, for fairness)
//! ```
//!
//! so the window grows by (2f − 1) per acknowledged packet and the sending
//! rate one RTT later is 2f times the current dequeue rate. Accelerate and
//! brake alone are multiplicative (MIMD) and keep the ratio between flows;
//! the additive increase makes them converge to fairness (AIMD, Chiu–Jain).
//!
//! `tcp_abc.c`, per ACK that acknowledged data (`abc_in_ack`):
//! * `ai_cwnd += 1; if ai_cwnd > cwnd { ai_cwnd -= cwnd; cwnd += 1 }`;
//! * ECE (brake, from the router's CE mark echoed DCTCP-style):
//!   `if cwnd > 5 + acked_segments { cwnd -= acked_segments }`; otherwise
//!   (accelerate) `cwnd += acked_segments`;
//! * `cong_control` is defined and empty, so Linux skips PRR and
//!   `cong_avoid`: the window is ABC's on every ACK, including in recovery;
//! * `ssthresh` returns `snd_ssthresh` unchanged (infinite): ABC does not
//!   react to loss; `undo_cwnd` returns ABC's window;
//! * `pkts_acked` sets `sk_pacing_rate = cwnd·100·(29 000 000/rtt_us)` bytes/s
//!   = 2 · cwnd · 1450 bytes / RTT: pacing at twice the window per RTT sample
//!   (internal pacing requested in `init`).
//!
//! `tcp_abccubic.c` (§4.1, two windows): the sender also keeps a CUBIC
//! window w_nonabc, grown by CUBIC on every ACK and cut by CUBIC's β when a
//! loss starts recovery (`bictcp_state(Recovery)` → `bictcp_recalc_ssthresh`,
//! ssthresh = the new w_nonabc), and uses cwnd = min(w_abc, w_nonabc); on
//! every ACK and loss both windows are capped at 2·in_flight + 5 so that the
//! window that is not in control cannot run away. Pacing is 2·cwnd/RTT.
//!
//! # Choices and deviations, numbered
//!
//! 1. *Marks are counted exactly.* The network side echoes per ACK the
//!    number of accelerate and brake marks among the data packets it covers
//!    (an accurate-ECN style echo); the kernel instead applies one ECE flag
//!    to all bytes an ACK newly acknowledges, which the DCTCP receiver state
//!    machine makes per-packet accurate. Here each mark counts once, in the
//!    order "accelerates, then brakes".
//! 2. *Window floor.* A brake is applied only while the window is above
//!    `min_cwnd` = 6 segments: the kernel's `cwnd > 5 + acked` with one
//!    segment per mark.
//! 3. *Additive increase per segment.* The kernel counts one AI credit per
//!    ACK event; here per delivered segment (`acked_sacked`), which is the
//!    paper's per-packet 1/w and equals the kernel's count with per-packet
//!    ACKs (with delayed ACKs the kernel's AI is half as fast).
//! 4. *Pacing* at `pacing_gain` (2) × cwnd × MSS / the latest RTT sample,
//!    set on every ACK after the window update (the kernel's `pkts_acked`
//!    runs after `in_ack_event`); unpaced before the first RTT sample, as
//!    Linux's initial `sk_pacing_rate` is unlimited. The kernel's constant
//!    (1450 bytes a segment, 2.003×) becomes the MSS and exactly 2.
//! 5. *Two windows* (`non_abc_window`, default on): `tcp_abccubic.c`, with
//!    `cubic::Cubic` (Linux's CUBIC, HyStart included) running on a shadow
//!    window that starts at 10 segments with infinite ssthresh, as the
//!    kernel's `cubic_snd_cwnd`. The kernel's CUBIC considers itself
//!    window-limited in slow start while `cubic_cwnd < 2·max_packets_out`;
//!    here the packets in flight before the ACK stand in for
//!    `max_packets_out`. With `non_abc_window = false` the sender is
//!    `tcp_abc.c` and ignores losses (the authors' default experiment,
//!    `run-exp.sh`, uses that module).
//! 6. *A timeout* (RTO) collapses the framework's window to in flight + 1;
//!    as in the kernel, the next ACK sets it back to ABC's window. With two
//!    windows, CUBIC's state is reset (`bictcp_reset`) but w_nonabc kept.
//! 7. *Coexistence with non-ABC flows at an ABC router* (§4.2) is the
//!    router's business (separate queues, weighted scheduling); nothing in
//!    the sender changes, and the cell here does not implement it.

use serde::{Deserialize, Serialize};

use super::cubic::{self, Cubic};
use super::CcConfig;
use super::{
    AckSample, CaEvent, CaState, CongestionControl, ConnView, Feedback, RateSample, Signals, Window, INFINITE_SSTHRESH,
};
use crate::units::{BitRate, SimDuration, SimTime};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Brakes never take the window below this, segments (kernel: 5 + 1).
    pub min_cwnd: u32,
    /// One segment of additive increase per window of acknowledged segments.
    pub additive_increase: bool,
    /// Pacing rate as a multiple of cwnd per RTT (kernel: 2).
    pub pacing_gain: f64,
    /// Keep the §4.1 CUBIC window and use min(w_abc, w_nonabc).
    pub non_abc_window: bool,
    /// Initial CUBIC window, segments (kernel: 10).
    pub non_abc_initial_cwnd: u32,
    /// The non-ABC window's CUBIC parameters.
    pub cubic: cubic::Config,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            min_cwnd: 6,
            additive_increase: true,
            pacing_gain: 2.0,
            non_abc_window: true,
            non_abc_initial_cwnd: 10,
            cubic: cubic::Config::default(),
        }
    }
}

impl CcConfig for Config {
    fn build(self, _stream: u64) -> Box<dyn super::CongestionControl> {
        Box::new(Abc::new(self))
    }

    fn validate(&self) -> Result<(), String> {
        crate::transport::check_window_segments("min_cwnd", self.min_cwnd)?;
        if !(self.pacing_gain.is_finite() && self.pacing_gain > 0.0) {
            return Err(format!(
                "pacing_gain must be a positive number, got {}",
                self.pacing_gain
            ));
        }
        crate::transport::check_window_segments("non_abc_initial_cwnd", self.non_abc_initial_cwnd)?;
        self.cubic.validate().map_err(|e| format!("cubic.{e}"))
    }
}

/// The §4.1 non-ABC window: CUBIC on a window of its own.
struct NonAbc {
    cubic: Cubic,
    w: Window,
}

pub struct Abc {
    cfg: Config,
    /// w_abc, segments (the kernel's `loss_cwnd`).
    w_abc: u32,
    /// Additive-increase credit, segments (`ai_cwnd`).
    ai_cnt: u32,
    /// Marks received since the last window update.
    pending_accel: u32,
    pending_brake: u32,
    /// Marks over the connection's life.
    accel_total: u64,
    brake_total: u64,
    last_rtt: Option<SimDuration>,
    pacing: Option<BitRate>,
    non_abc: Option<NonAbc>,
    mss: u32,
    initialized: bool,
}

impl Abc {
    pub fn new(cfg: Config) -> Self {
        let non_abc = cfg.non_abc_window.then(|| {
            let mut w = Window::new(cfg.non_abc_initial_cwnd);
            w.ssthresh = INFINITE_SSTHRESH;
            NonAbc {
                cubic: Cubic::new(cfg.cubic.clone()),
                w,
            }
        });
        Abc {
            cfg,
            w_abc: 0,
            ai_cnt: 0,
            pending_accel: 0,
            pending_brake: 0,
            accel_total: 0,
            brake_total: 0,
            last_rtt: None,
            pacing: None,
            non_abc,
            mss: 1448,
            initialized: false,
        }
    }

    /// w_abc, segments.
    pub fn abc_window(&self) -> u32 {
        self.w_abc
    }
    /// w_nonabc, segments (with two windows).
    pub fn non_abc_window(&self) -> Option<u32> {
        self.non_abc.as_ref().map(|n| n.w.cwnd)
    }
    /// (accelerate, brake) marks received so far.
    pub fn marks(&self) -> (u64, u64) {
        (self.accel_total, self.brake_total)
    }

    fn ensure_init(&mut self, w: &Window) {
        if !self.initialized {
            self.initialized = true;
            // abc_init: loss_cwnd = snd_cwnd.
            self.w_abc = w.cwnd;
        }
    }

    /// `abc_in_ack` for `acked` newly delivered segments and the marks
    /// echoed since the last update.
    fn apply_marks(&mut self, acked: u32) {
        if self.cfg.additive_increase && acked > 0 {
            self.ai_cnt += acked;
            while self.ai_cnt > self.w_abc.max(1) {
                self.ai_cnt -= self.w_abc.max(1);
                self.w_abc += 1;
            }
        }
        self.w_abc = self.w_abc.saturating_add(std::mem::take(&mut self.pending_accel));
        for _ in 0..std::mem::take(&mut self.pending_brake) {
            if self.w_abc > self.cfg.min_cwnd {
                self.w_abc -= 1;
            }
        }
    }

    /// Both windows ≤ 2·in_flight + 5 (`tcp_abccubic.c`).
    fn cap_windows(&mut self, in_flight: u32) {
        if let Some(n) = self.non_abc.as_mut() {
            let cap = in_flight.saturating_mul(2).saturating_add(5);
            n.w.cwnd = n.w.cwnd.min(cap);
            self.w_abc = self.w_abc.min(cap);
        }
    }

    fn window(&self) -> u32 {
        match &self.non_abc {
            Some(n) => self.w_abc.min(n.w.cwnd),
            None => self.w_abc,
        }
        .max(1)
    }

    fn update_pacing(&mut self, cwnd: u32) {
        if let Some(rtt) = self.last_rtt.filter(|r| !r.is_zero()) {
            let bps = self.cfg.pacing_gain * cwnd as f64 * self.mss as f64 * 8.0 / rtt.as_secs_f64();
            self.pacing = Some(BitRate::from_bps((bps as u64).max(1)));
        }
    }
}

impl CongestionControl for Abc {
    fn name(&self) -> &'static str {
        "abc"
    }

    fn init(&mut self, now: SimTime, w: &mut Window, c: &ConnView) {
        if c.mss > 0 {
            self.mss = c.mss;
        }
        self.ensure_init(w);
        if let Some(n) = self.non_abc.as_mut() {
            n.cubic.init(now, &mut n.w, c);
        }
    }

    /// `abc_ssthresh`: `snd_ssthresh` unchanged (with two windows it is
    /// CUBIC's, set when recovery starts).
    fn ssthresh(&mut self, _now: SimTime, w: &Window, _c: &ConnView) -> u32 {
        w.ssthresh
    }

    /// Never reached: `cong_control` takes every ACK.
    fn cong_avoid(&mut self, _now: SimTime, _w: &mut Window, _c: &ConnView, _acked: u32) {}

    fn set_state(&mut self, now: SimTime, w: &mut Window, c: &ConnView, new: CaState) {
        let in_flight = c.packets_in_flight;
        let Some(n) = self.non_abc.as_mut() else { return };
        match new {
            CaState::Recovery => {
                // bictcp_recalc_ssthresh: CUBIC's multiplicative decrease.
                let s = n.cubic.ssthresh(now, &n.w, c);
                n.w.cwnd = s;
                n.w.ssthresh = s;
                n.w.cwnd_cnt = 0;
                w.ssthresh = s;
                self.cap_windows(in_flight);
                w.cwnd = self.window();
            }
            CaState::Loss => {
                // bictcp_reset and hystart reset; w_nonabc is kept.
                let keep = n.w.cwnd;
                n.cubic.set_state(now, &mut n.w, c, new);
                n.w.cwnd = keep;
            }
            _ => {}
        }
    }

    fn cwnd_event(&mut self, now: SimTime, _w: &mut Window, c: &ConnView, ev: CaEvent) {
        if let Some(n) = self.non_abc.as_mut() {
            n.cubic.cwnd_event(now, &mut n.w, c, ev);
        }
    }

    fn pkts_acked(&mut self, now: SimTime, _w: &mut Window, c: &ConnView, s: &AckSample) {
        if let Some(r) = s.rtt {
            self.last_rtt = Some(r);
        }
        if let Some(n) = self.non_abc.as_mut() {
            n.cubic.pkts_acked(now, &mut n.w, c, s);
        }
    }

    /// `abc_cwnd_undo`: ABC's window.
    fn undo_cwnd(&mut self, _now: SimTime, _w: &Window, _prior_cwnd: u32) -> u32 {
        self.window()
    }

    fn cong_control(&mut self, now: SimTime, w: &mut Window, c: &ConnView, rs: &RateSample) -> bool {
        self.ensure_init(w);
        let acked = rs.acked_sacked;
        self.apply_marks(acked);
        if let Some(n) = self.non_abc.as_mut() {
            if acked > 0 {
                // bictcp_cong_avoid on the shadow window (choice 5).
                let limited = if n.w.in_slow_start() {
                    n.w.cwnd < 2 * rs.prior_in_flight.max(c.packets_out)
                } else {
                    c.is_cwnd_limited
                };
                let view = ConnView {
                    is_cwnd_limited: limited,
                    ..c.clone()
                };
                n.cubic.cong_avoid(now, &mut n.w, &view, acked);
            }
            w.ssthresh = n.w.ssthresh;
            self.cap_windows(c.packets_in_flight);
        }
        w.cwnd = self.window().min(w.cwnd_clamp);
        self.update_pacing(w.cwnd);
        true
    }

    fn on_feedback(&mut self, _now: SimTime, w: &mut Window, _c: &ConnView, fb: &Feedback) {
        let Feedback::Abc { accelerate, brake } = *fb else {
            return;
        };
        self.ensure_init(w);
        self.pending_accel += accelerate as u32;
        self.pending_brake += brake as u32;
        self.accel_total += accelerate as u64;
        self.brake_total += brake as u64;
    }

    fn pacing_rate(&self) -> Option<BitRate> {
        self.pacing
    }

    fn signals(&self) -> Signals {
        Signals {
            abc: true,
            ..Signals::default()
        }
    }

    fn mode(&self) -> &'static str {
        match &self.non_abc {
            Some(n) if n.w.cwnd < self.w_abc => "non_abc",
            _ => "abc",
        }
    }

    fn target_window(&self) -> Option<f64> {
        Some(self.w_abc as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::cc::{registry, CcConfig};

    use crate::transport::cc::testkit::MSS;

    fn single() -> Config {
        Config {
            non_abc_window: false,
            ..Config::default()
        }
    }

    fn view(in_flight: u32) -> ConnView {
        ConnView {
            mss: MSS,
            packets_out: in_flight,
            packets_in_flight: in_flight,
            is_cwnd_limited: true,
            ..ConnView::default()
        }
    }

    /// One ACK: the echoed marks, then the window update for `acked`
    /// delivered segments with `in_flight` segments left in flight.
    fn ack(a: &mut Abc, w: &mut Window, accel: u16, brake: u16, acked: u32, in_flight: u32) {
        let c = view(in_flight);
        if accel + brake > 0 {
            a.on_feedback(
                SimTime::ZERO,
                w,
                &c,
                &Feedback::Abc {
                    accelerate: accel,
                    brake,
                },
            );
        }
        let rs = RateSample {
            acked_sacked: acked,
            prior_in_flight: in_flight + acked,
            ..RateSample::default()
        };
        assert!(a.cong_control(SimTime::ZERO, w, &c, &rs));
    }

    fn start(cfg: Config, cwnd: u32) -> (Abc, Window) {
        let mut a = Abc::new(cfg);
        let mut w = Window::new(cwnd);
        a.init(SimTime::ZERO, &mut w, &view(0));
        (a, w)
    }

    #[test]
    fn three_accelerates_and_one_brake_grow_the_window_by_two() {
        let (mut a, mut w) = start(
            Config {
                additive_increase: false,
                ..single()
            },
            20,
        );
        ack(&mut a, &mut w, 3, 1, 4, 20);
        assert_eq!(w.cwnd, 22);
        // Marks alone: per packet the window moves by 2f − 1.
        ack(&mut a, &mut w, 0, 2, 2, 20);
        assert_eq!(w.cwnd, 20);
    }

    #[test]
    fn additive_increase_adds_one_segment_per_window_of_acknowledged_segments() {
        let (mut a, mut w) = start(single(), 10);
        // Half accelerate, half brake: the marks cancel; AI alone moves the window.
        for _ in 0..5 {
            ack(&mut a, &mut w, 1, 1, 2, 10);
        }
        assert_eq!(w.cwnd, 10, "10 credits: not yet more than cwnd");
        ack(&mut a, &mut w, 1, 1, 2, 10);
        assert_eq!(w.cwnd, 11, "12 credits > 10: one segment, one credit carried");
        assert_eq!(a.ai_cnt, 2);
    }

    #[test]
    fn brakes_stop_at_the_floor_of_six_segments() {
        let (mut a, mut w) = start(
            Config {
                additive_increase: false,
                ..single()
            },
            8,
        );
        ack(&mut a, &mut w, 0, 5, 5, 8);
        assert_eq!(w.cwnd, 6);
        ack(&mut a, &mut w, 1, 0, 1, 6);
        assert_eq!(w.cwnd, 7);
    }

    #[test]
    fn abc_paces_at_twice_the_window_per_rtt_sample() {
        let (mut a, mut w) = start(single(), 10);
        ack(&mut a, &mut w, 1, 0, 1, 10);
        assert_eq!(a.pacing_rate(), None, "no RTT sample yet");
        let s = AckSample {
            pkts_acked: 1,
            rtt: Some(SimDuration::from_millis(40)),
            in_flight: 10,
        };
        a.pkts_acked(SimTime::ZERO, &mut w, &view(10), &s);
        ack(&mut a, &mut w, 1, 0, 1, 10);
        assert_eq!(w.cwnd, 12);
        // 2 · 12 · 1448 bytes · 8 / 40 ms = 6.9504 Mbit/s.
        assert_eq!(a.pacing_rate(), Some(BitRate::from_bps(6_950_400)));
    }

    #[test]
    fn a_single_window_abc_ignores_losses_and_restores_its_window_after_a_timeout() {
        let (mut a, mut w) = start(
            Config {
                additive_increase: false,
                ..single()
            },
            30,
        );
        let ss = w.ssthresh;
        assert_eq!(a.ssthresh(SimTime::ZERO, &w, &view(30)), ss);
        a.set_state(SimTime::ZERO, &mut w, &view(30), CaState::Recovery);
        w.cwnd = 5; // the framework after an RTO: in flight + 1
        ack(&mut a, &mut w, 0, 0, 1, 4);
        assert_eq!(w.cwnd, 30);
        assert_eq!(a.undo_cwnd(SimTime::ZERO, &w, 50), 30);
    }

    #[test]
    fn with_two_windows_a_loss_cuts_the_cubic_window_and_the_minimum_rules() {
        let (mut a, mut w) = start(
            Config {
                additive_increase: false,
                ..Config::default()
            },
            10,
        );
        // Accelerate every packet: w_abc doubles per window; CUBIC slow-starts alongside.
        let mut in_flight = 10;
        for _ in 0..40 {
            ack(&mut a, &mut w, 1, 0, 1, in_flight);
            in_flight = w.cwnd;
        }
        assert_eq!(a.abc_window(), 50);
        assert_eq!(a.non_abc_window(), Some(50));
        assert_eq!(w.cwnd, 50);
        // A loss: CUBIC's β cuts w_nonabc to 35; both are capped at 2·in_flight + 5.
        a.set_state(SimTime::ZERO, &mut w, &view(50), CaState::Recovery);
        assert_eq!(a.non_abc_window(), Some(35));
        assert_eq!(w.ssthresh, 35);
        assert_eq!(w.cwnd, 35);
        assert_eq!(a.mode(), "non_abc");
        // In flight 10: both windows ≤ 25.
        ack(&mut a, &mut w, 1, 0, 1, 10);
        assert_eq!(a.abc_window(), 25);
        assert_eq!(w.cwnd, 25);
    }

    #[test]
    fn abc_asks_for_abc_capable_packets() {
        assert!(Abc::new(Config::default()).signals().abc);
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
            pacing_gain: 0.0,
            ..Config::default()
        }
        .validate()
        .unwrap_err()
        .contains("pacing_gain"));
        assert!(registry::build("abc", &serde_json::json!({"eta": 0.9})).is_err());
    }
}
