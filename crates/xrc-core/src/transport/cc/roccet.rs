//! TCP ROCCET, the RTT-oriented CUBIC extension of Prause & Akselrod, as its
//! Linux module (`net/ipv4/tcp_roccet.c`) runs it.
//!
//! # Sources
//!
//! * L. Prause, M. Akselrod, "TCP ROCCET: An RTT-Oriented CUBIC Congestion
//!   Control Extension for 5G and Beyond Networks", arXiv 2510.25281v1
//!   (October 2025); peer-reviewed version at WONS 2026. I could read the
//!   abstract, the glossary and third-party summaries of the paper, not its
//!   algorithm section, so every detail below comes from the kernel module.
//! * The kernel module as it was posted to netdev together with the arXiv
//!   draft: `net/ipv4/tcp_roccet.c` and `net/ipv4/tcp_roccet.h` in
//!   `intel-lab-lkp/linux` (the 0-day bot's import of mailing-list patches),
//!   `.c` at commit `97fa1924b5a8a61754bd0e4106916a1a78426bef` and `.h` at
//!   `bc212f3ad247d5aca6f2028afeca209978254b2f`. `MODULE_VERSION("1.0")`, authors
//!   Lukas Prause and Tim Füchsel, header comment citing arXiv 2510.25281. This
//!   is **the reference implemented here**. It is the last revision that has
//!   the paper's `cum_cwnd` test (`struct bandwidth_limit_detect`, module
//!   parameter `ack_rate_diff_ca`, "threshold for ack-rate and cum_cwnd").
//! * An earlier copy of the same module, without the ECN hook ("A paper for
//!   TCP ROCCET is currently under review"), carried in a third-party Android
//!   kernel tree: `fish4terrisa-MSDSM/android_kernel_oneplus_sm8550`, commits
//!   `842d3aae74157ad21fa269819bfd125a9cebc590` and
//!   `1a38ff85ca7b127789c5dd13e0558d86669857e0`. I used it to confirm the
//!   reference. Apart from ECN, the two differ only in comments and in
//!   `calculate_min_rtt`/`ignore_loss` being `int` rather than `bool`. I found
//!   no repository of the authors' own in the index.
//! * Later revisions, which this module does **not** follow (see below):
//!   `intel-lab-lkp/linux` `1361f85ad69abb51293d2eff2370b48776b8694a` (the
//!   `cum_cwnd` test, the minRTT look-back and `ignore_loss` removed; LAUNCH also
//!   ends when the flow is not cwnd-limited; window floor `TCP_INIT_CWND`), and
//!   the `cong_control` rewrite in `kernel-patches/bpf`
//!   `491682a705da3fe581640bf18ef3c40f9275ae80` and
//!   `nullptr-t-oss/android_kernel_common_oneplus_sm8550`
//!   `4af2b5e8049faf566ee75e10b5dd0f23e78df1c9` ("branched at kernel version
//!   7.1"). That rewrite has explicit LAUNCH / ORBITER / DRAIN / RTT_PROBE
//!   states, replaces `cum_cwnd` with a bytes-sent versus bytes-acknowledged
//!   test over the srRTT interval, probes the minimum RTT every 5 s, paces, and
//!   reverses the sign of the ACK-rate test (see "ACK rate" below).
//! * CUBIC itself is [`super::cubic`], the crate's model of Linux
//!   `tcp_cubic.c`. The module carries its own copy of the CUBIC code
//!   (`bictcp_update`, `cubic_root`, the Reno-friendly estimate, fast
//!   convergence, the `TX_START` epoch shift, `delay_min` and its 1 s
//!   discard). I compared it function by function with `tcp_cubic.c`: it is
//!   the same, minus HyStart.
//!
//! # The algorithm
//!
//! ROCCET is CUBIC with HyStart removed and two RTT-based exits added. One
//! applies in slow start (LAUNCH), the other in congestion avoidance
//! (ORBITER). Every quantity below is updated on each ACK that reaches
//! `cong_avoid`, i.e. one that advances `snd_una` outside recovery, and in
//! this order.
//!
//! **srRTT** (smoothed relative RTT, in percent). `RTT_curr` is the latest
//! RTT sample from `pkts_acked` (Linux `ca_rtt_us`), `RTT_min` the smallest of
//! them:
//!
//! ```text
//!   rRTT    = 100·(RTT_curr − RTT_min) / RTT_min                    (integer %)
//!   srRTT  ← ((100 − 20)·srRTT + 20·rRTT) / 100                     (α = 0.2)
//! ```
//!
//! The EWMA steps once per ACK, whether or not that ACK brought a new sample.
//!
//! **ACK rate**. Each ACK increments a counter. The first ACK at least 100 ms
//! after the last roll-over shifts `last_rate ← curr_rate` and
//! `curr_rate ← counter`, resets the counter, and is not counted itself. The
//! LAUNCH test uses `Δack = last_rate − curr_rate` (signed), so a positive
//! `Δack` means the ACK rate *fell* between the last two 100 ms intervals. The
//! counter counts ACKs, not acknowledged segments.
//!
//! **LAUNCH** (slow start, `cwnd < ssthresh`). The window grows as
//! `tcp_slow_start`, whether or not the flow is cwnd-limited. It leaves when
//!
//! ```text
//!   srRTT > sr_rtt_upper_bound  and  Δack ≥ ack_rate_diff_ss            (100 %, 10 ACKs)
//! ```
//!
//! and then sets `cwnd = ssthresh = cwnd/2` in the first slow start
//! (`ssthresh` still infinite) or `cwnd = ssthresh = cwnd − cwnd/3` in a later
//! one. A loss in slow start does not reduce the window: `ssthresh` returns
//! `cwnd`, so recovery ends at the window it started with, in congestion
//! avoidance.
//!
//! **ORBITER** (congestion avoidance). The window follows the CUBIC curve.
//! Two further quantities are kept:
//!
//! * `cum_cwnd`: over an interval of `5·RTT_curr` (the latest sample when the
//!   interval is armed), the sum of `cwnd` over the ACKs (`sum_cwnd`) and the
//!   sum of the segments they acknowledged (`sum_acked`), both starting at 1.
//!   On the first ACK after the interval ends, the *bandwidth limit* is detected
//!   if `100·sum_cwnd/sum_acked ≥ ack_rate_diff_ca` (200 %), and a new interval
//!   is armed.
//! * the jitter allowance: `x_j = 100·|RTT_curr − RTT_prev|/RTT_min +
//!   sr_rtt_upper_bound`, where `RTT_prev` is the sample before `RTT_curr`.
//!
//! A ROCCET congestion event happens on the ACK that ends an interval (or any
//! ACK after an ECN echo) when `srRTT > x_j` and a bandwidth limit was detected
//! (or ECE seen):
//!
//! ```text
//!   W_max ← max(W_max, cwnd);  cwnd ← max(cwnd·β/1024, 2);  ssthresh ← cwnd;  new epoch
//! ```
//!
//! This is CUBIC's β without fast convergence; `W_max` never drops. After any
//! ROCCET event (LAUNCH exit or ORBITER reduction) the window is frozen for
//! 100 ms (*drain*), though srRTT, the minimum and the ACK rate keep being
//! updated. A loss in congestion avoidance is CUBIC's
//! (`cubictcp_recalc_ssthresh`, fast convergence included).
//!
//! In the mode trace this module reports `"launch"`, `"orbiter"` and `"drain"`.
//!
//! # Parameters and their reference values
//!
//! | parameter | default | meaning |
//! |---|---|---|
//! | `sr_rtt_upper_bound` | 100 | srRTT threshold, % above RTT_min |
//! | `ack_rate_diff_ss` | 10 | LAUNCH: fall of the per-100 ms ACK count that, with a high srRTT, ends slow start |
//! | `ack_rate_diff_ca` | 200 | ORBITER: `100·sum_cwnd/sum_acked` at or above which a bandwidth limit is detected |
//! | `calculate_min_rtt` | false | every 10 s without a new minimum, blend RTT_min toward RTT_curr |
//! | `roccet_min_rtt_interpolation_factor` | 70 | the blend: `RTT_min ← (70·RTT_curr + 30·RTT_min)/100` |
//! | `ignore_loss` | false | never reduce the window on loss (`ssthresh` returns `cwnd`) |
//! | `fast_convergence`, `beta`, `initial_ssthresh`, `bic_scale`, `tcp_friendliness` | true, 717, 0, 41, true | CUBIC's, same meaning |
//! | `hz` | 1000 | the kernel's `CONFIG_HZ` (not a module parameter; see deviation 1) |
//!
//! Compile-time constants of the module, kept as constants: α = 20/100
//! (`ROCCET_ALPHA_TIMES_100`), the 100 ms ACK-rate interval, the 100 ms drain,
//! the 5-RTT `cum_cwnd` interval, and the 10 s look-back
//! (`ROCCET_RTT_LOOKBACK_S`).
//!
//! # Composition with [`Cubic`]
//!
//! The CUBIC half (curve, Reno-friendly estimate, `W_max`, epoch, `delay_min`,
//! the 1 s sample discard, the idle shift of the epoch, the timeout reset) is
//! an inner [`Cubic`] with HyStart off. ROCCET drives it only through the
//! public [`CongestionControl`] hooks and observers, so `cubic.rs` is
//! unchanged. Two things ROCCET needs have no public setter there:
//!
//! * *end the epoch without touching `W_max`*, and *end it with
//!   `W_max ← max(W_max, cwnd)`*. Both are done by calling the inner
//!   `ssthresh` with a stand-in window of `max(cwnd, W_max)` segments. CUBIC's
//!   rule then keeps `W_max` (the stand-in is not below it, so fast convergence
//!   does not apply) or raises it to `cwnd`, and clears the epoch. Its return
//!   value is discarded.
//! * *whether `pkts_acked` discarded the sample* (within `HZ` jiffies of the
//!   epoch start). ROCCET stores `RTT_curr` only for kept samples. The test is
//!   repeated here from [`Cubic::epoch_start_jiffies`] and the same clock.
//!
//! The reference also sets CUBIC's `cnt` to `100·cwnd` on an ORBITER event.
//! That is not observable: the next curve evaluation comes after the 100 ms
//! drain, longer than the `HZ/32` jiffies for which Linux may reuse `cnt`, and
//! the cleared epoch forces a recomputation. So it is not reproduced.
//!
//! # Deviations from the reference
//!
//! 1. Clocks, as in [`super::cubic`]: jiffies are `⌊now·HZ/10⁹⌋` truncated to
//!    u32. ROCCET's own timestamps are `jiffies_to_usecs(tcp_jiffies32)`,
//!    i.e. `⌊jiffies·10⁶/HZ⌋` truncated to u32 (exact on 64-bit Linux for every
//!    HZ), so they have jiffy resolution. RTT samples are µs.
//! 2. "Never happened" is not the value 0. The module starts with
//!    `roccet_last_event_time_us = 0` and `ack_rate.last_rate_time = 0`. In
//!    Linux the µs clock sits far from 0 (jiffies start at −300 s), so the
//!    first ACK always rolls the ACK-rate interval over and never falls in a
//!    drain. The simulated clock starts at 0, so the literal sentinel would
//!    freeze the window for the first 100 ms. Here both are `Option`s and behave
//!    as in Linux. Later revisions of the module fixed the same thing with
//!    `last_event_time_set`. The `cum_cwnd` deadline keeps the module's
//!    0-sentinel and its plain (not wrap-safe) `<` test.
//! 3. Arithmetic is the C code's: u32 wrapping for `srRTT`, `rRTT`, `x_j`,
//!    `sum_cwnd·100` and the window products, u16 wrapping for the ACK counter.
//!    The divisions cannot meet a zero divisor in the reference (`RTT_min ≥ 1`
//!    once set, `sum_acked ≥ 1` until it wraps, after 2³² segments in one
//!    interval). If one ever did, the kernel would trap; here the test
//!    concerned reads as false.
//! 4. Parameters are per connection and fixed at construction (Linux: global,
//!    writable module parameters). `sr_rtt_upper_bound` and `ack_rate_diff_ca`
//!    are `int` in the module and compared as unsigned, so here they are u32
//!    limited to `0..=i32::MAX`. `roccet_min_rtt_interpolation_factor` must be
//!    ≤ 100 (above it the module's `100 − factor` wraps). CUBIC's parameters
//!    are validated as in [`super::cubic`].
//! 5. ECN: the module remembers an ECE flag from `in_ack_event`. The simulator
//!    does not mark ECN, so that path is implemented but never taken in runs.
//! 6. The TCP framework differs from Linux where [`super::cubic`] says so
//!    (no TSO/GRO, the reconstructed `lsndtime` for the idle shift).
//!
//! # Behaviour worth knowing, as in the reference
//!
//! * HyStart is gone. Slow start ends on loss (without reduction) or on the
//!   LAUNCH test.
//! * The CUBIC 1 s discard also applies to ROCCET: for one second after each
//!   epoch starts (the first growth after a reduction), `RTT_curr` and
//!   `RTT_prev` are frozen, so srRTT relaxes toward the last kept sample and
//!   the jitter allowance stays at its last value.
//! * `RTT_curr` starts at 0. An ACK that reaches `cong_avoid` before any RTT
//!   sample sets `RTT_min` to 1 µs, and it stays there (no real sample is
//!   lower). srRTT then becomes huge. In the simulator this needs the first
//!   ACK that advances `snd_una` to carry no sample at all (not its own, a
//!   SACK's or the timestamp echo), which is rare. Later revisions initialise
//!   the RTTs to `U32_MAX`.
//! * A timeout (`set_state(Loss)`) forgets `RTT_min`, `RTT_prev`, the
//!   `cum_cwnd` sums and all CUBIC state, but keeps srRTT, `RTT_curr`, the ACK
//!   rate and the time of the last ROCCET event.
//! * LAUNCH needs the ACK rate to *fall* by 10 ACKs per 100 ms. On a
//!   bottleneck of constant rate (the wired dumbbell, a cell at fixed CQI)
//!   the ACK rate flattens rather than falls once the link is full. Slow start
//!   then usually runs until the buffer overflows, even with srRTT far above
//!   the bound. With no HyStart and no reduction for a loss in slow start, the
//!   recovery that follows keeps about the whole overshooting window in
//!   flight, and lost retransmissions can end in a timeout (one or two per
//!   run in the LTE and deep-buffer dumbbell runs of
//!   `docs/algorithms/roccet.md`, measured before the sender had RACK). After the timeout the next slow start
//!   meets a still-high srRTT and a collapsed ACK rate, so LAUNCH exits at
//!   once, possibly at 1 segment. The later
//!   revisions test `max(curr_rate − last_rate, 0) ≤ 10` instead ("no longer
//!   rising").
//! * With one ACK per one or two segments, `100·sum_cwnd/sum_acked` is about
//!   `100·cwnd/(segments per ACK)`. The 200 % test therefore holds whenever
//!   `cwnd` is at least twice the segments per ACK. In practice the ORBITER
//!   reduction is gated by srRTT alone, checked once per interval.

