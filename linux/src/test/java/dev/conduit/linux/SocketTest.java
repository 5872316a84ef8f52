package dev.conduit.linux;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Arrays;

import static dev.conduit.linux.MemfdFlags.MFD_ALLOW_SEALING;
import static dev.conduit.linux.MmapFlags.MAP_SHARED;
import static dev.conduit.linux.MmapFlags.PROT_READ;
import static dev.conduit.linux.MmapFlags.PROT_WRITE;
import static dev.conduit.linux.PollEvents.POLLIN;
import static dev.conduit.linux.PollEvents.POLLOUT;
import static dev.conduit.linux.SocketFlags.SOCK_NONBLOCK;
import static dev.conduit.linux.SocketFlags.SOCK_STREAM;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** AF_UNIX sockets: descriptor passing, peer credentials, truncation, non-blocking I/O, poll. */
class SocketTest {
    private static final long SIZE = 4096;

    private final Libc libc = Linux.libc();

    @Test
    void memfdPassedOverASocketpairMapsTheSameMemoryAndKeepsItsSeals() {
        try (SocketPair pair = libc.socketpair(SOCK_STREAM);
             FileDescriptor memfd = sealedMemfd("conduit-pass");
             Arena arena = Arena.ofConfined()) {
            MemorySegment original = libc.mmap(memfd, 0, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, arena);
            original.set(JAVA_LONG, 0, 0xC0FFEEL);

            assertThat(libc.sendmsg(pair.first(), bytes("t"), memfd)).isEqualTo(1);
            ReceivedMessage message = libc.recvmsg(pair.second(), arena.allocate(16), 4);

            assertThat(message.bytes()).isEqualTo(1);
            assertThat(message.controlTruncated()).isFalse();
            assertThat(message.fds()).hasSize(1);
            try (FileDescriptor received = message.fds().getFirst()) {
                assertThat(received.fd()).isNotEqualTo(memfd.fd());
                assertThat(libc.seals(received)).isEqualTo(Seals.FIXED_SIZE);
                assertThat(libc.fstat(received).inode()).isEqualTo(libc.fstat(memfd).inode());
                MemorySegment imported = libc.mmap(received, 0, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, arena);
                assertThat(imported.get(JAVA_LONG, 0)).isEqualTo(0xC0FFEEL);
                imported.set(JAVA_LONG, 8, 99);
                assertThat(original.get(JAVA_LONG, 8)).isEqualTo(99);
                assertThatThrownBy(() -> libc.ftruncate(received, SIZE * 2))
                        .isInstanceOfSatisfying(ErrnoException.class, e -> assertThat(e.errno()).isEqualTo(Errno.EPERM));
            }
        }
    }

    @Test
    void descriptorsTravelOverABoundSocketAndPeerCredentialsNameUs(@TempDir Path directory) {
        String path = directory.resolve("conduit.sock").toString();
        try (FileDescriptor listener = libc.socket(SOCK_STREAM);
             FileDescriptor client = libc.socket(SOCK_STREAM);
             FileDescriptor memfd = sealedMemfd("conduit-bound");
             Arena arena = Arena.ofConfined()) {
            libc.bind(listener, path);
            libc.listen(listener, 8);
            libc.connect(client, path);
            try (FileDescriptor server = libc.accept(listener, 0)) {
                PeerCredentials peer = libc.peerCredentials(server);
                assertThat(peer.pid()).isEqualTo(ProcessHandle.current().pid()).isEqualTo(libc.getpid());
                assertThat(peer.uid()).isEqualTo(libc.geteuid());
                assertThat(libc.peerCredentials(client)).isEqualTo(peer);

                libc.mmap(memfd, 0, SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, arena).set(JAVA_LONG, 16, 1234);
                byte[] token = "token-0123456789".getBytes(StandardCharsets.US_ASCII);
                // A heap segment is fine for sendmsg/recvmsg: they copy through native memory.
                assertThat(libc.sendmsg(server, MemorySegment.ofArray(token), memfd)).isEqualTo(token.length);
                byte[] into = new byte[64];
                ReceivedMessage message = libc.recvmsg(client, MemorySegment.ofArray(into), 1);

                assertThat(message.bytes()).isEqualTo(token.length);
                assertThat(new String(into, 0, message.bytes(), StandardCharsets.US_ASCII)).isEqualTo("token-0123456789");
                try (FileDescriptor received = message.fds().getFirst()) {
                    assertThat(libc.seals(received)).isEqualTo(Seals.FIXED_SIZE);
                    MemorySegment imported = libc.mmap(received, 0, SIZE, PROT_READ, MAP_SHARED, arena);
                    assertThat(imported.get(JAVA_LONG, 16)).isEqualTo(1234);
                }
            }
        }
    }

