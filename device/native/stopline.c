/*
 * The hub's stop line without the JavaScript event loop (docs/operations.md "Stops that do not
 * need JavaScript"), behind the TypeScript wrapper in ../stop-native.ts and the platform-free logic
 * in ../stop-path.ts.
 *
 * Two native paths drive the stop line to its stop level; each then leaves a trip bit that
 * JavaScript takes (take()) and turns into the hub's latch:
 *
 *   1. The ESTOP button. The SDK's digital input already runs an interrupt for the button's
 *      edges (the device entry opens it with onReadable and both edges). Its host hooks let
 *      another native module register a function that runs inside that interrupt
 *      (doSetOnReadable). Ours reads the button's level and, when it reads pressed, writes the
 *      stop level to the stop pin: GPIO calls only, no XS call, no allocation, nothing that
 *      blocks. It returns 0 so that the SDK still posts its own onReadable (the JavaScript path
 *      stays as the second path), and it posts one message of its own to the VM
 *      (modMessagePostToMachineFromISR), so that a press shorter than the event loop's latency
 *      still latches the hub: by the time JavaScript reads the pin it may read released.
 *   2. The heartbeat guard. An esp_timer callback (the esp_timer task, not the VM's) checks that
 *      JavaScript fed the heartbeat (feed(), every tick) within the guard time; if not, it writes
 *      the stop level. It posts nothing: JavaScript is not running; the tick takes the bit when
 *      it runs again. A loop that never runs again is the task watchdog's business (sdkconfig).
 *
 * Releasing the button never releases the line. Only release() does, on the hub's ESTOP_CLEAR
 * path (the robot port's release), and it refuses while a trip JavaScript has not taken is
 * pending: the check and the write happen under the same spinlock as the interrupt's write, so
 * a press can never be overwritten by a release that raced it.
 *
 * One stop line per program: the record is static, as the interrupt needs it without a lookup.
 *
 * The SDK installs the GPIO interrupt service without the IRAM flag, so the interrupt is held
 * off while the flash cache is disabled (a flash write) and runs from flash like the rest: the
 * GPIO calls here need no IRAM placement of their own.
 */

#include <stdint.h>
#include <string.h>

#include "xsmc.h"
#include "xsHost.h"
#include "digitalbank.h"

#include "sdkconfig.h"
#include "freertos/FreeRTOS.h"
#include "driver/gpio.h"
#include "esp_attr.h"
#include "esp_system.h"
#include "esp_timer.h"

/* TripBit (../stop-path.ts). */
#define kTripButton (1)
#define kTripGuard (2)

/* ResetCause (../stop-path.ts). */
enum {
	kResetPowerOn = 0,
	kResetSoftware = 1,
	kResetPanic = 2,
	kResetWatchdog = 3,
	kResetBrownout = 4,
	kResetExternal = 5,
	kResetUnknown = 6
};

#define kGuardMinMs (100)
#define kGuardMaxMs (10000)
/* The guard looks at the heartbeat ten times per guard time, and at most every 10 ms. */
#define kGuardChecks (10)
#define kGuardCheckMinUs (10000)

typedef struct {
	xsMachine *the;				/* NULL until the constructor has run */
	xsSlot object;
	xsSlot onTrip;
	xsSlot button;				/* the watched Digital, remembered so it outlives the hook */
	xsDigitalBankHostHooks buttonHooks;
	esp_timer_handle_t guardTimer;
	uint8_t hasOnTrip;
	uint8_t hasButton;

	/* Everything below is shared with the interrupt and the esp_timer task: gStopLineMux. */
	uint8_t lineArmed;			/* stopPin and stopLevel are set */
	uint8_t buttonArmed;		/* the interrupt may act */
	uint8_t posted;				/* a message to the VM is outstanding */
	uint8_t pending;			/* trip bits JavaScript has not taken */
	uint8_t buttonPin;
	uint8_t buttonLevel;
	uint8_t stopPin;
	uint8_t stopLevel;
	int64_t guardUs;			/* 0: the guard is off */
	int64_t fedAt;
	uint32_t trips;
	uint32_t refusedReleases;
	uint32_t postFailures;
} StopLineRecord;

