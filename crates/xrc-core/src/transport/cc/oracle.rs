//! The oracle (`oracle`): a sender that is the physical limit of its path.
//!
//! It is not a published algorithm. It is the reference every scheme's
//! throughput and delay are divided by, so it must be a *bound*: on the same
//! path no sender may deliver more, and none may deliver as much with less
//! queuing delay. The rate oracle it replaces ([`super::oracle_rate`],
//! `oracle-rate`) was not one (issue 10).
//!
//! # What it knows
//!
//! The future delivery opportunities of its bottleneck, with zero delay, and
//! the one-way delay from its host to that bottleneck. The network side is
//! the access network's port `Access::oracle_opportunities` (the trace
//! topology: the Mahimahi trace, known in advance, repeating with its
//! period; a cell: its shadow, below) and `World::feed_schedule`: every millisecond, for each
//! opportunity at time `T` that is the flow's and lies one millisecond
//! beyond what it was told, the flow gets `Feedback::Departure { at }` with
//!
//! ```text
//!   at = T − D_fwd − 1 ns
//!   D_fwd = extra_rtt / 2 + Internet delay (+ one full packet's serialization
//!           on the Internet link when it has a rate)
//! ```
//!
//! and sends one full segment at each `at` (the framework's departure hook,
//! [`super::CongestionControl::departure`], holds every other transmission).
//! Which opportunities are the flow's: every one, when it is alone on its
//! UE; with `n` live flows on the UE, those whose index (counted from the
//! trace's start, cycles included) is `rank mod n`, `rank` the flow's place
//! among the UE's live flows (its share). Opportunities its queue could not
//! hold are not given (see *Buffer* below).
//!
//! # Why nobody beats it (the argument)
//!
//! Assumptions: (A1) the trace link is the only rate limit on the forward
//! path (the Internet link has no rate, or its serialization of one packet
//! is the only delay it adds: nothing else queues); (A2) every data packet
//! is a full segment, MSS 1448 bytes + 52 bytes of TCP/IP headers = 1500 IP
//! bytes, which Mahimahi counts as 1504 with the TUN header, exactly one
//! opportunity (`trace_link` rule 2); (A3) a single flow on the bottleneck,
//! or, with several, each flow is compared against its share of the
//! opportunities; (A4) a run of fixed length: what counts is what the
//! receiver gets by its end.
//!
//! *Throughput.* Under A2 an opportunity carries at most one segment
//! (`trace_link` rule 5), so the payload any sender gets through by the end
//! is at most 1448 bytes times the opportunities that can carry a packet of
//! it: those at or after its first packet can reach the link (flow start +
//! `D_fwd`, rule 6: a packet arriving in millisecond `m` is carried by an
//! opportunity after `m` at the earliest), and, for a full queue (rule 8),
//! no more in one millisecond than the queue holds: every packet carried at
//! `T` arrived before `T` and is still queued when the last of them arrives,
//! so their number is at most `buffer_packets` and `buffer_bytes / 1504`.
//! The oracle puts one segment on every such opportunity, so its goodput is
//! that maximum, and nobody's is higher.
//!
//! *Delay.* "Delay" is each data packet's one-way queuing delay at the
//! bottleneck: the time from its arrival at the link to the opportunity that
//! sends its last byte (Mahimahi's `record_departure`, the `queue_delay`
//! table), summarized per run as its mean and 95th percentile; and the
//! network RTT of a packet, base RTT + its queuing delay. In integer
//! nanoseconds a packet carried at `T` arrived at `T − 1 ns` at the latest
//! (rule 6), so its queuing delay is at least 1 ns; every packet of the
//! oracle waits exactly 1 ns. So at any throughput no sender's mean or p95
//! delay (or network RTT) is lower, and at the oracle's delay (1 ns) no
//! sender's throughput is higher. Power (throughput / mean or p95 delay,
//! with `xrc reproduce`'s floor of 0.1 ms on the delay) is therefore never
//! higher than the oracle's: throughput at most the oracle's over a delay
//! at least the oracle's.
//!
//! What it does not bound: RTT samples as a sender measures them, which
//! include the receiver's delayed ACKs (a sender that sends pairs gets
//! immediate ACKs; the oracle's lone packets may wait for the delayed-ACK
//! timer) and the uplink; flows that send smaller segments (A2: several
//! small packets may share an opportunity, and a byte-limited queue may
//! hold more of them); and schemes sharing the bottleneck with the oracle,
//! whose packets take opportunities the oracle was given (A3).
//!
//! # The cellular topology
//!
//! The cell's port is a shadow (`ran::shadow`): a second cell built from the
//! same configuration and random streams, run ahead of the real one up to
//! one millisecond beyond `D_fwd`, in which the oracle's UE always holds more
//! than one transport block can take. Each SDU the shadow starts sending in
//! the TTI starting at `T` is an opportunity at `T` (indexed from the first,
//! shared among the UE's flows as above), so one segment reaches the base
//! station 1 ns before the TTI that starts sending it. The real UE's buffer
//! then holds, at every TTI, exactly the SDUs the shadow sends from in it,
//! its demand reaches past the block, the scheduler grants it what it
//! granted the shadow, and the HARQ stream is drawn in the same order: the
//! real cell repeats the shadow TTI by TTI (`World::oracle_shadow_agreement`
//! counts the TTIs that differ; 0 in `tests/cell_oracle.rs`). Conditions:
//! (C1) no other UE of the cell has a flow (their backlogs depend on their
//! own senders, which the shadow does not run; refused otherwise, naming
//! `oracle-rate`); (C2) the UE's flows send segments of one size; A1 (the
//! Internet link is not a bottleneck).
//!
//! *Throughput.* A TTI gives the UE at most the band at its CQI, less what a
//! HARQ retransmission due takes; the shadow's UE uses all of it in every
//! TTI, packing whole SDUs of the flows' size. Without HARQ losses (BLER 0)
//! that is, TTI by TTI, the most payload any sender's packets can get
//! through. With losses the bound holds in expectation, not run by run: the
//! cell draws one outcome per block sent from one stream, so a sender whose
//! blocks go in other TTIs draws other outcomes (measured on random cells
//! with BLER 0.1: no scheme got more, `tests/cell_oracle.rs`).
//!
//! *Delay.* A packet reaches the buffer 1 ns before the TTI that starts
//! sending it and leaves with the first block that can take its last byte:
//! what it waits is the blocks' granularity (an SDU larger than the rest of
//! a block, an outage or a TDD uplink slot while it is half sent), not a
//! queue. At the oracle's throughput every block is full, so no sender's
//! packets leave earlier. Unlike on a trace, a sender that sends *less* can
//! wait less per packet (only what fits whole in each block): the oracle is
//! the frontier's maximum-throughput point, not a bound on power over the
//! buffer's per-packet delay in every case. Over `xrc reproduce`'s delay (RTT
//! samples less their least, which includes the uplink's grant delay every
//! scheme meets) no scheme's power reached it on the random cells of the
//! test nor on Fig. 1 (`docs/reproduction.md`).
//!
//! Choices, numbered:
//! 1. *One nanosecond early.* A packet must reach the trace link before the
//!    millisecond of its opportunity (rule 6); 1 ns is the least margin
//!    integer time allows, and every delay on the path is whole
//!    nanoseconds, so it arrives exactly then.
//! 2. *A missed departure is dropped.* A departure whose time passed without
//!    a packet (the application had nothing to send, or the receive window
//!    was closed) is forgotten: sent late, its packet would wait for the
//!    next opportunity and queue in front of the packet that is the next
//!    one's. Counted in `missed`.
//! 3. *The window never limits.* It is set to the packets in flight plus the
//!    departures pending, plus one, on every ACK and schedule: the
//!    schedule alone decides. Losses (none under A1–A3) do not change it; a
//!    retransmission takes the next departure, as new data would.
//! 4. *Before its first departure* the flow sends nothing (the framework's
//!    initial window would be a burst into the queue).

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::CcConfig;
use super::{CongestionControl, ConnView, Departure, Feedback, PacketRecord, RateSample, SentPacket, Signals, Window};
use crate::units::SimTime;

