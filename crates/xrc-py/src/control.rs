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

/// The numbers a step returns, in order (`Controlled.FIELDS`): the
/// environment's observation of the step (the first [`OBS`], `xrc.gym`'s
/// `OBS_FIELDS`, `docs/gym.md`), then what the environment needs besides.
const FIELDS: [&str; 18] = [
    // bytes the receiving application got over the step, Mbit/s
    "delivery_rate_mbps",
    // payload of the segments sent over the step (retransmissions too), Mbit/s
    "send_rate_mbps",
    // mean RTT sample of the step (the smoothed RTT if none, else the last value), ms
    "rtt_ms",
    // the flow's least RTT sample so far, ms
    "min_rtt_ms",
    // rtt_ms / min_rtt_ms (Aurora), 1 before any sample
    "latency_ratio",
    // (last - first RTT sample of the step) / the step (Aurora)
    "latency_gradient",
    // segments sent / segments acknowledged (Aurora), capped at 10^9
    "send_ratio",
    // segments lost / (lost + acknowledged)
    "loss_fraction",
    // segments in flight, and the window, at the end of the step
    "in_flight",
    "cwnd",
    // the pacing rate in force (0: not paced), Mbit/s
    "rate_mbps",
    // the last XRC option's fair share (Mbit/s) and HoL delay (ms); 0 without one
    "xrc_rate_mbps",
    "xrc_hol_ms",
    // the decision point, s
    "time_s",
    // 1: the flow has started and is not done
    "live",
    // 1: the run is over
    "done",
    // 1: the flow's ACKs have carried an XRC option
    "has_xrc_agent",
    // the flow's smoothed RTT (its least before one; NaN before any), s
    "srtt_s",
];

/// How many of [`FIELDS`] are the observation.
const OBS: usize = 13;

/// What a step's observation keeps from one step to the next.
#[derive(Clone, Copy, Debug, Default)]
struct ObsState {
    /// Payload bytes of a full segment (the flow's MSS).
    mss: u32,
    /// The last RTT the observation showed, ms (for a step without samples
    /// before any smoothed RTT).
    last_rtt_ms: f64,
}

/// The step of `dt` that ended with probe `p`, as the numbers of [`FIELDS`].
fn observe(p: &Probe, dt: SimDuration, st: &mut ObsState) -> [f64; 18] {
    let ms = |d: SimDuration| d.as_secs_f64() * 1e3;
    let s = &p.step;
    let dt_s = dt.as_secs_f64();
    let rtt_ms = match (s.rtt_mean(), p.srtt) {
        (Some(m), _) => ms(m),
        (None, Some(sr)) => ms(sr),
        (None, None) => st.last_rtt_ms,
    };
    st.last_rtt_ms = rtt_ms;
    let min_rtt_ms = p.min_rtt.map_or(0.0, ms);
    let gradient = match (s.rtt_samples >= 2, s.rtt_first, s.rtt_last) {
        (true, Some(a), Some(b)) => (b.as_secs_f64() - a.as_secs_f64()) / dt_s,
        _ => 0.0,
    };
    let (sent, acked, lost) = (s.sent as f64, s.acked as f64, s.lost as f64);
    let send_ratio = if acked > 0.0 {
        sent / acked
    } else if sent == 0.0 {
        1.0
    } else {
        sent
    };
    let flag = |b: bool| if b { 1.0 } else { 0.0 };
    [
        p.delivered_bytes as f64 * 8e-6 / dt_s,
        sent * st.mss as f64 * 8e-6 / dt_s,
        rtt_ms,
        min_rtt_ms,
        if min_rtt_ms > 0.0 { rtt_ms / min_rtt_ms } else { 1.0 },
        gradient,
        send_ratio.min(1e9),
        if lost + acked > 0.0 { lost / (lost + acked) } else { 0.0 },
        p.in_flight as f64,
        p.cwnd as f64,
        p.pacing_rate.map_or(0.0, |r| r.bps() as f64 * 1e-6),
        p.xrc.map_or(0.0, |x| x.rate_bps as f64 * 1e-6),
        p.xrc.map_or(0.0, |x| ms(x.hol)),
        p.now.as_secs_f64(),
        flag(p.live),
        flag(p.done),
        flag(p.xrc.is_some()),
        p.srtt.or(p.min_rtt).map_or(f64::NAN, |d| d.as_secs_f64()),
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

/// One step of `w`: the setpoint, `interval` of simulated time (less at
/// the scenario's end), the observation of what ran.
fn step_world(
    w: &mut World,
    flow: usize,
    sp: Option<Setpoint>,
    interval: SimDuration,
    keep_rows: bool,
    st: &mut ObsState,
) -> Result<[f64; 18], String> {
    let before = w.now();
    let p = w.control_step(flow, sp, interval)?;
    if !keep_rows && w.recorder().rows() > ROWS_KEPT {
        w.recorder_mut().clear_rows();
    }
    let ran = p.now.saturating_since(before);
    Ok(observe(&p, if ran.is_zero() { interval } else { ran }, st))
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
    obs: ObsState,
}

impl Controlled {
    fn world_mut(&mut self) -> PyResult<&mut World> {
        Ok(self.parts()?.0)
    }

    /// The world and the observation's state, borrowed together.
    fn parts(&mut self) -> PyResult<(&mut World, &mut ObsState)> {
        let w = self
            .world
            .get_mut()
            .unwrap_or_else(|e| e.into_inner())
            .as_mut()
            .ok_or_else(|| PyRuntimeError::new_err("simulation already finished"))?;
        Ok((w, &mut self.obs))
    }
}

#[pymethods]
impl Controlled {
    /// The names of the numbers `step` returns, in order; the first
    /// `OBS_LEN` are the environment's observation of the step.
    #[classattr]
    const FIELDS: [&'static str; 18] = FIELDS;
    #[classattr]
    const OBS_LEN: usize = OBS;

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
        let mss = cfg.flows.get(flow).map_or(0, |f| f.tcp.mss);
        let mut world = World::with_traces(cfg, texts).map_err(PyValueError::new_err)?;
        world.check_external(flow).map_err(PyValueError::new_err)?;
        Ok(Controlled {
            world: std::sync::Mutex::new(Some(world)),
            flow,
            keep_rows,
            obs: ObsState { mss, last_rtt_ms: 0.0 },
        })
    }

    /// Gives the flow its setpoint (`rate_bps` of TCP payload, `cwnd` in
    /// segments; either, both, or neither to keep the last), runs
    /// `interval_ns` of simulated time and returns what ran (`FIELDS`).
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
        let (w, st) = self.parts()?;
        let row = py
            .detach(|| step_world(w, flow, sp, SimDuration::from_nanos(interval_ns), keep, st))
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
    obs: &'a mut ObsState,
    flow: usize,
    keep_rows: bool,
    setpoint: Option<Setpoint>,
    interval: SimDuration,
}

impl Job<'_> {
    fn run(&mut self) -> Result<[f64; 18], String> {
        step_world(
            self.world,
            self.flow,
            self.setpoint,
            self.interval,
            self.keep_rows,
            self.obs,
        )
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
        let (world, obs) = s
            .parts()
            .map_err(|_| PyRuntimeError::new_err(format!("[{i}] simulation already finished")))?;
        jobs.push(Job {
            world,
            obs,
            flow,
            keep_rows,
            setpoint: sp,
            interval: SimDuration::from_nanos(ns),
        });
    }
    let threads = threads.clamp(1, n.max(1));
    let rows: Vec<Result<[f64; 18], String>> = py.detach(|| {
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
