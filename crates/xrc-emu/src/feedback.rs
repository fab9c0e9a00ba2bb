//! The base station writes XRC's feedback into real ACKs: the agent's
//! per-flow capacity and the UE's RLC head-of-line delay, as the core's
//! cell decides them (`ran::cell::Cell::on_uplink_arrival` sets the
//! `XrcOption` of an ACK when it reaches the base station), encoded into
//! the ACK's TCP header before the emulator writes it to the Internet side.
//!
//! Option layout (12 bytes, put first, before the ACK's own options: a
//! receiver walks the list in order and stops at an end-of-list option or
//! at a malformed length (Linux `tcp_parse_options`), so an option put
//! after such a list would be unreadable):
//!
//! ```text
//!  NOP NOP | kind 253 | len 10 | ExID (16 bit) | rate kbit/s (32 bit) | HoL 0.1 ms (16 bit)
//! ```
//!
//! For the flows that ask for them (`xrc2`), the agent's air-interface
//! delay and the UE buffer's free room follow (the simulator's
//! `XrcOption::air` and `room`):
//!
//! ```text
//!  kind 253 | len 12 | ExID | rate | HoL | air 0.1 ms (16 bit)                          (12 bytes)
//!  NOP NOP | kind 253 | len 14 | ExID | rate | HoL | air | room, full-size SDUs (16 bit) (16 bytes)
//! ```
//!
//! - kind 253 is an experimental option kind (RFC 4727), shared through a
//!   16-bit **experiment identifier** right after the length (RFC 6994
//!   §3, "ExID"); ours is [`EXID`] (0x5852, "XR"), **not registered with
//!   IANA** (deviation 1);
//! - the fields are the simulator's `XrcOption::quantized` (rate in kbit/s,
//!   saturating at 2^32 − 1; HoL in tenths of a millisecond, saturating at
//!   6553.5 ms), big-endian as every TCP field;
//! - the two NOPs keep the option list a multiple of 4 bytes (RFC 9293
//!   §3.1: the data offset counts 32-bit words).
//!
//! The option is written only where there is room: the TCP header may not
//! exceed 60 bytes (data offset 15) and the packet may not exceed `mtu`;
//! otherwise the ACK goes out unchanged and is counted. The IPv4 total
//! length and header checksum and the TCP data offset and checksum are
//! fixed up (checksums recomputed in full, RFC 1071 one's complement sum,
//! the TCP pseudo-header of RFC 9293 §3.1).
//!
//! Deviations:
//! 1. The ExID is ours, not an IANA-assigned one.
//! 2. The simulator counts the option as 8 bytes of an ACK's size
//!    (`XRC_OPTION_BYTES`, no ExID, no padding); on the wire it is 12. The
//!    emulated reverse Internet link serializes the core's size (8 more
//!    bytes), the device gets the 12-byte-longer packet.

use xrc_core::net::wire;

/// Our RFC 6994 experiment identifier ("XR"), the core's
/// (`xrc_core::net::wire`, which encodes the option for the simulator's
/// captures too).
pub const EXID: u16 = wire::XRC_EXID;
/// TCP experimental option kind (RFC 4727).
pub const KIND: u8 = wire::XRC_OPTION_KIND;
/// Bytes the option adds to a packet (padding included), without the room
/// field; with it 16, with the keyed tag [`MAX_OPTION_BYTES`].
pub const OPTION_BYTES: usize = 12;
pub const MAX_OPTION_BYTES: usize = 24;
/// The tagged option's length field: ExID, rate, HoL, sequence number, tag.
pub const TAGGED_LEN: u8 = 22;

/// The option's fields as they travel (`XrcOption::fields` gives them from
/// the agent's option).
pub type Feedback = wire::XrcFields;

/// The keyed tag's key (SipHash-2-4): the key's bytes 0..8 and 8..16 as
/// little-endian words, shared by the base station and the sender.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct TagKey {
    pub k0: u64,
    pub k1: u64,
}

impl TagKey {
    /// From 32 hexadecimal digits (the key's 16 bytes).
    pub fn from_hex(s: &str) -> Option<TagKey> {
        if s.len() != 32 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
            return None;
        }
        let b: Vec<u8> = (0..16)
            .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
            .collect();
        Some(TagKey {
            k0: u64::from_le_bytes(b[..8].try_into().unwrap()),
            k1: u64::from_le_bytes(b[8..].try_into().unwrap()),
        })
    }
}

