//! The PDSCH MCS index tables of TS 38.214 §5.1.3.1: Table 5.1.3.1-1
//! (64QAM), 5.1.3.1-2 (256QAM) and 5.1.3.1-3 (64QAM, low spectral
//! efficiency). Each `I_MCS` 0..=31 gives a modulation order `Q_m` and a
//! target code rate `R × 1024`; the last entries of each table are
//! "reserved" (they keep a modulation order but have no code rate: they
//! signal a retransmission whose TBS is that of the first transmission).

use std::fmt;

/// A modulation and its order `Q_m` (bits per resource element).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Modulation {
    Qpsk,
    Qam16,
    Qam64,
    Qam256,
}

impl Modulation {
    /// `Q_m`: 2, 4, 6 or 8.
    pub const fn order(self) -> u8 {
        match self {
            Modulation::Qpsk => 2,
            Modulation::Qam16 => 4,
            Modulation::Qam64 => 6,
            Modulation::Qam256 => 8,
        }
    }

    const fn from_order(q_m: u8) -> Modulation {
        match q_m {
            2 => Modulation::Qpsk,
            4 => Modulation::Qam16,
            6 => Modulation::Qam64,
            8 => Modulation::Qam256,
            _ => panic!("Q_m is 2, 4, 6 or 8"),
        }
    }
}

/// A target code rate `R`, stored as `R × 2048` so that every entry of the
/// 38.214 tables is an exact integer: the tables print `R × 1024`, which is
/// an integer everywhere except 682.5 and 916.5 in Table 5.1.3.1-2.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CodeRate(u16);

impl CodeRate {
    /// `Some` for 1..2048 (0 < R < 1), `None` otherwise.
    pub const fn from_x2048(r_x2048: u16) -> Option<CodeRate> {
        if r_x2048 > 0 && r_x2048 < 2048 {
            Some(CodeRate(r_x2048))
        } else {
            None
        }
    }
    /// `R × 2048`, exact.
    pub const fn x2048(self) -> u16 {
        self.0
    }
    /// `R × 1024` as printed in the tables (682.5, 916.5 keep their half).
    pub fn x1024(self) -> f64 {
        f64::from(self.0) / 2.0
    }
    /// `R` itself (for display and plots; nothing computes with it).
    pub fn as_f64(self) -> f64 {
        f64::from(self.0) / 2048.0
    }
}

/// A modulation and target code rate: a usable (non-reserved) row of an
/// MCS table, or a row of a CQI table.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct McsRate {
    pub modulation: Modulation,
    pub code_rate: CodeRate,
}

impl McsRate {
    /// Spectral efficiency `Q_m × R` scaled by 2048, exact. Comparisons of
    /// efficiencies use this.
    pub const fn efficiency_x2048(self) -> u32 {
        self.modulation.order() as u32 * self.code_rate.0 as u32
    }
    /// Spectral efficiency `Q_m × R` in bit/s/Hz (the tables' last column,
    /// which prints it to four decimals).
    pub fn efficiency(self) -> f64 {
        f64::from(self.efficiency_x2048()) / 2048.0
    }
}

/// One of the PDSCH MCS tables of TS 38.214 §5.1.3.1, as selected by the
/// RRC parameter `mcs-Table` of `PDSCH-Config` (TS 38.331).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum McsTable {
    /// Table 5.1.3.1-1, "MCS index table 1 for PDSCH" (up to 64QAM; the
    /// default).
    Qam64,
    /// Table 5.1.3.1-2, "MCS index table 2 for PDSCH" (up to 256QAM;
    /// `mcs-Table = qam256`).
    Qam256,
    /// Table 5.1.3.1-3, "MCS index table 3 for PDSCH" (64QAM, low spectral
    /// efficiency; `mcs-Table = qam64LowSE`).
    Qam64LowSe,
}

impl McsTable {
    pub const ALL: [McsTable; 3] = [McsTable::Qam64, McsTable::Qam256, McsTable::Qam64LowSe];

    /// The highest `I_MCS` with a code rate: 28, 27 and 28. The indices above
    /// it are reserved.
    pub const fn max_data_mcs(self) -> Mcs {
        match self {
            McsTable::Qam64 | McsTable::Qam64LowSe => Mcs(28),
            McsTable::Qam256 => Mcs(27),
        }
    }

    /// The table's number in TS 38.214.
    pub const fn spec_table(self) -> &'static str {
        match self {
            McsTable::Qam64 => "TS 38.214 Table 5.1.3.1-1",
            McsTable::Qam256 => "TS 38.214 Table 5.1.3.1-2",
            McsTable::Qam64LowSe => "TS 38.214 Table 5.1.3.1-3",
        }
    }

    fn rows(self) -> &'static [McsEntry; 32] {
        match self {
            McsTable::Qam64 => &TABLE_5_1_3_1_1,
            McsTable::Qam256 => &TABLE_5_1_3_1_2,
            McsTable::Qam64LowSe => &TABLE_5_1_3_1_3,
        }
    }
}

