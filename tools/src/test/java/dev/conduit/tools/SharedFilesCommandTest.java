package dev.conduit.tools;

import dev.conduit.Conduit;
import dev.conduit.Pool;
import dev.conduit.Worker;
import dev.conduit.spi.ThreadMode;
import dev.conduit.tools.CommandRunner.Result;
import dev.conduit.tools.ConduitProcess.Output;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code conduit info}'s SHARED FILES and {@code conduit reclaim}: a dead owner's files are listed as
 * dead and removed, a live owner's (a worker and a pool open in this JVM) listed as live and left
 * alone, as are a pending lease and a file no lease names; a directory that cannot be opened is
 * said so, naming the errno and the key.
 */
class SharedFilesCommandTest {

    private static final String DEAD = "0123456789abcdef0123456789abcdef";
    private static final String DEAD_LEASE = "conduit-posix-" + DEAD + ".lease";
    private static final String DEAD_CHUNK = "conduit-posix-" + DEAD + "-fedcba9876543210fedcba9876543210.chunk";
    private static final String PENDING = "conduit-posix-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.lease-pending";
    private static final String STRAY = "conduit-posix-stray.txt";

    private final CommandRunner conduit = CommandRunner.discovering();

    @TempDir
    Path shared;

    /** What a process killed with -9 leaves: a lease nobody holds and a chunk named after its owner. */
    private void leaveADeadOwner() throws IOException {
        Files.createFile(shared.resolve(DEAD_LEASE));
        Files.write(shared.resolve(DEAD_CHUNK), new byte[4096]);
        Files.createFile(shared.resolve(PENDING));
        Files.write(shared.resolve(STRAY), new byte[12]);
    }

    private Conduit openLiveOwner() {
        return Conduit.builder().environment(Map.of()).systemProperties(new java.util.Properties())
                .set("shared.dir", shared.toString()).set("transports", "posix").build();
    }

    @Test
    void infoListsADeadOwnerAsDeadAndALiveOneAsLiveAndRemovesNothing() throws IOException {
        try (Conduit live = openLiveOwner(); Worker worker = live.newWorker(ThreadMode.SINGLE); Pool pool = live.pool("posix")) {
            pool.allocate(4096);
            leaveADeadOwner();
            List<String> before = names();

            Result result = conduit.run("info", "--set", "shared.dir=" + shared);

            assertThat(result.exitCode()).as(result.err()).isZero();
            String section = result.out().substring(result.out().indexOf("SHARED FILES"));
            assertThat(section).contains("  posix  " + shared + "  (shared.dir (CONDUIT_SHARED_DIR))",
                    "DEAD      " + DEAD_LEASE,
                    "            " + DEAD_CHUNK + "  4096 bytes",
                    "PENDING   " + PENDING,
                    "NO LEASE  " + STRAY + "  12 bytes",
                    "of which dead owners' 4096 (conduit reclaim removes them)",
                    "LIVE      conduit-posix-worker-");
            assertThat(section).contains("5 owners (3 live, 1 dead, 1 pending)");
            assertThat(section).containsPattern("LIVE      conduit-posix-[0-9a-f]{32}\\.lease\\n +conduit-posix-[0-9a-f]{32}-[0-9a-f]{32}\\.chunk");
            assertThat(names()).as("info removes nothing").isEqualTo(before);
        }
    }

    @Test
    void reclaimRemovesTheDeadOwnersFilesAndLeavesTheLiveOwnersThePendingLeaseAside() throws IOException {
        try (Conduit live = openLiveOwner(); Worker worker = live.newWorker(ThreadMode.SINGLE); Pool pool = live.pool("posix")) {
            pool.allocate(4096);
            leaveADeadOwner();
            List<String> liveFiles = names().stream().filter(n -> !n.contains(DEAD) && !n.equals(PENDING) && !n.equals(STRAY)).toList();
            assertThat(liveFiles).isNotEmpty();

            Result result = conduit.run("reclaim", "--set", "shared.dir=" + shared, "--set", "transports=posix");

            assertThat(result.exitCode()).as(result.out() + result.err()).isZero();
            assertThat(result.out()).contains(
                    "removed      " + DEAD_CHUNK + "  4096 bytes  (dead owner " + DEAD + ")",
                    "removed      " + DEAD_LEASE + "  0 bytes  (dead owner " + DEAD + ")",
                    "removed      " + PENDING + "  0 bytes  (a pending lease nobody held)",
                    "removed 2 files, 4096 bytes, of 1 dead owner; removed 1 pending lease nobody held\n",
                    "1 file that no lease names (12 bytes: no reclaim removes them");
            assertThat(result.out()).containsPattern("left: 3 live owners \\(\\d+ files?, \\d+ bytes\\)");
            assertThat(names()).as("the live owners' files and the stray file stay").containsExactlyInAnyOrderElementsOf(
                    Stream.concat(liveFiles.stream(), Stream.of(STRAY)).toList());
            // The live owners go on: their files are theirs to remove.
            pool.allocate(4096);
        }
        assertThat(names()).containsExactly(STRAY);
    }

    /**
     * {@code conduit reclaim --dry-run} lists what a reclaim would remove (the dead owner's files, its lease last, the pending
     * lease nobody holds) and what it would leave, and removes nothing: exit code 3, the files all there, none of the live
     * owners' listed; the reclaim run after it removes what it listed (the dry run left no lock behind), and a dry run then
     * finds nothing and exits with 0. There was no dry run: {@code conduit info} had to be read as one.
     */
    @Test
    void reclaimDryRunListsWhatItWouldRemoveRemovesNothingAndSaysSoByItsExitCode() throws IOException {
        try (Conduit live = openLiveOwner(); Worker worker = live.newWorker(ThreadMode.SINGLE); Pool pool = live.pool("posix")) {
            pool.allocate(4096);
            leaveADeadOwner();
            List<String> before = names();
            List<String> liveFiles = before.stream().filter(n -> !n.contains(DEAD) && !n.equals(PENDING) && !n.equals(STRAY)).toList();
            String[] posix = {"--set", "shared.dir=" + shared, "--set", "transports=posix"};

            Result dry = conduit.run(concat("reclaim", concat("--dry-run", posix)));

            assertThat(dry.exitCode()).as(dry.out() + dry.err()).isEqualTo(ConduitCommand.EXIT_WOULD_REMOVE);
            assertThat(dry.err()).isEmpty();
            assertThat(dry.out()).contains(
                    "  would remove " + DEAD_CHUNK + "  4096 bytes  (dead owner " + DEAD + ")\n",
                    "  would remove " + DEAD_LEASE + "  0 bytes  (dead owner " + DEAD + ")\n",
                    "  would remove " + PENDING + "  0 bytes  (a pending lease nobody held)\n",
                    "  would remove 2 files, 4096 bytes, of 1 dead owner; would remove 1 pending lease nobody held\n",
                    "dry run: nothing was removed;");
            assertThat(dry.out()).containsPattern("  would leave: 3 live owners \\(\\d+ files?, \\d+ bytes\\); 1 file that no lease names");
            assertThat(dry.out()).doesNotContain("removed      ", STRAY);
            for (String liveFile : liveFiles) assertThat(dry.out()).as("a live owner's file").doesNotContain(liveFile);
            assertThat(names()).as("a dry run removes nothing").isEqualTo(before);

            Result reclaim = conduit.run(concat("reclaim", posix));
            assertThat(reclaim.exitCode()).as(reclaim.out() + reclaim.err()).isZero();
            assertThat(reclaim.out()).contains("removed 2 files, 4096 bytes, of 1 dead owner; removed 1 pending lease nobody held\n");
            Result nothingLeft = conduit.run(concat("reclaim", concat("--dry-run", posix)));
            assertThat(nothingLeft.exitCode()).as(nothingLeft.out() + nothingLeft.err()).isEqualTo(ConduitCommand.EXIT_OK);
            assertThat(nothingLeft.out()).contains("  would remove 0 files, 0 bytes, of 0 dead owners\n");
        }
    }

