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
//! Deviations from Linux, numbered:
//! 1. No connection set-up or tear-down: the flow starts established (the
//!    handshake would add one RTT and no congestion-control behaviour).
//! 2. Loss detection with SACK is RACK (RFC 8985 §6, Linux's default, with
//!    Linux's reordering window) or RFC 6675 `IsLost`, and the RTO. The tail
//!    loss probe, F-RTO and undo (Eifel, DSACK) are not modelled: a lost
//!    tail waits for the RTO, and a spurious retransmission is never undone.
//! 3. The receive window is unlimited unless `rwnd_bytes` is set (Linux
//!    autotunes it; cellular buffers rarely make it the limit).
//! 4. No TSO/GSO: every segment is one packet of at most one MSS.
//! 5. Sequence numbers are 64-bit and never wrap.

use serde::{Deserialize, Serialize};

use super::cc::{
    AckFlags, AckSample, CaEvent, CaState, CongestionControl, ConnView, Feedback, RateSample, Signals, Window,
};
use super::rate::RateState;
use super::rtt::{RttConfig, RttEstimator};
use super::scoreboard::{Scoreboard, Seg};
use crate::net::{AbcMark, AckHeader, FlowId, Packet, PacketKind};
use crate::units::{check_range, check_range_u64, BitRate, SimDuration, SimTime, MAX_SPAN_MS};

/// How losses are detected when SACK is in use.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LossDetection {
    /// RACK (RFC 8985 §6), Linux's default since 4.18: a segment is lost
    /// when one sent after it was delivered and a reordering window has
    /// passed; also finds lost retransmissions.
    #[default]
    Rack,
    /// RFC 6675 `IsLost`: three SACKed segments above a hole (ns-3's rule).
    Dupthresh,
}

/// How losses are recovered.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Recovery {
    /// SACK scoreboard (RFC 6675) with PRR (RFC 6937), as Linux.
    Sack,
    /// No SACK: NewReno fast recovery with window inflation (RFC 6582).
    Newreno,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TcpConfig {
    /// Payload bytes per full segment.
    pub mss: u32,
    /// Initial window, segments (RFC 6928: 10).
    pub initial_cwnd: u32,
    pub recovery: Recovery,
    /// Loss detection with SACK (`"rack"` or `"dupthresh"`).
    pub loss_detection: LossDetection,
    /// Duplicate ACKs / SACKed segments that make a hole a loss.
    pub dupthresh: u32,
    pub min_rto_ms: f64,
    pub initial_rto_ms: f64,
    pub max_rto_ms: f64,
    /// Pace at Linux's default rate (2× cwnd/srtt in slow start, 1.2× after)
    /// when the algorithm sets no pacing rate itself.
    pub pacing: bool,
    /// RFC 7661 / Linux `tcp_slow_start_after_idle`.
    pub slow_start_after_idle: bool,
    /// Receiver's advertised window; `None` = unlimited.
    pub rwnd_bytes: Option<u64>,
    /// Initial slow-start threshold, segments (Linux: a route's `ssthresh`
    /// metric); `None` = infinite. The XRC paper starts competitors with
    /// one segment so they skip slow start.
    pub initial_ssthresh: Option<u32>,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            mss: 1448,
            initial_cwnd: 10,
            recovery: Recovery::Sack,
            loss_detection: LossDetection::Rack,
            dupthresh: 3,
            min_rto_ms: 200.0,
            initial_rto_ms: 1000.0,
            max_rto_ms: 120_000.0,
            pacing: false,
            slow_start_after_idle: true,
            rwnd_bytes: None,
            initial_ssthresh: None,
        }
    }
}

