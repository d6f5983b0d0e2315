/*
 * The host daemon's state model (DESIGN.md section 3): one struct host
 * holding the registry of running VMs, keyed by UUID and by name, the host
 * figures of the last period, a ring of per-period history and a log of
 * decision changes.
 *
 * Everything runs on the daemon's one libevent thread: no locking.
 *
 * Who writes what (everyone else only reads):
 *   vm->info, vm->meta, vm->pid, vm->tid_source, thread[].tid
 *                        discovery (virt.c for libvirt domains, qmp_src.c
 *                        for VMs found through QMP: vm->source says which),
 *                        when its source reports a change; it then calls
 *                        host_vm_changed().  A source touches only its own
 *                        VMs.
 *   vm->thread[] (other fields), vm->sample, host_sample_mut()
 *                        the sampler (sampler.c), once per period.
 *   vm->sampler          the sampler's own state of the VM, opaque here:
 *                        its hooks (vm_changed, vm_removed) keep it.
 *   vm->pstate, vm->decision, history, decision log, totals
 *                        the pipeline (host_period() in model.c).
 *   vm->chan             the channel module (one connection per VM).  The
 *                        pipeline reads chan.following and chan.hint_*.
 *   vm->cap              the enforcement (vcap.c), after each period.
 *   the HTTP API, metrics and dashboard read everything, write nothing.
 *
 * The period, one timer in the daemon (hostd.c), never calls libvirt:
 *   sample: sampler_run() writes the host and VM figures;
 *   host_period(): the running totals (host_totals()) -> decide
 *   (policy_decide(), log changes) -> record history -> deliver
 *   (hooks.deliver per VM, not in observe mode) -> publish
 *   (hooks.period_end: the channels' and caps' per-period work).
 * The HTTP API reads what the period left; it polls nothing.
 *
 * Lifetimes: a struct vm lives from host_vm_add() to host_vm_remove().
 * Before freeing, host_vm_remove() calls every vm_removed hook, which must
 * drop every reference to the vm (its channel, the sampler's open files);
 * the model then frees it.
 */
#ifndef PREFCPU_MODEL_H
#define PREFCPU_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>
#include <sys/types.h>

#include "cpuset.h"
#include "policy.h"
#include "polmeta.h"
#include "proto_limits.h"

#define VM_UUID_LEN	37	/* 36 characters and NUL */
#define VM_NAME_LEN	128	/* copies of names in history and logs */

struct vm;

/* What libvirt's live XML says about a domain (filled by domxml.c). */
struct vm_info {
	char		 uuid[VM_UUID_LEN];
	char		*name;
	int		 id;		/* libvirt domain id, -1 if unknown */
	bool		 paused;
	unsigned int	 nvcpus;	/* maximum: vCPU ids are 0 .. nvcpus-1 */
	struct cpuset	 online;	/* vCPUs enabled now */
	/* Declared topology, or 1 socket x nvcpus cores x 1 thread. */
	unsigned int	 sockets, dies, cores, threads;
	unsigned int	 ncores;
	struct cpuset	*core;		/* ncores: vCPU ids of each guest core */
	unsigned int	*core_node;	/* ncores: NUMA cell of the core; NULL if none */
	unsigned int	 nnodes;	/* guest NUMA cells, 0 if none declared */
	struct cpuset	*node;		/* nnodes: vCPUs of each cell */
	unsigned int	 shares;	/* <cputune><shares>, 0 if not set */
	struct cpuset	*vcpupin;	/* nvcpus entries, or NULL: no vcpupin;
					   an empty entry means not pinned */
	struct cpuset	 emulatorpin;	/* empty: not pinned */
	char		*channel;	/* org.prefcpu.0 unix socket, or NULL */
};

/* Per-VM policy from libvirt metadata (DESIGN.md section 3.5). */
struct vm_meta {
	bool		 present;	/* a <policy> element was found */
	bool		 valid;		/* false: a bad value; defaults in force */
	struct polmeta	 pol;		/* as set; all absent unless valid */
	char		 error[192];	/* why it is not valid, "" if it is */
};

/* The VM's policy in force: its metadata's when valid, else NULL (defaults). */
const struct polmeta *vm_policy(const struct vm *);

/* Where a VM was found: which discovery module owns its info. */
enum vm_source {
	VM_SRC_LIBVIRT,		/* virt.c */
	VM_SRC_QMP,		/* qmp_src.c: plain QEMU, Proxmox VE */
};