static StopLineRecord gStopLine;
static portMUX_TYPE gStopLineMux = portMUX_INITIALIZER_UNLOCKED;

void xs_stopline_destructor(void *data);

/* In the VM task: the interrupt's message. JavaScript takes the bits with take(). */
static void stoplineDeliver(void *the, void *refcon, uint8_t *message, uint16_t messageLength)
{
	StopLineRecord *r = refcon;
	(void)message;
	(void)messageLength;

	portENTER_CRITICAL(&gStopLineMux);
	r->posted = 0;
	portEXIT_CRITICAL(&gStopLineMux);

	if ((r->the != the) || !r->hasOnTrip)
		return;

	xsBeginHost(the);
		xsCallFunction0(r->onTrip, r->object);
	xsEndHost(the);
}

/*
 * Inside the GPIO interrupt, on every edge of the button: the SDK's interrupt calls this before
 * it posts its own notification. GPIO reads and writes, the spinlock, the ISR-safe post: nothing
 * else. Returns 0: the SDK's onReadable still reaches JavaScript.
 */
static uint8_t IRAM_ATTR stoplineButtonEdge(void *refcon)
{
	StopLineRecord *r = &gStopLine;
	uint8_t post = 0;
	(void)refcon;

	portENTER_CRITICAL_ISR(&gStopLineMux);
	if (r->buttonArmed && r->lineArmed && (gpio_get_level((gpio_num_t)r->buttonPin) == (int)r->buttonLevel)) {
		gpio_set_level((gpio_num_t)r->stopPin, r->stopLevel);
		r->pending |= kTripButton;
		r->trips += 1;
		if (!r->posted)
			r->posted = post = 1;
	}
	portEXIT_CRITICAL_ISR(&gStopLineMux);

	if (post && (0 != modMessagePostToMachineFromISR(r->the, stoplineDeliver, r))) {
		/* The VM's queue is full: the tick takes the bit instead. */
		portENTER_CRITICAL_ISR(&gStopLineMux);
		r->posted = 0;
		r->postFailures += 1;
		portEXIT_CRITICAL_ISR(&gStopLineMux);
	}
	return 0;
}

/* In the esp_timer task: a heartbeat older than the guard time stops the line. */
static void stoplineGuardCheck(void *arg)
{
	StopLineRecord *r = arg;
	int64_t now = esp_timer_get_time();

	portENTER_CRITICAL(&gStopLineMux);
	if (r->lineArmed && r->guardUs && !(r->pending & kTripGuard) && ((now - r->fedAt) > r->guardUs)) {
		gpio_set_level((gpio_num_t)r->stopPin, r->stopLevel);
		r->pending |= kTripGuard;
		r->trips += 1;
	}
	portEXIT_CRITICAL(&gStopLineMux);
}

static void stoplineUnwatch(xsMachine *the, StopLineRecord *r)
{
	portENTER_CRITICAL(&gStopLineMux);
	r->buttonArmed = 0;
	portEXIT_CRITICAL(&gStopLineMux);
	if (r->hasButton) {
		/* A Digital closed meanwhile has no host data left: nothing to unhook. */
		void *data = xsmcGetHostData(r->button);
		if (data)
			r->buttonHooks->doSetOnReadable(data, NULL, NULL);
		xsForget(r->button);
		r->hasButton = 0;
		r->buttonHooks = NULL;
	}
}

static void stoplineStopGuard(StopLineRecord *r)
{
	portENTER_CRITICAL(&gStopLineMux);
	r->guardUs = 0;
	portEXIT_CRITICAL(&gStopLineMux);
	if (r->guardTimer) {
		esp_timer_stop(r->guardTimer);
		esp_timer_delete(r->guardTimer);
		r->guardTimer = NULL;
	}
}

