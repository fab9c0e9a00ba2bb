//! A drop-tail FIFO with packet and byte limits and conservation counters.

use std::collections::VecDeque;

use crate::units::SimTime;

/// How much a drop-tail queue holds. A packet that would exceed either limit
/// is dropped on arrival.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct QueueLimit {
    pub packets: Option<u32>,
    pub bytes: Option<u64>,
}

impl QueueLimit {
    pub const UNLIMITED: QueueLimit = QueueLimit {
        packets: None,
        bytes: None,
    };
    pub fn packets(n: u32) -> Self {
        QueueLimit {
            packets: Some(n),
            bytes: None,
        }
    }
}

/// Arrived = departed + dropped + held, at every instant.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct QueueCounters {
    pub arrived: u64,
    pub departed: u64,
    pub dropped: u64,
    pub held: u64,
}

impl QueueCounters {
    pub fn conserved(&self) -> bool {
        self.arrived == self.departed + self.dropped + self.held
    }
}

/// Items that know their size in bytes.
pub trait ByteSize {
    fn byte_size(&self) -> u64;
}

impl ByteSize for super::Packet {
    fn byte_size(&self) -> u64 {
        self.size as u64
    }
}

#[derive(Debug)]
pub struct DropTail<T> {
    limit: QueueLimit,
    items: VecDeque<(SimTime, T)>,
    bytes: u64,
    arrived: u64,
    departed: u64,
    dropped: u64,
}

impl<T: ByteSize> DropTail<T> {
    pub fn new(limit: QueueLimit) -> Self {
        DropTail {
            limit,
            items: VecDeque::new(),
            bytes: 0,
            arrived: 0,
            departed: 0,
            dropped: 0,
        }
    }

    /// Enqueues `item` at `now`, or hands it back when the queue is full.
    pub fn push(&mut self, now: SimTime, item: T) -> Result<(), T> {
        self.arrived += 1;
        let size = item.byte_size();
        let over_packets = self.limit.packets.is_some_and(|n| self.items.len() as u64 >= n as u64);
        let over_bytes = self.limit.bytes.is_some_and(|b| self.bytes + size > b);
        if over_packets || over_bytes {
            self.dropped += 1;
            return Err(item);
        }
        self.bytes += size;
        self.items.push_back((now, item));
        Ok(())
    }

    /// Counts `item` in and at once out again, as [`DropTail::push`] then
    /// [`DropTail::pop`] would on an empty queue, without storing it:
    /// `false` when it would not have fitted (counted as dropped).
    #[inline(always)]
    pub fn pass(&mut self, item: &T) -> bool {
        debug_assert!(self.items.is_empty(), "only an empty queue lets an item pass");
        self.arrived += 1;
        let size = item.byte_size();
        let over_packets = self.limit.packets == Some(0);
        let over_bytes = self.limit.bytes.is_some_and(|b| self.bytes + size > b);
        if over_packets || over_bytes {
            self.dropped += 1;
            return false;
        }
        self.departed += 1;
        true
    }

    /// Removes the head with its arrival time.
    pub fn pop(&mut self) -> Option<(SimTime, T)> {
        let (t, item) = self.items.pop_front()?;
        self.bytes -= item.byte_size();
        self.departed += 1;
        Some((t, item))
    }

    pub fn front(&self) -> Option<&(SimTime, T)> {
        self.items.front()
    }
    pub fn front_mut(&mut self) -> Option<&mut (SimTime, T)> {
        self.items.front_mut()
    }
    /// Adjusts the byte count after the head item shrank by `by` bytes (RLC
    /// segmentation sends part of the head SDU).
    pub fn head_shrunk(&mut self, by: u64) {
        self.bytes -= by;
    }
    pub fn len(&self) -> usize {
        self.items.len()
    }
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    pub fn limit(&self) -> QueueLimit {
        self.limit
    }
    pub fn counters(&self) -> QueueCounters {
        QueueCounters {
            arrived: self.arrived,
            departed: self.departed,
            dropped: self.dropped,
            held: self.items.len() as u64,
        }
    }
    /// Byte conservation: the bytes counted as held are the held items'
    /// sizes (an invariant check; walks the queue).
    pub fn bytes_conserved(&self) -> Result<(), String> {
        let sum: u64 = self.items.iter().map(|(_, i)| i.byte_size()).sum();
        if sum == self.bytes {
            Ok(())
        } else {
            Err(format!(
                "holds {} items of {sum} bytes but counts {} bytes",
                self.items.len(),
                self.bytes
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::{FlowId, Packet};

    fn pkt(len: u32) -> Packet {
        Packet::data(FlowId(0), 0, len, SimTime::ZERO, false)
    }

    #[test]
    fn passing_an_empty_queue_counts_as_a_push_then_a_pop() {
        for limit in [
            QueueLimit::UNLIMITED,
            QueueLimit::packets(0),
            QueueLimit::packets(1),
            QueueLimit {
                packets: None,
                bytes: Some(1000),
            },
        ] {
            for len in [100, 1448] {
                let mut stored = DropTail::new(limit);
                let mut passed = DropTail::new(limit);
                let pushed = stored.push(SimTime::ZERO, pkt(len)).is_ok();
                if pushed {
                    stored.pop();
                }
                assert_eq!(passed.pass(&pkt(len)), pushed, "{limit:?} {len}");
                assert_eq!(passed.counters(), stored.counters());
                assert_eq!(passed.bytes(), 0);
            }
        }
    }

    #[test]
    fn a_full_queue_drops_the_arrival_and_counts_it() {
        let mut q = DropTail::new(QueueLimit::packets(2));
        assert!(q.push(SimTime::ZERO, pkt(100)).is_ok());
        assert!(q.push(SimTime::ZERO, pkt(100)).is_ok());
        assert!(q.push(SimTime::ZERO, pkt(100)).is_err());
        q.pop();
        let c = q.counters();
        assert_eq!(
            c,
            QueueCounters {
                arrived: 3,
                departed: 1,
                dropped: 1,
                held: 1
            }
        );
        assert!(c.conserved());
    }

    #[test]
    fn the_byte_limit_is_checked_against_the_arriving_packet() {
        let mut q = DropTail::new(QueueLimit {
            packets: None,
            bytes: Some(3000),
        });
        assert!(q.push(SimTime::ZERO, pkt(1448)).is_ok());
        assert!(q.push(SimTime::ZERO, pkt(1448)).is_ok());
        assert!(q.push(SimTime::ZERO, pkt(1)).is_err());
        assert_eq!(q.bytes(), 3000);
    }
}
