//! A trace-driven link with Mahimahi's semantics (Netravali et al.,
//! "Mahimahi: Accurate Record-and-Replay for HTTP", USENIX ATC 2015), one
//! direction of `mm-link UPLINK-TRACE DOWNLINK-TRACE`.
//!
//! Read from `ravinet/mahimahi` (commit ae477d4): `src/frontend/link_queue.{hh,cc}`
//! (`LinkQueue`), `src/frontend/linkshell.cc` (`main`),
//! `src/packet/packetshell.cc` (`PacketShell::start_uplink`,
//! `start_downlink`, `Ferry::loop`), `src/util/netdevice.cc`
//! (`TunDevice::TunDevice`), `src/util/timestamp.cc` (`timestamp`),
//! `src/packet/dropping_packet_queue.cc`, `drop_tail_packet_queue.hh`,
//! `infinite_packet_queue.hh`. The rules this module implements, each with
//! where Mahimahi states it:
//!
//! 1. *The trace.* One line per delivery opportunity: a whole number of
//!    milliseconds, non-decreasing; several lines with the same time are
//!    several opportunities in that millisecond. The last time must be
//!    positive (`LinkQueue::LinkQueue` refuses a trace "that lasts for a
//!    zero amount of time", an empty trace and a decreasing time).
//! 2. *What one opportunity carries: 1504 bytes, as Mahimahi counts them.*
//!    `LinkQueue::PACKET_SIZE = 1504`, "default max TUN payload size". The
//!    TUN device is opened with `IFF_TUN` and without `IFF_NO_PI`
//!    (`TunDevice::TunDevice`), so every read returns the 4-byte packet
//!    information header (`struct tun_pi`: flags, protocol) before the IP
//!    packet, and Mahimahi counts `contents.size()` = IP bytes + 4
//!    everywhere (opportunities, queue limits). A 1500-byte IP packet counts
//!    1504 and fills one opportunity exactly; a 52-byte ACK counts 56.
//!    [`OPPORTUNITY_BYTES`], [`TUN_HEADER_BYTES`].
//! 3. *Time is whole milliseconds.* `timestamp()` is `CLOCK_REALTIME`
//!    truncated to the millisecond, less the value at the shell's start.
//!    The link's clock starts at `base_timestamp_ = timestamp()` when the
//!    `LinkQueue` is built; opportunity `i` of cycle `c` is at
//!    `base + c·last + trace[i]` ms (`next_delivery_time`). Here the base is
//!    simulated time 0 for both directions (Mahimahi builds the uplink and
//!    downlink queues in two processes, so their bases may differ by a
//!    millisecond).
//! 4. *The trace repeats* with a period equal to its last time:
//!    `use_a_delivery_opportunity` wraps the index and adds
//!    `schedule_.back()` to the base (`repeat_` is true unless `--once`,
//!    which is not modelled). A first line at 0 therefore shares its
//!    millisecond with the previous cycle's last line.
//! 5. *How opportunities are consumed* (`LinkQueue::rationalize(now)`):
//!    while the next opportunity's time is at or before `now`, it is taken
//!    with a budget of 1504 bytes. If no packet is in transit, the head of
//!    the queue is dequeued and becomes the packet in transit (all its bytes
//!    left); `min(budget, bytes left)` are sent; a packet whose last byte is
//!    sent leaves the link. So several small packets share one opportunity,
//!    a packet is split across opportunities by bytes (its remaining bytes,
//!    `packet_in_transit_bytes_left_`, go first in the next opportunity),
//!    and when the queue runs dry the rest of the opportunity is lost. An
//!    opportunity with nothing to send is lost entirely: opportunities are
//!    consumed by the clock, not by demand.
//! 6. *Use or lose before joining* (`LinkQueue::read_packet`): an arriving
//!    packet first runs `rationalize(now)`, so every opportunity up to and
//!    including the current millisecond is used or lost, and only then joins
//!    the queue. A packet arriving in millisecond `m` is never carried by an
//!    opportunity at `m` or before, even if it finds the link idle. With
//!    integer nanoseconds this is: serve every opportunity at a time `≤ now`
//!    before the packet joins (an opportunity at `m` ms is `≤ now` exactly
//!    when `m ≤ ⌊now⌋` ms).
//! 7. *Departure.* Packets leave when `rationalize` runs for their
//!    opportunity: Mahimahi's event loop sleeps `wait_time()` (milliseconds
//!    to the next opportunity) and writes what is ready
//!    (`PacketShell::Ferry::loop`). Here they leave exactly at the
//!    opportunity's time (or at `now` when the caller is late, as Mahimahi
//!    is when its loop wakes late).
//! 8. *Queue limits* (`DropTailPacketQueue::enqueue`,
//!    `DroppingPacketQueue::good_with`): a packet is accepted iff the queue's
//!    bytes plus its `contents.size()` stay within `bytes=` (when set) and
//!    its packets plus one within `packets=` (when set); otherwise it is
//!    dropped. A limit of 0 or absent means none (`get_arg`); `mm-link`'s
//!    default queue for both directions is `infinite` (`linkshell.cc`
//!    `main`). The packet in transit has been dequeued
//!    (`DroppingPacketQueue::dequeue` subtracts it) and does not count, and
//!    the limits are checked after rule 6's `rationalize`, so the current
//!    millisecond's opportunities have already drained the queue.
//!
//! Deviations, numbered:
//! 1. A packet larger than 1504 counted bytes (Mahimahi throws "packet size
//!    is greater than maximum" in `read_packet`; a TUN with the default
//!    1500-byte MTU never produces one) is carried by as many opportunities
//!    as it needs, by rule 5's arithmetic.
//! 2. Blank lines in a trace are skipped (Mahimahi refuses them).
//! 3. Lines may end in CRLF or a lone CR, and a leading UTF-8 byte order
//!    mark is skipped (Mahimahi's `myatoi` refuses a line with anything
//!    after the digits, so a trace saved on Windows fails there).
//! 4. A time beyond the longest run, 10^9 ms ([`MAX_SPAN_MS`]), is refused
//!    naming the line (Mahimahi takes any `long`): the period in nanoseconds
//!    must fit a u64 with room for cycles.
//!
//! The link is generic over the packet type ([`ByteSize`] gives the IP
//! size) and knows nothing of the simulator: packets go in with
//! [`TraceLink::enqueue`], come out of [`TraceLink::advance`], and
//! [`TraceLink::next_wakeup`] says when to call `advance` next, so the same
//! code runs in simulated or in wall-clock time. Capacity reports for the
//! XRC agent and the oracle are properties of the [`Trace`].

