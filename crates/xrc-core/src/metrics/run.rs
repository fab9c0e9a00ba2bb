//! The run's recorder: it observes the network's components (as an
//! [`Observer`]) and the hosts (the router tells it what their flows do),
//! and writes the tables of [`Recorder`]. The accumulators behind the
//! per-bin and per-UE summaries (capacity and delivered bits while a UE's
//! flows are alive, bytes per bin) live here, not in the components.

use super::Recorder;
use crate::net::{DropSite, FlowId, Observer, Packet, PacketKind, UeColumns, UeLinkCounters, UeSample, XrcOption};
use crate::transport::cc::CaState;
use crate::transport::{SenderOutput, TcpSender};
use crate::units::{extend_u64_as_f64_scaled, SimDuration, SimTime};

/// From this many UEs an instant's samples are recorded column by column
/// ([`Observer::ue_columns`]), below it row by row: the same values.
const COLUMNS_FROM_UES: usize = 8;

/// What to record, from the scenario's `output` section.
#[derive(Clone, Debug)]
pub struct RecordOptions {
    /// Width of the throughput bins.
    pub bin: SimDuration,
    /// Record the per-UE queue series every this many sampling instants.
    pub rlc_sample_ttis: u32,
    pub cwnd_trace: bool,
    pub rtt_trace: bool,
    pub queue_delay_trace: bool,
}

/// Per-UE accumulators for the summary and the rate series, of events.
#[derive(Clone, Debug, Default)]
struct UeAcc {
    live_flows: u32,
    delivered_bits_active: f64,
    bin_delivered_bits: f64,
    /// Over the whole run, active or not.
    delivered_bits: f64,
    rlc_drops: u64,
}

/// The per-UE sums of the values sampled at every instant (a UE's ground
/// truth and its agent's rate), one column per field (`x[u]` UE u's). A
/// UE's values hold from one instant to the next until they change (in a
/// loaded cell, a UE's window moves when it is served; its ground truth
/// when a flow starts or ends), so each is added once per run of equal
/// values, as value × instants, when it changes, when the UE's live flows
/// change, at the end of a bin and at the end: an instant costs the UEs
/// whose values changed, not every UE. The agent's rates are integers and
/// their sums exact; the ground truth's sum of a run is one product, not
/// as many additions (a different rounding than adding it instant by
/// instant, within a few units in the last place).
#[derive(Clone, Debug, Default)]
struct InstantAcc {
    /// 1 while the UE has a live flow (the `active` column of the samples).
    live: Vec<u8>,
    /// The UE's values since instant `since`, not yet added.
    available_bits: Vec<f64>,
    agent_bps: Vec<u64>,
    since: Vec<u64>,
    /// The instants' lengths summed up to `since` (the active time's sum).
    since_ns: Vec<u64>,
    available_bits_active: Vec<f64>,
    active_ns: Vec<u64>,
    bin_available_bits: Vec<f64>,
    bin_agent_sum: Vec<u128>,
}

impl InstantAcc {
    fn new(ues: usize) -> Self {
        InstantAcc {
            live: vec![0; ues],
            available_bits: vec![0.0; ues],
            agent_bps: vec![0; ues],
            since: vec![0; ues],
            since_ns: vec![0; ues],
            available_bits_active: vec![0.0; ues],
            active_ns: vec![0; ues],
            bin_available_bits: vec![0.0; ues],
            bin_agent_sum: vec![0; ues],
        }
    }

    /// Adds UE `u`'s values of the instants from `since` to `upto`
    /// (exclusive; `upto_ns` the instants' lengths summed to it), with its
    /// live flows as they are, and starts a new run there.
    #[inline]
    fn flush(&mut self, u: usize, upto: u64, upto_ns: u64) {
        let k = upto - self.since[u];
        if k > 0 {
            let v = self.available_bits[u];
            let sum = v * k as f64;
            self.bin_available_bits[u] += sum;
            self.bin_agent_sum[u] += self.agent_bps[u] as u128 * k as u128;
            if self.live[u] != 0 {
                self.available_bits_active[u] += sum;
                self.active_ns[u] += upto_ns - self.since_ns[u];
            }
        }
        self.since[u] = upto;
        self.since_ns[u] = upto_ns;
    }

