package dev.conduit.tools;

import dev.conduit.Conduit;
import dev.conduit.ConduitBuilder;
import dev.conduit.linux.Libc;
import dev.conduit.linux.Linux;
import dev.conduit.spi.ConduitPlugin;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.Writer;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;

/**
 * Runs {@code conduit} in this JVM over a Conduit that sees only the given plugins and none of the
 * developer's {@code CONDUIT_*} variables or {@code conduit.*} properties.
 */
final class CommandRunner {

    /** What one run produced. */
    record Result(int exitCode, String out, String err) {
    }

    private final List<ConduitPlugin> plugins;
    private final boolean discover;
    private final Supplier<Libc> libc;

    private CommandRunner(List<ConduitPlugin> plugins, boolean discover, Supplier<Libc> libc) {
        this.plugins = plugins;
        this.discover = discover;
        this.libc = libc;
    }

    private CommandRunner(List<ConduitPlugin> plugins, boolean discover) {
        this(plugins, discover, Linux::libc);
    }

    /** This runner, reading the shared directories through {@code libc} ({@link FileSystemType#answering}). */
    CommandRunner withLibc(Libc libc) {
        return new CommandRunner(plugins, discover, () -> libc);
    }

    static CommandRunner withPlugins(ConduitPlugin... plugins) {
        return new CommandRunner(List.of(plugins), false);
    }

    /** With the real plugins (posix, memfd) found by discovery, still without the developer's variables and properties. */
    static CommandRunner discovering() {
        return new CommandRunner(List.of(), true);
    }

    /** With the real plugins found by discovery and {@code plugins} beside them. */
    static CommandRunner discoveringWith(ConduitPlugin... plugins) {
        return new CommandRunner(List.of(plugins), true);
    }

    /** The builder every run starts from, also for tests that compare the command's output with the API's answers. */
    ConduitBuilder builder() {
        ConduitBuilder builder = Conduit.builder()
                .discoverPlugins(discover)
                .environment(Map.of())
                .systemProperties(new Properties());
        plugins.forEach(builder::addPlugin);
        return builder;
    }

    Result run(String... args) {
        StringWriter out = new StringWriter();
        Result result = runWritingTo(out, args);
        return new Result(result.exitCode(), out.toString(), result.err());
    }

    /** An unknown key: a builder given it fails its build as a configuration error does. */
    static final String FAILING_KEY = "test.failing.build";

    /**
     * Runs with the {@code n}th builder the command takes (1 for the first; each Conduit it opens takes
     * one) passed through {@code nth}: a run made to fail part way, e.g. where ipc_import uncached opens
     * its second Conduit, by a builder given {@link #FAILING_KEY} or by a function that throws.
     */
    Result runAlteringBuilder(int n, UnaryOperator<ConduitBuilder> nth, String... args) {
        AtomicInteger taken = new AtomicInteger();
        StringWriter out = new StringWriter();
        Result result = runWritingTo(out, () -> taken.incrementAndGet() == n ? nth.apply(builder()) : builder(), args);
        return new Result(result.exitCode(), out.toString(), result.err());
    }

    /** Runs with standard output going to {@code out}, e.g. a writer that fails as a full disk does; {@link Result#out()} is empty. */
    Result runWritingTo(Writer out, String... args) {
        return runWritingTo(out, this::builder, args);
    }

    private Result runWritingTo(Writer out, Supplier<ConduitBuilder> builders, String... args) {
        StringWriter err = new StringWriter();
        int exitCode = new ConduitCommand(builders, libc).commandLine(new StandardOutput(out))
                .setErr(new PrintWriter(err, true))
                .execute(args);
        return new Result(exitCode, "", err.toString());
    }
}
