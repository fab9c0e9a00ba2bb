//! # xrc-kernel
//!
//! XRC's sender in the Linux kernel: a congestion control written as a BPF
//! struct_ops program (`bpf/xrc.bpf.c`, registered as `xrc`), the sock_ops
//! program that reads the base station's option from each ACK into the
//! socket, the loader that registers and removes them ([`Kernel`], and
//! pinned in bpffs by `xrc kernel load`), and the replay that feeds a trace
//! of the kernel's hook calls through the simulator's own sender
//! ([`replay`]).
//!
//! Layers, each using only those above it:
//! 1. [`abi`]: the structs the BPF programs and this crate share;
//! 2. `bpf`: a thin safe layer over libbpf (`libbpf-sys`, libbpf 1.7
//!    built from source: Debian 12's libbpf 1.1 cannot make struct_ops
//!    links);
//! 3. this module: the checks a machine must pass, loading, pinning,
//!    status and unloading;
//! 4. [`replay`]: the simulator's `cc::xrc` driven by a recorded trace.
//!
//! Why libbpf and not a pure-Rust loader: registering a struct_ops map
//! needs BTF of the running kernel, CO-RE relocation of every field access,
//! the struct_ops value layout and link creation; libbpf does all of it,
//! and `libbpf-sys` compiles it in about 7 s on this project's 2-core
//! machine (docs/kernel.md). The pure-Rust loader `aya` has no struct_ops
//! support.

pub mod abi;
mod bpf;
pub mod replay;
pub mod shim;

