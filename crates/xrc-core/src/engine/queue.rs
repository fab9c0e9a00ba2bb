//! Pending events in two four-ary min-heaps keyed by (time, sequence).
//!
//! The key packs time and insertion sequence into one `u128` (time in the
//! high 64 bits), so one integer comparison orders by time and then by
//! insertion: events at the same instant come out first in, first out. A
//! four-ary heap is shallower than a binary one and its children share a
//! cache line, which makes push and pop cheaper.
//!
//! An event due within [`NEAR_HORIZON_NS`] of the current time goes to the
//! near heap, a later one to the far heap, and a pop takes the smaller of
//! the two heaps' least keys. Most events are due soon (a link's
//! serialization, a TTI), while most *pending* events are far (each flow's
//! retransmission and delayed-ACK timers, propagation delays): with 400
//! flows in one cell, 475 events are pending on average but fewer than 10
//! are due within a millisecond. One heap made almost every push and pop
//! walk the depth of all of them; two keep the busy heap a few entries
//! deep. The split is only a cost: both heaps are exact, so the order of
//! events, and with it every output, does not depend on it. Measured
//! (`run_json`, best of 5 alternated runs): 3–10% less time for 1- and
//! 400-UE cells, LTE and NR (docs/performance.md, "The event queue in two
//! heaps").

use crate::units::SimTime;

const ARITY: usize = 4;

/// Events due within this much of the current time go to the near heap;
/// later ones to the far heap. Only a cost: the order does not depend on it
/// (0.5, 1, 2, 4 and 16 ms measured within noise of one another, all
/// faster than one heap).
pub const NEAR_HORIZON_NS: u64 = 1_000_000;

struct Entry<E> {
    key: u128,
    event: E,
}

/// A four-ary min-heap of entries by key.
struct Heap<E> {
    v: Vec<Entry<E>>,
}

impl<E> Heap<E> {
    fn with_capacity(n: usize) -> Self {
        Heap {
            v: Vec::with_capacity(n),
        }
    }

    /// The smallest key, or `u128::MAX` when empty (no real key is that
    /// large: it would be the last sequence number at the last instant).
    #[inline]
    fn min_key(&self) -> u128 {
        self.v.first().map_or(u128::MAX, |e| e.key)
    }

    #[inline]
    fn push(&mut self, key: u128, event: E) {
        self.v.push(Entry { key, event });
        self.sift_up(self.v.len() - 1);
    }

    /// Removes the smallest entry (the heap is not empty).
    #[inline]
    fn pop(&mut self) -> Entry<E> {
        let last = self.v.pop().expect("non-empty");
        if self.v.is_empty() {
            last
        } else {
            let top = std::mem::replace(&mut self.v[0], last);
            self.sift_down(0);
            top
        }
    }

    fn sift_up(&mut self, mut i: usize) {
        let key = self.v[i].key;
        while i > 0 {
            let parent = (i - 1) / ARITY;
            if self.v[parent].key <= key {
                break;
            }
            self.v.swap(parent, i);
            i = parent;
        }
    }

    fn sift_down(&mut self, mut i: usize) {
        let n = self.v.len();
        let key = self.v[i].key;
        loop {
            let first = i * ARITY + 1;
            if first >= n {
                break;
            }
            let (mut best, mut best_key);
            if let Some(ch) = self.v.get(first..first + ARITY) {
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
                best_key = self.v[first].key;
                for c in first + 1..n {
                    let k = self.v[c].key;
                    if k < best_key {
                        best = c;
                        best_key = k;
                    }
                }
            }
            if key <= best_key {
                break;
            }
            self.v.swap(i, best);
            i = best;
        }
    }
}

