package dev.conduit.shm;

import dev.conduit.linux.Errno;
import dev.conduit.linux.ErrnoException;
import dev.conduit.linux.FileDescriptor;
import dev.conduit.linux.Libc;
import dev.conduit.linux.LockFlags;
import dev.conduit.linux.OpenFlags;
import dev.conduit.spi.BestEffortLog;
import dev.conduit.spi.ConduitException;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongPredicate;
import java.util.regex.Pattern;

/**
 * Liveness of an owner of files in the shared directory, without pids: the owner holds
 * {@code flock(LOCK_EX)} on its lease file {@code <prefix>-<owner>.lease} for as long as it lives.
 * The kernel releases the lock when the process dies, however it dies, and the lock is visible
 * across PID namespaces. Every file the owner creates is named {@code <prefix>-<owner>-...}, so
 * whoever finds a lease it can lock knows the owner is dead and may remove its files.
 *
 * <p>A lease is created under a temporary name, locked, then renamed into place, so that no
 * reclaimer ever sees an unlocked lease of a live owner.
 *
 * <p>A lease is removed only once none of its owner's files is left, by its owner's
 * {@link #close} as by a reclaim ({@link #reclaimDead}): a file with no lease to name it would
 * never be reclaimed by anyone, and stay in the directory (memory, for a tmpfs such as
 * {@code /dev/shm}) until the next reboot. When the owner's close cannot remove a file, the
 * lease stays, unlocked, so that its owner reads as dead and the next reclaim in any process
 * removes the rest, the lease last.
 */
public final class OwnerLease implements AutoCloseable {

    private static final String PROBE = "-probe-";
    private static final long STALE_PROBE_MILLIS = 60_000;

    private static final String LEASE = ".lease";
    private static final String PENDING = ".lease-pending";
    private static final Pattern OWNER_ID = Pattern.compile("([a-z]+-)?[0-9a-f]{32}");
    private static final Pattern HEX = Pattern.compile("[0-9a-f]{32}");
    private static final System.Logger LOG = System.getLogger("dev.conduit.shm");

    private final Libc libc;
    private final SharedDirectory directory;
    private final String prefix;
    private final String owner;
    private final FileDescriptor fd;
    /** Where {@link #close} says which files it left for a later reclaim: the owner's plugin's logger. */
    private final System.Logger logger;
    /** The upper half of every connection id of this owner ({@link #newConnectionId}): its id's first 32 bits. */
    private final long ownerBits;
    /** The low half of the next connection id; starts at random so that two owners whose ids share their first 32 bits still differ. */
    private final AtomicInteger connections = new AtomicInteger(java.util.concurrent.ThreadLocalRandom.current().nextInt());
    private boolean closed;
    /** Set once {@link #warnOnceIfRemoved} found the lease removed and said so. */
    private boolean removalSaid;

    private OwnerLease(Libc libc, SharedDirectory directory, String prefix, String owner, FileDescriptor fd, System.Logger logger) {
        this.libc = libc;
        this.directory = directory;
        this.prefix = prefix;
        this.owner = owner;
        this.fd = fd;
        this.logger = logger;
        this.ownerBits = Long.parseUnsignedLong(owner.substring(0, 8), 16) << 32;
    }

    /**
     * How many times {@link #acquire} starts over with a new owner id when a concurrent
     * {@link #reclaimDead} took its pending lease (see there); each loss needs a reclaim to run in
     * the few microseconds between the creation and the lock of the pending file.
     */
    private static final int ACQUIRE_ATTEMPTS = 16;

    /**
     * Creates and locks a new lease for a new owner.
     *
     * <p>A pending lease is unlocked between its creation and its {@code flock}, and a reclaimer in
     * this or another process that looks at it in that instant takes it for a dead owner's: it
     * locks it (our lock then fails) or removes it (our rename then finds nothing). Either way
     * nothing of the new owner exists yet, so this starts over with a new owner id.
     *
     * <p>{@link #close} warns through this class's logger ({@code dev.conduit.shm}); an owner that
     * has a logger of its own passes it to {@link #acquire(Libc, SharedDirectory, String, System.Logger)}.
     */
    public static OwnerLease acquire(Libc libc, SharedDirectory directory, String prefix) {
        return acquire(libc, directory, prefix, LOG);
    }

    /**
     * {@link #acquire(Libc, SharedDirectory, String)}, with {@code logger} for the WARNING of a
     * {@link #close} that leaves files for a later reclaim (the owner's plugin's logger, so that
     * the warning reads as that plugin's).
     */
    public static OwnerLease acquire(Libc libc, SharedDirectory directory, String prefix, System.Logger logger) {
        for (int attempt = 1; ; attempt++) {
            String owner;
            do {
                owner = SharedDirectory.randomId();
            } while (owner.startsWith("00000000")); // an owner tag of 0 is none to a receive queue (ReceiveQueue#unnamedClaimant)
            String pending = prefix + "-" + owner + PENDING;
            FileDescriptor fd;
            try {
                fd = directory.createExclusive(pending);
            } catch (ErrnoException e) {
                throw new ConduitException("cannot create lease " + directory.path().resolve(pending) + ": " + e.errnoName() + " ("
                        + e.getMessage() + "); " + directory.creationRemedy(e), e);
            }
            try {
                if (tryLockPending(libc, directory, fd, pending)) {
                    // Through the directory's descriptor, as every other file of it: by path, a directory whose path is
                    // longer than PATH_MAX, which opens, failed here with ENAMETOOLONG.
                    libc.renameat(directory.fd(), pending, prefix + "-" + owner + LEASE);
                    return new OwnerLease(libc, directory, prefix, owner, fd, logger);
                }
                // Lost: a reclaimer holds the lock.
            } catch (ErrnoException e) {
                if (!e.errnoName().equals("ENOENT")) {
                    fd.close();
                    directory.unlink(pending);
                    throw new ConduitException("cannot create lease " + directory.path().resolve(prefix + "-" + owner + LEASE) + ": "
                            + e.errnoName() + " (" + e.getMessage() + "); " + directory.creationRemedy(e), e);
                }
                // Lost: a reclaimer removed the file before the rename.
            } catch (RuntimeException e) {
                fd.close();
                directory.unlink(pending);
                throw e instanceof ConduitException c ? c
                        : new ConduitException("cannot create lease " + directory.path().resolve(pending) + ": " + e, e);
            }
            fd.close();
            directory.unlink(pending);
            if (attempt == ACQUIRE_ATTEMPTS) {
                throw new ConduitException("cannot create a lease in " + directory.path() + ": " + ACQUIRE_ATTEMPTS
                        + " pending leases in a row were taken by processes reclaiming dead owners' files there at that instant");
            }
        }
    }

    /**
     * {@code flock(LOCK_EX | LOCK_NB)} of a pending lease: false when a reclaimer holds it. Any
     * other failure ({@code ENOLCK}: NFS without its lock service) means no lease can be held in
     * the directory at all, so no owner there could be judged: it says so, with the remedy, where
     * it used to read "cannot create lease ...; see the cause" of a lease created but not locked.
     */
    private static boolean tryLockPending(Libc libc, SharedDirectory directory, FileDescriptor fd, String pending) {
        try {
            return libc.tryFlock(fd, LockFlags.LOCK_EX | LockFlags.LOCK_NB);
        } catch (ErrnoException e) {
            throw new ConduitException("cannot lock lease " + directory.path().resolve(pending) + ": " + e.errnoName() + " ("
                    + e.getMessage() + "); " + directory.lockRemedy(e), e);
        }
    }

    /**
     * Whether the lease lost its name in the shared directory while its owner holds it: something
     * removed it (a cleanup job, or systemd-logind with {@code RemoveIPC=yes}). The lock still
     * holds, so a peer that opened the lease before still finds the owner alive; no one can open it
     * any more, so no new peer can find the owner, and a reclaim never sees it. False once closed.
     */
    public synchronized boolean isRemoved() {
        return !closed && libc.fstat(fd).links() == 0;
    }

