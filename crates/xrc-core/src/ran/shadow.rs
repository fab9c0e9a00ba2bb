//! The physical-limit oracle's knowledge of a cell's future: a shadow copy
//! of the cell in which the oracle's UE is never short of data.
//!
//! What a cell can carry for a UE in a TTI depends on the channel (CQI),
//! the HARQ outcomes, the scheduler and the TDD pattern, all of which the
//! simulator draws as it goes, and on the UE's own backlog. The oracle
//! (`transport::cc::oracle`, `docs/algorithms/oracle.md`) is told, ahead
//! of time, the service a *backlogged* UE gets: the shadow is a second
//! [`Cell`] built from the same configuration and the same random streams
//! (so its channel and HARQ draws are the real cell's), run ahead of the
//! real one by the oracle's forward delay, whose UE is topped up with
//! packets of the oracle's size before every TTI. Each SDU the shadow
//! starts sending in a TTI is a delivery opportunity at that TTI: the
//! oracle sends one packet to reach the base station 1 ns before it.
//!
//! The real cell then holds, at every TTI, exactly the SDUs the shadow
//! sends from in it (the one partly sent before, and those that start),
//! which is enough for the scheduler to give the UE what it gave the
//! shadow's UE (the demand reaches past the transport block), so the real
//! cell takes the shadow's path draw for draw: the same blocks, the same
//! HARQ outcomes from the shared `harq` stream.
//!
//! Conditions (checked by [`ShadowCell::new`]'s caller,
//! [`super::cell_access::CellAccess`]):
//! 1. The oracle's UE is the only UE of the cell with flows. Another UE's
//!    backlog depends on its own senders, which the shadow does not run,
//!    and the proportional-fair allocation and the shared HARQ stream
//!    depend on it.
//! 2. Every flow of that UE sends full segments of one size (the shadow's
//!    packets are of that size).
//!
//! What can make the real cell leave the shadow's path (then the
//! schedule is the service of a backlogged UE, still an upper bound on what
//! the UE can get, but no longer the real cell's): the oracle not sending a
//! packet when told (the application had nothing to send, the flow
//! stopped), and a gap in the oracle's requests. [`ShadowCell`] keeps, for
//! each TTI it ran, the new-data and retransmitted bits it gave the UE;
//! [`ShadowCell::check`] compares them with the real cell's and counts the
//! TTIs that differ (`summary.json` does not report it; the tests do).

use std::collections::VecDeque;

use super::cell::{Cell, CellConfig, CellOutput};
use super::channel::ChannelConfig;
use crate::engine::RngStreams;
use crate::net::{FlowId, Packet};
use crate::units::{SimDuration, SimTime};

/// The shadow of one UE of a cell.
pub struct ShadowCell {
    cell: Cell,
    ue: usize,
    flow: FlowId,
    payload: u32,
    tti: SimDuration,
    /// No TTI at or after this time (the real cell's end).
    until: SimTime,
    /// The start of the next TTI the shadow runs.
    next_tti: SimTime,
    /// TTIs after this instant have the UE backlogged (set by the first
    /// request: before it, the real UE has no packet of the oracle).
    backlogged_after: Option<SimTime>,
    /// Bytes kept in the shadow's buffer before each TTI: more than one
    /// block can take.
    fill_bytes: u64,
    /// SDUs started since the UE became backlogged: the next opportunity's
    /// index.
    started: u64,
    seq: u64,
    out: CellOutput,
    /// (TTI, new-data bits, retransmitted bits) of the UE, for TTIs the
    /// real cell has not run yet.
    predicted: VecDeque<(SimTime, u64, u64)>,
    compared: u64,
    differed: u64,
}

impl ShadowCell {
    /// A shadow of `cfg`'s cell (built as the real one: the same channels
    /// and streams) for `ue`, whose packets carry `payload` bytes of flow
    /// `flow`. TTIs stop before `until`.
    pub fn new(
        cfg: &CellConfig,
        channels: &[ChannelConfig],
        streams: &RngStreams,
        ue: usize,
        flow: FlowId,
        payload: u32,
        until: SimTime,
    ) -> Self {
        let cell = Cell::new(cfg, channels, streams);
        let sdu = (Packet::data(flow, 0, payload, SimTime::ZERO, false).size + super::pdcp::PDCP_HEADER_BYTES) as u64;
        let fill_bytes = (cell.max_tb_bits() / 8.0).ceil() as u64 + 2 * sdu;
        ShadowCell {
            tti: cell.tti(),
            cell,
            ue,
            flow,
            payload,
            until,
            next_tti: SimTime::ZERO,
            backlogged_after: None,
            fill_bytes,
            started: 0,
            seq: 0,
            out: CellOutput::default(),
            predicted: VecDeque::new(),
            compared: 0,
            differed: 0,
        }
    }

    /// Appends the UE's delivery opportunities at TTIs in (`from`, `to`]
    /// as (index from the first, TTI start), running the shadow up to `to`.
    /// The first call makes the UE backlogged after `from`; later calls
    /// continue where the last one stopped (a `from` beyond it skips TTIs
    /// the oracle is not told of).
    pub fn opportunities(&mut self, from: SimTime, to: SimTime, out: &mut Vec<(u64, SimTime)>) {
        let after = *self.backlogged_after.get_or_insert(from);
        while self.next_tti <= to && self.next_tti < self.until {
            let t = self.next_tti;
            self.next_tti = t + self.tti;
            let backlogged = t > after;
            if backlogged {
                // Packets reach the shadow's buffer as the oracle's reach the
                // real one: just before the TTI (only HoL delay reads it).
                let at = SimTime::from_nanos(t.as_nanos().saturating_sub(1));
                while self.cell.rlc_bytes(self.ue) < self.fill_bytes {
                    let p = Packet::data(self.flow, self.seq, self.payload, at, false);
                    self.seq += self.payload as u64;
                    if self.cell.enqueue_downlink(at, self.ue, p).is_err() {
                        break;
                    }
                }
            }
            let first = self.cell.rlc_first_unstarted_sn(self.ue);
            self.out.clear();
            self.cell.on_tti(t, &mut self.out);
            self.cell.forget_air(self.ue);
            let s = self.cell.ue_tti(self.ue);
            self.predicted.push_back((t, s.new_bits, s.retx_bits));
            if backlogged {
                let n = self.cell.rlc_first_unstarted_sn(self.ue) - first;
                if t > from {
                    out.extend((self.started..self.started + n).map(|k| (k, t)));
                }
                self.started += n;
            }
        }
    }

    /// The real cell ran the TTI starting at `now` and gave the UE
    /// `new_bits` and `retx_bits`: counts it as differing from the shadow's
    /// if it did (TTIs the shadow has not run are not compared).
    pub fn check(&mut self, now: SimTime, new_bits: u64, retx_bits: u64) {
        while self.predicted.front().is_some_and(|&(t, _, _)| t < now) {
            self.predicted.pop_front();
        }
        if let Some(&(t, n, r)) = self.predicted.front() {
            if t == now && self.backlogged_after.is_some_and(|a| t > a) {
                self.compared += 1;
                self.differed += (n != new_bits || r != retx_bits) as u64;
            }
        }
    }

    pub fn ue(&self) -> usize {
        self.ue
    }
    /// Payload bytes of the shadow's packets.
    pub fn payload(&self) -> u32 {
        self.payload
    }

    /// (TTIs compared with the real cell, TTIs that differed.)
    pub fn agreement(&self) -> (u64, u64) {
        (self.compared, self.differed)
    }
}
