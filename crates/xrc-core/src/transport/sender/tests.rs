//! The sender driven by hand: each test writes the ACKs a receiver would
//! send and checks what the sender does.

use super::clock::Clock;
use super::timers::XmitTimer;
use super::*;
use crate::net::{AckHeader, Packet, PacketKind, SackBlock};
use crate::transport::cc::registry;

pub(super) const MSS: u64 = 1448;

pub(super) fn ms(v: u64) -> SimTime {
    SimTime::from_nanos(v * 1_000_000)
}

pub(super) fn sender(cc: &str, cfg: TcpConfig) -> TcpSender {
    let cc = registry::build(cc, &serde_json::Value::Null).expect("builds");
    TcpSender::new(FlowId(0), cfg, cc)
}

/// An ACK of everything below segment `upto` with SACK blocks given in
/// segments, echoing `ts_ecr`.
pub(super) fn ack(upto: u64, sack: &[(u64, u64)], ts_ecr: SimTime) -> AckHeader {
    let blocks: Vec<SackBlock> = sack
        .iter()
        .map(|&(s, e)| SackBlock {
            start: s * MSS,
            end: e * MSS,
        })
        .collect();
    match Packet::ack(FlowId(0), upto * MSS, &blocks, ts_ecr).kind {
        PacketKind::Ack(a) => a,
        PacketKind::Data(_) => unreachable!(),
    }
}

/// Segment indices of the data packets in `out`, drained.
pub(super) fn sent(out: &mut SenderOutput) -> Vec<u64> {
    let v = out
        .packets
        .iter()
        .map(|p| match &p.kind {
            PacketKind::Data(d) => d.seq / MSS,
            PacketKind::Ack(_) => unreachable!(),
        })
        .collect();
    out.clear();
    v
}

#[test]
fn the_initial_window_leaves_at_once_and_arms_the_retransmission_timer() {
    let mut s = sender("newreno", TcpConfig::default());
    let mut out = SenderOutput::default();
    s.app_write(ms(0), 100 * MSS, &mut out);
    assert_eq!(sent(&mut out), (0..10).collect::<Vec<_>>());
    // No RTT sample yet: the initial RTO, 1 s = 250 jiffies, filed on the
    // wheel's second level (8-jiffy buckets): it fires at jiffy 256.
    assert_eq!(s.next_timer(), Some(ms(1024)));
}

#[test]
fn an_ack_of_new_data_clocks_out_more_and_restarts_the_timer() {
    let mut s = sender("newreno", TcpConfig::default());
    let mut out = SenderOutput::default();
    s.app_write(ms(0), 100 * MSS, &mut out);
    out.clear();
    s.on_ack(ms(100), &ack(2, &[], ms(0)), &mut out);
    // Slow start: two segments acknowledged, window 12, four more leave.
    assert_eq!(sent(&mut out), vec![10, 11, 12, 13]);
    assert_eq!(s.cwnd(), 12);
    assert!(s.next_timer().is_some_and(|t| t > ms(100)));
}

#[test]
fn a_window_restarts_from_the_initial_window_after_a_long_idle_period() {
    let cfg = TcpConfig {
        initial_cwnd: 4,
        ..TcpConfig::default()
    };
    let mut s = sender("newreno", cfg);
    let mut out = SenderOutput::default();
    s.app_write(ms(0), 4 * MSS, &mut out);
    out.clear();
    // Everything acknowledged; the window grew to 8 in slow start.
    s.on_ack(ms(100), &ack(4, &[], ms(0)), &mut out);
    assert_eq!(s.cwnd(), 8);
    // Ten seconds later the application writes again: RFC 7661 halves the
    // window once per RTO of idleness, down to the initial window.
    s.app_write(ms(10_100), 20 * MSS, &mut out);
    assert_eq!(s.cwnd(), 4);
    assert_eq!(sent(&mut out).len(), 4);
}

