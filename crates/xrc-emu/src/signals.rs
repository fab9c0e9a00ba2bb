//! The network-assisted schemes' signals, given to real flows by the
//! emulated base station as the simulator gives them to its senders
//! (`transport::cc::Signals`):
//!
//! - **ABC** (`abc`): data of an ABC flow crosses the base station
//!   ABC-capable, and the core's marker (`ran::abc`) marks each packet
//!   accelerate or brake as it leaves the queue. Linux's receiver cannot
//!   echo such marks, so the base station echoes them itself: it keeps each
//!   flow's marks in sequence order and writes, into the next pure ACK of
//!   that flow going up, how many of the packets the ACK newly acknowledges
//!   were marked accelerate and brake (`wire::abc_option_bytes`: `253 8
//!   "AB" accelerate brake`).
//! - **PBE-CC** (`pbe`): the UE writes its capacity estimate into each ACK
//!   of a PBE flow as the ACK leaves it (`wire::pbe_option_bytes`: `253 8
//!   "PB" kbit/s`), the estimate the core's UE model gives at that instant.
//! - **NetAssist** (`natcp`, `nacubic`): every period the base station
//!   closes each UE's report (`Access::net_assist_report`) and sends it to
//!   every NetAssist flow of that UE as a UDP datagram
//!   (`wire::NetAssistDatagram`) to the flow's sender, after the configured
//!   delay and with the configured loss (the simulator's
//!   `cell.net_assist`), from the UE's address to the report port, where
//!   the shim's agent listens.
//!
//! Flows are recognised by their UE-side port, as `Options::air_ports`.
//!
//! Deviations from the simulator, numbered:
//! 1. ABC's echo is written by the base station, not by the receiver: the
//!    simulator's receiver puts on each ACK the marks of the data packets
//!    it received since its previous ACK; here an ACK carries the marks of
//!    the packets its cumulative acknowledgement newly covers (the same
//!    packets, unless they were reordered or lost), counted when the ACK
//!    crosses the base station. An ACK with no marks to echo carries none
//!    (the simulator's sender ignores an echo of zero marks too).
//! 2. A short option that does not fit into the ACK (40 bytes of options
//!    used) is not written and is counted; the simulator's ACK has no
//!    size limit.
//! 3. A NetAssist report's minimum RTT travels in whole microseconds.

use std::collections::{HashMap, VecDeque};

use xrc_core::engine::{Rng, RngStreams};
use xrc_core::net::wire::{self, NetAssistDatagram};
use xrc_core::net::AbcMark;
use xrc_core::units::{SimDuration, SimTime};

use crate::access::AccessHandle;

/// NetAssist's reports (the scenario's `cell.net_assist`).
#[derive(Clone, Debug, PartialEq)]
pub struct NetAssistOptions {
    /// UE-side ports of the flows whose senders subscribe.
    pub ports: Vec<u16>,
    /// Report period, delay from the base station to the sender, ns.
    pub period_ns: u64,
    pub delay_ns: u64,
    /// Probability that a report is lost.
    pub loss: f64,
    /// The wired part of the minimum RTT (twice the Internet delay), ns.
    pub wired_rtt_ns: u64,
    /// UDP port of the senders' agent.
    pub report_port: u16,
    /// The scenario's master seed (the loss draws use its stream
    /// `netassist/loss`, as the simulator's).
    pub seed: u64,
}

/// Which flows get which signal.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SignalOptions {
    /// UE-side ports of ABC flows, and of PBE-CC flows.
    pub abc_ports: Vec<u16>,
    pub pbe_ports: Vec<u16>,
    pub net_assist: Option<NetAssistOptions>,
}

impl SignalOptions {
    pub fn is_empty(&self) -> bool {
        self.abc_ports.is_empty() && self.pbe_ports.is_empty() && self.net_assist.is_none()
    }
    /// A flow with this UE-side port gets one of the short options on its
    /// ACKs (instead of XRC's).
    pub fn writes_on_acks(&self, ue_port: u16) -> bool {
        self.abc_ports.contains(&ue_port) || self.pbe_ports.contains(&ue_port)
    }
}

/// What the signals did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SignalCounters {
    /// Data packets marked accelerate and brake.
    pub abc_accelerate: u64,
    pub abc_brake: u64,
    /// ACKs written with ABC's echo, and echoes with no room.
    pub abc_echoes: u64,
    pub abc_no_room: u64,
    /// ACKs written with PBE-CC's report, and reports with no room.
    pub pbe_written: u64,
    pub pbe_no_room: u64,
    /// NetAssist reports sent, and lost on purpose (`loss`).
    pub reports_sent: u64,
    pub reports_lost: u64,
}

/// A NetAssist flow: its UE and its two ends.
#[derive(Clone, Copy, Debug)]
struct NaFlow {
    ue: usize,
    sender: ([u8; 4], u16),
    receiver: ([u8; 4], u16),
}

