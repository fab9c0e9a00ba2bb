//! Packets as bytes: the IPv4 and TCP headers a [`Packet`] stands for, as
//! a capture would show them, and the XRC option's encoding, which the
//! emulator (`xrc-emu`) writes into real ACKs with these same functions.
//!
//! References: IPv4, RFC 791 §3.1; TCP's header and checksum, RFC 9293
//! §3.1 (formerly RFC 793); the timestamps option, RFC 7323 §3; SACK, RFC
//! 2018 §3; the one's complement sum, RFC 1071; experimental option kinds
//! and their experiment identifiers (ExID), RFC 4727 and RFC 6994.
//!
//! What [`encode`] writes (the simulator keeps no payload bytes, so the
//! headers are all there is; the payload is a length):
//!
//! - IPv4: version 4, no options, DSCP/ECN 0, identification 0 with Don't
//!   Fragment set (an atomic datagram, RFC 6864 §4.1), TTL 64, protocol 6,
//!   the total length of the packet as encoded, the header checksum.
//! - TCP: the flow's ports; sequence numbers are the simulator's byte
//!   offsets modulo 2^32, as if each side's initial sequence number were
//!   2^32 − 1 (taken by its SYN, which is not simulated): the first payload
//!   byte is 0, and the receiver, which sends no data, has sequence number
//!   0. Data segments carry ACK (acknowledging 0); ACKs carry ACK. The
//!   window is the given 16-bit field (the caller scales it).
//! - Options, in this order (the data offset counts them, RFC 9293 §3.1):
//!   `NOP NOP TS` (RFC 7323 Appendix A's layout) on every segment: a data
//!   segment's TSval is its `ts_val` in microseconds modulo 2^32, its TSecr
//!   0; an ACK's TSecr is the echoed `ts_ecr` in the same unit, its TSval 0
//!   (the simulator does not model the receiver's timestamp clock). Then
//!   an ACK's SACK blocks (`NOP NOP 5 len` and the edges, RFC 2018), the
//!   XRC option ([`xrc_option_bytes`]) and the PBE-CC report (`253 8`,
//!   ExID [`PBE_EXID`], kbit/s in 32 bits), each only while the options
//!   stay within 40 bytes (TCP's limit, data offset 15): with the
//!   timestamps and three SACK blocks (40 bytes) neither fits, as a base
//!   station writing the option into a real ACK would find (the emulator
//!   leaves such an ACK unchanged).
//! - The TCP checksum over the pseudo-header and the segment with its
//!   payload all zeros (zero bytes add nothing to the sum, so it is the
//!   checksum of the whole zero-filled segment, computed from the headers
//!   alone).
//!
//! Not encoded: ABC's marks (the ECN bits stay 0) and their echo in ACKs;
//! a retransmission looks like any segment (a reader finds it by its
//! sequence numbers).
//!
//! The encoded length can differ from [`Packet::size`]: the simulator
//! counts the XRC option as its fields alone (8 bytes, 10 with the air
//! field, 12 with the room field: [`super::packet::XRC_OPTION_BYTES`]), the
//! wire adds the ExID and padding to a multiple of 4 (12 or 16 bytes); an
//! option that does not fit is left out.

use super::packet::{Packet, PacketKind, XrcOption};

