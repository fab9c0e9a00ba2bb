//! The control port: a caller drives one flow whose congestion control is
//! `external` ([`crate::transport::cc::external`]) from decision point to
//! decision point, and reads the flow's state at each, without leaving the
//! core per packet. Every other flow of the scenario runs as usual.
//!
//! A step is: deliver the caller's setpoint at the present instant (as an
//! out-of-band report, so the sender may transmit at once), run every event
//! up to the next decision point, and read the flow ([`Probe`]). The
//! setpoint is an input like the master seed: the same seed and the same
//! setpoints at the same instants give the same run, byte for byte.

use crate::transport::cc::external::{LastXrc, Setpoint, StepStats};
use crate::transport::cc::Feedback;
use crate::units::{BitRate, SimDuration, SimTime};

use super::World;

/// A flow's state at a decision point: what happened since the last probe
/// and where it stands now.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Probe {
    /// The decision point.
    pub now: SimTime,
    /// Sent, acknowledged, lost and RTT samples since the last probe.
    pub step: StepStats,
    /// Bytes the receiving application got since the last probe.
    pub delivered_bytes: u64,
    /// Segments in flight, and the congestion window, segments.
    pub in_flight: u32,
    pub cwnd: u32,
    /// The pacing rate in force, if the sender paces.
    pub pacing_rate: Option<BitRate>,
    pub srtt: Option<SimDuration>,
    pub min_rtt: Option<SimDuration>,
    /// The last XRC option the flow's ACKs carried, where the scenario has
    /// an agent.
    pub xrc: Option<LastXrc>,
    /// The flow has started and is not done.
    pub live: bool,
    /// The run is over (its end, or a failure: [`World::failure`]).
    pub done: bool,
}

impl World {
    /// Checks that flow `f` exists and is driven from outside; the error
    /// names the field and the value.
    pub fn check_external(&mut self, f: usize) -> Result<(), String> {
        let n = self.flows.len();
        let Some(fl) = self.flows.get_mut(f) else {
            return Err(format!(
                "flow: index {f} is not a flow of this scenario, which has {n} (0..{n})"
            ));
        };
        if fl.sender.external().is_none() {
            return Err(format!(
                "flows.{f}.cc: {:?} is not driven from outside; set flows.{f}.cc = \"external\"",
                self.cfg.flows[f].cc
            ));
        }
        Ok(())
    }

    /// Gives flow `f` the caller's setpoint now. Before the flow sends its
    /// first segment it is kept and applied then.
    pub fn control(&mut self, f: usize, sp: Setpoint) -> Result<(), String> {
        self.check_external(f)?;
        let now = self.q.now();
        let fl = &mut self.flows[f];
        fl.sender.external().expect("checked").command(sp)?;
        if fl.is_live() && fl.sender.initialized() && !self.finished {
            self.out.clear();
            self.flows[f]
                .sender
                .on_out_of_band(now, &Feedback::Setpoint(sp), &mut self.out);
            self.after_sender(now, f);
            self.arm_sender_timer(f);
        }
        Ok(())
    }

    /// Flow `f`'s state now, and a fresh summary started.
    pub fn probe(&mut self, f: usize) -> Result<Probe, String> {
        self.check_external(f)?;
        let now = self.q.now();
        let done = self.finished;
        let fl = &mut self.flows[f];
        let total = fl.receiver.delivered_total();
        let delivered_bytes = total - fl.probed_delivered;
        fl.probed_delivered = total;
        let live = fl.is_live();
        let s = &mut fl.sender;
        let (in_flight, cwnd, pacing_rate, srtt, min_rtt) =
            (s.in_flight(), s.cwnd(), s.pacing_rate(), s.srtt(), s.min_rtt());
        let ext = s.external().expect("checked");
        Ok(Probe {
            now,
            step: ext.take_stats(),
            delivered_bytes,
            in_flight,
            cwnd,
            pacing_rate,
            srtt,
            min_rtt,
            xrc: ext.last_xrc(),
            live,
            done,
        })
    }

