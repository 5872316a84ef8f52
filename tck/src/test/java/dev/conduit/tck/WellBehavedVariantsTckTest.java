package dev.conduit.tck;

import dev.conduit.spi.ConduitPlugin;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.platform.engine.DiscoverySelector;
import org.junit.platform.testkit.engine.EngineTestKit;
import org.junit.platform.testkit.engine.Events;

import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectMethod;

/** Plugins that use a freedom the SPI gives ({@link WellBehavedVariants}) pass the suites. */
class WellBehavedVariantsTckTest {

    /** trySend refuses until the sender's own progress() reclaims its buffers: the suites progress the sender too. */
    @Nested
    class ReclaimsOnOwnProgressMetadata extends PluginMetadataContract {
        @Override
        protected ConduitPlugin newPlugin() {
            return new WellBehavedVariants.ReclaimsOnOwnProgress();
        }

        @Override
        protected Duration progressGuard() {
            return Duration.ofSeconds(5);
        }

        @Override
        protected boolean foundByServiceLoader() {
            return false; // a test class, added in code
        }
    }

    @Nested
    class ReclaimsOnOwnProgressTransport extends TransportContract {
        @Override
        protected ConduitPlugin newPlugin() {
            return new WellBehavedVariants.ReclaimsOnOwnProgress();
        }

        @Override
        protected Duration progressGuard() {
            return Duration.ofSeconds(5);
        }
    }

    /**
     * Finds a dead peer only through its keepalive probe: the tests of a peer that goes away pass,
     * through the probe the runtime's keepalive asks (and the transport suite asks as it would).
     */
    @Nested
    class FindsDeathOnlyByProbeTransport extends TransportContract {
        @Override
        protected ConduitPlugin newPlugin() {
            return new WellBehavedVariants.FindsDeathOnlyByProbe();
        }
    }

    /** Names senders and gives their addresses: the tests of answering a message are run, not aborted. */
    @Nested
    class NamesSendersTransport extends TransportContract {
        @Override
        protected ConduitPlugin newPlugin() {
            return new WellBehavedVariants.NamesSenders();
        }
    }

    /** Keeps what it delivers until released: the test of kept payloads is run, not aborted. */
    @Nested
    class KeepsDeliveredTransport extends TransportContract {
        @Override
        protected ConduitPlugin newPlugin() {
            return new WellBehavedVariants.KeepsDelivered();
        }
    }

    /** ATOMICS without RMA: the atomics are checked, not skipped with the RMA test. */
    @Nested
    class AtomicsWithoutRmaTransport extends TransportContract {
        @Override
        protected ConduitPlugin newPlugin() {
            return new WellBehavedVariants.AtomicsWithoutRma();
        }
    }

    /** A daemon thread per transport that ends a moment after close(): not taken for a leak. */
    @Nested
    class StopsItsThreadOnCloseTransport extends TransportContract {
        @Override
        protected ConduitPlugin newPlugin() {
            return new WellBehavedVariants.StopsItsThreadOnClose();
        }
    }

    /**
     * A thread that ends on its own a second after the close (conduit-unmapper's grace) under a
     * progressGuard() shorter than that (900 ms): the posix and memfd suites with a guard of 500 ms failed
     * their first test, naming conduit-unmapper as a thread the plugin left running.
     */
    @Nested
    class EndsItsThreadASecondAfterCloseUnderAShortGuardTransport extends TransportContract {
        @Override
        protected ConduitPlugin newPlugin() {
            return new WellBehavedVariants.EndsItsThreadASecondAfterClose();
        }

        @Override
        protected Duration progressGuard() {
            // Shorter than the thread's second, and no shorter: the same guard bounds every progress loop of the contract
            // (at 500 ms, a loaded machine failed the MULTI test's 8,000 messages from four threads, whose guard then ran
            // from the first message, not from the last: 6,894 had arrived).
            return Duration.ofMillis(900);
        }
    }

