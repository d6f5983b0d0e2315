/* Terminal-sized text tables for prefcpuctl (see ctl_table.h). */
#include <sys/ioctl.h>

#include <langinfo.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ctl_table.h"
#include "util.h"

#define TAB_GAP		1	/* spaces between columns */

struct tab {
	const struct tab_col	*cols;
	size_t			 ncols;
	char			**cells;	/* nrows * ncols, owned */
	size_t			 nrows, cap, next;
};

struct tab *
tab_new(const struct tab_col *cols, size_t ncols)
{
	struct tab	*t = xcalloc(1, sizeof(*t));

	t->cols = cols;
	t->ncols = ncols;
	return t;
}

void
tab_free(struct tab *t)
{
	size_t	i;

	if (t == NULL)
		return;
	for (i = 0; i < t->nrows * t->ncols; i++)
		free(t->cells[i]);
	free(t->cells);
	free(t);
}

void
tab_row(struct tab *t)
{
	if (t->nrows == t->cap) {
		t->cap = t->cap ? t->cap * 2 : 16;
		t->cells = xreallocarray(t->cells, t->cap * t->ncols,
		    sizeof(*t->cells));
	}
	memset(&t->cells[t->nrows * t->ncols], 0, t->ncols *
	    sizeof(*t->cells));
	t->nrows++;
	t->next = 0;
}

void
tab_cell(struct tab *t, const char *fmt, ...)
{
	va_list	ap;
	char	*s;

	if (t->nrows == 0 || t->next >= t->ncols)
		abort();
	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		abort();
	va_end(ap);
	t->cells[(t->nrows - 1) * t->ncols + t->next++] = s;
}

/* One code point at s (valid UTF-8 from str_escape): its length. */
static size_t
tab_decode(const unsigned char *s, uint32_t *cp)
{
	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if ((s[0] & 0xe0) == 0xc0 && s[1] != '\0') {
		*cp = (uint32_t)(s[0] & 0x1f) << 6 | (s[1] & 0x3f);
		return 2;
	}
	if ((s[0] & 0xf0) == 0xe0 && s[1] != '\0' && s[2] != '\0') {
		*cp = (uint32_t)(s[0] & 0x0f) << 12 |
		    (uint32_t)(s[1] & 0x3f) << 6 | (s[2] & 0x3f);
		return 3;
	}
	if (s[1] != '\0' && s[2] != '\0' && s[3] != '\0') {
		*cp = (uint32_t)(s[0] & 0x07) << 18 |
		    (uint32_t)(s[1] & 0x3f) << 12 |
		    (uint32_t)(s[2] & 0x3f) << 6 | (s[3] & 0x3f);
		return 4;
	}
	*cp = '?';
	return 1;
}

/* Columns a code point takes: combining marks 0, East Asian wide 2. */
static unsigned int
tab_cp_width(uint32_t c)
{
	if ((c >= 0x300 && c <= 0x36f) || c == 0x200b)
		return 0;
	if ((c >= 0x1100 && c <= 0x115f) || (c >= 0x2e80 && c <= 0xa4cf) ||
	    (c >= 0xac00 && c <= 0xd7a3) || (c >= 0xf900 && c <= 0xfaff) ||
	    (c >= 0xfe30 && c <= 0xfe4f) || (c >= 0xff00 && c <= 0xff60) ||
	    (c >= 0xffe0 && c <= 0xffe6) || (c >= 0x1f300 && c <= 0x1faff) ||
	    (c >= 0x20000 && c <= 0x3fffd))
		return 2;
	return 1;
}

unsigned int
tab_width(const char *str)
{
	const unsigned char	*s = (const unsigned char *)str;
	unsigned int		 w = 0;
	uint32_t		 cp;

	while (*s != '\0') {
		s += tab_decode(s, &cp);
		w += tab_cp_width(cp);
	}
	return w;
}

static const char *
tab_ellipsis(void)
{
	const char	*cs = nl_langinfo(CODESET);

	return cs != NULL && strcasecmp(cs, "UTF-8") == 0 ? "\u2026" : "~";
}

