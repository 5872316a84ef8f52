package dev.conduit.plugin.memfd;

import dev.conduit.spi.Availability;
import dev.conduit.spi.ThreadMode;
import dev.conduit.tck.TestContext;

import java.nio.file.Path;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * The main class of a JVM that probes the memfd plugin on one shared directory and prints
 * {@code available=<bool> reason=<text>}, then {@code notHere=<capabilities ruled out here> why=<reason>} and,
 * when available, what opening a provider and a transport there does ({@code provider=opened} or
 * {@code provider=<exception>: <message>}, the same for {@code transport=}): {@code <shared dir>}.
 * Started by {@link WithoutDacOverride}.
 */
public final class ProbingProcess {

    private ProbingProcess() {}

    public static void main(String[] args) throws Exception {
        System.out.print(report(Path.of(args[0])));
    }

    /** What {@link #main} prints for {@code directory}: also called in-process where file modes bind (not root). */
    static String report(Path directory) throws Exception {
        MemfdPlugin plugin = new MemfdPlugin();
        TestContext context = TestContext.of(directory);
        Availability availability = plugin.probe(context);
        StringBuilder out = new StringBuilder();
        out.append("available=").append(availability.isAvailable()).append(" reason=").append(availability.reason()).append('\n');
        out.append("notHere=").append(availability.unsupportedHere().keySet().stream().map(Enum::name).collect(Collectors.joining(",")))
                .append(" why=").append(availability.unsupportedHere().values().stream().distinct().collect(Collectors.joining(" | ")))
                .append('\n');
        if (!availability.isAvailable()) return out.toString();
        out.append("provider=").append(open(context, plugin::openMemoryProvider)).append('\n');
        out.append("transport=").append(open(context, c -> plugin.openTransport(c.forTransport(ThreadMode.SINGLE,
                (id, h, ho, hl, p, po, pl) -> {}))))
                .append('\n');
        return out.toString();
    }

    private static String open(TestContext context, Function<TestContext, AutoCloseable> opener) throws Exception {
        try (AutoCloseable opened = opener.apply(context)) {
            return "opened";
        } catch (RuntimeException e) {
            return e.getClass().getSimpleName() + ": " + e.getMessage();
        }
    }
}
