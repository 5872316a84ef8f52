package dev.conduit.it.process;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalInt;

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
        return Direct.AS_THIS_USER;
    }

    /**
     * A child in new PID, IPC, UTS, mount and network namespaces ({@code unshare}), with hostname
     * {@value Container#HOSTNAME} and the shared directory bind-mounted at a fresh directory under
     * {@code /tmp}. Needs {@code unshare} (util-linux) and root, as in CI.
     */
    static Launcher container() {
        return new Container(Container.HOSTNAME, false, OptionalInt.empty(), Container.Inside.ROOT);
    }

    /** {@link #container()} with the shared directory bind-mounted read-only, as {@code docker run -v DIR:DIR:ro} does. */
    static Launcher readOnlyContainer() {
        return new Container(Container.HOSTNAME, true, OptionalInt.empty(), Container.Inside.ROOT);
    }

    /**
     * A rootless container (podman, Docker with user namespaces): {@link #container()} started by
     * host user {@code uid} ({@code setpriv}) in a user namespace of its own that maps its root to
     * {@code uid} ({@code unshare --user --map-root-user}), which then owns its other namespaces. The
     * shared directory must be writable by {@code uid}; the child runs from a copy of this JVM's
     * module or class path that {@code uid} can read, as under {@link #asUser(int)}. Needs root to start it, and user namespaces open to {@code uid}
     * ({@code user.max_user_namespaces} above 0; on Ubuntu 24.04 and later
     * {@code kernel.apparmor_restrict_unprivileged_userns=0}): without either it fails, naming them.
     */
    static Launcher rootlessContainer(int uid) {
        return new Container(Container.HOSTNAME, false, OptionalInt.of(uid), Container.Inside.ROOT);
    }

    /**
     * Rootless podman's {@code --userns=keep-id}: a {@link #rootlessContainer(int)} whose JVM runs as
     * {@code uid} inside the container too, not as its root. Once the container's root made the
     * hostname and the bind mount, the wrapper execs {@code unshare --user --map-user=UID
     * --map-group=UID}, a user namespace nested in the container's that maps {@code uid} to the
     * container's root, which is host user {@code uid}: each side then sees the other's files and
     * socket credentials as {@code uid}, where under {@link #rootlessContainer(int)} the container
     * sees them as its uid 0. Needs what {@link #rootlessContainer(int)} needs.
     */
    static Launcher keepIdContainer(int uid) {
        return new Container(Container.HOSTNAME, false, OptionalInt.of(uid), Container.Inside.KEEP_ID);
    }

    /**
     * A container run as {@code nobody} ({@code docker run --user nobody} with a user namespace,
     * rootless {@code podman run --user nobody}): started by host user {@code uid} ({@code setpriv})
     * in a user namespace of its own that maps only its uid {@value Container#NOBODY} to {@code uid}
     * ({@code unshare --user --map-user=65534 --map-group=65534}), its JVM running as that uid with
     * no capability, as a container's non-root user does. {@value Container#NOBODY} is also the
     * kernel's overflow uid: every host user but {@code uid} (the host process's, root) shows as it
     * there, on files and socket credentials, as in a real container whose map takes its
     * {@code nobody} to a subordinate uid and leaves the host user out. Needs what
     * {@link #rootlessContainer(int)} needs.
     */
    static Launcher nobodyContainer(int uid) {
        return new Container(Container.HOSTNAME, false, OptionalInt.of(uid), Container.Inside.NOBODY);
    }

    /**
     * A child of the test JVM that runs as host user {@code uid} ({@code setpriv}, which execs the
     * JVM: the child is the JVM), seeing the shared directory at the same path: the host side of a
     * {@link #rootlessContainer(int)} of the same user.
     */
    static Launcher asUser(int uid) {
        return new Direct(OptionalInt.of(uid));
    }

    /** The command that runs {@code java} (a complete java command line) as this launcher does. */
    List<String> command(List<String> java, Path hostSharedDirectory, Path childSharedDirectory);

    /** Where the child sees the shared directory; for a container, a fresh empty directory (the mount point). */
    Path childSharedDirectory(Path hostSharedDirectory) throws java.io.IOException;

    /** Removes what {@link #childSharedDirectory(Path)} created, once the child is gone. */
    void cleanUp(Path hostSharedDirectory, Path childSharedDirectory) throws java.io.IOException;

    /** Started directly, as this JVM's user or, through {@code setpriv} (which execs the JVM), as {@link #uid()}: the child is the JVM. */
    record Direct(OptionalInt uid) implements Launcher {
        static final Direct AS_THIS_USER = new Direct(OptionalInt.empty());

        @Override
        public List<String> command(List<String> java, Path hostSharedDirectory, Path childSharedDirectory) {
            if (uid.isEmpty()) return java;
            List<String> command = new ArrayList<>(OtherUser.setpriv(uid.getAsInt()));
            command.addAll(OtherUser.readable(java));
            return command;
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
            return "direct" + (uid.isPresent() ? ", as uid " + uid.getAsInt() : "");
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
     *
     * <p>With {@code rootlessUid}, {@code setpriv} runs unshare as that host user (setpriv execs
     * unshare: the tree is the same) and unshare first makes a user namespace that maps its root to
     * that user ({@code --user --map-root-user}), which owns the other namespaces, so that the
     * hostname and the bind mounts are root's there; the mount point belongs to that user. With
     * {@link Inside#KEEP_ID} the wrapper execs {@code unshare --user --map-user=UID --map-group=UID}, which
     * execs java as that uid in a nested user namespace: java keeps the pid that sh had, so the tree
     * and what a signal reaches are the same. With {@link Inside#NOBODY} unshare maps only
     * {@value #NOBODY} to that user and keeps its capabilities in the namespace for sh
     * ({@code --keep-caps}: ambient, which an exec by a uid other than 0 would drop), which makes the
     * hostname and the bind mount, then execs java through {@code setpriv}, which drops them all:
     * java keeps sh's pid, so the tree is the same again.
     */
    record Container(String hostname, boolean readOnly, OptionalInt rootlessUid, Inside inside) implements Launcher {
        public static final String HOSTNAME = "conduit-container";
        /** The uid {@link Launcher#nobodyContainer(int)} runs its JVM as: {@code nobody}, the kernel's default overflow uid. */
        public static final int NOBODY = 65534;

        /** Whom a rootless container's JVM runs as inside it; a container of the host's root runs it as root. */
        public enum Inside {
            /** Its root, which its user namespace maps to the host user ({@code --map-root-user}, rootless podman's default). */
            ROOT,
            /** The host user's uid, in a user namespace nested in the container's (podman's {@code --userns=keep-id}). */
            KEEP_ID,
            /** {@value Container#NOBODY}, the only uid its user namespace maps, without capabilities. */
            NOBODY
        }

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
            List<String> command = new ArrayList<>();
            rootlessUid.ifPresent(uid -> command.addAll(OtherUser.setpriv(uid)));
            command.add(unshare());
            if (rootlessUid.isPresent()) {
                command.addAll(inside == Inside.NOBODY
                        ? List.of("--user", "--map-user=" + NOBODY, "--map-group=" + NOBODY, "--keep-caps")
                        : List.of("--user", "--map-root-user"));
            }
            command.addAll(List.of("--pid", "--ipc", "--uts", "--mount", "--net", "--fork", "--mount-proc", "--kill-child",
                    "sh", "-c", WRAPPER, "conduit-container-wrapper",
                    hostname, readOnly ? "ro" : "rw", hostSharedDirectory.toString(), childSharedDirectory.toString()));
            if (inside == Inside.KEEP_ID) {
                int uid = rootlessUid.orElseThrow();
                command.addAll(List.of(unshare(), "--user", "--map-user=" + uid, "--map-group=" + uid));
            } else if (inside == Inside.NOBODY) {
                command.addAll(List.of("setpriv", "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all", "--"));
            }
            command.addAll(rootlessUid.isPresent() ? OtherUser.readable(java) : java);
            return command;
        }

        @Override
        public Path childSharedDirectory(Path hostSharedDirectory) throws java.io.IOException {
            if (rootlessUid.isPresent()) OtherUser.checkUserNamespaces(rootlessUid.getAsInt(), unshare());
            // Short, so that a memfd socket's whole path fits an AF_UNIX address (shared.dir <= 38 bytes; longer goes through /proc).
            Path mountPoint = Files.createTempDirectory(Path.of("/tmp"), "cct-");
            if (rootlessUid.isPresent()) {
                Files.setAttribute(mountPoint, "unix:uid", rootlessUid.getAsInt());
                Files.setAttribute(mountPoint, "unix:gid", rootlessUid.getAsInt());
            }
            return mountPoint;
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
            return "container(" + hostname + (readOnly ? ", shared directory read-only" : "")
                    + (rootlessUid.isPresent() ? ", rootless: uid " + rootlessUid.getAsInt() + " in a user namespace of its own" : "")
                    + switch (inside) {
                        case ROOT -> "";
                        case KEEP_ID -> ", keep-id: running as that uid inside it";
                        case NOBODY -> ", running as nobody (" + NOBODY + ") inside it, the only uid its namespace maps";
                    } + ")";
        }
    }
}
