//! From a resolved xrc scenario to the two emulated paths, built from the
//! same configuration fields and the same core models as the simulator's
//! `scenario::World` builds them, so that one scenario describes both runs.
//!
//! | topology | Internet → UE (data)                         | UE → Internet (ACKs)                         |
//! |----------|----------------------------------------------|----------------------------------------------|
//! | `wired`  | `Link` (internet.rate_mbps, delay_ms, buffer) | `Link` (internet.reverse_rate_mbps, delay_ms) |
//! | `trace`  | `Link` (internet.*), then the trace access's downlink queue (trace.downlink, trace.buffer_*; ABC marks there) | the trace access's uplink: a queue on trace.uplink (trace.uplink_buffer_*) or, without one, a delay (trace.uplink_delay_ms), then its XRC agent (trace.agent); then `Link` (internet.*) |
//! | `cellular` | `Link` (internet.*), then the cell's downlink (RLC, scheduler, HARQ, decoding) | the cell's uplink (SR, grant, PUSCH, air), then `Link` (internet.*) |
//!
//! In the `trace` and `cellular` rows both directions are one component,
//! the core's `ran::trace_access::TraceAccess` or
//! `ran::cell_access::CellAccess`, the very components the simulator runs
//! (see [`crate::access`]).
//!
//! With the sender on the Internet side and the receiver on the UE side,
//! the `trace` rows are Mahimahi's `mm-delay D mm-link UP DOWN` with the
//! receiver inside: data crosses the delay and then the downlink trace's
//! queue; ACKs cross the uplink trace's queue and then the delay.
//!
//! Not emulated (an error names the field): per-flow extra RTT (the
//! emulator does not give each 5-tuple its own access pipe).

use xrc_core::net::{LinkConfig, QueueLimit};
use xrc_core::ran::trace_access::TraceUplink;
use xrc_core::ran::trace_link::Trace;
use xrc_core::scenario::access::{trace_access_config, TraceTexts as CoreTexts};
use xrc_core::scenario::config::Topology;
use xrc_core::scenario::ScenarioConfig;
use xrc_core::units::{BitRate, SimDuration};

use crate::access::AccessHandle;
use crate::stage::{LinkStage, Path};

/// The contents of the trace files a `trace` scenario names
/// (`trace.downlink`, `trace.uplink`); the caller reads them, so tests and
/// the Python front end can pass text. A trace named but not given is an
/// error.
#[derive(Clone, Debug, Default)]
pub struct TraceTexts {
    pub downlink: Option<String>,
    pub uplink: Option<String>,
}

/// The two paths and a one-line description of each.
pub struct Paths {
    pub down: Path,
    pub up: Path,
    pub describe_down: String,
    pub describe_up: String,
    /// The base station both paths cross: the cell (`cellular`) or the
    /// trace access (`trace`); `None` on a wired path.
    pub cell: Option<AccessHandle>,
}

fn ms(field: &str, v: f64) -> Result<SimDuration, String> {
    SimDuration::try_from_millis_f64(v).ok_or_else(|| format!("{field}: {v} ms is not a valid duration"))
}

fn rate(field: &str, v: Option<f64>) -> Result<Option<BitRate>, String> {
    v.map(|r| BitRate::try_from_mbps(r).ok_or_else(|| format!("{field}: {r} Mbit/s is not a valid rate")))
        .transpose()
}

fn describe_limit(limit: QueueLimit) -> String {
    let mut q = Vec::new();
    if let Some(p) = limit.packets {
        q.push(format!("{p} packets"));
    }
    if let Some(b) = limit.bytes {
        q.push(format!("{b} bytes"));
    }
    if q.is_empty() {
        "unlimited queue".to_string()
    } else {
        format!("drop-tail {}", q.join(" / "))
    }
}

fn describe_link(rate: Option<f64>, delay_ms: f64, limit: QueueLimit) -> String {
    let r = rate.map_or("unlimited rate".to_string(), |r| format!("{r} Mbit/s"));
    format!("link({r}, {delay_ms} ms, {})", describe_limit(limit))
}

