/*
 * A push's route as an XS host function, behind the TypeScript wrapper in ../route-native.ts
 * (hub/ports.ts SampleRouter). The route itself is ./route.h; here is what surrounds it, as
 * Egress.publishSample does it in script, and its calls into the script: the route's and the
 * egress's numbers, a session's link and never-shed queue read as properties, the link's level
 * and send and the egress's turn called as script, the counts added to the egress's counters.
 * The push's DATA frame is written here as Egress.dataFrame writes it, with the DATA writer's C
 * (./samplewriter.h) into the egress's push buffer (hub/bytes.ts SealedBytes: its `bytes`,
 * `rab`, `capacity` and `sealedAt`, which this reads and resizes by name).
 *
 * route(host, route, t, values, count, now)
 *   host    the hub's egress (hub/egress.ts Egress)
 *   route   the channel's ChannelRoute
 *   returns the deliveries, or -1 for a push the script routes (a critical channel, or a link
 *           level floor of 1 or more), untouched
 *
 * A send to a Wi-Fi link straight on the device's socket, in the steady case, is written to the
 * socket here (routeDirect), as TcpLink.send's first branch writes it; any other send calls the
 * link's `send`.
 *
 * Every column the route reads or writes is checked against the table's buffer once per push,
 * and every row it touches against the table's own shape, before the loop; a RangeError is
 * thrown rather than read or write outside one. The table's address is taken again after every
 * call that runs script. Nothing allocates but what the script it calls allocates.
 */

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "xsmc.h"

#include "route.h"
#include "samplewriter.h"

enum {
	aHost, aRoute, aT, aValues, aCount, aNow
};
enum {
	vSession, vLink, vFrame, vK, vSlot, vLevel, vScratch, vScratch2, vSeq, vN, vSlots, vTable, vTag, vCounters, vData, vRab, vLen,
	vPort, vSocket, vAcks, vRing, vHeader, vThroughput, vCount
};

enum {
	lGranted, lNextDue, lLastValues, lSubscribers, lFirstPush, lSourceDropped, lDecimation, lLastLen, lWide, lRows, lValues, lSlots, lSubscriberCount, lCount
};

/* The property names the route reads and calls, found once (an identifier's number never changes in a machine). */
static xsIdentifier idLink, idLevel, idNeverShed, idSize, idSend, idSentFrames, idTurn, idFrame, idBuffer, idByteOffset, idLength;
static xsIdentifier idCh, idCritical, idLevelFloor, idSeq, idIndex, idFieldCount, idShedBase, idSegmentsBase, idTag, idSharedFlag, idLastAt;
static xsIdentifier idSlots, idTableBuffer, idLayout, idRouting, idCounters, idRateGated, idEgressDrops, idDelivered, idRows;
static xsIdentifier idData, idRab, idCapacity, idSealedAt, idBytes, idPrefix, idPrefixed, idDetector, idJudgements, idJudgementsSeen, idLvl;
static xsIdentifier idDirect, idSocket, idQueue, idHeld, idAcks, idStarted, idWindowEnd, idFraming, idRoom, idThroughput, idWindowStart, idWindowMs;
static xsIdentifier idLagFrom, idHandedAt, idMask, idHdr2, idWrite, idEnd, idFree, idLimit, idTotal, idMovedAt, idResize;

typedef struct {
	RouteCalls calls;
	xsMachine *the;
	uint32_t layout[lCount];
	int framed;
	/* The frame's bytes when this push wrote it; 0 when a turn did (its view is asked). */
	uint32_t frameBytes;
	double seq;
	double now;
	uint32_t n;
} RouteGlue;

/* bindings/tcp/egress.ts: a link's framing (LinkFraming) and a WebSocket binary frame's first byte. */
#define kFramingLengthPrefix 0
#define kFramingWsServer 1
#define kWsFinalBinary 0x82

static void routeColumns(RouteCalls *c, RouteColumns *t)
{
	RouteGlue *g = (RouteGlue *)c;
	xsMachine *the = g->the;
	void *data;
	xsUnsignedValue bytes;
	xsmcGetBufferWritable(xsVar(vTable), &data, &bytes);
	routeColumnsAt((uint8_t *)data, g->layout, t);
}