/// IP protocol number of TCP.
pub const PROTO_TCP: u8 = 6;
/// TCP's experimental option kind (RFC 4727), shared through an ExID.
pub const XRC_OPTION_KIND: u8 = 253;
/// XRC's RFC 6994 experiment identifier, "XR" (ours, not registered with
/// IANA).
pub const XRC_EXID: u16 = 0x5852;
/// The PBE-CC report's experiment identifier in a capture, "PB" (ours).
pub const PBE_EXID: u16 = 0x5042;
/// The experiment identifier of ABC's marks echoed on an ACK, "AB" (ours;
/// the emulator's base station writes it, [`abc_option_bytes`]).
pub const ABC_EXID: u16 = 0x4142;
/// Bytes of the PBE-CC report and of ABC's echo on the wire (no padding).
pub const SHORT_OPTION_BYTES: usize = 8;
/// The most bytes [`xrc_option_bytes`] writes (with the room field).
pub const XRC_OPTION_MAX_BYTES: usize = 16;
/// IPv4 header without options.
pub const IPV4_HEADER_BYTES: usize = 20;
/// TCP header without options, and with the most options (data offset 15).
pub const TCP_HEADER_BYTES: usize = 20;
pub const MAX_TCP_HEADER_BYTES: usize = 60;
/// The longest headers [`encode`] writes.
pub const MAX_HEADER_BYTES: usize = IPV4_HEADER_BYTES + MAX_TCP_HEADER_BYTES;

/// The XRC option's fields as they travel (big-endian on the wire): the
/// per-flow rate in kbit/s, the head-of-line delay in 0.1 ms and, for
/// `xrc2` flows, the air-interface delay (0.1 ms) and the UE buffer's free
/// room (full-size SDUs).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct XrcFields {
    pub rate_kbps: u32,
    pub hol_tenths_ms: u16,
    /// The agent's air-interface delay, 0.1 ms (`xrc2` flows).
    pub air_tenths_ms: Option<u16>,
    /// The UE buffer's free room, full-size SDUs (`xrc2` flows of a UE with
    /// more than one active flow; only with `air_tenths_ms`).
    pub room: Option<u16>,
}

impl XrcFields {
    pub fn new(rate_kbps: u32, hol_tenths_ms: u16) -> XrcFields {
        XrcFields {
            rate_kbps,
            hol_tenths_ms,
            air_tenths_ms: None,
            room: None,
        }
    }
}

/// Writes the XRC option for `f` into the start of `out`, NOPs first to
/// keep the option list a multiple of 4 bytes; returns its length, 12
/// (rate and HoL: `NOP NOP 253 10 ExID rate HoL`; or with the air field,
/// `253 12 ...`, no padding) or 16 (with the room field: `NOP NOP 253 14
/// ...`).
pub fn xrc_option_bytes(f: XrcFields, out: &mut [u8; XRC_OPTION_MAX_BYTES]) -> usize {
    let mut body = [0u8; 12];
    body[..2].copy_from_slice(&XRC_EXID.to_be_bytes());
    body[2..6].copy_from_slice(&f.rate_kbps.to_be_bytes());
    body[6..8].copy_from_slice(&f.hol_tenths_ms.to_be_bytes());
    let mut n = 8;
    if let Some(a) = f.air_tenths_ms {
        body[8..10].copy_from_slice(&a.to_be_bytes());
        n = 10;
        if let Some(r) = f.room {
            body[10..12].copy_from_slice(&r.to_be_bytes());
            n = 12;
        }
    }
    let opt_len = 2 + n; // kind, length, body
    let pad = (4 - opt_len % 4) % 4;
    out[..pad].fill(1); // NOP
    out[pad] = XRC_OPTION_KIND;
    out[pad + 1] = opt_len as u8;
    out[pad + 2..pad + opt_len].copy_from_slice(&body[..n]);
    pad + opt_len
}

/// The PBE-CC report, `253 8 ExID("PB") kbit/s(32)`: the UE's capacity
/// estimate for the flow, as the simulator's UE writes it into an ACK.
pub fn pbe_option_bytes(kbps: u32) -> [u8; SHORT_OPTION_BYTES] {
    let mut o = [XRC_OPTION_KIND, SHORT_OPTION_BYTES as u8, 0, 0, 0, 0, 0, 0];
    o[2..4].copy_from_slice(&PBE_EXID.to_be_bytes());
    o[4..8].copy_from_slice(&kbps.to_be_bytes());
    o
}

