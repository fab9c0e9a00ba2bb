//! Packets as the simulator sees them: a TCP/IP header abstraction with byte
//! sizes that match the wire, and no payload bytes.
//!
//! Sizes (IPv4, TCP with the timestamps option as Linux negotiates it):
//! data = 20 (IP) + 20 (TCP) + 12 (timestamps) + payload; an ACK is 52 bytes
//! plus 2 + 8·n bytes of SACK option (padded to 4 with two NOPs) plus the XRC
//! option when the base station writes one.
//!
//! Every packet is copied several times on its way (into a component's
//! effect list, a queue, a pipe), so the ACK keeps its options in the form
//! they have on the wire, and the packet stays at 72 bytes
//! (`a_packet_is_72_bytes`):
//!
//! - SACK block edges are 32-bit sequence numbers, read back relative to
//!   the cumulative ACK as a TCP sender reads them (RFC 793 §3.3
//!   modular comparison; Linux `tcp_sacktag_write_queue` takes them
//!   against `snd_una`). Exact for every edge within 2^31 bytes of the
//!   ACK, which a window of at most 2^30 bytes (RFC 7323 §2.3; the world
//!   gives every flow at most that) keeps every SACK block. A block that
//!   is not (only a D-SACK for a segment that 2 GiB of data overtook could
//!   be) cannot be written in 32 bits and is left out of the ACK; Linux's
//!   `tcp_is_sackblock_valid` ignores a D-SACK wholly below `undo_marker`
//!   (where the last recovery began), as such an old one would be.
//! - The XRC option is its fields (kbit/s in 32 bits, 0.1 ms in 16 bits),
//!   as [`XrcOption::quantized`] makes it; [`AckHeader::xrc`] gives it
//!   back exactly.
//! - The PBE-CC report is kbit/s in 32 bits.

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
/// The option's buffer-room field (`xrc2` flows of a UE with more than one
/// active flow): full-size SDUs in 16 bits.
pub const XRC_ROOM_FIELD_BYTES: u32 = 2;
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

/// The explicit feedback the XRC agent piggybacks on an ACK, as the sender
/// reads it.
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
    /// The free room of the UE's RLC transmit buffer, in full-size SDUs
    /// (saturating at 65 534), written with the air field only while the
    /// UE has more than one active flow (`ran::agent`, "buffer room");
    /// `None` otherwise.
    pub room: Option<u16>,
}

/// 0.1 ms in 16 bits, saturating at 6553.5 ms.
fn tenths_of_ms(d: SimDuration) -> u16 {
    (d.as_nanos() / 100_000).min(u16::MAX as u64) as u16
}

fn from_tenths_of_ms(t: u16) -> SimDuration {
    SimDuration::from_nanos(t as u64 * 100_000)
}

/// kbit/s in 32 bits, saturating at u32::MAX.
fn kbps(rate_bps: u64) -> u32 {
    (rate_bps / 1000).min(u32::MAX as u64) as u32
}

impl XrcOption {
    /// Quantizes to what fits in the option's fields (rate in kbit/s,
    /// saturating at u32::MAX; HoL in 0.1 ms, saturating at 6553.5 ms), so
    /// the sender sees exactly what a real option would carry.
    pub fn quantized(rate_bps: u64, hol: SimDuration) -> Self {
        XrcWire::new(rate_bps, hol).read()
    }

    /// Adds the air-delay field, quantized like HoL (0.1 ms, saturating at
    /// 6553.5 ms).
    pub fn with_air(mut self, air: SimDuration) -> Self {
        self.air = Some(from_tenths_of_ms(tenths_of_ms(air)));
        self
    }

    /// Adds the buffer-room field: `sdus` full-size SDUs, saturating at
    /// 65 534 (the wire keeps 65 535 for "absent").
    pub fn with_room(mut self, sdus: u64) -> Self {
        self.room = Some(sdus.min(NO_ROOM as u64 - 1) as u16);
        self
    }

