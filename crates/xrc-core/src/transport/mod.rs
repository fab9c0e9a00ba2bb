//! Transport: the TCP sender and receiver and the congestion controllers.

pub mod cc;
pub mod rate;
pub mod receiver;
pub mod rtt;
pub mod scoreboard;
pub mod sender;

pub use receiver::{ReceiverConfig, TcpReceiver};
pub use rtt::RtoRule;
pub use sender::{LossDetection, Recovery, RetxKind, SenderOutput, SenderStats, TcpConfig, TcpSender, TimerClock};
