// SPDX-License-Identifier: GPL-2.0 OR Apache-2.0
/*
 * The receiver's side: a placeholder for the base station's option in
 * every pure ACK of the sockets that ask for it (local ports in
 * [ports_lo, ports_hi]), reserved with bpf_reserve_hdr_opt and written with
 * bpf_store_hdr_opt (Linux's TCP header option API, 5.10+; the reference is
 * tools/testing/selftests/bpf/progs/test_tcp_hdr_options.c). The base
 * station then fills it in place (crates/xrc-emu/src/feedback.rs) instead of
 * growing the packet.
 *
 * The placeholder is the option itself with rate 0 and HoL 0xffff, which a
 * sender takes for "no base station wrote here" (counted, not used).
 *
 * Linux sizes the SACK blocks before asking BPF programs for room
 * (tcp_established_options), so the reservation fails exactly where the
 * base station would have found no room: counted (PC_NO_ROOM).
 */
#include "kern.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "xrc_abi.h"

char _license[] SEC("license") = "GPL";

#define TCPHDR_ACK 0x10

struct placeholder_cfg {
	u32 ports_lo;
	u32 ports_hi;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, u32);
	__type(value, struct placeholder_cfg);
} placeholder_cfg SEC(".maps");

/* Counters: PC_RESERVED, PC_WRITTEN, PC_NO_ROOM, PC_WRITE_FAILED. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 4);
	__type(key, u32);
	__type(value, u64);
} placeholder_stats SEC(".maps");

static __always_inline void stat(u32 c)
{
	u64 *g = bpf_map_lookup_elem(&placeholder_stats, &c);

	if (g)
		*g += 1;
}

static __always_inline bool pure_ack_of_ours(struct bpf_sock_ops *skops, u32 payload)
{
	u32 zero = 0;
	struct placeholder_cfg *c = bpf_map_lookup_elem(&placeholder_cfg, &zero);

	if (!c || skops->local_port < c->ports_lo || skops->local_port > c->ports_hi)
		return false;
	return skops->skb_tcp_flags == TCPHDR_ACK && payload == 0;
}

SEC("sockops")
int xrc_placeholder(struct bpf_sock_ops *skops)
{
	u8 opt[10] = { XRC_OPT_KIND, XRC_OPT_LEN, XRC_OPT_EXID_HI, XRC_OPT_EXID_LO, 0, 0, 0, 0, 0xff, 0xff };
	u32 zero = 0;
	struct placeholder_cfg *c;
	u8 *data;
	u32 hdr;

	switch (skops->op) {
	case BPF_SOCK_OPS_ACTIVE_ESTABLISHED_CB:
	case BPF_SOCK_OPS_PASSIVE_ESTABLISHED_CB:
		c = bpf_map_lookup_elem(&placeholder_cfg, &zero);
		if (c && skops->local_port >= c->ports_lo && skops->local_port <= c->ports_hi)
			bpf_sock_ops_cb_flags_set(skops, skops->bpf_sock_ops_cb_flags |
							 BPF_SOCK_OPS_WRITE_HDR_OPT_CB_FLAG);
		return 1;
	case BPF_SOCK_OPS_HDR_OPT_LEN_CB:
		/* args[0] says the kernel is sizing the MSS: no packet. Before
		 * the header is written, skb_len is the payload's length. */
		if (skops->args[0] == BPF_WRITE_HDR_TCP_CURRENT_MSS || !pure_ack_of_ours(skops, skops->skb_len))
			return 1;
		if (bpf_reserve_hdr_opt(skops, sizeof(opt), 0))
			stat(2);
		else
			stat(0);
		return 1;
	case BPF_SOCK_OPS_WRITE_HDR_OPT_CB:
		/* skb_len is the segment's length, header and options included:
		 * the header's data offset (written already) gives the payload. */
		data = (u8 *)(long)skops->skb_data;
		if (data + 13 > (u8 *)(long)skops->skb_data_end)
			return 1;
		hdr = (u32)(data[12] >> 4) * 4;
		if (!pure_ack_of_ours(skops, skops->skb_len - hdr))
			return 1;
		if (bpf_store_hdr_opt(skops, opt, sizeof(opt), 0))
			stat(3);
		else
			stat(1);
		return 1;
	}
	return 1;
}
