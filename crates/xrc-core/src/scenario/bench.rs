//! The simulator alone on a scenario, for benchmarks: the events run, and
//! the rows they record are dropped every `drain_rows` rows
//! ([`DRAIN_ROWS`] in the benchmarks), where a
//! streamed run (`xrc run`) hands them over to be written. No Python and no
//! file is in the loop, so this is the cost of the simulation itself, with
//! the memory and page faults of a streamed run.

use std::time::Instant;

use super::{ScenarioConfig, World};
use crate::units::SimTime;

/// Rows held before they are dropped (the front end's `DRAIN_ROWS`).
pub const DRAIN_ROWS: usize = 1 << 18;

/// What [`run_core_alone`] measured.
#[derive(Copy, Clone, Debug)]
pub struct CoreRun {
    pub events: u64,
    /// Rows recorded (and dropped).
    pub rows: usize,
    /// Wall time from building the world to the end of the run.
    pub seconds: f64,
}

/// Builds the world of `cfg` and runs it to its end, dropping the rows
/// whenever `drain_rows` or more are held.
pub fn run_core_alone(cfg: ScenarioConfig, drain_rows: usize) -> Result<CoreRun, String> {
    let t0 = Instant::now();
    let mut w = World::new(cfg, None)?;
    let mut rows = 0usize;
    while !w.run_some(SimTime::MAX, 1 << 12) {
        if let Some(e) = w.failure() {
            return Err(e.to_string());
        }
        if w.recorder().rows() >= drain_rows {
            rows += w.recorder().rows();
            w.recorder_mut().clear_rows();
        }
    }
    let r = w.into_result();
    let seconds = t0.elapsed().as_secs_f64();
    if let Some(e) = r.failure {
        return Err(e);
    }
    Ok(CoreRun {
        events: r.events,
        rows: rows + r.recorder.rows(),
        seconds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_core_alone_run_counts_every_event_and_row_of_the_same_run_held_whole() {
        let text = r#"{"name": "t", "seed": 3, "duration_s": 2.0, "topology": "cellular",
            "ues": [{"channel": {"kind": "fixed_cqi", "cqi": 12}}],
            "flows": [{"id": "a", "cc": "cubic", "ue": 0, "traffic": {"kind": "bulk"}}]}"#;
        let cfg = crate::scenario::from_json(text).expect("valid");
        // Rows dropped every 500: many times over the run.
        let alone = run_core_alone(cfg.clone(), 500).expect("runs");
        let mut w = World::new(cfg, None).expect("valid");
        while !w.run_some(SimTime::MAX, 1 << 12) {}
        let whole = w.into_result();
        assert_eq!(alone.events, whole.events);
        assert_eq!(alone.rows, whole.recorder.rows());
        assert!(alone.rows > 5_000 && alone.seconds > 0.0, "{alone:?}");
    }
}
