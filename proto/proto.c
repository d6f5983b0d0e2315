/*
 * Protocol v1 messages: encode a typed struct into one JSON line, decode
 * one line from a peer into a typed struct (DESIGN.md section 5).
 *
 * Every message type is a row of msg_table and every field a row of its
 * field table; the decoder and the encoder walk the same rows, so a field's
 * name, type and range are written down once.  The encoder re-decodes what
 * it produced, so it never emits a line its peer would reject.
 */
#include <sys/random.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "cpuset.h"
#include "jsonobj.h"
#include "log.h"
#include "proto.h"
#include "utf8.h"
#include "util.h"

#define PROTO_MAX_PERIOD_MS	3600000
#define PROTO_MAX_PCT		100

enum field_kind {
	FK_SESSION,	/* 16 lowercase hex digits, not 0 -> uint64_t */
	FK_SEQ,		/* integer 1 .. PROTO_MAX_SEQ -> uint64_t */
	FK_U32,		/* integer min .. max -> uint32_t */
	FK_PCT,		/* finite number 0 .. 100 -> double */
	FK_NUM,		/* finite number 0 .. max -> double */
	FK_BOOL,	/* true or false -> bool */
	FK_TEXT,	/* string shorter than size -> char[size] */
	FK_CPULIST,	/* cpulist string -> struct cpuset */
	FK_CORES,	/* array of cpulist strings -> hello_guest cores */
	FK_BACKENDS,	/* array of strings -> hello_guest backends */
};

#define FF_OPTIONAL	0x1	/* may be absent; the struct keeps its zero/default */
#define FF_NONEMPTY	0x2	/* a cpulist that must not be empty */

struct field {
	const char	*name;
	enum field_kind	 kind;
	size_t		 off;		/* into the message body */
	size_t		 size;		/* FK_TEXT buffer size */
	uint32_t	 min, max;	/* FK_U32; max also for FK_NUM */
	int		 flags;
	uint32_t	 def;		/* FK_U32 value when absent and optional */
	/* Encoder: whether this optional field is written; NULL = always. */
	bool		(*present)(const struct proto_msg *);
	/* Decoder: where to record that an optional field was seen. */
	size_t		 has_off;	/* offset of a bool, or 0 for none */
};

struct msg_def {
	enum proto_type	 type;
	const char	*name;
	enum proto_peer	 from;
	bool		 either;	/* sent by both peers */
	const struct field *fields;
	size_t		 nfields;
	/* Cross-field rules; 'seen' has bit i set when fields[i] was present. */
	int		(*check)(const struct msg_def *, struct proto_msg *,
			    unsigned int seen, char *, size_t);
};

static int	check_ack(const struct msg_def *, struct proto_msg *,
		    unsigned int, char *, size_t);
static bool	ack_is_ok(const struct proto_msg *);
static bool	ack_is_not_ok(const struct proto_msg *);
static bool	error_has_seq(const struct proto_msg *);
static bool	governor_set(const struct proto_msg *);
static bool	hello_max_lease_set(const struct proto_msg *);
static bool	hello_applied_set(const struct proto_msg *);
static bool	report_runnable_set(const struct proto_msg *);

#define BODY(memb)	offsetof(struct proto_msg, memb)

static const struct field hello_host_fields[] = {
	{ .name = "session", .kind = FK_SESSION,
	  .off = BODY(hello_host.session) },
	{ .name = "host", .kind = FK_TEXT, .off = BODY(hello_host.host),
	  .size = PROTO_MAX_TEXT },
	{ .name = "period_ms", .kind = FK_U32,
	  .off = BODY(hello_host.period_ms),
	  .min = 1, .max = PROTO_MAX_PERIOD_MS },
	{ .name = "max_lease_ms", .kind = FK_U32,
	  .off = BODY(hello_host.max_lease_ms),
	  .min = PROTO_MIN_LEASE_MS, .max = PROTO_MAX_LEASE_MS,
	  .flags = FF_OPTIONAL, .present = hello_max_lease_set },
};

