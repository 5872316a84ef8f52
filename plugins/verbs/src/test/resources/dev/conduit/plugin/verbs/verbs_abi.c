/* Prints the sizes, offsets and constants of <infiniband/verbs.h> that VerbsAbi encodes, one
 * "key value" per line, for VerbsAbiTest. Built against the installed libibverbs-dev. */
#include <stddef.h>
#include <stdio.h>
#include <infiniband/verbs.h>

#define SIZE(type, name) printf("sizeof.%s %zu\n", name, sizeof(type))
#define FIELD(type, name, field) \
    printf("offsetof.%s.%s %zu\nsizeof.%s.%s %zu\n", name, #field, offsetof(type, field), name, #field, sizeof(((type *) 0)->field))
#define CONST(c) printf("const.%s %ld\n", #c, (long) (c))

int main(void) {
    SIZE(struct ibv_device_attr, "ibv_device_attr");
    FIELD(struct ibv_device_attr, "ibv_device_attr", fw_ver);
    FIELD(struct ibv_device_attr, "ibv_device_attr", node_guid);
    FIELD(struct ibv_device_attr, "ibv_device_attr", sys_image_guid);
    FIELD(struct ibv_device_attr, "ibv_device_attr", max_mr_size);
    FIELD(struct ibv_device_attr, "ibv_device_attr", page_size_cap);
    FIELD(struct ibv_device_attr, "ibv_device_attr", vendor_id);
    FIELD(struct ibv_device_attr, "ibv_device_attr", vendor_part_id);
    FIELD(struct ibv_device_attr, "ibv_device_attr", hw_ver);
    FIELD(struct ibv_device_attr, "ibv_device_attr", max_qp);
    FIELD(struct ibv_device_attr, "ibv_device_attr", max_qp_wr);
    FIELD(struct ibv_device_attr, "ibv_device_attr", device_cap_flags);
    FIELD(struct ibv_device_attr, "ibv_device_attr", max_sge);
    FIELD(struct ibv_device_attr, "ibv_device_attr", max_sge_rd);
    FIELD(struct ibv_device_attr, "ibv_device_attr", max_cq);
    FIELD(struct ibv_device_attr, "ibv_device_attr", max_cqe);
    FIELD(struct ibv_device_attr, "ibv_device_attr", max_mr);
    FIELD(struct ibv_device_attr, "ibv_device_attr", max_pd);
    FIELD(struct ibv_device_attr, "ibv_device_attr", max_qp_rd_atom);
    FIELD(struct ibv_device_attr, "ibv_device_attr", max_ee_rd_atom);
    FIELD(struct ibv_device_attr, "ibv_device_attr", max_res_rd_atom);
    FIELD(struct ibv_device_attr, "ibv_device_attr", max_qp_init_rd_atom);
    FIELD(struct ibv_device_attr, "ibv_device_attr", max_ee_init_rd_atom);
    FIELD(struct ibv_device_attr, "ibv_device_attr", atomic_cap);
    FIELD(struct ibv_device_attr, "ibv_device_attr", max_ee);
    FIELD(struct ibv_device_attr, "ibv_device_attr", max_rdd);
    FIELD(struct ibv_device_attr, "ibv_device_attr", max_mw);
    FIELD(struct ibv_device_attr, "ibv_device_attr", max_raw_ipv6_qp);
    FIELD(struct ibv_device_attr, "ibv_device_attr", max_raw_ethy_qp);
    FIELD(struct ibv_device_attr, "ibv_device_attr", max_mcast_grp);
    FIELD(struct ibv_device_attr, "ibv_device_attr", max_mcast_qp_attach);
    FIELD(struct ibv_device_attr, "ibv_device_attr", max_total_mcast_qp_attach);
    FIELD(struct ibv_device_attr, "ibv_device_attr", max_ah);
    FIELD(struct ibv_device_attr, "ibv_device_attr", max_fmr);
    FIELD(struct ibv_device_attr, "ibv_device_attr", max_map_per_fmr);
    FIELD(struct ibv_device_attr, "ibv_device_attr", max_srq);
    FIELD(struct ibv_device_attr, "ibv_device_attr", max_srq_wr);
    FIELD(struct ibv_device_attr, "ibv_device_attr", max_srq_sge);
    FIELD(struct ibv_device_attr, "ibv_device_attr", max_pkeys);
    FIELD(struct ibv_device_attr, "ibv_device_attr", local_ca_ack_delay);
    FIELD(struct ibv_device_attr, "ibv_device_attr", phys_port_cnt);

    SIZE(struct ibv_port_attr, "ibv_port_attr");
    FIELD(struct ibv_port_attr, "ibv_port_attr", state);
    FIELD(struct ibv_port_attr, "ibv_port_attr", max_mtu);
    FIELD(struct ibv_port_attr, "ibv_port_attr", active_mtu);
    FIELD(struct ibv_port_attr, "ibv_port_attr", gid_tbl_len);
    FIELD(struct ibv_port_attr, "ibv_port_attr", port_cap_flags);
    FIELD(struct ibv_port_attr, "ibv_port_attr", max_msg_sz);
    FIELD(struct ibv_port_attr, "ibv_port_attr", bad_pkey_cntr);
    FIELD(struct ibv_port_attr, "ibv_port_attr", qkey_viol_cntr);
    FIELD(struct ibv_port_attr, "ibv_port_attr", pkey_tbl_len);
    FIELD(struct ibv_port_attr, "ibv_port_attr", lid);
    FIELD(struct ibv_port_attr, "ibv_port_attr", sm_lid);
    FIELD(struct ibv_port_attr, "ibv_port_attr", lmc);
    FIELD(struct ibv_port_attr, "ibv_port_attr", max_vl_num);
    FIELD(struct ibv_port_attr, "ibv_port_attr", sm_sl);
    FIELD(struct ibv_port_attr, "ibv_port_attr", subnet_timeout);
    FIELD(struct ibv_port_attr, "ibv_port_attr", init_type_reply);
    FIELD(struct ibv_port_attr, "ibv_port_attr", active_width);
    FIELD(struct ibv_port_attr, "ibv_port_attr", active_speed);
    FIELD(struct ibv_port_attr, "ibv_port_attr", phys_state);
    FIELD(struct ibv_port_attr, "ibv_port_attr", link_layer);
    FIELD(struct ibv_port_attr, "ibv_port_attr", flags);
    FIELD(struct ibv_port_attr, "ibv_port_attr", port_cap_flags2);

    SIZE(union ibv_gid, "ibv_gid");
    FIELD(union ibv_gid, "ibv_gid", raw);

    CONST(IBV_SYSFS_NAME_MAX);
    CONST(IBV_PORT_NOP);
    CONST(IBV_PORT_DOWN);
    CONST(IBV_PORT_INIT);
    CONST(IBV_PORT_ARMED);
    CONST(IBV_PORT_ACTIVE);
    CONST(IBV_PORT_ACTIVE_DEFER);
    CONST(IBV_LINK_LAYER_UNSPECIFIED);
    CONST(IBV_LINK_LAYER_INFINIBAND);
    CONST(IBV_LINK_LAYER_ETHERNET);
    CONST(IBV_ATOMIC_NONE);
    CONST(IBV_ATOMIC_HCA);
    CONST(IBV_ATOMIC_GLOB);
    CONST(IBV_MTU_256);
    CONST(IBV_MTU_512);
    CONST(IBV_MTU_1024);
    CONST(IBV_MTU_2048);
    CONST(IBV_MTU_4096);
    return 0;
}
