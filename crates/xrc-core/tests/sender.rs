//! The TCP sender and receiver over a scripted path: a fixed one-way delay
//! each way and a rule that drops chosen transmissions. Each test reads as
//! a packet exchange.

use std::collections::{BTreeMap, HashMap};

use xrc_core::net::{Packet, PacketKind};
use xrc_core::transport::cc::registry;
use xrc_core::transport::{
    LossDetection, ReceiverConfig, Recovery, SenderOutput, SenderStats, TcpConfig, TcpReceiver, TcpSender,
};
use xrc_core::units::{SimDuration, SimTime};

const MSS: u64 = 1448;

/// Runs a bulk transfer of `segments` over a path with `one_way` delay,
/// dropping the transmissions listed in `drop` as (segment index, nth
/// transmission of it, from 1). Returns the sender's stats and the time the
/// receiver got everything.
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
    let cc = registry::build("newreno", &serde_json::Value::Null).unwrap();
    let flow = xrc_core::net::FlowId(0);
    let mut snd = TcpSender::new(flow, cfg, cc);
    let mut rcv = TcpReceiver::new(
        flow,
        ReceiverConfig {
            quickack_segments: 0,
            ..ReceiverConfig::default()
        },
    );
    // Events: time -> packets arriving at the receiver (data) or the sender (ACKs).
    let mut to_rcv: BTreeMap<(SimTime, u64), Packet> = BTreeMap::new();
    let mut to_snd: BTreeMap<(SimTime, u64), Packet> = BTreeMap::new();
    let mut sent: HashMap<u64, u32> = HashMap::new();
    let mut n = 0u64;
    let mut now = SimTime::ZERO;
    let mut out = SenderOutput::default();
    snd.app_write(now, segments * MSS, &mut out);
    snd.app_close(false);
    let mut done = None;
    for _ in 0..200_000 {
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
            if !drop.contains(&(idx, *k)) {
                n += 1;
                to_rcv.insert((now + one_way, n), p);
            }
        }
        out.clear();
        // The next thing to happen: an arrival or a sender timer.
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
        now = t;
        if next_rcv == Some(t) {
            let (_, p) = to_rcv.pop_first().unwrap();
            let PacketKind::Data(d) = &p.kind else { unreachable!() };
            let r = rcv.on_data(now, d);
            if let Some(a) = r.ack {
                n += 1;
                to_snd.insert((now + one_way, n), a);
            }
            if rcv.delivered_total() == segments * MSS && done.is_none() {
                done = Some(now);
            }
        } else if next_snd == Some(t) {
            let (_, a) = to_snd.pop_first().unwrap();
            let PacketKind::Ack(h) = &a.kind else { unreachable!() };
            snd.on_ack(now, h, &mut out);
        } else if next_delack == Some(t) {
            if let Some(a) = rcv.on_timer(now) {
                n += 1;
                to_snd.insert((now + one_way, n), a);
            }
        } else {
            snd.on_timer(now, &mut out);
        }
        if snd.finished() {
            break;
        }
    }
    (snd.stats(), done)
}

#[test]
fn a_single_loss_is_repaired_by_fast_retransmit_without_a_timeout() {
    for ld in [LossDetection::Rack, LossDetection::Dupthresh] {
        let (stats, done) = exchange(ld, 200, SimDuration::from_millis(20), &[(50, 1)]);
        assert_eq!(stats.timeouts, 0, "{ld:?}");
        assert_eq!(stats.retransmits_fast, 1, "{ld:?}");
        assert!(done.is_some());
    }
}

#[test]
fn rack_finds_a_lost_retransmission_without_waiting_for_the_timeout() {
    // Segment 50 is lost, and so is its first retransmission.
    let (rack, rack_done) = exchange(
        LossDetection::Rack,
        300,
        SimDuration::from_millis(20),
        &[(50, 1), (50, 2)],
    );
    assert_eq!(
        rack.timeouts, 0,
        "RACK retransmits again once later-sent data is delivered"
    );
    assert_eq!(rack.retransmits_fast, 2);
    // RFC 6675 alone cannot see it: only the retransmission timer can.
    let (dup, dup_done) = exchange(
        LossDetection::Dupthresh,
        300,
        SimDuration::from_millis(20),
        &[(50, 1), (50, 2)],
    );
    assert_eq!(dup.timeouts, 1);
    assert!(rack_done.unwrap() < dup_done.unwrap());
}

#[test]
fn a_lost_tail_needs_the_retransmission_timer() {
    // Nothing is sent after the last segment, so no ACK can reveal its loss
    // (the simulator has no tail loss probe).
    let (stats, done) = exchange(LossDetection::Rack, 40, SimDuration::from_millis(20), &[(39, 1)]);
    assert_eq!(stats.timeouts, 1);
    assert!(done.is_some());
}