/// The oracle has no parameters: what it does follows from the path.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Config {}

impl CcConfig for Config {
    fn build(self, _stream: u64) -> Box<dyn super::CongestionControl> {
        Box::new(Oracle::new(self))
    }

    fn validate(&self) -> Result<(), String> {
        Ok(())
    }
}

#[derive(Default)]
pub struct Oracle {
    /// Departure times not yet used, non-decreasing.
    pending: VecDeque<SimTime>,
    /// A departure has been given.
    scheduled: bool,
    /// Departures that passed without a packet (choice 2).
    missed: u64,
}

impl Oracle {
    pub fn new(_cfg: Config) -> Self {
        Oracle::default()
    }

    /// Departures that passed without a packet.
    pub fn missed(&self) -> u64 {
        self.missed
    }

    /// Departures known and not yet used.
    pub fn pending(&self) -> usize {
        self.pending.len()
    }

    /// Choice 3: the window covers what is in flight and every departure
    /// pending.
    fn open_window(&self, w: &mut Window, c: &ConnView) {
        let want = (c.packets_in_flight as u64 + self.pending.len() as u64 + 1).min(w.cwnd_clamp as u64) as u32;
        w.cwnd = want.max(1);
    }

    /// Choice 2: forgets departures before `now`.
    fn drop_missed(&mut self, now: SimTime) {
        while self.pending.front().is_some_and(|&t| t < now) {
            self.pending.pop_front();
            self.missed += 1;
        }
    }
}

