package dev.conduit.plugin.devdax;

import dev.conduit.spi.Chunk;
import dev.conduit.spi.MemoryProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;

import static dev.conduit.plugin.devdax.Fixtures.MIB;
import static dev.conduit.plugin.devdax.Fixtures.UNIT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Two processes share memory through a file-backed device: the consumer is a fresh JVM that never
 * opens a provider, and whose device table reaches the file by another path, as a container would
 * (the namespace variants are the integration tests' business).
 */
@Timeout(180) // a hang guard for the child JVMs, not a speed check
class CrossProcessTest {

    @TempDir(factory = ShmTempDirFactory.class)
    Path dir;

    @Test
    void aConsumerWithoutAProviderMapsTheExportThroughItsOwnAlias() throws Exception {
        Path device = Fixtures.deviceFile(dir, "dax.img", 32 * MIB);
        Path symlink = Files.createSymbolicLink(dir.resolve("symlink.img"), device);
        Path hardLink = Files.createLink(dir.resolve("hardlink.img"), device);
        try (MemoryProvider provider = new DevdaxPlugin().openMemoryProvider(Fixtures.device("pmem0", device))) {
            Chunk chunk = provider.allocate(2 * UNIT);
            byte[] export = provider.export(chunk);
            long value = 4710;
            for (Path view : new Path[] {symlink, hardLink}) {
                chunk.segment().set(JAVA_LONG, 0, ++value);
                chunk.segment().set(JAVA_LONG, 8, 0L);
                try (ChildJvm child = ChildJvm.start("import", "pmem0=" + view, HexFormat.of().formatHex(export),
                        Long.toString(2 * UNIT))) {
                    assertThat(child.remainingLines()).as(view.toString()).containsExactly("read=" + value, "left=0");
                    assertThat(child.waitForExit()).as(child.stderr()).isZero();
                }
                assertThat(chunk.segment().get(JAVA_LONG, 8)).as("the child's write").isEqualTo(DevdaxChild.WRITTEN);
            }

            provider.free(chunk);
            try (ChildJvm child = ChildJvm.start("import", "pmem0=" + symlink, HexFormat.of().formatHex(export),
                    Long.toString(2 * UNIT))) {
                assertThat(child.waitForExit()).isEqualTo(3);
                assertThat(child.stderr()).startsWith("export gone: device " + symlink + " (alias 'pmem0') holds no allocation");
            }
            try (ChildJvm child = ChildJvm.start("import", "other=" + device, HexFormat.of().formatHex(export),
                    Long.toString(2 * UNIT))) {
                assertThat(child.waitForExit()).isEqualTo(3);
                assertThat(child.stderr()).contains("field 'payload.alias'").contains("alias 'pmem0' is not in this process's device table");
            }
        }
    }
}
