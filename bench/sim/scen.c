/*
 * Scenario file format (one directive per line, '#' starts a comment):
 *
 *   name     spin-4x8                  identifier, used for output files
 *   title    4 VMs x 8 vCPUs ...       free text, the rest of the line
 *   pcpus    16                        host CPUs usable by the VMs
 *   duration 120                       simulated seconds
 *   seed     1                         PRNG seed
 *   tick-us  500                       simulation tick (default 500)
 *   slice-us 4000                      host time slice (default 4000)
 *   period-ms 1000                     policy period (default 1000)
 *   vm NAME key=value ...              one VM, or count=N of them
 *   at SECONDS NAME tasks=N            demand change of a VM or group
 *
 * vm keys: count (VMs named NAME1..NAMEN when > 1), vcpus, threads (vCPUs
 * per guest core, default 1), weight (1..10000, default 100), agent
 * (yes|no, default yes), workload (cpu|spin|barrier|bursty), tasks
 * (default vcpus), cs-us, par-us (spin), work-us, spin-us (barrier),
 * on-ms, off-ms (bursty).  'at' names a VM or a vm line's NAME (all its
 * VMs).  Errors name file:line.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scen.h"
#include "util.h"

#define SCEN_MAX_VMS	4096
#define SCEN_MAX_TOKENS	32

struct scen_parser {
	struct scen	*s;
	const char	*fname;
	unsigned int	line;
	char		*err;
	size_t		errlen;
};

static int
scen_fail(struct scen_parser *p, const char *fmt, ...)
{
	char	msg[160];
	va_list	ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	snprintf(p->err, p->errlen, "%s:%u: %s", p->fname, p->line, msg);
	return -1;
}

static int
scen_num(struct scen_parser *p, const char *what, const char *v, double min,
    double max, double *out)
{
	char	*end;
	double	 d;

	errno = 0;
	d = strtod(v, &end);
	if (errno != 0 || end == v || *end != '\0' || !isfinite(d) ||
	    d < min || d > max)
		return scen_fail(p, "%s: '%s' is not a number in %g..%g",
		    what, v, min, max);
	*out = d;
	return 0;
}

static int
scen_uint(struct scen_parser *p, const char *what, const char *v,
    uint64_t min, uint64_t max, unsigned int *out)
{
	uint64_t u;

	if (parse_uint(v, min, max, &u) == -1)
		return scen_fail(p, "%s: '%s' is not an integer in %llu..%llu",
		    what, v, (unsigned long long)min, (unsigned long long)max);
	*out = (unsigned int)u;
	return 0;
}

static int
scen_name_ok(const char *v)
{
	size_t	i, n = strlen(v);

	if (n == 0 || n > 24)
		return 0;
	for (i = 0; i < n; i++) {
		if (!((v[i] >= 'a' && v[i] <= 'z') || (v[i] >= 'A' &&
		    v[i] <= 'Z') || (v[i] >= '0' && v[i] <= '9') ||
		    v[i] == '-' || v[i] == '_'))
			return 0;
	}
	return 1;
}

static const char *const scen_wl_names[] = {
	[SCEN_WL_CPU] = "cpu",
	[SCEN_WL_SPIN] = "spin",
	[SCEN_WL_BARRIER] = "barrier",
	[SCEN_WL_BURSTY] = "bursty",
};

const char *
scen_wl_name(enum scen_wl wl)
{
	return scen_wl_names[wl];
}

double
scen_vm_demand(const struct scen_vm *vm, unsigned int tasks)
{
	double	d = tasks;

	if (vm->wl == SCEN_WL_BURSTY)
		d *= vm->on_ms / (vm->on_ms + vm->off_ms);
	return d < vm->vcpus ? d : vm->vcpus;
}

/* vm line keys: numeric ones land in a double, then in their field. */
enum scen_key {
	K_COUNT, K_VCPUS, K_THREADS, K_WEIGHT, K_AGENT, K_WORKLOAD, K_TASKS,
	K_CS, K_PAR, K_WORK, K_SPIN, K_ON, K_OFF,
};

