//! The 4-bit CQI tables of TS 38.214 §5.2.2.1 (Tables 5.2.2.1-2, -3, -4)
//! and the gNB's choice of MCS for a reported CQI.
//!
//! # CQI → MCS
//!
//! TS 38.214 does not say which MCS a gNB schedules for a CQI. The rule
//! here ([`mcs_for_cqi`]) is: the highest `I_MCS` of the MCS table whose
//! spectral efficiency `Q_m × R` does not exceed the CQI's, with the CQI
//! table paired to the MCS table as RRC pairs them (`cqi-Table` table1,
//! table2, table3 with `mcs-Table` qam64, qam256, qam64LowSE). Every CQI
//! row of the three tables except CQI 1 of Tables 5.2.2.1-2 and -3 appears
//! verbatim (same `Q_m`, same `R × 1024`) in its paired MCS table, so the
//! rule picks that row. CQI 1 of those two tables (QPSK, 78/1024,
//! 0.1523 bit/s/Hz) is below every MCS of its paired table (MCS 0 is
//! 0.2344): the rule has no answer and MCS 0 is used, as srsRAN and OAI do
//! (deviation 1 of the module doc). The efficiencies compared are exact
//! integers (`Q_m × R × 2048`), never the four-decimal rounded values.

use super::mcs::{mcs_rate, CodeRate, Mcs, McsRate, McsTable, Modulation};

/// A CQI table of TS 38.214 §5.2.2.1, as selected by the RRC parameter
/// `cqi-Table` of `CSI-ReportConfig` (TS 38.331).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum CqiTable {
    /// Table 5.2.2.1-2 (up to 64QAM; `cqi-Table = table1`). The same values
    /// as LTE's TS 36.213 Table 7.2.3-1.
    Table1,
    /// Table 5.2.2.1-3 (up to 256QAM; `table2`).
    Table2,
    /// Table 5.2.2.1-4 (64QAM, low spectral efficiency; `table3`).
    Table3,
}

impl CqiTable {
    pub const ALL: [CqiTable; 3] = [CqiTable::Table1, CqiTable::Table2, CqiTable::Table3];

    pub const fn spec_table(self) -> &'static str {
        match self {
            CqiTable::Table1 => "TS 38.214 Table 5.2.2.1-2",
            CqiTable::Table2 => "TS 38.214 Table 5.2.2.1-3",
            CqiTable::Table3 => "TS 38.214 Table 5.2.2.1-4",
        }
    }

    fn rows(self) -> &'static [CqiRow; 15] {
        match self {
            CqiTable::Table1 => &TABLE_5_2_2_1_2,
            CqiTable::Table2 => &TABLE_5_2_2_1_3,
            CqiTable::Table3 => &TABLE_5_2_2_1_4,
        }
    }
}

impl McsTable {
    /// The CQI table paired with this MCS table: qam64 ↔ table1, qam256 ↔
    /// table2, qam64LowSE ↔ table3.
    pub const fn cqi_table(self) -> CqiTable {
        match self {
            McsTable::Qam64 => CqiTable::Table1,
            McsTable::Qam256 => CqiTable::Table2,
            McsTable::Qam64LowSe => CqiTable::Table3,
        }
    }
}

/// A CQI index 1..=15. CQI 0 ("out of range") is `Option<Cqi>::None`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Cqi(u8);

impl Cqi {
    /// `Some` for 1..=15, `None` otherwise (including 0, "out of range").
    pub const fn new(index: u8) -> Option<Cqi> {
        if matches!(index, 1..=15) {
            Some(Cqi(index))
        } else {
            None
        }
    }
    pub const fn get(self) -> u8 {
        self.0
    }
}

/// One row of a CQI table: modulation, code rate × 1024 and efficiency as
/// printed.
#[derive(Copy, Clone, Debug)]
struct CqiRow {
    modulation: Modulation,
    code_rate_x1024: u16,
    /// Spectral efficiency in units of 10⁻⁴ bit/s/Hz, as printed.
    efficiency_e4: u32,
}

const fn row(q_m: u8, code_rate_x1024: u16, efficiency_e4: u32) -> CqiRow {
    let modulation = match q_m {
        2 => Modulation::Qpsk,
        4 => Modulation::Qam16,
        6 => Modulation::Qam64,
        _ => Modulation::Qam256,
    };
    CqiRow {
        modulation,
        code_rate_x1024,
        efficiency_e4,
    }
}

