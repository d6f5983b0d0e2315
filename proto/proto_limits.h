/*
 * The protocol's limits: the sizes other modules (the host's model)
 * allocate by, without the codec and json-c.
 */
#ifndef PREFCPU_PROTO_LIMITS_H
#define PREFCPU_PROTO_LIMITS_H

#include <stdint.h>

#define PROTO_MAX_LINE		4096	/* bytes, without the newline */
#define PROTO_MAX_DEPTH		4	/* JSON nesting accepted */
#define PROTO_MAX_CORES		1024	/* entries in hello "cores" */
#define PROTO_MAX_TEXT		128	/* agent, host, kernel, backend names */
#define PROTO_MAX_ERROR		256	/* error texts */
#define PROTO_MAX_BACKENDS	8
#define PROTO_MAX_NR_RUNNING	1000000	/* report nr_running, runnable */
#define PROTO_MAX_SEQ		((UINT64_C(1) << 53) - 1) /* exact in a double */
#define PROTO_MIN_LEASE_MS	100
#define PROTO_MAX_LEASE_MS	3600000
#define PROTO_DEFAULT_LEASE_MS	15000
/*
 * The longest lease a guest agent takes unless the host's hello raises it
 * (max_lease_ms), and then only within a bound the guest configures: a
 * guest whose host vanished is confined for a minute at most by default.
 */
#define PROTO_LEASE_CAP_MS	60000

#endif