static const struct field hello_guest_fields[] = {
	{ .name = "session", .kind = FK_SESSION,
	  .off = BODY(hello_guest.session) },
	{ .name = "agent", .kind = FK_TEXT, .off = BODY(hello_guest.agent),
	  .size = PROTO_MAX_TEXT },
	{ .name = "online", .kind = FK_CPULIST,
	  .off = BODY(hello_guest.online), .flags = FF_NONEMPTY },
	{ .name = "cores", .kind = FK_CORES, .off = BODY(hello_guest) },
	{ .name = "backend", .kind = FK_TEXT,
	  .off = BODY(hello_guest.backend), .size = PROTO_MAX_TEXT },
	{ .name = "backends", .kind = FK_BACKENDS, .off = BODY(hello_guest) },
	{ .name = "kernel", .kind = FK_TEXT, .off = BODY(hello_guest.kernel),
	  .size = PROTO_MAX_TEXT },
	{ .name = "governor", .kind = FK_TEXT,
	  .off = BODY(hello_guest.governor), .size = PROTO_MAX_TEXT,
	  .flags = FF_OPTIONAL, .present = governor_set },
	{ .name = "keeps_affinity", .kind = FK_BOOL,
	  .off = BODY(hello_guest.keeps_affinity), .flags = FF_OPTIONAL },
	{ .name = "applied", .kind = FK_CPULIST,
	  .off = BODY(hello_guest.applied), .flags = FF_OPTIONAL | FF_NONEMPTY,
	  .present = hello_applied_set },
};

static const struct field target_fields[] = {
	{ .name = "session", .kind = FK_SESSION,
	  .off = BODY(target.session) },
	{ .name = "seq", .kind = FK_SEQ, .off = BODY(target.seq) },
	{ .name = "preferred", .kind = FK_CPULIST,
	  .off = BODY(target.preferred), .flags = FF_NONEMPTY },
	{ .name = "lease_ms", .kind = FK_U32, .off = BODY(target.lease_ms),
	  .min = PROTO_MIN_LEASE_MS, .max = PROTO_MAX_LEASE_MS,
	  .flags = FF_OPTIONAL, .def = PROTO_DEFAULT_LEASE_MS },
};

/* An ack carries "applied" when ok and "error" when not (check_ack). */
static const struct field ack_fields[] = {
	{ .name = "seq", .kind = FK_SEQ, .off = BODY(ack.seq) },
	{ .name = "ok", .kind = FK_BOOL, .off = BODY(ack.ok) },
	{ .name = "applied", .kind = FK_CPULIST, .off = BODY(ack.applied),
	  .flags = FF_OPTIONAL | FF_NONEMPTY, .present = ack_is_ok },
	{ .name = "error", .kind = FK_TEXT, .off = BODY(ack.error),
	  .size = PROTO_MAX_ERROR, .flags = FF_OPTIONAL,
	  .present = ack_is_not_ok },
};

static const struct field release_fields[] = {
	{ .name = "session", .kind = FK_SESSION,
	  .off = BODY(release.session) },
};

static const struct field report_fields[] = {
	{ .name = "online", .kind = FK_CPULIST, .off = BODY(report.online),
	  .flags = FF_NONEMPTY },
	{ .name = "steal_pct", .kind = FK_PCT, .off = BODY(report.steal_pct) },
	{ .name = "psi_some_avg10", .kind = FK_PCT,
	  .off = BODY(report.psi_some_avg10) },
	{ .name = "nr_running", .kind = FK_U32,
	  .off = BODY(report.nr_running), .min = 0,
	  .max = PROTO_MAX_NR_RUNNING },
	/* Added in v1 compatibly: a peer that does not know it ignores it. */
	{ .name = "runnable", .kind = FK_NUM, .off = BODY(report.runnable),
	  .max = PROTO_MAX_NR_RUNNING, .flags = FF_OPTIONAL,
	  .present = report_runnable_set,
	  .has_off = BODY(report.has_runnable) },
};

static const struct field ping_fields[] = {
	{ .name = "seq", .kind = FK_SEQ, .off = BODY(ping.seq) },
};

