//! An experiment, not a model: one flow over the `wired` or the `trace`
//! topology, built from the same components `scenario::World` routes
//! between (the Internet path, the access network: the wired pass-through
//! or the trace link with its uplink), driven here by
//! [`xrc_core::net::Standalone`], with an optional **ACK lateness** added
//! where the ACKs reach the sender. It tests whether the timing noise the
//! real-time emulator and its host add to a real run explains what Linux
//! BBR does there (`docs/validation.md`, "BBR through the emulator").
//!
//! ```text
//! cargo run --release -p xrc-core --example ack_noise -- RESOLVED.json [NOISE.txt [series|shuffle|none] [SEED]]
//!     [--per-second] [--dump=FILE] [--send-jitter-us=J] [--ack-mix=P1,P3]
//! ```
//!
//! `RESOLVED.json`: a resolved `wired` or `trace` scenario with one bulk
//! flow (as `xrc validate --print` writes it; a trace scenario's paths must
//! be readable). `NOISE.txt`: lines `t_s lateness_us`, as
//! `scripts/bbr_rate_analysis.py --export-noise` writes them from a real
//! run: for each ACK of that run, its time after the first data segment
//! and how much later it reached the sender than a perfectly timed
//! emulator and receiver would have delivered it (the emulator's release
//! error on the data and on the ACK plus the receiving host's delay).
//!
//! - `series`: an ACK reaching the sender at time `t` is held for the
//!   lateness of the real ACK nearest before `t` (the real run's noise
//!   replayed at the same times, bursts and stalls included);
//!   With `SEED` = k > 1 the series is rotated by k − 1 seconds (wrapping
//!   around), to see the same noise meet BBR's gain cycle at other phases;
//! - `shuffle`: the lateness is drawn uniformly from the real run's values
//!   (same distribution, no time structure), with `SEED`;
//! - `none` (or no file): no lateness; the result must equal `xrc run`'s.
//!
//! The lateness is added after the reverse path (where the analysis
//! measures it: at the sender), so a trace uplink still quantizes the ACKs
//! as the model does. ACKs stay in order (an ACK never overtakes an
//! earlier one). Prints mean and p95 RTT, mean cwnd and in-flight (100 ms
//! grid), retransmissions, drops and goodput over 5 s .. end, and the
//! bandwidth BBR paces at in its gain-1 phases; with `--per-second`, also
//! a line per second; with `--dump=FILE`, the segments it sent and the
//! ACKs it processed (see `scripts/bbr_rate_analysis.py --xrc-dump`); with
//! `--send-jitter-us=J`, each data segment enters the path up to J µs late;
//! with `--ack-mix=P1,P3`, the receiver's ACKs are mixed as a real
//! receiver's reads mix them (see the flag's comment in `main`). A
//! scenario with `receiver.ack_on_read` gets the receiver's read after
//! every packet the access network let out at one instant, as `World`
//! schedules it.

use std::collections::VecDeque;
use std::io::Write as _;

use xrc_core::engine::{EventQueue, Rng, RngStreams};
use xrc_core::net::{
    AckHeader, Component, DataHeader, Dir, DropSite, FlowId, InternetPath, LinkConfig, Observer, Packet, PacketKind,
    QueueLimit, Released, Standalone,
};
use xrc_core::scenario::access::AccessNet;
use xrc_core::scenario::config::Topology;
use xrc_core::scenario::TraceTexts;
use xrc_core::transport::cc::registry;
use xrc_core::transport::{SenderOutput, TcpReceiver, TcpSender};
use xrc_core::units::{BitRate, SimDuration, SimTime};

/// The two components between the hosts.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Hop {
    Internet = 0,
    Access = 1,
}

#[derive(Copy, Clone, Debug)]
enum Ev {
    SenderTimer,
    ReceiverTimer,
    DataRelease,
    Wake(Hop),
    AckRelease,
    Grid,
}