#[test]
fn three_sacked_segments_start_a_fast_retransmit_of_the_hole() {
    let mut s = sender(
        "newreno",
        TcpConfig {
            loss_detection: LossDetection::Dupthresh,
            ..TcpConfig::default()
        },
    );
    let mut out = SenderOutput::default();
    s.app_write(ms(0), 100 * MSS, &mut out);
    out.clear();
    for k in 2..=4 {
        s.on_ack(ms(100), &ack(0, &[(1, k)], ms(0)), &mut out);
    }
    assert_eq!(s.ca_state(), CaState::Recovery);
    assert_eq!(out.retransmits, vec![(0, RetxKind::Fast)]);
    assert_eq!(s.stats().recoveries, 1);
}

/// Ten segments at 0, the first acknowledged at 100 ms: srtt 100 ms,
/// rttvar floored at 200 ms, RTO 300 ms (75 jiffies at HZ 250). No tail
/// loss probe, so that the timer is the RTO.
fn sender_with_one_sample(cfg: TcpConfig) -> (TcpSender, SenderOutput) {
    let cfg = TcpConfig { tlp: false, ..cfg };
    let mut s = sender("newreno", cfg);
    let mut out = SenderOutput::default();
    s.app_write(ms(0), 100 * MSS, &mut out);
    s.on_ack(ms(100), &ack(1, &[], ms(0)), &mut out);
    out.clear();
    (s, out)
}

#[test]
fn the_rto_is_srtt_plus_a_variance_floored_at_rto_min_on_the_jiffies_wheel() {
    let (s, _) = sender_with_one_sample(TcpConfig::default());
    assert_eq!(s.rto.rto(&s.rtt), SimDuration::from_millis(300));
    // Armed at 100 ms (jiffy 25) for 75 jiffies: expires at jiffy 100, on
    // the wheel's second level (8-jiffy buckets): fires at jiffy 104.
    assert_eq!(s.next_timer(), Some(ms(416)));
}

#[test]
fn each_timeout_doubles_the_rto_and_only_a_valid_rtt_sample_resets_it() {
    let (mut s, mut out) = sender_with_one_sample(TcpConfig::default());
    // 1st timeout at 416 ms: RTO 600 ms = 150 jiffies from jiffy 104 →
    // expires 254, fires at 256 (1024 ms). The head goes out again.
    s.on_timer(ms(416), &mut out);
    assert_eq!(out.retransmits, vec![(MSS, RetxKind::Timeout)]);
    assert_eq!((s.rto.backoff(), s.rto.rto(&s.rtt)), (1, SimDuration::from_millis(600)));
    assert_eq!(s.next_timer(), Some(ms(1024)));
    out.clear();
    // 2nd: 1200 ms = 300 jiffies from 256 → 556, still the second level
    // → 560 (2240 ms).
    s.on_timer(ms(1024), &mut out);
    assert_eq!(s.next_timer(), Some(ms(2240)));
    // 3rd: 2400 ms = 600 jiffies from 560 → 1160, third level (64-jiffy
    // buckets) → 1216 (4864 ms).
    s.on_timer(ms(2240), &mut out);
    assert_eq!(s.next_timer(), Some(ms(4864)));
    assert_eq!(s.stats().timeouts, 3);
    // A cumulative ACK of the retransmitted segment without a timestamp
    // gives no RTT sample (Karn): the backoff stays.
    s.on_ack(ms(2400), &ack(2, &[], SimTime::ZERO), &mut out);
    assert_eq!(s.rto.backoff(), 3);
    assert_eq!(s.rto.rto(&s.rtt), SimDuration::from_millis(2400));
    // One whose timestamp echo is the retransmission's is a valid sample.
    s.on_ack(ms(2400), &ack(3, &[], ms(2240)), &mut out);
    assert_eq!(s.rto.backoff(), 0);
}

#[test]
fn the_backed_off_rto_stops_at_max_rto() {
    let (mut s, mut out) = sender_with_one_sample(TcpConfig::default());
    for _ in 0..12 {
        let t = s.next_timer().unwrap();
        s.on_timer(t, &mut out);
    }
    // 300 ms · 2^12 is far above 120 s.
    assert_eq!(s.rto.rto(&s.rtt), SimDuration::from_secs(120));
}

