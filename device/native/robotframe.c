/*
 * The robot link's byte work as XS host functions, behind the TypeScript wrapper in
 * ../robot-native.ts (device/robot-link.ts RobotCodec). The work itself is ./robotframe.h.
 *
 * Each function takes its numbers first and its buffers after (reading a number can run
 * script, which can move a buffer; taking a buffer runs none), checks every range against the
 * buffer it names and throws a RangeError rather than read or write outside one. The buffers
 * are Uint8Arrays (views: the data from the view's offset, its length). Nothing allocates.
 */

#include <stdint.h>
#include <string.h>

#include "xsmc.h"

#include "robotframe.h"

static uint8_t *robotBytes(xsMachine *the, xsSlot *slot, xsIntegerValue at, xsIntegerValue n, int writable)
{
	void *data;
	xsUnsignedValue count;
	if (writable)
		xsmcGetBufferWritable(*slot, &data, &count);
	else
		xsmcGetBufferReadable(*slot, &data, &count);
	if ((at < 0) || (n < 0) || ((xsUnsignedValue)at > count) || ((xsUnsignedValue)n > count - (xsUnsignedValue)at))
		xsRangeError("robot frame: out of range");
	return (uint8_t *)data + at;
}

/* crc16(bytes, start, end, crc): the CRC of bytes[start, end) continuing from crc. */
void xs_robot_crc16(xsMachine *the)
{
	xsIntegerValue start = xsmcToInteger(xsArg(1));
	xsIntegerValue end = xsmcToInteger(xsArg(2));
	uint16_t crc = (uint16_t)xsmcToInteger(xsArg(3));
	uint8_t *p;
	if ((start < 0) || (end < start))
		xsRangeError("robot frame: out of range");
	p = robotBytes(the, &xsArg(0), start, end - start, 0);
	xsmcSetInteger(xsResult, robotCrc16(p, (uint32_t)(end - start), crc));
}

/* crc16Copy(src, from, dst, at, n, crc): src[from, from + n) to dst[at, …), the CRC continued over them. */
void xs_robot_crc16_copy(xsMachine *the)
{
	xsIntegerValue from = xsmcToInteger(xsArg(1));
	xsIntegerValue at = xsmcToInteger(xsArg(3));
	xsIntegerValue n = xsmcToInteger(xsArg(4));
	uint16_t crc = (uint16_t)xsmcToInteger(xsArg(5));
	uint8_t *src = robotBytes(the, &xsArg(0), from, n, 0);
	uint8_t *dst = robotBytes(the, &xsArg(2), at, n, 1);
	xsmcSetInteger(xsResult, robotCrc16Copy(src, dst, (uint32_t)n, crc));
}

/* floats32(bytes, at, count, out): count little-endian float32 from bytes[at, …) into out, the bytes of a Float64Array. */
void xs_robot_floats32(xsMachine *the)
{
	xsIntegerValue at = xsmcToInteger(xsArg(1));
	xsIntegerValue count = xsmcToInteger(xsArg(2));
	uint8_t *p;
	uint8_t *out;
	if ((count < 0) || (count > 0xffff))
		xsRangeError("robot frame: bad count");
	p = robotBytes(the, &xsArg(0), at, count * 4, 0);
	out = robotBytes(the, &xsArg(3), 0, count * 8, 1);
	robotFloats32(p, (uint32_t)count, out);
}
