//! CUBIC with HyStart, as Linux runs it (`net/ipv4/tcp_cubic.c`).
//!
//! # Sources
//!
//! * Linux `net/ipv4/tcp_cubic.c`, "CUBIC TCP v2.3", as in mainline from
//!   v7.1 on. The copy I read was the bpf-next mirror `kernel-patches/bpf` at
//!   commit `08bc0243d7825fc28ed740e81da5deba4fb0089e`. That copy already has
//!   the v7.1 split of `cwnd_event` into `cwnd_event_tx_start` (torvalds
//!   `d1e59a469737`); the January 2025 "tcp_cubic: fix incorrect HyStart round
//!   start detection" (the round reset runs before the `hystart_low_window`
//!   test); `4e1fddc98d25` "tcp_cubic: fix spurious Hystart ACK train
//!   detections for not-cwnd-limited flows" (the round reset moved from
//!   `cong_avoid` into `hystart_update`); and `b344579ca847` "tcp_cubic: fix
//!   spurious HYSTART_DELAY exit upon drop in min RTT" (every sample of a round
//!   lowers `curr_rtt`, not just the first eight). I compared it with the
//!   v6.6-era file (same mirror, commit `97a70177`), the BPF port
//!   `tools/testing/selftests/bpf/progs/bpf_cubic.c` (torvalds `015e7b0b`) and
//!   a 4.18 tree, to tell current from historical behaviour.
//! * RFC 9438, *CUBIC for Fast and Long-Distance Networks* (2023).
//! * S. Ha, I. Rhee, L. Xu, "CUBIC: A New TCP-Friendly High-Speed TCP
//!   Variant", ACM SIGOPS Operating Systems Review 42(5), 2008.
//! * S. Ha, I. Rhee, "Taming the elephants: New TCP slow start", Computer
//!   Networks 55(9), 2011 (HyStart).
//! * P. Bruhn, M. Muehleisen (Ericsson / RWTH Aachen), "Behavior of TCP CUBIC
//!   in Low-Latency Mobile Radio Networks" (slides; measured on Linux 4.19).
//!   Two optional changes come from it; both are off by default (see
//!   [`Config::hystart_reset_fix`] and [`Config::hystart_no_exit_on_new_min_rtt`]).
//!
//! # The model
//!
//! After a window reduction at window `W_max`, the window follows
//!
//! ```text
//!   W_cubic(t) = C·(t − K)³ + W_max,      K = ∛(W_max·(1 − β) / C)        (RFC 9438 eqs. 1–2)
//! ```
//!
//! where `t` is the time since the epoch started (the first ACK in
//! congestion avoidance after the reduction). RFC 9438 uses C = 0.4 and
//! β = 0.7. Linux computes K from the window the epoch actually starts at,
//! `K = ∛((W_max − cwnd_epoch)/C)`, which is the same thing when
//! `cwnd_epoch = β·W_max`. It also evaluates the curve one `delay_min` ahead,
//! at `t + RTT_min`: the window it aims at is the one due an RTT from now.
//! The per-ACK increase is set by `cnt`, the number of ACKed segments per
//! one-segment increase: `cnt = cwnd / (W_cubic − cwnd)`, or `100·cwnd` if the
//! curve is not above `cwnd`. `cnt` is capped at 20 while no `W_max` is known,
//! and is never below 2, so the window grows by at most 1.5× per RTT.
//!
//! The Reno-friendly ("TCP-friendly") estimate (RFC 9438 §4.3) is
//! `W_est ← W_est + α·acked/cwnd` with `α = 3(1 − β)/(1 + β)`. Linux adds one
//! segment to `tcp_cwnd` per `(cwnd·beta_scale) >> 3` ACKed segments, with
//! `beta_scale = ⌊8·(1024 + β)/3/(1024 − β)⌋`. For β = 717 that is 15, so
//! α_Linux = 8/15 ≈ 0.533 against 0.529. When `W_est > cwnd`, `cnt` is capped
//! at `cwnd/(W_est − cwnd)`.
//!
//! Fixed-point scales, all as in Linux:
//!
//! | quantity | unit / scale | range and overflow |
//! |---|---|---|
//! | β (`beta`) | 1/1024 (`BICTCP_BETA_SCALE`); 717 → 0.7002 | 1..=1023 |
//! | C | `cube_rtt_scale/1024` with `cube_rtt_scale = 10·bic_scale`; 41 → 410/1024 = 0.4004 | `bic_scale` 1..=214 748 364 |
//! | t, K | 1/1024 s (`BICTCP_HZ` = 10): `t = ((jiffies − epoch_start + usecs_to_jiffies(delay_min)) << 10) / HZ` | u64; K is u32 |
//! | K | `cubic_root(cube_factor·(W_max − cwnd))`, `cube_factor = 2⁴⁰/(10·bic_scale)` (the 2⁴⁰ makes the cube root come out in 1/1024 s) | product < 2⁶⁴ for `W_max − cwnd` < 6.8·10⁹ |
//! | curve offset | `Δ = (cube_rtt_scale·|t − K|³) >> 40` segments (`|t − K|³` is in 2⁻³⁰ s³, C in 2⁻¹⁰) | the u64 product wraps once \|t − K\| > ~347 s; Δ truncates to u32 |
//! | `cubic_root` | table `v[]` (cube roots of the top 6 bits) + one Newton–Raphson step | error < 1 + 0.2 % of the result (0.19 % for inputs ≥ 2³⁰; with bic_scale ≤ 51 every K input is ≥ 2³¹) |
//! | `delay_min`, HyStart times | µs, u32, wrapping like `tcp_mstamp` truncated to 32 bits | |
//! | `epoch_start`, `last_time` | jiffies (`HZ` = [`Config::hz`]), u32, wrapping | |
//! | windows, `cnt`, `ack_cnt`, `tcp_cwnd` | segments, u32, wrapping as in C | Linux's own limit: cwnd < 10⁶ segments |
//!
//! HyStart (Ha & Rhee 2011, as in Linux). While in slow start with
//! `cwnd ≥ hystart_low_window`, each RTT sample (`pkts_acked`) runs two tests:
//!
//! * ACK train: ACKs closer than `hystart_ack_delta_us` to the previous one
//!   continue the train; once the train has lasted longer than
//!   `(delay_min + ack_delay)/2` since the round started, leave slow start.
//!   `ack_delay` is Linux's TSO/GRO cushion `min(1 ms, 4·GSO_max_size/pacing_rate)`.
//! * Delay increase: `curr_rtt` is the smallest sample of the round. From
//!   the ninth sample on (`HYSTART_MIN_SAMPLES` = 8), leave if
//!   `curr_rtt > delay_min + clamp(delay_min/8, 4 ms, 16 ms)`.
//!
//! Leaving sets `ssthresh = cwnd`. A round begins at a *reset*
//! (`round_start = now`, `end_seq = snd_nxt`, `curr_rtt = ∞`,
//! `sample_cnt = 0`). By default (Linux) the reset happens on the first
//! sample whose `snd_una` is strictly beyond `end_seq`.
//!
//! ## "HyStart reset one packet too late" ([`Config::hystart_reset_fix`])
//!
//! A round covers the segments outstanding when it was reset, up to
//! `end_seq`. It is over on the ACK whose `snd_una` reaches `end_seq`: the ACK
//! for the last of those segments. Linux tests `after(snd_una, end_seq)`,
//! which is strictly beyond, so that ACK is still handled as part of the old
//! round. The reset comes one ACK later, on the first ACK that covers a
//! segment beyond `end_seq` (one sent after the previous reset).
//! `round_start` is then that ACK's arrival time, and
//! `end_seq` is `snd_nxt` as it stands at that point. That is the "one packet
//! late". In Linux 4.19, which the Ericsson study measured, it was worse: the
//! reset lived in `cong_avoid`, which runs after `pkts_acked` on the same ACK,
//! so the late ACK's RTT sample was also credited to the old round. Mainline
//! removed that part in `4e1fddc98d25` by resetting inside `hystart_update`
//! before the sample is used.
//!
//! With the fix, the ACK whose `snd_una` reaches `end_seq` (`!before`, not
//! `after`) is first processed as the last sample of its round (its RTT
//! belongs to a segment of that round). Then the round is reset, with
//! `round_start` = this ACK's time and `end_seq` = `snd_nxt` now. The stock
//! test still runs first on each sample, so an ACK that jumps past `end_seq`
//! resets before its sample is used. Effects: every round starts one ACK
//! earlier. The ACK-train clock then includes the gap between the previous
//! round's last ACK and this round's first, so with back-to-back trains the
//! train test fires one ACK earlier; with a gap wider than
//! `hystart_ack_delta_us`, the first ACK already breaks the train. `end_seq`
//! is taken before the segments sent for the round-ending ACK, so later
//! rounds end slightly earlier.
//!
//! ## "Do not exit in the current round due to a new RTT_min" ([`Config::hystart_no_exit_on_new_min_rtt`])
//!
//! If a sample attributed to the current round lowered an already known
//! `delay_min` (the very first sample, which only establishes it, does not
//! count), the delay test cannot end slow start before the next reset. The
//! ACK-train test is unaffected. In 4.19, `curr_rtt` froze after eight
//! samples, so a later drop of `delay_min` exited at once (the slides'
//! "reason 2"). Mainline (`b344579ca847`) lets every sample lower `curr_rtt`,
//! so a sample that lowers `delay_min` also lowers `curr_rtt`, and the test
//! cannot fire afterwards in that round. In mainline the option therefore
//! still matters in one case: `delay_min` lowered by samples that never reach
//! `curr_rtt`, namely those taken earlier in the round while
//! `cwnd < hystart_low_window`. Samples discarded within a second of an epoch
//! start reach neither.
//!
//! # Deviations from Linux
//!
//! 1. Clocks. Jiffies are `⌊now·HZ/10⁹⌋` with `HZ` = [`Config::hz`] (Linux
//!    `CONFIG_HZ`; default here 1000 as Fedora, RHEL and Ubuntu build it, the
//!    Kconfig default and Debian/Android use 250), truncated to u32. The µs clock is `⌊now/1000⌋`
//!    truncated to u32. An RTT sample in µs is the difference of the truncated
//!    send and ACK clocks, as `tcp_stamp_us_delta`. `usecs_to_jiffies` rounds up
//!    exactly; for HZ = 300 Linux uses a multiply–shift approximation of that.
//!    `epoch_start` uses `Option` instead of Linux's "0 means unset"
//!    sentinel, which in Linux misfires when jiffies are exactly 0.
//! 2. No TSO/GSO/GRO in the simulator: each ACK covers what the receiver
//!    acknowledged per packet, so the ACK-train spacing test sees per-segment
//!    timing instead of aggregated ACKs. Linux's cushion `hystart_ack_delay()` is
//!    kept, computed as Linux would: `sk_gso_max_size` = 65 536 and the
//!    `sk_pacing_rate` of `tcp_update_pacing_rate` (mss·max(cwnd, packets_out)
//!    /srtt × 200 % below ssthresh/2, else 120 %; unlimited before the first
//!    RTT sample). On cellular rates this is the 1 ms cap. Linux reads the rate
//!    set at the end of the previous ACK. Here it comes from the
//!    [`ConnView`] at `pkts_acked` time: srtt already includes this ACK's
//!    sample, and packets_out is after this ACK.
//! 3. The ACK-train threshold is halved as for `sk_pacing_status ==
//!    SK_PACING_NONE` (no fq, no internal pacing). The algorithm cannot see
//!    whether the framework paces (`TcpConfig::pacing`). Linux with fq would
//!    not halve it.
//! 4. `tp->lsndtime`, needed for the `TxStart` epoch shift, is not in
//!    [`ConnView`]. It is reconstructed as the latest `ACK time − RTT sample`
//!    seen, which is the send time of the newest acknowledged segment. That is
//!    exact unless the last segment sent before going idle was a retransmission
//!    (no RTT sample), in which case the shift comes out larger (it is still
//!    clamped at `now`, as in Linux).
//! 5. Parameters are per connection and fixed at construction (Linux: global
//!    module parameters; `beta_scale` and `cube_factor` are computed at module
//!    load). `beta` must be 1..=1023 (Linux accepts 0), `hz` one of 100, 250,
//!    300, 1000, and `hystart_detect` cannot be 0 (use `hystart = false`; with
//!    Linux's detect = 0 the rounds still run, but no test can fire).
//! 6. HyStart statistics (`LINUX_MIB_TCPHYSTART*`) are replaced by the
//!    [`Cubic::hystart_exit`] observer. If both tests fire on the same sample,
//!    the ACK train is reported (Linux counts both).
//! 7. The two Ericsson options above are not in Linux (both off by default).
//!
//! Behaviour worth knowing, as in Linux: `initial_ssthresh` is applied only
//! when HyStart is off; samples within one second of an epoch start
//! (`HZ` jiffies) are ignored; a retransmission timeout (`set_state(Loss)`)
//! forgets everything, including `W_max` and `delay_min`; once HyStart has
//! exited it stays off until the next timeout; `undo_cwnd` is Reno's.

