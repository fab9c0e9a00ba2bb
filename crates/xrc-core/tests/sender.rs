//! The TCP sender and receiver over a scripted path: a fixed one-way delay
//! each way, optionally a rate-limited bottleneck that can stop serving for
//! a while (an outage, as on a cellular trace), and rules that drop or
//! delay chosen transmissions. Each test reads as a packet exchange.

use std::collections::{BTreeMap, HashMap};

use xrc_core::net::{Packet, PacketKind};
use xrc_core::transport::cc::registry;
use xrc_core::transport::{
    LossDetection, ReceiverConfig, Recovery, SenderOutput, SenderStats, TcpConfig, TcpReceiver, TcpSender,
};
use xrc_core::units::{BitRate, SimDuration, SimTime};

const MSS: u64 = 1448;

fn ms(v: u64) -> SimDuration {
    SimDuration::from_millis(v)
}

/// The path between sender and receiver.
struct Path {
    /// Propagation delay each way.
    one_way: SimDuration,
    /// The data direction's bottleneck: (rate, packets it can queue). The
    /// queue is first-in first-out; a packet that finds it full is dropped.
    bottleneck: Option<(BitRate, usize)>,
    /// The bottleneck serves nothing during [start, end): packets wait.
    outage: Option<(SimTime, SimTime)>,
    /// Transmissions lost, as (segment index, nth transmission of it, from 1).
    drop: Vec<(u64, u32)>,
    /// Transmissions delayed by an extra amount (reordering).
    delay: Vec<((u64, u32), SimDuration)>,
    /// ACKs carry no timestamp echo.
    strip_timestamps: bool,
}

impl Path {
    fn fixed(one_way: SimDuration) -> Path {
        Path {
            one_way,
            bottleneck: None,
            outage: None,
            drop: Vec::new(),
            delay: Vec::new(),
            strip_timestamps: false,
        }
    }
}

/// What a run produced.
struct Run {
    stats: SenderStats,
    /// When the receiver had everything, if it did.
    done: Option<SimTime>,
    /// (time, cwnd) after every event.
    cwnd: Vec<(SimTime, u32)>,
    snd: TcpSender,
}

impl Run {
    /// The window at time `t` (the last value set at or before it).
    fn cwnd_at(&self, t: SimTime) -> u32 {
        self.cwnd.iter().take_while(|(u, _)| *u <= t).last().map_or(0, |c| c.1)
    }
}

