/*
 * prefcpuctl: the operator's command line for prefcpu-hostd, over the
 * daemon's HTTP API (libcurl; the unix socket by default, --url for TCP).
 *
 * Subcommands come from one table, which also prints --help.  Exit codes
 * (for scripts): 0 done, 1 the daemon refused or failed, 2 usage, 3 the
 * daemon is not reachable, 4 no such domain.
 */
#include <sys/select.h>

#include <errno.h>
#include <stdarg.h>
#include <getopt.h>
#include <locale.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include <curl/curl.h>
#include <json-c/json.h>

#include "ctl_table.h"
#include "polmeta.h"
#include "log.h"
#include "util.h"

#ifndef CTL_DEFAULT_SOCKET
#define CTL_DEFAULT_SOCKET	"/run/prefcpu/hostd.sock"
#endif
#define CTL_MAX_RESPONSE	(64u << 20)

enum ctl_exit {
	CTL_OK = 0,
	CTL_FAIL = 1,
	CTL_USAGE = 2,
	CTL_UNREACHABLE = 3,
	CTL_NOTFOUND = 4,
};

enum ctl_sort {
	CTL_SORT_DEFAULT,	/* status: name, top: delay */
	CTL_SORT_DELAY,		/* run delay share, highest first */
	CTL_SORT_NAME,
	CTL_SORT_VCPUS,		/* most vCPUs first */
};

struct ctl {
	const char	*socket;
	const char	*url;	/* base, e.g. http://127.0.0.1:9471 */
	bool		 json;
	bool		 wide;	/* tables: no width limit */
	enum ctl_sort	 sort;
	CURL		*curl;
};

struct ctl_buf {
	char	*data;
	size_t	 len;
};

struct ctl_cmd {
	const char	*name;
	const char	*args;
	const char	*help;
	int		(*fn)(struct ctl *, int, char **);
};

static int	ctl_status(struct ctl *, int, char **);
static int	ctl_top(struct ctl *, int, char **);
static int	ctl_explain(struct ctl *, int, char **);
static int	ctl_policy(struct ctl *, int, char **);

static const struct ctl_cmd ctl_cmds[] = {
	{ "status", "[--sort delay|name|vcpus] [--wide] [--json]",
	    "Host summary and a table of the VMs, sized to the terminal"
	    " (COLUMNS, else the tty; --wide: no limit), sorted by name.",
	    ctl_status },
	{ "top", "[--iterations N] [--sort delay|name|vcpus] [--wide] [--json]",
	    "Refreshing view of status, every period, the most delayed VMs"
	    " first; q quits.", ctl_top },
	{ "explain", "DOMAIN [--json]",
	    "A VM's policy, target, what the guest applied, agent, and the"
	    " inputs and reason of the last decision.", ctl_explain },
	{ "policy", "DOMAIN [--mode auto|off|fixed] [--weight N]"
	    " [--min-cores N] [--max-cores N] [--cpus LIST]"
	    " [--enforce cap|none] [--dry-run]",
	    "Change a VM's policy in its libvirt metadata, live and"
	    " persistent; --dry-run prints the equivalent virsh command.",
	    ctl_policy },
};

/* A usage error: one line naming the argument, and the command's usage. */
static int ctl_usage_error(const char *, const char *, ...)
    __attribute__((format(printf, 2, 3)));

static int
ctl_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list	ap;
	size_t	i;

	fprintf(stderr, "prefcpuctl: %s%s", cmd != NULL ? cmd : "",
	    cmd != NULL ? ": " : "");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	for (i = 0; cmd != NULL && i < nitems(ctl_cmds); i++) {
		if (strcmp(cmd, ctl_cmds[i].name) == 0)
			fprintf(stderr, " (usage: prefcpuctl %s %s)", cmd,
			    ctl_cmds[i].args);
	}
	if (cmd == NULL)
		fprintf(stderr, " (see prefcpuctl --help)");
	fputc('\n', stderr);
	return CTL_USAGE;
}

static void
ctl_usage(FILE *f)
{
	size_t	i;

	fprintf(f, "usage: prefcpuctl [--socket PATH | --url URL] [--json]"
	    " COMMAND [ARGS]\n\n"
	    "  --socket PATH  the daemon's unix socket (default %s)\n"
	    "  --url URL      the daemon's TCP address, e.g."
	    " http://127.0.0.1:9471 (read-only)\n"
	    "  --json         print the API's JSON (read commands)\n\n"
	    "commands:\n", CTL_DEFAULT_SOCKET);
	for (i = 0; i < nitems(ctl_cmds); i++)
		fprintf(f, "  %s %s\n      %s\n", ctl_cmds[i].name,
		    ctl_cmds[i].args, ctl_cmds[i].help);
	fprintf(f, "\nexit status: 0 done, 1 the daemon refused or failed,"
	    " 2 usage, 3 daemon not reachable, 4 no such domain\n");
}

