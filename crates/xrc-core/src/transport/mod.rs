//! Transport: the TCP sender and receiver and the congestion controllers.

pub mod cc;
pub mod rate;
pub mod receiver;
pub mod rtt;
pub mod scoreboard;
pub mod sender;

pub use receiver::{ReceiverConfig, TcpReceiver};

/// The largest window TCP can use: 2^30 bytes, 65535 shifted by the
/// largest window scale, 14 (RFC 7323 §2.2). No connection has more in
/// flight, so no window parameter may ask for more.
pub const MAX_WINDOW_BYTES: u64 = 1 << 30;
/// Window parameters given in segments (floors, initial windows, probes)
/// may not exceed 2^20 segments: the largest window holds 741,455 segments
/// of 1448 bytes, and a floor or probe of a million segments is no longer
/// congestion control.
pub const MAX_WINDOW_SEGMENTS: u32 = 1 << 20;

/// Checks a window parameter given in segments, naming it.
pub fn check_window_segments(name: &str, v: u32) -> Result<(), String> {
    crate::units::check_range_u64(name, v as u64, 1, MAX_WINDOW_SEGMENTS as u64)
}
pub use rtt::RtoRule;
pub use sender::{LossDetection, Recovery, RetxKind, SenderOutput, SenderStats, TcpConfig, TcpSender, TimerClock};
