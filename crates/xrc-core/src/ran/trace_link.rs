//! A trace-driven downlink in Mahimahi's format (Netravali et al.,
//! "Mahimahi: Accurate Record-and-Replay for HTTP", USENIX ATC 2015;
//! `src/packet/link_queue.cc`): each line of the trace is a time in
//! milliseconds at which the link may deliver one 1500-byte packet; the
//! trace repeats with a period equal to its last timestamp.
//!
//! As in Mahimahi, an opportunity nobody uses is lost, and a packet larger
//! than what is left of the current opportunity keeps the rest for the next
//! ones (Mahimahi's `packet_in_transit_bytes_left`). Packets wait in a
//! drop-tail queue whose head-of-line delay the XRC agent reports; the
//! agent's rate is the trace's delivery capacity over the last
//! `window_ms` milliseconds.

use std::collections::VecDeque;

use crate::net::queue::QueueCounters;
use crate::net::Packet;
use crate::units::{SimDuration, SimTime, MAX_SPAN_MS};

/// Bytes one delivery opportunity carries.
pub const OPPORTUNITY_BYTES: u32 = 1500;

/// A parsed trace: opportunity times within one period.
#[derive(Clone, Debug, PartialEq)]
pub struct Trace {
    /// Opportunity offsets in ms, non-decreasing.
    pub ms: Vec<u64>,
    /// Repetition period, ms (the last timestamp; at least 1).
    pub period_ms: u64,
}

impl Trace {
    /// Parses Mahimahi's format. Errors name the line and the value. Lines
    /// may end in LF, CRLF or a lone CR, and a UTF-8 byte order mark is
    /// skipped. A time may not exceed the longest run ([`MAX_SPAN_MS`]):
    /// the period in nanoseconds must fit a u64 with room for cycles.
    pub fn parse(text: &str) -> Result<Trace, String> {
        let mut ms = Vec::new();
        let mut last = 0u64;
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let text = text.replace("\r\n", "\n").replace('\r', "\n");
        for (i, line) in text.lines().enumerate() {
            let s = line.trim();
            if s.is_empty() {
                continue;
            }
            let v: u64 = s.parse().map_err(|e: std::num::ParseIntError| {
                let why = match e.kind() {
                    std::num::IntErrorKind::PosOverflow => "is too large a number of milliseconds",
                    _ => "is not a non-negative integer number of milliseconds",
                };
                format!("line {}: {:?} {why}", i + 1, s)
            })?;
            if v > MAX_SPAN_MS as u64 {
                return Err(format!(
                    "line {}: time {v} ms is beyond the longest run ({} ms)",
                    i + 1,
                    MAX_SPAN_MS as u64
                ));
            }
            if v < last {
                return Err(format!(
                    "line {}: time {} ms goes back from {} ms (timestamps must not decrease)",
                    i + 1,
                    v,
                    last
                ));
            }
            last = v;
            ms.push(v);
        }
        if ms.is_empty() {
            return Err("the trace has no delivery opportunities".into());
        }
        let period_ms = last.max(1);
        Ok(Trace { ms, period_ms })
    }

    /// Mean capacity over one period, bit/s.
    pub fn mean_rate_bps(&self) -> f64 {
        self.ms.len() as f64 * OPPORTUNITY_BYTES as f64 * 8.0 / (self.period_ms as f64 / 1000.0)
    }

    /// The first opportunity at or after `t` and its global index (cycles
    /// counted: opportunity `k` is line `k mod n` of cycle `k div n`, at
    /// `cycle·period + ms[line]`, so a line equal to the period falls on the
    /// next cycle's start, as in Mahimahi).
    fn next_at_or_after(&self, t: SimTime) -> (SimTime, u64) {
        let p_ns = self.period_ms * 1_000_000;
        let n = self.ms.len() as u64;
        let t_ns = t.as_nanos();
        let c0 = (t_ns / p_ns).saturating_sub(1);
        for c in c0..c0 + 3 {
            let base = c * p_ns;
            let need_ms = if t_ns > base {
                (t_ns - base).div_ceil(1_000_000)
            } else {
                0
            };
            let i = self.ms.partition_point(|&m| m < need_ms);
            if (i as u64) < n {
                return (SimTime::from_nanos(base + self.ms[i] * 1_000_000), c * n + i as u64);
            }
        }
        unreachable!("the last line equals the period, so cycle c0 + 2 always has one")
    }

