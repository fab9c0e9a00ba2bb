//! The world: builds the hosts and components a scenario describes, routes
//! packets between them, and runs the events.
//!
//! ```text
//!             Down ─────────────────────────────────────────────────►
//!  sender ──► Internet path ──────────► access network ──────────► receiver
//!  (flow k)   (pipe k, forward link)    (cell | trace | wired)       (UE)
//!  sender ◄── Internet path ◄────────── access network ◄────────── receiver
//!             (reverse link, pipe k)    (agent writes XRC option)
//!             ◄────────────────────────────────────────────────── Up
//! ```
//!
//! The world is a router. The network between the hosts is two
//! components ([`crate::net::Component`]): the Internet path
//! ([`InternetPath`]) and the access network ([`AccessNet`]). The world
//! keeps their timers in its one event queue beside the hosts' timers (TCP
//! retransmission and delayed-ACK timers, application ticks, flow start and
//! stop), calls them, and carries out their effects in the order given:
//! a packet a component lets out goes to the next component or host at
//! once, which is what makes every event's (time, sequence) order, and so
//! every output, reproducible. What components observe goes to the run's
//! recorder ([`RunRecorder`]) as an [`crate::net::Observer`]; what the hosts
//! do, the world tells it.
//!
//! Side channels are ports of the access network ([`crate::net::Access`]):
//! the world reads PBE-CC's estimate when a UE sends an ACK (the UE writes
//! it in), the oracle's capacity at each [`Effect::Tick`] (zero delay), and
//! NetAssist's report every period (delivered out of band after a delay,
//! with losses); the agent's XRC option and ABC's marks are written inside
//! the access network.
//!
//! With the Internet delay D and both traces, the trace topology is
//! Mahimahi's `mm-delay D mm-link UP DOWN` with the sender outside and the
//! receiver inside: data crosses the delay, then the downlink trace's queue;
//! ACKs the uplink trace's queue, then the delay.
//!
//! Timers use lazy cancellation: a host or component keeps its deadline,
//! the world keeps at most one pending event per timer at or before that
//! deadline, and a timer event that finds its deadline moved simply
//! re-arms.
//!
//! Bounds: a flow without `rwnd_bytes` has TCP's largest window (2^30
//! bytes, RFC 7323), which is also all a real receiver can advertise; the
//! world stops with a [`World::failure`] when more segments are in flight
//! than it can hold ([`MAX_SEGMENTS_IN_FLIGHT`]) or the per-event series
//! outgrow memory ([`MAX_EVENT_ROWS`]); and [`World::run_some`] returns
//! after a bounded number of events, so a caller can stop a long run.

use crate::engine::{EventQueue, RngStreams};
use crate::metrics::pcap::{PcapError, PcapTaps, TapFlow};
use crate::metrics::{FlowEnd, RecordOptions, Recorder, RunRecorder};
use crate::net::{
    Cx, Dir, Direct, Effect, Exit, InternetPath, InternetTimer, LinkConfig, Packet, PacketKind, QueueLimit, WakeSink,
};
use crate::transport::cc::Feedback;
use crate::transport::SenderOutput;
use crate::units::{BitRate, SimDuration, SimTime};

use super::access::{AccessNet, AccessTimer, TraceTexts};
use super::config::{ScenarioConfig, Topology, Traffic};
use super::flow::{Flow, FlowState};

mod control;
pub use control::Probe;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Ev {
    FlowStart(u32),
    FlowStop(u32),
    SenderTimer(u32),
    ReceiverTimer(u32),
    /// Flow `k`'s receiving application reads what arrived at this instant
    /// (`receiver.ack_on_read`): scheduled at the instant of the segment
    /// that made an ACK wait, so it runs after every packet the network
    /// already let out at that instant.
    ReceiverRead(u32),
    AppTick(u32),
    /// An out-of-band report reaches flow `k`'s sender.
    OutOfBand(u32),
    Internet(InternetTimer),
    Access(AccessTimer),
    Bin,
    NetAssist,
}

pub struct World {
    cfg: ScenarioConfig,
    q: EventQueue<Ev>,
    end: SimTime,
    flows: Vec<Flow>,
    inet: InternetPath,
    access: AccessNet,
    /// Live flows of each UE.
    live: Vec<u32>,
    rec: RunRecorder,
    bin: SimDuration,
    out: SenderOutput,
    /// A pool of effect lists for the access network's calls (calls nest:
    /// a packet carried on may call it again before its list is done).
    access_fx: Vec<Vec<Effect<AccessTimer>>>,
    finished: bool,
    /// Some flow is an oracle: the access network's sampling instants
    /// ([`Effect::Tick`]) are listed for it (otherwise they are no-ops).
    oracles: bool,
    /// The physical-limit oracles' opportunities (scratch).
    opportunities: Vec<(u64, SimTime)>,
    /// The access network lets every packet through ([`crate::net::Access::is_pass_through`]).
    access_pass_through: bool,
    /// Losses of NetAssist reports.
    na_rng: crate::engine::Rng,
    /// Why the run stopped before its end, if it did.
    failure: Option<String>,
    /// Segments in flight over all flows, and each flow's share of it.
    in_flight_total: u64,
    in_flight_limit: u64,
    rows_limit: usize,
    /// The taps at each flow's sender and UE, while they write
    /// ([`World::write_pcap`]).
    pcap: Option<Box<PcapTaps>>,
    /// Why the taps stopped writing, if a write failed.
    pcap_error: Option<PcapError>,
}

impl WakeSink<InternetTimer> for EventQueue<Ev> {
    fn wake(&mut self, at: SimTime, timer: InternetTimer) {
        self.schedule(at, Ev::Internet(timer));
    }
}

