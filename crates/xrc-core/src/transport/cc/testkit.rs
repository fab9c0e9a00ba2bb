//! The congestion-control test kit: the harness the algorithms' unit tests
//! share, written once (tests only).
//!
//! Most tests drive one controller the way the TCP framework does, without
//! the framework: a bulk sender whose flight is always the full window,
//! sequence numbers counted in segments, ACKs fed one at a time through the
//! hooks in the framework's order. What the kit holds:
//!
//! * Units: [`MSS`], and the times [`ms`], [`us`] (durations) and
//!   [`at_ms`] (an instant).
//! * [`seg_view`]: the [`ConnView`] of a bulk sender whose `snd_una` and
//!   `snd_nxt` are given in segments (everything between them in flight).
//! * [`one_ack`]: the [`AckSample`] of an ACK of `n` segments with an RTT
//!   sample or none.
//! * [`Bulk`]: the bulk sender itself, for the Reno-style hooks
//!   (`pkts_acked`, then `cong_avoid` unless in Recovery, then the window is
//!   refilled): build it ([`Bulk::new`], [`Bulk::with_ssthresh`]), feed it
//!   ACKs at explicit times ([`Bulk::ack_n_at`], [`Bulk::ack_at`]) or on
//!   its own clock of 1 ms per ACK from 1 s on ([`Bulk::ack_with`],
//!   [`Bulk::ack`]), run it to the end of a round ([`Bulk::ack_through`]),
//!   change its congestion state ([`Bulk::set_state`]) and ask for the
//!   threshold a loss would set ([`Bulk::ssthresh`], [`Bulk::ssthresh_at`]).
//!   Its fields are public: tests read the window (`w`), the controller
//!   (`cc`), the sequence numbers, the clock and the record of window
//!   changes (`growth`) directly. A test module names its sender
//!   `type Flow = Bulk<Algo>` and adds what only its algorithm has (its
//!   round boundary, a primed state) in an `impl Bulk<Algo>` of its own.
//!
//! Algorithms driven through `cong_control` with rate samples (BBR, ABC,
//! Copa, XRC) keep harnesses of their own, as each needs a different rate
//! sample; they take the units and views from here.

use super::{AckSample, CaState, CongestionControl, ConnView, Window};
use crate::units::{SimDuration, SimTime};

/// The tests' segment size, bytes (Linux's for a 1500-byte MTU with
/// timestamps).
pub const MSS: u32 = 1448;

/// `v` milliseconds.
pub fn ms(v: u64) -> SimDuration {
    SimDuration::from_millis(v)
}

/// `v` microseconds.
pub fn us(v: u64) -> SimDuration {
    SimDuration::from_micros(v)
}

/// The instant `v` milliseconds after the start.
pub fn at_ms(v: u64) -> SimTime {
    SimTime::from_nanos(v * 1_000_000)
}

/// The view of a bulk sender at `now` whose `snd_una` and `snd_nxt` are
/// `una` and `nxt` segments (every segment between them in flight, all
/// before `una` delivered), in congestion state `state`, limited by its
/// window (`limited`) or by the application.
pub fn seg_view(now: SimTime, una: u64, nxt: u64, state: CaState, limited: bool) -> ConnView {
    let out = (nxt - una) as u32;
    ConnView {
        now,
        mss: MSS,
        snd_una: una * MSS as u64,
        snd_nxt: nxt * MSS as u64,
        packets_out: out,
        packets_in_flight: out,
        delivered: una,
        ca_state: state,
        is_cwnd_limited: limited,
        ..ConnView::default()
    }
}

/// The sample of an ACK of `n` segments, with its RTT sample if any
/// (`in_flight` 0: no algorithm here reads it).
pub fn one_ack(n: u32, rtt: Option<SimDuration>) -> AckSample {
    AckSample {
        pkts_acked: n,
        rtt,
        in_flight: 0,
    }
}

