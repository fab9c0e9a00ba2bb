//! Packets as the simulator sees them: a TCP/IP header abstraction with byte
//! sizes that match the wire, and no payload bytes.
//!
//! Sizes (IPv4, TCP with the timestamps option as Linux negotiates it):
//! data = 20 (IP) + 20 (TCP) + 12 (timestamps) + payload; an ACK is 52 bytes
//! plus 2 + 8·n bytes of SACK option (padded to 4 with two NOPs) plus the XRC
//! option when the base station writes one.

use crate::units::{SimDuration, SimTime};

/// A transport flow (one TCP connection).
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct FlowId(pub u32);

/// A user equipment attached to the cell.
#[derive(Copy, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Debug)]
pub struct UeId(pub u32);

/// IPv4 + TCP + timestamps option.
pub const TCP_IP_HEADER_BYTES: u32 = 52;
/// Maximum SACK blocks in one ACK when timestamps are in use (RFC 2018 §3).
pub const MAX_SACK_BLOCKS: usize = 3;
/// The XRC option as the agent writes it: kind (1), length (1), per-flow
/// rate in kbit/s (4), HoL delay in 1/10 ms (2).
pub const XRC_OPTION_BYTES: u32 = 8;
/// The option's air-delay field (`xrc2` flows only): 0.1 ms in 16 bits.
pub const XRC_AIR_FIELD_BYTES: u32 = 2;
/// The PBE-CC capacity report the UE writes into its ACKs: kind, length,
/// rate in kbit/s, padding.
pub const PBE_OPTION_BYTES: u32 = 8;

/// ABC's marking of a data packet (Goyal et al., NSDI 2020): the sender
/// declares the packet ABC-capable, the base station marks it accelerate
/// or brake. Carried in the ECN bits, so it adds no bytes.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum AbcMark {
    #[default]
    NotCapable,
    Capable,
    Accelerate,
    Brake,
}

/// A half-open byte range [start, end) the receiver holds above its
/// cumulative ACK.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Default)]
pub struct SackBlock {
    pub start: u64,
    pub end: u64,
}

/// The explicit feedback the XRC agent piggybacks on an ACK.
#[derive(Copy, Clone, PartialEq, Debug)]
pub struct XrcOption {
    /// The flow's fair share of its UE's capacity, bits per second (eq. 1).
    pub rate_bps: u64,
    /// Head-of-line delay of the UE's RLC buffer when the ACK crossed PDCP.
    pub hol: SimDuration,
    /// The agent's air-interface delay estimate (`ran::agent::AirDelay`),
    /// written only for flows that ask for it (`xrc2`); `None` otherwise,
    /// and then the option is the paper's 8 bytes.
    pub air: Option<SimDuration>,
}

impl XrcOption {
    /// Quantizes to what fits in the option's fields (rate in kbit/s,
    /// saturating at u32::MAX; HoL in 0.1 ms, saturating at 6553.5 ms), so
    /// the sender sees exactly what a real option would carry.
    pub fn quantized(rate_bps: u64, hol: SimDuration) -> Self {
        let kbps = (rate_bps / 1000).min(u32::MAX as u64);
        let tenths = (hol.as_nanos() / 100_000).min(u16::MAX as u64);
        XrcOption {
            rate_bps: kbps * 1000,
            hol: SimDuration::from_nanos(tenths * 100_000),
            air: None,
        }
    }

    /// Adds the air-delay field, quantized like HoL (0.1 ms, saturating at
    /// 6553.5 ms).
    pub fn with_air(mut self, air: SimDuration) -> Self {
        let tenths = (air.as_nanos() / 100_000).min(u16::MAX as u64);
        self.air = Some(SimDuration::from_nanos(tenths * 100_000));
        self
    }

