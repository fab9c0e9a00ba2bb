//! The base station in real time: the core's own access component of the
//! `cellular` topology (`ran::cell_access::CellAccess`: TTI timers,
//! scheduler, HARQ, RLC buffers, PUSCH grants and uplink pipes, the XRC
//! agent) or of the `trace` topology (`ran::trace_access::TraceAccess`:
//! Mahimahi's downlink queue, the uplink trace's queue or a fixed delay,
//! the XRC agent and ABC's marking at the queue), driven through
//! `net::component::Standalone`, the same component the simulator's
//! `World` drives, called with the same model times.
//!
//! One component carries both directions (data down, ACKs up), while the
//! driver's paths are one per direction. Two [`AccessStage`]s, one in each
//! path, share the component: whichever path advances it runs every timer
//! due (each at its own model time) and sorts what leaves by direction;
//! each stage hands on its own direction.
//!
//! **Classification.** Every IP packet belongs to a UE by its UE-side
//! address (the destination of a downlink packet, the source of an
//! uplink one); UE `k` of the scenario is `ue_addr(k)` (the trace
//! topology has one UE). The component knows a flow (the capture's
//! 5-tuple index) once the driver registers it with its UE
//! ([`AccessHandle::register`]). A flow counts as live on its UE from its
//! first packet to the end of the run (the ground-truth fair share uses
//! the count of UEs with a live flow).
//!
//! **Timing.** The driver tells the component the model time of the wall
//! clock before each pass ([`AccessHandle::set_wall`]); an instant (a TTI,
//! or the trace's millisecond) that runs in a pass started at wall time
//! `w` started `w − t` late (`t`: its model time). That is the **TTI start
//! lateness** of the timing report.
//!
//! **What the observer keeps** (the run directory's cell tables): every
//! instant's per-UE sample (HoL delay, queued SDUs and bytes, CQI,
//! ground-truth capacity, the agent's estimate), every packet's sojourn in
//! the RLC buffer (or the trace's queue), the drops there and HARQ losses.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};

use xrc_core::engine::RngStreams;
use xrc_core::net::{
    Access, Dir as CDir, DropSite, FlowId, NetAssistReport, Observer, Packet, QueueCounters, Released, Standalone,
    UeSample,
};
use xrc_core::ran::cell_access::CellAccess;
use xrc_core::ran::trace_access::{TraceAccess, TraceAccessConfig};
use xrc_core::scenario::ScenarioConfig;
use xrc_core::units::{SimDuration, SimTime};

use crate::stage::Stage;

/// The UE-side address of UE `k`: `10.77.0.(2 + k)`, so UE 0 is the
/// testbed's `10.77.0.2`.
pub fn ue_addr(k: usize) -> Option<[u8; 4]> {
    (k < MAX_UES).then(|| [10, 77, 0, 2 + k as u8])
}

/// UEs the address plan holds (`10.77.0.2` … `10.77.0.254`).
pub const MAX_UES: usize = 253;

/// One UE's sample at the start of one TTI, as the simulator's recorder
/// receives it.
#[derive(Copy, Clone, Debug, Default)]
pub struct TtiSample {
    pub t_ns: u64,
    pub ue: u32,
    pub hol_ns: u64,
    pub sdus: u32,
    pub bytes: u64,
    pub cqi: u8,
    pub available_mbps: f64,
    pub agent_bps: u64,
    /// Some flow of the UE had been seen by then.
    pub active: bool,
}

/// What the cell reported during the run.
#[derive(Clone, Debug, Default)]
pub struct CellSeries {
    pub samples: Vec<TtiSample>,
    /// (model time, UE, capture flow, sojourn ns) of every packet that
    /// left an RLC buffer.
    pub sojourns: Vec<(u64, u32, u32, u64)>,
    /// TTI start lateness, ns, one per TTI.
    pub tti_late_ns: Vec<u64>,
    /// (model time, UE, capture flow) of every RLC drop.
    pub rlc_drops: Vec<(u64, u32, u32)>,
    /// (model time, count) of packets lost to HARQ give-ups (their
    /// identity is gone with the transport block).
    pub harq_lost: Vec<(u64, u64)>,
    pub ttis: u64,
}

