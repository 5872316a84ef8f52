package dev.conduit.tools;

import dev.conduit.spi.ConduitException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** What a client says of a bootstrap file in its shared directory that no server finished writing. */
class PerfBootstrapTest {

    private static final Duration TIMEOUT = Duration.ofSeconds(2);

    @TempDir
    Path shared;

    /**
     * A file of another program under a server's file name is said to be one, at once: it was waited
     * for as a bootstrap being written, until --timeout said that no server had published a file that was there.
     */
    @Test
    void aFileNoServerWroteIsSaidToBeOneWithWhatToDo() throws Exception {
        Path file = Files.writeString(PerfBootstrap.file(shared, "other"), "garbage\n");

        assertThatThrownBy(() -> PerfBootstrap.await(shared, "other", TIMEOUT, () -> false)).isInstanceOf(ConduitException.class)
                .hasMessage(file + " is not a conduit perf bootstrap of this version (first line 'garbage', expected 'conduit-perf 1'): "
                        + "no conduit perf server wrote it; remove it, or choose another --name");
    }

    /** A file a server began and never ended (it died while writing it) is named as there, with what to do. */
    @Test
    void aFileNoServerEndedIsSaidToBeThereNotMissing() throws Exception {
        Path file = Files.writeString(PerfBootstrap.file(shared, "cut"), "conduit-perf 1\npid 3\n");

        assertThatThrownBy(() -> PerfBootstrap.await(shared, "cut", TIMEOUT, () -> false)).isInstanceOf(ConduitException.class)
                .hasMessage(file + " is there, but it was not written whole within 2s (21 bytes, without the line 'end' that ends a "
                        + "bootstrap): a server that died while writing it leaves such a file, which a new --server refuses to replace. "
                        + "If none runs, remove the file and start one");
    }

    /** A directory of that name: it said "cannot read FILE: java.io.IOException: Is a directory", the JDK's words and no remedy. */
    @Test
    void aDirectoryOfTheFilesNameIsSaidToBeOne() throws Exception {
        Path file = Files.createDirectory(PerfBootstrap.file(shared, "dir"));

        assertThatThrownBy(() -> PerfBootstrap.await(shared, "dir", TIMEOUT, () -> false)).isInstanceOf(ConduitException.class)
                .hasMessage(file + " is a directory, not a perf server's bootstrap file: remove it, or choose another --name");
    }
}
