//! Packets and the wired plumbing they cross: fixed-delay pipes and
//! rate-limited links with drop-tail queues.

pub mod link;
pub mod packet;
pub mod pipe;
pub mod queue;

pub use link::{Enqueued, Link, LinkConfig};
pub use packet::{AbcMark, AckHeader, DataHeader, FlowId, Packet, PacketKind, SackBlock, UeId, XrcOption};
pub use pipe::Pipe;
pub use queue::{DropTail, QueueCounters, QueueLimit};