enum vm_tid_source {
	VM_TID_NONE,		/* not found (yet): the VM is not sampled */
	VM_TID_STATUS_XML,	/* <vcpu id pid> in libvirt's status XML */
	VM_TID_COMM,		/* "CPU N/KVM" thread names under /proc/PID */
	VM_TID_QMP,		/* query-cpus-fast through libvirt (taints),
				   or the VM's own QMP monitor (qmp_src.c) */
};

/*
 * One vCPU thread.  What the sampler keeps to read it (its open file,
 * whether it vanished) is the sampler's own (sampler.c); these are the
 * figures it publishes.
 */
struct vm_thread {
	pid_t		 tid;		/* discovery; 0 if unknown */
	/* The sampler's figures, from here on; zeroed when tid changes. */
	bool		 sampled;	/* run_ns/delay_ns hold a read of tid */
	uint64_t	 run_ns;	/* cumulative, as last read */
	uint64_t	 delay_ns;
	double		 run_cpus;	/* last period, CPUs */
	double		 delay_cpus;
};

/* The VM as the sampler saw it last period. */
struct vm_sample {
	bool		 valid;		/* at least one thread was read twice */
	double		 run_cpus;	/* sum over its vCPU threads */
	double		 delay_cpus;
	unsigned int	 threads;	/* read this period */
	unsigned int	 gone;		/* vanished threads */
};

/*
 * The channel to the VM's guest agent.  Written only by the channel
 * module; conn is its own connection object, opaque to everyone else.
 */
struct vm_chan {
	void		*conn;
	bool		 connected;	/* socket open */
	bool		 hello;		/* guest hello of this session received */
	bool		 following;	/* acks our targets: the VM is steerable */
	uint64_t	 session;
	uint64_t	 connects;
	uint64_t	 disconnects;
	/* Hello facts. */
	char		 agent[PROTO_MAX_TEXT];
	char		 kernel[PROTO_MAX_TEXT];
	char		 backend[PROTO_MAX_TEXT];
	char		 governor[PROTO_MAX_TEXT];
	struct cpuset	 guest_online;
	unsigned int	 guest_ncores;
	/* Last target sent and last ack received. */
	uint64_t	 target_seq;
	struct cpuset	 target;
	uint64_t	 target_ms;	/* monotonic */
	uint64_t	 ack_seq;
	bool		 ack_ok;
	struct cpuset	 applied;
	char		 ack_error[PROTO_MAX_ERROR];
	uint64_t	 ack_ms;
	/* Guest hints from its last report; < 0 when none. */
	double		 hint_runnable;
	double		 hint_steal_pct;
	double		 hint_psi;
	uint64_t	 report_ms;
	/* Protocol error counters. */
	uint64_t	 err_decode;	/* lines that did not decode */
	uint64_t	 err_overlong;	/* lines over PROTO_MAX_LINE */
	uint64_t	 err_rate;	/* messages over the rate limit */
	uint64_t	 err_protocol;	/* well-formed but out of place */
};

/* The cap on a VM's vCPUs (written by vcap.c; enforce=cap). */
struct vm_cap {
	bool		 active;	/* set through libvirt now */
	double		 cpus;		/* the share it stands for */
	unsigned long long period_us;	/* the VM's vcpu_period */
	long long	 quota_us;	/* vcpu_quota, per vCPU */
	char		 error[128];	/* the last failure, "" if none */
};

struct vm {
	enum vm_source	 source;	/* set by its discovery after add */
	struct vm_info	 info;
	struct vm_meta	 meta;
	pid_t		 pid;		/* QEMU, 0 if unknown */
	enum vm_tid_source tid_source;
	unsigned int	 tid_tries;	/* discovery: lookups without libvirt
					   since the last libvirt event */
	struct vm_thread *thread;	/* info.nvcpus entries */
	void		*sampler;	/* the sampler's own state of the VM
					   (sampler.c); opaque to the model */
	struct vm_sample sample;
	struct policy_state pstate;
	bool		 decided;	/* decision holds this VM's last one */
	struct policy_decision decision;
	struct vm_chan	 chan;
	struct vm_cap	 cap;
	uint32_t	 hist_id;	/* model: name table entry + 1, 0 none */
	uint64_t	 added_ms;	/* monotonic */
	TAILQ_ENTRY(vm)	 entry;
};

