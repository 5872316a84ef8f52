package dev.conduit.shm;

import java.util.HashMap;
import java.util.Map;

/**
 * Watches of leases shared by reference count: a lease's descriptor opened once for every user
 * that judges its owner, and closed as the last of them leaves, so that a peer or an exporter seen
 * many times (connecting again and again, exporting thousands of chunks) costs this process one
 * descriptor. A worker keeps one table for its peers ({@link PeerLeases}); the importers keep one
 * for the process, of the exporters of the chunks they mapped ({@link ExporterLease}). A watch
 * found dead stays until its last user leaves ({@link LeaseWatch#ownerAlive} closed its
 * descriptor then): a lease name is one owner's for good, so a later user of it shares the verdict.
 *
 * <p>Locked once per share and release, never per look; a watch is opened by the caller before
 * {@link #add} and closed after the lock is let go, so that no user waits for a file to open or
 * close.
 */
final class LeaseWatchTable {

    private final Map<String, Shared> byKey = new HashMap<>();

    private static final class Shared {
        final LeaseWatch watch;
        int users;

        Shared(LeaseWatch watch) {
            this.watch = watch;
        }
    }

    /** The watch under {@code key} with one user more, or null when there is none. */
    LeaseWatch share(String key) {
        synchronized (byKey) {
            Shared shared = byKey.get(key);
            if (shared == null) return null;
            shared.users++;
            return shared.watch;
        }
    }

    /**
     * {@code opened} under {@code key} with its first user; or, when a watch of that key came in
     * meanwhile (another thread opened the same lease), that one with one user more, and
     * {@code opened} closed.
     */
    LeaseWatch add(String key, LeaseWatch opened) {
        LeaseWatch shared;
        synchronized (byKey) {
            Shared present = byKey.get(key);
            if (present == null) {
                present = new Shared(opened);
                byKey.put(key, present);
            }
            present.users++;
            shared = present.watch;
        }
        if (shared != opened) opened.close();
        return shared;
    }

    /** One user fewer on {@code watch}, which is under {@code key}; the last one closes it. */
    void release(String key, LeaseWatch watch) {
        synchronized (byKey) {
            Shared shared = byKey.get(key);
            if (shared == null || shared.watch != watch) return;
            if (--shared.users > 0) return;
            byKey.remove(key);
        }
        watch.close();
    }

    /** How many leases the table keeps open, or kept until they were found dead. */
    int size() {
        synchronized (byKey) {
            return byKey.size();
        }
    }
}