/// A component behind its own timer queue, whatever its timer type.
trait Driven {
    fn push(&mut self, now: SimTime, dir: Dir, pkt: Packet, obs: &mut dyn Observer, out: &mut Vec<Released>);
    fn advance(&mut self, now: SimTime, obs: &mut dyn Observer, out: &mut Vec<Released>);
    fn next_wakeup(&self) -> Option<SimTime>;
}

impl<C: Component> Driven for Standalone<C> {
    fn push(&mut self, now: SimTime, dir: Dir, pkt: Packet, obs: &mut dyn Observer, out: &mut Vec<Released>) {
        Standalone::push(self, now, dir, pkt, obs, out)
    }
    fn advance(&mut self, now: SimTime, obs: &mut dyn Observer, out: &mut Vec<Released>) {
        Standalone::advance(self, now, obs, out)
    }
    fn next_wakeup(&self) -> Option<SimTime> {
        Standalone::next_wakeup(self)
    }
}

/// Counts the data packets dropped anywhere on the path.
#[derive(Default)]
struct Drops(u64);

impl Observer for Drops {
    fn dropped(&mut self, _now: SimTime, _site: DropSite, _ue: Option<usize>, pkt: &Packet) {
        if matches!(pkt.kind, PacketKind::Data(_)) {
            self.0 += 1;
        }
    }
}

enum Noise {
    None,
    Series(Vec<(u64, u64)>),
    Shuffle(Vec<u64>, Rng),
}

impl Noise {
    fn lateness(&mut self, t: SimTime) -> SimDuration {
        match self {
            Noise::None => SimDuration::ZERO,
            Noise::Series(v) => {
                let k = v.partition_point(|&(at, _)| at <= t.as_nanos());
                SimDuration::from_nanos(if k == 0 { 0 } else { v[k - 1].1 })
            }
            Noise::Shuffle(v, rng) => SimDuration::from_nanos(v[rng.below(v.len() as u64) as usize]),
        }
    }
}

fn pct(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    if v.is_empty() {
        return f64::NAN;
    }
    let k = ((v.len() - 1) as f64 * q).round() as usize;
    v[k]
}

/// Bad input: the message names the argument and the value; exit 2.
fn fail(msg: String) -> ! {
    eprintln!("ack_noise: {msg}");
    eprintln!("usage: ack_noise RESOLVED.json [NOISE.txt [series|shuffle|none] [SEED]] [--per-second] [--dump=FILE] [--send-jitter-us=J]");
    std::process::exit(2)
}

/// `t_s lateness_us` lines (`#` comments and blank lines skipped).
fn read_noise(path: &str) -> Vec<(u64, u64)> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| fail(format!("NOISE {path:?}: {e}")));
    let mut v = Vec::new();
    for (k, l) in text.lines().enumerate() {
        if l.trim().is_empty() || l.starts_with('#') {
            continue;
        }
        let mut it = l.split_whitespace().map(|x| x.parse::<f64>());
        match (it.next(), it.next()) {
            (Some(Ok(t)), Some(Ok(d))) if t.is_finite() && t >= 0.0 && d.is_finite() => {
                v.push(((t * 1e9) as u64, (d.max(0.0) * 1e3) as u64))
            }
            _ => fail(format!(
                "NOISE {path:?} line {}: expected 't_s lateness_us', got {l:?}",
                k + 1
            )),
        }
    }
    if v.is_empty() {
        fail(format!("NOISE {path:?}: no samples"));
    }
    v.sort();
    v
}

fn dump_ack(dump: &mut Option<std::io::BufWriter<std::fs::File>>, now: SimTime, a: &AckHeader) {
    if let Some(w) = dump.as_mut() {
        write!(w, "A {} {}", now.as_nanos(), a.ack).expect("--dump: write");
        for b in a.sack_blocks() {
            write!(w, " {} {}", b.start, b.end).expect("--dump: write");
        }
        writeln!(w).expect("--dump: write");
    }
}

