package dev.conduit.plugin.verbs;

import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;
import java.lang.foreign.ValueLayout;
import java.util.List;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static java.lang.foreign.ValueLayout.JAVA_SHORT;

/**
 * The structs and constants of {@code <infiniband/verbs.h>} (rdma-core) that {@link FfmVerbs}
 * reads, as FFM layouts. Layout and field names are the C names: {@code VerbsAbiTest} compiles a C
 * program against the installed header and compares every {@code sizeof}, {@code offsetof} and
 * constant here with it.
 *
 * <p>{@code struct ibv_port_attr} is filled through the exported {@code ibv_query_port}, the
 * function the header's inline {@code ___ibv_query_port} falls back to: it writes the
 * {@code _compat_ibv_port_attr} prefix (everything before {@code port_cap_flags2}) into the
 * caller's full-size, zeroed struct. {@code port_cap_flags2} is therefore never read.
 *
 * <pre>
 * struct ibv_device_attr (232 bytes)      struct ibv_port_attr (52 bytes)
 *   0 fw_ver[64]                            0 state        12 gid_tbl_len   34 lid
 *  64 node_guid (big-endian)                4 max_mtu      32 pkey_tbl_len  45 phys_state
 * 144 max_qp_rd_atom                        8 active_mtu                    46 link_layer
 * 156 max_qp_init_rd_atom
 * 164 atomic_cap
 * 227 phys_port_cnt
 * </pre>
 */
final class VerbsAbi {

    private VerbsAbi() {
    }

    /** The length of {@code struct ibv_device}'s {@code name} array, NUL included. */
    static final int IBV_SYSFS_NAME_MAX = 64;

    // enum ibv_port_state
    static final int IBV_PORT_NOP = 0;
    static final int IBV_PORT_DOWN = 1;
    static final int IBV_PORT_INIT = 2;
    static final int IBV_PORT_ARMED = 3;
    static final int IBV_PORT_ACTIVE = 4;
    static final int IBV_PORT_ACTIVE_DEFER = 5;

    // link layers (anonymous enum)
    static final int IBV_LINK_LAYER_UNSPECIFIED = 0;
    static final int IBV_LINK_LAYER_INFINIBAND = 1;
    static final int IBV_LINK_LAYER_ETHERNET = 2;

    // enum ibv_atomic_cap
    static final int IBV_ATOMIC_NONE = 0;
    static final int IBV_ATOMIC_HCA = 1;
    static final int IBV_ATOMIC_GLOB = 2;

    // enum ibv_mtu
    static final int IBV_MTU_256 = 1;
    static final int IBV_MTU_512 = 2;
    static final int IBV_MTU_1024 = 3;
    static final int IBV_MTU_2048 = 4;
    static final int IBV_MTU_4096 = 5;

    /** {@code struct ibv_device_attr}, filled by {@code ibv_query_device}. */
    static final StructLayout IBV_DEVICE_ATTR = MemoryLayout.structLayout(
            MemoryLayout.sequenceLayout(64, JAVA_BYTE).withName("fw_ver"),
            JAVA_LONG.withName("node_guid"),
            JAVA_LONG.withName("sys_image_guid"),
            JAVA_LONG.withName("max_mr_size"),
            JAVA_LONG.withName("page_size_cap"),
            JAVA_INT.withName("vendor_id"),
            JAVA_INT.withName("vendor_part_id"),
            JAVA_INT.withName("hw_ver"),
            JAVA_INT.withName("max_qp"),
            JAVA_INT.withName("max_qp_wr"),
            JAVA_INT.withName("device_cap_flags"),
            JAVA_INT.withName("max_sge"),
            JAVA_INT.withName("max_sge_rd"),
            JAVA_INT.withName("max_cq"),
            JAVA_INT.withName("max_cqe"),
            JAVA_INT.withName("max_mr"),
            JAVA_INT.withName("max_pd"),
            JAVA_INT.withName("max_qp_rd_atom"),
            JAVA_INT.withName("max_ee_rd_atom"),
            JAVA_INT.withName("max_res_rd_atom"),
            JAVA_INT.withName("max_qp_init_rd_atom"),
            JAVA_INT.withName("max_ee_init_rd_atom"),
            JAVA_INT.withName("atomic_cap"),
            JAVA_INT.withName("max_ee"),
            JAVA_INT.withName("max_rdd"),
            JAVA_INT.withName("max_mw"),
            JAVA_INT.withName("max_raw_ipv6_qp"),
            JAVA_INT.withName("max_raw_ethy_qp"),
            JAVA_INT.withName("max_mcast_grp"),
            JAVA_INT.withName("max_mcast_qp_attach"),
            JAVA_INT.withName("max_total_mcast_qp_attach"),
            JAVA_INT.withName("max_ah"),
            JAVA_INT.withName("max_fmr"),
            JAVA_INT.withName("max_map_per_fmr"),
            JAVA_INT.withName("max_srq"),
            JAVA_INT.withName("max_srq_wr"),
            JAVA_INT.withName("max_srq_sge"),
            JAVA_SHORT.withName("max_pkeys"),
            JAVA_BYTE.withName("local_ca_ack_delay"),
            JAVA_BYTE.withName("phys_port_cnt"),
            MemoryLayout.paddingLayout(4)
    ).withName("ibv_device_attr");

