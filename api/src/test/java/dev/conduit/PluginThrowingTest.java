package dev.conduit;

import dev.conduit.internal.ipc.InProcessMemoryPlugin;
import dev.conduit.spi.Chunk;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ConduitPlugin;
import dev.conduit.spi.IpcImporter;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.spi.PluginContext;
import dev.conduit.spi.ThreadMode;
import dev.conduit.testing.RecordingTransport;
import dev.conduit.testing.TestPlugin;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicInteger;

import static dev.conduit.testing.TestConduits.isolated;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A plugin whose operation throws an unchecked exception that is no {@code ConduitException} (the
 * SPI's operations fail with one, naming the cause and the remedy): the application gets a
 * {@code ConduitException} naming the plugin, the operation and whose fault it most likely is,
 * with what the plugin threw as its cause. Before, the plugin's bare exception reached it as it
 * was, from calls whose callers catch {@code ConduitException}, naming neither the plugin nor the
 * operation (found by a third-party author's plugin). A {@code ConduitException} of the plugin's
 * passes as it is.
 */
class PluginThrowingTest {

    private static String failure(String plugin, String operation, Exception thrown) {
        return "plugin '" + plugin + "' failed in " + operation + ": " + thrown + ". That is no ConduitException, by which the SPI's "
                + "operations fail naming the cause and what to do, so most likely the plugin's fault: report it to the plugin's "
                + "authors (this exception's cause is what it threw), and meanwhile leave it out (transports=^" + plugin + ") or use "
                + "another plugin";
    }

    @Test
    void aPoolOverAPluginWhoseOpenMemoryProviderThrowsNamesThePluginAndTheOperation() {
        IllegalStateException thrown = new IllegalStateException("device table not loaded");
        ConduitPlugin throwing = new ForwardingPlugin(new InProcessMemoryPlugin()) {
            @Override
            public MemoryProvider openMemoryProvider(PluginContext context) {
                throw thrown;
            }
        };
        try (Conduit conduit = isolated().addPlugin(throwing).build()) {
            assertThatThrownBy(() -> conduit.pool("inproc")).isInstanceOf(ConduitException.class)
                    .hasMessage(failure("inproc", "openMemoryProvider()", thrown)).hasCause(thrown);
        }
    }

    @Test
    void anImportThroughAPluginWhoseIpcImporterThrowsNamesThePluginAndTheOperation() {
        NullPointerException thrown = new NullPointerException("context");
        ConduitPlugin throwing = new ForwardingPlugin(new InProcessMemoryPlugin()) {
            @Override
            public IpcImporter ipcImporter(PluginContext context) {
                throw thrown;
            }
        };
        try (Conduit producer = isolated().addPlugin(new InProcessMemoryPlugin()).build();
             Conduit consumer = isolated().addPlugin(throwing).build()) {
            byte[] handle = producer.pool("inproc").allocate(4096).exportHandle();
            assertThatThrownBy(() -> consumer.importRegion(handle)).isInstanceOf(ConduitException.class)
                    .hasMessage(failure("inproc", "ipcImporter()", thrown)).hasCause(thrown);
        }
    }

    /** Its importer's map, which parses what a peer sent, throws a bare exception: named so; one of its ConduitExceptions passes as it is. */
    @Test
    void anImportWhoseMapThrowsNamesThePluginAndAConduitExceptionOfItsPassesAsItIs() {
        IndexOutOfBoundsException thrown = new IndexOutOfBoundsException("Index 7 out of bounds for length 4");
        ConduitException stale = new ConduitException("export gone: the chunk was freed");
        RuntimeException[] next = {thrown};
        ConduitPlugin throwing = new ForwardingPlugin(new InProcessMemoryPlugin()) {
            @Override
            public IpcImporter ipcImporter(PluginContext context) {
                return (payload, chunkLength) -> {
                    throw next[0];
                };
            }
        };
        try (Conduit producer = isolated().addPlugin(new InProcessMemoryPlugin()).build();
             Conduit consumer = isolated().addPlugin(throwing).build()) {
            byte[] handle = producer.pool("inproc").allocate(4096).exportHandle();
            assertThatThrownBy(() -> consumer.importRegion(handle)).isInstanceOf(ConduitException.class)
                    .hasMessage(failure("inproc", "its importer's map()", thrown)).hasCause(thrown);
            next[0] = stale;
            assertThatThrownBy(() -> consumer.importRegion(handle)).isSameAs(stale);
        }
    }

    /** The worker's other transport, opened before, is closed: nothing of a worker that failed to open stays open. */
    @Test
    void aWorkerOverAPluginWhoseOpenTransportThrowsNamesThePluginAndClosesTheOthers() {
        IllegalStateException thrown = new IllegalStateException("no queue pair");
        TestPlugin good = TestPlugin.named("good").priority(2);
        TestPlugin throwing = TestPlugin.named("thrower").priority(1).transports(c -> {
            throw thrown;
        });
        try (Conduit conduit = isolated().addPlugin(good).addPlugin(throwing).build()) {
            assertThatThrownBy(() -> conduit.newWorker(ThreadMode.SINGLE)).isInstanceOf(ConduitException.class)
                    .hasMessage(failure("thrower", "openTransport()", thrown)).hasCause(thrown);
            assertThat(good.opened).singleElement().extracting(t -> ((RecordingTransport) t).closes()).isEqualTo(1);
        }
    }
    /**
     * The provider's first call, {@code pageSize()}, made as its pool is set up: what it throws is
     * named as any other operation's, and the provider it was asked of is closed whatever it threw,
     * a plugin missing a class of its own (a LinkageError) too, as the transports a failing worker
     * opened before are (a devdax provider holds its device's descriptor and lock until closed);
     * an {@code Error} is then thrown as it is. Until 2026-12-07 an {@code Error} left the provider
     * open and unreachable, and an unchecked exception reached the application bare, naming neither
     * the plugin nor the operation.
     */
    @Test
    void aPoolOverAProviderWhosePageSizeThrowsNamesThePluginAndClosesTheProvider() {
        AtomicInteger closes = new AtomicInteger();
        Throwable[] next = {new IllegalStateException("page size not known yet")};
        ConduitPlugin throwing = new ForwardingPlugin(new InProcessMemoryPlugin()) {
            @Override
            public MemoryProvider openMemoryProvider(PluginContext context) {
                MemoryProvider real = super.openMemoryProvider(context);
                return new MemoryProvider() {
                    @Override
                    public long pageSize() {
                        if (next[0] instanceof Error e) throw e;
                        throw (RuntimeException) next[0];
                    }

                    @Override
                    public Chunk allocate(long size) {
                        return real.allocate(size);
                    }

                    @Override
                    public void free(Chunk chunk) {
                        real.free(chunk);
                    }

                    @Override
                    public void close() {
                        closes.incrementAndGet();
                        real.close();
                    }
                };
            }
        };
        try (Conduit conduit = isolated().addPlugin(throwing).build()) {
            RuntimeException thrown = (RuntimeException) next[0];
            assertThatThrownBy(() -> conduit.pool("inproc")).isInstanceOf(ConduitException.class)
                    .hasMessage(failure("inproc", "its memory provider's pageSize()", thrown)).hasCause(thrown);
            assertThat(closes).hasValue(1);
            next[0] = new NoClassDefFoundError("dev/example/PageSizes");
            assertThatThrownBy(() -> conduit.pool("inproc")).isSameAs(next[0]);
            assertThat(closes).as("the provider whose pageSize() threw a LinkageError").hasValue(2);
            next[0] = new StackOverflowError();
            assertThatThrownBy(() -> conduit.pool("inproc")).as("the JVM's own error").isSameAs(next[0]);
            assertThat(closes).hasValue(3);
        }
    }

    /**
     * A transport's {@code address()}, asked as the worker's address is built: what it throws is
     * named as its {@code progress}'s is, a checked exception thrown undeclared too. Until
     * 2026-12-07 it reached the application as it was, naming no plugin.
     */
    @Test
    void aWorkerAddressOverATransportWhoseAddressThrowsNamesThePluginAndTheOperation() {
        Exception[] next = {new NullPointerException("no queue pair yet")};
        TestPlugin throwing = TestPlugin.named("thrower").transports(c -> new RecordingTransport() {
            @Override
            public byte[] address() {
                throw PluginThrowingCheckedTest.sneaky(next[0]);
            }
        });
        try (Conduit conduit = isolated().addPlugin(throwing).build(); Worker worker = conduit.newWorker(ThreadMode.SINGLE)) {
            Exception thrown = next[0];
            assertThatThrownBy(worker::address).isInstanceOf(ConduitException.class)
                    .hasMessage(failure("thrower", "address()", thrown)).hasCause(thrown);
            next[0] = new IOException("/dev/shm/conduit: Permission denied");
            assertThatThrownBy(worker::address).as("a checked exception thrown undeclared").isInstanceOf(ConduitException.class)
                    .hasMessage(failure("thrower", "address()", next[0])).hasCause(next[0]);
        }
    }

    /**
     * A chunk whose {@code segment()} throws, asked as the pool takes the chunk its provider's
     * {@code allocate} returned: named as {@code allocate}'s failure is, a checked exception thrown
     * undeclared too, and the chunk given back to the provider. Until 2026-12-07 the bare exception
     * reached the application, naming no plugin, and the chunk was never freed.
     */
    @Test
    void anAllocationWhoseChunksSegmentThrowsNamesThePluginAndFreesTheChunk() {
        Exception[] next = {new IllegalStateException("chunk not mapped yet")};
        AtomicInteger frees = new AtomicInteger();
        record Unmapped(Chunk real, Exception thrown) implements Chunk {
            @Override
            public MemorySegment segment() {
                throw PluginThrowingCheckedTest.sneaky(thrown);
            }
        }
        ConduitPlugin throwing = new ForwardingPlugin(new InProcessMemoryPlugin()) {
            @Override
            public MemoryProvider openMemoryProvider(PluginContext context) {
                MemoryProvider real = super.openMemoryProvider(context);
                return new MemoryProvider() {
                    @Override
                    public long pageSize() {
                        return real.pageSize();
                    }

                    @Override
                    public Chunk allocate(long size) {
                        return new Unmapped(real.allocate(size), next[0]);
                    }

                    @Override
                    public void free(Chunk chunk) {
                        frees.incrementAndGet();
                        real.free(((Unmapped) chunk).real());
                    }

                    @Override
                    public void close() {
                        real.close();
                    }
                };
            }
        };
        try (Conduit conduit = isolated().addPlugin(throwing).build()) {
            Pool pool = conduit.pool("inproc");
            Exception thrown = next[0];
            assertThatThrownBy(() -> pool.allocate(4096)).isInstanceOf(ConduitException.class)
                    .hasMessage(failure("inproc", "its chunk's segment()", thrown)).hasCause(thrown);
            assertThat(frees).hasValue(1);
            next[0] = new IOException("/dev/dax0.0: Input/output error");
            assertThatThrownBy(() -> pool.allocate(4096)).as("a checked exception thrown undeclared").isInstanceOf(ConduitException.class)
                    .hasMessage(failure("inproc", "its chunk's segment()", next[0])).hasCause(next[0]);
            assertThat(frees).hasValue(2);
        }
    }
}