/// The connection an ACK belongs to, from the data sender's side: the
/// ACK's destination is the sender, its source the receiver.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Ends {
    pub sender: [u8; 4],
    pub receiver: [u8; 4],
    pub sender_port: u16,
    pub receiver_port: u16,
}

/// The keyed tag: SipHash-2-4 over sender and receiver address (4 bytes
/// each, network order), sender and receiver port, the sequence number,
/// the rate and the HoL (big-endian), 22 bytes.
pub fn tag(key: TagKey, ends: &Ends, seq: u32, fb: Feedback) -> u64 {
    let mut m = Vec::with_capacity(22);
    m.extend_from_slice(&ends.sender);
    m.extend_from_slice(&ends.receiver);
    m.extend_from_slice(&ends.sender_port.to_be_bytes());
    m.extend_from_slice(&ends.receiver_port.to_be_bytes());
    m.extend_from_slice(&seq.to_be_bytes());
    m.extend_from_slice(&fb.rate_kbps.to_be_bytes());
    m.extend_from_slice(&fb.hol_tenths_ms.to_be_bytes());
    crate::siphash::siphash24(key.k0, key.k1, &m)
}

/// The option with the keyed tag (24 bytes):
/// `NOP NOP | 253 | 22 | ExID | rate | HoL | seq (32 bit) | tag (64 bit)`.
/// It carries rate and HoL only (no air or room fields).
pub fn tagged_option_bytes(fb: Feedback, seq: u32, key: TagKey, ends: &Ends) -> OptionBytes {
    let mut o = OptionBytes {
        bytes: [0; MAX_OPTION_BYTES],
        len: 24,
    };
    o.bytes[..2].fill(1);
    o.bytes[2] = KIND;
    o.bytes[3] = TAGGED_LEN;
    o.bytes[4..6].copy_from_slice(&EXID.to_be_bytes());
    o.bytes[6..10].copy_from_slice(&fb.rate_kbps.to_be_bytes());
    o.bytes[10..12].copy_from_slice(&fb.hol_tenths_ms.to_be_bytes());
    o.bytes[12..16].copy_from_slice(&seq.to_be_bytes());
    o.bytes[16..24].copy_from_slice(&tag(key, ends, seq, fb).to_be_bytes());
    o
}

/// An option's bytes on the wire: the first `len` of `bytes` (12, 16 or 24).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct OptionBytes {
    pub bytes: [u8; MAX_OPTION_BYTES],
    pub len: usize,
}

impl OptionBytes {
    pub fn as_slice(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

pub(crate) use wire::{fold, sum16};

/// The option's bytes for `fb`: 12 (rate and HoL, or with the air field),
/// or 16 (with the room field too).
pub fn option_bytes(fb: Feedback) -> OptionBytes {
    let mut b = [0u8; wire::XRC_OPTION_MAX_BYTES];
    let len = wire::xrc_option_bytes(fb, &mut b);
    let mut o = OptionBytes {
        bytes: [0; MAX_OPTION_BYTES],
        len,
    };
    o.bytes[..len].copy_from_slice(&b[..len]);
    o
}

/// What a base station writes instead of its agent's feedback, to test how
/// a sender treats feedback (`Options::feedback_override`): fixed values
/// in every pure ACK going up, in any topology; none for a while; or wrong
/// values of one kind.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Override {
    /// Write these values into every pure ACK going up (the agent's, in a
    /// cell, are replaced).
    pub fixed: Option<Feedback>,
    /// Write nothing between these model times, ns since the start.
    pub off: Option<(u64, u64)>,
    pub mangle: Mangle,
    /// With the keyed tag: tag with this key instead of the base station's
    /// (a forger's).
    pub forge_key: Option<TagKey>,
    /// With the keyed tag: every second ACK repeats the sequence number
    /// and tag of the one before (a replay).
    pub replay: bool,
}

/// A wrong option, for tests of a sender's checks.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Mangle {
    #[default]
    None,
    /// Rate 0.
    ZeroRate,
    /// Rate 2^32 − 1 kbit/s, above any cell.
    HugeRate,
    /// HoL 6553.5 ms.
    HugeHol,
    /// Our kind and ExID with a length of 8 (the HoL field cut off).
    Malformed,
    /// Each of the above in turn, ACK by ACK, with a plausible one between.
    Rotate,
}

impl Mangle {
    pub fn from_code(n: u64) -> Option<Mangle> {
        Some(match n {
            0 => Mangle::None,
            1 => Mangle::ZeroRate,
            2 => Mangle::HugeRate,
            3 => Mangle::HugeHol,
            4 => Mangle::Malformed,
            5 => Mangle::Rotate,
            _ => return None,
        })
    }
}