    /// Opportunity with global index `k` (cycles counted), absolute time.
    fn at_index(&self, k: u64) -> SimTime {
        let n = self.ms.len() as u64;
        let cycle = k / n;
        let i = (k % n) as usize;
        SimTime::from_nanos((cycle * self.period_ms + self.ms[i]) * 1_000_000)
    }
}

/// The trace link's queue and server.
pub struct TraceLink {
    trace: Trace,
    limit_packets: Option<u32>,
    limit_bytes: Option<u64>,
    queue: VecDeque<(SimTime, Packet)>,
    bytes: u64,
    /// Bytes of the head packet already sent in earlier opportunities.
    head_sent: u32,
    /// Index of the next opportunity the server will look at.
    next_k: Option<u64>,
    window: SimDuration,
    arrived: u64,
    departed: u64,
    dropped: u64,
    /// Time in the queue of each packet served since the last
    /// [`TraceLink::drain_sojourns`], in the order they left.
    sojourns: Vec<SimDuration>,
}

impl TraceLink {
    pub fn new(trace: Trace, limit_packets: Option<u32>, limit_bytes: Option<u64>, window: SimDuration) -> Self {
        TraceLink {
            trace,
            limit_packets,
            limit_bytes,
            queue: VecDeque::new(),
            bytes: 0,
            head_sent: 0,
            next_k: None,
            window,
            arrived: 0,
            departed: 0,
            dropped: 0,
            sojourns: Vec::new(),
        }
    }

