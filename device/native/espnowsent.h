/*
 * The ESP-NOW binding's commonest courses in C. A send status: what bindings/espnow/link.ts
 * EspNowBinding.sent does in script when the radio reports that a unicast datagram went, and the scheduler's next
 * datagram (EspNowBinding.pump) when it is a plain one holding one frame that is not critical,
 * step for step: the link's send-status latency and meter, the round-robin pick, the header, the
 * radio's send, the commit of the stream's number, the watermark's take and the loss detector's
 * `sentInFlight` (bindings/detector.ts) in its first case. Every rarer course is the script's:
 * a status that failed, for a broadcast datagram or a link gone, or that finds the link's loss
 * detector due goes to the script's `sent` whole (`sentInScript`) before anything is written; a
 * datagram to schedule that is urgent, broadcast, resent or packs more than one frame goes to
 * the script's `pump` after the status's own work; a watermark or loss detector with something
 * to judge is called in script. And a link's send (EspNowLink.send) of a frame that joins its
 * empty queue while the radio is busy: the frame written where its datagram will be sent from,
 * the queue's numbers, the scheduler's mask and the watermark's fast test; any other frame is
 * the script's send whole.
 *
 * Plain C with no XS: every property is read, written and called through EspSentCalls, which
 * ./espnowsent.c makes XS property reads and calls and the host (bench/native/native-host.c) a
 * store of numbers with the calls recorded, to check this against its script model
 * (bench/espnow-sent.ts, which the device bench prices and the tests hold to the script).
 */
#ifndef ESPNOWSENT_H
#define ESPNOWSENT_H

#include <math.h>
#include <stdint.h>

/* The objects the course reaches, each held while it runs. */
enum {
	kEsBinding,  /* the EspNowBinding (`this`) */
	kEsTx,       /* its link in flight (txLink) */
	kEsTxLoss,   /* that link's loss detector */
	kEsTxCols,   /* that link's numbers (cols: a Float64Array) */
	kEsOpen,     /* the open links (an Array) */
	kEsLink,     /* the link scheduled next */
	kEsEgress,   /* its egress (bindings/espnow/datagram.ts Egress) */
	kEsQueue,    /* its FrameQueue */
	kEsLens,     /* the queue's frame lengths (Uint16Array) */
	kEsTags,     /* the queue's frame tags (Uint32Array) */
	kEsDatagram, /* the queue's datagram area (Uint8Array) */
	kEsLevel,    /* the link's watermark detector (queueLevel) */
	kEsLoss,     /* the link's loss detector */
	kEsSeqs,     /* the loss detector's numbers of datagrams (Uint16Array) */
	kEsTimes,    /* the loss detector's times (Float64Array) */
	kEsCounters, /* the binding's EspNowCounters */
	kEsMem,      /* the queue's bytes (a Uint8Array) */
	kEsFrame,    /* the frame a link is handed (a Uint8Array) */
	kEsScratch,  /* a property looked at only for what it is (an object or not) */
	kEsObjects
};

/* The properties, by name in kEsNames (./espnowsent.c looks each up once). */
enum {
	fTxBusy, fRadioWait, fDry, fTxLink, fTxAt, fTxLen, fUrgentMask, fQueuedMask, fRrAfter, fSlots, fOpen, fWakeAt, fCounters,
	fClosed, fMac, fLoss, fCols, fIndex, fEgress, fQueueLevel, fLvl, fDirty, fMovedAt,
	fQuietUntil, fLatest, fSeqs, fTimes, fTimeoutMs, fExpiry, fPendingLo, fPendingHi, fOpenLo, fOpenHi, fCalmUntil, fJudgedAt,
	fHot, fSeq, fCommitted, fCommittedGen, fCommittedSeq, fQueue,
	fPre, fNFrames, fHeadFrame, fLens, fTags, fStaged, fPacked, fDatagram, fNBytes, fCapacityBytes, fHead, fTail, fGapAt,
	fRadioNoMem, fRadioRefused, fDatagramsSent, fLength,
	fOwner, fSegment, fCapacityFrames, fMem,
	kEsFields
};