    /**
     * Anyone who may write the shared directory names files there: a newline in a name forged a line
     * of {@code conduit info}'s listing (a LIVE owner that is none) and of a reclaim's, and an escape
     * sequence reached the terminal of whoever read them. Control characters are shown as
     * {@code \\uXXXX}.
     */
    @Test
    void namesOthersGaveTheirFilesForgeNoLineAndReachNoTerminal() throws IOException {
        String forged = "\n    LIVE      conduit-posix-forged.lease\u001b[2J";
        Files.createFile(shared.resolve(DEAD_LEASE));
        Files.write(shared.resolve("conduit-posix-" + DEAD + "-x" + forged), new byte[1]);
        Files.write(shared.resolve("conduit-posix-stray" + forged), new byte[1]);
        String[] posix = {"--set", "shared.dir=" + shared, "--set", "transports=posix"};

        for (Result result : List.of(conduit.run(concat("info", posix)), conduit.run(concat("reclaim", concat("--dry-run", posix))))) {
            assertThat(result.out()).as(result.out() + result.err())
                    .doesNotContain("\u001b", "\n    LIVE      conduit-posix-forged.lease")
                    .contains("\\u000a    LIVE      conduit-posix-forged.lease\\u001b[2J");
        }
    }

    /**
     * The same forged name on a dead owner's file that the reclaim cannot remove (a directory: {@code unlink(2)} refuses
     * it, root too): its "not removed" line shows the name escaped, then the errno's message, which quotes the name as
     * the kernel was given it ({@code unlinkat(fd N (...), "<name>", 0)}): the newline forges a line of the reclaim's
     * output, and the escape sequence reaches the terminal of whoever runs {@code conduit reclaim}.
     */
    @Test
    void aForgedNameTheReclaimCannotRemoveForgesNoLineAndReachesNoTerminal() throws IOException {
        String forged = "\n    LIVE      conduit-posix-forged.lease\u001b[2J";
        Files.createFile(shared.resolve(DEAD_LEASE));
        Files.createDirectory(shared.resolve("conduit-posix-" + DEAD + "-x" + forged));

        Result result = conduit.run("reclaim", "--set", "shared.dir=" + shared, "--set", "transports=posix");

        assertThat(result.out()).as(result.out() + result.err()).contains("not removed  conduit-posix-" + DEAD + "-x\\u000a")
                .doesNotContain("\u001b", "\n    LIVE      conduit-posix-forged.lease");
    }

    /**
     * {@code --dry-run --json} writes the real run's document, {@code "dryRun": true}, each file it would remove in
     * {@code removed} with {@code "action": "WOULD_REMOVE"}, nothing in {@code notRemoved}, and {@code left} what a reclaim
     * would leave: the live owners and the file no lease names, not the dead owner nor the pending lease.
     */
    @Test
    void reclaimDryRunJsonHasTheRealRunsShapeAndSaysWouldRemove() throws IOException {
        try (Conduit live = openLiveOwner(); Worker worker = live.newWorker(ThreadMode.SINGLE)) {
            leaveADeadOwner();
            List<String> before = names();

            Result result = conduit.run("reclaim", "--dry-run", "--json", "--set", "shared.dir=" + shared, "--set", "transports=posix");

            assertThat(result.exitCode()).as(result.out() + result.err()).isEqualTo(ConduitCommand.EXIT_WOULD_REMOVE);
            assertThat(result.err()).isEmpty();
            Map<String, Object> dry = JsonParser.parseObject(result.out());
            assertThat(dry.keySet()).containsExactly("version", "dryRun", "places", "failures");
            assertThat(dry).containsEntry("dryRun", true);
            assertThat(Json.list(dry, "failures")).isEmpty();
            Map<String, Object> posix = Json.objects(dry, "places").getFirst();
            assertThat(posix.keySet()).containsExactly("plugin", "directory", "setBy", "error", "removed", "notRemoved", "removedCounts",
                    "notRemovedCounts", "deadOwners", "deadOwnersBytes", "left");
            List<Map<String, Object>> removed = Json.objects(posix, "removed");
            assertThat(removed.getFirst().keySet()).containsExactly("name", "kind", "owner", "bytes", "action");
            assertThat(removed).extracting(f -> f.get("name"), f -> f.get("kind"), f -> f.get("action")).containsExactlyInAnyOrder(
                    org.assertj.core.groups.Tuple.tuple(DEAD_CHUNK, "DEAD_OWNERS_FILE", "WOULD_REMOVE"),
                    org.assertj.core.groups.Tuple.tuple(DEAD_LEASE, "DEAD_OWNERS_FILE", "WOULD_REMOVE"),
                    org.assertj.core.groups.Tuple.tuple(PENDING, "PENDING_LEASE", "WOULD_REMOVE"));
            assertThat(Json.list(posix, "notRemoved")).isEmpty();
            assertThat(longs(Json.object(posix, "removedCounts"))).isEqualTo(Map.of("DEAD_OWNERS_FILE", 2L, "PENDING_LEASE", 1L, "PROBE_FILE", 0L));
            assertThat(((Number) posix.get("deadOwners")).longValue()).isEqualTo(1);
            assertThat(((Number) posix.get("deadOwnersBytes")).longValue()).isEqualTo(4096);
            Map<String, Object> left = Json.object(posix, "left");
            assertThat(Json.objects(left, "byState")).extracting(s -> s.get("state")).containsExactly("LIVE");
            assertThat(Json.objects(left, "owners")).extracting(o -> o.get("state")).containsOnly("LIVE").isNotEmpty();
            assertThat(Json.objects(left, "unowned")).extracting(f -> f.get("name")).containsExactly(STRAY);
            assertThat(names()).as("a dry run removes nothing").isEqualTo(before);
        }
    }

