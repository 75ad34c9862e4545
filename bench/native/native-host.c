/*
 * The device's native byte work on the host: device/native/robotframe.h (the robot link's CRC and
 * values) and device/native/samplewriter.h (a DATA frame's seq, t and values), the same C the
 * device runs, checked against the script (test/host/robot-native.test.ts,
 * test/host/sample-native.test.ts) and timed (the device budget, bench/README.md). Built by
 * scripts/lib/native-host.mjs with the host's C compiler.
 *
 *   native-host check          reads lines from stdin and answers each on stdout:
 *                                crc HEX START END CRC          -> the CRC
 *                                copy HEX FROM N AT CRC         -> the CRC, then the destination (N + AT bytes, zeros before AT) in hex
 *                                floats HEX AT COUNT            -> each double's 8 bytes in hex (little-endian), space-separated
 *                                data SEQ T HEX                 -> what sampleWrite writes, in hex, for seq, t and the doubles
 *                                                                  in HEX (8 bytes each, this machine's order; "-": none)
 *                                seq S                          -> the push's sequence after S (routeNextSeq)
 *                                count FIELDS COUNT LENGTH      -> the values a push carries (routeValueCount; COUNT may
 *                                                                  be nan, inf, -inf)
 *                                fast HEX START END CAPACITY   -> fastRead of HEX[START, END) into a block of CAPACITY
 *                                                                  numbers: the type, then for ACK and PING the value, for
 *                                                                  a BUNDLE the channel, count, width, finite and the
 *                                                                  numbers kept (each a float64's bits in hex, NaN as
 *                                                                  7ff8000000000000)
 *                                route FIRST END NOW GATED LASTAT FIELDS N LAYOUT TABLE VALUES MODEL
 *                                                               -> routePush through a model of its calls (RouteModel):
 *                                                                  the deliveries, the 3 tallies, each slot's sent frames,
 *                                                                  the table after (hex) and the log of calls;
 *                                                                  LAYOUT: 13 numbers joined by commas, TABLE and VALUES
 *                                                                  hex (this machine's order), MODEL 5 bytes a slot
 *                                espsent MAC OK CELLS RESULTS   -> espnowSent through a store of numbers (EsStore): the
 *                                                                  store after, then the log of calls. A cell is
 *                                                                  OBJECT.SLOT.VALUE (a property below 100, element i at
 *                                                                  100 + i; VALUE a double's bits in 16 hex digits, rN the
 *                                                                  store's object N, n null), joined by commas; RESULTS
 *                                                                  the calls' answers in order (hex, "-": none); the
 *                                                                  binding is object 0; a call logs as WHAT.A.B.D (hex)
 *                                espsend TAG SEQ CELLS RESULTS  -> espnowSend through the same store, the link object 0
 *                                                                  and its frame object 1 (TAG hex, SEQ a whole number):
 *                                                                  whether the link took it, the store, the log
 *   native-host time N         times N rounds of one imu SAMPLE frame's work (its CRC and its six
 *                              values), of one cmd_vel PUBLISH frame's CRC, of the CRC of 256 bytes
 *                              and of reading 32 values; prints JSON with the nanoseconds of each
 *                              frame, per CRC byte and per value; and N rounds of writing a DATA
 *                              frame's seq, t and 6 values (float32 fractions, as sensors send), and
 *                              N / 8 of one with 32: ns per frame and per value.
 */
#define _POSIX_C_SOURCE 199309L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../device/native/robotframe.h"
#include "../../device/native/samplewriter.h"
#include "../../device/native/route.h"
#include "../../device/native/fastreader.h"
#include "../../device/native/espnowsent.h"

/* The route's calls, as a model: each slot's session (a link or none, its level, its never-shed
 * queue empty or not, what its link's send and the hub's turn answer), every call logged. */
typedef struct {
	RouteCalls calls;
	uint8_t *table;
	const uint32_t *layout;
	const double *values;
	const uint8_t *model; /* 5 bytes a slot: link, level, never-shed empty, send takes, turn delivers */
	uint32_t slot;
	double sentFrames[256];
	char log[8192];
	size_t at;
} RouteModel;