    /** {@code struct ibv_port_attr}, filled by {@code ibv_query_port}. */
    static final StructLayout IBV_PORT_ATTR = MemoryLayout.structLayout(
            JAVA_INT.withName("state"),
            JAVA_INT.withName("max_mtu"),
            JAVA_INT.withName("active_mtu"),
            JAVA_INT.withName("gid_tbl_len"),
            JAVA_INT.withName("port_cap_flags"),
            JAVA_INT.withName("max_msg_sz"),
            JAVA_INT.withName("bad_pkey_cntr"),
            JAVA_INT.withName("qkey_viol_cntr"),
            JAVA_SHORT.withName("pkey_tbl_len"),
            JAVA_SHORT.withName("lid"),
            JAVA_SHORT.withName("sm_lid"),
            JAVA_BYTE.withName("lmc"),
            JAVA_BYTE.withName("max_vl_num"),
            JAVA_BYTE.withName("sm_sl"),
            JAVA_BYTE.withName("subnet_timeout"),
            JAVA_BYTE.withName("init_type_reply"),
            JAVA_BYTE.withName("active_width"),
            JAVA_BYTE.withName("active_speed"),
            JAVA_BYTE.withName("phys_state"),
            JAVA_BYTE.withName("link_layer"),
            JAVA_BYTE.withName("flags"),
            JAVA_SHORT.withName("port_cap_flags2"),
            MemoryLayout.paddingLayout(2)
    ).withName("ibv_port_attr");

    /** {@code union ibv_gid}: 16 bytes, read as {@code raw}. */
    static final StructLayout IBV_GID = MemoryLayout.structLayout(
            MemoryLayout.sequenceLayout(16, JAVA_BYTE).withName("raw")
    ).withName("ibv_gid");

    // enum ibv_qp_type, enum ibv_qp_state
    static final int IBV_QPT_RC = 2;
    static final int IBV_QPS_RESET = 0;
    static final int IBV_QPS_INIT = 1;
    static final int IBV_QPS_RTR = 2;
    static final int IBV_QPS_RTS = 3;
    static final int IBV_QPS_ERR = 6;

    // enum ibv_access_flags
    static final int IBV_ACCESS_LOCAL_WRITE = 1;
    static final int IBV_ACCESS_REMOTE_WRITE = 2;
    static final int IBV_ACCESS_REMOTE_READ = 4;
    static final int IBV_ACCESS_REMOTE_ATOMIC = 8;

    // enum ibv_qp_attr_mask
    static final int IBV_QP_STATE = 1;
    static final int IBV_QP_ACCESS_FLAGS = 8;
    static final int IBV_QP_PKEY_INDEX = 16;
    static final int IBV_QP_PORT = 32;
    static final int IBV_QP_AV = 128;
    static final int IBV_QP_PATH_MTU = 256;
    static final int IBV_QP_TIMEOUT = 512;
    static final int IBV_QP_RETRY_CNT = 1024;
    static final int IBV_QP_RNR_RETRY = 2048;
    static final int IBV_QP_RQ_PSN = 4096;
    static final int IBV_QP_MAX_QP_RD_ATOMIC = 8192;
    static final int IBV_QP_MIN_RNR_TIMER = 32768;
    static final int IBV_QP_SQ_PSN = 65536;
    static final int IBV_QP_MAX_DEST_RD_ATOMIC = 131072;
    static final int IBV_QP_DEST_QPN = 1048576;

    // enum ibv_wr_opcode, enum ibv_send_flags
    static final int IBV_WR_RDMA_WRITE = 0;
    static final int IBV_WR_SEND = 2;
    static final int IBV_WR_RDMA_READ = 4;
    static final int IBV_WR_ATOMIC_CMP_AND_SWP = 5;
    static final int IBV_WR_ATOMIC_FETCH_AND_ADD = 6;
    static final int IBV_SEND_SIGNALED = 2;