static const struct field error_fields[] = {
	{ .name = "error", .kind = FK_TEXT, .off = BODY(error.error),
	  .size = PROTO_MAX_ERROR },
	{ .name = "seq", .kind = FK_SEQ, .off = BODY(error.seq),
	  .flags = FF_OPTIONAL, .present = error_has_seq,
	  .has_off = BODY(error.has_seq) },
};

#define FIELDS(a)	(a), nitems(a)

/* Indexed by enum proto_type. */
static const struct msg_def msg_table[] = {
	[PROTO_HELLO_HOST] = { PROTO_HELLO_HOST, "hello", PROTO_FROM_HOST,
	    false, FIELDS(hello_host_fields), NULL },
	[PROTO_HELLO_GUEST] = { PROTO_HELLO_GUEST, "hello", PROTO_FROM_GUEST,
	    false, FIELDS(hello_guest_fields), NULL },
	[PROTO_TARGET] = { PROTO_TARGET, "target", PROTO_FROM_HOST,
	    false, FIELDS(target_fields), NULL },
	[PROTO_ACK] = { PROTO_ACK, "ack", PROTO_FROM_GUEST,
	    false, FIELDS(ack_fields), check_ack },
	[PROTO_RELEASE] = { PROTO_RELEASE, "release", PROTO_FROM_HOST,
	    false, FIELDS(release_fields), NULL },
	[PROTO_REPORT] = { PROTO_REPORT, "report", PROTO_FROM_GUEST,
	    false, FIELDS(report_fields), NULL },
	[PROTO_PING] = { PROTO_PING, "ping", PROTO_FROM_HOST,
	    true, FIELDS(ping_fields), NULL },
	[PROTO_PONG] = { PROTO_PONG, "pong", PROTO_FROM_HOST,
	    true, FIELDS(ping_fields), NULL },
	[PROTO_ERROR] = { PROTO_ERROR, "error", PROTO_FROM_HOST,
	    true, FIELDS(error_fields), NULL },
};

static const char *const peer_names[] = {
	[PROTO_FROM_HOST] = "host",
	[PROTO_FROM_GUEST] = "guest",
};

static bool
ack_is_ok(const struct proto_msg *m)
{
	return m->ack.ok;
}

static bool
ack_is_not_ok(const struct proto_msg *m)
{
	return !m->ack.ok;
}

static bool
error_has_seq(const struct proto_msg *m)
{
	return m->error.has_seq;
}

static bool
governor_set(const struct proto_msg *m)
{
	return m->hello_guest.governor[0] != '\0';
}

static bool
hello_max_lease_set(const struct proto_msg *m)
{
	return m->hello_host.max_lease_ms != 0;
}

static bool
hello_applied_set(const struct proto_msg *m)
{
	return !cpuset_empty(&m->hello_guest.applied);
}

static bool
report_runnable_set(const struct proto_msg *m)
{
	return m->report.has_runnable;
}

static const struct msg_def *
msg_def_get(enum proto_type type)
{
	if ((size_t)type >= nitems(msg_table))
		return NULL;
	return &msg_table[type];
}

const char *
proto_type_name(enum proto_type type)
{
	const struct msg_def	*def = msg_def_get(type);

	return def != NULL ? def->name : "unknown";
}

static void *
field_ptr(struct proto_msg *m, const struct field *f)
{
	return (char *)m + f->off;
}

static const void *
field_cptr(const struct proto_msg *m, const struct field *f)
{
	return (const char *)m + f->off;
}

/*
 * Length of the valid UTF-8 prefix of s (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF); equals len when all of s is valid.
 * json-c's own check lets overlong forms and surrogates through.
 */
static size_t
utf8_valid_prefix(const unsigned char *s, size_t len)
{
	size_t	i = 0, n;

	while (i < len) {
		if (s[i] < 0x80) {
			i++;
			continue;
		}
		if ((n = utf8_len(s + i, len - i)) == 0)
			return i;
		i += n;
	}
	return i;
}

/* Printable form of a number json-c parsed, for error texts. */
static const char *
num_text(struct json_object *o, char *buf, size_t len)
{
	const char	*s = json_object_to_json_string_ext(o,
			    JSON_C_TO_STRING_PLAIN);

	return str_escape(buf, len, s, strlen(s));
}

