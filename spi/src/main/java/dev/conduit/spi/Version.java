package dev.conduit.spi;

import java.util.Objects;

/**
 * A {@code major.minor.patch[-qualifier]} version, ordered numerically; a version with a qualifier
 * ({@code 1.2.0-SNAPSHOT}) orders before the same version without one, and qualifiers order by
 * their numbers where they have them ({@code 2.0.0-rc9} before {@code 2.0.0-rc10}).
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
     * Parses {@code 1}, {@code 1.2}, {@code 1.2.3} or {@code 1.2.3-qualifier}, the numbers in ASCII
     * digits: until 2026-12-07 any script's were taken, so that Arabic-Indic one and two parsed
     * as {@code 1.2.0} (VersionTest#refusesMalformedTextNamingItAndTheExpectedForm).
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
            // Integer.parseInt takes a plus sign and any script's digits: a version is written in ASCII ones.
            if (n[i] < 0 || !parts[i].chars().allMatch(c -> isDigit((char) c))) {
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
            c = compareQualifiers(qualifier, o.qualifier);
        }
        return c;
    }

    /**
     * Qualifiers run by run, a run being all digits or all else: digits by their number ({@code rc9}
     * before {@code rc10}, which plain text order put the other way, so that of two plugins with one
     * name the older won), other runs as text, digits before other text; then the one with runs left
     * is later, and a tie (as {@code rc01} and {@code rc1}) goes by text, as {@code equals} does.
     */
    private static int compareQualifiers(String a, String b) {
        int i = 0;
        int j = 0;
        while (i < a.length() && j < b.length()) {
            boolean digitsA = isDigit(a.charAt(i));
            boolean digitsB = isDigit(b.charAt(j));
            int endA = runEnd(a, i, digitsA);
            int endB = runEnd(b, j, digitsB);
            int c;
            if (digitsA && digitsB) {
                String x = withoutLeadingZeros(a.substring(i, endA));
                String y = withoutLeadingZeros(b.substring(j, endB));
                c = x.length() != y.length() ? Integer.compare(x.length(), y.length()) : x.compareTo(y);
            } else if (digitsA != digitsB) {
                c = digitsA ? -1 : 1;
            } else {
                c = a.substring(i, endA).compareTo(b.substring(j, endB));
            }
            if (c != 0) return c;
            i = endA;
            j = endB;
        }
        int c = Integer.compare(a.length() - i, b.length() - j);
        return c != 0 ? c : a.compareTo(b);
    }

    private static boolean isDigit(char c) {
        return c >= '0' && c <= '9';
    }

    private static int runEnd(String s, int from, boolean digits) {
        int end = from;
        while (end < s.length() && isDigit(s.charAt(end)) == digits) end++;
        return end;
    }

    private static String withoutLeadingZeros(String digits) {
        int k = 0;
        while (k < digits.length() - 1 && digits.charAt(k) == '0') k++;
        return digits.substring(k);
    }

    @Override
    public String toString() {
        return major + "." + minor + "." + patch + (qualifier.isEmpty() ? "" : "-" + qualifier);
    }
}
