package dev.conduit.plugin.verbs;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The installed {@code libibverbs.so.1} exports every function {@link FfmVerbs} binds (binding
 * fails on the first one missing): the data path's exported functions resolve even where no device
 * exists. Needs libibverbs1, which {@code .ci/run} installs; elsewhere it is skipped with the reason.
 */
class FfmVerbsBindingTest {

    @Test
    void everyBoundFunctionIsExportedByTheInstalledLibrary() {
        FfmVerbs verbs;
        try {
            verbs = FfmVerbs.load("libibverbs.so.1");
        } catch (FfmVerbs.Unavailable e) {
            assumeTrue(!e.getMessage().contains("not found"), "libibverbs.so.1 is not installed: " + e.getMessage());
            throw e;
        }
        assertThat(verbs.library()).isEqualTo("libibverbs.so.1");
        assertThat(FfmVerbs.FUNCTIONS).contains("ibv_reg_mr", "ibv_create_qp", "ibv_modify_qp", "ibv_get_cq_event", "ibv_ack_cq_events")
                .doesNotContain("ibv_post_send", "ibv_post_recv", "ibv_poll_cq", "ibv_req_notify_cq"); // inline: through context->ops
    }
}
