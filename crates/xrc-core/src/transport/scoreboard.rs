//! The sender's record of every segment sent and not yet cumulatively
//! acknowledged: SACK marks, loss marks and retransmission state, with the
//! counters Linux keeps (`packets_out`, `sacked_out`, `lost_out`,
//! `retrans_out`).
//!
//! Loss marking follows RFC 6675 §4 `IsLost`: a segment is lost once
//! `DupThresh` segments above it have been SACKed.
//!
//! Every marking that Linux counts in `tp->lost` (a segment newly marked,
//! or a lost retransmission marked again: `tcp_mark_skb_lost`) is also
//! queued, in marking order, with the segment's congestion-control record,
//! for the sender to hand to the algorithm ([`Scoreboard::take_marked`]).
//!
//! The next lost segment to retransmit is found from a hint, as Linux's
//! `retransmit_skb_hint`: a sequence number below which no segment waits
//! for retransmission. Each marking lowers it, each search raises it, so
//! retransmitting a window of `n` lost segments costs `O(n)`, not `O(n²)`
//! (a window of 65,535 segments, all lost, took minutes per second).
//!
//! RACK walks the segments in the order they were (re)transmitted, as
//! Linux walks `tsorted_sent_queue`: a queue of (transmission number,
//! sequence) appended at every transmission, so it is sorted. An entry goes
//! stale when its segment is acknowledged, SACKed, marked lost or sent
//! again; RACK drops stale entries as it meets them and stops at the first
//! entry sent after its reference, so an ACK costs what it examines, not
//! the whole window (741,533 segments in flight took 6 s for 11,000
//! events).

use std::cell::Cell;
use std::collections::VecDeque;

use super::cc::PacketRecord;
use crate::units::{SimDuration, SimTime};

/// Delivery-rate bookkeeping taken when a segment is sent (Linux
/// `tcp_skb_cb.tx`, `net/ipv4/tcp_rate.c`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TxSnapshot {
    pub delivered: u64,
    pub delivered_time: SimTime,
    pub first_tx_time: SimTime,
    pub app_limited: bool,
}

#[derive(Clone, Debug)]
pub struct Seg {
    pub seq: u64,
    pub len: u32,
    /// Time of the latest (re)transmission.
    pub tx_time: SimTime,
    /// Number of transmissions.
    pub tx_count: u32,
    /// Position of the latest transmission in the connection's order of
    /// transmissions (ties of `tx_time` are common in a simulator).
    pub tx_order: u64,
    pub sacked: bool,
    pub lost: bool,
    /// A retransmission of this segment is in flight (Linux `TCPCB_SACKED_RETRANS`).
    pub retrans: bool,
    pub snap: TxSnapshot,
    /// The congestion-control algorithm's record of the latest
    /// transmission.
    pub record: PacketRecord,
}

/// A marking of a segment as lost, queued for the algorithm.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Marked {
    pub seq: u64,
    pub len: u32,
    /// Position of the marked transmission in the order of transmissions.
    pub tx_order: u64,
    pub record: PacketRecord,
}

impl Seg {
    pub fn end(&self) -> u64 {
        self.seq + self.len as u64
    }
    /// Karn's rule: only segments sent once give unambiguous RTT samples.
    pub fn ever_retransmitted(&self) -> bool {
        self.tx_count > 1
    }
}

#[derive(Debug, Default)]
pub struct Scoreboard {
    segs: VecDeque<Seg>,
    sacked_out: u32,
    /// Start of the highest segment ever SACKed (Linux `tp->highest_sack`):
    /// nothing above it is SACKed, so RFC 6675's walk starts there.
    highest_sack: u64,
    /// The un-SACKed segments held, as runs: sorted, disjoint sequence
    /// ranges `[start, end)`, each covering whole consecutive segments none
    /// of which is SACKed, with a SACKed segment between two runs. SACK
    /// processing and RFC 6675's walk step over the SACKed segments between
    /// runs instead of walking them on every ACK (Linux skips them with its
    /// SACK cache and hints; a window of 10^5 SACKed segments took a minute
    /// per second). In the common pattern every change is at an end of the
    /// list: a new segment extends the last run, a cumulative ACK trims the
    /// first, a SACK above a hole splits the last; a middle run is split
    /// or removed by shifting the shorter side.
    unsacked: VecDeque<(u64, u64)>,
    lost_out: u32,
    retrans_out: u32,
    /// Segments marked lost and not (yet) retransmitted since.
    lost_pending: u32,
    /// Markings not yet handed to the algorithm, in marking order.
    marked: Vec<Marked>,
    /// No segment below this sequence number is lost and not retransmitted.
    lost_hint: Cell<u64>,
    /// (tx_order, seq) of every transmission, in transmission order;
    /// includes every segment neither SACKed nor waiting for
    /// retransmission at its latest transmission, and stale entries.
    tsorted: VecDeque<(u64, u64)>,
    /// Entries RACK keeps (scratch).
    kept: Vec<(u64, u64)>,
    /// Segments `next_lost` and `rack_detect_loss` have looked at (tests).
    #[cfg(test)]
    scanned: Cell<u64>,
}

