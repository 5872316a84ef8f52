package dev.conduit.plugin.memfd;

import dev.conduit.linux.Errno;
import dev.conduit.linux.ErrnoException;
import dev.conduit.linux.FileDescriptor;
import dev.conduit.linux.FileStatus;
import dev.conduit.linux.Libc;
import dev.conduit.linux.OpenFlags;
import dev.conduit.linux.PeerCredentials;
import dev.conduit.shm.OwnerLease;
import dev.conduit.shm.SharedDirectory;
import dev.conduit.shm.UserNamespace;
import dev.conduit.spi.ConfigKey;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.RepeatedWarning;
import dev.conduit.spi.ThreadStart;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.function.Function;

import static dev.conduit.linux.EventfdFlags.EFD_NONBLOCK;
import static dev.conduit.linux.PollEvents.POLLIN;
import static dev.conduit.linux.PollEvents.POLLOUT;
import static dev.conduit.linux.SocketFlags.SOCK_NONBLOCK;
import static dev.conduit.linux.SocketFlags.SOCK_STREAM;
import static java.lang.System.Logger.Level.DEBUG;
import static java.lang.System.Logger.Level.ERROR;
import static java.lang.System.Logger.Level.WARNING;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;

/**
 * A provider's fd server: hands the memfd of an exported chunk to whoever presents the chunk's
 * capability token, over the Unix socket named in the chunk's {@link MemfdPayload}, as
 * {@link FdProtocol} describes.
 *
 * <p>One daemon platform thread serves connections one at a time. It sleeps in {@code poll} on
 * the listening socket and an eventfd that {@link #close()} signals, and waits for a client's
 * request with the same eventfd in view, so closing never waits for a client. A client that
 * connects and sends nothing is dropped after {@code memfd.server.timeout}.
 *
 * <p>Exports live in a list guarded by its own monitor. The server holds that monitor from the
 * token lookup until the descriptor has been sent, and {@link #revoke} takes it, so a chunk's
 * memfd is never closed while it is being passed; the non-blocking send makes that short.
 */
final class FdServer implements AutoCloseable {

    private static final int BACKLOG = 64;
    /**
     * How long the server pauses after a failed {@code accept} (out of descriptors), rather than spin on a connection it cannot
     * take, or after any other failure of a turn of its loop.
     */
    private static final int ACCEPT_RETRY_MILLIS = 100;
    /**
     * How often the server looks for its socket in the shared directory: a cleaner that removes a
     * user's files there (systemd-logind's RemoveIPC, a tmpfiles rule) leaves it listening on a
     * name nobody can reach, so it binds the name again.
     */
    private static final long SOCKET_CHECK_NANOS = 1_000_000_000L;
    /** The least time between two WARNINGs of one kind that a peer or a cleaner can make the server repeat. */
    private static final Duration REPEATED_WARNING = Duration.ofMinutes(1);
    private static final int DROPPED = -1;
    private static final SecureRandom TOKENS = new SecureRandom();
    private static final Set<PosixFilePermission> OWNER_ONLY = PosixFilePermissions.fromString("rw-------");
    private static final Set<PosixFilePermission> EVERYONE = PosixFilePermissions.fromString("rw-rw-rw-");
    /** The sticky bit of a directory's mode ({@code S_ISVTX}): only a file's owner (and root) may remove or rename it there. */
    private static final int STICKY = 01000;

    private final Libc libc;
    private final SharedDirectory directory;
    private final String socketName;
    private final String socketPath;
    /** The socket name's "{@code <prefix>-<owner>-}", which the temporary names of {@link #bindAgainIfRemoved} share. */
    private final String ownerPrefix;
    /** Where this process's descriptors show as paths: {@link FdProtocol#PROC_SELF_FD}, except in tests of a process without it. */
    private final Path procSelfFd;
    /** Replaced only by the server thread ({@link #bindAgainIfRemoved}); closed by {@link #close()} after that thread ended. */
    private FileDescriptor listener;
    /** A failed rebind, said again only after a minute or a success. */
    private final RepeatedWarning rebindFailed;
    /** A refused peer: any user may connect as fast as it likes. */
    private final RepeatedWarning refusedPeer;
    /** An admitted client dropped for its silence: it may connect and stay silent again and again. */
    private final RepeatedWarning silentClient;
    /** An accept that failed (out of descriptors, typically), retried until it works. */
    private final RepeatedWarning acceptFailed;
    /** A reply that could not be sent for a cause on this side (ETOOMANYREFS): said again only after a minute. */
    private final RepeatedWarning serveFailed;
    /** A turn of the serving loop that failed unexpectedly ({@link #sayAndPauseAfter}), retried until it works. */
    private final RepeatedWarning loopFailed;
    private final FileDescriptor stop;
    private final int ownUid;
    /** Whether a client showing {@link #ownUid} is this provider's user: see {@link #ownUidProvesTheUser}. */
    private final boolean ownUidProvesTheUser;
    private final Set<Integer> allowedUids;
    private final long timeoutNanos;
    private final System.Logger logger;
    /** The provider's lease, which names the socket: a cleaner that removed the socket may have removed it too. */
    private final OwnerLease lease;
    private final List<Export> exports = new ArrayList<>();
    private final Thread thread;
    private boolean closed;