    /**
     * Says once, in a WARNING through the owner's logger, that the lease lost its name
     * ({@link #isRemoved}): nothing else would, and the owner goes on as if whole. Looks at each
     * call until it has spoken; one whose {@code fstat} fails says nothing (what then fails says
     * what it finds). A failure to log costs the caller nothing: it may be inside a message's handler.
     *
     * @param holder      who holds the lease, for the message: "posix: this worker"
     * @param consequence what the owner can no longer do, and the remedy
     */
    public void warnOnceIfRemoved(String holder, String consequence) {
        synchronized (this) {
            if (removalSaid) return;
            try {
                if (!isRemoved()) return;
            } catch (RuntimeException cannotTell) {
                return;
            }
            removalSaid = true;
        }
        BestEffortLog.warn(logger, () -> holder + "'s lease " + path() + " was removed from the shared directory while "
                + "it holds it (" + SharedDirectory.CLEANERS + "). " + consequence + "; and keep such cleaners off "
                + directory.path(), null);
    }

    /**
     * Marks the lease as its owner's when the owner's close has come to its last steps, freeing
     * what it exported and then releasing the lease: the lease gets one byte (an owner's lease is
     * empty until then). A peer that connects in between finds the export gone while the lease is
     * held, or finds the lease free, and reads the mark ({@link LeaseWatch#ownerMarkedClosed}) to
     * say the owner closed, where it said the importer failed or the owner died. A mark that
     * cannot be made (the lease's file system refuses {@code ftruncate}) costs only that: such a
     * connect says what it said before, and the close goes on.
     */
    public synchronized void markClosed() {
        if (closed) return;
        try {
            libc.ftruncate(fd, 1);
        } catch (RuntimeException markNotMade) {
            // Only the words of a connect racing this close depend on it (above).
        }
    }

    /** Where the lease is (or was, once {@link #isRemoved}): for messages. */
    public Path path() {
        return directory.path().resolve(leaseName(prefix, owner));
    }

    /** The owner's id: 32 hex digits, part of every name it creates. */
    public String owner() {
        return owner;
    }

    /**
     * A new id for a connection of this owner: the owner id's first 32 bits above 32 bits that count
     * this owner's connections from a random start. The first 32 bits are also the owner tag a sender
     * takes a record with ({@code ReceiveQueue#claim}): a receiver that finds a record taken by a
     * connection it was never introduced to — its sender died between taking the connection's first
     * record and committing it — can still judge that sender by its lease ({@link #anyOwnerAlive}).
     *
     * <p>Never 0, which a receiver reads as "no connection", and never an id for which
     * {@code unusable} is true: the count comes round after 2^32 connections, and an id it comes
     * back to may still be taken. The caller names the ids that are, and they are skipped
     * ({@code ShmTransport#connect}: those of this worker's endpoints not yet released, to any
     * receiver, or released without a CLOSE while their receiver may live; and those the receiver
     * connected to lists as refused). So a connection never shares its id with another of this owner
     * that its receiver may still know, however many connections the owner made. Called once per
     * connection, never per message; {@code unusable} is asked once per id skipped, and once more.
     *
     * @throws ConduitException when {@code unusable} is true for every one of the owner's 2^32 ids
     */
    public long newConnectionId(LongPredicate unusable) {
        return nextConnectionId(ownerBits, connections, unusable);
    }

    /**
     * The next id of {@link #newConnectionId} for an owner whose ids start with {@code ownerBits},
     * whose count is {@code count}: the first, counting on, that is not 0 and not {@code unusable}.
     */
    static long nextConnectionId(long ownerBits, AtomicInteger count, LongPredicate unusable) {
        for (long tried = 0; tried <= 0xFFFF_FFFFL; tried++) {
            long id = ownerBits | (count.getAndIncrement() & 0xFFFF_FFFFL);
            if (id != 0 && !unusable.test(id)) return id;
        }
        throw new ConduitException("no connection id is left for owner " + String.format("%08x", ownerBits >>> 32) + ": all 2^32 "
                + "are taken by this worker's endpoints or refused by the receiver. Close the endpoints this worker no longer uses");
    }

    /** For tests: the low half of this owner's next connection id, as though its count had come that far. */
    void countConnectionsFrom(int next) {
        connections.set(next);
    }

    /**
     * Whether an owner that may have made {@code connection} ({@link #newConnectionId}) lives: some
     * lease {@code <prefix>-<owner>.lease} whose owner id starts with the connection's first 32 bits
     * is held. No such lease at all means the owner is dead and reclaimed. {@code user} is the owner
     * of the asking worker's lease: another user's file is none of its senders' leases
     * ({@link #isNoLeaseOf}).
     *
     * @throws ErrnoException when no lease is held and one could not be judged (a shortage, an
     *         I/O error, a file of {@code user} that does not open), or the directory could not be
     *         listed to find them (the listing's own, out of descriptors: {@code EMFILE})
     */
    public static boolean anyOwnerAlive(Libc libc, SharedDirectory directory, String prefix, long connection, int user) {
        return heldLeaseOf(libc, directory, prefix, connection, user) != null;
    }

    /**
     * {@link #anyOwnerAlive}, naming the lease found held: the first one the listing shows, or
     * null when none is. A caller that asks again about the same connection may look at that
     * lease alone, by its name (as a lease of {@code user}): while it is held, the answer is the
     * same, without listing the whole shared directory again (ShmTransport's judgment of a taken
     * record at the head of its queue whose sender it does not know).
     *
     * @throws ErrnoException as {@link #anyOwnerAlive}
     */
    public static String heldLeaseOf(Libc libc, SharedDirectory directory, String prefix, long connection, int user) {
        String ownerStart = String.format("%08x", connection >>> 32);
        List<String> names;
        try {
            names = directory.list(prefix + "-" + ownerStart);
        } catch (ConduitException e) {
            // A question that cannot list is unjudged too: the caller's "no telling now" catches the ErrnoException, and
            // used to let the listing's ConduitException out of its liveness check, which then skipped its closes and reclaim.
            if (e.getCause() instanceof ErrnoException listing) throw listing;
            throw e;
        }
        ErrnoException unjudged = null;
        for (String name : names) {
            if (!name.endsWith(LEASE) || !isOwnerId(name.substring(prefix.length() + 1, name.length() - LEASE.length()))) continue;
            try {
                if (isAlive(libc, directory, name, user)) return name;
            } catch (ErrnoException e) {
                // Another user's file is no lease of an owner that connects with this user's workers; a shortage, an I/O
                // error or a file of this user that does not open leaves this owner unjudged, unless another lease is held.
                if (!isNoLeaseOf(directory, name, user, e) && unjudged == null) unjudged = e;
            }
        }
        if (unjudged != null) throw unjudged;
        return null;
    }

    /**
     * Whether {@code leaseName} is the name of a lease of {@code prefix} whose owner could have
     * made {@code connection} ({@link #newConnectionId}): a lease of {@code prefix}
     * ({@link #isLeaseOf(String, String)}) whose owner id's first 8 digits are the connection's
     * first 32 bits. A sender's CONNECT names its lease; a name of any other form is no sender's.
     */
    public static boolean isLeaseOf(String prefix, String leaseName, long connection) {
        return isLeaseOf(prefix, leaseName) && leaseName.startsWith(prefix + "-" + String.format("%08x", connection >>> 32));
    }

