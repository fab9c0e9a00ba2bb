//! A congestion control driven from outside (`external`): the caller sets
//! the sending rate, the window, or both, at decision points of its own
//! choosing ([`crate::scenario::World::control_step`]); between two
//! decisions the algorithm holds them and counts what happened, so that
//! a learning agent (`xrc.gym`) reads one summary per step instead of
//! leaving the simulator per packet.
//!
//! It is not a published algorithm: it is the control port that
//! learning-based congestion control (Aurora/PCC-RL, Orca, MOCC) is trained
//! through. Aurora's simulated sender is the model for the rate mode (the
//! agent picks a sending rate every monitor interval and is shown latency,
//! loss and delivery statistics of the interval); Orca's for the window
//! mode (the agent sets cwnd every interval).
//!
//! The model, for a setpoint of rate R (bit/s of TCP payload, as the
//! framework's pacing counts a segment's length) and window W (segments):
//!
//! ```text
//!   pacing rate = R                                  (no pacing when R is not set)
//!   cwnd        = W                                  when W is set
//!               = max(min_cwnd, ⌈g · R · RTT / (8 · MSS)⌉)   when only R is set
//! ```
//!
//! with g = `cwnd_gain` and RTT the smoothed RTT (the minimum RTT before
//! the first smoothed sample, 100 ms before any sample).
//!
//! Choices and deviations, numbered:
//! 1. *A rate alone still has a window.* Aurora's sender has none; a TCP
//!    sender without a window bound keeps sending into an outage until the
//!    retransmission timer fires, and the simulator would hold every
//!    segment. The window is `cwnd_gain` (default 2) times the rate's
//!    bandwidth-delay product, as BBR bounds its in-flight data, so that the
//!    rate decides unless the path's RTT more than doubles.
//! 2. *Losses do not change the setpoint.* The window is set on every ACK
//!    (`cong_control`, so the framework's PRR recovery window is skipped);
//!    the agent sees the losses and decides. A retransmission timeout still
//!    collapses the window (the framework sets cwnd = in flight + 1) until
//!    the next ACK restores it, as the rate oracle does.
//! 3. *Before the first setpoint* the flow sends as Reno from the initial
//!    window (`initial_rate_mbps` unset) or at `initial_rate_mbps`.
//! 4. *A rate raised after a slow packet* takes effect after that packet's
//!    gap at the old rate has passed: pacing books each packet's departure
//!    at the rate it was sent with (Linux's earliest-departure-time pacing
//!    does the same).
//! 5. *Explicit feedback.* Where the scenario has an XRC agent, the option
//!    it writes into ACKs (the flow's fair share of the UE's capacity and
//!    the RLC head-of-line delay) is kept for the caller, not acted on.

use serde::{Deserialize, Serialize};

use super::helpers::{reno_cong_avoid, reno_ssthresh};
use super::{
    AckSample, CcConfig, CongestionControl, ConnView, Feedback, LostPacket, PacketRecord, RateSample, SentPacket,
    Window,
};
use crate::units::{BitRate, SimDuration, SimTime};

/// The RTT a window is sized with before any sample (choice 1).
const RTT_BEFORE_SAMPLES: SimDuration = SimDuration::from_millis(100);

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// The window, as a multiple of the rate's bandwidth-delay product,
    /// when the caller sets a rate and no window (choice 1).
    pub cwnd_gain: f64,
    /// Smallest window, segments.
    pub min_cwnd: u32,
    /// The rate before the first setpoint, Mbit/s; unset: Reno from the
    /// initial window (choice 3).
    pub initial_rate_mbps: Option<f64>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            cwnd_gain: 2.0,
            min_cwnd: 2,
            initial_rate_mbps: None,
        }
    }
}

impl CcConfig for Config {
    fn build(self, _stream: u64) -> Box<dyn CongestionControl> {
        Box::new(External::new(self))
    }

    fn validate(&self) -> Result<(), String> {
        if !(self.cwnd_gain.is_finite() && self.cwnd_gain > 0.0) {
            return Err(format!("cwnd_gain: must be a positive number, not {}", self.cwnd_gain));
        }
        crate::transport::check_window_segments("min_cwnd", self.min_cwnd)?;
        if let Some(r) = self.initial_rate_mbps {
            if BitRate::try_from_mbps(r).is_none_or(|b| b.bps() == 0) {
                return Err(format!("initial_rate_mbps: must be a positive rate in Mbit/s, not {r}"));
            }
        }
        Ok(())
    }
}

/// What the caller asks for: a pacing rate, a window, or both.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Setpoint {
    /// Pacing rate, TCP payload bits per second; `None`: no pacing.
    pub rate: Option<BitRate>,
    /// Congestion window, segments; `None`: sized from the rate (choice 1).
    pub cwnd: Option<u32>,
}