    /**
     * A dry run that cannot list a directory fails as the reclaim does (exit code 1, the document's {@code failures}): never
     * 3 nor 0, which would say what is there. Nor does one whose output could not be written say 3.
     */
    @Test
    void reclaimDryRunThatCannotLookOrWriteExitsWithOne() throws IOException {
        Path missing = shared.resolve("missing");

        Result result = conduit.run("reclaim", "--dry-run", "--json", "--set", "shared.dir=" + missing, "--set", "transports=posix");

        assertThat(result.exitCode()).isEqualTo(ConduitCommand.EXIT_FAILED);
        assertThat(Json.list(JsonParser.parseObject(result.out()), "failures")).containsExactly("cannot reclaim in posix in " + missing);
        leaveADeadOwner();
        Result fullDisk = conduit.runWritingTo(new java.io.Writer() {
            @Override public void write(char[] text, int offset, int length) throws IOException { throw new IOException("No space left on device"); }
            @Override public void flush() { }
            @Override public void close() { }
        }, "reclaim", "--dry-run", "--json", "--set", "shared.dir=" + shared, "--set", "transports=posix");
        assertThat(fullDisk.exitCode()).as(fullDisk.err()).isEqualTo(ConduitCommand.EXIT_FAILED);
        assertThat(fullDisk.err()).contains("cannot write to standard output: No space left on device");
    }

    @Test
    void theOwnersOfAProcessKilledWithSigkillAreListedLiveThenDeadAndReclaimed() throws Exception {
        List<String> command = new ArrayList<>(PerfPeer.javaCommand());
        command.addAll(List.of("perf", "--server", "--shared-dir", shared.toString(), "-t", "posix"));
        Process server = new ProcessBuilder(command).redirectErrorStream(true).start();
        try {
            BufferedReader lines = new BufferedReader(new InputStreamReader(server.getInputStream(), StandardCharsets.UTF_8));
            StringBuilder seen = new StringBuilder();
            HangGuard.await("the server's 'published' line", () -> seen.length() + HangGuard.childrenCpu(), () -> {
                for (String line; (line = lines.readLine()) != null; ) {
                    seen.append(line).append('\n');
                    if (line.contains("published ")) return line;
                }
                throw new AssertionError("the server ended without publishing; it printed:\n" + seen);
            });
            String[] posix = {"--set", "shared.dir=" + shared, "--set", "transports=posix"};

            String whileItLives = sharedFiles(conduit.run(concat("info", posix)));
            assertThat(whileItLives).contains("LIVE      conduit-posix-worker-").doesNotContain("DEAD ");
            Result dryWhileItLives = conduit.run(concat("reclaim", concat("--dry-run", posix)));
            assertThat(dryWhileItLives.exitCode()).as(dryWhileItLives.out() + dryWhileItLives.err()).isEqualTo(ConduitCommand.EXIT_OK);
            assertThat(dryWhileItLives.out()).doesNotContain("would remove conduit-").contains("would remove 0 files, 0 bytes, of 0 dead owners");

            server.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
            String once = sharedFiles(conduit.run(concat("info", posix)));
            assertThat(once).contains("DEAD      conduit-posix-worker-", "conduit reclaim removes them").doesNotContain("LIVE ");
            List<String> killed = names();
            Result dryOnceDead = conduit.run(concat("reclaim", concat("--dry-run", posix)));
            assertThat(dryOnceDead.exitCode()).as(dryOnceDead.out() + dryOnceDead.err()).isEqualTo(ConduitCommand.EXIT_WOULD_REMOVE);
            assertThat(dryOnceDead.out()).containsPattern("would remove conduit-posix-[0-9a-f]{32}-[0-9a-f]{32}\\.chunk  [1-9]\\d* bytes  "
                    + "\\(dead owner [0-9a-f]{32}\\)").contains("would leave: nothing");
            assertThat(names()).as("a dry run removes nothing").isEqualTo(killed);

            Result reclaimed = conduit.run(concat("reclaim", posix));
            assertThat(reclaimed.exitCode()).as(reclaimed.out() + reclaimed.err()).isZero();
            assertThat(reclaimed.out()).containsPattern("removed      conduit-posix-[0-9a-f]{32}-[0-9a-f]{32}\\.chunk  [1-9]\\d* bytes  "
                    + "\\(dead owner [0-9a-f]{32}\\)").contains("left: nothing");
            assertThat(names()).noneMatch(n -> n.startsWith("conduit-posix"));
        } finally {
            server.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
        }
    }

    private static String[] concat(String first, String... rest) {
        return Stream.concat(Stream.of(first), Stream.of(rest)).toArray(String[]::new);
    }

    private static String sharedFiles(Result result) {
        assertThat(result.exitCode()).as(result.err()).isZero();
        return result.out().substring(result.out().indexOf("SHARED FILES"));
    }

    @Test
    void aFileOfADeadOwnerThatCannotBeRemovedIsNamedWithItsErrnoAndKeepsTheLease() throws IOException {
        leaveADeadOwner();
        // unlink(2) refuses a directory whoever asks (EISDIR), root too, where a permission would not stop root.
        String directory = "conduit-posix-" + DEAD + "-subdirectory";
        Files.createDirectory(shared.resolve(directory));

        Result result = conduit.run("reclaim", "--set", "shared.dir=" + shared, "--set", "transports=posix");

        assertThat(result.exitCode()).as(result.out() + result.err()).isEqualTo(ConduitCommand.EXIT_FAILED);
        assertThat(result.out()).contains(
                "removed      " + DEAD_CHUNK + "  4096 bytes  (dead owner " + DEAD + ")",
                "not removed  " + directory + "  (dead owner " + DEAD + "): EISDIR (",
                "a directory has the name of a dead owner's file: remove it by hand (rm -r) once you know no program of yours "
                        + "made it; its lease stays, so that the next reclaim tries again",
                "removed 1 file, 4096 bytes, of 1 dead owner; removed 1 pending lease nobody held; not removed: 1 file of dead owners\n",
                "left: 1 dead owner (1 file, ");
        assertThat(result.err()).contains("conduit: 1 file of dead owners could not be removed (above, with what to do)");
        assertThat(names()).contains(DEAD_LEASE, directory).doesNotContain(DEAD_CHUNK, PENDING);
    }

