//! The structs the BPF programs and the loader share, as `bpf/xrc_abi.h`
//! declares them (`#[repr(C)]`, no implicit padding; the sizes are checked
//! against the header's by `the_structs_have_the_sizes_the_bpf_header_gives`).

/// One entry of the `xrc_cfg` map (`struct xrc_cfg`).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Cfg {
    pub budget_ns: u64,
    pub feedback_timeout_ns: u64,
    pub probe_fp: u64,
    pub ramp_milli: u32,
    pub unfair_gain_milli: u32,
    pub unfair_after_rtts: u32,
    pub trace: u32,
    pub max_rate_kbps: u64,
    pub max_hol_ns: u64,
    pub tag_k0: u64,
    pub tag_k1: u64,
    pub tag_on: u32,
    pub pad: u32,
}

/// `enum xrc_counter`, in order, with the names `xrc kernel status` prints.
pub const COUNTERS: [&str; 15] = [
    "feedback_valid",
    "feedback_applied",
    "feedback_superseded",
    "ignored_zero_rate",
    "ignored_rate_above_max",
    "ignored_hol_above_max",
    "ignored_malformed",
    "unfilled_placeholders",
    "fallbacks_to_tcp",
    "rounds",
    "sockets",
    "trace_records_lost",
    "ignored_bad_tag",
    "ignored_replayed",
    "ignored_untagged",
];
pub const NCOUNTERS: usize = COUNTERS.len();
pub const FB_APPLIED: usize = 1;
pub const FALLBACKS: usize = 8;

/// A socket's key in `xrc_socks` (`struct xrc_sock_key`).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct SockKey {
    /// IPv4 addresses in network order, as the kernel keeps them.
    pub saddr: u32,
    pub daddr: u32,
    pub sport: u16,
    pub dport: u16,
    pub pad: u32,
}

impl SockKey {
    pub fn local(&self) -> std::net::SocketAddrV4 {
        std::net::SocketAddrV4::new(u32::from_be(self.saddr).into(), self.sport)
    }
    pub fn remote(&self) -> std::net::SocketAddrV4 {
        std::net::SocketAddrV4::new(u32::from_be(self.daddr).into(), self.dport)
    }
}

/// A socket's summary (`struct xrc_sock_info`).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct SockInfo {
    pub counters: [u64; NCOUNTERS],
    pub updated_ns: u64,
    pub cwnd: u32,
    pub rate_kbps: u32,
    pub hol_us: u32,
    pub min_rtt_us: u32,
    pub sigma_us: u32,
    pub mode: u8,
    pub bottleneck: u8,
    pub closed: u8,
    pub pad: u8,
}

/// The simulator's `cc::xrc::Mode` names, in `XM_*` order.
pub const MODES: [&str; 6] = ["reno", "ramp", "probe", "hold", "unfair", "internet"];

/// Trace hooks (`XH_*`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Hook {
    Feedback = 1,
    PktsAcked = 2,
    CongAvoid = 3,
    Ssthresh = 4,
    SetState = 5,
    Undo = 6,
    Init = 7,
    Release = 8,
}

impl Hook {
    pub fn from_u8(v: u8) -> Option<Hook> {
        Some(match v {
            1 => Hook::Feedback,
            2 => Hook::PktsAcked,
            3 => Hook::CongAvoid,
            4 => Hook::Ssthresh,
            5 => Hook::SetState,
            6 => Hook::Undo,
            7 => Hook::Init,
            8 => Hook::Release,
            _ => return None,
        })
    }
}

/// One trace record (`struct xrc_trace`).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Trace {
    pub now_ns: u64,
    pub sock: u64,
    pub hook: u8,
    pub mode_after: u8,
    pub ca_state: u8,
    pub cwnd_limited: u8,
    pub arg: u32,
    pub rtt_us: i32,
    pub fb_rate_kbps: u32,
    pub fb_hol_tenths: u32,
    pub snd_una: u32,
    pub snd_nxt: u32,
    pub delivered: u32,
    pub mss: u32,
    pub in_flight: u32,
    pub cwnd_before: u32,
    pub ssthresh_before: u32,
    pub cnt_before: u32,
    pub clamp: u32,
    pub cwnd_after: u32,
    pub ssthresh_after: u32,
    pub cnt_after: u32,
    pub ret: u32,
}

