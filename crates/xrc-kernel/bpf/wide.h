/* SPDX-License-Identifier: GPL-2.0 OR Apache-2.0 */
/*
 * 128-bit unsigned arithmetic for BPF, which has no 128-bit multiply
 * (clang lowers one to a libcall, __multi3, that BPF cannot call).
 *
 * These are the operations the XRC sender's integer rules need
 * (transport/cc/xrc.rs, "Arithmetic"): the simulator computes the same
 * expressions with Rust's u128, saturating where these saturate, so both
 * give the same bits for the same inputs.
 */
#ifndef XRC_WIDE_H
#define XRC_WIDE_H

struct u128 {
	u64 hi;
	u64 lo;
};

#define U64_MAX_ (~0ULL)

/* a·b exactly, by 32-bit limbs. */
static __always_inline struct u128 mul64(u64 a, u64 b)
{
	u64 a0 = a & 0xffffffffULL, a1 = a >> 32;
	u64 b0 = b & 0xffffffffULL, b1 = b >> 32;
	u64 p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
	u64 mid = (p00 >> 32) + (p01 & 0xffffffffULL) + (p10 & 0xffffffffULL);
	struct u128 r;

	r.lo = (p00 & 0xffffffffULL) | (mid << 32);
	r.hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
	return r;
}

/* x·c, saturating at 2^128 − 1 (Rust's u128::saturating_mul). */
static __always_inline struct u128 mul128_sat(struct u128 x, u64 c)
{
	struct u128 lo = mul64(x.lo, c);
	struct u128 hi = mul64(x.hi, c);
	struct u128 sat = { U64_MAX_, U64_MAX_ };
	u64 top;

	if (hi.hi)
		return sat;
	top = lo.hi + hi.lo;
	if (top < lo.hi)
		return sat;
	lo.hi = top;
	return lo;
}

static __always_inline bool lt128(struct u128 a, struct u128 b)
{
	return a.hi < b.hi || (a.hi == b.hi && a.lo < b.lo);
}

/* floor(x / d) for d ≥ 1, saturating at 2^64 − 1. */
static __always_inline u64 div128_32_sat(struct u128 x, u32 d)
{
	u64 r, x1, q1, x0, q0;

	if (d == 0)
		return U64_MAX_;
	if (x.hi >= d)
		return U64_MAX_; /* the quotient needs more than 64 bits */
	r = x.hi; /* < d < 2^32 */
	x1 = (r << 32) | (x.lo >> 32);
	q1 = x1 / d;
	r = x1 - q1 * d;
	x0 = (r << 32) | (x.lo & 0xffffffffULL);
	q0 = x0 / d;
	return (q1 << 32) + q0;
}

#endif
