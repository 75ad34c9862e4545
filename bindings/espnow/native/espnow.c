/*
 * The hub's ESP-NOW radio for Moddable on ESP32 (the SDK has none): esp_now_* behind the
 * TypeScript adapter in ../device.ts, which implements the binding's Radio (../link.ts).
 * docs/_espnow.md "The native module" describes the contract.
 *
 * Threads. esp_now's receive and send callbacks run in the Wi-Fi task. They never touch the
 * XS machine and never block: they copy into a fixed ring (received datagrams) or a single
 * status slot (one datagram in flight, so one status at most), under a spinlock, and post ONE
 * message to the VM when there was none outstanding. The VM's message queue has 10 entries and
 * modMessagePostToMachine blocks on a full queue in release builds; one outstanding message per
 * module keeps this module from ever filling it. In the VM the message calls the JS onReady
 * callback, which drains the ring with poll(). A full ring refuses a datagram and counts it
 * (dropped()); the hub's loss signal (§13.3) sees that as the loss it is.
 *
 * One datagram in flight: send() refuses with BUSY until the send callback of the previous one
 * has run (ESP-NOW answers a faster sender with ESP_ERR_ESPNOW_NO_MEM anyway).
 *
 * Keys (docs/security.md "ESP-NOW"): the primary master key is set once, when the radio opens
 * (esp_now_set_pmk); each paired station is added with `encrypt` and its local master key, and
 * the radio decrypts its datagrams (and drops those that do not decrypt). A received datagram
 * addressed to the broadcast address cannot have been encrypted: poll() marks it, so that the
 * adapter drops one that claims a paired station's MAC.
 *
 * Status codes returned to JS match RadioStatus in ../link.ts.
 */

#include <string.h>

#include "xsmc.h"
#include "xsHost.h"
#include "mc.defines.h"

#include "freertos/FreeRTOS.h"
#include "esp_idf_version.h"
#include "esp_now.h"

#ifndef MODDEF_ESPNOW_RING
	#define MODDEF_ESPNOW_RING (8)
#endif

#define kDatagramMax (ESP_NOW_MAX_DATA_LEN)
#define kMacBytes (ESP_NOW_ETH_ALEN)
#define kPmkBytes (16)
/* poll() writes the MAC at [0, 6) and the datagram at [6, 6 + length). */
#define kPollBytes (kMacBytes + kDatagramMax)
/* Into a buffer of at least this many bytes it also writes the MAC as a number (a double in the
 * machine's byte order, which a Float64Array over those 8 bytes reads) at [kPollBytes, +8). */
#define kPollMacNumberBytes (kPollBytes + 8)
/* The largest MAC as a number: 48 bits. */
#define kMacNumberLimit (281474976710656.0)

/* RadioStatus (../link.ts). */
enum {
	kStatusOK = 0,
	kStatusBusy = 1,
	kStatusNotFound = 2,
	kStatusFull = 3,
	kStatusTooLong = 4,
	kStatusNoMem = 5,
	kStatusExists = 6,
	kStatusError = 7
};

/* poll() results besides a datagram's length (1..250). */
#define kPollEmpty (-1)
#define kPollSent (0x10000)
#define kPollSentFailed (0x10001)
/* Or'ed into a datagram's length: it was addressed to the broadcast address. */
#define kPollToBroadcast (0x100)
/* Or'ed into any event: nothing else waits after it (a drain stops without polling again; what
 * arrives later posts again, the flag being clear by then). */
#define kPollLast (0x20000)

typedef struct {
	uint8_t mac[kMacBytes];
	uint8_t length;
	uint8_t toBroadcast;
	uint8_t data[kDatagramMax];
} EspNowDatagram;

static const uint8_t kBroadcastMac[kMacBytes] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

typedef struct {
	xsMachine *the;				/* NULL while closed: the callbacks then drop everything */
	xsSlot object;
	xsSlot onReady;
	wifi_interface_t ifidx;

	/* Everything below is shared with the Wi-Fi task and guarded by gEspNowMux. */
	uint8_t posted;				/* a message to the VM is outstanding */
	uint8_t inFlight;			/* a datagram awaits its send status */
	uint8_t statusReady;
	uint8_t statusOk;
	uint8_t statusMac[kMacBytes];
	uint16_t head;
	uint16_t count;
	uint32_t dropped;			/* datagrams the full ring refused */
	uint32_t oversize;			/* datagrams over 250 bytes (ESP-NOW v2 senders) */
	uint32_t postFailures;		/* modMessagePostToMachine refused (debug builds time out) */
	EspNowDatagram ring[MODDEF_ESPNOW_RING];
} EspNowRecord;

