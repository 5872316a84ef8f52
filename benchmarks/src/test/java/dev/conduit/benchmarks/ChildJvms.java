package dev.conduit.benchmarks;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

import static org.assertj.core.api.Assertions.assertThat;

/** The peer JVMs a test's benchmark starts, found among this JVM's children by their main class. */
public final class ChildJvms {

    private ChildJvms() {
    }

    /**
     * Kills, with SIGKILL, the one child JVM that runs {@code main}, as soon as it has been started (the test's own
     * timeout bounds the wait), and waits until it is gone.
     */
    public static ProcessHandle kill(Class<?> main) throws InterruptedException, ExecutionException {
        List<ProcessHandle> found;
        while ((found = ProcessHandle.current().children()
                .filter(p -> p.info().commandLine().orElse("").contains(main.getName())).toList()).isEmpty()) {
            Thread.sleep(1);
        }
        assertThat(found).hasSize(1);
        ProcessHandle peer = found.getFirst();
        peer.destroyForcibly();
        peer.onExit().get();
        return peer;
    }

    /** {@link #kill} in a thread of its own, for a test whose own thread starts the JVM and waits on it. */
    public static CompletableFuture<ProcessHandle> killOnceStarted(Class<?> main) {
        return CompletableFuture.supplyAsync(() -> {
            try {
                return kill(main);
            } catch (InterruptedException | ExecutionException e) {
                throw new IllegalStateException(e);
            }
        });
    }
}