    /// Bytes the option takes on the wire.
    pub fn wire_bytes(&self) -> u32 {
        XRC_OPTION_BYTES
            + if self.air.is_some() { XRC_AIR_FIELD_BYTES } else { 0 }
            + if self.room.is_some() { XRC_ROOM_FIELD_BYTES } else { 0 }
    }
}

/// The XRC option's fields as they are on the wire.
#[derive(Copy, Clone, PartialEq, Eq, Debug)]
struct XrcWire {
    rate_kbps: u32,
    hol_tenths: u16,
    air_tenths: Option<u16>,
    /// The buffer-room field, [`NO_ROOM`] when absent (so the packet keeps
    /// its size).
    room: u16,
}

/// The wire's buffer-room value for "no field".
const NO_ROOM: u16 = u16::MAX;

impl XrcWire {
    fn new(rate_bps: u64, hol: SimDuration) -> Self {
        XrcWire {
            rate_kbps: kbps(rate_bps),
            hol_tenths: tenths_of_ms(hol),
            air_tenths: None,
            room: NO_ROOM,
        }
    }

    /// What fits of `opt` (all of it when it is [`XrcOption::quantized`]).
    fn write(opt: &XrcOption) -> Self {
        XrcWire {
            air_tenths: opt.air.map(tenths_of_ms),
            room: opt.room.unwrap_or(NO_ROOM),
            ..XrcWire::new(opt.rate_bps, opt.hol)
        }
    }