    /**
     * A transport that delivers 1,000 messages a millisecond apart passes the delivery test under a
     * guard of 500 ms: the guard runs from the last message that arrived. It failed while the guard
     * bounded the whole stream.
     */
    @Test
    void aStreamSlowerThanTheGuardButNeverStoppedPasses() {
        EngineTestKit.engine("junit-jupiter")
                .selectors(selectMethod(WellBehavedVariants.DeliversSlowlyButSteadilySuite.class, "deliversEveryMessageOnceInOrder"))
                .execute()
                .testEvents()
                .assertStatistics(stats -> stats.started(1).succeeded(1).failed(0));
    }

    /**
     * The metadata suite's wait for the rest of 200 messages sent from threads in turn runs its guard
     * from the last arrival too: a message every 5 ms passes under a guard of 500 ms. It failed while
     * that wait bounded the whole rest, with the messages after the first half second missing.
     */
    @Test
    void aStreamSlowerThanTheGuardButNeverStoppedPassesTheSerializedTest() {
        EngineTestKit.engine("junit-jupiter")
                .selectors(selectMethod(WellBehavedVariants.DeliversSlowlyButSteadilyMetadataSuite.class,
                        "aSerializedPluginWorksFromThreadsTakingTurns"))
                .execute()
                .testEvents()
                .assertStatistics(stats -> stats.started(1).succeeded(1).failed(0));
    }

    /**
     * A plugin that reclaims a dead exporter's files only at a trigger of its own passes the check of a
     * killed exporter's files once its suite names that trigger (reclaimTheFilesOfDeadExporters); with
     * the default trigger, the next provider, it fails (BrokenPlugins.LeavesDeadOwnersFiles).
     */
    @Test
    void aPluginThatReclaimsAtATriggerOfItsOwnPassesTheCheckOfAKilledExportersFilesWhenItsSuiteNamesIt() {
        EngineTestKit.engine("junit-jupiter")
                .selectors(selectMethod(WellBehavedVariants.ReclaimsOnlyWhenAskedSuite.class,
                        "aKilledExportersFilesAreReclaimedByTheNextProviderAndALiveOnesStay"))
                .execute()
                .testEvents()
                .assertStatistics(stats -> stats.started(1).succeeded(1).failed(0));
    }

    /**
     * A plugin without IPC whose private chunks are files in the shared directory passes the check of a
     * killed process's files when its provider's open reclaims a dead process's; without that it fails
     * (BrokenPlugins.LeavesDeadProcessesPrivateFiles).
     */
    @Test
    void aPluginWithoutIpcThatReclaimsADeadProcesssPrivateFilesPassesTheCheckOfAKilledProcesssFiles() {
        EngineTestKit.engine("junit-jupiter")
                .selectors(selectMethod(WellBehavedVariants.PrivateFileMemorySuite.class,
                        "aKilledExportersFilesAreReclaimedByTheNextProviderAndALiveOnesStay"))
                .execute()
                .testEvents()
                .assertStatistics(stats -> stats.started(1).succeeded(1).failed(0));
    }

