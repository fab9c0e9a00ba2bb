//! Copa: delay-based congestion control that steers the sending rate towards
//! `1/(δ·d_q)`, with a competitive mode for bottlenecks shared with
//! buffer-filling flows.
//!
//! # Sources
//!
//! * V. Arun, H. Balakrishnan, "Copa: Practical Delay-Based Congestion
//!   Control for the Internet", USENIX NSDI 2018, §2.1 (the update rule,
//!   velocity, slow start, pacing) and §2.2 (default and competitive modes).
//!   §3 gives the property the mode switch relies on: Copa flows alone
//!   empty the queue about once every five RTTs.
//! * The authors' implementation, `venkatarun95/genericCC`: `markoviancc.cc`
//!   at commit `6591f6e777e5489fd17adb0c2874fde9c6e8d842` (unchanged in
//!   substance since `d223989` of 6 April 2018), `markoviancc.hh`,
//!   `rtt-window.cc` (`b6fc53f`), `estimators.cc` (`d223989`, the loss-rate
//!   cut) and `ctcp.hh` (when the sender re-initialises the controller). The
//!   configuration the README gives for Copa is `do_ss:auto:0.5`: slow start
//!   on, automatic mode switching, default δ = 0.5. That is this module's
//!   default.
//! * Facebook's mvfst, `quic/congestion_control/Copa.cpp` and `Copa.h` (stored
//!   version `00e67c1b`), a second reading of §2.1. It has no competitive mode.
//!
//! # The model
//!
//! Windows are in segments (1/δ is a number of MTU-sized packets), rates in
//! segments per second.
//!
//! ```text
//!   RTT_min      = min RTT over the last 10 s                          (§2.1)
//!   RTT_standing = min RTT over the last τ = srtt/2                    (§2.1)
//!   d_q          = RTT_standing − RTT_min                              (§2.1, eq. 2)
//!   λ_t          = 1 / (δ·d_q)            target rate                  (§2.1, eq. 1)
//!   λ            = cwnd / RTT_standing    current rate
//!   on each ACK:   cwnd ← cwnd + v/(δ·cwnd)   if λ ≤ λ_t
//!                  cwnd ← cwnd − v/(δ·cwnd)   otherwise
//!   pacing rate  = 2·cwnd / RTT_standing
//! ```
//!
//! Over one RTT the window therefore moves by about `v/δ` segments. In steady
//! state a lone flow keeps about `1/δ` segments queued and its window swings
//! around the target with a period of about five RTTs.
//!
//! *Velocity* (§2.1 step 4). `v` starts at 1. Once per window of data the
//! current `cwnd` is compared with the `cwnd` at the start of that window:
//! larger is "up", otherwise "down". If the direction differs from the
//! previous window's, `v` returns to 1. If it is the same, `v` doubles, but
//! only once the direction has stayed the same for three RTTs. In steady
//! state the direction can persist for 2.5 RTTs, so three windows of one
//! direction can occur without any change of capacity. `v` therefore doubles
//! at the end of the fourth window in a row: three comparisons that agreed
//! with the window before. This is mvfst's counting.
//! A window is a round of data: it ends on the ACK that covers `snd_nxt` as it
//! was when the window began.
//!
//! *Slow start* (§2.1). The flow starts in slow start and adds one segment per
//! segment acknowledged (doubling per RTT, ACK-clocked as in genericCC) until
//! `λ > λ_t`. On that ACK it leaves slow start and the ordinary rule applies
//! from that ACK on.
//!
//! *Modes* (§2.2). In default mode δ is [`Config::delta`] (0.5). A flow
//! that has not seen a *nearly empty* queue within the last five RTTs assumes
//! a buffer-filling competitor and goes to competitive mode. "Nearly empty"
//! means a queuing delay below 10 % of the delay swing of the last four RTTs:
//!
//! ```text
//!   nearly empty  ⇔  min RTT over the last 5·srtt − RTT_min ≤ 0.1·(max RTT over the last 4·srtt − RTT_min)
//! ```
//!
//! The first term is the smallest queuing delay seen over the last five RTTs.
//! genericCC tests the same inequality (`RTTWindow::is_copa`), with both
//! windows four srtt long. In competitive mode the sender runs AIMD on `1/δ`,
//! as genericCC does: `1/δ` grows by one per RTT, and it halves on a loss, at
//! most once per RTT. δ never exceeds the default δ. On seeing a nearly empty
//! queue again the flow returns to default mode and δ returns to the default.
//!
//! *Losses.* Copa does not reduce its window on loss, in either mode. The
//! framework's recovery (SACK retransmissions, PRR) runs, but this module
//! takes full control of the window through
//! [`CongestionControl::cong_control`], so PRR never applies. Three
//! loss-related rules come from genericCC:
//! 1. In competitive mode a loss halves `1/δ`.
//! 2. If more than 30 % of the packets of a cycle of at least two RTTs (and
//!    more than 20 packets) were lost, the window is multiplied by 0.7
//!    (`ReduceOnLoss`, genericCC commit `d223989`).
//! 3. A retransmission timeout starts the controller afresh: initial window,
//!    slow start, RTT history and δ forgotten. This is genericCC's
//!    `init()`, which its sender calls after two seconds without ACKs.
//!
//! # Deviations and choices, numbered
//!
//! 1. *"Nearly empty in the last five RTTs."* The paper's rule (§2.2) is used:
//!    the smallest RTT sample of the last `5·srtt` against `RTT_max` of the last
//!    `4·srtt`. genericCC uses `4·srtt` for both windows, which is
//!    [`Config::empty_queue_window_rtts`] = 4. The paper says "lower than";
//!    here it is "at most", so an idle path with no delay swing
//!    (`RTT_max = RTT_min`) and no queue (`d_q = 0`) counts as empty. In genericCC
//!    an exactly constant RTT sends the flow to competitive mode. Its clock
//!    is never that exact; the simulator's is.
//! 2. *Velocity.* The three-RTT wait follows the paper and mvfst. genericCC
//!    doubles from the second window with the same direction. It takes the
//!    direction from the net count of increase and decrease decisions in an
//!    RTT, and closes the RTT on a timer, not on a window of data. genericCC's
//!    bound is kept: when `v > δ·cwnd`, `v` is halved once on that ACK, and
//!    it never goes below 1. With [`Config::velocity_reversal_reset`] (off by
//!    default) `v` also returns to 1 on the first ACK whose decision
//!    opposes the current direction, as mvfst does.
//! 3. *Competitive-mode AIMD.* `1/δ` grows by one when more than the latest RTT
//!    sample has passed since the last growth step, and only on ACKs that
//!    carry an RTT sample. After a switch into competitive mode the first
//!    step comes one RTT later. Both as in genericCC. The halving on loss is
//!    limited to once per latest RTT. That is what genericCC's
//!    `prev_delta_update_time_loss` guard is for. As written, genericCC calls
//!    `update_delta(true)` with the default `cur_rtt = 0`, so its guard never
//!    holds and it halves on every ACK that reveals a loss.
//! 4. *A segment is an ACK.* genericCC's receiver acknowledges every packet
//!    separately. Here an ACK may acknowledge or SACK several segments. The
//!    per-ACK step is applied once per segment newly delivered
//!    (`RateSample::acked_sacked`, as mvfst multiplies by the packets
//!    acknowledged). Slow start adds one segment per segment delivered. A
//!    loss is a segment the framework newly marks lost (`RateSample::losses`;
//!    RFC 6675 with three SACKed segments above a hole). genericCC counts any
//!    gap in its per-packet ACKs as loss at once.
//! 5. *RTT estimates.* The RTT sample is the framework's `ca_rtt`, taken from
//!    the most recently sent segment this ACK covers. srtt is the framework's
//!    RFC 6298 estimator (gain 1/8). The paper asks for "the standard TCP"
//!    srtt; genericCC keeps its own with gain 1/16. `RTT_min` uses a plain
//!    10 s window (paper). genericCC stretches it to `20·RTT_min` when that is
//!    longer, which matters only above 500 ms. ACKs without an RTT sample
//!    (pure duplicates, and under Karn's rule ACKs covering retransmitted data)
//!    do not move the window. Losses they report still count.
//! 6. *No probing phase.* genericCC ignores the first `2·10 − 1` ACKs of a
//!    flow (its "probing"); this module acts from the first ACK.
//! 7. *Window rounding and floor.* `cwnd` is kept as a real number. The
//!    framework gets `⌈cwnd⌉` segments: genericCC sends while the packets in
//!    flight are below its real-valued window, so it also has `⌈cwnd⌉` in
//!    flight. The window never goes below [`Config::min_cwnd`] = 2 (genericCC
//!    and mvfst).
//! 8. *Pacing.* `pacing_gain·cwnd/RTT_standing` packets per second, turned into
//!    bits per second with the payload of a full segment (MSS), because the
//!    framework spaces packets by their payload, as Linux's internal pacing
//!    does (`skb->len`). genericCC paces at `RTT_standing/(2·cwnd)` between
//!    packets, and mvfst at `2·cwnd/srtt`. There is no pacing before the
//!    first RTT sample.
//! 9. *Restarts.* A timeout (`set_state(Loss)`) and a restart after idle
//!    (`CaEvent::CwndRestart`) both re-initialise the controller as genericCC's
//!    `init()` does, and set the framework's window to the initial window at once.
//!    genericCC calls `init()` at the start of every on-period of its traffic
//!    generator and after two seconds without ACKs; the simulator signals neither,
//!    and these two events are the nearest it has.
//! 10. *Application-limited periods* are not treated specially, as in both
//!     references. With no queue, `d_q = 0` and the window keeps growing while
//!     the application does not fill it. The growth is bounded by
//!     `cwnd_clamp`.
//! 11. *`ssthresh`.* The framework asks for a threshold on entering recovery
//!     and on a timeout. Copa has none and returns the current window, so no
//!     reduction is implied. While in slow start the module keeps the
//!     framework's `ssthresh` infinite; afterwards it equals the window, so the
//!     framework's `in_slow_start()` agrees with [`Copa::in_slow_start`].

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