/* The host as the sampler saw it last period. */
struct host_sample {
	bool		 valid;		/* two reads apart: rates are meaningful */
	uint64_t	 mono_ms;
	uint64_t	 real_ms;
	double		 period_s;	/* measured time since the previous sample */
	struct cpuset	 online;	/* host CPUs online */
	struct cpuset	 usable;	/* host CPUs VMs may use */
	const char	*usable_from;	/* "cgroup2", "cgroup1", "online" */
	double		 busy_cpus;	/* busy time of the usable CPUs */
	double		 vm_run_cpus;	/* vCPU threads, summed */
	double		 vm_delay_cpus;
	double		 nonvm_cpus;	/* busy time not explained by vCPUs */
	double		 capacity;	/* usable CPUs minus non-VM load */
	double		 psi_some_avg10;	/* /proc/pressure/cpu; < 0 if none */
	double		 psi_full_avg10;
	unsigned int	 vms;
	unsigned int	 threads;	/* vCPU threads read */
	unsigned int	 gone;		/* vCPU threads vanished this period */
};

/*
 * One VM in one history record.  Kept small (24 bytes) because the ring
 * holds one per VM per period: an hour of 1000 VMs.  The name and UUID
 * live once in the model's name table: host_hist_name(), host_hist_uuid().
 */
struct hist_vm {
	uint32_t	 id;		/* name table entry */
	float		 run_cpus;
	float		 delay_cpus;
	float		 demand;
	uint16_t	 vcpus;		/* online */
	uint16_t	 preferred;	/* vCPUs decided */
	uint16_t	 cores;
	uint8_t		 reason;	/* enum policy_reason */
	bool		 steerable;
};

/*
 * Periods merged into one record once they are older than the
 * history_full newest: figures are means over the periods (of those a VM
 * ran in), counts and reasons the newest period's.
 */
#define HIST_MERGE	10

/* One period, or HIST_MERGE periods merged (older history). */
struct hist_rec {
	uint64_t	 seq;		/* periods since start, from 1; the
					   newest one merged */
	uint64_t	 mono_ms;	/* of the newest period merged */
	uint64_t	 real_ms;
	unsigned int	 periods;	/* how many it stands for */
	double		 capacity;
	double		 busy_cpus;
	double		 nonvm_cpus;
	double		 vm_run_cpus;
	double		 vm_delay_cpus;
	double		 psi_some_avg10;
	struct policy_summary summary;
	unsigned int	 nvms;
	struct hist_vm	*vms;		/* nvms entries, owned by the record */
};

/* One change of a VM's preferred set. */
struct decision_event {
	uint64_t	 seq;		/* from 1, increasing */
	uint64_t	 mono_ms;
	uint64_t	 real_ms;
	char		 uuid[VM_UUID_LEN];
	char		 name[VM_NAME_LEN];
	struct cpuset	 from;		/* empty for a VM's first decision */
	struct cpuset	 to;
	enum policy_reason reason;
	char		 why[256];
};

/*
 * Callbacks of a module that follows the VMs or the period: the channel
 * manager, the sampler, the caps.  Any of them may be NULL.  Every
 * registered set is called, in the order registered.  deliver is called once per VM per period with
 * its decision (also when unchanged: the target doubles as the lease
 * refresh); never in observe mode.
 */
struct host_hooks {
	void	(*deliver)(struct vm *, const struct policy_decision *, void *);
	/* Called from host_vm_add(): only uuid and name are set yet. */
	void	(*vm_added)(struct vm *, void *);
	/*
	 * info, meta or threads were (re)read: after every add, on every
	 * libvirt event for the VM and on reconnection.  Compare with what
	 * you kept (e.g. info.channel, thread[].tid) to see what changed.
	 */
	void	(*vm_changed)(struct vm *, void *);
	/* Before the VM is freed: drop every reference to it. */
	void	(*vm_removed)(struct vm *, void *);
	/*
	 * Once at the end of every period, after every deliver, in observe
	 * mode too and when the policy refused its inputs: the per-period
	 * work of the module (the channels' hello retries, pings and
	 * summaries; the caps).  No module keeps a period timer of its own.
	 */
	void	(*period_end)(void *);
	void	*arg;
};

/* Sets of hooks a host holds at most. */
#define HOST_HOOKS_MAX	4

struct host_params {
	bool		 observe;	/* decide and log; never deliver */
	unsigned int	 history;	/* periods of history, >= 1 */
	/*
	 * The newest periods kept one by one; older ones are merged
	 * HIST_MERGE to a record.  0 (or >= history): none merged.
	 */
	unsigned int	 history_full;
	unsigned int	 decisions;	/* decision events kept, >= 1 */
	/* Enforcement of a VM whose metadata does not say (hostd.conf). */
	enum polmeta_enforce enforce;
	struct policy_config policy;
};

