/*
 * An ESP-NOW send status as an XS host function, behind the TypeScript wrapper in
 * ../espnow-native.ts: the binding's `sent` (bindings/espnow/link.ts EspNowBinding.sent), its
 * course ./espnowsent.h. Here each object the course reaches is held in a variable of the call,
 * each property read and written by name (the names looked up once), each element of a typed
 * array read and written by index (a Uint8Array's bytes where they lie), and each call into
 * script made as the script makes it.
 *
 * sent(mac, ok)          this: the EspNowBinding
 * send(frame, tag, seq)   this: an EspNowLink; true when the link took the frame
 *
 * Nothing allocates but what the script it calls allocates.
 */

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "xsmc.h"

#include "espnowsent.h"

/* The variables: the objects (kEsBinding's holds `this`), then scratch values. */
enum {
	vA = kEsObjects, vB, vC, vD, vResult, vCount
};

static const char *const names[kEsFields] = { ES_NAMES };
static xsIdentifier ids[kEsFields];
static int named;
static xsIdentifier idClock, idNow, idRadio, idSend, idSendAgain, idDrained, idJudge, idSentInFlight, idPump, idSentInScript, idSendInScript, idQueued;

typedef struct {
	EspSentCalls calls;
	xsMachine *the;
} EspGlue;

#define THE xsMachine *the = ((EspGlue *)c)->the
#define OBJ(o) xsVar(o)

static int glueLoad(EspSentCalls *c, int to, int from, int f)
{
	THE;
	xsmcGet(xsVar(to), OBJ(from), ids[f]);
	return xsmcTypeOf(xsVar(to)) == xsReferenceType;
}

static void glueLoadAt(EspSentCalls *c, int to, int from, uint32_t i)
{
	THE;
	xsmcGetIndex(xsVar(to), OBJ(from), i);
	if (xsmcTypeOf(xsVar(to)) != xsReferenceType)
		xsTypeError("sent: no link");
}

static double glueGet(EspSentCalls *c, int o, int f)
{
	THE;
	xsmcGet(xsVar(vA), OBJ(o), ids[f]);
	return xsmcToNumber(xsVar(vA));
}

static void glueSet(EspSentCalls *c, int o, int f, double v)
{
	THE;
	xsmcSetNumber(xsVar(vA), v);
	xsmcSet(OBJ(o), ids[f], xsVar(vA));
}

static void glueSetBool(EspSentCalls *c, int o, int f, int v)
{
	THE;
	xsmcSetBoolean(xsVar(vA), v);
	xsmcSet(OBJ(o), ids[f], xsVar(vA));
}

static void glueSetRef(EspSentCalls *c, int o, int f, int ref)
{
	THE;
	if (ref < 0)
		xsmcSetNull(xsVar(vA));
	else
		xsVar(vA) = OBJ(ref);
	xsmcSet(OBJ(o), ids[f], xsVar(vA));
}

static double glueAt(EspSentCalls *c, int o, uint32_t i)
{
	THE;
	xsmcGetIndex(xsVar(vA), OBJ(o), i);
	return xsmcToNumber(xsVar(vA));
}

static void glueSetAt(EspSentCalls *c, int o, uint32_t i, double v)
{
	THE;
	xsmcSetNumber(xsVar(vA), v);
	xsmcSetIndex(OBJ(o), i, xsVar(vA));
}

static void glueSetByte(EspSentCalls *c, int o, uint32_t i, uint8_t v)
{
	THE;
	void *data;
	xsUnsignedValue count;
	xsmcGetBufferWritable(xsVar(o), &data, &count);
	if (i >= count)
		xsRangeError("sent: byte out of range");
	((uint8_t *)data)[i] = v;
}

static uint32_t glueBytes(EspSentCalls *c, int o)
{
	THE;
	void *data;
	xsUnsignedValue count;
	xsmcGetBufferReadable(xsVar(o), &data, &count);
	return (uint32_t)count;
}

static int glueCopy(EspSentCalls *c, int to, uint32_t at, int from)
{
	THE;
	void *dst, *src;
	xsUnsignedValue room, count;
	xsmcGetBufferReadable(xsVar(from), &src, &count);
	xsmcGetBufferWritable(xsVar(to), &dst, &room);
	if (at > room || count > room - at)
		return 0;
	memmove((uint8_t *)dst + at, src, count);
	return 1;
}