use super::CcConfig;
use super::{CaEvent, CaState, CongestionControl, ConnView, RateSample, Window, INFINITE_SSTHRESH};
use crate::units::{BitRate, SimDuration, SimTime};

/// Copa's parameters. The defaults are the paper's and genericCC's
/// (`do_ss:auto:0.5`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// δ in default mode (paper: 0.5). Larger is more delay-sensitive.
    pub delta: f64,
    /// Detect buffer-filling competitors and switch to competitive mode
    /// (paper §2.2; genericCC `auto`). Off: δ stays [`Config::delta`]
    /// (genericCC `constant_delta`).
    pub competitive_mode: bool,
    /// Begin in slow start (genericCC `do_ss`). Off: the initial window is
    /// adjusted by the ordinary rule from the first ACK.
    pub slow_start: bool,
    /// Window of the `RTT_min` filter, ms (paper: 10 s).
    pub min_rtt_window_ms: f64,
    /// Window of the `RTT_standing` filter, as a fraction of srtt (paper: 1/2).
    pub standing_rtt_srtt_fraction: f64,
    /// A nearly empty queue must have been seen within this many srtt to
    /// stay in default mode (paper: 5; genericCC: 4).
    pub empty_queue_window_rtts: f64,
    /// Window of the `RTT_max` filter, in srtt (paper and genericCC: 4).
    pub max_rtt_window_rtts: f64,
    /// "Nearly empty": queuing delay at most this fraction of
    /// `RTT_max − RTT_min` (paper and genericCC: 0.1).
    pub nearly_empty_fraction: f64,
    /// Comparisons agreeing with the previous window's direction before `v`
    /// starts doubling (paper: "three RTTs"; mvfst: 3).
    pub velocity_same_direction_rtts: u32,
    /// Reset `v` to 1 on the first ACK whose decision opposes the current
    /// direction (mvfst). Not in the paper or genericCC; off by default.
    pub velocity_reversal_reset: bool,
    /// Pacing rate as a multiple of `cwnd/RTT_standing` (paper: 2).
    pub pacing_gain: f64,
    /// Smallest window, segments (genericCC and mvfst: 2).
    pub min_cwnd: u32,
    /// Loss rate over a cycle of two RTTs above which the window is cut
    /// (genericCC `ReduceOnLoss`: 0.3). 1 disables the cut.
    pub high_loss_threshold: f64,
    /// Factor applied to the window by that cut (genericCC: 0.7).
    pub high_loss_backoff: f64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            delta: 0.5,
            competitive_mode: true,
            slow_start: true,
            min_rtt_window_ms: 10_000.0,
            standing_rtt_srtt_fraction: 0.5,
            empty_queue_window_rtts: 5.0,
            max_rtt_window_rtts: 4.0,
            nearly_empty_fraction: 0.1,
            velocity_same_direction_rtts: 3,
            velocity_reversal_reset: false,
            pacing_gain: 2.0,
            min_cwnd: 2,
            high_loss_threshold: 0.3,
            high_loss_backoff: 0.7,
        }
    }
}

impl CcConfig for Config {
    fn build(self, _stream: u64) -> Box<dyn super::CongestionControl> {
        Box::new(Copa::new(self))
    }

    fn validate(&self) -> Result<(), String> {
        let positive = |name: &str, v: f64| {
            if v.is_finite() && v > 0.0 {
                Ok(())
            } else {
                Err(format!("{name} must be a positive number, got {v}"))
            }
        };
        positive("delta", self.delta)?;
        crate::units::check_duration_ms("min_rtt_window_ms", self.min_rtt_window_ms, false)?;
        positive("standing_rtt_srtt_fraction", self.standing_rtt_srtt_fraction)?;
        positive("empty_queue_window_rtts", self.empty_queue_window_rtts)?;
        positive("max_rtt_window_rtts", self.max_rtt_window_rtts)?;
        positive("pacing_gain", self.pacing_gain)?;
        if !(0.0..=1.0).contains(&self.nearly_empty_fraction) {
            return Err(format!(
                "nearly_empty_fraction must be in [0, 1], got {}",
                self.nearly_empty_fraction
            ));
        }
        if !(0.0..=1.0).contains(&self.high_loss_threshold) {
            return Err(format!(
                "high_loss_threshold must be in [0, 1], got {}",
                self.high_loss_threshold
            ));
        }
        if !(self.high_loss_backoff > 0.0 && self.high_loss_backoff <= 1.0) {
            return Err(format!(
                "high_loss_backoff must be in (0, 1], got {}",
                self.high_loss_backoff
            ));
        }
        crate::transport::check_window_segments("min_cwnd", self.min_cwnd)?;
        Ok(())
    }
}

