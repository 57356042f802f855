/*
 * A Write, a Read and a Send through libibverbs/librdmacm, checked byte
 * for byte, with both ends in one process on loopback. Built by the test
 * with the system compiler against the system headers; run over the shim.
 * Usage: write_read_send PORT [srq|rfc7306]: with "srq", the server's queue
 * pair receives from a shared receive queue; with "rfc7306" (run with
 * IWARP_RFC7306=1), a Write with Immediate Data and two atomics follow.
 * Exit 0 and "OK" on success.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <rdma/rdma_cma.h>

#define LEN 65536
#define CHECK(c, ...) do { if (!(c)) { fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
	fprintf(stderr, __VA_ARGS__); fprintf(stderr, " (errno %d)\n", errno); exit(1); } } while (0)

static struct rdma_event_channel *ch;

static struct rdma_cm_event *expect(enum rdma_cm_event_type want)
{
	struct rdma_cm_event *e;
	CHECK(rdma_get_cm_event(ch, &e) == 0, "rdma_get_cm_event");
	CHECK(e->event == want, "event %s, wanted %s", rdma_event_str(e->event), rdma_event_str(want));
	return e;
}

static struct ibv_wc wait_wc(struct ibv_cq *cq)
{
	struct ibv_wc wc;
	int n, spins = 0;
	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0)
		CHECK(++spins < 100000000, "no completion");
	CHECK(n == 1, "ibv_poll_cq %d", n);
	CHECK(wc.status == IBV_WC_SUCCESS, "status %s", ibv_wc_status_str(wc.status));
	return wc;
}

int main(int argc, char **argv)
{
	struct rdma_cm_id *listen_id, *cid, *sid;
	struct rdma_cm_event *e;
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct ibv_qp_init_attr qa = { .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 } };
	struct rdma_conn_param cp = { .responder_resources = 1, .initiator_depth = 1,
		.private_data = "hello", .private_data_len = 6 };
	unsigned char *csrc = malloc(LEN), *cdst = malloc(LEN), *sbuf = malloc(LEN), *rbuf = malloc(LEN);
	int i;

	CHECK(argc == 2 || argc == 3, "usage: %s PORT [srq]", argv[0]);
	int use_srq = argc == 3 && !strcmp(argv[2], "srq");
	int use_7306 = argc == 3 && !strcmp(argv[2], "rfc7306");
	struct ibv_srq *srq = NULL;
	a.sin_port = htons(atoi(argv[1]));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	for (i = 0; i < LEN; i++) {
		csrc[i] = (unsigned char)(i * 7 + 1);
		sbuf[i] = (unsigned char)(i * 13 + 5);
	}
	memset(cdst, 0, LEN);
	memset(rbuf, 0, LEN);

	CHECK((ch = rdma_create_event_channel()) != NULL, "rdma_create_event_channel");
	CHECK(rdma_create_id(ch, &listen_id, NULL, RDMA_PS_TCP) == 0, "rdma_create_id");
	CHECK(rdma_bind_addr(listen_id, (struct sockaddr *)&a) == 0, "rdma_bind_addr");
	CHECK(rdma_listen(listen_id, 4) == 0, "rdma_listen");
	CHECK(rdma_create_id(ch, &cid, NULL, RDMA_PS_TCP) == 0, "rdma_create_id");
	CHECK(rdma_resolve_addr(cid, NULL, (struct sockaddr *)&a, 2000) == 0, "rdma_resolve_addr");
	rdma_ack_cm_event(expect(RDMA_CM_EVENT_ADDR_RESOLVED));
	CHECK(rdma_resolve_route(cid, 2000) == 0, "rdma_resolve_route");
	rdma_ack_cm_event(expect(RDMA_CM_EVENT_ROUTE_RESOLVED));

	/* Client: a completion channel, to check events and poll(2). */
	struct ibv_context *ctx = cid->verbs;
	CHECK(ctx && ctx->device->transport_type == IBV_TRANSPORT_IWARP, "an iWARP context");
	struct ibv_port_attr port;
	CHECK(ibv_query_port(ctx, 1, &port) == 0 && port.state == IBV_PORT_ACTIVE, "ibv_query_port");
	struct ibv_pd *cpd = ibv_alloc_pd(ctx);
	struct ibv_comp_channel *cc = ibv_create_comp_channel(ctx);
	struct ibv_cq *ccq = ibv_create_cq(ctx, 16, (void *)0x1234, cc, 0);
	CHECK(cpd && cc && ccq, "client pd/channel/cq");
	qa.send_cq = qa.recv_cq = ccq;
	CHECK(rdma_create_qp(cid, cpd, &qa) == 0, "rdma_create_qp (client)");
	struct ibv_mr *csrc_mr = ibv_reg_mr(cpd, csrc, LEN, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	struct ibv_mr *cdst_mr = ibv_reg_mr(cpd, cdst, LEN, IBV_ACCESS_LOCAL_WRITE);
	CHECK(csrc_mr && cdst_mr, "client ibv_reg_mr");
	CHECK(ibv_reg_mr(cpd, csrc, LEN, IBV_ACCESS_REMOTE_WRITE) == NULL && errno == EINVAL,
	      "remote write without local write is refused");
	CHECK(rdma_connect(cid, &cp) == 0, "rdma_connect");

	e = expect(RDMA_CM_EVENT_CONNECT_REQUEST);
	sid = e->id;
	CHECK(e->listen_id == listen_id, "listen_id");
	CHECK(e->param.conn.private_data_len >= 6 && !memcmp(e->param.conn.private_data, "hello", 6),
	      "private data");
	rdma_ack_cm_event(e);
	struct ibv_pd *spd = ibv_alloc_pd(sid->verbs);
	struct ibv_cq *scq = ibv_create_cq(sid->verbs, 16, NULL, NULL, 0);
	CHECK(spd && scq, "server pd/cq");
	qa.send_cq = qa.recv_cq = scq;
	if (use_srq) {
		struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 1 } };
		struct ibv_srq_attr got;
		CHECK((srq = ibv_create_srq(spd, &sa)) != NULL, "ibv_create_srq");
		CHECK(ibv_query_srq(srq, &got) == 0 && got.max_wr == 16, "ibv_query_srq");
		qa.srq = srq;
	}
	CHECK(rdma_create_qp(sid, spd, &qa) == 0, "rdma_create_qp (server)");
	qa.srq = NULL;
	struct ibv_mr *sbuf_mr = ibv_reg_mr(spd, sbuf, LEN,
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	struct ibv_mr *rbuf_mr = ibv_reg_mr(spd, rbuf, LEN, IBV_ACCESS_LOCAL_WRITE);
	CHECK(sbuf_mr && rbuf_mr, "server ibv_reg_mr");
	struct ibv_sge rsge = { .addr = (uintptr_t)rbuf, .length = LEN, .lkey = rbuf_mr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 77, .sg_list = &rsge, .num_sge = 1 }, *rbad;
	if (srq) {
		CHECK(ibv_post_srq_recv(srq, &rwr, &rbad) == 0, "ibv_post_srq_recv");
		CHECK(ibv_destroy_srq(srq) == EBUSY, "a shared receive queue in use is not destroyed");
	} else {
		CHECK(ibv_post_recv(sid->qp, &rwr, &rbad) == 0, "ibv_post_recv");
	}
	CHECK(rdma_accept(sid, NULL) == 0, "rdma_accept");
	for (i = 0; i < 2; i++)
		rdma_ack_cm_event(expect(RDMA_CM_EVENT_ESTABLISHED));

	/* Write the client's source into the server's buffer, first half. */
	struct ibv_sge sge = { .addr = (uintptr_t)csrc, .length = LEN / 2, .lkey = csrc_mr->lkey };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED }, *bad;
	wr.wr.rdma.remote_addr = (uintptr_t)sbuf;
	wr.wr.rdma.rkey = sbuf_mr->rkey;
	CHECK(ibv_req_notify_cq(ccq, 0) == 0, "ibv_req_notify_cq");
	CHECK(ibv_post_send(cid->qp, &wr, &bad) == 0, "post Write");
	struct pollfd pfd = { .fd = cc->fd, .events = POLLIN };
	CHECK(poll(&pfd, 1, 20000) == 1, "the completion channel became readable");
	struct ibv_cq *ev_cq;
	void *ev_ctx;
	CHECK(ibv_get_cq_event(cc, &ev_cq, &ev_ctx) == 0, "ibv_get_cq_event");
	CHECK(ev_cq == ccq && ev_ctx == (void *)0x1234, "the event names the queue and its context");
	ibv_ack_cq_events(ccq, 1);
	struct ibv_wc wc = wait_wc(ccq);
	CHECK(wc.wr_id == 1 && wc.opcode == IBV_WC_RDMA_WRITE, "Write completion");

	/* Read the server's second half into the client's sink. */
	sge = (struct ibv_sge){ .addr = (uintptr_t)cdst, .length = LEN / 2, .lkey = cdst_mr->lkey };
	wr.wr_id = 2;
	wr.opcode = IBV_WR_RDMA_READ;
	wr.wr.rdma.remote_addr = (uintptr_t)sbuf + LEN / 2;
	CHECK(ibv_post_send(cid->qp, &wr, &bad) == 0, "post Read");
	wc = wait_wc(ccq);
	CHECK(wc.wr_id == 2 && wc.opcode == IBV_WC_RDMA_READ && wc.byte_len == LEN / 2, "Read completion");
	CHECK(!memcmp(cdst, sbuf + LEN / 2, LEN / 2), "Read bytes");

	/* Send 1000 bytes; once it arrives, the Write before it is placed. */
	sge = (struct ibv_sge){ .addr = (uintptr_t)csrc + 5, .length = 1000, .lkey = csrc_mr->lkey };
	wr.wr_id = 3;
	wr.opcode = IBV_WR_SEND;
	CHECK(ibv_post_send(cid->qp, &wr, &bad) == 0, "post Send");
	wc = wait_wc(scq);
	CHECK(wc.wr_id == 77 && wc.opcode == IBV_WC_RECV && wc.byte_len == 1000, "Recv completion");
	CHECK(!memcmp(rbuf, csrc + 5, 1000), "Send bytes");
	CHECK(!memcmp(sbuf, csrc, LEN / 2), "Write bytes");
	wc = wait_wc(ccq);
	CHECK(wc.wr_id == 3 && wc.opcode == IBV_WC_SEND, "Send completion");

	if (use_7306) {
		struct ibv_device_attr da;
		CHECK(ibv_query_device(ctx, &da) == 0 && da.atomic_cap == IBV_ATOMIC_HCA, "atomics reported");
		/* Write with Immediate Data: the bytes, then the value at the peer. */
		rwr.wr_id = 78;
		CHECK(ibv_post_recv(sid->qp, &rwr, &rbad) == 0, "ibv_post_recv for the immediate");
		sge = (struct ibv_sge){ .addr = (uintptr_t)csrc, .length = 512, .lkey = csrc_mr->lkey };
		wr.wr_id = 5;
		wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		wr.imm_data = htonl(0x12345678);
		wr.wr.rdma.remote_addr = (uintptr_t)sbuf + 1000;
		wr.wr.rdma.rkey = sbuf_mr->rkey;
		CHECK(ibv_post_send(cid->qp, &wr, &bad) == 0, "post Write with Immediate");
		wc = wait_wc(scq);
		CHECK(wc.wr_id == 78 && wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM && (wc.wc_flags & IBV_WC_WITH_IMM) &&
		      ntohl(wc.imm_data) == 0x12345678, "immediate data received");
		CHECK(!memcmp(sbuf + 1000, csrc, 512), "Write with Immediate bytes");
		wc = wait_wc(ccq);
		CHECK(wc.wr_id == 5 && wc.opcode == IBV_WC_RDMA_WRITE, "Write with Immediate completion");
		/* Fetch and Add, then Compare and Swap, on the server's word. */
		uint64_t *word = aligned_alloc(8, 8), *old = aligned_alloc(8, 8);
		*word = 40;
		struct ibv_mr *wmr = ibv_reg_mr(spd, word, 8, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
		struct ibv_mr *omr = ibv_reg_mr(cpd, old, 8, IBV_ACCESS_LOCAL_WRITE);
		CHECK(wmr && omr, "atomic regions");
		sge = (struct ibv_sge){ .addr = (uintptr_t)old, .length = 8, .lkey = omr->lkey };
		wr.wr_id = 6;
		wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		wr.wr.atomic.remote_addr = (uintptr_t)word;
		wr.wr.atomic.rkey = wmr->rkey;
		wr.wr.atomic.compare_add = 2;
		CHECK(ibv_post_send(cid->qp, &wr, &bad) == 0, "post Fetch and Add");
		wc = wait_wc(ccq);
		CHECK(wc.wr_id == 6 && wc.opcode == IBV_WC_FETCH_ADD && *old == 40 && *word == 42, "Fetch and Add");
		wr.wr_id = 7;
		wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
		wr.wr.atomic.compare_add = 42;
		wr.wr.atomic.swap = 7;
		CHECK(ibv_post_send(cid->qp, &wr, &bad) == 0, "post Compare and Swap");
		wc = wait_wc(ccq);
		CHECK(wc.wr_id == 7 && wc.opcode == IBV_WC_COMP_SWAP && *old == 42 && *word == 7, "Compare and Swap");
		ibv_dereg_mr(wmr);
		ibv_dereg_mr(omr);
		free(word);
		free(old);
		sge = (struct ibv_sge){ .addr = (uintptr_t)csrc + 5, .length = 1000, .lkey = csrc_mr->lkey };
		wr.opcode = IBV_WR_SEND;
	}

	/* Six Writes, their completions taken four at a time: in order, no
	 * poll returning more than asked, then an empty queue. */
	{
		struct ibv_wc wcs[4];
		uint64_t next = 10;
		int spins = 0, n;
		sge = (struct ibv_sge){ .addr = (uintptr_t)csrc, .length = 100, .lkey = csrc_mr->lkey };
		wr.opcode = IBV_WR_RDMA_WRITE;
		wr.wr.rdma.remote_addr = (uintptr_t)sbuf;
		wr.wr.rdma.rkey = sbuf_mr->rkey;
		for (wr.wr_id = 10; wr.wr_id < 16; wr.wr_id++)
			CHECK(ibv_post_send(cid->qp, &wr, &bad) == 0, "post Write %d", (int)wr.wr_id);
		usleep(100000);
		while (next < 16) {
			n = ibv_poll_cq(ccq, 4, wcs);
			CHECK(n >= 0 && n <= 4, "ibv_poll_cq(4) returned %d", n);
			for (i = 0; i < n; i++, next++)
				CHECK(wcs[i].wr_id == next && wcs[i].status == IBV_WC_SUCCESS &&
				      wcs[i].opcode == IBV_WC_RDMA_WRITE, "batch completion %d: wr_id %d",
				      i, (int)wcs[i].wr_id);
			CHECK(n > 0 || ++spins < 100000000, "no completion");
		}
		CHECK(ibv_poll_cq(ccq, 4, wcs) == 0, "the queue is empty");
		/* What an empty poll costs (a figure for the log, not a check). */
		struct timespec t0, t1;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (i = 0; i < 1000000; i++)
			CHECK(ibv_poll_cq(ccq, 16, wcs) == 0, "an empty poll");
		clock_gettime(CLOCK_MONOTONIC, &t1);
		fprintf(stderr, "empty ibv_poll_cq(16): %.1f ns per call\n",
			((t1.tv_sec - t0.tv_sec) * 1e9 + (t1.tv_nsec - t0.tv_nsec)) / 1e6);
		sge = (struct ibv_sge){ .addr = (uintptr_t)csrc + 5, .length = 1000, .lkey = csrc_mr->lkey };
		wr.opcode = IBV_WR_SEND;
	}

	/* Too many scatter/gather entries: refused, bad_wr names it. */
	struct ibv_sge two[2] = { sge, sge };
	struct ibv_send_wr ok = wr, over = wr;
	ok.next = &over;
	over.sg_list = two;
	over.num_sge = 2;
	ok.wr_id = 4;
	CHECK(ibv_post_send(cid->qp, &ok, &bad) != 0 && bad == &over, "bad_wr names the refused request");

	CHECK(rdma_disconnect(cid) == 0, "rdma_disconnect");
	for (i = 0; i < 2; i++)
		rdma_ack_cm_event(expect(RDMA_CM_EVENT_DISCONNECTED));
	rdma_destroy_qp(cid);
	rdma_destroy_qp(sid);
	if (srq)
		CHECK(ibv_destroy_srq(srq) == 0, "ibv_destroy_srq");
	ibv_dereg_mr(csrc_mr);
	ibv_dereg_mr(cdst_mr);
	ibv_dereg_mr(sbuf_mr);
	ibv_dereg_mr(rbuf_mr);
	ibv_destroy_cq(ccq);
	ibv_destroy_cq(scq);
	ibv_destroy_comp_channel(cc);
	ibv_dealloc_pd(cpd);
	ibv_dealloc_pd(spd);
	rdma_destroy_id(sid);
	rdma_destroy_id(cid);
	rdma_destroy_id(listen_id);
	rdma_destroy_event_channel(ch);
	free(csrc); free(cdst); free(sbuf); free(rbuf);
	puts("OK");
	return 0;
}