use std::collections::VecDeque;

use crate::net::queue::{ByteSize, QueueCounters, QueueLimit};
use crate::net::Packet;
use crate::units::{SimDuration, SimTime, MAX_SPAN_MS};

/// Bytes one delivery opportunity carries, counted as Mahimahi counts them
/// (`LinkQueue::PACKET_SIZE`): IP bytes plus [`TUN_HEADER_BYTES`].
pub const OPPORTUNITY_BYTES: u32 = 1504;

/// The packet information header (`struct tun_pi`) Mahimahi's TUN devices
/// put before every packet; Mahimahi counts it in every size.
pub const TUN_HEADER_BYTES: u32 = 4;

/// IP bytes of the largest packet one opportunity carries (a full 1500-byte
/// packet): what capacity reports count per opportunity.
pub const OPPORTUNITY_IP_BYTES: u32 = OPPORTUNITY_BYTES - TUN_HEADER_BYTES;

const NS_PER_MS: u64 = 1_000_000;

/// A parsed trace: opportunity times within one period.
#[derive(Clone, Debug, PartialEq)]
pub struct Trace {
    /// Opportunity offsets in ms, non-decreasing.
    pub ms: Vec<u64>,
    /// Repetition period, ms: the last timestamp (positive).
    pub period_ms: u64,
}

impl Trace {
    /// Parses Mahimahi's format (rule 1). Errors name the line and the value.
    /// Lines may end in LF, CRLF or a lone CR, and a UTF-8 byte order mark is
    /// skipped (deviation 3). A time may not exceed the longest run
    /// ([`MAX_SPAN_MS`], deviation 4): the period in nanoseconds must fit a
    /// u64 with room for cycles.
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
        if last == 0 {
            return Err("the trace must last a positive time, but its last timestamp is 0 ms \
                 (it is the repetition period; Mahimahi refuses such a trace too)"
                .into());
        }
        Ok(Trace { ms, period_ms: last })
    }

    /// Mean capacity over one period in IP bits per second (full packets).
    pub fn mean_rate_bps(&self) -> f64 {
        self.ms.len() as f64 * OPPORTUNITY_IP_BYTES as f64 * 8.0 / (self.period_ms as f64 / 1000.0)
    }

    fn period_ns(&self) -> u64 {
        self.period_ms * NS_PER_MS
    }

    /// Time of opportunity `k`, cycles counted: line `k mod n` of cycle
    /// `k div n`, at `cycle·period + ms[line]` (rules 3 and 4).
    pub fn at(&self, k: u64) -> SimTime {
        let n = self.ms.len() as u64;
        SimTime::from_nanos((k / n) * self.period_ns() + self.ms[(k % n) as usize] * NS_PER_MS)
    }

    /// Index of the first opportunity strictly after `t`.
    pub fn first_after(&self, t: SimTime) -> u64 {
        let p = self.period_ns();
        let n = self.ms.len() as u64;
        let cycle = t.as_nanos() / p;
        let into = t.as_nanos() - cycle * p;
        // The last line sits at the period, after any `into < p`: found.
        let i = self.ms.partition_point(|&m| m * NS_PER_MS <= into) as u64;
        cycle * n + i
    }

    /// Opportunities with times in (from, to].
    pub fn count_between(&self, from: SimTime, to: SimTime) -> u64 {
        self.first_after(to).saturating_sub(self.first_after(from))
    }

    /// Capacity of the trace over (from, to] (times since the start), IP
    /// bits per second at [`OPPORTUNITY_IP_BYTES`] per opportunity.
    pub fn capacity_between(&self, from: SimDuration, to: SimDuration) -> u64 {
        if to <= from {
            return 0;
        }
        let n = self.count_between(SimTime::ZERO + from, SimTime::ZERO + to);
        let bits = n as u128 * OPPORTUNITY_IP_BYTES as u128 * 8;
        (bits * 1_000_000_000 / (to - from).as_nanos() as u128) as u64
    }

    /// Capacity over the `window` that ends at `now` (what the XRC agent
    /// reports), IP bits per second.
    pub fn recent_capacity_bps(&self, now: SimTime, window: SimDuration) -> u64 {
        let to = now.since_start();
        self.capacity_between(to.saturating_sub(window), to)
    }
}

