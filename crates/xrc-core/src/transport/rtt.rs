//! Round-trip time estimation: the smoothed RTT and the variance term of
//! the retransmission timeout, by one of two rules.
//!
//! **Linux** (`RtoRule::Linux`, the default), Linux `tcp_rtt_estimator` and
//! `__tcp_set_rto` (`net/ipv4/tcp_input.c`, `include/net/tcp.h`), in
//! microseconds with Linux's fixed-point scaling (`srtt_us` = 8·srtt,
//! `mdev_us` = 4·mean deviation):
//! - first sample m: srtt = m, mdev = m/2, `rttvar` = max(4·mdev, rto_min),
//!   `mdev_max` = rttvar, `rtt_seq` = snd_nxt;
//! - later samples: srtt += (m − srtt)/8; the deviation |m − srtt| moves
//!   mdev by 1/4 of the difference, but by only 1/32 when the RTT fell
//!   (m < srtt) and the deviation is above mdev (the Eifel-like "finer
//!   gain"); `mdev_max` is the largest 4·mdev of the current round and
//!   pushes `rttvar` up at once;
//! - once per round of data (snd_una passes `rtt_seq`): `rttvar` decays a
//!   quarter of the way down to `mdev_max`, `mdev_max` restarts at rto_min
//!   and `rtt_seq` = snd_nxt. So `rttvar` never falls below rto_min;
//! - RTO base = srtt + rttvar (`__tcp_set_rto`; the caller rounds it up to
//!   whole jiffies and bounds it).
//!
//! **RFC 6298** (`RtoRule::Rfc6298`, ns-3's `RttMeanDeviation` and
//! `TcpSocketBase`): srtt and rttvar with gains 1/8 and 1/4, RTO base =
//! max(rto_min, srtt + max(G, 4·rttvar)): the minimum clamps the whole RTO,
//! not the variance term.
//!
//! Deviations: (1) the RFC rule's clock granularity G is 1 µs (ns-3: 1 ms;
//! 4·rttvar is far above either in every scenario here). (2) Linux's
//! samples are differences of microsecond timestamps; here the nanosecond
//! sample is truncated to whole microseconds.

use serde::{Deserialize, Serialize};

use crate::units::SimDuration;

/// How the RTO's variance term and minimum combine.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum RtoRule {
    /// Linux: srtt + rttvar, with rttvar floored at rto_min per RTT round
    /// (`tcp_rtt_estimator`, `tcp_set_rto`).
    #[default]
    Linux,
    /// RFC 6298 §2 and ns-3: max(rto_min, srtt + 4·rttvar).
    Rfc6298,
}

#[derive(Clone, Debug)]
pub struct RttConfig {
    pub rule: RtoRule,
    /// Linux `tcp_rto_min` (200 ms, `TCP_RTO_MIN`); RFC 6298's minimum RTO.
    pub min_rto: SimDuration,
}

impl Default for RttConfig {
    fn default() -> Self {
        RttConfig {
            rule: RtoRule::Linux,
            min_rto: SimDuration::from_millis(200),
        }
    }
}

/// RFC 6298's clock granularity G.
const G: SimDuration = SimDuration::from_micros(1);

#[derive(Clone, Debug)]
pub struct RttEstimator {
    cfg: RttConfig,
    /// Linux rule, µs: 8·srtt (`srtt_us`), 0 before the first sample.
    srtt8_us: u64,
    /// Linux rule, µs: 4·mean deviation (`mdev_us`).
    mdev4_us: i64,
    /// Linux rule, µs: the largest `mdev_us` of this round (`mdev_max_us`).
    mdev_max_us: u64,
    /// Linux rule, µs: the RTO's variance term (`rttvar_us`).
    rttvar_us: u64,
    /// Linux rule: snd_nxt when the current round started (`rtt_seq`).
    rtt_seq: u64,
    /// RFC rule: SRTT and RTTVAR, exact.
    srtt: Option<SimDuration>,
    rttvar: SimDuration,
    latest: Option<SimDuration>,
    min: Option<SimDuration>,
}