static void modelLog(RouteModel *m, const char *fmt, uint32_t a, uint32_t b, double c)
{
	int n = snprintf(m->log + m->at, sizeof(m->log) - m->at, fmt, a, b, c);
	if (n > 0 && (size_t)n < sizeof(m->log) - m->at)
		m->at += (size_t)n;
}

static void modelColumns(RouteCalls *c, RouteColumns *t)
{
	RouteModel *m = (RouteModel *)c;
	routeColumnsAt(m->table, m->layout, t);
}
static int modelLink(RouteCalls *c, uint32_t slot) { RouteModel *m = (RouteModel *)c; m->slot = slot; return m->model[5 * slot]; }
static double modelLevel(RouteCalls *c) { RouteModel *m = (RouteModel *)c; modelLog(m, "L%u.%u.%g ", m->slot, 0, 0); return m->model[5 * m->slot + 1]; }
static int modelEmpty(RouteCalls *c) { RouteModel *m = (RouteModel *)c; return m->model[5 * m->slot + 2]; }
static int modelSend(RouteCalls *c) { RouteModel *m = (RouteModel *)c; modelLog(m, "S%u.%u.%g ", m->slot, 0, 0); return m->model[5 * m->slot + 3]; }
static void modelSent(RouteCalls *c) { RouteModel *m = (RouteModel *)c; m->sentFrames[m->slot & 255]++; }
static int modelTurn(RouteCalls *c, uint32_t k, uint32_t slot, double level) { RouteModel *m = (RouteModel *)c; modelLog(m, "T%u.%u.%g ", k, slot, level); return m->model[5 * slot + 4]; }
static const double *modelValues(RouteCalls *c) { return ((RouteModel *)c)->values; }

static int unhex(const char *s, uint8_t *out, int max)
{
	int n = 0;
	while (s[0] && s[1] && n < max) {
		unsigned v;
		if (sscanf(s, "%2x", &v) != 1)
			return -1;
		out[n++] = (uint8_t)v;
		s += 2;
	}
	return n;
}

static int routeLine(const char *line)
{
	static char tableHex[65536], valuesHex[8192], modelHex[4096], layoutText[512];
	static uint8_t table[32768] __attribute__((aligned(8)));
	static double values[512];
	static uint8_t model[2048];
	static RouteModel m;
	uint32_t layout[13];
	double first, end, now, lastAt, fields, n, tallies[3] = { 0, 0, 0 };
	int gated, tn, vn, mn;
	RoutePush p;
	uint32_t delivered;
	const char *q;
	if (sscanf(line, "%lf %lf %lf %d %lf %lf %lf %511s %65535s %8191s %4095s", &first, &end, &now, &gated, &lastAt, &fields, &n, layoutText, tableHex, valuesHex, modelHex) != 11)
		return 1;
	q = layoutText;
	for (int i = 0; i < 13; i++) {
		char *e;
		layout[i] = (uint32_t)strtoul(q, &e, 10);
		if (e == q || (i < 12 && *e != ','))
			return 1;
		q = e + 1;
	}
	tn = unhex(tableHex, table, sizeof(table));
	vn = valuesHex[0] == '-' ? 0 : unhex(valuesHex, (uint8_t *)values, sizeof(values));
	mn = unhex(modelHex, model, sizeof(model));
	if (tn < 0 || vn < 0 || mn < 0 || (uint32_t)mn < 5 * layout[11])
		return 1;
	memset(&m, 0, sizeof(m));
	m.calls.link = modelLink;
	m.calls.level = modelLevel;
	m.calls.neverShedEmpty = modelEmpty;
	m.calls.send = modelSend;
	m.calls.sent = modelSent;
	m.calls.turn = modelTurn;
	m.calls.columns = modelColumns;
	m.calls.values = modelValues;
	m.table = table;
	m.layout = layout;
	m.values = values;
	m.model = model;
	p.first = (uint32_t)first;
	p.end = (uint32_t)end;
	p.slots = layout[11];
	p.now = now;
	p.gated = gated;
	p.lastAt = (int32_t)lastAt;
	p.fieldCount = (uint32_t)fields;
	p.n = (uint32_t)n;
	delivered = routePush(&p, &m.calls, tallies);
	printf("%u %g %g %g ", delivered, tallies[0], tallies[1], tallies[2]);
	for (uint32_t i = 0; i < layout[11] && i < 256; i++)
		printf(i + 1 < layout[11] ? "%g," : "%g ", m.sentFrames[i]);
	for (int i = 0; i < tn; i++)
		printf("%02x", table[i]);
	printf(" %s\n", m.at ? m.log : "-");
	return 0;
}

