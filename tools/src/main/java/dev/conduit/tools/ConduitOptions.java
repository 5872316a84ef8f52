package dev.conduit.tools;

import dev.conduit.ConduitBuilder;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.Option;
import picocli.CommandLine.TypeConversionException;

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

    // Not final: picocli assigns option fields by reflection. Of a type of its own: picocli makes a new map of the field's
    // type at each parse, and puts into it what it parsed.
    @Option(names = {"-D", "--set"}, paramLabel = "KEY=VALUE", converter = KeyConverter.class,
            description = "Sets a configuration key as the builder would: the strongest source. Repeatable; the last value "
                    + "of a key wins; the conduit. prefix is optional. E.g. --set transports=memfd, -D shared.dir=/mnt/shm.")
    private InOrderGiven settings = new InOrderGiven();

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

    /**
     * A key as given before the first {@code '='}, refused when it is empty once its optional
     * {@code conduit.} prefix is dropped: {@code --set =x} passed to the builder as key {@code ''},
     * and the build failed with exit code 1 as "unknown config key ''" (until 2026-12-07,
     * ConduitCommandTest#aSettingWithAnEmptyKeyIsAUsageErrorShowingTheForm), which read as a key
     * the user had misspelt, not as a command line missing its key.
     */
    static final class KeyConverter implements ITypeConverter<String> {
        @Override
        public String convert(String key) {
            String named = key.startsWith("conduit.") ? key.substring("conduit.".length()) : key;
            if (named.isBlank()) {
                throw new TypeConversionException("the key before '=' is empty in '" + key + "=...': give it as KEY=VALUE, "
                        + "e.g. --set transports=memfd or -D shared.dir=/mnt/shm");
            }
            return key;
        }
    }

    /**
     * The settings in the order their last values were given: a key given again moves to the end.
     * picocli puts each value of a repeated option into the map, and a plain map keeps a key where
     * it was first put, so until 2026-12-07 {@code --set x=1 -Dconduit.x=2 --set x=3} gave the
     * builder {@code x=3} before {@code conduit.x=2}, the same key to it, and 2 won
     * (ConduitCommandTest#theLastValueOfAKeyWinsWhateverSpellingsItWasGivenIn).
     */
    public static final class InOrderGiven extends LinkedHashMap<String, String> {
        @java.io.Serial private static final long serialVersionUID = 1L;

        /** For picocli, which makes a map of the option's type at each parse. */
        public InOrderGiven() {
        }

        @Override
        public String put(String key, String value) {
            String before = remove(key);
            super.put(key, value);
            return before;
        }

        /** picocli adds each value through putAll, which a LinkedHashMap does without put. */
        @Override
        public void putAll(Map<? extends String, ? extends String> values) {
            values.forEach(this::put);
        }
    }
}
