package dev.conduit.spi;

import java.util.Objects;

/**
 * A {@code major.minor.patch[-qualifier]} version, ordered numerically; a version with a qualifier
 * ({@code 1.2.0-SNAPSHOT}) orders before the same version without one.
 *
 * <p>What {@link ConduitPlugin#version()} returns; {@link ConduitPlugin#spiVersion()} returns the text
 * of one ({@link ConduitPlugin#SPI_VERSION}), which the runtime parses with {@link #parse}. The runtime
 * refuses a plugin whose SPI major version differs from its own and, of two plugins with one name,
 * keeps the higher version.
 *
 * @param major     the major number; SPI majors are incompatible with each other
 * @param minor     the minor number
 * @param patch     the patch number
 * @param qualifier the text after {@code -}, or empty
 */
public record Version(int major, int minor, int patch, String qualifier) implements Comparable<Version> {

    public Version {
        if (major < 0 || minor < 0 || patch < 0) {
            throw new IllegalArgumentException("version numbers must not be negative: " + major + "." + minor + "." + patch);
        }
        Objects.requireNonNull(qualifier, "qualifier");
    }

    /**
     * Parses {@code 1}, {@code 1.2}, {@code 1.2.3} or {@code 1.2.3-qualifier}.
     *
     * @throws IllegalArgumentException naming the text and the expected form
     */
    public static Version parse(String text) {
        Objects.requireNonNull(text, "text");
        int dash = text.indexOf('-');
        String numbers = dash < 0 ? text : text.substring(0, dash);
        String qualifier = dash < 0 ? "" : text.substring(dash + 1);
        String[] parts = numbers.split("\\.", -1);
        if (parts.length > 3 || numbers.isEmpty() || (dash >= 0 && qualifier.isEmpty())) {
            throw malformed(text);
        }
        int[] n = new int[3];
        for (int i = 0; i < parts.length; i++) {
            try {
                n[i] = Integer.parseInt(parts[i]);
            } catch (NumberFormatException e) {
                throw malformed(text);
            }
            if (n[i] < 0 || !parts[i].chars().allMatch(Character::isDigit)) {
                throw malformed(text);
            }
        }
        return new Version(n[0], n[1], n[2], qualifier);
    }

    private static IllegalArgumentException malformed(String text) {
        return new IllegalArgumentException("malformed version '" + text + "': expected major[.minor[.patch]][-qualifier], e.g. 1.2.0");
    }

    @Override
    public int compareTo(Version o) {
        int c = Integer.compare(major, o.major);
        if (c == 0) c = Integer.compare(minor, o.minor);
        if (c == 0) c = Integer.compare(patch, o.patch);
        if (c == 0 && !qualifier.equals(o.qualifier)) {
            if (qualifier.isEmpty()) return 1;
            if (o.qualifier.isEmpty()) return -1;
            c = qualifier.compareTo(o.qualifier);
        }
        return c;
    }

    @Override
    public String toString() {
        return major + "." + minor + "." + patch + (qualifier.isEmpty() ? "" : "-" + qualifier);
    }
}
