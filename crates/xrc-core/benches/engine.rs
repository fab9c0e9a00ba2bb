//! `cargo bench --bench engine`: the event queue alone, printed as numbers.
fn main() {
    let n = 20_000_000;
    for pending in [16u64, 1024, 65_536] {
        let best = (0..3)
            .map(|_| xrc_core::engine::bench::events_per_second(n, pending))
            .fold(0.0, f64::max);
        println!(
            "engine: {:.1} M events/s with {} pending (push+pop, best of 3 x {} M)",
            best / 1e6,
            pending,
            n / 1_000_000
        );
    }
}