#define ES_NAMES \
	"txBusy", "radioWait", "dry", "txLink", "txAt", "txLen", "urgentMask", "queuedMask", "rrAfter", "slots", "open", "wakeAt", "counters", \
	"closed", "mac", "loss", "cols", "index", "egress", "queueLevel", "lvl", "dirty", "movedAt", \
	"quietUntil", "latest", "seqs", "times", "timeoutMs", "expiry", "pendingLo", "pendingHi", "openLo", "openHi", "calmUntil", "judgedAt", \
	"hot", "seq", "committed", "committedGen", "committedSeq", "queue", \
	"pre", "nFrames", "headFrame", "lens", "tags", "staged", "packed", "datagram", "nBytes", "capacityBytes", "head", "tail", "gapAt", \
	"radioNoMem", "radioRefused", "datagramsSent", "length", \
	"owner", "segment", "capacityFrames", "mem"

/* The calls into script. */
enum {
	kEsNow,        /* binding.clock.now() */
	kEsRadioSend,  /* binding.radio.send(a: mac, queue.datagram, b: length): the status */
	kEsSendAgain,  /* binding.sendAgain(a: mac, queue.datagram, b: length): the status */
	kEsDrained,    /* queueLevel.drained(a, b, d): the level */
	kEsJudge,      /* loss.judge(a): the level */
	kEsSentInFlight, /* loss.sentInFlight(a: seq, b: now): the level */
	kEsPump,       /* binding.pump(a: the instant) */
	kEsInScript,   /* binding.sentInScript(a: mac, b: ok, d: the instant read, NaN: none) */
	kEsPumpLater,  /* binding.pump(): the clock's instant after the radio took the datagram */
	kEsSendInScript, /* link.sendInScript(the frame, a: tag, b: seq): 1 when the link took it */
	kEsQueued,     /* queueLevel.queued(a: ratio, b: now): the level */
	kEsCalls
};

typedef struct EspSentCalls EspSentCalls;
struct EspSentCalls {
	/* Object `to` becomes object `from`'s property `f`: 1 when that is an object, else 0. */
	int (*load)(EspSentCalls *c, int to, int from, int f);
	/* Object `to` becomes element `i` of the array `from`. */
	void (*loadAt)(EspSentCalls *c, int to, int from, uint32_t i);
	/* A property as a number (a boolean as 1 or 0). */
	double (*get)(EspSentCalls *c, int o, int f);
	void (*set)(EspSentCalls *c, int o, int f, double v);
	void (*setBool)(EspSentCalls *c, int o, int f, int v);
	/* Property `f` of `o` becomes object `ref`, or null for -1. */
	void (*setRef)(EspSentCalls *c, int o, int f, int ref);
	/* Element `i` of the typed array `o`. */
	double (*at)(EspSentCalls *c, int o, uint32_t i);
	void (*setAt)(EspSentCalls *c, int o, uint32_t i, double v);
	/* Byte `i` of the Uint8Array `o` (written where it lies: no property access). */
	void (*setByte)(EspSentCalls *c, int o, uint32_t i, uint8_t v);
	/* The bytes of the Uint8Array `o` (its length, without a property access). */
	uint32_t (*bytes)(EspSentCalls *c, int o);
	/* The bytes of the Uint8Array `from` into `to` from byte `at` (where they lie: a copy of memory); 0 when they do not fit. */
	int (*copy)(EspSentCalls *c, int to, uint32_t at, int from);
	/* A call into script (kEsNow…): its result as a number. */
	double (*call)(EspSentCalls *c, int what, double a, double b, double d);
};

/* bindings/espnow/link.ts and datagram.ts, bindings/detector.ts, hub/constants.ts. */
#define kEsOk 0
#define kEsBusy 1
#define kEsNotFound 2
#define kEsNoMem 5
#define kEsHeaderBytes 3
#define kEsHeaderByte 0x10
#define kEsCritical 0x80
#define kEsCommittedPlain 0
#define kEsRecovered 0.2
#define kEsRttGain 0.125
#define kEsMeterBuckets 10
#define kEsMeterBucketMs 100
#define kEsSeqMask 0xffff
#define kEsRingMask 63
#define kEsMaxFrame 246
/* A link's numbers (bindings/espnow/link.ts COL_METER, COL_RTT): after the loss detector's 94 and the duplicate window's 32. */
#define kEsColMeter 126
#define kEsColRtt 146

/* A number's 32 bits as script takes them (ToUint32: NaN and the infinities are 0). */
static inline uint32_t esU32(double d)
{
	if (!isfinite(d))
		return 0;
	d = fmod(trunc(d), 4294967296.0);
	if (d < 0)
		d += 4294967296.0;
	return (uint32_t)d;
}