/// Which way the window moved over the last window of data.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Direction {
    Up,
    Down,
}

/// Copa's operating mode after slow start (§2.2).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// δ is the configured default.
    Default,
    /// A buffer-filling competitor is assumed; AIMD on 1/δ.
    Competitive,
}

/// The smallest (or largest) sample over a sliding time window. It keeps
/// only the samples that can still become the extreme (a monotone deque),
/// and never drops the newest one.
#[derive(Clone, Debug)]
struct WindowedExtreme {
    keep_min: bool,
    samples: VecDeque<(SimTime, SimDuration)>,
}

impl WindowedExtreme {
    fn new(keep_min: bool) -> Self {
        WindowedExtreme {
            keep_min,
            samples: VecDeque::new(),
        }
    }

    fn update(&mut self, now: SimTime, v: SimDuration, window: SimDuration) {
        while let Some(&(_, last)) = self.samples.back() {
            let dominated = if self.keep_min { last >= v } else { last <= v };
            if !dominated {
                break;
            }
            self.samples.pop_back();
        }
        self.samples.push_back((now, v));
        let horizon = now - window;
        while self.samples.len() > 1 && self.samples.front().is_some_and(|&(t, _)| t < horizon) {
            self.samples.pop_front();
        }
    }

    fn get(&self) -> Option<SimDuration> {
        self.samples.front().map(|&(_, v)| v)
    }
}

/// The velocity parameter and the window of data it is judged over.
#[derive(Clone, Debug)]
struct Velocity {
    v: f64,
    /// Direction of the last completed window; `None` before the first.
    direction: Option<Direction>,
    /// Completed windows in a row whose direction matched the previous one.
    same: u32,
    /// The window ends when `snd_una` reaches this; `None` = not begun.
    end_seq: Option<u64>,
    /// `cwnd` when the window began.
    cwnd_at_start: f64,
    /// Windows completed so far (for observers and tests).
    completed: u64,
}

impl Velocity {
    fn new() -> Self {
        Velocity {
            v: 1.0,
            direction: None,
            same: 0,
            end_seq: None,
            cwnd_at_start: 0.0,
            completed: 0,
        }
    }
    fn begin(&mut self, snd_nxt: u64, cwnd: f64) {
        self.end_seq = Some(snd_nxt);
        self.cwnd_at_start = cwnd;
    }
}

/// Copa congestion control for one connection.
#[derive(Clone, Debug)]
pub struct Copa {
    cfg: Config,
    /// The window the controller computes, segments (real-valued).
    cwnd: f64,
    /// The window at `init`, restored by a restart.
    initial_cwnd: f64,
    mss: u32,
    slow_start: bool,
    mode: Mode,
    /// 1/δ, packets; AIMD acts on this in competitive mode.
    inv_delta: f64,
    min_rtt: WindowedExtreme,
    standing_rtt: WindowedExtreme,
    /// Smallest RTT of the last `empty_queue_window_rtts` srtt.
    recent_min_rtt: WindowedExtreme,
    /// `RTT_max`: largest RTT of the last `max_rtt_window_rtts` srtt.
    recent_max_rtt: WindowedExtreme,
    latest_rtt: Option<SimDuration>,
    vel: Velocity,
    /// Last additive step of 1/δ in competitive mode.
    last_inv_delta_growth: SimTime,
    /// Last halving of 1/δ on loss.
    last_inv_delta_cut: Option<SimTime>,
    /// genericCC `ReduceOnLoss`: cycle start, segments seen and lost in it.
    loss_cycle_start: SimTime,
    loss_cycle_packets: u64,
    loss_cycle_lost: u64,
}

