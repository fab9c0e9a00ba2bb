//! End-to-end runs of small scenarios through the whole stack.

mod common;

use xrc_core::metrics::Recorder;
use xrc_core::scenario::World;

fn run(cfg: xrc_core::scenario::ScenarioConfig) -> (Recorder, u64) {
    let w = World::new(cfg, None).expect("valid scenario");
    let r = w.run();
    (r.recorder, r.events)
}

fn goodput_mbps(rec: &Recorder, flow: u32, from_s: f64) -> f64 {
    let mut bytes = 0u64;
    let mut first = f64::MAX;
    let mut last: f64 = 0.0;
    for i in 0..rec.flow_tput.len() {
        if rec.flow_tput.flow[i] == flow && rec.flow_tput.t[i] >= from_s {
            bytes += rec.flow_tput.bytes[i];
            first = first.min(rec.flow_tput.t[i]);
            last = last.max(rec.flow_tput.t[i] + 0.1);
        }
    }
    bytes as f64 * 8.0 / (last - first) / 1e6
}

#[test]
fn newreno_fills_a_20_mbit_dumbbell() {
    let (rec, _) = run(common::dumbbell("newreno", 20.0));
    let g = goodput_mbps(&rec, 0, 2.0);
    // 1448/1500 of 20 Mbit/s is 19.3 Mbit/s of goodput at most.
    assert!(g > 18.0 && g < 19.31, "goodput {g}");
    assert!(!rec.retransmits.is_empty(), "a 100-packet buffer overflows");
}

#[test]
fn a_saturated_ue_at_cqi_15_stays_below_the_radio_limit_and_fills_the_rlc_buffer() {
    let (rec, _) = run(common::lte("newreno", 15, 10.0));
    let g = goodput_mbps(&rec, 0, 3.0);
    // 36.696 Mbit/s of TBS, 10% BLER: 33.0 Mbit/s of new data, of which
    // 1448/1507 is TCP payload: 31.7 Mbit/s at most. Reno's sawtooth and
    // the RLC reordering stalls after HARQ failures keep it well below.
    assert!(g > 20.0 && g < 31.8, "goodput {g}");
    let full = rec.rlc.sdus.iter().copied().max().unwrap_or(0);
    assert_eq!(full, 128, "loss-based TCP fills the 128-packet RLC buffer");
    assert!(rec.drops.location.contains(&1), "and overflows it");
}

#[test]
fn xrc_keeps_the_rlc_buffer_nearly_empty_at_a_fixed_cqi() {
    let (rec, _) = run(common::lte("xrc", 15, 10.0));
    let g = goodput_mbps(&rec, 0, 3.0);
    assert!(g > 20.0 && g < 31.8, "goodput {g}");
    let mut hol: Vec<f64> = rec.rlc.hol_ms.iter().skip(3000).cloned().collect();
    hol.sort_by(f64::total_cmp);
    let p90 = hol[hol.len() * 9 / 10];
    assert!(p90 < 15.0, "p90 HoL {p90} ms");
    assert!(!rec.feedback.is_empty(), "the agent wrote feedback");
}