use serde::{Deserialize, Serialize};

use super::cubic::{self, Cubic};
use super::helpers::slow_start;
use super::CcConfig;
use super::{AckFlags, AckSample, CaEvent, CaState, CongestionControl, ConnView, Window, INFINITE_SSTHRESH};
use crate::units::{SimDuration, SimTime};

/// `BICTCP_BETA_SCALE`.
const BETA_SCALE: u32 = cubic::BETA_SCALE;
/// `ROCCET_ALPHA_TIMES_100`: the srRTT EWMA weight, in percent.
const ALPHA_PERCENT: u32 = 20;
/// The ACK-rate sampling interval, µs.
const ACK_RATE_INTERVAL_US: u32 = 100_000;
/// No growth for this long after a ROCCET event, µs.
const DRAIN_US: u32 = 100_000;
/// The `cum_cwnd` interval, in latest RTT samples.
const CUM_CWND_RTTS: u32 = 5;
/// `ROCCET_RTT_LOOKBACK_S`, as µs.
const RTT_LOOKBACK_US: u32 = 10 * 1_000_000;
const USEC_PER_SEC: u64 = 1_000_000;

/// ROCCET's parameters: the module parameters of the reference with their
/// defaults, and the kernel's `HZ`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// srRTT threshold, percent above RTT_min (both phases).
    pub sr_rtt_upper_bound: u32,
    /// LAUNCH: the per-100 ms ACK count must have fallen by at least this
    /// many ACKs (signed; with a high srRTT, ends slow start).
    pub ack_rate_diff_ss: i32,
    /// ORBITER: `100·sum_cwnd/sum_acked` at or above which the flow counts as
    /// bandwidth-limited, percent.
    pub ack_rate_diff_ca: u32,
    /// Blend RTT_min toward the current RTT when no new minimum was seen for
    /// 10 s.
    pub calculate_min_rtt: bool,
    /// Never reduce the window on loss.
    pub ignore_loss: bool,
    /// The blend's weight of the current RTT, percent (0..=100).
    pub roccet_min_rtt_interpolation_factor: u32,
    /// CUBIC: lower `W_max` further on a loss below the previous maximum.
    pub fast_convergence: bool,
    /// CUBIC multiplicative decrease, 1/1024 (also the ORBITER reduction).
    pub beta: u32,
    /// Initial slow-start threshold, segments; 0 = unlimited.
    pub initial_ssthresh: u32,
    /// CUBIC's C in Linux's scale, C = 10·bic_scale/1024.
    pub bic_scale: u32,
    /// CUBIC: never grow slower than the Reno estimate.
    pub tcp_friendliness: bool,
    /// The kernel's tick rate (`CONFIG_HZ`): 100, 250, 300 or 1000.
    pub hz: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            sr_rtt_upper_bound: 100,
            ack_rate_diff_ss: 10,
            ack_rate_diff_ca: 200,
            calculate_min_rtt: false,
            ignore_loss: false,
            roccet_min_rtt_interpolation_factor: 70,
            fast_convergence: true,
            beta: 717,
            initial_ssthresh: 0,
            bic_scale: 41,
            tcp_friendliness: true,
            hz: 1000,
        }
    }
}

