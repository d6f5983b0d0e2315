/*
 * Table-driven configuration on libinih.
 *
 * Debian's libinih is built without INI_HANDLER_LINENO and with a fixed
 * 200-byte line buffer, so conf_load feeds it through its own reader: the
 * reader counts lines (the handler runs right after its line was read, so
 * the count is the handler's line), checks section headers and syntax
 * itself (inih would only report the first bad line after applying the
 * rest), strips indentation (inih would take an indented line as the
 * continuation of the previous value), and hands over long lines with a
 * placeholder value that the handler swaps for the real one.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <ini.h>

#include "conf.h"
#include "cpuset.h"
#include "log.h"
#include "util.h"

/* Stands for a value too long for inih's line buffer; never valid text. */
#define CONF_LONG_MARK	"\001"

struct conf_reader {
	const struct conf_opt	*opts;
	size_t			 n;
	void			*dst;
	const char		*path;
	FILE			*fp;
	char			*line;
	size_t			 cap;
	unsigned int		 lineno;
	char			*long_value;	/* owned; for CONF_LONG_MARK */
	int			 failed;
	char			*err;
	size_t			 errlen;
};

static const char *
conf_type_name(enum conf_type t)
{
	static const char *const names[] = {
		[CONF_BOOL] = "bool",
		[CONF_UINT] = "uint",
		[CONF_DOUBLE] = "double",
		[CONF_STRING] = "string",
		[CONF_CHOICE] = "choice",
		[CONF_CPULIST] = "cpulist",
	};

	return (size_t)t < nitems(names) ? names[t] : "?";
}

static const struct {
	const char	*text;
	bool		 value;
} conf_bools[] = {
	{ "yes", true }, { "no", false },
	{ "true", true }, { "false", false },
	{ "on", true }, { "off", false },
	{ "1", true }, { "0", false },
};

/* Undo the quoting conf_dump applies to strings that need it. */
static int
conf_unquote(const char *v, char *out, size_t outlen, char *cause,
    size_t causelen)
{
	size_t	len = strlen(v), i, o = 0;
	char	c, hex[3];

	if (len < 2 || v[len - 1] != '"') {
		err_set(cause, causelen, "unterminated quoted string");
		return -1;
	}
	for (i = 1; i < len - 1; i++) {
		c = v[i];
		if (c == '"') {
			err_set(cause, causelen,
			    "unescaped '\"' inside a quoted string");
			return -1;
		}
		if (c == '\\') {
			if (i + 1 >= len - 1) {
				err_set(cause, causelen,
				    "'\\' at the end of a quoted string");
				return -1;
			}
			switch (v[++i]) {
			case '\\': c = '\\'; break;
			case '"': c = '"'; break;
			case 'n': c = '\n'; break;
			case 't': c = '\t'; break;
			case 'r': c = '\r'; break;
			case 'x':
				if (i + 2 >= len - 1 ||
				    strspn(v + i + 1, "0123456789abcdefABCDEF") < 2) {
					err_set(cause, causelen,
					    "bad \\x escape in a quoted string");
					return -1;
				}
				hex[0] = v[i + 1];
				hex[1] = v[i + 2];
				hex[2] = '\0';
				c = (char)strtoul(hex, NULL, 16);
				if (c == '\0') {
					err_set(cause, causelen,
					    "\\x00 is not allowed in a string");
					return -1;
				}
				i += 2;
				break;
			default:
				err_set(cause, causelen,
				    "unknown escape '\\%c' in a quoted string",
				    v[i]);
				return -1;
			}
		}
		if (o + 1 >= outlen) {
			err_set(cause, causelen,
			    "string longer than %zu bytes", outlen - 1);
			return -1;
		}
		out[o++] = c;
	}
	out[o] = '\0';
	return 0;
}

