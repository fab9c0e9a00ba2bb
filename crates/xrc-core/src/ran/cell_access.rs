//! The cellular topology's access network as a [`Component`]: a [`Cell`]
//! (the base station's PDCP, RLC and MAC per UE, the air interface, the
//! UEs' receive side and uplink) driven by its timers.
//!
//! ```text
//!  Internet ──Down──► PDCP/RLC buffer ─TTI: MAC, HARQ─► air ─► UE RLC ──Out(Down)──► UE
//!  Internet ◄─Out(Up)── agent writes XRC option ◄── PUSCH ◄── grants ◄──Up── UE
//! ```
//!
//! Timers: the TTI (the MAC schedules one TTI, then the observer gets
//! every UE's sample as columns, [`crate::net::UeColumns`], then
//! [`crate::net::Effect::Tick`] lets the oracle read the new ground
//! truth), a transport block reaching a UE, a
//! UE's RLC reordering timer, a UE's granted PUSCH, and ACKs reaching the
//! base station.
//!
//! Side channels (see [`crate::net::access`]): the agent's feedback is
//! written into ACKs reaching the base station and ABC marks data leaving
//! the RLC buffer (both inside [`Cell`]); PBE-CC's UE-side estimate, the
//! oracle's ground truth and NetAssist's report are ports of
//! [`crate::net::Access`].

use super::cell::{Cell, CellConfig, CellOutput};
use super::channel::ChannelConfig;
use super::shadow::ShadowCell;
use crate::engine::RngStreams;
use crate::net::Observer as _;
use crate::net::{
    Access, Component, Dir, DropSite, FlowId, Io, NetAssistReport, Packet, QueueCounters, UeLinkCounters,
};
use crate::units::{SimDuration, SimTime};

/// The cell's timers.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CellTimer {
    /// The TTI starting now.
    Tti,
    /// The head of a UE's downlink air pipe reaches it.
    Air(u32),
    /// A UE's RLC reordering timer may have expired.
    Reorder(u32),
    /// A UE's granted PUSCH starts.
    Pusch(u32),
    /// The head of a UE's uplink reaches the base station.
    UplinkArrive(u32),
}

pub struct CellAccess {
    cell: Cell,
    tti: SimDuration,
    /// No TTI at or after this time.
    until: SimTime,
    out: CellOutput,
    scratch: Vec<Packet>,
    /// What the cell was built from, for the oracle's shadow.
    built_from: (CellConfig, Vec<ChannelConfig>, u64),
    /// The UE of each flow of the scenario.
    flow_ues: Vec<usize>,
    /// The physical-limit oracle's shadow of its UE, once asked for.
    shadow: Option<Box<ShadowCell>>,
}

impl CellAccess {
    /// `channels`: one per UE; `flow_ues[k]`: the UE of flow `k`. TTIs
    /// stop before `until`.
    pub fn new(
        cfg: &CellConfig,
        channels: &[ChannelConfig],
        streams: &RngStreams,
        flow_ues: &[usize],
        until: SimTime,
    ) -> Self {
        let mut cell = Cell::new(cfg, channels, streams);
        for (k, &ue) in flow_ues.iter().enumerate() {
            cell.register_flow(FlowId(k as u32), ue);
        }
        CellAccess {
            tti: cell.tti(),
            cell,
            until,
            out: CellOutput::default(),
            scratch: Vec::new(),
            built_from: (cfg.clone(), channels.to_vec(), streams.master_seed()),
            flow_ues: flow_ues.to_vec(),
            shadow: None,
        }
    }

    /// (TTIs in which the oracle's shadow was compared with the cell, TTIs
    /// in which the UE's blocks differed); `None` without an oracle.
    pub fn oracle_shadow_agreement(&self) -> Option<(u64, u64)> {
        self.shadow.as_ref().map(|s| s.agreement())
    }

    pub fn cell(&self) -> &Cell {
        &self.cell
    }

    /// Adds flow `flow` on UE `ue` after construction: an emulator learns
    /// its flows from the packets (a new 5-tuple), not from the scenario.
    pub fn register_flow(&mut self, flow: FlowId, ue: usize) {
        self.cell.register_flow(flow, ue);
    }

