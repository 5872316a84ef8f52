package dev.conduit.plugin.memfd;

import dev.conduit.shm.DirectoryIdentity;
import dev.conduit.shm.OwnerLease;
import dev.conduit.spi.FormatVersions;
import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.PayloadWriter;

import java.util.Arrays;
import java.util.Objects;

/**
 * The memfd plugin's part of an IPC handle: where the producer's fd server listens, the
 * capability token that makes it hand out the chunk, and which shared directory the producer uses.
 *
 * <pre>
 * offset  size  field               rule on decode
 * ------  ----  ------------------  ---------------------------------------------------------------
 *      0  1     version             {@value #VERSION}, or 1 (below)
 *      1  2+n   socket              u16 length + the fd server's socket name, relative to the shared
 *                                   directory, as the fd server names it ({@link OwnerLease#isSocketName}):
 *                                   conduit-memfd-OWNER-RANDOM.sock, 32 and 16 hex digits
 *      .  16    token               the chunk's capability token (128 random bits)
 *      .  8     directory.device    any: the producer's shared directory's st_dev    } {@link DirectoryIdentity}:
 *      .  8     directory.inode     any: its st_ino                                  } words an import that
 *      .  8     directory.birth     any: its stx_btime in ns, or 0 where not recorded } finds no socket
 *                                   no bytes may follow
 * </pre>
 * Version 2 added the three {@code directory} fields (2026-12-06); a payload of version 1, which
 * ends at the token, is still taken, its directory unknown.
 *
 * The socket name is relative because producer and consumer may see the shared directory at
 * different paths (a host and a container); each resolves it against its own
 * {@code shared.dir}. The token is the capability: whoever holds the handle may map the chunk,
 * as long as the server admits its user. The directory decides nothing: it tells an import that
 * finds no socket whether it looked in the producer's directory.
 *
 * @param socketName the fd server's socket, relative to the shared directory
 * @param token      the capability token, {@value FdProtocol#TOKEN_LENGTH} bytes
 * @param directory  the producer's shared directory, or {@code null} for a payload of version 1
 */
record MemfdPayload(String socketName, byte[] token, DirectoryIdentity directory) {

    static final int VERSION = 2;
    /** The version before the directory's identity: taken, its directory unknown; what {@link #encode} writes without one. */
    private static final int VERSION_WITHOUT_DIRECTORY = 1;

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
        if (directory == null) {
            return new PayloadWriter().u8(VERSION_WITHOUT_DIRECTORY).string(socketName).bytes(token).toByteArray();
        }
        return directory.writeTo(new PayloadWriter().u8(VERSION).string(socketName).bytes(token)).toByteArray();
    }

    /**
     * Reads and validates a payload.
     *
     * @throws dev.conduit.spi.InvalidHandleException naming the first field that is wrong
     */
    static MemfdPayload decode(PayloadReader reader) {
        int version = reader.u8("version");
        if (version != VERSION && version != VERSION_WITHOUT_DIRECTORY) {
            throw reader.invalid("version", FormatVersions.refusal("memfd export payload", version, VERSION, "the producer"));
        }
        String socket = reader.relativePath("socket");
        // The name the fd server binds, and no other: until 2026-12-07 any "conduit-memfd-*.sock" was connected to.
        if (!OwnerLease.isSocketName(FdProtocol.FILE_PREFIX, socket, FdProtocol.SOCKET_SUFFIX)) {
            throw reader.invalid("socket", "'" + socket + "' is not the name of a memfd fd server's socket (expected "
                    + FdProtocol.FILE_PREFIX + "-<owner>-<random>" + FdProtocol.SOCKET_SUFFIX + ", 32 and 16 hex digits, directly in "
                    + "the shared directory); refused: a handle names only a socket a memfd fd server binds");
        }
        byte[] token = reader.bytes("token", FdProtocol.TOKEN_LENGTH);
        if (version == VERSION_WITHOUT_DIRECTORY) {
            reader.end("token");
            return new MemfdPayload(socket, token, null);
        }
        DirectoryIdentity directory = DirectoryIdentity.read(reader);
        reader.end("directory.birth");
        return new MemfdPayload(socket, token, directory);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof MemfdPayload p && p.socketName.equals(socketName) && Arrays.equals(p.token, token)
                && Objects.equals(p.directory, directory);
    }

    @Override
    public int hashCode() {
        return (socketName.hashCode() * 31 + Arrays.hashCode(token)) * 31 + Objects.hashCode(directory);
    }

    /** Never shows the token: it is a capability, and this string ends up in logs. */
    @Override
    public String toString() {
        return "MemfdPayload[socket=" + socketName + "]";
    }
}
