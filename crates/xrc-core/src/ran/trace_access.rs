//! The trace topology's access network as a [`Component`]: one UE behind
//! Mahimahi's downlink queue ([`TraceLink`]), its ACKs crossing an uplink
//! trace's queue or a fixed delay, and a base station at the queue that
//! runs the XRC agent and ABC's marking.
//!
//! ```text
//!  Internet ──Down──► [downlink trace queue] ──Out(Down)──► UE
//!  Internet ◄─Out(Up)── agent writes XRC option ◄── [uplink trace queue | delay] ◄──Up── UE
//! ```
//!
//! Every millisecond (its sampling instant) it reports the queue to the
//! observer: head-of-line delay, occupancy, the trace's capacity in that
//! millisecond (the ground truth) and the agent's estimate, the trace's
//! recent capacity over the agent's window.
//!
//! Side channels (see [`crate::net::access`]):
//! - the agent's feedback: every ACK leaving the uplink gets the XRC option
//!   (the trace's recent capacity, divided among the flows active at the
//!   queue, and the queue's head-of-line delay) when `agent.enabled`;
//! - ABC: ABC-capable data leaving the queue is marked accelerate or brake
//!   from the trace's recent capacity, the dequeue rate of the last
//!   millisecond and the head-of-line delay (the trace link does not track
//!   each packet's queuing delay while it waits);
//! - PBE-CC: the UE sees only its own link: the trace's recent capacity
//!   less PBE's header overhead (0.932), per active flow;
//! - NetAssist: the trace's mean capacity over the report period; minimum
//!   RTT from the uplink's least delay and one packet's transmission;
//! - the rate oracle: the trace's capacity over a span ahead (the trace is
//!   known in advance);
//! - the oracle: the trace's delivery opportunities ahead, as many in one
//!   millisecond as the queue holds full packets.
//!
//! Wake-ups of the two trace queues are lazily cancelled: the component
//! keeps at most one pending timer per queue at or before that queue's
//! next opportunity, re-armed after each call's packets were carried on
//! ([`crate::net::Effect::Rearm`]); a timer that finds its time moved
//! does nothing.

use super::abc::{AbcConfig, AbcMarker};
use super::agent::{self, AgentConfig, CapacityWindow};
use super::pdcp::FlowActivity;
use super::trace_link::{Trace, TraceLink};
use crate::net::Observer as _;
use crate::net::{
    AbcMark, Access, Component, Dir, DropSite, FlowId, Io, NetAssistReport, Packet, PacketKind, Pipe, QueueCounters,
    QueueLimit, UeId, UeLinkCounters, UeSample,
};
use crate::units::{SimDuration, SimTime};

/// How ACKs cross the uplink to the base station.
pub enum TraceUplink {
    /// A fixed delay.
    Delay(SimDuration),
    /// Mahimahi's uplink queue on an uplink trace.
    Trace(Trace, QueueLimit),
}

/// What the trace access is built from.
pub struct TraceAccessConfig {
    pub downlink: Trace,
    pub downlink_limit: QueueLimit,
    pub uplink: TraceUplink,
    /// The agent: `window_ttis` is its averaging window in milliseconds.
    pub agent: AgentConfig,
    pub abc: AbcConfig,
}

/// The trace access's timers.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum TraceTimer {
    /// The downlink queue's next opportunity.
    Downlink,
    /// The uplink's next delivery (trace opportunity or the delay's head).
    Uplink,
    /// The millisecond's sampling instant.
    Tick,
}

enum AckPath {
    Delay(Pipe),
    /// The queue and its pending wake-up.
    Trace(Box<TraceLink>, Option<SimTime>),
}

