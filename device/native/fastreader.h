/*
 * The frequent client frames read in place, in C: what hub/fast-reader.ts FastReader.read reads,
 * step for step: the canonical ACK {0: 12, 28: acked}, PING {0: 13, 31: t0} and BUNDLE
 * {0: 8, 3: channel_id, 6: [[t, v…] …]} (samples all of one length), anything else Fast.NONE (0)
 * for the general decoder to judge. Plain C with no XS: ./fastreader.c wraps it for the device,
 * and the host compiles it as it is (bench/native/native-host.c) to check it against the script
 * reader and to time it.
 *
 * Bytes are read only inside the frame: where the script reads past the frame's end (a frame
 * that does not end where its last number does), which always ends in NONE, this reads a byte
 * that matches nothing (kFastPast) and ends in NONE too.
 */
#ifndef FASTREADER_H
#define FASTREADER_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#define kFastNone 0
#define kFastBundle 8
#define kFastAck 12
#define kFastPing 13
#define kFastKeyType 0
#define kFastKeyChannelId 3
#define kFastKeyValues 6
#define kFastKeyAcked 28
#define kFastKeyT0 31
#define kFastMinChannelId 1
#define kFastMaxChannelId 255
#define kFastMaxSamples 32
#define kFastMaxSampleNumbers 33
#define kFastMaxSafe 9007199254740991.0
/* What a byte past the frame's end reads as: no head, no key, no count. */
#define kFastPast 0x100

typedef struct {
	double value;      /* ACK: acked; PING: t0 */
	uint32_t channelId; /* BUNDLE */
	uint32_t count;    /* BUNDLE: samples */
	uint32_t width;    /* BUNDLE: numbers a sample */
	int finite;        /* BUNDLE: every number after a sample's time is finite */
} FastOut;

typedef struct {
	const uint8_t *b;
	uint32_t end;
} FastIn;

static inline uint32_t fastAt(const FastIn *in, uint32_t i)
{
	return i < in->end ? in->b[i] : kFastPast;
}

static inline double fastU32At(const FastIn *in, uint32_t p)
{
	return (double)fastAt(in, p) * 16777216.0 + (double)(((fastAt(in, p + 1) & 0xff) << 16) | ((fastAt(in, p + 2) & 0xff) << 8) | (fastAt(in, p + 3) & 0xff));
}

/* The argument of the head at p with additional information ai, canonical (shortest) and at most 2^53 - 1, within end; -1 otherwise. */
static inline double fastArgument(const FastIn *in, uint32_t p, uint32_t ai)
{
	double n;
	if (ai < 24)
		return (double)ai;
	if (ai == 24) {
		if ((uint64_t)p + 2 > in->end)
			return -1;
		n = fastAt(in, p + 1);
		return n >= 24 ? n : -1;
	}
	if (ai == 25) {
		if ((uint64_t)p + 3 > in->end)
			return -1;
		n = (fastAt(in, p + 1) << 8) | fastAt(in, p + 2);
		return n >= 0x100 ? n : -1;
	}
	if (ai == 26) {
		if ((uint64_t)p + 5 > in->end)
			return -1;
		n = fastU32At(in, p + 1);
		return n >= 0x10000 ? n : -1;
	}
	if (ai == 27) {
		double hi, lo;
		if ((uint64_t)p + 9 > in->end)
			return -1;
		hi = fastU32At(in, p + 1);
		if (hi == 0 || hi > 0x1fffff)
			return -1;
		lo = fastU32At(in, p + 5);
		return hi * 4294967296.0 + lo;
	}
	return -1;
}

static inline uint32_t fastArgumentBytes(uint32_t ai)
{
	return ai < 24 ? 1 : ai == 24 ? 2 : ai == 25 ? 3 : ai == 26 ? 5 : 9;
}

