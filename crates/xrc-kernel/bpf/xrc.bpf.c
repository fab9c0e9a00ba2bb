// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * XRC's sender as a Linux congestion control (BPF struct_ops), and the
 * sock_ops program that reads the base station's option into the socket.
 *
 * Reference: M. Kheirkhah, M. M. Kassem, G. Fairhurst, M. K. Marina, "XRC:
 * An Explicit Rate Control for Future Cellular Networks", IEEE ICC 2022,
 * §III-B. This is the simulator's sender, crates/xrc-core/src/transport/cc/
 * xrc.rs (the paper's rule, `xrc`), hook for hook and in the same integer
 * arithmetic: the same inputs give the same window (the replay test,
 * crates/xrc-kernel/src/replay.rs). Its numbered choices where the paper
 * is silent are xrc.rs's; the model:
 *
 *   (2)  twnd = R_exp · RTT_min
 *   (3)  σ    = max(mean RTT over the round − RTT_min, mean HoL over the round)
 *        bottleneck = Internet if HoL ≤ λ and (mean RTT − RTT_min) − HoL > λ
 *
 *            no fresh feedback ──────────────► Reno (the kernel's own)
 *   feedback: cwnd < twnd, σ ≤ λ ────────────► Ramp  (twnd within ramp RTTs)
 *             cwnd ≥ twnd, σ ≤ λ ────────────► Probe (+probe segments per RTT)
 *             σ > λ, wireless ── first round ► cwnd := twnd, Hold
 *                             ── N starved   ► Unfair (grow by cwnd per RTT)
 *             Internet bottleneck ───────────► Internet (Reno AI, capped at twnd)
 *   any loss ───────────────────────────────► the kernel's recovery, Reno ssthresh
 *
 * How the feedback reaches it: the sock_ops program sets
 * BPF_SOCK_OPS_PARSE_UNKNOWN_HDR_OPT_CB_FLAG on every TCP socket it sees
 * established; the kernel then calls it for each incoming segment that
 * carries an option it does not know (tcp_validate_incoming →
 * bpf_skops_parse_hdr, before tcp_ack). It finds kind 253 with our ExID
 * (bpf_load_hdr_opt), checks the values and leaves them in the socket's
 * local storage; the congestion control takes them at its first hook for
 * that ACK (in_ack_event or pkts_acked), as the simulator's sender calls
 * on_feedback before it processes the ACK.
 *
 * Differences from the simulator's sender, numbered (docs/kernel.md lists
 * them with their effect):
 * 1. RTT samples are the kernel's, in whole microseconds (ack_sample.rtt_us);
 *    the simulator's are nanoseconds. Fed the same samples, both agree.
 * 2. Sequence numbers are 32 bits and compared modulo 2^32 (before/after);
 *    the simulator's are 64-bit offsets from zero.
 * 3. The first round ends at the first cong_avoid, as in the simulator
 *    (whose round end starts at sequence 0); here a flag says no round has
 *    started.
 * 4. Feedback on an ACK that no hook sees (an old ACK, below snd_una) is
 *    replaced by the next one and counted (XC_FB_SUPERSEDED); the
 *    simulator's sender returns before on_feedback for such an ACK too.
 * 5. Feedback the simulator cannot receive is ignored and counted here:
 *    rate 0, a rate above max_rate_kbps, a HoL above max_hol_ns, a
 *    malformed option, an unfilled placeholder.
 * 6. cong_avoid is called by the kernel when tcp_may_raise_cwnd() (data
 *    acknowledged, outside CWR and Recovery); the simulator's sender calls
 *    it outside Recovery when snd_una advanced. They differ for an ACK
 *    that only SACKs new data, and in CWR (ECN, which XRC does not use).
 */
#include "kern.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "wide.h"
#include "xrc_abi.h"
#include "common.h"

char _license[] SEC("license") = "GPL";

extern void tcp_reno_cong_avoid(struct sock *sk, u32 ack, u32 acked) __ksym;
extern u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;
extern void tcp_cong_avoid_ai(struct tcp_sock *tp, u32 w, u32 acked) __ksym;

#define NSEC_PER_USEC 1000ULL
#define NSEC_PER_SEC 1000000000ULL
#define FP_ONE (1ULL << XRC_FP_SHIFT)

/* The state of one connection's sender: cc::xrc::Xrc's fields that the
 * paper's rule uses, with Option<T> as a has_ flag beside its value. */
struct xrc_state {
	/* feedback */
	u64 rate_bps;       /* explicit rate R_exp, bit/s (has_rate) */
	u64 hol_ns;         /* latest HoL */
	u64 last_fb_ns;     /* when the latest feedback was taken (has_fb) */
	u64 min_rtt_ns;     /* smallest RTT sample (has_min_rtt) */
	/* the round under way */
	u64 r_sum_rtt_ns;
	u64 r_samples;
	u64 r_sum_hol_ns;
	u64 r_hol_samples;
	u64 r_sum_rate_bps;
	u64 r_start_ns;
	u32 r_start_delivered;
	u32 round_end;      /* snd_nxt at the round's start (has_round) */
	u32 round_start_cwnd;
	u32 over_budget_rounds;
	u64 sigma_ns;       /* σ of the last round (has_sigma) */
	u64 credit_fp;      /* window growth not yet whole, segments × 2^20 */
	u64 ramp_fp;        /* ramp speed, segments per RTT × 2^20 */
	u32 mss_hint;
	u8 has_rate, has_fb, has_min_rtt, has_round, has_sigma;
	u8 mode;            /* XM_* */
	u8 bottleneck;      /* 0 wireless, 1 Internet */
	u8 starved;
};

struct xrc_sk {
	struct xrc_pending fb;
	struct xrc_state st;
	u64 counters[XC_NCOUNTERS];
	u32 tag_seq;       /* the last tagged option's sequence number taken */
	u8 has_tag_seq;
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct xrc_sk);
} xrc_store SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct xrc_cfg);
} xrc_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, XC_NCOUNTERS);
	__type(key, u32);
	__type(value, u64);
} xrc_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, struct xrc_sock_key);
	__type(value, struct xrc_sock_info);
} xrc_socks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20);
} xrc_events SEC(".maps");

