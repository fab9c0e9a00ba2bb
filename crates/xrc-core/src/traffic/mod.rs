//! Traffic: what the application at a sender writes.
//!
//! - **Bulk**: writes as long as its flow runs.
//! - **Transfer**: writes `size_bytes` and completes (short flows).
//! - **Video**: the XRC paper's video-streaming flow (§IV-B): a cycle of
//!   `period_s` (10 s) whose first `on_s` (2 s) write a chunk at a constant
//!   `rate_mbps` (17 Mbit/s, "a high-quality video chunk"); the next chunk
//!   starts at the next cycle boundary, but only once the whole previous
//!   chunk has been delivered ("it sends only if all the sent packets during
//!   the 2-secs ON period are delivered successfully"), so a late chunk
//!   delays the next one. Each chunk's delivery time is recorded.
//!
//! Sources drive the TCP sender through `app_write` and `app_close` only.

use serde::{Deserialize, Serialize};

use crate::units::{check_range, check_range_u64, SimDuration, SimTime, MAX_RATE_MBPS, MAX_SPAN_S, MIN_RATE_MBPS};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Traffic {
    /// Sends as long as the flow runs.
    #[default]
    Bulk,
    /// Sends `size_bytes` and completes.
    Transfer { size_bytes: u64 },
    /// ON/OFF video chunks.
    Video {
        #[serde(default = "default_period")]
        period_s: f64,
        #[serde(default = "default_on")]
        on_s: f64,
        #[serde(default = "default_rate")]
        rate_mbps: f64,
    },
}

fn default_period() -> f64 {
    10.0
}
fn default_on() -> f64 {
    2.0
}
fn default_rate() -> f64 {
    17.0
}

/// The largest transfer: 2^53 bytes, so byte counts stay exact in the
/// f64 columns of the outputs (and 8 PB is more than a 10^6 s run at 1
/// Tbit/s moves).
pub const MAX_TRANSFER_BYTES: u64 = 1 << 53;

impl Traffic {
    pub fn validate(&self) -> Result<(), String> {
        match self {
            Traffic::Bulk => Ok(()),
            Traffic::Transfer { size_bytes } => check_range_u64("size_bytes", *size_bytes, 1, MAX_TRANSFER_BYTES),
            Traffic::Video {
                period_s,
                on_s,
                rate_mbps,
            } => {
                // Chunks are written one millisecond at a time: a period of
                // at least that, at most the longest run.
                check_range("period_s", *period_s, 1e-3, MAX_SPAN_S)?;
                check_range("on_s", *on_s, 1e-3, MAX_SPAN_S)?;
                check_range("rate_mbps", *rate_mbps, MIN_RATE_MBPS, MAX_RATE_MBPS)?;
                if on_s > period_s {
                    return Err(format!("on_s ({on_s}) exceeds period_s ({period_s})"));
                }
                Ok(())
            }
        }
    }
}

/// Granularity of the video source's writes.
pub const VIDEO_TICK: SimDuration = SimDuration::from_millis(1);

/// One video chunk's life.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Chunk {
    pub index: u32,
    pub start: SimTime,
    /// Bytes of the flow written when the chunk is complete.
    pub end_byte: u64,
    /// When the application finished writing it.
    pub written: Option<SimTime>,
    /// When its last byte reached the receiving application.
    pub delivered: Option<SimTime>,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Phase {
    Writing,
    /// Written; waiting for the receiver to get it all.
    Draining,
    /// Delivered; waiting for the next cycle boundary.
    Idle,
}

/// The video source's state machine.
#[derive(Clone, Debug)]
pub struct VideoSource {
    period: SimDuration,
    chunk_bytes: u64,
    per_tick: u64,
    written: u64,
    phase: Phase,
    chunks: Vec<Chunk>,
}

impl VideoSource {
    pub fn new(period_s: f64, on_s: f64, rate_mbps: f64) -> Self {
        let chunk_bytes = (rate_mbps * 1e6 / 8.0 * on_s).round().max(1.0) as u64;
        let ticks = (on_s * 1e3).round().max(1.0) as u64;
        VideoSource {
            period: SimDuration::try_from_secs_f64(period_s).expect("validated"),
            chunk_bytes,
            per_tick: chunk_bytes.div_ceil(ticks),
            written: 0,
            phase: Phase::Idle,
            chunks: Vec::new(),
        }
    }

    /// Starts a chunk at `now`.
    pub fn start_chunk(&mut self, now: SimTime) {
        let end_byte = self.written + self.chunk_bytes;
        self.chunks.push(Chunk {
            index: self.chunks.len() as u32,
            start: now,
            end_byte,
            written: None,
            delivered: None,
        });
        self.phase = Phase::Writing;
    }

    /// A write tick: bytes to write now, and whether to tick again.
    pub fn tick(&mut self, now: SimTime) -> (u64, bool) {
        if self.phase != Phase::Writing {
            return (0, false);
        }
        let c = self.chunks.last_mut().expect("a chunk is being written");
        let n = self.per_tick.min(c.end_byte - self.written);
        self.written += n;
        if self.written >= c.end_byte {
            c.written = Some(now);
            self.phase = Phase::Draining;
            return (n, false);
        }
        (n, true)
    }

    /// The receiver has now delivered `delivered` bytes. Returns when the
    /// next chunk should start if this completed the current one.
    pub fn on_delivered(&mut self, now: SimTime, delivered: u64) -> Option<SimTime> {
        let c = self.chunks.last_mut()?;
        if c.delivered.is_some() || delivered < c.end_byte {
            return None;
        }
        c.delivered = Some(now);
        if self.phase == Phase::Draining {
            self.phase = Phase::Idle;
        }
        Some((c.start + self.period).max(now))
    }

    /// The source is between chunks and may start one.
    pub fn ready(&self) -> bool {
        self.phase == Phase::Idle
    }

    pub fn chunks(&self) -> &[Chunk] {
        &self.chunks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: f64) -> SimTime {
        SimTime::ZERO + SimDuration::try_from_secs_f64(v).unwrap()
    }

    #[test]
    fn a_chunk_is_two_seconds_of_17_mbit_written_one_millisecond_at_a_time() {
        let mut v = VideoSource::new(10.0, 2.0, 17.0);
        v.start_chunk(s(0.0));
        let mut total = 0;
        let mut ticks = 0;
        loop {
            let (n, more) = v.tick(s(ticks as f64 * 1e-3));
            total += n;
            ticks += 1;
            if !more {
                break;
            }
        }
        assert_eq!(total, 4_250_000);
        assert_eq!(ticks, 2000);
    }

    #[test]
    fn the_next_chunk_waits_for_the_cycle_boundary_or_for_late_delivery() {
        let mut v = VideoSource::new(10.0, 2.0, 17.0);
        v.start_chunk(s(0.0));
        while v.tick(s(1.0)).1 {}
        assert_eq!(v.on_delivered(s(3.0), 4_000_000), None);
        assert_eq!(v.on_delivered(s(3.5), 4_250_000), Some(s(10.0)));
        assert!(v.ready());
        v.start_chunk(s(10.0));
        while v.tick(s(11.0)).1 {}
        // Delivered late, after the boundary: the next chunk starts at once.
        assert_eq!(v.on_delivered(s(21.0), 8_500_000), Some(s(21.0)));
        let c = v.chunks()[1];
        assert_eq!(
            c.delivered.unwrap().saturating_since(c.start),
            SimDuration::from_secs(11)
        );
    }
}
