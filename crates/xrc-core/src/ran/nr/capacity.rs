//! What a scheduler asks of the NR tables: the bits one slot carries for an
//! MCS and an allocation, and the fewest PRBs that carry a given number of
//! bits.

use std::fmt;

use super::mcs::{mcs_entry, Mcs, McsRate, McsTable};
use super::tbs::{tbs, PdschResources, Prbs, TbsBits};

/// An `I_MCS` that is reserved in its table (it only signals the modulation
/// of a retransmission, whose TBS is the first transmission's).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ReservedMcs {
    pub table: McsTable,
    pub mcs: Mcs,
}

impl fmt::Display for ReservedMcs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "I_MCS {} of {} ({}) is reserved: it has no code rate, so no TBS (the highest usable index is {})",
            self.mcs.get(),
            self.table.spec_table(),
            self.table,
            self.table.max_data_mcs().get()
        )
    }
}

impl std::error::Error for ReservedMcs {}

/// The transport block size in bits that `prbs` PRBs carry in one slot at
/// `mcs` of `table` with `resources` (symbols, DM-RS, xOverhead, layers):
/// TS 38.214 §5.1.3.2. A reserved MCS is an error.
pub fn slot_capacity(
    table: McsTable,
    mcs: Mcs,
    resources: &PdschResources,
    prbs: Prbs,
) -> Result<TbsBits, ReservedMcs> {
    match mcs_entry(table, mcs).rate() {
        Some(rate) => Ok(tbs(rate, resources, prbs)),
        None => Err(ReservedMcs { table, mcs }),
    }
}

