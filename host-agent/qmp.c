/* The QMP reply decoder (see qmp.h). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "jsonobj.h"
#include "qmp.h"
#include "util.h"

/* Parse the line as exactly one JSON object, whitespace around it. */
static struct json_object *
qmp_parse(const char *line, size_t len, char *err, size_t errlen)
{
	if (len == 0) {
		err_set(err, errlen, "empty line");
		return NULL;
	}
	if (len > INT32_MAX) {
		err_set(err, errlen, "line of %zu bytes", len);
		return NULL;
	}
	return json_parse_object(line, len, QMP_MAX_DEPTH, err, errlen);
}

/* Copy a string member; -1 if it is not a string or is too long. */
static int
qmp_str(struct json_object *o, const char *key, char *dst, size_t dstlen,
    bool required, char *err, size_t errlen)
{
	struct json_object	*v;
	size_t			 n;

	dst[0] = '\0';
	if (!json_object_object_get_ex(o, key, &v) || v == NULL) {
		if (required)
			err_set(err, errlen, "\"%s\" missing", key);
		return required ? -1 : 0;
	}
	if (!json_object_is_type(v, json_type_string)) {
		err_set(err, errlen, "\"%s\" is not a string", key);
		return -1;
	}
	n = (size_t)json_object_get_string_len(v);
	if (n >= dstlen) {
		err_set(err, errlen, "\"%s\" is %zu bytes, over %zu", key, n,
		    dstlen - 1);
		return -1;
	}
	memcpy(dst, json_object_get_string(v), n);
	dst[n] = '\0';
	if (strlen(dst) != n) {
		err_set(err, errlen, "\"%s\" holds a NUL", key);
		return -1;
	}
	return 0;
}

/* An integer member in [min, max]; absent: *out = dflt if not required. */
static int
qmp_int(struct json_object *o, const char *key, int64_t min, int64_t max,
    bool required, int dflt, int *out, char *err, size_t errlen)
{
	struct json_object	*v;
	int64_t			 x;

	*out = dflt;
	if (!json_object_object_get_ex(o, key, &v) || v == NULL) {
		if (required)
			err_set(err, errlen, "\"%s\" missing", key);
		return required ? -1 : 0;
	}
	if (!json_object_is_type(v, json_type_int)) {
		err_set(err, errlen, "\"%s\" is not an integer", key);
		return -1;
	}
	x = json_object_get_int64(v);
	if (x < min || x > max) {
		err_set(err, errlen, "\"%s\" %lld is out of range", key,
		    (long long)x);
		return -1;
	}
	*out = (int)x;
	return 0;
}

static bool
qmp_uuid_ok(char *s)
{
	size_t	i;

	if (strlen(s) != 36)
		return false;
	for (i = 0; i < 36; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				return false;
		} else if (!isxdigit((unsigned char)s[i]))
			return false;
		s[i] = (char)tolower((unsigned char)s[i]);
	}
	return true;
}

static int
qmp_cpu_cmp(const void *a, const void *b)
{
	const struct qmp_cpu *x = a, *y = b;

	return x->index < y->index ? -1 : x->index > y->index;
}

static int
qmp_array(struct json_object *ret, const char *what, size_t max,
    size_t *n, char *err, size_t errlen)
{
	if (!json_object_is_type(ret, json_type_array)) {
		err_set(err, errlen, "%s: the return is not an array", what);
		return -1;
	}
	*n = json_object_array_length(ret);
	if (*n > max) {
		err_set(err, errlen, "%s: %zu entries, over %zu", what, *n,
		    max);
		return -1;
	}
	return 0;
}

