//! The sender's configuration: what a scenario's `[flows.tcp]` table sets.
//! Nothing here changes while a connection runs.

use serde::{Deserialize, Serialize};

use super::clock::TimerClock;
use crate::net::packet::TCP_IP_HEADER_BYTES;
use crate::transport::rtt::{RtoRule, RttConfig};
use crate::transport::{MAX_WINDOW_BYTES, MAX_WINDOW_SEGMENTS};
use crate::units::{check_range, check_range_u64, SimDuration, MAX_SPAN_MS};

/// How losses are detected when SACK is in use.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum LossDetection {
    /// RACK (RFC 8985 §6), Linux's default since 4.18: a segment is lost
    /// when one sent after it was delivered and a reordering window has
    /// passed; also finds lost retransmissions.
    #[default]
    Rack,
    /// RFC 6675 `IsLost`: three SACKed segments above a hole (ns-3's rule).
    Dupthresh,
}

/// How losses are recovered.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "lowercase")]
pub enum Recovery {
    /// SACK scoreboard (RFC 6675) with PRR (RFC 6937), as Linux.
    Sack,
    /// No SACK: NewReno fast recovery with window inflation (RFC 6582).
    Newreno,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct TcpConfig {
    /// Payload bytes per full segment.
    pub mss: u32,
    /// Initial window, segments (RFC 6928: 10).
    pub initial_cwnd: u32,
    pub recovery: Recovery,
    /// Loss detection with SACK (`"rack"` or `"dupthresh"`).
    pub loss_detection: LossDetection,
    /// Duplicate ACKs / SACKed segments that make a hole a loss.
    pub dupthresh: u32,
    /// Linux `tcp_rto_min` (`TCP_RTO_MIN`, 200 ms); RFC 6298's minimum RTO.
    pub min_rto_ms: f64,
    /// RTO before the first RTT sample (Linux `TCP_TIMEOUT_INIT`, 1 s).
    pub initial_rto_ms: f64,
    /// Upper bound of the RTO and its backoff (Linux `TCP_RTO_MAX`, 120 s).
    pub max_rto_ms: f64,
    /// How the RTO's minimum applies: `"linux"` floors the variance term
    /// (srtt + max(rttvar, rto_min) per round, `tcp_rtt_estimator`) and
    /// resets the backoff only on a valid RTT sample (`tcp_ack_update_rtt`);
    /// `"rfc6298"` clamps the whole RTO, max(rto_min, srtt + 4·rttvar), and
    /// resets the backoff on every cumulative ACK (ns-3).
    pub rto_rule: RtoRule,
    /// `"jiffies"`: RTO, TLP and RACK timers count whole jiffies and fire on
    /// the kernel timer wheel's ticks (Linux); `"exact"`: nanosecond timers.
    pub timer_clock: TimerClock,
    /// Linux `CONFIG_HZ`, jiffies per second, for `timer_clock = "jiffies"`.
    /// 250 is Debian's kernel configuration and this project's reference
    /// machine's.
    pub timer_hz: u32,
    /// F-RTO (RFC 5682 §3, SACK-enhanced; Linux `tcp_frto = 2`): after a
    /// timeout, send new data instead of retransmitting, and undo the
    /// timeout if data never retransmitted is then acknowledged. Needs
    /// `undo` and SACK.
    pub frto: bool,
    /// Tail loss probe (RFC 8985 §7; Linux `tcp_early_retrans = 3`): when
    /// no ACK comes for about two RTTs, send one new segment or resend the
    /// last one so that a lost tail is found without waiting for the RTO.
    /// Needs SACK.
    pub tlp: bool,
    /// Undo a window reduction proved spurious by D-SACKs or timestamps
    /// (Linux `tcp_try_undo_*`, always on).
    pub undo: bool,
    /// Pace at Linux's default rate (2× cwnd/srtt in slow start, 1.2× after)
    /// when the algorithm sets no pacing rate itself.
    pub pacing: bool,
    /// RFC 7661 / Linux `tcp_slow_start_after_idle`.
    pub slow_start_after_idle: bool,
    /// `TCP_NODELAY`: every write leaves at once, however short. `false`
    /// (Linux's default) runs Nagle's algorithm with Minshall's variant:
    /// a short tail waits while a short segment sent earlier is
    /// unacknowledged, and writes made meanwhile fill it to full segments
    /// (Linux `tcp_nagle_test`).
    pub nodelay: bool,
    /// TSO/GSO, on in Linux by default: a paced flow of an algorithm that
    /// runs in the Linux kernel (BBR, BBRv3; CUBIC, Reno and the others when
    /// `pacing` is on) sends its segments in bursts of Linux's skb size,
    /// back to back, the next burst one burst's length later at the pacing
    /// rate (`tcp_tso_autosize`: `max(pacing_rate >> 10 / mss, 2)`; BBR's
    /// `bbr_tso_segs_goal`): 2 segments at cellular rates. Algorithms whose
    /// reference is not the kernel pace every segment on their own either
    /// way. `false` paces every segment on its own.
    pub tso: bool,
    /// Receiver's advertised window; `None` = unlimited.
    pub rwnd_bytes: Option<u64>,
    /// Initial slow-start threshold, segments (Linux: a route's `ssthresh`
    /// metric); `None` = infinite. The XRC paper starts competitors with
    /// one segment so they skip slow start.
    pub initial_ssthresh: Option<u32>,
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            mss: 1448,
            initial_cwnd: 10,
            recovery: Recovery::Sack,
            loss_detection: LossDetection::Rack,
            dupthresh: 3,
            min_rto_ms: 200.0,
            initial_rto_ms: 1000.0,
            max_rto_ms: 120_000.0,
            rto_rule: RtoRule::Linux,
            timer_clock: TimerClock::Jiffies,
            timer_hz: 250,
            frto: true,
            tlp: true,
            undo: true,
            pacing: false,
            slow_start_after_idle: true,
            nodelay: false,
            tso: true,
            rwnd_bytes: None,
            initial_ssthresh: None,
        }
    }
}

