package dev.conduit.spi;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.regex.Pattern;

/**
 * A typed configuration key with its default and its documentation.
 *
 * <p>Declared by the runtime and by plugins ({@link ConduitPlugin#configKeys()}); read through
 * {@link Config#get(ConfigKey)}. A key named {@code posix.dir} is set by the builder
 * ({@code .set("posix.dir", "/mnt/shared")}), the system property {@code conduit.posix.dir} or the
 * environment variable {@code CONDUIT_POSIX_DIR}, strongest first. Plugin keys start with the
 * plugin's name; a {@code -} in a name (a plugin called {@code dev-dax}) becomes {@code _} in the
 * variable, as a {@code .} does, so {@code a.max-size} and {@code a.max.size} would share one: the
 * runtime refuses a plugin one of whose keys has the variable of another of its keys, of a
 * runtime key, or of a key of a plugin in use found before it (a plugin the {@code transports}
 * setting leaves out gives such a variable up: its keys are not read).
 *
 * <p>A plugin's own rule on a value (a multiple of 64, numeric user ids) belongs in the key,
 * through {@link #withCheck}: the runtime parses every declared key when the {@code Conduit} is
 * built, so a value the rule refuses fails the build, in the form of any malformed value, even on a
 * host where the plugin is never opened.
 *
 * <p>Instances are immutable and compared by name.
 *
 * @param <T> the type of the value
 */
public final class ConfigKey<T> {

    private static final Pattern NAME = Pattern.compile("[a-z][a-z0-9-]*(\\.[a-z][a-z0-9-]*)*");
    /** Digits and a unit: none, {@code b}, or {@code k}/{@code m}/{@code g}/{@code t} with an optional {@code b} or {@code ib}. */
    private static final Pattern SIZE = Pattern.compile("(\\d+)\\s*(?:([kmgt])(?:i?b)?|b)?", Pattern.CASE_INSENSITIVE);
    /** An optional minus and ASCII digits: {@link Long#parseLong} alone takes a plus sign and any script's digits too. */
    private static final Pattern INTEGER = Pattern.compile("-?\\d+");
    private static final Pattern DURATION = Pattern.compile("(\\d+)\\s*(ns|us|ms|s|m|h)", Pattern.CASE_INSENSITIVE);

    private final String name;
    private final Class<T> type;
    private final T defaultValue;
    private final String expectedForm;
    private final String doc;
    private final Function<String, T> parser;
    /** The plugin's own rule on a parsed value ({@link #withCheck}); accepts everything by default. */
    private final Consumer<? super T> check;

    private ConfigKey(String name, Class<T> type, T defaultValue, String expectedForm, String doc, Function<String, T> parser) {
        this(name, type, defaultValue, expectedForm, doc, parser, value -> { });
    }

    private ConfigKey(String name, Class<T> type, T defaultValue, String expectedForm, String doc, Function<String, T> parser,
                      Consumer<? super T> check) {
        if (!NAME.matcher(Objects.requireNonNull(name, "name")).matches()) {
            throw new IllegalArgumentException("config key name '" + name + "' must be lower-case words (letters, digits, '-') separated by dots, e.g. posix.dir");
        }
        this.name = name;
        this.type = Objects.requireNonNull(type, "type");
        this.defaultValue = defaultValue;
        this.expectedForm = Objects.requireNonNull(expectedForm, "expectedForm");
        this.doc = Objects.requireNonNull(doc, "doc");
        this.parser = Objects.requireNonNull(parser, "parser");
        this.check = Objects.requireNonNull(check, "check");
    }