static __always_inline void count(struct xrc_sk *s, u32 c)
{
	u64 *g = bpf_map_lookup_elem(&xrc_stats, &c);

	if (g)
		*g += 1;
	if (s && c < XC_NCOUNTERS)
		s->counters[c] += 1;
}

static __always_inline struct xrc_cfg *cfg(void)
{
	u32 zero = 0;

	return bpf_map_lookup_elem(&xrc_cfg, &zero);
}

/* ---------------------------------------------------------------- sock_ops */

SEC("sockops")
int xrc_sockops(struct bpf_sock_ops *skops)
{
	struct bpf_sock *sk;
	struct xrc_cfg *c;
	struct xrc_sk *s;
	struct xrc_opt o = {};
	int v;

	if (xrc_sockops_established(skops) || skops->op != BPF_SOCK_OPS_PARSE_HDR_OPT_CB)
		return 1;
	sk = skops->sk;
	c = cfg();
	if (!sk || !c)
		return 1;
	/* The paper's sender reads rate and HoL; air and room are xrc2's. */
	v = xrc_parse(skops, c, &o);
	if (v == XRC_NOT_OURS)
		return 1;
	s = bpf_sk_storage_get(&xrc_store, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (v == XC_FB_VALID && s && !xrc_fresh(c, &o, &s->tag_seq, &s->has_tag_seq))
		v = XC_FB_REPLAYED;
	count(s, v);
	if (v != XC_FB_VALID || !s)
		return 1;
	if (s->fb.seq != s->fb.taken)
		count(s, XC_FB_SUPERSEDED);
	s->fb.rate_kbps = o.rate;
	s->fb.hol_tenths = o.hol;
	s->fb.seq += 1;
	return 1;
}

/* ------------------------------------------------------- the sender's rules */

/* Eq. (2): twnd = round(R_exp · RTT_min / MSS), at least 2 segments. In
 * xrc.rs: (2·R·t + 8·10^9·mss) / (16·10^9·mss) with R in bit/s and t in ns;
 * here R = 1000·kbit/s and t = 1000·µs, so the same quotient is
 * (2·k·u + 8000·mss) / (16000·mss), which fits 64 bits for any option. */
static __always_inline bool target_window(struct xrc_state *x, u32 mss, u32 *twnd)
{
	u64 k, u, w;

	if (!x->has_rate || !x->has_min_rtt || !mss)
		return false;
	k = x->rate_bps / 1000;
	u = x->min_rtt_ns / NSEC_PER_USEC;
	w = (2 * k * u + 8000ULL * mss) / (16000ULL * mss);
	*twnd = w > 0xffffffffULL ? 0xffffffffU : (w < 2 ? 2 : (u32)w);
	return true;
}

/* The explicit rate times the budget, in segments, rounded up:
 * ceil(k · λ_ns / (8·10^6 · mss)), at most 2^32 − 1. */
static __always_inline u32 budget_segments(struct xrc_state *x, struct xrc_cfg *c, u32 mss)
{
	u64 den = 8000000ULL * mss;
	u64 k = x->has_rate ? x->rate_bps / 1000 : 0;
	struct u128 num = mul64(k, c->budget_ns);
	u64 q;

	if (!mss || num.hi)
		return 0xffffffffU;
	q = num.lo / den;
	if (num.lo - q * den)
		q += 1;
	return q > 0xffffffffULL ? 0xffffffffU : (u32)q;
}

static __always_inline bool feedback_fresh(struct xrc_state *x, struct xrc_cfg *c, u64 now)
{
	return x->has_fb && (now < x->last_fb_ns || now - x->last_fb_ns <= c->feedback_timeout_ns);
}

/* Adds per_rtt segments per round trip, spread over the round's ACKs (as
 * many as the window at its start): credit += per_rtt · acked / acks. */
static __always_inline void grow(struct xrc_state *x, struct tcp_sock *tp, u64 per_rtt_fp, u32 acked)
{
	u32 acks = x->round_start_cwnd ? x->round_start_cwnd : 1;
	u64 inc = div128_32_sat(mul64(per_rtt_fp, acked), acks);
	u64 whole, cwnd;

	x->credit_fp = x->credit_fp + inc < x->credit_fp ? U64_MAX_ : x->credit_fp + inc;
	whole = x->credit_fp >> XRC_FP_SHIFT;
	if (!whole)
		return;
	x->credit_fp -= whole << XRC_FP_SHIFT;
	cwnd = (u64)tp->snd_cwnd + whole; /* whole < 2^44: no overflow */
	tp->snd_cwnd = cwnd > tp->snd_cwnd_clamp ? tp->snd_cwnd_clamp : (u32)cwnd;
}

static __always_inline void publish(struct sock *sk, struct xrc_sk *s, u64 now, bool closed)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct xrc_sock_key k = sock_key(sk);
	struct xrc_sock_info v = {};
	struct xrc_state *x = &s->st;
	int i;

	for (i = 0; i < XC_NCOUNTERS; i++)
		v.counters[i] = s->counters[i];
	v.updated_ns = now;
	v.cwnd = tp->snd_cwnd;
	v.rate_kbps = x->has_rate ? (u32)(x->rate_bps / 1000) : 0;
	v.hol_us = (u32)(x->hol_ns / NSEC_PER_USEC);
	v.min_rtt_us = x->has_min_rtt ? (u32)(x->min_rtt_ns / NSEC_PER_USEC) : 0;
	v.sigma_us = x->has_sigma ? (u32)(x->sigma_ns / NSEC_PER_USEC) : 0;
	v.mode = x->mode;
	v.bottleneck = x->bottleneck;
	v.closed = closed;
	bpf_map_update_elem(&xrc_socks, &k, &v, BPF_ANY);
}

