//! What must hold of a sender between any two events. The world checks it
//! on every run in debug builds (`debug_assertions`), and the fuzzer after
//! every step through the Python binding.
//!
//! 1. The scoreboard's counters (`sacked_out`, `lost_out`, `retrans_out`,
//!    segments waiting for retransmission) agree with its segments, no
//!    SACKed segment is marked lost, and no segment waiting for
//!    retransmission lies below the search hint.
//! 2. `snd_una ≤ snd_nxt ≤ write_end`: nothing is acknowledged that was
//!    not sent, nothing sent that the application did not write.
//! 3. The scoreboard holds exactly the unacknowledged bytes: empty when
//!    `snd_una = snd_nxt`, else its first segment holds `snd_una` and its
//!    last ends at `snd_nxt`.
//! 4. Linux `tcp_packets_in_flight` cannot underflow: `sacked_out +
//!    lost_out ≤ packets_out`.
//! 5. `cwnd ≥ 1` (Linux `tcp_snd_cwnd_set` warns on less) and the bytes
//!    outstanding fit TCP's largest window plus the segment that may start
//!    at its last byte.

use super::TcpSender;
use crate::transport::MAX_WINDOW_BYTES;

impl TcpSender {
    /// Checks the invariants above; the error says which and with what values.
    pub fn check_invariants(&self) -> Result<(), String> {
        let sb = &self.sb;
        if !sb.consistent() {
            return Err(format!(
                "scoreboard counters disagree with its segments (sacked_out {}, lost_out {}, retrans_out {}, \
                 packets_out {})",
                sb.sacked_out(),
                sb.lost_out(),
                sb.retrans_out(),
                sb.packets_out()
            ));
        }
        let (una, nxt, end) = (self.send.snd_una, self.send.snd_nxt, self.send.write_end);
        if !(una <= nxt && nxt <= end) {
            return Err(format!(
                "snd_una {una} <= snd_nxt {nxt} <= write_end {end} does not hold"
            ));
        }
        let spans = match (sb.front(), sb.back()) {
            (Some(first), Some(last)) => first.seq <= una && una < first.end() && last.end() == nxt,
            _ => una == nxt,
        };
        if !spans {
            let held = sb.front().zip(sb.back()).map(|(f, l)| (f.seq, l.end()));
            return Err(match held {
                Some((a, b)) => format!("the scoreboard spans {a}..{b}, the unacknowledged bytes are {una}..{nxt}"),
                None => format!("the scoreboard is empty but bytes {una}..{nxt} are unacknowledged"),
            });
        }
        if sb.sacked_out() as u64 + sb.lost_out() as u64 > sb.packets_out() as u64 {
            return Err(format!(
                "sacked_out {} + lost_out {} > packets_out {}",
                sb.sacked_out(),
                sb.lost_out(),
                sb.packets_out()
            ));
        }
        if self.w.cwnd == 0 {
            return Err("cwnd is 0".into());
        }
        if nxt - una > MAX_WINDOW_BYTES + self.cfg.mss as u64 {
            return Err(format!(
                "{} bytes outstanding, more than TCP's largest window ({MAX_WINDOW_BYTES}) and one segment",
                nxt - una
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{ack, ms, sender, MSS};
    use crate::transport::{SenderOutput, TcpConfig};

    #[test]
    fn a_sender_through_loss_recovery_and_a_timeout_keeps_its_invariants() {
        let mut s = sender("cubic", TcpConfig::default());
        let mut out = SenderOutput::default();
        s.check_invariants().unwrap();
        s.app_write(ms(0), 100 * MSS, &mut out);
        s.check_invariants().unwrap();
        // Segment 0 lost: SACKs of 1..4 mark it lost and it is retransmitted.
        for k in 2..=4 {
            out.clear();
            s.on_ack(ms(50), &ack(0, &[(1, k)], ms(0)), &mut out);
            s.check_invariants().unwrap();
        }
        // A partial cumulative ACK, then a timeout.
        out.clear();
        s.on_ack(ms(60), &ack(3, &[], ms(0)), &mut out);
        s.check_invariants().unwrap();
        out.clear();
        s.on_timer(ms(5000), &mut out);
        s.check_invariants().unwrap();
    }

    #[test]
    fn a_zero_window_or_a_scoreboard_that_misses_bytes_breaks_them() {
        let mut s = sender("newreno", TcpConfig::default());
        let mut out = SenderOutput::default();
        s.app_write(ms(0), 20 * MSS, &mut out);
        s.w.cwnd = 0;
        assert_eq!(s.check_invariants().unwrap_err(), "cwnd is 0");
        s.w.cwnd = 10;
        s.send.snd_nxt += 1;
        let e = s.check_invariants().unwrap_err();
        assert!(e.contains("scoreboard spans 0..14480"), "{e}");
        s.send.snd_nxt = s.send.write_end + 1;
        let e = s.check_invariants().unwrap_err();
        assert!(e.contains("write_end"), "{e}");
    }
}
