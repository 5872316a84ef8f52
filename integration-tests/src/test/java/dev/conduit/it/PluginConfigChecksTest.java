package dev.conduit.it;

import dev.conduit.Conduit;
import dev.conduit.spi.ConfigException;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A plugin's own rules on its keys' values fail the {@code Conduit}'s build, in the form of a
 * malformed value: key, variable, value, source, what is wrong and the accepted form. Until
 * 2026-12-02 the plugins checked these only when they opened something, so the build passed and
 * the error came later, or never on a host where the plugin was not used (verbs without RDMA
 * devices, devdax without a device), naming no source.
 */
class PluginConfigChecksTest {

    private static String buildError(String key, String value) {
        try (Conduit ignored = Loading.isolatedBuilder().set(key, value).build()) {
            throw new AssertionError("the build with " + key + "=" + value + " passed");
        } catch (ConfigException e) {
            return e.getMessage();
        }
    }

    /**
     * A ring's size is shown as the size in force: the transports use a power of two, and until
     * 2026-12-04 {@code conduit info} and {@code Conduit.configuration()} showed {@code 3m} as
     * 3145728 while 4194304 was used.
     */
    @Test
    void aRingSizeIsShownAsTheSizeInForce() {
        try (Conduit conduit = Loading.isolatedBuilder().set("memfd.queue.size", "3m").set("posix.bounce.size", "65537").build()) {
            assertThat(conduit.configuration()).filteredOn(e -> e.key().equals("memfd.queue.size"))
                    .singleElement().satisfies(e -> assertThat(e.value()).isEqualTo("4194304"));
            assertThat(conduit.configuration()).filteredOn(e -> e.key().equals("posix.bounce.size"))
                    .singleElement().satisfies(e -> {
                        assertThat(e.value()).isEqualTo("131072");
                        assertThat(e.doc()).contains("rounded up to a power of two");
                    });
        }
    }

    @Test
    void aMemfdAllowedUidThatIsNoUserIdFailsTheBuild() {
        assertThat(buildError("memfd.allowed.uids", "1000,bob")).startsWith("bad value '1000,bob' for config key "
                + "conduit.memfd.allowed.uids (CONDUIT_MEMFD_ALLOWED_UIDS) (from the builder): item 'bob' is not a numeric user id; "
                + "expected a comma-separated list of numeric user ids from 0 to 4294967294, e.g. 1000,1001 (names are not "
                + "accepted: they differ between containers). ");
    }

    @Test
    void aMemfdTrustedUidThatIsNoUserIdFailsTheBuild() {
        assertThat(buildError("memfd.trusted.uids", "-1")).startsWith("bad value '-1' for config key "
                + "conduit.memfd.trusted.uids (CONDUIT_MEMFD_TRUSTED_UIDS) (from the builder): item '-1' is not a numeric user id; "
                + "expected a comma-separated list of numeric user ids from 0 to 4294967294");
    }

    @Test
    void aPosixTrustedUidThatIsNoUserIdFailsTheBuild() {
        assertThat(buildError("posix.trusted.uids", "4294967295")).startsWith("bad value '4294967295' for config key "
                + "conduit.posix.trusted.uids (CONDUIT_POSIX_TRUSTED_UIDS) (from the builder): item '4294967295' is not a numeric "
                + "user id; expected a comma-separated list of numeric user ids from 0 to 4294967294");
    }

    @Test
    void aMalformedDevdaxTableFailsTheBuild() {
        assertThat(buildError("devdax.devices", "pmem0")).startsWith("bad value 'pmem0' for config key conduit.devdax.devices "
                + "(CONDUIT_DEVDAX_DEVICES) (from the builder): item 'pmem0' is not alias=/absolute/path; expected a comma-separated "
                + "list of alias=/absolute/path, e.g. pmem0=/dev/dax0.0");
        assertThat(buildError("devdax.devices", "a=/x,a=/y")).contains("(from the builder): alias 'a' appears twice: each alias "
                + "names one device; expected ");
        assertThat(buildError("devdax.devices", "a=/x\0.img")).contains("bad value 'a=/x\\0.img'")
                .contains("the path of item 'a=/x\\0.img' contains a NUL character").doesNotContain("\0");
    }

    @Test
    void aDevdaxFileAlignmentThatIsNoPowerOfTwoFailsTheBuild() {
        assertThat(buildError("devdax.file.align", "3m")).startsWith("bad value '3m' for config key conduit.devdax.file.align "
                + "(CONDUIT_DEVDAX_FILE_ALIGN) (from the builder): 3145728 bytes is not a power of two that is a multiple of this "
                + "host's page size, ").contains("; expected a size in bytes that is a power of two and a multiple of the page size");
    }

    @Test
    void aVerbsBufferSizeThatIsNotAMultipleOf64FailsTheBuildEvenWithoutRdmaDevices() {
        assertThat(buildError("verbs.buffer.size", "4100")).startsWith("bad value '4100' for config key conduit.verbs.buffer.size "
                + "(CONDUIT_VERBS_BUFFER_SIZE) (from the builder): 4100 bytes is not a multiple of 64 (each buffer starts a record "
                + "with 8-byte fields, which must be aligned): such as 4096 or 4160; expected a size in bytes from 4096 to "
                + "1073741824 and a multiple of 64, e.g. 8k. ");
    }

    /** A check's error is a parse error's with the reason before "expected": one form for every bad value. */
    @Test
    void aCheckFailsInTheFormOfAParseError() {
        String parse = buildError("verbs.buffer.size", "lots");
        String check = buildError("verbs.buffer.size", "4100");
        String head = "bad value '%s' for config key conduit.verbs.buffer.size (CONDUIT_VERBS_BUFFER_SIZE) (from the builder): ";
        String tail = "expected a size in bytes from 4096 to 1073741824 and a multiple of 64, e.g. 8k. ";
        assertThat(parse).startsWith(head.formatted("lots") + tail);
        assertThat(check).startsWith(head.formatted("4100")).contains("; " + tail);
        assertThat(parse.substring(parse.indexOf(tail))).isEqualTo(check.substring(check.indexOf(tail)));
    }

    /**
     * A rule between two keys, checked by the plugin's checkConfig when the Conduit is built, fails it in the same form, also in a
     * process that only imports (where until 2026-12-02 nothing read devdax.device at all).
     */
    @Test
    void aDevdaxDeviceThatIsNotInTheTableFailsTheBuild() {
        ConfigException e = org.junit.jupiter.api.Assertions.assertThrows(ConfigException.class, () -> Loading.isolatedBuilder()
                .set("devdax.devices", "pmem0=/dev/dax0.0").set("devdax.device", "pmem1").build().close());
        assertThat(e.getMessage()).startsWith("bad value 'pmem1' for config key conduit.devdax.device (CONDUIT_DEVDAX_DEVICE) (from "
                + "the builder): alias 'pmem1' is not in devdax.devices (CONDUIT_DEVDAX_DEVICES) [pmem0]: add it there as "
                + "pmem1=/dev/daxX.Y, or choose one of the listed aliases; expected any text. ");
    }
}
