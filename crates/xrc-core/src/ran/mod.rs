//! The radio access network: the LTE downlink at the base station, the UE
//! side, the uplink grant model, the XRC agent and a trace-driven link.

pub mod amc;
