//! The TCP receiver: in-order delivery to the application, out-of-order
//! buffering, cumulative ACKs with SACK blocks (RFC 2018) and D-SACK
//! blocks (RFC 2883, Linux `tcp_dsack = 1`), timestamps echo (RFC 7323
//! §4.3) and delayed ACKs (RFC 5681 §4.2; Linux's quick-ACK mode at the
//! start of a connection and an immediate ACK for every out-of-order or
//! hole-filling segment).
//!
//! D-SACK as Linux `tcp_data_queue`/`tcp_data_queue_ofo` and
//! `tcp_dsack_set`: a segment wholly below `rcv_nxt` is reported whole, the
//! old part of a segment straddling `rcv_nxt` is reported, and a segment
//! already held out of order is reported where it overlaps the held data.
//! The D-SACK block goes first in the next ACK, in front of at most two
//! ordinary blocks, and only once.
//!
//! The out-of-order data is a sorted queue of disjoint blocks, searched by
//! bisection (Linux keeps an rbtree, `out_of_order_queue`), so a segment
//! costs a few lookups whatever the number of holes.
//!
//! # Deviations from Linux
//!
//! 1. The receiving application reads every byte the moment it is in
//!    order, and an in-order segment that completes `ack_every` segments
//!    is acknowledged at once. Linux `__tcp_ack_snd_check` sends that ACK
//!    only if the receive window's right edge advances; otherwise the
//!    application's next read sends it (`tcp_cleanup_rbuf`), and segments
//!    that arrive while the reader holds the socket are processed together
//!    from its backlog. A real iperf3 receiver behind a 20 Mbit/s trace
//!    link covers 1 segment with 10 % of its ACKs, 2 with 75 %, 3 or more
//!    with 13 %; ours 2 with all. Measured effect: BBR's bandwidth filter
//!    on that link 0.27 percentage points higher (docs/validation.md,
//!    "Constant trace, 67 packets"). With `ack_on_read` (off by default)
//!    the application reads once per arrival instant instead, after every
//!    segment the network delivers at that instant, and the
//!    every-`ack_every`-segment ACK waits for that read (Linux
//!    `tcp_cleanup_rbuf`: one ACK covering all that was read, when more
//!    than one full segment is unacknowledged), which is what a Linux
//!    receiver behind a trace link whose opportunities come several to a
//!    millisecond does (docs/validation.md, "CUBIC on the cellular traces:
//!    the receiver's ACKs"). Measured on real receivers, Linux switches
//!    between the two: with `rcv_ssthresh` one segment below the window
//!    clamp the second segment's ACK goes at once (this default), with it
//!    at the clamp the ACK waits for the read (`ack_on_read`); what moves
//!    it between the two is not known, so this rule stays the default and
//!    the other an option (docs/validation.md, "Why it is not the
//!    default").
//!    Not modelled either way: the window arithmetic itself, readers
//!    slower than one instant, and the single-segment ACK of a read that
//!    empties the queue after a full segment marked PSH
//!    (`ICSK_ACK_PUSHED`).

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use crate::net::{packet::MAX_SACK_BLOCKS, AbcMark, DataHeader, FlowId, Packet, PacketKind, SackBlock};
use crate::units::{SimDuration, SimTime};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct ReceiverConfig {
    /// Delay ACKs (acknowledge every `ack_every` full segments or after the timeout).
    pub delayed_ack: bool,
    pub ack_every: u32,
    /// Linux's minimum delayed-ACK timeout is 40 ms (`TCP_DELACK_MIN`).
    pub delack_timeout_ms: f64,
    /// Segments acknowledged immediately at the start (Linux `TCP_MAX_QUICKACKS` = 16).
    pub quickack_segments: u32,
    /// The every-`ack_every`-segment ACK is sent when the receiving
    /// application reads, once per arrival instant after every segment of
    /// that instant (the host calls [`TcpReceiver::on_read`]), covering
    /// them all; false: at the segment that completes `ack_every`
    /// (RFC 5681 §4.2). Out-of-order, hole-filling and quick-mode ACKs stay
    /// immediate either way.
    pub ack_on_read: bool,
    /// Send SACK blocks.
    pub sack: bool,
    /// Report duplicate segments in a D-SACK block (RFC 2883; Linux
    /// `tcp_dsack`, on by default). Needs `sack`.
    pub dsack: bool,
}

