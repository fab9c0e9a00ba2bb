//! The control port (`World::control_step`) for Python: one flow of a
//! scenario driven from outside, step by step (`xrc.gym`), and many such
//! simulations stepped in one call.

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use xrc_core::scenario::world::Probe;
use xrc_core::scenario::{self, TraceTexts, World};
use xrc_core::transport::cc::external::Setpoint;
use xrc_core::units::{BitRate, SimDuration};

/// Rows the recorder may hold before a step forgets them: a controlled run
/// is read through its probes, not its tables.
const ROWS_KEPT: usize = 1 << 16;

/// The fields of [`probe_row`], in order (`Controlled.FIELDS`).
const FIELDS: [&str; 20] = [
    "now_s",
    "delivered_bytes",
    "sent",
    "acked",
    "lost",
    "rtt_samples",
    "rtt_mean_s",
    "rtt_min_s",
    "rtt_max_s",
    "rtt_first_s",
    "rtt_last_s",
    "in_flight",
    "cwnd",
    "pacing_rate_bps",
    "srtt_s",
    "min_rtt_s",
    "xrc_rate_bps",
    "xrc_hol_s",
    "live",
    "done",
];

/// A probe as numbers, NaN where a value is unknown (no RTT sample yet, no
/// XRC agent, no pacing).
fn probe_row(p: &Probe) -> [f64; 20] {
    let d = |v: Option<SimDuration>| v.map_or(f64::NAN, |d| d.as_secs_f64());
    let s = &p.step;
    [
        p.now.as_secs_f64(),
        p.delivered_bytes as f64,
        s.sent as f64,
        s.acked as f64,
        s.lost as f64,
        s.rtt_samples as f64,
        d(s.rtt_mean()),
        d(s.rtt_min),
        d(s.rtt_max),
        d(s.rtt_first),
        d(s.rtt_last),
        p.in_flight as f64,
        p.cwnd as f64,
        p.pacing_rate.map_or(f64::NAN, |r| r.bps() as f64),
        d(p.srtt),
        d(p.min_rtt),
        p.xrc.map_or(f64::NAN, |x| x.rate_bps as f64),
        p.xrc.map_or(f64::NAN, |x| x.hol.as_secs_f64()),
        p.live as u8 as f64,
        p.done as u8 as f64,
    ]
}

/// The setpoint from Python's numbers; errors name the argument and value.
fn setpoint(rate_bps: Option<f64>, cwnd: Option<f64>) -> Result<Option<Setpoint>, String> {
    let rate = match rate_bps {
        None => None,
        Some(r) if (1.0..=1e13).contains(&r) => Some(BitRate::from_bps(r.round() as u64)),
        Some(r) => {
            return Err(format!(
                "rate_bps: must be a finite rate from 1 bit/s to 10 Tbit/s, not {r}"
            ))
        }
    };
    let cwnd = match cwnd {
        None => None,
        Some(w) if (1.0..=1e9).contains(&w) => Some(w.round() as u32),
        Some(w) => {
            return Err(format!(
                "cwnd: must be a finite window from 1 to 10^9 segments, not {w}"
            ))
        }
    };
    if rate.is_none() && cwnd.is_none() {
        return Ok(None);
    }
    Ok(Some(Setpoint { rate, cwnd }))
}

fn step_world(
    w: &mut World,
    flow: usize,
    sp: Option<Setpoint>,
    interval: SimDuration,
    keep_rows: bool,
) -> Result<[f64; 20], String> {
    let p = w.control_step(flow, sp, interval)?;
    if !keep_rows && w.recorder().rows() > ROWS_KEPT {
        w.recorder_mut().clear_rows();
    }
    Ok(probe_row(&p))
}

/// One simulation with one flow driven from outside.
#[pyclass]
pub struct Controlled {
    /// Behind a mutex so that the object may be freed on any thread (see
    /// `Simulation`); methods taking `&mut self` reach it without locking.
    /// `None` once `finish` took it.
    world: std::sync::Mutex<Option<World>>,
    flow: usize,
    /// Keep every recorded row for `finish` (otherwise they are forgotten
    /// as the steps go).
    keep_rows: bool,
}

