//! XRC (placeholder; being written).
use serde::{Deserialize, Serialize};
use super::helpers::{reno_cong_avoid, reno_ssthresh};
use super::{CongestionControl, ConnView, Window};
use crate::units::SimTime;

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {}
impl super::registry::CcConfig for Config {}
pub struct Xrc;
impl Xrc { pub fn new(_c: Config) -> Self { Xrc } }
impl CongestionControl for Xrc {
    fn name(&self) -> &'static str { "xrc" }
    fn ssthresh(&mut self, _now: SimTime, w: &Window, _c: &ConnView) -> u32 { reno_ssthresh(w) }
    fn cong_avoid(&mut self, _now: SimTime, w: &mut Window, c: &ConnView, acked: u32) { reno_cong_avoid(w, c, acked) }
}
