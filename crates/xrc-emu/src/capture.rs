//! The emulator's own capture: one record per packet it forwards, with the
//! time it was read from its ingress device, the time it was written to
//! its egress device (or that it was dropped, and where), its direction,
//! its flow (5-tuple) and, for TCP, the header fields the analysis needs.
//! The first `snaplen` bytes of every packet are kept so each side can be
//! written out as a pcap file.
//!
//! Times are nanoseconds of model time (`CLOCK_MONOTONIC` since the run
//! started); the run's `CLOCK_REALTIME` at that origin places them in
//! pcap files.
//!
//! Storage grows in fixed-size chunks: the emulator thread never copies
//! what it recorded (a doubling `Vec` of a minute's records would stall
//! it for milliseconds).

use std::collections::HashMap;
use std::io::{self, Write};

use crate::driver::{Dir, Side};
use crate::wire::{Ipv4Info, TcpFields};

/// What became of a packet.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Fate {
    /// Written to the egress device.
    Delivered,
    /// Dropped by the stage with this index of its path.
    Dropped(u8),
    /// Still inside the emulated path when the run ended.
    InFlight,
}

/// One forwarded packet.
#[derive(Copy, Clone, Debug)]
pub struct Record {
    /// Read from the ingress device, ns.
    pub t_in: u64,
    /// Written to the egress device, ns (`Fate::Delivered` only).
    pub t_out: u64,
    /// When the model released it (`Fate::Delivered` only): `t_out` minus
    /// this is its release error, ns.
    pub t_sched: u64,
    pub dir: Dir,
    pub fate: Fate,
    /// Index into [`Capture::flows`]; `u32::MAX` for non-IPv4 packets.
    pub flow: u32,
    /// Bytes read (the IP packet).
    pub len: u16,
    pub tcp: Option<TcpFields>,
    snap_chunk: u32,
    snap_at: u32,
    snap_len: u16,
}

/// A growable list that never moves its elements: fixed-size chunks.
#[derive(Debug)]
pub struct Chunked<T> {
    chunks: Vec<Vec<T>>,
    len: usize,
}

const CHUNK: usize = 1 << 14;
const SNAP_CHUNK: usize = 1 << 20;

impl<T> Default for Chunked<T> {
    fn default() -> Self {
        Chunked {
            chunks: Vec::new(),
            len: 0,
        }
    }
}

impl<T> Chunked<T> {
    pub fn push(&mut self, x: T) -> usize {
        if self.len.is_multiple_of(CHUNK) {
            self.chunks.push(Vec::with_capacity(CHUNK));
        }
        self.chunks.last_mut().expect("just ensured").push(x);
        self.len += 1;
        self.len - 1
    }
    pub fn len(&self) -> usize {
        self.len
    }
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    pub fn get(&self, i: usize) -> &T {
        &self.chunks[i / CHUNK][i % CHUNK]
    }
    pub fn get_mut(&mut self, i: usize) -> &mut T {
        &mut self.chunks[i / CHUNK][i % CHUNK]
    }
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.chunks.iter().flatten()
    }
}

/// A flow by its 5-tuple, oriented as its first packet was.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct FlowKey {
    pub proto: u8,
    pub src: [u8; 4],
    pub sport: u16,
    pub dst: [u8; 4],
    pub dport: u16,
}

impl FlowKey {
    fn reversed(&self) -> FlowKey {
        FlowKey {
            proto: self.proto,
            src: self.dst,
            sport: self.dport,
            dst: self.src,
            dport: self.sport,
        }
    }
    pub fn describe(&self) -> String {
        let ip = |a: [u8; 4]| format!("{}.{}.{}.{}", a[0], a[1], a[2], a[3]);
        format!(
            "{} {}:{} -> {}:{}",
            match self.proto {
                6 => "tcp".to_string(),
                17 => "udp".to_string(),
                1 => "icmp".to_string(),
                p => format!("proto{p}"),
            },
            ip(self.src),
            self.sport,
            ip(self.dst),
            self.dport
        )
    }
}

/// Per-flow totals, by direction (index 0: down, 1: up).
#[derive(Clone, Debug)]
pub struct FlowInfo {
    pub key: FlowKey,
    /// The direction of the flow's first packet.
    pub first_dir: Dir,
    pub packets: [u64; 2],
    /// TCP payload bytes (IP bytes for other protocols).
    pub payload_bytes: [u64; 2],
}

