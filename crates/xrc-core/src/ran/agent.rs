//! The XRC agent: per-UE capacity from MAC scheduling decisions, divided
//! among the UE's active flows, with the RLC head-of-line delay, written
//! into ACKs as they cross PDCP.
//!
//! Reference: Kheirkhah et al., "XRC: An Explicit Rate Control for Future
//! Cellular Networks", IEEE ICC 2022, §III-A:
//! - "with every scheduling decision, the Agent counts only the new
//!   transport blocks identified by New Data Indicator (i.e., NDI = 1)";
//! - "together with the fair share of the free resource blocks", valued at
//!   the UE's MCS;
//! - "averaged over the most recent 40 TTI";
//! - eq. (1) C_i = C / af, af the UE's active flows (inactive after 200 ms
//!   without packets, `pdcp::FlowActivity`);
//! - "when ACK packets are present at the PDCP layer, the Agent queries ...
//!   the current HoL delay of the RLC buffer" and piggybacks both.
//!
//! Choices where the paper is silent:
//! 1. The free PRBs of a TTI are shared equally among the UEs that have at
//!    least one active flow; a UE's share is valued with the TBS table at
//!    its current ITBS, interpolating linearly between whole PRB counts.
//! 2. Before 40 TTIs have been observed the average is over those seen.
//! 3. A UE with no active flow (the ACK's own flow just went idle) counts
//!    as one flow, so eq. (1) never divides by zero.
//! 4. The option carries the rate in kbit/s and HoL in 0.1 ms (8 bytes on
//!    the wire, counted in the ACK's size).
//!
//! Beyond the paper (issue 10, for `xrc2` only): the **air-interface delay
//! estimate** A ([`AirDelay`]), two more bytes of the option (0.1 ms), written
//! only into the ACKs of flows whose sender asks for it
//! (`Signals::xrc_air`), so the paper's flows see the paper's 8-byte option.
//! A is the mean delay the radio link added to the last window's packets
//! beyond its least, *outside* the RLC transmit buffer (whose queue HoL
//! already reports), over the last `window_ttis` TTIs:
//!
//! ```text
//!  A = mean_DL + mean_UL
//!  DL sample, per SDU the UE's RLC delivered in order at t_d, whose last
//!    segment was first transmitted in the TTI starting at t_s:
//!      t_d − t_s − (TTI + dl_decode_delay)      HARQ retransmissions + reordering wait
//!  UL sample, per ACK that entered the UE's uplink buffer at t_u and reaches
//!    the base station at t_a:
//!      t_a − t_u − (grant_tx_delay + TTI)       SR wait + grant wait + grants queued behind
//! ```
//!
//! Each mean is over the samples of its direction in the window (zero
//! without samples). What the base station knows: it schedules every
//! transport block and sees every HARQ ACK/NACK, so it knows when each PDU
//! decoded and, the UE's RLC UM reordering being specified (TS 36.322
//! §5.1.2.2), when each SDU was delivered in order; it sees the SR, the grant
//! and the PUSCH of every uplink packet. The one UE-side part is the wait
//! from an ACK's arrival in the UE's buffer to its SR opportunity, which is
//! what 3GPP's UE-measured uplink PDCP delay report covers (TS 38.314, Rel-16
//! layer-2 measurements, which also define the gNB-measured DL air-interface
//! delay); here it is read exactly. The trace access has no HARQ and no SR
//! and writes no air field.
//!
//! Also for `xrc2` only (issue 10, fig5-hol-reduction): the **buffer room**,
//! the SDUs of full size ([`FULL_SDU_BYTES`]) that still fit in the UE's RLC
//! transmit buffer when the ACK crosses PDCP (its limit less its occupancy,
//! both the base station's own state), two more bytes of the option. It is
//! written only while the UE has more than one active flow (eq. (1)'s af >
//! 1): only then can another flow hold the buffer the sender shares, and a
//! UE with one flow sends the same ACKs as before.

use serde::{Deserialize, Serialize};

use super::tbs_grid::{RateIdx, TbsGrid};
use crate::net::XrcOption;
use crate::units::{check_range, check_range_u64, SimDuration, SimTime, MAX_SPAN_MS};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct AgentConfig {
    /// Write feedback into ACKs.
    pub enabled: bool,
    /// Averaging window, TTIs (paper: 40).
    pub window_ttis: u32,
    /// A flow without packets for this long is inactive, ms (paper: 200).
    pub inactivity_ms: f64,
    /// Count the fair share of free PRBs (paper: yes).
    pub include_free_prbs: bool,
}

impl Default for AgentConfig {
    fn default() -> Self {
        AgentConfig {
            enabled: true,
            window_ttis: 40,
            inactivity_ms: 200.0,
            include_free_prbs: true,
        }
    }
}

