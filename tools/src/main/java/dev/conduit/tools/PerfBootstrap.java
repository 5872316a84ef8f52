package dev.conduit.tools;

import dev.conduit.linux.Errno;
import dev.conduit.linux.ErrnoException;
import dev.conduit.linux.FileDescriptor;
import dev.conduit.linux.FileStatus;
import dev.conduit.linux.Libc;
import dev.conduit.linux.Linux;
import dev.conduit.linux.OpenFlags;
import dev.conduit.internal.formats.WorkerIdentity;
import dev.conduit.shm.OwnerLease;
import dev.conduit.shm.SharedDirectory;
import dev.conduit.shm.ShmPlugins;
import dev.conduit.shm.ShmTransport;
import dev.conduit.shm.UserNamespace;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ConfigKey;
import dev.conduit.spi.PayloadReader;

import java.io.IOException;
import java.io.PrintWriter;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.regex.Pattern;

/**
 * What a {@code conduit perf} server publishes so that a client can reach it: its worker address,
 * the handles of the regions it exported for RMA (one per transport plugin of its worker), and who
 * it is. Only the bootstrap goes this way; everything after it is active messages.
 *
 * <p>The same text travels either as a file {@code conduit-perf-<name>.addr} in the shared
 * directory (works into a container that shares nothing but that directory: no network) or over a
 * TCP connection as one length-prefixed frame each way. Format, one field a line, UTF-8:
 * <pre>
 * conduit-perf 1
 * pid 4242
 * host perf-container
 * thread-mode SINGLE
 * region-size 1048576
 * address &lt;base64 of the WorkerAddress bytes&gt;
 * region memfd &lt;base64 of the region's IPC handle&gt;
 * region posix &lt;base64 ...&gt;
 * end
 * </pre>
 * The file is created {@code 0600} with {@code O_EXCL} semantics, locked for the server's life and
 * written whole; a reader takes it only once the {@code end} line is there.
 *
 * @param pid        the server's pid, as it sees itself (in its own PID namespace)
 * @param host       its host name, as it sees it (in its own UTS namespace)
 * @param threadMode the thread mode of its worker
 * @param regionSize the size of each exported region: the largest size RMA tests can use
 * @param address    its worker address
 * @param regions    plugin name to the handle of the region exported through that plugin's pool
 */
record PerfBootstrap(long pid, String host, String threadMode, long regionSize, byte[] address, Map<String, byte[]> regions) {