    /**
     * This key with a further rule its parsed value must meet, such as "a multiple of 64" or
     * "numeric user ids": {@link #parse} runs {@code check} on every value it parses, so a value
     * that breaks the rule fails the {@code Conduit}'s build as a malformed one does, naming key,
     * variable, value, source and {@code expectedForm}. {@code check} refuses a value by throwing
     * {@link IllegalArgumentException}; its message, if any, says what is wrong with it ("item 'bob'
     * is not a number") and goes into the error before the expected form, so it must not carry more
     * than the value holds. Anything else it throws, an {@code Error} too (an {@code assert} of the
     * check's) and a checked exception thrown undeclared (Kotlin, Lombok's {@code @SneakyThrows}), is taken for a fault of the check, not of the value: {@link #parse} then throws a
     * {@link ConfigException} that says so, with what was thrown as its cause, and the runtime
     * marks the key's plugin {@code BROKEN} instead of failing the build; only the JVM's own errors
     * (out of memory, a stack overflow) pass as they are. It sees this key's value alone: a rule
     * between keys belongs in {@link ConduitPlugin#checkConfig}. Since SPI 1.1.
     *
     * <p>It is run on the default here, once: the runtime takes the default as it is when nothing
     * sets the key, so a default the rule refuses is refused as a number key's default outside its
     * range is (until 2026-12-07 it was taken, and the plugin ran with a value no setting could
     * give, ConfigKeyTest#aCheckedKeyRefusesADefaultItsCheckRefusesNamingTheKeyAndWhy). A check
     * that fails on the default (throws anything but {@link IllegalArgumentException}) is left to
     * {@link #parse} to judge on the values set.
     *
     * @param expectedForm the accepted form with the rule, replacing this key's, e.g. "a size in
     *                     bytes from 4096 to 1073741824 and a multiple of 64, e.g. 8k"
     * @return a new key with this one's name, type, default and doc
     * @throws IllegalArgumentException if {@code check} refuses the default, naming the key, the
     *                                  default and what the check said
     */
    public ConfigKey<T> withCheck(String expectedForm, Consumer<? super T> check) {
        Objects.requireNonNull(check, "check");
        Consumer<? super T> before = this.check;
        ConfigKey<T> checked = new ConfigKey<>(name, type, defaultValue, expectedForm, doc, parser, value -> {
            before.accept(value);
            check.accept(value);
        });
        if (defaultValue != null) {
            try {
                checked.check.accept(defaultValue);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("config key " + name + ": default " + defaultValue + " does not meet the key's own rule ("
                        + (e.getMessage() != null ? e.getMessage() + "; " : "") + "expected " + expectedForm + "): nothing could set "
                        + "the value the plugin would run with when the key is unset; give a default the rule takes", e);
            } catch (Throwable e) { // a checked one too, thrown undeclared (Kotlin, @SneakyThrows)
                if (Cleanup.isTheJvmsOwn(e)) throw (VirtualMachineError) e;
                // A fault of the check, not of the default: parse names it on the values set.
            }
        }
        return checked;
    }

    /**
     * A text value; {@code defaultValue} may be {@code null} for "unset". Unlike every other kind of
     * key, the value is given as set, blanks at its ends included: only the plugin knows whether
     * its text may mean one. Text that names something (an alias, a device, a host) never does, and
     * its plugin strips it, as devdax does {@code devdax.device} ({@code " pmem0"} selects
     * {@code pmem0}); an error quotes the value as set ({@link #badValue}), so that a blank shows.
     */
    public static ConfigKey<String> string(String name, String defaultValue, String doc) {
        return new ConfigKey<>(name, String.class, defaultValue, "any text", doc, s -> s);
    }

    /**
     * A path; {@code defaultValue} may be {@code null} for "unset". Leading and trailing white space
     * is dropped, as for the other typed keys: {@code CONDUIT_SHARED_DIR="/dev/shm "} from an
     * environment file means {@code /dev/shm}, not a directory whose name ends in a space.
     */
    public static ConfigKey<Path> path(String name, Path defaultValue, String doc) {
        return new ConfigKey<>(name, Path.class, defaultValue, "a file system path", doc, s -> {
            if (s.isBlank()) throw new IllegalArgumentException();
            return Path.of(s.strip());
        });
    }

