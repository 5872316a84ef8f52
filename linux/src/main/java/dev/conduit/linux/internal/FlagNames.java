package dev.conduit.linux.internal;

import java.util.ArrayList;
import java.util.List;

/**
 * Renders a bit set of flags with the names of its C constants ({@code O_RDWR|O_CREAT|0x40000}),
 * so that error messages show what was passed the way {@code strace} does. Bits without a name
 * are printed in hexadecimal rather than dropped.
 */
public final class FlagNames {
    private final String[] names;
    private final int[] values;

    private FlagNames(List<String> names, List<Integer> values) {
        this.names = names.toArray(String[]::new);
        this.values = values.stream().mapToInt(Integer::intValue).toArray();
    }

    public static Builder builder() {
        return new Builder();
    }

    /** The names of the set bits of {@code flags}, separated by {@code |}; {@code "0"} when none is set. */
    public String describe(int flags) {
        StringBuilder out = new StringBuilder();
        int rest = flags;
        for (int i = 0; i < names.length; i++) {
            int value = values[i];
            if (value != 0 && (rest & value) == value) {
                separate(out).append(names[i]);
                rest &= ~value;
            }
        }
        if (rest != 0) {
            separate(out).append("0x").append(Integer.toHexString(rest));
        }
        return out.isEmpty() ? "0" : out.toString();
    }

    private static StringBuilder separate(StringBuilder out) {
        return out.isEmpty() ? out : out.append('|');
    }

    /** Collects names in the order they should print; multi-bit values must come before their parts. */
    public static final class Builder {
        private final List<String> names = new ArrayList<>();
        private final List<Integer> values = new ArrayList<>();

        private Builder() {}

        public Builder flag(String name, int value) {
            names.add(name);
            values.add(value);
            return this;
        }

        public FlagNames build() {
            return new FlagNames(names, values);
        }
    }
}
