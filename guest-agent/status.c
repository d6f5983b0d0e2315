/* Status file and the `status` command. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include <json-c/json.h>

#include "backend.h"
#include "log.h"
#include "status.h"
#include "util.h"

#define STATUS_RUNNING		0
#define STATUS_ERROR		1
#define STATUS_NOT_RUNNING	3	/* as LSB's "status" */

void
status_save(const struct guestd_conf *conf, const struct state *st)
{
	static int	 warned;
	char		*path = path_join(conf->run_dir, GUESTD_STATUS_FILE);
	char		 err[512];

	if (state_save(st, path, err, sizeof(err)) == -1 && !warned++)
		log_warnx("status file: %s", err);
	free(path);
}

int
status_lock(const char *run_dir)
{
	char	*path = path_join(run_dir, GUESTD_NAME ".lock");
	int	 fd, saved;

	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	saved = errno;
	free(path);
	if (fd == -1) {
		errno = saved;
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) == -1) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}

/* Does an agent hold the lock of run_dir? */
static bool
status_locked(const char *run_dir)
{
	char	*path = path_join(run_dir, GUESTD_NAME ".lock");
	int	 fd;
	bool	 held = false;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) != -1) {
		held = flock(fd, LOCK_SH | LOCK_NB) == -1 &&
		    errno == EWOULDBLOCK;
		close(fd);
	}
	free(path);
	return held;
}

void
status_remove(const struct guestd_conf *conf)
{
	char	*path = path_join(conf->run_dir, GUESTD_STATUS_FILE);

	if (unlink(path) == -1 && errno != ENOENT)
		log_warn("%s", path);
	free(path);
}

/* How each kind of original reads for a human: pre KEY mid VALUE post. */
static const struct {
	const char	*kind;
	const char	*pre, *mid, *post;
	bool		 value;
} status_originals[] = {
	{ "cpuset", "cgroup /", ": cpuset.cpus was \"", "\"", true },
	{ "cpuset-enabled", "cgroup /",
	    ": cpuset controller enabled by the agent", "", false },
	{ "cpuset-idle", "cgroup /",
	    ": isolated partition of the idle CPUs, made by the agent", "",
	    false },
	{ "allowed", "slice ", ": AllowedCPUs was \"", "\"", true },
	{ "preferred", "", " was \"", "\"", true },
	{ "affinity", "thread ", ": affinity ", ", kept by the agent", true },
};

static void
status_print_originals(const struct state *orig)
{
	char	key[512], val[512];
	size_t	i, j;

	for (i = 0; i < orig->n; i++) {
		const struct state_rec	*r = &orig->recs[i];

		for (j = 0; j < nitems(status_originals); j++) {
			if (strcmp(status_originals[j].kind, r->kind) == 0)
				break;
		}
		if (j == nitems(status_originals))
			continue;
		str_escape(key, sizeof(key), r->key, strlen(r->key));
		str_escape(val, sizeof(val), r->val, strlen(r->val));
		printf("  %s%s%s%s%s\n", status_originals[j].pre, key,
		    status_originals[j].mid,
		    status_originals[j].value ? val : "",
		    status_originals[j].post);
	}
}

static const char *
status_get(const struct state *st, const char *key)
{
	const char	*v = state_get(st, "status", key);

	return v != NULL ? v : "";
}

static int64_t
status_lease_left(const struct state *st)
{
	uint64_t	end;

	if (parse_uint(status_get(st, "lease_end_mono_ms"), 0, UINT64_MAX,
	    &end) == -1 || end == 0)
		return -1;
	return end > time_mono_ms() ? (int64_t)(end - time_mono_ms()) : 0;
}

static void
status_human(bool running, const struct state *st, const struct state *orig)
{
	char		 buf[512];
	const char	*v;
	int64_t		 left;
	uint64_t	 started;

	if (!running) {
		printf("%s is not running\n", GUESTD_NAME);
	} else {
		printf("%s is running (pid %s", GUESTD_NAME,
		    status_get(st, "pid"));
		if (parse_uint(status_get(st, "started_ms"), 1, UINT64_MAX,
		    &started) == 0 && time_real_ms() >= started)
			printf(", up %" PRIu64 " s",
			    (time_real_ms() - started) / 1000);
		printf(")\n");
		printf("backend:     %s (usable here: %s; keeps task "
		    "affinities: %s)\n", status_get(st, "backend"),
		    status_get(st, "backends"),
		    status_get(st, "keeps_affinity"));
		str_escape(buf, sizeof(buf), status_get(st, "port"),
		    strlen(status_get(st, "port")));
		if (strcmp(status_get(st, "connected"), "yes") == 0) {
			v = status_get(st, "session");
			printf("host:        connected on %s, %s%s\n", buf,
			    *v != '\0' ? "session " : "no session yet", v);
		} else
			printf("host:        not connected (port %s)\n", buf);
		v = status_get(st, "applied");
		if (*v != '\0')
			printf("applied:     CPUs %s (target %s)\n", v,
			    status_get(st, "applied_seq"));
		else
			printf("applied:     nothing, all CPUs as before\n");
		left = status_lease_left(st);
		if (left >= 0)
			printf("lease left:  %.1f s\n", (double)left / 1000);
		else
			printf("lease left:  no lease\n");
		if (strcmp(status_get(st, "restore_pending"), "yes") == 0)
			printf("restore:     failed, retrying (see the log)\n");
		v = status_get(st, "runnable_source");
		if (strcmp(v, "schedstat") == 0)
			printf("runnable:    mean over each report (schedstat)\n");
		else if (strcmp(v, "loadavg") == 0) {
			v = status_get(st, "runnable_why");
			str_escape(buf, sizeof(buf), v, strlen(v));
			printf("runnable:    instantaneous count of loadavg, not "
			    "a mean: %s\n", buf);
		}
	}
	if (orig->n > 0) {
		printf(running ? "originals:\n" : "originals saved by an "
		    "earlier run, restored at the next start:\n");
		status_print_originals(orig);
	} else if (running)
		printf("originals:   none held\n");
}

