//! PBE-CC sender: Y. Xie, F. Yi, K. Jamieson, "PBE-CC: Congestion Control
//! via Endpoint-Centric, Physical-Layer Bandwidth Measurements", ACM
//! SIGCOMM 2020 (arXiv 2002.03475), and the authors' MSN 2020 slides
//! (`shared/papers/pbe-cc-slides-msn2020.txt`). The mobile half (the UE's
//! capacity estimate written into ACKs) is `ran::pbe`.
//!
//! # Sources, and what could be checked
//!
//! * The slides (read whole): the mobile decodes the control channel,
//!   "measures available wireless capacity ... sends capacity as feedback in
//!   acknowledgements"; the sender does "explicit rate control (similar in
//!   spirit to XCP) based on the mobile's reports", its goal to "match
//!   sender's rate to bottleneck's capacity"; "the bottleneck location may
//!   alternate between Internet and wireless link", and the wireless
//!   capacity is all the mobile can estimate, so "blindly matching the
//!   sending rate to the capacity of the wireless cellular link" is a
//!   strawman. The capacity translation C_p = C_t + C_t·TBLER + 0.068·C_p.
//! * The paper's abstract (6.3 % more throughput than BBR, 1.8× lower 95th
//!   percentile delay). The paper's body was not retrievable here (only
//!   its first page is stored), and the authors published no sender code
//!   (their public repositories hold the control-channel decoder only).
//!   The structure below — a wireless-bottleneck state that sends at the
//!   reported capacity, an Internet-bottleneck state that probes like BBR
//!   capped by the wireless capacity, and a return to the wireless state
//!   when the wireless capacity falls below what BBR measures — is the
//!   paper's as remembered, *not verified against its text here*. Everything
//!   the slides do not state is therefore listed as a choice.
//!
//! # The state machine
//!
//! ```text
//!            ┌─────────── no report for `feedback_timeout_ms` ───────────┐
//!            ▼                                                            │
//!   Startup (Reno slow start, unpaced) ── first report ──► Wireless ◄─────┤
//!                                                          │  ▲           │
//!              `internet_rounds` rounds with queuing >     │  │ C_f ≤ BtlBw
//!              `internet_delay_ms` *and* delivery below    ▼  │           │
//!              (1 − `rate_margin`)·C_f                      Internet ──────┘
//!
//!   Wireless:  pacing = C_f                     cwnd = ⌈C_f·(RTprop + H)⌉
//!   Internet:  pacing = g_k · min(BtlBw, C_f)   cwnd = 2 · min(BtlBw, C_f) · RTprop
//!              g = [5/4, 3/4, 1, 1, 1, 1, 1, 1], one phase per RTprop (BBR ProbeBW)
//! ```
//!
//! C_f is the per-flow capacity the UE reports (its transport capacity
//! C_t divided among its active flows), RTprop the smallest RTT seen, BtlBw
//! the largest delivery rate of the last 10 rounds (BBR's max filter), H the
//! headroom.
//!
//! # Choices, numbered
//!
//! 1. *Rate matching.* The pacing rate is the latest report. C_t is the
//!    transport-layer rate after PBE's 6.8 % header allowance, and the
//!    framework paces payload bytes (as Linux's internal pacing does), so on
//!    the wire the sender sends (MSS + 52)/MSS of C_f, 3.6 % more, within
//!    the allowance.
//! 2. *Window in the wireless state* = C_f · (RTprop + H), H =
//!    `headroom_ms` (20 ms, the oracle's allowance: one HARQ RTT + one SR
//!    period + two TTIs): the window is only a safety bound for a paced
//!    sender. One BDP would stall the ACK clock whenever the radio delays
//!    data or ACKs (78 % utilization at CQI 15 with H = 10 ms, 88 % with
//!    20 ms); much more lets a capacity drop leave a standing queue (pacing
//!    at the new rate never drains what the old rate queued; the window
//!    bounds that queue to about C_f·H). At least `min_cwnd` = 4.
//! 3. *Locating the bottleneck at the sender.* The network side delivers only
//!    the capacity report, so the sender decides, once per round (a window of
//!    data, as in BBR): queuing = the round's *smallest* RTT − RTprop (the
//!    smallest, so ACK-clock jitter is not taken for a queue); delivery =
//!    segments delivered over the round. Queuing above `internet_delay_ms`
//!    (40 ms, twice the headroom: more than the window lets the wireless hop
//!    hold) while the flow receives less than (1 − `rate_margin`)·C_f (20 %)
//!    means packets wait somewhere other than the wireless hop, which would
//!    serve them at C_f. `internet_rounds` = 2 such rounds in a row switch to
//!    the Internet state, and the BtlBw filter restarts from the delivery
//!    rate of the round that tipped it (its older samples measured the
//!    wireless rate and would send the sender straight back, choice 5).
//!    (A wireless estimate that overshoots the real share looks the same;
//!    the BBR probing then finds the real rate.)
//! 4. *Internet state* is BBR's ProbeBW (Cardwell et al., ACM Queue 2016;
//!    Linux `tcp_bbr.c`): BtlBw = max of the delivery-rate samples over 10
//!    rounds (app-limited samples count only if they raise it), the pacing
//!    gain cycles every RTprop through 5/4, 3/4 and six 1s, cwnd_gain 2,
//!    and both are capped by the wireless capacity C_f. Simplifications:
//!    phases advance on time alone (Linux also waits for the inflight
//!    target in the 5/4 and 3/4 phases), no Startup/Drain/ProbeRTT (the
//!    flow enters it with BtlBw already measured), RTprop is the lifetime
//!    minimum RTT.
//! 5. *Back to the wireless state* when C_f ≤ BtlBw: the wireless link
//!    cannot carry more than the Internet path has been delivering, so it is
//!    the bottleneck again.
//! 6. *Startup and fallback.* Before the first report, and when none has
//!    arrived for `feedback_timeout_ms` (500 ms), the sender is Reno (slow
//!    start, AIMD), unpaced. Reports ride every ACK, so this is the first
//!    round trip and outages of the reports.
//! 7. *Losses* do not change the rate (PBE-CC is rate-based like BBR):
//!    `ssthresh` is unchanged and `cong_control` sets the window on every
//!    ACK, skipping PRR. A timeout's collapsed window is restored on the next
//!    ACK.
//! 8. *A zero report* (no MCS, or no share) paces at `min_cwnd` segments
//!    per RTprop, never at zero.

