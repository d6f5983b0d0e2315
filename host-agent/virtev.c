/*
 * libvirt event callbacks on libevent.  The rules of libvirt-event.h:
 * - the same fd may be registered more than once (libevent allows several
 *   events per fd);
 * - a timeout of -1 is off, 0 fires on every loop iteration, n > 0 every
 *   n ms, repeatedly (see virtev_timer_cb);
 * - removing a handle or timeout must not call its free callback from the
 *   removing stack (libvirt may hold locks there): frees are queued and
 *   run from a zero-delay libevent callback;
 * - a callback may remove its own watch while running: removal only marks
 *   the entry and deletes its event; memory goes with the queued free.
 *
 * libvirt's impl functions carry no context pointer, so the base and the
 * tables are file-scope state, set once by virtev_register().
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <libvirt/libvirt.h>

#include "log.h"
#include "util.h"
#include "virtev.h"

struct virtev_ent {
	int			 id;
	bool			 timer;
	bool			 deleted;
	int			 fd;
	int			 events;	/* VIR_EVENT_HANDLE_* */
	int			 timeout;	/* ms */
	virEventHandleCallback	 hcb;
	virEventTimeoutCallback	 tcb;
	void			*opaque;
	virFreeCallback		 ff;
	struct event		*ev;
	struct virtev_ent	*next;
};

static struct event_base	*virtev_base;
static struct virtev_ent	*virtev_list;	/* live and deleted entries */
static struct event		*virtev_reaper;
static int			 virtev_next_id = 1;

static struct virtev_ent *
virtev_find(int id, bool timer)
{
	struct virtev_ent	*e;

	for (e = virtev_list; e != NULL; e = e->next) {
		if (e->id == id && e->timer == timer && !e->deleted)
			return e;
	}
	return NULL;
}

static void
virtev_handle_cb(evutil_socket_t fd, short what, void *arg)
{
	struct virtev_ent	*e = arg;
	int			 events = 0;

	if (e->deleted)
		return;
	if (what & EV_READ)
		events |= VIR_EVENT_HANDLE_READABLE;
	if (what & EV_WRITE)
		events |= VIR_EVENT_HANDLE_WRITABLE;
	e->hcb(e->id, (int)fd, events, e->opaque);
}

static void	virtev_arm_timer(struct virtev_ent *);

/*
 * Timers are one-shot libevent events re-armed after each call: libevent
 * does not re-add a persistent event whose timeout is zero, and libvirt's
 * 0 means "on every loop iteration".  Re-armed at zero, the event waits
 * in the timeout heap until the next iteration, after the I/O poll.
 */
static void
virtev_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct virtev_ent	*e = arg;

	if (e->deleted)
		return;
	e->tcb(e->id, e->opaque);
	/* The callback may have updated or removed its own timer. */
	if (!e->deleted && e->timeout >= 0 &&
	    !event_pending(e->ev, EV_TIMEOUT, NULL))
		virtev_arm_timer(e);
}

static short
virtev_flags(int events)
{
	short	f = 0;

	if (events & VIR_EVENT_HANDLE_READABLE)
		f |= EV_READ;
	if (events & VIR_EVENT_HANDLE_WRITABLE)
		f |= EV_WRITE;
	return f;
}

/*
 * (Re)arm a handle's event.  The struct event is reused, never freed here:
 * libvirt may update a watch from inside that watch's own callback.
 */
static void
virtev_arm_handle(struct virtev_ent *e)
{
	short	f = virtev_flags(e->events);

	if (e->ev == NULL) {
		e->ev = event_new(virtev_base, e->fd, f | EV_PERSIST,
		    virtev_handle_cb, e);
		if (e->ev == NULL)
			fatalx("libevent: cannot watch fd %d", e->fd);
	} else {
		event_del(e->ev);
		event_assign(e->ev, virtev_base, e->fd, f | EV_PERSIST,
		    virtev_handle_cb, e);
	}
	/* Error and hangup show up as readable; libvirt then reads EOF. */
	if (f != 0 && event_add(e->ev, NULL) != 0)
		fatalx("libevent: cannot watch fd %d", e->fd);
}

