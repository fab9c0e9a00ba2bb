//! The operating system, through `libc` only: the monotonic clock, TUN
//! devices, waiting on them, and the real-time knobs of the emulator
//! thread (CPU affinity, timer slack, `SCHED_FIFO`, its CPU time).
//!
//! Nothing here knows about packets or link models; every call returns an
//! `io::Error` the caller can name.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use crate::driver::{Clock, PacketIo, Side};
use crate::gso::{VnetHdr, F_NEEDS_CSUM, GSO_NONE, VNET_HDR_LEN};

/// Nanoseconds on `CLOCK_MONOTONIC`.
pub fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// Nanoseconds since the Unix epoch (`CLOCK_REALTIME`): pcap timestamps.
pub fn realtime_ns() -> u64 {
    clock_ns(libc::CLOCK_REALTIME)
}

fn clock_ns(id: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec.
    let rc = unsafe { libc::clock_gettime(id, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime cannot fail for a supported clock");
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// The system's monotonic clock.
#[derive(Copy, Clone, Debug, Default)]
pub struct Monotonic;

impl Clock for Monotonic {
    fn now_ns(&self) -> u64 {
        monotonic_ns()
    }
    fn thread_cpu_ns(&self) -> Option<u64> {
        Some(thread_cpu_ns())
    }
    fn set_realtime(&self, priority: Option<i32>) {
        let (policy, p) = match priority {
            Some(p) => (libc::SCHED_FIFO, p),
            None => (libc::SCHED_OTHER, 0),
        };
        let param = libc::sched_param { sched_priority: p };
        // SAFETY: `param` is a valid sched_param; 0 = the calling thread.
        // A refusal leaves the policy as it was: the loop goes on.
        unsafe { libc::sched_setscheduler(0, policy, &param) };
    }
}

/// Longest interface name the kernel accepts (`IFNAMSIZ` − 1).
pub const IFNAME_MAX: usize = 15;

/// A layer-3 TUN device without the packet-information prefix
/// (`IFF_TUN | IFF_NO_PI`): each `read` is one IP packet the kernel routed
/// into the device, each `write` injects one IP packet as if received on
/// it. The device disappears when the descriptor is closed (it is not
/// persistent), so a crash cannot leave it behind. Moving it into another
/// network namespace (`ip link set NAME netns NS`) keeps the descriptor
/// valid.
///
/// With `vnet_hdr` the device is opened with `IFF_VNET_HDR` (in
/// little-endian header mode, `TUNSETVNETLE`): every read and write then
/// starts with a 10-byte `virtio_net_hdr` ([`crate::gso`]). Reads strip it
/// (and refuse a packet it marks as GSO or as needing a checksum, which a
/// device without `TUNSETOFFLOAD` never hands over); plain writes prepend
/// an empty one; [`Tun::send_gso`] writes a TCP super-packet.
#[derive(Debug)]
pub struct Tun {
    fd: OwnedFd,
    name: String,
    vnet_hdr: bool,
}

#[repr(C)]
struct IfReqFlags {
    name: [libc::c_char; libc::IFNAMSIZ],
    flags: libc::c_short,
    _pad: [u8; 22],
}

impl Tun {
    /// Creates the device `name` (non-blocking, close-on-exec), with the
    /// virtio-net header if `vnet_hdr`.
    pub fn create(name: &str, vnet_hdr: bool) -> io::Result<Tun> {
        if name.is_empty() || name.len() > IFNAME_MAX || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("TUN name {name:?}: 1 to {IFNAME_MAX} characters, letters, digits and '-'"),
            ));
        }
        let path = CString::new("/dev/net/tun").expect("no NUL");
        // SAFETY: plain open(2) of a NUL-terminated path.
        let raw = unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC) };
        if raw < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(e.kind(), format!("open /dev/net/tun: {e}")));
        }
        // SAFETY: `raw` is a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let mut req = IfReqFlags {
            name: [0; libc::IFNAMSIZ],
            flags: (libc::IFF_TUN | libc::IFF_NO_PI | if vnet_hdr { libc::IFF_VNET_HDR } else { 0 }) as libc::c_short,
            _pad: [0; 22],
        };
        for (d, s) in req.name.iter_mut().zip(name.bytes()) {
            *d = s as libc::c_char;
        }
        // SAFETY: TUNSETIFF reads a `struct ifreq` (name + flags), which
        // `IfReqFlags` lays out with the kernel's size (40 bytes).
        let rc = unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF, &mut req as *mut IfReqFlags) };
        if rc < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(e.kind(), format!("TUNSETIFF {name}: {e}")));
        }
        if vnet_hdr {
            let le: libc::c_int = 1;
            // SAFETY: TUNSETVNETLE reads one int.
            let rc = unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETVNETLE, &le as *const libc::c_int) };
            if rc < 0 {
                let e = io::Error::last_os_error();
                return Err(io::Error::new(e.kind(), format!("TUNSETVNETLE {name}: {e}")));
            }
        }
        Ok(Tun {
            fd,
            name: name.to_string(),
            vnet_hdr,
        })
    }

    /// Whether reads and writes carry the virtio-net header.
    pub fn vnet_hdr(&self) -> bool {
        self.vnet_hdr
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// One packet, or `None` when nothing is waiting.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        let mut hdr = [0u8; VNET_HDR_LEN];
        let n = if self.vnet_hdr {
            let iov = [
                libc::iovec {
                    iov_base: hdr.as_mut_ptr().cast(),
                    iov_len: VNET_HDR_LEN,
                },
                libc::iovec {
                    iov_base: buf.as_mut_ptr().cast(),
                    iov_len: buf.len(),
                },
            ];
            // SAFETY: both iovecs point to writable buffers of their lengths.
            unsafe { libc::readv(self.fd.as_raw_fd(), iov.as_ptr(), 2) }
        } else {
            // SAFETY: `buf` is valid for `buf.len()` writable bytes.
            unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) }
        };
        if n >= 0 && !self.vnet_hdr {
            return Ok(Some(n as usize));
        }
        if n >= 0 {
            let h = VnetHdr::from_bytes(&hdr);
            if (n as usize) < VNET_HDR_LEN || h.gso_type != GSO_NONE || h.flags & F_NEEDS_CSUM != 0 {
                return Err(io::Error::other(format!(
                    "read from {}: a packet of {n} bytes with virtio-net header {h:?}; without offloads \
                     (TUNSETOFFLOAD) the kernel hands over only segmented, checksummed packets",
                    self.name
                )));
            }
            return Ok(Some(n as usize - VNET_HDR_LEN));
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EAGAIN) | Some(libc::EINTR) => Ok(None),
            _ => Err(e),
        }
    }

    pub fn send(&self, pkt: &[u8]) -> io::Result<()> {
        if self.vnet_hdr {
            let h = VnetHdr::NONE.bytes();
            return self.writev(&[iovec_of(&h), iovec_of(pkt)]);
        }
        loop {
            // SAFETY: `pkt` is valid for `pkt.len()` readable bytes.
            let n = unsafe { libc::write(self.fd.as_raw_fd(), pkt.as_ptr().cast(), pkt.len()) };
            if n >= 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                return Err(e);
            }
        }
    }

    /// Writes one packet made of `parts`, preceded by `hdr` (a device with
    /// the virtio-net header only; one `writev`).
    pub fn send_gso(&self, hdr: &VnetHdr, parts: &[&[u8]]) -> io::Result<()> {
        if !self.vnet_hdr {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!("{}: a GSO write needs a device opened with IFF_VNET_HDR", self.name),
            ));
        }
        let h = hdr.bytes();
        let mut iov: Vec<libc::iovec> = Vec::with_capacity(parts.len() + 1);
        iov.push(iovec_of(&h));
        iov.extend(parts.iter().map(|p| iovec_of(p)));
        self.writev(&iov)
    }

    /// One `writev` of `iov` (whose buffers the caller keeps alive).
    fn writev(&self, iov: &[libc::iovec]) -> io::Result<()> {
        loop {
            // SAFETY: every iovec points to readable bytes of its length that
            // outlive the call (the caller's borrows); writev only reads them.
            let n = unsafe { libc::writev(self.fd.as_raw_fd(), iov.as_ptr(), iov.len() as libc::c_int) };
            if n >= 0 {
                return Ok(());
            }
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EINTR) {
                return Err(e);
            }
        }
    }

    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// An iovec over `b` for `writev` (which only reads it).
