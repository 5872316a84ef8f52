package dev.conduit.plugin.verbs;

import dev.conduit.spi.ConfigKey;

import java.util.List;

/**
 * The verbs plugin's configuration keys.
 *
 * <table class="striped">
 * <caption>Keys</caption>
 * <tr><th>key</th><th>environment</th><th>default</th></tr>
 * <tr><td>{@code verbs.library}</td><td>{@code CONDUIT_VERBS_LIBRARY}</td><td>{@code libibverbs.so.1}</td></tr>
 * </table>
 */
final class VerbsConfig {

    static final ConfigKey<String> LIBRARY = ConfigKey.string("verbs.library", "libibverbs.so.1",
            "The libibverbs the plugin opens with dlopen: a file name searched the way the dynamic loader searches "
                    + "(LD_LIBRARY_PATH, ld.so.cache), or an absolute path. rdma-core's library is libibverbs.so.1 "
                    + "(Debian and Ubuntu package libibverbs1).");

    static final List<ConfigKey<?>> KEYS = List.of(LIBRARY);

    private VerbsConfig() {
    }

    /** A key as messages name it: {@code verbs.library (CONDUIT_VERBS_LIBRARY)}. */
    static String describe(ConfigKey<?> key) {
        return key.name() + " (" + key.environmentName() + ")";
    }
}