impl WakeSink<AccessTimer> for EventQueue<Ev> {
    fn wake(&mut self, at: SimTime, timer: AccessTimer) {
        self.schedule(at, Ev::Access(timer));
    }
}

/// The most segments the world keeps in flight over all its flows: about
/// 350 bytes of state each (packet, scoreboard entry, event), so 2^22
/// segments is about 1.5 GB. Only a path without a bottleneck that drops
/// gets there (a BDP of 6 GB at 1448-byte segments).
pub const MAX_SEGMENTS_IN_FLIGHT: u64 = 1 << 22;
/// The most rows the per-event series (RTT samples, window changes, drops,
/// retransmissions, queuing delays, feedback) may hold: about 25 bytes
/// each, copied twice on the way to Parquet, so 10^8 rows is about 7 GB at
/// its peak. (The sampled series are bounded by validation.)
pub const MAX_EVENT_ROWS: usize = 100_000_000;
/// Events between two checks of the recorded rows.
const ROWS_CHECK_EVERY: u64 = 1 << 16;
/// Debug builds check [`World::check_invariants`] every this many events
/// and at the end of every run.
#[cfg(debug_assertions)]
const INVARIANTS_EVERY: u64 = 64;

/// What the caller gets at the end.
pub struct RunResult {
    pub recorder: Recorder,
    pub events: u64,
    pub sim_time: SimTime,
    /// Why the run stopped before its end (then `sim_time` is earlier).
    pub failure: Option<String>,
}

fn ms(v: f64) -> SimDuration {
    SimDuration::try_from_millis_f64(v).expect("validated")
}
fn secs(v: f64) -> SimTime {
    SimTime::ZERO + SimDuration::try_from_secs_f64(v).expect("validated")
}

impl World {
    /// Builds the world. For the trace topology, `trace_text` may supply the
    /// Mahimahi downlink trace's contents; otherwise the file is read.
    pub fn new(cfg: ScenarioConfig, trace_text: Option<&str>) -> Result<World, String> {
        Self::with_traces(
            cfg,
            TraceTexts {
                downlink: trace_text,
                uplink: None,
            },
        )
    }

    /// Builds the world with the contents of the trace topology's traces
    /// given (those not given are read from their files).
    pub fn with_traces(cfg: ScenarioConfig, texts: TraceTexts<'_>) -> Result<World, String> {
        cfg.validate()?;
        let streams = RngStreams::new(cfg.seed);
        let rate = |v: Option<f64>| v.map(|r| BitRate::try_from_mbps(r).expect("validated"));
        let limit = QueueLimit {
            packets: cfg.internet.buffer_packets,
            bytes: cfg.internet.buffer_bytes,
        };
        let delay = ms(cfg.internet.delay_ms);
        let access_delays: Vec<SimDuration> = cfg.flows.iter().map(|f| ms(f.extra_rtt_ms / 2.0)).collect();
        let inet = InternetPath::new(
            &LinkConfig {
                rate: rate(cfg.internet.rate_mbps),
                delay,
                limit,
            },
            &LinkConfig {
                rate: rate(cfg.internet.reverse_rate_mbps),
                delay,
                limit,
            },
            &access_delays,
        );
        let access = AccessNet::build(&cfg, texts, &streams)?;
        let n_ues = access.num_ues();
        let flows = (0..cfg.flows.len())
            .map(|k| Flow::new(k, &cfg.flows[k], &streams))
            .collect::<Result<Vec<_>, _>>()?;
        let end = secs(cfg.duration_s);
        let bin = ms(cfg.output.bin_ms);
        let rec = RunRecorder::new(
            RecordOptions {
                bin,
                rlc_sample_ttis: cfg.output.rlc_sample_ttis,
                cwnd_trace: cfg.output.cwnd_trace,
                rtt_trace: cfg.output.rtt_trace,
                queue_delay_trace: cfg.output.queue_delay_trace,
            },
            n_ues,
            flows.len(),
        );
        let mut w = World {
            q: EventQueue::new(),
            end,
            flows,
            inet,
            access,
            live: vec![0; n_ues],
            rec,
            bin,
            out: SenderOutput::default(),
            access_fx: Vec::new(),
            finished: false,
            oracles: false,
            opportunities: Vec::new(),
            access_pass_through: false,
            na_rng: streams.stream("netassist/loss"),
            failure: None,
            in_flight_total: 0,
            in_flight_limit: MAX_SEGMENTS_IN_FLIGHT,
            rows_limit: MAX_EVENT_ROWS,
            pcap: None,
            pcap_error: None,
            cfg,
        };
        for k in 0..w.flows.len() {
            let start = w.flows[k].start;
            w.q.schedule(start, Ev::FlowStart(k as u32));
            if let Some(s) = w.cfg.flows[k].stop_s {
                w.q.schedule(secs(s), Ev::FlowStop(k as u32));
            }
        }
        w.oracles = w
            .flows
            .iter()
            .any(|f| f.sender.signals().oracle || f.sender.signals().oracle_schedule);
        for k in 0..w.flows.len() {
            if !w.flows[k].sender.signals().oracle_schedule {
                continue;
            }
            let known = match w.flows[k].ue {
                Some(ue) => w.access.oracle_schedule(ue, w.cfg.flows[k].tcp.mss),
                None => Err("the flow has no UE".into()),
            };
            if let Err(why) = known {
                return Err(format!(
                    "flows.{k}.cc = \"oracle\": the physical-limit oracle follows its bottleneck's future \
                     delivery opportunities, which this scenario cannot know ahead (topology {:?}, ue {:?}): {why}; \
                     use cc = \"oracle-rate\", the rate oracle, which is not a bound",
                    w.cfg.topology, w.flows[k].ue
                ));
            }
        }
        w.access_pass_through = w.access.is_pass_through();
        let mut cx = Cx::new(&mut w.access_fx, &mut w.q, &mut w.rec).with_ticks(w.oracles);
        w.access.start(SimTime::ZERO, &mut cx);
        if let Some(fx) = cx.finish() {
            w.access_carry_out(SimTime::ZERO, fx);
        }
        // The last bin is closed by `finish`, after every event at the end.
        if SimTime::ZERO + bin < end {
            w.q.schedule(SimTime::ZERO + bin, Ev::Bin);
        }
        for k in 0..w.flows.len() {
            w.flows[k].base_rtt = w.base_rtt(k);
        }
        if w.flows.iter().any(|f| f.sender.signals().pbe) {
            w.access.enable_pbe();
        }
        if w.flows.iter().any(|f| f.sender.signals().abc) {
            w.access.enable_abc();
        }
        for k in 0..w.flows.len() {
            if w.flows[k].sender.signals().xrc_air {
                w.access.enable_air_delay(crate::net::FlowId(k as u32));
            }
        }
        if w.flows.iter().any(|f| f.sender.signals().net_assist) {
            w.access.enable_net_assist();
            let period = w.net_assist_period();
            w.q.schedule(SimTime::ZERO + period, Ev::NetAssist);
        }
        Ok(w)
    }

