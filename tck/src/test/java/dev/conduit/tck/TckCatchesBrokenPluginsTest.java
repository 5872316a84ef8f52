package dev.conduit.tck;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.platform.commons.support.AnnotationSupport;
import org.junit.platform.testkit.engine.EngineTestKit;
import org.junit.platform.testkit.engine.Event;
import org.junit.platform.testkit.engine.Events;

import java.nio.file.Files;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectMethod;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectNestedMethod;

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
                Arguments.of(BrokenPlugins.CountsBelowZeroSuite.class, "deliversEveryMessageOnceInOrder", "progress() answered -1"),
                Arguments.of(BrokenPlugins.CutsLargePayloadsSuite.class, "deliversEveryMessageOnceInOrder",
                        "payload of message 4: 3000 bytes delivered, 4000 sent"),
                Arguments.of(BrokenPlugins.CutsLargePayloadsSuite.class, "zeroCopySendCommitsWhatTheEncoderWroteAndAbandonsAFailedClaim",
                        "payload of zero-copy send 0 (the 3996 bytes its encoder wrote and returned): 3000 bytes delivered, 3996 sent"),
                Arguments.of(BrokenPlugins.DuplicatesMessagesSuite.class, "deliversEveryMessageOnceInOrder", "a duplicate makes more"),
                Arguments.of(BrokenPlugins.IgnoresRangeOffsetsSuite.class, "sendsHeadersAndPayloadsGivenAsRanges", "sent as ranges"),
                Arguments.of(BrokenPlugins.CommitsFailedEncodingsSuite.class, "zeroCopySendCommitsWhatTheEncoderWroteAndAbandonsAFailedClaim",
                        "the receiver never delivers it"),
                Arguments.of(BrokenPlugins.TrustsEncodedLengthsSuite.class, "zeroCopySendCommitsWhatTheEncoderWroteAndAbandonsAFailedClaim",
                        "returned maxLength + 1"),
                // The TCK's encoders return maxLength + 1, never a length below 0: this variant passes.
                Arguments.of(BrokenPlugins.TrustsNegativeEncodedLengthsSuite.class,
                        "zeroCopySendCommitsWhatTheEncoderWroteAndAbandonsAFailedClaim", "returned -1"),
                // Until the TCK sent messages from buffers it overwrote as trySend returned, this variant passed every test of messages.
                Arguments.of(BrokenPlugins.ReadsSendBuffersLaterSuite.class, "aSentMessagesBuffersMayBeReusedOnceTrySendAcceptedIt",
                        "payload of message 1, sent from buffers the caller overwrote as trySend returned true"),
                // The inbox copies each message as it arrives: until a handler sent while its message was delivered, this variant passed.
                Arguments.of(BrokenPlugins.FreesSlotsBeforeDeliveringSuite.class,
                        "aDeliveredMessageStaysAsDeliveredWhileItsHandlerSendsToTheSameReceiver",
                        "payload of message 1, read again as onMessage returned, after its handler sent "),
                // Through the runtime its late reads of the sending threads' buffers threw on other threads: a bare WrongThreadException.
                Arguments.of(BrokenPlugins.ReadsSendBuffersLaterSuite.class, "aMultiWorkerUsedFromManyThreadsKeepsEachThreadsOrder",
                        "trySend returned (TransportEndpoint#trySend: once it returns true the caller may reuse or free both segments, so a "
                                + "transport copies what it sends before it returns)"),
                Arguments.of(BrokenPlugins.NeverRefusesSuite.class, "refusesWhenFullAndDeliversWhatItAcceptedOnceTheReceiverProgresses", "must refuse"),
                Arguments.of(BrokenPlugins.HidesPeerDeathSuite.class, "aPeerThatGoesAwayFailsTheEndpointOnce", "closed peer to fail"),
                Arguments.of(BrokenPlugins.CallsACloseADeathSuite.class, "aPeerThatGoesAwayFailsTheEndpointOnce",
                        "CLOSED, or UNKNOWN where the transport cannot tell"),
                Arguments.of(BrokenPlugins.CallsACloseADeathSuite.class, "aKeepaliveProbeReportsAPeerThatWentAwayAndNoPeerThatLives",
                        "CLOSED, or UNKNOWN where the transport cannot tell"),
                Arguments.of(BrokenPlugins.CallsACloseADeathSuite.class, "aPeerWorkerThatGoesAwayFailsTheEndpointThroughTheRuntime",
                        "CLOSED, or UNKNOWN where the transport cannot tell"),
                Arguments.of(BrokenPlugins.ProbeFindsLivePeersDeadSuite.class, "aKeepaliveProbeReportsAPeerThatWentAwayAndNoPeerThatLives",
                        "what 1000 keepalive probes (checkPeer) of a peer that lives and progresses threw"),
                Arguments.of(BrokenPlugins.HidesPeerDeathSuite.class, "aKeepaliveProbeReportsAPeerThatWentAwayAndNoPeerThatLives",
                        "for: a keepalive probe (checkPeer) to report the peer that went away"),
                Arguments.of(BrokenPlugins.RefusesInsteadOfFailingSuite.class, "aPeerThatGoesAwayFailsTheEndpointOnce",
                        "from then on trySend throws that PeerFailedException"),
                Arguments.of(BrokenPlugins.DropsOnEndpointCloseSuite.class, "messagesAcceptedBeforeTheEndpointClosesAreDelivered",
                        "accepted before the endpoint closed"),
                Arguments.of(BrokenPlugins.PublishesAbsolutePathsSuite.class, "anAddressNamesNoAbsolutePathOfTheSharedDirectory",
                        "holds the shared directory's absolute path"),
                Arguments.of(BrokenPlugins.AcceptsTrailingBytesSuite.class, "malformedAddressesAreRefusedNamingTheProblem",
                        "with a byte after its end (PayloadReader#end checks there is none): the plugin connected (returned an endpoint) "
                                + "instead of refusing the address"),
                Arguments.of(BrokenPlugins.AcceptsTruncatedAddressesSuite.class, "malformedAddressesAreRefusedNamingTheProblem",
                        "connecting to an address cut to 0 of its 8 bytes: the plugin connected (returned an endpoint) instead of "
                                + "refusing the address"),
                Arguments.of(BrokenPlugins.NeverRefusesSuite.class, "refusesWhenFullAndDeliversWhatItAcceptedOnceTheReceiverProgresses", "or drop"),
                Arguments.of(BrokenPlugins.ReusesKeptPayloadsSuite.class,
                        "aKeptPayloadStaysAsDeliveredWhileLaterMessagesArriveUntilReleasedFromAnotherThread",
                        "kept (Transport.keepDelivered) and read once every later message arrived"),
                Arguments.of(BrokenPlugins.ReportsFromItsOwnThreadSuite.class, "aPeerThatGoesAwayFailsTheEndpointOnce",
                        "a thread of the plugin's own"),
                Arguments.of(BrokenPlugins.ThrowsWhenFullSuite.class, "refusesWhenFullAndDeliversWhatItAcceptedOnceTheReceiverProgresses",
                        "by returning false"),
                Arguments.of(BrokenPlugins.HidesPeerDeathSuite.class, "aPeerWorkerThatGoesAwayFailsTheEndpointThroughTheRuntime", "did not fail"),
                Arguments.of(BrokenPlugins.SleepsThroughWakeupsSuite.class, "awaitSleepsUntilSignalledOrAMessageArrives", "after signal()"),
                Arguments.of(BrokenPlugins.ForgetsEarlySignalsSuite.class, "aSignalBeforeAwaitMakesTheNextAwaitReturnTrue", "made while nobody slept"),
                Arguments.of(BrokenPlugins.SleepsPastAPassedTimeoutSuite.class, "anAwaitWhoseTimeoutHasPassedReturnsAtOnce",
                        "a timeout of 0 or less has passed"),
                // Until the check read the provides clause's classes, any provides of the service passed.
                Arguments.of(BrokenPlugins.ProvidesAnotherPluginSuite.class, "itsJarDeclaresItForServiceLoader",
                        "it provides it with [dev.conduit.tck.modular.OtherModularPlugin] only"),
                Arguments.of(BrokenPlugins.ClaimsMultiSuite.class, "aMultiPluginWithstandsConcurrentCalls", "concurrently"),
                Arguments.of(BrokenPlugins.UndeclaredSuite.class, "itsJarDeclaresItForServiceLoader", "and nothing says why"),
                Arguments.of(BrokenPlugins.NeverConnectsSuite.class, "aSerializedPluginWorksFromThreadsTakingTurns", "not accepted within"),
                Arguments.of(BrokenPlugins.LiesInProbeSuite.class, "probeIsAvailableHereAndHonest", "capability MEMORY"),
                Arguments.of(BrokenPlugins.RulesOutButOpensSuite.class, "probeIsAvailableHereAndHonest",
                        "whose probe ruled AM out here (no transport here: the directory is read-only), returned a Transport ("),
                Arguments.of(BrokenPlugins.ImportsUndeclaredSuite.class, "probeIsAvailableHereAndHonest",
                        "ipcImporter() without IPC (plugin 'tck-file' does not declare it) returned an IpcImporter ("),
                Arguments.of(BrokenPlugins.AcceptsBadHandlesSuite.class, "truncatedPayloadsAreRefusedNamingTheField",
                        "the importer of plugin 'tck-file' mapped a payload cut to"),
                Arguments.of(BrokenPlugins.MapsFreedExportsSuite.class, "anExportOfAFreedChunkNoLongerMaps",
                        "mapped the export of a freed chunk (8192 bytes) instead of refusing it: MemoryProvider.free revokes"),
                // Until the TCK allocated a chunk after the free, this variant passed: the freed chunk's file was gone.
                Arguments.of(BrokenPlugins.ReusesChunkNamesSuite.class, "anExportOfAFreedChunkNoLongerMaps",
                        "mapped the export of a freed chunk once a chunk of its size was allocated after it (8192 bytes) instead of refusing it"),
                // A table-indexed medium leaves no file behind: until the TCK imported after a close, this variant passed.
                Arguments.of(BrokenPlugins.KeepsExportsPastCloseSuite.class, "anExportOfAChunkStillAllocatedWhenItsProviderClosedNoLongerMaps",
                        "mapped the export of a chunk still allocated when its provider closed (8192 bytes) instead of refusing it: "
                                + "MemoryProvider.close frees every chunk"),
                Arguments.of(BrokenPlugins.IgnoresChunkLengthSuite.class, "alteredPayloadsAndLengthsFailCleanly",
                        "mapped the export of a 8192-byte chunk as 0 bytes (8192 bytes) instead of refusing it: IpcImporter.map refuses a chunkLength"),
                Arguments.of(BrokenPlugins.MapsAPrefixOfAChunkSuite.class, "alteredPayloadsAndLengthsFailCleanly",
                        "mapped the export of a 8192-byte chunk as 4096 bytes (4096 bytes) instead of refusing it"),
                Arguments.of(BrokenPlugins.MapsAnotherChunkForAnUnknownNameSuite.class, "alteredPayloadsAndLengthsFailCleanly",
                        "that are not the exported chunk's"),
                // Until the TCK imported from several threads at once, this variant passed the memory suite.
                Arguments.of(BrokenPlugins.ParsesIntoFieldsSuite.class, "oneImporterMapsForSeveralThreadsAtOnceEachItsOwnChunk",
                        "IpcImporter: stateless and thread-safe"),
                Arguments.of(BrokenPlugins.LeaksOnCloseSuite.class, "closeFreesEveryChunkAndIsIdempotent", "a leak"),
                Arguments.of(BrokenPlugins.DirtyChunksSuite.class, "allocatesZeroedWritablePageAlignedChunks", "of a fresh chunk"),
                Arguments.of(BrokenPlugins.ExportsNothingSuite.class, "truncatedPayloadsAreRefusedNamingTheField",
                        "declares capability IPC and its probe offers it here, but its memory provider's export() threw"),
                Arguments.of(BrokenPlugins.ExportsNothingSuite.class, "theRuntimePoolsAndCachesItsRegions",
                        "declares capability IPC and its probe offers it here, but a pool region's exportHandle()"),
                Arguments.of(BrokenPlugins.UnavailableMemorySuite.class, "allocatesZeroedWritablePageAlignedChunks",
                        "the probe of 'tck-file' says it is unavailable here (" + BrokenPlugins.UnavailableMemory.WHY
                                + "), and the runtime opens no MEMORY of an unavailable plugin"),
                Arguments.of(BrokenPlugins.UnavailableTransportSuite.class, "deliversEveryMessageOnceInOrder",
                        "says it is unavailable here (" + BrokenPlugins.UnavailableMemory.WHY + "), and the runtime opens no AM"),
                Arguments.of(BrokenPlugins.MappingCloseKeepsMappedSuite.class, "anExportMapsInThisProcessAsTheSameMemory",
                        "still mapped after ChunkMapping.close(), which unmaps it"),
                Arguments.of(BrokenPlugins.ClaimsExportersAliveForeverSuite.class,
                        "anImportThatCanTellItsExportersLifeSaysDeadOnceTheExportingProviderClosed", "a plugin that can tell says DEAD"),
                Arguments.of(BrokenPlugins.ClaimsExportersAliveForeverSuite.class,
                        "anImportThatCanTellItsExportersLifeSaysDeadOnceTheExportingProcessIsKilledAndKeepsItsData",
                        "after the exporting process was killed with SIGKILL: a plugin that can tell says DEAD"),
                Arguments.of(BrokenPlugins.PeerRegionsClaimExportersAliveForeverSuite.class,
                        "aPeerRegionThatCanTellItsExportersLifeSaysDeadOnceTheExportingPoolClosedAlsoAfterItsEndpointFailed",
                        "once the exporting pool closed, which frees its chunks: a plugin that can tell says DEAD"),
                Arguments.of(BrokenPlugins.LeavesDeadOwnersFilesSuite.class, "aKilledExportersFilesAreReclaimedByTheNextProviderAndALiveOnesStay",
                        "files of an exporting process of plugin 'tck-file' killed with SIGKILL are still in the shared directory"),
                Arguments.of(BrokenPlugins.LeavesDeadProcessesPrivateFilesSuite.class, "aKilledExportersFilesAreReclaimedByTheNextProviderAndALiveOnesStay",
                        "files of an allocating process (a plugin without IPC, whose memory is private to it) of plugin 'tck-file' killed "
                                + "with SIGKILL are still in the shared directory"),
                Arguments.of(BrokenPlugins.ReclaimsLiveOwnersFilesSuite.class, "aKilledExportersFilesAreReclaimedByTheNextProviderAndALiveOnesStay",
                        "removed files of an exporting process that lives from the shared directory"),
                Arguments.of(BrokenPlugins.LeavesDeadWorkersFilesSuite.class, "aKilledWorkersFilesAreReclaimedByTheNextTransportAndALiveOnesStay",
                        "files of a worker's process of plugin 'tck-loopback' killed with SIGKILL are still in the shared directory"),
                Arguments.of(BrokenPlugins.ReclaimsLiveWorkersFilesSuite.class, "aKilledWorkersFilesAreReclaimedByTheNextTransportAndALiveOnesStay",
                        "removed files of a worker's process that lives from the shared directory"),
                Arguments.of(BrokenPlugins.FreeKeepsMappingSuite.class, "freeUnmapsTheChunk",
                        "reading a freed chunk of plugin 'tck-file' succeeded: MemoryProvider.free unmaps"),
                Arguments.of(BrokenPlugins.ConnectsBlindlySuite.class, "connectToAClosedPeerThrowsInsteadOfAssumingItIsThere", "assumed the peer was there"),
                Arguments.of(BrokenPlugins.MessagesDoNotWakeSuite.class, "awaitSleepsUntilSignalledOrAMessageArrives", "when a message arrived"),
                Arguments.of(BrokenPlugins.UndeclaredCompareAndSwapSuite.class, "undeclaredOperationsThrowNotSupported",
                        "compareAndSwap() without ATOMICS (plugin 'tck-loopback' does not declare it) returned 0 instead of throwing "
                                + "NotSupportedException"),
                Arguments.of(BrokenPlugins.StopsAcceptingSuite.class, "aMultiPluginWithstandsConcurrentCalls", "not accepted within"),
                Arguments.of(BrokenPlugins.SwapsRegardlessSuite.class, "atomicsReachThePeersExportedRegion", "it must stay"),
                Arguments.of(BrokenPlugins.AddsByAReadAndAWriteSuite.class, "atomicsFromSeveralEndpointsAtOnceLoseNoUpdate",
                        "fetchAdd must be atomic"),
                Arguments.of(BrokenPlugins.SwapsByACompareAndAWriteSuite.class, "atomicsFromSeveralEndpointsAtOnceLoseNoUpdate",
                        "compareAndSwap must compare and replace atomically"),
                Arguments.of(BrokenPlugins.DamagesPutsSuite.class, "rmaReachesThePeersExportedRegion",
                        "bytes put into the peer's region at offset 100: byte " + BrokenPlugins.DamagesPuts.WRONG + " of 10000 found in the "
                                + "region as "),
                Arguments.of(BrokenPlugins.ReadsPutSourcesAtFlushSuite.class, "aPutsSourceMayBeReusedAndFreedOnceThePutReturns",
                        "put 0 at offset 0, its source overwritten as put returned, before the flush: byte 0 of 1000 found in the region as "),
                Arguments.of(BrokenPlugins.RecyclesDirtyChunksSuite.class, "chunksMadeOfFreedMemoryAreZeroedToo", "also when it reuses"),
                Arguments.of(BrokenPlugins.RefusesZeroVaguelySuite.class, "refusesSizesThatAreNotPositiveMultiplesOfThePageSize", "allocate(0)"),
                Arguments.of(BrokenPlugins.PadsChunksSuite.class, "allocatesZeroedWritablePageAlignedChunks",
                        "length of the chunk allocate(8192) of plugin 'tck-file' returned (exactly the size asked for"),
                Arguments.of(BrokenPlugins.SingleThreadedMemorySuite.class, "theRuntimeGivesPoolsOverIt",
                        "plugin 'tck-file' declares thread modes [SINGLE]: a pool is shared by threads"),
                Arguments.of(BrokenPlugins.RoundsSizesUpSuite.class, "refusesSizesThatAreNotPositiveMultiplesOfThePageSize",
                        "allocate(0) of plugin 'tck-file' (page size 4096) returned a chunk of 4096 bytes instead of refusing the size"),
                Arguments.of(BrokenPlugins.DeliversInTrySendSuite.class, "deliversEveryMessageOnceInOrder",
                        "delivered message 0 on thread 'tck-test deliversEveryMessageOnceInOrder' from inside trySend(), outside progress()"),
                // This test never looks at what the receiver got: the check after the test catches it.
                Arguments.of(BrokenPlugins.DeliversInTrySendSuite.class, "aPeerThatGoesAwayFailsTheEndpointOnce",
                        "from inside trySend(), outside progress()"),
                Arguments.of(BrokenPlugins.DeliversFromItsOwnThreadSuite.class, "deliversEveryMessageOnceInOrder",
                        "on thread 'tck-fixture-pump-"),
                Arguments.of(BrokenPlugins.DeliversFromItsOwnThreadSuite.class, "messagesAcceptedBeforeTheEndpointClosesAreDelivered",
                        "outside progress() (a thread of the plugin's own"),
                Arguments.of(BrokenPlugins.NamesSendersZeroSuite.class, "aTransportThatNamesSendersGivesEachConnectionOneKeyOfItsOwnNeverZero",
                        "the key of endpoint 0 of the first sender transport (never 0)"),
                Arguments.of(BrokenPlugins.OneKeyPerSenderTransportSuite.class,
                        "aTransportThatNamesSendersGivesEachConnectionOneKeyOfItsOwnNeverZero",
                        "never the key of another connection the transport still delivers from"),
                Arguments.of(BrokenPlugins.GivesItsOwnAddressAsTheSendersSuite.class,
                        "aSendersAddressIsItsTransportsAddressAndAReplyToItArrives",
                        "the address of the request's sender: byte "),
                Arguments.of(BrokenPlugins.NeverTellsOfTheEndSuite.class, "aSenderThatClosesItsEndpointIsToldOnceAfterItsLastMessage",
                        "after the sender closed its endpoint (MessageSink.onSenderClosed: the connection delivers nothing more"),
                Arguments.of(BrokenPlugins.NeverTellsOfTheEndSuite.class, "everyConnectionOfASenderWhoseTransportClosesIsToldOnce",
                        "after the sender's transport closed"),
                Arguments.of(BrokenPlugins.TellsOfTheEndTwiceSuite.class, "aSenderThatClosesItsEndpointIsToldOnceAfterItsLastMessage",
                        "(once per key)"),
                // Until the TCK closes an endpoint with messages the receiver has yet to deliver, this variant passes every test.
                Arguments.of(BrokenPlugins.TellsOfTheEndBeforeItsLastMessagesSuite.class,
                        "aSenderThatClosesItsEndpointIsToldOnceAfterItsLastMessage", "the end of a connection comes after its last message"),
                Arguments.of(BrokenPlugins.KeepsEndedSendersSuite.class, "aSenderThatClosesItsEndpointIsToldOnceAfterItsLastMessage",
                        "null, the connection delivers no more"),
                Arguments.of(BrokenPlugins.ForgetsSendersAfterTellingTheirEndSuite.class,
                        "aSenderThatClosesItsEndpointIsToldOnceAfterItsLastMessage", "asked inside onSenderClosed"),
                Arguments.of(BrokenPlugins.HoldsItsLockAcrossTheEndSuite.class,
                        "aSendersAddressAskedFromAnotherThreadWhileItsEndIsToldIsNotHeldUp", "held up: asked on another thread"),
                Arguments.of(BrokenPlugins.TellsOfSendersWhenItClosesSuite.class, "theReceiversOwnCloseTellsOfNoSender",
                        "not called when the transport itself closes"));
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

    private static Throwable failureOf(Class<?> suite, String rule) {
        Events tests = EngineTestKit.engine("junit-jupiter").selectors(selectMethod(suite, rule)).execute().testEvents();
        List<Event> failed = tests.failed().list();
        assertThat(failed).as("failed tests of %s", suite.getSimpleName()).hasSize(1);
        return failed.getFirst().getPayload(org.junit.platform.engine.TestExecutionResult.class).orElseThrow().getThrowable().orElseThrow();
    }

    /**
     * The child JVM of a hung import is destroyed when its guard runs out, and the failure shows what it printed. The guard
     * (30 s, {@link BrokenPlugins.HangsInImportUnderALongGuardSuite}) includes the child JVM's start, which the
     * announcement follows: at 5 s a loaded machine's start could use it all, and the failure then showed nothing printed.
     */
    @Test
    void aHungSecondProcessFailsTheTestAndIsDestroyed() throws Exception {
        Throwable cause = failureOf(BrokenPlugins.HangsInImportUnderALongGuardSuite.class, "anExportMapsInASecondProcess");
        assertThat(cause).isInstanceOf(AssertionError.class).hasMessageContaining("did not end within PT30S")
                .hasMessageContaining(BrokenPlugins.HangsInImport.ANNOUNCEMENT);
        List<ProcessHandle> children = ProcessHandle.current().descendants()
                .filter(p -> p.info().commandLine().orElse("").contains("HangsInImport")).toList();
        for (ProcessHandle child : children) child.onExit().get(10, TimeUnit.SECONDS);
        assertThat(children).as("importing JVMs of the hung import still alive").allMatch(p -> !p.isAlive());
    }

    /** Every suite inherits a hang guard: a test on its own thread, failed by a timeout of a few minutes. */
    @Test
    void everySuiteHasAHangGuard() {
        for (Class<?> suite : List.of(LoopbackPluginTckTest.class, FileMemoryPluginTckTest.class, FixtureMetadataTckTest.Loopback.class)) {
            Timeout timeout = AnnotationSupport.findAnnotation(suite, Timeout.class).orElseThrow();
            assertThat(timeout.unit().toMinutes(timeout.value())).as("minutes of the hang guard of %s", suite.getSimpleName()).isBetween(2L, 5L);
            assertThat(timeout.threadMode()).isEqualTo(Timeout.ThreadMode.SEPARATE_THREAD);
        }
    }

    /**
     * A plugin call that never returns fails its test by the timeout instead of hanging the build; the
     * test's thread, stuck in the plugin until close() released it, is joined before the next test.
     */
    @Test
    void aCallThatNeverReturnsFailsByTheTimeoutAndItsThreadIsJoined() {
        BrokenPlugins.SHARED_DIRECTORIES.clear();
        Throwable cause = failureOf(BrokenPlugins.HangsInProgressSuite.class, "deliversEveryMessageOnceInOrder");
        assertThat(cause).isInstanceOf(java.util.concurrent.TimeoutException.class).hasMessageContaining("timed out after 5 seconds");
        assertThat(cause.getSuppressed()).as("failures after the timeout (a thread left running)").isEmpty();
        assertThat(Thread.getAllStackTraces().keySet()).as("threads still in the plugin's progress()")
                .noneMatch(t -> Arrays.stream(t.getStackTrace()).anyMatch(e -> e.getClassName().startsWith(BrokenPlugins.HangsInProgress.class.getName())));
        assertThat(BrokenPlugins.SHARED_DIRECTORIES).hasSize(1).allMatch(d -> !Files.exists(d));
    }

    /** A thread that stays blocked in the plugin after everything was closed fails the test, named with its stack; the wait is bounded. */
    @Test
    void aThreadStillBlockedAfterTheTestFailsItNamingTheThread() {
        try {
            Throwable cause = failureOf(BrokenPlugins.HangsForeverSuite.class, "deliversEveryMessageOnceInOrder");
            assertThat(cause).isInstanceOf(java.util.concurrent.TimeoutException.class);
            assertThat(cause.getSuppressed()).singleElement().isInstanceOf(AssertionError.class)
                    .satisfies(e -> assertThat(e.getMessage()).contains("still running").contains("HangsForever").contains("progress"));
        } finally {
            BrokenPlugins.RELEASE_HANGS_FOREVER.countDown();
        }
    }

    /**
     * A thread the plugin started and its close() left running fails the test once everything is
     * closed, named with whether it is a daemon and its stack, after a bounded wait for it to end; the
     * threads the test itself started are not taken for the plugin's.
     */
    @Test
    void aThreadThePluginLeftRunningAfterCloseFailsTheTestNamingIt() {
        try {
            Throwable cause = failureOf(BrokenPlugins.LeavesAThreadRunningSuite.class, "awaitSleepsUntilSignalledOrAMessageArrives");
            assertThat(cause).isInstanceOf(AssertionError.class);
            assertThat(cause.getMessage()).contains("2 thread(s) started during the test").contains("still alive PT5S after") // its guard of 3 s is below the 5 s the check always waits
                    .contains("'" + BrokenPlugins.LeavesAThreadRunning.THREAD_NAME).contains("(not a daemon")
                    .contains(BrokenPlugins.LeavesAThreadRunning.class.getName() + ".lambda")
                    .doesNotContain("tck-await-").doesNotContain("tck-test ");
        } finally {
            BrokenPlugins.RELEASE_LEFT_THREADS.countDown();
        }
    }

    /**
     * A virtual thread the plugin started and its close() left running fails the test as a platform thread does, named
     * with its stack: the check finds it in the JDK's thread dump. It looked in the test's thread group only, which no
     * virtual thread is in, and such a plugin passed.
     */
    @Test
    void aVirtualThreadThePluginLeftRunningAfterCloseFailsTheTestNamingIt() {
        try {
            Throwable cause = failureOf(BrokenPlugins.LeavesAVirtualThreadRunningSuite.class, "awaitSleepsUntilSignalledOrAMessageArrives");
            assertThat(cause).isInstanceOf(AssertionError.class);
            assertThat(cause.getMessage()).contains("2 thread(s) started during the test").contains("still alive PT5S after")
                    .contains("virtual thread #").contains("'" + BrokenPlugins.LeavesAVirtualThreadRunning.THREAD_NAME)
                    .contains(BrokenPlugins.LeavesAVirtualThreadRunning.class.getName() + ".lambda");
        } finally {
            BrokenPlugins.RELEASE_LEFT_VIRTUAL_THREADS.countDown();
        }
    }

    /**
     * Where the JDK does not list every virtual thread ({@code -Djdk.trackAllThreads=false}, here as the check reads it), the
     * check says it cannot see them, naming the property, rather than pass a plugin whose close() leaves one running.
     */
    @Test
    void aRunThatCannotSeeVirtualThreadsSaysSoRatherThanPass() {
        String track = System.getProperty("jdk.trackAllThreads");
        System.setProperty("jdk.trackAllThreads", "false");
        try {
            Throwable cause = failureOf(LoopbackPluginTckTest.class, "awaitSleepsUntilSignalledOrAMessageArrives");
            assertThat(cause).isInstanceOf(AssertionError.class).hasMessageContaining("the TCK cannot see the virtual threads started "
                    + "during the test: jdk.trackAllThreads is false").hasMessageContaining("run the TCK without -Djdk.trackAllThreads=false");
        } finally {
            if (track == null) System.clearProperty("jdk.trackAllThreads");
            else System.setProperty("jdk.trackAllThreads", track);
        }
    }

    /**
     * A descriptor the plugin opened and its close() left open fails the test, as a thread it left running does:
     * Transport.close releases the transport's resources, and the check after each test looks at threads and at the
     * shared directory's files only, so a transport whose close forgets its listening socket passed every test.
     */
    @Test
    void aSocketThePluginLeftOpenAfterCloseFailsTheTestNamingIt() throws Exception {
        try {
            Throwable cause = failureOf(BrokenPlugins.LeavesItsListeningSocketOpenSuite.class, "publishesASmallAddressAndConnects");
            assertThat(cause).isInstanceOf(AssertionError.class);
            assertThat(cause.getMessage()).contains("descriptor").contains("socket");
        } finally {
            for (var socket : BrokenPlugins.LeavesItsListeningSocketOpen.SOCKETS) socket.close();
        }
    }

    /**
     * A plugin that leaves a thread running in every test costs the suite its whole guard once: the
     * tests after the first that did wait the 5 s the check always waits, and the first one says
     * so. Each test waited the whole guard, a minute by default: half an hour for a suite.
     */
    @Test
    void aSuiteWaitsItsWholeGuardForThreadsLeftRunningOnceThenFiveSeconds() {
        Class<?> suite = BrokenPlugins.LeavesAThreadRunningUnderALongGuardSuite.class;
        try {
            List<String> messages = EngineTestKit.engine("junit-jupiter")
                    .selectors(selectMethod(suite, "awaitSleepsUntilSignalledOrAMessageArrives"),
                            selectMethod(suite, "publishesASmallAddressAndConnects"))
                    .execute().testEvents().failed().list().stream()
                    .map(e -> e.getPayload(org.junit.platform.engine.TestExecutionResult.class).orElseThrow().getThrowable()
                            .orElseThrow().getMessage())
                    .toList();
            assertThat(messages).as("failures of the two tests").hasSize(2);
            assertThat(messages).filteredOn(m -> m.contains("still alive PT8S after")).as("failures after the whole guard")
                    .singleElement().satisfies(m -> assertThat(m).contains("(the suite's later tests wait PT5S for threads to end, not PT8S)"));
            assertThat(messages).filteredOn(m -> m.contains("still alive PT5S after")).as("failures after 5 s").hasSize(1);
        } finally {
            BrokenPlugins.LeavesAThreadRunningUnderALongGuardSuite.RELEASE.countDown();
        }
    }

    /** The shared directory is deleted after a test whose close threw or that left files behind, once the listing was taken. */
    @Test
    void theSharedDirectoryIsDeletedAlsoWhenTheTestFails() {
        BrokenPlugins.SHARED_DIRECTORIES.clear();
        assertThat(failureOf(BrokenPlugins.ThrowsOnCloseSuite.class, "publishesASmallAddressAndConnects"))
                .hasMessageContaining("close() throws after closing");
        assertThat(failureOf(BrokenPlugins.LeaksOnCloseSuite.class, "closeFreesEveryChunkAndIsIdempotent"))
                .hasMessageContaining("a leak");
        assertThat(BrokenPlugins.SHARED_DIRECTORIES).hasSize(2).allMatch(d -> !Files.exists(d), "deleted");
    }

    /**
     * A named module that provides the plugin's own class, or a provider factory that makes it, passes the check of its
     * declarations, which fails one that provides another class ({@link BrokenPlugins.ProvidesAnotherPluginSuite}).
     */
    @Test
    void aModuleThatProvidesThePluginOrAFactoryOfItPassesTheCheckOfItsDeclarations() {
        for (Class<?> suite : List.of(BrokenPlugins.ProvidesItSuite.class, BrokenPlugins.ProvidesItThroughAFactorySuite.class)) {
            Events tests = EngineTestKit.engine("junit-jupiter").selectors(selectMethod(suite, "itsJarDeclaresItForServiceLoader"))
                    .execute().testEvents();
            assertThat(tests.succeeded().count()).as("the check of the declarations of %s, succeeded", suite.getSimpleName()).isEqualTo(1);
        }
    }

    /** A plugin that declares ATOMICS without RMA has its atomics checked; only the RMA test is not part of its contract. */
    @Test
    void atomicsAreCheckedWithoutRma() {
        List<Class<?>> enclosing = List.of(WellBehavedVariantsTckTest.class);
        Class<?> suite = WellBehavedVariantsTckTest.AtomicsWithoutRmaTransport.class;
        Events atomics = EngineTestKit.engine("junit-jupiter")
                .selectors(selectNestedMethod(enclosing, suite, "atomicsReachThePeersExportedRegion")).execute().testEvents();
        assertThat(atomics.succeeded().count()).as("atomics test of a plugin with ATOMICS and no RMA, succeeded").isEqualTo(1);
        Events rma = EngineTestKit.engine("junit-jupiter")
                .selectors(selectNestedMethod(enclosing, suite, "rmaReachesThePeersExportedRegion")).execute().testEvents();
        assertThat(rma.aborted().count()).as("RMA test of a plugin without RMA, aborted").isEqualTo(1);
    }

    /**
     * A probe that rules the transport out here, honestly: the probe test passes, and the transport
     * suite fails naming why instead of testing a transport that is not there.
     */
    @Test
    void aTransportRuledOutHereHonestlyPassesTheProbeTestAndTheTransportSuiteSaysWhyItCannotRun() {
        Events honest = EngineTestKit.engine("junit-jupiter")
                .selectors(selectMethod(BrokenPlugins.RulesTransportOutHonestlySuite.class, "probeIsAvailableHereAndHonest"))
                .execute().testEvents();
        assertThat(honest.succeeded().count()).as("the probe test of an honest plugin").isEqualTo(1);
        Throwable cause = failureOf(BrokenPlugins.RulesTransportOutHonestlyTransportSuite.class, "deliversEveryMessageOnceInOrder");
        assertThat(cause).isInstanceOf(AssertionError.class).hasMessageContaining("rules capability AM out here ("
                + WellBehavedVariants.RulesTransportOutHonestly.WHY + ")").hasMessageContaining("run the TCK where the plugin offers it");
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
