package dev.conduit.plugin.posix;

import dev.conduit.linux.FileStatus;
import dev.conduit.shm.DirectoryIdentity;
import dev.conduit.shm.OwnerLease;
import dev.conduit.spi.FormatVersions;
import dev.conduit.spi.InvalidHandleException;
import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.PayloadWriter;

/**
 * The posix plugin's part of an IPC handle: which chunk file to map, which file it is, and in
 * which directory the producer made it. The runtime wraps it in the generic handle (plugin name,
 * origin, export id, chunk length, region, CRC).
 *
 * <table class="striped">
 * <caption>Payload, version 3 (little-endian)</caption>
 * <tr><th>offset</th><th>size</th><th>field</th><th>rule on decode</th></tr>
 * <tr><td>0</td><td>1</td><td>{@code payload.version}</td><td>{@value #VERSION}; 1 and 2 refused (below)</td></tr>
 * <tr><td>1</td><td>2</td><td>{@code payload.path.length}</td><td>u16, 1 to
 *     {@value PayloadReader#MAX_PATH_LENGTH}</td></tr>
 * <tr><td>3</td><td>n</td><td>{@code payload.path}</td><td>UTF-8; the name of a chunk file
 *     directly in the consumer's chunk directory ({@code posix.dir}, else {@code shared.dir}), of
 *     the form the producer creates, {@code conduit-posix-<owner>-<random>.chunk}: one segment of
 *     {@code [A-Za-z0-9._-]} ({@link PayloadReader#relativePath(String)}) carrying an owner id
 *     ({@link OwnerLease#ownerOfFile}); anything else is refused (2026-12-06)</td></tr>
 * <tr><td>3+n</td><td>8</td><td>{@code payload.directory.device}</td><td>u64, any: the
 *     producer's chunk directory's {@code st_dev}</td></tr>
 * <tr><td>11+n</td><td>8</td><td>{@code payload.directory.inode}</td><td>u64, any: its
 *     {@code st_ino}</td></tr>
 * <tr><td>19+n</td><td>8</td><td>{@code payload.directory.birth}</td><td>u64, any: its
 *     {@code stx_btime} in ns, or 0 where not recorded ({@link DirectoryIdentity})</td></tr>
 * <tr><td>27+n</td><td>8</td><td>{@code payload.chunk.device}</td><td>u64, any: the chunk
 *     file's {@code st_dev}, as the producer's {@code fstat} of it read</td></tr>
 * <tr><td>35+n</td><td>8</td><td>{@code payload.chunk.inode}</td><td>u64, any: its
 *     {@code st_ino}</td></tr>
 * <tr><td>43+n</td><td>&nbsp;</td><td>{@code payload.end}</td><td>no bytes follow</td></tr>
 * </table>
 * Version 2 added the three {@code directory} fields (2026-12-06), version 3 the two {@code chunk}
 * fields (2026-12-06). A payload of version 1 or 2 is refused, naming both versions: it names the
 * file by name alone, which whoever may write a directory that is not sticky can rename another
 * chunk over, and taking it would keep that open to any peer that sends one.
 *
 * <p>Until 2026-12-06 the path could name any file beneath the directory
 * ({@code PosixImporterTest#refusesAFileOfThisUserThatNoProviderExports}): a peer that can only
 * send handle bytes (another uid, a container) had this process map any file of its user there
 * read-write, another application's segment in {@code /dev/shm} among them.
 *
 * <p>The path is only a name, never an authority: the importer still opens it beneath its own
 * directory without following symlinks, and checks what it opened (type, device and inode, owner,
 * size). The directory never decides anything either: it words the failure of an import that finds no file
 * ({@code ENOENT}), a chunk freed in the very directory the handle names, or a consumer that looks
 * in another one.
 *
 * @param path      the chunk file's name in the consumer's chunk directory
 * @param directory the producer's chunk directory
 * @param device    the chunk file's {@code st_dev}
 * @param inode     the chunk file's {@code st_ino}
 */
record ExportPayload(String path, DirectoryIdentity directory, long device, long inode) {

    static final int VERSION = 3;

    /** The payload naming chunk file {@code fileName} in {@code directory}, its {@code st_dev} {@code device}, its {@code st_ino} {@code inode}. */
    static byte[] encode(String fileName, DirectoryIdentity directory, long device, long inode) {
        return directory.writeTo(new PayloadWriter().u8(VERSION).string(fileName)).u64(device).u64(inode).toByteArray();
    }

    /** Whether {@code status}, of the file this process opened under {@link #path}, is of the file the producer exported. */
    boolean isOf(FileStatus status) {
        return status.dev() == device && status.inode() == inode;
    }

    /**
     * Reads and validates a payload.
     *
     * @throws InvalidHandleException naming the field that is wrong; nothing has been opened
     */
    static ExportPayload decode(PayloadReader payload) {
        int version = payload.u8("version");
        if (version != VERSION) {
            throw payload.invalid("version", FormatVersions.refusal("posix export payload", version, VERSION, "the producer"));
        }
        String path = payload.relativePath("path");
        if (path.indexOf('/') >= 0 || OwnerLease.ownerOfFile(PosixMemoryProvider.FILE_PREFIX, path) == null
                || !path.endsWith(PosixMemoryProvider.CHUNK_SUFFIX)) {
            throw payload.invalid("path", "'" + path + "' is not the name of a posix chunk file (expected "
                    + PosixMemoryProvider.FILE_PREFIX + "-<owner>-<random>" + PosixMemoryProvider.CHUNK_SUFFIX
                    + ", directly in the chunk directory); refused: a handle names only a file a posix provider exports");
        }
        DirectoryIdentity directory = DirectoryIdentity.read(payload);
        long device = payload.u64("chunk.device");
        long inode = payload.u64("chunk.inode");
        payload.end("end");
        return new ExportPayload(path, directory, device, inode);
    }
}
