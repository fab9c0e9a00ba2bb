//! NATCP: network-assisted TCP, the clean-slate sender of Abbasloo, Xu,
//! Chao, "Toward Optimal Performance with Network Assisted TCP at Mobile
//! Edge", USENIX HotEdge 2019 (`shared/papers/natcp-nacubic-network-assisted-tcp.txt`),
//! and the authors' release <https://github.com/Soheil-ab/natcp>, commit
//! `fe419ea504a84407f2f156806be6b1cadee7b92e` ("NATCP v1.0", HotEdge
//! release `aabbb16`). The network half (the NetAssist entity's reports) is
//! `ran::netassist` and `Cell::net_assist_report`.
//!
//! # The model
//!
//! A NetAssist entity at the mobile edge sends each registered server, out
//! of band every 50 ms, the UE's bottleneck-link bandwidth BW (averaged over
//! the period) and the minimum RTT (network minimum + downlink and uplink
//! scheduling/transmission delay); the UE reports its number of flows β.
//! The server then sets (paper, eq. 1, and §2.3 "servers use BL Bw to set
//! the pacing rate")
//!
//! ```text
//!   cwnd        = α · (1/β) · minRTT · BW          α = 2
//!   pacing rate = BW / β
//! ```
//!
//! and "if feedback information is not received within a certain time, the
//! timer will timeout and NATCP/NACubic will revert to normal TCP" (§2.4),
//! the default TCP being CUBIC (§2.3).
//!
//! # What the authors' code shows
//!
//! The release is a patched Linux 4.13 kernel (shipped only as binary
//! `.deb` packages, `linux-patch/`, absent from the stored snapshot) plus a
//! user-space server (`src/server.cc`, `CntThread`) that replays a
//! pre-computed feedback trace (`feedback/*-50-trace`: time, BW in Mbit/s,
//! minRTT in µs) through socket options every 50 ms:
//! * BW in kbit/s → `TCP_BBR_BWVAL`; minRTT + 2·one-way delay (µs) →
//!   `TCP_BBR_TRGTDEL_MS`; `cwnd_scale` = 2 → `TCP_BBR_CWNDRVGAIN`; for
//!   NATCP (`feedback == 1`) `TCP_BBR_APPLY`. NATCP is therefore the kernel's
//!   BBR module with its bandwidth and min-RTT estimators replaced by the
//!   feedback (`natcp.sh`: `tcp_congestion_control = bbr`,
//!   `tcp_bbr_bw_auto = 0`, ProbeRTT window 10 000 s, no long-term bw
//!   sampling) and a cwnd gain of 2: cwnd = 2 · BW · minRTT.
//! * `SO_MAX_PACING_RATE` = BW in bytes/s, for both NATCP and NACubic.
//! * NACubic (`feedback == 3`): CUBIC with `TCP_CWND_CLAMP` = 2 · BW ·
//!   minRTT bytes (see `nacubic`).
//! * `bw_scale` = 1 and a single flow in every script: the per-flow share
//!   1/β never appears in the code.
//! * The minRTT of the feedback traces is `12000/BW` µs (one 1500-byte
//!   packet at BW) plus 2·one-way delay, the same model as
//!   `Cell::net_assist_report`.
//!
//! # Choices and deviations, numbered
//!
//! 1. *Window.* cwnd = ⌈α · BW · minRTT / (8 · β · MSS)⌉ segments, at least
//!    `min_cwnd` = 4 (BBR's `bbr_cwnd_min_target`). The report's byte count
//!    is turned into segments with the MSS, as the kernel turns the
//!    user-space's byte figure into `snd_cwnd` units.
//! 2. *How the window follows the target.* As BBR's `bbr_set_cwnd` once the
//!    pipe is full: on each ACK the window grows by the segments the ACK
//!    delivered, up to the target; above the target it is cut to it. A
//!    report that lowers the target cuts the window when it arrives.
//! 3. *Pacing* at BW/β (`pacing_gain` × BW/β; default gain 1, as
//!    `SO_MAX_PACING_RATE` = BW caps the BBR rate in the code). With one
//!    flow this is the code's BW; with β flows it is the per-flow share the
//!    window formula also uses (the code has no multi-flow case). A report of
//!    BW = 0 paces at `min_cwnd` segments per minRTT instead of zero.
//! 4. *Losses.* BBR's `ssthresh` leaves `snd_ssthresh` alone and its
//!    `cong_control` owns the window, so PRR is skipped and the window stays
//!    at the target through recovery (BBR's one-round packet conservation
//!    is not modelled: the patched module is not published). After a
//!    retransmission timeout (cwnd = in flight + 1) the window regrows by
//!    the delivered segments per ACK (choice 2).
//! 5. *Fallback.* Before the first report, and when none has arrived for
//!    `feedback_timeout_ms` (default 150 ms: three report periods, so two
//!    lost reports in a row are tolerated and the third triggers), the sender
//!    is CUBIC (`cubic::Cubic`, Linux's, with `cubic` parameters) and is not
//!    paced. CUBIC sees every hook all along, so its `delay_min` and HyStart
//!    state are current when it takes over. On falling back from NATCP,
//!    ssthresh is set to the current window, so CUBIC continues from the
//!    last network-assisted window in congestion avoidance instead of slow
//!    starting past it. A fresh report switches back at once.
//! 6. *Report delay and period* are the network side's (`cell.net_assist`:
//!    50 ms, delay = the Internet segment's one-way delay unless set). The
//!    authors' evaluation replayed the capacity of the *coming* 50 ms bin at
//!    its start (the feedback files are bins of the Mahimahi log, applied
//!    when the bin starts, 1 ms lag): a 50-ms look-ahead. NetAssist here
//!    reports the *past* period, as the paper describes a deployable
//!    NetAssist. Expect NATCP to lag capacity changes by up to one period
//!    plus the report delay compared with the paper's figures.