/* Decode a string field's bytes into buf[size], or fail with a cause. */
static int
decode_text(struct json_object *o, char *buf, size_t size, const char *what,
    char *err, size_t errlen)
{
	const char	*s;
	size_t		 n, i;

	if (!json_object_is_type(o, json_type_string)) {
		err_set(err, errlen, "%s: expected a string, got %s", what,
		    json_type_to_name(json_object_get_type(o)));
		return -1;
	}
	s = json_object_get_string(o);
	n = (size_t)json_object_get_string_len(o);
	if (n >= size) {
		err_set(err, errlen, "%s: %zu bytes, longer than %zu", what, n,
		    size - 1);
		return -1;
	}
	/* json-c turns \u0000 and \n escapes into raw bytes. */
	for (i = 0; i < n; i++) {
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f) {
			err_set(err, errlen, "%s: control character at offset %zu",
			    what, i);
			return -1;
		}
	}
	if (utf8_valid_prefix((const unsigned char *)s, n) != n) {
		err_set(err, errlen, "%s: invalid UTF-8", what);
		return -1;
	}
	memcpy(buf, s, n);
	buf[n] = '\0';
	return 0;
}

static int
decode_cpulist(struct json_object *o, struct cpuset *set, bool nonempty,
    const char *what, char *err, size_t errlen)
{
	char		 cause[256], esc[256];
	const char	*s;
	size_t		 n;

	if (!json_object_is_type(o, json_type_string)) {
		err_set(err, errlen, "%s: expected a cpulist string, got %s",
		    what, json_type_to_name(json_object_get_type(o)));
		return -1;
	}
	s = json_object_get_string(o);
	n = (size_t)json_object_get_string_len(o);
	/* cpuset_parse_n takes sysfs's trailing newline; a message has none. */
	if (n > 0 && s[n - 1] == '\n') {
		err_set(err, errlen, "%s: control character at offset %zu", what,
		    n - 1);
		return -1;
	}
	if (cpuset_parse_n(set, s, n, cause, sizeof(cause)) != 0) {
		/* The cause may quote guest bytes. */
		err_set(err, errlen, "%s: %s", what,
		    str_escape(esc, sizeof(esc), cause, strnlen(cause,
		    sizeof(cause))));
		return -1;
	}
	if (nonempty && cpuset_empty(set)) {
		err_set(err, errlen, "%s: empty cpulist", what);
		return -1;
	}
	return 0;
}

/* An integer in min..max; doubles, strings and booleans are not numbers. */
static int
decode_uint(struct json_object *o, uint64_t min, uint64_t max, uint64_t *out,
    const char *what, char *err, size_t errlen)
{
	char		 num[64];
	uint64_t	 u;

	if (!json_object_is_type(o, json_type_int)) {
		err_set(err, errlen, "%s: expected an integer, got %s", what,
		    json_type_to_name(json_object_get_type(o)));
		return -1;
	}
	/* json-c keeps ints above INT64_MAX as uint64 and saturates beyond. */
	if (json_object_get_int64(o) < 0) {
		err_set(err, errlen, "%s: %s is out of range %" PRIu64 "..%"
		    PRIu64, what, num_text(o, num, sizeof(num)), min, max);
		return -1;
	}
	u = json_object_get_uint64(o);
	if (u < min || u > max) {
		err_set(err, errlen, "%s: %s is out of range %" PRIu64 "..%"
		    PRIu64, what, num_text(o, num, sizeof(num)), min, max);
		return -1;
	}
	*out = u;
	return 0;
}

static int
decode_session(struct json_object *o, uint64_t *out, const char *what,
    char *err, size_t errlen)
{
	const char	*s;
	uint64_t	 v = 0;
	size_t		 i, n;

	if (!json_object_is_type(o, json_type_string)) {
		err_set(err, errlen, "%s: expected a string of 16 hex digits, "
		    "got %s", what, json_type_to_name(json_object_get_type(o)));
		return -1;
	}
	s = json_object_get_string(o);
	n = (size_t)json_object_get_string_len(o);
	if (n != 16)
		goto bad;
	for (i = 0; i < n; i++) {
		if (s[i] >= '0' && s[i] <= '9')
			v = (v << 4) | (uint64_t)(s[i] - '0');
		else if (s[i] >= 'a' && s[i] <= 'f')
			v = (v << 4) | (uint64_t)(s[i] - 'a' + 10);
		else
			goto bad;
	}
	if (v == 0) {
		err_set(err, errlen, "%s: session 0 is not valid", what);
		return -1;
	}
	*out = v;
	return 0;
bad:
	err_set(err, errlen, "%s: not 16 lowercase hex digits", what);
	return -1;
}