    /// UE `u`'s values at instant `at` (`at_ns` the lengths of the instants
    /// before it): a new run when they differ from the last.
    #[inline]
    fn sample(&mut self, u: usize, at: u64, at_ns: u64, available_bits: f64, agent_bps: u64) {
        if available_bits.to_bits() != self.available_bits[u].to_bits() || agent_bps != self.agent_bps[u] {
            self.flush(u, at, at_ns);
            self.available_bits[u] = available_bits;
            self.agent_bps[u] = agent_bps;
        }
    }
}

#[derive(Clone, Debug, Default)]
struct FlowAcc {
    started: bool,
    bin_bytes: u64,
    last_cwnd: Option<(u32, u32, CaState, &'static str)>,
}

/// One flow at the end of a run.
pub struct FlowEnd<'a> {
    pub ue: Option<usize>,
    pub start: SimTime,
    pub end: SimTime,
    pub sender: &'a TcpSender,
    pub delivered_bytes: u64,
    pub completed: bool,
    pub completed_at: Option<SimTime>,
    pub video: Option<&'a crate::traffic::VideoSource>,
}

pub struct RunRecorder {
    tables: Recorder,
    opts: RecordOptions,
    ues: Vec<UeAcc>,
    inst: InstantAcc,
    flows: Vec<FlowAcc>,
    /// Sampling instants so far, and whether the current one is sampled.
    instants: u64,
    sample: bool,
    /// The sampling instants' lengths summed (the current one's included).
    instants_ns: u64,
    instant_len: SimDuration,
    bin_index: u64,
    /// The first sampling instant of the current bin.
    bin_first_instant: u64,
}

impl RunRecorder {
    pub fn new(opts: RecordOptions, ues: usize, flows: usize) -> Self {
        RunRecorder {
            tables: Recorder::default(),
            opts,
            ues: vec![UeAcc::default(); ues],
            inst: InstantAcc::new(ues),
            flows: vec![FlowAcc::default(); flows],
            instants: 0,
            sample: false,
            instants_ns: 0,
            instant_len: SimDuration::ZERO,
            bin_index: 0,
            bin_first_instant: 0,
        }
    }

    pub fn tables(&self) -> &Recorder {
        &self.tables
    }
    /// The tables, for a caller that takes their rows as the run goes
    /// ([`Recorder::clear_rows`]).
    pub fn tables_mut(&mut self) -> &mut Recorder {
        &mut self.tables
    }
    pub fn into_tables(self) -> Recorder {
        self.tables
    }

    /// The index of the sampling instant under way and the lengths of the
    /// instants before it summed: samples come after their instant's
    /// [`Observer::instant`] (the cell's and the trace's access components
    /// call it first).
    fn current_instant(&self) -> (u64, u64) {
        assert!(self.instants > 0, "a UE sample before its instant");
        (self.instants - 1, self.instants_ns - self.instant_len.as_nanos())
    }

    // ----- the hosts -----

    /// Flow `f` of `ue` started.
    pub fn flow_started(&mut self, f: usize, ue: Option<usize>) {
        self.flows[f].started = true;
        if let Some(u) = ue {
            self.ues[u].live_flows += 1;
            self.inst.flush(u, self.instants, self.instants_ns);
            self.inst.live[u] = 1;
        }
    }

    /// Flow `f` of `ue` ended.
    pub fn flow_ended(&mut self, _f: usize, ue: Option<usize>) {
        if let Some(u) = ue {
            self.ues[u].live_flows -= 1;
            self.inst.flush(u, self.instants, self.instants_ns);
            self.inst.live[u] = (self.ues[u].live_flows > 0) as u8;
        }
    }

    /// A packet of `bits` reached UE `ue` over its access network.
    pub fn ue_delivered(&mut self, ue: usize, bits: f64) {
        let acc = &mut self.ues[ue];
        acc.bin_delivered_bits += bits;
        acc.delivered_bits += bits;
        if acc.live_flows > 0 {
            acc.delivered_bits_active += bits;
        }
    }

