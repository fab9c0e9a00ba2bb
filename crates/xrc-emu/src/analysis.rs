//! A TCP sender's view reconstructed from the emulator's capture, computed
//! the way xrc's simulated sender records its own (so that a real run and
//! a simulated run are measured alike):
//!
//! - **RTT samples** as `transport/sender.rs` takes them for `rtt.parquet`
//!   (Linux `tcp_clean_rtx_queue` / `tcp_ack_update_rtt`), at most one per
//!   ACK, at the time the ACK reaches the sender (written to the sender's
//!   device):
//!   1. the ACK newly acknowledges (cumulatively) segments not SACKed
//!      before, and none of the segments it newly acknowledges was ever
//!      sent more than once (Karn's rule): the time since the first send of
//!      the earliest such segment;
//!   2. otherwise, if it newly SACKs segments sent only once: the time since
//!      the send of the lowest such segment;
//!   3. otherwise, if it advances the cumulative ACK and echoes a
//!      timestamp: the time since the first data segment that carried that
//!      TSval (the simulator's TSecr is the exact send time; Linux's TS
//!      clock ticks in milliseconds, so this is the same within one tick).
//!
//!   A segment's send time is when the emulator read it from the sender's
//!   device, an ACK's arrival when it wrote it to that device: the
//!   emulator sits next to the sender with nothing in between but the
//!   device queue, which it drains as packets come.
//! - **retransmissions**: data segments covering bytes already sent;
//! - **delivery**: the receiver's cumulative ACK as it sends it (read from
//!   the receiver's device), the bytes delivered in order to its
//!   application, as `flow_throughput.parquet` counts them;
//! - **drops** in the emulated path, by direction.
//!
//! Sequence numbers are unwrapped to 64 bits relative to the initial
//! sequence number (the SYN's, else the first one seen).

use std::collections::{BTreeMap, HashMap};

use crate::capture::{Fate, Record};
use crate::driver::Dir;
use crate::wire::flags;

/// The sender's view of one TCP flow.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SenderView {
    /// Read time of the first segment with payload, ns.
    pub first_payload_ns: Option<u64>,
    /// (ACK arrival at the sender, RTT sample), ns.
    pub rtt: Vec<(u64, u64)>,
    /// Read times of retransmitted segments, ns.
    pub retransmits: Vec<u64>,
    /// (time the receiver sent it, cumulative bytes acknowledged): one
    /// entry per ACK that advanced the cumulative ACK.
    pub delivered: Vec<(u64, u64)>,
    /// Data segments (with payload) the sender sent.
    pub data_segments: u64,
    /// Drop times, ns, of the flow's packets in the data direction.
    pub data_drops: Vec<u64>,
    /// Drops in the ACK direction.
    pub ack_drops: u64,
}

/// 32-bit sequence numbers to 64-bit offsets from the ISN.
#[derive(Debug)]
struct Unwrap {
    isn: u32,
    high: u64,
}

impl Unwrap {
    fn at(&mut self, x: u32) -> u64 {
        let rel = x.wrapping_sub(self.isn) as u64;
        let base = self.high & !0xffff_ffff;
        let mut v = base + rel;
        if v + (1 << 31) < self.high {
            v += 1 << 32;
        } else if v > self.high + (1 << 31) && v >= 1 << 32 {
            v -= 1 << 32;
        }
        self.high = self.high.max(v);
        v
    }
}

#[derive(Debug)]
struct Seg {
    end: u64,
    /// Read time of its first transmission.
    first_tx: u64,
    sends: u32,
    sacked: bool,
}