    @Test
    void descriptorsThatDoNotFitAreClosedAndReported() {
        long before = OpenFds.count();
        try (SocketPair pair = libc.socketpair(SOCK_STREAM);
             FileDescriptor a = libc.eventfd(0, 0);
             FileDescriptor b = libc.eventfd(0, 0);
             FileDescriptor c = libc.eventfd(0, 0);
             Arena arena = Arena.ofConfined()) {
            MemorySegment buffer = arena.allocate(8);

            // No room at all: the kernel drops them and sets MSG_CTRUNC.
            libc.sendmsg(pair.first(), bytes("0"), a);
            ReceivedMessage none = libc.recvmsg(pair.second(), buffer, 0);
            assertThat(none.bytes()).isEqualTo(1);
            assertThat(none.controlTruncated()).isTrue();
            assertThat(none.fds()).isEmpty();
            assertThat(none.closedFds()).isZero();

            // Room for one (CMSG_SPACE(4) fits two): two are installed, MSG_CTRUNC; both closed here.
            libc.sendmsg(pair.first(), bytes("1"), a, b, c);
            long during = OpenFds.count();
            ReceivedMessage truncated = libc.recvmsg(pair.second(), buffer, 1);
            assertThat(truncated.controlTruncated()).isTrue();
            assertThat(truncated.fds()).isEmpty();
            assertThat(truncated.closedFds()).isEqualTo(2);
            assertThat(OpenFds.count()).isEqualTo(during);

            // Two fit the buffer but one was asked for: also reported and closed, not handed out.
            libc.sendmsg(pair.first(), bytes("2"), a, b);
            ReceivedMessage extra = libc.recvmsg(pair.second(), buffer, 1);
            assertThat(extra.controlTruncated()).isTrue();
            assertThat(extra.closedFds()).isEqualTo(2);
        }
        assertThat(OpenFds.count()).isEqualTo(before);
    }

    /**
     * A datagram or seqpacket message longer than the buffer loses its tail in the kernel
     * ({@code MSG_TRUNC}): until 2026-12-07 recvmsg handed out the part that fit, and the
     * descriptors with it, as if it were the whole message.
     */
    @Test
    void aMessageLongerThanTheBufferIsRefusedNamingBothAndItsDescriptorsClosed() {
        for (int type : new int[] {SocketFlags.SOCK_SEQPACKET, SocketFlags.SOCK_DGRAM}) {
            long before = OpenFds.count();
            try (SocketPair pair = libc.socketpair(type);
                 FileDescriptor passed = libc.eventfd(0, 0);
                 Arena arena = Arena.ofConfined()) {
                libc.sendmsg(pair.first(), bytes("0123456789abcdef"), passed);
                long during = OpenFds.count();
                assertThatThrownBy(() -> libc.recvmsg(pair.second(), arena.allocate(8), 1))
                        .isInstanceOfSatisfying(ErrnoException.class, e -> {
                            assertThat(e.errno()).isEqualTo(Errno.EMSGSIZE);
                            assertThat(e.call()).isEqualTo("recvmsg");
                        })
                        .hasMessageContaining("longer than the buffer of 8 bytes")
                        .hasMessageContaining("MSG_TRUNC")
                        .hasMessageContaining("1 descriptor that came with it was closed");
                assertThat(OpenFds.count()).isEqualTo(during);

                // A message that fits is received whole, as before.
                libc.sendmsg(pair.first(), bytes("01234567"));
                ReceivedMessage whole = libc.recvmsg(pair.second(), arena.allocate(8), 1);
                assertThat(whole.bytes()).isEqualTo(8);
            }
            assertThat(OpenFds.count()).isEqualTo(before);
        }
    }

    @Test
    void sendingDescriptorsWithoutDataIsRefused() {
        try (SocketPair pair = libc.socketpair(SOCK_STREAM)) {
            assertThatThrownBy(() -> libc.sendmsg(pair.first(), MemorySegment.ofArray(new byte[0]), pair.second()))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("at least one byte");
        }
    }

