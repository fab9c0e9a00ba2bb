//! What components tell an observer (the run's recorder, or nothing): the
//! events and samples the outputs are made of, pushed as they happen, so
//! that no one reaches into a component to read them.

use super::{FlowId, Packet};
use crate::units::{SimDuration, SimTime};

/// Where a packet was dropped; the code is the `location` column of the
/// `drops` table.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum DropSite {
    /// The Internet path's forward (data) queue.
    InternetForward = 0,
    /// A UE's RLC transmit buffer at the base station.
    Rlc = 1,
    /// The trace link's downlink queue.
    TraceDownlink = 2,
    /// The Internet path's reverse (ACK) queue.
    InternetReverse = 3,
    /// Lost by HARQ giving up, found missing at RLC reassembly.
    Reassembly = 4,
    /// The trace link's uplink queue.
    TraceUplink = 5,
}

impl DropSite {
    pub fn code(self) -> u8 {
        self as u8
    }
}

/// One UE's state at the end of one sampling instant (a TTI; a trace
/// link's millisecond).
#[derive(Copy, Clone, Debug, Default)]
pub struct UeSample {
    /// Wide-band CQI (0 where there is none, as on a trace link).
    pub cqi: u8,
    /// Head-of-line delay of the UE's downlink queue.
    pub hol: SimDuration,
    /// Packets (SDUs) and bytes in the UE's downlink queue.
    pub sdus: u32,
    pub bytes: u64,
    /// Ground truth: bits the UE's fair share could carry in this instant.
    pub available_bits: f64,
    /// The same as a rate, Mbit/s, as the component computes it.
    pub available_mbps: f64,
    /// The XRC agent's estimate for the UE, bit/s.
    pub agent_bps: u64,
}

/// A UE's link counters at the end of a run.
#[derive(Copy, Clone, Debug, Default)]
pub struct UeLinkCounters {
    /// Transport blocks sent with new data, sent again, and lost (HARQ).
    pub tbs_new: u64,
    pub tbs_retx: u64,
    pub tbs_lost: u64,
    /// Bits the link carried to the UE, headers and padding included.
    pub carried_bits: f64,
}

/// Receives what components observe. Every method has an empty default.
pub trait Observer {
    /// `pkt` was dropped at `site` (`ue`: the UE whose queue dropped it).
    fn dropped(&mut self, _now: SimTime, _site: DropSite, _ue: Option<usize>, _pkt: &Packet) {}
    /// `count` packets were lost at `site` whose identity is gone (HARQ
    /// give-ups found at reassembly).
    fn lost(&mut self, _now: SimTime, _site: DropSite, _count: u64) {}
    /// A packet of `flow` left `ue`'s bottleneck queue after `delay` there.
    fn sojourn(&mut self, _now: SimTime, _ue: usize, _flow: FlowId, _delay: SimDuration) {}
    /// A sampling instant of length `len` ended at `now`; the UEs'
    /// [`Observer::ue_sample`]s (or their [`Observer::ue_columns`]) follow,
    /// every UE's (the run's recorder counts a UE's values as holding from
    /// one instant to the next).
    fn instant(&mut self, _now: SimTime, _len: SimDuration) {}
    /// One UE's state at the end of the instant.
    fn ue_sample(&mut self, _now: SimTime, _ue: usize, _s: &UeSample) {}
    /// Every UE's state at the end of the instant, as columns (`cols.cqi[i]`
    /// and the rest UE i's): one call per instant for a cell of many UEs, so
    /// an observer may copy whole columns instead of gathering rows. By
    /// default, [`Observer::ue_sample`] for each UE in order.
    fn ue_columns(&mut self, now: SimTime, cols: &UeColumns<'_>) {
        for ue in 0..cols.len() {
            self.ue_sample(now, ue, &cols.get(ue));
        }
    }
}

/// Every UE's [`UeSample`] at the end of one instant, field by field: each
/// slice has one entry per UE, in UE order (a cell keeps its UEs' state in
/// these columns and lends them as they are).
#[derive(Copy, Clone, Debug)]
pub struct UeColumns<'a> {
    /// The end of the instant (the HoL delays are measured to it).
    pub now: SimTime,
    pub cqi: &'a [u8],
    /// When the packet at the head of each UE's downlink queue arrived
    /// (`SimTime::MAX` for an empty queue): its HoL delay is `now` minus
    /// this ([`UeColumns::hol`]), worked out only by an observer that
    /// reads it, not by the cell for every UE every TTI.
    pub head: &'a [SimTime],
    pub sdus: &'a [u32],
    pub bytes: &'a [u64],
    pub available_bits: &'a [f64],
    pub available_mbps: &'a [f64],
    pub agent_bps: &'a [u64],
    /// The UEs whose `available_bits` or `agent_bps` may differ from the
    /// last instant's (others' are the same; a UE may be listed and not
    /// have changed, or be listed twice). `None`: any UE's may.
    pub changed: Option<&'a [u32]>,
}

impl UeColumns<'_> {
    /// The number of UEs (every column has this length).
    pub fn len(&self) -> usize {
        self.cqi.len()
    }
    pub fn is_empty(&self) -> bool {
        self.cqi.is_empty()
    }
    /// UE `ue`'s head-of-line delay (zero for an empty queue).
    #[inline]
    pub fn hol(&self, ue: usize) -> SimDuration {
        self.now.saturating_since(self.head[ue])
    }
    /// UE `ue`'s sample.
    pub fn get(&self, ue: usize) -> UeSample {
        UeSample {
            cqi: self.cqi[ue],
            hol: self.hol(ue),
            sdus: self.sdus[ue],
            bytes: self.bytes[ue],
            available_bits: self.available_bits[ue],
            available_mbps: self.available_mbps[ue],
            agent_bps: self.agent_bps[ue],
        }
    }
}

/// Observes nothing.
#[derive(Copy, Clone, Debug, Default)]
pub struct NullObserver;

impl Observer for NullObserver {}