impl TcpConfig {
    pub fn validate(&self) -> Result<(), String> {
        // Linux's smallest MSS (TCP_MIN_MSS, 88) to a 65535-byte IP packet.
        check_range_u64("mss", self.mss as u64, 88, 65_535 - TCP_IP_HEADER_BYTES as u64)?;
        // The initial window may not exceed TCP's largest window.
        let max_iw = (MAX_WINDOW_BYTES / self.mss as u64).min(MAX_WINDOW_SEGMENTS as u64);
        check_range_u64("initial_cwnd", self.initial_cwnd as u64, 1, max_iw)?;
        if let Some(w) = self.rwnd_bytes {
            // At least one segment (a smaller window never lets one out), at
            // most the largest window TCP can advertise (RFC 7323).
            check_range_u64("rwnd_bytes", w, self.mss as u64, MAX_WINDOW_BYTES)?;
        }
        if self.initial_ssthresh == Some(0) {
            return Err("initial_ssthresh must be at least 1 segment, got 0".into());
        }
        if self.dupthresh == 0 {
            return Err("dupthresh must be at least 1".into());
        }
        for (n, v) in [
            ("min_rto_ms", self.min_rto_ms),
            ("initial_rto_ms", self.initial_rto_ms),
            ("max_rto_ms", self.max_rto_ms),
        ] {
            // One millisecond (a jiffy at HZ=1000; a timer that rounds to
            // zero nanoseconds would fire at the same instant forever) to
            // the longest run.
            check_range(n, v, 1.0, MAX_SPAN_MS)?;
        }
        // One tick a second to 100 kHz (a 10 µs jiffy; kernels use 100 to
        // 1000): at any of them the timer wheel's coarsest level still holds
        // the longest RTO.
        check_range_u64("timer_hz", self.timer_hz as u64, 1, 100_000)?;
        if self.min_rto_ms > self.max_rto_ms {
            return Err(format!(
                "min_rto_ms ({}) exceeds max_rto_ms ({})",
                self.min_rto_ms, self.max_rto_ms
            ));
        }
        Ok(())
    }

    pub(super) fn rtt_config(&self) -> RttConfig {
        RttConfig {
            rule: self.rto_rule,
            min_rto: self.min_rto(),
        }
    }
    pub(super) fn min_rto(&self) -> SimDuration {
        SimDuration::try_from_millis_f64(self.min_rto_ms).unwrap_or(SimDuration::from_millis(200))
    }
    pub(super) fn initial_rto(&self) -> SimDuration {
        SimDuration::try_from_millis_f64(self.initial_rto_ms).unwrap_or(SimDuration::from_secs(1))
    }
    pub(super) fn max_rto(&self) -> SimDuration {
        SimDuration::try_from_millis_f64(self.max_rto_ms).unwrap_or(SimDuration::from_secs(120))
    }
}
