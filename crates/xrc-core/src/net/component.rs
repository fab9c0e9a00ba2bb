//! Components: the pieces of the network between the hosts (the Internet
//! path, an access network) behind one narrow interface, so that the same
//! model runs in the discrete-event simulator and under a wall clock.
//!
//! A component is a state machine. It is called in three ways, always with
//! the model time `now` (never reading a clock):
//!
//! - [`Component::receive`]: a packet enters, travelling [`Dir::Down`]
//!   (from the Internet side toward a UE) or [`Dir::Up`];
//! - [`Component::fire`]: a timer it asked for is due;
//! - [`Component::rearm`]: the packets it let out have been carried on (see
//!   [`Effect::Rearm`]).
//!
//! It answers through [`Io`] with an ordered list of [`Effect`]s: packets
//! leaving (on the far side of their direction), timers to set, and two
//! markers. What it observes (drops, queuing delays, per-TTI samples) goes
//! to an [`Observer`] as it happens. The caller carries the effects out in
//! order ([`Cx`] is the caller's side of `Io`);
//! a packet carried on may enter another component, or this one again,
//! before the next effect: that is the order in which a real network would
//! see them, and in the simulator it fixes the (time, sequence) order of
//! every event, which is what makes a run reproducible to the byte.
//!
//! Two drivers:
//!
//! - the simulator's `scenario::World` keeps every component's timers in
//!   its one event queue, interleaved with the hosts' timers;
//! - [`Standalone`] gives a component its own timer queue and the
//!   interface a wall-clock loop needs: packets in with their time
//!   ([`Standalone::push`]), packets out with the model time they leave,
//!   [`Standalone::next_wakeup`] and [`Standalone::advance`]. The loop
//!   waits on an [`crate::engine::Clock`] between calls.
//!
//! Timers are lazily cancelled: a component may ask for a timer it later
//! no longer needs, and must treat a timer that finds nothing to do as a
//! no-op.

use super::observe::Observer;
use super::Packet;
use crate::engine::{Clock, EventQueue};
use crate::units::SimTime;

/// The direction a packet travels through a component.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Dir {
    /// From the Internet side toward a UE (data in the scenarios).
    Down,
    /// From a UE toward the Internet side (ACKs in the scenarios).
    Up,
}

/// One thing a component asks its driver to do, in order.
#[derive(Debug)]
pub enum Effect<T> {
    /// Call [`Component::fire`] with this timer at this time.
    Wake(SimTime, T),
    /// The packet leaves on the far side of its direction.
    Out(Dir, Packet),
    /// A sampling instant (a TTI, a trace link's millisecond) has ended:
    /// readers of the component's side channels (the oracle) may read them
    /// now, after the packets before this effect were carried on.
    Tick,
    /// Call [`Component::rearm`] once the effects before this one are
    /// carried out: a component whose wake-up depends on what the packets
    /// it let out do next (they may come back in) sets it then.
    Rearm,
}

/// What a component's call may do besides change its own state: set
/// timers, let packets out, mark an instant, ask to be re-armed, and tell
/// an observer what it saw. The driver implements it ([`Cx`] serves both
/// drivers of this crate), so a component never knows who runs it.
pub trait Io<T>: Timers<T> {
    /// Lets `pkt` out travelling `dir` ([`Effect::Out`]).
    fn out(&mut self, dir: Dir, pkt: Packet);
    /// Marks the end of a sampling instant ([`Effect::Tick`]).
    fn tick(&mut self);
    /// Asks for [`Component::rearm`] after the effects so far ([`Effect::Rearm`]).
    fn rearm_after(&mut self);
    /// Some effect is listed and not carried out yet (a packet let out, a
    /// timer behind it): a re-arm must wait for it. When none is, a
    /// component may re-arm at once instead of asking.
    fn is_listing(&self) -> bool;
}

/// The part of [`Io`] a call that lets no packet out needs: timers and the
/// observer. Such a call (the Internet path's [`crate::net::InternetPath::enter`])
/// leaves its driver nothing to carry out, so the driver needs no list of
/// effects for it ([`Direct`]), and the call cannot lead back into the
/// driver's routing.
pub trait Timers<T> {
    type Obs: Observer + ?Sized;
    /// Asks for `timer` at `at` (not before the current call's `now`).
    fn wake(&mut self, at: SimTime, timer: T);
    /// Where observations go, as they happen.
    fn obs(&mut self) -> &mut Self::Obs;
}

