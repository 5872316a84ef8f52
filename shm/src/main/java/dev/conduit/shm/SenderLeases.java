package dev.conduit.shm;

import dev.conduit.linux.Errno;
import dev.conduit.linux.ErrnoException;

import dev.conduit.linux.Libc;

import java.util.HashMap;
import java.util.Map;

/**
 * A receiver's watches of its senders' leases: one descriptor per sender worker, however many
 * connections it opens, so that a peer cannot spend this process's descriptors by connecting
 * again and again. Used on the receiver's progress thread, and by a close of the worker forced
 * from another thread while that thread is still inside a call ({@link ShmTransport}, "Closed
 * from another thread"): so the table is locked, once per connection made or forgotten, never
 * per message, and a lease is opened outside the lock (a close does not wait for a file to open).
 */
final class SenderLeases {

    private final Libc libc;
    private final SharedDirectory directory;
    /** The owner of the receiver's own lease: a sender's lease is a file of the same user ({@link OwnerLease#fileOwner}). */
    private final int user;
    private final Map<String, Shared> byName = new HashMap<>();

    private static final class Shared {
        final LeaseWatch watch;
        int connections;

        Shared(LeaseWatch watch) {
            this.watch = watch;
        }
    }

    SenderLeases(Libc libc, SharedDirectory directory, int user) {
        this.libc = libc;
        this.directory = directory;
        this.user = user;
    }

    /**
     * The watch of lease {@code name} for one more connection: the one already open, or a new one.
     *
     * @throws dev.conduit.linux.ErrnoException when the lease cannot be opened (ENOENT: its owner is
     *         gone), or, as EINVAL, what has its name is no lease of this worker's user (anyone may
     *         create a file under a lease's name in a sticky {@code /dev/shm}, and lock it):
     *         {@link OwnerLease#isNoLease} either way
     */
    LeaseWatch acquire(String name) {
        synchronized (byName) {
            Shared shared = byName.get(name);
            if (shared != null) {
                shared.connections++;
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
            throw new ErrnoException("open", Errno.EINVAL, directory.path().resolve(name).toString(), "lease",
                    "a lease is a file of this worker's user, uid " + user + "; this one belongs to uid " + owner);
        }
        synchronized (byName) {
            // Only the owner's thread acquires, so no other watch of this name came meanwhile; a close may have released others.
            Shared shared = new Shared(watch);
            byName.put(name, shared);
            shared.connections++;
            return watch;
        }
    }

    /**
     * Notes that the worker whose lease is {@code name} was found alive at {@code now} by a watch of
     * its lease other than this table's (an endpoint's to it): the same liveness check, looking at
     * its connections to this worker, then takes that look for its own
     * ({@link LeaseWatch#aliveAsSeenAt}), where it took a second {@code flock} of the same file.
     */
    void seenAlive(String name, long now) {
        synchronized (byName) {
            Shared shared = byName.get(name);
            if (shared != null) shared.watch.seenAliveAt(now);
        }
    }

    /** One connection fewer on {@code watch}; the last one closes it. */
    void release(LeaseWatch watch) {
        synchronized (byName) {
            Shared shared = byName.get(watch.name());
            if (shared == null || shared.watch != watch) return;
            if (--shared.connections > 0) return;
            byName.remove(watch.name());
        }
        watch.close();
    }
}
