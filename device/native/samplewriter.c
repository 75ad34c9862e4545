/*
 * A DATA frame's seq, t and values as an XS host function, behind the TypeScript wrapper in
 * ../sample-native.ts (hub/ports.ts SampleWriter). The work itself is ./samplewriter.h.
 *
 * The numbers are read first and the buffers after (reading a number can run script, which can
 * move a buffer; taking a buffer runs none). Every range is checked against its buffer, and a
 * RangeError thrown rather than read or write outside one. Nothing allocates.
 */

#include <stdint.h>
#include <string.h>

#include "xsmc.h"

#include "samplewriter.h"

/* A whole number from 0 to 2^53 - 1, or a RangeError. */
static double sampleWhole(xsMachine *the, xsSlot *slot)
{
	double x = xsmcToNumber(*slot);
	if (!(x >= 0 && x <= kSampleMaxSafe && x == trunc(x)))
		xsRangeError("sample: seq and t are whole numbers from 0 to 2^53 - 1");
	return x;
}

/* writeSample(b, p, seq, t, values, at, count): DATA's seq, t and values at b[p, …) (values: the ArrayBuffer of a Float64Array, its first value at byte at); the end. */
void xs_sample_write(xsMachine *the)
{
	xsIntegerValue p = xsmcToInteger(xsArg(1));
	double seq = sampleWhole(the, &xsArg(2));
	double t = sampleWhole(the, &xsArg(3));
	xsIntegerValue at = xsmcToInteger(xsArg(5));
	xsIntegerValue count = xsmcToInteger(xsArg(6));
	void *values;
	void *out;
	xsUnsignedValue valuesBytes;
	xsUnsignedValue outBytes;
	if ((count < 0) || (count > 0xffff) || (at < 0) || (p < 0))
		xsRangeError("sample: out of range");
	xsmcGetBufferReadable(xsArg(4), &values, &valuesBytes);
	if ((xsUnsignedValue)at > valuesBytes || (xsUnsignedValue)count * 8 > valuesBytes - (xsUnsignedValue)at)
		xsRangeError("sample: values out of range");
	xsmcGetBufferWritable(xsArg(0), &out, &outBytes);
	if ((xsUnsignedValue)p > outBytes || (xsUnsignedValue)kSampleWriteMax(count) > outBytes - (xsUnsignedValue)p)
		xsRangeError("sample: frame out of range");
	xsmcSetInteger(xsResult, p + (xsIntegerValue)sampleWrite((uint8_t *)out + p, seq, t, (const uint8_t *)values + at, (uint32_t)count));
}
