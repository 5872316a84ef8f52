package dev.conduit.tools;

import dev.conduit.linux.ErrnoException;
import dev.conduit.linux.FileDescriptor;
import dev.conduit.linux.FileStatus;
import dev.conduit.linux.Libc;
import dev.conduit.linux.Linux;
import dev.conduit.linux.OpenFlags;
import dev.conduit.shm.OwnerLease;
import dev.conduit.shm.SharedDirectory;
import dev.conduit.spi.ConduitException;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.module.ModuleFinder;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.HexFormat;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.IntSupplier;
import java.util.regex.Pattern;

/**
 * The server process a plain {@code conduit perf} starts for itself: a second JVM from the same
 * {@code java} binary, with the same module path (and class path), the same native-access grant
 * and the same {@code conduit.*} system properties as this one, running
 * {@code conduit perf --server} with a private shared directory made for this run under
 * the configured {@code shared.dir} (or {@code --shared-dir}).
 *
 * <p>It is always cleaned up: {@link #close()} waits for it to end its session and exit, destroys
 * it if it does not, and removes the directory; a shutdown hook does the same if this JVM is
 * stopped first. Its standard input is a pipe that this process never writes to: when this
 * process dies, however it dies, the pipe ends and the server exits ({@code --exit-with-stdin}).
 * A run killed with its server leaves its directory, which the next run under the same directory
 * removes ({@link #removeDirectoriesOfGoneRuns}).
 */
final class PerfPeer implements AutoCloseable {

    static final String NAME = "peer";
    private static final int NAME_ATTEMPTS = 12;
    private static final Pattern PRIVATE_DIRECTORY = Pattern.compile("conduit-perf-\\p{XDigit}{8}");
    private static final String MAIN_MODULE = "dev.conduit.tools";
    private static final String MAIN_CLASS = "dev.conduit.tools.ConduitCommand";
    private static final Duration EXIT_WAIT = Duration.ofSeconds(10);
    /**
     * How long a client that failed gives the server to exit by itself before it closes the server's standard
     * input: its BYE (if the session began) says why, and a server that saw its input end before it read the
     * BYE said only that. Shorter than {@link #EXIT_WAIT}: a server that got no BYE waits for its input.
     */
    private static final Duration FAILURE_EXIT_WAIT = Duration.ofSeconds(2);
    /** Conduit's modules that call native code (design: native access for these only). */
    private static final List<String> NATIVE_MODULES = List.of("dev.conduit.linux", "dev.conduit.plugin.verbs");

    /** The last lines the server printed, kept for error messages. */
    private static final int KEEP_LINES = 200;

    private final Path directory;
    /** This run's lease in its directory, held while it runs: what tells a later run not to remove it; null in tests. */
    private final RunLease lease;
    private final Process process;
    private final Thread hook;
    private final Deque<String> output = new ArrayDeque<>();
    private final Thread reader;
    private boolean closed;
    /** Counted down once {@link #stop} is done: what the shutdown hook waits for before it kills the server. */
    private final CountDownLatch stopped;

    /** Over a started {@code process} in {@code directory}; {@code hook}, registered or not, is removed once it is stopped. */
    PerfPeer(Path directory, Process process, Thread hook) {
        this(directory, null, process, hook, new CountDownLatch(1));
    }

    /** Over a started {@code process} in {@code directory}, whose {@code lease} it holds until it stops the process. */
    PerfPeer(Path directory, RunLease lease, Process process, Thread hook) {
        this(directory, lease, process, hook, new CountDownLatch(1));
    }

    private PerfPeer(Path directory, RunLease lease, Process process, Thread hook, CountDownLatch stopped) {
        this.directory = directory;
        this.lease = lease;
        this.process = process;
        this.hook = hook;
        this.stopped = stopped;
        this.reader = new Thread(this::readOutput, "conduit-perf-peer-output");
        reader.setDaemon(true);
        reader.start();
    }

