//! The clock the sender's retransmission-class timers run on.
//!
//! Linux keeps the RTO, the tail-loss-probe and RACK reordering timeouts in
//! jiffies (`icsk_rto`, `usecs_to_jiffies`, which rounds up) and arms them
//! on the kernel timer wheel (`kernel/time/timer.c`). A timer armed at
//! jiffy `j` for `t` jiffies expires at `e = j + t`; the wheel files it at
//! level `l` by `t` (level 0 below 63 jiffies, then each level 8 times
//! coarser: 63·8^(l−1) ≤ t < 63·8^l) and fires it at the first tick of
//! granularity 8^l strictly after `e` (`calc_index`: "a timer must not fire
//! early"). So a 200 ms RTO at HZ = 250 (50 jiffies) fires 200–204 ms after
//! it is armed, a 300 ms one (75 jiffies, level 1) 300–336 ms after.
//!
//! `TimerClock::Exact` fires at the exact nanosecond instead (ns-3, and
//! RFC 6298's idealised timer).
//!
//! Deviations: (1) the jiffy ticks are aligned with the simulation's time
//! zero (a real kernel's phase is arbitrary). (2) The wheel's clock is
//! taken as the current jiffy when a timer is armed; with NOHZ an idle
//! CPU's wheel clock may lag and put a timer one level up. (3) For an HZ
//! that does not divide 10^6, `usecs_to_jiffies` is computed exactly (ceil)
//! rather than with Linux's 32-bit multiply-shift approximation.

use serde::{Deserialize, Serialize};

use crate::units::{SimDuration, SimTime};

/// How the sender's RTO, TLP and RACK timers measure time.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum TimerClock {
    /// Linux: whole jiffies of `1/timer_hz` s, on the timer wheel.
    #[default]
    Jiffies,
    /// Exact nanosecond timers (ns-3).
    Exact,
}

/// Wheel geometry (`kernel/time/timer.c`): 64 buckets per level, each level
/// 8 times coarser than the one below.
const LVL_CLK_SHIFT: u32 = 3;
const LVL_SIZE: u64 = 64;
const LVL_DEPTH: u32 = 9;

/// A resolved clock.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) struct Clock {
    /// Timer interrupts per second; `None` for exact timers.
    hz: Option<u32>,
}

impl Clock {
    pub(super) fn new(kind: TimerClock, hz: u32) -> Self {
        Clock {
            hz: (kind == TimerClock::Jiffies).then_some(hz.max(1)),
        }
    }

    // The three conversions below are exact integer arithmetic in 64 bits
    // when the product fits (every time below 213 days at HZ = 1000) and in
    // 128 bits otherwise: the same values. A 128-bit division is a library
    // call (`__udivti3`) that cost 7% of a 1-UE cell's time; in 64 bits a
    // division by 10^9 is a multiplication.

    /// Jiffies of `d`, rounded up (`usecs_to_jiffies`).
    fn jiffies(hz: u32, d: SimDuration) -> u64 {
        match d.as_nanos().checked_mul(hz as u64) {
            Some(n) => n.div_ceil(1_000_000_000),
            None => (d.as_nanos() as u128 * hz as u128).div_ceil(1_000_000_000) as u64,
        }
    }

    /// When tick `k` happens.
    fn tick_time(hz: u32, k: u64) -> SimTime {
        SimTime::from_nanos(match k.checked_mul(1_000_000_000) {
            Some(n) => n / hz as u64,
            None => (k as u128 * 1_000_000_000 / hz as u128) as u64,
        })
    }

    /// The current jiffy at `now`.
    fn current_jiffy(hz: u32, now: SimTime) -> u64 {
        now.ticks(hz)
    }

    /// `d` rounded up to whole jiffies (`usecs_to_jiffies`), as the kernel
    /// stores a timeout; unchanged for exact timers.
    pub(super) fn round(&self, d: SimDuration) -> SimDuration {
        match self.hz {
            None => d,
            Some(hz) => {
                let t = Self::jiffies(hz, d);
                Self::tick_time(hz, t).since_start()
            }
        }
    }

