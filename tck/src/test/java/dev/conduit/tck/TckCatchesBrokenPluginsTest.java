package dev.conduit.tck;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.platform.testkit.engine.EngineTestKit;
import org.junit.platform.testkit.engine.Event;
import org.junit.platform.testkit.engine.Events;

import java.util.List;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectMethod;

/**
 * The TCK catches a plugin that breaks a rule: each broken fixture ({@link BrokenPlugins}) fails
 * the suite's test of that rule, which the matching well-behaved fixture passes
 * ({@link LoopbackPluginTckTest}, {@link FileMemoryPluginTckTest}, {@link FixtureMetadataTckTest}).
 */
class TckCatchesBrokenPluginsTest {

    static Stream<Arguments> brokenRules() {
        return Stream.of(
                Arguments.of(BrokenPlugins.DropsMessagesSuite.class, "deliversEveryMessageOnceInOrder", "messages delivered"),
                Arguments.of(BrokenPlugins.ReordersMessagesSuite.class, "deliversEveryMessageOnceInOrder", "(order)"),
                Arguments.of(BrokenPlugins.DuplicatesMessagesSuite.class, "deliversEveryMessageOnceInOrder", "a duplicate makes more"),
                Arguments.of(BrokenPlugins.NeverRefusesSuite.class, "refusesWhenFullAndDeliversWhatItAcceptedOnceTheReceiverProgresses", "must refuse"),
                Arguments.of(BrokenPlugins.HidesPeerDeathSuite.class, "aPeerThatGoesAwayFailsTheEndpointOnce", "closed peer to fail"),
                Arguments.of(BrokenPlugins.HidesPeerDeathSuite.class, "aPeerWorkerThatGoesAwayFailsTheEndpointThroughTheRuntime", "did not fail"),
                Arguments.of(BrokenPlugins.SleepsThroughWakeupsSuite.class, "awaitSleepsUntilSignalledOrAMessageArrives", "after signal()"),
                Arguments.of(BrokenPlugins.ForgetsEarlySignalsSuite.class, "aSignalBeforeAwaitMakesTheNextAwaitReturnTrue", "made while nobody slept"),
                Arguments.of(BrokenPlugins.ClaimsMultiSuite.class, "aMultiPluginWithstandsConcurrentCalls", "concurrently"),
                Arguments.of(BrokenPlugins.NeverConnectsSuite.class, "aSerializedPluginWorksFromThreadsTakingTurns", "not accepted within"),
                Arguments.of(BrokenPlugins.LiesInProbeSuite.class, "probeIsAvailableHereAndHonest", "capability MEMORY"),
                Arguments.of(BrokenPlugins.AcceptsBadHandlesSuite.class, "truncatedPayloadsAreRefusedNamingTheField", "cut to"),
                Arguments.of(BrokenPlugins.LeaksOnCloseSuite.class, "closeFreesEveryChunkAndIsIdempotent", "a leak"),
                Arguments.of(BrokenPlugins.DirtyChunksSuite.class, "allocatesZeroedWritablePageAlignedChunks", "of a fresh chunk"),
                Arguments.of(BrokenPlugins.FreeKeepsMappingSuite.class, "freeUnmapsTheChunk", "reading a freed chunk"));
    }

    @ParameterizedTest(name = "{0} fails {1}")
    @MethodSource("brokenRules")
    void theSuiteFailsTheBrokenRule(Class<?> suite, String rule, String expectedMessage) {
        Events tests = EngineTestKit.engine("junit-jupiter")
                .selectors(selectMethod(suite, rule))
                .execute()
                .testEvents();
        List<Event> failed = tests.failed().list();
        assertThat(failed).as("failed tests of %s", suite.getSimpleName()).hasSize(1);
        Throwable cause = failed.getFirst().getPayload(org.junit.platform.engine.TestExecutionResult.class).orElseThrow()
                .getThrowable().orElseThrow();
        assertThat(cause).as("why %s failed %s", suite.getSimpleName(), rule).isInstanceOf(AssertionError.class);
        assertThat(cause.getMessage() + String.valueOf(cause.getCause())).contains(expectedMessage);
    }

    @org.junit.jupiter.api.Test
    void anUndeclaredCapabilityIsNotPartOfTheContractAndTheReportSaysSo() {
        Events tests = EngineTestKit.engine("junit-jupiter")
                .selectors(selectMethod(LoopbackPluginTckTest.class, "rmaReachesThePeersExportedRegion"))
                .execute()
                .testEvents();
        assertThat(tests.aborted().list()).singleElement().satisfies(event -> assertThat(
                event.getPayload(org.junit.platform.engine.TestExecutionResult.class).orElseThrow().getThrowable().orElseThrow())
                .hasMessageContaining("plugin 'tck-loopback' does not declare capability RMA"));
    }
}
