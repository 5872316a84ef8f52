package dev.conduit.plugin.verbs;

/**
 * Words for completion statuses: the C name and ibv_wc_status_str's meaning, without calling it,
 * for every value of {@code enum ibv_wc_status} ({@code VerbsAbiTest} checks them against the
 * header), with what it says about the peer where the transport knows it.
 */
final class Completion {

    private Completion() {
    }

    static String status(int status) {
        return switch (status) {
            case 0 -> "IBV_WC_SUCCESS (success)";
            case 1 -> "IBV_WC_LOC_LEN_ERR (local length error)";
            case 2 -> "IBV_WC_LOC_QP_OP_ERR (local QP operation error)";
            case 3 -> "IBV_WC_LOC_EEC_OP_ERR (local EE context operation error)";
            case 4 -> "IBV_WC_LOC_PROT_ERR (local protection error)";
            case 5 -> "IBV_WC_WR_FLUSH_ERR (work request flushed: the queue pair is in the error state)";
            case 6 -> "IBV_WC_MW_BIND_ERR (memory management operation error)";
            case 7 -> "IBV_WC_BAD_RESP_ERR (bad response error: the peer's adapter answered out of protocol)";
            case 8 -> "IBV_WC_LOC_ACCESS_ERR (local access error)";
            case 9 -> "IBV_WC_REM_INV_REQ_ERR (remote invalid request: an operation the peer's queue pair does not allow)";
            case 10 -> "IBV_WC_REM_ACCESS_ERR (remote access error: the region's key or bounds are wrong, or it was freed)";
            case 11 -> "IBV_WC_REM_OP_ERR (remote operation error)";
            case 12 -> "IBV_WC_RETRY_EXC_ERR (transport retry counter exceeded: the peer does not answer)";
            case 13 -> "IBV_WC_RNR_RETRY_EXC_ERR (receiver not ready: the peer posted no receive buffer)";
            case 14 -> "IBV_WC_LOC_RDD_VIOL_ERR (local RDD violation error)";
            case 15 -> "IBV_WC_REM_INV_RD_REQ_ERR (remote invalid RD request)";
            case 16 -> "IBV_WC_REM_ABORT_ERR (aborted error: the peer aborted the operation)";
            case 17 -> "IBV_WC_INV_EECN_ERR (invalid EE context number)";
            case 18 -> "IBV_WC_INV_EEC_STATE_ERR (invalid EE context state)";
            case 19 -> "IBV_WC_FATAL_ERR (fatal error: the adapter failed; see dmesg)";
            case 20 -> "IBV_WC_RESP_TIMEOUT_ERR (response timeout error)";
            case 21 -> "IBV_WC_GENERAL_ERR (general error: the provider's vendor error says more)";
            case 22 -> "IBV_WC_TM_ERR (TM error)";
            case 23 -> "IBV_WC_TM_RNDV_INCOMPLETE (TM software rendezvous)";
            default -> "status " + status + " (not in this plugin's enum ibv_wc_status; the provider's vendor error says more)";
        };
    }
}