impl AgentConfig {
    pub fn validate(&self) -> Result<(), String> {
        // The window is a ring of one counter per TTI: 100 s of TTIs at most.
        check_range_u64("window_ttis", self.window_ttis as u64, 1, 100_000)?;
        // Below a millisecond every flow is inactive between its packets;
        // above the longest run, never.
        check_range("inactivity_ms", self.inactivity_ms, 1.0, MAX_SPAN_MS)?;
        Ok(())
    }
    pub fn inactivity(&self) -> SimDuration {
        SimDuration::try_from_millis_f64(self.inactivity_ms).expect("validated")
    }
}

/// A sliding sum over the last `n` TTIs.
#[derive(Clone, Debug)]
pub struct CapacityWindow {
    ring: Vec<u64>,
    next: usize,
    filled: usize,
    sum: u64,
}

impl CapacityWindow {
    pub fn new(n: u32) -> Self {
        CapacityWindow {
            ring: vec![0; n as usize],
            next: 0,
            filled: 0,
            sum: 0,
        }
    }
    pub fn push(&mut self, bits: u64) {
        self.sum -= self.ring[self.next];
        self.ring[self.next] = bits;
        self.sum += bits;
        // Every UE pushes every TTI: a wrap instead of a division.
        self.next += 1;
        if self.next == self.ring.len() {
            self.next = 0;
        }
        if self.filled < self.ring.len() {
            self.filled += 1;
        }
    }
    /// What [`CapacityWindow::rate_bps`] depends on besides the TTI: the
    /// sum and the TTIs counted (equal states give equal rates).
    pub fn state(&self) -> (u64, usize) {
        (self.sum, self.filled)
    }
    /// Average rate in bit/s for TTIs of length `tti`.
    pub fn rate_bps(&self, tti: SimDuration) -> u64 {
        window_rate_bps(self.sum, self.filled, tti)
    }
}

/// The average rate, bit/s, of `sum` bits over `filled` TTIs of length `tti`.
#[inline]
pub fn window_rate_bps(sum: u64, filled: usize, tti: SimDuration) -> u64 {
    if filled == 0 {
        return 0;
    }
    // The same quotient in 64 bits when nothing overflows (a window of
    // 18 Gbit), which spares a 128-bit division per UE per TTI.
    match (
        sum.checked_mul(1_000_000_000),
        tti.as_nanos().checked_mul(filled as u64),
    ) {
        (Some(num), Some(span_ns)) => num / span_ns,
        _ => {
            let span_ns = tti.as_nanos() as u128 * filled as u128;
            ((sum as u128 * 1_000_000_000) / span_ns) as u64
        }
    }
}

/// The capacity windows of every UE of a cell: the same sliding sums as
/// one [`CapacityWindow`] per UE, laid out for a cell of many UEs. They
/// share one cursor and count of TTIs, and the ring holds, for each TTI,
/// only the UEs that learned a non-zero number of bits then (in a loaded
/// cell, the few served in that TTI): a TTI's push costs what entered and
/// what left the window, not a pass over every UE, and says which UEs'
/// sums moved ([`CapacityWindows::moved`]). A zero leaves a sum as it is,
/// so the sums are those of the dense ring, exactly (integers).
#[derive(Clone, Debug)]
pub struct CapacityWindows {
    /// TTIs in the window.
    len: usize,
    /// Row `k`: (UE, bits) of one TTI, the non-zero ones.
    ring: Vec<Vec<(u32, u64)>>,
    sums: Vec<u64>,
    next: usize,
    filled: usize,
    /// The UEs whose sum the last push changed (a UE may repeat).
    moved: Vec<u32>,
}

