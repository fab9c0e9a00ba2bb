//! The radio access technology of a cell and what it fixes for the MAC: the
//! slot (the TTI), the band in PRBs, the resource block group size, the
//! transport block sizes per slot kind, CQI → rate index, the duplex
//! pattern and the HARQ timing.
//!
//! - LTE (the default): 1 ms TTI (`tti_ms`), TS 36.213 tables (`amc`),
//!   FDD, HARQ retransmission `harq.rtt_ttis` after a failure.
//! - NR (`rat = "nr"`, section `[cell.nr]`): the slot of numerology μ
//!   (TS 38.211), `N_RB` of the channel bandwidth (TS 38.101-1/-2), the
//!   PDSCH MCS table and the TBS of TS 38.214 §5.1.3.2 per slot, RBGs of TS
//!   38.214 Table 5.1.2.2.1-1 (configuration 1), FDD or a TDD pattern
//!   ([`duplex`](super::duplex)), HARQ-ACK `K1` slots after the PDSCH in the
//!   first slot that carries PUCCH, and a retransmission in the first
//!   downlink slot after the HARQ-ACK's.
//!
//! Every deviation from TS 38.214/38.213 is numbered in `docs/nr.md`.

use serde::{Deserialize, Serialize};

use super::amc;
use super::duplex::{parse_pattern, Duplex, SlotKind};
use super::nr;
use super::tbs_grid::{RateIdx, TbsGrid};
use crate::units::{check_range_u64, SimDuration, SimTime};

/// The radio access technology of a cell.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Rat {
    #[default]
    Lte,
    Nr,
}

impl Rat {
    pub fn is_lte(&self) -> bool {
        *self == Rat::Lte
    }
}

/// The PDSCH MCS table (`mcs-Table` of TS 38.331 `PDSCH-Config`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum NrMcsTable {
    /// TS 38.214 Table 5.1.3.1-1 (up to 64QAM), CQI Table 5.2.2.1-2.
    #[default]
    #[serde(rename = "qam64")]
    Qam64,
    /// Table 5.1.3.1-2 (up to 256QAM), CQI Table 5.2.2.1-3.
    #[serde(rename = "qam256")]
    Qam256,
    /// Table 5.1.3.1-3 (64QAM, low spectral efficiency), CQI Table 5.2.2.1-4.
    #[serde(rename = "qam64LowSE")]
    Qam64LowSe,
}

impl NrMcsTable {
    pub fn table(self) -> nr::McsTable {
        match self {
            NrMcsTable::Qam64 => nr::McsTable::Qam64,
            NrMcsTable::Qam256 => nr::McsTable::Qam256,
            NrMcsTable::Qam64LowSe => nr::McsTable::Qam64LowSe,
        }
    }
}

/// Frequency range of an NR carrier (selects the `N_RB` table).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum NrRange {
    Fr1,
    Fr2,
}

/// `[cell.nr]`: the NR carrier and its PDSCH.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct NrConfig {
    /// Numerology μ, 0..=3: 15·2^μ kHz subcarriers, slots of 1/2^μ ms.
    pub numerology: u8,
    /// FR1 or FR2; absent: FR1 for μ = 0..=2, FR2 for μ = 3.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub frequency_range: Option<NrRange>,
    pub mcs_table: NrMcsTable,
    /// TDD slot pattern (e.g. "DDDSU"); absent: FDD.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tdd_pattern: Option<String>,
    /// Downlink symbols of the S slot (`nrofDownlinkSymbols`).
    pub special_dl_symbols: u8,
    /// Uplink symbols of the S slot (`nrofUplinkSymbols`): PUCCH.
    pub special_ul_symbols: u8,
    /// PDSCH symbols of a D slot (`N_symb^sh`; 14 minus the PDCCH's). The S
    /// slot's PDSCH has as many fewer as the slot has fewer downlink symbols.
    pub pdsch_symbols: u8,
    /// DM-RS REs per PRB of the PDSCH (`N_DMRS^PRB`).
    pub dmrs_res_per_prb: u16,
    /// `xOverhead`, REs per PRB: 0, 6, 12 or 18.
    pub x_overhead: u16,
    /// MIMO layers (one codeword): 1..=4.
    pub layers: u8,
}

impl Default for NrConfig {
    fn default() -> Self {
        NrConfig {
            numerology: 1,
            frequency_range: None,
            mcs_table: NrMcsTable::Qam64,
            tdd_pattern: None,
            special_dl_symbols: 10,
            special_ul_symbols: 2,
            pdsch_symbols: 12,
            dmrs_res_per_prb: 12,
            x_overhead: 0,
            layers: 1,
        }
    }
}

impl NrConfig {
    pub fn mu(&self) -> Result<nr::Numerology, String> {
        nr::Numerology::new(self.numerology)
            .ok_or_else(|| format!("nr.numerology must be in [0, 3], got {}", self.numerology))
    }

