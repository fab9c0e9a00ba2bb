//! The uplink a UE's ACKs take to the base station: a buffer that empties
//! only on uplink grants.
//!
//! LTE FDD procedure (TS 36.321 §5.4.4 scheduling request, §5.4.5 buffer
//! status reporting; TS 36.213 §8 "n+4" grant timing), reduced to timing:
//! 1. Data arrives in an empty UE buffer with no grant pending: the UE waits
//!    for its next scheduling-request (SR) opportunity (every `sr_period`,
//!    at a per-UE phase) and sends an SR.
//! 2. The base station answers with a grant `sr_grant_delay` later; the UE
//!    transmits on the PUSCH `grant_tx_delay` after the grant (4 ms in FDD).
//! 3. The UE builds the PUSCH transport block when the grant arrives, so
//!    the PUSCH carries up to `grant_bytes` of what was buffered by then,
//!    plus a buffer status report; if data is left (or arrived after the
//!    block was built), the base station grants again and the next PUSCH is
//!    `bsr_grant_delay` later.
//! 4. The base station has the data one TTI after the PUSCH starts.
//!
//! This is what makes ACK timing jitter by up to an SR period in LTE (Bruhn
//! and Muehleisen, Ericsson, "Behavior of TCP CUBIC in Low-Latency Mobile
//! Radio Networks": "MAC layer effects primary cause of RTT variation").
//!
//! Deviations: no uplink HARQ or uplink channel errors; the grant size is a
//! parameter rather than a scheduling outcome; no semi-persistent or
//! proactive grants.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::duplex::Duplex;
use crate::net::Packet;
use crate::units::{check_range, check_range_u64, SimDuration, SimTime};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct UplinkConfig {
    /// SR periodicity, ms (TS 36.213 Table 10.1.5-1 allows 1, 2, 5, 10, 20, 40, 80).
    pub sr_period_ms: f64,
    /// SR opportunity to grant, ms.
    pub sr_grant_delay_ms: f64,
    /// Grant to PUSCH transmission, ms (FDD: 4).
    pub grant_tx_delay_ms: f64,
    /// PUSCH with leftover data to the next PUSCH, ms.
    pub bsr_grant_delay_ms: f64,
    /// Bytes one grant carries.
    pub grant_bytes: u32,
}

impl Default for UplinkConfig {
    fn default() -> Self {
        UplinkConfig {
            sr_period_ms: 10.0,
            sr_grant_delay_ms: 3.0,
            grant_tx_delay_ms: 4.0,
            bsr_grant_delay_ms: 4.0,
            grant_bytes: 1500,
        }
    }
}

impl UplinkConfig {
    pub fn validate(&self) -> Result<(), String> {
        // TS 36.213 Table 10.1.5-1 goes from 1 to 80 ms; up to 1 s for studies.
        // (NR: down to a slot of numerology 3; the cell checks it is at
        // least its TTI.)
        check_range("sr_period_ms", self.sr_period_ms, 0.125, 1000.0)?;
        // Grant timing is a few TTIs in LTE; a second is far beyond it.
        check_range("sr_grant_delay_ms", self.sr_grant_delay_ms, 0.0, 1000.0)?;
        check_range("grant_tx_delay_ms", self.grant_tx_delay_ms, 0.0, 1000.0)?;
        // At least one TTI (the cell checks it against its TTI): the next
        // PUSCH cannot be in the same TTI.
        check_range("bsr_grant_delay_ms", self.bsr_grant_delay_ms, 0.125, 1000.0)?;
        // Room for a few ACKs, up to 100x LTE's largest uplink transport
        // block (75376 bits, TS 36.213 Table 7.1.7.2.1-1).
        check_range_u64("grant_bytes", self.grant_bytes as u64, 100, 1_000_000)?;
        Ok(())
    }
}

#[derive(Debug)]
pub struct Uplink {
    sr_period: SimDuration,
    sr_phase: SimDuration,
    sr_grant: SimDuration,
    grant_tx: SimDuration,
    bsr_grant: SimDuration,
    tti: SimDuration,
    /// TDD: PUSCH only in U slots, SR only in slots with PUCCH (`None`: FDD).
    tdd: Option<Duplex>,
    grant_bytes: u32,
    /// Buffered packets with their arrival times.
    buffer: VecDeque<(SimTime, Packet)>,
    /// Start of the next PUSCH transmission already granted or requested.
    next_pusch: Option<SimTime>,
    srs_sent: u64,
    /// Sum and count of uplink delays (buffer entry to base station) since
    /// the last `take_delay_stats`.
    delay_sum_s: f64,
    delay_count: u64,
    /// The XRC agent's uplink samples (`agent::AirDelay`) since the last
    /// `take_air_samples`: sum of delays beyond grant_tx + TTI, ns, and count.
    air_sum_ns: u64,
    air_count: u64,
}

