//! An experiment, not a model: one flow over the `wired` topology (xrc's
//! own sender, receiver and links, wired as `scenario::World` wires them)
//! with an optional **ACK lateness** added between the receiver and the
//! reverse link, to test whether the timing noise the real-time emulator
//! and its host add to a real run explains what Linux BBR does there
//! (`docs/validation.md`, "BBR through the emulator").
//!
//! ```text
//! cargo run --release -p xrc-core --example wired_ack_noise -- RESOLVED.json [NOISE.txt [series|shuffle|none] [SEED]]
//! ```
//!
//! `RESOLVED.json`: a resolved `wired` scenario with one bulk flow (as
//! `xrc validate --print` writes it). `NOISE.txt`: lines `t_s lateness_us`,
//! as `scripts/bbr_rate_analysis.py --export-noise` writes them from a real
//! run: for each ACK of that run, its time after the first data segment
//! and how much later it reached the sender than a perfectly timed
//! emulator and receiver would have delivered it (the emulator's release
//! error on the data and on the ACK plus the receiving host's delay).
//!
//! - `series`: an ACK the receiver sends at time `t` is held for the
//!   lateness of the real ACK nearest before `t` (the real run's noise
//!   replayed at the same times, bursts and stalls included);
//!   With `SEED` = k > 1 the series is rotated by k − 1 seconds (wrapping
//!   around), to see the same noise meet BBR's gain cycle at other phases;
//! - `shuffle`: the lateness is drawn uniformly from the real run's values
//!   (same distribution, no time structure), with `SEED`;
//! - `none` (or no file): no lateness; the result must equal `xrc run`'s.
//!
//! ACKs stay in order (an ACK never overtakes an earlier one). Prints
//! mean and p95 RTT, mean cwnd and in-flight (100 ms grid), retransmissions
//! and goodput over 5 s .. end, and the bandwidth BBR paces at in its
//! gain-1 phases.

use std::collections::VecDeque;

use xrc_core::engine::{EventQueue, Rng, RngStreams};
use xrc_core::net::{Enqueued, FlowId, Link, LinkConfig, Packet, PacketKind, QueueLimit};
use xrc_core::transport::cc::registry;
use xrc_core::transport::{SenderOutput, TcpReceiver, TcpSender};
use xrc_core::units::{BitRate, SimDuration, SimTime};

