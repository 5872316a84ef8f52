package dev.conduit.it.transport;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.Worker;
import dev.conduit.it.ipc.ShmDir;
import dev.conduit.it.process.ChildJvm;
import dev.conduit.spi.ThreadMode;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * The plain send's side of EncoderFaultOverShmTest: a payload or header segment that is a file of
 * the application's own, mapped and then truncated by someone, faults (SIGBUS, the JDK's
 * InternalError) as the transport copies it, into the peer's queue (up to inline.max) or into the
 * bounce ring. The fault is the application's memory's, not the peer's queue's nor the ring's: the
 * endpoint stays as it was and the fault comes out as it is, as an encoder's does
 * (plugin-authoring.md). Until 2026-12-07 ShmEndpoint.trySend took every InternalError of the send
 * for one of its own mappings and failed the healthy endpoint as DAMAGED, at every size.
 */
class PayloadFaultOverShmTest {

    @ParameterizedTest
    @ValueSource(longs = {64, 4096, 65536})
    void aPayloadOfTheApplicationsOwnTruncatedMappingFaultsTheSendAndLeavesTheEndpointAsItWas(long size,
            @TempDir(factory = ShmDir.class) Path shared, @TempDir Path own) throws IOException {
        try (Conduit conduit = Setup.conduit(shared, "posix"); Arena arena = Arena.ofConfined()) {
            Endpoint endpoint = connected(conduit);
            MemorySegment payload = truncatedMapping(own, size, arena);

            Throwable thrown = catchThrowable(() -> endpoint.send(9, MemorySegment.NULL, payload));

            assertThat(thrown).as("what a send of a %d-byte payload threw, which faulted on the application's own mapping", size)
                    .isInstanceOf(InternalError.class);
            assertThat(endpoint.isFailed()).as("whether the endpoint failed, whose %d-byte payload faulted on the application's own "
                    + "mapping", size).isFalse();
        }
    }

    /** The header's copy: into the message's record, inline or beside a payload in the bounce ring. */
    @ParameterizedTest
    @ValueSource(ints = {64, 65536})
    void aHeaderOfTheApplicationsOwnTruncatedMappingFaultsTheSendAndLeavesTheEndpointAsItWas(int payloadSize,
            @TempDir(factory = ShmDir.class) Path shared, @TempDir Path own) throws IOException {
        try (Conduit conduit = Setup.conduit(shared, "posix"); Arena arena = Arena.ofConfined()) {
            Endpoint endpoint = connected(conduit);
            MemorySegment header = truncatedMapping(own, 64, arena);

            Throwable thrown = catchThrowable(() -> endpoint.send(9, header, MemorySegment.ofArray(new byte[payloadSize])));

            assertThat(thrown).as("what a send with a %d-byte payload threw, whose header faulted on the application's own mapping",
                    payloadSize).isInstanceOf(InternalError.class);
            assertThat(endpoint.isFailed()).as("whether the endpoint failed, whose header faulted on the application's own mapping "
                    + "(payload %d bytes)", payloadSize).isFalse();
        }
    }

    /**
     * The same faults once the JIT compiled the send: compiled code gets a fault at its next
     * safepoint check, which may lie past the copy's {@code try}, past the record's commit: the
     * peer then received a message of stale queue bytes, and the send failed the healthy endpoint
     * as DAMAGED. A forked JVM, C2 only and compiling as it waits ({@code -Xbatch}), warms the send
     * up on the mapping before truncating it.
     */
    @ParameterizedTest
    @ValueSource(strings = {"payload-8", "payload-64", "header-64", "encoded-header-64"})
    void aCompiledSendOfATruncatedMappingOfTheApplicationsDeliversNothingAndFailsNothing(String mapped,
            @TempDir(factory = ShmDir.class) Path shared, @TempDir Path own) throws IOException {
        String output = ChildJvm.runToEnd(CompiledSendFaultPeer.class, List.of("-XX:-TieredCompilation", "-Xbatch"),
                List.of(shared.toString(), own.toString(), mapped)).output();
        assertThat(output)
                .contains("send-of-the-truncated-mapping-threw: InternalError")
                .contains("received-of-the-truncated-mapping: 0")
                .contains("endpoint-failed: false")
                .contains("received-after: 1, value -1")
                .contains("alive: yes");
    }

    private static Endpoint connected(Conduit conduit) {
        Worker sender = conduit.newWorker(ThreadMode.SINGLE);
        Worker receiver = conduit.newWorker(ThreadMode.SINGLE);
        return sender.connect(receiver.address());
    }

    /** {@code size} bytes of a file of the application's own, mapped, the file then truncated to nothing. */
    private static MemorySegment truncatedMapping(Path own, long size, Arena arena) throws IOException {
        Path file = own.resolve("application-data");
        Files.write(file, new byte[(int) size]);
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            MemorySegment mapping = channel.map(FileChannel.MapMode.READ_WRITE, 0, size, arena);
            channel.truncate(0);
            return mapping;
        }
    }
}