    // enum ibv_wc_status, enum ibv_wc_opcode
    static final int IBV_WC_SUCCESS = 0;
    static final int IBV_WC_LOC_LEN_ERR = 1;
    static final int IBV_WC_LOC_PROT_ERR = 4;
    static final int IBV_WC_WR_FLUSH_ERR = 5;
    static final int IBV_WC_REM_INV_REQ_ERR = 9;
    static final int IBV_WC_REM_ACCESS_ERR = 10;
    static final int IBV_WC_RETRY_EXC_ERR = 12;
    static final int IBV_WC_RNR_RETRY_EXC_ERR = 13;
    static final int IBV_WC_RECV = 128;

    // enum ibv_event_type (rdma-core's libibverbs/verbs.h; checked against the installed header by VerbsAbiTest)
    static final int IBV_EVENT_CQ_ERR = 0;
    static final int IBV_EVENT_QP_FATAL = 1;
    static final int IBV_EVENT_QP_REQ_ERR = 2;
    static final int IBV_EVENT_QP_ACCESS_ERR = 3;
    static final int IBV_EVENT_COMM_EST = 4;
    static final int IBV_EVENT_SQ_DRAINED = 5;
    static final int IBV_EVENT_PATH_MIG = 6;
    static final int IBV_EVENT_PATH_MIG_ERR = 7;
    static final int IBV_EVENT_DEVICE_FATAL = 8;
    static final int IBV_EVENT_PORT_ACTIVE = 9;
    static final int IBV_EVENT_PORT_ERR = 10;
    static final int IBV_EVENT_LID_CHANGE = 11;
    static final int IBV_EVENT_PKEY_CHANGE = 12;
    static final int IBV_EVENT_SM_CHANGE = 13;
    static final int IBV_EVENT_SRQ_ERR = 14;
    static final int IBV_EVENT_SRQ_LIMIT_REACHED = 15;
    static final int IBV_EVENT_QP_LAST_WQE_REACHED = 16;
    static final int IBV_EVENT_CLIENT_REREGISTER = 17;
    static final int IBV_EVENT_GID_CHANGE = 18;
    static final int IBV_EVENT_WQ_FATAL = 19;

    /**
     * A struct of which only some members are named: the others are padding, so {@code sizeof} and
     * the named offsets are exactly the C ones (and {@code VerbsAbiTest} checks both). Members are
     * given as (offset, named layout) in increasing offset order.
     */
    static StructLayout struct(String name, long size, Object... offsetsAndMembers) {
        List<MemoryLayout> members = new java.util.ArrayList<>();
        long at = 0;
        for (int i = 0; i < offsetsAndMembers.length; i += 2) {
            long offset = ((Number) offsetsAndMembers[i]).longValue();
            MemoryLayout member = (MemoryLayout) offsetsAndMembers[i + 1];
            if (offset > at) {
                members.add(MemoryLayout.paddingLayout(offset - at));
            }
            members.add(member);
            at = offset + member.byteSize();
        }
        if (size > at) {
            members.add(MemoryLayout.paddingLayout(size - at));
        }
        return MemoryLayout.structLayout(members.toArray(MemoryLayout[]::new)).withName(name);
    }

    private static final ValueLayout POINTER = ValueLayout.ADDRESS;

    /** {@code struct ibv_context_ops}: the provider's functions behind verbs.h's inline calls. */
    static final StructLayout IBV_CONTEXT_OPS = struct("ibv_context_ops", 256,
            88, POINTER.withName("poll_cq"), 96, POINTER.withName("req_notify_cq"),
            200, POINTER.withName("post_send"), 208, POINTER.withName("post_recv"));

    /** {@code struct ibv_context}: the open device; {@code ops} is read once, at open. */
    static final StructLayout IBV_CONTEXT = struct("ibv_context", 328,
            0, POINTER.withName("device"), 8, IBV_CONTEXT_OPS.withName("ops"), 264, JAVA_INT.withName("cmd_fd"),
            268, JAVA_INT.withName("async_fd"), 272, JAVA_INT.withName("num_comp_vectors"));

    static final StructLayout IBV_PD = struct("ibv_pd", 16, 0, POINTER.withName("context"), 8, JAVA_INT.withName("handle"));

    static final StructLayout IBV_MR = struct("ibv_mr", 48, 0, POINTER.withName("context"), 8, POINTER.withName("pd"),
            16, POINTER.withName("addr"), 24, JAVA_LONG.withName("length"), 32, JAVA_INT.withName("handle"),
            36, JAVA_INT.withName("lkey"), 40, JAVA_INT.withName("rkey"));