    pub fn now(&self) -> SimTime {
        self.q.now()
    }
    pub fn end_time(&self) -> SimTime {
        self.end
    }
    pub fn events(&self) -> u64 {
        self.q.events_processed()
    }
    pub fn done(&self) -> bool {
        self.finished
    }

    /// Why the run stopped before its end (it then counts as done).
    pub fn failure(&self) -> Option<&str> {
        self.failure.as_deref()
    }

    /// Writes a pcap file of what a tap at each flow's sender and one at
    /// its UE see into `dir` (created if need be), as the run goes:
    /// `flow{k}-sender.pcap` and `flow{k}-ue.pcap` ([`crate::metrics::pcap`]).
    /// Call before running; the scenario's `output.pcap` asks the caller to.
    /// A write that fails later stops the run ([`World::failure`],
    /// [`World::pcap_error`]).
    pub fn write_pcap(&mut self, dir: &std::path::Path) -> Result<(), PcapError> {
        // A flow's receive window: `Flow::new`'s (TCP's largest by default).
        let flows: Vec<TapFlow> = (self.flows.iter().zip(&self.cfg.flows))
            .map(|(f, c)| TapFlow {
                ue: f.ue,
                rwnd_bytes: c.tcp.rwnd_bytes.unwrap_or(crate::transport::MAX_WINDOW_BYTES),
            })
            .collect();
        self.pcap = Some(Box::new(PcapTaps::create(dir, &flows)?));
        Ok(())
    }

    /// The write to a pcap file that failed and stopped the run, if one did.
    pub fn pcap_error(&self) -> Option<&PcapError> {
        self.pcap_error.as_ref()
    }

    /// A capture's write failed: the run stops, the taps write no more.
    #[cold]
    #[inline(never)]
    fn pcap_failed(&mut self, e: PcapError) {
        self.pcap = None;
        if self.failure.is_none() {
            self.failure = Some(e.to_string());
        }
        self.pcap_error.get_or_insert(e);
    }

    /// `p` of flow `f` passes its sender. Without taps, one branch: the
    /// rest is out of line, so the routing inlined around it keeps its
    /// frame.
    #[inline(always)]
    fn tap_sender(&mut self, now: SimTime, f: usize, p: &Packet) {
        if self.pcap.is_some() {
            self.tap(false, now, f, p);
        }
    }

    /// `p` of flow `f` passes its UE.
    #[inline(always)]
    fn tap_ue(&mut self, now: SimTime, f: usize, p: &Packet) {
        if self.pcap.is_some() {
            self.tap(true, now, f, p);
        }
    }

    /// The packets flow `f`'s sender just sent pass it.
    #[cold]
    #[inline(never)]
    fn tap_sent(&mut self, now: SimTime, f: usize) {
        let Some(t) = self.pcap.as_deref_mut() else { return };
        for p in &self.out.packets {
            if let Err(e) = t.at_sender(now, f, p) {
                self.pcap_failed(e);
                return;
            }
        }
    }

    #[cold]
    #[inline(never)]
    fn tap(&mut self, at_ue: bool, now: SimTime, f: usize, p: &Packet) {
        let Some(t) = self.pcap.as_deref_mut() else { return };
        let written = if at_ue {
            t.at_ue(now, f, p)
        } else {
            t.at_sender(now, f, p)
        };
        if let Err(e) = written {
            self.pcap_failed(e);
        }
    }

    /// Lowers the limit of segments in flight (tests).
    #[doc(hidden)]
    pub fn limit_segments_in_flight(&mut self, segments: u64) {
        self.in_flight_limit = segments;
    }

    /// Lowers the limit of per-event rows (tests).
    #[doc(hidden)]
    pub fn limit_recorded_rows(&mut self, rows: usize) {
        self.rows_limit = rows;
    }

    /// Runs events up to `until` (capped at the scenario's end). Returns
    /// whether the run is complete (or failed: see [`World::failure`]).
    pub fn run_until(&mut self, until: SimTime) -> bool {
        while !self.run_some(until, u64::MAX) {}
        self.finished
    }