/// Mahimahi's size of a packet: its IP bytes and the TUN header (rule 2).
fn counted<P: ByteSize>(p: &P) -> u64 {
    p.byte_size() + TUN_HEADER_BYTES as u64
}

/// One direction of a Mahimahi link: the drop-tail queue and the server
/// that spends the trace's opportunities on it.
pub struct TraceLink<P = Packet> {
    trace: Trace,
    limit: QueueLimit,
    /// The drop-tail queue (arrival time, packet); the packet in transit is
    /// not in it (rule 8).
    queue: VecDeque<(SimTime, P)>,
    /// The queue's size as Mahimahi counts it (rule 2).
    queue_bytes: u64,
    /// The packet partly sent by earlier opportunities and its counted bytes
    /// still to send (`packet_in_transit_`, `packet_in_transit_bytes_left_`).
    in_transit: Option<(SimTime, P, u64)>,
    /// Index of the first opportunity not yet used or lost
    /// (`next_delivery_`, cycles counted).
    next_k: u64,
    arrived: u64,
    departed: u64,
    dropped: u64,
    /// Queuing delay of each packet the last `advance` sent, in the order
    /// they left (cleared by every `advance`, so it never outgrows one call).
    sojourns: Vec<SimDuration>,
}

impl<P: ByteSize> TraceLink<P> {
    pub fn new(trace: Trace, limit: QueueLimit) -> Self {
        TraceLink {
            trace,
            limit,
            queue: VecDeque::new(),
            queue_bytes: 0,
            in_transit: None,
            next_k: 0,
            arrived: 0,
            departed: 0,
            dropped: 0,
            sojourns: Vec::new(),
        }
    }

    /// The queue's limits.
    pub fn limit(&self) -> QueueLimit {
        self.limit
    }

    /// The most full packets (1500 IP bytes, one opportunity each) the
    /// queue holds at once (rule 8), `None` without a limit.
    pub fn full_packets_held(&self) -> Option<u64> {
        let p = self.limit.packets.filter(|&n| n > 0).map(|n| n as u64);
        let b = self
            .limit
            .bytes
            .filter(|&b| b > 0)
            .map(|b| b / OPPORTUNITY_BYTES as u64);
        match (p, b) {
            (Some(p), Some(b)) => Some(p.min(b)),
            (p, b) => p.or(b),
        }
    }

    /// The queuing delays of the packets the last [`TraceLink::advance`] or
    /// [`TraceLink::enqueue`] pushed to `out`, one per packet in the same
    /// order: the time of the opportunity that sent a packet's last byte less
    /// its arrival (what Mahimahi's `LinkQueue::record_departure` logs).
    pub fn last_sojourns(&self) -> &[SimDuration] {
        &self.sojourns
    }

    /// A packet arrives at `now` (`LinkQueue::read_packet`, rule 6): every
    /// opportunity at or before `now` is used or lost first (packets that
    /// leave are pushed to `out`), then the packet joins the queue, or comes
    /// back as `Err` when the queue's limits refuse it (rule 8).
    pub fn enqueue(&mut self, now: SimTime, pkt: P, out: &mut Vec<P>) -> Result<(), P> {
        self.advance(now, out);
        self.arrived += 1;
        let size = counted(&pkt);
        let over_packets = self
            .limit
            .packets
            .is_some_and(|n| self.queue.len() as u64 + 1 > n as u64);
        let over_bytes = self.limit.bytes.is_some_and(|b| self.queue_bytes + size > b);
        if over_packets || over_bytes {
            self.dropped += 1;
            return Err(pkt);
        }
        self.queue_bytes += size;
        self.queue.push_back((now, pkt));
        Ok(())
    }

    /// Uses or loses every opportunity at or before `now`
    /// (`LinkQueue::rationalize`, rule 5); packets that leave are pushed to
    /// `out` in departure order.
    pub fn advance(&mut self, now: SimTime, out: &mut Vec<P>) {
        self.sojourns.clear();
        loop {
            if self.idle() {
                // Nothing to send: every opportunity up to `now` is lost.
                self.next_k = self.next_k.max(self.trace.first_after(now));
                return;
            }
            let at = self.trace.at(self.next_k);
            if at > now {
                return;
            }
            self.next_k += 1;
            self.serve_one_opportunity(at, out);
        }
    }

