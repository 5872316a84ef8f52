package dev.conduit.plugin.memfd;

import dev.conduit.linux.Errno;
import dev.conduit.linux.ErrnoException;
import dev.conduit.linux.FileDescriptor;
import dev.conduit.linux.Libc;
import dev.conduit.linux.Linux;
import dev.conduit.linux.LockFlags;
import dev.conduit.linux.Seals;
import dev.conduit.linux.SocketFlags;
import dev.conduit.linux.SocketPair;
import dev.conduit.spi.Chunk;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ConfigException;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.spi.PayloadReader;
import dev.conduit.shm.SharedDirectory;
import dev.conduit.tck.BlockedCalls;
import dev.conduit.tck.TestContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Map;

import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The provider alone: chunks, exports, free, close, and what it leaves in the shared directory. */
class MemfdProviderTest {
    private static final long SIZE = 64 * 1024;

    private final Libc libc = Linux.libc();
    private final MemfdPlugin plugin = new MemfdPlugin();

    @TempDir
    Path shared;

    /**
     * A pool whose lease a cleaner removed says so once, at its next new export, naming the lease,
     * the socket no reclaim would remove should the process die, and the remedy; its exports work
     * on. It used to say nothing (only a worker did, since 2026-12-04).
     */
    @Test
    void aPoolWhoseLeaseACleanerRemovedSaysSoOnceAtItsNextExport() throws Exception {
        dev.conduit.tck.RecordingLogger recording = new dev.conduit.tck.RecordingLogger();
        try (MemoryProvider provider = plugin.openMemoryProvider(TestContext.of(shared).withLogger(recording))) {
            Chunk first = provider.allocate(SIZE);
            provider.export(first);
            String lease = Files.list(shared).map(p -> p.getFileName().toString()).filter(name -> name.endsWith(".lease"))
                    .findFirst().orElseThrow();
            Files.delete(shared.resolve(lease));
            assertThat(recording.warnings()).isEmpty();

            provider.export(first);
            assertThat(recording.warnings()).as("an export made before: nothing looked at").isEmpty();
            Chunk second = provider.allocate(SIZE);
            byte[] handle = provider.export(second);
            provider.export(provider.allocate(SIZE));
            assertThat(recording.warnings()).singleElement().asString()
                    .contains("memfd: this process's pool's lease " + shared.resolve(lease) + " was removed from the shared directory")
                    .contains("RemoveIPC=yes").contains("no Conduit process reclaims that socket in " + shared)
                    .contains("Close the pool and open a new one").contains("keep such cleaners off " + shared);
            try (var mapping = plugin.ipcImporter(TestContext.of(shared)).map(new PayloadReader(handle, 0, handle.length, "payload."),
                    SIZE)) {
                assertThat(mapping.segment().byteSize()).isEqualTo(SIZE);
            }
        }
    }

    /**
     * A cleaner that removes every file of the user (logind's RemoveIPC=yes) takes the provider's
     * socket and its lease: the fd server binds the socket again, which no lease then names, and a
     * process killed after that left it in the directory for good, where no reclaim removes it,
     * without a word of it: the pool's own warning waits for its next new export, which a worker's
     * provider may never make (found by a helper playing an SRE: rm of a running worker's files,
     * kill -9, conduit reclaim left "1 file that no lease names"). The rebind now says so.
     */
    @Test
    @org.junit.jupiter.api.Timeout(value = 60, unit = java.util.concurrent.TimeUnit.SECONDS)
    void aSocketBoundAgainAfterItsLeaseWasRemovedTooSaysNoLeaseNamesIt() throws Exception {
        dev.conduit.tck.RecordingLogger recording = new dev.conduit.tck.RecordingLogger();
        try (MemoryProvider provider = plugin.openMemoryProvider(TestContext.of(shared).withLogger(recording))) {
            provider.export(provider.allocate(SIZE));
            java.util.List<String> files = Leaks.files(shared);
            String socket = files.stream().filter(name -> name.endsWith(FdProtocol.SOCKET_SUFFIX)).findFirst().orElseThrow();
            String lease = files.stream().filter(name -> name.endsWith(".lease")).findFirst().orElseThrow();
            Files.delete(shared.resolve(socket));
            Files.delete(shared.resolve(lease));

            // The fd server notices the removal at its next look and binds again; the test's @Timeout is the hang guard.
            while (recording.warnings().size() < 2) Thread.sleep(50);
            assertThat(recording.warnings()).as("the rebind's warnings").hasSize(2);
            assertThat(recording.warnings().getFirst()).contains("it is bound again");
            assertThat(recording.warnings().get(1))
                    .contains("memfd: this process's pool's lease " + shared.resolve(lease) + " was removed from the shared directory")
                    .contains("bound again at " + shared.resolve(socket))
                    .contains("no Conduit process reclaims that socket").contains("NO LEASE")
                    .contains("keep such cleaners off " + shared);
            provider.export(provider.allocate(SIZE));
            assertThat(recording.warnings()).as("said once: not again at the next export").hasSize(2);
        }
    }

