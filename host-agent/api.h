/*
 * The read views of prefcpu-hostd for operators: a snapshot of the host
 * and its VMs, rendered as the JSON of /api/v1 and the Prometheus text of
 * /metrics, and the history ring behind /api/v1/history.
 *
 * Requests render a snapshot copied from the model (api_fill) rather than
 * the model itself, so the JSON code does not follow the model's layout
 * and one response shows one period.
 */
#ifndef PREFCPU_API_H
#define PREFCPU_API_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpuset.h"
#include "model.h"
#include "policy.h"
#include "polmeta.h"

struct host;

#define API_NAME_MAX	256	/* libvirt domain names are shorter */
#define API_TEXT_MAX	128

struct api_host {
	char		hostname[API_TEXT_MAX];
	char		mode[32];	/* daemon mode, e.g. "enforce" */
	uint32_t	period_ms;
	uint64_t	period_seq;	/* periods sampled since start */
	uint64_t	time_ms;	/* wall clock of the last period */
	uint64_t	start_ms;	/* wall clock at start */
	unsigned int	pcpus;		/* online host CPUs */
	unsigned int	usable_cpus;	/* count of usable */
	struct cpuset	usable;		/* host CPUs VMs may use */
	double		capacity;	/* CPUs for VMs after non-VM load */
	double		nonvm_cpus;
	double		demand;		/* sum of VM demands, CPUs */
	unsigned int	vcpus;		/* sum of vCPUs of running VMs */
	unsigned int	preferred;	/* sum of preferred vCPUs */
	unsigned int	ndomains;	/* contention domains */
	bool		contended;	/* some domain is over-committed */
	bool		over_capacity;	/* minimums forced preferred > capacity */
	double		run_s;		/* counter: vCPU run time, seconds */
	double		delay_s;	/* counter: vCPU run delay, seconds */
	double		delay_cpus;	/* last period, CPUs */
	bool		has_psi;
	double		psi_some_avg10;	/* /proc/pressure/cpu, percent */
	uint64_t	decisions;	/* counter: decisions that changed a set */
	uint64_t	proto_errors;	/* counter: protocol violations */
	bool		libvirt_connected;
};

/* Agent states as shown to operators; api_agent_state_name() gives text. */
enum api_agent_state {
	API_AGENT_NONE,		/* no prefcpu channel in the domain */
	API_AGENT_WAITING,	/* channel present, nobody answered */
	API_AGENT_CONNECTED,	/* hello done, no ack yet */
	API_AGENT_FOLLOWING,	/* acks the targets */
	API_AGENT_FAILING,	/* acks with errors, or violates the protocol */
};

struct api_vm {
	char		name[API_NAME_MAX];
	char		uuid[37];
	const char	*source;	/* "libvirt" or "qmp" (static) */
	unsigned int	vcpus;		/* online */
	unsigned int	cores;
	unsigned int	cpu_shares;
	bool		paused;
	bool		steerable;	/* counted as following by the policy */
	/* The libvirt metadata as set (nothing when absent or invalid). */
	struct polmeta	meta;
	/* The policy in force: the metadata's, else the defaults. */
	enum policy_mode mode;
	unsigned int	weight;
	unsigned int	min_cores, max_cores;
	struct cpuset	fixed;		/* mode fixed: the vCPUs */
	enum polmeta_enforce enforce;
	char		policy_error[API_TEXT_MAX];	/* bad metadata, or "" */
	struct vm_cap	cap;		/* enforce=cap: the cap set now */
	/* Target and what the guest applied. */
	struct cpuset	target;
	uint64_t	target_seq;
	bool		acked;		/* the last ack was ok */
	uint64_t	ack_seq;
	struct cpuset	applied;
	char		ack_error[API_TEXT_MAX];	/* guest text, untrusted */
	/* Agent (every text is guest-supplied, untrusted). */
	enum api_agent_state agent;
	char		agent_name[API_TEXT_MAX];
	char		backend[API_TEXT_MAX];
	char		kernel[API_TEXT_MAX];
	char		governor[API_TEXT_MAX];
	uint64_t	proto_errors;	/* counter */
	bool		has_report;
	double		steal_pct, psi_some_avg10;
	double		runnable;	/* mean runnable tasks, report */
	uint32_t	nr_running;	/* runnable, rounded */
	/* Measurements. */
	double		run_s, delay_s;		/* counters, seconds */
	/* Per online vCPU: entries vcpu_first.. of the snapshot's vcpu_stats. */
	size_t		vcpu_first, vcpu_count;
	double		run_cpus, delay_cpus;	/* last period, CPUs */
	/* The last decision with its inputs. */
	bool		has_decision;
	struct policy_decision decision;
	uint64_t	decisions;	/* counter: changes of the set */
};

