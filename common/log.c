/*
 * Logging to stderr, with syslog priorities for the journal, and the
 * escaping of untrusted text for log lines.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "utf8.h"

/* One line is formatted in full before a single write(2) so that lines of
 * concurrent processes sharing stderr do not interleave. */
#define LOG_LINE_MAX	4096

static struct {
	char		progname[64];
	enum log_level	level;
	int		journal;
} log_state = { "", LOGL_INFO, 0 };

static const char *const log_level_names[] = {
	[LOGL_ERR] = "err",
	[LOGL_WARNING] = "warning",
	[LOGL_NOTICE] = "notice",
	[LOGL_INFO] = "info",
	[LOGL_DEBUG] = "debug",
};

/*
 * systemd sets JOURNAL_STREAM to "DEV:INODE" of the stream it connected to
 * stdout/stderr.  It is inherited by children whose stderr may point
 * elsewhere, so it counts only when it names our own stderr.
 */
static int
log_stderr_is_journal(void)
{
	const char		*env = getenv("JOURNAL_STREAM");
	struct stat		 st;
	unsigned long long	 dev, ino;
	char			 tail;

	if (env == NULL || fstat(STDERR_FILENO, &st) == -1)
		return 0;
	if (sscanf(env, "%llu:%llu%c", &dev, &ino, &tail) != 2)
		return 0;
	return (unsigned long long)st.st_dev == dev &&
	    (unsigned long long)st.st_ino == ino;
}

void
log_init(const char *progname, enum log_level level)
{
	const char	*slash = strrchr(progname, '/');

	snprintf(log_state.progname, sizeof(log_state.progname), "%s",
	    slash != NULL ? slash + 1 : progname);
	log_state.level = level;
	log_state.journal = log_stderr_is_journal();
}

void
log_set_level(enum log_level level)
{
	log_state.level = level;
}

enum log_level
log_get_level(void)
{
	return log_state.level;
}

int
log_level_parse(const char *s)
{
	size_t	i;

	for (i = 0; i < sizeof(log_level_names) / sizeof(log_level_names[0]);
	    i++)
		if (log_level_names[i] != NULL &&
		    strcmp(log_level_names[i], s) == 0)
			return (int)i;
	return -1;
}

void
log_set_journal(int on)
{
	log_state.journal = on != 0;
}

/*
 * Emit one message; 'suffix' (may be NULL) is appended after ": ".  In
 * journal mode every line carries "<N>" because the journal reads the
 * priority per line; the program name is left out there since the journal
 * records the identifier itself.
 */
static void
log_emit(enum log_level level, const char *suffix, const char *fmt,
    va_list ap) __attribute__((format(printf, 3, 0)));

static void
log_emit(enum log_level level, const char *suffix, const char *fmt,
    va_list ap)
{
	char		 msg[LOG_LINE_MAX], out[LOG_LINE_MAX + 64];
	const char	*line, *nl, *prog;
	size_t		 off = 0, n;
	int		 saved = errno;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (suffix != NULL) {
		n = strlen(msg);
		snprintf(msg + n, sizeof(msg) - n, ": %s", suffix);
	}
	prog = log_state.progname[0] != '\0' ? log_state.progname :
	    program_invocation_short_name;

	for (line = msg;; line = nl + 1) {
		nl = strchr(line, '\n');
		n = nl != NULL ? (size_t)(nl - line) : strlen(line);
		if (log_state.journal)
			off += (size_t)snprintf(out + off, sizeof(out) - off,
			    "<%d>%.*s\n", (int)level, (int)n, line);
		else
			off += (size_t)snprintf(out + off, sizeof(out) - off,
			    "%s: %.*s\n", prog, (int)n, line);
		if (off >= sizeof(out)) {
			off = sizeof(out) - 1;
			out[off - 1] = '\n';
			break;
		}
		if (nl == NULL || nl[1] == '\0')
			break;
	}
	(void)!write(STDERR_FILENO, out, off);
	errno = saved;
}