pub struct TraceAccess {
    link: TraceLink,
    /// The pending `Downlink` timer, if any.
    link_wake: Option<SimTime>,
    uplink: AckPath,
    /// The agent's capacity window.
    window: SimDuration,
    agent_enabled: bool,
    abc: AbcMarker,
    /// Bits leaving the queue per millisecond, over the agent's window.
    departures: CapacityWindow,
    departed_this_ms: u64,
    /// NetAssist's period: capacity bits and milliseconds so far.
    na_capacity_bits: f64,
    na_ms: u64,
    activity: FlowActivity,
    inactivity: SimDuration,
    /// Bits that left the queue toward the UE.
    departed_bits: f64,
    tick: SimDuration,
    /// No sampling instant at or after this time.
    until: SimTime,
    scratch: Vec<Packet>,
    /// The last [`TraceAccess::recent_capacity_bps`] and its instant.
    recent_capacity: std::cell::Cell<Option<(SimTime, u64)>>,
}

impl TraceAccess {
    /// `flows`: the flows crossing it (all to its one UE). Sampling
    /// instants stop before `until`.
    pub fn new(cfg: TraceAccessConfig, flows: usize, until: SimTime) -> Self {
        let uplink = match cfg.uplink {
            TraceUplink::Delay(d) => AckPath::Delay(Pipe::new(d)),
            TraceUplink::Trace(t, limit) => AckPath::Trace(Box::new(TraceLink::new(t, limit)), None),
        };
        let mut activity = FlowActivity::default();
        for k in 0..flows {
            activity.register(FlowId(k as u32), UeId(0));
        }
        TraceAccess {
            abc: AbcMarker::new(&cfg.abc),
            departures: CapacityWindow::new(cfg.agent.window_ttis),
            departed_this_ms: 0,
            na_capacity_bits: 0.0,
            na_ms: 0,
            link: TraceLink::new(cfg.downlink, cfg.downlink_limit),
            link_wake: None,
            window: SimDuration::from_millis(cfg.agent.window_ttis as u64),
            uplink,
            agent_enabled: cfg.agent.enabled,
            activity,
            inactivity: cfg.agent.inactivity(),
            departed_bits: 0.0,
            tick: SimDuration::from_millis(1),
            until,
            scratch: Vec::new(),
            recent_capacity: std::cell::Cell::new(None),
        }
    }

    /// Declares a flow crossing it after it was built (the emulator learns
    /// its flows from their first packet): the agent counts it among the
    /// UE's active flows from then on.
    pub fn register_flow(&mut self, flow: FlowId) {
        self.activity.register(flow, UeId(0));
    }

    /// The downlink trace link.
    pub fn link(&self) -> &TraceLink {
        &self.link
    }

    /// The trace's capacity over the agent's window ending at `now` (what
    /// the agent reports, ABC's link rate, PBE's view), worked out once per
    /// instant: it is asked for at every departure, ACK and millisecond.
    fn recent_capacity_bps(&self, now: SimTime) -> u64 {
        if let Some((t, v)) = self.recent_capacity.get() {
            if t == now {
                return v;
            }
        }
        let v = self.link.trace().recent_capacity_bps(now, self.window);
        self.recent_capacity.set(Some((now, v)));
        v
    }

    /// The least time an ACK spends between the receiver and the agent: the
    /// fixed delay, or on an uplink trace 1 ms. The receiver answers data
    /// as the downlink trace delivers it, at a whole millisecond, and an
    /// ACK never leaves a trace link in the millisecond it arrived (rule 6
    /// of `trace_link`), while opportunities fall on whole milliseconds.
    fn uplink_min_delay(&self) -> SimDuration {
        match &self.uplink {
            AckPath::Delay(pipe) => pipe.delay(),
            AckPath::Trace(..) => SimDuration::from_millis(1),
        }
    }