    /** The first line's word, before the bootstrap format's number. */
    private static final String MAGIC_WORD = "conduit-perf ";
    private static final int FORMAT = 1;
    static final String MAGIC = MAGIC_WORD + FORMAT;
    /** What a TCP client sends first. */
    private static final byte[] REQUEST = (MAGIC + " request\n").getBytes(StandardCharsets.UTF_8);
    private static final int MAX_FRAME = 64 << 10;
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9._-]{1,64}");

    PerfBootstrap {
        regions = Map.copyOf(regions);
    }

    /** The file a server named {@code name} publishes in {@code directory}. */
    static Path file(Path directory, String name) {
        return directory.resolve("conduit-perf-" + name + ".addr");
    }

    static void checkName(String name) {
        if (!NAME.matcher(name).matches()) {
            throw new IllegalArgumentException("--name '" + name + "' must be 1 to 64 characters of A-Z a-z 0-9 . _ -");
        }
    }

    byte[] encode() {
        Base64.Encoder b64 = Base64.getEncoder();
        StringBuilder s = new StringBuilder(MAGIC).append('\n');
        s.append("pid ").append(pid).append('\n');
        s.append("host ").append(host.replaceAll("\\s", "_")).append('\n');
        s.append("thread-mode ").append(threadMode).append('\n');
        s.append("region-size ").append(regionSize).append('\n');
        s.append("address ").append(b64.encodeToString(address)).append('\n');
        regions.forEach((plugin, handle) -> s.append("region ").append(plugin).append(' ').append(b64.encodeToString(handle)).append('\n'));
        s.append("end\n");
        return s.toString().getBytes(StandardCharsets.UTF_8);
    }

    /**
     * Reads what {@link #encode()} wrote.
     *
     * @param foreign what to do about a text no conduit perf server wrote (its first line is not {@link #MAGIC})
     * @return {@code null} when the text is incomplete (no {@code end} line yet)
     * @throws ConduitException naming the line that is wrong
     */
    static PerfBootstrap decode(byte[] bytes, String source, String foreign) {
        String text = new String(bytes, StandardCharsets.UTF_8);
        int firstEnd = text.indexOf('\n');
        // Judged as soon as its first line is whole: another program's file was waited for as one being written, and the
        // wait's end then said that no server had published it.
        if (firstEnd >= 0 && !text.substring(0, firstEnd).equals(MAGIC)) {
            String first = text.substring(0, firstEnd);
            // Only a version number after the word is another format's: anything else there is no server's (it was called
            // another format too).
            String version = first.startsWith(MAGIC_WORD) ? first.substring(MAGIC_WORD.length()) : "";
            throw new ConduitException(source + " is not a conduit perf bootstrap of this version (first line '" + quoted(first)
                    + "', expected '" + MAGIC + "'): " + (version.matches("[0-9]{1,9}")
                    ? "the server runs a Conduit of bootstrap format " + version + ", where this one reads only format "
                            + FORMAT + "; run both sides with the same Conduit version"
                    : "no conduit perf server wrote it; " + foreign));
        }
        if (!text.endsWith("end\n")) return null;
        String[] lines = text.split("\n");
        long pid = -1;
        long regionSize = 0; // none yet: a line that gives one gives more than 0
        String host = "?";
        String mode = null;
        byte[] address = null;
        Map<String, byte[]> regions = new LinkedHashMap<>();
        for (int i = 1; i < lines.length - 1; i++) {
            // -1: a value left empty ("pid ") is a field of its own, said as empty, not a line one field short.
            String[] f = lines[i].split(" ", -1);
            try {
                switch (f[0]) {
                    case "pid" -> pid = Long.parseLong(value(f, 1));
                    case "host" -> host = shownAsIs(value(f, 1), "a host name");
                    case "thread-mode" -> mode = shownAsIs(value(f, 1), "a thread mode");
                    case "region-size" -> {
                        regionSize = Long.parseLong(value(f, 1));
                        if (regionSize <= 0) throw new IllegalArgumentException("a region size is above 0");
                    }
                    case "address" -> address = Base64.getDecoder().decode(value(f, 1));
                    case "region" -> regions.put(shownAsIs(value(f, 1), "a plugin name"), Base64.getDecoder().decode(value(f, 2)));
                    default -> { } // later versions may add lines
                }
            } catch (RuntimeException e) {
                // Named by its line: the JDK's words alone ("Index 1 out of bounds for length 1", "Illegal base64 character
                // 21") said neither which field was wrong nor that it was one.
                throw new ConduitException(source + " is malformed: line " + (i + 1) + " ('" + quoted(lines[i]) + "'): "
                        + quoted(String.valueOf(e.getMessage())), e); // the JDK's words quote the value: "For input string: ..."
            }
        }
        List<String> lacking = new ArrayList<>();
        if (address == null) lacking.add("address");
        if (mode == null) lacking.add("thread-mode");
        if (regionSize == 0) lacking.add("region-size");
        if (regions.isEmpty()) lacking.add("region");
        if (!lacking.isEmpty()) {
            // Each named: "lacks its address, thread mode, region size or regions" left the reader to find which.
            throw new ConduitException(source + " is malformed: it lacks the line" + (lacking.size() == 1 ? " " : "s ")
                    + String.join(", ", lacking) + " (another version of conduit perf wrote it, or it was damaged)");
        }
        return new PerfBootstrap(pid, host, mode, regionSize, address, regions);
    }

    /** Field {@code i} of a line, which has it. */
    private static String value(String[] fields, int i) {
        if (i >= fields.length) {
            throw new IllegalArgumentException("'" + fields[0] + "' takes " + i + (i == 1 ? " value" : " values") + ", it has "
                    + (fields.length - 1));
        }
        return fields[i];
    }

    /**
     * {@code value}, a field that messages and the JSON report show as it is: printable ASCII, no space, as a server writes
     * it, so that a file's or a port's other bytes forge no line of a message and rewrite no terminal.
     */
    private static String shownAsIs(String value, String what) {
        if (value.isEmpty() || !value.chars().allMatch(c -> c > 0x20 && c < 0x7F)) {
            throw new IllegalArgumentException(what + " is one word of printable ASCII");
        }
        return value;
    }

    /**
     * A line of the bootstrap, fit for the error that quotes it: the text came from whoever wrote the file or answered on
     * the port, whose control characters could forge lines of the message or rewrite a terminal's.
     */
    private static String quoted(String line) {
        return PayloadReader.printable(line);
    }

    // ------------------------------------------------------------------ the shared directory

    /**
     * How many times {@link #publish} creates its file again when another process removed it before this server held it:
     * each time needs a process that judged the file a gone server's, or a killed run's, in the instant between its
     * creation and its lock (below).
     */
    private static final int PUBLISH_ATTEMPTS = 4;

    /**
     * Publishes this bootstrap as {@code conduit-perf-<name>.addr} in {@code directory}: created
     * {@code 0600} and exclusively (a symbolic link of that name makes it fail), locked before it is
     * written (an exclusive {@code fcntl} lock, held until {@link Published#close()}), written whole.
     * The lock is the server's lease on the file: a complete file nobody holds it on is one a server
     * that is gone left (killed: its exit did not remove it), and is replaced, unless the worker it names
     * holds its lease (a running server of a Conduit before 2026-12-04, which locked nothing); any other file of that
     * name makes it fail. A server restarted after a {@code kill -9} failed for good on the file its
     * predecessor left (helper h6). A file it began and could not write whole (a full file system) is
     * removed: left, a new {@code --server} refused to replace it and a client took it for a server's
     * that died while writing it.
     *
     * <p>Between its creation and its lock the file is empty and unlocked, and a spawned run that removes a killed
     * run's directory ({@link #removeIfNoServerHoldsIt}) may judge it so, having found every owner of that directory
     * dead just before this server made its worker there (a server started by hand with {@code --shared-dir} in such a
     * directory): it locks the file and removes it. The server then finds its lock taken, or its file no longer under
     * its name once locked (compared by inode, never by opening it: closing any descriptor of the file would drop the
     * lock), and creates it again; and a file it found there and was about to judge, removed meanwhile, is created
     * too. The server wrote its bootstrap into a file nobody could open, and said "published": its clients waited for
     * it in vain; or it failed, naming a file that was not there, or saying its new file was locked by another process
     * and to choose another {@code --shared-dir}.
     */
    Published publish(Path directory, String name) {
        return publish(Linux.libc(), directory, name);
    }

    /** {@link #publish(Path, String)}, judging the directory through {@code libc} ({@link ConduitCommand#libc}). */
    Published publish(Libc libc, Path directory, String name) {
        return publish(libc, directory, name, () -> { });
    }

    /**
     * {@link #publish(Path, String)}, running {@code meanwhile} after each attempt to create the file, where another
     * process's judgement of it may come: for tests.
     */
    Published publish(Path directory, String name, Runnable meanwhile) {
        return publish(Linux.libc(), directory, name, meanwhile);
    }

    private Published publish(Libc libc, Path directory, String name, Runnable meanwhile) {
        Path file = file(directory, name);
        byte[] text = encode();
        String replaced = null;
        for (int attempt = 1; ; attempt++) {
            FileChannel channel;
            try {
                channel = create(file);
            } catch (FileAlreadyExistsException e) {
                meanwhile.run();
                String gone = removeIfItsServerIsGone(libc, file);
                if (gone == null && Files.exists(file, LinkOption.NOFOLLOW_LINKS)) throw exists(libc, file, name, e);
                if (gone != null) replaced = gone;
                if (attempt == PUBLISH_ATTEMPTS) throw lost(file);
                continue; // replaced, or removed meanwhile: created on the next attempt (or found another server's there)
            } catch (IOException e) {
                throw cannotPublish(file, text.length, e);
            }
            boolean held;
            Object created = null;
            try {
                created = fileKey(file);
                meanwhile.run();
                // Before the text: a complete file is then always one whose server holds its lock while it runs.
                held = created != null && channel.tryLock() != null; // not held: another process judging it holds it, to remove it
                if (held) {
                    ByteBuffer remaining = ByteBuffer.wrap(text);
                    while (remaining.hasRemaining()) channel.write(remaining);
                    held = created.equals(fileKey(file)); // not: removed by such a process before this lock was taken
                }
            } catch (IOException | RuntimeException e) {
                try {
                    Files.deleteIfExists(file);
                } catch (IOException cleanup) {
                    e.addSuppressed(cleanup);
                }
                try {
                    channel.close();
                } catch (IOException cleanup) {
                    e.addSuppressed(cleanup);
                }
                if (e instanceof IOException io) throw cannotPublish(file, text.length, io);
                throw (RuntimeException) e;
            }
            if (held) {
                PUBLISHED_HERE.put(file.toAbsolutePath().normalize(), created);
                return new Published(file, created, channel, replaced);
            }
            try {
                channel.close(); // the name is not removed: it names no file of this server's any more, or another server's
            } catch (IOException ignored) {
                // a file no one can open: nothing is lost
            }
            if (attempt == PUBLISH_ATTEMPTS) throw lost(file);
        }
    }

    /** The identity (device and inode) of what {@code file} names, read without opening it; {@code null} when it names nothing. */
    private static Object fileKey(Path file) throws IOException {
        try {
            return Files.readAttributes(file, java.nio.file.attribute.BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS).fileKey();
        } catch (NoSuchFileException e) {
            return null;
        }
    }

    /** {@link #publish} lost its file to other processes' removals {@value #PUBLISH_ATTEMPTS} times in a row. */
    private static ConduitException lost(Path file) {
        return new ConduitException("cannot publish the perf server's address: " + file + " was removed by another process as this "
                + "server created it, " + PUBLISH_ATTEMPTS + " times in a row: a spawned conduit perf removes a killed run's directory "
                + "(conduit-perf-XXXXXXXX) in which it finds every owner dead, and so may another program that cleans "
                + file.getParent() + ". Give --shared-dir a directory of your own, not a run's");
    }

    /** The files the servers of this JVM published and hold, as absolute paths, each with its file's key (device and inode). */
    private static final java.util.Map<Path, Object> PUBLISHED_HERE = new java.util.concurrent.ConcurrentHashMap<>();

    private static FileChannel create(Path file) throws IOException {
        return FileChannel.open(file, Set.of(StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE),
                PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
    }

    private static ConduitException exists(Libc libc, Path file, String name, IOException cause) {
        String underAnotherKernel = mayRunUnderAnotherKernel(libc, file);
        if (underAnotherKernel != null) {
            return new ConduitException("cannot publish the perf server's address: " + file + " exists, and this server does not "
                    + "replace it: " + underAnotherKernel, cause);
        }
        return new ConduitException("cannot publish the perf server's address: " + file + " exists, and the server that "
                + "published it was not found gone (a new server replaces the complete file of one that holds no lock on it and whose "
                + "worker holds no lease there, as a server of a Conduit before 2026-12-04, which locked nothing, still does): another "
                + "server named '" + name + "' runs with this shared directory, or the file is incomplete or no server's: "
                + "choose another --name, or, if none runs, remove the file", cause);
    }

    /**
     * Where {@code file}'s directory is on a file system other kernels may see too ({@link SharedDirectory#seenByOtherKernels()}),
     * that the server that published it may run under another kernel, whose lock on it looks free here, and what to do; null
     * elsewhere (or where the directory cannot be opened). A server does not replace such a file, and a client that cannot
     * reach its server says so rather than that a new server replaces it.
     */
    static String mayRunUnderAnotherKernel(Libc libc, Path file) {
        String kind;
        try (SharedDirectory directory = SharedDirectory.open(libc, file.toAbsolutePath().getParent(), "--shared-dir")) {
            kind = directory.seenByOtherKernels();
        } catch (RuntimeException e) {
            return null;
        }
        return kind == null ? null : file.toAbsolutePath().getParent() + " is on " + kind + ", which other kernels may see too (a "
                + "VM's guest and its host, other hosts), where a lock held under another kernel may look free under this one, so the "
                + "server that published it may run there: choose another --name, or remove the file by hand "
                + "once sure that server is gone";
    }

    /**
     * Removes {@code file} when it is a complete bootstrap on which no process holds the lock (its server is gone), taking
     * the lock for the removal, so that no server that starts meanwhile judges it too; says whose it was, or returns
     * {@code null} and leaves it. An incomplete one stays: a server creates the file before it locks it, so one that is
     * starting may be about to write it.
     */
    static String removeIfItsServerIsGone(Libc libc, Path file) {
        return removeIfUnlocked(libc, file, false);
    }

    /**
     * The same for the file {@code name} in {@code directory}, also for an incomplete bootstrap nobody holds the lock on (its
     * server was killed while writing it): for a run's private directory in which every owner is dead, so that no server
     * of it can be starting, whose lease there would be live (PerfPeer.removeDirectoriesOfGoneRuns). One that is being
     * written is locked, and stays. Judged and removed through the directory's descriptor (no symbolic link followed): the
     * run's directory is in the shared directory, which another process may write, where by path a directory swapped for
     * a link in that instant led the removal of a bootstrap-like file outside it (found by helper h38).
     */
    static String removeIfNoServerHoldsIt(SharedDirectory directory, String name) {
        return removeIfUnlocked(directory, name, true);
    }

    private static String removeIfUnlocked(Libc libc, Path file, boolean incompleteToo) {
        SharedDirectory directory;
        try {
            directory = SharedDirectory.open(libc, file.toAbsolutePath().getParent(), "--shared-dir");
        } catch (RuntimeException e) { // no directory: no file to judge
            return null;
        }
        try (directory) {
            return removeIfUnlocked(directory, file.getFileName().toString(), incompleteToo);
        }
    }

    private static String removeIfUnlocked(SharedDirectory directory, String name, boolean incompleteToo) {
        Path file = directory.path().resolve(name);
        // Not even opened when a server of this JVM holds it: closing any descriptor of a file drops every fcntl lock the
        // process holds on it, that server's too.
        if (PUBLISHED_HERE.containsKey(file.toAbsolutePath().normalize())) return null;
        // Where other kernels may see the directory (9p, virtiofs: a host and its container, the setup a bootstrap file is
        // for), a live server under another kernel holds a lock and a lease that look free here: its file is never judged.
        if (OwnerLease.leasesAcrossKernels(directory) != null) return null;
        // Only a regular file, reopened as a channel through the descriptor that was looked at: a device node there (a
        // container's root can make one) is never opened, its driver never asked (found by helper h35).
        Libc libc = Linux.libc();
        try (FileDescriptor regular = directory.openRegularFile(name, OpenFlags.O_RDWR, "perf bootstrap file",
                "a perf server's bootstrap file is a regular file");
             FileChannel left = FileChannel.open(Path.of("/proc/self/fd/" + regular.fd()), StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            if (left.size() > MAX_FRAME) return null;
            ByteBuffer bytes = ByteBuffer.allocate((int) left.size());
            while (bytes.hasRemaining() && left.read(bytes) >= 0) { }
            PerfBootstrap gone = decode(bytes.array(), file.toString(), "remove it");
            if (gone == null && !(incompleteToo && beginsABootstrap(bytes.array()))) return null;
            if (left.tryLock() == null) return null; // its server runs, or is writing it now
            if (gone != null && itsWorkerLives(libc, directory, gone)) return null;
            // Removed in the directory held open, and only while its name still leads to the file judged and locked.
            FileStatus judged = libc.fstat(regular);
            FileStatus named = directory.status(name);
            if (named.dev() != judged.dev() || named.inode() != judged.inode()) return null;
            libc.unlinkat(directory.fd(), name, 0);
            return gone != null ? "pid " + gone.pid() + " on " + gone.host() : "an incomplete bootstrap of " + bytes.capacity() + " bytes";
        } catch (IOException | RuntimeException e) { // gone, not a bootstrap, not ours to open, or locked by this JVM: not known to be gone
            return null;
        }
    }

    /**
     * Whether a process holds the lock on {@code file}, as its server does while it runs: also in another PID namespace or
     * under another host name (a container's), where its pid says nothing. False when the file cannot be opened (gone,
     * not a regular file, not this user's to open) or nobody holds its lock: not known to run.
     */
    static boolean heldByItsServer(Path file) {
        Path absolute = file.toAbsolutePath().normalize();
        // Never opened when a server of this JVM holds it: closing a descriptor of the file would drop that server's lock.
        if (PUBLISHED_HERE.containsKey(absolute)) return true;
        try (SharedDirectory directory = SharedDirectory.open(Linux.libc(), absolute.getParent(), "--shared-dir");
             FileDescriptor regular = directory.openRegularFile(absolute.getFileName().toString(), OpenFlags.O_RDONLY,
                     "perf bootstrap file", "a perf server's bootstrap file is a regular file");
             FileChannel channel = FileChannel.open(Path.of("/proc/self/fd/" + regular.fd()), StandardOpenOption.READ)) {
            return channel.tryLock(0, Long.MAX_VALUE, true) == null; // a shared lock: refused while the server holds its own
        } catch (IOException | RuntimeException e) {
            return false;
        }
    }

    /**
     * Whether the worker that {@code bootstrap} names holds its lease in {@code directory} (the server's shared directory,
     * where its worker's lease is) over memfd or posix: its server runs though its file is not locked, as a server of a
     * Conduit before 2026-12-04 never locked it. A new server of a rolling upgrade took such a live server's file for a
     * gone one's and replaced it; the older server went on serving, unfound, and its exit removed the new one's file by
     * name. True also when a lease cannot be judged (not known to be gone).
     */
    private static boolean itsWorkerLives(Libc libc, SharedDirectory directory, PerfBootstrap bootstrap) {
        dev.conduit.WorkerAddress address;
        try {
            address = dev.conduit.WorkerAddress.fromBytes(bootstrap.address());
        } catch (RuntimeException e) {
            return false; // no worker's address: no server's to keep
        }
        for (String plugin : ShmPlugins.LEASE_PLUGINS) {
            byte[] transport = WorkerIdentity.transportAddress(address, plugin);
            String lease = transport == null ? null : ShmTransport.workerLeaseOf(plugin, transport);
            if (lease == null) continue;
            try {
                if (OwnerLease.isAlive(libc, directory, lease)) return true;
            } catch (RuntimeException e) {
                return true;
            }
        }
        return false;
    }

    /**
     * Whether {@code bytes}, which {@link #decode} found incomplete, are the start of what a server writes: a first line
     * not yet ended must be the start of {@link #MAGIC} (decode judges a whole first line), so that another program's
     * file without a newline is never taken for one.
     */
    private static boolean beginsABootstrap(byte[] bytes) {
        String text = new String(bytes, StandardCharsets.UTF_8);
        return text.indexOf('\n') >= 0 || (MAGIC + "\n").startsWith(text);
    }

    /**
     * A published bootstrap file and the lock its server holds on it while it runs. {@link #close()} removes the file,
     * then drops the lock; once, whichever of the server's end and its shutdown hook comes first. It removes only the file
     * it published ({@code key}): one another server published under the name after this one's was removed (by hand, by a
     * program that cleans the directory) stays, for that server runs. Until 2026-12-07 the close removed the name whatever
     * file it led to, and the running server's clients were told no perf server had published it
     * ({@code PerfBootstrapTest#aServersCloseLeavesTheFileAnotherServerPublishedUnderItsNameOnceItsOwnWasRemoved}).
     *
     * @param key      the published file's key (device and inode), as {@link java.nio.file.attribute.BasicFileAttributes#fileKey()} gives it
     * @param replaced whose file this one replaced ("pid 42 on host h": a server that is gone), or {@code null}
     */
    record Published(Path file, Object key, FileChannel channel, String replaced) implements AutoCloseable {
        @Override
        public synchronized void close() {
            if (!channel.isOpen()) return;
            try {
                // Not by opening it: closing any descriptor of the file would drop the lock before the file is gone.
                if (key.equals(fileKey(file))) Files.deleteIfExists(file);
            } catch (IOException e) {
                // best effort: the process is ending, and a file left unlocked is replaced by the next server
            }
            try {
                channel.close();
            } catch (IOException e) {
                // the lock goes with the process anyway
            }
            PUBLISHED_HERE.remove(file.toAbsolutePath().normalize(), key);
        }
    }

    /** Why {@code file} ({@code bytes} long) could not be created or written, and what to do, as the file system says. */
    private static ConduitException cannotPublish(Path file, long bytes, IOException e) {
        Path directory = file.getParent();
        String why = e instanceof AccessDeniedException
                ? "EACCES, this user may not create files in " + directory + ": make it writable for this user, or choose another --shared-dir"
                : PerfPeer.reason(e) + (PerfPeer.readOnly(directory) ? ": choose another --shared-dir that is mounted read-write"
                        : PerfPeer.tooFull(file, bytes) ? " (ENOSPC): free space in " + directory + ", or choose another --shared-dir"
                        : ": choose another --shared-dir");
        return new ConduitException("cannot publish the perf server's address: cannot write " + file + " (" + bytes + " bytes): " + why, e);
    }

    /**
     * Waits for the server named {@code name} to publish its bootstrap in {@code directory}.
     *
     * @param gone tells when to stop waiting early (the spawned server exited)
     * @throws ConduitException when it does not appear within {@code timeout}
     */
    static PerfBootstrap await(Path directory, String name, Duration timeout, BooleanSupplier gone) {
        return await(directory, name, timeout, gone, () -> { });
    }

    /**
     * The same, running {@code afterFirstLook} once the file was first looked for, found or not: a check that fails
     * whatever the file holds (a client with no transport here) then fails before any wait, after the errors of the
     * directory itself (something else under the file's name, EACCES), which name it with their remedy.
     */
    static PerfBootstrap await(Path directory, String name, Duration timeout, BooleanSupplier gone, Runnable afterFirstLook) {
        return await(directory, name, timeout, gone, "start one with 'conduit perf --server --shared-dir " + directory
                + (name.equals("default") ? "" : " --name " + name) + "' (or give --timeout)", afterFirstLook);
    }

    /**
     * The same, with what to do when no server published in time: {@code remedy} follows the
     * timeout's message.
     */
    static PerfBootstrap await(Path directory, String name, Duration timeout, BooleanSupplier gone, String remedy) {
        return await(directory, name, timeout, gone, remedy, () -> { });
    }

    private static PerfBootstrap await(Path directory, String name, Duration timeout, BooleanSupplier gone, String remedy,
            Runnable afterFirstLook) {
        Path file = file(directory, name);
        String foreign = "remove it, or choose another --name";
        long deadline = System.nanoTime() + timeout.toNanos();
        for (boolean first = true; ; first = false) {
            int unfinished = -1; // the length of a file read without its end line, -1 when there was none
            try {
                byte[] bytes = readRegularFile(file, foreign);
                if (first) afterFirstLook.run();
                if (bytes != null) {
                    PerfBootstrap b = decode(bytes, file.toString(), foreign);
                    if (b != null) return b;
                    unfinished = bytes.length;
                }
            } catch (ErrnoException e) {
                if (e.errnoName().equals("EACCES")) throw new ConduitException("cannot read " + file + ": EACCES (" + refusedRead(file), e);
                throw new ConduitException("cannot read " + file + ": " + e.getMessage() + "; " + Errno.remedy(e.errno(), foreign), e);
            }
            if (gone.getAsBoolean()) throw new ConduitException("the perf server exited before it published " + file);
            if (System.nanoTime() > deadline) {
                if (unfinished >= 0) {
                    // It was said "no perf server published" a file that is there: a server that died while writing it leaves one.
                    throw new ConduitException(file + " is there, but it was not written whole within " + ConfigKey.durationText(timeout) + " ("
                            + unfinished + " bytes, without the line 'end' that ends a bootstrap): a server that died while writing it "
                            + "leaves such a file, which a new --server refuses to replace. If none runs, remove the file and start one");
                }
                throw new ConduitException("no perf server published " + file + " within " + ConfigKey.durationText(timeout) + ": " + remedy);
            }
            sleep(20);
        }
    }

    /**
     * The bytes of {@code file}, a bootstrap file in the shared directory, at most one more than {@link #MAX_FRAME} (a
     * larger file is no bootstrap); null when it is not there (yet). Whoever writes the directory (a process in a
     * container) may have put anything under its name, so it is opened only as a regular file
     * ({@link #openRegularFile}): a FIFO's open waited for a writer for ever, past --timeout; a symbolic link was followed
     * out of the directory, and the first line of what it led to quoted in the error (any file, for a root client); a
     * link to /dev/zero filled the heap (found by helper h35).
     *
     * @param foreign what to do about a file that is no bootstrap, for the error
     * @throws ConduitException naming what has the name, when it is not a regular file
     * @throws ErrnoException when it does not open or read
     */
    private static byte[] readRegularFile(Path file, String foreign) {
        Libc libc = Linux.libc();
        try (FileDescriptor fd = openRegularFile(libc, file, OpenFlags.O_RDONLY, foreign); Arena arena = Arena.ofConfined()) {
            if (fd == null) return null;
            MemorySegment buffer = arena.allocate(MAX_FRAME + 1);
            long n = 0;
            for (int read; n < buffer.byteSize() && (read = libc.read(fd, buffer.asSlice(n))) > 0; ) n += read;
            return buffer.asSlice(0, n).toArray(ValueLayout.JAVA_BYTE);
        }
    }

    /**
     * Opens {@code file} with {@code flags} if it is a regular file ({@link SharedDirectory#openRegularFile}: what has its
     * name is looked at without opening it, so neither a FIFO nor a device node is opened, nor a symbolic link followed);
     * null when it, or its directory, is not there.
     *
     * @throws ConduitException naming what has the name, when it is not a regular file, and {@code foreign}, what to do
     */
    private static FileDescriptor openRegularFile(Libc libc, Path file, int flags, String foreign) {
        SharedDirectory directory;
        try {
            directory = SharedDirectory.open(libc, file.getParent(), "--shared-dir");
        } catch (ConduitException e) {
            if (e.getCause() instanceof ErrnoException cause && cause.errnoName().equals("ENOENT")) return null;
            throw e;
        }
        String name = file.getFileName().toString();
        try (directory) {
            return directory.openRegularFile(name, flags, "perf bootstrap file", "a perf server's bootstrap file is a regular file");
        } catch (ErrnoException e) {
            if (e.errnoName().equals("ENOENT")) return null;
            if (!e.errnoName().equals("EINVAL") && !e.errnoName().equals("ELOOP")) throw e;
            String what;
            try (SharedDirectory again = SharedDirectory.open(libc, file.getParent(), "--shared-dir")) {
                what = again.status(name).typeName();
            } catch (RuntimeException gone) {
                what = "not a regular file";
            }
            throw new ConduitException(file + " is " + what + ", not a perf server's bootstrap file: " + foreign, e);
        }
    }

    /**
     * Why a read of {@code file} was refused, and what to do, after "EACCES (": whose the file is
     * and which user this process runs as, then the remedy. Another user's file is the server's of
     * another user; this process's own (or one whose owner cannot be told) is refused for its mode
     * or by a security module, which running as another user would not mend.
     */
    private static String refusedRead(Path file) {
        Object owner = uidOf(file);
        Object self = selfUid();
        // In a container's own user namespace the uids are the namespace's: the host's are what the remedy needs, and a
        // file showing the overflow uid may be any user the namespace does not map.
        UserNamespace namespace = UserNamespace.current();
        String whose = (owner instanceof Integer o ? "it belongs to uid " + uid(o) + (namespace.mayBeUnmapped(Integer.toUnsignedLong(o))
                ? ", which in this process's user namespace stands for every user the namespace does not map" : "") : "its owner cannot be read")
                + (self instanceof Integer u ? ", this process runs as " + namespace.describe(Integer.toUnsignedLong(u))
                : ", this process runs as user " + System.getProperty("user.name"))
                + "): ";
        if (owner != null && owner.equals(self)) {
            return whose + "the file is this process's user's own, so the refusal is its mode (the server creates it 0600; "
                    + "check what changed it) or a security module's (under SELinux, relabel the shared directory: a container's "
                    + "volume with :z)";
        }
        return whose + "the server creates it 0600, for its own user alone (it carries the handles of its regions), and workers "
                + "connect only within one user: run the client as the server's user (a container as the host process's uid: docker run "
                + "--user \"$(id -u):$(id -g)\")" + (namespace.isNested() ? "; a container with a user namespace of its own (rootless, "
                + "userns-remap) runs as the host uid its uid_map takes its user to" : "");
    }

    /**
     * Whether {@code file}, a bootstrap file, belongs to another user than this process: its
     * server runs as that user, and refuses this process's workers whether it runs or not (workers
     * connect only within one user). False when either owner cannot be told.
     */
    static boolean ofAnotherUser(Path file) {
        Object owner = uidOf(file);
        Object self = selfUid();
        return owner != null && self != null && !owner.equals(self);
    }

    /** This process's effective uid, which owns /proc/self, or null when it cannot be read. */
    private static Object selfUid() {
        return uidOf(Path.of("/proc/self"));
    }

    /** The uid that owns {@code path}, or null when it cannot be read. */
    private static Object uidOf(Path path) {
        try {
            return Files.getAttribute(path, "unix:uid");
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    /** A uid as the file system gives it (an {@code int}), printed unsigned as {@code id} prints it: 3000000000, not -1294967296. */
    private static String uid(Object attribute) {
        return Integer.toUnsignedString((Integer) attribute);
    }

    // ------------------------------------------------------------------ TCP

    /**
     * A bound listening socket of a server. It hands the bootstrap to every client that asks, for the
     * server's whole life, each exchange on a thread of its own: a client that takes the bootstrap
     * and never says HELLO, a port scanner or a client of another version holds nothing up, and a
     * second client during a session gets the bootstrap and is then refused by the session (its
     * HELLO is answered "busy") as through the file.
     */
    static final class Listener implements AutoCloseable {
        private final ServerSocketChannel channel;
        private final PrintWriter err;
        private final long exchangeMillis;

        /**
         * @param exchangeTimeout how long one client's exchange may take once connected (the server's {@code --timeout})
         * @param err             where ignored and failed exchanges are reported
         */
        Listener(PerfParsing.HostPort at, Duration exchangeTimeout, PrintWriter err) {
            InetSocketAddress address = resolve(at, "--listen");
            this.err = err;
            this.exchangeMillis = Math.max(1, exchangeTimeout.toMillis());
            try {
                channel = ServerSocketChannel.open();
            } catch (IOException e) {
                throw new ConduitException("cannot open a TCP socket to listen on " + at + ": " + e.getMessage(), e);
            }
            try {
                channel.bind(address);
            } catch (IOException e) {
                close();
                throw new ConduitException("cannot listen on " + at + ": " + e.getMessage() + " (choose another --listen HOST:PORT)", e);
            }
        }

        /** Where it listens (the real port when 0 was asked for). */
        PerfParsing.HostPort address() {
            try {
                InetSocketAddress a = (InetSocketAddress) channel.getLocalAddress();
                return new PerfParsing.HostPort(a.getAddress().getHostAddress(), a.getPort());
            } catch (IOException e) {
                throw new ConduitException("cannot read the listening address: " + e, e);
            }
        }

        /**
         * Starts answering every client with {@code bootstrap} on a daemon thread, until {@link #close}.
         *
         * @param onFailure told once if accepting fails for another reason than the close (then nothing is served any more)
         */
        void serveInBackground(PerfBootstrap bootstrap, Consumer<ConduitException> onFailure) {
            byte[] frame = bootstrap.encode();
            Thread.ofPlatform().daemon().name("conduit-perf-bootstrap-listener").start(() -> {
                while (true) {
                    SocketChannel client;
                    try {
                        client = channel.accept();
                    } catch (ClosedChannelException e) {
                        return;
                    } catch (IOException e) {
                        onFailure.accept(new ConduitException("accepting perf clients on " + address() + " failed: " + e, e));
                        return;
                    }
                    Thread.ofVirtual().name("conduit-perf-bootstrap-exchange").start(() -> exchange(client, frame));
                }
            });
        }

        private void exchange(SocketChannel client, byte[] frame) {
            Thread watchdog = closeAfter(client, exchangeMillis);
            try (client) {
                byte[] request;
                try {
                    request = readFrame(client);
                } catch (ForeignFrame e) {
                    // An HTTP request or a port scanner's bytes: read as a frame's length, far above any bootstrap's. It was said
                    // to be a client that went away, with the JDK's exception. Said here, before the close: a catch of the
                    // try-with-resources runs after it, and the client (a test) could see the close before the words.
                    ignored();
                    return;
                }
                if (!new String(request, StandardCharsets.UTF_8).startsWith(MAGIC)) {
                    ignored();
                    return;
                }
                writeFrame(client, frame);
            } catch (TimedOut e) {
                err.println("conduit perf server: a TCP client sent no whole request within " + exchangeMillis + " ms (--timeout): "
                        + e.getMessage());
                err.flush();
            } catch (IOException e) {
                err.println("conduit perf server: a TCP client went away during the bootstrap (or took longer than " + exchangeMillis
                        + " ms, --timeout): " + e);
                err.flush();
            } finally {
                watchdog.interrupt();
            }
        }

        private void ignored() {
            err.println("conduit perf server: ignored a TCP client that is not a conduit perf client of this version");
            err.flush();
        }

        @Override
        public void close() {
            try {
                channel.close();
            } catch (IOException e) {
                // nothing to do
            }
        }
    }

    /**
     * Fetches a server's bootstrap over TCP, retrying the connection until {@code timeout} (the
     * server may still be starting); the connect and the exchange are bounded by the same deadline.
     */
    static PerfBootstrap fetch(PerfParsing.HostPort server, Duration timeout) {
        InetSocketAddress address = resolve(server, "--connect");
        // A server of another version closes the connection without a word: it cannot tell the client why.
        String foreign = "check that " + server + " is a 'conduit perf --server --listen' of this Conduit version (one of another "
                + "version closes the connection, another program answers something else)";
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            try (SocketChannel channel = SocketChannel.open()) {
                channel.socket().connect(address, (int) Math.min(Integer.MAX_VALUE, millisUntil(deadline)));
                Thread watchdog = closeAfter(channel, millisUntil(deadline));
                try {
                    writeFrame(channel, REQUEST);
                    PerfBootstrap b = decode(readFrame(channel), "the bootstrap from " + server, foreign);
                    if (b == null) throw new ConduitException("the bootstrap from " + server + " is incomplete: " + foreign);
                    return b;
                } finally {
                    watchdog.interrupt();
                }
            } catch (ConnectException e) {
                if (System.nanoTime() - deadline > 0) throw noServer(server, timeout, e);
                sleep(50);
            } catch (SocketTimeoutException e) {
                throw noServer(server, timeout, e);
            } catch (TimedOut e) {
                // The connection was accepted and the bootstrap never came whole: said as the JDK's
                // "java.nio.channels.AsynchronousCloseException (--timeout 300ms passed)" (PerfClientTcpBootstrapFuzzTest).
                throw new ConduitException("the TCP bootstrap with " + server + " failed: the connection was accepted, but " + e.getMessage()
                        + " when --timeout " + ConfigKey.durationText(timeout) + " ran out: " + foreign + "; a server that accepts and "
                        + "then says nothing is another program, or a stuck one", e);
            } catch (IOException e) {
                // The JDK's class name said nothing to a user, and a connection closed at once or a frame too large for a
                // bootstrap is what a server of another version or another program gives: it said so with no remedy.
                throw new ConduitException("the TCP bootstrap with " + server + " failed: " + (e.getMessage() != null ? e.getMessage() : e)
                        + (System.nanoTime() - deadline > 0 ? " (--timeout " + ConfigKey.durationText(timeout) + " passed)" : ": " + foreign), e);
            }
        }
    }

    private static ConduitException noServer(PerfParsing.HostPort server, Duration timeout, IOException e) {
        return new ConduitException("no perf server answers at " + server + " (" + e.getMessage() + ") within "
                + ConfigKey.durationText(timeout) + ": start one with 'conduit perf --server --listen " + server + "'", e);
    }

    /** At least 1: a bound of 0 would mean none. */
    private static long millisUntil(long deadline) {
        return Math.max(1, (deadline - System.nanoTime()) / 1_000_000);
    }

    /** {@code at} resolved, or a failure that names the host and the option it came from. */
    private static InetSocketAddress resolve(PerfParsing.HostPort at, String option) {
        InetSocketAddress address = new InetSocketAddress(at.host(), at.port());
        if (address.isUnresolved()) {
            throw new ConduitException("cannot resolve the host '" + at.host() + "' of " + option + " " + at
                    + ": give an IP address or a name this machine resolves");
        }
        return address;
    }

    /** Closes {@code channel} after {@code millis} unless the returned thread is interrupted first: a bound on a stuck exchange. */
    private static Thread closeAfter(SocketChannel channel, long millis) {
        return Thread.ofVirtual().name("conduit-perf-bootstrap-timeout").start(() -> {
            try {
                Thread.sleep(millis);
                channel.close();
            } catch (InterruptedException | IOException e) {
                // done in time, or closed anyway
            }
        });
    }

    private static void writeFrame(SocketChannel channel, byte[] bytes) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(4 + bytes.length).putInt(bytes.length).put(bytes).flip();
        while (b.hasRemaining()) channel.write(b);
    }

    /** One frame: its length, then as many bytes (the tests' TCP peers read the client's request so too). */
    static byte[] readFrame(SocketChannel channel) throws IOException {
        ByteBuffer length = readFully(channel, 4, "bytes of the frame's length");
        int n = length.getInt(0);
        // Unsigned: a length of 0xFFFFFFFF was "a frame of -1 bytes, more than a bootstrap's 65536".
        if (n < 0 || n > MAX_FRAME) {
            throw new ForeignFrame("it sent a frame of " + Integer.toUnsignedString(n) + " bytes, more than a bootstrap's " + MAX_FRAME);
        }
        return readFully(channel, n, "bytes of the frame").array();
    }

    /** A frame no conduit perf peer sends: the other side is not one. */
    private static final class ForeignFrame extends IOException {
        ForeignFrame(String message) {
            super(message);
        }
    }

    /** {@code n} bytes, {@code what} they are (for the time running out first). */
    private static ByteBuffer readFully(SocketChannel channel, int n, String what) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(n);
        while (b.hasRemaining()) {
            try {
                if (channel.read(b) < 0) throw new IOException("the connection was closed after " + b.position() + " of " + n + " bytes");
            } catch (ClosedChannelException e) {
                throw new TimedOut(b.position() + " of the " + n + " " + what + " had arrived", e);
            }
        }
        return b;
    }

    /** The watchdog ({@link #closeAfter}), the only closer of a channel being read, closed it: the exchange's time ran out. */
    private static final class TimedOut extends IOException {
        TimedOut(String message, ClosedChannelException cause) {
            super(message, cause);
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new ConduitException("interrupted while waiting for the perf server", e);
        }
    }
}
