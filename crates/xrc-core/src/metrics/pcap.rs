//! Packet captures of a simulated run (`output.pcap`): for each flow, what
//! a tap at its sender and a tap at its UE would see, as two pcap files
//! that Wireshark, tcpdump, tcptrace or captcp read as they read a real
//! capture (`docs/outputs.md`, "Packet captures").
//!
//! - `flow{k}-sender.pcap`: flow `k`'s data segments as they leave its
//!   sender and its ACKs as they reach it (with the XRC option the base
//!   station wrote);
//! - `flow{k}-ue.pcap`: the data segments as they reach the receiver (the
//!   UE; in the wired topology the host at the end of the path) and the
//!   ACKs as they leave it.
//!
//! The file format is libpcap's classic one (the pcap-savefile(5) manual
//! page, <https://www.tcpdump.org/manpages/pcap-savefile.5.html>): a
//! 24-byte header with the nanosecond-resolution magic number 0xa1b23c4d
//! (the simulator's time is integer nanoseconds), version 2.4, a snapshot
//! length of [`SNAPLEN`] and link type `LINKTYPE_RAW` (101: each packet
//! begins with its IPv4 header); then one 16-byte record header per packet
//! (seconds and nanoseconds of simulated time since the start of the run,
//! bytes kept, length on the wire) and its bytes, written in the
//! machine's byte order, as libpcap writes them. The packet's headers are
//! [`crate::net::wire::encode`]'s (IPv4, RFC 791; TCP, RFC 9293; the
//! timestamps option, RFC 7323; SACK, RFC 2018; the XRC option): only they
//! are kept, the payload is cut (the record's original length is the whole
//! packet's).
//!
//! Address plan ([`endpoints`]), the emulator's within 10.77.0.0/16: every
//! sender is 10.77.0.1 port [`SENDER_PORT`]; UE `u` is 10.77.0.0 + 2 + `u`
//! (UE 0 is 10.77.0.2, as in the emulator; UE 253 is 10.77.0.255); a flow
//! without a UE (the wired topology) is received at 10.77.0.2; flow `k`'s
//! receiver port is [`RECEIVER_PORT_BASE`] + `k`, so each flow is its own
//! connection. The window field is the flow's receive window
//! (`tcp.rwnd_bytes`, by default 2^30 bytes) scaled by 2^[`WINDOW_SCALE`]
//! (what the SYN, not simulated, would have negotiated: a reader told the
//! scale shows the window in bytes).
//!
//! Files are written as the run goes through a buffer each ([`BUF_BYTES`]),
//! so a capture's memory does not grow with the run; a write that fails
//! (a full disk) stops the run with an error naming the file.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::net::wire::{self, Endpoints};
use crate::net::Packet;
use crate::units::SimTime;

/// Bytes of each packet kept: the longest IPv4 and TCP headers.
pub const SNAPLEN: u32 = wire::MAX_HEADER_BYTES as u32;
/// `LINKTYPE_RAW`: raw IPv4.
pub const LINKTYPE_RAW: u32 = 101;
/// The nanosecond-resolution pcap magic number.
pub const MAGIC_NANOS: u32 = 0xa1b2_3c4d;
/// Every sender's port (iperf3's).
pub const SENDER_PORT: u16 = 5201;
/// Flow `k`'s receiver port is this plus `k` (the dynamic port range).
pub const RECEIVER_PORT_BASE: u16 = 49152;
/// The window scale the window fields assume (RFC 7323 §2.3's largest).
pub const WINDOW_SCALE: u32 = 14;
/// At most this many flows are captured (two open files each).
pub const MAX_FLOWS: usize = 250;
/// Each file's write buffer.
pub const BUF_BYTES: usize = 64 * 1024;

/// Flow `k`'s ends (see the module's doc); `ue` is its UE's index.
pub fn endpoints(k: usize, ue: Option<usize>) -> Endpoints {
    let at = |host: u32| {
        let a = u32::from_be_bytes([10, 77, 0, 0]) + host;
        a.to_be_bytes()
    };
    Endpoints {
        sender: at(1),
        receiver: at(2 + ue.unwrap_or(0) as u32),
        sender_port: SENDER_PORT,
        receiver_port: RECEIVER_PORT_BASE + k as u16,
    }
}