static int routeLink(RouteCalls *c, uint32_t slot)
{
	xsMachine *the = ((RouteGlue *)c)->the;
	xsmcGetIndex(xsVar(vSession), xsVar(vSlots), slot);
	if (xsmcTypeOf(xsVar(vSession)) != xsReferenceType)
		return 0;
	xsmcGet(xsVar(vLink), xsVar(vSession), idLink);
	return xsmcTypeOf(xsVar(vLink)) == xsReferenceType;
}

/*
 * The link's level. A link that says its level stands (hub/ports.ts LinkLevelFields: its
 * detector's `judgements` are the `judgementsSeen` it judged at) has it in `lvl`, read as a
 * field; any other runs the `level` getter, which judges.
 */
static double routeLevel(RouteCalls *c)
{
	xsMachine *the = ((RouteGlue *)c)->the;
	xsmcGet(xsVar(vScratch), xsVar(vLink), idDetector);
	if (xsmcTypeOf(xsVar(vScratch)) == xsReferenceType) {
		xsmcGet(xsVar(vScratch2), xsVar(vScratch), idJudgements);
		xsmcGet(xsVar(vScratch), xsVar(vLink), idJudgementsSeen);
		if (xsmcToNumber(xsVar(vScratch2)) == xsmcToNumber(xsVar(vScratch))) {
			xsmcGet(xsVar(vScratch), xsVar(vLink), idLvl);
			return xsmcToNumber(xsVar(vScratch));
		}
	}
	xsmcGet(xsVar(vScratch), xsVar(vLink), idLevel);
	return xsmcToNumber(xsVar(vScratch));
}

static int routeNeverShedEmpty(RouteCalls *c)
{
	xsMachine *the = ((RouteGlue *)c)->the;
	xsmcGet(xsVar(vScratch), xsVar(vSession), idNeverShed);
	xsmcGet(xsVar(vScratch2), xsVar(vScratch), idSize);
	return !(xsmcToNumber(xsVar(vScratch2)) > 0);
}

/* The egress's push buffer (hub/bytes.ts SealedBytes `data`) whole again: its ArrayBuffer at its capacity, unsealed. */
static void routeOpen(xsMachine *the)
{
	xsmcGet(xsVar(vRab), xsVar(vData), idRab);
	xsmcGet(xsVar(vLen), xsVar(vData), idCapacity);
	xsmcCall(xsVar(vScratch2), xsVar(vRab), idResize, &xsVar(vLen), NULL);
	xsmcSetInteger(xsVar(vLen), -1);
	xsmcSet(xsVar(vData), idSealedAt, xsVar(vLen));
}

/*
 * The push's one DATA frame, as Egress.dataFrame writes it: the route's prefix (route.h keeps no
 * state: it is copied every time, and the egress told which prefix its buffer holds), then seq,
 * t and the values as samplewriter.h writes them, the buffer sealed at the frame's length.
 */
static void routeFrame(RouteGlue *g)
{
	xsMachine *the = g->the;
	void *out, *prefix;
	xsUnsignedValue capacity, prefixBytes;
	double t = xsmcToNumber(xsArg(aT));
	uint32_t end;
	const double *values;
	xsmcGet(xsVar(vScratch), xsVar(vData), idSealedAt);
	if (xsmcToNumber(xsVar(vScratch)) >= 0)
		routeOpen(the);
	/* The addresses last: nothing between them and the writing runs script or allocates. */
	values = g->calls.values(&g->calls);
	xsmcGet(xsVar(vScratch), xsArg(aRoute), idPrefix);
	xsmcSet(xsArg(aHost), idPrefixed, xsVar(vScratch));
	xsmcGetBufferReadable(xsVar(vScratch), &prefix, &prefixBytes);
	xsmcGet(xsVar(vFrame), xsVar(vData), idBytes);
	xsmcGetBufferWritable(xsVar(vFrame), &out, &capacity);
	if (prefixBytes > capacity || (xsUnsignedValue)kSampleWriteMax(g->n) > capacity - prefixBytes)
		xsRangeError("route: frame out of range");
	memmove(out, prefix, prefixBytes);
	/* A time that is no whole number from 0 to 2^53 - 1 reads as 0. */
	t = t >= 0 && t <= kSampleMaxSafe ? t - fmod(t, 1) : 0;
	end = (uint32_t)prefixBytes + sampleWrite((uint8_t *)out + prefixBytes, g->seq, t, (const uint8_t *)values, g->n);
	xsmcGet(xsVar(vRab), xsVar(vData), idRab);
	xsmcSetInteger(xsVar(vLen), (xsIntegerValue)end);
	xsmcCall(xsVar(vScratch2), xsVar(vRab), idResize, &xsVar(vLen), NULL);
	xsmcSet(xsVar(vData), idSealedAt, xsVar(vLen));
	xsmcSet(xsArg(aHost), idFrame, xsVar(vFrame));
	g->framed = 1;
	g->frameBytes = end;
}