impl Uplink {
    /// `sr_phase` places this UE's SR opportunities within the period.
    pub fn new(cfg: &UplinkConfig, tti: SimDuration, sr_phase: SimDuration, duplex: &Duplex) -> Self {
        let ms = |v: f64| SimDuration::try_from_millis_f64(v).expect("validated");
        Uplink {
            sr_period: ms(cfg.sr_period_ms),
            sr_phase,
            sr_grant: ms(cfg.sr_grant_delay_ms),
            grant_tx: ms(cfg.grant_tx_delay_ms),
            bsr_grant: ms(cfg.bsr_grant_delay_ms),
            tti,
            tdd: duplex.is_tdd().then(|| duplex.clone()),
            grant_bytes: cfg.grant_bytes,
            buffer: VecDeque::new(),
            next_pusch: None,
            srs_sent: 0,
            delay_sum_s: 0.0,
            delay_count: 0,
            air_sum_ns: 0,
            air_count: 0,
        }
    }

    /// An ACK enters the UE's uplink buffer. Returns the PUSCH time when a
    /// new one had to be requested (schedule an event then).
    #[must_use]
    pub fn push(&mut self, now: SimTime, pkt: Packet) -> Option<SimTime> {
        self.buffer.push_back((now, pkt));
        if self.next_pusch.is_some() {
            // A PUSCH is coming: the data rides it if its block is not built
            // yet, or the buffer status report it carries asks for more.
            return None;
        }
        let mut sr = now.next_boundary(self.sr_period, self.sr_phase);
        self.srs_sent += 1;
        // Transmissions start on TTI boundaries (TDD: the SR waits for a
        // slot with PUCCH, the PUSCH for a U slot).
        let t = match &self.tdd {
            None => (sr + self.sr_grant + self.grant_tx).next_boundary(self.tti, SimDuration::ZERO),
            Some(d) => {
                sr = d.next_pucch(sr);
                d.next_pusch(sr + self.sr_grant + self.grant_tx)
            }
        };
        self.next_pusch = Some(t);
        Some(t)
    }

    /// The granted PUSCH starts at `now`: returns what it carries (up to
    /// the grant size, at least one packet) and the next PUSCH if data is
    /// left. The packets reach the base station one TTI later.
    pub fn on_pusch(&mut self, now: SimTime, sent: &mut Vec<Packet>) -> Option<SimTime> {
        self.next_pusch = None;
        // The block was built when the grant arrived.
        let built = now - self.grant_tx;
        let mut bytes = 0u32;
        while let Some((arrived, p)) = self.buffer.front() {
            if *arrived > built || (!sent.is_empty() && bytes + p.size > self.grant_bytes) {
                break;
            }
            bytes += p.size;
            let (arrived, p) = self.buffer.pop_front().expect("front exists");
            let delay = (now + self.tti).saturating_since(arrived);
            self.delay_sum_s += delay.as_secs_f64();
            self.delay_count += 1;
            self.air_sum_ns += delay.saturating_sub(self.grant_tx + self.tti).as_nanos();
            self.air_count += 1;
            sent.push(p);
        }
        if self.buffer.is_empty() {
            return None;
        }
        let t = match &self.tdd {
            None => (now + self.bsr_grant).next_boundary(self.tti, SimDuration::ZERO),
            Some(d) => d.next_pusch(now + self.bsr_grant),
        };
        self.next_pusch = Some(t);
        Some(t)
    }

    /// (sum of uplink delays in s, count) since the last call.
    pub fn take_delay_stats(&mut self) -> (f64, u64) {
        let r = (self.delay_sum_s, self.delay_count);
        self.delay_sum_s = 0.0;
        self.delay_count = 0;
        r
    }

    /// The agent's uplink samples since the last call: (sum of the delays
    /// beyond the least uplink delay, grant_tx + TTI; count).
    pub fn take_air_samples(&mut self) -> (SimDuration, u64) {
        let r = (SimDuration::from_nanos(self.air_sum_ns), self.air_count);
        self.air_sum_ns = 0;
        self.air_count = 0;
        r
    }

