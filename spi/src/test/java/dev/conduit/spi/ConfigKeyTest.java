package dev.conduit.spi;

import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatNullPointerException;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ConfigKeyTest {

    private static final String SOURCE = "environment variable CONDUIT_TEST_KEY";

    /** Asserts that {@code raw} is refused with a message naming key, value (a NUL in it shown escaped), source and expected form. */
    private static void assertRefused(ConfigKey<?> key, String raw) {
        assertThatThrownBy(() -> key.parse(raw, SOURCE))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining(key.propertyName())
                .hasMessageContaining(key.environmentName())
                .hasMessageContaining("'" + raw.replace("\0", "\\0") + "'")
                .hasMessageContaining(SOURCE)
                .hasMessageContaining(key.expectedForm());
    }

    @Nested
    class Names {

        @Test
        void propertyAndEnvironmentNamesDeriveFromTheKeyName() {
            ConfigKey<String> key = ConfigKey.string("posix.dir", null, "doc");
            assertThat(key.name()).isEqualTo("posix.dir");
            assertThat(key.propertyName()).isEqualTo("conduit.posix.dir");
            assertThat(key.environmentName()).isEqualTo("CONDUIT_POSIX_DIR");
            assertThat(key).hasToString("posix.dir");
            assertThat(key.nameAndVariable()).as("as a message names it").isEqualTo("posix.dir (CONDUIT_POSIX_DIR)");
        }

        @Test
        void aPluginNameWithAHyphenCanPrefixKeys() {
            ConfigKey<String> key = ConfigKey.string("dev-dax.devices", null, "doc");
            assertThat(key.propertyName()).isEqualTo("conduit.dev-dax.devices");
            assertThat(key.environmentName()).isEqualTo("CONDUIT_DEV_DAX_DEVICES");
        }

        @ParameterizedTest
        @ValueSource(strings = {"", "Posix.dir", "posix..dir", ".posix", "posix.", "1posix", "posix.1dir", "posix_dir", "-posix", "posix.-dir", "posix dir"})
        void malformedKeyNamesAreRefused(String name) {
            assertThatIllegalArgumentException().isThrownBy(() -> ConfigKey.string(name, null, "doc"))
                    .withMessageContaining("'" + name + "'");
        }

        @Test
        void keysAreComparedByName() {
            ConfigKey<String> a = ConfigKey.string("a.b", "x", "one");
            ConfigKey<Boolean> b = ConfigKey.bool("a.b", true, "other");
            assertThat(a).isEqualTo(b).hasSameHashCodeAs(b);
            assertThat(a).isNotEqualTo(ConfigKey.string("a.c", "x", "one"));
        }

        @Test
        void metadataIsKept() {
            ConfigKey<Long> key = ConfigKey.integer("pool.slots", 8, 1, 64, "How many slots.");
            assertThat(key.type()).isEqualTo(Long.class);
            assertThat(key.defaultValue()).isEqualTo(8L);
            assertThat(key.doc()).isEqualTo("How many slots.");
            assertThat(key.expectedForm()).isEqualTo("a whole number from 1 to 64");
        }
    }

    @Nested
    class Strings {

        @Test
        void anyTextIsKeptAsIs() {
            ConfigKey<String> key = ConfigKey.string("x.name", null, "doc");
            assertThat(key.defaultValue()).isNull();
            assertThat(key.parse("  spaced, text  ", SOURCE)).isEqualTo("  spaced, text  ");
            assertThat(key.parse("", SOURCE)).isEmpty();
        }
    }

    @Nested
    class Paths {

        private final ConfigKey<Path> key = ConfigKey.path("posix.dir", Path.of("/dev/shm"), "The directory.");

        @Test
        void parsesAbsoluteAndRelativePaths() {
            assertThat(key.parse("/mnt/shared", SOURCE)).isEqualTo(Path.of("/mnt/shared"));
            assertThat(key.parse("relative/dir", SOURCE)).isEqualTo(Path.of("relative/dir"));
            assertThat(key.defaultValue()).isEqualTo(Path.of("/dev/shm"));
        }

        /** White space around a path, as an environment file leaves it, used to become part of the directory's name. */
        @Test
        void whiteSpaceAroundAPathIsDropped() {
            assertThat(key.parse(" /dev/shm \t", SOURCE)).isEqualTo(Path.of("/dev/shm"));
        }

        @ParameterizedTest
        @ValueSource(strings = {"", "   ", "a\u0000b"})
        void blankOrInvalidPathsAreRefused(String raw) {
            assertRefused(key, raw);
        }
    }

    @Nested
    class Booleans {

        private final ConfigKey<Boolean> key = ConfigKey.bool("thread.confine", false, "doc");

        @ParameterizedTest
        @ValueSource(strings = {"true", "TRUE", "yes", "Yes", "1", "on", " on "})
        void trueForms(String raw) {
            assertThat(key.parse(raw, SOURCE)).isTrue();
        }

        @ParameterizedTest
        @ValueSource(strings = {"false", "False", "no", "NO", "0", "off", "\toff"})
        void falseForms(String raw) {
            assertThat(key.parse(raw, SOURCE)).isFalse();
        }

        @ParameterizedTest
        @ValueSource(strings = {"", "maybe", "2", "y", "truee"})
        void otherTextIsRefused(String raw) {
            assertRefused(key, raw);
            assertThat(key.expectedForm()).isEqualTo("true or false (also yes/no, on/off, 1/0)");
        }
    }

    @Nested
    class Integers {

        private final ConfigKey<Long> key = ConfigKey.integer("pool.slots", 8, 1, 64, "doc");

        @ParameterizedTest
        @CsvSource({"1,1", "64,64", "' 17 ',17"})
        void acceptsWholeNumbersInRange(String raw, long expected) {
            assertThat(key.parse(raw, SOURCE)).isEqualTo(expected);
        }

        @ParameterizedTest
        @ValueSource(strings = {"0", "65", "-1", "1.5", "ten", "", "99999999999999999999", "0x10", "+5", "\u0661\u0660"})
        void refusesNumbersOutsideTheRangeOrMalformed(String raw) {
            assertRefused(key, raw);
        }

        @Test
        void expectedFormNamesTheRange() {
            assertThatThrownBy(() -> key.parse("65", SOURCE)).hasMessageContaining("a whole number from 1 to 64");
        }
    }

    @Nested
    class Bytes {

        private final ConfigKey<Long> key = ConfigKey.bytes("ipc.cache.bytes", 1L << 30, 4096, "doc");

        @ParameterizedTest
        @CsvSource({
                "4096,4096",
                "64k,65536",
                "64K,65536",
                "64kb,65536",
                "64KiB,65536",
                "256m,268435456",
                "1g,1073741824",
                "2GiB,2147483648",
                "1t,1099511627776",
                "'8 k',8192",
                "' 4096 ',4096",
                "5000b,5000"})
        void acceptsBinarySuffixes(String raw, long expected) {
            assertThat(key.parse(raw, SOURCE)).isEqualTo(expected);
        }

        @ParameterizedTest
        @ValueSource(strings = {"4095", "1k", "0", "", "k", "1.5g", "-4096", "64q", "64kk", "4096 bytes",
                "9999999999999999999", "9000000000t", "8192ib", "64ki"})
        void refusesMalformedTooSmallOrOverflowingSizes(String raw) {
            assertRefused(key, raw);
        }

        @Test
        void expectedFormNamesTheMinimum() {
            assertThat(key.expectedForm()).contains("at least 4096");
        }

        @Test
        void aBoundedSizeRefusesWhatIsAboveItsMaximumAndNamesTheRange() {
            ConfigKey<Long> bounded = ConfigKey.bytes("posix.queue.size", 2L << 20, 64L << 10, 1L << 30, "doc");
            assertThat(bounded.parse("1g", SOURCE)).isEqualTo(1L << 30);
            assertRefused(bounded, "1025m");
            assertThat(bounded.expectedForm()).contains("from 65536 to 1073741824");
        }
    }

    @Nested
    class Durations {

        private final ConfigKey<Duration> key = ConfigKey.duration("probe.timeout", Duration.ofSeconds(5), "doc");

        @ParameterizedTest
        @CsvSource({
                "10ns,PT0.00000001S",
                "250us,PT0.00025S",
                "100ms,PT0.1S",
                "100MS,PT0.1S",
                "5s,PT5S",
                "2m,PT2M",
                "1h,PT1H",
                "' 3 s ',PT3S"})
        void acceptsEveryUnit(String raw, Duration expected) {
            assertThat(key.parse(raw, SOURCE)).isEqualTo(expected);
        }

        @ParameterizedTest
        @ValueSource(strings = {"100", "", "ms", "1d", "-5s", "1.5s", "5 sec", "PT5S",
                "0s", "0ms",                              // not a positive duration
                "9223372036854775807us",                  // overflows when converted to nanoseconds
                "99999999999999h",                        // not representable in nanoseconds
                "99999999999999999999s"})
        void refusesMissingUnitsZeroNegativeAndOverflow(String raw) {
            assertRefused(key, raw);
        }

        /** The text a duration is shown as is one the key reads back to the same duration, in the largest exact unit. */
        @ParameterizedTest
        @CsvSource({"7ns,7ns", "250us,250us", "1500us,1500us", "20ms,20ms", "1500ms,1500ms", "10s,10s", "90s,90s", "2m,2m",
                "60m,1h", "3600s,1h"})
        void showsADurationAsTheKeyReadsItBack(String raw, String shown) {
            Duration d = key.parse(raw, SOURCE);
            assertThat(ConfigKey.durationText(d)).isEqualTo(shown);
            assertThat(key.parse(ConfigKey.durationText(d), SOURCE)).isEqualTo(d);
        }

        /**
         * A key whose thread sleeps between rounds refuses a duration shorter than its least, saying
         * so: ipc.cache.idle=1ns and keepalive.interval=1ns were taken, and their threads took a
         * core (a helper playing an ML-serving user: 1.9 s and 2.7 s of CPU in 3 s with nothing to do).
         */
        @Test
        void aKeyWithALeastDurationRefusesAShorterOneNamingIt() {
            ConfigKey<Duration> interval = ConfigKey.duration("sweep.interval", Duration.ofSeconds(1), Duration.ofMillis(1), "doc");
            assertThat(interval.parse("1ms", SOURCE)).isEqualTo(Duration.ofMillis(1));
            assertThat(interval.parse("2s", SOURCE)).isEqualTo(Duration.ofSeconds(2));
            assertThatThrownBy(() -> interval.parse("999us", SOURCE)).isInstanceOf(ConfigException.class)
                    .hasMessageContaining("'999us'").hasMessageContaining("shorter than 1ms, the shortest this key takes")
                    .hasMessageContaining("a duration with a unit (ns, us, ms, s, m, h) of at least 1ms");
            assertRefused(interval, "1ns");
            assertRefused(interval, "0ms");
            assertRefused(interval, "1x");
        }

        /** durationText: "@throws ArithmeticException if d is too long for nanoseconds, as no key's value is". */
        @Test
        void aDurationTooLongForNanosecondsHasNoText() {
            assertThatThrownBy(() -> ConfigKey.durationText(Duration.ofDays(365L * 300))).isInstanceOf(ArithmeticException.class);
            assertThat(ConfigKey.durationText(Duration.ofNanos(Long.MAX_VALUE))).isEqualTo(Long.MAX_VALUE + "ns");
        }
    }

    @Nested
    class Enumerations {

        private final ConfigKey<ThreadMode> key = ConfigKey.enumeration("default.mode", ThreadMode.class, ThreadMode.SINGLE, "doc");

        @ParameterizedTest
        @CsvSource({"single,SINGLE", "Serialized,SERIALIZED", "' MULTI ',MULTI"})
        void acceptsConstantsInAnyCase(String raw, ThreadMode expected) {
            assertThat(key.parse(raw, SOURCE)).isEqualTo(expected);
        }

        @ParameterizedTest
        @ValueSource(strings = {"", "single-threaded", "multiple"})
        void refusesOtherTextListingTheConstants(String raw) {
            assertRefused(key, raw);
            assertThat(key.expectedForm()).isEqualTo("one of [single, serialized, multi]");
        }

        /**
         * Constants a plugin named in lower case, as Java allows: its expected form lists them so, and
         * must take them, in any case. Until 2026-12-07 the value was upper-cased for
         * {@code Enum.valueOf}, and no value could set such a key.
         */
        @Test
        void acceptsTheConstantsOfAnEnumNamedInLowerCaseAsItsExpectedFormListsThem() {
            ConfigKey<LowerCaseFlavour> flavour = ConfigKey.enumeration("some.flavour", LowerCaseFlavour.class, LowerCaseFlavour.fast, "doc");
            assertThat(flavour.expectedForm()).isEqualTo("one of [fast, safe]");
            assertThat(flavour.parse("safe", SOURCE)).isEqualTo(LowerCaseFlavour.safe);
            assertThat(flavour.parse(" SAFE ", SOURCE)).isEqualTo(LowerCaseFlavour.safe);
            assertRefused(flavour, "careful");
        }

        /** Two constants that differ only in case, which a value matched ignoring case could not tell apart, refuse the key. */
        @Test
        void refusesAnEnumWithTwoConstantsThatDifferOnlyInCaseNamingThem() {
            assertThatThrownBy(() -> ConfigKey.enumeration("some.mode", CaseTwins.class, CaseTwins.FAST, "doc"))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("config key some.mode: constants FAST and fast of " + CaseTwins.class.getName() + " differ only in case, "
                            + "and a value names a constant in any case: rename one, or give the key an enum without either");
        }
    }

    /** A plugin's enum whose constants are in lower case. */
    enum LowerCaseFlavour { fast, safe }

    /** An enum with two constants that differ only in case, as Java allows. */
    enum CaseTwins { FAST, fast }

    @Nested
    class Lists {

        private final ConfigKey<List<String>> key = ConfigKey.list("transports", List.of("memfd"), "doc");

        @Test
        void splitsOnCommasTrimsAndDropsEmptyItems() {
            assertThat(key.parse("memfd,posix", SOURCE)).containsExactly("memfd", "posix");
            assertThat(key.parse(" memfd , ,posix,, ", SOURCE)).containsExactly("memfd", "posix");
            assertThat(key.parse("^verbs", SOURCE)).containsExactly("^verbs");
            assertThat(key.parse("", SOURCE)).isEmpty();
            assertThat(key.parse(" , ", SOURCE)).isEmpty();
        }

        @Test
        void defaultIsAnImmutableCopy() {
            List<String> mutable = new java.util.ArrayList<>(List.of("a"));
            ConfigKey<List<String>> k = ConfigKey.list("some.list", mutable, "doc");
            mutable.add("b");
            assertThat(k.defaultValue()).containsExactly("a");
            assertThatThrownBy(() -> k.defaultValue().add("c")).isInstanceOf(UnsupportedOperationException.class);
            assertThatThrownBy(() -> key.parse("a,b", SOURCE).add("c")).isInstanceOf(UnsupportedOperationException.class);
        }

        /**
         * A list key has no "unset" default, as a text or path key has with null: a null default,
         * or a null item in it, is refused naming the key and what to give. Until 2026-12-07 it was
         * List.copyOf's bare NullPointerException, which named neither, and broke the plugin
         * whose static field declared the key with "could not instantiate" alone.
         */
        @Test
        void aNullDefaultOrItemIsRefusedNamingTheKey() {
            assertThatNullPointerException().isThrownBy(() -> ConfigKey.list("acme.hosts", null, "doc"))
                    .withMessage("config key acme.hosts: default is null, and a list key has no unset value: give List.of() for none");
            assertThatNullPointerException().isThrownBy(() -> ConfigKey.list("acme.hosts", java.util.Arrays.asList("a", null), "doc"))
                    .withMessage("config key acme.hosts: default [a, null] holds null, which no value of the key can: give its items as "
                            + "text");
        }
    }

    @Test
    void errorMessageCarriesTheKeysDocumentation() {
        ConfigKey<Long> key = ConfigKey.integer("pool.slots", 8, 1, 64, "How many slots a pool keeps.");
        assertThatThrownBy(() -> key.parse("x", "the builder"))
                .isInstanceOf(ConfigException.class)
                .hasMessage("bad value 'x' for config key conduit.pool.slots (CONDUIT_POOL_SLOTS) (from the builder): "
                        + "expected a whole number from 1 to 64. How many slots a pool keeps.");
    }

    /** A key's own rule fails as a malformed value does, with what is wrong before the expected form. */
    @Test
    void aCheckRefusesAValueInTheFormOfAParseError() {
        ConfigKey<Long> key = ConfigKey.bytes("checked.size", 8192, 4096, "Doc.").withCheck("a multiple of 64, e.g. 8k", v -> {
            if (v % 64 != 0) throw new IllegalArgumentException(v + " bytes is not a multiple of 64");
        });
        assertThat(key.parse("8k", "the builder")).isEqualTo(8192);
        assertThat(key.expectedForm()).isEqualTo("a multiple of 64, e.g. 8k");
        assertThat(key.defaultValue()).isEqualTo(8192);
        assertThatThrownBy(() -> key.parse("4100", "the builder")).isInstanceOf(ConfigException.class).hasMessage(
                "bad value '4100' for config key conduit.checked.size (CONDUIT_CHECKED_SIZE) (from the builder): "
                        + "4100 bytes is not a multiple of 64; expected a multiple of 64, e.g. 8k. Doc.");
        assertThatThrownBy(() -> key.parse("lots", "the builder")).isInstanceOf(ConfigException.class).hasMessage(
                "bad value 'lots' for config key conduit.checked.size (CONDUIT_CHECKED_SIZE) (from the builder): "
                        + "expected a multiple of 64, e.g. 8k. Doc.");
        ConfigKey<Long> twice = key.withCheck("a multiple of 64 up to 64k", v -> {
            if (v > 65536) throw new IllegalArgumentException();
        });
        assertThatThrownBy(() -> twice.parse("4100", "x")).hasMessageContaining("4100 bytes is not a multiple of 64; expected a multiple of 64 up to 64k");
        assertThatThrownBy(() -> twice.parse("128k", "x")).hasMessageContaining("(from x): expected a multiple of 64 up to 64k");
    }

    /**
     * A check that throws anything but IllegalArgumentException has a fault of its own: the error
     * says so, naming key, value and source, and keeps what it threw as the cause. Until 2026-12-02
     * it was a 'bad value', which sent the user to mend a value that may be right.
     */
    @Test
    void aCheckThatFailsIsNamedAsTheChecksFaultNotAsABadValue() {
        IllegalStateException bug = new IllegalStateException("table not loaded");
        ConfigKey<Long> key = ConfigKey.bytes("checked.size", 8192, 4096, "Doc.").withCheck("a multiple of 64, e.g. 8k", v -> {
            throw bug;
        });
        assertThatThrownBy(() -> key.parse("8k", "environment variable CONDUIT_CHECKED_SIZE")).isInstanceOf(ConfigException.class)
                .hasCause(bug)
                .hasMessage("the check of config key conduit.checked.size (CONDUIT_CHECKED_SIZE) threw java.lang.IllegalStateException "
                        + "(table not loaded) on value '8k' (from environment variable CONDUIT_CHECKED_SIZE): a fault of the check, "
                        + "not of the value; report it to the key's author, or leave the setting out (the check does not judge the default)");
        assertThatThrownBy(() -> key.parse("lots", "the builder")).as("a malformed value is still one").hasNoCause()
                .hasMessageStartingWith("bad value 'lots'");
    }

    /**
     * A check that fails for want of a class (its plugin's jar is missing one) is the check's
     * fault as any other failure of it is: the NoClassDefFoundError does not leave parse
     * unexplained. A NUL in the value is shown escaped in that error too.
     */
    @Test
    void aCheckMissingAClassIsNamedAsTheChecksFaultWithTheValueEscaped() {
        NoClassDefFoundError missing = new NoClassDefFoundError("com/example/Table");
        ConfigKey<String> key = ConfigKey.string("checked.name", "a", "Doc.").withCheck("a name in the table", v -> {
            throw missing;
        });
        assertThatThrownBy(() -> key.parse("b\0", "the builder")).isInstanceOf(ConfigException.class)
                .hasCause(missing)
                .hasMessageStartingWith("the check of config key conduit.checked.name (CONDUIT_CHECKED_NAME) threw "
                        + "java.lang.NoClassDefFoundError (com/example/Table) on value 'b\\0' (from the builder): a fault of the check")
                .hasMessageNotContaining("\0");
    }

    /**
     * The examples in a size key's expected form are sizes it takes. Until 2026-12-03 every size key
     * gave "e.g. 4096, 64k, 256m, 1g", so that posix.queue.size (64k to 1g) refused 100 naming 4096,
     * which it refuses too, and memfd.inbound.bounce.max (at least 1m) named 4096 and 64k.
     */
    @Test
    void theExamplesOfASizeKeyAreSizesItTakes() {
        ConfigKey<Long> queue = ConfigKey.bytes("ranged.queue.size", 2L << 20, 64L << 10, 1L << 30, "Doc.");
        assertThat(queue.expectedForm()).isEqualTo("a size in bytes from 65536 to 1073741824, e.g. 64k, 256m, 1g");
        assertThatThrownBy(() -> queue.parse("100", "the builder")).hasMessageContaining("e.g. 64k, 256m, 1g.");
        assertThat(ConfigKey.bytes("ranged.bounce.max", 64L << 30, 1L << 20, "Doc.").expectedForm())
                .isEqualTo("a size in bytes of at least 1048576, e.g. 256m, 1g");
        assertThat(ConfigKey.bytes("ranged.small", 128, 100, 200, "Doc.").expectedForm())
                .as("no example size fits: the least it takes").isEqualTo("a size in bytes from 100 to 200, e.g. 100");
        assertThat(ConfigKey.bytes("ranged.any", 0, 0, "Doc.").expectedForm()).isEqualTo("a size in bytes of at least 0, e.g. 4096, 64k, 256m, 1g");
        for (ConfigKey<Long> key : List.of(queue, ConfigKey.bytes("ranged.bounce.max", 64L << 30, 1L << 20, "Doc."),
                ConfigKey.bytes("ranged.small", 128, 100, 200, "Doc."), ConfigKey.bytes("ranged.any", 0, 0, "Doc."))) {
            String examples = key.expectedForm().substring(key.expectedForm().indexOf("e.g. ") + 5);
            for (String example : examples.split(", ")) {
                assertThat(key.parse(example, "the builder")).as(key.name() + " takes its example " + example).isNotNull();
            }
        }
    }

    /**
     * A ring's size is read rounded up to a power of two, so that what {@code Config.get} returns,
     * and {@code conduit info} shows, is the size in force. Until 2026-12-04 the transports rounded
     * after reading, and {@code memfd.queue.size=3m} was shown as 3145728 while 4194304 was used.
     */
    @Test
    void aPowerOfTwoSizeIsReadAsTheSizeInForce() {
        ConfigKey<Long> ring = ConfigKey.powerOfTwoBytes("ring.size", 2L << 20, 64L << 10, 1L << 30, "Doc.");
        assertThat(ring.parse("3m", "the builder")).isEqualTo(4L << 20);
        assertThat(ring.parse("4m", "the builder")).isEqualTo(4L << 20);
        assertThat(ring.parse("65537", "the builder")).isEqualTo(128L << 10);
        assertThat(ring.parse("1g", "the builder")).as("the largest stays in range").isEqualTo(1L << 30);
        assertThat(ring.expectedForm()).isEqualTo("a size in bytes from 65536 to 1073741824, rounded up to a power of two, e.g. 64k, 256m, 1g");
        assertThatThrownBy(() -> ring.parse("1025m", "the builder")).isInstanceOf(ConfigException.class)
                .hasMessageContaining("bad value '1025m' for config key conduit.ring.size (CONDUIT_RING_SIZE)").hasMessageContaining("rounded up to a power of two");
        assertThatThrownBy(() -> ring.parse("1k", "the builder")).isInstanceOf(ConfigException.class);
        assertThat(ring.withCheck("a size of at most 512m", v -> {
            if (v > 512L << 20) throw new IllegalArgumentException("more than 512m");
        }).parse("300m", "the builder")).as("a check sees the rounded value").isEqualTo(512L << 20);
        assertThatThrownBy(() -> ConfigKey.powerOfTwoBytes("ring.odd", 3L << 20, 64L << 10, 1L << 30, "Doc."))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("config key ring.odd: default 3145728, min 65536 and max 1073741824 must be powers of two, so that a value "
                        + "rounded up to one stays in range");
    }

    /**
     * A default outside the key's range was taken as it is whenever nothing set the key: the plugin
     * ran with a value that no setting could give. Until 2026-12-07 each of these keys was made.
     */
    @Test
    void aNumberKeyRefusesADefaultOutsideItsRangeNamingTheKeyAndTheRange() {
        assertThatIllegalArgumentException().isThrownBy(() -> ConfigKey.integer("lo.depth", 0, 1, 64, "Doc."))
                .withMessage("config key lo.depth: default 0 is outside [1, 64], the values it takes: nothing could set the value the "
                        + "plugin would run with when the key is unset; give a default in range");
        assertThatIllegalArgumentException().isThrownBy(() -> ConfigKey.integer("lo.depth", 65, 1, 64, "Doc."))
                .withMessageStartingWith("config key lo.depth: default 65 is outside [1, 64]");
        assertThatIllegalArgumentException().isThrownBy(() -> ConfigKey.integer("lo.depth", 8, 64, 1, "Doc."))
                .withMessageStartingWith("config key lo.depth: default 8 is outside [64, 1]");
        assertThatIllegalArgumentException().isThrownBy(() -> ConfigKey.bytes("lo.size", 1024, 4096, "Doc."))
                .withMessageStartingWith("config key lo.size: default 1024 is outside [4096, 9223372036854775807]");
        assertThatIllegalArgumentException().isThrownBy(() -> ConfigKey.bytes("lo.size", 2L << 30, 4096, 1L << 30, "Doc."))
                .withMessageStartingWith("config key lo.size: default 2147483648 is outside [4096, 1073741824]");
        assertThatIllegalArgumentException().isThrownBy(() -> ConfigKey.powerOfTwoBytes("lo.ring", 4096, 64L << 10, 1L << 30, "Doc."))
                .withMessageStartingWith("config key lo.ring: default 4096 is outside [65536, 1073741824]");
        assertThat(ConfigKey.integer("lo.depth", 1, 1, 64, "Doc.").defaultValue()).isEqualTo(1L);
        assertThat(ConfigKey.integer("lo.depth", 64, 1, 64, "Doc.").defaultValue()).isEqualTo(64L);
        assertThat(ConfigKey.bytes("lo.size", 4096, 4096, "Doc.").defaultValue()).isEqualTo(4096L);
    }

    /**
     * A default that the key's own rule refuses is refused as one outside a number key's range is:
     * the runtime takes the default as it is when nothing sets the key, so that until 2026-12-07
     * the plugin ran with a value no setting could give, which conduit info listed beside an
     * expected form that excludes it. A check that fails on the default (throws anything but
     * IllegalArgumentException) is left to judge the values set, as before.
     */
    @Test
    void aCheckedKeyRefusesADefaultItsCheckRefusesNamingTheKeyAndWhy() {
        ConfigKey<Long> size = ConfigKey.bytes("lo.size", 8192, 4096, "Doc.");
        assertThatIllegalArgumentException().isThrownBy(() -> size.withCheck("a multiple of 3000, e.g. 6000", v -> {
            if (v % 3000 != 0) throw new IllegalArgumentException(v + " bytes is not a multiple of 3000");
        })).withMessage("config key lo.size: default 8192 does not meet the key's own rule (8192 bytes is not a multiple of 3000; "
                + "expected a multiple of 3000, e.g. 6000): nothing could set the value the plugin would run with when the key is "
                + "unset; give a default the rule takes");
        assertThatIllegalArgumentException().isThrownBy(() -> size.withCheck("at most 4k", v -> {
            if (v > 4096) throw new IllegalArgumentException();
        })).withMessageStartingWith("config key lo.size: default 8192 does not meet the key's own rule (expected at most 4k)");
        assertThat(size.withCheck("a multiple of 64", v -> {
            if (v % 64 != 0) throw new IllegalArgumentException();
        }).defaultValue()).isEqualTo(8192L);
        ConfigKey<Long> faulty = size.withCheck("a multiple of 64", v -> {
            throw new IllegalStateException("table not loaded");
        });
        assertThat(faulty.defaultValue()).as("a check's fault is judged on the values set").isEqualTo(8192L);
        assertThat(ConfigKey.string("lo.name", null, "Doc.").withCheck("never empty", v -> {
            if (v.isEmpty()) throw new IllegalArgumentException();
        }).defaultValue()).as("no default, nothing to judge").isNull();
    }

    /**
     * A duration key takes positive durations only, of at least its min when it has one (a thread's
     * wait between rounds, which a shorter one turns into a busy loop): until 2026-12-07 its default
     * was not held to either, so that a key declared with a default of 1ns and a min of 1ms ran its
     * thread busy whenever nothing set it, the very loop the min is there to prevent.
     */
    @Test
    void aDurationKeyRefusesADefaultItWouldRefuseAsAValueNamingTheKey() {
        assertThatIllegalArgumentException().isThrownBy(() -> ConfigKey.duration("lo.wait", Duration.ZERO, "Doc."))
                .withMessage("config key lo.wait: default PT0S is not positive, as every value the key takes is; give a positive default");
        assertThatIllegalArgumentException().isThrownBy(() -> ConfigKey.duration("lo.wait", Duration.ofSeconds(-5), "Doc."))
                .withMessageStartingWith("config key lo.wait: default PT-5S is not positive");
        assertThatIllegalArgumentException().isThrownBy(() -> ConfigKey.duration("lo.sweep", Duration.ofNanos(1), Duration.ofMillis(1), "Doc."))
                .withMessage("config key lo.sweep: default 1ns is shorter than 1ms, the shortest the key takes; give a default of at "
                        + "least that");
        assertThat(ConfigKey.duration("lo.sweep", Duration.ofMillis(1), Duration.ofMillis(1), "Doc.").defaultValue())
                .isEqualTo(Duration.ofMillis(1));
        assertThat(ConfigKey.duration("lo.sweep", null, Duration.ofMillis(1), "Doc.").defaultValue()).isNull();
    }

    /**
     * A default no value could be ("for ever", a plugin's "no timeout") made every listing of the
     * value in force overflow; until 2026-12-07 it was taken, and conduit info failed for every plugin.
     */
    @Test
    void aDurationKeyRefusesADefaultLongerThanAnyValueNamingTheKeyAndTheLongest() {
        for (Duration forever : List.of(java.time.temporal.ChronoUnit.FOREVER.getDuration(), Duration.ofSeconds(Long.MAX_VALUE))) {
            assertThatIllegalArgumentException().isThrownBy(() -> ConfigKey.duration("lo.timeout", forever, "Doc."))
                    .withMessageStartingWith("config key lo.timeout: default " + forever + " is longer than the longest duration a key "
                            + "takes, 9223372036854775807ns")
                    .withMessageEndingWith("give that longest, Duration.ofNanos(Long.MAX_VALUE)");
            assertThatIllegalArgumentException().isThrownBy(() -> ConfigKey.duration("lo.timeout", forever, Duration.ofMillis(1), "Doc."))
                    .withMessageStartingWith("config key lo.timeout: default " + forever);
        }
        Duration longest = Duration.ofNanos(Long.MAX_VALUE);
        assertThat(ConfigKey.duration("lo.timeout", longest, "Doc.").defaultValue()).isEqualTo(longest);
    }

    /**
     * A value in the expected form that is too large for the type says so: the expected form alone
     * ("a size in bytes of at least 0, e.g. 4096") described the value given. Until 2026-12-02 it
     * said nothing more.
     */
    @Test
    void aValueInTheFormThatIsTooLargeSaysSo() {
        ConfigKey<Long> bytes = ConfigKey.bytes("big.bytes", 0, 0, "Doc.");
        ConfigKey<Duration> duration = ConfigKey.duration("big.wait", Duration.ofSeconds(1), "Doc.");
        for (String value : List.of("8388608t", "99999999t", "99999999999999999999", "9223372036854775807k")) {
            assertThatThrownBy(() -> bytes.parse(value, "the builder")).as(value).hasMessage("bad value '" + value
                    + "' for config key conduit.big.bytes (CONDUIT_BIG_BYTES) (from the builder): larger than the largest size a key "
                    + "takes, 9223372036854775807 bytes (8 EiB - 1); expected a size in bytes of at least 0, e.g. 4096, 64k, 256m, 1g. Doc.");
        }
        for (String value : List.of("999999999h", "99999999999999999999999ms", "9223372036854775807us", "200000000m")) {
            assertThatThrownBy(() -> duration.parse(value, "the builder")).as(value)
                    .hasMessageContaining("(from the builder): longer than the longest duration a key takes, 9223372036854775807ns "
                            + "(about 292 years); expected a positive duration");
        }
        assertThat(bytes.parse("8388607t", "the builder")).as("the most terabytes a long holds").isEqualTo(8388607L << 40);
        assertThat(duration.parse("2562047h", "the builder")).isEqualTo(Duration.ofHours(2562047));
        assertThatThrownBy(() -> duration.parse("0s", "the builder")).hasMessageContaining("(from the builder): expected a positive");
    }

    /**
     * An empty value (CONDUIT_X= in an environment file) that the key cannot take says that it does
     * not unset the key, and how to get the default; a key that takes any text takes it.
     */
    @Test
    void anEmptyValueSaysItDoesNotUnsetTheKey() {
        for (ConfigKey<?> key : List.of(ConfigKey.integer("e.int", 1, 0, 9, "Doc."), ConfigKey.duration("e.wait", Duration.ofSeconds(1), "Doc."),
                ConfigKey.path("e.dir", null, "Doc."), ConfigKey.bool("e.on", true, "Doc."))) {
            assertThatThrownBy(() -> key.parse(" ", "environment variable " + key.environmentName())).as(key.name())
                    .hasMessageContaining("(from environment variable " + key.environmentName() + "): the value is empty, which does "
                            + "not unset the key: remove the setting for its default; expected ");
        }
        assertThat(ConfigKey.string("e.text", "x", "Doc.").parse("", "the builder")).isEmpty();
        assertThatThrownBy(() -> ConfigKey.integer("e.int", 1, 0, 9, "Doc.").parse("x", "the builder")).hasMessageNotContaining("empty");
    }

    /** A NUL (the builder can set one) is shown as a backslash and 0, never passed on to whatever prints the message. */
    @Test
    void aNulInABadValueIsShownEscaped() {
        assertThatThrownBy(() -> ConfigKey.integer("nul.int", 1, 0, 9, "Doc.").parse("x\0", "the builder"))
                .hasMessageStartingWith("bad value 'x\\0' for").hasMessageNotContaining("\0");
    }
}