/* A finite number in 0..max; strings and booleans are not numbers. */
static int
decode_num(struct json_object *o, double max, double *out, const char *what,
    char *err, size_t errlen)
{
	char	num[64];
	double	d;

	if (!json_object_is_type(o, json_type_double) &&
	    !json_object_is_type(o, json_type_int)) {
		err_set(err, errlen, "%s: expected a number, got %s", what,
		    json_type_to_name(json_object_get_type(o)));
		return -1;
	}
	d = json_object_get_double(o);
	if (!isfinite(d)) {
		err_set(err, errlen, "%s: %s is not a finite number", what,
		    num_text(o, num, sizeof(num)));
		return -1;
	}
	if (d < 0 || d > max) {
		err_set(err, errlen, "%s: %s is out of range 0..%.15g", what,
		    num_text(o, num, sizeof(num)), max);
		return -1;
	}
	*out = d;
	return 0;
}

static int
decode_cores(struct json_object *o, struct proto_hello_guest *hg,
    const char *what, char *err, size_t errlen)
{
	struct cpuset	 seen, *cores;
	char		 item[128];
	size_t		 n, i;

	if (!json_object_is_type(o, json_type_array)) {
		err_set(err, errlen, "%s: expected an array of cpulists, got %s",
		    what, json_type_to_name(json_object_get_type(o)));
		return -1;
	}
	n = json_object_array_length(o);
	if (n == 0 || n > PROTO_MAX_CORES) {
		err_set(err, errlen, "%s: %zu cores, not 1..%d", what, n,
		    PROTO_MAX_CORES);
		return -1;
	}
	cores = xcalloc(n, sizeof(*cores));
	cpuset_zero(&seen);
	for (i = 0; i < n; i++) {
		snprintf(item, sizeof(item), "%s[%zu]", what, i);
		if (decode_cpulist(json_object_array_get_idx(o, i), &cores[i],
		    true, item, err, errlen) != 0)
			goto fail;
		/* A vCPU belongs to one core; overlaps would double-count. */
		if (cpuset_intersects(&seen, &cores[i])) {
			err_set(err, errlen, "%s: overlaps an earlier core", item);
			goto fail;
		}
		cpuset_or(&seen, &seen, &cores[i]);
	}
	hg->cores = cores;
	hg->ncores = (unsigned int)n;
	return 0;
fail:
	free(cores);
	return -1;
}

static int
decode_backends(struct json_object *o, struct proto_hello_guest *hg,
    const char *what, char *err, size_t errlen)
{
	char	item[128];
	size_t	n, i;

	if (!json_object_is_type(o, json_type_array)) {
		err_set(err, errlen, "%s: expected an array of strings, got %s",
		    what, json_type_to_name(json_object_get_type(o)));
		return -1;
	}
	n = json_object_array_length(o);
	if (n > PROTO_MAX_BACKENDS) {
		err_set(err, errlen, "%s: %zu entries, more than %d", what, n,
		    PROTO_MAX_BACKENDS);
		return -1;
	}
	for (i = 0; i < n; i++) {
		snprintf(item, sizeof(item), "%s[%zu]", what, i);
		if (decode_text(json_object_array_get_idx(o, i),
		    hg->backends[i], PROTO_MAX_TEXT, item, err, errlen) != 0)
			return -1;
	}
	hg->nbackends = (unsigned int)n;
	return 0;
}

static int
decode_field(struct json_object *o, const struct field *f,
    struct proto_msg *m, const char *what, char *err, size_t errlen)
{
	void		*p = field_ptr(m, f);
	uint64_t	 u;
	bool		*b;

