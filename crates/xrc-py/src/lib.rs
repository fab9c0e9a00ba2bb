//! Python bindings: the core runs a resolved scenario and hands its tables
//! back as raw little-endian column buffers, which NumPy reads where they
//! are ([`columns`]). The GIL is released while events run.

mod columns;
mod control;
mod emu;
mod kernel;

use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use xrc_core::ran::trace_link::Trace;
use xrc_core::scenario::{self, TraceTexts, World};
use xrc_core::transport::cc::registry;
use xrc_core::units::{SimDuration, SimTime};

/// The core's version (the Cargo package version).
#[pyfunction]
fn version() -> &'static str {
    env!("CARGO_PKG_VERSION")
}

/// Names of the congestion-control schemes the core knows.
#[pyfunction]
fn schemes() -> Vec<&'static str> {
    registry::SCHEMES.to_vec()
}

/// Resolves a scheme's parameters (JSON object text or "null"): returns the
/// full parameter set as JSON, or raises ValueError naming the parameter.
#[pyfunction]
fn resolve_cc(name: &str, params_json: &str) -> PyResult<String> {
    let v: serde_json::Value = serde_json::from_str(params_json).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let r = registry::resolve(name, &v).map_err(PyValueError::new_err)?;
    Ok(r.to_string())
}

/// The network signals a scheme with these parameters consumes (the
/// core's `Signals`), by name: the ones that are on.
#[pyfunction]
fn scheme_signals(name: &str, params_json: &str) -> PyResult<Vec<&'static str>> {
    let v: serde_json::Value = serde_json::from_str(params_json).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let s = registry::build(name, &v).map_err(PyValueError::new_err)?.signals();
    Ok([
        ("abc", s.abc),
        ("pbe", s.pbe),
        ("net_assist", s.net_assist),
        ("oracle", s.oracle),
        ("xrc_air", s.xrc_air),
        ("oracle_schedule", s.oracle_schedule),
    ]
    .into_iter()
    .filter_map(|(n, on)| on.then_some(n))
    .collect())
}

/// Parses a Mahimahi trace; returns (opportunities, period_ms, mean Mbit/s)
/// or raises ValueError naming the line.
#[pyfunction]
fn check_trace(text: &str) -> PyResult<(usize, u64, f64)> {
    let t = Trace::parse(text).map_err(PyValueError::new_err)?;
    Ok((t.ms.len(), t.period_ms, t.mean_rate_bps() * 1e-6))
}

