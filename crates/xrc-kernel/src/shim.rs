//! The shim's user-space agent: the core's own congestion controls on real
//! kernel sockets.
//!
//! The BPF congestion control `xrc_shim` (`bpf/shim.bpf.c`) reports every
//! ACK of every socket that uses it as ordered events (`abi::ShimEvent`:
//! PRE, then SSTHRESH / SET_STATE / CWND_EVENT / UNDO, then POST) and
//! applies the decision this agent writes back into the `shim_decisions`
//! map at the socket's next ACK. The agent keeps, per socket, the scheme's
//! controller (`registry::build`, the very code `xrc run` runs) and the
//! window it shares with it, and calls the controller's hooks in the order
//! the simulator's sender does (`transport/sender/ack.rs`):
//!
//! | event | hooks |
//! |---|---|
//! | INIT | `init` |
//! | PRE | `on_feedback` (the base station's option, ABC's marks, PBE-CC's report, when they came), `in_ack_event`, `pkts_acked` |
//! | SSTHRESH | `ssthresh` |
//! | SET_STATE | `set_state` |
//! | CWND_EVENT | `cwnd_event` |
//! | UNDO | `undo_cwnd` |
//! | POST | `cong_control`, or `cong_avoid` outside Recovery when `snd_una` advanced |
//!
//! The agent keeps its own copy of the window across events and writes it,
//! whole, after each; the shim sets it at the socket's next ACK. Each event
//! carries the window the shim last set: where the kernel's differs, the
//! kernel changed it on its own (proportional rate reduction, the end of a
//! recovery, a timeout), and the agent takes the kernel's, so the kernel's
//! recovery is the controller's starting point, as in the simulator, where
//! the framework and the controller share one window.
//!
//! Which scheme a socket runs is chosen by its remote port ([`Rule`]), or
//! the default rule; a socket matching none runs the default scheme.
//!
//! **Out-of-band reports** (NATCP's and NACubic's NetAssist): a report for
//! a socket ([`Agent::on_report`], from a UDP datagram,
//! `wire::NetAssistDatagram`) goes to its controller's `on_feedback` when
//! it arrives, and the agent writes a decision at once, marked as made on a
//! report (`ShimDecision::oob`), which the shim applies at the socket's
//! next ACK, as it applies any decision. (The simulator's sender acts on a
//! report at once: it may send without waiting for an ACK.)
//!
//! **Decision lag**: for each POST, the time from the kernel's event to the
//! decision being in the map (the agent's side), kept as a distribution;
//! the BPF side counts ACKs that found the agent one event behind
//! (`SC_STALE`).

use std::collections::HashMap;
use std::os::fd::RawFd;

use xrc_core::net::XrcOption;
use xrc_core::transport::cc::{
    registry, AckFlags, AckSample, CaEvent, CaState, CongestionControl, ConnView, Feedback, RateSample, Window,
};
use xrc_core::units::{SimDuration, SimTime};

use crate::abi::{self, SockKey};
use crate::bpf;

/// Which scheme the sockets to a remote port run (`port: None`: every
/// other socket).
#[derive(Clone, Debug, PartialEq)]
pub struct Rule {
    pub port: Option<u16>,
    pub scheme: String,
    pub params: serde_json::Value,
}

/// A 32-bit kernel counter unwrapped into 64 bits.
#[derive(Clone, Copy, Debug)]
struct Unwrap {
    last32: u32,
    last64: u64,
}

impl Unwrap {
    fn new(v: u32) -> Self {
        Unwrap {
            last32: v,
            last64: 1 << 32,
        }
    }
    fn at(&mut self, v: u32) -> u64 {
        let d = v.wrapping_sub(self.last32) as i32 as i64;
        self.last64 = (self.last64 as i64 + d) as u64;
        self.last32 = v;
        self.last64
    }
}