    @Test
    void nonBlockingSocketsReportWouldBlock(@TempDir Path directory) {
        String path = directory.resolve("nb.sock").toString();
        try (SocketPair pair = libc.socketpair(SOCK_STREAM | SOCK_NONBLOCK);
             FileDescriptor listener = libc.socket(SOCK_STREAM | SOCK_NONBLOCK);
             Arena arena = Arena.ofConfined()) {
            MemorySegment buffer = arena.allocate(8);
            assertThat(libc.recv(pair.first(), buffer, 0)).isEqualTo(Libc.WOULD_BLOCK);
            assertThat(libc.read(pair.first(), buffer)).isEqualTo(Libc.WOULD_BLOCK);
            assertThat(libc.recvmsg(pair.first(), buffer, 1).wouldBlock()).isTrue();
            assertThat(libc.fileStatusFlags(pair.first()) & OpenFlags.O_NONBLOCK).isNotZero();

            libc.bind(listener, path);
            libc.listen(listener, 1);
            assertThat(libc.accept(listener, 0)).isNull();

            libc.setNonBlocking(pair.second(), false);
            assertThat(libc.fileStatusFlags(pair.second()) & OpenFlags.O_NONBLOCK).isZero();
        }
    }

    @Test
    void pollSeesReadabilityAndEndOfStream() {
        try (SocketPair pair = libc.socketpair(SOCK_STREAM);
             Arena arena = Arena.ofConfined()) {
            assertThat(libc.poll(pair.first(), POLLIN, 0)).isZero();
            assertThat(libc.poll(pair.first(), POLLOUT, 0)).isEqualTo(POLLOUT);

            MemorySegment message = arena.allocateFrom("hello");
            assertThat(libc.send(pair.second(), message, 0)).isEqualTo((int) message.byteSize());
            assertThat(libc.poll(pair.first(), POLLIN, -1)).isEqualTo(POLLIN);

            int[] revents = new int[2];
            assertThat(libc.poll(new FileDescriptor[] {pair.first(), pair.second()}, new int[] {POLLIN, POLLIN}, revents, 0))
                    .isEqualTo(1);
            assertThat(revents).containsExactly(POLLIN, 0);

            MemorySegment into = arena.allocate(16);
            assertThat(libc.recv(pair.first(), into, 0)).isEqualTo((int) message.byteSize());
            assertThat(into.getString(0)).isEqualTo("hello");

            pair.second().close();
            assertThat(libc.poll(pair.first(), POLLIN, -1) & POLLIN).isNotZero();
            assertThat(libc.read(pair.first(), into)).isZero();
            assertThat(libc.recvmsg(pair.first(), into, 1).isEndOfStream()).isTrue();
            assertThatThrownBy(() -> libc.send(pair.first(), message, 0))
                    .isInstanceOfSatisfying(ErrnoException.class, e -> assertThat(e.errno()).isEqualTo(Errno.EPIPE));
        }
    }

    @Test
    void aSocketPathLongerThanSunPathIsAClearError(@TempDir Path directory) {
        String path = directory.resolve("d".repeat(120) + ".sock").toString();
        try (FileDescriptor socket = libc.socket(SOCK_STREAM)) {
            assertThatThrownBy(() -> libc.connect(socket, path))
                    .isInstanceOfSatisfying(ErrnoException.class, e -> {
                        assertThat(e.errno()).isEqualTo(Errno.ENAMETOOLONG);
                        assertThat(e.call()).isEqualTo("connect");
                        assertThat(e.subject()).isEqualTo(path);
                        assertThat(e.getMessage())
                                .contains('"' + path + '"')
                                .contains("ENAMETOOLONG (File name too long)")
                                .contains("at most 107");
                    });
            assertThatThrownBy(() -> libc.bind(socket, path))
                    .isInstanceOfSatisfying(ErrnoException.class, e -> assertThat(e.errno()).isEqualTo(Errno.ENAMETOOLONG));
        }
    }

    /** sun_path holds 108 bytes: a path of 107 and its NUL fit, and are bound and connected to, not refused as too long. */
    @Test
    void aSocketPathThatFillsSunPathIsBoundAndConnected(@TempDir Path directory) {
        String prefix = directory + "/";
        String path = prefix + "s".repeat(SocketFlags.SUN_PATH_MAX - prefix.length());
        assertThat(path.getBytes(StandardCharsets.UTF_8)).hasSize(SocketFlags.SUN_PATH_MAX);
        try (FileDescriptor listener = libc.socket(SOCK_STREAM);
             FileDescriptor client = libc.socket(SOCK_STREAM)) {
            libc.bind(listener, path);
            libc.listen(listener, 1);
            libc.connect(client, path);
            try (FileDescriptor server = libc.accept(listener, 0)) {
                assertThat(libc.peerCredentials(server).pid()).isEqualTo(libc.getpid());
            }
        }
    }