/* A number property of `object`. */
static double routeNumber(xsMachine *the, xsSlot *object, xsIdentifier id)
{
	xsmcGet(xsVar(vScratch2), *object, id);
	return xsmcToNumber(xsVar(vScratch2));
}

/* object[id] = n */
static void routeSetNumber(xsMachine *the, xsSlot *object, xsIdentifier id, double n)
{
	xsmcSetNumber(xsVar(vScratch2), n);
	xsmcSet(*object, id, xsVar(vScratch2));
}

/*
 * TcpLink.send's first branch (bindings/tcp/egress.ts), for a link straight on the device's socket
 * (bindings/tcp/socket-port.ts SocketPort, the link's `direct`; its `socket` the SDK's lwIP
 * socket): the frame's 2-byte header and the frame written to the socket, the port's room and the
 * link's numbers moved as the script moves them, the push's `now` the send's. Only the steady
 * case is taken here: nothing queued, the ack window open, a length prefix or a WebSocket frame
 * under 126 bytes, room for both, a whole-ms time the link's ack ring keeps, the throughput window
 * open, the watermark at 0 and the ack lag not yet watched (TcpLink's `lagFrom`). For anything
 * else this returns 0 before it has written anything, and the link's own `send` runs. A write
 * that throws ends the socket as SocketPort.writeFrame does (its `end`), and the frame counts as
 * handed over, as in the script. The names it reads are bindings/tcp/socket-port.ts
 * SocketDirectFields.
 */