impl Scoreboard {
    // `push` and `ack_cumulative` are inlined into the sender: a `Seg`
    // passed through a call is copied into its frame.
    #[inline(always)]
    pub fn push(&mut self, seg: Seg) {
        debug_assert!(self.segs.back().is_none_or(|b| b.end() == seg.seq));
        let (order, seq) = (seg.tx_order, seg.seq);
        if !seg.sacked {
            match self.unsacked.back_mut() {
                Some(run) if run.1 == seq => run.1 = seg.end(),
                _ => self.unsacked.push_back((seq, seg.end())),
            }
        }
        self.segs.push_back(seg);
        self.sent(order, seq);
    }

    /// The markings made since the last call, in order (each one counts in
    /// Linux's `tp->lost`).
    pub fn take_marked(&mut self) -> Vec<Marked> {
        std::mem::take(&mut self.marked)
    }

    fn note_marked(marked: &mut Vec<Marked>, s: &Seg) {
        marked.push(Marked {
            seq: s.seq,
            len: s.len,
            tx_order: s.tx_order,
            record: s.record,
        });
    }

    pub fn packets_out(&self) -> u32 {
        self.segs.len() as u32
    }
    pub fn sacked_out(&self) -> u32 {
        self.sacked_out
    }
    pub fn lost_out(&self) -> u32 {
        self.lost_out
    }
    pub fn retrans_out(&self) -> u32 {
        self.retrans_out
    }
    /// Linux `tcp_packets_in_flight` (RFC 6675 "pipe" in segments).
    pub fn in_flight(&self) -> u32 {
        self.packets_out() - (self.sacked_out + self.lost_out) + self.retrans_out
    }
    pub fn has_lost_to_retransmit(&self) -> bool {
        self.lost_pending > 0
    }
    pub fn front(&self) -> Option<&Seg> {
        self.segs.front()
    }
    pub fn get(&self, i: usize) -> &Seg {
        &self.segs[i]
    }
    pub fn iter(&self) -> impl Iterator<Item = &Seg> {
        self.segs.iter()
    }

    /// Removes segments wholly below `ack`, calling `f` with each removed
    /// segment before its counters are released.
    #[inline(always)]
    pub fn ack_cumulative(&mut self, ack: u64, mut f: impl FnMut(&Seg)) {
        while let Some(s) = self.segs.front() {
            if s.end() > ack {
                break;
            }
            let s = self.segs.pop_front().expect("front exists");
            if !s.sacked {
                // The lowest segment held: the first run starts with it.
                let run = self.unsacked.front_mut().expect("an un-SACKed segment is in a run");
                debug_assert_eq!(run.0, s.seq);
                run.0 = s.end();
                if run.0 >= run.1 {
                    self.unsacked.pop_front();
                }
            }
            f(&s);
            self.release(&s);
        }
    }

    /// A transmission numbered `order` of the segment at `seq`.
    fn sent(&mut self, order: u64, seq: u64) {
        debug_assert!(self.tsorted.back().is_none_or(|&(o, _)| o < order));
        self.tsorted.push_back((order, seq));
        if self.tsorted.len() > 2 * self.segs.len() + 1024 {
            self.rebuild_tsorted();
        }
    }

    /// The transmission queue from the segments (after an undo makes
    /// segments RACK candidates again, or when stale entries pile up).
    fn rebuild_tsorted(&mut self) {
        let mut live: Vec<(u64, u64)> = self
            .segs
            .iter()
            .filter(|s| !s.sacked && (!s.lost || s.retrans))
            .map(|s| (s.tx_order, s.seq))
            .collect();
        live.sort_unstable();
        self.tsorted = live.into();
    }

    /// Index of the segment starting at `seq`, if still held.
    /// The index of the first segment whose start is at or above `seq`
    /// (`segs.partition_point(|s| s.seq < seq)`). The segments are
    /// contiguous and almost all one MSS long, so the index is guessed from
    /// the front segment's length and checked; the binary search runs only
    /// when the guess is wrong. The answer is the same either way; the
    /// guess reads one or two segments where the search read ~log2(window)
    /// of them, each on its own cache line (with 400 flows the scoreboards
    /// are out of cache, and the searches were ~4% of a 400-UE cell's
    /// time).
    #[inline]
    fn first_at_or_above(&self, seq: u64) -> usize {
        let n = self.segs.len();
        if let Some(front) = self.segs.front() {
            if seq <= front.seq {
                return 0;
            }
            if front.len > 0 {
                // At least 1: the front starts below seq.
                let g = (seq - front.seq).div_ceil(front.len as u64).min(n as u64) as usize;
                // The boundary: every segment before g starts below seq,
                // none from g on does.
                if self.segs[g - 1].seq < seq && (g == n || self.segs[g].seq >= seq) {
                    return g;
                }
            }
        }
        self.segs.partition_point(|s| s.seq < seq)
    }

    fn index_of(&self, seq: u64) -> Option<usize> {
        let i = self.first_at_or_above(seq);
        (i < self.segs.len() && self.segs[i].seq == seq).then_some(i)
    }

    /// Segment at `seq` waits for retransmission: the search starts at it.
    fn pending_at(&self, seq: u64) {
        if seq < self.lost_hint.get() {
            self.lost_hint.set(seq);
        }
    }

    fn release(&mut self, s: &Seg) {
        if s.sacked {
            self.sacked_out -= 1;
        }
        if s.lost {
            self.lost_out -= 1;
            if !s.retrans {
                self.lost_pending -= 1;
            }
        }
        if s.retrans {
            self.retrans_out -= 1;
        }
    }

