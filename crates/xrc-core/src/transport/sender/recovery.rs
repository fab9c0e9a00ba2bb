//! The loss-recovery state machine (Linux `tcp_fastretrans_alert` and the
//! functions it calls): the congestion state, entering and leaving Recovery
//! and Loss, F-RTO (RFC 5682, `tcp_process_loss`), proportional rate
//! reduction (RFC 6937), and NewReno recovery without SACK (RFC 6582).

use super::config::{LossDetection, Recovery};
use super::TcpSender;
use crate::transport::cc::{CaEvent, CaState, INFINITE_SSTHRESH};
use crate::units::SimTime;

/// The state of loss recovery.
#[derive(Debug, Default)]
pub(super) struct RecoveryState {
    /// Linux `icsk_ca_state`.
    pub(super) state: CaState,
    /// Recovery point (Linux `high_seq`, RFC 6582 `recover`).
    pub(super) high_seq: u64,
    /// The window when the reduction started (RFC 6937 `RecoverFS`), segments.
    pub(super) prior_cwnd: u32,
    /// Segments delivered since recovery started (RFC 6937 `prr_delivered`).
    pub(super) prr_delivered: u32,
    /// Segments sent since recovery started (RFC 6937 `prr_out`).
    pub(super) prr_out: u32,
    /// NewReno duplicate-ACK count.
    pub(super) dupacks: u32,
    /// Segments marked lost over the connection's life (Linux `tp->lost`).
    pub(super) lost_total: u64,
    /// Segments marked lost while processing the current event.
    pub(super) marked_lost: u32,
    /// F-RTO is watching the current timeout (Linux `tp->frto`).
    pub(super) frto: bool,
    /// RACK armed the reordering timer while processing the current ACK
    /// (the RTO and probe timers are then left alone).
    pub(super) reo_armed: bool,
}

impl RecoveryState {
    /// Linux `tcp_init_cwnd_reduction`'s bookkeeping: the reduction starts
    /// from `cwnd` with nothing delivered or sent yet.
    pub(super) fn init_reduction(&mut self, cwnd: u32) {
        self.prior_cwnd = cwnd;
        self.prr_delivered = 0;
        self.prr_out = 0;
    }

    /// Proportional rate reduction, RFC 6937 as Linux `tcp_cwnd_reduction`:
    /// the window that lets out what PRR allows after `newly_acked_sacked`
    /// more segments were delivered, with `in_flight` segments in flight.
    /// `None` when nothing was delivered (the window stays).
    pub(super) fn prr_cwnd(
        &mut self,
        newly_acked_sacked: u32,
        newly_lost: u32,
        snd_una_advanced: bool,
        in_flight: u32,
        ssthresh: u32,
    ) -> Option<u32> {
        if newly_acked_sacked == 0 || self.prior_cwnd == 0 {
            return None;
        }
        let in_flight = in_flight as i64;
        let ssthresh = ssthresh as i64;
        let delta = ssthresh - in_flight;
        self.prr_delivered += newly_acked_sacked;
        let mut sndcnt: i64 = if delta < 0 {
            // Proportional part: sndcnt = ceil(prr_delivered * ssthresh / RecoverFS) - prr_out
            let dividend = ssthresh * self.prr_delivered as i64 + self.prior_cwnd as i64 - 1;
            dividend / self.prior_cwnd as i64 - self.prr_out as i64
        } else {
            // Slow-start reduction bound.
            let mut s = (self.prr_delivered as i64 - self.prr_out as i64).max(newly_acked_sacked as i64);
            if snd_una_advanced && newly_lost == 0 {
                s += 1;
            }
            s.min(delta)
        };
        // Force a fast retransmit on entering recovery.
        sndcnt = sndcnt.max(if self.prr_out > 0 { 0 } else { 1 });
        Some((in_flight + sndcnt).max(1) as u32)
    }
}

/// What the ACK asks to (re)send once the window is updated (Linux
/// `REXMIT_*`, acted on by `tcp_xmit_recovery`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Rexmit {
    /// No loss recovery: only new data may go.
    None,
    /// Retransmit what is marked lost, then new data.
    Lost,
    /// F-RTO step 2.b: new data first; if none can go, fall back to
    /// retransmitting.
    New,
}