pub const TRACE_BYTES: usize = std::mem::size_of::<Trace>();

impl Trace {
    /// The record in `b` (little-endian, as the ring buffer and trace files hold it).
    pub fn from_bytes(b: &[u8]) -> Option<Trace> {
        if b.len() < TRACE_BYTES {
            return None;
        }
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
        Some(Trace {
            now_ns: u64_at(0),
            sock: u64_at(8),
            hook: b[16],
            mode_after: b[17],
            ca_state: b[18],
            cwnd_limited: b[19],
            arg: u32_at(20),
            rtt_us: u32_at(24) as i32,
            fb_rate_kbps: u32_at(28),
            fb_hol_tenths: u32_at(32),
            snd_una: u32_at(36),
            snd_nxt: u32_at(40),
            delivered: u32_at(44),
            mss: u32_at(48),
            in_flight: u32_at(52),
            cwnd_before: u32_at(56),
            ssthresh_before: u32_at(60),
            cnt_before: u32_at(64),
            clamp: u32_at(68),
            cwnd_after: u32_at(72),
            ssthresh_after: u32_at(76),
            cnt_after: u32_at(80),
            ret: u32_at(84),
        })
    }

    /// The record's bytes, as `from_bytes` reads them.
    pub fn to_bytes(&self) -> [u8; TRACE_BYTES] {
        let mut b = [0u8; TRACE_BYTES];
        b[0..8].copy_from_slice(&self.now_ns.to_le_bytes());
        b[8..16].copy_from_slice(&self.sock.to_le_bytes());
        b[16] = self.hook;
        b[17] = self.mode_after;
        b[18] = self.ca_state;
        b[19] = self.cwnd_limited;
        let words = [
            self.arg,
            self.rtt_us as u32,
            self.fb_rate_kbps,
            self.fb_hol_tenths,
            self.snd_una,
            self.snd_nxt,
            self.delivered,
            self.mss,
            self.in_flight,
            self.cwnd_before,
            self.ssthresh_before,
            self.cnt_before,
            self.clamp,
            self.cwnd_after,
            self.ssthresh_after,
            self.cnt_after,
            self.ret,
        ];
        for (i, w) in words.iter().enumerate() {
            b[20 + 4 * i..24 + 4 * i].copy_from_slice(&w.to_le_bytes());
        }
        b
    }
}

/// Shim event kinds (`SE_*`).
pub const SE_INIT: u8 = 1;
pub const SE_PRE: u8 = 2;
pub const SE_SSTHRESH: u8 = 3;
pub const SE_SET_STATE: u8 = 4;
pub const SE_CWND_EVENT: u8 = 5;
pub const SE_UNDO: u8 = 6;
pub const SE_POST: u8 = 7;
pub const SE_RELEASE: u8 = 8;

/// An optional option field that was absent (`XRC_ABSENT`).
pub const ABSENT: u32 = u32::MAX;

/// Shim event flags (`SF_*`).
pub const SF_FEEDBACK: u8 = 0x01;
pub const SF_SLOW_PATH: u8 = 0x02;
pub const SF_WIN_UPDATE: u8 = 0x04;
pub const SF_ECE: u8 = 0x08;
pub const SF_CWND_LIMITED: u8 = 0x10;
pub const SF_APP_LIMITED: u8 = 0x20;
pub const SF_RETRANS: u8 = 0x40;
pub const SF_HAS_SAMPLE: u8 = 0x80;
/// `ShimEvent::flags2`: PRE carries ABC's marks, a PBE-CC report.
pub const SF2_ABC: u32 = 0x01;
pub const SF2_PBE: u32 = 0x02;

/// The shim's counters (`SC_*`), with the names status prints.
pub const SHIM_COUNTERS: [&str; 7] = [
    "events",
    "events_lost",
    "decisions_applied",
    "acks_without_decision",
    "acks_with_stale_decision",
    "acks_in_prr",
    "short_options_malformed",
];

