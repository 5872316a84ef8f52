package dev.conduit.linux;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.List;

import static dev.conduit.linux.OpenFlags.O_CREAT;
import static dev.conduit.linux.OpenFlags.O_RDWR;
import static dev.conduit.linux.SocketFlags.SOCK_STREAM;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Every path that creates descriptors, in a loop, leaves the descriptor table as it found it; and
 * every descriptor made or received is close-on-exec, so that no child process inherits one.
 */
class DescriptorLeakTest {
    private static final int ROUNDS = 200;

    private final Libc libc = Linux.libc();

    @Test
    void openAndCloseLeakNothing(@TempDir Path directory) {
        String path = directory.resolve("file").toString();
        String missing = directory.resolve("missing").toString();
        warmUp(path);
        long before = OpenFds.count();
        for (int i = 0; i < ROUNDS; i++) {
            try (FileDescriptor file = libc.open(path, O_RDWR | O_CREAT, 0600)) {
                libc.flock(file, LockFlags.LOCK_EX);
            }
            assertThatThrownBy(() -> libc.open(missing, O_RDWR, 0)).isInstanceOf(ErrnoException.class);
        }
        assertThat(OpenFds.count()).isEqualTo(before);
    }

    @Test
    void socketsAndPassedDescriptorsLeakNothing(@TempDir Path directory) {
        String path = directory.resolve("s.sock").toString();
        warmUp(directory.resolve("file").toString());
        long before = OpenFds.count();
        try (FileDescriptor listener = libc.socket(SOCK_STREAM);
             Arena arena = Arena.ofConfined()) {
            libc.bind(listener, path);
            libc.listen(listener, 4);
            MemorySegment buffer = arena.allocate(8);
            for (int i = 0; i < ROUNDS; i++) {
                try (FileDescriptor client = libc.socket(SOCK_STREAM)) {
                    libc.connect(client, path);
                    try (FileDescriptor server = libc.accept(listener, 0);
                         FileDescriptor memfd = libc.memfdCreate("leak", MemfdFlags.MFD_ALLOW_SEALING);
                         FileDescriptor eventfd = libc.eventfd(0, 0)) {
                        libc.ftruncate(memfd, 4096);
                        libc.sendmsg(server, buffer, memfd, eventfd);
                        ReceivedMessage message = libc.recvmsg(client, buffer, 2);
                        message.fds().forEach(FileDescriptor::close);
                    }
                }
                try (SocketPair pair = libc.socketpair(SOCK_STREAM)) {
                    libc.sendmsg(pair.first(), buffer, pair.second(), pair.first());
                    libc.recvmsg(pair.second(), buffer, 0);
                }
            }
        }
        assertThat(OpenFds.count()).isEqualTo(before);
    }

    /** The descriptors used to be wrapped before the bytes were copied out, and leaked when the copy failed. */
    @Test
    void descriptorsReceivedForABufferThatCannotTakeTheBytesAreClosed(@TempDir Path directory) {
        warmUp(directory.resolve("file").toString());
        long before = OpenFds.count();
        MemorySegment gone;
        try (Arena closed = Arena.ofConfined()) {
            gone = closed.allocate(8);
        }
        for (int i = 0; i < ROUNDS; i++) {
            try (SocketPair pair = libc.socketpair(SOCK_STREAM);
                 FileDescriptor memfd = libc.memfdCreate("leak-recv", MemfdFlags.MFD_ALLOW_SEALING);
                 Arena arena = Arena.ofConfined()) {
                libc.sendmsg(pair.first(), arena.allocate(8), memfd);
                assertThatThrownBy(() -> libc.recvmsg(pair.second(), gone, 1)).isInstanceOf(IllegalStateException.class);
            }
        }
        assertThat(OpenFds.count()).isEqualTo(before);
    }

    @Test
    void mappingsOutliveTheirDescriptor() {
        long before = OpenFds.count();
        for (int i = 0; i < ROUNDS; i++) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment mapping;
                try (FileDescriptor memfd = libc.memfdCreate("leak-map", MemfdFlags.MFD_ALLOW_SEALING)) {
                    libc.ftruncate(memfd, 4096);
                    mapping = libc.mmap(memfd, 0, 4096, MmapFlags.PROT_READ | MmapFlags.PROT_WRITE, MmapFlags.MAP_SHARED, arena);
                }
                mapping.set(JAVA_INT, 0, i);
            }
        }
        assertThat(OpenFds.count()).isEqualTo(before);
    }

    /**
     * A descriptor without close-on-exec outlives an {@code exec} in every child the process starts (a helper run
     * by a plugin, a shell of the application): the child holds the shared memory, the socket or the lock.
     */
    @Test
    void everyDescriptorMadeOrReceivedIsCloseOnExecSoNoChildProcessInheritsIt(@TempDir Path directory) {
        String path = directory.resolve("s.sock").toString();
        try (FileDescriptor dir = libc.open(directory.toString(), OpenFlags.O_RDONLY | OpenFlags.O_DIRECTORY, 0);
             FileDescriptor file = libc.open(directory.resolve("file").toString(), O_RDWR | O_CREAT, 0600);
             FileDescriptor atFile = libc.openat(dir, "file", O_RDWR, 0);
             FileDescriptor beneathFile = libc.openBeneath(dir, "file", O_RDWR, 0);
             FileDescriptor memfd = libc.memfdCreate("cloexec", MemfdFlags.MFD_ALLOW_SEALING);
             FileDescriptor eventfd = libc.eventfd(0, 0);
             SocketPair pair = libc.socketpair(SOCK_STREAM);
             FileDescriptor listener = libc.socket(SOCK_STREAM);
             FileDescriptor client = libc.socket(SOCK_STREAM);
             Arena arena = Arena.ofConfined()) {
            libc.bind(listener, path);
            libc.listen(listener, 1);
            libc.connect(client, path);
            try (FileDescriptor server = libc.accept(listener, 0)) {
                libc.sendmsg(pair.first(), arena.allocate(1), memfd);
                try (FileDescriptor received = libc.recvmsg(pair.second(), arena.allocate(1), 1).fds().getFirst()) {
                    assertThat(List.of(file, atFile, beneathFile, memfd, eventfd, pair.first(), pair.second(), listener,
                            server, received))
                            .allSatisfy(fd -> assertThat(OpenFds.isCloseOnExec(fd)).as("close-on-exec of %s", fd).isTrue());
                }
            }
        }
    }

    /** Binds the handles first: loading classes may open jar files, which would count as leaks. */
    private void warmUp(String path) {
        try (FileDescriptor file = libc.open(path, O_RDWR | O_CREAT, 0600);
             SocketPair pair = libc.socketpair(SOCK_STREAM)) {
            libc.flock(file, LockFlags.LOCK_UN);
            libc.poll(pair.first(), PollEvents.POLLOUT, 0);
        }
    }
}