    /** What the server answers a request with: a status, and for {@link FdProtocol#STATUS_OK} the chunk to pass. */
    record Decision(int status, MemfdChunk chunk) {}

    private record Export(byte[] token, MemfdChunk chunk) {}

    private FdServer(Libc libc, SharedDirectory directory, String socketName, String socketPath, Path procSelfFd,
                     FileDescriptor listener, FileDescriptor stop, Set<Integer> allowedUids, long timeoutNanos, OwnerLease lease,
                     System.Logger logger, Function<Runnable, Thread> threads) {
        this.libc = libc;
        this.directory = directory;
        this.socketName = socketName;
        this.socketPath = socketPath;
        this.ownerPrefix = socketName.substring(0, socketName.lastIndexOf('-') + 1);
        this.procSelfFd = procSelfFd;
        this.listener = listener;
        this.stop = stop;
        this.ownUid = libc.geteuid();
        this.allowedUids = Set.copyOf(allowedUids);
        this.ownUidProvesTheUser = ownUidProvesTheUser(ownUid, this.allowedUids, UserNamespace.current());
        this.timeoutNanos = timeoutNanos;
        this.logger = logger;
        this.lease = lease;
        this.rebindFailed = new RepeatedWarning(logger, REPEATED_WARNING);
        this.refusedPeer = new RepeatedWarning(logger, REPEATED_WARNING);
        this.silentClient = new RepeatedWarning(logger, REPEATED_WARNING);
        this.acceptFailed = new RepeatedWarning(logger, REPEATED_WARNING);
        this.serveFailed = new RepeatedWarning(logger, REPEATED_WARNING);
        this.loopFailed = new RepeatedWarning(logger, REPEATED_WARNING);
        this.thread = threads.apply(this::serveUntilStopped);
    }

    /**
     * Binds a new socket of {@code lease}'s owner in {@code directory}, restricts who may connect,
     * listens, and starts serving.
     *
     * @param directory   open until this returns: the socket is bound through its descriptor's
     *                    number where {@code /proc} is there ({@link FdProtocol#bindAddress}), so in
     *                    the directory opened, not in one made at its path since
     * @param allowedUids users besides our own that may receive chunks; if there are any, the
     *                    socket is made connectable by everyone ({@code 0666}) and the
     *                    {@code SO_PEERCRED} check admits them, otherwise it is {@code 0600}
     * @throws ConduitException naming the socket path, the failed call and the remedy; nothing is left behind. Also when
     *                          the socket's name no longer leads to the socket bound ({@link #restrictSocket}): the server
     *                          does not listen on a socket whose permissions it could not set
     */
    static FdServer start(Libc libc, SharedDirectory directory, OwnerLease lease, Set<Integer> allowedUids,
                          long timeoutNanos, System.Logger logger) {
        return start(libc, directory, lease, allowedUids, timeoutNanos, logger, FdProtocol.PROC_SELF_FD);
    }

    /** {@link #start} with {@code procSelfFd} in place of {@code /proc/self/fd}: for tests of a process without it. */
    static FdServer start(Libc libc, SharedDirectory directory, OwnerLease lease, Set<Integer> allowedUids,
                          long timeoutNanos, System.Logger logger, Path procSelfFd) {
        String threadName = "conduit-memfd-server-" + lease.owner().substring(0, 8);
        return start(libc, directory, lease, allowedUids, timeoutNanos, logger, procSelfFd,
                serve -> Thread.ofPlatform().daemon().name(threadName).unstarted(serve));
    }