    /// One opportunity's budget spent on the packet in transit, then on the
    /// queue's head, until the budget or the packets run out.
    fn serve_one_opportunity(&mut self, at: SimTime, out: &mut Vec<P>) {
        let mut budget = OPPORTUNITY_BYTES as u64;
        while budget > 0 {
            if self.in_transit.is_none() {
                let Some((t, p)) = self.queue.pop_front() else {
                    // The rest of the opportunity is lost.
                    return;
                };
                let size = counted(&p);
                self.queue_bytes -= size;
                self.in_transit = Some((t, p, size));
            }
            let (_, _, left) = self.in_transit.as_mut().expect("set above");
            let sent = budget.min(*left);
            *left -= sent;
            budget -= sent;
            if *left == 0 {
                let (arrival, p, _) = self.in_transit.take().expect("set above");
                self.departed += 1;
                self.sojourns.push(at.saturating_since(arrival));
                out.push(p);
            }
        }
    }

    fn idle(&self) -> bool {
        self.in_transit.is_none() && self.queue.is_empty()
    }

    /// When [`TraceLink::advance`] has work next: the next opportunity while
    /// a packet waits, `None` while the link is empty.
    pub fn next_wakeup(&self) -> Option<SimTime> {
        (!self.idle()).then(|| self.trace.at(self.next_k))
    }

    /// Head-of-line delay at `now`: the age of the packet in transit, or of
    /// the queue's head.
    pub fn hol_delay(&self, now: SimTime) -> SimDuration {
        let head = match &self.in_transit {
            Some((t, _, _)) => Some(*t),
            None => self.queue.front().map(|(t, _)| *t),
        };
        head.map_or(SimDuration::ZERO, |t| now.saturating_since(t))
    }

    /// Packets held: the queue and the packet in transit.
    pub fn queued_packets(&self) -> usize {
        self.queue.len() + self.in_transit.is_some() as usize
    }

    /// IP bytes held: the queue and the whole packet in transit.
    pub fn queued_bytes(&self) -> u64 {
        let tun = TUN_HEADER_BYTES as u64 * self.queue.len() as u64;
        let transit = self.in_transit.as_ref().map_or(0, |(_, p, _)| p.byte_size());
        self.queue_bytes - tun + transit
    }

    pub fn counters(&self) -> QueueCounters {
        QueueCounters {
            arrived: self.arrived,
            departed: self.departed,
            dropped: self.dropped,
            held: self.queued_packets() as u64,
        }
    }

