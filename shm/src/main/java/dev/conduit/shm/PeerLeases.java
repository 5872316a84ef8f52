package dev.conduit.shm;

import dev.conduit.linux.Errno;
import dev.conduit.linux.ErrnoException;

import dev.conduit.linux.Libc;

import java.util.function.IntFunction;

/**
 * A worker's watches of its peers' leases, checked to be files of the worker's user: one descriptor
 * per peer worker ({@link LeaseWatchTable}, by lease name), shared by the endpoint this worker sends
 * to that peer on ({@link ShmEndpoint}) and by every connection that peer sends to this worker on,
 * however many it opens, so that a peer cannot spend this process's descriptors by connecting again
 * and again, and a liveness check looks at a peer connected both ways with one {@code flock}
 * ({@link LeaseWatch#ownerAliveAtCheck}). Used on the worker's owner thread, and by a close of the
 * worker forced from another thread while that thread is still inside a call ({@link ShmTransport},
 * "Closed from another thread"), which gives back endpoints and connections: hence the table's lock.
 */
final class PeerLeases {

    private final Libc libc;
    private final SharedDirectory directory;
    /** The owner of the worker's own lease: a peer's lease is a file of the same user ({@link OwnerLease#fileOwner}). */
    private final int user;
    /** By lease name; a watch's users are the endpoint to the peer, if any, and its connections to this worker. */
    private final LeaseWatchTable watches = new LeaseWatchTable();

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
                "a lease is a file of this worker's user, uid " + Integer.toUnsignedString(user) + "; this one belongs to uid "
                        + Integer.toUnsignedString(owner) + ShmTransport.userNamespaceNote(UserNamespace.current(), owner, user)));
    }

    /**
     * The watch of lease {@code name} for one more user: the one already open (whose file was found
     * this worker's user's when it opened), or a new one, which is closed again and
     * {@code ofAnotherUser} thrown, given the file's owner, when the file is not this worker's
     * user's ({@link OwnerLease#isFileOf}): where that user is the overflow uid of this process's
     * user namespace, a file showing it is the user's only once proven so. Until 2026-12-07 the
     * uid alone was compared here: an unmapped user's locked file under a dead sender's lease name
     * kept that sender alive to a worker run as nobody, its taken record holding the queue's head
     * for every sender
     * (CrossProcessTest#aWorkerRunningAsTheOverflowUidWatchesNoLockedFileOfAnUnmappedUserForTheLeaseOfASenderThatConnected).
     *
     * @throws dev.conduit.linux.ErrnoException when the lease cannot be opened (ENOENT: its owner is
     *         gone), or its owner cannot be told ({@link OwnerLease#isFileOf})
     */
    LeaseWatch acquire(String name, IntFunction<? extends RuntimeException> ofAnotherUser) {
        LeaseWatch shared = watches.share(name);
        if (shared != null) return shared;
        LeaseWatch watch = LeaseWatch.open(libc, directory, name);
        int owner;
        try {
            if (watch.isFileOf(user)) return watches.add(name, watch);
            owner = watch.fileOwner();
        } catch (RuntimeException e) {
            watch.close();
            throw e;
        }
        watch.close();
        throw ofAnotherUser.apply(owner);
    }

    /** One user fewer on {@code watch}; the last one closes it. */
    void release(LeaseWatch watch) {
        watches.release(watch.name(), watch);
    }
}
