//! The resolved scenario: every value explicit, no defaults applied here.
//!
//! Users write TOML scenarios; the Python front end validates them against
//! its schema, fills in defaults, and hands this structure over as JSON.
//! Unknown keys are rejected, so the two sides cannot drift silently, and
//! [`ScenarioConfig::validate`] re-checks every value so the core never
//! runs on an impossible configuration whatever its caller.

use serde::{Deserialize, Serialize};

use crate::ran::agent::AgentConfig;
use crate::ran::cell::CellConfig;
use crate::ran::channel::ChannelConfig;
pub use crate::traffic::Traffic;
use crate::transport::{ReceiverConfig, TcpConfig};
use crate::units::{check_range, MAX_ONE_WAY_DELAY_MS, MAX_RATE_MBPS, MAX_SPAN_MS, MAX_SPAN_S, MIN_RATE_MBPS};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ScenarioConfig {
    #[serde(default = "default_name")]
    pub name: String,
    /// Free text shown in reports.
    #[serde(default)]
    pub description: String,
    /// The master seed; every random stream derives from it. Required.
    pub seed: u64,
    pub duration_s: f64,
    pub topology: Topology,
    #[serde(default)]
    pub internet: InternetConfig,
    /// The LTE cell (topology "cellular"; defaults apply when absent).
    #[serde(default)]
    pub cell: Option<CellConfig>,
    /// One entry per UE (topology "cellular").
    #[serde(default)]
    pub ues: Vec<UeConfig>,
    /// The trace-driven link (topology "trace").
    #[serde(default)]
    pub trace: Option<TraceConfig>,
    pub flows: Vec<FlowConfig>,
    #[serde(default)]
    pub output: OutputConfig,
}

