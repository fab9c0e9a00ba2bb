//! The physical-limit oracle (`cc::oracle`) is a bound: on random Mahimahi
//! traces, buffers and base RTTs, and on the bundled trace, no scheme that
//! runs on the trace topology gets more goodput than the oracle, nor more
//! power (goodput over mean or p95 delay, with `xrc reproduce`'s floor of
//! 0.1 ms on the delay), whether the delay is the bottleneck's per-packet
//! queuing delay (what the bound is about) or `xrc reproduce`'s (each RTT
//! sample less the flow's least).

mod common;

use common::{flow0_delays, mean_p95, power};

use xrc_core::engine::Rng;
use xrc_core::scenario::World;
use xrc_core::transport::cc::registry::SCHEMES;

/// One run's goodput and delays.
#[derive(Debug)]
struct Outcome {
    bytes: u64,
    /// The bottleneck's queuing delay of the flow's packets, ms.
    sojourn: (f64, f64),
    /// `xrc reproduce`'s queuing delay: RTT samples less their least, ms.
    rtt_excess: (f64, f64),
}

fn run(cfg: xrc_core::scenario::ScenarioConfig, trace: &str) -> Outcome {
    let rec = World::new(cfg, Some(trace)).expect("valid").run().recorder;
    let (sojourns, excess) = flow0_delays(&rec);
    Outcome {
        bytes: rec.flows.bytes_delivered[0],
        sojourn: mean_p95(&sojourns),
        rtt_excess: mean_p95(&excess),
    }
}

/// A random trace: a period of 0.2–1.2 s made of stretches of outage,
/// sparse, steady and bursty opportunities.
fn random_trace(rng: &mut Rng) -> String {
    let period = 200 + rng.below(1000);
    let mut lines = Vec::new();
    let mut m = 1;
    while m <= period {
        let len = 1 + rng.below(150);
        let kind = rng.below(4);
        for t in m..(m + len).min(period + 1) {
            let n = match kind {
                0 => 0,
                1 => rng.bernoulli(0.2) as u64,
                2 => 1 + rng.below(2),
                _ => rng.below(8),
            };
            for _ in 0..n {
                lines.push(t.to_string());
            }
        }
        m += len;
    }
    if lines.last().map(|l| l.as_str()) != Some(period.to_string().as_str()) {
        lines.push(period.to_string());
    }
    lines.join("\n") + "\n"
}

/// Every scheme that runs on the trace topology, the oracle last.
fn schemes() -> Vec<&'static str> {
    SCHEMES.iter().copied().filter(|&s| s != "oracle").collect()
}

/// Checks every scheme against the oracle on one configuration.
fn check(case: &str, cfg: &xrc_core::scenario::ScenarioConfig, trace: &str) {
    let mut oc = cfg.clone();
    oc.flows[0].cc = "oracle".into();
    let o = run(oc, trace);
    assert!(
        o.bytes > 0 || trace.lines().count() < 3,
        "{case}: the oracle delivered nothing"
    );
    assert!(
        o.sojourn.1 <= 1e-5,
        "{case}: the oracle's packets queued ({:?} ms)",
        o.sojourn
    );
    for cc in schemes() {
        let mut c = cfg.clone();
        c.flows[0].cc = cc.into();
        let s = run(c, trace);
        let what = format!("{case}, {cc}: {s:?} against the oracle's {o:?}");
        if std::env::var("ORACLE_VERBOSE").is_ok() {
            eprintln!("{what}");
        }
        assert!(s.bytes <= o.bytes, "goodput: {what}");
        for (name, so, ss) in [
            ("mean queuing delay", o.sojourn.0, s.sojourn.0),
            ("p95 queuing delay", o.sojourn.1, s.sojourn.1),
            ("mean RTT excess", o.rtt_excess.0, s.rtt_excess.0),
            ("p95 RTT excess", o.rtt_excess.1, s.rtt_excess.1),
        ] {
            assert!(
                power(s.bytes, ss) <= power(o.bytes, so) * (1.0 + 1e-12),
                "power over the {name}: {what}"
            );
        }
    }
}

#[test]
fn no_scheme_beats_the_oracle_on_random_traces_buffers_and_base_rtts() {
    let cases = if cfg!(xrc_unoptimized) { 2 } else { 24 };
    let mut rng = Rng::from_seed(10);
    for case in 0..cases {
        let trace = random_trace(&mut rng);
        let mut cfg = common::trace("oracle", "random", 2.0);
        cfg.internet.rate_mbps = None;
        cfg.internet.delay_ms = rng.below(41) as f64 * 0.5;
        cfg.flows[0].extra_rtt_ms = rng.below(21) as f64;
        let t = cfg.trace.as_mut().expect("trace topology");
        t.uplink_delay_ms = rng.below(11) as f64;
        if rng.bernoulli(0.5) {
            t.buffer_packets = Some(1 + rng.below(200) as u32);
            t.buffer_bytes = None;
        } else {
            t.buffer_packets = None;
            t.buffer_bytes = Some(1504 + rng.below(300_000));
        }
        let name = format!(
            "case {case} (delay {} ms, extra RTT {} ms, uplink {} ms, buffer {:?} packets / {:?} bytes)",
            cfg.internet.delay_ms, cfg.flows[0].extra_rtt_ms, t.uplink_delay_ms, t.buffer_packets, t.buffer_bytes
        );
        check(&name, &cfg, &trace);
    }
}

#[test]
fn no_scheme_beats_the_oracle_on_the_bundled_trace() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../python/xrc/scenarios/traces/synthetic-lte.down"
    );
    let trace = std::fs::read_to_string(path).expect("the bundled trace");
    // The bundled trace scenario (traces/synthetic-xrc.toml): 5 ms each
    // way, 150 KB buffer; shortened.
    let mut cfg = common::trace(
        "oracle",
        "synthetic-lte.down",
        if cfg!(xrc_unoptimized) { 2.0 } else { 5.0 },
    );
    cfg.internet.rate_mbps = None;
    check("the bundled trace", &cfg, &trace);
}
