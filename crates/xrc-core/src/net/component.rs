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
//! It answers with an ordered list of [`Effect`]s: packets leaving (on the
//! far side of their direction), timers to set, and two markers. What it
//! observes (drops, queuing delays, per-TTI samples) goes to an
//! [`Observer`] as it happens. The caller carries the effects out in order;
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

use std::marker::PhantomData;

use super::observe::Observer;
use super::Packet;
use crate::engine::EventQueue;
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

/// What a component's call gets besides `now`: where its effects go and
/// who observes it.
///
/// `T` is the component's timer type; `U` the driver's, which wraps it
/// (`U: From<T>`), so a driver of several kinds of components keeps one
/// list of effects and one event type.
pub struct Cx<'a, T, U = T> {
    fx: &'a mut Vec<Effect<U>>,
    /// Observations go here as they happen.
    pub obs: &'a mut dyn Observer,
    timer: PhantomData<fn(T)>,
}

impl<'a, T, U: From<T>> Cx<'a, T, U> {
    pub fn new(fx: &'a mut Vec<Effect<U>>, obs: &'a mut dyn Observer) -> Self {
        Cx {
            fx,
            obs,
            timer: PhantomData,
        }
    }
    /// Asks for `timer` at `at` (not before the current call's `now`).
    pub fn wake(&mut self, at: SimTime, timer: T) {
        self.fx.push(Effect::Wake(at, U::from(timer)));
    }
    /// Lets `pkt` out travelling `dir`.
    pub fn out(&mut self, dir: Dir, pkt: Packet) {
        self.fx.push(Effect::Out(dir, pkt));
    }
    /// Marks the end of a sampling instant ([`Effect::Tick`]).
    pub fn tick(&mut self) {
        self.fx.push(Effect::Tick);
    }
    /// Asks for [`Component::rearm`] after the effects so far.
    pub fn rearm_after(&mut self) {
        self.fx.push(Effect::Rearm);
    }
}

/// A network element driven by packets and its own timers.
pub trait Component {
    /// The component's own timers (which UE, which queue).
    type Timer: Copy + std::fmt::Debug;

    /// Asks for the component's first timers (a periodic TTI, say).
    fn start<U: From<Self::Timer>>(&mut self, now: SimTime, cx: &mut Cx<'_, Self::Timer, U>);

    /// `pkt` enters at `now` travelling `dir`.
    fn receive<U: From<Self::Timer>>(&mut self, now: SimTime, dir: Dir, pkt: Packet, cx: &mut Cx<'_, Self::Timer, U>);

    /// `timer`, asked for at `now`, is due.
    fn fire<U: From<Self::Timer>>(&mut self, now: SimTime, timer: Self::Timer, cx: &mut Cx<'_, Self::Timer, U>);

    /// Answers an [`Effect::Rearm`]; components that never emit one keep
    /// the default.
    fn rearm<U: From<Self::Timer>>(&mut self, _now: SimTime, _cx: &mut Cx<'_, Self::Timer, U>) {}
}

/// One call of a component, as a value (for a driver that dispatches calls).
#[derive(Debug)]
pub enum Call<T> {
    Start,
    Receive(Dir, Packet),
    Fire(T),
    Rearm,
}

impl<T: Copy + std::fmt::Debug> Call<T> {
    /// Makes this call on `c` at `now`.
    pub fn apply<C: Component<Timer = T>, U: From<T>>(self, c: &mut C, now: SimTime, cx: &mut Cx<'_, T, U>) {
        match self {
            Call::Start => c.start(now, cx),
            Call::Receive(dir, pkt) => c.receive(now, dir, pkt, cx),
            Call::Fire(t) => c.fire(now, t, cx),
            Call::Rearm => c.rearm(now, cx),
        }
    }

    /// The same call with the timer unwrapped (`f` answers `None` for a
    /// timer that is not this component's).
    pub fn narrow<V>(self, f: impl FnOnce(T) -> Option<V>) -> Option<Call<V>> {
        Some(match self {
            Call::Start => Call::Start,
            Call::Receive(dir, pkt) => Call::Receive(dir, pkt),
            Call::Fire(t) => Call::Fire(f(t)?),
            Call::Rearm => Call::Rearm,
        })
    }
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
    fx: Vec<Vec<Effect<C::Timer>>>,
    ticks: u64,
}

impl<C: Component> Standalone<C> {
    /// Takes `component` and runs its `start` at `now`.
    pub fn new(component: C, now: SimTime, obs: &mut dyn Observer) -> Self {
        let mut s = Standalone {
            component,
            timers: EventQueue::new(),
            fx: Vec::new(),
            ticks: 0,
        };
        s.timers.advance_to(now);
        let mut fx = s.take_fx();
        s.component.start(now, &mut Cx::new(&mut fx, obs));
        let mut sink = Vec::new();
        s.carry_out(now, fx, obs, &mut sink);
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

    /// `pkt` enters at `now` (not before the last `advance`); what leaves
    /// because of it is appended to `out`.
    pub fn push(&mut self, now: SimTime, dir: Dir, pkt: Packet, obs: &mut dyn Observer, out: &mut Vec<Released>) {
        self.timers.advance_to(now.max(self.timers.now()));
        let now = self.timers.now();
        let mut fx = self.take_fx();
        self.component.receive(now, dir, pkt, &mut Cx::new(&mut fx, obs));
        self.carry_out(now, fx, obs, out);
    }

    /// Runs every timer due by `now`, each at its own model time, in
    /// (time, request order); what leaves is appended to `out`.
    pub fn advance(&mut self, now: SimTime, obs: &mut dyn Observer, out: &mut Vec<Released>) {
        while let Some((t, timer)) = self.timers.pop_until(now) {
            let mut fx = self.take_fx();
            self.component.fire(t, timer, &mut Cx::new(&mut fx, obs));
            self.carry_out(t, fx, obs, out);
        }
        if now > self.timers.now() {
            self.timers.advance_to(now);
        }
    }

    fn take_fx(&mut self) -> Vec<Effect<C::Timer>> {
        self.fx.pop().unwrap_or_default()
    }

    fn carry_out(
        &mut self,
        now: SimTime,
        mut fx: Vec<Effect<C::Timer>>,
        obs: &mut dyn Observer,
        out: &mut Vec<Released>,
    ) {
        for e in fx.drain(..) {
            match e {
                Effect::Wake(at, timer) => self.timers.schedule(at, timer),
                Effect::Out(dir, pkt) => out.push(Released { at: now, dir, pkt }),
                Effect::Tick => self.ticks += 1,
                Effect::Rearm => {
                    let mut more = self.take_fx();
                    self.component.rearm(now, &mut Cx::new(&mut more, obs));
                    self.carry_out(now, more, obs, out);
                }
            }
        }
        self.fx.push(fx);
    }
}