    /// Flow `f`'s receiver delivered `bytes` in order to its application.
    pub fn app_delivered(&mut self, f: usize, bytes: u64) {
        self.flows[f].bin_bytes += bytes;
    }

    /// An ACK carrying the XRC option reached flow `f`'s sender.
    pub fn feedback(&mut self, now: SimTime, f: usize, x: &XrcOption) {
        let fb = &mut self.tables.feedback;
        fb.t.push(now.as_secs_f64());
        fb.flow.push(f as u32);
        fb.rate_mbps.push(x.rate_bps as f64 * 1e-6);
        fb.hol_ms.push(x.hol.as_millis_f64());
    }

    /// What flow `f`'s sender did in one call: its RTT samples and
    /// retransmissions (taken out of `out`), and its window when it changed.
    pub fn sender(&mut self, now: SimTime, f: usize, out: &mut SenderOutput, sender: &TcpSender) {
        let t = now.as_secs_f64();
        if self.opts.rtt_trace {
            for r in out.rtt_samples.drain(..) {
                self.tables.rtt.t.push(t);
                self.tables.rtt.flow.push(f as u32);
                self.tables.rtt.rtt_ms.push(r.as_millis_f64());
            }
        }
        for (seq, kind) in out.retransmits.drain(..) {
            let r = &mut self.tables.retransmits;
            r.t.push(t);
            r.flow.push(f as u32);
            r.seq.push(seq);
            r.kind.push(super::codes::retransmit_kind(kind));
        }
        let state = (sender.cwnd(), sender.ssthresh(), sender.ca_state(), sender.cc().mode());
        let fl = &mut self.flows[f];
        if self.opts.cwnd_trace && fl.last_cwnd != Some(state) {
            fl.last_cwnd = Some(state);
            let mode = self.tables.mode_code(state.3);
            let c = &mut self.tables.cwnd;
            c.mode.push(mode);
            c.target.push(sender.cc().target_window().unwrap_or(f64::NAN));
            c.qdelay_ms
                .push(sender.cc().queuing_delay().map_or(f64::NAN, |d| d.as_millis_f64()));
            c.t.push(t);
            c.flow.push(f as u32);
            c.cwnd.push(state.0);
            c.ssthresh.push(state.1);
            c.in_flight.push(sender.in_flight());
            c.srtt_ms.push(sender.srtt().map_or(f64::NAN, |d| d.as_millis_f64()));
            c.pacing_mbps.push(sender.pacing_rate().map_or(f64::NAN, |r| r.mbps()));
            c.ca_state.push(super::codes::ca_state(state.2));
        }
    }

    // ----- bins and the end -----

    /// Closes the bin that ends at `now`.
    pub fn close_bin(&mut self, now: SimTime) {
        let start = SimTime::ZERO + self.opts.bin * self.bin_index;
        if now <= start {
            return;
        }
        let width = now.saturating_since(start);
        let t = start.as_secs_f64();
        for (k, fl) in self.flows.iter_mut().enumerate() {
            if !fl.started && fl.bin_bytes == 0 {
                continue;
            }
            let r = &mut self.tables.flow_tput;
            r.t.push(t);
            r.flow.push(k as u32);
            r.bytes.push(fl.bin_bytes);
            r.goodput_mbps
                .push(fl.bin_bytes as f64 * 8.0 / width.as_secs_f64() * 1e-6);
            fl.bin_bytes = 0;
        }
        let inst = &mut self.inst;
        let samples = self.instants - self.bin_first_instant;
        self.bin_first_instant = self.instants;
        for (u, acc) in self.ues.iter_mut().enumerate() {
            inst.flush(u, self.instants, self.instants_ns);
            let r = &mut self.tables.ue_rate;
            r.t.push(t);
            r.ue.push(u as u32);
            r.available_mbps
                .push(inst.bin_available_bits[u] / width.as_secs_f64() * 1e-6);
            r.delivered_mbps
                .push(acc.bin_delivered_bits / width.as_secs_f64() * 1e-6);
            r.agent_mbps.push(if samples > 0 {
                inst.bin_agent_sum[u] as f64 / samples as f64 * 1e-6
            } else {
                0.0
            });
            inst.bin_available_bits[u] = 0.0;
            acc.bin_delivered_bits = 0.0;
            inst.bin_agent_sum[u] = 0;
        }
        self.bin_index += 1;
    }

