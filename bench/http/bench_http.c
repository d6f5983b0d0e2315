/*
 * bench/http: latency of /metrics and /api/v1/domains with many VMs.
 *
 * A child process builds a synthetic model (N VMs of 2..16 vCPUs on a
 * 64-CPU host, real policy decisions over a few periods, a full history
 * ring) and serves it with the real HTTP module; the parent fetches each
 * URL R times over TCP with libcurl and prints latency percentiles and
 * body sizes.  The in-process cost of rendering (no sockets) is printed
 * too, to separate it from transport.
 *
 * The server renders the big views once per period and then serves a
 * copy.  With -c the child starts a new period every 100 ms and the parent
 * waits 150 ms between requests, so that every request pays the rendering
 * ("cold"); without it the model stands still and every request but the
 * first is a copy ("warm").
 *
 * usage: bench-http [-c] [-n VMS] [-r REQUESTS] [-p PERIODS]
 */
#include <sys/types.h>
#include <sys/wait.h>

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>
#include <event2/event.h>

#include "api.h"
#include "http.h"
#include "log.h"
#include "model.h"
#include "util.h"

#define BENCH_PCPUS	64
#define BENCH_COLD_MS	100

static struct host	*bench_host;
static uint64_t		 bench_now_ms;

static struct host *
bench_model(unsigned int nvms, unsigned int periods)
{
	struct host_params	 hp;
	struct host_sample	*hs;
	struct vm_info		 info;
	struct vm		*vm;
	char			 uuid[VM_UUID_LEN], name[64];
	unsigned int		 i, c, p;

	memset(&hp, 0, sizeof hp);
	hp.observe = true;
	hp.history = periods;
	hp.decisions = 256;
	policy_config_default(&hp.policy);
	struct host *h = host_new(&hp);

	for (i = 0; i < nvms; i++) {
		snprintf(uuid, sizeof uuid, "00000000-0000-4000-8000-%012u", i);
		snprintf(name, sizeof name, "vm-%04u", i);
		vm = host_vm_add(h, uuid, name);
		memset(&info, 0, sizeof info);
		snprintf(info.uuid, sizeof info.uuid, "%s", uuid);
		info.name = xstrdup(name);
		info.id = (int)i + 1;
		info.nvcpus = 2u << (i % 4);	/* 2, 4, 8, 16 */
		cpuset_set_range(&info.online, 0, info.nvcpus - 1);
		info.sockets = info.dies = info.threads = 1;
		info.cores = info.ncores = info.nvcpus;
		info.core = xcalloc(info.ncores, sizeof *info.core);
		for (c = 0; c < info.ncores; c++)
			cpuset_set(&info.core[c], c);
		info.shares = 1024;
		vm_set_info(vm, &info);
		for (c = 0; c < vm->info.nvcpus; c++) {
			vm->thread[c].run_ns = (uint64_t)(i + 1) * 1000000000ULL;
			vm->thread[c].delay_ns = (uint64_t)(i + 1) * 300000000ULL;
		}
	}
	hs = host_sample_mut(h);
	hs->valid = true;
	hs->period_s = 1;
	cpuset_set_range(&hs->online, 0, BENCH_PCPUS - 1);
	hs->usable = hs->online;
	hs->capacity = BENCH_PCPUS;
	hs->psi_some_avg10 = 20;
	for (p = 0; p < periods; p++) {
		HOST_FOREACH_VM(vm, h) {
			vm->sample.valid = true;
			vm->sample.run_cpus = 0.5 * vm->info.nvcpus *
			    (1 + (p % 7) / 10.0);
			vm->sample.delay_cpus = 0.2 * vm->info.nvcpus;
		}
		hs->real_ms = time_real_ms() - (periods - p) * 1000ULL;
		hs->vm_run_cpus = 100;
		hs->vm_delay_cpus = 40;
		if (host_period(h, 1000ULL * (p + 1)) != 0)
			fatalx("host_period failed");
	}
	return h;
}

/* A new period, for cold requests. */
static void
bench_tick(evutil_socket_t fd, short what, void *arg)
{
	struct vm	*vm;

	HOST_FOREACH_VM(vm, bench_host)
		vm->sample.run_cpus *= 1.01;
	bench_now_ms += 1000;
	if (host_period(bench_host, bench_now_ms) != 0)
		fatalx("host_period failed");
}

static size_t
bench_sink(char *ptr, size_t size, size_t n, void *arg)
{
	*(size_t *)arg += size * n;
	return size * n;
}

