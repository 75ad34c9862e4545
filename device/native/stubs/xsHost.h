/* Stub of Moddable's ESP32 xsHost.h: the two message posts the stop line uses. */
#ifndef __XSHOST__
#define __XSHOST__

#include <stdint.h>

typedef void (*modMessageDeliver)(void *the, void *refcon, uint8_t *message, uint16_t messageLength);

#if defined(__XS__)
int modMessagePostToMachine(xsMachine *the, uint8_t *message, uint16_t messageLength, modMessageDeliver callback, void *refcon);
/* From an interrupt: never blocks; non-zero when the VM's queue is full. */
int modMessagePostToMachineFromISR(xsMachine *the, modMessageDeliver callback, void *refcon);
#endif

#endif