/// Pending events, popped in (time, insertion sequence) order.
pub struct EventQueue<E> {
    /// Events due less than [`NEAR_HORIZON_NS`] after `now` when they were
    /// scheduled.
    near: Heap<E>,
    /// The others: retransmission and delayed-ACK timers, propagation
    /// delays, bins. A simulation holds hundreds of these with many flows,
    /// and most events are due soon, so keeping them apart keeps the heap
    /// that almost every event goes through small.
    far: Heap<E>,
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
            near: Heap::with_capacity(256),
            far: Heap::with_capacity(1024),
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
        if at.as_nanos() - self.now.as_nanos() < NEAR_HORIZON_NS {
            self.near.push(key, event);
        } else {
            self.far.push(key, event);
        }
    }

    /// The smallest pending key (`u128::MAX` when none is pending).
    #[inline]
    fn min_key(&self) -> u128 {
        self.near.min_key().min(self.far.min_key())
    }

    /// The time of the next pending event.
    pub fn peek_time(&self) -> Option<SimTime> {
        let key = self.min_key();
        (key != u128::MAX).then(|| SimTime::from_nanos((key >> 64) as u64))
    }

    /// Pops the next event if it is due at or before `limit`, advancing `now`.
    #[inline]
    pub fn pop_until(&mut self, limit: SimTime) -> Option<(SimTime, E)> {
        let (near, far) = (self.near.min_key(), self.far.min_key());
        let key = near.min(far);
        if key == u128::MAX {
            return None;
        }
        let at = SimTime::from_nanos((key >> 64) as u64);
        if at > limit {
            return None;
        }
        let e = if near < far { self.near.pop() } else { self.far.pop() };
        self.now = at;
        self.popped += 1;
        Some((at, e.event))
    }

    /// Advances the clock to `t` when no event is due before it.
    pub fn advance_to(&mut self, t: SimTime) {
        debug_assert!(self.peek_time().is_none_or(|p| p >= t));
        if t > self.now {
            self.now = t;
        }
    }

    pub fn len(&self) -> usize {
        self.near.v.len() + self.far.v.len()
    }
    pub fn is_empty(&self) -> bool {
        self.near.v.is_empty() && self.far.v.is_empty()
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
    use crate::units::SimDuration;

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

    #[test]
    fn events_at_one_instant_keep_their_order_when_one_was_scheduled_far_and_one_near() {
        let mut q = EventQueue::new();
        let t = SimTime::from_nanos(3 * NEAR_HORIZON_NS);
        q.schedule(t, "far, first");
        // Half a horizon before `t`: the second event is near.
        q.schedule(
            SimTime::from_nanos(3 * NEAR_HORIZON_NS - NEAR_HORIZON_NS / 2),
            "advance",
        );
        assert_eq!(q.pop_until(SimTime::MAX).map(|(_, e)| e), Some("advance"));
        q.schedule(t, "near, second");
        assert_eq!((q.near.v.len(), q.far.v.len()), (1, 1));
        let order: Vec<&str> = std::iter::from_fn(|| q.pop_until(SimTime::MAX).map(|(_, e)| e)).collect();
        assert_eq!(order, ["far, first", "near, second"]);
    }

    /// Delays on both sides of the horizon, at it, and at zero.
    fn delay(rng: &mut Rng) -> u64 {
        match rng.below(6) {
            0 => 0,
            1 => rng.below(1_000),
            2 => rng.below(NEAR_HORIZON_NS),
            3 => NEAR_HORIZON_NS - 1 + rng.below(3),
            4 => rng.below(100 * NEAR_HORIZON_NS),
            _ => rng.below(3) * NEAR_HORIZON_NS / 2,
        }
    }

    #[test]
    fn pushes_and_pops_interleaved_across_the_horizon_match_a_sorted_reference() {
        use std::collections::BTreeSet;
        for seed in 0..200 {
            let mut rng = Rng::from_seed(seed);
            let mut q = EventQueue::new();
            // The reference: (time, sequence) pairs, the event is the sequence.
            let mut reference = BTreeSet::new();
            let mut seq = 0u64;
            for _ in 0..2_000 {
                if rng.below(3) < 2 {
                    let at = q.now() + SimDuration::from_nanos(delay(&mut rng));
                    q.schedule(at, seq);
                    reference.insert((at, seq));
                    seq += 1;
                } else {
                    let limit = q.now() + SimDuration::from_nanos(delay(&mut rng));
                    let expected = reference.first().copied().filter(|&(t, _)| t <= limit);
                    if let Some(e) = expected {
                        reference.remove(&e);
                    }
                    assert_eq!(q.pop_until(limit), expected, "seed {seed}");
                }
                assert_eq!(q.peek_time(), reference.first().map(|&(t, _)| t), "seed {seed}");
                assert_eq!(q.len(), reference.len(), "seed {seed}");
            }
            let rest: Vec<(SimTime, u64)> = std::iter::from_fn(|| q.pop_until(SimTime::MAX)).collect();
            assert_eq!(rest, reference.into_iter().collect::<Vec<_>>(), "seed {seed}");
            assert!(q.is_empty());
        }
    }
}