/// The drivers' [`Timers`] for a call that lets nothing out: timers go to
/// `sink` at once (in the order asked), observations to `obs`.
pub struct Direct<'a, S: ?Sized, O: ?Sized> {
    pub sink: &'a mut S,
    pub obs: &'a mut O,
}

impl<T, S: WakeSink<T> + ?Sized, O: Observer + ?Sized> Timers<T> for Direct<'_, S, O> {
    type Obs = O;
    #[inline(always)]
    fn wake(&mut self, at: SimTime, timer: T) {
        self.sink.wake(at, timer);
    }
    #[inline(always)]
    fn obs(&mut self) -> &mut O {
        self.obs
    }
}

/// Where a driver sets timers at once.
pub trait WakeSink<U> {
    fn wake(&mut self, at: SimTime, timer: U);
}

impl<U: Copy> WakeSink<U> for EventQueue<U> {
    #[inline]
    fn wake(&mut self, at: SimTime, timer: U) {
        self.schedule(at, timer);
    }
}

/// The drivers' [`Io`]: effects listed in order for the driver to carry
/// out ([`Cx::finish`]), except the timers a call asks for before its first
/// other effect, which go to `sink` at once: nothing comes between them
/// and the call either way, so the order is the same, and most calls (a
/// pipe's next head, a link's next transmission) list nothing. A list is
/// taken from `pool` only when needed (calls nest, so the driver keeps a
/// pool of them).
///
/// `U` is the driver's timer type, which wraps every component's
/// (`U: From<T>`), so a driver of several kinds of components keeps one
/// list of effects and one event type.
pub struct Cx<'a, U, S: ?Sized, O: ?Sized> {
    pool: &'a mut Vec<Vec<Effect<U>>>,
    fx: Option<Vec<Effect<U>>>,
    sink: &'a mut S,
    obs: &'a mut O,
    /// Someone reads the side channels at each [`Effect::Tick`].
    ticks: bool,
}

impl<'a, U, S: WakeSink<U> + ?Sized, O: Observer + ?Sized> Cx<'a, U, S, O> {
    pub fn new(pool: &'a mut Vec<Vec<Effect<U>>>, sink: &'a mut S, obs: &'a mut O) -> Self {
        Cx {
            pool,
            fx: None,
            sink,
            obs,
            ticks: true,
        }
    }

    /// Whether to list [`Effect::Tick`]s: a driver with no reader of the
    /// side channels drops them, as they would be no-ops (the order of
    /// everything else is the same without them).
    pub fn with_ticks(mut self, ticks: bool) -> Self {
        self.ticks = ticks;
        self
    }

    /// The effects left for the driver to carry out, in order, if any. Give
    /// the list back to the pool (empty) once carried out.
    pub fn finish(self) -> Option<Vec<Effect<U>>> {
        self.fx
    }

    #[inline]
    fn defer(&mut self, e: Effect<U>) {
        let pool = &mut *self.pool;
        self.fx.get_or_insert_with(|| pool.pop().unwrap_or_default()).push(e);
    }
}

impl<T, U: From<T>, S: WakeSink<U> + ?Sized, O: Observer + ?Sized> Timers<T> for Cx<'_, U, S, O> {
    type Obs = O;
    #[inline]
    fn wake(&mut self, at: SimTime, timer: T) {
        if self.fx.is_none() {
            self.sink.wake(at, U::from(timer));
        } else {
            self.defer(Effect::Wake(at, U::from(timer)));
        }
    }
    #[inline]
    fn obs(&mut self) -> &mut O {
        self.obs
    }
}

impl<T, U: From<T>, S: WakeSink<U> + ?Sized, O: Observer + ?Sized> Io<T> for Cx<'_, U, S, O> {
    #[inline]
    fn out(&mut self, dir: Dir, pkt: Packet) {
        self.defer(Effect::Out(dir, pkt));
    }
    #[inline]
    fn tick(&mut self) {
        if self.ticks {
            self.defer(Effect::Tick);
        }
    }
    #[inline]
    fn rearm_after(&mut self) {
        self.defer(Effect::Rearm);
    }
    #[inline]
    fn is_listing(&self) -> bool {
        self.fx.is_some()
    }
}

/// A network element driven by packets and its own timers.
pub trait Component {
    /// The component's own timers (which UE, which queue).
    type Timer: Copy + std::fmt::Debug;

    /// Asks for the component's first timers (a periodic TTI, say).
    fn start(&mut self, now: SimTime, cx: &mut impl Io<Self::Timer>);

    /// `pkt` enters at `now` travelling `dir`.
    fn receive(&mut self, now: SimTime, dir: Dir, pkt: Packet, cx: &mut impl Io<Self::Timer>);