impl Controlled {
    fn world_mut(&mut self) -> PyResult<&mut World> {
        self.world
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
            .ok_or_else(|| PyRuntimeError::new_err("simulation already finished"))
    }
}

#[pymethods]
impl Controlled {
    /// The names of the numbers `step` returns, in order.
    #[classattr]
    const FIELDS: [&'static str; 20] = FIELDS;

    /// Builds the world from a resolved scenario (JSON) whose flow `flow`
    /// has `cc = "external"`; raises ValueError naming the field otherwise.
    /// With `keep_rows` every recorded row is kept for `finish` (a run to
    /// report on); otherwise they are forgotten as the steps go.
    #[new]
    #[pyo3(signature = (resolved_json, flow, trace_text=None, uplink_trace_text=None, *, keep_rows=false))]
    fn new(
        resolved_json: &str,
        flow: usize,
        trace_text: Option<&str>,
        uplink_trace_text: Option<&str>,
        keep_rows: bool,
    ) -> PyResult<Self> {
        let cfg = scenario::from_json(resolved_json).map_err(PyValueError::new_err)?;
        let texts = TraceTexts {
            downlink: trace_text,
            uplink: uplink_trace_text,
        };
        let mut world = World::with_traces(cfg, texts).map_err(PyValueError::new_err)?;
        world.check_external(flow).map_err(PyValueError::new_err)?;
        Ok(Controlled {
            world: std::sync::Mutex::new(Some(world)),
            flow,
            keep_rows,
        })
    }

    /// Gives the flow its setpoint (`rate_bps` of TCP payload, `cwnd` in
    /// segments; either, both, or neither to keep the last), runs
    /// `interval_ns` of simulated time and returns the probe (`FIELDS`).
    #[pyo3(signature = (interval_ns, rate_bps=None, cwnd=None))]
    fn step(
        &mut self,
        py: Python<'_>,
        interval_ns: u64,
        rate_bps: Option<f64>,
        cwnd: Option<f64>,
    ) -> PyResult<Vec<f64>> {
        let sp = setpoint(rate_bps, cwnd).map_err(PyValueError::new_err)?;
        let (flow, keep) = (self.flow, self.keep_rows);
        let w = self.world_mut()?;
        let row = py
            .detach(|| step_world(w, flow, sp, SimDuration::from_nanos(interval_ns), keep))
            .map_err(PyValueError::new_err)?;
        Ok(row.to_vec())
    }

    /// Simulated time now, seconds, and the scenario's end.
    #[getter]
    fn now_s(&mut self) -> PyResult<f64> {
        Ok(self.world_mut()?.now().as_secs_f64())
    }
    #[getter]
    fn end_s(&mut self) -> PyResult<f64> {
        Ok(self.world_mut()?.end_time().as_secs_f64())
    }
    #[getter]
    fn events(&mut self) -> PyResult<u64> {
        Ok(self.world_mut()?.events())
    }
    #[getter]
    fn done(&mut self) -> PyResult<bool> {
        Ok(self.world_mut()?.done())
    }

    /// Runs without a decision until simulated time `t_s` (the flow keeps
    /// its setpoint; before the first one it sends as Reno).
    fn run_until(&mut self, py: Python<'_>, t_s: f64) -> PyResult<()> {
        if !t_s.is_finite() || t_s < 0.0 {
            return Err(PyValueError::new_err(format!(
                "t_s: must be a finite time in seconds, not {t_s}"
            )));
        }
        let w = self.world_mut()?;
        let until = xrc_core::units::SimTime::ZERO + SimDuration::try_from_secs_f64(t_s).unwrap_or(SimDuration::MAX);
        py.detach(|| {
            w.run_until(until);
        });
        match w.failure() {
            Some(e) => Err(PyValueError::new_err(e.to_string())),
            None => Ok(()),
        }
    }

    /// Checks the world's invariants; raises RuntimeError naming the one violated.
    fn check_invariants(&mut self) -> PyResult<()> {
        self.world_mut()?.check_invariants().map_err(PyRuntimeError::new_err)
    }

    /// Rows recorded and not yet drained, over every table.
    #[getter]
    fn rows_held(&mut self) -> PyResult<usize> {
        Ok(self.world_mut()?.recorder().rows())
    }

    /// Takes the rows recorded since the last drain, as `Simulation.drain`
    /// does (for a run streamed to a directory as it goes).
    fn drain<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        crate::drain_dict(py, self.world_mut()?)
    }

