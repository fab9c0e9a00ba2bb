//! The TCP sender: byte sequence numbers, cumulative and selective
//! acknowledgments, loss recovery, the retransmission timer, ACK clocking
//! and pacing. The congestion-control algorithm is a
//! [`CongestionControl`] hooked in as Linux hooks `tcp_congestion_ops`.
//!
//! Read first: RFC 9293 (TCP), RFC 5681 (congestion control), RFC 6298
//! (RTO), RFC 2018 and RFC 6675 (SACK and SACK-based recovery), RFC 6582
//! (NewReno recovery without SACK), RFC 6937 (proportional rate reduction),
//! RFC 7661 (window validation after idle). The ACK-processing order follows
//! Linux `tcp_ack()` in `net/ipv4/tcp_input.c`: SACK tagging, cumulative
//! ACK, RTT and rate samples, loss state machine (`tcp_fastretrans_alert`),
//! window update (`tcp_cong_control`), then transmission.
//!
//! The sender is split by concern, each part with its own state:
//! - [`config`]: the [`TcpConfig`] a scenario sets (never changes while the
//!   connection runs);
//! - `ack`: ACK processing in `tcp_ack()`'s order;
//! - `send`: the send loop, the sequence space, window validation and the
//!   restart after idle;
//! - `recovery`: the loss state machine, PRR and NewReno recovery;
//! - `undo`: undoing reductions that prove spurious;
//! - `timers`: the one retransmission-class timer (RTO, tail loss probe,
//!   RACK reordering timeout) and the dispatch of due timers;
//! - [`clock`]: jiffies and the kernel timer wheel the timers run on;
//! - `pacer`: earliest-departure-time pacing and Linux's default rate;
//! - `rack`: RACK's time-based loss detection;
//! - [`output`]: what a call hands back, and the connection's counters.
//!
//! Mechanisms, with the switch that selects the Linux behaviour (default)
//! or another:
//! - **Retransmission timeout** (`rto_rule = "linux"`): RTO = srtt +
//!   rttvar, where Linux's `tcp_rtt_estimator` floors rttvar at `min_rto_ms`
//!   once per round of data and lowers the deviation's gain when the RTT
//!   falls ([`crate::transport::rtt`]); rounded up to jiffies and at most
//!   `max_rto_ms` (`tcp_set_rto`, `tcp_bound_rto`). Each timeout doubles it
//!   up to `max_rto_ms` (`tcp_retransmit_timer`); only an ACK with a valid
//!   RTT sample recomputes it and clears the backoff (`tcp_ack_update_rtt`).
//!   The timer restarts on every ACK of new data, when the head of the
//!   queue is retransmitted (`tcp_xmit_retransmit_queue`), and on a SACK
//!   RTT sample older than the head's last transmission
//!   (`tcp_clean_rtx_queue`). `rto_rule = "rfc6298"` is ns-3's: max(rto_min,
//!   srtt + 4·rttvar), recomputed on every new ACK, restarted only by new
//!   ACKs.
//! - **Timeout marking** (`tcp_timeout_mark_lost`): a timeout marks lost
//!   every un-SACKed segment and counts a lost-marked retransmission as
//!   lost again; with RACK it spares segments sent within the last RACK RTT
//!   (not the head), which may still be on their way.
//! - **Undo** (`undo = true`, `undo`): a fast recovery or a timeout whose
//!   retransmissions all come back as D-SACKs (RFC 3708; the receiver
//!   sends them, `receiver.dsack`), or whose ACK echoes a timestamp older
//!   than the first retransmission (Eifel, RFC 3522: the original only
//!   arrived late), is undone: the window comes back through the
//!   algorithm's `undo_cwnd`, ssthresh is restored, and after a timeout
//!   or a partial ACK the loss marks are dropped (`tcp_try_undo_recovery`,
//!   `_loss`, `_partial`, `_dsack`). Counted as Linux's `TCPLossUndo`,
//!   `TCPFullUndo`, `TCPPartialUndo`, `TCPDSACKUndo`.
//! - **F-RTO** (`frto = true`, Linux `tcp_frto = 2`; RFC 5682 §3,
//!   SACK-enhanced, `tcp_process_loss`): after a timeout the first ACK
//!   that advances snd_una lets new data out instead of more
//!   retransmissions; an ACK that then (S)ACKs data never retransmitted
//!   proves the timeout spurious and undoes it (`TCPSpuriousRTOs`); a
//!   duplicate ACK or new SACK proves the loss real.
//! - **Tail loss probe** (`tlp = true`, Linux `tcp_early_retrans = 3`;
//!   RFC 8985 §7, `tcp_schedule_loss_probe`, `tcp_send_loss_probe`,
//!   `tcp_process_tlp_ack`): in Open, when no ACK has come for 2·srtt + 2 ms
//!   (2·srtt + `min_rto_ms` with one segment out, never after the RTO), send
//!   one new segment beyond the window, or resend the last one. A D-SACK or
//!   a duplicate ACK of the probe shows nothing was lost; an ACK beyond it
//!   shows it repaired a loss, and the window is reduced once (CWR). Linux
//!   keeps one timer for the RTO, the probe and RACK's reordering timeout
//!   (`icsk_pending`); so does the sender.
//! - **Nagle's algorithm** (`nodelay = false`, Linux's default without
//!   `TCP_NODELAY`; `tcp_nagle_test` with Minshall's variant, `snd_sml`):
//!   a short tail of unsent data waits while a short segment sent earlier
//!   is unacknowledged, so that small writes merge into full segments;
//!   a close pushes it. See `send`. Autocorking is not modelled (no host
//!   queue here for it to wait on; see `send`).
//! - **Per-packet records for the algorithm** (always): every transmission
//!   asks the algorithm for its record of the packet
//!   ([`CongestionControl::on_packet_sent`], with in flight counted as
//!   Google's BBRv3 `tcp_set_tx_in_flight`), kept with the segment; the rate
//!   sample carries the sampled packet's record; each loss marking is
//!   counted in `tp->lost` and then handed over
//!   ([`CongestionControl::on_packet_lost`]); a loss a tail loss probe
//!   repaired is reported before the reduction
//!   ([`CongestionControl::on_tlp_recovery`]), and an ACK at the probe's
//!   sequence is flagged in the rate sample.
//! - **Timer clock** (`timer_clock = "jiffies"`, `timer_hz = 250`): the
//!   RTO, the probe and the reordering timeout count whole jiffies and fire
//!   on the timer wheel's ticks ([`clock`]); `"exact"` fires at the
//!   nanosecond.
//!
//! Deviations from Linux, numbered:
//! 1. No connection set-up or tear-down: the flow starts established (the
//!    handshake would add one RTT and no congestion-control behaviour). So
//!    the first RTO is the initial 1 s until the first ACK brings an RTT
//!    sample; Linux would already have the handshake's sample.
//! 2. Loss detection with SACK is RACK (RFC 8985 §6, Linux's default, with
//!    Linux's reordering window for a path where no reordering was seen) or
//!    RFC 6675 `IsLost`, the tail loss probe and the RTO. D-SACKs do not
//!    widen RACK's reordering window (`tcp_rack_update_reo_wnd`).
//! 3. The receive window is unlimited unless `rwnd_bytes` is set (Linux
//!    autotunes it; cellular buffers rarely make it the limit).
//! 4. TSO/GSO (`tcp.tso`, on by default) shapes only when paced segments
//!    leave: a kernel algorithm's paced segments go in bursts of Linux's skb
//!    size (`tcp_tso_autosize`, or the algorithm's own goal, as BBR's), back
//!    to back, as Linux's GSO splits an skb before the wire; every segment
//!    is still one packet of at most one MSS (loss, SACK and retransmission
//!    work per segment, not per skb), unpaced flows send as the window
//!    opens (as Linux's do when ACKs release two segments at a time), and
//!    `tcp_tso_should_defer` and the sub-ms-RTT term of `tcp_tso_autosize`
//!    are left out. Why it matters: on a link that serves packets in
//!    opportunities (a trace link), the second segment of each pair waits
//!    behind the first, and BBR's RTT samples, min RTT and window grow by
//!    the gap (measured against Linux in docs/validation.md).
//! 5. Sequence numbers are 64-bit and never wrap.
//! 6. Timestamps are exact: Linux's TSval ticks in milliseconds, so its
//!    timestamp-based RTT samples (used when Karn's rule leaves no other)
//!    are whole milliseconds, at least 1 ms.
//! 7. A probe of new data is sent whether or not the TSO/qdisc queues are
//!    busy (Linux skips a probe whose original is still in a host queue,
//!    `skb_still_in_host_queue`; there are none here).
//! 8. Re-arming the RTO does not add the pacing delay of a packet held back
//!    by pacing (`tcp_reset_xmit_timer`'s `tcp_pacing_delay`).
//! 9. With `recovery = "newreno"` (no SACK) there is no F-RTO and no undo;
//!    Linux does both for non-SACK connections too.
//! 10. A SACKed segment's retransmission stops counting as in flight at
//!     once (Linux keeps `TCPCB_SACKED_RETRANS` until the retransmission is
//!     acknowledged or D-SACKed).

