package dev.conduit.tck;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.platform.engine.support.descriptor.MethodSource;
import org.junit.platform.testkit.engine.EngineTestKit;
import org.junit.platform.testkit.engine.Events;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectClass;

/**
 * The transport suite sends a message of exactly the declared limits. Until 2026-12-06 it never sent a header longer
 * than 40 bytes nor a payload longer than 200,000 bytes (TransportContract.Numbered), whatever maxHeaderSize() and
 * maxPayloadSize() declared, so a transport that cut what lies between those sizes and its declared limits passed every
 * test of the suite.
 */
class TckChecksTheDeclaredLimitsTest {

    @ParameterizedTest(name = "{0}")
    @ValueSource(classes = {BrokenPlugins.CutsLongHeadersSuite.class, BrokenPlugins.CutsPayloadsBelowItsLimitSuite.class})
    void theTransportSuiteFailsATransportThatCutsMessagesItsLimitsAdmit(Class<?> suite) {
        Events tests = EngineTestKit.engine("junit-jupiter").selectors(selectClass(suite)).execute().testEvents();
        assertThat(tests.succeeded().count()).as("tests of %s that succeeded", suite.getSimpleName()).isPositive();
        assertThat(tests.failed().list()).as("tests of %s that failed (%d succeeded, %d aborted): its transport delivers a message "
                        + "within its declared limits cut short", suite.getSimpleName(), tests.succeeded().count(), tests.aborted().count())
                .extracting(e -> ((MethodSource) e.getTestDescriptor().getSource().orElseThrow()).getMethodName())
                .containsExactly("deliversAMessageOfExactlyItsDeclaredLimitsIntact");
    }
}
