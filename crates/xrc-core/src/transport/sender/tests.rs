//! The sender driven by hand: each test writes the ACKs a receiver would
//! send and checks what the sender does.

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
    // No RTT sample yet: the initial RTO, 1 s.
    assert_eq!(s.next_timer(), Some(ms(1000)));
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