impl Config {
    /// The inner CUBIC's configuration: the shared parameters, HyStart off.
    fn cubic(&self) -> cubic::Config {
        cubic::Config {
            fast_convergence: self.fast_convergence,
            beta: self.beta,
            initial_ssthresh: self.initial_ssthresh,
            bic_scale: self.bic_scale,
            tcp_friendliness: self.tcp_friendliness,
            hystart: false,
            hz: self.hz,
            ..cubic::Config::default()
        }
    }
}

impl CcConfig for Config {
    fn build(self, _stream: u64) -> Box<dyn super::CongestionControl> {
        Box::new(Roccet::new(self))
    }

    fn validate(&self) -> Result<(), String> {
        if self.sr_rtt_upper_bound > i32::MAX as u32 {
            return Err(format!(
                "sr_rtt_upper_bound must be at most {} (percent), got {}",
                i32::MAX,
                self.sr_rtt_upper_bound
            ));
        }
        if self.ack_rate_diff_ca > i32::MAX as u32 {
            return Err(format!(
                "ack_rate_diff_ca must be at most {} (percent), got {}",
                i32::MAX,
                self.ack_rate_diff_ca
            ));
        }
        if self.roccet_min_rtt_interpolation_factor > 100 {
            return Err(format!(
                "roccet_min_rtt_interpolation_factor must be in 0..=100 (percent), got {}",
                self.roccet_min_rtt_interpolation_factor
            ));
        }
        self.cubic().validate()
    }
}

/// A ROCCET congestion event: the LAUNCH exit or an ORBITER reduction.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct RoccetEvent {
    pub at: SimTime,
    /// The window before and after the event.
    pub cwnd_before: u32,
    pub cwnd_after: u32,
    /// srRTT at the event, percent.
    pub srrtt: u32,
    /// The threshold srRTT exceeded (`sr_rtt_upper_bound` in LAUNCH, the
    /// jitter allowance x_j in ORBITER), percent.
    pub threshold: u32,
    /// LAUNCH: the fall of the ACK rate, ACKs per 100 ms. ORBITER: 0.
    pub ack_rate_diff: i32,
}

/// The phase reported as the algorithm's mode.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Phase {
    /// Slow start (`cwnd < ssthresh`).
    #[default]
    Launch,
    /// Congestion avoidance on the CUBIC curve.
    Orbiter,
    /// The 100 ms after a ROCCET event, without growth.
    Drain,
}

/// ROCCET's own per-connection state (the fields the module adds to CUBIC's).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct State {
    /// Latest kept RTT sample and the one before, µs (0 = none).
    curr_rtt: u32,
    last_rtt: u32,
    /// RTT_min, µs (`u32::MAX` = none), and the µs clock when it was set.
    min_rtt: u32,
    min_rtt_time: u32,
    /// srRTT, percent.
    srrtt: u32,
    /// µs clock of the last ROCCET event.
    last_event: Option<u32>,
    /// ACK counts of the previous and the latest complete 100 ms interval,
    /// and the running count.
    ack_last_rate: u16,
    ack_curr_rate: u16,
    ack_cnt: u16,
    /// µs clock of the last interval roll-over.
    ack_rate_time: Option<u32>,
    /// `cum_cwnd` sums and the end of the interval (µs clock, 0 = unarmed).
    sum_cwnd: u32,
    sum_acked: u32,
    next_check: u32,
    /// An ACK carried ECE since the last ORBITER event.
    ece_received: bool,
}

impl State {
    /// `roccettcp_init`/`roccettcp_reset` on a fresh connection.
    fn new() -> State {
        State {
            min_rtt: u32::MAX,
            min_rtt_time: u32::MAX,
            sum_cwnd: 1,
            sum_acked: 1,
            ..State::default()
        }
    }

    /// The fields `roccettcp_reset` clears on a timeout; the rest survive.
    fn reset_on_timeout(&mut self) {
        self.sum_cwnd = 1;
        self.sum_acked = 1;
        self.next_check = 0;
        self.min_rtt = u32::MAX;
        self.min_rtt_time = u32::MAX;
        self.last_rtt = 0;
        self.ece_received = false;
    }
}

