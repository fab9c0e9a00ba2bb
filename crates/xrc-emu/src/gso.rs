//! Coalescing a burst of TCP segments into one GSO super-packet, as a UE's
//! modem driver hands its IP stack GRO-merged packets.
//!
//! **Why.** The LTE cell releases every PDU a HARQ failure held back (up
//! to ~270 packets) at one instant. Written one `write` each to the UE-side
//! TUN device, the k-th packet of such an instant leaves ~26 + 1.7·k µs
//! late (each write runs the receiving stack's input path in the syscall;
//! docs/emulation.md, "The cell at its highest rate"). A real UE's driver
//! does not deliver them one by one either: it runs GRO and hands the IP
//! stack up to 64 KB per packet. With [`crate::Options::gso`] the UE-side
//! device is opened with `IFF_VNET_HDR`, and a run of segments of one
//! connection that the cell released at the same instant and that Linux's
//! GRO would merge is written as ONE packet with a `virtio_net_hdr`
//! describing it as TCPv4 GSO. The capture still records every constituent
//! (what the cell released), each with the super-packet's write time.
//!
//! **The merge rules** are those of Linux `net/ipv4/tcp_offload.c`
//! `tcp_gro_receive` and `net/ipv4/af_inet.c` `inet_gro_receive` /
//! `inet_gro_flush` (read in torvalds/linux), applied to packets of one
//! release instant, kept per connection in the order released (GRO keeps
//! one held packet per flow, so packets of different connections may be
//! reordered among themselves; within a connection the order is kept):
//!
//! 1. IPv4 with a 20-byte header (GRO requires the byte 0x45), a valid
//!    header checksum, total length = the bytes, not a fragment;
//! 2. same 4-tuple (addresses and ports);
//! 3. the segment starts where the previous one ended (`seq` contiguous);
//! 4. the TCP header's data offset, flags other than PSH, window,
//!    acknowledgment number and every option byte identical to the first
//!    segment's (timestamps included: segments with another TSval or TSecr
//!    start a new super-packet);
//! 5. flags ACK or ACK|PSH only; a PSH segment ends the super-packet (GRO
//!    flushes after it), SYN, FIN, RST, URG, ECE and CWR are never merged;
//! 6. IP TOS (so ECN marks), TTL and DF equal; IP IDs rising by one per
//!    segment from the first's, or, with DF, all equal to the first's
//!    (`inet_gro_flush`'s fixed-ID case);
//! 7. a payload, all payloads equal to the first's (the MSS, `gso_size`)
//!    except a shorter last one, which ends the super-packet;
//! 8. at most 65 535 bytes of IP packet (the IPv4 total length field;
//!    GRO's `gro_max_size` of 64 KB).
//!
//! Anything else (pure ACKs, other protocols, a segment that fails a rule)
//! is written as it is, and a TCP segment that does not join closes its
//! connection's open super-packet, so nothing overtakes within a
//! connection.
//!
//! **The super-packet** is the first segment's IP and TCP headers with the
//! IPv4 total length and header checksum fixed up, PSH set if the last
//! segment had it (GRO ORs it in), the TCP checksum field holding the
//! pseudo-header sum (the `CHECKSUM_PARTIAL` convention: Linux
//! `tcp4_gro_complete` stores `~tcp_v4_check(len, saddr, daddr, 0)`), and
//! the payloads in order. The `virtio_net_hdr` (legacy 10-byte form,
//! `include/uapi/linux/virtio_net.h`) says `VIRTIO_NET_HDR_F_NEEDS_CSUM`,
//! `csum_start` = the TCP header's offset, `csum_offset` = 16 (the checksum
//! field), `gso_type` = `VIRTIO_NET_HDR_GSO_TCPV4`, `gso_size` = the MSS
//! and `hdr_len` = IP + TCP header bytes. The device is put in
//! little-endian header mode (`TUNSETVNETLE`), so the fields are
//! little-endian on any host.
//!
//! **What the kernel does with it** (Linux `drivers/net/tun.c`
//! `tun_get_user` and `drivers/net/tun_vnet.h` `tun_vnet_hdr_get`, then
//! `include/linux/virtio_net.h` `virtio_net_hdr_to_skb`): the header is
//! read off the front of the write, `hdr_len` raised to at least
//! `csum_start + csum_offset + 2`, the skb's partial checksum set
//! (`skb_partial_csum_set`) and, since the payload exceeds `gso_size`, its
//! `gso_size`/`gso_type` set with `SKB_GSO_DODGY`; the skb then enters
//! the stack like a GRO aggregate, and local TCP receives it as one
//! segment (one ACK for it, as behind a GRO NIC). Reads are unaffected:
//! the device offers no TSO or checksum offload until `TUNSETOFFLOAD`,
//! which the emulator never calls, so the kernel segments and checksums
//! before handing packets over; each read carries a header with
//! `gso_type` NONE, which [`crate::sys::Tun`] checks and strips. Checked on
//! Linux 6.18 by `tests/test_emulator.py`.
//!
//! Deviations from GRO:
//! 1. Only packets the model released at the same instant are merged; GRO
//!    merges whatever one NAPI poll drains (up to 64 packets, then flushes
//!    at the poll's end).
//! 2. GRO merges a FIN segment as the last of an aggregate, segments that
//!    all carry ECE, and segments after a CWR one; here a segment with FIN,
//!    ECE or CWR is always written alone (rule 5).
//! 3. GRO holds at most 8 flows per bucket (`MAX_GRO_SKBS`); here every
//!    connection of the instant may have one open super-packet.