    /** {@code true}/{@code false} (also {@code yes}/{@code no}, {@code 1}/{@code 0}, {@code on}/{@code off}). */
    public static ConfigKey<Boolean> bool(String name, boolean defaultValue, String doc) {
        return new ConfigKey<>(name, Boolean.class, defaultValue, "true or false (also yes/no, on/off, 1/0)", doc, s -> switch (s.trim().toLowerCase(Locale.ROOT)) {
            case "true", "yes", "1", "on" -> Boolean.TRUE;
            case "false", "no", "0", "off" -> Boolean.FALSE;
            default -> throw new IllegalArgumentException();
        });
    }

    /**
     * A whole number in {@code [min, max]}: ASCII digits, with a minus sign for a negative one.
     *
     * @throws IllegalArgumentException if {@code defaultValue} is outside {@code [min, max]}, naming
     *                                  the key: see {@link #requireDefaultInRange}
     */
    public static ConfigKey<Long> integer(String name, long defaultValue, long min, long max, String doc) {
        requireDefaultInRange(name, defaultValue, min, max);
        return new ConfigKey<>(name, Long.class, defaultValue, "a whole number from " + min + " to " + max, doc, s -> {
            String digits = s.trim();
            if (!INTEGER.matcher(digits).matches()) throw new IllegalArgumentException();
            long v = Long.parseLong(digits);
            if (v < min || v > max) throw new IllegalArgumentException();
            return v;
        });
    }

    /**
     * A size in bytes, with an optional binary suffix: {@code 4096}, {@code 64k}, {@code 256m}, {@code 1g}, {@code 2GiB}.
     *
     * @throws IllegalArgumentException if {@code defaultValue} is below {@code min}, naming the key:
     *                                  see {@link #requireDefaultInRange}
     */
    public static ConfigKey<Long> bytes(String name, long defaultValue, long min, String doc) {
        return bytes(name, defaultValue, min, Long.MAX_VALUE, doc);
    }

    /**
     * A size in bytes in {@code [min, max]}, written as {@link #bytes(String, long, long, String)} reads it.
     *
     * @throws IllegalArgumentException if {@code defaultValue} is outside {@code [min, max]}, naming
     *                                  the key: see {@link #requireDefaultInRange}
     */
    public static ConfigKey<Long> bytes(String name, long defaultValue, long min, long max, String doc) {
        requireDefaultInRange(name, defaultValue, min, max);
        return new ConfigKey<>(name, Long.class, defaultValue, sizeForm(min, max, ""), doc, s -> {
            var m = SIZE.matcher(s.trim());
            if (!m.matches()) throw new IllegalArgumentException();
            String unit = m.group(2);
            int shift = unit == null ? 0 : switch (unit.toLowerCase(Locale.ROOT)) {
                case "k" -> 10;
                case "m" -> 20;
                case "g" -> 30;
                default -> 40;
            };
            long n = parseDigits(m.group(1), TOO_LARGE);
            if (n > (Long.MAX_VALUE >> shift)) throw new Refused(TOO_LARGE);
            long v = n << shift;
            if (v < min || v > max) throw new IllegalArgumentException();
            return v;
        });
    }

    /**
     * A size in bytes in {@code [min, max]}, written as {@link #bytes(String, long, long, String)}
     * reads it, rounded up to a power of two (a ring's size): {@code 3m} reads as 4194304, which
     * is then the value in force, what {@link Config#get} returns and {@code conduit info} shows.
     * {@code min}, {@code max} and {@code defaultValue} must be powers of two, so that a value in
     * range stays in range once rounded. Since SPI 1.1.
     */
    public static ConfigKey<Long> powerOfTwoBytes(String name, long defaultValue, long min, long max, String doc) {
        for (long bound : new long[] {min, max, defaultValue}) {
            if (Long.bitCount(bound) != 1) {
                throw new IllegalArgumentException("config key " + name + ": default " + defaultValue + ", min " + min + " and max " + max
                        + " must be powers of two, so that a value rounded up to one stays in range");
            }
        }
        ConfigKey<Long> exact = bytes(name, defaultValue, min, max, doc);
        return new ConfigKey<>(name, Long.class, defaultValue, sizeForm(min, max, ", rounded up to a power of two"), doc, s -> {
            long v = exact.parser.apply(s);
            return Long.bitCount(v) == 1 ? v : Long.highestOneBit(v) << 1;
        });
    }

