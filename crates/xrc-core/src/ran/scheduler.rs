//! The downlink MAC scheduler: every TTI it shares the cell's resource
//! block groups (RBGs, resource allocation type 0, TS 36.213 §7.1.6.1)
//! among the UEs that have data, after HARQ retransmissions took theirs.
//!
//! - Proportional fair (default): UEs in decreasing order of
//!   r_i / R_i, where r_i is the rate the UE's MCS gives over the whole
//!   band and R_i its throughput averaged with an exponential window of
//!   `pf_window_ttis` TTIs (ns-3 `PfFfMacScheduler` uses 99 + 1); each UE in
//!   turn gets the RBGs it needs to empty its buffer, until none are left.
//!   With a wideband CQI this is PF in the time domain, as in ns-3 when the
//!   CQI is wideband.
//! - Round robin: the RBGs are split evenly among the UEs with data, the
//!   starting UE rotating every TTI; RBGs a UE does not need go to the
//!   others.
//!
//! Both give a UE no more RBGs than its buffer needs, so the free RBGs the
//! XRC agent shares out are real.
//!
//! A cell of [`super::pf_order::MIN_UES`] UEs or more selects PF's
//! candidates through [`allocate_pf_ordered`], which works out the metric
//! of only the UEs a bound does not rule out; the grants are those of
//! [`allocate_pf_keyed`] (`pf_order`).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use serde::{Deserialize, Serialize};

use super::amc;
use super::pf_order::PfOrder;
use super::tbs_grid::{RateIdx, TbsGrid};

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum SchedulerKind {
    Pf,
    Rr,
}

/// The cell's RBG layout: `sizes[i]` PRBs in group i (the last may be short).
#[derive(Clone, Debug)]
pub struct RbgLayout {
    pub sizes: Vec<u16>,
    pub total_prbs: u16,
}

impl RbgLayout {
    /// LTE: groups of TS 36.213 Table 7.1.6.1-1.
    pub fn new(total_prbs: u16) -> Self {
        Self::with_group_size(total_prbs, amc::rbg_size(total_prbs))
    }

    /// Groups of `p` PRBs (NR: TS 38.214 Table 5.1.2.2.1-1).
    pub fn with_group_size(total_prbs: u16, p: u16) -> Self {
        let mut sizes = Vec::new();
        let mut left = total_prbs;
        while left > 0 {
            let s = p.min(left);
            sizes.push(s);
            left -= s;
        }
        RbgLayout { sizes, total_prbs }
    }
}

/// A UE asking for new-data resources this TTI.
#[derive(Clone, Debug)]
pub struct Candidate {
    pub index: usize,
    /// The UE's rate index in the slot's [`TbsGrid`].
    pub itbs: RateIdx,
    /// Bytes needed to empty its buffer, headers included.
    pub demand_bytes: u64,
    /// Averaged served rate for PF, bits per TTI.
    pub avg_bits: f64,
}

/// PRBs given to a candidate (by `index`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    pub index: usize,
    pub prbs: u16,
}

/// Allocates up to `free_rbgs` groups (taken from the end of the layout so
/// that a short last group is used last) among the candidates.
pub fn allocate(
    kind: SchedulerKind,
    grid: &TbsGrid,
    layout: &RbgLayout,
    free_prbs: u16,
    candidates: &[Candidate],
    rr_start: usize,
    out: &mut Vec<Grant>,
) {
    allocate_with(
        kind,
        grid,
        layout,
        free_prbs,
        candidates,
        rr_start,
        out,
        &mut Scratch::default(),
    );
}

/// Working space of [`allocate_with`], kept between TTIs so that a TTI
/// allocates nothing.
#[derive(Debug, Default)]
pub struct Scratch {
    /// The free groups of the last call, and the free PRBs and layout they
    /// were cut for (usually the whole band, TTI after TTI).
    groups: Vec<u16>,
    groups_for: Option<(u16, Vec<u16>)>,
    order: Vec<u128>,
    /// PF's candidate keys (a caller's, or made from its candidates).
    keys: Vec<u128>,
    /// The best keys so far while PF selects, the worst of them on top.
    best: BinaryHeap<u128>,
    /// The exact keys worked out while [`allocate_pf_ordered`] walks, the
    /// best on top.
    found: BinaryHeap<Reverse<u128>>,
    /// PF's metric below which a candidate was not among the best
    /// `2 × groups` of the last TTI (`None`: every candidate counts).
    pf_hint: Option<f64>,
    want: Vec<usize>,
    got: Vec<usize>,
}

