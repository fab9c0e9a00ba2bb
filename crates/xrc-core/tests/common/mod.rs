//! Scenario builders shared by the integration tests.
#![allow(dead_code)]

use xrc_core::ran::cell::CellConfig;
use xrc_core::ran::channel::ChannelConfig;
use xrc_core::scenario::config::{
    FlowConfig, InternetConfig, OutputConfig, ScenarioConfig, Topology, TraceConfig, Traffic, UeConfig,
};
use xrc_core::transport::{ReceiverConfig, TcpConfig};

pub fn flow(id: &str, ue: Option<u32>, cc: &str) -> FlowConfig {
    FlowConfig {
        id: id.into(),
        ue,
        cc: cc.into(),
        cc_params: serde_json::Value::Null,
        start_s: 0.0,
        stop_s: None,
        extra_rtt_ms: 0.0,
        traffic: Traffic::Bulk,
        tcp: TcpConfig::default(),
        receiver: ReceiverConfig::default(),
    }
}

pub fn output() -> OutputConfig {
    OutputConfig {
        bin_ms: 100.0,
        rlc_sample_ttis: 1,
        cwnd_trace: true,
        rtt_trace: true,
        queue_delay_trace: true,
        pcap: false,
    }
}

/// 20 Mbit/s, 40 ms RTT, 100-packet drop-tail dumbbell.
pub fn dumbbell(cc: &str, duration_s: f64) -> ScenarioConfig {
    ScenarioConfig {
        name: "dumbbell".into(),
        description: String::new(),
        seed: 1,
        duration_s,
        topology: Topology::Wired,
        internet: InternetConfig {
            rate_mbps: Some(20.0),
            delay_ms: 20.0,
            buffer_packets: Some(100),
            buffer_bytes: None,
            reverse_rate_mbps: None,
        },
        cell: None,
        ues: vec![],
        trace: None,
        flows: vec![flow("f0", None, cc)],
        output: output(),
    }
}

/// One UE at a fixed CQI, 10 MHz, RLC 128 packets, 30 ms wired RTT.
pub fn lte(cc: &str, cqi: u8, duration_s: f64) -> ScenarioConfig {
    ScenarioConfig {
        name: "lte".into(),
        description: String::new(),
        seed: 1,
        duration_s,
        topology: Topology::Cellular,
        internet: InternetConfig {
            rate_mbps: Some(1000.0),
            delay_ms: 15.0,
            buffer_packets: Some(1000),
            buffer_bytes: None,
            reverse_rate_mbps: None,
        },
        cell: Some(CellConfig::default()),
        ues: vec![UeConfig {
            channel: ChannelConfig::FixedCqi { cqi },
        }],
        trace: None,
        flows: vec![flow("f0", Some(0), cc)],
        output: output(),
    }
}

pub fn trace(cc: &str, path: &str, duration_s: f64) -> ScenarioConfig {
    let mut s = lte(cc, 15, duration_s);
    s.topology = Topology::Trace;
    s.cell = None;
    s.ues = vec![];
    s.internet.delay_ms = 5.0;
    s.trace = Some(TraceConfig {
        downlink: path.into(),
        buffer_packets: None,
        buffer_bytes: Some(150_000),
        uplink: None,
        uplink_buffer_packets: None,
        uplink_buffer_bytes: None,
        uplink_delay_ms: 0.0,
        agent: Default::default(),
        abc: Default::default(),
    });
    s
}

/// Mean and 95th percentile (linear interpolation, as numpy's default).
pub fn mean_p95(v: &[f64]) -> (f64, f64) {
    if v.is_empty() {
        return (0.0, 0.0);
    }
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let pos = 0.95 * (s.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    (
        s.iter().sum::<f64>() / s.len() as f64,
        s[lo] + (s[hi] - s[lo]) * (pos - lo as f64),
    )
}

/// `xrc reproduce`'s power: bytes over a delay, at least 0.1 ms.
pub fn power(bytes: u64, delay_ms: f64) -> f64 {
    bytes as f64 / delay_ms.max(0.1)
}

/// Flow 0's per-packet queuing delays at the bottleneck and its RTT samples
/// less their least (`xrc reproduce`'s queuing delay), ms.
pub fn flow0_delays(rec: &xrc_core::metrics::Recorder) -> (Vec<f64>, Vec<f64>) {
    let q = &rec.queue_delay;
    let sojourns: Vec<f64> = (0..q.delay_ms.len())
        .filter(|&i| q.flow[i] == 0)
        .map(|i| q.delay_ms[i])
        .collect();
    let rtts: Vec<f64> = (0..rec.rtt.rtt_ms.len())
        .filter(|&i| rec.rtt.flow[i] == 0)
        .map(|i| rec.rtt.rtt_ms[i])
        .collect();
    let least = rtts.iter().cloned().fold(f64::INFINITY, f64::min);
    (sojourns, rtts.iter().map(|r| r - least).collect())
}