static const struct {
	const char	*name;
	enum scen_key	 key;
	double		 min, max;
} scen_keys[] = {
	{ "count", K_COUNT, 1, SCEN_MAX_VMS },
	{ "vcpus", K_VCPUS, 1, SCEN_MAX_VCPUS },
	{ "threads", K_THREADS, 1, 8 },
	{ "weight", K_WEIGHT, 1, 10000 },
	{ "agent", K_AGENT, 0, 0 },
	{ "workload", K_WORKLOAD, 0, 0 },
	{ "tasks", K_TASKS, 0, 4 * SCEN_MAX_VCPUS },
	{ "cs-us", K_CS, 0.1, 1e6 },
	{ "par-us", K_PAR, 0.1, 1e6 },
	{ "work-us", K_WORK, 1, 1e7 },
	{ "spin-us", K_SPIN, 0, 1e7 },
	{ "on-ms", K_ON, 0.01, 1e6 },
	{ "off-ms", K_OFF, 0.01, 1e6 },
};

static int
scen_vm_key(struct scen_parser *p, struct scen_vm *vm, unsigned int *count,
    bool *tasks_set, const char *k, const char *v)
{
	size_t	i, j;
	double	d;

	for (i = 0; i < nitems(scen_keys); i++)
		if (strcmp(scen_keys[i].name, k) == 0)
			break;
	if (i == nitems(scen_keys))
		return scen_fail(p, "vm: unknown key '%s'", k);
	switch (scen_keys[i].key) {
	case K_AGENT:
		if (strcmp(v, "yes") != 0 && strcmp(v, "no") != 0)
			return scen_fail(p, "agent: '%s' is not yes or no", v);
		vm->agent = strcmp(v, "yes") == 0;
		return 0;
	case K_WORKLOAD:
		for (j = 0; j < nitems(scen_wl_names); j++)
			if (strcmp(scen_wl_names[j], v) == 0)
				break;
		if (j == nitems(scen_wl_names))
			return scen_fail(p, "workload: unknown '%s'", v);
		vm->wl = (enum scen_wl)j;
		return 0;
	default:
		break;
	}
	if (scen_num(p, k, v, scen_keys[i].min, scen_keys[i].max, &d) == -1)
		return -1;
	switch (scen_keys[i].key) {
	case K_COUNT: *count = (unsigned int)d; break;
	case K_VCPUS: vm->vcpus = (unsigned int)d; break;
	case K_THREADS: vm->threads = (unsigned int)d; break;
	case K_WEIGHT: vm->weight = (unsigned int)d; break;
	case K_TASKS: vm->tasks = (unsigned int)d; *tasks_set = true; break;
	case K_CS: vm->cs_us = d; break;
	case K_PAR: vm->par_us = d; break;
	case K_WORK: vm->work_us = d; break;
	case K_SPIN: vm->spin_us = d; break;
	case K_ON: vm->on_ms = d; break;
	case K_OFF: vm->off_ms = d; break;
	default: break;
	}
	return 0;
}