/* update_mode in xrc.rs (the paper's rule). */
static __always_inline void update_mode(struct xrc_state *x, struct xrc_cfg *c, struct tcp_sock *tp, u32 mss)
{
	bool over;
	u32 twnd, gap;
	u64 needed, keep;

	if (!target_window(x, mss, &twnd)) {
		x->mode = XM_RENO;
		return;
	}
	over = x->has_sigma && x->sigma_ns > c->budget_ns;
	if (x->bottleneck == 1) {
		x->over_budget_rounds = 0;
		x->mode = XM_INTERNET;
		return;
	}
	if (over) {
		if (x->starved) {
			x->over_budget_rounds += 1;
		} else {
			x->over_budget_rounds = 0;
			if (x->mode == XM_UNFAIR)
				x->mode = XM_PROBE; /* got its share: leave, reset below */
		}
		if (x->mode == XM_UNFAIR)
			return;
		if (x->over_budget_rounds > c->unfair_after_rtts) {
			x->mode = XM_UNFAIR;
			return;
		}
		if (x->mode == XM_HOLD)
			return;
		/* Reset to the target window (§III-B). */
		tp->snd_cwnd = twnd < tp->snd_cwnd_clamp ? twnd : tp->snd_cwnd_clamp;
		tp->snd_cwnd_cnt = 0;
		x->credit_fp = 0;
		x->round_start_cwnd = tp->snd_cwnd;
		x->mode = XM_HOLD;
		return;
	}
	x->over_budget_rounds = 0;
	if (tp->snd_cwnd < twnd) {
		/* Choice 2: spread the gap over ramp_rtts rounds. */
		gap = twnd - tp->snd_cwnd;
		needed = ((u64)gap << XRC_FP_SHIFT) * 1000 / c->ramp_milli;
		keep = x->mode == XM_RAMP ? x->ramp_fp : 0;
		if (needed < keep)
			needed = keep;
		if (needed < c->probe_fp)
			needed = c->probe_fp;
		x->ramp_fp = needed;
		x->mode = XM_RAMP;
	} else {
		x->mode = XM_PROBE;
	}
}

