//! The world: builds the components a scenario describes, routes packets
//! between them and runs the events.
//!
//! Forward path of a flow: sender → its own access pipe (half its extra
//! RTT) → the shared Internet link (rate, delay, drop-tail) → then
//! - cellular: the base station's PDCP/RLC → MAC/HARQ → the UE's RLC → receiver;
//! - trace: the Mahimahi link's queue → receiver;
//! - wired: the receiver directly.
//!
//! Reverse path: receiver → (cellular: the UE's uplink grants, then the
//! agent at PDCP writes the XRC option; trace: the Mahimahi uplink trace's
//! queue, or a fixed uplink delay, then the agent) → the Internet reverse
//! link → the flow's access pipe → sender.
//!
//! With the Internet delay D and both traces, the trace topology is
//! Mahimahi's `mm-delay D mm-link UP DOWN` with the sender outside and the
//! receiver inside: data crosses the delay, then the downlink trace's queue;
//! ACKs the uplink trace's queue, then the delay.
//!
//! Timers use lazy cancellation: a component keeps its deadline, the world
//! keeps at most one pending event per timer at or before that deadline, and
//! a timer event that finds its deadline moved simply re-arms.
//!
//! Bounds: a flow without `rwnd_bytes` has TCP's largest window (2^30
//! bytes, RFC 7323), which is also all a real receiver can advertise; the
//! world stops with a [`World::failure`] when more segments are in flight
//! than it can hold ([`MAX_SEGMENTS_IN_FLIGHT`]) or the per-event series
//! outgrow memory ([`MAX_EVENT_ROWS`]); and [`World::run_some`] returns
//! after a bounded number of events, so a caller can stop a long run.

use crate::engine::{EventQueue, RngStreams};
use crate::metrics::{FlowEnd, RecordOptions, Recorder, RunRecorder, UeLinkCounters};
use crate::net::{
    Access as _, Call, Cx, Dir, DropSite, Effect, InternetPath, InternetTimer, LinkConfig, Observer, Packet,
    PacketKind, QueueLimit,
};
use crate::ran::cell::{Cell, CellOutput};
use crate::ran::trace_access::{TraceAccess, TraceAccessConfig, TraceTimer, TraceUplink};
use crate::ran::trace_link::Trace;
use crate::transport::cc::{self, Feedback};
use crate::transport::{SenderOutput, TcpReceiver, TcpSender};
use crate::units::{BitRate, SimDuration, SimTime};

use super::config::{ScenarioConfig, Topology, Traffic};

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Ev {
    FlowStart(u32),
    FlowStop(u32),
    SenderTimer(u32),
    ReceiverTimer(u32),
    Internet(InternetTimer),
    Tti,
    AirArrive(u32),
    Reorder(u32),
    Pusch(u32),
    UplinkArrive(u32),
    Trace(TraceTimer),
    Bin,
    NetAssist,
    OutOfBand(u32),
    AppTick(u32),
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum FlowState {
    Waiting,
    Running,
    /// The application stopped; data in flight is still delivered.
    Closing,
    Done,
}

struct Flow {
    ue: Option<usize>,
    /// Segments in flight after the sender's last call.
    in_flight: u32,
    sender: TcpSender,
    receiver: TcpReceiver,
    state: FlowState,
    start: SimTime,
    end: Option<SimTime>,
    sender_timer: Option<SimTime>,
    receiver_timer: Option<SimTime>,
    /// A finite transfer was cut short by its stop time.
    truncated: bool,
    /// NetAssist reports in flight to this flow's sender (constant delay, FIFO).
    oob: std::collections::VecDeque<(SimTime, Feedback)>,
    /// The path's true base RTT (for the oracle).
    base_rtt: SimDuration,
    video: Option<crate::traffic::VideoSource>,
    /// A finite transfer's last byte reached the receiving application.
    completed_at: Option<SimTime>,
}

enum Access {
    Cellular(Box<Cell>),
    Trace(Box<TraceAccess>),
    Wired,
}

/// Trace contents handed in by the caller instead of read from the paths
/// the scenario names.
#[derive(Clone, Copy, Debug, Default)]
pub struct TraceTexts<'a> {
    pub downlink: Option<&'a str>,
    pub uplink: Option<&'a str>,
}