/* One vCPU thread's schedstat counters, in seconds. */
struct api_vcpu_stat {
	unsigned int	vcpu;		/* the vCPU id, libvirt's numbering */
	double		run_s, delay_s;
};

struct api_snapshot {
	struct api_host	host;
	size_t		nvms;
	struct api_vm	*vms;	/* nvms entries, owned */
	size_t		cap;
	size_t		nvcpu_stats;
	struct api_vcpu_stat *vcpu_stats;	/* owned */
	size_t		vcpu_cap;
};

void	api_snapshot_init(struct api_snapshot *);
void	api_snapshot_free(struct api_snapshot *);
/* Empty it, keeping its memory. */
void	api_snapshot_reset(struct api_snapshot *);
/* Append a zeroed VM and return it. */
struct api_vm *api_snapshot_vm(struct api_snapshot *);
/* Append a vCPU's counters to the last VM appended, and return them. */
struct api_vcpu_stat *api_snapshot_vcpu(struct api_snapshot *);
/* The VM named or with this UUID, or NULL. */
const struct api_vm *api_snapshot_find(const struct api_snapshot *,
	    const char *name_or_uuid);

const char *api_agent_state_name(enum api_agent_state);
/* Run delay share of a VM last period, in percent (figures.h). */
double	api_vm_delay_pct(const struct api_vm *);
/* The same for the host, over every running VM's vCPUs. */
double	api_host_delay_pct(const struct api_host *);

/*
 * JSON views.  Each returns a new NUL-terminated string (free() it) and
 * its length in *len.
 */
char	*api_json_host(const struct api_snapshot *, size_t *len);
char	*api_json_domains(const struct api_snapshot *, size_t *len);
char	*api_json_domain(const struct api_snapshot *, const struct api_vm *,
	    size_t *len);

/* Prometheus text format (version 0.0.4), appended to a new string. */
char	*api_metrics(const struct api_snapshot *, size_t *len);

/*
 * Fill a snapshot from the daemon's model (api_model.c): the host, and the
 * VMs selected by only: NULL every VM, "" none, else the VM with that
 * name or UUID (then nvms is 0 or 1).  Host totals always cover every VM.
 * Host fields the model does not hold (period, counters kept by the HTTP
 * server) are left for the caller.
 */
void	api_fill(const struct host *, struct api_snapshot *, const char *only);

/*
 * The model's history as JSON: the periods of the last 'seconds' seconds
 * before the newest, only those with a sequence number above 'since', with
 * the per-VM figures or (vms false) the host's only.  One answer holds at
 * most API_HISTORY_MAX_VM_RECORDS per-VM records and about
 * API_HISTORY_MAX_BYTES bytes (it stops at the first period that starts
 * beyond them, but always holds one period): beyond that it holds the
 * oldest periods that fit and says "more", and the client asks again with
 * since = the last seq it got.
 */
#define API_HISTORY_MAX_VM_RECORDS	65536
#define API_HISTORY_MAX_BYTES		(4 * 1024 * 1024)
char	*api_json_history(const struct host *, uint64_t seconds,
	    uint64_t since, bool vms, size_t *len);

/*
 * The same answer in pieces of about API_HISTORY_PIECE bytes, for a
 * server that sends each piece before it renders the next: the answer
 * covers the periods up to the newest at open, whatever arrives later.
 * api_history_next() hands over a piece (free() it) and returns 1, or
 * the last piece and 0.  The host must outlive the cursor.
 */
#define API_HISTORY_PIECE		(32 * 1024)
struct api_hist;
struct api_hist *api_history_open(const struct host *, uint64_t seconds,
	    uint64_t since, bool vms);
int	api_history_next(struct api_hist *, char **piece, size_t *len);
void	api_history_close(struct api_hist *);

/* The newest 'limit' decision changes, newest first. */
char	*api_json_decisions(const struct host *, unsigned int limit,
	    size_t *len);

#endif