use serde::{Deserialize, Serialize};

use super::helpers::{cong_avoid_ai, slow_start};
use super::{AckSample, CaEvent, CaState, CongestionControl, ConnView, Window, INFINITE_SSTHRESH};
use crate::units::{SimDuration, SimTime};

/// `BICTCP_BETA_SCALE`: β is in 1/1024.
pub const BETA_SCALE: u32 = 1024;
/// `BICTCP_HZ`: the curve's time unit is 2⁻¹⁰ s.
const BICTCP_HZ: u32 = 10;
/// `HYSTART_MIN_SAMPLES`.
const HYSTART_MIN_SAMPLES: u8 = 8;
/// `HYSTART_DELAY_MIN`, µs.
const HYSTART_DELAY_MIN_US: u32 = 4_000;
/// `HYSTART_DELAY_MAX`, µs.
const HYSTART_DELAY_MAX_US: u32 = 16_000;
/// Linux's default `sk_gso_max_size` (`GSO_LEGACY_MAX_SIZE`), bytes.
const GSO_MAX_SIZE: u64 = 65_536;
const USEC_PER_SEC: u64 = 1_000_000;
const USEC_PER_MSEC: u64 = 1_000;
const NSEC_PER_SEC: u64 = 1_000_000_000;

/// Which HyStart tests may end slow start (Linux `hystart_detect`: 1, 2, 3).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum HystartDetect {
    /// `HYSTART_ACK_TRAIN` (1).
    AckTrain,
    /// `HYSTART_DELAY` (2).
    Delay,
    /// Both (3, Linux's default).
    #[default]
    Both,
}

impl HystartDetect {
    fn ack_train(self) -> bool {
        matches!(self, HystartDetect::AckTrain | HystartDetect::Both)
    }
    fn delay(self) -> bool {
        matches!(self, HystartDetect::Delay | HystartDetect::Both)
    }
}

/// CUBIC's parameters: Linux's module parameters with their defaults, the
/// kernel's `HZ`, and two optional HyStart changes from the Ericsson LTE
/// study.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Lower `W_max` further when a loss comes below the previous maximum.
    pub fast_convergence: bool,
    /// Multiplicative decrease factor, in 1/1024 (717 ≈ 0.7).
    pub beta: u32,
    /// Initial slow-start threshold, segments; 0 = unlimited. As in Linux,
    /// applied only when `hystart` is off.
    pub initial_ssthresh: u32,
    /// The curve's constant C in Linux's scale: C = 10·bic_scale/1024
    /// (41 → 0.4004 segments/s³).
    pub bic_scale: u32,
    /// Never grow slower than the Reno estimate.
    pub tcp_friendliness: bool,
    /// Hybrid slow start.
    pub hystart: bool,
    /// Which HyStart tests may end slow start.
    pub hystart_detect: HystartDetect,
    /// HyStart tests run only from this window on, segments.
    pub hystart_low_window: u32,
    /// Largest spacing between ACKs that still counts as a train, µs.
    pub hystart_ack_delta_us: u32,
    /// The kernel's tick rate (`CONFIG_HZ`): 100, 250, 300 or 1000. It sets
    /// the resolution of the curve's clock and of the 1 s sample discard.
    pub hz: u32,
    /// Ericsson fix: reset the HyStart round on the ACK that ends it
    /// (`snd_una` reaches `end_seq`) instead of one ACK later (see the
    /// module documentation). Not in Linux.
    pub hystart_reset_fix: bool,
    /// Ericsson patch: a round in which a sample lowered `delay_min` cannot
    /// end slow start through the delay test. Not in Linux.
    pub hystart_no_exit_on_new_min_rtt: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            fast_convergence: true,
            beta: 717,
            initial_ssthresh: 0,
            bic_scale: 41,
            tcp_friendliness: true,
            hystart: true,
            hystart_detect: HystartDetect::Both,
            hystart_low_window: 16,
            hystart_ack_delta_us: 2000,
            hz: 1000,
            hystart_reset_fix: false,
            hystart_no_exit_on_new_min_rtt: false,
        }
    }
}

impl super::CcConfig for Config {
    fn build(self, _stream: u64) -> Box<dyn super::CongestionControl> {
        Box::new(Cubic::new(self))
    }

    fn validate(&self) -> Result<(), String> {
        if self.beta == 0 || self.beta >= BETA_SCALE {
            return Err(format!("beta must be in 1..=1023 (units of 1/1024), got {}", self.beta));
        }
        // Linux refuses bic_scale <= 0 or > INT_MAX / 10 (10·bic_scale must fit).
        if self.bic_scale == 0 || self.bic_scale > i32::MAX as u32 / 10 {
            return Err(format!(
                "bic_scale must be in 1..={}, got {}",
                i32::MAX / 10,
                self.bic_scale
            ));
        }
        if self.initial_ssthresh > INFINITE_SSTHRESH {
            return Err(format!(
                "initial_ssthresh must be at most {INFINITE_SSTHRESH} segments (0 = unlimited), got {}",
                self.initial_ssthresh
            ));
        }
        if self.hystart_ack_delta_us > i32::MAX as u32 {
            return Err(format!(
                "hystart_ack_delta_us must be at most {}, got {}",
                i32::MAX,
                self.hystart_ack_delta_us
            ));
        }
        if !matches!(self.hz, 100 | 250 | 300 | 1000) {
            return Err(format!(
                "hz must be one of 100, 250, 300, 1000 (Linux CONFIG_HZ), got {}",
                self.hz
            ));
        }
        Ok(())
    }
}

/// Which HyStart test ended slow start.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum HystartExitReason {
    AckTrain,
    Delay,
}

/// When and why HyStart ended slow start.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct HystartExit {
    pub reason: HystartExitReason,
    pub at: SimTime,
    /// The window at exit, which became `ssthresh`.
    pub cwnd: u32,
    pub delay_min: SimDuration,
    /// Train length since the round started (AckTrain) or the round's minimum
    /// RTT (Delay).
    pub measured: SimDuration,
    /// What `measured` exceeded.
    pub threshold: SimDuration,
}

