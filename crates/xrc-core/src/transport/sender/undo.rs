//! Undoing a window reduction that proves spurious (Linux `tcp_input.c`,
//! "Undo procedures": `tcp_init_undo`, `tcp_may_undo`,
//! `tcp_packet_delayed`, `tcp_undo_cwnd_reduction`, `tcp_try_undo_*`).
//!
//! A reduction (fast recovery or a timeout) remembers where it started
//! (`undo_marker`) and the window and threshold before it (`prior_cwnd`,
//! `prior_ssthresh`). It was spurious, and is undone, when either
//! - every retransmission since then came back as a D-SACK
//!   (`undo_retrans` counted down to 0, RFC 3708), or
//! - the ACK's timestamp echo predates the first retransmission
//!   (`tcp_packet_delayed`, the Eifel detection of RFC 3522): the original
//!   arrived, it was only delayed, or
//! - after a timeout, F-RTO (RFC 5682 §3, SACK-enhanced, Linux
//!   `tcp_frto = 2`) sees never-retransmitted data acknowledged.
//!
//! Undoing restores the window through the congestion control's
//! `undo_cwnd` (Reno's: the larger of the current and prior window) and
//! the prior ssthresh if larger, and, after a timeout or a partial ACK,
//! forgets which segments were marked lost.

use super::TcpSender;
use crate::transport::cc::CaState;
use crate::units::SimTime;

/// The state that lets a reduction be undone.
#[derive(Debug, Default)]
pub(super) struct UndoState {
    /// snd_una when the reduction that may be undone started (Linux
    /// `undo_marker`); `None` when there is nothing to undo.
    pub(super) marker: Option<u64>,
    /// Retransmissions since then not yet reported by a D-SACK (Linux
    /// `undo_retrans`); `None` before the first (Linux −1).
    pub(super) retrans: Option<u32>,
    /// ssthresh to restore (Linux `prior_ssthresh`); `None` (Linux 0): the
    /// reduction restores no window.
    pub(super) prior_ssthresh: Option<u32>,
    /// When the first retransmission of the episode left (Linux
    /// `retrans_stamp`).
    pub(super) retrans_stamp: Option<SimTime>,
    /// Segments reported by D-SACKs so far (Linux `dsack_dups`).
    pub(super) dsack_dups: u64,
}

impl UndoState {
    /// Linux `tcp_init_undo`: a reduction starts at `snd_una`; the
    /// retransmissions still in flight may come back as D-SACKs.
    pub(super) fn init(&mut self, snd_una: u64, retrans_out: u32) {
        self.marker = Some(snd_una);
        self.retrans = (retrans_out > 0).then_some(retrans_out);
    }

    /// Linux `tcp_retransmit_skb`'s bookkeeping for a retransmission sent
    /// at `now`.
    pub(super) fn on_retransmit(&mut self, now: SimTime) {
        self.retrans_stamp.get_or_insert(now);
        self.retrans = Some(self.retrans.unwrap_or(0) + 1);
    }

    /// `segs` retransmitted segments ending at `end` were reported by a
    /// D-SACK (`tcp_sacktag_one`, `tcp_check_dsack`).
    pub(super) fn on_dsack(&mut self, end: u64, segs: u32) {
        if let (Some(m), Some(r)) = (self.marker, self.retrans) {
            if r > 0 && end > m {
                self.retrans = Some(r.saturating_sub(segs));
            }
        }
    }

    /// Linux `tcp_packet_delayed`: the ACK's timestamp echo `ts_ecr`
    /// predates the first retransmission.
    pub(super) fn packet_delayed(&self, ts_ecr: SimTime) -> bool {
        self.retrans_stamp.is_some_and(|r| ts_ecr > SimTime::ZERO && ts_ecr < r)
    }

    /// Linux `tcp_may_undo`.
    pub(super) fn may_undo(&self, ts_ecr: SimTime) -> bool {
        self.marker.is_some() && (self.retrans == Some(0) || self.packet_delayed(ts_ecr))
    }
}

impl TcpSender {
    /// Linux `tcp_any_retrans_done`.
    pub(super) fn any_retrans_done(&self) -> bool {
        self.sb.retrans_out() > 0 || self.sb.front().is_some_and(|s| s.ever_retransmitted())
    }

