//! Proportional fair without a pass over every backlogged UE each TTI: the
//! UEs with data kept in the order of a bound on their PF metric, so that a
//! TTI works out the exact metric of only the few that can be served.
//!
//! PF (`scheduler`) serves the candidates of highest metric
//! m_i = F_g(r_i) / max(R_i, 1): the bits UE i's rate index r_i carries over
//! the whole band in the slot's grid g, over its average R_i. The cell
//! updates every UE's average every TTI, R_i ← fl(fl(c · R_i) + fl(a · b_i))
//! with c = fl(1 − a) and b_i the new-data bits it was served (`cell.rs`,
//! step 4). The averages stay exact and are still updated every TTI (one
//! element-wise pass); what this module saves is the candidate test and
//! the metric's division for every UE with data.
//!
//! Reference: the PF of `scheduler` (after ns-3's `PfFfMacScheduler`), whose
//! decisions this module does not change. Deviations from it: none; every
//! grant is the scan's (`allocate_pf_keyed`), bit for bit.
//!
//! # The bound
//!
//! While UE i is not served, b_i = 0 and R_i ← fl(c · R_i) (adding fl(a · 0)
//! = +0 is exact). Rounding to nearest loses at most a relative u = 2⁻⁵³ of
//! a normal result, so after n such passes from R_i(D₀):
//!
//! (1) R_i(D₀ + n) ≥ R_i(D₀) · (c (1 − u))ⁿ
//!
//! for as long as R_i stays normal; below 1 bit the metric's `max(R_i, 1)`
//! holds it at F, and the right side of (1) is below 1 too, so (2) still
//! bounds it. With F_i the most bits r_i carries in any of the cell's slot
//! kinds (a TDD special slot carries fewer than a downlink slot), and
//! λ = −ln(c (1 − u)):
//!
//! (2) ln m_i(D) ≤ K_i + D · λ, with K_i = ln F_i − ln R_i(D₀) − D₀ · λ
//!
//! K_i does not change while the UE is not served: the UEs in increasing
//! order of K_i are in increasing order of the bound (2) at every D, the
//! same D for all. A UE is keyed again (K_i worked out from its average of
//! that moment) when it was served, its rate index changed, or its data
//! came or went; an average that grew only loosens (2), so a key is never
//! stale in the unsafe direction.
//!
//! # Averages below 1 bit: the buckets
//!
//! A UE whose average is at most 1 bit has metric exactly F_g(r_i) (the
//! clamp), and keeps it until it is served; (2) meanwhile keeps growing.
//! In a cell of 1,000 backlogged UEs, where each waits longer between
//! services than its average takes to fall below 1 bit (~920 TTIs from
//! 10⁴ bits with the default window), most UEs are such, and walking them
//! by (2) made the selection three times slower than the scan. So a UE
//! keyed with an average of at most 1 bit goes instead to its rate index's
//! bucket, in UE-index order: all of a bucket's UEs have the same metric,
//! so its first candidate has the best key of the bucket. A UE of the heap
//! whose average falls to 1 bit or less is moved to its bucket when a walk
//! reaches it ([`PfOrder::after_walk`]).
//!
//! # The selection
//!
//! [`crate::ran::scheduler::allocate_pf_ordered`] starts from the exact key
//! of each bucket's first candidate, walks the heap's UEs best bound first,
//! works out each one's exact metric (the same expression as the scan) and
//! stops as soon as the best exact key found beats the next bound: every UE
//! not reached has a metric below it. When a bucket's UE is taken, the
//! bucket's next candidate comes in. It takes that best, gives it
//! its groups, and goes on while groups are left. The grants are those of
//! the scan ([`crate::ran::scheduler::allocate_pf_keyed`]): the same keys,
//! taken in the same order; the property test in `cell.rs` runs both. The
//! bound is compared with a margin of 10⁻⁹ of its magnitude for the
//! rounding of the logarithms and the sums, which at most makes a TTI work
//! out a few more metrics.
//!
//! The cost per TTI is the UEs keyed again (a served UE with a long queue
//! takes every group, so one or two a TTI in a loaded cell) times log n,
//! plus the UEs walked. A small cell, whose scan costs less than the heap's
//! upkeep, keeps the scan ([`MIN_UES`]).
//!
//! The UEs are in a binary heap that knows each UE's place (so a key can
//! change in place), walked best first with a second, small heap of the
//! walk's frontier; the buckets are ordered sets, one per rate index.
//!
//! Measured (`run_json --drain`, LTE 20 MHz, one bulk CUBIC flow per UE,
//! best of 4 alternated, docs/performance.md "PF through an order of
//! bounds"): 400 UEs 335.8 → 265.3 ms, 1,000 UEs 531.0 → 373.7 ms, 1 UE
//! unchanged (it keeps the scan).

