//! The scenario's access network: one of the three topologies' access
//! components, built from the scenario, behind one type so the world
//! dispatches to it without dynamic calls.

use crate::engine::RngStreams;
use crate::net::{
    Access, Component, Dir, FlowId, Io, NetAssistReport, NoTimer, Packet, QueueLimit, UeLinkCounters, WiredAccess,
};
use crate::ran::cell_access::{CellAccess, CellTimer};
use crate::ran::trace_access::{TraceAccess, TraceAccessConfig, TraceTimer, TraceUplink};
use crate::ran::trace_link::Trace;
use crate::units::{SimDuration, SimTime};

use super::config::{ScenarioConfig, Topology};

/// Trace contents handed in by the caller instead of read from the paths
/// the scenario names.
#[derive(Clone, Copy, Debug, Default)]
pub struct TraceTexts<'a> {
    pub downlink: Option<&'a str>,
    pub uplink: Option<&'a str>,
}

/// Reads and parses one of the scenario's traces; errors name the field.
fn load_trace(field: &str, path: &str, text: Option<&str>) -> Result<Trace, String> {
    let owned;
    let text = match text {
        Some(t) => t,
        None => {
            owned = std::fs::read_to_string(path).map_err(|e| format!("{field}: cannot read {path:?}: {e}"))?;
            owned.as_str()
        }
    };
    Trace::parse(text).map_err(|e| format!("{field} ({path}): {e}"))
}

/// The trace topology's access network as `cfg` (validated) describes it:
/// the traces (read from the paths the scenario names unless `texts` gives
/// their contents), the queues' limits, the uplink trace or delay, the
/// agent and ABC. The simulator and the emulator build it here.
pub fn trace_access_config(cfg: &ScenarioConfig, texts: TraceTexts<'_>) -> Result<TraceAccessConfig, String> {
    let t = cfg
        .trace
        .as_ref()
        .ok_or("trace: the trace topology needs a [trace] table")?;
    let downlink = load_trace("trace.downlink", &t.downlink, texts.downlink)?;
    let uplink = match &t.uplink {
        Some(path) => {
            let up = load_trace("trace.uplink", path, texts.uplink)?;
            let limit = QueueLimit {
                packets: t.uplink_buffer_packets,
                bytes: t.uplink_buffer_bytes,
            };
            TraceUplink::Trace(up, limit)
        }
        None => TraceUplink::Delay(SimDuration::try_from_millis_f64(t.uplink_delay_ms).ok_or_else(|| {
            format!(
                "trace.uplink_delay_ms: {} ms is not a valid duration",
                t.uplink_delay_ms
            )
        })?),
    };
    Ok(TraceAccessConfig {
        downlink,
        downlink_limit: QueueLimit {
            packets: t.buffer_packets,
            bytes: t.buffer_bytes,
        },
        uplink,
        agent: t.agent.clone(),
        abc: t.abc.clone(),
    })
}

/// An [`Io`] that serves every kind of access network.
pub trait AccessIo: Io<CellTimer> + Io<TraceTimer> + Io<NoTimer> {}
impl<X: Io<CellTimer> + Io<TraceTimer> + Io<NoTimer>> AccessIo for X {}

/// Calls one method of whichever access network it is.
macro_rules! each {
    ($self:expr, $a:ident => $e:expr) => {
        match $self {
            AccessNet::Cellular($a) => $e,
            AccessNet::Trace($a) => $e,
            AccessNet::Wired($a) => $e,
        }
    };
}

/// The access network of a scenario.
pub enum AccessNet {
    Cellular(Box<CellAccess>),
    Trace(Box<TraceAccess>),
    Wired(WiredAccess),
}

/// Its timers.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum AccessTimer {
    Cell(CellTimer),
    Trace(TraceTimer),
}

impl AccessNet {
    /// Builds the access network `cfg` (validated) describes; its periodic
    /// instants (TTIs, the trace's milliseconds) stop before the end.
    pub fn build(cfg: &ScenarioConfig, texts: TraceTexts<'_>, streams: &RngStreams) -> Result<AccessNet, String> {
        let end = SimTime::ZERO + SimDuration::try_from_secs_f64(cfg.duration_s).expect("validated");
        Ok(match cfg.topology {
            Topology::Cellular => {
                let cell_cfg = cfg.cell.as_ref().expect("validated");
                let channels: Vec<_> = cfg.ues.iter().map(|u| u.channel.clone()).collect();
                let flow_ues: Vec<usize> = cfg.flows.iter().map(|f| f.ue.expect("validated") as usize).collect();
                AccessNet::Cellular(Box::new(CellAccess::new(cell_cfg, &channels, streams, &flow_ues, end)))
            }
            Topology::Trace => {
                let access = TraceAccess::new(trace_access_config(cfg, texts)?, cfg.flows.len(), end);
                AccessNet::Trace(Box::new(access))
            }
            Topology::Wired => AccessNet::Wired(WiredAccess),
        })
    }

