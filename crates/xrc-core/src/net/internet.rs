//! The Internet path between the servers and the access network, as a
//! [`Component`]:
//!
//! - down: each flow's own access pipe (half the flow's extra RTT), then
//!   the shared forward link (rate, delay, drop-tail queue);
//! - up: the shared reverse link, then the flow's own return pipe.
//!
//! Packets are routed by their flow id: flow `k` has pipes `k`.
//!
//! ```text
//!  sender k ──pipe k──┐                          ┌── access network
//!                     ├── forward link ─────────►│
//!  sender j ──pipe j──┘                          │
//!  sender k ◄─pipe k──┐                          │
//!                     ├── reverse link ◄─────────┘
//!  sender j ◄─pipe j──┘
//! ```

use super::component::{Component, Dir, Io, Timers};
use super::observe::DropSite;
use super::observe::Observer as _;
use super::{Enqueued, Link, LinkConfig, Packet, Pipe, QueueCounters};
use crate::units::{SimDuration, SimTime};

/// The Internet path's timers.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum InternetTimer {
    /// The head of flow `k`'s access pipe reaches the forward link.
    FwdAccess(u32),
    /// The head of flow `k`'s return pipe reaches its sender.
    RevAccess(u32),
    /// The forward link finished serializing a packet.
    FwdTxDone,
    /// The head of the forward link's propagation pipe arrives.
    FwdArrive,
    RevTxDone,
    RevArrive,
}

pub struct InternetPath {
    fwd_access: Vec<Pipe>,
    rev_access: Vec<Pipe>,
    fwd: Link,
    rev: Link,
}

impl InternetPath {
    /// `access_delays[k]`: flow `k`'s one-way extra delay, each way.
    pub fn new(fwd: &LinkConfig, rev: &LinkConfig, access_delays: &[SimDuration]) -> Self {
        InternetPath {
            fwd_access: access_delays.iter().map(|&d| Pipe::new(d)).collect(),
            rev_access: access_delays.iter().map(|&d| Pipe::new(d)).collect(),
            fwd: Link::new(fwd),
            rev: Link::new(rev),
        }
    }

    #[inline(always)]
    fn enqueue(
        link: &mut Link,
        now: SimTime,
        p: Packet,
        site: DropSite,
        tx_done: InternetTimer,
        arrive: InternetTimer,
        cx: &mut impl Timers<InternetTimer>,
    ) {
        match link.enqueue(now, p) {
            Enqueued::Dropped(p) => cx.obs().dropped(now, site, None, &p),
            Enqueued::Queued | Enqueued::InPipe(None) => {}
            Enqueued::TxStarted(t) => cx.wake(t, tx_done),
            Enqueued::InPipe(Some(t)) => cx.wake(t, arrive),
        }
    }

    /// Byte conservation of the two links' queues.
    pub fn bytes_conserved(&self) -> Result<(), String> {
        self.fwd
            .bytes_conserved()
            .map_err(|e| format!("internet forward queue: {e}"))?;
        self.rev
            .bytes_conserved()
            .map_err(|e| format!("internet reverse queue: {e}"))
    }

    /// Conservation of every queue and pipe: arrived = departed + dropped + held.
    pub fn check_conservation(&self) -> Result<(), String> {
        let check = |name: &str, c: QueueCounters| {
            if c.conserved() {
                Ok(())
            } else {
                Err(format!("{name}: {c:?}"))
            }
        };
        check("internet forward", self.fwd.counters())?;
        check("internet reverse", self.rev.counters())?;
        let pipe = |p: &Pipe| {
            let (arrived, departed, held) = p.counters();
            QueueCounters {
                arrived,
                departed,
                dropped: 0,
                held,
            }
        };
        for (k, (f, r)) in self.fwd_access.iter().zip(&self.rev_access).enumerate() {
            check(&format!("flow {k} forward access"), pipe(f))?;
            check(&format!("flow {k} reverse access"), pipe(r))?;
        }
        Ok(())
    }
}

impl Component for InternetPath {
    type Timer = InternetTimer;

    fn start(&mut self, _now: SimTime, _cx: &mut impl Io<InternetTimer>) {}

    fn receive(&mut self, now: SimTime, dir: Dir, pkt: Packet, cx: &mut impl Io<InternetTimer>) {
        self.enter(now, dir, pkt, cx);
    }

