package dev.conduit.plugin.posix;

import dev.conduit.spi.FormatVersions;
import dev.conduit.spi.InvalidHandleException;
import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.PayloadWriter;

/**
 * The posix plugin's part of an IPC handle: which chunk file to map. The runtime wraps it in the
 * generic handle (plugin name, origin, export id, chunk length, region, CRC), so it carries
 * nothing but the name.
 *
 * <table class="striped">
 * <caption>Payload, version 1 (little-endian)</caption>
 * <tr><th>offset</th><th>size</th><th>field</th><th>rule on decode</th></tr>
 * <tr><td>0</td><td>1</td><td>{@code payload.version}</td><td>{@value #VERSION}</td></tr>
 * <tr><td>1</td><td>2</td><td>{@code payload.path.length}</td><td>u16, 1 to
 *     {@value PayloadReader#MAX_PATH_LENGTH}</td></tr>
 * <tr><td>3</td><td>n</td><td>{@code payload.path}</td><td>UTF-8; a path relative to the
 *     consumer's chunk directory ({@code posix.dir}, else {@code shared.dir}): segments of
 *     {@code [A-Za-z0-9._-]}, none {@code .} or {@code ..}, no leading {@code /}
 *     ({@link PayloadReader#relativePath(String)}). The producer writes one file name,
 *     {@code conduit-posix-<owner>-<random>.chunk}</td></tr>
 * <tr><td>3+n</td><td>&nbsp;</td><td>{@code payload.end}</td><td>no bytes follow</td></tr>
 * </table>
 *
 * <p>The path is only a name, never an authority: the importer still opens it beneath its own
 * directory without following symlinks, and checks what it opened (type, owner, size).
 */
final class ExportPayload {

    static final int VERSION = 1;

    private ExportPayload() {
    }

    /** The payload naming chunk file {@code fileName}. */
    static byte[] encode(String fileName) {
        return new PayloadWriter().u8(VERSION).string(fileName).toByteArray();
    }

    /**
     * The chunk file's path relative to the consumer's chunk directory.
     *
     * @throws InvalidHandleException naming the field that is wrong; nothing has been opened
     */
    static String decode(PayloadReader payload) {
        int version = payload.u8("version");
        if (version != VERSION) {
            throw payload.invalid("version", FormatVersions.refusal("posix export payload", version, VERSION, "the producer"));
        }
        String path = payload.relativePath("path");
        payload.end("end");
        return path;
    }
}