    /// Carries out what a cell call produced: timers, observations, and
    /// the packets RLC delivered in order to the UEs.
    fn after_cell(now: SimTime, out: &mut CellOutput, cx: &mut impl Io<CellTimer>) {
        for &(u, t) in &out.air_heads {
            cx.wake(t, CellTimer::Air(u as u32));
        }
        for &(u, t) in &out.reorder_timers {
            cx.wake(t, CellTimer::Reorder(u as u32));
        }
        for &(u, flow, d) in &out.sojourns {
            cx.obs().sojourn(now, u, flow, d);
        }
        if out.discarded > 0 {
            // Packets lost by HARQ give-ups are discovered at reassembly;
            // their identity is gone with the transport block.
            cx.obs().lost(now, DropSite::Reassembly, out.discarded);
        }
        for (_, p) in out.delivered.drain(..) {
            cx.out(Dir::Down, p);
        }
    }

    fn on_tti(&mut self, now: SimTime, cx: &mut impl Io<CellTimer>) {
        let tti = self.tti;
        let out = &mut self.out;
        out.clear();
        self.cell.on_tti(now, out);
        if let Some(sh) = self.shadow.as_deref_mut() {
            let s = self.cell.ue_tti(sh.ue());
            sh.check(now, s.new_bits, s.retx_bits);
        }
        cx.obs().instant(now, tti);
        cx.obs().ue_columns(now, &self.cell.columns());
        Self::after_cell(now, out, cx);
        cx.tick();
        let next = now + tti;
        if next < self.until {
            cx.wake(next, CellTimer::Tti);
        }
    }
}

impl Component for CellAccess {
    type Timer = CellTimer;

    fn start(&mut self, now: SimTime, cx: &mut impl Io<CellTimer>) {
        cx.wake(now, CellTimer::Tti);
    }

    fn receive(&mut self, now: SimTime, dir: Dir, pkt: Packet, cx: &mut impl Io<CellTimer>) {
        let ue = self.cell.ue_of(pkt.flow).expect("every flow of a cell has a UE");
        match dir {
            Dir::Down => {
                if let Err(p) = self.cell.enqueue_downlink(now, ue, pkt) {
                    cx.obs().dropped(now, DropSite::Rlc, Some(ue), &p);
                }
            }
            Dir::Up => {
                if let Some(t) = self.cell.uplink_push(now, ue, pkt) {
                    cx.wake(t, CellTimer::Pusch(ue as u32));
                }
            }
        }
    }

    fn fire(&mut self, now: SimTime, timer: CellTimer, cx: &mut impl Io<CellTimer>) {
        match timer {
            CellTimer::Tti => self.on_tti(now, cx),
            CellTimer::Air(u) => {
                self.out.clear();
                self.cell.on_air_arrival(now, u as usize, &mut self.out);
                Self::after_cell(now, &mut self.out, cx);
            }
            CellTimer::Reorder(u) => {
                self.out.clear();
                self.cell.on_reorder_timer(now, u as usize, &mut self.out);
                Self::after_cell(now, &mut self.out, cx);
            }
            CellTimer::Pusch(u) => {
                let (head, next) = self.cell.on_pusch(now, u as usize, &mut self.scratch);
                if let Some(t) = head {
                    cx.wake(t, CellTimer::UplinkArrive(u));
                }
                if let Some(t) = next {
                    cx.wake(t, CellTimer::Pusch(u));
                }
            }
            CellTimer::UplinkArrive(u) => {
                self.scratch.clear();
                let next = self.cell.on_uplink_arrival(now, u as usize, &mut self.scratch);
                for p in self.scratch.drain(..) {
                    cx.out(Dir::Up, p);
                }
                if let Some(t) = next {
                    cx.wake(t, CellTimer::UplinkArrive(u));
                }
            }
        }
    }
}