use serde::{Deserialize, Serialize};

use super::helpers::{reno_cong_avoid, reno_ssthresh};
use super::CcConfig;
use super::{AckSample, CongestionControl, ConnView, Feedback, RateSample, Signals, Window};
use crate::net::packet::TCP_IP_HEADER_BYTES;
use crate::units::{BitRate, SimDuration, SimTime};

/// BBR's ProbeBW pacing gains.
const PROBE_BW_GAINS: [f64; 8] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
/// BBR's `bbr_bw_rtts`: the max filter's length in rounds.
const BW_FILTER_ROUNDS: u64 = 10;
/// BBR's cwnd gain.
const BBR_CWND_GAIN: f64 = 2.0;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Headroom H added to RTprop when sizing the wireless-state window, ms.
    pub headroom_ms: f64,
    /// Queuing (round minimum RTT − RTprop) that may mean an Internet bottleneck, ms.
    pub internet_delay_ms: f64,
    /// ... together with delivery below (1 − rate_margin) of the wireless capacity.
    pub rate_margin: f64,
    /// Consecutive such rounds before switching to the Internet state.
    pub internet_rounds: u32,
    /// Without a report for this long the sender is Reno, ms.
    pub feedback_timeout_ms: f64,
    /// Smallest window, segments.
    pub min_cwnd: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            headroom_ms: 20.0,
            internet_delay_ms: 40.0,
            rate_margin: 0.2,
            internet_rounds: 2,
            feedback_timeout_ms: 500.0,
            min_cwnd: 4,
        }
    }
}