static EspNowRecord gEspNow;
static portMUX_TYPE gEspNowMux = portMUX_INITIALIZER_UNLOCKED;

void xs_espnow_destructor(void *data);

static int espnowStatus(esp_err_t err)
{
	switch (err) {
		case ESP_OK: return kStatusOK;
		case ESP_ERR_ESPNOW_NOT_FOUND: return kStatusNotFound;
		case ESP_ERR_ESPNOW_FULL: return kStatusFull;
		case ESP_ERR_ESPNOW_NO_MEM: return kStatusNoMem;
		case ESP_ERR_ESPNOW_EXIST: return kStatusExists;
		default: return kStatusError;
	}
}

/* In the VM task: run the JS callback, which drains the ring with poll(). */
static void espnowDeliver(void *the, void *refcon, uint8_t *message, uint16_t messageLength)
{
	EspNowRecord *r = refcon;
	(void)message;
	(void)messageLength;

	/* Cleared before the drain: whatever arrives from now on posts again. */
	portENTER_CRITICAL(&gEspNowMux);
	r->posted = 0;
	portEXIT_CRITICAL(&gEspNowMux);

	if (r->the != the)
		return;		/* closed since the post */

	xsBeginHost(the);
		xsCallFunction0(r->onReady, r->object);
	xsEndHost(the);
}

/* In the Wi-Fi task, outside the critical section (posting may block briefly on a full queue). */
static void espnowPost(EspNowRecord *r)
{
	xsMachine *the = r->the;
	if (!the || (0 != modMessagePostToMachine(the, NULL, 0, espnowDeliver, r))) {
		portENTER_CRITICAL(&gEspNowMux);
		r->posted = 0;
		r->postFailures += 1;
		portEXIT_CRITICAL(&gEspNowMux);
	}
}

static void espnowReceived(const esp_now_recv_info_t *info, const uint8_t *data, int length)
{
	EspNowRecord *r = &gEspNow;
	uint8_t post = 0;
	uint8_t toBroadcast;

	if (!r->the || !info || !info->src_addr || !data)
		return;
	toBroadcast = (info->des_addr && (0 == memcmp(info->des_addr, kBroadcastMac, kMacBytes))) ? 1 : 0;

	portENTER_CRITICAL(&gEspNowMux);
	if ((length <= 0) || (length > kDatagramMax))
		r->oversize += 1;
	else if (r->count < MODDEF_ESPNOW_RING) {
		EspNowDatagram *slot = &r->ring[(r->head + r->count) % MODDEF_ESPNOW_RING];
		memcpy(slot->mac, info->src_addr, kMacBytes);
		slot->length = (uint8_t)length;
		slot->toBroadcast = toBroadcast;
		memcpy(slot->data, data, length);
		r->count += 1;
		if (!r->posted)
			r->posted = post = 1;
	}
	else
		r->dropped += 1;
	portEXIT_CRITICAL(&gEspNowMux);

	if (post)
		espnowPost(r);
}

static void espnowSentStatus(const uint8_t *mac, esp_now_send_status_t status)
{
	EspNowRecord *r = &gEspNow;
	uint8_t post = 0;

	if (!r->the)
		return;

	portENTER_CRITICAL(&gEspNowMux);
	r->inFlight = 0;
	r->statusReady = 1;
	r->statusOk = (ESP_NOW_SEND_SUCCESS == status) ? 1 : 0;
	if (mac)
		memcpy(r->statusMac, mac, kMacBytes);
	else
		memset(r->statusMac, 0, kMacBytes);
	if (!r->posted)
		r->posted = post = 1;
	portEXIT_CRITICAL(&gEspNowMux);

	if (post)
		espnowPost(r);
}

#if ESP_IDF_VERSION >= ESP_IDF_VERSION_VAL(5, 5, 0)
static void espnowSent(const esp_now_send_info_t *info, esp_now_send_status_t status)
{
	espnowSentStatus(info ? info->des_addr : NULL, status);
}
#else
static void espnowSent(const uint8_t *mac, esp_now_send_status_t status)
{
	espnowSentStatus(mac, status);
}
#endif

static void espnowStop(EspNowRecord *r)
{
	esp_now_unregister_recv_cb();
	esp_now_unregister_send_cb();
	esp_now_deinit();
	portENTER_CRITICAL(&gEspNowMux);
	r->the = NULL;
	r->posted = r->inFlight = r->statusReady = 0;
	r->head = r->count = 0;
	portEXIT_CRITICAL(&gEspNowMux);
}

