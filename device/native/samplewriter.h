/*
 * A DATA frame's seq, t and values in C (docs/protocol.md §5.7): what hub/fast-frames.ts
 * writeSampleAfter writes after a route's prefix, byte for byte (canonical CBOR, §4: the shortest
 * head for each unsigned integer; a number that is a safe integer other than -0 as an integer,
 * anything else as the shortest of binary16, binary32 and binary64 that holds it exactly, NaN as
 * the binary16 0x7e00). Plain C with no XS and no ESP-IDF: ./samplewriter.c wraps it for the
 * device, and the host compiles it as it is (bench/native/native-host.c) to check it against the
 * script writer and to time it.
 */
#ifndef SAMPLEWRITER_H
#define SAMPLEWRITER_H

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#define kSampleKeyT 5
#define kSampleKeyValues 6
#define kSampleMaxSafe 9007199254740991.0

/* The most bytes sampleWrite writes for `count` values (seq and t of at most 9 bytes each, their keys, the array head, 9 bytes a value). */
#define kSampleWriteMax(count) (9 + 1 + 9 + 1 + 3 + 9 * (count))

/* A CBOR head of major type `mt` (shifted: 0x00, 0x20, 0x80) with argument n at b; the bytes written. */
static inline uint32_t sampleHead(uint8_t *b, uint8_t mt, uint64_t n)
{
	if (n < 24) {
		b[0] = (uint8_t)(mt | n);
		return 1;
	}
	if (n < 0x100) {
		b[0] = (uint8_t)(mt | 24);
		b[1] = (uint8_t)n;
		return 2;
	}
	if (n < 0x10000) {
		b[0] = (uint8_t)(mt | 25);
		b[1] = (uint8_t)(n >> 8);
		b[2] = (uint8_t)n;
		return 3;
	}
	if (n < 0x100000000ULL) {
		b[0] = (uint8_t)(mt | 26);
		b[1] = (uint8_t)(n >> 24);
		b[2] = (uint8_t)(n >> 16);
		b[3] = (uint8_t)(n >> 8);
		b[4] = (uint8_t)n;
		return 5;
	}
	b[0] = (uint8_t)(mt | 27);
	for (int i = 0; i < 8; i++)
		b[1 + i] = (uint8_t)(n >> (56 - 8 * i));
	return 9;
}

/* The binary16 pattern that holds the float32 with these bits exactly, or -1 (not called for NaN). */
static inline int32_t sampleF16(uint32_t bits)
{
	uint32_t sign = (bits >> 16) & 0x8000;
	uint32_t exp = (bits >> 23) & 0xff;
	uint32_t mant = bits & 0x7fffff;
	int32_t e;
	if (exp == 0xff)
		return (int32_t)(sign | 0x7c00);
	if (exp == 0)
		return mant ? -1 : (int32_t)sign;
	e = (int32_t)exp - 127;
	if (e > 15 || e < -24)
		return -1;
	if (e >= -14)
		return (mant & 0x1fff) ? -1 : (int32_t)(sign | ((uint32_t)(e + 15) << 10) | (mant >> 13));
	/* Subnormal in binary16: the value is m * 2^-24 with m = (1.mant) * 2^(e + 24), whole or not at all. */
	{
		uint32_t full = 0x800000 | mant;
		uint32_t shift = (uint32_t)(-(e + 1));
		if (full & ((1u << shift) - 1))
			return -1;
		return (int32_t)(sign | (full >> shift));
	}
}

/* One number at b; the bytes written. */
static inline uint32_t sampleNumber(uint8_t *b, double x)
{
	if (x == x && fabs(x) <= kSampleMaxSafe && x == trunc(x) && !(x == 0 && signbit(x)))
		return x >= 0 ? sampleHead(b, 0x00, (uint64_t)x) : sampleHead(b, 0x20, (uint64_t)(-1 - x));
	if (x != x) {
		b[0] = 0xf9;
		b[1] = 0x7e;
		b[2] = 0x00;
		return 3;
	}
	if (fabs(x) <= FLT_MAX || isinf(x)) {
		float f = (float)x;
		if ((double)f == x) {
			uint32_t bits;
			int32_t h;
			memcpy(&bits, &f, sizeof(bits));
			if (!(bits & 0x1fff) && (h = sampleF16(bits)) >= 0) {
				b[0] = 0xf9;
				b[1] = (uint8_t)(h >> 8);
				b[2] = (uint8_t)h;
				return 3;
			}
			b[0] = 0xfa;
			b[1] = (uint8_t)(bits >> 24);
			b[2] = (uint8_t)(bits >> 16);
			b[3] = (uint8_t)(bits >> 8);
			b[4] = (uint8_t)bits;
			return 5;
		}
	}
	{
		uint64_t bits;
		memcpy(&bits, &x, sizeof(bits));
		b[0] = 0xfb;
		for (int i = 0; i < 8; i++)
			b[1 + i] = (uint8_t)(bits >> (56 - 8 * i));
		return 9;
	}
}

/*
 * seq, the key of t, t, the key of values, and the array of `count` values (doubles in this
 * machine's order, no alignment needed) at b; the bytes written (at most kSampleWriteMax(count)).
 * seq and t are whole numbers from 0 to 2^53 - 1.
 */
static inline uint32_t sampleWrite(uint8_t *b, double seq, double t, const uint8_t *values, uint32_t count)
{
	uint32_t p = sampleHead(b, 0x00, (uint64_t)seq);
	b[p++] = kSampleKeyT;
	p += sampleHead(b + p, 0x00, (uint64_t)t);
	b[p++] = kSampleKeyValues;
	p += sampleHead(b + p, 0x80, count);
	for (uint32_t i = 0; i < count; i++) {
		double x;
		memcpy(&x, values + 8 * i, sizeof(x));
		p += sampleNumber(b + p, x);
	}
	return p;
}

#endif