/* espnowsent.h's calls over a store of numbers: objects of properties and elements, the calls
 * into script answered in order from RESULTS and logged. */
#define ES_STORE_OBJECTS 40
#define ES_STORE_ELEMENTS 1024
#define ES_STORE_SLOTS (100 + ES_STORE_ELEMENTS)
enum { esUndefined, esNumber, esRef, esNull };
typedef struct {
	EspSentCalls calls;
	double v[ES_STORE_OBJECTS][ES_STORE_SLOTS];
	uint8_t kind[ES_STORE_OBJECTS][ES_STORE_SLOTS];
	int held[kEsObjects]; /* the store's object each of the course's holds, -1: none */
	double results[64];
	int nResults, nextResult;
	char log[8192];
	size_t at;
} EsStore;

static uint64_t esBits(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }
static double esDouble(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }

static int esSlot(EsStore *m, int o, int slot, double **v, uint8_t **k)
{
	int obj = o >= 0 && o < kEsObjects ? m->held[o] : -1;
	if (obj < 0 || slot < 0 || slot >= ES_STORE_SLOTS)
		return 0;
	*v = &m->v[obj][slot];
	*k = &m->kind[obj][slot];
	return 1;
}
static int esHold(EsStore *m, int to, int from, int slot)
{
	double *v;
	uint8_t *k;
	if (!esSlot(m, from, slot, &v, &k) || *k != esRef) {
		m->held[to] = -1;
		return 0;
	}
	m->held[to] = (int)*v;
	return 1;
}
static int esLoad(EspSentCalls *c, int to, int from, int f) { return esHold((EsStore *)c, to, from, f); }
static void esLoadAt(EspSentCalls *c, int to, int from, uint32_t i) { esHold((EsStore *)c, to, from, 100 + (int)(i < ES_STORE_ELEMENTS ? i : ES_STORE_ELEMENTS)); }
static double esRead(EsStore *m, int o, int slot)
{
	double *v;
	uint8_t *k;
	if (!esSlot(m, o, slot, &v, &k))
		return NAN;
	return *k == esNumber ? *v : *k == esNull ? 0 : NAN;
}
static void esWrite(EsStore *m, int o, int slot, double x, int kind)
{
	double *v;
	uint8_t *k;
	if (esSlot(m, o, slot, &v, &k)) {
		*v = x;
		*k = (uint8_t)kind;
	}
}
static double esGet(EspSentCalls *c, int o, int f) { return esRead((EsStore *)c, o, f); }
static void esSet(EspSentCalls *c, int o, int f, double v) { esWrite((EsStore *)c, o, f, v, esNumber); }
static void esSetBool(EspSentCalls *c, int o, int f, int v) { esWrite((EsStore *)c, o, f, v ? 1 : 0, esNumber); }
static void esSetRef(EspSentCalls *c, int o, int f, int ref)
{
	EsStore *m = (EsStore *)c;
	if (ref < 0 || m->held[ref] < 0)
		esWrite(m, o, f, 0, esNull);
	else
		esWrite(m, o, f, m->held[ref], esRef);
}
static double esAt(EspSentCalls *c, int o, uint32_t i) { return esRead((EsStore *)c, o, 100 + (int)(i < ES_STORE_ELEMENTS ? i : ES_STORE_ELEMENTS)); }
static void esSetAt(EspSentCalls *c, int o, uint32_t i, double v) { esWrite((EsStore *)c, o, 100 + (int)(i < ES_STORE_ELEMENTS ? i : ES_STORE_ELEMENTS), v, esNumber); }
static void esSetByte(EspSentCalls *c, int o, uint32_t i, uint8_t v) { esWrite((EsStore *)c, o, 100 + (int)(i < ES_STORE_ELEMENTS ? i : ES_STORE_ELEMENTS), v, esNumber); }
static uint32_t esBytes(EspSentCalls *c, int o)
{
	double n = esRead((EsStore *)c, o, fLength);
	return n >= 0 && n <= ES_STORE_ELEMENTS ? (uint32_t)n : 0;
}
static int esCopy(EspSentCalls *c, int to, uint32_t at, int from)
{
	EsStore *m = (EsStore *)c;
	uint32_t n = esBytes(c, from), room = esBytes(c, to);
	if (at > room || n > room - at)
		return 0;
	for (uint32_t i = 0; i < n; i++)
		esWrite(m, to, 100 + (int)(at + i), esRead(m, from, 100 + (int)i), esNumber);
	return 1;
}
static double esCall(EspSentCalls *c, int what, double a, double b, double d)
{
	EsStore *m = (EsStore *)c;
	int n = snprintf(m->log + m->at, sizeof(m->log) - m->at, "%s%d.%016llx.%016llx.%016llx", m->at ? "," : "", what,
		(unsigned long long)esBits(a), (unsigned long long)esBits(b), (unsigned long long)esBits(d));
	if (n > 0 && (size_t)n < sizeof(m->log) - m->at)
		m->at += (size_t)n;
	if (what == kEsPump || what == kEsPumpLater || what == kEsInScript)
		return 0;
	return m->nextResult < m->nResults ? m->results[m->nextResult++] : NAN;
}