	switch (f->kind) {
	case FK_SESSION:
		return decode_session(o, p, what, err, errlen);
	case FK_SEQ:
		return decode_uint(o, 1, PROTO_MAX_SEQ, p, what, err, errlen);
	case FK_U32:
		if (decode_uint(o, f->min, f->max, &u, what, err, errlen) != 0)
			return -1;
		*(uint32_t *)p = (uint32_t)u;
		return 0;
	case FK_PCT:
		return decode_num(o, PROTO_MAX_PCT, p, what, err, errlen);
	case FK_NUM:
		return decode_num(o, f->max, p, what, err, errlen);
	case FK_BOOL:
		if (!json_object_is_type(o, json_type_boolean)) {
			err_set(err, errlen, "%s: expected true or false, got %s",
			    what, json_type_to_name(json_object_get_type(o)));
			return -1;
		}
		b = p;
		*b = json_object_get_boolean(o) != 0;
		return 0;
	case FK_TEXT:
		return decode_text(o, p, f->size, what, err, errlen);
	case FK_CPULIST:
		return decode_cpulist(o, p, (f->flags & FF_NONEMPTY) != 0, what,
		    err, errlen);
	case FK_CORES:
		return decode_cores(o, &m->hello_guest, what, err, errlen);
	case FK_BACKENDS:
		return decode_backends(o, &m->hello_guest, what, err, errlen);
	}
	err_set(err, errlen, "%s: no decoder", what);
	return -1;
}

static void
apply_default(const struct field *f, struct proto_msg *m)
{
	if (f->kind == FK_U32)
		*(uint32_t *)field_ptr(m, f) = f->def;
}

static int
check_ack(const struct msg_def *def, struct proto_msg *m, unsigned int seen,
    char *err, size_t errlen)
{
	size_t	i;

	for (i = 0; i < def->nfields; i++) {
		const struct field *f = &def->fields[i];

		if (f->present == NULL || (seen & (1u << i)) != 0)
			continue;
		if (f->present(m)) {
			err_set(err, errlen, "%s: %s: missing (ok is %s)",
			    def->name, f->name, m->ack.ok ? "true" : "false");
			return -1;
		}
	}
	return 0;
}

static const struct msg_def *
find_type(const char *name, size_t len, enum proto_peer from)
{
	size_t	i;

	for (i = 0; i < nitems(msg_table); i++) {
		const struct msg_def *def = &msg_table[i];

		if (!def->either && def->from != from)
			continue;
		if (strlen(def->name) == len && memcmp(def->name, name, len) == 0)
			return def;
	}
	return NULL;
}

/* "v" must be the integer 1. */
static int
check_version(struct json_object *root, char *err, size_t errlen)
{
	struct json_object	*v;
	char			 num[64];

	if (!json_object_object_get_ex(root, "v", &v)) {
		err_set(err, errlen, "v: missing");
		return -1;
	}
	if (!json_object_is_type(v, json_type_int)) {
		err_set(err, errlen, "v: expected the integer %d, got %s",
		    PROTO_VERSION, json_type_to_name(json_object_get_type(v)));
		return -1;
	}
	if (json_object_get_int64(v) != PROTO_VERSION) {
		err_set(err, errlen, "v: version %s is not supported (%d)",
		    num_text(v, num, sizeof(num)), PROTO_VERSION);
		return -1;
	}
	return 0;
}

static const struct msg_def *
decode_type(struct json_object *root, enum proto_peer from, char *err,
    size_t errlen)
{
	struct json_object	*t;
	const struct msg_def	*def;
	const char		*s;
	char			 esc[64];
	size_t			 n;

	if (!json_object_object_get_ex(root, "type", &t)) {
		err_set(err, errlen, "type: missing");
		return NULL;
	}
	if (!json_object_is_type(t, json_type_string)) {
		err_set(err, errlen, "type: expected a string, got %s",
		    json_type_to_name(json_object_get_type(t)));
		return NULL;
	}
	s = json_object_get_string(t);
	n = (size_t)json_object_get_string_len(t);
	def = find_type(s, n, from);
	if (def == NULL)
		err_set(err, errlen, "unknown type \"%s\" from the %s",
		    str_escape(esc, sizeof(esc), s, n),
		    peer_names[from]);
	return def;
}


