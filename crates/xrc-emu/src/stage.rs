//! The link models as components with a narrow interface: packets in,
//! packets out with the exact model time they leave, and the next wake-up
//! time. The same interface serves a discrete-event loop and the
//! wall-clock loop of [`crate::driver`]; this is the shape issue 8 gives the
//! simulator's access networks.
//!
//! The stages wrap xrc-core's models without changing them, so "the same
//! model" is literally the same code as the simulator's:
//!
//! - [`LinkStage`]: `net::Link` (rate, one-way delay, drop-tail in packets
//!   or bytes), the `wired` topology's bottleneck and the Internet path of
//!   every topology;
//! - [`crate::access::AccessStage`]: one direction of a base-station
//!   component (the `trace` topology's `ran::trace_access::TraceAccess`,
//!   the `cellular` topology's `ran::cell_access::CellAccess`).
//!
//! Each stage is called with model times that never go back, and only at
//! or after the times it asked for, exactly as the simulator's event queue
//! calls the same models.

use xrc_core::net::{Enqueued, Link, LinkConfig, Packet, QueueCounters};
use xrc_core::units::SimTime;

/// One element of an emulated path.
pub trait Stage: Send {
    /// Offers `pkt` at `now`; a dropped packet is handed back. Packets that
    /// leave because of the arrival (a trace link uses or loses the
    /// current millisecond's opportunities first) are pushed to `out`.
    fn enqueue(&mut self, now: SimTime, pkt: Packet, out: &mut Vec<(SimTime, Packet)>) -> Result<(), Packet>;
    /// When something next happens inside (a packet leaves or the model
    /// has internal work); `None` when idle.
    fn next_wakeup(&self) -> Option<SimTime>;
    /// Runs everything due at or before `now`, in time order; packets that
    /// leave are pushed with the model time they leave at.
    fn advance(&mut self, now: SimTime, out: &mut Vec<(SimTime, Packet)>);
    /// Conservation counters: arrived = departed + dropped + held.
    fn counters(&self) -> QueueCounters;
    /// Packets waiting or in transit inside.
    fn held(&self) -> u64 {
        self.counters().held
    }
    fn kind(&self) -> &'static str;
}

/// `net::Link`: a drop-tail queue, a serializer and a propagation pipe.
/// The serializer's end-of-transmission is the stage's internal event.
#[derive(Debug)]
pub struct LinkStage {
    link: Link,
    tx_done: Option<SimTime>,
}

impl LinkStage {
    pub fn new(cfg: &LinkConfig) -> Self {
        LinkStage {
            link: Link::new(cfg),
            tx_done: None,
        }
    }
}

impl Stage for LinkStage {
    fn enqueue(&mut self, now: SimTime, pkt: Packet, _out: &mut Vec<(SimTime, Packet)>) -> Result<(), Packet> {
        match self.link.enqueue(now, pkt) {
            Enqueued::Dropped(p) => Err(p),
            Enqueued::Queued | Enqueued::InPipe(_) => Ok(()),
            Enqueued::TxStarted(t) => {
                self.tx_done = Some(t);
                Ok(())
            }
        }
    }

    fn next_wakeup(&self) -> Option<SimTime> {
        match (self.tx_done, self.link.next_arrival()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn advance(&mut self, now: SimTime, out: &mut Vec<(SimTime, Packet)>) {
        loop {
            let tx = self.tx_done.filter(|&t| t <= now);
            let arr = self.link.next_arrival().filter(|&t| t <= now);
            match (tx, arr) {
                // The earlier event first; at equal times the end of a
                // transmission first, so a zero-delay pipe passes the packet
                // on at the same instant.
                (Some(t), a) if a.is_none_or(|a| t <= a) => {
                    let d = self.link.tx_done(t);
                    self.tx_done = d.next_tx_done;
                }
                (_, Some(a)) => {
                    let p = self.link.pop_arrived(a).expect("the head has arrived");
                    out.push((a, p));
                }
                _ => return,
            }
        }
    }

    fn counters(&self) -> QueueCounters {
        self.link.counters()
    }
    fn kind(&self) -> &'static str {
        "link"
    }
}

/// A packet dropped inside a path: which stage and when.
#[derive(Debug)]
pub struct Dropped {
    pub stage: usize,
    pub at: SimTime,
    pub pkt: Packet,
}

/// Stages in series: what leaves stage `i` at model time `t` enters stage
/// `i + 1` at `t`.
pub struct Path {
    stages: Vec<Box<dyn Stage>>,
    buf: Vec<(SimTime, Packet)>,
}

impl Path {
    pub fn new(stages: Vec<Box<dyn Stage>>) -> Self {
        Path {
            stages,
            buf: Vec::new(),
        }
    }

    pub fn stages(&self) -> &[Box<dyn Stage>] {
        &self.stages
    }

    /// A packet enters the first stage at `now`; with no stage it leaves at once.
    pub fn enqueue(
        &mut self,
        now: SimTime,
        pkt: Packet,
        released: &mut Vec<(SimTime, Packet)>,
        dropped: &mut Vec<Dropped>,
    ) {
        self.offer(0, now, pkt, released, dropped);
    }

    /// Hands `pkt` to stage `i` at `t` (past the last stage: released), and
    /// passes on whatever the arrival makes leave.
    fn offer(
        &mut self,
        i: usize,
        t: SimTime,
        pkt: Packet,
        released: &mut Vec<(SimTime, Packet)>,
        dropped: &mut Vec<Dropped>,
    ) {
        let Some(stage) = self.stages.get_mut(i) else {
            released.push((t, pkt));
            return;
        };
        let mut out = Vec::new();
        if let Err(pkt) = stage.enqueue(t, pkt, &mut out) {
            dropped.push(Dropped { stage: i, at: t, pkt });
        }
        for (u, p) in out {
            self.offer(i + 1, u, p, released, dropped);
        }
    }