/* Parse value for one option into its slot; cause gets "what is wrong". */
static int
conf_parse_value(const struct conf_opt *o, void *dst, const char *v,
    char *cause, size_t causelen)
{
	char		*slot = (char *)dst + o->offset, *end, tmp[CONF_STRLEN];
	char		 cerr[128];
	uint64_t	 u;
	double		 d;
	size_t		 i;
	struct cpuset	 set;

	switch (o->type) {
	case CONF_BOOL:
		for (i = 0; i < nitems(conf_bools); i++) {
			if (strcasecmp(v, conf_bools[i].text) == 0) {
				*(bool *)slot = conf_bools[i].value;
				return 0;
			}
		}
		err_set(cause, causelen,
		    "'%s' is not a boolean (yes/no, true/false, on/off, 1/0)",
		    v);
		return -1;
	case CONF_UINT:
		if (parse_uint(v, 0, UINT64_MAX, &u) == -1) {
			if (errno == ERANGE)
				err_set(cause, causelen,
				    "%s is above the maximum %llu", v,
				    (unsigned long long)o->max);
			else
				err_set(cause, causelen,
				    "'%s' is not an unsigned integer", v);
			return -1;
		}
		if (u < o->min) {
			err_set(cause, causelen, "%s is below the minimum %llu",
			    v, (unsigned long long)o->min);
			return -1;
		}
		if (u > o->max) {
			err_set(cause, causelen, "%s is above the maximum %llu",
			    v, (unsigned long long)o->max);
			return -1;
		}
		*(unsigned int *)slot = (unsigned int)u;
		return 0;
	case CONF_DOUBLE:
		errno = 0;
		d = strtod(v, &end);
		/* Overflow is not finite; ERANGE on underflow is fine. */
		if (*v == '\0' || *end != '\0' || end == v || !isfinite(d)) {
			err_set(cause, causelen, "'%s' is not a finite number",
			    v);
			return -1;
		}
		if (d < o->dmin) {
			err_set(cause, causelen, "%s is below the minimum %g",
			    v, o->dmin);
			return -1;
		}
		if (d > o->dmax) {
			err_set(cause, causelen, "%s is above the maximum %g",
			    v, o->dmax);
			return -1;
		}
		*(double *)slot = d;
		return 0;
	case CONF_STRING:
		if (*v == '"') {
			if (conf_unquote(v, tmp, sizeof(tmp), cause,
			    causelen) == -1)
				return -1;
			memcpy(slot, tmp, strlen(tmp) + 1);
			return 0;
		}
		if (strlen(v) >= CONF_STRLEN) {
			err_set(cause, causelen, "string longer than %d bytes",
			    CONF_STRLEN - 1);
			return -1;
		}
		memcpy(slot, v, strlen(v) + 1);
		return 0;
	case CONF_CHOICE:
		for (i = 0; o->choices != NULL && o->choices[i] != NULL; i++) {
			if (strcmp(v, o->choices[i]) == 0) {
				*(unsigned int *)slot = (unsigned int)i;
				return 0;
			}
		}
		err_set(cause, causelen, "'%s' is not one of", v);
		for (i = 0; o->choices != NULL && o->choices[i] != NULL; i++) {
			size_t	l = strlen(cause);

			if (l + 1 < causelen)
				snprintf(cause + l, causelen - l, "%s%s",
				    i ? ", " : " ", o->choices[i]);
		}
		return -1;
	case CONF_CPULIST:
		if (cpuset_parse(&set, v, cerr, sizeof(cerr)) == -1) {
			err_set(cause, causelen, "bad cpulist: %s", cerr);
			return -1;
		}
		memcpy(slot, &set, sizeof(set));
		return 0;
	}
	err_set(cause, causelen, "option has an unknown type");
	return -1;
}

static bool
conf_has_section(const struct conf_opt *opts, size_t n, const char *section)
{
	size_t	i;

	for (i = 0; i < n; i++)
		if (strcmp(opts[i].section, section) == 0)
			return true;
	return false;
}

void
conf_defaults(const struct conf_opt *opts, size_t n, void *dst)
{
	char	cause[256];
	size_t	i;

	for (i = 0; i < n; i++) {
		/* A bad default is a bug in the table, not a user error. */
		if (conf_parse_value(&opts[i], dst,
		    opts[i].def != NULL ? opts[i].def : "", cause,
		    sizeof(cause)) == -1)
			fatalx("default of [%s] %s: %s", opts[i].section,
			    opts[i].name, cause);
	}
}

