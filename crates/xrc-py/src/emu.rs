//! Python bindings of the real-time link emulator (crate `xrc-emu`).
//!
//! `Emulator(...)` creates the two TUN devices at once (the caller moves
//! them into their namespaces and configures them); `start()` runs the
//! emulator on its own thread without the GIL; `stop()` ends it and
//! returns the run's report; `run(seconds)` does both and stops within
//! ~50 ms of Ctrl-C. The capture, the sender's view of a TCP flow and pcap
//! files are available after the run; `close()` (or garbage collection)
//! closes the devices, which makes them disappear.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use xrc_core::scenario;
use xrc_emu::analysis::sender_view;
use xrc_emu::capture::Fate;
use xrc_emu::report::RunReport;
use xrc_emu::sys::{self, Monotonic, ThreadSetup, Tun, TunPair};
use xrc_emu::{build_paths, Dir, Options, RtYield, Side, TraceTexts};

use crate::columns::le_bytes;

type Emu = xrc_emu::Emulator<TunPair, Monotonic>;
type Finished = (Box<Emu>, Result<(), String>, u64, ThreadSetup);

enum State {
    Ready(Box<Emu>),
    Running {
        handle: JoinHandle<Finished>,
        stop: Arc<AtomicBool>,
    },
    Stopped(Box<Emu>),
    Closed,
}

/// The emulator between two TUN devices.
#[pyclass(unsendable)]
pub struct Emulator {
    state: State,
    opts: Options,
    /// A thread that gets `SCHED_FIFO` pauses within the kernel's
    /// real-time budget (`xrc_emu::RtYield`).
    rt_yield: u8,
    names: (String, String),
    report: Option<RunReport>,
}

fn col_u64<'py>(py: Python<'py>, v: &[u64]) -> (&'static str, Bound<'py, PyBytes>) {
    ("<u8", le_bytes(py, v))
}
fn col_u32<'py>(py: Python<'py>, v: &[u32]) -> (&'static str, Bound<'py, PyBytes>) {
    ("<u4", le_bytes(py, v))
}
fn col_u8<'py>(py: Python<'py>, v: &[u8]) -> (&'static str, Bound<'py, PyBytes>) {
    ("|u1", PyBytes::new(py, v))
}