impl fmt::Display for McsTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            McsTable::Qam64 => "qam64",
            McsTable::Qam256 => "qam256",
            McsTable::Qam64LowSe => "qam64LowSE",
        })
    }
}

/// A PDSCH MCS index `I_MCS`, 0..=31 (the 5-bit DCI field). Whether it has a
/// code rate depends on the table: see [`mcs_entry`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Mcs(u8);

impl Mcs {
    /// `Some` for 0..=31, `None` otherwise.
    pub const fn new(index: u8) -> Option<Mcs> {
        if index <= 31 {
            Some(Mcs(index))
        } else {
            None
        }
    }
    pub const fn get(self) -> u8 {
        self.0
    }
}

/// One row of an MCS table.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum McsEntry {
    /// A modulation and target code rate: a TBS can be computed.
    Data(McsRate),
    /// "reserved": only the modulation order is given (a retransmission).
    Reserved(Modulation),
}

impl McsEntry {
    pub const fn modulation(self) -> Modulation {
        match self {
            McsEntry::Data(rate) => rate.modulation,
            McsEntry::Reserved(m) => m,
        }
    }
    pub const fn rate(self) -> Option<McsRate> {
        match self {
            McsEntry::Data(rate) => Some(rate),
            McsEntry::Reserved(_) => None,
        }
    }
}

/// A row with `R × 1024` an integer.
const fn d(q_m: u8, r_x1024: u16) -> McsEntry {
    dh(q_m, r_x1024 * 2)
}

/// A row given as `R × 2048` (for 682.5 and 916.5).
const fn dh(q_m: u8, r_x2048: u16) -> McsEntry {
    McsEntry::Data(McsRate {
        modulation: Modulation::from_order(q_m),
        code_rate: CodeRate(r_x2048),
    })
}

/// A reserved row.
const fn reserved(q_m: u8) -> McsEntry {
    McsEntry::Reserved(Modulation::from_order(q_m))
}

/// TS 38.214 Table 5.1.3.1-1, "MCS index table 1 for PDSCH": (`Q_m`,
/// `R × 1024`) per `I_MCS`. Spectral efficiency in the comment.
#[rustfmt::skip]
static TABLE_5_1_3_1_1: [McsEntry; 32] = [
    d(2, 120), // 0   0.2344
    d(2, 157), // 1   0.3066
    d(2, 193), // 2   0.3770
    d(2, 251), // 3   0.4902
    d(2, 308), // 4   0.6016
    d(2, 379), // 5   0.7402
    d(2, 449), // 6   0.8770
    d(2, 526), // 7   1.0273
    d(2, 602), // 8   1.1758
    d(2, 679), // 9   1.3262
    d(4, 340), // 10  1.3281
    d(4, 378), // 11  1.4766
    d(4, 434), // 12  1.6953
    d(4, 490), // 13  1.9141
    d(4, 553), // 14  2.1602
    d(4, 616), // 15  2.4063
    d(4, 658), // 16  2.5703
    d(6, 438), // 17  2.5664 (lower than MCS 16's)
    d(6, 466), // 18  2.7305
    d(6, 517), // 19  3.0293
    d(6, 567), // 20  3.3223
    d(6, 616), // 21  3.6094
    d(6, 666), // 22  3.9023
    d(6, 719), // 23  4.2129
    d(6, 772), // 24  4.5234
    d(6, 822), // 25  4.8164
    d(6, 873), // 26  5.1152
    d(6, 910), // 27  5.3320
    d(6, 948), // 28  5.5547
    reserved(2), // 29
    reserved(4), // 30
    reserved(6), // 31
];

/// TS 38.214 Table 5.1.3.1-2, "MCS index table 2 for PDSCH" (256QAM).
#[rustfmt::skip]
static TABLE_5_1_3_1_2: [McsEntry; 32] = [
    d(2, 120),   // 0   0.2344
    d(2, 193),   // 1   0.3770
    d(2, 308),   // 2   0.6016
    d(2, 449),   // 3   0.8770
    d(2, 602),   // 4   1.1758
    d(4, 378),   // 5   1.4766
    d(4, 434),   // 6   1.6953
    d(4, 490),   // 7   1.9141
    d(4, 553),   // 8   2.1602
    d(4, 616),   // 9   2.4063
    d(4, 658),   // 10  2.5703
    d(6, 466),   // 11  2.7305
    d(6, 517),   // 12  3.0293
    d(6, 567),   // 13  3.3223
    d(6, 616),   // 14  3.6094
    d(6, 666),   // 15  3.9023
    d(6, 719),   // 16  4.2129
    d(6, 772),   // 17  4.5234
    d(6, 822),   // 18  4.8164
    d(6, 873),   // 19  5.1152
    dh(8, 1365), // 20  R × 1024 = 682.5, 5.3320
    d(8, 711),   // 21  5.5547
    d(8, 754),   // 22  5.8906
    d(8, 797),   // 23  6.2266
    d(8, 841),   // 24  6.5703
    d(8, 885),   // 25  6.9141
    dh(8, 1833), // 26  R × 1024 = 916.5, 7.1602
    d(8, 948),   // 27  7.4063
    reserved(2), // 28
    reserved(4), // 29
    reserved(6), // 30
    reserved(8), // 31
];

