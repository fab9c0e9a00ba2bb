//! RLC in unacknowledged mode (UM), after 3GPP TS 36.322 §5.1.2.
//!
//! Transmit side (base station, one per UE): a drop-tail buffer of SDUs
//! (PDCP PDUs), segmented and concatenated into one RLC PDU per transport
//! block. The head-of-line (HoL) delay is the waiting time of the oldest SDU
//! not yet completely sent, including one sent in part, as ns-3's
//! `LteRlcUm` reports it.
//!
//! Receive side (UE): PDUs arrive in any order (HARQ retransmissions
//! overtake nothing but are overtaken); they are reordered by sequence
//! number, a missing PDU is given up when `t-Reordering` expires
//! (§5.1.2.2.3), and SDUs are reassembled and delivered in order. An SDU
//! with a segment in a lost PDU is discarded.
//!
//! Header sizes (TS 36.322 §6.2.1.3 with a 10-bit SN): 2 bytes per PDU, plus
//! 1.5 bytes per extra length indicator, rounded up here to 2 bytes per
//! additional SDU segment. The MAC header is counted as 3 bytes per
//! transport block (one subheader with a 15-bit length, TS 36.321 §6.1.2).
//!
//! Deviations: the buffer limit counts SDUs (the paper's "128 MTU-sized
//! packets") or bytes, whichever is given; RLC UM has no retransmission, so
//! a transport block HARQ gives up on is a loss that TCP must recover.

use std::collections::{BTreeMap, VecDeque};

use crate::net::queue::QueueCounters;
use crate::net::Packet;
use crate::units::{SimDuration, SimTime};

pub const MAC_HEADER_BYTES: u32 = 3;
pub const RLC_HEADER_BYTES: u32 = 2;
pub const RLC_LI_BYTES: u32 = 2;

/// Bytes a transport block needs to empty a buffer of `sdus` SDUs holding
/// `bytes` bytes, headers included ([`RlcTx::demand_bytes`]).
#[inline]
pub fn demand_bytes(bytes: u64, sdus: u64) -> u64 {
    if sdus == 0 {
        return 0;
    }
    bytes + (MAC_HEADER_BYTES + RLC_HEADER_BYTES) as u64 + RLC_LI_BYTES as u64 * (sdus - 1)
}

/// One SDU waiting in the transmit buffer.
#[derive(Debug)]
struct Sdu {
    pkt: Packet,
    arrival: SimTime,
    /// Bytes of this SDU not yet put into a PDU.
    remaining: u32,
    /// Per-UE SDU number, for reassembly.
    sn: u64,
    /// Some bytes already went out.
    started: bool,
}

/// A piece of an SDU inside a PDU.
#[derive(Debug)]
pub struct Segment {
    pub sdu_sn: u64,
    pub first: bool,
    pub last: bool,
    pub bytes: u32,
    /// The packet travels with the SDU's last segment.
    pub pkt: Option<Packet>,
    /// When the SDU entered the transmit buffer.
    pub arrival: SimTime,
    /// When the PDU carrying this segment was first transmitted (set by the
    /// MAC; the arrival until then). The XRC agent's air delay reads it.
    pub sent: SimTime,
}

/// An RLC PDU: what one transport block carries for one UE.
#[derive(Debug)]
pub struct Pdu {
    pub sn: u64,
    pub segments: Vec<Segment>,
    /// Bytes used including headers.
    pub bytes: u32,
}

/// Limits of the transmit buffer; a new SDU over either limit is dropped.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct RlcLimit {
    pub sdus: Option<u32>,
    pub bytes: Option<u64>,
}

#[derive(Debug)]
pub struct RlcTx {
    limit: RlcLimit,
    sdus: VecDeque<Sdu>,
    bytes: u64,
    next_sdu_sn: u64,
    next_pdu_sn: u64,
    arrived: u64,
    departed: u64,
    dropped: u64,
}

impl RlcTx {
    pub fn new(limit: RlcLimit) -> Self {
        RlcTx {
            limit,
            sdus: VecDeque::new(),
            bytes: 0,
            next_sdu_sn: 0,
            next_pdu_sn: 0,
            arrived: 0,
            departed: 0,
            dropped: 0,
        }
    }