    pub fn trace(&self) -> &Trace {
        &self.trace
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::*;
    use crate::engine::Rng;

    /// A packet of the tests: an identity and an IP size.
    #[derive(Clone, Debug, PartialEq)]
    struct P {
        id: usize,
        size: u32,
    }
    impl ByteSize for P {
        fn byte_size(&self) -> u64 {
            self.size as u64
        }
    }

    fn ms(v: u64) -> SimTime {
        SimTime::from_nanos(v * NS_PER_MS)
    }
    fn us(v: u64) -> SimTime {
        SimTime::from_nanos(v * 1_000)
    }
    fn link(trace: &str, limit: QueueLimit) -> TraceLink<P> {
        TraceLink::new(Trace::parse(trace).unwrap(), limit)
    }
    fn ids(out: &[P]) -> Vec<usize> {
        out.iter().map(|p| p.id).collect()
    }
    /// Offers packets `(id, IP size)` at `t`; returns what left meanwhile.
    fn offer(l: &mut TraceLink<P>, t: SimTime, pkts: &[(usize, u32)]) -> Vec<usize> {
        let mut out = Vec::new();
        for &(id, size) in pkts {
            l.enqueue(t, P { id, size }, &mut out).unwrap();
        }
        ids(&out)
    }
    fn run_to(l: &mut TraceLink<P>, t: SimTime) -> Vec<usize> {
        let mut out = Vec::new();
        l.advance(t, &mut out);
        ids(&out)
    }

    #[test]
    fn garbage_decreasing_and_zero_length_traces_are_rejected_with_the_line() {
        assert!(Trace::parse("1\n2\nabc\n").unwrap_err().contains("line 3"));
        assert!(Trace::parse("5\n3\n").unwrap_err().contains("line 2"));
        assert!(Trace::parse("\n\n").unwrap_err().contains("no delivery"));
        assert!(Trace::parse("-4\n").is_err());
        assert!(Trace::parse("0\n0\n").unwrap_err().contains("last timestamp is 0"));
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
        // Cycle 1 starts at 10 ms: its two lines at 0 share that millisecond
        // with cycle 0's last line.
        let times: Vec<u64> = (0..9).map(|k| t.at(k).as_nanos() / NS_PER_MS).collect();
        assert_eq!(times, vec![0, 0, 5, 10, 10, 10, 15, 20, 20]);
        assert_eq!(t.at(t.first_after(ms(11))), ms(15));
        assert_eq!(t.at(t.first_after(ms(10))), ms(15));
        assert_eq!(t.first_after(ms(10) - SimDuration::from_nanos(1)), 3);
        // 4 opportunities per 10 ms period, 1500 IP bytes each.
        assert!((t.mean_rate_bps() - 4.0 * 12000.0 / 0.010).abs() < 1e-6);
    }

    #[test]
    fn a_1500_byte_packet_counts_1504_bytes_and_fills_one_opportunity() {
        assert_eq!(OPPORTUNITY_BYTES, 1500 + TUN_HEADER_BYTES);
        let mut l = link("1\n", QueueLimit::UNLIMITED);
        assert!(offer(&mut l, us(500), &[(0, 1500), (1, 1500), (2, 1500)]).is_empty());
        assert_eq!(run_to(&mut l, ms(1)), vec![0]);
        assert_eq!(run_to(&mut l, ms(2)), vec![1]);
        assert_eq!(run_to(&mut l, ms(3)), vec![2]);
        assert_eq!(l.next_wakeup(), None);
    }

    #[test]
    fn a_packet_is_split_across_opportunities_by_bytes() {
        // An ACK (56 counted bytes) then a full packet (1504): the first
        // opportunity carries the ACK and 1448 bytes of the packet, the
        // second the packet's last 56 bytes and 1448 of the next one.
        let mut l = link("1\n", QueueLimit::UNLIMITED);
        offer(&mut l, us(100), &[(0, 52), (1, 1500), (2, 1500)]);
        assert_eq!(run_to(&mut l, ms(1)), vec![0]);
        assert_eq!(l.queued_packets(), 2, "packet 1 is in transit, packet 2 queued");
        assert_eq!(run_to(&mut l, ms(2)), vec![1]);
        assert_eq!(run_to(&mut l, ms(3)), vec![2]);
        assert_eq!(l.next_wakeup(), None);
    }

    #[test]
    fn small_packets_share_one_opportunity() {
        // 26 ACKs of 56 counted bytes use 1456 of 1504 bytes; the 27th gets
        // the remaining 48 and leaves with its last 8 in the next one.
        let mut l = link("1\n", QueueLimit::UNLIMITED);
        let acks: Vec<(usize, u32)> = (0..28).map(|i| (i, 52)).collect();
        offer(&mut l, us(10), &acks);
        assert_eq!(run_to(&mut l, ms(1)), (0..26).collect::<Vec<_>>());
        assert_eq!(run_to(&mut l, ms(2)), vec![26, 27]);
    }

    #[test]
    fn the_rest_of_an_opportunity_is_lost_when_the_queue_runs_dry() {
        // One ACK uses 56 of opportunity 1's bytes; an ACK that arrives later
        // in the same millisecond waits for opportunity 2.
        let mut l = link("1\n", QueueLimit::UNLIMITED);
        offer(&mut l, us(100), &[(0, 52)]);
        assert_eq!(run_to(&mut l, ms(1)), vec![0]);
        assert!(offer(&mut l, ms(1) + SimDuration::from_micros(300), &[(1, 52)]).is_empty());
        assert_eq!(l.next_wakeup(), Some(ms(2)));
        assert_eq!(run_to(&mut l, ms(2)), vec![1]);
    }

    #[test]
    fn an_arriving_packet_never_uses_an_opportunity_of_its_own_millisecond() {
        // Opportunities at 5, 10, 15 ms. A packet at 4.999999 ms takes the
        // one at 5; a packet at exactly 5 ms finds it used or lost, even on
        // an idle link whose opportunity at 5 ms has not been served yet.
        let mut l = link("5\n", QueueLimit::UNLIMITED);
        offer(&mut l, ms(5) - SimDuration::from_nanos(1), &[(0, 1500)]);
        assert_eq!(l.next_wakeup(), Some(ms(5)));
        assert_eq!(offer(&mut l, ms(5), &[(1, 1500)]), vec![0]);
        assert_eq!(l.next_wakeup(), Some(ms(10)));
        let mut idle = link("5\n", QueueLimit::UNLIMITED);
        offer(&mut idle, ms(5), &[(0, 1500)]);
        assert_eq!(idle.next_wakeup(), Some(ms(10)));
        offer(&mut idle, ms(10) + SimDuration::from_micros(999), &[(1, 52)]);
        assert_eq!(run_to(&mut idle, ms(14)), Vec::<usize>::new());
        assert_eq!(
            run_to(&mut idle, ms(15)),
            vec![1],
            "the ACK missed the opportunity at 10 ms"
        );
    }

    #[test]
    fn an_opportunity_that_emptied_the_queue_is_not_served_again_in_its_millisecond() {
        // The old bug: the queue empties at the opportunity at 5 ms and a
        // packet arriving in that millisecond was carried by it again.
        let mut l = link("5\n", QueueLimit::UNLIMITED);
        offer(&mut l, ms(4), &[(0, 1500)]);
        assert_eq!(run_to(&mut l, ms(5)), vec![0]);
        assert!(offer(&mut l, ms(5), &[(1, 1500)]).is_empty());
        assert_eq!(l.next_wakeup(), Some(ms(10)));
        assert_eq!(run_to(&mut l, ms(9)), Vec::<usize>::new());
        assert_eq!(run_to(&mut l, ms(10)), vec![1]);
    }

    #[test]
    fn each_departure_reports_its_time_from_arrival_to_its_last_bytes_opportunity() {
        // Opportunities every ms. Packet 0 (4000 bytes, from 0.1 ms) leaves
        // with its third opportunity at 3 ms; the ACK behind it shares that
        // one. A call that sends nothing reports nothing.
        let mut l = link("1\n", QueueLimit::UNLIMITED);
        offer(&mut l, us(100), &[(0, 4000)]);
        offer(&mut l, us(2_500), &[(1, 52)]);
        assert_eq!(run_to(&mut l, ms(2)), Vec::<usize>::new());
        assert!(l.last_sojourns().is_empty());
        assert_eq!(run_to(&mut l, ms(3)), vec![0, 1]);
        assert_eq!(l.last_sojourns(), &[us(2_900).since_start(), us(500).since_start()]);
        let mut out = Vec::new();
        l.advance(ms(4), &mut out);
        assert!(l.last_sojourns().is_empty(), "cleared by every call");
    }

    #[test]
    fn opportunities_pass_unused_while_the_link_is_idle() {
        let mut l = link("2\n4\n6\n8\n", QueueLimit::UNLIMITED);
        assert_eq!(run_to(&mut l, ms(5)), Vec::<usize>::new());
        offer(&mut l, ms(5), &[(0, 1500), (1, 1500)]);
        assert_eq!(l.next_wakeup(), Some(ms(6)));
        assert_eq!(run_to(&mut l, ms(6)), vec![0]);
        assert_eq!(run_to(&mut l, ms(8)), vec![1]);
        assert_eq!(l.next_wakeup(), None);
        // Period 8: the next opportunities are at 10, 12, ...; 9.5 ms waits for 10.
        offer(&mut l, us(9_500), &[(2, 1500)]);
        assert_eq!(l.next_wakeup(), Some(ms(10)));
        assert!(l.counters().conserved());
    }

    #[test]
    fn the_byte_limit_counts_the_tun_header() {
        // Two 1500-byte packets count 3008 bytes: a 3008-byte limit holds
        // them, a 3007-byte limit only one.
        for (limit, kept) in [(3008u64, 2usize), (3007, 1)] {
            let mut l = link(
                "1000\n",
                QueueLimit {
                    packets: None,
                    bytes: Some(limit),
                },
            );
            let mut out = Vec::new();
            let ok = (0..3)
                .filter(|&i| l.enqueue(us(10), P { id: i, size: 1500 }, &mut out).is_ok())
                .count();
            assert_eq!(ok, kept, "limit {limit}");
            assert_eq!(l.counters().dropped, 3 - kept as u64);
            assert!(l.counters().conserved());
        }
    }

    #[test]
    fn the_packet_in_transit_does_not_count_against_the_limits() {
        // packets = 1: after opportunity 1 sends an ACK and part of packet 1,
        // packet 1 is in transit and the queue is empty, so packet 2 fits.
        let mut l = link("1\n", QueueLimit::packets(2));
        offer(&mut l, us(10), &[(0, 52), (1, 1500)]);
        assert_eq!(run_to(&mut l, ms(1)), vec![0]);
        let mut out = Vec::new();
        l.enqueue(us(1_100), P { id: 2, size: 1500 }, &mut out).unwrap();
        l.enqueue(us(1_200), P { id: 3, size: 1500 }, &mut out).unwrap();
        assert!(l.enqueue(us(1_300), P { id: 4, size: 1500 }, &mut out).is_err());
        assert_eq!(l.queued_packets(), 3, "two queued and one in transit");
        assert_eq!(l.queued_bytes(), 3 * 1500);
    }

    #[test]
    fn the_limits_are_checked_after_the_current_millisecond_is_served() {
        // packets = 1 and a full queue: a packet arriving in the millisecond
        // of an opportunity finds the queue drained by it, and fits.
        let mut l = link("5\n", QueueLimit::packets(1));
        let mut out = Vec::new();
        l.enqueue(ms(1), P { id: 0, size: 1500 }, &mut out).unwrap();
        assert!(l.enqueue(ms(2), P { id: 1, size: 1500 }, &mut out).is_err());
        l.enqueue(ms(5), P { id: 2, size: 1500 }, &mut out).unwrap();
        assert_eq!(ids(&out), vec![0]);
        assert!(l.counters().conserved());
    }

    #[test]
    fn a_packet_larger_than_an_opportunity_takes_several() {
        // Deviation 1: 4000 IP bytes count 4004, three opportunities.
        let mut l = link("1\n", QueueLimit::UNLIMITED);
        offer(&mut l, us(1), &[(0, 4000), (1, 52)]);
        assert_eq!(run_to(&mut l, ms(2)), Vec::<usize>::new());
        assert_eq!(run_to(&mut l, ms(3)), vec![0, 1]);
    }

    #[test]
    fn the_reported_capacity_counts_recent_opportunities() {
        // One packet every ms: 12 Mbit/s of IP bytes.
        let text: String = (1..=100).map(|i| format!("{i}\n")).collect();
        let t = Trace::parse(&text).unwrap();
        assert_eq!(t.recent_capacity_bps(ms(50), SimDuration::from_millis(40)), 12_000_000);
        assert_eq!(t.count_between(ms(10), ms(20)), 10);
    }

    // ----- Against an independent model of Mahimahi -----

    /// Mahimahi's link as the plain per-millisecond loop: at every
    /// millisecond, first that millisecond's opportunities (1504 bytes each,
    /// the packet in transit first, small packets sharing, leftovers lost),
    /// then that millisecond's arrivals against the drop-tail limits.
    /// Returns the departures (ms, id) and the dropped ids.
    fn mahimahi(
        trace: &[u64],
        arrivals: &[(u64, u32)],
        limit: QueueLimit,
        end_ms: u64,
    ) -> (Vec<(u64, usize)>, Vec<usize>) {
        let period = *trace.last().unwrap();
        let mut per_ms = vec![0u32; end_ms as usize + 1];
        let mut base = 0;
        'cycles: loop {
            for &t in trace {
                if base + t > end_ms {
                    break 'cycles;
                }
                per_ms[(base + t) as usize] += 1;
            }
            base += period;
        }
        let mut queue: VecDeque<(usize, u64)> = VecDeque::new();
        let mut transit: Option<(usize, u64)> = None;
        let (mut left_ms, mut dropped) = (Vec::new(), Vec::new());
        let mut next = 0;
        for m in 0..=end_ms {
            for _ in 0..per_ms[m as usize] {
                let mut budget = 1504u64;
                while budget > 0 {
                    if transit.is_none() {
                        match queue.pop_front() {
                            Some(p) => transit = Some(p),
                            None => break,
                        }
                    }
                    let (id, left) = transit.as_mut().unwrap();
                    let n = budget.min(*left);
                    *left -= n;
                    budget -= n;
                    if *left == 0 {
                        left_ms.push((m, *id));
                        transit = None;
                    }
                }
            }
            while next < arrivals.len() && arrivals[next].0 / NS_PER_MS == m {
                let size = arrivals[next].1 as u64 + 4;
                let bytes: u64 = queue.iter().map(|(_, s)| s).sum();
                let ok_p = limit.packets.is_none_or(|n| queue.len() < n as usize);
                let ok_b = limit.bytes.is_none_or(|b| bytes + size <= b);
                if ok_p && ok_b {
                    queue.push_back((next, size));
                } else {
                    dropped.push(next);
                }
                next += 1;
            }
        }
        (left_ms, dropped)
    }