impl CongestionControl for Oracle {
    fn name(&self) -> &'static str {
        "oracle"
    }

    /// Choice 3: losses leave the window alone.
    fn ssthresh(&mut self, _now: SimTime, w: &Window, _c: &ConnView) -> u32 {
        w.ssthresh
    }

    fn cong_avoid(&mut self, _now: SimTime, _w: &mut Window, _c: &ConnView, _acked: u32) {}

    fn cong_control(&mut self, _now: SimTime, w: &mut Window, c: &ConnView, _rs: &RateSample) -> bool {
        if self.scheduled {
            self.open_window(w, c);
        }
        self.scheduled
    }

    fn on_feedback(&mut self, now: SimTime, w: &mut Window, c: &ConnView, fb: &Feedback) {
        let Feedback::Departure { at } = *fb else {
            return;
        };
        self.drop_missed(now);
        if at >= now && self.pending.back().is_none_or(|&b| b <= at) {
            self.pending.push_back(at);
        }
        self.scheduled = true;
        self.open_window(w, c);
    }

    fn departure(&mut self, now: SimTime) -> Departure {
        self.drop_missed(now);
        match self.pending.front() {
            None => Departure::Hold,
            Some(&t) if t <= now => Departure::Now,
            Some(&t) => Departure::At(t),
        }
    }

    fn on_packet_sent(&mut self, now: SimTime, _p: &SentPacket) -> PacketRecord {
        if self.pending.front().is_some_and(|&t| t <= now) {
            self.pending.pop_front();
        }
        PacketRecord::default()
    }

    fn signals(&self) -> Signals {
        Signals {
            oracle_schedule: true,
            ..Signals::default()
        }
    }

    fn mode(&self) -> &'static str {
        if self.scheduled {
            "oracle"
        } else {
            "waiting"
        }
    }

    fn target_window(&self) -> Option<f64> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::cc::registry;
    use crate::transport::cc::testkit::us;

    fn t(v: u64) -> SimTime {
        SimTime::ZERO + us(v)
    }

    fn give(o: &mut Oracle, w: &mut Window, now: SimTime, at: SimTime) {
        o.on_feedback(now, w, &ConnView::default(), &Feedback::Departure { at });
    }

    #[test]
    fn before_any_departure_nothing_leaves() {
        let mut o = Oracle::new(Config::default());
        assert_eq!(o.departure(t(0)), Departure::Hold);
        assert!(!o.cong_control(t(0), &mut Window::new(10), &ConnView::default(), &RateSample::default()));
        assert!(o.signals().oracle_schedule && !o.signals().oracle);
    }

    #[test]
    fn each_departure_lets_exactly_one_packet_leave_at_its_time() {
        let mut o = Oracle::new(Config::default());
        let mut w = Window::new(10);
        give(&mut o, &mut w, t(0), t(500));
        give(&mut o, &mut w, t(0), t(500));
        give(&mut o, &mut w, t(0), t(900));
        assert_eq!(w.cwnd, 4, "in flight 0 + 3 pending + 1");
        assert_eq!(o.departure(t(100)), Departure::At(t(500)));
        assert_eq!(o.departure(t(500)), Departure::Now);
        o.on_packet_sent(t(500), &SentPacket::default());
        assert_eq!(o.departure(t(500)), Departure::Now);
        o.on_packet_sent(t(500), &SentPacket::default());
        assert_eq!(o.departure(t(500)), Departure::At(t(900)));
        o.on_packet_sent(t(900), &SentPacket::default());
        assert_eq!(o.departure(t(901)), Departure::Hold);
        assert_eq!(o.missed(), 0);
    }

    #[test]
    fn a_departure_that_passed_unused_is_forgotten_and_counted() {
        let mut o = Oracle::new(Config::default());
        let mut w = Window::new(10);
        give(&mut o, &mut w, t(0), t(100));
        give(&mut o, &mut w, t(0), t(200));
        assert_eq!(o.departure(t(150)), Departure::At(t(200)));
        assert_eq!(o.missed(), 1);
        // A departure already in the past when given is not kept.
        give(&mut o, &mut w, t(300), t(250));
        assert_eq!(o.pending(), 0);
        assert_eq!(o.missed(), 2);
    }

    #[test]
    fn the_window_covers_what_is_in_flight_and_pending_and_losses_leave_it_alone() {
        let mut o = Oracle::new(Config::default());
        let mut w = Window::new(10);
        give(&mut o, &mut w, t(0), t(10));
        let c = ConnView {
            packets_in_flight: 40,
            ..ConnView::default()
        };
        w.cwnd = 1; // after a timeout
        assert!(o.cong_control(t(0), &mut w, &c, &RateSample::default()));
        assert_eq!(w.cwnd, 42);
        assert_eq!(o.ssthresh(t(0), &w, &c), w.ssthresh);
    }

    #[test]
    fn unknown_parameters_are_rejected_by_name() {
        let e = registry::build("oracle", &serde_json::json!({"allowance_ms": 3}))
            .err()
            .unwrap();
        assert!(e.contains("allowance_ms"), "{e}");
    }
}