/// The per-connection state (Linux `struct bictcp`), kept apart so it can be
/// reset or saved and restored as a whole.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct State {
    /// ACKed segments per one-segment increase.
    cnt: u32,
    /// `W_max`, segments.
    last_max_cwnd: u32,
    /// Window at the last curve evaluation.
    last_cwnd: u32,
    /// Jiffies at the last curve evaluation.
    last_time: u32,
    /// The curve's plateau, segments.
    bic_origin_point: u32,
    /// K, 1/1024 s.
    bic_k: u32,
    /// Smallest RTT sample, µs; 0 = none yet.
    delay_min: u32,
    /// Jiffies when the current epoch began.
    epoch_start: Option<u32>,
    /// ACKed segments not yet turned into Reno-estimate growth.
    ack_cnt: u32,
    /// Reno-friendly window estimate, segments.
    tcp_cwnd: u32,
    /// HyStart has ended slow start.
    found: bool,
    /// Samples counted in this round (saturates at 8).
    sample_cnt: u8,
    /// µs clock when the round began.
    round_start: u32,
    /// `snd_nxt` when the round began.
    end_seq: u64,
    /// µs clock of the last ACK that continued the train.
    last_ack: u32,
    /// Smallest RTT of this round, µs.
    curr_rtt: u32,
    /// A sample of this round lowered `delay_min` (Ericsson option).
    new_min_in_round: bool,
}

/// CUBIC congestion control with HyStart.
#[derive(Clone, Debug)]
pub struct Cubic {
    cfg: Config,
    /// `beta_scale` (Reno-estimate pace), precomputed as at module load.
    beta_scale: u32,
    /// `cube_rtt_scale` = 10·bic_scale.
    cube_rtt_scale: u32,
    /// `cube_factor` = 2⁴⁰ / (10·bic_scale).
    cube_factor: u64,
    st: State,
    exit: Option<HystartExit>,
    /// Reconstructed `tp->lsndtime` (deviation 4).
    last_send: Option<SimTime>,
    /// The window was below ssthresh at the last hook that saw it.
    slow_start: bool,
}

impl Cubic {
    pub fn new(cfg: Config) -> Self {
        let beta = cfg.beta;
        let beta_scale = (8 * (BETA_SCALE + beta) / 3 / (BETA_SCALE - beta)).max(8);
        let cube_rtt_scale = cfg.bic_scale * 10;
        let cube_factor = (1u64 << (10 + 3 * BICTCP_HZ)) / cube_rtt_scale as u64;
        Cubic {
            cfg,
            beta_scale,
            cube_rtt_scale,
            cube_factor,
            st: State::default(),
            exit: None,
            last_send: None,
            slow_start: true,
        }
    }

    pub fn config(&self) -> &Config {
        &self.cfg
    }

    // ----- observers -----

    /// The most recent HyStart exit from slow start, if any.
    pub fn hystart_exit(&self) -> Option<HystartExit> {
        self.exit
    }
    /// HyStart has ended slow start and stays off until the next timeout.
    pub fn hystart_found(&self) -> bool {
        self.st.found
    }
    /// `W_max` (Linux `last_max_cwnd`), segments.
    pub fn w_max(&self) -> u32 {
        self.st.last_max_cwnd
    }
    /// The plateau of the current curve (`bic_origin_point`), segments.
    pub fn origin_point(&self) -> u32 {
        self.st.bic_origin_point
    }
    /// K in Linux's unit, 1/1024 s.
    pub fn k_raw(&self) -> u32 {
        self.st.bic_k
    }
    /// K as a duration.
    pub fn k(&self) -> SimDuration {
        SimDuration::from_nanos(self.st.bic_k as u64 * NSEC_PER_SEC / 1024)
    }
    /// Start of the current epoch, in jiffies.
    pub fn epoch_start_jiffies(&self) -> Option<u32> {
        self.st.epoch_start
    }
    /// Start of the current epoch: the beginning of its jiffy (exact while
    /// the jiffies counter has not wrapped, i.e. for 49 days at HZ = 1000).
    pub fn epoch_start(&self) -> Option<SimTime> {
        self.st
            .epoch_start
            .map(|j| SimTime::from_nanos((j as u128 * NSEC_PER_SEC as u128).div_ceil(self.cfg.hz as u128) as u64))
    }
    /// ACKed segments per one-segment increase, as last computed.
    pub fn cnt(&self) -> u32 {
        self.st.cnt
    }
    /// The Reno-friendly window estimate, segments.
    pub fn reno_estimate(&self) -> u32 {
        self.st.tcp_cwnd
    }
    /// Smallest RTT sample retained (`delay_min`).
    pub fn delay_min(&self) -> Option<SimDuration> {
        (self.st.delay_min > 0).then(|| SimDuration::from_micros(self.st.delay_min as u64))
    }
    /// `snd_nxt` at the start of the current HyStart round.
    pub fn round_end_seq(&self) -> u64 {
        self.st.end_seq
    }
    /// The µs clock (u32, wrapping) when the current HyStart round began.
    pub fn round_start_us(&self) -> u32 {
        self.st.round_start
    }
    /// The smallest RTT of the current HyStart round, if any.
    pub fn round_min_rtt(&self) -> Option<SimDuration> {
        (self.st.curr_rtt != u32::MAX && self.st.sample_cnt > 0)
            .then(|| SimDuration::from_micros(self.st.curr_rtt as u64))
    }

    // ----- clocks (deviation 1) -----

    /// Linux `tcp_jiffies32`.
    fn jiffies(&self, t: SimTime) -> u32 {
        t.ticks(self.cfg.hz) as u32
    }
    /// Linux `bictcp_clock_us` (`tcp_mstamp` truncated to 32 bits).
    fn clock_us(t: SimTime) -> u32 {
        (t.as_nanos() / 1_000) as u32
    }
    /// Linux `usecs_to_jiffies`, rounding up.
    fn usecs_to_jiffies(&self, us: u32) -> u64 {
        (us as u64 * self.cfg.hz as u64).div_ceil(USEC_PER_SEC)
    }

    // ----- Linux bictcp_* helpers -----

    /// `bictcp_hystart_reset`: start a new round.
    fn hystart_reset(&mut self, now: SimTime, c: &ConnView) {
        let t = Self::clock_us(now);
        self.st.round_start = t;
        self.st.last_ack = t;
        self.st.end_seq = c.snd_nxt;
        self.st.curr_rtt = u32::MAX;
        self.st.sample_cnt = 0;
        self.st.new_min_in_round = false;
    }

    /// `bictcp_update`: recompute `cnt` from the curve and the Reno estimate.
    fn update(&mut self, now: SimTime, cwnd: u32, acked: u32) {
        let jiffies = self.jiffies(now);
        let hz = self.cfg.hz;
        let delay_min_jiffies = self.usecs_to_jiffies(self.st.delay_min);
        let st = &mut self.st;
        st.ack_cnt = st.ack_cnt.wrapping_add(acked);

        if st.last_cwnd == cwnd && (jiffies.wrapping_sub(st.last_time) as i32) <= (hz / 32) as i32 {
            return;
        }

        // The curve is evaluated at most once per jiffy; a reduction clears
        // epoch_start, which forces a new evaluation.
        if !(st.epoch_start.is_some() && jiffies == st.last_time) {
            st.last_cwnd = cwnd;
            st.last_time = jiffies;

            if st.epoch_start.is_none() {
                st.epoch_start = Some(jiffies);
                st.ack_cnt = acked;
                st.tcp_cwnd = cwnd;
                if st.last_max_cwnd <= cwnd {
                    st.bic_k = 0;
                    st.bic_origin_point = cwnd;
                } else {
                    st.bic_k = cubic_root(self.cube_factor.wrapping_mul((st.last_max_cwnd - cwnd) as u64));
                    st.bic_origin_point = st.last_max_cwnd;
                }
            }
            let epoch = st.epoch_start.unwrap_or(jiffies);

            // Time since the epoch plus one minimum RTT, in 1/1024 s. The
            // signed difference is widened as C widens an s32 into a u64.
            let mut t = (jiffies.wrapping_sub(epoch) as i32) as i64 as u64;
            t = t.wrapping_add(delay_min_jiffies);
            t = (t << BICTCP_HZ) / hz as u64;

            let k = st.bic_k as u64;
            let offs = t.abs_diff(k);
            let delta = ((self.cube_rtt_scale as u64)
                .wrapping_mul(offs)
                .wrapping_mul(offs)
                .wrapping_mul(offs)
                >> (10 + 3 * BICTCP_HZ)) as u32;
            let target = if t < k {
                st.bic_origin_point.wrapping_sub(delta)
            } else {
                st.bic_origin_point.wrapping_add(delta)
            };

            st.cnt = if target > cwnd {
                cwnd / (target - cwnd)
            } else {
                100u32.wrapping_mul(cwnd)
            };

            // No maximum known yet: grow at least 5 % per RTT.
            if st.last_max_cwnd == 0 && st.cnt > 20 {
                st.cnt = 20;
            }
        }

        if self.cfg.tcp_friendliness {
            let per_seg = cwnd.wrapping_mul(self.beta_scale) >> 3;
            // Linux loops `while (ack_cnt > per_seg) { ack_cnt -= per_seg; tcp_cwnd++; }`;
            // this is the same count in closed form (ack_cnt ends in 1..=per_seg).
            if per_seg > 0 && st.ack_cnt > per_seg {
                let n = (st.ack_cnt - 1) / per_seg;
                st.ack_cnt -= n * per_seg;
                st.tcp_cwnd = st.tcp_cwnd.wrapping_add(n);
            }
            if st.tcp_cwnd > cwnd {
                let max_cnt = cwnd / (st.tcp_cwnd - cwnd);
                if st.cnt > max_cnt {
                    st.cnt = max_cnt;
                }
            }
        }

        // At most one segment per two ACKed: 1.5x per RTT.
        st.cnt = st.cnt.max(2);
    }

