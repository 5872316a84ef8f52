package dev.conduit.plugin.memfd;

import dev.conduit.linux.Errno;
import dev.conduit.linux.ErrnoException;
import dev.conduit.linux.FileDescriptor;
import dev.conduit.linux.FileStatus;
import dev.conduit.linux.Libc;
import dev.conduit.linux.MappingCount;
import dev.conduit.linux.OpenFlags;
import dev.conduit.linux.PeerCredentials;
import dev.conduit.linux.ReceivedMessage;
import dev.conduit.linux.Seals;
import dev.conduit.shm.DirectoryIdentity;
import dev.conduit.shm.ExporterLease;
import dev.conduit.shm.LeaseWatch;
import dev.conduit.shm.OwnerLease;
import dev.conduit.shm.SharedDirectory;
import dev.conduit.shm.UserNamespace;
import dev.conduit.spi.ChunkMapping;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ConfigKey;
import dev.conduit.spi.FormatVersions;
import dev.conduit.spi.InvalidHandleException;
import dev.conduit.spi.IpcImporter;
import dev.conduit.spi.PayloadReader;

import java.io.EOFException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.List;
import java.util.function.Function;
import java.util.function.Supplier;

import static dev.conduit.linux.MmapFlags.MAP_SHARED;
import static dev.conduit.linux.MmapFlags.PROT_READ;
import static dev.conduit.linux.MmapFlags.PROT_WRITE;
import static dev.conduit.linux.PollEvents.POLLIN;
import static dev.conduit.linux.PollEvents.POLLOUT;
import static dev.conduit.linux.SocketFlags.SOCK_NONBLOCK;
import static dev.conduit.linux.SocketFlags.SOCK_STREAM;

/**
 * Maps chunks exported by a memfd provider, in this process or another, in this namespace or
 * another one that sees the same shared directory at any path.
 *
 * <p>For each import: decode the {@link MemfdPayload}; check that its socket name is a socket
 * directly below this process's shared directory, reached without a symbolic link; connect;
 * check that the process listening runs as this process's user or one listed in
 * {@code memfd.trusted.uids} ({@code SO_PEERCRED}), before the token is sent; present the token
 * and receive the memfd ({@link FdProtocol}), all within
 * {@code memfd.connect.timeout}; check from this side that the memfd is sealed against shrinking
 * and growing (so the producer or any other holder cannot make this mapping fault with
 * {@code SIGBUS}) but not against writing, is open read-write, and has the handle's length; map
 * it {@code MAP_SHARED} into a shared arena of its own; close the descriptor and the connection.
 * Whatever fails, nothing stays open.
 *
 * <p>The exchange with the fd server (connect, request, the reply's wait in {@code poll}) is made
 * through {@link dev.conduit.spi.PluginContext#blockingCall}: a virtual thread's import, and its
 * worker's connect, which maps the peer's receive queue through this importer, wait on a
 * platform thread of the runtime's and leave their carrier to other virtual threads.
 *
 * <p>Stateless apart from its configuration, and thread-safe: it opens the shared directory for
 * each import rather than hold a descriptor nobody would close (an importer has no
 * {@code close}); imports are cache misses, rare next to the connect they cost anyway.
 *
 * <p>The socket is opened ({@code O_PATH}) and checked, then connected to through
 * {@code /proc/self/fd/<fd>} of that very file ({@link FdProtocol#connectAddress}), whatever the
 * length of its path. Only a process without {@code /proc} connects by path, where the path
 * fits an address; between the check and the connect, only someone who may remove the
 * producer's socket from the shared directory could then put another file in its place: in a
 * sticky directory such as {@code /dev/shm}, that is the producer's own user.
 */
final class MemfdImporter implements IpcImporter {

    /** The seals that fix the size. {@code F_SEAL_SEAL} is not required: without it seals can only be added, never removed. */
    private static final int REQUIRED_SEALS = Seals.F_SEAL_SHRINK | Seals.F_SEAL_GROW;
    /** Seals that forbid a writable shared mapping, which every import makes; a provider never sets them. */
    private static final int WRITE_SEALS = Seals.F_SEAL_WRITE | Seals.F_SEAL_FUTURE_WRITE;
    /** What a memfd no provider would pass says about the server that passed it. */
    private static final String NOT_A_PROVIDER = "A Conduit memfd provider passes the read-write descriptor of a chunk it sealed "
            + "against resizing only, so whatever serves this socket is not one, or not as released: find the process that "
            + "listens on it (ss -xlp)";
    private static final long MAX_CONNECT_PAUSE_NANOS = 50_000_000;

    private final Libc libc;
    private final Path sharedDirectory;
    private final long connectTimeoutNanos;
    /** This process's descriptors as paths, {@link FdProtocol#PROC_SELF_FD}: through it, connect reaches the file checked. */
    private final Path procSelfFd;

    /** Users besides this process's own whose fd servers it imports from ({@link MemfdConfig#TRUSTED_UIDS}). */
    private final int[] trustedUids;
    /** Makes the exchange with the fd server: the runtime's {@link dev.conduit.spi.PluginContext#blockingCall}. */
    private final Function<Supplier<FileDescriptor>, FileDescriptor> blockingCall;

    /** An importer that trusts only fd servers of this process's own user. */
    MemfdImporter(Libc libc, Path sharedDirectory, long connectTimeoutNanos) {
        this(libc, sharedDirectory, connectTimeoutNanos, new int[0]);
    }

