// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * The shim: a congestion control (`xrc_shim`) that decides nothing itself.
 * It hands every ACK's events to a user-space agent through a ring buffer
 * and applies the window and pacing rate the agent writes back, so that any
 * of the simulator's algorithms (the core's `CongestionControl`
 * implementations, crates/xrc-kernel/src/shim.rs) runs on real kernel
 * sockets.
 *
 * The design is the Congestion Control Plane's (Narayan et al., "Restructuring
 * Endpoint Congestion Control", SIGCOMM 2018; ccp-project/ccp-kernel): the
 * datapath reports, an agent outside it decides, asynchronously. Unlike CCP,
 * which summarises ACKs in the datapath (fold functions) and reports once per
 * RTT, this shim reports every ACK, because the algorithms it carries are
 * written ACK by ACK, as Linux's are.
 *
 * Per ACK, in the simulator's hook order (transport/sender/ack.rs):
 *   PRE   feedback taken (the base station's option), in_ack_event's flags,
 *         pkts_acked's sample;
 *   then  SSTHRESH, SET_STATE, CWND_EVENT, UNDO as the kernel calls them;
 *   POST  the rate sample (cong_control), after which the agent runs the
 *         window update (cong_control, or cong_avoid outside recovery).
 * At POST the shim applies the agent's latest decision, the window the
 * agent's copy of the algorithm holds after every event it has seen. Each
 * event carries the window the shim last set: where the kernel's differs,
 * the kernel changed it (proportional rate reduction, the end of a
 * recovery, a timeout), and the agent starts again from the kernel's.
 * In CWR and Recovery, for algorithms without
 * cong_control, the shim runs Linux's proportional rate reduction
 * (tcp_cwnd_reduction, net/ipv4/tcp_input.c), which a congestion control
 * with cong_control replaces. Before the agent's first decision the window
 * is the kernel's Reno (tcp_reno_cong_avoid).
 *
 * Differences from running the algorithm in the kernel, numbered:
 * 1. A decision is applied at the ACK after the one it answers (and later
 *    if the agent is slower than the ACKs): the decision lag, counted
 *    (SC_STALE) and measured by the agent.
 * 2. ssthresh, which the kernel asks for synchronously on a loss, is Reno's
 *    (half the window) until the agent's own value arrives with its next
 *    decision; PRR aims at the agent's value from then on.
 * 3. undo_cwnd returns Reno's (the larger of the window and prior_cwnd); the
 *    agent's own undo arrives with its next decision.
 * 4. No per-packet records: algorithms that keep a record per sent packet
 *    (BBRv3's in-flight at send time) get none.
 * 5. The smallest TSO burst (min_tso_segs) is the agent's algorithm's, but
 *    tcp_tso_autosize still sends about a millisecond's worth at the pacing
 *    rate in one burst when that is more (2 segments of 1448 bytes above
 *    about 24 Mbit/s), where the simulator paces such an algorithm segment
 *    by segment at any rate.
 */
#include "kern.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "xrc_abi.h"
#include "common.h"

char _license[] SEC("license") = "GPL";

extern void tcp_reno_cong_avoid(struct sock *sk, u32 ack, u32 acked) __ksym;
extern u32 tcp_reno_undo_cwnd(struct sock *sk) __ksym;

#define FLAG_SND_UNA_ADVANCED 0x400
#define CA_ACK_SLOWPATH 0x1
#define CA_ACK_WIN_UPDATE 0x2
#define CA_ACK_ECE 0x4

/* The ACK being gathered (shim_sk.gathering). */
#define G_IN_ACK 0x1
#define G_SAMPLE 0x2
#define G_PRE_SENT 0x4

struct shim_sk {
	struct xrc_pending fb;
	struct shim_event pre; /* the gathered ACK's PRE fields */
	u64 seq;               /* events of this socket so far */
	u64 last_post;         /* the seq of the latest POST */
	u64 applied;           /* the seq of the last decision applied */
	u32 applied_cwnd;      /* the window that decision set (or the kernel will set after undo_cwnd) */
	u32 applied_ssthresh;  /* the slow-start threshold it set (or ssthresh returned) */
	u32 prr_delivered;     /* PRR's, kept here (cong_control replaces the kernel's) */
	u32 fb_air;            /* the latest option's air field, XRC_ABSENT without one */
	u32 fb_room;           /* and its room field */
	u8 gathering;
	u8 paced;
	u8 has_tag_seq;
	u32 tag_seq;           /* the last tagged option's sequence number taken */
	u32 pbe_kbps;          /* the latest PBE-CC report */
	u32 abc_accel;         /* ABC's marks echoed since the last PRE took them */
	u32 abc_brake;
	u8 pbe_new;            /* a PBE-CC report came since the last PRE */
	u8 abc_new;            /* an ABC echo came since the last PRE */
	u8 applied_oob;        /* the `oob` of the last decision applied */
	u8 min_tso;            /* the last decision's min_tso_segs (0: the kernel's default) */
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct shim_sk);
} shim_store SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct xrc_cfg);
} shim_cfg SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct xrc_sock_key);
	__type(value, struct shim_decision);
} shim_decisions SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, SC_NCOUNTERS);
	__type(key, u32);
	__type(value, u64);
} shim_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 << 20);
} shim_events SEC(".maps");