    /// `timer`, asked for at `now`, is due.
    fn fire(&mut self, now: SimTime, timer: Self::Timer, cx: &mut impl Io<Self::Timer>);

    /// Answers an [`Effect::Rearm`]; components that never emit one keep
    /// the default.
    fn rearm(&mut self, _now: SimTime, _cx: &mut impl Io<Self::Timer>) {}
}

/// A packet a [`Standalone`] component let out, with its model time.
#[derive(Debug)]
pub struct Released {
    pub at: SimTime,
    pub dir: Dir,
    pub pkt: Packet,
}

/// A component driven on its own: its timers in a queue of its own, the
/// interface of a wall-clock loop (packets in with their time, packets out
/// with theirs, the next wake-up, advance to a time).
///
/// Run in simulated time, it is exactly the component the simulator runs:
/// the same calls at the same model times in the same order, so long as
/// the packets it lets out do not come back into it within the same
/// instant (in the simulator a host may answer at once; here the loop
/// feeds answers back with [`Standalone::push`]). Under a wall clock,
/// `advance(now)` runs every timer due by `now` at the timer's own model
/// time, so what leaves carries the time it should have left; how late the
/// loop really was is the clock's [`crate::engine::LagReport`].
pub struct Standalone<C: Component> {
    component: C,
    timers: EventQueue<C::Timer>,
    pool: Vec<Vec<Effect<C::Timer>>>,
    ticks: u64,
}

impl<C: Component> Standalone<C> {
    /// Takes `component` and runs its `start` at `now`.
    pub fn new(component: C, now: SimTime, obs: &mut dyn Observer) -> Self {
        let mut s = Standalone {
            component,
            timers: EventQueue::new(),
            pool: Vec::new(),
            ticks: 0,
        };
        s.timers.advance_to(now);
        let mut cx = Cx::new(&mut s.pool, &mut s.timers, obs);
        s.component.start(now, &mut cx);
        let left = cx.finish();
        let mut sink = Vec::new();
        s.carry_out(now, left, obs, &mut sink);
        debug_assert!(sink.is_empty(), "a component lets nothing out when it starts");
        s
    }

    pub fn component(&self) -> &C {
        &self.component
    }
    pub fn component_mut(&mut self) -> &mut C {
        &mut self.component
    }
    /// Sampling instants ([`Effect::Tick`]) seen so far.
    pub fn ticks(&self) -> u64 {
        self.ticks
    }

    /// When the component next has work; `None` when it has none.
    pub fn next_wakeup(&self) -> Option<SimTime> {
        self.timers.peek_time()
    }

    /// `pkt` enters at `now`, after every timer due by then (which runs
    /// first); what leaves is appended to `out`. A `now` before the time
    /// already reached counts as that time.
    pub fn push(&mut self, now: SimTime, dir: Dir, pkt: Packet, obs: &mut dyn Observer, out: &mut Vec<Released>) {
        self.advance(now, obs, out);
        let now = self.timers.now();
        let mut cx = Cx::new(&mut self.pool, &mut self.timers, obs);
        self.component.receive(now, dir, pkt, &mut cx);
        let left = cx.finish();
        self.carry_out(now, left, obs, out);
    }

    /// Runs every timer due by `now`, each at its own model time, in
    /// (time, request order); what leaves is appended to `out`.
    pub fn advance(&mut self, now: SimTime, obs: &mut dyn Observer, out: &mut Vec<Released>) {
        while let Some((t, timer)) = self.timers.pop_until(now) {
            let mut cx = Cx::new(&mut self.pool, &mut self.timers, obs);
            self.component.fire(t, timer, &mut cx);
            let left = cx.finish();
            self.carry_out(t, left, obs, out);
        }
        if now > self.timers.now() {
            self.timers.advance_to(now);
        }
    }

    /// Runs the component under `clock` up to model time `until`: waits
    /// for each wake-up, then advances to the clock's time (capped at
    /// `until`), so a late wake runs everything that came due meanwhile,
    /// each at its own model time. A loop that also reads packets (an
    /// emulator) interleaves [`Standalone::push`] between waits.
    pub fn run_until(
        &mut self,
        clock: &mut dyn Clock,
        until: SimTime,
        obs: &mut dyn Observer,
        out: &mut Vec<Released>,
    ) {
        while let Some(t) = self.next_wakeup().filter(|&t| t <= until) {
            clock.wait_until(t);
            self.advance(clock.now().clamp(t, until), obs, out);
        }
    }

