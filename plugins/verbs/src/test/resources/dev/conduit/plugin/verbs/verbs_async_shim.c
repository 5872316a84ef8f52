/* A stand-in libibverbs for AsyncEventBindingTest, compiled against the installed
 * <infiniband/verbs.h>: it exports every function FfmVerbs binds, each doing the least a test of
 * the asynchronous events or of the closes needs, and reads events as rdma-core's
 * ibv_get_async_event does (a struct ib_uverbs_async_event_desc read from the context's async_fd,
 * the element set by the event's type), from a pipe the test writes with shim_raise. Every close
 * (ibv_close_device, ibv_dealloc_pd, ibv_dereg_mr, ibv_destroy_*) is counted and returns the errno
 * shim_fail_closes set, destroying nothing, while it is not 0. While shim_hold_calls is set, a
 * call of the data path (poll_cq, post_send, post_recv, ibv_get_cq_event) or one that creates in a
 * protection domain (ibv_reg_mr, ibv_create_qp) stays inside until it is cleared, and a destroy of its object meanwhile is counted (shim_destroyed_under_a_call): on
 * a library that frees the object there, the call would go on in freed memory. It is not
 * libibverbs: it checks FfmVerbs' marshalling of struct ibv_async_event, the descriptor's
 * O_NONBLOCK, the acknowledgement and what a failed or concurrent close leaves, not a provider or
 * the kernel. While shim_fail_registrations or shim_fail_protection_domains is set, ibv_reg_mr or
 * ibv_alloc_pd fails with that errno, as libibverbs does: NULL, errno set. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#undef ibv_get_device_list
#undef ibv_query_port
#undef ibv_reg_mr

struct kernel_event { uint64_t element; uint32_t event_type; uint32_t reserved; };

static struct ibv_device device;
static struct ibv_device *devices[2] = {&device, NULL};
static struct ibv_context context;
static struct ibv_pd pd;
static struct ibv_cq cq;
static struct ibv_qp qp;
static struct ibv_mr mr;
static struct ibv_comp_channel channel;
static int channel_write_fd = -1;
static int fail_closes;
static int closes;
static int raise_fd = -1;
static int reported;
static int acknowledged;
static struct ibv_async_event last_acknowledged;
static int hold_calls;
static int calls_in_flight;
static int destroyed_under_a_call;
static int fail_registrations;
static int fail_protection_domains;

/* A data-path call: held inside while shim_hold_calls is set. */
static void data_path_call(void) {
    __atomic_add_fetch(&calls_in_flight, 1, __ATOMIC_SEQ_CST);
    while (__atomic_load_n(&hold_calls, __ATOMIC_SEQ_CST)) usleep(100);
    __atomic_sub_fetch(&calls_in_flight, 1, __ATOMIC_SEQ_CST);
}

/* A destroy that goes ahead: counted when a data-path call is inside meanwhile. */
static void destroying(void) {
    if (__atomic_load_n(&calls_in_flight, __ATOMIC_SEQ_CST)) __atomic_add_fetch(&destroyed_under_a_call, 1, __ATOMIC_SEQ_CST);
}

static int no_poll(struct ibv_cq *q, int n, struct ibv_wc *wc) { data_path_call(); return 0; }
static int no_notify(struct ibv_cq *q, int solicited) { return 0; }
static int no_post_send(struct ibv_qp *q, struct ibv_send_wr *wr, struct ibv_send_wr **bad) { data_path_call(); return 0; }
static int no_post_recv(struct ibv_qp *q, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad) { data_path_call(); return 0; }

struct ibv_device **ibv_get_device_list(int *num_devices) { *num_devices = 1; return devices; }
void ibv_free_device_list(struct ibv_device **list) { }
const char *ibv_get_device_name(struct ibv_device *d) { return "shim0"; }

struct ibv_context *ibv_open_device(struct ibv_device *d) {
    int fds[2];
    if (pipe(fds) != 0) return NULL;
    memset(&context, 0, sizeof context);
    context.device = d;
    context.async_fd = fds[0];
    context.ops.poll_cq = no_poll;
    context.ops.req_notify_cq = no_notify;
    context.ops.post_send = no_post_send;
    context.ops.post_recv = no_post_recv;
    raise_fd = fds[1];
    return &context;
}

/* Counts a close and returns the errno it fails with, 0 when it is to go ahead. */
static int close_called(void) { closes++; return fail_closes; }