/// Reconstructs the sender's view of `flow`, whose data crosses in `data_dir`.
pub fn sender_view<'a>(records: impl IntoIterator<Item = &'a Record>, flow: u32, data_dir: Dir) -> SenderView {
    let mut v = SenderView::default();
    let mine: Vec<&Record> = records.into_iter().filter(|r| r.flow == flow).collect();
    let Some(isn) = mine
        .iter()
        .filter(|r| r.dir == data_dir)
        .filter_map(|r| r.tcp)
        .find(|t| t.has(flags::SYN))
        .or_else(|| mine.iter().filter(|r| r.dir == data_dir).find_map(|r| r.tcp))
        .map(|t| t.seq)
    else {
        return v;
    };
    // Events in time order: a data segment when read, an ACK when written to
    // the sender's device.
    let mut events: Vec<(u64, bool, usize)> = Vec::new();
    for (k, r) in mine.iter().enumerate() {
        if r.tcp.is_none() {
            continue;
        }
        if r.dir == data_dir {
            events.push((r.t_in, false, k));
            if matches!(r.fate, Fate::Dropped(_)) {
                v.data_drops.push(r.t_in);
            }
        } else {
            match r.fate {
                Fate::Delivered => events.push((r.t_out, true, k)),
                Fate::Dropped(_) => v.ack_drops += 1,
                Fate::InFlight => {}
            }
        }
    }
    events.sort_unstable();

    // The receiver's cumulative ACK when sent (whatever became of the ACK).
    let mut un_rcv = Unwrap { isn, high: 0 };
    let mut best = 0u64;
    for r in mine.iter().filter(|r| r.dir != data_dir) {
        let Some(t) = r.tcp else { continue };
        if !t.has(flags::ACK) {
            continue;
        }
        let a = un_rcv.at(t.ack).saturating_sub(1);
        if a > best {
            best = a;
            v.delivered.push((r.t_in, a));
        }
    }

    let mut un = Unwrap { isn, high: 0 };
    let mut segs: BTreeMap<u64, Seg> = BTreeMap::new();
    let mut high = 1u64; // snd_nxt high-water mark; data starts at ISN + 1
    let mut snd_una = 1u64;
    let mut tsval_first: HashMap<u32, u64> = HashMap::new();
    let mut overlapping = Vec::new();
    for (t, is_ack, k) in events {
        let r = mine[k];
        let tcp = r.tcp.expect("filtered");
        if !is_ack {
            if let Some((val, _)) = tcp.ts {
                tsval_first.entry(val).or_insert(r.t_in);
            }
            if tcp.payload == 0 {
                continue;
            }
            let start = un.at(tcp.seq) + tcp.has(flags::SYN) as u64;
            let end = start + tcp.payload as u64;
            v.data_segments += 1;
            v.first_payload_ns.get_or_insert(r.t_in);
            if start < high {
                v.retransmits.push(r.t_in);
                overlapping.clear();
                overlapping.extend(segs.range(..end).filter(|(_, s)| s.end > start).map(|(&k, _)| k));
                for s in &overlapping {
                    segs.get_mut(s).expect("listed").sends += 1;
                }
            }
            if end > high {
                let from = start.max(high);
                segs.insert(
                    from,
                    Seg {
                        end,
                        first_tx: r.t_in,
                        sends: 1,
                        sacked: false,
                    },
                );
                high = end;
            }
            continue;
        }
        if !tcp.has(flags::ACK) {
            continue;
        }
        // SACK tagging first, in sequence order (sender.rs, Linux tcp_sacktag_write_queue).
        let mut blocks: Vec<(u64, u64)> = tcp.sack_blocks().iter().map(|&(l, r)| (un.at(l), un.at(r))).collect();
        blocks.sort_unstable();
        let mut first_sackt: Option<u64> = None;
        for (l, rgt) in blocks {
            if rgt <= snd_una || l >= high {
                continue;
            }
            for (_, s) in segs.range_mut(l..rgt) {
                if s.end <= rgt && !s.sacked {
                    s.sacked = true;
                    if s.sends == 1 {
                        first_sackt.get_or_insert(s.first_tx);
                    }
                }
            }
        }
        // Cumulative ACK (sender.rs, Linux tcp_clean_rtx_queue).
        let ack = un.at(tcp.ack);
        let mut first_ackt: Option<u64> = None;
        let mut acked_retrans = false;
        let advanced = ack > snd_una;
        if advanced {
            while let Some(e) = segs.first_entry() {
                if e.get().end > ack {
                    break;
                }
                let s = e.remove();
                if s.sends > 1 {
                    acked_retrans = true;
                }
                if !s.sacked && s.sends == 1 {
                    first_ackt.get_or_insert(s.first_tx);
                }
            }
            snd_una = ack;
        }
        let since = |x: u64| t.saturating_sub(x);
        let sample = match (first_ackt, acked_retrans) {
            (Some(f), false) => Some(since(f)),
            _ => first_sackt.map(since).or_else(|| {
                let (_, ecr) = tcp.ts?;
                (advanced && ecr != 0).then(|| tsval_first.get(&ecr).map(|&x| since(x)))?
            }),
        };
        if let Some(s) = sample {
            v.rtt.push((t, s));
        }
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::Capture;
    use crate::wire::parse_ipv4;
    use crate::wire::tests::{sack_opt, tcp_packet, ts_opt};

    const ISN: u32 = u32::MAX - 3000; // the sequence space wraps during the test
    const MSS: u32 = 1000;

    /// A tiny exchange builder: data read at `t` (delivered 1 ms later) and
    /// ACKs read from the receiver at `t` and written to the sender at `t_out`.
    struct Ex {
        c: Capture,
    }
    impl Ex {
        fn new() -> Self {
            let mut e = Ex { c: Capture::new(0) };
            let syn = tcp_packet(ISN, 0, flags::SYN, &ts_opt(1, 0), 0);
            let (r, _) = e.c.on_read(0, Dir::Down, &syn, parse_ipv4(&syn).as_ref());
            e.c.on_written(r, 1, 1);
            e
        }
        fn data(&mut self, t: u64, k: u32, tsval: u32, dropped: bool) {
            let p = tcp_packet(
                ISN.wrapping_add(1 + k * MSS),
                1,
                flags::ACK,
                &ts_opt(tsval, 0),
                MSS as usize,
            );
            let (r, _) = self.c.on_read(t, Dir::Down, &p, parse_ipv4(&p).as_ref());
            if dropped {
                self.c.on_dropped(r, 0);
            } else {
                self.c.on_written(r, t + 1, t + 1);
            }
        }
        fn ack(&mut self, t: u64, t_out: u64, acked_segs: u32, sack: &[(u32, u32)], tsecr: u32) {
            let mut o = ts_opt(9, tsecr);
            if !sack.is_empty() {
                let b: Vec<(u32, u32)> = sack
                    .iter()
                    .map(|&(a, b)| (ISN.wrapping_add(1 + a * MSS), ISN.wrapping_add(1 + b * MSS)))
                    .collect();
                o.extend(sack_opt(&b));
            }
            let mut p = tcp_packet(1, ISN.wrapping_add(1 + acked_segs * MSS), flags::ACK, &o, 0);
            // The ACK flows the other way.
            let (s, d) = (p[12..16].to_vec(), p[16..20].to_vec());
            p[12..16].copy_from_slice(&d);
            p[16..20].copy_from_slice(&s);
            let (sp, dp) = (p[20..22].to_vec(), p[22..24].to_vec());
            p[20..22].copy_from_slice(&dp);
            p[22..24].copy_from_slice(&sp);
            let (r, _) = self.c.on_read(t, Dir::Up, &p, parse_ipv4(&p).as_ref());
            self.c.on_written(r, t_out, t_out);
        }
        fn view(&self) -> SenderView {
            sender_view(self.c.records().iter(), 0, Dir::Down)
        }
    }

    #[test]
    fn a_cumulative_ack_is_timed_from_the_earliest_segment_it_newly_covers() {
        let mut e = Ex::new();
        e.data(100, 0, 10, false);
        e.data(200, 1, 10, false);
        e.ack(900, 1000, 2, &[], 10);
        let v = e.view();
        assert_eq!(v.rtt, vec![(1000, 900)]);
        assert_eq!(v.delivered, vec![(900, 2 * MSS as u64)]);
        assert!(v.retransmits.is_empty());
        assert_eq!(v.first_payload_ns, Some(100));
    }

    #[test]
    fn karns_rule_drops_the_cumulative_sample_but_a_sack_or_the_timestamp_stands_in() {
        let mut e = Ex::new();
        e.data(100, 0, 10, true); // lost
        e.data(200, 1, 11, false);
        e.data(300, 2, 12, false);
        e.ack(1200, 1300, 0, &[(1, 2)], 11); // SACKs segment 1: sample 1300 − 200
        e.data(1400, 0, 20, false); // the retransmission
        e.ack(2300, 2400, 3, &[], 20); // covers the retransmitted segment 0: Karn; segment 2 newly acked
        let v = e.view();
        assert_eq!(v.retransmits, vec![1400]);
        assert_eq!(v.data_drops, vec![100]);
        // Second ACK: acked_retrans → no cumulative sample, no new SACK → the
        // timestamp echo (TSval 20 first read at 1400): 2400 − 1400.
        assert_eq!(v.rtt, vec![(1300, 1100), (2400, 1000)]);
    }

    #[test]
    fn an_ack_that_advances_nothing_and_sacks_nothing_gives_no_sample() {
        let mut e = Ex::new();
        e.data(100, 0, 10, false);
        e.data(200, 1, 10, false);
        e.ack(900, 1000, 1, &[], 10);
        e.ack(950, 1050, 1, &[], 10); // duplicate
        assert_eq!(e.view().rtt.len(), 1);
    }
}