    /// Runs at most `max_events` events up to `until` (capped at the
    /// scenario's end). Returns whether it got to `until`, the end, or a
    /// failure; `false` means call again. An event's work is bounded (the
    /// largest is a burst of one window of packets), so a caller stepping
    /// with a small `max_events` can stop a run within a step.
    pub fn run_some(&mut self, until: SimTime, max_events: u64) -> bool {
        if self.finished {
            return true;
        }
        let limit = until.min(self.end);
        let mut n = 0u64;
        while n < max_events {
            let Some((now, ev)) = self.q.pop_until(limit) else {
                break;
            };
            self.dispatch(now, ev);
            n += 1;
            if self.q.events_processed().is_multiple_of(ROWS_CHECK_EVERY) {
                self.check_rows();
            }
            #[cfg(debug_assertions)]
            if self.q.events_processed().is_multiple_of(INVARIANTS_EVERY) {
                self.assert_invariants();
            }
            if self.failure.is_some() {
                self.finish();
                return true;
            }
        }
        if n == max_events && self.q.peek_time().is_some_and(|t| t <= limit) {
            return false;
        }
        if limit >= self.end {
            self.q.advance_to(self.end);
            self.finish();
        } else {
            self.q.advance_to(limit);
        }
        true
    }

    fn check_rows(&mut self) {
        let rows = self.rec.tables().event_rows();
        if rows > self.rows_limit {
            let r = self.rec.tables();
            self.failure = Some(format!(
                "output: at {} the run recorded {rows} rows of per-event series (rtt {}, cwnd {}, \
                 queue_delay {}, drops {}, retransmits {}), more than the {} it can hold in memory; \
                 set output.rtt_trace = false, output.cwnd_trace = false or output.queue_delay_trace = false, \
                 or shorten duration_s",
                self.q.now(),
                r.rtt.len(),
                r.cwnd.len(),
                r.queue_delay.len(),
                r.drops.len(),
                r.retransmits.len(),
                self.rows_limit
            ));
        }
    }

    /// The rows recorded and not yet taken.
    /// The cellular physical-limit oracle's shadow against the cell (TTIs
    /// compared, TTIs in which the oracle UE's blocks differed;
    /// `ran::shadow`); `None` without one.
    pub fn oracle_shadow_agreement(&self) -> Option<(u64, u64)> {
        self.access.oracle_shadow_agreement()
    }
    pub fn recorder(&self) -> &Recorder {
        self.rec.tables()
    }

    /// The recorder, for a caller that takes the rows as the run goes:
    /// export them ([`Recorder::tables`]), then [`Recorder::clear_rows`].
    /// A run whose rows are taken holds only those since the last take.
    pub fn recorder_mut(&mut self) -> &mut Recorder {
        self.rec.tables_mut()
    }

    /// Runs to the end and hands back the recorded data.
    pub fn run(mut self) -> RunResult {
        self.run_until(SimTime::MAX);
        self.into_result()
    }

    pub fn into_result(mut self) -> RunResult {
        if !self.finished {
            self.finish();
        }
        RunResult {
            events: self.q.events_processed(),
            sim_time: self.q.now(),
            recorder: self.rec.into_tables(),
            failure: self.failure,
        }
    }

    /// One event. Inlined into `run_some`'s loop: out of line, its frame
    /// (the packets of the inlined routing below) was saved and restored
    /// on every event, 7.8 M of the dumbbell's 156.3 M instructions.
    #[inline(always)]
    fn dispatch(&mut self, now: SimTime, ev: Ev) {
        match ev {
            Ev::FlowStart(f) => self.flow_start(now, f as usize),
            Ev::FlowStop(f) => self.flow_stop(now, f as usize),
            Ev::SenderTimer(f) => {
                let f = f as usize;
                let fl = &mut self.flows[f];
                fl.sender_timer_fired(now);
                if fl.state != FlowState::Waiting && fl.state != FlowState::Done {
                    if fl.sender.next_timer().is_some_and(|t| t <= now) {
                        self.out.clear();
                        fl.sender.on_timer(now, &mut self.out);
                        self.after_sender(now, f);
                    } else {
                        self.arm_sender_timer(f);
                    }
                }
            }
            Ev::ReceiverTimer(f) => {
                let f = f as usize;
                let fl = &mut self.flows[f];
                fl.receiver_timer_fired(now);
                if let Some(ack) = fl.receiver.on_timer(now) {
                    self.send_ack(now, f, ack);
                }
                self.arm_receiver_timer(f);
            }
            Ev::ReceiverRead(f) => {
                let f = f as usize;
                if let Some(ack) = self.flows[f].receiver.on_read(now) {
                    self.send_ack(now, f, ack);
                }
                self.arm_receiver_timer(f);
            }
            Ev::AppTick(f) => self.on_app_tick(now, f as usize),
            Ev::OutOfBand(f) => self.on_out_of_band(now, f as usize),
            Ev::Internet(t) => self.inet_fire(now, t),
            Ev::Access(t) => self.access_fire(now, t),
            Ev::Bin => self.on_bin(now),
            Ev::NetAssist => self.on_net_assist(now),
        }
    }

    // ----- routing between the components and the hosts -----
    //
    // The Internet path lets no packet out of `enter` (`InternetPath`'s
    // driver calls), and its timers hand their packets over one at a time,
    // so its calls need no list of effects and the routing below has one
    // cycle only, through the access network's list (`access_carry_out`,
    // kept out of line): a packet's way across the wired topology (a timer
    // of the path, the receiver or sender, the path again) is one
    // non-recursive chain the compiler inlines whole, whatever else
    // changes around it.

