package dev.conduit.plugin.posix;

import dev.conduit.linux.Errno;
import dev.conduit.linux.FileDescriptor;
import dev.conduit.linux.Libc;
import dev.conduit.linux.Linux;
import dev.conduit.linux.OpenFlags;
import dev.conduit.shm.DirectoryIdentity;
import dev.conduit.shm.UserNamespace;
import dev.conduit.spi.Chunk;
import dev.conduit.spi.ChunkMapping;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ConfigException;
import dev.conduit.spi.InvalidHandleException;
import dev.conduit.spi.IpcImporter;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.PayloadWriter;
import dev.conduit.tck.TestContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assumptions.assumeThat;

class PosixImporterTest {

    @TempDir(factory = ShmTempDirFactory.class)
    Path shared;

    private final PosixPlugin plugin = new PosixPlugin();
    private MemoryProvider provider;
    private IpcImporter importer;
    private long page;

    @BeforeEach
    void open() {
        provider = plugin.openMemoryProvider(TestContext.of(shared));
        importer = plugin.ipcImporter(TestContext.of(shared));
        page = provider.pageSize();
    }

    @AfterEach
    void close() {
        provider.close();
    }

    @Test
    @SuppressWarnings("try")
    void mapsAnExportAndBothSidesSeeEachOthersWrites() {
        Chunk chunk = provider.allocate(2 * page);
        byte[] payload = provider.export(chunk);

        try (ChunkMapping mapping = importer.map(reader(payload), 2 * page)) {
            assertThat(mapping.segment().byteSize()).isEqualTo(2 * page);
            assertThat(mapping.segment().address()).isNotEqualTo(chunk.segment().address());
            assertThat(mapping.mayFault()).as("a file any writer may truncate").isTrue();

            chunk.segment().set(JAVA_LONG, 8, 0x1122334455667788L);
            assertThat(mapping.segment().get(JAVA_LONG, 8)).isEqualTo(0x1122334455667788L);
            mapping.segment().set(JAVA_LONG, 2 * page - 8, -7L);
            assertThat(chunk.segment().get(JAVA_LONG, 2 * page - 8)).isEqualTo(-7L);

            mapping.close(); // before the try's own close: closing twice is allowed
            assertThatThrownBy(() -> mapping.segment().get(JAVA_LONG, 0)).isInstanceOf(IllegalStateException.class);
            assertThat(chunk.segment().get(JAVA_LONG, 8)).isEqualTo(0x1122334455667788L);
        }
    }

    @Test
    void mappingsMadeBeforeFreeStayValidAfterIt() {
        Chunk chunk = provider.allocate(page);
        byte[] payload = provider.export(chunk);
        chunk.segment().set(JAVA_LONG, 0, 99L);
        try (ChunkMapping mapping = importer.map(reader(payload), page)) {
            provider.free(chunk);
            assertThat(mapping.segment().get(JAVA_LONG, 0)).isEqualTo(99L);
            mapping.segment().set(JAVA_LONG, 0, 100L);
        }
    }

    @Test
    void needsNoProviderOnlyAFileOfTheRightSize() throws IOException {
        String name = chunkName("made-by-hand");
        Path file = shared.resolve(name);
        Files.write(file, new byte[(int) page]);
        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-------"));

        IpcImporter fresh = new PosixPlugin().ipcImporter(TestContext.of(shared));
        byte[] payload = ExportPayload.encode(name, NO_DIRECTORY, (long) Files.getAttribute(file, "unix:dev"),
                (long) Files.getAttribute(file, "unix:ino"));
        try (ChunkMapping mapping = fresh.map(reader(payload), page)) {
            mapping.segment().set(JAVA_LONG, 0, 5L);
        }
        assertThat(Files.readAllBytes(file)[0]).isEqualTo((byte) 5);
    }

