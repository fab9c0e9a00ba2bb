//! ABC's marking at the base station (Goyal, Agarwal, Netravali, Alizadeh,
//! Balakrishnan, "ABC: A Simple Explicit Congestion Controller for Wireless
//! Networks", NSDI 2020, §3.1 and §4).
//!
//! Each ABC-capable packet leaving a UE's queue is marked *accelerate* or
//! *brake* so that the fraction marked accelerate is
//!
//! ```text
//! f(t)  = min( tr(t) / (2 · cr(t)), 1 )                  (ABC eq. 2)
//! tr(t) = η · μ(t) − (μ(t) / δ) · (x(t) − d_t)⁺          (ABC eq. 1)
//! ```
//!
//! where μ is the link rate the scheduler knows for the UE, cr the current
//! dequeue rate, x the packet's queuing delay, d_t a delay threshold, δ a
//! time constant and η a target utilization. Marking is deterministic
//! through a token bucket (ABC §3.1, "to reduce variance"): each packet adds
//! f tokens; a packet that finds at least one token is marked accelerate and
//! spends it.
//!
//! Choices here: μ is the XRC agent's estimate of the UE's capacity (new
//! transport blocks plus a fair share of free PRBs, over the agent's
//! window) — the rate the scheduler would give the UE; cr is the rate of new
//! transport blocks actually sent to the UE over the same window; the token
//! bucket holds at most `token_limit` tokens.

use serde::{Deserialize, Serialize};

use crate::units::{check_range, SimDuration, MAX_SPAN_MS};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct AbcConfig {
    /// Target utilization η.
    pub eta: f64,
    /// Time constant δ, ms.
    pub delta_ms: f64,
    /// Delay threshold d_t, ms.
    pub delay_threshold_ms: f64,
    /// Token bucket size.
    pub token_limit: f64,
}

impl Default for AbcConfig {
    fn default() -> Self {
        AbcConfig {
            eta: 0.98,
            delta_ms: 133.0,
            delay_threshold_ms: 20.0,
            token_limit: 10.0,
        }
    }
}

impl AbcConfig {
    pub fn validate(&self) -> Result<(), String> {
        if !(self.eta.is_finite() && self.eta > 0.0 && self.eta <= 1.5) {
            return Err(format!("eta must be in (0, 1.5], got {}", self.eta));
        }
        // δ divides the queuing delay: from a millisecond to the longest run.
        check_range("delta_ms", self.delta_ms, 1.0, MAX_SPAN_MS)?;
        // A bucket of at least a thousandth of a token, at most a million.
        check_range("token_limit", self.token_limit, 1e-3, 1e6)?;
        check_range("delay_threshold_ms", self.delay_threshold_ms, 0.0, MAX_SPAN_MS)?;
        Ok(())
    }
}

/// One UE's (or one link's) marker state.
#[derive(Clone, Debug)]
pub struct AbcMarker {
    eta: f64,
    delta_s: f64,
    dt_s: f64,
    limit: f64,
    tokens: f64,
}

impl AbcMarker {
    pub fn new(cfg: &AbcConfig) -> Self {
        AbcMarker {
            eta: cfg.eta,
            delta_s: cfg.delta_ms / 1e3,
            dt_s: cfg.delay_threshold_ms / 1e3,
            limit: cfg.token_limit,
            tokens: 0.0,
        }
    }

    /// ABC eq. (1) and (2): the fraction of packets to accelerate.
    pub fn fraction(&self, link_bps: f64, dequeue_bps: f64, queuing: SimDuration) -> f64 {
        let x = queuing.as_secs_f64();
        let tr = self.eta * link_bps - (link_bps / self.delta_s) * (x - self.dt_s).max(0.0);
        if dequeue_bps <= 0.0 {
            return if tr > 0.0 { 1.0 } else { 0.0 };
        }
        (tr / (2.0 * dequeue_bps)).clamp(0.0, 1.0)
    }

    /// Marks one departing packet: `true` for accelerate.
    pub fn mark(&mut self, link_bps: f64, dequeue_bps: f64, queuing: SimDuration) -> bool {
        let f = self.fraction(link_bps, dequeue_bps, queuing);
        self.tokens = (self.tokens + f).min(self.limit);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_queue_at_full_rate_accelerates_about_half_the_packets() {
        // tr = η μ, cr = μ: f = η / 2.
        let m = AbcMarker::new(&AbcConfig::default());
        let f = m.fraction(10e6, 10e6, SimDuration::ZERO);
        assert!((f - 0.49).abs() < 1e-12);
    }

    #[test]
    fn queuing_beyond_the_threshold_brakes() {
        let m = AbcMarker::new(&AbcConfig::default());
        // x − d_t = 133 ms = δ: tr = (η − 1) μ < 0.
        assert_eq!(m.fraction(10e6, 10e6, SimDuration::from_millis(153)), 0.0);
    }

    #[test]
    fn the_token_bucket_marks_the_target_fraction_exactly() {
        let mut m = AbcMarker::new(&AbcConfig::default());
        // cr = η μ with an empty queue: f = 1/2; every second packet accelerates.
        let marks: Vec<bool> = (0..100).map(|_| m.mark(10e6, 9.8e6, SimDuration::ZERO)).collect();
        assert_eq!(marks.iter().filter(|&&a| a).count(), 50);
        assert!(marks.chunks(2).all(|c| c == [false, true]));
    }
}
