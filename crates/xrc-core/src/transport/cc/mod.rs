//! The congestion-control interface. This file holds only the two traits
//! (the controller, [`CongestionControl`], and its configuration, the
//! factory that builds it, [`CcConfig`]) and the types the hooks exchange;
//! the shared Reno helpers live in [`helpers`], the algorithms one per
//! module, and the list of names in [`registry`].
//!
//! The hooks follow Linux's `struct tcp_congestion_ops`
//! (`include/net/tcp.h`, `net/ipv4/tcp_cong.c`), because every loss- and
//! delay-based algorithm we implement is specified by its Linux module:
//!
//! | Linux hook     | here              | required |
//! |----------------|-------------------|----------|
//! | `ssthresh`     | [`CongestionControl::ssthresh`] | yes |
//! | `cong_avoid`   | [`CongestionControl::cong_avoid`] | yes, unless `cong_control` handles every ACK |
//! | `set_state`    | [`CongestionControl::set_state`] | no |
//! | `cwnd_event`   | [`CongestionControl::cwnd_event`] | no |
//! | `in_ack_event` | [`CongestionControl::in_ack_event`] | no |
//! | `pkts_acked`   | [`CongestionControl::pkts_acked`] | no |
//! | `undo_cwnd`    | [`CongestionControl::undo_cwnd`] | no (Reno's rule) |
//! | `cong_control` | [`CongestionControl::cong_control`] | no |
//! | `sk_pacing_rate` | [`CongestionControl::pacing_rate`] | no |
//! | `tcp_rate_skb_sent` (v3's `tx` snapshot) | [`CongestionControl::on_packet_sent`] | no |
//! | `skb_marked_lost` (BBRv3 kernels) | [`CongestionControl::on_packet_lost`] | no |
//! | `cwnd_event(CA_EVENT_TLP_RECOVERY)` (BBRv3 kernels) | [`CongestionControl::on_tlp_recovery`] | no |
//!
//! **Per-packet records** (s2n-quic's model, and what Google's BBRv3 kernel
//! keeps in each skb's `tcp_skb_cb.tx`): when a packet is sent, the
//! framework tells the algorithm what it knows at that instant
//! ([`SentPacket`]) and keeps the [`PacketRecord`] the algorithm returns
//! with the segment, replacing it when the segment is sent again. The
//! record comes back exactly once per event: in the [`RateSample`] of the
//! ACK whose sample the packet is (the most recently sent packet the ACK
//! delivered), and in [`CongestionControl::on_packet_lost`] each time the
//! packet is marked lost. Algorithms that keep nothing return the default
//! (empty) record and never look at it.
//!
//! Two differences from Linux, both so that nothing is read from globals:
//! `now` is passed into every hook, and the window the TCP framework and the
//! algorithm share (`snd_cwnd`, `snd_ssthresh`, `snd_cwnd_cnt`) is a small
//! [`Window`] passed by reference instead of living in a socket. Explicit
//! feedback from the network (the XRC option, later ABC marks, PBE-CC and
//! NATCP reports) arrives through [`CongestionControl::on_feedback`].
//!
//! Windows are counted in segments (full-sized packets), as Linux counts
//! `snd_cwnd`.

pub mod abc;
pub mod bbr;
pub mod copa;
pub mod cubic;
pub mod external;
pub mod helpers;
pub mod illinois;
pub mod nacubic;
pub mod natcp;
pub mod newreno;
pub mod oracle;
pub mod oracle_rate;
pub mod pbe;
pub mod registry;
pub mod roccet;
#[cfg(test)]
mod testkit;
pub mod vegas;
pub mod veno;
pub mod xrc;
pub mod xrc2;

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::net::XrcOption;
use crate::units::{BitRate, SimDuration, SimTime};

/// Linux `TCP_INFINITE_SSTHRESH`.
pub const INFINITE_SSTHRESH: u32 = 0x7fff_ffff;

/// The congestion window state the TCP framework and the algorithm share.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Window {
    /// Congestion window, segments (`snd_cwnd`).
    pub cwnd: u32,
    /// Slow-start threshold, segments (`snd_ssthresh`).
    pub ssthresh: u32,
    /// Fractional additive-increase counter, ACKed segments (`snd_cwnd_cnt`).
    pub cwnd_cnt: u32,
    /// Upper bound on `cwnd`, segments (`snd_cwnd_clamp`).
    pub cwnd_clamp: u32,
}