    /**
     * Whether {@code leaseName} is the name of a lease of {@code prefix} as {@link #acquire} makes
     * them: {@code <prefix>-<owner>.lease}, the owner id 32 lower-case hex digits. A worker's
     * address names its lease; a name of any other form (a pool's lease, another file under the
     * plugin's prefix, a path) is no worker's.
     */
    public static boolean isLeaseOf(String prefix, String leaseName) {
        int ownerStart = prefix.length() + 1;
        return leaseName.length() == ownerStart + 32 + LEASE.length() && leaseName.startsWith(prefix + "-") && leaseName.endsWith(LEASE)
                && HEX.matcher(leaseName.substring(ownerStart, leaseName.length() - LEASE.length())).matches();
    }

    /**
     * The user that owns this lease's file, as the file system and this process's user namespace
     * report it: the owner every lease of a worker this one connects with must have
     * ({@link #isNoLeaseOf}), compared by file owner rather than by the process's ids, so that a
     * setuid program, or a file system that reports one owner for every file, compares like with
     * like.
     */
    public int fileOwner(Libc libc) {
        return libc.fstat(fd).uid();
    }

    /** A new, unguessable name for a file of this owner: {@code <prefix>-<owner>-<random><suffix>}. */
    public String newFileName(String suffix) {
        return prefix + "-" + owner + "-" + SharedDirectory.randomId() + suffix;
    }

    /**
     * A new name for a Unix socket of this owner: {@code <prefix>-<owner>-<random><suffix>} like
     * {@link #newFileName(String)}, but with 64 random bits instead of 128. A socket is reached by
     * its whole path, which must fit {@code sun_path} (107 bytes) with the directory included; the
     * 16 bytes saved leave room for a longer shared directory. The random part is there so that
     * whoever reads the owner id off the lease name cannot create the name first; 2^64 guesses
     * are as out of reach for that as 2^128.
     */
    public String newSocketName(String suffix) {
        return prefix + "-" + owner + "-" + SharedDirectory.randomId().substring(0, 16) + suffix;
    }

    /** An owner id and the random part of {@link #newSocketName}, as it makes them. */
    private static final Pattern SOCKET_OWNER_AND_RANDOM = Pattern.compile("[0-9a-f]{32}-[0-9a-f]{16}");

    /**
     * Whether {@code name} is of the form {@link #newSocketName} gives a socket under {@code prefix}
     * with {@code suffix}: {@code <prefix>-<owner>-<random><suffix>}, 32 and 16 hex digits. A plugin
     * judges the socket name a peer gave it (a handle's) with it, so that it connects to no other
     * file of the directory.
     */
    public static boolean isSocketName(String prefix, String name, String suffix) {
        int from = prefix.length() + 1;
        int to = name.length() - suffix.length();
        return to - from == 32 + 1 + 16 && name.startsWith(prefix + "-") && name.endsWith(suffix)
                && SOCKET_OWNER_AND_RANDOM.matcher(name).region(from, to).matches();
    }

    /** The lease file's name for {@code owner}. */
    public static String leaseName(String prefix, String owner) {
        return prefix + "-" + owner + LEASE;
    }

    /**
     * Counts the leases under {@code prefix} ({@code conduit-posix}, {@code conduit-memfd}: providers'
     * and workers') in {@code directory} into a probe's {@code details}: {@code live owners},
     * {@code dead owners} (leases nobody holds: files the next provider or worker of that plugin to
     * open there reclaims) and, when some cannot be opened (another user's), {@code unreadable leases};
     * judged as {@link #survey} judges them ({@link #judged}), so that a name that is no owner's lease
     * (a decoy, a directory) is not counted, as no reclaim judges it either.
     * For {@code conduit info}, which showed them for posix alone: a dead memfd producer's socket and
     * leases were not to be seen (helper h6).
     */
    public static void countOwners(Libc libc, SharedDirectory directory, String prefix, Map<String, String> details) {
        int live = 0;
        int dead = 0;
        int unreadable = 0;
        for (Owner owner : judged(libc, directory, prefix, directory.list(prefix + "-")).values()) {
            switch (owner.state()) {
                case LIVE -> live++;
                case DEAD -> dead++;
                case UNJUDGED -> unreadable++;
                case PENDING -> { } // being created: neither, and not locked to find out
            }
        }
        details.put("live owners", Integer.toString(live));
        details.put("dead owners", Integer.toString(dead));
        if (unreadable > 0) details.put("unreadable leases", Integer.toString(unreadable));
    }

    /**
     * Whether {@code name} is a pending lease: an owner's being created, which owns nothing yet
     * ({@link #acquire}); for a {@link ReclaimListener} that reports its removal apart from a dead
     * owner's files.
     */
    public static boolean isPendingLease(String name) {
        return name.endsWith(PENDING);
    }

    /** How {@link #survey} judged an owner. */
    public enum State {
        /** Its lease is held: the owner lives (or a reclaim holds it, for the instant it removes a dead owner's files). */
        LIVE,
        /** Its lease is held by nobody: the next reclaim removes its files, then the lease. */
        DEAD,
        /**
         * Only a pending lease: an owner being created, or one killed between creating and renaming its lease. Not
         * judged, for judging takes its lock, which makes a starting owner start over ({@link #acquire}); the next
         * reclaim removes it when it is unlocked.
         */
        PENDING,
        /**
         * Its lease does not open for this process (another user's {@code 0600} lease, a shortage), or is another user's
         * that opens, which only a reclaim run as that user or as root judges ({@link #reclaimDead}): see {@link Owner#why}.
         */
        UNJUDGED
    }

    /** A file in the shared directory and its size in bytes ({@code -1} when its status could not be read). */
    public record FileEntry(String name, long bytes) {
    }

    /**
     * One owner as {@link #survey} found it: its id, its lease's name, its state, and the files named after it.
     *
     * @param why for {@link State#UNJUDGED}, the errno and reason its lease did not open, or that it is another user's
     *            that opens; otherwise null
     */
    public record Owner(String id, String lease, State state, String why, List<FileEntry> files) {
        public Owner {
            files = List.copyOf(files);
        }
    }

    /**
     * What {@link #survey} found under a prefix: the owners with a lease, files under the prefix that no lease
     * names (no reclaim removes them), and probe files ({@link #newProbeName}), which a reclaim removes once older
     * than a minute.
     */
    public record Survey(List<Owner> owners, List<FileEntry> unowned, List<FileEntry> probes) {
        public Survey {
            owners = List.copyOf(owners);
            unowned = List.copyOf(unowned);
            probes = List.copyOf(probes);
        }
    }

    /** Whether {@code name} is a regular file, as a lease is ({@link SharedDirectory#openLease}); true when that cannot be told. */
    private static boolean isRegularFile(SharedDirectory directory, String name) {
        try {
            return directory.status(name).isRegularFile();
        } catch (ErrnoException e) {
            return true; // isAlive tells
        }
    }

    /** The owner id a file name carries after {@code <prefix>-}: {@link #OWNER_ID}, followed by the '-' of its own part. */
    private static final Pattern FILE_OWNER = Pattern.compile("(?:[a-z]+-)?[0-9a-f]{32}(?=-)");

    /**
     * The owner id that {@code fileName}, a file of an owner under {@code prefix} ({@link #newFileName},
     * {@link #newSocketName}), carries; null when it carries none. Plugins read the owner of a
     * name a peer gave them (a handle's socket) with it, as the survey reads every file's.
     */
    public static String ownerOfFile(String prefix, String fileName) {
        if (!fileName.startsWith(prefix + "-")) return null;
        java.util.regex.Matcher owner = FILE_OWNER.matcher(fileName).region(prefix.length() + 1, fileName.length());
        return owner.lookingAt() ? owner.group() : null;
    }