    /**
     * Refuses a default that no value of the key could be: the runtime takes the default as it is
     * when nothing sets the key, so that until 2026-12-07 a plugin ran with it unchecked, and
     * {@code conduit info} listed it beside an expected form that excludes it
     * (ConfigKeyTest#aNumberKeyRefusesADefaultOutsideItsRangeNamingTheKeyAndTheRange). A
     * {@code min} above {@code max} leaves no default in range, and is refused so.
     */
    private static void requireDefaultInRange(String name, long defaultValue, long min, long max) {
        if (defaultValue < min || defaultValue > max) {
            throw new IllegalArgumentException("config key " + name + ": default " + defaultValue + " is outside [" + min + ", " + max
                    + "], the values it takes: nothing could set the value the plugin would run with when the key is unset; give a "
                    + "default in range");
        }
    }

    private static String sizeForm(long min, long max, String rounding) {
        String range = max == Long.MAX_VALUE ? "of at least " + min : "from " + min + " to " + max;
        return "a size in bytes " + range + rounding + ", e.g. " + sizeExamples(min, max);
    }

    private static final long[] EXAMPLE_SIZES = {4096, 64L << 10, 256L << 20, 1L << 30};
    private static final String[] EXAMPLE_SIZE_TEXTS = {"4096", "64k", "256m", "1g"};

    /**
     * Examples of sizes a key in {@code [min, max]} takes: those of 4096, 64k, 256m and 1g that it
     * takes, else {@code min}. Until 2026-12-03 every size key gave all four, so that
     * {@code posix.queue.size} (64k to 1g) refused {@code 100} with "e.g. 4096", which it refuses too,
     * and {@code memfd.inbound.bounce.max} (at least 1m) 4096 and 64k
     * (ConfigKeyTest#theExamplesOfASizeKeyAreSizesItTakes).
     */
    private static String sizeExamples(long min, long max) {
        StringBuilder examples = new StringBuilder();
        for (int i = 0; i < EXAMPLE_SIZES.length; i++) {
            if (EXAMPLE_SIZES[i] < min || EXAMPLE_SIZES[i] > max) continue;
            if (!examples.isEmpty()) examples.append(", ");
            examples.append(EXAMPLE_SIZE_TEXTS[i]);
        }
        return examples.isEmpty() ? Long.toString(min) : examples.toString();
    }

