//! ACK processing in Linux `tcp_ack()`'s order: explicit feedback, D-SACK
//! and SACK tagging, the cumulative ACK, RTT and rate samples, the loss
//! state machine, the window update, the retransmission timer, then
//! transmission.

use super::config::Recovery;
use super::output::SenderOutput;
use super::recovery::{AckInfo, Rexmit};
use super::TcpSender;
use crate::net::AckHeader;
use crate::transport::cc::{AckFlags, AckSample, CaState, Feedback, RateSample};
use crate::transport::rtt::RtoRule;
use crate::units::{SimDuration, SimTime};

impl TcpSender {
    pub fn on_ack(&mut self, now: SimTime, ack: &AckHeader, out: &mut SenderOutput) {
        if ack.ack > self.send.snd_nxt || ack.ack < self.send.snd_una {
            // Acknowledges something never sent, or older than what we know.
            return;
        }
        if !self.initialized {
            return;
        }
        self.deliver_feedback(now, ack);

        let prior_in_flight = self.sb.in_flight();
        let prior_snd_una = self.send.snd_una;
        let high_seq = self.rec.high_seq;
        self.rec.marked_lost = 0;
        self.rec.reo_armed = false;
        self.rack.begin_ack();

        // --- D-SACK (Linux tcp_check_dsack, tcp_dsack_seen) ---
        let (dsack_segs, dsack_tlp) = self.check_dsack(ack, prior_snd_una);

        // --- SACK tagging (Linux tcp_sacktag_write_queue): blocks in
        // sequence order; the send times of the first and last newly SACKed
        // never-retransmitted segments (`first_sackt`, `last_sackt`).
        let mut newly_sacked = 0u32;
        let mut first_sackt: Option<SimTime> = None;
        let mut last_sackt: Option<SimTime> = None;
        // Never-retransmitted data below high_seq (S)ACKed
        // (FLAG_ORIG_SACK_ACKED, F-RTO's evidence).
        let mut orig_sack_acked = false;
        if self.cfg.recovery == Recovery::Sack {
            let mut blocks = ack.sack_blocks();
            blocks.sort_by_key(|b| b.start);
            for b in blocks.iter() {
                if b.end <= self.send.snd_una || b.start >= self.send.snd_nxt {
                    continue;
                }
                let rate = &mut self.rate;
                let rack = &mut self.rack;
                newly_sacked += self.sb.sack(b.start, b.end, |s| {
                    rate.on_delivered(s);
                    rack.on_delivered(s.tx_time, s.tx_order, s.ever_retransmitted(), true);
                    if !s.ever_retransmitted() {
                        first_sackt.get_or_insert(s.tx_time);
                        last_sackt = Some(s.tx_time);
                        orig_sack_acked |= s.end() <= high_seq;
                    }
                });
            }
        }

        // --- cumulative ACK (Linux tcp_clean_rtx_queue): the send times of
        // the first and last newly acknowledged segments not SACKed before
        // (`first_ackt`, `last_ackt`), and whether any was retransmitted.
        let mut newly_acked = 0u32;
        let mut newly_acked_unsacked = 0u32;
        let mut acked_retrans = false;
        let mut first_ackt: Option<SimTime> = None;
        let mut last_ackt: Option<SimTime> = None;
        if ack.ack > self.send.snd_una {
            let rate = &mut self.rate;
            let rack = &mut self.rack;
            self.sb.ack_cumulative(ack.ack, |s| {
                newly_acked += 1;
                if !s.sacked {
                    rack.on_delivered(s.tx_time, s.tx_order, s.ever_retransmitted(), false);
                }
                if s.ever_retransmitted() {
                    acked_retrans = true;
                }
                if !s.sacked {
                    newly_acked_unsacked += 1;
                    rate.on_delivered(s);
                    if !s.ever_retransmitted() {
                        first_ackt.get_or_insert(s.tx_time);
                        last_ackt = Some(s.tx_time);
                        orig_sack_acked |= s.end() <= high_seq;
                    }
                }
            });
            self.send.snd_una = ack.ack;
            // Linux tcp_ack: icsk_retransmits = 0 when snd_una advances.
            self.rto.retransmits = 0;
            if self.rtt.rule() == RtoRule::Rfc6298 {
                // ns-3 NewAck recomputes the RTO on every new ACK.
                self.rto.reset_backoff();
            }
        }
        let snd_una_advanced = self.send.snd_una > prior_snd_una;
        // A D-SACKed spurious retransmission counts as delivered
        // (tcp_dsack_seen: sack_delivered).
        let delivered_now = newly_acked_unsacked + newly_sacked + dsack_segs.unwrap_or(0);

        // --- RTT samples (Linux tcp_clean_rtx_queue, tcp_ack_update_rtt):
        // Karn's rule drops the cumulative sample when retransmitted data was
        // acknowledged; SACKed segments give their own; the timestamp echo
        // is the last resort. `seq_rtt` feeds the RTO estimator, `ca_rtt`
        // (the most recently sent segment) the congestion control.
        let since = |t: SimTime| now.saturating_since(t);
        let (mut seq_rtt, mut ca_rtt) = match (first_ackt, last_ackt, acked_retrans) {
            (Some(f), Some(l), false) => (Some(since(f)), Some(since(l))),
            _ => (None, None),
        };
        if let (Some(f), Some(l)) = (first_sackt, last_sackt) {
            seq_rtt = seq_rtt.or(Some(since(f)));
            ca_rtt = Some(since(l));
        }
        if seq_rtt.is_none() && snd_una_advanced && ack.ts_ecr > SimTime::ZERO {
            let r = since(ack.ts_ecr);
            seq_rtt = Some(r);
            ca_rtt = Some(r);
        }
        if let Some(r) = seq_rtt {
            self.rtt.update(r, self.send.snd_una, self.send.snd_nxt);
            out.rtt_samples.push(r);
            if self.rtt.rule() == RtoRule::Linux {
                // Linux tcp_ack_update_rtt: "only reset backoff on valid RTT
                // measurement" (a SACK's too).
                self.rto.reset_backoff();
            }
        }
        // Linux tcp_clean_rtx_queue: without a cumulative ACK, re-arm the
        // RTO only if the SACK RTT sample came from data sent before the
        // head was last (re)transmitted ("otherwise the timeout may
        // continue to extend in loss recovery").
        let sack_rearm = self.rtt.rule() == RtoRule::Linux
            && !snd_una_advanced
            && seq_rtt.is_some()
            && first_sackt.is_some_and(|t| self.sb.front().is_some_and(|h| t < h.tx_time));
        self.rack
            .advance(now, ack.ts_ecr, self.rtt.min().unwrap_or(SimDuration::ZERO));
        let view = self.view(now);
        let flags = AckFlags {
            slow_path: snd_una_advanced || newly_sacked > 0,
            window_update: false,
            ece: false,
        };
        self.cc.in_ack_event(now, &mut self.w, &view, flags);
        let sample = AckSample {
            pkts_acked: newly_acked,
            rtt: ca_rtt,
            in_flight: prior_in_flight,
        };
        self.cc.pkts_acked(now, &mut self.w, &view, &sample);

        // --- tail loss probe episode (Linux tcp_process_tlp_ack) ---
        let pure_dupack = !snd_una_advanced && newly_sacked == 0;
        let acking_tlp_retrans_seq = self.process_tlp_ack(now, ack.ack, dsack_tlp, pure_dupack);

        // --- loss state machine (Linux tcp_fastretrans_alert) ---
        // RFC 5681 §2: same cumulative ACK, data outstanding (no payload and
        // no window change hold for every ACK here); a D-SACK is no dupack.
        let is_dupack = !snd_una_advanced && self.sb.packets_out() > 0 && dsack_segs.is_none();
        let info = AckInfo {
            snd_una_advanced,
            data_sacked: newly_sacked > 0,
            dsack: dsack_segs.is_some(),
            orig_sack_acked,
            dupack: is_dupack,
            ts_ecr: ack.ts_ecr,
        };
        let rexmit = match self.cfg.recovery {
            Recovery::Sack if self.ack_is_dubious(&info) => self.fastretrans_alert(now, &info),
            Recovery::Sack => Rexmit::None,
            Recovery::Newreno => {
                self.newreno_state_machine(now, snd_una_advanced, is_dupack, newly_acked);
                Rexmit::Lost
            }
        };
        // Every marking counts, as Linux's tp->lost (a segment marked and
        // then acknowledged in the same ACK still counts); each was counted
        // in lost_total as it was made (notify_lost).
        let newly_lost = self.rec.marked_lost;

        // --- rate sample (Linux tcp_rate_gen) ---
        let min_rtt = self.rtt.min();
        let mut rs: RateSample = self
            .rate
            .generate(now, delivered_now, newly_lost, prior_in_flight, ca_rtt, min_rtt);
        rs.is_acking_tlp_retrans_seq = acking_tlp_retrans_seq;

        // --- window update (Linux tcp_cong_control) ---
        let view = self.view(now);
        if self.cc.cong_control(now, &mut self.w, &view, &rs) {
            // The algorithm set cwnd (and pacing) itself.
            self.cc_controls = true;
        } else if self.in_sack_recovery() {
            self.prr_update(delivered_now, newly_lost, snd_una_advanced);
        } else if self.rec.state != CaState::Recovery && snd_una_advanced {
            self.cc.cong_avoid(now, &mut self.w, &view, delivered_now);
        }
        self.w.cwnd = self.w.cwnd.clamp(1, self.w.cwnd_clamp);

        // --- probe or retransmission timer (RFC 6298 §5.2, §5.3; Linux
        // FLAG_SET_XMIT_TIMER, tcp_set_xmit_timer), unless RACK armed its
        // reordering timer on this ACK ---
        if self.sb.packets_out() == 0 {
            self.rto.clear();
        } else if (snd_una_advanced || sack_rearm) && !self.rec.reo_armed {
            self.set_xmit_timer(now);
        }

        self.transmit_recovery(now, out, rexmit);
    }

