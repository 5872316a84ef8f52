/* A stand-in provider for OpsTableTest, compiled against the installed <infiniband/verbs.h>: a
 * context whose ops table points at the functions below, which record what the work requests
 * they are given say, read the way C code reads them, and fill completions the same way. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <infiniband/verbs.h>

static struct ibv_context context;
static struct ibv_qp qp;
static struct ibv_cq cq;
static char record[1024];
static int poll_failure;
static int poll_failure_errno;
static int post_failure;
static int post_failure_errno;

/* Once after shim_fail_post, a post or notify call returns that code with errno left as an earlier call set it. */
static int failed_post(void) {
    int rc = post_failure;
    post_failure = 0;
    errno = post_failure_errno;
    return rc;
}

static int shim_post_send(struct ibv_qp *q, struct ibv_send_wr *wr, struct ibv_send_wr **bad) {
    if (post_failure != 0) {
        *bad = wr;
        return failed_post();
    }
    snprintf(record, sizeof record,
             "send qp=%u id=%llu opcode=%d flags=%d num_sge=%d next=%d addr=%llu length=%u lkey=%u "
             "rdma.remote_addr=%llu rdma.rkey=%u atomic.compare_add=%lld atomic.swap=%lld atomic.rkey=%u",
             q->qp_num, (unsigned long long) wr->wr_id, wr->opcode, wr->send_flags, wr->num_sge, wr->next != NULL,
             (unsigned long long) wr->sg_list[0].addr, wr->sg_list[0].length, wr->sg_list[0].lkey,
             (unsigned long long) wr->wr.rdma.remote_addr, wr->wr.rdma.rkey, (long long) wr->wr.atomic.compare_add,
             (long long) wr->wr.atomic.swap, wr->wr.atomic.rkey);
    return 0;
}

static int shim_post_recv(struct ibv_qp *q, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad) {
    if (post_failure != 0) {
        *bad = wr;
        return failed_post();
    }
    snprintf(record, sizeof record, "recv qp=%u id=%llu num_sge=%d next=%d addr=%llu length=%u lkey=%u",
             q->qp_num, (unsigned long long) wr->wr_id, wr->num_sge, wr->next != NULL,
             (unsigned long long) wr->sg_list[0].addr, wr->sg_list[0].length, wr->sg_list[0].lkey);
    return 0;
}

/* Two completions per call, whatever is asked (at most num_entries); or, once after shim_fail_poll, a
 * provider's negative code with errno left as an earlier call set it (providers set none). */
static int shim_poll_cq(struct ibv_cq *c, int num_entries, struct ibv_wc *wc) {
    if (poll_failure != 0) {
        int rc = poll_failure;
        poll_failure = 0;
        errno = poll_failure_errno;
        return rc;
    }
    int n = num_entries < 2 ? num_entries : 2;
    for (int i = 0; i < n; i++) {
        memset(&wc[i], 0xAB, sizeof wc[i]);
        wc[i].wr_id = 1000 + i;
        wc[i].status = i == 0 ? IBV_WC_SUCCESS : IBV_WC_RETRY_EXC_ERR;
        wc[i].opcode = i == 0 ? IBV_WC_RECV : IBV_WC_RDMA_WRITE;
        wc[i].vendor_err = 0x51 + i;
        wc[i].byte_len = 77 + i;
        wc[i].qp_num = 0x4321;
    }
    snprintf(record, sizeof record, "poll cqe=%d num_entries=%d", c->cqe, num_entries);
    return n;
}

static int shim_req_notify_cq(struct ibv_cq *c, int solicited_only) {
    if (post_failure != 0) {
        return failed_post();
    }
    snprintf(record, sizeof record, "notify cqe=%d solicited_only=%d", c->cqe, solicited_only);
    return 0;
}

struct ibv_context *shim_context(void) {
    memset(&context, 0, sizeof context);
    context.ops.post_send = shim_post_send;
    context.ops.post_recv = shim_post_recv;
    context.ops.poll_cq = shim_poll_cq;
    context.ops.req_notify_cq = shim_req_notify_cq;
    qp.context = &context;
    qp.qp_num = 0x1234;
    cq.context = &context;
    cq.cqe = 99;
    return &context;
}

struct ibv_qp *shim_qp(void) {
    return &qp;
}

struct ibv_cq *shim_cq(void) {
    return &cq;
}

void shim_fail_poll(int rc, int stale_errno) {
    poll_failure = rc;
    poll_failure_errno = stale_errno;
}

void shim_fail_post(int rc, int stale_errno) {
    post_failure = rc;
    post_failure_errno = stale_errno;
}

const char *shim_record(void) {
    return record;
}
