//! The world under extreme but valid scenarios: bounded memory, bounded
//! steps, and outputs that account for every byte (issue 9, defects 1, 2,
//! 5, 6, 7 and 9).

mod common;

use xrc_core::scenario::config::{ScenarioConfig, Topology};
use xrc_core::scenario::World;
use xrc_core::transport::MAX_WINDOW_BYTES;
use xrc_core::units::{SimDuration, SimTime};

fn secs(s: f64) -> SimTime {
    SimTime::ZERO + SimDuration::try_from_secs_f64(s).unwrap()
}

/// A wired path at 1 Tbit/s with no queue limit: nothing ever drops, so a
/// loss-based window grows without end.
fn no_bottleneck(mss: u32, duration_s: f64) -> ScenarioConfig {
    let mut s = common::dumbbell("newreno", duration_s);
    s.internet.rate_mbps = Some(1e6);
    s.internet.buffer_packets = None;
    s.internet.delay_ms = 15.0;
    s.flows[0].tcp.mss = mss;
    s.output.rtt_trace = false;
    s
}

#[test]
fn a_path_without_a_bottleneck_holds_at_most_tcps_largest_window_in_flight() {
    let mss = 65_000;
    let mut w = World::new(no_bottleneck(mss, 0.6), None).unwrap();
    // The sender may start a segment at the window's last byte.
    let cap = MAX_WINDOW_BYTES.div_ceil(mss as u64) as u32;
    let mut peak = 0;
    for k in 1..=60 {
        w.run_until(secs(k as f64 * 0.01));
        peak = peak.max(w.in_flight_segments()[0]);
        assert!(
            peak <= cap,
            "{peak} segments in flight, more than TCP's largest window ({cap})"
        );
    }
    assert!(peak > cap / 2, "the window reached the cap: {peak} of {cap}");
    assert!(w.failure().is_none());
}

#[test]
fn more_segments_in_flight_than_the_world_can_hold_stop_the_run_with_a_message() {
    let mut w = World::new(no_bottleneck(1448, 2.0), None).unwrap();
    w.limit_segments_in_flight(5_000);
    assert!(w.run_until(secs(2.0)), "the run ends");
    let e = w.failure().expect("the run failed");
    assert!(e.contains("in flight") && e.contains("5000"), "{e}");
    assert!(
        w.now() < secs(1.0),
        "it stopped as soon as the limit was crossed, at {:?}",
        w.now()
    );
}

#[test]
fn more_recorded_rows_than_the_world_can_hold_stop_the_run_with_a_message() {
    let mut w = World::new(common::dumbbell("newreno", 20.0), None).unwrap();
    w.limit_recorded_rows(5_000);
    w.run_until(secs(20.0));
    let e = w.failure().expect("the run failed").to_string();
    assert!(e.contains("rows") && e.contains("output.rtt_trace"), "{e}");
    assert_eq!(w.into_result().failure, Some(e), "the result says so too");
}

#[test]
fn a_run_advances_in_bounded_steps_so_its_caller_can_interrupt_it() {
    let mut w = World::new(common::lte("cubic", 15, 2.0), None).unwrap();
    let mut steps = 0;
    let mut last = 0;
    while !w.run_some(secs(2.0), 100) {
        let n = w.events();
        assert!(n - last <= 100, "{} events in one step", n - last);
        last = n;
        steps += 1;
    }
    assert!(w.done() && steps > 10, "{steps} steps");
    let whole = World::new(common::lte("cubic", 15, 2.0), None).unwrap().run();
    assert_eq!(whole.events, w.events(), "stepping changes nothing");
}

#[test]
fn throughput_bins_account_for_every_byte_delivered_including_at_the_last_instant() {
    // Durations that end exactly on a bin boundary and ones that do not.
    for (k, duration) in [2.0, 2.05, 3.0, 1.234].into_iter().enumerate() {
        for cfg in [
            common::dumbbell("cubic", duration),
            common::lte("newreno", 12, duration),
        ] {
            let name = format!("{:?} {duration} s", cfg.topology);
            let mut cfg = cfg;
            cfg.seed = k as u64;
            let r = World::new(cfg, None).unwrap().run().recorder;
            let binned: u64 = r.flow_tput.bytes.iter().sum();
            assert_eq!(binned, r.flows.bytes_delivered[0], "{name}");
        }
    }
}

#[test]
fn a_ue_is_never_delivered_more_bits_than_its_decoded_transport_blocks_carried() {
    // Two UEs at CQI 15 and 3 under PF: the CQI-15 UE gets more than an
    // equal share, which made "utilization" exceed 1.
    let mut s = common::lte("cubic", 15, 8.0);
    s.ues.push(s.ues[0].clone());
    s.ues[1].channel = xrc_core::ran::channel::ChannelConfig::FixedCqi { cqi: 3 };
    let mut f = s.flows[0].clone();
    f.id = "f1".into();
    f.ue = Some(1);
    s.flows.push(f);
    let r = World::new(s, None).unwrap().run().recorder;
    for u in 0..2 {
        let d = r.ues.delivered_bits[u];
        let c = r.ues.carried_bits[u];
        assert!(d <= c, "UE {u}: delivered {d} > carried {c}");
        assert!(d > 0.9 * c, "UE {u}: delivered {d}, carried {c}");
    }
}

#[test]
fn every_packet_leaving_the_bottleneck_queue_has_its_queuing_delay_recorded() {
    // A trace of one opportunity per ms (12 Mbit/s) and a cellular UE.
    let text: String = (1..=1000).map(|i| format!("{i}\n")).collect();
    let mut t = common::trace("cubic", "generated", 4.0);
    t.topology = Topology::Trace;
    let mut c = common::lte("cubic", 10, 4.0);
    c.cell.as_mut().unwrap().harq.bler = 0.0;
    for (cfg, text) in [(t, Some(text.as_str())), (c, None)] {
        let top = cfg.topology;
        let r = World::new(cfg, text).unwrap().run().recorder;
        let q = &r.queue_delay;
        assert!(!q.is_empty(), "{top:?}");
        // A packet delivered was dequeued first, and no later than now.
        assert!(q.len() as u64 >= r.flows.bytes_delivered[0] / 1500, "{top:?}");
        assert!(q.delay_ms.iter().all(|d| d.is_finite() && *d >= 0.0));
        // The longest sojourn is the HoL delay of some instant (sampled
        // every ms, so within one ms of it).
        let max_q = q.delay_ms.iter().cloned().fold(0.0, f64::max);
        let max_hol = r.rlc.hol_ms.iter().cloned().fold(0.0, f64::max);
        assert!((max_q - max_hol).abs() <= 1.0 + 1e-9, "{top:?}: {max_q} vs {max_hol}");
    }
}

#[test]
fn bbr_and_bbr3_draw_from_the_master_seed() {
    // The dumbbell has no randomness but BBR's: PROBE_BW's start phase
    // (v1) and the probe wait (v3).
    for cc in ["bbr", "bbr3"] {
        let run = |seed: u64| {
            let mut s = common::dumbbell(cc, 12.0);
            // A 100 ms RTT: BBRv3's 63-round Reno bound (6.3 s) never beats
            // its random 2-3 s probe wait.
            s.internet.delay_ms = 50.0;
            s.seed = seed;
            let r = World::new(s, None).unwrap().run().recorder;
            (r.cwnd.cwnd.clone(), r.flows.bytes_delivered.clone())
        };
        assert_eq!(run(1), run(1), "{cc}: one seed, one run");
        assert!(
            (2..6).any(|s| run(s) != run(1)),
            "{cc}: the master seed changes nothing"
        );
    }
}