/// Runs a transfer of `segments` (bulk when `None`) until `until`, over
/// `path`, with the `cc` algorithm and `cfg`.
fn run(cc: &str, cfg: TcpConfig, path: &Path, segments: Option<u64>, until: SimTime) -> Run {
    let recovery = cfg.recovery;
    let cc = registry::build(cc, &serde_json::Value::Null).unwrap();
    let flow = xrc_core::net::FlowId(0);
    let mut snd = TcpSender::new(flow, cfg, cc);
    let mut rcv = TcpReceiver::new(
        flow,
        ReceiverConfig {
            quickack_segments: 0,
            sack: recovery == Recovery::Sack,
            ..ReceiverConfig::default()
        },
    );
    // Events: time -> packets arriving at the receiver (data) or the sender (ACKs).
    let mut to_rcv: BTreeMap<(SimTime, u64), Packet> = BTreeMap::new();
    let mut to_snd: BTreeMap<(SimTime, u64), Packet> = BTreeMap::new();
    // Departure times of the packets queued at the bottleneck.
    let mut queue: std::collections::VecDeque<SimTime> = Default::default();
    let mut link_free = SimTime::ZERO;
    let mut sent: HashMap<u64, u32> = HashMap::new();
    let mut n = 0u64;
    let mut now = SimTime::ZERO;
    let mut out = SenderOutput::default();
    snd.app_write(now, segments.map_or(u64::MAX, |s| s * MSS), &mut out);
    if segments.is_some() {
        snd.app_close(now, false, &mut out);
    }
    let total = segments.map(|s| s * MSS);
    let mut done = None;
    let mut cwnd = vec![(now, snd.cwnd())];
    for _ in 0..2_000_000 {
        for (seq, kind) in out.retransmits.drain(..) {
            if std::env::var("DBG").is_ok() {
                eprintln!(
                    "{:?} retx {} {:?} cwnd {} state {:?}",
                    now,
                    seq / MSS,
                    kind,
                    snd.cwnd(),
                    snd.ca_state()
                );
            }
        }
        for p in out.packets.drain(..) {
            let PacketKind::Data(d) = &p.kind else { unreachable!() };
            let idx = d.seq / MSS;
            let k = sent.entry(idx).or_insert(0);
            *k += 1;
            if path.drop.contains(&(idx, *k)) {
                continue;
            }
            let extra = path
                .delay
                .iter()
                .find(|(t, _)| *t == (idx, *k))
                .map_or(SimDuration::ZERO, |x| x.1);
            let mut depart = now;
            if let Some((rate, cap)) = path.bottleneck {
                while queue.front().is_some_and(|&t| t <= now) {
                    queue.pop_front();
                }
                if queue.len() >= cap {
                    continue;
                }
                let mut start = link_free.max(now);
                if let Some((a, b)) = path.outage {
                    if start >= a && start < b {
                        start = b;
                    }
                }
                depart = start + rate.tx_time(p.size as u64).unwrap();
                link_free = depart;
                queue.push_back(depart);
            }
            n += 1;
            to_rcv.insert((depart + path.one_way + extra, n), p);
        }
        out.clear();
        // The next thing to happen: an arrival or a timer.
        let next_rcv = to_rcv.keys().next().map(|k| k.0);
        let next_snd = to_snd.keys().next().map(|k| k.0);
        let next_timer = snd.next_timer();
        let next_delack = rcv.next_timer();
        let Some(t) = [next_rcv, next_snd, next_timer, next_delack]
            .into_iter()
            .flatten()
            .min()
        else {
            break;
        };
        if t > until {
            break;
        }
        now = t;
        if next_rcv == Some(t) {
            let (_, p) = to_rcv.pop_first().unwrap();
            let PacketKind::Data(d) = &p.kind else { unreachable!() };
            let r = rcv.on_data(now, d);
            if let Some(a) = r.ack {
                n += 1;
                to_snd.insert((now + path.one_way, n), a);
            }
            if total.is_some_and(|t| rcv.delivered_total() == t) && done.is_none() {
                done = Some(now);
            }
        } else if next_snd == Some(t) {
            let (_, a) = to_snd.pop_first().unwrap();
            let PacketKind::Ack(h) = &a.kind else { unreachable!() };
            let mut h = h.clone();
            if path.strip_timestamps {
                h.ts_ecr = SimTime::ZERO;
            }
            snd.on_ack(now, &h, &mut out);
        } else if next_delack == Some(t) {
            if let Some(a) = rcv.on_timer(now) {
                n += 1;
                to_snd.insert((now + path.one_way, n), a);
            }
        } else {
            snd.on_timer(now, &mut out);
        }
        cwnd.push((now, snd.cwnd()));
        if snd.finished() {
            break;
        }
    }
    Run {
        stats: snd.stats(),
        done,
        cwnd,
        snd,
    }
}

/// A transfer of `segments` over a path with `one_way` delay, dropping the
/// transmissions listed in `drop`, with NewReno and SACK.
fn exchange(
    loss_detection: LossDetection,
    segments: u64,
    one_way: SimDuration,
    drop: &[(u64, u32)],
) -> (SenderStats, Option<SimTime>) {
    let cfg = TcpConfig {
        loss_detection,
        recovery: Recovery::Sack,
        ..TcpConfig::default()
    };
    let path = Path {
        drop: drop.to_vec(),
        ..Path::fixed(one_way)
    };
    let r = run("newreno", cfg, &path, Some(segments), SimTime::from_nanos(u64::MAX / 2));
    (r.stats, r.done)
}

#[test]
fn a_single_loss_is_repaired_by_fast_retransmit_without_a_timeout() {
    for ld in [LossDetection::Rack, LossDetection::Dupthresh] {
        let (stats, done) = exchange(ld, 200, ms(20), &[(50, 1)]);
        assert_eq!(stats.timeouts, 0, "{ld:?}");
        assert_eq!(stats.retransmits_fast, 1, "{ld:?}");
        // A genuine loss: the reduction stands.
        assert_eq!(stats.undos(), 0, "{ld:?}");
        assert!(done.is_some());
    }
}