fn default_name() -> String {
    "scenario".into()
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Topology {
    /// Senders → Internet path → LTE base station → UEs.
    Cellular,
    /// Senders → one bottleneck link → receivers (validation against other
    /// simulators).
    Wired,
    /// Senders → Internet path → a Mahimahi trace link → one UE.
    Trace,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct InternetConfig {
    /// Forward (toward the UEs) rate, Mbit/s; `None` = not a bottleneck.
    pub rate_mbps: Option<f64>,
    /// One-way propagation delay each way, ms.
    pub delay_ms: f64,
    pub buffer_packets: Option<u32>,
    pub buffer_bytes: Option<u64>,
    /// Reverse (ACK) rate, Mbit/s; `None` = unconstrained.
    pub reverse_rate_mbps: Option<f64>,
}

impl Default for InternetConfig {
    fn default() -> Self {
        InternetConfig {
            rate_mbps: None,
            delay_ms: 15.0,
            buffer_packets: Some(1000),
            buffer_bytes: None,
            reverse_rate_mbps: None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct UeConfig {
    pub channel: ChannelConfig,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct TraceConfig {
    /// Path of the Mahimahi downlink trace (the data direction).
    pub downlink: String,
    /// The downlink queue's packet limit (Mahimahi's `packets=`).
    #[serde(default)]
    pub buffer_packets: Option<u32>,
    /// Per-user buffer, bytes as Mahimahi counts them (IP bytes + 4 per
    /// packet, its `bytes=`; NATCP's trace study: 150 KB).
    #[serde(default = "default_trace_buffer")]
    pub buffer_bytes: Option<u64>,
    /// Path of a Mahimahi uplink trace the ACKs cross (`mm-link UP DOWN`);
    /// `None`: a fixed delay, `uplink_delay_ms`.
    #[serde(default)]
    pub uplink: Option<String>,
    /// The uplink queue's packet limit; `None` with `uplink_buffer_bytes`
    /// `None` is Mahimahi's default `infinite` queue.
    #[serde(default)]
    pub uplink_buffer_packets: Option<u32>,
    /// The uplink queue's byte limit (IP bytes + 4 per packet).
    #[serde(default)]
    pub uplink_buffer_bytes: Option<u64>,
    /// One-way delay of the uplink (ACK) path from the UE to the base
    /// station, ms, when there is no uplink trace.
    #[serde(default)]
    pub uplink_delay_ms: f64,
    /// The agent: `window_ttis` is the averaging window in ms here.
    #[serde(default)]
    pub agent: AgentConfig,
    /// ABC's marking at the link's queue.
    #[serde(default)]
    pub abc: crate::ran::abc::AbcConfig,
}

fn default_trace_buffer() -> Option<u64> {
    Some(150_000)
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct FlowConfig {
    /// Name in outputs; `f<index>` when empty.
    #[serde(default)]
    pub id: String,
    /// The UE receiving the flow (`None` in the wired topology).
    #[serde(default)]
    pub ue: Option<u32>,
    pub cc: String,
    /// The algorithm's parameters (resolved, defaults filled in).
    #[serde(default)]
    pub cc_params: serde_json::Value,
    #[serde(default)]
    pub start_s: f64,
    /// The application stops writing at this time (`None`: never).
    #[serde(default)]
    pub stop_s: Option<f64>,
    /// Extra round-trip propagation delay for this flow only, ms (half each way).
    #[serde(default)]
    pub extra_rtt_ms: f64,
    #[serde(default)]
    pub traffic: Traffic,
    #[serde(default)]
    pub tcp: TcpConfig,
    #[serde(default)]
    pub receiver: ReceiverConfig,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct OutputConfig {
    /// Bin width of throughput series, ms.
    pub bin_ms: f64,
    /// Record RLC state every this many TTIs.
    pub rlc_sample_ttis: u32,
    pub cwnd_trace: bool,
    pub rtt_trace: bool,
    /// Record every packet's delay in the bottleneck queue.
    pub queue_delay_trace: bool,
    /// Write a pcap file of what a tap at each flow's sender and at its UE
    /// sees (`pcap/flow{k}-sender.pcap`, `pcap/flow{k}-ue.pcap` in the run
    /// directory; headers only, simulated time): `docs/outputs.md`.
    pub pcap: bool,
}

impl Default for OutputConfig {
    fn default() -> Self {
        OutputConfig {
            bin_ms: 100.0,
            rlc_sample_ttis: 1,
            cwnd_trace: true,
            rtt_trace: true,
            queue_delay_trace: true,
            pcap: false,
        }
    }
}

/// At most this many UEs: a macro cell serves a few hundred connected UEs,
/// and every UE is a per-TTI cost.
pub const MAX_UES: usize = 1000;
/// At most this many flows (each is a TCP sender and receiver).
pub const MAX_FLOWS: usize = 10_000;
/// At most this many rows in each per-bin table (per flow and per UE): the
/// front end keeps them in memory for the summary and the plots, so 5·10^7
/// rows is about 1.5 GB.
pub const MAX_SERIES_ROWS: f64 = 5e7;
/// At most this many rows in the per-TTI RLC table. `xrc run` streams it to
/// disk as it is recorded (a run holds only the rows since the last take,
/// [`crate::metrics::Recorder::clear_rows`]), so the bound is disk and time:
/// 10^9 rows (1,000 UEs sampled every TTI for 1,000 s) is about 3 GB of
/// Parquet. A caller that holds every row in memory checks its own bound
/// (the Python front end's in-memory runs: 5·10^7 rows).
pub const MAX_SAMPLED_ROWS: f64 = 1e9;

impl InternetConfig {
    pub fn validate(&self) -> Result<(), String> {
        if let Some(r) = self.rate_mbps {
            check_range("rate_mbps", r, MIN_RATE_MBPS, MAX_RATE_MBPS)?;
        }
        if let Some(r) = self.reverse_rate_mbps {
            check_range("reverse_rate_mbps", r, MIN_RATE_MBPS, MAX_RATE_MBPS)?;
        }
        check_range("delay_ms", self.delay_ms, 0.0, MAX_ONE_WAY_DELAY_MS)?;
        if self.buffer_packets == Some(0) {
            return Err("buffer_packets must be at least 1, got 0".into());
        }
        Ok(())
    }
}

/// The largest ACK that can wait in the uplink trace's queue, as Mahimahi
/// counts it: headers, three SACK blocks, the PBE report the UE writes,
/// and the TUN header (the XRC option is written after the queue).
pub const LARGEST_UPLINK_ACK_BYTES: u64 = (crate::net::packet::TCP_IP_HEADER_BYTES
    + 4
    + 8 * crate::net::packet::MAX_SACK_BLOCKS as u32
    + crate::net::packet::PBE_OPTION_BYTES
    + crate::ran::trace_link::TUN_HEADER_BYTES) as u64;

impl TraceConfig {
    /// Checks the section on its own (the downlink buffer against the
    /// flows' packets is checked by [`ScenarioConfig::validate`]).
    pub fn validate(&self) -> Result<(), String> {
        check_range("uplink_delay_ms", self.uplink_delay_ms, 0.0, MAX_ONE_WAY_DELAY_MS)?;
        for (name, v) in [
            ("buffer_packets", self.buffer_packets.map(u64::from)),
            ("buffer_bytes", self.buffer_bytes),
            ("uplink_buffer_packets", self.uplink_buffer_packets.map(u64::from)),
            ("uplink_buffer_bytes", self.uplink_buffer_bytes),
        ] {
            if v == Some(0) {
                return Err(format!("{name} must be at least 1, got 0"));
            }
        }
        match &self.uplink {
            Some(path) => {
                if path.is_empty() {
                    return Err("uplink: empty path (omit the field for a fixed-delay uplink)".into());
                }
                if self.uplink_delay_ms > 0.0 {
                    return Err(format!(
                        "uplink_delay_ms ({}) cannot be combined with trace.uplink: the ACKs' delay is the \
                         uplink trace's queue (give propagation delay in internet.delay_ms)",
                        self.uplink_delay_ms
                    ));
                }
                if let Some(b) = self.uplink_buffer_bytes.filter(|&b| b < LARGEST_UPLINK_ACK_BYTES) {
                    return Err(format!(
                        "uplink_buffer_bytes ({b}) cannot hold one ACK with its options ({LARGEST_UPLINK_ACK_BYTES} \
                         bytes as Mahimahi counts them, TUN header included); give at least \
                         {LARGEST_UPLINK_ACK_BYTES}"
                    ));
                }
            }
            None => {
                if let Some((name, _)) = [
                    ("uplink_buffer_packets", self.uplink_buffer_packets.map(u64::from)),
                    ("uplink_buffer_bytes", self.uplink_buffer_bytes),
                ]
                .into_iter()
                .find(|(_, v)| v.is_some())
                {
                    return Err(format!(
                        "{name} needs trace.uplink (the uplink trace whose queue it limits)"
                    ));
                }
            }
        }
        self.agent.validate().map_err(|e| format!("agent.{e}"))?;
        self.abc.validate().map_err(|e| format!("abc.{e}"))?;
        Ok(())
    }
}

impl OutputConfig {
    pub fn validate(&self) -> Result<(), String> {
        // A tenth of a millisecond (a bin shorter than a 1500-byte packet at
        // 100 Mbit/s says nothing) to the longest run.
        check_range("bin_ms", self.bin_ms, 0.1, MAX_SPAN_MS)?;
        if self.rlc_sample_ttis == 0 {
            return Err("rlc_sample_ttis must be at least 1, got 0".into());
        }
        Ok(())
    }
}

impl FlowConfig {
    /// Checks the flow on its own and against the run's `duration_s`.
    pub fn validate(&self, duration_s: f64) -> Result<(), String> {
        check_range("start_s", self.start_s, 0.0, MAX_SPAN_S)?;
        if self.start_s >= duration_s {
            return Err(format!(
                "start_s ({}) is at or after the end of the run (duration_s = {duration_s}): the flow would never run",
                self.start_s
            ));
        }
        if let Some(s) = self.stop_s {
            check_range("stop_s", s, 0.0, MAX_SPAN_S)?;
            if s < self.start_s {
                return Err(format!("stop_s ({s}) is before start_s ({})", self.start_s));
            }
        }
        // Both ways of the longest one-way delay.
        check_range("extra_rtt_ms", self.extra_rtt_ms, 0.0, 2.0 * MAX_ONE_WAY_DELAY_MS)?;
        self.traffic.validate().map_err(|e| format!("traffic.{e}"))?;
        self.tcp.validate().map_err(|e| format!("tcp.{e}"))?;
        self.receiver.validate().map_err(|e| format!("receiver.{e}"))?;
        crate::transport::cc::registry::resolve(&self.cc, &self.cc_params).map_err(|e| {
            let field = if crate::transport::cc::registry::SCHEMES.contains(&self.cc.as_str()) {
                self.cc.as_str()
            } else {
                "cc"
            };
            format!("{field}: {e}")
        })?;
        Ok(())
    }

    /// The largest IP packet the flow sends (a full data segment).
    pub fn largest_packet_bytes(&self) -> u64 {
        (self.tcp.mss + crate::net::packet::TCP_IP_HEADER_BYTES) as u64
    }
}

/// A byte-limited queue must hold the largest packet that reaches it, or it
/// drops every one of them (or, on the Internet link, cannot start one).
fn holds_largest_packet(field: &str, limit: Option<u64>, flows: &[FlowConfig], extra: u64) -> Result<(), String> {
    let Some(limit) = limit else { return Ok(()) };
    let Some((k, f)) = flows.iter().enumerate().max_by_key(|(_, f)| f.largest_packet_bytes()) else {
        return Ok(());
    };
    let need = f.largest_packet_bytes() + extra;
    if limit < need {
        return Err(format!(
            "{field} ({limit}) cannot hold one packet of flow {k} ({need} bytes: mss {} + headers); \
             give at least {need}",
            f.tcp.mss
        ));
    }
    Ok(())
}

/// Rows of a sampled series, refused above `max` (what a run can hold or write).
fn series_rows(field: &str, what: &str, rows: f64, max: f64, fix: &str) -> Result<(), String> {
    if rows > max {
        return Err(format!(
            "{field}: {what} makes {} rows, more than the {} a run can record; {fix}",
            short(rows.ceil()),
            short(max)
        ));
    }
    Ok(())
}

fn short(v: f64) -> String {
    if v >= 1e6 {
        format!("{v:e}")
    } else {
        format!("{v}")
    }
}

impl ScenarioConfig {
    /// Parses a scenario (JSON, as the front end produces it from TOML),
    /// fills in defaults, applies shorthands (bandwidth in MHz, files to
    /// read, scheme parameters), and validates. Errors name the field by
    /// its dotted path and quote the value.
    pub fn resolve(json: &str) -> Result<ScenarioConfig, String> {
        // Parsed to a value first: deserializing from text, serde_json
        // reports an enum given as a number, boolean or array as only
        // "expected value"; from a value it quotes what it got.
        let value: serde_json::Value = serde_json::from_str(json)
            .map_err(|e| format!("the scenario is not valid JSON (NaN and infinities have no JSON form): {e}"))?;
        let mut cfg: ScenarioConfig = match typed(&value) {
            Ok(cfg) => cfg,
            Err((steps, inner)) => {
                let steps = super::error_paths::narrow(&value, steps, &inner);
                let inner = inner.split(" at line ").next().unwrap_or(&inner).to_string();
                let path = super::error_paths::dotted(&steps);
                return Err(if path.is_empty() {
                    inner
                } else {
                    format!("{path}: {inner}")
                });
            }
        };
        cfg.normalize()?;
        cfg.validate()?;
        Ok(cfg)
    }

    fn normalize(&mut self) -> Result<(), String> {
        if self.topology == Topology::Cellular && self.cell.is_none() {
            self.cell = Some(CellConfig::default());
        }
        if let Some(c) = self.cell.as_mut() {
            c.normalize().map_err(|e| format!("cell.{e}"))?;
        }
        for (k, u) in self.ues.iter_mut().enumerate() {
            u.channel.normalize().map_err(|e| format!("ues.{k}.channel.{e}"))?;
        }
        for (k, f) in self.flows.iter_mut().enumerate() {
            if f.id.is_empty() {
                f.id = format!("f{k}");
            }
            // The trace topology has one UE; a flow names it or not.
            if self.topology == Topology::Trace && f.ue.is_none() {
                f.ue = Some(0);
            }
            // SACK is negotiated: a sender without it gets no SACK blocks.
            if f.tcp.recovery == crate::transport::Recovery::Newreno {
                f.receiver.sack = false;
            }
            let field = if crate::transport::cc::registry::SCHEMES.contains(&f.cc.as_str()) {
                f.cc.clone()
            } else {
                "cc".into()
            };
            f.cc_params = crate::transport::cc::registry::resolve(&f.cc, &f.cc_params)
                .map_err(|e| format!("flows.{k}.{field}: {e}"))?;
        }
        Ok(())
    }

    /// Checks every value; the error names the field (dotted path) and
    /// value. This is the one place a scenario is judged: a function of the
    /// resolved configuration alone, which the world calls again before it
    /// builds anything.
    pub fn validate(&self) -> Result<(), String> {
        // One millisecond (one LTE TTI) to the longest span time can take.
        check_range("duration_s", self.duration_s, 1e-3, MAX_SPAN_S)?;
        let i = &self.internet;
        i.validate().map_err(|e| format!("internet.{e}"))?;
        self.output.validate().map_err(|e| format!("output.{e}"))?;
        if self.ues.len() > MAX_UES {
            return Err(format!("ues: at most {MAX_UES} UEs, got {}", self.ues.len()));
        }
        if self.flows.len() > MAX_FLOWS {
            return Err(format!("flows: at most {MAX_FLOWS} flows, got {}", self.flows.len()));
        }
        // The per-TTI (per-ms on a trace) sampling tick, for the series bound.
        let mut tick_ms = None;
        match self.topology {
            Topology::Cellular => {
                let cell = self
                    .cell
                    .as_ref()
                    .ok_or("topology \"cellular\" needs a [cell] section")?;
                cell.validate().map_err(|e| format!("cell.{e}"))?;
                if self.ues.is_empty() {
                    return Err("topology \"cellular\" needs at least one [[ues]] entry".into());
                }
                for (k, u) in self.ues.iter().enumerate() {
                    u.channel.validate().map_err(|e| format!("ues.{k}.channel.{e}"))?;
                }
                holds_largest_packet(
                    "cell.rlc.buffer_bytes",
                    cell.rlc.buffer_bytes,
                    &self.flows,
                    crate::ran::pdcp::PDCP_HEADER_BYTES as u64,
                )?;
                tick_ms = Some(cell.tti_ms);
            }
            Topology::Trace => {
                let t = self
                    .trace
                    .as_ref()
                    .ok_or("topology \"trace\" needs a [trace] section")?;
                t.validate().map_err(|e| format!("trace.{e}"))?;
                // Mahimahi counts the TUN header in the byte limit.
                holds_largest_packet(
                    "trace.buffer_bytes",
                    t.buffer_bytes,
                    &self.flows,
                    crate::ran::trace_link::TUN_HEADER_BYTES as u64,
                )?;
                tick_ms = Some(1.0);
            }
            Topology::Wired => {
                if i.rate_mbps.is_none() {
                    return Err("topology \"wired\" needs internet.rate_mbps (the bottleneck)".into());
                }
            }
        }
        if self.flows.is_empty() {
            return Err("flows: at least one flow is required".into());
        }
        if self.output.pcap && self.flows.len() > crate::metrics::pcap::MAX_FLOWS {
            return Err(format!(
                "output.pcap: a capture is two open files per flow, for at most {} flows, got {}; \
                 set output.pcap = false or capture a scenario with fewer flows",
                crate::metrics::pcap::MAX_FLOWS,
                self.flows.len()
            ));
        }
        holds_largest_packet("internet.buffer_bytes", i.buffer_bytes, &self.flows, 0)?;
        let n_ues = match self.topology {
            Topology::Cellular => self.ues.len(),
            Topology::Trace => 1,
            Topology::Wired => 0,
        };
        let duration_ms = self.duration_s * 1e3;
        let o = &self.output;
        series_rows(
            "output.bin_ms",
            &format!(
                "binning {} s in {} ms bins for {} flows and {n_ues} UEs",
                self.duration_s,
                o.bin_ms,
                self.flows.len()
            ),
            (duration_ms / o.bin_ms).ceil() * (self.flows.len() + n_ues) as f64,
            MAX_SERIES_ROWS,
            "use wider bins or a shorter run",
        )?;
        if let Some(tick) = tick_ms {
            let samples = (duration_ms / tick / o.rlc_sample_ttis as f64).ceil() * n_ues as f64;
            let fix = (samples / MAX_SAMPLED_ROWS * o.rlc_sample_ttis as f64).ceil();
            series_rows(
                "output.rlc_sample_ttis",
                &format!(
                    "sampling the queue of {n_ues} UEs every {} TTIs of {tick} ms for {} s",
                    o.rlc_sample_ttis, self.duration_s
                ),
                samples,
                MAX_SAMPLED_ROWS,
                &format!("set output.rlc_sample_ttis to at least {fix}"),
            )?;
        }
        let mut ids = std::collections::BTreeSet::new();
        for (k, f) in self.flows.iter().enumerate() {
            let p = format!("flows.{k}");
            if !ids.insert(&f.id) {
                return Err(format!("{p}.id: duplicate flow id {:?}", f.id));
            }
            f.validate(self.duration_s).map_err(|e| format!("{p}.{e}"))?;
            match (self.topology, f.ue) {
                (Topology::Wired, Some(u)) => {
                    return Err(format!("{p}.ue: the wired topology has no UEs, got ue = {u}"));
                }
                (Topology::Cellular, None) => {
                    return Err(format!("{p}.ue: a cellular flow needs the index of its UE"));
                }
                (Topology::Cellular, Some(u)) if u as usize >= self.ues.len() => {
                    return Err(format!(
                        "{p}.ue: there is no UE {u} (the scenario has {} UEs)",
                        self.ues.len()
                    ));
                }
                (Topology::Trace, Some(u)) if u != 0 => {
                    return Err(format!("{p}.ue: the trace topology has one UE (0), got {u}"));
                }
                _ => {}
            }
        }
        self.validate_oracles()
    }

    /// What the physical-limit oracle (`cc = "oracle"`) needs to know its
    /// bottleneck's future (`transport::cc::oracle`): a trace, or a cell in
    /// which no other UE has flows and whose oracle flows send one segment
    /// size (`ran::shadow`). Checked again when the world is built.
    fn validate_oracles(&self) -> Result<(), String> {
        let rate = "use cc = \"oracle-rate\", the rate oracle, which is not a bound";
        for (k, f) in self.flows.iter().enumerate() {
            if f.cc != "oracle" {
                continue;
            }
            match self.topology {
                Topology::Wired => {
                    return Err(format!(
                        "flows.{k}.cc = \"oracle\": the wired topology has no known future service (only a trace \
                         or a cell's shadow gives one); {rate}"
                    ));
                }
                Topology::Trace => {}
                Topology::Cellular => {
                    if let Some((j, g)) = self.flows.iter().enumerate().find(|(_, g)| g.ue != f.ue) {
                        return Err(format!(
                            "flows.{k}.cc = \"oracle\": flows.{j} is on UE {}, and the cell's future service for \
                             UE {} depends on it, which the physical-limit oracle cannot know ahead (its UE must be \
                             the only UE of the cell with flows); {rate}",
                            g.ue.unwrap_or(0),
                            f.ue.unwrap_or(0)
                        ));
                    }
                    if let Some((j, g)) = self
                        .flows
                        .iter()
                        .enumerate()
                        .find(|(_, g)| g.cc == "oracle" && g.tcp.mss != f.tcp.mss)
                    {
                        return Err(format!(
                            "flows.{j}.tcp.mss = {}: the physical-limit oracle's flows of a UE must send one segment \
                             size (flows.{k}.tcp.mss = {})",
                            g.tcp.mss, f.tcp.mss
                        ));
                    }
                }
            }
        }
        Ok(())
    }
}

/// `flows[0].tcp.mss` → `flows.0.tcp.mss`.
/// The scenario's types from its JSON value, or where deserializing failed
/// (as far as `serde_path_to_error` can follow) and why.
pub(crate) fn typed(value: &serde_json::Value) -> Result<ScenarioConfig, (Vec<super::error_paths::Step>, String)> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let steps = e
            .path()
            .iter()
            .filter_map(|seg| match seg {
                serde_path_to_error::Segment::Seq { index } => Some(super::error_paths::Step::Index(*index)),
                serde_path_to_error::Segment::Map { key } => Some(super::error_paths::Step::Key(key.clone())),
                _ => None,
            })
            .collect();
        (steps, e.into_inner().to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn cellular() -> Value {
        json!({
            "seed": 1, "duration_s": 2.0, "topology": "cellular",
            "ues": [{"channel": {"kind": "fixed_cqi", "cqi": 10}}],
            "flows": [{"ue": 0, "cc": "newreno"}],
        })
    }

    fn wired() -> Value {
        json!({
            "seed": 1, "duration_s": 2.0, "topology": "wired",
            "internet": {"rate_mbps": 10.0},
            "flows": [{"cc": "newreno"}],
        })
    }

    #[test]
    fn a_cellular_oracle_next_to_another_ues_flow_is_refused_naming_both_flows_and_the_rate_oracle() {
        let mut doc = cellular();
        doc["ues"] =
            json!([{"channel": {"kind": "fixed_cqi", "cqi": 10}}, {"channel": {"kind": "fixed_cqi", "cqi": 5}}]);
        doc["flows"] = json!([{"ue": 0, "cc": "oracle"}, {"ue": 1, "cc": "cubic"}]);
        let err = ScenarioConfig::resolve(&doc.to_string()).expect_err("refused");
        assert!(
            err.contains("flows.0.cc") && err.contains("flows.1 is on UE 1") && err.contains("oracle-rate"),
            "{err}"
        );
        // Alone on its UE, or sharing it with other flows, it is accepted.
        doc["flows"] = json!([{"ue": 1, "cc": "oracle"}, {"ue": 1, "cc": "cubic"}]);
        ScenarioConfig::resolve(&doc.to_string()).expect("one UE with flows");
    }

    #[test]
    fn oracle_flows_of_one_ue_with_two_segment_sizes_are_refused_naming_the_mss() {
        let mut doc = cellular();
        doc["flows"] = json!([{"ue": 0, "cc": "oracle"}, {"ue": 0, "cc": "oracle", "tcp": {"mss": 536}}]);
        let err = ScenarioConfig::resolve(&doc.to_string()).expect_err("refused");
        assert!(err.contains("flows.1.tcp.mss = 536") && err.contains("1448"), "{err}");
    }

    #[test]
    fn an_oracle_on_the_wired_topology_is_refused_naming_the_rate_oracle() {
        let mut doc = wired();
        doc["flows"] = json!([{"cc": "oracle"}]);
        let err = ScenarioConfig::resolve(&doc.to_string()).expect_err("refused");
        assert!(err.contains("flows.0.cc") && err.contains("oracle-rate"), "{err}");
    }

    /// Sets a dotted path (`flows.0.tcp.mss`) in a JSON document.
    fn set(doc: &mut Value, path: &str, v: Value) {
        let mut node = doc;
        let keys: Vec<&str> = path.split('.').collect();
        for (i, k) in keys.iter().enumerate() {
            let last = i + 1 == keys.len();
            node = match k.parse::<usize>() {
                Ok(idx) => &mut node[idx],
                Err(_) => {
                    if node.get(*k).is_none() {
                        node[*k] = if last { Value::Null } else { json!({}) };
                    }
                    &mut node[*k]
                }
            };
        }
        *node = v;
    }

    fn resolve(doc: &Value) -> Result<ScenarioConfig, String> {
        ScenarioConfig::resolve(&doc.to_string())
    }

    /// The error for `base` with `path` set to `v`; panics if accepted.
    fn rejected(base: &Value, path: &str, v: Value) -> String {
        let mut doc = base.clone();
        set(&mut doc, path, v.clone());
        match resolve(&doc) {
            Ok(_) => panic!("{path} = {v} was accepted"),
            Err(e) => e,
        }
    }

    #[test]
    fn an_error_inside_a_tagged_enum_names_the_field_not_only_the_enum() {
        let mut doc = cellular();
        doc["ues"][0]["channel"] = json!({
            "kind": "distance",
            "pathloss": {"model": "tr38901", "scenario": "umi", "los": true, "frequency_ghz": 28.0},
            "trajectory": {"kind": "fixed", "distance_m": 100.0},
            "tx_power_dbm": 35.0,
            "blockage": {"mean_clear_ms": 1000.0, "mean_blocked_ms": 200.0},
        });
        resolve(&doc).unwrap();
        let ch = "ues.0.channel";
        for (path, v, want) in [
            (
                "trajectory.distance_m",
                json!("x"),
                format!("{ch}.trajectory.distance_m: invalid type: string \"x\""),
            ),
            (
                "pathloss.los",
                json!(3),
                format!("{ch}.pathloss.los: invalid type: integer `3`"),
            ),
            (
                "tx_power_dbm",
                json!([]),
                format!("{ch}.tx_power_dbm: invalid type: sequence"),
            ),
            (
                "blockage.loss_db",
                json!("big"),
                format!("{ch}.blockage.loss_db: invalid type: string"),
            ),
            (
                "trajectory.distanc_m",
                json!(5.0),
                format!("{ch}.trajectory.distanc_m: unknown field `distanc_m`"),
            ),
            (
                "shadowing",
                json!(5.0),
                format!("{ch}.shadowing: unknown field `shadowing`"),
            ),
        ] {
            let e = rejected(&doc, &format!("{ch}.{path}"), v);
            assert!(e.starts_with(&want), "{path}: {e}");
        }
        // A missing field: the object that lacks it.
        for (object, field) in [("blockage", "mean_clear_ms"), ("trajectory", "distance_m")] {
            let mut d = doc.clone();
            d["ues"][0]["channel"][object].as_object_mut().unwrap().remove(field);
            let e = resolve(&d).unwrap_err();
            assert!(e.starts_with(&format!("{ch}.{object}: missing field `{field}`")), "{e}");
        }
        // A long list stops the narrowing at the list (every element tried
        // would read the whole document again each time).
        let mut points: Vec<Value> = (0..20_000).map(|i| json!([i as f64, 10])).collect();
        points[1_000] = json!([1000.0, "x"]);
        let mut d = doc.clone();
        d["ues"][0]["channel"] = json!({"kind": "cqi_trace", "points": points});
        let e = resolve(&d).unwrap_err();
        assert!(
            e.starts_with(&format!("{ch}.points: invalid type: string \"x\"")),
            "{e}"
        );
        // A flow's traffic, and an error serde names exactly already.
        let e = rejected(&doc, "flows.0.traffic", json!({"kind": "video", "rate_mbps": "fast"}));
        assert!(e.starts_with("flows.0.traffic.rate_mbps: invalid type: string"), "{e}");
        let e = rejected(&doc, "flows.0.start_s", json!("soon"));
        assert!(e.starts_with("flows.0.start_s: invalid type: string"), "{e}");
    }

    #[test]
    fn a_name_given_as_another_type_is_refused_quoting_the_value() {
        // Found by the fuzzer: serde_json reading text says only "expected
        // value" for an enum given as a number, a boolean or an array.
        for (path, v, shown) in [
            ("topology", json!(1), "integer `1`"),
            ("cell.scheduler", json!(true), "boolean `true`"),
            ("flows.0.tcp.rto_rule", json!(1e300), "floating point `1e+300`"),
            ("flows.0.tcp.loss_detection", json!([[]]), "sequence"),
        ] {
            let e = rejected(&cellular(), path, v);
            assert!(e.starts_with(&format!("{path}: ")) && e.contains(shown), "{path}: {e}");
        }
    }

    #[test]
    fn text_that_is_not_json_is_refused_as_such() {
        let e = ScenarioConfig::resolve(r#"{"seed": 1, "duration_s": NaN}"#).unwrap_err();
        assert!(e.contains("not valid JSON") && e.contains("NaN"), "{e}");
    }

    #[test]
    fn values_the_core_cannot_represent_are_refused_naming_the_field_and_the_value() {
        // (path, value, base): every one of these passed validation and then
        // panicked, hung or silently became zero in the core.
        // (path, value, base scenario)
        type Case = (&'static str, Value, fn() -> Value);
        let cases: &[Case] = &[
            ("internet.delay_ms", json!(1e20), cellular),
            ("flows.0.start_s", json!(1e12), cellular),
            ("internet.rate_mbps", json!(1e20), cellular),
            ("internet.rate_mbps", json!(1e-300), cellular),
            ("internet.reverse_rate_mbps", json!(1e-300), cellular),
            ("output.bin_ms", json!(1e20), cellular),
            ("output.bin_ms", json!(1e-12), cellular),
            ("cell.uplink.sr_period_ms", json!(1e20), cellular),
            ("cell.tti_ms", json!(1e-12), cellular),
            ("cell.dl_decode_delay_ms", json!(1e20), cellular),
            ("cell.rlc.t_reordering_ms", json!(1e20), cellular),
            ("cell.uplink.grant_tx_delay_ms", json!(1e20), cellular),
            ("cell.agent.inactivity_ms", json!(1e20), cellular),
            ("cell.net_assist.period_ms", json!(1e20), cellular),
            ("cell.net_assist.delay_ms", json!(1e20), cellular),
            ("cell.abc.delta_ms", json!(1e-300), cellular),
            ("cell.harq.rtt_ttis", json!(4_000_000_000u64), cellular),
            ("cell.pf_window_ttis", json!(1e300), cellular),
            ("flows.0.extra_rtt_ms", json!(1e20), cellular),
            ("flows.0.stop_s", json!(1e20), cellular),
            ("duration_s", json!(1e-12), cellular),
            (
                "flows.0.traffic",
                json!({"kind": "video", "period_s": 1e20, "on_s": 1.0}),
                cellular,
            ),
            (
                "flows.0.traffic",
                json!({"kind": "video", "rate_mbps": 1e300}),
                cellular,
            ),
            (
                "flows.0.traffic",
                json!({"kind": "transfer", "size_bytes": u64::MAX}),
                cellular,
            ),
            (
                "ues.0.channel",
                json!({"kind": "cqi_trace", "points": [[0.0, 15], [1e14, 3]]}),
                cellular,
            ),
            (
                "ues.0.channel",
                json!({"kind": "distance", "trajectory": {"kind": "random_jumps", "interval_s": 1e-12, "min_m": 10.0, "max_m": 20.0}}),
                cellular,
            ),
            (
                "ues.0.channel",
                json!({"kind": "distance", "trajectory": {"kind": "schedule", "points": [[0.0, 100.0], [1e20, 200.0]]}}),
                cellular,
            ),
            (
                "ues.0.channel",
                json!({"kind": "distance", "trajectory": {"kind": "fixed", "distance_m": 1e300}}),
                cellular,
            ),
            (
                "ues.0.channel",
                json!({"kind": "distance", "tx_power_dbm": 1e300, "trajectory": {"kind": "fixed", "distance_m": 100.0}}),
                cellular,
            ),
            ("internet.delay_ms", json!(1e20), wired),
            ("internet.buffer_bytes", json!(10), wired),
        ];
        for (path, v, base) in cases {
            let e = rejected(&base(), path, v.clone());
            assert!(e.contains(path), "{path} = {v}: the error does not name the field: {e}");
            assert!(!e.contains("panicked"), "{e}");
        }
    }

    #[test]
    fn windows_beyond_the_largest_tcp_window_are_refused_naming_the_parameter() {
        let with = |cc: &str| {
            let mut d = cellular();
            set(&mut d, "flows.0.cc", json!(cc));
            d
        };
        let cases: &[(&str, &str, Value)] = &[
            ("newreno", "flows.0.tcp.initial_cwnd", json!(u32::MAX)),
            ("newreno", "flows.0.tcp.rwnd_bytes", json!(u64::MAX)),
            ("newreno", "flows.0.tcp.rwnd_bytes", json!(100)),
            ("newreno", "flows.0.tcp.mss", json!(1)),
            ("newreno", "flows.0.tcp.min_rto_ms", json!(1e-300)),
            ("newreno", "flows.0.tcp.max_rto_ms", json!(1e300)),
            ("newreno", "flows.0.receiver.delack_timeout_ms", json!(1e300)),
            ("xrc", "flows.0.cc_params.probe_segments", json!(1e20)),
            ("natcp", "flows.0.cc_params.min_cwnd", json!(u32::MAX)),
            ("nacubic", "flows.0.cc_params.min_cwnd", json!(u32::MAX)),
            ("copa", "flows.0.cc_params.min_cwnd", json!(u32::MAX)),
            ("abc", "flows.0.cc_params.min_cwnd", json!(u32::MAX)),
            ("abc", "flows.0.cc_params.non_abc_initial_cwnd", json!(u32::MAX)),
            ("oracle", "flows.0.cc_params.min_cwnd", json!(u32::MAX)),
            ("pbe", "flows.0.cc_params.min_cwnd", json!(u32::MAX)),
        ];
        for (cc, path, v) in cases {
            let e = rejected(&with(cc), path, v.clone());
            let field = path.rsplit('.').next().unwrap();
            assert!(e.contains(field), "{cc} {path} = {v}: {e}");
        }
    }

    #[test]
    fn a_range_error_reads_field_must_be_in_lo_hi_got_value() {
        let e = rejected(&cellular(), "internet.delay_ms", json!(1e20));
        assert_eq!(e, "internet.delay_ms must be in [0, 10000], got 1e20");
        let e = rejected(&cellular(), "cell.tti_ms", json!(1e-12));
        assert_eq!(e, "cell.tti_ms must be in [0.0625, 10], got 1e-12");
    }

    #[test]
    fn a_buffer_that_cannot_hold_one_packet_is_refused() {
        let e = rejected(&wired(), "internet.buffer_bytes", json!(1000));
        assert!(
            e.contains("internet.buffer_bytes") && e.contains("1000") && e.contains("1500"),
            "{e}"
        );
        let mut doc = cellular();
        set(&mut doc, "flows.0.tcp.mss", json!(9000));
        let e = rejected(&doc, "cell.rlc.buffer_bytes", json!(5000));
        assert!(e.contains("cell.rlc.buffer_bytes") && e.contains("9054"), "{e}");
    }

    #[test]
    fn series_too_long_to_hold_in_memory_are_refused_before_the_run() {
        // 2 s in bins of 1 ns: two billion bins.
        let e = rejected(&cellular(), "output.bin_ms", json!(1e-6));
        assert!(e.contains("output.bin_ms"), "{e}");
        // Two UEs sampled every TTI for 10^6 s: 2·10^9 rows.
        let mut doc = cellular();
        doc["ues"] =
            json!([{"channel": {"kind": "fixed_cqi", "cqi": 10}}, {"channel": {"kind": "fixed_cqi", "cqi": 9}}]);
        set(&mut doc, "duration_s", json!(1e6));
        set(&mut doc, "output.bin_ms", json!(1e6));
        let e = resolve(&doc).unwrap_err();
        assert!(e.contains("output.rlc_sample_ttis") && e.contains("2e9"), "{e}");
        set(&mut doc, "output.rlc_sample_ttis", json!(100));
        set(&mut doc, "output.bin_ms", json!(1000.0));
        resolve(&doc).unwrap();
    }

    #[test]
    fn a_flow_that_starts_at_or_after_the_end_is_refused() {
        let e = rejected(&cellular(), "flows.0.start_s", json!(2.0));
        assert!(e.contains("flows.0.start_s") && e.contains("duration_s"), "{e}");
        let mut doc = cellular();
        set(&mut doc, "flows.0.start_s", json!(1.999));
        resolve(&doc).unwrap();
    }

    #[test]
    fn conflicting_bandwidth_and_prbs_are_refused_and_agreeing_ones_accepted() {
        let mut doc = cellular();
        set(&mut doc, "cell", json!({"bandwidth_mhz": 20.0, "prbs": 50}));
        let e = resolve(&doc).unwrap_err();
        assert!(
            e.contains("cell.bandwidth_mhz") && e.contains("prbs") && e.contains("50"),
            "{e}"
        );
        set(&mut doc, "cell", json!({"bandwidth_mhz": 20.0, "prbs": 100}));
        assert_eq!(resolve(&doc).unwrap().cell.unwrap().prbs(), 100);
        set(&mut doc, "cell", json!({"bandwidth_mhz": 5.0}));
        assert_eq!(resolve(&doc).unwrap().cell.unwrap().prbs(), 25);
        set(&mut doc, "cell", json!({}));
        assert_eq!(resolve(&doc).unwrap().cell.unwrap().prbs(), 50);
    }

    #[test]
    fn a_trace_flow_without_a_ue_is_on_ue_0() {
        let doc = json!({
            "seed": 1, "duration_s": 2.0, "topology": "trace",
            "trace": {"downlink": "x.down"},
            "flows": [{"cc": "oracle"}],
        });
        assert_eq!(resolve(&doc).unwrap().flows[0].ue, Some(0));
    }

    #[test]
    fn a_resolved_scenario_resolves_to_itself() {
        for mut doc in [cellular(), wired()] {
            set(&mut doc, "cell.bandwidth_mhz", json!(10.0));
            let once = resolve(&doc).unwrap();
            let twice = ScenarioConfig::resolve(&serde_json::to_string(&once).unwrap()).unwrap();
            assert_eq!(once, twice);
        }
    }

    fn nr_cell() -> Value {
        let mut doc = cellular();
        set(
            &mut doc,
            "cell",
            json!({"rat": "nr", "bandwidth_mhz": 100, "nr": {"numerology": 1, "tdd_pattern": "DDDSU"}}),
        );
        doc
    }

    #[test]
    fn an_nr_cell_resolves_its_prbs_and_slot_and_resolves_to_itself() {
        let once = resolve(&nr_cell()).unwrap();
        let cell = once.cell.as_ref().unwrap();
        assert_eq!((cell.prbs(), cell.tti_ms), (273, 0.5));
        let twice = ScenarioConfig::resolve(&serde_json::to_string(&once).unwrap()).unwrap();
        assert_eq!(once, twice);
    }

    #[test]
    fn bad_nr_fields_are_refused_naming_the_field_and_the_value() {
        let base = nr_cell();
        let cases: &[(&str, Value, &str)] = &[
            (
                "cell.bandwidth_mhz",
                json!(120),
                "cell.bandwidth_mhz: 120 MHz at numerology 1",
            ),
            ("cell.bandwidth_mhz", json!(12.5), "cell.bandwidth_mhz: 12.5"),
            (
                "cell.nr.numerology",
                json!(4),
                "cell.nr.numerology must be in [0, 3], got 4",
            ),
            ("cell.nr.tdd_pattern", json!("DDXU"), "cell.nr.tdd_pattern: \"DDXU\""),
            ("cell.nr.tdd_pattern", json!("DDDDDSU"), "3.5 ms"),
            ("cell.nr.mcs_table", json!("qam1024"), "cell.nr.mcs_table"),
            (
                "cell.nr.x_overhead",
                json!(5),
                "cell.nr.x_overhead must be 0, 6, 12 or 18, got 5",
            ),
            ("cell.nr.layers", json!(0), "cell.nr.layers must be in [1, 4], got 0"),
            ("cell.nr.pdsch_symbols", json!(15), "cell.nr.pdsch_symbols"),
            (
                "cell.nr.frequency_range",
                json!("fr2"),
                "cell.nr.frequency_range: Fr2 has no numerology 1",
            ),
            (
                "cell.harq.k1_slots",
                json!(16),
                "cell.harq.k1_slots must be in [0, 15], got 16",
            ),
            (
                "cell.harq.processes",
                json!(0),
                "cell.harq.processes must be in [1, 32], got 0",
            ),
            (
                "cell.harq.rtt_ttis",
                json!(4),
                "cell.harq.rtt_ttis: an NR cell times HARQ with harq.k1_slots",
            ),
            ("cell.tti_ms", json!(0.25), "cell.tti_ms: an NR cell's TTI is the slot"),
            ("cell.rat", json!("umts"), "cell.rat"),
        ];
        for (path, v, want) in cases {
            let e = rejected(&base, path, v.clone());
            assert!(e.contains(want), "{path} = {v}: {e}");
        }
        // NR fields in an LTE cell.
        let e = rejected(&cellular(), "cell.harq.k1_slots", json!(4));
        assert!(e.contains("cell.harq.k1_slots"), "{e}");
        let e = rejected(&cellular(), "cell.nr", json!({"numerology": 1}));
        assert!(e.contains("cell.nr") && e.contains("rat"), "{e}");
        // An NR cell without a bandwidth.
        let mut doc = cellular();
        set(&mut doc, "cell", json!({"rat": "nr"}));
        assert!(resolve(&doc).unwrap_err().contains("cell.bandwidth_mhz"));
    }
}