impl Default for ReceiverConfig {
    fn default() -> Self {
        ReceiverConfig {
            delayed_ack: true,
            ack_every: 2,
            delack_timeout_ms: 40.0,
            quickack_segments: 16,
            ack_on_read: false,
            sack: true,
            dsack: true,
        }
    }
}

impl ReceiverConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.ack_every == 0 {
            return Err("ack_every must be at least 1".into());
        }
        // A microsecond to 10 s (Linux: 40 ms to 200 ms, TCP_DELACK_MIN/MAX).
        crate::units::check_range("delack_timeout_ms", self.delack_timeout_ms, 1e-3, 1e4)?;
        Ok(())
    }
}

/// What one arriving segment did.
#[derive(Debug, Default, PartialEq)]
pub struct Received {
    /// Bytes newly delivered in order to the application.
    pub delivered: u64,
    /// The ACK to send now, if any.
    pub ack: Option<Packet>,
    /// The segment carried only bytes already received.
    pub duplicate: bool,
    /// An ACK now waits for the application's read (`ack_on_read`): the
    /// host calls [`TcpReceiver::on_read`] once the arrival instant's
    /// segments are all in. Set only by the segment that made it wait.
    pub read_owed: bool,
}

pub struct TcpReceiver {
    flow: FlowId,
    cfg: ReceiverConfig,
    delack: SimDuration,
    rcv_nxt: u64,
    /// Out-of-order data above `rcv_nxt`: disjoint, not adjacent, sorted.
    ooo: VecDeque<SackBlock>,
    /// Blocks in the order RFC 2018 wants them reported (most recent first).
    recent: Vec<SackBlock>,
    /// RFC 7323 TS.Recent.
    ts_recent: SimTime,
    last_ack_sent: u64,
    unacked_segments: u32,
    quickacks_left: u32,
    /// An ACK waits for the application's read (`ack_on_read`).
    read_owed: bool,
    delack_deadline: Option<SimTime>,
    delivered_total: u64,
    acks_sent: u64,
    /// ABC marks seen since the last ACK.
    abc_accelerate: u16,
    abc_brake: u16,
    /// The duplicate range the next ACK reports (Linux `duplicate_sack`).
    dsack: Option<SackBlock>,
    /// Held blocks looked at (tests).
    #[cfg(test)]
    examined: std::cell::Cell<u64>,
}