impl TcpConfig {
    pub fn validate(&self) -> Result<(), String> {
        // Linux's smallest MSS (TCP_MIN_MSS, 88) to a 65535-byte IP packet.
        check_range_u64(
            "mss",
            self.mss as u64,
            88,
            65_535 - crate::net::packet::TCP_IP_HEADER_BYTES as u64,
        )?;
        // The initial window may not exceed TCP's largest window.
        let max_iw = (super::MAX_WINDOW_BYTES / self.mss as u64).min(super::MAX_WINDOW_SEGMENTS as u64);
        check_range_u64("initial_cwnd", self.initial_cwnd as u64, 1, max_iw)?;
        if let Some(w) = self.rwnd_bytes {
            // At least one segment (a smaller window never lets one out), at
            // most the largest window TCP can advertise (RFC 7323).
            check_range_u64("rwnd_bytes", w, self.mss as u64, super::MAX_WINDOW_BYTES)?;
        }
        if self.initial_ssthresh == Some(0) {
            return Err("initial_ssthresh must be at least 1 segment, got 0".into());
        }
        if self.dupthresh == 0 {
            return Err("dupthresh must be at least 1".into());
        }
        for (n, v) in [
            ("min_rto_ms", self.min_rto_ms),
            ("initial_rto_ms", self.initial_rto_ms),
            ("max_rto_ms", self.max_rto_ms),
        ] {
            // One millisecond (a jiffy at HZ=1000; a timer that rounds to
            // zero nanoseconds would fire at the same instant forever) to
            // the longest run.
            check_range(n, v, 1.0, MAX_SPAN_MS)?;
        }
        if self.min_rto_ms > self.max_rto_ms {
            return Err(format!(
                "min_rto_ms ({}) exceeds max_rto_ms ({})",
                self.min_rto_ms, self.max_rto_ms
            ));
        }
        Ok(())
    }
    fn rtt_config(&self) -> RttConfig {
        RttConfig {
            initial_rto: SimDuration::try_from_millis_f64(self.initial_rto_ms).unwrap_or(SimDuration::from_secs(1)),
            min_rto: SimDuration::try_from_millis_f64(self.min_rto_ms).unwrap_or(SimDuration::from_millis(200)),
            max_rto: SimDuration::try_from_millis_f64(self.max_rto_ms).unwrap_or(SimDuration::from_secs(120)),
        }
    }
}

/// Why a segment was sent again.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RetxKind {
    /// Loss recovery driven by (S)ACKs.
    Fast,
    /// After a retransmission timeout.
    Timeout,
}

/// What a call into the sender produced; the caller drains it.
#[derive(Debug, Default)]
pub struct SenderOutput {
    pub packets: Vec<Packet>,
    /// RTT samples taken (one per ACK that produced one).
    pub rtt_samples: Vec<SimDuration>,
    pub retransmits: Vec<(u64, RetxKind)>,
}

impl SenderOutput {
    pub fn clear(&mut self) {
        self.packets.clear();
        self.rtt_samples.clear();
        self.retransmits.clear();
    }
}

/// Counters over the connection's life.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct SenderStats {
    pub segments_sent: u64,
    pub retransmits_fast: u64,
    pub retransmits_timeout: u64,
    pub timeouts: u64,
    pub recoveries: u64,
}

pub struct TcpSender {
    flow: FlowId,
    cfg: TcpConfig,
    cc: Box<dyn CongestionControl>,
    w: Window,
    rtt: RttEstimator,
    sb: Scoreboard,
    rate: RateState,
    snd_una: u64,
    snd_nxt: u64,
    /// Bytes the application has written so far.
    write_end: u64,
    /// The application will write no more.
    closed: bool,
    state: CaState,
    /// Recovery point (Linux `high_seq`, RFC 6582 `recover`).
    high_seq: u64,
    prior_cwnd: u32,
    prr_delivered: u32,
    prr_out: u32,
    /// NewReno duplicate-ACK count.
    dupacks: u32,
    rto_deadline: Option<SimTime>,
    /// Earliest time the next packet may leave under pacing.
    pace_next: SimTime,
    pace_wait: Option<SimTime>,
    last_send: Option<SimTime>,
    /// Segments out at the last send (Linux `max_packets_out` heuristic).
    max_packets_out: u32,
    /// `snd_nxt` when `max_packets_out` was last reset (Linux `max_packets_seq`).
    max_packets_seq: u64,
    cwnd_limited: bool,
    initialized: bool,
    stats: SenderStats,
    signals: Signals,
    /// Segments marked lost over the connection's life.
    lost_total: u64,
    /// Segments marked lost while processing the current ACK.
    marked_lost: u32,
    /// RACK: the transmission number of the most recently sent delivered
    /// segment and its RTT (RFC 8985 RACK.xmit_ts/end_seq, RACK.rtt).
    rack: Option<(u64, SimDuration)>,
    /// Transmissions so far (orders them when send times tie).
    tx_counter: u64,
    /// RACK's reordering timer.
    rack_timer: Option<SimTime>,
    /// Segments delivered by the ACK being processed: (send time,
    /// transmission number, retransmitted).
    delivered_scratch: Vec<(SimTime, u64, bool)>,
    /// The algorithm sets the window itself (Linux `cong_control`); the
    /// framework then leaves cwnd alone at the end of recovery and after idle.
    cc_controls: bool,
}