    pub fn next_wakeup(&self) -> Option<SimTime> {
        self.stages.iter().filter_map(|s| s.next_wakeup()).min()
    }

    /// Runs every stage up to `now` in global time order: at each step the
    /// earliest pending time `m` of any stage is processed through the
    /// stages in order, so a packet a stage hands on at `m` is offered to
    /// the next stage at `m` before that stage's later events. Packets out
    /// of the last stage go to `released` with their model time.
    pub fn advance_to(&mut self, now: SimTime, released: &mut Vec<(SimTime, Packet)>, dropped: &mut Vec<Dropped>) {
        while let Some(m) = self.next_wakeup().filter(|&m| m <= now) {
            for i in 0..self.stages.len() {
                if self.stages[i].next_wakeup().is_none_or(|t| t > m) {
                    continue;
                }
                let mut buf = std::mem::take(&mut self.buf);
                buf.clear();
                self.stages[i].advance(m, &mut buf);
                for (t, p) in buf.drain(..) {
                    self.offer(i + 1, t, p, released, dropped);
                }
                self.buf = buf;
            }
        }
    }

    /// Packets inside the path.
    pub fn held(&self) -> u64 {
        self.stages.iter().map(|s| s.held()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use xrc_core::net::{FlowId, QueueLimit};
    use xrc_core::ran::trace_access::{TraceAccessConfig, TraceUplink};
    use xrc_core::ran::trace_link::Trace;
    use xrc_core::units::{BitRate, SimDuration};

    fn pkt(size: u32) -> Packet {
        let mut p = Packet::data(FlowId(0), 0, 0, SimTime::ZERO, false);
        p.size = size;
        p
    }
    fn ms(v: u64) -> SimTime {
        SimTime::from_nanos(v * 1_000_000)
    }

    #[test]
    fn a_link_stage_releases_a_packet_after_its_serialization_and_delay() {
        let mut path = Path::new(vec![Box::new(LinkStage::new(&LinkConfig {
            rate: BitRate::try_from_mbps(12.0),
            delay: SimDuration::from_millis(10),
            limit: QueueLimit::packets(10),
        }))]);
        let (mut rel, mut drop) = (Vec::new(), Vec::new());
        path.enqueue(SimTime::ZERO, pkt(1500), &mut rel, &mut drop);
        path.enqueue(SimTime::ZERO, pkt(1500), &mut rel, &mut drop);
        assert_eq!(path.next_wakeup(), Some(ms(1)));
        path.advance_to(ms(11), &mut rel, &mut drop);
        assert_eq!(rel.iter().map(|(t, _)| *t).collect::<Vec<_>>(), vec![ms(11)]);
        path.advance_to(ms(50), &mut rel, &mut drop);
        assert_eq!(rel.iter().map(|(t, _)| *t).collect::<Vec<_>>(), vec![ms(11), ms(12)]);
        assert!(drop.is_empty());
        assert_eq!(path.held(), 0);
    }

    #[test]
    fn a_packet_leaving_a_delay_enters_the_trace_queue_at_its_model_time_not_later() {
        // 20 ms of delay, then one opportunity every 5 ms: a packet sent at
        // 1 ms reaches the trace queue at 21 ms and leaves at 25 ms even when
        // the path is only advanced at 40 ms.
        let bs = crate::access::AccessHandle::trace(TraceAccessConfig {
            downlink: Trace::parse("5\n").unwrap(),
            downlink_limit: QueueLimit::UNLIMITED,
            uplink: TraceUplink::Delay(SimDuration::ZERO),
            agent: Default::default(),
            abc: Default::default(),
        });
        let mut path = Path::new(vec![
            Box::new(LinkStage::new(&LinkConfig {
                rate: None,
                delay: SimDuration::from_millis(20),
                limit: QueueLimit::UNLIMITED,
            })),
            Box::new(bs.stages().0),
        ]);
        let (mut rel, mut drop) = (Vec::new(), Vec::new());
        path.enqueue(ms(1), pkt(1500), &mut rel, &mut drop);
        path.enqueue(ms(1), pkt(1500), &mut rel, &mut drop);
        path.advance_to(ms(40), &mut rel, &mut drop);
        assert_eq!(rel.iter().map(|(t, _)| *t).collect::<Vec<_>>(), vec![ms(25), ms(30)]);
    }

    #[test]
    fn a_full_queue_reports_the_drop_with_its_stage() {
        let mut path = Path::new(vec![
            Box::new(LinkStage::new(&LinkConfig {
                rate: None,
                delay: SimDuration::ZERO,
                limit: QueueLimit::UNLIMITED,
            })),
            Box::new(LinkStage::new(&LinkConfig {
                rate: BitRate::try_from_mbps(1.0),
                delay: SimDuration::ZERO,
                limit: QueueLimit::packets(1),
            })),
        ]);
        let (mut rel, mut drop) = (Vec::new(), Vec::new());
        for _ in 0..3 {
            path.enqueue(SimTime::ZERO, pkt(1500), &mut rel, &mut drop);
        }
        path.advance_to(SimTime::ZERO, &mut rel, &mut drop);
        assert_eq!(drop.len(), 1);
        assert_eq!(drop[0].stage, 1);
        for s in path.stages() {
            assert!(s.counters().conserved());
        }
    }
}
