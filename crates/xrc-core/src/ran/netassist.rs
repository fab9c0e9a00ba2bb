//! NATCP's NetAssist entity at the base station (Abbasloo, Xu, Chao,
//! "NATCP: Network-Assisted TCP" / "Toward Optimal Performance with
//! Network Assisted TCP at Mobile Edge", HotEdge 2019): every `period`
//! (50 ms in the paper) it sends each subscribed server, out of band, the
//! UE's bottleneck bandwidth and the minimum RTT, both computed here from
//! the RAN model:
//!
//! - BW: the capacity available to the UE averaged over the period (the
//!   XRC agent's per-TTI measure: new transport blocks plus a fair share of
//!   free PRBs) — "already available at BTS in a fine-grained timescale";
//! - minRTT = the network's minimum delay (the wired segment, both ways,
//!   known to the operator by probing) + the downlink's scheduling and
//!   transmission delay (one TTI of scheduling wait on average, the TTI
//!   itself, decoding, and one packet's transmission at BW) + the uplink's
//!   average delay measured over the period (the paper derives parts 2 and
//!   3 from averaged rates at the base station);
//! - the UE's flow count, which NATCP's β uses (the paper has the UE report
//!   it; the base station's PDCP sees the same flows).

use serde::{Deserialize, Serialize};

use crate::units::{check_range, MAX_ONE_WAY_DELAY_MS, MAX_SPAN_MS};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct NetAssistConfig {
    /// Report period, ms (paper: 50).
    pub period_ms: f64,
    /// One-way delay of the out-of-band path to the servers, ms; `None`: the
    /// Internet segment's delay.
    pub delay_ms: Option<f64>,
    /// Probability that a report is lost (to exercise the senders' fallback).
    pub loss: f64,
}

impl Default for NetAssistConfig {
    fn default() -> Self {
        NetAssistConfig {
            period_ms: 50.0,
            delay_ms: None,
            loss: 0.0,
        }
    }
}

impl NetAssistConfig {
    pub fn validate(&self) -> Result<(), String> {
        // A report per millisecond at most, at least one per run.
        check_range("period_ms", self.period_ms, 1.0, MAX_SPAN_MS)?;
        if let Some(d) = self.delay_ms {
            // As the Internet's one-way delay.
            check_range("delay_ms", d, 0.0, MAX_ONE_WAY_DELAY_MS)?;
        }
        if !(self.loss.is_finite() && (0.0..=1.0).contains(&self.loss)) {
            return Err(format!("loss must be in [0, 1], got {}", self.loss));
        }
        Ok(())
    }
}

/// Per-UE accumulators over one report period.
#[derive(Clone, Debug, Default)]
pub struct PeriodStats {
    pub capacity_bits: f64,
    pub ttis: u64,
    pub ul_delay_sum_s: f64,
    pub ul_samples: u64,
}

impl PeriodStats {
    /// Average capacity over the period, bit/s.
    pub fn bandwidth_bps(&self, tti_s: f64) -> f64 {
        if self.ttis == 0 {
            0.0
        } else {
            self.capacity_bits / (self.ttis as f64 * tti_s)
        }
    }
    pub fn mean_ul_delay_s(&self) -> Option<f64> {
        (self.ul_samples > 0).then(|| self.ul_delay_sum_s / self.ul_samples as f64)
    }
}