    static final StructLayout IBV_COMP_CHANNEL = struct("ibv_comp_channel", 16, 0, POINTER.withName("context"),
            8, JAVA_INT.withName("fd"), 12, JAVA_INT.withName("refcnt"));

    static final StructLayout IBV_CQ = struct("ibv_cq", 128, 0, POINTER.withName("context"), 8, POINTER.withName("channel"),
            16, POINTER.withName("cq_context"), 24, JAVA_INT.withName("handle"), 28, JAVA_INT.withName("cqe"));

    static final StructLayout IBV_QP = struct("ibv_qp", 160, 0, POINTER.withName("context"), 8, POINTER.withName("qp_context"),
            16, POINTER.withName("pd"), 24, POINTER.withName("send_cq"), 32, POINTER.withName("recv_cq"),
            40, POINTER.withName("srq"), 48, JAVA_INT.withName("handle"), 52, JAVA_INT.withName("qp_num"),
            56, JAVA_INT.withName("state"), 60, JAVA_INT.withName("qp_type"));

    static final StructLayout IBV_SGE = struct("ibv_sge", 16, 0, JAVA_LONG.withName("addr"), 8, JAVA_INT.withName("length"),
            12, JAVA_INT.withName("lkey"));

    /** The {@code wr} union of {@code struct ibv_send_wr}: its {@code rdma} and {@code atomic} members. */
    private static final MemoryLayout SEND_WR_UNION = MemoryLayout.unionLayout(
            struct("rdma", 16, 0, JAVA_LONG.withName("remote_addr"), 8, JAVA_INT.withName("rkey")).withName("rdma"),
            struct("atomic", 32, 0, JAVA_LONG.withName("remote_addr"), 8, JAVA_LONG.withName("compare_add"),
                    16, JAVA_LONG.withName("swap"), 24, JAVA_INT.withName("rkey")).withName("atomic")).withName("wr");

    static final StructLayout IBV_SEND_WR = struct("ibv_send_wr", 128, 0, JAVA_LONG.withName("wr_id"), 8, POINTER.withName("next"),
            16, POINTER.withName("sg_list"), 24, JAVA_INT.withName("num_sge"), 28, JAVA_INT.withName("opcode"),
            32, JAVA_INT.withName("send_flags"), 36, JAVA_INT.withName("imm_data"), 40, SEND_WR_UNION);

    static final StructLayout IBV_RECV_WR = struct("ibv_recv_wr", 32, 0, JAVA_LONG.withName("wr_id"), 8, POINTER.withName("next"),
            16, POINTER.withName("sg_list"), 24, JAVA_INT.withName("num_sge"));

    static final StructLayout IBV_WC = struct("ibv_wc", 48, 0, JAVA_LONG.withName("wr_id"), 8, JAVA_INT.withName("status"),
            12, JAVA_INT.withName("opcode"), 16, JAVA_INT.withName("vendor_err"), 20, JAVA_INT.withName("byte_len"),
            24, JAVA_INT.withName("imm_data"), 28, JAVA_INT.withName("qp_num"), 32, JAVA_INT.withName("src_qp"),
            36, JAVA_INT.withName("wc_flags"));

    static final StructLayout IBV_QP_CAP = struct("ibv_qp_cap", 20, 0, JAVA_INT.withName("max_send_wr"),
            4, JAVA_INT.withName("max_recv_wr"), 8, JAVA_INT.withName("max_send_sge"), 12, JAVA_INT.withName("max_recv_sge"),
            16, JAVA_INT.withName("max_inline_data"));

    static final StructLayout IBV_QP_INIT_ATTR = struct("ibv_qp_init_attr", 64, 0, POINTER.withName("qp_context"),
            8, POINTER.withName("send_cq"), 16, POINTER.withName("recv_cq"), 24, POINTER.withName("srq"),
            32, IBV_QP_CAP.withName("cap"), 52, JAVA_INT.withName("qp_type"), 56, JAVA_INT.withName("sq_sig_all"));

    static final StructLayout IBV_GLOBAL_ROUTE = struct("ibv_global_route", 24,
            0, MemoryLayout.sequenceLayout(16, JAVA_BYTE).withName("dgid"), 16, JAVA_INT.withName("flow_label"),
            20, JAVA_BYTE.withName("sgid_index"), 21, JAVA_BYTE.withName("hop_limit"), 22, JAVA_BYTE.withName("traffic_class"));

