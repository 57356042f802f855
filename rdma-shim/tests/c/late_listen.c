/*
 * LD_PRELOAD'ed into a perftest server: its second rdma_listen (the
 * test connection's, after the control connection's) starts 1.5 s late,
 * so a client that connects at once is refused (REJECTED, -111) the way
 * a slow siw server refuses it, and runs perftest's retry path.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <rdma/rdma_cma.h>
#include <unistd.h>

int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	static int calls;
	int (*next)(struct rdma_cm_id *, int);

	next = (int (*)(struct rdma_cm_id *, int))dlsym(RTLD_NEXT, "rdma_listen");
	if (!next)
		return -1;
	if (++calls == 2)
		usleep(1500 * 1000);
	return next(id, backlog);
}
