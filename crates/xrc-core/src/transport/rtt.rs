//! Round-trip time estimation and the retransmission timeout, RFC 6298.
//!
//! Deviation (1): the minimum RTO defaults to 200 ms, as in Linux
//! (`TCP_RTO_MIN`), rather than RFC 6298's 1 s (§2.4 "SHOULD"); it is a
//! parameter. Deviation (2): the clock granularity G is taken as 1 µs; the
//! simulator's clock is exact, so G only keeps the variance term positive.

use crate::units::SimDuration;

#[derive(Clone, Debug)]
pub struct RttConfig {
    pub initial_rto: SimDuration,
    pub min_rto: SimDuration,
    pub max_rto: SimDuration,
}

impl Default for RttConfig {
    fn default() -> Self {
        RttConfig {
            initial_rto: SimDuration::from_secs(1),
            min_rto: SimDuration::from_millis(200),
            max_rto: SimDuration::from_secs(120),
        }
    }
}

const G: SimDuration = SimDuration::from_micros(1);

#[derive(Clone, Debug)]
pub struct RttEstimator {
    cfg: RttConfig,
    srtt: Option<SimDuration>,
    rttvar: SimDuration,
    latest: Option<SimDuration>,
    min: Option<SimDuration>,
    /// Exponential backoff shift applied to the RTO (§5.5).
    backoff: u32,
}

impl RttEstimator {
    pub fn new(cfg: RttConfig) -> Self {
        RttEstimator {
            cfg,
            srtt: None,
            rttvar: SimDuration::ZERO,
            latest: None,
            min: None,
            backoff: 0,
        }
    }

    /// Feeds one RTT measurement (§2.2 for the first, §2.3 afterwards).
    pub fn update(&mut self, r: SimDuration) {
        self.latest = Some(r);
        self.min = Some(self.min.map_or(r, |m| m.min(r)));
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

    /// RTO = SRTT + max(G, K * RTTVAR), K = 4, clamped to [min, max] (§2.2–2.5),
    /// then doubled per backoff (§5.5).
    pub fn rto(&self) -> SimDuration {
        let base = match self.srtt {
            None => self.cfg.initial_rto,
            Some(srtt) => srtt + G.max(self.rttvar * 4),
        };
        let base = base.max(self.cfg.min_rto).min(self.cfg.max_rto);
        let backed = base.as_nanos().saturating_mul(1u64 << self.backoff.min(30));
        SimDuration::from_nanos(backed).min(self.cfg.max_rto)
    }

    pub fn back_off(&mut self) {
        self.backoff = self.backoff.saturating_add(1);
    }
    /// A new RTT sample after a timeout ends the backoff (§5.7 note; Linux
    /// resets `icsk_backoff` when an ACK acknowledges new data).
    pub fn reset_backoff(&mut self) {
        self.backoff = 0;
    }
    pub fn backoff(&self) -> u32 {
        self.backoff
    }
    pub fn srtt(&self) -> Option<SimDuration> {
        self.srtt
    }
    pub fn rttvar(&self) -> SimDuration {
        self.rttvar
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

    #[test]
    fn the_first_sample_sets_srtt_and_half_of_it_as_variance() {
        let mut e = RttEstimator::new(RttConfig::default());
        assert_eq!(e.rto(), ms(1000));
        e.update(ms(100));
        assert_eq!(e.srtt(), Some(ms(100)));
        assert_eq!(e.rttvar(), ms(50));
        assert_eq!(e.rto(), ms(300));
    }

    #[test]
    fn later_samples_are_smoothed_with_one_eighth_and_one_quarter() {
        let mut e = RttEstimator::new(RttConfig::default());
        e.update(ms(100));
        e.update(ms(200));
        // rttvar = 3/4*50 + 1/4*100 = 62.5; srtt = 7/8*100 + 1/8*200 = 112.5
        assert_eq!(e.rttvar(), SimDuration::from_micros(62_500));
        assert_eq!(e.srtt(), Some(SimDuration::from_micros(112_500)));
    }

    #[test]
    fn the_rto_is_clamped_below_and_doubles_on_backoff() {
        let mut e = RttEstimator::new(RttConfig::default());
        e.update(ms(10));
        assert_eq!(e.rto(), ms(200));
        e.back_off();
        assert_eq!(e.rto(), ms(400));
        for _ in 0..40 {
            e.back_off();
        }
        assert_eq!(e.rto(), ms(120_000));
    }
}
