//! The wall-clock loop: reads IP packets from both devices, passes them
//! through the emulated paths in model time, and writes each one out when
//! its model time comes.
//!
//! **Model time** is `CLOCK_MONOTONIC` minus the run's start. A packet
//! enters its path at the time it was read. Each stage's internal events
//! (end of a serialization, a delivery opportunity, the end of a delay)
//! run at exactly the model time the stage asked for, however late the
//! loop gets to them, so the model's arithmetic is the simulator's; only
//! the write to the egress device can be late. That lateness (write time −
//! scheduled time) is the **release error**, recorded for every packet.
//!
//! **Waiting**: when the next scheduled event is more than `spin_ns` away
//! the loop sleeps in `ppoll` on both devices until `spin_ns` before it
//! (the thread's timer slack is set to 1 ns); closer than that it polls the
//! devices without sleeping until the event is due. Reads are batched (up
//! to `batch` per device per pass).
//!
//! **Mapping to the core's packets**: every IP packet becomes a core
//! `Packet` whose `size` is the IP packet's length (what the link models
//! serialize and count against byte limits), whose `flow` is the capture's
//! flow index (5-tuple), and whose kind is `Data` with `seq` holding the
//! index of the [`Slab`] slot where its bytes wait (`len` = size − 52,
//! `ts_val` = read time). The models never look at `seq`; the driver uses
//! it to find the bytes to write when the packet leaves.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};

use xrc_core::net::wire as wire_core;
use xrc_core::net::{DataHeader, FlowId, Packet, PacketKind};
use xrc_core::units::SimTime;

use crate::access::AccessHandle;
use crate::capture::Capture;
use crate::gso::{super_header, Coalescer, VnetHdr};
use crate::model::Paths;
use crate::stage::{Dropped, Path};
use crate::wire::parse_ipv4;

/// A device of the emulator: the Internet side (where the sender of a
/// download runs) or the UE side (the receiver behind the access link).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    Inet,
    Ue,
}

/// A direction through the emulator.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Dir {
    /// Internet side → UE side (data of a download).
    Down = 0,
    /// UE side → Internet side (ACKs of a download).
    Up = 1,
}

impl Dir {
    pub fn ingress(self) -> Side {
        match self {
            Dir::Down => Side::Inet,
            Dir::Up => Side::Ue,
        }
    }
    pub fn egress(self) -> Side {
        match self {
            Dir::Down => Side::Ue,
            Dir::Up => Side::Inet,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Dir::Down => "down",
            Dir::Up => "up",
        }
    }
}

/// A clock in nanoseconds that never goes back.
pub trait Clock {
    fn now_ns(&self) -> u64;
    /// CPU time the calling thread has used, if the clock knows it.
    fn thread_cpu_ns(&self) -> Option<u64> {
        None
    }
    /// Puts the calling thread in `SCHED_FIFO` at `priority`, or back in
    /// the normal policy with `None` ([`RtYield::demote`]).
    fn set_realtime(&self, _priority: Option<i32>) {}
}

/// Where the loop was when it lost time.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Inside a read from a device.
    Read,
    /// Inside a write to a device (the kernel runs the receiving stack's
    /// input processing in this call).
    Write,
    /// Woken from `ppoll` later than asked.
    Wake,
    /// Between system calls: the model's work, or the thread was not running.
    Between,
}

/// An interval longer than `Options::late_ns` during which the loop did
/// not get to release packets.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Stall {
    /// Model time the stall began, ns.
    pub at_ns: u64,
    pub dur_ns: u64,
    pub phase: Phase,
    /// CPU time the thread used from its last sleep to the end of the stall
    /// and the wall time over the same span, ns (`None`: not measured).
    /// CPU ≈ wall: the thread was busy; CPU ≪ wall: it was not running.
    pub cpu_wall_ns: Option<(u64, u64)>,
}

/// Most stalls kept per run.
pub const MAX_STALLS: usize = 10_000;

/// The two devices.
pub trait PacketIo {
    /// One packet from `side`, without blocking; `None` when none waits.
    fn recv(&mut self, side: Side, buf: &mut [u8]) -> io::Result<Option<usize>>;
    fn send(&mut self, side: Side, pkt: &[u8]) -> io::Result<()>;
    /// One packet made of `parts` with its virtio-net header `hdr` (a TCP
    /// super-packet, [`crate::gso`]; the UE side with `Options::gso` only).
    fn send_gso(&mut self, side: Side, hdr: &VnetHdr, parts: &[&[u8]]) -> io::Result<()>;
    /// Returns when a device may be readable or at `deadline_ns` (clock
    /// time). With `busy` the caller is spinning toward a deadline that is
    /// close: a real device returns at once.
    fn wait(&mut self, deadline_ns: u64, busy: bool) -> io::Result<()>;
    /// Blocks until `deadline_ns` (clock time) even if a device is readable
    /// ([`RtYield`]).
    fn pause(&mut self, deadline_ns: u64);
}

/// A real-time thread's forced pauses. Linux lets real-time threads run at
/// most `sched_rt_runtime_us` of every `sched_rt_period_us` (950 ms of
/// each second by default) and then throttles them for the rest of the
/// period: a `SCHED_FIFO` loop that polls without blocking (as this one
/// does at high packet rates) loses ~50 ms once a second, every packet of
/// them released late (measured: the wired ceiling's release error p99
/// of 34–45 ms, `docs/emulation.md`). The loop counts the time it blocks
/// (sleeping or paused) in windows of `window_ns`; when that falls behind
/// `sleep_permille` of the window's elapsed time by more than
/// `allowance_ns`, it pauses `pause_ns`, whatever the devices hold. A loop
/// that blocks enough by itself never pauses; one that never blocks pauses
/// `pause_ns` at a steady pace, delaying the releases due meanwhile by
/// about that.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct RtYield {
    pub window_ns: u64,
    pub sleep_permille: u64,
    pub allowance_ns: u64,
    pub pause_ns: u64,
    /// The thread's `SCHED_FIFO` priority, to pause by leaving the
    /// real-time policy for `pause_ns` (the loop goes on, sharing the CPU
    /// with the normal threads that were waiting for it) instead of
    /// sleeping (`None`).
    pub demote: Option<i32>,
}

impl RtYield {
    /// Blocking twice the share of each period the kernel keeps from
    /// real-time threads (at most half the time), in 100 ms windows with
    /// 1 ms of slack, by pauses of 100 µs: at least 9 % of any second
    /// under Linux's default budget. `None` when the budget is unlimited
    /// or the whole period.
    pub fn for_budget(runtime_us: u64, period_us: u64) -> Option<RtYield> {
        if period_us == 0 || runtime_us >= period_us {
            return None;
        }
        Some(RtYield {
            window_ns: 100_000_000,
            sleep_permille: (2_000 * (period_us - runtime_us) / period_us).min(500),
            allowance_ns: 1_000_000,
            pause_ns: 100_000,
            demote: None,
        })
    }
}

/// Knobs of the loop.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// Closer than this to the next event, poll instead of sleeping, ns.
    /// 200 µs: on the reference VM a `ppoll` wake-up is often 20–60 µs
    /// late (an idle vCPU waits for the host to run it again), so a 50 µs
    /// window started many cell TTIs late (docs/emulation.md, "The cell at
    /// its highest rate").
    pub spin_ns: u64,
    /// Packets read per device per pass.
    pub batch: usize,
    /// Longest sleep, ns (bounds how long a stop request waits).
    pub max_sleep_ns: u64,
    /// Bytes of each packet kept for pcap files.
    pub snaplen: u16,
    /// A release later than this counts as late; any late release means the
    /// run fell behind, ns.
    pub late_ns: u64,
    /// The base station writes XRC's feedback into the ACKs that cross
    /// it ([`crate::feedback`]; `cellular` and `trace` topologies). Off by default.
    pub xrc_acks: bool,
    /// The keyed tag's key: the base station tags every option it writes
    /// (`feedback::tagged_option_bytes`); `None`: untagged options.
    pub tag_key: Option<crate::feedback::TagKey>,
    /// UE-side ports of the flows whose senders ask the agent for its
    /// air-interface delay and the buffer's room (`xrc2`: the simulator's
    /// `Signals::xrc_air`); their ACKs carry the longer option.
    pub air_ports: Vec<u16>,
    /// What the base station writes instead of its agent's feedback (tests
    /// of a sender's trust; none by default).
    pub feedback_override: Option<crate::feedback::Override>,
    /// Largest packet the devices carry, bytes (an ACK the option would
    /// make longer goes out without it).
    pub mtu: usize,
    /// Forced pauses of a real-time thread (`None`: never pause).
    pub rt_yield: Option<RtYield>,
    /// The UE-side device takes GSO super-packets (`IFF_VNET_HDR`): TCP
    /// segments of one connection released at the same instant that Linux
    /// GRO would merge are written as one packet ([`crate::gso`]), as a
    /// UE's modem driver hands them to its IP stack.
    pub gso: bool,
    /// Most bytes of one super-packet (at most 65 535).
    pub gso_max_bytes: usize,
    /// The network-assisted schemes' signals ([`crate::signals`]): ABC's
    /// marks and PBE-CC's report on ACKs, NetAssist's reports.
    pub signals: crate::signals::SignalOptions,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            spin_ns: 200_000,
            batch: 64,
            max_sleep_ns: 20_000_000,
            snaplen: 128,
            late_ns: 1_000_000,
            xrc_acks: false,
            feedback_override: None,
            tag_key: None,
            air_ports: Vec::new(),
            mtu: 1500,
            rt_yield: None,
            gso: false,
            gso_max_bytes: crate::gso::MAX_PACKET,
            signals: Default::default(),
        }
    }
}