/// What the ACK being processed did, as `tcp_fastretrans_alert` reads the
/// ACK flags.
#[derive(Copy, Clone, Debug)]
pub(super) struct AckInfo {
    /// snd_una advanced (`FLAG_SND_UNA_ADVANCED`).
    pub(super) snd_una_advanced: bool,
    /// New data was SACKed (`FLAG_DATA_SACKED`).
    pub(super) data_sacked: bool,
    /// The ACK carried a valid D-SACK (`FLAG_DSACKING_ACK`).
    pub(super) dsack: bool,
    /// Never-retransmitted data below high_seq was (S)ACKed
    /// (`FLAG_ORIG_SACK_ACKED`).
    pub(super) orig_sack_acked: bool,
    /// A pure duplicate ACK (`num_dupack`).
    pub(super) dupack: bool,
    /// The timestamp echo.
    pub(super) ts_ecr: SimTime,
}

impl TcpSender {
    /// Linux `tcp_ack_is_dubious`: only such ACKs go through the state
    /// machine.
    pub(super) fn ack_is_dubious(&self, a: &AckInfo) -> bool {
        !a.snd_una_advanced || a.data_sacked || a.dsack || self.rec.state != CaState::Open
    }

    /// Linux `tcp_fastretrans_alert` with SACK: leave a finished state,
    /// undo what proved spurious, detect losses, enter Recovery. Returns
    /// what to send.
    pub(super) fn fastretrans_alert(&mut self, now: SimTime, a: &AckInfo) -> Rexmit {
        // D. State exit conditions: high_seq is acknowledged.
        if self.rec.state == CaState::Open {
            self.undo.retrans_stamp = None;
        } else if self.send.snd_una >= self.rec.high_seq {
            match self.rec.state {
                // CWR is held until something above high_seq is acknowledged.
                CaState::Cwr if self.send.snd_una != self.rec.high_seq => {
                    self.end_cwnd_reduction(now);
                    self.set_state(now, CaState::Open);
                }
                CaState::Recovery => {
                    self.try_undo_recovery(now, a.ts_ecr);
                    self.end_cwnd_reduction(now);
                }
                _ => {}
            }
        }
        // E. Process the state.
        match self.rec.state {
            CaState::Recovery => {
                if a.snd_una_advanced && self.try_undo_partial(now, a.ts_ecr) {
                    return Rexmit::None;
                }
                if self.try_undo_dsack(now) {
                    self.try_keep_open(now);
                }
                self.identify_loss(now);
                if self.rec.state != CaState::Recovery {
                    if !self.time_to_recover() {
                        return Rexmit::None;
                    }
                    self.enter_recovery(now);
                }
                return Rexmit::Lost;
            }
            CaState::Loss => {
                let rexmit = self.process_loss(now, a);
                let lost_retrans = self.identify_loss(now);
                // Carry on below only if the timeout was undone or a
                // retransmission was lost again.
                if !(self.rec.state == CaState::Open || lost_retrans) {
                    return rexmit;
                }
            }
            _ => {}
        }
        if matches!(self.rec.state, CaState::Open | CaState::Disorder) {
            self.try_undo_dsack(now);
        }
        self.identify_loss(now);
        if !self.time_to_recover() {
            self.try_to_open(now);
            return Rexmit::None;
        }
        self.enter_recovery(now);
        Rexmit::Lost
    }

    /// Linux `tcp_process_loss` with F-RTO (RFC 5682 §3.1, SACK-enhanced):
    /// an ACK in Loss.
    fn process_loss(&mut self, now: SimTime, a: &AckInfo) -> Rexmit {
        let recovered = self.send.snd_una >= self.rec.high_seq;
        if a.snd_una_advanced && self.try_undo_loss(now, a.ts_ecr, false) {
            return Rexmit::None;
        }
        if self.rec.frto {
            // Step 3.b: the timeout was spurious if data never retransmitted
            // is (S)ACKed.
            if a.orig_sack_acked && self.try_undo_loss(now, a.ts_ecr, true) {
                return Rexmit::None;
            }
            if self.send.snd_nxt > self.rec.high_seq {
                // Step 3.a: new data went out after the timeout, and the
                // ACK still shows holes: the loss was real.
                if a.data_sacked || a.dupack {
                    self.rec.frto = false;
                }
            } else if a.snd_una_advanced && !recovered {
                self.rec.high_seq = self.send.snd_nxt;
                // Step 2.b: send new data rather than retransmitting; if
                // there is none, fall back to conventional recovery.
                if self.has_new_data() {
                    return Rexmit::New;
                }
                self.rec.frto = false;
            }
        }
        if recovered {
            // Step 2.a and the first part of 3.a.
            self.try_undo_recovery(now, a.ts_ecr);
            return Rexmit::None;
        }
        Rexmit::Lost
    }