    private void readOutput() {
        try (BufferedReader lines = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line; (line = lines.readLine()) != null; ) {
                synchronized (output) {
                    if (output.size() == KEEP_LINES) output.removeFirst();
                    output.addLast(line);
                }
            }
        } catch (IOException e) {
            // the process is gone
        }
    }

    /**
     * Where the directory a spawned server's private directory goes under came from, as its errors
     * name it and the remedy they give: a directory given with {@code --shared-dir} is changed there,
     * and {@code -D shared.dir} would not change it (the option wins).
     */
    enum ParentSource {
        /** {@code --shared-dir}. */
        OPTION("--shared-dir", "--shared-dir"),
        /** The configured {@code shared.dir}: {@code --set}, system property, environment, else {@code /dev/shm}. */
        CONFIGURATION("shared.dir, CONDUIT_SHARED_DIR", "--shared-dir or -D shared.dir=DIR");

        private final String key;
        private final String choose;

        ParentSource(String key, String choose) {
            this.key = key;
            this.choose = choose;
        }
    }

    /**
     * The private directory of a run, made and leased, its server not started yet: what the run checks before it starts
     * one there ({@link #start}), or removes ({@link #abandon}) when the check fails.
     */
    record Place(Path directory, RunLease lease) {
        /** Releases the lease and removes the directory: no server was started in it. */
        void abandon() {
            try {
                lease.close();
            } finally {
                deleteTree(directory);
            }
        }
    }

    /**
     * Makes a private directory under {@code parent}, with the run's lease in it. Apart from {@link #start}: a run checks its
     * transports are available there after the directory's own errors (a missing or read-only {@code parent}, named with
     * where it was set) could be said, and before a server's JVM is started for nothing.
     *
     * @param source where {@code parent} came from, for the errors
     */
    static Place makePlace(Path parent, ParentSource source) {
        Path dir = privateDirectory(parent, source, new SecureRandom()::nextInt);
        try {
            return new Place(dir, RunLease.acquire(dir));
        } catch (RuntimeException e) {
            deleteTree(dir);
            throw e;
        }
    }

    /**
     * Starts the server in {@code place}, which it then owns: removed when it stops, or at once if it cannot start.
     *
     * @param serverArguments what follows {@code conduit perf --server --shared-dir DIR --name peer --exit-with-stdin}
     */
    static PerfPeer start(Place place, List<String> serverArguments) {
        Path dir = place.directory();
        RunLease lease = place.lease();
        List<String> command = new ArrayList<>(javaCommand());
        command.addAll(List.of("perf", "--server", "--shared-dir", dir.toString(), "--name", NAME, "--exit-with-stdin"));
        command.addAll(serverArguments);
        ProcessBuilder pb = new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.PIPE)
                .redirectInput(ProcessBuilder.Redirect.PIPE);
        // Conduit warns about CONDUIT_* variables it does not know; the launcher's own is not for the server. The JVM's own
        // variables are not for it either: what of them shapes a measurement is among this JVM's input arguments, which
        // javaCommand passes on, and the rest (an agent: a debugger's port, which the server failed to bind) stays here.
        pb.environment().remove("CONDUIT_JAVA_OPTS");
        pb.environment().remove("JDK_JAVA_OPTIONS");
        pb.environment().remove("JAVA_TOOL_OPTIONS");
        Process p;
        try {
            p = pb.start();
        } catch (IOException e) {
            place.abandon();
            throw new ConduitException("cannot start the perf server process (" + command.getFirst() + "): " + e.getMessage(), e);
        }
        CountDownLatch stopped = new CountDownLatch(1);
        Thread hook = cleanupHook(p, dir, stopped, PerfServer.SHUTDOWN_WAIT_NANOS);
        Runtime.getRuntime().addShutdownHook(hook);
        return new PerfPeer(dir, lease, p, hook, stopped);
    }

    /**
     * The lease of a run on its private directory ({@code conduit-perf-<owner>.lease}, {@link OwnerLease}), taken as the
     * directory is made and held until the run stops its server: until then its directory has a live owner, also before its
     * server's and its own workers have leases there, so {@link #removeDirectoriesOfGoneRuns} never takes it.
     */
    record RunLease(SharedDirectory directory, OwnerLease lease) {
        static RunLease acquire(Path dir) {
            Libc libc = Linux.libc();
            SharedDirectory directory = SharedDirectory.open(libc, dir, "--shared-dir");
            try {
                return new RunLease(directory, OwnerLease.acquire(libc, directory, RUN_PREFIX));
            } catch (RuntimeException e) {
                directory.close();
                throw e;
            }
        }

        void close() {
            try {
                lease.close();
            } finally {
                directory.close();
            }
        }
    }

    /** The prefixes of the files a run's processes name after their owners in its directory: the run's lease, its workers' and pools'. */
    private static final String RUN_PREFIX = "conduit-perf";
    private static final List<String> OWNER_PREFIXES = List.of(RUN_PREFIX, "conduit-memfd", "conduit-posix");

    /**
     * Removes the private directories under {@code parent} that earlier runs of this user left, killed before they
     * removed them (a {@code kill -9} of the client and its server), judged as a reclaim judges owners
     * ({@link OwnerLease}): a directory goes only when it has owners and every one of them is dead (the run's lease,
     * its workers' and pools' leases), and no process holds the lock on the bootstrap file in it, complete or not (a
     * server killed while writing it leaves it incomplete); first the bootstrap file, then the dead owners' files, by
     * {@link OwnerLease#reclaimDead}, then the directory. A symbolic link, another user's directory, one with no owner
     * yet (a run that is starting), with a live or pending one, or with a bootstrap file a process holds locked (its
     * server runs, or is writing it) or that no server wrote is left alone.
     *
     * <p>Nothing is removed under a {@code parent} other kernels may see too ({@link OwnerLease#leasesAcrossKernels}): a run's
     * directory is private to it, but {@code parent} is not, and a run of this user under another kernel (a VM's guest, its
     * host, another host on the same NFS directory) holds leases there that look free here.
     *
     * @param libc the system calls ({@link ConduitCommand#libc})
     * @return one line that says what was removed and what could not be, or {@code null} when there was nothing to say
     */
    static String removeDirectoriesOfGoneRuns(Libc libc, Path parent) {
        List<String> removed = new ArrayList<>();
        List<String> failed = new ArrayList<>();
        try (SharedDirectory under = SharedDirectory.open(libc, parent, "--shared-dir")) {
            List<String> runs = under.list("conduit-perf-").stream().filter(name -> PRIVATE_DIRECTORY.matcher(name).matches()).toList();
            String acrossKernels = runs.isEmpty() ? null : OwnerLease.leasesAcrossKernels(under);
            if (acrossKernels != null) {
                return "conduit perf: removed none of the " + runs.size() + (runs.size() == 1 ? " directory" : " directories")
                        + " that other runs made in " + parent + " (" + String.join(", ", runs) + "): " + acrossKernels
                        + "; remove by hand those whose runs are gone";
            }
            for (String name : runs) {
                try {
                    String gone = removeIfItsRunIsGone(libc, under, name);
                    if (gone != null) removed.add(name + " (" + gone + ")");
                } catch (RuntimeException e) {
                    failed.add(name + ": " + e.getMessage());
                }
            }
        } catch (RuntimeException e) {
            return null; // no directory to look in: making the run's own says why, with what to do
        }
        if (removed.isEmpty() && failed.isEmpty()) return null;
        String line = "conduit perf: ";
        if (!removed.isEmpty()) {
            line += "removed " + (removed.size() == 1 ? "the directory" : removed.size() + " directories") + " that earlier runs "
                    + "killed before they ended left in " + parent + ", whose processes are all gone: " + String.join(", ", removed);
        }
        if (!failed.isEmpty()) {
            line += (removed.isEmpty() ? "" : "; ") + "could not remove what earlier runs left in " + parent + ": "
                    + String.join("; ", failed) + " (remove it by hand once no conduit perf of yours runs)";
        }
        return line;
    }

    /** Removes the directory {@code name} under {@code under} when its run is gone; says what went with it, or returns null. */
    private static String removeIfItsRunIsGone(Libc libc, SharedDirectory under, String name) {
        FileStatus status;
        try {
            status = under.status(name); // the link itself, never what it points to
        } catch (ErrnoException e) {
            return null; // gone since the listing
        }
        if (!status.isDirectory() || status.uid() != libc.geteuid()) return null;
        Path path = under.path().resolve(name);
        try (SharedDirectory run = SharedDirectory.open(libc, path, "--shared-dir")) {
            FileStatus opened = libc.fstat(run.fd());
            // Opened by path: one that is not the directory looked at above (replaced since by a link) is not judged.
            if (opened.dev() != status.dev() || opened.inode() != status.inode()) return null;
            int owners = 0;
            for (String prefix : OWNER_PREFIXES) {
                for (OwnerLease.Owner owner : OwnerLease.survey(libc, run, prefix).owners()) {
                    if (owner.state() != OwnerLease.State.DEAD) return null;
                    owners++;
                }
            }
            if (owners == 0) return null;
            for (String bootstrap : run.list("conduit-perf-")) {
                if (bootstrap.endsWith(".addr") && PerfBootstrap.removeIfNoServerHoldsIt(run, bootstrap) == null) return null;
            }
            long[] files = new long[2];
            List<String> notRemoved = new ArrayList<>();
            OwnerLease.ReclaimListener count = new OwnerLease.ReclaimListener() {
                @Override
                public void removed(String owner, String file, long bytes) {
                    files[0]++;
                    files[1] += Math.max(0, bytes);
                }

                @Override
                public void notRemoved(String owner, String file, ErrnoException e) {
                    notRemoved.add(file + ": " + e.errnoName() + " (" + e.getMessage() + ")");
                }
            };
            for (String prefix : OWNER_PREFIXES) OwnerLease.reclaimDead(libc, run, prefix, count);
            if (!notRemoved.isEmpty()) throw new ConduitException(String.join(", ", notRemoved));
            try {
                libc.unlinkat(under.fd(), name, OpenFlags.AT_REMOVEDIR);
            } catch (ErrnoException e) {
                List<String> left = libc.listDirectory(run.fd());
                throw new ConduitException(e.errnoName() + " (" + e.getMessage() + ")" + (left.isEmpty() ? ""
                        : ", it still holds " + String.join(", ", left)), e);
            }
            return files[0] + (files[0] == 1 ? " file, " : " files, ") + files[1] + " bytes";
        }
    }

    /**
     * The shutdown hook of a spawned server: when this JVM exits before the run stopped the server
     * ({@code stopped}), it kills the server and removes its directory, but only after waiting up
     * to {@code waitNanos} for that stop. On a signal the run stops at its next look (the client's
     * own hook), says why in its BYE and stops the server in order; a server killed at once raced
     * that stop, and the run, finding its server dead first, reported the death instead of the signal.
     */
    static Thread cleanupHook(Process server, Path dir, CountDownLatch stopped, long waitNanos) {
        return new Thread(() -> {
            PerfServer.awaitQuietly(stopped, waitNanos);
            server.destroyForcibly();
            deleteTree(dir);
        }, "conduit-perf-peer-cleanup");
    }

    /** The shared directory of this run. */
    Path directory() {
        return directory;
    }

    long pid() {
        return process.pid();
    }

    boolean isAlive() {
        return process.isAlive();
    }

    /** What the server printed (its last lines), for an error message. */
    String output() {
        if (!process.isAlive()) {
            try {
                reader.join(1_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        String text;
        synchronized (output) {
            text = String.join("\n", output).strip();
        }
        return text.isEmpty() ? "(it printed nothing)" : text;
    }

    /**
     * Ends the server after a session: it exits by itself after the client's BYE; otherwise closing
     * its standard input stops it, and if it still runs after that it is destroyed. Removes the directory.
     *
     * @return the server's exit code, or -1 when it had to be destroyed
     */
    int stop() {
        return stop(EXIT_WAIT.dividedBy(2));
    }

    /**
     * Ends the server after the client failed. The client's BYE, when the session had begun, says why, and
     * the server then exits by itself: it is given {@link #FAILURE_EXIT_WAIT} to read it before its standard
     * input is closed, which it would otherwise take for the client's end ("standard input ended"). A server
     * that got no BYE (the failure came first, or it is stuck) is stopped after that wait as after a session.
     *
     * @return the server's exit code, or -1 when it had to be destroyed
     */
    int stopAfterFailure() {
        return stop(FAILURE_EXIT_WAIT);
    }

    /**
     * Ends a server that no session with this client began: no BYE will come for it to exit after, so its standard input
     * is closed at once, where {@link #stopAfterFailure} gives it {@link #FAILURE_EXIT_WAIT} to read one.
     *
     * @return the server's exit code, or -1 when it had to be destroyed
     */
    int stopWithoutSession() {
        return stop(Duration.ZERO);
    }

    /** Gives the server {@code ownExitWait} to exit by itself, then closes its standard input, then destroys it. */
    private int stop(Duration ownExitWait) {
        if (closed) return process.isAlive() ? -1 : process.exitValue();
        closed = true;
        // Released before the server can end: one whose standard input ends removes the directory as it exits (its client
        // may be gone), and the lease's close, which lists the directory for the run's files, then found none there and
        // warned that the directory "was removed while this process uses it". Its server's own leases, live until it has
        // ended, keep a later run from taking the directory meanwhile (removeDirectoriesOfGoneRuns).
        if (lease != null) {
            try {
                lease.close();
            } catch (RuntimeException e) {
                // its file goes with the directory below; the lock with the descriptor, closed in any case
            }
        }
        int exit = -1;
        try {
            if (!process.waitFor(ownExitWait.toMillis(), TimeUnit.MILLISECONDS)) {
                process.getOutputStream().close();
                if (!process.waitFor(EXIT_WAIT.toMillis() / 2, TimeUnit.MILLISECONDS)) {
                    process.destroyForcibly().waitFor(EXIT_WAIT.toMillis(), TimeUnit.MILLISECONDS);
                }
            }
            if (!process.isAlive()) exit = process.exitValue();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            process.destroyForcibly();
        } catch (IOException e) {
            process.destroyForcibly();
        } finally {
            deleteTree(directory);
            try {
                Runtime.getRuntime().removeShutdownHook(hook);
            } catch (IllegalStateException e) {
                // shutting down: the hook runs anyway, and finds the server stopped
            }
            stopped.countDown();
        }
        return exit;
    }

    @Override
    public void close() {
        stop();
    }

    /**
     * {@code java} and its options to run the {@code conduit} command as this JVM runs it: the same
     * binary, module path, class path, native-access grant, {@code conduit.*} properties and the VM
     * options that shape a measurement ({@link PeerJvmOptions#passesToPeer}).
     */
    static List<String> javaCommand() {
        List<String> cmd = new ArrayList<>();
        cmd.add(ProcessHandle.current().info().command().orElseGet(() -> Path.of(System.getProperty("java.home"), "bin", "java").toString()));
        String modulePath = System.getProperty("jdk.module.path");
        String classPath = System.getProperty("java.class.path");
        boolean modular = modulePath != null && !modulePath.isEmpty() && PerfPeer.class.getModule().isNamed();
        Set<String> nativeAccess = new LinkedHashSet<>();
        for (String option : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
            if (option.startsWith("--enable-native-access=")) {
                nativeAccess.addAll(Arrays.asList(option.substring(option.indexOf('=') + 1).split(",")));
            } else if (PeerJvmOptions.passesToPeer(option)) {
                cmd.add(option);
            }
        }
        if (modular) {
            // With every module of the path resolved (below), Conduit's native modules are named there: grant them by name,
            // as the ./conduit launcher does, whatever this JVM was granted (a test JVM grants ALL-UNNAMED).
            ModuleFinder finder = ModuleFinder.of(Arrays.stream(modulePath.split(java.io.File.pathSeparator))
                    .filter(p -> !p.isEmpty()).map(Path::of).toArray(Path[]::new));
            for (String module : NATIVE_MODULES) {
                if (finder.find(module).isPresent()) nativeAccess.add(module);
            }
        }
        if (!nativeAccess.isEmpty()) cmd.add("--enable-native-access=" + String.join(",", nativeAccess));
        if (modular) {
            cmd.add("--module-path");
            cmd.add(modulePath);
            if (classPath != null && !classPath.isEmpty()) {
                cmd.add("--class-path");
                cmd.add(classPath);
            }
            // Plugin modules are required by no module: resolve them, as the ./conduit launcher does.
            cmd.add("--add-modules");
            cmd.add("ALL-MODULE-PATH");
            cmd.add("-m");
            cmd.add(MAIN_MODULE + "/" + MAIN_CLASS);
        } else {
            cmd.add("--class-path");
            cmd.add(classPath);
            cmd.add(MAIN_CLASS);
        }
        return cmd;
    }

    /**
     * A new directory {@code conduit-perf-<8 hex digits>} under {@code parent}, {@code 0700}. Short on
     * purpose: memfd's socket path then fits an AF_UNIX address (a shared directory of at most 38 bytes)
     * and needs no detour through /proc/self/fd.
     *
     * @param names where the 8 hex digits come from: random, so that a name taken is tried again with another
     */
    static Path privateDirectory(Path parent, ParentSource source, IntSupplier names) {
        for (int attempt = 1; ; attempt++) {
            Path dir = parent.resolve("conduit-perf-" + HexFormat.of().toHexDigits(names.getAsInt()));
            try {
                return Files.createDirectory(dir, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
            } catch (FileAlreadyExistsException e) {
                // Of 2^32 names, twelve taken in a row is no chance: a loop without end would hide what holds them.
                if (attempt == NAME_ATTEMPTS) {
                    throw new ConduitException("cannot make a private directory for the perf server in the shared directory " + parent
                            + " (" + source.key + "): EEXIST, each of " + NAME_ATTEMPTS + " random names was taken, the last "
                            + dir + ": remove the conduit-perf-* directories there that no running conduit perf uses, or "
                            + "choose another with " + source.choose, e);
                }
            } catch (NoSuchFileException e) {
                if (Files.isDirectory(parent)) {
                    // procfs answers a mkdir with ENOENT: the directory is there, its file system makes none.
                    throw new ConduitException("cannot make a private directory for the perf server in the shared directory " + parent
                            + " (" + source.key + "): ENOENT, though the directory exists: its file system makes no new directories "
                            + "(procfs, for one): choose a directory of a file system that holds files, such as a tmpfs (/dev/shm), "
                            + "with " + source.choose, e);
                }
                throw new ConduitException("cannot make a private directory for the perf server: the shared directory " + parent
                        + " does not exist (" + source.key + (source == ParentSource.CONFIGURATION ? ", /dev/shm unless set" : "")
                        + "): create it, or choose another with " + source.choose, e);
            } catch (AccessDeniedException e) {
                throw new ConduitException("cannot make a private directory for the perf server in the shared directory " + parent
                        + " (" + source.key + "): EACCES, this user may not create files there: make it writable for "
                        + "this user, or choose another with " + source.choose, e);
            } catch (IOException e) {
                throw new ConduitException("cannot make a private directory for the perf server in the shared directory " + parent
                        + " (" + source.key + "): " + reason(e) + " (" + dir + "): choose another with " + source.choose
                        + (readOnly(parent) ? " that is mounted read-write" : ""), e);
            }
        }
    }

    /**
     * The file system's reason for {@code e} (strerror: "No space left on device"), without the JDK's class name and path:
     * a write's failure is a plain IOException whose message is that reason alone.
     */
    static String reason(IOException e) {
        if (e instanceof FileSystemException f && f.getReason() != null) return f.getReason();
        return e.getMessage() != null ? e.getMessage() : e.toString();
    }

    /**
     * Whether the file system {@code file} is on has less room than {@code bytes}, as its file store
     * (statvfs) says: the JDK's reason for ENOSPC is strerror in the process's locale ("Auf dem Gerät
     * ist kein Speicherplatz mehr verfügbar"), not a text to match.
     */
    static boolean tooFull(Path file, long bytes) {
        try {
            Path parent = file.toAbsolutePath().getParent();
            return parent != null && Files.getFileStore(parent).getUsableSpace() < bytes;
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    /**
     * Whether {@code dir} is on a read-only mount, as its file store (statvfs) says: the JDK's reason
     * for EROFS is strerror in the process's locale ("Das Dateisystem ist nur lesbar"), not a text to match.
     */
    static boolean readOnly(Path dir) {
        try {
            return Files.getFileStore(dir).isReadOnly();
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    /** Whether {@code dir} is named as {@link #privateDirectory} names them: the only kind a spawned server removes. */
    static boolean isPrivateDirectory(Path dir) {
        Path name = dir.getFileName();
        return name != null && PRIVATE_DIRECTORY.matcher(name.toString()).matches();
    }

    /**
     * Removes {@code dir} and what it holds, best effort (a leftover is reclaimed as a dead owner's files by the next run
     * in that directory), through descriptors: each directory is opened below the one that holds it, following no
     * symbolic link ({@link SharedDirectory}), and each name removed there ({@code unlinkat}). A run's directory is in the
     * shared directory, which another process may write (one in a container): by path ({@code Files.walkFileTree}), a
     * directory in it swapped for a symbolic link while the walk was in it led the removal to the files of the directory
     * the link named, any directory's for a root run (found by helper h35). A symbolic link is removed, never followed.
     */
    static void deleteTree(Path dir) {
        Path absolute = dir.toAbsolutePath();
        if (absolute.getParent() == null) return;
        Libc libc = Linux.libc();
        try (SharedDirectory parent = SharedDirectory.open(libc, absolute.getParent(), "--shared-dir")) {
            removeBeneath(libc, parent.fd(), absolute.getFileName().toString());
        } catch (RuntimeException e) {
            // best effort: the parent is gone or cannot be opened
        }
    }

    /** Removes {@code name} below {@code directory}: a directory after what it holds, anything else at once; best effort. */
    private static void removeBeneath(Libc libc, FileDescriptor directory, String name) {
        try {
            libc.unlinkat(directory, name, 0);
            return;
        } catch (ErrnoException e) {
            if (!e.errnoName().equals("EISDIR")) return; // gone, or not ours to remove
        }
        try (FileDescriptor held = libc.openBeneath(directory, name, OpenFlags.O_RDONLY | OpenFlags.O_DIRECTORY | OpenFlags.O_NOFOLLOW
                | OpenFlags.O_CLOEXEC, 0)) {
            for (String entry : libc.listDirectory(held)) removeBeneath(libc, held, entry);
        } catch (ErrnoException e) {
            // swapped for something else since (ELOOP for a link), or not listable: its removal below says what is left
        }
        try {
            libc.unlinkat(directory, name, OpenFlags.AT_REMOVEDIR);
        } catch (ErrnoException e) {
            // not empty, or not a directory any more: best effort
        }
    }
}
