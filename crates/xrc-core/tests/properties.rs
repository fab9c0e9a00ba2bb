//! Property tests over random scenarios: whatever the topology, radio,
//! buffers, loss-recovery mode and congestion control,
//! - every byte reaches the receiving application exactly once and in order;
//! - every queue conserves packets (arrived = departed + dropped + held);
//! - the senders' scoreboards agree with their counters;
//! - the throughput bins add up to the bytes delivered;
//! - no UE is delivered more bits than its radio link carried.
//!
//! The cases come from a seeded generator, so a failure names the case
//! number that reproduces it.

mod common;

use xrc_core::engine::Rng;
use xrc_core::ran::channel::{ChannelConfig, PathLoss, Trajectory};
use xrc_core::scenario::config::{ScenarioConfig, Topology, Traffic, UeConfig};
use xrc_core::scenario::{TraceTexts, World};
use xrc_core::transport::Recovery;
use xrc_core::units::{SimDuration, SimTime};

const CASES: u64 = 200;

fn pick<'a, T>(rng: &mut Rng, xs: &'a [T]) -> &'a T {
    &xs[rng.below(xs.len() as u64) as usize]
}

/// A random scenario, the contents of its downlink and uplink traces (trace
/// topology) and the sizes of its finite transfers.
type Case = (ScenarioConfig, Option<String>, Option<String>, Vec<Option<u64>>);