static size_t
ctl_write_cb(char *ptr, size_t size, size_t n, void *arg)
{
	struct ctl_buf	*b = arg;
	size_t		 len = size * n;

	if (b->len + len > CTL_MAX_RESPONSE)
		return 0;
	b->data = xreallocarray(b->data, 1, b->len + len + 1);
	memcpy(b->data + b->len, ptr, len);
	b->len += len;
	b->data[b->len] = '\0';
	return len;
}

/* Print a string that came from the daemon (guest text among it) safely. */
static const char *
ctl_esc(const char *s, char *buf, size_t len)
{
	return str_escape(buf, len, s, strlen(s));
}

/*
 * One request.  Returns the HTTP status, or -1 when the daemon could not
 * be reached (the message is printed).  *out gets the parsed JSON body.
 */
static int
ctl_request(struct ctl *c, const char *method, const char *path,
    const char *body, struct json_object **out)
{
	struct ctl_buf		 b = { NULL, 0 };
	struct curl_slist	*hdr = NULL;
	char			*url;
	long			 status = 0;
	CURLcode		 rc;

	*out = NULL;
	curl_easy_reset(c->curl);
	xasprintf(&url, "%s%s", c->url != NULL ? c->url : "http://localhost",
	    path);
	curl_easy_setopt(c->curl, CURLOPT_URL, url);
	if (c->url == NULL)
		curl_easy_setopt(c->curl, CURLOPT_UNIX_SOCKET_PATH, c->socket);
	curl_easy_setopt(c->curl, CURLOPT_WRITEFUNCTION, ctl_write_cb);
	curl_easy_setopt(c->curl, CURLOPT_WRITEDATA, &b);
	curl_easy_setopt(c->curl, CURLOPT_TIMEOUT, 30L);
	curl_easy_setopt(c->curl, CURLOPT_NOSIGNAL, 1L);
	if (body != NULL) {
		hdr = curl_slist_append(hdr, "Content-Type: application/json");
		curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, hdr);
		curl_easy_setopt(c->curl, CURLOPT_CUSTOMREQUEST, method);
		curl_easy_setopt(c->curl, CURLOPT_POSTFIELDS, body);
	}
	rc = curl_easy_perform(c->curl);
	curl_slist_free_all(hdr);
	if (rc != CURLE_OK) {
		if (rc == CURLE_COULDNT_CONNECT && c->url == NULL &&
		    access(c->socket, F_OK) == 0 &&
		    access(c->socket, R_OK | W_OK) != 0)
			fprintf(stderr, "prefcpuctl: %s: %s (the socket is"
			    " mode 0660: be in its group)\n", c->socket,
			    strerror(errno));
		else if (rc == CURLE_COULDNT_CONNECT)
			fprintf(stderr, "prefcpuctl: prefcpu-hostd is not"
			    " running (nothing answers at %s)\n",
			    c->url != NULL ? c->url : c->socket);
		else
			fprintf(stderr, "prefcpuctl: %s: %s\n", url,
			    curl_easy_strerror(rc));
		free(url);
		free(b.data);
		return -1;
	}
	free(url);
	curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
	if (b.data != NULL)
		*out = json_tokener_parse(b.data);
	free(b.data);
	return (int)status;
}

/* Map a status to an exit code, printing the daemon's error if any. */
static int
ctl_check(int status, struct json_object *o)
{
	struct json_object	*e;
	char			 buf[1024];

	if (status < 0)
		return CTL_UNREACHABLE;
	if (status >= 200 && status < 300 && o != NULL)
		return CTL_OK;
	if (o != NULL && json_object_object_get_ex(o, "error", &e))
		fprintf(stderr, "prefcpuctl: %s\n",
		    ctl_esc(json_object_get_string(e), buf, sizeof(buf)));
	else
		fprintf(stderr, "prefcpuctl: the daemon answered %d\n", status);
	return status == 404 ? CTL_NOTFOUND : CTL_FAIL;
}

static int
ctl_get(struct ctl *c, const char *path, struct json_object **o)
{
	int	status, rc;

	status = ctl_request(c, "GET", path, NULL, o);
	rc = ctl_check(status, *o);
	if (rc != CTL_OK) {
		json_object_put(*o);
		*o = NULL;
	}
	return rc;
}

