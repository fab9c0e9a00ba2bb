//! Packets and the wired plumbing they cross (fixed-delay pipes,
//! rate-limited links with drop-tail queues, the Internet path), and the
//! interface every network component offers its driver: packets in,
//! packets out, timers ([`component`]), with what it observes pushed to an
//! [`observe::Observer`]; and the headers a packet stands for, as bytes
//! ([`wire`]).

pub mod access;
pub mod component;
pub mod internet;
pub mod link;
pub mod observe;
pub mod packet;
pub mod pipe;
pub mod queue;
pub mod wire;

pub use access::{Access, NetAssistReport, NoTimer, WiredAccess};
pub use component::{Component, Cx, Dir, Direct, Effect, Io, Released, Standalone, Timers, WakeSink};
pub use internet::{Exit, InternetPath, InternetTimer};
pub use link::{Enqueued, Link, LinkConfig};
pub use observe::{DropSite, NullObserver, Observer, UeColumns, UeLinkCounters, UeSample};
pub use packet::{AbcMark, AckHeader, DataHeader, FlowId, Packet, PacketKind, SackBlock, SackBlocks, UeId, XrcOption};
pub use pipe::Pipe;
pub use queue::{DropTail, QueueCounters, QueueLimit};