impl Setpoint {
    /// Rejects a setpoint that sets nothing, a zero rate or a zero window,
    /// naming the field.
    pub fn check(&self) -> Result<(), String> {
        match (self.rate, self.cwnd) {
            (None, None) => Err("setpoint: set a rate, a window or both".into()),
            (Some(r), _) if r.bps() == 0 => Err("setpoint.rate: must be positive, not 0 bit/s".into()),
            (_, Some(0)) => Err("setpoint.cwnd: must be at least 1 segment, not 0".into()),
            _ => Ok(()),
        }
    }
}

/// What happened to the flow since the caller last took this summary
/// ([`External::take_stats`]).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct StepStats {
    /// Segments sent, retransmissions included.
    pub sent: u64,
    /// Segments newly acknowledged, cumulatively or selectively.
    pub acked: u64,
    /// Segments marked lost.
    pub lost: u64,
    /// RTT samples: how many, their sum, the least and the greatest.
    pub rtt_samples: u64,
    pub rtt_sum: SimDuration,
    pub rtt_min: Option<SimDuration>,
    pub rtt_max: Option<SimDuration>,
    /// The first and the last RTT sample (Aurora's latency gradient).
    pub rtt_first: Option<SimDuration>,
    pub rtt_last: Option<SimDuration>,
    /// XRC options received.
    pub xrc_options: u64,
}

impl StepStats {
    /// The mean RTT sample, if any.
    pub fn rtt_mean(&self) -> Option<SimDuration> {
        (self.rtt_samples > 0).then(|| SimDuration::from_nanos(self.rtt_sum.as_nanos() / self.rtt_samples))
    }
}

/// The last XRC option the flow's ACKs carried (choice 5).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct LastXrc {
    /// The flow's fair share of its UE's capacity, bit/s.
    pub rate_bps: u64,
    /// The UE's RLC head-of-line delay when the ACK crossed the base station.
    pub hol: SimDuration,
}

pub struct External {
    cfg: Config,
    setpoint: Option<Setpoint>,
    /// The window the setpoint asks for, segments, once known.
    target: Option<u32>,
    /// Payload bytes of a full segment (the MSS).
    seg_bytes: u32,
    rtt: Option<SimDuration>,
    stats: StepStats,
    xrc: Option<LastXrc>,
}

impl External {
    pub fn new(cfg: Config) -> Self {
        let setpoint = cfg
            .initial_rate_mbps
            .and_then(BitRate::try_from_mbps)
            .map(|r| Setpoint {
                rate: Some(r),
                cwnd: None,
            });
        External {
            cfg,
            setpoint,
            target: None,
            seg_bytes: 1448,
            rtt: None,
            stats: StepStats::default(),
            xrc: None,
        }
    }

    /// Takes the caller's setpoint; it applies to the window at the next
    /// hook that sees it (the world delivers it as [`Feedback::Setpoint`],
    /// which also lets the sender transmit at once).
    pub fn command(&mut self, sp: Setpoint) -> Result<(), String> {
        sp.check()?;
        self.setpoint = Some(sp);
        self.target = None;
        Ok(())
    }

    pub fn setpoint(&self) -> Option<Setpoint> {
        self.setpoint
    }

    /// The summary since the last take, and a fresh one started.
    pub fn take_stats(&mut self) -> StepStats {
        std::mem::take(&mut self.stats)
    }

    /// The last XRC option received, if any.
    pub fn last_xrc(&self) -> Option<LastXrc> {
        self.xrc
    }

    /// The window for the current setpoint (choice 1), segments.
    fn window_for(&self, sp: &Setpoint) -> u32 {
        if let Some(w) = sp.cwnd {
            return w.max(1);
        }
        let Some(r) = sp.rate else {
            return self.cfg.min_cwnd;
        };
        let rtt = self.rtt.unwrap_or(RTT_BEFORE_SAMPLES);
        let bits = self.cfg.cwnd_gain * r.bps() as f64 * rtt.as_secs_f64();
        let segs = (bits / (8.0 * self.seg_bytes as f64)).ceil();
        (segs.min(u32::MAX as f64 / 4.0) as u32).max(self.cfg.min_cwnd)
    }

    fn observe(&mut self, c: &ConnView) {
        if c.mss > 0 {
            self.seg_bytes = c.mss;
        }
        if let Some(r) = c.srtt.or(c.min_rtt) {
            self.rtt = Some(r);
        }
    }

    /// A setpoint delivered with the window at hand: kept and applied at
    /// once (one that sets nothing or a zero is ignored).
    fn set_and_apply(&mut self, sp: Setpoint, w: &mut Window, c: &ConnView) {
        if self.command(sp).is_ok() {
            self.apply(w, c);
        }
    }