#[test]
fn rfc6298_clamps_the_whole_rto_and_resets_the_backoff_on_any_new_ack() {
    let cfg = TcpConfig {
        rto_rule: crate::transport::rtt::RtoRule::Rfc6298,
        timer_clock: TimerClock::Exact,
        ..TcpConfig::default()
    };
    let (mut s, mut out) = sender_with_one_sample(cfg);
    // 100 + 4·50 = 300 ms, exact.
    assert_eq!(s.next_timer(), Some(ms(400)));
    s.on_timer(ms(400), &mut out);
    assert_eq!(s.next_timer(), Some(ms(1000)));
    s.on_ack(ms(1050), &ack(2, &[], SimTime::ZERO), &mut out);
    assert_eq!(s.rto.backoff(), 0);
}

#[test]
fn retransmitting_the_head_in_fast_recovery_restarts_the_rto() {
    let (mut s, mut out) = sender_with_one_sample(TcpConfig::default());
    let before = s.next_timer().unwrap();
    // Segments 2.. SACKed at 150 ms: RACK marks 1 lost and it is resent
    // at once (it is the head of the queue).
    s.on_ack(ms(150), &ack(1, &[(2, 5)], ms(0)), &mut out);
    assert_eq!(out.retransmits, vec![(MSS, RetxKind::Fast)]);
    let after = s.next_timer().unwrap();
    assert!(after > before, "{after:?} > {before:?}");
    // The RTO runs from the retransmission (150 ms, jiffy 37).
    assert_eq!(
        after,
        Clock::new(TimerClock::Jiffies, 250).deadline(ms(150), s.rto.rto(&s.rtt))
    );
}

#[test]
fn the_probe_timeout_is_two_srtt_plus_2_ms_but_never_after_the_rto() {
    let mut s = sender("newreno", TcpConfig::default());
    let mut out = SenderOutput::default();
    s.app_write(ms(0), 100 * MSS, &mut out);
    s.on_ack(ms(100), &ack(1, &[], ms(0)), &mut out);
    // After the ACK: 2·100 + 2 = 202 ms → 51 jiffies. But the two new
    // segments then sent reschedule it against the RTO still running from
    // the head's transmission at 0: 300 − 100 = 200 ms = 50 jiffies. Armed
    // at jiffy 25: expires 75, fires at 76 (304 ms), before the RTO.
    assert_eq!(s.rto.kind(), Some(XmitTimer::Probe));
    assert_eq!(s.next_timer(), Some(ms(304)));
}

#[test]
fn with_a_single_segment_out_the_probe_waits_for_a_delayed_ack() {
    let mut s = sender("newreno", TcpConfig::default());
    let mut out = SenderOutput::default();
    s.app_write(ms(0), 2 * MSS, &mut out);
    s.on_ack(ms(100), &ack(1, &[], ms(0)), &mut out);
    // One segment out: 2·srtt + rto_min = 400 ms, capped by the RTO
    // (300 ms from now, 75 jiffies): jiffy 25 + 75 = 100, on the wheel's
    // second level → 104 (416 ms).
    assert_eq!(s.rto.kind(), Some(XmitTimer::Probe));
    assert_eq!(s.next_timer(), Some(ms(416)));
}

#[test]
fn a_probe_sends_new_data_beyond_the_window_when_there_is_some() {
    let mut s = sender("newreno", TcpConfig::default());
    let mut out = SenderOutput::default();
    s.app_write(ms(0), 100 * MSS, &mut out);
    out.clear();
    s.on_ack(ms(100), &ack(1, &[], ms(0)), &mut out);
    assert_eq!(sent(&mut out), vec![10, 11]);
    // No more ACKs. The window is full, yet the probe sends segment 12.
    s.on_timer(ms(304), &mut out);
    assert_eq!(sent(&mut out), vec![12]);
    assert!(out.retransmits.is_empty());
    assert_eq!(s.stats().probes, 1);
    assert_eq!(s.probe.high_seq, Some(13 * MSS));
    // Then the RTO, from now: 300 ms from jiffy 76 → 151, second level →
    // 152 (608 ms).
    assert_eq!(s.rto.kind(), Some(XmitTimer::Rto));
    assert_eq!(s.next_timer(), Some(ms(608)));
}