    /**
     * A positive duration with a unit: {@code 250us}, {@code 100ms}, {@code 5s}, {@code 2m}, {@code 1h}.
     * At most {@link Long#MAX_VALUE} nanoseconds (about 292 years), so {@link Duration#toNanos()}
     * never throws; {@code System.nanoTime()} plus it may overflow, so a deadline made of it is
     * compared by difference ({@code deadline - System.nanoTime() > 0}), never with {@code <}.
     *
     * @throws IllegalArgumentException if {@code defaultValue} is longer than that (a "no timeout" of
     *                                  {@code ChronoUnit.FOREVER.getDuration()}), naming the key and
     *                                  the longest it takes: listing the value in force would
     *                                  overflow, and until 2026-12-07 made {@code conduit info} fail
     *                                  for every plugin; or if it is not positive, as no value is
     *                                  (until 2026-12-07 taken, and run with when nothing set the key)
     */
    public static ConfigKey<Duration> duration(String name, Duration defaultValue, String doc) {
        if (defaultValue != null) {
            try {
                defaultValue.toNanos();
            } catch (ArithmeticException e) {
                throw new IllegalArgumentException("config key " + name + ": default " + defaultValue + " is " + TOO_LONG
                        + "; for no limit, give that longest, Duration.ofNanos(Long.MAX_VALUE)", e);
            }
            if (!defaultValue.isPositive()) {
                throw new IllegalArgumentException("config key " + name + ": default " + defaultValue + " is not positive, as every value "
                        + "the key takes is; give a positive default");
            }
        }
        return new ConfigKey<>(name, Duration.class, defaultValue, "a positive duration with a unit (ns, us, ms, s, m, h), e.g. 100ms", doc, s -> {
            var m = DURATION.matcher(s.trim());
            if (!m.matches()) throw new IllegalArgumentException();
            long n = parseDigits(m.group(1), TOO_LONG);
            Duration d;
            try {
                d = switch (m.group(2).toLowerCase(Locale.ROOT)) {
                    case "ns" -> Duration.ofNanos(n);
                    case "us" -> Duration.ofNanos(Math.multiplyExact(n, 1000L));
                    case "ms" -> Duration.ofMillis(n);
                    case "s" -> Duration.ofSeconds(n);
                    case "m" -> Duration.ofMinutes(n);
                    default -> Duration.ofHours(n);
                };
                // Positive, and representable in nanoseconds (about 292 years), so that toNanos() never throws.
                d.toNanos();
            } catch (ArithmeticException e) {
                throw new Refused(TOO_LONG);
            }
            if (d.isZero()) throw new IllegalArgumentException();
            return d;
        });
    }

    /**
     * A duration as {@link #duration(String, Duration, String)} reads it, of at least {@code min}:
     * for an interval a thread sleeps between rounds of its work, which a shorter one (a mistyped
     * {@code 1ns}) would turn into a busy loop that takes a core.
     *
     * @throws IllegalArgumentException if {@code defaultValue} is shorter than {@code min} (until
     *                                  2026-12-07 taken, and the thread ran busy when nothing set
     *                                  the key), or as {@link #duration(String, Duration, String)}
     *                                  throws
     */
    public static ConfigKey<Duration> duration(String name, Duration defaultValue, Duration min, String doc) {
        String shortest = durationText(min);
        ConfigKey<Duration> any = duration(name, defaultValue, doc);
        if (defaultValue != null && defaultValue.compareTo(min) < 0) {
            throw new IllegalArgumentException("config key " + name + ": default " + durationText(defaultValue) + " is shorter than "
                    + shortest + ", the shortest the key takes; give a default of at least that");
        }
        return new ConfigKey<>(name, Duration.class, defaultValue, "a duration with a unit (ns, us, ms, s, m, h) of at least " + shortest
                + ", e.g. 100ms", doc, s -> {
            Duration d = any.parser.apply(s);
            if (d.compareTo(min) < 0) {
                throw new Refused("shorter than " + shortest + ", the shortest this key takes: a thread waits this long between its "
                        + "rounds, and a shorter wait would keep it busy");
            }
            return d;
        });
    }

    private static final String TOO_LARGE = "larger than the largest size a key takes, " + Long.MAX_VALUE + " bytes (8 EiB - 1)";
    private static final String TOO_LONG = "longer than the longest duration a key takes, " + Long.MAX_VALUE + "ns (about 292 years)";

    /** Digits the form matched: a failure can only be a number too large for a {@code long}, which {@code tooLarge} words. */
    private static long parseDigits(String digits, String tooLarge) {
        try {
            return Long.parseLong(digits);
        } catch (NumberFormatException e) {
            throw new Refused(tooLarge);
        }
    }

    /**
     * A parser's refusal of a value in the expected form, whose message says why (too large for
     * the type): the expected form alone would not, since the value has that form. A parser's other
     * exceptions (NumberFormatException's message) say nothing a user can act on.
     */
    private static final class Refused extends IllegalArgumentException {
        @java.io.Serial private static final long serialVersionUID = 1L;

        Refused(String why) {
            super(why);
        }
    }