impl Copa {
    pub fn new(cfg: Config) -> Self {
        let inv_delta = 1.0 / cfg.delta;
        let slow_start = cfg.slow_start;
        Copa {
            cfg,
            cwnd: 10.0,
            initial_cwnd: 10.0,
            mss: 0,
            slow_start,
            mode: Mode::Default,
            inv_delta,
            min_rtt: WindowedExtreme::new(true),
            standing_rtt: WindowedExtreme::new(true),
            recent_min_rtt: WindowedExtreme::new(true),
            recent_max_rtt: WindowedExtreme::new(false),
            latest_rtt: None,
            vel: Velocity::new(),
            last_inv_delta_growth: SimTime::ZERO,
            last_inv_delta_cut: None,
            loss_cycle_start: SimTime::ZERO,
            loss_cycle_packets: 0,
            loss_cycle_lost: 0,
        }
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    // ----- observers -----

    /// The real-valued window, segments (the framework gets its ceiling).
    pub fn cwnd(&self) -> f64 {
        self.cwnd
    }
    /// δ now: the default, or lower in competitive mode.
    pub fn delta(&self) -> f64 {
        1.0 / self.inv_delta
    }
    /// The velocity parameter v.
    pub fn velocity(&self) -> f64 {
        self.vel.v
    }
    /// Direction of the last completed window of data.
    pub fn direction(&self) -> Option<Direction> {
        self.vel.direction
    }
    /// Windows of data completed since slow start ended.
    pub fn windows_completed(&self) -> u64 {
        self.vel.completed
    }
    pub fn copa_mode(&self) -> Mode {
        self.mode
    }
    pub fn in_slow_start(&self) -> bool {
        self.slow_start
    }
    /// `RTT_min` over the last [`Config::min_rtt_window_ms`].
    pub fn rtt_min(&self) -> Option<SimDuration> {
        self.min_rtt.get()
    }
    /// `RTT_standing`: the smallest RTT over the last srtt/2.
    pub fn rtt_standing(&self) -> Option<SimDuration> {
        self.standing_rtt.get()
    }
    /// `d_q = RTT_standing − RTT_min`.
    pub fn queuing_delay_estimate(&self) -> Option<SimDuration> {
        Some(self.standing_rtt.get()?.saturating_sub(self.min_rtt.get()?))
    }
    /// λ_t = 1/(δ·d_q), segments per second; infinite while `d_q = 0`.
    pub fn target_rate(&self) -> Option<f64> {
        let dq = self.queuing_delay_estimate()?;
        if dq.is_zero() {
            return Some(f64::INFINITY);
        }
        Some(self.inv_delta / dq.as_secs_f64())
    }
    /// λ = cwnd/RTT_standing, segments per second.
    pub fn current_rate(&self) -> Option<f64> {
        let standing = self.standing_rtt.get()?;
        (!standing.is_zero()).then(|| self.cwnd / standing.as_secs_f64())
    }

    // ----- the algorithm -----

    /// genericCC `init()`: back to the initial window, slow start, the
    /// default δ, and no RTT history.
    fn restart(&mut self) {
        let (initial, mss) = (self.initial_cwnd, self.mss);
        *self = Copa::new(self.cfg.clone());
        self.initial_cwnd = initial;
        self.cwnd = initial;
        self.mss = mss;
    }

    fn on_rtt_sample(&mut self, now: SimTime, rtt: SimDuration, srtt: Option<SimDuration>) {
        let srtt = srtt.unwrap_or(rtt);
        let min_window = SimDuration::try_from_millis_f64(self.cfg.min_rtt_window_ms).unwrap_or(SimDuration::MAX);
        self.latest_rtt = Some(rtt);
        self.min_rtt.update(now, rtt, min_window);
        self.standing_rtt
            .update(now, rtt, srtt.mul_f64(self.cfg.standing_rtt_srtt_fraction));
        self.recent_min_rtt
            .update(now, rtt, srtt.mul_f64(self.cfg.empty_queue_window_rtts));
        self.recent_max_rtt
            .update(now, rtt, srtt.mul_f64(self.cfg.max_rtt_window_rtts));
    }

    /// The queue was nearly empty at least once in the last
    /// `empty_queue_window_rtts` srtt (§2.2).
    fn queue_recently_empty(&self) -> bool {
        let (Some(min), Some(lo), Some(hi)) =
            (self.min_rtt.get(), self.recent_min_rtt.get(), self.recent_max_rtt.get())
        else {
            return true;
        };
        let smallest_queue = lo.saturating_sub(min).as_secs_f64();
        let swing = hi.saturating_sub(min).as_secs_f64();
        smallest_queue <= self.cfg.nearly_empty_fraction * swing
    }

    /// Mode selection and the additive half of the AIMD on 1/δ (genericCC
    /// `update_delta(false, rtt)`).
    fn update_mode(&mut self, now: SimTime) {
        if !self.cfg.competitive_mode {
            return;
        }
        let empty = self.queue_recently_empty();
        match (self.mode, empty) {
            (Mode::Default, false) => {
                self.mode = Mode::Competitive;
                self.last_inv_delta_growth = now;
            }
            (Mode::Competitive, true) => {
                self.mode = Mode::Default;
                self.inv_delta = 1.0 / self.cfg.delta;
            }
            (Mode::Competitive, false) => {
                let rtt = self.latest_rtt.unwrap_or(SimDuration::ZERO);
                if now > self.last_inv_delta_growth + rtt {
                    self.inv_delta += 1.0;
                    self.last_inv_delta_growth = now;
                }
            }
            (Mode::Default, true) => {}
        }
    }

    /// The multiplicative half: a loss halves 1/δ in competitive mode, at
    /// most once per RTT, never making δ exceed the default.
    fn on_loss(&mut self, now: SimTime) {
        if self.mode != Mode::Competitive {
            return;
        }
        let rtt = self.latest_rtt.unwrap_or(SimDuration::ZERO);
        if self.last_inv_delta_cut.is_some_and(|t| now <= t + rtt) {
            return;
        }
        self.inv_delta = (self.inv_delta / 2.0).max(1.0 / self.cfg.delta);
        self.last_inv_delta_cut = Some(now);
    }

    /// Once per window of data: direction and velocity (§2.1 step 4).
    fn update_velocity(&mut self, c: &ConnView) {
        let Some(end) = self.vel.end_seq else {
            self.vel.begin(c.snd_nxt, self.cwnd);
            return;
        };
        if c.snd_una < end {
            return;
        }
        let dir = if self.cwnd > self.vel.cwnd_at_start {
            Direction::Up
        } else {
            Direction::Down
        };
        if self.vel.direction == Some(dir) {
            self.vel.same += 1;
            if self.vel.same >= self.cfg.velocity_same_direction_rtts {
                self.vel.v *= 2.0;
            }
        } else {
            self.vel.v = 1.0;
            self.vel.same = 0;
        }
        self.vel.direction = Some(dir);
        self.vel.completed += 1;
        self.vel.begin(c.snd_nxt, self.cwnd);
    }

    /// The per-ACK window update (§2.1 steps 1–3) for `acked` segments.
    fn update_window(&mut self, c: &ConnView, acked: u32) {
        let (Some(min), Some(standing)) = (self.min_rtt.get(), self.standing_rtt.get()) else {
            return;
        };
        let dq = standing.saturating_sub(min);
        // λ ≤ λ_t  ⇔  cwnd/RTT_standing ≤ 1/(δ·d_q)  ⇔  cwnd·d_q ≤ RTT_standing/δ.
        let increase = dq.is_zero() || self.cwnd * dq.as_secs_f64() <= standing.as_secs_f64() * self.inv_delta;
        let acked = acked as f64;

        if self.slow_start {
            if increase {
                self.cwnd += acked;
                return;
            }
            self.slow_start = false;
            self.vel = Velocity::new();
        }

        self.update_velocity(c);
        let want = if increase { Direction::Up } else { Direction::Down };
        if self.cfg.velocity_reversal_reset && self.vel.v > 1.0 && self.vel.direction != Some(want) {
            self.vel.v = 1.0;
            self.vel.same = 0;
            self.vel.direction = Some(want);
            self.vel.begin(c.snd_nxt, self.cwnd);
        }
        // genericCC: v is kept at about δ·cwnd at most, and at least 1.
        if self.vel.v * self.inv_delta > self.cwnd {
            self.vel.v /= 2.0;
        }
        self.vel.v = self.vel.v.max(1.0);

        let step = acked * self.vel.v * self.inv_delta / self.cwnd;
        if increase {
            self.cwnd += step;
        } else {
            self.cwnd -= step;
        }
    }

    /// genericCC `ReduceOnLoss`: over cycles of at least two RTTs and more
    /// than 20 packets, a loss rate above the threshold cuts the window.
    fn track_loss_rate(&mut self, now: SimTime, acked: u32, lost: u32) {
        self.loss_cycle_packets += acked as u64 + lost as u64;
        self.loss_cycle_lost += lost as u64;
        let rtt = self.latest_rtt.unwrap_or(SimDuration::ZERO);
        if now > self.loss_cycle_start + rtt * 2 && self.loss_cycle_packets > 20 {
            let rate = self.loss_cycle_lost as f64 / self.loss_cycle_packets as f64;
            self.loss_cycle_start = now;
            self.loss_cycle_packets = 0;
            self.loss_cycle_lost = 0;
            if rate > self.cfg.high_loss_threshold {
                self.cwnd *= self.cfg.high_loss_backoff;
            }
        }
    }

    /// Hands the window to the framework.
    fn publish(&mut self, w: &mut Window) {
        let floor = self.cfg.min_cwnd as f64;
        self.cwnd = self.cwnd.clamp(floor, (w.cwnd_clamp as f64).max(floor));
        // ⌈cwnd⌉, without letting rounding noise add a segment.
        let segments = (self.cwnd - 1e-9).ceil().max(1.0);
        w.cwnd = (segments as u32).clamp(1, w.cwnd_clamp.max(1));
        w.cwnd_cnt = 0;
        w.ssthresh = if self.slow_start { INFINITE_SSTHRESH } else { w.cwnd };
    }
}

impl CongestionControl for Copa {
    fn name(&self) -> &'static str {
        "copa"
    }