    /**
     * The owners among {@code names} (a listing under {@code prefix}), by id, each judged as
     * {@link #reclaimDead} judges it, without their files: what {@link #survey} lists and
     * {@link #countOwners} counts.
     */
    private static Map<String, Owner> judged(Libc libc, SharedDirectory directory, String prefix, List<String> names) {
        Map<String, Owner> owners = new java.util.TreeMap<>();
        for (String name : names) {
            boolean pending = name.endsWith(PENDING);
            if (!pending && !name.endsWith(LEASE)) continue;
            String owner = name.substring(prefix.length() + 1, name.lastIndexOf(".lease"));
            if (!isOwnerId(owner) || pending && owners.containsKey(owner)) continue;
            State state;
            String why = null;
            if (pending) {
                state = State.PENDING;
            } else if (!isRegularFile(directory, name)) {
                continue; // no lease, whatever its name: a reclaim does not judge it either, and it is listed as no lease's file
            } else {
                try {
                    if (isAnotherUsersLease(libc, directory, name)) {
                        // As a reclaim leaves it: shown DEAD, it was a dead owner's file that no reclaim removes.
                        state = State.UNJUDGED;
                        why = "another user's lease, uid " + ownerOf(directory, name) + ", that opens for this one (an owner's is "
                                + "0600: someone planted it); only a reclaim run as that user or as root judges it";
                    } else {
                        state = isAlive(libc, directory, name) ? State.LIVE : State.DEAD;
                    }
                } catch (ErrnoException e) {
                    state = State.UNJUDGED;
                    why = e.errnoName() + " (" + e.getMessage() + ")";
                }
            }
            owners.put(owner, new Owner(owner, name, state, why, List.of()));
        }
        return owners;
    }

    /**
     * Lists the owners under {@code prefix} in {@code directory}, each judged as {@link #reclaimDead} judges it,
     * and their files with their sizes, for an operator ({@code conduit info}). It removes nothing, and it takes no
     * lock but the instant's shared one {@link #isAlive} takes on a lease nobody holds (as {@link #countOwners}
     * does), never on a pending lease: so it neither disturbs a live owner nor makes a starting one start over. A
     * reclaim that tries to lock a dead owner's lease in that same instant skips that owner, whose files the next
     * reclaim removes.
     *
     * @throws ConduitException when the directory cannot be listed, naming the errno and what to do
     */
    public static Survey survey(Libc libc, SharedDirectory directory, String prefix) {
        List<String> names = directory.list(prefix + "-");
        Map<String, Owner> owners = judged(libc, directory, prefix, names);
        Map<String, List<FileEntry>> files = new java.util.HashMap<>();
        List<FileEntry> unowned = new ArrayList<>();
        List<FileEntry> probes = new ArrayList<>();
        for (String name : names) {
            if (name.endsWith(LEASE) || name.endsWith(PENDING)) {
                String owner = name.substring(prefix.length() + 1, name.lastIndexOf(".lease"));
                Owner listed = owners.get(owner);
                if (listed != null && listed.lease().equals(name)) continue;
            }
            long bytes;
            try {
                bytes = directory.status(name).size();
            } catch (ErrnoException e) {
                if (isNoLease(e)) continue; // gone since the listing
                bytes = -1;
            }
            FileEntry file = new FileEntry(name, bytes);
            String owner = ownerOfFile(prefix, name);
            if (owner != null && owners.containsKey(owner)) {
                files.computeIfAbsent(owner, o -> new ArrayList<>()).add(file);
            } else if (name.startsWith(prefix + PROBE) && HEX.matcher(name.substring(prefix.length() + PROBE.length())).matches()) {
                probes.add(file);
            } else {
                unowned.add(file);
            }
        }
        List<Owner> listed = new ArrayList<>();
        for (Owner o : owners.values()) {
            listed.add(new Owner(o.id(), o.lease(), o.state(), o.why(), files.getOrDefault(o.id(), List.of())));
        }
        return new Survey(listed, unowned, probes);
    }

    /**
     * Whether the owner of lease {@code leaseName} is alive: its lease exists and is locked.
     * Takes the lock for an instant when the owner is dead; never blocks.
     */
    public static boolean isAlive(Libc libc, SharedDirectory directory, String leaseName) {
        return isAlive(libc, directory, leaseName, false, 0);
    }

    /**
     * {@link #isAlive(Libc, SharedDirectory, String)} for a lease of {@code user} ({@link #fileOwner}):
     * a file of another user, even one that opens and is locked, is none (anyone may create one
     * under a lease's name in a sticky {@code /dev/shm}, and lock it). Where {@code user} is the
     * overflow uid of this process's user namespace (a worker run as nobody), every user the
     * namespace does not map shows as it too: a file showing it is a lease only once this process
     * proves it owns it ({@link UserNamespace#ownsFile}). Before, such a user could plant a locked
     * file under a dead sender's lease name and keep that sender alive to the worker, its taken
     * record blocking the queue for every sender.
     */
    static boolean isAlive(Libc libc, SharedDirectory directory, String leaseName, int user) {
        return isAlive(libc, directory, leaseName, true, user);
    }

    /** Uids are unsigned: no value of {@code user} can stand for "any user", hence {@code ofUser}. */
    private static boolean isAlive(Libc libc, SharedDirectory directory, String leaseName, boolean ofUser, int user) {
        FileDescriptor held = openIfHeld(libc, directory, leaseName, ofUser, user);
        if (held == null) return false;
        held.close();
        return true;
    }

    /**
     * {@link #isAlive(Libc, SharedDirectory, String, int)}, keeping what it opened: the lease's
     * read-only descriptor when its owner holds it, which the caller closes; null when it does not.
     * A {@code flock} on that descriptor keeps telling the truth after the lease lost its name (a
     * cleaner's unlink), where a look by name then finds nothing ({@link ExporterLease}).
     */
    static FileDescriptor openIfHeld(Libc libc, SharedDirectory directory, String leaseName, int user) {
        return openIfHeld(libc, directory, leaseName, true, user);
    }

    private static FileDescriptor openIfHeld(Libc libc, SharedDirectory directory, String leaseName, boolean ofUser, int user) {
        FileDescriptor probe = null;
        try {
            probe = directory.openLease(leaseName);
            if (ofUser && !isFileOf(libc, probe, user) || libc.tryFlock(probe, LockFlags.LOCK_SH | LockFlags.LOCK_NB)) {
                probe.close(); // the lock taken for an instant goes with it
                return null;
            }
            return probe;
        } catch (RuntimeException | Error e) {
            if (probe != null) probe.closeAfter(e);
            if (e instanceof ErrnoException errno && isNoLease(errno)) return null;
            throw e;
        }
    }

    /**
     * Whether the open file {@code file} is {@code user}'s, as a lease of a peer of {@code user}'s
     * workers must be ({@link #fileOwner}): its owner is {@code user}, and where {@code user} is the
     * overflow uid of this process's user namespace (a worker run as nobody), which every user the
     * namespace does not map shows as too, this process proves the file its own
     * ({@link UserNamespace#ownsFile}). The one rule of {@link #openIfHeld} (a sender a worker does
     * not know) and {@link PeerLeases#acquire} (a sender's CONNECT, and its liveness checks after).
     *
     * @throws ErrnoException when {@code fstat} fails, or the proof does otherwise than with
     *         {@code EPERM}: nothing proven
     */
    static boolean isFileOf(Libc libc, FileDescriptor file, int user) {
        return libc.fstat(file).uid() == user
                && (!UserNamespace.current().mayBeUnmapped(Integer.toUnsignedLong(user)) || UserNamespace.ownsFile(libc, file));
    }

    /**
     * A name for a file that an availability probe creates and removes at once
     * ({@code <prefix>-probe-<random>}, 32 hex digits of random): one left by a process killed in
     * between is removed by {@link #reclaimDead} once it is older than a minute; a file of another
     * form is not.
     */
    public static String newProbeName(String prefix) {
        return prefix + PROBE + SharedDirectory.randomId();
    }