/* espsent MAC OK CELLS RESULTS, or (send) espsend TAG SEQ CELLS RESULTS: the link object 0, its frame object 1. */
static int espSentLine(const char *line, int send)
{
	static char macHex[32], cells[262144], results[4096];
	static EsStore m;
	int ok;
	char *q, *e;
	if (sscanf(line, "%31s %d %262143s %4095s", macHex, &ok, cells, results) != 4)
		return 1;
	memset(&m, 0, sizeof(m));
	for (int i = 0; i < kEsObjects; i++)
		m.held[i] = -1;
	if (send) {
		m.held[kEsLink] = 0;
		m.held[kEsFrame] = 1;
	}
	else
		m.held[kEsBinding] = 0;
	for (q = cells; *q;) {
		long o = strtol(q, &e, 10), slot;
		if (e == q || *e != '.' || o < 0 || o >= ES_STORE_OBJECTS)
			return 1;
		q = e + 1;
		slot = strtol(q, &e, 10);
		if (e == q || *e != '.' || slot < 0 || slot >= ES_STORE_SLOTS)
			return 1;
		q = e + 1;
		if (*q == 'r') {
			long ref = strtol(q + 1, &e, 10);
			if (e == q + 1 || ref < 0 || ref >= ES_STORE_OBJECTS)
				return 1;
			m.v[o][slot] = (double)ref;
			m.kind[o][slot] = esRef;
		}
		else if (*q == 'n') {
			e = q + 1;
			m.kind[o][slot] = esNull;
		}
		else {
			unsigned long long u = strtoull(q, &e, 16);
			if (e != q + 16)
				return 1;
			m.v[o][slot] = esDouble((uint64_t)u);
			m.kind[o][slot] = esNumber;
		}
		q = e;
		if (*q == ',')
			q++;
		else if (*q)
			return 1;
	}
	if (results[0] != '-')
		for (q = results; *q && m.nResults < 64;) {
			unsigned long long u = strtoull(q, &e, 16);
			if (e != q + 16)
				return 1;
			m.results[m.nResults++] = esDouble((uint64_t)u);
			q = e;
			if (*q == ',')
				q++;
		}
	m.calls.load = esLoad;
	m.calls.loadAt = esLoadAt;
	m.calls.get = esGet;
	m.calls.set = esSet;
	m.calls.setBool = esSetBool;
	m.calls.setRef = esSetRef;
	m.calls.at = esAt;
	m.calls.setAt = esSetAt;
	m.calls.setByte = esSetByte;
	m.calls.bytes = esBytes;
	m.calls.copy = esCopy;
	m.calls.call = esCall;
	if (send)
		printf("%d ", espnowSend(&m.calls, esDouble(strtoull(macHex, NULL, 16)), (double)ok));
	else
		espnowSent(&m.calls, esDouble(strtoull(macHex, NULL, 16)), ok);
	ok = 0;
	for (int o = 0; o < ES_STORE_OBJECTS; o++)
		for (int s = 0; s < ES_STORE_SLOTS; s++) {
			if (m.kind[o][s] == esUndefined)
				continue;
			printf("%s%d.%d.", ok++ ? "," : "", o, s);
			if (m.kind[o][s] == esRef)
				printf("r%d", (int)m.v[o][s]);
			else if (m.kind[o][s] == esNull)
				printf("n");
			else
				printf("%016llx", (unsigned long long)esBits(m.v[o][s]));
		}
	printf(" %s\n", m.at ? m.log : "-");
	return 0;
}