impl RttEstimator {
    pub fn new(cfg: RttConfig) -> Self {
        RttEstimator {
            cfg,
            srtt8_us: 0,
            mdev4_us: 0,
            mdev_max_us: 0,
            rttvar_us: 0,
            rtt_seq: 0,
            srtt: None,
            rttvar: SimDuration::ZERO,
            latest: None,
            min: None,
        }
    }

    pub fn rule(&self) -> RtoRule {
        self.cfg.rule
    }

    /// Feeds one RTT measurement taken when the cumulative ACK point is
    /// `snd_una` and the next new byte `snd_nxt` (Linux needs both to find
    /// RTT rounds).
    pub fn update(&mut self, r: SimDuration, snd_una: u64, snd_nxt: u64) {
        self.latest = Some(r);
        self.min = Some(self.min.map_or(r, |m| m.min(r)));
        match self.cfg.rule {
            RtoRule::Linux => self.update_linux(r.as_micros(), snd_una, snd_nxt),
            RtoRule::Rfc6298 => self.update_rfc(r),
        }
    }

    /// Linux `tcp_rtt_estimator`.
    fn update_linux(&mut self, m_us: u64, snd_una: u64, snd_nxt: u64) {
        let rto_min = self.cfg.min_rto.as_micros();
        let mut m = m_us as i64;
        if self.srtt8_us != 0 {
            let mut srtt8 = self.srtt8_us as i64;
            m -= srtt8 >> 3; // the error of the estimate
            srtt8 += m; // srtt = 7/8 srtt + 1/8 m
            if m < 0 {
                // The RTT fell: a finer gain (1/32 instead of 1/4) once the
                // error exceeds the deviation.
                m = -m;
                m -= self.mdev4_us >> 2;
                if m > 0 {
                    m >>= 3;
                }
            } else {
                m -= self.mdev4_us >> 2;
            }
            self.mdev4_us += m; // mdev = 3/4 mdev + 1/4 |error|
            self.srtt8_us = srtt8.max(1) as u64;
            let mdev = self.mdev4_us.max(0) as u64;
            if mdev > self.mdev_max_us {
                self.mdev_max_us = mdev;
                self.rttvar_us = self.rttvar_us.max(mdev);
            }
            if snd_una > self.rtt_seq {
                // A round of data is over: rttvar decays towards this
                // round's largest deviation, and the next round's starts at
                // rto_min.
                if self.mdev_max_us < self.rttvar_us {
                    self.rttvar_us -= (self.rttvar_us - self.mdev_max_us) >> 2;
                }
                self.rtt_seq = snd_nxt;
                self.mdev_max_us = rto_min;
            }
        } else {
            // First sample: srtt = m, mdev = m/2, so the RTO is 3·m.
            self.srtt8_us = ((m as u64) << 3).max(1);
            self.mdev4_us = m << 1;
            self.rttvar_us = ((m as u64) << 1).max(rto_min);
            self.mdev_max_us = self.rttvar_us;
            self.rtt_seq = snd_nxt;
        }
    }

