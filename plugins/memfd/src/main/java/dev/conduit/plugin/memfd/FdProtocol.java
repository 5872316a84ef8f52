package dev.conduit.plugin.memfd;

import dev.conduit.linux.SocketFlags;
import dev.conduit.spi.ConduitException;

import java.nio.charset.StandardCharsets;
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
 * reply, server to importer: 1 byte, or {@value #OK_REPLY_LENGTH} with status 0
 * offset  size  field     value
 * ------  ----  --------  ------------------------------------------------------------------
 *      0  1     status    0 ok: the memfd comes with this byte (SCM_RIGHTS, same sendmsg)
 *                         1 unknown or revoked token: the chunk was freed or never exported
 *                         2 peer not allowed: SO_PEERCRED uid is neither the server's own
 *                           nor in the server's memfd.allowed.uids
 *                         3 bad request: wrong length or version
 *      1  8     length    u64 little-endian, the chunk's length; only with status 0
 * </pre>
 *
 * The server then closes the connection. It checks, in this order: the peer's uid, as soon as
 * it accepts the connection (a refused user is answered at once, learns nothing about tokens, and
 * cannot hold the server), the request's shape, the token, which it compares in constant time
 * with every live export. An importer whose request met a closed connection ({@code EPIPE})
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

    /** Prefix of the provider's lease and of every file it puts in the shared directory. */
    static final String FILE_PREFIX = "conduit-memfd";
    /** Suffix of the fd server's socket name. */
    static final String SOCKET_SUFFIX = ".sock";
    /**
     * Length of the fd server's socket name as {@link dev.conduit.shm.OwnerLease#newSocketName}
     * makes it: prefix, {@code -}, 32 hex digits of owner, {@code -}, 16 of random, suffix.
     */
    static final int SOCKET_NAME_LENGTH = FILE_PREFIX.length() + 1 + 32 + 1 + 16 + SOCKET_SUFFIX.length();

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

    /** The one-byte reply of a refusal. */
    static byte[] refusal(int status) {
        if (status == STATUS_OK || status < 0 || status > 0xFF) {
            throw new IllegalArgumentException("not a refusal status: " + status);
        }
        return new byte[] {(byte) status};
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
            default -> status + " (undefined)";
        };
    }

    /**
     * The path of socket {@code name} in {@code directory}, as {@code bind} and {@code connect}
     * take it.
     *
     * @throws ConduitException if it does not fit an AF_UNIX address, naming the path and the remedy
     */
    static String socketPath(Path directory, String name) {
        String path = directory.resolve(name).toString();
        int length = path.getBytes(StandardCharsets.UTF_8).length;
        if (length > SocketFlags.SUN_PATH_MAX) {
            throw new ConduitException("the memfd fd server's socket path " + path + " is " + length
                    + " bytes of UTF-8, but an AF_UNIX address holds at most " + SocketFlags.SUN_PATH_MAX
                    + ": configure a shared directory with a path of at most " + maxDirectoryLength()
                    + " bytes with " + MemfdConfig.SHARED_DIR_KEY + ", e.g. a symbolic link or bind mount at /run/conduit");
        }
        return path;
    }

    /**
     * The longest shared-directory path that leaves room for a socket name of
     * {@link #SOCKET_NAME_LENGTH} bytes (and the {@code /} before it) in an AF_UNIX address.
     */
    static int maxDirectoryLength() {
        return SocketFlags.SUN_PATH_MAX - 1 - SOCKET_NAME_LENGTH;
    }

    /**
     * What is left until {@code deadline} (a {@link System#nanoTime()} value) as a {@code poll}
     * timeout in milliseconds, rounded up so that a wait never ends before the deadline; 0 once
     * it has passed.
     */
    static int pollTimeout(long deadline) {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
            return 0;
        }
        return (int) Math.min(Integer.MAX_VALUE, (left + 999_999) / 1_000_000);
    }
}
