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

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
#[serde(deny_unknown_fields)]
pub struct UeConfig {
    pub channel: ChannelConfig,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
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
#[serde(default, deny_unknown_fields)]
pub struct OutputConfig {
    /// Bin width of throughput series, ms.
    pub bin_ms: f64,
    /// Record RLC state every this many TTIs.
    pub rlc_sample_ttis: u32,
    pub cwnd_trace: bool,
    pub rtt_trace: bool,
}

impl Default for OutputConfig {
    fn default() -> Self {
        OutputConfig {
            bin_ms: 100.0,
            rlc_sample_ttis: 1,
            cwnd_trace: true,
            rtt_trace: true,
        }
    }
}

fn positive(name: &str, v: f64) -> Result<(), String> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(format!("{name} must be a positive number, got {v}"))
    }
}

fn non_negative(name: &str, v: f64) -> Result<(), String> {
    if v.is_finite() && v >= 0.0 {
        Ok(())
    } else {
        Err(format!("{name} must be a number >= 0, got {v}"))
    }
}

impl ScenarioConfig {
    /// Parses a scenario (JSON, as the front end produces it from TOML),
    /// fills in defaults, applies shorthands (bandwidth in MHz, files to
    /// read, scheme parameters), and validates. Errors name the field by
    /// its dotted path and quote the value.
    pub fn resolve(json: &str) -> Result<ScenarioConfig, String> {
        let de = &mut serde_json::Deserializer::from_str(json);
        let mut cfg: ScenarioConfig = serde_path_to_error::deserialize(de).map_err(|e| {
            let path = dotted(&e.path().to_string());
            let inner = e.into_inner().to_string();
            let inner = inner.split(" at line ").next().unwrap_or(&inner).to_string();
            if path.is_empty() || path == "." {
                inner
            } else {
                format!("{path}: {inner}")
            }
        })?;
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

    /// Checks every value; the error names the field (dotted path) and value.
    pub fn validate(&self) -> Result<(), String> {
        positive("duration_s", self.duration_s)?;
        if self.duration_s > 1e6 {
            return Err(format!("duration_s must be at most 1e6 s, got {}", self.duration_s));
        }
        let i = &self.internet;
        if let Some(r) = i.rate_mbps {
            positive("internet.rate_mbps", r)?;
        }
        if let Some(r) = i.reverse_rate_mbps {
            positive("internet.reverse_rate_mbps", r)?;
        }
        non_negative("internet.delay_ms", i.delay_ms)?;
        if i.buffer_packets == Some(0) {
            return Err("internet.buffer_packets must be at least 1, got 0".into());
        }
        positive("output.bin_ms", self.output.bin_ms)?;
        if self.output.rlc_sample_ttis == 0 {
            return Err("output.rlc_sample_ttis must be at least 1, got 0".into());
        }
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
            }
            Topology::Trace => {
                let t = self
                    .trace
                    .as_ref()
                    .ok_or("topology \"trace\" needs a [trace] section")?;
                non_negative("trace.uplink_delay_ms", t.uplink_delay_ms)?;
                for (name, v) in [
                    ("trace.buffer_packets", t.buffer_packets.map(u64::from)),
                    ("trace.buffer_bytes", t.buffer_bytes),
                    ("trace.uplink_buffer_packets", t.uplink_buffer_packets.map(u64::from)),
                    ("trace.uplink_buffer_bytes", t.uplink_buffer_bytes),
                ] {
                    if v == Some(0) {
                        return Err(format!("{name} must be at least 1, got 0"));
                    }
                }
                match &t.uplink {
                    Some(path) => {
                        if path.is_empty() {
                            return Err("trace.uplink: empty path (omit the field for a fixed-delay uplink)".into());
                        }
                        if t.uplink_delay_ms > 0.0 {
                            return Err(format!(
                                "trace.uplink_delay_ms ({}) cannot be combined with trace.uplink: the ACKs' \
                                 delay is the uplink trace's queue (give propagation delay in internet.delay_ms)",
                                t.uplink_delay_ms
                            ));
                        }
                    }
                    None => {
                        if let Some((name, _)) = [
                            ("trace.uplink_buffer_packets", t.uplink_buffer_packets.map(u64::from)),
                            ("trace.uplink_buffer_bytes", t.uplink_buffer_bytes),
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
                t.agent.validate().map_err(|e| format!("trace.agent.{e}"))?;
                t.abc.validate().map_err(|e| format!("trace.abc.{e}"))?;
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
        let mut ids = std::collections::BTreeSet::new();
        for (k, f) in self.flows.iter().enumerate() {
            let p = format!("flows.{k}");
            if !ids.insert(&f.id) {
                return Err(format!("{p}.id: duplicate flow id {:?}", f.id));
            }
            non_negative(&format!("{p}.start_s"), f.start_s)?;
            if let Some(s) = f.stop_s {
                non_negative(&format!("{p}.stop_s"), s)?;
                if s < f.start_s {
                    return Err(format!("{p}.stop_s ({s}) is before {p}.start_s ({})", f.start_s));
                }
            }
            non_negative(&format!("{p}.extra_rtt_ms"), f.extra_rtt_ms)?;
            f.traffic.validate().map_err(|e| format!("{p}.traffic.{e}"))?;
            f.tcp.validate().map_err(|e| format!("{p}.tcp.{e}"))?;
            f.receiver.validate().map_err(|e| format!("{p}.receiver.{e}"))?;
            crate::transport::cc::registry::resolve(&f.cc, &f.cc_params).map_err(|e| {
                format!(
                    "{p}.{}: {e}",
                    if crate::transport::cc::registry::SCHEMES.contains(&f.cc.as_str()) {
                        f.cc.as_str()
                    } else {
                        "cc"
                    }
                )
            })?;
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
        Ok(())
    }
}

/// `flows[0].tcp.mss` → `flows.0.tcp.mss`.
fn dotted(path: &str) -> String {
    path.replace('[', ".").replace(']', "")
}