impl Window {
    pub fn new(initial_cwnd: u32) -> Self {
        Window {
            cwnd: initial_cwnd,
            ssthresh: INFINITE_SSTHRESH,
            cwnd_cnt: 0,
            cwnd_clamp: u32::MAX / 2,
        }
    }
    /// Linux `tcp_in_slow_start`.
    pub fn in_slow_start(&self) -> bool {
        self.cwnd < self.ssthresh
    }
}

/// Linux `enum tcp_ca_state`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum CaState {
    #[default]
    Open,
    /// SACKs or duplicate ACKs seen, no loss decided yet.
    Disorder,
    /// Window reduced by ECN, no loss.
    Cwr,
    /// Fast recovery after a loss detected by (S)ACKs.
    Recovery,
    /// Recovery after a retransmission timeout.
    Loss,
}

/// Linux `enum tcp_ca_event`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CaEvent {
    /// First transmission when no packet is in flight.
    TxStart,
    /// Congestion window restart after idle.
    CwndRestart,
    /// End of a congestion window reduction.
    CompleteCwr,
    /// Retransmission timeout.
    Loss,
    /// ECN: an ACK without / with the ECE flag.
    EcnNoCe,
    EcnIsCe,
}

/// A read-only view of the connection, as an algorithm may consult it.
/// (`Default` is for tests; the framework fills every field.)
#[derive(Clone, Debug, Default)]
pub struct ConnView {
    pub now: SimTime,
    /// Sender maximum segment size, payload bytes.
    pub mss: u32,
    pub snd_una: u64,
    pub snd_nxt: u64,
    /// Segments sent and not cumulatively acknowledged.
    pub packets_out: u32,
    /// Linux `tcp_packets_in_flight`: out − (SACKed + lost) + retransmitted.
    pub packets_in_flight: u32,
    pub srtt: Option<SimDuration>,
    /// Smallest RTT sample since the connection started.
    pub min_rtt: Option<SimDuration>,
    /// Segments delivered (cumulatively or selectively acknowledged).
    pub delivered: u64,
    pub ca_state: CaState,
    /// Linux `tcp_is_cwnd_limited`: the window, not the application, limits sending.
    pub is_cwnd_limited: bool,
    /// The application has nothing more to send right now.
    pub app_limited: bool,
    /// Segments SACKed, marked lost, and retransmitted and in flight
    /// (Linux `sacked_out`, `lost_out`, `retrans_out`).
    pub sacked_out: u32,
    pub lost_out: u32,
    pub retrans_out: u32,
    /// Segments marked lost over the connection's life (Linux `tp->lost`).
    pub lost_total: u64,
    /// When data was last sent (Linux `lsndtime`).
    pub last_send: Option<SimTime>,
    /// The framework paces (Linux: `sk_pacing_status != SK_PACING_NONE`).
    pub pacing: bool,
}

/// Linux `struct ack_sample`: what one ACK acknowledged.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct AckSample {
    /// Segments newly acknowledged (cumulatively or by SACK).
    pub pkts_acked: u32,
    /// RTT from the most recently sent segment this ACK acknowledged that was
    /// never retransmitted (Linux `ca_rtt_us`), or from the timestamp echo.
    pub rtt: Option<SimDuration>,
    /// Packets in flight before this ACK.
    pub in_flight: u32,
}

/// What the framework knows about a packet at the instant it sends it
/// (Linux: the skb as `tcp_rate_skb_sent` sees it).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct SentPacket {
    /// First sequence number and payload bytes.
    pub seq: u64,
    pub len: u32,
    /// A retransmission (including a tail loss probe's).
    pub retransmission: bool,
    /// Packets in flight with this one, as Google's BBRv3 counts them
    /// (`tcp_set_tx_in_flight`: `tcp_packets_in_flight` before the send is
    /// accounted, plus this packet).
    pub in_flight: u32,
    /// Segments delivered so far (Linux `tp->delivered`).
    pub delivered: u64,
    /// Segments marked lost so far (Linux `tp->lost`).
    pub lost: u64,
    /// The connection is application-limited (Linux `tp->app_limited`).
    pub app_limited: bool,
}