impl TcpSender {
    pub fn new(flow: FlowId, cfg: TcpConfig, cc: Box<dyn CongestionControl>) -> Self {
        let signals = cc.signals();
        let rtt = RttEstimator::new(cfg.rtt_config());
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
            snd_una: 0,
            snd_nxt: 0,
            write_end: 0,
            closed: false,
            state: CaState::Open,
            high_seq: 0,
            prior_cwnd: 0,
            prr_delivered: 0,
            prr_out: 0,
            dupacks: 0,
            rto_deadline: None,
            pace_next: SimTime::ZERO,
            pace_wait: None,
            last_send: None,
            max_packets_out: 0,
            max_packets_seq: 0,
            cwnd_limited: false,
            initialized: false,
            stats: SenderStats::default(),
            signals,
            lost_total: 0,
            marked_lost: 0,
            rack: None,
            tx_counter: 0,
            rack_timer: None,
            delivered_scratch: Vec::new(),
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
        self.state
    }
    pub fn snd_una(&self) -> u64 {
        self.snd_una
    }
    pub fn snd_nxt(&self) -> u64 {
        self.snd_nxt
    }
    pub fn write_end(&self) -> u64 {
        self.write_end
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
        self.closed && self.snd_una >= self.write_end
    }
    /// Earliest pending timer (retransmission or pacing).
    pub fn next_timer(&self) -> Option<SimTime> {
        [self.rto_deadline, self.pace_wait, self.rack_timer]
            .into_iter()
            .flatten()
            .min()
    }
    pub fn scoreboard_consistent(&self) -> bool {
        self.sb.consistent()
    }

    fn view(&self, now: SimTime) -> ConnView {
        ConnView {
            now,
            mss: self.cfg.mss,
            snd_una: self.snd_una,
            snd_nxt: self.snd_nxt,
            packets_out: self.sb.packets_out(),
            packets_in_flight: self.sb.in_flight(),
            srtt: self.rtt.srtt(),
            min_rtt: self.rtt.min(),
            delivered: self.rate.delivered,
            ca_state: self.state,
            is_cwnd_limited: self.is_cwnd_limited(),
            app_limited: self.rate.app_limited_until != 0,
            sacked_out: self.sb.sacked_out(),
            lost_out: self.sb.lost_out(),
            retrans_out: self.sb.retrans_out(),
            lost_total: self.lost_total,
            last_send: self.last_send,
            pacing: self.cfg.pacing || self.cc.pacing_rate().is_some(),
        }
    }

    /// Linux `tcp_is_cwnd_limited`: the window limited sending at some
    /// point of the current window of data, or (in slow start) the window
    /// is less than twice the largest flight of that window.
    fn is_cwnd_limited(&self) -> bool {
        if self.cwnd_limited {
            return true;
        }
        if self.w.in_slow_start() {
            return self.w.cwnd < 2 * self.max_packets_out;
        }
        false
    }

    /// Linux `tcp_cwnd_validate`, called after each transmission attempt.
    fn cwnd_validate(&mut self, is_cwnd_limited: bool) {
        let out_now = self.sb.packets_out();
        if self.snd_una >= self.max_packets_seq
            || is_cwnd_limited
            || (!self.cwnd_limited && out_now > self.max_packets_out)
        {
            self.cwnd_limited = is_cwnd_limited;
            self.max_packets_out = out_now;
            self.max_packets_seq = self.snd_nxt;
        }
    }

    // ----- application side -----

    /// The application writes `bytes` more (use `u64::MAX` for an endless
    /// bulk transfer).
    pub fn app_write(&mut self, now: SimTime, bytes: u64, out: &mut SenderOutput) {
        self.write_end = self.write_end.saturating_add(bytes);
        self.transmit(now, out);
    }

    /// The application closes: nothing beyond what was written is sent.
    /// A bulk flow stopping at a given time closes at what it has sent.
    pub fn app_close(&mut self, truncate_to_sent: bool) {
        if truncate_to_sent {
            self.write_end = self.snd_nxt;
        }
        self.closed = true;
    }

    // ----- ACK processing -----