fn random_scenario(case: u64) -> Case {
    let mut rng = Rng::from_seed(0xC0FFEE ^ case);
    let cc = xrc_core::transport::cc::registry::SCHEMES;
    let topology = *pick(
        &mut rng,
        &[Topology::Wired, Topology::Cellular, Topology::Cellular, Topology::Trace],
    );
    let duration = rng.uniform_range(2.0, 6.0);
    let mut s = common::lte("newreno", 15, duration);
    s.seed = rng.next_u64();
    s.topology = topology;
    s.internet.delay_ms = rng.uniform_range(0.0, 40.0);
    s.internet.buffer_packets = Some(rng.below(200) as u32 + 2);
    s.internet.rate_mbps = if rng.bernoulli(0.5) {
        Some(rng.uniform_range(2.0, 60.0))
    } else {
        None
    };
    if rng.bernoulli(0.2) {
        s.internet.reverse_rate_mbps = Some(rng.uniform_range(1.0, 10.0));
    }
    let mut trace_text = None;
    let mut uplink_text = None;
    let n_ues = 1 + rng.below(3) as usize;
    match topology {
        Topology::Wired => {
            s.cell = None;
            s.ues.clear();
            s.internet.rate_mbps = Some(rng.uniform_range(2.0, 60.0));
        }
        Topology::Cellular => {
            let c = s.cell.as_mut().unwrap();
            c.prbs = Some(*pick(&mut rng, &[6u16, 15, 25, 50, 75, 100]));
            c.harq.bler = *pick(&mut rng, &[0.0, 0.1, 0.3]);
            c.harq.max_retx = rng.below(4) as u32;
            c.rlc.buffer_packets = Some(rng.below(200) as u32 + 1);
            if rng.bernoulli(0.3) {
                c.rlc.buffer_bytes = Some(rng.below(300_000) + 2_000);
            }
            c.rlc.t_reordering_ms = rng.uniform_range(0.0, 80.0);
            c.uplink.sr_period_ms = *pick(&mut rng, &[1.0, 5.0, 10.0, 20.0]);
            c.uplink.grant_bytes = 100 + rng.below(2000) as u32;
            c.scheduler = *pick(
                &mut rng,
                &[
                    xrc_core::ran::scheduler::SchedulerKind::Pf,
                    xrc_core::ran::scheduler::SchedulerKind::Rr,
                ],
            );
            s.ues = (0..n_ues)
                .map(|_| UeConfig {
                    channel: if rng.bernoulli(0.5) {
                        ChannelConfig::FixedCqi {
                            cqi: 1 + rng.below(15) as u8,
                        }
                    } else {
                        ChannelConfig::Distance {
                            pathloss: PathLoss::UrbanMacro,
                            trajectory: Trajectory::RandomJumps {
                                interval_s: 0.5,
                                min_m: 100.0,
                                max_m: 2500.0,
                            },
                            tx_power_dbm: 46.0,
                            antenna_gain_db: 0.0,
                            noise_figure_db: 9.0,
                            interference_dbm: None,
                            shadowing_std_db: 4.0,
                            shadowing_decorrelation_m: None,
                            fading_doppler_hz: if rng.bernoulli(0.5) { Some(20.0) } else { None },
                            blockage: None,
                        }
                    },
                })
                .collect();
        }
        Topology::Trace => {
            s.cell = None;
            s.ues.clear();
            // A bursty trace: 0–4 opportunities per ms over 500 ms.
            let mut text = String::new();
            for ms in 1..=500u32 {
                for _ in 0..rng.below(5) {
                    text.push_str(&format!("{ms}\n"));
                }
            }
            text.push_str("500\n");
            trace_text = Some(text);
            let t = s
                .trace
                .get_or_insert_with(|| common::trace("newreno", "generated", 1.0).trace.unwrap());
            t.buffer_bytes = Some(rng.below(200_000) + 3_000);
            t.uplink_delay_ms = rng.uniform_range(0.0, 20.0);
            if rng.bernoulli(0.5) {
                // ACKs through an uplink trace: 0–2 opportunities per ms
                // over 300 ms, sometimes a small queue.
                let mut up = String::new();
                for ms in 1..=300u32 {
                    for _ in 0..rng.below(3) {
                        up.push_str(&format!("{ms}\n"));
                    }
                }
                up.push_str("300\n");
                uplink_text = Some(up);
                t.uplink = Some("generated-uplink".into());
                t.uplink_delay_ms = 0.0;
                t.uplink_buffer_packets = rng.bernoulli(0.5).then(|| 1 + rng.below(40) as u32);
            }
        }
    }
    let n_flows = 1 + rng.below(4) as usize;
    let mut sizes = Vec::new();
    s.flows = (0..n_flows)
        .map(|k| {
            let mut scheme: &str = cc[rng.below(cc.len() as u64) as usize];
            if scheme == "oracle" && topology == Topology::Wired {
                // The physical-limit oracle needs a trace's opportunities or
                // a cell's shadow.
                scheme = "oracle-rate";
            }
            let mut f = common::flow(&format!("f{k}"), None, scheme);
            f.ue = match topology {
                Topology::Wired => None,
                Topology::Trace => Some(0),
                Topology::Cellular => Some(rng.below(n_ues as u64) as u32),
            };
            f.start_s = rng.uniform_range(0.0, duration / 2.0);
            if rng.bernoulli(0.3) {
                f.stop_s = Some(f.start_s + rng.uniform_range(0.1, duration));
            }
            f.extra_rtt_ms = rng.uniform_range(0.0, 60.0);
            if rng.bernoulli(0.4) {
                let size = 1 + rng.below(3_000_000);
                f.traffic = Traffic::Transfer { size_bytes: size };
                sizes.push(Some(size));
            } else if rng.bernoulli(0.3) {
                // Small writes every millisecond (video chunks), where
                // Nagle's algorithm merges or holds short tails.
                f.traffic = Traffic::Video {
                    period_s: rng.uniform_range(0.5, 3.0),
                    on_s: rng.uniform_range(0.05, 0.5),
                    rate_mbps: rng.uniform_range(0.1, 20.0),
                };
                sizes.push(None);
            } else {
                sizes.push(None);
            }
            f.tcp.nodelay = rng.bernoulli(0.3);
            f.tcp.recovery = *pick(&mut rng, &[Recovery::Sack, Recovery::Newreno]);
            f.tcp.pacing = rng.bernoulli(0.3);
            f.receiver.delayed_ack = rng.bernoulli(0.7);
            f.receiver.sack = f.tcp.recovery == Recovery::Sack;
            f
        })
        .collect();
    // In a cell the physical-limit oracle's UE must be the only one with
    // flows (`ran::shadow`): every flow joins it.
    if let Some(ue) = s.flows.iter().find(|f| f.cc == "oracle").and_then(|f| f.ue) {
        if topology == Topology::Cellular {
            for f in s.flows.iter_mut() {
                f.ue = Some(ue);
            }
        }
    }
    (s, trace_text, uplink_text, sizes)
}