    /// Linux `tcp_check_dsack` and `tcp_dsack_seen`: is the first SACK block
    /// a D-SACK (below the cumulative ACK, or inside the second block)? If
    /// so and it is plausible (no more segments reported duplicate than
    /// were ever retransmitted), returns how many segments it reports, and
    /// counts the reported retransmissions against `undo_retrans`. Also
    /// whether it reports the tail loss probe (`FLAG_DSACK_TLP`).
    fn check_dsack(&mut self, ack: &AckHeader, prior_snd_una: u64) -> (Option<u32>, bool) {
        if self.cfg.recovery != Recovery::Sack {
            return (None, false);
        }
        let blocks = ack.sack_blocks();
        let Some(&d) = blocks.first() else { return (None, false) };
        let inside_second = blocks.get(1).is_some_and(|b| d.start >= b.start && d.end <= b.end);
        if !(d.start < ack.ack || inside_second) || d.start >= d.end {
            return (None, false);
        }
        let len = d.end - d.start;
        let mss = self.cfg.mss as u64;
        let segs = if len > mss { len.div_ceil(mss) } else { 1 } as u32;
        let dsack_tlp = len <= mss && self.probe.high_seq == Some(d.end);
        self.undo.dsack_dups += segs as u64;
        if self.undo.dsack_dups > self.stats.retransmits() {
            // Dubious: more duplicates than retransmissions.
            return (None, dsack_tlp);
        }
        self.stats.dsacks += 1;
        if d.end <= prior_snd_una {
            // "D-SACK for already forgotten data... Do dumb counting."
            self.undo.on_dsack(d.end, segs);
        } else {
            // tcp_sacktag_one with dup_sack: each retransmitted segment the
            // block covers was retransmitted in vain.
            let undo = &mut self.undo;
            for s in self.sb.iter() {
                if s.seq >= d.start && s.end() <= d.end && s.ever_retransmitted() {
                    undo.on_dsack(s.end(), 1);
                }
            }
        }
        self.rate.on_dsack(segs);
        (Some(segs), dsack_tlp)
    }

    /// Explicit network feedback riding the ACK, delivered before the ACK
    /// itself is processed.
    fn deliver_feedback(&mut self, now: SimTime, ack: &AckHeader) {
        let view = self.view(now);
        if let Some(x) = ack.xrc() {
            self.cc.on_feedback(now, &mut self.w, &view, &Feedback::Xrc(x));
        }
        if self.signals.abc && (ack.abc_accelerate > 0 || ack.abc_brake > 0) {
            let fb = Feedback::Abc {
                accelerate: ack.abc_accelerate,
                brake: ack.abc_brake,
            };
            self.cc.on_feedback(now, &mut self.w, &view, &fb);
        }
        if let (true, Some(r)) = (self.signals.pbe, ack.pbe_kbps().map(|k| k as u64 * 1000)) {
            self.cc
                .on_feedback(now, &mut self.w, &view, &Feedback::Pbe { rate_bps: r });
        }
    }
}
