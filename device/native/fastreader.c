/*
 * The frequent client frames read in place, as an XS host function behind the TypeScript
 * wrapper in ../fast-native.ts (hub/ports.ts FrameReader). The reading itself is ./fastreader.h;
 * here are its reads and writes of the reader's fields: `value` (ACK, PING), `channelId`,
 * `finite` and the block's `count` and `width` (BUNDLE), and the block's numbers, written where
 * they lie: `numbersBuffer` (their ArrayBuffer, at its start) and `capacity` (how many), plain
 * fields the reader keeps so that no getter runs.
 *
 * read(buf, start, end) with `this` the reader: the frame type, or 0 (Fast.NONE)
 *
 * The frame is read only inside buf[start, end) and the numbers written only inside the block's
 * array; a start or end that is no whole number inside the buffer reads NONE, as the script's.
 * Nothing allocates.
 */

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "xsmc.h"

#include "fastreader.h"

enum { vBlock, vNumbers, vScratch, vCount };

static xsIdentifier idValue, idChannelId, idFinite, idBlock, idCount, idWidth, idCapacity, idNumbersBuffer;

void xs_fast_read(xsMachine *the)
{
	xsNumberValue start = xsmcToNumber(xsArg(1)), end = xsmcToNumber(xsArg(2));
	void *data, *numbers;
	xsUnsignedValue bytes, numbersBytes;
	double capacity = 0;
	FastOut out;
	int type;
	xsmcVars(vCount);
	/* The last name looked up tells that all were (a lookup that failed part way is done again). */
	if (idNumbersBuffer == XS_NO_ID) {
		idValue = xsID("value");
		idChannelId = xsID("channelId");
		idFinite = xsID("finite");
		idBlock = xsID("block");
		idCount = xsID("count");
		idWidth = xsID("width");
		idCapacity = xsID("capacity");
		idNumbersBuffer = xsID("numbersBuffer");
	}
	xsmcSetInteger(xsResult, kFastNone);
	xsmcGetBufferReadable(xsArg(0), &data, &bytes);
	if (!(start >= 0 && end >= start && end <= bytes && start == floor(start) && end == floor(end)))
		return;
	numbers = NULL;
	if (end - start >= 5 && ((const uint8_t *)data)[(uint32_t)start] == 0xa3) {
		/* A BUNDLE, perhaps: the block's numbers, as the reader keeps them (plain fields: no getter runs). */
		xsmcGet(xsVar(vBlock), xsThis, idBlock);
		xsmcGet(xsVar(vScratch), xsThis, idCapacity);
		capacity = xsmcToNumber(xsVar(vScratch));
		xsmcGet(xsVar(vNumbers), xsThis, idNumbersBuffer);
		xsmcGetBufferWritable(xsVar(vNumbers), &numbers, &numbersBytes);
		if (!(capacity >= 0 && capacity * 8 <= numbersBytes))
			xsRangeError("fast read: block");
		/* The frame's address again: nothing since has run script or allocated, but take it where it is used. */
		xsmcGetBufferReadable(xsArg(0), &data, &bytes);
	}
	type = fastRead((const uint8_t *)data, (uint32_t)bytes, (uint32_t)start, (uint32_t)end, (double *)numbers, (uint32_t)capacity, &out);
	if (type == kFastAck || type == kFastPing) {
		xsmcSetNumber(xsVar(vScratch), out.value);
		xsmcSet(xsThis, idValue, xsVar(vScratch));
	}
	else if (type == kFastBundle) {
		xsmcSetInteger(xsVar(vScratch), (xsIntegerValue)out.channelId);
		xsmcSet(xsThis, idChannelId, xsVar(vScratch));
		xsmcSetInteger(xsVar(vScratch), (xsIntegerValue)out.count);
		xsmcSet(xsVar(vBlock), idCount, xsVar(vScratch));
		xsmcSetInteger(xsVar(vScratch), (xsIntegerValue)out.width);
		xsmcSet(xsVar(vBlock), idWidth, xsVar(vScratch));
		if (out.finite)
			xsmcSetTrue(xsVar(vScratch));
		else
			xsmcSetFalse(xsVar(vScratch));
		xsmcSet(xsThis, idFinite, xsVar(vScratch));
	}
	xsmcSetInteger(xsResult, type);
}