#[test]
fn every_byte_arrives_once_in_order_and_every_queue_conserves_packets() {
    for case in 0..CASES {
        let (cfg, trace, uplink, sizes) = random_scenario(case);
        let end = cfg.duration_s;
        let texts = TraceTexts {
            downlink: trace.as_deref(),
            uplink: uplink.as_deref(),
        };
        let mut w = World::with_traces(cfg.clone(), texts).unwrap_or_else(|e| panic!("case {case}: {e}"));
        let mut t = 0.0;
        while t < end {
            t += 0.25;
            w.run_until(SimTime::ZERO + SimDuration::try_from_secs_f64(t).unwrap());
            w.queues_conserve_packets()
                .unwrap_or_else(|e| panic!("case {case} at {t} s: {e}"));
            w.check_invariants()
                .unwrap_or_else(|e| panic!("case {case} at {t} s: {e}"));
            assert!(w.scoreboards_consistent(), "case {case} at {t} s: scoreboard counters");
            for (k, (acked, delivered, rcv_nxt)) in w.flow_progress().into_iter().enumerate() {
                // The application got exactly the in-order prefix, once.
                assert_eq!(
                    delivered, rcv_nxt,
                    "case {case} flow {k}: delivered {delivered} != rcv_nxt {rcv_nxt}"
                );
                // Nothing is acknowledged that was not received.
                assert!(
                    acked <= rcv_nxt,
                    "case {case} flow {k}: acked {acked} > received {rcv_nxt}"
                );
                if let Some(size) = sizes[k] {
                    assert!(
                        delivered <= size,
                        "case {case} flow {k}: delivered {delivered} > size {size}"
                    );
                }
            }
        }
        let progress = w.flow_progress();
        let r = w.into_result();
        for k in 0..sizes.len() {
            // The throughput bins account for every byte delivered, up to
            // the last instant of the run.
            let binned: u64 = (0..r.recorder.flow_tput.len())
                .filter(|&i| r.recorder.flow_tput.flow[i] == k as u32)
                .map(|i| r.recorder.flow_tput.bytes[i])
                .sum();
            assert_eq!(
                binned, r.recorder.flows.bytes_delivered[k],
                "case {case} flow {k}: bins vs bytes delivered"
            );
        }
        for (u, (d, c)) in r
            .recorder
            .ues
            .delivered_bits
            .iter()
            .zip(&r.recorder.ues.carried_bits)
            .enumerate()
        {
            // Nothing reaches a UE that its radio (trace link) did not carry,
            // so utilization (delivered over the larger of the fair share and
            // what was carried) cannot exceed 1.
            assert!(d <= c, "case {case} UE {u}: delivered {d} bits > carried {c}");
        }
        for (k, size) in sizes.iter().enumerate() {
            let completed = r.recorder.flows.completed[k] == 1;
            if let (Some(size), true) = (size, completed) {
                assert_eq!(
                    progress[k].1, *size,
                    "case {case} flow {k}: a completed transfer delivered every byte"
                );
            }
        }
    }
}

#[test]
fn the_same_seed_gives_the_same_run_and_another_seed_does_not() {
    // A cell with random channel jumps, fading and HARQ failures.
    let mut cfg = common::lte("cubic", 15, 5.0);
    cfg.ues[0].channel = ChannelConfig::Distance {
        pathloss: PathLoss::UrbanMacro,
        trajectory: Trajectory::RandomJumps {
            interval_s: 0.5,
            min_m: 100.0,
            max_m: 1500.0,
        },
        tx_power_dbm: 46.0,
        antenna_gain_db: 0.0,
        noise_figure_db: 9.0,
        interference_dbm: None,
        shadowing_std_db: 4.0,
        shadowing_decorrelation_m: None,
        fading_doppler_hz: Some(10.0),
        blockage: None,
    };
    let run = |seed: u64| {
        let mut c = cfg.clone();
        c.seed = seed;
        let r = World::new(c, None).unwrap().run();
        (
            r.events,
            r.recorder.rtt.rtt_ms.clone(),
            r.recorder.flows.bytes_delivered.clone(),
        )
    };
    assert_eq!(run(1), run(1));
    assert_ne!(run(2), run(1));
}