static __always_inline void stat(u32 c)
{
	u64 *g = bpf_map_lookup_elem(&shim_stats, &c);

	if (g)
		*g += 1;
}

SEC("sockops")
int xrc_shim_sockops(struct bpf_sock_ops *skops)
{
	struct bpf_sock *sk;
	struct xrc_cfg *c;
	struct shim_sk *s;
	u32 zero = 0;
	struct xrc_opt o = {};
	u8 b[4] = {};
	int v;

	if (xrc_sockops_established(skops) || skops->op != BPF_SOCK_OPS_PARSE_HDR_OPT_CB)
		return 1;
	sk = skops->sk;
	c = bpf_map_lookup_elem(&shim_cfg, &zero);
	if (!sk || !c)
		return 1;
	s = bpf_sk_storage_get(&shim_store, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!s)
		return 1;
	v = xrc_parse(skops, c, &o);
	if (v == XC_FB_VALID && xrc_fresh(c, &o, &s->tag_seq, &s->has_tag_seq)) {
		s->fb.rate_kbps = o.rate;
		s->fb.hol_tenths = o.hol;
		s->fb_air = o.air;
		s->fb_room = o.room;
		s->fb.seq += 1;
	}
	v = short_opt(skops, ABC_OPT_EXID_HI, ABC_OPT_EXID_LO, b);
	if (v > 0) {
		/* Marks add up until a PRE takes them (several ACKs before one
		 * hook run), saturating as the 16-bit fields of the event do. */
		s->abc_accel += (u32)b[0] << 8 | b[1];
		s->abc_brake += (u32)b[2] << 8 | b[3];
		s->abc_new = 1;
	} else if (v < 0) {
		stat(SC_SHORT_MALFORMED);
	}
	v = short_opt(skops, PBE_OPT_EXID_HI, PBE_OPT_EXID_LO, b);
	if (v > 0) {
		s->pbe_kbps = be32_at(b);
		s->pbe_new = 1;
	} else if (v < 0) {
		stat(SC_SHORT_MALFORMED);
	}
	return 1;
}

/* Writes event `kind` with the connection as it is now; `e` carries the
 * kind-specific fields. */
static __always_inline void emit(struct sock *sk, struct shim_sk *s, struct shim_event *e, u8 kind)
{
	struct tcp_sock *tp = tcp_sk(sk);

	s->seq += 1;
	e->now_ns = bpf_ktime_get_ns();
	e->seq = s->seq;
	e->key = sock_key(sk);
	e->kind = kind;
	e->ca_state = BPF_CORE_READ_BITFIELD(inet_csk(sk), icsk_ca_state);
	if (is_cwnd_limited(tp))
		e->flags |= SF_CWND_LIMITED;
	e->cwnd = tp->snd_cwnd;
	e->ssthresh = tp->snd_ssthresh;
	e->mss = tp->mss_cache;
	e->in_flight = in_flight(tp);
	e->packets_out = tp->packets_out;
	e->sacked_out = tp->sacked_out;
	e->lost_out = tp->lost_out;
	e->retrans_out = tp->retrans_out;
	e->snd_una = tp->snd_una;
	e->snd_nxt = tp->snd_nxt;
	e->delivered = tp->delivered;
	e->lost = tp->lost;
	e->srtt_us = tp->srtt_us >> 3;
	e->applied_cwnd = s->applied_cwnd;
	e->applied_ssthresh = s->applied_ssthresh;
	if (bpf_ringbuf_output(&shim_events, e, sizeof(*e), 0))
		stat(SC_EVENTS_LOST);
	else
		stat(SC_EVENTS);
}

