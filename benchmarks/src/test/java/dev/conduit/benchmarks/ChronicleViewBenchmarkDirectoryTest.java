package dev.conduit.benchmarks;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.openjdk.jmh.annotations.Fork;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code ChronicleViewBenchmark} runs in a trial directory of its own under {@code shared.dir}, as every other benchmark
 * does ({@link BenchmarkDirectory}): it opened its Conduit on {@code shared.dir} itself, so that a fork stopped by Ctrl-C
 * (or whose measured call failed, after which JMH runs no tear-down) left its posix chunk and its plugin's lease there
 * until a later run reclaimed them. Its fork runs with Chronicle's flags, which this test JVM lacks: the trial runs in a
 * child JVM given them, as the benchmark's {@code @Fork} gives them.
 */
class ChronicleViewBenchmarkDirectoryTest {

    /** A hang guard, not a speed check: how long the child JVM may take to open its trial, and then to end once signalled. */
    private static final long HANG_GUARD_SECONDS = 120;

    @Test
    void aTrialStoppedBySignalLeavesNothingInSharedDir(@TempDir Path sharedDir) throws Exception {
        List<String> command = new ArrayList<>();
        command.add(ProcessHandle.current().info().command().orElseThrow());
        command.addAll(List.of(ChronicleViewBenchmark.class.getAnnotation(Fork.class).jvmArgsAppend()));
        command.add("-Dconduit.shared.dir=" + sharedDir);
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(Trial.class.getName());
        // The output goes to a file, not a pipe: a read of a pipe returns only once the child writes or ends, which a hung
        // child never does, and no interrupt ends that read; polled, the wait is bounded and the finally kills the child.
        // Its standard input stays a pipe, held open by this JVM until the kill: the trial stays open until then.
        Path output = Files.createTempFile("conduit-chronicle-trial-", ".out");
        Process trial = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(output.toFile()).start();
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(HANG_GUARD_SECONDS);
            for (String said; !(said = new String(Files.readAllBytes(output), StandardCharsets.UTF_8)).lines().toList()
                    .contains(Trial.OPENED); Thread.sleep(10)) {
                assertThat(trial.isAlive()).as("the trial's child JVM, which said %s", said).isTrue();
                assertThat(System.nanoTime() - deadline).as("hang guard: the trial's child JVM (pid %d) had not opened its trial "
                        + "after %d s; it said %s", trial.pid(), HANG_GUARD_SECONDS, said).isNegative();
            }
            try (Stream<Path> files = Files.list(sharedDir)) {
                assertThat(files).as("what the open trial has in shared.dir").singleElement()
                        .satisfies(dir -> assertThat(dir.getFileName().toString()).startsWith("cjmh"));
            }

            trial.destroy(); // SIGTERM, as Ctrl-C's SIGINT: the shutdown hooks run, no tear-down does
            assertThat(trial.waitFor(HANG_GUARD_SECONDS, TimeUnit.SECONDS)).as("hang guard: the trial's child JVM (pid %d) ended "
                    + "within %d s of SIGTERM", trial.pid(), HANG_GUARD_SECONDS).isTrue();

            try (Stream<Path> files = Files.list(sharedDir)) {
                assertThat(files).as("what the stopped trial left in shared.dir").isEmpty();
            }
        } finally {
            trial.destroyForcibly(); // nothing if it has ended
            trial.waitFor(30, TimeUnit.SECONDS); // SIGKILL cannot be ignored; bounded all the same
            Files.deleteIfExists(output);
        }
    }

    /**
     * A trial of {@code ChronicleViewBenchmark} set up and measured once, then left open until the JVM is stopped, or its
     * parent, the test, is gone (its standard input then ends).
     */
    static final class Trial {
        static final String OPENED = "trial opened";

        public static void main(String[] args) throws Exception {
            ChronicleViewBenchmark benchmark = new ChronicleViewBenchmark();
            benchmark.open();
            benchmark.viewEncodeDecode();
            System.out.println(OPENED);
            System.out.flush();
            while (System.in.read() >= 0) {
                // nothing is sent: the stream ends with the test
            }
        }
    }
}
