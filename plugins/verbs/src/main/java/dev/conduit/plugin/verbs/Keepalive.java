package dev.conduit.plugin.verbs;

import jdk.net.ExtendedSocketOptions;

import java.io.IOException;
import java.net.StandardSocketOptions;
import java.nio.channels.SocketChannel;
import java.time.Duration;

/**
 * TCP keepalive for the wire-up connections, which stay open as the liveness channel. A peer whose
 * process dies is seen at once (its kernel closes the connection); a peer whose host crashed or
 * whose network was cut sends nothing, and the idle connection would look healthy forever: with
 * keepalive the kernel probes it after {@code idle} seconds of silence, every {@code interval}
 * seconds, and after {@code count} unanswered probes fails it with {@code ETIMEDOUT}, which the
 * next liveness check reads as the peer's failure.
 *
 * <p>The kernel counts in whole seconds, so a timeout is rounded up to them and is at least 4 s
 * (one second of idleness, three probes a second apart). It takes at most 32767 s for the idle
 * time and for the interval, so a timeout is at most {@link #LONGEST} (36 h 24 min 28 s): a longer
 * one is shortened to it, as UCX shortens its keepalive times (docs/decisions.md), and the
 * transport logs a WARNING that says so.
 *
 * @param idle     {@code TCP_KEEPIDLE}: seconds of silence before the first probe
 * @param interval {@code TCP_KEEPINTVL}: seconds between unanswered probes
 * @param count    {@code TCP_KEEPCNT}: unanswered probes before the connection fails
 */
record Keepalive(int idle, int interval, int count) {

    private static final int PROBES = 3;
    /** Linux refuses larger {@code TCP_KEEPIDLE} and {@code TCP_KEEPINTVL} values ({@code MAX_TCP_KEEPIDLE}). */
    private static final int MAX_SECONDS = 32767;

    /** The longest timeout the kernel can count: {@link #MAX_SECONDS} of silence, then three probes as far apart. */
    static final Duration LONGEST = Duration.ofSeconds((PROBES + 1L) * MAX_SECONDS);

    /**
     * Probes that declare a silent peer dead {@code timeout} after the last sign of it, in whole
     * seconds, at least 4 s and at most {@link #LONGEST}.
     */
    static Keepalive within(Duration timeout) {
        long seconds = Math.max(1, timeout.toSeconds() + (timeout.toNanosPart() > 0 ? 1 : 0));
        int interval = (int) Math.min(MAX_SECONDS, Math.max(1, seconds / (PROBES + 1)));
        int idle = (int) Math.min(MAX_SECONDS, Math.max(1, seconds - (long) PROBES * interval));
        return new Keepalive(idle, interval, PROBES);
    }

    /** How long after the last answer a silent peer's connection fails. */
    Duration bound() {
        return Duration.ofSeconds(idle + (long) interval * count);
    }

    void apply(SocketChannel channel) throws IOException {
        channel.setOption(StandardSocketOptions.SO_KEEPALIVE, true);
        channel.setOption(ExtendedSocketOptions.TCP_KEEPIDLE, idle);
        channel.setOption(ExtendedSocketOptions.TCP_KEEPINTERVAL, interval);
        channel.setOption(ExtendedSocketOptions.TCP_KEEPCOUNT, count);
    }
}