/// PF's order as one integer: ascending keys are decreasing metrics
/// (`f64::total_cmp`'s order, reversed) and, for equal metrics, increasing
/// candidate index `k` (kept in the low 64 bits).
#[inline]
pub fn pf_key(metric: f64, k: usize) -> u128 {
    let b = metric.to_bits() as i64;
    // total_cmp's transform (negative values' magnitude bits flipped), then
    // the sign bit flipped: unsigned order is total_cmp's order.
    let ordered = ((b ^ (((b >> 63) as u64) >> 1) as i64) as u64) ^ (1 << 63);
    ((!ordered as u128) << 64) | k as u128
}

/// PF's metric of a candidate: the rate its rate index gives over the whole
/// band (`full_bits`, the slot grid's) over its average, bits per TTI.
#[inline]
pub fn pf_metric(full_bits: &[f64], itbs: RateIdx, avg_bits: f64) -> f64 {
    full_bits[itbs.get() as usize] / avg_bits.max(1.0)
}

/// The metric a [`pf_key`] was made of (its inverse).
pub(crate) fn pf_key_metric(key: u128) -> f64 {
    let ordered = !((key >> 64) as u64);
    let t = ordered ^ (1 << 63);
    // A negative metric's magnitude bits were flipped.
    let b = if (t as i64) < 0 { t ^ (u64::MAX >> 1) } else { t };
    f64::from_bits(b)
}

impl Scratch {
    /// Where a caller of [`allocate_pf_keyed`] puts its candidates' keys
    /// (emptied): [`pf_key`] of each one's [`pf_metric`] and its index,
    /// for every candidate whose metric is not below [`Scratch::pf_hint`].
    pub fn pf_keys(&mut self) -> &mut Vec<u128> {
        self.keys.clear();
        &mut self.keys
    }

    /// [`Scratch::pf_keys`] without a branch per candidate: room for the
    /// keys of `n` candidates, each offered with whether it passed the hint
    /// ([`PfKeySlots::offer`]); [`PfKeySlots::kept`] is what
    /// [`allocate_pf_keyed`] is then told was given. Which UEs pass the
    /// hint varies from UE to UE, a branch the processor predicts poorly;
    /// a slot is written either way and kept or not (400 backlogged UEs:
    /// 3% of the run's time).
    pub fn pf_key_slots(&mut self, n: usize) -> PfKeySlots<'_> {
        if self.keys.len() < n {
            self.keys.resize(n, 0);
        }
        PfKeySlots {
            slots: &mut self.keys[..n],
            kept: 0,
        }
    }

    /// The metric below which a candidate need not be keyed this TTI: the
    /// worst of the `2 × groups` best of the last TTI (−∞ when every
    /// candidate must be). A hint only: [`allocate_pf_keyed`] asks for
    /// every key when too few candidates pass it. In a steady TTI it holds:
    /// a UE not served decays its average, so its metric only grows, and at
    /// least half of the last TTI's best were not served.
    pub fn pf_hint(&self) -> f64 {
        self.pf_hint.unwrap_or(f64::NEG_INFINITY)
    }
}

/// Keys written in place ([`Scratch::pf_key_slots`]).
#[derive(Debug)]
pub struct PfKeySlots<'a> {
    slots: &'a mut [u128],
    kept: usize,
}

impl PfKeySlots<'_> {
    /// Writes `key` in the next slot and keeps it if `keep`. At most as
    /// many keys may be offered as there are slots.
    #[inline]
    pub fn offer(&mut self, key: u128, keep: bool) {
        self.slots[self.kept] = key;
        self.kept += keep as usize;
    }

    /// How many keys were kept: the `given` of [`allocate_pf_keyed`].
    pub fn kept(&self) -> usize {
        self.kept
    }
}