/// A TCP segment with ACK set, no payload and no SYN, FIN or RST.
fn is_pure_ack(bytes: &[u8]) -> bool {
    crate::wire::parse_ipv4(bytes)
        .and_then(|i| i.tcp)
        .is_some_and(|t| t.is_pure_ack())
}

/// Bytes of packets inside the emulated paths, by slot.
#[derive(Debug, Default)]
pub struct Slab {
    slots: Vec<(Vec<u8>, u32)>,
    free: Vec<u32>,
}

impl Slab {
    /// Stores `bytes` with its capture record; returns the slot.
    pub fn put(&mut self, bytes: &[u8], record: u32) -> u32 {
        match self.free.pop() {
            Some(k) => {
                let s = &mut self.slots[k as usize];
                s.0.clear();
                s.0.extend_from_slice(bytes);
                s.1 = record;
                k
            }
            None => {
                self.slots.push((bytes.to_vec(), record));
                (self.slots.len() - 1) as u32
            }
        }
    }
    pub fn get(&self, slot: u32) -> (&[u8], u32) {
        let s = &self.slots[slot as usize];
        (&s.0, s.1)
    }
    pub fn release(&mut self, slot: u32) {
        self.free.push(slot);
    }
    /// Slots in use.
    pub fn in_use(&self) -> usize {
        self.slots.len() - self.free.len()
    }
}

/// Counters of the loop. Every packet's release error (write time −
/// scheduled time) is in its capture record.
#[derive(Clone, Debug, Default)]
pub struct Timing {
    /// Releases later than `Options::late_ns`.
    pub late: u64,
    /// Passes that slept in `ppoll`, and passes that spun.
    pub sleeps: u64,
    pub spins: u64,
    /// Forced pauses ([`RtYield`]) and their total duration, ns.
    pub pauses: u64,
    pub paused_ns: u64,
    /// ACKs written with the XRC option, and ACKs that carried feedback but
    /// had no room for the option.
    pub xrc_written: u64,
    pub xrc_no_room: u64,
    /// ACKs whose receiver's placeholder the base station filled in place.
    pub xrc_filled: u64,
    /// Intervals the loop lost (at most [`MAX_STALLS`]).
    pub stalls: Vec<Stall>,
    /// Stalls beyond [`MAX_STALLS`].
    pub stalls_dropped: u64,
}

/// Per-direction packet counts.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct DirCounts {
    pub read: u64,
    /// Packets written (each constituent of a super-packet counts).
    pub written: u64,
    /// System calls that wrote them (a super-packet is one).
    pub writes: u64,
    pub dropped: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
}

pub struct Emulator<I: PacketIo, C: Clock> {
    io: I,
    clock: C,
    paths: [Path; 2],
    describe: [String; 2],
    /// The base station both paths cross (the `cellular` topology's cell,
    /// the `trace` topology's trace access), which needs each flow
    /// classified to a UE.
    cell: Option<AccessHandle>,
    opts: Options,
    slab: Slab,
    capture: Capture,
    timing: Timing,
    counts: [DirCounts; 2],
    /// Clock time of model time zero (set when the first run starts).
    origin: Option<u64>,
    /// Model time the last run ended.
    ended: u64,
    buf: Vec<u8>,
    /// An ACK's bytes with the XRC option added.
    rewrite: Vec<u8>,
    /// Pure ACKs the feedback override has seen.
    overridden: u64,
    /// The keyed tag's sequence number of each flow (the last one written).
    tag_seq: std::collections::HashMap<u32, u32>,
    /// Plans the super-packets of one release instant, and the headers of
    /// the one being written.
    coalescer: Coalescer,
    super_hdr: Vec<u8>,
    released: Vec<(SimTime, Packet)>,
    dropped: Vec<Dropped>,
    send_errors: u64,
    last_send_error: Option<String>,
    /// The network-assisted schemes' signals, and PBE-CC's report of each
    /// ACK inside the uplink (kbit/s, by slot).
    signals: crate::signals::Signals,
    pbe_of_slot: std::collections::HashMap<u32, u32>,
    /// NetAssist reports due, waiting to be written.
    reports_due: Vec<Vec<u8>>,
    /// Clock time the last system call (or model step) ended.
    mark: u64,
    /// (clock time, thread CPU time) before the last sleep.
    cpu_mark: Option<(u64, u64)>,
    /// The current `RtYield` window: its start (clock time) and the time
    /// the loop has blocked in it, ns.
    window: (u64, u64),
    /// Clock time the thread left the real-time policy (`RtYield::demote`).
    demoted_at: Option<u64>,
}

impl<I: PacketIo, C: Clock> Emulator<I, C> {
    pub fn new(io: I, clock: C, paths: Paths, opts: Options) -> Self {
        let capture = Capture::new(opts.snaplen);
        let gso_max = opts.gso_max_bytes;
        let signals = crate::signals::Signals::new(opts.signals.clone());
        if let Some(c) = &paths.cell {
            signals.enable(c);
        }
        Emulator {
            io,
            clock,
            paths: [paths.down, paths.up],
            describe: [paths.describe_down, paths.describe_up],
            cell: paths.cell,
            opts,
            slab: Slab::default(),
            capture,
            timing: Timing::default(),
            counts: [DirCounts::default(); 2],
            origin: None,
            ended: 0,
            buf: vec![0u8; 65_536],
            rewrite: Vec::new(),
            overridden: 0,
            tag_seq: std::collections::HashMap::new(),
            coalescer: Coalescer::new(gso_max),
            super_hdr: Vec::new(),
            released: Vec::new(),
            dropped: Vec::new(),
            send_errors: 0,
            last_send_error: None,
            signals,
            pbe_of_slot: std::collections::HashMap::new(),
            reports_due: Vec::new(),
            mark: 0,
            cpu_mark: None,
            window: (0, 0),
            demoted_at: None,
        }
    }

    /// Takes room, before the run, for what grows with the packets of a run
    /// of `duration_s` (at [`EXPECTED_PACKETS_PER_S`]): a table that grows
    /// while the loop runs copies itself at each doubling, which stopped
    /// the loop for milliseconds to tens of milliseconds.
    pub fn reserve(&mut self, duration_s: f64) {
        if duration_s.is_finite() && duration_s > 0.0 {
            let n = (duration_s * EXPECTED_PACKETS_PER_S).min((1u64 << 23) as f64) as usize;
            self.capture.reserve(n);
        }
    }

    /// Sets the forced pauses of a real-time thread (the thread knows
    /// whether it got `SCHED_FIFO` only once it runs).
    pub fn set_rt_yield(&mut self, y: Option<RtYield>) {
        self.opts.rt_yield = y;
    }

    /// Notes the time at the start of a system call: a long gap since the
    /// previous one is a stall between calls.
    fn begin(&mut self) -> u64 {
        let now = self.clock.now_ns();
        if now.saturating_sub(self.mark) > self.opts.late_ns && self.mark != 0 {
            self.stall(self.mark, now, Phase::Between);
        }
        now
    }

    /// Notes the end of a call that began at `start`.
    fn end(&mut self, start: u64, phase: Phase) {
        let now = self.clock.now_ns();
        if now - start > self.opts.late_ns {
            self.stall(start, now, phase);
        }
        self.mark = now;
    }