/// ABC's marks echoed on an ACK, `253 8 ExID("AB") accelerate(16)
/// brake(16)`: how many of the data packets the ACK newly acknowledges the
/// base station marked accelerate and brake (the simulator's receiver echo,
/// `Feedback::Abc`).
pub fn abc_option_bytes(accelerate: u16, brake: u16) -> [u8; SHORT_OPTION_BYTES] {
    let mut o = [XRC_OPTION_KIND, SHORT_OPTION_BYTES as u8, 0, 0, 0, 0, 0, 0];
    o[2..4].copy_from_slice(&ABC_EXID.to_be_bytes());
    o[4..6].copy_from_slice(&accelerate.to_be_bytes());
    o[6..8].copy_from_slice(&brake.to_be_bytes());
    o
}

/// A NetAssist report as a UDP datagram's payload: what the emulator's base
/// station sends to a NATCP or NACubic sender, out of band, and what the
/// shim's agent (`xrc kernel shim --reports PORT`) reads. 32 bytes,
/// big-endian: the magic `XRNA`, version 1, a reserved byte, the UE's
/// number of flows β (16 bit), the flow's sender and receiver addresses
/// (IPv4) and ports, the UE's bottleneck bandwidth in bit/s (64 bit) and
/// the minimum RTT in µs (32 bit, saturating). A format of ours: NATCP's
/// authors replay reports from a file (`natcp`'s module documentation).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct NetAssistDatagram {
    pub sender: ([u8; 4], u16),
    pub receiver: ([u8; 4], u16),
    pub bw_bps: u64,
    pub min_rtt_us: u32,
    pub flows: u16,
}

/// Bytes of a [`NetAssistDatagram`].
pub const NETASSIST_DATAGRAM_BYTES: usize = 32;
const NETASSIST_MAGIC: &[u8; 4] = b"XRNA";

impl NetAssistDatagram {
    pub fn to_bytes(&self) -> [u8; NETASSIST_DATAGRAM_BYTES] {
        let mut b = [0u8; NETASSIST_DATAGRAM_BYTES];
        b[0..4].copy_from_slice(NETASSIST_MAGIC);
        b[4] = 1;
        b[6..8].copy_from_slice(&self.flows.to_be_bytes());
        b[8..12].copy_from_slice(&self.sender.0);
        b[12..16].copy_from_slice(&self.receiver.0);
        b[16..18].copy_from_slice(&self.sender.1.to_be_bytes());
        b[18..20].copy_from_slice(&self.receiver.1.to_be_bytes());
        b[20..28].copy_from_slice(&self.bw_bps.to_be_bytes());
        b[28..32].copy_from_slice(&self.min_rtt_us.to_be_bytes());
        b
    }

    /// The report in `b`, or why it is not one.
    pub fn parse(b: &[u8]) -> Result<NetAssistDatagram, &'static str> {
        if b.len() != NETASSIST_DATAGRAM_BYTES {
            return Err("not 32 bytes long");
        }
        if &b[0..4] != NETASSIST_MAGIC {
            return Err("no XRNA magic");
        }
        if b[4] != 1 {
            return Err("an unknown version");
        }
        let a4 = |i: usize| [b[i], b[i + 1], b[i + 2], b[i + 3]];
        let u16_at = |i: usize| u16::from_be_bytes([b[i], b[i + 1]]);
        Ok(NetAssistDatagram {
            flows: u16_at(6),
            sender: (a4(8), u16_at(16)),
            receiver: (a4(12), u16_at(18)),
            bw_bps: u64::from_be_bytes(b[20..28].try_into().expect("8 bytes")),
            min_rtt_us: u32::from_be_bytes(a4(28)),
        })
    }
}

/// One's complement sum of 16-bit big-endian words added to `acc` (RFC
/// 1071), not yet folded nor inverted; an odd last byte is the high byte
/// of a word.
pub fn sum16(mut acc: u32, b: &[u8]) -> u32 {
    let mut chunks = b.chunks_exact(2);
    for c in &mut chunks {
        acc += u16::from_be_bytes([c[0], c[1]]) as u32;
    }
    if let [last] = chunks.remainder() {
        acc += (*last as u32) << 8;
    }
    acc
}

