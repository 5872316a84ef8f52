package dev.conduit.it.transport;

import dev.conduit.Conduit;
import dev.conduit.ConduitBuilder;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Properties;
import java.util.Set;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;
import java.util.function.Predicate;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/** This JVM's side of the transport tests. */
final class Setup {

    /** The owner a lease and its owner's files name: {@code conduit-<plugin>[-worker]-<id>}, then {@code .lease} or {@code -…}. */
    private static final Pattern OWNER = Pattern.compile("^(conduit-[a-z]+-(?:worker-)?[0-9a-f]+)[.-]");

    private Setup() {
    }

    /**
     * A Conduit in this JVM on {@code shared} with only {@code plugin} selected, configured by the
     * builder alone ({@code keys}: key=value, e.g. {@code memfd.heartbeat.timeout=60s}).
     */
    static Conduit conduit(Path shared, String plugin, String... keys) {
        ConduitBuilder b = Conduit.builder().environment(Map.of()).systemProperties(new Properties())
                .sharedDirectory(shared).transports(plugin);
        for (String kv : keys) {
            int eq = kv.indexOf('=');
            b.set(kv.substring(0, eq), kv.substring(eq + 1));
        }
        return b.build();
    }

    /** The names in {@code directory}, sorted. */
    static List<String> files(Path directory) {
        try (Stream<Path> s = Files.list(directory)) {
            return s.map(p -> p.getFileName().toString()).sorted().toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * Polls {@code condition} every few milliseconds until it holds; fails with {@code what} after
     * {@code guard} — a hang guard, never a speed check.
     */
    static void waitUntil(BooleanSupplier condition, Duration guard, Supplier<String> what) {
        long deadline = System.nanoTime() + guard.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) throw new AssertionError("not within the hang guard of " + guard + ": " + what.get());
            try {
                Thread.sleep(2);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted waiting for: " + what.get());
            }
        }
    }

    /**
     * Waits until no file of the dead process is left in {@code shared}, having checked that it had
     * a lease and a file besides there {@code before} its death: the survivors' liveness check
     * reclaims them while the survivors are open. (Looking only after the survivors' close does
     * not show it: a close reclaims too.) The dead process's files are those of an owner not among
     * {@code survivors} ({@link #owners}), so that a file it made after {@code survivors} was taken
     * counts too.
     */
    static void awaitReclaimOfTheDeadProcesssFiles(Path shared, Set<String> survivors, Collection<String> before, Duration guard) {
        Predicate<String> itsFile = name -> owner(name) != null && !survivors.contains(owner(name));
        assertThat(before).as("the dead process's files before its death, of %s (survivors: %s)",
                before, survivors).filteredOn(itsFile).anyMatch(name -> name.endsWith(".lease")).anyMatch(name -> !name.endsWith(".lease"));
        waitUntil(() -> files(shared).stream().noneMatch(itsFile), guard, () -> "files of the dead process left while the survivors "
                + "are open: " + files(shared).stream().filter(itsFile).toList());
    }

    /** The owners of the files in {@code shared}: a worker's lease's, and its Conduit's memory provider's. */
    static Set<String> owners(Path shared) {
        return files(shared).stream().map(Setup::owner).filter(Objects::nonNull).collect(Collectors.toSet());
    }

    /** {@code conduit-<plugin>[-worker]-<id>} of a file's name, which a lease and its owner's files share; null for another name. */
    private static String owner(String name) {
        Matcher m = OWNER.matcher(name);
        return m.find() ? m.group(1) : null;
    }

    /** What a wait does between two looks at its count: sleeps, or drives the worker whose progress it waits for. */
    @FunctionalInterface
    interface Step {
        void run() throws InterruptedException;
    }

    /** A step that sleeps {@code pause}: for a count read by a call to a child, {@code 20 ms} spares the child's command thread. */
    static Step pause(Duration pause) {
        long millis = pause.toMillis();
        return () -> Thread.sleep(millis);
    }

    /**
     * Polls until {@code count} reaches {@code target} or {@code stop} holds; fails with {@code what}
     * once {@code count} has not moved for {@code guard}. A hang guard that runs from the last
     * progress, never a bound on the whole run: a loaded machine's slower stream passes, one that
     * stops fails. Sleeps 2 ms between looks.
     */
    static void waitWhileProgressing(LongSupplier count, long target, BooleanSupplier stop, Duration guard, Supplier<String> what) {
        waitWhileProgressing(count, target, stop, guard, what, pause(Duration.ofMillis(2)));
    }

    /**
     * As {@link #waitWhileProgressing(LongSupplier, long, BooleanSupplier, Duration, Supplier)},
     * running {@code between} between every two looks at the count, whether it moved or not (so a
     * wait whose count moves at every look does not spin): a longer pause for a count that costs a
     * call to a child, or the progress of a worker that belongs to the waiting thread. The guard
     * is checked between steps, so a step must return (e.g. an {@code await} with a timeout). A
     * count that cannot be read (a child that does not answer within its reply timeout) fails
     * with the last count seen; a description that fails is named in the message, not thrown.
     */
    static void waitWhileProgressing(LongSupplier count, long target, BooleanSupplier stop, Duration guard, Supplier<String> what,
                                     Step between) {
        long seen = read(count, 0, target);
        long deadline = System.nanoTime() + guard.toNanos();
        while (seen < target && !stop.getAsBoolean()) {
            try {
                between.run();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted at " + seen + " of " + target + ": " + describe(what));
            }
            long now = read(count, seen, target);
            if (now != seen) {
                seen = now;
                deadline = System.nanoTime() + guard.toNanos();
            } else if (System.nanoTime() > deadline) {
                throw new AssertionError("no progress for the hang guard of " + guard + " at " + seen + " of " + target + ": " + describe(what));
            }
        }
    }

    private static long read(LongSupplier count, long seen, long target) {
        try {
            return count.getAsLong();
        } catch (RuntimeException | AssertionError e) {
            throw new AssertionError("could not read the count, last seen at " + seen + " of " + target + ": " + e.getMessage(), e);
        }
    }

    private static String describe(Supplier<String> what) {
        try {
            return what.get();
        } catch (RuntimeException | AssertionError e) {
            return "(could not describe the wait: " + e.getMessage() + ")";
        }
    }

    /** A line in the test's report (surefire keeps this JVM's stdout per test class). */
    static void report(String format, Object... args) {
        System.out.printf("[transport] " + format + "%n", args);
    }

    static String perSecond(long count, long nanos) {
        return String.format("%.0f/s", count * 1e9 / Math.max(1, nanos));
    }

    static String mibPerSecond(long bytes, long nanos) {
        return String.format("%.0f MiB/s", bytes * 1e9 / Math.max(1, nanos) / (1 << 20));
    }
}