mod ack;
pub mod clock;
pub mod config;
mod invariants;
pub mod output;
mod pacer;
mod rack;
mod recovery;
mod send;
mod timers;
mod undo;

#[cfg(test)]
mod tests;

pub use clock::TimerClock;
pub use config::{LossDetection, Recovery, TcpConfig};
pub use output::{RetxKind, SenderOutput, SenderStats};

use super::cc::{CaState, CongestionControl, ConnView, Feedback, Signals, Window};
use super::rate::RateState;
use super::rtt::RttEstimator;
use super::scoreboard::Scoreboard;
use crate::net::FlowId;
use crate::units::{BitRate, SimDuration, SimTime};

use pacer::Pacer;
use rack::Rack;
use recovery::RecoveryState;
use send::SendState;
use timers::{ProbeState, RetransmitTimer};
use undo::UndoState;

pub struct TcpSender {
    flow: FlowId,
    cfg: TcpConfig,
    cc: Box<dyn CongestionControl>,
    /// The window the framework and the algorithm share.
    w: Window,
    rtt: RttEstimator,
    sb: Scoreboard,
    rate: RateState,
    send: SendState,
    rec: RecoveryState,
    undo: UndoState,
    rto: RetransmitTimer,
    probe: ProbeState,
    pacer: Pacer,
    rack: Rack,
    stats: SenderStats,
    /// The network signals the algorithm consumes.
    signals: Signals,
    /// `cc.init` has run (before the first transmission).
    initialized: bool,
    /// The algorithm sets the window itself (Linux `cong_control`); the
    /// framework then leaves cwnd alone at the end of recovery and after idle.
    cc_controls: bool,
}