/* A 32-bit mask as script keeps it: the signed value of its bits. */
static inline double esMask(uint32_t m)
{
	return m & 0x80000000u ? (double)m - 4294967296.0 : (double)m;
}

/* The lowest set bit's place (m not 0). */
static inline uint32_t esLowest(uint32_t m)
{
	uint32_t n = 0;
	while (!(m & 1)) {
		m >>= 1;
		n++;
	}
	return n;
}

/* `fed()`, inline, for a detector now at `level`, quiet until `quiet`: the link's to judge again, or the binding's wake nearer. */
static inline void esFed(EspSentCalls *c, double level, double quiet)
{
	if (level != c->get(c, kEsLink, fLvl)) {
		c->setBool(c, kEsLink, fDirty, 1);
		c->set(c, kEsBinding, fWakeAt, -INFINITY);
	}
	else if (quiet < c->get(c, kEsBinding, fWakeAt))
		c->set(c, kEsBinding, fWakeAt, quiet);
}

/*
 * EspNowBinding.pump(now) for a plain datagram of one frame that is not critical, after a status
 * at `now` (the radio free: txBusy and radioWait false, dry read false); any other datagram goes
 * to the script's pump before anything is written.
 */
static inline void esPump(EspSentCalls *c, double now)
{
	uint32_t urgent, m, pick, slots, sole, n, h, len, seq, shift;
	double status, found, level, t, e, after, mac;
	urgent = esU32(c->get(c, kEsBinding, fUrgentMask));
	if (urgent != 0) {
		c->call(c, kEsPump, now, 0, 0);
		return;
	}
	m = esU32(c->get(c, kEsBinding, fQueuedMask));
	if (m == 0) {
		c->setBool(c, kEsBinding, fDry, 1);
		return;
	}
	/* Whether the stream served is the only one with anything; the turn passes on from the last served. */
	sole = (m & (m - 1)) == 0;
	slots = esU32(c->get(c, kEsBinding, fSlots));
	after = c->get(c, kEsBinding, fRrAfter);
	shift = after < slots ? esU32(after + 1) : slots;
	pick = m & (0xffffffffu << (shift & 31));
	if (pick != 0)
		m = pick;
	pick = esLowest(m);
	if (pick >= slots) {
		c->call(c, kEsPump, now, 0, 0);
		return;
	}
	/* The open link in that slot (the open links are in slot order, none later than its slot). */
	c->load(c, kEsOpen, kEsBinding, fOpen);
	n = esU32(c->get(c, kEsOpen, fLength));
	if (n == 0) {
		c->call(c, kEsPump, now, 0, 0);
		return;
	}
	m = pick < n ? pick : n - 1;
	c->loadAt(c, kEsLink, kEsOpen, m);
	while (esU32(c->get(c, kEsLink, fIndex)) != pick && m > 0)
		c->loadAt(c, kEsLink, kEsOpen, --m);
	c->load(c, kEsEgress, kEsLink, fEgress);
	c->load(c, kEsQueue, kEsEgress, fQueue);
	if (c->get(c, kEsEgress, fHot) != 0 || c->get(c, kEsQueue, fPre) == 0 || c->get(c, kEsQueue, fNFrames) != 1) {
		c->call(c, kEsPump, now, 0, 0);
		return;
	}
	/* FrameQueue.packInto's first case: the one frame lies in the datagram area already. */
	h = esU32(c->get(c, kEsQueue, fHeadFrame));
	c->load(c, kEsTags, kEsQueue, fTags);
	if ((esU32(c->at(c, kEsTags, h)) & kEsCritical) != 0) {
		c->call(c, kEsPump, now, 0, 0);
		return;
	}
	c->set(c, kEsBinding, fRrAfter, pick);
	c->load(c, kEsLens, kEsQueue, fLens);
	len = kEsHeaderBytes + 1 + esU32(c->at(c, kEsLens, h));
	c->set(c, kEsQueue, fStaged, 0);
	c->set(c, kEsQueue, fPacked, 1);
	/* The header (writeHeader's three bytes): plain traffic is numbered from the stream's next. */
	seq = esU32(c->get(c, kEsEgress, fSeq));
	c->load(c, kEsDatagram, kEsQueue, fDatagram);
	c->setByte(c, kEsDatagram, 0, kEsHeaderByte);
	c->setByte(c, kEsDatagram, 1, (uint8_t)((seq >> 8) & 0xff));
	c->setByte(c, kEsDatagram, 2, (uint8_t)(seq & 0xff));
	mac = c->get(c, kEsLink, fMac);
	status = c->call(c, kEsRadioSend, mac, len, 0);
	if (status != kEsOk) {
		if (status == kEsNotFound)
			status = c->call(c, kEsSendAgain, mac, len, 0);
		if (status == kEsBusy || status == kEsNoMem) {
			if (status == kEsNoMem) {
				c->load(c, kEsCounters, kEsBinding, fCounters);
				c->set(c, kEsCounters, fRadioNoMem, c->get(c, kEsCounters, fRadioNoMem) + 1);
			}
			c->setBool(c, kEsBinding, fRadioWait, 1);
			return;
		}
	}
	/* §13.5.1: the watermark is the backlog this datagram found queued. */
	found = c->get(c, kEsQueue, fNBytes) / c->get(c, kEsQueue, fCapacityBytes);
	/* Egress.commitQueued, inline: the one frame consumed (the queue empty, as FrameQueue.shift leaves it), the stream's next number taken. */
	c->set(c, kEsEgress, fCommitted, kEsCommittedPlain);
	c->set(c, kEsEgress, fCommittedGen, 0);
	seq = esU32(c->get(c, kEsEgress, fSeq));
	c->set(c, kEsEgress, fCommittedSeq, seq);
	c->set(c, kEsEgress, fSeq, (seq + 1) & kEsSeqMask);
	c->set(c, kEsQueue, fHead, 0);
	c->set(c, kEsQueue, fTail, 0);
	c->set(c, kEsQueue, fHeadFrame, 0);
	c->set(c, kEsQueue, fNFrames, 0);
	c->set(c, kEsQueue, fNBytes, 0);
	c->set(c, kEsQueue, fPacked, 0);
	c->set(c, kEsQueue, fGapAt, -1);
	c->setBool(c, kEsQueue, fPre, 0);
	c->set(c, kEsBinding, fQueuedMask, esMask(esU32(c->get(c, kEsBinding, fQueuedMask)) & ~(1u << pick)));
	/* The only stream with anything took all it had: every stream is idle. */
	if (sole)
		c->setBool(c, kEsBinding, fDry, 1);
	c->set(c, kEsLink, fMovedAt, now);
	c->load(c, kEsLevel, kEsLink, fQueueLevel);
	/* A take that empties a queue the watermark reads below the recovery threshold, before its next deadline, is not told. */
	if (!(found < kEsRecovered && c->get(c, kEsLevel, fQueue) < kEsRecovered && now < c->get(c, kEsLevel, fQuietUntil))) {
		level = c->call(c, kEsDrained, found, 0, now);
		esFed(c, level, c->get(c, kEsLevel, fQuietUntil));
	}
	if (status != kEsOk) {
		c->load(c, kEsCounters, kEsBinding, fCounters);
		c->set(c, kEsCounters, fRadioRefused, c->get(c, kEsCounters, fRadioRefused) + 1);
		return;
	}
	c->setBool(c, kEsBinding, fTxBusy, 1);
	c->set(c, kEsBinding, fTxLen, len);
	c->setRef(c, kEsBinding, fTxLink, kEsLink);
	c->set(c, kEsBinding, fTxAt, now);
	c->load(c, kEsCounters, kEsBinding, fCounters);
	c->set(c, kEsCounters, fDatagramsSent, c->get(c, kEsCounters, fDatagramsSent) + 1);
	/* LossDetector.sentInFlight(seq, now), inline but for a slot whose datagram is still pending (the script's). */
	c->load(c, kEsLoss, kEsLink, fLoss);
	c->load(c, kEsSeqs, kEsLoss, fSeqs);
	{
		uint32_t i = seq & kEsRingMask;
		uint32_t bit = 1u << (i & 31);
		int lo = i < 32;
		int fresh = c->at(c, kEsSeqs, i) != seq;
		if (fresh && (esU32(c->get(c, kEsLoss, lo ? fPendingLo : fPendingHi)) & bit) != 0)
			level = c->call(c, kEsSentInFlight, seq, now, 0);
		else {
			t = c->get(c, kEsLoss, fLatest);
			if (now > t) {
				c->set(c, kEsLoss, fLatest, now);
				t = now;
			}
			if (fresh) {
				c->setAt(c, kEsSeqs, i, seq);
				c->load(c, kEsTimes, kEsLoss, fTimes);
				c->setAt(c, kEsTimes, i, t);
				e = t + c->get(c, kEsLoss, fTimeoutMs);
				if (e < c->get(c, kEsLoss, fExpiry)) {
					c->set(c, kEsLoss, fExpiry, e);
					if (e + 1e-9 < c->get(c, kEsLoss, fQuietUntil))
						c->set(c, kEsLoss, fQuietUntil, e + 1e-9);
				}
				c->set(c, kEsLoss, lo ? fPendingLo : fPendingHi, esMask(esU32(c->get(c, kEsLoss, lo ? fPendingLo : fPendingHi)) | bit));
				c->set(c, kEsLoss, lo ? fOpenLo : fOpenHi, esMask(esU32(c->get(c, kEsLoss, lo ? fOpenLo : fOpenHi)) | bit));
			}
			/* Nothing resolved, so the rate stands: judge's first case, without the call. */
			if (t < c->get(c, kEsLoss, fCalmUntil) && t <= c->get(c, kEsLoss, fExpiry)) {
				c->set(c, kEsLoss, fJudgedAt, t);
				level = c->get(c, kEsLoss, fLvl);
			}
			else
				level = c->call(c, kEsJudge, t, 0, 0);
		}
	}
	esFed(c, level, c->get(c, kEsLoss, fQuietUntil));
}