/// Reads and parses one of the scenario's traces; errors name the field.
fn load_trace(field: &str, path: &str, text: Option<&str>) -> Result<Trace, String> {
    let owned;
    let text = match text {
        Some(t) => t,
        None => {
            owned = std::fs::read_to_string(path).map_err(|e| format!("{field}: cannot read {path:?}: {e}"))?;
            owned.as_str()
        }
    };
    Trace::parse(text).map_err(|e| format!("{field} ({path}): {e}"))
}

pub struct World {
    cfg: ScenarioConfig,
    q: EventQueue<Ev>,
    end: SimTime,
    flows: Vec<Flow>,
    inet: InternetPath,
    access: Access,
    /// Live flows of each UE.
    live: Vec<u32>,
    rec: RunRecorder,
    bin: SimDuration,
    tick: SimDuration,
    out: SenderOutput,
    /// Effect lists for the components' calls, reused (calls nest).
    inet_fx: Vec<Vec<Effect<InternetTimer>>>,
    cell_out: CellOutput,
    trace_fx: Vec<Vec<Effect<TraceTimer>>>,
    scratch: Vec<Packet>,
    finished: bool,
    /// Losses of NetAssist reports.
    na_rng: crate::engine::Rng,
    /// Why the run stopped before its end, if it did.
    failure: Option<String>,
    /// Segments in flight over all flows, and each flow's share of it.
    in_flight_total: u64,
    in_flight_limit: u64,
    rows_limit: usize,
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

        let (access, n_ues, tick) = match cfg.topology {
            Topology::Cellular => {
                let cell_cfg = cfg.cell.as_ref().expect("validated");
                let channels: Vec<_> = cfg.ues.iter().map(|u| u.channel.clone()).collect();
                let mut cell = Cell::new(cell_cfg, &channels, &streams);
                for (k, f) in cfg.flows.iter().enumerate() {
                    cell.register_flow(crate::net::FlowId(k as u32), f.ue.expect("validated") as usize);
                }
                let tick = cell.tti();
                (Access::Cellular(Box::new(cell)), cfg.ues.len(), tick)
            }
            Topology::Trace => {
                let t = cfg.trace.as_ref().expect("validated");
                let trace = load_trace("trace.downlink", &t.downlink, texts.downlink)?;
                let uplink = match &t.uplink {
                    Some(path) => {
                        let up = load_trace("trace.uplink", path, texts.uplink)?;
                        let limit = QueueLimit {
                            packets: t.uplink_buffer_packets,
                            bytes: t.uplink_buffer_bytes,
                        };
                        TraceUplink::Trace(up, limit)
                    }
                    None => TraceUplink::Delay(ms(t.uplink_delay_ms)),
                };
                let access = TraceAccess::new(
                    TraceAccessConfig {
                        downlink: trace,
                        downlink_limit: QueueLimit {
                            packets: t.buffer_packets,
                            bytes: t.buffer_bytes,
                        },
                        uplink,
                        agent: t.agent.clone(),
                        abc: t.abc.clone(),
                    },
                    cfg.flows.len(),
                    secs(cfg.duration_s),
                );
                (Access::Trace(Box::new(access)), 1, SimDuration::from_millis(1))
            }
            Topology::Wired => (Access::Wired, 0, SimDuration::from_millis(1)),
        };