struct Conn {
    scheme: String,
    cc: Box<dyn CongestionControl>,
    w: Window,
    una: Unwrap,
    nxt: Unwrap,
    delivered: Unwrap,
    lost: Unwrap,
    last_una: u64,
    min_rtt: Option<SimDuration>,
    controls: bool,
    events: u64,
    closed: bool,
    /// The latest event, for a report's view of the connection.
    last: abi::ShimEvent,
    /// Decisions made on reports so far (modulo 256).
    oob: u8,
    /// POSTs after which the controller was in each mode.
    modes: Vec<(&'static str, u64)>,
}

/// What the agent did, for `status` and the run directory.
#[derive(Clone, Debug, Default)]
pub struct AgentReport {
    pub events: u64,
    pub decisions: u64,
    /// Events the agent could not use (unknown socket, malformed).
    pub skipped: u64,
    /// Sockets taken over at an event other than their INIT, which the
    /// agent never saw (see `Agent::on_event`).
    pub adopted: u64,
    /// Sockets seen, with their scheme and event count, by 4-tuple.
    pub sockets: Vec<(SockKey, String, u64, bool)>,
    /// Per socket (in the order of `sockets`), the controller's mode
    /// (`CongestionControl::mode`) after each POST: (mode, POSTs), the
    /// most frequent first; empty for schemes that name no mode.
    pub modes: Vec<Vec<(&'static str, u64)>>,
    /// Decision lag of each POST, ns (event in the kernel to decision in
    /// the map), sorted.
    pub lag_ns: Vec<u64>,
    /// Controllers that could not be built (scheme, message).
    pub errors: Vec<String>,
    /// Out-of-band reports received, those handed to a socket's
    /// controller, and those for no socket the agent knows.
    pub reports: u64,
    pub reports_applied: u64,
    pub reports_unknown: u64,
    /// Datagrams on the report port that were not a report (the reason of
    /// the last one).
    pub reports_malformed: u64,
    pub last_malformed: Option<String>,
}

impl AgentReport {
    /// The `q`-quantile of the decision lag, ns.
    pub fn lag_quantile(&self, q: f64) -> Option<u64> {
        if self.lag_ns.is_empty() {
            return None;
        }
        let i = ((self.lag_ns.len() - 1) as f64 * q).round() as usize;
        Some(self.lag_ns[i])
    }
}

pub(crate) fn monotonic_ns() -> u64 {
    // SAFETY: clock_gettime writes into the struct.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn ca_state(v: u8) -> CaState {
    match v {
        1 => CaState::Disorder,
        2 => CaState::Cwr,
        3 => CaState::Recovery,
        4 => CaState::Loss,
        _ => CaState::Open,
    }
}

fn ca_event(v: u8) -> Option<CaEvent> {
    Some(match v {
        0 => CaEvent::TxStart,
        1 => CaEvent::CwndRestart,
        2 => CaEvent::CompleteCwr,
        3 => CaEvent::Loss,
        4 => CaEvent::EcnNoCe,
        5 => CaEvent::EcnIsCe,
        _ => return None,
    })
}

/// Events of a socket (its `seq`) after which the agent takes over a
/// socket it has had no INIT for: an active open's INIT came third (after
/// the SYN-ACK's PRE and POST) in every run looked at.
const ADOPT_AFTER: u64 = 8;

/// The agent's state: every socket's controller.
pub struct Agent {
    rules: Vec<Rule>,
    conns: HashMap<SockKey, Conn>,
    decisions_fd: RawFd,
    pub report: AgentReport,
}

impl Agent {
    pub fn new(rules: Vec<Rule>, decisions_fd: RawFd) -> Agent {
        Agent {
            rules,
            conns: HashMap::new(),
            decisions_fd,
            report: AgentReport::default(),
        }
    }

    fn rule_for(&self, k: &SockKey) -> Option<&Rule> {
        self.rules
            .iter()
            .find(|r| r.port == Some(k.dport))
            .or_else(|| self.rules.iter().find(|r| r.port.is_none()))
    }