    /// RFC 6298 §2.2 for the first sample, §2.3 afterwards.
    fn update_rfc(&mut self, r: SimDuration) {
        match self.srtt {
            None => {
                // (2.2) SRTT <- R, RTTVAR <- R/2
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(srtt) => {
                // (2.3) RTTVAR <- (1 - beta) * RTTVAR + beta * |SRTT - R'|, beta = 1/4
                //       SRTT <- (1 - alpha) * SRTT + alpha * R',       alpha = 1/8
                let err = if srtt > r { srtt - r } else { r - srtt };
                let var = (self.rttvar.as_nanos() * 3 + err.as_nanos()) / 4;
                self.rttvar = SimDuration::from_nanos(var);
                let s = (srtt.as_nanos() * 7 + r.as_nanos()) / 8;
                self.srtt = Some(SimDuration::from_nanos(s));
            }
        }
    }

    /// The RTO before rounding to the timer's clock, bounding and backoff;
    /// `None` before the first sample. Linux: srtt + rttvar
    /// (`__tcp_set_rto`). RFC 6298: max(rto_min, srtt + max(G, 4·rttvar)).
    pub fn rto_base(&self) -> Option<SimDuration> {
        match self.cfg.rule {
            RtoRule::Linux => {
                (self.srtt8_us != 0).then(|| SimDuration::from_micros((self.srtt8_us >> 3) + self.rttvar_us))
            }
            RtoRule::Rfc6298 => {
                let srtt = self.srtt?;
                Some((srtt + G.max(self.rttvar * 4)).max(self.cfg.min_rto))
            }
        }
    }

    /// Twice the smoothed RTT, as Linux computes it for the probe timeout
    /// (`srtt_us >> 2`).
    pub fn srtt_x2(&self) -> Option<SimDuration> {
        match self.cfg.rule {
            RtoRule::Linux => (self.srtt8_us != 0).then(|| SimDuration::from_micros(self.srtt8_us >> 2)),
            RtoRule::Rfc6298 => self.srtt.map(|s| s * 2),
        }
    }

    pub fn srtt(&self) -> Option<SimDuration> {
        match self.cfg.rule {
            RtoRule::Linux => (self.srtt8_us != 0).then(|| SimDuration::from_micros(self.srtt8_us >> 3)),
            RtoRule::Rfc6298 => self.srtt,
        }
    }
    /// The RTO's variance term: Linux `rttvar_us` (already four deviations,
    /// floored at rto_min); RFC 6298 RTTVAR (one deviation).
    pub fn rttvar(&self) -> SimDuration {
        match self.cfg.rule {
            RtoRule::Linux => SimDuration::from_micros(self.rttvar_us),
            RtoRule::Rfc6298 => self.rttvar,
        }
    }
    pub fn latest(&self) -> Option<SimDuration> {
        self.latest
    }
    /// Smallest sample since the connection started.
    pub fn min(&self) -> Option<SimDuration> {
        self.min
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> SimDuration {
        SimDuration::from_millis(v)
    }
    fn us(v: u64) -> SimDuration {
        SimDuration::from_micros(v)
    }
    fn rfc() -> RttEstimator {
        RttEstimator::new(RttConfig {
            rule: RtoRule::Rfc6298,
            min_rto: ms(200),
        })
    }
    fn linux() -> RttEstimator {
        RttEstimator::new(RttConfig::default())
    }

    #[test]
    fn rfc6298_the_first_sample_sets_srtt_and_half_of_it_as_variance() {
        let mut e = rfc();
        assert_eq!(e.rto_base(), None);
        e.update(ms(100), 0, 0);
        assert_eq!(e.srtt(), Some(ms(100)));
        assert_eq!(e.rttvar(), ms(50));
        assert_eq!(e.rto_base(), Some(ms(300)));
    }

    #[test]
    fn rfc6298_later_samples_are_smoothed_with_one_eighth_and_one_quarter() {
        let mut e = rfc();
        e.update(ms(100), 0, 0);
        e.update(ms(200), 0, 0);
        // rttvar = 3/4*50 + 1/4*100 = 62.5; srtt = 7/8*100 + 1/8*200 = 112.5
        assert_eq!(e.rttvar(), us(62_500));
        assert_eq!(e.srtt(), Some(us(112_500)));
    }

    #[test]
    fn rfc6298_clamps_the_whole_rto_at_the_minimum() {
        let mut e = rfc();
        e.update(ms(10), 0, 0);
        // 10 + 4·5 = 30 ms < 200 ms.
        assert_eq!(e.rto_base(), Some(ms(200)));
    }

    #[test]
    fn linux_the_first_sample_floors_the_variance_term_at_rto_min() {
        let mut e = linux();
        e.update(ms(10), 0, 10);
        // srtt 10 ms, mdev 5 ms: 4·mdev = 20 ms, floored at 200 ms.
        assert_eq!(e.srtt(), Some(ms(10)));
        assert_eq!(e.rttvar(), ms(200));
        assert_eq!(e.rto_base(), Some(ms(210)));
        // A long first RTT: 3·RTT.
        let mut e = linux();
        e.update(ms(300), 0, 10);
        assert_eq!(e.rto_base(), Some(ms(900)));
    }

    /// Linux's arithmetic redone by hand in µs (srtt8 = 8·srtt, mdev4 =
    /// 4·mdev, rttvar and mdev_max in the units of mdev4), for samples over
    /// three rounds of data, rto_min = 200 ms.
    #[test]
    fn linux_rto_follows_tcp_rtt_estimator_across_rtt_rounds() {
        let mut e = linux();
        // Round 0: first sample 100 ms with snd_nxt = 10.
        //   srtt8 = 800000, mdev4 = 200000, rttvar = max(200000, 200000)
        //   = 200000, mdev_max = 200000, rtt_seq = 10. RTO = 100000 + 200000.
        e.update(ms(100), 0, 10);
        assert_eq!(e.rto_base(), Some(us(300_000)));

        // Same round (snd_una 5 ≤ rtt_seq 10), sample 180 ms:
        //   m = 180000 − 100000 = 80000; srtt8 = 880000 (srtt 110000);
        //   m ≥ 0: m = 80000 − 200000/4 = 30000; mdev4 = 230000 > mdev_max
        //   → mdev_max = 230000, rttvar = 230000. RTO = 110000 + 230000.
        e.update(ms(180), 5, 20);
        assert_eq!(e.srtt(), Some(us(110_000)));
        assert_eq!(e.rto_base(), Some(us(340_000)));

        // Round ends (snd_una 12 > rtt_seq 10), sample 90 ms:
        //   m = 90000 − 110000 = −20000; srtt8 = 860000 (srtt 107500);
        //   m < 0: m = 20000 − 230000/4 = 20000 − 57500 = −37500 (not > 0,
        //   so no 1/8 scaling); mdev4 = 192500 (not above mdev_max 230000);
        //   round over: mdev_max 230000 is not below rttvar 230000, so no
        //   decay; rtt_seq = 30; mdev_max = 200000. RTO = 107500 + 230000.
        e.update(ms(90), 12, 30);
        assert_eq!(e.srtt(), Some(us(107_500)));
        assert_eq!(e.rttvar(), us(230_000));
        assert_eq!(e.rto_base(), Some(us(337_500)));

        // Next round ends (snd_una 31 > 30), sample 20 ms: the RTT fell a lot.
        //   m = 20000 − 107500 = −87500; srtt8 = 772500 (srtt 96562);
        //   m < 0: m = 87500 − 192500/4 = 87500 − 48125 = 39375 > 0 → m/8
        //   = 4921; mdev4 = 197421 (below mdev_max 200000); round over:
        //   rttvar 230000 > mdev_max 200000 → rttvar −= 30000/4 → 222500;
        //   mdev_max = 200000. RTO = 96562 + 222500.
        e.update(ms(20), 31, 40);
        assert_eq!(e.srtt(), Some(us(96_562)));
        assert_eq!(e.rttvar(), us(222_500));
        assert_eq!(e.rto_base(), Some(us(319_062)));

        // Another round of steady 20 ms: rttvar keeps decaying towards
        // rto_min but never below it.
        //   m = 20000 − 96562 = −76562; srtt8 = 695938 (srtt 86992);
        //   m = 76562 − 197421/4 = 76562 − 49355 = 27207 → 3400;
        //   mdev4 = 200821 > mdev_max 200000 → mdev_max = 200821 (rttvar
        //   222500 stays); round over: rttvar −= (222500 − 200821)/4 = 5419
        //   → 217081; mdev_max = 200000. RTO = 86992 + 217081.
        e.update(ms(20), 41, 50);
        assert_eq!(e.srtt(), Some(us(86_992)));
        assert_eq!(e.rttvar(), us(217_081));
        assert_eq!(e.rto_base(), Some(us(304_073)));
    }

    #[test]
    fn linux_rttvar_never_falls_below_rto_min_however_steady_the_rtt() {
        let mut e = linux();
        let mut una = 0;
        for _ in 0..500 {
            una += 10;
            e.update(ms(40), una, una + 10);
        }
        assert_eq!(e.srtt(), Some(ms(40)));
        assert!(e.rttvar() >= ms(200), "{:?}", e.rttvar());
        assert!(e.rto_base().unwrap() >= ms(240));
    }

    #[test]
    fn the_minimum_is_the_smallest_sample_under_both_rules() {
        for mut e in [linux(), rfc()] {
            e.update(ms(50), 0, 1);
            e.update(ms(30), 0, 1);
            e.update(ms(70), 0, 1);
            assert_eq!(e.min(), Some(ms(30)));
            assert_eq!(e.latest(), Some(ms(70)));
        }
    }
}