    static final StructLayout IBV_AH_ATTR = struct("ibv_ah_attr", 32, 0, IBV_GLOBAL_ROUTE.withName("grh"),
            24, JAVA_SHORT.withName("dlid"), 26, JAVA_BYTE.withName("sl"), 27, JAVA_BYTE.withName("src_path_bits"),
            28, JAVA_BYTE.withName("static_rate"), 29, JAVA_BYTE.withName("is_global"), 30, JAVA_BYTE.withName("port_num"));

    static final StructLayout IBV_QP_ATTR = struct("ibv_qp_attr", 144, 0, JAVA_INT.withName("qp_state"),
            8, JAVA_INT.withName("path_mtu"), 16, JAVA_INT.withName("qkey"), 20, JAVA_INT.withName("rq_psn"),
            24, JAVA_INT.withName("sq_psn"), 28, JAVA_INT.withName("dest_qp_num"), 32, JAVA_INT.withName("qp_access_flags"),
            36, IBV_QP_CAP.withName("cap"), 56, IBV_AH_ATTR.withName("ah_attr"), 120, JAVA_SHORT.withName("pkey_index"),
            126, JAVA_BYTE.withName("max_rd_atomic"), 127, JAVA_BYTE.withName("max_dest_rd_atomic"),
            128, JAVA_BYTE.withName("min_rnr_timer"), 129, JAVA_BYTE.withName("port_num"), 130, JAVA_BYTE.withName("timeout"),
            131, JAVA_BYTE.withName("retry_cnt"), 132, JAVA_BYTE.withName("rnr_retry"));

    /**
     * {@code struct ibv_async_event}, filled by {@code ibv_get_async_event}: the {@code element}
     * union says which queue pair, completion queue or port the event is about, by
     * {@code event_type} (the members for shared receive queues and work queues, which the plugin
     * never creates, are not named).
     */
    static final StructLayout IBV_ASYNC_EVENT = struct("ibv_async_event", 16,
            0, MemoryLayout.unionLayout(POINTER.withName("cq"), POINTER.withName("qp"), JAVA_INT.withName("port_num")).withName("element"),
            8, JAVA_INT.withName("event_type"));

    /** Every layout, for {@code VerbsAbiTest}. */
    static final List<StructLayout> ALL = List.of(IBV_DEVICE_ATTR, IBV_PORT_ATTR, IBV_GID, IBV_CONTEXT_OPS, IBV_CONTEXT, IBV_PD,
            IBV_MR, IBV_COMP_CHANNEL, IBV_CQ, IBV_QP, IBV_SGE, IBV_SEND_WR, IBV_RECV_WR, IBV_WC, IBV_QP_CAP, IBV_QP_INIT_ATTR,
            IBV_GLOBAL_ROUTE, IBV_AH_ATTR, IBV_QP_ATTR, IBV_ASYNC_EVENT);

    /** The offset of a (possibly nested, dot-separated) member: {@code "wr.atomic.rkey"}. */
    static long offsetOf(StructLayout layout, String path) {
        return layout.byteOffset(java.util.Arrays.stream(path.split("\\.")).map(MemoryLayout.PathElement::groupElement)
                .toArray(MemoryLayout.PathElement[]::new));
    }

    static long offset(StructLayout layout, String field) {
        return layout.byteOffset(groupElement(field));
    }

    // Offsets of the fields FfmVerbs reads.
    static final long DEVICE_FW_VER = offset(IBV_DEVICE_ATTR, "fw_ver");
    static final long DEVICE_NODE_GUID = offset(IBV_DEVICE_ATTR, "node_guid");
    static final long DEVICE_VENDOR_ID = offset(IBV_DEVICE_ATTR, "vendor_id");
    static final long DEVICE_VENDOR_PART_ID = offset(IBV_DEVICE_ATTR, "vendor_part_id");
    static final long DEVICE_MAX_QP = offset(IBV_DEVICE_ATTR, "max_qp");
    static final long DEVICE_MAX_CQE = offset(IBV_DEVICE_ATTR, "max_cqe");
    static final long DEVICE_MAX_MR_SIZE = offset(IBV_DEVICE_ATTR, "max_mr_size");
    static final long DEVICE_MAX_QP_RD_ATOM = offset(IBV_DEVICE_ATTR, "max_qp_rd_atom");
    static final long DEVICE_MAX_QP_INIT_RD_ATOM = offset(IBV_DEVICE_ATTR, "max_qp_init_rd_atom");
    static final long DEVICE_ATOMIC_CAP = offset(IBV_DEVICE_ATTR, "atomic_cap");
    static final long DEVICE_PHYS_PORT_CNT = offset(IBV_DEVICE_ATTR, "phys_port_cnt");
    static final long PORT_STATE = offset(IBV_PORT_ATTR, "state");
    static final long PORT_MAX_MTU = offset(IBV_PORT_ATTR, "max_mtu");
    static final long PORT_ACTIVE_MTU = offset(IBV_PORT_ATTR, "active_mtu");
    static final long PORT_GID_TBL_LEN = offset(IBV_PORT_ATTR, "gid_tbl_len");
    static final long PORT_MAX_MSG_SZ = offset(IBV_PORT_ATTR, "max_msg_sz");
    static final long PORT_LID = offset(IBV_PORT_ATTR, "lid");
    static final long PORT_PHYS_STATE = offset(IBV_PORT_ATTR, "phys_state");
    static final long PORT_LINK_LAYER = offset(IBV_PORT_ATTR, "link_layer");

