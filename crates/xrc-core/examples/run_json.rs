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

use xrc_core::scenario::bench::{run_core_alone, DRAIN_ROWS};

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
        // Without --drain every row stays until the end.
        let drain_rows = if drain { DRAIN_ROWS } else { usize::MAX };
        let r = run_core_alone(cfg, drain_rows).unwrap_or_else(|e| panic!("{e}"));
        println!(
            "{} events in {:.1} ms ({:.2} M events/s), {} rows",
            r.events,
            r.seconds * 1e3,
            r.events as f64 / r.seconds / 1e6,
            r.rows
        );
    }
}