/// Puts in `scratch.groups` the free groups covering `free_prbs` PRBs, whole
/// groups in layout order (cut again only when `free_prbs` or the layout
/// changed).
fn free_groups(scratch: &mut Scratch, layout: &RbgLayout, free_prbs: u16) {
    let groups = &mut scratch.groups;
    if scratch
        .groups_for
        .as_ref()
        .is_none_or(|(f, sizes)| *f != free_prbs || *sizes != layout.sizes)
    {
        groups.clear();
        let mut left = free_prbs;
        for &s in &layout.sizes {
            if left == 0 {
                break;
            }
            let g = s.min(left);
            groups.push(g);
            left -= g;
        }
        scratch.groups_for = Some((free_prbs, layout.sizes.clone()));
    }
}

/// Smallest number of groups (from `from`) whose PRBs carry `demand_bytes`
/// at `itbs`.
fn needed_groups(grid: &TbsGrid, itbs: RateIdx, demand_bytes: u64, groups: &[u16], from: usize) -> usize {
    let bits = (demand_bytes.saturating_mul(8)).min(u32::MAX as u64) as u32;
    let prbs_needed = grid.min_prbs_for_bits(itbs, bits);
    let mut acc = 0u16;
    let mut n = 0;
    for &g in &groups[from..] {
        if acc >= prbs_needed {
            break;
        }
        acc += g;
        n += 1;
    }
    n
}

/// Proportional fair from the candidates' keys, put by the caller in
/// [`Scratch::pf_keys`] or [`Scratch::pf_key_slots`] (any order; the first
/// `given` count): the grants [`allocate_with`] gives PF for the same
/// candidates. `candidates` is how many there are; the caller may leave out
/// those whose metric is below [`Scratch::pf_hint`], and
/// `all_keys` puts every candidate's key (it is called when too few passed
/// the hint for the best to be among them). `candidate(k)` is the UE index,
/// rate index and demand (bytes) of the candidate whose key carries `k`; it
/// is asked only of the candidates served.
#[allow(clippy::too_many_arguments)]
pub fn allocate_pf_keyed(
    grid: &TbsGrid,
    layout: &RbgLayout,
    free_prbs: u16,
    scratch: &mut Scratch,
    given: usize,
    candidates: usize,
    all_keys: impl FnOnce(&mut Vec<u128>),
    candidate: impl Fn(usize) -> (usize, RateIdx, u64),
    out: &mut Vec<Grant>,
) {
    out.clear();
    if candidates == 0 || free_prbs == 0 {
        return;
    }
    free_groups(scratch, layout, free_prbs);
    let groups = &scratch.groups;
    // The best `groups.len()` are among the keys given when at least that
    // many were given: every candidate left out is worse than each given.
    let mut given = given;
    if given < groups.len().min(candidates) {
        scratch.keys.clear();
        all_keys(&mut scratch.keys);
        given = scratch.keys.len();
        debug_assert_eq!(given, candidates);
    }
    // Highest metric first; ties broken by candidate index (deterministic:
    // a total order, so any selection algorithm gives it). Every UE served
    // takes at least one group, so only the first `groups.len()` can be
    // served: they are selected in one pass, each key compared with the
    // worst of the best so far (a heap; a full sort made a TTI O(n log n)
    // in the UEs with data, a selection by partition cost more per key than
    // one comparison). Twice as many are kept: the worst of them is the
    // next TTI's hint.
    let served = (2 * groups.len()).min(given);
    let (order, worst) = if served < given {
        let (keys, best, order) = (&scratch.keys[..given], &mut scratch.best, &mut scratch.order);
        best.clear();
        best.extend(keys[..served].iter().copied());
        for &key in &keys[served..] {
            if key < *best.peek().expect("served > 0") {
                *best.peek_mut().expect("served > 0") = key;
            }
        }
        let worst = *best.peek().expect("served > 0");
        order.clear();
        order.extend(best.drain());
        (&mut order[..], worst)
    } else {
        // Every key is kept, where it is.
        let keys = &mut scratch.keys[..given];
        let worst = *keys.iter().max().expect("candidates > 0");
        (keys, worst)
    };
    scratch.pf_hint = (served < candidates).then(|| pf_key_metric(worst));
    // In order, only as far as the groups last: a UE with a long queue
    // takes every group, so a loaded TTI serves one or two, and sorting
    // every kept key cost more than the rest of the selection. The least
    // key left is brought forward (a scan) for the first few; past them
    // the rest is sorted.
    const SCANS: usize = 4;
    let mut next = 0;
    let mut k = 0;
    while next < groups.len() && k < order.len() {
        if k < SCANS {
            let least = (k..order.len()).min_by_key(|&j| order[j]).expect("k < len");
            order.swap(k, least);
        } else if k == SCANS {
            order[k..].sort_unstable();
        }
        let key = order[k];
        k += 1;
        let (index, itbs, demand) = candidate(key as u64 as usize);
        next = grant_groups(grid, groups, next, index, itbs, demand, out);
    }
}

