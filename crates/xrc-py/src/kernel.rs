//! Bindings of `xrc-kernel`: the XRC congestion control in the Linux kernel
//! (load, pin, status, unload) and the replay of its trace through the
//! simulator's sender. A refusal (no root, no BTF, the name taken, bad
//! parameters) raises ValueError (`xrc kernel` exits 2); a failure of the
//! kernel or libbpf raises RuntimeError.

use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use xrc_kernel::{abi, Error, Kernel, Params, Status};

fn py_err(e: Error) -> PyErr {
    match e {
        Error::Refused(m) => PyValueError::new_err(m),
        Error::Failed(m) => PyRuntimeError::new_err(m),
    }
}

/// Parameters from JSON: {"cc_params": {...xrc's...}, "max_rate_kbps": n,
/// "max_hol_ms": x, "trace": bool}; absent keys take their defaults.
fn params(json: &str) -> PyResult<Params> {
    let v: serde_json::Value = serde_json::from_str(json).map_err(|e| PyValueError::new_err(e.to_string()))?;
    let mut p = Params::default();
    let obj = v
        .as_object()
        .ok_or_else(|| PyValueError::new_err("kernel parameters must be a JSON object"))?;
    for (k, val) in obj {
        match k.as_str() {
            "cc_params" => {
                p.cc =
                    serde_json::from_value(val.clone()).map_err(|e| PyValueError::new_err(format!("cc_params: {e}")))?
            }
            "max_rate_kbps" => {
                p.max_rate_kbps = val.as_u64().ok_or_else(|| {
                    PyValueError::new_err(format!("max_rate_kbps must be a positive integer, got {val}"))
                })?
            }
            "max_hol_ms" => {
                let ms = val
                    .as_f64()
                    .ok_or_else(|| PyValueError::new_err(format!("max_hol_ms must be a number, got {val}")))?;
                p.max_hol_ns = xrc_core::units::SimDuration::try_from_millis_f64(ms)
                    .filter(|d| !d.is_zero())
                    .ok_or_else(|| {
                        PyValueError::new_err(format!("max_hol_ms must be a positive duration in ms, got {ms}"))
                    })?
                    .as_nanos()
            }
            "trace" => p.trace = val.as_bool().unwrap_or(false),
            "tag_key" => {
                let hex = val.as_str().unwrap_or_default();
                p.tag_key = Some(xrc_kernel::parse_tag_key(hex).ok_or_else(|| {
                    PyValueError::new_err(format!("tag_key must be 32 hexadecimal digits (16 bytes), got {val}"))
                })?)
            }
            other => return Err(PyValueError::new_err(format!("unknown kernel parameter {other:?}"))),
        }
    }
    Ok(p)
}

fn status_dict<'py>(py: Python<'py>, s: &Status) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("name", &s.name)?;
    d.set_item("object_sha256", &s.object_sha256)?;
    d.set_item("loaded_at_s", s.loaded_at_s)?;
    d.set_item("pinned", s.pinned)?;
    d.set_item("cgroup", &s.cgroup)?;
    let c = PyDict::new(py);
    c.set_item("budget_ms", s.cfg.budget_ns as f64 / 1e6)?;
    c.set_item("feedback_timeout_ms", s.cfg.feedback_timeout_ns as f64 / 1e6)?;
    c.set_item("probe_segments", s.cfg.probe_fp as f64 / (1u64 << 20) as f64)?;
    c.set_item("ramp_rtts", s.cfg.ramp_milli as f64 / 1000.0)?;
    c.set_item("unfair_gain", s.cfg.unfair_gain_milli as f64 / 1000.0)?;
    c.set_item("unfair_after_rtts", s.cfg.unfair_after_rtts)?;
    c.set_item("max_rate_kbps", s.cfg.max_rate_kbps)?;
    c.set_item("max_hol_ms", s.cfg.max_hol_ns as f64 / 1e6)?;
    c.set_item("trace", s.cfg.trace != 0)?;
    c.set_item("tagged", s.cfg.tag_on != 0)?;
    d.set_item("params", c)?;
    let counters = PyDict::new(py);
    for (n, v) in &s.counters {
        counters.set_item(*n, *v)?;
    }
    d.set_item("counters", counters)?;
    let socks = PyList::empty(py);
    for (k, v) in &s.sockets {
        let e = PyDict::new(py);
        e.set_item("local", k.local().to_string())?;
        e.set_item("remote", k.remote().to_string())?;
        e.set_item("closed", v.closed != 0)?;
        e.set_item("mode", abi::MODES.get(v.mode as usize).copied().unwrap_or("?"))?;
        e.set_item("bottleneck", if v.bottleneck == 1 { "internet" } else { "wireless" })?;
        e.set_item("cwnd", v.cwnd)?;
        e.set_item("rate_kbps", v.rate_kbps)?;
        e.set_item("hol_ms", v.hol_us as f64 / 1e3)?;
        e.set_item("min_rtt_ms", v.min_rtt_us as f64 / 1e3)?;
        e.set_item("sigma_ms", v.sigma_us as f64 / 1e3)?;
        let c = PyDict::new(py);
        for (i, n) in abi::COUNTERS.iter().enumerate() {
            c.set_item(*n, v.counters[i])?;
        }
        e.set_item("counters", c)?;
        socks.append(e)?;
    }
    d.set_item("sockets", socks)?;
    Ok(d)
}