/// An algorithm's record of one sent packet, kept by the framework with the
/// segment and handed back on delivery (in the [`RateSample`]) and on loss
/// ([`LostPacket`]). The algorithm chooses what it records; the default
/// records nothing.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct PacketRecord {
    /// Packets in flight when the packet was sent, itself included.
    pub in_flight: u32,
    /// `tp->lost` when the packet was sent.
    pub lost: u64,
    /// The packet was sent while the connection was application-limited.
    pub app_limited: bool,
}

/// A packet just marked lost (Linux `skb_marked_lost`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct LostPacket {
    pub seq: u64,
    pub len: u32,
    /// The record of its latest transmission.
    pub record: PacketRecord,
    /// Segments marked lost over the connection's life, this marking
    /// included (Linux `tp->lost` when the hook runs).
    pub lost_total: u64,
}

/// A delivery-rate sample (Linux `struct rate_sample`, `net/ipv4/tcp_rate.c`).
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct RateSample {
    /// Segments delivered over `interval`; `None` when no valid sample.
    pub delivered: Option<u64>,
    pub interval: SimDuration,
    /// `delivered` of the connection when the sampled packet was sent.
    pub prior_delivered: u64,
    /// When the sampled packet was sent.
    pub prior_time: SimTime,
    pub prior_in_flight: u32,
    /// Segments newly acknowledged or SACKed by this ACK.
    pub acked_sacked: u32,
    /// Segments newly marked lost by this ACK.
    pub losses: u32,
    pub rtt: Option<SimDuration>,
    pub is_app_limited: bool,
    /// This ACK acknowledged a retransmission (Linux `is_retrans`).
    pub is_retrans: bool,
    /// The record of the sampled packet (the most recently sent one this ACK
    /// delivered), if the ACK delivered any: Google's BBRv3 `tcp_rate.c`
    /// takes `rs.tx_in_flight` and `rs.lost` from it.
    pub record: Option<PacketRecord>,
    /// The ACK is exactly at the sequence of an outstanding tail loss
    /// probe's retransmission, so it may be for the original or for the
    /// probe (BBRv3 kernels' `rs.is_acking_tlp_retrans_seq`).
    pub is_acking_tlp_retrans_seq: bool,
}

impl RateSample {
    /// Delivery rate in bytes per second for segments of `mss` bytes.
    pub fn delivery_rate(&self, mss: u32) -> Option<BitRate> {
        let d = self.delivered?;
        if self.interval.is_zero() {
            return None;
        }
        Some(BitRate::from_bytes_over(d * mss as u64, self.interval))
    }
}

/// Flags of the ACK being processed (subset of Linux `CA_ACK_*`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct AckFlags {
    /// Not a pure duplicate: it acknowledged new data or updated the window.
    pub slow_path: bool,
    pub window_update: bool,
    pub ece: bool,
}

/// Explicit network feedback delivered to the sender.
#[derive(Copy, Clone, Debug, PartialEq)]
pub enum Feedback {
    /// The XRC option written by the base station's agent, on an ACK.
    Xrc(XrcOption),
    /// ABC marks echoed on an ACK: how many of the acknowledged data
    /// packets the base station marked accelerate and brake.
    Abc { accelerate: u16, brake: u16 },
    /// The UE's PBE-CC capacity report for this flow, on an ACK, bit/s.
    Pbe { rate_bps: u64 },
    /// A NetAssist report (NATCP), out of band: the UE's bottleneck
    /// bandwidth, the minimum RTT, and the number of flows of the UE.
    NetAssist {
        bw_bps: u64,
        min_rtt: SimDuration,
        flows: u32,
    },
    /// Ground truth with zero delay: the flow's instantaneous fair share of
    /// its UE's capacity and the path's base RTT (`oracle-rate`).
    Oracle { capacity_bps: u64, base_rtt: SimDuration },
    /// The physical-limit oracle's schedule (`oracle`): one full segment
    /// should leave the sender at `at` to reach the bottleneck just before
    /// a delivery opportunity that is the flow's.
    Departure { at: SimTime },
    /// The caller's setpoint for an externally driven flow (`external`),
    /// delivered out of band at a decision point.
    Setpoint(external::Setpoint),
}