/* maybe_end_round in xrc.rs: σ, the bottleneck and the mode at a round's end. */
static __always_inline void maybe_end_round(struct sock *sk, struct xrc_sk *s, struct xrc_cfg *c, u64 now)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct xrc_state *x = &s->st;
	u32 mss = tp->mss_cache;
	u64 span, r_exp, bits, mean, e2e, hol;
	struct u128 lhs, rhs;

	if (x->has_round && before(tp->snd_una, x->round_end))
		return;
	x->starved = 0;
	if (x->r_samples > 0 && x->has_min_rtt) {
		span = now > x->r_start_ns ? now - x->r_start_ns : 0;
		if (x->r_hol_samples > 0 && span) {
			/* Choice 4, starved: delivered less than R·RTT_min/(RTT_min+λ):
			 * bits·(min+λ)·10^9 < R·min·span, each side in 128 bits. */
			r_exp = x->r_sum_rate_bps / x->r_hol_samples;
			bits = (u64)(tp->delivered - x->r_start_delivered) * mss * 8;
			lhs = mul128_sat(mul64(bits, x->min_rtt_ns + c->budget_ns), NSEC_PER_SEC);
			rhs = mul128_sat(mul64(r_exp, x->min_rtt_ns), span);
			x->starved = lt128(lhs, rhs);
		}
		mean = x->r_sum_rtt_ns / x->r_samples;
		e2e = mean > x->min_rtt_ns ? mean - x->min_rtt_ns : 0;
		hol = x->r_hol_samples > 0 ? x->r_sum_hol_ns / x->r_hol_samples : x->hol_ns;
		/* Eq. (3) and the bottleneck's location. */
		x->sigma_ns = e2e > hol ? e2e : hol;
		x->has_sigma = 1;
		x->bottleneck = (hol <= c->budget_ns && (e2e > hol ? e2e - hol : 0) > c->budget_ns) ? 1 : 0;
	}
	x->r_sum_rtt_ns = 0;
	x->r_samples = 0;
	x->r_sum_hol_ns = 0;
	x->r_hol_samples = 0;
	x->r_sum_rate_bps = 0;
	x->r_start_ns = now;
	x->r_start_delivered = tp->delivered;
	x->round_end = tp->snd_nxt;
	x->has_round = 1;
	x->round_start_cwnd = tp->snd_cwnd;
	count(s, XC_ROUNDS);
	if (feedback_fresh(x, c, now)) {
		update_mode(x, c, tp, mss);
	} else {
		if (x->mode != XM_RENO && x->has_fb)
			count(s, XC_FALLBACKS);
		x->mode = XM_RENO;
		x->over_budget_rounds = 0;
	}
	publish(sk, s, now, false);
}