static int
qmp_cpus(struct json_object *ret, struct qmp_reply *r, char *err,
    size_t errlen)
{
	static const char *const ids[] = { "socket-id", "die-id", "core-id",
	    "thread-id", "node-id" };
	struct json_object	*e, *props;
	struct qmp_cpu		*c;
	size_t			 i, k, n;
	int			 idx, *topo[5];
	char			 cause[128];

	if (qmp_array(ret, "query-cpus-fast", QMP_MAX_CPUS, &n, err,
	    errlen) != 0)
		return -1;
	if (n == 0) {
		err_set(err, errlen, "query-cpus-fast: no vCPUs");
		return -1;
	}
	r->cpus = xcalloc(n, sizeof(*r->cpus));
	for (i = 0; i < n; i++) {
		e = json_object_array_get_idx(ret, i);
		c = &r->cpus[i];
		if (!json_object_is_type(e, json_type_object)) {
			err_set(err, errlen, "query-cpus-fast: entry %zu is "
			    "not an object", i);
			return -1;
		}
		if (qmp_int(e, "cpu-index", 0, QMP_MAX_CPUS - 1, true, 0, &idx,
		    cause, sizeof(cause)) != 0 || qmp_int(e, "thread-id", 1,
		    INT32_MAX, true, 0, &c->tid, cause, sizeof(cause)) != 0) {
			err_set(err, errlen, "query-cpus-fast: entry %zu: %s",
			    i, cause);
			return -1;
		}
		c->index = (unsigned int)idx;
		topo[0] = &c->socket;
		topo[1] = &c->die;
		topo[2] = &c->core;
		topo[3] = &c->thread;
		topo[4] = &c->node;
		for (k = 0; k < 5; k++)
			*topo[k] = -1;
		if (!json_object_object_get_ex(e, "props", &props) ||
		    props == NULL)
			continue;
		if (!json_object_is_type(props, json_type_object)) {
			err_set(err, errlen, "query-cpus-fast: entry %zu: "
			    "\"props\" is not an object", i);
			return -1;
		}
		for (k = 0; k < 5; k++) {
			if (qmp_int(props, ids[k], 0, QMP_MAX_CPUS - 1, false,
			    -1, topo[k], cause, sizeof(cause)) != 0) {
				err_set(err, errlen, "query-cpus-fast: entry "
				    "%zu: %s", i, cause);
				return -1;
			}
		}
	}
	r->n = (unsigned int)n;
	qsort(r->cpus, n, sizeof(*r->cpus), qmp_cpu_cmp);
	for (i = 1; i < n; i++) {
		if (r->cpus[i].index == r->cpus[i - 1].index) {
			err_set(err, errlen, "query-cpus-fast: cpu-index %u "
			    "twice", r->cpus[i].index);
			return -1;
		}
	}
	return 0;
}

/* query-chardev (label, filename) or qom-list (name, type). */
static int
qmp_items(struct json_object *ret, struct qmp_reply *r, bool chardev,
    char *err, size_t errlen)
{
	const char	*what = chardev ? "query-chardev" : "qom-list";
	const char	*k1 = chardev ? "label" : "name";
	const char	*k2 = chardev ? "filename" : "type";
	struct json_object *e;
	size_t		 i, n;
	char		 cause[128];

	if (qmp_array(ret, what, QMP_MAX_ITEMS, &n, err, errlen) != 0)
		return -1;
	r->items = xcalloc(n ? n : 1, sizeof(*r->items));
	for (i = 0; i < n; i++) {
		e = json_object_array_get_idx(ret, i);
		if (!json_object_is_type(e, json_type_object)) {
			err_set(err, errlen, "%s: entry %zu is not an object",
			    what, i);
			return -1;
		}
		if (qmp_str(e, k1, r->items[i].name, QMP_STR, true, cause,
		    sizeof(cause)) != 0 || qmp_str(e, k2, r->items[i].value,
		    QMP_STR, true, cause, sizeof(cause)) != 0) {
			err_set(err, errlen, "%s: entry %zu: %s", what, i,
			    cause);
			return -1;
		}
	}
	r->n = (unsigned int)n;
	return 0;
}

static int
qmp_return(struct json_object *ret, enum qmp_expect expect,
    struct qmp_reply *r, char *err, size_t errlen)
{
	struct json_object	*v;
	char			 cause[128];

	switch (expect) {
	case QMPX_ANY:
		return 0;
	case QMPX_NAME:
	case QMPX_UUID:
	case QMPX_STATUS:
		if (!json_object_is_type(ret, json_type_object)) {
			err_set(err, errlen, "the return is not an object");
			return -1;
		}
		break;
	case QMPX_CPUS:
		return qmp_cpus(ret, r, err, errlen);
	case QMPX_CHARDEV:
		return qmp_items(ret, r, true, err, errlen);
	case QMPX_QOM_LIST:
		return qmp_items(ret, r, false, err, errlen);
	case QMPX_STRING:
		if (!json_object_is_type(ret, json_type_string) ||
		    (size_t)json_object_get_string_len(ret) >= QMP_STR) {
			err_set(err, errlen, "the return is not a string of "
			    "at most %d bytes", QMP_STR - 1);
			return -1;
		}
		memcpy(r->text, json_object_get_string(ret),
		    (size_t)json_object_get_string_len(ret) + 1);
		return 0;
	}
	if (expect == QMPX_NAME) {
		if (qmp_str(ret, "name", r->text, QMP_STR, false, cause,
		    sizeof(cause)) != 0) {
			err_set(err, errlen, "query-name: %s", cause);
			return -1;
		}
		return 0;
	}
	if (expect == QMPX_UUID) {
		if (qmp_str(ret, "UUID", r->text, QMP_STR, true, cause,
		    sizeof(cause)) != 0 || !qmp_uuid_ok(r->text)) {
			err_set(err, errlen, "query-uuid: %s", r->text[0] ?
			    "not a UUID" : cause);
			r->text[0] = '\0';
			return -1;
		}
		return 0;
	}
	if (!json_object_object_get_ex(ret, "running", &v) ||
	    !json_object_is_type(v, json_type_boolean)) {
		err_set(err, errlen, "query-status: \"running\" is not a "
		    "boolean");
		return -1;
	}
	r->running = json_object_get_boolean(v);
	return 0;
}