/// The loop's options and whether a real-time thread should pause.
fn parse_options(json: Option<&str>) -> PyResult<(Options, u8)> {
    let mut o = Options::default();
    let mut rt_yield = 1;
    let Some(text) = json else { return Ok((o, rt_yield)) };
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| PyValueError::new_err(format!("options: {e}")))?;
    let obj = v
        .as_object()
        .ok_or_else(|| PyValueError::new_err("options: expected a JSON object"))?;
    let mut ov = xrc_emu::feedback::Override::default();
    let mut fixed = (None, 0u16);
    let mut any_override = false;
    for (k, val) in obj {
        if matches!(k.as_str(), "xrc_tag_key" | "xrc_forge_key") {
            let key = val
                .as_str()
                .and_then(xrc_emu::feedback::TagKey::from_hex)
                .ok_or_else(|| {
                    PyValueError::new_err(format!("options.{k}: expected 32 hexadecimal digits, got {val}"))
                })?;
            if k == "xrc_tag_key" {
                o.tag_key = Some(key);
            } else {
                ov.forge_key = Some(key);
                any_override = true;
            }
            continue;
        }
        let ports = |k: &str, val: &serde_json::Value| -> PyResult<Vec<u16>> {
            val.as_array()
                .and_then(|a| {
                    a.iter()
                        .map(|p| p.as_u64().filter(|&n| n <= u16::MAX as u64).map(|n| n as u16))
                        .collect()
                })
                .ok_or_else(|| PyValueError::new_err(format!("options.{k}: expected a list of ports, got {val}")))
        };
        match k.as_str() {
            "air_ports" => {
                o.air_ports = ports(k, val)?;
                continue;
            }
            "abc_ports" => {
                o.signals.abc_ports = ports(k, val)?;
                continue;
            }
            "pbe_ports" => {
                o.signals.pbe_ports = ports(k, val)?;
                continue;
            }
            "net_assist" => {
                o.signals.net_assist = Some(net_assist_options(val, &ports)?);
                continue;
            }
            _ => {}
        }
        let n = val
            .as_u64()
            .ok_or_else(|| PyValueError::new_err(format!("options.{k}: expected a non-negative integer, got {val}")))?;
        match k.as_str() {
            "spin_us" => o.spin_ns = n * 1000,
            "batch" if n >= 1 => o.batch = n as usize,
            "max_sleep_ms" if n >= 1 => o.max_sleep_ns = n * 1_000_000,
            "snaplen" => o.snaplen = n.min(u16::MAX as u64) as u16,
            "late_us" => o.late_ns = n * 1000,
            "xrc_acks" if n <= 1 => o.xrc_acks = n == 1,
            "mtu" if (68..=65_535).contains(&n) => o.mtu = n as usize,
            // Set once the thread knows whether it got SCHED_FIFO.
            "rt_yield" if n <= 2 => rt_yield = n as u8,
            "gso" if n <= 1 => o.gso = n == 1,
            "gso_max_bytes" if (1500..=65_535).contains(&n) => o.gso_max_bytes = n as usize,
            // The base station's feedback override (tests of a sender's trust).
            "xrc_fixed_kbps" if n <= u32::MAX as u64 => (fixed.0, any_override) = (Some(n as u32), true),
            "xrc_fixed_hol_tenths" if n <= u16::MAX as u64 => (fixed.1, any_override) = (n as u16, true),
            "xrc_off_from_ms" => (ov.off, any_override) = (Some((n * 1_000_000, ov.off.map_or(u64::MAX, |o| o.1))), true),
            "xrc_off_until_ms" => (ov.off, any_override) = (Some((ov.off.map_or(0, |o| o.0), n * 1_000_000)), true),
            "xrc_replay" if n <= 1 => (ov.replay, any_override) = (n == 1, true),
            "xrc_mangle" if xrc_emu::feedback::Mangle::from_code(n).is_some() => {
                ov.mangle = xrc_emu::feedback::Mangle::from_code(n).unwrap();
                any_override = true;
            }
            _ => {
                return Err(PyValueError::new_err(format!(
                    "options.{k}: unknown or out of range (known: spin_us, batch >= 1, max_sleep_ms >= 1, snaplen, late_us, xrc_acks 0 or 1, mtu 68..=65535, rt_yield 0, 1 or 2, gso 0 or 1, gso_max_bytes 1500..=65535, xrc_fixed_kbps, xrc_fixed_hol_tenths, xrc_off_from_ms, xrc_off_until_ms, xrc_mangle 0..=5), got {n}"
                )))
            }
        }
    }
    if any_override {
        ov.fixed = fixed
            .0
            .map(|rate_kbps| xrc_emu::feedback::Feedback::new(rate_kbps, fixed.1));
        o.feedback_override = Some(ov);
    }
    Ok((o, rt_yield))
}

/// `options.net_assist`: {"ports": [...], "period_us", "delay_us",
/// "wired_rtt_us", "report_port", "seed", "loss"}.
fn net_assist_options(
    val: &serde_json::Value,
    ports: &dyn Fn(&str, &serde_json::Value) -> PyResult<Vec<u16>>,
) -> PyResult<xrc_emu::signals::NetAssistOptions> {
    let obj = val
        .as_object()
        .ok_or_else(|| PyValueError::new_err(format!("options.net_assist: expected an object, got {val}")))?;
    let int = |k: &str, min: u64, max: u64| -> PyResult<u64> {
        obj.get(k)
            .and_then(|v| v.as_u64())
            .filter(|n| (min..=max).contains(n))
            .ok_or_else(|| {
                PyValueError::new_err(format!(
                    "options.net_assist.{k}: expected an integer in {min}..={max}, got {:?}",
                    obj.get(k)
                ))
            })
    };
    let loss = obj.get("loss").and_then(|v| v.as_f64()).unwrap_or(0.0);
    if !(0.0..=1.0).contains(&loss) {
        return Err(PyValueError::new_err(format!(
            "options.net_assist.loss: expected a probability in [0, 1], got {loss}"
        )));
    }
    let p = obj
        .get("ports")
        .ok_or_else(|| PyValueError::new_err("options.net_assist.ports: missing"))?;
    Ok(xrc_emu::signals::NetAssistOptions {
        ports: ports("net_assist.ports", p)?,
        period_ns: int("period_us", 1, u32::MAX as u64)? * 1000,
        delay_ns: int("delay_us", 0, u32::MAX as u64)? * 1000,
        wired_rtt_ns: int("wired_rtt_us", 0, u32::MAX as u64)? * 1000,
        report_port: int("report_port", 1, u16::MAX as u64)? as u16,
        seed: int("seed", 0, u64::MAX)?,
        loss,
    })
}