/* Sends the gathered ACK's PRE if it has not gone yet. */
static __always_inline void send_pre(struct sock *sk, struct shim_sk *s)
{
	if (!s->gathering || (s->gathering & G_PRE_SENT))
		return;
	emit(sk, s, &s->pre, SE_PRE);
	s->gathering |= G_PRE_SENT;
}

/* A hook of the PRE part (`which`) ran: the same hook twice means a new ACK
 * (the last one ended without cong_control: nothing was in flight). */
static __always_inline void gather(struct sock *sk, struct shim_sk *s, u8 which)
{
	if (s->gathering & which) {
		send_pre(sk, s);
		s->gathering = 0;
	}
	if (!s->gathering)
		__builtin_memset(&s->pre, 0, sizeof(s->pre));
	s->gathering |= which;
	if (s->fb.seq != s->fb.taken) {
		s->fb.taken = s->fb.seq;
		s->pre.flags |= SF_FEEDBACK;
		s->pre.fb_rate_kbps = s->fb.rate_kbps;
		s->pre.fb_hol_tenths = s->fb.hol_tenths;
		s->pre.fb_air_tenths = s->fb_air;
		s->pre.fb_room = s->fb_room;
	}
	if (s->abc_new) {
		s->abc_new = 0;
		s->pre.flags2 |= SF2_ABC;
		s->pre.fb_abc_accel = s->abc_accel > 0xffff ? 0xffff : s->abc_accel;
		s->pre.fb_abc_brake = s->abc_brake > 0xffff ? 0xffff : s->abc_brake;
		s->abc_accel = 0;
		s->abc_brake = 0;
	}
	if (s->pbe_new) {
		s->pbe_new = 0;
		s->pre.flags2 |= SF2_PBE;
		s->pre.fb_pbe_kbps = s->pbe_kbps;
	}
}

