/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * What the BPF programs and xrc's loader (crates/xrc-kernel/src) share: the
 * configuration, the counters, the per-socket summary and the trace record.
 * Every struct is laid out without implicit padding; src/abi.rs declares
 * the same structs with #[repr(C)] and a test checks their sizes.
 *
 * The base station's option (crates/xrc-emu/src/feedback.rs):
 *   NOP NOP | kind 253 | len 10 | ExID 0x5852 | rate kbit/s (32) | HoL 0.1 ms (16)
 * and the two short options the shim also reads (crates/xrc-core/src/net/wire.rs):
 *   kind 253 | len 8 | ExID 0x4142 "AB" | accelerate (16) | brake (16)   ABC's marks
 *   kind 253 | len 8 | ExID 0x5042 "PB" | rate kbit/s (32)               PBE-CC's report
 */
#ifndef XRC_ABI_H
#define XRC_ABI_H

#define XRC_OPT_KIND 253
#define XRC_OPT_LEN 10
#define XRC_OPT_EXID_HI 0x58
#define XRC_OPT_EXID_LO 0x52
#define ABC_OPT_EXID_HI 0x41
#define ABC_OPT_EXID_LO 0x42
#define PBE_OPT_EXID_HI 0x50
#define PBE_OPT_EXID_LO 0x42
/* A receiver's placeholder that no base station filled: rate 0, HoL 0xffff. */
#define XRC_HOL_PLACEHOLDER 0xffff

/* Fixed-point scale of window credit and of probe_segments: segments × 2^20. */
#define XRC_FP_SHIFT 20

/* Configuration, one entry of the `cfg` array map, written by the loader. */
struct xrc_cfg {
	__u64 budget_ns;           /* queuing budget λ */
	__u64 feedback_timeout_ns; /* older feedback: standard TCP */
	__u64 probe_fp;            /* window growth per RTT when probing, segments × 2^20 */
	__u32 ramp_milli;          /* round trips to close the gap to twnd, × 1000 */
	__u32 unfair_gain_milli;   /* unfairness-mode growth per RTT, fraction of cwnd × 1000 */
	__u32 unfair_after_rtts;   /* N */
	__u32 trace;               /* 1: a trace record per hook into `events` */
	__u64 max_rate_kbps;       /* feedback above this is ignored */
	__u64 max_hol_ns;          /* feedback above this is ignored */
	__u64 tag_k0;              /* the keyed tag's key (SipHash-2-4), when tag_on */
	__u64 tag_k1;
	__u32 tag_on;              /* 1: only tagged options whose tag checks and whose sequence number is new */
	__u32 pad;
};

/* Counters per socket (also the machine-wide sums in `stats`). */
enum xrc_counter {
	XC_FB_VALID,      /* options parsed with plausible values */
	XC_FB_APPLIED,    /* of those, handed to the congestion control */
	XC_FB_SUPERSEDED, /* replaced by a later one before any hook ran */
	XC_FB_ZERO,       /* ignored: rate 0 */
	XC_FB_RATE_HIGH,  /* ignored: rate above max_rate_kbps */
	XC_FB_HOL_HIGH,   /* ignored: HoL above max_hol_ns */
	XC_FB_MALFORMED,  /* ignored: our kind and ExID with a wrong length, or unparsable options */
	XC_FB_PLACEHOLDER,/* a receiver's placeholder no base station filled */
	XC_FALLBACKS,     /* times the sender fell back to standard TCP for stale feedback */
	XC_ROUNDS,        /* rounds (windows of data) ended */
	XC_SOCKETS,       /* congestion-control inits */
	XC_TRACE_LOST,    /* trace records the ring buffer had no room for */
	XC_FB_BAD_TAG,    /* ignored: the keyed tag does not check */
	XC_FB_REPLAYED,   /* ignored: a sequence number not newer than the last taken */
	XC_FB_UNTAGGED,   /* ignored: no tag where one is required */
	XC_NCOUNTERS,
};