    /**
     * {@link #start} with {@code procSelfFd} in place of {@code /proc/self/fd}, its thread made by {@code threads}
     * (unstarted): for tests, whose thread's start throws what a thread that cannot start throws.
     */
    static FdServer start(Libc libc, SharedDirectory directory, OwnerLease lease, Set<Integer> allowedUids,
                          long timeoutNanos, System.Logger logger, Path procSelfFd, Function<Runnable, Thread> threads) {
        String name = lease.newSocketName(FdProtocol.SOCKET_SUFFIX);
        String path = FdProtocol.socketPath(directory.path(), name);
        String address = FdProtocol.bindAddress(directory, name, procSelfFd);
        FileDescriptor listener;
        try {
            listener = libc.socket(SOCK_STREAM | SOCK_NONBLOCK);
        } catch (ErrnoException e) {
            throw startFailure(path, e);
        }
        FileDescriptor stop = null;
        boolean bound = false;
        try {
            try {
                libc.bind(listener, address);
            } catch (ErrnoException e) {
                throw new ConduitException("cannot start the memfd fd server at " + path + ": " + e.getMessage()
                        + bindRemedy(e, directory, path, address), e);
            }
            bound = true;
            // bind made the file with the umask's permissions. Narrowing them now is safe: until
            // listen, a connect is refused whatever the permissions say.
            restrictSocket(libc, directory, name, lease.fileOwner(libc), procSelfFd, allowedUids.isEmpty() ? OWNER_ONLY : EVERYONE);
            try {
                libc.listen(listener, BACKLOG);
                stop = libc.eventfd(0, EFD_NONBLOCK);
            } catch (ErrnoException e) {
                throw startFailure(path, e);
            }
            FdServer server = new FdServer(libc, directory, name, path, procSelfFd, listener, stop, allowedUids, timeoutNanos, lease,
                    logger, threads);
            logger.log(DEBUG, () -> "memfd fd server listening on " + path);
            // Last: a failure after it would close, under the running thread, the descriptors it polls. One that cannot start
            // (at the thread limit) leaves nothing: below, the socket is closed and its file removed, as on any failure.
            ThreadStart.start(server.thread, "cannot start the memfd fd server at " + path + ", which hands this process's "
                    + "exported chunks (a pool's exports, a worker's receive queue and bounce rings) to the processes that import them");
            return server;
        } catch (RuntimeException | Error e) {
            if (stop != null) {
                stop.closeAfter(e);
            }
            listener.closeAfter(e);
            if (bound) {
                try {
                    directory.unlink(name);
                } catch (RuntimeException cleanup) {
                    e.addSuppressed(cleanup);
                }
            }
            throw e;
        }
    }

    /** A failure of the socket, listen or eventfd call of {@link #start}: the errno and, when out of descriptors, the limit to raise. */
    private static ConduitException startFailure(String path, ErrnoException e) {
        return new ConduitException("cannot start the memfd fd server at " + path + ": " + e.getMessage() + "; "
                + Errno.remedy(e.errno(), "see the cause"), e);
    }

    /**
     * What to do about a failed bind at {@code address} ({@link FdProtocol#bindAddress}). Through the directory's descriptor,
     * {@code ENOENT} means the directory the provider opened was removed, whatever was made at its path since: this
     * process never binds there again.
     */
    private static String bindRemedy(ErrnoException e, SharedDirectory directory, String path, String address) {
        if (e.errno() == Errno.ENOENT && !address.equals(path)) {
            String tooLong = FdProtocol.fitsAnAddress(path) ? "; " : "; the path is too long for a socket address, and ";
            return Files.isDirectory(FdProtocol.PROC_SELF_FD)
                    ? tooLong + address + " names the shared directory the provider opened, which was removed since: make "
                    + directory.path() + " again and restart this process (a directory made again at its path is another one, "
                    + "which this process does not use)"
                    : tooLong + FdProtocol.PROC_SELF_FD + ", through which a longer one is reached, is not there: " + FdProtocol.PROC_REMEDY;
        }
        if (e.errno() == Errno.EADDRINUSE) {
            return "; something already has this name, which only someone who read the lease and guessed 64 random bits could "
                    + "have made: check who writes to " + directory.path();
        }
        return "; " + directory.creationRemedy(e);
    }

    /**
     * Gives the socket this process just bound as {@code name} its {@code permissions}, and no
     * other file ever. A chmod by path follows a symbolic link: in a directory other users may
     * write that is not sticky (a group-writable or {@code 0777} bind mount shared with a
     * container), any of them could replace the socket with a link to a file of this user
     * ({@code ~/.bashrc}) between the bind and the chmod, and the chmod made that file
     * {@code rw-rw-rw-} (until 2026-12-06; a removed socket's rebind offered the race again every
     * second). So the name is opened {@code O_PATH} without following a link, must be a socket of
     * the lease's owner, and the chmod reaches that very file through {@code /proc/self/fd}: the
     * magic link leads to the inode opened, whatever the name leads to by then. Where
     * {@code /proc} does not show this process, it goes by name only in a directory where no
     * other user can replace the socket (sticky, as {@code /dev/shm}, or writable by this user
     * alone).
     *
     * @param owner the owner the socket's file must have: the lease's, as the file system reports it
     * @throws ConduitException naming the path, what is there instead of the socket and the remedy; nothing was changed
     */
    private static void restrictSocket(Libc libc, SharedDirectory directory, String name, int owner, Path procSelfFd,
                                       Set<PosixFilePermission> permissions) {
        String path = FdProtocol.socketPath(directory.path(), name);
        String failure = "cannot set the permissions of the memfd fd server's socket " + path + " to "
                + PosixFilePermissions.toString(permissions) + ": ";
        try (FileDescriptor socket = openOwnSocket(libc, directory, name, owner, path, failure)) {
            Path target;
            if (Files.isDirectory(procSelfFd)) {
                target = procSelfFd.resolve(Integer.toString(socket.fd()));
            } else if (noOtherUserMayReplace(libc.fstat(directory.fd()), owner)) {
                target = Path.of(path);
            } else {
                throw new ConduitException(failure + procSelfFd + ", through which the socket is reached without following a "
                        + "link put in its place, is not there, and " + directory.path() + " lets other users replace the files "
                        + "in it (it is writable by others and not sticky), so its path may lead to another file; nothing was "
                        + "changed: mount /proc for this process's PID namespace, or make " + directory.path() + " sticky "
                        + "(chmod +t, as /dev/shm is) or writable by this user alone");
            }
            Files.setPosixFilePermissions(target, permissions);
        } catch (IOException e) {
            throw new ConduitException(failure + e, e);
        }
    }