    fn stall(&mut self, from: u64, to: u64, phase: Phase) {
        if self.timing.stalls.len() >= MAX_STALLS {
            self.timing.stalls_dropped += 1;
            return;
        }
        let cpu_wall_ns = match (self.cpu_mark, self.clock.thread_cpu_ns()) {
            (Some((wall0, cpu0)), Some(cpu1)) => Some((cpu1.saturating_sub(cpu0), to.saturating_sub(wall0))),
            _ => None,
        };
        let origin = self.origin.unwrap_or(0);
        self.timing.stalls.push(Stall {
            at_ns: from.saturating_sub(origin),
            dur_ns: to - from,
            phase,
            cpu_wall_ns,
        });
    }

    pub fn capture(&self) -> &Capture {
        &self.capture
    }
    pub fn options(&self) -> &Options {
        &self.opts
    }
    pub fn timing(&self) -> &Timing {
        &self.timing
    }
    /// What the network-assisted schemes' signals did.
    pub fn signal_counters(&self) -> crate::signals::SignalCounters {
        self.signals.counters
    }
    pub fn counts(&self, d: Dir) -> DirCounts {
        self.counts[d as usize]
    }
    pub fn path(&self, d: Dir) -> &Path {
        &self.paths[d as usize]
    }
    pub fn describe(&self, d: Dir) -> &str {
        &self.describe[d as usize]
    }
    pub fn cell(&self) -> Option<&AccessHandle> {
        self.cell.as_ref()
    }
    pub fn origin_ns(&self) -> Option<u64> {
        self.origin
    }
    pub fn ended_ns(&self) -> u64 {
        self.ended
    }
    pub fn send_errors(&self) -> (u64, Option<&str>) {
        (self.send_errors, self.last_send_error.as_deref())
    }

    fn model_now(&self) -> u64 {
        self.clock
            .now_ns()
            .saturating_sub(self.origin.expect("set when the run starts"))
    }

    /// Runs until `stop` is set or model time reaches `until_ns`. Model
    /// time starts at the first call and continues across calls.
    pub fn run(&mut self, stop: &AtomicBool, until_ns: Option<u64>) -> io::Result<()> {
        if self.origin.is_none() {
            self.origin = Some(self.clock.now_ns());
        }
        let origin = self.origin.expect("set");
        self.mark = self.clock.now_ns();
        self.window = (self.mark, 0);
        loop {
            if stop.load(Ordering::Relaxed) {
                break;
            }
            if let Some(y) = self.opts.rt_yield {
                let t = self.clock.now_ns();
                if t - self.window.0 >= y.window_ns {
                    self.window = (t, 0);
                }
                let owed = (t - self.window.0) * y.sleep_permille / 1000;
                if let Some(since) = self.demoted_at {
                    if t - since >= y.pause_ns {
                        self.clock.set_realtime(y.demote);
                        self.demoted_at = None;
                        self.timing.paused_ns += t - since;
                        self.window.1 += t - since;
                    }
                } else if self.window.1 + y.allowance_ns < owed && y.demote.is_some() {
                    self.clock.set_realtime(None);
                    self.demoted_at = Some(t);
                    self.timing.pauses += 1;
                } else if self.window.1 + y.allowance_ns < owed {
                    let t = self.begin();
                    self.io.pause(t + y.pause_ns);
                    let now = self.clock.now_ns();
                    if now.saturating_sub(t + y.pause_ns) > self.opts.late_ns {
                        self.stall(t + y.pause_ns, now, Phase::Wake);
                    }
                    self.timing.pauses += 1;
                    self.timing.paused_ns += now - t;
                    self.window.1 += now - t;
                    self.mark = now;
                }
            }
            let now = self.model_now();
            if until_ns.is_some_and(|u| now >= u) {
                break;
            }
            for side in [Side::Inet, Side::Ue] {
                for _ in 0..self.opts.batch {
                    let t = self.begin();
                    let got = self.io.recv(side, &mut self.buf)?;
                    self.end(t, Phase::Read);
                    let Some(n) = got else {
                        break;
                    };
                    let t = self.model_now();
                    self.advance(t);
                    self.ingest(side, n, t);
                }
            }
            let now = self.model_now();
            self.advance(now);
            let next = self
                .paths
                .iter()
                .filter_map(|p| p.next_wakeup())
                .chain(self.signals.next_wakeup().map(SimTime::from_nanos))
                .min();
            let mut limit = now + self.opts.max_sleep_ns;
            if let Some(u) = until_ns {
                limit = limit.min(u);
            }
            match next.map(|t| t.as_nanos()) {
                Some(w) if w <= now => {}
                Some(w) if w - now <= self.opts.spin_ns => {
                    self.timing.spins += 1;
                    self.io.wait(origin + w, true)?;
                }
                w => {
                    self.timing.sleeps += 1;
                    let wake = w.map_or(limit, |w| (w - self.opts.spin_ns).min(limit));
                    let t = self.begin();
                    self.cpu_mark = self.clock.thread_cpu_ns().map(|c| (t, c));
                    self.io.wait(origin + wake, false)?;
                    // Only a wake-up later than asked is lost time; an early
                    // one (a packet arrived) is not.
                    let now = self.clock.now_ns();
                    let asked = (origin + wake).max(t);
                    if now.saturating_sub(asked) > self.opts.late_ns {
                        self.stall(asked, now, Phase::Wake);
                    }
                    if self.demoted_at.is_none() {
                        self.window.1 += now - t;
                    }
                    self.mark = now;
                }
            }
        }
        if let (Some(since), Some(y)) = (self.demoted_at.take(), self.opts.rt_yield) {
            self.clock.set_realtime(y.demote);
            self.timing.paused_ns += self.clock.now_ns() - since;
        }
        self.ended = self.model_now();
        Ok(())
    }

    fn ingest(&mut self, side: Side, n: usize, t: u64) {
        let dir = match side {
            Side::Inet => Dir::Down,
            Side::Ue => Dir::Up,
        };
        let bytes = &self.buf[..n];
        let info = parse_ipv4(bytes);
        let (rec, flow) = self.capture.on_read(t, dir, bytes, info.as_ref());
        let c = &mut self.counts[dir as usize];
        c.read += 1;
        c.bytes_read += n as u64;
        let ue_port = info.as_ref().map(|i| if dir == Dir::Down { i.dport } else { i.sport });
        let mut ue = None;
        if let Some(cell) = &self.cell {
            ue = info.as_ref().and_then(|i| {
                let air = ue_port.is_some_and(|p| self.opts.air_ports.contains(&p));
                cell.register(flow, dir == Dir::Down, i.src, i.dst, air)
            });
            if ue.is_none() {
                // Neither address is a UE's: the packet has no radio to cross.
                self.capture.on_dropped(rec, NO_UE_STAGE);
                c.dropped += 1;
                return;
            }
        }
        let slot = self.slab.put(bytes, rec);
        let now = SimTime::from_nanos(t);
        let is_pure_ack = info.as_ref().and_then(|i| i.tcp).is_some_and(|t| t.is_pure_ack());
        let signalled = ue_port.is_some_and(|p| self.opts.signals.writes_on_acks(p));
        // A pure ACK crossing the cell up is an ACK to the core, so that the
        // cell's agent writes its option into it at the base station (not
        // one of a flow that gets ABC's or PBE-CC's option instead).
        let pure_ack = dir == Dir::Up && self.opts.xrc_acks && self.cell.is_some() && is_pure_ack && !signalled;
        let mut pkt = if pure_ack {
            let mut p = Packet::ack(FlowId(flow), slot as u64, &[], now);
            p.size = n as u32;
            p
        } else {
            // Data of an ABC flow crosses ABC-capable, for the base station
            // to mark.
            let abc = match (dir, ue_port) {
                (Dir::Down, Some(p)) if self.signals.is_abc(p) => xrc_core::net::AbcMark::Capable,
                _ => Default::default(),
            };
            Packet {
                flow: FlowId(flow),
                size: n as u32,
                kind: PacketKind::Data(DataHeader {
                    seq: slot as u64,
                    len: (n as u32).saturating_sub(52),
                    ts_val: now,
                    retransmit: false,
                    abc,
                }),
            }
        };
        if let (Some(i), Some(u), Some(port)) = (info.as_ref(), ue, ue_port) {
            if dir == Dir::Down {
                self.signals.on_data_in(u, i.src, i.dst, i.sport, port);
            } else if is_pure_ack && self.signals.is_pbe(port) {
                // The UE writes its estimate into the ACK as it leaves: the
                // uplink carries the 8 bytes more, the device gets them
                // when the ACK leaves the base station.
                let r = self.cell.as_ref().and_then(|c| c.pbe_rate_bps(u, now));
                if let Some(r) = r {
                    self.pbe_of_slot.insert(slot, (r / 1000).min(u32::MAX as u64) as u32);
                    pkt.size += wire_core::SHORT_OPTION_BYTES as u32;
                }
            }
        }
        self.paths[dir as usize].enqueue(now, pkt, &mut self.released, &mut self.dropped);
        self.flush(dir);
    }

