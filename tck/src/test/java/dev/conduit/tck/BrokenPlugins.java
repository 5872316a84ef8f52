package dev.conduit.tck;

import dev.conduit.spi.Capability;
import dev.conduit.spi.Chunk;
import dev.conduit.spi.ChunkMapping;
import dev.conduit.spi.ConduitPlugin;
import dev.conduit.spi.IpcImporter;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.spi.PluginContext;
import dev.conduit.spi.ThreadMode;

import java.time.Duration;
import java.util.Set;

/**
 * Plugins that each break one rule of the contract, and the suites run on them: the self-test
 * ({@link TckCatchesBrokenPluginsTest}) runs each suite and expects it to fail on that rule. Nested,
 * so that surefire never runs these suites by itself.
 */
final class BrokenPlugins {

    private BrokenPlugins() {
    }

    // ---- transports ----

    /** Accepts every 50th message and loses it. */
    public static final class DropsMessages extends LoopbackPlugin {
        @Override
        boolean keeps(long sequence) {
            return sequence % 50 != 49;
        }
    }

    /** Delivers every 10th message after the one that follows it. */
    public static final class ReordersMessages extends LoopbackPlugin {
        private Message held;

        @Override
        void enqueue(LoopbackEndpoint from, Message message) {
            if (held == null && message.id() % 10 == 5) {
                held = message;
                return;
            }
            from.target.offer(message);
            if (held != null) {
                from.target.offer(held);
                held = null;
            }
        }
    }

    /** Delivers message 500 twice. */
    public static final class DuplicatesMessages extends LoopbackPlugin {
        @Override
        void enqueue(LoopbackEndpoint from, Message message) {
            from.target.offer(message);
            if (message.id() == 500) from.target.offer(message);
        }
    }

    /** Never refuses: queues without bound instead of returning false when the peer's queue is full. */
    public static final class NeverRefuses extends LoopbackPlugin {
        @Override
        boolean refusesWhenFull() {
            return false;
        }
    }

    /** Never tells the runtime that a peer went away. */
    public static final class HidesPeerDeath extends LoopbackPlugin {
        @Override
        boolean reportsPeerDeath() {
            return false;
        }
    }

    /** Declares WAKEUP, but await only ever times out. */
    public static final class SleepsThroughWakeups extends LoopbackPlugin {
        @Override
        boolean wakes() {
            return false;
        }
    }

    /** Wakes a thread that sleeps in await, but forgets a signal made while nobody sleeps. */
    public static final class ForgetsEarlySignals extends LoopbackPlugin {
        @Override
        boolean keepsSignals() {
            return false;
        }
    }

    /** Declares MULTI, but two threads sending at once overwrite each other's staged message. */
    public static final class ClaimsMulti extends LoopbackPlugin {
        private Message staged;

        @Override
        public Set<ThreadMode> threadModes() {
            return Set.of(ThreadMode.SINGLE, ThreadMode.SERIALIZED, ThreadMode.MULTI);
        }

        @Override
        void enqueue(LoopbackEndpoint from, Message message) {
            staged = message;
            Thread.yield();
            from.target.offer(staged);
        }
    }

    /** Never connects: trySend refuses every message however much the receiver progresses. */
    public static final class NeverConnects extends LoopbackPlugin {
        @Override
        boolean connects() {
            return false;
        }
    }

    /** Its probe says available and it declares MEMORY, which it does not implement. */
    public static final class LiesInProbe extends LoopbackPlugin {
        @Override
        public Set<Capability> capabilities() {
            return Set.of(Capability.AM, Capability.WAKEUP, Capability.MEMORY);
        }
    }

    // ---- memory providers ----

    /** Its importer maps a payload without checking that it is complete. */
    public static final class AcceptsBadHandles extends FileMemoryPlugin {
        @Override
        public IpcImporter ipcImporter(PluginContext context) {
            return (payload, chunkLength) -> {
                String name = payload.relativePath("file");
                byte[] full = new dev.conduit.spi.PayloadWriter().string(name).u64(chunkLength).toByteArray();
                return map(context.sharedDirectory(), new dev.conduit.spi.PayloadReader(full), chunkLength);
            };
        }
    }

