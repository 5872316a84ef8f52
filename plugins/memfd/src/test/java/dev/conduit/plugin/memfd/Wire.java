package dev.conduit.plugin.memfd;

import dev.conduit.linux.FileDescriptor;
import dev.conduit.linux.Libc;
import dev.conduit.linux.PollEvents;
import dev.conduit.linux.ReceivedMessage;
import dev.conduit.linux.SocketFlags;
import dev.conduit.shm.SharedDirectory;

import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.function.Function;

/** The fd server's protocol spoken by hand: a raw client, and a fake server that answers what a test tells it to. */
final class Wire {
    private static final int WAIT_MILLIS = 10_000;
    private static final int PIECE_PAUSE_MILLIS = 50;

    private Wire() {}

    /** What a server answered: the bytes until it closed, and the descriptors that came with them. */
    record Reply(byte[] bytes, List<FileDescriptor> fds) implements AutoCloseable {
        int status() {
            return bytes[0] & 0xFF;
        }

        @Override
        public void close() {
            fds.forEach(FileDescriptor::close);
        }
    }

    /**
     * Connects to {@code socketPath}, sends {@code request}, and reads until the server closes. An
     * empty request is a client that sends nothing: no send at all, which a server that refuses it
     * as it connects and closes would otherwise make fail now and then with {@code EPIPE}.
     */
    static Reply exchange(Libc libc, String socketPath, byte[] request) {
        try (FileDescriptor socket = libc.socket(SocketFlags.SOCK_STREAM)) {
            libc.connect(socket, socketPath);
            if (request.length > 0) libc.sendmsg(socket, MemorySegment.ofArray(request));
            byte[] buffer = new byte[64];
            int received = 0;
            List<FileDescriptor> fds = new ArrayList<>();
            while (true) {
                if (libc.poll(socket, PollEvents.POLLIN, WAIT_MILLIS) == 0) {
                    fds.forEach(FileDescriptor::close);
                    throw new AssertionError("no reply within " + WAIT_MILLIS + " ms");
                }
                ReceivedMessage message = libc.recvmsg(socket, MemorySegment.ofArray(buffer).asSlice(received), 4);
                fds.addAll(message.fds());
                if (message.bytes() <= 0) {
                    return new Reply(Arrays.copyOf(buffer, received), fds);
                }
                received += message.bytes();
            }
        }
    }

    /** One {@code sendmsg} of a {@link FakeServer}'s answer: bytes, and the descriptors that travel with them. */
    record Piece(byte[] bytes, List<FileDescriptor> fds) {}

    /** What a {@link FakeServer} sends, one {@code sendmsg} per piece; the descriptors stay the test's to close. */
    record Answer(List<Piece> pieces) {
        /** The reply in one piece, with {@code fd} if it is not {@code null}. */
        Answer(byte[] reply, FileDescriptor fd) {
            this(List.of(new Piece(reply, fd == null ? List.of() : List.of(fd))));
        }
    }

    /**
     * A server in the shared directory under a valid fd server socket name that answers one
     * connection with whatever {@code answer} makes of the request.
     */
    static final class FakeServer implements AutoCloseable {
        private final Libc libc;
        private final SharedDirectory directory;
        private final String name;
        private final FileDescriptor listener;
        private final Thread thread;

        FakeServer(Libc libc, Path sharedDirectory, Function<byte[], Answer> answer) {
            this.libc = libc;
            this.directory = SharedDirectory.open(libc, sharedDirectory, "test");
            this.name = FdProtocol.FILE_PREFIX + "-" + SharedDirectory.randomId() + "-" + SharedDirectory.randomId().substring(0, 16)
                    + FdProtocol.SOCKET_SUFFIX;
            this.listener = libc.socket(SocketFlags.SOCK_STREAM);
            libc.bind(listener, sharedDirectory.resolve(name).toString());
            libc.listen(listener, 4);
            this.thread = Thread.ofPlatform().name("fake-fd-server").start(() -> serveOne(answer));
        }

        String name() {
            return name;
        }

        /** A payload that points at this server. */
        byte[] payload(byte[] token) {
            return new MemfdPayload(name, token, null).encode();
        }

        private void serveOne(Function<byte[], Answer> answer) {
            if (libc.poll(listener, PollEvents.POLLIN, WAIT_MILLIS) == 0) {
                return;
            }
            try (FileDescriptor connection = libc.accept(listener, 0)) {
                byte[] request = new byte[FdProtocol.REQUEST_LENGTH];
                int received = 0;
                while (received < request.length) {
                    ReceivedMessage message = libc.recvmsg(connection, MemorySegment.ofArray(request).asSlice(received), 0);
                    if (message.bytes() <= 0) {
                        break;
                    }
                    received += message.bytes();
                }
                Answer a = answer.apply(Arrays.copyOf(request, received));
                for (int i = 0; i < a.pieces().size(); i++) {
                    if (i > 0) {
                        pauseBetweenPieces(); // so that the client most likely reads them apart
                    }
                    Piece piece = a.pieces().get(i);
                    libc.sendmsg(connection, MemorySegment.ofArray(piece.bytes()), piece.fds().toArray(FileDescriptor[]::new));
                }
            }
        }

        private static void pauseBetweenPieces() {
            try {
                Thread.sleep(PIECE_PAUSE_MILLIS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted between the pieces of an answer", e);
            }
        }

        /** Waits for the one exchange, then removes the socket. Idempotent. */
        @Override
        public void close() {
            try {
                thread.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted waiting for the fake server", e);
            }
            if (!listener.isOpen()) {
                return;
            }
            listener.close();
            directory.unlink(name);
            directory.close();
        }
    }
}