/// TS 38.214 Table 5.1.3.1-3, "MCS index table 3 for PDSCH" (64QAM, low
/// spectral efficiency).
#[rustfmt::skip]
static TABLE_5_1_3_1_3: [McsEntry; 32] = [
    d(2, 30),  // 0   0.0586
    d(2, 40),  // 1   0.0781
    d(2, 50),  // 2   0.0977
    d(2, 64),  // 3   0.1250
    d(2, 78),  // 4   0.1523
    d(2, 99),  // 5   0.1934
    d(2, 120), // 6   0.2344
    d(2, 157), // 7   0.3066
    d(2, 193), // 8   0.3770
    d(2, 251), // 9   0.4902
    d(2, 308), // 10  0.6016
    d(2, 379), // 11  0.7402
    d(2, 449), // 12  0.8770
    d(2, 526), // 13  1.0273
    d(2, 602), // 14  1.1758
    d(4, 340), // 15  1.3281
    d(4, 378), // 16  1.4766
    d(4, 434), // 17  1.6953
    d(4, 490), // 18  1.9141
    d(4, 553), // 19  2.1602
    d(4, 616), // 20  2.4063
    d(6, 438), // 21  2.5664
    d(6, 466), // 22  2.7305
    d(6, 517), // 23  3.0293
    d(6, 567), // 24  3.3223
    d(6, 616), // 25  3.6094
    d(6, 666), // 26  3.9023
    d(6, 719), // 27  4.2129
    d(6, 772), // 28  4.5234
    reserved(2), // 29
    reserved(4), // 30
    reserved(6), // 31
];

/// The row `I_MCS` of a PDSCH MCS table (TS 38.214 Tables 5.1.3.1-1..-3).
pub fn mcs_entry(table: McsTable, mcs: Mcs) -> McsEntry {
    table.rows()[usize::from(mcs.0)]
}