    /**
     * {@code d} as a {@link #duration} key reads it, in the largest unit that says it exactly:
     * {@code 20ms}, {@code 10s}, {@code 1500ms}, {@code 7ns}. For messages and listings that show a
     * duration a user may set again as shown ({@link Duration#toString()} is ISO-8601,
     * {@code PT0.02S}, which no key accepts). Since SPI 1.1.
     *
     * @throws ArithmeticException if {@code d} is too long for nanoseconds, as no key's value is
     */
    public static String durationText(Duration d) {
        long nanos = d.toNanos();
        for (int i = 0; i < DURATION_UNITS.length; i++) {
            if (nanos % DURATION_UNIT_NANOS[i] == 0) return nanos / DURATION_UNIT_NANOS[i] + DURATION_UNITS[i];
        }
        return nanos + "ns";
    }

    private static final String[] DURATION_UNITS = {"h", "m", "s", "ms", "us"};
    private static final long[] DURATION_UNIT_NANOS = {3_600_000_000_000L, 60_000_000_000L, 1_000_000_000L, 1_000_000L, 1_000L};

    /**
     * One constant of {@code type}, written in any case (its expected form lists them in lower
     * case), matched ignoring case: the constants of an enum named in lower case too, which until
     * 2026-12-07 no value could set.
     *
     * @throws IllegalArgumentException if two constants of {@code type} differ only in case, which
     *                                  no value could tell apart
     */
    public static <E extends Enum<E>> ConfigKey<E> enumeration(String name, Class<E> type, E defaultValue, String doc) {
        Map<String, E> byLowerCase = new LinkedHashMap<>();
        for (E constant : type.getEnumConstants()) {
            E same = byLowerCase.putIfAbsent(constant.name().toLowerCase(Locale.ROOT), constant);
            if (same != null) {
                throw new IllegalArgumentException("config key " + name + ": constants " + same.name() + " and " + constant.name() + " of "
                        + type.getName() + " differ only in case, and a value names a constant in any case: rename one, or give the "
                        + "key an enum without either");
            }
        }
        return new ConfigKey<>(name, type, defaultValue, "one of " + byLowerCase.keySet(), doc, s -> {
            E constant = byLowerCase.get(s.trim().toLowerCase(Locale.ROOT));
            if (constant == null) throw new IllegalArgumentException();
            return constant;
        });
    }

    /**
     * A comma-separated list; blanks around items are dropped, empty items ignored.
     *
     * @param defaultValue the items when nothing sets the key, {@code List.of()} for none: unlike a
     *                     text or path key, a list key has no unset value
     * @throws NullPointerException if {@code defaultValue} is null or holds null, naming the key
     *                              (until 2026-12-07 {@code List.copyOf}'s, which named nothing)
     */
    @SuppressWarnings({"unchecked", "rawtypes"})
    public static ConfigKey<List<String>> list(String name, List<String> defaultValue, String doc) {
        Objects.requireNonNull(defaultValue, () -> "config key " + name + ": default is null, and a list key has no unset value: give "
                + "List.of() for none");
        if (defaultValue.stream().anyMatch(Objects::isNull)) { // not contains(null), which List.of()'s lists refuse
            throw new NullPointerException("config key " + name + ": default " + defaultValue + " holds null, which no value of the "
                    + "key can: give its items as text");
        }
        return new ConfigKey<>(name, (Class) List.class, List.copyOf(defaultValue), "a comma-separated list", doc,
                s -> Arrays.stream(s.split(",")).map(String::trim).filter(x -> !x.isEmpty()).toList());
    }

