//! PBE-CC's UE-side capacity estimate (Xie, Yi, Jamieson, "PBE-CC:
//! Congestion Control via Endpoint-Centric, Physical-Layer Bandwidth
//! Measurements", SIGCOMM 2020; slides at MSN 2020).
//!
//! The UE decodes the cell's control channel, so each TTI it sees every
//! UE's PRB allocation and its own MCS. It estimates the physical capacity
//! available to it as its own PRBs plus a fair share of the idle PRBs,
//! valued at its own bits per PRB, and translates it to a transport rate
//! with the transport-block error rate it observes (slides, "cross-layer
//! bit rate translation"):
//!
//! ```text
//! C_p = bits_per_prb(MCS) · ( P_own + P_idle / N_active )
//! C_p = C_t + C_t · TBLER + 0.068 · C_p     ⇒   C_t = 0.932 · C_p / (1 + TBLER)
//! ```
//!
//! (1 − (1 − p)^L is the block error rate for i.i.d. bit errors p over an
//! L-bit block; 6.8% is the header overhead the PBE-CC authors measured.)
//!
//! Choices: N_active counts the UEs (this one included) that received an
//! allocation within the estimation window; C_p and TBLER are averaged over
//! the last `window_ttis` TTIs; the per-flow report divides C_t by the
//! number of this UE's active flows.

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct PbeConfig {
    /// Averaging window, TTIs.
    pub window_ttis: u32,
    /// Header overhead in the translation (0.068 in the PBE-CC slides).
    pub overhead: f64,
}

impl Default for PbeConfig {
    fn default() -> Self {
        PbeConfig {
            window_ttis: 40,
            overhead: 0.068,
        }
    }
}

impl PbeConfig {
    pub fn validate(&self) -> Result<(), String> {
        if self.window_ttis == 0 || self.window_ttis > 100_000 {
            return Err(format!("window_ttis must be in 1..=100000, got {}", self.window_ttis));
        }
        if !(self.overhead.is_finite() && (0.0..1.0).contains(&self.overhead)) {
            return Err(format!("overhead must be in [0, 1), got {}", self.overhead));
        }
        Ok(())
    }
}

/// What a UE learns from one TTI's control channel.
#[derive(Clone, Copy, Debug)]
pub struct TtiView {
    pub cell_prbs: u16,
    pub own_prbs: u16,
    pub idle_prbs: u16,
    /// UEs that got PRBs this TTI (this one included if it did).
    pub scheduled_ues: u32,
    /// Bits a transport block over the whole band carries at this UE's
    /// rate index this slot (`None`: no rate, or no downlink this slot).
    pub own_full_bits: Option<f64>,
    /// This UE received a transport block this TTI, and whether it decoded.
    pub own_tb: Option<bool>,
}

/// One UE's estimator.
#[derive(Clone, Debug)]
pub struct PbeMonitor {
    overhead: f64,
    cp_ring: Vec<f64>,
    active_ring: Vec<u32>,
    next: usize,
    filled: usize,
    tb_ring: Vec<(u16, u16)>,
    tti_s: f64,
}

impl PbeMonitor {
    pub fn new(cfg: &PbeConfig, tti_s: f64) -> Self {
        let n = cfg.window_ttis as usize;
        PbeMonitor {
            overhead: cfg.overhead,
            cp_ring: vec![0.0; n],
            active_ring: vec![0; n],
            next: 0,
            filled: 0,
            tb_ring: vec![(0, 0); n],
            tti_s,
        }
    }

    pub fn observe(&mut self, v: &TtiView) {
        // Active users over the window: the largest number scheduled in one
        // TTI is a lower bound on the users sharing the cell.
        self.active_ring[self.next] = v.scheduled_ues;
        let n_active = (*self.active_ring.iter().max().unwrap_or(&0)).max(1) as f64;
        let cp = match v.own_full_bits {
            Some(full) if v.cell_prbs > 0 => {
                let per_prb = full / v.cell_prbs as f64;
                per_prb * (v.own_prbs as f64 + v.idle_prbs as f64 / n_active)
            }
            _ => 0.0,
        };
        self.cp_ring[self.next] = cp;
        self.tb_ring[self.next] = match v.own_tb {
            Some(true) => (1, 0),
            Some(false) => (1, 1),
            None => (0, 0),
        };
        self.next = (self.next + 1) % self.cp_ring.len();
        self.filled = (self.filled + 1).min(self.cp_ring.len());
    }

    /// Transport-layer capacity of the UE, bit/s.
    pub fn transport_rate_bps(&self) -> f64 {
        if self.filled == 0 {
            return 0.0;
        }
        let cp = self.cp_ring.iter().sum::<f64>() / (self.filled as f64 * self.tti_s);
        let (tbs, errs) = self
            .tb_ring
            .iter()
            .fold((0u32, 0u32), |(a, b), (x, y)| (a + *x as u32, b + *y as u32));
        let tbler = if tbs > 0 { errs as f64 / tbs as f64 } else { 0.0 };
        (1.0 - self.overhead) * cp / (1.0 + tbler)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lone_ue_sees_the_whole_band_minus_overhead() {
        let mut m = PbeMonitor::new(&PbeConfig::default(), 1e-3);
        for _ in 0..40 {
            m.observe(&TtiView {
                cell_prbs: 50,
                own_prbs: 50,
                idle_prbs: 0,
                scheduled_ues: 1,
                own_full_bits: Some(36_696.0),
                own_tb: Some(true),
            });
        }
        let r = m.transport_rate_bps();
        assert!((r - 0.932 * 36_696_000.0).abs() < 1.0, "{r}");
    }

    #[test]
    fn idle_prbs_are_shared_and_block_errors_discount_the_rate() {
        let mut m = PbeMonitor::new(&PbeConfig::default(), 1e-3);
        for i in 0..40 {
            m.observe(&TtiView {
                cell_prbs: 50,
                own_prbs: 20,
                idle_prbs: 10,
                scheduled_ues: 2,
                own_full_bits: Some(36_696.0),
                own_tb: Some(i % 10 != 0),
            });
        }
        // C_p = 36696/50 · (20 + 10/2) per TTI; TBLER = 0.1.
        let expect = 0.932 * 36_696.0 / 50.0 * 25.0 * 1000.0 / 1.1;
        assert!((m.transport_rate_bps() - expect).abs() < 1.0);
    }
}