        let mut flows = Vec::with_capacity(cfg.flows.len());
        for (k, f) in cfg.flows.iter().enumerate() {
            let id = crate::net::FlowId(k as u32);
            let stream = streams.stream(&format!("flow/{k}/cc")).next_u64();
            let controller = cc::registry::build_seeded(&f.cc, &f.cc_params, stream)
                .map_err(|e| format!("flows.{k}.{}: {e}", f.cc))?;
            // No receiver advertises more than TCP's largest window.
            let mut tcp = f.tcp.clone();
            tcp.rwnd_bytes = Some(tcp.rwnd_bytes.unwrap_or(crate::transport::MAX_WINDOW_BYTES));
            flows.push(Flow {
                ue: f.ue.map(|u| u as usize),
                in_flight: 0,
                sender: TcpSender::new(id, tcp, controller),
                receiver: TcpReceiver::new(id, f.receiver.clone()),
                state: FlowState::Waiting,
                start: secs(f.start_s),
                end: None,
                sender_timer: None,
                receiver_timer: None,
                truncated: false,
                oob: std::collections::VecDeque::new(),
                base_rtt: SimDuration::ZERO,
                video: match &f.traffic {
                    Traffic::Video {
                        period_s,
                        on_s,
                        rate_mbps,
                    } => Some(crate::traffic::VideoSource::new(*period_s, *on_s, *rate_mbps)),
                    _ => None,
                },
                completed_at: None,
            });
        }
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
            tick,
            out: SenderOutput::default(),
            inet_fx: Vec::new(),
            cell_out: CellOutput::default(),
            trace_fx: Vec::new(),
            scratch: Vec::new(),
            finished: false,
            na_rng: streams.stream("netassist/loss"),
            failure: None,
            in_flight_total: 0,
            in_flight_limit: MAX_SEGMENTS_IN_FLIGHT,
            rows_limit: MAX_EVENT_ROWS,
            cfg,
        };
        for k in 0..w.flows.len() {
            let start = w.flows[k].start;
            w.q.schedule(start, Ev::FlowStart(k as u32));
            if let Some(s) = w.cfg.flows[k].stop_s {
                w.q.schedule(secs(s), Ev::FlowStop(k as u32));
            }
        }
        match w.access {
            Access::Cellular(_) => w.q.schedule(SimTime::ZERO, Ev::Tti),
            Access::Trace(_) => w.trace_call(SimTime::ZERO, Call::Start),
            Access::Wired => {}
        }
        // The last bin is closed by `finish`, after every event at the end.
        if SimTime::ZERO + bin < end {
            w.q.schedule(SimTime::ZERO + bin, Ev::Bin);
        }
        for k in 0..w.flows.len() {
            w.flows[k].base_rtt = w.base_rtt(k);
        }
        if w.flows.iter().any(|f| f.sender.signals().pbe) {
            if let Access::Cellular(cell) = &mut w.access {
                cell.enable_pbe();
            }
        }
        if w.flows.iter().any(|f| f.sender.signals().net_assist) {
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

    fn dispatch(&mut self, now: SimTime, ev: Ev) {
        match ev {
            Ev::FlowStart(f) => self.flow_start(now, f as usize),
            Ev::FlowStop(f) => self.flow_stop(now, f as usize),
            Ev::SenderTimer(f) => {
                let fl = &mut self.flows[f as usize];
                if fl.sender_timer.is_some_and(|t| t <= now) {
                    fl.sender_timer = None;
                }
                if fl.state != FlowState::Waiting && fl.state != FlowState::Done {
                    if fl.sender.next_timer().is_some_and(|t| t <= now) {
                        self.out.clear();
                        fl.sender.on_timer(now, &mut self.out);
                        self.after_sender(now, f as usize);
                    } else {
                        self.arm_sender_timer(f as usize);
                    }
                }
            }
            Ev::ReceiverTimer(f) => {
                let fl = &mut self.flows[f as usize];
                if fl.receiver_timer.is_some_and(|t| t <= now) {
                    fl.receiver_timer = None;
                }
                if let Some(ack) = fl.receiver.on_timer(now) {
                    self.send_ack(now, f as usize, ack);
                }
                self.arm_receiver_timer(f as usize);
            }
            Ev::Internet(t) => self.inet_call(now, Call::Fire(t)),
            Ev::Tti => self.on_tti(now),
            Ev::AirArrive(u) => {
                let mut out = std::mem::take(&mut self.cell_out);
                out.clear();
                if let Access::Cellular(cell) = &mut self.access {
                    cell.on_air_arrival(now, u as usize, &mut out);
                }
                self.after_cell(now, &mut out);
                self.cell_out = out;
            }
            Ev::Reorder(u) => {
                let mut out = std::mem::take(&mut self.cell_out);
                out.clear();
                if let Access::Cellular(cell) = &mut self.access {
                    cell.on_reorder_timer(now, u as usize, &mut out);
                }
                self.after_cell(now, &mut out);
                self.cell_out = out;
            }
            Ev::Pusch(u) => {
                if let Access::Cellular(cell) = &mut self.access {
                    let (head, next) = cell.on_pusch(now, u as usize, &mut self.scratch);
                    if let Some(t) = head {
                        self.q.schedule(t, Ev::UplinkArrive(u));
                    }
                    if let Some(t) = next {
                        self.q.schedule(t, Ev::Pusch(u));
                    }
                }
            }
            Ev::UplinkArrive(u) => {
                let mut pkts = std::mem::take(&mut self.scratch);
                pkts.clear();
                let mut next = None;
                if let Access::Cellular(cell) = &mut self.access {
                    next = cell.on_uplink_arrival(now, u as usize, &mut pkts);
                }
                for p in pkts.drain(..) {
                    self.inet_up(now, p);
                }
                self.scratch = pkts;
                if let Some(t) = next {
                    self.q.schedule(t, Ev::UplinkArrive(u));
                }
            }
            Ev::Trace(t) => self.trace_call(now, Call::Fire(t)),
            Ev::Bin => self.on_bin(now),
            Ev::NetAssist => self.on_net_assist(now),
            Ev::AppTick(f) => self.on_app_tick(now, f as usize),
            Ev::OutOfBand(f) => {
                let f = f as usize;
                while self.flows[f].oob.front().is_some_and(|(t, _)| *t <= now) {
                    let (_, fb) = self.flows[f].oob.pop_front().expect("front exists");
                    if matches!(self.flows[f].state, FlowState::Running | FlowState::Closing) {
                        self.out.clear();
                        self.flows[f].sender.on_out_of_band(now, &fb, &mut self.out);
                        self.after_sender(now, f);
                    }
                }
                if let Some((t, _)) = self.flows[f].oob.front() {
                    self.q.schedule(*t, Ev::OutOfBand(f as u32));
                }
            }
        }
    }

    // ----- flows -----

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
            let n = self.live[u];
            if let Access::Cellular(cell) = &mut self.access {
                cell.set_live_flows(u, n);
            }
        }
        self.out.clear();
        let fl = &mut self.flows[f];
        match traffic {
            Traffic::Bulk => fl.sender.app_write(now, u64::MAX, &mut self.out),
            Traffic::Transfer { size_bytes } => {
                fl.sender.app_write(now, size_bytes, &mut self.out);
                fl.sender.app_close(false);
            }
            Traffic::Video { .. } => {
                if let Some(v) = fl.video.as_mut() {
                    v.start_chunk(now);
                }
                self.q.schedule(now, Ev::AppTick(f as u32));
            }
        }
        self.after_sender(now, f);
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
        fl.sender.app_close(true);
        fl.state = FlowState::Closing;
        self.check_flow_done(now, f);
    }

    fn check_flow_done(&mut self, now: SimTime, f: usize) {
        let fl = &mut self.flows[f];
        if matches!(fl.state, FlowState::Running | FlowState::Closing) && fl.sender.finished() {
            fl.state = FlowState::Done;
            fl.end = Some(now);
            self.rec.flow_ended(f, fl.ue);
            if let Some(u) = fl.ue {
                self.live[u] -= 1;
                let n = self.live[u];
                if let Access::Cellular(cell) = &mut self.access {
                    cell.set_live_flows(u, n);
                }
            }
        }
    }

    /// Routes what the sender produced and records its state.
    fn after_sender(&mut self, now: SimTime, f: usize) {
        let mut pkts = std::mem::take(&mut self.out.packets);
        for p in pkts.drain(..) {
            self.inet_call(now, Call::Receive(Dir::Down, p));
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
        let fl = &mut self.flows[f];
        if let Some(t) = fl.sender.next_timer() {
            if fl.sender_timer.is_none_or(|s| t < s) {
                fl.sender_timer = Some(t);
                self.q.schedule(t, Ev::SenderTimer(f as u32));
            }
        }
    }

    fn arm_receiver_timer(&mut self, f: usize) {
        let fl = &mut self.flows[f];
        if let Some(t) = fl.receiver.next_timer() {
            if fl.receiver_timer.is_none_or(|s| t < s) {
                fl.receiver_timer = Some(t);
                self.q.schedule(t, Ev::ReceiverTimer(f as u32));
            }
        }
    }

    fn sender_receive(&mut self, now: SimTime, f: usize, p: Packet) {
        let PacketKind::Ack(ack) = &p.kind else { return };
        if self.flows[f].state == FlowState::Waiting || self.flows[f].state == FlowState::Done {
            return;
        }
        if let Some(x) = &ack.xrc {
            self.rec.feedback(now, f, x);
        }
        self.out.clear();
        self.flows[f].sender.on_ack(now, ack, &mut self.out);
        self.after_sender(now, f);
    }

    // ----- forward path -----

    /// Calls the Internet path and carries out its effects in order.
    fn inet_call(&mut self, now: SimTime, call: Call<InternetTimer>) {
        let mut fx = self.inet_fx.pop().unwrap_or_default();
        call.apply(&mut self.inet, now, &mut Cx::new(&mut fx, &mut self.rec));
        for e in fx.drain(..) {
            match e {
                Effect::Wake(t, timer) => self.q.schedule(t, Ev::Internet(timer)),
                Effect::Out(Dir::Down, p) => self.downlink_arrive(now, p),
                Effect::Out(Dir::Up, p) => {
                    let f = p.flow.0 as usize;
                    self.sender_receive(now, f, p);
                }
                Effect::Tick | Effect::Rearm => {}
            }
        }
        self.inet_fx.push(fx);
    }

    /// An ACK leaves the access network for the Internet path.
    fn inet_up(&mut self, now: SimTime, p: Packet) {
        self.inet_call(now, Call::Receive(Dir::Up, p));
    }

    fn record_drop(&mut self, now: SimTime, site: DropSite, ue: Option<usize>, p: &Packet) {
        self.rec.dropped(now, site, ue, p);
    }

    /// A packet leaves the Internet segment toward its receiver.
    fn downlink_arrive(&mut self, now: SimTime, p: Packet) {
        let f = p.flow.0 as usize;
        match &mut self.access {
            Access::Wired => self.receiver_receive(now, f, p),
            Access::Cellular(cell) => {
                let ue = self.flows[f].ue.expect("validated");
                if let Err(p) = cell.enqueue_downlink(now, ue, p) {
                    self.record_drop(now, DropSite::Rlc, Some(ue), &p);
                }
            }
            Access::Trace(_) => self.trace_call(now, Call::Receive(Dir::Down, p)),
        }
    }

    /// Calls the trace access and carries out its effects in order.
    fn trace_call(&mut self, now: SimTime, call: Call<TraceTimer>) {
        let Access::Trace(tr) = &mut self.access else { return };
        let mut fx = self.trace_fx.pop().unwrap_or_default();
        call.apply(&mut **tr, now, &mut Cx::new(&mut fx, &mut self.rec));
        for e in fx.drain(..) {
            match e {
                Effect::Wake(t, timer) => self.q.schedule(t, Ev::Trace(timer)),
                Effect::Out(Dir::Down, p) => self.ue_delivered(now, 0, p),
                Effect::Out(Dir::Up, p) => self.inet_up(now, p),
                Effect::Tick => self.feed_oracles(now),
                Effect::Rearm => self.trace_call(now, Call::Rearm),
            }
        }
        self.trace_fx.push(fx);
    }

    /// A packet reaches its UE (after the radio link).
    fn ue_delivered(&mut self, now: SimTime, ue: usize, p: Packet) {
        self.rec.ue_delivered(ue, p.size as f64 * 8.0);
        let f = p.flow.0 as usize;
        self.receiver_receive(now, f, p);
    }

    fn receiver_receive(&mut self, now: SimTime, f: usize, p: Packet) {
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
        if let Some(ack) = r.ack {
            self.send_ack(now, f, ack);
        }
        self.arm_receiver_timer(f);
    }

    fn send_ack(&mut self, now: SimTime, f: usize, mut ack: Packet) {
        let pbe = self.flows[f].sender.signals().pbe;
        match &mut self.access {
            Access::Wired => self.inet_up(now, ack),
            Access::Cellular(cell) => {
                let ue = self.flows[f].ue.expect("validated");
                if pbe {
                    ack.set_pbe_option(cell.pbe_rate_bps(ue, now));
                }
                if let Some(t) = cell.uplink_push(now, ue, ack) {
                    self.q.schedule(t, Ev::Pusch(ue as u32));
                }
            }
            Access::Trace(tr) => {
                if pbe {
                    ack.set_pbe_option(tr.pbe_rate_bps(0, now).expect("a trace link has PBE's view"));
                }
                self.trace_call(now, Call::Receive(Dir::Up, ack));
            }
        }
    }

    // ----- cell -----

    fn on_tti(&mut self, now: SimTime) {
        let mut out = std::mem::take(&mut self.cell_out);
        out.clear();
        let tti = self.tick;
        if let Access::Cellular(cell) = &mut self.access {
            cell.on_tti(now, &mut out);
            self.rec.instant(now, tti);
            for u in 0..cell.num_ues() {
                let s = cell.ue_tti(u);
                let sample = crate::net::UeSample {
                    cqi: s.cqi,
                    hol: s.hol,
                    sdus: s.rlc_sdus,
                    bytes: s.rlc_bytes,
                    available_bits: s.available_bits,
                    available_mbps: s.available_bits / tti.as_secs_f64() * 1e-6,
                    agent_bps: s.agent_bps,
                };
                self.rec.ue_sample(now, u, &sample);
            }
        }
        self.after_cell(now, &mut out);
        self.cell_out = out;
        self.feed_oracles(now);
        let next = now + tti;
        if next < self.end {
            self.q.schedule(next, Ev::Tti);
        }
    }

    /// Gives every oracle flow its UE's instantaneous fair share and its
    /// path's base RTT, with zero delay.
    fn feed_oracles(&mut self, now: SimTime) {
        for f in 0..self.flows.len() {
            let fl = &self.flows[f];
            if !fl.sender.signals().oracle || !matches!(fl.state, FlowState::Running | FlowState::Closing) {
                continue;
            }
            let Some(ue) = fl.ue else { continue };
            let (cap, live) = match &self.access {
                Access::Cellular(cell) => (cell.available_bps(ue), cell.live_flows(ue)),
                Access::Trace(tr) => {
                    // The trace is known in advance: the capacity the flow's
                    // packets will meet when they reach the queue.
                    let fc = &self.cfg.flows[f];
                    let fwd = SimDuration::try_from_millis_f64(fc.extra_rtt_ms / 2.0 + self.cfg.internet.delay_ms)
                        .expect("validated");
                    // Over one base RTT: the trace's per-millisecond
                    // opportunities are too bursty to size a window on.
                    let span = fl.base_rtt.max(SimDuration::from_millis(10));
                    let cap = tr
                        .oracle_capacity_bps(ue, now, fwd, span)
                        .expect("a trace link is known ahead");
                    (cap, self.live[0])
                }
                Access::Wired => continue,
            };
            let fb = Feedback::Oracle {
                capacity_bps: (cap / live.max(1) as f64) as u64,
                base_rtt: fl.base_rtt,
            };
            self.out.clear();
            self.flows[f].sender.on_out_of_band(now, &fb, &mut self.out);
            self.after_sender(now, f);
        }
    }

    /// The path's propagation and minimum processing delay, both ways: what
    /// an RTT sample would read with empty queues and perfect alignment.
    fn base_rtt(&self, f: usize) -> SimDuration {
        let fc = &self.cfg.flows[f];
        let ms = |v: f64| SimDuration::try_from_millis_f64(v).expect("validated");
        let mut rtt = ms(fc.extra_rtt_ms) + ms(self.cfg.internet.delay_ms) * 2;
        let ser = |r: Option<f64>, bytes: u64| {
            r.and_then(BitRate::try_from_mbps)
                .and_then(|r| r.tx_time(bytes))
                .unwrap_or(SimDuration::ZERO)
        };
        rtt += ser(self.cfg.internet.rate_mbps, (fc.tcp.mss + 52) as u64);
        rtt += ser(self.cfg.internet.reverse_rate_mbps, 52);
        match &self.access {
            Access::Cellular(cell) => rtt += cell.min_air_rtt(),
            Access::Trace(tr) => rtt += tr.min_rtt(),
            Access::Wired => {}
        }
        rtt
    }

    fn net_assist_period(&self) -> SimDuration {
        let ms = match (&self.cfg.cell, self.cfg.topology) {
            (Some(c), Topology::Cellular) => c.net_assist.period_ms,
            _ => 50.0,
        };
        SimDuration::try_from_millis_f64(ms).expect("validated")
    }

    /// NATCP's NetAssist: a report per UE to every subscribed flow, out of band.
    fn on_net_assist(&mut self, now: SimTime) {
        let wired = SimDuration::try_from_millis_f64(self.cfg.internet.delay_ms).expect("validated") * 2;
        let (delay, loss) = match (&self.cfg.cell, self.cfg.topology) {
            (Some(c), Topology::Cellular) => (c.net_assist.delay_ms, c.net_assist.loss),
            _ => (None, 0.0),
        };
        let delay = SimDuration::try_from_millis_f64(delay.unwrap_or(self.cfg.internet.delay_ms)).expect("validated");
        let n_ues = self.live.len();
        for ue in 0..n_ues {
            let subscribed = self
                .flows
                .iter()
                .any(|f| f.ue == Some(ue) && f.sender.signals().net_assist);
            let report = match &mut self.access {
                Access::Cellular(cell) => cell.net_assist_report(ue, now, wired),
                Access::Trace(tr) => {
                    let r = tr.net_assist_report(ue, now, wired).expect("a trace link reports");
                    (r.bw_bps, r.min_rtt, r.flows)
                }
                Access::Wired => continue,
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
                let extra = SimDuration::try_from_millis_f64(self.cfg.flows[f].extra_rtt_ms).expect("validated");
                let fb = Feedback::NetAssist {
                    bw_bps: report.0,
                    min_rtt: report.1 + extra,
                    flows: report.2,
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

    fn after_cell(&mut self, now: SimTime, out: &mut CellOutput) {
        for &(u, t) in &out.air_heads {
            self.q.schedule(t, Ev::AirArrive(u as u32));
        }
        for &(u, t) in &out.reorder_timers {
            self.q.schedule(t, Ev::Reorder(u as u32));
        }
        for &(u, flow, d) in &out.sojourns {
            self.rec.sojourn(now, u, flow, d);
        }
        if out.discarded > 0 {
            // Packets lost by HARQ give-ups are discovered at reassembly;
            // their identity is gone with the transport block.
            self.rec.lost(now, DropSite::Reassembly, out.discarded);
        }
        for (u, p) in out.delivered.drain(..) {
            self.ue_delivered(now, u, p);
        }
    }

    // ----- bins and the end -----

    fn on_bin(&mut self, now: SimTime) {
        self.close_bin(now);
        // A bin ending at the end is closed by `finish`, after every event
        // at that instant (a delivery at the last nanosecond counts).
        let next = now + self.bin;
        if next < self.end {
            self.q.schedule(next, Ev::Bin);
        }
    }

    /// Closes the bin that ends at `now`.
    fn close_bin(&mut self, now: SimTime) {
        self.rec.close_bin(now);
    }

    fn finish(&mut self) {
        if self.finished {
            return;
        }
        self.finished = true;
        let now = self.q.now();
        self.close_bin(now);
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
            let link = match &self.access {
                Access::Cellular(cell) => {
                    let s = cell.radio_stats(u);
                    UeLinkCounters {
                        tbs_new: s.tbs_new,
                        tbs_retx: s.tbs_retx,
                        tbs_lost: s.tbs_lost,
                        carried_bits: s.bits_decoded as f64,
                    }
                }
                Access::Trace(tr) => tr.link_counters(u),
                Access::Wired => UeLinkCounters::default(),
            };
            self.rec.ue_end(u, &link);
        }
    }

    // ----- inspection (tests) -----

    /// Queue conservation of every queue in the world.
    pub fn queues_conserve_packets(&self) -> Result<(), String> {
        let check = |name: &str, c: crate::net::QueueCounters| {
            if c.conserved() {
                Ok(())
            } else {
                Err(format!("{name}: {c:?}"))
            }
        };
        self.inet.check_conservation()?;
        match &self.access {
            Access::Cellular(cell) => {
                for u in 0..cell.num_ues() {
                    check(&format!("RLC of UE {u}"), cell.rlc_counters(u))?;
                }
            }
            Access::Trace(tr) => tr.check_conservation()?,
            Access::Wired => {}
        }
        Ok(())
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