    /// Handles one event's bytes.
    pub fn on_event(&mut self, bytes: &[u8]) {
        let Some(e) = abi::ShimEvent::from_bytes(bytes) else {
            self.report.skipped += 1;
            return;
        };
        self.report.events += 1;
        let now = SimTime::from_nanos(e.now_ns);
        if e.kind == abi::SE_INIT {
            if self.open(now, &e) {
                self.decide(&e, false);
            }
            return;
        }
        if !self.conns.contains_key(&e.key) {
            // The first events of an active open come before its INIT (the
            // SYN-ACK goes through tcp_ack, and its ACK hooks, before
            // tcp_finish_connect calls `init`): skipped. A socket still
            // unknown past ADOPT_AFTER events missed its INIT, and would
            // otherwise run the shim's fallback, Reno, for its whole life
            // with every event skipped: take it over at this event, its
            // controller starting from the window the kernel has now, and
            // count it.
            if e.kind == abi::SE_RELEASE || e.seq <= ADOPT_AFTER {
                self.report.skipped += 1;
                return;
            }
            if !self.open(now, &e) {
                return;
            }
            self.report.adopted += 1;
        }
        self.on_known(now, &e);
    }

    /// Builds the controller of the socket of event `e` from its rule and
    /// the window the kernel reports; `false` when no rule covers it or the
    /// rule's scheme refuses its parameters (an error in the report).
    fn open(&mut self, now: SimTime, e: &abi::ShimEvent) -> bool {
        {
            let Some(rule) = self.rule_for(&e.key).cloned() else {
                self.report.skipped += 1;
                return false;
            };
            let cc = match registry::build(&rule.scheme, &rule.params) {
                Ok(cc) => cc,
                Err(m) => {
                    // (Shim::load checked every rule's parameters.)
                    let m = format!("{}: {m}", rule.scheme);
                    if !self.report.errors.contains(&m) {
                        self.report.errors.push(m);
                    }
                    self.report.skipped += 1;
                    return false;
                }
            };
            let mut c = Conn {
                scheme: rule.scheme,
                cc,
                w: Window {
                    cwnd: e.cwnd,
                    ssthresh: e.ssthresh,
                    cwnd_cnt: 0,
                    cwnd_clamp: u32::MAX / 2,
                },
                una: Unwrap::new(e.snd_una),
                nxt: Unwrap::new(e.snd_nxt),
                delivered: Unwrap::new(e.delivered),
                lost: Unwrap::new(e.lost),
                last_una: 1 << 32,
                min_rtt: None,
                controls: false,
                // The INIT counts here; any other event in `on_known`.
                events: u64::from(e.kind == abi::SE_INIT),
                closed: false,
                last: *e,
                oob: 0,
                modes: Vec::new(),
            };
            let view = c.view(now, e);
            c.cc.init(now, &mut c.w, &view);
            self.conns.insert(e.key, c);
            true
        }
    }

