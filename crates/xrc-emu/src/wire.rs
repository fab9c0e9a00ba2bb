//! Reading IPv4 and TCP headers (RFC 791, RFC 9293) out of the bytes a TUN
//! device hands over, as far as the capture needs them: the 5-tuple, TCP
//! sequence and acknowledgment numbers, flags, the window field, payload
//! length, and the window scale (RFC 7323 §2), timestamps (RFC 7323 §3)
//! and SACK (RFC 2018 §3) options. Packets are never modified.

/// TCP flags as in the header's low byte.
pub mod flags {
    pub const FIN: u8 = 0x01;
    pub const SYN: u8 = 0x02;
    pub const RST: u8 = 0x04;
    pub const ACK: u8 = 0x10;
}

pub const PROTO_TCP: u8 = 6;

/// Most SACK blocks one option can carry (40 option bytes).
pub const MAX_SACK: usize = 4;

/// The fields of one TCP segment the analysis uses.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct TcpFields {
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    /// The header's window field as sent (unscaled; RFC 7323 §2.3: the
    /// receive window is this shifted left by the peer's `wscale` from
    /// its SYN, except in a SYN itself).
    pub window: u16,
    /// The window-scale option's shift count (a SYN's; RFC 7323 §2.2).
    pub wscale: Option<u8>,
    /// Payload bytes.
    pub payload: u16,
    /// (TSval, TSecr) when the timestamps option is present.
    pub ts: Option<(u32, u32)>,
    /// SACK blocks as (left edge, right edge), in the order sent.
    pub sack: [(u32, u32); MAX_SACK],
    pub n_sack: u8,
}

impl TcpFields {
    pub fn sack_blocks(&self) -> &[(u32, u32)] {
        &self.sack[..self.n_sack as usize]
    }
    pub fn has(&self, flag: u8) -> bool {
        self.flags & flag != 0
    }
    /// A pure ACK: ACK set, no payload, no SYN, FIN or RST.
    pub fn is_pure_ack(&self) -> bool {
        self.payload == 0 && self.has(flags::ACK) && self.flags & (flags::FIN | flags::SYN | flags::RST) == 0
    }
}

/// One IPv4 packet's addressing and, for TCP, its segment fields.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Ipv4Info {
    /// Total length from the IP header.
    pub len: u16,
    pub proto: u8,
    pub src: [u8; 4],
    pub dst: [u8; 4],
    /// Ports (TCP and UDP); zero otherwise.
    pub sport: u16,
    pub dport: u16,
    pub tcp: Option<TcpFields>,
}

fn be16(b: &[u8], i: usize) -> u16 {
    u16::from_be_bytes([b[i], b[i + 1]])
}
fn be32(b: &[u8], i: usize) -> u32 {
    u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]])
}

/// Parses an IPv4 packet. `None` for anything else (IPv6, truncated
/// headers); such packets are still forwarded, only not analysed.
pub fn parse_ipv4(b: &[u8]) -> Option<Ipv4Info> {
    if b.len() < 20 || b[0] >> 4 != 4 {
        return None;
    }
    let ihl = (b[0] & 0x0f) as usize * 4;
    if ihl < 20 || b.len() < ihl {
        return None;
    }
    let len = be16(b, 2);
    let proto = b[9];
    let src = [b[12], b[13], b[14], b[15]];
    let dst = [b[16], b[17], b[18], b[19]];
    let frag_offset = be16(b, 6) & 0x1fff;
    let mut info = Ipv4Info {
        len,
        proto,
        src,
        dst,
        sport: 0,
        dport: 0,
        tcp: None,
    };
    let l4 = &b[ihl..b.len().min(len as usize).max(ihl)];
    if frag_offset != 0 || l4.len() < 4 {
        return Some(info);
    }
    if proto == 6 || proto == 17 {
        info.sport = be16(l4, 0);
        info.dport = be16(l4, 2);
    }
    if proto == PROTO_TCP && l4.len() >= 20 {
        let doff = (l4[12] >> 4) as usize * 4;
        if doff >= 20 && l4.len() >= doff {
            let mut t = TcpFields {
                seq: be32(l4, 4),
                ack: be32(l4, 8),
                flags: l4[13],
                window: be16(l4, 14),
                payload: (len as usize).saturating_sub(ihl + doff) as u16,
                ..TcpFields::default()
            };
            parse_options(&l4[20..doff], &mut t);
            info.tcp = Some(t);
        }
    }
    Some(info)
}