    /// Writes the per-flow summary row of flow `k` (in flow order).
    pub fn flow_end(&mut self, k: usize, e: &FlowEnd<'_>) {
        let s = e.sender.stats();
        let r = &mut self.tables.flows;
        r.flow.push(k as u32);
        r.ue.push(e.ue.map_or(u32::MAX, |u| u as u32));
        r.start_s.push(e.start.as_secs_f64());
        r.end_s.push(e.end.as_secs_f64());
        r.bytes_delivered.push(e.delivered_bytes);
        r.segments_sent.push(s.segments_sent);
        r.retransmits.push(s.retransmits());
        r.timeouts.push(s.timeouts);
        r.loss_undos.push(s.loss_undos);
        r.recovery_undos.push(s.undos() - s.loss_undos);
        r.spurious_rtos.push(s.spurious_rtos);
        r.probes.push(s.probes);
        r.completed.push(e.completed as u8);
        r.fct_s.push(
            e.completed_at
                .map_or(f64::NAN, |t| t.saturating_since(e.start).as_secs_f64()),
        );
        if let Some(v) = e.video {
            for c in v.chunks() {
                let ch = &mut self.tables.chunks;
                ch.flow.push(k as u32);
                ch.chunk.push(c.index);
                ch.start_s.push(c.start.as_secs_f64());
                ch.written_s.push(c.written.map_or(f64::NAN, |t| t.as_secs_f64()));
                ch.delivered_s.push(c.delivered.map_or(f64::NAN, |t| t.as_secs_f64()));
                ch.delivery_time_s.push(
                    c.delivered
                        .map_or(f64::NAN, |t| t.saturating_since(c.start).as_secs_f64()),
                );
            }
        }
    }

    /// Writes the per-UE summary row of UE `u` (in UE order).
    pub fn ue_end(&mut self, u: usize, link: &UeLinkCounters) {
        self.inst.flush(u, self.instants, self.instants_ns);
        let acc = &self.ues[u];
        let r = &mut self.tables.ues;
        r.ue.push(u as u32);
        r.available_bits_active.push(self.inst.available_bits_active[u]);
        r.delivered_bits_active.push(acc.delivered_bits_active);
        r.delivered_bits.push(acc.delivered_bits);
        r.active_s.push(self.inst.active_ns[u] as f64 * 1e-9);
        r.carried_bits.push(link.carried_bits);
        r.tbs_new.push(link.tbs_new);
        r.tbs_retx.push(link.tbs_retx);
        r.tbs_lost.push(link.tbs_lost);
        r.rlc_drops.push(acc.rlc_drops);
    }
}

impl Observer for RunRecorder {
    fn dropped(&mut self, now: SimTime, site: DropSite, ue: Option<usize>, pkt: &Packet) {
        if let Some(u) = ue {
            self.ues[u].rlc_drops += 1;
        }
        let seq = match &pkt.kind {
            PacketKind::Data(d) => d.seq,
            PacketKind::Ack(a) => a.ack,
        };
        self.tables.drop(now, site, pkt.flow.0, seq);
    }

    fn lost(&mut self, now: SimTime, site: DropSite, count: u64) {
        // Their identity is gone with the transport block.
        for _ in 0..count {
            self.tables.drop(now, site, u32::MAX, 0);
        }
    }

    fn sojourn(&mut self, now: SimTime, ue: usize, flow: FlowId, delay: SimDuration) {
        if self.opts.queue_delay_trace {
            let q = &mut self.tables.queue_delay;
            q.t.push(now.as_secs_f64());
            q.ue.push(ue as u32);
            q.flow.push(flow.0);
            q.delay_ms.push(delay.as_millis_f64());
        }
    }

