//! A fixed propagation delay. Packets leave in the order they entered, so
//! the pipe is a FIFO and only its head needs a pending event.

use std::collections::VecDeque;

use super::Packet;
use crate::units::{SimDuration, SimTime};

#[derive(Debug)]
pub struct Pipe {
    delay: SimDuration,
    in_flight: VecDeque<(SimTime, Packet)>,
    entered: u64,
    left: u64,
}

impl Pipe {
    pub fn new(delay: SimDuration) -> Self {
        Pipe {
            delay,
            in_flight: VecDeque::new(),
            entered: 0,
            left: 0,
        }
    }

    pub fn delay(&self) -> SimDuration {
        self.delay
    }

    /// Puts `pkt` in flight. Returns its arrival time when it became the
    /// head (the caller then schedules one event for it); `None` when an
    /// earlier packet's event is already pending.
    #[must_use]
    #[inline(always)]
    pub fn push(&mut self, now: SimTime, pkt: Packet) -> Option<SimTime> {
        let at = now + self.delay;
        self.entered += 1;
        let was_empty = self.in_flight.is_empty();
        self.in_flight.push_back((at, pkt));
        was_empty.then_some(at)
    }

    /// Removes the head if it has arrived by `now`.
    #[inline(always)]
    pub fn pop_arrived(&mut self, now: SimTime) -> Option<Packet> {
        if self.in_flight.front()?.0 <= now {
            self.left += 1;
            self.in_flight.pop_front().map(|(_, p)| p)
        } else {
            None
        }
    }

    /// Arrival time of the head, if any.
    pub fn next_arrival(&self) -> Option<SimTime> {
        self.in_flight.front().map(|(t, _)| *t)
    }

    pub fn len(&self) -> usize {
        self.in_flight.len()
    }
    pub fn is_empty(&self) -> bool {
        self.in_flight.is_empty()
    }
    /// (entered, left, in flight): entered = left + in flight always.
    pub fn counters(&self) -> (u64, u64, u64) {
        (self.entered, self.left, self.in_flight.len() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::FlowId;

    fn pkt(seq: u64) -> Packet {
        Packet::data(FlowId(0), seq, 100, SimTime::ZERO, false)
    }

    #[test]
    fn only_the_head_asks_for_an_event() {
        let mut p = Pipe::new(SimDuration::from_millis(5));
        assert_eq!(p.push(SimTime::ZERO, pkt(0)), Some(SimTime::from_nanos(5_000_000)));
        assert_eq!(p.push(SimTime::from_nanos(1), pkt(1)), None);
        assert!(p.pop_arrived(SimTime::from_nanos(4_999_999)).is_none());
        assert_eq!(p.pop_arrived(SimTime::from_nanos(5_000_000)).unwrap(), pkt(0));
        assert_eq!(p.next_arrival(), Some(SimTime::from_nanos(5_000_001)));
        assert_eq!(p.counters(), (2, 1, 1));
    }
}