impl CapacityWindows {
    pub fn new(ues: usize, n: u32) -> Self {
        CapacityWindows {
            len: n as usize,
            ring: vec![Vec::new(); n as usize],
            sums: vec![0; ues],
            next: 0,
            filled: 0,
            moved: Vec::new(),
        }
    }
    /// One TTI: UE `i` learned `bits[i]` (`bits` has one entry per UE).
    pub fn push_row(&mut self, bits: &[u64]) {
        debug_assert_eq!(bits.len(), self.sums.len());
        self.push((0..bits.len() as u32).zip(bits.iter().copied()));
    }
    /// One TTI: each (UE, bits) of `entries` learned those bits, every
    /// other UE none (a UE at most once).
    pub fn push(&mut self, entries: impl IntoIterator<Item = (u32, u64)>) {
        self.moved.clear();
        let row = &mut self.ring[self.next];
        for (u, b) in row.drain(..) {
            self.sums[u as usize] -= b;
            self.moved.push(u);
        }
        for (u, b) in entries {
            if b > 0 {
                self.sums[u as usize] += b;
                row.push((u, b));
                self.moved.push(u);
            }
        }
        self.next += 1;
        if self.next == self.len {
            self.next = 0;
        }
        if self.filled < self.len {
            self.filled += 1;
        }
    }
    /// The UEs whose sum the last push changed (some may repeat; a UE whose
    /// bits entering equal those leaving is listed, its sum the same).
    pub fn moved(&self) -> &[u32] {
        &self.moved
    }
    /// Every UE's sum over the window, `sums()[i]` UE i's.
    pub fn sums(&self) -> &[u64] {
        &self.sums
    }
    /// TTIs counted (the same for every UE).
    pub fn filled(&self) -> usize {
        self.filled
    }
    /// UE `ue`'s [`CapacityWindow::state`].
    #[inline]
    pub fn state(&self, ue: usize) -> (u64, usize) {
        (self.sums[ue], self.filled)
    }
    /// UE `ue`'s [`CapacityWindow::rate_bps`].
    #[inline]
    pub fn rate_bps(&self, ue: usize, tti: SimDuration) -> u64 {
        window_rate_bps(self.sums[ue], self.filled, tti)
    }
}

/// One TTI's samples of the air-interface delay excess, per direction.
#[derive(Copy, Clone, Debug, Default)]
struct AirSlot {
    dl_ns: u64,
    dl_n: u64,
    ul_ns: u64,
    ul_n: u64,
}

/// The agent's air-interface delay estimate A (module doc): a sliding window
/// of per-TTI sample sums; samples go into the current TTI's slot.
#[derive(Clone, Debug)]
pub struct AirDelay {
    ring: Vec<AirSlot>,
    next: usize,
    sum: AirSlot,
}

impl AirDelay {
    pub fn new(n: u32) -> Self {
        AirDelay {
            ring: vec![AirSlot::default(); n.max(1) as usize],
            next: 0,
            sum: AirSlot::default(),
        }
    }
    /// A downlink sample: an SDU's HARQ and reordering delay.
    pub fn add_dl(&mut self, d: SimDuration) {
        let s = &mut self.ring[self.next];
        s.dl_ns += d.as_nanos();
        s.dl_n += 1;
        self.sum.dl_ns += d.as_nanos();
        self.sum.dl_n += 1;
    }
    /// `n` uplink samples summing to `sum`: ACKs' delays beyond the least
    /// uplink delay.
    pub fn add_ul(&mut self, sum: SimDuration, n: u64) {
        let s = &mut self.ring[self.next];
        s.ul_ns += sum.as_nanos();
        s.ul_n += n;
        self.sum.ul_ns += sum.as_nanos();
        self.sum.ul_n += n;
    }
    /// A new TTI starts: the oldest TTI's samples leave the window.
    pub fn advance(&mut self) {
        self.next += 1;
        if self.next == self.ring.len() {
            self.next = 0;
        }
        let old = std::mem::take(&mut self.ring[self.next]);
        self.sum.dl_ns -= old.dl_ns;
        self.sum.dl_n -= old.dl_n;
        self.sum.ul_ns -= old.ul_ns;
        self.sum.ul_n -= old.ul_n;
    }
    /// A = mean downlink sample + mean uplink sample over the window.
    pub fn estimate(&self) -> SimDuration {
        let mean = |ns: u64, n: u64| ns.checked_div(n).unwrap_or(0);
        SimDuration::from_nanos(mean(self.sum.dl_ns, self.sum.dl_n) + mean(self.sum.ul_ns, self.sum.ul_n))
    }
}

/// A full-size SDU: a 1500-byte IP packet and its PDCP header; the unit of
/// the buffer-room field.
pub const FULL_SDU_BYTES: u32 = 1500 + super::pdcp::PDCP_HEADER_BYTES;

/// The feedback for one flow of a UE: eq. (1) and the HoL delay.
pub fn feedback(ue_capacity_bps: u64, active_flows: u32, hol: SimDuration) -> XrcOption {
    let per_flow = ue_capacity_bps / active_flows.max(1) as u64;
    XrcOption::quantized(per_flow, hol)
}

/// What the agent learned this TTI for one UE.
#[inline]
pub fn tti_capacity_bits(
    new_tb_bits: u64,
    free_prbs: u16,
    active_ues: u32,
    ue_active: bool,
    rate: Option<(RateIdx, &TbsGrid)>,
    include_free: bool,
) -> u64 {
    if include_free && ue_active && active_ues > 0 && free_prbs > 0 {
        if let Some((i, grid)) = rate {
            // Choice 1: the fair share of the free PRBs at the UE's rate.
            let bits = new_tb_bits as f64 + grid.share_bits(i, free_prbs as f64 / active_ues as f64);
            return bits.round() as u64;
        }
    }
    // A whole number of bits (a TBS, far below 2^53) rounds to itself.
    new_tb_bits
}