/// When the next packet may leave, by the algorithm's own departure
/// schedule ([`CongestionControl::departure`]; Linux's earliest departure
/// time, `skb->tstamp`, which the fq qdisc honours).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Departure {
    /// The algorithm keeps no schedule: the window and pacing decide.
    Free,
    /// One packet may leave now (the window permitting).
    Now,
    /// Nothing may leave before this time: the framework sets its pacing
    /// timer for it.
    At(SimTime),
    /// Nothing may leave until the next feedback (out-of-band reports call
    /// the send loop).
    Hold,
}

/// The network signals an algorithm consumes; the framework turns them on
/// for its flow.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Signals {
    /// Send data ABC-capable, so the base station marks it.
    pub abc: bool,
    /// Ask the UE to write its PBE-CC capacity estimate into ACKs.
    pub pbe: bool,
    /// Subscribe to NetAssist's out-of-band reports.
    pub net_assist: bool,
    /// Receive the oracle's ground truth every TTI (`oracle-rate`).
    pub oracle: bool,
    /// Ask the XRC agent for its air-interface delay estimate in the
    /// option it writes into ACKs (`xrc2`; `ran::agent`).
    pub xrc_air: bool,
    /// Receive the physical-limit oracle's departure schedule (`oracle`):
    /// [`Feedback::Departure`] ahead of each delivery opportunity that is
    /// the flow's.
    pub oracle_schedule: bool,
}

/// An algorithm's configuration: the scenario's `[flows.cc_params]` table
/// for it (unknown keys rejected by serde), `Default` carrying the
/// reference values, and the factory of its controller (quinn's
/// `ControllerFactory`).
pub trait CcConfig: DeserializeOwned + Serialize + Default {
    /// Rejects impossible parameter values, naming the parameter.
    fn validate(&self) -> Result<(), String> {
        Ok(())
    }

    /// The controller for one connection. `stream` is a draw from the
    /// flow's named stream of the master seed; randomized controllers (BBR,
    /// BBRv3) take their randomness from it, the others ignore it.
    fn build(self, stream: u64) -> Box<dyn CongestionControl>;
}

/// One congestion-control algorithm for one connection.
pub trait CongestionControl: Send {
    /// The scheme's registry name (`"cubic"`).
    fn name(&self) -> &'static str;

    /// Called once before the first segment is sent (Linux `init`).
    fn init(&mut self, _now: SimTime, _w: &mut Window, _c: &ConnView) {}

    /// The new slow-start threshold on entering Recovery or Loss (Linux
    /// `ssthresh`). Required.
    fn ssthresh(&mut self, now: SimTime, w: &Window, c: &ConnView) -> u32;

    /// Grows the window on an ACK in Open, Disorder or Loss state (Linux
    /// `cong_avoid`). `acked` is the number of segments newly delivered.
    fn cong_avoid(&mut self, now: SimTime, w: &mut Window, c: &ConnView, acked: u32);

    /// The connection changed congestion state (Linux `set_state`).
    fn set_state(&mut self, _now: SimTime, _w: &mut Window, _c: &ConnView, _new: CaState) {}

    /// Linux `cwnd_event`.
    fn cwnd_event(&mut self, _now: SimTime, _w: &mut Window, _c: &ConnView, _ev: CaEvent) {}

    /// Called for every ACK before the window is adjusted (Linux `in_ack_event`).
    fn in_ack_event(&mut self, _now: SimTime, _w: &mut Window, _c: &ConnView, _flags: AckFlags) {}

    /// An ACK acknowledged new data; carries the RTT sample (Linux `pkts_acked`).
    fn pkts_acked(&mut self, _now: SimTime, _w: &mut Window, _c: &ConnView, _s: &AckSample) {}

    /// The window to restore when the framework finds a reduction spurious
    /// (Linux `undo_cwnd`, called by `tcp_undo_cwnd_reduction`; the default
    /// is Reno's `tcp_reno_undo_cwnd`). `prior_cwnd` is the window before
    /// the reduction. The framework restores ssthresh itself.
    fn undo_cwnd(&mut self, _now: SimTime, w: &Window, prior_cwnd: u32) -> u32 {
        w.cwnd.max(prior_cwnd)
    }