static StopLineRecord *stoplineThis(xsMachine *the)
{
	StopLineRecord *r = xsmcGetHostDataValidate(xsThis, (void *)xs_stopline_destructor);
	if (!r)
		xsUnknownError("closed");
	return r;
}

static uint8_t stoplineLevel(xsMachine *the, xsSlot *slot)
{
	xsIntegerValue level = xsmcToInteger(*slot);
	if ((level != 0) && (level != 1))
		xsRangeError("a level is 0 or 1");
	return (uint8_t)level;
}

static uint8_t stoplinePin(xsMachine *the, xsSlot *slot)
{
	xsIntegerValue pin = xsmcToInteger(*slot);
	if ((pin < 0) || (pin >= GPIO_NUM_MAX))
		xsRangeError("invalid pin");
	return (uint8_t)pin;
}

/* new StopLineNative(): the one stop line of the program, not yet armed. */
void xs_stopline(xsMachine *the)
{
	StopLineRecord *r = &gStopLine;

	if (r->the)
		xsUnknownError("stop line already open");

	memset(r, 0, sizeof(StopLineRecord));
	r->object = xsThis;
	xsRemember(r->object);
	xsmcSetHostData(xsThis, r);
	r->the = the;
}

void xs_stopline_destructor(void *data)
{
	StopLineRecord *r = data;
	if (!r)
		return;
	/* Without the machine the hook cannot be removed from the Digital; disarm it instead. */
	portENTER_CRITICAL(&gStopLineMux);
	r->buttonArmed = 0;
	r->lineArmed = 0;
	portEXIT_CRITICAL(&gStopLineMux);
	stoplineStopGuard(r);
	r->the = NULL;
}

/* close(): unhooks the button, stops the guard, leaves the line where it is. */
void xs_stopline_close(xsMachine *the)
{
	StopLineRecord *r = xsmcGetHostDataValidate(xsThis, (void *)xs_stopline_destructor);
	if (!r)
		return;
	stoplineUnwatch(the, r);
	stoplineStopGuard(r);
	portENTER_CRITICAL(&gStopLineMux);
	r->lineArmed = 0;
	portEXIT_CRITICAL(&gStopLineMux);
	if (r->hasOnTrip) {
		xsForget(r->onTrip);
		r->hasOnTrip = 0;
	}
	xsForget(r->object);
	xsmcSetHostData(xsThis, NULL);
	r->the = NULL;
}

/*
 * line(stopPin, stopLevel, onTrip): the output the native paths drive (already opened as an
 * output at its stop level by JavaScript) and the function the interrupt's message calls.
 */
void xs_stopline_line(xsMachine *the)
{
	StopLineRecord *r = stoplineThis(the);
	uint8_t pin = stoplinePin(the, &xsArg(0));
	uint8_t level = stoplineLevel(the, &xsArg(1));

	if (!xsmcIsCallable(xsArg(2)))
		xsTypeError("onTrip must be a function");
	if (r->hasOnTrip)
		xsForget(r->onTrip);
	r->onTrip = xsArg(2);
	xsRemember(r->onTrip);
	r->hasOnTrip = 1;

	portENTER_CRITICAL(&gStopLineMux);
	r->stopPin = pin;
	r->stopLevel = level;
	r->lineArmed = 1;
	portEXIT_CRITICAL(&gStopLineMux);
}

/*
 * watch(button, buttonPin, pressedLevel): hooks the interrupt of `button`, an ECMA-419 Digital
 * input opened with onReadable (the SDK's hook needs one), on `buttonPin`, which reads
 * `pressedLevel` while the button is pressed.
 */