    /// A packet enters the Internet path. (This, `access_receive`,
    /// `InternetPath::enter` and the Internet path's link and pipe calls
    /// are inlined: a packet passed through a call is copied into its
    /// frame, 72 bytes a time.)
    #[inline(always)]
    fn inet_receive(&mut self, now: SimTime, dir: Dir, p: Packet) {
        let mut io = Direct {
            sink: &mut self.q,
            obs: &mut self.rec,
        };
        self.inet.enter(now, dir, p, &mut io);
    }

    /// An Internet path timer is due. The packets it lets out are carried
    /// on one at a time, each before the next is taken: data leaving it
    /// enters the access network, ACKs reach their senders.
    #[inline(always)]
    fn inet_fire(&mut self, now: SimTime, t: InternetTimer) {
        let mut io = Direct {
            sink: &mut self.q,
            obs: &mut self.rec,
        };
        let Some(exit) = self.inet.fire_inside(now, t, &mut io) else {
            return;
        };
        while let Some(p) = self.inet.take_leaving(now, exit) {
            match exit {
                Exit::Down => self.access_receive(now, Dir::Down, p),
                Exit::Up(_) => {
                    let f = p.flow.0 as usize;
                    self.sender_receive(now, f, p);
                }
            }
        }
        let mut io = Direct {
            sink: &mut self.q,
            obs: &mut self.rec,
        };
        self.inet.after_leaving(exit, &mut io);
    }

    /// A packet enters the access network (one that lets every packet
    /// through at once, as the wired topology's, is routed around).
    #[inline(always)]
    fn access_receive(&mut self, now: SimTime, dir: Dir, p: Packet) {
        if self.access_pass_through {
            match dir {
                Dir::Down => {
                    let f = p.flow.0 as usize;
                    self.receiver_receive(now, f, p);
                }
                Dir::Up => self.inet_receive(now, Dir::Up, p),
            }
            return;
        }
        let mut cx = Cx::new(&mut self.access_fx, &mut self.q, &mut self.rec).with_ticks(self.oracles);
        self.access.receive(now, dir, p, &mut cx);
        if let Some(fx) = cx.finish() {
            self.access_carry_out(now, fx);
        }
    }

    fn access_fire(&mut self, now: SimTime, t: AccessTimer) {
        let mut cx = Cx::new(&mut self.access_fx, &mut self.q, &mut self.rec).with_ticks(self.oracles);
        self.access.fire(now, t, &mut cx);
        if let Some(fx) = cx.finish() {
            self.access_carry_out(now, fx);
        }
    }

    /// Carries out the access network's effects in order: data leaving it
    /// reaches its receiver (through its UE), ACKs enter the Internet path,
    /// a sampling instant feeds the oracles. The one call of the routing's
    /// cycle (`access_receive` → here → `receiver_receive` → `send_ack` →
    /// `access_receive`) left out of line, so the compiler's choice of
    /// where to break the cycle cannot move with unrelated code.
    #[inline(never)]
    fn access_carry_out(&mut self, now: SimTime, mut fx: Vec<Effect<AccessTimer>>) {
        for e in fx.drain(..) {
            match e {
                Effect::Wake(t, timer) => self.q.schedule(t, Ev::Access(timer)),
                Effect::Out(Dir::Down, p) => {
                    let f = p.flow.0 as usize;
                    if let Some(ue) = self.access.ue_of(p.flow) {
                        self.rec.ue_delivered(ue, p.size as f64 * 8.0);
                    }
                    self.receiver_receive(now, f, p);
                }
                Effect::Out(Dir::Up, p) => self.inet_receive(now, Dir::Up, p),
                Effect::Tick => self.feed_oracles(now),
                Effect::Rearm => {
                    let mut cx = Cx::new(&mut self.access_fx, &mut self.q, &mut self.rec).with_ticks(self.oracles);
                    self.access.rearm(now, &mut cx);
                    if let Some(more) = cx.finish() {
                        self.access_carry_out(now, more);
                    }
                }
            }
        }
        self.access_fx.push(fx);
    }

    // ----- the hosts -----

    fn flow_start(&mut self, now: SimTime, f: usize) {
        let traffic = self.cfg.flows[f].traffic.clone();
        let fl = &mut self.flows[f];
        if fl.state != FlowState::Waiting {
            return;
        }
        fl.state = FlowState::Running;
        self.rec.flow_started(f, fl.ue);
        if let Some(u) = fl.ue {
            self.live[u] += 1;
            self.access.set_live_flows(u, self.live[u]);
        }
        self.out.clear();
        let fl = &mut self.flows[f];
        match traffic {
            Traffic::Bulk => fl.sender.app_write(now, u64::MAX, &mut self.out),
            Traffic::Transfer { size_bytes } => {
                fl.sender.app_write(now, size_bytes, &mut self.out);
                fl.sender.app_close(now, false, &mut self.out);
            }
            Traffic::Video { .. } => {
                if let Some(v) = fl.video.as_mut() {
                    v.start_chunk(now);
                }
                self.q.schedule(now, Ev::AppTick(f as u32));
            }
        }
        self.after_sender(now, f);
        if self.flows[f].sender.signals().oracle_schedule {
            self.feed_schedule(now, f);
        }
    }

    /// The video source writes its next millisecond of the chunk, or starts
    /// a chunk when it is time.
    fn on_app_tick(&mut self, now: SimTime, f: usize) {
        let fl = &mut self.flows[f];
        if fl.state != FlowState::Running {
            return;
        }
        let Some(v) = fl.video.as_mut() else { return };
        if v.ready() {
            v.start_chunk(now);
        }
        let (bytes, more) = v.tick(now);
        if more {
            self.q.schedule(now + crate::traffic::VIDEO_TICK, Ev::AppTick(f as u32));
        }
        if bytes > 0 {
            self.out.clear();
            self.flows[f].sender.app_write(now, bytes, &mut self.out);
            self.after_sender(now, f);
        }
    }

