/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * SipHash-2-4 (Aumasson and Bernstein, INDOCRYPT 2012) for BPF: the keyed
 * tag of the base station's option. The base station computes the same
 * function (crates/xrc-emu/src/siphash.rs, checked against the paper's test
 * vector); messages here are at most 24 bytes, given as up to three
 * little-endian words.
 */
#ifndef XRC_SIPHASH_H
#define XRC_SIPHASH_H

#define ROTL(x, b) (((x) << (b)) | ((x) >> (64 - (b))))

#define SIPROUND                                                                                                      \
	do {                                                                                                          \
		v0 += v1;                                                                                             \
		v1 = ROTL(v1, 13) ^ v0;                                                                               \
		v0 = ROTL(v0, 32);                                                                                    \
		v2 += v3;                                                                                             \
		v3 = ROTL(v3, 16) ^ v2;                                                                               \
		v0 += v3;                                                                                             \
		v3 = ROTL(v3, 21) ^ v0;                                                                               \
		v2 += v1;                                                                                             \
		v1 = ROTL(v1, 17) ^ v2;                                                                               \
		v2 = ROTL(v2, 32);                                                                                    \
	} while (0)

/* SipHash-2-4 of the 22-byte message in m[0..3) (m[2]'s top bytes zero). */
static __always_inline u64 siphash24_22(u64 k0, u64 k1, const u64 m[3])
{
	u64 v0 = k0 ^ 0x736f6d6570736575ULL, v1 = k1 ^ 0x646f72616e646f6dULL;
	u64 v2 = k0 ^ 0x6c7967656e657261ULL, v3 = k1 ^ 0x7465646279746573ULL;
	u64 b = m[2] | (22ULL << 56);

	v3 ^= m[0];
	SIPROUND;
	SIPROUND;
	v0 ^= m[0];
	v3 ^= m[1];
	SIPROUND;
	SIPROUND;
	v0 ^= m[1];
	v3 ^= b;
	SIPROUND;
	SIPROUND;
	v0 ^= b;
	v2 ^= 0xff;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

#endif
