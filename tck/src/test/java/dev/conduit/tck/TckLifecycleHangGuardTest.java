package dev.conduit.tck;

import org.junit.jupiter.api.Test;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.testkit.engine.EngineTestKit;
import org.junit.platform.testkit.engine.Event;

import java.nio.file.Files;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectMethod;

/**
 * The suite's hang guard bounds the calls into the plugin made before and after a test too. Until 2026-12-06 it was a
 * class-level {@code @Timeout} only, which JUnit applies to test methods and not to lifecycle methods: the suites open
 * the plugin in {@code @BeforeEach} and close what a test opened in the {@code @AfterEach} closeAndCheckSharedDirectory,
 * so a plugin's probe() or close() that never returned hung the author's build, against plugin-authoring.md's "No test
 * hangs the build", and after a hung close the shared directory was never deleted.
 */
class TckLifecycleHangGuardTest {

    @Test
    void aCloseThatNeverReturnsFailsItsTestByTheSuitesHangGuardAndTheSharedDirectoryIsDeleted() throws InterruptedException {
        Throwable failure = failureOfAHungRun(BrokenPlugins.HangsInCloseSuite.class, BrokenPlugins.RELEASE_HANGS_IN_CLOSE);
        assertThat(failure).isInstanceOf(TimeoutException.class).hasMessageContaining("close() timed out after 5 seconds")
                .hasMessageContaining(BrokenPlugins.HangsInClose.class.getName());
    }

    @Test
    void aProbeThatNeverReturnsFailsItsTestByTheSuitesHangGuardAndTheSharedDirectoryIsDeleted() throws InterruptedException {
        Throwable failure = failureOfAHungRun(BrokenPlugins.HangsInProbeSuite.class, BrokenPlugins.RELEASE_HANGS_IN_PROBE);
        assertThat(failure).isInstanceOf(TimeoutException.class).hasMessageContaining("checkDeclaration() timed out after 5 seconds")
                .hasMessageContaining(BrokenPlugins.HangsInProbe.class.getName());
    }

    /**
     * Runs one test of {@code suite}, whose plugin hangs until {@code release}, and returns its failure, once it checked
     * that the run ended and the test's shared directory is gone; releases the plugin at the end.
     */
    private static Throwable failureOfAHungRun(Class<?> suite, CountDownLatch release) throws InterruptedException {
        BrokenPlugins.SHARED_DIRECTORIES.clear();
        AtomicReference<List<Event>> failed = new AtomicReference<>();
        Thread running = Thread.ofPlatform().name("running " + suite.getSimpleName()).start(() -> failed.set(EngineTestKit.engine("junit-jupiter")
                .selectors(selectMethod(suite, "publishesASmallAddressAndConnects"))
                .execute().testEvents().failed().list()));
        try {
            // A hang guard, far above the suite's own of 5 s: the run either ended by it or hangs.
            Duration hangGuard = Duration.ofSeconds(60);
            running.join(hangGuard);
            assertThat(running.isAlive()).as("the run of %s still inside the plugin, %s after it started under a hang guard of 5 s",
                    suite.getSimpleName(), hangGuard).isFalse();
            assertThat(failed.get()).as("failed tests of %s", suite.getSimpleName()).hasSize(1);
            assertThat(BrokenPlugins.SHARED_DIRECTORIES).as("the test's shared directory, after it").singleElement()
                    .matches(d -> !Files.exists(d), "deleted");
            return failed.get().getFirst().getPayload(TestExecutionResult.class).orElseThrow().getThrowable().orElseThrow();
        } finally {
            release.countDown();
            running.join();
        }
    }
}