/* A member by path "a.b.c"; NULL when absent or null. */
static struct json_object *
ctl_at(struct json_object *o, const char *path)
{
	char	key[64];
	size_t	n;

	while (o != NULL && *path != '\0') {
		n = strcspn(path, ".");
		if (n >= sizeof(key))
			return NULL;
		memcpy(key, path, n);
		key[n] = '\0';
		if (!json_object_object_get_ex(o, key, &o))
			return NULL;
		path += n + (path[n] == '.');
	}
	return o;
}

static const char *
ctl_str(struct json_object *o, const char *path, char *buf, size_t len)
{
	struct json_object *v = ctl_at(o, path);

	if (v == NULL)
		return "-";
	return ctl_esc(json_object_get_string(v), buf, len);
}

static double
ctl_num(struct json_object *o, const char *path)
{
	struct json_object *v = ctl_at(o, path);

	return v != NULL ? json_object_get_double(v) : 0;
}

static void
ctl_print_json(struct json_object *o)
{
	printf("%s\n", json_object_to_json_string_ext(o,
	    JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE));
}

/* The VM table's columns: see ctl_table.h for min and rank. */
enum ctl_col {
	COL_NAME, COL_VCPUS, COL_PREF, COL_PREFSET, COL_APPLIED, COL_WEIGHT,
	COL_SHARE, COL_DEMAND, COL_DELAY, COL_AGENT, COL_DECISION,
};
static const struct tab_col ctl_vm_cols[] = {
	[COL_NAME] = { "NAME", 0, 16, 2 },
	[COL_VCPUS] = { "VCPUS", TAB_RIGHT, 0, 99 },
	[COL_PREF] = { "PREF", TAB_RIGHT, 0, 99 },
	[COL_PREFSET] = { "PREF-SET", TAB_OPTIONAL, 0, 0 },
	[COL_APPLIED] = { "APPLIED", TAB_RIGHT | TAB_OPTIONAL, 0, 5 },
	[COL_WEIGHT] = { "WEIGHT", TAB_RIGHT, 0, 99 },
	[COL_SHARE] = { "SHARE", TAB_RIGHT | TAB_OPTIONAL, 0, 3 },
	[COL_DEMAND] = { "DEMAND", TAB_RIGHT, 0, 99 },
	[COL_DELAY] = { "DELAY%", TAB_RIGHT, 0, 99 },
	[COL_AGENT] = { "AGENT", 0, 7, 4 },
	[COL_DECISION] = { "DECISION", 0, 10, 1 },
};

static const char *const ctl_sort_names[] = {
	[CTL_SORT_DELAY] = "delay",
	[CTL_SORT_NAME] = "name",
	[CTL_SORT_VCPUS] = "vcpus",
};

static enum ctl_sort ctl_sort_key;

static int
ctl_cmp_vm(const void *a, const void *b)
{
	struct json_object	*x = *(struct json_object *const *)a;
	struct json_object	*y = *(struct json_object *const *)b;
	double			 dx, dy;
	const char		*nx, *ny;

	nx = json_object_get_string(ctl_at(x, "name"));
	ny = json_object_get_string(ctl_at(y, "name"));
	switch (ctl_sort_key) {
	case CTL_SORT_DELAY:
		dx = ctl_num(x, "usage.run_delay_pct");
		dy = ctl_num(y, "usage.run_delay_pct");
		if (dx != dy)
			return dx < dy ? 1 : -1;
		break;
	case CTL_SORT_VCPUS:
		dx = ctl_num(x, "vcpus");
		dy = ctl_num(y, "vcpus");
		if (dx != dy)
			return dx < dy ? 1 : -1;
		break;
	default:
		break;
	}
	return strcmp(nx != NULL ? nx : "", ny != NULL ? ny : "");
}

/* A number, or "-" when the API has none (null or absent). */
static const char *
ctl_fmt(struct json_object *o, const char *path, int digits, char *buf,
    size_t len)
{
	if (ctl_at(o, path) == NULL)
		return "-";
	snprintf(buf, len, "%.*f", digits, ctl_num(o, path));
	return buf;
}

/* One summary line, cut to the width. */
static void ctl_sumline(unsigned int, const char *, ...)
    __attribute__((format(printf, 2, 3)));

static void
ctl_sumline(unsigned int width, const char *fmt, ...)
{
	va_list	 ap;
	char	*s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		abort();
	va_end(ap);
	tab_line(stdout, s, width);
	free(s);
}

/*
 * Host summary and VM table.  max_rows limits the rows (top on a tty),
 * 0 none.  Figures are the API's (figures.h), never recomputed here.
 */
static void
ctl_print_status(struct ctl *c, struct json_object *h, struct json_object *d,
    enum ctl_sort sort, unsigned int width, unsigned int max_rows)
{
	struct json_object	*arr = ctl_at(d, "domains"), **vms;
	struct tab		*t;
	char			 b1[256], b2[128], b3[64], b4[64], b5[64];
	size_t			 i, n;