#[derive(Copy, Clone, Debug)]
enum Ev {
    SenderTimer,
    ReceiverTimer,
    FwdTxDone,
    FwdArrive,
    AckRelease,
    RevTxDone,
    RevArrive,
    Grid,
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
    eprintln!("wired_ack_noise: {msg}");
    eprintln!("usage: wired_ack_noise RESOLVED.json [NOISE.txt [series|shuffle|none] [SEED]]");
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

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(scenario) = args.get(1) else {
        fail("RESOLVED.json: missing".into())
    };
    let text = std::fs::read_to_string(scenario).unwrap_or_else(|e| fail(format!("RESOLVED.json {scenario:?}: {e}")));
    let cfg = xrc_core::scenario::from_json(&text).unwrap_or_else(|e| fail(format!("RESOLVED.json {scenario:?}: {e}")));
    if cfg.flows.len() != 1 {
        fail(format!("RESOLVED.json: one flow expected, got {}", cfg.flows.len()));
    }
    let f = &cfg.flows[0];
    if cfg.topology != xrc_core::scenario::config::Topology::Wired || f.extra_rtt_ms != 0.0 || f.start_s != 0.0 {
        fail("RESOLVED.json: a `wired` scenario whose flow starts at 0 s without extra RTT expected".into());
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

    // The flow and the links, as World::new builds them for `wired`.
    let streams = RngStreams::new(cfg.seed);
    let stream = streams.stream("flow/0/cc").next_u64();
    let cc = registry::build_seeded(&f.cc, &f.cc_params, stream)
        .unwrap_or_else(|e| fail(format!("RESOLVED.json flows.0.cc {:?}: {e}", f.cc)));
    let mut tcp = f.tcp.clone();
    tcp.rwnd_bytes = Some(tcp.rwnd_bytes.unwrap_or(xrc_core::transport::MAX_WINDOW_BYTES));
    let id = FlowId(0);
    let mut snd = TcpSender::new(id, tcp, cc);
    let mut rcv = TcpReceiver::new(id, f.receiver.clone());
    let ms = |x: f64| SimDuration::try_from_millis_f64(x).expect("validated by from_json");
    let rate = |r: Option<f64>| r.map(|m| BitRate::from_bps((m * 1e6) as u64));
    let limit = QueueLimit {
        packets: cfg.internet.buffer_packets,
        bytes: cfg.internet.buffer_bytes,
    };
    let delay = ms(cfg.internet.delay_ms);
    let mut fwd = Link::new(&LinkConfig {
        rate: rate(cfg.internet.rate_mbps),
        delay,
        limit,
    });
    let mut rev = Link::new(&LinkConfig {
        rate: rate(cfg.internet.reverse_rate_mbps),
        delay,
        limit,
    });
    let end = SimTime::ZERO + SimDuration::try_from_secs_f64(cfg.duration_s).expect("validated by from_json");
    let steady = SimTime::ZERO + SimDuration::from_secs(5);

    let mut q: EventQueue<Ev> = EventQueue::new();
    let mut out = SenderOutput::default();
    let mut held: VecDeque<(SimTime, Packet)> = VecDeque::new();
    let mut last_release = SimTime::ZERO;
    let (mut snd_timer, mut rcv_timer): (Option<SimTime>, Option<SimTime>) = (None, None);
    let mut rtts: Vec<f64> = Vec::new();
    let (mut cwnds, mut inflights): (Vec<f64>, Vec<f64>) = (Vec::new(), Vec::new());
    let mut gain1_bw: Vec<f64> = Vec::new();
    let mut retx = 0u64;
    let mut delivered_at_steady = 0u64;
    let mut drops = 0u64;

    snd.app_write(SimTime::ZERO, u64::MAX, &mut out);
    q.schedule(SimTime::ZERO, Ev::Grid);
    macro_rules! after_sender {
        ($now:expr) => {{
            let now: SimTime = $now;
            for p in out.packets.drain(..) {
                match fwd.enqueue(now, p) {
                    Enqueued::Dropped(_) => drops += 1,
                    Enqueued::Queued | Enqueued::InPipe(None) => {}
                    Enqueued::TxStarted(t) => q.schedule(t, Ev::FwdTxDone),
                    Enqueued::InPipe(Some(t)) => q.schedule(t, Ev::FwdArrive),
                }
            }
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
    macro_rules! send_ack {
        ($now:expr, $ack:expr) => {{
            let now: SimTime = $now;
            let at = (now + noise.lateness(now)).max(last_release);
            last_release = at;
            if held.is_empty() {
                q.schedule(at, Ev::AckRelease);
            }
            held.push_back((at, $ack));
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
    after_sender!(SimTime::ZERO);

    while let Some((now, ev)) = q.pop_until(end) {
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
                    send_ack!(now, ack);
                }
                arm_receiver!();
            }
            Ev::FwdTxDone => {
                let d = fwd.tx_done(now);
                if let Some(t) = d.arrival {
                    q.schedule(t, Ev::FwdArrive);
                }
                if let Some(t) = d.next_tx_done {
                    q.schedule(t, Ev::FwdTxDone);
                }
            }
            Ev::FwdArrive => {
                while let Some(p) = fwd.pop_arrived(now) {
                    if let PacketKind::Data(d) = &p.kind {
                        let r = rcv.on_data(now, d);
                        if let Some(ack) = r.ack {
                            send_ack!(now, ack);
                        }
                        arm_receiver!();
                    }
                }
                if let Some(t) = fwd.next_arrival() {
                    q.schedule(t, Ev::FwdArrive);
                }
            }
            Ev::AckRelease => {
                while held.front().is_some_and(|(t, _)| *t <= now) {
                    let (_, p) = held.pop_front().expect("front");
                    match rev.enqueue(now, p) {
                        Enqueued::Dropped(_) => {}
                        Enqueued::Queued | Enqueued::InPipe(None) => {}
                        Enqueued::TxStarted(t) => q.schedule(t, Ev::RevTxDone),
                        Enqueued::InPipe(Some(t)) => q.schedule(t, Ev::RevArrive),
                    }
                }
                if let Some((t, _)) = held.front() {
                    q.schedule(*t, Ev::AckRelease);
                }
            }
            Ev::RevTxDone => {
                let d = rev.tx_done(now);
                if let Some(t) = d.arrival {
                    q.schedule(t, Ev::RevArrive);
                }
                if let Some(t) = d.next_tx_done {
                    q.schedule(t, Ev::RevTxDone);
                }
            }
            Ev::RevArrive => {
                while let Some(p) = rev.pop_arrived(now) {
                    if let PacketKind::Ack(a) = &p.kind {
                        out.clear();
                        snd.on_ack(now, a, &mut out);
                        after_sender!(now);
                    }
                }
                if let Some(t) = rev.next_arrival() {
                    q.schedule(t, Ev::RevArrive);
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
        // BBR's pacing rate over its gain-1 phases (rate / 0.99 / gain 1).
        if now >= steady && snd.cc().mode() == "probe_bw" {
            if let Some(r) = snd.pacing_rate() {
                gain1_bw.push(r.bps() as f64 / 0.99 / 1e6);
            }
        }
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
         in flight mean {:.1}, retransmissions {retx} (5 s..end), drops {drops}, BBR gain-1 bw {bw:.3} Mbit/s",
        mean(&cwnds),
        mean(&inflights)
    );
}