    /// Runs both paths up to model time `t` and writes what left them.
    fn advance(&mut self, t: u64) {
        if let Some(cell) = &self.cell {
            cell.set_wall(t);
        }
        let now = SimTime::from_nanos(t);
        for dir in [Dir::Down, Dir::Up] {
            self.paths[dir as usize].advance_to(now, &mut self.released, &mut self.dropped);
            self.flush(dir);
        }
        if let Some(cell) = &self.cell {
            self.signals.tick(t, cell);
        }
        self.signals.take_due(t, &mut self.reports_due);
        for k in 0..self.reports_due.len() {
            let start = self.begin();
            if let Err(e) = self.io.send(Side::Inet, &self.reports_due[k]) {
                self.send_errors += 1;
                self.last_send_error = Some(format!("write of a NetAssist report to the Inet device: {e}"));
            }
            self.end(start, Phase::Write);
        }
        self.reports_due.clear();
    }

    fn flush(&mut self, dir: Dir) {
        for d in self.dropped.drain(..) {
            let slot = slot_of(&d.pkt);
            let (_, rec) = self.slab.get(slot);
            self.pbe_of_slot.remove(&slot);
            self.capture.on_dropped(rec, d.stage);
            self.slab.release(slot);
            self.counts[dir as usize].dropped += 1;
        }
        if dir == Dir::Down && !self.opts.signals.abc_ports.is_empty() {
            for (_, p) in &self.released {
                if let PacketKind::Data(d) = &p.kind {
                    if matches!(
                        d.abc,
                        xrc_core::net::AbcMark::Accelerate | xrc_core::net::AbcMark::Brake
                    ) {
                        let end = parse_ipv4(self.slab.get(slot_of(p)).0)
                            .and_then(|i| i.tcp)
                            .map(|t| t.seq.wrapping_add(t.payload as u32));
                        if let Some(end) = end {
                            self.signals.on_data_out(p.flow.0, end, d.abc);
                        }
                    }
                }
            }
        }
        if self.opts.gso && dir.egress() == Side::Ue {
            self.flush_coalesced(dir);
            return;
        }
        let origin = self.origin.expect("running");
        for k in 0..self.released.len() {
            let (sched, ref p) = self.released[k];
            let slot = slot_of(p);
            let xrc = match &p.kind {
                PacketKind::Ack(a) => a.xrc(),
                PacketKind::Data(_) => None,
            };
            let flow_id = p.flow.0;
            let start = self.begin();
            let (mut bytes, rec) = self.slab.get(slot);
            let short = if dir == Dir::Up {
                short_option(&mut self.signals, &mut self.pbe_of_slot, flow_id, slot, bytes)
            } else {
                None
            };
            if let Some((o, abc)) = short {
                let ok = crate::feedback::add_option_bytes(bytes, &o, self.opts.mtu, &mut self.rewrite);
                let c = &mut self.signals.counters;
                match (ok, abc) {
                    (true, true) => c.abc_echoes += 1,
                    (true, false) => c.pbe_written += 1,
                    (false, true) => c.abc_no_room += 1,
                    (false, false) => c.pbe_no_room += 1,
                }
                if ok {
                    bytes = &self.rewrite;
                    self.capture.on_rewritten(rec, bytes, None);
                }
            } else {
                let agent = xrc.map(|o| o.fields());
                let opt = match (&self.opts.feedback_override, self.opts.tag_key) {
                    (ov, Some(key)) if dir == Dir::Up && (ov.is_some() || agent.is_some()) && is_pure_ack(bytes) => {
                        // Tagged: the values (forged, if the override says
                        // so), a sequence number per flow, the tag.
                        let vals = match ov {
                            Some(ov) => {
                                self.overridden += 1;
                                ov.values(agent, self.overridden, sched.as_nanos())
                            }
                            None => agent.map(|a| (a, crate::feedback::Mangle::None)),
                        };
                        let info = crate::wire::parse_ipv4(bytes);
                        match (vals, info) {
                            (Some((fb, _)), Some(i)) => {
                                let replay = ov.as_ref().is_some_and(|o| o.replay) && self.overridden.is_multiple_of(2);
                                let s = self.tag_seq.entry(flow_id).or_insert(0);
                                if !replay {
                                    *s = s.wrapping_add(1);
                                }
                                let ends = crate::feedback::Ends {
                                    sender: i.dst,
                                    receiver: i.src,
                                    sender_port: i.dport,
                                    receiver_port: i.sport,
                                };
                                let k = ov.as_ref().and_then(|o| o.forge_key).unwrap_or(key);
                                Some(crate::feedback::tagged_option_bytes(fb, *s, k, &ends))
                            }
                            _ => None,
                        }
                    }
                    (Some(ov), _) if dir == Dir::Up && is_pure_ack(bytes) => {
                        self.overridden += 1;
                        ov.option(agent, self.overridden, sched.as_nanos())
                    }
                    _ => agent.map(crate::feedback::option_bytes),
                };
                let fill = match (agent, &self.opts.feedback_override) {
                    // A placeholder has no room for the tag: tagged
                    // options are inserted.
                    _ if self.opts.tag_key.is_some() => false,
                    (Some(fb), None) => crate::feedback::fill_placeholder(bytes, fb, &mut self.rewrite),
                    _ => false,
                };
                if fill {
                    bytes = &self.rewrite;
                    self.capture.on_rewritten(rec, bytes, Some(agent.unwrap_or_default()));
                    self.timing.xrc_filled += 1;
                } else if let Some(o) = opt {
                    if crate::feedback::add_option_bytes(bytes, o.as_slice(), self.opts.mtu, &mut self.rewrite) {
                        bytes = &self.rewrite;
                        self.capture.on_rewritten(
                            rec,
                            bytes,
                            Some(crate::feedback::read_option(bytes).unwrap_or_default()),
                        );
                        self.timing.xrc_written += 1;
                    } else {
                        self.timing.xrc_no_room += 1;
                    }
                }
            }
            let at = start.saturating_sub(origin);
            let sent = self.io.send(dir.egress(), bytes);
            let len = bytes.len() as u64;
            self.end(start, Phase::Write);
            match sent {
                Ok(()) => {
                    let c = &mut self.counts[dir as usize];
                    c.written += 1;
                    c.writes += 1;
                    c.bytes_written += len;
                    self.capture.on_written(rec, at, sched.as_nanos());
                }
                Err(e) => {
                    self.send_errors += 1;
                    self.last_send_error = Some(format!("write to the {:?} device: {e}", dir.egress()));
                    self.capture.on_dropped(rec, u8::MAX as usize);
                }
            }
            if at.saturating_sub(sched.as_nanos()) > self.opts.late_ns {
                self.timing.late += 1;
            }
            self.slab.release(slot);
        }
        self.released.clear();
    }