    /** A probe lives for microseconds: one older than {@link #STALE_PROBE_MILLIS} was left by a process killed in between. */
    private static boolean isStaleProbe(SharedDirectory directory, String name) {
        try {
            return System.currentTimeMillis() - directory.status(name).modifiedMillis() > STALE_PROBE_MILLIS;
        } catch (ErrnoException gone) {
            return false;
        }
    }

    /**
     * How many dead owners' leases {@link #reclaimDead} holds locked at once before it lists the
     * directory again and removes their files: one listing per batch, not per owner, while a
     * reclaim in a process short of descriptors holds few.
     */
    private static final int RECLAIM_BATCH = 64;

    /**
     * A dead owner's lease, locked by a reclaim until its files are gone ({@link #reclaimDead}); {@code fd} is null for a
     * dry run's ({@link #wouldReclaimDead}), which released the lease once judged. {@code uid} owns the lease's file
     * ({@link #uidOf}): the owner's files are that user's, and proven this process's own when {@code proveFiles}
     * ({@link #filesNeedProof}).
     */
    private record LockedLease(String name, String owner, FileDescriptor fd, Integer uid, boolean proveFiles) {
        void release() {
            if (fd != null) fd.close();
        }
    }

    /**
     * Why the leases in {@code directory} cannot tell a dead owner from a live one under another kernel: its file system is
     * one other kernels may see too ({@link SharedDirectory#seenByOtherKernels()}), where {@code flock} reaches another
     * kernel only if the file system passes locks on, and 9p, virtiofs (unless its virtiofsd passes posix locks through)
     * and NFS mounted {@code nolock} keep them to one kernel: a lease held there looks free here. Null where they can.
     */
    public static String leasesAcrossKernels(SharedDirectory directory) {
        String kind = directory.seenByOtherKernels();
        if (kind == null) return null;
        return "the shared directory " + directory.path() + " is on " + kind + ", which other kernels may see too (another host's, a "
                + "VM's and its host's): a lease held under another kernel looks free under this one where the file system keeps locks "
                + "to one kernel (9p; virtiofs unless virtiofsd passes posix locks through; NFS mounted nolock), so a live owner there "
                + "looks dead here, and a reclaim would remove its files (a worker's receive queue, a pool's chunks) under it";
    }

    /** Directories {@link #reclaimsUnasked} told that their reclaim is left to {@code conduit reclaim}: once each per process. */
    private static final java.util.Set<Path> LEFT_TO_THE_RECLAIM_COMMAND = java.util.concurrent.ConcurrentHashMap.newKeySet();

    /**
     * Whether pools and workers may reclaim dead owners' files in {@code directory} unasked, as they open and once a peer
     * is found dead: not where a live owner under another kernel may look dead ({@link #leasesAcrossKernels}), since removing
     * a live peer's files is worse than leaving a dead one's. There it says so once per directory per process, as a
     * WARNING of {@code logger}, which must cost nothing where it fails (a mapping thread's reclaim throws nothing).
     */
    public static boolean reclaimsUnasked(SharedDirectory directory, System.Logger logger) {
        String acrossKernels = leasesAcrossKernels(directory);
        if (acrossKernels == null) return true;
        if (LEFT_TO_THE_RECLAIM_COMMAND.add(directory.path())) {
            BestEffortLog.warn(logger, () -> acrossKernels + ". Pools and workers opened there leave dead owners' files: run conduit "
                    + "reclaim --trust-leases once no process under another kernel uses the directory (or its locks reach every kernel "
                    + "that does), or set " + directory.configKey() + " to a tmpfs directory", null);
        }
        return false;
    }

    /**
     * {@link #reclaimDead} as a memory provider's open does it: housekeeping for others, which must
     * not stop this process from allocating, so a failure (a file it cannot remove, a directory it
     * can write but not list) is a WARNING, and the next provider to open there tries again.
     * (Another user's files are not even tried: its {@code 0600} lease cannot be opened.)
     */
    public static void reclaimDeadOrWarn(Libc libc, SharedDirectory directory, String prefix, System.Logger logger) {
        if (!reclaimsUnasked(directory, logger)) return;
        try {
            reclaimDead(libc, directory, prefix);
        } catch (ConduitException e) {
            // Out of descriptors the record itself may not be logged: the provider's open then fails with what it hit.
            BestEffortLog.warn(logger, () -> "could not remove every file of dead owners (" + prefix + "-*) in "
                    + directory.path() + "; the next provider to open there tries again: " + e.getMessage(), e);
        }
    }

    /**
     * Removes the files of every dead owner with {@code prefix}: each lease (or pending lease) that
     * can be locked, every {@code <prefix>-<owner>-*} file, then the lease itself; and probe files
     * ({@link #newProbeName}) older than a minute.
     *
     * <p>The directory is listed once, and once more per {@value #RECLAIM_BATCH} dead owners, after
     * their leases are locked: an owner that lived at the first listing may have made a file since,
     * and died; a listing taken once it is locked has all of them. (A listing per dead owner, as
     * every listing reads the whole directory, took 15 s for 3,000 dead owners' 9,000 files, inside
     * the {@code progress()} of a worker's check after a peer's death.)
     *
     * @return the names of dead owners' files removed; a pending lease, which owns nothing yet (it
     *         may be a starting owner's, see {@link #acquire}), is removed without being listed
     */
    public static List<String> reclaimDead(Libc libc, SharedDirectory directory, String prefix) {
        return reclaimDead(libc, directory, prefix, null);
    }

    /**
     * What a reclaim did, file by file, for a caller that reports it ({@code conduit reclaim}): the reclaim then logs
     * none of it itself (neither its INFO of the files removed nor its WARNING of a file it could not remove), which
     * the caller's report would only repeat.
     */
    public interface ReclaimListener {
        /**
         * {@code name} was removed (for {@link #wouldReclaimDead}: would be); {@code bytes} is its size just before
         * ({@code -1} when that could not be read).
         * {@code owner} is the dead owner's id, or null for a stale probe file, which no owner has.
         */
        void removed(String owner, String name, long bytes);

        /** {@code name}, of the dead owner {@code owner}, could not be removed: its lease stays for the next reclaim. */
        void notRemoved(String owner, String name, ErrnoException e);
    }

    /**
     * {@link #reclaimDead(Libc, SharedDirectory, String)}, telling {@code listener} (when not null) of every file
     * removed, a pending lease's too, with its size, and of every file of a dead owner that could not be removed.
     */
    public static List<String> reclaimDead(Libc libc, SharedDirectory directory, String prefix, ReclaimListener listener) {
        return reclaim(libc, directory, prefix, listener, false);
    }

    /**
     * What {@link #reclaimDead(Libc, SharedDirectory, String, ReclaimListener)} would remove if it ran now, judged by the
     * same code, removing nothing: {@code listener.removed} is told of each file it would remove, in the order it would,
     * with its size; {@code notRemoved} is never told, since no removal is tried (whether one would fail is the real
     * reclaim's to find). It locks a lease, a pending one too, only as a reclaim's look at it does, with a shared
     * {@code flock} released as soon as the lease is judged (where the reclaim holds a dead owner's exclusively until its
     * files are gone): a reclaim that tries that lease in the same instant skips its owner, as it would skip one that
     * {@link #survey} looks at; a starting owner that tries to lock its pending lease then starts over with another id, as
     * it does when a real reclaim takes it ({@link #acquire}). Logs nothing. An owner that dies after this look, or a
     * probe that grows old, is the real reclaim's business ({@code conduit reclaim --dry-run}).
     *
     * @return the names it would remove, as {@link #reclaimDead} returns those it removes
     * @throws ConduitException when the directory cannot be listed, naming the errno and what to do
     */
    public static List<String> wouldReclaimDead(Libc libc, SharedDirectory directory, String prefix, ReclaimListener listener) {
        return reclaim(libc, directory, prefix, java.util.Objects.requireNonNull(listener, "listener"), true);
    }