use crate::feedback::{fold, sum16};
use crate::wire::PROTO_TCP;

/// Bytes of the legacy `struct virtio_net_hdr` (the TUN device's default
/// `vnet_hdr_sz`).
pub const VNET_HDR_LEN: usize = 10;
/// `VIRTIO_NET_HDR_F_NEEDS_CSUM`.
pub const F_NEEDS_CSUM: u8 = 1;
/// `VIRTIO_NET_HDR_GSO_NONE`, `VIRTIO_NET_HDR_GSO_TCPV4`.
pub const GSO_NONE: u8 = 0;
pub const GSO_TCPV4: u8 = 1;
/// Largest IPv4 packet (the total length is 16 bits; rule 8).
pub const MAX_PACKET: usize = 65_535;

/// TCP flag bits (RFC 9293 §3.1, with ECE/CWR of RFC 3168).
const PSH: u8 = 0x08;
const ACK: u8 = 0x10;

/// The legacy virtio-net header that precedes a packet on a device opened
/// with `IFF_VNET_HDR`.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct VnetHdr {
    pub flags: u8,
    pub gso_type: u8,
    pub hdr_len: u16,
    pub gso_size: u16,
    pub csum_start: u16,
    pub csum_offset: u16,
}

impl VnetHdr {
    /// A plain packet: no offload, checksums complete.
    pub const NONE: VnetHdr = VnetHdr {
        flags: 0,
        gso_type: GSO_NONE,
        hdr_len: 0,
        gso_size: 0,
        csum_start: 0,
        csum_offset: 0,
    };

    /// The 10 bytes, little-endian (the device is set to `TUNSETVNETLE`).
    pub fn bytes(&self) -> [u8; VNET_HDR_LEN] {
        let mut b = [0u8; VNET_HDR_LEN];
        b[0] = self.flags;
        b[1] = self.gso_type;
        b[2..4].copy_from_slice(&self.hdr_len.to_le_bytes());
        b[4..6].copy_from_slice(&self.gso_size.to_le_bytes());
        b[6..8].copy_from_slice(&self.csum_start.to_le_bytes());
        b[8..10].copy_from_slice(&self.csum_offset.to_le_bytes());
        b
    }

    pub fn from_bytes(b: &[u8; VNET_HDR_LEN]) -> VnetHdr {
        let le = |i: usize| u16::from_le_bytes([b[i], b[i + 1]]);
        VnetHdr {
            flags: b[0],
            gso_type: b[1],
            hdr_len: le(2),
            gso_size: le(4),
            csum_start: le(6),
            csum_offset: le(8),
        }
    }
}