    /**
     * The socket of {@code owner} named {@code name}, opened {@code O_PATH} without following a link.
     *
     * @throws ConduitException when the name is anything else (a symbolic link, a regular file, another user's socket)
     *                          or gone, naming what is there; nothing stays open
     */
    private static FileDescriptor openOwnSocket(Libc libc, SharedDirectory directory, String name, int owner, String path,
                                                String failure) {
        FileDescriptor socket;
        try {
            socket = directory.openExisting(name, OpenFlags.O_PATH);
        } catch (ErrnoException e) {
            if (e.errno() == Errno.ELOOP) throw replaced(failure, path + " is now a symbolic link", directory, e);
            if (e.errno() == Errno.ENOENT) throw replaced(failure, path + " is gone", directory, e);
            throw new ConduitException(failure + "opening it to check it is the socket bound failed: " + e.getMessage() + "; "
                    + Errno.remedy(e.errno(), "see the cause") + "; nothing was changed", e);
        }
        try {
            FileStatus found = libc.fstat(socket);
            if (found.fileType() != FileStatus.S_IFSOCK) throw replaced(failure, path + " is now " + found.typeName(), directory, null);
            if (found.uid() != owner) {
                throw replaced(failure, path + " is now a socket of uid " + Integer.toUnsignedString(found.uid()) + ", not of this "
                        + "process's user (uid " + Integer.toUnsignedString(owner) + ")", directory, null);
            }
            return socket;
        } catch (RuntimeException | Error e) {
            socket.closeAfter(e);
            throw e;
        }
    }

    /** The socket bound is not what its name leads to any more, as {@code found} says: nothing is chmodded. */
    private static ConduitException replaced(String failure, String found, SharedDirectory directory, Throwable cause) {
        return new ConduitException(failure + found + ", not the socket this process bound there: someone who may write "
                + directory.path() + " removed the socket (another user, or a cleaner); nothing was changed. Keep "
                + directory.path() + " writable by this user alone, or make it sticky (chmod +t, as /dev/shm is), so that no "
                + "other user can remove or replace the files in it", cause);
    }

    /**
     * Whether only {@code owner} (and root) can remove or replace the files in a directory of
     * status {@code directory}: it is sticky, or it is the owner's and writable by nobody else.
     */
    private static boolean noOtherUserMayReplace(FileStatus directory, int owner) {
        return (directory.permissions() & STICKY) != 0 || directory.uid() == owner && (directory.permissions() & 022) == 0;
    }

    /** The socket's name relative to the shared directory, as the payload carries it. */
    String socketName() {
        return socketName;
    }

    /** Makes {@code chunk} available to whoever presents the returned token. */
    byte[] publish(MemfdChunk chunk) {
        byte[] token = new byte[FdProtocol.TOKEN_LENGTH];
        TOKENS.nextBytes(token);
        synchronized (exports) {
            exports.add(new Export(token, chunk));
        }
        return token.clone();
    }

    /**
     * Withdraws {@code chunk}'s token. Once this returns the server neither finds the chunk nor
     * touches its memfd, which may then be closed.
     */
    void revoke(MemfdChunk chunk) {
        synchronized (exports) {
            exports.removeIf(export -> export.chunk() == chunk);
        }
    }

    /**
     * The answer to {@code request} from {@code peer}. Checks the peer's uid first, so that a
     * refused user learns nothing about tokens, then the request's version, then its length, then
     * the token.
     */
    Decision decide(PeerCredentials peer, byte[] request) {
        if (!admits(peer)) {
            return new Decision(FdProtocol.STATUS_PEER_NOT_ALLOWED, null);
        }
        if (request.length > 0 && request[0] != FdProtocol.VERSION) {
            return new Decision(FdProtocol.STATUS_OTHER_VERSION, null);
        }
        if (request.length != FdProtocol.REQUEST_LENGTH) {
            return new Decision(FdProtocol.STATUS_BAD_REQUEST, null);
        }
        byte[] token = Arrays.copyOfRange(request, 1, FdProtocol.REQUEST_LENGTH);
        MemfdChunk match = null;
        synchronized (exports) {
            // MessageDigest.isEqual takes as long for a near miss as for a far one, and the loop
            // visits every export, so the answer's timing tells nothing about any live token.
            for (Export export : exports) {
                if (MessageDigest.isEqual(export.token(), token)) {
                    match = export.chunk();
                }
            }
        }
        return match == null ? new Decision(FdProtocol.STATUS_UNKNOWN_TOKEN, null) : new Decision(FdProtocol.STATUS_OK, match);
    }