impl TcpSender {
    pub fn new(flow: FlowId, cfg: TcpConfig, cc: Box<dyn CongestionControl>) -> Self {
        let signals = cc.signals();
        let rtt = RttEstimator::new(cfg.rtt_config());
        let rto = RetransmitTimer::new(&cfg);
        let mut w = Window::new(cfg.initial_cwnd);
        if let Some(s) = cfg.initial_ssthresh {
            w.ssthresh = s.max(1);
        }
        TcpSender {
            flow,
            cfg,
            cc,
            w,
            rtt,
            sb: Scoreboard::default(),
            rate: RateState::default(),
            send: SendState::default(),
            rec: RecoveryState::default(),
            undo: UndoState::default(),
            rto,
            probe: ProbeState::default(),
            pacer: Pacer::default(),
            rack: Rack::default(),
            stats: SenderStats::default(),
            signals,
            initialized: false,
            cc_controls: false,
        }
    }

    // ----- observers -----

    pub fn flow(&self) -> FlowId {
        self.flow
    }
    pub fn cwnd(&self) -> u32 {
        self.w.cwnd
    }
    pub fn ssthresh(&self) -> u32 {
        self.w.ssthresh
    }
    pub fn window(&self) -> &Window {
        &self.w
    }
    pub fn srtt(&self) -> Option<SimDuration> {
        self.rtt.srtt()
    }
    pub fn min_rtt(&self) -> Option<SimDuration> {
        self.rtt.min()
    }
    pub fn ca_state(&self) -> CaState {
        self.rec.state
    }
    pub fn snd_una(&self) -> u64 {
        self.send.snd_una
    }
    pub fn snd_nxt(&self) -> u64 {
        self.send.snd_nxt
    }
    pub fn write_end(&self) -> u64 {
        self.send.write_end
    }
    pub fn in_flight(&self) -> u32 {
        self.sb.in_flight()
    }
    pub fn stats(&self) -> SenderStats {
        self.stats
    }
    pub fn cc(&self) -> &dyn CongestionControl {
        self.cc.as_ref()
    }
    pub fn pacing_rate(&self) -> Option<BitRate> {
        self.effective_pacing_rate()
    }
    /// The control port, if the flow's algorithm is driven from outside
    /// (`external`).
    pub fn external(&mut self) -> Option<&mut super::cc::external::External> {
        self.cc.external()
    }
    /// Whether `cc.init` has run (the first segment was sent).
    pub fn initialized(&self) -> bool {
        self.initialized
    }
    /// The network signals this flow's algorithm needs.
    pub fn signals(&self) -> Signals {
        self.signals
    }

