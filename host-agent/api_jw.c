/* Streaming JSON writer (see api_jw.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_jw.h"
#include "utf8.h"
#include "util.h"

void
jw_init(struct jw *w)
{
	memset(w, 0, sizeof(*w));
	w->f = open_memstream(&w->buf, &w->len);
	if (w->f == NULL)
		abort();
	w->first[0] = true;
}

char *
jw_finish(struct jw *w, size_t *len)
{
	fputc('\n', w->f);
	if (fclose(w->f) != 0)
		abort();
	if (len != NULL)
		*len = w->len;
	return w->buf;
}

char *
jw_take(struct jw *w, size_t *len)
{
	char	*buf;

	if (fclose(w->f) != 0)
		abort();
	buf = w->buf;
	*len = w->len;
	w->buf = NULL;
	w->len = 0;
	w->f = open_memstream(&w->buf, &w->len);
	if (w->f == NULL)
		abort();
	return buf;
}

size_t
jw_pending(struct jw *w)
{
	if (fflush(w->f) != 0)
		abort();
	return w->len;
}

void
jw_discard(struct jw *w)
{
	fclose(w->f);
	free(w->buf);
	w->f = NULL;
	w->buf = NULL;
}

static void
jw_string(FILE *f, const char *str)
{
	const unsigned char	*s = (const unsigned char *)str;
	size_t			 n = strlen(str), run, u;
	unsigned int		 cp;

	fputc('"', f);
	while (n > 0) {
		/* The common case: a run of plain printable ASCII. */
		for (run = 0; run < n && s[run] >= 0x20 && s[run] < 0x80 &&
		    s[run] != '"' && s[run] != '\\' && s[run] != '<' &&
		    s[run] != '>' && s[run] != '&'; run++)
			;
		fwrite(s, 1, run, f);
		s += run;
		n -= run;
		if (n == 0)
			break;
		if (*s >= 0x80) {
			if ((u = utf8_len(s, n)) > 0) {
				if ((cp = utf8_invisible(s, u)) != 0)
					fprintf(f, "\\u%04x", cp);
				else
					fwrite(s, 1, u, f);
				s += u;
				n -= u;
			} else {
				fputs("\\ufffd", f);
				s++;
				n--;
			}
			continue;
		}
		switch (*s) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		case '\r':
			fputs("\\r", f);
			break;
		default:
			fprintf(f, "\\u%04x", *s);
		}
		s++;
		n--;
	}
	fputc('"', f);
}

/* Comma and key before a value. */
static void
jw_key(struct jw *w, const char *key)
{
	if (!w->first[w->depth])
		fputc(',', w->f);
	w->first[w->depth] = false;
	if (key != NULL) {
		jw_string(w->f, key);
		fputc(':', w->f);
	}
}

static void
jw_open(struct jw *w, const char *key, int c)
{
	jw_key(w, key);
	fputc(c, w->f);
	if (w->depth + 1 >= JW_MAX_DEPTH)
		abort();
	w->first[++w->depth] = true;
}

void
jw_obj(struct jw *w, const char *key)
{
	jw_open(w, key, '{');
}

void
jw_obj_end(struct jw *w)
{
	w->depth--;
	fputc('}', w->f);
}

void
jw_arr(struct jw *w, const char *key)
{
	jw_open(w, key, '[');
}

void
jw_arr_end(struct jw *w)
{
	w->depth--;
	fputc(']', w->f);
}

void
jw_str(struct jw *w, const char *key, const char *s)
{
	jw_key(w, key);
	if (s == NULL)
		fputs("null", w->f);
	else
		jw_string(w->f, s);
}

void
jw_u64(struct jw *w, const char *key, uint64_t v)
{
	jw_key(w, key);
	fprintf(w->f, "%llu", (unsigned long long)v);
}

void
jw_int(struct jw *w, const char *key, int64_t v)
{
	jw_key(w, key);
	fprintf(w->f, "%lld", (long long)v);
}

void
jw_dbl(struct jw *w, const char *key, double v)
{
	jw_key(w, key);
	if (isfinite(v))
		fprintf(w->f, "%.6g", v);
	else
		fputs("null", w->f);
}

void
jw_bool(struct jw *w, const char *key, bool v)
{
	jw_key(w, key);
	fputs(v ? "true" : "false", w->f);
}

void
jw_null(struct jw *w, const char *key)
{
	jw_key(w, key);
	fputs("null", w->f);
}

void
jw_cpuset(struct jw *w, const char *key, const struct cpuset *set)
{
	char	buf[256], *s;

	jw_key(w, key);
	if (cpuset_format(set, buf, sizeof(buf)) >= 0) {
		fprintf(w->f, "\"%s\"", buf);
		return;
	}
	s = cpuset_to_str(set);
	fprintf(w->f, "\"%s\"", s);
	free(s);
}
