//! # xrc-emu
//!
//! A real-time link emulator: two network namespaces joined through xrc's
//! own link models, so that real Linux TCP (or any application) crosses
//! exactly the link a simulation models. It is the first piece of the
//! emulation mode (issue 8) and the reference harness of the Linux
//! fidelity work (issue 7, `xrc validate-linux`).
//!
//! Layers, each using only those above it:
//!
//! 1. [`sys`]: the operating system through `libc`: the monotonic clock,
//!    TUN devices, `ppoll`, CPU pinning, timer slack, `SCHED_FIFO`.
//! 2. [`wire`]: reading IPv4/TCP headers (never writing them);
//!    [`gso`]: which TCP segments of one release instant Linux GRO would
//!    merge, and the super-packet and `virtio_net_hdr` that carry them to
//!    a UE-side device opened with `IFF_VNET_HDR` (`Options::gso`).
//! 3. [`stage`], [`access`] and [`model`]: xrc-core's link models (`net::Link`,
//!    `ran::trace_link::TraceLink`, `net::Pipe`) and its base-station
//!    components (`ran::cell_access::CellAccess`,
//!    `ran::trace_access::TraceAccess`) behind a narrow interface
//!    (packets in, packets out at their model time, next wake-up), and the
//!    paths a resolved scenario describes.
//! 4. [`driver`]: the wall-clock loop that reads packets, runs the paths in
//!    model time and writes packets when due, measuring how late.
//!    [`feedback`]: the base station's XRC option written into real ACKs;
//!    [`signals`]: the other network-assisted schemes' signals (ABC's
//!    marks and PBE-CC's report on ACKs, NetAssist's reports as UDP).
//! 5. [`capture`] and [`analysis`]: what crossed, and a TCP sender's view
//!    of it computed as the simulator records its own.
//!
//! The emulator drives the core's components; it does not use the
//! simulator's `World`.
//!
//! ## Why TUN (and not veth + `AF_PACKET`)
//!
//! Each namespace gets one TUN device, created in the emulator's process
//! and moved into the namespace (`ip link set NAME netns NS`; the
//! descriptor stays valid). Both namespaces address the same two IPs
//! (`10.77.0.1` on the Internet side, `10.77.0.2` on the UE side) as a
//! point-to-point link, so packets cross unchanged. TUN was chosen because:
//! - a TUN device without offloads (no `IFF_VNET_HDR`) hands over packets
//!   already segmented by software GSO: one read is one wire-sized packet,
//!   as the link model must see it, while the sender's TCP still builds
//!   GSO bursts as with a real NIC. A veth with `AF_PACKET` sees 64 KB GSO
//!   and GRO aggregates unless offloads are turned off with `ethtool`,
//!   which is not installed by default;
//! - it is layer 3: no MAC addresses, ARP or neighbour entries to manage,
//!   and no interfaces in the root namespace that a crash could leave
//!   behind; a TUN device dies with its descriptor;
//! - the driver orphans packets on transmit (`tun_net_xmit`), so TCP Small
//!   Queues do not hold the sender back beyond what a fast NIC would, and
//!   the emulator's queue is the bottleneck queue;
//! - it is what Mahimahi uses, the emulator the reference numbers
//!   come from.
//!
//! The cost is one `read` and one `write` system call per packet (with
//! `Options::gso`, one `writev` per GSO super-packet toward the UE); the
//! measured per-packet cost and the forwarding ceiling are in
//! `docs/emulation.md`.

pub mod access;
pub mod analysis;
pub mod capture;
pub mod driver;
pub mod feedback;
pub mod gso;
pub mod model;
pub mod report;
pub mod signals;
pub mod siphash;
pub mod stage;
pub mod sys;
pub mod wire;

pub use driver::{Dir, Emulator, Options, RtYield, Side};
pub use model::{build_paths, TraceTexts};
