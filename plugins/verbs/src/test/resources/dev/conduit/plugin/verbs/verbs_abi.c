/* Prints the sizes, offsets and constants of <infiniband/verbs.h> that VerbsAbi encodes, one
 * "key value" per line, for VerbsAbiTest. Built against the installed libibverbs-dev. */
#include <stddef.h>
#include <stdio.h>
#include <infiniband/verbs.h>

#define SIZE(type, name) printf("sizeof.%s %zu\n", name, sizeof(type))
#define FIELD(type, name, field) \
    printf("offsetof.%s.%s %zu\nsizeof.%s.%s %zu\n", name, #field, offsetof(type, field), name, #field, sizeof(((type *) 0)->field))
#define CONST(c) printf("const.%s %ld\n", #c, (long) (c))
#define WC_STATUS(c) printf("wcstatus.%s %ld\n", #c, (long) (c))

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

    SIZE(struct ibv_context_ops, "ibv_context_ops");
    FIELD(struct ibv_context_ops, "ibv_context_ops", poll_cq);
    FIELD(struct ibv_context_ops, "ibv_context_ops", req_notify_cq);
    FIELD(struct ibv_context_ops, "ibv_context_ops", post_send);
    FIELD(struct ibv_context_ops, "ibv_context_ops", post_recv);

    SIZE(struct ibv_context, "ibv_context");
    FIELD(struct ibv_context, "ibv_context", device);
    FIELD(struct ibv_context, "ibv_context", ops);
    FIELD(struct ibv_context, "ibv_context", ops.poll_cq);
    FIELD(struct ibv_context, "ibv_context", ops.req_notify_cq);
    FIELD(struct ibv_context, "ibv_context", ops.post_send);
    FIELD(struct ibv_context, "ibv_context", ops.post_recv);
    FIELD(struct ibv_context, "ibv_context", cmd_fd);
    FIELD(struct ibv_context, "ibv_context", async_fd);
    FIELD(struct ibv_context, "ibv_context", num_comp_vectors);

    SIZE(struct ibv_pd, "ibv_pd");
    FIELD(struct ibv_pd, "ibv_pd", context);
    FIELD(struct ibv_pd, "ibv_pd", handle);

    SIZE(struct ibv_mr, "ibv_mr");
    FIELD(struct ibv_mr, "ibv_mr", context);
    FIELD(struct ibv_mr, "ibv_mr", pd);
    FIELD(struct ibv_mr, "ibv_mr", addr);
    FIELD(struct ibv_mr, "ibv_mr", length);
    FIELD(struct ibv_mr, "ibv_mr", handle);
    FIELD(struct ibv_mr, "ibv_mr", lkey);
    FIELD(struct ibv_mr, "ibv_mr", rkey);

    SIZE(struct ibv_comp_channel, "ibv_comp_channel");
    FIELD(struct ibv_comp_channel, "ibv_comp_channel", context);
    FIELD(struct ibv_comp_channel, "ibv_comp_channel", fd);
    FIELD(struct ibv_comp_channel, "ibv_comp_channel", refcnt);

    SIZE(struct ibv_cq, "ibv_cq");
    FIELD(struct ibv_cq, "ibv_cq", context);
    FIELD(struct ibv_cq, "ibv_cq", channel);
    FIELD(struct ibv_cq, "ibv_cq", cq_context);
    FIELD(struct ibv_cq, "ibv_cq", handle);
    FIELD(struct ibv_cq, "ibv_cq", cqe);

    SIZE(struct ibv_qp, "ibv_qp");
    FIELD(struct ibv_qp, "ibv_qp", context);
    FIELD(struct ibv_qp, "ibv_qp", qp_context);
    FIELD(struct ibv_qp, "ibv_qp", pd);
    FIELD(struct ibv_qp, "ibv_qp", send_cq);
    FIELD(struct ibv_qp, "ibv_qp", recv_cq);
    FIELD(struct ibv_qp, "ibv_qp", srq);
    FIELD(struct ibv_qp, "ibv_qp", handle);
    FIELD(struct ibv_qp, "ibv_qp", qp_num);
    FIELD(struct ibv_qp, "ibv_qp", state);
    FIELD(struct ibv_qp, "ibv_qp", qp_type);

    SIZE(struct ibv_sge, "ibv_sge");
    FIELD(struct ibv_sge, "ibv_sge", addr);
    FIELD(struct ibv_sge, "ibv_sge", length);
    FIELD(struct ibv_sge, "ibv_sge", lkey);

    SIZE(struct ibv_send_wr, "ibv_send_wr");
    FIELD(struct ibv_send_wr, "ibv_send_wr", wr_id);
    FIELD(struct ibv_send_wr, "ibv_send_wr", next);
    FIELD(struct ibv_send_wr, "ibv_send_wr", sg_list);
    FIELD(struct ibv_send_wr, "ibv_send_wr", num_sge);
    FIELD(struct ibv_send_wr, "ibv_send_wr", opcode);
    FIELD(struct ibv_send_wr, "ibv_send_wr", send_flags);
    FIELD(struct ibv_send_wr, "ibv_send_wr", imm_data);
    FIELD(struct ibv_send_wr, "ibv_send_wr", wr);
    FIELD(struct ibv_send_wr, "ibv_send_wr", wr.rdma);
    FIELD(struct ibv_send_wr, "ibv_send_wr", wr.rdma.remote_addr);
    FIELD(struct ibv_send_wr, "ibv_send_wr", wr.rdma.rkey);
    FIELD(struct ibv_send_wr, "ibv_send_wr", wr.atomic);
    FIELD(struct ibv_send_wr, "ibv_send_wr", wr.atomic.remote_addr);
    FIELD(struct ibv_send_wr, "ibv_send_wr", wr.atomic.compare_add);
    FIELD(struct ibv_send_wr, "ibv_send_wr", wr.atomic.swap);
    FIELD(struct ibv_send_wr, "ibv_send_wr", wr.atomic.rkey);

    SIZE(struct ibv_recv_wr, "ibv_recv_wr");
    FIELD(struct ibv_recv_wr, "ibv_recv_wr", wr_id);
    FIELD(struct ibv_recv_wr, "ibv_recv_wr", next);
    FIELD(struct ibv_recv_wr, "ibv_recv_wr", sg_list);
    FIELD(struct ibv_recv_wr, "ibv_recv_wr", num_sge);

    SIZE(struct ibv_wc, "ibv_wc");
    FIELD(struct ibv_wc, "ibv_wc", wr_id);
    FIELD(struct ibv_wc, "ibv_wc", status);
    FIELD(struct ibv_wc, "ibv_wc", opcode);
    FIELD(struct ibv_wc, "ibv_wc", vendor_err);
    FIELD(struct ibv_wc, "ibv_wc", byte_len);
    FIELD(struct ibv_wc, "ibv_wc", imm_data);
    FIELD(struct ibv_wc, "ibv_wc", qp_num);
    FIELD(struct ibv_wc, "ibv_wc", src_qp);
    FIELD(struct ibv_wc, "ibv_wc", wc_flags);

    SIZE(struct ibv_qp_cap, "ibv_qp_cap");
    FIELD(struct ibv_qp_cap, "ibv_qp_cap", max_send_wr);
    FIELD(struct ibv_qp_cap, "ibv_qp_cap", max_recv_wr);
    FIELD(struct ibv_qp_cap, "ibv_qp_cap", max_send_sge);
    FIELD(struct ibv_qp_cap, "ibv_qp_cap", max_recv_sge);
    FIELD(struct ibv_qp_cap, "ibv_qp_cap", max_inline_data);

    SIZE(struct ibv_qp_init_attr, "ibv_qp_init_attr");
    FIELD(struct ibv_qp_init_attr, "ibv_qp_init_attr", qp_context);
    FIELD(struct ibv_qp_init_attr, "ibv_qp_init_attr", send_cq);
    FIELD(struct ibv_qp_init_attr, "ibv_qp_init_attr", recv_cq);
    FIELD(struct ibv_qp_init_attr, "ibv_qp_init_attr", srq);
    FIELD(struct ibv_qp_init_attr, "ibv_qp_init_attr", cap);
    FIELD(struct ibv_qp_init_attr, "ibv_qp_init_attr", cap.max_send_wr);
    FIELD(struct ibv_qp_init_attr, "ibv_qp_init_attr", cap.max_recv_wr);
    FIELD(struct ibv_qp_init_attr, "ibv_qp_init_attr", cap.max_send_sge);
    FIELD(struct ibv_qp_init_attr, "ibv_qp_init_attr", cap.max_recv_sge);
    FIELD(struct ibv_qp_init_attr, "ibv_qp_init_attr", cap.max_inline_data);
    FIELD(struct ibv_qp_init_attr, "ibv_qp_init_attr", qp_type);
    FIELD(struct ibv_qp_init_attr, "ibv_qp_init_attr", sq_sig_all);

    SIZE(struct ibv_global_route, "ibv_global_route");
    FIELD(struct ibv_global_route, "ibv_global_route", dgid);
    FIELD(struct ibv_global_route, "ibv_global_route", flow_label);
    FIELD(struct ibv_global_route, "ibv_global_route", sgid_index);
    FIELD(struct ibv_global_route, "ibv_global_route", hop_limit);
    FIELD(struct ibv_global_route, "ibv_global_route", traffic_class);

    SIZE(struct ibv_ah_attr, "ibv_ah_attr");
    FIELD(struct ibv_ah_attr, "ibv_ah_attr", grh);
    FIELD(struct ibv_ah_attr, "ibv_ah_attr", grh.dgid);
    FIELD(struct ibv_ah_attr, "ibv_ah_attr", grh.flow_label);
    FIELD(struct ibv_ah_attr, "ibv_ah_attr", grh.sgid_index);
    FIELD(struct ibv_ah_attr, "ibv_ah_attr", grh.hop_limit);
    FIELD(struct ibv_ah_attr, "ibv_ah_attr", grh.traffic_class);
    FIELD(struct ibv_ah_attr, "ibv_ah_attr", dlid);
    FIELD(struct ibv_ah_attr, "ibv_ah_attr", sl);
    FIELD(struct ibv_ah_attr, "ibv_ah_attr", src_path_bits);
    FIELD(struct ibv_ah_attr, "ibv_ah_attr", static_rate);
    FIELD(struct ibv_ah_attr, "ibv_ah_attr", is_global);
    FIELD(struct ibv_ah_attr, "ibv_ah_attr", port_num);

    SIZE(struct ibv_qp_attr, "ibv_qp_attr");
    FIELD(struct ibv_qp_attr, "ibv_qp_attr", qp_state);
    FIELD(struct ibv_qp_attr, "ibv_qp_attr", path_mtu);
    FIELD(struct ibv_qp_attr, "ibv_qp_attr", qkey);
    FIELD(struct ibv_qp_attr, "ibv_qp_attr", rq_psn);
    FIELD(struct ibv_qp_attr, "ibv_qp_attr", sq_psn);
    FIELD(struct ibv_qp_attr, "ibv_qp_attr", dest_qp_num);
    FIELD(struct ibv_qp_attr, "ibv_qp_attr", qp_access_flags);
    FIELD(struct ibv_qp_attr, "ibv_qp_attr", cap);
    FIELD(struct ibv_qp_attr, "ibv_qp_attr", cap.max_send_wr);
    FIELD(struct ibv_qp_attr, "ibv_qp_attr", cap.max_recv_wr);
    FIELD(struct ibv_qp_attr, "ibv_qp_attr", cap.max_send_sge);
    FIELD(struct ibv_qp_attr, "ibv_qp_attr", cap.max_recv_sge);
    FIELD(struct ibv_qp_attr, "ibv_qp_attr", cap.max_inline_data);
    FIELD(struct ibv_qp_attr, "ibv_qp_attr", ah_attr);
    FIELD(struct ibv_qp_attr, "ibv_qp_attr", ah_attr.grh);
    FIELD(struct ibv_qp_attr, "ibv_qp_attr", ah_attr.grh.dgid);
    FIELD(struct ibv_qp_attr, "ibv_qp_attr", ah_attr.grh.flow_label);
    FIELD(struct ibv_qp_attr, "ibv_qp_attr", ah_attr.grh.sgid_index);
    FIELD(struct ibv_qp_attr, "ibv_qp_attr", ah_attr.grh.hop_limit);
    FIELD(struct ibv_qp_attr, "ibv_qp_attr", ah_attr.grh.traffic_class);
    FIELD(struct ibv_qp_attr, "ibv_qp_attr", ah_attr.dlid);
    FIELD(struct ibv_qp_attr, "ibv_qp_attr", ah_attr.sl);
    FIELD(struct ibv_qp_attr, "ibv_qp_attr", ah_attr.src_path_bits);
    FIELD(struct ibv_qp_attr, "ibv_qp_attr", ah_attr.static_rate);
    FIELD(struct ibv_qp_attr, "ibv_qp_attr", ah_attr.is_global);
    FIELD(struct ibv_qp_attr, "ibv_qp_attr", ah_attr.port_num);
    FIELD(struct ibv_qp_attr, "ibv_qp_attr", pkey_index);
    FIELD(struct ibv_qp_attr, "ibv_qp_attr", max_rd_atomic);
    FIELD(struct ibv_qp_attr, "ibv_qp_attr", max_dest_rd_atomic);
    FIELD(struct ibv_qp_attr, "ibv_qp_attr", min_rnr_timer);
    FIELD(struct ibv_qp_attr, "ibv_qp_attr", port_num);
    FIELD(struct ibv_qp_attr, "ibv_qp_attr", timeout);
    FIELD(struct ibv_qp_attr, "ibv_qp_attr", retry_cnt);
    FIELD(struct ibv_qp_attr, "ibv_qp_attr", rnr_retry);

    CONST(IBV_QPT_RC);
    CONST(IBV_QPS_RESET);
    CONST(IBV_QPS_INIT);
    CONST(IBV_QPS_RTR);
    CONST(IBV_QPS_RTS);
    CONST(IBV_QPS_ERR);
    CONST(IBV_ACCESS_LOCAL_WRITE);
    CONST(IBV_ACCESS_REMOTE_WRITE);
    CONST(IBV_ACCESS_REMOTE_READ);
    CONST(IBV_ACCESS_REMOTE_ATOMIC);
    CONST(IBV_QP_STATE);
    CONST(IBV_QP_ACCESS_FLAGS);
    CONST(IBV_QP_PKEY_INDEX);
    CONST(IBV_QP_PORT);
    CONST(IBV_QP_AV);
    CONST(IBV_QP_PATH_MTU);
    CONST(IBV_QP_TIMEOUT);
    CONST(IBV_QP_RETRY_CNT);
    CONST(IBV_QP_RNR_RETRY);
    CONST(IBV_QP_RQ_PSN);
    CONST(IBV_QP_MAX_QP_RD_ATOMIC);
    CONST(IBV_QP_MIN_RNR_TIMER);
    CONST(IBV_QP_SQ_PSN);
    CONST(IBV_QP_MAX_DEST_RD_ATOMIC);
    CONST(IBV_QP_DEST_QPN);
    CONST(IBV_WR_RDMA_WRITE);
    CONST(IBV_WR_SEND);
    CONST(IBV_WR_RDMA_READ);
    CONST(IBV_WR_ATOMIC_CMP_AND_SWP);
    CONST(IBV_WR_ATOMIC_FETCH_AND_ADD);
    CONST(IBV_SEND_SIGNALED);
    CONST(IBV_WC_SUCCESS);
    CONST(IBV_WC_LOC_PROT_ERR);
    CONST(IBV_WC_WR_FLUSH_ERR);
    CONST(IBV_WC_REM_ACCESS_ERR);
    CONST(IBV_WC_RETRY_EXC_ERR);
    CONST(IBV_WC_RNR_RETRY_EXC_ERR);
    CONST(IBV_WC_RECV);
    /* Every enum ibv_wc_status value, for the words Completion.status gives each. */
    WC_STATUS(IBV_WC_SUCCESS);
    WC_STATUS(IBV_WC_LOC_LEN_ERR);
    WC_STATUS(IBV_WC_LOC_QP_OP_ERR);
    WC_STATUS(IBV_WC_LOC_EEC_OP_ERR);
    WC_STATUS(IBV_WC_LOC_PROT_ERR);
    WC_STATUS(IBV_WC_WR_FLUSH_ERR);
    WC_STATUS(IBV_WC_MW_BIND_ERR);
    WC_STATUS(IBV_WC_BAD_RESP_ERR);
    WC_STATUS(IBV_WC_LOC_ACCESS_ERR);
    WC_STATUS(IBV_WC_REM_INV_REQ_ERR);
    WC_STATUS(IBV_WC_REM_ACCESS_ERR);
    WC_STATUS(IBV_WC_REM_OP_ERR);
    WC_STATUS(IBV_WC_RETRY_EXC_ERR);
    WC_STATUS(IBV_WC_RNR_RETRY_EXC_ERR);
    WC_STATUS(IBV_WC_LOC_RDD_VIOL_ERR);
    WC_STATUS(IBV_WC_REM_INV_RD_REQ_ERR);
    WC_STATUS(IBV_WC_REM_ABORT_ERR);
    WC_STATUS(IBV_WC_INV_EECN_ERR);
    WC_STATUS(IBV_WC_INV_EEC_STATE_ERR);
    WC_STATUS(IBV_WC_FATAL_ERR);
    WC_STATUS(IBV_WC_RESP_TIMEOUT_ERR);
    WC_STATUS(IBV_WC_GENERAL_ERR);
    WC_STATUS(IBV_WC_TM_ERR);
    WC_STATUS(IBV_WC_TM_RNDV_INCOMPLETE);
    return 0;
}