    /// Buffers an SDU of `sdu_bytes` (IP packet plus PDCP header), or hands
    /// the packet back when the buffer is full.
    #[inline]
    pub fn push(&mut self, now: SimTime, pkt: Packet, sdu_bytes: u32) -> Result<(), Packet> {
        self.arrived += 1;
        let over_sdus = self.limit.sdus.is_some_and(|n| self.sdus.len() as u64 >= n as u64);
        let over_bytes = self.limit.bytes.is_some_and(|b| self.bytes + sdu_bytes as u64 > b);
        if over_sdus || over_bytes {
            self.dropped += 1;
            return Err(pkt);
        }
        self.bytes += sdu_bytes as u64;
        let sn = self.next_sdu_sn;
        self.next_sdu_sn += 1;
        self.sdus.push_back(Sdu {
            pkt,
            arrival: now,
            remaining: sdu_bytes,
            sn,
            started: false,
        });
        Ok(())
    }

    /// Bytes waiting (SDU bytes not yet sent).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
    /// SDUs waiting, including one partly sent.
    pub fn sdus(&self) -> usize {
        self.sdus.len()
    }
    pub fn is_empty(&self) -> bool {
        self.sdus.is_empty()
    }
    /// The sequence number of the first SDU no byte of which has been sent
    /// (SDU numbers are consecutive: a dropped SDU takes none).
    pub fn first_unstarted_sn(&self) -> u64 {
        match self.sdus.front() {
            Some(h) => h.sn + h.started as u64,
            None => self.next_sdu_sn,
        }
    }
    /// SDUs of `full_sdu_bytes` that still fit under the buffer's limits
    /// (`u64::MAX` without a limit): what the XRC agent reports to `xrc2`
    /// as the buffer's free room.
    pub fn room_sdus(&self, full_sdu_bytes: u32) -> u64 {
        let by_count = self
            .limit
            .sdus
            .map_or(u64::MAX, |n| (n as u64).saturating_sub(self.sdus.len() as u64));
        let by_bytes = self.limit.bytes.map_or(u64::MAX, |b| {
            b.saturating_sub(self.bytes) / full_sdu_bytes.max(1) as u64
        });
        by_count.min(by_bytes)
    }
    /// Head-of-line delay at `now`; zero when empty.
    pub fn hol_delay(&self, now: SimTime) -> SimDuration {
        self.sdus
            .front()
            .map_or(SimDuration::ZERO, |s| now.saturating_since(s.arrival))
    }
    /// When the head SDU entered the buffer (`None` when empty).
    pub fn head_arrival(&self) -> Option<SimTime> {
        self.sdus.front().map(|s| s.arrival)
    }
    /// Bytes a transport block needs to empty the buffer, headers included.
    pub fn demand_bytes(&self) -> u64 {
        demand_bytes(self.bytes, self.sdus.len() as u64)
    }

    /// Fills a PDU for a transport block of `tb_bytes`. Returns `None` when
    /// nothing fits.
    pub fn build_pdu(&mut self, tb_bytes: u32) -> Option<Pdu> {
        self.build_pdu_from(tb_bytes, &mut Vec::new())
    }

