//! Time series and counters, kept as columns so they can be handed to
//! Python (and from there to Parquet) without per-row conversion.
//!
//! Every table is a struct of equal-length vectors; [`Table`] lists its
//! columns by name with their data for the bindings. Times are simulated
//! seconds (f64, converted once from integer nanoseconds when recorded).
//!
//! [`run::RunRecorder`] fills the tables: it observes the network's
//! components and is told what the hosts' flows do. [`pcap`] writes what
//! taps at each flow's sender and UE see as pcap files (`output.pcap`).

pub mod pcap;
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

/// A column of a table, taken out of it ([`Table::take_columns`]).
#[derive(Debug, Clone, PartialEq)]
pub enum OwnedColumn {
    F64(Vec<f64>),
    U64(Vec<u64>),
    U32(Vec<u32>),
    U8(Vec<u8>),
}

/// A named set of equal-length columns.
pub trait Table {
    fn name(&self) -> &'static str;
    fn columns(&self) -> Vec<(&'static str, Column<'_>)>;
    /// Rows held.
    fn rows(&self) -> usize;
    /// Forgets the rows held (a caller took them), keeping the columns'
    /// capacity for the next ones.
    fn clear(&mut self);
    /// Takes the rows held, column by column, leaving empty columns with
    /// room for as many rows as were taken (the next take's are alike), so
    /// that a caller can keep them without copying them.
    fn take_columns(&mut self) -> Vec<(&'static str, OwnedColumn)>;
}

/// What a column holds, for documentation and for the front end: its name,
/// type (`f64`, `u64`, `u32`, `u8`), unit (empty for counts, indices and
/// codes) and the text of its doc comment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ColumnInfo {
    pub name: &'static str,
    pub dtype: &'static str,
    pub unit: &'static str,
    pub doc: String,
}

/// A table's name, doc comment and columns (see [`tables_info`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableInfo {
    pub name: &'static str,
    pub doc: String,
    pub columns: Vec<ColumnInfo>,
}