    fn fire(&mut self, now: SimTime, timer: InternetTimer, cx: &mut impl Io<InternetTimer>) {
        if let Some(exit) = self.fire_inside(now, timer, cx) {
            while let Some(p) = self.take_leaving(now, exit) {
                cx.out(exit.dir(), p);
            }
            self.after_leaving(exit, cx);
        }
    }
}

/// Where the packets a timer lets out leave the path from
/// ([`InternetPath::fire_inside`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Exit {
    /// The forward link's far end: data toward the access network.
    Down,
    /// Flow `k`'s return pipe: ACKs toward sender `k`.
    Up(u32),
}

impl Exit {
    pub fn dir(self) -> Dir {
        match self {
            Exit::Down => Dir::Down,
            Exit::Up(_) => Dir::Up,
        }
    }
}

/// The path's calls for a driver that routes every packet at once (the
/// simulator's world), which is what [`Component`]'s `receive` and `fire`
/// are made of:
///
/// - [`InternetPath::enter`] lets nothing out (a packet entering either way
///   joins a pipe or a link's queue first), so it takes only [`Timers`]:
///   its driver lists no effects for it, and routing a packet into the
///   path never leads back into the driver's routing;
/// - a timer is [`InternetPath::fire_inside`], then, if it lets packets
///   out, [`InternetPath::take_leaving`] until `None` (the driver carries
///   each on before it takes the next) and [`InternetPath::after_leaving`].
///
/// Carrying each packet on as it is taken gives the same order as listing
/// them all first ([`Component::fire`] lists them): the queues they leave
/// from (the forward link's propagation pipe, a flow's return pipe) are fed
/// only by this path's own timers (the forward link's `FwdTxDone`, or
/// `FwdAccess` on a link without a rate; `RevArrive`), never by `enter`,
/// and carrying a packet on can only make packets enter. So the packets
/// taken, and the next arrival asked for after them, are those `fire`
/// lists, and every timer is asked for in the same order.
///
/// These are inlined into the driver: a packet passed through a call is
/// copied into its frame (72 bytes a time).
impl InternetPath {
    /// `pkt` enters at `now` travelling `dir`.
    #[inline(always)]
    pub fn enter(&mut self, now: SimTime, dir: Dir, pkt: Packet, io: &mut impl Timers<InternetTimer>) {
        match dir {
            Dir::Down => {
                let k = pkt.flow.0;
                if let Some(at) = self.fwd_access[k as usize].push(now, pkt) {
                    io.wake(at, InternetTimer::FwdAccess(k));
                }
            }
            Dir::Up => Self::enqueue(
                &mut self.rev,
                now,
                pkt,
                DropSite::InternetReverse,
                InternetTimer::RevTxDone,
                InternetTimer::RevArrive,
                io,
            ),
        }
    }

    /// `timer`, asked for at `now`, is due: moves what stays inside the
    /// path and asks for the timers that follow; returns where packets
    /// leave if this timer lets any out.
    #[inline(always)]
    pub fn fire_inside(
        &mut self,
        now: SimTime,
        timer: InternetTimer,
        io: &mut impl Timers<InternetTimer>,
    ) -> Option<Exit> {
        match timer {
            InternetTimer::FwdAccess(k) => {
                while let Some(p) = self.fwd_access[k as usize].pop_arrived(now) {
                    Self::enqueue(
                        &mut self.fwd,
                        now,
                        p,
                        DropSite::InternetForward,
                        InternetTimer::FwdTxDone,
                        InternetTimer::FwdArrive,
                        io,
                    );
                }
                if let Some(t) = self.fwd_access[k as usize].next_arrival() {
                    io.wake(t, InternetTimer::FwdAccess(k));
                }
                None
            }
            InternetTimer::RevAccess(k) => Some(Exit::Up(k)),
            InternetTimer::FwdTxDone | InternetTimer::RevTxDone => {
                let (link, arrive, tx_done) = if timer == InternetTimer::FwdTxDone {
                    (&mut self.fwd, InternetTimer::FwdArrive, InternetTimer::FwdTxDone)
                } else {
                    (&mut self.rev, InternetTimer::RevArrive, InternetTimer::RevTxDone)
                };
                let d = link.tx_done(now);
                if let Some(t) = d.arrival {
                    io.wake(t, arrive);
                }
                if let Some(t) = d.next_tx_done {
                    io.wake(t, tx_done);
                }
                None
            }
            InternetTimer::FwdArrive => Some(Exit::Down),
            InternetTimer::RevArrive => {
                while let Some(p) = self.rev.pop_arrived(now) {
                    let k = p.flow.0;
                    if let Some(t) = self.rev_access[k as usize].push(now, p) {
                        io.wake(t, InternetTimer::RevAccess(k));
                    }
                }
                if let Some(t) = self.rev.next_arrival() {
                    io.wake(t, InternetTimer::RevArrive);
                }
                None
            }
        }
    }