    fn carry_out(
        &mut self,
        now: SimTime,
        fx: Option<Vec<Effect<C::Timer>>>,
        obs: &mut dyn Observer,
        out: &mut Vec<Released>,
    ) {
        let Some(mut fx) = fx else { return };
        for e in fx.drain(..) {
            match e {
                Effect::Wake(at, timer) => self.timers.schedule(at, timer),
                Effect::Out(dir, pkt) => out.push(Released { at: now, dir, pkt }),
                Effect::Tick => self.ticks += 1,
                Effect::Rearm => {
                    let mut cx = Cx::new(&mut self.pool, &mut self.timers, obs);
                    self.component.rearm(now, &mut cx);
                    let left = cx.finish();
                    self.carry_out(now, left, obs, out);
                }
            }
        }
        self.pool.push(fx);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{MonotonicClock, SimulatedClock};
    use crate::net::{FlowId, InternetPath, LinkConfig, NullObserver, PacketKind, QueueLimit};
    use crate::units::{BitRate, SimDuration};

    fn ms(v: u64) -> SimTime {
        SimTime::from_nanos(v * 1_000_000)
    }

    fn path(rate_mbps: Option<f64>, delay_ms: u64) -> InternetPath {
        let link = LinkConfig {
            rate: rate_mbps.and_then(BitRate::try_from_mbps),
            delay: SimDuration::from_millis(delay_ms),
            limit: QueueLimit::packets(8),
        };
        InternetPath::new(
            &link,
            &link,
            &[SimDuration::from_millis(1), SimDuration::from_millis(3)],
        )
    }

    fn seq(p: &Packet) -> u64 {
        match &p.kind {
            PacketKind::Data(d) => d.seq,
            PacketKind::Ack(a) => a.ack,
        }
    }

    #[test]
    fn under_the_monotonic_clock_a_packet_leaves_at_its_model_time_and_not_before() {
        let mut clock = MonotonicClock::start(SimDuration::from_secs(3600));
        let mut obs = NullObserver;
        let mut s = Standalone::new(path(None, 3), clock.now(), &mut obs);
        let mut out = Vec::new();
        let entered = clock.now();
        s.push(
            entered,
            Dir::Down,
            Packet::data(FlowId(0), 7, 1000, SimTime::ZERO, false),
            &mut obs,
            &mut out,
        );
        s.run_until(&mut clock, entered + SimDuration::from_millis(10), &mut obs, &mut out);
        assert_eq!(out.len(), 1);
        // 1 ms of the flow's own pipe, 3 ms of the link.
        assert_eq!(out[0].at, entered + SimDuration::from_millis(4));
        assert_eq!((out[0].dir, seq(&out[0].pkt)), (Dir::Down, 7));
        assert!(clock.now() >= out[0].at);
        // One wait per timer (the pipe, then the link), or one when a loaded
        // host woke the first wait after the second timer was due too:
        // wall-clock timing is not asserted.
        let waits = clock.lag().waits;
        assert!((1..=2).contains(&waits), "{:?}", clock.lag());
    }

    #[test]
    fn advancing_late_releases_the_same_packets_at_the_same_model_times_as_advancing_on_time() {
        // Two flows into a 12 Mbit/s link with a queue of 8: packets queue,
        // some drop, and every release time comes from the model.
        let inputs: Vec<(SimTime, Dir, Packet)> = (0..60u64)
            .map(|i| {
                let t = SimTime::from_nanos(i * 137_000);
                let p = Packet::data(FlowId((i % 2) as u32), i, 1448, SimTime::ZERO, false);
                let dir = if i % 7 == 3 { Dir::Up } else { Dir::Down };
                (t, dir, p)
            })
            .collect();
        let run = |on_time: bool| {
            let mut obs = NullObserver;
            let mut clock = SimulatedClock::new();
            let mut s = Standalone::new(path(Some(12.0), 5), SimTime::ZERO, &mut obs);
            let mut out = Vec::new();
            for (t, dir, p) in inputs.iter().cloned() {
                if on_time {
                    s.run_until(&mut clock, t, &mut obs, &mut out);
                }
                s.push(t, dir, p, &mut obs, &mut out);
            }
            s.advance(ms(1000), &mut obs, &mut out);
            assert!(s.component().check_conservation().is_ok());
            out.iter().map(|r| (r.at, r.dir, seq(&r.pkt))).collect::<Vec<_>>()
        };
        let on_time = run(true);
        assert!(on_time.len() > 20, "{}", on_time.len());
        assert_eq!(on_time, run(false));
    }
}