/// Resolves a scenario (JSON): fills in defaults, applies shorthands and
/// validates. Returns the resolved scenario as JSON, or raises ValueError
/// naming the field and the value.
#[pyfunction]
fn resolve(scenario_json: &str) -> PyResult<String> {
    let cfg = scenario::from_json(scenario_json).map_err(PyValueError::new_err)?;
    serde_json::to_string(&cfg).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Wall time of one step of `run_until` between two checks for signals.
/// Events cost from a fraction of a microsecond to milliseconds (an ACK
/// against a scoreboard of a million segments), so the number of events per
/// step adapts to stay near this.
const STEP_WALL: std::time::Duration = std::time::Duration::from_millis(20);
const MAX_STEP_EVENTS: u64 = 1 << 20;

/// A running simulation.
#[pyclass]
struct Simulation {
    /// Behind a mutex only so that the class may be dropped on any thread:
    /// the garbage collector frees a Simulation held in a reference cycle
    /// (an exception's frames) on whichever thread it runs, the Parquet
    /// writer's among them, where an `unsendable` class leaked it with an
    /// error. Methods taking `&mut self` reach it without locking.
    world: std::sync::Mutex<Option<World>>,
    /// Events per step, adapted to [`STEP_WALL`].
    step_events: u64,
}

impl Simulation {
    fn world(&self) -> std::sync::MutexGuard<'_, Option<World>> {
        self.world.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn world_mut(m: &mut std::sync::Mutex<Option<World>>) -> &mut Option<World> {
    m.get_mut().unwrap_or_else(|e| e.into_inner())
}

#[pymethods]
impl Simulation {
    /// Builds the world from a resolved scenario (JSON). `trace_text` and
    /// `uplink_trace_text` are the downlink and uplink traces' contents for
    /// the trace topology (by default read from the files the scenario names).
    /// A scenario with `output.pcap = true` needs `pcap_dir`, the directory
    /// its capture files are written into as the run goes (created if need
    /// be); a file that cannot be written raises OSError naming it, here or
    /// from `run_until`.
    #[new]
    #[pyo3(signature = (resolved_json, trace_text=None, uplink_trace_text=None, *, pcap_dir=None))]
    fn new(
        resolved_json: &str,
        trace_text: Option<&str>,
        uplink_trace_text: Option<&str>,
        pcap_dir: Option<std::path::PathBuf>,
    ) -> PyResult<Self> {
        let cfg = scenario::from_json(resolved_json).map_err(PyValueError::new_err)?;
        let pcap = cfg.output.pcap;
        let texts = TraceTexts {
            downlink: trace_text,
            uplink: uplink_trace_text,
        };
        let mut world = World::with_traces(cfg, texts).map_err(PyValueError::new_err)?;
        match (pcap, pcap_dir) {
            (true, Some(dir)) => world.write_pcap(&dir).map_err(|e| pcap_os_error(&e))?,
            (true, None) => {
                return Err(PyValueError::new_err(
                    "output.pcap = true writes capture files into a run directory: run it with an output \
                     directory (xrc run --out DIR, xrc.run(..., out=DIR)) or set output.pcap = false",
                ))
            }
            (false, _) => {}
        }
        Ok(Simulation {
            world: std::sync::Mutex::new(Some(world)),
            step_events: 1000,
        })
    }

    /// Runs until simulated time `t_s` (seconds). Returns whether the run is
    /// complete. Events run without the GIL in steps of about `STEP_WALL`;
    /// between steps pending signals are handled, so Ctrl-C raises
    /// KeyboardInterrupt within a step. A run the core had to stop (more in
    /// flight or recorded than it can hold) raises ValueError saying what to
    /// change. With `max_rows`, it also returns (not complete, before
    /// `t_s`) after the step in which the rows held reached `max_rows`, for
    /// the caller to `drain` them. (The wall clock only sizes the steps;
    /// results do not depend on it.)
    #[pyo3(signature = (t_s, max_rows=None))]
    fn run_until(&mut self, py: Python<'_>, t_s: f64, max_rows: Option<usize>) -> PyResult<bool> {
        let w = world_mut(&mut self.world)
            .as_mut()
            .ok_or_else(|| PyRuntimeError::new_err("simulation already finished"))?;
        let until = SimTime::ZERO + SimDuration::try_from_secs_f64(t_s.max(0.0)).unwrap_or(SimDuration::MAX);
        let mut n = self.step_events;
        let result = loop {
            let t0 = std::time::Instant::now();
            let reached = py.detach(|| w.run_some(until, n));
            let took = t0.elapsed();
            if took > STEP_WALL && n > 1 {
                n /= 2;
            } else if took < STEP_WALL / 4 && n < MAX_STEP_EVENTS {
                n *= 2;
            }
            if let Err(e) = py.check_signals() {
                break Err(e);
            }
            if let Some(e) = w.pcap_error() {
                break Err(pcap_os_error(e));
            }
            if let Some(e) = w.failure() {
                break Err(PyValueError::new_err(e.to_string()));
            }
            if reached {
                break Ok(w.done());
            }
            if max_rows.is_some_and(|m| w.recorder().rows() >= m) {
                break Ok(false);
            }
        };
        self.step_events = n;
        result
    }

    #[getter]
    fn now_s(&self) -> f64 {
        self.world().as_ref().map_or(f64::NAN, |w| w.now().as_secs_f64())
    }
    #[getter]
    fn end_s(&self) -> f64 {
        self.world().as_ref().map_or(f64::NAN, |w| w.end_time().as_secs_f64())
    }
    #[getter]
    fn events(&self) -> u64 {
        self.world().as_ref().map_or(0, |w| w.events())
    }

    /// Checks the world's invariants (`World::check_invariants`: packet and
    /// byte conservation, senders' scoreboards and windows, in-order
    /// delivery); raises RuntimeError naming the one violated.
    fn check_invariants(&self) -> PyResult<()> {
        let g = self.world();
        let w = g
            .as_ref()
            .ok_or_else(|| PyRuntimeError::new_err("simulation already finished"))?;
        w.check_invariants().map_err(PyRuntimeError::new_err)
    }

    /// Per flow: (bytes acknowledged at the sender, bytes delivered to the
    /// receiving application, receiver's next expected byte).
    fn flow_progress(&self) -> PyResult<Vec<(u64, u64, u64)>> {
        let g = self.world();
        let w = g
            .as_ref()
            .ok_or_else(|| PyRuntimeError::new_err("simulation already finished"))?;
        Ok(w.flow_progress())
    }

    /// Rows recorded and not yet drained, over every table.
    #[getter]
    fn rows_held(&self) -> usize {
        self.world().as_ref().map_or(0, |w| w.recorder().rows())
    }

    /// Takes the rows recorded since the last drain: returns
    /// `{"tables": {name: {column: (dtype, memoryview)}}, "mode_names"}`
    /// (each memoryview read-only over the column's own memory, handed
    /// over, not copied) and forgets them, so a run holds only what it recorded since. The
    /// tables' concatenation over every drain and `finish` is what `finish`
    /// alone would have returned; `mode_names` covers every code so far.
    fn drain<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let w = world_mut(&mut self.world)
            .as_mut()
            .ok_or_else(|| PyRuntimeError::new_err("simulation already finished"))?;
        drain_dict(py, w)
    }

    /// Ends the run (if not ended) and returns
    /// `{"events", "sim_time_s", "tables": {name: {column: (dtype, memoryview)}}}`
    /// with the rows not yet drained.
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let w = world_mut(&mut self.world)
            .take()
            .ok_or_else(|| PyRuntimeError::new_err("simulation already finished"))?;
        finish_dict(py, w)
    }
}