    /// Sets the window from the setpoint; `false` before the first one.
    fn apply(&mut self, w: &mut Window, c: &ConnView) -> bool {
        self.observe(c);
        let Some(sp) = self.setpoint else { return false };
        // A window set outright never changes with the RTT: computed once.
        let t = match (self.target, sp.cwnd) {
            (Some(t), Some(_)) => t,
            _ => self.window_for(&sp),
        };
        self.target = Some(t);
        w.cwnd = t.min(w.cwnd_clamp);
        true
    }
}

impl CongestionControl for External {
    fn name(&self) -> &'static str {
        "external"
    }

    fn init(&mut self, _now: SimTime, w: &mut Window, c: &ConnView) {
        self.apply(w, c);
    }

    /// Choice 2: losses leave the setpoint alone; before it, Reno.
    fn ssthresh(&mut self, _now: SimTime, w: &Window, _c: &ConnView) -> u32 {
        match self.setpoint {
            Some(_) => w.ssthresh,
            None => reno_ssthresh(w),
        }
    }

    /// Reached only before the first setpoint (choice 3).
    fn cong_avoid(&mut self, _now: SimTime, w: &mut Window, c: &ConnView, acked: u32) {
        reno_cong_avoid(w, c, acked);
    }

    fn pkts_acked(&mut self, _now: SimTime, _w: &mut Window, _c: &ConnView, s: &AckSample) {
        let Some(r) = s.rtt else { return };
        let st = &mut self.stats;
        st.rtt_samples += 1;
        st.rtt_sum += r;
        st.rtt_min = Some(st.rtt_min.map_or(r, |m| m.min(r)));
        st.rtt_max = Some(st.rtt_max.map_or(r, |m| m.max(r)));
        st.rtt_first.get_or_insert(r);
        st.rtt_last = Some(r);
    }

    fn cong_control(&mut self, _now: SimTime, w: &mut Window, c: &ConnView, rs: &RateSample) -> bool {
        self.stats.acked += rs.acked_sacked as u64;
        self.apply(w, c)
    }

    fn on_packet_sent(&mut self, _now: SimTime, _p: &SentPacket) -> PacketRecord {
        self.stats.sent += 1;
        PacketRecord::default()
    }

    fn on_packet_lost(&mut self, _now: SimTime, _w: &Window, _c: &ConnView, _p: &LostPacket) {
        self.stats.lost += 1;
    }

    fn on_feedback(&mut self, _now: SimTime, w: &mut Window, c: &ConnView, fb: &Feedback) {
        match *fb {
            Feedback::Xrc(x) => {
                self.stats.xrc_options += 1;
                self.xrc = Some(LastXrc {
                    rate_bps: x.rate_bps,
                    hol: x.hol,
                });
            }
            // The world checked it (`command`) before delivering it.
            Feedback::Setpoint(sp) => self.set_and_apply(sp, w, c),
            _ => {}
        }
    }

    fn pacing_rate(&self) -> Option<BitRate> {
        self.setpoint.and_then(|s| s.rate)
    }

    fn mode(&self) -> &'static str {
        match self.setpoint {
            None => "initial",
            Some(Setpoint {
                rate: Some(_),
                cwnd: None,
            }) => "rate",
            Some(Setpoint {
                rate: None,
                cwnd: Some(_),
            }) => "window",
            Some(_) => "rate_window",
        }
    }

    fn target_window(&self) -> Option<f64> {
        self.target.map(|t| t as f64)
    }

    fn external(&mut self) -> Option<&mut External> {
        Some(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::cc::registry;

    fn view(srtt_ms: Option<u64>) -> ConnView {
        ConnView {
            mss: 1448,
            srtt: srtt_ms.map(SimDuration::from_millis),
            ..ConnView::default()
        }
    }

    fn rate(mbps: f64) -> Option<BitRate> {
        BitRate::try_from_mbps(mbps)
    }

    #[test]
    fn a_rate_alone_paces_at_it_with_twice_its_bandwidth_delay_product_as_window() {
        let mut e = External::new(Config::default());
        let mut w = Window::new(10);
        let sp = Setpoint {
            rate: rate(12.0),
            cwnd: None,
        };
        e.on_feedback(SimTime::ZERO, &mut w, &view(Some(40)), &Feedback::Setpoint(sp));
        assert_eq!(e.pacing_rate(), rate(12.0));
        // 2 · 12 Mbit/s · 40 ms = 960 000 bits = 82.9 segments of 1448 bytes.
        assert_eq!(w.cwnd, 83);
        assert_eq!(e.mode(), "rate");
    }

    #[test]
    fn a_window_alone_is_set_outright_and_nothing_is_paced() {
        let mut e = External::new(Config::default());
        let mut w = Window::new(10);
        let sp = Setpoint {
            rate: None,
            cwnd: Some(37),
        };
        e.on_feedback(SimTime::ZERO, &mut w, &view(Some(40)), &Feedback::Setpoint(sp));
        assert_eq!(w.cwnd, 37);
        assert_eq!(e.pacing_rate(), None);
        w.cwnd = 5; // a timeout collapsed it
        assert!(e.cong_control(SimTime::ZERO, &mut w, &view(Some(90)), &RateSample::default()));
        assert_eq!(w.cwnd, 37, "every ACK restores the setpoint, whatever the RTT");
    }

    #[test]
    fn before_any_setpoint_the_framework_keeps_control_as_reno() {
        let mut e = External::new(Config::default());
        let mut w = Window::new(10);
        assert!(!e.cong_control(SimTime::ZERO, &mut w, &view(None), &RateSample::default()));
        assert_eq!(e.pacing_rate(), None);
        assert_eq!(e.ssthresh(SimTime::ZERO, &w, &view(None)), 5);
    }

    #[test]
    fn losses_leave_the_setpoints_threshold_alone() {
        let mut e = External::new(Config::default());
        let w = Window::new(10);
        e.command(Setpoint {
            rate: None,
            cwnd: Some(20),
        })
        .unwrap();
        assert_eq!(e.ssthresh(SimTime::ZERO, &w, &view(None)), w.ssthresh);
    }

    #[test]
    fn the_summary_counts_samples_and_restarts_when_taken() {
        let mut e = External::new(Config::default());
        let mut w = Window::new(10);
        for ms in [30, 50, 40] {
            let s = AckSample {
                pkts_acked: 1,
                rtt: Some(SimDuration::from_millis(ms)),
                in_flight: 3,
            };
            e.pkts_acked(SimTime::ZERO, &mut w, &view(None), &s);
        }
        e.on_packet_sent(SimTime::ZERO, &SentPacket::default());
        e.on_packet_lost(SimTime::ZERO, &w, &view(None), &LostPacket::default());
        let rs = RateSample {
            acked_sacked: 3,
            ..RateSample::default()
        };
        e.cong_control(SimTime::ZERO, &mut w, &view(None), &rs);
        let s = e.take_stats();
        assert_eq!((s.sent, s.acked, s.lost, s.rtt_samples), (1, 3, 1, 3));
        assert_eq!(s.rtt_mean(), Some(SimDuration::from_millis(40)));
        assert_eq!(s.rtt_min, Some(SimDuration::from_millis(30)));
        assert_eq!(s.rtt_max, Some(SimDuration::from_millis(50)));
        assert_eq!(s.rtt_first, Some(SimDuration::from_millis(30)));
        assert_eq!(s.rtt_last, Some(SimDuration::from_millis(40)));
        assert_eq!(e.take_stats(), StepStats::default());
    }

    #[test]
    fn an_xrc_option_is_kept_for_the_caller_and_not_acted_on() {
        let mut e = External::new(Config::default());
        let mut w = Window::new(10);
        let x = crate::net::XrcOption::quantized(20_000_000, SimDuration::from_millis(3));
        e.on_feedback(SimTime::ZERO, &mut w, &view(None), &Feedback::Xrc(x));
        assert_eq!(w.cwnd, 10);
        assert_eq!(e.last_xrc().map(|l| l.rate_bps), Some(20_000_000));
        assert_eq!(e.last_xrc().map(|l| l.hol), Some(SimDuration::from_millis(3)));
    }

    #[test]
    fn a_setpoint_without_a_rate_or_window_or_with_a_zero_is_refused_by_name() {
        let mut e = External::new(Config::default());
        assert!(e.command(Setpoint::default()).unwrap_err().contains("setpoint"));
        let zero = Setpoint {
            rate: Some(BitRate::from_bps(0)),
            cwnd: None,
        };
        assert!(e.command(zero).unwrap_err().contains("setpoint.rate"));
        let zero = Setpoint {
            rate: None,
            cwnd: Some(0),
        };
        assert!(e.command(zero).unwrap_err().contains("setpoint.cwnd"));
    }

    #[test]
    fn bad_parameters_are_rejected_by_name() {
        for (p, name) in [
            (serde_json::json!({"cwnd_gain": 0.0}), "cwnd_gain"),
            (serde_json::json!({"min_cwnd": 0}), "min_cwnd"),
            (serde_json::json!({"initial_rate_mbps": -1.0}), "initial_rate_mbps"),
            (serde_json::json!({"rate": 3}), "rate"),
        ] {
            let e = registry::build("external", &p).err().expect("refused");
            assert!(e.contains(name), "{e}");
        }
    }

    #[test]
    fn an_initial_rate_paces_from_the_first_packet() {
        let e = External::new(Config {
            initial_rate_mbps: Some(5.0),
            ..Config::default()
        });
        assert_eq!(e.pacing_rate(), rate(5.0));
    }
}
