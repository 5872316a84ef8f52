package dev.conduit.benchmarks.compare;

import dev.conduit.benchmarks.ChildJvms;
import org.agrona.IoUtil;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BooleanSupplier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

// A hang guard, not a speed check; in a thread of its own, since a test stuck in a spin never sees an interrupt.
@Timeout(value = 120, unit = TimeUnit.SECONDS, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class IpcPeerTest {

    /** How long a hang guard waits for a JVM to end: far past anything a loaded 2-core CI takes; never what a test asserts. */
    private static final long HANG_GUARD_SECONDS = 60;

    /**
     * An echo JVM that dies fails the measuring JVM, naming it and how it ended: over Aeron the measuring JVM waited for
     * good for the echo's subscription to connect, or polled for good for an echo; over Agrona's ring buffer it spun for
     * good on the ring (compare.sh ended both after 300 s, and its table then named a line of a stack trace).
     */
    @ParameterizedTest
    @ValueSource(strings = {"aeron", "agrona", "line", "queue"})
    void anEchoJvmKilledAsItStartsFailsTheRunNamingIt(String kind) throws Exception {
        CompletableFuture<ProcessHandle> killed = ChildJvms.killOnceStarted(IpcPeer.class);
        assertThatThrownBy(() -> IpcPeer.main(new String[] {kind}))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("the echo JVM (pid " + killed.get().pid() + ", exit code 137: ended by signal 9 (SIGKILL");
    }

    /** A kind that is none of the four is refused, naming them: it ran Agrona's rings, and its figure read as the peer asked for. */
    @ParameterizedTest
    @ValueSource(strings = {"limit", "Aeron"})
    void anUnknownKindIsRefusedNamingTheKinds(String kind) {
        assertThatThrownBy(() -> IpcPeer.main(new String[] {kind}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("unknown kind '" + kind + "': IpcPeer measures one of aeron, agrona, line, queue (the class javadoc says what each is)");
        assertThatThrownBy(() -> IpcPeer.main(new String[] {"--echo", kind, "/dev/shm/unused"}))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("unknown kind '" + kind + "'");
    }

    /**
     * A /dev/shm without room for the file both JVMs map fails the run naming ENOSPC, the file and the remedy: the mapping of
     * the sparse file faulted on the first page tmpfs could not back, which both JVMs reported as "InternalError: a fault
     * occurred in an unsafe memory access operation". A 1 MiB tmpfs over /dev/shm in a mount namespace of the child's own
     * (the tests run as root, as the container tests do).
     */
    @ParameterizedTest
    @ValueSource(strings = {"agrona", "line", "queue"})
    void aDevShmWithoutRoomForTheMappedFileIsNamed(String kind) throws Exception {
        String output = runInATmpfsOf1MiB(kind);
        assertThat(output).containsPattern("Exception in thread \"main\" java.io.IOException: /dev/shm/conduit-" + kind
                        + "-\\d+: cannot write its \\d+ MiB in /dev/shm \\(No space left on device\\): free room there \\(df -h /dev/shm; ")
                .doesNotContain("a fault occurred in an unsafe memory access operation");
        assertThat(List.of(output.split("\n"))).noneMatch(line -> line.startsWith("Exception in thread") && !line.contains("No space left"));
    }

    /** Over Aeron, the media driver's own files: it fills them through a mapping, which faulted in the JVM, naming nothing. */
    @Test
    void aDevShmWithoutRoomForTheMediaDriverIsNamed() throws Exception {
        String output = runInATmpfsOf1MiB("aeron");
        assertThat(output).containsPattern("Exception in thread \"main\" java.lang.IllegalStateException: the Aeron media driver could not "
                + "write its files in /dev/shm/conduit-aeron-\\d+ \\(a fault occurred in an unsafe memory access operation\\): a page of "
                + "a file mapped there could not be backed, as when /dev/shm is out of room \\(\\d+ bytes free\\): free room there");
    }

    /**
     * A measuring JVM ended by SIGTERM, as compare.sh's timeout ends it, leaves nothing in /dev/shm: the media driver's
     * directory (tens of MiB) or the shared file stayed there, removed only by the finally blocks SIGTERM does not run.
     */
    @ParameterizedTest
    @ValueSource(strings = {"aeron", "agrona", "queue"})
    void aMeasuringJvmEndedBySigtermLeavesNothingInDevShm(String kind) throws Exception {
        Process main = new ProcessBuilder(ProcessHandle.current().info().command().orElseThrow(), "-cp",
                System.getProperty("java.class.path"), IpcPeer.class.getName(), kind)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        Path shared = Path.of("/dev/shm", "conduit-" + kind + "-" + main.pid());
        try {
            awaitWhileAlive(main, () -> Files.exists(shared), "made " + shared);
            main.destroy();
            main.waitFor(); // bounded by the class's @Timeout, whose interrupt ends it; the finally then kills the JVM
            assertThat(shared).doesNotExist();
        } finally {
            main.destroyForcibly().waitFor();
            IoUtil.delete(shared.toFile(), true);
        }
    }

    /**
     * An echo JVM whose measuring JVM is killed as the echo starts ends: it watched the pid of its parent, looked up once its
     * own start-up was done (about 0.3 s), by when a parent killed sooner had left it a child of init, which lives on, and
     * it spun for good on a ring nobody writes. It now watches its standard input, a pipe that only the measuring JVM
     * holds open, whose end comes with that JVM's however it ends.
     */
    @ParameterizedTest
    @ValueSource(strings = {"agrona", "line", "queue"})
    void anEchoJvmWhoseMeasuringJvmIsKilledAsItStartsEnds(String kind) throws Exception {
        Process main = new ProcessBuilder(ProcessHandle.current().info().command().orElseThrow(), "-cp",
                System.getProperty("java.class.path"), IpcPeer.class.getName(), kind)
                .redirectOutput(ProcessBuilder.Redirect.DISCARD).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        Path shared = Path.of("/dev/shm", "conduit-" + kind + "-" + main.pid());
        ProcessHandle echo = null;
        try {
            awaitWhileAlive(main, () -> main.children().findAny().isPresent(), "started its echo");
            echo = main.children().findFirst().orElseThrow();
            main.destroyForcibly().waitFor();

            try {
                echo.onExit().get(HANG_GUARD_SECONDS, TimeUnit.SECONDS);
            } catch (TimeoutException e) {
                throw new AssertionError("hang guard: the echo JVM (pid " + echo.pid() + ") never ended in " + HANG_GUARD_SECONDS
                        + " s after its measuring JVM was killed", e);
            }
        } finally {
            main.destroyForcibly().waitFor();
            if (echo != null) echo.destroyForcibly();
            IoUtil.delete(shared.toFile(), true);
        }
    }

    /**
     * Returns once {@code done} holds, polling every millisecond while the measuring JVM {@code main} lives; fails when it
     * ended first, or, a hang guard, when {@value #HANG_GUARD_SECONDS} s passed.
     */
    private static void awaitWhileAlive(Process main, BooleanSupplier done, String what) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(HANG_GUARD_SECONDS);
        while (!done.getAsBoolean()) {
            assertThat(main.isAlive()).as("the measuring JVM ended before it " + what).isTrue();
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("hang guard: the measuring JVM (pid " + main.pid() + ") had not " + what + " after "
                        + HANG_GUARD_SECONDS + " s");
            }
            Thread.sleep(1);
        }
    }

    /**
     * The output of {@code IpcPeer kind} run over a 1 MiB tmpfs on /dev/shm, which it must fail on. The output goes to a
     * file, not a pipe: a read of a pipe returns only once the child ends, which a hung child never does, and no interrupt
     * (the class's {@code @Timeout}) ends that read; killed at the hang guard, the child cannot outlive the test.
     */
    private static String runInATmpfsOf1MiB(String kind) throws Exception {
        String java = ProcessHandle.current().info().command().orElseThrow();
        Path output = Files.createTempFile("conduit-ipc-peer-", ".out");
        ProcessBuilder builder = new ProcessBuilder("unshare", "--mount", "--propagation", "private", "sh", "-c",
                "mount -t tmpfs -o size=1m conduit-full /dev/shm && exec \"$0\" -cp \"$1\" " + IpcPeer.class.getName() + " " + kind,
                java, System.getProperty("java.class.path"))
                .redirectErrorStream(true).redirectOutput(output.toFile());
        builder.environment().put("LC_ALL", "C"); // strerror's words, which the message quotes, are the locale's
        Process child = builder.start();
        try {
            boolean ended = child.waitFor(HANG_GUARD_SECONDS, TimeUnit.SECONDS);
            String said = Files.readString(output, StandardCharsets.UTF_8);
            assertThat(ended).as("hang guard: IpcPeer %s (pid %d) ended within %d s; it said: %s", kind, child.pid(), HANG_GUARD_SECONDS, said)
                    .isTrue();
            assertThat(child.exitValue()).as(said).isEqualTo(1);
            return said;
        } finally {
            child.destroyForcibly(); // nothing if it has ended
            Files.deleteIfExists(output);
        }
    }
}