static void
virtev_arm_timer(struct virtev_ent *e)
{
	struct timeval	tv;

	event_del(e->ev);
	if (e->timeout < 0)
		return;
	tv.tv_sec = e->timeout / 1000;
	tv.tv_usec = (e->timeout % 1000) * 1000;
	if (event_add(e->ev, &tv) != 0)
		fatalx("libevent: cannot add a timer");
}

/* Run queued free callbacks, from a stack that holds no libvirt lock. */
static void
virtev_reap(evutil_socket_t fd, short what, void *arg)
{
	struct virtev_ent	**pp = &virtev_list, *e;

	while ((e = *pp) != NULL) {
		if (!e->deleted) {
			pp = &e->next;
			continue;
		}
		*pp = e->next;
		if (e->ev != NULL)
			event_free(e->ev);
		if (e->ff != NULL)
			e->ff(e->opaque);
		free(e);
	}
}

static void
virtev_delete(struct virtev_ent *e)
{
	e->deleted = true;
	if (e->ev != NULL)
		event_del(e->ev);
	event_active(virtev_reaper, EV_TIMEOUT, 0);
}

static struct virtev_ent *
virtev_new(bool timer, void *opaque, virFreeCallback ff)
{
	struct virtev_ent	*e;

	e = xcalloc(1, sizeof(*e));
	e->id = virtev_next_id++;
	e->timer = timer;
	e->fd = -1;
	e->opaque = opaque;
	e->ff = ff;
	e->next = virtev_list;
	virtev_list = e;
	return e;
}

static int
virtev_add_handle(int fd, int events, virEventHandleCallback cb, void *opaque,
    virFreeCallback ff)
{
	struct virtev_ent	*e;

	e = virtev_new(false, opaque, ff);
	e->fd = fd;
	e->events = events;
	e->hcb = cb;
	virtev_arm_handle(e);
	return e->id;
}

static void
virtev_update_handle(int watch, int events)
{
	struct virtev_ent	*e;

	if ((e = virtev_find(watch, false)) == NULL)
		return;
	if (e->events == events)
		return;
	e->events = events;
	virtev_arm_handle(e);
}

static int
virtev_remove_handle(int watch)
{
	struct virtev_ent	*e;

	if ((e = virtev_find(watch, false)) == NULL)
		return -1;
	virtev_delete(e);
	return 0;
}

static int
virtev_add_timeout(int timeout, virEventTimeoutCallback cb, void *opaque,
    virFreeCallback ff)
{
	struct virtev_ent	*e;

	e = virtev_new(true, opaque, ff);
	e->timeout = timeout;
	e->tcb = cb;
	e->ev = event_new(virtev_base, -1, 0, virtev_timer_cb, e);
	if (e->ev == NULL)
		fatalx("libevent: cannot create a timer");
	virtev_arm_timer(e);
	return e->id;
}

static void
virtev_update_timeout(int timer, int timeout)
{
	struct virtev_ent	*e;

	if ((e = virtev_find(timer, true)) == NULL)
		return;
	/* Re-arming restarts the interval, as libvirt's own loop does. */
	e->timeout = timeout;
	virtev_arm_timer(e);
}

static int
virtev_remove_timeout(int timer)
{
	struct virtev_ent	*e;

	if ((e = virtev_find(timer, true)) == NULL)
		return -1;
	virtev_delete(e);
	return 0;
}

void
virtev_register(struct event_base *base)
{
	if (virtev_base != NULL)
		fatalx("virtev_register called twice");
	virtev_base = base;
	virtev_reaper = event_new(base, -1, 0, virtev_reap, NULL);
	if (virtev_reaper == NULL)
		fatalx("libevent: cannot create the reaper");
	virEventRegisterImpl(virtev_add_handle, virtev_update_handle,
	    virtev_remove_handle, virtev_add_timeout, virtev_update_timeout,
	    virtev_remove_timeout);
}

int
virtev_count(void)
{
	struct virtev_ent	*e;
	int			 n = 0;

	for (e = virtev_list; e != NULL; e = e->next) {
		if (!e->deleted)
			n++;
	}
	return n;
}