/// Ten segments; all but the last acknowledged at 100 ms; the probe fires
/// and resends the last one. Returns the sender at the probe.
fn probe_of_a_lost_tail() -> (TcpSender, SenderOutput, SimTime) {
    let mut s = sender("newreno", TcpConfig::default());
    let mut out = SenderOutput::default();
    s.app_write(ms(0), 10 * MSS, &mut out);
    s.on_ack(ms(100), &ack(9, &[], ms(0)), &mut out);
    out.clear();
    let t = s.next_timer().unwrap();
    assert_eq!(s.rto.kind(), Some(XmitTimer::Probe));
    s.on_timer(t, &mut out);
    assert_eq!(out.retransmits, vec![(9 * MSS, RetxKind::Probe)]);
    assert_eq!(s.probe.high_seq, Some(10 * MSS));
    out.clear();
    (s, out, t)
}

#[test]
fn a_probe_that_repaired_a_loss_reduces_the_window_once() {
    let (mut s, mut out, t) = probe_of_a_lost_tail();
    let cwnd = s.cwnd();
    s.app_write(t, 20 * MSS, &mut out);
    // The probe's ACK: everything up to the probe, no D-SACK: not yet
    // conclusive.
    s.on_ack(t + SimDuration::from_millis(100), &ack(10, &[], t), &mut out);
    assert_eq!(s.stats().probe_recoveries, 0);
    let cwnd = cwnd.max(s.cwnd());
    // Data sent after the probe is acknowledged: the original was lost
    // (tcp_process_tlp_ack): CWR, ssthresh from the algorithm, back to Open.
    s.on_ack(t + SimDuration::from_millis(101), &ack(12, &[], t), &mut out);
    assert_eq!(s.stats().probe_recoveries, 1);
    assert_eq!(s.ca_state(), CaState::Open);
    assert!(s.cwnd() <= cwnd / 2 + 1, "{} after {cwnd}", s.cwnd());
    assert_eq!(s.probe.high_seq, None);
}

#[test]
fn a_dsack_of_the_probe_shows_nothing_was_lost() {
    let (mut s, mut out, t) = probe_of_a_lost_tail();
    // The original arrives after all, then the probe as a duplicate.
    s.on_ack(t + SimDuration::from_millis(1), &ack(10, &[], ms(0)), &mut out);
    s.on_ack(t + SimDuration::from_millis(100), &ack(10, &[(9, 10)], t), &mut out);
    assert_eq!(s.probe.high_seq, None);
    assert_eq!(s.stats().probe_recoveries, 0);
}

// ----- Nagle's algorithm with Minshall's variant (send.rs) -----

/// Payload lengths of the data packets in `out`, drained.
fn lens(out: &mut SenderOutput) -> Vec<u32> {
    let v = out
        .packets
        .iter()
        .map(|p| match &p.kind {
            PacketKind::Data(d) => d.len,
            PacketKind::Ack(_) => unreachable!(),
        })
        .collect();
    out.clear();
    v
}

/// An ACK of every byte below `bytes`.
fn ack_bytes(bytes: u64, ts_ecr: SimTime) -> AckHeader {
    match Packet::ack(FlowId(0), bytes, &[], ts_ecr).kind {
        PacketKind::Ack(a) => a,
        PacketKind::Data(_) => unreachable!(),
    }
}

/// Four writes of 700 bytes, 1 ms apart: what leaves after each.
fn four_small_writes(s: &mut TcpSender, out: &mut SenderOutput) -> Vec<Vec<u32>> {
    (0..4)
        .map(|k| {
            s.app_write(ms(k), 700, out);
            lens(out)
        })
        .collect()
}

