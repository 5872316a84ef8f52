package dev.conduit.shm;

import dev.conduit.linux.ErrnoException;
import dev.conduit.linux.FileDescriptor;
import dev.conduit.linux.Libc;
import dev.conduit.linux.LockFlags;

/**
 * Watches one peer's {@link OwnerLease} with a descriptor of its own, opened once: checking is one
 * non-blocking {@code flock} — if this separate open of the lease can take the lock, its owner is
 * dead (the kernel released the owner's lock when the process died, in whatever namespace). A
 * worker keeps one per peer worker, shared by the endpoint it sends to that peer on and the
 * connections that peer sends to it on ({@link PeerLeases}); the importers one per exporter of the
 * chunks they mapped ({@link ExporterLease}); each shared through a {@link LeaseWatchTable}.
 */
public final class LeaseWatch implements AutoCloseable {

    private final Libc libc;
    private final String name;
    private final FileDescriptor fd;
    /** Guarded by this: a closing thread asks too ({@code ShmEndpoint#awaitsDrain}). */
    private boolean dead;
    /**
     * The clock reading of the liveness check that last looked ({@link #ownerAliveAtCheck}), valid
     * once {@code lookedAtACheck}: the endpoint to this peer and its connections to this worker each
     * ask at the check, and the first ask's {@code flock} answers the others.
     */
    private long lastCheck;
    private boolean lookedAtACheck;
    /** Guarded by this: whether the lease bore its owner's mark of a close ({@link OwnerLease#markClosed}) when found dead. */
    private boolean closedByItsOwner;

    private LeaseWatch(Libc libc, String name, FileDescriptor fd) {
        this.libc = libc;
        this.name = name;
        this.fd = fd;
    }

    /**
     * Opens the lease {@code name} below {@code directory}.
     *
     * @throws ErrnoException when it cannot be opened (ENOENT: the owner is already gone)
     */
    public static LeaseWatch open(Libc libc, SharedDirectory directory, String name) {
        return new LeaseWatch(libc, name, directory.openLease(name));
    }

    /** Watches the lease {@code name} through {@code opened}, a descriptor of it this process opened. */
    static LeaseWatch of(Libc libc, String name, FileDescriptor opened) {
        return new LeaseWatch(libc, name, opened);
    }

    public String name() {
        return name;
    }

    /** The user id that owns the lease file, as this process's user namespace maps it. */
    public int fileOwner() {
        return libc.fstat(fd).uid();
    }

    /** Whether the lease file is {@code user}'s, as {@link OwnerLease#isFileOf} proves it. */
    boolean isFileOf(int user) {
        return OwnerLease.isFileOf(libc, fd, user);
    }

    /**
     * Whether the owner still holds its lease. Once dead, always dead, and the descriptor is closed
     * then: a receiver short of descriptors must not keep dead peers' (it would need one to judge,
     * or to map the ring of, the sender whose message holds its queue's head, and release them only
     * once that queue is empty).
     */
    public synchronized boolean ownerAlive() {
        if (dead) return false;
        if (libc.tryFlock(fd, LockFlags.LOCK_SH | LockFlags.LOCK_NB)) {
            dead = true;
            closedByItsOwner = isMarkedClosed(); // read while the descriptor is open: it goes now
            fd.close(); // which drops the lock just taken
        }
        return !dead;
    }

    /**
     * Whether the owner's close marked the lease ({@link OwnerLease#markClosed}): its close freed,
     * or is about to free, what it exported, and releases the lease next. A connect that finds the
     * owner's receive queue gone while its lease is still held, or the lease free, tells an orderly
     * close from a death by it ({@code ShmTransport#connect}). Looked at now while the owner lives;
     * once found dead, as it was then.
     */
    public synchronized boolean ownerMarkedClosed() {
        if (dead) return closedByItsOwner;
        return fd.isOpen() && isMarkedClosed();
    }

    /** The mark is the lease's only byte: a lease is empty until then. A failed fstat says no mark. */
    private boolean isMarkedClosed() {
        try {
            return libc.fstat(fd).size() > 0;
        } catch (RuntimeException cannotTell) {
            return false;
        }
    }

    /**
     * {@link #ownerAlive}, or null once this watch is closed while its owner was not found dead: a
     * user that looks from another thread than the one giving back the last share
     * ({@link ExporterLease}) must then judge without it.
     */
    synchronized Boolean ownerAliveUnlessClosed() {
        if (!dead && !fd.isOpen()) return null;
        return ownerAlive();
    }

    /**
     * Whether the owner still holds its lease, as the liveness check whose clock read {@code check}
     * finds it: the first ask of that check looks ({@link #ownerAlive}), the others take its answer,
     * so that a peer connected both ways costs a check one {@code flock}, not one per user of the
     * watch. Any other look (a connect's, a close's, the runtime's keepalive with a clock of its
     * own) looks anew.
     */
    synchronized boolean ownerAliveAtCheck(long check) {
        if (lookedAtACheck && lastCheck == check) return !dead;
        boolean alive = ownerAlive(); // a look that fails (its flock refused) answers no other ask: each fails as it did
        lastCheck = check;
        lookedAtACheck = true;
        return alive;
    }

    /**
     * Closes the descriptor, once a look under way ({@link #ownerAlive}, on another thread: a
     * worker's close forced past its owner's liveness check) is done: closed under the look, its
     * flock would fail on the closed descriptor, or, closed just after the look's check of it, run
     * on a number the process may have given another file since. A look is one non-blocking flock.
     */
    @Override
    public synchronized void close() {
        fd.close();
    }
}