    /**
     * On a directory other kernels may see too (9p here, its {@code fstatfs} faked), a free lease may be held under another
     * kernel: {@code conduit reclaim} refuses it, naming the file system, the directory, the risk and {@code --trust-leases},
     * and exits with 1 having removed nothing, also with {@code --dry-run} (not 3: nothing was judged), whose last line
     * then says that the reclaim would be refused too: it said "conduit reclaim without --dry-run removes what it then
     * finds", which sent the user to a run refused the same way. With {@code --trust-leases} it reclaims as on tmpfs.
     * Until 2026-12-08 the refusal had no test.
     */
    @Test
    void reclaimRefusesADirectoryOtherKernelsMaySeeUnlessTrustLeasesIsGiven() throws IOException {
        leaveADeadOwner();
        List<String> before = names();
        CommandRunner over9p = conduit.withLibc(FileSystemType.answering(dev.conduit.linux.Libc.V9FS_MAGIC));
        String[] posix = {"--set", "shared.dir=" + shared, "--set", "transports=posix"};

        for (Result refused : List.of(over9p.run(concat("reclaim", posix)), over9p.run(concat("reclaim", concat("--dry-run", posix))))) {
            assertThat(refused.exitCode()).as(refused.out() + refused.err()).isEqualTo(ConduitCommand.EXIT_FAILED);
            assertThat(refused.out()).contains("  cannot reclaim: the shared directory " + shared + " is on 9p, which other kernels "
                            + "may see too",
                    "so a live owner there looks dead here, and a reclaim would remove its files",
                    ": run conduit reclaim --trust-leases once no process under another kernel uses the directory, or its locks "
                            + "reach every kernel that does\n")
                    .doesNotContain("removed      ", "  would remove ", "left:");
            assertThat(refused.err()).contains("conduit: cannot reclaim in posix in " + shared);
            assertThat(names()).as("a refused reclaim removes nothing").isEqualTo(before);
        }
        assertThat(over9p.run(concat("reclaim", concat("--dry-run", posix))).out()).as("the dry run's last line")
                .endsWith("\ndry run: nothing was removed; conduit reclaim without --dry-run cannot reclaim there either (above, "
                        + "with what to do)\n")
                .doesNotContain("removes what it then finds");

        Result trusted = over9p.run(concat("reclaim", concat("--trust-leases", posix)));

        assertThat(trusted.exitCode()).as(trusted.out() + trusted.err()).isZero();
        assertThat(trusted.out()).contains("removed 2 files, 4096 bytes, of 1 dead owner; removed 1 pending lease nobody held\n");
        assertThat(names()).containsExactly(STRAY);
    }

    /**
     * A dry run that could judge one place and not another (posix.dir missing) says what the reclaim without
     * {@code --dry-run} removes of the place it judged, by name, and that it cannot reclaim where the dry run could not;
     * it said the reclaim "removes what it then finds" of every place.
     */
    @Test
    void reclaimDryRunSaysWhatTheReclaimRemovesOnlyOfThePlacesItCouldJudge() throws IOException {
        leaveADeadOwner();
        Path missing = shared.resolve("missing");

        Result dry = conduit.run("reclaim", "--dry-run", "--set", "shared.dir=" + shared, "--set", "posix.dir=" + missing,
                "--set", "transports=posix");

        assertThat(dry.exitCode()).as(dry.out() + dry.err()).isEqualTo(ConduitCommand.EXIT_FAILED);
        assertThat(dry.out()).contains("posix  " + missing + "  (posix.dir", "  cannot reclaim: ")
                .endsWith("\ndry run: nothing was removed; conduit reclaim without --dry-run removes what it then finds of dead owners "
                        + "in posix in " + shared + " (where this dry run could not reclaim, above, it cannot either), an owner that "
                        + "dies meanwhile included\n");
    }

    @Test
    void reclaimBehindAReadOnlyMountNamesEroFsAndKeepsTheDeadOwnersLease() throws Exception {
        leaveADeadOwner();

        // A container's -v DIR:DIR:ro: the bind mount refuses root too (EROFS).
        Output result = ConduitProcess.runThrough(List.of("unshare", "--mount", "sh", "-c",
                        "mount --bind -o ro \"$1\" \"$1\" && shift && exec \"$@\"", "read-only-mount", shared.toString()),
                "reclaim", "--set", "shared.dir=" + shared, "--set", "transports=posix");

        assertThat(result.exitCode()).as(result.output()).isEqualTo(ConduitCommand.EXIT_FAILED);
        assertThat(result.output()).contains(
                "not removed  " + DEAD_CHUNK + "  (dead owner " + DEAD + "): EROFS (",
                shared + " is mounted read-only here: run conduit reclaim where it is mounted read-write; its lease stays, so "
                        + "that the next reclaim tries again",
                "not removed  " + PENDING + "  (a pending lease nobody held): EROFS (",
                "removed 0 files, 0 bytes, of 0 dead owners; not removed: 1 file of dead owners and 1 pending lease nobody held\n",
                "conduit: 1 file of dead owners and 1 pending lease nobody held could not be removed (above, with what to do)");
        assertThat(names()).contains(DEAD_LEASE, DEAD_CHUNK, PENDING);
    }

    @Test
    void infoOfADirectoryThisUserCannotReadNamesEaccesAndTheKey() throws Exception {
        Path unreadable = Files.createDirectory(shared.resolve("unreadable"));
        Files.setPosixFilePermissions(unreadable, java.util.Set.of());

        // Root reads any directory: without the capabilities that override file modes, modes bind it as any user.
        Output result = ConduitProcess.runThrough(ConduitProcess.WITHOUT_DAC_OVERRIDE,
                "info", "--set", "shared.dir=" + unreadable, "--set", "transports=memfd");

        assertThat(result.exitCode()).as(result.output()).isZero();
        String section = result.output().substring(result.output().indexOf("SHARED FILES")).replace("\n    ", " ");
        assertThat(section).contains("  memfd  " + unreadable + "  (shared.dir (CONDUIT_SHARED_DIR))",
                "cannot list: cannot open the shared directory " + unreadable + ": EACCES",
                "or set shared.dir (CONDUIT_SHARED_DIR)");
    }

    @Test
    void anotherUsersLeaseIsListedUnjudgedWithTheErrnoAndReclaimLeavesItsFiles() throws Exception {
        leaveADeadOwnerOfAnotherUser();
        List<String> withoutOverride = ConduitProcess.WITHOUT_DAC_OVERRIDE;

        Output info = ConduitProcess.runThrough(withoutOverride, "info", "--set", "shared.dir=" + shared, "--set", "transports=posix");
        Output reclaim = ConduitProcess.runThrough(withoutOverride, "reclaim", "--set", "shared.dir=" + shared, "--set", "transports=posix");

        assertThat(info.exitCode()).as(info.output()).isZero();
        assertThat(info.output()).contains("UNJUDGED  " + DEAD_LEASE + "  EACCES (", "            " + DEAD_CHUNK + "  4096 bytes");
        assertThat(reclaim.exitCode()).as(reclaim.output()).isZero();
        assertThat(reclaim.output().replace("\n    ", " ")).contains("left: 1 unjudged owner (1 file, 4096 bytes): their leases are "
                + "another user's (conduit info gives each one's why: it does not open for this user, or it opens and another user owns "
                + "it): run the reclaim as that user or as root");
        assertThat(names()).contains(DEAD_LEASE, DEAD_CHUNK);
    }