    /// Linux `tcp_undo_cwnd_reduction`.
    pub(super) fn undo_cwnd_reduction(&mut self, now: SimTime, unmark_loss: bool) {
        if unmark_loss {
            self.sb.unmark_lost();
        }
        if let Some(prior_ssthresh) = self.undo.prior_ssthresh {
            let cwnd = self.cc.undo_cwnd(now, &self.w, self.rec.prior_cwnd);
            self.w.cwnd = cwnd.clamp(1, self.w.cwnd_clamp);
            if prior_ssthresh > self.w.ssthresh {
                self.w.ssthresh = prior_ssthresh;
            }
        }
        self.undo.marker = None;
        // "Force RACK to re-exam losses."
        self.rack.advanced = true;
    }

    fn may_undo(&self, ts_ecr: SimTime) -> bool {
        self.cfg.undo && self.undo.may_undo(ts_ecr)
    }

    /// Linux `tcp_try_undo_recovery`: Recovery or Loss is over (snd_una
    /// reached high_seq); undo if it was spurious, and open.
    pub(super) fn try_undo_recovery(&mut self, now: SimTime, ts_ecr: SimTime) {
        if self.may_undo(ts_ecr) {
            self.undo_cwnd_reduction(now, false);
            if self.rec.state == CaState::Loss {
                self.stats.loss_undos += 1;
            } else {
                self.stats.full_undos += 1;
            }
        }
        self.set_state(now, CaState::Open);
    }

    /// Linux `tcp_try_undo_dsack`: D-SACKs reported every retransmission.
    pub(super) fn try_undo_dsack(&mut self, now: SimTime) -> bool {
        if self.cfg.undo && self.undo.marker.is_some() && self.undo.retrans == Some(0) {
            self.undo_cwnd_reduction(now, false);
            self.stats.dsack_undos += 1;
            return true;
        }
        false
    }

    /// Linux `tcp_try_undo_loss`: in Loss, after a partial ACK (timestamps,
    /// D-SACKs) or when F-RTO found the timeout spurious (`frto_undo`).
    pub(super) fn try_undo_loss(&mut self, now: SimTime, ts_ecr: SimTime, frto_undo: bool) -> bool {
        if !(self.cfg.undo && (frto_undo || self.undo.may_undo(ts_ecr))) {
            return false;
        }
        self.undo_cwnd_reduction(now, true);
        self.stats.loss_undos += 1;
        if frto_undo {
            self.stats.spurious_rtos += 1;
        }
        self.rto.retransmits = 0;
        self.set_state(now, CaState::Open);
        true
    }

    /// Linux `tcp_try_undo_partial`: a partial ACK in Recovery whose
    /// timestamp shows the hole was filled by the delayed original. Returns
    /// `true` when retransmissions are still out: new data may go, but
    /// nothing more is retransmitted on this ACK.
    pub(super) fn try_undo_partial(&mut self, now: SimTime, ts_ecr: SimTime) -> bool {
        if !(self.cfg.undo && self.undo.marker.is_some() && self.undo.packet_delayed(ts_ecr)) {
            return false;
        }
        if self.sb.retrans_out() > 0 {
            return true;
        }
        if !self.any_retrans_done() {
            self.undo.retrans_stamp = None;
        }
        self.undo_cwnd_reduction(now, true);
        self.stats.partial_undos += 1;
        self.try_keep_open(now);
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> SimTime {
        SimTime::from_nanos(v * 1_000_000)
    }

    #[test]
    fn nothing_can_be_undone_before_a_reduction_starts() {
        let u = UndoState::default();
        assert!(!u.may_undo(ms(1)));
    }

    #[test]
    fn a_reduction_is_undone_once_every_retransmission_was_dsacked() {
        let mut u = UndoState::default();
        u.init(1000, 0);
        // No retransmission yet: nothing proves the reduction spurious.
        assert!(!u.may_undo(SimTime::ZERO));
        u.on_retransmit(ms(10));
        u.on_retransmit(ms(11));
        u.on_dsack(2000, 1);
        assert!(!u.may_undo(SimTime::ZERO));
        // A D-SACK of data from before the reduction does not count.
        u.on_dsack(900, 1);
        assert!(!u.may_undo(SimTime::ZERO));
        u.on_dsack(3000, 1);
        assert!(u.may_undo(SimTime::ZERO));
    }

    #[test]
    fn a_timestamp_echo_older_than_the_first_retransmission_proves_the_original_arrived() {
        let mut u = UndoState::default();
        u.init(0, 0);
        u.on_retransmit(ms(300));
        u.on_retransmit(ms(900));
        // The echo of a segment sent at 100 ms: the original got through.
        assert!(u.packet_delayed(ms(100)));
        assert!(u.may_undo(ms(100)));
        // The echo of the first retransmission: no evidence.
        assert!(!u.may_undo(ms(300)));
        // No timestamp at all: no evidence.
        assert!(!u.may_undo(SimTime::ZERO));
    }
}