/// A bulk sender driving one controller ACK by ACK through the Reno-style
/// hooks, in the framework's order: `pkts_acked` (with the new `snd_una`
/// and the old `snd_nxt`), then `cong_avoid` unless in Recovery, then the
/// window is refilled (`nxt` = `una` + cwnd). Sequence numbers are in
/// segments.
pub struct Bulk<C> {
    pub cc: C,
    pub w: Window,
    /// `snd_una` and `snd_nxt`, segments.
    pub una: u64,
    pub nxt: u64,
    /// The clock of [`Bulk::ack`]: 1 ms per ACK, from 1 s on.
    pub t: SimTime,
    /// The congestion state the views report.
    pub state: CaState,
    /// What `tcp_is_cwnd_limited` reports (true unless a test says not).
    pub limited: bool,
    /// The smoothed RTT the views report (none unless a test sets it).
    pub srtt: Option<SimDuration>,
    /// ACKs fed so far.
    pub acks: u64,
    /// Every change of the window: (index of the ACK that made it, new
    /// cwnd).
    pub growth: Vec<(u64, u32)>,
}

impl<C: CongestionControl> Bulk<C> {
    /// `cc` initialized (at time 0, nothing sent) with a window of `cwnd`
    /// segments, which then leaves at once.
    pub fn new(cc: C, cwnd: u32) -> Self {
        Self::start(cc, Window::new(cwnd))
    }

    /// As [`Bulk::new`], with the slow-start threshold set before `init`.
    pub fn with_ssthresh(cc: C, cwnd: u32, ssthresh: u32) -> Self {
        let mut w = Window::new(cwnd);
        w.ssthresh = ssthresh;
        Self::start(cc, w)
    }

    fn start(mut cc: C, mut w: Window) -> Self {
        cc.init(
            SimTime::ZERO,
            &mut w,
            &seg_view(SimTime::ZERO, 0, 0, CaState::Open, true),
        );
        let nxt = w.cwnd as u64;
        Bulk {
            cc,
            w,
            una: 0,
            nxt,
            t: SimTime::from_nanos(1_000_000_000),
            state: CaState::Open,
            limited: true,
            srtt: None,
            acks: 0,
            growth: Vec::new(),
        }
    }

    /// The sender's view at `now`.
    pub fn view_at(&self, now: SimTime) -> ConnView {
        ConnView {
            srtt: self.srtt,
            ..seg_view(now, self.una, self.nxt, self.state, self.limited)
        }
    }

    /// The sender's view on its own clock.
    pub fn view(&self) -> ConnView {
        self.view_at(self.t)
    }

    /// One ACK at `now` of `segs` segments with an RTT sample or none.
    pub fn ack_n_at(&mut self, now: SimTime, rtt: Option<SimDuration>, segs: u32) {
        self.acks += 1;
        self.una += segs as u64;
        self.nxt = self.nxt.max(self.una);
        let before = self.w.cwnd;
        let v = self.view_at(now);
        self.cc.pkts_acked(now, &mut self.w, &v, &one_ack(segs, rtt));
        if self.state != CaState::Recovery {
            self.cc.cong_avoid(now, &mut self.w, &v, segs);
        }
        if self.w.cwnd != before {
            self.growth.push((self.acks, self.w.cwnd));
        }
        self.nxt = self.nxt.max(self.una + self.w.cwnd as u64);
    }

    /// One ACK at `now` of one segment.
    pub fn ack_at(&mut self, now: SimTime, rtt: Option<SimDuration>) {
        self.ack_n_at(now, rtt, 1);
    }

    /// One ACK of one segment 1 ms after the previous one.
    pub fn ack_with(&mut self, rtt: Option<SimDuration>) {
        self.t += ms(1);
        self.ack_at(self.t, rtt);
    }

    /// [`Bulk::ack_with`] an RTT sample.
    pub fn ack(&mut self, rtt: SimDuration) {
        self.ack_with(Some(rtt));
    }

    /// ACKs, all with this RTT, up to and including the first that goes
    /// beyond byte `end_seq` (the one that closes a round ending there).
    pub fn ack_through(&mut self, end_seq: u64, rtt: SimDuration) {
        loop {
            let closes = (self.una + 1) * MSS as u64 > end_seq;
            self.ack(rtt);
            if closes {
                break;
            }
        }
    }

    /// The connection enters `s` (the `set_state` hook).
    pub fn set_state(&mut self, s: CaState) {
        self.state = s;
        let v = self.view();
        self.cc.set_state(self.t, &mut self.w, &v, s);
    }

    /// The threshold a loss now would set (the `ssthresh` hook).
    pub fn ssthresh(&mut self) -> u32 {
        self.ssthresh_at(self.t)
    }

    /// The threshold a loss at `now` would set.
    pub fn ssthresh_at(&mut self, now: SimTime) -> u32 {
        let v = self.view_at(now);
        self.cc.ssthresh(now, &self.w, &v)
    }
}