/// TS 38.214 Table 5.2.2.1-2, "4-bit CQI Table 1", indexed by CQI − 1.
#[rustfmt::skip]
static TABLE_5_2_2_1_2: [CqiRow; 15] = [
    row(2,  78,  1523), // CQI 1:  QPSK
    row(2, 120,  2344), // CQI 2:  QPSK
    row(2, 193,  3770), // CQI 3:  QPSK
    row(2, 308,  6016), // CQI 4:  QPSK
    row(2, 449,  8770), // CQI 5:  QPSK
    row(2, 602, 11758), // CQI 6:  QPSK
    row(4, 378, 14766), // CQI 7:  16QAM
    row(4, 490, 19141), // CQI 8:  16QAM
    row(4, 616, 24063), // CQI 9:  16QAM
    row(6, 466, 27305), // CQI 10: 64QAM
    row(6, 567, 33223), // CQI 11: 64QAM
    row(6, 666, 39023), // CQI 12: 64QAM
    row(6, 772, 45234), // CQI 13: 64QAM
    row(6, 873, 51152), // CQI 14: 64QAM
    row(6, 948, 55547), // CQI 15: 64QAM
];

/// TS 38.214 Table 5.2.2.1-3, "4-bit CQI Table 2", indexed by CQI − 1.
#[rustfmt::skip]
static TABLE_5_2_2_1_3: [CqiRow; 15] = [
    row(2,  78,  1523), // CQI 1:  QPSK
    row(2, 193,  3770), // CQI 2:  QPSK
    row(2, 449,  8770), // CQI 3:  QPSK
    row(4, 378, 14766), // CQI 4:  16QAM
    row(4, 490, 19141), // CQI 5:  16QAM
    row(4, 616, 24063), // CQI 6:  16QAM
    row(6, 466, 27305), // CQI 7:  64QAM
    row(6, 567, 33223), // CQI 8:  64QAM
    row(6, 666, 39023), // CQI 9:  64QAM
    row(6, 772, 45234), // CQI 10: 64QAM
    row(6, 873, 51152), // CQI 11: 64QAM
    row(8, 711, 55547), // CQI 12: 256QAM
    row(8, 797, 62266), // CQI 13: 256QAM
    row(8, 885, 69141), // CQI 14: 256QAM
    row(8, 948, 74063), // CQI 15: 256QAM
];

/// TS 38.214 Table 5.2.2.1-4, "4-bit CQI Table 3", indexed by CQI − 1.
#[rustfmt::skip]
static TABLE_5_2_2_1_4: [CqiRow; 15] = [
    row(2,  30,   586), // CQI 1:  QPSK
    row(2,  50,   977), // CQI 2:  QPSK
    row(2,  78,  1523), // CQI 3:  QPSK
    row(2, 120,  2344), // CQI 4:  QPSK
    row(2, 193,  3770), // CQI 5:  QPSK
    row(2, 308,  6016), // CQI 6:  QPSK
    row(2, 449,  8770), // CQI 7:  QPSK
    row(2, 602, 11758), // CQI 8:  QPSK
    row(4, 378, 14766), // CQI 9:  16QAM
    row(4, 490, 19141), // CQI 10: 16QAM
    row(4, 616, 24063), // CQI 11: 16QAM
    row(6, 466, 27305), // CQI 12: 64QAM
    row(6, 567, 33223), // CQI 13: 64QAM
    row(6, 666, 39023), // CQI 14: 64QAM
    row(6, 772, 45234), // CQI 15: 64QAM
];

fn row_of(table: CqiTable, cqi: Cqi) -> &'static CqiRow {
    &table.rows()[usize::from(cqi.0) - 1]
}

/// Modulation and code rate of a CQI (TS 38.214 Tables 5.2.2.1-2..-4).
pub fn cqi_rate(table: CqiTable, cqi: Cqi) -> McsRate {
    let r = row_of(table, cqi);
    McsRate {
        modulation: r.modulation,
        code_rate: CodeRate::from_x2048(r.code_rate_x1024 * 2).expect("every CQI code rate is below 1024/1024"),
    }
}

/// Spectral efficiency of a CQI in bit/s/Hz with the table's four decimals
/// (Table 5.2.2.1-2: 0.1523 for CQI 1 … 5.5547 for CQI 15).
pub fn cqi_efficiency(table: CqiTable, cqi: Cqi) -> f64 {
    f64::from(row_of(table, cqi).efficiency_e4) / 10_000.0
}