static EspNowRecord *espnowThis(xsMachine *the)
{
	EspNowRecord *r = xsmcGetHostDataValidate(xsThis, (void *)xs_espnow_destructor);
	if (!r)
		xsUnknownError("closed");
	return r;
}

/* A MAC given as its 6 bytes, or as the number the binding keeps it as (the bytes big-endian). */
static void espnowMac(xsMachine *the, xsSlot *slot, uint8_t *mac)
{
	void *data;
	xsUnsignedValue count;
	xsType type = xsmcTypeOf(*slot);
	if ((xsNumberType == type) || (xsIntegerType == type)) {
		double m = xsmcToNumber(*slot);
		uint64_t v;
		int i;
		if (!(m >= 0) || !(m < kMacNumberLimit) || ((double)(uint64_t)m != m))
			xsRangeError("MAC is a 48-bit whole number");
		v = (uint64_t)m;
		for (i = kMacBytes - 1; i >= 0; i--) {
			mac[i] = (uint8_t)(v & 0xff);
			v >>= 8;
		}
		return;
	}
	xsmcGetBufferReadable(*slot, &data, &count);
	if (kMacBytes != count)
		xsRangeError("MAC is 6 bytes");
	memcpy(mac, data, kMacBytes);
}

/* new EspNowNative(onReady, ifidx, pmk): ESP-NOW on the interface Wi-Fi was started with. */
void xs_espnow(xsMachine *the)
{
	EspNowRecord *r = &gEspNow;
	int argc = xsmcArgc;
	esp_err_t err;

	if (r->the)
		xsUnknownError("ESP-NOW already open");
	if ((argc < 1) || !xsmcIsCallable(xsArg(0)))
		xsTypeError("onReady must be a function");

	memset(r, 0, sizeof(EspNowRecord));
	r->ifidx = (argc > 1) ? (wifi_interface_t)xsmcToInteger(xsArg(1)) : WIFI_IF_STA;

	err = esp_now_init();
	if (ESP_OK != err)
		xsUnknownError("esp_now_init failed (is Wi-Fi started?)");

	if ((argc > 2) && xsmcTest(xsArg(2))) {
		void *pmk;
		xsUnsignedValue count;
		xsmcGetBufferReadable(xsArg(2), &pmk, &count);
		if ((kPmkBytes != count) || (ESP_OK != esp_now_set_pmk(pmk))) {
			esp_now_deinit();
			xsRangeError("PMK is 16 bytes");
		}
	}

	r->object = xsThis;
	xsRemember(r->object);
	r->onReady = xsArg(0);
	xsRemember(r->onReady);
	xsmcSetHostData(xsThis, r);
	/* The machine is set before the callbacks can run. */
	r->the = the;

	if ((ESP_OK != esp_now_register_recv_cb(espnowReceived)) || (ESP_OK != esp_now_register_send_cb(espnowSent))) {
		espnowStop(r);
		xsForget(r->onReady);
		xsForget(r->object);
		xsmcSetHostData(xsThis, NULL);
		xsUnknownError("esp_now callbacks");
	}
}

void xs_espnow_destructor(void *data)
{
	if (data)
		espnowStop((EspNowRecord *)data);
}

void xs_espnow_close(xsMachine *the)
{
	EspNowRecord *r = xsmcGetHostDataValidate(xsThis, (void *)xs_espnow_destructor);
	if (!r)
		return;
	espnowStop(r);
	xsForget(r->onReady);
	xsForget(r->object);
	xsmcSetHostData(xsThis, NULL);
}

/* addPeer(mac, encrypt, lmk) → RadioStatus */
void xs_espnow_add_peer(xsMachine *the)
{
	EspNowRecord *r = espnowThis(the);
	int argc = xsmcArgc;
	esp_now_peer_info_t peer;

	memset(&peer, 0, sizeof(peer));
	espnowMac(the, &xsArg(0), peer.peer_addr);
	peer.channel = 0;		/* the channel Wi-Fi is on */
	peer.ifidx = r->ifidx;
	peer.encrypt = (argc > 1) && xsmcToBoolean(xsArg(1));
	if (peer.encrypt) {
		void *lmk;
		xsUnsignedValue count;
		if ((argc < 3) || !xsmcTest(xsArg(2)))
			xsTypeError("an encrypted peer needs its LMK");
		xsmcGetBufferReadable(xsArg(2), &lmk, &count);
		if (ESP_NOW_KEY_LEN != count)
			xsRangeError("LMK is 16 bytes");
		memcpy(peer.lmk, lmk, ESP_NOW_KEY_LEN);
	}
	xsmcSetInteger(xsResult, espnowStatus(esp_now_add_peer(&peer)));
}

