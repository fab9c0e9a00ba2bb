//! Clocks: what a loop that drives components waits on.
//!
//! Models never read a clock: every hook receives `now`. The loop that
//! drives them asks a [`Clock`] to wait until the next model time something
//! is due. Two clocks:
//!
//! - [`SimulatedClock`]: model time jumps to the deadline at once (the
//!   discrete-event simulator; it is never late);
//! - [`MonotonicClock`]: model time is the time elapsed on the operating
//!   system's monotonic clock since the clock started (an emulator running
//!   the same models in real time); waiting sleeps, and a deadline already
//!   past is reported as late by how much.
//!
//! After nexosim's `Clock` (`synchronize(deadline)` answering "synchronized"
//! or "out of sync by a lag"): a loop keeps going when late, and a
//! [`LagReport`] says how late it was, so a real-time run can say it fell
//! behind instead of silently stretching time.

use std::time::{Duration, Instant};

use crate::units::{SimDuration, SimTime};

/// How a wait ended.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SyncStatus {
    /// The clock reached the deadline (simulated time always does).
    OnTime,
    /// The deadline had already passed by this much when the wait ended.
    Late(SimDuration),
}

/// A source of model time for a loop driving components.
pub trait Clock {
    /// Model time now.
    fn now(&self) -> SimTime;
    /// Waits until model time `deadline` (at once when it has passed).
    /// Returns how the wait ended; a late wait is also entered in
    /// [`Clock::lag`].
    fn wait_until(&mut self, deadline: SimTime) -> SyncStatus;
    /// How late the waits have been so far.
    fn lag(&self) -> &LagReport;
}

/// Lateness of a clock's waits: how many, how many late, by how much.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LagReport {
    pub waits: u64,
    pub late: u64,
    pub max: SimDuration,
    /// Sum of every late wait's lag.
    pub total: SimDuration,
}

impl LagReport {
    pub fn record(&mut self, s: SyncStatus) {
        self.waits += 1;
        if let SyncStatus::Late(d) = s {
            self.late += 1;
            self.max = self.max.max(d);
            self.total += d;
        }
    }
}

/// Discrete-event time: waiting jumps to the deadline. Time never goes back:
/// a deadline before `now` leaves it where it is (and is not late: the
/// simulator ran it at its own time).
#[derive(Clone, Debug, Default)]
pub struct SimulatedClock {
    now: SimTime,
    lag: LagReport,
}

impl SimulatedClock {
    pub fn new() -> Self {
        Self::default()
    }
}

impl Clock for SimulatedClock {
    fn now(&self) -> SimTime {
        self.now
    }
    fn wait_until(&mut self, deadline: SimTime) -> SyncStatus {
        self.now = self.now.max(deadline);
        self.lag.record(SyncStatus::OnTime);
        SyncStatus::OnTime
    }
    fn lag(&self) -> &LagReport {
        &self.lag
    }
}

/// Real time: model time is the monotonic clock's time since [`MonotonicClock::start`].
///
/// Waiting sleeps with `std::thread::sleep` (the operating system's timer
/// slack applies; an emulator that needs tighter release times spins for
/// the last stretch by implementing [`Clock`] itself). A wait that returns
/// later than `tolerance` after its deadline counts as late.
#[derive(Clone, Debug)]
pub struct MonotonicClock {
    origin: Instant,
    tolerance: SimDuration,
    lag: LagReport,
}

impl MonotonicClock {
    /// Model time zero is now.
    pub fn start(tolerance: SimDuration) -> Self {
        MonotonicClock {
            origin: Instant::now(),
            tolerance,
            lag: LagReport::default(),
        }
    }

    fn elapsed(&self) -> SimTime {
        SimTime::from_nanos(u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX))
    }
}

impl Clock for MonotonicClock {
    fn now(&self) -> SimTime {
        self.elapsed()
    }
    fn wait_until(&mut self, deadline: SimTime) -> SyncStatus {
        let now = self.elapsed();
        if deadline > now {
            std::thread::sleep(Duration::from_nanos(deadline.saturating_since(now).as_nanos()));
        }
        let after = self.elapsed();
        let late = after.saturating_since(deadline);
        let s = if late > self.tolerance {
            SyncStatus::Late(late)
        } else {
            SyncStatus::OnTime
        };
        self.lag.record(s);
        s
    }
    fn lag(&self) -> &LagReport {
        &self.lag
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn simulated_time_jumps_to_each_deadline_and_never_goes_back() {
        let mut c = SimulatedClock::new();
        assert_eq!(c.wait_until(SimTime::from_nanos(50)), SyncStatus::OnTime);
        assert_eq!(c.now(), SimTime::from_nanos(50));
        c.wait_until(SimTime::from_nanos(10));
        assert_eq!(c.now(), SimTime::from_nanos(50));
        assert_eq!(c.lag().waits, 2);
        assert_eq!(c.lag().late, 0);
    }

    #[test]
    fn monotonic_time_does_not_return_before_its_deadline() {
        let mut c = MonotonicClock::start(SimDuration::from_secs(3600));
        let deadline = c.now() + SimDuration::from_millis(2);
        c.wait_until(deadline);
        assert!(c.now() >= deadline);
    }

    #[test]
    fn a_deadline_already_past_is_reported_late_by_at_least_its_age() {
        let mut c = MonotonicClock::start(SimDuration::ZERO);
        std::thread::sleep(Duration::from_millis(3));
        match c.wait_until(SimTime::from_nanos(1_000_000)) {
            SyncStatus::Late(d) => assert!(d >= SimDuration::from_millis(2), "{d:?}"),
            SyncStatus::OnTime => panic!("a deadline 2 ms in the past is late"),
        }
        assert_eq!(c.lag().late, 1);
        assert!(c.lag().max >= SimDuration::from_millis(2));
    }
}