/// The MCS of `mcs_table` a gNB uses for a CQI reported against the paired
/// CQI table: the highest `I_MCS` whose exact `Q_m × R` does not exceed the
/// CQI's, or MCS 0 if none does (CQI 1 of Tables 5.2.2.1-2 and -3). See the
/// module doc. For qam64: CQI 1, 2 → MCS 0, then 2, 4, 6, 8, 11, 13, 15,
/// 18, 20, 22, 24, 26, 28.
pub fn mcs_for_cqi(mcs_table: McsTable, cqi: Cqi) -> Mcs {
    let target = cqi_rate(mcs_table.cqi_table(), cqi).efficiency_x2048();
    let mut best = Mcs::new(0).expect("MCS 0 exists");
    for i in 0..=mcs_table.max_data_mcs().get() {
        let mcs = Mcs::new(i).expect("I_MCS ≤ 28");
        let rate = mcs_rate(mcs_table, mcs).expect("not reserved");
        if rate.efficiency_x2048() <= target {
            best = mcs;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cqi(i: u8) -> Cqi {
        Cqi::new(i).unwrap()
    }

    #[test]
    fn cqi_new_accepts_1_to_15_only() {
        for i in 1..=15u8 {
            assert_eq!(Cqi::new(i).map(Cqi::get), Some(i));
        }
        assert_eq!(Cqi::new(0), None);
        assert_eq!(Cqi::new(16), None);
    }

    #[test]
    fn printed_efficiencies_are_qm_times_rate_over_1024_rounded_to_four_decimals() {
        for table in CqiTable::ALL {
            for i in 1..=15u8 {
                let r = row_of(table, cqi(i));
                // Q_m · R×1024 / 1024 in units of 1e-4, rounded half up, in
                // integers: (Q_m · R × 10⁴ + 512) / 1024.
                let exact_e4 = (u32::from(r.modulation.order()) * u32::from(r.code_rate_x1024) * 10_000 + 512) / 1024;
                assert_eq!(r.efficiency_e4, exact_e4, "{table:?} CQI {i}");
            }
        }
    }

    #[test]
    fn efficiency_rises_strictly_with_the_cqi_in_every_table() {
        for table in CqiTable::ALL {
            for i in 1..15u8 {
                assert!(
                    cqi_rate(table, cqi(i)).efficiency_x2048() < cqi_rate(table, cqi(i + 1)).efficiency_x2048(),
                    "{table:?} CQI {i}"
                );
            }
        }
    }

    #[test]
    fn table_1_is_ltes_table_7_2_3_1() {
        use crate::ran::amc;
        for i in 1..=15u8 {
            let lte = amc::Cqi::new(i).unwrap();
            assert_eq!(
                cqi_efficiency(CqiTable::Table1, cqi(i)),
                amc::cqi_efficiency(lte),
                "CQI {i}"
            );
            assert_eq!(
                cqi_rate(CqiTable::Table1, cqi(i)).modulation.order(),
                amc::cqi_modulation_order(lte),
                "CQI {i}"
            );
        }
    }

    #[test]
    fn every_cqi_but_cqi_1_of_tables_1_and_2_is_a_row_of_its_paired_mcs_table() {
        for mcs_table in McsTable::ALL {
            for i in 1..=15u8 {
                let rate = cqi_rate(mcs_table.cqi_table(), cqi(i));
                let chosen = mcs_for_cqi(mcs_table, cqi(i));
                let same = mcs_rate(mcs_table, chosen) == Some(rate);
                let clamped = i == 1 && mcs_table != McsTable::Qam64LowSe;
                assert_eq!(same, !clamped, "{mcs_table} CQI {i} -> MCS {}", chosen.get());
            }
        }
    }

    #[test]
    fn cqi_1_of_tables_1_and_2_is_below_every_mcs_and_gets_mcs_0() {
        for mcs_table in [McsTable::Qam64, McsTable::Qam256] {
            let c = cqi_rate(mcs_table.cqi_table(), cqi(1)).efficiency_x2048();
            let m0 = mcs_rate(mcs_table, Mcs::new(0).unwrap()).unwrap().efficiency_x2048();
            assert!(c < m0);
            assert_eq!(mcs_for_cqi(mcs_table, cqi(1)).get(), 0);
        }
    }

    #[test]
    fn chosen_mcs_never_exceeds_the_cqi_efficiency_and_the_next_one_does() {
        for mcs_table in McsTable::ALL {
            for i in 2..=15u8 {
                let target = cqi_rate(mcs_table.cqi_table(), cqi(i)).efficiency_x2048();
                let m = mcs_for_cqi(mcs_table, cqi(i)).get();
                let eff = |j: u8| mcs_rate(mcs_table, Mcs::new(j).unwrap()).unwrap().efficiency_x2048();
                assert!(eff(m) <= target, "{mcs_table} CQI {i}");
                for j in m + 1..=mcs_table.max_data_mcs().get() {
                    assert!(eff(j) > target, "{mcs_table} CQI {i}: MCS {j} also fits");
                }
            }
        }
    }

    #[test]
    fn mcs_for_cqi_never_decreases_with_the_cqi_and_cqi_15_reaches_the_top() {
        for mcs_table in McsTable::ALL {
            for i in 1..15u8 {
                assert!(
                    mcs_for_cqi(mcs_table, cqi(i)) <= mcs_for_cqi(mcs_table, cqi(i + 1)),
                    "{mcs_table} {i}"
                );
            }
            assert_eq!(mcs_for_cqi(mcs_table, cqi(15)), mcs_table.max_data_mcs(), "{mcs_table}");
        }
    }
}