#[test]
fn rack_finds_a_lost_retransmission_without_waiting_for_the_timeout() {
    // Segment 50 is lost, and so is its first retransmission.
    let (rack, rack_done) = exchange(LossDetection::Rack, 300, ms(20), &[(50, 1), (50, 2)]);
    assert_eq!(
        rack.timeouts, 0,
        "RACK retransmits again once later-sent data is delivered"
    );
    assert_eq!(rack.retransmits_fast, 2);
    // RFC 6675 alone cannot see it: only the retransmission timer can.
    let (dup, dup_done) = exchange(LossDetection::Dupthresh, 300, ms(20), &[(50, 1), (50, 2)]);
    assert_eq!(dup.timeouts, 1);
    assert!(rack_done.unwrap() < dup_done.unwrap());
}

/// A transfer of `segments` over a 40 ms-RTT path losing `drop`, with
/// NewReno, SACK, RACK and `cfg`.
fn tail(cfg: TcpConfig, segments: u64, drop: &[(u64, u32)]) -> Run {
    let path = Path {
        drop: drop.to_vec(),
        ..Path::fixed(ms(20))
    };
    run("newreno", cfg, &path, Some(segments), SimTime::from_nanos(u64::MAX / 2))
}

#[test]
fn a_lost_tail_is_found_by_the_tail_loss_probe_not_the_timer() {
    // Nothing is sent after the last segment, so no ACK can reveal its
    // loss; the probe resends it about two RTTs after the last ACK.
    let r = tail(TcpConfig::default(), 40, &[(39, 1)]);
    let s = r.stats;
    assert_eq!((s.timeouts, s.probes, s.retransmits_probe), (0, 1, 1), "{s:?}");
    assert!(r.done.is_some());
    // Without the probe only the retransmission timer can.
    let r2 = tail(
        TcpConfig {
            tlp: false,
            ..TcpConfig::default()
        },
        40,
        &[(39, 1)],
    );
    let s2 = r2.stats;
    assert_eq!((s2.timeouts, s2.probes), (1, 0), "{s2:?}");
    assert!(r.done.unwrap() <= r2.done.unwrap());
    // With one segment out the probe waits as long as the RTO would (its
    // ACK may be delayed), but the probe keeps the window: the timeout
    // collapses it.
    assert!(
        r.snd.cwnd() > 4 * r2.snd.cwnd(),
        "{} vs {}",
        r.snd.cwnd(),
        r2.snd.cwnd()
    );
    // The timeout was genuine: its echo is the retransmission's, and no
    // D-SACK reports it. Nothing is undone.
    assert_eq!(s2.loss_undos, 0);
}

#[test]
fn a_longer_lost_tail_is_repaired_by_the_probe_and_rack_in_fast_recovery() {
    // The last four segments are lost: the probe resends the last, its
    // SACK lets RACK mark the three before it lost.
    let r = tail(TcpConfig::default(), 40, &[(36, 1), (37, 1), (38, 1), (39, 1)]);
    let s = r.stats;
    assert_eq!((s.timeouts, s.probes, s.recoveries), (0, 1, 1), "{s:?}");
    assert_eq!(s.retransmits_fast, 3, "{s:?}");
    assert!(r.done.is_some());
}

/// A bulk CUBIC flow through a 10 Mbit/s, 40 ms-RTT bottleneck that stops
/// serving for 5 s at 10 s: no packet is lost, they all wait (a cellular
/// outage on a trace link). The receive window (100 segments, 3 BDP) keeps
/// the queue from overflowing, so the outage is the only trouble.
fn outage(cfg: TcpConfig, strip_timestamps: bool) -> Run {
    let cfg = TcpConfig {
        rwnd_bytes: Some(100 * MSS),
        ..cfg
    };
    let path = Path {
        bottleneck: Some((BitRate::from_bps(10_000_000), 10_000)),
        outage: Some((SimTime::from_nanos(10_000_000_000), SimTime::from_nanos(15_000_000_000))),
        strip_timestamps,
        ..Path::fixed(ms(20))
    };
    run("cubic", cfg, &path, None, SimTime::from_nanos(20_000_000_000))
}