fn opts_signals_empty(c: &xrc_emu::signals::SignalCounters) -> bool {
    *c == xrc_emu::signals::SignalCounters::default()
}

fn report_dict<'py>(py: Python<'py>, r: &RunReport) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let us = |x: Option<u64>| x.map(|v| v as f64 / 1e3);
    let rel = PyDict::new(py);
    rel.set_item("n", r.release.n)?;
    rel.set_item("p50_us", us(r.release.p50_ns))?;
    rel.set_item("p99_us", us(r.release.p99_ns))?;
    rel.set_item("p999_us", us(r.release.p999_ns))?;
    rel.set_item("max_us", us(r.release.max_ns))?;
    rel.set_item("late", r.release.late)?;
    rel.set_item("late_threshold_us", r.release.late_threshold_ns as f64 / 1e3)?;
    d.set_item("release_error", rel)?;
    match &r.tti {
        Some(t) => {
            let x = PyDict::new(py);
            x.set_item("n", t.n)?;
            x.set_item("p50_us", us(t.p50_ns))?;
            x.set_item("p99_us", us(t.p99_ns))?;
            x.set_item("max_us", us(t.max_ns))?;
            x.set_item("late", t.late)?;
            d.set_item("tti_start_lateness", x)?;
        }
        None => d.set_item("tti_start_lateness", py.None())?,
    }
    d.set_item("fell_behind", r.fell_behind)?;
    d.set_item("duration_s", r.duration_ns as f64 / 1e9)?;
    for (name, c) in [("down", r.down), ("up", r.up)] {
        let x = PyDict::new(py);
        x.set_item("read", c.read)?;
        x.set_item("written", c.written)?;
        x.set_item("writes", c.writes)?;
        x.set_item(
            "packets_per_write",
            if c.writes > 0 {
                c.written as f64 / c.writes as f64
            } else {
                f64::NAN
            },
        )?;
        x.set_item("dropped", c.dropped)?;
        x.set_item("bytes_read", c.bytes_read)?;
        x.set_item("bytes_written", c.bytes_written)?;
        d.set_item(name, x)?;
    }
    d.set_item("gso", r.gso)?;
    d.set_item("in_flight_at_end", r.in_flight_at_end)?;
    d.set_item("sleeps", r.sleeps)?;
    d.set_item("spins", r.spins)?;
    d.set_item("pauses", r.pauses)?;
    d.set_item("paused_s", r.paused_ns as f64 / 1e9)?;
    d.set_item("cpu_s", r.cpu_ns as f64 / 1e9)?;
    let th = PyDict::new(py);
    th.set_item("cpu", r.thread.cpu)?;
    th.set_item("fifo_priority", r.thread.fifo_priority)?;
    th.set_item("timer_slack_ns", r.thread.timer_slack_ns)?;
    th.set_item("notes", r.thread.notes.clone())?;
    d.set_item("thread", th)?;
    if !opts_signals_empty(&r.signals) {
        let g = PyDict::new(py);
        let c = r.signals;
        for (k, v) in [
            ("abc_accelerate", c.abc_accelerate),
            ("abc_brake", c.abc_brake),
            ("abc_echoes", c.abc_echoes),
            ("abc_no_room", c.abc_no_room),
            ("pbe_written", c.pbe_written),
            ("pbe_no_room", c.pbe_no_room),
            ("net_assist_reports_sent", c.reports_sent),
            ("net_assist_reports_lost", c.reports_lost),
        ] {
            g.set_item(k, v)?;
        }
        d.set_item("signals", g)?;
    }
    d.set_item("xrc_acks_written", r.xrc_written)?;
    d.set_item("xrc_acks_no_room", r.xrc_no_room)?;
    d.set_item("xrc_acks_placeholder_filled", r.xrc_filled)?;
    d.set_item("send_errors", r.send_errors)?;
    d.set_item("last_send_error", r.last_send_error.clone())?;
    d.set_item("stalls", r.stalls)?;
    d.set_item("stalled_ms", r.stalled_ns as f64 / 1e6)?;
    let longest = PyList::empty(py);
    for st in &r.longest_stalls {
        let x = PyDict::new(py);
        x.set_item("at_s", st.at_ns as f64 / 1e9)?;
        x.set_item("ms", st.dur_ns as f64 / 1e6)?;
        x.set_item("phase", format!("{:?}", st.phase).to_lowercase())?;
        x.set_item("cpu_ms", st.cpu_wall_ns.map(|(c, _)| c as f64 / 1e6))?;
        x.set_item("wall_ms", st.cpu_wall_ns.map(|(_, w)| w as f64 / 1e6))?;
        longest.append(x)?;
    }
    d.set_item("longest_stalls", longest)?;
    d.set_item("path_down", r.path_down.clone())?;
    d.set_item("path_up", r.path_up.clone())?;
    Ok(d)
}