/* ------------------------------------------------------------------ tracing */

/* The connection as a hook finds it (the simulator's ConnView) and the
 * window before the hook ran. */
struct view {
	u32 snd_una, snd_nxt, delivered, mss, in_flight;
	u32 cwnd, ssthresh, cnt, clamp;
	u8 ca_state, cwnd_limited;
};

static __always_inline void view_of(struct sock *sk, struct view *v)
{
	struct tcp_sock *tp = tcp_sk(sk);

	v->snd_una = tp->snd_una;
	v->snd_nxt = tp->snd_nxt;
	v->delivered = tp->delivered;
	v->mss = tp->mss_cache;
	v->in_flight = in_flight(tp);
	v->cwnd = tp->snd_cwnd;
	v->ssthresh = tp->snd_ssthresh;
	v->cnt = tp->snd_cwnd_cnt;
	v->clamp = tp->snd_cwnd_clamp;
	v->ca_state = BPF_CORE_READ_BITFIELD(inet_csk(sk), icsk_ca_state);
	v->cwnd_limited = is_cwnd_limited(tp);
}

static __always_inline void trace(struct sock *sk, struct xrc_sk *s, struct xrc_cfg *c, u64 now, u8 hook,
				  struct view *v, u32 arg, s32 rtt_us, u32 ret)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct xrc_trace t = {};

	if (!c->trace)
		return;
	t.now_ns = now;
	t.sock = ((u64)sk->__sk_common.skc_num << 48) ^ ((u64)bpf_ntohs(sk->__sk_common.skc_dport) << 32) ^
		 sk->__sk_common.skc_daddr;
	t.hook = hook;
	t.mode_after = s->st.mode;
	t.ca_state = v->ca_state;
	t.cwnd_limited = v->cwnd_limited;
	t.arg = arg;
	t.rtt_us = rtt_us;
	t.fb_rate_kbps = s->fb.rate_kbps;
	t.fb_hol_tenths = s->fb.hol_tenths;
	t.snd_una = v->snd_una;
	t.snd_nxt = v->snd_nxt;
	t.delivered = v->delivered;
	t.mss = v->mss;
	t.in_flight = v->in_flight;
	t.cwnd_before = v->cwnd;
	t.ssthresh_before = v->ssthresh;
	t.cnt_before = v->cnt;
	t.clamp = v->clamp;
	t.cwnd_after = tp->snd_cwnd;
	t.ssthresh_after = tp->snd_ssthresh;
	t.cnt_after = tp->snd_cwnd_cnt;
	t.ret = ret;
	if (bpf_ringbuf_output(&xrc_events, &t, sizeof(t), 0))
		count(s, XC_TRACE_LOST);
}

/* ----------------------------------------------------------------- the hooks */

static __always_inline struct xrc_sk *state(struct sock *sk)
{
	return bpf_sk_storage_get(&xrc_store, sk, 0, 0);
}