    /** {@link #reclaimDead}, or with {@code dryRun} {@link #wouldReclaimDead}: one judgement for both. */
    private static List<String> reclaim(Libc libc, SharedDirectory directory, String prefix, ReclaimListener listener, boolean dryRun) {
        List<String> removed = new ArrayList<>();
        List<LockedLease> locked = new ArrayList<>();
        try {
            for (String name : directory.list(prefix + "-")) {
                if (name.startsWith(prefix + PROBE)) {
                    // Only a name newProbeName makes: another program's "<prefix>-probe-results.csv" is not ours to remove.
                    if (HEX.matcher(name.substring(prefix.length() + PROBE.length())).matches() && isStaleProbe(directory, name)
                            && unlinkQuietly(directory, null, name, listener, dryRun)) {
                        removed.add(name);
                    }
                    continue;
                }
                boolean lease = name.endsWith(LEASE) || name.endsWith(PENDING);
                if (!lease) continue;
                String owner = name.substring(prefix.length() + 1, name.lastIndexOf(".lease"));
                // Only an owner id this class makes: a peer's decoy named "<prefix>-worker.lease" must not make every
                // "<prefix>-worker-*" file, the live workers' leases among them, look like one dead owner's.
                if (!isOwnerId(owner)) continue;
                FileDescriptor fd;
                try {
                    fd = directory.openLease(name);
                } catch (ErrnoException e) {
                    // Gone already, not a regular file, another user's: not ours to judge. Only a shortage of descriptors may be
                    // this reclaim's own doing, by the leases it holds: give them back, and try once more. (Any failure used
                    // to, and another user's lease among dead owners cost a listing of the whole directory each.)
                    if (locked.isEmpty() || !Errno.isShortage(e.errno())) continue;
                    removeFilesOf(libc, directory, prefix, locked, removed, listener, dryRun);
                    try {
                        fd = directory.openLease(name);
                    } catch (ErrnoException again) {
                        continue;
                    }
                }
                if (isAnotherUsersLease(libc, fd)) {
                    fd.close();
                    continue;
                }
                boolean dead;
                try {
                    // A dry run's look shares the lock, as survey's does: two looks at once both see the owner dead.
                    dead = libc.tryFlock(fd, (dryRun ? LockFlags.LOCK_SH : LockFlags.LOCK_EX) | LockFlags.LOCK_NB);
                } catch (RuntimeException e) {
                    fd.close();
                    throw e;
                }
                if (!dead || removedMeanwhile(libc, fd)) {
                    fd.close();
                    continue;
                }
                if (name.endsWith(PENDING)) {
                    // A pending lease owns nothing (acquire renames it before the owner creates a file), and anyone can
                    // make one with a live owner's id: remove only it. A starting owner's that we locked first makes that
                    // owner start over (acquire); its removal is not reported as a dead owner's.
                    try {
                        unlinkQuietly(directory, owner, name, listener, dryRun);
                    } finally {
                        fd.close();
                    }
                    continue;
                }
                Integer uid = uidOf(libc, fd);
                boolean proveFiles = filesNeedProof(libc, fd, uid);
                if (dryRun) {
                    fd.close(); // judged: a look holds no lock while the directory is listed for the owner's files
                    fd = null;
                }
                locked.add(new LockedLease(name, owner, fd, uid, proveFiles));
                if (locked.size() == RECLAIM_BATCH) removeFilesOf(libc, directory, prefix, locked, removed, listener, dryRun);
            }
            removeFilesOf(libc, directory, prefix, locked, removed, listener, dryRun);
        } finally {
            for (LockedLease lease : locked) lease.release();
        }
        if (dryRun) return removed;
        for (String name : removed) {
            if (name.endsWith(LEASE)) remember(directory.path().resolve(name));
        }
        if (!removed.isEmpty() && listener == null) {
            // Housekeeping's report: out of descriptors, its record's failure must not fail the open or the check that reclaimed.
            BestEffortLog.log(LOG, System.Logger.Level.INFO, () -> "reclaimed " + removed.size() + (removed.size() == 1 ? " file" : " files")
                    + " of dead owners in " + directory + ": " + removed.stream().map(SharedDirectory::shown).toList(), null);
        }
        return removed;
    }

    /** The last {@value #REMEMBERED} leases this process removed as dead owners', oldest first. */
    private static final LinkedHashSet<Path> RECLAIMED_HERE = new LinkedHashSet<>();
    private static final int REMEMBERED = 1024;

    private static void remember(Path lease) {
        synchronized (RECLAIMED_HERE) {
            RECLAIMED_HERE.remove(lease);
            RECLAIMED_HERE.add(lease);
            if (RECLAIMED_HERE.size() > REMEMBERED) RECLAIMED_HERE.removeFirst();
        }
    }

    /**
     * Whether this process removed lease {@code leaseName} of {@code directory} as a dead owner's (one of the last
     * {@value #REMEMBERED}): a connect that finds a peer's lease missing can then say the peer is dead, where it could
     * only say it was gone or in another directory, since the reclaim of this very process's open had removed it (a
     * perf server restarted after a kill -9, connecting to the address the dead one left: helper h6).
     */
    public static boolean reclaimedHere(SharedDirectory directory, String leaseName) {
        synchronized (RECLAIMED_HERE) {
            return RECLAIMED_HERE.contains(directory.path().resolve(leaseName));
        }
    }

    /**
     * Removes every {@code <prefix>-<owner>-*} file of the dead owners whose leases {@code locked}
     * holds, as one listing taken now finds them, then each lease whose files all went (so that a
     * later reclaim retries the rest), and releases the leases, which it empties. A file that
     * another user than the lease's owns is not the owner's ({@link #isFileOfLeaseOwner}): it is
     * neither removed nor waited for, as the owner's own close leaves it. Waited for, it would let
     * another user pin a dead owner's lease, and a WARNING at every reclaim, by planting a file under
     * its name in a sticky directory; until 2026-12-07 only a removal that failed was judged so, and
     * a reclaim by root, whose unlink fails on no one's file, removed it
     * (OwnerLeaseTest#aReclaimByRootLeavesAnotherUsersFileUnderADeadOwnersPrefix).
     */
    private static void removeFilesOf(Libc libc, SharedDirectory directory, String prefix, List<LockedLease> locked,
                                      List<String> removed, ReclaimListener listener, boolean dryRun) {
        if (locked.isEmpty()) return;
        try {
            List<String> names = directory.list(prefix + "-"); // sorted: an owner's files are one run of it
            for (LockedLease lease : locked) {
                String files = prefix + "-" + lease.owner() + "-";
                int first = java.util.Collections.binarySearch(names, files);
                boolean all = true;
                for (int i = first < 0 ? -first - 1 : first; i < names.size() && names.get(i).startsWith(files); i++) {
                    String name = names.get(i);
                    if (!isFileOfLeaseOwner(libc, directory, name, lease.uid(), lease.proveFiles())) continue;
                    long bytes = sizeFor(listener, directory, name);
                    try {
                        if (!dryRun) directory.unlink(name);
                        removed.add(name);
                        if (listener != null) listener.removed(lease.owner(), name, bytes);
                    } catch (ErrnoException e) {
                        cannotRemove(directory, lease.owner(), name, lease.name(), e, listener);
                        all = false;
                    }
                }
                // The lease goes last, and only when all else went, so that a later reclaim retries the rest.
                if (all && unlinkQuietly(directory, lease.owner(), lease.name(), listener, dryRun)) removed.add(lease.name());
            }
        } finally {
            for (LockedLease lease : locked) lease.release();
            locked.clear();
        }
    }

