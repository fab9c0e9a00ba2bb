//! The radio access network: the LTE downlink at the base station (channel,
//! AMC tables, MAC scheduler, HARQ, RLC, PDCP), the UE receive side and
//! uplink grant model, the XRC agent, and a trace-driven link; and the 5G NR
//! numerology, MCS, CQI and TBS tables (`nr`), which an NR cell uses
//! (`radio`: the RAT's slot, TBS grids (`tbs_grid`), TDD pattern
//! (`duplex`) and HARQ timing).
//!
//! The access networks as components (`crate::net::Access`):
//! [`cell_access::CellAccess`] (the cellular topology) and
//! [`trace_access::TraceAccess`] (the trace topology).

pub mod abc;
pub mod agent;
pub mod amc;
pub mod cell;
pub mod cell_access;
pub mod channel;
pub mod duplex;
pub mod netassist;
pub mod nr;
pub mod pbe;
pub mod pdcp;
pub mod pf_order;
pub mod radio;
pub mod rlc;
pub mod scheduler;
pub mod shadow;
pub mod tbs_grid;
pub mod trace_access;
pub mod trace_link;
pub mod uplink;

/// The fewest PRBs in 1..=`max` for which `fits` holds, or `max` if none
/// does: a binary search that tries 1 PRB on its own first (LTE's `I_TBS` 6
/// carries more at 1 PRB than at 2) and relies on `fits` being monotone
/// from 2 PRBs on (the TBS tables of TS 36.213 and TS 38.214 are). The one
/// search behind `amc::min_prbs_for_bits`, `nr::min_prbs_for_bits` and
/// `TbsGrid::min_prbs_for_bits`.
#[inline]
pub(crate) fn least_prbs_fitting(max: u16, fits: impl Fn(u16) -> bool) -> u16 {
    if fits(1) {
        return 1;
    }
    if !fits(max) {
        return max;
    }
    // Invariant: `lo` does not fit, `hi` fits.
    let (mut lo, mut hi) = (1u16, max);
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        if fits(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    hi
}