/// Folds a [`sum16`] to 16 bits and inverts it: the checksum field.
pub fn fold(mut acc: u32) -> u16 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    !(acc as u16)
}

/// The two ends of a flow's connection: the data sender (the server) and
/// the receiver (the UE).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Endpoints {
    pub sender: [u8; 4],
    pub receiver: [u8; 4],
    pub sender_port: u16,
    pub receiver_port: u16,
}

/// A packet's encoded headers and its length on the wire.
#[derive(Clone, Debug)]
pub struct Headers {
    bytes: [u8; MAX_HEADER_BYTES],
    len: u8,
    total: u16,
}

impl Headers {
    /// The IPv4 and TCP headers.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }
    /// The IPv4 total length: the headers and the payload.
    pub fn total_len(&self) -> u32 {
        self.total as u32
    }
}

/// TCP options as they are written, at most 40 bytes.
struct Options {
    bytes: [u8; MAX_TCP_HEADER_BYTES - TCP_HEADER_BYTES],
    len: usize,
}

impl Options {
    fn put(&mut self, b: &[u8]) {
        self.bytes[self.len..self.len + b.len()].copy_from_slice(b);
        self.len += b.len();
    }
    /// Writes `b` if the options stay within 40 bytes.
    fn put_if_room(&mut self, b: &[u8]) {
        if self.len + b.len() <= self.bytes.len() {
            self.put(b);
        }
    }
}

/// Microseconds modulo 2^32: the timestamps option's clock here.
fn ts_clock(t: crate::units::SimTime) -> u32 {
    (t.as_nanos() / 1000) as u32
}

/// The headers of `p` between `ends` (data from the sender to the
/// receiver, ACKs back), with `window` in the window field. See the
/// module's doc for what each field holds.
pub fn encode(p: &Packet, ends: &Endpoints, window: u16) -> Headers {
    let (src, dst, sport, dport, seq, ack, payload, tsval, tsecr) = match &p.kind {
        PacketKind::Data(d) => (
            ends.sender,
            ends.receiver,
            ends.sender_port,
            ends.receiver_port,
            d.seq as u32,
            0u32,
            d.len,
            ts_clock(d.ts_val),
            0u32,
        ),
        PacketKind::Ack(a) => (
            ends.receiver,
            ends.sender,
            ends.receiver_port,
            ends.sender_port,
            0u32,
            a.ack as u32,
            0,
            0u32,
            ts_clock(a.ts_ecr),
        ),
    };
    let mut opts = Options {
        bytes: [0; MAX_TCP_HEADER_BYTES - TCP_HEADER_BYTES],
        len: 0,
    };
    let mut ts = [1, 1, 8, 10, 0, 0, 0, 0, 0, 0, 0, 0];
    ts[4..8].copy_from_slice(&tsval.to_be_bytes());
    ts[8..12].copy_from_slice(&tsecr.to_be_bytes());
    opts.put(&ts);
    if let PacketKind::Ack(a) = &p.kind {
        let sack = a.sack_blocks();
        if !sack.is_empty() {
            opts.put(&[1, 1, 5, 2 + 8 * sack.len() as u8]);
            for b in sack.iter() {
                opts.put(&(b.start as u32).to_be_bytes());
                opts.put(&(b.end as u32).to_be_bytes());
            }
        }
        if let Some(x) = a.xrc() {
            let mut o = [0u8; XRC_OPTION_MAX_BYTES];
            let len = xrc_option_bytes(x.fields(), &mut o);
            opts.put_if_room(&o[..len]);
        }
        if let Some(kbps) = a.pbe_kbps() {
            opts.put_if_room(&pbe_option_bytes(kbps));
        }
    }
    let n = opts.len;
    let opts = &opts.bytes[..n];
    let tcp_len = TCP_HEADER_BYTES + n;
    let hdr_len = IPV4_HEADER_BYTES + tcp_len;
    // mss is at most 65 535 − 52 (TcpConfig::validate), the headers at most 80.
    let total = (hdr_len as u32 + payload).min(u16::MAX as u32) as u16;
    let mut h = Headers {
        bytes: [0; MAX_HEADER_BYTES],
        len: hdr_len as u8,
        total,
    };
    let b = &mut h.bytes;
    // IPv4 (RFC 791 §3.1).
    b[0] = 0x45;
    b[2..4].copy_from_slice(&total.to_be_bytes());
    b[6] = 0x40; // Don't Fragment
    b[8] = 64;
    b[9] = PROTO_TCP;
    b[12..16].copy_from_slice(&src);
    b[16..20].copy_from_slice(&dst);
    let c = fold(sum16(0, &b[..IPV4_HEADER_BYTES]));
    b[10..12].copy_from_slice(&c.to_be_bytes());
    // TCP (RFC 9293 §3.1).
    let t = &mut b[IPV4_HEADER_BYTES..hdr_len];
    t[0..2].copy_from_slice(&sport.to_be_bytes());
    t[2..4].copy_from_slice(&dport.to_be_bytes());
    t[4..8].copy_from_slice(&seq.to_be_bytes());
    t[8..12].copy_from_slice(&ack.to_be_bytes());
    t[12] = ((tcp_len / 4) as u8) << 4;
    t[13] = 0x10; // ACK
    t[14..16].copy_from_slice(&window.to_be_bytes());
    t[20..].copy_from_slice(opts);
    // The pseudo-header: addresses, protocol, the segment's length.
    let seg_len = total as u32 - IPV4_HEADER_BYTES as u32;
    let acc = sum16(0, &src) + sum16(0, &dst) + PROTO_TCP as u32 + seg_len;
    let c = fold(sum16(acc, t));
    t[16..18].copy_from_slice(&c.to_be_bytes());
    h
}

