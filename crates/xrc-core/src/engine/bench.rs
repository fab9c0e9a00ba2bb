//! An engine microbenchmark: the cost of the event queue alone.

use std::time::Instant;

use super::{EventQueue, Rng};
use crate::units::{SimDuration, SimTime};

/// Keeps `pending` events in the queue; each popped event schedules one
/// more at a random offset (0–1 ms). Returns events per second of wall time.
pub fn events_per_second(n: u64, pending: u64) -> f64 {
    let mut q: EventQueue<u32> = EventQueue::new();
    let mut rng = Rng::from_seed(1);
    for i in 0..pending.max(1) {
        q.schedule(SimTime::from_nanos(rng.below(1_000_000)), i as u32);
    }
    let start = Instant::now();
    let mut popped = 0u64;
    while popped < n {
        let (t, e) = q.pop_until(SimTime::MAX).expect("population is constant");
        q.schedule(t + SimDuration::from_nanos(rng.below(1_000_000)), e);
        popped += 1;
    }
    let secs = start.elapsed().as_secs_f64();
    std::hint::black_box(&q);
    popped as f64 / secs
}
