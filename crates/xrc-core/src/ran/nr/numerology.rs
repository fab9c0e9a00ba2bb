//! NR numerologies (TS 38.211 §4.2, §4.3) and the maximum transmission
//! bandwidth `N_RB` of each channel bandwidth (TS 38.101-1 and TS 38.101-2,
//! Table 5.3.2-1 of each).
//!
//! Only μ = 0..=3 with the normal cyclic prefix is modelled: 15, 30, 60 and
//! 120 kHz, 14 symbols per slot. μ = 2's extended cyclic prefix (12 symbols)
//! and the FR2-2 numerologies μ = 5, 6 of Release 17 are not.

use std::fmt;

use super::tbs::Prbs;
use crate::units::SimDuration;

/// OFDM symbols per slot with the normal cyclic prefix, `N_symb^slot` of
/// TS 38.211 Table 4.3.2-1 (the same for every μ).
pub const SYMBOLS_PER_SLOT: u8 = 14;

/// Subframes per 10 ms radio frame (TS 38.211 §4.3.1).
pub const SUBFRAMES_PER_FRAME: u32 = 10;

/// A subcarrier-spacing configuration μ of TS 38.211 Table 4.2-1, 0..=3.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Numerology(u8);

impl Numerology {
    /// μ = 0: 15 kHz, 1 ms slots (the LTE grid).
    pub const MU0: Numerology = Numerology(0);
    /// μ = 1: 30 kHz, 0.5 ms slots (FR1 mid-band).
    pub const MU1: Numerology = Numerology(1);
    /// μ = 2: 60 kHz, 0.25 ms slots (FR1 and FR2).
    pub const MU2: Numerology = Numerology(2);
    /// μ = 3: 120 kHz, 0.125 ms slots (FR2 data).
    pub const MU3: Numerology = Numerology(3);

    /// `Some` for 0..=3, `None` otherwise.
    pub const fn new(mu: u8) -> Option<Numerology> {
        if mu <= 3 {
            Some(Numerology(mu))
        } else {
            None
        }
    }

    /// The numerology of a subcarrier spacing of 15, 30, 60 or 120 kHz.
    pub const fn from_subcarrier_spacing_khz(khz: u32) -> Option<Numerology> {
        match khz {
            15 => Some(Numerology(0)),
            30 => Some(Numerology(1)),
            60 => Some(Numerology(2)),
            120 => Some(Numerology(3)),
            _ => None,
        }
    }

    pub const fn get(self) -> u8 {
        self.0
    }

    /// Δf = 2^μ · 15 kHz (TS 38.211 Table 4.2-1).
    pub const fn subcarrier_spacing_khz(self) -> u32 {
        15 << self.0
    }

    /// Slots per 1 ms subframe, `N_slot^subframe,μ` = 2^μ (TS 38.211 Table
    /// 4.3.2-1).
    pub const fn slots_per_subframe(self) -> u32 {
        1 << self.0
    }

    /// Slots per 10 ms frame, `N_slot^frame,μ` = 10 · 2^μ (TS 38.211 Table
    /// 4.3.2-1).
    pub const fn slots_per_frame(self) -> u32 {
        SUBFRAMES_PER_FRAME << self.0
    }

    /// Slot duration, 1 ms / 2^μ: 1 000 000, 500 000, 250 000 and 125 000
    /// ns, exact in integer nanoseconds for μ ≤ 6.
    pub const fn slot_duration(self) -> SimDuration {
        SimDuration::from_nanos(1_000_000 >> self.0)
    }

    /// OFDM symbols per slot (normal cyclic prefix): always 14.
    pub const fn symbols_per_slot(self) -> u8 {
        SYMBOLS_PER_SLOT
    }
}

impl fmt::Display for Numerology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "μ = {} ({} kHz)", self.0, self.subcarrier_spacing_khz())
    }
}

/// Frequency range of TS 38.101: FR1 (410 MHz – 7.125 GHz) or FR2
/// (24.25 – 52.6 GHz, FR2-1 in Release 17).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum FrequencyRange {
    Fr1,
    Fr2,
}

impl FrequencyRange {
    /// The subcarrier spacings TS 38.101-1/-2 Table 5.3.2-1 has a column for.
    pub const fn numerologies(self) -> &'static [Numerology] {
        match self {
            FrequencyRange::Fr1 => &[Numerology::MU0, Numerology::MU1, Numerology::MU2],
            FrequencyRange::Fr2 => &[Numerology::MU2, Numerology::MU3],
        }
    }

    /// The specification table this range's `N_RB` come from.
    pub const fn nrb_table(self) -> &'static str {
        match self {
            FrequencyRange::Fr1 => "TS 38.101-1 Table 5.3.2-1",
            FrequencyRange::Fr2 => "TS 38.101-2 Table 5.3.2-1",
        }
    }
}

