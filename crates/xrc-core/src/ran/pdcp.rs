//! PDCP at the base station: the header it adds, and the per-flow activity
//! the XRC agent reads (the agent "resides at the PDCP layer", XRC paper
//! §III-A).
//!
//! Header: 2 bytes for a data radio bearer with a 12-bit SN (TS 36.323
//! §6.2.3). No ciphering or header compression is modelled.

use crate::net::{FlowId, UeId};
use crate::units::{SimDuration, SimTime};

pub const PDCP_HEADER_BYTES: u32 = 2;

#[derive(Clone, Debug)]
struct Activity {
    ue: UeId,
    last_packet: Option<SimTime>,
}

/// When each downlink flow last sent a packet through PDCP.
///
/// The flows are indexed by UE as well, so that a UE's questions cost its
/// own flows, not every flow of the cell (asked for every UE every TTI, a
/// scan of every flow made a TTI cost O(UEs x flows)).
#[derive(Debug, Default)]
pub struct FlowActivity {
    flows: Vec<Option<Activity>>,
    /// The flows of each UE, in increasing flow order.
    by_ue: Vec<Vec<u32>>,
    /// The latest packet of any flow of each UE: a UE has an active flow
    /// exactly when its latest packet is recent enough, so the question
    /// asked of every UE every TTI ([`FlowActivity::ue_is_active`]) reads
    /// one number instead of each of its flows.
    ue_latest: Vec<Option<SimTime>>,
}

impl FlowActivity {
    /// Declares that `flow` goes to `ue`.
    pub fn register(&mut self, flow: FlowId, ue: UeId) {
        let i = flow.0 as usize;
        if self.flows.len() <= i {
            self.flows.resize(i + 1, None);
        }
        if let Some(old) = self.flows[i].take() {
            let o = old.ue.0 as usize;
            self.by_ue[o].retain(|&f| f != flow.0);
            // The moved flow's packets no longer count for its old UE.
            self.ue_latest[o] = self.by_ue[o]
                .iter()
                .filter_map(|&f| self.flows[f as usize].as_ref().and_then(|a| a.last_packet))
                .max();
        }
        self.flows[i] = Some(Activity { ue, last_packet: None });
        let u = ue.0 as usize;
        if self.by_ue.len() <= u {
            self.by_ue.resize_with(u + 1, Vec::new);
            self.ue_latest.resize(u + 1, None);
        }
        let list = &mut self.by_ue[u];
        let at = list.partition_point(|&f| f < flow.0);
        list.insert(at, flow.0);
    }

    /// The UE `flow` goes to, if registered.
    pub fn ue_of(&self, flow: FlowId) -> Option<UeId> {
        self.flows.get(flow.0 as usize)?.as_ref().map(|a| a.ue)
    }

    /// A downlink packet of `flow` crossed PDCP at `now`.
    pub fn on_packet(&mut self, flow: FlowId, now: SimTime) {
        if let Some(Some(a)) = self.flows.get_mut(flow.0 as usize) {
            a.last_packet = Some(now);
            // Packets come in time order: the newest is the latest.
            let l = &mut self.ue_latest[a.ue.0 as usize];
            *l = Some(l.map_or(now, |t| t.max(now)));
        }
    }

    /// Flows of `ue` whose last packet is at most `inactivity` old (XRC
    /// §III-A: "marked as inactive if the inter-arrival time of its packets
    /// exceeds a certain threshold").
    pub fn active_flows(&self, ue: UeId, now: SimTime, inactivity: SimDuration) -> u32 {
        let Some(list) = self.by_ue.get(ue.0 as usize) else {
            return 0;
        };
        list.iter()
            .filter_map(|&f| self.flows[f as usize].as_ref())
            .filter(|a| a.last_packet.is_some_and(|t| now.saturating_since(t) <= inactivity))
            .count() as u32
    }

    /// UEs with at least one active flow.
    /// (Equal to `active_flows(..) > 0`: some flow's packet is at most
    /// `inactivity` old exactly when the latest is.)
    #[inline]
    pub fn ue_is_active(&self, ue: UeId, now: SimTime, inactivity: SimDuration) -> bool {
        self.ue_latest
            .get(ue.0 as usize)
            .is_some_and(|l| l.is_some_and(|t| now.saturating_since(t) <= inactivity))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flow_is_inactive_after_200_ms_without_packets() {
        let mut a = FlowActivity::default();
        a.register(FlowId(0), UeId(0));
        a.register(FlowId(1), UeId(0));
        let ms = |v: u64| SimTime::from_nanos(v * 1_000_000);
        let idle = SimDuration::from_millis(200);
        a.on_packet(FlowId(0), ms(0));
        a.on_packet(FlowId(1), ms(100));
        assert_eq!(a.active_flows(UeId(0), ms(200), idle), 2);
        assert_eq!(a.active_flows(UeId(0), ms(201), idle), 1);
        assert_eq!(a.active_flows(UeId(1), ms(201), idle), 0);
    }

    #[test]
    fn a_flow_registered_again_counts_only_for_its_new_ue() {
        let mut a = FlowActivity::default();
        a.register(FlowId(3), UeId(0));
        a.register(FlowId(3), UeId(2));
        let idle = SimDuration::from_millis(200);
        a.on_packet(FlowId(3), SimTime::ZERO);
        assert_eq!(a.active_flows(UeId(0), SimTime::ZERO, idle), 0);
        assert_eq!(a.active_flows(UeId(2), SimTime::ZERO, idle), 1);
        assert_eq!(a.active_flows(UeId(7), SimTime::ZERO, idle), 0);
    }

    #[test]
    fn a_ue_is_active_exactly_when_one_of_its_flows_is_whatever_the_packets_and_moves() {
        // Property over random histories: the per-UE latest packet answers
        // as the scan of the UE's flows does, flows moving between UEs too.
        let mut rng = crate::engine::rng::Rng::from_seed(11);
        let idle = SimDuration::from_millis(200);
        for _ in 0..50 {
            let mut a = FlowActivity::default();
            for f in 0..6u32 {
                a.register(FlowId(f), UeId(rng.below(3) as u32));
            }
            let mut now = SimTime::ZERO;
            for _ in 0..200 {
                now += SimDuration::from_millis(rng.below(120));
                match rng.below(10) {
                    0 => a.register(FlowId(rng.below(6) as u32), UeId(rng.below(3) as u32)),
                    1..=5 => a.on_packet(FlowId(rng.below(6) as u32), now),
                    _ => {}
                }
                for u in 0..4 {
                    let scan = a.active_flows(UeId(u), now, idle) > 0;
                    assert_eq!(a.ue_is_active(UeId(u), now, idle), scan, "UE {u} at {now:?}");
                }
            }
        }
    }
}