    /// [`Self::flush`] toward a device that takes super-packets: the
    /// packets of each release instant are planned into writes
    /// ([`Coalescer::plan`]); a write of several is one super-packet, and
    /// each of its packets is recorded as written when it was.
    fn flush_coalesced(&mut self, dir: Dir) {
        let origin = self.origin.expect("running");
        let side = dir.egress();
        let mut from = 0;
        while from < self.released.len() {
            let at_sched = self.released[from].0;
            let to = from + self.released[from..].iter().take_while(|(t, _)| *t == at_sched).count();
            let slots: Vec<u32> = self.released[from..to].iter().map(|(_, p)| slot_of(p)).collect();
            let pkts: Vec<&[u8]> = slots.iter().map(|&s| self.slab.get(s).0).collect();
            let mut coalescer = std::mem::take(&mut self.coalescer);
            let groups = coalescer.plan(&pkts);
            drop(pkts);
            for g in groups {
                let start = self.begin();
                let pkts: Vec<&[u8]> = g.members.iter().map(|&m| self.slab.get(slots[m]).0).collect();
                let len: usize;
                let sent = if pkts.len() == 1 {
                    len = pkts[0].len();
                    self.io.send(side, pkts[0])
                } else {
                    let idx: Vec<usize> = (0..pkts.len()).collect();
                    let hdr = super_header(&pkts, &idx, &mut self.super_hdr);
                    let hl = hdr.hdr_len as usize;
                    let mut parts: Vec<&[u8]> = Vec::with_capacity(pkts.len() + 1);
                    parts.push(&self.super_hdr);
                    parts.extend(pkts.iter().map(|p| &p[hl..]));
                    len = parts.iter().map(|p| p.len()).sum();
                    self.io.send_gso(side, &hdr, &parts)
                };
                drop(pkts);
                let at = start.saturating_sub(origin);
                self.end(start, Phase::Write);
                let late = at.saturating_sub(at_sched.as_nanos()) > self.opts.late_ns;
                let ok = sent.is_ok();
                match sent {
                    Ok(()) => {
                        let c = &mut self.counts[dir as usize];
                        c.writes += 1;
                        c.bytes_written += len as u64;
                    }
                    Err(e) => {
                        self.send_errors += 1;
                        self.last_send_error = Some(format!(
                            "write of {} packet(s) to the {side:?} device: {e}",
                            g.members.len()
                        ));
                    }
                }
                for &m in &g.members {
                    let (_, rec) = self.slab.get(slots[m]);
                    if ok {
                        self.counts[dir as usize].written += 1;
                        self.capture.on_written(rec, at, at_sched.as_nanos());
                    } else {
                        self.capture.on_dropped(rec, u8::MAX as usize);
                    }
                    if late {
                        self.timing.late += 1;
                    }
                    self.slab.release(slots[m]);
                }
            }
            self.coalescer = coalescer;
            from = to;
        }
        self.released.clear();
    }

    /// Release error (write time − scheduled time) of every packet
    /// written, ns, in the order read.
    pub fn release_errors(&self) -> Vec<u64> {
        self.capture
            .records()
            .iter()
            .filter(|r| r.fate == crate::capture::Fate::Delivered)
            .map(|r| r.t_out.saturating_sub(r.t_sched))
            .collect()
    }

    /// Packets still inside the paths.
    pub fn in_flight(&self) -> u64 {
        self.paths.iter().map(|p| p.held()).sum()
    }
}

/// The short option a pure ACK going up carries, if its flow gets one:
/// ABC's echo of the marks it newly acknowledges, or the PBE-CC report
/// its UE wrote (`true`: ABC's).
fn short_option(
    signals: &mut crate::signals::Signals,
    pbe_of_slot: &mut std::collections::HashMap<u32, u32>,
    flow: u32,
    slot: u32,
    bytes: &[u8],
) -> Option<([u8; 8], bool)> {
    let pbe = pbe_of_slot.remove(&slot);
    if signals.options().is_empty() {
        return None;
    }
    let i = parse_ipv4(bytes)?;
    let t = i.tcp?;
    if !t.is_pure_ack() {
        return None;
    }
    if signals.is_abc(i.sport) {
        let (a, b) = signals.abc_echo(flow, t.ack)?;
        return Some((wire_core::abc_option_bytes(a, b), true));
    }
    pbe.map(|k| (wire_core::pbe_option_bytes(k), false))
}

/// Packets a second the emulator takes room for ahead of a run
/// ([`Emulator::reserve`], `AccessHandle::reserve`): more than the two
/// directions of a 100 Mbit/s flow of full-size segments.
pub const EXPECTED_PACKETS_PER_S: f64 = 15_000.0;

/// The drop stage recorded for a packet the cell could not classify to a
/// UE (its UE-side address is none of the UEs').
pub const NO_UE_STAGE: usize = 200;

fn slot_of(p: &Packet) -> u32 {
    match &p.kind {
        PacketKind::Data(d) => d.seq as u32,
        PacketKind::Ack(a) => a.ack as u32,
    }
}