    /**
     * A provider whose medium is not a file (a device's allocation table, {@link TableMemoryPlugin}) passes every check made
     * in one process, the stale exports' among them, whose broken variant leaves no file for the check of the shared
     * directory to find ({@link BrokenPlugins.KeepsExportsPastClose} fails the one of a close). Its imports map in the
     * exporting JVM only: the checks of a second process are not its.
     */
    @Test
    void aTableIndexedProviderPassesTheChecksMadeInOneProcess() {
        Class<?> suite = WellBehavedVariants.TableMemorySuite.class;
        List<String> checks = List.of("allocatesZeroedWritablePageAlignedChunks", "chunksMadeOfFreedMemoryAreZeroedToo",
                "refusesSizesThatAreNotPositiveMultiplesOfThePageSize", "freeUnmapsTheChunk", "closeFreesEveryChunkAndIsIdempotent",
                "anExportMapsInThisProcessAsTheSameMemory", "oneImporterMapsForSeveralThreadsAtOnceEachItsOwnChunk",
                "anExportOfAFreedChunkNoLongerMaps", "anExportOfAChunkStillAllocatedWhenItsProviderClosedNoLongerMaps",
                "truncatedPayloadsAreRefusedNamingTheField", "alteredPayloadsAndLengthsFailCleanly", "theRuntimeGivesPoolsOverIt",
                "theRuntimePoolsAndCachesItsRegions");
        Events tests = EngineTestKit.engine("junit-jupiter")
                .selectors(checks.stream().map(check -> selectMethod(suite, check)).toArray(DiscoverySelector[]::new))
                .execute()
                .testEvents();
        assertThat(tests.failed().list()).as("checks of %s that failed", suite.getSimpleName())
                .extracting(e -> e.getTestDescriptor().getDisplayName() + ": " + e.getPayload(org.junit.platform.engine.TestExecutionResult.class)
                        .flatMap(org.junit.platform.engine.TestExecutionResult::getThrowable).orElseThrow())
                .isEmpty();
        assertThat(tests.succeeded().count()).as("checks of %s that succeeded", suite.getSimpleName()).isEqualTo(checks.size());
    }

    /** A suite whose trigger aborts (the files are cleared outside the plugin) skips the check, showing the reason, and leaves nothing. */
    @Test
    void aPluginWhoseDeadExportersFilesAreClearedOutsideItSkipsTheCheckSayingWhy() {
        Events tests = EngineTestKit.engine("junit-jupiter")
                .selectors(selectMethod(WellBehavedVariants.ClearedOutsideThePluginSuite.class,
                        "aKilledExportersFilesAreReclaimedByTheNextProviderAndALiveOnesStay"))
                .execute()
                .testEvents();
        tests.assertStatistics(stats -> stats.started(1).aborted(1).failed(0));
        assertThat(tests.aborted().list()).singleElement().satisfies(event -> assertThat(
                event.getPayload(org.junit.platform.engine.TestExecutionResult.class).orElseThrow().getThrowable().orElseThrow())
                .hasMessage(WellBehavedVariants.ClearedOutsideThePluginSuite.WHY));
    }

    /**
     * A transport that holds a lease in the shared directory and reclaims dead owners' at its open
     * passes the check of a killed worker's files, with the default trigger (the next transport);
     * without the reclaim it fails (BrokenPlugins.LeavesDeadWorkersFiles).
     */
    @Test
    void aTransportThatReclaimsDeadWorkersFilesAtItsOpenPassesTheCheckOfAKilledWorkersFiles() {
        EngineTestKit.engine("junit-jupiter")
                .selectors(selectMethod(WellBehavedVariants.LeasedLoopbackSuite.class,
                        "aKilledWorkersFilesAreReclaimedByTheNextTransportAndALiveOnesStay"))
                .execute()
                .testEvents()
                .assertStatistics(stats -> stats.started(1).succeeded(1).failed(0));
    }

    /** The TCK's loopback makes no file: the check is skipped, naming that. */
    @Test
    void aTransportThatMakesNoFileSkipsTheCheckOfAKilledWorkersFilesSayingWhy() {
        Events tests = EngineTestKit.engine("junit-jupiter")
                .selectors(selectMethod(LoopbackPluginTckTest.class, "aKilledWorkersFilesAreReclaimedByTheNextTransportAndALiveOnesStay"))
                .execute()
                .testEvents();
        tests.assertStatistics(stats -> stats.started(1).aborted(1).failed(0));
        assertThat(tests.aborted().list()).singleElement().satisfies(event -> assertThat(
                event.getPayload(org.junit.platform.engine.TestExecutionResult.class).orElseThrow().getThrowable().orElseThrow())
                .hasMessageContaining("made no file in the shared directory"));
    }
}
