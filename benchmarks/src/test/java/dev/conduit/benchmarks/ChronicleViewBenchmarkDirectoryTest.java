package dev.conduit.benchmarks;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.openjdk.jmh.annotations.Fork;

import java.io.BufferedReader;
import java.io.InputStreamReader;
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
// A hang guard, not a speed check: a child that never says it opened its trial would hold the test.
@Timeout(value = 120, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class ChronicleViewBenchmarkDirectoryTest {

    @Test
    void aTrialStoppedBySignalLeavesNothingInSharedDir(@TempDir Path sharedDir) throws Exception {
        List<String> command = new ArrayList<>();
        command.add(ProcessHandle.current().info().command().orElseThrow());
        command.addAll(List.of(ChronicleViewBenchmark.class.getAnnotation(Fork.class).jvmArgsAppend()));
        command.add("-Dconduit.shared.dir=" + sharedDir);
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(Trial.class.getName());
        Process trial = new ProcessBuilder(command).redirectErrorStream(true).start();
        try {
            BufferedReader out = new BufferedReader(new InputStreamReader(trial.getInputStream(), StandardCharsets.UTF_8));
            List<String> said = new ArrayList<>();
            for (String line; (line = out.readLine()) != null && !line.equals(Trial.OPENED); ) said.add(line);
            assertThat(trial.isAlive()).as("the trial's child JVM, which said %s", said).isTrue();
            try (Stream<Path> files = Files.list(sharedDir)) {
                assertThat(files).as("what the open trial has in shared.dir").singleElement()
                        .satisfies(dir -> assertThat(dir.getFileName().toString()).startsWith("cjmh"));
            }

            trial.destroy(); // SIGTERM, as Ctrl-C's SIGINT: the shutdown hooks run, no tear-down does
            trial.waitFor();

            try (Stream<Path> files = Files.list(sharedDir)) {
                assertThat(files).as("what the stopped trial left in shared.dir").isEmpty();
            }
        } finally {
            trial.destroyForcibly();
            trial.waitFor();
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
