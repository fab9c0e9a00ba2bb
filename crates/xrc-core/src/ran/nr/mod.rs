//! 5G NR tables and arithmetic for the PDSCH: numerologies and channel
//! bandwidths, the MCS and CQI tables, the transport block size, and the
//! capacity questions a scheduler asks of them. An NR cell
//! (`cell.rat = "nr"`) builds its TBS grids from here
//! ([`crate::ran::radio`], [`crate::ran::tbs_grid`]).
//!
//! # Sources
//!
//! The specification texts were not at hand when this module was written.
//! The tables are written from the Release 15 definitions and checked,
//! entry by entry, against two independent transcriptions: srsRAN Project
//! (which cites TS 38.214 V15.14.0 for its MCS and CQI tables) and
//! OpenAirInterface. The TBS arithmetic was checked against both projects'
//! TBS functions, compiled outside this repository and run on the same
//! inputs; the test module `reference_tests.rs` names the files and commits
//! and holds the reference values as literals.
//!
//! | Item | Source |
//! |------|--------|
//! | [`Numerology`], [`SYMBOLS_PER_SLOT`] | TS 38.211 Table 4.2-1 (μ, Δf = 2^μ · 15 kHz) and Table 4.3.2-1 (14 symbols per slot, 2^μ slots per subframe, normal cyclic prefix) |
//! | [`max_transmission_bandwidth`] (FR1) | TS 38.101-1 Table 5.3.2-1, "Maximum transmission bandwidth configuration N_RB" (5..=100 MHz; 15, 30, 60 kHz) |
//! | [`max_transmission_bandwidth`] (FR2) | TS 38.101-2 Table 5.3.2-1, "Maximum transmission bandwidth configuration N_RB" (50..=400 MHz; 60, 120 kHz) |
//! | [`McsTable`], [`mcs_entry`] | TS 38.214 Tables 5.1.3.1-1 (64QAM), 5.1.3.1-2 (256QAM), 5.1.3.1-3 (64QAM low-SE), "MCS index table 1/2/3 for PDSCH" |
//! | [`tbs()`], [`tbs_determination`], [`TBS_TABLE_5_1_3_2_1`] | TS 38.214 §5.1.3.2, "Transport block size determination", and Table 5.1.3.2-1, "TBS for N_info ≤ 3824" |
//! | [`ldpc_base_graph`], [`segmentation`] | TS 38.212 §7.2.2 (LDPC base graph selection), §7.2.1 (TB CRC length), §5.2.2 (code block segmentation) |
//! | [`CqiTable`], [`cqi_rate`], [`cqi_efficiency`] | TS 38.214 Tables 5.2.2.1-2, 5.2.2.1-3, 5.2.2.1-4, "4-bit CQI Table 1/2/3" |
//! | [`mcs_for_cqi`] | not in the standard: the highest MCS whose `Q_m × R` does not exceed the CQI's (see [`cqi`]); agrees with srsRAN's `map_cqi_to_mcs` and OAI's `get_mcs_from_cqi` for all 45 CQIs |
//! | [`slot_capacity`], [`min_prbs_for_bits`] | the TBS above, per slot; a binary search over `n_PRB` |
//!
//! # Deliberate deviations and modelling choices
//!
//! 1. **CQI 1 of Tables 5.2.2.1-2 and -3 maps to MCS 0** although MCS 0's
//!    efficiency (0.2344) exceeds the CQI's (0.1523): no MCS of the paired
//!    table is that low. srsRAN and OAI do the same.
//! 2. **Exact arithmetic** (see [`tbs()`]): `N_info` is an exact rational
//!    (numerator over 2048), never a float, as the standard's text has no
//!    rounding in step 2. OAI truncates `N_info` to an integer and so gives
//!    TBS 3824 where 3824 < `N_info` < 3825 (the standard, srsRAN and this
//!    module: 3840 or 3848); srsRAN's single-precision `N_info` agreed with
//!    the exact result on all 27.6 million allocations compared
//!    (`docs/nr.md`).
//! 3. **Not modelled**: the TB scaling factor S of Table 5.1.3.2-2 (paging
//!    and random access, S = 1 here); two codewords (5..=8 layers); the
//!    1024QAM MCS table 5.1.3.1-4 and CQI table 5.2.2.1-5 of Release 17;
//!    the PUSCH tables with transform precoding (TS 38.214 §6.1.4.1); the
//!    extended cyclic prefix; numerologies above μ = 3; channel bandwidths
//!    below 5 MHz; the lifting size and filler bits of LDPC segmentation.
//! 4. **Reserved MCS indices** are rows with a modulation order and no code
//!    rate ([`McsEntry::Reserved`]); asking their capacity is an error
//!    ([`ReservedMcs`]), since their TBS is the first transmission's.

pub mod capacity;
pub mod cqi;
pub mod mcs;
pub mod numerology;
pub mod tbs;

#[cfg(test)]
mod reference_tests;

pub use capacity::{min_prbs_for_bits, slot_capacity, ReservedMcs};
pub use cqi::{cqi_efficiency, cqi_rate, mcs_for_cqi, Cqi, CqiTable};
pub use mcs::{mcs_entry, mcs_rate, CodeRate, Mcs, McsEntry, McsRate, McsTable, Modulation};
pub use numerology::{max_transmission_bandwidth, BandwidthError, FrequencyRange, Numerology, SYMBOLS_PER_SLOT};
pub use tbs::{
    ldpc_base_graph, segmentation, tbs, tbs_determination, Layers, LdpcBaseGraph, PdschResources, Prbs, ResourceError,
    Segmentation, TbsBits, TbsDetermination, TbsStep, XOverhead, TBS_TABLE_5_1_3_2_1,
};