static int routeDirect(RouteGlue *g)
{
	xsMachine *the = g->the;
	double now = g->now, started, windowEnd, room, lagFrom, mask, left, space;
	double framing, windowStart, windowMs;
	void *bytes;
	xsUnsignedValue length;
	uint32_t frameBytes, at;
	uint8_t h0, h1;
	volatile int wrote = 0;
	xsmcGet(xsVar(vPort), xsVar(vLink), idDirect);
	if (xsmcTypeOf(xsVar(vPort)) != xsReferenceType)
		return 0;
	xsmcGet(xsVar(vSocket), xsVar(vPort), idSocket);
	if (xsmcTypeOf(xsVar(vSocket)) != xsReferenceType)
		return 0;
	xsmcGet(xsVar(vScratch), xsVar(vLink), idQueue);
	if (routeNumber(the, &xsVar(vScratch), idHeld) != 0)
		return 0;
	xsmcGet(xsVar(vAcks), xsVar(vLink), idAcks);
	started = routeNumber(the, &xsVar(vAcks), idStarted);
	windowEnd = routeNumber(the, &xsVar(vLink), idWindowEnd);
	if (!(started >= 0 && started == floor(started) && started < windowEnd))
		return 0;
	framing = routeNumber(the, &xsVar(vLink), idFraming);
	frameBytes = g->frameBytes;
	if (frameBytes == 0) {
		xsmcGetBufferReadable(xsVar(vFrame), &bytes, &length);
		frameBytes = (uint32_t)length;
	}
	if (framing == kFramingLengthPrefix && frameBytes <= 0xffff) {
		h0 = (uint8_t)(frameBytes >> 8);
		h1 = (uint8_t)(frameBytes & 0xff);
	}
	else if (framing == kFramingWsServer && frameBytes < 126) {
		h0 = kWsFinalBinary;
		h1 = (uint8_t)frameBytes;
	}
	else
		return 0;
	room = routeNumber(the, &xsVar(vPort), idRoom);
	if (!(room >= (double)frameBytes + 2))
		return 0;
	/* (now >>> 0) === now: a time the ack ring keeps as it is (else AckCounter.widen first). */
	if (!(now >= 0 && now <= 4294967295.0 && now == floor(now)))
		return 0;
	xsmcGet(xsVar(vThroughput), xsVar(vLink), idThroughput);
	windowStart = routeNumber(the, &xsVar(vThroughput), idWindowStart);
	windowMs = routeNumber(the, &xsVar(vThroughput), idWindowMs);
	if (!(now - windowStart < windowMs && now >= windowStart))
		return 0;
	xsmcGet(xsVar(vScratch), xsVar(vLink), idDetector);
	if (xsmcTypeOf(xsVar(vScratch)) != xsReferenceType || routeNumber(the, &xsVar(vScratch), idQueue) != 0)
		return 0;
	lagFrom = routeNumber(the, &xsVar(vLink), idLagFrom);
	if (!(started + 1 < lagFrom))
		return 0;
	xsmcGet(xsVar(vRing), xsVar(vAcks), idHandedAt);
	mask = routeNumber(the, &xsVar(vAcks), idMask);
	if (xsmcTypeOf(xsVar(vRing)) != xsReferenceType || !(mask >= 0 && mask <= 0x7fffffff && mask == floor(mask)))
		return 0;
	xsmcGet(xsVar(vHeader), xsVar(vLink), idHdr2);
	xsmcGetBufferWritable(xsVar(vHeader), &bytes, &length);
	if (length < 2)
		return 0;
	/* Everything checked: from here on this is the send. */
	((uint8_t *)bytes)[0] = h0;
	((uint8_t *)bytes)[1] = h1;
	xsTry {
		xsmcCall(xsVar(vScratch), xsVar(vSocket), idWrite, &xsVar(vHeader), NULL);
		xsmcCall(xsVar(vScratch), xsVar(vSocket), idWrite, &xsVar(vFrame), NULL);
		wrote = 1;
	}
	xsCatch {
		wrote = 0;
	}
	if (wrote) {
		/* SocketPort.writeFrame: what lwIP says is free, and the room within the port's limit. */
		left = xsmcTypeOf(xsVar(vScratch)) == xsNumberType || xsmcTypeOf(xsVar(vScratch)) == xsIntegerType ? xsmcToNumber(xsVar(vScratch)) : 0;
		routeSetNumber(the, &xsVar(vPort), idFree, left);
		space = routeNumber(the, &xsVar(vPort), idLimit) - (routeNumber(the, &xsVar(vPort), idTotal) - left);
		if (space > left)
			space = left;
		routeSetNumber(the, &xsVar(vPort), idRoom, space > 0 ? space : 0);
	}
	else {
		/* A dead socket: the port ends it and the link is told (TcpLink.transportClosed, which
		   leaves the ack counter as it is); the link counts the frame as the script does. */
		xsmcCall(xsVar(vScratch), xsVar(vPort), idEnd, NULL);
	}
	/* One frame started (its time for the round trip), its bytes in the throughput window, the link moved. */
	at = (uint32_t)fmod(started, 4294967296.0) & (uint32_t)mask;
	xsmcSetNumber(xsVar(vScratch2), now);
	xsmcSetIndex(xsVar(vRing), (xsIndex)at, xsVar(vScratch2));
	routeSetNumber(the, &xsVar(vAcks), idStarted, started + 1);
	routeSetNumber(the, &xsVar(vThroughput), idBytes, routeNumber(the, &xsVar(vThroughput), idBytes) + frameBytes + 2);
	routeSetNumber(the, &xsVar(vLink), idMovedAt, now);
	return 1;
}

static int routeSend(RouteCalls *c)
{
	RouteGlue *g = (RouteGlue *)c;
	xsMachine *the = g->the;
	if (!g->framed)
		routeFrame(g);
	if (routeDirect(g))
		return 1;
	xsmcCall(xsVar(vScratch), xsVar(vLink), idSend, &xsVar(vFrame), &xsVar(vTag), &xsVar(vSeq), NULL);
	return xsmcTest(xsVar(vScratch));
}