	ctl_sumline(width, "host %s  mode %s  period %.1f s  periods %.0f",
	    ctl_str(h, "hostname", b1, sizeof(b1)),
	    ctl_str(h, "mode", b2, sizeof(b2)),
	    ctl_num(h, "period_ms") / 1000, ctl_num(h, "period_seq"));
	ctl_sumline(width, "CPUs %.0f, usable %.0f (%s)  capacity %.2f CPUs"
	    "  demand %.2f CPUs", ctl_num(h, "pcpus"),
	    ctl_num(h, "usable_cpus"), ctl_str(h, "usable_pcpus", b1,
	    sizeof(b1)), ctl_num(h, "capacity"), ctl_num(h, "demand"));
	ctl_sumline(width, "vCPUs %.0f  preferred %.0f  over-commit %s"
	    " vCPUs/CPU  contended %s", ctl_num(h, "vcpus"),
	    ctl_num(h, "preferred_vcpus"), ctl_fmt(h, "overcommit", 2,
	    b3, sizeof(b3)), json_object_get_boolean(ctl_at(h, "contended")) ?
	    "yes" : "no");
	ctl_sumline(width, "run delay %.2f CPUs, %s%% of vCPU time  CPU"
	    " pressure %s%%  decisions %.0f", ctl_num(h, "run_delay_cpus"),
	    ctl_fmt(h, "run_delay_pct", 1, b4, sizeof(b4)),
	    ctl_fmt(h, "cpu_pressure_some_avg10", 1, b5, sizeof(b5)),
	    ctl_num(h, "decisions"));
	fputc('\n', stdout);

	n = arr != NULL ? json_object_array_length(arr) : 0;
	if (n == 0) {
		printf("no running VMs\n");
		return;
	}
	vms = xreallocarray(NULL, n, sizeof(*vms));
	for (i = 0; i < n; i++)
		vms[i] = json_object_array_get_idx(arr, i);
	ctl_sort_key = sort;
	qsort(vms, n, sizeof(*vms), ctl_cmp_vm);
	t = tab_new(ctl_vm_cols, nitems(ctl_vm_cols));
	for (i = 0; i < n && (max_rows == 0 || i < max_rows); i++) {
		struct json_object *vm = vms[i];

		tab_row(t);
		tab_cell(t, "%s", ctl_str(vm, "name", b1, sizeof(b1)));
		tab_cell(t, "%.0f", ctl_num(vm, "vcpus"));
		tab_cell(t, "%s", ctl_fmt(vm, "decision.vcpus", 0, b3,
		    sizeof(b3)));
		tab_cell(t, "%s", ctl_str(vm, "decision.preferred", b2,
		    sizeof(b2)));
		tab_cell(t, "%s", ctl_fmt(vm, "applied.vcpus", 0, b3,
		    sizeof(b3)));
		tab_cell(t, "%.0f", ctl_num(vm, "policy.weight"));
		tab_cell(t, "%s", ctl_fmt(vm, "decision.share", 2, b3,
		    sizeof(b3)));
		tab_cell(t, "%s", ctl_fmt(vm, "decision.demand", 2, b3,
		    sizeof(b3)));
		tab_cell(t, "%.1f", ctl_num(vm, "usage.run_delay_pct"));
		tab_cell(t, "%s", ctl_str(vm, "agent.state", b2, sizeof(b2)));
		tab_cell(t, "%s", ctl_str(vm, "decision.reason", b2,
		    sizeof(b2)));
	}
	tab_print(t, stdout, c->wide ? 0 : width);
	tab_free(t);
	if (max_rows != 0 && n > max_rows)
		ctl_sumline(width, "... %zu more VMs (sorted by %s; a taller"
		    " terminal shows more)", n - max_rows,
		    ctl_sort_names[sort]);
	free(vms);
}

/* host and domains in one object, for --json. */
static int
ctl_fetch_status(struct ctl *c, struct json_object **h,
    struct json_object **d)
{
	int	rc;

	if ((rc = ctl_get(c, "/api/v1/host", h)) != CTL_OK)
		return rc;
	if ((rc = ctl_get(c, "/api/v1/domains", d)) != CTL_OK) {
		json_object_put(*h);
		return rc;
	}
	return CTL_OK;
}

static void
ctl_show_status(struct ctl *c, struct json_object *h, struct json_object *d,
    enum ctl_sort sort, unsigned int max_rows)
{
	struct json_object	*o;