impl fmt::Display for FrequencyRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FrequencyRange::Fr1 => "FR1",
            FrequencyRange::Fr2 => "FR2",
        })
    }
}

/// A channel bandwidth and subcarrier spacing that TS 38.101 does not
/// define.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BandwidthError {
    /// The frequency range has no column for this subcarrier spacing (15 and
    /// 30 kHz are FR1 only, 120 kHz is FR2 only).
    SpacingNotInRange {
        range: FrequencyRange,
        numerology: Numerology,
    },
    /// The table has this subcarrier spacing but not this channel bandwidth
    /// with it ("N/A" in the table, or a bandwidth it does not list).
    NoSuchChannel {
        range: FrequencyRange,
        bandwidth_mhz: u32,
        numerology: Numerology,
        /// The bandwidths the table does define at this spacing, in MHz.
        defined_mhz: Vec<u32>,
    },
}

impl fmt::Display for BandwidthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BandwidthError::SpacingNotInRange { range, numerology } => {
                let spacings: Vec<String> = range
                    .numerologies()
                    .iter()
                    .map(|m| format!("{} kHz", m.subcarrier_spacing_khz()))
                    .collect();
                write!(
                    f,
                    "{range} has no {} kHz subcarrier spacing (μ = {}); {} has columns for {}",
                    numerology.subcarrier_spacing_khz(),
                    numerology.get(),
                    range.nrb_table(),
                    spacings.join(", ")
                )
            }
            BandwidthError::NoSuchChannel {
                range,
                bandwidth_mhz,
                numerology,
                defined_mhz,
            } => {
                let list: Vec<String> = defined_mhz.iter().map(u32::to_string).collect();
                write!(
                    f,
                    "{range} has no {bandwidth_mhz} MHz channel at {} kHz subcarrier spacing; {} defines {} MHz at {} kHz",
                    numerology.subcarrier_spacing_khz(),
                    range.nrb_table(),
                    list.join(", "),
                    numerology.subcarrier_spacing_khz()
                )
            }
        }
    }
}

impl std::error::Error for BandwidthError {}

/// One row of a Table 5.3.2-1: a channel bandwidth in MHz and `N_RB` per
/// subcarrier-spacing column (`None` where the table says "N/A").
type NrbRow<const N: usize> = (u32, [Option<u16>; N]);

/// TS 38.101-1 Table 5.3.2-1, "Maximum transmission bandwidth configuration
/// N_RB" (FR1). Columns: 15, 30, 60 kHz.
#[rustfmt::skip]
static FR1_NRB: [NrbRow<3>; 15] = [
    //  MHz    15 kHz      30 kHz      60 kHz
    (    5, [Some(25),  Some(11),  None     ]),
    (   10, [Some(52),  Some(24),  Some(11) ]),
    (   15, [Some(79),  Some(38),  Some(18) ]),
    (   20, [Some(106), Some(51),  Some(24) ]),
    (   25, [Some(133), Some(65),  Some(31) ]),
    (   30, [Some(160), Some(78),  Some(38) ]),
    (   35, [Some(188), Some(92),  Some(44) ]),
    (   40, [Some(216), Some(106), Some(51) ]),
    (   45, [Some(242), Some(119), Some(58) ]),
    (   50, [Some(270), Some(133), Some(65) ]),
    (   60, [None,      Some(162), Some(79) ]),
    (   70, [None,      Some(189), Some(93) ]),
    (   80, [None,      Some(217), Some(107)]),
    (   90, [None,      Some(245), Some(121)]),
    (  100, [None,      Some(273), Some(135)]),
];

/// TS 38.101-2 Table 5.3.2-1, "Maximum transmission bandwidth configuration
/// N_RB" (FR2). Columns: 60, 120 kHz.
#[rustfmt::skip]
static FR2_NRB: [NrbRow<2>; 4] = [
    //  MHz    60 kHz      120 kHz
    (   50, [Some(66),  Some(32) ]),
    (  100, [Some(132), Some(66) ]),
    (  200, [Some(264), Some(132)]),
    (  400, [None,      Some(264)]),
];