static int
scen_do_vm(struct scen_parser *p, char **tok, size_t ntok)
{
	struct scen	*s = p->s;
	struct scen_vm	 vm;
	unsigned int	 count = 1, i;
	bool		 tasks_set = false;
	size_t		 t;
	char		*eq;

	if (ntok < 2 || !scen_name_ok(tok[1]))
		return scen_fail(p, "vm: needs a name of letters, digits, - _");
	memset(&vm, 0, sizeof vm);
	snprintf(vm.group, sizeof vm.group, "%s", tok[1]);
	vm.threads = 1;
	vm.weight = 100;
	vm.agent = true;
	vm.wl = SCEN_WL_CPU;
	vm.cs_us = 20;
	vm.par_us = 200;
	vm.work_us = 5000;
	vm.spin_us = 100;
	vm.on_ms = 20;
	vm.off_ms = 80;
	for (t = 2; t < ntok; t++) {
		if ((eq = strchr(tok[t], '=')) == NULL)
			return scen_fail(p, "vm: '%s' is not key=value", tok[t]);
		*eq = '\0';
		if (scen_vm_key(p, &vm, &count, &tasks_set, tok[t], eq + 1) == -1)
			return -1;
	}
	if (vm.vcpus == 0)
		return scen_fail(p, "vm %s: vcpus is required", vm.group);
	if (vm.vcpus % vm.threads != 0)
		return scen_fail(p, "vm %s: vcpus %u is not a multiple of "
		    "threads %u", vm.group, vm.vcpus, vm.threads);
	if (!tasks_set)
		vm.tasks = vm.vcpus;
	if (s->nvms + count > SCEN_MAX_VMS)
		return scen_fail(p, "more than %d VMs", SCEN_MAX_VMS);
	for (i = 0; i < s->nvms; i++)
		if (strcmp(s->vms[i].group, vm.group) == 0)
			return scen_fail(p, "vm %s: defined twice", vm.group);
	s->vms = xreallocarray(s->vms, s->nvms + count, sizeof *s->vms);
	for (i = 0; i < count; i++) {
		if (count == 1)
			snprintf(vm.name, sizeof vm.name, "%s", vm.group);
		else
			snprintf(vm.name, sizeof vm.name, "%s%u", vm.group, i + 1);
		s->vms[s->nvms++] = vm;
	}
	return 0;
}

static int
scen_do_at(struct scen_parser *p, char **tok, size_t ntok)
{
	struct scen	*s = p->s;
	double		 t_s;
	unsigned int	 tasks = 0;
	size_t		 i, hits = 0;

	if (ntok != 4 || strncmp(tok[3], "tasks=", 6) != 0)
		return scen_fail(p, "at: expected 'at SECONDS NAME tasks=N'");
	if (scen_num(p, "at", tok[1], 0, 1e6, &t_s) == -1 ||
	    scen_uint(p, "tasks", tok[3] + 6, 0, 4 * SCEN_MAX_VCPUS,
	    &tasks) == -1)
		return -1;
	if (s->nevents > 0 && s->events[s->nevents - 1].t_s > t_s)
		return scen_fail(p, "at: times must not decrease");
	for (i = 0; i < s->nvms; i++) {
		if (strcmp(s->vms[i].name, tok[2]) != 0 &&
		    strcmp(s->vms[i].group, tok[2]) != 0)
			continue;
		s->events = xreallocarray(s->events, s->nevents + 1,
		    sizeof *s->events);
		s->events[s->nevents].t_s = t_s;
		s->events[s->nevents].vm = (unsigned int)i;
		s->events[s->nevents].tasks = tasks;
		s->nevents++;
		hits++;
	}
	if (hits == 0)
		return scen_fail(p, "at: no VM named '%s' (define it first)",
		    tok[2]);
	return 0;
}

static int
scen_do_scalar(struct scen_parser *p, char **tok, size_t ntok)
{
	struct scen	*s = p->s;
	unsigned int	 u = 0;
	double		 d;

	if (ntok != 2)
		return scen_fail(p, "%s: expected one value", tok[0]);
	if (strcmp(tok[0], "name") == 0) {
		if (!scen_name_ok(tok[1]))
			return scen_fail(p, "name: letters, digits, - _ only");
		snprintf(s->name, sizeof s->name, "%s", tok[1]);
		return 0;
	}
	if (strcmp(tok[0], "pcpus") == 0)
		return scen_uint(p, "pcpus", tok[1], 1, 8192, &s->pcpus);
	if (strcmp(tok[0], "duration") == 0) {
		if (scen_num(p, "duration", tok[1], 1, 36000, &d) == -1)
			return -1;
		s->duration_s = d;
		return 0;
	}
	if (strcmp(tok[0], "seed") == 0) {
		if (scen_uint(p, "seed", tok[1], 0, UINT32_MAX, &u) == -1)
			return -1;
		s->seed = u;
		return 0;
	}
	if (strcmp(tok[0], "tick-us") == 0)
		return scen_uint(p, "tick-us", tok[1], 50, 10000, &s->tick_us);
	if (strcmp(tok[0], "slice-us") == 0)
		return scen_uint(p, "slice-us", tok[1], 100, 1000000,
		    &s->slice_us);
	return scen_uint(p, "period-ms", tok[1], 10, 60000, &s->period_ms);
}

