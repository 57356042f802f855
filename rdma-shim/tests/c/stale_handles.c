/*
 * rdma_cm calls on an id or event channel the program has destroyed
 * fail with -1 and EINVAL instead of touching freed memory (perftest
 * 4.5's client makes such calls when it retries a refused connection).
 * Prints OK, or what went wrong and exits 1.
 */
#include <errno.h>
#include <netinet/in.h>
#include <rdma/rdma_cma.h>
#include <stdio.h>
#include <string.h>

static int failures;

static void expect_einval(const char *what, int ret)
{
	int err = errno;

	if (ret != -1 || err != EINVAL) {
		printf("%s: returned %d, errno %d (%s); want -1, EINVAL\n",
		       what, ret, err, strerror(err));
		failures++;
	}
}

int main(void)
{
	struct rdma_event_channel *ch, *gone;
	struct rdma_cm_id *id, *stale;
	struct rdma_cm_event *ev;
	struct sockaddr_in dst;

	memset(&dst, 0, sizeof(dst));
	dst.sin_family = AF_INET;
	dst.sin_port = htons(1);
	dst.sin_addr.s_addr = htonl(INADDR_LOOPBACK);

	ch = rdma_create_event_channel();
	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP)) {
		printf("setup failed: %s\n", strerror(errno));
		return 1;
	}
	stale = id;
	if (rdma_destroy_id(id)) {
		printf("rdma_destroy_id: %s\n", strerror(errno));
		return 1;
	}
	expect_einval("rdma_resolve_addr on a destroyed id",
		      rdma_resolve_addr(stale, NULL, (struct sockaddr *)&dst, 2000));
	expect_einval("rdma_bind_addr on a destroyed id",
		      rdma_bind_addr(stale, (struct sockaddr *)&dst));
	expect_einval("rdma_listen on a destroyed id", rdma_listen(stale, 1));
	expect_einval("rdma_connect on a destroyed id", rdma_connect(stale, NULL));
	expect_einval("rdma_destroy_id twice", rdma_destroy_id(stale));

	gone = ch;
	rdma_destroy_event_channel(ch);
	/* A second destroy is ignored (the call returns nothing). */
	rdma_destroy_event_channel(gone);
	expect_einval("rdma_create_id on a destroyed channel",
		      rdma_create_id(gone, &id, NULL, RDMA_PS_TCP));
	expect_einval("rdma_get_cm_event on a destroyed channel",
		      rdma_get_cm_event(gone, &ev));

	if (failures)
		return 1;
	printf("OK\n");
	return 0;
}
