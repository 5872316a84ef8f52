package dev.conduit.plugin.memfd;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class FdProtocolTest {

    /**
     * memfd.connect.timeout and memfd.server.timeout accept up to Long.MAX_VALUE ns: rounding the time left up by
     * adding 999_999 ns overflowed into a negative timeout, which poll reads as "wait without limit".
     */
    @Test
    void theLongestTimeoutAKeyAcceptsIsTheLongestPollNotAnEndlessOne() {
        // Loaded first: its loading, between reading the clock here and there, would use up the millisecond that overflows.
        assertThat(FdProtocol.pollTimeout(System.nanoTime() - 1)).isZero();
        assertThat(FdProtocol.pollTimeout(System.nanoTime() + Long.MAX_VALUE)).isEqualTo(Integer.MAX_VALUE);
    }
}