static __always_inline struct shim_sk *state(struct sock *sk)
{
	return bpf_sk_storage_get(&shim_store, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
}

SEC("struct_ops")
void BPF_PROG(xrc_shim_init, struct sock *sk)
{
	struct shim_sk *s = state(sk);
	struct shim_event e = {};
	struct xrc_sock_key k;

	if (!s)
		return;
	s->fb.taken = s->fb.seq;
	s->gathering = 0;
	s->applied = 0;
	s->applied_cwnd = 0;
	s->applied_ssthresh = 0;
	s->last_post = 0;
	s->paced = 0;
	s->applied_oob = 0;
	s->min_tso = 0;
	s->abc_new = 0;
	s->pbe_new = 0;
	s->abc_accel = 0;
	s->abc_brake = 0;
	k = sock_key(sk);
	bpf_map_delete_elem(&shim_decisions, &k); /* a decision of an earlier socket of this 4-tuple */
	emit(sk, s, &e, SE_INIT);
}

SEC("struct_ops")
void BPF_PROG(xrc_shim_release, struct sock *sk)
{
	struct shim_sk *s = bpf_sk_storage_get(&shim_store, sk, 0, 0);
	struct shim_event e = {};

	if (s)
		emit(sk, s, &e, SE_RELEASE);
}

SEC("struct_ops")
void BPF_PROG(xrc_shim_in_ack_event, struct sock *sk, u32 flags)
{
	struct shim_sk *s = state(sk);

	if (!s)
		return;
	gather(sk, s, G_IN_ACK);
	if (flags & CA_ACK_SLOWPATH)
		s->pre.flags |= SF_SLOW_PATH;
	if (flags & CA_ACK_WIN_UPDATE)
		s->pre.flags |= SF_WIN_UPDATE;
	if (flags & CA_ACK_ECE)
		s->pre.flags |= SF_ECE;
}

SEC("struct_ops")
void BPF_PROG(xrc_shim_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct shim_sk *s = state(sk);

	if (!s)
		return;
	gather(sk, s, G_SAMPLE);
	s->pre.flags |= SF_HAS_SAMPLE;
	s->pre.pkts_acked = sample->pkts_acked;
	s->pre.rtt_us = sample->rtt_us;
}

SEC("struct_ops")
u32 BPF_PROG(xrc_shim_ssthresh, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct shim_sk *s = state(sk);
	struct shim_event e = {};
	u32 r = tp->snd_cwnd >> 1;

	r = r < 2 ? 2 : r; /* difference 2: Reno's until the agent's arrives */
	if (s) {
		send_pre(sk, s);
		emit(sk, s, &e, SE_SSTHRESH);
		s->applied_ssthresh = r;
	}
	return r;
}

SEC("struct_ops")
void BPF_PROG(xrc_shim_set_state, struct sock *sk, u8 new_state)
{
	struct shim_sk *s = state(sk);
	struct shim_event e = {};

	if (!s)
		return;
	send_pre(sk, s);
	if (new_state == TCP_CA_Recovery || new_state == TCP_CA_CWR)
		s->prr_delivered = 0;
	e.arg = new_state;
	emit(sk, s, &e, SE_SET_STATE);
}

SEC("struct_ops")
void BPF_PROG(xrc_shim_cwnd_event, struct sock *sk, int ev)
{
	struct shim_sk *s = state(sk);
	struct shim_event e = {};

	if (!s)
		return;
	send_pre(sk, s);
	e.arg = ev;
	emit(sk, s, &e, SE_CWND_EVENT);
}

SEC("struct_ops")
u32 BPF_PROG(xrc_shim_undo_cwnd, struct sock *sk)
{
	struct shim_sk *s = state(sk);
	struct shim_event e = {};
	u32 r = tcp_reno_undo_cwnd(sk); /* difference 3 */

	if (s) {
		send_pre(sk, s);
		e.pkts_acked = tcp_sk(sk)->prior_cwnd;
		emit(sk, s, &e, SE_UNDO);
		/* The kernel sets the window to r: the agent's own undo, in its
		 * next decision, replaces it. */
		s->applied_cwnd = r;
	}
	return r;
}

/* Linux tcp_cwnd_reduction (proportional rate reduction, RFC 6937). */
static __always_inline void prr(struct tcp_sock *tp, struct shim_sk *s, int acked_sacked, int lost, int flag)
{
	int delta = (int)tp->snd_ssthresh - (int)in_flight(tp);
	int sndcnt;
	u64 div;

	if (acked_sacked <= 0 || !tp->prior_cwnd)
		return;
	s->prr_delivered += acked_sacked;
	if (delta < 0) {
		div = (u64)tp->snd_ssthresh * s->prr_delivered + tp->prior_cwnd - 1;
		sndcnt = (int)(div / tp->prior_cwnd) - (int)tp->prr_out;
	} else {
		sndcnt = (int)s->prr_delivered - (int)tp->prr_out;
		if (sndcnt < acked_sacked)
			sndcnt = acked_sacked;
		if ((flag & FLAG_SND_UNA_ADVANCED) && !lost)
			sndcnt++;
		if (sndcnt > delta)
			sndcnt = delta;
	}
	if (sndcnt < (tp->prr_out ? 0 : 1))
		sndcnt = tp->prr_out ? 0 : 1;
	tp->snd_cwnd = in_flight(tp) + sndcnt;
}

SEC("struct_ops")
void BPF_PROG(xrc_shim_cong_control, struct sock *sk, u32 ack, int flag, const struct rate_sample *rs)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct shim_sk *s = state(sk);
	struct shim_event e = {};
	struct shim_decision *d;
	struct xrc_sock_key k;
	bool reducing, fresh;
	u32 cwnd;
	u8 ca;

	if (!s)
		return;
	send_pre(sk, s);
	s->gathering = 0;
	e.rtt_us = (s32)rs->rtt_us;
	e.rs_delivered = rs->delivered;
	e.rs_interval_us = rs->interval_us > 0 ? (u32)rs->interval_us : 0;
	e.rs_prior_delivered = rs->prior_delivered;
	e.rs_acked_sacked = rs->acked_sacked;
	e.rs_losses = rs->losses > 0 ? rs->losses : 0;
	e.rs_prior_in_flight = rs->prior_in_flight;
	if (rs->is_app_limited)
		e.flags |= SF_APP_LIMITED;
	if (rs->is_retrans)
		e.flags |= SF_RETRANS;
	emit(sk, s, &e, SE_POST);

	ca = BPF_CORE_READ_BITFIELD(inet_csk(sk), icsk_ca_state);
	reducing = ca == TCP_CA_CWR || ca == TCP_CA_Recovery;
	k = e.key;
	d = bpf_map_lookup_elem(&shim_decisions, &k);
	if (!d) {
		stat(SC_NO_DECISION);
		if (reducing)
			prr(tp, s, rs->acked_sacked, rs->losses, flag);
		else
			tcp_reno_cong_avoid(sk, ack, rs->acked_sacked);
		s->last_post = e.seq;
		return;
	}
	if (d->seq < s->last_post)
		stat(SC_STALE); /* difference 1: the agent had not answered the last POST */
	s->last_post = e.seq;
	fresh = d->seq != s->applied || d->oob != s->applied_oob;
	if (d->ssthresh && fresh) {
		tp->snd_ssthresh = d->ssthresh;
		s->applied_ssthresh = d->ssthresh;
	}
	if (reducing && !d->controls) {
		stat(SC_PRR);
		prr(tp, s, rs->acked_sacked, rs->losses, flag);
	} else if (fresh) {
		cwnd = d->cwnd ? d->cwnd : 1;
		if (cwnd > tp->snd_cwnd_clamp)
			cwnd = tp->snd_cwnd_clamp;
		tp->snd_cwnd = cwnd;
		s->applied_cwnd = cwnd;
		stat(SC_APPLIED);
	}
	s->applied = d->seq;
	s->applied_oob = d->oob;
	s->min_tso = d->min_tso_segs;
	if (d->pacing_bps) {
		sk->sk_pacing_rate = d->pacing_bps / 8;
		sk->sk_pacing_status = SK_PACING_NEEDED;
		s->paced = 1;
	} else if (s->paced) {
		sk->sk_pacing_rate = ~0UL;
		sk->sk_pacing_status = SK_PACING_NONE;
		s->paced = 0;
	}
}

