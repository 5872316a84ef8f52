package dev.conduit.tools;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Locale;
import java.util.Objects;

/**
 * A small streaming JSON writer (RFC 8259), indented by two spaces. The output is plain ASCII:
 * every other character is written as a {@code \}{@code uXXXX} escape, so the document survives
 * any terminal or locale encoding unchanged. Misuse (a value where a name is due, unbalanced
 * containers, a second top-level value) throws {@link IllegalStateException} rather than writing
 * invalid JSON.
 */
final class JsonWriter {

    private static final String INDENT = "  ";
    private static final char[] HEX = "0123456789abcdef".toCharArray();

    private enum Container { OBJECT, ARRAY }

    /** One open object or array: whether it has members yet, and, in an object, whether a name awaits its value. */
    private static final class Level {
        final Container container;
        boolean empty = true;
        boolean nameWritten;

        Level(Container container) {
            this.container = container;
        }
    }

    private final Appendable out;
    private final Deque<Level> levels = new ArrayDeque<>();
    private boolean topLevelWritten;

    JsonWriter(Appendable out) {
        this.out = Objects.requireNonNull(out, "out");
    }

    JsonWriter beginObject() {
        beforeValue();
        write("{");
        levels.push(new Level(Container.OBJECT));
        return this;
    }

    JsonWriter endObject() {
        return end(Container.OBJECT, "}");
    }

    JsonWriter beginArray() {
        beforeValue();
        write("[");
        levels.push(new Level(Container.ARRAY));
        return this;
    }

    JsonWriter endArray() {
        return end(Container.ARRAY, "]");
    }

    /** The name of the next member of the current object. */
    JsonWriter name(String name) {
        Objects.requireNonNull(name, "name");
        Level level = levels.peek();
        if (level == null || level.container != Container.OBJECT || level.nameWritten) {
            throw new IllegalStateException("a name is only allowed in an object, before each value: " + name);
        }
        newMember(level);
        writeString(name);
        write(": ");
        level.nameWritten = true;
        return this;
    }

    /** A string, or {@code null}. */
    JsonWriter value(String value) {
        if (value == null) {
            return nullValue();
        }
        beforeValue();
        writeString(value);
        return this;
    }

    JsonWriter nullValue() {
        beforeValue();
        write("null");
        return this;
    }

    JsonWriter value(long value) {
        beforeValue();
        write(Long.toString(value));
        return this;
    }

    /**
     * A number, written in plain decimal notation rounded to {@code decimals} places (trailing zeros
     * dropped); {@code null} for NaN and the infinities, which JSON cannot express.
     */
    JsonWriter value(double value, int decimals) {
        if (!Double.isFinite(value)) {
            return nullValue();
        }
        beforeValue();
        java.math.BigDecimal d = java.math.BigDecimal.valueOf(value).setScale(decimals, java.math.RoundingMode.HALF_EVEN).stripTrailingZeros();
        write(d.signum() == 0 ? "0" : d.toPlainString());
        return this;
    }

    JsonWriter value(boolean value) {
        beforeValue();
        write(Boolean.toString(value));
        return this;
    }

    /** A member {@code name: value} of the current object. */
    JsonWriter member(String name, String value) {
        return name(name).value(value);
    }

    JsonWriter member(String name, long value) {
        return name(name).value(value);
    }

    JsonWriter member(String name, double value, int decimals) {
        return name(name).value(value, decimals);
    }

    JsonWriter member(String name, boolean value) {
        return name(name).value(value);
    }

    /** Checks that the document is complete: one top-level value, every container closed. */
    void finish() {
        if (!topLevelWritten || !levels.isEmpty()) {
            throw new IllegalStateException("incomplete JSON document: " + levels.size() + " container(s) still open");
        }
    }

    private JsonWriter end(Container container, String closing) {
        Level level = levels.peek();
        if (level == null || level.container != container || level.nameWritten) {
            throw new IllegalStateException("no " + container.name().toLowerCase(Locale.ROOT) + " to end here");
        }
        levels.pop();
        if (!level.empty) {
            newLine();
        }
        write(closing);
        return this;
    }

    /** Places a value: after a name in an object, as the next element of an array, or as the document. */
    private void beforeValue() {
        Level level = levels.peek();
        if (level == null) {
            if (topLevelWritten) {
                throw new IllegalStateException("a JSON document has exactly one top-level value");
            }
            topLevelWritten = true;
        } else if (level.container == Container.OBJECT) {
            if (!level.nameWritten) {
                throw new IllegalStateException("a value in an object needs a name first");
            }
            level.nameWritten = false;
        } else {
            newMember(level);
        }
    }

    private void newMember(Level level) {
        if (!level.empty) {
            write(",");
        }
        level.empty = false;
        newLine();
    }

    private void newLine() {
        write(System.lineSeparator());
        write(INDENT.repeat(levels.size()));
    }

    private void writeString(String s) {
        StringBuilder escaped = new StringBuilder(s.length() + 2).append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> escaped.append("\\\"");
                case '\\' -> escaped.append("\\\\");
                case '\b' -> escaped.append("\\b");
                case '\f' -> escaped.append("\\f");
                case '\n' -> escaped.append("\\n");
                case '\r' -> escaped.append("\\r");
                case '\t' -> escaped.append("\\t");
                default -> {
                    // Control characters must be escaped; everything beyond ASCII is, to keep the output encoding-proof.
                    // Surrogate pairs become two escapes, which is how JSON spells characters beyond the BMP.
                    if (c < 0x20 || c > 0x7e) {
                        escaped.append("\\u").append(HEX[c >> 12 & 0xf]).append(HEX[c >> 8 & 0xf])
                                .append(HEX[c >> 4 & 0xf]).append(HEX[c & 0xf]);
                    } else {
                        escaped.append(c);
                    }
                }
            }
        }
        write(escaped.append('"').toString());
    }

    private void write(String text) {
        try {
            out.append(text);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