    /// Drives a [`TraceLink`] as an event loop does: arrivals and wake-ups
    /// in time order, ties broken at random, spurious extra wake-ups.
    fn drive(
        trace: &[u64],
        arrivals: &[(u64, u32)],
        limit: QueueLimit,
        end_ms: u64,
        rng: &mut Rng,
    ) -> (Vec<(u64, usize)>, Vec<usize>) {
        let text: String = trace.iter().map(|t| format!("{t}\n")).collect();
        let mut l: TraceLink<P> = TraceLink::new(Trace::parse(&text).unwrap(), limit);
        let end = ms(end_ms);
        let (mut left, mut dropped, mut out) = (Vec::new(), Vec::new(), Vec::new());
        let (mut next, mut last) = (0, SimTime::ZERO);
        loop {
            let wake = l.next_wakeup().filter(|&t| t <= end);
            let arrival = arrivals.get(next).map(|a| SimTime::from_nanos(a.0));
            let (t, is_arrival) = match (wake, arrival) {
                (None, None) => break,
                (Some(w), None) => (w, false),
                (None, Some(a)) => (a, true),
                (Some(w), Some(a)) if w == a => (w, rng.bernoulli(0.5)),
                (Some(w), Some(a)) => (w.min(a), a < w),
            };
            if rng.bernoulli(0.1) && t > last {
                // A wake-up with nothing due yet (a real-time loop's early
                // timer), between the last event and this one.
                let early = t.as_nanos() - 1 - rng.below(t.as_nanos() - last.as_nanos());
                l.advance(SimTime::from_nanos(early), &mut out);
                assert!(out.is_empty(), "nothing is due before the next event");
            }
            last = t;
            if is_arrival {
                let (_, size) = arrivals[next];
                if l.enqueue(t, P { id: next, size }, &mut out).is_err() {
                    dropped.push(next);
                }
                next += 1;
            } else {
                l.advance(t, &mut out);
            }
            assert_eq!(l.last_sojourns().len(), out.len(), "one queuing delay per departure");
            for (p, d) in out.iter().zip(l.last_sojourns()) {
                assert_eq!(
                    d.as_nanos(),
                    t.as_nanos() - arrivals[p.id].0,
                    "queuing delay of {}",
                    p.id
                );
            }
            for p in out.drain(..) {
                assert_eq!(t.as_nanos() % NS_PER_MS, 0, "packets leave at whole milliseconds");
                left.push((t.as_nanos() / NS_PER_MS, p.id));
            }
            assert!(l.counters().conserved());
        }
        (left, dropped)
    }

