//! What the sender hands back to its caller: the packets to send and what
//! happened on the way (RTT samples, retransmissions), and the counters
//! kept over the connection's life.

use crate::net::Packet;
use crate::units::SimDuration;

/// Why a segment was sent again.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum RetxKind {
    /// Loss recovery driven by (S)ACKs.
    Fast,
    /// After a retransmission timeout.
    Timeout,
}

/// What a call into the sender produced; the caller drains it.
#[derive(Debug, Default)]
pub struct SenderOutput {
    pub packets: Vec<Packet>,
    /// RTT samples taken (one per ACK that produced one).
    pub rtt_samples: Vec<SimDuration>,
    pub retransmits: Vec<(u64, RetxKind)>,
}

impl SenderOutput {
    pub fn clear(&mut self) {
        self.packets.clear();
        self.rtt_samples.clear();
        self.retransmits.clear();
    }
}

/// Counters over the connection's life.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct SenderStats {
    pub segments_sent: u64,
    pub retransmits_fast: u64,
    pub retransmits_timeout: u64,
    pub timeouts: u64,
    pub recoveries: u64,
}