	if (c->json) {
		o = json_object_new_object();
		json_object_object_add(o, "host", json_object_get(h));
		json_object_object_add(o, "domains",
		    json_object_get(ctl_at(d, "domains")));
		printf("%s\n", json_object_to_json_string_ext(o,
		    JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
		json_object_put(o);
	} else
		ctl_print_status(c, h, d, sort, c->wide ? 0 :
		    tab_term_width(STDOUT_FILENO), max_rows);
}

/*
 * The options of the read commands, after the command name: --json,
 * --wide, --sort, and --iterations where iter is not NULL.  Leaves the
 * operands in argv[optind..].  Returns CTL_OK or CTL_USAGE (said).
 */
static int
ctl_view_opts(struct ctl *c, int argc, char **argv, uint64_t *iter)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "wide", no_argument, NULL, 'w' },
		{ "sort", required_argument, NULL, 's' },
		{ "iterations", required_argument, NULL, 'i' },
		{ NULL, 0, NULL, 0 },
	};
	const char	*cmd = argv[0];
	size_t		 k;
	int		 ch;

	optind = 0;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		switch (ch) {
		case 'j':
			c->json = true;
			break;
		case 'w':
			c->wide = true;
			break;
		case 's':
			for (k = 1; k < nitems(ctl_sort_names); k++)
				if (strcmp(optarg, ctl_sort_names[k]) == 0)
					break;
			if (k == nitems(ctl_sort_names))
				return ctl_usage_error(cmd, "--sort '%s':"
				    " expected delay, name or vcpus", optarg);
			c->sort = (enum ctl_sort)k;
			break;
		case 'i':
			if (iter == NULL)
				return ctl_usage_error(cmd, "unknown option"
				    " --iterations");
			if (parse_uint(optarg, 1, UINT32_MAX, iter) != 0)
				return ctl_usage_error(cmd, "--iterations"
				    " '%s': expected an integer 1..%u", optarg,
				    UINT32_MAX);
			break;
		case ':':
			return ctl_usage_error(cmd, "%s needs a value",
			    argv[optind - 1]);
		default:
			return ctl_usage_error(cmd, "unknown option %s",
			    argv[optind - 1]);
		}
	}
	return CTL_OK;
}

static int
ctl_status(struct ctl *c, int argc, char **argv)
{
	struct json_object	*h, *d;
	int			 rc;

	if ((rc = ctl_view_opts(c, argc, argv, NULL)) != CTL_OK)
		return rc;
	if (optind != argc)
		return ctl_usage_error("status", "unexpected argument '%s'",
		    argv[optind]);
	if ((rc = ctl_fetch_status(c, &h, &d)) != CTL_OK)
		return rc;
	ctl_show_status(c, h, d, c->sort != CTL_SORT_DEFAULT ? c->sort :
	    CTL_SORT_NAME, 0);
	json_object_put(h);
	json_object_put(d);
	return CTL_OK;
}

static struct termios	ctl_saved_tty;
static bool		ctl_tty_raw;

static void
ctl_tty_restore(void)
{
	if (ctl_tty_raw)
		tcsetattr(STDIN_FILENO, TCSAFLUSH, &ctl_saved_tty);
	ctl_tty_raw = false;
}

static int
ctl_top(struct ctl *c, int argc, char **argv)
{
	struct json_object	*h, *d;
	struct termios		 t;
	struct timeval		 tv;
	fd_set			 rfds;
	uint64_t		 iterations = 0, done = 0;
	double			 period;
	char			 ch;
	int			 rc = CTL_OK;
	unsigned int		 rows;
	bool			 tty, eof = false;

	if ((rc = ctl_view_opts(c, argc, argv, &iterations)) != CTL_OK)
		return rc;
	if (optind != argc)
		return ctl_usage_error("top", "unexpected argument '%s'",
		    argv[optind]);
	tty = isatty(STDOUT_FILENO) && !c->json;
	if (isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO,
	    &ctl_saved_tty) == 0) {
		t = ctl_saved_tty;
		t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
		t.c_cc[VMIN] = 1;
		t.c_cc[VTIME] = 0;
		if (tcsetattr(STDIN_FILENO, TCSAFLUSH, &t) == 0) {
			ctl_tty_raw = true;
			atexit(ctl_tty_restore);
		}
	}
	for (;;) {
		if ((rc = ctl_fetch_status(c, &h, &d)) != CTL_OK)
			break;
		period = ctl_num(h, "period_ms") / 1000;
		if (tty)
			fputs("\033[H\033[2J", stdout);
		/* Summary 5 lines, header, "more", "(q quits)" and a blank. */
		rows = tty ? tab_term_height(STDOUT_FILENO) : 0;
		rows = rows > 14 ? rows - 9 : rows > 0 ? 5 : 0;
		ctl_show_status(c, h, d, c->sort != CTL_SORT_DEFAULT ?
		    c->sort : CTL_SORT_DELAY, rows);
		if (tty)
			fputs("\n(q quits)\n", stdout);
		fflush(stdout);
		json_object_put(h);
		json_object_put(d);
		if (iterations != 0 && ++done >= iterations)
			break;
		if (period < 0.2)
			period = 1;
		FD_ZERO(&rfds);
		if (!eof)
			FD_SET(STDIN_FILENO, &rfds);
		tv.tv_sec = (time_t)period;
		tv.tv_usec = (suseconds_t)((period - (double)tv.tv_sec) * 1e6);
		if (select(STDIN_FILENO + 1, &rfds, NULL, NULL, &tv) > 0) {
			/* End of input (</dev/null, a script) is not "q". */
			if (read(STDIN_FILENO, &ch, 1) != 1)
				eof = true;
			else if (ch == 'q' || ch == 'Q')
				break;
		}
	}
	ctl_tty_restore();
	return rc;
}