fn be16(b: &[u8], i: usize) -> u16 {
    u16::from_be_bytes([b[i], b[i + 1]])
}
fn be32(b: &[u8], i: usize) -> u32 {
    u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

/// A TCP/IPv4 connection as the packet names it: addresses and ports.
type Tuple = ([u8; 4], [u8; 4], u32);

fn tuple(p: &[u8]) -> Option<Tuple> {
    if p.len() < 24 || p[0] >> 4 != 4 || p[9] != PROTO_TCP {
        return None;
    }
    let ihl = (p[0] & 0x0f) as usize * 4;
    if ihl < 20 || p.len() < ihl + 4 || be16(p, 6) & 0x1fff != 0 {
        return None;
    }
    Some(([p[12], p[13], p[14], p[15]], [p[16], p[17], p[18], p[19]], be32(p, ihl)))
}

/// What rules 1, 5 and 7 ask of a segment on its own; `None`: never merged.
#[derive(Copy, Clone, Debug)]
struct Seg {
    /// IP + TCP header bytes.
    hlen: usize,
    payload: usize,
    seq: u32,
    id: u16,
    df: bool,
    psh: bool,
}

fn segment(p: &[u8]) -> Option<Seg> {
    if p.len() < 40 || p[0] != 0x45 || p[9] != PROTO_TCP || be16(p, 2) as usize != p.len() {
        return None;
    }
    let frag = be16(p, 6);
    if frag & 0x3fff != 0 || fold(sum16(0, &p[..20])) != 0 {
        return None; // MF or an offset; a bad header checksum
    }
    let doff = (p[32] >> 4) as usize * 4;
    let flags = p[33];
    if doff < 20 || p.len() < 20 + doff || flags & !PSH != ACK {
        return None;
    }
    let payload = p.len() - 20 - doff;
    (payload > 0).then_some(Seg {
        hlen: 20 + doff,
        payload,
        seq: be32(p, 24),
        id: be16(p, 4),
        df: frag & 0x4000 != 0,
        psh: flags & PSH != 0,
    })
}

/// One planned write: packet indices into the instant's list, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Group {
    pub members: Vec<usize>,
    /// Accepts no more members.
    closed: bool,
    /// IP bytes of the super-packet so far.
    len: usize,
    mss: usize,
    next_seq: u32,
    /// The IDs stay fixed (DF set, the second segment had the first's ID).
    fixed_id: bool,
}

/// Plans the writes of one release instant (reuses its allocations).
#[derive(Debug, Default)]
pub struct Coalescer {
    groups: Vec<Group>,
    spare: Vec<Vec<usize>>,
    /// Most bytes of one super-packet (at most [`MAX_PACKET`]).
    pub max_len: usize,
}

impl Coalescer {
    pub fn new(max_len: usize) -> Self {
        Coalescer {
            groups: Vec::new(),
            spare: Vec::new(),
            max_len: max_len.min(MAX_PACKET),
        }
    }

