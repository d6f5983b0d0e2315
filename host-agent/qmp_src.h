/*
 * Discovery without libvirt (README "Without libvirt"): VMs found through
 * their QEMU monitors (QMP), for plain QEMU and Proxmox VE, written into
 * the same model as libvirt's domains (vm->source = VM_SRC_QMP).
 *
 * Sockets come from two lists of globs, watched with inotify and rescanned
 * every poll period:
 *   monitors  a monitor dedicated to prefcpu (-qmp unix:...,server=on,
 *             wait=off): held open between query rounds, for its events
 *             (STOP, RESUME, SHUTDOWN) and to see QEMU exit at once;
 *   shared    a monitor someone else owns (Proxmox's VMID.qmp): connect,
 *             one query round, disconnect; busy (no greeting within the
 *             timeout: its owner holds it) means try again next poll.
 * A query round asks query-name, query-uuid, query-status,
 * query-cpus-fast (vCPU threads, topology, NUMA), query-chardev and the
 * virtserialport named org.prefcpu.0 (qom-list, qom-get) for the channel
 * socket.  The weight is the VM's cgroup cpu.weight (v2, as shares:
 * weight * 1024 / 100) or cpu.shares (v1); the policy a drop-in file
 * POLICY_DIR/NAME.conf with the fields of the libvirt metadata
 * (polmeta.h), re-read when it changes and on qsrc_set_params().
 *
 * Every reply is bounded (max_reply bytes, refused and logged above),
 * every command has a timeout, connections retry with backoff, and
 * nothing here runs on the period path.  A VM is forgotten when its
 * monitor cannot be reached again, its socket file goes away, or its
 * process exits.
 */
#ifndef PREFCPU_QMP_SRC_H
#define PREFCPU_QMP_SRC_H

#include <stdbool.h>
#include <stddef.h>

#include "model.h"

struct event_base;

struct qsrc_params {
	const char	*proc_root;	/* PID/cgroup, PID liveness */
	const char	*cgroup_root;	/* cpu.weight, cpu.shares */
	const char	*policy_dir;	/* NAME.conf drop-ins */
	const char	*monitors;	/* globs, space-separated: held */
	const char	*shared;	/* globs: connect, query, disconnect */
	unsigned int	 timeout_ms;	/* per reply, greeting included */
	unsigned int	 poll_ms;	/* query rounds and rescans */
	unsigned int	 max_reply;	/* bytes of one reply line */
	unsigned int	 reconnect_min_ms;
	unsigned int	 reconnect_max_ms;
};

struct qsrc;

struct qsrc	*qsrc_new(struct event_base *, struct host *,
		    const struct qsrc_params *);
/* Removes the VMs it found from the model. */
void		 qsrc_free(struct qsrc *);
/* New parameters (SIGHUP): rescan now and re-read every policy file. */
void		 qsrc_set_params(struct qsrc *, const struct qsrc_params *);
/* Monitors known now (sockets found), and VMs tracked through them. */
unsigned int	 qsrc_monitors(const struct qsrc *);

/*
 * Read a drop-in policy file's text into m (pure, for tests): lines
 * "field = value" with the fields and values of the libvirt metadata,
 * '#' comments, an optional [policy] header; checked with polmeta_check
 * against nvcpus.  An error leaves m->valid false and m->error naming
 * path:line.
 */
void		 qsrc_policy_parse(const char *text, size_t len,
		    const char *path, unsigned int nvcpus, struct vm_meta *m);
/*
 * The CPU weight of process pid as shares (cgroup v2 cpu.weight * 1024 /
 * 100, or v1 cpu.shares), from proc_root/PID/cgroup and the files under
 * cgroup_root; 0 if none is found.  *from says which file.
 */
unsigned int	 qsrc_weight(const char *proc_root, const char *cgroup_root,
		    pid_t pid, char *from, size_t fromlen);

#endif