static int check(void)
{
	char line[131072], hex[2048];
	uint8_t buf[1024], dst[2048];
	double seqT[2];
	while (fgets(line, sizeof(line), stdin)) {
		int a, b, c, crc, n;
		if (sscanf(line, "crc %2047s %d %d %d", hex, &a, &b, &crc) == 4) {
			n = unhex(hex, buf, sizeof(buf));
			if (n < 0 || a < 0 || b < a || b > n)
				return 2;
			printf("%u\n", robotCrc16(buf + a, (uint32_t)(b - a), (uint16_t)crc));
		}
		else if (sscanf(line, "copy %2047s %d %d %d %d", hex, &a, &b, &c, &crc) == 5) {
			n = unhex(hex, buf, sizeof(buf));
			if (n < 0 || a < 0 || b < 0 || a + b > n || c < 0 || c + b > (int)sizeof(dst))
				return 2;
			memset(dst, 0, sizeof(dst));
			printf("%u ", robotCrc16Copy(buf + a, dst + c, (uint32_t)b, (uint16_t)crc));
			for (int i = 0; i < b + c; i++)
				printf("%02x", dst[i]);
			printf("\n");
		}
		else if (sscanf(line, "floats %2047s %d %d", hex, &a, &b) == 3) {
			n = unhex(hex, buf, sizeof(buf));
			if (n < 0 || a < 0 || b < 0 || a + 4 * b > n || 8 * b > (int)sizeof(dst))
				return 2;
			robotFloats32(buf + a, (uint32_t)b, dst);
			for (int i = 0; i < b; i++) {
				for (int k = 0; k < 8; k++)
					printf("%02x", dst[8 * i + k]);
				printf(i + 1 < b ? " " : "");
			}
			printf("\n");
		}
		else if (sscanf(line, "data %lf %lf %2047s", &seqT[0], &seqT[1], hex) == 3) {
			uint32_t len;
			n = hex[0] == '-' ? 0 : unhex(hex, buf, sizeof(buf));
			if (n < 0 || n % 8 || n / 8 > 64)
				return 2;
			len = sampleWrite(dst, seqT[0], seqT[1], buf, (uint32_t)(n / 8));
			for (uint32_t i = 0; i < len; i++)
				printf("%02x", dst[i]);
			printf("\n");
		}
		else if (sscanf(line, "seq %lf", &seqT[0]) == 1)
			printf("%.17g\n", routeNextSeq(seqT[0]));
		else if (!strncmp(line, "count ", 6)) {
			double f, c, l;
			if (sscanf(line + 6, "%lf %lf %lf", &f, &c, &l) != 3)
				return 2;
			printf("%.17g\n", routeValueCount(f, c, l));
		}
		else if (!strncmp(line, "fast ", 5)) {
			static double numbers[64 * 33];
			static uint8_t frame[16384];
			static char frameHex[32769];
			unsigned fs, fe, cap;
			int fn, type;
			FastOut out;
			if (sscanf(line + 5, "%32768s %u %u %u", frameHex, &fs, &fe, &cap) != 4 || cap > 64 * 33)
				return 2;
			fn = frameHex[0] == '-' ? 0 : unhex(frameHex, frame, sizeof(frame));
			if (fn < 0)
				return 2;
			memset(&out, 0, sizeof(out));
			type = fastRead(frame, (uint32_t)fn, fs, fe, numbers, cap, &out);
			printf("%d", type);
			if (type == kFastAck || type == kFastPing)
				printf(" %.17g", out.value);
			else if (type == kFastBundle) {
				uint32_t kept = out.count * out.width > cap ? out.width : out.count * out.width;
				printf(" %u %u %u %d ", out.channelId, out.count, out.width, out.finite);
				for (uint32_t i = 0; i < kept; i++) {
					uint64_t bits;
					memcpy(&bits, &numbers[i], 8);
					if (numbers[i] != numbers[i])
						bits = 0x7ff8000000000000ULL;
					printf("%016llx", (unsigned long long)bits);
				}
			}
			printf("\n");
		}
		else if (!strncmp(line, "route ", 6)) {
			if (routeLine(line + 6))
				return 2;
		}
		else if (!strncmp(line, "espsent ", 8) || !strncmp(line, "espsend ", 8)) {
			if (espSentLine(line + 8, line[6] == 'd'))
				return 2;
		}
		else
			return 2;
		fflush(stdout);
	}
	return 0;
}

