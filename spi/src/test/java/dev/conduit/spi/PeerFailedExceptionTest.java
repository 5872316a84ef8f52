package dev.conduit.spi;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class PeerFailedExceptionTest {

    /** A plugin built before SPI 1.1 added the reason keeps its constructors, and says nothing it cannot. */
    @Test
    void theConstructorsWithoutAReasonSayItIsUnknown() {
        assertThat(new PeerFailedException("gone").reason()).isEqualTo(PeerFailedException.Reason.UNKNOWN);
        assertThat(new PeerFailedException("gone", new IllegalStateException()).reason()).isEqualTo(PeerFailedException.Reason.UNKNOWN);
    }

    @Test
    void aFailureMadeOfAnotherKeepsItsReasonAndHasItForCause() {
        PeerFailedException transports = new PeerFailedException(PeerFailedException.Reason.HUNG, "memfd: peer worker is hung");
        PeerFailedException runtimes = new PeerFailedException("endpoint over 'memfd' failed: " + transports.getMessage(), transports);
        assertThat(runtimes.reason()).isEqualTo(PeerFailedException.Reason.HUNG);
        assertThat(runtimes).hasCause(transports);
        assertThat(new PeerFailedException("no cause", (PeerFailedException) null).reason()).isEqualTo(PeerFailedException.Reason.UNKNOWN);
    }

    @Test
    void aNullReasonIsRefusedNamingIt() {
        assertThatThrownBy(() -> new PeerFailedException((PeerFailedException.Reason) null, "gone"))
                .isInstanceOf(NullPointerException.class).hasMessage("reason");
        assertThatThrownBy(() -> new PeerFailedException(null, "gone", new IllegalStateException()))
                .isInstanceOf(NullPointerException.class).hasMessage("reason");
    }
}