    /// Linux `tcp_identify_packet_loss`: RACK (or, with
    /// `loss_detection = "dupthresh"`, RFC 6675's rule) marks losses.
    /// Returns whether a retransmission was found lost
    /// (`FLAG_LOST_RETRANS`).
    pub(super) fn identify_loss(&mut self, now: SimTime) -> bool {
        if self.sb.packets_out() == 0 {
            return false;
        }
        let prior_retrans = self.sb.retrans_out();
        let n = match self.cfg.loss_detection {
            LossDetection::Dupthresh => {
                let n = self.sb.mark_lost_by_sack(self.cfg.dupthresh);
                self.notify_lost(now);
                n
            }
            // Linux tcp_rack_mark_lost: only when an ACK brought new
            // delivery information.
            LossDetection::Rack if self.rack.advanced => {
                self.rack.advanced = false;
                self.rack_detect_loss(now)
            }
            LossDetection::Rack => 0,
        };
        self.rec.marked_lost += n;
        self.sb.retrans_out() < prior_retrans
    }

    /// Linux `tcp_time_to_recover`: a loss is marked, or (without RACK)
    /// more than `reordering` segments are SACKed.
    fn time_to_recover(&self) -> bool {
        self.sb.lost_out() > 0
            || (self.cfg.loss_detection == LossDetection::Dupthresh && self.sb.sacked_out() >= self.cfg.dupthresh)
    }

    /// Linux `tcp_try_keep_open`: Disorder while anything is SACKed, lost
    /// or retransmitted, otherwise Open.
    pub(super) fn try_keep_open(&mut self, now: SimTime) {
        let state = if self.sb.sacked_out() + self.sb.lost_out() > 0 || self.any_retrans_done() {
            CaState::Disorder
        } else {
            CaState::Open
        };
        if self.rec.state != state {
            self.set_state(now, state);
            self.rec.high_seq = self.send.snd_nxt;
        }
    }

    /// Linux `tcp_try_to_open`.
    fn try_to_open(&mut self, now: SimTime) {
        if !self.any_retrans_done() {
            self.undo.retrans_stamp = None;
        }
        if self.rec.state != CaState::Cwr {
            self.try_keep_open(now);
        }
    }

    /// Linux `tcp_end_cwnd_reduction`: the window ends at ssthresh unless
    /// the reduction was undone; skipped for `cong_control` algorithms.
    pub(super) fn end_cwnd_reduction(&mut self, now: SimTime) {
        if self.cc_controls {
            return;
        }
        if self.w.ssthresh < INFINITE_SSTHRESH && (self.rec.state == CaState::Cwr || self.undo.marker.is_some()) {
            self.w.cwnd = self.w.ssthresh;
        }
        let view = self.view(now);
        self.cc.cwnd_event(now, &mut self.w, &view, CaEvent::CompleteCwr);
    }

    /// Linux `tcp_current_ssthresh`.
    fn current_ssthresh(&self) -> u32 {
        if matches!(self.rec.state, CaState::Cwr | CaState::Recovery) {
            self.w.ssthresh
        } else {
            self.w.ssthresh.max((self.w.cwnd >> 1) + (self.w.cwnd >> 2))
        }
    }

    /// RACK's loss detection with the sender's reordering window; arms the
    /// reordering timer for what is not due yet.
    pub(super) fn rack_detect_loss(&mut self, now: SimTime) -> u32 {
        let in_recovery = matches!(self.rec.state, CaState::Recovery | CaState::Loss);
        let reo_wnd = super::rack::reo_wnd(
            in_recovery,
            self.sb.sacked_out(),
            self.cfg.dupthresh,
            self.rtt.min(),
            self.rtt.srtt(),
        );
        let (n, wait) = self.rack.detect_loss(now, &mut self.sb, reo_wnd);
        self.notify_lost(now);
        if let Some(w) = wait {
            self.arm_reorder_timer(now, w);
            self.rec.reo_armed = true;
        }
        n
    }

