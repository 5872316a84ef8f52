package dev.conduit.it.transport;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.Worker;
import dev.conduit.spi.PayloadEncoder;
import dev.conduit.spi.ThreadMode;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

/**
 * The process of {@link PayloadFaultOverShmTest#aCompiledSendOfATruncatedMappingOfTheApplicationsDeliversNothingAndFailsNothing}:
 * warms an inline send up on a mapped file of its own until the JIT compiled it, truncates the file
 * and sends from it again, then says on stdout what the send threw, what the receiver got, and
 * whether the endpoint failed. Arguments: the shared directory, a directory of its own, and which
 * segment of the send is the mapping: {@code payload-8} (the one-word store), {@code payload-64}
 * (the copy), {@code header-64}, or {@code encoded-header-64}: the header of an encoded send above
 * the runtime's 1 KiB, which the transport writes in its queue (below {@code inline.max}) after
 * the encoder.
 */
public final class CompiledSendFaultPeer {

    private static final int WARM_UP_SENDS = 60_000;
    private static final int ID = 7;

    private CompiledSendFaultPeer() {
    }

    public static void main(String[] args) throws Exception {
        Path shared = Path.of(args[0]);
        Path own = Path.of(args[1]);
        boolean header = args[2].contains("header");
        encoded = args[2].startsWith("encoded");
        int size = Integer.parseInt(args[2].substring(args[2].lastIndexOf('-') + 1));
        long[] received = {0};
        long[] lastValue = {0};
        try (Conduit conduit = Setup.conduit(shared, "posix"); Arena arena = Arena.ofShared()) {
            Worker sender = conduit.newWorker(ThreadMode.SINGLE);
            Worker receiver = conduit.newWorker(ThreadMode.SINGLE);
            receiver.onMessage(ID, m -> {
                received[0]++;
                lastValue[0] = header ? m.headerLong(0) : m.payloadLong(0);
            });
            Endpoint endpoint = sender.connect(receiver.address());
            FileChannel channel = FileChannel.open(own.resolve("application-data"), StandardOpenOption.CREATE,
                    StandardOpenOption.READ, StandardOpenOption.WRITE);
            channel.write(ByteBuffer.allocate(size), 0);
            MemorySegment mapping = channel.map(FileChannel.MapMode.READ_WRITE, 0, size, arena);
            for (int i = 1; i <= WARM_UP_SENDS; i++) {
                mapping.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, i);
                send(endpoint, header, mapping);
                while (received[0] < i) receiver.progress();
            }
            System.out.println("warmed-up: " + received[0] + ", last " + lastValue[0]);

            channel.truncate(0);
            long before = received[0];
            String thrown;
            try {
                send(endpoint, header, mapping);
                thrown = "nothing";
            } catch (Throwable t) {
                thrown = t.getClass().getSimpleName();
            }
            System.out.println("send-of-the-truncated-mapping-threw: " + thrown);
            for (int i = 0; i < 1_000; i++) receiver.progress();
            System.out.println("received-of-the-truncated-mapping: " + (received[0] - before));
            System.out.println("endpoint-failed: " + endpoint.isFailed());

            MemorySegment fine = MemorySegment.ofArray(new byte[size]);
            fine.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, -1L);
            send(endpoint, header, fine);
            for (int i = 0; i < 1_000 && received[0] == before; i++) receiver.progress();
            System.out.println("received-after: " + (received[0] - before) + ", value " + lastValue[0]);
            channel.close();
        }
        System.out.println("alive: yes");
    }

    private static boolean encoded;
    /** Writes a payload of its own, reading nothing of the mapping: only the header's copy may fault. */
    private static final PayloadEncoder ENCODER = target -> {
        target.set(ValueLayout.JAVA_LONG_UNALIGNED, 0, 1L);
        return Long.BYTES;
    };

    private static void send(Endpoint endpoint, boolean header, MemorySegment mapping) {
        if (encoded) endpoint.send(ID, mapping, 2_048, ENCODER);
        else if (header) endpoint.send(ID, mapping, MemorySegment.NULL);
        else endpoint.send(ID, MemorySegment.NULL, mapping);
    }
}