impl Override {
    /// The option bytes for the `n`th ACK at model time `t_ns`, given the
    /// agent's feedback (`None` outside a cell); `None`: write nothing.
    pub fn option(&self, agent: Option<Feedback>, n: u64, t_ns: u64) -> Option<OptionBytes> {
        let (fb, kind) = self.values(agent, n, t_ns)?;
        let mut o = option_bytes(fb);
        if kind == Mangle::Malformed {
            // kind 253, length 8: ExID and the rate, no HoL; NOPs after.
            let at = o.bytes.iter().position(|&b| b == KIND).unwrap_or(2);
            let end = at + o.bytes[at + 1] as usize;
            o.bytes[at + 1] = 8;
            o.bytes[at + 8..end].fill(1);
        }
        Some(o)
    }

    /// The values for the `n`th ACK at model time `t_ns` (forged as
    /// `mangle` says) and the kind of forgery; `None`: write nothing.
    pub fn values(&self, agent: Option<Feedback>, n: u64, t_ns: u64) -> Option<(Feedback, Mangle)> {
        if self.off.is_some_and(|(a, b)| (a..b).contains(&t_ns)) {
            return None;
        }
        let fb = self.fixed.or(agent)?;
        let kind = match self.mangle {
            Mangle::Rotate => [
                Mangle::ZeroRate,
                Mangle::None,
                Mangle::HugeRate,
                Mangle::None,
                Mangle::HugeHol,
                Mangle::None,
                Mangle::Malformed,
                Mangle::None,
            ][(n % 8) as usize],
            m => m,
        };
        let fb = match kind {
            Mangle::ZeroRate => Feedback { rate_kbps: 0, ..fb },
            Mangle::HugeRate => Feedback {
                rate_kbps: u32::MAX,
                ..fb
            },
            Mangle::HugeHol => Feedback {
                hol_tenths_ms: u16::MAX - 1,
                ..fb
            },
            _ => fb,
        };
        Some((fb, kind))
    }
}

/// Writes `pkt` (an IPv4/TCP packet) with the option added into `out`.
/// Returns false (and leaves `out` empty) when it is not IPv4/TCP, is a
/// fragment, or has no room for the option.
pub fn add_option(pkt: &[u8], fb: Feedback, mtu: usize, out: &mut Vec<u8>) -> bool {
    add_option_bytes(pkt, option_bytes(fb).as_slice(), mtu, out)
}

/// [`add_option`] with the option's bytes given (a multiple of 4).
pub fn add_option_bytes(pkt: &[u8], opt: &[u8], mtu: usize, out: &mut Vec<u8>) -> bool {
    out.clear();
    if pkt.len() < 40 || pkt[0] >> 4 != 4 || pkt[9] != crate::wire::PROTO_TCP {
        return false;
    }
    let ihl = (pkt[0] & 0x0f) as usize * 4;
    let total = u16::from_be_bytes([pkt[2], pkt[3]]) as usize;
    let frag = u16::from_be_bytes([pkt[6], pkt[7]]) & 0x3fff; // MF flag or an offset
    if ihl < 20 || total != pkt.len() || frag != 0 || pkt.len() < ihl + 20 {
        return false;
    }
    let doff = (pkt[ihl + 12] >> 4) as usize * 4;
    if doff < 20
        || pkt.len() < ihl + doff
        || doff + opt.len() > 60
        || pkt.len() + opt.len() > mtu
        || !opt.len().is_multiple_of(4)
    {
        return false;
    }
    let opts_start = ihl + 20;
    out.extend_from_slice(&pkt[..opts_start]);
    out.extend_from_slice(opt);
    out.extend_from_slice(&pkt[opts_start..]);
    let new_total = out.len();
    // IPv4: total length, header checksum.
    out[2..4].copy_from_slice(&(new_total as u16).to_be_bytes());
    out[10..12].copy_from_slice(&[0, 0]);
    let c = fold(sum16(0, &out[..ihl]));
    out[10..12].copy_from_slice(&c.to_be_bytes());
    // TCP: data offset, checksum over the pseudo-header and the segment.
    out[ihl + 12] = (((doff + opt.len()) / 4) as u8) << 4 | (out[ihl + 12] & 0x0f);
    out[ihl + 16..ihl + 18].copy_from_slice(&[0, 0]);
    let seg_len = new_total - ihl;
    let mut acc = sum16(0, &out[12..20]);
    acc += crate::wire::PROTO_TCP as u32;
    acc += seg_len as u32;
    let c = fold(sum16(acc, &out[ihl..]));
    out[ihl + 16..ihl + 18].copy_from_slice(&c.to_be_bytes());
    true
}