    /**
     * A chunk larger than the memory and swap the system has available is refused, naming its
     * size, what is available and what to do: a memfd takes its pages as they are first written,
     * and past what memory holds the kernel's OOM killer ends a process rather than fail the write.
     * It used to be allocated (ftruncate and mmap reserve nothing), and its first use past memory
     * killed the JVM. Nothing is touched here, and no descriptor or mapping is left.
     */
    @Test
    void aChunkLargerThanTheAvailableMemoryIsRefusedNamingItsSizeWhatIsAvailableAndTheRemedy() {
        long size = 1L << 44; // 16 TiB: more than any test machine's memory, and within the address space
        try (MemoryProvider provider = plugin.openMemoryProvider(TestContext.of(shared))) {
            long descriptors = Leaks.memfdDescriptors();
            long mappings = Leaks.memfdMappings();
            assertThatThrownBy(() -> provider.allocate(size)).isInstanceOf(ConduitException.class)
                    .hasMessageContaining("chunk of " + size + " bytes").hasMessageContaining("bytes of memory available")
                    .hasMessageContaining("MemAvailable").hasMessageContaining("OOM killer").hasMessageContaining("pool.chunk.size");
            assertThat(Leaks.memfdDescriptors()).isEqualTo(descriptors);
            assertThat(Leaks.memfdMappings()).isEqualTo(mappings);
        }
    }

    /**
     * On a host whose file systems are ZFS (Proxmox, Ubuntu on ZFS), the ARC is a cache the kernel
     * does not count in MemAvailable (openzfs/zfs#10255), though ZFS gives it back under memory
     * pressure down to its minimum (c_min): the memory available counts that part too. Counting
     * MemAvailable and SwapFree alone, a host of 64 GiB whose ARC held 40 GiB refused a chunk of
     * 30 GiB that fit (found by review). Where there is no ARC (no arcstats), nothing is added.
     */
    @Test
    void theMemoryAvailableCountsWhatZfsArcWouldGiveBack() throws Exception {
        Path meminfo = Files.writeString(shared.resolve("meminfo"), """
                MemTotal:       67108864 kB
                MemFree:         4194304 kB
                MemAvailable:    8388608 kB
                SwapTotal:       2097152 kB
                SwapFree:        1048576 kB
                """);
        Path arcstats = Files.writeString(shared.resolve("arcstats"), """
                13 1 0x01 147 39984 5207933186 96379112204473
                name                            type data
                hits                            4    1922412
                size                            4    42949672960
                c                               4    42949672960
                c_min                           4    2147483648
                c_max                           4    64424509440
                """);

        assertThat(MemfdProvider.availableMemory(dev.conduit.shm.Meminfo.read(meminfo), arcstats)).as("MemAvailable + SwapFree + ARC size - c_min")
                .isEqualTo((8L << 30) + (1L << 30) + (40L << 30) - (2L << 30));
        assertThat(MemfdProvider.availableMemory(dev.conduit.shm.Meminfo.read(meminfo), shared.resolve("no-arcstats"))).as("no ARC")
                .isEqualTo((8L << 30) + (1L << 30));
    }

