package dev.conduit.it.transport;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.Worker;
import dev.conduit.it.ipc.ShmDir;
import dev.conduit.spi.ThreadMode;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * Endpoint.send: "If it throws, nothing is sent ..., the exception propagates as it is, and this
 * endpoint stays as it was". An encoder that copies from a file of the application's own, mapped
 * and then truncated by someone, faults (SIGBUS, the JDK's InternalError), at any size: into the
 * runtime's buffer (up to 1 KiB), into the peer's queue (up to inline.max), into the bounce ring.
 * Until 2026-12-07 ShmEndpoint took every InternalError out of its zero-copy send, the encoder's
 * too, for a fault of its own queue or ring, failed the healthy endpoint as DAMAGED and threw that
 * PeerFailedException in place of the encoder's error.
 */
class EncoderFaultOverShmTest {

    @ParameterizedTest
    @ValueSource(longs = {1024, 4096, 65536})
    void anEncoderThatFaultsOnItsOwnTruncatedMappingLeavesTheEndpointAsItWasAtAnySize(long maxLength,
            @TempDir(factory = ShmDir.class) Path shared, @TempDir Path own) throws IOException {
        Path file = own.resolve("application-data");
        Files.write(file, new byte[8192]);
        try (Conduit conduit = Setup.conduit(shared, "posix"); Arena arena = Arena.ofConfined()) {
            Worker sender = conduit.newWorker(ThreadMode.SINGLE);
            Worker receiver = conduit.newWorker(ThreadMode.SINGLE);
            Endpoint endpoint = sender.connect(receiver.address());
            MemorySegment source;
            try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
                source = channel.map(FileChannel.MapMode.READ_WRITE, 0, 8192, arena);
                channel.truncate(0);
            }

            Throwable thrown = catchThrowable(() -> endpoint.send(9, MemorySegment.NULL, maxLength, target -> {
                MemorySegment.copy(source, 0, target, 0, 8);
                return 8;
            }));

            assertThat(thrown).as("what a send of maxLength %d threw, whose encoder faulted on its own mapping", maxLength)
                    .isInstanceOf(InternalError.class);
            assertThat(endpoint.isFailed()).as("whether the endpoint failed, whose encoder faulted on the application's own mapping (maxLength %d)",
                    maxLength).isFalse();
        }
    }
}