static char *
ctl_domain_path(struct ctl *c, const char *domain, const char *suffix)
{
	char	*esc, *path;

	esc = curl_easy_escape(c->curl, domain, 0);
	if (esc == NULL)
		abort();
	xasprintf(&path, "/api/v1/domains/%s%s", esc, suffix);
	curl_free(esc);
	return path;
}

static const char *
ctl_yesno(struct json_object *o, const char *path)
{
	return json_object_get_boolean(ctl_at(o, path)) ? "yes" : "no";
}

/* The agent line: only the fields the agent reported. */
static void
ctl_explain_agent(struct json_object *o)
{
	static const struct {
		const char	*label, *path;
	} fields[] = {
		{ "", "agent.agent" },
		{ "backend ", "agent.backend" },
		{ "kernel ", "agent.kernel" },
		{ "governor ", "agent.governor" },
	};
	struct json_object	*v;
	const char		*state;
	char			 buf[512];
	size_t			 i;

	state = ctl_str(o, "agent.state", buf, sizeof(buf));
	printf("agent: %s", state);
	if (strcmp(state, "none") == 0)
		printf(" (the domain has no org.prefcpu.0 channel)");
	else if (strcmp(state, "waiting") == 0)
		printf(" (the channel is there, no agent answers)");
	for (i = 0; i < nitems(fields); i++) {
		v = ctl_at(o, fields[i].path);
		if (v == NULL || json_object_get_string_len(v) == 0)
			continue;
		printf(", %s%s", fields[i].label,
		    ctl_str(o, fields[i].path, buf, sizeof(buf)));
	}
	if (ctl_num(o, "agent.protocol_errors") > 0)
		printf(", protocol errors %.0f",
		    ctl_num(o, "agent.protocol_errors"));
	putchar('\n');
}