/// Takes `w`'s rows recorded since the last take, as `Simulation.drain`
/// returns them.
fn drain_dict<'py>(py: Python<'py>, w: &mut World) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    out.set_item("tables", columns::take_tables(py, w.recorder_mut())?)?;
    out.set_item("mode_names", w.recorder().mode_names.clone())?;
    Ok(out)
}

/// Ends `w`'s run and hands its result over as `Simulation.finish` returns it.
fn finish_dict(py: Python<'_>, w: World) -> PyResult<Bound<'_, PyDict>> {
    let mut r = w.into_result();
    let out = PyDict::new(py);
    out.set_item("events", r.events)?;
    out.set_item("sim_time_s", r.sim_time.as_secs_f64())?;
    out.set_item("tables", columns::take_tables(py, &mut r.recorder)?)?;
    out.set_item("mode_names", r.recorder.mode_names.clone())?;
    Ok(out)
}

/// A capture file's failed write as Python's OSError (errno, message,
/// file name), as an `open` or `write` that failed would raise it.
fn pcap_os_error(e: &xrc_core::metrics::pcap::PcapError) -> PyErr {
    let path = e.path.to_string_lossy().into_owned();
    match e.error.raw_os_error() {
        Some(n) => {
            let msg = e.error.to_string();
            let strerror = msg.split(" (os error").next().unwrap_or(&msg).to_string();
            PyOSError::new_err((n, strerror, path))
        }
        None => PyOSError::new_err(e.to_string()),
    }
}

/// The JSON Schemas the core derives from its configuration types:
/// `{"scenario": schema, "cc": {scheme: schema of its parameters}}` as JSON.
#[pyfunction]
fn json_schemas() -> PyResult<String> {
    let cc: serde_json::Map<String, serde_json::Value> = scenario::schema::cc_params()
        .into_iter()
        .map(|(n, s)| (n.to_string(), s.to_value()))
        .collect();
    let out = serde_json::json!({"scenario": scenario::schema::scenario().to_value(), "cc": cc});
    serde_json::to_string(&out).map_err(|e| PyValueError::new_err(e.to_string()))
}

/// Every table a run records: `[{"name", "doc", "columns": [{"name",
/// "dtype", "unit", "doc"}]}]`, from the core's own definitions.
#[pyfunction]
fn tables_info<'py>(py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
    let mut out = Vec::new();
    for t in xrc_core::metrics::tables_info() {
        let d = PyDict::new(py);
        d.set_item("name", t.name)?;
        d.set_item("doc", t.doc)?;
        let mut cols = Vec::new();
        for c in t.columns {
            let cd = PyDict::new(py);
            cd.set_item("name", c.name)?;
            cd.set_item("dtype", c.dtype)?;
            cd.set_item("unit", c.unit)?;
            cd.set_item("doc", c.doc)?;
            cols.push(cd);
        }
        d.set_item("columns", cols)?;
        out.push(d);
    }
    Ok(out)
}