    fn flow_stop(&mut self, now: SimTime, f: usize) {
        let fl = &mut self.flows[f];
        if fl.state != FlowState::Running {
            return;
        }
        fl.truncated = matches!(self.cfg.flows[f].traffic, Traffic::Transfer { .. })
            && fl.sender.write_end() > fl.sender.snd_nxt();
        fl.sender.app_close(now, true, &mut self.out);
        fl.state = FlowState::Closing;
        self.check_flow_done(now, f);
    }

    fn check_flow_done(&mut self, now: SimTime, f: usize) {
        let fl = &mut self.flows[f];
        if fl.is_live() && fl.sender.finished() {
            fl.state = FlowState::Done;
            fl.end = Some(now);
            self.rec.flow_ended(f, fl.ue);
            if let Some(u) = fl.ue {
                self.live[u] -= 1;
                self.access.set_live_flows(u, self.live[u]);
            }
        }
    }

    /// Routes what the sender produced and records its state.
    fn after_sender(&mut self, now: SimTime, f: usize) {
        if self.pcap.is_some() {
            // Before any enters the path, which lets none out at once: the
            // taps see them in the order sent (per packet here, the loop
            // below kept each packet in memory to lend it: 1.3% more
            // instructions in the dumbbell without taps).
            self.tap_sent(now, f);
        }
        let mut pkts = std::mem::take(&mut self.out.packets);
        for p in pkts.drain(..) {
            self.inet_receive(now, Dir::Down, p);
        }
        self.out.packets = pkts;
        self.rec.sender(now, f, &mut self.out, &self.flows[f].sender);
        let fl = &mut self.flows[f];
        let in_flight = fl.sender.in_flight();
        self.in_flight_total = self.in_flight_total - fl.in_flight as u64 + in_flight as u64;
        fl.in_flight = in_flight;
        if self.in_flight_total > self.in_flight_limit && self.failure.is_none() {
            self.failure = Some(format!(
                "flows: at {now} the flows have {} segments in flight (flow {f}: {in_flight}), more than \
                 the {} the simulator holds in memory: the path has no bottleneck that drops packets; \
                 give it a rate (internet.rate_mbps) and a queue limit, or set tcp.rwnd_bytes",
                self.in_flight_total, self.in_flight_limit
            ));
        }
        self.arm_sender_timer(f);
        self.check_flow_done(now, f);
    }

    fn arm_sender_timer(&mut self, f: usize) {
        if let Some(t) = self.flows[f].arm_sender() {
            self.q.schedule(t, Ev::SenderTimer(f as u32));
        }
    }

    fn arm_receiver_timer(&mut self, f: usize) {
        if let Some(t) = self.flows[f].arm_receiver() {
            self.q.schedule(t, Ev::ReceiverTimer(f as u32));
        }
    }

    fn sender_receive(&mut self, now: SimTime, f: usize, p: Packet) {
        self.tap_sender(now, f, &p);
        let PacketKind::Ack(ack) = &p.kind else { return };
        if self.flows[f].state == FlowState::Waiting || self.flows[f].state == FlowState::Done {
            return;
        }
        if let Some(x) = &ack.xrc() {
            self.rec.feedback(now, f, x);
        }
        self.out.clear();
        self.flows[f].sender.on_ack(now, ack, &mut self.out);
        self.after_sender(now, f);
    }

    #[inline(always)]
    fn receiver_receive(&mut self, now: SimTime, f: usize, p: Packet) {
        self.tap_ue(now, f, &p);
        let PacketKind::Data(d) = &p.kind else { return };
        let fl = &mut self.flows[f];
        let r = fl.receiver.on_data(now, d);
        self.rec.app_delivered(f, r.delivered);
        if r.delivered > 0 {
            let total = fl.receiver.delivered_total();
            if let Traffic::Transfer { size_bytes } = self.cfg.flows[f].traffic {
                if total >= size_bytes && fl.completed_at.is_none() {
                    fl.completed_at = Some(now);
                }
            }
            if let Some(v) = fl.video.as_mut() {
                if let Some(next) = v.on_delivered(now, total) {
                    self.q.schedule(next, Ev::AppTick(f as u32));
                }
            }
        }
        if r.read_owed {
            self.q.schedule(now, Ev::ReceiverRead(f as u32));
        }
        if let Some(ack) = r.ack {
            self.send_ack(now, f, ack);
        }
        self.arm_receiver_timer(f);
    }

    /// The receiver's ACK leaves the UE: a PBE-CC flow's UE writes its own
    /// capacity estimate into it first.
    #[inline(always)]
    fn send_ack(&mut self, now: SimTime, f: usize, mut ack: Packet) {
        if self.flows[f].sender.signals().pbe {
            if let Some(r) = self
                .access
                .ue_of(ack.flow)
                .and_then(|ue| self.access.pbe_rate_bps(ue, now))
            {
                ack.set_pbe_option(r);
            }
        }
        self.tap_ue(now, f, &ack);
        self.access_receive(now, Dir::Up, ack);
    }

    // ----- side channels -----