    /// Ends the run (if not ended) and returns what `Simulation.finish`
    /// returns: `{"events", "sim_time_s", "tables", "mode_names"}`, the
    /// tables holding every row if the simulation keeps its rows.
    fn finish<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let w = self
            .world
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .ok_or_else(|| PyRuntimeError::new_err("simulation already finished"))?;
        crate::finish_dict(py, w)
    }
}

/// One simulation's step of [`step_many`].
struct Job<'a> {
    world: &'a mut World,
    flow: usize,
    keep_rows: bool,
    setpoint: Option<Setpoint>,
    interval: SimDuration,
}

impl Job<'_> {
    fn run(&mut self) -> Result<[f64; 20], String> {
        step_world(self.world, self.flow, self.setpoint, self.interval, self.keep_rows)
    }
}

/// Steps every simulation of `sims` by its own interval (`intervals_ns[i]`)
/// with its own setpoint (`rates_bps[i]`, `cwnds[i]`; None keeps the
/// last), on up to `threads`
/// threads, without the GIL. Returns the probes in order as one buffer of
/// little-endian f64, `len(sims)` rows of `len(Controlled.FIELDS)` (for
/// `numpy.frombuffer`). Errors name the simulation's index.
#[pyfunction]
#[pyo3(signature = (sims, intervals_ns, rates_bps, cwnds, threads=1))]
pub fn step_many(
    py: Python<'_>,
    sims: Vec<PyRefMut<'_, Controlled>>,
    intervals_ns: Vec<u64>,
    rates_bps: Vec<Option<f64>>,
    cwnds: Vec<Option<f64>>,
    threads: usize,
) -> PyResult<Py<PyBytes>> {
    let n = sims.len();
    if intervals_ns.len() != n || rates_bps.len() != n || cwnds.len() != n {
        return Err(PyValueError::new_err(format!(
            "intervals_ns, rates_bps, cwnds: one per simulation ({n}), not {}, {} and {}",
            intervals_ns.len(),
            rates_bps.len(),
            cwnds.len()
        )));
    }
    let mut sims = sims;
    let mut jobs: Vec<Job<'_>> = Vec::with_capacity(n);
    for (i, (s, ((ns, r), c))) in sims
        .iter_mut()
        .zip(intervals_ns.into_iter().zip(rates_bps).zip(cwnds))
        .enumerate()
    {
        let sp = setpoint(r, c).map_err(|e| PyValueError::new_err(format!("[{i}] {e}")))?;
        let (flow, keep_rows) = (s.flow, s.keep_rows);
        let world = s
            .world_mut()
            .map_err(|_| PyRuntimeError::new_err(format!("[{i}] simulation already finished")))?;
        jobs.push(Job {
            world,
            flow,
            keep_rows,
            setpoint: sp,
            interval: SimDuration::from_nanos(ns),
        });
    }
    let threads = threads.clamp(1, n.max(1));
    let rows: Vec<Result<[f64; 20], String>> = py.detach(|| {
        if threads == 1 {
            return jobs.iter_mut().map(Job::run).collect();
        }
        let chunk = n.div_ceil(threads);
        std::thread::scope(|scope| {
            let handles: Vec<_> = jobs
                .chunks_mut(chunk)
                .map(|part| scope.spawn(move || part.iter_mut().map(Job::run).collect::<Vec<_>>()))
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().expect("a stepping thread panicked"))
                .collect()
        })
    });
    let mut buf = Vec::with_capacity(n * FIELDS.len() * 8);
    for (i, r) in rows.into_iter().enumerate() {
        let row = r.map_err(|e| PyValueError::new_err(format!("[{i}] {e}")))?;
        for v in row {
            buf.extend_from_slice(&v.to_le_bytes());
        }
    }
    Ok(PyBytes::new(py, &buf).unbind())
}
