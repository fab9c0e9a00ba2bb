//! The transport block sizes one slot kind of a cell offers: bits for every
//! (rate index, number of PRBs) of the cell's band, worked out once when the
//! cell is built, so the scheduler, the agent and the estimators ask one
//! table whatever the radio access technology.
//!
//! - LTE: the rate index is `I_TBS` (0..=26) and the bits are TS 36.213
//!   Table 7.1.7.2.1-1 ([`amc::tbs`]).
//! - NR: the rate index is `I_MCS` of the configured PDSCH MCS table
//!   (0..=28, or 0..=27 for qam256) and the bits are TS 38.214 §5.1.3.2
//!   ([`nr::tbs()`]) for the slot's PDSCH resources (symbols, DM-RS,
//!   xOverhead, layers).
//!
//! A grid answers exactly what the tables answer: an LTE grid gives the same
//! integers as `amc::tbs`, and its [`TbsGrid::min_prbs_for_bits`] is
//! `amc::min_prbs_for_bits`'s search (the only non-monotone LTE entry,
//! `N_PRB` = 1 at `I_TBS` 6, is tried first on its own; NR rows are
//! monotone, `nr::min_prbs_for_bits`).

use super::amc;
use super::nr;

/// The row of a cell's [`TbsGrid`]: `I_TBS` in LTE, `I_MCS` in NR.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RateIdx(u8);

impl RateIdx {
    pub const fn new(i: u8) -> RateIdx {
        RateIdx(i)
    }
    pub const fn get(self) -> u8 {
        self.0
    }
}

/// Bits per (rate index, PRBs) of one slot kind of one cell.
#[derive(Clone, Debug)]
pub struct TbsGrid {
    /// PRBs of the band: columns 0..=prbs (column 0 is 0 bits).
    prbs: u16,
    rows: u8,
    bits: Vec<u32>,
    /// Bits over the whole band per row, as f64 (PF's numerator).
    full: Vec<f64>,
}

impl TbsGrid {
    fn build(prbs: u16, rows: u8, f: impl Fn(u8, u16) -> u32) -> TbsGrid {
        let stride = prbs as usize + 1;
        let mut bits = vec![0u32; stride * rows as usize];
        for r in 0..rows {
            for n in 1..=prbs {
                bits[r as usize * stride + n as usize] = f(r, n);
            }
        }
        let full = (0..rows)
            .map(|r| bits[r as usize * stride + prbs as usize] as f64)
            .collect();
        TbsGrid { prbs, rows, bits, full }
    }

    /// LTE: TS 36.213 Table 7.1.7.2.1-1 over `prbs` (1..=110) PRBs.
    pub fn lte(prbs: u16) -> TbsGrid {
        TbsGrid::build(prbs, 27, |r, n| {
            amc::tbs(
                amc::Itbs::new(r).expect("0..=26"),
                amc::Prbs::new(n).expect("validated: 1..=110"),
            )
            .get()
        })
    }

    /// NR: TS 38.214 §5.1.3.2 for every usable `I_MCS` of `table` with
    /// `resources`, over `prbs` (1..=275) PRBs.
    pub fn nr(table: nr::McsTable, resources: &nr::PdschResources, prbs: u16) -> TbsGrid {
        let rows = table.max_data_mcs().get() + 1;
        TbsGrid::build(prbs, rows, |r, n| {
            let rate = nr::mcs_rate(table, nr::Mcs::new(r).expect("0..=28")).expect("a usable MCS");
            nr::tbs(rate, resources, nr::Prbs::new(n).expect("validated: 1..=275")).get()
        })
    }

    /// PRBs of the band.
    pub fn prbs(&self) -> u16 {
        self.prbs
    }
    /// Rate indices 0..rows.
    pub fn rows(&self) -> u8 {
        self.rows
    }