#[test]
fn small_writes_with_a_small_segment_outstanding_are_merged_into_full_segments() {
    let mut s = sender("cubic", TcpConfig::default());
    let mut out = SenderOutput::default();
    // The first short write leaves (nothing short is out); the next ones
    // wait for its ACK and merge, and a full segment leaves as soon as
    // 1448 bytes have gathered.
    assert_eq!(
        four_small_writes(&mut s, &mut out),
        vec![vec![700], vec![], vec![], vec![1448]]
    );
    // A full segment does not release the tail (Minshall: only a short one
    // out holds it).
    s.on_ack(ms(40), &ack_bytes(700 + 1448, ms(3)), &mut out);
    assert_eq!(lens(&mut out), vec![652], "the short segment's ACK releases the tail");
    assert_eq!(s.snd_nxt(), 2800);
}

#[test]
fn with_nothing_small_outstanding_a_small_write_goes_at_once() {
    let mut s = sender("cubic", TcpConfig::default());
    let mut out = SenderOutput::default();
    s.app_write(ms(0), 2 * MSS, &mut out);
    assert_eq!(lens(&mut out), vec![1448, 1448]);
    // Full segments are out, none short: the short write is not held.
    s.app_write(ms(1), 500, &mut out);
    assert_eq!(lens(&mut out), vec![500]);
    // Now a short one is out: the next short write waits...
    s.app_write(ms(2), 500, &mut out);
    assert_eq!(lens(&mut out), Vec::<u32>::new());
    // ... until it is acknowledged, although full segments are still out.
    s.on_ack(ms(40), &ack_bytes(MSS, ms(0)), &mut out);
    assert_eq!(lens(&mut out), Vec::<u32>::new());
    s.on_ack(ms(41), &ack_bytes(2 * MSS + 500, ms(1)), &mut out);
    assert_eq!(lens(&mut out), vec![500]);
}

#[test]
fn with_nodelay_every_write_leaves_at_once() {
    let mut s = sender(
        "cubic",
        TcpConfig {
            nodelay: true,
            ..TcpConfig::default()
        },
    );
    let mut out = SenderOutput::default();
    assert_eq!(
        four_small_writes(&mut s, &mut out),
        vec![vec![700], vec![700], vec![700], vec![700]]
    );
}

#[test]
fn closing_pushes_the_remainder_nagle_held() {
    let mut s = sender("cubic", TcpConfig::default());
    let mut out = SenderOutput::default();
    s.app_write(ms(0), 700, &mut out);
    s.app_write(ms(1), 500, &mut out);
    assert_eq!(lens(&mut out), vec![700]);
    // The FIN rides the held tail and Nagle never holds a FIN.
    s.app_close(ms(2), false, &mut out);
    assert_eq!(lens(&mut out), vec![500]);
    s.on_ack(ms(40), &ack_bytes(1200, ms(2)), &mut out);
    assert!(s.finished());
}

#[test]
fn a_tail_nagle_holds_marks_the_connection_application_limited_only_when_the_window_has_room() {
    // Window of ten: the held tail leaves the window unused, so rate
    // samples must be marked application-limited (Linux
    // tcp_rate_check_app_limited: less than a segment unsent, in flight
    // below cwnd).
    let mut s = sender("cubic", TcpConfig::default());
    let mut out = SenderOutput::default();
    s.app_write(ms(0), 700, &mut out);
    s.rate.app_limited_until = 0;
    s.app_write(ms(1), 500, &mut out);
    assert_eq!(lens(&mut out), vec![700]);
    assert_eq!(s.rate.app_limited_until, 1, "delivered 0 + 1 in flight");
    // A window of one, full: the window is what limits, not the
    // application.
    let mut s = sender(
        "cubic",
        TcpConfig {
            initial_cwnd: 1,
            ..TcpConfig::default()
        },
    );
    s.app_write(ms(0), 700, &mut out);
    s.rate.app_limited_until = 0;
    s.app_write(ms(1), 500, &mut out);
    assert_eq!(lens(&mut out), vec![700]);
    assert_eq!(s.rate.app_limited_until, 0);
    assert!(s.send.cwnd_limited);
}

