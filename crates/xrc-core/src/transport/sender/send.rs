//! The send loop (Linux `tcp_xmit_retransmit_queue` then `tcp_write_xmit`):
//! what the window, the receiver, the application, Nagle's algorithm and
//! pacing allow, lost segments first; the sequence space; and the
//! window-validation state (`tcp_cwnd_validate`, RFC 7661).
//!
//! **Nagle's algorithm with Minshall's variant** (`nodelay = false`,
//! Linux's default; RFC 896, RFC 1122 §4.2.3.4; Linux `tcp_nagle_test`,
//! `tcp_nagle_check`, `tcp_minshall_check`, `tcp_minshall_update` in
//! `net/ipv4/tcp_output.c`). The unsent data is a queue of full segments
//! and at most one short tail (Linux fills the tail skb of the write queue
//! to `size_goal` before starting another, `tcp_sendmsg_locked`). The short
//! tail is held while a short segment sent earlier is unacknowledged:
//! Linux remembers the end of the last short segment sent (`snd_sml`) and
//! holds when snd_una < snd_sml <= snd_nxt and something is out. Data
//! written meanwhile joins the tail, which leaves as soon as it fills a
//! segment, the short segment is acknowledged, nothing is out, or the
//! application closes (the FIN rides the tail, and `tcp_nagle_test` never
//! holds a FIN). Full segments are never held; neither are
//! retransmissions, nor a tail loss probe (`tcp_send_loss_probe` pushes
//! with `TCP_NAGLE_OFF`). `nodelay = true` is `TCP_NODELAY`: every write
//! leaves at once. A held tail leaves the connection application-limited
//! (Linux `tcp_rate_check_app_limited`: less than one segment unsent).
//!
//! Not modelled, on purpose: **autocorking** (`tcp_should_autocork`,
//! `tcp_autocorking = 1`) holds a short tail only while an earlier packet
//! of the socket still sits in the host's qdisc or device (`sk_wmem_alloc`
//! above the tail's own size), waiting for its transmit completion. Here a
//! packet leaves the host the instant TCP sends it (internal pacing holds
//! packets inside TCP, never in a qdisc; there is no device queue), so that
//! condition never holds and autocorking would never defer anything.
//! Likewise TSO/GSO's deferral (`tcp_tso_should_defer`) does not apply
//! (sender deviation 4: no TSO).

use super::config::Recovery;
use super::output::{RetxKind, SenderOutput};
use super::recovery::Rexmit;
use super::timers::XmitTimer;
use super::TcpSender;
use crate::net::{AbcMark, Packet, PacketKind};
use crate::transport::cc::{CaEvent, CaState, Departure, LostPacket, PacketRecord, SentPacket};
use crate::transport::rtt::RtoRule;
use crate::transport::scoreboard::Seg;
use crate::units::SimTime;

/// The sequence space and what the application gave.
#[derive(Debug, Default)]
pub(super) struct SendState {
    pub(super) snd_una: u64,
    pub(super) snd_nxt: u64,
    /// Bytes the application has written so far.
    pub(super) write_end: u64,
    /// The application will write no more.
    pub(super) closed: bool,
    /// When data was last sent (Linux `lsndtime`).
    pub(super) last_send: Option<SimTime>,
    /// End of the last short (sub-MSS) segment of new data sent (Linux
    /// `snd_sml`, Minshall's variant of Nagle's algorithm).
    pub(super) snd_sml: u64,
    /// Segments out at the last send (Linux `max_packets_out` heuristic).
    pub(super) max_packets_out: u32,
    /// `snd_nxt` when `max_packets_out` was last reset (Linux `max_packets_seq`).
    pub(super) max_packets_seq: u64,
    /// The window limited sending in the current window of data (Linux
    /// `is_cwnd_limited`).
    pub(super) cwnd_limited: bool,
    /// Transmissions so far (orders them when send times tie).
    pub(super) tx_counter: u64,
}

impl TcpSender {
    /// Linux `tcp_is_cwnd_limited`: the window limited sending at some
    /// point of the current window of data, or (in slow start) the window
    /// is less than twice the largest flight of that window.
    pub(super) fn is_cwnd_limited(&self) -> bool {
        if self.send.cwnd_limited {
            return true;
        }
        if self.w.in_slow_start() {
            return self.w.cwnd < 2 * self.send.max_packets_out;
        }
        false
    }

    /// Linux `tcp_cwnd_validate`, called after each transmission attempt.
    fn cwnd_validate(&mut self, is_cwnd_limited: bool) {
        let out_now = self.sb.packets_out();
        let s = &mut self.send;
        if s.snd_una >= s.max_packets_seq || is_cwnd_limited || (!s.cwnd_limited && out_now > s.max_packets_out) {
            s.cwnd_limited = is_cwnd_limited;
            s.max_packets_out = out_now;
            s.max_packets_seq = s.snd_nxt;
        }
    }