/* on_feedback in xrc.rs, for the option the sock_ops program left. */
static __always_inline void take_feedback(struct sock *sk, struct xrc_sk *s, struct xrc_cfg *c, u64 now)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct xrc_state *x = &s->st;
	struct view v;
	u32 twnd, slack, mss;

	if (s->fb.seq == s->fb.taken)
		return;
	s->fb.taken = s->fb.seq;
	count(s, XC_FB_APPLIED);
	if (c->trace)
		view_of(sk, &v);
	mss = tp->mss_cache;
	x->mss_hint = mss;
	x->rate_bps = (u64)s->fb.rate_kbps * 1000;
	x->has_rate = 1;
	x->hol_ns = (u64)s->fb.hol_tenths * 100000ULL;
	x->r_sum_hol_ns += x->hol_ns;
	x->r_sum_rate_bps += x->rate_bps;
	x->r_hol_samples += 1;
	x->last_fb_ns = now;
	x->has_fb = 1;
	/* Choice 10: never more than a budget's worth of data above target. */
	if (x->mode != XM_UNFAIR && x->mode != XM_RENO && x->has_min_rtt && target_window(x, mss, &twnd)) {
		slack = budget_segments(x, c, mss);
		if ((u64)tp->snd_cwnd > (u64)twnd + slack) {
			tp->snd_cwnd = twnd < tp->snd_cwnd_clamp ? twnd : tp->snd_cwnd_clamp;
			tp->snd_cwnd_cnt = 0;
			x->credit_fp = 0;
			x->round_start_cwnd = tp->snd_cwnd;
			x->mode = XM_HOLD;
		}
	}
	trace(sk, s, c, now, XH_FEEDBACK, &v, 0, -1, 0);
}

