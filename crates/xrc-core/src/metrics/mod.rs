//! Time series and counters, kept as columns so they can be handed to
//! Python (and from there to Parquet) without per-row conversion.
//!
//! Every table is a struct of equal-length vectors; [`Table`] lists its
//! columns by name with their data for the bindings. Times are simulated
//! seconds (f64, converted once from integer nanoseconds when recorded).
//!
//! [`run::RunRecorder`] fills the tables: it observes the network's
//! components and is told what the hosts' flows do.

pub mod run;

pub use crate::net::UeLinkCounters;
pub use run::{FlowEnd, RecordOptions, RunRecorder};

use crate::units::SimTime;

/// A column of a table, borrowed for export.
pub enum Column<'a> {
    F64(&'a [f64]),
    U64(&'a [u64]),
    U32(&'a [u32]),
    U8(&'a [u8]),
}

impl Column<'_> {
    pub fn len(&self) -> usize {
        match self {
            Column::F64(v) => v.len(),
            Column::U64(v) => v.len(),
            Column::U32(v) => v.len(),
            Column::U8(v) => v.len(),
        }
    }
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A named set of equal-length columns.
pub trait Table {
    fn name(&self) -> &'static str;
    fn columns(&self) -> Vec<(&'static str, Column<'_>)>;
}

macro_rules! table {
    ($(#[$doc:meta])* $ty:ident, $name:literal, { $($(#[$fdoc:meta])* $field:ident : $kind:ident),* $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Default, Clone)]
        pub struct $ty {
            $($(#[$fdoc])* pub $field: Vec<table!(@ty $kind)>,)*
        }
        impl Table for $ty {
            fn name(&self) -> &'static str { $name }
            fn columns(&self) -> Vec<(&'static str, Column<'_>)> {
                vec![$((stringify!($field), Column::$kind(&self.$field)),)*]
            }
        }
        impl $ty {
            pub fn len(&self) -> usize {
                let lens = [$(self.$field.len()),*];
                lens[0]
            }
            pub fn is_empty(&self) -> bool { self.len() == 0 }
        }
    };
    (@ty F64) => { f64 };
    (@ty U64) => { u64 };
    (@ty U32) => { u32 };
    (@ty U8) => { u8 };
}

table!(
    /// Bytes delivered in order to each flow's application, per time bin.
    FlowThroughput, "flow_throughput", {
        /// Bin start, s.
        t: F64,
        flow: U32,
        bytes: U64,
        goodput_mbps: F64,
    }
);

table!(
    /// The sender's window whenever it changes.
    Cwnd, "cwnd", {
        t: F64,
        flow: U32,
        cwnd: U32,
        ssthresh: U32,
        in_flight: U32,
        srtt_ms: F64,
        pacing_mbps: F64,
        /// 0 Open, 1 Disorder, 2 CWR, 3 Recovery, 4 Loss.
        ca_state: U8,
        /// The algorithm's mode, an index into the run's mode names.
        mode: U8,
        /// The algorithm's target window, segments (NaN if it has none).
        target: F64,
        /// The algorithm's queuing-delay estimate, ms (NaN if it has none).
        qdelay_ms: F64,
    }
);

table!(
    /// Every RTT sample the sender takes.
    RttSamples, "rtt", {
        t: F64,
        flow: U32,
        rtt_ms: F64,
    }
);

table!(
    /// Explicit feedback as the sender received it.
    Feedback, "feedback", {
        t: F64,
        flow: U32,
        rate_mbps: F64,
        hol_ms: F64,
    }
);

table!(
    /// Per UE, per sampled TTI: RLC buffer, channel and capacity.
    RlcSamples, "rlc", {
        t: F64,
        ue: U32,
        hol_ms: F64,
        sdus: U32,
        bytes: U64,
        cqi: U8,
        /// Ground-truth fair-share capacity after HARQ losses, Mbit/s.
        available_mbps: F64,
        /// The XRC agent's per-UE estimate, Mbit/s.
        agent_mbps: F64,
        /// Some flow of the UE is alive (started, not finished).
        active: U8,
    }
);

table!(
    /// Every packet that left the bottleneck queue (a UE's RLC buffer, or
    /// the trace link's queue): how long it waited there.
    QueueDelay, "queue_delay", {
        /// When its last byte left the queue, s.
        t: F64,
        ue: U32,
        flow: U32,
        /// Arrival in the queue to its last byte leaving it, ms.
        delay_ms: F64,
    }
);

table!(
    /// Per UE, per time bin: capacity and delivered rate.
    UeRate, "ue_rate", {
        t: F64,
        ue: U32,
        available_mbps: F64,
        delivered_mbps: F64,
        agent_mbps: F64,
    }
);

table!(
    /// Packets dropped, where and whose.
    Drops, "drops", {
        t: F64,
        /// 0 Internet forward queue, 1 RLC buffer, 2 trace (downlink)
        /// queue, 3 Internet reverse queue, 4 lost by HARQ/RLC reassembly,
        /// 5 trace uplink queue.
        location: U8,
        flow: U32,
        seq: U64,
    }
);

table!(
    /// Segments sent again.
    Retransmits, "retransmits", {
        t: F64,
        flow: U32,
        seq: U64,
        /// 0 fast (SACK/dupack driven), 1 after a timeout, 2 a tail loss
        /// probe resending the last segment.
        kind: U8,
    }
);

table!(
    /// One row per flow, at the end of the run.
    FlowSummary, "flows", {
        flow: U32,
        /// UE index, or u32::MAX for a wired-only flow.
        ue: U32,
        start_s: F64,
        /// When the flow ended (stopped and all data acknowledged, or the
        /// run ended), s.
        end_s: F64,
        bytes_delivered: U64,
        segments_sent: U64,
        retransmits: U64,
        timeouts: U64,
        /// Timeouts undone as spurious (Linux `TCPLossUndo`).
        loss_undos: U64,
        /// Fast recoveries undone as spurious (Linux `TCPFullUndo` +
        /// `TCPPartialUndo` + `TCPDSACKUndo`).
        recovery_undos: U64,
        /// Timeouts F-RTO found spurious (Linux `TCPSpuriousRTOs`).
        spurious_rtos: U64,
        /// Tail loss probes sent (Linux `TCPLossProbes`).
        probes: U64,
        /// The application finished: a transfer delivered all its bytes, or
        /// a bulk flow stopped and everything it sent was acknowledged.
        completed: U8,
        /// A transfer's completion time: start to its last byte reaching the
        /// receiving application, s (NaN if not a completed transfer).
        fct_s: F64,
    }
);

table!(
    /// Video chunks: when each started, was written, and was delivered.
    Chunks, "chunks", {
        flow: U32,
        chunk: U32,
        start_s: F64,
        written_s: F64,
        delivered_s: F64,
        /// Start to delivery of the last byte, s (NaN if never delivered).
        delivery_time_s: F64,
    }
);

table!(
    /// One row per UE, at the end of the run.
    UeSummary, "ues", {
        ue: U32,
        /// Bits the UE could have received at its available capacity while
        /// one of its flows was alive.
        available_bits_active: F64,
        /// Bits delivered to the UE (IP bytes) while one of its flows was alive.
        delivered_bits_active: F64,
        /// Bits delivered to the UE (IP bytes) over the whole run.
        delivered_bits: F64,
        /// Bits the radio (the trace link) carried to the UE over the whole
        /// run: decoded transport blocks, headers and padding included (on a
        /// trace, the packets that left the queue). At least `delivered_bits`.
        carried_bits: F64,
        active_s: F64,
        tbs_new: U64,
        tbs_retx: U64,
        tbs_lost: U64,
        rlc_drops: U64,
    }
);

/// Everything a run records.
#[derive(Debug, Default)]
pub struct Recorder {
    /// Names of the congestion-control modes, indexed by `Cwnd::mode`.
    pub mode_names: Vec<&'static str>,
    pub flow_tput: FlowThroughput,
    pub cwnd: Cwnd,
    pub rtt: RttSamples,
    pub feedback: Feedback,
    pub rlc: RlcSamples,
    pub ue_rate: UeRate,
    pub drops: Drops,
    pub retransmits: Retransmits,
    pub queue_delay: QueueDelay,
    pub flows: FlowSummary,
    pub ues: UeSummary,
    pub chunks: Chunks,
}

impl Recorder {
    pub fn tables(&self) -> Vec<&dyn Table> {
        vec![
            &self.flow_tput,
            &self.cwnd,
            &self.rtt,
            &self.feedback,
            &self.rlc,
            &self.ue_rate,
            &self.drops,
            &self.retransmits,
            &self.queue_delay,
            &self.flows,
            &self.ues,
            &self.chunks,
        ]
    }

    /// Rows of the series whose length follows the traffic rather than the
    /// configuration (one row per ACK, window change, drop, ...).
    pub fn event_rows(&self) -> usize {
        self.cwnd.len()
            + self.rtt.len()
            + self.feedback.len()
            + self.drops.len()
            + self.retransmits.len()
            + self.queue_delay.len()
            + self.chunks.len()
    }

    /// The index of a mode name, adding it on first use.
    pub fn mode_code(&mut self, name: &'static str) -> u8 {
        match self.mode_names.iter().position(|n| *n == name) {
            Some(i) => i as u8,
            None => {
                self.mode_names.push(name);
                (self.mode_names.len() - 1) as u8
            }
        }
    }

    pub fn drop(&mut self, t: SimTime, location: u8, flow: u32, seq: u64) {
        self.drops.t.push(t.as_secs_f64());
        self.drops.location.push(location);
        self.drops.flow.push(flow);
        self.drops.seq.push(seq);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_has_equal_length_columns_named_after_its_fields() {
        let mut r = Recorder::default();
        r.drop(SimTime::from_nanos(1_000_000_000), 1, 2, 3);
        let t = r.tables();
        let drops = t.iter().find(|t| t.name() == "drops").unwrap();
        let cols = drops.columns();
        assert_eq!(
            cols.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
            vec!["t", "location", "flow", "seq"]
        );
        assert!(cols.iter().all(|(_, c)| c.len() == 1));
    }
}