int
conf_set(const struct conf_opt *opts, size_t n, void *dst,
    const char *section, const char *name, const char *value, char *err,
    size_t errlen)
{
	char	cause[256];
	size_t	i;

	if (!conf_has_section(opts, n, section)) {
		if (*section == '\0')
			err_set(err, errlen, "%s: option outside any section",
			    name);
		else
			err_set(err, errlen, "unknown section [%s]", section);
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (strcmp(opts[i].section, section) != 0 ||
		    strcmp(opts[i].name, name) != 0)
			continue;
		if (conf_parse_value(&opts[i], dst, value, cause,
		    sizeof(cause)) == -1) {
			err_set(err, errlen, "%s: %s", name, cause);
			return -1;
		}
		return 0;
	}
	err_set(err, errlen, "unknown option '%s' in section [%s]", name,
	    section);
	return -1;
}

static void
conf_reader_fail(struct conf_reader *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void
conf_reader_fail(struct conf_reader *r, const char *fmt, ...)
{
	char	cause[512];
	va_list	ap;

	if (r->failed)
		return;
	va_start(ap, fmt);
	vsnprintf(cause, sizeof(cause), fmt, ap);
	va_end(ap);
	err_set(r->err, r->errlen, "%s:%u: %s", r->path, r->lineno, cause);
	r->failed = 1;
}

/*
 * Where inih would see the name/value separator: the first '=' or ':',
 * unless an inline comment (';' after whitespace) comes first.
 */
static char *
conf_find_sep(char *s)
{
	char	*p;

	for (p = s; *p != '\0'; p++) {
		if (*p == '=' || *p == ':')
			return p;
		if (*p == ';' && p > s && (p[-1] == ' ' || p[-1] == '\t'))
			return NULL;
	}
	return NULL;
}

/* The value inih would hand over for the text after the separator. */
static char *
conf_extract_value(const char *after)
{
	const char	*p, *end;

	while (*after == ' ' || *after == '\t')
		after++;
	for (p = after; *p != '\0'; p++)
		if (*p == ';' && p > after && (p[-1] == ' ' || p[-1] == '\t'))
			break;
	end = p;
	while (end > after && (end[-1] == ' ' || end[-1] == '\t'))
		end--;
	return xstrndup(after, (size_t)(end - after));
}

/* fgets-style reader for ini_parse_stream; see the top of the file. */
static char *
conf_read_line(char *str, int num, void *stream)
{
	struct conf_reader	*r = stream;
	ssize_t			 len;
	char			*s, *end, *sep, *name;

	if (r->failed || num < 8)
		return NULL;
	errno = 0;
	len = getline(&r->line, &r->cap, r->fp);
	if (len == -1) {
		if (ferror(r->fp))
			conf_reader_fail(r, "read error: %s", strerror(errno));
		return NULL;
	}
	r->lineno++;
	if (strlen(r->line) != (size_t)len) {
		conf_reader_fail(r, "NUL byte in line");
		return NULL;
	}
	while (len > 0 && (r->line[len - 1] == '\n' || r->line[len - 1] == '\r'))
		r->line[--len] = '\0';
	s = r->line;
	if (r->lineno == 1 && strncmp(s, "\xef\xbb\xbf", 3) == 0)
		s += 3;
	while (*s == ' ' || *s == '\t')
		s++;

	if (*s == '\0' || *s == ';' || *s == '#') {
		str[0] = '\n';
		str[1] = '\0';
		return str;
	}
	if (*s == '[') {
		if ((end = strchr(s, ']')) == NULL) {
			conf_reader_fail(r, "syntax error: missing ']'");
			return NULL;
		}
		name = xstrndup(s + 1, (size_t)(end - s - 1));
		if (!conf_has_section(r->opts, r->n, name)) {
			conf_reader_fail(r, "unknown section [%s]", name);
			free(name);
			return NULL;
		}
		free(name);
	} else if ((sep = conf_find_sep(s)) == NULL) {
		conf_reader_fail(r, "syntax error: expected 'name = value'");
		return NULL;
	} else if (strlen(s) + 2 >= (size_t)num) {
		/* Too long for inih: pass name and a mark, keep the value. */
		if ((size_t)(sep - s) + sizeof(CONF_LONG_MARK) + 2 >=
		    (size_t)num) {
			conf_reader_fail(r, "option name too long");
			return NULL;
		}
		free(r->long_value);
		r->long_value = conf_extract_value(sep + 1);
		snprintf(str, (size_t)num, "%.*s" CONF_LONG_MARK "\n",
		    (int)(sep - s + 1), s);
		return str;
	}
	if (strlen(s) + 2 >= (size_t)num) {
		conf_reader_fail(r, "line too long");
		return NULL;
	}
	snprintf(str, (size_t)num, "%s\n", s);
	return str;
}

static int
conf_ini_handler(void *user, const char *section, const char *name,
    const char *value)
{
	struct conf_reader	*r = user;
	char			 err[512];

	if (r->failed)
		return 0;
	if (strcmp(value, CONF_LONG_MARK) == 0 && r->long_value != NULL)
		value = r->long_value;
	if (conf_set(r->opts, r->n, r->dst, section, name, value, err,
	    sizeof(err)) == -1) {
		conf_reader_fail(r, "%s", err);
		return 0;
	}
	free(r->long_value);
	r->long_value = NULL;
	return 1;
}

int
conf_load(const struct conf_opt *opts, size_t n, void *dst,
    const char *path, char *err, size_t errlen)
{
	struct conf_reader	r;
	int			rc;

	memset(&r, 0, sizeof(r));
	r.opts = opts;
	r.n = n;
	r.dst = dst;
	r.path = path;
	r.err = err;
	r.errlen = errlen;
	if ((r.fp = fopen(path, "re")) == NULL) {
		err_set(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	rc = ini_parse_stream(conf_read_line, &r, conf_ini_handler, &r);
	fclose(r.fp);
	free(r.line);
	free(r.long_value);
	if (r.failed)
		return -1;
	if (rc == -2) {
		err_set(err, errlen, "%s: out of memory", path);
		return -1;
	}
	if (rc != 0) {
		/* Our reader checks what inih checks; this is a fallback. */
		err_set(err, errlen, "%s:%d: syntax error", path, rc);
		return -1;
	}
	return 0;
}

/* A string that reads back as itself without quotes. */
static bool
conf_string_is_plain(const char *s)
{
	size_t	len = strlen(s), i;

	if (len == 0)
		return true;
	if (s[0] == '"' || s[0] == ' ' || s[0] == '\t' ||
	    s[len - 1] == ' ' || s[len - 1] == '\t')
		return false;
	for (i = 0; i < len; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f || s[i] == ';')
			return false;
	return true;
}

static void
conf_dump_string(const char *s, FILE *fp)
{
	const unsigned char	*p;

	if (conf_string_is_plain(s)) {
		fputs(s, fp);
		return;
	}
	fputc('"', fp);
	for (p = (const unsigned char *)s; *p != '\0'; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(fp, "\\%c", *p);
		else if (*p == '\n')
			fputs("\\n", fp);
		else if (*p == '\t')
			fputs("\\t", fp);
		else if (*p == '\r')
			fputs("\\r", fp);
		/* ';' after a blank would start an inline comment. */
		else if (*p < 0x20 || *p == 0x7f || *p == ';')
			fprintf(fp, "\\x%02x", *p);
		else
			fputc(*p, fp);
	}
	fputc('"', fp);
}

/*
 * The shortest of 15..17 significant digits that reads back as the same
 * double: 17 always does, but prints 0.1 as 0.10000000000000001.
 */
static void
conf_dump_double(double d, FILE *fp)
{
	char	buf[64];
	int	prec;

	for (prec = 15; prec < 17; prec++) {
		snprintf(buf, sizeof(buf), "%.*g", prec, d);
		if (strtod(buf, NULL) == d)
			break;
	}
	if (prec == 17)
		snprintf(buf, sizeof(buf), "%.17g", d);
	fputs(buf, fp);
}

static void
conf_dump_value(const struct conf_opt *o, const void *src, FILE *fp)
{
	const char	*slot = (const char *)src + o->offset;
	char		*list;
	unsigned int	 idx;
	size_t		 i;

	switch (o->type) {
	case CONF_BOOL:
		fputs(*(const bool *)slot ? "yes" : "no", fp);
		break;
	case CONF_UINT:
		fprintf(fp, "%u", *(const unsigned int *)slot);
		break;
	case CONF_DOUBLE:
		conf_dump_double(*(const double *)slot, fp);
		break;
	case CONF_STRING:
		conf_dump_string(slot, fp);
		break;
	case CONF_CHOICE:
		idx = *(const unsigned int *)slot;
		for (i = 0; o->choices != NULL && o->choices[i] != NULL; i++)
			if (i == idx) {
				fputs(o->choices[i], fp);
				break;
			}
		break;
	case CONF_CPULIST:
		list = cpuset_to_str((const struct cpuset *)(const void *)slot);
		fputs(list, fp);
		free(list);
		break;
	}
}

/* True if opts[i] is the first option of its section in table order. */
static bool
conf_first_of_section(const struct conf_opt *opts, size_t i)
{
	size_t	j;

	for (j = 0; j < i; j++)
		if (strcmp(opts[j].section, opts[i].section) == 0)
			return false;
	return true;
}

void
conf_dump(const struct conf_opt *opts, size_t n, const void *src, FILE *fp)
{
	size_t	i, j;
	bool	first = true;

	for (i = 0; i < n; i++) {
		if (!conf_first_of_section(opts, i))
			continue;
		fprintf(fp, "%s[%s]\n", first ? "" : "\n", opts[i].section);
		first = false;
		for (j = i; j < n; j++) {
			if (strcmp(opts[j].section, opts[i].section) != 0)
				continue;
			if (opts[j].help != NULL)
				fprintf(fp, "# %s\n", opts[j].help);
			fprintf(fp, "%s = ", opts[j].name);
			conf_dump_value(&opts[j], src, fp);
			fputc('\n', fp);
		}
	}
}

static void
conf_format_range(const struct conf_opt *o, char *buf, size_t len)
{
	size_t	i, l;

	switch (o->type) {
	case CONF_UINT:
		snprintf(buf, len, "uint %llu..%llu",
		    (unsigned long long)o->min, (unsigned long long)o->max);
		break;
	case CONF_DOUBLE:
		snprintf(buf, len, "double %g..%g", o->dmin, o->dmax);
		break;
	case CONF_CHOICE:
		snprintf(buf, len, "one of");
		for (i = 0; o->choices != NULL && o->choices[i] != NULL; i++) {
			l = strlen(buf);
			snprintf(buf + l, len - l, "%s%s", i ? "|" : " ",
			    o->choices[i]);
		}
		break;
	default:
		snprintf(buf, len, "%s", conf_type_name(o->type));
		break;
	}
}

void
conf_help(const struct conf_opt *opts, size_t n, FILE *fp)
{
	char	range[256];
	size_t	i, j;

	for (i = 0; i < n; i++) {
		if (!conf_first_of_section(opts, i))
			continue;
		fprintf(fp, "[%s]\n", opts[i].section);
		for (j = i; j < n; j++) {
			if (strcmp(opts[j].section, opts[i].section) != 0)
				continue;
			conf_format_range(&opts[j], range, sizeof(range));
			fprintf(fp, "  %-24s %-28s default: %s\n",
			    opts[j].name, range,
			    opts[j].def != NULL && *opts[j].def != '\0' ?
			    opts[j].def : "(empty)");
			if (opts[j].help != NULL)
				fprintf(fp, "      %s\n", opts[j].help);
		}
	}
}