/// A load of the XRC congestion control held by this object: registered
/// until `close()` (or `pin()`, which hands it to bpffs).
#[pyclass(unsendable)]
pub struct KernelCc {
    inner: Option<Kernel>,
}

#[pymethods]
impl KernelCc {
    #[new]
    #[pyo3(signature = (params_json, object_sha256, trace_path=None))]
    fn new(py: Python<'_>, params_json: &str, object_sha256: &str, trace_path: Option<&str>) -> PyResult<Self> {
        let p = params(params_json)?;
        let trace = trace_path.map(std::path::PathBuf::from);
        if p.trace != trace.is_some() {
            return Err(PyValueError::new_err("trace: give a trace path exactly when tracing"));
        }
        let k = py
            .detach(|| Kernel::load(&p, object_sha256, trace.as_deref()))
            .map_err(py_err)?;
        Ok(KernelCc { inner: Some(k) })
    }

    fn status<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let k = self.inner.as_ref().ok_or_else(|| PyRuntimeError::new_err("closed"))?;
        status_dict(py, &k.status().map_err(py_err)?)
    }

    /// Pins the load in bpffs so that it outlives this process.
    fn pin(&mut self) -> PyResult<String> {
        let k = self.inner.take().ok_or_else(|| PyRuntimeError::new_err("closed"))?;
        Ok(k.pin().map_err(py_err)?.to_string_lossy().into_owned())
    }

    /// Unregisters it (stops the trace, detaches the parser) and waits until
    /// the kernel no longer lists it and has freed its programs; returns
    /// whether both happened (within 5 and 10 s).
    /// Raises RuntimeError, after removing everything, if the trace could
    /// not be written whole.
    fn close(&mut self, py: Python<'_>) -> PyResult<bool> {
        if let Some(mut k) = self.inner.take() {
            let name = k.name().to_owned();
            let traced = k.finish_trace();
            drop(k);
            let gone = py.detach(|| {
                xrc_kernel::wait_registered(&name, false, std::time::Duration::from_secs(5))
                    && xrc_kernel::wait_programs_gone(std::time::Duration::from_secs(10))
            });
            traced.map_err(py_err)?;
            return Ok(gone);
        }
        Ok(true)
    }
}

/// The shim with its agent: the core's congestion controls on the kernel
/// sockets that use `xrc_shim`, registered until `close()`.
#[pyclass(unsendable)]
pub struct KernelShim {
    inner: Option<xrc_kernel::Shim>,
}