    /// Linux `hystart_ack_delay`: min(1 ms, 4·gso_max_size / sk_pacing_rate)
    /// in µs, with the rate `tcp_update_pacing_rate` would set (deviation 2).
    fn hystart_ack_delay_us(w: &Window, c: &ConnView) -> u32 {
        let rate = linux_pacing_rate(w, c);
        if rate == 0 {
            return 0;
        }
        (GSO_MAX_SIZE * 4 * USEC_PER_SEC / rate).min(USEC_PER_MSEC) as u32
    }

    /// `hystart_update`: one RTT sample in slow start.
    fn hystart_update(&mut self, now: SimTime, w: &mut Window, c: &ConnView, delay: u32, min_dropped: bool) {
        if c.snd_una > self.st.end_seq {
            self.hystart_reset(now, c);
        }
        if min_dropped {
            self.st.new_min_in_round = true;
        }

        if w.cwnd >= self.cfg.hystart_low_window {
            if self.cfg.hystart_detect.ack_train() {
                let t = Self::clock_us(now);
                if (t.wrapping_sub(self.st.last_ack) as i32) <= self.cfg.hystart_ack_delta_us as i32 {
                    self.st.last_ack = t;
                    let mut threshold = self.st.delay_min.wrapping_add(Self::hystart_ack_delay_us(w, c));
                    // SK_PACING_NONE (deviation 3): trains may last RTT/2.
                    threshold >>= 1;
                    // C compares the s32 difference with a u32, i.e. unsigned.
                    let train = t.wrapping_sub(self.st.round_start);
                    if train > threshold {
                        self.leave_slow_start(now, w, HystartExitReason::AckTrain, train, threshold);
                    }
                }
            }
            if self.cfg.hystart_detect.delay() {
                self.st.curr_rtt = self.st.curr_rtt.min(delay);
                if self.st.sample_cnt < HYSTART_MIN_SAMPLES {
                    self.st.sample_cnt += 1;
                } else {
                    let dm = self.st.delay_min;
                    let threshold = dm.wrapping_add((dm >> 3).clamp(HYSTART_DELAY_MIN_US, HYSTART_DELAY_MAX_US));
                    let vetoed = self.cfg.hystart_no_exit_on_new_min_rtt && self.st.new_min_in_round;
                    if self.st.curr_rtt > threshold && !vetoed {
                        let rtt = self.st.curr_rtt;
                        self.leave_slow_start(now, w, HystartExitReason::Delay, rtt, threshold);
                    }
                }
            }
        }

        // Ericsson fix: the ACK that brings snd_una to end_seq closes the
        // round (after counting its own sample), instead of the next one.
        if self.cfg.hystart_reset_fix && !self.st.found && c.snd_una >= self.st.end_seq {
            self.hystart_reset(now, c);
        }
    }

    fn leave_slow_start(
        &mut self,
        now: SimTime,
        w: &mut Window,
        reason: HystartExitReason,
        measured_us: u32,
        threshold_us: u32,
    ) {
        let first = !self.st.found;
        self.st.found = true;
        w.ssthresh = w.cwnd;
        if first {
            self.exit = Some(HystartExit {
                reason,
                at: now,
                cwnd: w.cwnd,
                delay_min: SimDuration::from_micros(self.st.delay_min as u64),
                measured: SimDuration::from_micros(measured_us as u64),
                threshold: SimDuration::from_micros(threshold_us as u64),
            });
        }
    }

    fn note_window(&mut self, w: &Window) {
        self.slow_start = w.in_slow_start();
    }
}

/// Linux `tcp_update_pacing_rate` (bytes/s) from what the view offers:
/// `mss · max(cwnd, packets_out) / srtt`, ×2 below ssthresh/2, ×1.2 above.
/// Before any RTT sample Linux leaves `srtt_us` = 0 and skips the division.
fn linux_pacing_rate(w: &Window, c: &ConnView) -> u64 {
    // USEC_PER_SEC / 100 << 3: srtt_us below is itself scaled by 8.
    let mut rate = (c.mss as u64).saturating_mul((USEC_PER_SEC / 100) << 3);
    rate = rate.saturating_mul(if w.cwnd < w.ssthresh / 2 { 200 } else { 120 });
    rate = rate.saturating_mul(w.cwnd.max(c.packets_out) as u64);
    if let Some(srtt) = c.srtt {
        let srtt_us8 = srtt.as_nanos() * 8 / 1_000;
        rate = rate.checked_div(srtt_us8).unwrap_or(rate);
    }
    rate
}

/// Linux's `v[]`: for x in 0..64, `v[x] = cbrt(x << 18) − 1`, hand-tuned.
const CBRT_TABLE: [u8; 64] = [
    0, 54, 54, 54, 118, 118, 118, 118, //
    123, 129, 134, 138, 143, 147, 151, 156, //
    157, 161, 164, 168, 170, 173, 176, 179, //
    181, 185, 187, 190, 192, 194, 197, 199, //
    200, 202, 204, 206, 209, 211, 213, 215, //
    217, 219, 221, 222, 224, 225, 227, 229, //
    231, 232, 234, 236, 237, 239, 240, 242, //
    244, 245, 246, 248, 250, 251, 252, 254, //
];

/// Linux `cubic_root`: integer cube root from a 64-entry table of the top
/// bits followed by one Newton–Raphson step, `x ← (2x + a/x²)/3`. The
/// kernel writes x² as `x·(x − 1)` and the division by 3 as `·341 >> 10`.
/// Error: below 1 + 0.2 % of the result, and below 0.19 % of it for
/// `a ≥ 2³⁰` (with the default `bic_scale` every K input is ≥ 2³¹).
pub fn cubic_root(a: u64) -> u32 {
    let bits = 64 - a.leading_zeros(); // fls64
    if bits < 7 {
        return (CBRT_TABLE[a as usize] as u32 + 35) >> 6;
    }
    // b ≈ bits/3 − 1: a >> 3b keeps the top 4..6 bits, an index into the table.
    let b = ((bits * 84) >> 8) - 1;
    let idx = (a >> (b * 3)) as usize;
    let x = ((CBRT_TABLE[idx] as u32 + 10) << b) >> 6;
    let x = (2u32.wrapping_mul(x)).wrapping_add((a / (x as u64 * (x - 1) as u64)) as u32);
    x.wrapping_mul(341) >> 10
}

impl CongestionControl for Cubic {
    /// A Linux kernel module: when paced (`tcp.pacing`), its skbs are
    /// `tcp_tso_autosize`'s size.
    fn tso_segs(&self, autosize: u32) -> u32 {
        autosize
    }

