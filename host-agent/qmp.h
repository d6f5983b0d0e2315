/*
 * The QEMU Machine Protocol as prefcpu reads it: one decoder that turns
 * one line from a QMP monitor into a typed struct (DESIGN.md section 3.1,
 * "Without libvirt").  QMP is untrusted input here, as a guest is: the
 * line is bounded by the caller, checked for NUL bytes, UTF-8 and JSON
 * nesting, and every member is type- and range-checked.  Nothing past
 * this decoder sees a json_object.
 *
 * Pure: a line in, a struct out; no sockets, no libevent.
 */
#ifndef PREFCPU_QMP_H
#define PREFCPU_QMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QMP_MAX_DEPTH	16	/* JSON nesting of one reply */
#define QMP_MAX_CPUS	1024	/* entries of query-cpus-fast */
#define QMP_MAX_ITEMS	1024	/* entries of query-chardev or qom-list */
#define QMP_STR		256	/* strings kept: names, paths, labels */

/* What the reply to the command in flight carries. */
enum qmp_expect {
	QMPX_ANY,	/* qmp_capabilities: the return value is ignored */
	QMPX_NAME,	/* query-name: {"name": S} or {} */
	QMPX_UUID,	/* query-uuid: {"UUID": S} */
	QMPX_STATUS,	/* query-status: {"running": B, ...} */
	QMPX_CPUS,	/* query-cpus-fast: [{cpu-index, thread-id, props}] */
	QMPX_CHARDEV,	/* query-chardev: [{label, filename}] */
	QMPX_QOM_LIST,	/* qom-list: [{name, type}] */
	QMPX_STRING,	/* qom-get of a string property */
};

enum qmp_kind {
	QMPK_GREETING,	/* {"QMP": {...}} */
	QMPK_RETURN,	/* {"return": ..., "id": N} */
	QMPK_ERROR,	/* {"error": {"class", "desc"}, "id": N} */
	QMPK_EVENT,	/* {"event": S, ...} */
};

/* One vCPU of query-cpus-fast; topology ids are -1 where absent. */
struct qmp_cpu {
	unsigned int	 index;
	int		 tid;
	int		 socket, die, core, thread, node;
};

/* A chardev (label, filename) or a QOM child (name, type). */
struct qmp_item {
	char		 name[QMP_STR];
	char		 value[QMP_STR];
};

struct qmp_reply {
	enum qmp_kind	 kind;
	bool		 has_id;
	uint64_t	 id;
	/*
	 * The event's name, the error's description, the VM's name (empty:
	 * none set), its UUID (lower case), or the string property.
	 */
	char		 text[QMP_STR];
	bool		 running;	/* QMPX_STATUS */
	unsigned int	 n;		/* cpus or items */
	struct qmp_cpu	*cpus;		/* QMPX_CPUS, sorted by index */
	struct qmp_item	*items;		/* QMPX_CHARDEV, QMPX_QOM_LIST */
};

/*
 * Decode one line (without its newline) as the reply to a command that
 * expects what, or as an event or the greeting, whatever expect says.
 * 0, or -1 with a one-line cause; untrusted text is escaped in it.  Free
 * the reply with qmp_reply_free() either way.
 */
int	qmp_decode(const char *line, size_t len, enum qmp_expect expect,
	    struct qmp_reply *, char *err, size_t errlen);
void	qmp_reply_free(struct qmp_reply *);

/*
 * The host path of a unix socket chardev from its query-chardev filename,
 * "unix:PATH" with ",server=on" or other options after it, after
 * "disconnected:" while no client is connected.  0 with the
 * path, -1 if it is not one (or longer than a socket path can be).
 */
int	qmp_unix_path(const char *filename, char *path, size_t pathlen);

/*
 * A command line {"execute": E, "id": N, "arguments": {"path": P,
 * "property": Q}} with a newline; path and property may be NULL (no
 * arguments, or only a path).  A new string, strings escaped by json-c.
 */
char	*qmp_command(const char *execute, uint64_t id, const char *path,
	    const char *property);

#endif