use std::cmp::Reverse;
use std::collections::{BTreeSet, BinaryHeap};

use super::scheduler::{pf_key, pf_key_metric};
use super::tbs_grid::RateIdx;

/// The fewest UEs in a cell for which PF keeps the order instead of the
/// scan: below it the scan over the UEs with data costs less than keeping
/// the heap (a 1-UE cell is served every TTI and would be keyed again every
/// TTI).
pub const MIN_UES: usize = 32;

const ABSENT: u32 = u32::MAX;

/// The UEs with data in the order of the bound (2) (module doc).
#[derive(Debug)]
pub struct PfOrder {
    /// [`pf_key`]`(K_i, i)` of each UE in the order, as a binary heap with
    /// the least key (the best bound) at the root.
    heap: Vec<u128>,
    /// Each UE's place in `heap` (`ABSENT`: not in the order).
    place: Vec<u32>,
    /// UEs to key again at the next [`PfOrder::sync`], once each.
    dirty: Vec<u32>,
    is_dirty: Vec<bool>,
    /// The walk's frontier: keys and places in `heap` not yet walked whose
    /// parent was.
    frontier: BinaryHeap<Reverse<(u128, u32)>>,
    /// ln F per rate index: the most bits the index carries over the band in
    /// any slot kind of the cell.
    ln_full: Vec<f64>,
    /// λ of (2), rounded up.
    lambda: f64,
    /// The averages' passes so far (D).
    passes: u64,
    /// UEs walked so far, over every selection (what the scan would have
    /// tested is every UE with data, every TTI).
    walked: u64,
    /// The UEs of this selection's walk (checked for a clamped average
    /// after it, [`PfOrder::after_walk`]).
    walk: Vec<u32>,
    /// The UEs whose average is at most 1 bit, by rate index, in index
    /// order (`bucket[r]`): their metric is exactly the slot's bits at r.
    buckets: Vec<BTreeSet<u32>>,
    /// Each UE's bucket (`NO_BUCKET`: none).
    bucket_of: Vec<u8>,
    in_buckets: usize,
}

const NO_BUCKET: u8 = u8::MAX;

impl PfOrder {
    /// An empty order for `ues` UEs, whose averages decay by `1 − a` a pass
    /// (`pf_a` = a), their rate indices carrying at most `full_bits[r]` bits
    /// in a slot. `None` when the decay gives no bound (a = 1: every
    /// unserved average is 0 after one pass).
    pub fn new(ues: usize, pf_a: f64, full_bits: &[f64]) -> Option<Self> {
        // The same expression as the cell's update.
        let c = 1.0 - pf_a;
        if !(c > 0.0 && c < 1.0) {
            return None;
        }
        // −ln(c (1 − u)) = −ln c − ln(1 − u) ≤ −ln c + 2u; the logarithm's
        // own rounding is covered by the relative 10⁻¹².
        let lambda = -c.ln() * (1.0 + 1e-12) + f64::EPSILON;
        if !lambda.is_finite() || lambda <= 0.0 || full_bits.len() >= NO_BUCKET as usize {
            return None;
        }
        Some(PfOrder {
            heap: Vec::with_capacity(ues),
            place: vec![ABSENT; ues],
            dirty: Vec::new(),
            is_dirty: vec![false; ues],
            frontier: BinaryHeap::new(),
            ln_full: full_bits
                .iter()
                .map(|&f| if f > 0.0 { f.ln() } else { f64::NEG_INFINITY })
                .collect(),
            lambda,
            passes: 0,
            walked: 0,
            walk: Vec::new(),
            buckets: vec![BTreeSet::new(); full_bits.len()],
            bucket_of: vec![NO_BUCKET; ues],
            in_buckets: 0,
        })
    }