/// The signals' state.
pub struct Signals {
    opts: SignalOptions,
    /// Per flow, the marks of the data released toward the UE: (end
    /// sequence number, accelerate?), in release order.
    marks: HashMap<u32, VecDeque<(u32, bool)>>,
    na_flows: Vec<NaFlow>,
    next_tick: Option<u64>,
    /// Reports on their way to the senders: (due, packet).
    pending: VecDeque<(u64, Vec<u8>)>,
    rng: Option<Rng>,
    pub counters: SignalCounters,
}

/// Source port of the reports (the base station's).
pub const REPORT_SOURCE_PORT: u16 = 5252;

impl Signals {
    pub fn new(opts: SignalOptions) -> Signals {
        let next_tick = opts.net_assist.as_ref().map(|n| n.period_ns);
        let rng = opts
            .net_assist
            .as_ref()
            .map(|n| RngStreams::new(n.seed).stream("netassist/loss"));
        Signals {
            opts,
            marks: HashMap::new(),
            na_flows: Vec::new(),
            next_tick,
            pending: VecDeque::new(),
            rng,
            counters: SignalCounters::default(),
        }
    }

    pub fn options(&self) -> &SignalOptions {
        &self.opts
    }

    /// Turns on the base station's side of the signals asked for.
    pub fn enable(&self, cell: &AccessHandle) {
        if !self.opts.abc_ports.is_empty() {
            cell.enable_abc();
        }
        if !self.opts.pbe_ports.is_empty() {
            cell.enable_pbe();
        }
        if self.opts.net_assist.is_some() {
            cell.enable_net_assist();
        }
    }

    pub fn is_abc(&self, ue_port: u16) -> bool {
        self.opts.abc_ports.contains(&ue_port)
    }
    pub fn is_pbe(&self, ue_port: u16) -> bool {
        self.opts.pbe_ports.contains(&ue_port)
    }

    /// A data packet going down: a NetAssist flow's ends are noted the
    /// first time.
    pub fn on_data_in(&mut self, ue: usize, src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16) {
        let Some(na) = &self.opts.net_assist else { return };
        if !na.ports.contains(&dport) {
            return;
        }
        if self
            .na_flows
            .iter()
            .any(|f| f.sender == (src, sport) && f.receiver == (dst, dport))
        {
            return;
        }
        self.na_flows.push(NaFlow {
            ue,
            sender: (src, sport),
            receiver: (dst, dport),
        });
    }

    /// A data packet of capture flow `flow`, ending at sequence number
    /// `end_seq`, left the base station toward the UE with mark `mark`.
    pub fn on_data_out(&mut self, flow: u32, end_seq: u32, mark: AbcMark) {
        let accel = match mark {
            AbcMark::Accelerate => true,
            AbcMark::Brake => false,
            _ => return,
        };
        if accel {
            self.counters.abc_accelerate += 1;
        } else {
            self.counters.abc_brake += 1;
        }
        self.marks.entry(flow).or_default().push_back((end_seq, accel));
    }

    /// The marks a pure ACK of `flow` acknowledging up to `ack` echoes:
    /// (accelerates, brakes) of the packets it newly covers, `None` when
    /// there are none.
    pub fn abc_echo(&mut self, flow: u32, ack: u32) -> Option<(u16, u16)> {
        let q = self.marks.get_mut(&flow)?;
        let (mut a, mut b) = (0u16, 0u16);
        // Sequence numbers compare modulo 2^32 (RFC 9293 §3.4).
        while q.front().is_some_and(|&(end, _)| (ack.wrapping_sub(end) as i32) >= 0) {
            let (_, accel) = q.pop_front().expect("front");
            if accel {
                a = a.saturating_add(1);
            } else {
                b = b.saturating_add(1);
            }
        }
        (a > 0 || b > 0).then_some((a, b))
    }

