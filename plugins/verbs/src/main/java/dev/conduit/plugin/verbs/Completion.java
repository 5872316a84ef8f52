package dev.conduit.plugin.verbs;

/** Words for completion statuses, as {@code ibv_wc_status_str} prints them, without calling it. */
final class Completion {

    private Completion() {
    }

    static String status(int status) {
        String name = switch (status) {
            case 0 -> "IBV_WC_SUCCESS";
            case 1 -> "IBV_WC_LOC_LEN_ERR (local length error)";
            case 2 -> "IBV_WC_LOC_QP_OP_ERR (local QP operation error)";
            case 4 -> "IBV_WC_LOC_PROT_ERR (local protection error)";
            case 5 -> "IBV_WC_WR_FLUSH_ERR (work request flushed: the queue pair is in the error state)";
            case 9 -> "IBV_WC_REM_INV_REQ_ERR (remote invalid request: an operation the peer's queue pair does not allow)";
            case 10 -> "IBV_WC_REM_ACCESS_ERR (remote access error: the region's key or bounds are wrong, or it was freed)";
            case 11 -> "IBV_WC_REM_OP_ERR (remote operation error)";
            case 12 -> "IBV_WC_RETRY_EXC_ERR (transport retry counter exceeded: the peer does not answer)";
            case 13 -> "IBV_WC_RNR_RETRY_EXC_ERR (receiver not ready: the peer posted no receive buffer)";
            default -> "status " + status;
        };
        return name;
    }
}
