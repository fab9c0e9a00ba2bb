//! An access network: the last part of the path, next to the UEs (a
//! cellular cell, a trace-driven link, or nothing on a wired path). It is a
//! [`Component`] (packets [`Dir::Down`] from the Internet path are
//! delivered to UEs; packets [`Dir::Up`] from UEs leave toward the Internet
//! path), and [`Access`] adds what the hosts and the recorder need to know
//! of it: its UEs, its minimum delay, and its side channels.
//!
//! Side channels, each a port of the access network:
//!
//! | port | who reads it | through |
//! |------|--------------|---------|
//! | XRC agent feedback | XRC senders | the option the base station writes into ACKs going up (inside `fire`/`receive`; `agent.enabled`) |
//! | ABC marks | ABC senders | accelerate/brake marks on ABC-capable data leaving the queue (inside) |
//! | PBE-CC | PBE senders | [`Access::pbe_rate_bps`]: the UE's own estimate, which the UE writes into its ACKs |
//! | NetAssist | NATCP senders | [`Access::net_assist_report`]: a periodic report sent out of band |
//! | rate oracle | `oracle-rate` senders | [`Access::oracle_capacity_bps`]: the capacity ahead, read at every [`super::Effect::Tick`] |
//! | oracle | `oracle` senders | [`Access::oracle_opportunities`]: the bottleneck's future delivery opportunities, read at every [`super::Effect::Tick`] |

use super::component::{Component, Dir, Io};
use super::observe::UeLinkCounters;
use super::{FlowId, Packet};
use crate::units::{SimDuration, SimTime};

/// NATCP's NetAssist report for one UE.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct NetAssistReport {
    /// The UE's bandwidth over the period, bit/s.
    pub bw_bps: u64,
    /// The path's minimum RTT as the network sees it.
    pub min_rtt: SimDuration,
    /// The UE's active flows.
    pub flows: u32,
}

/// An access network's ports beside its packets.
pub trait Access: Component {
    /// The UEs it serves (none on a wired path).
    fn num_ues(&self) -> usize;
    /// The UE packets of `flow` are delivered to.
    fn ue_of(&self, flow: FlowId) -> Option<usize>;
    /// The least time it adds to a round trip, both ways.
    fn min_rtt(&self) -> SimDuration;
    /// It lets every packet through at once, untouched, without timers or
    /// observations: a driver may route around it.
    fn is_pass_through(&self) -> bool {
        false
    }
    /// The hosts tell it how many of a UE's flows are alive (started, not
    /// finished): the ground-truth fair share divides by it.
    fn set_live_flows(&mut self, _ue: usize, _n: u32) {}
    /// Some flow reads [`Access::pbe_rate_bps`]: run the UEs' estimators.
    fn enable_pbe(&mut self) {}
    /// Some flow sends ABC-capable data: keep what ABC's marking reads (the
    /// rate each UE's queue is served at). Off by default: it costs every
    /// UE something every TTI.
    fn enable_abc(&mut self) {}
    /// Some flow subscribes to NetAssist: keep the per-period statistics
    /// [`Access::net_assist_report`] closes (off by default: they cost
    /// every UE something every TTI).
    fn enable_net_assist(&mut self) {}
    /// Some flow (`xrc2`) reads the XRC agent's air-delay estimate: write it
    /// into that flow's ACKs (`ran::agent`). Accesses without a radio link
    /// model (HARQ, uplink grants) write none.
    fn enable_air_delay(&mut self, _flow: FlowId) {}
    /// PBE-CC: the UE's own estimate of its downlink share, bit/s.
    fn pbe_rate_bps(&self, _ue: usize, _now: SimTime) -> Option<u64> {
        None
    }
    /// The oracle: the capacity the UE's packets will meet, bit/s. A cell
    /// answers with the last TTI's ground truth; a trace link, known in
    /// advance, with its capacity over `span` from `ahead` after `now`
    /// (when the flow's packets sent now reach its queue).
    fn oracle_capacity_bps(&self, _ue: usize, _now: SimTime, _ahead: SimDuration, _span: SimDuration) -> Option<f64> {
        None
    }
    /// The physical-limit oracle: the delivery opportunities of the UE's
    /// bottleneck at times in (`from`, `to`], in order, as (index counted
    /// from the start, time), each carrying one full 1500-byte packet, no
    /// more in one instant than its queue holds. Returns `false` when this
    /// access network cannot know them ahead (nothing is written).
    fn oracle_opportunities(
        &mut self,
        _ue: usize,
        _from: SimTime,
        _to: SimTime,
        _out: &mut Vec<(u64, SimTime)>,
    ) -> bool {
        false
    }
    /// Prepares [`Access::oracle_opportunities`] for the UE's flows, whose
    /// segments carry `payload` bytes, or says why this access network
    /// cannot know them ahead.
    fn oracle_schedule(&mut self, _ue: usize, _payload: u32) -> Result<(), String> {
        Err(
            "only the trace topology (whose trace is known in advance) and a cell whose only UE with flows is \
             the oracle's know their future service"
                .into(),
        )
    }
    /// NATCP's NetAssist: closes the UE's report period. `wired_rtt`: the
    /// network's minimum delay both ways on the wired segment.
    fn net_assist_report(&mut self, _ue: usize, _now: SimTime, _wired_rtt: SimDuration) -> Option<NetAssistReport> {
        None
    }
    /// The UE's link counters (for the end-of-run summary).
    fn link_counters(&self, ue: usize) -> UeLinkCounters;
    /// Conservation of every queue inside: arrived = departed + dropped + held.
    fn check_conservation(&self) -> Result<(), String>;
}

/// A component without timers has this as its timer type.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum NoTimer {}

/// The wired topology's access: the receivers sit at the end of the
/// Internet path, so packets go straight through.
#[derive(Copy, Clone, Debug, Default)]
pub struct WiredAccess;

impl Component for WiredAccess {
    type Timer = NoTimer;
    fn start(&mut self, _now: SimTime, _cx: &mut impl Io<NoTimer>) {}
    fn receive(&mut self, _now: SimTime, dir: Dir, pkt: Packet, cx: &mut impl Io<NoTimer>) {
        cx.out(dir, pkt);
    }
    fn fire(&mut self, _now: SimTime, timer: NoTimer, _cx: &mut impl Io<NoTimer>) {
        match timer {}
    }
}

impl Access for WiredAccess {
    fn num_ues(&self) -> usize {
        0
    }
    fn ue_of(&self, _flow: FlowId) -> Option<usize> {
        None
    }
    fn min_rtt(&self) -> SimDuration {
        SimDuration::ZERO
    }
    fn is_pass_through(&self) -> bool {
        true
    }
    fn link_counters(&self, _ue: usize) -> UeLinkCounters {
        UeLinkCounters::default()
    }
    fn check_conservation(&self) -> Result<(), String> {
        Ok(())
    }
}