impl CcConfig for Config {
    fn build(self, _stream: u64) -> Box<dyn super::CongestionControl> {
        Box::new(Pbe::new(self))
    }

    fn validate(&self) -> Result<(), String> {
        crate::units::check_duration_ms("headroom_ms", self.headroom_ms, true)?;
        crate::units::check_range(
            "internet_delay_ms",
            self.internet_delay_ms,
            0.0,
            crate::units::MAX_ONE_WAY_DELAY_MS,
        )?;
        if !(self.rate_margin.is_finite() && (0.0..1.0).contains(&self.rate_margin)) {
            return Err(format!("rate_margin must be in [0, 1), got {}", self.rate_margin));
        }
        if self.internet_rounds == 0 {
            return Err("internet_rounds must be at least 1".into());
        }
        crate::units::check_duration_ms("feedback_timeout_ms", self.feedback_timeout_ms, false)?;
        crate::transport::check_window_segments("min_cwnd", self.min_cwnd)?;
        Ok(())
    }
}

/// The sender's state.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum State {
    /// No (fresh) report: Reno.
    Startup,
    /// The wireless hop is the bottleneck: match its capacity.
    Wireless,
    /// The Internet path is the bottleneck: BBR, capped by the wireless capacity.
    Internet,
}

#[derive(Clone, Debug, Default)]
struct Round {
    start: SimTime,
    start_delivered: u64,
    min_rtt: Option<SimDuration>,
    cf_sum: f64,
    cf_n: u64,
}

pub struct Pbe {
    cfg: Config,
    headroom: SimDuration,
    internet_delay: SimDuration,
    timeout: SimDuration,
    state: State,
    /// Latest per-flow capacity report, bit/s, and when it came.
    cf_bps: Option<u64>,
    last_report: Option<SimTime>,
    rtprop: Option<SimDuration>,
    /// Round bookkeeping (ends when snd_una passes `round_end`).
    round: Round,
    round_end: u64,
    round_count: u64,
    /// Consecutive rounds that looked like an Internet bottleneck.
    suspect_rounds: u32,
    /// Last round's queuing estimate (round minimum RTT − RTprop).
    queuing: Option<SimDuration>,
    /// BtlBw max filter: (round, bit/s) samples of the last 10 rounds.
    bw_samples: Vec<(u64, u64)>,
    cycle_index: usize,
    cycle_start: SimTime,
    pacing: Option<BitRate>,
    target: Option<u32>,
    wire_bytes: u32,
}

impl Pbe {
    pub fn new(cfg: Config) -> Self {
        let ms = |v: f64, d: u64| SimDuration::try_from_millis_f64(v).unwrap_or(SimDuration::from_millis(d));
        Pbe {
            headroom: ms(cfg.headroom_ms, 10),
            internet_delay: ms(cfg.internet_delay_ms, 20),
            timeout: ms(cfg.feedback_timeout_ms, 500),
            cfg,
            state: State::Startup,
            cf_bps: None,
            last_report: None,
            rtprop: None,
            round: Round::default(),
            round_end: 0,
            round_count: 0,
            suspect_rounds: 0,
            queuing: None,
            bw_samples: Vec::new(),
            cycle_index: 0,
            cycle_start: SimTime::ZERO,
            pacing: None,
            target: None,
            wire_bytes: 1448 + TCP_IP_HEADER_BYTES,
        }
    }

    pub fn state(&self) -> State {
        self.state
    }
    /// BtlBw, bit/s on the wire.
    pub fn btl_bw_bps(&self) -> Option<u64> {
        self.bw_samples.iter().map(|&(_, b)| b).max()
    }

    fn fresh(&self, now: SimTime) -> bool {
        self.last_report
            .is_some_and(|t| now.saturating_since(t) <= self.timeout)
    }