    pub fn range(&self) -> nr::FrequencyRange {
        match self.frequency_range {
            Some(NrRange::Fr1) => nr::FrequencyRange::Fr1,
            Some(NrRange::Fr2) => nr::FrequencyRange::Fr2,
            None if self.numerology >= 3 => nr::FrequencyRange::Fr2,
            None => nr::FrequencyRange::Fr1,
        }
    }

    /// `N_RB` of a channel of `mhz` MHz; the error names the field and value.
    pub fn n_rb(&self, mhz: f64) -> Result<u16, String> {
        let mu = self.mu()?;
        if !(mhz.is_finite() && mhz >= 1.0 && mhz.fract() == 0.0 && mhz <= 400.0) {
            return Err(format!(
                "bandwidth_mhz: {mhz} is not an NR channel bandwidth (whole MHz, 5 to 100 in FR1, 50 to 400 in FR2)"
            ));
        }
        nr::max_transmission_bandwidth(self.range(), mhz as u32, mu)
            .map(|p| p.get())
            .map_err(|e| format!("bandwidth_mhz: {mhz} MHz at numerology {}: {e}", self.numerology))
    }

    fn resources(&self, symbols: u8) -> Result<nr::PdschResources, String> {
        let xoh = nr::XOverhead::from_res_per_prb(self.x_overhead)
            .ok_or_else(|| format!("nr.x_overhead must be 0, 6, 12 or 18, got {}", self.x_overhead))?;
        let layers =
            nr::Layers::new(self.layers).ok_or_else(|| format!("nr.layers must be in [1, 4], got {}", self.layers))?;
        nr::PdschResources::new(symbols, self.dmrs_res_per_prb, xoh, layers).map_err(|e| e.to_string())
    }

    /// PDSCH symbols of the S slot: its downlink symbols minus the control
    /// symbols a D slot has (14 − `pdsch_symbols`); 0 if none are left.
    pub fn special_pdsch_symbols(&self) -> u8 {
        let control = nr::SYMBOLS_PER_SLOT.saturating_sub(self.pdsch_symbols);
        self.special_dl_symbols.saturating_sub(control)
    }

    pub fn validate(&self) -> Result<(), String> {
        let mu = self.mu()?;
        if let Some(r) = self.frequency_range {
            let range = self.range();
            if !range.numerologies().contains(&mu) {
                return Err(format!(
                    "nr.frequency_range: {r:?} has no numerology {} ({} defines {:?})",
                    self.numerology,
                    range.nrb_table(),
                    range.numerologies().iter().map(|m| m.get()).collect::<Vec<_>>()
                ));
            }
        }
        if nr::XOverhead::from_res_per_prb(self.x_overhead).is_none() {
            return Err(format!("nr.x_overhead must be 0, 6, 12 or 18, got {}", self.x_overhead));
        }
        check_range_u64("nr.layers", self.layers as u64, 1, 4)?;
        check_range_u64("nr.pdsch_symbols", self.pdsch_symbols as u64, 1, 14)?;
        check_range_u64("nr.dmrs_res_per_prb", self.dmrs_res_per_prb as u64, 0, 156)?;
        self.resources(self.pdsch_symbols)
            .map_err(|e| format!("nr.pdsch_symbols = {}: {e}", self.pdsch_symbols))?;
        check_range_u64("nr.special_dl_symbols", self.special_dl_symbols as u64, 0, 14)?;
        check_range_u64("nr.special_ul_symbols", self.special_ul_symbols as u64, 0, 14)?;
        if self.special_dl_symbols + self.special_ul_symbols > 14 {
            return Err(format!(
                "nr.special_dl_symbols + nr.special_ul_symbols must be at most 14, got {} + {}",
                self.special_dl_symbols, self.special_ul_symbols
            ));
        }
        // (An S slot whose PDSCH would have no data RE carries none.)
        if let Some(p) = &self.tdd_pattern {
            parse_pattern(p, mu.slot_duration())?;
        }
        Ok(())
    }
}

/// How a failed transport block's retransmission is timed.
#[derive(Clone, Debug)]
pub enum HarqTiming {
    /// LTE FDD: a fixed round trip.
    Fixed(SimDuration),
    /// NR: HARQ-ACK in the first PUCCH slot at or after PDSCH + `K1`
    /// slots, the retransmission in the first PDSCH slot after it.
    K1 { k1: SimDuration },
}

/// What the cell's RAT fixes, resolved once.
pub struct Radio {
    pub rat: Rat,
    pub slot: SimDuration,
    pub prbs: u16,
    pub rbg_size: u16,
    /// Occupied bandwidth, Hz (the channel model's noise).
    pub bandwidth_hz: f64,
    pub duplex: Duplex,
    /// D slots (and every FDD slot).
    pub grid: TbsGrid,
    /// The S slot's PDSCH, if it has one.
    pub grid_special: Option<TbsGrid>,
    /// CQI (0..=15) → rate index.
    pub rate_for_cqi: [Option<RateIdx>; 16],
    /// Windows given in LTE TTIs (1 ms) are this many slots each.
    pub slots_per_ms: u32,
    pub harq: HarqTiming,
}

