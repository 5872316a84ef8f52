package dev.conduit.tools;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.List;

/**
 * Everything one {@code conduit perf} run reports: who measured what against whom, on which
 * machine, and the rows. The table ({@link PerfText}), the JSON document ({@link PerfJson}) and the
 * chart ({@link PerfPlot}) are renderings of it.
 *
 * @param version        this build's version
 * @param date           when the run started
 * @param transport      the plugin whose transport carried the endpoint
 * @param wakeup         busy or await
 * @param peers          workers connected to the server's worker while measuring ({@code --peers})
 * @param client         this process
 * @param server         the peer
 * @param bootstrap      how the peer was reached: {@code spawned}, {@code shared-dir DIR (name N)}, {@code tcp HOST:PORT}
 * @param timerNanos     the cost of one {@code System.nanoTime()} call, measured at the start: included in every latency sample
 * @param machine        where it ran
 * @param results        the rows, in the order measured
 */
record PerfRun(String version, Instant date, String transport, String wakeup, int peers, Peer client, Peer server, String bootstrap, double timerNanos,
               Machine machine, List<PerfResult> results) {

    PerfRun {
        results = List.copyOf(results);
    }

    /** This run with {@code rows} as its results: the header a client made once connected, and the rows measured since. */
    PerfRun withResults(List<PerfResult> rows) {
        return new PerfRun(version, date, transport, wakeup, peers, client, server, bootstrap, timerNanos, machine, rows);
    }

    /**
     * One of the two processes.
     *
     * @param pid          its pid as it sees itself (a server in a container sees its own PID namespace)
     * @param host         its host name as it sees it (its UTS namespace)
     * @param threadMode   its worker's thread mode
     * @param threadPolicy how the runtime enforces it there
     * @param transports   its worker's transports, most preferred first
     */
    record Peer(long pid, String host, String threadMode, String threadPolicy, List<String> transports) {
        Peer {
            transports = List.copyOf(transports);
        }
    }

    /**
     * The machine the client ran on.
     *
     * @param cpu     the CPU model from /proc/cpuinfo
     * @param cores   processors available to the JVM
     * @param kernel  the kernel release
     * @param java    the Java runtime version
     * @param vm      the JVM's name and vendor
     * @param load    the load averages (1, 5, 15 minutes) when the run started: other work on the machine is noise
     */
    record Machine(String cpu, int cores, String kernel, String java, String vm, String load) {

        static Machine current() {
            return new Machine(cpuModel(), Runtime.getRuntime().availableProcessors(), kernelRelease(), Runtime.version().toString(),
                    System.getProperty("java.vm.name") + " (" + System.getProperty("java.vendor") + ")", loadAverage());
        }

        private static String loadAverage() {
            try {
                String[] f = Files.readString(Path.of("/proc/loadavg")).trim().split("\\s+");
                return f[0] + " " + f[1] + " " + f[2];
            } catch (java.io.IOException | RuntimeException e) {
                return "?";
            }
        }

        private static String cpuModel() {
            try {
                for (String line : Files.readAllLines(Path.of("/proc/cpuinfo"), StandardCharsets.UTF_8)) {
                    if (line.startsWith("model name")) {
                        int colon = line.indexOf(':');
                        return colon < 0 ? line : line.substring(colon + 1).trim().replaceAll("\\s+", " ");
                    }
                }
            } catch (java.io.IOException | RuntimeException e) {
                // fall through
            }
            return System.getProperty("os.arch");
        }

        private static String kernelRelease() {
            try {
                return Files.readString(Path.of("/proc/sys/kernel/osrelease")).trim();
            } catch (java.io.IOException | RuntimeException e) {
                return System.getProperty("os.name") + " " + System.getProperty("os.version");
            }
        }
    }
}
