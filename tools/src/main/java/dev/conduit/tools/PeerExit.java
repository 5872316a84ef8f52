package dev.conduit.tools;

/**
 * How a peer process ended, in words for a message: {@code conduit perf}'s spawned server, and the peers of the JMH
 * benchmarks ({@code benchmarks/}, which run on the class path: the reason this is public in a module that exports
 * nothing).
 */
public final class PeerExit {

    private PeerExit() {
    }

    /**
     * {@code exit}, a {@link Process#exitValue} or -1 for a process this one had to stop, for a message: an exit code above
     * 128 is what a process killed by a signal gives (128 + the signal), and a bare 137 did not say that the peer was
     * killed, nor what kills with SIGKILL unasked (the kernel's out-of-memory killer).
     */
    public static String describe(int exit) {
        if (exit == -1) return "stopped by this process";
        if (exit <= 128 || exit > 128 + 64) return "exit code " + exit;
        int signal = exit - 128;
        String name = switch (signal) {
            case 9 -> " (SIGKILL: kill -9, or the kernel's out-of-memory killer when memory ran out, which the kernel log names)";
            case 15 -> " (SIGTERM)";
            case 2 -> " (SIGINT)";
            case 6 -> " (SIGABRT: the JVM aborted, see the hs_err file it names)";
            case 11 -> " (SIGSEGV)";
            default -> "";
        };
        return "exit code " + exit + ": ended by signal " + signal + name;
    }
}