/* A canonical unsigned integer that fills [p, end) exactly; -1 otherwise (its length tells its head). */
static inline double fastUintTo(const FastIn *in, uint32_t p)
{
	uint32_t len = in->end - p;
	uint32_t ib = fastAt(in, p);
	double n;
	if (len == 1)
		return ib < 24 ? (double)ib : -1;
	if (len == 5) {
		if (ib != 0x1a)
			return -1;
		n = fastU32At(in, p + 1);
		return n >= 0x10000 ? n : -1;
	}
	if (len == 3) {
		if (ib != 0x19)
			return -1;
		n = (fastAt(in, p + 1) << 8) | fastAt(in, p + 2);
		return n >= 0x100 ? n : -1;
	}
	if (len == 2) {
		if (ib != 0x18)
			return -1;
		n = fastAt(in, p + 1);
		return n >= 24 ? n : -1;
	}
	return len == 9 && ib == 0x1b ? fastArgument(in, p, 27) : -1;
}

/* The count of the canonical definite array head at p; -1 otherwise. */
static inline double fastArrayHeadAt(const FastIn *in, uint32_t p)
{
	uint32_t ib;
	if (p >= in->end)
		return -1;
	ib = in->b[p];
	if ((ib >> 5) != 4)
		return -1;
	return fastArgument(in, p, ib & 0x1f);
}

static inline double fastF16(uint32_t h)
{
	uint32_t e = (h >> 10) & 0x1f, f = h & 0x3ff;
	double a = e == 0 ? (double)f / 16777216.0 : e == 0x1f ? (f == 0 ? INFINITY : NAN) : ldexp((double)(f + 1024), (int)e - 25);
	return (h & 0x8000) ? -a : a;
}

static inline double fastF32(uint32_t bits)
{
	float f;
	memcpy(&f, &bits, 4);
	return (double)f;
}

static inline double fastF64(const FastIn *in, uint32_t p)
{
	uint64_t bits = 0;
	double d;
	for (uint32_t i = 0; i < 8; i++)
		bits = (bits << 8) | (fastAt(in, p + i) & 0xff);
	memcpy(&d, &bits, 8);
	return d;
}

static inline uint32_t fastBits32(const FastIn *in, uint32_t p)
{
	return ((fastAt(in, p) & 0xff) << 24) | ((fastAt(in, p + 1) & 0xff) << 16) | ((fastAt(in, p + 2) & 0xff) << 8) | (fastAt(in, p + 3) & 0xff);
}

/* A number at p as the script's number() reads it: an integer (canonical, safe) or a float of any width; its end in *pos, -1 when there is none. */
static inline double fastNumber(const FastIn *in, uint32_t p, int64_t *pos)
{
	uint32_t ib = fastAt(in, p);
	uint32_t major = ib >> 5;
	*pos = -1;
	if (ib < 0x100 && (major == 0 || major == 1)) {
		double n = fastArgument(in, p, ib & 0x1f);
		if (n < 0 || (major == 1 && n == kFastMaxSafe))
			return NAN;
		*pos = (int64_t)p + fastArgumentBytes(ib & 0x1f);
		return major == 0 ? n : -1 - n;
	}
	if (ib == 0xfb && (uint64_t)p + 9 <= in->end) {
		*pos = (int64_t)p + 9;
		return fastF64(in, p + 1);
	}
	if (ib == 0xfa && (uint64_t)p + 5 <= in->end) {
		*pos = (int64_t)p + 5;
		return fastF32(fastBits32(in, p + 1));
	}
	if (ib != 0xf9 || (uint64_t)p + 3 > in->end)
		return NAN;
	*pos = (int64_t)p + 3;
	return fastF16((fastAt(in, p + 1) << 8) | fastAt(in, p + 2));
}

