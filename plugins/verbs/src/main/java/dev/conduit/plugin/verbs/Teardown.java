package dev.conduit.plugin.verbs;

import dev.conduit.spi.Cleanup;
import dev.conduit.spi.ConduitException;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;

/**
 * Closes what a connection or a chunk holds, in order, going on past every failure (an
 * {@code Error} too: out of native memory for a call's capture state, say), and frees registered
 * memory only when nothing may reach it any more.
 *
 * <p>A queue pair that {@code ibv_destroy_qp} could not destroy may still have receives posted
 * into its buffers, and a region that {@code ibv_dereg_mr} could not deregister still lets the
 * adapter (and peers holding its remote key) write into it. Freeing that memory would hand it back
 * to the allocator while the device can still write into it: then the memory is kept, and the
 * failure says so. Such a teardown is not over: {@link #retry} closes what failed again (a failed
 * {@link Verbs} close leaves its object open for that) and frees the memory once all of it went;
 * the transport keeps it and retries it ({@link VerbsTransport#unregister(VerbsTransport.Connection, Teardown)}), as the
 * memory provider keeps a chunk's ({@link VerbsMemoryProvider#free}).
 */
final class Teardown {

    private final String what;
    private Throwable first;
    private Throwable later;
    private boolean deviceMayWrite;
    private long keptBytes;
    /** The queue pair and registrations whose close failed, in teardown order: what {@link #retry} closes again. */
    private final List<AutoCloseable> held = new ArrayList<>();
    /** The memory {@link #memory} did not free because of them, freed by the {@link #retry} that closes the last. */
    private Arena keptMemory;
    /** Who tries this teardown again, when, and what it frees then, for the failure's message; {@code null}: no one. */
    private String retriedBy;
    /** What {@link #rethrow} last threw: how a close that then {@link #retry retries} this teardown knows that failure among those it collected. */
    private Throwable thrown;

    /** @param what the object torn down, for the message: "closing the connection to 10.0.0.2:4791" */
    Teardown(String what) {
        this.what = what;
    }

    /** Closes the wire-up socket: the descriptor is released even when close reports an error, so that error is not kept. */
    Teardown socket(SocketChannel channel) {
        if (channel != null) {
            try {
                channel.close();
            } catch (IOException ignored) {
                // the descriptor is released anyway
            }
        }
        return this;
    }

    /** {@code ibv_destroy_qp}; if it fails, the queue pair may still write into the memory its receives name. */
    Teardown queuePair(Verbs.QueuePair qp) {
        if (qp != null) {
            try {
                qp.close();
            } catch (RuntimeException | Error e) {
                deviceMayWrite = true;
                held.add(qp);
                add(e);
            }
        }
        return this;
    }

    /** {@code ibv_dereg_mr}; if it fails (or throws an {@code Error}), the region's memory stays reachable by the device. */
    Teardown region(Verbs.MemoryRegion mr) {
        if (mr != null) {
            keptBytes += mr.memory().byteSize();
            try {
                mr.close();
            } catch (RuntimeException | Error e) {
                deviceMayWrite = true;
                held.add(mr);
                add(e);
            }
        }
        return this;
    }

    /** Anything else that holds no registered memory (a reassembly buffer, the transport's bookkeeping). */
    Teardown other(Runnable close) {
        try {
            close.run();
        } catch (RuntimeException | Error e) {
            add(e);
        }
        return this;
    }

    /** Frees the memory of the regions and queue pairs above, unless one of them failed to close: then it is kept. */
    Teardown memory(Arena arena) {
        if (deviceMayWrite) {
            keptMemory = arena;
        } else {
            other(arena::close);
        }
        return this;
    }

    /**
     * Closes again, in their order, the queue pair and registrations whose close failed, each even
     * when an earlier one fails again, and frees the memory kept for them once none is left. What
     * failed before is forgotten: {@link #failure()} and {@link #deviceMayWrite()} then tell what
     * this retry left.
     *
     * @return whether nothing is held any more
     */
    boolean retry() {
        List<AutoCloseable> again = List.copyOf(held);
        held.clear();
        first = null;
        later = null;
        deviceMayWrite = false;
        for (AutoCloseable c : again) {
            try {
                c.close();
            } catch (RuntimeException | Error e) {
                deviceMayWrite = true;
                held.add(c);
                add(e);
            } catch (Exception e) {
                throw new AssertionError("a Verbs close throws no checked exception", e);
            }
        }
        if (!deviceMayWrite && keptMemory != null) {
            try {
                keptMemory.close();
                keptMemory = null;
            } catch (RuntimeException | Error e) {
                // Another thread inside a native call on it (the JDK refuses): kept for the next retry, not lost.
                add(e);
            }
        }
        return held.isEmpty() && keptMemory == null;
    }