static const struct {
	const char	*name;
	int		(*fn)(struct scen_parser *, char **, size_t);
} scen_directives[] = {
	{ "name", scen_do_scalar },
	{ "pcpus", scen_do_scalar },
	{ "duration", scen_do_scalar },
	{ "seed", scen_do_scalar },
	{ "tick-us", scen_do_scalar },
	{ "slice-us", scen_do_scalar },
	{ "period-ms", scen_do_scalar },
	{ "vm", scen_do_vm },
	{ "at", scen_do_at },
};

static int
scen_line(struct scen_parser *p, char *line)
{
	char	*tok[SCEN_MAX_TOKENS], *c, *save = NULL;
	size_t	 ntok = 0, i;

	if ((c = strchr(line, '#')) != NULL)
		*c = '\0';
	str_rstrip(line);
	line += strspn(line, " \t");
	if (*line == '\0')
		return 0;
	if (strncmp(line, "title", 5) == 0 && (line[5] == ' ' ||
	    line[5] == '\t')) {
		c = line + 5 + strspn(line + 5, " \t");
		snprintf(p->s->title, sizeof p->s->title, "%s", c);
		return 0;
	}
	for (c = strtok_r(line, " \t", &save); c != NULL;
	    c = strtok_r(NULL, " \t", &save)) {
		if (ntok == SCEN_MAX_TOKENS)
			return scen_fail(p, "too many words");
		tok[ntok++] = c;
	}
	for (i = 0; i < nitems(scen_directives); i++)
		if (strcmp(scen_directives[i].name, tok[0]) == 0)
			return scen_directives[i].fn(p, tok, ntok);
	return scen_fail(p, "unknown directive '%s'", tok[0]);
}

int
scen_parse(struct scen *s, const char *text, const char *fname, char *err,
    size_t errlen)
{
	struct scen_parser p = { s, fname, 0, err, errlen };
	const char	*nl;
	char		*line;
	int		 rc;

	memset(s, 0, sizeof *s);
	s->tick_us = 500;
	s->slice_us = 4000;
	s->period_ms = 1000;
	s->seed = 1;
	while (*text != '\0') {
		p.line++;
		nl = strchr(text, '\n');
		line = nl != NULL ? xstrndup(text, (size_t)(nl - text)) :
		    xstrdup(text);
		rc = scen_line(&p, line);
		free(line);
		if (rc == -1)
			goto fail;
		text = nl != NULL ? nl + 1 : text + strlen(text);
	}
	if (s->name[0] == '\0' || s->pcpus == 0 || s->duration_s <= 0 ||
	    s->nvms == 0) {
		snprintf(err, errlen, "%s: name, pcpus, duration and at least "
		    "one vm are required", fname);
		goto fail;
	}
	if (s->slice_us < s->tick_us) {
		snprintf(err, errlen, "%s: slice-us is shorter than tick-us",
		    fname);
		goto fail;
	}
	return 0;
fail:
	scen_free(s);
	return -1;
}

int
scen_load(struct scen *s, const char *path, char *err, size_t errlen)
{
	FILE	*f;
	char	*buf;
	size_t	 n;
	int	 rc;

	if ((f = fopen(path, "r")) == NULL) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	buf = xmalloc(1 << 20);
	n = fread(buf, 1, (1 << 20) - 1, f);
	if (ferror(f) || !feof(f)) {
		snprintf(err, errlen, "%s: read error or larger than 1 MiB",
		    path);
		fclose(f);
		free(buf);
		return -1;
	}
	fclose(f);
	buf[n] = '\0';
	rc = scen_parse(s, buf, path, err, errlen);
	free(buf);
	return rc;
}

void
scen_free(struct scen *s)
{
	free(s->vms);
	free(s->events);
	s->vms = NULL;
	s->events = NULL;
	s->nvms = s->nevents = 0;
}