struct Recorder {
    series: CellSeries,
    wall: SimTime,
    /// Live flows per UE.
    live: Vec<u32>,
    /// The packet of the last drop inside (handed back to the driver).
    last_drop: Option<Packet>,
}

impl Recorder {
    /// Room for the series of a run of `duration_s` (per TTI at 1-ms TTIs,
    /// with a margin, for `ues` UEs; per packet at the emulator's expected
    /// rate), taken before the run: growing a series of megabytes while the
    /// cell runs cost the loop 7–48 ms where it doubled (at TTIs 16,384 and
    /// 32,768 for the per-TTI ones), with the cell's time stopped.
    fn reserve(&mut self, duration_s: f64, ues: usize) {
        if !(duration_s.is_finite() && duration_s > 0.0) {
            return;
        }
        let ttis = ((duration_s * 1000.0) as usize).saturating_add(2_000).min(1 << 24);
        self.series.tti_late_ns.reserve(ttis);
        self.series.samples.reserve(ttis.saturating_mul(ues).min(1 << 26));
        // One sojourn per packet leaving a UE's buffer.
        let packets = (duration_s * crate::driver::EXPECTED_PACKETS_PER_S / 2.0).min((1u64 << 23) as f64);
        self.series.sojourns.reserve(packets as usize);
    }

    fn new(ues: usize) -> Recorder {
        Recorder {
            series: CellSeries::default(),
            wall: SimTime::ZERO,
            live: vec![0; ues],
            last_drop: None,
        }
    }
}

impl Observer for Recorder {
    fn dropped(&mut self, now: SimTime, site: DropSite, ue: Option<usize>, pkt: &Packet) {
        // The queues inside the component hand their drops back: the RLC
        // buffer, the trace's downlink queue and its uplink queue. The
        // series keeps the downlink ones, the UE's (the cell's RLC drops).
        if matches!(site, DropSite::Rlc | DropSite::TraceDownlink | DropSite::TraceUplink) {
            if site != DropSite::TraceUplink {
                self.series
                    .rlc_drops
                    .push((now.as_nanos(), ue.unwrap_or(0) as u32, pkt.flow.0));
            }
            self.last_drop = Some(pkt.clone());
        }
    }
    fn lost(&mut self, now: SimTime, _site: DropSite, count: u64) {
        self.series.harq_lost.push((now.as_nanos(), count));
    }
    fn sojourn(&mut self, now: SimTime, ue: usize, flow: FlowId, delay: SimDuration) {
        self.series
            .sojourns
            .push((now.as_nanos(), ue as u32, flow.0, delay.as_nanos()));
    }
    fn instant(&mut self, now: SimTime, _len: SimDuration) {
        self.series.ttis += 1;
        self.series
            .tti_late_ns
            .push(self.wall.as_nanos().saturating_sub(now.as_nanos()));
    }
    fn ue_sample(&mut self, now: SimTime, ue: usize, s: &UeSample) {
        self.series.samples.push(TtiSample {
            t_ns: now.as_nanos(),
            ue: ue as u32,
            hol_ns: s.hol.as_nanos(),
            sdus: s.sdus,
            bytes: s.bytes,
            cqi: s.cqi,
            available_mbps: s.available_mbps,
            agent_bps: s.agent_bps,
            active: self.live.get(ue).is_some_and(|&n| n > 0),
        });
    }
}

/// The component: a cell or a trace link's base station.
enum Net {
    Cell(Standalone<CellAccess>),
    Trace(Standalone<TraceAccess>),
}

/// Calls one method of whichever component it is.
macro_rules! each {
    ($net:expr, $sa:ident => $e:expr) => {
        match $net {
            Net::Cell($sa) => $e,
            Net::Trace($sa) => $e,
        }
    };
}

