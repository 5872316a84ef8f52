package dev.conduit.tools;

import java.util.List;
import java.util.Locale;

/**
 * Which JVM options of a process that measures go to the peer JVM it starts, so that a flag a user
 * passes to compare settings changes both sides of the measurement: {@code conduit perf}'s spawned
 * server, and the peers of the JMH benchmarks ({@code benchmarks/}, which run on the class path: the
 * reason this is public in a module that exports nothing).
 */
public final class PeerJvmOptions {

    private static final List<String> MEASURING_X_OPTIONS = List.of("-Xmx", "-Xms", "-Xmn", "-Xss", "-Xint", "-Xcomp", "-Xbatch", "-Xlog");

    private PeerJvmOptions() {
    }

    /**
     * Whether {@code option}, one of this JVM's input arguments, goes to the peer: the runtime's
     * {@code conduit.*} properties, the answer to illegal native access, a module patched with other
     * classes ({@code --patch-module}: the code under test, which a build swapped in on one side only
     * would measure against the other's) and what {@link #isMeasuringOption} takes. Not
     * {@code --enable-native-access}: each caller grants the peer its own.
     */
    public static boolean passesToPeer(String option) {
        return option.startsWith("--illegal-native-access") || option.startsWith("-Dconduit.") || option.startsWith("--patch-module=")
                || isMeasuringOption(option);
    }

    /**
     * Whether a JVM option of the measuring process shapes what is measured and so goes to the peer too: the
     * VM's flags (collector, compilers, heap), its modes ({@code -Xint}, {@code -Xcomp},
     * {@code -Xbatch}) and logging. Not a recording or an agent: two JVMs would share its file or port.
     */
    static boolean isMeasuringOption(String option) {
        if (namesAFile(option)) return false;
        if (option.startsWith("-XX:")) {
            return !option.startsWith("-XX:StartFlightRecording") && !option.startsWith("-XX:FlightRecorderOptions");
        }
        return MEASURING_X_OPTIONS.stream().anyMatch(option::startsWith);
    }

    /** An option that names a file both JVMs would write (a log, a heap dump, an archive): not passed on. */
    private static boolean namesAFile(String option) {
        String lower = option.toLowerCase(Locale.ROOT);
        return option.startsWith("-Xloggc") || lower.contains("file=") || lower.contains("path=") || lower.contains("atexit=")
                || logsToAFile(option);
    }

    /**
     * Whether {@code -Xlog[:what[:output[:...]]]} writes a file: its output is one unless it is empty,
     * {@code stdout} or {@code stderr}, and a file may be named without {@code file=} ({@code -Xlog:gc:gc.log}).
     */
    private static boolean logsToAFile(String option) {
        if (!option.startsWith("-Xlog:")) return false;
        String[] fields = option.substring("-Xlog:".length()).split(":", -1);
        if (fields.length < 2) return false;
        String output = fields[1];
        return !output.isEmpty() && !output.equals("stdout") && !output.equals("stderr");
    }
}