    /** SCM_MAX_FD (253) is the kernel's limit for one message: that many travel; one more is refused before any call. */
    @Test
    void aMessageCarriesScmMaxFdDescriptorsButNotOneMore() {
        try (SocketPair pair = libc.socketpair(SOCK_STREAM);
             FileDescriptor eventfd = libc.eventfd(0, 0);
             Arena arena = Arena.ofConfined()) {
            FileDescriptor[] most = new FileDescriptor[253];
            Arrays.fill(most, eventfd);
            assertThat(libc.sendmsg(pair.first(), bytes("m"), most)).isEqualTo(1);
            ReceivedMessage message = libc.recvmsg(pair.second(), arena.allocate(1), 253);
            message.fds().forEach(FileDescriptor::close);
            assertThat(message.controlTruncated()).isFalse();
            assertThat(message.fds()).hasSize(253);

            FileDescriptor[] tooMany = Arrays.copyOf(most, 254);
            assertThatThrownBy(() -> libc.sendmsg(pair.first(), bytes("x"), tooMany))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("254 descriptors, at most 253");
            assertThatThrownBy(() -> libc.recvmsg(pair.second(), arena.allocate(1), 254))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxFds 254 is not in [0, 253]");
        }
    }

    @Test
    void connectingToNobodyIsRefused(@TempDir Path directory) {
        String path = directory.resolve("nobody.sock").toString();
        try (FileDescriptor socket = libc.socket(SOCK_STREAM)) {
            assertThatThrownBy(() -> libc.connect(socket, path))
                    .isInstanceOfSatisfying(ErrnoException.class, e -> {
                        assertThat(e.errno()).isEqualTo(Errno.ENOENT);
                        assertThat(e.getMessage()).startsWith("connect(" + socket + ", {AF_UNIX, \"" + path + "\"}): ENOENT");
                    });
        }
    }

    @Test
    void aPathWithNulIsRefusedRatherThanCut(@TempDir Path directory) {
        try (FileDescriptor socket = libc.socket(SOCK_STREAM)) {
            assertThatThrownBy(() -> libc.bind(socket, directory + "/a\0b"))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("NUL");
        }
    }

    private FileDescriptor sealedMemfd(String name) {
        FileDescriptor memfd = libc.memfdCreate(name, MFD_ALLOW_SEALING);
        libc.ftruncate(memfd, SIZE);
        libc.addSeals(memfd, Seals.FIXED_SIZE);
        return memfd;
    }

    private static MemorySegment bytes(String text) {
        byte[] bytes = text.getBytes(StandardCharsets.US_ASCII);
        MemorySegment segment = Arena.ofAuto().allocate(bytes.length);
        MemorySegment.copy(bytes, 0, segment, JAVA_BYTE, 0, bytes.length);
        return segment;
    }

    /** The kernel writes through a segment's address: a read-only view of writable memory used to be written into. */
    @Test
    void readRecvAndRecvmsgRefuseAReadOnlySegment() {
        try (SocketPair pair = libc.socketpair(SocketFlags.SOCK_STREAM);
             Arena arena = Arena.ofConfined()) {
            MemorySegment memory = arena.allocate(8);
            MemorySegment view = memory.asReadOnly();
            libc.write(pair.first(), arena.allocateFrom(java.lang.foreign.ValueLayout.JAVA_LONG, 42));

            assertThatThrownBy(() -> libc.read(pair.second(), view)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("read into a read-only segment");
            assertThatThrownBy(() -> libc.recv(pair.second(), view, 0)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("recv into a read-only segment");
            assertThatThrownBy(() -> libc.recvmsg(pair.second(), view, 0)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("recvmsg into a read-only segment");
            assertThat(memory.get(java.lang.foreign.ValueLayout.JAVA_LONG, 0)).as("nothing was written").isZero();
            assertThat(libc.read(pair.second(), memory)).as("the bytes are still there").isEqualTo(8);
        }
    }
}