#[derive(Debug)]
pub struct Capture {
    records: Chunked<Record>,
    snaps: Vec<Vec<u8>>,
    snaplen: u16,
    flows: Vec<FlowInfo>,
    index: HashMap<FlowKey, u32>,
    /// Packets written with bytes other than those read (the XRC option
    /// added), by record: the written bytes (at most the snap length),
    /// their full length, and the option.
    rewritten: HashMap<u32, (Vec<u8>, u16, Option<crate::feedback::Feedback>)>,
}

impl Capture {
    pub fn new(snaplen: u16) -> Self {
        Capture {
            records: Chunked::default(),
            snaps: Vec::new(),
            snaplen,
            flows: Vec::new(),
            index: HashMap::new(),
            rewritten: HashMap::new(),
        }
    }

    /// Room for the rewritten packets of a run of about `packets` packets
    /// (at most every other one is an ACK the base station writes into).
    pub fn reserve(&mut self, packets: usize) {
        self.rewritten.reserve(packets / 2);
    }

    /// Records a packet read at `t_in`; returns its record index and flow.
    pub fn on_read(&mut self, t_in: u64, dir: Dir, bytes: &[u8], info: Option<&Ipv4Info>) -> (u32, u32) {
        let flow = info.map_or(u32::MAX, |i| self.classify(dir, i));
        let keep = bytes.len().min(self.snaplen as usize);
        if self.snaps.last().is_none_or(|c| c.len() + keep > c.capacity()) {
            self.snaps.push(Vec::with_capacity(SNAP_CHUNK.max(keep)));
        }
        let snap_chunk = (self.snaps.len() - 1) as u32;
        let chunk = self.snaps.last_mut().expect("just ensured");
        let snap_at = chunk.len() as u32;
        chunk.extend_from_slice(&bytes[..keep]);
        let k = self.records.push(Record {
            t_in,
            t_out: 0,
            t_sched: 0,
            dir,
            fate: Fate::InFlight,
            flow,
            len: bytes.len().min(u16::MAX as usize) as u16,
            tcp: info.and_then(|i| i.tcp),
            snap_chunk,
            snap_at,
            snap_len: keep as u16,
        });
        (k as u32, flow)
    }

    fn classify(&mut self, dir: Dir, i: &Ipv4Info) -> u32 {
        let key = FlowKey {
            proto: i.proto,
            src: i.src,
            sport: i.sport,
            dst: i.dst,
            dport: i.dport,
        };
        let k = match self.index.get(&key).or_else(|| self.index.get(&key.reversed())) {
            Some(&k) => k,
            None => {
                let k = self.flows.len() as u32;
                self.flows.push(FlowInfo {
                    key,
                    first_dir: dir,
                    packets: [0; 2],
                    payload_bytes: [0; 2],
                });
                self.index.insert(key, k);
                k
            }
        };
        let f = &mut self.flows[k as usize];
        let d = dir as usize;
        f.packets[d] += 1;
        f.payload_bytes[d] += i.tcp.map_or(i.len as u64, |t| t.payload as u64);
        k
    }

    pub fn on_written(&mut self, rec: u32, t_out: u64, t_sched: u64) {
        let r = self.records.get_mut(rec as usize);
        r.t_out = t_out;
        r.t_sched = t_sched;
        r.fate = Fate::Delivered;
    }

    /// Record `rec` was written as `bytes` carrying `fb` (its pcap shows
    /// these bytes on the egress side).
    /// The bytes written for record `rec` differ from those read: an option
    /// was added (`fb`: the XRC option's values, `None` for another option).
    pub fn on_rewritten(&mut self, rec: u32, bytes: &[u8], fb: Option<crate::feedback::Feedback>) {
        let keep = bytes.len().min(self.snaplen as usize);
        self.rewritten.insert(
            rec,
            (bytes[..keep].to_vec(), bytes.len().min(u16::MAX as usize) as u16, fb),
        );
    }

    /// The XRC option written into record `rec`, if any.
    pub fn feedback_of(&self, rec: u32) -> Option<crate::feedback::Feedback> {
        self.rewritten.get(&rec).and_then(|r| r.2)
    }

    pub fn on_dropped(&mut self, rec: u32, stage: usize) {
        self.records.get_mut(rec as usize).fate = Fate::Dropped(stage.min(u8::MAX as usize) as u8);
    }

    pub fn records(&self) -> &Chunked<Record> {
        &self.records
    }
    pub fn flows(&self) -> &[FlowInfo] {
        &self.flows
    }

