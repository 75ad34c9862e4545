/*
 * The hub's clock on the ESP32 (hub/ports.ts Clock) as an XS host function, behind the
 * TypeScript wrapper in ../clock-native.ts: whole milliseconds since boot, from the ESP-IDF high
 * resolution timer (esp_timer_get_time: microseconds in 64 bits, monotonic, which does not wrap in
 * the hub's lifetime). Every part of the hub reads the time through it, about 1,400 times a second
 * in the default mix: a host function costs XS a call and nothing else, where the script clock
 * over Time.ticks (../runtime.ts TicksClock, the Linux simulator's) runs its own steps at every
 * read (docs/performance.md "The clock").
 */

#include <stddef.h>
#include <stdint.h>

#include "xsmc.h"

#include "esp_timer.h"

void xs_clock_now(xsMachine *the)
{
	xsmcSetNumber(xsResult, (double)(esp_timer_get_time() / 1000));
}