    /// Feedback that does not ride an ACK (NetAssist, the oracle).
    pub fn on_out_of_band(&mut self, now: SimTime, fb: &Feedback, out: &mut SenderOutput) {
        if !self.initialized {
            return;
        }
        let view = self.view(now);
        self.cc.on_feedback(now, &mut self.w, &view, fb);
        self.w.cwnd = self.w.cwnd.clamp(1, self.w.cwnd_clamp);
        self.transmit(now, out);
    }

    /// All written data has been acknowledged and the application closed.
    pub fn finished(&self) -> bool {
        self.send.closed && self.send.snd_una >= self.send.write_end
    }
    /// Earliest pending timer (retransmission or pacing).
    pub fn next_timer(&self) -> Option<SimTime> {
        [self.rto.deadline(), self.pacer.timer()].into_iter().flatten().min()
    }
    pub fn scoreboard_consistent(&self) -> bool {
        self.sb.consistent()
    }

    fn view(&self, now: SimTime) -> ConnView {
        ConnView {
            now,
            mss: self.cfg.mss,
            snd_una: self.send.snd_una,
            snd_nxt: self.send.snd_nxt,
            packets_out: self.sb.packets_out(),
            packets_in_flight: self.sb.in_flight(),
            srtt: self.rtt.srtt(),
            min_rtt: self.rtt.min(),
            delivered: self.rate.delivered,
            ca_state: self.rec.state,
            is_cwnd_limited: self.is_cwnd_limited(),
            app_limited: self.rate.app_limited_until != 0,
            sacked_out: self.sb.sacked_out(),
            lost_out: self.sb.lost_out(),
            retrans_out: self.sb.retrans_out(),
            lost_total: self.rec.lost_total,
            last_send: self.send.last_send,
            pacing: self.cfg.pacing || self.cc.pacing_rate().is_some(),
        }
    }

    /// The algorithm's pacing rate, or Linux's default when the framework
    /// paces and the algorithm sets none.
    fn effective_pacing_rate(&self) -> Option<BitRate> {
        if let Some(r) = self.cc.pacing_rate() {
            return Some(r);
        }
        if !self.cfg.pacing {
            return None;
        }
        let srtt = self.rtt.srtt()?;
        Some(pacer::default_rate(
            self.w.cwnd,
            self.w.ssthresh,
            self.sb.packets_out(),
            self.cfg.mss,
            srtt,
        ))
    }

    // ----- application side -----

    /// The application writes `bytes` more (use `u64::MAX` for an endless
    /// bulk transfer).
    pub fn app_write(&mut self, now: SimTime, bytes: u64, out: &mut SenderOutput) {
        self.send.write_end = self.send.write_end.saturating_add(bytes);
        self.transmit(now, out);
    }

    /// The application closes: nothing beyond what was written is sent.
    /// A bulk flow stopping at a given time closes at what it has sent.
    /// Otherwise the close pushes what Nagle's algorithm held (Linux
    /// `tcp_send_fin` puts the FIN on the tail and pushes with
    /// `TCP_NAGLE_OFF`).
    pub fn app_close(&mut self, now: SimTime, truncate_to_sent: bool, out: &mut SenderOutput) {
        if truncate_to_sent {
            self.send.write_end = self.send.snd_nxt;
        }
        self.send.closed = true;
        if self.send.snd_nxt < self.send.write_end {
            self.transmit(now, out);
        }
    }
}
