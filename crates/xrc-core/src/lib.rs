//! # xrc-core
//!
//! A deterministic discrete-event simulator of the cellular last hop, TCP and
//! XRC (explicit rate control, Kheirkhah et al., IEEE ICC 2022).
//!
//! The folders are the layers, each using only the ones above it in this list:
//!
//! 1. [`units`] and [`engine`]: integer nanosecond time, the (time, sequence)
//!    event queue, seeded named random streams.
//! 2. [`net`]: packets, fixed-delay pipes, rate-limited drop-tail links.
//! 3. [`ran`]: the LTE downlink (channel, AMC tables, MAC scheduler, HARQ,
//!    RLC, PDCP), the uplink grant model, the XRC agent, and the trace-driven
//!    link.
//! 4. [`transport`]: TCP sender and receiver, the congestion-control trait and
//!    one module per algorithm.
//! 5. [`traffic`]: applications (bulk, finite transfers).
//! 6. [`metrics`]: time series and counters handed out as columns.
//! 7. [`scenario`]: the resolved scenario configuration and the world that
//!    wires the layers together and runs the events.
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