/* A socket's summary in the `socks` map, keyed by its 4-tuple. */
struct xrc_sock_key {
	__u32 saddr; /* network order */
	__u32 daddr;
	__u16 sport; /* host order */
	__u16 dport;
	__u32 pad;
};

struct xrc_sock_info {
	__u64 counters[XC_NCOUNTERS];
	__u64 updated_ns;
	__u32 cwnd;
	__u32 rate_kbps;  /* latest explicit rate */
	__u32 hol_us;     /* latest HoL */
	__u32 min_rtt_us;
	__u32 sigma_us;   /* σ of the last round (0 before one) */
	__u8 mode;        /* enum xrc_mode */
	__u8 bottleneck;  /* 0 wireless, 1 Internet */
	__u8 closed;      /* the socket was released */
	__u8 pad;
};

/* enum xrc_mode: the simulator's cc::xrc::Mode, same order. */
#define XM_RENO 0
#define XM_RAMP 1
#define XM_PROBE 2
#define XM_HOLD 3
#define XM_UNFAIR 4
#define XM_INTERNET 5

/* Trace hooks. */
#define XH_FEEDBACK 1
#define XH_PKTS_ACKED 2
#define XH_CONG_AVOID 3
#define XH_SSTHRESH 4
#define XH_SET_STATE 5
#define XH_UNDO 6
#define XH_INIT 7
#define XH_RELEASE 8

/* One hook call as the congestion control saw it: its inputs, the window
 * before and after, and what it returned. The simulator's sender is fed the
 * same inputs and must give the same outputs (src/replay.rs). */
struct xrc_trace {
	__u64 now_ns;
	__u64 sock;          /* the socket's 4-tuple, folded */
	__u8 hook;
	__u8 mode_after;
	__u8 ca_state;
	__u8 cwnd_limited;
	__u32 arg;           /* acked (cong_avoid), pkts_acked, new state (set_state) */
	__s32 rtt_us;        /* pkts_acked's sample, −1 without one */
	__u32 fb_rate_kbps;  /* feedback's fields */
	__u32 fb_hol_tenths;
	__u32 snd_una;
	__u32 snd_nxt;
	__u32 delivered;
	__u32 mss;
	__u32 in_flight;
	__u32 cwnd_before;
	__u32 ssthresh_before;
	__u32 cnt_before;
	__u32 clamp;
	__u32 cwnd_after;
	__u32 ssthresh_after;
	__u32 cnt_after;
	__u32 ret;
};

/* ------------------------------------------------------------- the shim */

/* Shim events (struct shim_event.kind), in the order the simulator's sender
 * calls its hooks for one ACK: PRE (feedback, in_ack_event, pkts_acked),
 * then any SSTHRESH, SET_STATE, CWND_EVENT or UNDO, then POST (the window
 * update, cong_control or cong_avoid). SSTHRESH, SET_STATE, CWND_EVENT and
 * UNDO also come outside an ACK (a retransmission timeout). */
#define SE_INIT 1
#define SE_PRE 2
#define SE_SSTHRESH 3
#define SE_SET_STATE 4
#define SE_CWND_EVENT 5
#define SE_UNDO 6
#define SE_POST 7
#define SE_RELEASE 8

/* shim_event.flags */
#define SF_FEEDBACK 0x01      /* fb_* hold a fresh option (PRE) */
#define SF_SLOW_PATH 0x02     /* in_ack_event's CA_ACK_SLOWPATH */
#define SF_WIN_UPDATE 0x04    /* CA_ACK_WIN_UPDATE */
#define SF_ECE 0x08           /* CA_ACK_ECE */
#define SF_CWND_LIMITED 0x10  /* tcp_is_cwnd_limited */
#define SF_APP_LIMITED 0x20   /* rate sample: is_app_limited */
#define SF_RETRANS 0x40       /* rate sample: is_retrans */
#define SF_HAS_SAMPLE 0x80    /* PRE: pkts_acked ran for this ACK */

