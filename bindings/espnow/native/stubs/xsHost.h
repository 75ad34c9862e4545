/* Stub of Moddable's xs/platforms/esp/xsHost.h: the message post the ESP-NOW module uses. */
#ifndef __XSHOST__
#define __XSHOST__

#include <stdint.h>

typedef void (*modMessageDeliver)(void *the, void *refcon, uint8_t *message, uint16_t messageLength);

#if defined(__XS__)
int modMessagePostToMachine(xsMachine *the, uint8_t *message, uint16_t messageLength, modMessageDeliver callback, void *refcon);
#endif

#endif