fn dir_of(name: &str) -> PyResult<Dir> {
    match name {
        "down" => Ok(Dir::Down),
        "up" => Ok(Dir::Up),
        _ => Err(PyValueError::new_err(format!(
            "direction: \"down\" or \"up\", got {name:?}"
        ))),
    }
}

impl Emulator {
    fn emu(&self) -> PyResult<&Emu> {
        match &self.state {
            State::Ready(e) | State::Stopped(e) => Ok(e),
            State::Running { .. } => Err(PyRuntimeError::new_err("the emulator is running; stop() it first")),
            State::Closed => Err(PyRuntimeError::new_err("the emulator is closed")),
        }
    }

    fn join(&mut self) -> PyResult<()> {
        let State::Running { handle, stop } = std::mem::replace(&mut self.state, State::Closed) else {
            return Ok(());
        };
        stop.store(true, Ordering::Relaxed);
        let (emu, res, cpu, thread) = handle
            .join()
            .map_err(|_| PyRuntimeError::new_err("the emulator thread panicked"))?;
        self.report = Some(RunReport::of(&emu, cpu, thread, self.opts.late_ns));
        self.state = State::Stopped(emu);
        res.map_err(|e| PyOSError::new_err(format!("emulator: {e}")))
    }
}

#[pymethods]
impl Emulator {
    /// Creates the TUN devices `inet_tun` (Internet side) and `ue_tun` (UE
    /// side) and the paths of the resolved scenario (JSON). For the trace
    /// topology, `downlink_text` is the downlink trace's contents and
    /// `uplink_text` the uplink's (None: a fat uplink). `options_json`: a
    /// JSON object with `spin_us`, `batch`, `max_sleep_ms`, `snaplen`,
    /// `late_us`, `xrc_acks`, `mtu`, `rt_yield` (1 by default: a thread
    /// that got `SCHED_FIFO` pauses to stay within the kernel's real-time
    /// budget, `xrc_emu::RtYield`; 2: it leaves the real-time policy
    /// instead of sleeping; 0: never), `gso` (0/1: the UE-side device takes
    /// GSO super-packets) and `gso_max_bytes`.
    #[new]
    #[pyo3(signature = (resolved_json, inet_tun, ue_tun, downlink_text=None, uplink_text=None, options_json=None))]
    fn new(
        resolved_json: &str,
        inet_tun: &str,
        ue_tun: &str,
        downlink_text: Option<String>,
        uplink_text: Option<String>,
        options_json: Option<&str>,
    ) -> PyResult<Self> {
        let (opts, rt_yield) = parse_options(options_json)?;
        let cfg = scenario::from_json(resolved_json).map_err(PyValueError::new_err)?;
        let texts = TraceTexts {
            downlink: downlink_text,
            uplink: uplink_text,
        };
        let paths = build_paths(&cfg, &texts).map_err(PyValueError::new_err)?;
        let inet = Tun::create(inet_tun, false).map_err(|e| PyOSError::new_err(e.to_string()))?;
        let ue = Tun::create(ue_tun, opts.gso).map_err(|e| PyOSError::new_err(e.to_string()))?;
        let mut emu = xrc_emu::Emulator::new(TunPair { inet, ue }, Monotonic, paths, opts.clone());
        emu.reserve(cfg.duration_s);
        Ok(Emulator {
            state: State::Ready(Box::new(emu)),
            opts,
            rt_yield,
            names: (inet_tun.to_string(), ue_tun.to_string()),
            report: None,
        })
    }