/// TCP ROCCET: CUBIC with the LAUNCH and ORBITER RTT tests.
#[derive(Clone, Debug)]
pub struct Roccet {
    cfg: Config,
    cubic: Cubic,
    st: State,
    phase: Phase,
    launch_exit: Option<RoccetEvent>,
    last_orbiter_event: Option<RoccetEvent>,
    orbiter_events: u64,
}

impl Roccet {
    pub fn new(cfg: Config) -> Self {
        let cubic = Cubic::new(cfg.cubic());
        Roccet {
            cfg,
            cubic,
            st: State::new(),
            phase: Phase::Launch,
            launch_exit: None,
            last_orbiter_event: None,
            orbiter_events: 0,
        }
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    // ----- observers -----

    /// The inner CUBIC (`W_max`, epoch, `cnt`, `delay_min`, ...).
    pub fn cubic(&self) -> &Cubic {
        &self.cubic
    }
    /// srRTT, percent.
    pub fn srrtt(&self) -> u32 {
        self.st.srrtt
    }
    /// RTT_min as ROCCET keeps it, if set.
    pub fn min_rtt(&self) -> Option<SimDuration> {
        (self.st.min_rtt != u32::MAX).then(|| SimDuration::from_micros(self.st.min_rtt as u64))
    }
    /// The latest kept RTT sample, if any.
    pub fn curr_rtt(&self) -> Option<SimDuration> {
        (self.st.curr_rtt != 0).then(|| SimDuration::from_micros(self.st.curr_rtt as u64))
    }
    /// ACKs counted in the previous and the latest complete 100 ms interval.
    pub fn ack_rates(&self) -> (u16, u16) {
        (self.st.ack_last_rate, self.st.ack_curr_rate)
    }
    /// The LAUNCH test's `last_rate − curr_rate`.
    pub fn ack_rate_diff(&self) -> i32 {
        self.st.ack_last_rate as i32 - self.st.ack_curr_rate as i32
    }
    /// The running `cum_cwnd` sums (`sum_cwnd`, `sum_acked`), both from 1.
    pub fn cum_cwnd(&self) -> (u32, u32) {
        (self.st.sum_cwnd, self.st.sum_acked)
    }
    /// The most recent LAUNCH exit.
    pub fn launch_exit(&self) -> Option<RoccetEvent> {
        self.launch_exit
    }
    /// The most recent ORBITER reduction and how many there were.
    pub fn last_orbiter_event(&self) -> Option<RoccetEvent> {
        self.last_orbiter_event
    }
    pub fn orbiter_events(&self) -> u64 {
        self.orbiter_events
    }
    pub fn phase(&self) -> Phase {
        self.phase
    }

    // ----- clocks (deviation 1) -----

    /// Linux `tcp_jiffies32`.
    fn jiffies(&self, t: SimTime) -> u32 {
        t.ticks(self.cfg.hz) as u32
    }
    /// Linux `jiffies_to_usecs(tcp_jiffies32)`.
    fn now_us(&self, t: SimTime) -> u32 {
        (self.jiffies(t) as u64 * USEC_PER_SEC / self.cfg.hz as u64) as u32
    }

    fn in_drain(&self, now_us: u32) -> bool {
        self.st.last_event.is_some_and(|e| now_us.wrapping_sub(e) <= DRAIN_US)
    }

    fn note_phase(&mut self, now: SimTime, w: &Window) {
        self.phase = if self.in_drain(self.now_us(now)) {
            Phase::Drain
        } else if w.in_slow_start() {
            Phase::Launch
        } else {
            Phase::Orbiter
        };
    }

    // ----- the module's helpers -----

    /// `update_ack_rate`: count this ACK, or roll the 100 ms interval over.
    fn update_ack_rate(&mut self, now_us: u32) {
        let st = &mut self.st;
        let elapsed = match st.ack_rate_time {
            None => true,
            Some(t) => now_us.wrapping_sub(t) >= ACK_RATE_INTERVAL_US,
        };
        if elapsed {
            st.ack_rate_time = Some(now_us);
            st.ack_last_rate = st.ack_curr_rate;
            st.ack_curr_rate = st.ack_cnt;
            st.ack_cnt = 0;
        } else {
            st.ack_cnt = st.ack_cnt.wrapping_add(1);
        }
    }

    /// `update_min_rtt`: the optional 10 s blend, then a plain minimum.
    /// A current RTT of 0 (no sample yet) still counts, as 1 µs.
    fn update_min_rtt(&mut self, now_us: u32) {
        let factor = self.cfg.roccet_min_rtt_interpolation_factor;
        let st = &mut self.st;
        if self.cfg.calculate_min_rtt && now_us.wrapping_sub(st.min_rtt_time) > RTT_LOOKBACK_US {
            let new = st.curr_rtt.max(1);
            st.min_rtt = new
                .wrapping_mul(factor)
                .wrapping_add(st.min_rtt.wrapping_mul(100 - factor))
                / 100;
            st.min_rtt_time = now_us;
        }
        if st.curr_rtt < st.min_rtt {
            st.min_rtt = st.curr_rtt.max(1);
            st.min_rtt_time = now_us;
        }
    }

    /// `update_srrtt`: one EWMA step toward the relative RTT.
    fn update_srrtt(&mut self) {
        let st = &mut self.st;
        if st.min_rtt == 0 {
            return;
        }
        let rrtt = 100u32.wrapping_mul(st.curr_rtt.wrapping_sub(st.min_rtt)) / st.min_rtt;
        st.srrtt = (100 - ALPHA_PERCENT)
            .wrapping_mul(st.srrtt)
            .wrapping_add(ALPHA_PERCENT.wrapping_mul(rrtt))
            / 100;
    }

    /// Ends CUBIC's epoch and sets `W_max ← max(W_max, floor)`, through the
    /// inner `ssthresh` (see "Composition").
    fn end_epoch(&mut self, now: SimTime, w: &Window, c: &ConnView, floor: u32) {
        let stand_in = Window {
            cwnd: floor.max(self.cubic.w_max()),
            ..w.clone()
        };
        let _ = self.cubic.ssthresh(now, &stand_in, c);
    }

    /// Whether the inner CUBIC's `pkts_acked` drops a sample taken now (the
    /// first `HZ` jiffies of an epoch).
    fn sample_discarded(&self, now: SimTime) -> bool {
        self.cubic
            .epoch_start_jiffies()
            .is_some_and(|e| (self.jiffies(now).wrapping_sub(e) as i32) < self.cfg.hz as i32)
    }
}

impl CongestionControl for Roccet {
    /// A Linux kernel module: when paced (`tcp.pacing`), its skbs are
    /// `tcp_tso_autosize`'s size.
    fn tso_segs(&self, autosize: u32) -> u32 {
        autosize
    }

    fn name(&self) -> &'static str {
        "roccet"
    }

    /// `roccettcp_init`.
    fn init(&mut self, now: SimTime, w: &mut Window, c: &ConnView) {
        // The inner CUBIC applies initial_ssthresh (HyStart is off).
        self.cubic.init(now, w, c);
        self.st = State::new();
        self.launch_exit = None;
        self.last_orbiter_event = None;
        self.orbiter_events = 0;
        self.note_phase(now, w);
    }

    /// `roccettcp_recalc_ssthresh`: no reduction in slow start, else CUBIC's.
    fn ssthresh(&mut self, now: SimTime, w: &Window, c: &ConnView) -> u32 {
        if self.cfg.ignore_loss || w.in_slow_start() {
            return w.cwnd;
        }
        self.cubic.ssthresh(now, w, c)
    }

