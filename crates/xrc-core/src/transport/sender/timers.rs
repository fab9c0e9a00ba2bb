//! The sender's retransmission-class timer, as Linux's one
//! `icsk_retransmit_timer` whose `icsk_pending` says what it is armed for:
//! the retransmission timeout (RFC 6298; `tcp_retransmit_timer`,
//! `tcp_rearm_rto`), the tail loss probe (RFC 8985 §7;
//! `tcp_schedule_loss_probe`, `tcp_send_loss_probe`) or RACK's reordering
//! timeout (`tcp_rack_reo_timeout`). Arming one replaces the others.
//!
//! The RTO value is Linux's `icsk_rto`: the estimator's base
//! ([`RttEstimator::rto_base`], `__tcp_set_rto`) rounded up to the timer
//! clock's jiffies and bounded by `max_rto` (`tcp_bound_rto`), doubled on
//! every timeout up to `max_rto` (`tcp_retransmit_timer`), and recomputed
//! with the backoff cleared when an ACK brings a valid RTT sample
//! (`tcp_ack_update_rtt`; with `rto_rule = "rfc6298"`, on every cumulative
//! ACK as ns-3's `NewAck`).
//!
//! The probe timeout (PTO) is 2·srtt plus 2 ms (`TCP_TIMEOUT_MIN_US`), or
//! plus `min_rto` when a single segment is out (its ACK may be delayed),
//! 1 s before any RTT sample, and never later than the RTO would fire. A
//! probe sends one new segment if the application and the receive window
//! allow, whatever the congestion window says, and otherwise retransmits
//! the last segment; at most one probe is outstanding (`tlp_high_seq`).

use super::clock::Clock;
use super::config::{Recovery, TcpConfig};
use super::output::{RetxKind, SenderOutput};
use super::TcpSender;
use crate::transport::cc::{CaState, PacketRecord};
use crate::transport::rtt::{RtoRule, RttEstimator};
use crate::units::{SimDuration, SimTime};

/// What the timer is armed for (Linux `ICSK_TIME_*`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum XmitTimer {
    /// The retransmission timeout.
    Rto,
    /// The tail loss probe.
    Probe,
    /// RACK's reordering timeout.
    Reorder,
}

/// Linux `TCP_TIMEOUT_MIN_US`: the PTO's margin when several segments are out,
/// and the reordering timer's.
const TIMEOUT_MIN: SimDuration = SimDuration::from_millis(2);