    /**
     * A handle is bytes any peer can send; the file it names should be a chunk a posix provider
     * exports, {@code conduit-posix-<owner>-<random>.chunk} directly in the directory, as the memfd
     * payload's socket name must be its fd server's. Any other file of this user beneath the
     * directory (another application's segment in /dev/shm, whose size ls -l shows to everyone;
     * a file in a subdirectory) is no export, and mapping it read-write hands its contents to the
     * consumer and its writes to the file.
     */
    @Test
    void refusesAFileOfThisUserThatNoProviderExports() throws IOException {
        byte[] secret = new byte[(int) page];
        secret[0] = 42;
        Path segment = Files.write(shared.resolve("another-apps-segment"), secret);
        Files.setPosixFilePermissions(segment, PosixFilePermissions.fromString("rw-------"));
        Path nested = Files.write(Files.createDirectory(shared.resolve("sub")).resolve("nested"), secret);
        Files.setPosixFilePermissions(nested, PosixFilePermissions.fromString("rw-------"));

        for (String name : List.of("another-apps-segment", "sub/nested")) {
            assertThatThrownBy(() -> {
                try (ChunkMapping mapping = importer.map(reader(payloadNaming(name)), page)) {
                    mapping.segment().set(JAVA_LONG, 8, -1L); // what a consumer writes lands in the file
                    throw new AssertionError(name + " was mapped: its first byte reads " + mapping.segment().get(
                            java.lang.foreign.ValueLayout.JAVA_BYTE, 0));
                }
            }).as(name)
                    .isInstanceOfSatisfying(InvalidHandleException.class, e -> assertThat(e.field()).isEqualTo("payload.path"))
                    .hasMessageContaining("'" + name + "' is not the name of a posix chunk file (expected "
                            + "conduit-posix-<owner>-<random>.chunk, directly in the chunk directory)");
        }
        assertThat(Files.readAllBytes(segment)).as("the segment, unchanged").isEqualTo(secret);
    }

    /**
     * A directory shared with a container's other user is writable by both; without the sticky bit
     * (chmod +t, as /dev/shm has), that user may rename this user's files in it though it owns none.
     * Renaming one chunk over the name of another of the same length makes the handle of the second
     * map the first: what its consumer reads and writes is another export's. The handle names the
     * file by name alone, and the file's checks (type, owner, length) all pass.
     */
    @Test
    void aChunkThatAnotherUserRenamedOverTheExportedOneIsRefused() throws Exception {
        assumeThat(Linux.libc().geteuid()).as("runs the renaming user through setpriv").isZero();
        Files.setPosixFilePermissions(shared, PosixFilePermissions.fromString("rwxrwxrwx"));
        Chunk exported = provider.allocate(page);
        Chunk another = provider.allocate(page);
        byte[] payload = provider.export(exported);
        String anotherName = fileName(provider.export(another));
        another.segment().set(JAVA_LONG, 0, 0x5EC2E7L);

        Process mv = new ProcessBuilder("setpriv", "--reuid=4321", "--regid=4321", "--clear-groups", "--",
                "mv", shared.resolve(anotherName).toString(), shared.resolve(fileName(payload)).toString())
                .redirectErrorStream(true).start();
        assertThat(mv.waitFor()).as(new String(mv.getInputStream().readAllBytes())).isZero();

        assertThatThrownBy(() -> {
            try (ChunkMapping mapping = importer.map(reader(payload), page)) {
                throw new AssertionError("mapped the chunk renamed over the exported one: it reads 0x"
                        + Long.toHexString(mapping.segment().get(JAVA_LONG, 0)));
            }
        }).isExactlyInstanceOf(ConduitException.class)
                .hasMessageStartingWith("refusing to map " + shared.resolve(fileName(payload)) + ": the file there is not the one the "
                        + "handle's producer exported (it is device ")
                .hasMessageContaining("it was replaced since, by a user who may write " + shared)
                .hasMessageEndingWith("Keep " + shared + " writable by this user alone, or make it sticky (chmod +t, as /dev/shm is)");
    }

    @Test
    void eachProcessUsesItsOwnViewOfTheDirectory(@TempDir Path elsewhere) throws IOException {
        // A container sees the host's directory at another path: only the name travels.
        Path containerView = Files.createSymbolicLink(elsewhere.resolve("shm-as-mounted-in-the-container"), shared);
        Chunk chunk = provider.allocate(page);
        chunk.segment().set(JAVA_LONG, 0, 77L);
        byte[] payload = provider.export(chunk);

        for (TestContext consumer : List.of(TestContext.of(containerView), TestContext.of(elsewhere, "posix.dir", containerView.toString()))) {
            try (ChunkMapping mapping = plugin.ipcImporter(consumer).map(reader(payload), page)) {
                assertThat(mapping.segment().get(JAVA_LONG, 0)).isEqualTo(77L);
            }
        }
    }

