package dev.conduit.plugin.memfd;

import dev.conduit.spi.FormatVersions;
import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.PayloadWriter;

import java.util.Arrays;

/**
 * The memfd plugin's part of an IPC handle: where the producer's fd server listens and the
 * capability token that makes it hand out the chunk.
 *
 * <pre>
 * offset  size  field     rule on decode
 * ------  ----  --------  ---------------------------------------------------------------------
 *      0  1     version   {@value #VERSION}
 *      1  2+n   socket    u16 length + the fd server's socket name, relative to the shared
 *                         directory: one segment of [A-Za-z0-9._-], "conduit-memfd-...sock"
 *      .  16    token     the chunk's capability token (128 random bits)
 *                         no bytes may follow
 * </pre>
 *
 * The socket name is relative because producer and consumer may see the shared directory at
 * different paths (a host and a container); each resolves it against its own
 * {@code shared.dir}. The token is the capability: whoever holds the handle may map the chunk,
 * as long as the server admits its user.
 *
 * @param socketName the fd server's socket, relative to the shared directory
 * @param token      the capability token, {@value FdProtocol#TOKEN_LENGTH} bytes
 */
record MemfdPayload(String socketName, byte[] token) {

    static final int VERSION = 1;

    MemfdPayload {
        if (token.length != FdProtocol.TOKEN_LENGTH) {
            throw new IllegalArgumentException("a token has " + FdProtocol.TOKEN_LENGTH + " bytes, not " + token.length);
        }
        token = token.clone();
    }

    @Override
    public byte[] token() {
        return token.clone();
    }

    byte[] encode() {
        return new PayloadWriter().u8(VERSION).string(socketName).bytes(token).toByteArray();
    }

    /**
     * Reads and validates a payload.
     *
     * @throws dev.conduit.spi.InvalidHandleException naming the first field that is wrong
     */
    static MemfdPayload decode(PayloadReader reader) {
        int version = reader.u8("version");
        if (version != VERSION) {
            throw reader.invalid("version", FormatVersions.refusal("memfd export payload", version, VERSION, "the producer"));
        }
        String socket = reader.relativePath("socket");
        if (socket.indexOf('/') >= 0 || !socket.startsWith(FdProtocol.FILE_PREFIX + "-")
                || !socket.endsWith(FdProtocol.SOCKET_SUFFIX)) {
            throw reader.invalid("socket", "'" + socket + "' is not the name of a memfd fd server's socket (expected "
                    + FdProtocol.FILE_PREFIX + "-<owner>-<random>" + FdProtocol.SOCKET_SUFFIX + ", directly in the shared directory)");
        }
        byte[] token = reader.bytes("token", FdProtocol.TOKEN_LENGTH);
        reader.end("token");
        return new MemfdPayload(socket, token);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof MemfdPayload p && p.socketName.equals(socketName) && Arrays.equals(p.token, token);
    }

    @Override
    public int hashCode() {
        return socketName.hashCode() * 31 + Arrays.hashCode(token);
    }

    /** Never shows the token: it is a capability, and this string ends up in logs. */
    @Override
    public String toString() {
        return "MemfdPayload[socket=" + socketName + "]";
    }
}
