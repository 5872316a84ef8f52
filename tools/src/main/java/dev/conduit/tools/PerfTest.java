package dev.conduit.tools;

import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * The tests of {@code conduit perf}, in the order they run, with how each is measured. The
 * methods are documented in docs/tools.md ("conduit perf") and printed above each table.
 */
enum PerfTest {

    AM_LAT("am_lat", Kind.LATENCY, true, true,
            "active-message ping-pong, each side reading what it gets; one-way latency = round trip / 2"),
    AM_BW("am_bw", Kind.BANDWIDTH, true, true,
            "stream of active messages, the receiver reads each, counts and acknowledges the last; MB/s = bytes / elapsed"),
    PUT_LAT("put_lat", Kind.LATENCY, false, true,
            "put ping-pong: each side puts into the other's region and polls its last byte; one-way latency = round trip / 2"),
    PUT_BW("put_bw", Kind.BANDWIDTH, false, true,
            "stream of puts into the peer's region, then flush and an acknowledged active message; MB/s = bytes / elapsed"),
    GET_LAT("get_lat", Kind.LATENCY, false, false,
            "get of size bytes from the peer's region; latency = one whole get"),
    ATOMIC_LAT("atomic_lat", Kind.LATENCY, false, false,
            "fetchAdd of a 64-bit word in the peer's region; latency = one whole fetchAdd (size ignored: always 8 bytes)"),
    IPC_IMPORT("ipc_import", Kind.LATENCY, false, false,
            "importRegion + close of a handle the peer exported; latency = one import and close");

    /** Whether a test reports a latency distribution or only a rate. */
    enum Kind { LATENCY, BANDWIDTH }

    /** The suite a plain {@code conduit perf} runs: every test but put_lat, which runs when named. */
    static final List<PerfTest> DEFAULT_SUITE = List.of(AM_LAT, AM_BW, PUT_BW, GET_LAT, ATOMIC_LAT, IPC_IMPORT);

    private final String label;
    private final Kind kind;
    private final boolean activeMessages;
    private final boolean halvedRoundTrip;
    private final String method;

    PerfTest(String label, Kind kind, boolean activeMessages, boolean halvedRoundTrip, String method) {
        this.label = label;
        this.kind = kind;
        this.activeMessages = activeMessages;
        this.halvedRoundTrip = halvedRoundTrip;
        this.method = method;
    }

    /** The name on the command line and in the output. */
    String label() {
        return label;
    }

    Kind kind() {
        return kind;
    }

    boolean isLatency() {
        return kind == Kind.LATENCY;
    }

    /** Whether the test sends active messages (its sizes are then bounded by the transport's payload limit). */
    boolean activeMessages() {
        return activeMessages;
    }

    /** Whether a sample is a ping-pong round trip halved (one-way latency) rather than one whole operation. */
    boolean halvedRoundTrip() {
        return halvedRoundTrip;
    }

    /** How the test measures, one line. */
    String method() {
        return method;
    }

    /** Whether the test works on the server's exported region (its sizes are then bounded by the region). */
    boolean rma() {
        return this == PUT_LAT || this == PUT_BW || this == GET_LAT || this == ATOMIC_LAT;
    }

    /** Whether {@code size} is meaningful for this test; atomics always move one 64-bit word. */
    boolean sized() {
        return this != ATOMIC_LAT;
    }

    /** Whether the test reports MB/s (it moves {@code size} bytes per operation). */
    boolean reportsBandwidth() {
        return this != ATOMIC_LAT && this != IPC_IMPORT;
    }

    /**
     * Iterations when {@code -n} and {@code -d} are not given: enough for stable percentiles at small
     * sizes, bounded by the bytes moved at large ones, so the default suite ends in well under a
     * minute on two cores. Latency tests: 256 MiB / size, between 1,000 and 20,000. Bandwidth tests:
     * 1 GiB / size, between 1,000 and 200,000. ipc_import: 20,000 cached, 2,000 uncached.
     */
    long defaultIterations(long size, boolean uncached) {
        return switch (this) {
            case AM_BW, PUT_BW -> clamp((1L << 30) / size, 1_000, 200_000);
            case IPC_IMPORT -> uncached ? 2_000 : 20_000;
            case ATOMIC_LAT -> 20_000;
            default -> clamp((256L << 20) / size, 1_000, 20_000);
        };
    }

    private static long clamp(long value, long min, long max) {
        return Math.max(min, Math.min(max, value));
    }

    /** The test called {@code name} (case-insensitive, '-' for '_'). */
    static PerfTest byLabel(String name) {
        String wanted = name.trim().toLowerCase(Locale.ROOT).replace('-', '_');
        for (PerfTest t : values()) {
            if (t.label.equals(wanted)) return t;
        }
        throw new IllegalArgumentException("unknown test '" + name + "'; the tests are " + labels());
    }

    /** Every test name, comma-separated. */
    static String labels() {
        return Arrays.stream(values()).map(PerfTest::label).collect(Collectors.joining(", "));
    }
}
