package dev.conduit.benchmarks;

import dev.conduit.tools.PeerExit;
import dev.conduit.tools.PeerJvmOptions;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The command of a benchmark's peer JVM: the same {@code java}, class path and the JVM options that
 * shape a measurement ({@link PeerJvmOptions#passesToPeer}, as {@code conduit perf}'s server gets
 * them). A JMH fork runs with the options a user passes to compare settings ({@code -jvmArgs*},
 * heap, {@code -XX:} flags), and a peer without them would leave one side of the measurement as it
 * was. What only the fork may have stays there: JMH's own settings (its compiler hints file,
 * {@code jmh.*} properties), agents, debuggers, recordings and files both JVMs would write.
 */
public final class PeerJvm {

    private PeerJvm() {
    }

    /**
     * How {@code peer}, found failed or gone, ended, for a message ({@link PeerExit}): its death shows (a lease released,
     * a socket closed) a moment before the process can be reaped, so this waits up to a second for that.
     */
    public static String howItEnded(Process peer) {
        try {
            return peer.waitFor(1, TimeUnit.SECONDS) ? PeerExit.describe(peer.exitValue()) : "still running";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "not known (interrupted)";
        }
    }

    /** {@code java}, this JVM's options for a peer, native access for the class path, {@code -cp}, {@code main} and {@code args}. */
    public static List<String> command(Class<?> main, String... args) {
        List<String> command = new ArrayList<>();
        command.add(ProcessHandle.current().info().command().orElseThrow(() -> new IllegalStateException("no java command")));
        command.add("--enable-native-access=ALL-UNNAMED");
        for (String option : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
            if (PeerJvmOptions.passesToPeer(option)) command.add(option);
        }
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(main.getName());
        command.addAll(List.of(args));
        return command;
    }
}