    /// The next packet due by `now` to leave from `exit`.
    #[inline(always)]
    pub fn take_leaving(&mut self, now: SimTime, exit: Exit) -> Option<Packet> {
        match exit {
            Exit::Down => self.fwd.pop_arrived(now),
            Exit::Up(k) => self.rev_access[k as usize].pop_arrived(now),
        }
    }

    /// Once the packets due have left from `exit`: asks for the next one's
    /// arrival.
    #[inline(always)]
    pub fn after_leaving(&mut self, exit: Exit, io: &mut impl Timers<InternetTimer>) {
        match exit {
            Exit::Down => {
                if let Some(t) = self.fwd.next_arrival() {
                    io.wake(t, InternetTimer::FwdArrive);
                }
            }
            Exit::Up(k) => {
                if let Some(t) = self.rev_access[k as usize].next_arrival() {
                    io.wake(t, InternetTimer::RevAccess(k));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::component::{Released, Standalone};
    use crate::net::observe::NullObserver;
    use crate::net::{FlowId, PacketKind, QueueLimit};
    use crate::units::BitRate;

    fn ms(v: u64) -> SimTime {
        SimTime::from_nanos(v * 1_000_000)
    }

    #[test]
    fn a_packet_crosses_its_flows_pipe_then_the_shared_link() {
        // Flow 1 has 4 ms of extra delay each way; the link 12 Mbit/s
        // (1 ms per 1500-byte packet) and 10 ms.
        let link = LinkConfig {
            rate: BitRate::try_from_mbps(12.0),
            delay: SimDuration::from_millis(10),
            limit: QueueLimit::packets(10),
        };
        let path = InternetPath::new(&link, &link, &[SimDuration::ZERO, SimDuration::from_millis(4)]);
        let mut obs = NullObserver;
        let mut s = Standalone::new(path, SimTime::ZERO, &mut obs);
        let mut out: Vec<Released> = Vec::new();
        let mut p = Packet::data(FlowId(1), 0, 1448, SimTime::ZERO, false);
        p.size = 1500;
        s.push(SimTime::ZERO, Dir::Down, p, &mut obs, &mut out);
        assert_eq!(s.next_wakeup(), Some(ms(4)));
        s.advance(ms(100), &mut obs, &mut out);
        assert_eq!(out.len(), 1);
        assert_eq!((out[0].at, out[0].dir), (ms(4 + 1 + 10), Dir::Down));
        // And back: the reverse link, then the flow's return pipe.
        let ack = Packet::ack(FlowId(1), 0, &[], SimTime::ZERO);
        let tx = BitRate::try_from_mbps(12.0).unwrap().tx_time(ack.size as u64).unwrap();
        s.push(ms(200), Dir::Up, ack, &mut obs, &mut out);
        s.advance(ms(300), &mut obs, &mut out);
        assert_eq!((out[1].at, out[1].dir), (ms(200 + 10 + 4) + tx, Dir::Up));
        assert!(s.component().check_conservation().is_ok());
    }

    /// What a driver saw: every timer asked for and every packet that left,
    /// in order.
    #[derive(Debug, PartialEq)]
    enum Seen {
        Wake(SimTime, InternetTimer),
        Left(SimTime, Dir, u32, u64),
    }

    struct Log {
        q: crate::engine::EventQueue<InternetTimer>,
        seen: Vec<Seen>,
    }

    impl crate::net::WakeSink<InternetTimer> for Log {
        fn wake(&mut self, at: SimTime, timer: InternetTimer) {
            self.seen.push(Seen::Wake(at, timer));
            self.q.schedule(at, timer);
        }
    }

    /// The hosts at both ends answer at once, as the world's do: data that
    /// leaves down brings an ACK up, an ACK that leaves up brings the next
    /// data packet down (until `budget` runs out).
    fn answer(p: &Packet, now: SimTime, budget: &mut u32) -> Option<(Dir, Packet)> {
        if *budget == 0 {
            return None;
        }
        *budget -= 1;
        Some(match &p.kind {
            PacketKind::Data(d) => (Dir::Up, Packet::ack(p.flow, d.seq + 1, &[], now)),
            PacketKind::Ack(a) => (Dir::Down, Packet::data(p.flow, a.ack, 1448, now, false)),
        })
    }

    fn left(now: SimTime, dir: Dir, p: &Packet) -> Seen {
        let n = match &p.kind {
            PacketKind::Data(d) => d.seq,
            PacketKind::Ack(a) => a.ack,
        };
        Seen::Left(now, dir, p.flow.0, n)
    }

    /// Runs `path` with packets entering at once as they are answered, by
    /// `Component::fire` with its effects listed then carried out
    /// (`listed`), or by the driver calls with each packet carried on as it
    /// is taken.
    fn drive(mut path: InternetPath, listed: bool) -> Vec<Seen> {
        use crate::net::{Cx, Direct, Effect};
        let mut log = Log {
            q: crate::engine::EventQueue::new(),
            seen: Vec::new(),
        };
        let mut obs = NullObserver;
        let mut pool: Vec<Vec<Effect<InternetTimer>>> = Vec::new();
        let mut budget = 400u32;
        let mut pending: Vec<(Dir, Packet)> = Vec::new();
        for i in 0..24u64 {
            let dir = if i % 5 == 4 { Dir::Up } else { Dir::Down };
            let p = if dir == Dir::Down {
                Packet::data(FlowId((i % 3) as u32), i, 1448, SimTime::ZERO, false)
            } else {
                Packet::ack(FlowId((i % 3) as u32), i, &[], SimTime::ZERO)
            };
            path.enter(
                SimTime::ZERO,
                dir,
                p,
                &mut Direct {
                    sink: &mut log,
                    obs: &mut obs,
                },
            );
        }
        while let Some((now, t)) = log.q.pop_until(ms(10_000)) {
            assert!(log.q.events_processed() < 100_000, "the driver does not settle");
            if listed {
                let mut cx = Cx::new(&mut pool, &mut log, &mut obs);
                path.fire(now, t, &mut cx);
                let Some(mut fx) = cx.finish() else { continue };
                for e in fx.drain(..) {
                    match e {
                        Effect::Wake(at, timer) => crate::net::WakeSink::wake(&mut log, at, timer),
                        Effect::Out(dir, p) => {
                            log.seen.push(left(now, dir, &p));
                            pending.extend(answer(&p, now, &mut budget));
                            for (d, q) in pending.drain(..) {
                                let mut cx = Cx::new(&mut pool, &mut log, &mut obs);
                                path.receive(now, d, q, &mut cx);
                                assert!(cx.finish().is_none(), "a packet entering lets nothing out");
                            }
                        }
                        Effect::Tick | Effect::Rearm => unreachable!("the path lists neither"),
                    }
                }
                pool.push(fx);
            } else if let Some(exit) = path.fire_inside(
                now,
                t,
                &mut Direct {
                    sink: &mut log,
                    obs: &mut obs,
                },
            ) {
                while let Some(p) = path.take_leaving(now, exit) {
                    log.seen.push(left(now, exit.dir(), &p));
                    if let Some((d, q)) = answer(&p, now, &mut budget) {
                        path.enter(
                            now,
                            d,
                            q,
                            &mut Direct {
                                sink: &mut log,
                                obs: &mut obs,
                            },
                        );
                    }
                }
                path.after_leaving(
                    exit,
                    &mut Direct {
                        sink: &mut log,
                        obs: &mut obs,
                    },
                );
            }
        }
        assert!(path.check_conservation().is_ok());
        log.seen
    }

    #[test]
    fn carrying_each_packet_on_as_it_is_taken_gives_the_order_of_the_listed_effects() {
        // Zero and non-zero extra delays, a link with a rate (packets queue
        // and drop) and one without (straight into its pipe): the hosts
        // answer within the instant, so packets enter the path while
        // others are still leaving it.
        let delays = [SimDuration::ZERO, SimDuration::from_millis(2), SimDuration::ZERO];
        for rate in [BitRate::try_from_mbps(12.0), None] {
            let link = LinkConfig {
                rate,
                delay: SimDuration::from_millis(5),
                limit: QueueLimit::packets(6),
            };
            let make = || InternetPath::new(&link, &link, &delays);
            let listed = drive(make(), true);
            let taken = drive(make(), false);
            let left = listed.iter().filter(|s| matches!(s, Seen::Left(..))).count();
            assert!(left > 100, "{rate:?}: only {left} packets left");
            assert_eq!(listed, taken, "{rate:?}");
        }
    }
}