/// TCP options: kind 0 ends the list, kind 1 is one byte of padding, every
/// other kind carries its length (RFC 9293 §3.2).
fn parse_options(mut o: &[u8], t: &mut TcpFields) {
    while let Some(&kind) = o.first() {
        match kind {
            0 => return,
            1 => o = &o[1..],
            _ => {
                let Some(&l) = o.get(1) else { return };
                let l = l as usize;
                if l < 2 || l > o.len() {
                    return;
                }
                let body = &o[2..l];
                match kind {
                    3 if body.len() == 1 => t.wscale = Some(body[0]),
                    8 if body.len() == 8 => t.ts = Some((be32(body, 0), be32(body, 4))),
                    5 => {
                        for (k, c) in body.chunks_exact(8).take(MAX_SACK).enumerate() {
                            t.sack[k] = (be32(c, 0), be32(c, 4));
                            t.n_sack = k as u8 + 1;
                        }
                    }
                    _ => {}
                }
                o = &o[l..];
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A TCP/IPv4 packet with the given options and payload length (for tests).
    pub(crate) fn tcp_packet(seq: u32, ack: u32, flags: u8, opts: &[u8], payload: usize) -> Vec<u8> {
        let ol = opts.len().div_ceil(4) * 4;
        let total = 20 + 20 + ol + payload;
        let mut b = vec![0u8; total];
        b[0] = 0x45;
        b[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        b[8] = 64;
        b[9] = PROTO_TCP;
        b[12..16].copy_from_slice(&[10, 77, 0, 1]);
        b[16..20].copy_from_slice(&[10, 77, 0, 2]);
        let t = &mut b[20..];
        t[0..2].copy_from_slice(&40000u16.to_be_bytes());
        t[2..4].copy_from_slice(&5201u16.to_be_bytes());
        t[4..8].copy_from_slice(&seq.to_be_bytes());
        t[8..12].copy_from_slice(&ack.to_be_bytes());
        t[12] = (((20 + ol) / 4) as u8) << 4;
        t[13] = flags;
        t[20..20 + opts.len()].copy_from_slice(opts);
        for x in &mut t[20 + opts.len()..20 + ol] {
            *x = 1;
        }
        b
    }

    pub(crate) fn ts_opt(val: u32, ecr: u32) -> Vec<u8> {
        let mut o = vec![1, 1, 8, 10];
        o.extend_from_slice(&val.to_be_bytes());
        o.extend_from_slice(&ecr.to_be_bytes());
        o
    }

    pub(crate) fn sack_opt(blocks: &[(u32, u32)]) -> Vec<u8> {
        let mut o = vec![1, 1, 5, 2 + 8 * blocks.len() as u8];
        for (l, r) in blocks {
            o.extend_from_slice(&l.to_be_bytes());
            o.extend_from_slice(&r.to_be_bytes());
        }
        o
    }

    #[test]
    fn a_data_segment_with_timestamps_gives_its_payload_and_tsval() {
        let p = tcp_packet(1000, 5, flags::ACK, &ts_opt(77, 66), 1448);
        let i = parse_ipv4(&p).unwrap();
        assert_eq!(i.len, 1500);
        assert_eq!((i.sport, i.dport), (40000, 5201));
        let t = i.tcp.unwrap();
        assert_eq!((t.seq, t.ack, t.payload), (1000, 5, 1448));
        assert_eq!(t.ts, Some((77, 66)));
        assert_eq!(t.n_sack, 0);
    }

    #[test]
    fn an_ack_with_timestamps_and_two_sack_blocks_gives_both_blocks_in_order() {
        let mut o = ts_opt(1, 2);
        o.extend(sack_opt(&[(3000, 4448), (1000, 2448)]));
        let p = tcp_packet(1, 1000, flags::ACK, &o, 0);
        let t = parse_ipv4(&p).unwrap().tcp.unwrap();
        assert_eq!(t.payload, 0);
        assert_eq!(t.sack_blocks(), &[(3000, 4448), (1000, 2448)]);
        assert_eq!(t.ts, Some((1, 2)));
    }

    #[test]
    fn the_window_field_and_a_syns_window_scale_are_read_as_sent() {
        // MSS 1460, SACK permitted, timestamps, NOP, window scale 10: a Linux SYN.
        let mut o = vec![2, 4, 0x05, 0xb4, 4, 2];
        o.extend(ts_opt(9, 0));
        o.extend([1, 3, 3, 10]);
        let mut p = tcp_packet(7, 0, flags::SYN, &o, 0);
        p[34..36].copy_from_slice(&64240u16.to_be_bytes());
        let t = parse_ipv4(&p).unwrap().tcp.unwrap();
        assert_eq!((t.window, t.wscale, t.ts), (64240, Some(10), Some((9, 0))));
        // An ACK carries no scale; its field is the scaled-down window.
        let mut p = tcp_packet(8, 1, flags::ACK, &ts_opt(1, 2), 0);
        p[34..36].copy_from_slice(&1681u16.to_be_bytes());
        let t = parse_ipv4(&p).unwrap().tcp.unwrap();
        assert_eq!((t.window, t.wscale), (1681, None));
    }

    #[test]
    fn ipv6_and_truncated_packets_are_not_parsed() {
        assert!(parse_ipv4(&[0x60; 40]).is_none());
        assert!(parse_ipv4(&[0x45; 10]).is_none());
        let mut p = tcp_packet(1, 1, flags::ACK, &[], 0);
        p[32] = 0xf0; // data offset 60 bytes, more than the packet holds
        assert!(parse_ipv4(&p).unwrap().tcp.is_none());
    }

    #[test]
    fn a_malformed_option_length_stops_option_parsing_without_panicking() {
        let p = tcp_packet(1, 1, flags::ACK, &[8, 40, 0, 0], 0);
        assert_eq!(parse_ipv4(&p).unwrap().tcp.unwrap().ts, None);
        let p = tcp_packet(1, 1, flags::ACK, &[5, 1, 0, 0], 0);
        assert_eq!(parse_ipv4(&p).unwrap().tcp.unwrap().n_sack, 0);
    }
}
