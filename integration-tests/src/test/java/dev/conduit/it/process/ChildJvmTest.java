package dev.conduit.it.process;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The harness itself, where later tests (peer death) depend on it: in a container, {@link ChildJvm#kill()}
 * reaches the JVM (the namespace's init, not {@code unshare}), and killing only {@code unshare}
 * ({@link Process#destroyForcibly()}) still takes the JVM down; replies are {@code OK} or
 * {@code ERR} with the exception's type; nothing outlives the test.
 */
@Timeout(120) // a hang guard, not a speed check
class ChildJvmTest {

    @Test
    void killReachesTheJvmInsideAContainerAndTheMountPointIsRemoved() throws Exception {
        Path shared = Files.createTempDirectory(Path.of("/dev/shm"), "cit-");
        Path mountPoint;
        try (ChildJvm child = ChildJvm.builder(ConduitPeer.class).sharedDirectory(shared).launcher(Launcher.container()).start()) {
            mountPoint = child.sharedDirectory();
            assertThat(mountPoint).as("the container's mount point, seen from the host").isEmptyDirectory();
            assertThat(child.call("ping")).isEqualTo("pong");
            ChildJvm.Failure f = child.callExpectingFailure("no-such-command", "x");
            assertThat(f.type()).isEqualTo("IllegalArgumentException");
            assertThat(f.message()).contains("unknown command 'no-such-command'");
            assertThat(child.callExpectingFailure("free", "nothing").message()).contains("nothing called 'nothing'");

            ProcessHandle jvm = child.jvm();
            assertThat(jvm.pid()).as("the JVM is unshare's child, not unshare").isNotEqualTo(child.process().pid());
            assertThat(jvm.info().command()).hasValueSatisfying(c -> assertThat(c).endsWith("/java"));
            assertThat(child.pidInside()).isEqualTo(1);

            int exit = child.kill();
            assertThat(jvm.isAlive()).isFalse();
            assertThat(child.process().isAlive()).isFalse();
            assertThat(exit).as("unshare's exit code for a child killed by SIGKILL (1 with util-linux 2.38)").isNotZero();
        } finally {
            Files.deleteIfExists(shared);
        }
        assertThat(mountPoint).as("the container's mount point, once the child is closed").doesNotExist();
    }

    @Test
    void killingOnlyUnshareTakesTheContainersJvmWithIt() throws Exception {
        Path shared = Files.createTempDirectory(Path.of("/dev/shm"), "cit-");
        try (ChildJvm child = ChildJvm.builder(ConduitPeer.class).sharedDirectory(shared).launcher(Launcher.container()).start()) {
            ProcessHandle jvm = child.jvm();
            child.process().destroyForcibly(); // SIGKILL to unshare; --kill-child has the kernel SIGKILL the JVM
            assertThat(child.process().waitFor(ChildJvm.REPLY_TIMEOUT.toSeconds(), TimeUnit.SECONDS)).isTrue();
            jvm.onExit().get(ChildJvm.REPLY_TIMEOUT.toSeconds(), TimeUnit.SECONDS);
            assertThat(jvm.isAlive()).isFalse();
        } finally {
            Files.deleteIfExists(shared);
        }
    }
}
