package dev.conduit;

import dev.conduit.PluginInfo.Status;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ConduitPlugin;
import dev.conduit.spi.ConfigKey;
import dev.conduit.spi.ThreadMode;
import dev.conduit.testing.RecordingTransport;
import dev.conduit.testing.TestPlugin;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.util.Map;

import static dev.conduit.testing.TestConduits.info;
import static dev.conduit.testing.TestConduits.isolated;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A plugin method that throws a checked exception its signature does not declare: a plugin
 * written in Kotlin (which has no checked exceptions), or one using Lombok's {@code @SneakyThrows},
 * reading a file in {@code description()}, a key's check or {@code checkConfig}. The runtime takes
 * a plugin's {@code RuntimeException} and {@code Error} there for the plugin's fault and breaks the
 * plugin alone; a checked one is the plugin's fault all the same.
 */
class PluginThrowingCheckedTest {

    private static final IOException UNREADABLE = new IOException("/etc/conduit/thrower.table: Permission denied");

    /** Throws {@code e}, checked or not, where the compiler would not let a checked one through: as Kotlin or Lombok do. */
    @SuppressWarnings("unchecked")
    static <E extends Throwable> RuntimeException sneaky(Throwable e) throws E {
        throw (E) e;
    }

    @Test
    void aPluginWhoseMetadataThrowsACheckedExceptionIsBrokenAloneAndTheOthersAreUsed() {
        ConduitPlugin thrower = new ForwardingPlugin(TestPlugin.named("thrower")) {
            @Override
            public String description() {
                throw sneaky(UNREADABLE);
            }
        };
        assertBrokenAloneAndTheOtherUsed(isolated().addPlugin(thrower));
    }

    @Test
    void aPluginWhoseCheckConfigThrowsACheckedExceptionIsBrokenAloneAndTheOthersAreUsed() {
        TestPlugin thrower = TestPlugin.named("thrower").configCheck(c -> {
            throw sneaky(UNREADABLE);
        });
        assertBrokenAloneAndTheOtherUsed(isolated().addPlugin(thrower));
    }

    /** ConfigKey#withCheck: "Anything else it throws, an Error too ... is taken for a fault of the check, not of the value". */
    @Test
    void aKeysCheckThatThrowsACheckedExceptionBreaksItsPluginAloneAndTheOthersAreUsed() {
        ConfigKey<Long> size = ConfigKey.bytes("thrower.size", 8192, 4096, "Doc.").withCheck("a multiple of 64", v -> {
            throw sneaky(UNREADABLE);
        });
        assertBrokenAloneAndTheOtherUsed(isolated().environment(Map.of("CONDUIT_THROWER_SIZE", "8k"))
                .addPlugin(TestPlugin.named("thrower").configKeys(size)));
    }

    /** Builds {@code withThrower} and a plugin "good": the build succeeds, "thrower" is BROKEN, "good" selected. */
    private static void assertBrokenAloneAndTheOtherUsed(ConduitBuilder withThrower) {
        assertThatCode(() -> {
            try (Conduit conduit = withThrower.addPlugin(TestPlugin.named("good")).build()) {
                assertThat(info(conduit, "thrower").status()).isEqualTo(Status.BROKEN);
                assertThat(conduit.selectedPlugins()).containsExactly("good");
            }
        }).doesNotThrowAnyException();
    }

    /**
     * As PluginThrowingTest#aWorkerOverAPluginWhoseOpenTransportThrowsNamesThePluginAndClosesTheOthers,
     * for a checked exception: the transport opened before it holds queues, mappings and files.
     * Until 2026-12-07 the worker's cleanup caught only unchecked ones, so that transport stayed
     * open for good, and {@code newWorker} threw the bare IOException, naming no plugin.
     */
    @Test
    void aWorkerOverAPluginWhoseOpenTransportThrowsACheckedExceptionNamesThePluginAndClosesTheTransportsOpenedBefore() {
        TestPlugin good = TestPlugin.named("good").priority(2);
        TestPlugin thrower = TestPlugin.named("thrower").priority(1).transports(c -> {
            throw sneaky(UNREADABLE);
        });
        try (Conduit conduit = isolated().addPlugin(good).addPlugin(thrower).build()) {
            assertThatThrownBy(() -> conduit.newWorker(ThreadMode.SINGLE)).isInstanceOf(ConduitException.class)
                    .hasMessageContaining("plugin 'thrower' failed in openTransport()").hasCause(UNREADABLE);
            assertThat(good.opened).singleElement().extracting(t -> ((RecordingTransport) t).closes()).isEqualTo(1);
        }
    }
}