/* shim_event.flags2 */
#define SF2_ABC 0x01          /* PRE: fb_abc_* hold ABC's marks echoed since the last PRE */
#define SF2_PBE 0x02          /* PRE: fb_pbe_kbps holds a fresh PBE-CC report */

/* One event for the user-space agent (160 bytes). */
struct shim_event {
	__u64 now_ns;
	__u64 seq;            /* this socket's events so far, this one included */
	struct xrc_sock_key key;
	__u8 kind;
	__u8 ca_state;
	__u8 arg;             /* SET_STATE: new state; CWND_EVENT: the event */
	__u8 flags;
	__u32 cwnd;
	__u32 ssthresh;
	__u32 mss;
	__u32 in_flight;
	__u32 packets_out;
	__u32 sacked_out;
	__u32 lost_out;
	__u32 retrans_out;
	__u32 snd_una;
	__u32 snd_nxt;
	__u32 delivered;
	__u32 lost;           /* tp->lost */
	__u32 srtt_us;        /* tp->srtt_us >> 3 */
	__u32 pkts_acked;     /* PRE: ack_sample.pkts_acked; UNDO: prior_cwnd */
	__s32 rtt_us;         /* PRE: ack_sample.rtt_us; POST: rs->rtt_us */
	__u32 fb_rate_kbps;
	__u32 fb_hol_tenths;
	__s32 rs_delivered;   /* POST: the rate sample */
	__u32 rs_interval_us;
	__u32 rs_prior_delivered;
	__u32 rs_acked_sacked;
	__u32 rs_losses;
	__u32 rs_prior_in_flight;
	__u32 applied_cwnd;   /* the window the shim last set (0: none): when cwnd differs, the kernel changed it */
	__u32 applied_ssthresh; /* the same for the slow-start threshold */
	__u32 fb_air_tenths;  /* PRE with SF_FEEDBACK: the option's air field, 0xffffffff when absent */
	__u32 fb_room;        /* and its room field */
	__u32 fb_pbe_kbps;    /* PRE with SF2_PBE: the UE's PBE-CC capacity report */
	__u16 fb_abc_accel;   /* PRE with SF2_ABC: accelerate marks echoed since the last PRE */
	__u16 fb_abc_brake;   /* and brake marks */
	__u32 flags2;         /* SF2_* */
	__u32 pad2;
};

/* The agent's answer for a socket (the `shim_decisions` map, keyed by its
 * 4-tuple), applied by the shim at the socket's next ACK. */
struct shim_decision {
	__u64 seq;            /* the event it answers */
	__u64 event_ns;       /* that event's time */
	__u64 pacing_bps;     /* 0: no pacing */
	__u32 cwnd;           /* the agent's window */
	__u32 ssthresh;
	__u8 controls;        /* the algorithm sets the window itself (cong_control): also in CWR and Recovery */
	__u8 oob;             /* decisions made on out-of-band reports (NetAssist) after event `seq`, modulo 256 */
	__u8 min_tso_segs;    /* the algorithm's smallest TSO burst (min_tso_segs), segments; 0: the kernel's default */
	__u8 pad[5];
};

/* Shim counters (`shim_stats`, per CPU). */
#define SC_EVENTS 0            /* events written */
#define SC_EVENTS_LOST 1       /* events the ring buffer had no room for */
#define SC_APPLIED 2           /* decisions applied */
#define SC_NO_DECISION 3       /* ACKs with no decision yet (the kernel's Reno) */
#define SC_STALE 4             /* ACKs whose decision answered an older event than the last POST */
#define SC_PRR 5               /* ACKs in CWR or Recovery handled by PRR here */
#define SC_SHORT_MALFORMED 6   /* ABC or PBE-CC options (our kind and ExID) with a wrong length: ignored */
#define SC_NCOUNTERS 7

#endif