SEC("struct_ops")
void BPF_PROG(xrc_init, struct sock *sk)
{
	struct xrc_sk *s = bpf_sk_storage_get(&xrc_store, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	struct xrc_cfg *c = cfg();
	struct xrc_state *x;
	struct view v;

	if (!s || !c)
		return;
	view_of(sk, &v);
	x = &s->st;
	__builtin_memset(x, 0, sizeof(*x));
	x->mss_hint = 1448;
	x->mode = XM_RENO;
	s->fb.taken = s->fb.seq; /* what came before this congestion control is not ours */
	count(s, XC_SOCKETS);
	trace(sk, s, c, bpf_ktime_get_ns(), XH_INIT, &v, 0, -1, 0);
}

SEC("struct_ops")
void BPF_PROG(xrc_release, struct sock *sk)
{
	struct xrc_sk *s = state(sk);

	if (s)
		publish(sk, s, bpf_ktime_get_ns(), true);
}

SEC("struct_ops")
void BPF_PROG(xrc_in_ack_event, struct sock *sk, u32 flags)
{
	struct xrc_sk *s = state(sk);
	struct xrc_cfg *c = cfg();

	if (s && c)
		take_feedback(sk, s, c, bpf_ktime_get_ns());
}

SEC("struct_ops")
void BPF_PROG(xrc_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct xrc_sk *s = state(sk);
	struct xrc_cfg *c = cfg();
	struct xrc_state *x;
	s32 rtt_us = sample->rtt_us;
	struct view v;
	u64 now, r;

	if (!s || !c)
		return;
	now = bpf_ktime_get_ns();
	take_feedback(sk, s, c, now);
	view_of(sk, &v);
	x = &s->st;
	if (rtt_us >= 0) {
		r = (u64)rtt_us * NSEC_PER_USEC;
		if (!x->has_min_rtt || r < x->min_rtt_ns)
			x->min_rtt_ns = r;
		x->has_min_rtt = 1;
		x->r_sum_rtt_ns += r;
		x->r_samples += 1;
	}
	trace(sk, s, c, now, XH_PKTS_ACKED, &v, sample->pkts_acked, rtt_us, 0);
}

SEC("struct_ops")
void BPF_PROG(xrc_cong_avoid, struct sock *sk, u32 ack, u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct xrc_sk *s = state(sk);
	struct xrc_cfg *c = cfg();
	struct xrc_state *x;
	struct view v;
	u32 twnd, mss, w;
	u64 now;

	if (!s || !c) {
		tcp_reno_cong_avoid(sk, ack, acked);
		return;
	}
	now = bpf_ktime_get_ns();
	take_feedback(sk, s, c, now);
	view_of(sk, &v);
	x = &s->st;
	mss = tp->mss_cache;
	maybe_end_round(sk, s, c, now);
	if (!feedback_fresh(x, c, now)) {
		if (x->mode != XM_RENO && x->has_fb)
			count(s, XC_FALLBACKS);
		x->mode = XM_RENO;
	}
	if (x->mode == XM_RENO || !target_window(x, mss, &twnd)) {
		tcp_reno_cong_avoid(sk, ack, acked);
		/* Leave Reno as soon as feedback and an RTT sample exist. */
		if (feedback_fresh(x, c, now) && target_window(x, mss, &twnd))
			update_mode(x, c, tp, mss);
		goto out;
	}
	if (!v.cwnd_limited)
		goto out;
	switch (x->mode) {
	case XM_RAMP:
		if (tp->snd_cwnd >= twnd) {
			x->mode = XM_PROBE;
			grow(x, tp, c->probe_fp, acked);
		} else {
			grow(x, tp, x->ramp_fp, acked);
			if (tp->snd_cwnd > twnd)
				tp->snd_cwnd = twnd;
		}
		break;
	case XM_PROBE:
	case XM_HOLD:
		grow(x, tp, c->probe_fp, acked);
		break;
	case XM_UNFAIR:
		grow(x, tp, ((u64)c->unfair_gain_milli * x->round_start_cwnd << XRC_FP_SHIFT) / 1000, acked);
		break;
	case XM_INTERNET:
		if (tp->snd_cwnd < twnd) {
			w = tp->snd_cwnd;
			if (tp->snd_cwnd < tp->snd_ssthresh)
				tcp_reno_cong_avoid(sk, ack, acked);
			else
				tcp_cong_avoid_ai(tp, w, acked);
			if (tp->snd_cwnd > twnd)
				tp->snd_cwnd = twnd;
		}
		break;
	}
out:
	trace(sk, s, c, now, XH_CONG_AVOID, &v, acked, -1, 0);
}

SEC("struct_ops")
u32 BPF_PROG(xrc_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct xrc_sk *s = state(sk);
	struct xrc_cfg *c = cfg();
	u32 r = tp->snd_cwnd >> 1;
	struct view v;

	/* Reno's: half the window, at least two segments. */
	if (r < 2)
		r = 2;
	if (s && c && c->trace) {
		view_of(sk, &v);
		trace(sk, s, c, bpf_ktime_get_ns(), XH_SSTHRESH, &v, 0, -1, r);
	}
	return r;
}

SEC("struct_ops")
void BPF_PROG(xrc_set_state, struct sock *sk, u8 new_state)
{
	struct xrc_sk *s = state(sk);
	struct xrc_cfg *c = cfg();
	struct xrc_state *x;
	struct view v;

	if (!s || !c)
		return;
	view_of(sk, &v);
	x = &s->st;
	if (new_state == TCP_CA_Recovery || new_state == TCP_CA_Loss) {
		/* A loss ends the unfairness mode (the competitors got their signal). */
		if (x->mode == XM_UNFAIR)
			x->mode = XM_HOLD;
		x->over_budget_rounds = 0;
		x->credit_fp = 0;
	}
	trace(sk, s, c, bpf_ktime_get_ns(), XH_SET_STATE, &v, new_state, -1, 0);
}

SEC("struct_ops")
u32 BPF_PROG(xrc_undo_cwnd, struct sock *sk)
{
	struct xrc_sk *s = state(sk);
	struct xrc_cfg *c = cfg();
	struct view v;
	u32 r;

	view_of(sk, &v);
	r = tcp_reno_undo_cwnd(sk);
	if (s && c)
		trace(sk, s, c, bpf_ktime_get_ns(), XH_UNDO, &v, tcp_sk(sk)->prior_cwnd, -1, r);
	return r;
}

SEC(".struct_ops.link")
struct tcp_congestion_ops xrc = {
	.init = (void *)xrc_init,
	.release = (void *)xrc_release,
	.ssthresh = (void *)xrc_ssthresh,
	.cong_avoid = (void *)xrc_cong_avoid,
	.set_state = (void *)xrc_set_state,
	.in_ack_event = (void *)xrc_in_ack_event,
	.pkts_acked = (void *)xrc_pkts_acked,
	.undo_cwnd = (void *)xrc_undo_cwnd,
	.name = "xrc",
};
