/*
 * Every rsocket call librdmacm exports fails cleanly over the shim: -1
 * with errno EOPNOTSUPP, nothing written through the pointers passed, no
 * crash. (rsockets is a protocol of librdmacm's own; see
 * docs/rdma-shim.md.) Prints OK, or what went wrong and exits 1.
 */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <rdma/rsocket.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

static int failures;

static void expect(const char *what, long ret)
{
	int err = errno;

	if (ret != -1 || err != EOPNOTSUPP) {
		printf("%s: returned %ld, errno %d (%s); want -1, EOPNOTSUPP\n",
		       what, ret, err, strerror(err));
		failures++;
	}
}

int main(void)
{
	struct sockaddr_in sin;
	socklen_t len = sizeof(sin);
	char buf[16] = "unchanged";
	struct pollfd pfd = { .fd = 3, .events = POLLIN, .revents = 0 };
	int one = 1;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(1);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

	errno = 0;
	expect("rsocket", rsocket(AF_INET, SOCK_STREAM, 0));
	/* A descriptor rsocket never gave: still the same answer. */
	errno = 0;
	expect("rbind", rbind(3, (struct sockaddr *)&sin, sizeof(sin)));
	errno = 0;
	expect("rlisten", rlisten(3, 1));
	errno = 0;
	expect("raccept", raccept(3, (struct sockaddr *)&sin, &len));
	errno = 0;
	expect("rconnect", rconnect(3, (struct sockaddr *)&sin, sizeof(sin)));
	errno = 0;
	expect("rsend", rsend(3, buf, sizeof(buf), 0));
	errno = 0;
	expect("rrecv", rrecv(3, buf, sizeof(buf), 0));
	errno = 0;
	expect("rpoll", rpoll(&pfd, 1, 0));
	errno = 0;
	expect("rsetsockopt", rsetsockopt(3, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)));
	errno = 0;
	expect("rgetsockopt", rgetsockopt(3, SOL_SOCKET, SO_REUSEADDR, &one, &len));
	errno = 0;
	expect("rfcntl", rfcntl(3, 3 /* F_GETFL */));
	errno = 0;
	expect("rshutdown", rshutdown(3, SHUT_RDWR));
	errno = 0;
	expect("rclose", rclose(3));

	if (strcmp(buf, "unchanged") != 0 || pfd.revents != 0 ||
	    len != sizeof(sin)) {
		printf("a failed call wrote through its arguments\n");
		failures++;
	}
	if (failures)
		return 1;
	printf("OK\n");
	return 0;
}