    /// Linux `tcp_enter_recovery` and `tcp_init_cwnd_reduction`.
    pub(super) fn enter_recovery(&mut self, now: SimTime) {
        self.stats.recoveries += 1;
        self.undo.prior_ssthresh = None;
        self.undo.init(self.send.snd_una, self.sb.retrans_out());
        if !matches!(self.rec.state, CaState::Cwr | CaState::Recovery) {
            self.undo.prior_ssthresh = Some(self.current_ssthresh());
            self.init_cwnd_reduction(now);
        }
        self.set_state(now, CaState::Recovery);
        if self.sb.lost_out() == 0 {
            // Mark the first hole lost so the fast retransmit has a target.
            if self.sb.mark_head_lost() {
                self.rec.marked_lost += 1;
                self.notify_lost(now);
            }
        }
    }

    /// Linux `tcp_init_cwnd_reduction`: a reduction (Recovery or CWR)
    /// starts from the current window; ssthresh from the algorithm.
    pub(super) fn init_cwnd_reduction(&mut self, now: SimTime) {
        self.rec.high_seq = self.send.snd_nxt;
        self.probe.high_seq = None;
        self.w.cwnd_cnt = 0;
        self.rec.init_reduction(self.w.cwnd);
        let view = self.view(now);
        self.w.ssthresh = self.cc.ssthresh(now, &self.w, &view);
    }

    /// Linux `tcp_enter_loss`, on a retransmission timeout.
    pub(super) fn enter_loss(&mut self, now: SimTime) {
        let new_recovery = matches!(self.rec.state, CaState::Open | CaState::Disorder | CaState::Cwr);
        // Mark lost first (tcp_timeout_mark_lost: with RACK, not what was
        // sent within the last RACK RTT, except the head).
        let rack_rtt = (self.cfg.loss_detection == LossDetection::Rack).then(|| self.rack.rtt().unwrap_or_default());
        self.sb.mark_lost_on_timeout(now, rack_rtt);
        self.notify_lost(now);
        // Reduce ssthresh if it was not already reduced in this window.
        let first_loss = matches!(self.rec.state, CaState::Open | CaState::Disorder)
            || self.send.snd_una >= self.rec.high_seq
            || (self.rec.state == CaState::Loss && self.rto.retransmits == 0);
        if first_loss {
            self.undo.prior_ssthresh = Some(self.current_ssthresh());
            self.rec.prior_cwnd = self.w.cwnd;
            let view = self.view(now);
            self.w.ssthresh = self.cc.ssthresh(now, &self.w, &view);
            self.cc.cwnd_event(now, &mut self.w, &view, CaEvent::Loss);
            self.undo.init(self.send.snd_una, self.sb.retrans_out());
        }
        self.w.cwnd = self.sb.in_flight() + 1;
        self.w.cwnd_cnt = 0;
        self.rec.dupacks = 0;
        self.set_state(now, CaState::Loss);
        self.rec.high_seq = self.send.snd_nxt;
        // F-RTO (RFC 5682 §3.1 step 1) unless recovery was already under
        // way, except for a recurring timeout on the same snd_una (§3.2).
        self.rec.frto =
            self.cfg.frto && self.cfg.recovery == Recovery::Sack && (new_recovery || self.rto.retransmits > 0);
    }

    /// PRR's window after an ACK in Recovery.
    pub(super) fn prr_update(&mut self, newly_acked_sacked: u32, newly_lost: u32, snd_una_advanced: bool) {
        let in_flight = self.sb.in_flight();
        if let Some(cwnd) = self.rec.prr_cwnd(
            newly_acked_sacked,
            newly_lost,
            snd_una_advanced,
            in_flight,
            self.w.ssthresh,
        ) {
            self.w.cwnd = cwnd;
        }
    }