static void routeSent(RouteCalls *c)
{
	xsMachine *the = ((RouteGlue *)c)->the;
	xsmcGet(xsVar(vScratch), xsVar(vSession), idSentFrames);
	xsmcSetNumber(xsVar(vScratch), xsmcToNumber(xsVar(vScratch)) + 1);
	xsmcSet(xsVar(vSession), idSentFrames, xsVar(vScratch));
}

static int routeTurn(RouteCalls *c, uint32_t k, uint32_t slot, double level)
{
	xsMachine *the = ((RouteGlue *)c)->the;
	xsmcSetInteger(xsVar(vK), (xsIntegerValue)k);
	xsmcSetInteger(xsVar(vSlot), (xsIntegerValue)slot);
	xsmcSetNumber(xsVar(vLevel), level);
	xsmcCall(xsVar(vScratch), xsArg(aHost), idTurn, &xsArg(aRoute), &xsVar(vSession), &xsVar(vLink), &xsVar(vK), &xsVar(vSlot), &xsVar(vLevel), &xsVar(vSeq), &xsArg(aT), &xsArg(aValues), &xsVar(vN), &xsArg(aNow), NULL);
	/* The turn may have written the push's frame (Egress.frame): the sends after it take that one. */
	xsmcGet(xsVar(vFrame), xsArg(aHost), idFrame);
	((RouteGlue *)c)->framed = xsmcTypeOf(xsVar(vFrame)) == xsReferenceType;
	((RouteGlue *)c)->frameBytes = 0;
	return xsmcTest(xsVar(vScratch));
}

static const double *routeValues(RouteCalls *c)
{
	xsMachine *the = ((RouteGlue *)c)->the;
	void *data;
	xsUnsignedValue bytes;
	xsIntegerValue at;
	xsmcGet(xsVar(vScratch), xsArg(aValues), idByteOffset);
	at = xsmcToInteger(xsVar(vScratch));
	xsmcGet(xsVar(vScratch), xsArg(aValues), idBuffer);
	xsmcGetBufferReadable(xsVar(vScratch), &data, &bytes);
	return (const double *)(const void *)((const uint8_t *)data + at);
}

/* counters[id] += n */
static void routeAdd(xsMachine *the, xsIdentifier id, double n)
{
	xsmcGet(xsVar(vScratch2), xsVar(vCounters), id);
	xsmcSetNumber(xsVar(vScratch2), xsmcToNumber(xsVar(vScratch2)) + n);
	xsmcSet(xsVar(vCounters), id, xsVar(vScratch2));
}