    /// Bits of `n` PRBs at `rate` (0 for no PRB; `n` at most the band).
    #[inline]
    pub fn bits(&self, rate: RateIdx, n: u16) -> u32 {
        debug_assert!(n <= self.prbs && rate.0 < self.rows);
        self.bits[rate.0 as usize * (self.prbs as usize + 1) + n as usize]
    }

    /// Bits of the whole band at `rate`.
    #[inline]
    pub fn full(&self, rate: RateIdx) -> f64 {
        self.full[rate.0 as usize]
    }

    /// Bits of the whole band per row.
    #[inline]
    pub fn full_bits(&self) -> &[f64] {
        &self.full
    }

    /// The smallest allocation whose bits at `rate` are at least `bits`; the
    /// whole band if even that is too small.
    #[inline]
    pub fn min_prbs_for_bits(&self, rate: RateIdx, bits: u32) -> u16 {
        super::least_prbs_fitting(self.prbs, |n| self.bits(rate, n) >= bits)
    }

    /// Bits a share of `prbs` PRBs (fractional) carries at `rate`,
    /// interpolating linearly between whole PRB counts (the XRC agent's
    /// choice 1).
    #[inline]
    pub fn share_bits(&self, rate: RateIdx, prbs: f64) -> f64 {
        if prbs <= 0.0 {
            return 0.0;
        }
        let whole = prbs.floor().min(self.prbs as f64) as u16;
        let frac = prbs - whole as f64;
        let lo = self.bits(rate, whole) as f64;
        let hi = if whole < self.prbs {
            self.bits(rate, whole + 1) as f64
        } else {
            lo
        };
        lo + (hi - lo) * frac
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_lte_grid_gives_the_tables_bits_and_search_for_every_entry() {
        let g = TbsGrid::lte(100);
        for r in 0..27u8 {
            let itbs = amc::Itbs::new(r).unwrap();
            for n in 1..=100u16 {
                assert_eq!(g.bits(RateIdx(r), n), amc::tbs(itbs, amc::Prbs::new(n).unwrap()).get());
            }
            for bits in [1u32, 16, 328, 1000, 36_696, 75_376, 1_000_000] {
                let want = amc::min_prbs_for_bits(itbs, bits, amc::Prbs::new(100).unwrap()).get();
                assert_eq!(g.min_prbs_for_bits(RateIdx(r), bits), want, "itbs {r} bits {bits}");
            }
        }
    }

    #[test]
    fn an_nr_grid_gives_38_214_bits_and_the_fewest_prbs() {
        let res = nr::PdschResources::new(12, 12, nr::XOverhead::Xoh0, nr::Layers::ONE).unwrap();
        let g = TbsGrid::nr(nr::McsTable::Qam256, &res, 273);
        assert_eq!(g.rows(), 28);
        // The peak of docs/nr.md: 273 PRBs at 256QAM MCS 27, one layer.
        assert_eq!(g.bits(RateIdx(27), 273), 270_576);
        for r in [0u8, 9, 27] {
            let rate = nr::mcs_rate(nr::McsTable::Qam256, nr::Mcs::new(r).unwrap()).unwrap();
            for bits in [1u32, 5000, 100_000] {
                let want = nr::min_prbs_for_bits(rate, &res, bits, nr::Prbs::new(273).unwrap()).get();
                assert_eq!(g.min_prbs_for_bits(RateIdx(r), bits), want);
            }
        }
    }

    #[test]
    fn a_share_interpolates_between_whole_prbs_and_stops_at_the_band() {
        let g = TbsGrid::lte(50);
        let r = RateIdx(26);
        assert_eq!(g.share_bits(r, 0.0), 0.0);
        assert_eq!(g.share_bits(r, 50.0), 36_696.0);
        let (a, b) = (g.bits(r, 25) as f64, g.bits(r, 26) as f64);
        assert!((g.share_bits(r, 25.5) - (a + b) / 2.0).abs() < 1e-9);
    }
}