/* removePeer(mac) → RadioStatus */
void xs_espnow_remove_peer(xsMachine *the)
{
	uint8_t mac[kMacBytes];
	espnowThis(the);
	espnowMac(the, &xsArg(0), mac);
	xsmcSetInteger(xsResult, espnowStatus(esp_now_del_peer(mac)));
}

/* send(mac, data, length) → RadioStatus; BUSY while the previous datagram awaits its status. */
void xs_espnow_send(xsMachine *the)
{
	EspNowRecord *r = espnowThis(the);
	uint8_t mac[kMacBytes];
	void *data;
	xsUnsignedValue count;
	xsIntegerValue length = xsmcToInteger(xsArg(2));
	uint8_t busy;
	esp_err_t err;

	espnowMac(the, &xsArg(0), mac);
	xsmcGetBufferReadable(xsArg(1), &data, &count);
	if ((length < 1) || (length > kDatagramMax) || ((xsUnsignedValue)length > count)) {
		xsmcSetInteger(xsResult, kStatusTooLong);
		return;
	}

	portENTER_CRITICAL(&gEspNowMux);
	busy = r->inFlight;
	if (!busy)
		r->inFlight = 1;
	portEXIT_CRITICAL(&gEspNowMux);
	if (busy) {
		xsmcSetInteger(xsResult, kStatusBusy);
		return;
	}

	/* esp_now_send copies the data: the buffer may move once this returns. */
	err = esp_now_send(mac, data, (size_t)length);
	if (ESP_OK != err) {
		portENTER_CRITICAL(&gEspNowMux);
		r->inFlight = 0;
		portEXIT_CRITICAL(&gEspNowMux);
	}
	xsmcSetInteger(xsResult, espnowStatus(err));
}

/*
 * poll(into) → the next event, oldest first, the send status before datagrams:
 *   -1 nothing; 0x10000 / 0x10001 the send status (ok / failed) for the MAC in into[0, 6);
 *   1..250 a datagram of that length from the MAC in into[0, 6), its bytes in into[6, 6 + length),
 *   with 0x100 or'ed in when it was addressed to the broadcast address.
 */
void xs_espnow_poll(xsMachine *the)
{
	EspNowRecord *r = espnowThis(the);
	void *buffer;
	xsUnsignedValue count;
	uint8_t *into;
	xsIntegerValue result = kPollEmpty;

	xsmcGetBufferWritable(xsArg(0), &buffer, &count);
	if (count < kPollBytes)
		xsRangeError("poll buffer needs 256 bytes");
	into = buffer;

	portENTER_CRITICAL(&gEspNowMux);
	if (r->statusReady) {
		r->statusReady = 0;
		memcpy(into, r->statusMac, kMacBytes);
		result = r->statusOk ? kPollSent : kPollSentFailed;
	}
	else if (r->count) {
		EspNowDatagram *slot = &r->ring[r->head];
		memcpy(into, slot->mac, kMacBytes);
		memcpy(into + kMacBytes, slot->data, slot->length);
		result = slot->length | (slot->toBroadcast ? kPollToBroadcast : 0);
		r->head = (r->head + 1) % MODDEF_ESPNOW_RING;
		r->count -= 1;
	}
	if ((kPollEmpty != result) && !r->statusReady && !r->count)
		result |= kPollLast;
	portEXIT_CRITICAL(&gEspNowMux);

	if ((kPollEmpty != result) && (count >= kPollMacNumberBytes)) {
		uint64_t v = 0;
		double m;
		int i;
		for (i = 0; i < kMacBytes; i++)
			v = (v << 8) | into[i];
		m = (double)v;
		memcpy(into + kPollBytes, &m, sizeof(m));
	}

	xsmcSetInteger(xsResult, result);
}

/* dropped() → datagrams lost inside this module: ring full, oversize, and refused posts. */
void xs_espnow_dropped(xsMachine *the)
{
	EspNowRecord *r = espnowThis(the);
	uint32_t n;
	portENTER_CRITICAL(&gEspNowMux);
	n = r->dropped + r->oversize;
	portEXIT_CRITICAL(&gEspNowMux);
	xsmcSetNumber(xsResult, (xsNumberValue)n);
}

/* postFailures() → how often the VM's queue refused the wake-up (poll() still finds the events). */
void xs_espnow_post_failures(xsMachine *the)
{
	EspNowRecord *r = espnowThis(the);
	xsmcSetNumber(xsResult, (xsNumberValue)r->postFailures);
}