/// Gives UE `index` the groups from `next` on that carry its demand (at
/// least one, at most those left); returns the next free group.
fn grant_groups(
    grid: &TbsGrid,
    groups: &[u16],
    next: usize,
    index: usize,
    itbs: RateIdx,
    demand: u64,
    out: &mut Vec<Grant>,
) -> usize {
    let n = needed_groups(grid, itbs, demand, groups, next).max(1);
    let take = n.min(groups.len() - next);
    let prbs: u16 = groups[next..next + take].iter().sum();
    out.push(Grant { index, prbs });
    next + take
}

/// Proportional fair over the UEs of a [`PfOrder`]: the grants
/// [`allocate_pf_keyed`] gives for the same candidates, working out the
/// metric of only those the order's bound cannot rule out (`pf_order`).
/// `metric(i)` is UE i's [`pf_metric`] when it is a candidate this TTI
/// (`None`: it has data and a rate index, but not a free HARQ process or
/// already a block this TTI); `candidate(i)` its rate index and demand,
/// asked only of the UEs served.
#[allow(clippy::too_many_arguments)]
pub fn allocate_pf_ordered(
    grid: &TbsGrid,
    layout: &RbgLayout,
    free_prbs: u16,
    scratch: &mut Scratch,
    order: &mut PfOrder,
    mut metric: impl FnMut(usize) -> Option<f64>,
    candidate: impl Fn(usize) -> (RateIdx, u64),
    out: &mut Vec<Grant>,
) {
    out.clear();
    if order.is_empty() || free_prbs == 0 {
        return;
    }
    free_groups(scratch, layout, free_prbs);
    let (groups, found) = (&scratch.groups, &mut scratch.found);
    found.clear();
    order.start_walk();
    order.seed_buckets(found, &mut metric);
    let mut next = 0;
    // ln of the best key found's metric, worked out again only when that
    // key changes.
    let mut best_ln: Option<(u128, f64)> = None;
    while next < groups.len() {
        // Walk until the best key found is better than every bound left:
        // it is then the best of the UEs not yet served.
        while let Some((i, bound)) = order.peek() {
            if let Some(&Reverse(best)) = found.peek() {
                let ln = match best_ln {
                    Some((k, ln)) if k == best => ln,
                    _ => {
                        let ln = pf_key_metric(best).ln();
                        best_ln = Some((best, ln));
                        ln
                    }
                };
                if bound < ln {
                    break;
                }
            }
            order.advance();
            if let Some(m) = metric(i) {
                found.push(Reverse(pf_key(m, i)));
            }
        }
        let Some(Reverse(key)) = found.pop() else {
            break;
        };
        let index = key as u64 as usize;
        order.taken(index, found, &mut metric);
        let (itbs, demand) = candidate(index);
        next = grant_groups(grid, groups, next, index, itbs, demand, out);
    }
}

