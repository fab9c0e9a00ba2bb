//! Which direction each slot of a cell may carry: FDD (every slot both
//! ways) or a TDD slot pattern such as `DDDSU`.
//!
//! Source: TS 38.213 §11.1 (slot configuration by
//! `tdd-UL-DL-ConfigurationCommon`) and TS 38.331 `TDD-UL-DL-Pattern`
//! (`dl-UL-TransmissionPeriodicity`, `nrofDownlinkSlots`,
//! `nrofDownlinkSymbols`, `nrofUplinkSymbols`, `nrofUplinkSlots`).
//!
//! A pattern is a string of `D` (downlink slot), `S` (special slot: some
//! downlink symbols, a guard, some uplink symbols) and `U` (uplink slot),
//! repeated from time zero. What each slot carries here:
//!
//! | slot | PDSCH (downlink data) | PUCCH (HARQ-ACK, SR) | PUSCH (uplink data: TCP ACKs) |
//! |------|-----------------------|----------------------|-------------------------------|
//! | D | yes, the D-slot PDSCH symbols | no | no |
//! | S | yes when its downlink symbols leave a PDSCH (fewer symbols) | yes when it has uplink symbols | no |
//! | U | no | yes | yes |
//!
//! Deviations (numbered in `docs/nr.md`):
//! 1. One `TDD-UL-DL-Pattern` (no `pattern2`, no dedicated slot
//!    configuration): a pattern is `D…D[S]U…U`, at least one `D` and one
//!    `U`, at most one `S`, and its period (slots × slot duration) must be
//!    one of `dl-UL-TransmissionPeriodicity`'s values (0.5, 0.625, 1,
//!    1.25, 2, 2.5, 3, 4, 5, 10 ms).
//! 2. The S slot's uplink symbols carry PUCCH only (HARQ-ACK and SR), never
//!    PUSCH: a short PUSCH in the S slot is possible in NR but uncommon.

use crate::units::{SimDuration, SimTime};

/// What one slot of a TDD pattern is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum SlotKind {
    Downlink,
    Special,
    Uplink,
}

/// `dl-UL-TransmissionPeriodicity` of TS 38.331, ns.
const PERIODS_NS: [u64; 10] = [
    500_000, 625_000, 1_000_000, 1_250_000, 2_000_000, 2_500_000, 3_000_000, 4_000_000, 5_000_000, 10_000_000,
];

/// Parses a TDD pattern (`tdd_pattern` of a scenario) for slots of `slot`;
/// the error names the field and the value.
pub fn parse_pattern(text: &str, slot: SimDuration) -> Result<Vec<SlotKind>, String> {
    let kinds: Vec<SlotKind> = text
        .chars()
        .map(|c| match c {
            'D' => Ok(SlotKind::Downlink),
            'S' => Ok(SlotKind::Special),
            'U' => Ok(SlotKind::Uplink),
            _ => Err(format!(
                "nr.tdd_pattern: {text:?} has {c:?}; a pattern is made of D, S and U (e.g. \"DDDSU\")"
            )),
        })
        .collect::<Result<_, _>>()?;
    let d = kinds.iter().take_while(|&&k| k == SlotKind::Downlink).count();
    let s = kinds[d..].iter().take_while(|&&k| k == SlotKind::Special).count();
    let u = kinds[d + s..].iter().take_while(|&&k| k == SlotKind::Uplink).count();
    if d == 0 || u == 0 || s > 1 || d + s + u != kinds.len() {
        return Err(format!(
            "nr.tdd_pattern: {text:?} is not one TDD-UL-DL-Pattern of TS 38.331: it must be downlink slots, at most \
             one special slot, then uplink slots (D…D[S]U…U, at least one D and one U)"
        ));
    }
    let period = slot.as_nanos() * kinds.len() as u64;
    if !PERIODS_NS.contains(&period) {
        return Err(format!(
            "nr.tdd_pattern: {text:?} is {} slots of {} µs = {} ms, not a dl-UL-TransmissionPeriodicity of TS 38.331 \
             (0.5, 0.625, 1, 1.25, 2, 2.5, 3, 4, 5 or 10 ms)",
            kinds.len(),
            slot.as_nanos() as f64 / 1e3,
            period as f64 / 1e6
        ));
    }
    Ok(kinds)
}

/// The cell's slot directions.
#[derive(Clone, Debug)]
pub struct Duplex {
    slot: SimDuration,
    /// `None`: FDD.
    pattern: Option<Vec<SlotKind>>,
    /// The S slot's downlink symbols leave room for a PDSCH.
    pdsch_in_special: bool,
    /// The S slot has uplink symbols (PUCCH).
    pucch_in_special: bool,
}

impl Duplex {
    /// Every slot carries both directions.
    pub fn fdd(slot: SimDuration) -> Duplex {
        Duplex {
            slot,
            pattern: None,
            pdsch_in_special: false,
            pucch_in_special: false,
        }
    }

    pub fn tdd(slot: SimDuration, pattern: Vec<SlotKind>, pdsch_in_special: bool, pucch_in_special: bool) -> Duplex {
        Duplex {
            slot,
            pattern: Some(pattern),
            pdsch_in_special,
            pucch_in_special,
        }
    }