/*
 * EspNowBinding.sent(mac, ok): a status that a unicast datagram went, at a time of 0 or later,
 * its link open and its loss detector not due, here; any other to the script's whole.
 */
static inline void espnowSent(EspSentCalls *c, double mac, int ok)
{
	double now, txAt, rtt, id, bucket;
	uint32_t b;
	if (!ok || c->get(c, kEsBinding, fTxBusy) == 0 || !c->load(c, kEsTx, kEsBinding, fTxLink) || c->get(c, kEsTx, fClosed) != 0 || c->get(c, kEsTx, fMac) != mac) {
		c->call(c, kEsInScript, mac, ok, NAN);
		return;
	}
	now = c->call(c, kEsNow, 0, 0, 0);
	c->load(c, kEsTxLoss, kEsTx, fLoss);
	/* The datagram in flight is the link's last committed: a status that it went changes nothing the detector judges until its next deadline. The script's own, at the instant read, otherwise. */
	if (!(now >= 0 && now < c->get(c, kEsTxLoss, fQuietUntil))) {
		c->call(c, kEsInScript, mac, ok, now);
		return;
	}
	c->setBool(c, kEsBinding, fRadioWait, 0);
	c->setBool(c, kEsBinding, fTxBusy, 0);
	c->setRef(c, kEsBinding, fTxLink, -1);
	c->load(c, kEsTxCols, kEsTx, fCols);
	/* The send-status latency, smoothed (RTT_GAIN). */
	txAt = c->get(c, kEsBinding, fTxAt);
	rtt = c->at(c, kEsTxCols, kEsColRtt);
	c->setAt(c, kEsTxCols, kEsColRtt, rtt == 0 ? now - txAt : rtt + kEsRttGain * (now - txAt - rtt));
	/* meterAdd, inline: the payload delivered in the bucket of `now`. */
	id = floor(now / kEsMeterBucketMs);
	b = kEsColMeter + (uint32_t)fmod(id, kEsMeterBuckets);
	bucket = c->at(c, kEsTxCols, b);
	if (bucket != id && bucket < id) {
		c->setAt(c, kEsTxCols, b, id);
		c->setAt(c, kEsTxCols, b + kEsMeterBuckets, 0);
		bucket = id;
	}
	if (bucket == id)
		c->setAt(c, kEsTxCols, b + kEsMeterBuckets, c->at(c, kEsTxCols, b + kEsMeterBuckets) + (c->get(c, kEsBinding, fTxLen) - kEsHeaderBytes));
	if (c->get(c, kEsBinding, fDry) == 0)
		esPump(c, now);
}