    /// Marks segments inside [start, end) as SACKed, calling `f` with each
    /// newly SACKed segment. Returns how many were newly SACKed.
    pub fn sack(&mut self, start: u64, end: u64, mut f: impl FnMut(&Seg)) -> u32 {
        // Only un-SACKed segments starting inside the block can be newly
        // covered; those ending past it are not (segments are contiguous,
        // so at most the last candidate). They lie in the runs that meet
        // the block, and within a run they are consecutive segments.
        let mut n = 0;
        let mut r = self.unsacked.partition_point(|&(_, e)| e <= start);
        while r < self.unsacked.len() {
            let (rs, re) = self.unsacked[r];
            if rs >= end {
                break;
            }
            let from = rs.max(start);
            let mut i = self.first_at_or_above(from);
            let first = i;
            let mut span_end = from;
            let mut past = false;
            while i < self.segs.len() && self.segs[i].seq < re.min(end) {
                #[cfg(test)]
                self.scanned.set(self.scanned.get() + 1);
                let s = &mut self.segs[i];
                if s.end() > end {
                    past = true;
                    break;
                }
                s.sacked = true;
                self.sacked_out += 1;
                self.highest_sack = self.highest_sack.max(s.seq);
                if s.lost {
                    s.lost = false;
                    self.lost_out -= 1;
                    if !s.retrans {
                        self.lost_pending -= 1;
                    }
                }
                if s.retrans {
                    s.retrans = false;
                    self.retrans_out -= 1;
                }
                span_end = s.end();
                n += 1;
                f(&self.segs[i]);
                i += 1;
            }
            if i == first {
                // Nothing of this run is covered: its first candidate ends
                // past the block (so does everything above), or the block
                // starts inside its last segment.
                if past {
                    break;
                }
                r += 1;
                continue;
            }
            // [seq of `first`, span_end) is SACKed now: cut it from the run.
            let cut = self.segs[first].seq;
            match (cut == rs, span_end == re) {
                (true, true) => {
                    self.unsacked.remove(r);
                }
                (true, false) => {
                    self.unsacked[r].0 = span_end;
                    r += 1;
                }
                (false, true) => {
                    self.unsacked[r].1 = cut;
                    r += 1;
                }
                (false, false) => {
                    self.unsacked[r].1 = cut;
                    self.unsacked.insert(r + 1, (span_end, re));
                    r += 2;
                }
            }
            if past || span_end < re {
                // Stopped inside the run: at the block's end.
                break;
            }
        }
        n
    }