use std::fs;
use std::io::{self, BufWriter, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use xrc_core::transport::cc::xrc::{int, Config as XrcConfig};

/// The XRC congestion control's BPF object, as clang built it (empty when
/// clang was missing at build time).
pub const XRC_OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/xrc.bpf.o"));
/// The shim's BPF object (`bpf/shim.bpf.c`).
pub const SHIM_OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/shim.bpf.o"));
const CLANG_MISSING: &str = include_str!(concat!(env!("OUT_DIR"), "/clang_missing.txt"));
/// The name the shim registers under.
pub const SHIM_NAME: &str = "xrc_shim";
/// The receiver's placeholder (`bpf/placeholder.bpf.c`).
pub const PLACEHOLDER_OBJECT: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/placeholder.bpf.o"));
/// The placeholder's counters, in `placeholder_stats` order.
pub const PLACEHOLDER_COUNTERS: [&str; 4] = ["reserved", "written", "no_room", "write_failed"];

/// The name the congestion control registers under.
pub const XRC_NAME: &str = "xrc";
/// Where `xrc kernel load` pins it (bpffs).
pub const PIN_DIR: &str = "/sys/fs/bpf/xrc";
const BPFFS: &str = "/sys/fs/bpf";
const BPF_FS_MAGIC: i64 = 0xcafe_4a11;
const AVAILABLE: &str = "/proc/sys/net/ipv4/tcp_available_congestion_control";

/// Why loading, unloading or reading failed.
#[derive(Debug)]
pub enum Error {
    /// The machine or the input cannot do this (no root, no BTF, no
    /// struct_ops, built without clang, the name taken, bad parameters):
    /// the command exits with status 2.
    Refused(String),
    /// The kernel or libbpf failed unexpectedly.
    Failed(String),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Refused(m) | Error::Failed(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for Error {}

fn failed(what: &str, e: io::Error) -> Error {
    Error::Failed(format!("{what}: {e}"))
}

/// What the kernel sender runs with: the simulator's parameters of `xrc`
/// (`cc_params`), the bounds past which feedback is ignored, and whether
/// every hook call is traced.
#[derive(Clone, Debug)]
pub struct Params {
    pub cc: XrcConfig,
    /// Feedback above this rate is ignored and counted, kbit/s.
    pub max_rate_kbps: u64,
    /// Feedback with a HoL delay above this is ignored and counted, ns.
    pub max_hol_ns: u64,
    /// The keyed tag's key (SipHash-2-4, the key's bytes 0..8 and 8..16 as
    /// little-endian words): only tagged options whose tag checks and whose
    /// sequence number is new are taken. `None`: no tag required.
    pub tag_key: Option<(u64, u64)>,
    pub trace: bool,
}

/// A tag key from 32 hexadecimal digits (its 16 bytes), or `None`.
pub fn parse_tag_key(hex: &str) -> Option<(u64, u64)> {
    if hex.len() != 32 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let b: Vec<u8> = (0..16)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    Some((
        u64::from_le_bytes(b[..8].try_into().unwrap()),
        u64::from_le_bytes(b[8..].try_into().unwrap()),
    ))
}

impl Default for Params {
    fn default() -> Self {
        Params {
            cc: XrcConfig::default(),
            // 10 Gbit/s: above any LTE or NR cell's peak.
            max_rate_kbps: 10_000_000,
            // 1 s: an RLC queue that old is a dead link, not a queue.
            max_hol_ns: 1_000_000_000,
            tag_key: None,
            trace: false,
        }
    }
}

impl Params {
    /// The BPF configuration, after checking every value as the simulator
    /// does (naming the field).
    pub fn cfg(&self) -> Result<abi::Cfg, Error> {
        use xrc_core::transport::cc::CcConfig;
        self.cc
            .validate()
            .map_err(|e| Error::Refused(format!("cc_params: {e}")))?;
        if self.max_rate_kbps == 0 || self.max_rate_kbps > u32::MAX as u64 {
            return Err(Error::Refused(format!(
                "max_rate_kbps must be in [1, {}], got {}",
                u32::MAX,
                self.max_rate_kbps
            )));
        }
        if self.max_hol_ns == 0 {
            return Err(Error::Refused("max_hol_ms must be positive, got 0".into()));
        }
        let ns = |ms: f64| xrc_core::units::SimDuration::try_from_millis_f64(ms).map(|d| d.as_nanos());
        let bad = |n: &str, v: f64| Error::Refused(format!("{n} must be a duration in ms, got {v}"));
        Ok(abi::Cfg {
            budget_ns: ns(self.cc.budget_ms).ok_or_else(|| bad("budget_ms", self.cc.budget_ms))?,
            feedback_timeout_ns: ns(self.cc.feedback_timeout_ms)
                .ok_or_else(|| bad("feedback_timeout_ms", self.cc.feedback_timeout_ms))?,
            probe_fp: int::fp(self.cc.probe_segments),
            ramp_milli: int::milli(self.cc.ramp_rtts),
            unfair_gain_milli: int::milli(self.cc.unfair_gain),
            unfair_after_rtts: self.cc.unfair_after_rtts,
            trace: self.trace as u32,
            max_rate_kbps: self.max_rate_kbps,
            max_hol_ns: self.max_hol_ns,
            tag_k0: self.tag_key.map_or(0, |k| k.0),
            tag_k1: self.tag_key.map_or(0, |k| k.1),
            tag_on: self.tag_key.is_some() as u32,
            pad: 0,
        })
    }
}

/// The checks a machine must pass before anything is loaded; each failure
/// says what is missing.
///
/// `XRC_KERNEL_BTF` names another BTF file to read instead of the kernel's
/// (for tests of the refusals on a kernel without BTF or struct_ops).
pub fn preflight(name: &str) -> Result<(), Error> {
    check_object(XRC_OBJECT, CLANG_MISSING)?;
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(Error::Refused(
            "registering a kernel congestion control needs root (CAP_BPF and CAP_NET_ADMIN): run it as root".into(),
        ));
    }
    let btf =
        std::env::var_os("XRC_KERNEL_BTF").map_or_else(|| PathBuf::from("/sys/kernel/btf/vmlinux"), PathBuf::from);
    let btf = btf.as_path();
    let raw = fs::read(btf).map_err(|e| {
        Error::Refused(format!(
            "this kernel has no BTF ({}: {e}); BPF congestion controls need CONFIG_DEBUG_INFO_BTF",
            btf.display()
        ))
    })?;
    if !contains(&raw, b"bpf_struct_ops_tcp_congestion_ops") {
        return Err(Error::Refused(
            "this kernel cannot take a congestion control written in BPF (no struct_ops for tcp_congestion_ops \
             in its BTF; it needs Linux 5.6 or later with CONFIG_BPF_JIT)"
                .into(),
        ));
    }
    if available()?.iter().any(|n| n == name) {
        let ours = Path::new(PIN_DIR).join(format!("cc-{name}")).exists();
        return Err(Error::Refused(if ours {
            format!("{name} is already loaded (by `xrc kernel load`): `xrc kernel status` shows it, `xrc kernel unload` removes it")
        } else {
            format!(
                "a congestion control named {name} is already registered, not by `xrc kernel load` (a running \
                 `xrc emulate`, or a kernel module of that name): remove it first"
            )
        }));
    }
    Ok(())
}

/// The BPF object exists, or why not (clang was missing at build time).
fn check_object(obj: &[u8], clang_missing: &str) -> Result<(), Error> {
    if obj.is_empty() {
        return Err(Error::Refused(format!(
            "xrc was built without clang ({}), so it has no BPF congestion control: install clang \
             (`make setup` does, as root) and rebuild",
            clang_missing.trim()
        )));
    }
    Ok(())
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// The congestion controls the kernel has (tcp_available_congestion_control).
pub fn available() -> Result<Vec<String>, Error> {
    let s = fs::read_to_string(AVAILABLE).map_err(|e| failed(AVAILABLE, e))?;
    Ok(s.split_whitespace().map(str::to_owned).collect())
}

/// The BPF programs of this crate the kernel holds (names beginning with
/// `xrc_`), loaded by anyone: empty when nothing of xrc's is loaded.
pub fn our_programs() -> Vec<String> {
    let mut v: Vec<String> = bpf::program_names()
        .into_iter()
        .filter(|n| n.starts_with("xrc_"))
        .collect();
    v.sort();
    v
}

/// xrc's BPF programs with their runs and run time, ns (counted while a
/// [`RunStats`] lives).
pub fn our_program_stats() -> Vec<(String, u64, u64)> {
    let mut v: Vec<_> = bpf::program_infos()
        .into_iter()
        .filter(|(n, _, _)| n.starts_with("xrc_"))
        .collect();
    v.sort();
    v
}

pub use bpf::RunStats;

/// Waits up to `limit` for the kernel to free xrc's BPF programs (a
/// struct_ops map is freed after an RCU grace period, about 0.1 s after its
/// link goes); true when none is left.
pub fn wait_programs_gone(limit: Duration) -> bool {
    let t0 = Instant::now();
    while !our_programs().is_empty() {
        if t0.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

/// Waits up to `limit` for `name` to be (`present`) or not be registered:
/// a link's release, and so the unregistration, runs in a kernel work item
/// after its last reference is dropped.
pub fn wait_registered(name: &str, present: bool, limit: Duration) -> bool {
    let t0 = Instant::now();
    loop {
        if available().is_ok_and(|a| a.iter().any(|n| n == name) == present) {
            return true;
        }
        if t0.elapsed() > limit {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The root of the cgroup v2 hierarchy (from /proc/self/mounts).
fn cgroup2_root() -> Result<PathBuf, Error> {
    let m = fs::read_to_string("/proc/self/mounts").map_err(|e| failed("/proc/self/mounts", e))?;
    m.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() > 2 && f[2] == "cgroup2").then(|| PathBuf::from(f[1]))
        })
        .min_by_key(|p| p.as_os_str().len())
        .ok_or_else(|| {
            Error::Refused(
                "no cgroup v2 hierarchy is mounted: the option parser (sock_ops) attaches to one (mount -t cgroup2 none /sys/fs/cgroup)"
                    .into(),
            )
        })
}

fn open_dir(p: &Path) -> Result<OwnedFd, Error> {
    let f = fs::File::open(p).map_err(|e| failed(&format!("opening {}", p.display()), e))?;
    Ok(f.into())
}

/// What is loaded and what it counted.
#[derive(Clone, Debug, Default)]
pub struct Status {
    pub name: String,
    /// SHA-256 of the BPF object, hex, as the loader recorded it.
    pub object_sha256: String,
    /// When it was loaded, seconds since the epoch.
    pub loaded_at_s: u64,
    pub pinned: bool,
    pub cgroup: String,
    pub cfg: abi::Cfg,
    /// `abi::COUNTERS`, summed over every socket since loading.
    pub counters: Vec<(&'static str, u64)>,
    /// Sockets seen (at most the last 4,096), by 4-tuple.
    pub sockets: Vec<(abi::SockKey, abi::SockInfo)>,
}

/// `struct meta` of the pinned `meta` map: what `status` reports about a load.
#[repr(C)]
#[derive(Copy, Clone, Debug)]
struct Meta {
    sha256_hex: [u8; 64],
    loaded_at_s: u64,
    cgroup: [u8; 120],
}

impl Default for Meta {
    fn default() -> Self {
        Meta {
            sha256_hex: [0; 64],
            loaded_at_s: 0,
            cgroup: [0; 120],
        }
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(&b[..b.iter().position(|&c| c == 0).unwrap_or(b.len())]).into_owned()
}

fn fill(dst: &mut [u8], s: &str) {
    let n = s.len().min(dst.len());
    dst[..n].copy_from_slice(&s.as_bytes()[..n]);
}

/// Reads a status through the descriptors of the maps.
fn read_status(name: &str, pinned: bool, fds: &MapFds, meta: Option<Meta>) -> Status {
    let cfg = unsafe { bpf::lookup::<u32, abi::Cfg>(fds.cfg, &0) }.unwrap_or_default();
    let counters = abi::COUNTERS
        .iter()
        .enumerate()
        .map(|(i, n)| (*n, bpf::percpu_sum(fds.stats, i as u32)))
        .collect();
    // SAFETY: SockKey and SockInfo are the `xrc_socks` map's key and value.
    let mut sockets: Vec<_> = unsafe { bpf::keys::<abi::SockKey>(fds.socks) }
        .into_iter()
        .filter_map(|k| unsafe { bpf::lookup::<abi::SockKey, abi::SockInfo>(fds.socks, &k) }.map(|v| (k, v)))
        .collect();
    sockets.sort_by_key(|(k, v)| (v.updated_ns, k.sport, k.dport));
    let meta = meta.unwrap_or_default();
    Status {
        name: name.to_owned(),
        object_sha256: text(&meta.sha256_hex),
        loaded_at_s: meta.loaded_at_s,
        pinned,
        cgroup: text(&meta.cgroup),
        cfg,
        counters,
        sockets,
    }
}

struct MapFds {
    cfg: RawFd,
    stats: RawFd,
    socks: RawFd,
}

/// A loaded XRC congestion control with its option parser, registered while
/// this value lives (or, after [`Kernel::pin`], until `unload`).
pub struct Kernel {
    name: String,
    // Field order is drop order: the trace thread stops, the links go (the
    // congestion control is unregistered, the parser detached), then the
    // object closes.
    trace: Option<TraceThread>,
    cc: bpf::Link,
    sockops: bpf::Link,
    obj: bpf::Object,
    cgroup: PathBuf,
    meta: Meta,
}

impl Kernel {
    /// Checks the machine, loads the object, writes `params` into it,
    /// attaches the option parser to the root cgroup and registers the
    /// congestion control. `object_sha256` is recorded for `status`. With
    /// `trace_to`, every hook call is appended to that file (88-byte
    /// records, `abi::Trace`) until the value is dropped.
    pub fn load(params: &Params, object_sha256: &str, trace_to: Option<&Path>) -> Result<Kernel, Error> {
        let name = XRC_NAME;
        let cfg = params.cfg()?;
        preflight(name)?;
        let root = cgroup2_root()?;
        let obj = bpf::Object::open_load(name, XRC_OBJECT).map_err(|e| failed("loading the BPF object", e))?;
        let fd = obj.map_fd("xrc_cfg").map_err(|e| failed("xrc_cfg", e))?;
        // SAFETY: abi::Cfg is the xrc_cfg map's value.
        unsafe { bpf::update(fd, &0u32, &cfg) }.map_err(|e| failed("writing the configuration", e))?;
        let trace = match trace_to {
            Some(p) => Some(TraceThread::start(
                obj.map_fd("xrc_events").map_err(|e| failed("xrc_events", e))?,
                p,
            )?),
            None => None,
        };
        let cg = open_dir(&root)?;
        let sockops = obj
            .attach_cgroup("xrc_sockops", &cg)
            .map_err(|e| failed(&format!("attaching the option parser to {}", root.display()), e))?;
        let cc = obj
            .attach_struct_ops(name)
            .map_err(|e| failed(&format!("registering {name}"), e))?;
        let mut meta = Meta {
            loaded_at_s: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            ..Meta::default()
        };
        fill(&mut meta.sha256_hex, object_sha256);
        fill(&mut meta.cgroup, &root.to_string_lossy());
        Ok(Kernel {
            name: name.to_owned(),
            trace,
            cc,
            sockops,
            obj,
            cgroup: root,
            meta,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Stops the trace (after a last drain of the ring buffer) and says
    /// whether every record reached the file.
    pub fn finish_trace(&mut self) -> Result<(), Error> {
        match self.trace.take() {
            Some(mut t) => t.finish(),
            None => Ok(()),
        }
    }

    pub fn cgroup(&self) -> &Path {
        &self.cgroup
    }

    fn fds(&self) -> Result<MapFds, Error> {
        let f = |n: &str| self.obj.map_fd(n).map_err(|e| failed(n, e));
        Ok(MapFds {
            cfg: f("xrc_cfg")?,
            stats: f("xrc_stats")?,
            socks: f("xrc_socks")?,
        })
    }

    /// What it has counted so far.
    pub fn status(&self) -> Result<Status, Error> {
        Ok(read_status(&self.name, false, &self.fds()?, Some(self.meta)))
    }

    /// Pins the registration, the option parser and the maps under
    /// [`PIN_DIR`] so that they outlive this process (`xrc kernel load`),
    /// mounting bpffs at /sys/fs/bpf first if it is not mounted. On error
    /// nothing stays pinned.
    pub fn pin(mut self) -> Result<PathBuf, Error> {
        if self.trace.is_some() {
            return Err(Error::Refused(
                "a traced load cannot be pinned (nothing would read its trace)".into(),
            ));
        }
        ensure_bpffs()?;
        let dir = PathBuf::from(PIN_DIR);
        if dir.exists() {
            return Err(Error::Refused(format!(
                "{} exists: a load is already pinned (`xrc kernel unload` removes it)",
                dir.display()
            )));
        }
        fs::create_dir(&dir).map_err(|e| failed(&format!("creating {}", dir.display()), e))?;
        let result = (|| -> Result<(), Error> {
            for m in ["xrc_cfg", "xrc_stats", "xrc_socks"] {
                self.obj.pin_map(m, &dir.join(m)).map_err(|e| failed(m, e))?;
            }
            pin_meta(&dir.join("meta"), &self.meta)?;
            self.sockops
                .pin(&dir.join("sockops"))
                .map_err(|e| failed("sockops", e))?;
            self.cc
                .pin(&dir.join(format!("cc-{}", self.name)))
                .map_err(|e| failed("cc", e))?;
            Ok(())
        })();
        if let Err(e) = result {
            remove_pins(&dir);
            return Err(e);
        }
        self.sockops.disconnect();
        self.cc.disconnect();
        Ok(dir)
    }
}

/// The shim loaded, with its agent running the core's congestion controls
/// for the sockets that use it ([`shim`]); registered while this value
/// lives.
pub struct Shim {
    // Drop order: the report listener and the agent stop, the links go,
    // the object closes.
    reports: Option<ReportThread>,
    agent: Option<AgentThread>,
    _cc: bpf::Link,
    _sockops: bpf::Link,
    obj: bpf::Object,
}

struct AgentThread {
    stop: Arc<AtomicBool>,
    agent: Arc<Mutex<Option<shim::Agent>>>,
    handle: Option<JoinHandle<io::Result<()>>>,
    /// The thread's `SCHED_FIFO` priority once it got it, else 0.
    fifo: Arc<std::sync::atomic::AtomicI32>,
}

/// What the shim did: the agent's report and the BPF side's counters.
#[derive(Clone, Debug, Default)]
pub struct ShimStatus {
    pub counters: Vec<(&'static str, u64)>,
    pub agent: shim::AgentReport,
    /// The agent thread's `SCHED_FIFO` priority ([`AGENT_FIFO_PRIORITY`]),
    /// or `None` where the system refused it (not root) and it runs as an
    /// ordinary thread.
    pub agent_fifo_priority: Option<i32>,
}

/// The shim's agent thread asks for `SCHED_FIFO` at this priority: each ACK
/// waits for its decision, so a busy host must not delay the agent behind
/// ordinary processes. Below the emulator's loop (50), which keeps the
/// cell's time; the agent blocks in `epoll` between events, so it never
/// nears the real-time throttling budget.
pub const AGENT_FIFO_PRIORITY: i32 = 40;

impl Shim {
    /// Checks the machine, loads the shim, attaches its option parser,
    /// registers `xrc_shim` and starts the agent with `rules`. The feedback
    /// bounds of `params` apply to the option parser.
    pub fn load(params: &Params, rules: Vec<shim::Rule>) -> Result<Shim, Error> {
        for r in &rules {
            xrc_core::transport::cc::registry::build(&r.scheme, &r.params)
                .map_err(|e| Error::Refused(format!("{}: {e}", r.scheme)))?;
        }
        let cfg = params.cfg()?;
        check_object(SHIM_OBJECT, CLANG_MISSING)?;
        preflight(SHIM_NAME)?;
        let root = cgroup2_root()?;
        let obj = bpf::Object::open_load(SHIM_NAME, SHIM_OBJECT).map_err(|e| failed("loading the shim", e))?;
        let fd = obj.map_fd("shim_cfg").map_err(|e| failed("shim_cfg", e))?;
        // SAFETY: abi::Cfg is the shim_cfg map's value.
        unsafe { bpf::update(fd, &0u32, &cfg) }.map_err(|e| failed("writing the configuration", e))?;
        let decisions = obj.map_fd("shim_decisions").map_err(|e| failed("shim_decisions", e))?;
        let events = obj.map_fd("shim_events").map_err(|e| failed("shim_events", e))?;
        let agent = AgentThread::start(events, shim::Agent::new(rules, decisions))?;
        let cg = open_dir(&root)?;
        let sockops = obj
            .attach_cgroup("xrc_shim_sockops", &cg)
            .map_err(|e| failed(&format!("attaching the shim's option parser to {}", root.display()), e))?;
        let cc = obj
            .attach_struct_ops(SHIM_NAME)
            .map_err(|e| failed(&format!("registering {SHIM_NAME}"), e))?;
        Ok(Shim {
            reports: None,
            agent: Some(agent),
            _cc: cc,
            _sockops: sockops,
            obj,
        })
    }

    /// The BPF side's counters and what the agent has done so far.
    pub fn status(&self) -> Result<ShimStatus, Error> {
        let fd = self.obj.map_fd("shim_stats").map_err(|e| failed("shim_stats", e))?;
        let counters = abi::SHIM_COUNTERS
            .iter()
            .enumerate()
            .map(|(i, n)| (*n, bpf::percpu_sum(fd, i as u32)))
            .collect();
        let (agent, fifo) = match &self.agent {
            Some(a) => (a.snapshot(), a.fifo.load(Ordering::Acquire)),
            None => (shim::AgentReport::default(), 0),
        };
        Ok(ShimStatus {
            counters,
            agent,
            agent_fifo_priority: (fifo > 0).then_some(fifo),
        })
    }

    /// Listens for NetAssist reports (`wire::NetAssistDatagram`) on UDP
    /// `port` of every address, in the network namespace `netns` (a file
    /// such as `/run/netns/NAME`; `None`: this process's), and hands each to
    /// the agent ([`shim::Agent::on_report`]) until the shim finishes.
    /// Returns the port bound (`port` 0: one the system chose).
    pub fn listen_reports(&mut self, netns: Option<&Path>, port: u16) -> Result<u16, Error> {
        if self.reports.is_some() {
            return Err(Error::Refused("the shim already listens for reports".into()));
        }
        let agent = match &self.agent {
            Some(a) => a.agent.clone(),
            None => return Err(Error::Refused("the shim's agent has stopped".into())),
        };
        self.reports = Some(ReportThread::start(netns, port, agent)?);
        Ok(self.reports.as_ref().map_or(0, |r| r.port))
    }

    /// Stops the agent (after a last drain of the events) and returns the
    /// final status; the shim stays registered until the value is dropped.
    pub fn finish(&mut self) -> Result<ShimStatus, Error> {
        if let Some(mut r) = self.reports.take() {
            r.stop();
        }
        let mut st = self.status()?;
        if let Some(mut a) = self.agent.take() {
            st.agent = a.finish()?;
        }
        Ok(st)
    }
}

impl AgentThread {
    fn start(events_fd: RawFd, agent: shim::Agent) -> Result<AgentThread, Error> {
        let agent = Arc::new(Mutex::new(Some(agent)));
        let a = agent.clone();
        let mut rb = bpf::RingBuf::new(
            events_fd,
            Box::new(move |rec: &[u8]| {
                if let Ok(mut g) = a.lock() {
                    if let Some(ag) = g.as_mut() {
                        ag.on_event(rec);
                    }
                }
            }),
        )
        .map_err(|e| failed("the shim's ring buffer", e))?;
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let fifo = Arc::new(std::sync::atomic::AtomicI32::new(0));
        let f = fifo.clone();
        let handle = std::thread::Builder::new()
            .name("xrc-shim-agent".into())
            .spawn(move || -> io::Result<()> {
                let param = libc::sched_param {
                    sched_priority: AGENT_FIFO_PRIORITY,
                };
                // SAFETY: `param` is a valid sched_param; 0 = this thread.
                // A refusal (not root) leaves it an ordinary thread.
                if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } == 0 {
                    f.store(AGENT_FIFO_PRIORITY, Ordering::Release);
                }
                loop {
                    let last = s.load(Ordering::Acquire);
                    rb.poll(20)?;
                    if last {
                        return Ok(());
                    }
                }
            })
            .map_err(|e| failed("starting the shim's agent", e))?;
        Ok(AgentThread {
            stop,
            agent,
            handle: Some(handle),
            fifo,
        })
    }

    fn snapshot(&self) -> shim::AgentReport {
        let mut r = self
            .agent
            .lock()
            .ok()
            .and_then(|g| g.as_ref().map(|a| a.report.clone()))
            .unwrap_or_default();
        r.lag_ns.sort_unstable();
        r
    }

    fn finish(&mut self) -> Result<shim::AgentReport, Error> {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = self.handle.take() {
            match h.join() {
                Ok(r) => r.map_err(|e| failed("the shim's agent", e))?,
                Err(_) => return Err(Error::Failed("the shim's agent panicked".into())),
            }
        }
        let a = self
            .agent
            .lock()
            .map_err(|_| Error::Failed("the shim's agent panicked".into()))?
            .take();
        Ok(a.map(shim::Agent::finish).unwrap_or_default())
    }
}

impl Drop for AgentThread {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

/// The thread that reads NetAssist reports from a UDP socket and hands
/// them to the shim's agent.
struct ReportThread {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
    port: u16,
}

impl ReportThread {
    fn start(netns: Option<&Path>, port: u16, agent: Arc<Mutex<Option<shim::Agent>>>) -> Result<ReportThread, Error> {
        let ns = match netns {
            Some(p) => {
                Some(fs::File::open(p).map_err(|e| Error::Refused(format!("network namespace {}: {e}", p.display())))?)
            }
            None => None,
        };
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let (tx, rx) = std::sync::mpsc::channel::<Result<u16, Error>>();
        let handle = std::thread::Builder::new()
            .name("xrc-shim-reports".into())
            .spawn(move || {
                // This thread enters the namespace for good: the socket is
                // created there and the thread only ever reads it.
                if let Some(f) = &ns {
                    // SAFETY: setns on an open namespace file; affects only
                    // this thread.
                    if unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                        let _ = tx.send(Err(failed(
                            "entering the network namespace",
                            io::Error::last_os_error(),
                        )));
                        return;
                    }
                }
                let sock = match std::net::UdpSocket::bind(("0.0.0.0", port)) {
                    Ok(s) => s,
                    Err(e) => {
                        let _ = tx.send(Err(Error::Refused(format!("UDP port {port} for reports: {e}"))));
                        return;
                    }
                };
                let bound = sock.local_addr().map(|a| a.port()).unwrap_or(port);
                if let Err(e) = sock.set_read_timeout(Some(Duration::from_millis(50))) {
                    let _ = tx.send(Err(failed("the report socket", e)));
                    return;
                }
                let _ = tx.send(Ok(bound));
                let mut buf = [0u8; 512];
                while !s.load(Ordering::Acquire) {
                    let n = match sock.recv(&mut buf) {
                        Ok(n) => n,
                        Err(_) => continue, // the timeout: look at `stop` again
                    };
                    let now = shim::monotonic_ns();
                    let Ok(mut g) = agent.lock() else { return };
                    let Some(a) = g.as_mut() else { return };
                    match xrc_core::net::wire::NetAssistDatagram::parse(&buf[..n]) {
                        Ok(d) => {
                            let key = abi::SockKey {
                                saddr: u32::from_ne_bytes(d.sender.0),
                                daddr: u32::from_ne_bytes(d.receiver.0),
                                sport: d.sender.1,
                                dport: d.receiver.1,
                                pad: 0,
                            };
                            let fb = xrc_core::transport::cc::Feedback::NetAssist {
                                bw_bps: d.bw_bps,
                                min_rtt: xrc_core::units::SimDuration::from_micros(d.min_rtt_us as u64),
                                flows: d.flows as u32,
                            };
                            a.on_report(now, key, fb);
                        }
                        Err(why) => a.on_malformed_report(format!("{n}-byte datagram: {why}")),
                    }
                }
            })
            .map_err(|e| failed("starting the report listener", e))?;
        match rx.recv() {
            Ok(Ok(port)) => Ok(ReportThread {
                stop,
                handle: Some(handle),
                port,
            }),
            Ok(Err(e)) => {
                let _ = handle.join();
                Err(e)
            }
            Err(_) => {
                let _ = handle.join();
                Err(Error::Failed("the report listener ended before it started".into()))
            }
        }
    }

    fn stop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for ReportThread {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The receiver's placeholder: every pure ACK of the sockets whose local
/// port is in `ports` carries the option, empty, for the base station to
/// fill in place. Attached while this value lives.
pub struct Placeholder {
    _link: bpf::Link,
    obj: bpf::Object,
}

impl Placeholder {
    pub fn load(ports: std::ops::RangeInclusive<u16>) -> Result<Placeholder, Error> {
        check_object(PLACEHOLDER_OBJECT, CLANG_MISSING)?;
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err(Error::Refused(
                "attaching the receiver's placeholder needs root: run it as root".into(),
            ));
        }
        let root = cgroup2_root()?;
        let obj = bpf::Object::open_load("xrc_placeholder", PLACEHOLDER_OBJECT)
            .map_err(|e| failed("loading the placeholder", e))?;
        let fd = obj
            .map_fd("placeholder_cfg")
            .map_err(|e| failed("placeholder_cfg", e))?;
        let cfg: [u32; 2] = [*ports.start() as u32, *ports.end() as u32];
        // SAFETY: two u32 are the map's value (struct placeholder_cfg).
        unsafe { bpf::update(fd, &0u32, &cfg) }.map_err(|e| failed("writing the placeholder's ports", e))?;
        let cg = open_dir(&root)?;
        let link = obj
            .attach_cgroup("xrc_placeholder", &cg)
            .map_err(|e| failed(&format!("attaching the placeholder to {}", root.display()), e))?;
        Ok(Placeholder { _link: link, obj })
    }

    /// What it did: reserved, written, no room, write failed.
    pub fn counters(&self) -> Result<Vec<(&'static str, u64)>, Error> {
        let fd = self
            .obj
            .map_fd("placeholder_stats")
            .map_err(|e| failed("placeholder_stats", e))?;
        Ok(PLACEHOLDER_COUNTERS
            .iter()
            .enumerate()
            .map(|(i, n)| (*n, bpf::percpu_sum(fd, i as u32)))
            .collect())
    }
}

fn ensure_bpffs() -> Result<(), Error> {
    // SAFETY: statfs writes into the zeroed struct; the path is NUL-terminated.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    let p = std::ffi::CString::new(BPFFS).unwrap();
    let rc = unsafe { libc::statfs(p.as_ptr(), &mut st) };
    if rc == 0 && st.f_type as i64 == BPF_FS_MAGIC {
        return Ok(());
    }
    fs::create_dir_all(BPFFS).map_err(|e| failed(&format!("creating {BPFFS}"), e))?;
    let fstype = std::ffi::CString::new("bpf").unwrap();
    // SAFETY: valid NUL-terminated strings; no data argument.
    let rc = unsafe { libc::mount(fstype.as_ptr(), p.as_ptr(), fstype.as_ptr(), 0, std::ptr::null()) };
    if rc != 0 {
        return Err(failed(
            &format!("mounting bpffs at {BPFFS}"),
            io::Error::last_os_error(),
        ));
    }
    Ok(())
}

fn pin_meta(path: &Path, meta: &Meta) -> Result<(), Error> {
    let name = std::ffi::CString::new("xrc_meta").unwrap();
    // SAFETY: creating an array map with the sizes of Meta; no options.
    let fd = unsafe {
        libbpf_sys::bpf_map_create(
            libbpf_sys::BPF_MAP_TYPE_ARRAY,
            name.as_ptr(),
            4,
            std::mem::size_of::<Meta>() as u32,
            1,
            std::ptr::null(),
        )
    };
    if fd < 0 {
        return Err(failed("creating the meta map", io::Error::from_raw_os_error(-fd)));
    }
    // SAFETY: the descriptor is new and ours.
    let fd = unsafe { <OwnedFd as std::os::fd::FromRawFd>::from_raw_fd(fd) };
    // SAFETY: Meta is the map's value type.
    unsafe { bpf::update(fd.as_raw_fd(), &0u32, meta) }.map_err(|e| failed("writing meta", e))?;
    let p = std::ffi::CString::new(path.to_string_lossy().as_bytes()).unwrap();
    // SAFETY: valid descriptor and path.
    let rc = unsafe { libbpf_sys::bpf_obj_pin(fd.as_raw_fd(), p.as_ptr()) };
    if rc != 0 {
        return Err(failed("pinning meta", io::Error::from_raw_os_error(-rc)));
    }
    Ok(())
}

fn remove_pins(dir: &Path) {
    // The registration first, so nothing new picks it up, then the parser.
    if let Ok(rd) = fs::read_dir(dir) {
        let mut files: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
        files.sort_by_key(|p| !p.file_name().is_some_and(|n| n.to_string_lossy().starts_with("cc-")));
        for f in files {
            let _ = fs::remove_file(f);
        }
    }
    let _ = fs::remove_dir(dir);
}

/// The status of a load pinned by `xrc kernel load`, if there is one.
pub fn pinned_status() -> Result<Option<Status>, Error> {
    let dir = Path::new(PIN_DIR);
    let cc = dir.join(format!("cc-{XRC_NAME}"));
    if !cc.exists() {
        return Ok(None);
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(Error::Refused(
            "reading the kernel's counters needs root: run it as root".into(),
        ));
    }
    let get = |n: &str| bpf::obj_get(&dir.join(n)).map_err(|e| failed(n, e));
    let (cfg, stats, socks, meta) = (get("xrc_cfg")?, get("xrc_stats")?, get("xrc_socks")?, get("meta")?);
    let fds = MapFds {
        cfg: cfg.as_raw_fd(),
        stats: stats.as_raw_fd(),
        socks: socks.as_raw_fd(),
    };
    // SAFETY: Meta is the meta map's value.
    let m = unsafe { bpf::lookup::<u32, Meta>(meta.as_raw_fd(), &0) };
    Ok(Some(read_status(XRC_NAME, true, &fds, m)))
}

/// Removes a pinned load: the congestion control is unregistered and the
/// option parser detached. Returns whether there was one. Sockets still
/// using it keep it until they close.
pub fn unload_pinned() -> Result<bool, Error> {
    let dir = Path::new(PIN_DIR);
    if !dir.exists() {
        return Ok(false);
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err(Error::Refused(
            "unloading a kernel congestion control needs root: run it as root".into(),
        ));
    }
    remove_pins(dir);
    if dir.exists() {
        return Err(Error::Failed(format!("{} could not be removed", dir.display())));
    }
    if !wait_registered(XRC_NAME, false, Duration::from_secs(5)) {
        return Err(Error::Failed(format!(
            "{XRC_NAME} is still registered 5 s after its pins were removed (a process holds its link?)"
        )));
    }
    if !wait_programs_gone(Duration::from_secs(10)) {
        return Err(Error::Failed(format!(
            "xrc's BPF programs ({}) are still loaded 10 s after unloading (a socket still uses xrc, or another \
             process loaded them)",
            our_programs().join(", ")
        )));
    }
    Ok(true)
}

/// Appends the ring buffer's trace records to a file from its own thread.
struct TraceThread {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<io::Result<()>>>,
}

impl TraceThread {
    fn start(map_fd: RawFd, path: &Path) -> Result<TraceThread, Error> {
        let file = fs::File::create(path).map_err(|e| failed(&format!("creating {}", path.display()), e))?;
        let out = Arc::new(Mutex::new(BufWriter::with_capacity(1 << 20, file)));
        let failed_write = Arc::new(AtomicBool::new(false));
        let (w, f) = (out.clone(), failed_write.clone());
        let mut rb = bpf::RingBuf::new(
            map_fd,
            Box::new(move |rec: &[u8]| {
                if w.lock().map(|mut o| o.write_all(rec)).is_err() {
                    f.store(true, Ordering::Relaxed);
                }
            }),
        )
        .map_err(|e| failed("the trace ring buffer", e))?;
        let stop = Arc::new(AtomicBool::new(false));
        let s = stop.clone();
        let handle = std::thread::Builder::new()
            .name("xrc-kernel-trace".into())
            .spawn(move || -> io::Result<()> {
                loop {
                    // One last drain after the stop request.
                    let last = s.load(Ordering::Acquire);
                    rb.poll(50)?;
                    if last {
                        break;
                    }
                }
                drop(rb);
                let mut o = out.lock().map_err(|_| io::Error::other("trace writer poisoned"))?;
                o.flush()?;
                if failed_write.load(Ordering::Relaxed) {
                    return Err(io::Error::other("a trace record could not be written"));
                }
                Ok(())
            })
            .map_err(|e| failed("starting the trace thread", e))?;
        Ok(TraceThread {
            stop,
            handle: Some(handle),
        })
    }
}

impl TraceThread {
    fn finish(&mut self) -> Result<(), Error> {
        self.stop.store(true, Ordering::Release);
        match self.handle.take() {
            Some(h) => match h.join() {
                Ok(r) => r.map_err(|e| failed("writing the kernel trace", e)),
                Err(_) => Err(Error::Failed("the kernel trace's thread panicked".into())),
            },
            None => Ok(()),
        }
    }
}

impl Drop for TraceThread {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_build_without_clang_is_refused_saying_to_install_clang() {
        let e = check_object(&[], "clang: No such file or directory").unwrap_err();
        assert!(matches!(e, Error::Refused(_)));
        let m = e.to_string();
        assert!(m.contains("without clang") && m.contains("install clang"), "{m}");
        assert!(check_object(XRC_OBJECT, CLANG_MISSING).is_ok() || XRC_OBJECT.is_empty());
    }

    #[test]
    fn parameters_out_of_range_are_refused_naming_them() {
        let mut p = Params::default();
        p.cc.budget_ms = f64::NAN;
        assert!(p.cfg().unwrap_err().to_string().contains("budget_ms"));
        let p = Params {
            max_rate_kbps: 0,
            ..Params::default()
        };
        assert!(p.cfg().unwrap_err().to_string().contains("max_rate_kbps"));
        let c = Params::default().cfg().unwrap();
        assert_eq!((c.budget_ns, c.probe_fp, c.ramp_milli), (10_000_000, 1 << 20, 2000));
    }
}