/* A protocol line as one JSON object: bounded, UTF-8, then the strict parse. */
static struct json_object *
parse_line(const char *line, size_t len, char *err, size_t errlen)
{
	struct json_object	*root;
	char			 cause[PROTO_MAX_ERROR];
	size_t			 off;

	if (len > PROTO_MAX_LINE) {
		err_set(err, errlen, "line: %zu bytes, longer than %d", len,
		    PROTO_MAX_LINE);
		return NULL;
	}
	if (len == 0) {
		err_set(err, errlen, "line: empty");
		return NULL;
	}
	if (memchr(line, '\0', len) == NULL &&
	    (off = utf8_valid_prefix((const unsigned char *)line, len)) != len) {
		err_set(err, errlen, "line: invalid UTF-8 at offset %zu", off);
		return NULL;
	}
	root = json_parse_object(line, len, PROTO_MAX_DEPTH, cause,
	    sizeof(cause));
	if (root == NULL)
		err_set(err, errlen, "line: %s", cause);
	return root;
}

int
proto_decode(const char *line, size_t len, enum proto_peer from,
    struct proto_msg *msg, uint64_t *seq_out, char *err, size_t errlen)
{
	struct json_object	*root, *o, *seq;
	const struct msg_def	*def;
	char			 what[96], cause[PROTO_MAX_ERROR];
	unsigned int		 seen = 0;
	uint64_t		 u;
	size_t			 i;

	memset(msg, 0, sizeof(*msg));
	if (seq_out != NULL)
		*seq_out = 0;
	if (err != NULL && errlen > 0)
		err[0] = '\0';

	if ((size_t)from >= nitems(peer_names)) {
		err_set(err, errlen, "no such peer %d", (int)from);
		return -1;
	}
	if ((root = parse_line(line, len, err, errlen)) == NULL)
		return -1;

	if (seq_out != NULL && json_object_object_get_ex(root, "seq", &seq) &&
	    decode_uint(seq, 1, PROTO_MAX_SEQ, &u, "seq", cause,
	    sizeof(cause)) == 0)
		*seq_out = u;

	if (check_version(root, err, errlen) != 0 ||
	    (def = decode_type(root, from, err, errlen)) == NULL)
		goto fail;
	msg->type = def->type;

	for (i = 0; i < def->nfields; i++) {
		const struct field *f = &def->fields[i];

		snprintf(what, sizeof(what), "%s: %s", def->name, f->name);
		if (!json_object_object_get_ex(root, f->name, &o)) {
			if (f->flags & FF_OPTIONAL) {
				apply_default(f, msg);
				continue;
			}
			err_set(err, errlen, "%s: missing", what);
			goto fail;
		}
		if (decode_field(o, f, msg, what, err, errlen) != 0)
			goto fail;
		seen |= 1u << i;
		if (f->has_off != 0)
			*(bool *)((char *)msg + f->has_off) = true;
	}
	if (def->check != NULL && def->check(def, msg, seen, err, errlen) != 0)
		goto fail;
	json_object_put(root);
	return 0;
fail:
	json_object_put(root);
	proto_msg_clear(msg);
	memset(msg, 0, sizeof(*msg));
	return -1;
}

void
proto_msg_clear(struct proto_msg *msg)
{
	if (msg->type == PROTO_HELLO_GUEST) {
		free(msg->hello_guest.cores);
		msg->hello_guest.cores = NULL;
		msg->hello_guest.ncores = 0;
	}
}

static struct json_object *
encode_text(const char *s, size_t size)
{
	size_t	n = strnlen(s, size);

	if (n == size)
		return NULL;
	return json_object_new_string_len(s, (int)n);
}

static struct json_object *
encode_cpulist(const struct cpuset *set)
{
	char	buf[PROTO_MAX_LINE + 1];

	if (cpuset_format(set, buf, sizeof(buf)) < 0)
		return NULL;
	return json_object_new_string(buf);
}