    /// `roccettcp_cong_avoid`.
    fn cong_avoid(&mut self, now: SimTime, w: &mut Window, c: &ConnView, acked: u32) {
        let now_us = self.now_us(now);
        let jitter = self.st.curr_rtt.abs_diff(self.st.last_rtt);

        self.update_ack_rate(now_us);
        self.update_min_rtt(now_us);
        self.update_srrtt();

        if self.in_drain(now_us) {
            self.note_phase(now, w);
            return;
        }

        // LAUNCH exit.
        let bound = self.cfg.sr_rtt_upper_bound;
        let diff = self.ack_rate_diff();
        if w.in_slow_start() && self.st.srrtt > bound && diff >= self.cfg.ack_rate_diff_ss {
            self.end_epoch(now, w, c, 0);
            let before = w.cwnd;
            let after = if w.ssthresh == INFINITE_SSTHRESH {
                before / 2
            } else {
                before - before / 3
            };
            w.cwnd = after;
            w.ssthresh = after;
            self.st.last_event = Some(now_us);
            self.launch_exit = Some(RoccetEvent {
                at: now,
                cwnd_before: before,
                cwnd_after: after,
                srrtt: self.st.srrtt,
                threshold: bound,
                ack_rate_diff: diff,
            });
            self.note_phase(now, w);
            return;
        }

        let mut acked = acked;
        if w.in_slow_start() {
            acked = slow_start(w, acked);
            if acked == 0 {
                self.note_phase(now, w);
                return;
            }
        }

        // cum_cwnd: once per interval of five latest-RTT samples.
        let st = &mut self.st;
        if st.next_check == 0 {
            st.next_check = now_us.wrapping_add(CUM_CWND_RTTS.wrapping_mul(st.curr_rtt));
        }
        st.sum_cwnd = st.sum_cwnd.wrapping_add(w.cwnd);
        st.sum_acked = st.sum_acked.wrapping_add(acked);
        let mut bw_limited = false;
        if st.next_check < now_us {
            bw_limited = st
                .sum_cwnd
                .wrapping_mul(100)
                .checked_div(st.sum_acked)
                .is_some_and(|r| r >= self.cfg.ack_rate_diff_ca);
            st.sum_cwnd = 1;
            st.sum_acked = 1;
            st.next_check = now_us.wrapping_add(CUM_CWND_RTTS.wrapping_mul(st.curr_rtt));
        }

        // ORBITER reduction: srRTT above the jitter allowance.
        let mut x_j = jitter
            .wrapping_mul(100)
            .checked_div(st.min_rtt)
            .map_or(u32::MAX, |j| j.wrapping_add(bound));
        if x_j < bound {
            x_j = bound;
        }
        if st.srrtt > x_j && (bw_limited || st.ece_received) {
            st.ece_received = false;
            let before = w.cwnd;
            self.end_epoch(now, w, c, before);
            let after = (before.wrapping_mul(self.cfg.beta) / BETA_SCALE)
                .max(2)
                .min(w.cwnd_clamp);
            w.cwnd = after;
            w.ssthresh = after;
            self.st.last_event = Some(now_us);
            self.orbiter_events += 1;
            self.last_orbiter_event = Some(RoccetEvent {
                at: now,
                cwnd_before: before,
                cwnd_after: after,
                srrtt: self.st.srrtt,
                threshold: x_j,
                ack_rate_diff: 0,
            });
            self.note_phase(now, w);
            return;
        }

        // CUBIC growth, only when the window limits sending.
        if c.is_cwnd_limited {
            // The inner CUBIC must not slow-start again; that can only happen
            // if cwnd_clamp stopped slow start below ssthresh.
            let ssthresh = w.ssthresh;
            w.ssthresh = w.ssthresh.min(w.cwnd);
            self.cubic.cong_avoid(now, w, c, acked);
            w.ssthresh = ssthresh;
        }
        self.note_phase(now, w);
    }

    /// `roccettcp_state`: a timeout resets CUBIC and part of ROCCET.
    fn set_state(&mut self, now: SimTime, w: &mut Window, c: &ConnView, new: CaState) {
        self.cubic.set_state(now, w, c, new);
        if new == CaState::Loss {
            self.st.reset_on_timeout();
        }
        self.note_phase(now, w);
    }

    /// `roccettcp_cwnd_event`: CUBIC's idle shift of the epoch.
    fn cwnd_event(&mut self, now: SimTime, w: &mut Window, c: &ConnView, ev: CaEvent) {
        self.cubic.cwnd_event(now, w, c, ev);
        self.note_phase(now, w);
    }

    /// `roccet_in_ack_event`: remember an ECN echo.
    fn in_ack_event(&mut self, _now: SimTime, _w: &mut Window, _c: &ConnView, flags: AckFlags) {
        if flags.ece {
            self.st.ece_received = true;
        }
    }

    /// `roccettcp_acked`: CUBIC's `delay_min`, and ROCCET's current and
    /// previous RTT from the samples CUBIC keeps.
    fn pkts_acked(&mut self, now: SimTime, w: &mut Window, c: &ConnView, s: &AckSample) {
        let discarded = self.sample_discarded(now);
        self.cubic.pkts_acked(now, w, c, s);
        if let (Some(rtt), false) = (s.rtt, discarded) {
            // µs as the difference of the truncated µs clocks, as CUBIC does.
            let sent = now.as_nanos().saturating_sub(rtt.as_nanos());
            let rtt_us = (now.as_nanos() / 1_000 - sent / 1_000).min(u32::MAX as u64) as u32;
            if rtt_us > 0 {
                self.st.last_rtt = self.st.curr_rtt;
                self.st.curr_rtt = rtt_us;
            }
        }
        self.note_phase(now, w);
    }

    /// Linux uses `tcp_reno_undo_cwnd`.
    fn undo_cwnd(&mut self, _now: SimTime, w: &Window, prior_cwnd: u32) -> u32 {
        w.cwnd.max(prior_cwnd)
    }

