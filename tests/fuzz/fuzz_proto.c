/*
 * libFuzzer harness for what a hostile peer controls: the byte stream
 * through the line framer, and each line through the decoder as sent by
 * either peer.
 *
 * Invariants checked: a rejected line yields a one-line cause; a decoded
 * message re-encodes to a line that decodes again and re-encodes to the
 * very same bytes; the framer hands on lines of at most PROTO_MAX_LINE
 * bytes without newlines and gives the same events however the stream is
 * cut and whenever the callback pauses it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define MAX_EVENTS	256

static void
check_cause(const char *err, size_t errlen)
{
	size_t	i, n = strnlen(err, errlen);

	if (n == 0 || n == errlen)
		abort();
	for (i = 0; i < n; i++)
		if ((unsigned char)err[i] < 0x20 || err[i] == 0x7f)
			abort();
}

static void
decode_one(const char *line, size_t len, enum proto_peer from)
{
	struct proto_msg	 msg, again;
	char			 err[PROTO_MAX_ERROR];
	char			 a[PROTO_MAX_LINE + 2], b[PROTO_MAX_LINE + 2];
	uint64_t		 seq;
	int			 na, nb;

	memset(err, 0, sizeof err);
	if (proto_decode(line, len, from, &msg, &seq, err, sizeof err) != 0) {
		check_cause(err, sizeof err);
		if (seq > PROTO_MAX_SEQ)
			abort();
		proto_msg_clear(&msg);
		return;
	}
	/* Re-encoding may legitimately grow past the limit ("1e2" -> "100.0"). */
	na = proto_encode(&msg, a, sizeof a);
	proto_msg_clear(&msg);
	if (na < 0)
		return;
	if ((size_t)na > PROTO_MAX_LINE + 1 || a[na - 1] != '\n')
		abort();
	if (proto_decode(a, (size_t)na - 1, from, &again, NULL, err,
	    sizeof err) != 0)
		abort();
	nb = proto_encode(&again, b, sizeof b);
	proto_msg_clear(&again);
	if (nb != na || memcmp(a, b, (size_t)na) != 0)
		abort();
}

struct events {
	unsigned int	n;
	uint32_t	hash[MAX_EVENTS];	/* of each line; 0 for overlong */
	size_t		len[MAX_EVENTS];
	unsigned int	pause_every;		/* stop after this many; 0 never */
	int		decode;
};

static uint32_t
fnv1a(const char *s, size_t len)
{
	uint32_t	h = 2166136261u;
	size_t		i;

	for (i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h | 1;
}

static int
on_event(void *arg, enum proto_frame_event ev, const char *line, size_t len)
{
	struct events	*e = arg;

	if (ev == PROTO_FRAME_LINE) {
		if (len == 0 || len > PROTO_MAX_LINE ||
		    memchr(line, '\n', len) != NULL || line[len] != '\0')
			abort();
		if (e->decode) {
			decode_one(line, len, PROTO_FROM_HOST);
			decode_one(line, len, PROTO_FROM_GUEST);
		}
	}
	if (e->n < MAX_EVENTS) {
		e->hash[e->n] = ev == PROTO_FRAME_LINE ? fnv1a(line, len) : 0;
		e->len[e->n] = len;
	}
	e->n++;
	return e->pause_every != 0 && e->n % e->pause_every == 0;
}

/*
 * Feed data in pieces of the sizes given by 'cut', resuming after pauses.
 * The framer is made once and reset per input, as a reconnect does: fresh
 * 4 KiB allocations per run only slow ASan down.
 */
static void
feed_cut(const char *data, size_t size, const uint8_t *cut, size_t ncut,
    struct events *e)
{
	static struct proto_framer	*fr;
	size_t				 off = 0, piece, n, k = 0;
	unsigned int			 spins = 0;

	if (fr == NULL)
		fr = proto_framer_new();
	proto_framer_reset(fr);
	while (off < size) {
		piece = ncut > 0 ? 1 + cut[k++ % ncut] * 37u : size;
		if (piece > size - off)
			piece = size - off;
		n = proto_framer_feed(fr, data + off, piece, on_event, e);
		if (n > piece || (n == 0 && ++spins > size + 16))
			abort();
		off += n;
	}
	if (proto_framer_pending(fr) > PROTO_MAX_LINE)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct events	whole = { .decode = 1 }, cut = { .pause_every = 3 };
	size_t		i, ncut;

	/* The input as one line, without the framer. */
	decode_one((const char *)data, size, PROTO_FROM_HOST);
	decode_one((const char *)data, size, PROTO_FROM_GUEST);

	/* The input as a stream: whole, then cut by its own first bytes. */
	feed_cut((const char *)data, size, NULL, 0, &whole);
	ncut = size < 8 ? size : 8;
	feed_cut((const char *)data, size, data, ncut, &cut);
	if (whole.n != cut.n)
		abort();
	for (i = 0; i < whole.n && i < MAX_EVENTS; i++)
		if (whole.hash[i] != cut.hash[i] || whole.len[i] != cut.len[i])
			abort();
	return 0;
}