    /// Groups `pkts` (released at one instant, in release order) into
    /// writes: the result, in order of each write's first packet, keeps
    /// every connection's packets in their order.
    pub fn plan(&mut self, pkts: &[&[u8]]) -> &[Group] {
        for mut g in self.groups.drain(..) {
            g.members.clear();
            self.spare.push(g.members);
        }
        for (i, p) in pkts.iter().enumerate() {
            let t = tuple(p);
            let open = t.and_then(|t| {
                self.groups
                    .iter()
                    .rposition(|g| !g.closed && tuple(pkts[g.members[0]]) == Some(t))
            });
            let seg = segment(p);
            if let (Some(k), Some(s)) = (open, seg) {
                if Self::joins(&self.groups[k], pkts, p, &s, self.max_len) {
                    let g = &mut self.groups[k];
                    if g.members.len() == 1 {
                        g.fixed_id = s.df && s.id == be16(pkts[g.members[0]], 4);
                    }
                    g.members.push(i);
                    g.len += s.payload;
                    g.next_seq = s.seq.wrapping_add(s.payload as u32);
                    g.closed = s.psh || s.payload < g.mss;
                    continue;
                }
            }
            if let Some(k) = open {
                self.groups[k].closed = true;
            }
            let mut members = self.spare.pop().unwrap_or_default();
            members.push(i);
            self.groups.push(match seg {
                Some(s) => Group {
                    members,
                    closed: s.psh,
                    len: p.len(),
                    mss: s.payload,
                    next_seq: s.seq.wrapping_add(s.payload as u32),
                    fixed_id: false,
                },
                None => Group {
                    members,
                    closed: true,
                    ..Group::default()
                },
            });
        }
        &self.groups
    }

    /// Whether segment `p` (facts `s`) may join group `g` (rules 3, 4, 6,
    /// 7, 8; the caller checked rule 2 and the segment's own rules).
    fn joins(g: &Group, pkts: &[&[u8]], p: &[u8], s: &Seg, max_len: usize) -> bool {
        let first = pkts[g.members[0]];
        let n = g.members.len();
        let id_ok = if n == 1 {
            s.id == be16(first, 4).wrapping_add(1) || (s.df && s.id == be16(first, 4))
        } else if g.fixed_id {
            s.id == be16(first, 4)
        } else {
            s.id == be16(first, 4).wrapping_add(n as u16)
        };
        s.seq == g.next_seq
            && s.payload <= g.mss
            && g.len + s.payload <= max_len
            && id_ok
            && p[1] == first[1] // TOS
            && p[8] == first[8] // TTL
            && (be16(p, 6) ^ be16(first, 6)) & 0x4000 == 0 // DF
            && p[32] == first[32] // data offset (and reserved bits)
            && p[33] & !PSH == first[33] & !PSH
            && p[28..32] == first[28..32] // acknowledgment number
            && p[34..36] == first[34..36] // window
            && p[40..s.hlen] == first[40..s.hlen] // every option byte
    }
}