use serde::{Deserialize, Serialize};

use super::cubic::{self, Cubic};
use super::CcConfig;
use super::{
    AckFlags, AckSample, CaEvent, CaState, CongestionControl, ConnView, Feedback, RateSample, Signals, Window,
};
use crate::units::{BitRate, SimDuration, SimTime};

/// BBR's `bbr_cwnd_min_target`.
pub const BBR_MIN_CWND: u32 = 4;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// α, the window's scale over the per-flow BDP (paper and code: 2).
    pub alpha: f64,
    /// Pacing rate as a multiple of BW/β (code: 1).
    pub pacing_gain: f64,
    /// Without a report for this long the sender reverts to CUBIC, ms.
    pub feedback_timeout_ms: f64,
    /// Smallest window, segments (BBR: 4).
    pub min_cwnd: u32,
    /// The fallback CUBIC's parameters.
    pub cubic: cubic::Config,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            alpha: 2.0,
            pacing_gain: 1.0,
            feedback_timeout_ms: 150.0,
            min_cwnd: BBR_MIN_CWND,
            cubic: cubic::Config::default(),
        }
    }
}

impl CcConfig for Config {
    fn build(self, _stream: u64) -> Box<dyn super::CongestionControl> {
        Box::new(Natcp::new(self))
    }

    fn validate(&self) -> Result<(), String> {
        validate_common(self.alpha, self.feedback_timeout_ms, self.min_cwnd)?;
        if !(self.pacing_gain.is_finite() && self.pacing_gain > 0.0) {
            return Err(format!(
                "pacing_gain must be a positive number, got {}",
                self.pacing_gain
            ));
        }
        self.cubic.validate().map_err(|e| format!("cubic.{e}"))
    }
}

/// Checks shared by NATCP's and NACubic's parameters.
pub(crate) fn validate_common(alpha: f64, timeout_ms: f64, min_cwnd: u32) -> Result<(), String> {
    if !(alpha.is_finite() && alpha > 0.0) {
        return Err(format!("alpha must be a positive number, got {alpha}"));
    }
    crate::units::check_duration_ms("feedback_timeout_ms", timeout_ms, false)?;
    crate::transport::check_window_segments("min_cwnd", min_cwnd)?;
    Ok(())
}

/// The latest NetAssist report and when it arrived.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Report {
    pub bw_bps: u64,
    pub min_rtt: SimDuration,
    /// β, the UE's flow count (at least 1).
    pub flows: u32,
    pub at: SimTime,
}

impl Report {
    /// Reads a `Feedback::NetAssist`; `None` for any other feedback.
    pub fn from_feedback(now: SimTime, fb: &Feedback) -> Option<Report> {
        match *fb {
            Feedback::NetAssist { bw_bps, min_rtt, flows } => Some(Report {
                bw_bps,
                min_rtt,
                flows: flows.max(1),
                at: now,
            }),
            _ => None,
        }
    }

