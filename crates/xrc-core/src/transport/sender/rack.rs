//! RACK, time-based loss detection (RFC 8985 §6; Linux `tcp_recovery.c`):
//! the most recently sent segment known delivered, and its RTT.

use crate::transport::scoreboard::Scoreboard;
use crate::units::{SimDuration, SimTime};

/// RACK's per-connection state.
#[derive(Debug, Default)]
pub(super) struct Rack {
    /// The transmission number of the most recently sent delivered segment
    /// and its RTT (RFC 8985 RACK.xmit_ts/end_seq, RACK.rtt).
    latest: Option<(u64, SimDuration)>,
    /// The reordering timer.
    timer: Option<SimTime>,
    /// Segments delivered by the ACK being processed: (send time,
    /// transmission number, ever retransmitted).
    delivered: Vec<(SimTime, u64, bool)>,
}

impl Rack {
    pub(super) fn timer(&self) -> Option<SimTime> {
        self.timer
    }

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
    pub(super) fn on_delivered(&mut self, tx_time: SimTime, tx_order: u64, retransmitted: bool) {
        self.delivered.push((tx_time, tx_order, retransmitted));
    }

    /// RFC 8985 §6.2 step 2 (Linux `tcp_rack_advance`): remember the most
    /// recently sent segment this ACK delivered. A retransmitted segment
    /// counts only if the ACK is for the retransmission: its RTT is at
    /// least the minimum RTT and the timestamp echo is not older than it.
    pub(super) fn advance(&mut self, now: SimTime, ts_ecr: SimTime, min_rtt: SimDuration) {
        for &(tx, order, retrans) in &self.delivered {
            let rtt = now.saturating_since(tx);
            if retrans && (rtt < min_rtt || (ts_ecr > SimTime::ZERO && ts_ecr < tx)) {
                continue;
            }
            if self.latest.is_none_or(|(o, _)| order > o) {
                self.latest = Some((order, rtt));
            }
        }
    }

    /// RFC 8985 §6.2 step 5: marks lost every segment sent before the
    /// latest delivered one that has waited its RTT plus `reo_wnd`, and arms
    /// the reordering timer for those not yet due. Returns how many were
    /// newly marked.
    pub(super) fn detect_loss(&mut self, now: SimTime, sb: &mut Scoreboard, reo_wnd: SimDuration) -> u32 {
        self.timer = None;
        let Some((order, rtt)) = self.latest else { return 0 };
        let (n, timer) = sb.rack_detect_loss(now, order, rtt, reo_wnd);
        self.timer = timer;
        n
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
        r.on_delivered(ms(5), 7, false);
        r.on_delivered(ms(3), 4, false);
        r.advance(ms(50), SimTime::ZERO, SimDuration::ZERO);
        assert_eq!(r.latest, Some((7, SimDuration::from_millis(45))));
    }

    #[test]
    fn a_retransmission_acknowledged_too_soon_is_taken_for_its_original() {
        let mut r = Rack::default();
        // Sent again at 40 ms, acknowledged at 45 ms: 5 ms is below the
        // 30 ms minimum RTT, so this ACK was for the original.
        r.on_delivered(ms(40), 9, true);
        r.advance(ms(45), SimTime::ZERO, SimDuration::from_millis(30));
        assert_eq!(r.latest, None);
        // The timestamp echo says the same: it predates the retransmission.
        r.advance(ms(80), ms(10), SimDuration::from_millis(30));
        assert_eq!(r.latest, None);
        r.advance(ms(80), ms(40), SimDuration::from_millis(30));
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