// ----- per-packet records for the congestion controller -----

use crate::transport::cc::helpers::{reno_cong_avoid, reno_ssthresh};
use crate::transport::cc::{LostPacket, PacketRecord, RateSample, SentPacket, Window};
use std::sync::{Arc, Mutex};

/// What the recording controller saw.
#[derive(Debug, Default)]
struct Seen {
    /// (seq, retransmission, record returned) per transmission.
    sent: Vec<(u64, bool, PacketRecord)>,
    /// Every loss marking: (seq, record, lost_total passed, view.lost_total).
    lost: Vec<(u64, PacketRecord, u64, u64)>,
    /// The sampled packet's record and the TLP flag, per ACK.
    samples: Vec<(Option<PacketRecord>, bool)>,
    /// The records handed over with each repaired tail loss.
    tlp_recoveries: Vec<PacketRecord>,
}

/// Reno that records every per-packet hook: its record of a packet is what
/// the framework told it at the send.
struct Recording(Arc<Mutex<Seen>>);

impl CongestionControl for Recording {
    fn name(&self) -> &'static str {
        "recording"
    }
    fn ssthresh(&mut self, _now: SimTime, w: &Window, _c: &ConnView) -> u32 {
        reno_ssthresh(w)
    }
    fn cong_avoid(&mut self, _now: SimTime, w: &mut Window, c: &ConnView, acked: u32) {
        reno_cong_avoid(w, c, acked);
    }
    fn on_packet_sent(&mut self, _now: SimTime, p: &SentPacket) -> PacketRecord {
        let r = PacketRecord {
            in_flight: p.in_flight,
            lost: p.lost,
            app_limited: p.app_limited,
        };
        self.0.lock().unwrap().sent.push((p.seq, p.retransmission, r));
        r
    }
    fn on_packet_lost(&mut self, _now: SimTime, _w: &Window, c: &ConnView, p: &LostPacket) {
        self.0
            .lock()
            .unwrap()
            .lost
            .push((p.seq, p.record, p.lost_total, c.lost_total));
    }
    fn on_tlp_recovery(&mut self, _now: SimTime, _w: &Window, _c: &ConnView, orig: &PacketRecord) {
        self.0.lock().unwrap().tlp_recoveries.push(*orig);
    }
    fn cong_control(&mut self, _now: SimTime, _w: &mut Window, _c: &ConnView, rs: &RateSample) -> bool {
        self.0
            .lock()
            .unwrap()
            .samples
            .push((rs.record, rs.is_acking_tlp_retrans_seq));
        false
    }
}

fn recording_sender(cfg: TcpConfig) -> (TcpSender, Arc<Mutex<Seen>>) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    (TcpSender::new(FlowId(0), cfg, Box::new(Recording(seen.clone()))), seen)
}

fn record(in_flight: u32, lost: u64) -> PacketRecord {
    PacketRecord {
        in_flight,
        lost,
        app_limited: false,
    }
}

#[test]
fn each_packets_record_holds_the_in_flight_at_its_latest_transmission_retransmissions_included() {
    let cfg = TcpConfig {
        loss_detection: LossDetection::Dupthresh,
        tlp: false,
        ..TcpConfig::default()
    };
    let (mut s, seen) = recording_sender(cfg);
    let mut out = SenderOutput::default();
    s.app_write(ms(0), 10 * MSS, &mut out);
    let in_flight: Vec<u32> = seen.lock().unwrap().sent.iter().map(|x| x.2.in_flight).collect();
    assert_eq!(in_flight, (1..=10).collect::<Vec<_>>(), "each counts itself");
    // Segments 1-3 SACKed: the sample is segment 3's (sent last, highest);
    // segment 0 is lost and resent with 10 − 3 SACKed − 1 lost in flight,
    // plus itself, and one loss counted before it.
    s.on_ack(ms(100), &ack(0, &[(1, 4)], ms(0)), &mut out);
    assert_eq!(out.retransmits, vec![(0, RetxKind::Fast)]);
    {
        let seen = seen.lock().unwrap();
        assert_eq!(seen.samples.last().unwrap().0, Some(record(4, 0)));
        let retx = seen.sent.iter().find(|x| x.1).unwrap();
        assert_eq!((retx.0, retx.2), (0, record(7, 1)));
    }
    // The cumulative ACK of the retransmission samples it, not its first
    // transmission.
    s.on_ack(ms(200), &ack(4, &[], ms(100)), &mut out);
    assert_eq!(seen.lock().unwrap().samples.last().unwrap().0, Some(record(7, 1)));
}