void xs_stopline_watch(xsMachine *the)
{
	StopLineRecord *r = stoplineThis(the);
	xsDigitalBankHostHooks hooks;
	void *data;
	uint8_t pin, level;

	if (!r->lineArmed)
		xsUnknownError("line() first");
#if defined(xsGetHostHooksValidate)
	/* Throws unless the object's hooks carry the digital bank's signature. */
	hooks = (xsDigitalBankHostHooks)xsGetHostHooksValidate(xsArg(0), "digitalbank");
#else
	/* XS headers older than the SDK's (the host check's) have no hook signatures. */
	hooks = (xsDigitalBankHostHooks)xsGetHostHooks(xsArg(0));
#endif
	if (!hooks || !hooks->doSetOnReadable)
		xsTypeError("not a digital input");
	data = xsmcGetHostData(xsArg(0));
	if (!data)
		xsUnknownError("the button is closed");
	pin = stoplinePin(the, &xsArg(1));
	level = stoplineLevel(the, &xsArg(2));

	stoplineUnwatch(the, r);
	portENTER_CRITICAL(&gStopLineMux);
	r->buttonPin = pin;
	r->buttonLevel = level;
	portEXIT_CRITICAL(&gStopLineMux);

	if (!hooks->doSetOnReadable(data, stoplineButtonEdge, r))
		xsUnknownError("the button has no onReadable");
	r->button = xsArg(0);
	xsRemember(r->button);
	r->buttonHooks = hooks;
	r->hasButton = 1;

	portENTER_CRITICAL(&gStopLineMux);
	r->buttonArmed = 1;
	portEXIT_CRITICAL(&gStopLineMux);
}

/*
 * guard(ms): the stop line goes to stop when feed() has not been called for `ms`
 * (kGuardMinMs..kGuardMaxMs); 0 turns the guard off. Starting it counts as a feed.
 */
void xs_stopline_guard(xsMachine *the)
{
	StopLineRecord *r = stoplineThis(the);
	xsIntegerValue ms = xsmcToInteger(xsArg(0));
	int64_t periodUs;

	if (ms && ((ms < kGuardMinMs) || (ms > kGuardMaxMs)))
		xsRangeError("guard time out of range");
	stoplineStopGuard(r);
	if (!ms)
		return;
	if (!r->lineArmed)
		xsUnknownError("line() first");

	{
		esp_timer_create_args_t args;
		memset(&args, 0, sizeof(args));
		args.callback = stoplineGuardCheck;
		args.arg = r;
		args.dispatch_method = ESP_TIMER_TASK;
		args.name = "stopline";
		if (ESP_OK != esp_timer_create(&args, &r->guardTimer)) {
			r->guardTimer = NULL;
			xsUnknownError("no guard timer");
		}
	}

	portENTER_CRITICAL(&gStopLineMux);
	r->fedAt = esp_timer_get_time();
	r->guardUs = (int64_t)ms * 1000;
	portEXIT_CRITICAL(&gStopLineMux);

	periodUs = ((int64_t)ms * 1000) / kGuardChecks;
	if (periodUs < kGuardCheckMinUs)
		periodUs = kGuardCheckMinUs;
	if (ESP_OK != esp_timer_start_periodic(r->guardTimer, (uint64_t)periodUs)) {
		stoplineStopGuard(r);
		xsUnknownError("guard timer did not start");
	}
}

/* feed(): the heartbeat, once per tick. */
void xs_stopline_feed(xsMachine *the)
{
	StopLineRecord *r = stoplineThis(the);
	int64_t now = esp_timer_get_time();
	portENTER_CRITICAL(&gStopLineMux);
	r->fedAt = now;
	portEXIT_CRITICAL(&gStopLineMux);
}

/* take() → the trip bits since the last take (TripBit), cleared. */
void xs_stopline_take(xsMachine *the)
{
	StopLineRecord *r = stoplineThis(the);
	uint8_t bits;
	portENTER_CRITICAL(&gStopLineMux);
	bits = r->pending;
	r->pending = 0;
	portEXIT_CRITICAL(&gStopLineMux);
	xsmcSetInteger(xsResult, bits);
}

