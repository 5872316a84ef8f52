package dev.conduit.tck;

import org.junit.jupiter.api.Test;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.testkit.engine.EngineTestKit;
import org.junit.platform.testkit.engine.Events;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectMethod;

/**
 * The closes after a TCK test go on past an {@code Error}. Until 2026-12-06 PluginContract#closeAndCheckSharedDirectory
 * closed what a test opened in a loop that caught Exception only, so an Error from one close() (a fault on a truncated
 * mapping, a missing class) left the loop, every object opened before it stayed open (its threads running on, its
 * locks held, into the suite's next tests), and the checks of threads and files were skipped.
 */
class TckClosesEverythingAfterAnErrorTest {

    @Test
    void everyTransportATestOpenedIsClosedAlsoWhenTheFirstCloseThrowsAnError() {
        BrokenPlugins.ThrowsAnErrorOnClose.OPENED.clear();
        Events tests = EngineTestKit.engine("junit-jupiter")
                .selectors(selectMethod(BrokenPlugins.ThrowsAnErrorOnCloseSuite.class, "publishesASmallAddressAndConnects"))
                .execute().testEvents();
        assertThat(tests.failed().count()).as("the test whose close() threw, failed").isEqualTo(1);
        assertThat(BrokenPlugins.ThrowsAnErrorOnClose.OPENED).as("transports the test opened").hasSize(2);
        assertThat(BrokenPlugins.ThrowsAnErrorOnClose.OPENED).as("transports the test opened that were closed after it")
                .allMatch(t -> t.closed);
        Throwable failure = tests.failed().stream().findFirst().orElseThrow().getPayload(TestExecutionResult.class).orElseThrow()
                .getThrowable().orElseThrow();
        assertThat(failure).as("the test's failure: the first close's Error").isInstanceOf(InternalError.class);
        assertThat(failure.getSuppressed()).as("suppressed in it: the second close's").singleElement().isInstanceOf(InternalError.class);
    }
}