/// [`allocate`] with its working space in `scratch`.
#[allow(clippy::too_many_arguments)]
pub fn allocate_with(
    kind: SchedulerKind,
    grid: &TbsGrid,
    layout: &RbgLayout,
    free_prbs: u16,
    candidates: &[Candidate],
    rr_start: usize,
    out: &mut Vec<Grant>,
    scratch: &mut Scratch,
) {
    out.clear();
    if candidates.is_empty() || free_prbs == 0 {
        return;
    }
    match kind {
        SchedulerKind::Pf => {
            let full = grid.full_bits();
            let keys = scratch.pf_keys();
            keys.extend(
                candidates
                    .iter()
                    .enumerate()
                    .map(|(k, c)| pf_key(pf_metric(full, c.itbs, c.avg_bits), k)),
            );
            allocate_pf_keyed(
                grid,
                layout,
                free_prbs,
                scratch,
                candidates.len(),
                candidates.len(),
                |_| unreachable!("every key was given"),
                |k| {
                    let c = &candidates[k];
                    (c.index, c.itbs, c.demand_bytes)
                },
                out,
            );
        }
        SchedulerKind::Rr => {
            free_groups(scratch, layout, free_prbs);
            let groups = &scratch.groups;
            let k = candidates.len();
            let want = &mut scratch.want;
            want.clear();
            want.extend(
                candidates
                    .iter()
                    .map(|c| needed_groups(grid, c.itbs, c.demand_bytes, groups, 0).max(1)),
            );
            let got = &mut scratch.got;
            got.clear();
            got.resize(k, 0);
            let mut avail = groups.len();
            // Hand out one group at a time in rotating order until nobody
            // wants more or none are left (water filling).
            let mut i = rr_start % k;
            let mut idle_rounds = 0;
            while avail > 0 && idle_rounds < k {
                if got[i] < want[i] {
                    got[i] += 1;
                    avail -= 1;
                    idle_rounds = 0;
                } else {
                    idle_rounds += 1;
                }
                i = (i + 1) % k;
            }
            let mut next = 0;
            for (j, c) in candidates.iter().enumerate() {
                if got[j] == 0 {
                    continue;
                }
                let prbs: u16 = groups[next..next + got[j]].iter().sum();
                next += got[j];
                want[j] = 0;
                out.push(Grant { index: c.index, prbs });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(index: usize, itbs: u8, demand: u64, avg: f64) -> Candidate {
        Candidate {
            index,
            itbs: RateIdx::new(itbs),
            demand_bytes: demand,
            avg_bits: avg,
        }
    }

    #[test]
    fn ten_megahertz_has_seventeen_groups_with_a_short_last_one() {
        let l = RbgLayout::new(50);
        assert_eq!(l.sizes.len(), 17);
        assert_eq!(*l.sizes.last().unwrap(), 2);
        assert_eq!(l.sizes.iter().sum::<u16>(), 50);
    }

    #[test]
    fn a_backlogged_ue_alone_gets_every_prb() {
        let l = RbgLayout::new(50);
        let mut out = Vec::new();
        allocate(
            SchedulerKind::Pf,
            &TbsGrid::lte(50),
            &l,
            50,
            &[cand(0, 26, 1_000_000, 1.0)],
            0,
            &mut out,
        );
        assert_eq!(out, vec![Grant { index: 0, prbs: 50 }]);
    }

    #[test]
    fn a_ue_gets_only_the_groups_its_buffer_needs() {
        let l = RbgLayout::new(50);
        let mut out = Vec::new();
        // 1502 bytes + headers at ITBS 26: 12032 bits needs 17 PRBs -> 6 groups of 3.
        allocate(
            SchedulerKind::Pf,
            &TbsGrid::lte(50),
            &l,
            50,
            &[cand(0, 26, 1507, 1.0)],
            0,
            &mut out,
        );
        assert_eq!(out.len(), 1);
        assert!(out[0].prbs < 50 && out[0].prbs % 3 == 0, "{:?}", out);
    }

    #[test]
    fn proportional_fair_serves_the_ue_with_the_lower_average_first() {
        let l = RbgLayout::new(50);
        let mut out = Vec::new();
        let c = [cand(0, 20, 1_000_000, 20_000.0), cand(1, 20, 1_000_000, 5_000.0)];
        allocate(SchedulerKind::Pf, &TbsGrid::lte(50), &l, 50, &c, 0, &mut out);
        assert_eq!(out, vec![Grant { index: 1, prbs: 50 }]);
    }

    /// Proportional fair as it was before the linear-time selection: every
    /// candidate sorted, then served in that order while groups last.
    fn pf_by_full_sort(layout: &RbgLayout, free_prbs: u16, candidates: &[Candidate]) -> Vec<Grant> {
        let mut groups = Vec::new();
        let mut left = free_prbs;
        for &s in &layout.sizes {
            if left == 0 {
                break;
            }
            groups.push(s.min(left));
            left -= s.min(left);
        }
        let mut order: Vec<(f64, usize)> = candidates
            .iter()
            .enumerate()
            .map(|(k, c)| {
                let full = amc::tbs(
                    amc::Itbs::new(c.itbs.get()).unwrap(),
                    amc::Prbs::new(layout.total_prbs).unwrap(),
                )
                .get() as f64;
                (full / c.avg_bits.max(1.0), k)
            })
            .collect();
        order.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        let mut out = Vec::new();
        let mut next = 0;
        for (_, k) in order {
            if next >= groups.len() {
                break;
            }
            let c = &candidates[k];
            let bits = (c.demand_bytes * 8).min(u32::MAX as u64) as u32;
            let need = amc::min_prbs_for_bits(
                amc::Itbs::new(c.itbs.get()).unwrap(),
                bits,
                amc::Prbs::new(110).unwrap(),
            )
            .get();
            let (mut acc, mut n) = (0u16, 0usize);
            while next + n < groups.len() && acc < need {
                acc += groups[next + n];
                n += 1;
            }
            let n = n.max(1);
            out.push(Grant {
                index: c.index,
                prbs: groups[next..next + n].iter().sum(),
            });
            next += n;
        }
        out
    }

    #[test]
    fn pf_keys_order_metrics_as_total_cmp_reversed_then_indices() {
        let xs = [
            f64::NEG_INFINITY,
            -3.5,
            -0.0,
            0.0,
            1e-300,
            1.0,
            2.5,
            1e300,
            f64::INFINITY,
            f64::NAN,
        ];
        for (i, &a) in xs.iter().enumerate() {
            for (j, &b) in xs.iter().enumerate() {
                for (ka, kb) in [(0, 1), (1, 0), (5, 5)] {
                    let want = b.total_cmp(&a).then(ka.cmp(&kb));
                    assert_eq!(pf_key(a, ka).cmp(&pf_key(b, kb)), want, "{i} {j} {ka} {kb}");
                    assert_eq!(pf_key_metric(pf_key(a, ka)).to_bits(), a.to_bits(), "{i}");
                }
            }
        }
    }

    #[test]
    fn proportional_fair_serves_the_same_ues_as_sorting_every_candidate() {
        let mut rng = crate::engine::Rng::from_seed(7);
        let mut scratch = Scratch::default();
        let mut out = Vec::new();
        // The most UEs one TTI served: past the first few, the rest of the
        // keys are sorted (`allocate_pf_keyed`), which must be reached.
        let mut most = 0;
        for round in 0..500 {
            let prbs = [6u16, 25, 50, 100][round % 4];
            let layout = RbgLayout::new(prbs);
            let n = 1 + rng.below(80) as usize;
            // Few distinct averages and ITBS values, so ties are common.
            let cands: Vec<Candidate> = (0..n)
                .map(|i| {
                    cand(
                        i * 3,
                        rng.below(27) as u8,
                        // Small demands in every other round: many served.
                        1 + rng.below(if round % 2 == 0 { 20_000 } else { 300 }),
                        (rng.below(5) * 1000) as f64,
                    )
                })
                .collect();
            allocate_with(
                SchedulerKind::Pf,
                &TbsGrid::lte(prbs),
                &layout,
                prbs,
                &cands,
                0,
                &mut out,
                &mut scratch,
            );
            assert_eq!(out, pf_by_full_sort(&layout, prbs, &cands), "round {round}");
            most = most.max(out.len());
        }
        assert!(most > 8, "at most {most} UEs served in a TTI");
    }

    #[test]
    fn pf_with_only_the_keys_that_pass_the_last_ttis_hint_grants_what_pf_with_every_key_grants() {
        // Property over PF's own dynamics (served UEs' averages rise, the
        // others decay; data comes and goes; rate indices change now and
        // then): the hint never changes a grant, whether it holds or not.
        let mut rng = crate::engine::Rng::from_seed(17);
        let (prbs, n) = (100u16, 90usize);
        let layout = RbgLayout::new(prbs);
        let grid = TbsGrid::lte(prbs);
        let mut avg = vec![0.0f64; n];
        let mut itbs: Vec<u8> = (0..n).map(|i| [26u8, 20, 15, 9, 4][i % 5]).collect();
        let (mut every, mut hinted) = (Scratch::default(), Scratch::default());
        let (mut want, mut got) = (Vec::new(), Vec::new());
        let mut passed_all = 0;
        for tti in 0..2000 {
            if rng.below(50) == 0 {
                itbs[rng.below(n as u64) as usize] = rng.below(27) as u8;
            }
            let has_data: Vec<bool> = (0..n).map(|i| (i + tti) % 37 != 0 || rng.below(2) == 0).collect();
            let cands: Vec<Candidate> = (0..n)
                .filter(|&i| has_data[i])
                .map(|i| cand(i, itbs[i], 1 + rng.below(30_000), avg[i]))
                .collect();
            allocate_with(
                SchedulerKind::Pf,
                &grid,
                &layout,
                prbs,
                &cands,
                0,
                &mut want,
                &mut every,
            );
            let full = grid.full_bits();
            let hint = hinted.pf_hint();
            // As the cell does: a slot per UE (more than the candidates,
            // so stale keys lie past those kept), each key offered.
            let mut slots = hinted.pf_key_slots(n);
            for c in &cands {
                let m = pf_metric(full, c.itbs, c.avg_bits);
                slots.offer(pf_key(m, c.index), m >= hint || m.is_nan());
            }
            let given = slots.kept();
            passed_all += (given == cands.len()) as u32;
            let all = |keys: &mut Vec<u128>| {
                keys.extend(
                    cands
                        .iter()
                        .map(|c| pf_key(pf_metric(full, c.itbs, c.avg_bits), c.index)),
                )
            };
            let by_index = |i: usize| {
                let c = cands.iter().find(|c| c.index == i).expect("a candidate");
                (i, c.itbs, c.demand_bytes)
            };
            allocate_pf_keyed(
                &grid,
                &layout,
                prbs,
                &mut hinted,
                given,
                cands.len(),
                all,
                by_index,
                &mut got,
            );
            assert_eq!(got, want, "TTI {tti}");
            let mut served = vec![0.0; n];
            for g in &got {
                served[g.index] = grid.bits(RateIdx::new(itbs[g.index]), g.prbs) as f64;
            }
            for (a, s) in avg.iter_mut().zip(&served) {
                *a = 0.99 * *a + 0.01 * s;
            }
        }
        assert!(
            passed_all < 200,
            "the hint left most candidates out ({passed_all} TTIs keyed all)"
        );
    }

    #[test]
    fn round_robin_splits_the_band_evenly_among_backlogged_ues() {
        let l = RbgLayout::new(50);
        let mut out = Vec::new();
        let c = [cand(0, 20, 1_000_000, 0.0), cand(1, 20, 1_000_000, 0.0)];
        allocate(SchedulerKind::Rr, &TbsGrid::lte(50), &l, 50, &c, 0, &mut out);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].prbs + out[1].prbs, 50);
        // 17 groups: 9 and 8, the short last group (2 PRBs) on one side.
        assert!((out[0].prbs as i32 - out[1].prbs as i32).abs() <= 4, "{:?}", out);
    }
}
