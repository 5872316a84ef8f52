package dev.conduit.shm;

import dev.conduit.linux.Linux;
import dev.conduit.spi.MessageSink;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * How often {@code progress()} checks its peers' liveness ({@code liveness.interval}), counted
 * through {@link ShmTransport#onLivenessCheck} (package-private, so this test lives here): what
 * bounds the time to find a dead peer, which no test may assert as a duration. The pauses between
 * calls are lower bounds ({@code Thread.sleep} sleeps at least as long), never measured.
 */
class ShmTransportLivenessIntervalTest {

    private static final MessageSink NO_MESSAGES = (id, h, ho, hl, p, po, pl) -> {
        throw new AssertionError("no message is sent");
    };

    @TempDir
    Path shared;

    private final List<AutoCloseable> open = new ArrayList<>();

    @AfterEach
    void closeAll() throws Exception {
        for (AutoCloseable c : open.reversed()) c.close();
    }

    /**
     * An idle {@code await} wakes every interval and looks at every peer's lease: {@code 1ns} was
     * taken until 2026-12-07 (a reviewer's trace: it woke at every expiry of the futex's timer
     * slack, some 50 us, and ran a liveness check each time), where {@code keepalive.interval}
     * refused it.
     */
    @Test
    void anIntervalShorterThanAMillisecondIsRefusedNamingTheKey() {
        var key = ShmTransportConfig.keys("posix").stream().filter(k -> k.name().equals("posix.liveness.interval")).findFirst().orElseThrow();
        assertThat(key.parse("1ms", "test")).isEqualTo(Duration.ofMillis(1));
        assertThatThrownBy(() -> key.parse("1ns", "test")).isInstanceOf(dev.conduit.spi.ConfigException.class)
                .hasMessageContaining("posix.liveness.interval").hasMessageContaining("shorter than 1ms");
    }

    /**
     * A receiver asleep in {@code await} on a record it cannot read yet beats once a millisecond,
     * and a sender looks at most once per liveness interval (1 ms at least): a {@code heartbeat.timeout}
     * near a millisecond failed a healthy sleeping receiver as hung at the first scheduling delay.
     * {@code 100us} was taken until 2026-12-07 (found by the liveness review).
     */
    @Test
    void aHeartbeatTimeoutShorterThanTenMillisecondsIsRefusedNamingTheKey() {
        var key = ShmTransportConfig.keys("memfd").stream().filter(k -> k.name().equals("memfd.heartbeat.timeout")).findFirst().orElseThrow();
        assertThat(key.parse("10ms", "test")).isEqualTo(Duration.ofMillis(10));
        assertThatThrownBy(() -> key.parse("100us", "test")).isInstanceOf(dev.conduit.spi.ConfigException.class)
                .hasMessageContaining("memfd.heartbeat.timeout").hasMessageContaining("shorter than 10ms");
    }

    /**
     * Once the first check ran, every {@code progress()} that comes more than an interval (20 ms)
     * after the one before checks: a check spaced wider than the interval (250 of them, say)
     * would find a dead peer that much later, and counts fewer checks here.
     */
    @Test
    void everyProgressAnIntervalAfterTheLastCheckChecksThePeers() throws Exception {
        ShmTransport t = transport(Duration.ofMillis(20));
        AtomicLong checks = new AtomicLong();
        t.onLivenessCheck = checks::incrementAndGet;
        // The first calls may not read the clock at all (it is read every 16th idle poll until polls are seen spaced).
        for (int call = 0; call < 100 && checks.get() == 0; call++) {
            Thread.sleep(25);
            t.progress();
        }
        assertThat(checks.get()).as("checks in up to 100 calls 25 ms apart").isEqualTo(1);

        for (int call = 0; call < 20; call++) {
            Thread.sleep(25);
            t.progress();
        }
        assertThat(checks.get() - 1).as("checks in 20 calls, each more than the 20 ms interval after the one before").isEqualTo(20);
    }

    /** Calls that each read the clock (spaced, so every one does) do not check before the interval (an hour here) has passed. */
    @Test
    void noProgressChecksThePeersBeforeAnIntervalHasPassed() throws Exception {
        ShmTransport t = transport(Duration.ofHours(1));
        AtomicLong checks = new AtomicLong();
        t.onLivenessCheck = checks::incrementAndGet;
        for (int call = 0; call < 50; call++) {
            Thread.sleep(1);
            t.progress();
        }
        assertThat(checks.get()).as("checks in 50 calls within the first hour").isZero();
    }

    private ShmTransport transport(Duration livenessInterval) {
        InProcessMemory memory = new InProcessMemory();
        ShmTransportConfig config = new ShmTransportConfig(64 << 10, 8 << 10, 64 << 10, livenessInterval, Duration.ofSeconds(10),
                Duration.ofMillis(50), 1024, 64L << 30);
        ShmTransport t = new ShmTransport("test", Linux.libc(), new InProcessContext(shared, NO_MESSAGES), config, memory, memory);
        open.add(t);
        return t;
    }
}
