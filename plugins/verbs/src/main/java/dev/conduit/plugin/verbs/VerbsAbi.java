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
 * 164 atomic_cap                            8 active_mtu                    46 link_layer
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

    /** Every layout, for {@code VerbsAbiTest}. */
    static final List<StructLayout> ALL = List.of(IBV_DEVICE_ATTR, IBV_PORT_ATTR, IBV_GID);

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
    static final long DEVICE_ATOMIC_CAP = offset(IBV_DEVICE_ATTR, "atomic_cap");
    static final long DEVICE_PHYS_PORT_CNT = offset(IBV_DEVICE_ATTR, "phys_port_cnt");
    static final long PORT_STATE = offset(IBV_PORT_ATTR, "state");
    static final long PORT_MAX_MTU = offset(IBV_PORT_ATTR, "max_mtu");
    static final long PORT_ACTIVE_MTU = offset(IBV_PORT_ATTR, "active_mtu");
    static final long PORT_GID_TBL_LEN = offset(IBV_PORT_ATTR, "gid_tbl_len");
    static final long PORT_LID = offset(IBV_PORT_ATTR, "lid");
    static final long PORT_PHYS_STATE = offset(IBV_PORT_ATTR, "phys_state");
    static final long PORT_LINK_LAYER = offset(IBV_PORT_ATTR, "link_layer");

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

    /** The MTU in bytes of an {@code enum ibv_mtu}, or 0 when it is none of them. */
    static int mtuBytes(int mtu) {
        return mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096 ? 128 << mtu : 0;
    }
}