    /// Gives every oracle flow its UE's fair share of the capacity it will
    /// meet and its path's base RTT, with zero delay.
    fn feed_oracles(&mut self, now: SimTime) {
        for f in 0..self.flows.len() {
            let fl = &self.flows[f];
            if fl.sender.signals().oracle_schedule {
                self.feed_schedule(now, f);
                continue;
            }
            if !fl.sender.signals().oracle || !fl.is_live() {
                continue;
            }
            let Some(ue) = fl.ue else { continue };
            // When the flow's packets sent now reach the access network,
            // and over one base RTT: a trace's per-millisecond
            // opportunities are too bursty to size a window on.
            let fc = &self.cfg.flows[f];
            let ahead = ms(fc.extra_rtt_ms / 2.0 + self.cfg.internet.delay_ms);
            let span = fl.base_rtt.max(SimDuration::from_millis(10));
            let Some(cap) = self.access.oracle_capacity_bps(ue, now, ahead, span) else {
                continue;
            };
            let fb = Feedback::Oracle {
                capacity_bps: (cap / self.live[ue].max(1) as f64) as u64,
                base_rtt: fl.base_rtt,
            };
            self.out.clear();
            self.flows[f].sender.on_out_of_band(now, &fb, &mut self.out);
            self.after_sender(now, f);
        }
    }

    /// Gives the physical-limit oracle of flow `f` (`cc::oracle`) a
    /// departure for each of its bottleneck's opportunities that is its own
    /// and that it can reach, up to one millisecond beyond what it can reach
    /// now: a full packet sent at `at = T − D_fwd − 1 ns` reaches the trace
    /// link 1 ns before the opportunity at `T` (the least margin by
    /// which a packet can be carried by it, `trace_link` rule 6). With `n`
    /// live flows on the UE, the flow's opportunities are those whose index
    /// is its rank among them modulo `n`. On an Internet link with a rate,
    /// packets for one instant leave back to back, each one serialization
    /// earlier than the next.
    fn feed_schedule(&mut self, now: SimTime, f: usize) {
        let fl = &self.flows[f];
        if !fl.is_live() {
            return;
        }
        let Some(ue) = fl.ue else { return };
        let fc = &self.cfg.flows[f];
        let ser = self
            .cfg
            .internet
            .rate_mbps
            .and_then(BitRate::try_from_mbps)
            .and_then(|r| r.tx_time((fc.tcp.mss + 52) as u64))
            .unwrap_or(SimDuration::ZERO);
        let d_fwd = ms(fc.extra_rtt_ms / 2.0) + ms(self.cfg.internet.delay_ms) + ser;
        let to = now + d_fwd + SimDuration::from_millis(1);
        let from = fl.oracle_fed.max(now + d_fwd);
        if to <= from {
            return;
        }
        self.flows[f].oracle_fed = to;
        let n = self.live[ue].max(1) as u64;
        let rank = (0..f)
            .filter(|&j| self.flows[j].ue == Some(ue) && self.flows[j].is_live())
            .count() as u64;
        let mut opp = std::mem::take(&mut self.opportunities);
        opp.clear();
        self.access.oracle_opportunities(ue, from, to, &mut opp);
        opp.retain(|&(k, _)| k % n == rank % n);
        let one_ns = SimDuration::from_nanos(1);
        let mut i = 0;
        while i < opp.len() {
            let t = opp[i].1;
            let same = opp[i..].iter().take_while(|&&(_, u)| u == t).count();
            for j in 0..same {
                let back = d_fwd + one_ns + ser * (same - 1 - j) as u64;
                if t.since_start() < back {
                    continue;
                }
                let fb = Feedback::Departure { at: t - back };
                self.out.clear();
                self.flows[f].sender.on_out_of_band(now, &fb, &mut self.out);
                self.after_sender(now, f);
            }
            i += same;
        }
        self.opportunities = opp;
    }

    /// The path's propagation and minimum processing delay, both ways: what
    /// an RTT sample would read with empty queues and perfect alignment.
    fn base_rtt(&self, f: usize) -> SimDuration {
        let fc = &self.cfg.flows[f];
        let mut rtt = ms(fc.extra_rtt_ms) + ms(self.cfg.internet.delay_ms) * 2;
        let ser = |r: Option<f64>, bytes: u64| {
            r.and_then(BitRate::try_from_mbps)
                .and_then(|r| r.tx_time(bytes))
                .unwrap_or(SimDuration::ZERO)
        };
        rtt += ser(self.cfg.internet.rate_mbps, (fc.tcp.mss + 52) as u64);
        rtt += ser(self.cfg.internet.reverse_rate_mbps, 52);
        rtt + self.access.min_rtt()
    }

    fn net_assist_period(&self) -> SimDuration {
        match (&self.cfg.cell, self.cfg.topology) {
            (Some(c), Topology::Cellular) => ms(c.net_assist.period_ms),
            _ => ms(50.0),
        }
    }

    /// NATCP's NetAssist: a report per UE to every subscribed flow, out of band.
    fn on_net_assist(&mut self, now: SimTime) {
        let wired = ms(self.cfg.internet.delay_ms) * 2;
        let (delay, loss) = match (&self.cfg.cell, self.cfg.topology) {
            (Some(c), Topology::Cellular) => (c.net_assist.delay_ms, c.net_assist.loss),
            _ => (None, 0.0),
        };
        let delay = ms(delay.unwrap_or(self.cfg.internet.delay_ms));
        for ue in 0..self.live.len() {
            let subscribed = self
                .flows
                .iter()
                .any(|f| f.ue == Some(ue) && f.sender.signals().net_assist);
            // Every UE's period closes, subscribed or not.
            let Some(report) = self.access.net_assist_report(ue, now, wired) else {
                continue;
            };
            if !subscribed {
                continue;
            }
            for f in 0..self.flows.len() {
                if self.flows[f].ue != Some(ue) || !self.flows[f].sender.signals().net_assist {
                    continue;
                }
                if loss > 0.0 && self.na_rng.bernoulli(loss) {
                    continue;
                }
                // The server's own propagation delay is part of its path's
                // minimum RTT (NATCP's server.cc adds it too).
                let fb = Feedback::NetAssist {
                    bw_bps: report.bw_bps,
                    min_rtt: report.min_rtt + ms(self.cfg.flows[f].extra_rtt_ms),
                    flows: report.flows,
                };
                let at = now + delay;
                if self.flows[f].oob.is_empty() {
                    self.q.schedule(at, Ev::OutOfBand(f as u32));
                }
                self.flows[f].oob.push_back((at, fb));
            }
        }
        let next = now + self.net_assist_period();
        if next < self.end {
            self.q.schedule(next, Ev::NetAssist);
        }
    }