/// Time helper for callers: the agent's view is per TTI starting at `t`.
pub fn tti_index(t: SimTime, tti: SimDuration) -> u64 {
    t.as_nanos() / tti.as_nanos()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_averages_the_last_40_ttis() {
        let mut w = CapacityWindow::new(40);
        for _ in 0..40 {
            w.push(36_696);
        }
        assert_eq!(w.rate_bps(SimDuration::from_millis(1)), 36_696_000);
        for _ in 0..20 {
            w.push(0);
        }
        assert_eq!(w.rate_bps(SimDuration::from_millis(1)), 18_348_000);
    }

    #[test]
    fn the_windows_rate_is_the_exact_quotient_whether_or_not_it_fits_in_64_bits() {
        let tti = SimDuration::from_millis(1);
        for bits in [1u64, 36_696, 999_999_999, 18_446_744_073, 18_446_744_074, u64::MAX / 64] {
            let mut w = CapacityWindow::new(40);
            for _ in 0..3 {
                w.push(bits);
            }
            let exact = (3 * bits as u128 * 1_000_000_000 / (3 * 1_000_000)) as u64;
            assert_eq!(w.rate_bps(tti), exact, "{bits}");
        }
    }

    #[test]
    fn free_prbs_are_shared_among_active_ues_at_each_ues_mcs() {
        let grid = TbsGrid::lte(50);
        let itbs = Some((RateIdx::new(26), &grid));
        // All 50 PRBs free, one active UE: the whole band.
        assert_eq!(tti_capacity_bits(0, 50, 1, true, itbs, true), 36_696);
        // Two active UEs: 25 PRBs each.
        assert_eq!(tti_capacity_bits(0, 50, 2, true, itbs, true), 18_336);
        // Retransmissions (NDI = 0) are not passed in; new data is.
        assert_eq!(tti_capacity_bits(1000, 0, 1, true, itbs, true), 1000);
    }

    #[test]
    fn the_air_delay_is_the_sum_of_the_two_directions_means_over_the_window() {
        let ms = SimDuration::from_millis;
        let mut a = AirDelay::new(3);
        assert_eq!(a.estimate(), SimDuration::ZERO, "no samples, no delay");
        a.add_dl(ms(8));
        a.add_dl(ms(0));
        a.add_ul(ms(6), 1);
        assert_eq!(a.estimate(), ms(4 + 6));
        a.advance();
        a.add_ul(ms(2), 1);
        assert_eq!(a.estimate(), ms(4 + 4));
        a.advance();
        a.advance();
        // The first TTI's samples left the window; the second's remain.
        assert_eq!(a.estimate(), ms(2));
        a.advance();
        assert_eq!(a.estimate(), SimDuration::ZERO);
    }

    #[test]
    fn per_flow_rate_divides_by_the_active_flows() {
        let f = feedback(30_000_000, 3, SimDuration::from_millis(4));
        assert_eq!(f.rate_bps, 10_000_000);
        assert_eq!(f.hol, SimDuration::from_millis(4));
        assert_eq!(feedback(30_000_000, 0, SimDuration::ZERO).rate_bps, 30_000_000);
    }

    #[test]
    fn a_cells_windows_hold_the_same_sums_and_rates_as_one_window_per_ue_and_list_those_that_moved() {
        let tti = SimDuration::from_micros(500);
        let mut rng = crate::engine::rng::Rng::from_seed(5);
        for (ues, n) in [(1usize, 1u32), (3, 40), (7, 5)] {
            let mut each: Vec<CapacityWindow> = (0..ues).map(|_| CapacityWindow::new(n)).collect();
            let mut all = CapacityWindows::new(ues, n);
            for t in 0..200 {
                let bits: Vec<u64> = (0..ues).map(|_| rng.below(80_000)).collect();
                // Mostly zeros, as in a loaded cell.
                let bits: Vec<u64> = bits.iter().map(|&b| if b % 3 == 0 { b } else { 0 }).collect();
                let before: Vec<u64> = all.sums().to_vec();
                all.push_row(&bits);
                for (u, w) in each.iter_mut().enumerate() {
                    if all.sums()[u] != before[u] {
                        assert!(
                            all.moved().contains(&(u as u32)),
                            "UE {u}, TTI {t}: moved but not listed"
                        );
                    }
                    w.push(bits[u]);
                    assert_eq!(all.state(u), w.state(), "UE {u}, TTI {t}");
                    assert_eq!(all.rate_bps(u, tti), w.rate_bps(tti), "UE {u}, TTI {t}");
                }
            }
        }
    }
}