/// Writes the super-packet's IP and TCP headers for `members` (a planned
/// group of at least two segments) into `out` and returns its
/// virtio-net header; the payloads follow as `&pkts[m][hdr_len..]`.
pub fn super_header(pkts: &[&[u8]], members: &[usize], out: &mut Vec<u8>) -> VnetHdr {
    let first = pkts[members[0]];
    let last = pkts[*members.last().expect("a group has members")];
    let hlen = 20 + (first[32] >> 4) as usize * 4;
    let mss = first.len() - hlen;
    let total: usize = hlen + members.iter().map(|&m| pkts[m].len() - hlen).sum::<usize>();
    out.clear();
    out.extend_from_slice(&first[..hlen]);
    out[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    out[10..12].copy_from_slice(&[0, 0]);
    let c = fold(sum16(0, &out[..20]));
    out[10..12].copy_from_slice(&c.to_be_bytes());
    out[33] |= last[33] & PSH;
    // The pseudo-header sum, not inverted: the complement of what
    // `fold` returns (CHECKSUM_PARTIAL: the device completes the rest).
    let tcp_len = (total - 20) as u32;
    let pseudo = sum16(0, &out[12..20]) + PROTO_TCP as u32 + tcp_len;
    out[36..38].copy_from_slice(&(!fold(pseudo)).to_be_bytes());
    VnetHdr {
        flags: F_NEEDS_CSUM,
        gso_type: GSO_TCPV4,
        hdr_len: hlen as u16,
        gso_size: mss as u16,
        csum_start: 20,
        csum_offset: 16,
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::feedback::checksums_ok;
    use crate::wire::tests::{tcp_packet, ts_opt};

    /// A data segment as Linux sends it: DF, timestamps, a valid IP header
    /// checksum and payload bytes that tell where in the stream they are.
    #[derive(Clone)]
    struct S {
        seq: u32,
        len: usize,
        id: u16,
        flags: u8,
        ts: (u32, u32),
        ack: u32,
        port: u16,
    }

    fn s(seq: u32, id: u16) -> S {
        S {
            seq,
            len: 1448,
            id,
            flags: ACK,
            ts: (1000, 77),
            ack: 1,
            port: 40000,
        }
    }

    impl S {
        fn bytes(&self) -> Vec<u8> {
            let mut p = tcp_packet(self.seq, self.ack, self.flags, &ts_opt(self.ts.0, self.ts.1), self.len);
            p[4..6].copy_from_slice(&self.id.to_be_bytes());
            p[6] = 0x40; // DF
            p[20..22].copy_from_slice(&self.port.to_be_bytes());
            p[34..36].copy_from_slice(&502u16.to_be_bytes());
            for (k, b) in p[52..].iter_mut().enumerate() {
                *b = (self.seq as usize + k) as u8;
            }
            fix_ip(&mut p);
            p
        }
    }

    /// A full data segment of one connection as Linux sends it (for the
    /// driver's tests).
    pub(crate) fn linux_segment(seq: u32, id: u16, len: usize) -> Vec<u8> {
        let mut x = s(seq, id);
        x.len = len;
        x.bytes()
    }

    fn fix_ip(p: &mut [u8]) {
        let ihl = (p[0] & 0x0f) as usize * 4;
        p[10..12].copy_from_slice(&[0, 0]);
        let c = fold(sum16(0, &p[..ihl]));
        p[10..12].copy_from_slice(&c.to_be_bytes());
    }

    /// The planned writes as lists of packet indices.
    fn plan(segs: &[Vec<u8>]) -> Vec<Vec<usize>> {
        let refs: Vec<&[u8]> = segs.iter().map(|v| v.as_slice()).collect();
        Coalescer::new(MAX_PACKET)
            .plan(&refs)
            .iter()
            .map(|g| g.members.clone())
            .collect()
    }

    /// Five full segments in a row, then `second` in sixth place: whether
    /// it joined (one write) or not.
    fn joins_after_five(second: impl Fn(&mut S), edit: impl Fn(&mut Vec<u8>)) -> bool {
        let mut segs: Vec<Vec<u8>> = (0..5).map(|k| s(1 + 1448 * k, 10 + k as u16).bytes()).collect();
        let mut x = s(1 + 1448 * 5, 15);
        second(&mut x);
        let mut b = x.bytes();
        edit(&mut b);
        segs.push(b);
        let p = plan(&segs);
        assert_eq!(p[0][..5], [0, 1, 2, 3, 4], "{p:?}");
        p.len() == 1
    }

    #[test]
    fn a_run_of_contiguous_full_segments_of_one_connection_becomes_one_write() {
        let segs: Vec<Vec<u8>> = (0..6).map(|k| s(1 + 1448 * k, 10 + k as u16).bytes()).collect();
        assert_eq!(plan(&segs), vec![vec![0, 1, 2, 3, 4, 5]]);
        assert!(joins_after_five(|_| {}, |_| {}));
    }

    #[test]
    fn the_super_packet_carries_every_payload_in_order_and_its_checksums_complete_to_valid_ones() {
        let mut last = s(1 + 1448 * 2, 12);
        last.len = 600;
        last.flags = ACK | PSH;
        let segs = [s(1, 10).bytes(), s(1449, 11).bytes(), last.bytes()];
        let refs: Vec<&[u8]> = segs.iter().map(|v| v.as_slice()).collect();
        let mut c = Coalescer::new(MAX_PACKET);
        let members = c.plan(&refs)[0].members.clone();
        assert_eq!(members, [0, 1, 2]);
        let mut sup = Vec::new();
        let h = super_header(&refs, &members, &mut sup);
        assert_eq!(
            h.bytes(),
            [1, 1, 52, 0, 0xa8, 0x05, 20, 0, 16, 0],
            "NEEDS_CSUM, TCPV4, hdr_len 52, gso_size 1448, csum 20 + 16, little-endian"
        );
        assert_eq!(VnetHdr::from_bytes(&h.bytes()), h);
        for m in &members {
            sup.extend_from_slice(&refs[*m][52..]);
        }
        assert_eq!(sup.len(), 52 + 1448 * 2 + 600);
        assert_eq!(be16(&sup, 2) as usize, sup.len(), "IPv4 total length");
        assert_eq!(fold(sum16(0, &sup[..20])), 0, "IPv4 header checksum");
        assert_eq!(sup[33], ACK | PSH, "the last segment's PSH");
        assert_eq!(be32(&sup, 24), 1, "the first segment's sequence number");
        assert_eq!(be16(&sup, 4), 10, "the first segment's IP ID");
        assert_eq!(sup[40..52], segs[0][40..52], "the options");
        let stream: Vec<u8> = (0..1448 * 2 + 600).map(|k| (1 + k) as u8).collect();
        assert_eq!(sup[52..], stream[..]);
        // What the device does for NEEDS_CSUM: sum from csum_start to the
        // end (the field holds the pseudo-header sum) and store the
        // complement at csum_start + csum_offset.
        let c = fold(sum16(0, &sup[20..]));
        sup[36..38].copy_from_slice(&c.to_be_bytes());
        assert!(checksums_ok(&sup));
    }

    #[test]
    fn a_gap_in_sequence_numbers_another_ack_window_or_timestamp_starts_a_new_write() {
        assert!(!joins_after_five(|x| x.seq += 1, |_| {}), "a gap");
        assert!(!joins_after_five(|x| x.seq -= 1448, |_| {}), "a resend");
        assert!(!joins_after_five(|x| x.ack = 2, |_| {}), "another ACK number");
        assert!(!joins_after_five(|x| x.ts.0 += 1, |_| {}), "another TSval");
        assert!(!joins_after_five(|x| x.ts.1 += 1, |_| {}), "another TSecr");
        assert!(!joins_after_five(|_| {}, |b| b[35] ^= 1), "another window");
        assert!(!joins_after_five(|x| x.port += 1, |_| {}), "another connection");
        assert!(
            !joins_after_five(
                |_| {},
                |b| {
                    b[16..20].copy_from_slice(&[10, 77, 0, 3]);
                }
            ),
            "another address"
        );
    }

    #[test]
    fn syn_fin_rst_urg_ece_and_cwr_are_never_merged_and_psh_ends_a_write() {
        for (f, what) in [
            (0x02, "SYN"),
            (0x01, "FIN"),
            (0x04, "RST"),
            (0x20, "URG"),
            (0x40, "ECE"),
            (0x80, "CWR"),
        ] {
            assert!(!joins_after_five(|x| x.flags = ACK | f, |_| {}), "{what}");
        }
        assert!(!joins_after_five(|x| x.flags = PSH, |_| {}), "no ACK");
        assert!(
            joins_after_five(|x| x.flags = ACK | PSH, |_| {}),
            "PSH joins as the last"
        );
        let mut p = s(1, 10);
        p.flags = ACK | PSH;
        let segs = [p.bytes(), s(1449, 11).bytes()];
        assert_eq!(plan(&segs), vec![vec![0], vec![1]], "nothing joins after PSH");
    }

    #[test]
    fn ip_tos_ttl_df_and_id_must_agree_as_gro_requires() {
        let ip = |i: usize, v: u8| {
            move |b: &mut Vec<u8>| {
                b[i] = v;
                fix_ip(b);
            }
        };
        assert!(!joins_after_five(|_| {}, ip(1, 1)), "another TOS (an ECN mark)");
        assert!(!joins_after_five(|_| {}, ip(8, 63)), "another TTL");
        assert!(!joins_after_five(|_| {}, ip(6, 0)), "without DF");
        assert!(!joins_after_five(|x| x.id = 16, |_| {}), "an ID that skips");
        assert!(!joins_after_five(|_| {}, |b| b[10] ^= 1), "a bad IP header checksum");
        // DF with one fixed ID: merged, as long as the ID stays fixed.
        let fixed: Vec<Vec<u8>> = (0..4).map(|k| s(1 + 1448 * k, 7).bytes()).collect();
        assert_eq!(plan(&fixed), vec![vec![0, 1, 2, 3]]);
        let mut mixed = fixed.clone();
        mixed[2] = s(1 + 1448 * 2, 9).bytes();
        assert_eq!(plan(&mixed), vec![vec![0, 1], vec![2], vec![3]]);
    }

    #[test]
    fn segment_sizes_must_equal_the_first_except_a_shorter_last_which_ends_the_write() {
        assert!(!joins_after_five(|x| x.len = 1449, |_| {}), "longer than the MSS");
        let mut short = s(1 + 1448, 11);
        short.len = 100;
        let segs = [s(1, 10).bytes(), short.bytes(), s(1 + 1448 + 100, 12).bytes()];
        assert_eq!(plan(&segs), vec![vec![0, 1], vec![2]]);
    }

    #[test]
    fn pure_acks_fragments_ip_options_and_other_protocols_go_out_alone() {
        let mut ack = s(1, 10);
        ack.len = 0;
        let mut frag = s(1 + 1448, 11).bytes();
        frag[6] |= 0x20; // MF
        fix_ip(&mut frag);
        let mut udp = s(1 + 2 * 1448, 12).bytes();
        udp[9] = 17;
        fix_ip(&mut udp);
        for odd in [ack.bytes(), frag, udp] {
            let segs = [odd.clone(), odd];
            assert_eq!(plan(&segs), vec![vec![0], vec![1]]);
        }
        // An IP header with options (ihl 6): GRO wants exactly 0x45.
        let mut p = s(1, 10).bytes();
        p.splice(20..20, [1, 1, 1, 1]);
        p[0] = 0x46;
        let n = p.len() as u16;
        p[2..4].copy_from_slice(&n.to_be_bytes());
        fix_ip(&mut p);
        assert_eq!(plan(&[p.clone(), p]), vec![vec![0], vec![1]]);
    }

    #[test]
    fn a_write_never_exceeds_64_kb_and_the_rest_starts_the_next() {
        let segs: Vec<Vec<u8>> = (0..50).map(|k| s(1 + 1448 * k, k as u16).bytes()).collect();
        let p = plan(&segs);
        // 52 + 45 x 1448 = 65 212 bytes; a 46th would make 66 660.
        assert_eq!(p.len(), 2);
        assert_eq!(p[0], (0..45).collect::<Vec<_>>());
        assert_eq!(p[1], (45..50).collect::<Vec<_>>());
        let refs: Vec<&[u8]> = segs.iter().map(|v| v.as_slice()).collect();
        for max in [1500, 3000, 10_000, 40_000] {
            let mut c = Coalescer::new(max);
            for g in c.plan(&refs) {
                let len: usize = 52 + g.members.iter().map(|&m| refs[m].len() - 52).sum::<usize>();
                assert!(len <= max.max(1500), "{len} > {max}");
            }
        }
    }

    #[test]
    fn connections_interleaved_in_one_instant_are_merged_apart_and_each_keeps_its_order() {
        let b = |seq: u32, id: u16| {
            let mut x = s(seq, id);
            x.port = 40001;
            x.bytes()
        };
        let mut pure = s(1 + 2 * 1448, 99);
        pure.len = 0;
        // A1 B1 A2 B2 A-ack A3 B3: A's ACK-only segment closes A's write,
        // so A3 may not overtake it.
        let segs = [
            s(1, 10).bytes(),
            b(1, 50),
            s(1449, 11).bytes(),
            b(1449, 51),
            pure.bytes(),
            s(1 + 2 * 1448, 12).bytes(),
            b(1 + 2 * 1448, 52),
        ];
        assert_eq!(plan(&segs), vec![vec![0, 2], vec![1, 3, 6], vec![4], vec![5]]);
    }
}
