package dev.conduit.it.process;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * How a {@link ChildJvm} is started: directly, or inside an isolated "container".
 *
 * <p>Either way the child sees the test's shared directory and is told where through
 * {@code CONDUIT_SHARED_DIR}, its own view of it: directly that is the host path; in a container
 * it is another path, a bind mount of the host's directory made inside the child's own mount
 * namespace.
 */
public sealed interface Launcher {

    /** A child of the test JVM, with the test's shared directory at the same path. */
    static Launcher direct() {
        return Direct.INSTANCE;
    }

    /**
     * A child in new PID, IPC, UTS, mount and network namespaces ({@code unshare}), with hostname
     * {@value Container#HOSTNAME} and the shared directory bind-mounted at a fresh directory under
     * {@code /tmp}. Needs {@code unshare} (util-linux) and root, as in CI.
     */
    static Launcher container() {
        return new Container(Container.HOSTNAME, false);
    }

    /** {@link #container()} with the shared directory bind-mounted read-only, as {@code docker run -v DIR:DIR:ro} does. */
    static Launcher readOnlyContainer() {
        return new Container(Container.HOSTNAME, true);
    }

    /** The command that runs {@code java} (a complete java command line) as this launcher does. */
    List<String> command(List<String> java, Path hostSharedDirectory, Path childSharedDirectory);

    /** Where the child sees the shared directory; for a container, a fresh empty directory (the mount point). */
    Path childSharedDirectory(Path hostSharedDirectory) throws java.io.IOException;

    /** Removes what {@link #childSharedDirectory(Path)} created, once the child is gone. */
    void cleanUp(Path hostSharedDirectory, Path childSharedDirectory) throws java.io.IOException;

    /** Started directly: the child is the JVM. */
    enum Direct implements Launcher {
        INSTANCE;

        @Override
        public List<String> command(List<String> java, Path hostSharedDirectory, Path childSharedDirectory) {
            return java;
        }

        @Override
        public Path childSharedDirectory(Path hostSharedDirectory) {
            return hostSharedDirectory;
        }

        @Override
        public void cleanUp(Path hostSharedDirectory, Path childSharedDirectory) {
        }

        @Override
        public String toString() {
            return "direct";
        }
    }

    /**
     * {@code unshare --pid --ipc --uts --mount --net --fork --mount-proc --kill-child sh -c WRAPPER}.
     *
     * <p>The process tree, and what a signal reaches:
     * <pre>
     * test JVM
     *  └─ unshare            = {@link Process} of the {@link ChildJvm}; stays in the host's namespaces
     *      └─ java (pid 1)   = {@link ChildJvm#jvm()}; {@code sh} set the hostname, made the bind
     *                          mount and {@code exec}ed java, so the JVM is the namespace's init
     * </pre>
     * {@link ChildJvm#kill()} sends {@code SIGKILL} to the JVM itself (its host pid is unshare's only
     * child), as a crash would; unshare then exits. {@link Process#destroyForcibly()} reaches only
     * unshare; {@code --kill-child} makes the kernel {@code SIGKILL} the JVM when unshare dies, and
     * the death of a PID namespace's init kills everything else in it, so no JVM outlives its
     * {@link ChildJvm} either way. The bind mount lives only in the child's mount namespace and
     * disappears with it: the host sees the mount point as an empty directory throughout.
     */
    record Container(String hostname, boolean readOnly) implements Launcher {
        public static final String HOSTNAME = "conduit-container";

        /** $1 hostname, $2 mount options (rw or ro), $3 host directory, $4 mount point; then the java command line. */
        static final String WRAPPER = """
                set -eu
                hostname "$1"
                mount --bind -o "$2" "$3" "$4"
                export CONDUIT_SHARED_DIR="$4"
                shift 4
                exec "$@"
                """;

        @Override
        public List<String> command(List<String> java, Path hostSharedDirectory, Path childSharedDirectory) {
            List<String> command = new ArrayList<>(List.of(unshare(),
                    "--pid", "--ipc", "--uts", "--mount", "--net", "--fork", "--mount-proc", "--kill-child",
                    "sh", "-c", WRAPPER, "conduit-container-wrapper",
                    hostname, readOnly ? "ro" : "rw", hostSharedDirectory.toString(), childSharedDirectory.toString()));
            command.addAll(java);
            return command;
        }

        @Override
        public Path childSharedDirectory(Path hostSharedDirectory) throws java.io.IOException {
            // Short, so that a memfd socket's whole path fits an AF_UNIX address (shared.dir <= 38 bytes; longer goes through /proc).
            return Files.createTempDirectory(Path.of("/tmp"), "cct-");
        }

        @Override
        public void cleanUp(Path hostSharedDirectory, Path childSharedDirectory) throws java.io.IOException {
            Files.deleteIfExists(childSharedDirectory); // empty on the host: the mount was the child's only
        }

        /**
         * {@code unshare}'s path; fails (never skips) when it or root is missing, since the container
         * tests must run in CI.
         */
        static String unshare() {
            String path = System.getenv().getOrDefault("PATH", "/usr/bin:/bin");
            for (String dir : path.split(File.pathSeparator)) {
                Path candidate = Path.of(dir.isEmpty() ? "." : dir, "unshare");
                if (Files.isExecutable(candidate)) {
                    int uid = effectiveUid();
                    if (uid != 0) {
                        throw new IllegalStateException("the container tests run a child under " + candidate
                                + " with new PID, IPC, UTS, mount and network namespaces and a bind mount, which needs root; "
                                + "this JVM runs as uid " + uid + ". Run the integration tests as root (CI does)");
                    }
                    return candidate.toString();
                }
            }
            throw new IllegalStateException("unshare not found on PATH=" + path + ": the container tests (a consumer in its own "
                    + "PID, IPC, UTS and mount namespaces) need it. Install util-linux (apt-get install util-linux) and run as root");
        }

        /** The owner of {@code /proc/self} is this process's effective uid. */
        private static int effectiveUid() {
            try {
                return (Integer) Files.getAttribute(Path.of("/proc/self"), "unix:uid");
            } catch (java.io.IOException | UnsupportedOperationException e) {
                throw new IllegalStateException("cannot tell this process's uid from /proc/self: " + e, e);
            }
        }

        @Override
        public String toString() {
            return "container(" + hostname + (readOnly ? ", shared directory read-only" : "") + ")";
        }
    }
}
