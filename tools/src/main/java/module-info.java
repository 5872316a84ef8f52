/**
 * The {@code conduit} command: what Conduit finds, selects and is configured with in this
 * process, and what memfd and posix keep in the shared directory ({@code conduit info}), how
 * fast it moves bytes between two processes ({@code conduit perf}), and the removal of what dead
 * processes left in the shared directory ({@code conduit reclaim}).
 *
 * <p>Run it with {@code ./conduit} at the root of the source tree, or as
 * {@code java --module-path ... -m dev.conduit.tools/dev.conduit.tools.ConduitCommand}. This
 * module exports nothing: it is an application, not a library.
 */
module dev.conduit.tools {
    requires dev.conduit;
    // The leases and reclaim of memfd's and posix's shared directory (conduit info's SHARED FILES, conduit reclaim):
    // the plugins' own code, so that the tool judges an owner exactly as a Conduit process does.
    requires dev.conduit.shm;
    requires info.picocli;
    // conduit perf: latency histograms, the chart of --plot (JFreeChart draws with java.desktop, headless),
    // the JVM options a spawned peer process inherits (java.management), and the bytes each measured
    // loop allocated (jdk.management).
    requires HdrHistogram;
    requires org.jfree.jfreechart;
    requires java.desktop;
    requires java.management;
    requires jdk.management;

    // picocli fills options and builds usage help by reflection.
    opens dev.conduit.tools to info.picocli;
}