    /// Eq. (1): ⌈α · (1/β) · minRTT · BW⌉ in segments of `mss` payload
    /// bytes, at least `min_cwnd`.
    pub fn window(&self, alpha: f64, mss: u32, min_cwnd: u32) -> u32 {
        let bytes = alpha * self.bw_bps as f64 / 8.0 * self.min_rtt.as_secs_f64() / self.flows as f64;
        let segs = (bytes / mss.max(1) as f64).ceil();
        (segs.min(u32::MAX as f64 / 4.0) as u32).max(min_cwnd)
    }

    /// The per-flow share BW/β times `gain`, never below `min_cwnd`
    /// segments of `mss` per minRTT (choice 3).
    pub fn pacing(&self, gain: f64, mss: u32, min_cwnd: u32) -> BitRate {
        let share = gain * self.bw_bps as f64 / self.flows as f64;
        let rtt = self.min_rtt.as_secs_f64().max(1e-3);
        let floor = min_cwnd as f64 * mss as f64 * 8.0 / rtt;
        BitRate::from_bps(share.max(floor).max(1.0) as u64)
    }

    pub fn fresh(&self, now: SimTime, timeout: SimDuration) -> bool {
        now.saturating_since(self.at) <= timeout
    }
}

pub struct Natcp {
    cfg: Config,
    timeout: SimDuration,
    cubic: Cubic,
    report: Option<Report>,
    /// The network-assisted control is in force (a fresh report exists).
    active: bool,
    /// The window the last report asks for, segments.
    target: Option<u32>,
    mss: u32,
}

impl Natcp {
    pub fn new(cfg: Config) -> Self {
        let timeout =
            SimDuration::try_from_millis_f64(cfg.feedback_timeout_ms).unwrap_or(SimDuration::from_millis(150));
        let cubic = Cubic::new(cfg.cubic.clone());
        Natcp {
            cfg,
            timeout,
            cubic,
            report: None,
            active: false,
            target: None,
            mss: 1448,
        }
    }

    pub fn report(&self) -> Option<Report> {
        self.report
    }
    pub fn is_assisted(&self) -> bool {
        self.active
    }

    /// Leaves the network-assisted mode if the last report is too old
    /// (choice 5). Returns whether the mode is (still) assisted.
    fn check_fresh(&mut self, now: SimTime, w: &mut Window) -> bool {
        let fresh = self.report.is_some_and(|r| r.fresh(now, self.timeout));
        if self.active && !fresh {
            self.active = false;
            self.target = None;
            // CUBIC continues from the last assisted window, in congestion avoidance.
            w.ssthresh = w.cwnd.max(2);
            w.cwnd_cnt = 0;
        }
        self.active
    }
}