fn iovec_of(b: &[u8]) -> libc::iovec {
    libc::iovec {
        iov_base: b.as_ptr() as *mut libc::c_void,
        iov_len: b.len(),
    }
}

/// Blocks until one of `fds` is readable or `timeout_ns` passes
/// (`ppoll(2)`: nanosecond timeout; the thread's timer slack decides how
/// late the wake-up may be).
pub fn wait_readable(fds: &[RawFd], timeout_ns: u64) -> io::Result<()> {
    let mut p: Vec<libc::pollfd> = fds
        .iter()
        .map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let ts = libc::timespec {
        tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: `p` holds `p.len()` pollfds; `ts` is a valid timespec; no signal mask.
    let rc = unsafe { libc::ppoll(p.as_mut_ptr(), p.len() as libc::nfds_t, &ts, std::ptr::null()) };
    if rc < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
    }
    Ok(())
}

/// Sleeps until `deadline_ns` (monotonic clock), whatever the devices do
/// (`clock_nanosleep(2)`, absolute).
pub fn sleep_until(deadline_ns: u64) {
    let ts = libc::timespec {
        tv_sec: (deadline_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: `ts` is a valid timespec; no remainder is asked for with TIMER_ABSTIME.
    while unsafe { libc::clock_nanosleep(libc::CLOCK_MONOTONIC, libc::TIMER_ABSTIME, &ts, std::ptr::null_mut()) }
        == libc::EINTR
    {}
}

/// The kernel's budget for real-time threads: `sched_rt_runtime_us` of
/// every `sched_rt_period_us` (Linux `Documentation/scheduler/sched-rt-group.rst`).
/// `None` when unlimited (-1) or unreadable.
pub fn rt_budget_us() -> Option<(u64, u64)> {
    let read = |f: &str| -> Option<i64> { std::fs::read_to_string(f).ok()?.trim().parse().ok() };
    let runtime = read("/proc/sys/kernel/sched_rt_runtime_us")?;
    let period = read("/proc/sys/kernel/sched_rt_period_us")?;
    (runtime >= 0 && period > 0).then_some((runtime as u64, period as u64))
}

/// The two TUN devices of an emulated path: one on the Internet side (the
/// sender's namespace in the Linux reference harness) and one on the UE
/// side (the receiver's).
#[derive(Debug)]
pub struct TunPair {
    pub inet: Tun,
    pub ue: Tun,
}

impl PacketIo for TunPair {
    fn recv(&mut self, side: Side, buf: &mut [u8]) -> io::Result<Option<usize>> {
        match side {
            Side::Inet => self.inet.recv(buf),
            Side::Ue => self.ue.recv(buf),
        }
    }
    fn send(&mut self, side: Side, pkt: &[u8]) -> io::Result<()> {
        match side {
            Side::Inet => self.inet.send(pkt),
            Side::Ue => self.ue.send(pkt),
        }
    }
    fn send_gso(&mut self, side: Side, hdr: &VnetHdr, parts: &[&[u8]]) -> io::Result<()> {
        match side {
            Side::Inet => self.inet.send_gso(hdr, parts),
            Side::Ue => self.ue.send_gso(hdr, parts),
        }
    }
    fn wait(&mut self, deadline_ns: u64, busy: bool) -> io::Result<()> {
        if busy {
            return Ok(());
        }
        let now = monotonic_ns();
        if deadline_ns <= now {
            return Ok(());
        }
        wait_readable(&[self.inet.raw_fd(), self.ue.raw_fd()], deadline_ns - now)
    }
    fn pause(&mut self, deadline_ns: u64) {
        sleep_until(deadline_ns);
    }
}

/// What could be set up for the emulator thread (each knob is best effort:
/// the run reports which ones took).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ThreadSetup {
    /// The CPU the thread is pinned to.
    pub cpu: Option<usize>,
    /// `SCHED_FIFO` priority, if granted.
    pub fifo_priority: Option<i32>,
    /// Timer slack, ns (the kernel's default is 50 µs).
    pub timer_slack_ns: Option<u64>,
    /// Why a knob did not take.
    pub notes: Vec<String>,
}

/// Pins the calling thread to `cpu`, sets its timer slack to 1 ns and, if
/// `fifo_priority` is given, asks for `SCHED_FIFO` at that priority.
pub fn setup_thread(cpu: Option<usize>, fifo_priority: Option<i32>) -> ThreadSetup {
    let mut s = ThreadSetup::default();
    if let Some(c) = cpu {
        // SAFETY: cpu_set_t is plain data; CPU_SET writes within it for c < CPU_SETSIZE.
        let rc = unsafe {
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            if c < libc::CPU_SETSIZE as usize {
                libc::CPU_SET(c, &mut set);
                libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set)
            } else {
                -1
            }
        };
        if rc == 0 {
            s.cpu = Some(c);
        } else {
            s.notes
                .push(format!("pinning to CPU {c}: {}", io::Error::last_os_error()));
        }
    }
    // SAFETY: prctl(PR_SET_TIMERSLACK) takes one integer argument.
    let rc = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
    if rc == 0 {
        s.timer_slack_ns = Some(1);
    } else {
        s.notes.push(format!("timer slack: {}", io::Error::last_os_error()));
    }
    if let Some(p) = fifo_priority {
        let param = libc::sched_param { sched_priority: p };
        // SAFETY: `param` is a valid sched_param; 0 = the calling thread.
        let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
        if rc == 0 {
            s.fifo_priority = Some(p);
        } else {
            s.notes.push(format!("SCHED_FIFO {p}: {}", io::Error::last_os_error()));
        }
    }
    s
}

/// CPU time the calling thread has used (user + system), ns.
pub fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

/// Number of CPUs this process may run on.
pub fn online_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