impl TcpReceiver {
    pub fn new(flow: FlowId, cfg: ReceiverConfig) -> Self {
        let delack = SimDuration::try_from_millis_f64(cfg.delack_timeout_ms).unwrap_or(SimDuration::from_millis(40));
        let quick = cfg.quickack_segments;
        TcpReceiver {
            flow,
            cfg,
            delack,
            rcv_nxt: 0,
            ooo: VecDeque::new(),
            recent: Vec::new(),
            ts_recent: SimTime::ZERO,
            last_ack_sent: 0,
            unacked_segments: 0,
            quickacks_left: quick,
            read_owed: false,
            delack_deadline: None,
            delivered_total: 0,
            acks_sent: 0,
            abc_accelerate: 0,
            abc_brake: 0,
            dsack: None,
            #[cfg(test)]
            examined: std::cell::Cell::new(0),
        }
    }

    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }
    pub fn delivered_total(&self) -> u64 {
        self.delivered_total
    }
    pub fn acks_sent(&self) -> u64 {
        self.acks_sent
    }
    pub fn next_timer(&self) -> Option<SimTime> {
        self.delack_deadline
    }
    pub fn out_of_order_blocks(&self) -> impl Iterator<Item = &SackBlock> {
        self.ooo.iter()
    }

    /// Index of the first held block that ends at or after `seq` (bisection).
    fn first_ending_at_or_after(&self, seq: u64) -> usize {
        #[cfg(test)]
        self.examined
            .set(self.examined.get() + 1 + (self.ooo.len() as u64 + 1).ilog2() as u64);
        self.ooo.partition_point(|b| b.end < seq)
    }

    pub fn on_data(&mut self, now: SimTime, d: &DataHeader) -> Received {
        let start = d.seq;
        let end = d.seq + d.len as u64;
        let mut r = Received::default();
        match d.abc {
            AbcMark::Accelerate => self.abc_accelerate = self.abc_accelerate.saturating_add(1),
            AbcMark::Brake => self.abc_brake = self.abc_brake.saturating_add(1),
            _ => {}
        }
        // RFC 7323 §4.3 (2): TS.Recent follows segments that cover Last.ACK.sent.
        if start <= self.last_ack_sent && end > self.last_ack_sent {
            self.ts_recent = d.ts_val;
        }
        if end <= self.rcv_nxt {
            // Entirely old: a spurious retransmission. ACK at once (RFC 5681
            // §4.2), reporting it (Linux tcp_data_queue: tcp_dsack_set).
            r.duplicate = true;
            self.set_dsack(start, end);
            r.ack = Some(self.make_ack(now));
            return r;
        }
        if start < self.rcv_nxt {
            // The old part of a segment straddling rcv_nxt.
            self.set_dsack(start, self.rcv_nxt);
        } else if let Some(b) = self.held_overlapping(start, end) {
            // Data already held out of order (tcp_data_queue_ofo).
            let (s0, e0) = (start.max(b.start), end.min(b.end));
            self.set_dsack(s0, e0);
        }
        let in_order = start <= self.rcv_nxt;
        let had_holes = !self.ooo.is_empty();
        if in_order {
            let before = self.rcv_nxt;
            self.rcv_nxt = end;
            // Pull in any buffered data now contiguous.
            while let Some(b) = self.ooo.front().copied() {
                #[cfg(test)]
                self.examined.set(self.examined.get() + 1);
                if b.start > self.rcv_nxt {
                    break;
                }
                self.rcv_nxt = self.rcv_nxt.max(b.end);
                self.ooo.pop_front();
            }
            self.recent.retain(|b| b.end > self.rcv_nxt);
            r.delivered = self.rcv_nxt - before;
            self.delivered_total += r.delivered;
        } else {
            self.insert_ooo(start, end);
        }
        self.unacked_segments += 1;
        // Immediate ACK for out-of-order data, for data that fills a hole,
        // in quick-ACK mode, or when delayed ACKs are off.
        let immediate = !in_order || had_holes || !self.cfg.delayed_ack || self.quickacks_left > 0;
        let by_count = self.unacked_segments >= self.cfg.ack_every;
        if self.quickacks_left > 0 && in_order {
            self.quickacks_left -= 1;
        }
        if immediate || (by_count && !self.cfg.ack_on_read) {
            r.ack = Some(self.make_ack(now));
        } else {
            if by_count && !self.read_owed {
                // Linux __tcp_ack_snd_check leaves it to tcp_cleanup_rbuf.
                self.read_owed = true;
                r.read_owed = true;
            }
            if self.delack_deadline.is_none() {
                self.delack_deadline = Some(now + self.delack);
            }
        }
        r
    }

    /// The application read what arrived (`ack_on_read`; Linux
    /// `tcp_cleanup_rbuf`): the ACK that waited for it, covering every
    /// segment since the last ACK, if one still waits.
    pub fn on_read(&mut self, now: SimTime) -> Option<Packet> {
        if !std::mem::take(&mut self.read_owed) || self.unacked_segments < self.cfg.ack_every {
            return None;
        }
        Some(self.make_ack(now))
    }

    /// The delayed-ACK timer fired (or may have): send the pending ACK.
    pub fn on_timer(&mut self, now: SimTime) -> Option<Packet> {
        match self.delack_deadline {
            Some(t) if t <= now => {
                if self.unacked_segments > 0 {
                    Some(self.make_ack(now))
                } else {
                    self.delack_deadline = None;
                    None
                }
            }
            _ => None,
        }
    }

    /// Linux `tcp_dsack_set`: remember a duplicate range for the next ACK.
    fn set_dsack(&mut self, start: u64, end: u64) {
        if self.cfg.sack && self.cfg.dsack && start < end {
            self.dsack = Some(SackBlock { start, end });
        }
    }

    /// The first held block overlapping `[start, end)`, if any.
    fn held_overlapping(&self, start: u64, end: u64) -> Option<SackBlock> {
        // Blocks ending at `start` only touch it.
        let i = self.first_ending_at_or_after(start + 1);
        self.ooo.get(i).filter(|b| b.start < end).copied()
    }

    fn insert_ooo(&mut self, start: u64, end: u64) {
        let mut nb = SackBlock {
            start: start.max(self.rcv_nxt),
            end,
        };
        // Merge with the overlapping or adjacent blocks: those from the
        // first ending at or after nb.start to the last starting at or
        // before nb.end, a contiguous run of the sorted queue.
        let lo = self.first_ending_at_or_after(nb.start);
        let mut hi = lo;
        while hi < self.ooo.len() && self.ooo[hi].start <= nb.end {
            #[cfg(test)]
            self.examined.set(self.examined.get() + 1);
            nb.start = nb.start.min(self.ooo[hi].start);
            nb.end = nb.end.max(self.ooo[hi].end);
            hi += 1;
        }
        self.ooo.drain(lo..hi);
        self.ooo.insert(lo, nb);
        // RFC 2018 §4: the first block reports the most recent segment's block.
        self.recent.retain(|b| !(b.end >= nb.start && b.start <= nb.end));
        self.recent.insert(0, nb);
        self.recent.truncate(8);
    }

    fn make_ack(&mut self, _now: SimTime) -> Packet {
        self.unacked_segments = 0;
        self.read_owed = false;
        self.delack_deadline = None;
        self.last_ack_sent = self.rcv_nxt;
        self.acks_sent += 1;
        let mut blocks = [SackBlock::default(); MAX_SACK_BLOCKS];
        let mut n = 0;
        if let Some(d) = self.dsack.take() {
            // RFC 2883 §4: the D-SACK block first.
            blocks[0] = d;
            n = 1;
        }
        if self.cfg.sack {
            for b in &self.recent {
                if n == MAX_SACK_BLOCKS {
                    break;
                }
                if b.end > self.rcv_nxt {
                    blocks[n] = *b;
                    n += 1;
                }
            }
        }
        let mut p = Packet::ack(self.flow, self.rcv_nxt, &blocks[..n], self.ts_recent);
        if let PacketKind::Ack(a) = &mut p.kind {
            a.abc_accelerate = std::mem::take(&mut self.abc_accelerate);
            a.abc_brake = std::mem::take(&mut self.abc_brake);
        }
        p
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::PacketKind;

    fn seg(seq: u64) -> DataHeader {
        DataHeader {
            seq,
            len: 1000,
            ts_val: SimTime::from_nanos(seq + 1),
            retransmit: false,
            abc: AbcMark::NotCapable,
        }
    }
    fn ack_of(p: &Packet) -> (u64, Vec<SackBlock>) {
        match &p.kind {
            PacketKind::Ack(a) => (a.ack, a.sack_blocks().to_vec()),
            _ => panic!("not an ack"),
        }
    }
    fn rx() -> TcpReceiver {
        TcpReceiver::new(
            FlowId(0),
            ReceiverConfig {
                quickack_segments: 0,
                ..ReceiverConfig::default()
            },
        )
    }

    #[test]
    fn every_second_in_order_segment_is_acknowledged() {
        let mut r = rx();
        let t = SimTime::ZERO;
        assert!(r.on_data(t, &seg(0)).ack.is_none());
        assert_eq!(r.next_timer(), Some(SimTime::from_nanos(40_000_000)));
        let a = r.on_data(t, &seg(1000)).ack.unwrap();
        assert_eq!(ack_of(&a).0, 2000);
        assert_eq!(r.next_timer(), None);
    }

    fn rx_on_read() -> TcpReceiver {
        TcpReceiver::new(
            FlowId(0),
            ReceiverConfig {
                quickack_segments: 0,
                ack_on_read: true,
                ..ReceiverConfig::default()
            },
        )
    }

    #[test]
    fn with_ack_on_read_one_ack_at_the_read_covers_every_segment_of_the_arrival_instant() {
        let mut r = rx_on_read();
        let t = SimTime::from_nanos(7_000_000);
        let mut owed = 0;
        for k in 0..5 {
            let got = r.on_data(t, &seg(k * 1000));
            assert!(got.ack.is_none(), "segment {k} acknowledged before the read");
            owed += got.read_owed as u32;
        }
        assert_eq!(owed, 1, "the read is asked for once");
        let a = r.on_read(t).expect("the read sends the ACK");
        assert_eq!(ack_of(&a).0, 5000);
        assert_eq!(r.acks_sent(), 1);
        assert_eq!(r.next_timer(), None);
        assert!(r.on_read(t).is_none(), "nothing owed after the ACK");
    }

    #[test]
    fn with_ack_on_read_a_lone_segment_still_waits_for_the_delayed_ack_timer() {
        let mut r = rx_on_read();
        let got = r.on_data(SimTime::ZERO, &seg(0));
        assert!(got.ack.is_none() && !got.read_owed);
        assert!(r.on_read(SimTime::ZERO).is_none());
        let a = r.on_timer(SimTime::from_nanos(40_000_000)).unwrap();
        assert_eq!(ack_of(&a).0, 1000);
    }

    #[test]
    fn with_ack_on_read_out_of_order_data_is_still_acknowledged_at_once() {
        let mut r = rx_on_read();
        let t = SimTime::ZERO;
        assert!(r.on_data(t, &seg(0)).ack.is_none());
        let a = r.on_data(t, &seg(2000)).ack.expect("out of order: immediate");
        assert_eq!(ack_of(&a), (1000, vec![SackBlock { start: 2000, end: 3000 }]));
        assert!(r.on_data(t, &seg(1000)).ack.is_some(), "filling the hole: immediate");
    }

    #[test]
    fn a_lone_segment_is_acknowledged_when_the_delayed_ack_timer_fires() {
        let mut r = rx();
        r.on_data(SimTime::ZERO, &seg(0));
        assert!(r.on_timer(SimTime::from_nanos(39_999_999)).is_none());
        let a = r.on_timer(SimTime::from_nanos(40_000_000)).unwrap();
        assert_eq!(ack_of(&a).0, 1000);
    }

    #[test]
    fn out_of_order_segments_are_sacked_immediately_most_recent_first() {
        let mut r = rx();
        let t = SimTime::ZERO;
        r.on_data(t, &seg(0));
        let a = r.on_data(t, &seg(2000)).ack.unwrap();
        assert_eq!(ack_of(&a), (1000, vec![SackBlock { start: 2000, end: 3000 }]));
        let a = r.on_data(t, &seg(4000)).ack.unwrap();
        assert_eq!(
            ack_of(&a),
            (
                1000,
                vec![
                    SackBlock { start: 4000, end: 5000 },
                    SackBlock { start: 2000, end: 3000 }
                ]
            )
        );
        // Filling the first hole delivers two segments and acks at once.
        let res = r.on_data(t, &seg(1000));
        assert_eq!(res.delivered, 2000);
        assert_eq!(
            ack_of(&res.ack.unwrap()),
            (3000, vec![SackBlock { start: 4000, end: 5000 }])
        );
    }

    #[test]
    fn duplicate_data_is_not_delivered_twice() {
        let mut r = rx();
        let t = SimTime::ZERO;
        assert_eq!(r.on_data(t, &seg(0)).delivered, 1000);
        let d = r.on_data(t, &seg(0));
        assert!(d.duplicate);
        assert_eq!(d.delivered, 0);
        assert_eq!(r.delivered_total(), 1000);
    }

    #[test]
    fn a_duplicate_below_the_cumulative_ack_is_reported_in_a_dsack_block_once() {
        let mut r = rx();
        let t = SimTime::ZERO;
        r.on_data(t, &seg(0));
        r.on_data(t, &seg(1000));
        let d = r.on_data(t, &seg(0));
        assert_eq!(ack_of(&d.ack.unwrap()), (2000, vec![SackBlock { start: 0, end: 1000 }]));
        // Reported once: the next ACK has no D-SACK block.
        r.on_data(t, &seg(2000));
        let a = r.on_data(t, &seg(3000)).ack.unwrap();
        assert_eq!(ack_of(&a), (4000, vec![]));
    }

    #[test]
    fn a_duplicate_of_out_of_order_data_comes_first_then_the_sack_blocks() {
        let mut r = rx();
        let t = SimTime::ZERO;
        r.on_data(t, &seg(0));
        r.on_data(t, &seg(2000));
        r.on_data(t, &seg(4000));
        let a = r.on_data(t, &seg(2000)).ack.unwrap();
        assert_eq!(
            ack_of(&a),
            (
                1000,
                vec![
                    // D-SACK, then (RFC 2883 §4, Linux tcp_sack_new_ofo_skb)
                    // the block holding it, then the others.
                    SackBlock { start: 2000, end: 3000 },
                    SackBlock { start: 2000, end: 3000 },
                    SackBlock { start: 4000, end: 5000 },
                ]
            )
        );
    }

    #[test]
    fn no_dsack_without_sack_or_when_turned_off() {
        for cfg in [
            ReceiverConfig {
                quickack_segments: 0,
                dsack: false,
                ..ReceiverConfig::default()
            },
            ReceiverConfig {
                quickack_segments: 0,
                sack: false,
                ..ReceiverConfig::default()
            },
        ] {
            let mut r = TcpReceiver::new(FlowId(0), cfg);
            let t = SimTime::ZERO;
            r.on_data(t, &seg(0));
            let d = r.on_data(t, &seg(0));
            assert_eq!(ack_of(&d.ack.unwrap()), (1000, vec![]));
        }
    }

    #[test]
    fn quick_ack_mode_acknowledges_the_first_segments_one_by_one() {
        let mut r = TcpReceiver::new(
            FlowId(0),
            ReceiverConfig {
                quickack_segments: 2,
                ..ReceiverConfig::default()
            },
        );
        let t = SimTime::ZERO;
        assert!(r.on_data(t, &seg(0)).ack.is_some());
        assert!(r.on_data(t, &seg(1000)).ack.is_some());
        assert!(r.on_data(t, &seg(2000)).ack.is_none());
    }

    /// Segment `k` of `mss` bytes.
    fn seg_of(k: u64, mss: u32) -> DataHeader {
        DataHeader {
            seq: k * mss as u64,
            len: mss,
            ts_val: SimTime::ZERO,
            retransmit: false,
            abc: AbcMark::NotCapable,
        }
    }

    #[test]
    fn thousands_of_holes_cost_each_segment_a_few_block_lookups() {
        // A fuzz case (mss 88 at 20 Gbit/s into 50 packets, NewReno) spent
        // 68 s on 3.4 M events: every out-of-order segment walked the list
        // of held blocks, and every hole filled shifted it.
        let n = 20_000u64;
        let mut r = rx();
        // Every other segment arrives: n holes.
        for k in (1..2 * n).step_by(2) {
            r.on_data(SimTime::ZERO, &seg_of(k, 88));
        }
        assert_eq!(r.out_of_order_blocks().count(), n as usize);
        // Then the holes fill, in order.
        for k in (0..2 * n).step_by(2) {
            r.on_data(SimTime::ZERO, &seg_of(k, 88));
        }
        assert_eq!(r.rcv_nxt(), 2 * n * 88);
        assert_eq!(r.out_of_order_blocks().count(), 0);
        assert!(
            r.examined.get() <= 100 * n,
            "looked at {} blocks for {n} holes",
            r.examined.get()
        );
    }

    #[test]
    fn out_of_order_segments_merge_into_the_runs_of_bytes_received_whatever_their_order() {
        let mut rng = crate::engine::Rng::from_seed(3);
        for case in 0..300 {
            let mut r = rx();
            let n = 1 + rng.below(60);
            // Which 100-byte units have arrived (segments are 1-3 units).
            let mut got = vec![false; n as usize + 3];
            for _ in 0..3 * n {
                let k = rng.below(n);
                let len = 1 + rng.below(3);
                let d = DataHeader {
                    seq: k * 100,
                    len: (len * 100) as u32,
                    ts_val: SimTime::ZERO,
                    retransmit: false,
                    abc: AbcMark::NotCapable,
                };
                r.on_data(SimTime::ZERO, &d);
                for j in k..k + len {
                    got[j as usize] = true;
                }
                let prefix = got.iter().take_while(|&&g| g).count();
                assert_eq!(r.rcv_nxt(), prefix as u64 * 100, "case {case}");
                assert_eq!(r.delivered_total(), r.rcv_nxt(), "case {case}");
                // The held blocks are the runs of received units above rcv_nxt.
                let mut runs = Vec::new();
                let mut j = prefix;
                while j < got.len() {
                    if got[j] {
                        let start = j;
                        while j < got.len() && got[j] {
                            j += 1;
                        }
                        runs.push(SackBlock {
                            start: start as u64 * 100,
                            end: j as u64 * 100,
                        });
                    } else {
                        j += 1;
                    }
                }
                let blocks: Vec<SackBlock> = r.out_of_order_blocks().copied().collect();
                assert_eq!(blocks, runs, "case {case}");
            }
        }
    }
}