    /** One that makes its exchanges on the calling thread, whatever it is: for tests that make one directly. */
    MemfdImporter(Libc libc, Path sharedDirectory, long connectTimeoutNanos, int[] trustedUids) {
        this(libc, sharedDirectory, connectTimeoutNanos, trustedUids, Supplier::get);
    }

    MemfdImporter(Libc libc, Path sharedDirectory, long connectTimeoutNanos, int[] trustedUids,
                  Function<Supplier<FileDescriptor>, FileDescriptor> blockingCall) {
        this(libc, sharedDirectory, connectTimeoutNanos, FdProtocol.PROC_SELF_FD, trustedUids, blockingCall);
    }

    /** With {@code procSelfFd} in place of {@code /proc/self/fd}: for tests of a process without it. */
    MemfdImporter(Libc libc, Path sharedDirectory, long connectTimeoutNanos, Path procSelfFd) {
        this(libc, sharedDirectory, connectTimeoutNanos, procSelfFd, new int[0], Supplier::get);
    }

    private MemfdImporter(Libc libc, Path sharedDirectory, long connectTimeoutNanos, Path procSelfFd, int[] trustedUids,
                          Function<Supplier<FileDescriptor>, FileDescriptor> blockingCall) {
        this.libc = libc;
        this.sharedDirectory = sharedDirectory;
        this.connectTimeoutNanos = connectTimeoutNanos;
        this.procSelfFd = procSelfFd;
        this.trustedUids = trustedUids.clone();
        this.blockingCall = blockingCall;
    }

    @Override
    public ChunkMapping map(PayloadReader reader, long chunkLength) {
        MemfdPayload payload = MemfdPayload.decode(reader);
        if (chunkLength <= 0) {
            throw new InvalidHandleException("chunk.length", "chunk length " + chunkLength + " is not positive");
        }
        String path = FdProtocol.socketPath(sharedDirectory, payload.socketName());
        Fetched fetched = fetchFromCheckedSocket(reader, payload, path, chunkLength);
        FileDescriptor memfd = fetched.memfd();
        MemfdMapping mapping = null;
        try {
            verify(memfd, path, chunkLength);
            // The socket's user is the producer's: a lease of another one, planted under the name, is none.
            ExporterLease exporter = ExporterLease.of(libc, sharedDirectory, MemfdConfig.SHARED_DIR_KEY, FdProtocol.FILE_PREFIX,
                    payload.socketName(), fetched.producerUser());
            // A hole punched into a chunk of huge pages gives its page back to the pool; touching it then faults once the
            // pool is empty, which the seals cannot prevent (the chunk must stay writable).
            boolean mayFault = libc.fileSystemType(memfd) == Libc.HUGETLBFS_MAGIC;
            mapping = mapShared(memfd, chunkLength, path, exporter, mayFault);
        } catch (RuntimeException | Error e) {
            memfd.closeAfter(e);
            throw e;
        }
        // The mapping keeps the memory without the descriptor; a close that fails (the descriptor is closed all the same)
        // fails the import, which then leaves no mapping behind.
        try {
            memfd.close();
        } catch (RuntimeException e) {
            mapping.close();
            throw e;
        }
        return mapping;
    }

    /** A memfd fetched, and the user its producer's socket belongs to. */
    private record Fetched(FileDescriptor memfd, int producerUser) {
    }

    /** Opens the socket file beneath the shared directory, checks it is a socket, and fetches the memfd through it. */
    private Fetched fetchFromCheckedSocket(PayloadReader reader, MemfdPayload payload, String path, long chunkLength) {
        FileDescriptor memfd = null;
        int producerUser;
        try (SharedDirectory directory = SharedDirectory.open(libc, sharedDirectory, MemfdConfig.SHARED_DIR_KEY);
             FileDescriptor socketFile = openSocketFile(reader, directory, payload, path)) {
            FileStatus socketStatus = checkIsSocket(reader, socketFile, path);
            producerUser = socketStatus.uid();
            long deadline = System.nanoTime() + connectTimeoutNanos;
            String address = FdProtocol.connectAddress(path, socketFile, procSelfFd);
            boolean boundByThisUser = boundByThisUser(socketFile, socketStatus, address, path);
            // The exchange waits on the fd server, in poll: a native call, which would pin a virtual thread's carrier.
            memfd = blockingCall.apply(() -> fetch(payload, address, path, socketStatus, boundByThisUser, chunkLength, deadline));
        } catch (RuntimeException | Error e) {
            if (memfd != null) {
                memfd.closeAfter(e);
            }
            throw e;
        }
        return new Fetched(memfd, producerUser);
    }