/* Print s in exactly w columns: cut with an ellipsis, or padded. */
static void
tab_put(FILE *f, const char *str, unsigned int w, bool right, bool pad)
{
	const unsigned char	*s = (const unsigned char *)str;
	unsigned int		 sw = tab_width(str), used = 0, cw;
	uint32_t		 cp;
	size_t			 n;

	if (sw <= w) {
		if (right)
			fprintf(f, "%*s", (int)(w - sw), "");
		fputs(str, f);
		if (!right && pad)
			fprintf(f, "%*s", (int)(w - sw), "");
		return;
	}
	if (w == 0)
		return;
	while (*s != '\0') {
		n = tab_decode(s, &cp);
		cw = tab_cp_width(cp);
		if (used + cw > w - 1)
			break;
		fwrite(s, 1, n, f);
		used += cw;
		s += n;
	}
	fputs(tab_ellipsis(), f);
	used++;
	if (pad)
		fprintf(f, "%*s", (int)(w - used), "");
}

void
tab_line(FILE *f, const char *s, unsigned int width)
{
	tab_put(f, s, width ? width : tab_width(s), false, false);
	fputc('\n', f);
}

void
tab_print(const struct tab *t, FILE *f, unsigned int width)
{
	unsigned int	*w = xcalloc(t->ncols, sizeof(*w)), total, cw, over;
	unsigned int	*natural = xcalloc(t->ncols, sizeof(*natural));
	unsigned int	 best;
	bool		*shown = xcalloc(t->ncols, sizeof(*shown)), first;
	size_t		 i, r, last;
	const char	*s;

	for (i = 0; i < t->ncols; i++) {
		shown[i] = true;
		w[i] = tab_width(t->cols[i].name);
		for (r = 0; r < t->nrows; r++) {
			s = t->cells[r * t->ncols + i];
			if (s != NULL && (cw = tab_width(s)) > w[i])
				w[i] = cw;
		}
		natural[i] = w[i];
	}
	for (;;) {
		total = 0;
		for (i = 0; i < t->ncols; i++)
			total += shown[i] ? w[i] + (total ? TAB_GAP : 0) : 0;
		if (width == 0 || total <= width)
			break;
		over = total - width;
		/* The lowest-ranked step left: shrink a column or drop one. */
		best = UINT32_MAX;
		last = t->ncols;
		for (i = 0; i < t->ncols; i++) {
			if (!shown[i] || t->cols[i].rank >= best)
				continue;
			if ((t->cols[i].min > 0 && w[i] > t->cols[i].min) ||
			    (t->cols[i].flags & TAB_OPTIONAL)) {
				best = t->cols[i].rank;
				last = i;
			}
		}
		if (last == t->ncols)
			break;	/* nothing left to give: it overflows */
		if (t->cols[last].min > 0 && w[last] > t->cols[last].min) {
			cw = w[last] - t->cols[last].min;
			w[last] -= cw < over ? cw : over;
			continue;
		}
		shown[last] = false;
	}
	/* Dropping a column may have freed more than needed: give it back,
	 * the column shrunk last first. */
	while (width > 0 && total < width) {
		best = 0;
		last = t->ncols;
		for (i = 0; i < t->ncols; i++) {
			if (shown[i] && w[i] < natural[i] &&
			    t->cols[i].rank >= best) {
				best = t->cols[i].rank;
				last = i;
			}
		}
		if (last == t->ncols)
			break;
		cw = natural[last] - w[last];
		if (cw > width - total)
			cw = width - total;
		w[last] += cw;
		total += cw;
	}
	last = 0;
	for (i = 0; i < t->ncols; i++)
		if (shown[i])
			last = i;
	for (r = 0; r <= t->nrows; r++) {
		first = true;
		for (i = 0; i < t->ncols; i++) {
			if (!shown[i])
				continue;
			if (!first)
				fprintf(f, "%*s", TAB_GAP, "");
			first = false;
			s = r == 0 ? t->cols[i].name :
			    t->cells[(r - 1) * t->ncols + i];
			tab_put(f, s != NULL ? s : "", w[i],
			    (t->cols[i].flags & TAB_RIGHT) != 0, i != last);
		}
		fputc('\n', f);
	}
	free(w);
	free(natural);
	free(shown);
}

unsigned int
tab_term_width(int fd)
{
	struct winsize	 ws;
	const char	*env = getenv("COLUMNS");
	uint64_t	 v;

	if (env != NULL && parse_uint(env, 1, 100000, &v) == 0)
		return (unsigned int)v;
	if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	return 0;
}

unsigned int
tab_term_height(int fd)
{
	struct winsize	 ws;
	const char	*env = getenv("LINES");
	uint64_t	 v;

	if (env != NULL && parse_uint(env, 1, 100000, &v) == 0)
		return (unsigned int)v;
	if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0)
		return ws.ws_row;
	return 0;
}
