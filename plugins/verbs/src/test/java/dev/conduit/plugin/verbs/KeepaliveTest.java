package dev.conduit.plugin.verbs;

import dev.conduit.spi.ThreadMode;
import dev.conduit.tck.RecordingLogger;
import dev.conduit.tck.TestContext;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** TCP keepalive from {@code verbs.heartbeat.timeout}: the kernel counts whole seconds, idle time plus three probes. */
class KeepaliveTest {

    @Test
    void aSilentPeerFailsWithinTheTimeoutInWholeSecondsAndAtLeastFour() {
        assertThat(Keepalive.within(Duration.ofSeconds(10))).isEqualTo(new Keepalive(4, 2, 3));
        assertThat(Keepalive.within(Duration.ofSeconds(10)).bound()).isEqualTo(Duration.ofSeconds(10));
        assertThat(Keepalive.within(Duration.ofMinutes(1))).isEqualTo(new Keepalive(15, 15, 3));
        assertThat(Keepalive.within(Duration.ofMillis(5500)).bound()).as("rounded up").isEqualTo(Duration.ofSeconds(6));
        assertThat(Keepalive.within(Duration.ofMillis(100))).as("the least the kernel can do").isEqualTo(new Keepalive(1, 1, 3));
        assertThat(Keepalive.within(Duration.ofHours(1)).bound()).isEqualTo(Duration.ofHours(1));
        assertThat(Keepalive.within(Duration.ofDays(30))).as("Linux's largest values").isEqualTo(new Keepalive(32767, 32767, 3));
        assertThat(Keepalive.within(Duration.ofSeconds(4 * 32767))).as("the longest timeout they make").isEqualTo(new Keepalive(32767, 32767, 3));
    }

    /**
     * Linux takes at most 32767 s for the idle time and for the interval, so a timeout past four
     * times that (131068 s, 36 h 24 min 28 s) was shortened to it without a word: a
     * heartbeat.timeout of 30 days failed a silent peer's connections after 36 hours. It is still
     * shortened, as UCX shortens its keepalive times, and the transport says so when it opens.
     */
    @Test
    void aTimeoutLongerThanLinuxCanCountIsShortenedAndTheTransportSaysSo() {
        LoopbackVerbs verbs = new LoopbackVerbs(VerbsAbi.IBV_ATOMIC_HCA);
        VerbsPlugin plugin = new VerbsPlugin(library -> verbs);
        for (String timeout : List.of("720h", "131068s")) {
            RecordingLogger logger = new RecordingLogger();
            TestContext context = TestContext.of("verbs.wireup.address", "127.0.0.1", "verbs.heartbeat.timeout", timeout).withLogger(logger);
            plugin.openTransport(context.forTransport(ThreadMode.SINGLE, (id, hb, ho, hl, pb, po, pl) -> { })).close();
            if (timeout.equals("720h")) {
                assertThat(logger.warnings()).singleElement().asString()
                        .contains("verbs.heartbeat.timeout (CONDUIT_VERBS_HEARTBEAT_TIMEOUT) is 720h")
                        .contains("32767 s")
                        .contains("fail after 131068s (36 h 24 min 28 s)")
                        .contains("at most 131068s");
            } else {
                assertThat(logger.warnings()).as("the longest timeout Linux can count is taken as it is").isEmpty();
            }
        }
        assertThat(verbs.openObjects()).isZero();
    }
}