    /// [`RlcTx::build_pdu`] with the segment list taken from `spare`
    /// (emptied lists a receiver handed back, [`RxOutput::spare`]), so a
    /// transport block allocates nothing.
    pub fn build_pdu_from(&mut self, tb_bytes: u32, spare: &mut Vec<Vec<Segment>>) -> Option<Pdu> {
        let overhead = MAC_HEADER_BYTES + RLC_HEADER_BYTES;
        if tb_bytes <= overhead || self.sdus.is_empty() {
            return None;
        }
        let mut room = tb_bytes - overhead;
        let mut segments = spare.pop().unwrap_or_default();
        debug_assert!(segments.is_empty());
        while let Some(head) = self.sdus.front_mut() {
            if !segments.is_empty() {
                if room <= RLC_LI_BYTES {
                    break;
                }
                room -= RLC_LI_BYTES;
            }
            if room == 0 {
                break;
            }
            let first = !head.started;
            if head.remaining <= room {
                room -= head.remaining;
                let sdu = self.sdus.pop_front().expect("head exists");
                self.bytes -= sdu.remaining as u64;
                self.departed += 1;
                segments.push(Segment {
                    sdu_sn: sdu.sn,
                    first,
                    last: true,
                    bytes: sdu.remaining,
                    pkt: Some(sdu.pkt),
                    arrival: sdu.arrival,
                    sent: sdu.arrival,
                });
            } else {
                let take = room;
                head.remaining -= take;
                head.started = true;
                self.bytes -= take as u64;
                segments.push(Segment {
                    sdu_sn: head.sn,
                    first,
                    last: false,
                    bytes: take,
                    pkt: None,
                    arrival: head.arrival,
                    sent: head.arrival,
                });
                room = 0;
                break;
            }
        }
        if segments.is_empty() {
            spare.push(segments);
            return None;
        }
        let sn = self.next_pdu_sn;
        self.next_pdu_sn += 1;
        Some(Pdu {
            sn,
            segments,
            bytes: tb_bytes - room,
        })
    }

    /// SDU conservation: arrived = departed (fully sent) + dropped + held.
    pub fn counters(&self) -> QueueCounters {
        QueueCounters {
            arrived: self.arrived,
            departed: self.departed,
            dropped: self.dropped,
            held: self.sdus.len() as u64,
        }
    }
}

/// What the receive side produced.
#[derive(Debug, Default)]
pub struct RxOutput {
    pub delivered: Vec<Packet>,
    /// For each of `delivered`: when its last segment was first transmitted.
    pub delivered_sent: Vec<SimTime>,
    /// SDUs discarded because a segment was lost.
    pub discarded: u64,
    /// The segment lists of reassembled PDUs, emptied, for
    /// [`RlcTx::build_pdu_from`] to fill again.
    pub spare: Vec<Vec<Segment>>,
}

/// The UE's RLC UM receiver: reordering and reassembly.
#[derive(Debug)]
pub struct RlcRx {
    t_reordering: SimDuration,
    /// Next PDU expected in order (VR(UR)).
    next_sn: u64,
    /// Received PDUs above `next_sn`.
    pending: BTreeMap<u64, Pdu>,
    /// When the reordering timer expires, if running.
    timer: Option<SimTime>,
    /// The SN the timer is waiting for (VR(UX)).
    timer_sn: u64,
    /// Reassembly: the SDU being put together and whether it is intact.
    partial: Option<(u64, bool)>,
    pdus_skipped: u64,
}

impl RlcRx {
    pub fn new(t_reordering: SimDuration) -> Self {
        RlcRx {
            t_reordering,
            next_sn: 0,
            pending: BTreeMap::new(),
            timer: None,
            timer_sn: 0,
            partial: None,
            pdus_skipped: 0,
        }
    }

    pub fn timer(&self) -> Option<SimTime> {
        self.timer
    }
    pub fn pdus_skipped(&self) -> u64 {
        self.pdus_skipped
    }

    /// A PDU arrived from the MAC.
    pub fn on_pdu(&mut self, now: SimTime, pdu: Pdu, out: &mut RxOutput) {
        if pdu.sn < self.next_sn || self.pending.contains_key(&pdu.sn) {
            return; // duplicate or too late
        }
        if pdu.sn == self.next_sn && self.pending.is_empty() {
            // In order with nothing waiting (the usual case): what
            // `deliver_in_order` would do, without the map.
            self.next_sn += 1;
            self.reassemble(pdu, out);
        } else {
            self.pending.insert(pdu.sn, pdu);
            self.deliver_in_order(out);
        }
        // Start the reordering timer when a gap exists and none is running.
        if self.timer.is_none() && !self.pending.is_empty() {
            let highest = *self.pending.keys().next_back().expect("non-empty");
            self.timer = Some(now + self.t_reordering);
            self.timer_sn = highest + 1;
        } else if self.timer.is_some() && self.next_sn >= self.timer_sn {
            // The gap the timer waited for is filled.
            self.timer = None;
            if !self.pending.is_empty() {
                let highest = *self.pending.keys().next_back().expect("non-empty");
                self.timer = Some(now + self.t_reordering);
                self.timer_sn = highest + 1;
            }
        }
    }

