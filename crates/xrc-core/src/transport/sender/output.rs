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
    /// A tail loss probe resending the last segment.
    Probe,
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

/// Counters over the connection's life (with Linux's `nstat` names).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct SenderStats {
    pub segments_sent: u64,
    pub retransmits_fast: u64,
    pub retransmits_timeout: u64,
    /// Tail loss probes that resent the last segment.
    pub retransmits_probe: u64,
    /// Retransmission timeouts (`TCPTimeouts`).
    pub timeouts: u64,
    /// Fast recoveries entered (`TCPSackRecovery`, `TCPRenoRecovery`).
    pub recoveries: u64,
    /// Timeouts undone, by timestamps, D-SACKs or F-RTO (`TCPLossUndo`).
    pub loss_undos: u64,
    /// Timeouts F-RTO found spurious (`TCPSpuriousRTOs`; also counted in
    /// `loss_undos`).
    pub spurious_rtos: u64,
    /// Fast recoveries undone at their end (`TCPFullUndo`).
    pub full_undos: u64,
    /// Fast recoveries undone on a partial ACK (`TCPPartialUndo`).
    pub partial_undos: u64,
    /// Reductions undone because D-SACKs reported every retransmission
    /// (`TCPDSACKUndo`).
    pub dsack_undos: u64,
    /// D-SACK blocks received and accepted (`TCPDSACKRecv`).
    pub dsacks: u64,
    /// Tail loss probes sent, new data or a retransmission
    /// (`TCPLossProbes`).
    pub probes: u64,
    /// Probes that repaired a loss, followed by a window reduction
    /// (`TCPLossProbeRecovery`).
    pub probe_recoveries: u64,
}

impl SenderStats {
    /// Segments sent again, for any reason (`TCPRetransSegs`).
    pub fn retransmits(&self) -> u64 {
        self.retransmits_fast + self.retransmits_timeout + self.retransmits_probe
    }

    /// Every undo of a window reduction, of any kind.
    pub fn undos(&self) -> u64 {
        self.loss_undos + self.full_undos + self.partial_undos + self.dsack_undos
    }
}
