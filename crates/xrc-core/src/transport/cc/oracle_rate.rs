//! The rate oracle (`oracle-rate`): the reference line the XRC paper's
//! figures are reproduced with. A sender that is told, with zero delay and
//! every TTI, the flow's instantaneous fair share of its UE's capacity and
//! the path's true base RTT, and sends at that rate.
//!
//! It is not a published algorithm, and it is **not a bound**: it knows
//! the present capacity, not the future one, and its window allowance
//! (choice 2) is a standing queue on a trace link, where Vegas, PBE-CC,
//! Copa and XRC beat its power on 4 of 10 traces (issue 10). The physical
//! limit is [`super::oracle`] (`oracle`); this one is kept, under this
//! name, because `xrc reproduce` draws Fig. 1's reference line with it, on
//! the cellular topology where the physical-limit oracle has no schedule
//! to follow. The network side is `World::feed_oracles`
//! (`Feedback::Oracle` every TTI: the UE's available capacity after HARQ
//! losses divided by its live flows, and the propagation-plus-processing
//! RTT of an empty path).
//!
//! The model:
//!
//! ```text
//!   pacing rate = C · MSS / (MSS + 52)                      (payload bit/s: C on the wire)
//!   cwnd        = ⌈ C · (RTT_base + A) / (8 · (MSS + 52)) ⌉ segments, at least `min_cwnd`
//! ```
//!
//! where C is the capacity of the last report, RTT_base the base RTT and A
//! the *allowance* (below). The pacing rate keeps the bottleneck's arrival
//! rate at its service rate, so no queue forms; the window only bounds what
//! is in flight when the ACK clock stalls.
//!
//! Choices, numbered:
//! 1. *Units.* C counts link bits (the cell's transport blocks after HARQ
//!    losses; a trace's delivery opportunities), so a segment is counted with
//!    its TCP/IP headers (MSS + 52 bytes); the framework paces payload bytes,
//!    as Linux's internal pacing does, so the pacing rate is C scaled by
//!    MSS/(MSS + 52), which puts C on the wire. PDCP/RLC/MAC headers (≈ 7
//!    bytes a packet, 0.5 %) are not subtracted: the oracle sends at C
//!    exactly, and the window bounds the queue that 0.5 % could build.
//! 2. *Allowance A for the air interface's burstiness* (`allowance_ms`,
//!    default 20 ms). An RTT with empty queues is longer than the base RTT
//!    whenever the radio does not line up: a packet waits for its TTI
//!    (≤ 1 ms), a HARQ retransmission holds a block and everything RLC must
//!    deliver in order behind it for 8 ms, and an ACK waits for an uplink
//!    grant, up to one SR period (10 ms by default), and travels in a batch
//!    every BSR grant (4 ms). A window of exactly C · RTT_base then throttles
//!    the flow below C (74 % utilization at CQI 15 in `lte()`, against 95 %
//!    with the default). The default is one HARQ RTT + one SR period + two
//!    TTIs. As the flow is paced at C, the allowance turns into queue only
//!    when the ACK clock catches up (HoL p95 7 ms in that run).
//!    `allowance_ms = 0` gives the textbook cwnd = C · RTT_base.
//! 3. *Zero capacity.* A report of C = 0 (an outage, or a UE without a
//!    scheduled share) sets the window to `min_cwnd` and the pacing rate to
//!    `min_cwnd` segments per base RTT, never to zero: a zero rate would
//!    make the framework wait a second before its next transmission.
//! 4. *Before the first report* (the first TTI of the flow) the framework's
//!    initial window goes out unpaced.
//! 5. *Losses.* The oracle does not react to loss (ssthresh unchanged, the
//!    window set on every ACK by `cong_control`, so PRR is skipped): its
//!    window is ground truth. A retransmission timeout still collapses the
//!    window (the framework sets cwnd = in flight + 1) until the next ACK or
//!    report restores it. Before the first report (or on a topology without
//!    oracle feedback) it holds the initial window and a loss halves it
//!    (Reno's ssthresh).

use serde::{Deserialize, Serialize};

use super::helpers::reno_ssthresh;
use super::CcConfig;
use super::{CongestionControl, ConnView, Feedback, RateSample, Signals, Window};
use crate::net::packet::TCP_IP_HEADER_BYTES;
use crate::units::{BitRate, SimDuration, SimTime};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Time added to the base RTT when sizing the window, ms (choice 2).
    pub allowance_ms: f64,
    /// Smallest window, segments.
    pub min_cwnd: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            allowance_ms: 20.0,
            min_cwnd: 2,
        }
    }
}