/// What the coded columns' numbers mean: `{"table.column": [(name, doc), ...]}`,
/// indexed by code.
#[pyfunction]
fn codes<'py>(py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
    let out = PyDict::new(py);
    for (table, column, codes) in xrc_core::metrics::codes::CODED_COLUMNS {
        out.set_item(format!("{table}.{column}"), codes.to_vec())?;
    }
    Ok(out)
}

/// Runs a resolved scenario (JSON) in the core alone, its rows dropped as
/// a streamed run hands them over (`scenario::bench`); returns `(events,
/// seconds)`. For `xrc bench --cell`.
#[pyfunction]
fn core_alone(py: Python<'_>, resolved_json: &str) -> PyResult<(u64, f64)> {
    let cfg = scenario::from_json(resolved_json).map_err(PyValueError::new_err)?;
    let r = py
        .detach(|| scenario::bench::run_core_alone(cfg, scenario::bench::DRAIN_ROWS))
        .map_err(PyValueError::new_err)?;
    Ok((r.events, r.seconds))
}

/// Pops `n` events through the engine's queue alone (with a standing
/// population of `pending` events); returns events per second of wall time.
#[pyfunction]
fn engine_microbench(py: Python<'_>, n: u64, pending: u64) -> f64 {
    py.detach(|| xrc_core::engine::bench::events_per_second(n, pending))
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(version, m)?)?;
    m.add_function(wrap_pyfunction!(core_alone, m)?)?;
    m.add_function(wrap_pyfunction!(schemes, m)?)?;
    m.add_function(wrap_pyfunction!(resolve_cc, m)?)?;
    m.add_function(wrap_pyfunction!(scheme_signals, m)?)?;
    m.add_function(wrap_pyfunction!(check_trace, m)?)?;
    m.add_function(wrap_pyfunction!(resolve, m)?)?;
    m.add_function(wrap_pyfunction!(engine_microbench, m)?)?;
    m.add_function(wrap_pyfunction!(tables_info, m)?)?;
    m.add_function(wrap_pyfunction!(codes, m)?)?;
    m.add_function(wrap_pyfunction!(json_schemas, m)?)?;
    m.add_class::<Simulation>()?;
    m.add_class::<control::Controlled>()?;
    m.add_function(wrap_pyfunction!(control::step_many, m)?)?;
    m.add_class::<emu::Emulator>()?;
    m.add_class::<kernel::KernelCc>()?;
    m.add_class::<kernel::KernelShim>()?;
    m.add_class::<kernel::KernelPlaceholder>()?;
    m.add_class::<kernel::KernelRunStats>()?;
    m.add_function(wrap_pyfunction!(kernel::kernel_program_stats, m)?)?;
    m.add_function(wrap_pyfunction!(kernel::kernel_object, m)?)?;
    m.add_function(wrap_pyfunction!(kernel::kernel_available, m)?)?;
    m.add_function(wrap_pyfunction!(kernel::kernel_programs, m)?)?;
    m.add_function(wrap_pyfunction!(kernel::kernel_preflight, m)?)?;
    m.add_function(wrap_pyfunction!(kernel::kernel_pinned_status, m)?)?;
    m.add_function(wrap_pyfunction!(kernel::kernel_unload, m)?)?;
    m.add_function(wrap_pyfunction!(kernel::kernel_replay, m)?)?;
    Ok(())
}
