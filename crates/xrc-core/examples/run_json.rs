//! Runs a resolved scenario (JSON, as `xrc validate --print` writes it)
//! with no Python in the loop, for profilers:
//!
//!     xrc validate scenarios/bench/lte-1ue-20s.toml --print > /tmp/bench.json
//!     cargo run --release --example run_json -- /tmp/bench.json [repeat] [--drain]
//!     valgrind --tool=callgrind target/release/examples/run_json /tmp/bench.json
//!
//! With `--drain` the recorded rows are dropped every 2^18 rows, as `xrc
//! run` takes them to write them out, so the run's memory and page faults
//! are those of a streamed run (without, every row stays until the end).

use xrc_core::units::SimTime;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).expect("usage: run_json RESOLVED.json [repeat] [--drain]");
    let drain = args.iter().any(|a| a == "--drain");
    let repeat: u32 = args
        .get(2)
        .filter(|a| *a != "--drain")
        .map_or(1, |s| s.parse().expect("repeat must be a number"));
    let text = std::fs::read_to_string(path).expect("readable file");
    for _ in 0..repeat {
        let cfg = xrc_core::scenario::from_json(&text).unwrap_or_else(|e| panic!("{e}"));
        let t0 = std::time::Instant::now();
        let mut w = xrc_core::scenario::World::new(cfg, None).expect("valid scenario");
        let mut rows = 0usize;
        while !w.run_some(SimTime::MAX, 1 << 12) {
            if drain && w.recorder().rows() >= 1 << 18 {
                rows += w.recorder().rows();
                w.recorder_mut().clear_rows();
            }
        }
        let r = w.into_result();
        let dt = t0.elapsed().as_secs_f64();
        rows += r.recorder.rows();
        println!(
            "{} events in {:.1} ms ({:.2} M events/s), {rows} rows",
            r.events,
            dt * 1e3,
            r.events as f64 / dt / 1e6
        );
    }
}
