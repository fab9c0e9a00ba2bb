//! NewReno: RFC 5681 window growth and reduction, counting segments as
//! Linux's built-in Reno does (`net/ipv4/tcp_cong.c`: `tcp_reno_cong_avoid`,
//! `tcp_reno_ssthresh`, `tcp_reno_undo_cwnd`).
//!
//! The loss-recovery half of NewReno (RFC 6582: partial ACKs keep the
//! sender in fast recovery) is in the TCP framework, selected with
//! `recovery = "newreno"`; with SACK, recovery follows RFC 6675 and the
//! window during recovery follows PRR (RFC 6937), as in Linux.
//!
//! Deviations from Linux: none in this module.

use serde::{Deserialize, Serialize};

use super::helpers::{reno_cong_avoid, reno_ssthresh};
use super::{CongestionControl, ConnView, Window};
use crate::units::SimTime;

/// NewReno has no parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Config {}

impl super::CcConfig for Config {
    fn build(self, _stream: u64) -> Box<dyn super::CongestionControl> {
        Box::new(NewReno::new(self))
    }
}

#[derive(Debug, Default)]
pub struct NewReno;

impl NewReno {
    pub fn new(_cfg: Config) -> Self {
        NewReno
    }
}

impl CongestionControl for NewReno {
    /// A Linux kernel module: when paced (`tcp.pacing`), its skbs are
    /// `tcp_tso_autosize`'s size.
    fn tso_segs(&self, autosize: u32) -> u32 {
        autosize
    }

    fn name(&self) -> &'static str {
        "newreno"
    }
    fn ssthresh(&mut self, _now: SimTime, w: &Window, _c: &ConnView) -> u32 {
        reno_ssthresh(w)
    }
    fn cong_avoid(&mut self, _now: SimTime, w: &mut Window, c: &ConnView, acked: u32) {
        reno_cong_avoid(w, c, acked);
    }
}