int ibv_close_device(struct ibv_context *c) { if (close_called()) return fail_closes; close(c->async_fd); close(raise_fd); raise_fd = -1; return 0; }
int ibv_query_device(struct ibv_context *c, struct ibv_device_attr *attr) { return 0; }
int ibv_query_port(struct ibv_context *c, uint8_t port, struct _compat_ibv_port_attr *attr) { return 0; }
int ibv_query_gid(struct ibv_context *c, uint8_t port, int index, union ibv_gid *gid) { return 0; }
struct ibv_pd *ibv_alloc_pd(struct ibv_context *c) {
    if (fail_protection_domains) { errno = fail_protection_domains; return NULL; }
    pd.context = c;
    return &pd;
}
int ibv_dealloc_pd(struct ibv_pd *p) { if (close_called()) return fail_closes; destroying(); return 0; }
struct ibv_mr *ibv_reg_mr(struct ibv_pd *p, void *addr, size_t length, int access) {
    data_path_call();
    if (fail_registrations) { errno = fail_registrations; return NULL; }
    mr.context = p->context;
    mr.pd = p;
    mr.addr = addr;
    mr.length = length;
    mr.lkey = 0x11;
    mr.rkey = 0x22;
    return &mr;
}
int ibv_dereg_mr(struct ibv_mr *m) { return close_called(); }
struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *c) {
    int fds[2];
    if (pipe(fds) != 0) return NULL;
    channel.context = c;
    channel.fd = fds[0];
    channel_write_fd = fds[1];
    return &channel;
}
int ibv_destroy_comp_channel(struct ibv_comp_channel *ch) {
    if (close_called()) return fail_closes;
    destroying();
    close(ch->fd);
    close(channel_write_fd);
    return 0;
}
struct ibv_cq *ibv_create_cq(struct ibv_context *c, int cqe, void *cq_context, struct ibv_comp_channel *channel, int vector) {
    cq.context = c;
    return &cq;
}
int ibv_destroy_cq(struct ibv_cq *q) { if (close_called()) return fail_closes; destroying(); return 0; }
int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **q, void **cq_context) { data_path_call(); errno = EAGAIN; return -1; }
void ibv_ack_cq_events(struct ibv_cq *q, unsigned int nevents) { }
struct ibv_qp *ibv_create_qp(struct ibv_pd *p, struct ibv_qp_init_attr *attr) {
    data_path_call();
    qp.context = p->context;
    qp.qp_num = 0x42;
    return &qp;
}
int ibv_modify_qp(struct ibv_qp *q, struct ibv_qp_attr *attr, int mask) { return 0; }
int ibv_destroy_qp(struct ibv_qp *q) {
    if (close_called()) return fail_closes;
    if (reported != acknowledged) return EBUSY;
    destroying();
    return 0;
}

int ibv_get_async_event(struct ibv_context *c, struct ibv_async_event *event) {
    struct kernel_event ev;
    if (read(c->async_fd, &ev, sizeof ev) != sizeof ev) return -1;
    event->event_type = ev.event_type;
    switch (event->event_type) {
    case IBV_EVENT_CQ_ERR:
        event->element.cq = (void *) (uintptr_t) ev.element;
        break;
    case IBV_EVENT_QP_FATAL: case IBV_EVENT_QP_REQ_ERR: case IBV_EVENT_QP_ACCESS_ERR: case IBV_EVENT_COMM_EST:
    case IBV_EVENT_SQ_DRAINED: case IBV_EVENT_PATH_MIG: case IBV_EVENT_PATH_MIG_ERR: case IBV_EVENT_QP_LAST_WQE_REACHED:
        event->element.qp = (void *) (uintptr_t) ev.element;
        break;
    default:
        event->element.port_num = (int) ev.element;
        break;
    }
    reported++;
    return 0;
}

void ibv_ack_async_event(struct ibv_async_event *event) {
    acknowledged++;
    last_acknowledged = *event;
}

/* What the test calls. */
void shim_raise(uint64_t element, uint32_t type) {
    struct kernel_event ev = {element, type, 0};
    if (write(raise_fd, &ev, sizeof ev) != sizeof ev) _exit(99);
}
int shim_async_fd_flags(void) { return fcntl(context.async_fd, F_GETFL); }
int shim_acknowledged(void) { return acknowledged; }
int shim_last_acknowledged_type(void) { return last_acknowledged.event_type; }
void *shim_last_acknowledged_element(void) { return last_acknowledged.element.qp; }
void *shim_qp(void) { return &qp; }
void shim_fail_closes(int errno_code) { fail_closes = errno_code; }
void shim_fail_registrations(int errno_code) { fail_registrations = errno_code; }
void shim_fail_protection_domains(int errno_code) { fail_protection_domains = errno_code; }
int shim_closes(void) { return closes; }
void shim_hold_calls(int hold) { __atomic_store_n(&hold_calls, hold, __ATOMIC_SEQ_CST); }
int shim_calls_in_flight(void) { return __atomic_load_n(&calls_in_flight, __ATOMIC_SEQ_CST); }
int shim_destroyed_under_a_call(void) { return __atomic_load_n(&destroyed_under_a_call, __ATOMIC_SEQ_CST); }
void *shim_cq(void) { return &cq; }