void
log_vmsg(enum log_level level, const char *fmt, va_list ap)
{
	if (level > log_state.level)
		return;
	log_emit(level, NULL, fmt, ap);
}

void
log_msg(enum log_level level, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_vmsg(level, fmt, ap);
	va_end(ap);
}

void
log_warn(const char *fmt, ...)
{
	va_list	ap;
	char	cause[256];
	int	saved = errno;

	if (LOGL_WARNING > log_state.level)
		return;
	snprintf(cause, sizeof(cause), "%s", strerror(saved));
	va_start(ap, fmt);
	log_emit(LOGL_WARNING, cause, fmt, ap);
	va_end(ap);
	errno = saved;
}

void
log_warnx(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_vmsg(LOGL_WARNING, fmt, ap);
	va_end(ap);
}

void
log_notice(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_vmsg(LOGL_NOTICE, fmt, ap);
	va_end(ap);
}

void
log_info(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_vmsg(LOGL_INFO, fmt, ap);
	va_end(ap);
}

void
log_debug(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_vmsg(LOGL_DEBUG, fmt, ap);
	va_end(ap);
}

void
fatal(const char *fmt, ...)
{
	va_list	ap;
	char	cause[256];

	snprintf(cause, sizeof(cause), "%s", strerror(errno));
	va_start(ap, fmt);
	log_emit(LOGL_ERR, cause, fmt, ap);
	va_end(ap);
	exit(1);
}

void
fatalx(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_emit(LOGL_ERR, NULL, fmt, ap);
	va_end(ap);
	exit(1);
}

/*
 * Length of the valid UTF-8 sequence at s (at most n bytes), or 0: a
 * terminal or log reader must not be handed something it may decode
 * differently from us.  C1 controls (U+0080..U+009F, 0xc2 0x80..0x9f) act
 * on terminals: escape them too.
 */
static size_t
log_utf8_len(const unsigned char *s, size_t n)
{
	size_t	len = utf8_len(s, n);

	if (len == 2 && s[0] == 0xc2 && s[1] < 0xa0)
		return 0;
	return len;
}

char *
str_escape(char *dst, size_t dstlen, const char *src, size_t srclen)
{
	const unsigned char	*s = (const unsigned char *)src;
	size_t			 i = 0, o = 0, n, skip;
	char			 esc[5], uesc[12];
	const char		*piece;
	unsigned int		 cp;

	if (dstlen == 0)
		return dst;
	while (i < srclen) {
		skip = 1;
		if (s[i] >= 0x20 && s[i] < 0x7f && s[i] != '\\') {
			piece = (const char *)s + i;
			n = 1;
		} else if (s[i] == '\\') {
			piece = "\\\\";
			n = 2;
		} else if (s[i] == '\n') {
			piece = "\\n";
			n = 2;
		} else if (s[i] == '\t') {
			piece = "\\t";
			n = 2;
		} else if (s[i] == '\r') {
			piece = "\\r";
			n = 2;
		} else if (s[i] >= 0x80 &&
		    (n = log_utf8_len(s + i, srclen - i)) > 0) {
			piece = (const char *)s + i;
			if ((cp = utf8_invisible(s + i, n)) != 0) {
				snprintf(uesc, sizeof(uesc), "\\u%04x", cp);
				piece = uesc;
				skip = n;
				n = 6;
			}
		} else {
			snprintf(esc, sizeof(esc), "\\x%02x", s[i]);
			piece = esc;
			n = 4;
		}
		if (o + n > dstlen - 1)
			break;
		memcpy(dst + o, piece, n);
		o += n;
		/*
		 * A UTF-8 sequence consumes n source bytes, an escape one, the
		 * escape of a code point its sequence.
		 */
		i += piece == (const char *)s + i ? n : skip;
	}
	dst[o] = '\0';
	return dst;
}