    /// (Internet-side device, UE-side device).
    #[getter]
    fn tun_names(&self) -> (String, String) {
        self.names.clone()
    }

    #[getter]
    fn running(&self) -> bool {
        matches!(self.state, State::Running { .. })
    }

    /// Starts the emulator thread: pinned to `cpu` if given, `SCHED_FIFO`
    /// at `fifo_priority` if given and permitted; it stops by itself after
    /// `duration_s` if given. Model time starts now.
    #[pyo3(signature = (cpu=None, fifo_priority=None, duration_s=None))]
    fn start(&mut self, cpu: Option<usize>, fifo_priority: Option<i32>, duration_s: Option<f64>) -> PyResult<()> {
        let until = match duration_s {
            None => None,
            Some(s) if s.is_finite() && s > 0.0 => Some((s * 1e9) as u64),
            Some(s) => return Err(PyValueError::new_err(format!("duration_s must be positive, got {s}"))),
        };
        let mut emu = match std::mem::replace(&mut self.state, State::Closed) {
            State::Ready(e) => e,
            other => {
                self.state = other;
                return Err(PyRuntimeError::new_err(
                    "the emulator runs once: create a new one for another run",
                ));
            }
        };
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let wanted = self.rt_yield;
        let handle = std::thread::Builder::new()
            .name("xrc-emu".into())
            .spawn(move || {
                let setup = sys::setup_thread(cpu, fifo_priority);
                // Pauses only for a real-time thread, under a limited budget:
                // `rt_yield` 1 sleeps, 2 leaves the real-time policy.
                emu.set_rt_yield(
                    (wanted > 0 && setup.fifo_priority.is_some())
                        .then(sys::rt_budget_us)
                        .flatten()
                        .and_then(|(runtime, period)| RtYield::for_budget(runtime, period))
                        .map(|y| RtYield {
                            demote: if wanted == 2 { setup.fifo_priority } else { None },
                            ..y
                        }),
                );
                let cpu0 = sys::thread_cpu_ns();
                let res = emu.run(&flag, until).map_err(|e| e.to_string());
                (emu, res, sys::thread_cpu_ns() - cpu0, setup)
            })
            .map_err(|e| PyOSError::new_err(format!("cannot start the emulator thread: {e}")))?;
        self.state = State::Running { handle, stop };
        Ok(())
    }

