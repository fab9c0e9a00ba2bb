//! Delivery-rate estimation, after Linux `net/ipv4/tcp_rate.c` (Cheng,
//! Cardwell, Yeganeh, Jacobson, "Delivery Rate Estimation",
//! draft-cheng-iccrg-delivery-rate-estimation-02).
//!
//! Each segment carries a [`TxSnapshot`] taken when it is sent; each ACK
//! turns the snapshot of the most recently sent segment it delivers into a
//! [`RateSample`]: delivered segments over max(send interval, ACK interval).
//! The sample also carries that segment's congestion-control record (as
//! Google's BBRv3 `tcp_rate_skb_delivered` copies `tx.in_flight` and
//! `tx.lost` into the sample).
//!
//! Deviation: Linux discards samples whose interval is shorter than the
//! connection's min RTT; we do the same with the all-time minimum RTT (Linux
//! uses a windowed minimum, 5 minutes by default, identical for runs shorter
//! than that).

use super::cc::{PacketRecord, RateSample};
use super::scoreboard::{Seg, TxSnapshot};
use crate::units::{SimDuration, SimTime};

#[derive(Debug, Default)]
pub struct RateState {
    /// Segments delivered so far (Linux `tp->delivered`).
    pub delivered: u64,
    /// When `delivered` last changed (Linux `delivered_mstamp`).
    pub delivered_time: SimTime,
    /// Send time of the most recently delivered segment's flight start.
    pub first_tx_time: SimTime,
    /// Non-zero: the connection is application-limited until `delivered`
    /// passes this value (Linux `tp->app_limited`).
    pub app_limited_until: u64,
    // Per-ACK accumulation:
    prior_delivered: Option<u64>,
    prior_time: SimTime,
    send_interval: SimDuration,
    last_end_seq: u64,
    last_tx_time: SimTime,
    is_app_limited: bool,
    is_retrans: bool,
    record: PacketRecord,
}

impl RateState {
    /// Snapshot for a segment sent at `now` with `packets_out` segments
    /// already outstanding (Linux `tcp_rate_skb_sent`).
    pub fn on_send(&mut self, now: SimTime, packets_out: u32) -> TxSnapshot {
        if packets_out == 0 {
            self.first_tx_time = now;
            self.delivered_time = now;
        }
        TxSnapshot {
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_tx_time: self.first_tx_time,
            app_limited: self.app_limited_until != 0,
        }
    }

    /// A segment was newly delivered by the ACK being processed (Linux
    /// `tcp_rate_skb_delivered`).
    pub fn on_delivered(&mut self, seg: &Seg) {
        self.delivered += 1;
        let sent_after = self.prior_delivered.is_none()
            || seg.tx_time > self.last_tx_time
            || (seg.tx_time == self.last_tx_time && seg.end() > self.last_end_seq);
        if sent_after {
            self.prior_delivered = Some(seg.snap.delivered);
            self.prior_time = seg.snap.delivered_time;
            self.is_app_limited = seg.snap.app_limited;
            self.is_retrans = seg.ever_retransmitted();
            self.record = seg.record;
            self.last_end_seq = seg.end();
            self.last_tx_time = seg.tx_time;
            self.first_tx_time = seg.tx_time;
            self.send_interval = seg.tx_time.saturating_since(seg.snap.first_tx_time);
        }
    }

    /// A D-SACK reported `segs` spurious retransmissions delivered (Linux
    /// `tcp_count_delivered` of `sack_delivered`).
    pub fn on_dsack(&mut self, segs: u32) {
        self.delivered += segs as u64;
    }

    /// Closes the ACK (Linux `tcp_rate_gen`).
    pub fn generate(
        &mut self,
        now: SimTime,
        acked_sacked: u32,
        losses: u32,
        prior_in_flight: u32,
        rtt: Option<SimDuration>,
        min_rtt: Option<SimDuration>,
    ) -> RateSample {
        if self.app_limited_until != 0 && self.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        if acked_sacked > 0 {
            self.delivered_time = now;
        }
        let mut rs = RateSample {
            acked_sacked,
            losses,
            prior_in_flight,
            rtt,
            is_app_limited: self.is_app_limited,
            is_retrans: self.is_retrans,
            ..RateSample::default()
        };
        if let Some(prior) = self.prior_delivered.take() {
            let ack_interval = now.saturating_since(self.prior_time);
            let interval = self.send_interval.max(ack_interval);
            rs.prior_delivered = prior;
            rs.prior_time = self.prior_time;
            rs.record = Some(self.record);
            let too_short = min_rtt.is_some_and(|m| interval < m);
            if !too_short {
                rs.delivered = Some(self.delivered - prior);
                rs.interval = interval;
            }
        }
        self.last_end_seq = 0;
        self.last_tx_time = SimTime::ZERO;
        self.is_app_limited = false;
        self.is_retrans = false;
        rs
    }

    /// Marks the connection application-limited (Linux
    /// `tcp_rate_check_app_limited`), to be called when the application has
    /// nothing to send although the window would allow it.
    pub fn mark_app_limited(&mut self, in_flight: u32) {
        self.app_limited_until = (self.delivered + in_flight as u64).max(1);
    }
}
