//! A point-to-point link: a drop-tail queue, a serializer at a fixed rate
//! and a propagation pipe. A link without a rate only delays.

use super::{DropTail, Packet, Pipe, QueueCounters, QueueLimit};
use crate::units::{BitRate, SimDuration, SimTime};

#[derive(Clone, Debug)]
pub struct LinkConfig {
    /// `None`: infinitely fast (no queue, no serialization).
    pub rate: Option<BitRate>,
    pub delay: SimDuration,
    pub limit: QueueLimit,
}

/// What happened to a packet offered to a link.
#[derive(Debug, PartialEq)]
pub enum Enqueued {
    /// Dropped at the tail; the packet is handed back for accounting.
    Dropped(Packet),
    /// Waiting behind the packet being serialized.
    Queued,
    /// Serialization started; schedule the end of it at this time.
    TxStarted(SimTime),
    /// No serializer: the packet is in the pipe; if it became the pipe's head
    /// schedule its arrival at this time.
    InPipe(Option<SimTime>),
}

#[derive(Debug)]
pub struct Link {
    rate: Option<BitRate>,
    queue: DropTail<Packet>,
    /// The packet being serialized, if any.
    on_wire: Option<Packet>,
    pipe: Pipe,
}

/// Scheduling requests that follow the end of a serialization.
#[derive(Debug, Default, PartialEq)]
pub struct TxDone {
    /// The serialized packet became the pipe's head: its arrival time.
    pub arrival: Option<SimTime>,
    /// The next packet's serialization ends at this time.
    pub next_tx_done: Option<SimTime>,
}

impl Link {
    pub fn new(cfg: &LinkConfig) -> Self {
        Link {
            rate: cfg.rate,
            queue: DropTail::new(cfg.limit),
            on_wire: None,
            pipe: Pipe::new(cfg.delay),
        }
    }

    #[inline(always)]
    pub fn enqueue(&mut self, now: SimTime, pkt: Packet) -> Enqueued {
        let Some(rate) = self.rate else {
            return Enqueued::InPipe(self.pipe.push(now, pkt));
        };
        if self.on_wire.is_none() && self.queue.is_empty() {
            // The packet passes through the queue's counters (not its
            // storage: one copy fewer each way) so conservation holds for
            // the whole link.
            if !self.queue.pass(&pkt) {
                return Enqueued::Dropped(pkt);
            }
            let done = now + rate.tx_time(pkt.size as u64).unwrap_or(SimDuration::MAX);
            self.on_wire = Some(pkt);
            return Enqueued::TxStarted(done);
        }
        match self.queue.push(now, pkt) {
            Ok(()) => Enqueued::Queued,
            Err(p) => Enqueued::Dropped(p),
        }
    }

    /// The packet on the wire finished serializing at `now`.
    #[inline(always)]
    pub fn tx_done(&mut self, now: SimTime) -> TxDone {
        let mut out = TxDone::default();
        if let Some(p) = self.on_wire.take() {
            out.arrival = self.pipe.push(now, p);
        }
        if let Some((_, next)) = self.queue.pop() {
            let rate = self.rate.expect("queued packets imply a rate");
            out.next_tx_done = Some(now + rate.tx_time(next.size as u64).unwrap_or(SimDuration::MAX));
            self.on_wire = Some(next);
        }
        out
    }

    /// Takes the packet at the far end if it has arrived by `now`.
    #[inline(always)]
    pub fn pop_arrived(&mut self, now: SimTime) -> Option<Packet> {
        self.pipe.pop_arrived(now)
    }
    pub fn next_arrival(&self) -> Option<SimTime> {
        self.pipe.next_arrival()
    }
    pub fn queue_len(&self) -> usize {
        self.queue.len()
    }
    pub fn queue_bytes(&self) -> u64 {
        self.queue.bytes()
    }
    /// Byte conservation of the link's queue (see [`DropTail::bytes_conserved`]).
    pub fn bytes_conserved(&self) -> Result<(), String> {
        self.queue.bytes_conserved()
    }
    /// Counters of the queue including the packet on the wire and the pipe:
    /// arrived = departed (out of the far end) + dropped + held (queued,
    /// serializing or propagating).
    pub fn counters(&self) -> QueueCounters {
        let q = self.queue.counters();
        let (_, left, in_pipe) = self.pipe.counters();
        if self.rate.is_none() {
            let (entered, left, held) = self.pipe.counters();
            return QueueCounters {
                arrived: entered,
                departed: left,
                dropped: 0,
                held,
            };
        }
        QueueCounters {
            arrived: q.arrived,
            departed: left,
            dropped: q.dropped,
            held: q.held + self.on_wire.is_some() as u64 + in_pipe,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::FlowId;

    fn pkt() -> Packet {
        Packet::data(FlowId(0), 0, 1448, SimTime::ZERO, false)
    }

    #[test]
    fn back_to_back_packets_serialize_one_after_the_other() {
        let cfg = LinkConfig {
            rate: BitRate::try_from_mbps(12.0),
            delay: SimDuration::from_millis(10),
            limit: QueueLimit::packets(10),
        };
        let mut l = Link::new(&cfg);
        let t0 = SimTime::ZERO;
        assert_eq!(
            l.enqueue(t0, pkt()),
            Enqueued::TxStarted(SimTime::from_nanos(1_000_000))
        );
        assert_eq!(l.enqueue(t0, pkt()), Enqueued::Queued);
        let d = l.tx_done(SimTime::from_nanos(1_000_000));
        assert_eq!(d.arrival, Some(SimTime::from_nanos(11_000_000)));
        assert_eq!(d.next_tx_done, Some(SimTime::from_nanos(2_000_000)));
        assert!(l.counters().conserved());
    }

    #[test]
    fn the_queue_limit_excludes_the_packet_on_the_wire() {
        let cfg = LinkConfig {
            rate: BitRate::try_from_mbps(1.0),
            delay: SimDuration::ZERO,
            limit: QueueLimit::packets(1),
        };
        let mut l = Link::new(&cfg);
        assert!(matches!(l.enqueue(SimTime::ZERO, pkt()), Enqueued::TxStarted(_)));
        assert_eq!(l.enqueue(SimTime::ZERO, pkt()), Enqueued::Queued);
        assert!(matches!(l.enqueue(SimTime::ZERO, pkt()), Enqueued::Dropped(_)));
        let c = l.counters();
        assert_eq!((c.arrived, c.dropped, c.held), (3, 1, 2));
        assert!(c.conserved());
    }

    #[test]
    fn an_idle_link_drops_a_packet_larger_than_its_byte_limit() {
        let cfg = LinkConfig {
            rate: BitRate::try_from_mbps(1.0),
            delay: SimDuration::ZERO,
            limit: QueueLimit {
                packets: None,
                bytes: Some(1000),
            },
        };
        let mut l = Link::new(&cfg);
        assert!(matches!(l.enqueue(SimTime::ZERO, pkt()), Enqueued::Dropped(_)));
        let c = l.counters();
        assert_eq!((c.arrived, c.dropped, c.held), (1, 1, 0));
        assert!(c.conserved());
    }
}
