//! The physical-limit oracle in a cell (`ran::shadow`): the cell follows
//! the oracle's shadow TTI by TTI, its packets wait at most what the
//! transport blocks' granularity makes them wait, and no scheme beats it on
//! random cells (a random CQI trace, HARQ losses, uplink timing, Internet
//! delay, RLC buffer), in goodput or in power.

mod common;

use common::{flow0_delays, mean_p95, power};

use xrc_core::engine::Rng;
use xrc_core::ran::channel::ChannelConfig;
use xrc_core::ran::radio::{NrConfig, Rat};
use xrc_core::scenario::config::ScenarioConfig;
use xrc_core::scenario::World;
use xrc_core::transport::cc::registry::SCHEMES;

#[derive(Debug)]
struct Outcome {
    bytes: u64,
    /// Time in the RLC buffer of the flow's packets, ms: mean, p95, max.
    sojourn: (f64, f64, f64),
    /// `xrc reproduce`'s queuing delay: RTT samples less their least, ms.
    rtt_excess: (f64, f64),
    /// The shadow against the cell: (TTIs compared, TTIs that differed).
    agreement: Option<(u64, u64)>,
}

fn run(cfg: ScenarioConfig) -> Outcome {
    let mut w = World::new(cfg, None).expect("valid");
    let end = w.end_time();
    w.run_until(end);
    let agreement = w.oracle_shadow_agreement();
    let rec = w.into_result().recorder;
    let (sojourns, excess) = flow0_delays(&rec);
    let (m, p) = mean_p95(&sojourns);
    Outcome {
        bytes: rec.flows.bytes_delivered[0],
        sojourn: (m, p, sojourns.iter().cloned().fold(0.0, f64::max)),
        rtt_excess: mean_p95(&excess),
        agreement,
    }
}

/// A random cell: LTE 10 MHz, or (one time in three) NR μ = 1 at 20 MHz,
/// FDD or TDD DDDSU; one UE on a CQI trace of random stretches (0.1–1 s, CQI
/// 1–15, with short outages), HARQ BLER 0 or 0.1, an SR period of 1–10 ms,
/// Internet delay 5–20 ms, RLC buffer 16–256 packets.
fn random_cell(rng: &mut Rng, duration_s: f64) -> ScenarioConfig {
    let mut cfg = common::lte("oracle", 15, duration_s);
    let mut points = Vec::new();
    let mut t = 0.0;
    while t < duration_s * 1000.0 {
        let cqi = if rng.bernoulli(0.1) { 0 } else { 1 + rng.below(15) as u8 };
        points.push((t, cqi));
        t += 100.0 + rng.below(900) as f64;
    }
    cfg.ues[0].channel = ChannelConfig::CqiTrace { file: None, points };
    let cell = cfg.cell.as_mut().expect("cellular");
    if rng.below(3) == 0 {
        cell.rat = Rat::Nr;
        cell.prbs = None;
        cell.bandwidth_mhz = Some(20.0);
        cell.nr = Some(NrConfig {
            numerology: 1,
            tdd_pattern: rng.bernoulli(0.5).then(|| "DDDSU".to_string()),
            ..NrConfig::default()
        });
    }
    cell.harq.bler = if rng.bernoulli(0.5) { 0.1 } else { 0.0 };
    cell.uplink.sr_period_ms = (1 + rng.below(10)) as f64;
    cell.rlc.buffer_packets = Some(16 + rng.below(241) as u32);
    cfg.internet.delay_ms = (5 + rng.below(16)) as f64;
    cfg
}

fn describe(cfg: &ScenarioConfig) -> String {
    let c = cfg.cell.as_ref().expect("cellular");
    format!(
        "{:?} {:?}, BLER {}, SR every {} ms, RLC {:?} packets, Internet {} ms",
        c.rat,
        c.nr.as_ref().map(|n| n.tdd_pattern.clone()),
        c.harq.bler,
        c.uplink.sr_period_ms,
        c.rlc.buffer_packets,
        cfg.internet.delay_ms
    )
}

#[test]
fn the_cell_follows_the_oracles_shadow_in_every_tti() {
    let mut rng = Rng::from_seed(3);
    for case in 0..8 {
        let cfg = random_cell(&mut rng, 3.0);
        let what = describe(&cfg);
        let o = run(cfg);
        let (compared, differed) = o.agreement.expect("a cellular oracle has a shadow");
        assert!(compared > 2_900, "case {case} ({what}): {compared} slots compared");
        assert_eq!(differed, 0, "case {case} ({what}): {o:?}");
    }
}

#[test]
fn the_oracles_packets_wait_less_than_two_ttis_in_the_rlc_buffer() {
    // A packet reaches the buffer 1 ns before the TTI that starts sending it;
    // one that a block cannot finish waits for the next block (a TTI, or
    // the next downlink slot after a retransmission took the UE's).
    let mut cfg = common::lte("oracle", 15, 3.0);
    cfg.cell.as_mut().expect("cellular").harq.bler = 0.0;
    let o = run(cfg);
    assert!(o.bytes > 0);
    assert!(o.sojourn.2 < 2.0, "{o:?}");
}

#[test]
fn no_scheme_beats_the_oracle_in_random_cells() {
    let cases = if cfg!(xrc_unoptimized) { 2 } else { 20 };
    let duration = if cfg!(xrc_unoptimized) { 2.0 } else { 6.0 };
    let mut rng = Rng::from_seed(11);
    for case in 0..cases {
        let cfg = random_cell(&mut rng, duration);
        let name = format!("case {case} ({})", describe(&cfg));
        let o = run(cfg.clone());
        assert_eq!(o.agreement.map(|a| a.1), Some(0), "{name}: the cell left the shadow");
        for cc in SCHEMES.iter().copied().filter(|&s| s != "oracle") {
            let mut c = cfg.clone();
            c.flows[0].cc = cc.into();
            let s = run(c);
            let what = format!("{name}, {cc}: {s:?} against the oracle's {o:?}");
            if std::env::var("ORACLE_VERBOSE").is_ok() {
                eprintln!("{what}");
            }
            assert!(s.bytes <= o.bytes, "goodput: {what}");
            for (delay, so, ss) in [
                ("mean RTT excess", o.rtt_excess.0, s.rtt_excess.0),
                ("p95 RTT excess", o.rtt_excess.1, s.rtt_excess.1),
            ] {
                assert!(
                    power(s.bytes, ss) <= power(o.bytes, so),
                    "power over the {delay}: {what}"
                );
            }
        }
    }
}

#[test]
fn an_oracle_next_to_another_ues_flow_is_refused_naming_the_rate_oracle() {
    let mut cfg = common::lte("oracle", 15, 1.0);
    cfg.ues.push(cfg.ues[0].clone());
    cfg.flows.push(common::flow("f1", Some(1), "cubic"));
    let err = World::new(cfg, None).err().expect("refused");
    assert!(
        err.contains("flows.0.cc") && err.contains("UE 1") && err.contains("oracle-rate"),
        "{err}"
    );
}