struct Shared {
    sa: Net,
    rec: Recorder,
    /// What left, by direction (0 down, 1 up), in model-time order.
    pending: [VecDeque<(SimTime, Packet)>; 2],
    out: Vec<Released>,
    /// UE of each capture flow (None: not one of the UEs' addresses).
    flow_ue: Vec<Option<usize>>,
    ue_addrs: Vec<[u8; 4]>,
}

impl Shared {
    fn sort_out(&mut self) {
        for r in self.out.drain(..) {
            let d = match r.dir {
                CDir::Down => 0,
                CDir::Up => 1,
            };
            self.pending[d].push_back((r.at, r.pkt));
        }
    }
    fn advance(&mut self, now: SimTime) {
        each!(&mut self.sa, sa => sa.advance(now, &mut self.rec, &mut self.out));
        self.sort_out();
    }
    fn push(&mut self, now: SimTime, dir: CDir, pkt: Packet) {
        each!(&mut self.sa, sa => sa.push(now, dir, pkt, &mut self.rec, &mut self.out));
        self.sort_out();
    }
    fn next_wakeup(&self) -> Option<SimTime> {
        each!(&self.sa, sa => sa.next_wakeup())
    }
    fn take(&mut self, d: usize, now: SimTime, out: &mut Vec<(SimTime, Packet)>) {
        while self.pending[d].front().is_some_and(|(t, _)| *t <= now) {
            out.push(self.pending[d].pop_front().expect("front"));
        }
    }
}

/// The driver's handle on the shared component: classification, the wall
/// clock, and the series at the end.
#[derive(Clone)]
pub struct AccessHandle(Arc<Mutex<Shared>>);

impl AccessHandle {
    /// Builds the scenario's cell exactly as the simulator does (the same
    /// configuration, channels and named random streams of the master
    /// seed), with TTIs that run until the emulator stops.
    pub fn new(cfg: &ScenarioConfig) -> Result<AccessHandle, String> {
        let cell_cfg = cfg
            .cell
            .as_ref()
            .ok_or("cell: the cellular topology needs a [cell] table")?;
        let n = cfg.ues.len();
        if n > MAX_UES {
            return Err(format!(
                "ues: the emulator maps each UE to an address 10.77.0.2 … 10.77.0.254 and holds at most {MAX_UES} UEs, got {n}"
            ));
        }
        let channels: Vec<_> = cfg.ues.iter().map(|u| u.channel.clone()).collect();
        let streams = RngStreams::new(cfg.seed);
        let access = CellAccess::new(cell_cfg, &channels, &streams, &[], SimTime::MAX);
        let mut rec = Recorder::new(n);
        let sa = Standalone::new(access, SimTime::ZERO, &mut rec);
        Ok(Self::with(Net::Cell(sa), rec, n))
    }

    /// The trace topology's base station, built from the same fields as
    /// the simulator's (`trace.agent`, `trace.abc`; the queues from the
    /// caller's parsed traces), with millisecond instants that run until
    /// the emulator stops. Its one UE is `ue_addr(0)`.
    pub fn trace(cfg: TraceAccessConfig) -> AccessHandle {
        let access = TraceAccess::new(cfg, 0, SimTime::MAX);
        let mut rec = Recorder::new(1);
        let sa = Standalone::new(access, SimTime::ZERO, &mut rec);
        Self::with(Net::Trace(sa), rec, 1)
    }

    fn with(sa: Net, rec: Recorder, n: usize) -> AccessHandle {
        AccessHandle(Arc::new(Mutex::new(Shared {
            sa,
            rec,
            pending: [VecDeque::new(), VecDeque::new()],
            out: Vec::new(),
            flow_ue: Vec::new(),
            ue_addrs: (0..n).map(|k| ue_addr(k).expect("checked")).collect(),
        })))
    }

    fn lock(&self) -> MutexGuard<'_, Shared> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The two stages (down, up).
    pub fn stages(&self) -> (AccessStage, AccessStage) {
        (
            AccessStage {
                dir: 0,
                cell: self.clone(),
            },
            AccessStage {
                dir: 1,
                cell: self.clone(),
            },
        )
    }