    @Test
    void allocatesZeroedSealedWritableChunks() {
        try (MemoryProvider provider = plugin.openMemoryProvider(TestContext.of(shared))) {
            assertThat(provider.pageSize()).isEqualTo(4096);
            Chunk chunk = provider.allocate(SIZE);
            MemorySegment segment = chunk.segment();
            assertThat(segment.byteSize()).isEqualTo(SIZE);
            assertThat(segment.address() % provider.pageSize()).isZero();
            assertThat(segment.get(JAVA_LONG, SIZE - 8)).isZero();
            segment.set(JAVA_LONG, 0, 42);
            assertThat(segment.get(JAVA_LONG, 0)).isEqualTo(42);

            FileDescriptor memfd = ((MemfdChunk) chunk).memfd();
            assertThat(libc.seals(memfd)).isEqualTo(Seals.FIXED_SIZE);
            assertThat(libc.fstat(memfd).size()).isEqualTo(SIZE);
        }
    }

    @Test
    void exportIsAPayloadNamingTheSocketAndATokenAndIsReusedUntilFree() {
        try (MemoryProvider provider = plugin.openMemoryProvider(TestContext.of(shared))) {
            Chunk first = provider.allocate(SIZE);
            Chunk second = provider.allocate(SIZE);
            byte[] payload = provider.export(first);
            assertThat(provider.export(first)).isEqualTo(payload);

            MemfdPayload decoded = MemfdPayload.decode(new PayloadReader(payload, 0, payload.length, "payload."));
            MemfdPayload other = MemfdPayload.decode(new PayloadReader(provider.export(second)));
            assertThat(decoded.socketName()).isEqualTo(other.socketName())
                    .matches("conduit-memfd-[0-9a-f]{32}-[0-9a-f]{16}\\.sock")
                    .hasSize(FdProtocol.SOCKET_NAME_LENGTH);
            assertThat(decoded.token()).hasSize(16).isNotEqualTo(other.token());
            assertThat(payload).hasSize(1 + 2 + FdProtocol.SOCKET_NAME_LENGTH + 16 + dev.conduit.shm.DirectoryIdentity.ENCODED_LENGTH);
            assertThat(decoded.directory()).as("the shared directory's, as a worker's address names it").isNotNull()
                    .isEqualTo(other.directory());
            assertThat(Files.exists(shared.resolve(decoded.socketName()), LinkOption.NOFOLLOW_LINKS)).isTrue();
        }
    }

    @Test
    void startsItsServerOnlyWithTheFirstExport() {
        try (MemfdProvider provider = (MemfdProvider) plugin.openMemoryProvider(TestContext.of(shared))) {
            provider.allocate(SIZE);
            assertThat(provider.server()).isNull();
            assertThat(Leaks.files(shared)).singleElement().satisfies(name -> assertThat(name).endsWith(".lease"));
        }
    }