static int
ctl_explain(struct ctl *c, int argc, char **argv)
{
	struct json_object	*o;
	char			*path, b1[512], b2[256], b3[256], b4[256];
	int			 rc;

	if ((rc = ctl_view_opts(c, argc, argv, NULL)) != CTL_OK)
		return rc;
	if (optind >= argc)
		return ctl_usage_error("explain", "missing DOMAIN (a name or"
		    " UUID)");
	if (optind + 1 != argc)
		return ctl_usage_error("explain", "unexpected argument '%s'",
		    argv[optind + 1]);
	path = ctl_domain_path(c, argv[optind], "");
	rc = ctl_get(c, path, &o);
	free(path);
	if (rc != CTL_OK)
		return rc;
	if (c->json) {
		ctl_print_json(o);
		json_object_put(o);
		return CTL_OK;
	}
	printf("domain %s (%s), %.0f vCPUs in %.0f cores\n",
	    ctl_str(o, "name", b1, sizeof(b1)), ctl_str(o, "uuid", b2, sizeof(b2)),
	    ctl_num(o, "vcpus"), ctl_num(o, "cores"));
	printf("policy: mode %s, weight %.0f",
	    ctl_str(o, "policy.mode", b1, sizeof(b1)),
	    ctl_num(o, "policy.weight"));
	if (ctl_num(o, "policy.min_cores") > 0)
		printf(", min-cores %.0f", ctl_num(o, "policy.min_cores"));
	else
		printf(", no minimum");
	if (ctl_num(o, "policy.max_cores") > 0)
		printf(", max-cores %.0f", ctl_num(o, "policy.max_cores"));
	else
		printf(", no maximum");
	if (ctl_at(o, "policy.cpus") != NULL &&
	    *ctl_str(o, "policy.cpus", b2, sizeof(b2)) != '\0')
		printf(", cpus %s", b2);
	printf(", enforce %s\n", ctl_str(o, "policy.enforce", b3, sizeof(b3)));
	if (ctl_at(o, "policy.error") != NULL)
		printf("policy error: %s\n",
		    ctl_str(o, "policy.error", b1, sizeof(b1)));
	if (ctl_at(o, "cap") != NULL)
		printf("cap: %s%.2f CPUs (vcpu_quota %.0f of vcpu_period %.0f us"
		    " per vCPU)%s%s\n", ctl_at(o, "cap.active") != NULL &&
		    json_object_get_boolean(ctl_at(o, "cap.active")) ? "" :
		    "not set; wanted ", ctl_num(o, "cap.cpus"),
		    ctl_num(o, "cap.vcpu_quota"), ctl_num(o, "cap.vcpu_period"),
		    ctl_at(o, "cap.error") ? ", error: " : "",
		    ctl_at(o, "cap.error") ? ctl_str(o, "cap.error", b4,
		    sizeof(b4)) : "");
	printf("target: %s (seq %.0f)\n", ctl_num(o, "target.vcpus") > 0 ?
	    ctl_str(o, "target.preferred", b1, sizeof(b1)) : "none sent",
	    ctl_num(o, "target.seq"));
	if (ctl_at(o, "applied.cpus") != NULL)
		printf("applied by the guest: %s (seq %.0f)\n",
		    ctl_str(o, "applied.cpus", b1, sizeof(b1)),
		    ctl_num(o, "applied.seq"));
	else
		printf("applied by the guest: nothing reported\n");
	if (ctl_at(o, "applied.error") != NULL)
		printf("applied by the guest: error: %s\n",
		    ctl_str(o, "applied.error", b1, sizeof(b1)));
	ctl_explain_agent(o);
	printf("usage: run %.2f CPUs, run delay %.2f CPUs, run delay share"
	    " %.1f%% of its vCPU time\n", ctl_num(o, "usage.run_cpus"),
	    ctl_num(o, "usage.run_delay_cpus"),
	    ctl_num(o, "usage.run_delay_pct"));
	if (ctl_at(o, "decision") == NULL)
		printf("decision: none yet\n");
	else {
		printf("decision: %s -> %s (%.0f vCPUs, %.0f cores)\n",
		    ctl_str(o, "decision.reason", b1, sizeof(b1)),
		    ctl_str(o, "decision.preferred", b2, sizeof(b2)),
		    ctl_num(o, "decision.vcpus"), ctl_num(o, "decision.cores"));
		printf("  why: %s\n", ctl_str(o, "decision.why", b1, sizeof(b1)));
		printf("  inputs: contention domain %.0f, capacity %.2f CPUs,"
		    " demand %.2f CPUs, claim %.2f CPUs,\n"
		    "    counted %.2f CPUs, share %.2f CPUs, saturated %s,"
		    " contended %s\n",
		    ctl_num(o, "decision.contention_domain"),
		    ctl_num(o, "decision.capacity"),
		    ctl_num(o, "decision.demand"), ctl_num(o, "decision.claim"),
		    ctl_num(o, "decision.counted"),
		    ctl_num(o, "decision.share"),
		    ctl_yesno(o, "decision.saturated"),
		    ctl_yesno(o, "decision.contended"));
	}
	json_object_put(o);
	return CTL_OK;
}

/*
 * The metadata the daemon knows of, as the base a change merges into,
 * through the same decoder and validator as the API's body.
 */
static int
ctl_policy_current(struct json_object *md, struct polmeta *p)
{
	const char	*text = json_object_to_json_string_ext(md,
			    JSON_C_TO_STRING_PLAIN);
	char		 err[256];

	if (polmeta_from_json(text, strlen(text), p, err, sizeof(err)) != 0) {
		fprintf(stderr, "prefcpuctl: the daemon's current policy does"
		    " not decode: %s\n", err);
		return -1;
	}
	return 0;
}

/* Quote for a POSIX shell: 'it'\''s'. */
static void
ctl_shell_quote(FILE *f, const char *s)
{
	fputc('\'', f);
	for (; *s != '\0'; s++) {
		if (*s == '\'')
			fputs("'\\''", f);
		else
			fputc(*s, f);
	}
	fputc('\'', f);
}