#[test]
fn after_a_five_second_outage_the_spurious_timeouts_are_undone_and_the_window_restored() {
    let before = outage(TcpConfig::default(), false);
    let at = |s: u64| SimTime::from_nanos(s * 1_000_000_000);
    let w0 = before.cwnd_at(at(10));
    assert!(w0 > 20, "a window built up before the outage: {w0}");
    // The outage fires the RTO, with backoff, several times: each resends
    // the head once, into the queue behind the waiting originals.
    let s = before.stats;
    assert!(s.timeouts >= 3, "{s:?}");
    // When service resumes, the originals arrive first: their timestamp
    // echo predates the first retransmission (tcp_packet_delayed), so the
    // timeout is undone and the window restored, and nothing more is
    // retransmitted.
    assert_eq!(s.loss_undos, 1, "{s:?}");
    assert_eq!(s.retransmits_fast + s.retransmits_timeout, s.timeouts, "{s:?}");
    assert!(s.retransmits_probe <= 1, "{s:?}");
    // The first ACKs come back 40 ms after service resumes.
    let w1 = before.cwnd_at(at(15) + ms(50));
    assert!(w1 >= w0, "window restored: {w1} >= {w0}");

    // Without undo the sender falls to one segment and resends the window.
    let no_undo = outage(
        TcpConfig {
            undo: false,
            frto: false,
            ..TcpConfig::default()
        },
        false,
    );
    let n = no_undo.stats;
    assert_eq!(n.loss_undos, 0);
    assert!(n.retransmits_timeout > 5 * s.retransmits_timeout, "{n:?} vs {s:?}");
    assert!(no_undo.cwnd_at(at(15) + ms(50)) < 10);
}

#[test]
fn without_timestamps_f_rto_finds_the_outages_timeout_spurious() {
    let r = outage(TcpConfig::default(), true);
    let s = r.stats;
    // The first ACK after the outage acknowledges never-retransmitted data
    // sent before the timeout: RFC 5682 step 3.b. (Without timestamps that
    // same ACK cannot tell the head's original from its last
    // retransmission, so RACK, as Linux's, then takes every older segment
    // for lost: the undo stands but a recovery follows.)
    assert_eq!((s.loss_undos, s.spurious_rtos), (1, 1), "{s:?}");
    // With neither timestamps nor F-RTO nothing can tell.
    let r = outage(
        TcpConfig {
            frto: false,
            ..TcpConfig::default()
        },
        true,
    );
    assert_eq!(r.stats.loss_undos, 0, "{:?}", r.stats);
}

#[test]
fn a_spurious_fast_retransmit_after_reordering_is_undone_by_timestamps_or_by_its_dsack() {
    // Segment 50 is held back 15 ms (a third of the RTT): three later
    // segments are SACKed first, so it is retransmitted in vain.
    for strip in [false, true] {
        let path = Path {
            delay: vec![((50, 1), ms(15))],
            strip_timestamps: strip,
            ..Path::fixed(ms(20))
        };
        let cfg = TcpConfig {
            loss_detection: LossDetection::Dupthresh,
            ..TcpConfig::default()
        };
        let r = run("newreno", cfg, &path, Some(400), SimTime::from_nanos(10_000_000_000));
        let s = r.stats;
        assert_eq!(
            (s.recoveries, s.retransmits_fast, s.timeouts),
            (1, 1, 0),
            "strip {strip}: {s:?}"
        );
        assert_eq!(s.undos(), 1, "strip {strip}: {s:?}");
        if strip {
            // Only the receiver's D-SACK of the duplicate can tell
            // (tcp_try_undo_dsack).
            assert_eq!((s.dsack_undos, s.dsacks), (1, 1), "{s:?}");
        } else {
            // The ACK of the late original echoes its timestamp, older than
            // the retransmission (tcp_try_undo_partial).
            assert_eq!(s.partial_undos, 1, "{s:?}");
        }
        assert!(r.done.is_some());
        let _ = &r.snd;
    }
}
