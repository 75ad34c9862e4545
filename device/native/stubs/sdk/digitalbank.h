/*
 * Stub of the SDK's digital-bank header: the host hooks of an ECMA-419 digital input
 * (declarations only). doSetOnReadable registers a function that the input's GPIO interrupt
 * calls with `refcon` on each edge, before it notifies JavaScript; the function returns 1 to
 * keep that notification from JavaScript, 0 to let it through.
 */
#ifndef STUB_DIGITALBANK_H
#define STUB_DIGITALBANK_H

#include <stdint.h>
#include "xs.h"

typedef uint8_t (*modDigitalBankOnReadable)(void *refcon);

typedef void *(*modDigitalBankValidateFunc)(xsMachine *the, xsSlot *instance);
typedef uint32_t (*modDigitalBankReadFunc)(void *hostData);
typedef void (*modDigitalBankWriteFunc)(void *hostData, uint32_t value);
typedef uint8_t (*modDigitalBankSetOnReadableFunc)(void *hostData, modDigitalBankOnReadable func, void *refcon);

typedef struct xsDigitalBankHostHooksRecord {
	xsHostHooks hooks;
	modDigitalBankValidateFunc doValidate;
	modDigitalBankReadFunc doRead;
	modDigitalBankWriteFunc doWrite;
	modDigitalBankSetOnReadableFunc doSetOnReadable;
} xsDigitalBankHostHooksRecord;

typedef xsDigitalBankHostHooksRecord *xsDigitalBankHostHooks;

#endif