    /// The reordering timer fired: give up on every missing PDU below the
    /// one that started the timer (TS 36.322 §5.1.2.2.4).
    pub fn on_timer(&mut self, now: SimTime, out: &mut RxOutput) {
        if self.timer.is_none_or(|t| t > now) {
            return;
        }
        self.timer = None;
        while self.next_sn < self.timer_sn {
            if let Some(pdu) = self.pending.remove(&self.next_sn) {
                self.reassemble(pdu, out);
            } else {
                self.pdus_skipped += 1;
                if let Some((_, intact)) = self.partial.as_mut() {
                    *intact = false;
                }
            }
            self.next_sn += 1;
        }
        self.deliver_in_order(out);
        if !self.pending.is_empty() {
            let highest = *self.pending.keys().next_back().expect("non-empty");
            self.timer = Some(now + self.t_reordering);
            self.timer_sn = highest + 1;
        }
    }

    fn deliver_in_order(&mut self, out: &mut RxOutput) {
        while let Some(pdu) = self.pending.remove(&self.next_sn) {
            self.next_sn += 1;
            self.reassemble(pdu, out);
        }
    }

    fn reassemble(&mut self, pdu: Pdu, out: &mut RxOutput) {
        let mut segments = pdu.segments;
        for seg in segments.drain(..) {
            if seg.first {
                if self.partial.is_some() {
                    out.discarded += 1; // the previous SDU never completed
                }
                self.partial = Some((seg.sdu_sn, true));
            } else if self.partial.is_none_or(|(sn, _)| sn != seg.sdu_sn) {
                // A continuation whose start was lost; an SDU left open
                // before it can no longer complete.
                if self.partial.is_some() {
                    out.discarded += 1;
                }
                self.partial = Some((seg.sdu_sn, false));
            }
            if seg.last {
                let (_, intact) = self.partial.take().expect("set above");
                match (intact, seg.pkt) {
                    (true, Some(p)) => {
                        out.delivered.push(p);
                        out.delivered_sent.push(seg.sent);
                    }
                    _ => out.discarded += 1,
                }
            }
        }
        out.spare.push(segments);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::FlowId;

    #[test]
    fn the_buffers_free_room_counts_full_sdus_under_either_limit() {
        let mut by_count = RlcTx::new(RlcLimit {
            sdus: Some(4),
            bytes: None,
        });
        assert_eq!(by_count.room_sdus(1502), 4);
        by_count.push(SimTime::ZERO, pkt(0), 1502).unwrap();
        assert_eq!(by_count.room_sdus(1502), 3);
        let mut by_bytes = RlcTx::new(RlcLimit {
            sdus: None,
            bytes: Some(10_000),
        });
        by_bytes.push(SimTime::ZERO, pkt(0), 1502).unwrap();
        // 8 498 bytes left: five full SDUs.
        assert_eq!(by_bytes.room_sdus(1502), 5);
        let both = RlcTx::new(RlcLimit {
            sdus: Some(3),
            bytes: Some(10_000),
        });
        assert_eq!(both.room_sdus(1502), 3);
        let none = RlcTx::new(RlcLimit {
            sdus: None,
            bytes: None,
        });
        assert_eq!(none.room_sdus(1502), u64::MAX);
    }

    fn pkt(seq: u64) -> Packet {
        Packet::data(FlowId(0), seq, 1448, SimTime::ZERO, false)
    }
    fn t(ms: u64) -> SimTime {
        SimTime::from_nanos(ms * 1_000_000)
    }
    fn seqs(out: &RxOutput) -> Vec<u64> {
        out.delivered
            .iter()
            .map(|p| match &p.kind {
                crate::net::PacketKind::Data(d) => d.seq,
                _ => panic!(),
            })
            .collect()
    }

    #[test]
    fn the_buffer_drops_the_129th_packet() {
        let mut tx = RlcTx::new(RlcLimit {
            sdus: Some(128),
            bytes: None,
        });
        for i in 0..128 {
            assert!(tx.push(t(0), pkt(i), 1502).is_ok());
        }
        assert!(tx.push(t(0), pkt(128), 1502).is_err());
        assert!(tx.counters().conserved());
    }

    #[test]
    fn hol_delay_is_the_wait_of_the_oldest_unsent_sdu() {
        let mut tx = RlcTx::new(RlcLimit {
            sdus: None,
            bytes: None,
        });
        assert_eq!(tx.hol_delay(t(5)), SimDuration::ZERO);
        tx.push(t(1), pkt(0), 1502).unwrap();
        tx.push(t(3), pkt(1), 1502).unwrap();
        assert_eq!(tx.hol_delay(t(5)), SimDuration::from_millis(4));
        // Half of the head goes out: it still counts as head of line.
        tx.build_pdu(800).unwrap();
        assert_eq!(tx.hol_delay(t(5)), SimDuration::from_millis(4));
        tx.build_pdu(800).unwrap();
        assert_eq!(tx.hol_delay(t(5)), SimDuration::from_millis(2));
    }

    #[test]
    fn a_pdu_segments_and_concatenates_sdus_and_counts_headers() {
        let mut tx = RlcTx::new(RlcLimit {
            sdus: None,
            bytes: None,
        });
        for i in 0..3 {
            tx.push(t(0), pkt(i), 1502).unwrap();
        }
        // 5 bytes MAC+RLC, 1502 for SDU 0, 2 LI + 1502 for SDU 1, 2 LI + rest of 2000.
        let pdu = tx.build_pdu(4000).unwrap();
        assert_eq!(pdu.segments.len(), 3);
        assert!(pdu.segments[0].first && pdu.segments[0].last);
        let s2 = &pdu.segments[2];
        assert!(s2.first && !s2.last);
        assert_eq!(s2.bytes, 4000 - 5 - 1502 - 2 - 1502 - 2);
        assert_eq!(pdu.bytes, 4000);
        assert_eq!(tx.bytes(), 1502 - s2.bytes as u64);
    }

    #[test]
    fn the_receiver_reorders_pdus_and_reassembles_segmented_sdus() {
        let mut tx = RlcTx::new(RlcLimit {
            sdus: None,
            bytes: None,
        });
        for i in 0..3 {
            tx.push(t(0), pkt(i), 1502).unwrap();
        }
        let a = tx.build_pdu(1000).unwrap();
        let b = tx.build_pdu(1000).unwrap();
        let c = tx.build_pdu(4000).unwrap();
        let mut rx = RlcRx::new(SimDuration::from_millis(50));
        let mut out = RxOutput::default();
        rx.on_pdu(t(1), c, &mut out);
        rx.on_pdu(t(2), a, &mut out);
        assert!(out.delivered.is_empty());
        rx.on_pdu(t(3), b, &mut out);
        assert_eq!(seqs(&out), vec![0, 1, 2]);
        assert_eq!(rx.timer(), None);
    }

    #[test]
    fn a_lost_pdu_is_skipped_when_t_reordering_expires_and_its_sdu_discarded() {
        let mut tx = RlcTx::new(RlcLimit {
            sdus: None,
            bytes: None,
        });
        for i in 0..3 {
            tx.push(t(0), pkt(i), 1502).unwrap();
        }
        let a = tx.build_pdu(1000).unwrap(); // SDU 0 part 1
        let _lost = tx.build_pdu(1000).unwrap(); // SDU 0 end, SDU 1 start
        let c = tx.build_pdu(4000).unwrap(); // SDU 1 rest, SDU 2
        let mut rx = RlcRx::new(SimDuration::from_millis(50));
        let mut out = RxOutput::default();
        rx.on_pdu(t(1), a, &mut out);
        rx.on_pdu(t(2), c, &mut out);
        assert_eq!(rx.timer(), Some(t(52)));
        rx.on_timer(t(52), &mut out);
        assert_eq!(seqs(&out), vec![2]);
        assert_eq!(out.discarded, 2);
        assert_eq!(rx.pdus_skipped(), 1);
    }
}