/// Builds the paths of `cfg` (validated here again).
pub fn build_paths(cfg: &ScenarioConfig, traces: &TraceTexts) -> Result<Paths, String> {
    cfg.validate()?;
    for (k, f) in cfg.flows.iter().enumerate() {
        if f.extra_rtt_ms != 0.0 {
            return Err(format!(
                "flows.{k}.extra_rtt_ms: per-flow extra delay is not emulated (got {} ms); use internet.delay_ms",
                f.extra_rtt_ms
            ));
        }
    }
    let i = &cfg.internet;
    let limit = QueueLimit {
        packets: i.buffer_packets,
        bytes: i.buffer_bytes,
    };
    let delay = ms("internet.delay_ms", i.delay_ms)?;
    let fwd_cfg = LinkConfig {
        rate: rate("internet.rate_mbps", i.rate_mbps)?,
        delay,
        limit,
    };
    let rev_cfg = LinkConfig {
        rate: rate("internet.reverse_rate_mbps", i.reverse_rate_mbps)?,
        delay,
        limit,
    };
    let d_fwd = describe_link(i.rate_mbps, i.delay_ms, limit);
    let d_rev = describe_link(i.reverse_rate_mbps, i.delay_ms, limit);
    match cfg.topology {
        Topology::Wired => Ok(Paths {
            down: Path::new(vec![Box::new(LinkStage::new(&fwd_cfg))]),
            up: Path::new(vec![Box::new(LinkStage::new(&rev_cfg))]),
            describe_down: d_fwd,
            describe_up: d_rev,
            cell: None,
        }),
        Topology::Trace => {
            let t = cfg.trace.as_ref().expect("validated");
            // The caller reads the trace files (the emulator does not look
            // for them itself).
            if traces.downlink.is_none() {
                return Err(format!(
                    "trace.downlink: the contents of {:?} were not given",
                    t.downlink
                ));
            }
            if let (Some(path), None) = (&t.uplink, &traces.uplink) {
                return Err(format!("trace.uplink: the contents of {path:?} were not given"));
            }
            // The simulator's trace access itself, built by the same
            // function from the same fields: the queues, the agent, ABC.
            let tc = trace_access_config(
                cfg,
                CoreTexts {
                    downlink: traces.downlink.as_deref(),
                    uplink: traces.uplink.as_deref(),
                },
            )?;
            let describe_trace = |tr: &Trace, limit: QueueLimit| {
                format!(
                    "trace({} opportunities per {} ms, {:.3} Mbit/s, {})",
                    tr.ms.len(),
                    tr.period_ms,
                    tr.mean_rate_bps() * 1e-6,
                    describe_limit(limit)
                )
            };
            let d_trace = describe_trace(&tc.downlink, tc.downlink_limit);
            let mut d_up = vec![match &tc.uplink {
                TraceUplink::Trace(tr, limit) => describe_trace(tr, *limit),
                TraceUplink::Delay(_) => format!("pipe({} ms)", t.uplink_delay_ms),
            }];
            if tc.agent.enabled {
                d_up.push("XRC agent".to_string());
            }
            d_up.push(d_rev);
            let bs = AccessHandle::trace(tc);
            bs.reserve(cfg.duration_s);
            let (down, up) = bs.stages();
            Ok(Paths {
                down: Path::new(vec![Box::new(LinkStage::new(&fwd_cfg)), Box::new(down)]),
                up: Path::new(vec![Box::new(up), Box::new(LinkStage::new(&rev_cfg))]),
                describe_down: format!("{d_fwd} -> {d_trace}"),
                describe_up: d_up.join(" -> "),
                cell: Some(bs),
            })
        }
        Topology::Cellular => {
            let cell = AccessHandle::new(cfg)?;
            cell.reserve(cfg.duration_s);
            let (down, up) = cell.stages();
            let c = cfg.cell.as_ref().expect("validated");
            let d_cell = format!(
                "cell({} PRBs, {} UEs, {} scheduler, RLC {})",
                c.prbs(),
                cfg.ues.len(),
                serde_name(&c.scheduler),
                describe_limit(QueueLimit {
                    packets: c.rlc.buffer_packets,
                    bytes: c.rlc.buffer_bytes
                })
            );
            Ok(Paths {
                down: Path::new(vec![Box::new(LinkStage::new(&fwd_cfg)), Box::new(down)]),
                up: Path::new(vec![Box::new(up), Box::new(LinkStage::new(&rev_cfg))]),
                describe_down: format!("{d_fwd} -> {d_cell} downlink"),
                describe_up: format!("{d_cell} uplink -> {d_rev}"),
                cell: Some(cell),
            })
        }
    }
}