/// `--ack-mix`'s state: its random stream, a withheld ACK, and the last
/// ACK sent (the template of an ACK the receiver did not make).
struct MixState {
    rng: Rng,
    owed: Option<Packet>,
    last: Option<Packet>,
}

/// The ACKs the receiver sends for one data segment under `--ack-mix`
/// (without it, the receiver's own).
fn mix_acks(mix_p: Option<(f64, f64)>, st: &mut MixState, d: &DataHeader, got: Option<Packet>) -> Vec<Packet> {
    let Some((p1, p3)) = mix_p else {
        return got.into_iter().collect();
    };
    let end = d.seq + u64::from(d.len);
    let at = |mut a: Packet| {
        if let PacketKind::Ack(h) = &mut a.kind {
            h.ack = end;
            h.ts_ecr = d.ts_val;
        }
        a
    };
    let out = match got {
        // The receiver holds this segment alone: a withheld ACK goes out
        // now, covering it too; or, with probability P1, the application's
        // read acknowledges it at once.
        None => match (st.owed.take(), st.last.clone()) {
            (Some(a), _) => vec![at(a)],
            (None, Some(t)) if st.rng.uniform() < p1 => vec![at(t)],
            _ => vec![],
        },
        Some(a)
            if matches!(&a.kind, PacketKind::Ack(h) if h.sack_blocks().is_empty() && h.ack == end)
                && st.owed.is_none() =>
        {
            if st.rng.uniform() < p3 {
                st.owed = Some(a);
                vec![]
            } else {
                vec![a]
            }
        }
        Some(a) => {
            st.owed = None;
            vec![a]
        }
    };
    if let Some(a) = out.last() {
        st.last = Some(a.clone());
    }
    out
}