/// One shim event (`struct shim_event`).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct ShimEvent {
    pub now_ns: u64,
    pub seq: u64,
    pub key: SockKey,
    pub kind: u8,
    pub ca_state: u8,
    pub arg: u8,
    pub flags: u8,
    pub cwnd: u32,
    pub ssthresh: u32,
    pub mss: u32,
    pub in_flight: u32,
    pub packets_out: u32,
    pub sacked_out: u32,
    pub lost_out: u32,
    pub retrans_out: u32,
    pub snd_una: u32,
    pub snd_nxt: u32,
    pub delivered: u32,
    pub lost: u32,
    pub srtt_us: u32,
    pub pkts_acked: u32,
    pub rtt_us: i32,
    pub fb_rate_kbps: u32,
    pub fb_hol_tenths: u32,
    pub rs_delivered: i32,
    pub rs_interval_us: u32,
    pub rs_prior_delivered: u32,
    pub rs_acked_sacked: u32,
    pub rs_losses: u32,
    pub rs_prior_in_flight: u32,
    pub applied_cwnd: u32,
    pub applied_ssthresh: u32,
    pub fb_air_tenths: u32,
    pub fb_room: u32,
    pub fb_pbe_kbps: u32,
    pub fb_abc_accel: u16,
    pub fb_abc_brake: u16,
    pub flags2: u32,
    pub pad2: u32,
}

impl ShimEvent {
    /// The event in `b` (the ring buffer's bytes, this machine's order).
    pub fn from_bytes(b: &[u8]) -> Option<ShimEvent> {
        if b.len() < std::mem::size_of::<ShimEvent>() {
            return None;
        }
        // SAFETY: ShimEvent is plain data of that size (checked above);
        // every bit pattern is a valid value; the read is unaligned-safe.
        Some(unsafe { std::ptr::read_unaligned(b.as_ptr() as *const ShimEvent) })
    }
}

/// The agent's decision for a socket (`struct shim_decision`).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct ShimDecision {
    pub seq: u64,
    pub event_ns: u64,
    pub pacing_bps: u64,
    pub cwnd: u32,
    pub ssthresh: u32,
    pub controls: u8,
    /// Decisions made on out-of-band reports after event `seq` (modulo
    /// 256): the shim applies a decision whose `seq` or `oob` is new.
    pub oob: u8,
    /// The algorithm's smallest TSO burst (the kernel's `min_tso_segs`
    /// hook), segments; 0: the kernel's default.
    pub min_tso_segs: u8,
    pub pad: [u8; 5],
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_structs_have_the_sizes_the_bpf_header_gives() {
        // bpf/xrc_abi.h: 7 × 8 + 6 × 4 bytes; 16; 15 × 8 + 8 + 5 × 4 + 4; 88.
        assert_eq!(std::mem::size_of::<Cfg>(), 80);
        assert_eq!(std::mem::size_of::<SockKey>(), 16);
        assert_eq!(std::mem::size_of::<SockInfo>(), 152);
        assert_eq!(TRACE_BYTES, 88);
        assert_eq!(std::mem::size_of::<ShimEvent>(), 160);
        assert_eq!(std::mem::size_of::<ShimDecision>(), 40);
    }

    #[test]
    fn a_trace_record_reads_back_from_its_bytes() {
        let t = Trace {
            now_ns: 123_456_789_012,
            sock: 0xdead_beef_0001,
            hook: Hook::CongAvoid as u8,
            mode_after: 2,
            ca_state: 0,
            cwnd_limited: 1,
            arg: 2,
            rtt_us: -1,
            fb_rate_kbps: 30_000,
            fb_hol_tenths: 42,
            snd_una: u32::MAX - 5,
            snd_nxt: 7,
            delivered: 1000,
            mss: 1448,
            in_flight: 80,
            cwnd_before: 90,
            ssthresh_before: u32::MAX >> 1,
            cnt_before: 3,
            clamp: 10_000,
            cwnd_after: 91,
            ssthresh_after: u32::MAX >> 1,
            cnt_after: 0,
            ret: 0,
        };
        assert_eq!(Trace::from_bytes(&t.to_bytes()), Some(t));
    }
}