    /// The UE of a packet of capture flow `flow` travelling `down` (or up)
    /// between `src` and `dst`, registering the flow with the cell the
    /// first time (with `air`, its ACKs get the agent's air-delay and room
    /// fields, as for an `xrc2` sender); `None`: neither address is a UE's
    /// (the packet cannot cross the cell).
    pub fn register(&self, flow: u32, down: bool, src: [u8; 4], dst: [u8; 4], air: bool) -> Option<usize> {
        let mut s = self.lock();
        let k = flow as usize;
        if let Some(&known) = s.flow_ue.get(k) {
            if known.is_some() {
                return known;
            }
        }
        let addr = if down { dst } else { src };
        let ue = s.ue_addrs.iter().position(|&a| a == addr);
        if s.flow_ue.len() <= k {
            s.flow_ue.resize(k + 1, None);
        }
        s.flow_ue[k] = ue;
        if let Some(u) = ue {
            s.rec.live[u] += 1;
            let n = s.rec.live[u];
            match &mut s.sa {
                Net::Cell(sa) => sa.component_mut().register_flow(FlowId(flow), u),
                Net::Trace(sa) => sa.component_mut().register_flow(FlowId(flow)),
            }
            each!(&mut s.sa, sa => {
                let c = sa.component_mut();
                if air {
                    c.enable_air_delay(FlowId(flow));
                }
                c.set_live_flows(u, n);
            });
        }
        ue
    }

    /// Turns on the network side of the network-assisted schemes, as the
    /// simulator does when a flow's sender asks for it (`Signals`): ABC's
    /// marking of ABC-capable data, the UE's PBE-CC estimator, NetAssist's
    /// per-UE measurement.
    pub fn enable_abc(&self) {
        each!(&mut self.lock().sa, sa => sa.component_mut().enable_abc())
    }
    pub fn enable_pbe(&self) {
        each!(&mut self.lock().sa, sa => sa.component_mut().enable_pbe())
    }
    pub fn enable_net_assist(&self) {
        each!(&mut self.lock().sa, sa => sa.component_mut().enable_net_assist())
    }

    /// The PBE-CC capacity estimate UE `ue` writes into an ACK leaving it
    /// at `now` (the simulator's `World::send_ack`).
    pub fn pbe_rate_bps(&self, ue: usize, now: SimTime) -> Option<u64> {
        each!(&self.lock().sa, sa => sa.component().pbe_rate_bps(ue, now))
    }

    /// NetAssist's report for UE `ue` closing its period at `now` (the
    /// simulator's `World::on_net_assist`), with the wired part of the
    /// minimum RTT.
    pub fn net_assist_report(&self, ue: usize, now: SimTime, wired_rtt: SimDuration) -> Option<NetAssistReport> {
        each!(&mut self.lock().sa, sa => sa.component_mut().net_assist_report(ue, now, wired_rtt))
    }

    /// Takes room, before the run, for the per-instant series of a run of
    /// `duration_s` ([`Recorder::reserve`]).
    pub fn reserve(&self, duration_s: f64) {
        let mut s = self.lock();
        let n = s.ue_addrs.len();
        s.rec.reserve(duration_s, n);
    }

    /// The model time of the wall clock at the start of a pass.
    pub fn set_wall(&self, now_ns: u64) {
        self.lock().rec.wall = SimTime::from_nanos(now_ns);
    }

    /// The series so far (a copy).
    pub fn series(&self) -> CellSeries {
        self.lock().rec.series.clone()
    }

    /// UE of each capture flow.
    pub fn flow_ues(&self) -> Vec<Option<usize>> {
        self.lock().flow_ue.clone()
    }