    fn name(&self) -> &'static str {
        "cubic"
    }

    fn init(&mut self, now: SimTime, w: &mut Window, c: &ConnView) {
        self.st = State::default();
        self.exit = None;
        if self.cfg.hystart {
            self.hystart_reset(now, c);
        }
        if !self.cfg.hystart && self.cfg.initial_ssthresh != 0 {
            w.ssthresh = self.cfg.initial_ssthresh;
        }
        self.note_window(w);
    }

    /// `cubictcp_recalc_ssthresh`.
    fn ssthresh(&mut self, _now: SimTime, w: &Window, _c: &ConnView) -> u32 {
        let cwnd = w.cwnd;
        self.st.epoch_start = None;
        self.st.last_max_cwnd = if cwnd < self.st.last_max_cwnd && self.cfg.fast_convergence {
            cwnd.wrapping_mul(BETA_SCALE + self.cfg.beta) / (2 * BETA_SCALE)
        } else {
            cwnd
        };
        (cwnd.wrapping_mul(self.cfg.beta) / BETA_SCALE).max(2)
    }

    /// `cubictcp_cong_avoid`.
    fn cong_avoid(&mut self, now: SimTime, w: &mut Window, c: &ConnView, acked: u32) {
        if c.is_cwnd_limited {
            let mut acked = acked;
            let mut grow = true;
            if w.in_slow_start() {
                acked = slow_start(w, acked);
                grow = acked > 0;
            }
            if grow {
                self.update(now, w.cwnd, acked);
                cong_avoid_ai(w, self.st.cnt, acked);
            }
        }
        self.note_window(w);
    }

    /// `cubictcp_state`: a timeout forgets everything.
    fn set_state(&mut self, now: SimTime, w: &mut Window, c: &ConnView, new: CaState) {
        if new == CaState::Loss {
            self.st = State::default();
            self.hystart_reset(now, c);
        }
        self.note_window(w);
    }

    /// `cubictcp_cwnd_event_tx_start`: after an idle period, shift the epoch
    /// so the curve resumes where it stopped.
    fn cwnd_event(&mut self, now: SimTime, w: &mut Window, _c: &ConnView, ev: CaEvent) {
        if ev == CaEvent::TxStart {
            if let (Some(epoch), Some(last_send)) = (self.st.epoch_start, self.last_send) {
                let jnow = self.jiffies(now);
                let delta = jnow.wrapping_sub(self.jiffies(last_send)) as i32;
                if delta > 0 {
                    let mut e = epoch.wrapping_add(delta as u32);
                    // after(e, jnow)
                    if (e.wrapping_sub(jnow) as i32) > 0 {
                        e = jnow;
                    }
                    self.st.epoch_start = Some(e);
                }
            }
        }
        self.note_window(w);
    }

    /// `cubictcp_acked`: RTT samples feed `delay_min` and HyStart.
    fn pkts_acked(&mut self, now: SimTime, w: &mut Window, c: &ConnView, s: &AckSample) {
        let Some(rtt) = s.rtt else {
            self.note_window(w);
            return;
        };
        // RTT in µs as the difference of the truncated µs clocks.
        let sent = SimTime::from_nanos(now.as_nanos().saturating_sub(rtt.as_nanos()));
        self.last_send = Some(self.last_send.map_or(sent, |t| t.max(sent)));
        let rtt_us = (now.as_nanos() / 1_000 - sent.as_nanos() / 1_000).min(u32::MAX as u64) as u32;

        // Samples right after a reduction (the first second of an epoch) are
        // ignored.
        if let Some(epoch) = self.st.epoch_start {
            if (self.jiffies(now).wrapping_sub(epoch) as i32) < self.cfg.hz as i32 {
                self.note_window(w);
                return;
            }
        }

        let delay = rtt_us.max(1);
        // A drop of an already known minimum (the first sample only sets it).
        let dropped = self.st.delay_min != 0 && delay < self.st.delay_min;
        if self.st.delay_min == 0 || self.st.delay_min > delay {
            self.st.delay_min = delay;
        }

        if !self.st.found && w.in_slow_start() && self.cfg.hystart {
            self.hystart_update(now, w, c, delay, dropped);
        }
        self.note_window(w);
    }

    /// Linux uses `tcp_reno_undo_cwnd`.
    fn undo_cwnd(&mut self, _now: SimTime, w: &Window, prior_cwnd: u32) -> u32 {
        w.cwnd.max(prior_cwnd)
    }

    fn mode(&self) -> &'static str {
        if self.slow_start {
            "slow_start"
        } else {
            "cong_avoid"
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::cc::{registry, CcConfig};

    use crate::transport::cc::testkit::{self, at_ms, one_ack, seg_view, Bulk};

    const MSS: u64 = testkit::MSS as u64;

    fn view(now: SimTime, una_segs: u64, nxt_segs: u64, srtt: Option<SimDuration>, limited: bool) -> ConnView {
        ConnView {
            srtt,
            ..seg_view(now, una_segs, nxt_segs, CaState::Open, limited)
        }
    }

    /// A bulk sender whose flight is always the full window (the kit's
    /// [`Bulk`]); every ACK acknowledges one segment and the hooks run in
    /// the framework's order (`pkts_acked` with the new `snd_una` and the
    /// old `snd_nxt`, then `cong_avoid`, then the window is refilled). The
    /// tests give each ACK its time (`ack_at`).
    type Flow = Bulk<Cubic>;

    /// An ACK of one segment with this RTT sample.
    fn sample(rtt: SimDuration) -> AckSample {
        one_ack(1, Some(rtt))
    }

    fn flow(cfg: Config, initial_cwnd: u32) -> Flow {
        Bulk::new(Cubic::new(cfg), initial_cwnd)
    }

    // ----- configuration -----

    #[test]
    fn the_defaults_are_linux_module_parameters() {
        let c = Config::default();
        assert!(c.fast_convergence && c.tcp_friendliness && c.hystart);
        assert_eq!((c.beta, c.initial_ssthresh, c.bic_scale), (717, 0, 41));
        assert_eq!(c.hystart_detect, HystartDetect::Both);
        assert_eq!((c.hystart_low_window, c.hystart_ack_delta_us), (16, 2000));
        assert!(!c.hystart_reset_fix && !c.hystart_no_exit_on_new_min_rtt);
        assert_eq!(c.validate(), Ok(()));
        let cc = Cubic::new(c);
        // Precomputed as at module load: beta_scale = 8*1741/3/307 = 15,
        // cube_rtt_scale = 410, cube_factor = 2^40 / 410.
        assert_eq!(
            (cc.beta_scale, cc.cube_rtt_scale, cc.cube_factor),
            (15, 410, 2_681_735_677)
        );
        assert_eq!(cc.name(), "cubic");
    }

    #[test]
    fn validation_names_the_bad_parameter() {
        let bad = |f: fn(&mut Config), name: &str| {
            let mut c = Config::default();
            f(&mut c);
            let e = c.validate().unwrap_err();
            assert!(e.contains(name), "{e}");
        };
        bad(|c| c.beta = 0, "beta");
        bad(|c| c.beta = 1024, "beta");
        bad(|c| c.bic_scale = 0, "bic_scale");
        bad(|c| c.bic_scale = 300_000_000, "bic_scale");
        bad(|c| c.hz = 1200, "hz");
        bad(|c| c.hystart_ack_delta_us = u32::MAX, "hystart_ack_delta_us");
        bad(|c| c.initial_ssthresh = u32::MAX, "initial_ssthresh");
        let c = Config {
            beta: 1023,
            bic_scale: 1,
            ..Config::default()
        };
        assert_eq!(c.validate(), Ok(()));
    }

    #[test]
    fn the_registry_builds_cubic_from_a_parameter_table_and_rejects_unknown_keys() {
        let cc = registry::build("cubic", &serde_json::json!({"beta": 819, "hystart_detect": "delay"})).unwrap();
        assert_eq!(cc.name(), "cubic");
        let e = registry::build("cubic", &serde_json::json!({"beta": 1024}))
            .err()
            .unwrap();
        assert!(e.contains("beta"), "{e}");
        assert!(registry::build("cubic", &serde_json::json!({"betta": 700})).is_err());
        let resolved = registry::resolve("cubic", &serde_json::Value::Null).unwrap();
        assert_eq!(resolved["beta"], 717);
        assert_eq!(resolved["hystart_detect"], "both");
        assert_eq!(resolved["hz"], 1000);
    }

    // ----- multiplicative decrease -----

    #[test]
    fn a_loss_at_cwnd_100_sets_ssthresh_to_70_and_w_max_to_100() {
        let mut cc = Cubic::new(Config::default());
        let mut w = Window::new(100);
        let v = view(at_ms(1), 0, 100, None, true);
        cc.init(SimTime::ZERO, &mut w, &v);
        // 100 * 717 / 1024 = 70.02 -> 70.
        assert_eq!(cc.ssthresh(at_ms(1), &w, &v), 70);
        assert_eq!(cc.w_max(), 100);
        assert_eq!(cc.epoch_start(), None);
    }

    #[test]
    fn fast_convergence_lowers_w_max_when_the_new_maximum_is_below_the_last() {
        let mut cc = Cubic::new(Config::default());
        let mut w = Window::new(100);
        let v = view(at_ms(1), 0, 100, None, true);
        cc.init(SimTime::ZERO, &mut w, &v);
        cc.ssthresh(at_ms(1), &w, &v);
        w.cwnd = 80;
        // ssthresh = 80 * 717 / 1024 = 56.02 -> 56;
        // w_max = 80 * (1024 + 717) / 2048 = 139280 / 2048 = 68.01 -> 68.
        assert_eq!(cc.ssthresh(at_ms(2), &w, &v), 56);
        assert_eq!(cc.w_max(), 68);
        // A loss above the last maximum takes the window as it is.
        w.cwnd = 90;
        cc.ssthresh(at_ms(3), &w, &v);
        assert_eq!(cc.w_max(), 90);
    }

    #[test]
    fn without_fast_convergence_w_max_is_the_window_at_the_loss() {
        let mut cc = Cubic::new(Config {
            fast_convergence: false,
            ..Config::default()
        });
        let mut w = Window::new(100);
        let v = view(at_ms(1), 0, 100, None, true);
        cc.ssthresh(at_ms(1), &w, &v);
        w.cwnd = 80;
        cc.ssthresh(at_ms(2), &w, &v);
        assert_eq!(cc.w_max(), 80);
    }

    #[test]
    fn ssthresh_never_falls_below_two_segments() {
        let mut cc = Cubic::new(Config::default());
        let w = Window::new(2);
        let v = view(at_ms(1), 0, 2, None, true);
        // 2 * 717 / 1024 = 1.4 -> 1 -> raised to 2.
        assert_eq!(cc.ssthresh(at_ms(1), &w, &v), 2);
    }

    // ----- the cube root -----

    #[test]
    fn cubic_root_agrees_with_f64_cbrt_within_its_documented_error() {
        for (a, want) in [(0u64, 0u32), (1, 1), (8, 2), (27, 3), (63, 4)] {
            assert_eq!(cubic_root(a), want, "a = {a}");
        }
        let check = |a: u64| {
            let x = cubic_root(a) as f64;
            let t = (a as f64).cbrt();
            let err = (x - t).abs();
            assert!(err < 1.0 + 0.002 * t, "a = {a}: {x} vs {t}");
            if a >= 1 << 30 {
                assert!(err / t < 0.0019, "a = {a}: {x} vs {t}, {:.4} %", 100.0 * err / t);
            }
        };
        // Every input below 2^20, then 2 million spread over all 64 bits.
        for a in 0..(1u64 << 20) {
            check(a);
        }
        let mut s: u64 = 0x9e37_79b9_7f4a_7c15;
        for i in 0..2_000_000u64 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let bits = 1 + (i % 64) as u32;
            check(if bits == 64 { s } else { s & ((1u64 << bits) - 1) });
        }
        check(u64::MAX);
    }

    #[test]
    fn k_is_the_cube_root_of_the_window_deficit_over_c() {
        let mut f = flow(Config::default(), 10);
        f.w.cwnd = 500;
        let v = view(at_ms(1000), 0, 500, None, true);
        f.w.ssthresh = f.cc.ssthresh(at_ms(1000), &f.w, &v);
        assert_eq!(f.w.ssthresh, 350); // 500 * 717 / 1024 = 350.1
        f.w.cwnd = 350;
        f.cc.cong_avoid(at_ms(1000), &mut f.w, &v, 1);
        // K = cbrt((500 - 350) / C), C = 410/1024: 7.2105 s = 7383.6 / 1024 s.
        let c = 410.0 / 1024.0;
        let k = (150.0f64 / c).cbrt();
        let got = f.cc.k_raw() as f64 / 1024.0;
        assert!((got - k).abs() / k < 0.002, "K {got} vs {k}");
        assert_eq!(f.cc.origin_point(), 500);
        assert_eq!(f.cc.epoch_start(), Some(at_ms(1000)));
    }

    // ----- window growth -----

    /// Runs congestion avoidance after a loss at `w_max`, one ACK per
    /// segment, `cwnd` ACKs per `rtt` (a full pipe), `delay_min` = `rtt`.
    /// Returns (seconds since the epoch started, cwnd) after every ACK.
    fn run_after_loss(cfg: Config, w_max: u32, rtt_ms: u64, secs: u64) -> (Cubic, Vec<(f64, u32)>) {
        let mut f = flow(cfg, 10);
        let rtt = SimDuration::from_millis(rtt_ms);
        // One RTT sample before the loss sets delay_min.
        f.ack_at(at_ms(rtt_ms), Some(rtt));
        let t0 = at_ms(1000);
        f.w.cwnd = w_max;
        let v = view(t0, f.una, f.nxt, None, true);
        f.w.ssthresh = f.cc.ssthresh(t0, &f.w, &v);
        f.w.cwnd = f.w.ssthresh; // the framework's window at the end of recovery
        let mut now = t0;
        let mut trace = Vec::new();
        let end = t0 + SimDuration::from_secs(secs);
        while now < end {
            f.ack_at(now, Some(rtt));
            trace.push((now.saturating_since(t0).as_secs_f64(), f.w.cwnd));
            now += SimDuration::from_nanos(rtt.as_nanos() / f.w.cwnd as u64);
        }
        assert_eq!(f.cc.epoch_start(), Some(t0));
        (f.cc, trace)
    }

    fn cwnd_at(trace: &[(f64, u32)], t: f64) -> u32 {
        trace.iter().take_while(|(s, _)| *s <= t).last().unwrap().1
    }

    #[test]
    fn after_a_loss_the_window_follows_the_cubic_curve_and_reaches_w_max_at_k() {
        // W_max = 500, beta 0.7 -> cwnd 350; C = 410/1024; RTT 100 ms, so the
        // Reno estimate (350 + 0.53 per RTT) stays below the curve.
        // Checked with HZ = 1000 and HZ = 250 (4 ms jiffies).
        for hz in [1000, 250] {
            let (cc, trace) = run_after_loss(
                Config {
                    hz,
                    ..Config::default()
                },
                500,
                100,
                12,
            );
            let c = 410.0 / 1024.0;
            let k = (150.0f64 / c).cbrt(); // 7.21 s
            let w = |t: f64| c * (t - k).powi(3) + 500.0;
            // Linux evaluates the curve at t + delay_min and cwnd needs about one
            // RTT (cwnd ACKs at 1/cnt each) to climb to that target, so cwnd(t)
            // tracks W(t). Residual error: integer cnt (growth happens in whole
            // segments, up to one segment behind), the curve's 1/1024 s time
            // grid and once-per-jiffy evaluation, and K's 0.2 % fixed-point
            // error (< 15 ms here, < 0.1 segment on the flat part). Two segments
            // cover all of it.
            for t in [0.5, 1.0, 2.0, 4.0, 6.0, k, 8.0, 9.0, 10.0, 11.5] {
                let got = cwnd_at(&trace, t) as f64;
                assert!(
                    (got - w(t)).abs() <= 2.0,
                    "HZ {hz}, t = {t:.2} s: cwnd {got}, W(t) = {:.2}",
                    w(t)
                );
            }
            // And after every one of the ~55 000 ACKs (the largest error seen is
            // 1.5 segments).
            for &(t, cwnd) in &trace {
                assert!(
                    (cwnd as f64 - w(t)).abs() <= 2.0,
                    "HZ {hz}, t = {t:.4} s: cwnd {cwnd}, W(t) = {:.2}",
                    w(t)
                );
            }
            // The plateau: W_max is reached at K (within the same two segments)
            // and not overshot by more than a segment before it.
            let at_k = cwnd_at(&trace, k);
            assert!((498..=501).contains(&at_k), "cwnd at K = {at_k}");
            assert!(cwnd_at(&trace, k - 1.0) <= 501);
            assert!(cwnd_at(&trace, 11.5) > 505, "convex growth beyond W_max");
            // Neither the Reno estimate nor the 5 %-per-RTT cap played a role.
            assert!(cc.reno_estimate() < 500);
        }
    }

    #[test]
    fn at_small_windows_and_short_rtts_the_reno_estimate_dominates() {
        // W_max = 20 -> cwnd 14, RTT 10 ms. The curve would plateau near 20
        // (K = cbrt(6 / C) = 2.47 s), but the Reno estimate grows by
        // 8/15 segment per RTT (one segment per (cwnd * 15) >> 3 ACKs).
        let (cc, trace) = run_after_loss(Config::default(), 20, 10, 2);
        let c = 410.0 / 1024.0;
        let k = (6.0f64 / c).cbrt();
        for t in [0.5, 1.0, 1.9] {
            let reno = 14.0 + (8.0 / 15.0) * t / 0.010;
            let cubic = c * (t - k).powi(3) + 20.0;
            let got = cwnd_at(&trace, t) as f64;
            assert!(got > cubic + 10.0, "t = {t}: cwnd {got} not above the curve {cubic:.1}");
            // The window trails the estimate from below: cnt = cwnd/(W_est −
            // cwnd) needs about an RTT to close the gap, and the ACK count per
            // estimate segment, (cwnd·15) >> 3, is floored (observed lag
            // 1.7–2.3 segments).
            assert!(
                (got - reno).abs() <= 3.0,
                "t = {t}: cwnd {got}, Reno estimate {reno:.1}"
            );
        }
        assert!(cc.reno_estimate() >= cwnd_at(&trace, 1.9));

        // Without TCP friendliness the same flow stays on the curve.
        let (_, trace) = run_after_loss(
            Config {
                tcp_friendliness: false,
                ..Config::default()
            },
            20,
            10,
            2,
        );
        assert!(cwnd_at(&trace, 1.9) <= 20);
    }

    #[test]
    fn the_curve_clock_counts_jiffies_at_the_configured_hz() {
        let cc = Cubic::new(Config {
            hz: 250,
            ..Config::default()
        });
        assert_eq!(cc.jiffies(at_ms(1003)), 250);
        assert_eq!(cc.jiffies(at_ms(1004)), 251);
        // usecs_to_jiffies rounds up: 10.001 ms = 2.5 jiffies -> 3.
        assert_eq!(cc.usecs_to_jiffies(10_001), 3);
        assert_eq!(cc.usecs_to_jiffies(8_000), 2);
        let mut cc = Cubic::new(Config {
            hz: 250,
            ..Config::default()
        });
        let mut w = Window::new(100);
        w.ssthresh = 50;
        let v = view(at_ms(1003), 0, 100, None, true);
        cc.init(SimTime::ZERO, &mut w, &v);
        cc.cong_avoid(at_ms(1003), &mut w, &v, 1);
        assert_eq!(cc.epoch_start_jiffies(), Some(250));
        assert_eq!(cc.epoch_start(), Some(at_ms(1000)));
    }

    #[test]
    fn slow_start_stops_at_ssthresh_and_the_rest_of_the_ack_starts_an_epoch() {
        let mut cc = Cubic::new(Config::default());
        let mut w = Window::new(18);
        w.ssthresh = 20;
        let v = view(at_ms(1000), 0, 18, None, true);
        cc.init(SimTime::ZERO, &mut w, &v);
        assert_eq!(cc.mode(), "slow_start");
        cc.cong_avoid(at_ms(1000), &mut w, &v, 5);
        // Slow start takes cwnd to 20 and leaves 3 segments. First epoch with
        // no W_max: origin = 20, K = 0, target 20, cnt = 100 * 20 capped at
        // 20; the Reno estimate needs (20 * 15) >> 3 = 37 ACKs; 3 < 20 so
        // they wait in cwnd_cnt.
        assert_eq!((w.cwnd, w.cwnd_cnt), (20, 3));
        assert_eq!(cc.cnt(), 20);
        assert_eq!(cc.origin_point(), 20);
        assert_eq!(cc.epoch_start(), Some(at_ms(1000)));
        assert_eq!(cc.mode(), "cong_avoid");
    }

    #[test]
    fn an_application_limited_flow_does_not_grow_its_window() {
        for ssthresh in [INFINITE_SSTHRESH, 5] {
            let mut cc = Cubic::new(Config::default());
            let mut w = Window::new(10);
            w.ssthresh = ssthresh;
            let v = view(at_ms(10), 0, 3, None, false);
            cc.init(SimTime::ZERO, &mut w, &v);
            for i in 0..50 {
                cc.cong_avoid(at_ms(10 + i), &mut w, &v, 1);
            }
            assert_eq!((w.cwnd, w.cwnd_cnt), (10, 0));
            assert_eq!(cc.epoch_start(), None);
        }
    }

    #[test]
    fn the_first_epoch_grows_at_least_five_percent_per_rtt_while_w_max_is_unknown() {
        // cwnd 100 above ssthresh without any loss: the curve is flat at
        // cwnd (K = 0), so cnt would be 100 * cwnd; Linux caps it at 20.
        let mut cc = Cubic::new(Config {
            tcp_friendliness: false,
            ..Config::default()
        });
        let mut w = Window::new(100);
        w.ssthresh = 50;
        let v = view(at_ms(5), 0, 100, None, true);
        cc.init(SimTime::ZERO, &mut w, &v);
        cc.cong_avoid(at_ms(5), &mut w, &v, 1);
        assert_eq!(cc.cnt(), 20);
    }

    #[test]
    fn sending_again_after_idle_shifts_the_epoch_by_the_idle_time() {
        let mut cc = Cubic::new(Config::default());
        let mut w = Window::new(100);
        w.ssthresh = 50;
        let v = view(at_ms(2000), 0, 100, None, true);
        cc.init(SimTime::ZERO, &mut w, &v);
        cc.cong_avoid(at_ms(2000), &mut w, &v, 1);
        assert_eq!(cc.epoch_start_jiffies(), Some(2000));
        // The last segment left at 2.4 s (ACKed at 2.5 s with a 100 ms RTT).
        cc.pkts_acked(at_ms(2500), &mut w, &v, &sample(SimDuration::from_millis(100)));
        // Idle until 5.4 s: lsndtime delta = 3000 jiffies, epoch 2000 -> 5000.
        cc.cwnd_event(at_ms(5400), &mut w, &v, CaEvent::TxStart);
        assert_eq!(cc.epoch_start_jiffies(), Some(5000));
        assert_eq!(cc.epoch_start(), Some(at_ms(5000)));
        // The shifted epoch never moves past now: last send 5.45 s, epoch 5 s,
        // next transmission at 5.8 s -> 5000 + 350 = 5350 <= 5800, kept;
        // a send that began before the epoch would be clamped.
        cc.pkts_acked(at_ms(5500), &mut w, &v, &sample(SimDuration::from_millis(50)));
        cc.cwnd_event(at_ms(5800), &mut w, &v, CaEvent::TxStart);
        assert_eq!(cc.epoch_start_jiffies(), Some(5350));

        let mut cc = Cubic::new(Config::default());
        let mut w = Window::new(100);
        w.ssthresh = 50;
        cc.init(SimTime::ZERO, &mut w, &v);
        cc.pkts_acked(at_ms(1950), &mut w, &v, &sample(SimDuration::from_millis(50))); // sent at 1.9 s
        cc.cong_avoid(at_ms(2000), &mut w, &v, 1); // epoch at 2.0 s
        cc.cwnd_event(at_ms(3000), &mut w, &v, CaEvent::TxStart); // 2000 + 1100 > 3000
        assert_eq!(cc.epoch_start_jiffies(), Some(3000));
    }

    #[test]
    fn rtt_samples_in_the_first_second_of_an_epoch_are_ignored() {
        let mut cc = Cubic::new(Config::default());
        let mut w = Window::new(100);
        w.ssthresh = 50;
        let v = view(at_ms(100), 0, 100, None, true);
        cc.init(SimTime::ZERO, &mut w, &v);
        cc.pkts_acked(at_ms(100), &mut w, &v, &sample(SimDuration::from_millis(40)));
        assert_eq!(cc.delay_min(), Some(SimDuration::from_millis(40)));
        cc.cong_avoid(at_ms(1000), &mut w, &v, 1); // epoch at jiffy 1000
        cc.pkts_acked(at_ms(1999), &mut w, &v, &sample(SimDuration::from_millis(20)));
        assert_eq!(cc.delay_min(), Some(SimDuration::from_millis(40)));
        cc.pkts_acked(at_ms(2000), &mut w, &v, &sample(SimDuration::from_millis(20)));
        assert_eq!(cc.delay_min(), Some(SimDuration::from_millis(20)));
    }

    #[test]
    fn a_timeout_forgets_w_max_and_delay_min_and_re_arms_hystart() {
        let mut f = flow(Config::default(), 16);
        for i in 1..=40 {
            f.ack_at(
                at_ms(1000 + 3 * i),
                Some(SimDuration::from_millis(if i <= 16 { 50 } else { 57 })),
            );
        }
        assert!(f.cc.hystart_found());
        let v = view(at_ms(2000), f.una, f.nxt, None, true);
        f.w.ssthresh = f.cc.ssthresh(at_ms(2000), &f.w, &v);
        assert_eq!(f.cc.w_max(), 40);
        f.w.cwnd = 1;
        f.cc.set_state(at_ms(2000), &mut f.w, &v, CaState::Loss);
        assert_eq!(f.cc.w_max(), 0);
        assert_eq!(f.cc.delay_min(), None);
        assert!(!f.cc.hystart_found());
        assert_eq!(f.cc.round_end_seq(), f.nxt * MSS);
        assert_eq!(f.cc.mode(), "slow_start");
        // Recovery resets nothing: the loss at cwnd 1 just records W_max = 1.
        f.cc.ssthresh(at_ms(2100), &f.w, &v);
        f.cc.set_state(at_ms(2100), &mut f.w, &v, CaState::Recovery);
        assert_eq!(f.cc.w_max(), 1);
        assert_eq!(f.cc.epoch_start(), None);
    }

    #[test]
    fn initial_ssthresh_applies_only_when_hystart_is_off() {
        let cfg = Config {
            initial_ssthresh: 30,
            ..Config::default()
        };
        let mut w = Window::new(10);
        Cubic::new(cfg.clone()).init(SimTime::ZERO, &mut w, &view(SimTime::ZERO, 0, 0, None, true));
        assert_eq!(w.ssthresh, INFINITE_SSTHRESH);
        Cubic::new(Config { hystart: false, ..cfg }).init(
            SimTime::ZERO,
            &mut w,
            &view(SimTime::ZERO, 0, 0, None, true),
        );
        assert_eq!(w.ssthresh, 30);
    }

    #[test]
    fn undo_restores_the_larger_of_the_current_and_prior_window() {
        let mut cc = Cubic::new(Config::default());
        let mut w = Window::new(70);
        assert_eq!(cc.undo_cwnd(SimTime::ZERO, &w, 100), 100);
        w.cwnd = 120;
        assert_eq!(cc.undo_cwnd(SimTime::ZERO, &w, 100), 120);
    }

    // ----- HyStart -----
    //
    // The Flow starts with 16 segments: round 1 is the ACKs of segments
    // 1..16 (reset on ACK 1, end_seq = 16); during it cwnd grows to 32, so
    // when ACK 17 resets round 2, snd_nxt = 16 + 32 = 48 and round 2 is
    // ACKs 17..48. Before ACK n the window is 16 + (n - 1).

    #[test]
    fn hystart_leaves_slow_start_when_the_round_minimum_rises_past_the_threshold() {
        // ACKs 3 ms apart (wider than the 2 ms train spacing: no ACK train).
        // Round 1 at 50 ms sets delay_min = 50 ms; the threshold is
        // 50 + clamp(50/8 = 6.25, 4, 16) = 56.25 ms. Round 2 at 57 ms: its
        // first 8 samples (ACKs 17..24) only collect the minimum; the 9th
        // (ACK 25) finds 57 > 56.25 and exits at cwnd = 16 + 24 = 40.
        let mut f = flow(Config::default(), 16);
        for n in 1..=30 {
            f.ack_at(
                at_ms(1000 + 3 * n),
                Some(SimDuration::from_millis(if n <= 16 { 50 } else { 57 })),
            );
            if n < 25 {
                assert!(!f.cc.hystart_found(), "exit too early, ACK {n}");
            }
        }
        let exit = f.cc.hystart_exit().expect("no HyStart exit");
        assert_eq!(exit.reason, HystartExitReason::Delay);
        assert_eq!(exit.cwnd, 40);
        assert_eq!(exit.at, at_ms(1075));
        assert_eq!(exit.measured, SimDuration::from_micros(57_000));
        assert_eq!(exit.threshold, SimDuration::from_micros(56_250));
        assert_eq!(f.w.ssthresh, 40);
        // After the exit the window grows in congestion avoidance.
        assert!(f.w.cwnd <= 41);
        assert_eq!(f.cc.mode(), "cong_avoid");
    }

    #[test]
    fn hystart_stays_in_slow_start_when_the_rtt_rises_less_than_the_threshold() {
        for rise_us in [6_000u64, 6_250] {
            let mut f = flow(Config::default(), 16);
            for n in 1..=48 {
                let rtt = if n <= 16 { 50_000 } else { 50_000 + rise_us };
                f.ack_at(at_ms(1000 + 3 * n), Some(SimDuration::from_micros(rtt)));
            }
            assert_eq!(f.cc.hystart_exit(), None, "rise {rise_us} us");
            assert_eq!(f.w.cwnd, 16 + 48);
            assert_eq!(f.cc.mode(), "slow_start");
        }
    }

    #[test]
    fn the_delay_threshold_is_clamped_between_4_and_16_ms() {
        // delay_min 10 ms: 10/8 = 1.25 ms -> 4 ms; delay_min 200 ms: 25 -> 16 ms.
        for (base, below, above) in [(10_000u64, 14_000u64, 14_001u64), (200_000, 216_000, 216_001)] {
            for (second, exits) in [(below, false), (above, true)] {
                let mut f = flow(Config::default(), 16);
                for n in 1..=30 {
                    f.ack_at(
                        at_ms(1000 + 3 * n),
                        Some(SimDuration::from_micros(if n <= 16 { base } else { second })),
                    );
                }
                assert_eq!(f.cc.hystart_found(), exits, "base {base} us, then {second} us");
            }
        }
    }

    #[test]
    fn hystart_leaves_slow_start_when_an_ack_train_outlasts_half_the_minimum_rtt() {
        // ACKs 1 ms apart, RTT 40 ms, srtt 40 ms. Linux's cushion: the pacing
        // rate is 2 * cwnd * 1448 B / 40 ms < 4 MB/s, so 4 * 64 KiB / rate
        // > 1 ms and the cushion is its 1 ms cap; threshold =
        // (40 000 + 1 000) / 2 = 20 500 us. Round 2 starts at ACK 17; ACK
        // 17 + 21 = 38 is 21 ms into the train: exit at cwnd 16 + 37 = 53.
        let mut f = flow(Config::default(), 16);
        f.srtt = Some(SimDuration::from_millis(40));
        for n in 1..=48 {
            f.ack_at(at_ms(100 + n), Some(SimDuration::from_millis(40)));
            if n < 38 {
                assert!(!f.cc.hystart_found(), "exit too early, ACK {n}");
            }
        }
        let exit = f.cc.hystart_exit().expect("no HyStart exit");
        assert_eq!(exit.reason, HystartExitReason::AckTrain);
        assert_eq!(exit.cwnd, 53);
        assert_eq!(exit.measured, SimDuration::from_millis(21));
        assert_eq!(exit.threshold, SimDuration::from_micros(20_500));
        assert_eq!(f.w.ssthresh, 53);
    }

    #[test]
    fn a_gap_wider_than_the_ack_delta_breaks_the_train_for_the_rest_of_the_round() {
        // Same as above, but a 3 ms gap after ACK 20: last_ack stops
        // advancing, so no later ACK of round 2 continues the train.
        let mut f = flow(
            Config {
                hystart_detect: HystartDetect::AckTrain,
                ..Config::default()
            },
            16,
        );
        f.srtt = Some(SimDuration::from_millis(40));
        let mut t = 100;
        for n in 1..=48 {
            t += if n == 21 { 3 } else { 1 };
            f.ack_at(at_ms(t), Some(SimDuration::from_millis(40)));
        }
        assert!(!f.cc.hystart_found());
    }

    #[test]
    fn hystart_does_not_run_below_the_low_window() {
        // cwnd 8: rounds of 8, 16 ACKs; the tests start once cwnd >= 16.
        // With ACKs 1 ms apart and delay_min 10 ms (train threshold
        // (10 000 + 0) / 2 = 5 ms without srtt, so no cushion), the first round
        // at 8 segments would otherwise exit after 6 ACKs.
        let mut f = flow(Config::default(), 8);
        for n in 1..=8 {
            f.ack_at(at_ms(100 + n), Some(SimDuration::from_millis(10)));
        }
        assert!(!f.cc.hystart_found());
        assert_eq!(f.w.cwnd, 16);
        // Round 2 (ACKs 9..24) starts at ACK 9 with cwnd 16: exit when the
        // train passes 5 ms, at ACK 15 (6 ms), cwnd 8 + 14 = 22.
        for n in 9..=24 {
            f.ack_at(at_ms(100 + n), Some(SimDuration::from_millis(10)));
        }
        let exit = f.cc.hystart_exit().unwrap();
        assert_eq!((exit.reason, exit.cwnd), (HystartExitReason::AckTrain, 22));
    }

    #[test]
    fn a_new_minimum_after_the_eighth_sample_does_not_end_slow_start_as_in_mainline() {
        // The slides' "reason 2" (Linux 4.19: curr_rtt frozen after 8
        // samples). Round 2: 8 samples at 60 ms, then one at 40 ms (new
        // delay_min), then 60 ms again. Mainline lets that sample lower
        // curr_rtt too, so 40 > 40 + 5 is false for the rest of the round.
        // Round 3 (ACKs 49..) at 60 ms: exit at its 9th sample, ACK 57,
        // cwnd 16 + 56 = 72.
        let mut f = flow(Config::default(), 16);
        for n in 1..=60 {
            f.ack_at(
                at_ms(1000 + 3 * n),
                Some(SimDuration::from_millis(if n == 25 { 40 } else { 60 })),
            );
            if n < 57 {
                assert!(!f.cc.hystart_found(), "exit at ACK {n}");
            }
        }
        let exit = f.cc.hystart_exit().unwrap();
        assert_eq!((exit.reason, exit.cwnd), (HystartExitReason::Delay, 72));
    }

    // ----- the Ericsson LTE options -----

    #[test]
    fn the_reset_fix_starts_the_next_round_on_the_ack_that_ends_the_current_one() {
        // Stock: the ACK of segment 16 (snd_una == end_seq == 16) stays in
        // round 1; ACK 17 resets with end_seq = snd_nxt = 48.
        // Fixed: ACK 16 resets after its own sample, round_start = its time,
        // end_seq = snd_nxt then = 16 + 2 * 15 = 46.
        for (fix, end_after_16, end_after_17, start_ms) in [(false, 16, 48, 117), (true, 46, 46, 116)] {
            let mut f = flow(
                Config {
                    hystart_reset_fix: fix,
                    ..Config::default()
                },
                16,
            );
            for n in 1..=16 {
                f.ack_at(at_ms(100 + n), Some(SimDuration::from_millis(50)));
            }
            assert_eq!(f.cc.round_end_seq(), end_after_16 * MSS, "fix {fix}");
            f.ack_at(at_ms(117), Some(SimDuration::from_millis(50)));
            assert_eq!(f.cc.round_end_seq(), end_after_17 * MSS, "fix {fix}");
            assert_eq!(f.cc.round_start_us(), (start_ms * 1000) as u32, "fix {fix}");
        }
    }

    #[test]
    fn the_reset_fix_measures_the_ack_train_from_the_end_of_the_previous_round() {
        // The ACK-train scenario above: stock exits on ACK 38 (21 ms after
        // ACK 17) at cwnd 53; with the fix the train is timed from ACK 16 and
        // exits one ACK earlier, ACK 37, at cwnd 52.
        for (fix, cwnd) in [(false, 53), (true, 52)] {
            let mut f = flow(
                Config {
                    hystart_reset_fix: fix,
                    ..Config::default()
                },
                16,
            );
            f.srtt = Some(SimDuration::from_millis(40));
            for n in 1..=48 {
                f.ack_at(at_ms(100 + n), Some(SimDuration::from_millis(40)));
            }
            let exit = f.cc.hystart_exit().unwrap();
            assert_eq!(
                (exit.reason, exit.cwnd),
                (HystartExitReason::AckTrain, cwnd),
                "fix {fix}"
            );
        }
    }

    #[test]
    fn a_new_minimum_mid_round_ends_stock_slow_start_but_not_with_the_lte_patch() {
        // Initial window 13, ACKs 3 ms apart (no ACK train). Round 1 is ACKs
        // 1..13. ACK 1 at 60 ms sets delay_min; ACK 2 at 40 ms (cwnd 14, below
        // the low window, so it never reaches curr_rtt) lowers delay_min to
        // 40 ms; from ACK 4 (cwnd 16) the samples are 60 ms again.
        // Threshold 40 + 5 = 45 ms.
        let rtt = |n: u64| SimDuration::from_millis(if n == 2 { 40 } else { 60 });

        // Stock: ACKs 4..11 are samples 1..8 (curr_rtt = 60 ms); ACK 12
        // exits at cwnd 13 + 11 = 24.
        let mut f = flow(Config::default(), 13);
        for n in 1..=40 {
            f.ack_at(at_ms(1000 + 3 * n), Some(rtt(n)));
        }
        let exit = f.cc.hystart_exit().unwrap();
        assert_eq!((exit.reason, exit.cwnd), (HystartExitReason::Delay, 24));
        assert_eq!(exit.delay_min, SimDuration::from_millis(40));

        // Patched: no exit in round 1. Round 2 (reset on ACK 14, end_seq =
        // 13 + 26 = 39) has no new minimum: ACKs 14..21 are samples 1..8 and
        // ACK 22 exits at cwnd 13 + 21 = 34.
        let mut f = flow(
            Config {
                hystart_no_exit_on_new_min_rtt: true,
                ..Config::default()
            },
            13,
        );
        for n in 1..=40 {
            f.ack_at(at_ms(1000 + 3 * n), Some(rtt(n)));
            if n <= 13 {
                assert!(!f.cc.hystart_found(), "patched flow exited in round 1 (ACK {n})");
            }
        }
        let exit = f.cc.hystart_exit().unwrap();
        assert_eq!((exit.reason, exit.cwnd), (HystartExitReason::Delay, 34));

        // Without the dip neither exits in these rounds (60 ms vs 67.5 ms).
        for patched in [false, true] {
            let mut f = flow(
                Config {
                    hystart_no_exit_on_new_min_rtt: patched,
                    ..Config::default()
                },
                13,
            );
            for n in 1..=40 {
                f.ack_at(at_ms(1000 + 3 * n), Some(SimDuration::from_millis(60)));
            }
            assert!(!f.cc.hystart_found());
        }
    }

    #[test]
    fn the_lte_patch_does_not_block_the_ack_train_test() {
        let cfg = Config {
            hystart_no_exit_on_new_min_rtt: true,
            ..Config::default()
        };
        let mut f = flow(cfg, 16);
        f.srtt = Some(SimDuration::from_millis(40));
        for n in 1..=48 {
            // A dip in round 2 does not stop the train test (exit at ACK 38).
            f.ack_at(
                at_ms(100 + n),
                Some(SimDuration::from_millis(if n == 20 { 39 } else { 40 })),
            );
        }
        let exit = f.cc.hystart_exit().unwrap();
        assert_eq!(exit.reason, HystartExitReason::AckTrain);
    }
}