static inline int fastBundle(const FastIn *in, uint32_t p, double *numbers, uint32_t capacity, FastOut *out)
{
	uint32_t ch, n, m, mHead = 1, k = 0, i = 0, j, ib;
	double v, spread = 0, h;
	int64_t pos;
	if (fastAt(in, p) != kFastKeyChannelId)
		return kFastNone;
	ch = fastAt(in, p + 1);
	if (ch < 24)
		p += 2;
	else if (ch == 0x18 && fastAt(in, p + 2) >= 24 && fastAt(in, p + 2) < 0x100) {
		ch = fastAt(in, p + 2);
		p += 3;
	}
	else
		return kFastNone;
	if (ch < kFastMinChannelId || ch > kFastMaxChannelId || fastAt(in, p) != kFastKeyValues)
		return kFastNone;
	n = fastAt(in, p + 1);
	if (n > 0x80 && n < 0x98) {
		n -= 0x80;
		p += 2;
	}
	else {
		h = fastArrayHeadAt(in, p + 1);
		if (h < 1 || h > kFastMaxSamples)
			return kFastNone;
		n = (uint32_t)h;
		p += 3;
	}
	m = fastAt(in, p);
	if (m > 0x80 && m < 0x98)
		m -= 0x80;
	else {
		h = fastArrayHeadAt(in, p);
		if (h < 1 || h > kFastMaxSampleNumbers)
			return kFastNone;
		m = (uint32_t)h;
		mHead = 2;
	}
	p += mHead;
	for (;;) {
		ib = fastAt(in, p);
		if (ib == 0x19) {
			v = (fastAt(in, p + 1) << 8) | fastAt(in, p + 2);
			if (v < 0x100)
				return kFastNone;
			p += 3;
		}
		else if (ib == 0x1a) {
			v = fastU32At(in, p + 1);
			if (v < 0x10000)
				return kFastNone;
			p += 5;
		}
		else {
			v = fastNumber(in, p, &pos);
			if (pos < 0 || !(fmod(v, 1) == 0) || v < 0)
				return kFastNone;
			p = (uint32_t)pos;
		}
		if (k >= capacity)
			return kFastNone;
		numbers[k++] = v;
		for (j = 1; j < m; j++) {
			ib = fastAt(in, p);
			if (ib == 0xfb) {
				v = fastF64(in, p + 1);
				p += 9;
			}
			else if (ib == 0xfa) {
				v = fastF32(fastBits32(in, p + 1));
				p += 5;
			}
			else if (ib < 24) {
				v = ib;
				p++;
			}
			else {
				v = fastNumber(in, p, &pos);
				if (pos < 0)
					return kFastNone;
				p = (uint32_t)pos;
			}
			if (k >= capacity)
				return kFastNone;
			numbers[k++] = v;
			spread += v - v;
		}
		if (++i == n)
			break;
		/* Too wide to keep: each sample is read into the block's start, for its checks only. */
		if ((uint64_t)n * m > capacity)
			k = 0;
		if (mHead == 1 ? fastAt(in, p) != 0x80 + m : fastArrayHeadAt(in, p) != m)
			return kFastNone;
		p += mHead;
	}
	if (p != in->end)
		return kFastNone;
	out->channelId = ch;
	out->count = n;
	out->width = m;
	out->finite = spread == 0;
	return kFastBundle;
}

/* Reads b[start, end) of a buffer of bufLen bytes: the frame type when it is one of the three in canonical form, else kFastNone. */
static inline int fastRead(const uint8_t *b, uint32_t bufLen, uint32_t start, uint32_t end, double *numbers, uint32_t capacity, FastOut *out)
{
	FastIn in;
	uint32_t type, p, len;
	double v;
	if (end < start || end - start < 5 || end > bufLen || b[start + 1] != kFastKeyType)
		return kFastNone;
	in.b = b;
	in.end = end;
	if (b[start] == 0xa3)
		return b[start + 2] == kFastBundle ? fastBundle(&in, start + 3, numbers, capacity, out) : kFastNone;
	if (b[start] != 0xa2 || b[start + 3] != 0x18)
		return kFastNone;
	type = b[start + 2];
	if (type == kFastAck ? b[start + 4] != kFastKeyAcked : type != kFastPing || b[start + 4] != kFastKeyT0)
		return kFastNone;
	p = start + 5;
	len = end - p;
	if (len == 5) {
		if (b[p] != 0x1a)
			return kFastNone;
		v = fastU32At(&in, p + 1);
		if (v < 0x10000)
			return kFastNone;
	}
	else if (len == 3) {
		if (b[p] != 0x19)
			return kFastNone;
		v = (b[p + 1] << 8) | b[p + 2];
		if (v < 0x100)
			return kFastNone;
	}
	else if (len == 1) {
		v = b[p];
		if (v >= 24)
			return kFastNone;
	}
	else if ((v = fastUintTo(&in, p)) < 0)
		return kFastNone;
	if (type == kFastAck && v >= 4294967296.0)
		return kFastNone;
	out->value = v;
	return (int)type;
}

#endif