    /** Whether {@code peer} runs as our own user or one of {@code memfd.allowed.uids}. */
    private boolean admits(PeerCredentials peer) {
        return allowedUids.contains(peer.uid()) || peer.uid() == ownUid && ownUidProvesTheUser;
    }

    /**
     * Whether a client that shows {@code ownUid} through {@code SO_PEERCRED} runs as this
     * provider's user. Not where that uid is the overflow uid of this process's user namespace (a
     * container run as nobody): every user the namespace does not map shows as it too, and once
     * {@code allowedUids} opens the socket to everyone, any of them could connect. While the socket
     * is {@code 0600}, the kernel lets only this user (and the privileged) connect at all.
     */
    static boolean ownUidProvesTheUser(int ownUid, Set<Integer> allowedUids, UserNamespace namespace) {
        return allowedUids.isEmpty() || !namespace.mayBeUnmapped(Integer.toUnsignedLong(ownUid));
    }

    // ---------------------------------------------------------------- the server thread

    private void serveUntilStopped() {
        FileDescriptor[] waitFor = {listener, stop};
        int[] events = {POLLIN, POLLIN};
        int[] revents = new int[2];
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment request = arena.allocate(FdProtocol.REQUEST_LENGTH);
            long lastCheck = System.nanoTime();
            while (true) {
                try {
                    waitFor[0] = listener; // replaced by a rebind, which a failure after it may have cut short
                    libc.poll(waitFor, events, revents, (int) (SOCKET_CHECK_NANOS / 1_000_000));
                    if (revents[1] != 0) {
                        return;
                    }
                    if (revents[0] != 0) {
                        acceptOne(request);
                    }
                    if (System.nanoTime() - lastCheck >= SOCKET_CHECK_NANOS) {
                        lastCheck = System.nanoTime();
                        bindAgainIfRemoved();
                    }
                } catch (RuntimeException | Error e) {
                    sayAndPauseAfter(e);
                }
            }
        } catch (RuntimeException | Error e) {
            logger.log(ERROR, "the memfd fd server on " + socketPath + " stopped; imports of this provider's chunks will "
                    + "time out until it is reopened", e);
        }
    }

    /**
     * A failure of one turn of the serving loop, which does not end it: out of descriptors, more
     * than accept fails (a class first loaded or initialized then, the logger's own formatting),
     * and the server must serve again once descriptors are back, not leave every later import of
     * this provider's chunks to time out. Said at most once a minute with its stack trace, and
     * paused for, so that a failure that repeats forever neither spins nor floods the log.
     */
    private void sayAndPauseAfter(Throwable failure) {
        // Best effort (RepeatedWarning): when the logger fails too, serving on unheard beats ending the thread.
        loopFailed.log(() -> "memfd fd server on " + socketPath + " failed: " + failure + "; it serves on, pausing "
                + ACCEPT_RETRY_MILLIS + " ms after each failure; imports of this provider's chunks wait meanwhile and fail "
                + "after " + MemfdConfig.CONNECT_TIMEOUT.name() + ". If descriptors ran out (" + Errno.shortageRemedy(Errno.EMFILE)
                + "), a class that failed to initialize then (NoClassDefFoundError: Could not initialize class) fails so "
                + "until this process restarts", failure);
        pauseBeforeRetrying();
    }

    /** {@link #ACCEPT_RETRY_MILLIS}, ended early by a stop; a pause still, not a spin, when even the poll fails. */
    private void pauseBeforeRetrying() {
        try {
            libc.poll(stop, POLLIN, ACCEPT_RETRY_MILLIS);
        } catch (RuntimeException | Error pollFailed) {
            java.util.concurrent.locks.LockSupport.parkNanos(ACCEPT_RETRY_MILLIS * 1_000_000L);
        }
    }

    /**
     * Binds the socket's name again when something removed it from the shared directory: the
     * listening socket still works, but no importer can reach it by name. Imports tried meanwhile
     * failed, naming the removal (MemfdImporter); later ones succeed. The new socket is bound and
     * listening under a temporary name, then renamed: bound under its own name, it refused the
     * connections that came before its {@code listen}, and an importer took that for a producer
     * gone. The temporary name is the owner's prefix (a reclaim of a dead owner's files removes it
     * too), new random bits (a name known in advance could be taken by anyone who may write the
     * directory, which would block every rebind) and {@link FdProtocol#BIND_SUFFIX}, as long as
     * the socket's suffix, so that whatever directory fits the socket's address fits it too. Nothing here may end
     * the server: a failure (out of descriptors, the directory itself removed, a temporary name
     * that no longer leads to the socket just bound, which is then neither chmodded nor listened
     * on: {@link #restrictSocket}) is tried again at the next check, and said at most once a minute.
     */
    private void bindAgainIfRemoved() {
        FileDescriptor fresh = null;
        String temporary = null;
        boolean bound = false;
        try {
            try {
                directory.openExisting(socketName, OpenFlags.O_PATH).close();
                return;
            } catch (ErrnoException e) {
                if (e.errno() != Errno.ENOENT) return; // there, but not for us to judge (EACCES): the next import says what is wrong
            }
            temporary = ownerPrefix + SharedDirectory.randomId().substring(0, 16) + FdProtocol.BIND_SUFFIX;
            String address = FdProtocol.bindAddress(directory, temporary, procSelfFd);
            fresh = libc.socket(SOCK_STREAM | SOCK_NONBLOCK);
            try {
                libc.bind(fresh, address);
            } catch (ErrnoException e) {
                throw new ConduitException(e.getMessage() + bindRemedy(e, directory, socketPath, address), e);
            }
            bound = true;
            restrictSocket(libc, directory, temporary, lease.fileOwner(libc), procSelfFd, allowedUids.isEmpty() ? OWNER_ONLY : EVERYONE);
            libc.listen(fresh, BACKLOG);
            libc.renameat(directory.fd(), temporary, socketName);
        } catch (RuntimeException | Error e) {
            if (bound) {
                try {
                    directory.unlink(temporary); // the rename failed: the temporary name is left to remove
                } catch (RuntimeException ignored) {
                    // removed by the same cleaner, or it cannot be: a dead owner's reclaim removes it at the latest
                }
            }
            if (fresh != null) fresh.close();
            rebindFailed.log(() -> "memfd fd server: its socket " + socketPath + " was removed from the shared directory while "
                    + "in use, and binding it again failed (" + e.getMessage() + "); it is tried every second. "
                    + "Imports of this provider's chunks fail until then");
            return;
        }
        FileDescriptor old = listener;
        listener = fresh;
        old.close();
        rebindFailed.reset();
        logger.log(WARNING, () -> "memfd fd server: its socket " + socketPath + " was removed from the shared directory while in use "
                + "(" + SharedDirectory.CLEANERS + "); it is bound again. Imports tried meanwhile failed. Keep such cleaners off the shared directory");
        // A cleaner that removes a user's files (RemoveIPC) took the provider's lease too, which names the socket just bound:
        // said nowhere else until the pool's next new export, which a worker's provider may never make.
        lease.warnOnceIfRemoved("memfd: this process's pool", "Its fd server's socket, bound again at " + socketPath + ", serves "
                + "on while this process lives, but should this process die, no Conduit process reclaims that socket, since no lease "
                + "names it (conduit info then lists it under NO LEASE: remove it by hand). Close the pool or worker and open a new "
                + "one, whose lease covers its socket");
    }

    /**
     * What to do about a failed accept, for its warning: the importers wait meanwhile, and fail after
     * their {@code memfd.connect.timeout}. Out of descriptors it named no limit to raise.
     */
    private static String acceptRemedy(ErrnoException e) {
        if (e.errno() != Errno.EMFILE && e.errno() != Errno.ENFILE) return "";
        return "; importers of this process's chunks and peers connecting to its workers wait meanwhile, and fail after "
                + MemfdConfig.CONNECT_TIMEOUT.name() + ": " + Errno.shortageRemedy(e.errno());
    }

    private void acceptOne(MemorySegment request) {
        FileDescriptor connection;
        try {
            connection = libc.accept(listener, SOCK_NONBLOCK);
        } catch (ErrnoException e) {
            // Out of descriptors or buffers: the connection stays queued, so poll would report it
            // again at once. Pause instead of spinning, and stay stoppable while paused.
            acceptFailed.log(() -> "memfd fd server on " + socketPath + ": accepting a connection failed: " + e.getMessage()
                    + "; retrying every " + ACCEPT_RETRY_MILLIS + " ms" + acceptRemedy(e));
            pauseBeforeRetrying();
            return;
        }
        if (connection == null) {
            return; // the client gave up between poll and accept
        }
        PeerCredentials peer = null;
        try (connection) {
            peer = libc.peerCredentials(connection);
            serve(connection, peer, request);
        } catch (ErrnoException e) {
            if (e.errno() == Errno.EPIPE || e.errno() == Errno.ECONNRESET) {
                // The client went away mid-exchange: its import fails on its side.
                logger.log(DEBUG, () -> "memfd fd server on " + socketPath + " dropped a connection: " + e.getMessage());
            } else {
                // A cause on this side: the importer learns only that the connection closed, so this log is the one place
                // that names it.
                String client = peer == null ? "a client" : describe(peer);
                serveFailed.log(() -> "memfd fd server on " + socketPath + " could not answer " + client + ": " + e.getMessage()
                        + "; " + serveRemedy(e.errno()) + "; the importer was told only that the connection closed");
            }
        } catch (RuntimeException e) {
            // A bug in serving one client must not take the server down for every other one.
            logger.log(ERROR, "memfd fd server on " + socketPath + " failed to serve a connection", e);
        }
    }

    /** What to do about an errno that kept the server from answering a client. */
    private static String serveRemedy(int errno) {
        return errno == Errno.ETOOMANYREFS
                ? "this user has more descriptors in flight (passed, and not yet received) than its open-file limit: an importer "
                + "that asks for chunks and does not read the replies holds them (ss -xp shows who has data queued on this "
                + "socket's connections); close it, or raise the producer's limit (ulimit -n, LimitNOFILE=)"
                : Errno.remedy(errno, "see the errno");
    }

    private void serve(FileDescriptor connection, PeerCredentials peer, MemorySegment requestBuffer) {
        if (!admits(peer)) {
            // Answered before reading anything, in a few bytes that a new connection's send buffer always has room for, so a
            // user who may not import cannot hold the server for memfd.server.timeout either (sendRest never waits here).
            sendRest(connection, FdProtocol.refusal(FdProtocol.STATUS_PEER_NOT_ALLOWED), 0, System.nanoTime() + timeoutNanos, peer);
            logRefusedPeer(peer);
            return;
        }
        int length = receiveRequest(connection, requestBuffer, peer);
        if (length == DROPPED) {
            return;
        }
        byte[] request = requestBuffer.asSlice(0, length).toArray(JAVA_BYTE);
        long deadline = System.nanoTime() + timeoutNanos;
        Decision decision;
        byte[] reply;
        int sent;
        while (true) {
            synchronized (exports) {
                decision = decide(peer, request);
                if (decision.status() == FdProtocol.STATUS_OK) {
                    MemfdChunk chunk = decision.chunk();
                    reply = FdProtocol.okReply(chunk.length());
                    // The descriptor travels with the first byte: even a short send has delivered it, and the rest may
                    // follow once the lock is left, the chunk freed meanwhile.
                    sent = libc.sendmsg(connection, MemorySegment.ofArray(reply), chunk.memfd());
                } else {
                    reply = FdProtocol.refusal(decision.status());
                    sent = libc.sendmsg(connection, MemorySegment.ofArray(reply));
                }
            }
            if (sent > 0) break;
            // No room, nothing sent: waited for outside the lock, which the provider's exports and frees take, and decided
            // again, for the chunk may have been freed meanwhile.
            if (!awaitRoom(connection, deadline, peer, 0, reply.length)) return;
        }
        if (!sendRest(connection, reply, sent, deadline, peer)) return;
        Decision answered = decision;
        logger.log(DEBUG, () -> answered.status() == FdProtocol.STATUS_OK
                ? "memfd fd server passed " + answered.chunk() + " to " + describe(peer)
                : "memfd fd server answered " + describe(peer) + " with status " + FdProtocol.describeStatus(answered.status()));
    }

    /**
     * Sends what is left of {@code reply} after its first {@code sent} bytes. The connection is non-blocking: a send may take
     * part of the reply, or nothing until the socket has room, which is waited for until {@code deadline}
     * ({@code memfd.server.timeout}). Whether the reply went whole; if not, the connection is closed by the caller, and why
     * was said.
     */
    private boolean sendRest(FileDescriptor connection, byte[] reply, int sent, long deadline, PeerCredentials peer) {
        MemorySegment rest = MemorySegment.ofArray(reply).asSlice(sent);
        while (rest.byteSize() > 0) {
            int n = libc.sendmsg(connection, rest); // which takes a heap segment, as send does not
            if (n > 0) {
                rest = rest.asSlice(n);
            } else if (!awaitRoom(connection, deadline, peer, reply.length - rest.byteSize(), reply.length)) {
                return false;
            }
        }
        return true;
    }

    /**
     * Waits until the connection has room for more of a reply of which {@code sent} of {@code length} bytes went; false,
     * having said why at most once a minute, when {@code deadline} passed first, false alone when the server is stopping.
     */
    private boolean awaitRoom(FileDescriptor connection, long deadline, PeerCredentials peer, long sent, int length) {
        int timeout = FdProtocol.pollTimeout(deadline);
        if (timeout == 0) {
            serveFailed.log(() -> "memfd fd server on " + socketPath + " could not answer " + describe(peer) + ": its connection took "
                    + sent + " of the reply's " + length + " bytes within " + MemfdConfig.SERVER_TIMEOUT.name() + " ("
                    + ConfigKey.durationText(java.time.Duration.ofNanos(timeoutNanos)) + "), its socket's send buffer without room (the "
                    + "system short of memory for sockets: see dmesg); the importer was told only that the connection closed");
            return false;
        }
        int[] revents = new int[2];
        libc.poll(new FileDescriptor[] {connection, stop}, new int[] {POLLOUT, POLLIN}, revents, timeout);
        return revents[1] == 0;
    }

    /**
     * Says who was refused, at most once a minute (with how many were since): a user the server
     * does not admit may connect as fast as it likes, and must not flood the producer's log.
     */
    void logRefusedPeer(PeerCredentials peer) {
        refusedPeer.log(() -> refusedPeerMessage(peer, UserNamespace.current()));
    }

    /** Why {@code peer} was refused, for the log; in a user namespace, what its overflow uid stands for. */
    String refusedPeerMessage(PeerCredentials peer, UserNamespace namespace) {
        if (peer.uid() == ownUid) {
            String uid = Integer.toUnsignedString(ownUid);
            return "memfd fd server on " + socketPath + " refused " + describe(peer) + ": uid " + uid + " is this provider's own, but "
                    + "this provider runs as the overflow uid of its user namespace (" + namespace.describe(Integer.toUnsignedLong(ownUid))
                    + "), which also stands for every user the namespace does not map, and " + MemfdConfig.ALLOWED_UIDS.nameAndVariable()
                    + " opens the socket to every user: the client may be any of them. Add " + uid + " to "
                    + MemfdConfig.ALLOWED_UIDS.name() + " if all of them may receive chunks, or run this provider as a uid other than "
                    + uid + " (kernel.overflowuid)";
        }
        String message = "memfd fd server on " + socketPath + " refused " + describe(peer) + ": neither this provider's user (uid "
                + Integer.toUnsignedString(ownUid) + ") nor listed in " + MemfdConfig.ALLOWED_UIDS.name();
        if (namespace.mayBeUnmapped(Integer.toUnsignedLong(peer.uid()))) {
            message += "; in this provider's user namespace, uid " + Integer.toUnsignedString(peer.uid()) + " stands for every user "
                    + "the namespace does not map, so allowing it would admit all of them: run the importer as a user this "
                    + "namespace maps";
        }
        return message;
    }

    /**
     * Reads the request, waiting at most {@code memfd.server.timeout} for it. A client dropped for
     * its silence is said at most once a minute, with how many were since, as a refused one is.
     *
     * @return the bytes received (fewer than a request if the client shut down its end early),
     *         or {@link #DROPPED} if the time ran out or the server is stopping
     */
    private int receiveRequest(FileDescriptor connection, MemorySegment buffer, PeerCredentials peer) {
        long deadline = System.nanoTime() + timeoutNanos;
        FileDescriptor[] waitFor = {connection, stop};
        int[] events = {POLLIN, POLLIN};
        int[] revents = new int[2];
        int received = 0;
        while (received < FdProtocol.REQUEST_LENGTH) {
            int count = libc.recv(connection, buffer.asSlice(received), 0);
            if (count > 0) {
                received += count;
                // Another version is answered at once: its request may be shorter than ours, and waiting for the rest would
                // hold the client for memfd.server.timeout.
                if (buffer.get(JAVA_BYTE, 0) != FdProtocol.VERSION) return received;
                continue;
            }
            if (count == 0) {
                return received;
            }
            int timeout = FdProtocol.pollTimeout(deadline);
            if (timeout == 0) {
                int got = received;
                silentClient.log(() -> "memfd fd server on " + socketPath + " dropped " + describe(peer) + ": it sent "
                        + got + " of " + FdProtocol.REQUEST_LENGTH + " request bytes within " + MemfdConfig.SERVER_TIMEOUT.name()
                        + " (" + ConfigKey.durationText(java.time.Duration.ofNanos(timeoutNanos)) + ")");
                return DROPPED;
            }
            libc.poll(waitFor, events, revents, timeout);
            if (revents[1] != 0) {
                return DROPPED;
            }
        }
        return received;
    }

    private static String describe(PeerCredentials peer) {
        return "a client with uid " + Integer.toUnsignedString(peer.uid()) + ", pid " + peer.pid()
                + (peer.pid() == 0 ? " (in another PID namespace)" : "");
    }

    /**
     * Stops the thread, removes the socket and closes it. Tokens stay withdrawn: the provider
     * closes only once. Idempotent.
     */
    @Override
    public void close() {
        synchronized (this) {
            if (closed) {
                return;
            }
            closed = true;
        }
        try {
            libc.eventfdWrite(stop, 1);
            joinUninterruptibly(thread);
        } finally {
            synchronized (exports) {
                exports.clear();
            }
            try {
                directory.remove(socketName);
            } finally {
                try {
                    listener.close();
                } finally {
                    stop.close();
                }
            }
        }
    }

    private static void joinUninterruptibly(Thread thread) {
        boolean interrupted = false;
        while (true) {
            try {
                thread.join();
                break;
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /** The server thread, for tests that check it ends with {@link #close()}. */
    Thread thread() {
        return thread;
    }
}