    fn instant(&mut self, _now: SimTime, len: SimDuration) {
        self.sample = self.instants.is_multiple_of(self.opts.rlc_sample_ttis as u64);
        self.instants += 1;
        self.instants_ns += len.as_nanos();
        self.instant_len = len;
    }

    /// The same rows and sums as [`Observer::ue_sample`] for each UE in
    /// order, column by column: only the UEs `cols.changed` lists are
    /// compared with their last values (every UE where it lists none), and
    /// the sampled columns copied or converted as whole slices.
    fn ue_columns(&mut self, now: SimTime, cols: &UeColumns<'_>) {
        let n = cols.len();
        debug_assert_eq!(n, self.inst.live.len(), "an instant samples every UE");
        if n < COLUMNS_FROM_UES {
            // A few UEs: row by row costs less than a pass per column.
            for ue in 0..n {
                self.ue_sample(now, ue, &cols.get(ue));
            }
            return;
        }
        let (at, at_ns) = self.current_instant();
        let a = &mut self.inst;
        match cols.changed {
            Some(changed) => {
                for &u in changed {
                    let u = u as usize;
                    a.sample(u, at, at_ns, cols.available_bits[u], cols.agent_bps[u]);
                }
            }
            None => {
                for u in 0..n {
                    a.sample(u, at, at_ns, cols.available_bits[u], cols.agent_bps[u]);
                }
            }
        }
        if self.sample {
            let t = now.as_secs_f64();
            let r = &mut self.tables.rlc;
            r.t.extend(std::iter::repeat_n(t, n));
            r.ue.extend(0..n as u32);
            // `as_millis_f64` (the nanoseconds as f64, by 1e-6).
            extend_u64_as_f64_scaled(&mut r.hol_ms, (0..n).map(|i| cols.hol(i).as_nanos()), 1e-6);
            r.sdus.extend_from_slice(cols.sdus);
            r.bytes.extend_from_slice(cols.bytes);
            r.cqi.extend_from_slice(cols.cqi);
            r.available_mbps.extend_from_slice(cols.available_mbps);
            extend_u64_as_f64_scaled(&mut r.agent_mbps, cols.agent_bps.iter().copied(), 1e-6);
            r.active.extend_from_slice(&a.live[..n]);
        }
    }