    pub fn tti(&self) -> SimDuration {
        self.tti
    }
    pub fn buffered(&self) -> usize {
        self.buffer.len()
    }
    pub fn scheduling_requests(&self) -> u64 {
        self.srs_sent
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::FlowId;

    fn ack() -> Packet {
        Packet::ack(FlowId(0), 0, &[], SimTime::ZERO)
    }
    fn ms(v: u64) -> SimTime {
        SimTime::from_nanos(v * 1_000_000)
    }
    fn fdd() -> Duplex {
        Duplex::fdd(SimDuration::from_millis(1))
    }

    #[test]
    fn an_ack_waits_for_the_next_sr_opportunity_then_the_grant_pipeline() {
        let cfg = UplinkConfig::default();
        let mut ul = Uplink::new(&cfg, SimDuration::from_millis(1), SimDuration::from_millis(2), &fdd());
        // Arrives at 3 ms: next SR at 12 ms, grant at 15, PUSCH at 19.
        assert_eq!(ul.push(ms(3), ack()), Some(ms(19)));
        // A second ACK before the grant rides the same PUSCH.
        assert_eq!(ul.push(ms(14), ack()), None);
        // A third, after the block was built at 15 ms, waits for the next one.
        assert_eq!(ul.push(ms(16), ack()), None);
        let mut sent = Vec::new();
        assert_eq!(ul.on_pusch(ms(19), &mut sent), Some(ms(23)));
        assert_eq!(sent.len(), 2);
        sent.clear();
        assert_eq!(ul.on_pusch(ms(23), &mut sent), None);
        assert_eq!(sent.len(), 1);
    }

    #[test]
    fn leftover_data_gets_the_next_grant_from_the_buffer_status_report() {
        let cfg = UplinkConfig {
            grant_bytes: 100,
            ..UplinkConfig::default()
        };
        let mut ul = Uplink::new(&cfg, SimDuration::from_millis(1), SimDuration::ZERO, &fdd());
        let first = ul.push(ms(0), ack()).unwrap();
        let _ = ul.push(ms(0), ack());
        let _ = ul.push(ms(0), ack());
        let mut sent = Vec::new();
        let next = ul.on_pusch(first, &mut sent).unwrap();
        assert_eq!(sent.len(), 1);
        assert_eq!(next, first + SimDuration::from_millis(4));
    }

    #[test]
    fn the_delay_jitters_across_a_whole_sr_period() {
        let cfg = UplinkConfig::default();
        let mut delays = Vec::new();
        for arrival in 0..10u64 {
            let mut ul = Uplink::new(&cfg, SimDuration::from_millis(1), SimDuration::ZERO, &fdd());
            let t = ul.push(ms(arrival) + SimDuration::from_micros(1), ack()).unwrap();
            delays.push(t.saturating_since(ms(arrival)).as_millis_f64());
        }
        let min = delays.iter().cloned().fold(f64::MAX, f64::min);
        let max = delays.iter().cloned().fold(f64::MIN, f64::max);
        assert!(max - min >= 8.0, "jitter {min}..{max}");
    }

    #[test]
    fn a_tdd_ack_pushed_in_a_d_slot_leaves_in_the_next_u_slot_and_its_leftover_in_the_u_slot_after() {
        let slot = SimDuration::from_micros(500);
        let d = Duplex::tdd(
            slot,
            crate::ran::duplex::parse_pattern("DDDSU", slot).unwrap(),
            true,
            true,
        );
        // SR every slot, no grant delays: only the pattern delays the ACK.
        let cfg = UplinkConfig {
            sr_period_ms: 0.5,
            sr_grant_delay_ms: 0.0,
            grant_tx_delay_ms: 0.0,
            bsr_grant_delay_ms: 0.5,
            grant_bytes: 100,
        };
        let mut ul = Uplink::new(&cfg, slot, SimDuration::ZERO, &d);
        let at = |n: u64| SimTime::from_nanos(n * 500_000);
        // Slot 1 is a D slot: the PUSCH is slot 4 (U), not the S slot 3.
        assert_eq!(ul.push(at(1) + SimDuration::from_nanos(1), ack()), Some(at(4)));
        let _ = ul.push(at(1) + SimDuration::from_nanos(2), ack());
        let mut sent = Vec::new();
        // The second ACK does not fit the grant: the next U slot, 9.
        assert_eq!(ul.on_pusch(at(4), &mut sent), Some(at(9)));
        assert_eq!(sent.len(), 1);
    }
}