static struct json_object *
encode_field(const struct proto_msg *m, const struct field *f)
{
	const struct proto_hello_guest	*hg = &m->hello_guest;
	const void			*p = field_cptr(m, f);
	struct json_object		*a, *e;
	char				 hex[17], num[32];
	unsigned int			 i;

	switch (f->kind) {
	case FK_SESSION:
		proto_session_format(*(const uint64_t *)p, hex);
		return json_object_new_string(hex);
	case FK_SEQ:
		return json_object_new_uint64(*(const uint64_t *)p);
	case FK_U32:
		return json_object_new_uint64(*(const uint32_t *)p);
	case FK_PCT:
		return json_object_new_double(*(const double *)p);
	case FK_NUM:
		/* Nine digits: 2.55, not json-c's 2.5499999999999998. */
		snprintf(num, sizeof(num), "%.9g", *(const double *)p);
		return json_object_new_double_s(*(const double *)p, num);
	case FK_BOOL:
		return json_object_new_boolean(*(const bool *)p);
	case FK_TEXT:
		return encode_text(p, f->size);
	case FK_CPULIST:
		return encode_cpulist(p);
	case FK_CORES:
		if (hg->ncores > PROTO_MAX_CORES ||
		    (hg->ncores > 0 && hg->cores == NULL))
			return NULL;
		a = json_object_new_array_ext((int)hg->ncores);
		for (i = 0; i < hg->ncores; i++) {
			if ((e = encode_cpulist(&hg->cores[i])) == NULL) {
				json_object_put(a);
				return NULL;
			}
			json_object_array_add(a, e);
		}
		return a;
	case FK_BACKENDS:
		if (hg->nbackends > PROTO_MAX_BACKENDS)
			return NULL;
		a = json_object_new_array_ext((int)hg->nbackends);
		for (i = 0; i < hg->nbackends; i++) {
			e = encode_text(hg->backends[i], PROTO_MAX_TEXT);
			if (e == NULL) {
				json_object_put(a);
				return NULL;
			}
			json_object_array_add(a, e);
		}
		return a;
	}
	return NULL;
}

/* The peer that receives a message of this type decodes it as 'from'. */
static int
encode_verify(const struct msg_def *def, const char *line, size_t len)
{
	struct proto_msg	back;
	int			rc;

	rc = proto_decode(line, len, def->from, &back, NULL, NULL, 0);
	if (rc == 0)
		proto_msg_clear(&back);
	return rc;
}

int
proto_encode(const struct proto_msg *msg, char *buf, size_t len)
{
	const struct msg_def	*def = msg_def_get(msg->type);
	struct json_object	*root, *o;
	const char		*s;
	size_t			 i, n;
	int			 rc = -1;

	if (def == NULL)
		return -1;
	root = json_object_new_object();
	json_object_object_add(root, "v", json_object_new_int(PROTO_VERSION));
	json_object_object_add(root, "type", json_object_new_string(def->name));
	for (i = 0; i < def->nfields; i++) {
		const struct field *f = &def->fields[i];

		if (f->present != NULL && !f->present(msg))
			continue;
		if ((o = encode_field(msg, f)) == NULL)
			goto out;
		json_object_object_add(root, f->name, o);
	}
	s = json_object_to_json_string_ext(root, JSON_C_TO_STRING_PLAIN |
	    JSON_C_TO_STRING_NOSLASHESCAPE);
	n = strlen(s);
	if (n > PROTO_MAX_LINE || n + 2 > len)
		goto out;
	if (encode_verify(def, s, n) != 0)
		goto out;
	memcpy(buf, s, n);
	buf[n] = '\n';
	buf[n + 1] = '\0';
	rc = (int)(n + 1);
out:
	json_object_put(root);
	return rc;
}

void
proto_session_format(uint64_t session, char buf[17])
{
	snprintf(buf, 17, "%016" PRIx64, session);
}

uint64_t
proto_session_new(void)
{
	uint64_t	v = 0;
	ssize_t		n;

	while (v == 0) {
		n = getrandom(&v, sizeof(v), 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n != (ssize_t)sizeof(v))
			fatal("getrandom");
	}
	return v;
}