/// Fills a receiver's placeholder (our option, length 10, rate 0 and HoL
/// 0xffff: `crates/xrc-kernel/bpf/placeholder.bpf.c`) in place with `fb`'s
/// rate and HoL, fixing the TCP checksum: writes the packet into `out` and
/// returns true, or false (and leaves `out` empty) when `pkt` has none.
/// The packet keeps its length; air and room fields, which a placeholder
/// has no room for, are not written.
pub fn fill_placeholder(pkt: &[u8], fb: Feedback, out: &mut Vec<u8>) -> bool {
    out.clear();
    let Some(at) = placeholder_at(pkt) else { return false };
    out.extend_from_slice(pkt);
    out[at + 4..at + 8].copy_from_slice(&fb.rate_kbps.to_be_bytes());
    out[at + 8..at + 10].copy_from_slice(&fb.hol_tenths_ms.to_be_bytes());
    let ihl = (out[0] & 0x0f) as usize * 4;
    out[ihl + 16..ihl + 18].copy_from_slice(&[0, 0]);
    let mut acc = sum16(0, &out[12..20]);
    acc += crate::wire::PROTO_TCP as u32;
    acc += (out.len() - ihl) as u32;
    let c = fold(sum16(acc, &out[ihl..]));
    out[ihl + 16..ihl + 18].copy_from_slice(&c.to_be_bytes());
    true
}

/// Where an unfilled placeholder starts in `pkt`, if it has one.
fn placeholder_at(pkt: &[u8]) -> Option<usize> {
    if pkt.len() < 40 || pkt[0] >> 4 != 4 || pkt[9] != crate::wire::PROTO_TCP {
        return None;
    }
    let ihl = (pkt[0] & 0x0f) as usize * 4;
    let doff = (*pkt.get(ihl + 12)? >> 4) as usize * 4;
    let start = ihl + 20;
    let opts = pkt.get(start..ihl + doff)?;
    let mut i = 0;
    while i < opts.len() {
        match opts[i] {
            0 => return None,
            1 => i += 1,
            kind => {
                let len = *opts.get(i + 1)? as usize;
                if len < 2 || i + len > opts.len() {
                    return None;
                }
                let o = &opts[i..i + len];
                if kind == KIND
                    && len == 10
                    && o[2..4] == EXID.to_be_bytes()
                    && o[4..8] == [0; 4]
                    && o[8..10] == [0xff; 2]
                {
                    return Some(start + i);
                }
                i += len;
            }
        }
    }
    None
}

/// Reads our option back from an IPv4/TCP packet (the receiver's side).
pub fn read_option(pkt: &[u8]) -> Option<Feedback> {
    if pkt.len() < 40 || pkt[0] >> 4 != 4 || pkt[9] != crate::wire::PROTO_TCP {
        return None;
    }
    let ihl = (pkt[0] & 0x0f) as usize * 4;
    let doff = (*pkt.get(ihl + 12)? >> 4) as usize * 4;
    let opts = pkt.get(ihl + 20..ihl + doff)?;
    let mut i = 0;
    while i < opts.len() {
        match opts[i] {
            0 => return None,
            1 => i += 1,
            kind => {
                let len = *opts.get(i + 1)? as usize;
                if len < 2 || i + len > opts.len() {
                    return None;
                }
                let o = &opts[i..i + len];
                if kind == KIND && matches!(len, 10 | 12 | 14 | 22) && u16::from_be_bytes([o[2], o[3]]) == EXID {
                    let u16_at = |k: usize| u16::from_be_bytes([o[k], o[k + 1]]);
                    let extra = len == 12 || len == 14;
                    return Some(Feedback {
                        rate_kbps: u32::from_be_bytes([o[4], o[5], o[6], o[7]]),
                        hol_tenths_ms: u16_at(8),
                        air_tenths_ms: (extra && len >= 12).then(|| u16_at(10)),
                        room: (extra && len >= 14).then(|| u16_at(12)),
                    });
                }
                i += len;
            }
        }
    }
    None
}