    static Stream<Arguments> malformedPayloads() {
        return Stream.of(
                Arguments.of("empty", new byte[0], "payload.version", "truncated"),
                Arguments.of("future version", new PayloadWriter().u8(4).string("a.chunk").toByteArray(), "payload.version",
                        "posix export payload version 4, where this process's Conduit reads only version 3: the producer runs a newer Conduit than this process; upgrade this process"),
                Arguments.of("version 2, the file named by name alone", new PayloadWriter().u8(2).string(chunkName("a")).u64(1).u64(2).u64(3)
                        .toByteArray(), "payload.version", "posix export payload version 2, where this process's Conduit reads only "
                        + "version 3: the producer runs an older Conduit than this process; upgrade the producer"),
                Arguments.of("version 1", new PayloadWriter().u8(1).string(chunkName("a")).toByteArray(), "payload.version",
                        "posix export payload version 1, where this process's Conduit reads only version 3"),
                Arguments.of("no path", new byte[] {3}, "payload.path.length", "truncated"),
                Arguments.of("path cut short", new byte[] {3, 9, 0, 'a', 'b'}, "payload.path", "truncated"),
                Arguments.of("empty path", new byte[] {3, 0, 0}, "payload.path", "empty path"),
                Arguments.of("parent escape", payloadNaming("../../etc/passwd"), "payload.path", "'..'"),
                Arguments.of("inner parent", payloadNaming("sub/../x.chunk"), "payload.path", "'..'"),
                Arguments.of("absolute path", payloadNaming("/etc/passwd"), "payload.path", "absolute path"),
                Arguments.of("odd character", payloadNaming("a b.chunk"), "payload.path", "outside [A-Za-z0-9._-]"),
                Arguments.of("too long", payloadNaming("a".repeat(300)), "payload.path", "exceeds the maximum 255"),
                Arguments.of("no directory", new PayloadWriter().u8(3).string(chunkName("a")).toByteArray(), "payload.directory.device",
                        "truncated"),
                Arguments.of("directory cut short", new PayloadWriter().u8(3).string(chunkName("a")).u64(1).u64(2).u32(3).toByteArray(),
                        "payload.directory.birth", "truncated"),
                Arguments.of("no file", new PayloadWriter().u8(3).string(chunkName("a")).u64(1).u64(2).u64(3).toByteArray(),
                        "payload.chunk.device", "truncated"),
                Arguments.of("file cut short", new PayloadWriter().u8(3).string(chunkName("a")).u64(1).u64(2).u64(3).u64(4).u32(5)
                        .toByteArray(), "payload.chunk.inode", "truncated"),
                Arguments.of("trailing bytes", payloadWith(chunkName("a"), 0), "payload.end", "1 unexpected trailing bytes"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("malformedPayloads")
    void refusesMalformedPayloadsNamingTheFieldBeforeOpeningAnything(String what, byte[] payload, String field, String message) {
        long descriptors = ProcessResources.openDescriptors();
        assertThatThrownBy(() -> importer.map(reader(payload), page))
                .isInstanceOfSatisfying(InvalidHandleException.class, e -> assertThat(e.field()).isEqualTo(field))
                .hasMessageContaining(message);
        assertThat(ProcessResources.openDescriptors()).isEqualTo(descriptors);
    }

    @Test
    void refusesASymlinkPlantedInTheDirectory() throws IOException {
        Chunk chunk = provider.allocate(page);
        Path target = shared.resolve(fileName(provider.export(chunk)));
        Files.createSymbolicLink(shared.resolve(chunkName("planted")), target);
        Files.createSymbolicLink(shared.resolve(chunkName("passwd")), Path.of("/etc/passwd"));

        for (String name : List.of(chunkName("planted"), chunkName("passwd"))) {
            assertThatThrownBy(() -> importer.map(reader(payloadNaming(name)), page))
                    .as(name)
                    .isInstanceOfSatisfying(InvalidHandleException.class, e -> assertThat(e.field()).isEqualTo("payload.path"))
                    .hasMessageContaining("symbolic link");
        }
    }

    @Test
    void refusesWhatIsNotARegularFile() throws Exception {
        Files.createDirectory(shared.resolve(chunkName("dir")));
        assertThatThrownBy(() -> importer.map(reader(payloadNaming(chunkName("dir"))), page))
                .isInstanceOfSatisfying(InvalidHandleException.class, e -> assertThat(e.field()).isEqualTo("payload.path"))
                .hasMessageContaining("is not a regular file (a directory)");

        Path fifo = shared.resolve(chunkName("fifo"));
        assumeThat(new ProcessBuilder("mkfifo", fifo.toString()).inheritIO().start().waitFor()).as("mkfifo available").isZero();
        long descriptors = ProcessResources.openDescriptors();
        for (int i = 0; i < 3; i++) {
            assertThatThrownBy(() -> importer.map(reader(payloadNaming(chunkName("fifo"))), page))
                    .isInstanceOfSatisfying(InvalidHandleException.class, e -> assertThat(e.field()).isEqualTo("payload.path"))
                    .hasMessageContaining("not a regular file (a FIFO)");
        }
        assertThat(ProcessResources.openDescriptors()).as("the FIFO opened for fstat is closed").isEqualTo(descriptors);
    }

    /**
     * A device node under a chunk's name (a container's root makes one in a bind-mounted directory with Docker's default
     * CAP_MKNOD) is refused as no regular file without being opened: its driver acts on an open (a watchdog's arms the
     * host's watchdog). Here /dev/null's numbers, whose open succeeds: the importer opened it read-write and looked at
     * its type after (found by helper h35).
     */
    @Test
    void refusesADeviceNodeUnderAChunksNameWithoutOpeningIt() throws Exception {
        Path device = shared.resolve(chunkName("device"));
        assumeThat(new ProcessBuilder("mknod", device.toString(), "c", "1", "3").inheritIO().start().waitFor()).as("mknod (CAP_MKNOD)")
                .isZero();
        List<String> opens = java.util.Collections.synchronizedList(new ArrayList<>());
        IpcImporter recorded = new PosixImporter(FailingLibc.recordingOpens(opens), PosixConfig.of(TestContext.of(shared)), true);
        assertThatThrownBy(() -> recorded.map(reader(payloadNaming(chunkName("device"))), page))
                .isInstanceOfSatisfying(InvalidHandleException.class, e -> assertThat(e.field()).isEqualTo("payload.path"))
                .hasMessageContaining("not a regular file (a character device)");
        assertThat(opens).as("opens of more than a look (the shared directory's own aside)")
                .filteredOn(open -> !open.equals("open " + shared)).isEmpty();
    }

    /**
     * A Unix socket under a chunk's name does not open at all (ENXIO), so fstat never saw it: the
     * import failed with "cannot open ...: ENXIO (No such device or address); check the directory
     * set by shared.dir", a ConduitException that blamed the configuration, where every other file
     * type is refused as the handle's payload.path, naming what it is.
     */
    @Test
    void refusesASocketUnderAChunksName() {
        Libc libc = Linux.libc();
        try (dev.conduit.linux.FileDescriptor socket = libc.socket(dev.conduit.linux.SocketFlags.SOCK_STREAM)) {
            libc.bind(socket, shared.resolve(chunkName("s")).toString()); // a short name: sun_path holds 107 bytes
            assertThatThrownBy(() -> importer.map(reader(payloadNaming(chunkName("s"))), page))
                    .isInstanceOfSatisfying(InvalidHandleException.class, e -> assertThat(e.field()).isEqualTo("payload.path"))
                    .hasMessageContaining("not a regular file (a socket)");
        }
    }

    @Test
    void aFreedExportIsGoneWithAClearMessage() {
        Chunk chunk = provider.allocate(page);
        byte[] payload = provider.export(chunk);
        String name = fileName(payload);
        provider.free(chunk);

        var thrown = assertThatThrownBy(() -> importer.map(reader(payload), page))
                .isExactlyInstanceOf(ConduitException.class)
                .hasMessageStartingWith("export gone: " + shared.resolve(name) + " does not exist")
                .hasMessageContaining("producer freed the chunk or died");
        if (ShmTransportTest.recordsBirthTimes(shared)) {
            // The handle names the directory this process looked in: no configuration to check.
            thrown.hasMessageContaining(" does not exist, in the very directory the handle names (device ")
                    .hasMessageNotContaining("CONDUIT_SHARED_DIR");
        } else {
            thrown.hasMessageContaining("shared.dir (CONDUIT_SHARED_DIR)");
        }
    }

    /** Where the handle's directory cannot be told from this one (no birth time recorded) and its file is not found, both causes are said. */
    @Test
    void aNameThatWasNeverExportedIsGoneToo() throws IOException {
        DirectoryIdentity sameButUnborn = new DirectoryIdentity((long) Files.getAttribute(shared, "unix:dev"),
                (long) Files.getAttribute(shared, "unix:ino"), 0);
        byte[] payload = ExportPayload.encode(chunkName("never-exported"), sameButUnborn, 0, 0);
        assertThatThrownBy(() -> importer.map(reader(payload), page))
                .isExactlyInstanceOf(ConduitException.class)
                .hasMessageStartingWith("export gone: " + shared.resolve(chunkName("never-exported")) + " does not exist. ")
                .hasMessageContaining("If the producer is alive, check that shared.dir (CONDUIT_SHARED_DIR) or posix.dir "
                        + "(CONDUIT_POSIX_DIR) shows this process the same directory as the producer's");
    }

    /**
     * A consumer whose posix.dir is another directory than the producer's is told so, naming both:
     * it was told "export gone", the producer freed the chunk or died, "if the producer is alive,
     * check" the configuration, leaving the user to guess which.
     */
    @Test
    void aConsumerLookingAtAnotherDirectoryIsToldSoNamingBoth(@TempDir Path other) {
        byte[] payload = provider.export(provider.allocate(page));
        IpcImporter misconfigured = plugin.ipcImporter(TestContext.of(shared, "posix.dir", other.toString()));
        assertThatThrownBy(() -> misconfigured.map(reader(payload), page))
                .isExactlyInstanceOf(ConduitException.class)
                .hasMessageStartingWith("cannot import: the handle names a chunk of another directory than this process's " + other
                        + " (posix.dir (CONDUIT_POSIX_DIR)), where " + fileName(payload) + " is not found (ENOENT): the producer's "
                        + "directory is device ")
                .hasMessageContaining(", this one device ")
                .hasMessageContaining(". Set posix.dir (CONDUIT_POSIX_DIR) in each process to the path at which it sees one directory");
    }

    /**
     * A chunk length that is no length is the handle's fault, refused as its {@code chunk.length}
     * before anything is opened; it would otherwise reach the file's size check, which blames the
     * file ("the handle does not describe this file"), or mmap.
     */
    @Test
    void refusesAChunkLengthThatIsNotPositiveNamingTheFieldBeforeOpeningAnything() {
        byte[] payload = provider.export(provider.allocate(page));
        long descriptors = ProcessResources.openDescriptors();
        for (long length : new long[] {0, -page}) {
            assertThatThrownBy(() -> importer.map(reader(payload), length))
                    .as("chunk.length %d", length)
                    .isInstanceOfSatisfying(InvalidHandleException.class, e -> assertThat(e.field()).isEqualTo("chunk.length"))
                    .hasMessageContaining(length + " is not a positive length");
        }
        assertThat(ProcessResources.openDescriptors()).isEqualTo(descriptors);
        assertThat(ProcessResources.mappingsOf(shared)).as("the producer's own").isEqualTo(1);
    }

    @Test
    void refusesAFileWhoseSizeDiffersFromTheChunkLength() throws IOException {
        Chunk chunk = provider.allocate(2 * page);
        byte[] payload = provider.export(chunk);

        assertThatThrownBy(() -> importer.map(reader(payload), 4 * page))
                .isInstanceOf(ConduitException.class)
                .hasMessageContaining("the file is " + 2 * page + " bytes long but the handle's chunk.length is " + 4 * page)
                .hasMessageContaining("SIGBUS");
        assertThatThrownBy(() -> importer.map(reader(payload), page))
                .hasMessageContaining("the handle does not describe this file");

        // A producer (or anyone with write access) truncates the file after exporting it.
        try (FileChannel file = FileChannel.open(shared.resolve(fileName(payload)), StandardOpenOption.WRITE)) {
            file.truncate(page);
        }
        assertThatThrownBy(() -> importer.map(reader(payload), 2 * page))
                .hasMessageContaining("crash this process with SIGBUS on access past byte " + page);
        assertThat(ProcessResources.mappingsOf(shared)).isEqualTo(1); // the producer's own
    }

    /**
     * The directory's descriptor failing to close once the chunk is mapped ({@code EBADF}: something
     * closed its number; {@code EIO}) left {@code map} with the mapping made and returned to no one:
     * mapped until the JVM's end. It is unmapped now, and the failure names the chunk and the errno.
     */
    @Test
    void aDirectoryThatFailsToCloseAfterTheChunkIsMappedLeavesNothingMappedAndNamesChunkAndErrno() {
        Chunk chunk = provider.allocate(page);
        byte[] payload = provider.export(chunk);
        AtomicInteger directory = new AtomicInteger(-1);
        Libc closingTheDirectory = FailingLibc.seeing((call, args) -> {
            if (call.equals("openBeneath") && directory.get() < 0) directory.set(((FileDescriptor) args[0]).fd());
            // Its number closed behind its back: the importer's own close of it then fails with EBADF.
            if (call.equals("mmap")) FileDescriptor.adopt(directory.get(), "the importer's directory").close();
        });
        IpcImporter importing = new PosixImporter(closingTheDirectory, PosixConfig.of(TestContext.of(shared)), true);
        long descriptors = ProcessResources.openDescriptors();

        Throwable failure = org.assertj.core.api.Assertions.catchThrowable(() -> importing.map(reader(payload), page));
        assertThat(ProcessResources.mappingsOf(shared)).as("the producer's own only").isEqualTo(1);
        assertThat(ProcessResources.openDescriptors()).isEqualTo(descriptors);
        assertThat(failure).isInstanceOf(ConduitException.class)
                .hasMessageContaining(shared.resolve(fileName(payload)).toString()).hasMessageContaining("EBADF");
    }

    /** A file of this user, mode 0600, whose open is refused all the same: something other than the mode bits refused (SELinux on a bind mount, most likely). */
    @Test
    void aRefusedOpenThatOwnerAndModeDoNotExplainNamesWhatElseRefuses() {
        Chunk chunk = provider.allocate(page);
        byte[] payload = provider.export(chunk);
        IpcImporter underSelinux = new PosixImporter(FailingLibc.failing("openBeneath", Errno.EACCES), PosixConfig.of(TestContext.of(shared)), true);
        assertThatThrownBy(() -> underSelinux.map(reader(payload), page)).isInstanceOf(ConduitException.class)
                .hasMessageContaining("EACCES").hasMessageContaining("The file is this user's and its mode is 0600")
                .hasMessageContaining("so something else refused: usually a security module").hasMessageContaining("docker run -v DIR:DIR:z")
                .hasMessageContaining("ausearch -m avc").hasMessageContaining("lsattr");
    }

    /**
     * This process's uid made the overflow uid of its namespace (a container run as nobody): a file
     * showing that uid is mapped once setting {@code O_NOATIME}, which only the owner may, proves it
     * this user's, and refused, mapping nothing, when that fails: {@code EPERM}, another user's;
     * another errno (a security module's {@code EACCES}), nothing proven. {@code CrossProcessTest}
     * has the real namespace, and a read-only mount, where the proof works all the same.
     */
    @Test
    void aProcessRunningAsItsNamespacesOverflowUidMapsOnlyAFileItProvesItsOwn() {
        long self = Integer.toUnsignedLong(Linux.libc().geteuid());
        UserNamespace selfIsOverflow = UserNamespace.of(List.of(self + " 1000 1"), self);
        Chunk chunk = provider.allocate(page);
        chunk.segment().set(JAVA_LONG, 0, 77L);
        byte[] payload = provider.export(chunk);
        PosixConfig config = PosixConfig.of(TestContext.of(shared));
        try (ChunkMapping proven = new PosixImporter(Linux.libc(), config, true, () -> selfIsOverflow).map(reader(payload), page)) {
            assertThat(proven.segment().get(JAVA_LONG, 0)).isEqualTo(77L);
        }
        IpcImporter ofAnotherUser = new PosixImporter(settingNoAtimeFails(Errno.EPERM), config, true, () -> selfIsOverflow);
        assertThatThrownBy(() -> ofAnotherUser.map(reader(payload), page)).isInstanceOf(ConduitException.class)
                .hasMessageContaining("it shows as uid " + self + ", this process's own, but this process runs as the overflow uid of its "
                        + "user namespace (uid " + self + " here, 1000 in the parent user namespace)")
                .hasMessageContaining("(fcntl: EPERM)").hasMessageContaining("the file belongs to one of those users")
                .hasMessageContaining("Run the producer as this process's user, or run this process as a uid other than " + self
                        + " (kernel.overflowuid), or use memfd, whose importer here needs " + self + " in memfd.trusted.uids, which "
                        + "trusts every one of those users");
        IpcImporter refusedBySecurityModule = new PosixImporter(settingNoAtimeFails(Errno.EACCES), config, true, () -> selfIsOverflow);
        assertThatThrownBy(() -> refusedBySecurityModule.map(reader(payload), page)).isInstanceOf(ConduitException.class)
                .hasMessageContaining("setting O_NOATIME on the file, which proves a file its own there, failed").hasMessageContaining("EACCES")
                .hasMessageContaining("run this process as a uid other than " + self);
        try (ChunkMapping initial = new PosixImporter(settingNoAtimeFails(Errno.EPERM), config, true,
                () -> UserNamespace.of(List.of("0 0 4294967295"), 65534)).map(reader(payload), page)) {
            assertThat(initial.segment().get(JAVA_LONG, 0)).as("outside a user namespace the uid is proof: no O_NOATIME").isEqualTo(77L);
        }
    }

    /** The real libc, except that setting {@code O_NOATIME} (the importer's proof of ownership) fails with {@code errno}. */
    private static Libc settingNoAtimeFails(int errno) {
        return FailingLibc.failingFor("setFileStatusFlags", errno, args -> ((int) args[1] & OpenFlags.O_NOATIME) != 0);
    }

    /** A file of this user whose mode no longer lets it read and write: the message says the mode changed, and blames nothing else. */
    @Test
    void aRefusedOpenOfAnOwnFileWhoseModeDeniesItSaysTheModeChanged() throws IOException {
        Chunk chunk = provider.allocate(page);
        byte[] payload = provider.export(chunk);
        Files.setPosixFilePermissions(shared.resolve(fileName(payload)), java.nio.file.attribute.PosixFilePermissions.fromString("r--------"));
        IpcImporter refused = new PosixImporter(FailingLibc.failing("openBeneath", Errno.EACCES), PosixConfig.of(TestContext.of(shared)), true);
        assertThatThrownBy(() -> refused.map(reader(payload), page)).isInstanceOf(ConduitException.class)
                .hasMessageContaining("The file is this user's, but its permissions deny it reading and writing")
                .hasMessageNotContaining("security module");
    }

    @Test
    void refusesFilesOfOtherUsersUnlessTrusted() throws IOException {
        assumeThat(Linux.libc().geteuid()).as("root can give files away").isZero();
        Chunk chunk = provider.allocate(page);
        byte[] payload = provider.export(chunk);
        Files.setAttribute(shared.resolve(fileName(payload)), "unix:uid", 4321);

        assertThatThrownBy(() -> importer.map(reader(payload), page))
                .isInstanceOf(ConduitException.class)
                .hasMessageContaining("belongs to uid 4321, not to this process's uid 0 nor to a trusted one (none)")
                .hasMessageContaining("posix.trusted.uids (CONDUIT_POSIX_TRUSTED_UIDS)");

        IpcImporter trusting = plugin.ipcImporter(TestContext.of(shared, "posix.trusted.uids", "1000, 4321"));
        try (ChunkMapping mapping = trusting.map(reader(payload), page)) {
            assertThat(mapping.segment().byteSize()).isEqualTo(page);
        }
    }

    @Test
    void explainsAFileThisUserMayNotOpen() throws Exception {
        byte[] payload = provider.export(provider.allocate(page));
        Files.setPosixFilePermissions(shared.resolve(fileName(payload)), PosixFilePermissions.fromString("---------"));
        if (WithoutDacOverride.needed()) {
            // Root opens any file: import from a JVM without the capabilities that let it.
            assertThat(WithoutDacOverride.run("import", shared.toString(), java.util.HexFormat.of().formatHex(payload), Long.toString(page)))
                    .contains("EACCES").contains("The file is this user's, but its permissions deny it reading and writing");
            return;
        }
        assertThatThrownBy(() -> importer.map(reader(payload), page))
                .hasMessageContaining("EACCES")
                .hasMessageContaining("The file is this user's, but its permissions deny it reading and writing");
    }

    /**
     * A container's {@code -v DIR:DIR:ro}: opening the chunk for writing fails with EROFS, so the
     * import maps it read-only and reads what the producer wrote. It used to fail with EROFS.
     */
    @Test
    void anImportThroughAReadOnlyMountMapsTheChunkReadOnly() throws Exception {
        Chunk chunk = provider.allocate(page);
        chunk.segment().set(JAVA_LONG, 0, 4321L);
        byte[] payload = provider.export(chunk);
        String output = WithoutDacOverride.runInAReadOnlyMount(shared, "import", shared.toString(),
                java.util.HexFormat.of().formatHex(payload), Long.toString(page));
        assertThat(output).as(output).contains("4321 read-only");
        assertThat(chunk.segment().get(JAVA_LONG, 8)).as("nothing written").isZero();
    }

    /**
     * What a transport maps through its importer (a peer's receive queue, a bounce ring) it writes:
     * a chunk that opens only for reading (EROFS) is refused, naming the errno, where the runtime's
     * importer maps it read-only. A transport used to get a read-only queue, on which every send
     * then failed with the JDK's "Attempt to write a read-only segment" (found by review).
     */
    @Test
    void aTransportsImporterRefusesAChunkThatOpensOnlyForReading() {
        byte[] payload = provider.export(provider.allocate(page));
        AtomicBoolean firstOpen = new AtomicBoolean(true);
        // As through a read-only mount: the open for writing fails with EROFS, the one for reading would not.
        Libc readOnlyMount = FailingLibc.failingWhile("openBeneath", Errno.EROFS, () -> firstOpen.getAndSet(false));

        IpcImporter forATransport = new PosixImporter(readOnlyMount, PosixConfig.of(TestContext.of(shared)), false);
        assertThatThrownBy(() -> forATransport.map(reader(payload), page)).isInstanceOf(ConduitException.class)
                .hasMessageContaining("EROFS").hasMessageContaining(shared + " is mounted read-only in this process")
                .hasMessageContaining("mount it read-write here");
        firstOpen.set(true);
        IpcImporter forImports = new PosixImporter(readOnlyMount, PosixConfig.of(TestContext.of(shared)), true);
        try (ChunkMapping mapping = forImports.map(reader(payload), page)) {
            assertThat(mapping.segment().isReadOnly()).isTrue();
        }
        assertThat(ProcessResources.mappingsOf(shared)).as("the producer's own").isEqualTo(1);
    }

    @Test
    void refusesMalformedTrustedUids() {
        for (String bad : List.of("root", "-1", "4294967295", "1000;1001")) {
            assertThatThrownBy(() -> plugin.ipcImporter(TestContext.of(shared, "posix.trusted.uids", bad)))
                    .as(bad)
                    .isInstanceOf(ConfigException.class)
                    .hasMessageContaining("conduit.posix.trusted.uids (CONDUIT_POSIX_TRUSTED_UIDS)")
                    .hasMessageContaining("e.g. 1000,1001");
        }
    }

    @Test
    void aMissingDirectoryNamesPathErrnoAndKey() {
        Path missing = shared.resolve("not-mounted");
        IpcImporter lost = plugin.ipcImporter(TestContext.of(shared, "posix.dir", missing.toString()));
        assertThatThrownBy(() -> lost.map(reader(payloadNaming(chunkName("x"))), page))
                .isInstanceOf(ConduitException.class)
                .hasMessageContaining(missing.toString())
                .hasMessageContaining("ENOENT")
                .hasMessageContaining("posix.dir (CONDUIT_POSIX_DIR)");
    }

    @Test
    void isSafeToCallFromManyThreadsAtOnce() throws Exception {
        int threads = 8;
        Chunk chunk = provider.allocate(page);
        byte[] payload = provider.export(chunk);
        CountDownLatch start = new CountDownLatch(1);
        try (ExecutorService executor = Executors.newFixedThreadPool(threads)) {
            List<Future<?>> results = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                long slot = t;
                results.add(executor.submit(() -> {
                    start.await();
                    for (int i = 0; i < 20; i++) {
                        try (ChunkMapping mapping = importer.map(reader(payload), page)) {
                            mapping.segment().set(JAVA_LONG, slot * 8, slot + 1);
                        }
                    }
                    return null;
                }));
            }
            start.countDown();
            for (Future<?> result : results) result.get();
        }
        for (int t = 0; t < threads; t++) {
            assertThat(chunk.segment().get(JAVA_LONG, t * 8L)).isEqualTo(t + 1L);
        }
        assertThat(ProcessResources.mappingsOf(shared)).isEqualTo(1);
    }

    private static final DirectoryIdentity NO_DIRECTORY = new DirectoryIdentity(0, 0, 0);

    /** A payload of this version naming {@code path}, followed by {@code trailing}. */
    private static byte[] payloadWith(String path, int trailing) {
        return new PayloadWriter().bytes(payloadNaming(path)).u8(trailing).toByteArray();
    }

    static PayloadReader reader(byte[] payload) {
        return new PayloadReader(payload, 0, payload.length, "payload.");
    }

    /** A payload of this version naming {@code path} (written as given), of no directory and no file: refused before either matters. */
    static byte[] payloadNaming(String path) {
        return ExportPayload.encode(path, NO_DIRECTORY, 0, 0);
    }

    /** A name of the form a provider gives its chunks ({@code conduit-posix-<owner>-<random>.chunk}), {@code random} being {@code label}. */
    static String chunkName(String label) {
        return PosixMemoryProvider.FILE_PREFIX + "-" + "0".repeat(32) + "-" + label + PosixMemoryProvider.CHUNK_SUFFIX;
    }

    static String fileName(byte[] payload) {
        return ExportPayload.decode(reader(payload)).path();
    }
}
