/*
 * A streaming JSON writer for the api_* views.  json-c builds a tree of
 * hashed objects first, which for 1000 VMs costs more than everything
 * else a request does; the views only ever write, so they write straight
 * into a buffer.
 *
 * Strings are escaped for JSON, and also '<', '>' and '&' (as \u003c ...)
 * so that no JSON body is ever markup; bytes that are not valid UTF-8
 * become U+FFFD; bidi controls and line/paragraph separators are written
 * as \uXXXX (a JSON reader gets them back; a person reading the raw text
 * sees them).  A key of NULL is for array elements and the top level.
 */
#ifndef PREFCPU_API_JW_H
#define PREFCPU_API_JW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "cpuset.h"

#define JW_MAX_DEPTH	16

struct jw {
	FILE		*f;
	char		*buf;
	size_t		 len;
	unsigned int	 depth;
	bool		 first[JW_MAX_DEPTH];
};

void	jw_init(struct jw *);
/* The text plus a newline, in a new string (free() it); len without NUL. */
char	*jw_finish(struct jw *, size_t *len);
/*
 * The text written since jw_init() or the last jw_take() (free() it), for
 * an answer sent in pieces; the writer goes on where it was.
 */
char	*jw_take(struct jw *, size_t *len);
/* Bytes written since jw_init() or the last jw_take(). */
size_t	 jw_pending(struct jw *);
/* Drop a writer that will not be finished. */
void	 jw_discard(struct jw *);

void	jw_obj(struct jw *, const char *key);
void	jw_obj_end(struct jw *);
void	jw_arr(struct jw *, const char *key);
void	jw_arr_end(struct jw *);

/* s NULL writes null. */
void	jw_str(struct jw *, const char *key, const char *s);
void	jw_u64(struct jw *, const char *key, uint64_t);
void	jw_int(struct jw *, const char *key, int64_t);
/* "%.6g"; NaN and infinities write null. */
void	jw_dbl(struct jw *, const char *key, double);
void	jw_bool(struct jw *, const char *key, bool);
void	jw_null(struct jw *, const char *key);
void	jw_cpuset(struct jw *, const char *key, const struct cpuset *);

#endif