/// The modulation and target code rate of `I_MCS`, or `None` for a reserved
/// index (29..=31 in Tables 5.1.3.1-1 and -3, 28..=31 in Table 5.1.3.1-2).
pub fn mcs_rate(table: McsTable, mcs: Mcs) -> Option<McsRate> {
    mcs_entry(table, mcs).rate()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mcs(i: u8) -> Mcs {
        Mcs::new(i).unwrap()
    }

    #[test]
    fn mcs_new_accepts_0_to_31_and_rejects_32_and_above() {
        for i in 0..=31u8 {
            assert_eq!(Mcs::new(i).map(Mcs::get), Some(i));
        }
        assert_eq!(Mcs::new(32), None);
        assert_eq!(Mcs::new(u8::MAX), None);
    }

    #[test]
    fn code_rate_is_strictly_between_0_and_1() {
        assert_eq!(CodeRate::from_x2048(0), None);
        assert_eq!(CodeRate::from_x2048(2048), None);
        assert_eq!(CodeRate::from_x2048(1).map(CodeRate::x2048), Some(1));
        assert_eq!(CodeRate::from_x2048(2047).map(CodeRate::x2048), Some(2047));
        assert_eq!(CodeRate::from_x2048(1365).unwrap().x1024(), 682.5);
        assert_eq!(CodeRate::from_x2048(512).unwrap().as_f64(), 0.25);
    }

    #[test]
    fn exactly_the_last_three_or_four_indices_are_reserved() {
        for table in McsTable::ALL {
            let max = table.max_data_mcs().get();
            for i in 0..=31u8 {
                assert_eq!(mcs_rate(table, mcs(i)).is_some(), i <= max, "{table} MCS {i}");
            }
        }
        assert_eq!(McsTable::Qam64.max_data_mcs().get(), 28);
        assert_eq!(McsTable::Qam256.max_data_mcs().get(), 27);
        assert_eq!(McsTable::Qam64LowSe.max_data_mcs().get(), 28);
    }

    #[test]
    fn reserved_rows_carry_qpsk_to_the_tables_highest_modulation_in_order() {
        let orders = |t: McsTable, from: u8| -> Vec<u8> {
            (from..=31).map(|i| mcs_entry(t, mcs(i)).modulation().order()).collect()
        };
        assert_eq!(orders(McsTable::Qam64, 29), [2, 4, 6]);
        assert_eq!(orders(McsTable::Qam256, 28), [2, 4, 6, 8]);
        assert_eq!(orders(McsTable::Qam64LowSe, 29), [2, 4, 6]);
    }

    #[test]
    fn modulation_order_never_decreases_with_the_index() {
        for table in McsTable::ALL {
            for i in 0..table.max_data_mcs().get() {
                let a = mcs_entry(table, mcs(i)).modulation();
                let b = mcs_entry(table, mcs(i + 1)).modulation();
                assert!(a <= b, "{table} MCS {i}");
            }
        }
    }

    #[test]
    fn code_rate_rises_within_each_modulation() {
        for table in McsTable::ALL {
            for i in 0..table.max_data_mcs().get() {
                let a = mcs_rate(table, mcs(i)).unwrap();
                let b = mcs_rate(table, mcs(i + 1)).unwrap();
                if a.modulation == b.modulation {
                    assert!(a.code_rate < b.code_rate, "{table} MCS {i}");
                } else {
                    assert!(
                        a.code_rate > b.code_rate,
                        "{table} MCS {i}: the rate drops at a modulation switch"
                    );
                }
            }
        }
    }

    #[test]
    fn efficiency_rises_with_the_index_except_table_1_mcs_16_to_17() {
        // Table 5.1.3.1-1 prints 2.5703 for MCS 16 (16QAM, 658) and 2.5664
        // for MCS 17 (64QAM, 438): the one place efficiency drops.
        let mut drops = Vec::new();
        for table in McsTable::ALL {
            for i in 0..table.max_data_mcs().get() {
                let a = mcs_rate(table, mcs(i)).unwrap().efficiency_x2048();
                let b = mcs_rate(table, mcs(i + 1)).unwrap().efficiency_x2048();
                if b <= a {
                    drops.push((table, i));
                }
            }
        }
        assert_eq!(drops, [(McsTable::Qam64, 16)]);
    }

    #[test]
    fn efficiencies_match_the_four_decimals_printed_in_the_tables() {
        // The last column of Tables 5.1.3.1-1..-3, as printed (first, a
        // modulation switch, and last rows of each table).
        let printed = [
            (McsTable::Qam64, 0, 0.2344),
            (McsTable::Qam64, 9, 1.3262),
            (McsTable::Qam64, 10, 1.3281),
            (McsTable::Qam64, 17, 2.5664),
            (McsTable::Qam64, 28, 5.5547),
            (McsTable::Qam256, 19, 5.1152),
            (McsTable::Qam256, 20, 5.3320),
            (McsTable::Qam256, 26, 7.1602),
            (McsTable::Qam256, 27, 7.4063),
            (McsTable::Qam64LowSe, 0, 0.0586),
            (McsTable::Qam64LowSe, 3, 0.1250),
            (McsTable::Qam64LowSe, 28, 4.5234),
        ];
        for (table, i, e) in printed {
            let got = mcs_rate(table, mcs(i)).unwrap().efficiency();
            assert!((got - e).abs() < 0.000_05 + 1e-12, "{table} MCS {i}: {got} vs {e}");
        }
    }

    #[test]
    fn table_2_keeps_the_half_rates_682_5_and_916_5_exact() {
        assert_eq!(mcs_rate(McsTable::Qam256, mcs(20)).unwrap().code_rate.x1024(), 682.5);
        assert_eq!(mcs_rate(McsTable::Qam256, mcs(26)).unwrap().code_rate.x1024(), 916.5);
        for table in McsTable::ALL {
            for i in 0..=table.max_data_mcs().get() {
                let r = mcs_rate(table, mcs(i)).unwrap().code_rate.x2048();
                let half = table == McsTable::Qam256 && (i == 20 || i == 26);
                assert_eq!(r % 2 == 1, half, "{table} MCS {i}");
            }
        }
    }

    #[test]
    fn low_se_table_continues_as_table_1_without_qpsk_679_and_16qam_658() {
        // Table 5.1.3.1-3 MCS 6..=28 repeat Table 5.1.3.1-1 MCS 0..=24 minus
        // MCS 9 (QPSK 679) and MCS 16 (16QAM 658).
        let table_1_rows: Vec<u8> = (0..=8).chain(10..=15).chain(17..=24).collect();
        assert_eq!(table_1_rows.len(), 23);
        for (k, &j) in table_1_rows.iter().enumerate() {
            let i = 6 + k as u8;
            assert_eq!(
                mcs_rate(McsTable::Qam64LowSe, mcs(i)),
                mcs_rate(McsTable::Qam64, mcs(j)),
                "MCS {i}"
            );
        }
    }
}
