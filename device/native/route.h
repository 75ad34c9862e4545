/*
 * A push's common route in C: what hub/egress.ts Egress.publishSample does in script for a push
 * that is not critical and not under the hub ladder's level floor (hub/ports.ts SampleRouter),
 * step for step: for each subscriber of the route, its session's link, the grant gate (or the
 * segments stream's whole-source test), the link's level, a plain send of the push's one DATA
 * frame, and the bookkeeping of a delivery (the grant's clock, the first push, the conflation
 * values); each rarer turn goes back to the script (Egress.turn). Plain C with no XS: the
 * subscription table's columns are read where they lie, and what touches script objects (a
 * session, its link, a send, a turn) is a call through RouteCalls, which ./route.c makes XS
 * calls and the host (bench/native/native-host.c) a recorded model, to check this against the
 * script and to time it.
 *
 * A call that runs script may move the table (XS compacts its chunk heap when it collects), so
 * the columns are read again after each one (RouteCalls.columns).
 */
#ifndef ROUTE_H
#define ROUTE_H

#include <math.h>
#include <stdint.h>

/* The link levels the route tells apart (hub/constants.ts LEVEL_CONGESTED). */
#define kRouteCongested 1.0

/* The subscription table's columns (hub/session.ts SubscriptionTable.layout) and the push's values. */
typedef struct {
	const double *grantedHz;
	double *nextDue;
	double *lastValues;
	const uint8_t *subscribers; /* 8 or 16 bits an entry (wide) */
	uint8_t *firstPush;
	uint8_t *sourceDropped;
	uint8_t *decimation; /* 2 bytes a row: the factor, the count */
	int8_t *lastLen;
	uint32_t wide;
} RouteColumns;

/* The columns of a table whose buffer starts at b, by its layout (hub/session.ts SubscriptionTable.layout: byte offsets, then the bytes of a subscribers entry). */
static inline void routeColumnsAt(uint8_t *b, const uint32_t *layout, RouteColumns *t)
{
	t->grantedHz = (const double *)(const void *)(b + layout[0]);
	t->nextDue = (double *)(void *)(b + layout[1]);
	t->lastValues = (double *)(void *)(b + layout[2]);
	t->subscribers = b + layout[3];
	t->firstPush = b + layout[4];
	t->sourceDropped = b + layout[5];
	t->decimation = b + layout[6];
	t->lastLen = (int8_t *)(b + layout[7]);
	t->wide = layout[8];
}

typedef struct RouteCalls RouteCalls;
struct RouteCalls {
	/* Takes the session of `slot`; 0 when it has no link (the session and link stay for the calls below). */
	int (*link)(RouteCalls *c, uint32_t slot);
	/* The link's level (runs script). */
	double (*level)(RouteCalls *c);
	/* The session's never-shed queue holds no frame. */
	int (*neverShedEmpty)(RouteCalls *c);
	/* The push's DATA frame to the link (the frame written on the first send): 1 when the link took it (runs script). */
	int (*send)(RouteCalls *c);
	/* The session handed one more frame. */
	void (*sent)(RouteCalls *c);
	/* A rarer turn (Egress.turn) for row k, slot `slot`, at `level`: 1 when the push went (runs script). */
	int (*turn)(RouteCalls *c, uint32_t k, uint32_t slot, double level);
	/* Reads the columns' addresses (again, after a call that runs script). */
	void (*columns)(RouteCalls *c, RouteColumns *t);
	/* The push's values (for the conflation copy), read when needed. */
	const double *(*values)(RouteCalls *c);
};

typedef struct {
	uint32_t first; /* the route's index × the table's slots */
	uint32_t end;   /* its subscribers */
	uint32_t slots; /* the table's slots: a subscriber's slot is below */
	double now;
	int gated;      /* 1: the grant gates the push; 0: a segments stream */
	int32_t lastAt; /* the route's conflation values in lastValues, -1: none */
	uint32_t fieldCount;
	uint32_t n;     /* the values sent */
} RoutePush;

/* The push's sequence after `seq` (DATA key 4: 32 bits, 0 after 2^32 - 1), as Egress.publishSample counts. */
static inline double routeNextSeq(double seq)
{
	return seq == 4294967295.0 ? 0 : seq + 1;
}

/* The values a push carries: at most the channel's fields and the values given, a fraction of a count dropped, a count that is no number above 0 none (as Egress.publishSample). */
static inline double routeValueCount(double fields, double count, double length)
{
	double n = fields;
	if (count < n)
		n = count > 0 ? count - fmod(count, 1) : 0;
	if (n > length)
		n = length;
	return n;
}

/* The push through its subscribers; the deliveries. tallies[0] += rate-gated, [1] += clear (row 1), [2] += egress drops. */
static inline uint32_t routePush(const RoutePush *p, RouteCalls *c, double *tallies)
{
	RouteColumns t;
	uint32_t delivered = 0;
	uint32_t i, slot, k, j;
	double g, due, level;
	c->columns(c, &t);
	for (i = 0; i < p->end; i++) {
		slot = t.wide == 2 ? ((const uint16_t *)(const void *)t.subscribers)[p->first + i] : t.subscribers[p->first + i];
		if (slot >= p->slots)
			continue;
		k = p->first + slot;
		if (!c->link(c, slot))
			continue;
		g = 0;
		due = 0;
		if (p->gated) {
			g = t.grantedHz[k];
			if (!(g > 0) || p->now < (due = t.nextDue[k])) {
				tallies[0]++;
				continue;
			}
		}
		else if (!(t.grantedHz[k] > 0)) {
			/* A segments stream with nothing granted: whole-source, so the next push that goes carries gap. */
			tallies[0]++;
			t.sourceDropped[k] = 1;
			continue;
		}
		level = c->level(c);
		c->columns(c, &t);
		if (level >= kRouteCongested || t.sourceDropped[k] == 1 || !c->neverShedEmpty(c)) {
			int went = c->turn(c, k, slot, level);
			c->columns(c, &t);
			if (!went)
				continue;
		}
		else {
			int took;
			/* A clear link: row 1, a send; a subscription that was decimating starts afresh. */
			tallies[1]++;
			if (t.decimation[2 * k] != 1) {
				t.decimation[2 * k] = 1;
				t.decimation[2 * k + 1] = 0;
			}
			took = c->send(c);
			c->columns(c, &t);
			if (!took) {
				/* Dropped at once, never queued for later; a lost segment is a lost command: say so. */
				tallies[2]++;
				if (!p->gated)
					t.sourceDropped[k] = 1;
				continue;
			}
			c->sent(c);
		}
		delivered++;
		t.firstPush[k] = 0;
		if (p->gated) {
			/* The grant gate's clock: at most one period of credit (g is above 0 here). */
			g = 1000 / g;
			due += g;
			t.nextDue[k] = due < p->now - g ? p->now + g : due;
		}
		if (p->lastAt >= 0) {
			const double *v = c->values(c);
			double *last = t.lastValues + (uint32_t)p->lastAt + slot * p->fieldCount;
			for (j = 0; j < p->n; j++)
				last[j] = v[j];
			t.lastLen[k] = (int8_t)p->n;
		}
	}
	return delivered;
}

#endif