    /** Its close() forgets the chunks still allocated: their mappings and files stay. */
    public static final class LeaksOnClose extends FileMemoryPlugin {
        @Override
        public MemoryProvider openMemoryProvider(PluginContext context) {
            return new Provider(context.sharedDirectory()) {
                @Override
                public void close() {
                    chunks.clear();
                }
            };
        }
    }

    /** Hands out chunks with what an earlier user left in them. */
    public static final class DirtyChunks extends FileMemoryPlugin {
        @Override
        public MemoryProvider openMemoryProvider(PluginContext context) {
            return new Provider(context.sharedDirectory()) {
                @Override
                public Chunk allocate(long size) {
                    Chunk chunk = super.allocate(size);
                    chunk.segment().fill((byte) 0x5A);
                    return chunk;
                }
            };
        }
    }

    /** Its free() deletes the file but keeps the chunk mapped. */
    public static final class FreeKeepsMapping extends FileMemoryPlugin {
        @Override
        public MemoryProvider openMemoryProvider(PluginContext context) {
            return new Provider(context.sharedDirectory()) {
                @Override
                public void free(Chunk chunk) {
                    FileChunk c = (FileChunk) chunk;
                    chunks.remove(c);
                    try {
                        java.nio.file.Files.deleteIfExists(c.file());
                    } catch (java.io.IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                }
            };
        }
    }

    // ---- the suites run on them ----

    abstract static class LoopbackSuite extends TransportContract {
        @Override
        protected Duration progressGuard() {
            return Duration.ofSeconds(3);
        }

        @Override
        protected long backpressureBound() {
            return 16L << 20;
        }
    }

    public static final class DropsMessagesSuite extends LoopbackSuite {
        @Override
        protected ConduitPlugin newPlugin() {
            return new DropsMessages();
        }
    }

    public static final class ReordersMessagesSuite extends LoopbackSuite {
        @Override
        protected ConduitPlugin newPlugin() {
            return new ReordersMessages();
        }
    }

    public static final class DuplicatesMessagesSuite extends LoopbackSuite {
        @Override
        protected ConduitPlugin newPlugin() {
            return new DuplicatesMessages();
        }
    }

    public static final class NeverRefusesSuite extends LoopbackSuite {
        @Override
        protected ConduitPlugin newPlugin() {
            return new NeverRefuses();
        }
    }

    public static final class HidesPeerDeathSuite extends LoopbackSuite {
        @Override
        protected ConduitPlugin newPlugin() {
            return new HidesPeerDeath();
        }
    }

    public static final class SleepsThroughWakeupsSuite extends LoopbackSuite {
        @Override
        protected ConduitPlugin newPlugin() {
            return new SleepsThroughWakeups();
        }
    }

    public static final class ForgetsEarlySignalsSuite extends LoopbackSuite {
        @Override
        protected ConduitPlugin newPlugin() {
            return new ForgetsEarlySignals();
        }
    }

    public static final class ClaimsMultiSuite extends PluginMetadataContract {
        @Override
        protected ConduitPlugin newPlugin() {
            return new ClaimsMulti();
        }
    }

    public static final class NeverConnectsSuite extends PluginMetadataContract {
        @Override
        protected ConduitPlugin newPlugin() {
            return new NeverConnects();
        }

        @Override
        protected Duration progressGuard() {
            return Duration.ofSeconds(3);
        }
    }

    public static final class LiesInProbeSuite extends PluginMetadataContract {
        @Override
        protected ConduitPlugin newPlugin() {
            return new LiesInProbe();
        }
    }

    public static final class AcceptsBadHandlesSuite extends MemoryProviderContract {
        @Override
        protected ConduitPlugin newPlugin() {
            return new AcceptsBadHandles();
        }
    }

    public static final class LeaksOnCloseSuite extends MemoryProviderContract {
        @Override
        protected ConduitPlugin newPlugin() {
            return new LeaksOnClose();
        }
    }

    public static final class DirtyChunksSuite extends MemoryProviderContract {
        @Override
        protected ConduitPlugin newPlugin() {
            return new DirtyChunks();
        }
    }

    public static final class FreeKeepsMappingSuite extends MemoryProviderContract {
        @Override
        protected ConduitPlugin newPlugin() {
            return new FreeKeepsMapping();
        }
    }
}