fn shim_status<'py>(py: Python<'py>, s: &xrc_kernel::ShimStatus) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let c = PyDict::new(py);
    for (n, v) in &s.counters {
        c.set_item(*n, *v)?;
    }
    d.set_item("counters", c)?;
    let a = &s.agent;
    d.set_item("events", a.events)?;
    d.set_item("decisions", a.decisions)?;
    d.set_item("skipped", a.skipped)?;
    d.set_item("adopted", a.adopted)?;
    d.set_item("errors", a.errors.clone())?;
    let lag = PyDict::new(py);
    lag.set_item("n", a.lag_ns.len())?;
    for (n, q) in [("p50_us", 0.5), ("p90_us", 0.9), ("p99_us", 0.99), ("max_us", 1.0)] {
        lag.set_item(n, a.lag_quantile(q).map(|v| v as f64 / 1e3))?;
    }
    d.set_item("decision_lag", lag)?;
    d.set_item("agent_fifo_priority", s.agent_fifo_priority)?;
    if a.reports + a.reports_malformed > 0 {
        let r = PyDict::new(py);
        r.set_item("received", a.reports)?;
        r.set_item("applied", a.reports_applied)?;
        r.set_item("for_unknown_sockets", a.reports_unknown)?;
        r.set_item("malformed", a.reports_malformed)?;
        r.set_item("last_malformed", a.last_malformed.clone())?;
        d.set_item("net_assist_reports", r)?;
    }
    let socks = PyList::empty(py);
    for (i, (k, scheme, events, closed)) in a.sockets.iter().enumerate() {
        let e = PyDict::new(py);
        if let Some(m) = a.modes.get(i).filter(|m| !m.is_empty()) {
            let d = PyDict::new(py);
            for (name, n) in m {
                d.set_item(*name, *n)?;
            }
            e.set_item("modes", d)?;
        }
        e.set_item("local", k.local().to_string())?;
        e.set_item("remote", k.remote().to_string())?;
        e.set_item("scheme", scheme)?;
        e.set_item("events", *events)?;
        e.set_item("closed", *closed)?;
        socks.append(e)?;
    }
    d.set_item("sockets", socks)?;
    Ok(d)
}

#[pymethods]
impl KernelShim {
    /// `rules_json`: [{"port": remote port or null, "scheme": name,
    /// "params": {cc_params}}]; `params_json` as for KernelCc (its feedback
    /// bounds apply to the shim's option parser).
    #[new]
    fn new(py: Python<'_>, rules_json: &str, params_json: &str) -> PyResult<Self> {
        let p = params(params_json)?;
        let v: serde_json::Value =
            serde_json::from_str(rules_json).map_err(|e| PyValueError::new_err(format!("rules: {e}")))?;
        let mut rules = Vec::new();
        for r in v
            .as_array()
            .ok_or_else(|| PyValueError::new_err("rules: expected a list"))?
        {
            let port = match &r["port"] {
                serde_json::Value::Null => None,
                x => Some(
                    x.as_u64()
                        .filter(|&n| n <= u16::MAX as u64)
                        .ok_or_else(|| PyValueError::new_err(format!("rules: port must be in [0, 65535], got {x}")))?
                        as u16,
                ),
            };
            let scheme = r["scheme"]
                .as_str()
                .ok_or_else(|| PyValueError::new_err("rules: scheme must be a name"))?
                .to_owned();
            rules.push(xrc_kernel::shim::Rule {
                port,
                scheme,
                params: r.get("params").cloned().unwrap_or(serde_json::Value::Null),
            });
        }
        let s = py.detach(|| xrc_kernel::Shim::load(&p, rules)).map_err(py_err)?;
        Ok(KernelShim { inner: Some(s) })
    }

    fn status<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.inner.as_ref().ok_or_else(|| PyRuntimeError::new_err("closed"))?;
        shim_status(py, &s.status().map_err(py_err)?)
    }

    /// Listens for NetAssist reports on UDP `port` (0: any free one) in the
    /// network namespace file `netns` (None: this process's); returns the
    /// port bound.
    #[pyo3(signature = (port, netns=None))]
    fn listen_reports(&mut self, port: u16, netns: Option<String>) -> PyResult<u16> {
        let s = self.inner.as_mut().ok_or_else(|| PyRuntimeError::new_err("closed"))?;
        s.listen_reports(netns.as_deref().map(std::path::Path::new), port)
            .map_err(py_err)
    }

    /// Stops the agent, unregisters the shim, waits until the kernel no
    /// longer lists it; returns the final status (None if already closed).
    fn close<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some(mut s) = self.inner.take() else {
            return Ok(None);
        };
        let st = s.finish();
        drop(s);
        let gone = py.detach(|| {
            xrc_kernel::wait_registered(xrc_kernel::SHIM_NAME, false, std::time::Duration::from_secs(5))
                && xrc_kernel::wait_programs_gone(std::time::Duration::from_secs(10))
        });
        let st = st.map_err(py_err)?;
        let d = shim_status(py, &st)?;
        d.set_item("removed", gone)?;
        Ok(Some(d))
    }
}

/// The receiver's placeholder for the base station's option, attached
/// while this object is open.
#[pyclass(unsendable)]
pub struct KernelPlaceholder {
    inner: Option<xrc_kernel::Placeholder>,
}