    /// Per-UE radio counters: (TBs new, TBs retransmitted, TBs lost,
    /// carried bits).
    pub fn link_counters(&self) -> Vec<(u64, u64, u64, f64)> {
        let s = self.lock();
        each!(&s.sa, sa => {
            let c = sa.component();
            (0..c.num_ues())
                .map(|u| {
                    let l = c.link_counters(u);
                    (l.tbs_new, l.tbs_retx, l.tbs_lost, l.carried_bits)
                })
                .collect()
        })
    }

    /// The component is the `cellular` topology's cell.
    pub fn is_cell(&self) -> bool {
        matches!(self.lock().sa, Net::Cell(_))
    }

    pub fn num_ues(&self) -> usize {
        self.lock().ue_addrs.len()
    }
}

/// One direction of the shared component in a path.
pub struct AccessStage {
    /// 0: down (RLC, the trace's queue), 1: up (PUSCH, the uplink trace or
    /// delay).
    dir: usize,
    cell: AccessHandle,
}

impl Stage for AccessStage {
    fn enqueue(&mut self, now: SimTime, pkt: Packet, out: &mut Vec<(SimTime, Packet)>) -> Result<(), Packet> {
        let mut s = self.cell.lock();
        let s = &mut *s;
        let dir = if self.dir == 0 { CDir::Down } else { CDir::Up };
        s.rec.last_drop = None;
        s.push(now, dir, pkt);
        s.take(self.dir, now, out);
        match s.rec.last_drop.take() {
            Some(p) => Err(p),
            None => Ok(()),
        }
    }

