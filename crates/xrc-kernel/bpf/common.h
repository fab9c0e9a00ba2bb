/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * What both BPF objects (xrc.bpf.c, the XRC sender; shim.bpf.c, the shim
 * that hands ACK events to user space) do alike: read the base station's
 * option in sock_ops, and read the connection as Linux's helpers do.
 */
#ifndef XRC_COMMON_H
#define XRC_COMMON_H

#define ENOMSG 42

#include "siphash.h"

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

/* One option as read. */
struct xrc_opt {
	u32 rate;      /* kbit/s */
	u32 hol;       /* 0.1 ms */
	u32 air;       /* 0.1 ms, or XRC_ABSENT */
	u32 room;      /* full-size SDUs, or XRC_ABSENT */
	u32 seq;       /* tagged: its sequence number */
	u8 tagged;
	u64 tag;       /* tagged: its SipHash-2-4 tag */
};

static __always_inline u32 be32_at(const u8 *b)
{
	return (u32)b[0] << 24 | (u32)b[1] << 16 | (u32)b[2] << 8 | b[3];
}

/* The keyed tag of `o` for this connection (the sender's side: local is
 * the sender, remote the receiver), as the base station computes it
 * (crates/xrc-emu/src/feedback.rs, tag()). */
static __always_inline u64 xrc_tag(struct bpf_sock_ops *skops, const struct xrc_cfg *c, const struct xrc_opt *o)
{
	u64 m[3] = {};
	u8 *b = (u8 *)m;
	u32 sport = skops->local_port, rport = bpf_ntohl(skops->remote_port);

	__builtin_memcpy(b, &skops->local_ip4, 4);  /* network order: its bytes as they travel */
	__builtin_memcpy(b + 4, &skops->remote_ip4, 4);
	b[8] = sport >> 8;
	b[9] = sport;
	b[10] = rport >> 8;
	b[11] = rport;
	b[12] = o->seq >> 24;
	b[13] = o->seq >> 16;
	b[14] = o->seq >> 8;
	b[15] = o->seq;
	b[16] = o->rate >> 24;
	b[17] = o->rate >> 16;
	b[18] = o->rate >> 8;
	b[19] = o->rate;
	b[20] = o->hol >> 8;
	b[21] = o->hol;
	return siphash24_22(c->tag_k0, c->tag_k1, m);
}

/* Reads option 253 with our ExID from the segment sock_ops sees (length 10:
 * rate and HoL; 12: and air; 14: and room; 22: rate, HoL, sequence number
 * and keyed tag), checks its length and values against `c`, and returns
 * XRC_NOT_OURS, or a counter of enum xrc_counter: XC_FB_VALID with `o` set,
 * or the reason it is ignored. With `c->tag_on`, only a tagged option
 * whose tag checks is valid; whether its sequence number is new is the
 * caller's to check (it keeps the socket's last). */
static __always_inline int xrc_parse(struct bpf_sock_ops *skops, const struct xrc_cfg *c, struct xrc_opt *o)
{
	u8 opt[24] = { XRC_OPT_KIND, 4, XRC_OPT_EXID_HI, XRC_OPT_EXID_LO };
	long n = bpf_load_hdr_opt(skops, opt, sizeof(opt), 0);

	if (n == -ENOMSG)
		return XRC_NOT_OURS; /* some other unknown option */
	if ((n != 10 && n != 12 && n != 14 && n != 22) || opt[1] != n)
		return XC_FB_MALFORMED;
	o->rate = be32_at(opt + 4);
	o->hol = (u32)opt[8] << 8 | opt[9];
	o->air = (n == 12 || n == 14) ? ((u32)opt[10] << 8 | opt[11]) : XRC_ABSENT;
	o->room = n == 14 ? ((u32)opt[12] << 8 | opt[13]) : XRC_ABSENT;
	o->tagged = n == 22;
	if (o->tagged) {
		o->seq = be32_at(opt + 10);
		o->tag = (u64)be32_at(opt + 14) << 32 | be32_at(opt + 18);
	}
	if (c->tag_on) {
		if (!o->tagged)
			return XC_FB_UNTAGGED;
		if (xrc_tag(skops, c, o) != o->tag)
			return XC_FB_BAD_TAG;
	}
	if (o->rate == 0 && o->hol == XRC_HOL_PLACEHOLDER)
		return XC_FB_PLACEHOLDER;
	if (o->rate == 0)
		return XC_FB_ZERO;
	if (o->rate > c->max_rate_kbps)
		return XC_FB_RATE_HIGH;
	if ((u64)o->hol * 100000ULL > c->max_hol_ns)
		return XC_FB_HOL_HIGH;
	return XC_FB_VALID;
}

/* Reads the short option 253 with ExID (hi, lo) (ABC's marks, PBE-CC's
 * report: 8 bytes, four of value) into `v`: 1 read, 0 absent, -1 malformed
 * (our kind and ExID with another length). */
static __always_inline int short_opt(struct bpf_sock_ops *skops, u8 hi, u8 lo, u8 v[4])
{
	u8 opt[8] = { XRC_OPT_KIND, 4, hi, lo };
	long n = bpf_load_hdr_opt(skops, opt, sizeof(opt), 0);

	if (n == -ENOMSG)
		return 0;
	if (n != 8 || opt[1] != 8)
		return -1;
	v[0] = opt[4];
	v[1] = opt[5];
	v[2] = opt[6];
	v[3] = opt[7];
	return 1;
}

/* Whether a tagged option's sequence number is newer than the socket's
 * last taken (modulo 2^32); takes it if so. Untagged options pass. */
static __always_inline bool xrc_fresh(const struct xrc_cfg *c, const struct xrc_opt *o, u32 *last, u8 *has)
{
	if (!c->tag_on || !o->tagged)
		return true;
	if (*has && (s32)(o->seq - *last) <= 0)
		return false;
	*last = o->seq;
	*has = 1;
	return true;
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