#[pymethods]
impl KernelPlaceholder {
    #[new]
    fn new(py: Python<'_>, port_lo: u16, port_hi: u16) -> PyResult<Self> {
        if port_lo > port_hi {
            return Err(PyValueError::new_err(format!("ports: {port_lo} > {port_hi}")));
        }
        let p = py
            .detach(|| xrc_kernel::Placeholder::load(port_lo..=port_hi))
            .map_err(py_err)?;
        Ok(KernelPlaceholder { inner: Some(p) })
    }

    fn counters<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let p = self.inner.as_ref().ok_or_else(|| PyRuntimeError::new_err("closed"))?;
        let d = PyDict::new(py);
        for (n, v) in p.counters().map_err(py_err)? {
            d.set_item(n, v)?;
        }
        Ok(d)
    }

    fn close(&mut self, py: Python<'_>) -> bool {
        drop(self.inner.take());
        py.detach(|| xrc_kernel::wait_programs_gone(std::time::Duration::from_secs(10)))
    }
}

/// The BPF object's bytes (empty when built without clang).
#[pyfunction]
#[pyo3(signature = (name="xrc"))]
pub fn kernel_object<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyBytes>> {
    match name {
        "xrc" => Ok(PyBytes::new(py, xrc_kernel::XRC_OBJECT)),
        "shim" => Ok(PyBytes::new(py, xrc_kernel::SHIM_OBJECT)),
        _ => Err(PyValueError::new_err(format!("no BPF object {name:?} (xrc, shim)"))),
    }
}

/// The congestion controls the kernel lists.
#[pyfunction]
pub fn kernel_available() -> PyResult<Vec<String>> {
    xrc_kernel::available().map_err(py_err)
}

/// The BPF programs of xrc's the kernel holds (root).
#[pyfunction]
pub fn kernel_programs() -> Vec<String> {
    xrc_kernel::our_programs()
}

/// While this object is open, the kernel counts every BPF program's runs
/// and run time (`kernel_program_stats`).
#[pyclass(unsendable)]
pub struct KernelRunStats {
    inner: Option<xrc_kernel::RunStats>,
}

#[pymethods]
impl KernelRunStats {
    #[new]
    fn new() -> PyResult<Self> {
        let s = xrc_kernel::RunStats::enable().map_err(|e| PyRuntimeError::new_err(e.to_string()))?;
        Ok(KernelRunStats { inner: Some(s) })
    }
    fn close(&mut self) {
        self.inner.take();
    }
}

/// xrc's BPF programs: (name, runs, run time ns).
#[pyfunction]
pub fn kernel_program_stats() -> Vec<(String, u64, u64)> {
    xrc_kernel::our_program_stats()
}

/// The checks a machine must pass to load (raises ValueError saying what is missing).
#[pyfunction]
pub fn kernel_preflight() -> PyResult<()> {
    xrc_kernel::preflight(xrc_kernel::XRC_NAME).map_err(py_err)
}

/// The status of a load pinned by `xrc kernel load`, or None.
#[pyfunction]
pub fn kernel_pinned_status<'py>(py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
    match xrc_kernel::pinned_status().map_err(py_err)? {
        Some(s) => Ok(Some(status_dict(py, &s)?)),
        None => Ok(None),
    }
}

/// Removes a pinned load; returns whether there was one.
#[pyfunction]
pub fn kernel_unload(py: Python<'_>) -> PyResult<bool> {
    py.detach(xrc_kernel::unload_pinned).map_err(py_err)
}

/// Replays a trace file through the simulator's `xrc` with the parameters
/// the kernel ran with.
#[pyfunction]
pub fn kernel_replay<'py>(py: Python<'py>, trace_path: &str, params_json: &str) -> PyResult<Bound<'py, PyDict>> {
    let p = params(params_json)?;
    let bytes = std::fs::read(trace_path).map_err(|e| PyValueError::new_err(format!("{trace_path}: {e}")))?;
    let r = py.detach(|| xrc_kernel::replay::replay(&bytes, &p.cc));
    let d = PyDict::new(py);
    d.set_item("records", r.records)?;
    d.set_item("compared", r.compared)?;
    d.set_item("sockets", r.sockets)?;
    d.set_item("mismatches", r.mismatches)?;
    d.set_item("skipped", r.skipped)?;
    d.set_item("first", r.first)?;
    let h = PyDict::new(py);
    for (n, c) in r.by_hook {
        h.set_item(n, c)?;
    }
    d.set_item("by_hook", h)?;
    Ok(d)
}
