//! The numbers every run reports: how late packets were released, what
//! crossed in each direction, and what the emulator thread got from the
//! operating system.

use crate::driver::{percentile, Clock, Dir, DirCounts, Emulator, PacketIo, Stall};
use crate::sys::ThreadSetup;

/// Summary of release errors (write time − scheduled time), ns.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ReleaseError {
    pub n: u64,
    pub p50_ns: Option<u64>,
    pub p99_ns: Option<u64>,
    pub p999_ns: Option<u64>,
    pub max_ns: Option<u64>,
    /// Releases later than `late_threshold_ns`.
    pub late: u64,
    pub late_threshold_ns: u64,
}

/// Summary of TTI start lateness (the wall time of the pass that ran a
/// TTI − the TTI's model time), ns; `cellular` topology only.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TtiLateness {
    pub n: u64,
    pub p50_ns: Option<u64>,
    pub p99_ns: Option<u64>,
    pub max_ns: Option<u64>,
    /// TTIs that started later than the late threshold.
    pub late: u64,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunReport {
    /// TTI start lateness (`None`: no cell in the paths).
    pub tti: Option<TtiLateness>,
    /// Model time at the end of the run, ns.
    pub duration_ns: u64,
    pub release: ReleaseError,
    /// Some release was later than the threshold: the emulated link was
    /// not the configured one for those packets.
    pub fell_behind: bool,
    pub down: DirCounts,
    pub up: DirCounts,
    /// The UE side took GSO super-packets (`Options::gso`); `down.written /
    /// down.writes` is then the packets per write.
    pub gso: bool,
    /// Packets inside the paths at the end.
    pub in_flight_at_end: u64,
    pub sleeps: u64,
    pub spins: u64,
    /// Forced pauses of the real-time thread and their total, ns.
    pub pauses: u64,
    pub paused_ns: u64,
    /// CPU time of the emulator thread, ns.
    pub cpu_ns: u64,
    pub thread: ThreadSetup,
    /// ACKs that got the XRC option, and ACKs without room for it.
    pub xrc_written: u64,
    pub xrc_no_room: u64,
    pub xrc_filled: u64,
    /// What the network-assisted schemes' signals did.
    pub signals: crate::signals::SignalCounters,
    pub send_errors: u64,
    pub last_send_error: Option<String>,
    pub path_down: String,
    pub path_up: String,
    /// The longest stalls (longest first, at most 20), the number of
    /// stalls and their total duration, ns.
    pub longest_stalls: Vec<Stall>,
    pub stalls: u64,
    pub stalled_ns: u64,
}

impl RunReport {
    pub fn of<I: PacketIo, C: Clock>(e: &Emulator<I, C>, cpu_ns: u64, thread: ThreadSetup, late_ns: u64) -> RunReport {
        let mut errs = e.release_errors();
        let release = ReleaseError {
            n: errs.len() as u64,
            p50_ns: percentile(&mut errs, 50.0),
            p99_ns: percentile(&mut errs, 99.0),
            p999_ns: percentile(&mut errs, 99.9),
            max_ns: errs.last().copied(),
            late: e.timing().late,
            late_threshold_ns: late_ns,
        };
        let tti = e.cell().map(|c| {
            let mut late = c.series().tti_late_ns;
            TtiLateness {
                n: late.len() as u64,
                late: late.iter().filter(|&&x| x > late_ns).count() as u64,
                p50_ns: percentile(&mut late, 50.0),
                p99_ns: percentile(&mut late, 99.0),
                max_ns: late.last().copied(),
            }
        });
        let (send_errors, last) = e.send_errors();
        let t = e.timing();
        let mut longest = t.stalls.clone();
        longest.sort_by_key(|s| std::cmp::Reverse(s.dur_ns));
        longest.truncate(20);
        RunReport {
            duration_ns: e.ended_ns(),
            fell_behind: release.late > 0 || tti.as_ref().is_some_and(|t| t.late > 0),
            tti,
            release,
            down: e.counts(Dir::Down),
            gso: e.options().gso,
            up: e.counts(Dir::Up),
            in_flight_at_end: e.in_flight(),
            sleeps: e.timing().sleeps,
            spins: e.timing().spins,
            pauses: e.timing().pauses,
            paused_ns: e.timing().paused_ns,
            cpu_ns,
            thread,
            xrc_written: t.xrc_written,
            xrc_no_room: t.xrc_no_room,
            xrc_filled: t.xrc_filled,
            signals: e.signal_counters(),
            send_errors,
            last_send_error: last.map(str::to_string),
            path_down: e.describe(Dir::Down).to_string(),
            path_up: e.describe(Dir::Up).to_string(),
            longest_stalls: longest,
            stalls: t.stalls.len() as u64 + t.stalls_dropped,
            stalled_ns: t.stalls.iter().map(|s| s.dur_ns).sum(),
        }
    }
}