    /** What the failed teardown was: "closing the connection to 10.0.0.2:4791". */
    String what() {
        return what;
    }

    private void add(Throwable e) {
        if (first == null) {
            first = e;
        } else if (later == null) {
            later = e;
        } else {
            later.addSuppressed(e);
        }
    }

    /**
     * What failed, or {@code null}: the first failure, with why memory was kept when it was, and
     * the others suppressed. An {@code Error} of the JVM's own (out of memory, a stack overflow:
     * {@link Cleanup#isTheJvmsOwn}) is the failure itself, as {@link Cleanup#collect} throws it,
     * where no catch of {@code ConduitException} swallows it, with why memory was kept suppressed in
     * it; any other {@code Error} is the cause of a {@code ConduitException} that names it.
     */
    Throwable failure() {
        if (first == null) {
            return null;
        }
        Throwable failure;
        if (Cleanup.isTheJvmsOwn(first)) {
            failure = first;
            if (deviceMayWrite) {
                failure.addSuppressed(new ConduitException("verbs: " + what + " failed with " + first + "; " + kept()));
            }
        } else if (deviceMayWrite) {
            failure = new ConduitException("verbs: " + what + " failed: " + describe(first) + "; " + kept(), first);
        } else if (first instanceof Error) {
            failure = new ConduitException("verbs: " + what + " failed with " + first, first);
        } else {
            failure = first;
        }
        if (later != null) {
            failure.addSuppressed(later);
        }
        return failure;
    }

    private String kept() {
        return "its " + keptBytes + " bytes of registered memory are kept allocated, not freed, because the device may still write "
                + "into them (a queue pair or registration of them is still there); "
                + (retriedBy != null ? retriedBy : "they are released when the process exits");
    }

    /**
     * What a failed {@link #retry} left held and why, for the last word on it: every failure's
     * message (the call, the object, the errno), and the memory kept.
     */
    String whyHeld() {
        StringBuilder why = new StringBuilder();
        java.util.ArrayDeque<Throwable> failures = new java.util.ArrayDeque<>();
        if (first != null) failures.add(first);
        if (later != null) failures.add(later);
        for (Throwable t; (t = failures.poll()) != null; ) {
            why.append(why.isEmpty() ? "" : "; ").append(describe(t));
            failures.addAll(List.of(t.getSuppressed()));
        }
        return why + "; what failed stays on the device, and its " + keptBytes + " bytes of registered memory stay allocated, as "
                + "the device may still write into them";
    }

    /**
     * Marks this teardown as kept by one that {@link #retry retries} it, which its failure then
     * says in {@code how}: "the worker tries again at …, and frees them once that succeeds".
     */
    Teardown retriedBy(String how) {
        retriedBy = how;
        return this;
    }

    /** An exception's message (an errno's, naming the call), an {@code Error} by its class as well. */
    private static String describe(Throwable failure) {
        return failure instanceof RuntimeException ? failure.getMessage() : failure.toString();
    }

    /** Whether a queue pair or registration could not be torn down: the device may still write into the memory. */
    boolean deviceMayWrite() {
        return deviceMayWrite;
    }

    /** Throws {@link #failure()}, if any. */
    void rethrow() {
        thrown = failure();
        switch (thrown) {
            case null -> {
            }
            case RuntimeException e -> throw e;
            case Error e -> throw e;
            case Throwable e -> throw new AssertionError("no step throws a checked exception", e);
        }
    }

    /**
     * Whether {@code failure} is what this teardown's {@link #rethrow} threw: a close that collected
     * it and then retried this teardown with success throws it no more, as its message (memory kept,
     * tried again later) no longer holds.
     */
    boolean threw(Throwable failure) {
        return failure != null && failure == thrown;
    }

    /** Counts {@code failure}, of a step run elsewhere (a {@code RuntimeException} or an {@code Error}), as this teardown's. */
    Teardown also(Throwable failure) {
        add(failure);
        return this;
    }

    /** Adds {@link #failure()} to {@code primary} as suppressed, for a teardown after another failure; returns {@code primary}. */
    <T extends Throwable> T suppressedInto(T primary) {
        Throwable failure = failure();
        if (failure != null) {
            primary.addSuppressed(failure);
        }
        return primary;
    }
}