    fn rwnd_allows(&self, end: u64) -> bool {
        self.cfg.rwnd_bytes.is_none_or(|w| end <= self.send.snd_una + w)
    }

    /// Sends what the window, the receiver, the application and pacing
    /// allow (Linux `tcp_xmit_retransmit_queue` then `tcp_write_xmit`).
    pub(super) fn transmit(&mut self, now: SimTime, out: &mut SenderOutput) {
        self.transmit_recovery(now, out, Rexmit::Lost);
    }

    /// Transmission after an ACK, as Linux `tcp_xmit_recovery` then
    /// `tcp_data_snd_check`: lost segments first only when the state
    /// machine asked for it; for F-RTO (`Rexmit::New`) new data first, and
    /// retransmissions only if no new data could go.
    pub(super) fn transmit_recovery(&mut self, now: SimTime, out: &mut SenderOutput, rexmit: Rexmit) {
        if !self.initialized {
            self.initialized = true;
            let view = self.view(now);
            self.cc.init(now, &mut self.w, &view);
        }
        let mut sent = 0u32;
        let mut limited = false;
        let snd_nxt = self.send.snd_nxt;
        match rexmit {
            Rexmit::Lost => self.transmit_loop(now, out, true, &mut sent, &mut limited),
            Rexmit::None => self.transmit_loop(now, out, false, &mut sent, &mut limited),
            Rexmit::New => {
                self.transmit_loop(now, out, false, &mut sent, &mut limited);
                if self.send.snd_nxt <= self.rec.high_seq {
                    self.rec.frto = false;
                    self.transmit_loop(now, out, true, &mut sent, &mut limited);
                }
            }
        }
        // Linux: is_cwnd_limited |= (packets_in_flight >= cwnd).
        limited |= self.sb.in_flight() >= self.w.cwnd;
        if sent > 0 || limited {
            self.cwnd_validate(limited);
        }
        if self.send.snd_nxt > snd_nxt {
            // Linux tcp_write_xmit: "Send one loss probe per tail loss
            // episode."
            self.schedule_loss_probe(now, false);
        }
    }

    /// New data is waiting and the receive window lets it go.
    pub(super) fn has_new_data(&self) -> bool {
        self.send.snd_nxt < self.send.write_end && self.rwnd_allows(self.send.snd_nxt + 1)
    }

    /// Linux `tcp_tso_segs`: the algorithm's burst size, given
    /// `tcp_tso_autosize`'s: about a millisecond's worth at the pacing rate
    /// (`sk_pacing_rate >> sk_pacing_shift`, shift 10), at least
    /// `tcp_min_tso_segs` = 2, at most 127 (the `gso_max_size >>
    /// (min_rtt >> tcp_tso_rtt_log)` term, which matters only below a
    /// 1-ms RTT, is left out: sender deviation 4).
    fn tso_segs(&self, rate: crate::units::BitRate) -> u32 {
        let bytes = (rate.bps() / 8) >> 10;
        let autosize = ((bytes / self.cfg.mss as u64).min(127) as u32).max(2);
        self.cc.tso_segs(autosize).clamp(1, 127)
    }

    fn transmit_loop(
        &mut self,
        now: SimTime,
        out: &mut SenderOutput,
        retransmit_lost: bool,
        sent: &mut u32,
        limited: &mut bool,
    ) {
        self.pacer.end_burst();
        loop {
            if self.pacer.waiting() {
                return;
            }
            let retransmit = if retransmit_lost { self.sb.next_lost() } else { None };
            let has_new = self.has_new_data();
            if retransmit.is_none() && !has_new {
                self.check_app_limited();
                return;
            }
            let in_flight = match self.cfg.recovery {
                Recovery::Sack => self.sb.in_flight(),
                Recovery::Newreno => self.sb.packets_out(),
            };
            // NewReno retransmits the lost head regardless of the window
            // (RFC 5681 §3.2 step 2, RFC 6582 step 4).
            let forced =
                self.cfg.recovery == Recovery::Newreno && retransmit.is_some() && self.rec.state == CaState::Recovery;
            if in_flight >= self.w.cwnd && !forced {
                *limited = true;
                return;
            }
            if retransmit.is_none() && self.nagle_holds() {
                // Linux tcp_write_xmit: the window had room, Nagle said
                // wait (not window-limited).
                self.check_app_limited();
                return;
            }
            if !self.departure_allows(now) {
                return;
            }
            if let Some(rate) = self.effective_pacing_rate() {
                let len = match retransmit {
                    Some(i) => self.sb.get(i).len,
                    None => self.next_new_len(),
                };
                let burst = if self.cfg.tso { self.tso_segs(rate) } else { 1 };
                if !self.pacer.admit_burst(now, rate, len, burst) {
                    return;
                }
            }
            match retransmit {
                Some(i) => self.send_retransmission(now, i, out),
                None => self.send_new(now, out),
            }
            *sent += 1;
        }
    }