    // Offsets of the fields FfmVerbs writes and reads on the data path.
    static final long CONTEXT_OPS = offsetOf(IBV_CONTEXT, "ops");
    static final long CONTEXT_ASYNC_FD = offsetOf(IBV_CONTEXT, "async_fd");
    static final long ASYNC_EVENT_CQ = offsetOf(IBV_ASYNC_EVENT, "element.cq");
    static final long ASYNC_EVENT_QP = offsetOf(IBV_ASYNC_EVENT, "element.qp");
    static final long ASYNC_EVENT_PORT_NUM = offsetOf(IBV_ASYNC_EVENT, "element.port_num");
    static final long ASYNC_EVENT_TYPE = offsetOf(IBV_ASYNC_EVENT, "event_type");
    static final long OPS_POLL_CQ = offsetOf(IBV_CONTEXT_OPS, "poll_cq");
    static final long OPS_REQ_NOTIFY_CQ = offsetOf(IBV_CONTEXT_OPS, "req_notify_cq");
    static final long OPS_POST_SEND = offsetOf(IBV_CONTEXT_OPS, "post_send");
    static final long OPS_POST_RECV = offsetOf(IBV_CONTEXT_OPS, "post_recv");
    static final long MR_ADDR = offsetOf(IBV_MR, "addr");
    static final long MR_LKEY = offsetOf(IBV_MR, "lkey");
    static final long MR_RKEY = offsetOf(IBV_MR, "rkey");
    static final long COMP_CHANNEL_FD = offsetOf(IBV_COMP_CHANNEL, "fd");
    static final long QP_QP_NUM = offsetOf(IBV_QP, "qp_num");
    static final long SGE_ADDR = offsetOf(IBV_SGE, "addr");
    static final long SGE_LENGTH = offsetOf(IBV_SGE, "length");
    static final long SGE_LKEY = offsetOf(IBV_SGE, "lkey");
    static final long SEND_WR_ID = offsetOf(IBV_SEND_WR, "wr_id");
    static final long SEND_WR_SG_LIST = offsetOf(IBV_SEND_WR, "sg_list");
    static final long SEND_WR_NUM_SGE = offsetOf(IBV_SEND_WR, "num_sge");
    static final long SEND_WR_OPCODE = offsetOf(IBV_SEND_WR, "opcode");
    static final long SEND_WR_SEND_FLAGS = offsetOf(IBV_SEND_WR, "send_flags");
    static final long SEND_WR_RDMA_REMOTE_ADDR = offsetOf(IBV_SEND_WR, "wr.rdma.remote_addr");
    static final long SEND_WR_RDMA_RKEY = offsetOf(IBV_SEND_WR, "wr.rdma.rkey");
    static final long SEND_WR_ATOMIC_REMOTE_ADDR = offsetOf(IBV_SEND_WR, "wr.atomic.remote_addr");
    static final long SEND_WR_ATOMIC_COMPARE_ADD = offsetOf(IBV_SEND_WR, "wr.atomic.compare_add");
    static final long SEND_WR_ATOMIC_SWAP = offsetOf(IBV_SEND_WR, "wr.atomic.swap");
    static final long SEND_WR_ATOMIC_RKEY = offsetOf(IBV_SEND_WR, "wr.atomic.rkey");
    static final long RECV_WR_ID = offsetOf(IBV_RECV_WR, "wr_id");
    static final long RECV_WR_SG_LIST = offsetOf(IBV_RECV_WR, "sg_list");
    static final long RECV_WR_NUM_SGE = offsetOf(IBV_RECV_WR, "num_sge");
    static final long WC_WR_ID = offsetOf(IBV_WC, "wr_id");
    static final long WC_STATUS = offsetOf(IBV_WC, "status");
    static final long WC_OPCODE = offsetOf(IBV_WC, "opcode");
    static final long WC_VENDOR_ERR = offsetOf(IBV_WC, "vendor_err");
    static final long WC_BYTE_LEN = offsetOf(IBV_WC, "byte_len");
    static final long WC_QP_NUM = offsetOf(IBV_WC, "qp_num");
    static final long QP_INIT_SEND_CQ = offsetOf(IBV_QP_INIT_ATTR, "send_cq");
    static final long QP_INIT_RECV_CQ = offsetOf(IBV_QP_INIT_ATTR, "recv_cq");
    static final long QP_INIT_MAX_SEND_WR = offsetOf(IBV_QP_INIT_ATTR, "cap.max_send_wr");
    static final long QP_INIT_MAX_RECV_WR = offsetOf(IBV_QP_INIT_ATTR, "cap.max_recv_wr");
    static final long QP_INIT_MAX_SEND_SGE = offsetOf(IBV_QP_INIT_ATTR, "cap.max_send_sge");
    static final long QP_INIT_MAX_RECV_SGE = offsetOf(IBV_QP_INIT_ATTR, "cap.max_recv_sge");
    static final long QP_INIT_QP_TYPE = offsetOf(IBV_QP_INIT_ATTR, "qp_type");
    static final long QP_INIT_SQ_SIG_ALL = offsetOf(IBV_QP_INIT_ATTR, "sq_sig_all");
    static final long QP_ATTR_QP_STATE = offsetOf(IBV_QP_ATTR, "qp_state");
    static final long QP_ATTR_PATH_MTU = offsetOf(IBV_QP_ATTR, "path_mtu");
    static final long QP_ATTR_RQ_PSN = offsetOf(IBV_QP_ATTR, "rq_psn");
    static final long QP_ATTR_SQ_PSN = offsetOf(IBV_QP_ATTR, "sq_psn");
    static final long QP_ATTR_DEST_QP_NUM = offsetOf(IBV_QP_ATTR, "dest_qp_num");
    static final long QP_ATTR_ACCESS_FLAGS = offsetOf(IBV_QP_ATTR, "qp_access_flags");
    static final long QP_ATTR_AH_DGID = offsetOf(IBV_QP_ATTR, "ah_attr.grh.dgid");
    static final long QP_ATTR_AH_SGID_INDEX = offsetOf(IBV_QP_ATTR, "ah_attr.grh.sgid_index");
    static final long QP_ATTR_AH_HOP_LIMIT = offsetOf(IBV_QP_ATTR, "ah_attr.grh.hop_limit");
    static final long QP_ATTR_AH_DLID = offsetOf(IBV_QP_ATTR, "ah_attr.dlid");
    static final long QP_ATTR_AH_IS_GLOBAL = offsetOf(IBV_QP_ATTR, "ah_attr.is_global");
    static final long QP_ATTR_AH_PORT_NUM = offsetOf(IBV_QP_ATTR, "ah_attr.port_num");
    static final long QP_ATTR_PKEY_INDEX = offsetOf(IBV_QP_ATTR, "pkey_index");
    static final long QP_ATTR_MAX_RD_ATOMIC = offsetOf(IBV_QP_ATTR, "max_rd_atomic");
    static final long QP_ATTR_MAX_DEST_RD_ATOMIC = offsetOf(IBV_QP_ATTR, "max_dest_rd_atomic");
    static final long QP_ATTR_MIN_RNR_TIMER = offsetOf(IBV_QP_ATTR, "min_rnr_timer");
    static final long QP_ATTR_PORT_NUM = offsetOf(IBV_QP_ATTR, "port_num");
    static final long QP_ATTR_TIMEOUT = offsetOf(IBV_QP_ATTR, "timeout");
    static final long QP_ATTR_RETRY_CNT = offsetOf(IBV_QP_ATTR, "retry_cnt");
    static final long QP_ATTR_RNR_RETRY = offsetOf(IBV_QP_ATTR, "rnr_retry");