/// The window field for a receive window of `bytes` bytes.
pub fn window_field(bytes: u64) -> u16 {
    (bytes >> WINDOW_SCALE).min(u16::MAX as u64) as u16
}

/// A write to a capture file that failed.
#[derive(Debug)]
pub struct PcapError {
    pub path: PathBuf,
    pub error: io::Error,
}

impl std::fmt::Display for PcapError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "output.pcap: cannot write {}: {}", self.path.display(), self.error)
    }
}

/// One pcap file, written as packets come.
pub struct PcapFile {
    path: PathBuf,
    out: BufWriter<File>,
}

impl PcapFile {
    /// Creates (or truncates) the file at `path` and writes the pcap header.
    pub fn create(path: PathBuf) -> Result<PcapFile, PcapError> {
        let file = File::create(&path).map_err(|error| PcapError {
            path: path.clone(),
            error,
        })?;
        let mut f = PcapFile {
            path,
            out: BufWriter::with_capacity(BUF_BYTES, file),
        };
        let mut h = [0u8; 24];
        h[0..4].copy_from_slice(&MAGIC_NANOS.to_ne_bytes());
        h[4..6].copy_from_slice(&2u16.to_ne_bytes());
        h[6..8].copy_from_slice(&4u16.to_ne_bytes());
        // thiszone and sigfigs 0.
        h[16..20].copy_from_slice(&SNAPLEN.to_ne_bytes());
        h[20..24].copy_from_slice(&LINKTYPE_RAW.to_ne_bytes());
        f.write(&h)?;
        Ok(f)
    }

    fn write(&mut self, b: &[u8]) -> Result<(), PcapError> {
        self.out.write_all(b).map_err(|error| PcapError {
            path: self.path.clone(),
            error,
        })
    }

    /// A packet seen at `t`: its `bytes` (at most [`SNAPLEN`]) of `orig_len`.
    pub fn record(&mut self, t: SimTime, bytes: &[u8], orig_len: u32) -> Result<(), PcapError> {
        let ns = t.as_nanos();
        let mut h = [0u8; 16];
        h[0..4].copy_from_slice(&((ns / 1_000_000_000) as u32).to_ne_bytes());
        h[4..8].copy_from_slice(&((ns % 1_000_000_000) as u32).to_ne_bytes());
        h[8..12].copy_from_slice(&(bytes.len() as u32).to_ne_bytes());
        h[12..16].copy_from_slice(&orig_len.to_ne_bytes());
        self.write(&h)?;
        self.write(bytes)
    }