impl Access for CellAccess {
    fn num_ues(&self) -> usize {
        self.cell.num_ues()
    }
    fn ue_of(&self, flow: FlowId) -> Option<usize> {
        self.cell.ue_of(flow)
    }
    fn min_rtt(&self) -> SimDuration {
        self.cell.min_air_rtt()
    }
    fn set_live_flows(&mut self, ue: usize, n: u32) {
        self.cell.set_live_flows(ue, n);
    }
    fn enable_pbe(&mut self) {
        self.cell.enable_pbe();
    }
    fn enable_abc(&mut self) {
        self.cell.enable_abc();
    }
    fn enable_net_assist(&mut self) {
        self.cell.enable_net_assist();
    }
    fn enable_air_delay(&mut self, flow: FlowId) {
        self.cell.enable_air_delay(flow);
    }
    fn pbe_rate_bps(&self, ue: usize, now: SimTime) -> Option<u64> {
        Some(self.cell.pbe_rate_bps(ue, now))
    }
    /// The last TTI's ground truth: the UE's fair share after HARQ losses.
    fn oracle_capacity_bps(&self, ue: usize, _now: SimTime, _ahead: SimDuration, _span: SimDuration) -> Option<f64> {
        Some(self.cell.available_bps(ue))
    }
    /// A shadow of the cell with the UE backlogged (`ran::shadow`); only
    /// when no other UE has a flow.
    fn oracle_schedule(&mut self, ue: usize, payload: u32) -> Result<(), String> {
        if let Some(other) = self.flow_ues.iter().find(|&&u| u != ue) {
            return Err(format!(
                "the cell's future service for UE {ue} depends on UE {other}'s flows, which the physical-limit \
                 oracle cannot know ahead: it needs its UE to be the only UE of the cell with flows"
            ));
        }
        if let Some(sh) = &self.shadow {
            return match sh.payload() == payload {
                true => Ok(()),
                false => Err(format!(
                    "the physical-limit oracle's flows of UE {ue} must send segments of one size ({} and {payload} \
                     bytes)",
                    sh.payload()
                )),
            };
        }
        let (cfg, channels, seed) = &self.built_from;
        let flow = FlowId(self.flow_ues.iter().position(|&u| u == ue).unwrap_or(0) as u32);
        self.shadow = Some(Box::new(ShadowCell::new(
            cfg,
            channels,
            &RngStreams::new(*seed),
            ue,
            flow,
            payload,
            self.until,
        )));
        Ok(())
    }
    /// The opportunities of the shadow's backlogged UE (`ran::shadow`).
    fn oracle_opportunities(&mut self, ue: usize, from: SimTime, to: SimTime, out: &mut Vec<(u64, SimTime)>) -> bool {
        match self.shadow.as_deref_mut() {
            Some(sh) if sh.ue() == ue => {
                sh.opportunities(from, to, out);
                true
            }
            _ => false,
        }
    }
    fn net_assist_report(&mut self, ue: usize, now: SimTime, wired_rtt: SimDuration) -> Option<NetAssistReport> {
        let (bw_bps, min_rtt, flows) = self.cell.net_assist_report(ue, now, wired_rtt);
        Some(NetAssistReport { bw_bps, min_rtt, flows })
    }
    fn link_counters(&self, ue: usize) -> UeLinkCounters {
        let s = self.cell.radio_stats(ue);
        UeLinkCounters {
            tbs_new: s.tbs_new,
            tbs_retx: s.tbs_retx,
            tbs_lost: s.tbs_lost,
            carried_bits: s.bits_decoded as f64,
        }
    }
    fn check_conservation(&self) -> Result<(), String> {
        for u in 0..self.cell.num_ues() {
            let c: QueueCounters = self.cell.rlc_counters(u);
            if !c.conserved() {
                return Err(format!("RLC of UE {u}: {c:?}"));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::{NullObserver, PacketKind, Standalone};
    use crate::ran::cell::HarqConfig;

    fn ms(v: u64) -> SimTime {
        SimTime::from_nanos(v * 1_000_000)
    }

    #[test]
    fn a_packet_reaches_its_ue_after_one_tti_and_decoding_and_its_ack_returns_with_the_agents_option() {
        let cfg = CellConfig {
            harq: HarqConfig {
                bler: 0.0,
                ..HarqConfig::default()
            },
            ..CellConfig::default()
        };
        cfg.validate().unwrap();
        let access = CellAccess::new(
            &cfg,
            &[ChannelConfig::FixedCqi { cqi: 15 }],
            &RngStreams::new(1),
            &[0],
            SimTime::MAX,
        );
        let mut obs = NullObserver;
        let mut s = Standalone::new(access, SimTime::ZERO, &mut obs);
        let mut out = Vec::new();
        // Timers due by 0 ms run first, so the TTI at 0 ms has passed and
        // the TTI at 1 ms carries the packet.
        s.push(
            SimTime::ZERO,
            Dir::Down,
            Packet::data(FlowId(0), 0, 1448, SimTime::ZERO, false),
            &mut obs,
            &mut out,
        );
        s.advance(ms(20), &mut obs, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!(
            (out[0].at, out[0].dir),
            (ms(3), Dir::Down),
            "the TTI at 1 ms, then 1 ms decoding"
        );
        s.push(
            ms(20),
            Dir::Up,
            Packet::ack(FlowId(0), 1448, &[], SimTime::ZERO),
            &mut obs,
            &mut out,
        );
        s.advance(ms(100), &mut obs, &mut out);
        assert_eq!(out.len(), 2);
        assert_eq!(out[1].dir, Dir::Up);
        assert!(out[1].at > ms(20));
        let PacketKind::Ack(a) = &out[1].pkt.kind else {
            panic!("an ACK")
        };
        assert!(a.xrc().expect("the agent writes its option").rate_bps > 0);
        assert!(s.component().check_conservation().is_ok());
    }
}
