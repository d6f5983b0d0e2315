/*
 * Logging.  Foreground: "prog: message" on stderr.  Under systemd
 * (JOURNAL_STREAM set and naming our stderr) every line is prefixed with
 * the syslog priority "<N>" so the journal records it.
 *
 * Naming follows OpenNTPD: log_warn appends strerror(errno), log_warnx
 * does not; fatal/fatalx log and exit(1) and are for start-up and broken
 * invariants only.
 */
#ifndef PREFCPU_LOG_H
#define PREFCPU_LOG_H

#include <stdarg.h>
#include <stddef.h>

#define LOG_PRINTF(f, a)	__attribute__((format(printf, f, a)))

/* Levels are the syslog priorities. */
enum log_level {
	LOGL_ERR = 3,
	LOGL_WARNING = 4,
	LOGL_NOTICE = 5,
	LOGL_INFO = 6,
	LOGL_DEBUG = 7,
};

void	log_init(const char *progname, enum log_level);
void	log_set_level(enum log_level);
enum log_level log_get_level(void);
/* Parse "err", "warning", "notice", "info", "debug"; -1 if unknown. */
int	log_level_parse(const char *);
/* Prepend "<N>" priorities (1) or not (0); log_init decides by default. */
void	log_set_journal(int);

void	log_warn(const char *, ...) LOG_PRINTF(1, 2);
void	log_warnx(const char *, ...) LOG_PRINTF(1, 2);
void	log_notice(const char *, ...) LOG_PRINTF(1, 2);
void	log_info(const char *, ...) LOG_PRINTF(1, 2);
void	log_debug(const char *, ...) LOG_PRINTF(1, 2);
void	log_msg(enum log_level, const char *, ...) LOG_PRINTF(2, 3);
void	log_vmsg(enum log_level, const char *, va_list) LOG_PRINTF(2, 0);
__attribute__((noreturn)) void fatal(const char *, ...) LOG_PRINTF(1, 2);
__attribute__((noreturn)) void fatalx(const char *, ...) LOG_PRINTF(1, 2);

/*
 * Escape untrusted bytes for a log line or a terminal: printable ASCII and
 * valid UTF-8 pass, '\\' becomes "\\\\", control bytes become \n \t \r or
 * \xHH, invalid UTF-8 bytes become \xHH, bidi controls and line or
 * paragraph separators (utf8_invisible()) become \uXXXX.  Writes at most
 * dstlen-1 bytes plus NUL, never cuts an escape in half, returns dst.
 */
char	*str_escape(char *dst, size_t dstlen, const char *src, size_t srclen);

#endif