/* Linux tcp_tso_segs asks the congestion control for its smallest burst
 * (tcp_tso_autosize takes the larger of it and about a millisecond's worth
 * at the pacing rate): the agent's algorithm says (1: each segment paced on
 * its own, as the simulator paces an algorithm whose reference is not the
 * kernel); Linux's default, 2 (tcp_min_tso_segs), until it has. */
SEC("struct_ops")
u32 BPF_PROG(xrc_shim_min_tso_segs, struct sock *sk)
{
	struct shim_sk *s = bpf_sk_storage_get(&shim_store, sk, 0, 0);

	return s && s->min_tso ? s->min_tso : 2;
}

SEC(".struct_ops.link")
struct tcp_congestion_ops xrc_shim = {
	.init = (void *)xrc_shim_init,
	.release = (void *)xrc_shim_release,
	.ssthresh = (void *)xrc_shim_ssthresh,
	.cong_control = (void *)xrc_shim_cong_control,
	.set_state = (void *)xrc_shim_set_state,
	.cwnd_event = (void *)xrc_shim_cwnd_event,
	.in_ack_event = (void *)xrc_shim_in_ack_event,
	.pkts_acked = (void *)xrc_shim_pkts_acked,
	.undo_cwnd = (void *)xrc_shim_undo_cwnd,
	.min_tso_segs = (void *)xrc_shim_min_tso_segs,
	.name = "xrc_shim",
};