static int
bench_cmp(const void *a, const void *b)
{
	double	x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void
bench_url(CURL *curl, unsigned int port, const char *path, unsigned int n,
    bool cold)
{
	double		*ms = xcalloc(n, sizeof *ms);
	char		 url[256];
	size_t		 bytes = 0;
	unsigned int	 i;
	uint64_t	 t0;
	long		 status = 0;

	snprintf(url, sizeof url, "http://127.0.0.1:%u%s", port, path);
	curl_easy_setopt(curl, CURLOPT_URL, url);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, bench_sink);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, &bytes);
	for (i = 0; i < n; i++) {
		if (cold)
			usleep(BENCH_COLD_MS * 3 / 2 * 1000);
		bytes = 0;
		t0 = time_mono_ns();
		if (curl_easy_perform(curl) != CURLE_OK)
			fatalx("GET %s failed", path);
		ms[i] = (double)(time_mono_ns() - t0) / 1e6;
		curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
		if (status != 200)
			fatalx("GET %s: %ld", path, status);
	}
	qsort(ms, n, sizeof *ms, bench_cmp);
	printf("%-32s %8zu bytes  median %7.2f ms  p95 %7.2f ms  max %7.2f ms\n",
	    path, bytes, ms[n / 2], ms[(n * 95) / 100], ms[n - 1]);
	free(ms);
}

/* Render without sockets: what a request costs the daemon's loop. */
static void
bench_render(struct host *h, unsigned int n)
{
	struct api_snapshot	 s;
	uint64_t		 t0, fill = 0, metrics = 0, domains = 0;
	size_t			 len;
	unsigned int		 i;

	api_snapshot_init(&s);
	for (i = 0; i < n; i++) {
		t0 = time_mono_ns();
		api_snapshot_reset(&s);
		api_fill(h, &s, NULL);
		fill += time_mono_ns() - t0;
		t0 = time_mono_ns();
		free(api_metrics(&s, &len));
		metrics += time_mono_ns() - t0;
		t0 = time_mono_ns();
		free(api_json_domains(&s, &len));
		domains += time_mono_ns() - t0;
	}
	printf("in process, mean of %u: snapshot %.2f ms, metrics text %.2f ms,"
	    " domains JSON %.2f ms\n", n, (double)fill / n / 1e6,
	    (double)metrics / n / 1e6, (double)domains / n / 1e6);
	api_snapshot_free(&s);
}

int
main(int argc, char **argv)
{
	struct event_base	*base;
	struct event		*tick;
	struct timeval		 tv = { 0, BENCH_COLD_MS * 1000 };
	struct http_server	*srv;
	struct http_conf	 conf;
	struct host		*h;
	CURL			*curl;
	char			 err[256];
	unsigned int		 nvms = 1000, reqs = 50, periods = 60, port;
	int			 ch, fds[2], status;
	bool			 cold = false;
	pid_t			 pid;

	log_init("bench-http", LOGL_WARNING);
	while ((ch = getopt(argc, argv, "cn:r:p:")) != -1) {
		switch (ch) {
		case 'c':
			cold = true;
			break;
		case 'n':
			nvms = (unsigned int)atoi(optarg);
			break;
		case 'r':
			reqs = (unsigned int)atoi(optarg);
			break;
		case 'p':
			periods = (unsigned int)atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: bench-http [-c] [-n VMS]"
			    " [-r REQUESTS] [-p PERIODS]\n");
			return 2;
		}
	}
	if (nvms == 0 || reqs == 0 || periods == 0)
		fatalx("-n, -r and -p must be positive");
	if (pipe(fds) != 0)
		fatal("pipe");
	pid = fork();
	if (pid < 0)
		fatal("fork");
	if (pid == 0) {
		close(fds[0]);
		h = bench_model(nvms, periods);
		bench_render(h, 10);
		fflush(stdout);
		base = event_base_new();
		bench_host = h;
		bench_now_ms = 1000ULL * (periods + 1);
		if (cold) {
			tick = event_new(base, -1, EV_PERSIST, bench_tick, NULL);
			if (tick == NULL || event_add(tick, &tv) != 0)
				fatalx("cannot start the period timer");
		}
		http_conf_default(&conf);
		snprintf(conf.listen, sizeof conf.listen, "127.0.0.1:0");
		conf.socket[0] = '\0';
		srv = http_start(base, h, NULL, &conf, 1000, err, sizeof err);
		if (srv == NULL)
			fatalx("%s", err);
		port = http_server_port(srv);
		if (write(fds[1], &port, sizeof port) != sizeof port)
			fatal("write");
		close(fds[1]);
		event_base_dispatch(base);
		_exit(0);
	}
	close(fds[1]);
	if (read(fds[0], &port, sizeof port) != sizeof port)
		fatalx("the server did not start");
	close(fds[0]);
	printf("%u VMs, %u periods of history, %u requests per URL, %s\n",
	    nvms, periods, reqs, cold ? "cold (a new period before each)" :
	    "warm (the same period)");
	curl_global_init(CURL_GLOBAL_DEFAULT);
	curl = curl_easy_init();
	bench_url(curl, port, "/metrics", reqs, cold);
	bench_url(curl, port, "/api/v1/domains", reqs, cold);
	bench_url(curl, port, "/api/v1/host", reqs, cold);
	bench_url(curl, port, "/api/v1/domains/vm-0500", reqs, cold);
	bench_url(curl, port, "/api/v1/history?seconds=60&domains=0", reqs,
	    cold);
	bench_url(curl, port, "/api/v1/history?seconds=10", reqs / 5 + 1, cold);
	curl_easy_cleanup(curl);
	curl_global_cleanup();
	kill(pid, SIGTERM);
	waitpid(pid, &status, 0);
	return 0;
}