    fn next_wakeup(&self) -> Option<SimTime> {
        let s = self.cell.lock();
        let own = s.pending[self.dir].front().map(|(t, _)| *t);
        match (s.next_wakeup(), own) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn advance(&mut self, now: SimTime, out: &mut Vec<(SimTime, Packet)>) {
        let mut s = self.cell.lock();
        s.advance(now);
        s.take(self.dir, now, out);
    }

    fn counters(&self) -> QueueCounters {
        let s = self.cell.lock();
        let mut sum = QueueCounters::default();
        if self.dir == 0 {
            match &s.sa {
                Net::Cell(sa) => {
                    let c = sa.component();
                    for u in 0..c.num_ues() {
                        let r = c.cell().rlc_counters(u);
                        sum.arrived += r.arrived;
                        sum.departed += r.departed;
                        sum.dropped += r.dropped;
                        sum.held += r.held;
                    }
                }
                Net::Trace(sa) => sum = sa.component().link().counters(),
            }
        }
        sum
    }

    /// Packets inside this direction: the RLC buffers' or the trace
    /// queue's (down) and what left and waits to be handed on. Packets
    /// between the RLC buffer and the UE (in a transport block, in HARQ)
    /// and on the uplink are not counted.
    fn held(&self) -> u64 {
        let pending = self.cell.lock().pending[self.dir].len() as u64;
        self.counters().held + pending
    }

    fn kind(&self) -> &'static str {
        match (&self.cell.lock().sa, self.dir) {
            (Net::Cell(_), 0) => "cell-downlink",
            (Net::Cell(_), _) => "cell-uplink",
            (Net::Trace(_), 0) => "trace-downlink",
            (Net::Trace(_), _) => "trace-uplink",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stage::{LinkStage, Path};
    use xrc_core::net::{LinkConfig, PacketKind, QueueLimit};

    fn cfg() -> ScenarioConfig {
        ScenarioConfig::resolve(
            r#"{"seed":1,"duration_s":1,"topology":"cellular","internet":{"delay_ms":5,"buffer_packets":null},
            "cell":{"harq":{"bler":0.0}},"ues":[{"channel":{"kind":"fixed_cqi","cqi":15}}],
            "flows":[{"cc":"cubic","ue":0}]}"#,
        )
        .unwrap()
    }

    fn pkt(flow: u32, slot: u64, size: u32) -> Packet {
        let mut p = Packet::data(FlowId(flow), slot, 1448, SimTime::ZERO, false);
        p.size = size;
        p
    }

    fn ms(v: u64) -> SimTime {
        SimTime::from_nanos(v * 1_000_000)
    }

    #[test]
    fn a_packet_crosses_the_cell_down_in_a_tti_plus_decoding_and_its_ack_comes_back_up() {
        let cell = AccessHandle::new(&cfg()).unwrap();
        assert_eq!(cell.register(0, true, [10, 77, 0, 1], [10, 77, 0, 2], false), Some(0));
        let (down, up) = cell.stages();
        let mut d = Path::new(vec![Box::new(down)]);
        let mut u = Path::new(vec![Box::new(up)]);
        let (mut rel, mut drop) = (Vec::new(), Vec::new());
        d.enqueue(ms(0), pkt(0, 7, 1500), &mut rel, &mut drop);
        d.advance_to(ms(10), &mut rel, &mut drop);
        assert_eq!(rel.len(), 1);
        assert_eq!(
            rel[0].0,
            ms(3),
            "the TTI at 1 ms, then 1 ms of decoding, as in the simulator"
        );
        let PacketKind::Data(h) = &rel[0].1.kind else { panic!() };
        assert_eq!(h.seq, 7, "the slot survives the cell");
        rel.clear();
        u.enqueue(ms(10), pkt(0, 8, 52), &mut rel, &mut drop);
        u.advance_to(ms(40), &mut rel, &mut drop);
        assert_eq!(rel.len(), 1);
        assert!(rel[0].0 > ms(10) && rel[0].0 < ms(30), "{:?}", rel[0].0);
        assert!(drop.is_empty());
        let s = cell.series();
        assert!(s.ttis >= 40 && s.samples.len() as u64 == s.ttis);
        assert_eq!(s.sojourns.len(), 1);
    }

    fn trace_station(agent: bool, uplink: Option<&str>) -> AccessHandle {
        use xrc_core::ran::agent::AgentConfig;
        use xrc_core::ran::trace_access::TraceUplink;
        use xrc_core::ran::trace_link::Trace;
        // One 1,500-byte opportunity every millisecond: 12 Mbit/s.
        AccessHandle::trace(TraceAccessConfig {
            downlink: Trace::parse("1\n").unwrap(),
            downlink_limit: QueueLimit {
                packets: Some(10),
                bytes: None,
            },
            uplink: match uplink {
                Some(t) => TraceUplink::Trace(Trace::parse(t).unwrap(), QueueLimit::UNLIMITED),
                None => TraceUplink::Delay(SimDuration::from_millis(4)),
            },
            agent: AgentConfig {
                enabled: agent,
                ..AgentConfig::default()
            },
            abc: Default::default(),
        })
    }

    fn ack(flow: u32, ack: u64) -> Packet {
        let mut p = Packet::ack(FlowId(flow), ack, &[], SimTime::ZERO);
        p.size = 52;
        p
    }

    #[test]
    fn an_ack_crossing_the_trace_base_station_carries_the_agents_rate_and_the_queues_hol_delay() {
        let bs = trace_station(true, None);
        assert_eq!(bs.register(0, true, [10, 77, 0, 1], [10, 77, 0, 2], false), Some(0));
        assert!(!bs.is_cell());
        let (down, up) = bs.stages();
        let mut d = Path::new(vec![Box::new(down)]);
        let mut u = Path::new(vec![Box::new(up)]);
        let (mut rel, mut drop) = (Vec::new(), Vec::new());
        // Past the agent's 40 ms window of whole opportunities, ten
        // packets arrive (one leaves per millisecond) with an ACK, which
        // reaches the agent 4 ms later with half of them still queued.
        d.advance_to(ms(100), &mut rel, &mut drop);
        for k in 0..10 {
            d.enqueue(ms(100), pkt(0, k, 1500), &mut rel, &mut drop);
        }
        u.enqueue(ms(100), ack(0, 1), &mut rel, &mut drop);
        u.advance_to(ms(105), &mut rel, &mut drop);
        d.advance_to(ms(105), &mut rel, &mut drop);
        assert!(drop.is_empty());
        let acks: Vec<_> = rel
            .iter()
            .filter(|(_, p)| matches!(p.kind, PacketKind::Ack(_)))
            .collect();
        assert_eq!(acks.len(), 1);
        assert_eq!(acks[0].0, ms(104), "after the 4 ms uplink delay");
        let PacketKind::Ack(a) = &acks[0].1.kind else { panic!() };
        let o = a.xrc().expect("the agent wrote its option");
        // The trace's recent capacity over the window, to the flow alone.
        assert!((o.rate_bps as f64 / 12.032e6 - 1.0).abs() < 0.01, "{o:?}");
        assert!(
            o.hol >= SimDuration::from_millis(3),
            "the head packet waited since 100 ms: {o:?}"
        );
        assert_eq!(bs.series().samples.len() as u64, bs.series().ttis);
    }

    #[test]
    fn without_its_agent_the_trace_base_station_writes_nothing_and_a_full_queue_hands_the_packet_back() {
        let bs = trace_station(false, Some("1\n"));
        bs.register(0, true, [10, 77, 0, 1], [10, 77, 0, 2], false);
        let (down, up) = bs.stages();
        let mut d = Path::new(vec![Box::new(down)]);
        let mut u = Path::new(vec![Box::new(up)]);
        let (mut rel, mut drop) = (Vec::new(), Vec::new());
        for k in 0..12 {
            d.enqueue(SimTime::from_nanos(100), pkt(0, k, 1500), &mut rel, &mut drop);
        }
        assert_eq!(drop.len(), 2, "ten packets fit");
        assert_eq!(drop[0].stage, 0);
        u.enqueue(ms(10), ack(0, 1), &mut rel, &mut drop);
        u.advance_to(ms(20), &mut rel, &mut drop);
        let PacketKind::Ack(a) = &rel.last().expect("the ACK crossed").1.kind else {
            panic!()
        };
        assert!(a.xrc().is_none());
        d.advance_to(ms(20), &mut rel, &mut drop);
        assert_eq!(d.held(), 0, "the ten left in ten milliseconds");
    }

    #[test]
    fn tti_lateness_is_the_wall_time_of_the_pass_minus_the_ttis_model_time() {
        let cell = AccessHandle::new(&cfg()).unwrap();
        let (mut down, _) = cell.stages();
        let mut out = Vec::new();
        cell.set_wall(ms(5).as_nanos() + 300_000);
        down.advance(ms(5), &mut out);
        let late = cell.series().tti_late_ns;
        // TTIs at 0..=5 ms, run in one pass 0.3 ms after 5 ms.
        assert_eq!(late.len(), 6);
        assert_eq!(late[5], 300_000);
        assert_eq!(late[0], 5_300_000);
    }

    #[test]
    fn a_full_rlc_buffer_hands_the_packet_back_as_a_drop_and_a_foreign_address_has_no_ue() {
        let mut c = cfg();
        c.cell.as_mut().unwrap().rlc.buffer_packets = Some(2);
        let cell = AccessHandle::new(&c).unwrap();
        assert_eq!(cell.register(1, true, [10, 77, 0, 1], [10, 77, 0, 9], false), None);
        cell.register(0, true, [10, 77, 0, 1], [10, 77, 0, 2], false);
        let mut p = Path::new(vec![
            Box::new(LinkStage::new(&LinkConfig {
                rate: None,
                delay: SimDuration::ZERO,
                limit: QueueLimit::UNLIMITED,
            })),
            Box::new(cell.stages().0),
        ]);
        let (mut rel, mut drop) = (Vec::new(), Vec::new());
        for k in 0..5 {
            p.enqueue(SimTime::from_nanos(100), pkt(0, k, 1500), &mut rel, &mut drop);
        }
        p.advance_to(SimTime::from_nanos(200), &mut rel, &mut drop);
        assert_eq!(drop.len(), 3);
        assert_eq!(drop[0].stage, 1);
        assert_eq!(cell.series().rlc_drops.len(), 3);
    }
}