    /** Maps the whole memfd into a shared arena of its own: the mapping's lifetime is the cache entry's, on any thread. */
    private MemfdMapping mapShared(FileDescriptor memfd, long chunkLength, String path, ExporterLease exporter, boolean mayFault) {
        Arena arena = Arena.ofShared();
        try {
            return new MemfdMapping(arena, libc.mmap(memfd, 0, chunkLength, PROT_READ | PROT_WRITE, MAP_SHARED, arena), exporter,
                    mayFault);
        } catch (ErrnoException e) {
            arena.close();
            throw new ConduitException("cannot map the chunk imported from " + path + ": " + e.getMessage()
                    + (e.errno() == Errno.ENOMEM ? "; not enough address space or mappings: " + MappingCount.FEWER_IMPORTED_MAPPINGS
                    + ", or raise the address-space limit (ulimit -v, RLIMIT_AS) or vm.max_map_count" : ""), e);
        } catch (RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    // ---------------------------------------------------------------- finding the socket

    /** Fails unless {@code socketFile}, opened directly below the shared directory without a symbolic link, is a socket; its status. */
    private FileStatus checkIsSocket(PayloadReader reader, FileDescriptor socketFile, String path) {
        FileStatus status = libc.fstat(socketFile);
        int type = status.fileType();
        if (type == FileStatus.S_IFLNK) {
            throw reader.invalid("socket", path + " is a symbolic link; refused: a name from a handle must be "
                    + "the producer's socket itself, never a link to something else");
        }
        if (type != FileStatus.S_IFSOCK) {
            throw reader.invalid("socket", path + " is " + describeType(type) + ", not a socket; refused");
        }
        return status;
    }

    private FileDescriptor openSocketFile(PayloadReader reader, SharedDirectory directory, MemfdPayload payload, String path) {
        String name = payload.socketName();
        try {
            // O_PATH: a socket cannot be opened for I/O, but it can be named, and fstat'ed.
            return directory.openExisting(name, OpenFlags.O_PATH);
        } catch (ErrnoException e) {
            throw switch (e.errno()) {
                case Errno.ENOENT -> !producerAlive(directory, name) ? notFoundNorItsProducer(directory, payload, path, e)
                        : otherSocketOfProducer(directory, name, path, e);
                case Errno.ELOOP -> reader.invalid("socket", path + " is reached through a symbolic link; refused ("
                        + e.getMessage() + ")");
                case Errno.EXDEV -> reader.invalid("socket", path + " leaves the shared directory; refused (" + e.getMessage() + ")");
                case Errno.EACCES -> new ConduitException("cannot reach the producer's socket " + path + ": " + e.getMessage()
                        + "; the shared directory " + sharedDirectory + " must be searchable by this user", e);
                default -> new ConduitException("cannot check the producer's socket " + path + ": " + e.getMessage() + "; "
                        + Errno.remedy(e.errno(), "see the cause"), e);
            };
        }
    }

    private static String describeType(int type) {
        return switch (type) {
            case FileStatus.S_IFREG -> "a regular file";
            case FileStatus.S_IFDIR -> "a directory";
            case FileStatus.S_IFIFO -> "a FIFO";
            case FileStatus.S_IFCHR -> "a character device";
            case FileStatus.S_IFBLK -> "a block device";
            default -> "a file of type 0" + Integer.toOctalString(type);
        };
    }

    // ---------------------------------------------------------------- the exchange

    /** Connects, presents the token, and returns the memfd the server passed; throws for any other answer. */
    private FileDescriptor fetch(MemfdPayload payload, String address, String path, FileStatus socketStatus, boolean boundByThisUser,
                                 long chunkLength, long deadline) {
        FileDescriptor memfd = null;
        // The socket's close comes last and may fail (EBADF; EIO): the descriptor received before it is closed then too, where it
        // was returned to no one, open and holding the chunk until the JVM's end.
        try (FileDescriptor socket = openSocket(path)) {
            connect(socket, address, path, socketStatus, deadline);
            checkServerIsTrusted(socket, path, boundByThisUser);
            send(socket, FdProtocol.request(payload.token()), path, deadline);
            memfd = receiveReply(socket, path, chunkLength, deadline);
        } catch (RuntimeException | Error e) {
            if (memfd == null) throw e;
            memfd.closeAfter(e);
            if (e instanceof ErrnoException closing) {
                throw new ConduitException("cannot import from the producer's socket " + path + ": the chunk's descriptor arrived, but "
                        + "closing the connection afterwards failed: " + closing.getMessage() + "; the descriptor is closed, nothing "
                        + "mapped; import it again. " + Errno.remedy(closing.errno(), "EBADF: code of this process closed a descriptor that was not "
                        + "its own, a fault of that code; see the cause"), closing);
            }
            throw e;
        }
        return memfd;
    }

    private FileDescriptor openSocket(String path) {
        try {
            return libc.socket(SOCK_STREAM | SOCK_NONBLOCK);
        } catch (ErrnoException e) {
            throw new ConduitException("cannot open a socket to reach the producer's socket " + path + ": " + e.getMessage() + "; "
                    + Errno.remedy(e.errno(), "see the cause"), e);
        }
    }

    private void connect(FileDescriptor socket, String address, String path, FileStatus socketStatus, long deadline) {
        long pauseNanos = 1_000_000;
        while (true) {
            try {
                libc.connect(socket, address);
                return;
            } catch (ErrnoException e) {
                switch (e.errno()) {
                    case Errno.ECONNREFUSED -> throw producerGone(path, "refuses connections: nobody listens on it any more", e);
                    case Errno.ENOENT -> throw address.equals(path) ? producerGone(path, "does not exist", e)
                            : new ConduitException("cannot connect to the producer's socket " + path + " through " + address
                            + ", the file opened and checked for it (" + e.getMessage() + "): " + procSelfFd
                            + " does not show this process's descriptors: " + FdProtocol.PROC_REMEDY, e);
                    case Errno.EACCES, Errno.EPERM -> throw permissionDenied(path, socketStatus, e);
                    case Errno.EPROTOTYPE -> throw new ConduitException("cannot connect to the producer's socket " + path + ": "
                            + e.getMessage() + ": it is a datagram or seqpacket socket, not the stream socket of a memfd fd server; "
                            + "the handle is corrupt or forged, or something other than a Conduit producer has the name", e);
                    case Errno.EAGAIN -> {
                        // The server's backlog is full: it is busy with other importers. Retry until the deadline.
                        if (System.nanoTime() + pauseNanos - deadline > 0) {
                            throw timeout(path, "accept the connection (its backlog stayed full)", e);
                        }
                        pause(pauseNanos, path);
                        pauseNanos = Math.min(pauseNanos * 2, MAX_CONNECT_PAUSE_NANOS);
                    }
                    default -> throw new ConduitException("cannot connect to the producer's socket " + path + ": " + e.getMessage()
                            + "; " + socketCallRemedy(e.errno(), "connect"), e);
                }
            }
        }
    }

    /**
     * Refuses, before the token leaves this process, an fd server that runs as neither this
     * process's user nor a trusted one. A socket's name outlives its producer in one way: once the
     * producer is gone and its files removed, any user who can write the shared directory may bind
     * the name, collect the token of a handle still held here and pass a memfd of its own as the
     * chunk. The socket file's owner would say who bound it; {@code SO_PEERCRED} says who listens,
     * which is what the chunk would come from.
     */
    private void checkServerIsTrusted(FileDescriptor socket, String path, boolean boundByThisUser) {
        PeerCredentials server;
        try {
            server = libc.peerCredentials(socket);
        } catch (ErrnoException e) {
            throw new ConduitException("cannot tell which user serves the producer's socket " + path + " (SO_PEERCRED): "
                    + e.getMessage() + "; " + Errno.remedy(e.errno(), "see the cause"), e);
        }
        UserNamespace namespace = UserNamespace.current();
        if (!trusts(server.uid(), namespace, boundByThisUser)) throw untrustedServer(server, path, namespace);
    }

    /**
     * Whether an fd server showing {@code serverUid} ({@code SO_PEERCRED}) runs as this process's
     * user or a trusted one. Showing this process's own uid is not enough where that uid is the
     * overflow uid of this process's user namespace (a container run as nobody): every user the
     * namespace does not map shows as it too. There the socket must be proven bound by this user
     * ({@code boundByThisUser}, {@link #boundByThisUser}).
     */
    boolean trusts(int serverUid, UserNamespace namespace, boolean boundByThisUser) {
        if (UserNamespace.lists(trustedUids, serverUid)) return true;
        return serverUid == libc.geteuid() && (boundByThisUser || !namespace.mayBeUnmapped(Integer.toUnsignedLong(serverUid)));
    }

    /**
     * Where this process runs as the overflow uid of its user namespace, whether the socket file
     * is proven this user's ({@link UserNamespace#ownsNamedFile}): {@code bind} creates the file as
     * the binding process's user, and only the process that bound a socket listens on it, so a
     * socket file of this user is served by this user. Proven only when the connect goes through
     * the checked file itself ({@code /proc/self/fd}): by path, another file could take the name
     * between the proof and the connect. False elsewhere, and where the proof fails (another
     * user's file; a read-only mount, {@code EROFS}, where nothing proves it): the uid check decides.
     */
    private boolean boundByThisUser(FileDescriptor socketFile, FileStatus socketStatus, String address, String path) {
        int self = libc.geteuid();
        if (socketStatus.uid() != self || address.equals(path)) return false;
        if (!UserNamespace.current().mayBeUnmapped(Integer.toUnsignedLong(self))) return false;
        try {
            return UserNamespace.ownsNamedFile(libc, socketFile);
        } catch (ErrnoException e) {
            return false;
        }
    }

    /** Why an fd server of another user was refused, and what to do: trust its user, or drop a handle that outlived its producer. */
    ConduitException untrustedServer(PeerCredentials server, String path, UserNamespace namespace) {
        long uid = Integer.toUnsignedLong(server.uid());
        if (server.uid() == libc.geteuid()) {
            return new ConduitException("refusing to import from the fd server on " + path + ": it runs as uid " + uid + " (SO_PEERCRED), "
                    + "this process's own, but this process runs as the overflow uid of its user namespace (" + namespace.describe(uid)
                    + "), which also stands for every user the namespace does not map, so the server may be any of them, and its socket "
                    + "file could not be proven this user's (it is another user's, the shared directory is a read-only mount, or /proc "
                    + "is not mounted, through which the importer connects to the file it checked); the handle's token was not sent. "
                    + "Run this process as a uid other than " + uid + " (kernel.overflowuid), or add " + uid + " to "
                    + MemfdConfig.TRUSTED_UIDS.nameAndVariable() + " if all of those users may serve this process");
        }
        String refused = "refusing to import from the fd server on " + path + ": it runs as uid " + uid + " (SO_PEERCRED), not as "
                + "this process's " + namespace.describe(Integer.toUnsignedLong(libc.geteuid())) + " nor as a user listed in "
                + MemfdConfig.TRUSTED_UIDS.nameAndVariable() + " (" + UserNamespace.describeUids(trustedUids) + "); the handle's token was not sent. ";
        if (namespace.mayBeUnmapped(uid)) {
            return new ConduitException(refused + "In this process's user namespace, uid " + uid + " stands for every user the "
                    + "namespace does not map (and for its own " + uid + ", if it maps one), so trusting it trusts every one of them "
                    + "that can write the shared directory: run the producer as a user this namespace maps (for a rootless container, "
                    + "the user who runs it), or add " + uid + " to " + MemfdConfig.TRUSTED_UIDS.name() + " if all of them may serve "
                    + "this process");
        }
        return new ConduitException(refused + "If uid " + uid + " runs the producer, add it to " + MemfdConfig.TRUSTED_UIDS.name()
                + " on this side; if the producer runs as this process's user, it is gone and another user bound its socket's name: "
                + "the handle is stale");
    }

    /**
     * Connecting takes write permission on the socket file. Where its owner and mode bits grant
     * that to this process, something else refused (a security module, most likely).
     */
    private ConduitException permissionDenied(String path, FileStatus socketStatus, ErrnoException e) {
        int mode = socketStatus.mode();
        long owner = Integer.toUnsignedLong(socketStatus.uid());
        boolean ours = socketStatus.uid() == libc.geteuid();
        boolean permitted = ours ? (mode & 0200) != 0 : (mode & 0002) != 0;
        if (permitted && !UserNamespace.current().mayBeUnmapped(owner)) {
            return new ConduitException("permission denied connecting to the producer's socket " + path + " (" + e.getMessage()
                    + "; the socket is uid " + owner + "'s, mode 0" + Integer.toOctalString(mode & 07777) + "): "
                    + SharedDirectory.REFUSED_DESPITE_MODE, e);
        }
        return new ConduitException("permission denied connecting to the producer's socket " + path + " (" + e.getMessage()
                + "): the producer admits only its own user; to admit this process's user, add " + uidToAllow() + " to "
                + MemfdConfig.ALLOWED_UIDS.nameAndVariable() + " on the producer's side", e);
    }

    private static void pause(long nanos, String path) {
        try {
            Thread.sleep(nanos / 1_000_000, (int) (nanos % 1_000_000));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ConduitException("interrupted while waiting to connect to the producer's socket " + path, e);
        }
    }

    /** Sends the request, or as much of it as the server takes before it closes its end. */
    private void send(FileDescriptor socket, byte[] request, String path, long deadline) {
        MemorySegment remaining = MemorySegment.ofArray(request);
        while (remaining.byteSize() > 0) {
            int sent;
            try {
                sent = libc.sendmsg(socket, remaining);
            } catch (ErrnoException e) {
                if (e.errno() == Errno.EPIPE || e.errno() == Errno.ECONNRESET) {
                    // The server answered without waiting for the request (a refused user) and closed,
                    // or it is closing: the reply, or its absence, tells which.
                    return;
                }
                throw new ConduitException("cannot send the request to the producer's socket " + path + ": " + e.getMessage()
                        + "; " + socketCallRemedy(e.errno(), "sendmsg"), e);
            }
            if (sent > 0) {
                remaining = remaining.asSlice(sent);
                continue;
            }
            int timeout = FdProtocol.pollTimeout(deadline);
            if (timeout == 0) {
                throw timeout(path, "take the request", null);
            }
            poll(socket, POLLOUT, timeout, path, "room to send the request to");
        }
    }

    /** {@code poll} for the fd server, failing as its socket's other calls do: naming the socket and the remedy. */
    private void poll(FileDescriptor socket, int events, int timeout, String path, String what) {
        try {
            libc.poll(socket, events, timeout);
        } catch (ErrnoException e) {
            throw new ConduitException("cannot wait for " + what + " the producer's socket " + path + ": " + e.getMessage() + "; "
                    + socketCallRemedy(e.errno(), "poll"), e);
        }
    }

    /**
     * Reads the reply and the descriptor that comes with its first byte.
     *
     * @return the memfd, owned by the caller, after an ok reply whose length is {@code chunkLength}
     */
    private FileDescriptor receiveReply(FileDescriptor socket, String path, long chunkLength, long deadline) {
        byte[] reply = new byte[FdProtocol.OK_REPLY_LENGTH];
        int received = 0;
        FileDescriptor memfd = null;
        try {
            while (received < expectedReplyLength(reply, received)) {
                ReceivedMessage message;
                try {
                    message = libc.recvmsg(socket, MemorySegment.ofArray(reply).asSlice(received), 1);
                } catch (ErrnoException e) {
                    if (e.errno() == Errno.ECONNRESET) {
                        // The server closed with our request unread: it is going away, or gave up waiting for the request.
                        throw producerGoneOrRequestDropped(path, "reset the connection before answering", e);
                    }
                    throw new ConduitException("cannot receive the reply from the producer's socket " + path + ": " + e.getMessage()
                            + "; " + socketCallRemedy(e.errno(), "recvmsg"), e);
                }
                if (message.controlTruncated() && message.closedFds() == 0) {
                    throw droppedDescriptor(path);
                }
                if (message.controlTruncated()) {
                    throw protocolError(path, "passed more descriptors than one (" + message.closedFds() + " received and closed)");
                }
                for (FileDescriptor fd : message.fds()) {
                    if (memfd != null) {
                        fd.close();
                        throw protocolError(path, "passed a second descriptor");
                    }
                    memfd = fd;
                }
                if (message.wouldBlock()) {
                    int timeout = FdProtocol.pollTimeout(deadline);
                    if (timeout == 0) {
                        throw timeout(path, "answer", null);
                    }
                    poll(socket, POLLIN, timeout, path, "the reply from");
                } else if (message.bytes() == 0) {
                    // The end of stream is the cause: a transport retrying an exporter that dies recognizes it, as an errno.
                    throw received == 0
                            ? producerGoneOrRequestDropped(path, "closed the connection without answering",
                            new EOFException("end of stream from " + path + " before the reply"))
                            : protocolError(path, "ended its reply after " + received + " of " + expectedReplyLength(reply, received) + " bytes");
                } else {
                    received += message.bytes();
                }
            }
            int status = reply[0] & 0xFF;
            if (status != FdProtocol.STATUS_OK) {
                throw refusal(status, reply, path);
            }
            if (memfd == null) {
                throw protocolError(path, "answered ok without passing a descriptor");
            }
            long length = FdProtocol.chunkLength(reply);
            if (length != chunkLength) {
                throw new InvalidHandleException("chunk.length", "the handle says " + chunkLength + " bytes, but the exported chunk has "
                        + Long.toUnsignedString(length) + " (from " + path + "): the handle is corrupt or was made for another chunk");
            }
            FileDescriptor result = memfd;
            memfd = null;
            return result;
        } finally {
            if (memfd != null) {
                memfd.close();
            }
        }
    }

    /** The length its status gives a reply, once its first byte came; until then, that of an ok reply. */
    private static int expectedReplyLength(byte[] reply, int received) {
        return received > 0 ? FdProtocol.replyLength(reply[0] & 0xFF) : FdProtocol.OK_REPLY_LENGTH;
    }

    /** The server reads only {@code serverVersion} of the protocol, not this process's. */
    private static ConduitException otherVersion(int serverVersion, String path) {
        if (serverVersion == FdProtocol.VERSION) {
            return protocolError(path, "refused the request as of another protocol version, but named this process's own, "
                    + FdProtocol.VERSION);
        }
        return new ConduitException("the producer's fd server on " + path + " refused the request: "
                + FormatVersions.refusal("memfd fd protocol", serverVersion, FdProtocol.VERSION, "the producer"));
    }

    private ConduitException refusal(int status, byte[] reply, String path) {
        return switch (status) {
            case FdProtocol.STATUS_UNKNOWN_TOKEN -> new ConduitException("export gone: the producer freed the chunk or closed its pool "
                    + "(its fd server on " + path + " no longer knows the handle's token)");
            case FdProtocol.STATUS_PEER_NOT_ALLOWED -> new ConduitException("the producer's fd server on " + path + " refused this "
                    + "process's user (" + describeOurUid() + "): to admit it, add " + uidToAllow() + " to "
                    + MemfdConfig.ALLOWED_UIDS.nameAndVariable() + " on the producer's side");
            case FdProtocol.STATUS_BAD_REQUEST -> protocolError(path, "rejected the request as malformed (protocol version "
                    + FdProtocol.VERSION + ")");
            case FdProtocol.STATUS_OTHER_VERSION -> otherVersion(reply[1] & 0xFF, path);
            default -> protocolError(path, "answered with undefined status " + status);
        };
    }

    // ---------------------------------------------------------------- checking what arrived

    /**
     * Refuses a descriptor that is not a memfd sealed against resizing, or not {@code chunkLength}
     * long, or that cannot be mapped read-write and shared: sealed against writing, or a descriptor
     * open for reading or writing only, or an O_PATH one. A provider passes none of these; each is
     * named here rather than left to fail with a bare errno (EPERM or EACCES from {@code mmap},
     * which would point at file permissions; EBADF from {@code fcntl}).
     */
    private void verify(FileDescriptor memfd, String path, long chunkLength) {
        int seals;
        try {
            seals = libc.seals(memfd);
        } catch (ErrnoException e) {
            if (e.errno() == Errno.EINVAL) {
                throw new ConduitException("refusing the chunk passed by " + path + ": the descriptor is not a memfd ("
                        + e.getMessage() + ")", e);
            }
            // fcntl answers EBADF for an O_PATH descriptor, which F_GETFL alone accepts: the passed descriptor is open, so
            // that is what it is, not one of ours mixed up.
            if (e.errno() == Errno.EBADF && (libc.fileStatusFlags(memfd) & OpenFlags.O_PATH) != 0) {
                throw new ConduitException("refusing the chunk passed by " + path + ": the descriptor is an O_PATH one, which can be "
                        + "neither checked for seals nor mapped (" + e.getMessage() + "). " + NOT_A_PROVIDER, e);
            }
            throw new ConduitException("cannot check the seals of the chunk passed by " + path + ": " + e.getMessage() + "; "
                    + Errno.remedy(e.errno(), "see the cause"), e);
        }
        if ((seals & REQUIRED_SEALS) != REQUIRED_SEALS) {
            throw new ConduitException("refusing the chunk passed by " + path + ": its memfd carries the seals "
                    + (seals == 0 ? "none" : Seals.describe(seals)) + ", not " + Seals.describe(REQUIRED_SEALS)
                    + ", so any process holding it could resize it and make this mapping fault with SIGBUS");
        }
        if ((seals & WRITE_SEALS) != 0) {
            throw new ConduitException("refusing the chunk passed by " + path + ": its memfd carries the seals " + Seals.describe(seals)
                    + ", and " + Seals.describe(seals & WRITE_SEALS) + " forbids the writable shared mapping an import makes. "
                    + NOT_A_PROVIDER);
        }
        FileStatus status = libc.fstat(memfd);
        if (!status.isRegularFile() || status.size() != chunkLength) {
            throw new ConduitException("refusing the chunk passed by " + path + ": its memfd is " + status.size()
                    + " bytes, but the handle's chunk length is " + chunkLength);
        }
        int access = libc.fileStatusFlags(memfd) & OpenFlags.O_ACCMODE;
        if (access != OpenFlags.O_RDWR) {
            throw new ConduitException("refusing the chunk passed by " + path + ": its descriptor is open " + OpenFlags.describe(access)
                    + ", not O_RDWR, so it cannot be mapped read-write, as every import is. " + NOT_A_PROVIDER);
        }
    }

    // ---------------------------------------------------------------- errors

    /**
     * The kernel had room for the passed descriptor but installed none (MSG_CTRUNC, nothing
     * received): this process is out of descriptors, or a security module refused the file. A
     * descriptor opened now tells which, so that a shortage, which passes, is not taken for a
     * refusal, and the other way round.
     */
    private ConduitException droppedDescriptor(String path) {
        String what = "the kernel dropped the descriptor the producer passed on " + path + " (MSG_CTRUNC)";
        try {
            libc.open("/dev/null", OpenFlags.O_RDONLY | OpenFlags.O_CLOEXEC, 0).close();
        } catch (ErrnoException e) {
            return new ConduitException("cannot receive the chunk: " + what + ", and opening a descriptor here fails too: "
                    + e.getMessage() + "; " + Errno.remedy(e.errno(), "see the cause"), e);
        }
        return new ConduitException("cannot receive the chunk: " + what + " although this process can open descriptors: a "
                + "security module (SELinux, AppArmor) refused to pass the memfd to it");
    }

    /**
     * Whether the producer whose socket is {@code socketName} ({@code <prefix>-<owner>-<random>.sock},
     * OwnerLease#newSocketName) still holds its lease: then its socket was removed, not closed.
     */
    private boolean producerAlive(SharedDirectory directory, String socketName) {
        String owner = OwnerLease.ownerOfFile(FdProtocol.FILE_PREFIX, socketName);
        if (owner == null) return false;
        try (LeaseWatch lease = LeaseWatch.open(libc, directory, OwnerLease.leaseName(FdProtocol.FILE_PREFIX, owner))) {
            return lease.ownerAlive();
        } catch (ConduitException e) { // an ErrnoException too
            return false; // no lease, or none that can be read: gone as far as this process can tell
        }
    }

    /**
     * Why the live producer has no socket {@code socketName}: it serves on another one (the handle is not of it), or its socket
     * was removed. A shared directory this user may search but not read (mode 1733) cannot tell: removed, as it most often is.
     */
    private static ConduitException otherSocketOfProducer(SharedDirectory directory, String socketName, String path, ErrnoException e) {
        String owner = socketName.substring(0, socketName.lastIndexOf('-') + 1); // <prefix>-<owner>-
        List<String> names;
        try {
            names = directory.list(owner);
        } catch (ConduitException unlisted) {
            ConduitException removed = socketRemoved(path, "; whether the producer serves on another socket could not be looked up ("
                    + unlisted.getMessage() + ")", e);
            removed.addSuppressed(unlisted);
            return removed;
        }
        return names.stream().filter(n -> n.endsWith(FdProtocol.SOCKET_SUFFIX) && !n.equals(socketName)).findFirst()
                .map(other -> new ConduitException("no socket " + path + ", while its producer lives and serves on "
                        + directory.path().resolve(other) + ": the handle is corrupt or forged, or names an earlier fd server of that "
                        + "producer", e))
                .orElseGet(() -> socketRemoved(path, "", e));
    }

    /** {@code unsure}: what could not be told, a clause that starts with its separator, or empty. */
    private static ConduitException socketRemoved(String path, String unsure, Throwable cause) {
        return new ConduitException("the producer's socket " + path + " was removed from the shared directory while the producer "
                + "lives (its lease is held): something deletes files there (" + SharedDirectory.CLEANERS + "). The producer binds its "
                + "socket again within a second, and imports work again; keep such cleaners off the shared directory (RemoveIPC=no in "
                + "logind.conf, or a shared.dir outside /dev/shm)" + unsure, cause);
    }

    private static ConduitException producerGone(String path, String what, Throwable cause) {
        return new ConduitException("producer gone (its socket " + path + " " + what + "): the producer closed its pool or "
                + "exited, so its chunks can no longer be imported", cause);
    }

    /**
     * The server closed the connection without an answer, reading the request (end of stream) or
     * not (a reset): its producer is going away, or its fd server gave up waiting for the request
     * after its {@code memfd.server.timeout}, which, set shorter than a client takes to send one,
     * refuses every import while the producer lives; or its server could not send the answer (a
     * WARNING of its own names the cause). (A reset used to be called the producer's exit alone.)
     */
    private static ConduitException producerGoneOrRequestDropped(String path, String what, Throwable cause) {
        return new ConduitException("producer gone (its socket " + path + " " + what + "): the producer closed its pool or exited, so "
                + "its chunks can no longer be imported; or, if it lives, its fd server dropped this request after waiting "
                + MemfdConfig.SERVER_TIMEOUT.nameAndVariable() + " for it, on the producer's side: a timeout shorter than "
                + "an importer takes to send its request refuses every import, so raise it there; or its fd server could not send the "
                + "answer, and a WARNING in the producer's log names why", cause);
    }

    /**
     * Neither the socket nor a held lease of its producer is in this process's shared directory: the
     * producer is gone from the directory the handle names, or this process looks in another one,
     * which the handle's directory tells where it can ({@link DirectoryIdentity}).
     */
    private RuntimeException notFoundNorItsProducer(SharedDirectory directory, MemfdPayload payload, String path, ErrnoException e) {
        DirectoryIdentity here = DirectoryIdentity.of(libc, directory.fd());
        DirectoryIdentity.Match where = payload.directory() == null ? DirectoryIdentity.Match.UNKNOWN : here.compare(payload.directory());
        return switch (where) {
            case SAME -> new ConduitException(producerGone(path, "does not exist, nor does a held lease of its producer, in the very "
                    + "directory the handle names (" + here.describe() + ")", e).getMessage() + "; or a cleaner removed its files, "
                    + "lease included, while it lives" + CLEANER_REMEDY, e);
            case OTHER -> new ConduitException("cannot import: the handle names a socket of another shared directory than this "
                    + "process's " + directory.path() + " (" + MemfdConfig.SHARED_DIR_KEY + "), where " + payload.socketName() + " is not "
                    + "found (ENOENT): the producer's directory is " + payload.directory().describe() + ", this one " + here.describe()
                    + ". " + DirectoryIdentity.oneDirectoryRemedy(MemfdConfig.SHARED_DIR_KEY), e);
            case UNKNOWN -> producerGoneOrItsFilesRemoved(path, e);
        };
    }

    /** What a cleaner that removes a live producer's files does, and what to do: the end of a sentence. */
    private static final String CLEANER_REMEDY = " (systemd-logind with RemoveIPC=yes removes a user's /dev/shm files when its last "
            + "session ends: keep it off the shared directory), and then it binds its socket again within a second";

    /**
     * Gone as far as the files say: a cleaner that removes the lease too looks the same from here, for a second, and so
     * does a producer that lives in another directory than this process's shared.dir (an importer started without the
     * producer's CONDUIT_SHARED_DIR, a container that mounts it elsewhere), which the message used not to mention while
     * posix's "export gone" did.
     */
    private static ConduitException producerGoneOrItsFilesRemoved(String path, Throwable cause) {
        return new ConduitException(producerGone(path, "does not exist, nor does a held lease of its producer", cause).getMessage()
                + "; or a cleaner removed its files, lease included, while it lives" + CLEANER_REMEDY + ". If the producer is alive, "
                + "check that " + MemfdConfig.SHARED_DIR_KEY + " shows "
                + "this process the same directory as the producer's (handles name files relative to it)", cause);
    }

    private ConduitException timeout(String path, String what, Throwable cause) {
        return new ConduitException("the producer's fd server on " + path + " did not " + what + " within "
                + MemfdConfig.CONNECT_TIMEOUT.nameAndVariable() + " (" + ConfigKey.durationText(java.time.Duration.ofNanos(connectTimeoutNanos))
                + "): it is hung or "
                + "busy; raise " + MemfdConfig.CONNECT_TIMEOUT.name() + " if producers serve many importers at once", cause);
    }

    /**
     * What to do when a call on the socket to the fd server failed for a cause that neither the
     * producer nor the handle explains: the kernel's want of memory for socket buffers, or a
     * shortage of descriptors, passes; the socket is closed either way and nothing of the import
     * is kept, so it may simply be made again.
     */
    private static String socketCallRemedy(int errno, String call) {
        return switch (errno) {
            case Errno.ENOMEM, Errno.ENOBUFS -> "the kernel had no memory for the socket's buffers: free memory (or raise this "
                    + "process's cgroup memory.max), then import the handle again";
            default -> Errno.remedy(errno, "nothing of this import is kept: import the handle again; if " + call
                    + " fails the same way again, the kernel refuses it for the reason man 2 " + call + " gives for " + Errno.name(errno));
        };
    }

    private static ConduitException protocolError(String path, String what) {
        return new ConduitException("protocol error: the memfd fd server on " + path + " " + what);
    }

    /**
     * This process's uid as a producer sees it ({@code SO_PEERCRED} reports a peer's uid in the
     * server's user namespace): in a rootless container, root inside is the user who runs it.
     */
    private String uidToAllow() {
        UserNamespace namespace = UserNamespace.current();
        long self = Integer.toUnsignedLong(libc.geteuid());
        if (!namespace.isNested()) {
            return "uid " + self;
        }
        long parent = namespace.inParent(self);
        return parent >= 0
                ? "uid " + parent + " (this process's uid in the parent user namespace, as a producer there sees it; " + self + " here)"
                : "the uid a producer sees for this process (" + namespace.describe(self) + ")";
    }

    /** {@code uid 1000}, or {@code uid 0 here, 1000 in the parent user namespace}. */
    private String describeOurUid() {
        return UserNamespace.current().describe(Integer.toUnsignedLong(libc.geteuid()));
    }
}