    /// UE `i` must be keyed again before the next selection: it was served,
    /// its rate index changed, or its buffer emptied or stopped being empty.
    #[inline]
    pub fn mark(&mut self, i: usize) {
        if !self.is_dirty[i] {
            self.is_dirty[i] = true;
            self.dirty.push(i as u32);
        }
    }

    /// Every UE's average went through one more pass.
    #[inline]
    pub fn decayed(&mut self) {
        self.passes += 1;
    }

    /// Keys again the UEs marked since the last call: each in the order
    /// with `rate(i)` (`None`: it has no data or no rate index, out of the
    /// order) and its average `avg[i]` of now.
    pub fn sync(&mut self, avg: &[f64], rate: impl Fn(usize) -> Option<RateIdx>) {
        let mut dirty = std::mem::take(&mut self.dirty);
        for &i in &dirty {
            let i = i as usize;
            self.is_dirty[i] = false;
            self.leave_bucket(i);
            match rate(i) {
                // Clamped: in its rate's bucket.
                Some(r) if avg[i] <= 1.0 => {
                    self.remove(i);
                    self.buckets[r.get() as usize].insert(i as u32);
                    self.bucket_of[i] = r.get();
                    self.in_buckets += 1;
                }
                Some(r) => {
                    let key = pf_key(self.anchor(r, avg[i]), i);
                    self.set(i, key);
                }
                None => self.remove(i),
            }
        }
        dirty.clear();
        self.dirty = dirty;
    }

    fn leave_bucket(&mut self, i: usize) {
        let b = std::mem::replace(&mut self.bucket_of[i], NO_BUCKET);
        if b != NO_BUCKET {
            self.buckets[b as usize].remove(&(i as u32));
            self.in_buckets -= 1;
        }
    }

    /// The UEs of the last walk whose average fell to 1 bit or less since
    /// they were keyed are marked, to move to their rate's bucket: their
    /// bound (2) keeps growing while their metric no longer does.
    pub fn after_walk(&mut self, avg: &[f64]) {
        let walk = std::mem::take(&mut self.walk);
        for &i in &walk {
            if avg[i as usize] <= 1.0 {
                self.mark(i as usize);
            }
        }
        self.walk = walk;
    }

    /// Puts in `found` the exact key (`metric`) of the first candidate of
    /// each bucket, in index order: every other UE of a bucket has the same
    /// metric and a greater index.
    pub fn seed_buckets(&self, found: &mut BinaryHeap<Reverse<u128>>, metric: &mut impl FnMut(usize) -> Option<f64>) {
        if self.in_buckets == 0 {
            return;
        }
        for b in &self.buckets {
            Self::first_candidate(b.iter(), found, metric);
        }
    }

    /// After the UE `i` was taken from `found`: the next candidate of its
    /// bucket, if it has one, goes in.
    pub fn taken(
        &self,
        i: usize,
        found: &mut BinaryHeap<Reverse<u128>>,
        metric: &mut impl FnMut(usize) -> Option<f64>,
    ) {
        let b = self.bucket_of[i];
        if b != NO_BUCKET {
            Self::first_candidate(self.buckets[b as usize].range(i as u32 + 1..), found, metric);
        }
    }

