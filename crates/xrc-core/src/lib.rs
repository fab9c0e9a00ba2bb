//! # xrc-core
//!
//! A deterministic discrete-event simulator of the cellular last hop, TCP and
//! XRC (explicit rate control, Kheirkhah et al., IEEE ICC 2022).
//!
//! The folders are the layers, each using only the ones above it in this list:
//!
//! 1. [`units`] and [`engine`]: integer nanosecond time, the (time, sequence)
//!    event queue, seeded named random streams, and the clocks a loop
//!    driving components waits on (simulated or monotonic).
//! 2. [`net`]: packets, fixed-delay pipes, rate-limited drop-tail links, the
//!    Internet path; the component interface every network element offers
//!    its driver (packets in, ordered effects out, its own timers), what
//!    components report to an observer, and the access-network ports.
//! 3. [`ran`]: the LTE downlink (channel, AMC tables, MAC scheduler, HARQ,
//!    RLC, PDCP), the uplink grant model, the XRC agent, and the
//!    trace-driven link; the cellular and trace access networks as
//!    components.
//! 4. [`transport`]: TCP sender and receiver, the congestion-control trait and
//!    one module per algorithm.
//! 5. [`traffic`]: applications (bulk, finite transfers).
//! 6. [`metrics`]: time series and counters handed out as columns, and the
//!    run's recorder that observes the components and hosts.
//! 7. [`scenario`]: the resolved scenario configuration, the hosts, and the
//!    world: a router that wires hosts, components and recorder and runs
//!    the events.
//!
//! The same component runs in the discrete-event world or, through
//! [`net::component::Standalone`], under a wall clock
//! (`docs/architecture.md`).
//!
//! Time is never read from a global clock: every hook receives `now`.
//! Randomness comes only from [`engine::RngStreams`] derived from the
//! scenario's required master seed.

pub mod engine;
pub mod metrics;
pub mod net;
pub mod ran;
pub mod scenario;
pub mod traffic;
pub mod transport;
pub mod units;