    /// The algorithm's departure schedule lets a packet leave now; if it
    /// names a later time, the pacing timer is set for it (Linux: an skb
    /// whose `tstamp` is in the future waits in the fq qdisc).
    pub(super) fn departure_allows(&mut self, now: SimTime) -> bool {
        match self.cc.departure(now) {
            Departure::Free | Departure::Now => true,
            Departure::At(t) if t <= now => true,
            Departure::At(t) => {
                self.pacer.hold_until(t);
                false
            }
            Departure::Hold => false,
        }
    }

    /// Linux `tcp_rate_check_app_limited`: less than a segment waits to be
    /// sent and the window has room, so the application is what limits
    /// sending; delivery-rate samples taken until this flight is delivered
    /// are marked application-limited. (Linux checks at each write; here
    /// when the send loop stops for want of data, which is when the
    /// condition can first hold.)
    fn check_app_limited(&mut self) {
        if self.sb.in_flight() < self.w.cwnd && !self.send.closed {
            self.rate.mark_app_limited(self.sb.in_flight());
        }
    }

    /// Linux `tcp_nagle_test` for the tail of the write queue: hold a
    /// short tail (`tcp_nagle_check`: `skb->len < mss`, not `TCP_NODELAY`,
    /// something out) while the last short segment sent is unacknowledged
    /// (`tcp_minshall_check`: snd_una < snd_sml <= snd_nxt). A FIN (the
    /// application closed) is never held.
    fn nagle_holds(&self) -> bool {
        let s = &self.send;
        !self.cfg.nodelay
            && !s.closed
            && s.write_end - s.snd_nxt < self.cfg.mss as u64
            && self.sb.packets_out() > 0
            && s.snd_sml > s.snd_una
            && s.snd_sml <= s.snd_nxt
    }

    fn next_new_len(&self) -> u32 {
        let avail = self.send.write_end - self.send.snd_nxt;
        let mut len = avail.min(self.cfg.mss as u64);
        if let Some(w) = self.cfg.rwnd_bytes {
            len = len.min((self.send.snd_una + w).saturating_sub(self.send.snd_nxt));
        }
        len.max(1) as u32
    }

    pub(super) fn before_send(&mut self, now: SimTime) {
        if self.sb.in_flight() == 0 {
            // Linux tcp_event_data_sent: CA_EVENT_TX_START when nothing is
            // in flight (new data or a retransmission).
            let view = self.view(now);
            self.cc.cwnd_event(now, &mut self.w, &view, CaEvent::TxStart);
        }
        if self.sb.packets_out() == 0 {
            self.cwnd_restart_after_idle(now);
        }
    }

    /// Linux `tcp_cwnd_restart` (RFC 7661), from `tcp_event_data_sent`:
    /// after an idle period longer than the RTO, the window halves once per
    /// RTO idle, down to the initial window. Skipped for `cong_control`
    /// algorithms.
    fn cwnd_restart_after_idle(&mut self, now: SimTime) {
        if !self.cfg.slow_start_after_idle || self.cc_controls {
            return;
        }
        let Some(last) = self.send.last_send else { return };
        let idle = now.saturating_since(last);
        let rto = self.rto.rto(&self.rtt);
        if idle <= rto {
            return;
        }
        let view = self.view(now);
        self.cc.cwnd_event(now, &mut self.w, &view, CaEvent::CwndRestart);
        let restart = self.cfg.initial_cwnd.min(self.w.cwnd);
        let mut cwnd = self.w.cwnd;
        let mut delta = idle.as_nanos().saturating_sub(rto.as_nanos());
        while delta > 0 && cwnd > restart {
            cwnd >>= 1;
            delta = delta.saturating_sub(rto.as_nanos());
        }
        self.w.ssthresh = self.w.ssthresh.max((self.w.cwnd >> 1) + (self.w.cwnd >> 2));
        self.w.cwnd = cwnd.max(restart);
    }