fn main() {
    let mut args: Vec<String> = std::env::args().collect();
    // `--per-second`: also one line per second of mean RTT, retransmissions,
    // drops and BBR's bandwidth estimate and mode.
    let per_second = args.iter().any(|a| a == "--per-second");
    args.retain(|a| a != "--per-second");
    // `--dump=FILE`: every data segment the sender sends (`S t_ns start
    // end`) and every ACK it processes (`A t_ns cum [left right]...`), for
    // scripts/bbr_rate_analysis.py's replay of Linux's rate sampler.
    let dump_path = args.iter().find_map(|a| a.strip_prefix("--dump=").map(str::to_owned));
    args.retain(|a| !a.starts_with("--dump="));
    // `--send-jitter-us=J`: each data segment enters the path a uniform
    // 0..J µs after the sender let it out (in order; a what-if for the
    // sending host's timer and softirq jitter, seeded with SEED).
    let jitter_ns: u64 = match args
        .iter()
        .find_map(|a| a.strip_prefix("--send-jitter-us=").map(str::to_owned))
    {
        None => 0,
        Some(v) => match v.parse::<f64>() {
            Ok(j) if j.is_finite() && (0.0..=1e6).contains(&j) => (j * 1e3) as u64,
            _ => fail(format!("--send-jitter-us: microseconds in 0..1e6, got {v:?}")),
        },
    };
    args.retain(|a| !a.starts_with("--send-jitter-us="));
    // `--ack-mix=P1,P3`: a what-if for a real receiver's ACK coverage (Linux
    // `__tcp_ack_snd_check` sends the every-second-segment ACK only when
    // the window's right edge advances, else the application's read sends
    // it later, `tcp_cleanup_rbuf`): each in-order every-second-segment ACK
    // is, with probability P3, withheld and sent with the next segment (it
    // covers three), and a segment the receiver holds alone is, with
    // probability P1, acknowledged at once (as the application's read
    // does), seeded with SEED.
    let ack_mix: Option<(f64, f64)> = args
        .iter()
        .find_map(|a| a.strip_prefix("--ack-mix=").map(str::to_owned))
        .map(|v| {
            let p: Vec<f64> = v.split(',').filter_map(|x| x.parse().ok()).collect();
            match p[..] {
                [p1, p3] if (0.0..=1.0).contains(&p1) && (0.0..=1.0).contains(&p3) && p1 + p3 <= 1.0 => (p1, p3),
                _ => fail(format!("--ack-mix: P1,P3 probabilities with P1 + P3 <= 1, got {v:?}")),
            }
        });
    args.retain(|a| !a.starts_with("--ack-mix="));
    let mut dump = dump_path.map(|p| {
        std::io::BufWriter::new(std::fs::File::create(&p).unwrap_or_else(|e| fail(format!("--dump {p:?}: {e}"))))
    });
    let Some(scenario) = args.get(1) else {
        fail("RESOLVED.json: missing".into())
    };
    let text = std::fs::read_to_string(scenario).unwrap_or_else(|e| fail(format!("RESOLVED.json {scenario:?}: {e}")));
    let cfg = xrc_core::scenario::from_json(&text).unwrap_or_else(|e| fail(format!("RESOLVED.json {scenario:?}: {e}")));
    if cfg.flows.len() != 1 {
        fail(format!("RESOLVED.json: one flow expected, got {}", cfg.flows.len()));
    }
    let f = &cfg.flows[0];
    if !matches!(cfg.topology, Topology::Wired | Topology::Trace) || f.extra_rtt_ms != 0.0 || f.start_s != 0.0 {
        fail("RESOLVED.json: a `wired` or `trace` scenario whose flow starts at 0 s without extra RTT expected".into());
    }
    let mode = args.get(3).map_or("series", |s| s.as_str());
    // SEED: the shuffle's seed; for `series`, 1 + the rotation in seconds.
    let seed: u64 = match args.get(4) {
        None => 1,
        Some(s) => s
            .parse()
            .unwrap_or_else(|_| fail(format!("SEED: a non-negative integer, got {s:?}"))),
    };
    let mut noise = match (args.get(2), mode) {
        (None, _) | (Some(_), "none") => Noise::None,
        (Some(p), "series") => {
            let v = read_noise(p);
            let span = v.last().map_or(0, |x| x.0) + 1;
            let shift = seed.saturating_sub(1).saturating_mul(1_000_000_000) % span;
            let mut w: Vec<(u64, u64)> = v.iter().map(|&(t, d)| ((t + span - shift) % span, d)).collect();
            w.sort();
            Noise::Series(w)
        }
        (Some(p), "shuffle") => Noise::Shuffle(read_noise(p).into_iter().map(|x| x.1).collect(), Rng::from_seed(seed)),
        (Some(_), m) => fail(format!("mode: series, shuffle or none, got {m:?}")),
    };

    // The hosts and the components, as World::with_traces builds them.
    let streams = RngStreams::new(cfg.seed);
    let stream = streams.stream("flow/0/cc").next_u64();
    let cc = registry::build_seeded(&f.cc, &f.cc_params, stream)
        .unwrap_or_else(|e| fail(format!("RESOLVED.json flows.0.cc {:?}: {e}", f.cc)));
    let mut tcp = f.tcp.clone();
    tcp.rwnd_bytes = Some(tcp.rwnd_bytes.unwrap_or(xrc_core::transport::MAX_WINDOW_BYTES));
    let id = FlowId(0);
    let mut snd = TcpSender::new(id, tcp, cc);
    let mut rcv = TcpReceiver::new(id, f.receiver.clone());
    let mut mix = MixState {
        rng: Rng::from_seed(seed.wrapping_add(0x5eed)),
        owed: None,
        last: None,
    };
    let ms = |x: f64| SimDuration::try_from_millis_f64(x).expect("validated by from_json");
    let rate = |r: Option<f64>| r.map(|m| BitRate::from_bps((m * 1e6) as u64));
    let limit = QueueLimit {
        packets: cfg.internet.buffer_packets,
        bytes: cfg.internet.buffer_bytes,
    };
    let delay = ms(cfg.internet.delay_ms);
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
        &[SimDuration::ZERO],
    );
    let mut drops = Drops::default();
    let access =
        AccessNet::build(&cfg, TraceTexts::default(), &streams).unwrap_or_else(|e| fail(format!("RESOLVED.json: {e}")));
    let mut hops: [Box<dyn Driven>; 2] = [
        Box::new(Standalone::new(inet, SimTime::ZERO, &mut drops)),
        match access {
            AccessNet::Wired(w) => Box::new(Standalone::new(w, SimTime::ZERO, &mut drops)),
            AccessNet::Trace(t) => Box::new(Standalone::new(*t, SimTime::ZERO, &mut drops)),
            AccessNet::Cellular(_) => unreachable!("refused above"),
        },
    ];
    let mut wake: [Option<SimTime>; 2] = [None, None];
    let end = SimTime::ZERO + SimDuration::try_from_secs_f64(cfg.duration_s).expect("validated by from_json");
    let steady = SimTime::ZERO + SimDuration::from_secs(5);

    let mut q: EventQueue<Ev> = EventQueue::new();
    let mut out = SenderOutput::default();
    let mut held: VecDeque<(SimTime, Packet)> = VecDeque::new();
    let mut held_data: VecDeque<(SimTime, Packet)> = VecDeque::new();
    let mut jitter_rng = Rng::from_seed(seed ^ 0x6a17);
    let mut last_release = SimTime::ZERO;
    let (mut snd_timer, mut rcv_timer): (Option<SimTime>, Option<SimTime>) = (None, None);
    let mut rtts: Vec<f64> = Vec::new();
    let (mut cwnds, mut inflights): (Vec<f64>, Vec<f64>) = (Vec::new(), Vec::new());
    let mut gain1_bw: Vec<f64> = Vec::new();
    let mut retx = 0u64;
    let mut delivered_at_steady = 0u64;
    // Packets on their way, depth first: (the hop that let it out, it).
    let mut stack: Vec<(Hop, Released)> = Vec::new();
    let mut rel: Vec<Released> = Vec::new();
    // Per second: (RTT sum, samples, retransmissions, drops at its start).
    let mut sec = (0.0f64, 0u64, 0u64, 0u64);
    let mut sec_end = SimTime::ZERO + SimDuration::from_secs(1);

    snd.app_write(SimTime::ZERO, u64::MAX, &mut out);
    q.schedule(SimTime::ZERO, Ev::Grid);

    // What the sender let out enters the Internet path.
    macro_rules! after_sender {
        ($now:expr) => {{
            let now: SimTime = $now;
            for p in out.packets.drain(..) {
                if let (Some(w), PacketKind::Data(d)) = (dump.as_mut(), &p.kind) {
                    writeln!(w, "S {} {} {}", now.as_nanos(), d.seq, d.seq + d.len as u64).expect("--dump: write");
                }
                if jitter_ns == 0 {
                    hops[Hop::Internet as usize].push(now, Dir::Down, p, &mut drops, &mut rel);
                    stack.extend(rel.drain(..).rev().map(|r| (Hop::Internet, r)));
                } else {
                    let at = now + SimDuration::from_nanos(jitter_rng.below(jitter_ns + 1));
                    let at = held_data.back().map_or(at, |b| at.max(b.0));
                    if held_data.is_empty() {
                        q.schedule(at, Ev::DataRelease);
                    }
                    held_data.push_back((at, p));
                }
            }
            sec.0 += out.rtt_samples.iter().map(|r| r.as_millis_f64()).sum::<f64>();
            sec.1 += out.rtt_samples.len() as u64;
            sec.2 += out.retransmits.len() as u64;
            if now >= steady {
                rtts.extend(out.rtt_samples.iter().map(|r| r.as_millis_f64()));
                retx += out.retransmits.len() as u64;
            }
            out.rtt_samples.clear();
            out.retransmits.clear();
            if let Some(t) = snd.next_timer() {
                if snd_timer.is_none_or(|s| t < s) {
                    snd_timer = Some(t);
                    q.schedule(t, Ev::SenderTimer);
                }
            }
        }};
    }
    macro_rules! arm_receiver {
        () => {{
            if let Some(t) = rcv.next_timer() {
                if rcv_timer.is_none_or(|s| t < s) {
                    rcv_timer = Some(t);
                    q.schedule(t, Ev::ReceiverTimer);
                }
            }
        }};
    }
    macro_rules! ack_to_sender {
        ($now:expr, $ack:expr) => {{
            let now: SimTime = $now;
            let ack: Packet = $ack;
            let lateness = noise.lateness(now);
            if lateness == SimDuration::ZERO && held.is_empty() {
                if let PacketKind::Ack(a) = &ack.kind {
                    dump_ack(&mut dump, now, a);
                    out.clear();
                    snd.on_ack(now, a, &mut out);
                    after_sender!(now);
                }
            } else {
                let at = (now + lateness).max(last_release);
                last_release = at;
                if held.is_empty() {
                    q.schedule(at, Ev::AckRelease);
                }
                held.push_back((at, ack));
            }
        }};
    }
    // `receiver.ack_on_read`: the receiver's read is owed once this
    // instant's packets are all in (World schedules it as an event at the
    // same instant).
    let mut read_owed = false;
    // Carries every packet on its way to its next stop, depth first.
    macro_rules! route {
        ($now:expr) => {{
            let now: SimTime = $now;
            loop {
                while let Some((from, r)) = stack.pop() {
                    match (from, r.dir) {
                        (Hop::Internet, Dir::Down) => {
                            hops[Hop::Access as usize].push(now, Dir::Down, r.pkt, &mut drops, &mut rel);
                            stack.extend(rel.drain(..).rev().map(|r| (Hop::Access, r)));
                        }
                        (Hop::Access, Dir::Up) => {
                            hops[Hop::Internet as usize].push(now, Dir::Up, r.pkt, &mut drops, &mut rel);
                            stack.extend(rel.drain(..).rev().map(|r| (Hop::Internet, r)));
                        }
                        (Hop::Access, Dir::Down) => {
                            if let PacketKind::Data(d) = &r.pkt.kind {
                                let got = rcv.on_data(now, d);
                                read_owed |= got.read_owed;
                                for ack in mix_acks(ack_mix, &mut mix, d, got.ack) {
                                    hops[Hop::Access as usize].push(now, Dir::Up, ack, &mut drops, &mut rel);
                                    stack.extend(rel.drain(..).rev().map(|r| (Hop::Access, r)));
                                }
                                arm_receiver!();
                            }
                        }
                        (Hop::Internet, Dir::Up) => ack_to_sender!(now, r.pkt),
                    }
                }
                if std::mem::take(&mut read_owed) {
                    if let Some(ack) = rcv.on_read(now) {
                        hops[Hop::Access as usize].push(now, Dir::Up, ack, &mut drops, &mut rel);
                        stack.extend(rel.drain(..).rev().map(|r| (Hop::Access, r)));
                    }
                    arm_receiver!();
                    continue;
                }
                break;
            }
            for h in [Hop::Internet, Hop::Access] {
                if let Some(t) = hops[h as usize].next_wakeup() {
                    if wake[h as usize].is_none_or(|s| t < s) {
                        wake[h as usize] = Some(t);
                        q.schedule(t, Ev::Wake(h));
                    }
                }
            }
        }};
    }
    after_sender!(SimTime::ZERO);
    route!(SimTime::ZERO);

    while let Some((now, ev)) = q.pop_until(end) {
        while per_second && now >= sec_end {
            println!(
                "t {:5.1} s: RTT mean {:6.2} ms, retx {:4}, drops {:4}, mode {:10} in flight {:4} pacing {:.3} Mbit/s",
                sec_end.as_secs_f64(),
                sec.0 / sec.1.max(1) as f64,
                sec.2,
                drops.0 - sec.3,
                snd.cc().mode(),
                snd.in_flight(),
                snd.pacing_rate().map_or(0.0, |r| r.bps() as f64 / 1e6)
            );
            sec = (0.0, 0, 0, drops.0);
            sec_end += SimDuration::from_secs(1);
        }
        match ev {
            Ev::SenderTimer => {
                if snd_timer.is_some_and(|t| t <= now) {
                    snd_timer = None;
                }
                if snd.next_timer().is_some_and(|t| t <= now) {
                    out.clear();
                    snd.on_timer(now, &mut out);
                }
                after_sender!(now);
            }
            Ev::ReceiverTimer => {
                if rcv_timer.is_some_and(|t| t <= now) {
                    rcv_timer = None;
                }
                if let Some(ack) = rcv.on_timer(now) {
                    hops[Hop::Access as usize].push(now, Dir::Up, ack, &mut drops, &mut rel);
                    stack.extend(rel.drain(..).rev().map(|r| (Hop::Access, r)));
                }
                arm_receiver!();
            }
            Ev::Wake(h) => {
                if wake[h as usize].is_some_and(|t| t <= now) {
                    wake[h as usize] = None;
                }
                hops[h as usize].advance(now, &mut drops, &mut rel);
                stack.extend(rel.drain(..).rev().map(|r| (h, r)));
            }
            Ev::DataRelease => {
                while held_data.front().is_some_and(|(t, _)| *t <= now) {
                    let (_, p) = held_data.pop_front().expect("front");
                    hops[Hop::Internet as usize].push(now, Dir::Down, p, &mut drops, &mut rel);
                    stack.extend(rel.drain(..).rev().map(|r| (Hop::Internet, r)));
                }
                if let Some((t, _)) = held_data.front() {
                    q.schedule(*t, Ev::DataRelease);
                }
            }
            Ev::AckRelease => {
                while held.front().is_some_and(|(t, _)| *t <= now) {
                    let (_, p) = held.pop_front().expect("front");
                    if let PacketKind::Ack(a) = &p.kind {
                        dump_ack(&mut dump, now, a);
                        out.clear();
                        snd.on_ack(now, a, &mut out);
                        after_sender!(now);
                    }
                }
                if let Some((t, _)) = held.front() {
                    q.schedule(*t, Ev::AckRelease);
                }
            }
            Ev::Grid => {
                if now >= steady {
                    cwnds.push(snd.cwnd() as f64);
                    inflights.push(snd.in_flight() as f64);
                    if now == steady {
                        delivered_at_steady = rcv.delivered_total();
                    }
                }
                q.schedule(now + SimDuration::from_millis(100), Ev::Grid);
            }
        }
        route!(now);
        // BBR's pacing rate over its gain-1 phases (rate / 0.99 / gain 1).
        if now >= steady && snd.cc().mode() == "probe_bw" {
            if let Some(r) = snd.pacing_rate() {
                gain1_bw.push(r.bps() as f64 / 0.99 / 1e6);
            }
        }
    }
    if let Some(w) = dump.as_mut() {
        w.flush().expect("--dump: write");
    }
    let goodput =
        (rcv.delivered_total() - delivered_at_steady) as f64 * 8.0 / end.saturating_since(steady).as_secs_f64() / 1e6;
    let n = rtts.len();
    let mean_rtt = rtts.iter().sum::<f64>() / n.max(1) as f64;
    let p95 = pct(&mut rtts, 0.95);
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    // Gain-1 pacing is the most frequent (6 of 8 phases): its median.
    let bw = pct(&mut gain1_bw, 0.5);
    println!(
        "goodput {goodput:.3} Mbit/s, RTT mean {mean_rtt:.2} p95 {p95:.2} ms ({n} samples), cwnd mean {:.1}, \
         in flight mean {:.1}, retransmissions {retx} (5 s..end), drops {}, BBR gain-1 bw {bw:.3} Mbit/s",
        mean(&cwnds),
        mean(&inflights),
        drops.0
    );
}
