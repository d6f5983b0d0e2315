/*
 * prefcpu wire protocol between prefcpu-hostd and prefcpu-guestd: one JSON
 * object per line over virtio-serial (DESIGN.md section 5).
 *
 * This is the only module that touches json_object for protocol messages.
 * A line is decoded once, here, into a typed struct whose every field has
 * been checked for type and range; nothing past the decoder sees JSON.
 */
#ifndef PREFCPU_PROTO_H
#define PREFCPU_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cpuset.h"

#include "proto_limits.h"

/*
 * Bump PROTO_VERSION when a message changes in a way an existing peer
 * would misread: a field removed or renamed, a field's type or meaning
 * changed, a new message that must be understood.  Adding an optional
 * field or a message that may be answered with "error" does not bump it.
 */
#define PROTO_VERSION		1

#define PROTO_PORT_NAME		"org.prefcpu.0"
/*
 * The guest's error about a target that arrived before any hello (its
 * agent restarted while the host kept the connection): the host answers
 * with a hello.
 */
#define PROTO_ERR_NO_SESSION	"no session: hello first"

/* Who sent the line: "hello" means different things each way. */
enum proto_peer {
	PROTO_FROM_HOST,
	PROTO_FROM_GUEST,
};

enum proto_type {
	PROTO_HELLO_HOST,	/* host -> guest "hello" */
	PROTO_HELLO_GUEST,	/* guest -> host "hello" */
	PROTO_TARGET,		/* host -> guest */
	PROTO_ACK,		/* guest -> host */
	PROTO_RELEASE,		/* host -> guest */
	PROTO_REPORT,		/* guest -> host */
	PROTO_PING,		/* either */
	PROTO_PONG,		/* either */
	PROTO_ERROR,		/* either */
};

struct proto_hello_host {
	uint64_t	session;	/* random, never 0; hex on the wire */
	char		host[PROTO_MAX_TEXT];
	uint32_t	period_ms;	/* 1 .. 3600000 */
	/*
	 * Optional, 0 when absent: the longest lease this host sends when it
	 * is over PROTO_LEASE_CAP_MS; the guest honours it up to its own bound.
	 */
	uint32_t	max_lease_ms;
};

struct proto_hello_guest {
	uint64_t	session;	/* echo of the host's */
	char		agent[PROTO_MAX_TEXT];	/* "prefcpu-guestd 0.1.0" */
	struct cpuset	online;
	unsigned int	ncores;
	struct cpuset	*cores;		/* ncores entries, owned by the msg */
	char		backend[PROTO_MAX_TEXT];	/* chosen */
	unsigned int	nbackends;
	char		backends[PROTO_MAX_BACKENDS][PROTO_MAX_TEXT];	/* usable */
	char		kernel[PROTO_MAX_TEXT];	/* uname -r */
	/* Optional: the guest kernel's own steal governor, "" if none. */
	char		governor[PROTO_MAX_TEXT];
	/* Optional: the agent restores task affinities itself (kernel < 6.2). */
	bool		keeps_affinity;
	/*
	 * Optional: the set an earlier session's target still holds (its
	 * lease runs), so that a restarted host can adopt it instead of
	 * widening the guest; empty (absent on the wire) when the guest
	 * uses all its CPUs.
	 */
	struct cpuset	applied;
};

struct proto_target {
	uint64_t	session;
	uint64_t	seq;		/* 1 .. PROTO_MAX_SEQ, increasing */
	struct cpuset	preferred;	/* not empty */
	uint32_t	lease_ms;	/* PROTO_MIN_LEASE_MS .. MAX */
};

struct proto_ack {
	uint64_t	seq;
	bool		ok;
	struct cpuset	applied;	/* when ok */
	char		error[PROTO_MAX_ERROR];	/* when !ok */
};

struct proto_release {
	uint64_t	session;
};

struct proto_report {
	struct cpuset	online;
	double		steal_pct;	/* 0 .. 100 */
	double		psi_some_avg10;	/* 0 .. 100 */
	uint32_t	nr_running;	/* 0 .. 1000000 */
	/*
	 * Optional: the mean number of runnable tasks since the last report
	 * (nr_running is then that mean rounded, for hosts that do not know
	 * this field); without it nr_running is an instantaneous count.
	 */
	bool		has_runnable;
	double		runnable;	/* 0 .. 1000000 */
};

struct proto_ping {
	uint64_t	seq;		/* ping and pong */
};

struct proto_error {
	char		error[PROTO_MAX_ERROR];
	bool		has_seq;
	uint64_t	seq;
};

struct proto_msg {
	enum proto_type	type;
	union {
		struct proto_hello_host		hello_host;
		struct proto_hello_guest	hello_guest;
		struct proto_target		target;
		struct proto_ack		ack;
		struct proto_release		release;
		struct proto_report		report;
		struct proto_ping		ping;	/* also pong */
		struct proto_error		error;
	};
};

/* Free what a decoded message owns (hello_guest.cores); msg is reusable. */
void	proto_msg_clear(struct proto_msg *);
const char *proto_type_name(enum proto_type);

/*
 * Encode msg as one line ending in '\n', NUL-terminated, into buf.  Returns
 * the length including the newline, or -1 if it would exceed
 * PROTO_MAX_LINE + 1 bytes or len.
 */
int	proto_encode(const struct proto_msg *, char *buf, size_t len);

/*
 * Decode one line (without its newline; need not be NUL-terminated; an
 * embedded NUL is an error) sent by 'from'.  Returns 0, or -1 with a
 * one-line cause in err ("target: seq: -1 is out of range 1..2^53-1").
 * On error msg holds nothing to free.  If the line was a well-formed
 * object with a "seq" number, *seq_out gets it (for error replies), else 0.
 */
int	proto_decode(const char *line, size_t len, enum proto_peer from,
	    struct proto_msg *msg, uint64_t *seq_out, char *err, size_t errlen);

/* Session ids on the wire: 16 lowercase hex digits. */
void	proto_session_format(uint64_t, char buf[17]);
/* A fresh random session id from getrandom(), never 0. */
uint64_t proto_session_new(void);

/*
 * Line framer for a byte stream.  Lines longer than PROTO_MAX_LINE bytes
 * are discarded up to their newline (the tail is never handed on as a
 * line) and reported once each.  Memory is bounded by PROTO_MAX_LINE.
 */
struct proto_framer;

enum proto_frame_event {
	PROTO_FRAME_LINE,	/* line, len: a complete line, no newline */
	PROTO_FRAME_OVERLONG,	/* a line was too long and was dropped */
};

/*
 * Called for every event; line is NUL-terminated (but may hold NULs) and
 * valid only during the call.  Return 0 to go on, non-zero to stop feeding
 * (the unread rest of buf is kept for the next feed).
 */
typedef int (*proto_frame_cb)(void *arg, enum proto_frame_event,
	    const char *line, size_t len);

struct proto_framer *proto_framer_new(void);
void	proto_framer_free(struct proto_framer *);
void	proto_framer_reset(struct proto_framer *);
/*
 * Feed bytes.  Returns how many bytes of buf were consumed: all of them,
 * unless the callback asked to stop.
 */
size_t	proto_framer_feed(struct proto_framer *, const char *buf, size_t len,
	    proto_frame_cb, void *arg);
/* Bytes of a partial line held now. */
size_t	proto_framer_pending(const struct proto_framer *);

#endif
