package dev.conduit.it.fault;

import dev.conduit.it.process.ChildJvm;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A full shared directory ({@code ENOSPC}), a process out of descriptors ({@code EMFILE}) and an
 * import out of address space ({@code ENOMEM}), each in a real child JVM: the error names the
 * errno or the shortage, the path and a remedy; what existed before keeps working; the failures
 * leak no descriptor, mapping or file; and once the resource is back, everything works again.
 */
class ResourceExhaustionTest {

    @TempDir
    Path shared;

    /** The child's output; it must exit 0. */
    private static String run(List<String> prefix, Class<?> main, String... args) throws IOException {
        List<String> command = new ArrayList<>(prefix);
        command.addAll(ChildJvm.javaCommand(main, List.of(), List.of(args)));
        ChildJvm.Ended child = ChildJvm.runToEnd(command);
        assertThat(child.exitCode()).as(child.output()).isZero();
        assertThat(child.output()).doesNotContain("UNEXPECTED").doesNotContain("A fatal error has been detected");
        return child.output();
    }

    @Test
    void aFullSharedDirectoryFailsWhatNeedsSpaceAndNothingElse() throws Exception {
        // A 12 MiB tmpfs over the shared directory, in a mount namespace of the child's own (CI runs as root): room for
        // two workers' queues (2 MiB each), a pool's chunk and a bounce ring (4 MiB), each queue and ring with every page
        // touched when formatted.
        Files.setPosixFilePermissions(shared, java.nio.file.attribute.PosixFilePermissions.fromString("rwx------"));
        String java = String.join(" ", ChildJvm.javaCommand(FullDirectoryPeer.class, List.of(), List.of(shared.toString())).stream()
                .map(ResourceExhaustionTest::quote).toList());
        String output = run(List.of("unshare", "--mount", "--propagation", "private", "sh", "-c",
                "mount -t tmpfs -o size=12m conduit-full " + quote(shared.toString()) + " && exec " + java + " #"), FullDirectoryPeer.class);

        assertThat(output).contains("ring-made: received 1").contains("filled: yes")
                .containsPattern("new-worker: ConduitException: posix: cannot create this worker's receive queue \\(posix\\.queue\\.size, "
                        + "\\d+ bytes\\): not enough space for a chunk of \\d+ bytes in " + shared + " \\(a file system of 12582912 bytes\\): "
                        + "0 bytes free\\. Free space there, enlarge it")
                .containsPattern("allocate: ConduitException: not enough space for a chunk of 1048576 bytes in " + shared)
                .contains("files-after-failures: 0 []")
                .contains("region-survived: true")
                .contains("allocate-after-space-freed: ok")
                .contains("new-worker-after-space-freed: ok")
                .contains("files-left: 0");
        // The survivor's queue had every page when it was formatted: a full file system cannot fail its sends.
        assertThat(output).contains("survivor-send: ok received 1");
        // So had the survivor's bounce ring, made before the directory filled: its later pages used to be taken at the send
        // that first wrote them, and that send's fault failed the endpoint for good (PeerFailedException), space back or not.
        assertThat(output).contains("survivor-large-send: ok received 2, endpoint failed: false");
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"posix", "memfd"})
    void runningOutOfDescriptorsFailsWhatNeedsOneAndLeaksNothing(String plugin) throws Exception {
        String output = run(List.of("prlimit", "--nofile=256:256", "--"), DescriptorLimitPeer.class, shared.toString(), plugin);

        String remedy = "raise its open-file limit (ulimit -n, RLIMIT_NOFILE";
        assertThat(output).containsPattern("exhausted: \\d+")
                .containsPattern("new-worker: ConduitException: cannot open the shared directory " + shared + ": EMFILE .*" + java.util.regex.Pattern.quote(remedy))
                // The sender's endpoint to the receiver shares its watch of the receiver's lease with this connect (PeerLeases):
                // the connect runs out where it first needs a descriptor of its own, the shared directory's to import the queue.
                .containsPattern("connect: ConduitException: .*EMFILE.*; this process has no file descriptor left")
                .containsPattern("allocate: ConduitException: .*EMFILE")
                .containsPattern("import: ConduitException: .*EMFILE")
                .contains("survivor-send: ok received 1")
                .contains("descriptors-leaked: 0")
                .contains("mappings-leaked: 0")
                .contains("import-after: ok 65536")
                .contains("new-worker-after: ok connected")
                .contains("files-left: 0");
    }

    /**
     * An import that the address-space limit ({@code ulimit -v}) refuses: the kernel's own
     * {@code ENOMEM}, which the message tells from running out of mappings by counting them
     * against {@code vm.max_map_count}, and names how an importer keeps fewer mapped; nothing is
     * left open, mapped or cached, and the import works once the limit is raised.
     */
    @Test
    void anImportTheAddressSpaceLimitRefusesSaysWhichLimitAndLeavesNothing() throws Exception {
        String output = run(List.of(), AddressSpaceLimitPeer.class, shared.toString());

        assertThat(output).containsPattern("import: ConduitException: cannot map the chunk imported from .*: mmap\\(NULL, 1073741824, "
                        + ".*\\): ENOMEM \\(Cannot allocate memory\\): this process has \\d+ memory mappings \\(/proc/self/maps\\) and "
                        + "vm\\.max_map_count is \\d+, so the address space ran out rather \\(ulimit -v, RLIMIT_AS\\)")
                .contains("close imported regions, lower ipc.cache.entries (CONDUIT_IPC_CACHE_ENTRIES) or ipc.cache.bytes "
                        + "(CONDUIT_IPC_CACHE_BYTES), or raise pool.chunk.size in the exporting processes")
                .contains("descriptors-leaked: 0")
                .contains("mappings-leaked: 0")
                .contains("entries-cached: 0")
                .contains("import-after: ok 1073741824");
    }

    private static String quote(String s) {
        return "'" + s.replace("'", "'\\''") + "'";
    }
}