/// Whether the IPv4 header checksum and the TCP checksum of `pkt` verify.
pub fn checksums_ok(pkt: &[u8]) -> bool {
    let ihl = (pkt[0] & 0x0f) as usize * 4;
    if fold(sum16(0, &pkt[..ihl])) != 0 {
        return false;
    }
    let mut acc = sum16(0, &pkt[12..20]);
    acc += crate::wire::PROTO_TCP as u32;
    acc += (pkt.len() - ihl) as u32;
    fold(sum16(acc, &pkt[ihl..])) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::tests::{tcp_packet, ts_opt};
    use crate::wire::{flags, parse_ipv4};

    /// An ACK with correct checksums (the test helper leaves them zero).
    fn ack(opts: &[u8]) -> Vec<u8> {
        let mut p = tcp_packet(100, 5000, flags::ACK, opts, 0);
        let ihl = 20;
        let c = fold(sum16(0, &p[..ihl]));
        p[10..12].copy_from_slice(&c.to_be_bytes());
        let acc = sum16(sum16(0, &p[12..20]) + 6 + (p.len() - ihl) as u32, &p[ihl..]);
        let c = fold(acc);
        p[ihl + 16..ihl + 18].copy_from_slice(&c.to_be_bytes());
        p
    }

    #[test]
    fn the_option_reads_back_and_both_checksums_verify_and_the_segment_is_otherwise_unchanged() {
        let p = ack(&ts_opt(7, 9));
        assert!(checksums_ok(&p));
        let fb = Feedback::new(17_345, 123);
        let mut out = Vec::new();
        assert!(add_option(&p, fb, 1500, &mut out));
        assert_eq!(out.len(), p.len() + OPTION_BYTES);
        assert!(checksums_ok(&out));
        assert_eq!(read_option(&out), Some(fb));
        assert_eq!(read_option(&p), None);
        let (a, b) = (parse_ipv4(&p).unwrap(), parse_ipv4(&out).unwrap());
        let (ta, tb) = (a.tcp.unwrap(), b.tcp.unwrap());
        assert_eq!(
            (ta.seq, ta.ack, ta.flags, ta.payload, ta.ts),
            (tb.seq, tb.ack, tb.flags, tb.payload, tb.ts)
        );
        assert_eq!(b.len as usize, out.len());
    }

    #[test]
    fn without_room_in_the_tcp_header_or_the_mtu_the_ack_is_left_alone() {
        // 20 + 32 option bytes: 52; 12 more would be 64 > 60.
        let mut opts = ts_opt(1, 2);
        opts.extend_from_slice(&[1; 20]);
        let p = ack(&opts);
        let mut out = Vec::new();
        assert!(!add_option(&p, Feedback::new(1, 1), 1500, &mut out));
        assert!(out.is_empty());
        let q = ack(&[]);
        assert!(!add_option(&q, Feedback::new(1, 1), q.len() + 11, &mut out));
        assert!(add_option(&q, Feedback::new(1, 1), q.len() + 12, &mut out));
    }

    #[test]
    fn the_option_stays_readable_behind_an_ack_whose_own_list_ends_early_or_is_malformed() {
        let fb = Feedback::new(5_000, 42);
        // An end-of-list option, then padding; a kind whose length runs
        // past the list. A receiver stops at either.
        for opts in [[0u8, 0, 0, 0], [0x9f, 0x43, 0x6c, 0xdf]] {
            let p = ack(&opts);
            let mut out = Vec::new();
            assert!(add_option(&p, fb, 1500, &mut out));
            assert!(checksums_ok(&out));
            assert_eq!(read_option(&out), Some(fb), "{opts:02x?}");
        }
    }

    #[test]
    fn an_override_writes_fixed_values_nothing_while_off_and_each_forgery_in_turn() {
        let fixed = Feedback::new(20_000, 7);
        let agent_fb = Feedback::new(5_000, 1);
        let agent = Some(agent_fb);
        let mut ov = Override {
            fixed: Some(fixed),
            off: Some((2_000_000_000, 4_000_000_000)),
            mangle: Mangle::None,
            ..Override::default()
        };
        assert_eq!(
            ov.option(agent, 1, 0),
            Some(option_bytes(fixed)),
            "the fixed values replace the agent's"
        );
        assert_eq!(ov.option(agent, 2, 3_000_000_000), None, "nothing while off");
        assert_eq!(
            ov.option(None, 3, 4_000_000_000),
            Some(option_bytes(fixed)),
            "back at the window's end"
        );
        ov.fixed = None;
        assert_eq!(
            ov.option(agent, 4, 0),
            Some(option_bytes(agent_fb)),
            "the agent's, unchanged"
        );
        assert_eq!(
            ov.option(None, 5, 0),
            None,
            "outside a cell without fixed values: nothing"
        );
        ov.fixed = Some(fixed);
        ov.mangle = Mangle::Rotate;
        let p = ack(&ts_opt(7, 9));
        let mut kinds = Vec::new();
        for n in 0..8 {
            let o = ov.option(None, n, 0).unwrap();
            let mut out = Vec::new();
            assert!(add_option_bytes(&p, o.as_slice(), 1500, &mut out));
            assert!(checksums_ok(&out));
            kinds.push(read_option(&out));
        }
        let bad = |rate_kbps, hol_tenths_ms| Some(Feedback::new(rate_kbps, hol_tenths_ms));
        assert_eq!(
            kinds,
            vec![
                bad(0, 7),
                Some(fixed),
                bad(u32::MAX, 7),
                Some(fixed),
                bad(20_000, u16::MAX - 1),
                Some(fixed),
                None, // length 8: not our option's shape, read_option skips it
                Some(fixed),
            ]
        );
    }

    #[test]
    fn the_air_and_room_fields_ride_in_12_and_16_bytes_and_read_back() {
        let p = ack(&ts_opt(7, 9));
        let air = Feedback {
            air_tenths_ms: Some(21),
            ..Feedback::new(18_000, 34)
        };
        let both = Feedback { room: Some(77), ..air };
        for (fb, bytes) in [(air, 12), (both, 16)] {
            let o = option_bytes(fb);
            assert_eq!(o.len, bytes);
            let mut out = Vec::new();
            assert!(add_option(&p, fb, 1500, &mut out));
            assert_eq!(out.len(), p.len() + bytes);
            assert!(checksums_ok(&out));
            assert_eq!(read_option(&out), Some(fb));
        }
        assert_eq!(option_bytes(Feedback::new(1, 2)).len, OPTION_BYTES);
    }

    #[test]
    fn a_placeholder_is_filled_in_place_and_the_packet_keeps_its_length() {
        let mut opts = ts_opt(7, 9);
        opts.extend_from_slice(&[KIND, 10, 0x58, 0x52, 0, 0, 0, 0, 0xff, 0xff, 1, 1]);
        let p = ack(&opts);
        assert!(checksums_ok(&p));
        let fb = Feedback::new(12_345, 67);
        let mut out = Vec::new();
        assert!(fill_placeholder(&p, fb, &mut out));
        assert_eq!(out.len(), p.len());
        assert!(checksums_ok(&out));
        assert_eq!(read_option(&out), Some(fb));
        assert!(!fill_placeholder(&out, fb, &mut Vec::new()), "filled once");
        assert!(
            !fill_placeholder(&ack(&ts_opt(7, 9)), fb, &mut Vec::new()),
            "none there"
        );
    }

    #[test]
    fn a_tagged_option_carries_its_sequence_and_a_tag_that_only_the_key_reproduces() {
        let key = TagKey::from_hex("000102030405060708090a0b0c0d0e0f").unwrap();
        let other = TagKey::from_hex("f0e0d0c0b0a090807060504030201000").unwrap();
        assert_eq!(key.k0, 0x0706_0504_0302_0100, "little-endian words of the key's bytes");
        assert!(TagKey::from_hex("xyz").is_none());
        let ends = Ends {
            sender: [10, 77, 0, 1],
            receiver: [10, 77, 0, 2],
            sender_port: 40_000,
            receiver_port: 5201,
        };
        let fb = Feedback::new(20_000, 3);
        let o = tagged_option_bytes(fb, 7, key, &ends);
        assert_eq!(o.len, 24);
        let p = ack(&ts_opt(7, 9));
        let mut out = Vec::new();
        assert!(add_option_bytes(&p, o.as_slice(), 1500, &mut out));
        assert!(checksums_ok(&out));
        assert_eq!(
            read_option(&out),
            Some(fb),
            "rate and HoL read as from the short option"
        );
        let t = u64::from_be_bytes(o.bytes[16..24].try_into().unwrap());
        assert_eq!(t, tag(key, &ends, 7, fb));
        assert_ne!(t, tag(other, &ends, 7, fb), "another key");
        assert_ne!(t, tag(key, &ends, 8, fb), "another sequence number");
        assert_ne!(
            t,
            tag(
                key,
                &Ends {
                    sender_port: 40_001,
                    ..ends
                },
                7,
                fb
            ),
            "another connection"
        );
    }
}