    fn first_candidate<'a>(
        ues: impl Iterator<Item = &'a u32>,
        found: &mut BinaryHeap<Reverse<u128>>,
        metric: &mut impl FnMut(usize) -> Option<f64>,
    ) {
        for &j in ues {
            if let Some(m) = metric(j as usize) {
                found.push(Reverse(pf_key(m, j as usize)));
                return;
            }
        }
    }

    /// K of (2) for rate index `r` and average `avg` now.
    fn anchor(&self, r: RateIdx, avg: f64) -> f64 {
        let ln_f = self.ln_full[r.get() as usize];
        if ln_f == f64::NEG_INFINITY {
            // No bits at this rate: the metric is 0 (the walk's last).
            return f64::NEG_INFINITY;
        }
        // avg = 0 (never served, or decayed to nothing): +∞, always walked.
        ln_f - avg.ln() - self.passes as f64 * self.lambda
    }

    /// UEs walked over every selection so far.
    pub fn walked(&self) -> u64 {
        self.walked
    }

    /// How many UEs are in the order.
    pub fn len(&self) -> usize {
        self.heap.len() + self.in_buckets
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Starts a walk, best bound first.
    pub fn start_walk(&mut self) {
        self.frontier.clear();
        self.walk.clear();
        if let Some(&k) = self.heap.first() {
            self.frontier.push(Reverse((k, 0)));
        }
    }

    /// The next UE of the walk and its bound on ln m (2), margin included;
    /// not taken.
    #[inline]
    pub fn peek(&self) -> Option<(usize, f64)> {
        let &Reverse((key, _)) = self.frontier.peek()?;
        Some((key as u64 as usize, self.bound(key)))
    }

    /// The bound on ln m (2) of the UE keyed `key`, margin included.
    #[inline]
    fn bound(&self, key: u128) -> f64 {
        let k = pf_key_metric(key);
        if k.is_infinite() {
            // No bits at its rate (−∞).
            return k;
        }
        let drift = self.passes as f64 * self.lambda;
        k + drift + 1e-9 * (1.0 + k.abs() + drift)
    }

    /// Takes the UE [`PfOrder::peek`] gave.
    #[inline]
    pub fn advance(&mut self) {
        let Some(Reverse((key, p))) = self.frontier.pop() else {
            return;
        };
        self.walked += 1;
        self.walk.push(key as u64 as u32);
        for child in [2 * p as usize + 1, 2 * p as usize + 2] {
            if let Some(&k) = self.heap.get(child) {
                self.frontier.push(Reverse((k, child as u32)));
            }
        }
    }

    /// Puts UE `i` in the order with `key`, or moves it there.
    fn set(&mut self, i: usize, key: u128) {
        let p = self.place[i];
        if p == ABSENT {
            let p = self.heap.len();
            self.heap.push(key);
            self.place[i] = p as u32;
            self.up(p);
        } else {
            let p = p as usize;
            let old = self.heap[p];
            self.heap[p] = key;
            if key < old {
                self.up(p);
            } else {
                self.down(p);
            }
        }
    }

    fn remove(&mut self, i: usize) {
        let p = self.place[i];
        if p == ABSENT {
            return;
        }
        let p = p as usize;
        self.place[i] = ABSENT;
        let last = self.heap.pop().expect("a UE in the order");
        if p < self.heap.len() {
            let old = self.heap[p];
            self.put(p, last);
            if last < old {
                self.up(p);
            } else {
                self.down(p);
            }
        }
    }

    fn up(&mut self, mut p: usize) {
        let key = self.heap[p];
        while p > 0 {
            let parent = (p - 1) / 2;
            let pk = self.heap[parent];
            if pk <= key {
                break;
            }
            self.put(p, pk);
            p = parent;
        }
        self.put(p, key);
    }

    fn down(&mut self, mut p: usize) {
        let key = self.heap[p];
        let n = self.heap.len();
        loop {
            let l = 2 * p + 1;
            if l >= n {
                break;
            }
            let r = l + 1;
            let c = if r < n && self.heap[r] < self.heap[l] { r } else { l };
            let ck = self.heap[c];
            if ck >= key {
                break;
            }
            self.put(p, ck);
            p = c;
        }
        self.put(p, key);
    }

    /// `key` at heap position `p`, its UE (the key's low bits) told where.
    #[inline]
    fn put(&mut self, p: usize, key: u128) {
        self.heap[p] = key;
        self.place[key as u64 as usize] = p as u32;
    }

    /// Checks the heap property and the places (tests).
    #[cfg(test)]
    fn check(&self) {
        for (p, &k) in self.heap.iter().enumerate() {
            assert_eq!(self.place[k as u64 as usize] as usize, p);
            if p > 0 {
                assert!(self.heap[(p - 1) / 2] <= k);
            }
        }
        assert_eq!(self.place.iter().filter(|&&p| p != ABSENT).count(), self.heap.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::rng::Rng;

    fn rate(i: u8) -> RateIdx {
        RateIdx::new(i)
    }

    #[test]
    fn a_walk_visits_every_ue_in_the_order_of_its_key() {
        let full: Vec<f64> = (1..=10).map(|x| 1000.0 * x as f64).collect();
        let mut o = PfOrder::new(50, 0.01, &full).unwrap();
        let mut rng = Rng::from_seed(7);
        let mut avg = vec![0.0; 50];
        let mut rates = [None; 50];
        for step in 0..400 {
            let i = rng.below(50) as usize;
            avg[i] = rng.below(5000) as f64;
            rates[i] = (rng.below(4) != 0).then(|| rate(rng.below(10) as u8));
            o.mark(i);
            if step % 7 == 0 {
                o.sync(&avg, |j| rates[j]);
                o.check();
                o.start_walk();
                let mut seen = Vec::new();
                while let Some((j, _)) = o.peek() {
                    seen.push(j);
                    o.advance();
                }
                let mut want: Vec<u128> = (0..50)
                    .filter(|&j| o.place[j] != ABSENT)
                    .map(|j| o.heap[o.place[j] as usize])
                    .collect();
                want.sort_unstable();
                let got: Vec<u128> = seen.iter().map(|&j| o.heap[o.place[j] as usize]).collect();
                assert_eq!(got, want);
                let members: Vec<usize> = (0..50).filter(|&j| rates[j].is_some()).collect();
                let mut seen_sorted = seen.clone();
                seen_sorted.sort_unstable();
                assert_eq!(
                    seen_sorted, members,
                    "every UE with a rate, and only those, at step {step}"
                );
            }
        }
    }

    #[test]
    fn the_bound_holds_for_an_average_decayed_pass_after_pass() {
        // Averages from 10⁻³ to 10⁹ bits, decayed as the cell does for up
        // to 20,000 passes (into the subnormals for the smallest): the
        // exact metric never exceeds the bound of the key made at the start.
        let full = [37_000.0, 1.0, 75_376.0];
        for &a in &[0.01, 0.001, 1.0 / 99.0, 0.5] {
            let mut o = PfOrder::new(1, a, &full).unwrap();
            for _ in 0..123 {
                o.decayed();
            }
            for &start in &[1e-3, 0.7, 1.0, 3.0, 1234.5, 7.5e5, 1e9] {
                for r in 0..3u8 {
                    let mut o2 = PfOrder {
                        passes: o.passes,
                        ..PfOrder::new(1, a, &full).unwrap()
                    };
                    let mut avg = start;
                    let key = pf_key(o2.anchor(rate(r), avg), 0);
                    for n in 0..20_000u32 {
                        let bound = o2.bound(key);
                        let m = full[r as usize] / f64::max(avg, 1.0);
                        assert!(
                            m.ln() <= bound,
                            "a {a} start {start} rate {r} after {n}: ln m {} > {bound}",
                            m.ln()
                        );
                        avg = (1.0 - a) * avg + a * 0.0;
                        o2.decayed();
                    }
                }
            }
        }
    }

    #[test]
    fn no_bound_without_decay() {
        assert!(PfOrder::new(3, 1.0, &[1.0]).is_none());
        assert!(PfOrder::new(3, 0.0, &[1.0]).is_none());
    }
}