    // The component calls, on whichever access network it is.

    pub fn start<X: AccessIo>(&mut self, now: SimTime, cx: &mut X) {
        each!(self, a => a.start(now, cx))
    }

    #[inline]
    pub fn receive<X: AccessIo>(&mut self, now: SimTime, dir: Dir, pkt: Packet, cx: &mut X) {
        each!(self, a => a.receive(now, dir, pkt, cx))
    }

    #[inline]
    pub fn fire<X: AccessIo>(&mut self, now: SimTime, timer: AccessTimer, cx: &mut X) {
        match (self, timer) {
            (AccessNet::Cellular(a), AccessTimer::Cell(t)) => a.fire(now, t, cx),
            (AccessNet::Trace(a), AccessTimer::Trace(t)) => a.fire(now, t, cx),
            (_, t) => unreachable!("{t:?} is not this access network's timer"),
        }
    }

    pub fn rearm<X: AccessIo>(&mut self, now: SimTime, cx: &mut X) {
        each!(self, a => a.rearm(now, cx))
    }

    // ----- the ports of net::Access -----

    pub fn num_ues(&self) -> usize {
        each!(self, a => a.num_ues())
    }
    pub fn ue_of(&self, flow: FlowId) -> Option<usize> {
        each!(self, a => a.ue_of(flow))
    }
    pub fn min_rtt(&self) -> SimDuration {
        each!(self, a => a.min_rtt())
    }
    pub fn is_pass_through(&self) -> bool {
        each!(self, a => a.is_pass_through())
    }
    pub fn set_live_flows(&mut self, ue: usize, n: u32) {
        each!(self, a => a.set_live_flows(ue, n))
    }
    pub fn enable_pbe(&mut self) {
        each!(self, a => a.enable_pbe())
    }
    pub fn enable_abc(&mut self) {
        each!(self, a => a.enable_abc())
    }
    pub fn enable_net_assist(&mut self) {
        each!(self, a => a.enable_net_assist())
    }
    pub fn enable_air_delay(&mut self, flow: FlowId) {
        each!(self, a => a.enable_air_delay(flow))
    }
    pub fn pbe_rate_bps(&self, ue: usize, now: SimTime) -> Option<u64> {
        each!(self, a => a.pbe_rate_bps(ue, now))
    }
    pub fn oracle_capacity_bps(&self, ue: usize, now: SimTime, ahead: SimDuration, span: SimDuration) -> Option<f64> {
        each!(self, a => a.oracle_capacity_bps(ue, now, ahead, span))
    }
    pub fn oracle_opportunities(
        &mut self,
        ue: usize,
        from: SimTime,
        to: SimTime,
        out: &mut Vec<(u64, SimTime)>,
    ) -> bool {
        each!(self, a => a.oracle_opportunities(ue, from, to, out))
    }
    pub fn oracle_schedule(&mut self, ue: usize, payload: u32) -> Result<(), String> {
        each!(self, a => a.oracle_schedule(ue, payload))
    }
    /// The cellular oracle's shadow against the cell: (TTIs compared, TTIs
    /// that differed); `None` elsewhere.
    pub fn oracle_shadow_agreement(&self) -> Option<(u64, u64)> {
        match self {
            AccessNet::Cellular(c) => c.oracle_shadow_agreement(),
            _ => None,
        }
    }
    pub fn net_assist_report(&mut self, ue: usize, now: SimTime, wired_rtt: SimDuration) -> Option<NetAssistReport> {
        each!(self, a => a.net_assist_report(ue, now, wired_rtt))
    }
    pub fn link_counters(&self, ue: usize) -> UeLinkCounters {
        each!(self, a => a.link_counters(ue))
    }
    pub fn check_conservation(&self) -> Result<(), String> {
        each!(self, a => a.check_conservation())
    }
}

impl From<CellTimer> for AccessTimer {
    fn from(t: CellTimer) -> Self {
        AccessTimer::Cell(t)
    }
}
impl From<TraceTimer> for AccessTimer {
    fn from(t: TraceTimer) -> Self {
        AccessTimer::Trace(t)
    }
}
impl From<NoTimer> for AccessTimer {
    fn from(t: NoTimer) -> Self {
        match t {}
    }
}