    /// Bytes the option takes on the wire.
    pub fn wire_bytes(&self) -> u32 {
        XRC_OPTION_BYTES + if self.air.is_some() { XRC_AIR_FIELD_BYTES } else { 0 }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct DataHeader {
    /// First byte carried.
    pub seq: u64,
    /// Payload bytes.
    pub len: u32,
    /// Timestamp value (TSval): when this copy left the sender.
    pub ts_val: SimTime,
    /// This copy is a retransmission.
    pub retransmit: bool,
    pub abc: AbcMark,
}

#[derive(Clone, Debug, PartialEq)]
pub struct AckHeader {
    /// Cumulative acknowledgment: next byte expected.
    pub ack: u64,
    pub sack: [SackBlock; MAX_SACK_BLOCKS],
    pub sack_len: u8,
    /// Timestamp echo reply (TSecr), RFC 7323 §4.3.
    pub ts_ecr: SimTime,
    /// Written by the XRC agent at the base station.
    pub xrc: Option<XrcOption>,
    /// ABC marks of the data this ACK acknowledges (echoed by the receiver).
    pub abc_accelerate: u16,
    pub abc_brake: u16,
    /// The UE's PBE-CC capacity estimate for this flow, kbit/s as on the
    /// wire (kept at 4 bytes so the packet stays small).
    pub pbe_kbps: Option<u32>,
}

impl AckHeader {
    pub fn sack_blocks(&self) -> &[SackBlock] {
        &self.sack[..self.sack_len as usize]
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum PacketKind {
    Data(DataHeader),
    Ack(AckHeader),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Packet {
    pub flow: FlowId,
    /// Bytes on the wire (IP packet size).
    pub size: u32,
    pub kind: PacketKind,
}

impl Packet {
    pub fn data(flow: FlowId, seq: u64, len: u32, ts_val: SimTime, retransmit: bool) -> Packet {
        Packet {
            flow,
            size: TCP_IP_HEADER_BYTES + len,
            kind: PacketKind::Data(DataHeader {
                seq,
                len,
                ts_val,
                retransmit,
                abc: AbcMark::NotCapable,
            }),
        }
    }

    pub fn ack(flow: FlowId, ack: u64, sack: &[SackBlock], ts_ecr: SimTime) -> Packet {
        let n = sack.len().min(MAX_SACK_BLOCKS);
        let mut blocks = [SackBlock::default(); MAX_SACK_BLOCKS];
        blocks[..n].copy_from_slice(&sack[..n]);
        let sack_bytes = if n == 0 { 0 } else { 4 + 8 * n as u32 };
        Packet {
            flow,
            size: TCP_IP_HEADER_BYTES + sack_bytes,
            kind: PacketKind::Ack(AckHeader {
                ack,
                sack: blocks,
                sack_len: n as u8,
                ts_ecr,
                xrc: None,
                abc_accelerate: 0,
                abc_brake: 0,
                pbe_kbps: None,
            }),
        }
    }

    pub fn is_data(&self) -> bool {
        matches!(self.kind, PacketKind::Data(_))
    }

    /// Writes (or overwrites) the PBE-CC capacity report of an ACK.
    pub fn set_pbe_option(&mut self, rate_bps: u64) {
        if let PacketKind::Ack(a) = &mut self.kind {
            if a.pbe_kbps.is_none() {
                self.size += PBE_OPTION_BYTES;
            }
            a.pbe_kbps = Some((rate_bps / 1000).min(u32::MAX as u64) as u32);
        }
    }

    /// Writes (or overwrites) the XRC option, growing the packet by the
    /// option's bytes the first time. Does nothing to data packets.
    pub fn set_xrc_option(&mut self, opt: XrcOption) {
        if let PacketKind::Ack(a) = &mut self.kind {
            let before = a.xrc.map_or(0, |o| o.wire_bytes());
            self.size = self.size - before + opt.wire_bytes();
            a.xrc = Some(opt);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_data_segment_is_1500_bytes_on_the_wire() {
        let p = Packet::data(FlowId(0), 0, 1448, SimTime::ZERO, false);
        assert_eq!(p.size, 1500);
    }

    #[test]
    fn sack_blocks_and_the_xrc_option_count_toward_the_ack_size() {
        let mut p = Packet::ack(FlowId(0), 0, &[SackBlock { start: 10, end: 20 }], SimTime::ZERO);
        assert_eq!(p.size, 52 + 12);
        p.set_xrc_option(XrcOption::quantized(1_000_000, SimDuration::ZERO));
        assert_eq!(p.size, 52 + 12 + 8);
        p.set_xrc_option(XrcOption::quantized(2_000_000, SimDuration::ZERO));
        assert_eq!(
            p.size,
            52 + 12 + 8,
            "rewriting the option does not grow the packet again"
        );
        // xrc2's air field: two more bytes, counted once.
        let air = XrcOption::quantized(2_000_000, SimDuration::ZERO).with_air(SimDuration::from_micros(8_260));
        assert_eq!(air.air, Some(SimDuration::from_micros(8_200)));
        p.set_xrc_option(air);
        assert_eq!(p.size, 52 + 12 + 8 + 2);
        p.set_xrc_option(air);
        assert_eq!(p.size, 52 + 12 + 8 + 2);
    }

    #[test]
    fn the_xrc_option_carries_kbps_and_tenths_of_a_millisecond() {
        let o = XrcOption::quantized(12_345_678, SimDuration::from_micros(4_321));
        assert_eq!(o.rate_bps, 12_345_000);
        assert_eq!(o.hol, SimDuration::from_micros(4_300));
    }
}