    /// RFC 6675 `IsLost`: marks every un-SACKed segment that has at least
    /// `dupthresh` SACKed segments above it. Returns how many were newly
    /// marked.
    pub fn mark_lost_by_sack(&mut self, dupthresh: u32) -> u32 {
        if self.sacked_out < dupthresh {
            return 0;
        }
        let mut above = 0u32;
        let mut newly = 0;
        // Walk the un-SACKed segments from the top down; the segments
        // between two of them are all SACKed. Those above the highest SACKed
        // segment have nothing SACKed above them: start there.
        let (mut prev, from) = match self.index_of(self.highest_sack) {
            Some(i) => (i + 1, self.highest_sack),
            None => (self.segs.len(), u64::MAX),
        };
        // Within a run no segment is SACKed, so the count above changes
        // only between runs: a run below fewer than `dupthresh` is skipped
        // whole.
        let runs = self.unsacked.partition_point(|&(rs, _)| rs < from);
        'runs: for r in (0..runs).rev() {
            let (rs, re) = self.unsacked[r];
            let lo = self.first_at_or_above(rs);
            let hi = if re <= from {
                self.first_at_or_above(re)
            } else {
                self.first_at_or_above(from)
            };
            #[cfg(test)]
            self.scanned.set(self.scanned.get() + 1);
            above = above.saturating_add((prev - hi) as u32);
            prev = lo;
            if above < dupthresh {
                continue;
            }
            for i in (lo..hi).rev() {
                let s = &mut self.segs[i];
                if s.lost {
                    // Everything below was marked when this one was.
                    break 'runs;
                }
                s.lost = true;
                self.lost_out += 1;
                if s.retrans {
                    // Its retransmission is deemed lost too.
                    s.retrans = false;
                    self.retrans_out -= 1;
                }
                Self::note_marked(&mut self.marked, s);
                if s.seq < self.lost_hint.get() {
                    self.lost_hint.set(s.seq);
                }
                self.lost_pending += 1;
                newly += 1;
            }
        }
        // Marked from the top down; queue them in sequence order.
        let n = self.marked.len();
        self.marked[n - newly as usize..].reverse();
        newly
    }

    /// RACK's time-based loss detection (RFC 8985 §6.2 step 5, Linux
    /// `tcp_rack_detect_loss`): every un-SACKed segment sent before the most
    /// recently sent delivered segment (transmission number `rack_order`) is
    /// lost once `rack_rtt + reo_wnd` has passed since it was sent —
    /// including a segment whose retransmission is outstanding (a lost
    /// retransmission). Returns how many were newly marked and the longest
    /// wait of those not yet due (Linux arms the reordering timer for it).
    pub fn rack_detect_loss(
        &mut self,
        now: SimTime,
        rack_order: u64,
        rack_rtt: SimDuration,
        reo_wnd: SimDuration,
    ) -> (u32, Option<SimDuration>) {
        let mut newly = 0;
        let mut wait: Option<SimDuration> = None;
        let mut lowest = u64::MAX;
        self.kept.clear();
        while let Some(&(order, seq)) = self.tsorted.front() {
            // Everything further was sent after the reference.
            if order >= rack_order {
                break;
            }
            self.tsorted.pop_front();
            #[cfg(test)]
            self.scanned.set(self.scanned.get() + 1);
            let Some(i) = self.index_of(seq) else {
                continue; // acknowledged
            };
            let s = &mut self.segs[i];
            if s.tx_order != order || s.sacked || (s.lost && !s.retrans) {
                continue; // sent again since, or no longer a candidate
            }
            let deadline = s.tx_time + rack_rtt + reo_wnd;
            if deadline <= now {
                if s.retrans {
                    s.retrans = false;
                    self.retrans_out -= 1;
                }
                if !s.lost {
                    s.lost = true;
                    self.lost_out += 1;
                }
                lowest = lowest.min(s.seq);
                self.lost_pending += 1;
                newly += 1;
                Self::note_marked(&mut self.marked, s);
            } else {
                let remaining = deadline.saturating_since(now);
                wait = Some(wait.map_or(remaining, |w| w.max(remaining)));
                self.kept.push((order, seq));
            }
        }
        for &e in self.kept.iter().rev() {
            self.tsorted.push_front(e);
        }
        self.pending_at(lowest);
        // The walk went in transmission order, so the markings are queued in
        // the order Linux marks them.
        (newly, wait)
    }

    /// A tail loss probe retransmits segment `i` (Linux
    /// `__tcp_retransmit_skb` from `tcp_send_loss_probe`): sent again, but
    /// not counted as a retransmission in flight (`TCPCB_SACKED_RETRANS`
    /// is not set).
    pub fn on_probe_retransmit(&mut self, i: usize, now: SimTime, order: u64, snap: TxSnapshot, record: PacketRecord) {
        let s = &mut self.segs[i];
        s.tx_time = now;
        s.tx_count += 1;
        s.tx_order = order;
        s.snap = snap;
        s.record = record;
        let seq = s.seq;
        self.sent(order, seq);
    }

    pub fn back(&self) -> Option<&Seg> {
        self.segs.back()
    }

    /// Marks the first un-SACKed segment lost (NewReno fast retransmit and
    /// partial ACKs). Returns whether it was newly marked.
    pub fn mark_head_lost(&mut self) -> bool {
        let Some(s) = self.segs.iter_mut().find(|s| !s.sacked) else {
            return false;
        };
        if s.lost && !s.retrans {
            return false;
        }
        if s.retrans {
            s.retrans = false;
            self.retrans_out -= 1;
        }
        if !s.lost {
            s.lost = true;
            self.lost_out += 1;
        }
        let seq = s.seq;
        Self::note_marked(&mut self.marked, s);
        self.pending_at(seq);
        self.lost_pending += 1;
        true
    }

    /// Retransmission timeout (Linux `tcp_timeout_mark_lost`): every
    /// un-SACKed segment is lost, and a retransmission of a segment already
    /// marked lost is lost again. With RACK (`rack_rtt` given), a segment
    /// other than the head sent less than `rack_rtt` ago is spared
    /// (`tcp_rack_skb_timeout` > 0: "don't mark recently sent ones lost
    /// yet"). Returns the markings, counted as Linux's `tp->lost`.
    pub fn mark_lost_on_timeout(&mut self, now: SimTime, rack_rtt: Option<SimDuration>) -> u32 {
        // The head is always marked (or already pending).
        if let Some(s) = self.segs.front() {
            self.pending_at(s.seq);
        }
        let mut n = 0;
        for (i, s) in self.segs.iter_mut().enumerate() {
            if s.sacked {
                continue;
            }
            if let Some(rtt) = rack_rtt {
                if i > 0 && now.saturating_since(s.tx_time) < rtt {
                    continue;
                }
            }
            if s.lost {
                if s.retrans {
                    s.retrans = false;
                    self.retrans_out -= 1;
                    self.lost_pending += 1;
                    n += 1;
                    Self::note_marked(&mut self.marked, s);
                }
            } else {
                s.lost = true;
                self.lost_out += 1;
                if !s.retrans {
                    self.lost_pending += 1;
                }
                n += 1;
                Self::note_marked(&mut self.marked, s);
            }
        }
        n
    }

    /// Forgets every loss mark (Linux `tcp_undo_cwnd_reduction` with
    /// `unmark_loss`): the segments are deemed still in flight. A
    /// retransmission in flight stays counted.
    pub fn unmark_lost(&mut self) {
        for s in self.segs.iter_mut() {
            s.lost = false;
        }
        self.lost_out = 0;
        self.lost_pending = 0;
        self.rebuild_tsorted();
    }

    /// The lowest lost segment not yet retransmitted, with its index.
    pub fn next_lost(&self) -> Option<usize> {
        if self.lost_pending == 0 {
            return None;
        }
        let from = self.first_at_or_above(self.lost_hint.get());
        let found = (from..self.segs.len()).find(|&i| {
            #[cfg(test)]
            self.scanned.set(self.scanned.get() + 1);
            let s = &self.segs[i];
            s.lost && !s.retrans
        });
        debug_assert!(
            found.is_some(),
            "lost_pending {} but none at or after the hint",
            self.lost_pending
        );
        let found = found.or_else(|| self.segs.iter().position(|s| s.lost && !s.retrans))?;
        self.lost_hint.set(self.segs[found].seq);
        Some(found)
    }

    /// Records a retransmission of segment `i` at `now`.
    pub fn on_retransmit(&mut self, i: usize, now: SimTime, order: u64, snap: TxSnapshot, record: PacketRecord) {
        let s = &mut self.segs[i];
        debug_assert!(!s.sacked);
        if s.lost && !s.retrans {
            self.lost_pending -= 1;
        }
        if !s.retrans {
            s.retrans = true;
            self.retrans_out += 1;
        }
        s.tx_time = now;
        s.tx_count += 1;
        s.tx_order = order;
        s.snap = snap;
        s.record = record;
        let seq = s.seq;
        self.sent(order, seq);
    }

    /// Highest SACKed sequence end (RFC 6675 HighACK-side bookkeeping).
    pub fn highest_sacked_end(&self) -> Option<u64> {
        if self.sacked_out == 0 {
            return None;
        }
        self.index_of(self.highest_sack).map(|i| self.segs[i].end())
    }

    /// Checks the counters against the segments (used by tests).
    pub fn consistent(&self) -> bool {
        let sacked = self.segs.iter().filter(|s| s.sacked).count() as u32;
        let lost = self.segs.iter().filter(|s| s.lost).count() as u32;
        let retrans = self.segs.iter().filter(|s| s.retrans).count() as u32;
        let pending = self.segs.iter().filter(|s| s.lost && !s.retrans).count() as u32;
        let no_sacked_lost = self.segs.iter().all(|s| !(s.sacked && (s.lost || s.retrans)));
        let hint_below_pending = self
            .segs
            .iter()
            .all(|s| !s.lost || s.retrans || s.seq >= self.lost_hint.get());
        // The runs are exactly the maximal stretches of un-SACKed segments.
        let mut runs: Vec<(u64, u64)> = Vec::new();
        for s in self.segs.iter().filter(|s| !s.sacked) {
            match runs.last_mut() {
                Some(r) if r.1 == s.seq => r.1 = s.end(),
                _ => runs.push((s.seq, s.end())),
            }
        }
        let unsacked_listed = runs.iter().eq(self.unsacked.iter());
        let none_sacked_above_highest = self.segs.iter().all(|s| !s.sacked || s.seq <= self.highest_sack);
        let highest_is_sacked =
            self.sacked_out == 0 || self.index_of(self.highest_sack).is_some_and(|i| self.segs[i].sacked);
        sacked == self.sacked_out
            && unsacked_listed
            && none_sacked_above_highest
            && highest_is_sacked
            && lost == self.lost_out
            && retrans == self.retrans_out
            && pending == self.lost_pending
            && no_sacked_lost
            && hint_below_pending
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A segment sent once at time zero, `order`-th.
    fn sent(seq: u64, len: u32, order: u64) -> Seg {
        Seg {
            seq,
            len,
            tx_time: SimTime::ZERO,
            tx_count: 1,
            tx_order: order,
            sacked: false,
            lost: false,
            retrans: false,
            snap: TxSnapshot::default(),
            record: PacketRecord::default(),
        }
    }

    fn board(n: u64) -> Scoreboard {
        let mut b = Scoreboard::default();
        for i in 0..n {
            b.push(sent(i * 100, 100, i));
        }
        b
    }

    /// Retransmits every lost segment, as the send loop does.
    fn retransmit_all(b: &mut Scoreboard, now: SimTime, first_order: u64) -> Vec<usize> {
        let mut order = first_order;
        let mut sent = Vec::new();
        while let Some(i) = b.next_lost() {
            b.on_retransmit(i, now, order, TxSnapshot::default(), PacketRecord::default());
            order += 1;
            sent.push(i);
        }
        sent
    }

    #[test]
    fn the_guessed_index_of_a_sequence_is_the_binary_searchs_on_random_scoreboards() {
        // Segments of one MSS with now and then a short one (and a short
        // front), acknowledged from the front; every sequence around and
        // between them.
        let mut rng = crate::engine::Rng::from_seed(11);
        for case in 0..300 {
            let mut b = Scoreboard::default();
            let mut seq = 1000 + rng.below(5000);
            let mss = 1 + rng.below(1500);
            for i in 0..rng.below(120) {
                let len = if rng.bernoulli(0.1) { 1 + rng.below(mss) } else { mss } as u32;
                b.push(sent(seq, len, i));
                seq += len as u64;
            }
            if rng.bernoulli(0.5) {
                let front = b.front().map_or(0, |s| s.seq);
                b.ack_cumulative(front + rng.below(3 * mss), |_| {});
            }
            let lo = b.front().map_or(0, |s| s.seq).saturating_sub(2 * mss);
            // Each segment's start and its neighbours, and random ones.
            let edges: Vec<u64> = b.iter().flat_map(|s| [s.seq - 1, s.seq, s.seq + 1]).collect();
            let random: Vec<u64> = (0..200).map(|_| lo + rng.below(seq + 2 * mss - lo)).collect();
            for q in edges.into_iter().chain(random).chain([lo, seq, seq + 1]) {
                let want = b.segs.partition_point(|s| s.seq < q);
                assert_eq!(b.first_at_or_above(q), want, "case {case}, sequence {q}");
            }
        }
    }

    #[test]
    fn retransmitting_a_window_of_lost_segments_looks_at_each_segment_a_bounded_number_of_times() {
        // A fuzz case (oracle, min_cwnd 65535, 0.5 s) took 53 s: the search
        // for the next lost segment started at the head every time.
        let n = 20_000;
        let mut b = board(n);
        assert_eq!(b.mark_lost_on_timeout(SimTime::ZERO, None), n as u32);
        let sent = retransmit_all(&mut b, SimTime::ZERO, n);
        assert_eq!(sent, (0..n as usize).collect::<Vec<_>>(), "lowest first, each once");
        assert!(
            b.scanned.get() <= 2 * n,
            "looked at {} segments for {n}",
            b.scanned.get()
        );
        assert!(b.consistent());
    }

    /// RACK's rule applied to every segment (the definition).
    fn rack_by_definition(
        b: &Scoreboard,
        now: SimTime,
        rack_order: u64,
        rack_rtt: SimDuration,
        reo_wnd: SimDuration,
    ) -> (Vec<u64>, Option<SimDuration>) {
        let mut lost = Vec::new();
        let mut wait: Option<SimDuration> = None;
        for s in b.iter() {
            if s.sacked || (s.lost && !s.retrans) || s.tx_order >= rack_order {
                continue;
            }
            let deadline = s.tx_time + rack_rtt + reo_wnd;
            if deadline <= now {
                lost.push(s.seq);
            } else {
                let r = deadline.saturating_since(now);
                wait = Some(wait.map_or(r, |w| w.max(r)));
            }
        }
        (lost, wait)
    }

    #[test]
    fn rack_marks_what_its_definition_marks_on_random_scoreboards() {
        let mut rng = crate::engine::Rng::from_seed(7);
        for case in 0..300 {
            let n = 1 + rng.below(200);
            let mut b = Scoreboard::default();
            let mut order = 0;
            for i in 0..n {
                b.push(Seg {
                    tx_time: SimTime::from_nanos(order * 1000),
                    ..sent(i * 100, 100, order)
                });
                order += 1;
                // Now and then: SACKs, a timeout with retransmissions, probes.
                if rng.bernoulli(0.05) {
                    let k = rng.below(i + 1);
                    b.sack(k * 100, (k + 1 + rng.below(3)) * 100, |_| {});
                }
                if rng.bernoulli(0.02) {
                    b.mark_lost_on_timeout(SimTime::from_nanos(order * 1000), None);
                    for _ in 0..rng.below(10) {
                        let Some(j) = b.next_lost() else { break };
                        b.on_retransmit(
                            j,
                            SimTime::from_nanos(order * 1000),
                            order,
                            TxSnapshot::default(),
                            PacketRecord::default(),
                        );
                        order += 1;
                    }
                }
                if rng.bernoulli(0.02) {
                    let j = rng.below(b.packets_out() as u64) as usize;
                    if !b.get(j).sacked {
                        b.on_probe_retransmit(
                            j,
                            SimTime::from_nanos(order * 1000),
                            order,
                            TxSnapshot::default(),
                            PacketRecord::default(),
                        );
                        order += 1;
                    }
                }
            }
            let rack_order = rng.below(order + 1);
            let now = SimTime::from_nanos(rng.below(order * 1000 + 5000));
            let (rtt, reo) = (
                SimDuration::from_nanos(rng.below(3000)),
                SimDuration::from_nanos(rng.below(1000)),
            );
            let (want, want_wait) = rack_by_definition(&b, now, rack_order, rtt, reo);
            let before: Vec<(u64, bool)> = b.iter().map(|s| (s.seq, s.lost && !s.retrans)).collect();
            let (newly, wait) = b.rack_detect_loss(now, rack_order, rtt, reo);
            let got: Vec<u64> = b
                .iter()
                .zip(&before)
                .filter(|(s, (_, was))| s.lost && !s.retrans && !was)
                .map(|(s, _)| s.seq)
                .collect();
            // A lost retransmission was pending before only if not retransmitted.
            assert_eq!(newly as usize, want.len(), "case {case}");
            assert!(got.iter().all(|q| want.contains(q)), "case {case}: {got:?} vs {want:?}");
            assert_eq!(wait, want_wait, "case {case}");
            assert!(b.consistent(), "case {case}");
        }
    }

    /// RFC 6675 `IsLost` over the whole window, top down, as the
    /// scoreboard did before it kept its list of un-SACKed segments:
    /// the segments `mark_lost_by_sack` must newly mark, in sequence order.
    fn is_lost_by_definition(b: &Scoreboard, dupthresh: u32) -> Vec<u64> {
        if b.sacked_out() < dupthresh {
            return vec![];
        }
        let (mut above, mut marked) = (0, vec![]);
        for s in b.iter().collect::<Vec<_>>().into_iter().rev() {
            if s.sacked {
                above += 1;
            } else if above >= dupthresh {
                if s.lost {
                    break;
                }
                marked.push(s.seq);
            }
        }
        marked.reverse();
        marked
    }

    #[test]
    fn sack_marking_agrees_with_rfc_6675_is_lost_on_random_scoreboards() {
        let mut rng = crate::engine::Rng::from_seed(11);
        for case in 0..400 {
            let n = 1 + rng.below(300);
            let mut b = board(n);
            let mut order = n;
            for _ in 0..rng.below(40) {
                match rng.below(4) {
                    0 | 1 => {
                        // Blocks on segment boundaries, and now and then one
                        // that starts or ends inside a segment.
                        let k = rng.below(n);
                        let start = k * 100 + if rng.bernoulli(0.2) { 50 } else { 0 };
                        let end = (k + 1 + rng.below(20)) * 100 - if rng.bernoulli(0.2) { 50 } else { 0 };
                        let want: Vec<u64> = b
                            .iter()
                            .filter(|s| !s.sacked && s.seq >= start && s.end() <= end)
                            .map(|s| s.seq)
                            .collect();
                        let mut got = Vec::new();
                        let newly = b.sack(start, end, |s| got.push(s.seq));
                        assert!(newly <= 20, "case {case}");
                        assert_eq!(newly as usize, got.len(), "case {case}");
                        assert_eq!(got, want, "case {case}: block [{start}, {end})");
                    }
                    2 => {
                        let dupthresh = 1 + rng.below(6) as u32;
                        let want = is_lost_by_definition(&b, dupthresh);
                        let newly = b.mark_lost_by_sack(dupthresh);
                        let got: Vec<u64> = b.take_marked().iter().map(|m| m.seq).collect();
                        assert_eq!(newly as usize, want.len(), "case {case}");
                        assert_eq!(got, want, "case {case}");
                    }
                    _ => {
                        let Some(j) = b.next_lost() else { continue };
                        b.on_retransmit(
                            j,
                            SimTime::ZERO + SimDuration::from_millis(1),
                            order,
                            TxSnapshot::default(),
                            PacketRecord::default(),
                        );
                        order += 1;
                    }
                }
                if rng.bernoulli(0.1) {
                    let una = b.front().map_or(0, |s| s.seq) + rng.below(5) * 100;
                    b.ack_cumulative(una, |_| {});
                }
                assert!(b.consistent(), "case {case}");
            }
        }
    }

    #[test]
    fn an_ack_over_a_long_sacked_run_costs_what_it_changes_not_the_window() {
        // A fuzz case (a 500 Gbit/s path whose ACKs cross 20 Mbit/s) spent a
        // minute per simulated second: each ACK re-walked a SACK block of
        // ~10^5 segments, and RFC 6675's walk crossed it again.
        let n = 200_000;
        let mut b = board(n);
        b.sack(100, n * 100, |_| {});
        assert_eq!(b.mark_lost_by_sack(3), 1, "the hole at the bottom");
        b.scanned.set(0);
        for k in 0..1000u64 {
            // Each ACK extends the block by one segment and repeats it.
            b.push(Seg {
                seq: (n + k) * 100,
                len: 100,
                tx_time: SimTime::ZERO,
                tx_count: 1,
                tx_order: n + k,
                sacked: false,
                lost: false,
                retrans: false,
                snap: TxSnapshot::default(),
                record: PacketRecord::default(),
            });
            assert_eq!(b.sack(100, (n + k + 1) * 100, |_| {}), 1);
            assert_eq!(b.mark_lost_by_sack(3), 0);
        }
        // Each ACK looks at the new segment and the hole below the block.
        assert!(b.scanned.get() <= 2 * 1000, "looked at {} segments", b.scanned.get());
        assert!(b.consistent());
    }

    #[test]
    fn rack_stops_at_the_first_segment_sent_after_the_one_delivered() {
        // A fuzz case (initial_cwnd 741,533 into a 1000-packet queue) spent
        // 6 s on 11,000 events: each ACK looked at every segment in flight.
        let n = 100_000;
        let mut b = board(n);
        let (newly, _) = b.rack_detect_loss(
            SimTime::ZERO + SimDuration::from_millis(100),
            10,
            SimDuration::from_millis(1),
            SimDuration::ZERO,
        );
        assert_eq!(newly, 10, "segments sent before the one delivered");
        assert!(b.scanned.get() <= 11, "looked at {} segments", b.scanned.get());
        assert!(b.consistent());
    }

    #[test]
    fn a_segment_marked_lost_below_the_search_hint_is_retransmitted_first() {
        let mut b = board(100);
        b.mark_lost_on_timeout(SimTime::ZERO, None);
        let t1 = SimTime::ZERO + SimDuration::from_millis(1);
        // Retransmit the first 50, then stop (the window is full).
        for k in 0..50 {
            let i = b.next_lost().unwrap();
            assert_eq!(i, k);
            b.on_retransmit(i, t1, 1000 + k as u64, TxSnapshot::default(), PacketRecord::default());
        }
        assert_eq!(b.next_lost(), Some(50));
        // RACK: the retransmissions of segments 0..10 are lost too.
        let (newly, _) = b.rack_detect_loss(
            t1 + SimDuration::from_millis(100),
            1010,
            SimDuration::from_millis(10),
            SimDuration::ZERO,
        );
        assert_eq!(newly, 10);
        assert!(b.consistent());
        let again = retransmit_all(&mut b, t1 + SimDuration::from_millis(100), 2000);
        let expect: Vec<usize> = (0..10).chain(50..100).collect();
        assert_eq!(again, expect);
        assert!(b.consistent());
    }

    #[test]
    fn a_hole_becomes_lost_after_three_segments_above_it_are_sacked() {
        let mut b = board(10);
        b.sack(100, 300, |_| {});
        assert_eq!(b.mark_lost_by_sack(3), 0);
        b.sack(300, 400, |_| {});
        assert_eq!(b.mark_lost_by_sack(3), 1);
        assert_eq!(b.next_lost(), Some(0));
        assert_eq!(b.in_flight(), 10 - 3 - 1);
        assert!(b.consistent());
    }

    #[test]
    fn a_retransmission_counts_in_flight_until_sacked_or_acked() {
        let mut b = board(5);
        b.sack(100, 500, |_| {});
        b.mark_lost_by_sack(3);
        b.on_retransmit(
            0,
            SimTime::from_nanos(1),
            100,
            TxSnapshot::default(),
            PacketRecord::default(),
        );
        assert_eq!(b.in_flight(), 1);
        assert!(!b.has_lost_to_retransmit());
        let mut removed = 0;
        b.ack_cumulative(500, |_| removed += 1);
        assert_eq!(removed, 5);
        assert_eq!((b.packets_out(), b.in_flight()), (0, 0));
        assert!(b.consistent());
    }

    #[test]
    fn a_timeout_marks_everything_unsacked_lost() {
        let mut b = board(6);
        b.sack(200, 300, |_| {});
        assert_eq!(b.mark_lost_on_timeout(SimTime::ZERO, None), 5);
        assert_eq!(b.in_flight(), 0);
        assert_eq!(b.next_lost(), Some(0));
        assert!(b.consistent());
    }

    #[test]
    fn with_rack_a_timeout_spares_segments_sent_within_the_last_rack_rtt_but_not_the_head() {
        let ms = |v: u64| SimTime::from_nanos(v * 1_000_000);
        let mut b = board(4);
        for i in 0..4 {
            b.segs[i].tx_time = ms(100 * i as u64);
        }
        // At 350 ms with a 100 ms RACK RTT: segment 3 (sent at 300 ms) is
        // spared; 0, 1, 2 are marked.
        let n = b.mark_lost_on_timeout(ms(350), Some(crate::units::SimDuration::from_millis(100)));
        assert_eq!(n, 3);
        assert!(!b.get(3).lost);
        // The head is always marked, however recent.
        let mut b = board(2);
        b.segs[0].tx_time = ms(349);
        b.segs[1].tx_time = ms(349);
        assert_eq!(
            b.mark_lost_on_timeout(ms(350), Some(crate::units::SimDuration::from_millis(100))),
            1
        );
        assert!(b.get(0).lost && !b.get(1).lost);
        assert!(b.consistent());
    }

    #[test]
    fn a_timeout_counts_a_retransmission_already_marked_lost_as_lost_again() {
        let mut b = board(3);
        b.mark_head_lost();
        b.on_retransmit(
            0,
            SimTime::from_nanos(1),
            10,
            TxSnapshot::default(),
            PacketRecord::default(),
        );
        assert_eq!(b.retrans_out(), 1);
        assert_eq!(b.mark_lost_on_timeout(SimTime::from_nanos(2), None), 3);
        assert_eq!((b.retrans_out(), b.lost_out(), b.in_flight()), (0, 3, 0));
        assert_eq!(b.next_lost(), Some(0));
        assert!(b.consistent());
    }

    #[test]
    fn rack_marks_a_segment_lost_once_a_later_one_is_delivered_and_its_rtt_has_passed() {
        let ms = |v: u64| SimTime::from_nanos(v * 1_000_000);
        let mut b = board(4);
        for i in 0..4 {
            b.segs[i].tx_time = ms(i as u64);
        }
        b.sack(300, 400, |_| {});
        let rtt = crate::units::SimDuration::from_millis(40);
        // Segment 3 (order 3) was delivered with a 40 ms RTT; at 41 ms only
        // segments 0 and 1 have waited that long.
        let (n, wait) = b.rack_detect_loss(ms(41), 3, rtt, crate::units::SimDuration::ZERO);
        assert_eq!(n, 2);
        assert_eq!(wait, Some(crate::units::SimDuration::from_millis(1)));
        assert!(b.get(0).lost && b.get(1).lost && !b.get(2).lost);
        assert!(b.consistent());
    }

    #[test]
    fn rack_finds_a_lost_retransmission() {
        let ms = |v: u64| SimTime::from_nanos(v * 1_000_000);
        let mut b = board(3);
        b.mark_head_lost();
        b.on_retransmit(0, ms(10), 10, TxSnapshot::default(), PacketRecord::default());
        // Data sent after the retransmission (order 11) is delivered 40 ms later.
        b.segs[2].tx_order = 11;
        b.segs[2].tx_time = ms(11);
        b.sack(200, 300, |_| {});
        let (n, _) = b.rack_detect_loss(
            ms(51),
            11,
            crate::units::SimDuration::from_millis(40),
            crate::units::SimDuration::ZERO,
        );
        assert_eq!(n, 2, "segment 1 and the retransmission of segment 0");
        assert!(b.get(0).lost && !b.get(0).retrans);
        assert_eq!(b.next_lost(), Some(0));
        assert!(b.consistent());
    }

    #[test]
    fn sacking_a_partially_covered_segment_does_nothing() {
        let mut b = board(3);
        assert_eq!(b.sack(150, 300, |_| {}), 1);
        assert!(b.get(2).sacked && !b.get(1).sacked);
    }
}
