package dev.conduit.plugin.verbs;

import java.util.Map;

/** The gate of the tests that need an RDMA device: the environment variable that names one. */
final class RealDevice {

    static final String VARIABLE = "CONDUIT_TEST_VERBS_DEVICE";

    static final String WHY_SKIPPED = "needs an RDMA device with an active port, and none is named: set " + VARIABLE
            + " to one (an adapter, or Soft-RoCE: docs/plugins.md, \"verbs\")";

    private RealDevice() {
    }

    static String name() {
        return System.getenv(VARIABLE);
    }

    /** The plugin's configuration for the named device. */
    static Map<String, String> configuration() {
        return Map.of(VerbsConfig.DEVICE.name(), name());
    }
}
