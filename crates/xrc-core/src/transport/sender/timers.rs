//! The sender's timers: the retransmission timeout (RFC 6298; Linux
//! `tcp_retransmit_timer`, `tcp_enter_loss`) and the dispatch of whatever
//! timer is due (RACK's reordering timer, the RTO, the pacing wake-up).

use super::config::Recovery;
use super::output::SenderOutput;
use super::TcpSender;
use crate::transport::cc::{CaEvent, CaState};
use crate::units::SimTime;

/// The retransmission timer.
#[derive(Debug, Default)]
pub(super) struct RtoTimer {
    /// When it fires; `None` when nothing is outstanding.
    pub(super) deadline: Option<SimTime>,
}

impl TcpSender {
    /// Handles whatever timers are due at `now`.
    pub fn on_timer(&mut self, now: SimTime, out: &mut SenderOutput) {
        if self.rack.timer().is_some_and(|t| t <= now) && self.cfg.recovery == Recovery::Sack {
            // RACK's reordering timer (RFC 8985 §6.3).
            self.rec.marked_lost = 0;
            let n = self.rack_detect_loss(now);
            self.rec.lost_total += n as u64;
            if n > 0 && matches!(self.rec.state, CaState::Open | CaState::Disorder | CaState::Cwr) {
                self.enter_recovery(now);
            }
        }
        if self.rto.deadline.is_some_and(|d| d <= now) {
            self.on_rto(now);
        }
        self.pacer.on_timer(now);
        self.transmit(now, out);
    }

    fn on_rto(&mut self, now: SimTime) {
        self.rto.deadline = None;
        if self.sb.packets_out() == 0 {
            return;
        }
        self.stats.timeouts += 1;
        // Linux tcp_enter_loss: mark everything lost first, then reduce
        // ssthresh if it was not already reduced in this window.
        self.rec.lost_total += self.sb.mark_all_lost() as u64;
        let first_loss = matches!(self.rec.state, CaState::Open | CaState::Disorder)
            || self.send.snd_una >= self.rec.high_seq
            || (self.rec.state == CaState::Loss && self.rtt.backoff() == 0);
        if first_loss {
            let view = self.view(now);
            self.w.ssthresh = self.cc.ssthresh(now, &self.w, &view);
            self.cc.cwnd_event(now, &mut self.w, &view, CaEvent::Loss);
        }
        self.w.cwnd = self.sb.in_flight() + 1;
        self.w.cwnd_cnt = 0;
        self.rec.dupacks = 0;
        self.rec.high_seq = self.send.snd_nxt;
        self.set_state(now, CaState::Loss);
        self.rtt.back_off();
        // The retransmission itself goes out through transmit(); re-arm for it.
        self.rto.deadline = Some(now + self.rtt.rto());
        self.pacer.reset(now);
    }
}
