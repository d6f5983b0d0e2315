/*
 * Line framer: splits a byte stream into lines of at most PROTO_MAX_LINE
 * bytes in a fixed buffer.
 *
 * A line that grows past the limit is reported once, as soon as it does
 * (the peer may never send its newline), and then everything up to its
 * newline is dropped: a reader that only capped its buffer would hand on
 * the overlong line's tail as a line of its own.
 *
 * Empty lines are skipped, not reported: the host writes a lone newline
 * before each hello to end whatever partial line the guest had buffered
 * (DESIGN.md section 5, resync), and that is not a message.
 */
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "util.h"

struct proto_framer {
	size_t	len;		/* bytes of the partial line in buf */
	bool	discarding;	/* inside an overlong line, until '\n' */
	char	buf[PROTO_MAX_LINE + 1];	/* + NUL for the callback */
};

struct proto_framer *
proto_framer_new(void)
{
	return xcalloc(1, sizeof(struct proto_framer));
}

void
proto_framer_free(struct proto_framer *fr)
{
	free(fr);
}

void
proto_framer_reset(struct proto_framer *fr)
{
	fr->len = 0;
	fr->discarding = false;
}

size_t
proto_framer_pending(const struct proto_framer *fr)
{
	return fr->len;
}

size_t
proto_framer_feed(struct proto_framer *fr, const char *buf, size_t len,
    proto_frame_cb cb, void *arg)
{
	const char	*nl;
	size_t		 pos = 0, chunk, n;

	while (pos < len) {
		nl = memchr(buf + pos, '\n', len - pos);
		if (fr->discarding) {
			if (nl == NULL)
				return len;
			pos = (size_t)(nl - buf) + 1;
			fr->discarding = false;
			continue;
		}
		chunk = nl != NULL ? (size_t)(nl - (buf + pos)) : len - pos;
		if (fr->len + chunk > PROTO_MAX_LINE) {
			/*
			 * The bytes from pos on stay unconsumed if the callback
			 * stops us; fed again, the discard state drops them.
			 */
			fr->len = 0;
			fr->discarding = true;
			if (cb(arg, PROTO_FRAME_OVERLONG, "", 0) != 0)
				return pos;
			continue;
		}
		memcpy(fr->buf + fr->len, buf + pos, chunk);
		fr->len += chunk;
		pos += chunk;
		if (nl == NULL)
			break;
		pos++;
		n = fr->len;
		fr->len = 0;
		if (n == 0)
			continue;
		fr->buf[n] = '\0';
		if (cb(arg, PROTO_FRAME_LINE, fr->buf, n) != 0)
			return pos;
	}
	return pos;
}