static double glueCall(EspSentCalls *c, int what, double a, double b, double d)
{
	THE;
	xsmcSetNumber(xsVar(vB), a);
	xsmcSetNumber(xsVar(vC), b);
	xsmcSetNumber(xsVar(vD), d);
	switch (what) {
	case kEsNow:
		xsmcGet(xsVar(vA), xsVar(kEsBinding), idClock);
		xsmcCall(xsVar(vResult), xsVar(vA), idNow, NULL);
		break;
	case kEsRadioSend:
	case kEsSendAgain:
		xsmcGet(xsVar(vD), xsVar(kEsQueue), ids[fDatagram]);
		if (what == kEsRadioSend) {
			xsmcGet(xsVar(vA), xsVar(kEsBinding), idRadio);
			xsmcCall(xsVar(vResult), xsVar(vA), idSend, &xsVar(vB), &xsVar(vD), &xsVar(vC), NULL);
		}
		else
			xsmcCall(xsVar(vResult), xsVar(kEsBinding), idSendAgain, &xsVar(vB), &xsVar(vD), &xsVar(vC), NULL);
		break;
	case kEsDrained:
		xsmcCall(xsVar(vResult), xsVar(kEsLevel), idDrained, &xsVar(vB), &xsVar(vC), &xsVar(vD), NULL);
		break;
	case kEsJudge:
		xsmcCall(xsVar(vResult), xsVar(kEsLoss), idJudge, &xsVar(vB), NULL);
		break;
	case kEsSentInFlight:
		xsmcCall(xsVar(vResult), xsVar(kEsLoss), idSentInFlight, &xsVar(vB), &xsVar(vC), NULL);
		break;
	case kEsPump:
		xsmcCall(xsVar(vResult), xsVar(kEsBinding), idPump, &xsVar(vB), NULL);
		return 0;
	case kEsPumpLater:
		xsmcCall(xsVar(vResult), xsVar(kEsBinding), idPump, NULL);
		return 0;
	case kEsQueued:
		xsmcCall(xsVar(vResult), xsVar(kEsLevel), idQueued, &xsVar(vB), &xsVar(vC), NULL);
		break;
	case kEsSendInScript:
		xsmcCall(xsVar(vResult), xsVar(kEsLink), idSendInScript, &xsVar(kEsFrame), &xsVar(vB), &xsVar(vC), NULL);
		return xsmcTest(xsVar(vResult)) ? 1 : 0;
	default:
		xsmcSetBoolean(xsVar(vC), b != 0);
		if (isnan(d))
			xsmcCall(xsVar(vResult), xsVar(kEsBinding), idSentInScript, &xsVar(vB), &xsVar(vC), NULL);
		else
			xsmcCall(xsVar(vResult), xsVar(kEsBinding), idSentInScript, &xsVar(vB), &xsVar(vC), &xsVar(vD), NULL);
		return 0;
	}
	return xsmcToNumber(xsVar(vResult));
}

/* The names, found once (an identifier's number never changes in a machine), and the calls. */
static void glueOpen(xsMachine *the, EspGlue *g)
{
	int i;
	if (!named) {
		for (i = 0; i < kEsFields; i++)
			ids[i] = xsID(names[i]);
		idClock = xsID("clock");
		idNow = xsID("now");
		idRadio = xsID("radio");
		idSend = xsID("send");
		idSendAgain = xsID("sendAgain");
		idDrained = xsID("drained");
		idJudge = xsID("judge");
		idSentInFlight = xsID("sentInFlight");
		idPump = xsID("pump");
		idSentInScript = xsID("sentInScript");
		idSendInScript = xsID("sendInScript");
		idQueued = xsID("queued");
		named = 1;
	}
	g->the = the;
	g->calls.load = glueLoad;
	g->calls.loadAt = glueLoadAt;
	g->calls.get = glueGet;
	g->calls.set = glueSet;
	g->calls.setBool = glueSetBool;
	g->calls.setRef = glueSetRef;
	g->calls.at = glueAt;
	g->calls.setAt = glueSetAt;
	g->calls.setByte = glueSetByte;
	g->calls.bytes = glueBytes;
	g->calls.copy = glueCopy;
	g->calls.call = glueCall;
}

void xs_espnow_sent(xsMachine *the)
{
	EspGlue g;
	xsmcVars(vCount);
	xsVar(kEsBinding) = xsThis;
	glueOpen(the, &g);
	espnowSent(&g.calls, xsmcToNumber(xsArg(0)), xsmcTest(xsArg(1)));
}

void xs_espnow_send(xsMachine *the)
{
	EspGlue g;
	xsmcVars(vCount);
	xsVar(kEsLink) = xsThis;
	xsVar(kEsFrame) = xsArg(0);
	glueOpen(the, &g);
	xsmcSetBoolean(xsResult, espnowSend(&g.calls, xsmcToNumber(xsArg(1)), xsmcToNumber(xsArg(2))));
}
