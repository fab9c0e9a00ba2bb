//! RACK, time-based loss detection (RFC 8985 §6; Linux `tcp_recovery.c`):
//! the most recently sent segment known delivered, and its RTT.
//!
//! As Linux: detection runs on an ACK only when it brought new delivery
//! information (`rack.advanced`, `tcp_rack_mark_lost`), and when the
//! reordering timer fires; the timer waits for the last of the segments
//! not yet due, plus 2 ms, in jiffies, at most one RTO, and shares the
//! sender's one retransmission timer.

use crate::transport::scoreboard::Scoreboard;
use crate::units::{SimDuration, SimTime};

/// A segment the ACK being processed delivered.
#[derive(Copy, Clone, Debug)]
struct Delivered {
    tx_time: SimTime,
    /// Transmission number.
    tx_order: u64,
    retransmitted: bool,
    /// Delivered by SACK (rather than the cumulative ACK).
    sacked: bool,
}

/// RACK's per-connection state.
#[derive(Debug, Default)]
pub(super) struct Rack {
    /// The transmission number of the most recently sent delivered segment
    /// and its RTT (RFC 8985 RACK.xmit_ts/end_seq, RACK.rtt).
    latest: Option<(u64, SimDuration)>,
    /// New delivery information since the last detection (Linux
    /// `rack.advanced`): detection on an ACK runs only then.
    pub(super) advanced: bool,
    /// Segments delivered by the ACK being processed.
    delivered: Vec<Delivered>,
}

impl Rack {
    /// RACK.rtt: the RTT of the most recently sent delivered segment.
    pub(super) fn rtt(&self) -> Option<SimDuration> {
        self.latest.map(|(_, rtt)| rtt)
    }

    /// Starts a new ACK: forgets the segments the last one delivered.
    pub(super) fn begin_ack(&mut self) {
        self.delivered.clear();
    }

    /// A segment was delivered (SACKed or cumulatively acknowledged) by the
    /// ACK being processed.
    pub(super) fn on_delivered(&mut self, tx_time: SimTime, tx_order: u64, retransmitted: bool, sacked: bool) {
        self.delivered.push(Delivered {
            tx_time,
            tx_order,
            retransmitted,
            sacked,
        });
    }

    /// RFC 8985 §6.2 step 2 (Linux `tcp_rack_advance`): remember the most
    /// recently sent segment this ACK delivered. A retransmitted segment
    /// counts only if the ACK is for the retransmission: its RTT is at
    /// least the minimum RTT, and, when it is cumulatively acknowledged,
    /// the timestamp echo is not older than it (Linux checks the echo in
    /// `tcp_clean_rtx_queue`, `tcp_skb_spurious_retrans`, not for SACKs).
    pub(super) fn advance(&mut self, now: SimTime, ts_ecr: SimTime, min_rtt: SimDuration) {
        for d in &self.delivered {
            let (tx, order) = (d.tx_time, d.tx_order);
            let rtt = now.saturating_since(tx);
            let echo_older = !d.sacked && ts_ecr > SimTime::ZERO && ts_ecr < tx;
            if d.retransmitted && (rtt < min_rtt || echo_older) {
                continue;
            }
            if self.latest.is_none_or(|(o, _)| order > o) {
                self.latest = Some((order, rtt));
                self.advanced = true;
            }
        }
    }

    /// RFC 8985 §6.2 step 5: marks lost every segment sent before the
    /// latest delivered one that has waited its RTT plus `reo_wnd`. Returns
    /// how many were newly marked and how long the last of the others has
    /// still to wait (for the reordering timer).
    pub(super) fn detect_loss(
        &mut self,
        now: SimTime,
        sb: &mut Scoreboard,
        reo_wnd: SimDuration,
    ) -> (u32, Option<SimDuration>) {
        let Some((order, rtt)) = self.latest else {
            return (0, None);
        };
        sb.rack_detect_loss(now, order, rtt, reo_wnd)
    }
}

/// Linux's reordering window (`tcp_rack_reo_wnd`) as this sender uses it:
/// none in recovery or once `dupthresh` segments are SACKed (reordering is
/// never observed here), otherwise a quarter of the minimum RTT, at most
/// the smoothed RTT.
pub(super) fn reo_wnd(
    in_recovery: bool,
    sacked_out: u32,
    dupthresh: u32,
    min_rtt: Option<SimDuration>,
    srtt: Option<SimDuration>,
) -> SimDuration {
    if in_recovery || sacked_out >= dupthresh {
        return SimDuration::ZERO;
    }
    let q = min_rtt.unwrap_or(SimDuration::ZERO) / 4;
    srtt.map_or(q, |s| q.min(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> SimTime {
        SimTime::from_nanos(v * 1_000_000)
    }

    #[test]
    fn the_latest_sent_delivered_segment_wins_not_the_latest_delivered() {
        let mut r = Rack::default();
        r.on_delivered(ms(5), 7, false, true);
        r.on_delivered(ms(3), 4, false, false);
        r.advance(ms(50), SimTime::ZERO, SimDuration::ZERO);
        assert_eq!(r.latest, Some((7, SimDuration::from_millis(45))));
    }

    #[test]
    fn a_retransmission_acknowledged_too_soon_is_taken_for_its_original() {
        let mut r = Rack::default();
        // Sent again at 40 ms, acknowledged at 45 ms: 5 ms is below the
        // 30 ms minimum RTT, so this ACK was for the original.
        r.on_delivered(ms(40), 9, true, false);
        r.advance(ms(45), SimTime::ZERO, SimDuration::from_millis(30));
        assert_eq!(r.latest, None);
        // The timestamp echo of a cumulative ACK says the same: it predates
        // the retransmission.
        r.advance(ms(80), ms(10), SimDuration::from_millis(30));
        assert_eq!(r.latest, None);
        r.advance(ms(80), ms(40), SimDuration::from_millis(30));
        assert_eq!(r.latest, Some((9, SimDuration::from_millis(40))));
        // A SACK's echo belongs to another segment: not checked.
        let mut r = Rack::default();
        r.on_delivered(ms(40), 9, true, true);
        r.advance(ms(80), ms(10), SimDuration::from_millis(30));
        assert_eq!(r.latest, Some((9, SimDuration::from_millis(40))));
    }

    #[test]
    fn the_reordering_window_is_a_quarter_of_the_minimum_rtt_outside_recovery() {
        let ms = SimDuration::from_millis;
        assert_eq!(reo_wnd(false, 0, 3, Some(ms(40)), Some(ms(60))), ms(10));
        assert_eq!(reo_wnd(false, 0, 3, Some(ms(40)), Some(ms(8))), ms(8));
        assert_eq!(reo_wnd(true, 0, 3, Some(ms(40)), Some(ms(60))), SimDuration::ZERO);
        assert_eq!(reo_wnd(false, 3, 3, Some(ms(40)), Some(ms(60))), SimDuration::ZERO);
    }
}