    /// Writes what one device saw as a pcap file (nanosecond timestamps,
    /// raw IPv4 link type): packets read from it at their read time and
    /// packets written to it at their write time. `realtime_origin_ns` is
    /// the wall-clock time of model time zero.
    pub fn write_pcap(&self, out: &mut impl Write, side: Side, realtime_origin_ns: u64) -> io::Result<()> {
        let ingress = match side {
            Side::Inet => Dir::Down,
            Side::Ue => Dir::Up,
        };
        let mut seen: Vec<(u64, usize)> = Vec::new();
        for (k, r) in self.records.iter().enumerate() {
            if r.dir == ingress {
                seen.push((r.t_in, k));
            } else if r.fate == Fate::Delivered {
                seen.push((r.t_out, k));
            }
        }
        seen.sort_unstable();
        // pcap global header, nanosecond variant (magic a1b23c4d), LINKTYPE_RAW (101).
        out.write_all(&0xa1b2_3c4du32.to_le_bytes())?;
        out.write_all(&2u16.to_le_bytes())?;
        out.write_all(&4u16.to_le_bytes())?;
        out.write_all(&0i32.to_le_bytes())?;
        out.write_all(&0u32.to_le_bytes())?;
        out.write_all(&(self.snaplen.max(1) as u32).to_le_bytes())?;
        out.write_all(&101u32.to_le_bytes())?;
        for (t, k) in seen {
            let r = self.records.get(k);
            let at = realtime_origin_ns + t;
            out.write_all(&((at / 1_000_000_000) as u32).to_le_bytes())?;
            out.write_all(&((at % 1_000_000_000) as u32).to_le_bytes())?;
            let c = &self.snaps[r.snap_chunk as usize];
            let read = &c[r.snap_at as usize..r.snap_at as usize + r.snap_len as usize];
            // What this side saw: a written packet as written.
            let (bytes, len) = match self.rewritten.get(&(k as u32)) {
                Some((b, len, _)) if r.dir != ingress => (b.as_slice(), *len),
                _ => (read, r.len),
            };
            out.write_all(&(bytes.len() as u32).to_le_bytes())?;
            out.write_all(&(len as u32).to_le_bytes())?;
            out.write_all(bytes)?;
        }
        out.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::tests::tcp_packet;
    use crate::wire::{flags, parse_ipv4};

    #[test]
    fn both_directions_of_a_connection_are_one_flow() {
        let mut c = Capture::new(64);
        let a = tcp_packet(1, 0, flags::SYN, &[], 0);
        let mut b = tcp_packet(9, 2, flags::SYN | flags::ACK, &[], 0);
        // Swap addresses and ports: the reply.
        let (s, d) = (b[12..16].to_vec(), b[16..20].to_vec());
        b[12..16].copy_from_slice(&d);
        b[16..20].copy_from_slice(&s);
        let (sp, dp) = (b[20..22].to_vec(), b[22..24].to_vec());
        b[20..22].copy_from_slice(&dp);
        b[22..24].copy_from_slice(&sp);
        let (_, f1) = c.on_read(0, Dir::Down, &a, parse_ipv4(&a).as_ref());
        let (_, f2) = c.on_read(5, Dir::Up, &b, parse_ipv4(&b).as_ref());
        assert_eq!(f1, f2);
        assert_eq!(c.flows().len(), 1);
        assert_eq!(c.flows()[0].packets, [1, 1]);
    }

    #[test]
    fn a_pcap_holds_the_ingress_reads_and_the_egress_writes_of_one_side() {
        let mut c = Capture::new(64);
        let a = tcp_packet(1, 0, flags::ACK, &[], 100);
        let (r0, _) = c.on_read(10, Dir::Down, &a, parse_ipv4(&a).as_ref());
        let (r1, _) = c.on_read(20, Dir::Up, &a, parse_ipv4(&a).as_ref());
        c.on_written(r0, 30, 30);
        c.on_dropped(r1, 0);
        let mut inet = Vec::new();
        c.write_pcap(&mut inet, Side::Inet, 0).unwrap();
        let mut ue = Vec::new();
        c.write_pcap(&mut ue, Side::Ue, 0).unwrap();
        // Inet side: the read of r0 only (r1 was dropped before reaching it).
        // UE side: the read of r1 and the write of r0.
        let per = 16 + 64;
        assert_eq!(inet.len(), 24 + per);
        assert_eq!(ue.len(), 24 + 2 * per);
        assert_eq!(u32::from_le_bytes(ue[24 + 4..24 + 8].try_into().unwrap()), 20);
    }
}