/// The timer and the RTO state (`icsk_rto`, `icsk_backoff`,
/// `icsk_retransmits`).
#[derive(Debug)]
pub(super) struct RetransmitTimer {
    /// What the timer is armed for and when it fires (`icsk_pending`,
    /// `icsk_timeout`); `None` when it is not armed.
    pending: Option<(XmitTimer, SimTime)>,
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
            pending: None,
            backoff: 0,
            retransmits: 0,
            clock: Clock::new(cfg.timer_clock, cfg.timer_hz),
            initial: cfg.initial_rto(),
            min: cfg.min_rto(),
            max: cfg.max_rto(),
        }
    }

    /// When the timer fires.
    pub(super) fn deadline(&self) -> Option<SimTime> {
        self.pending.map(|(_, t)| t)
    }

    /// What the timer is armed for.
    pub(super) fn kind(&self) -> Option<XmitTimer> {
        self.pending.map(|(k, _)| k)
    }

    /// Arms the timer at `now` for `d` (`inet_csk_reset_xmit_timer`: rounded
    /// to the clock, on the timer wheel).
    pub(super) fn set(&mut self, kind: XmitTimer, now: SimTime, d: SimDuration) {
        self.pending = Some((kind, self.clock.deadline(now, d)));
    }

    pub(super) fn clear(&mut self) {
        self.pending = None;
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

    /// Arms the RTO to fire one RTO from `now` (`tcp_reset_xmit_timer`).
    pub(super) fn arm(&mut self, now: SimTime, est: &RttEstimator) {
        self.set(XmitTimer::Rto, now, self.rto(est));
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

/// The state of a tail-loss-probe episode.
#[derive(Debug, Default)]
pub(super) struct ProbeState {
    /// snd_nxt when the outstanding probe was sent (Linux `tlp_high_seq`).
    pub(super) high_seq: Option<u64>,
    /// The probe was a retransmission (Linux `tlp_retrans`).
    pub(super) retrans: bool,
    /// The record of the resent segment's transmission before the probe.
    pub(super) orig_record: PacketRecord,
}

impl TcpSender {
    /// Handles whatever timer is due at `now`.
    pub fn on_timer(&mut self, now: SimTime, out: &mut SenderOutput) {
        self.pacer.on_timer(now);
        if let Some((kind, t)) = self.rto.pending {
            if t <= now {
                match kind {
                    XmitTimer::Reorder => self.on_reo_timeout(now, out),
                    XmitTimer::Probe => self.send_loss_probe(now, out),
                    XmitTimer::Rto => self.on_rto(now),
                }
            }
        }
        self.transmit(now, out);
    }

    /// Linux `tcp_rearm_rto`: the RTO from now, or, if the timer was armed
    /// for a probe or the reordering timeout, from when the head of the
    /// queue was sent; cleared when nothing is outstanding.
    pub(super) fn rearm_rto(&mut self, now: SimTime) {
        if self.sb.packets_out() == 0 {
            self.rto.clear();
            return;
        }
        let mut d = self.rto.rto(&self.rtt);
        if matches!(self.rto.kind(), Some(XmitTimer::Probe | XmitTimer::Reorder)) {
            if let Some(head) = self.sb.front() {
                // "Offset the time elapsed after installing regular RTO."
                let due = head.tx_time + d;
                d = due.saturating_since(now).max(SimDuration::from_micros(1));
            }
        }
        self.rto.set(XmitTimer::Rto, now, d);
    }

    /// Linux `tcp_set_xmit_timer`, after an ACK of new data: the probe if
    /// one may be scheduled, else the RTO.
    pub(super) fn set_xmit_timer(&mut self, now: SimTime) {
        if !self.schedule_loss_probe(now, true) {
            self.rearm_rto(now);
        }
    }

    /// Linux `tcp_schedule_loss_probe`: arms the probe timer for a
    /// connection with SACK, data out, and not in recovery. `advancing`:
    /// the RTO would be restarted now (after an ACK), otherwise it runs from
    /// the head's transmission.
    pub(super) fn schedule_loss_probe(&mut self, now: SimTime, advancing: bool) -> bool {
        let packets_out = self.sb.packets_out();
        if !self.cfg.tlp
            || packets_out == 0
            || self.cfg.recovery != Recovery::Sack
            || !matches!(self.rec.state, CaState::Open | CaState::Cwr)
        {
            return false;
        }
        let clock = self.rto.clock;
        // Probe timeout: 2·srtt plus the delayed-ACK allowance for a single
        // segment, or 2 ms (Linux timeout_us, then usecs_to_jiffies).
        let mut pto = match self.rtt.srtt_x2() {
            Some(two_srtt) => {
                let margin = if packets_out == 1 {
                    self.cfg.min_rto()
                } else {
                    TIMEOUT_MIN
                };
                clock.round(two_srtt + margin)
            }
            None => self.cfg.initial_rto(),
        };
        // "If the RTO formula yields an earlier time, then use that time."
        let rto = self.rto.rto(&self.rtt);
        let rto_delta = if advancing {
            Some(rto)
        } else {
            self.sb
                .front()
                .map(|h| (h.tx_time + rto).saturating_since(now))
                .filter(|d| !d.is_zero())
        };
        if let Some(d) = rto_delta {
            pto = pto.min(clock.round(d));
        }
        self.rto.set(XmitTimer::Probe, now, pto);
        true
    }

    /// Linux `tcp_send_loss_probe`: the probe timer fired.
    fn send_loss_probe(&mut self, now: SimTime, out: &mut SenderOutput) {
        // At most one outstanding probe.
        if self.probe.high_seq.is_some() {
            self.rearm_rto(now);
            return;
        }
        self.probe.retrans = false;
        if self.has_new_data() {
            // New data, whatever the congestion window says, if pacing lets
            // it go now (tcp_write_xmit with push_one = 2).
            let before = self.sb.packets_out();
            self.send_new_probe(now, out);
            if self.sb.packets_out() == before {
                self.rearm_rto(now);
                return;
            }
        } else {
            // Otherwise the last segment again, when the algorithm's
            // departure schedule lets it go.
            if !self.departure_allows(now) {
                self.rearm_rto(now);
                return;
            }
            let Some(last) = self.sb.packets_out().checked_sub(1) else {
                self.rto.clear();
                return;
            };
            self.send_probe_retransmission(now, last as usize, out);
            self.probe.retrans = true;
        }
        self.probe.high_seq = Some(self.send.snd_nxt);
        self.stats.probes += 1;
        // "Reset s.t. tcp_rearm_rto will restart timer from now."
        self.rto.clear();
        self.rearm_rto(now);
    }

    /// Linux `tcp_process_tlp_ack`: an ACK during a probe episode. A probe
    /// of new data, or a D-SACK or a pure duplicate ACK at the probe's
    /// sequence (original and probe both arrived), ends the episode; an
    /// ACK beyond it shows the probe repaired a loss: the window is reduced
    /// once (CWR), as for any loss.
    ///
    /// Returns whether the ACK is exactly at the probe's sequence without
    /// being a pure duplicate (BBRv3 kernels' `is_acking_tlp_retrans_seq`:
    /// it may acknowledge the original or the probe), and tells the
    /// algorithm of a repaired loss before the reduction (BBRv3 kernels'
    /// `CA_EVENT_TLP_RECOVERY`).
    pub(super) fn process_tlp_ack(&mut self, now: SimTime, ack: u64, dsack_tlp: bool, pure_dupack: bool) -> bool {
        let Some(high) = self.probe.high_seq else { return false };
        if ack < high {
            return false;
        }
        if !self.probe.retrans || dsack_tlp {
            self.probe.high_seq = None;
        } else if ack > high {
            let view = self.view(now);
            let orig = self.probe.orig_record;
            self.cc.on_tlp_recovery(now, &self.w, &view, &orig);
            self.init_cwnd_reduction(now);
            self.set_state(now, CaState::Cwr);
            self.end_cwnd_reduction(now);
            self.try_keep_open(now);
            self.stats.probe_recoveries += 1;
        } else if pure_dupack {
            self.probe.high_seq = None;
        } else {
            return true;
        }
        false
    }

    /// RACK's reordering timer (RFC 8985 §6.3, Linux
    /// `tcp_rack_reo_timeout`): mark what is now overdue; if anything was,
    /// enter Recovery (with one PRR step, as if one segment were delivered)
    /// and retransmit; then the RTO.
    fn on_reo_timeout(&mut self, now: SimTime, out: &mut SenderOutput) {
        self.rec.marked_lost = 0;
        let n = self.rack_detect_loss(now);
        if n > 0 {
            if self.rec.state != CaState::Recovery {
                self.enter_recovery(now);
                if !self.cc_controls {
                    self.prr_update(1, 0, false);
                }
            }
            self.transmit(now, out);
        }
        if self.rto.kind() != Some(XmitTimer::Rto) {
            self.rearm_rto(now);
        }
    }

    /// Linux `tcp_retransmit_timer`.
    fn on_rto(&mut self, now: SimTime) {
        self.rto.clear();
        if self.sb.packets_out() == 0 {
            return;
        }
        self.probe.high_seq = None;
        self.stats.timeouts += 1;
        self.enter_loss(now);
        // icsk_retransmits++, icsk_backoff++, icsk_rto doubled (at most
        // TCP_RTO_MAX), timer re-armed. The retransmission of the head goes
        // out through transmit().
        self.rto.back_off();
        self.rto.arm(now, &self.rtt);
        self.pacer.reset(now);
    }

    /// Arms the reordering timer for RACK's longest remaining wait (Linux
    /// `tcp_rack_mark_lost`: plus 2 ms, in jiffies, at most the RTO).
    pub(super) fn arm_reorder_timer(&mut self, now: SimTime, wait: SimDuration) {
        let rto = self.rto.rto(&self.rtt);
        let d = self.rto.clock.round(wait + TIMEOUT_MIN).min(rto);
        self.rto.set(XmitTimer::Reorder, now, d);
    }

    /// The probe's retransmission of segment `i`.
    fn send_probe_retransmission(&mut self, now: SimTime, i: usize, out: &mut SenderOutput) {
        self.before_send(now);
        let snap = self.rate.on_send(now, self.sb.packets_out());
        let (seq, len) = (self.sb.get(i).seq, self.sb.get(i).len);
        // BBRv3 kernels' tcp_send_loss_probe: tlp_orig_data_app_limited, the
        // probed segment's record before the probe replaces it.
        self.probe.orig_record = self.sb.get(i).record;
        let record = self.packet_sent(now, seq, len, true);
        self.sb.on_probe_retransmit(i, now, self.send.tx_counter, snap, record);
        self.stats.retransmits_probe += 1;
        self.after_send(now);
        out.retransmits.push((seq, RetxKind::Probe));
        out.packets.push(self.data_packet(seq, len, now, true));
    }
}