    /// When the signals next need the loop: a report period closing or a
    /// report due at its sender, model ns.
    pub fn next_wakeup(&self) -> Option<u64> {
        let due = self.pending.front().map(|p| p.0);
        match (self.next_tick, due) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Closes every report period up to model time `now` (each UE's, as
    /// the simulator does) and queues the reports of the subscribed flows.
    pub fn tick(&mut self, now: u64, cell: &AccessHandle) {
        let Some(na) = self.opts.net_assist.clone() else { return };
        while let Some(t) = self.next_tick.filter(|&t| t <= now) {
            let at = SimTime::from_nanos(t);
            let wired = SimDuration::from_nanos(na.wired_rtt_ns);
            for ue in 0..cell.num_ues() {
                let Some(r) = cell.net_assist_report(ue, at, wired) else {
                    continue;
                };
                for f in self.na_flows.iter().filter(|f| f.ue == ue) {
                    if na.loss > 0.0 && self.rng.as_mut().is_some_and(|g| g.bernoulli(na.loss)) {
                        self.counters.reports_lost += 1;
                        continue;
                    }
                    let d = NetAssistDatagram {
                        sender: f.sender,
                        receiver: f.receiver,
                        bw_bps: r.bw_bps,
                        min_rtt_us: (r.min_rtt.as_nanos() / 1000).min(u32::MAX as u64) as u32,
                        flows: r.flows.min(u16::MAX as u32) as u16,
                    };
                    let pkt = udp_packet(
                        f.receiver.0,
                        f.sender.0,
                        REPORT_SOURCE_PORT,
                        na.report_port,
                        &d.to_bytes(),
                    );
                    self.pending.push_back((t + na.delay_ns, pkt));
                }
            }
            self.next_tick = Some(t + na.period_ns);
        }
    }

    /// The reports due at their senders by model time `now`, in order.
    pub fn take_due(&mut self, now: u64, out: &mut Vec<Vec<u8>>) {
        while self.pending.front().is_some_and(|p| p.0 <= now) {
            out.push(self.pending.pop_front().expect("front").1);
            self.counters.reports_sent += 1;
        }
    }
}

/// An IPv4 UDP datagram from `src:sport` to `dst:dport` carrying
/// `payload`, with its header checksum and UDP checksum (RFC 768, RFC 791).
pub fn udp_packet(src: [u8; 4], dst: [u8; 4], sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let udp_len = 8 + payload.len();
    let total = 20 + udp_len;
    let mut b = vec![0u8; total];
    b[0] = 0x45;
    b[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    b[6] = 0x40; // Don't Fragment
    b[8] = 64;
    b[9] = 17; // UDP
    b[12..16].copy_from_slice(&src);
    b[16..20].copy_from_slice(&dst);
    let c = wire::fold(wire::sum16(0, &b[..20]));
    b[10..12].copy_from_slice(&c.to_be_bytes());
    b[20..22].copy_from_slice(&sport.to_be_bytes());
    b[22..24].copy_from_slice(&dport.to_be_bytes());
    b[24..26].copy_from_slice(&(udp_len as u16).to_be_bytes());
    b[28..].copy_from_slice(payload);
    let pseudo = wire::sum16(0, &src) + wire::sum16(0, &dst) + 17 + udp_len as u32;
    let mut c = wire::fold(wire::sum16(pseudo, &b[20..]));
    if c == 0 {
        c = 0xffff; // RFC 768: a computed zero is sent as all ones
    }
    b[26..28].copy_from_slice(&c.to_be_bytes());
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ack_echoes_the_marks_of_the_packets_it_newly_acknowledges_and_no_others() {
        let mut s = Signals::new(SignalOptions::default());
        for (k, m) in [
            AbcMark::Accelerate,
            AbcMark::Brake,
            AbcMark::Accelerate,
            AbcMark::Capable,
        ]
        .into_iter()
        .enumerate()
        {
            s.on_data_out(7, 1448 * (k as u32 + 1), m);
        }
        assert_eq!(s.abc_echo(7, 1000), None, "covers no packet");
        assert_eq!(s.abc_echo(7, 2 * 1448), Some((1, 1)));
        assert_eq!(s.abc_echo(7, 2 * 1448), None, "nothing new");
        assert_eq!(
            s.abc_echo(7, 4 * 1448),
            Some((1, 0)),
            "the unmarked packet counts for nothing"
        );
        assert_eq!(s.abc_echo(8, 4 * 1448), None, "another flow");
        assert_eq!((s.counters.abc_accelerate, s.counters.abc_brake), (2, 1));
    }

    #[test]
    fn marks_are_echoed_across_the_sequence_number_wrap() {
        let mut s = Signals::new(SignalOptions::default());
        s.on_data_out(1, u32::MAX - 100, AbcMark::Brake);
        s.on_data_out(1, 1348, AbcMark::Accelerate);
        assert_eq!(s.abc_echo(1, 1348), Some((1, 1)));
    }

    #[test]
    fn a_report_datagram_has_valid_checksums_and_carries_the_report() {
        let d = NetAssistDatagram {
            sender: ([10, 77, 0, 1], 41_000),
            receiver: ([10, 77, 0, 2], 5201),
            bw_bps: 12_000_000,
            min_rtt_us: 40_000,
            flows: 1,
        };
        let p = udp_packet([10, 77, 0, 2], [10, 77, 0, 1], REPORT_SOURCE_PORT, 5299, &d.to_bytes());
        assert_eq!(p.len(), 20 + 8 + 32);
        assert_eq!(wire::fold(wire::sum16(0, &p[..20])), 0, "IPv4 header checksum");
        let pseudo = wire::sum16(0, &p[12..20]) + 17 + (p.len() as u32 - 20);
        assert_eq!(wire::fold(wire::sum16(pseudo, &p[20..])), 0, "UDP checksum");
        assert_eq!(NetAssistDatagram::parse(&p[28..]), Ok(d));
        assert_eq!(u16::from_be_bytes([p[22], p[23]]), 5299);
    }
}