    /**
     * A lease of another user that opens (readable: only a planter makes one, since an owner's is 0600) is left unjudged by a
     * reclaim not run as root, and the reclaim's "left:" line says their leases are another user's and to run it as that
     * user or as root, as conduit info's why says: it said "their leases do not open for this user", of a lease that did.
     * Not root here: uid 4321 in a user namespace of its own ({@code unshare --user --map-user}), where the planted files'
     * owner, uid 54321, whom the namespace does not map, shows as the overflow uid.
     */
    @Test
    void aLeaseOfAnotherUserThatOpensIsLeftUnjudgedAndTheReclaimSaysItIsThatUsers() throws Exception {
        leaveADeadOwner();
        for (String name : List.of(DEAD_LEASE, DEAD_CHUNK)) {
            Files.setAttribute(shared.resolve(name), "unix:uid", 54321); // its mode stays 0644: it opens for every user
        }
        List<String> asUid4321 = List.of("unshare", "--user", "--map-user=4321", "--map-group=4321", "--");

        Output info = ConduitProcess.runThrough(asUid4321, "info", "--set", "shared.dir=" + shared, "--set", "transports=posix");
        Output reclaim = ConduitProcess.runThrough(asUid4321, "reclaim", "--set", "shared.dir=" + shared, "--set", "transports=posix");

        assertThat(info.exitCode()).as(info.output()).isZero();
        assertThat(info.output().replace("\n    ", " ")).contains("UNJUDGED  " + DEAD_LEASE + "  another user's lease, uid 65534, that "
                + "opens for this one (an owner's is 0600: someone planted it); only a reclaim run as that user or as root judges it");
        assertThat(reclaim.exitCode()).as(reclaim.output()).isZero();
        assertThat(reclaim.output().replace("\n    ", " ")).contains("left: 1 unjudged owner (1 file, 4096 bytes): their leases are "
                + "another user's (conduit info gives each one's why: it does not open for this user, or it opens and another user owns "
                + "it): run the reclaim as that user, or as root outside this process's user namespace, on the host");
        assertThat(names()).contains(DEAD_LEASE, DEAD_CHUNK);
    }

    /**
     * In a user namespace of its own (a rootless container's, made here by {@code unshare --user --map-root-user},
     * which maps root alone), root opens only the files of the users its map holds: the remedy for another user's lease
     * is to run the reclaim outside, on the host, not as root.
     */
    @Test
    void aReclaimInAUserNamespaceOfItsOwnSaysAnotherUsersLeaseOpensOnlyFromOutside() throws Exception {
        leaveADeadOwnerOfAnotherUser();

        Output reclaim = ConduitProcess.runThrough(List.of("unshare", "--user", "--map-root-user", "--"),
                "reclaim", "--set", "shared.dir=" + shared, "--set", "transports=posix");

        assertThat(reclaim.exitCode()).as(reclaim.output()).isZero();
        assertThat(reclaim.output().replace("\n    ", " ")).contains("left: 1 unjudged owner (1 file, 4096 bytes): their leases are "
                + "another user's (conduit info gives each one's why: it does not open for this user, or it opens and another user owns "
                + "it): run the reclaim as that user, or as root outside this process's user namespace, on the host");
        assertThat(names()).contains(DEAD_LEASE, DEAD_CHUNK);
    }

    /** A dead owner whose files are another user's (uid 65534), its lease 0600, as in a sticky /dev/shm: it does not open. */
    private void leaveADeadOwnerOfAnotherUser() throws IOException {
        leaveADeadOwner();
        for (String name : List.of(DEAD_LEASE, DEAD_CHUNK)) {
            Files.setAttribute(shared.resolve(name), "unix:uid", 65534);
            Files.setPosixFilePermissions(shared.resolve(name), java.util.Set.of(java.nio.file.attribute.PosixFilePermission.OWNER_READ,
                    java.nio.file.attribute.PosixFilePermission.OWNER_WRITE));
        }
    }

