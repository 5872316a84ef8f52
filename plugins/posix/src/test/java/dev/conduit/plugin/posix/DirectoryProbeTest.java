package dev.conduit.plugin.posix;

import dev.conduit.linux.FileSystemSpace;
import dev.conduit.linux.Libc;
import dev.conduit.linux.PageSize;
import dev.conduit.spi.Availability;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.tck.TestContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class DirectoryProbeTest {

    @TempDir(factory = ShmTempDirFactory.class)
    Path shared;

    private final PosixPlugin plugin = new PosixPlugin();

    @Test
    void availableOnAWritableDirectoryWithDetailsAndNothingLeftBehind() {
        Availability availability = plugin.probe(TestContext.of(shared));

        assertThat(availability.isAvailable()).as(availability.reason()).isTrue();
        assertThat(availability.details())
                .containsKeys("arch", "kernel")
                .containsEntry("directory", shared.toString())
                .containsEntry("directory set by", "shared.dir")
                .containsEntry("formats", "receive queue layout 8, transport address 2, handle payload 3")
                .containsEntry("page size", Long.toString(PageSize.get()))
                .containsEntry("live owners", "0")
                .containsEntry("dead owners", "0")
                .doesNotContainKey("unreadable leases");
        assertThat(Long.parseLong(availability.details().get("free bytes"))).isPositive();
        String type = fileStoreType(shared);
        assertThat(availability.details().get("file system")).as("on %s", type).startsWith(type);
        assertThat(ProcessResources.files(shared)).isEmpty();
    }

    /**
     * A memory file system without a size limit reports no space at all ({@code statfs}: 0 blocks,
     * 0 available): ramfs always, a tmpfs mounted with {@code size=0}. Until 2026-12-07 the probe
     * said "free bytes 0" there, as if the directory were full, though chunks there are taken
     * (the allocation's free-space check knows these file systems have no limit).
     */
    @org.junit.jupiter.params.ParameterizedTest(name = "{0}")
    @org.junit.jupiter.params.provider.ValueSource(strings = {"ramfs", "tmpfs"})
    void aMemoryFileSystemWithoutASizeLimitIsSaidToHaveNoneNotZeroFreeBytes(String type, @TempDir Path mount) throws Exception {
        Mounts.mount(type, type.equals("tmpfs") ? "size=0" : "defaults", mount);
        try {
            Availability availability = plugin.probe(TestContext.of(mount));
            assertThat(availability.isAvailable()).as(availability.reason()).isTrue();
            assertThat(availability.details()).containsEntry("free bytes", "no size limit (" + type + " reports no blocks)");
        } finally {
            Mounts.unmount(mount);
        }
    }

    /** A directory on another file system (here /tmp's: a disk on most machines) works, and conduit info says where the pages go. */
    @Test
    void aDirectoryOffTmpfsIsUsableAndSaysWhetherItsPagesAreWrittenBack(@TempDir Path elsewhere) throws IOException {
        String type = fileStoreType(elsewhere);
        Availability availability = plugin.probe(TestContext.of(elsewhere));
        assertThat(availability.isAvailable()).as(availability.reason()).isTrue();
        assertThat(availability.details().get("file system")).as("on %s", type).isEqualTo(java.util.Set.of("tmpfs", "ramfs", "hugetlbfs")
                .contains(type) ? type : type + ": chunk pages are written back to its storage; a tmpfs such as /dev/shm keeps them in memory");
    }

    /**
     * Pools and workers on a file system with storage work, and cost the writes back of every chunk page, which only
     * {@code conduit info} said (helper h3, on ext4): the plugin says it in an INFO, once per directory; on a tmpfs
     * nothing. (Where /tmp is a memory file system too, neither directory is told of.)
     */
    @Test
    void poolsOnAFileSystemWithStorageSaySoOnceAndOnTmpfsNothing(@TempDir Path elsewhere) throws Exception {
        dev.conduit.tck.RecordingLogger logger = new dev.conduit.tck.RecordingLogger();
        List<String> infos = logger.at(System.Logger.Level.INFO);
        try (MemoryProvider first = plugin.openMemoryProvider(TestContext.of(elsewhere).withLogger(logger));
             MemoryProvider second = plugin.openMemoryProvider(TestContext.of(elsewhere).withLogger(logger));
             MemoryProvider onTmpfs = plugin.openMemoryProvider(TestContext.of(shared).withLogger(logger))) {
            String type = fileStoreType(elsewhere);
            if (java.util.Set.of("tmpfs", "ramfs", "hugetlbfs").contains(type)) {
                assertThat(infos).as("on %s", type).isEmpty();
            } else {
                assertThat(infos).as("once, for the directory on %s", type).containsExactly("the chunk directory " + elsewhere + " is on "
                        + type + ": chunk pages are written back to its storage; a tmpfs such as /dev/shm keeps them in memory: set "
                        + "shared.dir (CONDUIT_SHARED_DIR) or posix.dir (CONDUIT_POSIX_DIR) to a directory on one");
            }
        }
    }

    /**
     * A chunk directory on a file system other kernels may see too (NFS between hosts; a VM's virtiofs, which is FUSE, or 9p
     * share of its host's directory; SMB) works among the processes of one kernel, and the probe says in a WARNING and in
     * {@code conduit info} that memory through it is shared only there, naming the file system, the directory and the keys
     * to set. It said only that chunk pages are written back to its storage: two workers under two kernels connected and
     * their messages went nowhere (each kernel keeps a page cache of its own) until an endpoint failed as hung. The kernel's
     * answer is played by the directory's {@code fstatfs}, as such a mount would give it.
     */
    @org.junit.jupiter.params.ParameterizedTest(name = "f_type {0}")
    @org.junit.jupiter.params.provider.ValueSource(longs = {Libc.NFS_SUPER_MAGIC, Libc.FUSE_SUPER_MAGIC, Libc.V9FS_MAGIC,
            Libc.CIFS_SUPER_MAGIC, Libc.SMB2_SUPER_MAGIC, Libc.CEPH_SUPER_MAGIC})
    void aDirectoryOnAFileSystemOtherKernelsMaySeeIsUsableAndSaysItsMemoryIsSharedOnlyWithinOneKernel(long type) {
        Libc libc = FailingLibc.answeringFor("fileSystemSpace", args -> true, new FileSystemSpace(type, 4096, 1L << 30, 1L << 29));
        dev.conduit.tck.RecordingLogger logger = new dev.conduit.tck.RecordingLogger();

        Availability availability = DirectoryProbe.probe(TestContext.of(shared).withLogger(logger), libc);

        assertThat(availability.isAvailable()).as(availability.reason()).isTrue();
        assertThat(availability.unsupportedHere()).as("processes of one kernel share its pages: nothing is ruled out").isEmpty();
        String acrossKernels = availability.details().get("across kernels");
        assertThat(acrossKernels).as("the detail conduit info shows").isNotNull()
                .startsWith("the chunk directory " + shared + " is on ")
                .contains("which other kernels may see too")
                .contains("memory mapped through it is shared only among processes of one kernel")
                .contains("messages go nowhere until its endpoint fails as hung")
                .contains("set shared.dir (CONDUIT_SHARED_DIR) or posix.dir (CONDUIT_POSIX_DIR) to a tmpfs directory");
        assertThat(logger.warnings()).containsExactly(acrossKernels);
        assertThat(DirectoryProbe.probe(TestContext.of(shared).withLogger(logger), libc).details()).containsEntry("across kernels", acrossKernels);
        assertThat(logger.warnings()).as("once per directory: every Conduit built probes, and every worker again").hasSize(1);
    }

    /** On a tmpfs, which no other kernel sees, nothing of the kind is said. */
    @Test
    void aDirectoryOnTmpfsSaysNothingOfOtherKernels() {
        dev.conduit.tck.RecordingLogger logger = new dev.conduit.tck.RecordingLogger();
        Availability availability = plugin.probe(TestContext.of(shared).withLogger(logger));
        assertThat(availability.details()).doesNotContainKey("across kernels");
        assertThat(logger.warnings()).isEmpty();
    }

    private static String fileStoreType(Path directory) {
        try {
            return java.nio.file.Files.getFileStore(directory).type();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    @SuppressWarnings("try") // providers only have to be open
    @Test
    void countsLiveAndDeadOwners(@TempDir(factory = ShmTempDirFactory.class) Path chunks) throws IOException {
        TestContext context = TestContext.of(shared, "posix.dir", chunks.toString());
        try (MemoryProvider first = plugin.openMemoryProvider(context);
             MemoryProvider second = plugin.openMemoryProvider(context)) {
            Files.createFile(chunks.resolve("conduit-posix-0123456789abcdef0123456789abcdef.lease"));

            Availability availability = plugin.probe(context);

            assertThat(availability.details())
                    .containsEntry("directory", chunks.toString())
                    .containsEntry("directory set by", "posix.dir")
                    .containsEntry("live owners", "2")
                    .containsEntry("dead owners", "1");
        }
    }

    @Test
    void unavailableOnAMissingDirectoryNamingPathErrnoAndKeys() {
        Path missing = shared.resolve("missing");

        Availability availability = plugin.probe(TestContext.of(missing));

        assertThat(availability.isAvailable()).isFalse();
        assertThat(availability.reason())
                .contains(missing.toString())
                .contains("ENOENT")
                .contains("shared.dir (CONDUIT_SHARED_DIR) or posix.dir (CONDUIT_POSIX_DIR)");
        assertThat(availability.details()).containsEntry("directory", missing.toString());
    }

    @Test
    void unavailableWhenTheDirectoryIsAFile() throws IOException {
        Path file = Files.createFile(shared.resolve("a-file"));

        Availability availability = plugin.probe(TestContext.of(shared, "posix.dir", file.toString()));

        assertThat(availability.isAvailable()).isFalse();
        assertThat(availability.reason()).contains(file.toString()).contains("ENOTDIR").contains("posix.dir (CONDUIT_POSIX_DIR)");
    }

    /** A directory on a file system that makes no files (procfs: ENOENT): unavailable, named as such, not as a permission problem. */
    @Test
    void unavailableWhenTheDirectoryIsOnAFileSystemThatMakesNoFiles() {
        Availability availability = plugin.probe(TestContext.of(Path.of("/proc")));

        assertThat(availability.isAvailable()).isFalse();
        assertThat(availability.reason()).contains("cannot create files in /proc").contains("ENOENT")
                .contains("/proc is on a file system that makes no files of ours").doesNotContain("writable");
    }

    /** A directory this user cannot create files in, for want of permission: unavailable, naming path, errno and keys. */
    @Test
    void unavailableWhenTheDirectoryIsReadOnly() throws Exception {
        Path readOnly = Files.createDirectory(shared.resolve("read-only"));
        Files.setPosixFilePermissions(readOnly, PosixFilePermissions.fromString("r-x------"));

        if (WithoutDacOverride.needed()) {
            // Root writes anywhere: probe from a JVM without the capability that lets it.
            assertThat(WithoutDacOverride.run("probe", readOnly.toString())).contains("available=false")
                    .contains("cannot create files in " + readOnly).contains("EACCES").contains("shared.dir (CONDUIT_SHARED_DIR)");
            return;
        }
        Availability availability = plugin.probe(TestContext.of(readOnly));

        assertThat(availability.isAvailable()).isFalse();
        assertThat(availability.reason()).contains("cannot create files in " + readOnly).contains("EACCES")
                .contains("shared.dir (CONDUIT_SHARED_DIR)");
    }

    /**
     * A directory whose file system has no inode (or byte) left for a file ({@code ENOSPC}) takes no
     * pool or worker, but takes imports, which only open chunk files there: a consumer that only
     * imports works on. Until 2026-12-07 the probe made posix unavailable there, imports too.
     */
    @Test
    void isAvailableForImportsOnlyWhereTheFileSystemHasNoRoomForAFile(@TempDir Path mount) throws Exception {
        Mounts.mount("tmpfs", "nr_inodes=16", mount);
        try (MemoryProvider provider = plugin.openMemoryProvider(TestContext.of(mount))) {
            dev.conduit.spi.Chunk chunk = provider.allocate(provider.pageSize());
            chunk.segment().set(java.lang.foreign.ValueLayout.JAVA_LONG, 0, 4711L);
            byte[] payload = provider.export(chunk);
            fillTheInodes(mount);

            Availability availability = plugin.probe(TestContext.of(mount));
            assertThat(availability.isAvailable()).as(availability.reason()).isTrue();
            assertThat(availability.unsupportedHere()).containsOnlyKeys(dev.conduit.spi.Capability.MEMORY,
                    dev.conduit.spi.Capability.AM, dev.conduit.spi.Capability.RMA, dev.conduit.spi.Capability.ATOMICS,
                    dev.conduit.spi.Capability.WAKEUP);
            assertThat(availability.unsupportedHere().get(dev.conduit.spi.Capability.MEMORY))
                    .contains("the chunk directory " + mount + " has no room for a file (").contains("ENOSPC")
                    .contains("df -h, df -i").contains("shared.dir (CONDUIT_SHARED_DIR)")
                    .contains("posix imports, which only open chunk files, work here");
            assertThat(availability.details()).containsKey("free bytes");
            try (dev.conduit.spi.ChunkMapping mapping = plugin.ipcImporter(TestContext.of(mount))
                    .map(new dev.conduit.spi.PayloadReader(payload), provider.pageSize())) {
                assertThat(mapping.segment().get(java.lang.foreign.ValueLayout.JAVA_LONG, 0)).isEqualTo(4711L);
            }
            provider.free(chunk);
        } finally {
            Mounts.unmount(mount);
        }
    }

    /** Creates files in {@code directory} until its file system has no inode left for another. */
    private static void fillTheInodes(Path directory) throws IOException {
        for (int i = 0; ; i++) {
            try {
                Files.createFile(directory.resolve("filler-" + i));
            } catch (IOException e) {
                assertThat(e.getMessage()).as("the file system is full").contains("No space left on device");
                return;
            }
        }
    }

    /**
     * A container's {@code -v DIR:DIR:ro}: imports only, which map chunk files read-only, and the
     * probe names the read-only mount, not the user's permissions. It used to be unavailable.
     */
    @Test
    void isAvailableForImportsOnlyOnAReadOnlyMountSayingSo() throws Exception {
        String output = WithoutDacOverride.runInAReadOnlyMount(shared, "probe", shared.toString());
        assertThat(output).as(output).contains("available=true")
                .contains("notHere=MEMORY,AM,RMA,ATOMICS,WAKEUP why=the chunk directory " + shared + " is on a read-only mount (")
                .contains("EROFS").contains("): mount it read-write (for a container, -v DIR:DIR without :ro), or set shared.dir "
                        + "(CONDUIT_SHARED_DIR) or posix.dir (CONDUIT_POSIX_DIR) to a writable directory, for pools and workers over posix, whose chunk files and leases "
                        + "live there; posix imports, which only open chunk files, work here and map them read-only")
                .contains("provider=NotSupportedException: posix offers no memory provider (pool) here, only imports: the chunk directory "
                        + shared + " is on a read-only mount");
        try (var left = Files.list(shared)) {
            assertThat(left.toList()).as("files the probe left").isEmpty();
        }
    }

    @Test
    void unavailableOnMalformedConfiguration() {
        Availability availability = plugin.probe(TestContext.of(shared, "posix.trusted.uids", "alice"));

        assertThat(availability.isAvailable()).isFalse();
        assertThat(availability.reason()).contains("'alice'").contains("CONDUIT_POSIX_TRUSTED_UIDS");
    }

    /**
     * A relative posix.dir names the directory itself, as a relative shared.dir does (ConduitRuntime resolves that one
     * once, "so that the plugins and every message they write name the directory itself"): PosixConfig.of took posix.dir
     * as given, so conduit info's directory, the provider's messages and its INFO on a written-back file system named
     * "shm" or "../x", which say nothing to whoever reads them outside the process's working directory.
     */
    @Test
    void aRelativePosixDirIsNamedByItsAbsolutePathAsARelativeSharedDirIs() {
        Path relative = Path.of("").toAbsolutePath().relativize(shared);
        TestContext context = TestContext.of(shared, java.util.Map.of("posix.dir", relative.toString()));

        assertThat(plugin.probe(context).details().get("directory")).isEqualTo(relative.toAbsolutePath().toString());
        try (PosixMemoryProvider provider = PosixMemoryProvider.open(context)) {
            assertThat(provider.directory()).isAbsolute().isEqualTo(relative.toAbsolutePath());
        }
    }
}