    /**
     * Parses {@code raw}, read from {@code source} (e.g. "environment"), and runs the key's
     * {@linkplain #withCheck check} on the value.
     *
     * @throws ConfigException naming key, value, source and the expected form, and what the check
     *                         found wrong, if it says; or, with a cause, and only then, naming key,
     *                         value, source and what the check threw when it threw anything but
     *                         {@link IllegalArgumentException}: a fault of the check, not of the value
     * @throws VirtualMachineError the check's, when it is the JVM's own (out of memory, a stack overflow)
     */
    public T parse(String raw, String source) {
        T value;
        try {
            value = parser.apply(raw);
        } catch (Refused e) {
            throw bad(raw, source, e.getMessage() + "; ");
        } catch (RuntimeException e) {
            // An empty variable (CONDUIT_X= in an environment file, docker -e CONDUIT_X=) is often meant as unset; it is not.
            throw bad(raw, source, raw.isBlank() ? "the value is empty, which does not unset the key: remove the setting for its "
                    + "default; " : "");
        }
        try {
            check.accept(value);
        } catch (IllegalArgumentException e) {
            // A parser's own message (NumberFormatException's) says nothing a user can act on; a check's says what it refused.
            throw bad(raw, source, e.getMessage() != null ? e.getMessage() + "; " : "");
        } catch (Throwable e) { // a checked one too, thrown undeclared (Kotlin, @SneakyThrows)
            if (Cleanup.isTheJvmsOwn(e)) throw (VirtualMachineError) e;
            // Called a bad value, it would send the user to mend a value that may well be right.
            throw new ConfigException(("the check of " + describe() + " threw " + e.getClass().getName()
                    + (e.getMessage() != null ? " (" + e.getMessage() + ")" : "") + " on value '" + raw + "' (from " + source
                    + "): a fault of the check, not of the value; report it to the key's author, or leave the setting out "
                    + "(the check does not judge the default)").replace("\0", "\\0"), e);
        }
        return value;
    }

    /**
     * The error {@link #parse} throws for a bad value, for a rule between keys that
     * {@link ConduitPlugin#checkConfig} refuses: "bad value '{@code value}' for config key
     * conduit.x.y (CONDUIT_X_Y) (from {@code source}): {@code reason}; expected ... ". Since SPI 1.1.
     *
     * @param value  the value as set (or as a key reads it back)
     * @param source where it comes from, {@link Config#sourceOf}
     * @param reason what is wrong with it, naming the other key and the remedy
     */
    public ConfigException badValue(String value, String source, String reason) {
        return bad(value, source, reason + "; ");
    }

    private ConfigException bad(String raw, String source, String reason) {
        // A NUL (possible through the builder or a system property) would cut the message short where C code prints it.
        return new ConfigException(("bad value '" + raw + "' for " + describe() + " (from " + source + "): " + reason + "expected "
                + expectedForm + ". " + doc).replace("\0", "\\0"));
    }

    /** The key's name, e.g. {@code posix.dir}. */
    public String name() {
        return name;
    }

    /** The system property that sets it, e.g. {@code conduit.posix.dir}. */
    public String propertyName() {
        return "conduit." + name;
    }

    /** The environment variable that sets it, e.g. {@code CONDUIT_POSIX_DIR}. */
    public String environmentName() {
        return "CONDUIT_" + name.replace('.', '_').replace('-', '_').toUpperCase(Locale.ROOT);
    }

    /**
     * The key as a message names it, so that the reader can set it either way:
     * {@code posix.dir (CONDUIT_POSIX_DIR)}. Since SPI 1.1.
     */
    public String nameAndVariable() {
        return name + " (" + environmentName() + ")";
    }

    public Class<T> type() {
        return type;
    }

    /** The value when no source sets one; may be {@code null} ("unset"). */
    public T defaultValue() {
        return defaultValue;
    }

    /** The accepted form, e.g. "a size in bytes of at least 4096, e.g. 4096, 64k, 256m, 1g" (the examples are sizes it takes). */
    public String expectedForm() {
        return expectedForm;
    }

    /** What the key does, for {@code conduit info}. */
    public String doc() {
        return doc;
    }

    private String describe() {
        return "config key " + propertyName() + " (" + environmentName() + ")";
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ConfigKey<?> k && k.name.equals(name);
    }

    @Override
    public int hashCode() {
        return name.hashCode();
    }

    @Override
    public String toString() {
        return name;
    }
}