void xs_route_push(xsMachine *the)
{
	RouteGlue g;
	RoutePush p;
	double tallies[3] = { 0, 0, 0 };
	void *data;
	xsUnsignedValue bytes, tableBytes;
	double seq, index, count, length, n, fields, lastAt, end;
	uint32_t i, cell;
	xsmcVars(vCount);
	/* The last name looked up tells that all were (a lookup that failed part way is done again). */
	if (idResize == XS_NO_ID) {
		idLink = xsID("link");
		idLevel = xsID("level");
		idDetector = xsID("detector");
		idJudgements = xsID("judgements");
		idJudgementsSeen = xsID("judgementsSeen");
		idLvl = xsID("lvl");
		idNeverShed = xsID("neverShed");
		idSize = xsID("size");
		idSend = xsID("send");
		idSentFrames = xsID("sentFrames");
		idTurn = xsID("turn");
		idFrame = xsID("frame");
		idBuffer = xsID("buffer");
		idByteOffset = xsID("byteOffset");
		idLength = xsID("length");
		idCh = xsID("ch");
		idCritical = xsID("critical");
		idLevelFloor = xsID("levelFloor");
		idSeq = xsID("seq");
		idIndex = xsID("index");
		idFieldCount = xsID("fieldCount");
		idShedBase = xsID("shedBase");
		idSegmentsBase = xsID("segmentsBase");
		idTag = xsID("tag");
		idSharedFlag = xsID("sharedFlag");
		idLastAt = xsID("lastAt");
		idSlots = xsID("slots");
		idTableBuffer = xsID("tableBuffer");
		idLayout = xsID("layout");
		idRouting = xsID("routing");
		idCounters = xsID("counters");
		idRateGated = xsID("rateGated");
		idEgressDrops = xsID("egressDrops");
		idDelivered = xsID("delivered");
		idRows = xsID("rows");
		idData = xsID("data");
		idRab = xsID("rab");
		idCapacity = xsID("capacity");
		idSealedAt = xsID("sealedAt");
		idBytes = xsID("bytes");
		idPrefix = xsID("prefix");
		idPrefixed = xsID("prefixed");
		idDirect = xsID("direct");
		idSocket = xsID("socket");
		idQueue = xsID("queue");
		idHeld = xsID("held");
		idAcks = xsID("acks");
		idStarted = xsID("started");
		idWindowEnd = xsID("windowEnd");
		idFraming = xsID("framing");
		idRoom = xsID("room");
		idThroughput = xsID("throughput");
		idWindowStart = xsID("windowStart");
		idWindowMs = xsID("windowMs");
		idLagFrom = xsID("lagFrom");
		idHandedAt = xsID("handedAt");
		idMask = xsID("mask");
		idHdr2 = xsID("hdr2");
		idWrite = xsID("write");
		idEnd = xsID("end");
		idFree = xsID("free");
		idLimit = xsID("limit");
		idTotal = xsID("total");
		idMovedAt = xsID("movedAt");
		idResize = xsID("resize");
	}
	/* A critical channel, or a level floor under every link: the script's. (routeNumber takes vScratch2: the test first.) */
	xsmcGet(xsVar(vScratch), xsArg(aRoute), idCh);
	xsmcGet(xsVar(vScratch2), xsVar(vScratch), idCritical);
	if (xsmcTest(xsVar(vScratch2)) || routeNumber(the, &xsArg(aHost), idLevelFloor) >= kRouteCongested) {
		xsmcSetInteger(xsResult, -1);
		return;
	}
	fields = routeNumber(the, &xsVar(vScratch), idFieldCount);
	seq = routeNextSeq(routeNumber(the, &xsArg(aRoute), idSeq));
	xsmcSetNumber(xsVar(vSeq), seq);
	xsmcSet(xsArg(aRoute), idSeq, xsVar(vSeq));
	/* The table's shape against its buffer: each column inside it, aligned, at its length. */
	xsmcGet(xsVar(vScratch), xsArg(aHost), idLayout);
	xsmcGetBufferReadable(xsVar(vScratch), &data, &bytes);
	if (bytes < sizeof(g.layout))
		xsRangeError("route: layout");
	memcpy(g.layout, data, sizeof(g.layout));
	xsmcGet(xsVar(vTable), xsArg(aHost), idTableBuffer);
	xsmcGetBufferReadable(xsVar(vTable), &data, &tableBytes);
	{
		uint32_t rows = g.layout[lRows], values = g.layout[lValues], wide = g.layout[lWide];
		const uint32_t f64[3][2] = { { lGranted, rows }, { lNextDue, rows }, { lLastValues, values } };
		const uint32_t u8[5][2] = { { lSubscribers, rows * wide }, { lFirstPush, rows }, { lSourceDropped, rows }, { lDecimation, 2 * rows }, { lLastLen, rows } };
		if ((wide != 1 && wide != 2) || rows > 0x1000000 || values > 0x1000000 || g.layout[lSlots] == 0 || g.layout[lSlots] > rows || rows % g.layout[lSlots])
			xsRangeError("route: layout");
		for (i = 0; i < 3; i++) {
			cell = g.layout[f64[i][0]];
			if ((cell & 7) || cell > tableBytes || (uint64_t)f64[i][1] * 8 > tableBytes - cell)
				xsRangeError("route: layout");
		}
		for (i = 0; i < 5; i++) {
			cell = g.layout[u8[i][0]];
			if (cell > tableBytes || u8[i][1] > tableBytes - cell || (i == 0 && (cell % wide)))
				xsRangeError("route: layout");
		}
		cell = g.layout[lSubscriberCount];
		if (cell > tableBytes || (cell % wide) || (rows / g.layout[lSlots]) * wide > tableBytes - cell)
			xsRangeError("route: layout");
	}
	/* The route's row block: its subscribers, at most the table's slots. */
	p.slots = g.layout[lSlots];
	index = routeNumber(the, &xsArg(aRoute), idIndex);
	if (!(index >= 0 && index == floor(index) && index < g.layout[lRows] / p.slots))
		xsRangeError("route: index out of range");
	end = g.layout[lWide] == 2 ? ((const uint16_t *)(const void *)((const uint8_t *)data + g.layout[lSubscriberCount]))[(uint32_t)index] : ((const uint8_t *)data + g.layout[lSubscriberCount])[(uint32_t)index];
	if (end == 0) {
		xsmcSetInteger(xsResult, 0);
		return;
	}
	if (end > p.slots)
		xsRangeError("route: subscribers out of range");
	count = xsmcToNumber(xsArg(aCount));
	length = routeNumber(the, &xsArg(aValues), idLength);
	n = routeValueCount(fields, count, length);
	lastAt = routeNumber(the, &xsArg(aRoute), idLastAt);
	if (!(fields >= 0 && fields <= 0xffff && fields == floor(fields) && (lastAt == -1 || (lastAt >= 0 && lastAt == floor(lastAt) && lastAt + (double)p.slots * fields <= g.layout[lValues]))))
		xsRangeError("route: values out of range");
	xsmcSetNumber(xsVar(vN), n);
	p.first = (uint32_t)index * p.slots;
	p.end = (uint32_t)end;
	p.now = xsmcToNumber(xsArg(aNow));
	p.gated = routeNumber(the, &xsArg(aRoute), idShedBase) != routeNumber(the, &xsArg(aHost), idSegmentsBase);
	p.lastAt = (int32_t)lastAt;
	p.fieldCount = (uint32_t)fields;
	p.n = (uint32_t)n;
	xsmcSetNumber(xsVar(vTag), (double)((uint32_t)routeNumber(the, &xsArg(aRoute), idTag) | (uint32_t)routeNumber(the, &xsArg(aHost), idSharedFlag)));
	xsmcGet(xsVar(vSlots), xsArg(aHost), idSlots);
	xsmcSetNull(xsVar(vFrame));
	xsmcSet(xsArg(aHost), idFrame, xsVar(vFrame));
	xsmcSetTrue(xsVar(vScratch));
	xsmcSet(xsArg(aHost), idRouting, xsVar(vScratch));
	g.the = the;
	g.framed = 0;
	g.frameBytes = 0;
	g.now = p.now;
	g.seq = seq;
	g.n = p.n;
	xsmcGet(xsVar(vData), xsArg(aHost), idData);
	g.calls.link = routeLink;
	g.calls.level = routeLevel;
	g.calls.neverShedEmpty = routeNeverShedEmpty;
	g.calls.send = routeSend;
	g.calls.sent = routeSent;
	g.calls.turn = routeTurn;
	g.calls.columns = routeColumns;
	g.calls.values = routeValues;
	i = routePush(&p, &g.calls, tallies);
	xsmcSetFalse(xsVar(vScratch));
	xsmcSet(xsArg(aHost), idRouting, xsVar(vScratch));
	/* Whole again once every link has copied the frame (the turns' frame too: Egress.frame). */
	xsmcGet(xsVar(vFrame), xsArg(aHost), idFrame);
	if (xsmcTypeOf(xsVar(vFrame)) == xsReferenceType) {
		routeOpen(the);
		xsmcSetNull(xsVar(vFrame));
		xsmcSet(xsArg(aHost), idFrame, xsVar(vFrame));
	}
	/* The counts: rate-gated, row 1, egress drops and deliveries (hub/counters.ts). */
	xsmcGet(xsVar(vCounters), xsArg(aHost), idCounters);
	if (tallies[0] > 0)
		routeAdd(the, idRateGated, tallies[0]);
	if (tallies[2] > 0)
		routeAdd(the, idEgressDrops, tallies[2]);
	if (i > 0)
		routeAdd(the, idDelivered, (double)i);
	if (tallies[1] > 0) {
		xsmcGet(xsVar(vScratch), xsVar(vCounters), idRows);
		xsmcGetIndex(xsVar(vScratch2), xsVar(vScratch), 1);
		xsmcSetNumber(xsVar(vScratch2), xsmcToNumber(xsVar(vScratch2)) + tallies[1]);
		xsmcSetIndex(xsVar(vScratch), 1, xsVar(vScratch2));
	}
	xsmcSetInteger(xsResult, (xsIntegerValue)i);
}
