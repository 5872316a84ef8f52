package dev.conduit.tools;

import dev.conduit.ConduitBuilder;
import picocli.CommandLine.Option;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The options of every subcommand that opens Conduit, mixed in with {@code @Mixin}: configuration
 * as the builder would set it, and how much to say on failure. They belong to the subcommand
 * ({@code conduit info --set k=v}), not to {@code conduit} itself: picocli's inherited options
 * lose a map given before the subcommand name once the subcommand is given one too.
 */
final class ConduitOptions {

    static final String VERBOSE = "--verbose";

    // Not final: picocli assigns option fields by reflection.
    @Option(names = {"-D", "--set"}, paramLabel = "KEY=VALUE",
            description = "Sets a configuration key as the builder would: the strongest source. Repeatable; the last value "
                    + "of a key wins; the conduit. prefix is optional. E.g. --set transports=memfd, -D shared.dir=/mnt/shm.")
    private Map<String, String> settings = new LinkedHashMap<>();

    // Read by ConduitCommand's failure handler through the parse result, not through this field.
    @Option(names = {"-v", VERBOSE}, description = "On failure, prints the stack trace too, not only the message.")
    private boolean verbose;

    /** The {@code --set} values, in the order given (for a process this one starts with the same configuration). */
    Map<String, String> settings() {
        return java.util.Collections.unmodifiableMap(settings);
    }

    /** Applies the {@code --set} values to {@code builder}, in the order given. */
    ConduitBuilder applyTo(ConduitBuilder builder) {
        settings.forEach(builder::set);
        return builder;
    }
}
