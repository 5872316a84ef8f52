package dev.conduit.shm;

import dev.conduit.linux.Errno;
import dev.conduit.linux.ErrnoException;

import dev.conduit.linux.Libc;

import java.util.HashMap;
import java.util.Map;
import java.util.function.IntFunction;

/**
 * A worker's watches of its peers' leases: one descriptor per peer worker, opened by its first user
 * and closed as its last one leaves, shared by the endpoint this worker sends to that peer on
 * ({@link ShmEndpoint}) and by every connection that peer sends to this worker on, however many it
 * opens, so that a peer cannot spend this process's descriptors by connecting again and again, and
 * a liveness check looks at a peer connected both ways with one {@code flock}
 * ({@link LeaseWatch#ownerAliveAtCheck}). Used on the worker's owner thread, and by a close of the
 * worker forced from another thread while that thread is still inside a call ({@link ShmTransport},
 * "Closed from another thread"), which gives back endpoints and connections: so the table is
 * locked, once per endpoint or connection made or given back, never per message, and a lease is
 * opened outside the lock (a close does not wait for a file to open). A watch found dead stays
 * here, its descriptor closed ({@link LeaseWatch#ownerAlive}), until its last user leaves: a lease
 * name is one worker's for good, so a later user of the name shares that verdict.
 */
final class PeerLeases {

    private final Libc libc;
    private final SharedDirectory directory;
    /** The owner of the worker's own lease: a peer's lease is a file of the same user ({@link OwnerLease#fileOwner}). */
    private final int user;
    private final Map<String, Shared> byName = new HashMap<>();

    private static final class Shared {
        final LeaseWatch watch;
        /** The endpoint to the peer, if any, and its connections to this worker. */
        int users;

        Shared(LeaseWatch watch) {
            this.watch = watch;
        }
    }

    PeerLeases(Libc libc, SharedDirectory directory, int user) {
        this.libc = libc;
        this.directory = directory;
        this.user = user;
    }

    /**
     * The watch of lease {@code name} for one more connection from its owner: the one already open,
     * or a new one.
     *
     * @throws dev.conduit.linux.ErrnoException when the lease cannot be opened (ENOENT: its owner is
     *         gone), or, as EINVAL, what has its name is no lease of this worker's user (anyone may
     *         create a file under a lease's name in a sticky {@code /dev/shm}, and lock it):
     *         {@link OwnerLease#isNoLeaseOf} either way
     */
    LeaseWatch acquire(String name) {
        return acquire(name, owner -> new ErrnoException("open", Errno.EINVAL, directory.path().resolve(name).toString(), "lease",
                "a lease is a file of this worker's user, uid " + user + "; this one belongs to uid " + owner));
    }

    /**
     * The watch of lease {@code name} for one more user: the one already open (whose file was found
     * this worker's user's when it opened), or a new one, which is closed again and
     * {@code ofAnotherUser} thrown, given the file's owner, when the file is another user's.
     *
     * @throws dev.conduit.linux.ErrnoException when the lease cannot be opened (ENOENT: its owner is
     *         gone)
     */
    LeaseWatch acquire(String name, IntFunction<? extends RuntimeException> ofAnotherUser) {
        synchronized (byName) {
            Shared shared = byName.get(name);
            if (shared != null) {
                shared.users++;
                return shared.watch;
            }
        }
        LeaseWatch watch = LeaseWatch.open(libc, directory, name);
        int owner;
        try {
            owner = watch.fileOwner();
        } catch (RuntimeException e) {
            watch.close();
            throw e;
        }
        if (owner != user) {
            watch.close();
            throw ofAnotherUser.apply(owner);
        }
        synchronized (byName) {
            // Only the owner's thread acquires, so no other watch of this name came meanwhile; a close may have released others.
            Shared shared = new Shared(watch);
            byName.put(name, shared);
            shared.users++;
            return watch;
        }
    }

    /** One user fewer on {@code watch}; the last one closes it. */
    void release(LeaseWatch watch) {
        synchronized (byName) {
            Shared shared = byName.get(watch.name());
            if (shared == null || shared.watch != watch) return;
            if (--shared.users > 0) return;
            byName.remove(watch.name());
        }
        watch.close();
    }
}