    /** Big-endian 64-bit fields ({@code __be64}) as they lie in memory. */
    static final ValueLayout.OfLong BE64 = JAVA_LONG.withOrder(java.nio.ByteOrder.BIG_ENDIAN);

    /** {@code ibv_port_state_str}'s words, without calling it. */
    static String portState(int state) {
        return switch (state) {
            case IBV_PORT_NOP -> "NOP";
            case IBV_PORT_DOWN -> "DOWN";
            case IBV_PORT_INIT -> "INIT";
            case IBV_PORT_ARMED -> "ARMED";
            case IBV_PORT_ACTIVE -> "ACTIVE";
            case IBV_PORT_ACTIVE_DEFER -> "ACTIVE_DEFER";
            default -> "state " + state;
        };
    }

    static String linkLayer(int linkLayer) {
        return switch (linkLayer) {
            // Old kernels report 0 for InfiniBand ports; ibv_devinfo prints the same.
            case IBV_LINK_LAYER_UNSPECIFIED, IBV_LINK_LAYER_INFINIBAND -> "InfiniBand";
            case IBV_LINK_LAYER_ETHERNET -> "Ethernet";
            default -> "link layer " + linkLayer;
        };
    }

    static String atomics(int atomicCap) {
        return switch (atomicCap) {
            case IBV_ATOMIC_NONE -> "none";
            case IBV_ATOMIC_HCA -> "HCA";
            case IBV_ATOMIC_GLOB -> "GLOB";
            default -> "atomic_cap " + atomicCap;
        };
    }