    /// An event of a socket the agent knows.
    fn on_known(&mut self, now: SimTime, e: &abi::ShimEvent) {
        let e = *e;
        let Some(c) = self.conns.get_mut(&e.key) else {
            self.report.skipped += 1;
            return;
        };
        c.events += 1;
        c.last = e;
        if e.applied_cwnd == 0 || e.cwnd != e.applied_cwnd {
            c.w.cwnd = e.cwnd;
        }
        if e.applied_ssthresh == 0 || e.ssthresh != e.applied_ssthresh {
            c.w.ssthresh = e.ssthresh;
        }
        let view = c.view(now, &e);
        match e.kind {
            abi::SE_PRE => {
                if e.flags & abi::SF_FEEDBACK != 0 {
                    let fb = XrcOption {
                        rate_bps: e.fb_rate_kbps as u64 * 1000,
                        hol: SimDuration::from_nanos(e.fb_hol_tenths as u64 * 100_000),
                        air: (e.fb_air_tenths != abi::ABSENT)
                            .then(|| SimDuration::from_nanos(e.fb_air_tenths as u64 * 100_000)),
                        room: (e.fb_room != abi::ABSENT).then_some(e.fb_room as u16),
                    };
                    c.cc.on_feedback(now, &mut c.w, &view, &Feedback::Xrc(fb));
                }
                if e.flags2 & abi::SF2_ABC != 0 && (e.fb_abc_accel > 0 || e.fb_abc_brake > 0) {
                    let fb = Feedback::Abc {
                        accelerate: e.fb_abc_accel,
                        brake: e.fb_abc_brake,
                    };
                    c.cc.on_feedback(now, &mut c.w, &view, &fb);
                }
                if e.flags2 & abi::SF2_PBE != 0 {
                    let fb = Feedback::Pbe {
                        rate_bps: e.fb_pbe_kbps as u64 * 1000,
                    };
                    c.cc.on_feedback(now, &mut c.w, &view, &fb);
                }
                let flags = AckFlags {
                    slow_path: e.flags & abi::SF_SLOW_PATH != 0,
                    window_update: e.flags & abi::SF_WIN_UPDATE != 0,
                    ece: e.flags & abi::SF_ECE != 0,
                };
                c.cc.in_ack_event(now, &mut c.w, &view, flags);
                if e.flags & abi::SF_HAS_SAMPLE != 0 {
                    let rtt = (e.rtt_us >= 0).then(|| SimDuration::from_micros(e.rtt_us as u64));
                    if let Some(r) = rtt {
                        c.min_rtt = Some(c.min_rtt.map_or(r, |m| m.min(r)));
                    }
                    let s = AckSample {
                        pkts_acked: e.pkts_acked,
                        rtt,
                        in_flight: e.in_flight,
                    };
                    c.cc.pkts_acked(now, &mut c.w, &view, &s);
                }
            }
            abi::SE_SSTHRESH => c.w.ssthresh = c.cc.ssthresh(now, &c.w, &view),
            abi::SE_SET_STATE => c.cc.set_state(now, &mut c.w, &view, ca_state(e.arg)),
            abi::SE_CWND_EVENT => {
                if let Some(ev) = ca_event(e.arg) {
                    c.cc.cwnd_event(now, &mut c.w, &view, ev);
                }
            }
            abi::SE_UNDO => c.w.cwnd = c.cc.undo_cwnd(now, &c.w, e.pkts_acked),
            abi::SE_POST => {
                let delivered = view.delivered;
                let rs = RateSample {
                    delivered: (e.rs_delivered > 0 && e.rs_interval_us > 0).then_some(e.rs_delivered as u64),
                    interval: SimDuration::from_micros(e.rs_interval_us as u64),
                    prior_delivered: delivered.saturating_sub(e.delivered.wrapping_sub(e.rs_prior_delivered) as u64),
                    prior_time: SimTime::from_nanos(e.now_ns.saturating_sub(e.rs_interval_us as u64 * 1000)),
                    prior_in_flight: e.rs_prior_in_flight,
                    acked_sacked: e.rs_acked_sacked,
                    losses: e.rs_losses,
                    rtt: (e.rtt_us >= 0).then(|| SimDuration::from_micros(e.rtt_us as u64)),
                    is_app_limited: e.flags & abi::SF_APP_LIMITED != 0,
                    is_retrans: e.flags & abi::SF_RETRANS != 0,
                    record: None,
                    is_acking_tlp_retrans_seq: false,
                };
                let advanced = view.snd_una > c.last_una;
                c.last_una = view.snd_una;
                if c.cc.cong_control(now, &mut c.w, &view, &rs) {
                    c.controls = true;
                } else if view.ca_state != CaState::Recovery && view.ca_state != CaState::Cwr && advanced {
                    c.cc.cong_avoid(now, &mut c.w, &view, e.rs_acked_sacked);
                }
                let m = c.cc.mode();
                if !m.is_empty() {
                    match c.modes.iter_mut().find(|x| x.0 == m) {
                        Some(x) => x.1 += 1,
                        None => c.modes.push((m, 1)),
                    }
                }
            }
            abi::SE_RELEASE => {
                c.closed = true;
                return;
            }
            _ => {
                self.report.skipped += 1;
                return;
            }
        }
        self.decide(&e, e.kind == abi::SE_POST);
    }