    fn ue_sample(&mut self, now: SimTime, ue: usize, s: &UeSample) {
        let (at, at_ns) = self.current_instant();
        let a = &mut self.inst;
        let active = a.live[ue] != 0;
        a.sample(ue, at, at_ns, s.available_bits, s.agent_bps);
        if self.sample {
            let r = &mut self.tables.rlc;
            r.t.push(now.as_secs_f64());
            r.ue.push(ue as u32);
            r.hol_ms.push(s.hol.as_millis_f64());
            r.sdus.push(s.sdus);
            r.bytes.push(s.bytes);
            r.cqi.push(s.cqi);
            r.available_mbps.push(s.available_mbps);
            r.agent_mbps.push(s.agent_bps as f64 * 1e-6);
            r.active.push(active as u8);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::Table;

    fn opts(every: u32) -> RecordOptions {
        RecordOptions {
            bin: SimDuration::from_millis(100),
            rlc_sample_ttis: every,
            cwnd_trace: true,
            rtt_trace: true,
            queue_delay_trace: true,
        }
    }

    fn columns_bytes(r: &Recorder) -> Vec<(String, Vec<u8>)> {
        let mut out = Vec::new();
        for t in r.tables() {
            for (name, c) in t.columns() {
                let bytes: Vec<u8> = match c {
                    crate::metrics::Column::F64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
                    crate::metrics::Column::U64(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
                    crate::metrics::Column::U32(v) => v.iter().flat_map(|x| x.to_le_bytes()).collect(),
                    crate::metrics::Column::U8(v) => v.to_vec(),
                };
                out.push((format!("{}.{name}", t.name()), bytes));
            }
        }
        out
    }

    /// `samples` (UE i's the i-th) recorded as one instant's columns.
    fn record_columns(r: &mut RunRecorder, now: SimTime, samples: &[UeSample], changed: Option<&[u32]>) {
        let cqi: Vec<u8> = samples.iter().map(|s| s.cqi).collect();
        // Heads that give each sample's HoL at `now`.
        let head: Vec<SimTime> = samples.iter().map(|s| now - s.hol).collect();
        let sdus: Vec<u32> = samples.iter().map(|s| s.sdus).collect();
        let bytes: Vec<u64> = samples.iter().map(|s| s.bytes).collect();
        let available_bits: Vec<f64> = samples.iter().map(|s| s.available_bits).collect();
        let available_mbps: Vec<f64> = samples.iter().map(|s| s.available_mbps).collect();
        let agent_bps: Vec<u64> = samples.iter().map(|s| s.agent_bps).collect();
        r.ue_columns(
            now,
            &UeColumns {
                now,
                cqi: &cqi,
                head: &head,
                sdus: &sdus,
                bytes: &bytes,
                available_bits: &available_bits,
                available_mbps: &available_mbps,
                agent_bps: &agent_bps,
                changed,
            },
        );
    }

    #[test]
    fn a_ues_sums_over_runs_of_equal_values_are_its_sums_instant_by_instant() {
        // Property: with values that hold for runs of instants, flows that
        // start and end, and bins closed now and then, the recorder's sums
        // (a product per run) are the sums of every instant's values: the
        // agent's and the active time exactly, the ground truth within
        // rounding; and row by row, every column, and every column with
        // only the changed UEs listed record the same bytes.
        let n = COLUMNS_FROM_UES + 4;
        let mut rng = crate::engine::rng::Rng::from_seed(3);
        // Bins of 37 instants of 0.5 ms.
        let o = RecordOptions {
            bin: SimDuration::from_micros(18_500),
            ..opts(4)
        };
        let mut rows = RunRecorder::new(o.clone(), n, n);
        let mut every = RunRecorder::new(o.clone(), n, n);
        let mut listed = RunRecorder::new(o, n, n);
        let mut avail: Vec<f64> = vec![0.0; n];
        let mut agent: Vec<u64> = vec![0; n];
        let mut live = vec![false; n];
        // Instant by instant: (bin's available bits, bin's agent sum) per UE
        // and bin, and the whole run's while live.
        let (mut bin_avail, mut bin_agent) = (vec![0.0f64; n], vec![0u64; n]);
        let (mut want_avail, mut want_agent) = (Vec::new(), Vec::new());
        let (mut active_bits, mut active_ns) = (vec![0.0f64; n], vec![0u64; n]);
        let len = SimDuration::from_micros(500);
        let mut bins = 0u64;
        for k in 0..400u64 {
            let now = SimTime::ZERO + len * (k + 1);
            for (u, alive) in live.iter_mut().enumerate() {
                if rng.below(40) == 0 {
                    let on = !*alive;
                    for r in [&mut rows, &mut every, &mut listed] {
                        if on {
                            r.flow_started(u, Some(u));
                        } else {
                            r.flow_ended(u, Some(u));
                        }
                    }
                    *alive = on;
                }
            }
            let mut changed: Vec<u32> = Vec::new();
            for u in 0..n {
                if rng.below(5) == 0 {
                    avail[u] = rng.below(1 << 20) as f64 * 0.3;
                    agent[u] = rng.below(1 << 30);
                    changed.push(u as u32);
                }
            }
            // Listed without a change, and twice.
            changed.push(0);
            changed.push(0);
            let samples: Vec<UeSample> = (0..n)
                .map(|u| UeSample {
                    cqi: 7,
                    hol: SimDuration::from_micros(u as u64),
                    sdus: 1,
                    bytes: 1500,
                    available_bits: avail[u],
                    available_mbps: avail[u] * 2e-3,
                    agent_bps: agent[u],
                })
                .collect();
            rows.instant(now, len);
            for (u, s) in samples.iter().enumerate() {
                rows.ue_sample(now, u, s);
            }
            for (r, list) in [(&mut every, None), (&mut listed, Some(&changed[..]))] {
                r.instant(now, len);
                record_columns(r, now, &samples, list);
            }
            for u in 0..n {
                bin_avail[u] += avail[u];
                bin_agent[u] += agent[u];
                if live[u] {
                    active_bits[u] += avail[u];
                    active_ns[u] += len.as_nanos();
                }
            }
            if k % 37 == 36 || k == 399 {
                bins += 1;
                for r in [&mut rows, &mut every, &mut listed] {
                    r.close_bin(now);
                }
                want_avail.extend(
                    bin_avail
                        .iter()
                        .map(|b| b / (len * (k + 1 - (bins - 1) * 37)).as_secs_f64() * 1e-6),
                );
                want_agent.extend(bin_agent.iter().copied());
                bin_avail.fill(0.0);
                bin_agent.fill(0);
            }
        }
        for r in [&mut rows, &mut every, &mut listed] {
            for u in 0..n {
                r.ue_end(u, &UeLinkCounters::default());
            }
        }
        assert_eq!(columns_bytes(rows.tables()), columns_bytes(every.tables()));
        assert_eq!(columns_bytes(rows.tables()), columns_bytes(listed.tables()));
        let t = rows.tables();
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b.abs().max(1e-300);
        for (i, (&got, &want)) in t.ue_rate.available_mbps.iter().zip(&want_avail).enumerate() {
            assert!(close(got, want), "row {i}: {got} against {want}");
        }
        let samples_in = |i: usize| {
            if i / n + 1 < bins as usize {
                37.0
            } else {
                (400 - 37 * (bins - 1)) as f64
            }
        };
        for (i, (&got, &want)) in t.ue_rate.agent_mbps.iter().zip(&want_agent).enumerate() {
            assert_eq!(got, want as f64 / samples_in(i) * 1e-6, "row {i}");
        }
        for u in 0..n {
            assert!(close(t.ues.available_bits_active[u], active_bits[u]), "UE {u}");
            assert_eq!(t.ues.active_s[u], active_ns[u] as f64 * 1e-9, "UE {u}");
        }
    }

    #[test]
    fn columns_of_every_ue_at_once_record_what_one_call_per_ue_records() {
        // Enough UEs for the columns (fewer are recorded row by row).
        let n = COLUMNS_FROM_UES as u64 + 3;
        let mut one = RunRecorder::new(opts(3), n as usize, 2);
        let mut all = RunRecorder::new(opts(3), n as usize, 2);
        for r in [&mut one, &mut all] {
            r.flow_started(0, Some(1));
            r.flow_started(1, Some(3));
        }
        let mut samples = Vec::new();
        for tti in 0..10u64 {
            let now = SimTime::from_nanos(1_000_000_000 + tti * 1_000_000);
            samples.clear();
            samples.extend((0..n).map(|u| UeSample {
                cqi: (u + tti) as u8 % 16,
                hol: SimDuration::from_nanos(123_457 * (u + 1) * tti),
                sdus: (u * tti) as u32,
                bytes: u * tti * 1500,
                available_bits: 1000.5 * (u + tti) as f64,
                available_mbps: 1.0005 * (u + tti) as f64,
                agent_bps: 7_000_003 * (u + 1) * tti,
            }));
            if tti == 6 {
                // UE 1's only flow ends: its sums stop while active.
                one.flow_ended(0, Some(1));
                all.flow_ended(0, Some(1));
            }
            one.instant(now, SimDuration::from_millis(1));
            for (u, s) in samples.iter().enumerate() {
                one.ue_sample(now, u, s);
            }
            all.instant(now, SimDuration::from_millis(1));
            record_columns(&mut all, now, &samples, None);
        }
        for r in [&mut one, &mut all] {
            r.close_bin(SimTime::from_nanos(10_000_000));
            for u in 0..n as usize {
                r.ue_end(u, &UeLinkCounters::default());
            }
        }
        assert_eq!(
            one.tables().rlc.rows(),
            4 * n as usize,
            "every third TTI of 10, every UE"
        );
        assert_eq!(columns_bytes(one.tables()), columns_bytes(all.tables()));
    }
}