    /**
     * Whether opening a lease failed in a way that proves that no owner holds a lease by that name:
     * the file is gone ({@code ENOENT}, {@code ENOTDIR}), or what has the name is no regular file
     * ({@code EINVAL}, {@link SharedDirectory#openLease}), a symbolic link ({@code ELOOP}), a Unix
     * socket or a device node ({@code ENXIO}) — each of which a process that writes the shared
     * directory can put under a lease's name, and which, taken for a live owner, would let it hold
     * a dead claim at the head of a queue for ever. Any other failure says nothing by itself: a
     * shortage ({@code EMFILE}, {@code ENFILE}, {@code ENOMEM}), an I/O error of a network file
     * system, a permission ({@link #isNoLeaseOf} looks further); taking a live owner for dead would
     * drop its messages, or skip a record it is still writing.
     */
    public static boolean isNoLease(ErrnoException e) {
        return switch (e.errnoName()) {
            case "ENOENT", "ENOTDIR", "EINVAL", "ELOOP", "ENXIO" -> true;
            default -> false;
        };
    }

    /**
     * {@link #isNoLease}, or a permission refused ({@code EACCES}, {@code EPERM}) on a file that
     * belongs to another user than {@code user} (the owner of this worker's own lease,
     * {@link #fileOwner}): such a file, which anyone may create in a sticky {@code /dev/shm}, is no
     * lease of an owner that connects with this user's workers (a sender refuses a worker whose
     * lease another user owns). A file of {@code user} that does not open (a security module's
     * rule) proves nothing.
     */
    public static boolean isNoLeaseOf(SharedDirectory directory, String name, int user, ErrnoException e) {
        if (isNoLease(e)) return true;
        if (!e.errnoName().equals("EACCES") && !e.errnoName().equals("EPERM")) return false;
        Integer owner = ownerOf(directory, name);
        return owner != null && owner != user;
    }

    /**
     * The user that owns what has {@code name} in {@code directory} (the link itself, not what it
     * points to), read through an {@code O_PATH} descriptor ({@link SharedDirectory#status}), which
     * no permission of the file refuses: also when it does not open for this process; null when
     * that cannot be told (it is gone, or this process has no descriptor left).
     */
    public static Integer ownerOf(SharedDirectory directory, String name) {
        try {
            return directory.status(name).uid();
        } catch (ErrnoException unknown) {
            return null;
        }
    }

    /** An owner id as {@link #acquire} makes them (32 hex digits), after one optional lower-case word and '-' ("worker-"). */
    static boolean isOwnerId(String owner) {
        return OWNER_ID.matcher(owner).matches();
    }

    /** Removes {@code name} (with {@code dryRun}, only says it would), telling the listener; whether it did. */
    private static boolean unlinkQuietly(SharedDirectory directory, String owner, String name, ReclaimListener listener, boolean dryRun) {
        long bytes = sizeFor(listener, directory, name);
        try {
            if (!dryRun) directory.unlink(name);
            if (listener != null) listener.removed(owner, name, bytes);
            return true;
        } catch (ErrnoException e) {
            cannotRemove(directory, owner, name, null, e, listener);
            return false;
        }
    }

    /**
     * Whether lease {@code name} is another user's than this process's (its effective uid,
     * {@link #isFileOf}), which a reclaim not run by root leaves unjudged, and {@link #survey} shows
     * {@link State#UNJUDGED}, as they leave another
     * user's {@code 0600} lease it cannot open: a real owner's lease is {@code 0600}, so one that
     * opens was planted (anyone may create a readable file under a lease's name in a sticky
     * {@code /dev/shm}), and taken for a dead owner's, its removal, refused there ({@code EPERM}),
     * was a WARNING at every reclaim, every provider's and worker's open of every user there, and a
     * {@code conduit reclaim} that exited with 1, until 2026-12-07
     * (OwnerLeaseTest#anotherUsersLeaseThatOpensAndCannotBeRemovedIsNoDeadOwnersOfThisUsersReclaim).
     * Root, which removes any file, judges every user's lease that its user namespace maps (one it
     * does not map shows as the overflow uid). When the owner cannot be told, the lease is taken for
     * this user's and judged, as before.
     *
     * @throws ErrnoException when the lease does not open
     */
    private static boolean isAnotherUsersLease(Libc libc, SharedDirectory directory, String name) {
        try (FileDescriptor fd = directory.openLease(name)) {
            return isAnotherUsersLease(libc, fd);
        }
    }

    /**
     * {@link #isAnotherUsersLease(Libc, SharedDirectory, String)} of the lease open as {@code fd}.
     * Root is privileged only over files whose owner its user namespace maps: the root of a
     * container's own namespace (rootless, userns-remap) may neither remove from a sticky directory
     * the file of a user it does not map (it shows as the overflow uid) nor unlink it as its
     * directory's owner, so to it such a lease is another user's, as to any other user. It used to
     * judge it, being uid 0, and its removal, refused ({@code EPERM}), was a WARNING at every reclaim
     * in the container (CrossProcessTest#aReclaimByTheRootOfAUserNamespaceLeavesALeaseOfAUserItDoesNotMapUnjudged).
     */
    private static boolean isAnotherUsersLease(Libc libc, FileDescriptor fd) {
        int self = libc.geteuid();
        try {
            if (self == 0) return UserNamespace.current().mayBeUnmapped(Integer.toUnsignedLong(libc.fstat(fd).uid()));
            return !isFileOf(libc, fd, self);
        } catch (RuntimeException unknown) {
            return false;
        }
    }

    /**
     * Whether a lease this reclaim opened lost its name before it locked it: its owner's close or
     * another reclaim removed it (and the files it names) in between. Not a dead owner's to remove
     * again: it was, and reported as this reclaim's removal ({@code conduit reclaim} listed a file it
     * had not removed). A failed {@code fstat} says no: the reclaim then goes on as before.
     */
    private static boolean removedMeanwhile(Libc libc, FileDescriptor fd) {
        try {
            return libc.fstat(fd).links() == 0;
        } catch (RuntimeException e) {
            return false;
        }
    }

    /**
     * Says that a dead owner's file stays: to the listener, who reports it, or else in a WARNING
     * that names the remedy ({@link #removalRemedy}) and what stays: an owner's file keeps its
     * lease {@code leaseKept}, and a lease (or a probe file: {@code leaseKept} null) itself, so that
     * the next reclaim, at the next pool or worker opened on the directory, tries both again. The
     * name, and the errno's message that quotes it, go through {@link SharedDirectory#shown}: anyone
     * may name a file in {@code /dev/shm}, and until 2026-12-07 a newline in it forged a line of
     * the log, an escape sequence reached the terminal of whoever read it
     * (OwnerLeaseTest#aForgedNameTheReclaimCannotRemoveForgesNoLineOfItsWarning).
     */
    private static void cannotRemove(SharedDirectory directory, String owner, String name, String leaseKept, ErrnoException e,
                                     ReclaimListener listener) {
        if (listener != null) {
            listener.notRemoved(owner, name, e);
        } else {
            BestEffortLog.warn(LOG, () -> "cannot remove " + SharedDirectory.shown(directory.path().resolve(name).toString())
                    + " of a dead owner: " + SharedDirectory.shown(e.getMessage()) + "; " + removalRemedy(directory.path(), e) + "; "
                    + (leaseKept != null
                    ? "its lease " + directory.path().resolve(leaseKept) + " stays, so that the next reclaim tries again"
                    : "the next reclaim tries again"), e);
        }
    }