    /// The queuing delays of the packets served since the last call, in the
    /// order `on_opportunity` handed the packets out.
    pub fn drain_sojourns(&mut self) -> std::vec::Drain<'_, SimDuration> {
        self.sojourns.drain(..)
    }

    /// A packet arrives. Returns the time of the next opportunity when the
    /// server was idle (schedule it), or the packet back if dropped.
    pub fn enqueue(&mut self, now: SimTime, pkt: Packet) -> Result<Option<SimTime>, Packet> {
        self.arrived += 1;
        let full_p = self.limit_packets.is_some_and(|n| self.queue.len() as u64 >= n as u64);
        let full_b = self.limit_bytes.is_some_and(|b| self.bytes + pkt.size as u64 > b);
        if full_p || full_b {
            self.dropped += 1;
            return Err(pkt);
        }
        self.bytes += pkt.size as u64;
        self.queue.push_back((now, pkt));
        if self.next_k.is_some() {
            return Ok(None);
        }
        let (t, k) = self.trace.next_at_or_after(now);
        self.next_k = Some(k);
        Ok(Some(t))
    }

    /// Serves every opportunity due by `now`; delivered packets are pushed
    /// to `out`. Returns the next opportunity to schedule while packets wait.
    pub fn on_opportunity(&mut self, now: SimTime, out: &mut Vec<Packet>) -> Option<SimTime> {
        while let Some(k) = self.next_k {
            let t = self.trace.at_index(k);
            if t > now {
                return Some(t);
            }
            let mut budget = OPPORTUNITY_BYTES;
            while let Some((_, head)) = self.queue.front() {
                let left = head.size - self.head_sent;
                if left <= budget {
                    budget -= left;
                    let (arrival, p) = self.queue.pop_front().expect("front exists");
                    self.sojourns.push(now.saturating_since(arrival));
                    self.bytes -= p.size as u64;
                    self.head_sent = 0;
                    self.departed += 1;
                    out.push(p);
                } else {
                    self.head_sent += budget;
                    break;
                }
            }
            if self.queue.is_empty() {
                self.next_k = None;
                return None;
            }
            self.next_k = Some(k + 1);
        }
        None
    }

    /// Head-of-line delay at `now`.
    pub fn hol_delay(&self, now: SimTime) -> SimDuration {
        self.queue
            .front()
            .map_or(SimDuration::ZERO, |(t, _)| now.saturating_since(*t))
    }
    pub fn queued_packets(&self) -> usize {
        self.queue.len()
    }
    pub fn queued_bytes(&self) -> u64 {
        self.bytes
    }

    /// Delivery capacity of the trace over (now − window, now], bit/s: what
    /// the agent reports.
    pub fn recent_capacity_bps(&self, now: SimTime) -> u64 {
        self.capacity_between(
            now.saturating_since(SimTime::ZERO).saturating_sub(self.window),
            now.since_start(),
        )
    }

    /// Capacity of the trace over [from, to), bit/s.
    pub fn capacity_between(&self, from: SimDuration, to: SimDuration) -> u64 {
        if to <= from {
            return 0;
        }
        let n = self.count_between(SimTime::ZERO + from, SimTime::ZERO + to);
        let bits = n as u128 * OPPORTUNITY_BYTES as u128 * 8;
        (bits * 1_000_000_000 / (to - from).as_nanos() as u128) as u64
    }

    /// Opportunities with time in (from, to].
    fn count_between(&self, from: SimTime, to: SimTime) -> u64 {
        let (_, a) = self.trace.next_at_or_after(from + SimDuration::from_nanos(1));
        let (_, b) = self.trace.next_at_or_after(to + SimDuration::from_nanos(1));
        b.saturating_sub(a)
    }

    pub fn counters(&self) -> QueueCounters {
        QueueCounters {
            arrived: self.arrived,
            departed: self.departed,
            dropped: self.dropped,
            held: self.queue.len() as u64,
        }
    }
    pub fn trace(&self) -> &Trace {
        &self.trace
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::FlowId;

    fn pkt() -> Packet {
        Packet::data(FlowId(0), 0, 1448, SimTime::ZERO, false)
    }
    fn ms(v: u64) -> SimTime {
        SimTime::from_nanos(v * 1_000_000)
    }

    #[test]
    fn garbage_and_decreasing_timestamps_are_rejected_with_the_line() {
        assert!(Trace::parse("1\n2\nabc\n").unwrap_err().contains("line 3"));
        assert!(Trace::parse("5\n3\n").unwrap_err().contains("line 2"));
        assert!(Trace::parse("\n\n").is_err());
        assert!(Trace::parse("-4\n").is_err());
    }

    #[test]
    fn cr_only_crlf_and_a_byte_order_mark_parse_like_plain_lines() {
        let plain = Trace::parse("1\n2\n3\n").unwrap();
        assert_eq!(Trace::parse("1\r2\r3\r").unwrap(), plain);
        assert_eq!(Trace::parse("1\r\n2\r\n3\r\n").unwrap(), plain);
        assert_eq!(Trace::parse("\u{feff}1\n2\n3").unwrap(), plain);
        assert!(Trace::parse("1\r2\rx\r").unwrap_err().contains("line 3"));
    }

    #[test]
    fn a_timestamp_beyond_the_longest_run_is_refused_naming_the_line() {
        // 2^58 + 1 ms: the period in nanoseconds would wrap a u64.
        let e = Trace::parse("0\n288230376151711745\n").unwrap_err();
        assert!(e.contains("line 2") && e.contains("288230376151711745"), "{e}");
        assert!(Trace::parse("0\n1000000000\n").is_ok());
        let e = Trace::parse("99999999999999999999999\n").unwrap_err();
        assert!(e.contains("line 1"), "{e}");
    }

    #[test]
    fn the_trace_repeats_with_its_last_timestamp_as_period() {
        let t = Trace::parse("0\n0\n5\n10\n").unwrap();
        assert_eq!(t.period_ms, 10);
        let (a, _) = t.next_at_or_after(ms(11));
        assert_eq!(a, ms(15));
        // 4 opportunities per 10 ms period at 1500 B.
        assert!((t.mean_rate_bps() - 4.0 * 12000.0 / 0.010).abs() < 1e-6);
    }

    #[test]
    fn a_packet_waits_for_the_next_opportunity_and_unused_ones_are_lost() {
        let t = Trace::parse("2\n4\n6\n8\n").unwrap();
        let mut l = TraceLink::new(t, None, None, SimDuration::from_millis(40));
        assert_eq!(l.enqueue(ms(3), pkt()).unwrap(), Some(ms(4)));
        assert_eq!(l.enqueue(ms(3), pkt()).unwrap(), None);
        let mut out = Vec::new();
        assert_eq!(l.on_opportunity(ms(4), &mut out), Some(ms(6)));
        assert_eq!(out.len(), 1);
        assert_eq!(l.on_opportunity(ms(6), &mut out), None);
        assert_eq!(out.len(), 2);
        assert!(l.counters().conserved());
    }

    #[test]
    fn the_reported_capacity_counts_recent_opportunities() {
        // One packet every ms: 12 Mbit/s.
        let text: String = (1..=100).map(|i| format!("{i}\n")).collect();
        let l = TraceLink::new(Trace::parse(&text).unwrap(), None, None, SimDuration::from_millis(40));
        assert_eq!(l.recent_capacity_bps(ms(50)), 12_000_000);
    }
}