static void
status_json(bool running, const struct state *st, const struct state *orig)
{
	struct json_object	*o = json_object_new_object(), *a, *r;
	const char		*v;
	uint64_t		 n;
	int64_t			 left;
	char			*copy, *tok, *save = NULL;
	size_t			 i;

	json_object_object_add(o, "running", json_object_new_boolean(running));
	if (running) {
		if (parse_uint(status_get(st, "pid"), 1, INT32_MAX, &n) == 0)
			json_object_object_add(o, "pid",
			    json_object_new_int64((int64_t)n));
		json_object_object_add(o, "backend",
		    json_object_new_string(status_get(st, "backend")));
		a = json_object_new_array();
		copy = xstrdup(status_get(st, "backends"));
		for (tok = strtok_r(copy, " ", &save); tok != NULL;
		    tok = strtok_r(NULL, " ", &save))
			json_object_array_add(a, json_object_new_string(tok));
		free(copy);
		json_object_object_add(o, "backends", a);
		json_object_object_add(o, "keeps_affinity",
		    json_object_new_boolean(strcmp(status_get(st,
		    "keeps_affinity"), "yes") == 0));
		json_object_object_add(o, "port",
		    json_object_new_string(status_get(st, "port")));
		json_object_object_add(o, "connected",
		    json_object_new_boolean(strcmp(status_get(st,
		    "connected"), "yes") == 0));
		v = status_get(st, "session");
		json_object_object_add(o, "session", *v != '\0' ?
		    json_object_new_string(v) : NULL);
		if (parse_uint(status_get(st, "seq"), 0, UINT64_MAX, &n) == 0)
			json_object_object_add(o, "seq",
			    json_object_new_uint64(n));
		v = status_get(st, "applied");
		json_object_object_add(o, "applied", *v != '\0' ?
		    json_object_new_string(v) : NULL);
		if (parse_uint(status_get(st, "applied_seq"), 0, UINT64_MAX,
		    &n) == 0)
			json_object_object_add(o, "applied_seq",
			    json_object_new_uint64(n));
		left = status_lease_left(st);
		json_object_object_add(o, "lease_left_ms", left >= 0 ?
		    json_object_new_int64(left) : NULL);
		json_object_object_add(o, "restore_pending",
		    json_object_new_boolean(strcmp(status_get(st,
		    "restore_pending"), "yes") == 0));
		json_object_object_add(o, "kernel",
		    json_object_new_string(status_get(st, "kernel")));
		v = status_get(st, "runnable_source");
		json_object_object_add(o, "runnable_source", *v != '\0' ?
		    json_object_new_string(v) : NULL);
		v = status_get(st, "runnable_why");
		json_object_object_add(o, "runnable_fallback", *v != '\0' ?
		    json_object_new_string(v) : NULL);
	}
	a = json_object_new_array();
	for (i = 0; i < orig->n; i++) {
		if (strcmp(orig->recs[i].kind, "backend") == 0)
			continue;
		r = json_object_new_object();
		json_object_object_add(r, "kind",
		    json_object_new_string(orig->recs[i].kind));
		json_object_object_add(r, "key",
		    json_object_new_string(orig->recs[i].key));
		json_object_object_add(r, "value",
		    json_object_new_string(orig->recs[i].val));
		json_object_array_add(a, r);
	}
	json_object_object_add(o, "originals", a);
	v = state_get(orig, "backend", "name");
	json_object_object_add(o, "originals_backend", v != NULL ?
	    json_object_new_string(v) : NULL);
	printf("%s\n", json_object_to_json_string_ext(o,
	    JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
	json_object_put(o);
}

int
status_print(const char *run_dir, int json)
{
	struct state	 st, orig;
	struct guestd_conf conf;
	char		*path, err[512];
	bool		 running;
	int		 rc;

	memset(&conf, 0, sizeof(conf));
	conf.run_dir = run_dir;
	state_init(&st);
	state_init(&orig);
	path = path_join(run_dir, GUESTD_STATUS_FILE);
	rc = state_load(&st, path, err, sizeof(err));
	free(path);
	if (rc == -1) {
		fprintf(stderr, "%s: %s\n", GUESTD_NAME, err);
		return STATUS_ERROR;
	}
	/* A status file outlives a killed agent; its lock does not. */
	running = rc == 1 && status_locked(run_dir);
	path = backend_state_path(&conf);
	rc = state_load(&orig, path, err, sizeof(err));
	free(path);
	if (rc == -1) {
		fprintf(stderr, "%s: %s\n", GUESTD_NAME, err);
		state_free(&st);
		return STATUS_ERROR;
	}
	if (json)
		status_json(running, &st, &orig);
	else
		status_human(running, &st, &orig);
	state_free(&st);
	state_free(&orig);
	return running ? STATUS_RUNNING : STATUS_NOT_RUNNING;
}