/// p-th percentile (nearest rank) of unsorted values; `None` when empty.
pub fn percentile(values: &mut [u64], p: f64) -> Option<u64> {
    if values.is_empty() {
        return None;
    }
    values.sort_unstable();
    let rank = ((p / 100.0) * values.len() as f64).ceil().max(1.0) as usize;
    Some(values[rank.min(values.len()) - 1])
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::cell::Cell;
    use std::collections::VecDeque;
    use std::rc::Rc;

    use crate::model::{build_paths, TraceTexts};
    use crate::report::RunReport;
    use xrc_core::scenario::ScenarioConfig;

    /// A virtual clock shared by the fake devices.
    #[derive(Clone, Default)]
    pub(crate) struct VClock(pub Rc<Cell<u64>>);
    impl Clock for VClock {
        fn now_ns(&self) -> u64 {
            self.0.get()
        }
    }

    /// Devices in memory: packets scheduled to appear on a side at a clock
    /// time; writes are recorded with the clock time. Each call costs
    /// `cost_ns` of virtual time, so a spinning loop makes progress.
    pub(crate) struct FakeIo {
        pub clock: VClock,
        pub inbox: [VecDeque<(u64, Vec<u8>)>; 2],
        pub sent: Vec<(u64, Side, Vec<u8>)>,
        /// The virtio-net header of each GSO write: (index in `sent`, header).
        pub gso: Vec<(usize, VnetHdr)>,
        pub cost_ns: u64,
        /// Extra time the k-th write takes, (k, ns).
        pub slow_send: Option<(usize, u64)>,
    }
    impl FakeIo {
        fn idx(side: Side) -> usize {
            match side {
                Side::Inet => 0,
                Side::Ue => 1,
            }
        }
        fn tick(&self) {
            self.clock.0.set(self.clock.0.get() + self.cost_ns);
        }
    }
    impl PacketIo for FakeIo {
        fn recv(&mut self, side: Side, buf: &mut [u8]) -> io::Result<Option<usize>> {
            self.tick();
            let q = &mut self.inbox[Self::idx(side)];
            if q.front().is_some_and(|(t, _)| *t <= self.clock.0.get()) {
                let (_, b) = q.pop_front().expect("front");
                buf[..b.len()].copy_from_slice(&b);
                return Ok(Some(b.len()));
            }
            Ok(None)
        }
        fn send(&mut self, side: Side, pkt: &[u8]) -> io::Result<()> {
            self.tick();
            if let Some((k, ns)) = self.slow_send {
                if k == self.sent.len() {
                    self.clock.0.set(self.clock.0.get() + ns);
                }
            }
            self.sent.push((self.clock.0.get(), side, pkt.to_vec()));
            Ok(())
        }
        fn send_gso(&mut self, side: Side, hdr: &VnetHdr, parts: &[&[u8]]) -> io::Result<()> {
            self.tick();
            self.gso.push((self.sent.len(), *hdr));
            self.sent.push((self.clock.0.get(), side, parts.concat()));
            Ok(())
        }
        fn wait(&mut self, deadline_ns: u64, _busy: bool) -> io::Result<()> {
            let next_in = self.inbox.iter().filter_map(|q| q.front().map(|(t, _)| *t)).min();
            let now = self.clock.0.get();
            let to = next_in
                .map_or(deadline_ns, |t| t.min(deadline_ns))
                .max(now + self.cost_ns);
            self.clock.0.set(to);
            Ok(())
        }
        fn pause(&mut self, deadline_ns: u64) {
            let now = self.clock.0.get();
            self.clock.0.set(deadline_ns.max(now + self.cost_ns));
        }
    }

    pub(crate) fn emulator(scenario: &str, texts: TraceTexts) -> Emulator<FakeIo, VClock> {
        let cfg = ScenarioConfig::resolve(scenario).unwrap();
        let paths = build_paths(&cfg, &texts).unwrap();
        let clock = VClock::default();
        let io = FakeIo {
            clock: clock.clone(),
            inbox: [VecDeque::new(), VecDeque::new()],
            sent: Vec::new(),
            gso: Vec::new(),
            cost_ns: 500,
            slow_send: None,
        };
        Emulator::new(io, clock, paths, Options::default())
    }

    fn ip_packet(len: usize) -> Vec<u8> {
        crate::wire::tests::tcp_packet(1, 1, crate::wire::flags::ACK, &[], len - 40)
    }

    const WIRED_12: &str = r#"{"seed":1,"duration_s":1,"topology":"wired",
        "internet":{"rate_mbps":12,"delay_ms":10,"buffer_packets":2},"flows":[{"cc":"cubic"}]}"#;

    #[test]
    fn packets_leave_at_their_model_time_in_order_with_drops_at_the_tail() {
        let mut e = emulator(WIRED_12, TraceTexts::default());
        // Five 1500-byte packets at once: one on the wire, two queued, two dropped.
        for _ in 0..5 {
            e.io.inbox[0].push_back((0, ip_packet(1500)));
        }
        e.run(&AtomicBool::new(false), Some(100_000_000)).unwrap();
        let times: Vec<u64> = e.io.sent.iter().map(|(t, _, _)| *t).collect();
        assert_eq!(times.len(), 3);
        assert!(e.io.sent.iter().all(|(_, s, _)| *s == Side::Ue));
        // 1 ms of serialization each (1500 B at 12 Mbit/s), then 10 ms;
        // the first read happens after one call's cost (0.5 µs).
        for (k, t) in times.iter().enumerate() {
            let due = 500 + (k as u64 + 1) * 1_000_000 + 10_000_000;
            assert!(*t >= due && *t < due + 100_000, "packet {k} at {t}, due {due}");
        }
        assert_eq!(e.counts(Dir::Down).dropped, 2);
        let errs = e.release_errors();
        assert_eq!(errs.len(), 3);
        assert!(errs.iter().all(|&x| x < 100_000));
        assert_eq!(e.timing().late, 0);
        assert_eq!(e.in_flight(), 0);
        assert_eq!(e.slab.in_use(), 0);
    }

    #[test]
    fn a_write_that_takes_too_long_is_a_write_stall_and_makes_the_next_release_late() {
        let mut e = emulator(WIRED_12, TraceTexts::default());
        e.io.inbox[0].push_back((0, ip_packet(1500)));
        e.io.inbox[0].push_back((0, ip_packet(1500)));
        // The first write (due at 11 ms) takes 2.5 ms; the second packet is
        // due at 12 ms and goes out after it, 1.5 ms late.
        e.io.slow_send = Some((0, 2_500_000));
        e.run(&AtomicBool::new(false), Some(50_000_000)).unwrap();
        let stalls = &e.timing().stalls;
        assert_eq!(stalls.len(), 1, "{stalls:?}");
        assert_eq!(stalls[0].phase, Phase::Write);
        assert!(stalls[0].dur_ns >= 2_500_000);
        let errs = e.release_errors();
        assert!(errs[0] < 100_000 && errs[1] > 1_000_000, "{errs:?}");
        assert_eq!(e.timing().late, 1);
    }

    #[test]
    fn a_real_time_loop_that_does_not_block_enough_pauses_to_stay_within_the_kernels_budget() {
        // Linux's default, 950 ms of each second: block 10 % of each window.
        let y = RtYield::for_budget(950_000, 1_000_000).unwrap();
        assert_eq!((y.sleep_permille, y.pause_ns), (100, 100_000));
        assert_eq!(RtYield::for_budget(1_000_000, 1_000_000), None);
        assert_eq!(RtYield::for_budget(0, 1_000_000).unwrap().sleep_permille, 500);
        // A packet every 40 µs into a 12 Mbit/s link (67 µs per 100-byte
        // packet) keeps the next event within the spin window until ~43
        // ms: the loop never blocks by itself.
        const LONG_QUEUE: &str = r#"{"seed":1,"duration_s":1,"topology":"wired",
            "internet":{"rate_mbps":12,"delay_ms":10,"buffer_packets":1000},"flows":[{"cc":"cubic"}]}"#;
        let busy = |y: Option<RtYield>| {
            let mut e = emulator(LONG_QUEUE, TraceTexts::default());
            e.set_rt_yield(y);
            for k in 0..500u64 {
                e.io.inbox[0].push_back((k * 40_000, ip_packet(100)));
            }
            e.run(&AtomicBool::new(false), Some(40_000_000)).unwrap();
            e
        };
        let e = busy(Some(y));
        let t = e.timing();
        // 10 % of the run owed, less 1 ms of slack: from 10 ms on, ~3 ms.
        assert!(
            (2_500_000..=3_200_000).contains(&t.paused_ns),
            "{} ns paused",
            t.paused_ns
        );
        assert_eq!(t.pauses, t.paused_ns / 100_000);
        assert_eq!(e.io.sent.len(), busy(None).io.sent.len(), "as many packets cross");
        // A release due during a pause is late by at most the pause.
        assert!(e.release_errors().iter().all(|&x| x <= 101_000));
        assert_eq!(busy(None).timing().pauses, 0);
        // A loop that sleeps between sparse packets never pauses.
        let mut e = emulator(WIRED_12, TraceTexts::default());
        e.set_rt_yield(Some(y));
        for k in 0..40u64 {
            e.io.inbox[1].push_back((k * 1_000_000, ip_packet(100)));
        }
        e.run(&AtomicBool::new(false), Some(40_000_000)).unwrap();
        assert_eq!(e.timing().pauses, 0);
    }

    /// (clock time, priority) of each policy change.
    type PolicyLog = Rc<std::cell::RefCell<Vec<(u64, Option<i32>)>>>;

    /// A virtual clock that logs the thread's policy changes.
    #[derive(Clone, Default)]
    struct PolicyClock(VClock, PolicyLog);
    impl Clock for PolicyClock {
        fn now_ns(&self) -> u64 {
            self.0.now_ns()
        }
        fn set_realtime(&self, priority: Option<i32>) {
            self.1.borrow_mut().push((self.0.now_ns(), priority));
        }
    }

    #[test]
    fn a_demoting_loop_leaves_the_real_time_policy_for_its_pauses_and_ends_in_it() {
        const LONG_QUEUE: &str = r#"{"seed":1,"duration_s":1,"topology":"wired",
            "internet":{"rate_mbps":12,"delay_ms":10,"buffer_packets":1000},"flows":[{"cc":"cubic"}]}"#;
        let cfg = ScenarioConfig::resolve(LONG_QUEUE).unwrap();
        let clock = PolicyClock::default();
        let io = FakeIo {
            clock: clock.0.clone(),
            inbox: [VecDeque::new(), VecDeque::new()],
            sent: Vec::new(),
            cost_ns: 500,
            slow_send: None,
            gso: Vec::new(),
        };
        let paths = build_paths(&cfg, &TraceTexts::default()).unwrap();
        let mut e = Emulator::new(io, clock.clone(), paths, Options::default());
        let y = RtYield {
            demote: Some(50),
            ..RtYield::for_budget(950_000, 1_000_000).unwrap()
        };
        e.set_rt_yield(Some(y));
        for k in 0..500u64 {
            e.io.inbox[0].push_back((k * 40_000, ip_packet(100)));
        }
        e.run(&AtomicBool::new(false), Some(40_000_000)).unwrap();
        let log = clock.1.borrow();
        // Out and back in, alternately, ending real-time; each spell out
        // lasts at least the pause; nothing slept for it.
        assert!(log.len() >= 10 && log.len() % 2 == 0, "{} changes", log.len());
        for pair in log.chunks(2) {
            assert_eq!((pair[0].1, pair[1].1), (None, Some(50)));
            assert!(pair[1].0 - pair[0].0 >= y.pause_ns);
        }
        let t = e.timing();
        assert_eq!(t.pauses as usize, log.len() / 2);
        assert!((2_500_000..=3_300_000).contains(&t.paused_ns), "{} ns out", t.paused_ns);
        // Releases are not held up by a spell out of the real-time policy.
        assert!(e.release_errors().iter().all(|&x| x < 10_000));
    }

    #[test]
    fn a_stopped_run_resumes_with_the_same_model_clock() {
        let mut e = emulator(WIRED_12, TraceTexts::default());
        e.io.inbox[1].push_back((5_000_000, ip_packet(100)));
        e.run(&AtomicBool::new(false), Some(6_000_000)).unwrap();
        assert!(e.io.sent.is_empty(), "still in the 10 ms pipe");
        e.run(&AtomicBool::new(false), Some(30_000_000)).unwrap();
        assert_eq!(e.io.sent.len(), 1);
        assert_eq!(e.io.sent[0].1, Side::Inet);
    }

    /// A trace scenario: `delay_ms` of Internet delay each way, then the
    /// downlink trace `down` (unlimited queues, the uplink a fixed 0 ms).
    fn trace_emulator(delay_ms: u32, down: &str) -> Emulator<FakeIo, VClock> {
        let scenario = format!(
            r#"{{"seed":1,"duration_s":1,"topology":"trace",
            "internet":{{"delay_ms":{delay_ms},"buffer_packets":null}},
            "trace":{{"downlink":"x.down","buffer_bytes":null}},"flows":[{{"cc":"cubic","ue":0}}]}}"#
        );
        emulator(
            &scenario,
            TraceTexts {
                downlink: Some(down.into()),
                uplink: None,
            },
        )
    }

    #[test]
    fn a_one_packet_per_5_ms_trace_never_carries_more_than_2_4_mbit_s() {
        let mut e = trace_emulator(0, "5\n");
        // An arrival every 0.3 ms, some in the same millisecond as an
        // opportunity: 1500-byte packets, far more than the trace carries.
        for k in 0..3000u64 {
            e.io.inbox[0].push_back((k * 300_000, ip_packet(1500)));
        }
        e.run(&AtomicBool::new(false), Some(1_000_000_000)).unwrap();
        let times: Vec<u64> = e.io.sent.iter().map(|(t, _, _)| *t).collect();
        // Within any 50 ms at most 50 / 5 + 1 packets (one per opportunity).
        for (i, &t) in times.iter().enumerate() {
            let in_50ms = times[i..].iter().take_while(|&&u| u < t + 50_000_000).count();
            assert!(in_50ms <= 11, "{in_50ms} packets within 50 ms of {t}");
        }
        let bits = times.len() as f64 * 1500.0 * 8.0;
        assert!(bits / 1.0 <= 2.4e6, "{} Mbit/s", bits / 1e6);
        assert!(
            times.len() >= 195,
            "the trace's opportunities are used: {}",
            times.len()
        );
    }

    #[test]
    fn data_due_at_the_base_station_is_in_before_an_ack_read_late_moves_its_clock_past_an_opportunity() {
        // One opportunity per millisecond after 5 ms of Internet delay. A
        // (read at 0) reaches the queue at 5 ms and leaves at 6 ms; writing
        // it takes 2.5 ms, so the loop next looks at 8.5 ms, where an ACK
        // from the UE (read at 8 ms) and B (read at 2.5 ms, due at the queue
        // at 7.5 ms) wait. B must have the 8 ms opportunity: the loop runs
        // both paths to a packet's read time before it takes the packet, so
        // the ACK cannot run the shared base station past B's arrival.
        let mut e = trace_emulator(5, "1\n");
        e.io.slow_send = Some((0, 2_500_000));
        e.io.inbox[0].push_back((0, ip_packet(1500)));
        e.io.inbox[0].push_back((2_500_000, ip_packet(1500)));
        let mut ack = ip_packet(52);
        ack[12..16].copy_from_slice(&[10, 77, 0, 2]);
        ack[16..20].copy_from_slice(&[10, 77, 0, 1]);
        ack[20..22].copy_from_slice(&5201u16.to_be_bytes());
        ack[22..24].copy_from_slice(&40000u16.to_be_bytes());
        e.io.inbox[1].push_back((8_000_000, ack));
        e.run(&AtomicBool::new(false), Some(20_000_000)).unwrap();
        let down: Vec<u64> =
            e.io.sent
                .iter()
                .filter(|(_, s, _)| *s == Side::Ue)
                .map(|(t, _, _)| *t)
                .collect();
        assert_eq!(down.len(), 2);
        assert!(
            down[1] < 9_000_000,
            "B written at {} ns: it missed the 8 ms opportunity",
            down[1]
        );
    }

    #[test]
    fn through_the_cellular_topology_a_packet_crosses_the_internet_delay_and_the_cell_and_a_stranger_is_dropped() {
        let scenario = r#"{"seed":1,"duration_s":1,"topology":"cellular",
            "internet":{"delay_ms":5,"buffer_packets":null},"cell":{"harq":{"bler":0.0}},
            "ues":[{"channel":{"kind":"fixed_cqi","cqi":15}}],"flows":[{"cc":"cubic","ue":0}]}"#;
        let mut e = emulator(scenario, TraceTexts::default());
        e.io.inbox[0].push_back((10_000_000, ip_packet(1500)));
        let mut stranger = ip_packet(1500);
        stranger[19] = 77; // to 10.77.0.77: no UE has that address
        e.io.inbox[0].push_back((10_000_000, stranger));
        e.run(&AtomicBool::new(false), Some(100_000_000)).unwrap();
        assert_eq!(e.io.sent.len(), 1);
        assert_eq!(e.counts(Dir::Down).dropped, 1);
        // Read at 10 ms + a call's cost; 5 ms of delay; the TTI at 16 ms;
        // 1 ms of decoding: out at 18 ms.
        let t = e.io.sent[0].0;
        assert!((18_000_000..18_100_000).contains(&t), "{t}");
        let r = RunReport::of(&e, 0, Default::default(), 1_000_000);
        let tti = r.tti.expect("a cell has TTIs");
        assert!(tti.n >= 99, "{tti:?}");
        assert_eq!(tti.late, 0);
        assert!(tti.max_ns.unwrap() < 100_000, "the fake clock wakes on time: {tti:?}");
    }

    #[test]
    fn with_xrc_acks_on_the_base_station_writes_the_agents_option_into_each_pure_ack_and_only_then() {
        let scenario = r#"{"seed":1,"duration_s":1,"topology":"cellular",
            "internet":{"delay_ms":5,"buffer_packets":null},"cell":{"harq":{"bler":0.0}},
            "ues":[{"channel":{"kind":"fixed_cqi","cqi":15}}],"flows":[{"cc":"cubic","ue":0}]}"#;
        let ack_up = || {
            let mut b = crate::wire::tests::tcp_packet(1, 1, crate::wire::flags::ACK, &[], 0);
            b[12..16].copy_from_slice(&[10, 77, 0, 2]);
            b[16..20].copy_from_slice(&[10, 77, 0, 1]);
            b
        };
        for on in [false, true] {
            let mut e = emulator(scenario, TraceTexts::default());
            e.opts.xrc_acks = on;
            for k in 0..20u64 {
                e.io.inbox[0].push_back((k * 1_000_000, ip_packet(1500)));
            }
            e.io.inbox[1].push_back((60_000_000, ack_up()));
            e.run(&AtomicBool::new(false), Some(200_000_000)).unwrap();
            let up: Vec<_> = e.io.sent.iter().filter(|(_, s, _)| *s == Side::Inet).collect();
            assert_eq!(up.len(), 1);
            let fb = crate::feedback::read_option(&up[0].2);
            if !on {
                assert_eq!(fb, None, "off by default");
                assert_eq!(up[0].2, ack_up());
                continue;
            }
            let fb = fb.expect("the option on the ACK");
            assert!(crate::feedback::checksums_ok(&up[0].2));
            assert_eq!(e.timing().xrc_written, 1);
            // The agent's estimate at the base station, per flow (one live
            // flow), in kbit/s as the option carries it.
            let sched = e.capture().records().iter().find(|r| r.dir == Dir::Up).unwrap().t_sched;
            let at_bs = sched - 5_000_000; // the reverse link: 5 ms, no rate limit
            let series = e.cell().unwrap().series();
            let tti = series.samples.iter().rev().find(|x| x.t_ns <= at_bs).unwrap();
            let agent = tti.agent_bps;
            assert!(
                fb.rate_kbps > 0 && (fb.rate_kbps as u64) == agent / 1000,
                "{fb:?} vs {agent}"
            );
        }
    }

    const CELL_CQI15: &str = r#"{"seed":1,"duration_s":1,"topology":"cellular",
        "internet":{"delay_ms":5,"buffer_packets":null},"cell":{"harq":{"bler":0.0}},
        "ues":[{"channel":{"kind":"fixed_cqi","cqi":15}}],"flows":[{"cc":"cubic","ue":0}]}"#;

    /// A pure ACK from the UE's port 5201 to the sender's 40000.
    fn ack_from_ue(ack: u32) -> Vec<u8> {
        let mut b = crate::wire::tests::tcp_packet(1, ack, crate::wire::flags::ACK, &[], 0);
        b[12..16].copy_from_slice(&[10, 77, 0, 2]);
        b[16..20].copy_from_slice(&[10, 77, 0, 1]);
        b[20..22].copy_from_slice(&5201u16.to_be_bytes());
        b[22..24].copy_from_slice(&40000u16.to_be_bytes());
        b
    }

    /// The 4 value bytes of option 253 with this ExID, if the TCP header
    /// has it.
    fn short_option_of(pkt: &[u8], exid: u16) -> Option<[u8; 4]> {
        let off = ((pkt[32] >> 4) as usize) * 4;
        let opts = &pkt[40..20 + off];
        let mut i = 0;
        while i < opts.len() {
            match opts[i] {
                0 => return None,
                1 => i += 1,
                k => {
                    let len = opts[i + 1] as usize;
                    if k == 253 && len == 8 && u16::from_be_bytes([opts[i + 2], opts[i + 3]]) == exid {
                        return Some([opts[i + 4], opts[i + 5], opts[i + 6], opts[i + 7]]);
                    }
                    i += len.max(2);
                }
            }
        }
        None
    }

    /// Fig.-1-like cell at CQI 15 whose base station gives `signals`, with
    /// `n` segments of the flow to port 5201 arriving one per millisecond.
    fn with_signals(signals: crate::signals::SignalOptions, n: u32) -> Emulator<FakeIo, VClock> {
        let mut e = emulator(CELL_CQI15, TraceTexts::default());
        e.opts.signals = signals;
        e.signals = crate::signals::Signals::new(e.opts.signals.clone());
        e.signals.enable(e.cell.as_ref().unwrap());
        for k in 0..n {
            let seg = crate::wire::tests::tcp_packet(1 + 1448 * k, 1, crate::wire::flags::ACK, &[], 1448);
            e.io.inbox[0].push_back((k as u64 * 1_000_000, seg));
        }
        e
    }

    #[test]
    fn an_abc_flows_ack_carries_the_marks_the_base_station_gave_the_data_it_acknowledges() {
        let abc = crate::signals::SignalOptions {
            abc_ports: vec![5201],
            ..Default::default()
        };
        let mut e = with_signals(abc, 20);
        // Acknowledges the first ten segments, then all twenty.
        e.io.inbox[1].push_back((80_000_000, ack_from_ue(1 + 1448 * 10)));
        e.io.inbox[1].push_back((81_000_000, ack_from_ue(1 + 1448 * 20)));
        e.run(&AtomicBool::new(false), Some(200_000_000)).unwrap();
        let up: Vec<_> = e.io.sent.iter().filter(|(_, s, _)| *s == Side::Inet).collect();
        assert_eq!(up.len(), 2);
        let marks: Vec<(u16, u16)> = up
            .iter()
            .map(|(_, _, b)| {
                assert!(crate::feedback::checksums_ok(b));
                let v = short_option_of(b, wire_core::ABC_EXID).expect("ABC's echo");
                (u16::from_be_bytes([v[0], v[1]]), u16::from_be_bytes([v[2], v[3]]))
            })
            .collect();
        assert_eq!(marks[0].0 + marks[0].1, 10, "{marks:?}");
        assert_eq!(marks[1].0 + marks[1].1, 10, "{marks:?}");
        let c = e.signal_counters();
        assert_eq!((c.abc_accelerate + c.abc_brake, c.abc_echoes), (20, 2));
        assert_eq!(
            crate::feedback::read_option(&up[0].2),
            None,
            "no XRC option on an ABC flow's ACK"
        );
    }

    #[test]
    fn a_pbe_flows_ack_carries_its_ues_capacity_estimate_and_another_flows_does_not() {
        let pbe = crate::signals::SignalOptions {
            pbe_ports: vec![5201],
            ..Default::default()
        };
        let mut e = with_signals(pbe, 20);
        e.io.inbox[1].push_back((80_000_000, ack_from_ue(1 + 1448 * 20)));
        let mut other = ack_from_ue(1 + 1448 * 20);
        other[20..22].copy_from_slice(&5202u16.to_be_bytes());
        e.io.inbox[1].push_back((90_000_000, other));
        e.run(&AtomicBool::new(false), Some(200_000_000)).unwrap();
        let up: Vec<_> = e.io.sent.iter().filter(|(_, s, _)| *s == Side::Inet).collect();
        assert_eq!(up.len(), 2);
        let v = short_option_of(&up[0].2, wire_core::PBE_EXID).expect("PBE-CC's report");
        let kbps = u32::from_be_bytes(v);
        assert!(kbps > 10_000, "a CQI-15 cell's estimate, got {kbps} kbit/s");
        assert_eq!(short_option_of(&up[1].2, wire_core::PBE_EXID), None);
        assert_eq!(e.signal_counters().pbe_written, 1);
    }

    #[test]
    fn netassist_reports_go_to_the_senders_report_port_every_period_after_the_delay() {
        let na = crate::signals::SignalOptions {
            net_assist: Some(crate::signals::NetAssistOptions {
                ports: vec![5201],
                period_ns: 50_000_000,
                delay_ns: 5_000_000,
                loss: 0.0,
                wired_rtt_ns: 10_000_000,
                report_port: 5299,
                seed: 1,
            }),
            ..Default::default()
        };
        let mut e = with_signals(na, 100);
        e.run(&AtomicBool::new(false), Some(170_000_000)).unwrap();
        let reports: Vec<_> =
            e.io.sent
                .iter()
                .filter(|(_, s, b)| *s == Side::Inet && b[9] == 17)
                .collect();
        assert_eq!(reports.len(), 3, "at 55, 105 and 155 ms");
        for (k, (t, _, b)) in reports.iter().enumerate() {
            let due = 55_000_000 + k as u64 * 50_000_000;
            assert!(*t >= due && *t < due + 100_000, "report {k} written at {t}, due {due}");
            assert_eq!(&b[16..20], &[10, 77, 0, 1], "to the sender");
            assert_eq!(u16::from_be_bytes([b[22], b[23]]), 5299);
            let d = wire_core::NetAssistDatagram::parse(&b[28..]).expect("a report");
            assert_eq!(
                (d.sender, d.receiver),
                (([10, 77, 0, 1], 40000), ([10, 77, 0, 2], 5201))
            );
            assert!(d.bw_bps > 10_000_000 && d.flows == 1, "{d:?}");
        }
        assert_eq!(e.signal_counters().reports_sent, 3);
    }

    #[test]
    fn with_gso_a_burst_released_at_one_instant_is_one_write_and_every_packet_is_recorded_at_its_time() {
        // Twenty opportunities at 10 ms of every 10: the ten segments read at
        // 0 leave together at 10 ms.
        let scenario = r#"{"seed":1,"duration_s":1,"topology":"trace",
            "internet":{"delay_ms":0,"buffer_packets":null},
            "trace":{"downlink":"x.down","buffer_bytes":null},"flows":[{"cc":"cubic","ue":0}]}"#;
        let segs: Vec<Vec<u8>> = (0..10)
            .map(|k| crate::gso::tests::linux_segment(1 + 1448 * k, 100 + k as u16, 1448))
            .collect();
        for gso in [false, true] {
            let mut e = emulator(
                scenario,
                TraceTexts {
                    downlink: Some("10\n".repeat(20)),
                    uplink: None,
                },
            );
            e.opts.gso = gso;
            for s in &segs {
                e.io.inbox[0].push_back((0, s.clone()));
            }
            e.run(&AtomicBool::new(false), Some(30_000_000)).unwrap();
            let down = e.counts(Dir::Down);
            assert_eq!(down.written, 10);
            let recs: Vec<_> = e.capture().records().iter().copied().collect();
            assert!(recs.iter().all(|r| r.fate == crate::capture::Fate::Delivered));
            assert!(recs.iter().all(|r| r.t_sched == 10_000_000), "{recs:?}");
            if !gso {
                assert_eq!(down.writes, 10);
                assert!(e.io.gso.is_empty());
                assert_eq!(e.io.sent.iter().map(|x| x.2.clone()).collect::<Vec<_>>(), segs);
                continue;
            }
            assert_eq!(down.writes, 1, "one super-packet");
            assert_eq!(e.io.sent.len(), 1);
            let (t, side, bytes) = &e.io.sent[0];
            assert_eq!(*side, Side::Ue);
            assert_eq!(
                e.io.gso,
                vec![(
                    0,
                    crate::gso::super_header(
                        &segs.iter().map(|v| v.as_slice()).collect::<Vec<_>>(),
                        &(0..10).collect::<Vec<_>>(),
                        &mut Vec::new()
                    )
                )]
            );
            assert_eq!(bytes.len(), 52 + 10 * 1448);
            assert_eq!(down.bytes_written, bytes.len() as u64);
            let payload: Vec<u8> = segs.iter().flat_map(|s| s[52..].to_vec()).collect();
            assert_eq!(bytes[52..], payload[..]);
            // Every constituent was written when the super-packet was (the
            // call began a call's cost before the fake clock recorded it).
            assert!(recs.iter().all(|r| r.t_out == recs[0].t_out && r.t_out + 500 == *t));
            assert_eq!(e.slab.in_use(), 0);
        }
    }

    #[test]
    fn the_nearest_rank_percentile_of_a_list() {
        let mut v = vec![5, 1, 4, 2, 3];
        assert_eq!(percentile(&mut v, 50.0), Some(3));
        assert_eq!(percentile(&mut v, 100.0), Some(5));
        assert_eq!(percentile(&mut [], 50.0), None);
    }
}