/*
 * EspNowLink.send(frame, tag, seq) (kEsLink: the link, kEsFrame: the frame) for a frame the radio
 * cannot take at once that joins its link's empty queue: written where packing its datagram
 * would copy it to, as the script does; any other frame (the link closed, a broadcast segment,
 * the radio free, a queue not empty) to the script's send whole. 1 when the link took it.
 */
static inline int espnowSend(EspSentCalls *c, double tag, double seq)
{
	uint32_t length, cap, bit;
	double now, r;
	length = c->bytes(c, kEsFrame);
	if (c->get(c, kEsLink, fClosed) != 0 || length > kEsMaxFrame || length == 0)
		return c->call(c, kEsSendInScript, tag, seq, 0) != 0;
	c->load(c, kEsBinding, kEsLink, fOwner);
	c->load(c, kEsEgress, kEsLink, fEgress);
	c->load(c, kEsQueue, kEsEgress, fQueue);
	/* A broadcast segment, or every stream idle and the radio free (the frame goes straight out): the script's. */
	if (c->load(c, kEsScratch, kEsBinding, fSegment) || (c->get(c, kEsBinding, fDry) != 0 && c->get(c, kEsBinding, fTxBusy) == 0 && c->get(c, kEsBinding, fRadioWait) == 0))
		return c->call(c, kEsSendInScript, tag, seq, 0) != 0;
	cap = esU32(c->get(c, kEsQueue, fCapacityBytes));
	if (c->get(c, kEsQueue, fNFrames) != 0 || c->get(c, kEsEgress, fHot) != 0 || c->get(c, kEsEgress, fCommitted) != kEsCommittedPlain || length > cap || c->get(c, kEsQueue, fCapacityFrames) == 0)
		return c->call(c, kEsSendInScript, tag, seq, 0) != 0;
	/* FrameQueue.pushPacked, inline: into an empty queue of a stream whose datagram area is free, the frame is written where packing its datagram would copy it to (a queue's bytes always have that room). */
	c->load(c, kEsMem, kEsQueue, fMem);
	if (c->bytes(c, kEsMem) < cap + kEsHeaderBytes + 1 + length)
		return c->call(c, kEsSendInScript, tag, seq, 0) != 0;
	now = c->call(c, kEsNow, 0, 0, 0);
	c->setByte(c, kEsMem, cap + kEsHeaderBytes, (uint8_t)length);
	c->copy(c, kEsMem, cap + kEsHeaderBytes + 1, kEsFrame);
	c->set(c, kEsQueue, fHead, 0);
	c->load(c, kEsLens, kEsQueue, fLens);
	c->setAt(c, kEsLens, 0, length);
	c->load(c, kEsTags, kEsQueue, fTags);
	c->setAt(c, kEsTags, 0, tag);
	c->set(c, kEsQueue, fNFrames, 1);
	c->set(c, kEsQueue, fNBytes, length);
	c->set(c, kEsQueue, fTail, length);
	c->setBool(c, kEsQueue, fPre, 1);
	c->set(c, kEsLink, fMovedAt, now);
	bit = 1u << (esU32(c->get(c, kEsLink, fIndex)) & 31);
	c->set(c, kEsBinding, fQueuedMask, esMask(esU32(c->get(c, kEsBinding, fQueuedMask)) | bit));
	/* fed(), inline: a queue below the recovery threshold, before and after, before the watermark's next deadline, is not told. */
	r = (double)length / cap;
	c->load(c, kEsLevel, kEsLink, fQueueLevel);
	if (!(r < kEsRecovered && c->get(c, kEsLevel, fQueue) < kEsRecovered && now < c->get(c, kEsLevel, fQuietUntil))) {
		if (c->call(c, kEsQueued, r, now, 0) != c->get(c, kEsLink, fLvl)) {
			c->setBool(c, kEsLink, fDirty, 1);
			c->set(c, kEsBinding, fWakeAt, -INFINITY);
		}
		else if (c->get(c, kEsLevel, fQuietUntil) < c->get(c, kEsBinding, fWakeAt))
			c->set(c, kEsBinding, fWakeAt, c->get(c, kEsLevel, fQuietUntil));
	}
	c->setBool(c, kEsBinding, fDry, 0);
	if (c->get(c, kEsBinding, fTxBusy) == 0 && c->get(c, kEsBinding, fRadioWait) == 0)
		c->call(c, kEsPumpLater, 0, 0, 0);
	return 1;
}

#endif
