//! Runs a resolved scenario (JSON, as `xrc validate --print` writes it)
//! with no Python in the loop, for profilers:
//!
//!     xrc validate scenarios/bench/lte-1ue-20s.toml --print > /tmp/bench.json
//!     cargo run --release --example run_json -- /tmp/bench.json [repeat]
//!     valgrind --tool=callgrind target/release/examples/run_json /tmp/bench.json

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).expect("usage: run_json RESOLVED.json [repeat]");
    let repeat: u32 = args.get(2).map_or(1, |s| s.parse().expect("repeat must be a number"));
    let text = std::fs::read_to_string(path).expect("readable file");
    for _ in 0..repeat {
        let cfg = xrc_core::scenario::from_json(&text).unwrap_or_else(|e| panic!("{e}"));
        let t0 = std::time::Instant::now();
        let r = xrc_core::scenario::World::new(cfg, None).expect("valid scenario").run();
        let dt = t0.elapsed().as_secs_f64();
        println!(
            "{} events in {:.1} ms ({:.2} M events/s)",
            r.events,
            dt * 1e3,
            r.events as f64 / dt / 1e6
        );
    }
}