    /// When a timer armed at `now` for `d` fires.
    pub(super) fn deadline(&self, now: SimTime, d: SimDuration) -> SimTime {
        let Some(hz) = self.hz else { return now + d };
        let t = Self::jiffies(hz, d);
        let expires = Self::current_jiffy(hz, now) + t;
        // calc_wheel_index: the level by the distance, then round up to the
        // level's granularity, strictly after `expires`.
        let mut lvl = 0;
        while lvl + 1 < LVL_DEPTH && t >= (LVL_SIZE - 1) << (lvl * LVL_CLK_SHIFT) {
            lvl += 1;
        }
        let shift = lvl * LVL_CLK_SHIFT;
        let bucket = ((expires >> shift) + 1) << shift;
        Self::tick_time(hz, bucket).max(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> SimDuration {
        SimDuration::from_millis(v)
    }
    fn at(v: u64) -> SimTime {
        SimTime::from_nanos(v * 1_000_000)
    }
    fn hz250() -> Clock {
        Clock::new(TimerClock::Jiffies, 250)
    }

    #[test]
    fn the_64_bit_conversions_give_what_128_bit_arithmetic_gives() {
        let mut rng = crate::engine::rng::Rng::from_seed(9);
        for _ in 0..20_000 {
            let hz = [100u32, 250, 300, 1000, 1024, 1 + rng.below(100_000) as u32][rng.below(6) as usize];
            // From nanoseconds to past the 64-bit products' range.
            let ns = rng.below(u64::MAX) >> rng.below(64);
            let d = SimDuration::from_nanos(ns);
            assert_eq!(
                Clock::jiffies(hz, d),
                (ns as u128 * hz as u128).div_ceil(1_000_000_000) as u64,
                "{ns} ns at {hz}"
            );
            assert_eq!(
                Clock::current_jiffy(hz, SimTime::from_nanos(ns)),
                (ns as u128 * hz as u128 / 1_000_000_000) as u64,
                "{ns} ns at {hz}"
            );
            let k = ns / 1_000_000_000 * hz as u64 + rng.below(1000);
            assert_eq!(
                Clock::tick_time(hz, k).as_nanos(),
                (k as u128 * 1_000_000_000 / hz as u128) as u64,
                "tick {k} at {hz}"
            );
        }
    }

    #[test]
    fn durations_round_up_to_whole_jiffies() {
        let c = hz250();
        assert_eq!(c.round(ms(200)), ms(200));
        assert_eq!(c.round(SimDuration::from_micros(200_001)), ms(204));
        assert_eq!(c.round(SimDuration::from_micros(1)), ms(4));
        assert_eq!(Clock::new(TimerClock::Exact, 250).round(ms(7)), ms(7));
        assert_eq!(
            Clock::new(TimerClock::Jiffies, 1000).round(SimDuration::from_micros(7_001)),
            ms(8)
        );
    }

    #[test]
    fn a_short_timer_fires_on_the_tick_after_its_expiry_jiffy() {
        let c = hz250();
        // Armed at 1 ms (jiffy 0) for 200 ms (50 jiffies): expires at jiffy
        // 50, fires at tick 51 = 204 ms.
        assert_eq!(c.deadline(at(1), ms(200)), at(204));
        // Armed exactly on a tick: still one tick later.
        assert_eq!(c.deadline(at(4), ms(200)), at(208));
        assert_eq!(c.deadline(at(3), ms(8)), at(12));
    }

    #[test]
    fn a_longer_timer_lands_on_a_coarser_level_of_the_wheel() {
        let c = hz250();
        // 300 ms = 75 jiffies: level 1, granularity 8 jiffies (32 ms).
        // Armed at jiffy 0: expires 75, first multiple of 8 after it = 80.
        assert_eq!(c.deadline(at(0), ms(300)), at(320));
        // 62 jiffies stays on level 0, 63 moves to level 1.
        assert_eq!(c.deadline(at(0), ms(248)), at(252));
        assert_eq!(c.deadline(at(0), ms(252)), at(256));
        // 3.2 s = 800 jiffies: level 2, granularity 64 jiffies (256 ms):
        // expires 800 → fires at 832 = 3.328 s.
        assert_eq!(c.deadline(at(0), ms(3200)), at(3328));
    }

    #[test]
    fn an_exact_timer_fires_at_the_nanosecond() {
        let c = Clock::new(TimerClock::Exact, 250);
        assert_eq!(c.deadline(at(1), ms(200)), at(201));
    }
}