    /**
     * What to do about a dead owner's file in {@code directory} whose removal failed with {@code e}:
     * said by the reclaim's WARNING and by {@code conduit reclaim}. A file a reclaim tries is its
     * owner's user's ({@link #isFileOfLeaseOwner}), so a refusal comes from the directory's own
     * permissions or mount, or from a sticky directory when the reclaim runs as another user.
     */
    public static String removalRemedy(Path directory, ErrnoException e) {
        return switch (e.errnoName()) {
            case "EROFS" -> directory + " is mounted read-only here: run conduit reclaim where it is mounted read-write";
            case "EACCES", "EPERM" -> "make " + directory + " writable for this user, or run conduit reclaim as the user that "
                    + "owns the file, or as root (in a sticky directory such as /dev/shm only a file's owner may remove it)";
            // No owner makes a directory: someone put one under the owner's name.
            case "EISDIR" -> "a directory has the name of a dead owner's file: remove it by hand (rm -r) once you know no "
                    + "program of yours made it";
            // unlink(2) refuses a mount point in use: something bind-mounted the file (a container's volume of one file).
            case "EBUSY" -> "the file is a mount point (a bind mount of it, such as a container's volume): unmount it (umount), "
                    + "then the next reclaim removes it";
            default -> Errno.remedy(e.errno(), "see the cause; the file is in " + directory);
        };
    }

    /** The size of {@code name} for a listener's report, read only when there is one to tell: a reclaim alone needs none. */
    private static long sizeFor(ReclaimListener listener, SharedDirectory directory, String name) {
        if (listener == null) return -1;
        try {
            return directory.status(name).size();
        } catch (ErrnoException e) {
            return -1;
        }
    }

    /**
     * Removes the lease and releases the lock, once none of the owner's other files is left. The
     * owner removes them first; this lists the directory for any still there (one whose removal
     * failed, or one the owner lost track of: a chunk whose free could not remove it) and tries
     * each once more. If one still cannot be removed (the directory's permissions or mount changed
     * while in use, an I/O error), or the directory cannot be listed to tell, the lease is kept and
     * only unlocked: its owner then reads as dead, and the next reclaim in the directory
     * ({@link #reclaimDead}), which every Conduit process runs as it opens a memory provider or a
     * worker there, removes what is left and then the lease. A WARNING names each file left, the
     * errno and that. Before, the lease was removed whatever was left, and those files, which no
     * lease named any more, stayed in the directory for good.
     *
     * <p>A file under the owner's prefix that belongs to another user than the lease is not the
     * owner's (it creates every file as itself; anyone may create one by that name in a sticky
     * {@code /dev/shm}): it is neither removed nor waited for.
     *
     * <p>Idempotent. Throws only what it always did: a {@link ConduitException} when the lease
     * itself, its owner's files all gone, cannot be removed (a later reclaim removes it then). The
     * lock is released, and the descriptor closed, whatever happens.
     */
    @Override
    public synchronized void close() {
        if (closed) return;
        closed = true;
        try {
            FilesLeft left = removeFilesLeft();
            if (left == null) {
                directory.remove(leaseName(prefix, owner));
            } else {
                warnKept(left);
            }
        } finally {
            fd.close();
        }
    }

    /** {@link #close}'s WARNING of a lease kept; a failure to log costs the close nothing: the lease stays, unlocked, for the next reclaim. */
    private void warnKept(FilesLeft left) {
        BestEffortLog.warn(logger, () -> left.what() + "; the lease " + path()
                + " is kept, unlocked, so that the next reclaim of dead owners' files in " + directory.path() + ", which any "
                + "Conduit process runs as it opens a memory provider or worker there, removes what is left of this owner's "
                + "files and then the lease" + left.remedy(), null);
    }

    /**
     * What {@link #close} could not remove, or could not tell about, for its warning, and what to
     * do about it ("; ..."), when {@code what} does not say so already.
     */
    private record FilesLeft(String what, String remedy) {
    }

    /**
     * Removes whatever of the owner's files ({@code <prefix>-<owner>-*}) is still in the directory:
     * null when none is left.
     */
    private FilesLeft removeFilesLeft() {
        String files = prefix + "-" + owner + "-";
        List<String> names;
        try {
            names = directory.list(files);
        } catch (RuntimeException e) {
            // The listing's error names its errno and what to do.
            return new FilesLeft("cannot tell whether every file " + files + "* of this owner is gone from " + directory.path() + ": "
                    + e.getMessage(), "");
        }
        List<String> failures = new ArrayList<>();
        int firstErrno = 0;
        Integer uid = uidOf(libc, fd);
        boolean proveFiles = filesNeedProof(libc, fd, uid);
        for (String name : names) {
            if (!isFileOfLeaseOwner(libc, directory, name, uid, proveFiles)) continue;
            try {
                directory.unlink(name);
            } catch (ErrnoException e) {
                if (failures.isEmpty()) firstErrno = e.errno();
                failures.add(directory.path().resolve(name) + ": " + e.errnoName() + " (" + e.getMessage() + ")");
            }
        }
        if (failures.isEmpty()) return null;
        return new FilesLeft("cannot remove " + String.join(", ", failures), "; until then they take space there: "
                + dev.conduit.linux.Errno.remedy(firstErrno, "restore this user's write access to " + directory.path()
                + " (its permissions or mount changed while in use)"));
    }

    /**
     * Whether {@code name}, under an owner's prefix, is that owner's: not when another user than
     * {@code leaseUid}, the owner of its lease ({@link #uidOf}), owns it, for an owner creates every
     * file as itself, and anyone may create a file by that name in a sticky directory such as
     * {@code /dev/shm}; nor, with {@code proveFiles} ({@link #filesNeedProof}), when this process
     * cannot prove it its own user's ({@link UserNamespace#ownsNamedFile}, as {@link #isFileOf}
     * proves a lease), for then {@code leaseUid} is the overflow uid, which every user the
     * namespace does not map shows as too. Until 2026-12-07 the uid alone decided there: another
     * user's file planted under a dead owner's prefix was taken for the owner's, its unlink failed
     * ({@code EPERM} in a sticky directory), and the lease stayed, a WARNING at every reclaim
     * (OwnerLeaseTest#aReclaimRunningAsTheOverflowUidLeavesAnUnmappedUsersFileUnderADeadOwnersPrefix).
     * When an owner or the proof cannot be told (gone meanwhile, a read-only mount), the file is
     * taken for the owner's, whose lease then waits for it rather than leave it without one.
     */
    private static boolean isFileOfLeaseOwner(Libc libc, SharedDirectory directory, String name, Integer leaseUid,
                                              boolean proveFiles) {
        if (leaseUid == null) return true;
        // O_PATH opens nothing for I/O (a FIFO, a socket, a device node alike), and the proof works on it.
        try (FileDescriptor named = directory.openExisting(name, OpenFlags.O_PATH)) {
            return libc.fstat(named).uid() == leaseUid && (!proveFiles || UserNamespace.ownsNamedFile(libc, named));
        } catch (ErrnoException unknown) {
            return true;
        }
    }

    /**
     * Whether the files under the prefix of the lease open as {@code leaseFd}, owned by
     * {@code leaseUid}, count as its owner's only once this process proves them its own user's
     * ({@link #isFileOfLeaseOwner}): where {@code leaseUid} is the overflow uid of this process's
     * user namespace and the lease is proven this process's own user's ({@link #isFileOf}), as a
     * reclaim not run by root judges only such a lease ({@link #isAnotherUsersLease}). A lease of
     * another user that shows as that uid (judged by root, or a proof that cannot be made) leaves
     * nothing to prove against: its files are judged by their uid, as before.
     */
    private static boolean filesNeedProof(Libc libc, FileDescriptor leaseFd, Integer leaseUid) {
        if (leaseUid == null || !UserNamespace.current().mayBeUnmapped(Integer.toUnsignedLong(leaseUid))) return false;
        try {
            return UserNamespace.ownsFile(libc, leaseFd);
        } catch (ErrnoException unknown) {
            return false;
        }
    }

    /** The user that owns the lease open as {@code leaseFd}; null when {@code fstat} cannot tell. */
    private static Integer uidOf(Libc libc, FileDescriptor leaseFd) {
        try {
            return libc.fstat(leaseFd).uid();
        } catch (ErrnoException e) {
            return null;
        }
    }
}