    fn send_new(&mut self, now: SimTime, out: &mut SenderOutput) {
        self.before_send(now);
        let len = self.next_new_len();
        let seq = self.send.snd_nxt;
        let prior_packets = self.sb.packets_out();
        let snap = self.rate.on_send(now, prior_packets);
        let record = self.packet_sent(now, seq, len, false);
        self.sb.push(Seg {
            seq,
            len,
            tx_time: now,
            tx_count: 1,
            tx_order: self.send.tx_counter,
            sacked: false,
            lost: false,
            retrans: false,
            snap,
            record,
        });
        self.send.snd_nxt += len as u64;
        if len < self.cfg.mss {
            // Linux tcp_minshall_update.
            self.send.snd_sml = self.send.snd_nxt;
        }
        self.after_send(now);
        // Linux tcp_event_new_data_sent: the RTO starts with the first
        // segment out, and replaces a pending probe (which tcp_write_xmit
        // then schedules again).
        if prior_packets == 0 || self.rto.kind() == Some(XmitTimer::Probe) {
            self.rearm_rto(now);
        }
        out.packets.push(self.data_packet(seq, len, now, false));
    }

    pub(super) fn data_packet(&self, seq: u64, len: u32, now: SimTime, retransmit: bool) -> Packet {
        let mut p = Packet::data(self.flow, seq, len, now, retransmit);
        if self.signals.abc {
            if let PacketKind::Data(d) = &mut p.kind {
                d.abc = AbcMark::Capable;
            }
        }
        p
    }

    fn send_retransmission(&mut self, now: SimTime, i: usize, out: &mut SenderOutput) {
        self.before_send(now);
        let snap = self.rate.on_send(now, self.sb.packets_out());
        let (seq, len) = (self.sb.get(i).seq, self.sb.get(i).len);
        let record = self.packet_sent(now, seq, len, true);
        self.sb.on_retransmit(i, now, self.send.tx_counter, snap, record);
        // Linux tcp_retransmit_skb: the first retransmission's time and one
        // more retransmission a D-SACK may prove spurious.
        self.undo.on_retransmit(now);
        if i == 0 && self.rtt.rule() == RtoRule::Linux && self.rto.kind() != Some(XmitTimer::Reorder) {
            // Linux tcp_xmit_retransmit_queue: retransmitting the head of
            // the queue restarts the RTO from now (unless the reordering
            // timer is armed).
            self.rto.arm(now, &self.rtt);
        }
        let kind = if self.rec.state == CaState::Loss {
            self.stats.retransmits_timeout += 1;
            RetxKind::Timeout
        } else {
            self.stats.retransmits_fast += 1;
            RetxKind::Fast
        };
        self.after_send(now);
        out.retransmits.push((seq, kind));
        out.packets.push(self.data_packet(seq, len, now, true));
    }

    /// Linux `tcp_rate_skb_sent` with Google's BBRv3 `tcp_set_tx_in_flight`:
    /// tells the algorithm of a packet about to leave, before the
    /// scoreboard accounts for it, and returns the record it keeps. In
    /// flight counts the packet itself once more (a probe's resent segment,
    /// still in flight, is counted twice, as in Linux).
    pub(super) fn packet_sent(&mut self, now: SimTime, seq: u64, len: u32, retransmission: bool) -> PacketRecord {
        let p = SentPacket {
            seq,
            len,
            retransmission,
            in_flight: self.sb.in_flight() + 1,
            delivered: self.rate.delivered,
            lost: self.rec.lost_total,
            app_limited: self.rate.app_limited_until != 0,
        };
        self.cc.on_packet_sent(now, &p)
    }

    /// Hands the markings the scoreboard made to the algorithm, one call
    /// per marking, each after counting it in `tp->lost` (Linux
    /// `tcp_mark_skb_lost`, `tcp_notify_skb_loss_event`). Returns how many
    /// there were.
    pub(super) fn notify_lost(&mut self, now: SimTime) -> u32 {
        let marked = self.sb.take_marked();
        for m in &marked {
            self.rec.lost_total += 1;
            let view = self.view(now);
            let p = LostPacket {
                seq: m.seq,
                len: m.len,
                record: m.record,
                lost_total: self.rec.lost_total,
            };
            self.cc.on_packet_lost(now, &self.w, &view, &p);
        }
        marked.len() as u32
    }

    pub(super) fn after_send(&mut self, now: SimTime) {
        self.send.tx_counter += 1;
        self.stats.segments_sent += 1;
        self.send.last_send = Some(now);
        self.rec.prr_out += 1;
    }

    /// A tail loss probe of new data: one segment whatever the congestion
    /// window says, if pacing lets it go now (Linux `tcp_write_xmit` with
    /// `push_one = 2`).
    pub(super) fn send_new_probe(&mut self, now: SimTime, out: &mut SenderOutput) {
        if self.pacer.waiting() || !self.departure_allows(now) {
            return;
        }
        if let Some(rate) = self.effective_pacing_rate() {
            if !self.pacer.admit(now, rate, self.next_new_len()) {
                return;
            }
        }
        self.send_new(now, out);
    }
}
