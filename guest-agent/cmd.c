/* fork/exec with captured output and a deadline. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cmd.h"
#include "log.h"
#include "util.h"

int
cmd_exists(const char *name)
{
	const char	*path = getenv("PATH"), *p, *end;
	char		*full;
	struct stat	 st;
	int		 found = 0;

	if (strchr(name, '/') != NULL)
		return access(name, X_OK) == 0;
	if (path == NULL)
		path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
	for (p = path; !found && *p != '\0'; p = *end == '\0' ? end : end + 1) {
		if ((end = strchr(p, ':')) == NULL)
			end = p + strlen(p);
		xasprintf(&full, "%.*s/%s", (int)(end - p),
		    end == p ? "." : p, name);
		found = stat(full, &st) == 0 && S_ISREG(st.st_mode) &&
		    access(full, X_OK) == 0;
		free(full);
	}
	return found;
}

/* In the child: plain signal state, the pipes on 1 and 2, then exec. */
static __attribute__((noreturn)) void
cmd_child(char *const argv[], int outfd, int errfd)
{
	sigset_t	all;
	int		nullfd;

	sigemptyset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	signal(SIGPIPE, SIG_DFL);
	if ((nullfd = open("/dev/null", O_RDONLY)) != -1) {
		dup2(nullfd, 0);
		close(nullfd);
	}
	dup2(outfd, 1);
	dup2(errfd, 2);
	execvp(argv[0], argv);
	dprintf(2, "exec %s: %s\n", argv[0], strerror(errno));
	_exit(127);
}

int
cmd_run(char *const argv[], char *out, size_t outlen,
    unsigned int timeout_ms, char *err, size_t errlen)
{
	int		 op[2], ep[2], status, open_fds, i, rc = -1;
	char		 ebuf[512], sink[512], *dst;
	size_t		 olen = 0, elen = 0, room;
	struct pollfd	 pfd[2];
	uint64_t	 deadline = time_mono_ms() + timeout_ms, now;
	bool		 timed_out = false;
	pid_t		 pid;
	ssize_t		 n;

	if (out != NULL && outlen > 0)
		out[0] = '\0';
	if (pipe2(op, O_CLOEXEC) == -1)
		goto fail_errno;
	if (pipe2(ep, O_CLOEXEC) == -1) {
		close(op[0]);
		close(op[1]);
		goto fail_errno;
	}
	if ((pid = fork()) == -1) {
		close(op[0]);
		close(op[1]);
		close(ep[0]);
		close(ep[1]);
		goto fail_errno;
	}
	if (pid == 0)
		cmd_child(argv, op[1], ep[1]);
	close(op[1]);
	close(ep[1]);

	pfd[0].fd = op[0];
	pfd[1].fd = ep[0];
	pfd[0].events = pfd[1].events = POLLIN;
	open_fds = 2;
	while (open_fds > 0) {
		now = time_mono_ms();
		if (now >= deadline) {
			timed_out = true;
			kill(pid, SIGKILL);
			break;
		}
		if (poll(pfd, 2, (int)(deadline - now)) == -1) {
			if (errno == EINTR)
				continue;
			kill(pid, SIGKILL);
			break;
		}
		for (i = 0; i < 2; i++) {
			if (pfd[i].fd == -1 || pfd[i].revents == 0)
				continue;
			/* Past the buffer, output is read and dropped. */
			if (i == 0 && out != NULL && olen + 1 < outlen) {
				dst = out + olen;
				room = outlen - 1 - olen;
			} else if (i == 1 && elen + 1 < sizeof(ebuf)) {
				dst = ebuf + elen;
				room = sizeof(ebuf) - 1 - elen;
			} else {
				dst = sink;
				room = sizeof(sink);
			}
			n = read(pfd[i].fd, dst, room);
			if (n == -1 && errno == EINTR)
				continue;
			if (n <= 0) {
				close(pfd[i].fd);
				pfd[i].fd = -1;
				open_fds--;
				continue;
			}
			if (dst == out + olen)
				olen += (size_t)n;
			else if (dst == ebuf + elen)
				elen += (size_t)n;
		}
	}
	for (i = 0; i < 2; i++) {
		if (pfd[i].fd != -1)
			close(pfd[i].fd);
	}
	if (out != NULL && outlen > 0)
		out[olen] = '\0';
	ebuf[elen] = '\0';
	ebuf[strcspn(ebuf, "\n")] = '\0';

	while (waitpid(pid, &status, 0) == -1) {
		if (errno != EINTR) {
			snprintf(err, errlen, "%s: waitpid: %s", argv[0],
			    strerror(errno));
			return -1;
		}
	}
	if (timed_out)
		snprintf(err, errlen, "%s: no answer after %u ms, killed",
		    argv[0], timeout_ms);
	else if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		rc = 0;
	else {
		char	esc[256];

		str_escape(esc, sizeof(esc), ebuf, strlen(ebuf));
		if (WIFEXITED(status))
			snprintf(err, errlen, "%s exited with %d%s%s", argv[0],
			    WEXITSTATUS(status), *esc != '\0' ? ": " : "", esc);
		else
			snprintf(err, errlen, "%s killed by signal %d",
			    argv[0], WTERMSIG(status));
	}
	return rc;

fail_errno:
	snprintf(err, errlen, "%s: %s", argv[0], strerror(errno));
	return -1;
}