    pub fn is_tdd(&self) -> bool {
        self.pattern.is_some()
    }
    pub fn slot(&self) -> SimDuration {
        self.slot
    }
    pub fn pattern(&self) -> Option<&[SlotKind]> {
        self.pattern.as_deref()
    }

    /// The kind of the slot that contains `t` (FDD: `Downlink`, meaning
    /// every direction).
    #[inline]
    pub fn kind(&self, t: SimTime) -> SlotKind {
        match &self.pattern {
            None => SlotKind::Downlink,
            Some(p) => p[((t.as_nanos() / self.slot.as_nanos()) % p.len() as u64) as usize],
        }
    }

    fn carries_pdsch(&self, k: SlotKind) -> bool {
        match k {
            SlotKind::Downlink => true,
            SlotKind::Special => self.pdsch_in_special,
            SlotKind::Uplink => false,
        }
    }
    fn carries_pucch(&self, k: SlotKind) -> bool {
        match k {
            SlotKind::Downlink => false,
            SlotKind::Special => self.pucch_in_special,
            SlotKind::Uplink => true,
        }
    }

    /// The start of the first slot at or after `t` whose kind satisfies
    /// `ok` (FDD: the first slot boundary at or after `t`).
    fn next_where(&self, t: SimTime, ok: impl Fn(SlotKind) -> bool) -> SimTime {
        let mut s = t.next_boundary(self.slot, SimDuration::ZERO);
        let Some(p) = &self.pattern else { return s };
        // Every valid pattern has each kind looked for within one period.
        for _ in 0..p.len() {
            if ok(self.kind(s)) {
                return s;
            }
            s += self.slot;
        }
        unreachable!("a validated pattern has a D and a U slot")
    }

    /// First slot at or after `t` that carries downlink data.
    pub fn next_pdsch(&self, t: SimTime) -> SimTime {
        self.next_where(t, |k| self.carries_pdsch(k))
    }
    /// First slot at or after `t` that carries PUCCH (HARQ-ACK, SR).
    pub fn next_pucch(&self, t: SimTime) -> SimTime {
        self.next_where(t, |k| self.carries_pucch(k))
    }
    /// First slot at or after `t` that carries PUSCH (uplink data).
    pub fn next_pusch(&self, t: SimTime) -> SimTime {
        self.next_where(t, |k| k == SlotKind::Uplink || self.pattern.is_none())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HALF_MS: SimDuration = SimDuration::from_nanos(500_000);

    fn slot(n: u64) -> SimTime {
        SimTime::from_nanos(n * 500_000)
    }

    #[test]
    fn dddsu_and_ddddddd_s_uu_are_valid_patterns_at_30_khz() {
        assert_eq!(parse_pattern("DDDSU", HALF_MS).unwrap().len(), 5);
        assert_eq!(parse_pattern("DDDDDDDSUU", HALF_MS).unwrap().len(), 10);
    }

    #[test]
    fn a_pattern_with_other_letters_or_order_or_period_is_refused_naming_the_field() {
        for bad in ["", "DDXSU", "UDDDS", "DDSSU", "DDDS", "DSUDU", "dddsu"] {
            let e = parse_pattern(bad, HALF_MS).unwrap_err();
            assert!(
                e.starts_with("nr.tdd_pattern:") && e.contains(&format!("{bad:?}")),
                "{e}"
            );
        }
        // 7 slots of 0.5 ms = 3.5 ms is no TS 38.331 periodicity.
        let e = parse_pattern("DDDDDSU", HALF_MS).unwrap_err();
        assert!(e.contains("3.5 ms"), "{e}");
    }

    #[test]
    fn an_ack_sent_in_a_d_slot_leaves_in_the_next_u_slot() {
        let d = Duplex::tdd(HALF_MS, parse_pattern("DDDSU", HALF_MS).unwrap(), true, true);
        // Slot 1 is a D slot; the PUSCH is slot 4 (U); PUCCH may use slot 3 (S).
        assert_eq!(d.kind(slot(1)), SlotKind::Downlink);
        assert_eq!(d.next_pusch(slot(1)), slot(4));
        assert_eq!(d.next_pucch(slot(1)), slot(3));
        // From the U slot itself: that slot; just after it: the next period's U.
        assert_eq!(d.next_pusch(slot(4)), slot(4));
        assert_eq!(d.next_pusch(slot(4) + SimDuration::from_nanos(1)), slot(9));
        // Downlink data after a U slot waits for the next period's first D.
        assert_eq!(d.next_pdsch(slot(4)), slot(5));
    }

    #[test]
    fn fdd_slots_carry_every_direction() {
        let d = Duplex::fdd(HALF_MS);
        let t = slot(3) + SimDuration::from_nanos(7);
        assert_eq!(d.next_pusch(t), slot(4));
        assert_eq!(d.next_pucch(slot(3)), slot(3));
        assert_eq!(d.next_pdsch(slot(3)), slot(3));
    }
}