impl CcConfig for Config {
    fn build(self, _stream: u64) -> Box<dyn super::CongestionControl> {
        Box::new(Oracle::new(self))
    }

    fn validate(&self) -> Result<(), String> {
        crate::units::check_duration_ms("allowance_ms", self.allowance_ms, true)?;
        crate::transport::check_window_segments("min_cwnd", self.min_cwnd)?;
        Ok(())
    }
}

pub struct Oracle {
    cfg: Config,
    allowance: SimDuration,
    capacity_bps: Option<u64>,
    base_rtt: SimDuration,
    /// The window the last report asks for, segments.
    target: Option<u32>,
    /// Bytes a segment occupies on the link (MSS + TCP/IP headers).
    wire_bytes: u32,
}

impl Oracle {
    pub fn new(cfg: Config) -> Self {
        let allowance = SimDuration::try_from_millis_f64(cfg.allowance_ms).unwrap_or(SimDuration::ZERO);
        Oracle {
            cfg,
            allowance,
            capacity_bps: None,
            base_rtt: SimDuration::ZERO,
            target: None,
            wire_bytes: 1448 + TCP_IP_HEADER_BYTES,
        }
    }

    /// ⌈C · (RTT_base + A)⌉ in segments of `wire_bytes`, at least `min_cwnd`.
    pub fn window_for(&self, capacity_bps: u64, base_rtt: SimDuration) -> u32 {
        let bits = capacity_bps as f64 * (base_rtt + self.allowance).as_secs_f64();
        let segs = (bits / (8.0 * self.wire_bytes as f64)).ceil();
        (segs.min(u32::MAX as f64 / 4.0) as u32).max(self.cfg.min_cwnd)
    }

    pub fn capacity_bps(&self) -> Option<u64> {
        self.capacity_bps
    }
}

