package dev.conduit.plugin.verbs;

import org.junit.jupiter.api.Test;

import java.time.Duration;

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
    }
}
