//! The hosts of one flow: the TCP sender at its server with the
//! application writing into it (bulk, a finite transfer, video chunks),
//! and the TCP receiver at its UE (or at the end of the wired path).

use std::collections::VecDeque;

use crate::engine::RngStreams;
use crate::net::FlowId;
use crate::traffic::VideoSource;
use crate::transport::cc::{self, Feedback};
use crate::transport::{TcpReceiver, TcpSender};
use crate::units::{SimDuration, SimTime};

use super::config::{FlowConfig, Traffic};

/// Where a flow is in its life.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum FlowState {
    /// Before its start time.
    Waiting,
    Running,
    /// The application stopped; data in flight is still delivered.
    Closing,
    Done,
}

pub(super) struct Flow {
    pub ue: Option<usize>,
    /// Segments in flight after the sender's last call.
    pub in_flight: u32,
    pub sender: TcpSender,
    pub receiver: TcpReceiver,
    pub state: FlowState,
    pub start: SimTime,
    pub end: Option<SimTime>,
    /// The pending sender and receiver timer events (lazily cancelled).
    sender_timer: Option<SimTime>,
    receiver_timer: Option<SimTime>,
    /// A finite transfer was cut short by its stop time.
    pub truncated: bool,
    /// Out-of-band reports in flight to the sender (constant delay, FIFO).
    pub oob: VecDeque<(SimTime, Feedback)>,
    /// The path's true base RTT (for the rate oracle).
    pub base_rtt: SimDuration,
    /// The physical-limit oracle has been given the bottleneck's
    /// opportunities up to this time.
    pub oracle_fed: SimTime,
    pub video: Option<VideoSource>,
    /// A finite transfer's last byte reached the receiving application.
    pub completed_at: Option<SimTime>,
    /// Bytes the receiving application had got at the last probe of the
    /// control port (`World::probe`).
    pub probed_delivered: u64,
}

impl Flow {
    /// Flow `k` of the scenario; its controller draws from the master
    /// seed's stream `flow/k/cc`.
    pub fn new(k: usize, f: &FlowConfig, streams: &RngStreams) -> Result<Flow, String> {
        let id = FlowId(k as u32);
        let stream = streams.stream(&format!("flow/{k}/cc")).next_u64();
        let controller =
            cc::registry::build_seeded(&f.cc, &f.cc_params, stream).map_err(|e| format!("flows.{k}.{}: {e}", f.cc))?;
        // No receiver advertises more than TCP's largest window.
        let mut tcp = f.tcp.clone();
        tcp.rwnd_bytes = Some(tcp.rwnd_bytes.unwrap_or(crate::transport::MAX_WINDOW_BYTES));
        Ok(Flow {
            ue: f.ue.map(|u| u as usize),
            in_flight: 0,
            sender: TcpSender::new(id, tcp, controller),
            receiver: TcpReceiver::new(id, f.receiver.clone()),
            state: FlowState::Waiting,
            start: SimTime::ZERO + SimDuration::try_from_secs_f64(f.start_s).expect("validated"),
            end: None,
            sender_timer: None,
            receiver_timer: None,
            truncated: false,
            oob: VecDeque::new(),
            base_rtt: SimDuration::ZERO,
            oracle_fed: SimTime::ZERO,
            video: match &f.traffic {
                Traffic::Video {
                    period_s,
                    on_s,
                    rate_mbps,
                } => Some(VideoSource::new(*period_s, *on_s, *rate_mbps)),
                _ => None,
            },
            completed_at: None,
            probed_delivered: 0,
        })
    }

    /// Started and not done: it sends, receives and takes feedback.
    pub fn is_live(&self) -> bool {
        matches!(self.state, FlowState::Running | FlowState::Closing)
    }

    /// The sender's timer event fired at `now`: it is no longer pending.
    pub fn sender_timer_fired(&mut self, now: SimTime) {
        if self.sender_timer.is_some_and(|t| t <= now) {
            self.sender_timer = None;
        }
    }

    /// The receiver's timer event fired at `now`.
    pub fn receiver_timer_fired(&mut self, now: SimTime) {
        if self.receiver_timer.is_some_and(|t| t <= now) {
            self.receiver_timer = None;
        }
    }

    /// The sender's next deadline when no event at or before it is pending
    /// (the caller schedules it); a stale event finds nothing to do.
    pub fn arm_sender(&mut self) -> Option<SimTime> {
        let t = self.sender.next_timer()?;
        if self.sender_timer.is_none_or(|s| t < s) {
            self.sender_timer = Some(t);
            return Some(t);
        }
        None
    }

    /// The same for the receiver's delayed-ACK timer.
    pub fn arm_receiver(&mut self) -> Option<SimTime> {
        let t = self.receiver.next_timer()?;
        if self.receiver_timer.is_none_or(|s| t < s) {
            self.receiver_timer = Some(t);
            return Some(t);
        }
        None
    }
}
