//! The sender's timers: the retransmission timeout (RFC 6298; Linux
//! `tcp_retransmit_timer`, `tcp_enter_loss`, `tcp_rearm_rto`) and the
//! dispatch of whatever timer is due (RACK's reordering timer, the RTO, the
//! pacing wake-up).
//!
//! The RTO value is Linux's `icsk_rto`: the estimator's base
//! ([`RttEstimator::rto_base`], `__tcp_set_rto`) rounded up to the timer
//! clock's jiffies and bounded by `max_rto` (`tcp_bound_rto`), doubled on
//! every timeout up to `max_rto` (`tcp_retransmit_timer`), and recomputed
//! with the backoff cleared when an ACK brings a valid RTT sample
//! (`tcp_ack_update_rtt`; with `rto_rule = "rfc6298"`, on every cumulative
//! ACK as ns-3's `NewAck`).

use super::clock::Clock;
use super::config::{Recovery, TcpConfig};
use super::output::SenderOutput;
use super::TcpSender;
use crate::transport::cc::CaState;
use crate::transport::rtt::{RtoRule, RttEstimator};
use crate::units::{SimDuration, SimTime};

/// The retransmission timer (Linux `ICSK_TIME_RETRANS` with `icsk_rto`,
/// `icsk_backoff`, `icsk_retransmits`).
#[derive(Debug)]
pub(super) struct RetransmitTimer {
    /// When it fires; `None` when nothing is outstanding.
    pub(super) deadline: Option<SimTime>,
    /// Doublings of the RTO since the last valid RTT sample (`icsk_backoff`).
    backoff: u32,
    /// Timeouts since snd_una last advanced (`icsk_retransmits`).
    pub(super) retransmits: u32,
    pub(super) clock: Clock,
    initial: SimDuration,
    min: SimDuration,
    max: SimDuration,
}

impl RetransmitTimer {
    pub(super) fn new(cfg: &TcpConfig) -> Self {
        RetransmitTimer {
            deadline: None,
            backoff: 0,
            retransmits: 0,
            clock: Clock::new(cfg.timer_clock, cfg.timer_hz),
            initial: cfg.initial_rto(),
            min: cfg.min_rto(),
            max: cfg.max_rto(),
        }
    }

    /// Linux `icsk_rto`: `tcp_set_rto` (rounded up to jiffies, at most
    /// `max`), doubled per backoff, at most `max`. Before the first RTT
    /// sample the initial RTO (`TCP_TIMEOUT_INIT`).
    pub(super) fn rto(&self, est: &RttEstimator) -> SimDuration {
        let mut base = est.rto_base().unwrap_or(self.initial);
        if est.rule() == RtoRule::Rfc6298 {
            base = base.max(self.min);
        }
        let base = self.clock.round(base).min(self.max);
        let backed = base.as_nanos().saturating_mul(1u64 << self.backoff.min(30));
        SimDuration::from_nanos(backed).min(self.max)
    }

    /// Arms the timer to fire one RTO from `now` (`tcp_reset_xmit_timer`).
    pub(super) fn arm(&mut self, now: SimTime, est: &RttEstimator) {
        self.deadline = Some(self.clock.deadline(now, self.rto(est)));
    }

    /// A timeout: one more retransmission round and a doubled RTO.
    pub(super) fn back_off(&mut self) {
        self.backoff = self.backoff.saturating_add(1);
        self.retransmits = self.retransmits.saturating_add(1);
    }

    /// A valid RTT sample recomputed the RTO (`icsk_backoff = 0`).
    pub(super) fn reset_backoff(&mut self) {
        self.backoff = 0;
    }

    #[cfg(test)]
    pub(super) fn backoff(&self) -> u32 {
        self.backoff
    }
}

impl TcpSender {
    /// Handles whatever timers are due at `now`.
    pub fn on_timer(&mut self, now: SimTime, out: &mut SenderOutput) {
        if self.rack.timer().is_some_and(|t| t <= now) && self.cfg.recovery == Recovery::Sack {
            self.on_reo_timeout(now);
        }
        if self.rto.deadline.is_some_and(|d| d <= now) {
            self.on_rto(now);
        }
        self.pacer.on_timer(now);
        self.transmit(now, out);
    }

    /// RACK's reordering timer (RFC 8985 §6.3, Linux
    /// `tcp_rack_reo_timeout`): mark what is now overdue; if anything was,
    /// enter Recovery (with one PRR step, as if one segment were delivered)
    /// and retransmit.
    fn on_reo_timeout(&mut self, now: SimTime) {
        self.rec.marked_lost = 0;
        let n = self.rack_detect_loss(now);
        self.rec.lost_total += n as u64;
        if n > 0 && self.rec.state != CaState::Recovery {
            self.enter_recovery(now);
            if !self.cc_controls {
                self.prr_update(1, 0, false);
            }
        }
    }

    fn on_rto(&mut self, now: SimTime) {
        self.rto.deadline = None;
        if self.sb.packets_out() == 0 {
            return;
        }
        self.stats.timeouts += 1;
        self.enter_loss(now);
        // Linux tcp_retransmit_timer: icsk_retransmits++, icsk_backoff++,
        // icsk_rto doubled (at most TCP_RTO_MAX), timer re-armed. The
        // retransmission itself goes out through transmit().
        self.rto.back_off();
        self.rto.arm(now, &self.rtt);
        self.pacer.reset(now);
    }
}