    /// Packets leave the downlink queue: the observer gets their queuing
    /// delays, ABC marks the ABC-capable ones, and they go to the UE.
    fn delivered(&mut self, now: SimTime, pkts: &mut Vec<Packet>, cx: &mut impl Io<TraceTimer>) {
        // The link's queuing delay of each packet, in departure order.
        debug_assert_eq!(pkts.len(), self.link.last_sojourns().len());
        for (p, d) in pkts.iter().zip(self.link.last_sojourns()) {
            self.departed_bits += p.size as f64 * 8.0;
            cx.obs().sojourn(now, 0, p.flow, *d);
        }
        let link = self.recent_capacity_bps(now) as f64;
        let dequeue = self.departures.rate_bps(SimDuration::from_millis(1)) as f64;
        for p in pkts.iter_mut() {
            self.departed_this_ms += p.size as u64 * 8;
            if let PacketKind::Data(d) = &mut p.kind {
                if d.abc == AbcMark::Capable {
                    // Queuing delay is not tracked per packet on the
                    // trace link; the head-of-line delay stands in.
                    let accel = self.abc.mark(link, dequeue, self.link.hol_delay(now));
                    d.abc = if accel { AbcMark::Accelerate } else { AbcMark::Brake };
                }
            }
        }
        for p in pkts.drain(..) {
            cx.out(Dir::Down, p);
        }
    }

    /// ACKs leave the uplink at the base station: the agent writes its
    /// option, and they go on toward the Internet.
    fn acks_at_agent(&mut self, now: SimTime, pkts: &mut Vec<Packet>, cx: &mut impl Io<TraceTimer>) {
        if self.agent_enabled && !pkts.is_empty() {
            let rate = self.recent_capacity_bps(now);
            let hol = self.link.hol_delay(now);
            let af = self.activity.active_flows(UeId(0), now, self.inactivity);
            for p in pkts.iter_mut() {
                if matches!(p.kind, PacketKind::Ack(_)) {
                    p.set_xrc_option(agent::feedback(rate, af, hol));
                }
            }
        }
        for p in pkts.drain(..) {
            cx.out(Dir::Up, p);
        }
    }

    /// Re-arms the queues' wake-ups once the packets this call let out are
    /// carried on (they may come back in), or at once when it let none out.
    fn rearm_when_settled(&mut self, now: SimTime, cx: &mut impl Io<TraceTimer>) {
        if cx.is_listing() {
            cx.rearm_after();
        } else {
            Component::rearm(self, now, cx);
        }
    }

    /// The millisecond's sampling instant: the agent's and NetAssist's
    /// windows move on, and the observer gets the queue's state.
    fn on_tick(&mut self, now: SimTime, cx: &mut impl Io<TraceTimer>) {
        let tick = self.tick;
        let d = std::mem::take(&mut self.departed_this_ms);
        self.departures.push(d);
        let from = now.since_start();
        // The trace's capacity in this millisecond (NetAssist's period and
        // the ground truth).
        let this_ms = self.link.trace().capacity_between(from, from + tick);
        self.na_capacity_bits += this_ms as f64 * tick.as_secs_f64();
        self.na_ms += 1;
        let avail_bps = this_ms as f64;
        let sample = UeSample {
            cqi: 0,
            hol: self.link.hol_delay(now),
            sdus: self.link.queued_packets() as u32,
            bytes: self.link.queued_bytes(),
            available_bits: avail_bps * tick.as_secs_f64(),
            available_mbps: avail_bps * 1e-6,
            agent_bps: self.recent_capacity_bps(now),
        };
        cx.obs().instant(now, tick);
        cx.obs().ue_sample(now, 0, &sample);
        cx.tick();
        let next = now + tick;
        if next < self.until {
            cx.wake(next, TraceTimer::Tick);
        }
    }
}

impl Component for TraceAccess {
    type Timer = TraceTimer;

    fn start(&mut self, now: SimTime, cx: &mut impl Io<TraceTimer>) {
        cx.wake(now, TraceTimer::Tick);
    }

    fn receive(&mut self, now: SimTime, dir: Dir, pkt: Packet, cx: &mut impl Io<TraceTimer>) {
        let mut out = std::mem::take(&mut self.scratch);
        out.clear();
        match dir {
            Dir::Down => {
                self.activity.on_packet(pkt.flow, now);
                if let Err(p) = self.link.enqueue(now, pkt, &mut out) {
                    cx.obs().dropped(now, DropSite::TraceDownlink, Some(0), &p);
                }
                self.delivered(now, &mut out, cx);
                self.rearm_when_settled(now, cx);
            }
            Dir::Up => match &mut self.uplink {
                AckPath::Delay(pipe) => {
                    if let Some(t) = pipe.push(now, pkt) {
                        cx.wake(t, TraceTimer::Uplink);
                    }
                }
                AckPath::Trace(link, _) => {
                    if let Err(p) = link.enqueue(now, pkt, &mut out) {
                        cx.obs().dropped(now, DropSite::TraceUplink, None, &p);
                    }
                    self.acks_at_agent(now, &mut out, cx);
                    self.rearm_when_settled(now, cx);
                }
            },
        }
        self.scratch = out;
    }

