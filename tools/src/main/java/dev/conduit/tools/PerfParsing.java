package dev.conduit.tools;

import dev.conduit.spi.ConfigKey;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.TypeConversionException;

import java.time.Duration;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** How {@code conduit perf} reads sizes, durations, warm-ups and test names; picocli turns each failure into exit code 2. */
final class PerfParsing {

    /** The largest message or region size accepted on the command line. */
    static final long MAX_SIZE = 1L << 30;

    private static final Pattern SIZE = Pattern.compile("(\\d{1,10})([kKmMgG]?)");
    private static final Pattern DURATION = Pattern.compile("(\\d{1,12})(ns|us|ms|s|m|h)");

    private PerfParsing() {
    }

    /** {@code 8}, {@code 4k} (4096), {@code 1m} (1048576), {@code 1g}: from 1 byte to 1 GiB. */
    static long size(String text) {
        Matcher m = SIZE.matcher(text.trim());
        if (!m.matches()) {
            throw new IllegalArgumentException("'" + text + "' is not a size: write a whole number of bytes with an optional suffix k, m or g "
                    + "(powers of 1024), e.g. 8, 4k, 1m");
        }
        long value = Long.parseLong(m.group(1));
        long bytes = switch (m.group(2).toLowerCase(Locale.ROOT)) {
            case "k" -> value << 10;
            case "m" -> value << 20;
            case "g" -> value << 30;
            default -> value;
        };
        if (value == 0 || bytes <= 0 || bytes > MAX_SIZE || (bytes >> shift(m.group(2))) != value) {
            throw new IllegalArgumentException("size '" + text + "' is outside 1 byte to 1g");
        }
        return bytes;
    }

    private static int shift(String suffix) {
        return switch (suffix.toLowerCase(Locale.ROOT)) {
            case "k" -> 10;
            case "m" -> 20;
            case "g" -> 30;
            default -> 0;
        };
    }

    /** {@code 500ms}, {@code 2s}, {@code 1m} (a minute): a positive whole number with a unit ns, us, ms, s, m or h. */
    static Duration duration(String text) {
        Matcher m = DURATION.matcher(text.trim());
        if (!m.matches()) {
            throw new IllegalArgumentException("'" + text + "' is not a duration: write a whole number with a unit ns, us, ms, s, m or h, "
                    + "e.g. 500ms, 2s");
        }
        long value = Long.parseLong(m.group(1));
        Duration d = switch (m.group(2)) {
            case "ns" -> Duration.ofNanos(value);
            case "us" -> Duration.ofNanos(value * 1_000);
            case "ms" -> Duration.ofMillis(value);
            case "s" -> Duration.ofSeconds(value);
            case "m" -> Duration.ofMinutes(value);
            default -> Duration.ofHours(value);
        };
        if (d.isZero()) throw new IllegalArgumentException("duration '" + text + "' must be longer than 0");
        if (d.compareTo(Duration.ofDays(1)) > 0) throw new IllegalArgumentException("duration '" + text + "' is longer than a day");
        return d;
    }

    /** The short form of a size: 8, 4k, 1m. */
    static String formatSize(long bytes) {
        if (bytes >= 1L << 30 && bytes % (1L << 30) == 0) return (bytes >> 30) + "g";
        if (bytes >= 1L << 20 && bytes % (1L << 20) == 0) return (bytes >> 20) + "m";
        if (bytes >= 1L << 10 && bytes % (1L << 10) == 0) return (bytes >> 10) + "k";
        return Long.toString(bytes);
    }

    /** A warm-up: a number of iterations, or a duration. */
    record Warmup(long iterations, Duration duration) {
        static final Warmup NONE = new Warmup(0, null);

        boolean isDuration() {
            return duration != null;
        }

        @Override
        public String toString() {
            return isDuration() ? ConfigKey.durationText(duration) : Long.toString(iterations);
        }
    }

    /** The most iterations of {@code -n}, and of {@code -w}. */
    static final long MAX_ITERATIONS = 1_000_000_000L;

    static Warmup warmup(String text) {
        String t = text.trim();
        if (t.matches("\\d+")) {
            // The bound of -n: a warm-up is a measurement not recorded, and a digit too many runs for hours before the first row.
            long n = t.length() > 18 ? Long.MAX_VALUE : Long.parseLong(t);
            if (n > MAX_ITERATIONS) {
                throw new IllegalArgumentException("-w must be from 0 to " + MAX_ITERATIONS + " iterations or a duration, not " + t);
            }
            return n == 0 ? Warmup.NONE : new Warmup(n, null);
        }
        try {
            return new Warmup(0, duration(t));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("'" + text + "' is not a warm-up: write a number of iterations (e.g. 100, 0 for none) "
                    + "or a duration (e.g. 500ms)");
        }
    }

    /** A TCP endpoint {@code HOST:PORT} or just {@code PORT} (on 127.0.0.1). */
    record HostPort(String host, int port) {
        @Override
        public String toString() {
            return (host.contains(":") ? "[" + host + "]" : host) + ":" + port;
        }
    }

    static HostPort hostPort(String text) {
        String t = text.trim();
        String host = "127.0.0.1";
        String port = t;
        int colon = t.lastIndexOf(':');
        if (colon >= 0) {
            host = t.substring(0, colon);
            port = t.substring(colon + 1);
            if (host.startsWith("[") && host.endsWith("]")) host = host.substring(1, host.length() - 1);
            if (host.isEmpty()) throw new IllegalArgumentException("'" + text + "' names no host; write HOST:PORT, e.g. 127.0.0.1:7777");
        }
        if (!port.matches("\\d{1,5}") || Integer.parseInt(port) > 65535) {
            throw new IllegalArgumentException("'" + text + "' is not HOST:PORT with a port from 0 to 65535, e.g. 127.0.0.1:7777");
        }
        return new HostPort(host, Integer.parseInt(port));
    }

    /** Whether {@code text} looks like {@code HOST:PORT} (what {@code --connect} takes as its value). */
    static boolean looksLikeHostPort(String text) {
        return text.matches(".*:\\d{1,5}") && !text.startsWith("-");
    }

    // ------------------------------------------------------------------ picocli converters

    static final class SizeConverter implements ITypeConverter<Long> {
        @Override
        public Long convert(String value) {
            try {
                return size(value);
            } catch (IllegalArgumentException e) {
                throw new TypeConversionException(e.getMessage());
            }
        }
    }

    static final class DurationConverter implements ITypeConverter<Duration> {
        @Override
        public Duration convert(String value) {
            try {
                return duration(value);
            } catch (IllegalArgumentException e) {
                throw new TypeConversionException(e.getMessage());
            }
        }
    }

    static final class WarmupConverter implements ITypeConverter<Warmup> {
        @Override
        public Warmup convert(String value) {
            try {
                return warmup(value);
            } catch (IllegalArgumentException e) {
                throw new TypeConversionException(e.getMessage());
            }
        }
    }

    static final class TestConverter implements ITypeConverter<PerfTest> {
        @Override
        public PerfTest convert(String value) {
            try {
                return PerfTest.byLabel(value);
            } catch (IllegalArgumentException e) {
                throw new TypeConversionException(e.getMessage());
            }
        }
    }

    static final class HostPortConverter implements ITypeConverter<HostPort> {
        @Override
        public HostPort convert(String value) {
            try {
                return hostPort(value);
            } catch (IllegalArgumentException e) {
                throw new TypeConversionException(e.getMessage());
            }
        }
    }
}