/*
 * release() → true when the line now reads run; false, the line left at stop, while a trip is
 * pending (take() it, and latch, first). Without line() there is nothing to refuse with, so the
 * release is refused too: the caller writes no level of its own.
 */
void xs_stopline_release(xsMachine *the)
{
	StopLineRecord *r = stoplineThis(the);
	uint8_t done = 0;
	portENTER_CRITICAL(&gStopLineMux);
	if (r->lineArmed && !r->pending) {
		gpio_set_level((gpio_num_t)r->stopPin, r->stopLevel ? 0 : 1);
		done = 1;
	}
	else
		r->refusedReleases += 1;
	portEXIT_CRITICAL(&gStopLineMux);
	xsmcSetBoolean(xsResult, done);
}

/* trips() → how often a native path drove the line to stop. */
void xs_stopline_trips(xsMachine *the)
{
	StopLineRecord *r = stoplineThis(the);
	uint32_t n;
	portENTER_CRITICAL(&gStopLineMux);
	n = r->trips;
	portEXIT_CRITICAL(&gStopLineMux);
	xsmcSetNumber(xsResult, (xsNumberValue)n);
}

/* postFailures() → interrupt messages the VM's queue refused (the tick took those trips). */
void xs_stopline_post_failures(xsMachine *the)
{
	StopLineRecord *r = stoplineThis(the);
	uint32_t n;
	portENTER_CRITICAL(&gStopLineMux);
	n = r->postFailures;
	portEXIT_CRITICAL(&gStopLineMux);
	xsmcSetNumber(xsResult, (xsNumberValue)n);
}

/*
 * watchdogSeconds() → the task watchdog's timeout when this build has it initialised at start-up
 * with a panic (a reset) on timeout; 0 when the build's sdkconfig left it off. The SDK's main
 * task subscribes itself and its message loop feeds it whenever the watchdog is compiled in.
 */
void xs_stopline_watchdog_seconds(xsMachine *the)
{
#if defined(CONFIG_ESP_TASK_WDT_EN) && CONFIG_ESP_TASK_WDT_EN && defined(CONFIG_ESP_TASK_WDT_INIT) && CONFIG_ESP_TASK_WDT_INIT && defined(CONFIG_ESP_TASK_WDT_PANIC) && CONFIG_ESP_TASK_WDT_PANIC
	xsmcSetInteger(xsResult, CONFIG_ESP_TASK_WDT_TIMEOUT_S);
#else
	xsmcSetInteger(xsResult, 0);
#endif
}

/* resetCause() → why the chip last reset, as ResetCause groups ESP-IDF's reasons. */
void xs_stopline_reset_cause(xsMachine *the)
{
	int cause;
	(void)stoplineThis(the);
	switch (esp_reset_reason()) {
		case ESP_RST_POWERON:
			cause = kResetPowerOn;
			break;
		case ESP_RST_SW:
			cause = kResetSoftware;
			break;
		case ESP_RST_PANIC:
		case ESP_RST_CPU_LOCKUP:
		case ESP_RST_EFUSE:
			cause = kResetPanic;
			break;
		case ESP_RST_INT_WDT:
		case ESP_RST_TASK_WDT:
		case ESP_RST_WDT:
			cause = kResetWatchdog;
			break;
		case ESP_RST_BROWNOUT:
		case ESP_RST_PWR_GLITCH:
			cause = kResetBrownout;
			break;
		case ESP_RST_EXT:
		case ESP_RST_DEEPSLEEP:
		case ESP_RST_SDIO:
		case ESP_RST_USB:
		case ESP_RST_JTAG:
			cause = kResetExternal;
			break;
		default:
			cause = kResetUnknown;
			break;
	}
	xsmcSetInteger(xsResult, cause);
}