    /// Writes out what the buffer holds.
    pub fn flush(&mut self) -> Result<(), PcapError> {
        self.out.flush().map_err(|error| PcapError {
            path: self.path.clone(),
            error,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// One flow's two taps.
struct FlowTaps {
    ends: Endpoints,
    window: u16,
    sender: PcapFile,
    ue: PcapFile,
}

/// Every flow's taps: the world shows them each packet as it passes a
/// flow's sender or UE.
pub struct PcapTaps {
    flows: Vec<FlowTaps>,
}

/// What the taps need to know of a flow.
#[derive(Copy, Clone, Debug)]
pub struct TapFlow {
    /// The flow's UE, if it has one.
    pub ue: Option<usize>,
    /// The receive window it advertises, bytes.
    pub rwnd_bytes: u64,
}

impl PcapTaps {
    /// Creates `dir` (and its parents) and the two files of each flow (at
    /// most [`MAX_FLOWS`] flows, which scenario validation checks).
    pub fn create(dir: &Path, flows: &[TapFlow]) -> Result<PcapTaps, PcapError> {
        if flows.len() > MAX_FLOWS {
            return Err(PcapError {
                path: dir.to_path_buf(),
                error: io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("at most {MAX_FLOWS} flows are captured, got {}", flows.len()),
                ),
            });
        }
        std::fs::create_dir_all(dir).map_err(|error| PcapError {
            path: dir.to_path_buf(),
            error,
        })?;
        let mut taps = Vec::with_capacity(flows.len());
        for (k, f) in flows.iter().enumerate() {
            taps.push(FlowTaps {
                ends: endpoints(k, f.ue),
                window: window_field(f.rwnd_bytes),
                sender: PcapFile::create(dir.join(format!("flow{k}-sender.pcap")))?,
                ue: PcapFile::create(dir.join(format!("flow{k}-ue.pcap")))?,
            });
        }
        Ok(PcapTaps { flows: taps })
    }

    /// `p` of flow `k` passes its sender (data leaving, an ACK arriving).
    pub fn at_sender(&mut self, now: SimTime, k: usize, p: &Packet) -> Result<(), PcapError> {
        let t = &mut self.flows[k];
        let h = wire::encode(p, &t.ends, t.window);
        t.sender.record(now, h.as_bytes(), h.total_len())
    }

    /// `p` of flow `k` passes its UE (data arriving, an ACK leaving).
    pub fn at_ue(&mut self, now: SimTime, k: usize, p: &Packet) -> Result<(), PcapError> {
        let t = &mut self.flows[k];
        let h = wire::encode(p, &t.ends, t.window);
        t.ue.record(now, h.as_bytes(), h.total_len())
    }

    /// Writes out every file's buffer.
    pub fn flush(&mut self) -> Result<(), PcapError> {
        for t in &mut self.flows {
            t.sender.flush()?;
            t.ue.flush()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::FlowId;

    #[test]
    fn the_address_plan_is_the_emulators_within_10_77_0_0_16() {
        let e = endpoints(3, Some(0));
        assert_eq!((e.sender, e.receiver), ([10, 77, 0, 1], [10, 77, 0, 2]));
        assert_eq!((e.sender_port, e.receiver_port), (5201, 49155));
        assert_eq!(endpoints(0, Some(253)).receiver, [10, 77, 0, 255]);
        assert_eq!(endpoints(0, Some(999)).receiver, [10, 77, 3, 233]);
        assert_eq!(endpoints(0, None).receiver, [10, 77, 0, 2]);
        assert_eq!(window_field(1 << 30), u16::MAX);
        assert_eq!(window_field(1 << 20), 64);
    }

    #[test]
    fn a_file_has_the_nanosecond_header_and_one_record_per_packet_cut_to_its_headers() {
        let dir = std::env::temp_dir().join(format!("xrc-pcap-test-{}", std::process::id()));
        let flows = [TapFlow {
            ue: Some(0),
            rwnd_bytes: 1 << 20,
        }];
        let mut taps = PcapTaps::create(&dir, &flows).unwrap();
        let p = Packet::data(FlowId(0), 0, 1448, SimTime::ZERO, false);
        taps.at_sender(SimTime::from_nanos(2_000_000_007), 0, &p).unwrap();
        taps.flush().unwrap();
        let b = std::fs::read(dir.join("flow0-sender.pcap")).unwrap();
        let u32_at = |i: usize| u32::from_ne_bytes(b[i..i + 4].try_into().unwrap());
        assert_eq!(u32_at(0), 0xa1b2_3c4d);
        assert_eq!((u32_at(16), u32_at(20)), (80, 101));
        assert_eq!((u32_at(24), u32_at(28)), (2, 7), "seconds and nanoseconds");
        assert_eq!((u32_at(32), u32_at(36)), (52, 1500), "kept and original length");
        assert_eq!(b.len(), 24 + 16 + 52);
        assert_eq!(std::fs::read(dir.join("flow0-ue.pcap")).unwrap().len(), 24);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_write_that_fails_is_an_error_naming_the_file() {
        if !Path::new("/dev/full").exists() {
            return;
        }
        let dir = std::env::temp_dir().join(format!("xrc-pcap-full-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // Writing to /dev/full fails with ENOSPC, as on a full disk.
        std::os::unix::fs::symlink("/dev/full", dir.join("flow0-ue.pcap")).unwrap();
        let flows = [TapFlow {
            ue: None,
            rwnd_bytes: 1 << 20,
        }];
        let mut taps = PcapTaps::create(&dir, &flows).unwrap();
        let e = taps.flush().unwrap_err();
        assert_eq!(e.path, dir.join("flow0-ue.pcap"));
        assert_eq!(e.error.raw_os_error(), Some(28), "ENOSPC");
        assert!(e.to_string().contains("flow0-ue.pcap"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