    fn read(&self) -> XrcOption {
        XrcOption {
            rate_bps: self.rate_kbps as u64 * 1000,
            hol: from_tenths_of_ms(self.hol_tenths),
            air: self.air_tenths.map(from_tenths_of_ms),
            room: (self.room != NO_ROOM).then_some(self.room),
        }
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

/// A SACK block's edges as 32-bit sequence numbers.
#[derive(Copy, Clone, PartialEq, Eq, Debug, Default)]
struct SackWire {
    start: u32,
    end: u32,
}

/// The 64-bit sequence number within 2^31 bytes of `ack` whose low 32
/// bits are `seq` (RFC 793 §3.3: sequence numbers compared modulo 2^32).
fn unwrap_seq(ack: u64, seq: u32) -> u64 {
    ack.wrapping_add(seq.wrapping_sub(ack as u32) as i32 as i64 as u64)
}

#[derive(Clone, Debug, PartialEq)]
pub struct AckHeader {
    /// Cumulative acknowledgment: next byte expected.
    pub ack: u64,
    /// Timestamp echo reply (TSecr), RFC 7323 §4.3.
    pub ts_ecr: SimTime,
    sack: [SackWire; MAX_SACK_BLOCKS],
    /// Written by the XRC agent at the base station.
    xrc: Option<XrcWire>,
    /// The UE's PBE-CC capacity estimate for this flow, kbit/s as on the
    /// wire, when `pbe` is set.
    pbe_kbps: u32,
    /// ABC marks of the data this ACK acknowledges (echoed by the receiver).
    pub abc_accelerate: u16,
    pub abc_brake: u16,
    sack_len: u8,
    pbe: bool,
}

/// An ACK's SACK blocks, read back to 64-bit sequence numbers, in the
/// order the receiver wrote them.
#[derive(Copy, Clone, Debug, Default)]
pub struct SackBlocks {
    blocks: [SackBlock; MAX_SACK_BLOCKS],
    len: u8,
}

impl std::ops::Deref for SackBlocks {
    type Target = [SackBlock];
    fn deref(&self) -> &[SackBlock] {
        &self.blocks[..self.len as usize]
    }
}

impl std::ops::DerefMut for SackBlocks {
    fn deref_mut(&mut self) -> &mut [SackBlock] {
        &mut self.blocks[..self.len as usize]
    }
}

impl IntoIterator for SackBlocks {
    type Item = SackBlock;
    type IntoIter = std::iter::Take<std::array::IntoIter<SackBlock, MAX_SACK_BLOCKS>>;
    fn into_iter(self) -> Self::IntoIter {
        self.blocks.into_iter().take(self.len as usize)
    }
}

impl AckHeader {
    pub fn sack_blocks(&self) -> SackBlocks {
        let mut out = SackBlocks {
            len: self.sack_len,
            ..SackBlocks::default()
        };
        for (b, w) in out.blocks.iter_mut().zip(&self.sack[..self.sack_len as usize]) {
            *b = SackBlock {
                start: unwrap_seq(self.ack, w.start),
                end: unwrap_seq(self.ack, w.end),
            };
        }
        out
    }

    /// The XRC option, if the agent wrote one.
    pub fn xrc(&self) -> Option<XrcOption> {
        self.xrc.map(|w| w.read())
    }

    /// The UE's PBE-CC report (kbit/s), if it wrote one.
    pub fn pbe_kbps(&self) -> Option<u32> {
        self.pbe.then_some(self.pbe_kbps)
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

    /// An ACK with the first [`MAX_SACK_BLOCKS`] of `sack` that 32-bit
    /// sequence numbers can carry (every block within 2^31 bytes of `ack`:
    /// see the module's doc).
    pub fn ack(flow: FlowId, ack: u64, sack: &[SackBlock], ts_ecr: SimTime) -> Packet {
        let mut blocks = [SackWire::default(); MAX_SACK_BLOCKS];
        let mut n = 0;
        for b in sack {
            if n == MAX_SACK_BLOCKS {
                break;
            }
            let w = SackWire {
                start: b.start as u32,
                end: b.end as u32,
            };
            if unwrap_seq(ack, w.start) == b.start && unwrap_seq(ack, w.end) == b.end {
                blocks[n] = w;
                n += 1;
            }
        }
        let sack_bytes = if n == 0 { 0 } else { 4 + 8 * n as u32 };
        Packet {
            flow,
            size: TCP_IP_HEADER_BYTES + sack_bytes,
            kind: PacketKind::Ack(AckHeader {
                ack,
                ts_ecr,
                sack: blocks,
                xrc: None,
                pbe_kbps: 0,
                abc_accelerate: 0,
                abc_brake: 0,
                sack_len: n as u8,
                pbe: false,
            }),
        }
    }

    pub fn is_data(&self) -> bool {
        matches!(self.kind, PacketKind::Data(_))
    }

    /// Writes (or overwrites) the PBE-CC capacity report of an ACK.
    pub fn set_pbe_option(&mut self, rate_bps: u64) {
        if let PacketKind::Ack(a) = &mut self.kind {
            if !a.pbe {
                self.size += PBE_OPTION_BYTES;
            }
            a.pbe = true;
            a.pbe_kbps = kbps(rate_bps);
        }
    }

    /// Writes (or overwrites) the XRC option, growing the packet by the
    /// option's bytes the first time. Does nothing to data packets. The
    /// fields are written as the wire carries them (see
    /// [`XrcOption::quantized`], which this leaves unchanged).
    pub fn set_xrc_option(&mut self, opt: XrcOption) {
        if let PacketKind::Ack(a) = &mut self.kind {
            let before = a.xrc().map_or(0, |o| o.wire_bytes());
            self.size = self.size - before + opt.wire_bytes();
            a.xrc = Some(XrcWire::write(&opt));
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
        // The buffer-room field (xrc2 in a shared UE): two more.
        let room = air.with_room(70_000);
        assert_eq!(room.room, Some(65_534), "saturates at 65 534 SDUs");
        p.set_xrc_option(room);
        assert_eq!(p.size, 52 + 12 + 8 + 2 + 2);
        let PacketKind::Ack(a) = &p.kind else { unreachable!() };
        assert_eq!(a.xrc(), Some(room));
        p.set_xrc_option(air);
        assert_eq!(p.size, 52 + 12 + 8 + 2);
    }

    #[test]
    fn the_xrc_option_carries_kbps_and_tenths_of_a_millisecond() {
        let o = XrcOption::quantized(12_345_678, SimDuration::from_micros(4_321));
        assert_eq!(o.rate_bps, 12_345_000);
        assert_eq!(o.hol, SimDuration::from_micros(4_300));
    }

    #[test]
    fn a_packet_is_72_bytes() {
        // Every packet is copied into effect lists, queues and pipes: a
        // field that grows it should be a decision (docs/performance.md).
        assert_eq!(std::mem::size_of::<Packet>(), 72);
    }

    fn blocks_of(p: &Packet) -> Vec<SackBlock> {
        match &p.kind {
            PacketKind::Ack(a) => {
                let v = a.sack_blocks().to_vec();
                assert_eq!(a.sack_blocks().into_iter().collect::<Vec<_>>(), v);
                v
            }
            PacketKind::Data(_) => panic!("not an ack"),
        }
    }

    #[test]
    fn sack_blocks_read_back_exactly_above_and_below_the_ack_and_across_2_to_the_32() {
        let b = |start: u64, end: u64| SackBlock { start, end };
        for ack in [
            0,
            1000,
            (1 << 32) - 500,
            (1 << 32) + 7,
            u64::MAX / 2,
            u64::MAX - (1 << 31),
        ] {
            let mut blocks = vec![b(ack + 1448, ack + 2896), b(ack + (1 << 30), ack + (1 << 30) + 1448)];
            if ack >= 1 << 30 {
                // A D-SACK for data the ACK already covers, as far down as 2^30.
                blocks.insert(0, b(ack - (1 << 30), ack - (1 << 30) + 1448));
            }
            let p = Packet::ack(FlowId(0), ack, &blocks, SimTime::ZERO);
            assert_eq!(blocks_of(&p), blocks, "ack {ack}");
            assert_eq!(p.size, 52 + 4 + 8 * blocks.len() as u32);
        }
    }

    #[test]
    fn a_sack_block_32_bits_cannot_carry_is_left_out() {
        let far = SackBlock { start: 10, end: 1458 };
        let near = SackBlock {
            start: (3 << 31) + 1448,
            end: (3 << 31) + 2896,
        };
        let p = Packet::ack(FlowId(0), 3 << 31, &[far, near], SimTime::ZERO);
        assert_eq!(blocks_of(&p), vec![near]);
        assert_eq!(p.size, 52 + 12);
    }

    #[test]
    fn only_the_first_three_sack_blocks_are_carried() {
        let blocks: Vec<SackBlock> = (1..5)
            .map(|k| SackBlock {
                start: k * 3000,
                end: k * 3000 + 1000,
            })
            .collect();
        let p = Packet::ack(FlowId(0), 1000, &blocks, SimTime::ZERO);
        assert_eq!(blocks_of(&p), blocks[..3]);
        assert_eq!(p.size, 52 + 4 + 24);
    }

    #[test]
    fn the_ack_gives_back_the_xrc_option_and_the_pbe_report_it_was_given() {
        let mut p = Packet::ack(FlowId(0), 0, &[], SimTime::ZERO);
        let PacketKind::Ack(a) = &p.kind else { unreachable!() };
        assert_eq!((a.xrc(), a.pbe_kbps()), (None, None));
        for (rate, hol, air) in [
            (0, 0, None),
            (12_345_678, 4_321, Some(8_260)),
            (u64::MAX, u64::MAX / 1000, Some(u64::MAX / 1000)),
        ] {
            let mut o = XrcOption::quantized(rate, SimDuration::from_micros(hol));
            if let Some(a) = air {
                o = o.with_air(SimDuration::from_micros(a));
            }
            p.set_xrc_option(o);
            p.set_pbe_option(rate);
            let PacketKind::Ack(a) = &p.kind else { unreachable!() };
            assert_eq!(a.xrc(), Some(o));
            assert_eq!(a.pbe_kbps(), Some((rate / 1000).min(u32::MAX as u64) as u32));
            assert_eq!(p.size, 52 + o.wire_bytes() + PBE_OPTION_BYTES);
        }
        let o = XrcOption::quantized(u64::MAX, SimDuration::MAX);
        assert_eq!(o.rate_bps, u32::MAX as u64 * 1000);
        assert_eq!(o.hol, SimDuration::from_micros(6_553_500));
    }
}
