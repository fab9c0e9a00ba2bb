//! Pacing: the earliest departure time of the next packet, as Linux's
//! internal pacing (`tcp_pacing_check`, `tcp_update_skb_after_send`) and its
//! default rate (`tcp_update_pacing_rate`) when the algorithm sets none.

use crate::units::{BitRate, SimDuration, SimTime};

/// The pacing clock of one connection.
#[derive(Debug, Default)]
pub(super) struct Pacer {
    /// Earliest time the next packet may leave.
    next: SimTime,
    /// Set while transmission waits for `next`: the wake-up the caller must
    /// schedule.
    wait: Option<SimTime>,
    /// Segments that may still join the burst (TSO skb) being sent.
    burst_left: u32,
}

impl Pacer {
    /// A packet is held back until the pacing timer fires.
    pub(super) fn waiting(&self) -> bool {
        self.wait.is_some()
    }

    /// The pending wake-up, if transmission is held back.
    pub(super) fn timer(&self) -> Option<SimTime> {
        self.wait
    }

    /// Clears the wake-up once it is due.
    pub(super) fn on_timer(&mut self, now: SimTime) {
        if self.wait.is_some_and(|t| t <= now) {
            self.wait = None;
        }
    }

    /// Forgets the schedule: the next packet may leave at `now` (after a
    /// retransmission timeout).
    pub(super) fn reset(&mut self, now: SimTime) {
        self.wait = None;
        self.next = now;
    }

    /// Holds transmission until `at` (the algorithm's own departure
    /// schedule): the wake-up the caller must schedule.
    pub(super) fn hold_until(&mut self, at: SimTime) {
        self.wait = Some(at);
    }

    /// May a packet of `len` payload bytes leave at `now` at `rate`? If so
    /// the departure is booked (the next one is spaced by the packet's
    /// length, Linux's earliest-departure-time pacing); if not the wake-up
    /// is set and `false` returned.
    pub(super) fn admit(&mut self, now: SimTime, rate: BitRate, len: u32) -> bool {
        self.admit_burst(now, rate, len, 1)
    }

    /// As [`Pacer::admit`], for segments that leave in bursts of up to
    /// `burst` (a TSO/GSO skb, Linux `tcp_tso_autosize`): a segment may join
    /// the burst just sent in the same send loop, and the next burst leaves
    /// once the whole burst's length has passed at `rate`.
    pub(super) fn admit_burst(&mut self, now: SimTime, rate: BitRate, len: u32, burst: u32) -> bool {
        let gap = rate.tx_time(len as u64).unwrap_or(SimDuration::from_secs(1));
        if self.burst_left > 0 {
            self.burst_left -= 1;
            self.next += gap;
            return true;
        }
        if now < self.next {
            self.wait = Some(self.next);
            return false;
        }
        self.next = self.next.max(now) + gap;
        self.burst_left = burst.saturating_sub(1);
        true
    }

    /// A send loop ended: the next segment starts a new burst.
    pub(super) fn end_burst(&mut self) {
        self.burst_left = 0;
    }
}

/// Linux `tcp_update_pacing_rate`: `max(cwnd, packets_out) · mss / srtt`,
/// times 200% in slow start (below half ssthresh) and 120% otherwise.
pub(super) fn default_rate(cwnd: u32, ssthresh: u32, packets_out: u32, mss: u32, srtt: SimDuration) -> BitRate {
    let ratio = if cwnd < ssthresh / 2 { 2.0 } else { 1.2 };
    let bytes = cwnd.max(packets_out) as f64 * mss as f64;
    let bps = bytes * 8.0 * ratio / srtt.as_secs_f64();
    BitRate::from_bps(bps as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> SimTime {
        SimTime::from_nanos(v * 1_000_000)
    }

    #[test]
    fn packets_are_spaced_by_their_length_at_the_pacing_rate() {
        let mut p = Pacer::default();
        let rate = BitRate::from_bps(8_000_000); // 1 byte per µs
        assert!(p.admit(ms(0), rate, 1000));
        // The next 1000-byte packet may leave 1 ms later, not before.
        assert!(!p.admit(SimTime::from_nanos(999_999), rate, 1000));
        assert_eq!(p.timer(), Some(ms(1)));
        p.on_timer(ms(1));
        assert!(!p.waiting());
        assert!(p.admit(ms(1), rate, 1000));
    }

    #[test]
    fn a_tso_burst_of_two_leaves_at_once_and_the_next_burst_two_lengths_later() {
        let mut p = Pacer::default();
        let rate = BitRate::from_bps(8_000_000); // 1 byte per µs
        assert!(p.admit_burst(ms(0), rate, 1000, 2));
        assert!(p.admit_burst(ms(0), rate, 1000, 2), "the second segment of the skb");
        assert!(!p.admit_burst(ms(0), rate, 1000, 2));
        assert_eq!(p.timer(), Some(ms(2)));
        p.on_timer(ms(2));
        assert!(p.admit_burst(ms(2), rate, 1000, 2));
        // A send loop that ends closes the burst: the next segment waits.
        p.end_burst();
        assert!(!p.admit_burst(ms(2), rate, 1000, 2));
        assert_eq!(p.timer(), Some(ms(3)));
    }

    #[test]
    fn an_idle_pacer_does_not_bank_credit() {
        let mut p = Pacer::default();
        let rate = BitRate::from_bps(8_000_000);
        assert!(p.admit(ms(0), rate, 1000));
        // After a long pause the next departure is counted from now.
        assert!(p.admit(ms(100), rate, 1000));
        assert!(!p.admit(ms(100), rate, 1000));
        assert_eq!(p.timer(), Some(ms(101)));
    }

    #[test]
    fn the_default_rate_is_twice_the_window_rate_in_slow_start_and_1_2_times_after() {
        let srtt = SimDuration::from_millis(100);
        // 10 segments of 1000 bytes per 100 ms = 800 kbit/s.
        assert_eq!(default_rate(10, 100, 0, 1000, srtt).bps(), 1_600_000);
        assert_eq!(default_rate(10, 12, 0, 1000, srtt).bps(), 960_000);
        // More in flight than the window: the flight counts.
        assert_eq!(default_rate(10, 12, 20, 1000, srtt).bps(), 1_920_000);
    }
}