    @Test
    void socketAdmitsOnlyItsOwnerUnlessOtherUidsAreAllowed() throws Exception {
        try (MemfdProvider provider = (MemfdProvider) plugin.openMemoryProvider(TestContext.of(shared))) {
            provider.export(provider.allocate(SIZE));
            Path socket = shared.resolve(provider.server().socketName());
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(socket, LinkOption.NOFOLLOW_LINKS))).isEqualTo("rw-------");
        }
        try (MemfdProvider provider = (MemfdProvider) plugin.openMemoryProvider(
                TestContext.of(shared, Map.of("memfd.allowed.uids", "4242, 4343")))) {
            provider.export(provider.allocate(SIZE));
            Path socket = shared.resolve(provider.server().socketName());
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(socket, LinkOption.NOFOLLOW_LINKS))).isEqualTo("rw-rw-rw-");
        }
    }

    @Test
    void freeUnmapsClosesTheMemfdAndRefusesASecondFree() {
        try (MemoryProvider provider = plugin.openMemoryProvider(TestContext.of(shared))) {
            Chunk chunk = provider.allocate(SIZE);
            provider.export(chunk);
            FileDescriptor memfd = ((MemfdChunk) chunk).memfd();
            provider.free(chunk);

            assertThat(memfd.isOpen()).isFalse();
            assertThatThrownBy(() -> chunk.segment().get(JAVA_LONG, 0)).isInstanceOf(IllegalStateException.class);
            assertThatThrownBy(() -> provider.free(chunk)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not a live chunk");
            assertThatThrownBy(() -> provider.export(chunk)).isInstanceOf(IllegalArgumentException.class);
        }
    }

    /**
     * A free that unmapped the chunk and then failed to close its memfd (EBADF: code of this process
     * closed the number behind its back) leaves nothing of the chunk to free: it was kept as live,
     * and every later free, export and the provider's close then met its closed arena, the free and
     * the close with "Already closed", an IllegalStateException the runtime takes for a busy chunk
     * to free again.
     */
    @Test
    void aFreeWhoseMemfdCloseFailsAfterTheUnmapLeavesNoChunkToFreeAgain() {
        MemoryProvider provider = plugin.openMemoryProvider(TestContext.of(shared));
        Chunk chunk = provider.allocate(SIZE);
        provider.export(chunk);
        FileDescriptor.adopt(((MemfdChunk) chunk).memfd().fd(), "the chunk's memfd, closed behind its back").close();

        assertThatThrownBy(() -> provider.free(chunk)).isInstanceOf(ErrnoException.class).hasMessageContaining("EBADF");
        assertThatThrownBy(() -> chunk.segment().get(JAVA_LONG, 0)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> provider.free(chunk)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not a live chunk");
        assertThatThrownBy(() -> provider.export(chunk)).isInstanceOf(IllegalArgumentException.class);
        provider.close();
    }

    /**
     * A chunk another thread is inside a native call on cannot be unmapped. close() then closed its
     * memfd, forgot it and marked itself closed, so that the close the runtime's pool tries again
     * did nothing and the mapping stayed for the life of the process. It is now unmapped by the
     * close that comes once the call returned; the rest was released by the first.
     */
    @Test
    void aCloseThatCannotUnmapABusyChunkUnmapsItWhenTriedAgain() throws Exception {
        MemfdProvider provider = (MemfdProvider) plugin.openMemoryProvider(TestContext.of(shared));
        Chunk busy = provider.allocate(SIZE);
        Chunk idle = provider.allocate(SIZE);
        byte[] export = provider.export(busy);
        try (SocketPair pair = libc.socketpair(SocketFlags.SOCK_STREAM);
             var _ = BlockedCalls.blockedRead(pair.first().fd(),
                     () -> libc.read(pair.first(), busy.segment().asSlice(0, 1)), pair.second()::close)) {
            assertThatThrownBy(provider::close).isInstanceOf(IllegalStateException.class);
            assertThat(Leaks.memfdMappings()).as("the busy chunk's").isEqualTo(1);
            assertThat(Leaks.memfdDescriptors()).isZero();
            assertThat(Leaks.files(shared)).isEmpty();
            assertThatThrownBy(() -> idle.segment().get(JAVA_LONG, 0)).isInstanceOf(IllegalStateException.class);
            assertThatThrownBy(() -> new MemfdPlugin().ipcImporter(TestContext.of(shared)).map(new PayloadReader(export), SIZE))
                    .hasMessageStartingWith("producer gone");
        }
        provider.close();
        assertThat(Leaks.memfdMappings()).isZero();
        provider.close(); // idempotent
    }

    @Test
    void refusesChunksOfAnotherProvider() {
        try (MemoryProvider one = plugin.openMemoryProvider(TestContext.of(shared));
             MemoryProvider two = plugin.openMemoryProvider(TestContext.of(shared))) {
            Chunk chunk = one.allocate(SIZE);
            assertThatThrownBy(() -> two.export(chunk)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("another provider");
            assertThatThrownBy(() -> two.free(chunk)).isInstanceOf(IllegalArgumentException.class);
        }
    }

    /**
     * An open that fails once it holds its lease gives the lease up, as posix's open does: the
     * provider is built after OwnerLease.acquire, outside any cleanup of it, so a failure there (the
     * fstat of the shared directory's descriptor that DirectoryIdentity.of makes: EIO, or ESTALE on
     * NFS) closed the directory alone, and the lease file stayed in the shared directory, locked by
     * a descriptor nobody closes, until the process exits.
     */
    @Test
    void anOpenThatFailsOnceItHoldsItsLeaseLeavesNoLeaseNorDescriptor() {
        try (MemoryProvider warmUp = plugin.openMemoryProvider(TestContext.of(shared))) {
            warmUp.allocate(SIZE);
        }
        long fdsBefore = Leaks.openFds();
        Libc fstatFails = FailingLibc.failing("fstat", Errno.EIO);

        assertThatThrownBy(() -> MemfdProvider.open(fstatFails, TestContext.of(shared))).hasMessageContaining("EIO");

        assertThat(Leaks.files(shared)).as("the lease of the provider that failed to open").isEmpty();
        assertThat(Leaks.openFds()).isEqualTo(fdsBefore);
    }

    @Test
    void closeFreesEveryChunkStopsTheServerAndLeavesNothing() {
        // A first provider makes the JVM open what it keeps open (jars, SecureRandom's /dev/urandom).
        try (MemoryProvider warmUp = plugin.openMemoryProvider(TestContext.of(shared))) {
            warmUp.export(warmUp.allocate(SIZE));
        }
        long fdsBefore = Leaks.openFds();
        MemfdProvider provider = (MemfdProvider) plugin.openMemoryProvider(TestContext.of(shared));
        Chunk exported = provider.allocate(SIZE);
        Chunk kept = provider.allocate(SIZE);
        provider.export(exported);
        Thread server = provider.server().thread();
        assertThat(server.isAlive()).isTrue();
        assertThat(Leaks.files(shared)).hasSize(2);

        provider.close();
        provider.close(); // idempotent

        assertThat(server.isAlive()).isFalse();
        assertThat(Leaks.serverThreads()).isEmpty();
        assertThat(Leaks.files(shared)).isEmpty();
        assertThat(Leaks.memfdMappings()).isZero();
        assertThat(Leaks.memfdDescriptors()).isZero();
        assertThat(Leaks.openFds()).isEqualTo(fdsBefore);
        assertThatThrownBy(() -> kept.segment().get(JAVA_LONG, 0)).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> provider.allocate(SIZE)).isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
    }

    /**
     * A free after the provider's close, which freed every chunk, does nothing, as posix's and devdax's do; a chunk of
     * another provider is refused all the same. It threw IllegalArgumentException "freed already, or allocated by
     * another provider", so a holder that frees its chunks after the pool closed failed where the other plugins pass.
     */
    @Test
    void aFreeAfterTheCloseDoesNothingAndAnotherProvidersChunkIsRefusedStill() {
        try (MemoryProvider other = plugin.openMemoryProvider(TestContext.of(shared))) {
            Chunk othersChunk = other.allocate(SIZE);
            MemoryProvider provider = plugin.openMemoryProvider(TestContext.of(shared));
            Chunk exported = provider.allocate(SIZE);
            Chunk kept = provider.allocate(SIZE);
            provider.export(exported);
            provider.close();

            assertThatCode(() -> provider.free(exported)).doesNotThrowAnyException();
            assertThatCode(() -> provider.free(kept)).doesNotThrowAnyException();
            assertThatThrownBy(() -> provider.free(othersChunk)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("not a live chunk of this memfd provider");
            assertThat(othersChunk.segment().get(JAVA_LONG, 0)).as("the other provider's chunk, still mapped").isZero();
        }
    }

    @Test
    void reclaimsTheLeaseAndSocketOfADeadProvider() {
        String owner = SharedDirectory.randomId();
        String lease = "conduit-memfd-" + owner + ".lease";
        String socket = "conduit-memfd-" + owner + "-0123456789abcdef.sock";
        try (SharedDirectory directory = SharedDirectory.open(libc, shared, "test");
             FileDescriptor leaseFile = directory.createExclusive(lease);
             FileDescriptor listener = libc.socket(SocketFlags.SOCK_STREAM)) {
            libc.bind(listener, shared.resolve(socket).toString());
            // A dead owner: nobody holds the lease's lock.
            assertThat(libc.tryFlock(leaseFile, LockFlags.LOCK_SH)).isTrue();
            libc.flock(leaseFile, LockFlags.LOCK_UN);
        }
        String live = "conduit-memfd-" + SharedDirectory.randomId() + ".lease";
        try (SharedDirectory directory = SharedDirectory.open(libc, shared, "test");
             FileDescriptor liveLease = directory.createExclusive(live)) {
            libc.flock(liveLease, LockFlags.LOCK_EX);
            MemoryProvider provider = plugin.openMemoryProvider(TestContext.of(shared));
            assertThat(Leaks.files(shared)).doesNotContain(lease, socket).contains(live);
            provider.close();
            directory.unlink(live);
        }
        assertThat(Leaks.files(shared)).isEmpty();
    }

    @Test
    void aMalformedAllowedUidFailsBeforeAnythingIsCreated() {
        for (String bad : new String[] {"alice", "-1", "4294967295", "1.5"}) {
            assertThatThrownBy(() -> plugin.openMemoryProvider(TestContext.of(shared, Map.of("memfd.allowed.uids", "1000," + bad))))
                    .isInstanceOf(ConfigException.class)
                    .hasMessageContaining("'" + bad + "'")
                    .hasMessageContaining("conduit.memfd.allowed.uids")
                    .hasMessageContaining("CONDUIT_MEMFD_ALLOWED_UIDS");
        }
        assertThat(Leaks.files(shared)).isEmpty();
    }

    @Test
    void aMissingSharedDirectoryIsReportedWithTheKeyToSet() {
        Path missing = shared.resolve("missing");
        assertThatThrownBy(() -> plugin.openMemoryProvider(TestContext.of(missing)))
                .hasMessageContaining(missing.toString())
                .hasMessageContaining("ENOENT")
                .hasMessageContaining("shared.dir");
    }

    /** The socket of a directory too long for a socket address is bound through /proc/self/fd, in that directory, and chmod'ed there. */
    @Test
    void aSharedDirectoryTooLongForASocketAddressGetsItsSocketThroughProcSelfFdWithItsPermissions() throws Exception {
        Path deep = Files.createDirectories(shared.resolve("d".repeat(120)));
        try (MemoryProvider provider = plugin.openMemoryProvider(TestContext.of(deep))) {
            Chunk chunk = provider.allocate(SIZE);
            provider.export(chunk);
            Path socket = deep.resolve(Leaks.files(deep).stream().filter(name -> name.endsWith(FdProtocol.SOCKET_SUFFIX)).findFirst()
                    .orElseThrow(() -> new AssertionError("no socket in " + deep + ": " + Leaks.files(deep))));
            assertThat(Files.readAttributes(socket, java.nio.file.attribute.BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS).isOther())
                    .as("%s is a socket", socket).isTrue();
            assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(socket, LinkOption.NOFOLLOW_LINKS)))
                    .as("the socket's mode, set through /proc/self/fd").isEqualTo("rw-------");
        }
        assertThat(Leaks.files(deep)).isEmpty();
    }

    /**
     * A process out of descriptors when its first export starts the fd server (socket, listen or
     * eventfd failing with EMFILE) was told "eventfd(0, EFD_NONBLOCK|EFD_CLOEXEC): EMFILE (Too many
     * open files)" and nothing else (conduit perf at --nofile=36): no path, no remedy. The export
     * now names the server's socket and the descriptor limit to raise, and leaves no socket behind.
     */
    @org.junit.jupiter.params.ParameterizedTest(name = "{0}")
    @org.junit.jupiter.params.provider.ValueSource(strings = {"socket", "listen", "eventfd"})
    void anExportOutOfDescriptorsWhenItStartsTheServerSaysToRaiseTheLimitAndLeavesNoSocket(String call) {
        try (MemoryProvider provider = MemfdProvider.open(FailingLibc.failing(call, dev.conduit.linux.Errno.EMFILE), TestContext.of(shared))) {
            Chunk chunk = provider.allocate(SIZE);
            assertThatThrownBy(() -> provider.export(chunk))
                    .isInstanceOf(dev.conduit.spi.ConduitException.class)
                    .hasMessageContaining("cannot start the memfd fd server at " + shared)
                    .hasMessageContaining("EMFILE")
                    .hasMessageContaining("raise its open-file limit (ulimit -n");
            assertThat(Leaks.files(shared)).singleElement().satisfies(name -> assertThat(name).endsWith(".lease"));
        }
        assertThat(Leaks.files(shared)).isEmpty();
    }

    /**
     * A chunk whose mmap fails with ENOMEM under an address-space limit (conduit perf under
     * prlimit --as: the bounce ring's chunk) was blamed on memory or mappings, with vm.max_map_count
     * to raise: the limit that refused it, ulimit -v, was not named.
     */
    @Test
    void aChunkThatCannotBeMappedForWantOfAddressSpaceNamesTheAddressSpaceLimit() {
        try (MemoryProvider provider = MemfdProvider.open(FailingLibc.failing("mmap", dev.conduit.linux.Errno.ENOMEM), TestContext.of(shared))) {
            assertThatThrownBy(() -> provider.allocate(SIZE))
                    .hasMessageContaining("ENOMEM")
                    .hasMessageContaining("address-space limit (ulimit -v");
        }
    }

    /**
     * A chunk that memfd_create refused for want of descriptors was told to raise the process's
     * open-file limit (ulimit -n) also when the system's table was full (ENFILE), which that limit
     * does not lift. It now gives the remedy every module gives for each, and what chunks change.
     */
    @Test
    void aChunkRefusedForWantOfDescriptorsSaysWhichLimitToRaise() {
        Map<Integer, String> limits = Map.of(
                dev.conduit.linux.Errno.EMFILE, "raise its open-file limit (ulimit -n",
                dev.conduit.linux.Errno.ENFILE, "raise fs.file-max");
        limits.forEach((errno, limit) -> {
            try (MemoryProvider provider = MemfdProvider.open(FailingLibc.failing("memfdCreate", errno), TestContext.of(shared))) {
                assertThatThrownBy(() -> provider.allocate(SIZE))
                        .hasMessageContaining(dev.conduit.linux.Errno.name(errno))
                        .hasMessageContaining(limit)
                        .hasMessageContaining("larger chunks (pool.chunk.size) need fewer");
            }
        });
    }

    /**
     * Removing what dead providers left is housekeeping for others: a directory this process can
     * write but not list (mode 0733, say) lets the provider open and allocate, with a WARNING naming
     * the directory and why. It failed the provider's open, where the posix provider opened.
     */
    @Test
    void aDirectoryItCannotListOpensTheProviderWithAWarning() {
        dev.conduit.tck.RecordingLogger recording = new dev.conduit.tck.RecordingLogger();
        try (MemoryProvider provider = MemfdProvider.open(FailingLibc.failing("listDirectory", dev.conduit.linux.Errno.EACCES),
                TestContext.of(shared).withLogger(recording))) {
            Chunk chunk = provider.allocate(provider.pageSize());
            provider.free(chunk);
        }
        assertThat(recording.warnings()).hasSize(2);
        assertThat(recording.warnings().getFirst())
                .contains("could not remove every file of dead owners (conduit-memfd-*) in " + shared)
                .contains("cannot list the shared directory " + shared + ": EACCES")
                .contains("the next provider to open there tries again");
        // Its close cannot list the directory either, to tell that its socket is gone: it leaves the lease to a reclaim.
        assertThat(recording.warnings().get(1))
                .contains("cannot tell whether every file conduit-memfd-")
                .contains("cannot list the shared directory " + shared + ": EACCES")
                .contains(".lease is kept, unlocked");
    }

    /**
     * A close that cannot remove the fd server's socket ({@code unlinkat} fails with {@code EACCES},
     * as when the directory's permissions changed while in use) throws as before, keeps the
     * provider's lease, unlocked, and warns naming the socket, the errno and the reclaim that will
     * remove it: the next provider to open on the directory removes the socket and then the lease.
     * The close used to remove the lease anyway, and the socket, which no lease named any more,
     * stayed in the directory for good.
     */
    @Test
    void aSocketTheCloseCannotRemoveIsReclaimedWithItsLeaseByTheNextProvider() {
        java.util.concurrent.atomic.AtomicBoolean refusing = new java.util.concurrent.atomic.AtomicBoolean();
        Libc refusingSockets = unlinkFailing(name -> refusing.get() && name.endsWith(FdProtocol.SOCKET_SUFFIX), dev.conduit.linux.Errno.EACCES);
        dev.conduit.tck.RecordingLogger recording = new dev.conduit.tck.RecordingLogger();
        MemoryProvider provider = MemfdProvider.open(refusingSockets, TestContext.of(shared).withLogger(recording));
        provider.export(provider.allocate(provider.pageSize()));
        java.util.List<String> files = Leaks.files(shared);
        String socket = files.stream().filter(name -> name.endsWith(FdProtocol.SOCKET_SUFFIX)).findFirst().orElseThrow();
        String lease = files.stream().filter(name -> name.endsWith(".lease")).findFirst().orElseThrow();
        refusing.set(true);

        assertThatThrownBy(provider::close).isInstanceOf(ConduitException.class)
                .hasMessageContaining("cannot remove " + shared.resolve(socket)).hasMessageContaining("EACCES");
        provider.close(); // idempotent, and throws nothing more

        assertThat(Leaks.files(shared)).containsExactlyInAnyOrder(socket, lease);
        assertThat(recording.warnings()).singleElement().asString()
                .contains("cannot remove " + shared.resolve(socket) + ": EACCES")
                .contains("the lease " + shared.resolve(lease) + " is kept, unlocked")
                .contains("next reclaim of dead owners' files in " + shared + ", which any Conduit process runs as it opens");
        refusing.set(false);
        try (MemoryProvider next = plugin.openMemoryProvider(TestContext.of(shared))) {
            assertThat(Leaks.files(shared)).singleElement().asString().endsWith(".lease").isNotEqualTo(lease);
        }
        assertThat(Leaks.files(shared)).isEmpty();
    }

    /**
     * A step of the close that fails with an {@code Error} (here the socket's removal) stops no
     * other: the close used to collect only {@code RuntimeException}s, so the error left it there,
     * with every chunk mapped and the lease locked for the life of the process.
     */
    @Test
    void aStepOfTheCloseThatFailsWithAnErrorStopsNoOtherStep() {
        java.util.concurrent.atomic.AtomicBoolean failing = new java.util.concurrent.atomic.AtomicBoolean();
        Libc libcFailingWithAnError = (Libc) java.lang.reflect.Proxy.newProxyInstance(Libc.class.getClassLoader(), new Class<?>[] {Libc.class},
                (proxy, method, args) -> {
                    if (failing.get() && method.getName().equals("unlinkat") && ((String) args[1]).endsWith(FdProtocol.SOCKET_SUFFIX)) {
                        throw new InternalError("injected by the test");
                    }
                    try {
                        return method.invoke(libc, args);
                    } catch (java.lang.reflect.InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        MemoryProvider provider = MemfdProvider.open(libcFailingWithAnError, TestContext.of(shared));
        Chunk chunk = provider.allocate(provider.pageSize());
        provider.export(chunk);
        failing.set(true);

        assertThatThrownBy(provider::close).isInstanceOf(ConduitException.class).hasMessageContaining("a clean-up step failed with")
                .hasCauseInstanceOf(InternalError.class);
        assertThatThrownBy(() -> chunk.segment().get(java.lang.foreign.ValueLayout.JAVA_BYTE, 0))
                .as("the chunk, unmapped by the close's later steps").isInstanceOf(IllegalStateException.class);
        failing.set(false);
        try (MemoryProvider next = plugin.openMemoryProvider(TestContext.of(shared))) {
            assertThat(Leaks.files(shared)).as("the socket and the lease, reclaimed: the lease was unlocked").singleElement().asString()
                    .endsWith(".lease");
        }
        assertThat(Leaks.files(shared)).isEmpty();
    }

    /** The real libc, except that {@code unlinkat} of a name {@code fails} accepts fails with {@code errno}. */
    private static Libc unlinkFailing(java.util.function.Predicate<String> fails, int errno) {
        return FailingLibc.throwing((name, args) -> name.equals("unlinkat") && fails.test((String) args[1])
                ? new dev.conduit.linux.ErrnoException("unlinkat", errno, "fake", "injected by the test") : null);
    }
}