impl CongestionControl for Oracle {
    fn name(&self) -> &'static str {
        "oracle-rate"
    }

    fn init(&mut self, _now: SimTime, _w: &mut Window, c: &ConnView) {
        if c.mss > 0 {
            self.wire_bytes = c.mss + TCP_IP_HEADER_BYTES;
        }
    }

    /// Choice 5: losses do not change the target. Before the first report
    /// a loss halves the initial window (Reno), so the framework's own
    /// recovery never inflates from an infinite ssthresh.
    fn ssthresh(&mut self, _now: SimTime, w: &Window, _c: &ConnView) -> u32 {
        match self.target {
            Some(_) => w.ssthresh,
            None => reno_ssthresh(w),
        }
    }

    /// Not reached once a report has arrived (`cong_control` handles every
    /// ACK); before it, the initial window is kept.
    fn cong_avoid(&mut self, _now: SimTime, _w: &mut Window, _c: &ConnView, _acked: u32) {}

    fn cong_control(&mut self, _now: SimTime, w: &mut Window, _c: &ConnView, _rs: &RateSample) -> bool {
        match self.target {
            Some(t) => {
                w.cwnd = t.min(w.cwnd_clamp);
                true
            }
            None => false,
        }
    }

    fn on_feedback(&mut self, _now: SimTime, w: &mut Window, c: &ConnView, fb: &Feedback) {
        let Feedback::Oracle { capacity_bps, base_rtt } = *fb else {
            return;
        };
        if c.mss > 0 {
            self.wire_bytes = c.mss + TCP_IP_HEADER_BYTES;
        }
        self.capacity_bps = Some(capacity_bps);
        self.base_rtt = base_rtt;
        let t = self.window_for(capacity_bps, base_rtt);
        self.target = Some(t);
        w.cwnd = t.min(w.cwnd_clamp);
    }

    /// C on the wire: the framework paces payload bytes (choice 1).
    fn pacing_rate(&self) -> Option<BitRate> {
        let c = self.capacity_bps?;
        // Choice 3: never a zero rate.
        let rtt = (self.base_rtt + self.allowance).as_secs_f64().max(1e-3);
        let floor = (self.cfg.min_cwnd as f64 * self.wire_bytes as f64 * 8.0 / rtt).round() as u64;
        let wire = c.max(floor).max(1) as u128;
        let payload = self.wire_bytes.saturating_sub(TCP_IP_HEADER_BYTES).max(1) as u128;
        Some(BitRate::from_bps(
            (wire * payload / self.wire_bytes as u128).max(1) as u64
        ))
    }

    fn signals(&self) -> Signals {
        Signals {
            oracle: true,
            ..Signals::default()
        }
    }

    fn mode(&self) -> &'static str {
        if self.target.is_some() {
            "oracle"
        } else {
            "initial"
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

    fn view() -> ConnView {
        ConnView {
            mss: 1448,
            ..ConnView::default()
        }
    }

    fn report(o: &mut Oracle, w: &mut Window, bps: u64, rtt_ms: u64) {
        let fb = Feedback::Oracle {
            capacity_bps: bps,
            base_rtt: SimDuration::from_millis(rtt_ms),
        };
        o.on_feedback(SimTime::ZERO, w, &view(), &fb);
    }

    #[test]
    fn without_allowance_the_window_is_capacity_times_base_rtt_rounded_up() {
        let mut o = Oracle::new(Config {
            allowance_ms: 0.0,
            ..Config::default()
        });
        let mut w = Window::new(10);
        // 30 Mbit/s · 40 ms = 1.2 Mbit = 150 000 bytes = 100.0 segments of 1500 bytes.
        report(&mut o, &mut w, 30_000_000, 40);
        assert_eq!(w.cwnd, 100);
        // 30.1 Mbit/s: 100.33 segments, rounded up.
        report(&mut o, &mut w, 30_100_000, 40);
        assert_eq!(w.cwnd, 101);
    }

    #[test]
    fn the_default_allowance_adds_twenty_milliseconds_of_data() {
        let mut o = Oracle::new(Config::default());
        let mut w = Window::new(10);
        // 12 Mbit/s · (40 + 20) ms = 720 000 bits = 60 segments of 1500 bytes.
        report(&mut o, &mut w, 12_000_000, 40);
        assert_eq!(w.cwnd, 60);
    }

    #[test]
    fn the_oracle_paces_at_the_reported_capacity() {
        let mut o = Oracle::new(Config::default());
        let mut w = Window::new(10);
        assert_eq!(o.pacing_rate(), None, "no pacing before the first report");
        report(&mut o, &mut w, 17_500_000, 40);
        // 17.5 Mbit/s on the wire: 1448 of every 1500 bytes are payload.
        assert_eq!(o.pacing_rate(), Some(BitRate::from_bps(17_500_000 * 1448 / 1500)));
    }

    #[test]
    fn zero_capacity_keeps_a_minimum_window_and_a_nonzero_rate() {
        let mut o = Oracle::new(Config::default());
        let mut w = Window::new(10);
        report(&mut o, &mut w, 0, 40);
        assert_eq!(w.cwnd, 2);
        // 2 segments of 1500 bytes per 60 ms = 400 kbit/s on the wire.
        assert_eq!(o.pacing_rate(), Some(BitRate::from_bps(400_000 * 1448 / 1500)));
    }

    #[test]
    fn every_ack_restores_the_target_and_losses_leave_it_alone() {
        let mut o = Oracle::new(Config {
            allowance_ms: 0.0,
            ..Config::default()
        });
        let mut w = Window::new(10);
        report(&mut o, &mut w, 30_000_000, 40);
        assert_eq!(o.ssthresh(SimTime::ZERO, &w, &view()), w.ssthresh);
        w.cwnd = 7; // e.g. after a timeout
        assert!(o.cong_control(SimTime::ZERO, &mut w, &view(), &RateSample::default()));
        assert_eq!(w.cwnd, 100);
    }

    #[test]
    fn before_any_report_the_framework_keeps_control() {
        let mut o = Oracle::new(Config::default());
        let mut w = Window::new(10);
        assert!(!o.cong_control(SimTime::ZERO, &mut w, &view(), &RateSample::default()));
        assert_eq!(w.cwnd, 10);
        assert!(o.signals().oracle);
    }

    #[test]
    fn bad_parameters_are_rejected_by_name() {
        assert!(Config {
            allowance_ms: -1.0,
            ..Config::default()
        }
        .validate()
        .unwrap_err()
        .contains("allowance_ms"));
        assert!(Config {
            min_cwnd: 0,
            ..Config::default()
        }
        .validate()
        .unwrap_err()
        .contains("min_cwnd"));
        let e = registry::build("oracle-rate", &serde_json::json!({"allowance": 3}))
            .err()
            .unwrap();
        assert!(e.contains("allowance"), "{e}");
    }
}
