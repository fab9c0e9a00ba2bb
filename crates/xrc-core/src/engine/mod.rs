//! The time and event engine: an event queue ordered by (time, insertion
//! sequence), seeded random streams, and the clocks a loop driving
//! components waits on (simulated or monotonic, [`clock`]).
//!
//! Invariant: events run in non-decreasing time order, and events scheduled
//! for the same instant run in the order they were scheduled (first in,
//! first out). The queue is generic over the event type, so the layers above
//! define their own events and the engine knows nothing about them.

pub mod bench;
pub mod clock;
pub mod queue;
pub mod rng;

pub use clock::{Clock, LagReport, MonotonicClock, SimulatedClock, SyncStatus};
pub use queue::EventQueue;
pub use rng::{Rng, RngStreams};