fn serde_name<T: std::fmt::Debug>(v: &T) -> String {
    format!("{v:?}").to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;
    use xrc_core::units::SimTime;

    fn cfg(json: &str) -> ScenarioConfig {
        ScenarioConfig::resolve(json).unwrap()
    }

    #[test]
    fn a_wired_scenario_gives_one_link_each_way() {
        let c = cfg(r#"{"seed":1,"duration_s":1,"topology":"wired",
                "internet":{"rate_mbps":20,"delay_ms":20,"buffer_packets":67},
                "flows":[{"cc":"cubic"}]}"#);
        let p = build_paths(&c, &TraceTexts::default()).unwrap();
        assert_eq!(p.down.stages().len(), 1);
        assert_eq!(p.up.stages().len(), 1);
        assert!(p.describe_down.contains("20 Mbit/s") && p.describe_down.contains("67 packets"));
    }

    #[test]
    fn a_trace_scenario_puts_the_delay_before_the_downlink_queue_and_after_the_uplink_queue() {
        let c = cfg(r#"{"seed":1,"duration_s":1,"topology":"trace",
                "internet":{"delay_ms":5,"buffer_packets":null},
                "trace":{"downlink":"x.down","uplink":"x.up","buffer_bytes":150000},
                "flows":[{"cc":"cubic","ue":0}]}"#);
        let texts = TraceTexts {
            downlink: Some("1\n2\n".into()),
            uplink: Some("1\n".into()),
        };
        let p = build_paths(&c, &texts).unwrap();
        let kinds = |p: &Path| p.stages().iter().map(|s| s.kind()).collect::<Vec<_>>();
        assert_eq!(kinds(&p.down), vec!["link", "trace-downlink"]);
        assert_eq!(kinds(&p.up), vec!["trace-uplink", "link"]);
        assert!(
            p.describe_up.starts_with("trace(1 opportunities per 1 ms"),
            "{}",
            p.describe_up
        );
        assert!(
            p.describe_up.contains("XRC agent"),
            "the agent is on by default: {}",
            p.describe_up
        );
        let mut c = c;
        c.trace.as_mut().unwrap().uplink = None;
        let p = build_paths(&c, &texts).unwrap();
        assert!(
            p.describe_up.starts_with("pipe(0 ms) -> XRC agent"),
            "without an uplink trace, the fixed delay: {}",
            p.describe_up
        );
    }

    fn ip_packet(size: u32) -> xrc_core::net::Packet {
        // A TUN read without the packet information header: `size` is the
        // IP length, as the driver sets it.
        let mut p = xrc_core::net::Packet::data(xrc_core::net::FlowId(0), 0, 0, SimTime::ZERO, false);
        p.size = size;
        p
    }

    fn at_ms(v: f64) -> SimTime {
        SimTime::from_nanos((v * 1e6).round() as u64)
    }

    /// Offers `n` packets of `size` IP bytes at `t` and runs the path to
    /// `until`: (release times in ms, drops).
    fn push_through(path: &mut Path, n: usize, size: u32, t: SimTime, until: SimTime) -> (Vec<f64>, usize) {
        let (mut rel, mut drop) = (Vec::new(), Vec::new());
        for _ in 0..n {
            path.enqueue(t, ip_packet(size), &mut rel, &mut drop);
        }
        path.advance_to(until, &mut rel, &mut drop);
        (rel.iter().map(|(t, _)| t.as_nanos() as f64 / 1e6).collect(), drop.len())
    }

    #[test]
    fn a_validate_linux_smooth_case_serializes_1500_byte_reads_at_20_mbit_s_behind_67_waiting_packets() {
        // wired-20mbit-40ms-67p-*: 1500 IP bytes take 600 us at 20 Mbit/s,
        // then 20 ms of delay; 67 packets wait behind the one on the wire.
        let c = cfg(r#"{"seed":1,"duration_s":1,"topology":"wired",
                "internet":{"rate_mbps":20,"delay_ms":20,"buffer_packets":67},"flows":[{"cc":"cubic"}]}"#);
        let mut p = build_paths(&c, &TraceTexts::default()).unwrap();
        let (rel, drops) = push_through(&mut p.down, 100, 1500, SimTime::ZERO, at_ms(1000.0));
        assert_eq!((rel.len(), drops), (68, 32));
        assert!(
            (rel[0] - 20.6).abs() < 1e-9 && (rel[67] - (20.0 + 68.0 * 0.6)).abs() < 1e-6,
            "{rel:?}"
        );
        // The ACK direction has no rate limit (internet.reverse_rate_mbps
        // unset): only the delay.
        let (rel, drops) = push_through(&mut p.up, 3, 52, SimTime::ZERO, at_ms(1000.0));
        assert_eq!((rel, drops), (vec![20.0; 3], 0));
    }

    #[test]
    fn a_validate_linux_trace_case_counts_each_tun_read_4_bytes_larger_as_mahimahi_does() {
        // A cellular case's link: mm-delay 5 ms, a 150 KB downlink queue,
        // one opportunity per ms. Read from a TUN without the packet
        // information header, a 1500-byte packet is 1504 bytes to the trace
        // link: one opportunity each, and 150 000 bytes hold 99 of them
        // (99 x 1504 = 148 896; a 100th would make 150 400).
        let c = cfg(r#"{"seed":1,"duration_s":1,"topology":"trace",
                "internet":{"delay_ms":5,"buffer_packets":null},
                "trace":{"downlink":"x.down","uplink":"x.up","buffer_bytes":150000},
                "flows":[{"cc":"cubic","ue":0}]}"#);
        let texts = TraceTexts {
            downlink: Some("1\n".into()),
            uplink: Some("1\n".into()),
        };
        let mut p = build_paths(&c, &texts).unwrap();
        let (rel, drops) = push_through(&mut p.down, 120, 1500, at_ms(0.5), at_ms(1000.0));
        assert_eq!((rel.len(), drops), (99, 21));
        let want: Vec<f64> = (6..6 + 99).map(|m| m as f64).collect();
        assert_eq!(
            rel, want,
            "the delay first, then one packet per opportunity from the next millisecond"
        );
        // ACKs: 52 IP bytes count 56; 26 share one 1504-byte opportunity
        // (26 x 56 = 1456), the 27th waits for the next; then the delay.
        // (A fresh base station: both directions share its clock.)
        let mut p = build_paths(&c, &texts).unwrap();
        let (rel, drops) = push_through(&mut p.up, 27, 52, at_ms(0.5), at_ms(1000.0));
        assert_eq!(drops, 0);
        assert_eq!(rel.iter().filter(|&&t| t == 6.0).count(), 26, "{rel:?}");
        assert_eq!(rel[26], 7.0);
    }

    #[test]
    fn what_is_not_emulated_is_refused_naming_the_field() {
        let c = cfg(
            r#"{"seed":1,"duration_s":1,"topology":"wired","internet":{"rate_mbps":20},
                "flows":[{"cc":"cubic","extra_rtt_ms":10}]}"#,
        );
        let e = build_paths(&c, &TraceTexts::default()).err().unwrap();
        assert!(e.contains("flows.0.extra_rtt_ms"), "{e}");
        let c = cfg(
            r#"{"seed":1,"duration_s":1,"topology":"cellular","ues":[{"channel":{"kind":"fixed_cqi","cqi":9}}],
                "flows":[{"cc":"cubic","ue":0}]}"#,
        );
        let p = build_paths(&c, &TraceTexts::default()).unwrap();
        assert!(p.cell.is_some(), "the cellular topology is emulated");
        let kinds = |p: &Path| p.stages().iter().map(|s| s.kind()).collect::<Vec<_>>();
        assert_eq!(kinds(&p.down), vec!["link", "cell-downlink"]);
        assert_eq!(kinds(&p.up), vec!["cell-uplink", "link"]);
        let c = cfg(
            r#"{"seed":1,"duration_s":1,"topology":"trace","trace":{"downlink":"x.down"},
                "flows":[{"cc":"cubic","ue":0}]}"#,
        );
        let e = build_paths(&c, &TraceTexts::default()).err().unwrap();
        assert!(e.contains("trace.downlink"), "{e}");
    }
}