    fn fire(&mut self, now: SimTime, timer: TraceTimer, cx: &mut impl Io<TraceTimer>) {
        let mut pkts = std::mem::take(&mut self.scratch);
        pkts.clear();
        match timer {
            TraceTimer::Tick => self.on_tick(now, cx),
            TraceTimer::Downlink => {
                if self.link_wake == Some(now) {
                    self.link_wake = None;
                }
                self.link.advance(now, &mut pkts);
                self.delivered(now, &mut pkts, cx);
                self.rearm_when_settled(now, cx);
            }
            TraceTimer::Uplink => {
                match &mut self.uplink {
                    AckPath::Delay(pipe) => {
                        while let Some(p) = pipe.pop_arrived(now) {
                            pkts.push(p);
                        }
                        if let Some(t) = pipe.next_arrival() {
                            cx.wake(t, TraceTimer::Uplink);
                        }
                    }
                    AckPath::Trace(link, wake) => {
                        if *wake == Some(now) {
                            *wake = None;
                        }
                        link.advance(now, &mut pkts);
                    }
                }
                self.acks_at_agent(now, &mut pkts, cx);
                self.rearm_when_settled(now, cx);
            }
        }
        self.scratch = pkts;
    }

    /// Sets the queues' next wake-ups unless a timer at or before them is
    /// already pending (a stale one finds nothing to do).
    fn rearm(&mut self, _now: SimTime, cx: &mut impl Io<TraceTimer>) {
        if let Some(t) = self.link.next_wakeup() {
            if self.link_wake.is_none_or(|p| t < p) {
                self.link_wake = Some(t);
                cx.wake(t, TraceTimer::Downlink);
            }
        }
        if let AckPath::Trace(link, wake) = &mut self.uplink {
            if let Some(t) = link.next_wakeup() {
                if wake.is_none_or(|p| t < p) {
                    *wake = Some(t);
                    cx.wake(t, TraceTimer::Uplink);
                }
            }
        }
    }
}