    fn segments(&self, bits: f64) -> u32 {
        let s = (bits / (8.0 * self.wire_bytes as f64)).ceil();
        (s.min(u32::MAX as f64 / 4.0) as u32).max(self.cfg.min_cwnd)
    }

    /// Choice 8: a rate never below `min_cwnd` segments per RTprop.
    fn rate_floor(&self, bps: f64) -> BitRate {
        let rtt = self.rtprop.map_or(0.1, |r| r.as_secs_f64()).max(1e-3);
        let floor = self.cfg.min_cwnd as f64 * self.wire_bytes as f64 * 8.0 / rtt;
        BitRate::from_bps(bps.max(floor).max(1.0) as u64)
    }

    /// Adds a delivery-rate sample to the BtlBw filter (BBR `bbr_update_bw`).
    fn sample_bw(&mut self, rs: &RateSample) {
        let Some(d) = rs.delivered else { return };
        if rs.interval.is_zero() || d == 0 {
            return;
        }
        let bps = (d as f64 * self.wire_bytes as f64 * 8.0 / rs.interval.as_secs_f64()) as u64;
        if rs.is_app_limited && self.btl_bw_bps().is_some_and(|b| bps <= b) {
            return;
        }
        let round = self.round_count;
        match self.bw_samples.iter_mut().find(|(r, _)| *r == round) {
            Some(s) => s.1 = s.1.max(bps),
            None => self.bw_samples.push((round, bps)),
        }
        self.bw_samples.retain(|&(r, _)| r + BW_FILTER_ROUNDS > round);
    }

    /// Closes the round if `snd_una` passed its end; choice 3.
    fn maybe_end_round(&mut self, now: SimTime, c: &ConnView) {
        if c.snd_una < self.round_end {
            return;
        }
        if let (Some(rtprop), Some(rmin)) = (self.rtprop, self.round.min_rtt) {
            let span = now.saturating_since(self.round.start);
            let q = rmin.saturating_sub(rtprop);
            self.queuing = Some(q);
            if self.state == State::Wireless && self.round.cf_n > 0 && !span.is_zero() {
                let cf = self.round.cf_sum / self.round.cf_n as f64;
                let delivered = c.delivered.saturating_sub(self.round.start_delivered) as f64;
                let rate = delivered * self.wire_bytes as f64 * 8.0 / span.as_secs_f64();
                if q > self.internet_delay && rate < (1.0 - self.cfg.rate_margin) * cf {
                    self.suspect_rounds += 1;
                } else {
                    self.suspect_rounds = 0;
                }
                if self.suspect_rounds >= self.cfg.internet_rounds {
                    self.state = State::Internet;
                    self.suspect_rounds = 0;
                    // The filter's older samples measured the wireless rate;
                    // BtlBw starts from what the Internet path delivers now.
                    self.bw_samples = vec![(self.round_count, rate as u64)];
                    self.cycle_index = 0;
                    self.cycle_start = now;
                }
            }
        }
        self.round_count += 1;
        self.round = Round {
            start: now,
            start_delivered: c.delivered,
            ..Round::default()
        };
        self.round_end = c.snd_nxt;
    }

    /// Sets pacing and the target window for the current state.
    fn control(&mut self, now: SimTime) {
        let Some(cf) = self.cf_bps.map(|c| c as f64) else {
            return;
        };
        let rtprop = self.rtprop.unwrap_or(SimDuration::from_millis(100));
        match self.state {
            State::Startup => {}
            State::Wireless => {
                self.pacing = Some(self.rate_floor(cf));
                self.target = Some(self.segments(cf * (rtprop + self.headroom).as_secs_f64()));
            }
            State::Internet => {
                let bw = self.btl_bw_bps().map_or(cf, |b| (b as f64).min(cf));
                if now.saturating_since(self.cycle_start) >= rtprop {
                    self.cycle_index = (self.cycle_index + 1) % PROBE_BW_GAINS.len();
                    self.cycle_start = now;
                }
                self.pacing = Some(self.rate_floor(PROBE_BW_GAINS[self.cycle_index] * bw));
                self.target = Some(self.segments(BBR_CWND_GAIN * bw * rtprop.as_secs_f64()));
            }
        }
    }
}