    pub fn on_ack(&mut self, now: SimTime, ack: &AckHeader, out: &mut SenderOutput) {
        if ack.ack > self.snd_nxt || ack.ack < self.snd_una {
            // Acknowledges something never sent, or older than what we know.
            return;
        }
        if !self.initialized {
            return;
        }
        let view = self.view(now);
        if let Some(x) = ack.xrc {
            self.cc.on_feedback(now, &mut self.w, &view, &Feedback::Xrc(x));
        }
        if self.signals.abc && (ack.abc_accelerate > 0 || ack.abc_brake > 0) {
            let fb = Feedback::Abc {
                accelerate: ack.abc_accelerate,
                brake: ack.abc_brake,
            };
            self.cc.on_feedback(now, &mut self.w, &view, &fb);
        }
        if let (true, Some(r)) = (self.signals.pbe, ack.pbe_rate_bps) {
            self.cc
                .on_feedback(now, &mut self.w, &view, &Feedback::Pbe { rate_bps: r });
        }

        let prior_in_flight = self.sb.in_flight();
        let prior_snd_una = self.snd_una;
        self.marked_lost = 0;
        self.delivered_scratch.clear();

        // --- SACK tagging (Linux tcp_sacktag_write_queue): blocks in
        // sequence order; the send times of the first and last newly SACKed
        // never-retransmitted segments (`first_sackt`, `last_sackt`).
        let mut newly_sacked = 0u32;
        let mut first_sackt: Option<SimTime> = None;
        let mut last_sackt: Option<SimTime> = None;
        if self.cfg.recovery == Recovery::Sack {
            let mut blocks = [crate::net::SackBlock::default(); crate::net::packet::MAX_SACK_BLOCKS];
            let n = ack.sack_blocks().len();
            blocks[..n].copy_from_slice(ack.sack_blocks());
            blocks[..n].sort_by_key(|b| b.start);
            for b in &blocks[..n] {
                if b.end <= self.snd_una || b.start >= self.snd_nxt {
                    continue;
                }
                let rate = &mut self.rate;
                let delivered = &mut self.delivered_scratch;
                newly_sacked += self.sb.sack(b.start, b.end, |s| {
                    rate.on_delivered(s);
                    delivered.push((s.tx_time, s.tx_order, s.ever_retransmitted()));
                    if !s.ever_retransmitted() {
                        first_sackt.get_or_insert(s.tx_time);
                        last_sackt = Some(s.tx_time);
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
        if ack.ack > self.snd_una {
            let rate = &mut self.rate;
            let delivered = &mut self.delivered_scratch;
            self.sb.ack_cumulative(ack.ack, |s| {
                newly_acked += 1;
                if !s.sacked {
                    delivered.push((s.tx_time, s.tx_order, s.ever_retransmitted()));
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
                    }
                }
            });
            self.snd_una = ack.ack;
            self.rtt.reset_backoff();
        }
        let snd_una_advanced = self.snd_una > prior_snd_una;
        let delivered_now = newly_acked_unsacked + newly_sacked;

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
            self.rtt.update(r);
            out.rtt_samples.push(r);
        }
        self.rack_advance(now, ack.ts_ecr);
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

        // --- loss state machine (Linux tcp_fastretrans_alert) ---
        // RFC 5681 §2: same cumulative ACK, data outstanding (no payload and
        // no window change hold for every ACK here).
        let is_dupack = !snd_una_advanced && self.sb.packets_out() > 0;
        match self.cfg.recovery {
            Recovery::Sack => self.sack_state_machine(now, snd_una_advanced, newly_sacked),
            Recovery::Newreno => {
                self.newreno_state_machine(now, snd_una_advanced, is_dupack, newly_acked, out);
            }
        }
        // Every marking counts, as Linux's tp->lost (a segment marked and
        // then acknowledged in the same ACK still counts).
        let newly_lost = self.marked_lost;
        self.lost_total += newly_lost as u64;

        // --- rate sample (Linux tcp_rate_gen) ---
        let min_rtt = self.rtt.min();
        let rs: RateSample = self
            .rate
            .generate(now, delivered_now, newly_lost, prior_in_flight, ca_rtt, min_rtt);

        // --- window update (Linux tcp_cong_control) ---
        let view = self.view(now);
        if self.cc.cong_control(now, &mut self.w, &view, &rs) {
            // The algorithm set cwnd (and pacing) itself.
            self.cc_controls = true;
        } else if self.state == CaState::Recovery && self.cfg.recovery == Recovery::Sack {
            self.prr_update(delivered_now, newly_lost, snd_una_advanced);
        } else if self.state != CaState::Recovery && snd_una_advanced {
            self.cc.cong_avoid(now, &mut self.w, &view, delivered_now);
        }
        self.w.cwnd = self.w.cwnd.clamp(1, self.w.cwnd_clamp);

        // --- retransmission timer (RFC 6298 §5.2, §5.3) ---
        if self.sb.packets_out() == 0 {
            self.rto_deadline = None;
        } else if snd_una_advanced {
            self.rto_deadline = Some(now + self.rtt.rto());
        }

        self.transmit(now, out);
    }

    fn sack_state_machine(&mut self, now: SimTime, snd_una_advanced: bool, newly_sacked: u32) {
        // Leaving recovery or loss once everything outstanding at its start
        // is acknowledged.
        match self.state {
            CaState::Recovery if self.snd_una >= self.high_seq => {
                // Linux tcp_end_cwnd_reduction (skipped for cong_control).
                if self.w.ssthresh < super::cc::INFINITE_SSTHRESH && !self.cc_controls {
                    self.w.cwnd = self.w.ssthresh;
                }
                let view = self.view(now);
                self.cc.cwnd_event(now, &mut self.w, &view, CaEvent::CompleteCwr);
                self.set_state(now, CaState::Open);
            }
            CaState::Loss if self.snd_una >= self.high_seq => {
                self.set_state(now, CaState::Open);
            }
            _ => {}
        }
        let _ = (snd_una_advanced, newly_sacked);
        let newly_lost = match self.cfg.loss_detection {
            LossDetection::Dupthresh => self.sb.mark_lost_by_sack(self.cfg.dupthresh),
            LossDetection::Rack => self.rack_detect_loss(now),
        };
        self.marked_lost += newly_lost;
        match self.state {
            CaState::Open | CaState::Disorder | CaState::Cwr => {
                // Linux tcp_time_to_recover: a loss is marked, or more than
                // `reordering` segments are SACKed.
                if self.sb.lost_out() > 0 || newly_lost > 0 || self.sb.sacked_out() >= self.cfg.dupthresh {
                    self.enter_recovery(now);
                } else if self.sb.sacked_out() > 0 {
                    if self.state == CaState::Open {
                        self.set_state(now, CaState::Disorder);
                    }
                } else if self.state == CaState::Disorder {
                    self.set_state(now, CaState::Open);
                }
            }
            CaState::Recovery | CaState::Loss => {}
        }
    }

    /// RFC 8985 §6.2 step 2 (Linux `tcp_rack_advance`): remember the most
    /// recently sent segment this ACK delivered. A retransmitted segment
    /// counts only if the ACK is for the retransmission: its RTT is at
    /// least the minimum RTT and the timestamp echo is not older than it.
    fn rack_advance(&mut self, now: SimTime, ts_ecr: SimTime) {
        let min_rtt = self.rtt.min().unwrap_or(SimDuration::ZERO);
        for &(tx, order, retrans) in &self.delivered_scratch {
            let rtt = now.saturating_since(tx);
            if retrans && (rtt < min_rtt || (ts_ecr > SimTime::ZERO && ts_ecr < tx)) {
                continue;
            }
            if self.rack.is_none_or(|(o, _)| order > o) {
                self.rack = Some((order, rtt));
            }
        }
    }

    /// RFC 8985 §6.2 step 5 with Linux's reordering window
    /// (`tcp_rack_reo_wnd`): none in recovery or once `dupthresh` segments
    /// are SACKed (reordering is never observed here), otherwise a quarter
    /// of the minimum RTT, at most the smoothed RTT. Arms the reordering
    /// timer for segments not yet due.
    fn rack_detect_loss(&mut self, now: SimTime) -> u32 {
        self.rack_timer = None;
        let Some((order, rtt)) = self.rack else { return 0 };
        let reo_wnd =
            if matches!(self.state, CaState::Recovery | CaState::Loss) || self.sb.sacked_out() >= self.cfg.dupthresh {
                SimDuration::ZERO
            } else {
                let q = self.rtt.min().unwrap_or(SimDuration::ZERO) / 4;
                self.rtt.srtt().map_or(q, |s| q.min(s))
            };
        let (n, timer) = self.sb.rack_detect_loss(now, order, rtt, reo_wnd);
        self.rack_timer = timer;
        n
    }

    fn enter_recovery(&mut self, now: SimTime) {
        // Linux tcp_enter_recovery + tcp_init_cwnd_reduction.
        self.stats.recoveries += 1;
        self.high_seq = self.snd_nxt;
        self.w.cwnd_cnt = 0;
        self.prior_cwnd = self.w.cwnd;
        self.prr_delivered = 0;
        self.prr_out = 0;
        let view = self.view(now);
        self.w.ssthresh = self.cc.ssthresh(now, &self.w, &view);
        self.set_state(now, CaState::Recovery);
        if self.sb.lost_out() == 0 {
            // Mark the first hole lost so the fast retransmit has a target.
            if self.sb.mark_head_lost() {
                self.marked_lost += 1;
            }
        }
    }

    /// Proportional rate reduction, RFC 6937 as Linux `tcp_cwnd_reduction`.
    fn prr_update(&mut self, newly_acked_sacked: u32, newly_lost: u32, snd_una_advanced: bool) {
        if newly_acked_sacked == 0 || self.prior_cwnd == 0 {
            return;
        }
        let in_flight = self.sb.in_flight() as i64;
        let ssthresh = self.w.ssthresh as i64;
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
        self.w.cwnd = (in_flight + sndcnt).max(1) as u32;
    }

    fn newreno_state_machine(
        &mut self,
        now: SimTime,
        snd_una_advanced: bool,
        is_dupack: bool,
        newly_acked: u32,
        out: &mut SenderOutput,
    ) {
        let _ = out;
        if snd_una_advanced {
            match self.state {
                CaState::Recovery => {
                    if self.snd_una >= self.high_seq {
                        // Full acknowledgment, RFC 6582 §3.2 step 3, option (1):
                        // cwnd = min(ssthresh, FlightSize + SMSS).
                        let flight = self.sb.packets_out();
                        self.w.cwnd = self.w.ssthresh.min(flight + 1).max(1);
                        self.dupacks = 0;
                        let view = self.view(now);
                        self.cc.cwnd_event(now, &mut self.w, &view, CaEvent::CompleteCwr);
                        self.set_state(now, CaState::Open);
                    } else {
                        // Partial acknowledgment, step 4: retransmit the first
                        // unacknowledged segment, deflate by the amount acked,
                        // add back one segment.
                        if self.sb.mark_head_lost() {
                            self.marked_lost += 1;
                        }
                        self.w.cwnd = self.w.cwnd.saturating_sub(newly_acked).saturating_add(1).max(1);
                    }
                }
                CaState::Loss => {
                    self.dupacks = 0;
                    if self.snd_una >= self.high_seq {
                        self.set_state(now, CaState::Open);
                    }
                }
                _ => {
                    self.dupacks = 0;
                }
            }
            return;
        }
        if !is_dupack {
            return;
        }
        self.dupacks += 1;
        match self.state {
            CaState::Recovery => {
                // Step 3 of RFC 6582 §3.2: inflate by one segment per dupack.
                self.w.cwnd = self.w.cwnd.saturating_add(1);
            }
            CaState::Loss => {}
            _ => {
                // Step 1: enter fast recovery on the third duplicate, unless
                // this loss is from before the last recovery point.
                if self.dupacks >= self.cfg.dupthresh && self.snd_una >= self.high_seq {
                    self.stats.recoveries += 1;
                    self.high_seq = self.snd_nxt;
                    let view = self.view(now);
                    self.w.ssthresh = self.cc.ssthresh(now, &self.w, &view);
                    self.set_state(now, CaState::Recovery);
                    if self.sb.mark_head_lost() {
                        self.marked_lost += 1;
                    }
                    // Step 2: cwnd = ssthresh + 3 * SMSS. An algorithm that
                    // leaves ssthresh "infinite" keeps its window instead.
                    if self.w.ssthresh < super::cc::INFINITE_SSTHRESH {
                        self.w.cwnd = self.w.ssthresh + self.cfg.dupthresh;
                    }
                } else if self.state == CaState::Open {
                    self.set_state(now, CaState::Disorder);
                }
            }
        }
    }

    fn set_state(&mut self, now: SimTime, s: CaState) {
        // Linux guards most transitions by "if the state changes", but
        // tcp_enter_loss sets Loss unconditionally, so a second timeout
        // resets the algorithm again.
        if self.state == s && s != CaState::Loss {
            return;
        }
        self.state = s;
        let view = self.view(now);
        self.cc.set_state(now, &mut self.w, &view, s);
    }

    // ----- timers -----

    /// Handles whatever timers are due at `now`.
    pub fn on_timer(&mut self, now: SimTime, out: &mut SenderOutput) {
        if self.rack_timer.is_some_and(|t| t <= now) && self.cfg.recovery == Recovery::Sack {
            // RACK's reordering timer (RFC 8985 §6.3).
            self.marked_lost = 0;
            let n = self.rack_detect_loss(now);
            self.lost_total += n as u64;
            if n > 0 && matches!(self.state, CaState::Open | CaState::Disorder | CaState::Cwr) {
                self.enter_recovery(now);
            }
        }
        if self.rto_deadline.is_some_and(|d| d <= now) {
            self.on_rto(now, out);
        }
        if self.pace_wait.is_some_and(|t| t <= now) {
            self.pace_wait = None;
        }
        self.transmit(now, out);
    }

    fn on_rto(&mut self, now: SimTime, out: &mut SenderOutput) {
        let _ = out;
        self.rto_deadline = None;
        if self.sb.packets_out() == 0 {
            return;
        }
        self.stats.timeouts += 1;
        // Linux tcp_enter_loss: mark everything lost first, then reduce
        // ssthresh if it was not already reduced in this window.
        self.lost_total += self.sb.mark_all_lost() as u64;
        let first_loss = matches!(self.state, CaState::Open | CaState::Disorder)
            || self.snd_una >= self.high_seq
            || (self.state == CaState::Loss && self.rtt.backoff() == 0);
        if first_loss {
            let view = self.view(now);
            self.w.ssthresh = self.cc.ssthresh(now, &self.w, &view);
            self.cc.cwnd_event(now, &mut self.w, &view, CaEvent::Loss);
        }
        self.w.cwnd = self.sb.in_flight() + 1;
        self.w.cwnd_cnt = 0;
        self.dupacks = 0;
        self.high_seq = self.snd_nxt;
        self.set_state(now, CaState::Loss);
        self.rtt.back_off();
        // The retransmission itself goes out through transmit(); re-arm for it.
        self.rto_deadline = Some(now + self.rtt.rto());
        self.pace_wait = None;
        self.pace_next = now;
    }

    // ----- transmission -----

    fn effective_pacing_rate(&self) -> Option<BitRate> {
        if let Some(r) = self.cc.pacing_rate() {
            return Some(r);
        }
        if !self.cfg.pacing {
            return None;
        }
        // Linux tcp_update_pacing_rate: cwnd * mss / srtt, times 200% in slow
        // start (below half ssthresh) and 120% otherwise.
        let srtt = self.rtt.srtt()?;
        let ratio = if self.w.cwnd < self.w.ssthresh / 2 { 2.0 } else { 1.2 };
        let bytes = self.w.cwnd.max(self.sb.packets_out()) as f64 * self.cfg.mss as f64;
        let bps = bytes * 8.0 * ratio / srtt.as_secs_f64();
        Some(BitRate::from_bps(bps as u64))
    }

    fn rwnd_allows(&self, end: u64) -> bool {
        self.cfg.rwnd_bytes.is_none_or(|w| end <= self.snd_una + w)
    }

    /// Sends what the window, the receiver, the application and pacing
    /// allow (Linux `tcp_xmit_retransmit_queue` then `tcp_write_xmit`).
    fn transmit(&mut self, now: SimTime, out: &mut SenderOutput) {
        if !self.initialized {
            self.initialized = true;
            let view = self.view(now);
            self.cc.init(now, &mut self.w, &view);
        }
        let mut sent = 0u32;
        let mut limited = false;
        self.transmit_loop(now, out, &mut sent, &mut limited);
        // Linux: is_cwnd_limited |= (packets_in_flight >= cwnd).
        limited |= self.sb.in_flight() >= self.w.cwnd;
        if sent > 0 || limited {
            self.cwnd_validate(limited);
        }
    }

    fn transmit_loop(&mut self, now: SimTime, out: &mut SenderOutput, sent: &mut u32, limited: &mut bool) {
        loop {
            if self.pace_wait.is_some() {
                return;
            }
            let retransmit = self.sb.next_lost();
            let has_new = self.snd_nxt < self.write_end && self.rwnd_allows(self.snd_nxt + 1);
            if retransmit.is_none() && !has_new {
                // Application-limited (Linux tcp_rate_check_app_limited).
                if self.sb.in_flight() < self.w.cwnd && !self.closed {
                    self.rate.mark_app_limited(self.sb.in_flight());
                }
                return;
            }
            let in_flight = match self.cfg.recovery {
                Recovery::Sack => self.sb.in_flight(),
                Recovery::Newreno => self.sb.packets_out(),
            };
            // NewReno retransmits the lost head regardless of the window
            // (RFC 5681 §3.2 step 2, RFC 6582 step 4).
            let forced =
                self.cfg.recovery == Recovery::Newreno && retransmit.is_some() && self.state == CaState::Recovery;
            if in_flight >= self.w.cwnd && !forced {
                *limited = true;
                return;
            }
            if let Some(rate) = self.effective_pacing_rate() {
                if now < self.pace_next {
                    self.pace_wait = Some(self.pace_next);
                    return;
                }
                let len = match retransmit {
                    Some(i) => self.sb.get(i).len,
                    None => self.next_new_len(),
                };
                // Linux's earliest-departure-time pacing spaces packets by
                // their payload length (tcp_update_skb_after_send).
                let gap = rate.tx_time(len as u64).unwrap_or(SimDuration::from_secs(1));
                self.pace_next = self.pace_next.max(now) + gap;
            }
            match retransmit {
                Some(i) => self.send_retransmission(now, i, out),
                None => self.send_new(now, out),
            }
            *sent += 1;
        }
    }

    fn next_new_len(&self) -> u32 {
        let avail = self.write_end - self.snd_nxt;
        let mut len = avail.min(self.cfg.mss as u64);
        if let Some(w) = self.cfg.rwnd_bytes {
            len = len.min((self.snd_una + w).saturating_sub(self.snd_nxt));
        }
        len.max(1) as u32
    }

    fn before_send(&mut self, now: SimTime) {
        if self.sb.in_flight() == 0 {
            // Linux tcp_event_data_sent: CA_EVENT_TX_START when nothing is
            // in flight (new data or a retransmission).
            let view = self.view(now);
            self.cc.cwnd_event(now, &mut self.w, &view, CaEvent::TxStart);
        }
        if self.sb.packets_out() == 0 {
            // Linux tcp_event_data_sent / tcp_cwnd_restart (RFC 7661).
            // Linux tcp_cwnd_restart is skipped for cong_control algorithms.
            if self.cfg.slow_start_after_idle && !self.cc_controls {
                if let Some(last) = self.last_send {
                    let idle = now.saturating_since(last);
                    let rto = self.rtt.rto();
                    if idle > rto {
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
                }
            }
        }
    }

    fn send_new(&mut self, now: SimTime, out: &mut SenderOutput) {
        self.before_send(now);
        let len = self.next_new_len();
        let seq = self.snd_nxt;
        let snap = self.rate.on_send(now, self.sb.packets_out());
        self.sb.push(Seg {
            seq,
            len,
            tx_time: now,
            tx_count: 1,
            tx_order: self.tx_counter,
            sacked: false,
            lost: false,
            retrans: false,
            snap,
        });
        self.snd_nxt += len as u64;
        self.after_send(now);
        out.packets.push(self.data_packet(seq, len, now, false));
    }

    fn data_packet(&self, seq: u64, len: u32, now: SimTime, retransmit: bool) -> Packet {
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
        self.sb.on_retransmit(i, now, self.tx_counter, snap);
        let s = self.sb.get(i);
        let (seq, len) = (s.seq, s.len);
        let kind = if self.state == CaState::Loss {
            RetxKind::Timeout
        } else {
            RetxKind::Fast
        };
        match kind {
            RetxKind::Fast => self.stats.retransmits_fast += 1,
            RetxKind::Timeout => self.stats.retransmits_timeout += 1,
        }
        self.after_send(now);
        out.retransmits.push((seq, kind));
        out.packets.push(self.data_packet(seq, len, now, true));
    }

    fn after_send(&mut self, now: SimTime) {
        self.tx_counter += 1;
        self.stats.segments_sent += 1;
        self.last_send = Some(now);
        self.prr_out += 1;
        if self.rto_deadline.is_none() {
            self.rto_deadline = Some(now + self.rtt.rto());
        }
    }
}
