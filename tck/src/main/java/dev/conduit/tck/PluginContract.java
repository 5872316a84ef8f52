package dev.conduit.tck;

import dev.conduit.Conduit;
import dev.conduit.ConduitBuilder;
import dev.conduit.spi.ConduitPlugin;
import dev.conduit.spi.MessageSink;
import dev.conduit.spi.PluginContext;
import dev.conduit.spi.ThreadMode;
import dev.conduit.spi.TransportContext;
import dev.conduit.tck.internal.TckContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What every suite of the TCK needs from the author: the plugin and its configuration. Subclass one
 * of the suites, not this class.
 *
 * <p>Each test gets a fresh shared directory ({@link #newSharedDirectory()}); after the test, once
 * everything it opened is closed, the directory must hold exactly what it held before the test
 * (a plugin that leaves files behind fails), and it is then deleted.
 */
public abstract class PluginContract {

    private final List<AutoCloseable> opened = new ArrayList<>();
    private Path sharedDirectory;
    private Set<String> filesBefore;

    PluginContract() {
    }

    /** A new instance of the plugin under test, as {@link java.util.ServiceLoader} would make it. */
    protected abstract ConduitPlugin newPlugin();

    /**
     * The configuration the plugin needs here, by key name ({@code "posix.queue.size" -> "64k"}),
     * given the test's shared directory. Used for the plugin's own context and for the runtime.
     */
    protected Map<String, String> configuration(Path sharedDirectory) {
        return Map.of();
    }

    /**
     * A new, empty shared directory for one test. The default is a temporary directory; override it
     * when the plugin needs a particular file system (e.g. tmpfs under {@code /dev/shm}).
     */
    protected Path newSharedDirectory() throws IOException {
        return Files.createTempDirectory("conduit-tck-");
    }

    /**
     * How long a test waits for progress it expects (a message, a failure, a wake-up) before it
     * fails: a guard against hangs, never a speed check.
     */
    protected Duration progressGuard() {
        return Duration.ofSeconds(60);
    }

    @BeforeEach
    final void openSharedDirectory() throws IOException {
        sharedDirectory = newSharedDirectory();
        filesBefore = listing(sharedDirectory);
    }

    @AfterEach
    final void closeAndCheckSharedDirectory() throws Exception {
        Exception failure = null;
        for (AutoCloseable c : opened.reversed()) {
            try {
                c.close();
            } catch (Exception e) {
                if (failure == null) failure = e; else failure.addSuppressed(e);
            }
        }
        opened.clear();
        if (failure != null) throw failure;
        Set<String> after = listing(sharedDirectory);
        after.removeAll(filesBefore);
        assertThat(after).as("files the plugin left in the shared directory " + sharedDirectory
                + " after everything it opened was closed").isEmpty();
        deleteRecursively(sharedDirectory);
    }

    /** The shared directory of the current test. */
    protected final Path sharedDirectory() {
        return sharedDirectory;
    }

    /** Closes {@code resource} after the test (newest first), before the shared directory is checked. */
    protected final <T extends AutoCloseable> T closeAfterTest(T resource) {
        opened.add(resource);
        return resource;
    }

    /** A plugin context as the runtime would give it: this test's shared directory and configuration. */
    protected final PluginContext pluginContext() {
        return TckContext.of(sharedDirectory, configuration(sharedDirectory), ThreadMode.SERIALIZED, NO_MESSAGES);
    }

    /** A transport context delivering to {@code sink}, in {@code mode}. RMA through it is not supported: the suites check RMA through the runtime. */
    protected final TransportContext transportContext(ThreadMode mode, MessageSink sink) {
        return TckContext.of(sharedDirectory, configuration(sharedDirectory), mode, sink);
    }

    /** A runtime that knows only the plugin under test (discovery off), configured like {@link #pluginContext()}. */
    protected final Conduit newConduit() {
        return closeAfterTest(conduitBuilder().build());
    }

    /** The builder {@link #newConduit()} uses, for tests that change a setting. */
    protected final ConduitBuilder conduitBuilder() {
        ConduitBuilder builder = Conduit.builder().discoverPlugins(false).addPlugin(newPlugin())
                .sharedDirectory(sharedDirectory).environment(Map.of());
        configuration(sharedDirectory).forEach(builder::set);
        return builder;
    }

    private static final MessageSink NO_MESSAGES = (id, hb, ho, hl, pb, po, pl) -> {
        throw new IllegalStateException("this context delivers no messages");
    };

    private static Set<String> listing(Path directory) throws IOException {
        try (Stream<Path> s = Files.walk(directory)) {
            Set<String> names = new TreeSet<>();
            s.filter(p -> !p.equals(directory)).forEach(p -> names.add(directory.relativize(p).toString()));
            return names;
        }
    }

    private static void deleteRecursively(Path directory) throws IOException {
        try (Stream<Path> s = Files.walk(directory)) {
            s.sorted(Comparator.reverseOrder()).forEach(p -> {
                try {
                    Files.deleteIfExists(p);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
        }
    }
}