    pub(super) fn newreno_state_machine(
        &mut self,
        now: SimTime,
        snd_una_advanced: bool,
        is_dupack: bool,
        newly_acked: u32,
    ) {
        if snd_una_advanced {
            match self.rec.state {
                CaState::Recovery => {
                    if self.send.snd_una >= self.rec.high_seq {
                        // Full acknowledgment, RFC 6582 §3.2 step 3, option (1):
                        // cwnd = min(ssthresh, FlightSize + SMSS).
                        let flight = self.sb.packets_out();
                        self.w.cwnd = self.w.ssthresh.min(flight + 1).max(1);
                        self.rec.dupacks = 0;
                        let view = self.view(now);
                        self.cc.cwnd_event(now, &mut self.w, &view, CaEvent::CompleteCwr);
                        self.set_state(now, CaState::Open);
                    } else {
                        // Partial acknowledgment, step 4: retransmit the first
                        // unacknowledged segment, deflate by the amount acked,
                        // add back one segment.
                        if self.sb.mark_head_lost() {
                            self.rec.marked_lost += 1;
                            self.notify_lost(now);
                        }
                        self.w.cwnd = self.w.cwnd.saturating_sub(newly_acked).saturating_add(1).max(1);
                    }
                }
                CaState::Loss => {
                    self.rec.dupacks = 0;
                    if self.send.snd_una >= self.rec.high_seq {
                        self.set_state(now, CaState::Open);
                    }
                }
                _ => {
                    self.rec.dupacks = 0;
                }
            }
            return;
        }
        if !is_dupack {
            return;
        }
        self.rec.dupacks += 1;
        match self.rec.state {
            CaState::Recovery => {
                // Step 3 of RFC 6582 §3.2: inflate by one segment per dupack.
                self.w.cwnd = self.w.cwnd.saturating_add(1);
            }
            CaState::Loss => {}
            _ => {
                // Step 1: enter fast recovery on the third duplicate, unless
                // this loss is from before the last recovery point.
                if self.rec.dupacks >= self.cfg.dupthresh && self.send.snd_una >= self.rec.high_seq {
                    self.stats.recoveries += 1;
                    self.rec.high_seq = self.send.snd_nxt;
                    let view = self.view(now);
                    self.w.ssthresh = self.cc.ssthresh(now, &self.w, &view);
                    self.set_state(now, CaState::Recovery);
                    if self.sb.mark_head_lost() {
                        self.rec.marked_lost += 1;
                        self.notify_lost(now);
                    }
                    // Step 2: cwnd = ssthresh + 3 * SMSS. An algorithm that
                    // leaves ssthresh "infinite" keeps its window instead.
                    if self.w.ssthresh < INFINITE_SSTHRESH {
                        self.w.cwnd = self.w.ssthresh + self.cfg.dupthresh;
                    }
                } else if self.rec.state == CaState::Open {
                    self.set_state(now, CaState::Disorder);
                }
            }
        }
    }

    pub(super) fn set_state(&mut self, now: SimTime, s: CaState) {
        // Linux guards most transitions by "if the state changes", but
        // tcp_enter_loss sets Loss unconditionally, so a second timeout
        // resets the algorithm again.
        if self.rec.state == s && s != CaState::Loss {
            return;
        }
        self.rec.state = s;
        let view = self.view(now);
        self.cc.set_state(now, &mut self.w, &view, s);
    }

    /// Is the connection in SACK recovery (PRR governs the window)?
    pub(super) fn in_sack_recovery(&self) -> bool {
        self.rec.state == CaState::Recovery && self.cfg.recovery == Recovery::Sack
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prr_sends_in_proportion_to_deliveries_while_the_flight_exceeds_ssthresh() {
        // RFC 6937 §3 example: RecoverFS 20, ssthresh 10, one segment
        // delivered per ACK: one new segment per two ACKs.
        let mut r = RecoveryState::default();
        r.init_reduction(20);
        let mut sent = 0;
        let mut flight = 19; // one lost
        for _ in 0..4 {
            let cwnd = r.prr_cwnd(1, 0, false, flight - 1, 10).unwrap();
            flight -= 1;
            let can = cwnd.saturating_sub(flight);
            sent += can;
            r.prr_out += can;
            flight += can;
        }
        // ceil(4 * 10 / 20) = 2 segments sent after four deliveries.
        assert_eq!(sent, 2);
    }

    #[test]
    fn prr_forces_the_fast_retransmit_when_nothing_was_sent_yet() {
        let mut r = RecoveryState::default();
        r.init_reduction(20);
        // The flight already equals ssthresh, so PRR's bound allows nothing;
        // the first ACK of a recovery still lets one segment out.
        assert_eq!(r.prr_cwnd(1, 1, false, 10, 10), Some(11));
        r.prr_out = 1;
        assert_eq!(r.prr_cwnd(1, 1, false, 10, 10), Some(10));
    }

    #[test]
    fn prr_slow_starts_back_to_ssthresh_once_the_flight_is_below_it() {
        let mut r = RecoveryState::default();
        r.init_reduction(20);
        r.prr_out = 5;
        r.prr_delivered = 5;
        // Flight 6 under ssthresh 10: send what was delivered plus one when
        // snd_una advanced without new losses, at most up to ssthresh.
        assert_eq!(r.prr_cwnd(2, 0, true, 6, 10), Some(6 + 3));
        assert_eq!(r.prr_cwnd(2, 0, true, 9, 10), Some(10));
        assert_eq!(r.prr_cwnd(0, 0, true, 9, 10), None);
    }
}