    /** The C name of an {@code enum ibv_event_type}, as {@code IBV_EVENT_QP_FATAL}; {@code IBV_EVENT <n>} for one newer than this plugin. */
    static String eventType(int type) {
        return switch (type) {
            case IBV_EVENT_CQ_ERR -> "IBV_EVENT_CQ_ERR";
            case IBV_EVENT_QP_FATAL -> "IBV_EVENT_QP_FATAL";
            case IBV_EVENT_QP_REQ_ERR -> "IBV_EVENT_QP_REQ_ERR";
            case IBV_EVENT_QP_ACCESS_ERR -> "IBV_EVENT_QP_ACCESS_ERR";
            case IBV_EVENT_COMM_EST -> "IBV_EVENT_COMM_EST";
            case IBV_EVENT_SQ_DRAINED -> "IBV_EVENT_SQ_DRAINED";
            case IBV_EVENT_PATH_MIG -> "IBV_EVENT_PATH_MIG";
            case IBV_EVENT_PATH_MIG_ERR -> "IBV_EVENT_PATH_MIG_ERR";
            case IBV_EVENT_DEVICE_FATAL -> "IBV_EVENT_DEVICE_FATAL";
            case IBV_EVENT_PORT_ACTIVE -> "IBV_EVENT_PORT_ACTIVE";
            case IBV_EVENT_PORT_ERR -> "IBV_EVENT_PORT_ERR";
            case IBV_EVENT_LID_CHANGE -> "IBV_EVENT_LID_CHANGE";
            case IBV_EVENT_PKEY_CHANGE -> "IBV_EVENT_PKEY_CHANGE";
            case IBV_EVENT_SM_CHANGE -> "IBV_EVENT_SM_CHANGE";
            case IBV_EVENT_SRQ_ERR -> "IBV_EVENT_SRQ_ERR";
            case IBV_EVENT_SRQ_LIMIT_REACHED -> "IBV_EVENT_SRQ_LIMIT_REACHED";
            case IBV_EVENT_QP_LAST_WQE_REACHED -> "IBV_EVENT_QP_LAST_WQE_REACHED";
            case IBV_EVENT_CLIENT_REREGISTER -> "IBV_EVENT_CLIENT_REREGISTER";
            case IBV_EVENT_GID_CHANGE -> "IBV_EVENT_GID_CHANGE";
            case IBV_EVENT_WQ_FATAL -> "IBV_EVENT_WQ_FATAL";
            default -> "IBV_EVENT " + type;
        };
    }

    /** Whether {@code element} of an event of {@code type} is a queue pair ({@code ibv_get_async_event}'s own switch). */
    static boolean isQueuePairEvent(int type) {
        return switch (type) {
            case IBV_EVENT_QP_FATAL, IBV_EVENT_QP_REQ_ERR, IBV_EVENT_QP_ACCESS_ERR, IBV_EVENT_COMM_EST, IBV_EVENT_SQ_DRAINED,
                 IBV_EVENT_PATH_MIG, IBV_EVENT_PATH_MIG_ERR, IBV_EVENT_QP_LAST_WQE_REACHED -> true;
            default -> false;
        };
    }

    /** Whether {@code element} of an event of {@code type} is a port number. */
    static boolean isPortEvent(int type) {
        return switch (type) {
            case IBV_EVENT_PORT_ACTIVE, IBV_EVENT_PORT_ERR, IBV_EVENT_LID_CHANGE, IBV_EVENT_PKEY_CHANGE, IBV_EVENT_SM_CHANGE,
                 IBV_EVENT_CLIENT_REREGISTER, IBV_EVENT_GID_CHANGE -> true;
            default -> false;
        };
    }

    /** The MTU in bytes of an {@code enum ibv_mtu}, or 0 when it is none of them. */
    static int mtuBytes(int mtu) {
        return mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096 ? 128 << mtu : 0;
    }
}
