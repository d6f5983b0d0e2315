/*
 * Unit tests for host-agent/virtev: libvirt's event API (virEventAdd*,
 * which calls the registered implementation) on a libevent base, with the
 * rules of libvirt-event.h.
 */
#include <check.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <libvirt/libvirt.h>

#include "util.h"
#include "virtev.h"
#include "testlib.h"

static struct event_base *base;

struct counter {
	int	fired;
	int	events;
	int	freed;
	bool	in_remove;	/* set while a remove call is on the stack */
	int	id;
	bool	remove_self;
};

static void
on_free(void *arg)
{
	struct counter *c = arg;

	/* Never from the stack of the remove call. */
	ck_assert(!c->in_remove);
	c->freed++;
}

static void
on_timeout(int timer, void *arg)
{
	struct counter *c = arg;

	c->fired++;
	if (c->remove_self) {
		c->in_remove = true;
		ck_assert_int_eq(virEventRemoveTimeout(timer), 0);
		c->in_remove = false;
	}
}

static void
on_handle(int watch, int fd, int events, void *arg)
{
	struct counter	*c = arg;
	char		 buf[16];

	c->fired++;
	c->events |= events;
	if (c->remove_self) {
		c->in_remove = true;
		ck_assert_int_eq(virEventRemoveHandle(watch), 0);
		c->in_remove = false;
	} else if (events & VIR_EVENT_HANDLE_READABLE)
		(void)!read(fd, buf, sizeof(buf));
}

/* Run the loop for about ms milliseconds. */
static void
spin(int ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };

	event_base_loopexit(base, &tv);
	event_base_dispatch(base);
}

static void
once(void)
{
	event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
}

static void
setup(void)
{
	/* libvirt keeps the implementation for the process: register once. */
	if (base == NULL) {
		base = event_base_new();
		ck_assert_ptr_nonnull(base);
		virtev_register(base);
	}
}

START_TEST(test_timeout_off_and_periodic)
{
	struct counter	c = { 0 };
	int		id, n0;
	uint64_t	t0;

	n0 = virtev_count();
	id = virEventAddTimeout(-1, on_timeout, &c, on_free);
	ck_assert_int_gt(id, 0);
	ck_assert_int_eq(virtev_count(), n0 + 1);
	spin(50);
	ck_assert_int_eq(c.fired, 0);		/* -1 is off */

	virEventUpdateTimeout(id, 10);
	/*
	 * Periodic, not one-shot: it fires again and again (on a loaded
	 * machine the loop may run late, so wait for the count, up to 5 s),
	 * and never more often than every 10 ms.
	 */
	t0 = time_mono_ms();
	while (c.fired < 5 && time_mono_ms() - t0 < 5000)
		spin(20);
	ck_assert_int_ge(c.fired, 5);
	ck_assert_int_le(c.fired, (int)((time_mono_ms() - t0) / 10) + 1);

	virEventUpdateTimeout(id, -1);
	c.fired = 0;
	spin(40);
	ck_assert_int_eq(c.fired, 0);

	c.in_remove = true;
	ck_assert_int_eq(virEventRemoveTimeout(id), 0);
	c.in_remove = false;
	ck_assert_int_eq(c.freed, 0);		/* deferred */
	ck_assert_int_eq(virtev_count(), n0);
	ck_assert_int_eq(virEventRemoveTimeout(id), -1);	/* gone */
	once();
	ck_assert_int_eq(c.freed, 1);
}
END_TEST

START_TEST(test_timeout_zero_every_iteration)
{
	struct counter	c = { 0 };
	int		id, i;

	id = virEventAddTimeout(0, on_timeout, &c, on_free);
	for (i = 0; i < 5; i++)
		once();
	ck_assert_int_ge(c.fired, 5);
	ck_assert_int_eq(virEventRemoveTimeout(id), 0);
	once();
	ck_assert_int_eq(c.freed, 1);
}
END_TEST

START_TEST(test_timeout_removes_itself)
{
	struct counter	c = { 0 };

	c.remove_self = true;
	virEventAddTimeout(0, on_timeout, &c, on_free);
	spin(20);
	ck_assert_int_eq(c.fired, 1);
	ck_assert_int_eq(c.freed, 1);
}
END_TEST

START_TEST(test_handles_same_fd_twice)
{
	struct counter	a = { 0 }, b = { 0 };
	int		p[2], wa, wb;

	ck_assert_int_eq(pipe2(p, O_NONBLOCK), 0);
	wa = virEventAddHandle(p[0], VIR_EVENT_HANDLE_READABLE, on_handle, &a,
	    on_free);
	wb = virEventAddHandle(p[0], 0, on_handle, &b, on_free);
	ck_assert_int_gt(wa, 0);
	ck_assert_int_ne(wa, wb);
	ck_assert_int_eq(write(p[1], "x", 1), 1);
	spin(20);
	ck_assert_int_ge(a.fired, 1);
	ck_assert(a.events & VIR_EVENT_HANDLE_READABLE);
	ck_assert_int_eq(b.fired, 0);		/* asked for nothing */

	/* Both watch the same fd now. */
	virEventUpdateHandle(wb, VIR_EVENT_HANDLE_READABLE);
	a.fired = 0;
	ck_assert_int_eq(write(p[1], "y", 1), 1);
	spin(20);
	ck_assert_int_ge(a.fired + b.fired, 1);
	ck_assert_int_ge(b.fired + a.fired, 1);

	/* Writable, and removal from the handle's own callback. */
	struct counter w = { 0 };
	w.remove_self = true;
	virEventAddHandle(p[1], VIR_EVENT_HANDLE_WRITABLE, on_handle, &w,
	    on_free);
	spin(20);
	ck_assert_int_eq(w.fired, 1);
	ck_assert(w.events & VIR_EVENT_HANDLE_WRITABLE);
	ck_assert_int_eq(w.freed, 1);

	ck_assert_int_eq(virEventRemoveHandle(wa), 0);
	ck_assert_int_eq(virEventRemoveHandle(wb), 0);
	ck_assert_int_eq(virEventRemoveHandle(wb), -1);
	ck_assert_int_eq(a.freed + b.freed, 0);
	once();
	ck_assert_int_eq(a.freed, 1);
	ck_assert_int_eq(b.freed, 1);
	/* A removed handle never fires again. */
	a.fired = b.fired = 0;
	ck_assert_int_eq(write(p[1], "z", 1), 1);
	spin(20);
	ck_assert_int_eq(a.fired + b.fired, 0);
	close(p[0]);
	close(p[1]);
}
END_TEST

int
main(void)
{
	Suite	*s = suite_create("virtev");
	TCase	*tc = tcase_create("virtev");
	int	 status;

	tcase_add_checked_fixture(tc, setup, NULL);
	tcase_add_test(tc, test_timeout_off_and_periodic);
	tcase_add_test(tc, test_timeout_zero_every_iteration);
	tcase_add_test(tc, test_timeout_removes_itself);
	tcase_add_test(tc, test_handles_same_fd_twice);
	suite_add_tcase(s, tc);
	status = testlib_run(s);
	if (base != NULL)
		event_base_free(base);
	return status;
}