    /// Out-of-band reports due at flow `f`'s sender.
    fn on_out_of_band(&mut self, now: SimTime, f: usize) {
        while self.flows[f].oob.front().is_some_and(|(t, _)| *t <= now) {
            let (_, fb) = self.flows[f].oob.pop_front().expect("front exists");
            if self.flows[f].is_live() {
                self.out.clear();
                self.flows[f].sender.on_out_of_band(now, &fb, &mut self.out);
                self.after_sender(now, f);
            }
        }
        if let Some((t, _)) = self.flows[f].oob.front() {
            self.q.schedule(*t, Ev::OutOfBand(f as u32));
        }
    }

    // ----- bins and the end -----

    fn on_bin(&mut self, now: SimTime) {
        self.rec.close_bin(now);
        // A bin ending at the end is closed by `finish`, after every event
        // at that instant (a delivery at the last nanosecond counts).
        let next = now + self.bin;
        if next < self.end {
            self.q.schedule(next, Ev::Bin);
        }
    }

    fn finish(&mut self) {
        if self.finished {
            return;
        }
        #[cfg(debug_assertions)]
        self.assert_invariants();
        self.finished = true;
        let now = self.q.now();
        self.rec.close_bin(now);
        for (k, fl) in self.flows.iter().enumerate() {
            self.rec.flow_end(
                k,
                &FlowEnd {
                    ue: fl.ue,
                    start: fl.start,
                    end: fl.end.unwrap_or(now),
                    sender: &fl.sender,
                    delivered_bytes: fl.receiver.delivered_total(),
                    completed: fl.state == FlowState::Done && !fl.truncated,
                    completed_at: fl.completed_at,
                    video: fl.video.as_ref(),
                },
            );
        }
        for u in 0..self.live.len() {
            self.rec.ue_end(u, &self.access.link_counters(u));
        }
        // The captures are complete: written out and closed.
        if let Some(mut t) = self.pcap.take() {
            if let Err(e) = t.flush() {
                self.pcap_failed(e);
            }
        }
    }

    // ----- inspection (tests) -----

    /// Everything that must hold between two events: every queue and link
    /// conserves packets ([`World::queues_conserve_packets`]) and the
    /// Internet links' queues their bytes; the world's count of segments in
    /// flight is the flows' sum; each sender keeps its own invariants
    /// ([`crate::transport::sender::TcpSender::check_invariants`]: scoreboard, sequence numbers,
    /// window); and each receiving application got exactly the in-order
    /// prefix of what was sent, with nothing acknowledged that was not
    /// received. Debug builds check this every `INVARIANTS_EVERY` events
    /// and at the end of every run, and panic on a violation.
    pub fn check_invariants(&self) -> Result<(), String> {
        self.queues_conserve_packets()?;
        self.inet.bytes_conserved()?;
        let total: u64 = self.flows.iter().map(|f| f.in_flight as u64).sum();
        if total != self.in_flight_total {
            return Err(format!(
                "the flows have {total} segments in flight, the world counts {}",
                self.in_flight_total
            ));
        }
        for (k, f) in self.flows.iter().enumerate() {
            f.sender
                .check_invariants()
                .map_err(|e| format!("flow {k} sender: {e}"))?;
            let (una, nxt) = (f.sender.snd_una(), f.sender.snd_nxt());
            let (delivered, rcv_nxt) = (f.receiver.delivered_total(), f.receiver.rcv_nxt());
            if delivered != rcv_nxt {
                return Err(format!(
                    "flow {k}: the application got {delivered} bytes, the receiver's in-order prefix is {rcv_nxt}"
                ));
            }
            if !(una <= rcv_nxt && rcv_nxt <= nxt) {
                return Err(format!(
                    "flow {k}: snd_una {una} <= rcv_nxt {rcv_nxt} <= snd_nxt {nxt} does not hold"
                ));
            }
        }
        Ok(())
    }

    #[cfg(debug_assertions)]
    fn assert_invariants(&self) {
        if let Err(e) = self.check_invariants() {
            panic!("invariant violated at {}: {e}", self.q.now());
        }
    }

    /// Miscounts the segments in flight (a test of the debug checks).
    #[doc(hidden)]
    pub fn miscount_in_flight(&mut self) {
        self.in_flight_total += 1;
    }

    /// Queue conservation of every queue in the world.
    pub fn queues_conserve_packets(&self) -> Result<(), String> {
        self.inet.check_conservation()?;
        self.access.check_conservation()
    }

    /// For each flow: (bytes the sender has had acknowledged, bytes its
    /// receiver delivered to the application, receiver's next expected byte).
    pub fn flow_progress(&self) -> Vec<(u64, u64, u64)> {
        self.flows
            .iter()
            .map(|f| (f.sender.snd_una(), f.receiver.delivered_total(), f.receiver.rcv_nxt()))
            .collect()
    }

    /// Segments each flow has in flight.
    pub fn in_flight_segments(&self) -> Vec<u32> {
        self.flows.iter().map(|f| f.sender.in_flight()).collect()
    }

    pub fn scoreboards_consistent(&self) -> bool {
        self.flows.iter().all(|f| f.sender.scoreboard_consistent())
    }
}