/// Joins the lines of a doc comment (each `///` line is one literal).
fn join_doc(lines: &[&'static str]) -> String {
    lines.iter().map(|l| l.trim()).collect::<Vec<_>>().join(" ")
}

/// A table: a struct of equal-length column vectors whose fields document
/// themselves. Each field is `name: KIND` or `name: KIND ["unit"]`; its doc
/// comment and unit are handed out by `info()` for the front end's
/// documentation of every output column.
macro_rules! table {
    ($(#[doc = $doc:literal])* $ty:ident, $name:literal, {
        $($(#[doc = $fdoc:literal])* $field:ident : $kind:ident $([$unit:literal])?),* $(,)?
    }) => {
        $(#[doc = $doc])*
        #[derive(Debug, Default, Clone)]
        pub struct $ty {
            $($(#[doc = $fdoc])* pub $field: Vec<table!(@ty $kind)>,)*
        }
        impl Table for $ty {
            fn name(&self) -> &'static str { $name }
            fn columns(&self) -> Vec<(&'static str, Column<'_>)> {
                vec![$((stringify!($field), Column::$kind(&self.$field)),)*]
            }
            fn rows(&self) -> usize { self.len() }
            fn clear(&mut self) { $(self.$field.clear();)* }
            fn take_columns(&mut self) -> Vec<(&'static str, OwnedColumn)> {
                vec![$({
                    let room = Vec::with_capacity(self.$field.len());
                    (stringify!($field), OwnedColumn::$kind(std::mem::replace(&mut self.$field, room)))
                },)*]
            }
        }
        impl $ty {
            pub fn len(&self) -> usize {
                let lens = [$(self.$field.len()),*];
                lens[0]
            }
            pub fn is_empty(&self) -> bool { self.len() == 0 }
            /// The table's name, doc and columns.
            pub fn info() -> TableInfo {
                TableInfo {
                    name: $name,
                    doc: join_doc(&[$($doc),*]),
                    columns: vec![$(ColumnInfo {
                        name: stringify!($field),
                        dtype: table!(@name $kind),
                        unit: table!(@unit $($unit)?),
                        doc: join_doc(&[$($fdoc),*]),
                    },)*],
                }
            }
        }
    };
    (@ty F64) => { f64 };
    (@ty U64) => { u64 };
    (@ty U32) => { u32 };
    (@ty U8) => { u8 };
    (@name F64) => { "f64" };
    (@name U64) => { "u64" };
    (@name U32) => { "u32" };
    (@name U8) => { "u8" };
    (@unit $unit:literal) => { $unit };
    (@unit) => { "" };
}

table!(
    /// Bytes delivered in order to each flow's application, per time bin.
    FlowThroughput, "flow_throughput", {
        /// Start of the bin (`output.bin_ms` wide; the last bin ends at the
        /// end of the run).
        t: F64 ["s"],
        /// The flow's index in the scenario's `flows`.
        flow: U32,
        /// Bytes delivered in order to the receiving application in the bin;
        /// the bins of a flow add up to its `bytes_delivered`.
        bytes: U64 ["bytes"],
        /// `bytes` over the bin's width.
        goodput_mbps: F64 ["Mbit/s"],
    }
);

table!(
    /// The sender's state whenever its window, slow-start threshold,
    /// congestion state or the algorithm's mode changes.
    Cwnd, "cwnd", {
        /// When the change happened.
        t: F64 ["s"],
        /// The flow's index in the scenario's `flows`.
        flow: U32,
        /// Congestion window.
        cwnd: U32 ["segments"],
        /// Slow-start threshold (2^31 - 1 or more: not yet set).
        ssthresh: U32 ["segments"],
        /// Segments sent and not yet acknowledged or marked lost.
        in_flight: U32 ["segments"],
        /// Smoothed RTT (NaN before the first sample).
        srtt_ms: F64 ["ms"],
        /// Pacing rate (NaN when the sender does not pace).
        pacing_mbps: F64 ["Mbit/s"],
        /// Linux's congestion state (`icsk_ca_state`); the codes are
        /// [`codes::CA_STATES`].
        ca_state: U8,
        /// The algorithm's mode, an index into the run's mode names (the
        /// front end writes the name).
        mode: U8,
        /// The algorithm's target window (NaN if it has none).
        target: F64 ["segments"],
        /// The algorithm's queuing-delay estimate (NaN if it has none).
        qdelay_ms: F64 ["ms"],
    }
);

table!(
    /// Every RTT sample the sender takes.
    RttSamples, "rtt", {
        /// When the ACK that gave the sample arrived.
        t: F64 ["s"],
        /// The flow's index in the scenario's `flows`.
        flow: U32,
        /// The sample: send time of the segment to the ACK's arrival.
        rtt_ms: F64 ["ms"],
    }
);

table!(
    /// Explicit feedback (XRC's rate and queue delay) as the sender received it.
    Feedback, "feedback", {
        /// When the ACK carrying it arrived.
        t: F64 ["s"],
        /// The flow's index in the scenario's `flows`.
        flow: U32,
        /// The rate the network told the sender to use.
        rate_mbps: F64 ["Mbit/s"],
        /// The head-of-line delay the network reported.
        hol_ms: F64 ["ms"],
    }
);

table!(
    /// Per UE, every `output.rlc_sample_ttis` TTIs (every ms on a trace):
    /// the bottleneck queue, the channel and the capacity.
    RlcSamples, "rlc", {
        /// When the sample was taken (the start of its TTI).
        t: F64 ["s"],
        /// The UE's index in the scenario's `ues` (0 on a trace).
        ue: U32,
        /// Head-of-line delay: the age of the oldest packet queued (0 when empty).
        hol_ms: F64 ["ms"],
        /// Packets (SDUs) queued.
        sdus: U32 ["packets"],
        /// Bytes queued.
        bytes: U64 ["bytes"],
        /// The UE's CQI (0 on a trace).
        cqi: U8,
        /// Ground-truth fair-share capacity after HARQ losses (on a trace,
        /// the trace's capacity).
        available_mbps: F64 ["Mbit/s"],
        /// The XRC agent's per-UE capacity estimate.
        agent_mbps: F64 ["Mbit/s"],
        /// 1 while some flow of the UE is alive (started, not finished).
        active: U8,
    }
);

table!(
    /// Every packet that left the bottleneck queue (a UE's RLC buffer, or
    /// the trace link's queue): how long it waited there.
    QueueDelay, "queue_delay", {
        /// When its last byte left the queue.
        t: F64 ["s"],
        /// The UE's index (0 on a trace).
        ue: U32,
        /// The flow's index in the scenario's `flows`.
        flow: U32,
        /// Arrival in the queue to its last byte leaving it.
        delay_ms: F64 ["ms"],
    }
);

table!(
    /// Per UE, per time bin: capacity and delivered rate.
    UeRate, "ue_rate", {
        /// Start of the bin (`output.bin_ms` wide).
        t: F64 ["s"],
        /// The UE's index (0 on a trace).
        ue: U32,
        /// The UE's fair share of the cell (on a trace, the trace's capacity).
        available_mbps: F64 ["Mbit/s"],
        /// IP bits delivered to the UE in the bin, over its width.
        delivered_mbps: F64 ["Mbit/s"],
        /// The XRC agent's estimate, averaged over the bin.
        agent_mbps: F64 ["Mbit/s"],
    }
);

table!(
    /// Packets dropped, where and whose.
    Drops, "drops", {
        /// When the packet was dropped.
        t: F64 ["s"],
        /// Where the packet was lost; the codes are [`codes::DROP_LOCATIONS`].
        location: U8,
        /// The flow's index (2^32 - 1 for a loss in RLC reassembly, which
        /// cannot tell whose bytes it lost).
        flow: U32,
        /// A data packet's first sequence number, an ACK's acknowledgement
        /// number (0 when unknown).
        seq: U64,
    }
);

table!(
    /// Segments sent again.
    Retransmits, "retransmits", {
        /// When the segment was sent again.
        t: F64 ["s"],
        /// The flow's index in the scenario's `flows`.
        flow: U32,
        /// The segment's first sequence number.
        seq: U64,
        /// Why it was sent again; the codes are [`codes::RETRANSMIT_KINDS`].
        kind: U8,
    }
);

table!(
    /// One row per flow, at the end of the run.
    FlowSummary, "flows", {
        /// The flow's index in the scenario's `flows`.
        flow: U32,
        /// UE index, or 2^32 - 1 for a flow of the wired topology.
        ue: U32,
        /// When the application started writing.
        start_s: F64 ["s"],
        /// When the flow ended (stopped and all data acknowledged, or the
        /// run ended).
        end_s: F64 ["s"],
        /// Bytes delivered in order to the receiving application.
        bytes_delivered: U64 ["bytes"],
        /// Data segments sent, retransmissions included.
        segments_sent: U64 ["segments"],
        /// Segments retransmitted (every kind).
        retransmits: U64 ["segments"],
        /// Retransmission timeouts.
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
        /// 1 if the application finished: a transfer delivered all its
        /// bytes, or a bulk flow stopped and everything it sent was
        /// acknowledged.
        completed: U8,
        /// A transfer's completion time: start to its last byte reaching the
        /// receiving application (NaN if not a completed transfer).
        fct_s: F64 ["s"],
    }
);

table!(
    /// Video chunks: when each started, was written, and was delivered.
    Chunks, "chunks", {
        /// The video flow's index in the scenario's `flows`.
        flow: U32,
        /// The chunk's number, from 0.
        chunk: U32,
        /// When the application started writing the chunk (a cycle boundary).
        start_s: F64 ["s"],
        /// When the application finished writing it (NaN if it did not).
        written_s: F64 ["s"],
        /// When its last byte reached the receiving application (NaN if never).
        delivered_s: F64 ["s"],
        /// `delivered_s - start_s` (NaN if never delivered).
        delivery_time_s: F64 ["s"],
    }
);

table!(
    /// One row per UE, at the end of the run.
    UeSummary, "ues", {
        /// The UE's index (0 on a trace).
        ue: U32,
        /// Bits the UE could have received at its fair share while one of
        /// its flows was alive.
        available_bits_active: F64 ["bits"],
        /// Bits delivered to the UE (IP bytes) while one of its flows was alive.
        delivered_bits_active: F64 ["bits"],
        /// Bits delivered to the UE (IP bytes) over the whole run.
        delivered_bits: F64 ["bits"],
        /// Bits the radio (the trace link) carried to the UE over the whole
        /// run: decoded transport blocks, headers and padding included (on a
        /// trace, the packets that left the queue). At least `delivered_bits`.
        carried_bits: F64 ["bits"],
        /// Time during which at least one of the UE's flows was alive.
        active_s: F64 ["s"],
        /// Transport blocks sent for the first time.
        tbs_new: U64,
        /// Transport blocks retransmitted by HARQ.
        tbs_retx: U64,
        /// Transport blocks lost after the last HARQ retransmission.
        tbs_lost: U64,
        /// Packets dropped at the UE's RLC buffer.
        rlc_drops: U64 ["packets"],
    }
);

/// What the coded columns' numbers mean: for each code (the index), a name
/// and what it says. The world records through these, and the bindings
/// hand them to the front end, so the outputs' categories have one source.
pub mod codes {
    use crate::transport::cc::CaState;
    use crate::transport::RetxKind;

    /// Where a packet was dropped (`drops.location`): the network layer's
    /// drop sites, whose discriminants are the codes.
    pub use crate::net::DropSite as DropLocation;

    /// `drops.location`.
    pub const DROP_LOCATIONS: &[(&str, &str)] = &[
        ("internet_forward", "the Internet path's forward queue (toward the UEs)"),
        ("rlc", "a UE's RLC transmit buffer"),
        ("trace_downlink", "the downlink trace link's queue"),
        ("internet_reverse", "the Internet path's reverse queue (ACKs)"),
        (
            "reassembly",
            "lost by HARQ and RLC reassembly (the transport block failed for good)",
        ),
        ("trace_uplink", "the uplink trace link's queue (ACKs)"),
    ];

    /// `cwnd.ca_state`: Linux's `icsk_ca_state` values, in its order.
    pub const CA_STATES: &[(&str, &str)] = &[
        ("open", "no loss or reordering in sight"),
        ("disorder", "SACKs or duplicate ACKs seen, no loss decided yet"),
        ("cwr", "window reduced by ECN, no loss"),
        ("recovery", "fast recovery after a loss detected by (S)ACKs"),
        ("loss", "recovery after a retransmission timeout"),
    ];

    /// `retransmits.kind`.
    pub const RETRANSMIT_KINDS: &[(&str, &str)] = &[
        ("fast", "loss recovery driven by (S)ACKs"),
        ("timeout", "after a retransmission timeout"),
        ("probe", "a tail loss probe resending the last segment"),
    ];

    /// A code's name and meaning, indexed by the code.
    pub type Codes = &'static [(&'static str, &'static str)];

    /// Every coded column: (table, column, its codes).
    pub const CODED_COLUMNS: &[(&str, &str, Codes)] = &[
        ("drops", "location", DROP_LOCATIONS),
        ("cwnd", "ca_state", CA_STATES),
        ("retransmits", "kind", RETRANSMIT_KINDS),
    ];

    /// The code of a congestion state in `cwnd.ca_state`.
    pub fn ca_state(s: CaState) -> u8 {
        match s {
            CaState::Open => 0,
            CaState::Disorder => 1,
            CaState::Cwr => 2,
            CaState::Recovery => 3,
            CaState::Loss => 4,
        }
    }

    /// The code of a retransmission's kind in `retransmits.kind`.
    pub fn retransmit_kind(k: RetxKind) -> u8 {
        match k {
            RetxKind::Fast => 0,
            RetxKind::Timeout => 1,
            RetxKind::Probe => 2,
        }
    }
}

/// Every table a run records, documented: the front end builds its column
/// documentation, units and categories from this.
pub fn tables_info() -> Vec<TableInfo> {
    vec![
        FlowThroughput::info(),
        Cwnd::info(),
        RttSamples::info(),
        Feedback::info(),
        RlcSamples::info(),
        UeRate::info(),
        Drops::info(),
        Retransmits::info(),
        QueueDelay::info(),
        FlowSummary::info(),
        UeSummary::info(),
        Chunks::info(),
    ]
}

/// Everything a run records.
///
/// A caller may take the rows recorded so far at any time between events
/// ([`Recorder::tables`], then [`Recorder::clear_rows`]) and write them
/// out, so that a run holds only the rows since the last take: the
/// concatenation of what it took, table by table, is what one take at the
/// end would have given (`tests/golden` checks this).
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

    /// The tables, to take or clear their rows.
    pub fn tables_mut(&mut self) -> [&mut dyn Table; 12] {
        [
            &mut self.flow_tput,
            &mut self.cwnd,
            &mut self.rtt,
            &mut self.feedback,
            &mut self.rlc,
            &mut self.ue_rate,
            &mut self.drops,
            &mut self.retransmits,
            &mut self.queue_delay,
            &mut self.flows,
            &mut self.ues,
            &mut self.chunks,
        ]
    }

    /// Rows held over every table.
    pub fn rows(&self) -> usize {
        self.tables().iter().map(|t| t.rows()).sum()
    }

    /// Forgets every row held (the caller has taken them); the mode names
    /// stay, so codes keep their meaning from one take to the next.
    pub fn clear_rows(&mut self) {
        for t in self.tables_mut() {
            t.clear();
        }
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

    pub fn drop(&mut self, t: SimTime, location: codes::DropLocation, flow: u32, seq: u64) {
        self.drops.t.push(t.as_secs_f64());
        self.drops.location.push(location as u8);
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
        r.drop(SimTime::from_nanos(1_000_000_000), codes::DropLocation::Rlc, 2, 3);
        let t = r.tables();
        let drops = t.iter().find(|t| t.name() == "drops").unwrap();
        let cols = drops.columns();
        assert_eq!(
            cols.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
            vec!["t", "location", "flow", "seq"]
        );
        assert!(cols.iter().all(|(_, c)| c.len() == 1));
        assert_eq!(r.drops.location, vec![1]);
    }

    #[test]
    fn clearing_the_rows_empties_every_table_and_keeps_the_mode_names() {
        let mut r = Recorder::default();
        r.drop(SimTime::ZERO, codes::DropLocation::Rlc, 2, 3);
        r.rlc.t.push(0.0);
        r.rlc.ue.push(0);
        let code = r.mode_code("startup");
        assert_eq!(r.rows(), 2);
        r.clear_rows();
        assert_eq!(r.rows(), 0);
        assert!(r.tables().iter().all(|t| t.columns().iter().all(|(_, c)| c.is_empty())));
        assert_eq!(r.mode_code("startup"), code);
    }

    #[test]
    fn every_table_and_column_is_documented_and_listed_with_the_columns_it_exports() {
        let r = Recorder::default();
        let info = tables_info();
        let tables = r.tables();
        assert_eq!(info.len(), tables.len());
        for (i, t) in info.iter().zip(tables) {
            assert_eq!(i.name, t.name());
            assert!(!i.doc.is_empty(), "{}", i.name);
            let names: Vec<_> = t.columns().iter().map(|(n, _)| *n).collect();
            assert_eq!(
                i.columns.iter().map(|c| c.name).collect::<Vec<_>>(),
                names,
                "{}",
                i.name
            );
            for c in &i.columns {
                assert!(!c.doc.is_empty(), "{}.{} has no doc", i.name, c.name);
            }
        }
    }

    #[test]
    fn every_code_has_a_name_and_the_enums_map_onto_them_in_order() {
        use crate::transport::cc::CaState;
        use crate::transport::RetxKind;
        assert_eq!(
            codes::DROP_LOCATIONS.len(),
            codes::DropLocation::TraceUplink as usize + 1
        );
        let states = [
            CaState::Open,
            CaState::Disorder,
            CaState::Cwr,
            CaState::Recovery,
            CaState::Loss,
        ];
        assert_eq!(states.map(codes::ca_state), [0, 1, 2, 3, 4]);
        assert_eq!(codes::CA_STATES.len(), states.len());
        let kinds = [RetxKind::Fast, RetxKind::Timeout, RetxKind::Probe];
        assert_eq!(kinds.map(codes::retransmit_kind), [0, 1, 2]);
        assert_eq!(codes::RETRANSMIT_KINDS.len(), kinds.len());
        for (table, column, _) in codes::CODED_COLUMNS {
            let t = tables_info().into_iter().find(|t| t.name == *table).unwrap();
            assert!(
                t.columns.iter().any(|c| c.name == *column && c.dtype == "u8"),
                "{table}.{column}"
            );
        }
    }
}
