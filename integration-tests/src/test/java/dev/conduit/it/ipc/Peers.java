package dev.conduit.it.ipc;

import dev.conduit.Conduit;
import dev.conduit.Pool;
import dev.conduit.Region;
import dev.conduit.it.process.OpenResources;
import dev.conduit.it.process.Patterns;
import dev.conduit.it.process.RemotePeer;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import static org.assertj.core.api.Assertions.assertThat;

/** This JVM's side of the cross-process tests, and the round trip that the direct and the container tests share. */
final class Peers {

    /** Region sizes: size classes sharing a chunk (so regions sit at non-zero offsets), a chunk of its own, a chunk over pool.chunk.size. */
    static final long[] SIZES = {64, 4096, 100_000, 1 << 20, 3 << 20};

    private Peers() {
    }

    /** How this JVM loads Conduit, as {@link dev.conduit.it.process.CommandLoop} reports it for a child. */
    static String loading() {
        return Conduit.class.getModule().isNamed() ? "module-path" : "class-path";
    }

    /** A Conduit in this JVM on {@code shared}, with only {@code plugin} selected and nothing read from this JVM's environment. */
    static Conduit conduit(Path shared, String plugin) {
        return Conduit.builder().environment(Map.of()).systemProperties(new Properties())
                .sharedDirectory(shared).transports(plugin).build();
    }

    /**
     * This JVM produces regions of every {@link #SIZES size} with {@code plugin} in {@code shared};
     * {@code consumer}, which opens no pool, imports each from its handle, reads this JVM's
     * pattern and writes its own, which this JVM then reads. Then the consumer releases and
     * closes, and reports that nothing of Conduit's is left open or mapped in it; this JVM frees
     * and closes, and nothing is left in the shared directory.
     */
    static void roundTrip(String plugin, Path shared, RemotePeer consumer) {
        Map<String, String> opened = consumer.open();
        assertThat(opened).as("the consumer's configuration")
                .containsEntry("shared.dir", consumer.child().sharedDirectory().toString())
                .containsEntry("source", "ENVIRONMENT");
        assertThat(opened.get("selected").split(",")).contains(plugin);
        OpenResources before = consumer.resources();
        assertThat(before.conduitFds()).as("conduit descriptors before any import: %s", before).isZero();
        assertThat(before.conduitMappings()).as("conduit mappings before any import: %s", before).isZero();

        try (Conduit producer = conduit(shared, plugin); Pool pool = producer.pool(plugin)) {
            List<Region> regions = new ArrayList<>();
            for (int i = 0; i < SIZES.length; i++) {
                Region r = pool.allocate(SIZES[i]);
                regions.add(r);
                Patterns.fill(r.segment(), 100 + i);
                assertThat(consumer.importRegion("r" + i, r.exportHandle())).as("size of import r%d", i).isEqualTo(SIZES[i]);
                consumer.assertPattern("r" + i, 100 + i);
                consumer.fill("r" + i, 200 + i);
            }
            for (int i = 0; i < SIZES.length; i++) {
                assertThat(Patterns.firstMismatch(regions.get(i).segment(), 200 + i))
                        .as("first byte of region %d (%d bytes) not written by the consumer", i, SIZES[i]).isEqualTo(-1);
            }
            OpenResources during = consumer.resources();
            assertThat(during.conduitMappings()).as("the consumer's count sees its imports: %s", during).isPositive();

            long hits = consumer.cacheStats().get("hits");
            consumer.importRegion("again", regions.getFirst().exportHandle());
            assertThat(consumer.cacheStats().get("hits")).as("the same handle again is a cache hit in the consumer").isEqualTo(hits + 1);
            consumer.release("again");

            for (int i = 0; i < SIZES.length; i++) consumer.release("r" + i);
            consumer.closeConduit();
            OpenResources after = consumer.resources();
            assertThat(after.conduitFds()).as("conduit descriptors after close: %s", after).isZero();
            assertThat(after.conduitMappings()).as("conduit mappings after close: %s", after).isZero();
            assertThat(after.socketFds()).as("sockets after close (before: %s): %s", before, after).isEqualTo(before.socketFds());
            assertThat(after.fds()).as("descriptors after close (before: %s): %s", before, after).isEqualTo(before.fds());
            assertThat(consumer.exit()).as("the consumer's exit code").isZero();
            regions.forEach(Region::close);
        }
        assertThat(ShmDir.files(shared)).as("left in the shared directory once the producer closed").isEmpty();
    }
}
