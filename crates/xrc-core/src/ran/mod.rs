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
pub mod radio;
pub mod rlc;
pub mod scheduler;
pub mod shadow;
pub mod tbs_grid;
pub mod trace_access;
pub mod trace_link;
pub mod uplink;