    /// An out-of-band report for the socket `key` (its local address and
    /// port, remote address and port) received at `now_ns` (the kernel's
    /// monotonic clock, as the events'): handed to its controller, and a
    /// decision written at once.
    pub fn on_report(&mut self, now_ns: u64, key: SockKey, fb: Feedback) {
        self.report.reports += 1;
        let now = SimTime::from_nanos(now_ns);
        let Some(c) = self.conns.get_mut(&key) else {
            self.report.reports_unknown += 1;
            return;
        };
        if c.closed {
            self.report.reports_unknown += 1;
            return;
        }
        let e = c.last;
        let mut view = c.view(now, &e);
        view.now = now;
        c.cc.on_feedback(now, &mut c.w, &view, &fb);
        c.oob = c.oob.wrapping_add(1);
        self.report.reports_applied += 1;
        self.decide(&e, false);
    }

    /// A datagram on the report port that is not a report.
    pub fn on_malformed_report(&mut self, why: String) {
        self.report.reports_malformed += 1;
        self.report.last_malformed = Some(why);
    }

    /// Writes the socket's decision after event `e`: its window and
    /// slow-start threshold, its pacing rate, and whether it sets the window
    /// itself.
    fn decide(&mut self, e: &abi::ShimEvent, post: bool) {
        let Some(c) = self.conns.get(&e.key) else { return };
        let d = abi::ShimDecision {
            seq: e.seq,
            event_ns: e.now_ns,
            pacing_bps: c.cc.pacing_rate().map_or(0, |r| r.bps()),
            cwnd: c.w.cwnd.max(1),
            ssthresh: c.w.ssthresh,
            controls: c.controls as u8,
            oob: c.oob,
            min_tso_segs: min_tso_segs(c.cc.as_ref()),
            pad: [0; 5],
        };
        // SAFETY: SockKey and ShimDecision are the map's key and value.
        if unsafe { bpf::update(self.decisions_fd, &e.key, &d) }.is_ok() {
            self.report.decisions += 1;
            if post {
                self.report.lag_ns.push(monotonic_ns().saturating_sub(e.now_ns));
            }
        }
    }

