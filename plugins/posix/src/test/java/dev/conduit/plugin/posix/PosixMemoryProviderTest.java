package dev.conduit.plugin.posix;

import dev.conduit.linux.Libc;
import dev.conduit.linux.Linux;
import dev.conduit.linux.SocketFlags;
import dev.conduit.linux.SocketPair;
import dev.conduit.spi.Chunk;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.spi.PayloadReader;
import dev.conduit.tck.BlockedCalls;
import dev.conduit.tck.TestContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.FutureTask;

import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class PosixMemoryProviderTest {

    private static final String HEX32 = "[0-9a-f]{32}";

    @TempDir(factory = ShmTempDirFactory.class)
    Path shared;

    private final PosixPlugin plugin = new PosixPlugin();

    @Test
    void allocatesZeroedPageAlignedChunksAsPrivateFilesInTheSharedDirectory() throws Exception {
        try (MemoryProvider provider = plugin.openMemoryProvider(TestContext.of(shared))) {
            long size = 4 * provider.pageSize();
            Chunk chunk = provider.allocate(size);

            MemorySegment segment = chunk.segment();
            assertThat(segment.byteSize()).isEqualTo(size);
            assertThat(segment.address() % provider.pageSize()).isZero();
            assertThat(segment.mismatch(MemorySegment.ofArray(new byte[(int) size]))).isEqualTo(-1);
            segment.set(JAVA_LONG, size - 8, 42L);

            List<String> chunks = chunkFiles();
            assertThat(chunks).singleElement().asString().matches("conduit-posix-" + HEX32 + "-" + HEX32 + "\\.chunk");
            Path file = shared.resolve(chunks.getFirst());
            assertThat(Files.size(file)).isEqualTo(size);
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(file))).isEqualTo("rw-------");
            assertThat(ProcessResources.files(shared)).filteredOn(n -> n.endsWith(".lease")).hasSize(1);
        }
    }

    @Test
    void exportNamesTheChunkFileRelativeToTheDirectory() throws IOException {
        try (MemoryProvider provider = plugin.openMemoryProvider(TestContext.of(shared))) {
            Chunk chunk = provider.allocate(provider.pageSize());
            byte[] payload = provider.export(chunk);

            PayloadReader reader = new PayloadReader(payload);
            assertThat(reader.u8("version")).isEqualTo(3);
            assertThat(reader.relativePath("path")).isEqualTo(chunkFiles().getFirst());
            try (var directory = dev.conduit.shm.SharedDirectory.open(dev.conduit.linux.Linux.libc(), shared, "shared.dir")) {
                assertThat(dev.conduit.shm.DirectoryIdentity.read(reader)).as("the directory the chunk is in")
                        .isEqualTo(dev.conduit.shm.DirectoryIdentity.of(dev.conduit.linux.Linux.libc(), directory.fd()));
            }
            Path file = shared.resolve(chunkFiles().getFirst());
            assertThat(reader.u64("chunk.device")).as("the file's device").isEqualTo(Files.getAttribute(file, "unix:dev"));
            assertThat(reader.u64("chunk.inode")).as("the file's inode").isEqualTo(Files.getAttribute(file, "unix:ino"));
            assertThat(reader.remaining()).isZero();
            assertThat(provider.export(chunk)).isEqualTo(payload);
        }
    }

    @Test
    void refusesSizesThatAreNotPositiveMultiplesOfThePageSize() {
        try (MemoryProvider provider = plugin.openMemoryProvider(TestContext.of(shared))) {
            for (long size : new long[] {0, -provider.pageSize(), provider.pageSize() + 1, 100}) {
                assertThatThrownBy(() -> provider.allocate(size))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("not a positive multiple of the page size " + provider.pageSize());
            }
            assertThat(chunkFiles()).isEmpty();
        }
    }

    @Test
    void refusesAChunkLargerThanTheFreeSpaceInsteadOfLettingATouchCrashWithSigbus() throws Exception {
        long free = Files.getFileStore(shared).getUsableSpace();
        try (MemoryProvider provider = plugin.openMemoryProvider(TestContext.of(shared))) {
            long tooLarge = (free / provider.pageSize() + 1) * provider.pageSize();
            assertThatThrownBy(() -> provider.allocate(tooLarge))
                    .isInstanceOf(ConduitException.class)
                    .hasMessageContaining("not enough space for a chunk of " + tooLarge + " bytes in " + shared + " (a file system of "
                            + Files.getFileStore(shared).getTotalSpace() + " bytes)")
                    .hasMessageContaining("--shm-size")
                    // What Conduit itself keeps there, which a small /dev/shm can take less of.
                    .hasMessageContaining("lower what Conduit keeps there (pool.chunk.size, posix.queue.size, posix.bounce.size)")
                    .hasMessageContaining("posix.dir (CONDUIT_POSIX_DIR)")
                    // A directory full of chunks this process freed, which importers' caches still map, shows no files.
                    .hasMessageContaining("lower ipc.cache.bytes or ipc.cache.idle in the importing processes");
            assertThat(chunkFiles()).isEmpty();
        }
    }

    /**
     * A chunk file the directory has no room to create (tmpfs's ENOSPC, of pages or of inodes) is
     * refused naming the file and the errno, and saying that chunks freed here may still take the
     * space, mapped by importers' IPC caches: a directory full of no files is otherwise a puzzle.
     */
    @Test
    void aChunkFileThatCannotBeCreatedForLackOfSpaceSaysFreedChunksMayStillTakeIt() {
        Libc full = FailingLibc.failingFor("openBeneath", dev.conduit.linux.Errno.ENOSPC,
                args -> ((String) args[1]).endsWith(PosixMemoryProvider.CHUNK_SUFFIX));
        try (MemoryProvider provider = PosixMemoryProvider.open(TestContext.of(shared), full)) {
            assertThatThrownBy(() -> provider.allocate(provider.pageSize()))
                    .isInstanceOf(ConduitException.class)
                    .hasMessageContaining("cannot create chunk file " + shared)
                    .hasMessageContaining("ENOSPC")
                    .hasMessageContaining("lower ipc.cache.bytes or ipc.cache.idle in the importing processes");
            assertThat(chunkFiles()).isEmpty();
        }
    }

    @Test
    void freeUnlinksAndUnmapsSoThatTheSegmentThrowsInsteadOfCrashing() {
        try (MemoryProvider provider = plugin.openMemoryProvider(TestContext.of(shared))) {
            Chunk kept = provider.allocate(provider.pageSize());
            Chunk freed = provider.allocate(provider.pageSize());

            provider.free(freed);

            assertThat(chunkFiles()).hasSize(1);
            assertThatThrownBy(() -> freed.segment().get(JAVA_LONG, 0)).isInstanceOf(IllegalStateException.class);
            assertThat(kept.segment().get(JAVA_LONG, 0)).isZero();
            assertThatThrownBy(() -> provider.free(freed))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("freed already");
            assertThatThrownBy(() -> provider.export(freed))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("was freed");
        }
    }

    @Test
    void closeFreesEveryChunkAndLeavesTheDirectoryEmpty() {
        MemoryProvider provider = plugin.openMemoryProvider(TestContext.of(shared));
        List<Chunk> chunks = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            Chunk chunk = provider.allocate(provider.pageSize() * (i + 1));
            provider.export(chunk);
            chunks.add(chunk);
        }
        provider.free(chunks.get(2));

        provider.close();

        assertThat(ProcessResources.files(shared)).isEmpty();
        for (Chunk chunk : chunks) {
            assertThatThrownBy(() -> chunk.segment().get(JAVA_LONG, 0)).isInstanceOf(IllegalStateException.class);
        }
        assertThatCode(provider::close).doesNotThrowAnyException();
        assertThatCode(() -> provider.free(chunks.getFirst())).doesNotThrowAnyException();
        assertThatThrownBy(() -> provider.allocate(provider.pageSize()))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
        assertThatThrownBy(() -> provider.export(chunks.getFirst()))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
    }

    /**
     * A pool whose lease a cleaner removed says so once, at its next allocation, naming the lease,
     * the chunk files no reclaim would remove should the process die, and the remedy; its chunks
     * work on and its close removes them. It used to say nothing (only a worker did, since
     * 2026-12-04).
     */
    @Test
    void aPoolWhoseLeaseACleanerRemovedSaysSoOnceAtItsNextAllocation() throws java.io.IOException {
        dev.conduit.tck.RecordingLogger recording = new dev.conduit.tck.RecordingLogger();
        MemoryProvider provider = PosixMemoryProvider.open(TestContext.of(shared).withLogger(recording), Linux.libc());
        Chunk first = provider.allocate(provider.pageSize());
        String lease = ProcessResources.files(shared).stream().filter(name -> name.endsWith(".lease")).findFirst().orElseThrow();
        assertThat(recording.warnings()).isEmpty();
        Files.delete(shared.resolve(lease));

        Chunk second = provider.allocate(provider.pageSize());
        provider.allocate(provider.pageSize());
        assertThat(recording.warnings()).singleElement().asString()
                .contains("posix: this process's pool's lease " + shared.resolve(lease) + " was removed from the shared directory")
                .contains("systemd-tmpfiles").contains("RemoveIPC=yes")
                .contains("no Conduit process reclaims the chunk files it made in " + shared)
                .contains("remove " + lease.substring(0, lease.length() - ".lease".length()) + "-* by hand then")
                .contains("Close the pool and open a new one").contains("keep such cleaners off " + shared);
        second.segment().set(java.lang.foreign.ValueLayout.JAVA_LONG, 0, 42);
        assertThat(second.segment().get(java.lang.foreign.ValueLayout.JAVA_LONG, 0)).isEqualTo(42);
        provider.free(first);
        provider.close();
        assertThat(ProcessResources.files(shared)).isEmpty();
        assertThat(recording.warnings()).as("said once").hasSize(1);
    }

    /**
     * A close that cannot remove a chunk's file ({@code unlinkat} fails with {@code EACCES}, as
     * when the directory's permissions changed while in use) throws as before, keeps the
     * provider's lease, unlocked, and warns naming the file, the errno and the reclaim that will
     * remove it: the next provider to open on the directory removes the file and then the lease.
     * The close used to remove the lease anyway, and the chunk file, which no lease named any more,
     * stayed in the directory (memory, on a tmpfs) for good.
     */
    @Test
    void aChunkFileTheCloseCannotRemoveIsReclaimedWithItsLeaseByTheNextProvider() {
        java.util.concurrent.atomic.AtomicBoolean refusing = new java.util.concurrent.atomic.AtomicBoolean();
        Libc libc = FailingLibc.failingFor("unlinkat", dev.conduit.linux.Errno.EACCES,
                args -> refusing.get() && ((String) args[1]).endsWith(PosixMemoryProvider.CHUNK_SUFFIX));
        dev.conduit.tck.RecordingLogger recording = new dev.conduit.tck.RecordingLogger();
        MemoryProvider provider = PosixMemoryProvider.open(TestContext.of(shared).withLogger(recording), libc);
        provider.free(provider.allocate(provider.pageSize()));
        provider.allocate(provider.pageSize());
        List<String> files = ProcessResources.files(shared);
        String chunk = files.stream().filter(name -> name.endsWith(PosixMemoryProvider.CHUNK_SUFFIX)).findFirst().orElseThrow();
        String lease = files.stream().filter(name -> name.endsWith(".lease")).findFirst().orElseThrow();
        refusing.set(true);

        assertThatThrownBy(provider::close).isInstanceOf(ConduitException.class)
                .hasMessageContaining("cannot remove " + shared.resolve(chunk)).hasMessageContaining("EACCES");
        assertThatCode(provider::close).doesNotThrowAnyException();

        assertThat(ProcessResources.files(shared)).containsExactlyInAnyOrder(chunk, lease);
        assertThat(recording.warnings()).singleElement().asString()
                .contains("cannot remove " + shared.resolve(chunk) + ": EACCES")
                .contains("the lease " + shared.resolve(lease) + " is kept, unlocked")
                .contains("next reclaim of dead owners' files in " + shared + ", which any Conduit process runs as it opens");
        refusing.set(false);
        try (MemoryProvider next = plugin.openMemoryProvider(TestContext.of(shared))) {
            assertThat(ProcessResources.files(shared)).singleElement().asString().endsWith(".lease").isNotEqualTo(lease);
        }
        assertThat(ProcessResources.files(shared)).isEmpty();
    }

    /**
     * An open that fails after its lease was taken (here the reclaim of dead owners' files throws
     * what it does not expect) throws that failure, the failures of the clean-up after it added as
     * suppressed: until 2026-12-07 a lease whose close failed too (its file not removed, EIO) put
     * its own exception in the place of the open's, and the cause was lost.
     */
    @Test
    void anOpenThatFailsAfterItsLeaseThrowsItsOwnFailureNotTheLeasesCloseFailure() {
        java.util.concurrent.atomic.AtomicInteger listings = new java.util.concurrent.atomic.AtomicInteger();
        Libc libc = FailingLibc.seeing((name, args) -> {
            if (name.equals("listDirectory") && listings.getAndIncrement() == 0) throw new IllegalStateException("injected in the reclaim");
            if (name.equals("unlinkat") && String.valueOf(args[1]).endsWith(".lease")) {
                throw new dev.conduit.linux.ErrnoException("unlinkat", dev.conduit.linux.Errno.EIO, "fake", "injected by the test");
            }
        });

        assertThatThrownBy(() -> PosixMemoryProvider.open(TestContext.of(shared), libc))
                .isInstanceOf(IllegalStateException.class).hasMessage("injected in the reclaim")
                .satisfies(e -> assertThat(e.getSuppressed()).singleElement().asString().contains("EIO"));
    }

    /**
     * A chunk whose free could not remove its file (the free throws, and the chunk is no longer
     * the provider's: the free unmaps it all the same) has that file removed by the provider's
     * close, once it can be: it used to stay, as the close knew only the chunks still allocated
     * and removed the lease after them.
     */
    @Test
    void aChunkFileAFailedFreeLeftIsRemovedByTheClose() {
        java.util.concurrent.atomic.AtomicBoolean refusing = new java.util.concurrent.atomic.AtomicBoolean();
        Libc libc = FailingLibc.failingFor("unlinkat", dev.conduit.linux.Errno.EIO,
                args -> refusing.get() && ((String) args[1]).endsWith(PosixMemoryProvider.CHUNK_SUFFIX));
        MemoryProvider provider = PosixMemoryProvider.open(TestContext.of(shared), libc);
        Chunk chunk = provider.allocate(provider.pageSize());
        refusing.set(true);
        assertThatThrownBy(() -> provider.free(chunk)).isInstanceOf(ConduitException.class).hasMessageContaining("EIO");
        assertThatThrownBy(() -> chunk.segment().get(JAVA_LONG, 0)).as("unmapped all the same").isInstanceOf(IllegalStateException.class);
        refusing.set(false);

        assertThatCode(provider::close).doesNotThrowAnyException();
        assertThat(ProcessResources.files(shared)).isEmpty();
    }

    @Test
    void refusesChunksOfAnotherProvider() {
        try (MemoryProvider first = plugin.openMemoryProvider(TestContext.of(shared));
             MemoryProvider second = plugin.openMemoryProvider(TestContext.of(shared))) {
            Chunk chunk = first.allocate(first.pageSize());
            assertThatThrownBy(() -> second.free(chunk))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not allocated by this posix provider");
            assertThatThrownBy(() -> second.export(chunk)).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> second.free(() -> MemorySegment.NULL)).isInstanceOf(IllegalArgumentException.class);
            assertThat(chunk.segment().get(JAVA_LONG, 0)).isZero();
        }
    }

    @Test
    void posixDirPutsChunkFilesInAnotherDirectory(@TempDir(factory = ShmTempDirFactory.class) Path elsewhere) {
        try (MemoryProvider provider = plugin.openMemoryProvider(TestContext.of(shared, "posix.dir", elsewhere.toString()))) {
            provider.allocate(provider.pageSize());
            assertThat(ProcessResources.files(shared)).isEmpty();
            assertThat(ProcessResources.files(elsewhere)).filteredOn(n -> n.endsWith(".chunk")).hasSize(1);
        }
        assertThat(ProcessResources.files(elsewhere)).isEmpty();
    }

    @SuppressWarnings("try") // providers only have to be open
    @Test
    void reclaimsTheFilesOfDeadOwnersAndKeepsThoseOfLiveOnes() throws Exception {
        // A crashed producer leaves its lease (nobody holds its flock any more) and its chunk files.
        String dead = "0123456789abcdef0123456789abcdef";
        Files.createFile(shared.resolve("conduit-posix-" + dead + ".lease"));
        Files.createFile(shared.resolve("conduit-posix-" + dead + "-fedcba9876543210fedcba9876543210.chunk"));
        Files.createFile(shared.resolve("conduit-posix-" + dead + "-00000000000000000000000000000001.chunk"));
        Files.createFile(shared.resolve("unrelated"));

        try (MemoryProvider alive = plugin.openMemoryProvider(TestContext.of(shared))) {
            alive.allocate(alive.pageSize());
            assertThat(ProcessResources.files(shared)).noneMatch(n -> n.contains(dead)).contains("unrelated");
            List<String> before = ProcessResources.files(shared);

            try (MemoryProvider next = plugin.openMemoryProvider(TestContext.of(shared))) {
                assertThat(ProcessResources.files(shared)).containsAll(before);
            }
        }
        assertThat(ProcessResources.files(shared)).containsExactly("unrelated");
    }

    @Test
    void failsToOpenOnAMissingDirectoryNamingPathErrnoAndKeys() {
        Path missing = shared.resolve("missing");
        assertThatThrownBy(() -> plugin.openMemoryProvider(TestContext.of(missing)))
                .isInstanceOf(ConduitException.class)
                .hasMessageContaining(missing.toString())
                .hasMessageContaining("ENOENT")
                .hasMessageContaining("shared.dir (CONDUIT_SHARED_DIR) or posix.dir (CONDUIT_POSIX_DIR)");
        assertThatThrownBy(() -> plugin.openMemoryProvider(TestContext.of(shared, "posix.dir", missing.toString())))
                .hasMessageContaining("ENOENT")
                .hasMessageNotContaining("shared.dir")
                .hasMessageContaining("posix.dir (CONDUIT_POSIX_DIR)");
    }

    @Test
    void isSafeToUseFromManyThreads() throws Exception {
        int threads = 4;
        int rounds = 50;
        try (MemoryProvider provider = plugin.openMemoryProvider(TestContext.of(shared));
             ExecutorService executor = Executors.newFixedThreadPool(threads)) {
            List<Future<?>> results = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                long mark = t;
                results.add(executor.submit(() -> {
                    for (int i = 0; i < rounds; i++) {
                        Chunk chunk = provider.allocate(provider.pageSize());
                        chunk.segment().set(JAVA_LONG, 0, mark);
                        provider.export(chunk);
                        assertThat(chunk.segment().get(JAVA_LONG, 0)).isEqualTo(mark);
                        provider.free(chunk);
                    }
                    return null;
                }));
            }
            for (Future<?> result : results) result.get();
            assertThat(chunkFiles()).isEmpty();
        }
    }

    /**
     * The free-space check measures the file system chunks land on: the one of the directory's
     * descriptor, held since the provider opened. Until 2026-12-07 it measured the directory's
     * path, so once another file system was mounted over it, a chunk there was room for was
     * refused, and one there was no room for was refused naming the wrong file system's size (or,
     * had the file system mounted over it been larger, admitted, for a SIGBUS on a touch).
     */
    @Test
    void theFreeSpaceCheckMeasuresTheFileSystemChunksLandOnNotWhatWasMountedOverItsPathSince(@TempDir Path mount) throws Exception {
        Mounts.mount("tmpfs", "size=1m", mount);
        try {
            try (MemoryProvider provider = plugin.openMemoryProvider(TestContext.of(mount))) {
                Mounts.mount("tmpfs", "size=64k", mount);
                try {
                    Chunk chunk = provider.allocate(512 << 10);
                    chunk.segment().fill((byte) 1);
                    provider.free(chunk);
                    assertThatThrownBy(() -> provider.allocate(2 << 20))
                            .isInstanceOf(ConduitException.class)
                            .hasMessageContaining("not enough space for a chunk of " + (2 << 20) + " bytes in " + mount
                                    + " (a file system of " + (1 << 20) + " bytes)");
                } finally {
                    Mounts.unmount(mount);
                }
            }
        } finally {
            Mounts.unmount(mount);
        }
    }

    /**
     * Whether chunks are huge pages, their page size and whether their pages are written back are
     * the file system's that chunks are created on: that of the directory's descriptor. A hugetlbfs
     * mounted over the path (a disk's directory here) while the provider opened, after it opened the
     * descriptor, had it read those by path until 2026-12-08: chunks of 2 MiB "huge pages" on the
     * disk (a chunk of one page refused as no multiple of it), and no word that their pages are
     * written back.
     */
    @Test
    void hugePagesPageSizeAndWriteBackAreOfTheFileSystemChunksLandOnNotWhatWasMountedOverItsPath(@TempDir Path disk) throws Exception {
        String type = Files.getFileStore(disk).type();
        org.junit.jupiter.api.Assumptions.assumeFalse(type.equals("tmpfs") || type.equals("ramfs"), "@TempDir on a disk");
        java.util.concurrent.atomic.AtomicBoolean mounted = new java.util.concurrent.atomic.AtomicBoolean();
        // The lease's rename comes after the directory's open and before the provider looks at its file system.
        Libc mountingWhileOpening = FailingLibc.seeing((call, args) -> {
            if (call.equals("renameat") && mounted.compareAndSet(false, true)) {
                try {
                    Mounts.mount("hugetlbfs", "defaults", disk);
                } catch (IOException | InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            }
        });
        try (PosixMemoryProvider provider = PosixMemoryProvider.open(TestContext.of(disk), mountingWhileOpening)) {
            assertThat(mounted).isTrue();
            assertThat(provider.hugePages()).isFalse();
            assertThat(provider.pageSize()).isEqualTo(dev.conduit.linux.PageSize.get());
            assertThat(provider.fileSystemWrittenBack()).endsWith(": chunk pages are written back to its storage; a tmpfs such as "
                    + "/dev/shm keeps them in memory");
            Chunk chunk = provider.allocate(provider.pageSize());
            chunk.segment().set(JAVA_LONG, 0, 4711);
            provider.free(chunk);
        } finally {
            if (mounted.get()) Mounts.unmount(disk);
        }
    }

    /**
     * A memory file system without a size limit reports no space at all ({@code statfs}: 0 blocks,
     * 0 available): ramfs always, a tmpfs mounted with {@code size=0}. A chunk there is taken, as
     * on a tmpfs with room, not refused for want of space the file system does not count. Until
     * 2026-12-07 the free-space check skipped only hugetlbfs, and every chunk on these was refused
     * "not enough space ... (a file system of 0 bytes)".
     */
    @org.junit.jupiter.params.ParameterizedTest(name = "{0}")
    @org.junit.jupiter.params.provider.ValueSource(strings = {"ramfs", "tmpfs"})
    void aChunkOnAMemoryFileSystemWithoutASizeLimitIsNotRefusedForWantOfSpace(String type, @TempDir Path mount) throws Exception {
        Mounts.mount(type, type.equals("tmpfs") ? "size=0" : "defaults", mount);
        try (MemoryProvider provider = plugin.openMemoryProvider(TestContext.of(mount))) {
            Chunk chunk = provider.allocate(provider.pageSize());
            chunk.segment().set(JAVA_LONG, 0, 4711);
            provider.free(chunk);
        } finally {
            Mounts.unmount(mount);
        }
    }

    /**
     * A chunk another thread is inside a native call on cannot be unmapped. free removed its file,
     * then, the unmap refused, forgot the chunk all the same: a second free said "freed already"
     * and the close did not unmap it, so the mapping, and the file's pages, stayed for the life of
     * the process. The chunk now stays allocated (its file gone: its export is revoked) until a
     * free, or the close, that comes once the call has returned unmaps it.
     */
    @Test
    void aFreeThatCannotUnmapTheChunkKeepsItForALaterFreeToUnmap() throws Exception {
        Libc libc = Linux.libc();
        try (MemoryProvider provider = plugin.openMemoryProvider(TestContext.of(shared));
             SocketPair pair = libc.socketpair(SocketFlags.SOCK_STREAM)) {
            Chunk busy = provider.allocate(provider.pageSize());
            byte[] export = provider.export(busy);
            try (var _ = BlockedCalls.blockedRead(pair.first().fd(),
                    () -> libc.read(pair.first(), busy.segment().asSlice(0, 1)), pair.second()::close)) {
                assertThatThrownBy(() -> provider.free(busy)).isInstanceOf(IllegalStateException.class);
                assertThat(chunkFiles()).as("the export is revoked").isEmpty();
                assertThatThrownBy(() -> plugin.ipcImporter(TestContext.of(shared)).map(new PayloadReader(export), provider.pageSize()))
                        .hasMessageStartingWith("export gone: ");
                assertThat(ProcessResources.mappingsOf(shared)).isEqualTo(1);
            }
            provider.free(busy);
            assertThat(ProcessResources.mappingsOf(shared)).isZero();
            assertThatThrownBy(() -> busy.segment().get(JAVA_LONG, 0)).isInstanceOf(IllegalStateException.class);
            assertThatThrownBy(() -> provider.free(busy)).isInstanceOf(IllegalStateException.class).hasMessageContaining("freed already");
        }
        assertThat(ProcessResources.files(shared)).isEmpty();
    }

    /**
     * A free that removed the chunk's file but could not unmap it (another thread inside a native
     * call on it) leaves the chunk allocated, its export revoked. Until 2026-12-07 a later export of
     * it returned a payload naming the removed file, which every importer refused as "export gone:
     * its producer freed the chunk or died" while the chunk was still allocated; export now refuses
     * it, naming that free, until a free succeeds.
     */
    @Test
    void anExportOfAChunkWhoseFreeRemovedItsFileButCouldNotUnmapItIsRefusedNamingThatFree() throws Exception {
        Libc libc = Linux.libc();
        try (MemoryProvider provider = plugin.openMemoryProvider(TestContext.of(shared));
             SocketPair pair = libc.socketpair(SocketFlags.SOCK_STREAM)) {
            Chunk busy = provider.allocate(provider.pageSize());
            try (var _ = BlockedCalls.blockedRead(pair.first().fd(),
                    () -> libc.read(pair.first(), busy.segment().asSlice(0, 1)), pair.second()::close)) {
                Throwable refusedFree = org.assertj.core.api.Assertions.catchThrowable(() -> provider.free(busy));
                assertThat(refusedFree).isInstanceOf(IllegalStateException.class);

                assertThatThrownBy(() -> provider.export(busy)).isInstanceOf(IllegalStateException.class)
                        .hasMessageStartingWith("cannot export " + busy + ": a free of it removed its file")
                        .hasMessageContaining(refusedFree.getMessage()).hasMessageContaining("free it again")
                        .hasCause(refusedFree);
            }
            provider.free(busy);
            assertThatThrownBy(() -> provider.export(busy)).as("freed now").isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("was freed");
        }
    }

    /**
     * A free that can neither remove the chunk's file (EACCES: the directory's permissions changed) nor unmap the chunk
     * (another thread inside a native call on it) says both. release removes in a try and unmaps in its finally, so the
     * unmap's IllegalStateException replaced the removal's ConduitException, which was lost, not even suppressed: the
     * caller read only that the memory is in use, which free's javadoc says comes with the file removed and the export
     * revoked, while the file, and every import of its export, stayed. The chunk stays allocated, and the free the runtime
     * retries removes the file as it unmaps.
     */
    @Test
    void aFreeThatCanNeitherRemoveTheFileNorUnmapTheChunkSaysBothAndItsRetryRemovesTheFile() throws Exception {
        java.util.concurrent.atomic.AtomicBoolean refusing = new java.util.concurrent.atomic.AtomicBoolean(true);
        Libc libc = FailingLibc.failingFor("unlinkat", dev.conduit.linux.Errno.EACCES,
                args -> refusing.get() && ((String) args[1]).endsWith(PosixMemoryProvider.CHUNK_SUFFIX));
        MemoryProvider provider = PosixMemoryProvider.open(TestContext.of(shared), libc);
        try (SocketPair pair = Linux.libc().socketpair(SocketFlags.SOCK_STREAM)) {
            Chunk busy = provider.allocate(provider.pageSize());
            Throwable thrown;
            try (var _ = BlockedCalls.blockedRead(pair.first().fd(),
                    () -> Linux.libc().read(pair.first(), busy.segment().asSlice(0, 1)), pair.second()::close)) {
                thrown = org.assertj.core.api.Assertions.catchThrowable(() -> provider.free(busy));
            }
            assertThat(chunkFiles()).as("the file, which the removal left").hasSize(1);
            assertThat(thrown).isInstanceOf(IllegalStateException.class);
            assertThat(thrown.getSuppressed()).as("the removal's failure").singleElement().asString()
                    .contains("cannot remove " + shared.resolve(chunkFiles().getFirst())).contains("EACCES");
            refusing.set(false);
            provider.free(busy);
            assertThat(chunkFiles()).as("the file, which the retried free removed").isEmpty();
        } finally {
            refusing.set(false);
            provider.close();
        }
    }

    /** The same chunk, still in use when the provider closed: the close that comes after the call unmaps it. */
    @Test
    void aChunkThatAFreeCouldNotUnmapIsUnmappedByTheClose() throws Exception {
        Libc libc = Linux.libc();
        MemoryProvider provider = plugin.openMemoryProvider(TestContext.of(shared));
        Chunk busy = provider.allocate(provider.pageSize());
        try (SocketPair pair = libc.socketpair(SocketFlags.SOCK_STREAM);
             var _ = BlockedCalls.blockedRead(pair.first().fd(),
                     () -> libc.read(pair.first(), busy.segment().asSlice(0, 1)), pair.second()::close)) {
            assertThatThrownBy(() -> provider.free(busy)).isInstanceOf(IllegalStateException.class);
        }
        provider.close();
        assertThat(ProcessResources.mappingsOf(shared)).isZero();
        assertThat(ProcessResources.files(shared)).isEmpty();
    }

    /**
     * A chunk still in use when the provider closes: close() removed its file and, the unmap
     * refused, forgot it and marked itself closed, so that the close the runtime's pool tries
     * again did nothing and the mapping stayed. It is now unmapped by the close that comes once
     * the call returned; everything else was released by the first.
     */
    @Test
    void aCloseThatCannotUnmapABusyChunkUnmapsItWhenTriedAgain() throws Exception {
        Libc libc = Linux.libc();
        MemoryProvider provider = plugin.openMemoryProvider(TestContext.of(shared));
        Chunk busy = provider.allocate(provider.pageSize());
        Chunk idle = provider.allocate(provider.pageSize());
        try (SocketPair pair = libc.socketpair(SocketFlags.SOCK_STREAM);
             var _ = BlockedCalls.blockedRead(pair.first().fd(),
                     () -> libc.read(pair.first(), busy.segment().asSlice(0, 1)), pair.second()::close)) {
            assertThatThrownBy(provider::close).isInstanceOf(IllegalStateException.class);
            assertThat(ProcessResources.files(shared)).isEmpty();
            assertThat(ProcessResources.mappingsOf(shared)).as("the busy chunk's").isEqualTo(1);
            assertThatThrownBy(() -> idle.segment().get(JAVA_LONG, 0)).isInstanceOf(IllegalStateException.class);
            assertThatCode(() -> provider.free(busy)).as("left to the close").doesNotThrowAnyException();
        }
        provider.close();
        assertThat(ProcessResources.mappingsOf(shared)).isZero();
        assertThatCode(provider::close).doesNotThrowAnyException();
    }

    /**
     * A close beside an allocation that had created its file closed the directory's descriptor
     * under it: the allocation failed with "fd N (...) is closed" and left its file in the
     * directory, whose lease was gone (and with the number reused meanwhile, its next call would
     * have reached whatever file had it). The close now waits for the allocation and frees its chunk.
     */
    @Test
    @Timeout(60) // a hang guard, not a speed check
    void aCloseBesideAnAllocationWaitsForItAndLeavesNoFile() throws Exception {
        CountDownLatch released = new CountDownLatch(1);
        MemoryProvider provider = PosixMemoryProvider.open(TestContext.of(shared), FailingLibc.waitingIn("ftruncate", released));
        FutureTask<Chunk> allocation = startAndLetItWait(() -> provider.allocate(provider.pageSize()));
        assertThat(chunkFiles()).as("created, not sized yet").hasSize(1);

        closeWhileItWaits(provider, released);

        assertThat(ProcessResources.files(shared)).isEmpty();
        assertThat(ProcessResources.mappingsOf(shared)).isZero();
        Chunk chunk = allocation.get();
        assertThatThrownBy(() -> chunk.segment().get(JAVA_LONG, 0)).as("freed by the close").isInstanceOf(IllegalStateException.class);
    }

    /** The same for a free that had not removed its file yet: it failed, and the file stayed. */
    @Test
    @Timeout(60) // a hang guard, not a speed check
    void aCloseBesideAFreeWaitsForItAndLeavesNoFile() throws Exception {
        CountDownLatch released = new CountDownLatch(1);
        MemoryProvider provider = PosixMemoryProvider.open(TestContext.of(shared),
                FailingLibc.waitingIn("unlinkat", args -> ((String) args[1]).endsWith(PosixMemoryProvider.CHUNK_SUFFIX), released));
        Chunk chunk = provider.allocate(provider.pageSize());
        FutureTask<Void> free = startAndLetItWait(() -> {
            provider.free(chunk);
            return null;
        });

        closeWhileItWaits(provider, released);

        assertThat(ProcessResources.files(shared)).isEmpty();
        assertThat(ProcessResources.mappingsOf(shared)).isZero();
        assertThatCode(free::get).doesNotThrowAnyException();
    }

    /** Runs {@code operation} on a thread of its own, and returns once that thread waits (where the test's libc holds it) or ended. */
    private static <T> FutureTask<T> startAndLetItWait(Callable<T> operation) throws InterruptedException {
        FutureTask<T> task = new FutureTask<>(operation);
        awaitWaitingOrEnded(Thread.ofPlatform().name("operation").start(task));
        return task;
    }

    /**
     * Closes {@code provider} on another thread while an operation waits in the test's libc, and
     * lets the operation go on once the close has ended (it did not wait for the operation) or
     * waits itself (for the operation to end).
     */
    private static void closeWhileItWaits(MemoryProvider provider, CountDownLatch released) throws InterruptedException {
        Thread closer = Thread.ofPlatform().name("closer").start(provider::close);
        awaitWaitingOrEnded(closer);
        released.countDown();
        closer.join();
    }

    private static void awaitWaitingOrEnded(Thread thread) throws InterruptedException {
        while (thread.isAlive() && thread.getState() != Thread.State.WAITING) {
            Thread.sleep(1);
        }
    }

    private List<String> chunkFiles() {
        return ProcessResources.files(shared).stream().filter(n -> n.endsWith(".chunk")).toList();
    }
}