    /**
     * A reclaim that went through, of a directory that then could not be listed again (here moved away as the reclaim
     * removes the dead owner's lease: the reclaim goes on in the directory it holds open), cannot tell whether a dead
     * owner's file is left: it exits 1, naming the place. It said "left: unknown" and exited 0, as if all were done.
     */
    @Test
    void reclaimThatCannotTellWhatIsLeftExitsWithOne() throws IOException {
        Path directory = Files.createDirectory(shared.resolve("reclaimed"));
        Path moved = shared.resolve("moved");
        Files.createFile(directory.resolve(DEAD_LEASE));
        java.io.StringWriter printed = new java.io.StringWriter() {
            @Override
            public void write(String text, int offset, int length) {
                super.write(text, offset, length);
                if (toString().contains("removed      " + DEAD_LEASE) && Files.exists(directory)) {
                    try {
                        Files.move(directory, moved);
                    } catch (IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                }
            }
        };

        Result result = conduit.runWritingTo(printed, "reclaim", "--set", "shared.dir=" + directory, "--set", "transports=posix");

        assertThat(result.exitCode()).as(printed + result.err()).isEqualTo(ConduitCommand.EXIT_FAILED);
        assertThat(printed.toString()).contains("removed 1 file, 0 bytes, of 1 dead owner\n",
                "left: unknown: cannot open the shared directory " + directory + ": ENOENT");
        assertThat(result.err()).contains("conduit: cannot tell what is left in posix in " + directory + " (above, with what to do)");
        assertThat(moved).isEmptyDirectory();
    }

    @Test
    void reclaimOfADirectoryThatDoesNotExistNamesTheErrnoAndTheKey() {
        Path missing = shared.resolve("missing");

        Result result = conduit.run("reclaim", "--set", "shared.dir=" + missing, "--set", "transports=posix");

        assertThat(result.exitCode()).isEqualTo(ConduitCommand.EXIT_FAILED);
        assertThat(result.out()).contains("cannot reclaim: cannot open the shared directory " + missing + ": ENOENT",
                "or set shared.dir (CONDUIT_SHARED_DIR)");
        assertThat(result.err()).contains("conduit: cannot reclaim in posix in " + missing + " (above, with what to do)");
    }

    @Test
    void infoOfADirectoryThatIsNoDirectorySaysWhyItCannotBeListed() throws IOException {
        Path file = Files.createFile(shared.resolve("not-a-directory"));

        Result result = conduit.run("info", "--set", "shared.dir=" + file, "--set", "transports=memfd,posix");

        assertThat(result.exitCode()).as(result.err()).isZero();
        // Unwrapped: the reason is wrapped at 100 columns.
        String section = result.out().substring(result.out().indexOf("SHARED FILES")).replace("\n    ", " ");
        assertThat(section).contains("  memfd  " + file + "  (shared.dir (CONDUIT_SHARED_DIR))",
                "cannot list: cannot open the shared directory " + file + ": ENOTDIR");
    }

    @Test
    void reclaimWithNeitherMemfdNorPosixSaysThereIsNothingToReclaimAndWhy() {
        Result result = conduit.run("reclaim", "--set", "transports=devdax");

        assertThat(result.exitCode()).isEqualTo(ConduitCommand.EXIT_FAILED);
        assertThat(result.err()).contains("conduit: nothing to reclaim: neither memfd nor posix was found, or transports leaves both out");
    }

    @Test
    void jsonListsEachOwnerWithItsStateFilesAndBytes() throws IOException {
        leaveADeadOwner();
        // No lease, whatever its name: a reclaim does not judge it, so it is no owner's, neither live nor dead.
        String decoy = "conduit-posix-bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb.lease";
        Files.createDirectory(shared.resolve(decoy));

        Result result = conduit.run("info", "--json", "--set", "shared.dir=" + shared, "--set", "transports=posix");

        assertThat(result.exitCode()).as(result.err()).isZero();
        Map<String, Object> info = JsonParser.parseObject(result.out());
        List<Map<String, Object>> listings = Json.objects(info, "sharedFiles");
        assertThat(listings).hasSize(1);
        Map<String, Object> posix = listings.getFirst();
        assertThat(posix).containsEntry("plugin", "posix").containsEntry("directory", shared.toString())
                .containsEntry("setBy", "shared.dir (CONDUIT_SHARED_DIR)").containsEntry("error", null);
        List<Map<String, Object>> owners = Json.objects(posix, "owners");
        assertThat(owners).extracting(o -> o.get("state")).containsExactly("DEAD", "PENDING");
        Map<String, Object> dead = owners.getFirst();
        assertThat(dead.keySet()).containsExactly("owner", "lease", "state", "why", "ageSeconds", "bytes", "files");
        assertThat(dead).containsEntry("owner", DEAD).containsEntry("lease", DEAD_LEASE).containsEntry("why", null)
                .containsEntry("ageSeconds", null);
        assertThat(((Number) dead.get("bytes")).longValue()).isEqualTo(4096);
        List<Map<String, Object>> files = Json.objects(dead, "files");
        assertThat(files).hasSize(1);
        assertThat(files.getFirst()).containsEntry("name", DEAD_CHUNK);
        assertThat(((Number) files.getFirst().get("bytes")).longValue()).isEqualTo(4096);
        assertThat(Json.objects(posix, "unowned")).extracting(f -> f.get("name")).containsExactly(decoy, STRAY);
        assertThat(Json.objects(posix, "probes")).isEmpty();
    }

    /**
     * On a directory other kernels may see too (9p here, its {@code fstatfs} faked), a free lease may be a live owner's under
     * another kernel: {@code conduit info} lists it {@code UNJUDGED}, saying why, and the place says that its leases cannot
     * tell (text: under the heading; JSON: {@code leasesAcrossKernels}, {@code null} elsewhere), never {@code DEAD} with
     * "conduit reclaim removes them", which a reclaim there refuses to do without {@code --trust-leases}. A held lease is
     * still {@code LIVE}. Until 2026-12-08 such an owner was listed {@code DEAD}, and a script counting dead owners' bytes
     * counted a live peer's.
     */
    @Test
    void infoOverADirectoryOtherKernelsMaySeeListsAFreeLeaseUnjudgedAndSaysWhy() throws IOException {
        try (Conduit live = openLiveOwner(); Pool pool = live.pool("posix")) {
            pool.allocate(4096);
            leaveADeadOwner();
            CommandRunner over9p = conduit.withLibc(FileSystemType.answering(dev.conduit.linux.Libc.V9FS_MAGIC));
            String[] posix = {"--set", "shared.dir=" + shared, "--set", "transports=posix"};

            String section = sharedFiles(over9p.run(concat("info", posix)));

            assertThat(section).contains("(shared.dir (CONDUIT_SHARED_DIR))\n    leases here cannot tell a dead owner from one alive");
            assertThat(section.replaceAll("\\s+", " ")).as("the note, its lines joined").contains("leases here cannot tell a dead "
                    + "owner from one alive under another kernel: the shared directory " + shared + " is on 9p, which other kernels "
                    + "may see too", "; a free lease is listed UNJUDGED, and conduit reclaim refuses the directory without "
                    + "--trust-leases 3 owners");
            assertThat(section).contains("UNJUDGED  " + DEAD_LEASE + "  its lease is free here, as a lease held under another kernel looks on 9p: "
                            + "dead, or alive under another kernel",
                    "3 owners (1 live, 1 pending, 1 unjudged)")
                    .containsPattern("LIVE      conduit-posix-[0-9a-f]{32}\\.lease")
                    .doesNotContain("DEAD      ", "conduit reclaim removes them");

            Result json = over9p.run(concat("info", concat("--json", posix)));
            assertThat(json.exitCode()).as(json.err()).isZero();
            Map<String, Object> listing = Json.objects(JsonParser.parseObject(json.out()), "sharedFiles").getFirst();
            assertThat((String) listing.get("leasesAcrossKernels")).startsWith("the shared directory " + shared + " is on 9p");
            assertThat(Json.objects(listing, "owners")).filteredOn(o -> DEAD_LEASE.equals(o.get("lease"))).singleElement()
                    .satisfies(o -> assertThat(o).containsEntry("state", "UNJUDGED"))
                    .satisfies(o -> assertThat((String) o.get("why")).contains("dead, or alive under another kernel"));

            Result here = conduit.run(concat("info", concat("--json", posix)));
            assertThat(Json.objects(JsonParser.parseObject(here.out()), "sharedFiles").getFirst())
                    .as("a directory only this kernel sees").containsEntry("leasesAcrossKernels", null);
        }
    }

    /**
     * A pending lease is shown with its age, from its modification time: a starting owner renames its pending lease into
     * place three system calls after creating it, so one hours old is an owner killed while creating it, not one
     * starting. Both looked the same ("PENDING" and the name).
     */
    @Test
    void infoShowsHowLongAgoAPendingLeaseWasCreated() throws IOException {
        leaveADeadOwner();
        Files.setLastModifiedTime(shared.resolve(PENDING),
                java.nio.file.attribute.FileTime.fromMillis(System.currentTimeMillis() - TimeUnit.HOURS.toMillis(3)));
        String[] posix = {"--set", "shared.dir=" + shared, "--set", "transports=posix"};

        assertThat(sharedFiles(conduit.run(concat("info", posix)))).contains("PENDING   " + PENDING + "  created 3 h ago\n");
        Result json = conduit.run(concat("info", concat("--json", posix)));
        assertThat(json.exitCode()).as(json.err()).isZero();
        List<Map<String, Object>> owners = Json.objects(Json.objects(JsonParser.parseObject(json.out()), "sharedFiles").getFirst(), "owners");
        assertThat(owners).extracting(o -> o.get("lease")).containsExactly(DEAD_LEASE, PENDING);
        assertThat(owners.getFirst()).containsEntry("ageSeconds", null);
        assertThat(((Number) owners.getLast().get("ageSeconds")).longValue()).isGreaterThanOrEqualTo(TimeUnit.HOURS.toSeconds(3));
    }

    /**
     * {@code conduit reclaim --json} writes one document: each file removed with its kind, owner and bytes, the counts by
     * kind, and what is left, by state with why and as {@code conduit info --json} lists a place; nothing else goes to
     * standard output. Reclaim had only text, which a script had to scrape.
     */
    @Test
    void reclaimJsonSaysWhatWasRemovedByKindAndWhatIsLeftAndWhy() throws IOException {
        try (Conduit live = openLiveOwner(); Worker worker = live.newWorker(ThreadMode.SINGLE); Pool pool = live.pool("posix")) {
            pool.allocate(4096);
            leaveADeadOwner();
            Path probe = Files.createFile(shared.resolve("conduit-posix-probe-" + "c".repeat(32)));
            Files.setLastModifiedTime(probe, java.nio.file.attribute.FileTime.fromMillis(System.currentTimeMillis() - TimeUnit.MINUTES.toMillis(2)));

            Result result = conduit.run("reclaim", "--json", "--set", "shared.dir=" + shared, "--set", "transports=posix");

            assertThat(result.exitCode()).as(result.out() + result.err()).isZero();
            assertThat(result.err()).isEmpty();
            Map<String, Object> reclaim = JsonParser.parseObject(result.out());
            assertThat(reclaim.keySet()).containsExactly("version", "dryRun", "places", "failures");
            assertThat(reclaim).containsEntry("dryRun", false);
            assertThat(Json.list(reclaim, "failures")).isEmpty();
            List<Map<String, Object>> places = Json.objects(reclaim, "places");
            assertThat(places).hasSize(1);
            Map<String, Object> posix = places.getFirst();
            assertThat(posix.keySet()).containsExactly("plugin", "directory", "setBy", "error", "removed", "notRemoved", "removedCounts",
                    "notRemovedCounts", "deadOwners", "deadOwnersBytes", "left");
            assertThat(posix).containsEntry("plugin", "posix").containsEntry("directory", shared.toString())
                    .containsEntry("setBy", "shared.dir (CONDUIT_SHARED_DIR)").containsEntry("error", null);
            List<Map<String, Object>> removed = Json.objects(posix, "removed");
            assertThat(removed).extracting(f -> f.get("name"), f -> f.get("kind"), f -> f.get("owner"), f -> ((Number) f.get("bytes")).longValue())
                    .containsExactlyInAnyOrder(
                            org.assertj.core.groups.Tuple.tuple(DEAD_CHUNK, "DEAD_OWNERS_FILE", DEAD, 4096L),
                            org.assertj.core.groups.Tuple.tuple(DEAD_LEASE, "DEAD_OWNERS_FILE", DEAD, 0L),
                            org.assertj.core.groups.Tuple.tuple(PENDING, "PENDING_LEASE", "a".repeat(32), 0L),
                            org.assertj.core.groups.Tuple.tuple(probe.getFileName().toString(), "PROBE_FILE", null, 0L));
            assertThat(removed).extracting(f -> f.get("action")).containsOnly("REMOVED");
            assertThat(Json.list(posix, "notRemoved")).isEmpty();
            assertThat(longs(Json.object(posix, "removedCounts"))).isEqualTo(Map.of("DEAD_OWNERS_FILE", 2L, "PENDING_LEASE", 1L, "PROBE_FILE", 1L));
            assertThat(longs(Json.object(posix, "notRemovedCounts"))).isEqualTo(Map.of("DEAD_OWNERS_FILE", 0L, "PENDING_LEASE", 0L, "PROBE_FILE", 0L));
            assertThat(((Number) posix.get("deadOwners")).longValue()).isEqualTo(1);
            assertThat(((Number) posix.get("deadOwnersBytes")).longValue()).isEqualTo(4096);
            Map<String, Object> left = Json.object(posix, "left");
            assertThat(left.keySet()).containsExactly("error", "byState", "owners", "unowned", "probes");
            assertThat(left).containsEntry("error", null);
            List<Map<String, Object>> byState = Json.objects(left, "byState");
            assertThat(byState).hasSize(1);
            assertThat(byState.getFirst()).containsEntry("state", "LIVE").containsEntry("why", null);
            assertThat(((Number) byState.getFirst().get("owners")).longValue()).isEqualTo(3);
            assertThat(Json.objects(left, "owners")).extracting(o -> o.get("state")).containsOnly("LIVE").hasSize(3);
            assertThat(Json.objects(left, "unowned")).extracting(f -> f.get("name")).containsExactly(STRAY);
            assertThat(Json.objects(left, "probes")).isEmpty();
        }
    }

    /**
     * The failures of a reclaim with {@code --json}: the document is written whole, each file that could not be removed
     * in {@code notRemoved} with its errno and what to do, the owner left as dead with why, and {@code failures} says
     * what the error line says; the exit code is 1 as for the text.
     */
    @Test
    void reclaimJsonOfAFileThatCannotBeRemovedListsItWithItsErrnoAndExitsWithOne() throws IOException {
        leaveADeadOwner();
        String directory = "conduit-posix-" + DEAD + "-subdirectory";
        Files.createDirectory(shared.resolve(directory));

        Result result = conduit.run("reclaim", "--json", "--set", "shared.dir=" + shared, "--set", "transports=posix");

        assertThat(result.exitCode()).as(result.out() + result.err()).isEqualTo(ConduitCommand.EXIT_FAILED);
        assertThat(result.err()).contains("conduit: 1 file of dead owners could not be removed (the document says each, with what to do)");
        Map<String, Object> reclaim = JsonParser.parseObject(result.out());
        assertThat(Json.list(reclaim, "failures")).containsExactly("1 file of dead owners could not be removed");
        Map<String, Object> posix = Json.objects(reclaim, "places").getFirst();
        List<Map<String, Object>> notRemoved = Json.objects(posix, "notRemoved");
        assertThat(notRemoved).hasSize(1);
        assertThat(notRemoved.getFirst().keySet()).containsExactly("name", "kind", "owner", "errno", "message", "remedy");
        assertThat(notRemoved.getFirst()).containsEntry("name", directory).containsEntry("kind", "DEAD_OWNERS_FILE")
                .containsEntry("owner", DEAD).containsEntry("errno", "EISDIR");
        assertThat((String) notRemoved.getFirst().get("remedy")).contains("remove it by hand (rm -r)", "its lease stays");
        assertThat(longs(Json.object(posix, "notRemovedCounts"))).containsEntry("DEAD_OWNERS_FILE", 1L);
        assertThat(((Number) posix.get("deadOwners")).longValue()).isEqualTo(1);
        List<Map<String, Object>> byState = Json.objects(Json.object(posix, "left"), "byState");
        assertThat(byState).extracting(s -> s.get("state")).containsExactly("DEAD");
        assertThat((String) byState.getFirst().get("why")).startsWith("files that could not be removed");
        assertThat(names()).contains(DEAD_LEASE, directory);
    }

    /**
     * {@code deadOwners} counts the dead owners of which a file was removed, as {@code deadOwnersBytes} counts the bytes
     * removed and the text's "removed N files, B bytes, of K dead owners" says: of two dead owners, one whose files go and
     * one whose only file cannot be removed, it is 1, and the other is in {@code notRemoved} and left as dead. It counted
     * both, and a reclaim that removed no file said "of 1 dead owner".
     */
    @Test
    void deadOwnersCountsTheOwnersOfWhichAFileWasRemovedAsDeadOwnersBytesCountsTheirBytes() throws IOException {
        leaveADeadOwner();
        String pinned = "fedcba9876543210fedcba9876543210";
        Files.createFile(shared.resolve("conduit-posix-" + pinned + ".lease"));
        String directory = "conduit-posix-" + pinned + "-subdirectory";
        Files.createDirectory(shared.resolve(directory));
        String[] posix = {"--set", "shared.dir=" + shared, "--set", "transports=posix"};

        Result json = conduit.run(concat("reclaim", concat("--json", posix)));

        assertThat(json.exitCode()).as(json.out() + json.err()).isEqualTo(ConduitCommand.EXIT_FAILED);
        Map<String, Object> place = Json.objects(JsonParser.parseObject(json.out()), "places").getFirst();
        assertThat(((Number) place.get("deadOwners")).longValue()).isEqualTo(1);
        assertThat(((Number) place.get("deadOwnersBytes")).longValue()).isEqualTo(4096);
        assertThat(Json.objects(place, "notRemoved")).extracting(f -> f.get("owner")).containsExactly(pinned);
        List<Map<String, Object>> byState = Json.objects(Json.object(place, "left"), "byState");
        assertThat(byState).extracting(s -> s.get("state")).containsExactly("DEAD");
        assertThat(((Number) byState.getFirst().get("owners")).longValue()).isEqualTo(1);

        Result text = conduit.run(concat("reclaim", posix));
        assertThat(text.out()).contains("removed 0 files, 0 bytes, of 0 dead owners; not removed: 1 file of dead owners\n",
                "left: 1 dead owner (1 file, ");
    }

    /** A directory that cannot be opened is said in its place's {@code error}, with nothing removed and no {@code left}; exit 1. */
    @Test
    void reclaimJsonOfADirectoryThatDoesNotExistSaysWhyInItsPlaceAndExitsWithOne() {
        Path missing = shared.resolve("missing");

        Result result = conduit.run("reclaim", "--json", "--set", "shared.dir=" + missing, "--set", "transports=posix");

        assertThat(result.exitCode()).isEqualTo(ConduitCommand.EXIT_FAILED);
        assertThat(result.err()).contains("conduit: cannot reclaim in posix in " + missing + " (the document says each, with what to do)");
        Map<String, Object> reclaim = JsonParser.parseObject(result.out());
        assertThat(Json.list(reclaim, "failures")).containsExactly("cannot reclaim in posix in " + missing);
        Map<String, Object> posix = Json.objects(reclaim, "places").getFirst();
        assertThat((String) posix.get("error")).contains("cannot open the shared directory " + missing + ": ENOENT",
                "or set shared.dir (CONDUIT_SHARED_DIR)");
        assertThat(Json.list(posix, "removed")).isEmpty();
        assertThat(posix).containsEntry("left", null);
    }

    /** With nothing to reclaim in, {@code --json} writes no document: the failure is the error line alone, as for any command. */
    @Test
    void reclaimJsonWithNeitherMemfdNorPosixWritesNoDocument() {
        Result result = conduit.run("reclaim", "--json", "--set", "transports=devdax");

        assertThat(result.exitCode()).isEqualTo(ConduitCommand.EXIT_FAILED);
        assertThat(result.out()).isEmpty();
        assertThat(result.err()).contains("conduit: nothing to reclaim");
    }

    /**
     * A reclaim whose directory then could not be listed again ({@link #reclaimThatCannotTellWhatIsLeftExitsWithOne}) has
     * {@code left.error} set and exits 1; rendered from the reclaim's result, since the document is written at the end,
     * where the text test moves the directory away as the text is printed.
     */
    @Test
    void reclaimJsonOfAPlaceThatCannotBeListedAfterwardsSaysWhyInLeftAndFails() {
        SharedFiles.Place place = new SharedFiles.Place("posix", shared, "shared.dir (CONDUIT_SHARED_DIR)");
        String why = "cannot open the shared directory " + shared + ": ENOENT";
        ReclaimCommand.Reclaimed reclaimed = new ReclaimCommand.Reclaimed(place, null,
                List.of(new ReclaimCommand.Removed(ReclaimCommand.Kind.DEAD_OWNERS_FILE, DEAD, DEAD_LEASE, 0)), List.of(),
                new SharedFiles.Listing(place, null, why, Map.of(), null));
        List<String> failures = ReclaimCommand.failures(List.of(reclaimed));
        java.io.StringWriter out = new java.io.StringWriter();

        ReclaimJson.write(List.of(reclaimed), false, failures, new java.io.PrintWriter(out));

        assertThat(failures).containsExactly("cannot tell what is left in posix in " + shared);
        Map<String, Object> posix = Json.objects(JsonParser.parseObject(out.toString()), "places").getFirst();
        Map<String, Object> left = Json.object(posix, "left");
        assertThat(left).containsEntry("error", why);
        assertThat(Json.list(left, "byState")).isEmpty();
        assertThat(Json.list(left, "owners")).isEmpty();
        assertThat(((Number) posix.get("deadOwners")).longValue()).isEqualTo(1);
    }

    /** A JSON object of numbers (JsonParser's BigDecimal) as longs, to compare with Map.of. */
    private static Map<String, Long> longs(Map<String, Object> counts) {
        Map<String, Long> longs = new java.util.LinkedHashMap<>();
        counts.forEach((name, n) -> longs.put(name, ((Number) n).longValue()));
        return longs;
    }

    private List<String> names() throws IOException {
        try (Stream<Path> files = Files.list(shared)) {
            return files.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    /**
     * What a reclaim could not remove, of all three kinds, is one list ending in "and", each kind counted apart (the tests
     * above leave two kinds at most).
     */
    @Test
    void filesNotRemovedOfThreeKindsAreCountedInOneListEndingInAnd() {
        assertThat(ReclaimCommand.Kind.counted(new int[] {2, 1, 3})).isEqualTo("2 files of dead owners, 1 pending lease nobody "
                + "held and 3 probe files left by killed probes");
    }
}
