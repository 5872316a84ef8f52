package dev.conduit.internal;

import dev.conduit.spi.ConduitException;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.function.Consumer;

/**
 * What a {@code Conduit} opened and must close: closed newest first, every error collected, the
 * first thrown with the others suppressed. Thread-safe.
 */
public final class Resources {

    /** What a {@code Conduit} whose close has started says to a call that would open something. */
    public static final String CLOSED = "Conduit is closed: it opens nothing more once its close has started; open another Conduit to go on";

    /** What is open, in opening order, each with how the owner closes it. */
    private final LinkedHashMap<AutoCloseable, AutoCloseable> open = new LinkedHashMap<>();
    private boolean closed;
    /** Set by {@link #seal}: nothing more is tracked. */
    private boolean sealed;

    /** Tracks {@code resource}; fails if the owner is already closed. */
    public synchronized <T extends AutoCloseable> T register(T resource) {
        return register(resource, resource);
    }

    /** Tracks {@code resource}, to be closed by {@code closer} when the owner closes. */
    public synchronized <T extends AutoCloseable> T register(T resource, AutoCloseable closer) {
        if (sealed || closed) {
            throw new IllegalStateException(CLOSED);
        }
        open.put(resource, closer);
        return resource;
    }

    /** Stops tracking {@code resource}, which closed itself. */
    public synchronized void unregister(AutoCloseable resource) {
        open.remove(resource);
    }

    /**
     * Refuses every later {@link #register}, so that what {@link #forEachOpen} sees from now on is
     * all that {@link #closeAll} will close: a close that asks users first asks every one.
     */
    public synchronized void seal() {
        sealed = true;
    }

    /** Calls {@code action} with every tracked resource of {@code type}, oldest first. */
    public <T> void forEachOpen(Class<T> type, Consumer<? super T> action) {
        List<AutoCloseable> tracked;
        synchronized (this) {
            tracked = new ArrayList<>(open.keySet());
        }
        for (AutoCloseable resource : tracked) {
            if (type.isInstance(resource)) action.accept(type.cast(resource));
        }
    }

    /** Closes everything still tracked, newest first. Idempotent. */
    public void closeAll(String owner) {
        List<AutoCloseable> toClose;
        synchronized (this) {
            if (closed) return;
            closed = true;
            toClose = new ArrayList<>(open.values()).reversed();
            open.clear();
        }
        ConduitException failure = null;
        for (AutoCloseable c : toClose) {
            try {
                c.close();
            } catch (Exception | Error e) { // the rest is still closed; an Error too is reported, not lost
                if (failure == null) failure = new ConduitException("closing " + owner + " failed; further failures are suppressed");
                failure.addSuppressed(e);
            }
        }
        CloseFailures.throwCollected(failure);
    }
}
