//! A four-ary min-heap of events keyed by (time, sequence).
//!
//! The key packs time and insertion sequence into one `u128` (time in the
//! high 64 bits), so one integer comparison orders by time and then by
//! insertion: events at the same instant come out first in, first out. A
//! four-ary heap is shallower than a binary one and its children share a
//! cache line, which makes push and pop cheaper for the few thousand pending
//! events a simulation holds.

use crate::units::SimTime;

const ARITY: usize = 4;

struct Entry<E> {
    key: u128,
    event: E,
}

/// Pending events, popped in (time, insertion sequence) order.
pub struct EventQueue<E> {
    heap: Vec<Entry<E>>,
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
        EventQueue {
            heap: Vec::with_capacity(1024),
            next_seq: 0,
            now: SimTime::ZERO,
            popped: 0,
        }
    }

    /// The time of the event most recently popped (the current simulated time).
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// Schedules `event` at `at`. Scheduling in the past is a logic error;
    /// such an event is clamped to the current time so time never runs back.
    #[inline]
    pub fn schedule(&mut self, at: SimTime, event: E) {
        debug_assert!(at >= self.now, "event scheduled in the past: {at:?} < {:?}", self.now);
        let at = at.max(self.now);
        let key = ((at.as_nanos() as u128) << 64) | self.next_seq as u128;
        self.next_seq += 1;
        self.heap.push(Entry { key, event });
        self.sift_up(self.heap.len() - 1);
    }

    /// The time of the next pending event.
    pub fn peek_time(&self) -> Option<SimTime> {
        self.heap.first().map(|e| SimTime::from_nanos((e.key >> 64) as u64))
    }

    /// Pops the next event if it is due at or before `limit`, advancing `now`.
    #[inline]
    pub fn pop_until(&mut self, limit: SimTime) -> Option<(SimTime, E)> {
        let top = self.heap.first()?;
        let at = SimTime::from_nanos((top.key >> 64) as u64);
        if at > limit {
            return None;
        }
        let last = self.heap.pop().expect("non-empty");
        let e = if self.heap.is_empty() {
            last
        } else {
            let top = std::mem::replace(&mut self.heap[0], last);
            self.sift_down(0);
            top
        };
        self.now = at;
        self.popped += 1;
        Some((at, e.event))
    }

    fn sift_up(&mut self, mut i: usize) {
        let key = self.heap[i].key;
        while i > 0 {
            let parent = (i - 1) / ARITY;
            if self.heap[parent].key <= key {
                break;
            }
            self.heap.swap(parent, i);
            i = parent;
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        let key = self.heap[i].key;
        loop {
            let first = i * ARITY + 1;
            if first >= n {
                break;
            }
            let (mut best, mut best_key);
            if let Some(ch) = self.heap.get(first..first + ARITY) {
                // All four children (the usual case inside the heap): a
                // fixed, check-free comparison of the four.
                let (a, b) = if ch[1].key < ch[0].key {
                    (1, ch[1].key)
                } else {
                    (0, ch[0].key)
                };
                let (c, d) = if ch[3].key < ch[2].key {
                    (3, ch[3].key)
                } else {
                    (2, ch[2].key)
                };
                (best, best_key) = if d < b { (first + c, d) } else { (first + a, b) };
            } else {
                best = first;
                best_key = self.heap[first].key;
                for c in first + 1..n {
                    let k = self.heap[c].key;
                    if k < best_key {
                        best = c;
                        best_key = k;
                    }
                }
            }
            if key <= best_key {
                break;
            }
            self.heap.swap(i, best);
            i = best;
        }
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
        assert_eq!(
            q.pop_until(SimTime::from_nanos(15)),
            Some((SimTime::from_nanos(10), 'a'))
        );
        assert_eq!(q.pop_until(SimTime::from_nanos(15)), None);
        assert_eq!(q.now(), SimTime::from_nanos(10));
        assert_eq!(q.len(), 1);
    }
}