impl CongestionControl for Pbe {
    fn name(&self) -> &'static str {
        "pbe"
    }

    fn init(&mut self, _now: SimTime, _w: &mut Window, c: &ConnView) {
        if c.mss > 0 {
            self.wire_bytes = c.mss + TCP_IP_HEADER_BYTES;
        }
    }

    fn ssthresh(&mut self, _now: SimTime, w: &Window, _c: &ConnView) -> u32 {
        match self.state {
            State::Startup => reno_ssthresh(w),
            // Choice 7.
            State::Wireless | State::Internet => w.ssthresh,
        }
    }

    fn cong_avoid(&mut self, _now: SimTime, w: &mut Window, c: &ConnView, acked: u32) {
        // Startup and fallback (choice 6).
        reno_cong_avoid(w, c, acked);
    }

    fn pkts_acked(&mut self, _now: SimTime, _w: &mut Window, _c: &ConnView, s: &AckSample) {
        if let Some(r) = s.rtt {
            self.rtprop = Some(self.rtprop.map_or(r, |m| m.min(r)));
            self.round.min_rtt = Some(self.round.min_rtt.map_or(r, |m| m.min(r)));
        }
    }

    fn cong_control(&mut self, now: SimTime, w: &mut Window, c: &ConnView, rs: &RateSample) -> bool {
        if c.mss > 0 {
            self.wire_bytes = c.mss + TCP_IP_HEADER_BYTES;
        }
        self.sample_bw(rs);
        self.maybe_end_round(now, c);
        if !self.fresh(now) {
            if self.state != State::Startup {
                self.state = State::Startup;
                self.pacing = None;
                self.target = None;
                w.ssthresh = w.cwnd.max(2);
            }
            return false;
        }
        if self.state == State::Startup {
            self.state = State::Wireless;
        }
        if self.state == State::Internet {
            // Choice 5.
            if let (Some(cf), Some(bw)) = (self.cf_bps, self.btl_bw_bps()) {
                if cf <= bw {
                    self.state = State::Wireless;
                }
            }
        }
        self.control(now);
        let Some(t) = self.target else { return false };
        w.cwnd = t.min(w.cwnd_clamp);
        true
    }

    fn on_feedback(&mut self, now: SimTime, _w: &mut Window, _c: &ConnView, fb: &Feedback) {
        let Feedback::Pbe { rate_bps } = *fb else { return };
        self.cf_bps = Some(rate_bps);
        self.last_report = Some(now);
        self.round.cf_sum += rate_bps as f64;
        self.round.cf_n += 1;
    }

    fn pacing_rate(&self) -> Option<BitRate> {
        match self.state {
            State::Startup => None,
            _ => self.pacing,
        }
    }

    fn signals(&self) -> Signals {
        Signals {
            pbe: true,
            ..Signals::default()
        }
    }

    fn mode(&self) -> &'static str {
        match self.state {
            State::Startup => "startup",
            State::Wireless => "wireless",
            State::Internet => "internet",
        }
    }

    fn target_window(&self) -> Option<f64> {
        self.target.map(|t| t as f64)
    }

    fn queuing_delay(&self) -> Option<SimDuration> {
        self.queuing
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::cc::{registry, CcConfig};

    const MSS: u64 = crate::transport::cc::testkit::MSS as u64;
    const WIRE: f64 = 1500.0;

    /// Drives rounds of ACKs: each round delivers what `delivery_bps`
    /// carries in one RTT, one segment per ACK spaced evenly, every ACK
    /// carrying the report `cf_bps` and an RTT sample of `rtt_ms`.
    struct Harness {
        p: Pbe,
        w: Window,
        now: SimTime,
        una: u64,
        delivered: u64,
    }

    impl Harness {
        fn new() -> Self {
            let mut p = Pbe::new(Config::default());
            let mut w = Window::new(10);
            p.init(
                SimTime::ZERO,
                &mut w,
                &ConnView {
                    mss: MSS as u32,
                    ..ConnView::default()
                },
            );
            Harness {
                p,
                w,
                now: SimTime::ZERO,
                una: 0,
                delivered: 0,
            }
        }

        fn round(&mut self, rtt_ms: u64, delivery_mbps: f64, cf_mbps: f64) {
            let rtt = SimDuration::from_millis(rtt_ms);
            let n = ((delivery_mbps * 1e6 * rtt.as_secs_f64() / (8.0 * WIRE)).round() as u64).max(1);
            let gap = rtt / n;
            for _ in 0..n {
                self.now += gap;
                self.una += 1;
                self.delivered += 1;
                let c = ConnView {
                    now: self.now,
                    mss: MSS as u32,
                    snd_una: self.una * MSS,
                    snd_nxt: (self.una + n) * MSS,
                    delivered: self.delivered,
                    is_cwnd_limited: true,
                    ..ConnView::default()
                };
                let fb = Feedback::Pbe {
                    rate_bps: (cf_mbps * 1e6) as u64,
                };
                self.p.on_feedback(self.now, &mut self.w, &c, &fb);
                let s = AckSample {
                    pkts_acked: 1,
                    rtt: Some(rtt),
                    in_flight: n as u32,
                };
                self.p.pkts_acked(self.now, &mut self.w, &c, &s);
                let rs = RateSample {
                    delivered: Some(n),
                    interval: rtt,
                    acked_sacked: 1,
                    ..RateSample::default()
                };
                if !self.p.cong_control(self.now, &mut self.w, &c, &rs) {
                    self.p.cong_avoid(self.now, &mut self.w, &c, 1);
                }
            }
        }
    }

    #[test]
    fn in_the_wireless_state_pbe_paces_at_the_reported_capacity() {
        let mut h = Harness::new();
        h.round(40, 24.0, 24.0);
        assert_eq!(h.p.state(), State::Wireless);
        assert_eq!(h.p.pacing_rate(), Some(BitRate::from_bps(24_000_000)));
        // cwnd = 24 Mbit/s · (40 + 20) ms = 1.44 Mbit = 120 segments of 1500 bytes.
        assert_eq!(h.w.cwnd, 120);
        // The report moves, the rate follows on the next ACK.
        h.round(40, 24.0, 12.0);
        assert_eq!(h.p.pacing_rate(), Some(BitRate::from_bps(12_000_000)));
        assert_eq!(h.w.cwnd, 60);
    }

    #[test]
    fn queuing_with_delivery_below_the_wireless_capacity_switches_to_the_internet_state() {
        let mut h = Harness::new();
        h.round(40, 24.0, 24.0);
        h.round(40, 24.0, 24.0);
        // A 8 Mbit/s Internet bottleneck: RTT 100 ms, delivery 8 Mbit/s, C_f 24.
        h.round(100, 8.0, 24.0);
        assert_eq!(h.p.state(), State::Wireless, "one round is not enough");
        h.round(100, 8.0, 24.0);
        h.round(100, 8.0, 24.0);
        assert_eq!(h.p.state(), State::Internet);
        // BtlBw starts from the round that revealed the bottleneck: 67 segments in 100 ms.
        let bw = h.p.btl_bw_bps().unwrap() as f64;
        assert!((bw - 8.04e6).abs() < 100.0, "{bw}");
    }

    #[test]
    fn the_internet_state_probes_bbr_style_below_the_wireless_capacity() {
        let mut h = Harness::new();
        h.round(40, 24.0, 24.0);
        for _ in 0..3 {
            h.round(100, 8.0, 24.0);
        }
        assert_eq!(h.p.state(), State::Internet);
        let mut seen = Vec::new();
        for _ in 0..10 {
            h.round(100, 8.0, 24.0);
            seen.push(h.p.pacing_rate().unwrap().bps());
        }
        let bw = h.p.btl_bw_bps().unwrap() as f64;
        assert!((bw - 8.04e6).abs() < 100.0, "{bw}");
        assert_eq!(h.p.state(), State::Internet);
        let gain = |r: u64, g: f64| (r as f64 - g * bw).abs() < 100.0;
        for &r in &seen {
            assert!(
                gain(r, 1.25) || gain(r, 0.75) || gain(r, 1.0),
                "a ProbeBW gain times 8.04 Mbit/s: {r}"
            );
        }
        assert!(
            seen.iter().any(|&r| gain(r, 1.25)) && seen.iter().any(|&r| gain(r, 0.75)),
            "the gains cycle: {seen:?}"
        );
        // cwnd = 2 · 8.04 Mbit/s · 40 ms = 643 200 bits = 53.6 → 54 segments.
        assert_eq!(h.w.cwnd, 54);
    }

    #[test]
    fn the_sender_returns_to_the_wireless_state_when_the_wireless_capacity_falls_below_btlbw() {
        let mut h = Harness::new();
        h.round(40, 24.0, 24.0);
        for _ in 0..13 {
            h.round(100, 8.0, 24.0);
        }
        assert_eq!(h.p.state(), State::Internet);
        h.round(40, 8.0, 6.0);
        assert_eq!(h.p.state(), State::Wireless);
        assert_eq!(h.p.pacing_rate(), Some(BitRate::from_bps(6_000_000)));
    }

    #[test]
    fn a_queue_at_the_wireless_hop_does_not_look_like_an_internet_bottleneck() {
        let mut h = Harness::new();
        h.round(40, 24.0, 24.0);
        // Queuing 60 ms, but the flow receives its wireless capacity.
        for _ in 0..5 {
            h.round(100, 23.0, 24.0);
        }
        assert_eq!(h.p.state(), State::Wireless);
        assert_eq!(h.p.queuing_delay(), Some(SimDuration::from_millis(60)));
    }

    #[test]
    fn before_any_report_and_after_the_timeout_pbe_is_reno() {
        let mut p = Pbe::new(Config::default());
        let mut w = Window::new(10);
        let c = ConnView {
            mss: MSS as u32,
            is_cwnd_limited: true,
            ..ConnView::default()
        };
        assert!(!p.cong_control(SimTime::ZERO, &mut w, &c, &RateSample::default()));
        p.cong_avoid(SimTime::ZERO, &mut w, &c, 3);
        assert_eq!(w.cwnd, 13);
        assert_eq!(p.pacing_rate(), None);
        let mut h = Harness::new();
        h.round(40, 24.0, 24.0);
        assert_eq!(h.p.state(), State::Wireless);
        h.now += SimDuration::from_millis(501);
        let c = ConnView {
            now: h.now,
            mss: MSS as u32,
            ..ConnView::default()
        };
        assert!(!h.p.cong_control(h.now, &mut h.w, &c, &RateSample::default()));
        assert_eq!(h.p.state(), State::Startup);
        assert_eq!(h.p.pacing_rate(), None);
    }

    #[test]
    fn losses_do_not_change_the_rate() {
        let mut h = Harness::new();
        h.round(40, 24.0, 24.0);
        let ss = h.w.ssthresh;
        assert_eq!(h.p.ssthresh(h.now, &h.w, &ConnView::default()), ss);
        assert!(h.p.signals().pbe);
    }

    #[test]
    fn bad_parameters_are_rejected_by_name() {
        assert!(Config {
            rate_margin: 1.0,
            ..Config::default()
        }
        .validate()
        .unwrap_err()
        .contains("rate_margin"));
        assert!(Config {
            internet_rounds: 0,
            ..Config::default()
        }
        .validate()
        .unwrap_err()
        .contains("internet_rounds"));
        assert!(registry::build("pbe", &serde_json::json!({"gain": 1})).is_err());
    }
}