    /// Full control of the window and pacing on every ACK (Linux
    /// `cong_control`). Return `true` if the algorithm handled this ACK; the
    /// framework then skips its own recovery window (PRR) and `cong_avoid`.
    fn cong_control(&mut self, _now: SimTime, _w: &mut Window, _c: &ConnView, _rs: &RateSample) -> bool {
        false
    }

    /// A packet is sent (new data or again): returns the record the
    /// framework keeps with it until the next transmission of the same
    /// segment (Linux `tcp_rate_skb_sent` filling `tcp_skb_cb.tx`). The
    /// default keeps nothing.
    fn on_packet_sent(&mut self, _now: SimTime, _p: &SentPacket) -> PacketRecord {
        PacketRecord::default()
    }

    /// A packet was marked lost, once per marking: newly, or a lost
    /// retransmission marked again (Linux `tcp_mark_skb_lost` calling the
    /// BBRv3 kernels' `skb_marked_lost`, right after counting it in
    /// `tp->lost`).
    fn on_packet_lost(&mut self, _now: SimTime, _w: &Window, _c: &ConnView, _p: &LostPacket) {}

    /// A tail loss probe's retransmission repaired a loss (an ACK beyond the
    /// probe; Linux `tcp_process_tlp_ack` raising `CA_EVENT_TLP_RECOVERY`
    /// in BBRv3 kernels, before the window reduction). `orig` is the record
    /// of the probed segment's transmission before the probe (for
    /// `tp->tlp_orig_data_app_limited`).
    fn on_tlp_recovery(&mut self, _now: SimTime, _w: &Window, _c: &ConnView, _orig: &PacketRecord) {}

    /// The pacing rate the algorithm asks for (Linux `sk_pacing_rate`);
    /// `None` lets the framework decide (no pacing, or its default rule).
    fn pacing_rate(&self) -> Option<BitRate> {
        None
    }

    /// Segments per TSO/GSO burst when the sender paces and `tcp.tso` is
    /// on. An algorithm that runs as a Linux kernel module returns Linux's
    /// size: its own (`ca_ops->tso_segs` / `min_tso_segs`, as BBR) or
    /// `autosize`, the sender's `tcp_tso_autosize` with `tcp_min_tso_segs`
    /// = 2. The default, 1, is for algorithms whose reference is not the
    /// kernel (user-space or simulator implementations): every segment is
    /// paced on its own.
    fn tso_segs(&self, _autosize: u32) -> u32 {
        1
    }

    /// Explicit feedback from the network, delivered before the ACK that
    /// carried it is processed.
    fn on_feedback(&mut self, _now: SimTime, _w: &mut Window, _c: &ConnView, _fb: &Feedback) {}

    /// The algorithm's own departure schedule, asked before every
    /// transmission (new data, retransmission or probe). The default,
    /// [`Departure::Free`], leaves the window and pacing in charge; an
    /// algorithm that answers [`Departure::Now`] is told of the packet by
    /// [`CongestionControl::on_packet_sent`].
    fn departure(&mut self, _now: SimTime) -> Departure {
        Departure::Free
    }

    /// The network signals this algorithm needs (none by default).
    fn signals(&self) -> Signals {
        Signals::default()
    }

    /// A short label of the algorithm's internal mode for traces (e.g.
    /// `"slow_start"`, `"unfair"`); empty by default.
    fn mode(&self) -> &'static str {
        ""
    }

    /// The window the algorithm aims at, segments, if it has one (XRC's
    /// twnd, BBR's BDP estimate), for traces.
    fn target_window(&self) -> Option<f64> {
        None
    }

    /// The algorithm's estimate of queuing delay, if it keeps one (XRC's σ),
    /// for traces.
    fn queuing_delay(&self) -> Option<SimDuration> {
        None
    }

    /// The control port of an algorithm driven from outside
    /// ([`external::External`]); `None` for every other.
    fn external(&mut self) -> Option<&mut external::External> {
        None
    }
}