    fn random_trace(rng: &mut Rng) -> Vec<u64> {
        let n = 1 + rng.below(40);
        let mut t = rng.below(3);
        let mut v = Vec::new();
        for _ in 0..n {
            // Gaps of 0 put several opportunities in one millisecond.
            t += [0, 0, 1, 1, 2, 3, 7][rng.below(7) as usize];
            v.push(t);
        }
        if *v.last().unwrap() == 0 {
            v.push(1 + rng.below(5));
        }
        v
    }

    fn random_arrivals(rng: &mut Rng, end_ms: u64) -> Vec<(u64, u32)> {
        let mut v = Vec::new();
        let mut t = 0u64;
        let mean_gap_ns = 50_000 + rng.below(3 * NS_PER_MS);
        loop {
            t += match rng.below(4) {
                0 => 0,                                          // a burst: same instant
                1 => (t / NS_PER_MS + 1) * NS_PER_MS - t,        // the next whole millisecond
                _ => rng.exponential(mean_gap_ns as f64) as u64, // anywhere
            };
            if t >= end_ms * NS_PER_MS {
                return v;
            }
            let size = match rng.below(3) {
                0 => 1500,
                1 => 52 + 8 * rng.below(5) as u32,
                _ => 40 + rng.below(1461) as u32,
            };
            v.push((t, size));
        }
    }