    /// One decision: the setpoint (if any) now, every event up to `now +
    /// interval` (at most the scenario's end), then the probe. A run the
    /// core had to stop returns its failure.
    pub fn control_step(&mut self, f: usize, sp: Option<Setpoint>, interval: SimDuration) -> Result<Probe, String> {
        if interval.is_zero() {
            return Err("interval: a decision interval must be longer than 0 ns".into());
        }
        if let Some(sp) = sp {
            self.control(f, sp)?;
        } else {
            self.check_external(f)?;
        }
        self.run_until(self.q.now() + interval);
        if let Some(e) = self.failure() {
            return Err(e.to_string());
        }
        self.probe(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::ScenarioConfig;

    fn lte(cc: &str, duration_s: f64) -> World {
        let text = format!(
            r#"{{"name": "t", "duration_s": {duration_s}, "seed": 7, "topology": "cellular",
                "internet": {{"delay_ms": 15.0, "rate_mbps": 1000.0}},
                "cell": {{"bandwidth_mhz": 10}},
                "ues": [{{"channel": {{"kind": "fixed_cqi", "cqi": 12}}}}],
                "flows": [{{"id": "f", "cc": "{cc}", "ue": 0}}],
                "output": {{"rtt_trace": false, "cwnd_trace": false}}}}"#
        );
        World::new(ScenarioConfig::resolve(&text).expect("valid"), None).expect("builds")
    }

    fn rate(mbps: f64) -> Setpoint {
        Setpoint {
            rate: BitRate::try_from_mbps(mbps),
            cwnd: None,
        }
    }

    const STEP: SimDuration = SimDuration::from_millis(10);

    fn trajectory(actions: &[f64]) -> Vec<Probe> {
        let mut w = lte("external", 2.0);
        actions
            .iter()
            .map(|&a| w.control_step(0, Some(rate(a)), STEP).expect("steps"))
            .collect()
    }

    #[test]
    fn the_same_seed_and_setpoints_give_the_same_probes() {
        let actions: Vec<f64> = (0..150).map(|i| 1.0 + (i % 17) as f64).collect();
        assert_eq!(trajectory(&actions), trajectory(&actions));
    }

    #[test]
    fn a_higher_rate_delivers_more_until_the_cell_is_full() {
        let delivered = |mbps: f64| -> u64 {
            trajectory(&vec![mbps; 100])[50..]
                .iter()
                .map(|p| p.delivered_bytes)
                .sum()
        };
        let (slow, fast) = (delivered(2.0), delivered(8.0));
        // Half a second at 2 and 8 Mbit/s on the wire: about 0.12 and 0.48 MB.
        assert!(slow > 100_000 && slow < 130_000, "{slow}");
        assert!(fast > 3 * slow, "{fast} against {slow}");
    }

    #[test]
    fn probes_step_by_the_interval_and_the_last_is_done_at_the_end() {
        let mut w = lte("external", 0.05);
        let p = w.control_step(0, Some(rate(4.0)), STEP).unwrap();
        assert_eq!(p.now, SimTime::ZERO + STEP);
        assert!(p.live && !p.done);
        assert_eq!(p.pacing_rate, BitRate::try_from_mbps(4.0));
        let mut last = p;
        while !last.done {
            last = w.control_step(0, None, STEP).unwrap();
        }
        assert_eq!(last.now, SimTime::ZERO + SimDuration::from_millis(50));
    }

    #[test]
    fn a_flow_that_is_missing_or_not_external_is_named() {
        let mut w = lte("cubic", 1.0);
        let e = w.control_step(0, Some(rate(1.0)), STEP).unwrap_err();
        assert!(e.contains("flows.0.cc") && e.contains("cubic"), "{e}");
        let e = w.probe(3).unwrap_err();
        assert!(e.contains("flow") && e.contains('3'), "{e}");
        let mut w = lte("external", 1.0);
        let e = w.control_step(0, Some(rate(1.0)), SimDuration::ZERO).unwrap_err();
        assert!(e.contains("interval"), "{e}");
        let e = w.control(0, Setpoint::default()).unwrap_err();
        assert!(e.contains("setpoint"), "{e}");
    }

    #[test]
    fn where_the_cell_has_an_agent_the_probe_carries_its_fair_share_and_hol_delay() {
        let p = trajectory(&[30.0; 40]).pop().unwrap();
        let x = p.xrc.expect("the cell's agent writes its option into every ACK");
        // CQI 12 on 10 MHz: about 20 Mbit/s for the one flow; sending at
        // 30 Mbit/s keeps RLC's buffer from emptying.
        assert!(x.rate_bps > 10_000_000 && x.rate_bps < 40_000_000, "{x:?}");
        assert!(x.hol > SimDuration::ZERO, "{x:?}");
        assert!(p.step.xrc_options > 0, "{p:?}");
    }

    #[test]
    fn a_window_setpoint_bounds_what_is_in_flight() {
        let mut w = lte("external", 1.0);
        let sp = Setpoint {
            rate: None,
            cwnd: Some(4),
        };
        for _ in 0..50 {
            let p = w.control_step(0, Some(sp), STEP).unwrap();
            assert!(p.in_flight <= 4, "{p:?}");
            assert_eq!(p.pacing_rate, None);
        }
    }
}