    fn init(&mut self, _now: SimTime, w: &mut Window, c: &ConnView) {
        self.mss = c.mss;
        self.initial_cwnd = (w.cwnd.max(self.cfg.min_cwnd)) as f64;
        self.restart();
        self.publish(w);
    }

    /// Copa does not reduce its window on loss (deviation 11).
    fn ssthresh(&mut self, _now: SimTime, w: &Window, _c: &ConnView) -> u32 {
        w.cwnd
    }

    /// Never called: [`Copa::cong_control`] handles every ACK.
    fn cong_avoid(&mut self, _now: SimTime, _w: &mut Window, _c: &ConnView, _acked: u32) {}

    /// A timeout starts afresh, as genericCC's `init()` (deviation 9).
    fn set_state(&mut self, _now: SimTime, w: &mut Window, _c: &ConnView, new: CaState) {
        if new == CaState::Loss {
            self.restart();
            self.publish(w);
        }
    }

    /// A restart after idle starts afresh too (deviation 9).
    fn cwnd_event(&mut self, _now: SimTime, w: &mut Window, _c: &ConnView, ev: CaEvent) {
        if ev == CaEvent::CwndRestart {
            self.restart();
            self.publish(w);
        }
    }

    /// Nothing to undo: Copa never reduced the window for the loss.
    fn undo_cwnd(&mut self, _now: SimTime, w: &Window, _prior_cwnd: u32) -> u32 {
        w.cwnd
    }

    /// genericCC `onACK`: mode and 1/δ growth, the window update, then the
    /// loss response and the loss-rate cut.
    fn cong_control(&mut self, now: SimTime, w: &mut Window, c: &ConnView, rs: &RateSample) -> bool {
        self.mss = c.mss;
        let acked = rs.acked_sacked;
        if let Some(rtt) = rs.rtt {
            self.on_rtt_sample(now, rtt, c.srtt);
            if acked > 0 {
                self.update_mode(now);
                self.update_window(c, acked);
            }
        }
        if rs.losses > 0 {
            self.on_loss(now);
        }
        self.track_loss_rate(now, acked, rs.losses);
        self.publish(w);
        true
    }

    /// `pacing_gain·cwnd/RTT_standing` packets per second of a full
    /// segment's payload, which the framework paces (deviation 8).
    fn pacing_rate(&self) -> Option<BitRate> {
        let standing = self.standing_rtt.get()?;
        if standing.is_zero() || self.mss == 0 {
            return None;
        }
        let segment_bits = self.mss as f64 * 8.0;
        let bps = self.cfg.pacing_gain * self.cwnd * segment_bits / standing.as_secs_f64();
        Some(BitRate::from_bps(bps.min(u64::MAX as f64) as u64))
    }