static int
ctl_policy(struct ctl *c, int argc, char **argv)
{
	/* One option per policy field (its metadata attribute), and --dry-run. */
	struct option		 opts[PM_NFIELDS + 2];
	struct polmeta		 set, p;
	struct json_object	*o = NULL, *md;
	const char		*domain;
	char			 err[256], *path, *body, *xml;
	bool			 dry = false;
	int			 ch, f, rc, status;

	memset(opts, 0, sizeof(opts));
	for (f = 0; f < PM_NFIELDS; f++) {
		opts[f].name = polmeta_fields[f].attr;
		opts[f].has_arg = required_argument;
		opts[f].val = f;
	}
	opts[PM_NFIELDS].name = "dry-run";
	opts[PM_NFIELDS].val = PM_NFIELDS;
	polmeta_init(&set);
	/* 0: a full restart of getopt, which permutes DOMAIN past options. */
	optind = 0;
	while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		if (ch == PM_NFIELDS)
			dry = true;
		else if (ch < 0 || ch > PM_NFIELDS) {
			ctl_usage(stderr);
			return CTL_USAGE;
		} else if (polmeta_set_text(&set, (enum polmeta_field)ch,
		    optarg, PMN_ATTR, err, sizeof(err)) != 0) {
			fprintf(stderr, "prefcpuctl: --%s\n", err);
			return CTL_USAGE;
		}
	}
	if (optind != argc - 1) {
		ctl_usage(stderr);
		return CTL_USAGE;
	}
	domain = argv[optind];

	/* Merge into what is set now, so unnamed attributes stay. */
	polmeta_init(&p);
	path = ctl_domain_path(c, domain, "");
	status = ctl_request(c, "GET", path, NULL, &o);
	free(path);
	if (status == 200 && (md = ctl_at(o, "policy.metadata")) != NULL) {
		if (ctl_policy_current(md, &p) != 0) {
			json_object_put(o);
			return CTL_FAIL;
		}
	} else if (!dry) {
		rc = ctl_check(status, o);
		json_object_put(o);
		return rc;
	}
	json_object_put(o);
	polmeta_merge(&p, &set);
	if (polmeta_check(&p, 0, PMN_ATTR, err, sizeof(err)) != 0) {
		fprintf(stderr, "prefcpuctl: %s\n", err);
		return CTL_USAGE;
	}
	if (dry) {
		xml = polmeta_xml(&p);
		fputs("virsh metadata ", stdout);
		ctl_shell_quote(stdout, domain);
		printf(" --uri %s --key %s --set ", POLMETA_NS, POLMETA_KEY);
		ctl_shell_quote(stdout, xml);
		printf(" --live --config\n");
		free(xml);
		return CTL_OK;
	}
	body = polmeta_to_json(&p);
	path = ctl_domain_path(c, domain, "/policy");
	status = ctl_request(c, "PUT", path, body, &o);
	free(path);
	free(body);
	rc = ctl_check(status, o);
	if (rc == CTL_OK) {
		if (c->json)
			ctl_print_json(o);
		else
			printf("%s: %s\n", domain,
			    ctl_str(o, "metadata", err, sizeof(err)));
	}
	json_object_put(o);
	return rc;
}

int
main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "url", required_argument, NULL, 'u' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	struct ctl	 c;
	size_t		 i;
	int		 ch, rc;

	log_init("prefcpuctl", LOGL_WARNING);
	/* For the terminal's character set only (the ellipsis). */
	setlocale(LC_CTYPE, "");
	memset(&c, 0, sizeof(c));
	c.socket = getenv("PREFCPU_SOCKET") != NULL ?
	    getenv("PREFCPU_SOCKET") : CTL_DEFAULT_SOCKET;
	/* '+': stop at the command, whose options are its own. */
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
		switch (ch) {
		case 's':
			c.socket = optarg;
			break;
		case 'u':
			c.url = optarg;
			break;
		case 'j':
			c.json = true;
			break;
		case 'h':
			ctl_usage(stdout);
			return CTL_OK;
		case 'V':
			printf("prefcpuctl %s\n", PREFCPU_VERSION);
			return CTL_OK;
		case ':':
			return ctl_usage_error(NULL, "%s needs a value",
			    argv[optind - 1]);
		default:
			return ctl_usage_error(NULL, "unknown option %s",
			    argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return ctl_usage_error(NULL, "missing COMMAND: status, top,"
		    " explain or policy");
	for (i = 0; i < nitems(ctl_cmds); i++) {
		if (strcmp(argv[optind], ctl_cmds[i].name) == 0)
			break;
	}
	if (i == nitems(ctl_cmds))
		return ctl_usage_error(NULL, "unknown command '%s': expected"
		    " status, top, explain or policy", argv[optind]);
	signal(SIGPIPE, SIG_IGN);
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0)
		fatalx("curl_global_init failed");
	c.curl = curl_easy_init();
	if (c.curl == NULL)
		fatalx("curl_easy_init failed");
	/* Strip a trailing '/' so paths join cleanly. */
	if (c.url != NULL && c.url[0] != '\0' &&
	    c.url[strlen(c.url) - 1] == '/')
		c.url = xstrndup(c.url, strlen(c.url) - 1);
	rc = ctl_cmds[i].fn(&c, argc - optind, argv + optind);
	curl_easy_cleanup(c.curl);
	curl_global_cleanup();
	return rc;
}