struct host;

struct host	*host_new(const struct host_params *);
void		 host_free(struct host *);
/* Apply new parameters (SIGHUP); the rings keep their newest records. */
void		 host_set_params(struct host *, const struct host_params *);
const struct host_params *host_params(const struct host *);
/* Register a set of hooks (copied); hooks->arg names it for removal. */
void		 host_add_hooks(struct host *, const struct host_hooks *);
/* Unregister the set registered with arg; nothing if there is none. */
void		 host_remove_hooks(struct host *, const void *arg);

/* Registry.  Names and UUIDs are unique among running VMs. */
struct vm	*host_vm_add(struct host *, const char *uuid, const char *name);
void		 host_vm_remove(struct host *, struct vm *);
void		 host_vm_changed(struct host *, struct vm *);
struct vm	*host_vm_find(const struct host *, const char *uuid);
struct vm	*host_vm_find_name(const struct host *, const char *name);
unsigned int	 host_nvms(const struct host *);
struct vm	*host_vm_first(const struct host *);
struct vm	*host_vm_next(const struct vm *);
#define HOST_FOREACH_VM(vm, host)					\
	for ((vm) = host_vm_first(host); (vm) != NULL;			\
	    (vm) = host_vm_next(vm))

/*
 * Replace vm->info (taking ownership of what src points to; src is zeroed).
 * Resizes vm->thread when nvcpus changes, keeping the known threads.
 */
void		 vm_set_info(struct vm *, struct vm_info *src);
/*
 * Set the vCPU thread ids (n entries, 0 = unknown); the figures of a
 * thread whose id changed are zeroed.  Call host_vm_changed() after.
 */
void		 vm_set_threads(struct vm *, pid_t pid, const pid_t *tids,
		    unsigned int n, enum vm_tid_source);
/* Free what a vm_info owns and zero it. */
void		 vm_info_clear(struct vm_info *);
const char	*vm_tid_source_name(enum vm_tid_source);
const char	*vm_source_name(enum vm_source);

/* The sampler writes the host figures here; everyone reads host_sample(). */
struct host_sample *host_sample_mut(struct host *);
const struct host_sample *host_sample(const struct host *);

/*
 * Run the period on the figures the sampler just wrote: add them to the
 * running totals, decide and log each change, record history, deliver
 * (hooks.deliver), publish (hooks.period_end).  Returns 0, or -1 if the
 * policy engine refused its inputs (logged; nothing decided, recorded or
 * delivered; the totals and period_end still run).
 */
int		 host_period(struct host *, uint64_t now_ms);
/*
 * The guest says it still holds set from an earlier run of the daemon (its
 * lease runs): take it as the VM's current decision, so that the next one
 * moves on from there instead of widening the guest first.  Only while
 * the VM has no decision of this run and when set is whole online cores
 * of it, not all of them.  Returns 0 if adopted, -1 if not.
 */
int		 host_vm_adopt(struct host *, struct vm *,
		    const struct cpuset *set);
/*
 * Counters over the daemon's life, kept by the period: the per-VM ones
 * vanish with their VM, the host's must not.
 */
struct host_totals {
	double		 run_s;		/* vCPU threads ran, seconds */
	double		 delay_s;	/* runnable vCPU threads waited */
	uint64_t	 proto_errors;	/* protocol violations of agents */
};
const struct host_totals *host_totals(const struct host *);
/*
 * The protocol violations so far: the total plus what the VMs counted
 * since the last period, so that it is never below a VM's own count.
 */
uint64_t	host_proto_errors(const struct host *);
/* Summary of the last period's decision. */
const struct policy_summary *host_summary(const struct host *);
uint64_t	 host_periods(const struct host *);
/* Grows by one whenever a VM is added or removed. */
uint64_t	 host_vm_gen(const struct host *);

/* History, newest first: i = 0 is the last period; NULL beyond the end. */
unsigned int	 host_history_len(const struct host *);
const struct hist_rec *host_history(const struct host *, unsigned int i);
/* The name and UUID of a VM in a history record. */
const char	*host_hist_name(const struct host *, const struct hist_vm *);
const char	*host_hist_uuid(const struct host *, const struct hist_vm *);
/* Decision changes, newest first. */
unsigned int	 host_decisions_len(const struct host *);
const struct decision_event *host_decision(const struct host *, unsigned int i);

#endif