impl CongestionControl for Natcp {
    fn name(&self) -> &'static str {
        "natcp"
    }

    fn init(&mut self, now: SimTime, w: &mut Window, c: &ConnView) {
        if c.mss > 0 {
            self.mss = c.mss;
        }
        self.cubic.init(now, w, c);
    }

    fn ssthresh(&mut self, now: SimTime, w: &Window, c: &ConnView) -> u32 {
        if self.active && self.report.is_some_and(|r| r.fresh(now, self.timeout)) {
            // Choice 4: BBR's ssthresh leaves snd_ssthresh as it is.
            w.ssthresh
        } else {
            self.cubic.ssthresh(now, w, c)
        }
    }

    fn cong_avoid(&mut self, now: SimTime, w: &mut Window, c: &ConnView, acked: u32) {
        // Reached only in fallback (cong_control declined the ACK).
        self.cubic.cong_avoid(now, w, c, acked);
    }

    fn set_state(&mut self, now: SimTime, w: &mut Window, c: &ConnView, new: CaState) {
        self.cubic.set_state(now, w, c, new);
    }

    fn cwnd_event(&mut self, now: SimTime, w: &mut Window, c: &ConnView, ev: CaEvent) {
        self.cubic.cwnd_event(now, w, c, ev);
    }

    fn in_ack_event(&mut self, now: SimTime, w: &mut Window, c: &ConnView, flags: AckFlags) {
        self.cubic.in_ack_event(now, w, c, flags);
    }

    fn pkts_acked(&mut self, now: SimTime, w: &mut Window, c: &ConnView, s: &AckSample) {
        self.cubic.pkts_acked(now, w, c, s);
    }

    fn undo_cwnd(&mut self, now: SimTime, w: &Window, prior_cwnd: u32) -> u32 {
        self.cubic.undo_cwnd(now, w, prior_cwnd)
    }

    fn cong_control(&mut self, now: SimTime, w: &mut Window, _c: &ConnView, rs: &RateSample) -> bool {
        if !self.check_fresh(now, w) {
            return false;
        }
        let Some(target) = self.target else { return false };
        let target = target.min(w.cwnd_clamp);
        // Choice 2 (BBR bbr_set_cwnd with a full pipe).
        w.cwnd = if w.cwnd < target {
            w.cwnd.saturating_add(rs.acked_sacked).min(target)
        } else {
            target
        };
        true
    }

    fn on_feedback(&mut self, now: SimTime, w: &mut Window, c: &ConnView, fb: &Feedback) {
        let Some(r) = Report::from_feedback(now, fb) else {
            return;
        };
        if c.mss > 0 {
            self.mss = c.mss;
        }
        self.report = Some(r);
        self.active = true;
        let t = r.window(self.cfg.alpha, self.mss, self.cfg.min_cwnd);
        self.target = Some(t);
        if w.cwnd > t {
            w.cwnd = t;
        }
    }

    fn pacing_rate(&self) -> Option<BitRate> {
        if !self.active {
            return None;
        }
        self.report
            .map(|r| r.pacing(self.cfg.pacing_gain, self.mss, self.cfg.min_cwnd))
    }

    fn signals(&self) -> Signals {
        Signals {
            net_assist: true,
            ..Signals::default()
        }
    }

    fn mode(&self) -> &'static str {
        if self.active {
            "natcp"
        } else {
            "fallback"
        }
    }

    fn target_window(&self) -> Option<f64> {
        self.target.map(|t| t as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::cc::{registry, CcConfig};

    use crate::transport::cc::testkit::{at_ms as at, MSS};

    fn view(now: SimTime) -> ConnView {
        ConnView {
            now,
            mss: MSS,
            is_cwnd_limited: true,
            ..ConnView::default()
        }
    }

    fn report(n: &mut Natcp, w: &mut Window, now: SimTime, mbps: u64, rtt_ms: u64, flows: u32) {
        let fb = Feedback::NetAssist {
            bw_bps: mbps * 1_000_000,
            min_rtt: SimDuration::from_millis(rtt_ms),
            flows,
        };
        n.on_feedback(now, w, &view(now), &fb);
    }

    fn ack(n: &mut Natcp, w: &mut Window, now: SimTime, acked: u32) -> bool {
        let rs = RateSample {
            acked_sacked: acked,
            ..RateSample::default()
        };
        n.cong_control(now, w, &view(now), &rs)
    }

    #[test]
    fn the_window_is_two_over_beta_times_min_rtt_times_bandwidth() {
        let mut n = Natcp::new(Config::default());
        let mut w = Window::new(10);
        // 2 · 24 Mbit/s · 40 ms / 1 = 240 000 bytes = 165.7 → 166 segments of 1448.
        report(&mut n, &mut w, at(50), 24, 40, 1);
        assert_eq!(n.target_window(), Some(166.0));
        // β = 2 flows: 120 000 bytes = 82.9 → 83.
        report(&mut n, &mut w, at(100), 24, 40, 2);
        assert_eq!(n.target_window(), Some(83.0));
        // β = 3, 14.48 Mbit/s, 20 ms: 2 · 1 810 000 B/s · 0.02 / 3 = 24 133 bytes = 16.67 → 17.
        let fb = Feedback::NetAssist {
            bw_bps: 14_480_000,
            min_rtt: SimDuration::from_millis(20),
            flows: 3,
        };
        n.on_feedback(at(150), &mut w, &view(at(150)), &fb);
        assert_eq!(n.target_window(), Some(17.0));
    }

    #[test]
    fn the_window_climbs_to_the_target_by_the_segments_delivered_and_drops_at_once() {
        let mut n = Natcp::new(Config::default());
        let mut w = Window::new(10);
        report(&mut n, &mut w, at(50), 24, 40, 1); // target 166
        assert_eq!(w.cwnd, 10);
        assert!(ack(&mut n, &mut w, at(51), 2));
        assert_eq!(w.cwnd, 12);
        for _ in 0..100 {
            ack(&mut n, &mut w, at(52), 2);
        }
        assert_eq!(w.cwnd, 166);
        // Capacity halves: the report cuts the window to the new target.
        report(&mut n, &mut w, at(100), 12, 40, 1);
        assert_eq!(w.cwnd, 83);
    }

    #[test]
    fn natcp_paces_at_the_per_flow_share_of_the_bandwidth() {
        let mut n = Natcp::new(Config::default());
        let mut w = Window::new(10);
        assert_eq!(n.pacing_rate(), None, "CUBIC before the first report is not paced");
        report(&mut n, &mut w, at(50), 24, 40, 1);
        assert_eq!(n.pacing_rate(), Some(BitRate::from_bps(24_000_000)));
        report(&mut n, &mut w, at(100), 24, 40, 3);
        assert_eq!(n.pacing_rate(), Some(BitRate::from_bps(8_000_000)));
    }

    #[test]
    fn zero_bandwidth_keeps_the_minimum_window_and_a_nonzero_rate() {
        let mut n = Natcp::new(Config::default());
        let mut w = Window::new(10);
        report(&mut n, &mut w, at(50), 0, 40, 1);
        assert_eq!(w.cwnd, 4);
        // 4 · 1448 bytes per 40 ms = 1.1584 Mbit/s.
        assert_eq!(n.pacing_rate(), Some(BitRate::from_bps(1_158_400)));
    }

    #[test]
    fn without_reports_for_the_timeout_natcp_falls_back_to_cubic() {
        let mut n = Natcp::new(Config::default());
        let mut w = Window::new(10);
        report(&mut n, &mut w, at(50), 24, 40, 1);
        w.cwnd = 166;
        assert!(
            ack(&mut n, &mut w, at(200), 1),
            "150 ms after the report: still assisted"
        );
        assert_eq!(n.mode(), "natcp");
        assert!(!ack(&mut n, &mut w, at(201), 1), "151 ms: CUBIC takes the ACK");
        assert_eq!(n.mode(), "fallback");
        assert_eq!(n.pacing_rate(), None);
        assert_eq!(
            w.ssthresh, 166,
            "CUBIC continues in congestion avoidance from the last window"
        );
        // CUBIC's cong_avoid now owns the window; it does not shrink it.
        n.cong_avoid(at(201), &mut w, &view(at(201)), 1);
        assert!(w.cwnd >= 166);
        // A fresh report brings NATCP back.
        report(&mut n, &mut w, at(250), 12, 40, 1);
        assert_eq!(n.mode(), "natcp");
        assert_eq!(w.cwnd, 83);
    }

    #[test]
    fn before_the_first_report_natcp_is_cubic_in_slow_start() {
        let mut n = Natcp::new(Config::default());
        let mut w = Window::new(10);
        n.init(SimTime::ZERO, &mut w, &view(SimTime::ZERO));
        assert!(!ack(&mut n, &mut w, at(10), 5));
        n.cong_avoid(at(10), &mut w, &view(at(10)), 5);
        assert_eq!(w.cwnd, 15);
        // A loss without reports is CUBIC's: β = 0.7.
        let w2 = Window {
            cwnd: 100,
            ..Window::new(10)
        };
        assert_eq!(n.ssthresh(at(20), &w2, &view(at(20))), 70);
        assert!(n.signals().net_assist);
    }

    #[test]
    fn a_loss_while_assisted_leaves_the_window_at_the_target() {
        let mut n = Natcp::new(Config::default());
        let mut w = Window::new(10);
        report(&mut n, &mut w, at(50), 24, 40, 1);
        w.cwnd = 166;
        assert_eq!(n.ssthresh(at(60), &w, &view(at(60))), w.ssthresh);
        assert!(ack(&mut n, &mut w, at(61), 1));
        assert_eq!(w.cwnd, 166);
    }

    #[test]
    fn bad_parameters_are_rejected_by_name() {
        assert!(Config {
            alpha: 0.0,
            ..Config::default()
        }
        .validate()
        .unwrap_err()
        .contains("alpha"));
        assert!(Config {
            feedback_timeout_ms: f64::NAN,
            ..Config::default()
        }
        .validate()
        .unwrap_err()
        .contains("feedback_timeout_ms"));
        let bad_cubic = Config {
            cubic: cubic::Config {
                beta: 0,
                ..cubic::Config::default()
            },
            ..Config::default()
        };
        assert!(bad_cubic.validate().unwrap_err().contains("cubic.beta"));
        assert!(registry::build("natcp", &serde_json::json!({"beta": 2})).is_err());
    }
}