/// Looks up `N_RB` in one of the two tables by column index.
fn lookup<const N: usize>(table: &[NrbRow<N>], column: usize, bandwidth_mhz: u32) -> Result<u16, Vec<u32>> {
    table
        .iter()
        .find(|(mhz, _)| *mhz == bandwidth_mhz)
        .and_then(|(_, row)| row[column])
        .ok_or_else(|| {
            table
                .iter()
                .filter(|(_, row)| row[column].is_some())
                .map(|(mhz, _)| *mhz)
                .collect()
        })
}

/// The maximum transmission bandwidth `N_RB` (PRBs) of a channel of
/// `bandwidth_mhz` in `range` at subcarrier spacing `numerology`, from TS
/// 38.101-1 Table 5.3.2-1 (FR1: 5..=100 MHz at 15, 30, 60 kHz) or TS
/// 38.101-2 Table 5.3.2-1 (FR2: 50..=400 MHz at 60, 120 kHz). For example
/// FR1, 100 MHz, μ = 1 → 273 and FR2, 400 MHz, μ = 3 → 264.
///
/// Combinations the tables do not define are an error naming them and the
/// bandwidths that do exist at that spacing.
pub fn max_transmission_bandwidth(
    range: FrequencyRange,
    bandwidth_mhz: u32,
    numerology: Numerology,
) -> Result<Prbs, BandwidthError> {
    let found = match (range, numerology.get()) {
        (FrequencyRange::Fr1, mu @ 0..=2) => lookup(&FR1_NRB, usize::from(mu), bandwidth_mhz),
        (FrequencyRange::Fr2, mu @ 2..=3) => lookup(&FR2_NRB, usize::from(mu - 2), bandwidth_mhz),
        _ => return Err(BandwidthError::SpacingNotInRange { range, numerology }),
    };
    match found {
        Ok(n) => Ok(Prbs::new(n).expect("every N_RB of Table 5.3.2-1 is in 11..=273")),
        Err(defined_mhz) => Err(BandwidthError::NoSuchChannel {
            range,
            bandwidth_mhz,
            numerology,
            defined_mhz,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mu(m: u8) -> Numerology {
        Numerology::new(m).unwrap()
    }
    fn nrb(range: FrequencyRange, mhz: u32, m: u8) -> Result<u16, BandwidthError> {
        max_transmission_bandwidth(range, mhz, mu(m)).map(Prbs::get)
    }

    #[test]
    fn numerology_new_accepts_0_to_3_and_rejects_4_and_above() {
        for m in 0..=3u8 {
            assert_eq!(Numerology::new(m).map(Numerology::get), Some(m));
        }
        assert_eq!(Numerology::new(4), None);
        assert_eq!(Numerology::new(u8::MAX), None);
    }

    #[test]
    fn subcarrier_spacing_is_15_30_60_120_khz_and_maps_back_to_mu() {
        let khz: Vec<u32> = (0..=3).map(|m| mu(m).subcarrier_spacing_khz()).collect();
        assert_eq!(khz, [15, 30, 60, 120]);
        for m in 0..=3 {
            assert_eq!(
                Numerology::from_subcarrier_spacing_khz(mu(m).subcarrier_spacing_khz()),
                Some(mu(m))
            );
        }
        for bad in [0, 7, 45, 240, 480] {
            assert_eq!(Numerology::from_subcarrier_spacing_khz(bad), None, "{bad} kHz");
        }
    }

    #[test]
    fn slots_last_1_0_5_0_25_and_0_125_ms_in_exact_nanoseconds() {
        let ns: Vec<u64> = (0..=3).map(|m| mu(m).slot_duration().as_nanos()).collect();
        assert_eq!(ns, [1_000_000, 500_000, 250_000, 125_000]);
    }

    #[test]
    fn slots_per_subframe_times_slot_duration_is_one_millisecond_and_a_frame_is_ten() {
        for m in 0..=3 {
            let n = mu(m);
            assert_eq!(
                n.slot_duration() * u64::from(n.slots_per_subframe()),
                SimDuration::from_millis(1)
            );
            assert_eq!(
                n.slot_duration() * u64::from(n.slots_per_frame()),
                SimDuration::from_millis(10)
            );
            assert_eq!(n.symbols_per_slot(), 14);
        }
        let per_frame: Vec<u32> = (0..=3).map(|m| mu(m).slots_per_frame()).collect();
        assert_eq!(per_frame, [10, 20, 40, 80]);
    }

    #[test]
    fn the_issues_two_reference_carriers_have_273_and_264_prbs() {
        assert_eq!(nrb(FrequencyRange::Fr1, 100, 1), Ok(273));
        assert_eq!(nrb(FrequencyRange::Fr2, 400, 3), Ok(264));
    }

    #[test]
    fn fr1_20_mhz_has_106_51_and_24_prbs_at_15_30_and_60_khz() {
        assert_eq!(nrb(FrequencyRange::Fr1, 20, 0), Ok(106));
        assert_eq!(nrb(FrequencyRange::Fr1, 20, 1), Ok(51));
        assert_eq!(nrb(FrequencyRange::Fr1, 20, 2), Ok(24));
    }

    #[test]
    fn a_wider_channel_never_has_fewer_prbs_at_the_same_spacing() {
        for (range, rows) in [(FrequencyRange::Fr1, 0..=2u8), (FrequencyRange::Fr2, 2..=3u8)] {
            for m in rows {
                let mut previous = 0;
                for mhz in 1..=400 {
                    if let Ok(n) = nrb(range, mhz, m) {
                        assert!(n > previous, "{range} {mhz} MHz μ={m}");
                        previous = n;
                    }
                }
            }
        }
    }

    #[test]
    fn prbs_fill_at_most_the_channel_bandwidth() {
        // N_RB · 12 · Δf stays below the channel bandwidth (guard bands).
        for (range, ms) in [(FrequencyRange::Fr1, 0..=2u8), (FrequencyRange::Fr2, 2..=3u8)] {
            for m in ms {
                for mhz in 1..=400u32 {
                    if let Ok(n) = nrb(range, mhz, m) {
                        let occupied_khz = u32::from(n) * 12 * mu(m).subcarrier_spacing_khz();
                        assert!(occupied_khz < mhz * 1000, "{range} {mhz} MHz μ={m}: {occupied_khz} kHz");
                    }
                }
            }
        }
    }

    #[test]
    fn fr1_has_no_120_khz_and_fr2_has_no_15_or_30_khz() {
        for (range, m) in [
            (FrequencyRange::Fr1, 3),
            (FrequencyRange::Fr2, 0),
            (FrequencyRange::Fr2, 1),
        ] {
            let err = nrb(range, 100, m).unwrap_err();
            assert_eq!(
                err,
                BandwidthError::SpacingNotInRange {
                    range,
                    numerology: mu(m)
                }
            );
        }
        let text = nrb(FrequencyRange::Fr1, 100, 3).unwrap_err().to_string();
        assert_eq!(
            text,
            "FR1 has no 120 kHz subcarrier spacing (μ = 3); TS 38.101-1 Table 5.3.2-1 has columns for 15 kHz, 30 kHz, 60 kHz"
        );
    }

    #[test]
    fn channels_marked_not_applicable_are_errors_listing_the_defined_ones() {
        // 15 kHz stops at 50 MHz, 60 kHz starts at 10 MHz in FR1, and FR2's
        // 60 kHz stops at 200 MHz.
        let err = nrb(FrequencyRange::Fr1, 100, 0).unwrap_err();
        assert_eq!(
            err.to_string(),
            "FR1 has no 100 MHz channel at 15 kHz subcarrier spacing; TS 38.101-1 Table 5.3.2-1 defines \
             5, 10, 15, 20, 25, 30, 35, 40, 45, 50 MHz at 15 kHz"
        );
        assert!(nrb(FrequencyRange::Fr1, 5, 2).is_err());
        let err = nrb(FrequencyRange::Fr2, 400, 2).unwrap_err();
        assert_eq!(
            err.to_string(),
            "FR2 has no 400 MHz channel at 60 kHz subcarrier spacing; TS 38.101-2 Table 5.3.2-1 defines \
             50, 100, 200 MHz at 60 kHz"
        );
    }

    #[test]
    fn bandwidths_absent_from_the_tables_are_errors() {
        for mhz in [0, 1, 3, 55, 75, 101, 150, 300, 800] {
            assert!(nrb(FrequencyRange::Fr1, mhz, 1).is_err(), "FR1 {mhz} MHz");
            assert!(nrb(FrequencyRange::Fr2, mhz, 3).is_err(), "FR2 {mhz} MHz");
        }
    }

    #[test]
    fn the_tables_define_39_fr1_and_7_fr2_channels() {
        let count = |range: FrequencyRange| {
            range
                .numerologies()
                .iter()
                .map(|&m| {
                    (1..=400)
                        .filter(|&mhz| max_transmission_bandwidth(range, mhz, m).is_ok())
                        .count()
                })
                .sum::<usize>()
        };
        assert_eq!(count(FrequencyRange::Fr1), 10 + 15 + 14);
        assert_eq!(count(FrequencyRange::Fr2), 3 + 4);
    }
}