    /// Stops the run (if running) and returns its report.
    fn stop<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        py.detach(|| self.join())?;
        match &self.report {
            Some(r) => report_dict(py, r),
            None => Err(PyRuntimeError::new_err("the emulator has not run")),
        }
    }

    /// Runs for `duration_s` seconds (without the GIL) and returns the
    /// report. Ctrl-C stops the run within ~50 ms and raises
    /// KeyboardInterrupt.
    #[pyo3(signature = (duration_s, cpu=None, fifo_priority=None))]
    fn run<'py>(
        &mut self,
        py: Python<'py>,
        duration_s: f64,
        cpu: Option<usize>,
        fifo_priority: Option<i32>,
    ) -> PyResult<Bound<'py, PyDict>> {
        self.start(cpu, fifo_priority, Some(duration_s))?;
        loop {
            let finished = match &self.state {
                State::Running { handle, .. } => handle.is_finished(),
                _ => true,
            };
            if finished {
                // A Ctrl-C that came as the run ended is not lost.
                if let Err(e) = py.check_signals() {
                    self.join()?;
                    return Err(e);
                }
                break;
            }
            py.detach(|| std::thread::sleep(Duration::from_millis(50)));
            if let Err(e) = py.check_signals() {
                self.join()?;
                return Err(e);
            }
        }
        self.stop(py)
    }

    /// The report of the last run, or None.
    fn report<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        self.report.as_ref().map(|r| report_dict(py, r)).transpose()
    }

    /// Every forwarded packet as columns `{name: (dtype, bytes)}`. Times
    /// are ns since the run started (`t_sched_ns`: when the model released
    /// it, so `t_out_ns − t_sched_ns` is its release error); `fate`: 0 delivered, 1 dropped, 2
    /// inside at the end; `dir`: 0 down, 1 up; `flow`: index into
    /// `flows()` (2**32 − 1: not IPv4); `window`: the TCP header's window
    /// field as sent (unscaled), `wscale`: a SYN's window-scale shift (255:
    /// none); `xrc_option`: 1 where the base
    /// station wrote the XRC option (`xrc_rate_kbps`, `xrc_hol_tenths_ms`).
    fn capture_columns<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let cap = self.emu()?.capture();
        let recs = cap.records();
        let n = recs.len();
        let (mut xrc_rate, mut xrc_hol, mut xrc_on) =
            (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
        for k in 0..n {
            let fb = cap.feedback_of(k as u32);
            xrc_on.push(fb.is_some() as u8);
            xrc_rate.push(fb.map_or(0, |f| f.rate_kbps));
            xrc_hol.push(fb.map_or(0, |f| f.hol_tenths_ms as u32));
        }
        let (mut t_in, mut t_out, mut t_sched) = (Vec::with_capacity(n), Vec::with_capacity(n), Vec::with_capacity(n));
        let (mut dir, mut fate, mut stage, mut is_tcp, mut flags, mut n_sack) = (
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
        );
        let mut u32s: Vec<Vec<u32>> = (0..16).map(|_| Vec::with_capacity(n)).collect();
        let mut wscale = Vec::with_capacity(n);
        for r in recs.iter() {
            t_in.push(r.t_in);
            t_out.push(r.t_out);
            t_sched.push(r.t_sched);
            dir.push(r.dir as u8);
            let (f, s) = match r.fate {
                Fate::Delivered => (0u8, 0u8),
                Fate::Dropped(s) => (1, s),
                Fate::InFlight => (2, 0),
            };
            fate.push(f);
            stage.push(s);
            let t = r.tcp.unwrap_or_default();
            is_tcp.push(r.tcp.is_some() as u8);
            flags.push(t.flags);
            n_sack.push(t.n_sack);
            wscale.push(t.wscale.unwrap_or(u8::MAX));
            let (tsval, tsecr) = t.ts.unwrap_or((0, 0));
            let mut row = vec![
                r.flow,
                r.len as u32,
                t.seq,
                t.ack,
                t.payload as u32,
                tsval,
                tsecr,
                t.window as u32,
            ];
            for &(l, rr) in &t.sack {
                row.push(l);
                row.push(rr);
            }
            for (c, v) in u32s.iter_mut().zip(row) {
                c.push(v);
            }
        }
        let d = PyDict::new(py);
        d.set_item("t_in_ns", col_u64(py, &t_in))?;
        d.set_item("t_out_ns", col_u64(py, &t_out))?;
        d.set_item("t_sched_ns", col_u64(py, &t_sched))?;
        d.set_item("dir", col_u8(py, &dir))?;
        d.set_item("fate", col_u8(py, &fate))?;
        d.set_item("drop_stage", col_u8(py, &stage))?;
        d.set_item("is_tcp", col_u8(py, &is_tcp))?;
        d.set_item("tcp_flags", col_u8(py, &flags))?;
        d.set_item("n_sack", col_u8(py, &n_sack))?;
        d.set_item("wscale", col_u8(py, &wscale))?;
        d.set_item("xrc_option", col_u8(py, &xrc_on))?;
        d.set_item("xrc_rate_kbps", col_u32(py, &xrc_rate))?;
        d.set_item("xrc_hol_tenths_ms", col_u32(py, &xrc_hol))?;
        let names = [
            "flow",
            "len",
            "seq",
            "ack",
            "payload",
            "tsval",
            "tsecr",
            "window",
            "sack1_left",
            "sack1_right",
            "sack2_left",
            "sack2_right",
            "sack3_left",
            "sack3_right",
            "sack4_left",
            "sack4_right",
        ];
        for (name, c) in names.iter().zip(&u32s) {
            d.set_item(*name, col_u32(py, c))?;
        }
        Ok(d)
    }

    /// What the base station reported (the `cellular` topology's cell every TTI,
    /// the `trace` topology's trace access every millisecond; None on a
    /// wired path), as
    /// columns (dtype, bytes): per TTI and UE `tti_*` (`t_ns`, `ue`,
    /// `hol_ns`, `sdus`, `bytes`, `cqi`, `available_mbps`, `agent_bps`,
    /// `active`); per packet leaving an RLC buffer `sojourn_*` (`t_ns`,
    /// `ue`, `flow`, `ns`); `rlc_drop_*` (`t_ns`, `ue`, `flow`);
    /// `harq_lost_*` (`t_ns`, `count`); and the lists `flow_ue` (UE of
    /// each capture flow, None: no UE) and `links` (per UE: TBs new,
    /// retransmitted, lost, carried bits).
    fn cell_columns<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(cell) = self.emu()?.cell() else {
            return Ok(None);
        };
        let s = cell.series();
        let d = PyDict::new(py);
        let f64s = |v: Vec<f64>| ("<f8", le_bytes(py, &v));
        let x = &s.samples;
        d.set_item("tti_t_ns", col_u64(py, &x.iter().map(|r| r.t_ns).collect::<Vec<_>>()))?;
        d.set_item("tti_ue", col_u32(py, &x.iter().map(|r| r.ue).collect::<Vec<_>>()))?;
        d.set_item(
            "tti_hol_ns",
            col_u64(py, &x.iter().map(|r| r.hol_ns).collect::<Vec<_>>()),
        )?;
        d.set_item("tti_sdus", col_u32(py, &x.iter().map(|r| r.sdus).collect::<Vec<_>>()))?;
        d.set_item("tti_bytes", col_u64(py, &x.iter().map(|r| r.bytes).collect::<Vec<_>>()))?;
        d.set_item("tti_cqi", col_u8(py, &x.iter().map(|r| r.cqi).collect::<Vec<_>>()))?;
        d.set_item("tti_available_mbps", f64s(x.iter().map(|r| r.available_mbps).collect()))?;
        d.set_item(
            "tti_agent_bps",
            col_u64(py, &x.iter().map(|r| r.agent_bps).collect::<Vec<_>>()),
        )?;
        d.set_item(
            "tti_active",
            col_u8(py, &x.iter().map(|r| r.active as u8).collect::<Vec<_>>()),
        )?;
        let so = &s.sojourns;
        d.set_item("sojourn_t_ns", col_u64(py, &so.iter().map(|r| r.0).collect::<Vec<_>>()))?;
        d.set_item("sojourn_ue", col_u32(py, &so.iter().map(|r| r.1).collect::<Vec<_>>()))?;
        d.set_item("sojourn_flow", col_u32(py, &so.iter().map(|r| r.2).collect::<Vec<_>>()))?;
        d.set_item("sojourn_ns", col_u64(py, &so.iter().map(|r| r.3).collect::<Vec<_>>()))?;
        let dr = &s.rlc_drops;
        d.set_item(
            "rlc_drop_t_ns",
            col_u64(py, &dr.iter().map(|r| r.0).collect::<Vec<_>>()),
        )?;
        d.set_item("rlc_drop_ue", col_u32(py, &dr.iter().map(|r| r.1).collect::<Vec<_>>()))?;
        d.set_item(
            "rlc_drop_flow",
            col_u32(py, &dr.iter().map(|r| r.2).collect::<Vec<_>>()),
        )?;
        let hl = &s.harq_lost;
        d.set_item(
            "harq_lost_t_ns",
            col_u64(py, &hl.iter().map(|r| r.0).collect::<Vec<_>>()),
        )?;
        d.set_item(
            "harq_lost_count",
            col_u64(py, &hl.iter().map(|r| r.1).collect::<Vec<_>>()),
        )?;
        d.set_item("flow_ue", cell.flow_ues())?;
        d.set_item("links", cell.link_counters())?;
        Ok(Some(d))
    }

    /// The flows seen: a list of dicts (5-tuple, first direction, packets
    /// and payload bytes per direction).
    fn flows<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let out = PyList::empty(py);
        for (k, f) in self.emu()?.capture().flows().iter().enumerate() {
            let d = PyDict::new(py);
            let ip = |a: [u8; 4]| format!("{}.{}.{}.{}", a[0], a[1], a[2], a[3]);
            d.set_item("index", k)?;
            d.set_item("proto", f.key.proto)?;
            d.set_item("src", ip(f.key.src))?;
            d.set_item("sport", f.key.sport)?;
            d.set_item("dst", ip(f.key.dst))?;
            d.set_item("dport", f.key.dport)?;
            d.set_item("first_dir", f.first_dir.name())?;
            d.set_item("packets_down", f.packets[0])?;
            d.set_item("packets_up", f.packets[1])?;
            d.set_item("payload_down", f.payload_bytes[0])?;
            d.set_item("payload_up", f.payload_bytes[1])?;
            d.set_item("describe", f.key.describe())?;
            out.append(d)?;
        }
        Ok(out)
    }

    /// The TCP sender's view of flow `flow` whose data goes `data_dir`
    /// ("down" or "up"), computed as the simulator records its own:
    /// columns (dtype, bytes) `rtt_t_ns`, `rtt_ns`, `retransmit_t_ns`,
    /// `delivered_t_ns`, `delivered_bytes`, `data_drop_t_ns`, and the
    /// scalars `first_payload_ns`, `data_segments`, `ack_drops`.
    #[pyo3(signature = (flow, data_dir="down"))]
    fn sender_view<'py>(&self, py: Python<'py>, flow: u32, data_dir: &str) -> PyResult<Bound<'py, PyDict>> {
        let dir = dir_of(data_dir)?;
        let emu = self.emu()?;
        let v = sender_view(emu.capture().records().iter(), flow, dir);
        let d = PyDict::new(py);
        let (a, b): (Vec<u64>, Vec<u64>) = v.rtt.iter().copied().unzip();
        d.set_item("rtt_t_ns", col_u64(py, &a))?;
        d.set_item("rtt_ns", col_u64(py, &b))?;
        d.set_item("retransmit_t_ns", col_u64(py, &v.retransmits))?;
        let (a, b): (Vec<u64>, Vec<u64>) = v.delivered.iter().copied().unzip();
        d.set_item("delivered_t_ns", col_u64(py, &a))?;
        d.set_item("delivered_bytes", col_u64(py, &b))?;
        d.set_item("data_drop_t_ns", col_u64(py, &v.data_drops))?;
        d.set_item("first_payload_ns", v.first_payload_ns)?;
        d.set_item("data_segments", v.data_segments)?;
        d.set_item("ack_drops", v.ack_drops)?;
        Ok(d)
    }

    /// Writes what the `side` device ("inet" or "ue") saw as a pcap file
    /// (nanosecond timestamps, raw IPv4, the first `snaplen` bytes).
    fn write_pcap(&self, path: &str, side: &str) -> PyResult<()> {
        let side = match side {
            "inet" => Side::Inet,
            "ue" => Side::Ue,
            _ => return Err(PyValueError::new_err(format!("side: \"inet\" or \"ue\", got {side:?}"))),
        };
        let emu = self.emu()?;
        let origin = emu
            .origin_ns()
            .ok_or_else(|| PyRuntimeError::new_err("the emulator has not run"))?;
        let realtime_origin = sys::realtime_ns() - sys::monotonic_ns() + origin;
        let write = || -> std::io::Result<()> {
            let f = std::fs::File::create(path)?;
            let mut w = std::io::BufWriter::new(f);
            emu.capture().write_pcap(&mut w, side, realtime_origin)
        };
        write().map_err(|e| PyOSError::new_err(format!("{path}: {e}")))
    }

    /// Stops the run if any and closes the devices (they disappear).
    fn close(&mut self) -> PyResult<()> {
        let r = self.join();
        self.state = State::Closed;
        r
    }
}

impl Drop for Emulator {
    fn drop(&mut self) {
        if let State::Running { stop, .. } = &self.state {
            stop.store(true, Ordering::Relaxed);
        }
        let _ = self.join();
    }
}