impl XrcOption {
    /// The option's fields as the wire carries them (the option is kept
    /// quantized: [`XrcOption::quantized`]).
    pub fn fields(&self) -> XrcFields {
        let tenths = |d: crate::units::SimDuration| (d.as_nanos() / 100_000).min(u16::MAX as u64) as u16;
        XrcFields {
            rate_kbps: (self.rate_bps / 1000).min(u32::MAX as u64) as u32,
            hol_tenths_ms: tenths(self.hol),
            air_tenths_ms: self.air.map(tenths),
            room: self.room,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::{FlowId, SackBlock};
    use crate::units::{SimDuration, SimTime};

    const ENDS: Endpoints = Endpoints {
        sender: [10, 77, 0, 1],
        receiver: [10, 77, 0, 2],
        sender_port: 5201,
        receiver_port: 49152,
    };

    /// Whether the IPv4 header checksum and the TCP checksum (of the
    /// segment with a zero payload of the length the IP header gives)
    /// verify: each sum over its span with the checksum is 0xffff.
    fn checksums_ok(h: &[u8], total: u32) -> bool {
        let tcp = &h[IPV4_HEADER_BYTES..];
        let pseudo = sum16(0, &h[12..20]) + PROTO_TCP as u32 + total - IPV4_HEADER_BYTES as u32;
        fold(sum16(0, &h[..IPV4_HEADER_BYTES])) == 0 && fold(sum16(pseudo, tcp)) == 0
    }

    #[test]
    fn a_netassist_datagram_reads_back_and_a_wrong_one_is_refused_saying_why() {
        let d = NetAssistDatagram {
            sender: ([10, 77, 0, 1], 40_000),
            receiver: ([10, 77, 0, 2], 5201),
            bw_bps: 23_456_789_012,
            min_rtt_us: 41_250,
            flows: 3,
        };
        let b = d.to_bytes();
        assert_eq!(&b[..5], b"XRNA\x01");
        assert_eq!(NetAssistDatagram::parse(&b), Ok(d));
        assert_eq!(NetAssistDatagram::parse(&b[..31]), Err("not 32 bytes long"));
        let mut bad = b;
        bad[0] = b'Y';
        assert_eq!(NetAssistDatagram::parse(&bad), Err("no XRNA magic"));
        bad = b;
        bad[4] = 2;
        assert_eq!(NetAssistDatagram::parse(&bad), Err("an unknown version"));
    }

    #[test]
    fn the_short_options_carry_their_exid_and_values_big_endian() {
        assert_eq!(pbe_option_bytes(0x0102_0304), [253, 8, 0x50, 0x42, 1, 2, 3, 4]);
        assert_eq!(abc_option_bytes(0x0102, 0x0304), [253, 8, 0x41, 0x42, 1, 2, 3, 4]);
    }

    #[test]
    fn the_ipv4_header_checksum_of_a_known_header_is_the_textbook_one() {
        // The classic worked example (a 60-byte TCP packet from
        // 172.16.10.99 to 172.16.10.12): its checksum is 0xb1e6.
        let mut h = [
            0x45, 0x00, 0x00, 0x3c, 0x1c, 0x46, 0x40, 0x00, 0x40, 0x06, 0x00, 0x00, 0xac, 0x10, 0x0a, 0x63, 0xac, 0x10,
            0x0a, 0x0c,
        ];
        assert_eq!(fold(sum16(0, &h)), 0xb1e6);
        h[10..12].copy_from_slice(&0xb1e6u16.to_be_bytes());
        assert_eq!(fold(sum16(0, &h)), 0, "a header with its checksum sums to all ones");
        // An odd length: the last byte is a word's high byte (RFC 1071 §4.1).
        assert_eq!(sum16(0, &[0x01, 0x02, 0x03]), 0x0102 + 0x0300);
    }

    #[test]
    fn a_full_data_segment_is_1500_bytes_with_52_bytes_of_headers_and_checksums_that_verify() {
        let p = Packet::data(
            FlowId(0),
            (1 << 32) + 1448,
            1448,
            SimTime::from_nanos(1_234_567_891),
            false,
        );
        let h = encode(&p, &ENDS, 64);
        let b = h.as_bytes();
        assert_eq!((b.len(), h.total_len()), (52, 1500));
        assert_eq!(
            h.total_len(),
            p.size,
            "data segments are as long as the simulator counts them"
        );
        assert_eq!(&b[..4], &[0x45, 0, 0x05, 0xdc]);
        assert_eq!(b[6] & 0x40, 0x40, "DF");
        assert_eq!((&b[12..16], &b[16..20]), (&[10, 77, 0, 1][..], &[10, 77, 0, 2][..]));
        let t = &b[20..];
        assert_eq!(u16::from_be_bytes([t[0], t[1]]), 5201);
        assert_eq!(u16::from_be_bytes([t[2], t[3]]), 49152);
        assert_eq!(u32::from_be_bytes([t[4], t[5], t[6], t[7]]), 1448, "seq modulo 2^32");
        assert_eq!(t[12] >> 4, 8, "data offset: 20 + 12 bytes");
        assert_eq!(t[13], 0x10);
        assert_eq!(u16::from_be_bytes([t[14], t[15]]), 64);
        assert_eq!(&t[20..24], &[1, 1, 8, 10]);
        assert_eq!(
            u32::from_be_bytes([t[24], t[25], t[26], t[27]]),
            1_234_567,
            "TSval in µs"
        );
        assert!(checksums_ok(b, h.total_len()));
    }

    #[test]
    fn an_ack_carries_its_sack_blocks_and_the_xrc_and_pbe_options_while_they_fit() {
        let blocks = [SackBlock { start: 2896, end: 4344 }];
        let mut p = Packet::ack(FlowId(0), 1448, &blocks, SimTime::from_nanos(777_000));
        p.set_xrc_option(XrcOption::quantized(12_345_678, SimDuration::from_micros(4_321)));
        let h = encode(&p, &ENDS, 1);
        let b = h.as_bytes();
        let t = &b[20..];
        assert_eq!(
            (&b[12..16], &b[16..20]),
            (&[10, 77, 0, 2][..], &[10, 77, 0, 1][..]),
            "ACKs go back"
        );
        assert_eq!(u32::from_be_bytes([t[8], t[9], t[10], t[11]]), 1448);
        assert_eq!(u32::from_be_bytes([t[28], t[29], t[30], t[31]]), 777, "TSecr in µs");
        assert_eq!(&t[32..36], &[1, 1, 5, 10]);
        assert_eq!(u32::from_be_bytes([t[36], t[37], t[38], t[39]]), 2896);
        assert_eq!(u32::from_be_bytes([t[40], t[41], t[42], t[43]]), 4344);
        assert_eq!(
            &t[44..56],
            &[1, 1, 253, 10, 0x58, 0x52, 0, 0, 0x30, 0x39, 0, 43],
            "12 345 kbit/s, 4.3 ms"
        );
        assert_eq!((b.len(), h.total_len()), (20 + 56, 76));
        assert_eq!(
            h.total_len(),
            p.size + 4,
            "the ExID and the NOPs the simulator does not count"
        );
        assert!(checksums_ok(b, h.total_len()));

        // Three SACK blocks fill the 40 bytes: the XRC option is left out.
        let three: Vec<SackBlock> = (1..4)
            .map(|k| SackBlock {
                start: k * 3000,
                end: k * 3000 + 1000,
            })
            .collect();
        let mut p = Packet::ack(FlowId(0), 1000, &three, SimTime::ZERO);
        p.set_xrc_option(XrcOption::quantized(1_000_000, SimDuration::ZERO));
        p.set_pbe_option(5_000_000);
        let h = encode(&p, &ENDS, 1);
        assert_eq!(h.as_bytes().len(), 80);
        assert!(!h.as_bytes()[20..].windows(2).any(|w| w == [253, 10]));
        assert!(checksums_ok(h.as_bytes(), h.total_len()));

        // No SACK: timestamps, the XRC option with its air field, the PBE report.
        let mut p = Packet::ack(FlowId(0), 1000, &[], SimTime::ZERO);
        p.set_xrc_option(XrcOption::quantized(1_000_000, SimDuration::ZERO).with_air(SimDuration::from_micros(2_500)));
        p.set_pbe_option(5_000_000);
        let h = encode(&p, &ENDS, 1);
        let t = &h.as_bytes()[20..];
        assert_eq!(&t[32..44], &[253, 12, 0x58, 0x52, 0, 0, 0x03, 0xe8, 0, 0, 0, 25]);
        assert_eq!(&t[44..52], &[253, 8, 0x50, 0x42, 0, 0, 0x13, 0x88]);
        assert_eq!(h.total_len(), 72);
        assert!(checksums_ok(h.as_bytes(), h.total_len()));
    }

    #[test]
    fn the_xrc_option_is_12_bytes_or_16_with_the_room_field() {
        let mut o = [0u8; XRC_OPTION_MAX_BYTES];
        let f = XrcFields {
            air_tenths_ms: Some(7),
            room: Some(9),
            ..XrcFields::new(1, 2)
        };
        assert_eq!(xrc_option_bytes(f, &mut o), 16);
        assert_eq!(o, [1, 1, 253, 14, 0x58, 0x52, 0, 0, 0, 1, 0, 2, 0, 7, 0, 9]);
        assert_eq!(xrc_option_bytes(XrcFields::new(1, 2), &mut o), 12);
        assert_eq!(&o[..12], &[1, 1, 253, 10, 0x58, 0x52, 0, 0, 0, 1, 0, 2]);
    }
}