/// NR RBG size `P`, TS 38.214 Table 5.1.2.2.1-1, configuration 1: 2 for a
/// bandwidth part of 1..=36 PRBs, 4 to 72, 8 to 144, 16 to 275.
pub fn nr_rbg_size(prbs: u16) -> u16 {
    match prbs {
        0..=36 => 2,
        37..=72 => 4,
        73..=144 => 8,
        _ => 16,
    }
}

impl Radio {
    /// LTE: `prbs` (validated), a TTI of `tti`, HARQ round trip of `rtt_ttis`.
    pub fn lte(prbs: u16, tti: SimDuration, rtt_ttis: u32) -> Radio {
        Radio {
            rat: Rat::Lte,
            slot: tti,
            prbs,
            rbg_size: amc::rbg_size(prbs),
            bandwidth_hz: prbs as f64 * 180e3,
            duplex: Duplex::fdd(tti),
            grid: TbsGrid::lte(prbs),
            grid_special: None,
            rate_for_cqi: std::array::from_fn(|c| {
                amc::Cqi::new(c as u8).map(|c| RateIdx::new(amc::itbs_for_mcs(amc::mcs_for_cqi(c)).get()))
            }),
            slots_per_ms: 1,
            harq: HarqTiming::Fixed(tti * rtt_ttis as u64),
        }
    }

    /// NR from a validated `[cell.nr]` and band of `prbs` PRBs.
    pub fn nr(cfg: &NrConfig, prbs: u16, k1_slots: u32) -> Radio {
        let mu = cfg.mu().expect("validated");
        let slot = mu.slot_duration();
        let table = cfg.mcs_table.table();
        let res = cfg.resources(cfg.pdsch_symbols).expect("validated");
        let sp = cfg.special_pdsch_symbols();
        let grid_special = if sp > 0 {
            cfg.resources(sp).ok().map(|r| TbsGrid::nr(table, &r, prbs))
        } else {
            None
        };
        let duplex = match &cfg.tdd_pattern {
            None => Duplex::fdd(slot),
            Some(p) => Duplex::tdd(
                slot,
                parse_pattern(p, slot).expect("validated"),
                grid_special.is_some(),
                cfg.special_ul_symbols > 0,
            ),
        };
        Radio {
            rat: Rat::Nr,
            slot,
            prbs,
            rbg_size: nr_rbg_size(prbs),
            bandwidth_hz: prbs as f64 * 12.0 * mu.subcarrier_spacing_khz() as f64 * 1e3,
            duplex,
            grid: TbsGrid::nr(table, &res, prbs),
            grid_special,
            rate_for_cqi: std::array::from_fn(|c| {
                nr::Cqi::new(c as u8).map(|c| RateIdx::new(nr::mcs_for_cqi(table, c).get()))
            }),
            slots_per_ms: mu.slots_per_subframe(),
            harq: HarqTiming::K1 {
                k1: slot * k1_slots as u64,
            },
        }
    }

    /// The grid of the slot starting at `t`, or `None` if it carries no
    /// downlink data.
    #[inline]
    pub fn dl_grid(&self, t: SimTime) -> Option<&TbsGrid> {
        match self.duplex.kind(t) {
            SlotKind::Downlink => Some(&self.grid),
            SlotKind::Special => self.grid_special.as_ref(),
            SlotKind::Uplink => None,
        }
    }

    /// When the gNB learns whether the block sent in the slot starting at
    /// `t` decoded (LTE: `None`, the fixed round trip has no separate ACK).
    pub fn harq_ack_at(&self, t: SimTime) -> SimTime {
        match &self.harq {
            HarqTiming::Fixed(rtt) => t + *rtt,
            // The HARQ-ACK's slot ends: the gNB has it.
            HarqTiming::K1 { k1 } => self.duplex.next_pucch(t + *k1) + self.slot,
        }
    }

    /// When a block that failed in the slot starting at `t` is due again.
    pub fn retx_due(&self, t: SimTime) -> SimTime {
        match &self.harq {
            HarqTiming::Fixed(rtt) => t + *rtt,
            HarqTiming::K1 { .. } => self.duplex.next_pdsch(self.harq_ack_at(t)),
        }
    }

    /// Mean downlink bits per slot over the TDD pattern (every slot in FDD)
    /// of `grid_bits(grid)`: the ground truth per slot.
    pub fn mean_over_pattern(&self, f: impl Fn(&TbsGrid) -> f64) -> f64 {
        match self.duplex.pattern() {
            None => f(&self.grid),
            Some(p) => {
                let d = f(&self.grid);
                let s = self.grid_special.as_ref().map_or(0.0, &f);
                let sum: f64 = p
                    .iter()
                    .map(|k| match k {
                        SlotKind::Downlink => d,
                        SlotKind::Special => s,
                        SlotKind::Uplink => 0.0,
                    })
                    .sum();
                sum / p.len() as f64
            }
        }
    }
}