#[test]
fn the_loss_hook_fires_once_per_marking_after_counting_it() {
    let cfg = TcpConfig {
        loss_detection: LossDetection::Dupthresh,
        tlp: false,
        ..TcpConfig::default()
    };
    let (mut s, seen) = recording_sender(cfg);
    let mut out = SenderOutput::default();
    s.app_write(ms(0), 10 * MSS, &mut out);
    s.on_ack(ms(100), &ack(0, &[(1, 4)], ms(0)), &mut out);
    assert_eq!(seen.lock().unwrap().lost.len(), 1, "segment 0");
    // The timeout marks every un-SACKed segment, and the lost
    // retransmission of segment 0 once more.
    let t = s.next_timer().unwrap();
    s.on_timer(t, &mut out);
    let seen = seen.lock().unwrap();
    let seqs: Vec<u64> = seen.lost.iter().map(|x| x.0 / MSS).collect();
    let resent_before_timeout: Vec<u64> = seen.sent[10..].iter().map(|x| x.0 / MSS).collect();
    let mut expect = vec![0, 0];
    expect.extend((4..10).chain(resent_before_timeout.iter().copied().filter(|&k| k >= 10)));
    assert_eq!(seqs, expect);
    // tp->lost counts each marking before the hook sees it.
    for (k, x) in seen.lost.iter().enumerate() {
        assert_eq!((x.2, x.3), (k as u64 + 1, k as u64 + 1));
    }
    // Segment 0's second marking hands over its retransmission's record.
    assert_eq!(seen.lost[1].1, record(7, 1));
}

#[test]
fn a_repaired_tail_loss_reaches_the_algorithm_with_the_probed_segments_earlier_record() {
    let (mut s, seen) = recording_sender(TcpConfig::default());
    let mut out = SenderOutput::default();
    s.app_write(ms(0), 10 * MSS, &mut out);
    s.on_ack(ms(100), &ack(9, &[], ms(0)), &mut out);
    let t = s.next_timer().unwrap();
    s.on_timer(t, &mut out);
    assert_eq!(out.retransmits, vec![(9 * MSS, RetxKind::Probe)]);
    out.clear();
    {
        // The probe counts the resent segment, still in flight, once more
        // (Linux tcp_set_tx_in_flight); the connection is application-limited
        // by now (nothing new to send), unlike at the first transmission.
        let seen = seen.lock().unwrap();
        let probe = PacketRecord {
            app_limited: true,
            ..record(2, 0)
        };
        assert_eq!(*seen.sent.last().unwrap(), (9 * MSS, true, probe));
    }
    s.app_write(t, 20 * MSS, &mut out);
    // An ACK exactly at the probe's sequence may be for either copy.
    s.on_ack(t + SimDuration::from_millis(100), &ack(10, &[], t), &mut out);
    assert!(seen.lock().unwrap().samples.last().unwrap().1);
    assert!(seen.lock().unwrap().tlp_recoveries.is_empty());
    // Data beyond it acknowledged: the probe repaired a loss.
    s.on_ack(t + SimDuration::from_millis(101), &ack(12, &[], t), &mut out);
    let seen = seen.lock().unwrap();
    assert!(!seen.samples.last().unwrap().1);
    assert_eq!(seen.tlp_recoveries, vec![record(10, 0)]);
}
