package dev.conduit.plugin.memfd;

import dev.conduit.linux.FileDescriptor;
import dev.conduit.linux.Libc;
import dev.conduit.linux.SocketFlags;
import dev.conduit.shm.SharedDirectory;
import dev.conduit.spi.ConduitException;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The protocol between an importer and a provider's fd server, which hands out the memfd of an
 * exported chunk to whoever presents its capability token.
 *
 * <p>The server listens on an AF_UNIX stream socket in the shared directory, named
 * {@code conduit-memfd-<owner>-<random>.sock} (the owner as in the provider's
 * {@link dev.conduit.shm.OwnerLease lease}). Each connection carries exactly one exchange:
 *
 * <pre>
 * request, importer to server: {@value #REQUEST_LENGTH} bytes
 * offset  size  field     value
 * ------  ----  --------  ------------------------------------------------------------------
 *      0  1     version   {@value #VERSION}
 *      1  16    token     the chunk's capability token, from the handle's payload
 *
 * reply, server to importer: 1 byte; {@value #OK_REPLY_LENGTH} with status 0, 2 with status 4
 * offset  size  field     value
 * ------  ----  --------  ------------------------------------------------------------------
 *      0  1     status    0 ok: the memfd comes with this byte (SCM_RIGHTS, same sendmsg)
 *                         1 unknown or revoked token: the chunk was freed or never exported
 *                         2 peer not allowed: SO_PEERCRED uid is neither the server's own
 *                           nor in the server's memfd.allowed.uids
 *                         3 bad request: the client ended its request (shut down or closed
 *                           its end) before the {@value #REQUEST_LENGTH} bytes of this version;
 *                           also an empty one. Bytes past them are not read
 *                         4 other version: the request's version is not the server's
 *      1  8     length    u64 little-endian, the chunk's length; only with status 0
 *      1  1     version   the version the server reads; only with status 4
 * </pre>
 *
 * The server then closes the connection. It checks, in this order: the peer's uid, as soon as
 * it accepts the connection (a refused user is answered at once, learns nothing about tokens, and
 * cannot hold the server), the request's version (its first byte, judged as soon as it arrives:
 * another version may make its request longer or shorter), the request's length, the token, which
 * it compares in constant time with every live export. Status 4 and its version byte are how
 * every later version answers a request it does not read, so that an importer of any version
 * since this one (2026-12-02) says which process runs the older Conduit; an importer from before
 * reads status 4 as undefined. An importer whose request met a closed connection ({@code EPIPE})
 * still reads the reply, which the server may have sent before it read anything. It answers one connection at a time and waits at most
 * {@code memfd.server.timeout} for a request; the importer waits at most
 * {@code memfd.connect.timeout} for the whole exchange. Integers are little-endian, as in every
 * Conduit record.
 */
final class FdProtocol {

    static final int VERSION = 1;
    static final int TOKEN_LENGTH = 16;
    static final int REQUEST_LENGTH = 1 + TOKEN_LENGTH;
    static final int OK_REPLY_LENGTH = 1 + Long.BYTES;

    static final int STATUS_OK = 0;
    static final int STATUS_UNKNOWN_TOKEN = 1;
    static final int STATUS_PEER_NOT_ALLOWED = 2;
    static final int STATUS_BAD_REQUEST = 3;
    static final int STATUS_OTHER_VERSION = 4;

    /** Prefix of the provider's lease and of every file it puts in the shared directory. */
    static final String FILE_PREFIX = "conduit-memfd";
    /** Suffix of the fd server's socket name. */
    static final String SOCKET_SUFFIX = ".sock";
    /** A socket bound under a temporary name before it is renamed to its own: as long as {@link #SOCKET_SUFFIX}, so it fits where that does. */
    static final String BIND_SUFFIX = ".bind";
    /**
     * Length of the fd server's socket name as {@link dev.conduit.shm.OwnerLease#newSocketName}
     * makes it: prefix, {@code -}, 32 hex digits of owner, {@code -}, 16 of random, suffix.
     */
    static final int SOCKET_NAME_LENGTH = FILE_PREFIX.length() + 1 + 32 + 1 + 16 + SOCKET_SUFFIX.length();

    /** This process's open descriptors as paths: the way to a socket whose path is too long for an address. */
    static final Path PROC_SELF_FD = Path.of("/proc/self/fd");

    /** What to do when a socket path is too long for an address and {@code /proc} does not show this process. */
    static final String PROC_REMEDY = "mount /proc for this process's PID namespace, or set " + MemfdConfig.SHARED_DIR_KEY
            + " to a path of at most " + maxDirectoryLength() + " bytes, e.g. a symbolic link or bind mount at /run/conduit";

    private FdProtocol() {}

    /** The request for the chunk behind {@code token}. */
    static byte[] request(byte[] token) {
        if (token.length != TOKEN_LENGTH) {
            throw new IllegalArgumentException("a token has " + TOKEN_LENGTH + " bytes, not " + token.length);
        }
        byte[] request = new byte[REQUEST_LENGTH];
        request[0] = VERSION;
        System.arraycopy(token, 0, request, 1, TOKEN_LENGTH);
        return request;
    }

    /** The reply that comes with the memfd of a chunk of {@code chunkLength} bytes. */
    static byte[] okReply(long chunkLength) {
        byte[] reply = new byte[OK_REPLY_LENGTH];
        reply[0] = STATUS_OK;
        for (int i = 0; i < Long.BYTES; i++) {
            reply[1 + i] = (byte) (chunkLength >>> (8 * i));
        }
        return reply;
    }

    /** The reply of a refusal: its status, and for {@link #STATUS_OTHER_VERSION} the version this server reads. */
    static byte[] refusal(int status) {
        if (status == STATUS_OK || status < 0 || status > 0xFF) {
            throw new IllegalArgumentException("not a refusal status: " + status);
        }
        return status == STATUS_OTHER_VERSION ? new byte[] {(byte) status, VERSION} : new byte[] {(byte) status};
    }

    /** How long a reply whose first byte is {@code status} is. */
    static int replyLength(int status) {
        return switch (status) {
            case STATUS_OK -> OK_REPLY_LENGTH;
            case STATUS_OTHER_VERSION -> 2;
            default -> 1;
        };
    }

    /** The chunk length of a complete ok reply. */
    static long chunkLength(byte[] okReply) {
        long length = 0;
        for (int i = Long.BYTES - 1; i >= 0; i--) {
            length = length << 8 | (okReply[1 + i] & 0xFF);
        }
        return length;
    }

    /** A status as logs show it. */
    static String describeStatus(int status) {
        return switch (status) {
            case STATUS_OK -> "0 (ok)";
            case STATUS_UNKNOWN_TOKEN -> "1 (unknown or revoked token)";
            case STATUS_PEER_NOT_ALLOWED -> "2 (peer not allowed)";
            case STATUS_BAD_REQUEST -> "3 (bad request)";
            case STATUS_OTHER_VERSION -> "4 (other version)";
            default -> status + " (undefined)";
        };
    }

    /** The path of socket {@code name} in {@code directory}: its name in messages, and its address when it fits one. */
    static String socketPath(Path directory, String name) {
        return directory.resolve(name).toString();
    }

    /**
     * What {@code bind} takes to make socket {@code name} in {@code directory}: the same place
     * reached through the directory's own descriptor, {@code <procSelfFd>/<dirfd>/<name>}, where
     * {@code procSelfFd} is there; else its path, when it fits an AF_UNIX address
     * ({@link SocketFlags#SUN_PATH_MAX} bytes). The kernel resolves that link to the open
     * directory, as systemd relies on for long socket paths; it is this process's descriptor,
     * never a peer's. Through the descriptor, the bind lands in the directory whose descriptor
     * then checks, chmods and removes the socket: by path it landed in whatever directory had been
     * made at the path since, where that descriptor found nothing to check or remove, and each
     * failed rebind left a socket file there (until 2026-12-07,
     * {@code FdServerTest#aSharedDirectoryMadeAgainAtItsPathIsLeftNoTemporaryNamesByTheRebind}).
     * Through the descriptor of a removed directory the bind fails with {@code ENOENT}.
     */
    static String bindAddress(SharedDirectory directory, String name, Path procSelfFd) {
        String path = socketPath(directory.path(), name);
        if (Files.isDirectory(procSelfFd)) return procSelfFd + "/" + directory.fd().fd() + "/" + name;
        return fitsAnAddress(path) ? path : PROC_SELF_FD + "/" + directory.fd().fd() + "/" + name;
    }

    /**
     * What {@code connect} takes for the socket at {@code path}, opened {@code O_PATH} as
     * {@code socketFile}: {@code <procSelfFd>/<fd>}, which reaches the very file that was opened
     * and checked, whatever the path's length; the path itself where {@code procSelfFd} is not
     * there (no {@code /proc}, or one of another PID namespace) and the path fits an address.
     *
     * @throws ConduitException when neither reaches it, naming the path and the remedies
     */
    static String connectAddress(String path, FileDescriptor socketFile, Path procSelfFd) {
        if (Files.isDirectory(procSelfFd)) {
            return procSelfFd + "/" + socketFile.fd();
        }
        if (fitsAnAddress(path)) {
            return path;
        }
        throw new ConduitException("cannot connect to the producer's socket " + path + ": its path is "
                + path.getBytes(StandardCharsets.UTF_8).length + " bytes, too long for an AF_UNIX address ("
                + SocketFlags.SUN_PATH_MAX + "), and " + procSelfFd + ", through which a longer one is reached, is not there: "
                + PROC_REMEDY);
    }

    static boolean fitsAnAddress(String path) {
        return path.getBytes(StandardCharsets.UTF_8).length <= SocketFlags.SUN_PATH_MAX;
    }

    /**
     * The longest shared-directory path that leaves room for a socket name of
     * {@link #SOCKET_NAME_LENGTH} bytes (and the {@code /} before it) in an AF_UNIX address;
     * a longer one is reached through {@link #PROC_SELF_FD}.
     */
    static int maxDirectoryLength() {
        return SocketFlags.SUN_PATH_MAX - 1 - SOCKET_NAME_LENGTH;
    }

    /**
     * Why sockets in {@code directory} cannot be reached from this process, or {@code null}: its
     * path is longer than {@link #maxDirectoryLength()} and {@code procSelfFd} (this process's
     * descriptors as paths, {@link #PROC_SELF_FD}) is not there to reach them through.
     */
    static String unreachableReason(Path directory, Path procSelfFd) {
        int length = directory.toString().getBytes(StandardCharsets.UTF_8).length;
        if (length <= maxDirectoryLength() || Files.isDirectory(procSelfFd)) {
            return null;
        }
        return "the shared directory's path " + directory + " is " + length + " bytes, too long for the fd server's Unix "
                + "socket in it (an AF_UNIX address leaves room for " + maxDirectoryLength() + "), and " + procSelfFd
                + ", through which a longer one is reached, is not there: " + PROC_REMEDY;
    }

    /**
     * What is left until {@code deadline} (a {@link System#nanoTime()} value) as a {@code poll}
     * timeout in milliseconds, as {@link Libc#pollTimeoutMillis} rounds and caps it.
     */
    static int pollTimeout(long deadline) {
        return Libc.pollTimeoutMillis(deadline - System.nanoTime());
    }
}
