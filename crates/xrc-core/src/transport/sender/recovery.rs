//! The loss-recovery state machine (Linux `tcp_fastretrans_alert` and the
//! functions it calls): the congestion state, entering and leaving Recovery
//! and Loss, proportional rate reduction (RFC 6937), and NewReno recovery
//! without SACK (RFC 6582).

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

impl TcpSender {
    pub(super) fn sack_state_machine(&mut self, now: SimTime, snd_una_advanced: bool, newly_sacked: u32) {
        // Leaving recovery or loss once everything outstanding at its start
        // is acknowledged.
        match self.rec.state {
            CaState::Recovery if self.send.snd_una >= self.rec.high_seq => {
                // Linux tcp_end_cwnd_reduction (skipped for cong_control).
                if self.w.ssthresh < INFINITE_SSTHRESH && !self.cc_controls {
                    self.w.cwnd = self.w.ssthresh;
                }
                let view = self.view(now);
                self.cc.cwnd_event(now, &mut self.w, &view, CaEvent::CompleteCwr);
                self.set_state(now, CaState::Open);
            }
            CaState::Loss if self.send.snd_una >= self.rec.high_seq => {
                self.set_state(now, CaState::Open);
            }
            _ => {}
        }
        let _ = (snd_una_advanced, newly_sacked);
        let newly_lost = match self.cfg.loss_detection {
            LossDetection::Dupthresh => self.sb.mark_lost_by_sack(self.cfg.dupthresh),
            LossDetection::Rack => self.rack_detect_loss(now),
        };
        self.rec.marked_lost += newly_lost;
        match self.rec.state {
            CaState::Open | CaState::Disorder | CaState::Cwr => {
                // Linux tcp_time_to_recover: a loss is marked, or more than
                // `reordering` segments are SACKed.
                if self.sb.lost_out() > 0 || newly_lost > 0 || self.sb.sacked_out() >= self.cfg.dupthresh {
                    self.enter_recovery(now);
                } else if self.sb.sacked_out() > 0 {
                    if self.rec.state == CaState::Open {
                        self.set_state(now, CaState::Disorder);
                    }
                } else if self.rec.state == CaState::Disorder {
                    self.set_state(now, CaState::Open);
                }
            }
            CaState::Recovery | CaState::Loss => {}
        }
    }

    /// RACK's loss detection with the sender's reordering window.
    pub(super) fn rack_detect_loss(&mut self, now: SimTime) -> u32 {
        let in_recovery = matches!(self.rec.state, CaState::Recovery | CaState::Loss);
        let reo_wnd = super::rack::reo_wnd(
            in_recovery,
            self.sb.sacked_out(),
            self.cfg.dupthresh,
            self.rtt.min(),
            self.rtt.srtt(),
        );
        self.rack.detect_loss(now, &mut self.sb, reo_wnd)
    }

    pub(super) fn enter_recovery(&mut self, now: SimTime) {
        // Linux tcp_enter_recovery + tcp_init_cwnd_reduction.
        self.stats.recoveries += 1;
        self.rec.high_seq = self.send.snd_nxt;
        self.w.cwnd_cnt = 0;
        self.rec.init_reduction(self.w.cwnd);
        let view = self.view(now);
        self.w.ssthresh = self.cc.ssthresh(now, &self.w, &view);
        self.set_state(now, CaState::Recovery);
        if self.sb.lost_out() == 0 {
            // Mark the first hole lost so the fast retransmit has a target.
            if self.sb.mark_head_lost() {
                self.rec.marked_lost += 1;
            }
        }
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
