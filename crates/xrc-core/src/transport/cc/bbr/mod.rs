//! The BBR family: one file per version, and what the versions share.
//!
//! - [`v1`]: BBR version 1 as Linux runs it (`net/ipv4/tcp_bbr.c`),
//!   `cc = "bbr"`.
//! - [`v3`]: BBR version 3 as Google's Linux module runs it (the `google/bbr`
//!   v3 branch), `cc = "bbr3"`.
//! - `common`: the parts both kernels implement the same way: the
//!   fixed-point scales (`BW_SCALE`, `BBR_SCALE`), Linux's windowed max
//!   filter (`lib/win_minmax.c`), the rate sample in Linux's types, the
//!   jiffies and µs clocks, the operating modes, round counting, the
//!   min-RTT filter, PROBE_RTT's hold, the full-pipe test's reference and
//!   count, the gains of STARTUP, DRAIN and PROBE_RTT, the cwnd ramp
//!   toward its target, pacing-rate and BDP arithmetic
//!   (`bbr_rate_bytes_per_sec`, `bbr_bdp`, the TSO byte cap), the
//!   departure-time estimate of packets still in the network
//!   (`bbr_packets_in_net_at_edt`), the ACK-aggregation estimate
//!   (`bbr_update_ack_aggregation`, `extra_acked`), BBR's own
//!   application-limited mark, and the generator that replaces the
//!   kernel's random draws (seeded from the flow's named stream of the
//!   master seed, `flow/<k>/cc`).
//!
//! What stays apart because the kernels differ: v1's windowed max filter
//! over 10 rounds against v3's two PROBE_BW cycles (`bw_hi`), v1's
//! long-term policer model against v3's `bw_lo` / `inflight_lo` /
//! `inflight_hi` bounds, the PROBE_BW cycles, the TSO goals and
//! quantization budgets, packet conservation (v1 only), and v3's STARTUP
//! exit on loss.
//!
//! Each version's module documentation cites its sources and lists its
//! deviations from its kernel; the shared emulations (clocks, EDT,
//! `delivered_mstamp`, `tp->app_limited`) are documented once, in
//! [`v1`], and v3 refers to them.

mod common;
pub mod v1;
pub mod v3;

pub use common::{WindowedMax, BBR_SCALE, BBR_UNIT, BW_SCALE, BW_UNIT};
