package dev.conduit.it.ipc;

import dev.conduit.Conduit;
import dev.conduit.Pool;
import dev.conduit.Region;
import dev.conduit.it.process.ChildJvm;
import dev.conduit.it.process.Launcher;
import dev.conduit.it.process.OpenResources;
import dev.conduit.it.process.Patterns;
import dev.conduit.it.process.RemotePeer;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Bad handles sent to another process: a consumer JVM gets handles this JVM built from real ones,
 * one field changed (and {@code total.length} and the CRC32C recomputed, so that only that field is
 * wrong), or real handles whose target was tampered with in the shared directory. Each import fails
 * with its own clear exception — {@code InvalidHandleException} naming the field, or
 * {@code ConduitException} giving the reason — and opens nothing: the consumer's descriptors,
 * sockets, mappings and IPC cache are the same after as before. A real handle still imports
 * afterwards.
 */
@Timeout(120) // a hang guard, not a speed check
class BadHandleAcrossProcessesTest {

    private static final long CHUNK_OF_ITS_OWN = 1 << 20; // over a quarter of pool.chunk.size: a chunk, and an export, of its own

    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void badHandlesFailWithTheirReasonAndOpenNothingInTheImportingProcess(String plugin, @TempDir(factory = ShmDir.class) Path shared)
            throws Exception {
        String pathField = plugin.equals("posix") ? "payload.path" : "payload.socket";
        try (Conduit producer = Peers.conduit(shared, plugin); Pool pool = producer.pool(plugin);
             RemotePeer consumer = RemotePeer.start(shared, Launcher.direct())) {
            consumer.open();
            Region warm = pool.allocate(4096);
            Patterns.fill(warm.segment(), 1);
            byte[] real = warm.exportHandle();
            consumer.importRegion("warm", real); // loads the importer's classes and native links before anything is counted
            consumer.assertPattern("warm", 1);
            consumer.release("warm");

            // Every bad handle below is made from an export the consumer has not imported: a handle whose
            // (origin, export id) is cached would be a cache hit, which the importer never sees.
            Region own = pool.allocate(CHUNK_OF_ITS_OWN);
            Patterns.fill(own.segment(), 2);
            byte[] genuine = own.exportHandle();
            Handle g = Handle.decode(genuine);

            Bad bad = new Bad(consumer);
            bad.refused("a path leaving the shared directory", withPath(g, plugin, "../../etc/passwd").encode(),
                    "InvalidHandleException", pathField, "..");
            bad.refused("an absolute path", withPath(g, plugin, "/etc/passwd").encode(),
                    "InvalidHandleException", pathField, "absolute path");
            byte[] altered = genuine.clone();
            altered[altered.length - 5] ^= 0x01; // the payload's last byte, crc not recomputed
            bad.refused("a byte altered", altered, "InvalidHandleException", "crc", "altered or corrupted");
            bad.refused("a truncated handle", Arrays.copyOf(genuine, 40), "InvalidHandleException", "total.length", "40 bytes given");
            bad.refused("a plugin not installed here", g.withPlugin("nosuch").encode(), "ConduitException", null, "not installed here");
            if (plugin.equals("posix")) {
                // A symlink planted under the very name a genuine, untouched handle points to.
                Path file = shared.resolve(Handle.posixPath(g.payload()));
                Path aside = shared.resolve("aside");
                Files.move(file, aside);
                Files.createSymbolicLink(file, aside.getFileName());
                try {
                    bad.refused("a symlink planted under the handle's file name", genuine,
                            "InvalidHandleException", "payload.path", "symbolic link");
                } finally {
                    Files.delete(file);
                    Files.move(aside, file);
                }
            } else {
                Handle.MemfdPayload p = Handle.MemfdPayload.decode(g.payload());
                // Of the fd server's form, which decode takes: the import's look at the file refuses the link.
                Path planted = shared.resolve("conduit-memfd-0123456789abcdef0123456789abcdef-0123456789abcdef.sock");
                Files.createSymbolicLink(planted, Path.of(p.socket()));
                try {
                    bad.refused("a symlink to the producer's socket", g.withPayload(p.withSocket(planted.getFileName().toString()).encode()).encode(),
                            "InvalidHandleException", "payload.socket", "symbolic link");
                } finally {
                    Files.delete(planted);
                }
                bad.refused("a token the producer never issued", g.withPayload(p.withWrongToken().encode()).encode(),
                        "ConduitException", null, "export gone: the producer freed the chunk or closed its pool");
            }

            assertThat(consumer.importRegion("genuine", genuine)).as("the genuine handle after all that").isEqualTo(CHUNK_OF_ITS_OWN);
            consumer.assertPattern("genuine", 2);
            consumer.release("genuine");
            consumer.closeConduit();
            assertThat(consumer.exit()).isZero();
            own.close();
            warm.close();
        }
        assertThat(ShmDir.files(shared)).isEmpty();
    }

    private static Handle withPath(Handle h, String plugin, String path) {
        return h.withPayload(plugin.equals("posix") ? Handle.posixPayload(path, h.payload())
                : Handle.MemfdPayload.decode(h.payload()).withSocket(path).encode());
    }

    /** Sends a bad handle to the consumer and checks how it failed, and that it opened and cached nothing. */
    private record Bad(RemotePeer consumer) {
        void refused(String what, byte[] handle, String type, String field, String messagePart) {
            OpenResources before = consumer.resources();
            Map<String, Long> statsBefore = consumer.cacheStats();
            ChildJvm.Failure f = consumer.importFailure(handle);
            OpenResources after = consumer.resources();
            System.out.printf("%s -> %s%n", what, f);
            assertThat(f.type()).as("%s: %s", what, f).isEqualTo(type);
            assertThat(f.field()).as("%s: %s", what, f).isEqualTo(field);
            assertThat(f.message()).as("%s: %s", what, f).contains(messagePart);
            assertThat(after).as("%s: what the consumer holds open before %s and after", what, before).isEqualTo(before);
            assertThat(consumer.cacheStats().get("entries")).as("%s: cache entries", what).isEqualTo(statsBefore.get("entries"));
            assertThat(consumer.cacheStats().get("mappedBytes")).as("%s: mapped bytes", what).isEqualTo(statsBefore.get("mappedBytes"));
        }
    }
}
