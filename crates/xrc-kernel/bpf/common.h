/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * What both BPF objects (xrc.bpf.c, the XRC sender; shim.bpf.c, the shim
 * that hands ACK events to user space) do alike: read the base station's
 * option in sock_ops, and read the connection as Linux's helpers do.
 */
#ifndef XRC_COMMON_H
#define XRC_COMMON_H

#define ENOMSG 42

/* What the sock_ops program leaves for the congestion control. */
struct xrc_pending {
	u64 seq;   /* options taken on this socket so far */
	u64 taken; /* the seq the congestion control last applied */
	u32 rate_kbps;
	u32 hol_tenths;
};

/* The option's verdict: the counter it goes to, or XC_FB_VALID. */
#define XRC_NOT_OURS (-1)

/* The option's fields beyond rate and HoL, for the flows that ask for
 * them (xrc2): the agent's air-interface delay, 0.1 ms, and the UE buffer's
 * free room, full-size SDUs; XRC_ABSENT when not on the option. */
#define XRC_ABSENT 0xffffffffU

/* Reads option 253 with our ExID from the segment sock_ops sees (length 10:
 * rate and HoL; 12: and air; 14: and room), checks its length and values
 * against `c`, and returns XRC_NOT_OURS, or a counter of enum xrc_counter:
 * XC_FB_VALID with *rate, *hol, *air and *room set, or the reason it is
 * ignored. */
static __always_inline int xrc_parse(struct bpf_sock_ops *skops, const struct xrc_cfg *c, u32 *rate, u32 *hol,
				     u32 *air, u32 *room)
{
	u8 opt[16] = { XRC_OPT_KIND, 4, XRC_OPT_EXID_HI, XRC_OPT_EXID_LO };
	long n = bpf_load_hdr_opt(skops, opt, sizeof(opt), 0);

	if (n == -ENOMSG)
		return XRC_NOT_OURS; /* some other unknown option */
	if ((n != 10 && n != 12 && n != 14) || opt[1] != n)
		return XC_FB_MALFORMED;
	*rate = (u32)opt[4] << 24 | (u32)opt[5] << 16 | (u32)opt[6] << 8 | opt[7];
	*hol = (u32)opt[8] << 8 | opt[9];
	*air = n >= 12 ? ((u32)opt[10] << 8 | opt[11]) : XRC_ABSENT;
	*room = n >= 14 ? ((u32)opt[12] << 8 | opt[13]) : XRC_ABSENT;
	if (*rate == 0 && *hol == XRC_HOL_PLACEHOLDER)
		return XC_FB_PLACEHOLDER;
	if (*rate == 0)
		return XC_FB_ZERO;
	if (*rate > c->max_rate_kbps)
		return XC_FB_RATE_HIGH;
	if ((u64)*hol * 100000ULL > c->max_hol_ns)
		return XC_FB_HOL_HIGH;
	return XC_FB_VALID;
}

/* At an established callback: ask for the parse callback of segments with
 * options the kernel does not know. Returns whether it was one. */
static __always_inline bool xrc_sockops_established(struct bpf_sock_ops *skops)
{
	if (skops->op != BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB && skops->op != BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB)
		return false;
	bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags | BPF_SOCK_OPS_PARSE_UNKNOWN_HDR_OPT_CB_FLAG);
	return true;
}

/* Linux tcp_is_cwnd_limited (include/net/tcp.h). */
static __always_inline bool is_cwnd_limited(struct tcp_sock *tp)
{
	if (BPF_CORE_READ_BITFIELD(tp, is_cwnd_limited))
		return true;
	if (tp->snd_cwnd < tp->snd_ssthresh)
		return tp->snd_cwnd < 2 * tp->max_packets_out;
	return false;
}

/* Linux tcp_packets_in_flight. */
static __always_inline u32 in_flight(struct tcp_sock *tp)
{
	return tp->packets_out - (tp->sacked_out + tp->lost_out) + tp->retrans_out;
}

static __always_inline struct xrc_sock_key sock_key(struct sock *sk)
{
	struct xrc_sock_key k = {};

	k.saddr = sk->__sk_common.skc_rcv_saddr;
	k.daddr = sk->__sk_common.skc_daddr;
	k.sport = sk->__sk_common.skc_num;
	k.dport = bpf_ntohs(sk->__sk_common.skc_dport);
	return k;
}

#endif