static double nowNs(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int timeIt(long rounds)
{
	/* An imu SAMPLE frame: sync, type, n = 26, channel, count 6, six float32, CRC (31 bytes); a cmd_vel PUBLISH: n = 18 (23 bytes). */
	static uint8_t imu[31], pub[23];
	static uint8_t values[32 * 8];
	static uint8_t block[256];
	volatile uint32_t sink = 0;
	for (int i = 0; i < 31; i++)
		imu[i] = (uint8_t)(i * 37 + 11);
	for (int i = 0; i < 23; i++)
		pub[i] = (uint8_t)(i * 53 + 7);
	double t0 = nowNs();
	for (long r = 0; r < rounds; r++) {
		imu[5] = (uint8_t)r;
		sink += robotCrc16(imu + 1, 28, 0xffff);
		robotFloats32(imu + 5, 6, values);
		sink += values[r & 7];
	}
	double t1 = nowNs();
	for (long r = 0; r < rounds; r++) {
		pub[5] = (uint8_t)r;
		sink += robotCrc16(pub + 1, 20, 0xffff);
	}
	double t2 = nowNs();
	for (int i = 0; i < 256; i++)
		block[i] = (uint8_t)(i * 29 + 3);
	long blocks = rounds / 8 + 1;
	for (long r = 0; r < blocks; r++) {
		block[0] = (uint8_t)r;
		sink += robotCrc16(block, 256, 0xffff);
	}
	double t3 = nowNs();
	for (long r = 0; r < blocks; r++) {
		block[0] = (uint8_t)r;
		robotFloats32(block, 32, values);
		sink += values[r & 255];
	}
	double t4 = nowNs();
	/* DATA: float32 fractions, as sensors send (each a binary32), 6 of them, then 32. */
	static double six[6], many[32];
	static uint8_t frame[kSampleWriteMax(32)];
	for (int i = 0; i < 32; i++) {
		float f = 0.5f + 0.001f * (float)(i * 37 % 1000) + 0.0001f;
		many[i] = (double)f;
		if (i < 6)
			six[i] = many[i];
	}
	for (long r = 0; r < rounds; r++) {
		six[0] = (double)(0.25f + 0.0001f * (float)(r & 1023));
		sink += sampleWrite(frame, (double)(r & 0xffff), (double)(100000 + r), (const uint8_t *)six, 6);
	}
	double t5 = nowNs();
	for (long r = 0; r < blocks; r++) {
		many[0] = (double)(0.25f + 0.0001f * (float)(r & 1023));
		sink += sampleWrite(frame, (double)(r & 0xffff), (double)(100000 + r), (const uint8_t *)many, 32);
	}
	double t6 = nowNs();
	double sixNs = (t5 - t4) / rounds, manyNs = (t6 - t5) / blocks;
	double perValue = (manyNs - sixNs) / 26;
	printf("{\"rounds\":%ld,\"nsPerImuSample\":%.3f,\"nsPerPublish\":%.3f,\"nsPerCrcByte\":%.4f,\"nsPerValue\":%.4f,\"nsPerData6\":%.3f,\"nsPerData32\":%.3f,\"nsPerDataValue\":%.4f,\"nsPerDataFrame\":%.3f,\"sink\":%u}\n", rounds, (t1 - t0) / rounds, (t2 - t1) / rounds, (t3 - t2) / blocks / 256, (t4 - t3) / blocks / 32, sixNs, manyNs, perValue, sixNs - 6 * perValue, (unsigned)sink);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "check"))
		return check();
	if (argc >= 3 && !strcmp(argv[1], "time"))
		return timeIt(atol(argv[2]));
	fprintf(stderr, "usage: native-host check | time N\n");
	return 2;
}
