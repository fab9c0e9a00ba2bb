//! Every congestion control in the registry, driven through the real TCP
//! sender and receiver by random sequences of operations — time passes,
//! segments are delivered, reordered or lost, ACKs are delivered or lost,
//! timers fire, explicit feedback of every kind arrives (with extreme
//! values) or stops, the application writes a little more (with Nagle's
//! algorithm on or off) — must keep its invariants:
//! - the window is at least one segment and never overflows;
//! - the pacing rate is finite and non-negative;
//! - the sender's scoreboard stays consistent;
//! - nothing panics.

use xrc_core::engine::Rng;
use xrc_core::net::{Packet, PacketKind, XrcOption};
use xrc_core::transport::cc::{registry, Feedback};
use xrc_core::transport::{ReceiverConfig, Recovery, SenderOutput, TcpConfig, TcpReceiver, TcpSender};
use xrc_core::units::{SimDuration, SimTime};

const SEQUENCES: u64 = 40;
const STEPS: usize = 3000;

fn extreme(rng: &mut Rng) -> u64 {
    match rng.below(6) {
        0 => 0,
        1 => 1,
        2 => u32::MAX as u64 * 1000,
        _ => rng.below(200_000_000),
    }
}

fn fuzz(scheme: &str, seq: u64) {
    let mut rng = Rng::from_seed(0xF022 ^ seq.wrapping_mul(0x9E37_79B9));
    let recovery = if rng.bernoulli(0.5) {
        Recovery::Sack
    } else {
        Recovery::Newreno
    };
    // A receive window keeps absurd explicit rates from sending millions of
    // segments in one step (the window itself may still grow without bound).
    let tcp = TcpConfig {
        recovery,
        pacing: rng.bernoulli(0.3),
        rwnd_bytes: Some(2 << 20),
        nodelay: rng.bernoulli(0.5),
        ..TcpConfig::default()
    };
    let rcfg = ReceiverConfig {
        sack: recovery == Recovery::Sack,
        delayed_ack: rng.bernoulli(0.7),
        ..ReceiverConfig::default()
    };
    let cc = registry::build(scheme, &serde_json::Value::Null).expect("defaults build");
    let flow = xrc_core::net::FlowId(0);
    let mut snd = TcpSender::new(flow, tcp, cc);
    let mut rcv = TcpReceiver::new(flow, rcfg);
    let mut now = SimTime::ZERO;
    let mut out = SenderOutput::default();
    let mut data: std::collections::VecDeque<Packet> = std::collections::VecDeque::new();
    let mut acks: Vec<Packet> = Vec::new();
    snd.app_write(
        now,
        if rng.bernoulli(0.8) {
            u64::MAX
        } else {
            rng.below(5_000_000) + 1
        },
        &mut out,
    );
    data.extend(out.packets.drain(..));
    let check = |snd: &TcpSender, step: usize| {
        let cwnd = snd.cwnd();
        assert!(cwnd >= 1, "{scheme} seq {seq} step {step}: cwnd {cwnd}");
        // The framework clamps the window at u32::MAX / 2 segments.
        assert!(
            cwnd <= u32::MAX / 2,
            "{scheme} seq {seq} step {step}: cwnd overflow {cwnd}"
        );
        if let Some(r) = snd.pacing_rate() {
            assert!(r.bps() < u64::MAX / 2, "{scheme} seq {seq} step {step}: pacing {r:?}");
        }
        assert!(
            snd.scoreboard_consistent(),
            "{scheme} seq {seq} step {step}: scoreboard"
        );
    };
    for step in 0..STEPS {
        out.clear();
        match rng.below(100) {
            // Time passes; due timers fire.
            0..=14 => {
                now += SimDuration::from_micros(rng.below(300_000));
                if snd.next_timer().is_some_and(|t| t <= now) {
                    snd.on_timer(now, &mut out);
                }
                if let Some(a) = rcv.on_timer(now) {
                    acks.push(a);
                }
            }
            // Deliver a data segment, usually the oldest, sometimes another.
            15..=44 if !data.is_empty() => {
                let i = if rng.bernoulli(0.85) {
                    0
                } else {
                    rng.below(data.len() as u64) as usize
                };
                let p = data.remove(i).expect("index in range");
                if let PacketKind::Data(d) = &p.kind {
                    let mut d = d.clone();
                    if d.abc != xrc_core::net::AbcMark::NotCapable {
                        d.abc = if rng.bernoulli(0.5) {
                            xrc_core::net::AbcMark::Accelerate
                        } else {
                            xrc_core::net::AbcMark::Brake
                        };
                    }
                    if let Some(a) = rcv.on_data(now, &d).ack {
                        acks.push(a);
                    }
                }
            }
            // Lose a data segment.
            45..=49 if !data.is_empty() => {
                let i = rng.below(data.len() as u64) as usize;
                data.remove(i);
            }
            // Deliver an ACK, with explicit feedback of random size.
            50..=79 if !acks.is_empty() => {
                let mut a = acks.remove(0);
                now += SimDuration::from_micros(rng.below(2_000));
                if rng.bernoulli(0.5) {
                    a.set_xrc_option(XrcOption::quantized(
                        extreme(&mut rng),
                        SimDuration::from_micros(rng.below(500_000)),
                    ));
                }
                if rng.bernoulli(0.3) {
                    a.set_pbe_option(extreme(&mut rng));
                }
                if let PacketKind::Ack(h) = &a.kind {
                    snd.on_ack(now, h, &mut out);
                }
            }
            // Lose an ACK.
            80..=83 if !acks.is_empty() => {
                acks.remove(0);
            }
            // Out-of-band feedback (NetAssist, the oracle), extreme values included.
            84..=89 => {
                let fb = if rng.bernoulli(0.5) {
                    Feedback::NetAssist {
                        bw_bps: extreme(&mut rng),
                        min_rtt: SimDuration::from_micros(rng.below(1_000_000)),
                        flows: rng.below(5) as u32,
                    }
                } else {
                    Feedback::Oracle {
                        capacity_bps: extreme(&mut rng),
                        base_rtt: SimDuration::from_micros(rng.below(1_000_000)),
                    }
                };
                snd.on_out_of_band(now, &fb, &mut out);
            }
            // A retransmission timeout, whenever it is due.
            90..=94 => {
                if let Some(t) = snd.next_timer() {
                    now = now.max(t);
                    snd.on_timer(now, &mut out);
                }
            }
            // A long idle period.
            95 => now += SimDuration::from_secs(rng.below(5) + 1),
            // The application writes a few bytes more (a no-op for bulk).
            96..=97 => snd.app_write(now, rng.below(3000) + 1, &mut out),
            _ => {}
        }
        data.extend(out.packets.drain(..));
        check(&snd, step);
    }
}

#[test]
fn every_algorithm_keeps_its_invariants_under_random_operations() {
    for scheme in registry::SCHEMES {
        for seq in 0..SEQUENCES {
            let r = std::panic::catch_unwind(|| fuzz(scheme, seq));
            if let Err(e) = r {
                let msg = e
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()));
                panic!("{scheme} sequence {seq} failed: {}", msg.unwrap_or_default());
            }
        }
    }
}
