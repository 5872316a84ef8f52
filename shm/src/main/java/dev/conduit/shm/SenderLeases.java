package dev.conduit.shm;

import dev.conduit.linux.Libc;

import java.util.HashMap;
import java.util.Map;

/**
 * A receiver's watches of its senders' leases: one descriptor per sender worker, however many
 * connections it opens, so that a peer cannot spend this process's descriptors by connecting
 * again and again. Used on the receiver's progress thread only.
 */
final class SenderLeases {

    private final Libc libc;
    private final SharedDirectory directory;
    private final Map<String, Shared> byName = new HashMap<>();

    private static final class Shared {
        final LeaseWatch watch;
        int connections;

        Shared(LeaseWatch watch) {
            this.watch = watch;
        }
    }

    SenderLeases(Libc libc, SharedDirectory directory) {
        this.libc = libc;
        this.directory = directory;
    }

    /**
     * The watch of lease {@code name} for one more connection: the one already open, or a new one.
     *
     * @throws dev.conduit.linux.ErrnoException when the lease cannot be opened (ENOENT: its owner is gone)
     */
    LeaseWatch acquire(String name) {
        Shared shared = byName.get(name);
        if (shared == null) {
            shared = new Shared(LeaseWatch.open(libc, directory, name));
            byName.put(name, shared);
        }
        shared.connections++;
        return shared.watch;
    }

    /** One connection fewer on {@code watch}; the last one closes it. */
    void release(LeaseWatch watch) {
        Shared shared = byName.get(watch.name());
        if (shared == null || shared.watch != watch) return;
        if (--shared.connections == 0) {
            byName.remove(watch.name());
            watch.close();
        }
    }
}