    fn random_limit(rng: &mut Rng) -> QueueLimit {
        let packets = rng.bernoulli(0.5).then(|| 1 + rng.below(20) as u32);
        let bytes = rng.bernoulli(0.5).then(|| 100 + rng.below(30_000));
        QueueLimit { packets, bytes }
    }

    #[test]
    fn the_link_matches_mahimahis_per_millisecond_loop_on_random_traces_and_arrivals() {
        let mut rng = Rng::from_seed(7);
        for case in 0..3000 {
            let trace = random_trace(&mut rng);
            let end_ms = 50 + rng.below(400);
            let arrivals = random_arrivals(&mut rng, end_ms);
            let limit = random_limit(&mut rng);
            let want = mahimahi(&trace, &arrivals, limit, end_ms);
            let got = drive(&trace, &arrivals, limit, end_ms, &mut rng);
            assert_eq!(
                got, want,
                "case {case}: trace {trace:?}, limit {limit:?}, arrivals {arrivals:?}"
            );
        }
    }

    #[test]
    fn a_one_packet_per_5_ms_trace_never_carries_more_than_2_40_mbit_s() {
        // 10 s of saturating arrivals in random patterns (bursts, whole
        // milliseconds, the opportunity's own millisecond, anywhere), with
        // and without a queue limit.
        let mut rng = Rng::from_seed(11);
        let opportunities = 10_000 / 5;
        for case in 0..20 {
            let limit = if case % 2 == 0 {
                QueueLimit::packets(20)
            } else {
                QueueLimit::UNLIMITED
            };
            let mut l: TraceLink<P> = link("5\n", limit);
            let (mut t, mut id, mut out) = (0u64, 0usize, Vec::new());
            let mut delivered = Vec::new();
            while t < 10_000 * NS_PER_MS {
                let burst = 1 + rng.below(3);
                for _ in 0..burst {
                    let _ = l.enqueue(SimTime::from_nanos(t), P { id, size: 1500 }, &mut out);
                    id += 1;
                }
                delivered.append(&mut out);
                t += match case % 4 {
                    0 => 5 * NS_PER_MS,                  // on the opportunities
                    1 => NS_PER_MS * (1 + rng.below(3)), // whole milliseconds
                    2 => rng.below(8 * NS_PER_MS),       // anywhere
                    _ => [0, NS_PER_MS, 5 * NS_PER_MS, 4_999_999][rng.below(4) as usize],
                };
            }
            l.advance(ms(10_000), &mut out);
            delivered.append(&mut out);
            let payload_bits = delivered.iter().map(|p| (p.size as u64 - 52) * 8).sum::<u64>();
            let mbps = payload_bits as f64 / 10.0 * 1e-6;
            assert!(mbps <= 2.40, "case {case}: {mbps} Mbit/s of payload");
            assert!(
                delivered.len() <= opportunities,
                "case {case}: {} packets",
                delivered.len()
            );
        }
    }
}