    fn mode(&self) -> &'static str {
        match (self.slow_start, self.mode) {
            (true, _) => "slow_start",
            (false, Mode::Default) => "default",
            (false, Mode::Competitive) => "competitive",
        }
    }

    /// The window that would send at the target rate: λ_t·RTT_standing.
    fn target_window(&self) -> Option<f64> {
        let standing = self.standing_rtt.get()?;
        let rate = self.target_rate()?;
        rate.is_finite().then(|| rate * standing.as_secs_f64())
    }

    fn queuing_delay(&self) -> Option<SimDuration> {
        self.queuing_delay_estimate()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::transport::cc::testkit::MSS;

    fn ms(v: f64) -> SimDuration {
        SimDuration::try_from_millis_f64(v).unwrap()
    }
    fn at(v: f64) -> SimTime {
        SimTime::ZERO + ms(v)
    }
    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    /// A bulk sender driven through `cong_control` as the framework drives it:
    /// each ACK delivers `acked` segments (`snd_una` advances), then the window
    /// is refilled. srtt is set by the test, not estimated.
    struct Flow {
        cc: Copa,
        w: Window,
        una: u64,
        nxt: u64,
        srtt: SimDuration,
    }

    impl Flow {
        fn new(cfg: Config, initial_cwnd: u32) -> Flow {
            let mut cc = Copa::new(cfg);
            let mut w = Window::new(initial_cwnd);
            let v = ConnView {
                mss: MSS,
                ..ConnView::default()
            };
            cc.init(SimTime::ZERO, &mut w, &v);
            Flow {
                cc,
                w,
                una: 0,
                nxt: initial_cwnd as u64,
                srtt: ms(40.0),
            }
        }
        /// No slow start, no competitive mode: the bare update rule.
        fn plain(initial_cwnd: u32) -> Flow {
            Flow::new(
                Config {
                    slow_start: false,
                    competitive_mode: false,
                    ..Config::default()
                },
                initial_cwnd,
            )
        }
        fn view(&self, now: SimTime) -> ConnView {
            let out = (self.nxt - self.una) as u32;
            ConnView {
                now,
                mss: MSS,
                snd_una: self.una * MSS as u64,
                snd_nxt: self.nxt * MSS as u64,
                packets_out: out,
                packets_in_flight: out,
                srtt: Some(self.srtt),
                ..ConnView::default()
            }
        }
        fn ack_n(&mut self, now: SimTime, rtt: SimDuration, acked: u32, lost: u32) {
            self.una += acked as u64;
            let v = self.view(now);
            let rs = RateSample {
                acked_sacked: acked,
                losses: lost,
                rtt: Some(rtt),
                ..RateSample::default()
            };
            assert!(self.cc.cong_control(now, &mut self.w, &v, &rs));
            self.nxt = self.nxt.max(self.una + self.w.cwnd as u64);
        }
        fn ack(&mut self, now: SimTime, rtt: SimDuration) {
            self.ack_n(now, rtt, 1, 0);
        }
    }

    // ----- configuration -----

    #[test]
    fn the_defaults_are_the_papers_and_the_reference_implementations() {
        let c = Config::default();
        assert_eq!(c.delta, 0.5);
        assert!(c.competitive_mode && c.slow_start && !c.velocity_reversal_reset);
        assert_eq!((c.min_rtt_window_ms, c.standing_rtt_srtt_fraction), (10_000.0, 0.5));
        assert_eq!(
            (
                c.empty_queue_window_rtts,
                c.max_rtt_window_rtts,
                c.nearly_empty_fraction
            ),
            (5.0, 4.0, 0.1)
        );
        assert_eq!((c.velocity_same_direction_rtts, c.min_cwnd, c.pacing_gain), (3, 2, 2.0));
        assert_eq!((c.high_loss_threshold, c.high_loss_backoff), (0.3, 0.7));
        assert_eq!(c.validate(), Ok(()));
        assert_eq!(Copa::new(c).name(), "copa");
    }

    #[test]
    fn validation_names_the_bad_parameter() {
        let bad = |f: fn(&mut Config), name: &str| {
            let mut c = Config::default();
            f(&mut c);
            let e = c.validate().unwrap_err();
            assert!(e.contains(name), "{e}");
        };
        bad(|c| c.delta = 0.0, "delta");
        bad(|c| c.delta = f64::NAN, "delta");
        bad(|c| c.min_rtt_window_ms = -1.0, "min_rtt_window_ms");
        bad(|c| c.standing_rtt_srtt_fraction = 0.0, "standing_rtt_srtt_fraction");
        bad(|c| c.empty_queue_window_rtts = 0.0, "empty_queue_window_rtts");
        bad(|c| c.max_rtt_window_rtts = f64::INFINITY, "max_rtt_window_rtts");
        bad(|c| c.nearly_empty_fraction = 1.5, "nearly_empty_fraction");
        bad(|c| c.pacing_gain = 0.0, "pacing_gain");
        bad(|c| c.min_cwnd = 0, "min_cwnd");
        bad(|c| c.high_loss_threshold = -0.1, "high_loss_threshold");
        bad(|c| c.high_loss_backoff = 0.0, "high_loss_backoff");
    }

    #[test]
    fn the_parameter_table_fills_defaults_and_rejects_unknown_keys() {
        let c: Config = serde_json::from_value(serde_json::json!({"delta": 0.1, "competitive_mode": false})).unwrap();
        assert_eq!((c.delta, c.competitive_mode, c.slow_start), (0.1, false, true));
        assert!(serde_json::from_value::<Config>(serde_json::json!({"detla": 0.1})).is_err());
        let v = serde_json::to_value(Config::default()).unwrap();
        assert_eq!(v["delta"], 0.5);
        assert_eq!(v["empty_queue_window_rtts"], 5.0);
    }

    // ----- the update rule -----

    #[test]
    fn the_target_rate_is_one_over_delta_times_the_queuing_delay() {
        let mut f = Flow::plain(10);
        f.ack(at(0.0), ms(40.0));
        // No queue yet: the target is unbounded.
        assert_eq!(f.cc.target_rate(), Some(f64::INFINITY));
        assert_eq!(f.cc.target_window(), None);
        // 100 ms later the 40 ms sample has left the srtt/2 = 20 ms window.
        f.ack(at(100.0), ms(50.0));
        assert_eq!(f.cc.rtt_min(), Some(ms(40.0)));
        assert_eq!(f.cc.rtt_standing(), Some(ms(50.0)));
        assert_eq!(f.cc.queuing_delay(), Some(ms(10.0)));
        // λ_t = 1/(0.5 · 10 ms) = 200 segments/s; at RTT_standing = 50 ms
        // that is a window of 10 segments.
        assert!(close(f.cc.target_rate().unwrap(), 200.0));
        assert!(close(f.cc.target_window().unwrap(), 10.0));
        let mut g = Flow::new(
            Config {
                delta: 0.1,
                slow_start: false,
                competitive_mode: false,
                ..Config::default()
            },
            10,
        );
        g.ack(at(0.0), ms(40.0));
        g.ack(at(100.0), ms(50.0));
        assert!(close(g.cc.target_rate().unwrap(), 1000.0));
    }

    #[test]
    fn each_ack_moves_the_window_by_v_over_delta_cwnd_towards_the_target() {
        // Below the target (λ = 9.22/50 ms = 184 < 200): up by 1/(0.5·cwnd).
        let mut f = Flow::plain(9);
        f.ack(at(0.0), ms(40.0));
        let c0 = 9.0 + 2.0 / 9.0;
        assert!(close(f.cc.cwnd(), c0));
        f.ack(at(100.0), ms(50.0));
        assert!(close(f.cc.cwnd(), c0 + 2.0 / c0), "{}", f.cc.cwnd());
        assert_eq!(f.w.cwnd, 10, "the framework gets the ceiling");
        // Above it (λ = 11.18/50 ms = 224 > 200): down by the same step.
        let mut g = Flow::plain(11);
        g.ack(at(0.0), ms(40.0));
        let c1 = 11.0 + 2.0 / 11.0;
        g.ack(at(100.0), ms(50.0));
        assert!(close(g.cc.cwnd(), c1 - 2.0 / c1), "{}", g.cc.cwnd());
        // An ACK covering three segments counts as three.
        let mut h = Flow::plain(9);
        h.ack_n(at(0.0), ms(40.0), 3, 0);
        assert!(close(h.cc.cwnd(), 9.0 + 3.0 * 2.0 / 9.0));
    }

    #[test]
    fn the_window_never_falls_below_two_segments() {
        // δ = 4 and a 960 ms queue: λ_t ≈ 0.26 segments/s, below even 2 segments per RTT.
        let cfg = Config {
            delta: 4.0,
            slow_start: false,
            competitive_mode: false,
            ..Config::default()
        };
        let mut f = Flow::new(cfg, 3);
        f.ack(at(0.0), ms(40.0));
        for i in 1..200 {
            f.ack(at(100.0 + i as f64), ms(1000.0));
        }
        assert_eq!(f.cc.cwnd(), 2.0);
        assert_eq!(f.w.cwnd, 2);
    }

    // ----- velocity -----

    /// Acknowledges one segment per ms until `n` more windows of data have
    /// completed; returns (direction, v) after each.
    fn windows(f: &mut Flow, t: &mut f64, rtt: SimDuration, n: usize) -> Vec<(Direction, f64)> {
        let mut seen = Vec::new();
        let mut done = f.cc.windows_completed();
        while seen.len() < n {
            *t += 1.0;
            f.ack(at(*t), rtt);
            if f.cc.windows_completed() != done {
                done = f.cc.windows_completed();
                seen.push((f.cc.direction().unwrap(), f.cc.velocity()));
            }
        }
        seen
    }

    #[test]
    fn velocity_doubles_only_after_three_rtts_in_the_same_direction_and_resets_on_a_reversal() {
        use Direction::{Down, Up};
        let mut f = Flow::plain(40);
        let mut t = 0.0;
        f.ack(at(t), ms(40.0));
        // No queue: the window only grows. The first window sets the
        // direction; three more agreeing windows, then v doubles each window.
        let up = windows(&mut f, &mut t, ms(40.0), 6);
        assert_eq!(up, [(Up, 1.0), (Up, 1.0), (Up, 1.0), (Up, 2.0), (Up, 4.0), (Up, 8.0)]);
        // A standing queue of 20 ms puts the target at 100 segments/s, far
        // below the rate: the window turns down, which resets v.
        let mut seen = windows(&mut f, &mut t, ms(60.0), 1);
        while seen.last().unwrap().0 == Up {
            seen = windows(&mut f, &mut t, ms(60.0), 1);
        }
        assert_eq!(seen, [(Down, 1.0)]);
        let down = windows(&mut f, &mut t, ms(60.0), 4);
        assert_eq!(down, [(Down, 1.0), (Down, 1.0), (Down, 2.0), (Down, 4.0)]);
    }

    #[test]
    fn the_reversal_reset_option_drops_v_on_the_first_opposing_ack() {
        let cfg = Config {
            slow_start: false,
            competitive_mode: false,
            velocity_reversal_reset: true,
            ..Config::default()
        };
        let mut f = Flow::new(cfg, 40);
        let mut t = 0.0;
        f.ack(at(t), ms(40.0));
        windows(&mut f, &mut t, ms(40.0), 6);
        assert_eq!(f.cc.velocity(), 8.0);
        // The 40 ms samples must first leave the 20 ms standing window.
        while f.cc.rtt_standing() != Some(ms(60.0)) {
            t += 1.0;
            f.ack(at(t), ms(60.0));
        }
        assert_eq!(f.cc.velocity(), 1.0);
        assert_eq!(f.cc.direction(), Some(Direction::Down));
    }

    #[test]
    fn velocity_is_kept_below_delta_times_cwnd() {
        let mut f = Flow::plain(40);
        f.cc.vel.v = 64.0;
        f.cc.vel.direction = Some(Direction::Up);
        f.ack(at(0.0), ms(40.0));
        // 64 > 0.5·40: halved once on this ACK, as genericCC does.
        assert_eq!(f.cc.velocity(), 32.0);
    }

    // ----- slow start -----

    #[test]
    fn slow_start_doubles_the_window_per_rtt_and_ends_when_the_rate_exceeds_the_target() {
        let mut f = Flow::new(Config::default(), 10);
        assert_eq!((f.cc.mode(), f.w.ssthresh), ("slow_start", INFINITE_SSTHRESH));
        // One round of ten ACKs without queue: 10 → 20.
        for i in 0..10 {
            f.ack(at(40.0 + i as f64), ms(40.0));
        }
        assert_eq!((f.cc.cwnd(), f.w.cwnd), (20.0, 20));
        // A 1 ms queue: λ_t = 2000/s, λ = 21/41 ms ≈ 512/s. Still below.
        for i in 0..30 {
            f.ack(at(100.0 + i as f64), ms(41.0));
        }
        assert!(f.cc.in_slow_start());
        assert_eq!(f.cc.cwnd(), 50.0);
        // A 20 ms standing queue: λ_t = 100/s, far below λ. Slow start ends
        // on the first ACK that sees it; that ACK already takes a down step.
        let mut t = 200.0;
        while f.cc.in_slow_start() {
            t += 1.0;
            f.ack(at(t), ms(60.0));
        }
        // The 41 ms samples are already older than srtt/2, so the first
        // 60 ms sample is the standing RTT and ends slow start.
        assert_eq!((t, f.cc.rtt_standing()), (201.0, Some(ms(60.0))));
        assert!(close(f.cc.cwnd(), 50.0 - 2.0 / 50.0), "{}", f.cc.cwnd());
        assert_eq!(f.cc.mode(), "default");
        assert_eq!(f.w.ssthresh, f.w.cwnd, "the framework no longer sees slow start");
    }

    // ----- RTT filters -----

    #[test]
    fn the_standing_rtt_is_the_minimum_over_the_last_half_srtt() {
        let mut f = Flow::plain(10);
        f.srtt = ms(100.0);
        f.ack(at(1000.0), ms(50.0));
        f.ack(at(1030.0), ms(80.0));
        f.ack(at(1049.0), ms(90.0));
        // 1000 ms is within 50 ms of 1049 ms.
        assert_eq!(f.cc.rtt_standing(), Some(ms(50.0)));
        f.ack(at(1051.0), ms(90.0));
        assert_eq!(f.cc.rtt_standing(), Some(ms(80.0)));
        // A longer srtt widens the window again for later samples.
        f.srtt = ms(200.0);
        f.ack(at(1100.0), ms(95.0));
        assert_eq!(f.cc.rtt_standing(), Some(ms(80.0)));
        f.ack(at(1131.0), ms(95.0));
        assert_eq!(f.cc.rtt_standing(), Some(ms(90.0)));
        // RTT_min still remembers 50 ms.
        assert_eq!(f.cc.rtt_min(), Some(ms(50.0)));
    }

    #[test]
    fn the_minimum_rtt_is_forgotten_after_ten_seconds() {
        let mut f = Flow::plain(10);
        f.ack(at(0.0), ms(40.0));
        let mut t = 0.0;
        while t < 9_990.0 {
            t += 10.0;
            f.ack(at(t), ms(60.0));
        }
        assert_eq!(f.cc.rtt_min(), Some(ms(40.0)));
        f.ack(at(10_001.0), ms(60.0));
        assert_eq!(f.cc.rtt_min(), Some(ms(60.0)));
    }

    // ----- modes -----

    /// RTT_min = 40 ms, then samples that alternate between 60 and 70 ms
    /// (the queue never below 20 ms, a swing of 30 ms).
    fn standing_queue(f: &mut Flow, from: f64, to: f64) {
        let mut t = from;
        while t < to {
            t += 1.0;
            f.ack(at(t), ms(if (t as u64) % 2 == 1 { 70.0 } else { 60.0 }));
        }
    }

    #[test]
    fn a_queue_that_never_nearly_empties_for_five_rtts_means_competitive_mode_and_an_empty_one_ends_it() {
        let mut f = Flow::new(
            Config {
                slow_start: false,
                ..Config::default()
            },
            10,
        );
        f.ack(at(0.0), ms(40.0));
        // srtt = 40 ms: the 40 ms sample keeps the mode default for 5·srtt = 200 ms.
        standing_queue(&mut f, 0.0, 200.0);
        assert_eq!((f.cc.copa_mode(), f.cc.mode()), (Mode::Default, "default"));
        standing_queue(&mut f, 200.0, 201.0);
        assert_eq!((f.cc.copa_mode(), f.cc.mode()), (Mode::Competitive, "competitive"));
        // The first 1/δ step comes one RTT after the switch, then one per RTT.
        assert_eq!(f.cc.delta(), 0.5);
        standing_queue(&mut f, 201.0, 1201.0);
        assert!(f.cc.delta() < 0.5);
        let inv = 1.0 / f.cc.delta();
        assert!((15.0..=19.0).contains(&inv), "1/δ = {inv} after 1 s of 60–70 ms RTTs");
        // A sample 2 ms above RTT_min: 2 ≤ 0.1·(70 − 40). Back to default, δ = 0.5.
        f.ack(at(1202.0), ms(42.0));
        assert_eq!(f.cc.copa_mode(), Mode::Default);
        assert_eq!(f.cc.delta(), 0.5);
        // 4 ms would not have been nearly empty.
        let mut g = Flow::new(
            Config {
                slow_start: false,
                ..Config::default()
            },
            10,
        );
        g.ack(at(0.0), ms(40.0));
        standing_queue(&mut g, 0.0, 300.0);
        g.ack(at(301.0), ms(44.0));
        assert_eq!(g.cc.copa_mode(), Mode::Competitive);
    }

    #[test]
    fn the_empty_queue_window_is_a_parameter() {
        let cfg = Config {
            slow_start: false,
            empty_queue_window_rtts: 4.0,
            ..Config::default()
        };
        let mut f = Flow::new(cfg, 10);
        f.ack(at(0.0), ms(40.0));
        standing_queue(&mut f, 0.0, 161.0);
        assert_eq!(f.cc.copa_mode(), Mode::Competitive);
    }

    #[test]
    fn a_path_with_no_delay_swing_and_no_queue_stays_in_default_mode() {
        let mut f = Flow::new(
            Config {
                slow_start: false,
                ..Config::default()
            },
            10,
        );
        for i in 0..1000 {
            f.ack(at(i as f64), ms(40.0));
        }
        assert_eq!(f.cc.copa_mode(), Mode::Default);
    }

    #[test]
    fn competitive_mode_halves_one_over_delta_on_loss_at_most_once_per_rtt_and_never_raises_delta_above_default() {
        let mut f = Flow::new(
            Config {
                slow_start: false,
                ..Config::default()
            },
            10,
        );
        f.ack(at(0.0), ms(40.0));
        standing_queue(&mut f, 0.0, 1201.0);
        // The additive step (once per RTT) runs before the loss response on
        // the same ACK, as in genericCC, so a halving starts from 1/δ or 1/δ + 1.
        let halved = |before: f64, after: f64| close(after, before / 2.0) || close(after, (before + 1.0) / 2.0);
        let inv = 1.0 / f.cc.delta();
        f.ack_n(at(1202.0), ms(60.0), 1, 1);
        let once = 1.0 / f.cc.delta();
        assert!(halved(inv, once), "{inv} → {once}");
        // A second loss within the RTT is the same loss event.
        f.ack_n(at(1230.0), ms(60.0), 1, 2);
        assert!(close(1.0 / f.cc.delta(), once) || close(1.0 / f.cc.delta(), once + 1.0));
        let before = 1.0 / f.cc.delta();
        f.ack_n(at(1270.0), ms(60.0), 1, 1);
        assert!(halved(before, 1.0 / f.cc.delta()), "{before} → {}", 1.0 / f.cc.delta());
        for k in 0..5 {
            f.ack_n(at(1300.0 + 70.0 * k as f64), ms(60.0), 1, 1);
        }
        assert_eq!(f.cc.delta(), 0.5);
    }

    #[test]
    fn without_competitive_mode_delta_stays_at_its_default() {
        let mut f = Flow::plain(10);
        f.ack(at(0.0), ms(40.0));
        standing_queue(&mut f, 0.0, 1000.0);
        f.ack_n(at(1001.0), ms(60.0), 1, 1);
        assert_eq!((f.cc.copa_mode(), f.cc.delta()), (Mode::Default, 0.5));
    }

    // ----- pacing -----

    #[test]
    fn the_pacing_rate_is_twice_cwnd_over_the_standing_rtt() {
        let mut f = Flow::plain(10);
        assert_eq!(f.cc.pacing_rate(), None, "no pacing before an RTT sample");
        f.ack(at(0.0), ms(40.0));
        f.ack(at(100.0), ms(50.0));
        let want = 2.0 * f.cc.cwnd() * MSS as f64 * 8.0 / 0.050;
        let got = f.cc.pacing_rate().unwrap().bps() as f64;
        assert!((got - want).abs() <= 1.0, "{got} vs {want}");
        // Two full segments per RTT_standing/cwnd: the framework's gap for a
        // full segment (its payload) is RTT_standing/(2·cwnd).
        let gap = f.cc.pacing_rate().unwrap().tx_time(MSS as u64).unwrap();
        assert!((gap.as_secs_f64() - 0.050 / (2.0 * f.cc.cwnd())).abs() < 1e-8);
    }

    // ----- losses and restarts -----

    #[test]
    fn in_default_mode_a_loss_leaves_the_window_alone() {
        let mut f = Flow::plain(20);
        f.ack(at(0.0), ms(40.0));
        let before = f.cc.cwnd();
        f.ack_n(at(1.0), ms(40.0), 1, 3);
        assert!(close(f.cc.cwnd(), before + 2.0 / before));
        // The framework's recovery asks for a threshold: no reduction.
        let v = f.view(at(1.0));
        assert_eq!(f.cc.ssthresh(at(1.0), &f.w, &v), f.w.cwnd);
        assert_eq!(f.cc.undo_cwnd(SimTime::ZERO, &f.w, 5), f.w.cwnd);
    }

    #[test]
    fn losing_more_than_30_percent_over_two_rtts_cuts_the_window_to_70_percent() {
        let mut f = Flow::plain(20);
        f.ack(at(0.0), ms(40.0));
        // 15 delivered, 10 lost (40 %) within the first two RTTs.
        for i in 1..=5 {
            f.ack_n(at(i as f64), ms(40.0), 3, 2);
        }
        let before = f.cc.cwnd();
        f.ack(at(81.0), ms(40.0));
        assert!(close(f.cc.cwnd(), (before + 2.0 / before) * 0.7), "{}", f.cc.cwnd());
        // 20 % does not.
        let mut g = Flow::plain(20);
        g.ack(at(0.0), ms(40.0));
        for i in 1..=5 {
            g.ack_n(at(i as f64), ms(40.0), 4, 1);
        }
        let before = g.cc.cwnd();
        g.ack(at(81.0), ms(40.0));
        assert!(close(g.cc.cwnd(), before + 2.0 / before));
    }

    #[test]
    fn a_timeout_starts_copa_afresh_in_slow_start_with_the_initial_window() {
        let mut f = Flow::new(Config::default(), 10);
        for i in 0..40 {
            f.ack(at(i as f64), ms(40.0 + i as f64));
        }
        assert!(!f.cc.in_slow_start());
        let v = f.view(at(500.0));
        f.w.cwnd = 1; // what the framework leaves after marking everything lost
        f.cc.set_state(at(500.0), &mut f.w, &v, CaState::Loss);
        assert!(f.cc.in_slow_start());
        assert_eq!((f.cc.cwnd(), f.w.cwnd, f.w.ssthresh), (10.0, 10, INFINITE_SSTHRESH));
        assert_eq!((f.cc.rtt_min(), f.cc.pacing_rate()), (None, None));
        // Recovery states leave it alone.
        let mut g = Flow::plain(20);
        g.ack(at(0.0), ms(40.0));
        let before = g.cc.cwnd();
        g.cc.set_state(at(1.0), &mut g.w, &v, CaState::Recovery);
        assert_eq!(g.cc.cwnd(), before);
    }

    #[test]
    fn a_restart_after_idle_also_starts_afresh() {
        let mut f = Flow::plain(30);
        f.ack(at(0.0), ms(40.0));
        let v = f.view(at(5000.0));
        f.cc.cwnd_event(at(5000.0), &mut f.w, &v, CaEvent::TxStart);
        assert!(f.cc.cwnd() > 30.0);
        f.cc.cwnd_event(at(5000.0), &mut f.w, &v, CaEvent::CwndRestart);
        assert_eq!((f.cc.cwnd(), f.w.cwnd), (30.0, 30));
    }

    #[test]
    fn acks_without_an_rtt_sample_do_not_move_the_window() {
        let mut f = Flow::plain(20);
        f.ack(at(0.0), ms(40.0));
        let before = f.cc.cwnd();
        let v = f.view(at(1.0));
        let rs = RateSample {
            acked_sacked: 1,
            rtt: None,
            ..RateSample::default()
        };
        assert!(f.cc.cong_control(at(1.0), &mut f.w, &v, &rs));
        assert_eq!(f.cc.cwnd(), before);
    }
}