impl Access for TraceAccess {
    fn num_ues(&self) -> usize {
        1
    }
    fn ue_of(&self, _flow: FlowId) -> Option<usize> {
        Some(0)
    }
    fn min_rtt(&self) -> SimDuration {
        self.uplink_min_delay()
    }
    fn pbe_rate_bps(&self, _ue: usize, now: SimTime) -> Option<u64> {
        let af = self.activity.active_flows(UeId(0), now, self.inactivity).max(1);
        let r = self.recent_capacity_bps(now) as f64 * 0.932 / af as f64;
        Some(r as u64)
    }
    fn oracle_capacity_bps(&self, _ue: usize, now: SimTime, ahead: SimDuration, span: SimDuration) -> Option<f64> {
        let from = now.since_start() + ahead;
        Some(self.link.trace().capacity_between(from, from + span) as f64)
    }
    /// The trace is known in advance: its opportunities in (`from`, `to`],
    /// at most as many in one millisecond as the queue holds full packets
    /// (the rest could carry nobody's packet: each was queued before it).
    fn oracle_schedule(&mut self, _ue: usize, _payload: u32) -> Result<(), String> {
        Ok(())
    }
    fn oracle_opportunities(&mut self, _ue: usize, from: SimTime, to: SimTime, out: &mut Vec<(u64, SimTime)>) -> bool {
        let trace = self.link.trace();
        let held = self.link.full_packets_held();
        let (first, end) = (trace.first_after(from), trace.first_after(to));
        let mut same = 0u64;
        let mut last: Option<SimTime> = None;
        for k in first..end {
            let at = trace.at(k);
            if last == Some(at) {
                same += 1;
            } else {
                same = 1;
                last = Some(at);
            }
            if held.is_none_or(|h| same <= h) {
                out.push((k, at));
            }
        }
        true
    }
    fn net_assist_report(&mut self, _ue: usize, now: SimTime, wired_rtt: SimDuration) -> Option<NetAssistReport> {
        let bw = if self.na_ms > 0 {
            self.na_capacity_bits / (self.na_ms as f64 * 1e-3)
        } else {
            0.0
        };
        self.na_capacity_bits = 0.0;
        self.na_ms = 0;
        let extra = self.uplink_min_delay().as_secs_f64() + if bw > 0.0 { 12_000.0 / bw } else { 0.0 };
        Some(NetAssistReport {
            bw_bps: bw as u64,
            min_rtt: wired_rtt + SimDuration::try_from_secs_f64(extra).unwrap_or(SimDuration::ZERO),
            flows: self.activity.active_flows(UeId(0), now, self.inactivity),
        })
    }
    fn link_counters(&self, _ue: usize) -> UeLinkCounters {
        UeLinkCounters {
            carried_bits: self.departed_bits,
            ..UeLinkCounters::default()
        }
    }
    fn check_conservation(&self) -> Result<(), String> {
        let check = |name: &str, c: QueueCounters| {
            if c.conserved() {
                Ok(())
            } else {
                Err(format!("{name}: {c:?}"))
            }
        };
        check("trace queue", self.link.counters())?;
        if let AckPath::Trace(link, _) = &self.uplink {
            check("trace uplink queue", link.counters())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::{NullObserver, Standalone};

    fn ms(v: u64) -> SimTime {
        SimTime::from_nanos(v * 1_000_000)
    }

    fn access(uplink: TraceUplink) -> TraceAccess {
        TraceAccess::new(
            TraceAccessConfig {
                downlink: Trace::parse("1\n").unwrap(),
                downlink_limit: QueueLimit::UNLIMITED,
                uplink,
                agent: AgentConfig::default(),
                abc: AbcConfig::default(),
            },
            1,
            SimTime::MAX,
        )
    }

    #[test]
    fn data_leaves_at_the_traces_opportunities_and_acks_leave_with_the_agents_option() {
        // One 1504-byte opportunity per millisecond; a packet arriving in
        // millisecond 0 is first carried at 1 ms (trace_link rule 6).
        let mut obs = NullObserver;
        let mut s = Standalone::new(
            access(TraceUplink::Delay(SimDuration::from_millis(2))),
            SimTime::ZERO,
            &mut obs,
        );
        let mut out = Vec::new();
        for i in 0..3 {
            s.push(
                SimTime::from_nanos(500_000),
                Dir::Down,
                Packet::data(FlowId(0), i * 1448, 1448, SimTime::ZERO, false),
                &mut obs,
                &mut out,
            );
        }
        s.advance(ms(10), &mut obs, &mut out);
        let down: Vec<_> = out.iter().map(|r| (r.at, r.dir)).collect();
        assert_eq!(down, vec![(ms(1), Dir::Down), (ms(2), Dir::Down), (ms(3), Dir::Down)]);
        s.push(
            ms(10),
            Dir::Up,
            Packet::ack(FlowId(0), 1448, &[], SimTime::ZERO),
            &mut obs,
            &mut out,
        );
        s.advance(ms(20), &mut obs, &mut out);
        let up = out.last().unwrap();
        assert_eq!((up.at, up.dir), (ms(12), Dir::Up));
        let PacketKind::Ack(a) = &up.pkt.kind else {
            panic!("an ACK")
        };
        let x = a.xrc().expect("the agent writes its option");
        // 1500 IP bytes per millisecond: 12 Mbit/s, for the one active flow.
        assert_eq!(x.rate_bps, 12_000_000);
        assert_eq!(s.ticks(), 21, "one sampling instant per millisecond, 0 to 20 ms");
        assert!(s.component().check_conservation().is_ok());
    }
}
