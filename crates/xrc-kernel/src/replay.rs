//! The kernel's XRC against the simulator's, hook call by hook call.
//!
//! The BPF congestion control, loaded with tracing on, writes one record per
//! hook call ([`abi::Trace`]): what the call saw (the connection, the ACK's
//! sample or feedback, the window before) and what it left (the window
//! after, its mode, its return value). [`replay`] feeds the same inputs to
//! the simulator's sender (`xrc_core::transport::cc::xrc::Xrc`, the code
//! `xrc run` runs), with the window set to the kernel's before each call,
//! and compares what comes out. Setting the window from the record makes
//! each step independent of the last: a difference is reported where it
//! arises, and one difference does not make every later step differ.
//!
//! Sequence numbers and the delivered count are unwrapped from 32 bits
//! (the kernel's) to the simulator's 64-bit counters; times are the
//! kernel's monotonic nanoseconds.

use std::collections::HashMap;

use xrc_core::net::XrcOption;
use xrc_core::transport::cc::xrc::{Config, Mode, Xrc};
use xrc_core::transport::cc::{AckSample, CaState, CongestionControl, ConnView, Feedback, Window};
use xrc_core::units::{SimDuration, SimTime};

use crate::abi::{self, Hook, Trace};

/// How the simulator's sender compared with the kernel's on a trace.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Records read, and of those compared (every hook but `release`).
    pub records: u64,
    pub compared: u64,
    /// Connections (sockets) in the trace.
    pub sockets: u64,
    /// Records by hook name.
    pub by_hook: Vec<(&'static str, u64)>,
    /// Steps where the window, the slow-start threshold, the AI counter,
    /// the mode or the returned value differed.
    pub mismatches: u64,
    /// The first few, described.
    pub first: Vec<String>,
    /// Records whose socket had no `init` record before them (the trace
    /// began mid-connection): skipped.
    pub skipped: u64,
}

/// A 32-bit counter unwrapped into 64 bits, starting at 2^32 so that it
/// never goes below zero.
#[derive(Clone, Copy)]
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
    x: Xrc,
    una: Unwrap,
    nxt: Unwrap,
    delivered: Unwrap,
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

fn mode_index(m: Mode) -> u8 {
    match m {
        Mode::Reno => 0,
        Mode::Ramp => 1,
        Mode::Probe => 2,
        Mode::Hold => 3,
        Mode::Unfair => 4,
        Mode::Internet => 5,
        Mode::Track => 255,
    }
}

fn hook_name(h: Hook) -> &'static str {
    match h {
        Hook::Feedback => "feedback",
        Hook::PktsAcked => "pkts_acked",
        Hook::CongAvoid => "cong_avoid",
        Hook::Ssthresh => "ssthresh",
        Hook::SetState => "set_state",
        Hook::Undo => "undo_cwnd",
        Hook::Init => "init",
        Hook::Release => "release",
    }
}

/// Replays `trace` (concatenated 88-byte records) through the simulator's
/// `xrc` with parameters `cfg`.
pub fn replay(trace: &[u8], cfg: &Config) -> Report {
    let mut r = Report::default();
    let mut conns: HashMap<u64, Conn> = HashMap::new();
    let mut hooks: HashMap<&'static str, u64> = HashMap::new();
    for chunk in trace.chunks_exact(abi::TRACE_BYTES) {
        let t = Trace::from_bytes(chunk).expect("a whole record");
        r.records += 1;
        let Some(hook) = Hook::from_u8(t.hook) else {
            r.mismatches += 1;
            if r.first.len() < 10 {
                r.first.push(format!("record {}: unknown hook {}", r.records, t.hook));
            }
            continue;
        };
        *hooks.entry(hook_name(hook)).or_default() += 1;
        if hook == Hook::Init {
            conns.insert(
                t.sock,
                Conn {
                    x: Xrc::new(cfg.clone()),
                    una: Unwrap::new(t.snd_una),
                    nxt: Unwrap::new(t.snd_nxt),
                    delivered: Unwrap::new(t.delivered),
                },
            );
        }
        let Some(c) = conns.get_mut(&t.sock) else {
            r.skipped += 1;
            continue;
        };
        if hook == Hook::Release {
            conns.remove(&t.sock);
            continue;
        }
        let now = SimTime::from_nanos(t.now_ns);
        let view = ConnView {
            now,
            mss: t.mss,
            snd_una: c.una.at(t.snd_una),
            snd_nxt: c.nxt.at(t.snd_nxt),
            packets_out: 0,
            packets_in_flight: t.in_flight,
            delivered: c.delivered.at(t.delivered),
            ca_state: ca_state(t.ca_state),
            is_cwnd_limited: t.cwnd_limited != 0,
            ..ConnView::default()
        };
        let mut w = Window {
            cwnd: t.cwnd_before,
            ssthresh: t.ssthresh_before,
            cwnd_cnt: t.cnt_before,
            cwnd_clamp: t.clamp,
        };
        let mut ret = 0u32;
        match hook {
            Hook::Init => {}
            Hook::Feedback => {
                let fb = XrcOption {
                    rate_bps: t.fb_rate_kbps as u64 * 1000,
                    hol: SimDuration::from_nanos(t.fb_hol_tenths as u64 * 100_000),
                    air: None,
                    room: None,
                };
                c.x.on_feedback(now, &mut w, &view, &Feedback::Xrc(fb));
            }
            Hook::PktsAcked => {
                let s = AckSample {
                    pkts_acked: t.arg,
                    rtt: (t.rtt_us >= 0).then(|| SimDuration::from_micros(t.rtt_us as u64)),
                    in_flight: t.in_flight,
                };
                c.x.pkts_acked(now, &mut w, &view, &s);
            }
            Hook::CongAvoid => c.x.cong_avoid(now, &mut w, &view, t.arg),
            Hook::Ssthresh => ret = c.x.ssthresh(now, &w, &view),
            Hook::SetState => c.x.set_state(now, &mut w, &view, ca_state(t.arg as u8)),
            Hook::Undo => ret = c.x.undo_cwnd(now, &w, t.arg),
            Hook::Release => unreachable!("handled above"),
        }
        r.compared += 1;
        let mode = mode_index(c.x.current_mode());
        let same = w.cwnd == t.cwnd_after
            && w.ssthresh == t.ssthresh_after
            && w.cwnd_cnt == t.cnt_after
            && mode == t.mode_after
            && ret == t.ret;
        if !same {
            r.mismatches += 1;
            if r.first.len() < 10 {
                r.first.push(format!(
                    "record {} ({}, t = {} ns): kernel cwnd {} ssthresh {} cnt {} mode {} ret {}; \
                     simulator cwnd {} ssthresh {} cnt {} mode {} ret {} (before: cwnd {})",
                    r.records,
                    hook_name(hook),
                    t.now_ns,
                    t.cwnd_after,
                    t.ssthresh_after,
                    t.cnt_after,
                    abi::MODES.get(t.mode_after as usize).unwrap_or(&"?"),
                    t.ret,
                    w.cwnd,
                    w.ssthresh,
                    w.cwnd_cnt,
                    abi::MODES.get(mode as usize).unwrap_or(&"?"),
                    ret,
                    t.cwnd_before
                ));
            }
        }
    }
    r.sockets = hooks.get("init").copied().unwrap_or(0);
    let mut by: Vec<_> = hooks.into_iter().collect();
    by.sort();
    r.by_hook = by;
    r
}