int
qmp_decode(const char *line, size_t len, enum qmp_expect expect,
    struct qmp_reply *r, char *err, size_t errlen)
{
	struct json_object	*root, *v, *id;
	char			 cause[160];
	int			 rc = -1;

	memset(r, 0, sizeof(*r));
	if (err != NULL && errlen > 0)
		err[0] = '\0';
	if ((root = qmp_parse(line, len, err, errlen)) == NULL)
		return -1;
	if (json_object_object_get_ex(root, "id", &id)) {
		if (!json_object_is_type(id, json_type_int) ||
		    json_object_get_int64(id) < 0) {
			err_set(err, errlen, "\"id\" is not a counter");
			goto out;
		}
		r->has_id = true;
		r->id = (uint64_t)json_object_get_int64(id);
	}
	if (json_object_object_get_ex(root, "QMP", &v)) {
		if (!json_object_is_type(v, json_type_object)) {
			err_set(err, errlen, "greeting: \"QMP\" is not an "
			    "object");
			goto out;
		}
		r->kind = QMPK_GREETING;
		rc = 0;
	} else if (json_object_object_get_ex(root, "event", &v)) {
		r->kind = QMPK_EVENT;
		if (qmp_str(root, "event", r->text, 64, true, cause,
		    sizeof(cause)) != 0) {
			err_set(err, errlen, "event: %s", cause);
			goto out;
		}
		rc = 0;
	} else if (json_object_object_get_ex(root, "error", &v)) {
		r->kind = QMPK_ERROR;
		if (!json_object_is_type(v, json_type_object) ||
		    qmp_str(v, "desc", r->text, QMP_STR, true, cause,
		    sizeof(cause)) != 0) {
			err_set(err, errlen, "error reply without a "
			    "description");
			goto out;
		}
		rc = 0;
	} else if (json_object_object_get_ex(root, "return", &v)) {
		r->kind = QMPK_RETURN;
		rc = qmp_return(v, expect, r, err, errlen);
	} else
		err_set(err, errlen, "neither a greeting, a return, an error "
		    "nor an event");
out:
	json_object_put(root);
	if (rc != 0) {
		if (err != NULL && errlen > 0 && err[0] == '\0')
			err_set(err, errlen, "malformed reply");
		qmp_reply_free(r);
	}
	return rc;
}

void
qmp_reply_free(struct qmp_reply *r)
{
	free(r->cpus);
	free(r->items);
	r->cpus = NULL;
	r->items = NULL;
	r->n = 0;
}

int
qmp_unix_path(const char *filename, char *path, size_t pathlen)
{
	const char	*p, *end;
	size_t		 n;

	/* QEMU says "disconnected:unix:..." while no client is connected. */
	if (strncmp(filename, "disconnected:", 13) == 0)
		filename += 13;
	if (strncmp(filename, "unix:", 5) != 0)
		return -1;
	p = filename + 5;
	/* Options follow the path after a comma. */
	end = strchr(p, ',');
	n = end != NULL ? (size_t)(end - p) : strlen(p);
	if (n == 0 || n >= pathlen || n >= 108 || p[0] != '/')
		return -1;
	memcpy(path, p, n);
	path[n] = '\0';
	return 0;
}

char *
qmp_command(const char *execute, uint64_t id, const char *path,
    const char *property)
{
	struct json_object	*o, *a;
	char			*s;

	o = json_object_new_object();
	json_object_object_add(o, "execute", json_object_new_string(execute));
	json_object_object_add(o, "id", json_object_new_int64((int64_t)id));
	if (path != NULL) {
		a = json_object_new_object();
		json_object_object_add(a, "path",
		    json_object_new_string(path));
		if (property != NULL)
			json_object_object_add(a, "property",
			    json_object_new_string(property));
		json_object_object_add(o, "arguments", a);
	}
	xasprintf(&s, "%s\n", json_object_to_json_string_ext(o,
	    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
	return s;
}