/// The smallest `n_PRB` whose TBS at `rate` with `resources` is at least
/// `bits`, capped at `max_prbs`: if even `max_prbs` PRBs carry fewer bits,
/// returns `max_prbs`.
///
/// A binary search: for a fixed rate and per-PRB resources the TBS never
/// decreases with `n_PRB`. (`N_info` grows with `n_PRB`; step 3 quantizes
/// down and looks up upwards, both monotone; step 4 rounds to a grid of
/// 2^n that gets coarser exactly at powers of two, which lie on both grids;
/// step 3's largest result, 3824, is below step 4's smallest, 3840; and
/// step 4's TBS is within `8C` bits above `N'_info` while consecutive
/// `N'_info` differ by `2^n`, which is larger. The unit tests check it for
/// every MCS of every table and every `n_PRB`.)
pub fn min_prbs_for_bits(rate: McsRate, resources: &PdschResources, bits: u32, max_prbs: Prbs) -> Prbs {
    let fits = |n: u16| tbs(rate, resources, Prbs::new(n).expect("1..=max_prbs")).get() >= bits;
    Prbs::new(crate::ran::least_prbs_fitting(max_prbs.get(), fits)).expect("at most max_prbs")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ran::nr::mcs::mcs_rate;
    use crate::ran::nr::tbs::{segmentation, tbs_determination, Layers, TbsDetermination, TbsStep, XOverhead};

    fn mcs(i: u8) -> Mcs {
        Mcs::new(i).unwrap()
    }
    fn prbs(n: u16) -> Prbs {
        Prbs::new(n).unwrap()
    }
    fn res(symbols: u8, dmrs: u16, overhead: XOverhead, layers: u8) -> PdschResources {
        PdschResources::new(symbols, dmrs, overhead, Layers::new(layers).unwrap()).unwrap()
    }
    /// Allocations that span short and long PDSCHs, the 156-RE cap, the
    /// overhead and more than one layer.
    fn resource_cases() -> Vec<PdschResources> {
        vec![
            res(12, 12, XOverhead::Xoh0, 1),
            res(14, 0, XOverhead::Xoh0, 1),
            res(13, 6, XOverhead::Xoh6, 1),
            res(2, 6, XOverhead::Xoh0, 1),
            res(7, 24, XOverhead::Xoh18, 1),
            res(12, 12, XOverhead::Xoh0, 4),
        ]
    }
    fn all_rates() -> Vec<(McsTable, u8, McsRate)> {
        McsTable::ALL
            .iter()
            .flat_map(|&t| (0..=t.max_data_mcs().get()).map(move |i| (t, i, mcs_rate(t, mcs(i)).unwrap())))
            .collect()
    }

    #[test]
    fn reserved_mcs_has_no_capacity_and_says_why() {
        let r = res(12, 12, XOverhead::Xoh0, 1);
        let err = slot_capacity(McsTable::Qam256, mcs(28), &r, prbs(10)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "I_MCS 28 of TS 38.214 Table 5.1.3.1-2 (qam256) is reserved: it has no code rate, so no TBS \
             (the highest usable index is 27)"
        );
        assert!(slot_capacity(McsTable::Qam64, mcs(28), &r, prbs(10)).is_ok());
        assert!(slot_capacity(McsTable::Qam64, mcs(29), &r, prbs(10)).is_err());
    }

    #[test]
    fn tbs_never_decreases_with_the_prb_count_for_any_mcs_or_allocation() {
        for resources in resource_cases() {
            for (table, i, rate) in all_rates() {
                let mut previous = 0;
                for n in 1..=275 {
                    let t = tbs(rate, &resources, prbs(n)).get();
                    assert!(
                        t >= previous,
                        "{table} MCS {i}, {n} PRBs, {resources:?}: {t} < {previous}"
                    );
                    previous = t;
                }
            }
        }
    }

    #[test]
    fn tbs_never_decreases_with_the_mcs_except_qam64_16_to_17_whose_efficiency_drops() {
        let mut decreases = std::collections::BTreeSet::new();
        for resources in resource_cases() {
            for table in McsTable::ALL {
                for i in 0..table.max_data_mcs().get() {
                    for n in 1..=275 {
                        let a = slot_capacity(table, mcs(i), &resources, prbs(n)).unwrap();
                        let b = slot_capacity(table, mcs(i + 1), &resources, prbs(n)).unwrap();
                        if b < a {
                            decreases.insert((table.to_string(), i));
                        }
                    }
                }
            }
        }
        assert_eq!(decreases.into_iter().collect::<Vec<_>>(), [("qam64".to_string(), 16)]);
    }

    #[test]
    fn every_tbs_is_a_multiple_of_8_and_at_least_24_bits() {
        for resources in resource_cases() {
            for (table, i, rate) in all_rates() {
                for n in 1..=275 {
                    let t = tbs(rate, &resources, prbs(n)).get();
                    assert!(t >= 24 && t.is_multiple_of(8), "{table} MCS {i}, {n} PRBs: {t}");
                }
            }
        }
    }

    fn check_fits_segmentation(table: McsTable, i: u8, rate: McsRate, n: u16, d: &TbsDetermination) {
        let s = segmentation(d.tbs, rate.code_rate);
        let what = format!("{table} MCS {i}, {n} PRBs, TBS {}", d.tbs.get());
        match d.step {
            TbsStep::Table => {
                assert_eq!((s.tb_crc_bits, s.code_blocks), (16, 1), "{what}");
            }
            TbsStep::Formula { code_blocks } => {
                // TS 38.212 picks the same C as TS 38.214's formula assumed,
                // and every code block gets the same whole number of bytes.
                assert_eq!(s.tb_crc_bits, 24, "{what}");
                assert_eq!(s.code_blocks, code_blocks, "{what}");
                assert!(s.is_even(), "{what}");
                assert!((d.tbs.get() + 24).is_multiple_of(8 * code_blocks), "{what}");
                assert!(s.bits_per_code_block() <= s.base_graph.max_code_block_bits(), "{what}");
            }
        }
        // The TBS is the closest allowed size to N'_info from above.
        assert!(d.tbs.get() >= d.n_info_prime, "{what}");
    }

    #[test]
    fn tbs_plus_crc_splits_into_equal_code_blocks_exactly_as_ts_38_212_segments_it() {
        for resources in resource_cases() {
            for (table, i, rate) in all_rates() {
                for n in 1..=275 {
                    let d = tbs_determination(rate, &resources, prbs(n));
                    check_fits_segmentation(table, i, rate, n, &d);
                }
            }
        }
    }

    fn min_prbs_by_linear_scan(rate: McsRate, resources: &PdschResources, bits: u32, max: Prbs) -> Prbs {
        (1..=max.get())
            .map(prbs)
            .find(|&n| tbs(rate, resources, n).get() >= bits)
            .unwrap_or(max)
    }

    #[test]
    fn min_prbs_for_bits_matches_a_linear_scan() {
        let resources = res(12, 12, XOverhead::Xoh0, 1);
        for (table, i, rate) in all_rates() {
            let mut probes = vec![0u32, 1, 24, u32::MAX];
            for n in (1..=275).step_by(7).chain([274, 275]) {
                let b = tbs(rate, &resources, prbs(n)).get();
                probes.extend([b - 1, b, b + 1]);
            }
            for cap in [1u16, 24, 106, 273, 275] {
                for &bits in &probes {
                    assert_eq!(
                        min_prbs_for_bits(rate, &resources, bits, prbs(cap)),
                        min_prbs_by_linear_scan(rate, &resources, bits, prbs(cap)),
                        "{table} MCS {i}, {bits} bits, cap {cap}"
                    );
                }
            }
        }
    }

    #[test]
    fn min_prbs_for_zero_bits_is_one_and_too_many_bits_is_the_cap() {
        let resources = res(12, 12, XOverhead::Xoh0, 1);
        let rate = mcs_rate(McsTable::Qam256, mcs(27)).unwrap();
        assert_eq!(min_prbs_for_bits(rate, &resources, 0, prbs(273)), prbs(1));
        let full = tbs(rate, &resources, prbs(273)).get();
        // 273, 274 and 275 PRBs all round to N'_info = 270 336 (272 to
        // 262 144): the answer is the first of them.
        assert!(tbs(rate, &resources, prbs(272)).get() < full);
        assert_eq!(tbs(rate, &resources, prbs(275)).get(), full);
        assert_eq!(min_prbs_for_bits(rate, &resources, full, prbs(275)), prbs(273));
        // One bit more fits in no allocation: the cap is returned.
        assert_eq!(min_prbs_for_bits(rate, &resources, full + 1, prbs(273)), prbs(273));
        assert_eq!(min_prbs_for_bits(rate, &resources, full + 1, prbs(275)), prbs(275));
    }

    #[test]
    fn one_full_mid_band_slot_at_256qam_carries_270576_bits() {
        // μ = 1, 100 MHz: 273 PRBs, 12 PDSCH symbols with one DM-RS symbol.
        let resources = res(12, 12, XOverhead::Xoh0, 1);
        let bits = slot_capacity(McsTable::Qam256, mcs(27), &resources, prbs(273)).unwrap();
        assert_eq!(bits.get(), 270_576);
        assert_eq!(bits.bytes(), 33_822);
    }
}
