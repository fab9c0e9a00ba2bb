//! A binary-heap event queue keyed by (time, sequence).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::units::SimTime;

struct Entry<E> {
    at: SimTime,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        self.at == other.at && self.seq == other.seq
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    // `BinaryHeap` is a max-heap: reverse so the earliest (time, seq) is on top.
    fn cmp(&self, other: &Self) -> Ordering {
        other.at.cmp(&self.at).then_with(|| other.seq.cmp(&self.seq))
    }
}

/// Pending events, popped in (time, insertion sequence) order.
pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
    next_seq: u64,
    now: SimTime,
    popped: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue { heap: BinaryHeap::with_capacity(1024), next_seq: 0, now: SimTime::ZERO, popped: 0 }
    }

    /// The time of the event most recently popped (the current simulated time).
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// Schedules `event` at `at`. Scheduling in the past is a logic error;
    /// such an event is clamped to the current time so time never runs back.
    pub fn schedule(&mut self, at: SimTime, event: E) {
        debug_assert!(at >= self.now, "event scheduled in the past: {at:?} < {:?}", self.now);
        let at = at.max(self.now);
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry { at, seq, event });
    }

    /// The time of the next pending event.
    pub fn peek_time(&self) -> Option<SimTime> {
        self.heap.peek().map(|e| e.at)
    }

    /// Pops the next event if it is due at or before `limit`, advancing `now`.
    pub fn pop_until(&mut self, limit: SimTime) -> Option<(SimTime, E)> {
        if self.heap.peek()?.at > limit {
            return None;
        }
        let e = self.heap.pop()?;
        self.now = e.at;
        self.popped += 1;
        Some((e.at, e.event))
    }

    /// Advances the clock to `t` when no event is due before it.
    pub fn advance_to(&mut self, t: SimTime) {
        debug_assert!(self.peek_time().is_none_or(|p| p >= t));
        if t > self.now {
            self.now = t;
        }
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
    /// Number of events popped so far.
    pub fn events_processed(&self) -> u64 {
        self.popped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::Rng;

    #[test]
    fn simultaneous_events_run_first_in_first_out() {
        let mut q = EventQueue::new();
        let t = SimTime::from_nanos(5);
        for i in 0..100 {
            q.schedule(t, i);
        }
        let order: Vec<i32> = std::iter::from_fn(|| q.pop_until(SimTime::MAX).map(|(_, e)| e)).collect();
        assert_eq!(order, (0..100).collect::<Vec<_>>());
    }

    #[test]
    fn events_come_out_in_time_then_sequence_order_for_random_schedules() {
        let mut rng = Rng::from_seed(7);
        let mut q = EventQueue::new();
        let mut expected = Vec::new();
        for i in 0..5000u64 {
            let t = SimTime::from_nanos(rng.below(50));
            q.schedule(t, i);
            expected.push((t, i));
        }
        expected.sort();
        let got: Vec<(SimTime, u64)> = std::iter::from_fn(|| q.pop_until(SimTime::MAX)).collect();
        assert_eq!(got, expected);
    }

    #[test]
    fn pop_until_leaves_later_events_pending() {
        let mut q = EventQueue::new();
        q.schedule(SimTime::from_nanos(10), 'a');
        q.schedule(SimTime::from_nanos(20), 'b');
        assert_eq!(q.pop_until(SimTime::from_nanos(15)), Some((SimTime::from_nanos(10), 'a')));
        assert_eq!(q.pop_until(SimTime::from_nanos(15)), None);
        assert_eq!(q.now(), SimTime::from_nanos(10));
        assert_eq!(q.len(), 1);
    }
}