    fn mode(&self) -> &'static str {
        match self.phase {
            Phase::Launch => "launch",
            Phase::Orbiter => "orbiter",
            Phase::Drain => "drain",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::cc::registry;
    use crate::transport::cc::testkit::{seg_view, Bulk};

    /// Test time `ms`, one second into the run, so that every RTT sample
    /// was sent after the start.
    fn at_ms(ms: u64) -> SimTime {
        SimTime::from_nanos((1000 + ms) * 1_000_000)
    }
    fn ms(ms: u64) -> Option<SimDuration> {
        Some(SimDuration::from_millis(ms))
    }

    fn view(now: SimTime, una: u64, nxt: u64, limited: bool) -> ConnView {
        seg_view(now, una, nxt, CaState::Open, limited)
    }

    /// A bulk sender driven ACK by ACK in the framework's hook order
    /// (the kit's [`Bulk`]: `pkts_acked`, then `cong_avoid`, then the
    /// window is refilled), each ACK at the time the test gives it
    /// (`ack_at`, `ack_n_at`; `ssthresh_at` for a loss). Sequence numbers
    /// are in segments.
    type Flow = Bulk<Roccet>;

    fn flow(cfg: Config, cwnd: u32) -> Flow {
        Bulk::new(Roccet::new(cfg), cwnd)
    }

    // ----- configuration -----

    #[test]
    fn the_defaults_are_the_reference_module_parameters() {
        let c = Config::default();
        assert_eq!(
            (c.sr_rtt_upper_bound, c.ack_rate_diff_ss, c.ack_rate_diff_ca),
            (100, 10, 200)
        );
        assert!(!c.calculate_min_rtt && !c.ignore_loss);
        assert_eq!(c.roccet_min_rtt_interpolation_factor, 70);
        assert!(c.fast_convergence && c.tcp_friendliness);
        assert_eq!((c.beta, c.initial_ssthresh, c.bic_scale, c.hz), (717, 0, 41, 1000));
        assert_eq!(c.validate(), Ok(()));
        let cc = Roccet::new(c);
        assert_eq!(cc.name(), "roccet");
        // The inner CUBIC shares the CUBIC parameters and has no HyStart.
        let inner = cc.cubic().config();
        assert!(!inner.hystart);
        assert_eq!((inner.beta, inner.bic_scale, inner.hz), (717, 41, 1000));
    }

    #[test]
    fn validation_names_the_bad_parameter() {
        let bad = |f: fn(&mut Config), name: &str| {
            let mut c = Config::default();
            f(&mut c);
            let e = c.validate().unwrap_err();
            assert!(e.contains(name), "{e}");
        };
        bad(|c| c.sr_rtt_upper_bound = i32::MAX as u32 + 1, "sr_rtt_upper_bound");
        bad(|c| c.ack_rate_diff_ca = u32::MAX, "ack_rate_diff_ca");
        bad(
            |c| c.roccet_min_rtt_interpolation_factor = 101,
            "roccet_min_rtt_interpolation_factor",
        );
        bad(|c| c.beta = 0, "beta");
        bad(|c| c.beta = 1024, "beta");
        bad(|c| c.bic_scale = 0, "bic_scale");
        bad(|c| c.hz = 1200, "hz");
        bad(|c| c.initial_ssthresh = u32::MAX, "initial_ssthresh");
        let edge = Config {
            sr_rtt_upper_bound: 0,
            ack_rate_diff_ss: -5,
            ack_rate_diff_ca: i32::MAX as u32,
            roccet_min_rtt_interpolation_factor: 100,
            ..Config::default()
        };
        assert_eq!(edge.validate(), Ok(()));
    }

    #[test]
    fn the_registry_builds_roccet_from_a_parameter_table_and_rejects_unknown_keys() {
        let cc = registry::build("roccet", &serde_json::json!({"sr_rtt_upper_bound": 50, "hz": 250})).unwrap();
        assert_eq!(cc.name(), "roccet");
        let e = registry::build(
            "roccet",
            &serde_json::json!({"roccet_min_rtt_interpolation_factor": 150}),
        )
        .err()
        .unwrap();
        assert!(e.contains("roccet_min_rtt_interpolation_factor"), "{e}");
        assert!(registry::build("roccet", &serde_json::json!({"hystart": true})).is_err());
        let resolved = registry::resolve("roccet", &serde_json::Value::Null).unwrap();
        assert_eq!(resolved["sr_rtt_upper_bound"], 100);
        assert_eq!(resolved["ack_rate_diff_ss"], 10);
        assert_eq!(resolved["ack_rate_diff_ca"], 200);
        assert_eq!(resolved["beta"], 717);
    }

    // ----- the measurements -----

    #[test]
    fn srrtt_steps_on_every_ack_toward_the_relative_rtt_with_weight_one_fifth() {
        let mut f = flow(Config::default(), 10);
        f.ack_at(at_ms(10), ms(50)); // RTT_min 50 ms, rRTT 0
        assert_eq!(f.cc.srrtt(), 0);
        assert_eq!(f.cc.min_rtt(), ms(50));
        // 100 ms: rRTT = 100 %; srRTT = (80·s + 20·100)/100, truncated.
        let mut want = Vec::new();
        for t in 11..=14 {
            f.ack_at(at_ms(t), ms(100));
            want.push(f.cc.srrtt());
        }
        assert_eq!(want, [20, 36, 48, 58]);
        // An ACK without a sample steps the EWMA again with the same RTT.
        f.ack_at(at_ms(15), None);
        assert_eq!(f.cc.srrtt(), 66); // (80·58 + 2000)/100 = 66.4

        // 75 ms: rRTT 50 %.
        f.ack_at(at_ms(16), ms(75));
        assert_eq!(f.cc.srrtt(), 62); // (80·66 + 1000)/100 = 62.8
        assert_eq!(f.cc.curr_rtt(), ms(75));
    }

    #[test]
    fn the_ack_rate_counts_acks_not_segments_per_100_ms_interval() {
        let mut f = flow(
            Config {
                initial_ssthresh: 10,
                ..Config::default()
            },
            10,
        );
        f.limited = false;
        // The first ACK rolls over (nothing counted yet) and is not counted.
        f.ack_n_at(at_ms(1), ms(50), 5);
        assert_eq!(f.cc.ack_rates(), (0, 0));
        for t in 2..=8 {
            f.ack_n_at(at_ms(t), ms(50), 5);
        }
        // 100 ms after the last roll-over: 7 ACKs (35 segments) counted.
        f.ack_n_at(at_ms(101), ms(50), 5);
        assert_eq!(f.cc.ack_rates(), (0, 7));
        for t in 102..=104 {
            f.ack_n_at(at_ms(t), ms(50), 5);
        }
        f.ack_n_at(at_ms(200), ms(50), 5); // 99 ms: still the same interval
        f.ack_n_at(at_ms(201), ms(50), 5);
        assert_eq!(f.cc.ack_rates(), (7, 4));
        assert_eq!(f.cc.ack_rate_diff(), 3);
    }

    #[test]
    fn an_ack_before_any_rtt_sample_pins_rtt_min_at_one_microsecond_as_the_reference_does() {
        // The module starts with curr_rtt = 0, and update_min_rtt takes
        // max(curr_rtt, 1).
        let mut f = flow(Config::default(), 10);
        f.ack_at(at_ms(10), None);
        assert_eq!(f.cc.min_rtt(), Some(SimDuration::from_micros(1)));
        f.ack_at(at_ms(11), ms(50));
        assert_eq!(f.cc.min_rtt(), Some(SimDuration::from_micros(1)));
        assert!(f.cc.srrtt() > 1_000_000);
    }

    #[test]
    fn calculate_min_rtt_blends_the_minimum_toward_the_current_rtt_after_ten_seconds() {
        for (on, want) in [(false, 50_000u64), (true, 78_000)] {
            let mut f = flow(
                Config {
                    calculate_min_rtt: on,
                    ..Config::default()
                },
                10,
            );
            f.ack_at(at_ms(10), ms(50));
            f.ack_at(at_ms(10_000), ms(90)); // 9.99 s after the minimum: kept
            assert_eq!(f.cc.min_rtt(), ms(50));
            // 10.001 s: (70·90 + 30·50)/100 = 78 ms.
            f.ack_at(at_ms(10_011), ms(90));
            assert_eq!(
                f.cc.min_rtt(),
                Some(SimDuration::from_micros(want)),
                "calculate_min_rtt {on}"
            );
        }
    }

    #[test]
    fn samples_in_the_first_second_of_a_cubic_epoch_do_not_reach_roccet() {
        let mut f = flow(
            Config {
                initial_ssthresh: 20,
                ..Config::default()
            },
            20,
        );
        f.ack_at(at_ms(100), ms(50)); // congestion avoidance: the epoch starts now
        assert_eq!(f.cc.cubic().epoch_start(), Some(at_ms(100)));
        f.ack_at(at_ms(1099), ms(80));
        assert_eq!(f.cc.curr_rtt(), ms(50));
        f.ack_at(at_ms(1100), ms(80));
        assert_eq!(f.cc.curr_rtt(), ms(80));
    }

    // ----- LAUNCH -----

    /// Slow start from 10 segments: RTT_min 50 ms, then 150 ms (rRTT 200 %,
    /// srRTT settles at 196 %). ACK-rate intervals: roll-overs at 1, 101 and
    /// 201 ms; `first` ACKs counted in the first, `second` in the second.
    fn launch(cfg: Config, first: u64, second: u64, rtt_ms: u64) -> Flow {
        let mut f = flow(cfg, 10);
        f.ack_at(at_ms(1), ms(50));
        for t in 2..2 + first {
            f.ack_at(at_ms(t), ms(rtt_ms));
        }
        f.ack_at(at_ms(101), ms(rtt_ms));
        for t in 102..102 + second {
            f.ack_at(at_ms(t), ms(rtt_ms));
        }
        f
    }

    #[test]
    fn launch_ends_the_first_slow_start_at_half_the_window_when_srrtt_is_high_and_the_ack_rate_falls() {
        let mut f = launch(Config::default(), 30, 20, 150);
        // 52 ACKs so far: cwnd 62, still in slow start.
        assert_eq!(f.w.cwnd, 62);
        assert_eq!(f.cc.launch_exit(), None);
        // Roll-over at 201 ms: 30 then 20 ACKs, a fall of 10.
        f.ack_at(at_ms(201), ms(150));
        let exit = f.cc.launch_exit().expect("no LAUNCH exit");
        assert_eq!((exit.cwnd_before, exit.cwnd_after, exit.ack_rate_diff), (62, 31, 10));
        // The truncated EWMA settles at 196 %: (80·196 + 20·200)/100 = 196.8.
        assert_eq!((exit.srrtt, exit.threshold), (196, 100));
        assert_eq!(exit.at, at_ms(201));
        assert_eq!((f.w.cwnd, f.w.ssthresh), (31, 31));
        assert_eq!(f.cc.mode(), "drain");
        // W_max is untouched (no maximum known yet).
        assert_eq!(f.cc.cubic().w_max(), 0);
    }

    #[test]
    fn launch_continues_when_the_ack_rate_fell_by_less_than_ack_rate_diff_ss() {
        let mut f = launch(Config::default(), 30, 21, 150);
        f.ack_at(at_ms(201), ms(150)); // a fall of 9
        assert_eq!(f.cc.launch_exit(), None);
        assert_eq!(f.w.cwnd, 64);
        assert_eq!(f.cc.mode(), "launch");
        // A rising ACK rate does not end LAUNCH either: 20 then 30 ACKs.
        let mut f = launch(Config::default(), 20, 30, 150);
        f.ack_at(at_ms(201), ms(150));
        assert_eq!(f.cc.ack_rate_diff(), -10);
        assert_eq!(f.cc.launch_exit(), None);
    }

    #[test]
    fn launch_continues_when_srrtt_is_not_above_the_bound() {
        // RTT 100 ms: rRTT exactly 100 %, srRTT ≤ 100.
        let mut f = launch(Config::default(), 30, 20, 100);
        f.ack_at(at_ms(201), ms(100));
        assert_eq!(f.cc.ack_rate_diff(), 10);
        assert!(f.cc.srrtt() <= 100);
        assert_eq!(f.cc.launch_exit(), None);
        // With a lower bound the same flow leaves.
        let mut f = launch(
            Config {
                sr_rtt_upper_bound: 90,
                ..Config::default()
            },
            30,
            20,
            100,
        );
        f.ack_at(at_ms(201), ms(100));
        assert!(f.cc.launch_exit().is_some());
    }

    #[test]
    fn a_later_launch_leaves_at_two_thirds_of_the_window() {
        // ssthresh is finite (here from initial_ssthresh), so this is not
        // the first slow start: cwnd − cwnd/3 = 62 − 20 = 42.
        let mut f = launch(
            Config {
                initial_ssthresh: 1000,
                ..Config::default()
            },
            30,
            20,
            150,
        );
        f.ack_at(at_ms(201), ms(150));
        let exit = f.cc.launch_exit().unwrap();
        assert_eq!((exit.cwnd_before, exit.cwnd_after), (62, 42));
        assert_eq!((f.w.cwnd, f.w.ssthresh), (42, 42));
    }

    #[test]
    fn after_a_roccet_event_the_window_is_frozen_for_100_ms() {
        let mut f = launch(Config::default(), 30, 20, 150);
        f.ack_at(at_ms(201), ms(150)); // LAUNCH exit at 201 ms, cwnd 31
        for t in [202, 250, 301] {
            f.ack_at(at_ms(t), ms(150));
            assert_eq!(f.w.cwnd, 31, "at {t} ms");
            assert_eq!(f.cc.mode(), "drain");
            assert_eq!(f.cc.cubic().epoch_start(), None);
        }
        // 101 ms after the event: congestion avoidance on a new CUBIC epoch.
        f.ack_at(at_ms(302), ms(150));
        assert_eq!(f.cc.mode(), "orbiter");
        assert_eq!(f.cc.cubic().epoch_start(), Some(at_ms(302)));
    }

    #[test]
    fn a_loss_in_launch_leaves_the_window_and_w_max_alone() {
        let mut f = flow(Config::default(), 10);
        for t in 1..=30 {
            f.ack_at(at_ms(t), ms(50));
        }
        assert_eq!(f.w.cwnd, 40);
        assert_eq!(f.ssthresh_at(at_ms(31)), 40);
        assert_eq!(f.cc.cubic().w_max(), 0);
        assert_eq!(f.cc.cubic().epoch_start(), None);
    }

    // ----- ORBITER -----

    /// Congestion avoidance at a fixed window (`initial_ssthresh` = cwnd,
    /// not cwnd-limited, so the window only moves on ROCCET events and no
    /// CUBIC epoch runs). One ACK of `segs` segments every 10 ms from 10 ms:
    /// 50 ms until 270 ms, then `rtt(t)`.
    fn orbiter(cwnd: u32, segs: u32, until_ms: u64, rtt: impl Fn(u64) -> u64) -> Flow {
        let mut f = flow(
            Config {
                initial_ssthresh: cwnd,
                ..Config::default()
            },
            cwnd,
        );
        f.limited = false;
        let mut t = 10;
        while t <= until_ms {
            f.ack_n_at(at_ms(t), ms(if t <= 270 { 50 } else { rtt(t) }), segs);
            t += 10;
        }
        f
    }

    #[test]
    fn orbiter_reduces_by_beta_at_the_end_of_a_five_rtt_interval_when_srrtt_exceeds_the_bound() {
        // The cum_cwnd interval is armed at 10 ms for 5 × 50 ms: it ends at the
        // first ACK after 260 ms (270 ms), then after 270 + 250 = 520 ms
        // (530 ms). From 280 ms the RTT is 150 ms (srRTT → 196 %), so the
        // check at 530 ms reduces: 100·717/1024 = 70.
        let f = orbiter(100, 1, 520, |_| 150);
        assert_eq!(f.w.cwnd, 100);
        assert!(f.cc.srrtt() > 190);
        assert_eq!(f.cc.orbiter_events(), 0);
        let mut f = orbiter(100, 1, 530, |_| 150);
        let ev = f.cc.last_orbiter_event().expect("no ORBITER event");
        assert_eq!(
            (ev.at, ev.cwnd_before, ev.cwnd_after, ev.threshold),
            (at_ms(530), 100, 70, 100)
        );
        assert_eq!((f.w.cwnd, f.w.ssthresh), (70, 70));
        assert_eq!(f.cc.cubic().w_max(), 100);
        assert_eq!(f.cc.cubic().epoch_start(), None);
        // The next interval is 5 × 150 ms from 530 ms: nothing until 1280 ms,
        // then 70·717/1024 = 49. W_max stays at its maximum, 100.
        let mut t = 540;
        while t <= 1280 {
            f.ack_at(at_ms(t), ms(150));
            t += 10;
        }
        assert_eq!((f.w.cwnd, f.cc.orbiter_events()), (70, 1));
        f.ack_at(at_ms(1290), ms(150));
        assert_eq!((f.w.cwnd, f.w.ssthresh, f.cc.orbiter_events()), (49, 49, 2));
        assert_eq!(f.cc.cubic().w_max(), 100);
    }

    #[test]
    fn rtt_jitter_raises_the_orbiter_threshold() {
        // 100 and 200 ms in turn: srRTT oscillates around 200 %, but the
        // jitter allowance is 100·100/50 + 100 = 300 %.
        let f = orbiter(100, 1, 1500, |t| if (t / 10) % 2 == 0 { 100 } else { 200 });
        assert!(f.cc.srrtt() > 150);
        assert_eq!(f.cc.orbiter_events(), 0);
        assert_eq!(f.w.cwnd, 100);
    }

    #[test]
    fn the_cum_cwnd_test_gates_the_orbiter_reduction() {
        // cwnd 10: 6 segments per ACK gives 100·(1 + 10n)/(1 + 6n) ≈ 166 %
        // < 200 %: no bandwidth limit, no reduction despite srRTT ≈ 196 %.
        let f = orbiter(10, 6, 1000, |_| 150);
        assert!(f.cc.srrtt() > 190);
        assert_eq!((f.cc.orbiter_events(), f.w.cwnd), (0, 10));
        // 4 segments per ACK: ≈ 250 % ≥ 200 %: reduced at 530 ms to 7.
        let f = orbiter(10, 4, 530, |_| 150);
        assert_eq!(f.cc.orbiter_events(), 1);
        assert_eq!(f.w.cwnd, 7);
        // The threshold is a parameter: 150 % lets 6 segments per ACK through.
        let mut f = flow(
            Config {
                initial_ssthresh: 10,
                ack_rate_diff_ca: 150,
                ..Config::default()
            },
            10,
        );
        f.limited = false;
        let mut t = 10;
        while t <= 530 {
            f.ack_n_at(at_ms(t), ms(if t <= 270 { 50 } else { 150 }), 6);
            t += 10;
        }
        assert_eq!(f.cc.orbiter_events(), 1);
    }

    #[test]
    fn an_ecn_echo_allows_the_orbiter_reduction_between_checks_once_srrtt_is_high() {
        let mut f = orbiter(100, 1, 100, |_| 150);
        let v = view(at_ms(100), f.una, f.nxt, false);
        f.cc.in_ack_event(
            at_ms(100),
            &mut f.w,
            &v,
            AckFlags {
                ece: true,
                ..AckFlags::default()
            },
        );
        // The echo waits until srRTT exceeds the allowance: 280 ms 40 % (x_j
        // 300 % for the jump from 50 to 150 ms), 290 ms 72 %, 300 ms 97 %,
        // 310 ms 117 %.
        let mut t = 110;
        while t <= 300 {
            f.ack_at(at_ms(t), ms(if t <= 270 { 50 } else { 150 }));
            t += 10;
        }
        assert_eq!(f.cc.orbiter_events(), 0);
        f.ack_at(at_ms(310), ms(150));
        assert_eq!(f.cc.orbiter_events(), 1);
        assert_eq!(f.w.cwnd, 70);
    }

    #[test]
    fn below_the_bound_orbiter_grows_exactly_like_cubic_without_hystart() {
        let cfg = Config {
            initial_ssthresh: 50,
            ..Config::default()
        };
        let mut f = flow(cfg.clone(), 50);
        let mut cubic = Cubic::new(cfg.cubic());
        let mut w = Window::new(50);
        cubic.init(SimTime::ZERO, &mut w, &view(SimTime::ZERO, 0, 0, true));
        for i in 1..=4000u64 {
            let now = at_ms(10 + i);
            if i == 2000 {
                // A loss half-way: the same reduction and W_max.
                let ss = f.ssthresh_at(now);
                let v = view(now, f.una, f.nxt, true);
                assert_eq!(ss, cubic.ssthresh(now, &w, &v));
                f.w.ssthresh = ss;
                f.w.cwnd = ss;
                w.ssthresh = ss;
                w.cwnd = ss;
            }
            f.ack_at(now, ms(50));
            let v = view(now, f.una, f.nxt, true);
            let s = AckSample {
                pkts_acked: 1,
                rtt: ms(50),
                in_flight: 0,
            };
            cubic.pkts_acked(now, &mut w, &v, &s);
            cubic.cong_avoid(now, &mut w, &v, 1);
            assert_eq!(f.w, w, "ACK {i}");
        }
        assert_eq!(f.cc.cubic().w_max(), cubic.w_max());
        assert_eq!(f.cc.orbiter_events(), 0);
        assert!(f.w.cwnd > 60);
    }

    #[test]
    fn a_loss_in_orbiter_is_cubics_with_fast_convergence_unless_losses_are_ignored() {
        let mut f = flow(
            Config {
                initial_ssthresh: 100,
                ..Config::default()
            },
            100,
        );
        assert_eq!(f.ssthresh_at(at_ms(1)), 70);
        assert_eq!(f.cc.cubic().w_max(), 100);
        f.w.cwnd = 80;
        f.w.ssthresh = 70;
        assert_eq!(f.ssthresh_at(at_ms(2)), 56);
        assert_eq!(f.cc.cubic().w_max(), 68); // 80·1741/2048
        let mut f = flow(
            Config {
                initial_ssthresh: 100,
                ignore_loss: true,
                ..Config::default()
            },
            100,
        );
        assert_eq!(f.ssthresh_at(at_ms(1)), 100);
        assert_eq!(f.cc.cubic().w_max(), 0);
    }

    #[test]
    fn a_timeout_forgets_rtt_min_cum_cwnd_and_cubic_but_keeps_srrtt() {
        let mut f = orbiter(100, 1, 400, |_| 150);
        let sr = f.cc.srrtt();
        assert!(sr > 100);
        f.ssthresh_at(at_ms(401));
        f.w.cwnd = 1;
        let v = view(at_ms(401), f.una, f.nxt, false);
        f.cc.set_state(at_ms(401), &mut f.w, &v, CaState::Loss);
        assert_eq!(f.cc.min_rtt(), None);
        assert_eq!(f.cc.cum_cwnd(), (1, 1));
        assert_eq!(f.cc.cubic().w_max(), 0);
        assert_eq!(f.cc.cubic().delay_min(), None);
        assert_eq!(f.cc.srrtt(), sr);
        assert_eq!(f.cc.curr_rtt(), ms(150));
    }

    #[test]
    fn the_mode_reports_launch_drain_and_orbiter() {
        let f = flow(Config::default(), 10);
        assert_eq!(f.cc.mode(), "launch");
        assert_eq!(f.cc.phase(), Phase::Launch);
        let f = orbiter(100, 1, 530, |_| 150);
        assert_eq!(f.cc.mode(), "drain");
        let f = orbiter(100, 1, 520, |_| 150);
        assert_eq!(f.cc.mode(), "orbiter");
    }
}