    /// The report, with the sockets and the lag sorted.
    pub fn finish(mut self) -> AgentReport {
        let mut socks: Vec<_> = self
            .conns
            .iter()
            .map(|(k, c)| {
                let mut m = c.modes.clone();
                m.sort_by_key(|x| std::cmp::Reverse(x.1));
                ((*k, c.scheme.clone(), c.events, c.closed), m)
            })
            .collect();
        socks.sort_by_key(|s| (s.0 .0.dport, s.0 .0.sport));
        (self.report.sockets, self.report.modes) = socks.into_iter().unzip();
        self.report.lag_ns.sort_unstable();
        self.report
    }
}

/// The algorithm's TSO burst as the simulator's sender takes it
/// (`CongestionControl::tso_segs`, given Linux's default autosize of 2
/// segments at cellular rates), for the kernel's `min_tso_segs` hook: 1 for
/// the algorithms whose reference is not the kernel (each segment paced on
/// its own, as the simulator paces them), Linux's 2 for the kernel's own
/// (or the algorithm's own goal, BBR's).
fn min_tso_segs(cc: &dyn CongestionControl) -> u8 {
    cc.tso_segs(2).clamp(1, u8::MAX as u32) as u8
}

impl Conn {
    fn view(&mut self, now: SimTime, e: &abi::ShimEvent) -> ConnView {
        ConnView {
            now,
            mss: e.mss,
            snd_una: self.una.at(e.snd_una),
            snd_nxt: self.nxt.at(e.snd_nxt),
            packets_out: e.packets_out,
            packets_in_flight: e.in_flight,
            srtt: (e.srtt_us > 0).then(|| SimDuration::from_micros(e.srtt_us as u64)),
            min_rtt: self.min_rtt,
            delivered: self.delivered.at(e.delivered),
            ca_state: ca_state(e.ca_state),
            is_cwnd_limited: e.flags & abi::SF_CWND_LIMITED != 0,
            app_limited: false,
            sacked_out: e.sacked_out,
            lost_out: e.lost_out,
            retrans_out: e.retrans_out,
            lost_total: self.lost.at(e.lost),
            last_send: None,
            pacing: self.cc.pacing_rate().is_some(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(port: Option<u16>, scheme: &str) -> Rule {
        Rule {
            port,
            scheme: scheme.into(),
            params: serde_json::json!({}),
        }
    }

    fn event(kind: u8, dport: u16, seq: u64) -> Vec<u8> {
        let e = abi::ShimEvent {
            now_ns: 1_000_000 * seq,
            seq,
            key: SockKey {
                saddr: 0x0100_000a,
                daddr: 0x0200_000a,
                sport: 40_000,
                dport,
                pad: 0,
            },
            kind,
            cwnd: 10,
            ssthresh: u32::MAX / 2,
            mss: 1448,
            ..Default::default()
        };
        // SAFETY: ShimEvent is plain data; its bytes are what the ring
        // buffer carries.
        unsafe {
            std::slice::from_raw_parts(
                &e as *const abi::ShimEvent as *const u8,
                std::mem::size_of::<abi::ShimEvent>(),
            )
        }
        .to_vec()
    }

    // No decisions map here (fd -1): the decisions are not written, the
    // agent's own state is what is checked.
    #[test]
    fn a_socket_whose_init_the_agent_missed_is_taken_over_at_its_next_event_not_left_on_reno() {
        let mut a = Agent::new(vec![rule(Some(5201), "vegas")], -1);
        for seq in 1..=10 {
            a.on_event(&event(if seq % 2 == 1 { abi::SE_PRE } else { abi::SE_POST }, 5201, seq));
        }
        let r = a.finish();
        assert_eq!((r.adopted, r.skipped), (1, 8), "{r:?}");
        assert_eq!(r.sockets.len(), 1);
        assert_eq!((r.sockets[0].1.as_str(), r.sockets[0].2), ("vegas", 2));
    }

    #[test]
    fn the_events_an_active_open_sends_before_its_init_are_skipped_and_no_socket_is_adopted() {
        // The SYN-ACK's PRE and POST, then INIT, then the transfer.
        let mut a = Agent::new(vec![rule(Some(5201), "vegas")], -1);
        a.on_event(&event(abi::SE_PRE, 5201, 1));
        a.on_event(&event(abi::SE_POST, 5201, 2));
        a.on_event(&event(abi::SE_INIT, 5201, 3));
        for seq in 4..=20 {
            a.on_event(&event(abi::SE_POST, 5201, seq));
        }
        let r = a.finish();
        assert_eq!((r.adopted, r.skipped), (0, 2), "{r:?}");
        assert_eq!(r.sockets[0].2, 18);
    }

    fn with(kind: u8, dport: u16, seq: u64, f: impl FnOnce(&mut abi::ShimEvent)) -> Vec<u8> {
        let mut e = abi::ShimEvent::from_bytes(&event(kind, dport, seq)).expect("an event");
        f(&mut e);
        // SAFETY: as in `event`.
        unsafe {
            std::slice::from_raw_parts(
                &e as *const abi::ShimEvent as *const u8,
                std::mem::size_of::<abi::ShimEvent>(),
            )
        }
        .to_vec()
    }

    /// ABC's window after one ACK of 4 segments that echoes `accel`
    /// accelerates and `brake` brakes.
    fn abc_window_after(accel: u16, brake: u16) -> u32 {
        // tcp_abc.c's single window (the two-window default also holds
        // CUBIC's, which the marks do not move).
        let r = Rule {
            params: serde_json::json!({"non_abc_window": false}),
            ..rule(Some(5201), "abc")
        };
        let mut a = Agent::new(vec![r], -1);
        a.on_event(&event(abi::SE_INIT, 5201, 1));
        a.on_event(&with(abi::SE_PRE, 5201, 2, |e| {
            e.flags2 = abi::SF2_ABC;
            e.fb_abc_accel = accel;
            e.fb_abc_brake = brake;
            e.flags |= abi::SF_HAS_SAMPLE;
            e.pkts_acked = 4;
            e.rtt_us = 40_000;
            e.in_flight = 10;
        }));
        a.on_event(&with(abi::SE_POST, 5201, 3, |e| {
            e.rs_acked_sacked = 4;
            e.rs_delivered = 4;
            e.rs_interval_us = 40_000;
            e.snd_una = 4 * 1448;
            e.in_flight = 10;
        }));
        a.conns.values().next().expect("the socket").w.cwnd
    }

    #[test]
    fn abcs_echoed_marks_reach_its_controller_four_accelerates_grow_the_window_four_brakes_shrink_it() {
        let up = abc_window_after(4, 0);
        let down = abc_window_after(0, 4);
        assert!(up > 10 && down < 10, "accelerates {up}, brakes {down}");
        assert_eq!(up - down, 8, "each mark moves the window by one segment");
    }

    #[test]
    fn a_netassist_report_goes_to_its_sockets_controller_and_one_for_no_socket_is_counted() {
        let mut a = Agent::new(vec![rule(Some(5201), "natcp")], -1);
        a.on_event(&event(abi::SE_INIT, 5201, 1));
        let key = *a.conns.keys().next().expect("the socket");
        let fb = Feedback::NetAssist {
            bw_bps: 20_000_000,
            min_rtt: SimDuration::from_millis(40),
            flows: 1,
        };
        a.on_report(5_000_000, key, fb);
        let c = a.conns.get(&key).expect("the socket");
        // NATCP leaves CUBIC for the report: paced at BW (the window then
        // grows toward 2 · BW · minRTT ACK by ACK), and the decision is
        // marked as made on a report.
        assert_eq!(c.cc.pacing_rate().map(|r| r.bps()), Some(20_000_000));
        assert_eq!(c.oob, 1);
        let other = SockKey { dport: 80, ..key };
        a.on_report(6_000_000, other, fb);
        a.on_malformed_report("3-byte datagram: not 32 bytes long".into());
        let r = a.finish();
        assert_eq!(
            (r.reports, r.reports_applied, r.reports_unknown, r.reports_malformed),
            (2, 1, 1, 1)
        );
    }

    #[test]
    fn the_smallest_tso_burst_is_one_segment_for_schemes_paced_on_their_own_and_linuxs_two_for_the_kernels() {
        let tso = |name: &str| min_tso_segs(registry::build(name, &serde_json::json!({})).unwrap().as_ref());
        for name in ["pbe", "xrc2", "copa", "abc", "natcp"] {
            assert_eq!(tso(name), 1, "{name}");
        }
        for name in ["cubic", "newreno", "vegas", "illinois"] {
            assert_eq!(tso(name), 2, "{name}");
        }
    }

    #[test]
    fn events_of_a_socket_no_rule_covers_or_of_one_already_released_are_skipped() {
        let mut a = Agent::new(vec![rule(Some(5201), "vegas")], -1);
        a.on_event(&event(abi::SE_PRE, 80, 11));
        a.on_event(&event(abi::SE_INIT, 80, 12));
        a.on_event(&event(abi::SE_RELEASE, 5201, 13));
        a.on_event(&[0u8; 3]);
        let r = a.finish();
        assert_eq!((r.adopted, r.skipped, r.events), (0, 4, 3), "{r:?}");
        assert!(r.sockets.is_empty() && r.errors.is_empty());
    }
}
