/* Record files: "KIND KEY VALUE" lines with percent-encoded fields. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "state.h"
#include "util.h"

#define STATE_MAGIC	"prefcpu-guestd-records 1"
#define STATE_MAX_SIZE	(4 * 1024 * 1024)	/* bytes; far above real use */

void
state_init(struct state *st)
{
	st->recs = NULL;
	st->n = 0;
}

void
state_free(struct state *st)
{
	size_t	i;

	for (i = 0; i < st->n; i++) {
		free(st->recs[i].kind);
		free(st->recs[i].key);
		free(st->recs[i].val);
	}
	free(st->recs);
	state_init(st);
}

void
state_add(struct state *st, const char *kind, const char *key,
    const char *val)
{
	struct state_rec	*r;

	st->recs = xreallocarray(st->recs, st->n + 1, sizeof(*st->recs));
	r = &st->recs[st->n++];
	r->kind = xstrdup(kind);
	r->key = xstrdup(key);
	r->val = xstrdup(val);
}

void
state_addf(struct state *st, const char *kind, const char *key,
    const char *fmt, ...)
{
	va_list	 ap;
	char	*val;

	va_start(ap, fmt);
	if (vasprintf(&val, fmt, ap) == -1)
		abort();
	va_end(ap);
	state_add(st, kind, key, val);
	free(val);
}

const char *
state_get(const struct state *st, const char *kind, const char *key)
{
	size_t	i;

	for (i = 0; i < st->n; i++) {
		if (strcmp(st->recs[i].kind, kind) == 0 &&
		    strcmp(st->recs[i].key, key) == 0)
			return st->recs[i].val;
	}
	return NULL;
}

/* An empty field is "-", so a literal "-" is encoded. */
static void
state_encode(FILE *f, const char *s)
{
	const unsigned char	*p;

	if (*s == '\0') {
		fputc('-', f);
		return;
	}
	for (p = (const unsigned char *)s; *p != '\0'; p++) {
		if (*p <= ' ' || *p >= 0x7f || *p == '%' ||
		    (*p == '-' && p == (const unsigned char *)s))
			fprintf(f, "%%%02X", *p);
		else
			fputc(*p, f);
	}
}

char *
state_format(const struct state *st)
{
	char	*buf = NULL;
	size_t	 len = 0, i;
	FILE	*f;

	if ((f = open_memstream(&buf, &len)) == NULL)
		abort();
	fprintf(f, "%s\n", STATE_MAGIC);
	for (i = 0; i < st->n; i++) {
		state_encode(f, st->recs[i].kind);
		fputc(' ', f);
		state_encode(f, st->recs[i].key);
		fputc(' ', f);
		state_encode(f, st->recs[i].val);
		fputc('\n', f);
	}
	if (fclose(f) != 0)
		abort();
	return buf;
}

static int
state_hex(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Decode one field of len bytes; NULL if malformed. */
static char *
state_decode(const char *s, size_t len)
{
	char	*out, *o;
	size_t	 i;
	int	 hi, lo;

	if (len == 1 && s[0] == '-')
		return xstrdup("");
	out = o = xmalloc(len + 1);
	for (i = 0; i < len; i++) {
		if (s[i] != '%') {
			*o++ = s[i];
			continue;
		}
		if (i + 2 >= len)
			goto bad;
		if ((hi = state_hex(s[i + 1])) < 0 ||
		    (lo = state_hex(s[i + 2])) < 0 || (hi == 0 && lo == 0))
			goto bad;
		*o++ = (char)(hi * 16 + lo);
		i += 2;
	}
	*o = '\0';
	return out;
bad:
	free(out);
	return NULL;
}

int
state_parse(struct state *st, const char *text, char *err, size_t errlen)
{
	const char	*line = text, *end, *f[3], *p;
	size_t		 flen[3], lineno = 0;
	char		*v[3];
	int		 i;

	for (; *line != '\0'; line = *end == '\0' ? end : end + 1) {
		lineno++;
		if ((end = strchr(line, '\n')) == NULL)
			end = line + strlen(line);
		if (lineno == 1) {
			if ((size_t)(end - line) != strlen(STATE_MAGIC) ||
			    strncmp(line, STATE_MAGIC, strlen(STATE_MAGIC)) != 0) {
				snprintf(err, errlen, "line 1: not a record file");
				return -1;
			}
			continue;
		}
		if (end == line)
			continue;
		p = line;
		for (i = 0; i < 3; i++) {
			f[i] = p;
			while (p < end && *p != ' ')
				p++;
			flen[i] = (size_t)(p - f[i]);
			if (flen[i] == 0 || (i < 2 && p == end) ||
			    (i == 2 && p != end)) {
				snprintf(err, errlen,
				    "line %zu: want three fields", lineno);
				return -1;
			}
			p++;
		}
		for (i = 0; i < 3; i++) {
			if ((v[i] = state_decode(f[i], flen[i])) == NULL) {
				while (--i >= 0)
					free(v[i]);
				snprintf(err, errlen,
				    "line %zu: bad %% escape", lineno);
				return -1;
			}
		}
		state_add(st, v[0], v[1], v[2]);
		for (i = 0; i < 3; i++)
			free(v[i]);
	}
	if (lineno == 0) {
		snprintf(err, errlen, "empty file");
		return -1;
	}
	return 0;
}

int
state_save(const struct state *st, const char *path, char *err,
    size_t errlen)
{
	char	*text = state_format(st);
	int	 rc;

	rc = file_write_atomic(path, text, strlen(text), 0644);
	if (rc == -1)
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
	free(text);
	return rc;
}

int
state_load(struct state *st, const char *path, char *err, size_t errlen)
{
	FILE	*f;
	char	*buf;
	size_t	 n;
	int	 rc;

	if ((f = fopen(path, "re")) == NULL) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	buf = xmalloc(STATE_MAX_SIZE + 1);
	n = fread(buf, 1, STATE_MAX_SIZE + 1, f);
	if (ferror(f) || n > STATE_MAX_SIZE || memchr(buf, '\0', n) != NULL) {
		snprintf(err, errlen, "%s: unreadable, too big or binary", path);
		fclose(f);
		free(buf);
		return -1;
	}
	fclose(f);
	buf[n] = '\0';
	rc = state_parse(st, buf, err, errlen);
	if (rc == -1) {
		char	cause[256];

		snprintf(cause, sizeof(cause), "%s", err);
		snprintf(err, errlen, "%s: %s", path, cause);
		state_free(st);
	}
	free(buf);
	return rc == -1 ? -1 : 1;
}
