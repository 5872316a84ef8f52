package dev.conduit.shm;

import dev.conduit.linux.Errno;
import dev.conduit.linux.ErrnoException;
import dev.conduit.linux.FileDescriptor;
import dev.conduit.linux.Libc;
import dev.conduit.linux.OpenFlags;
import dev.conduit.spi.ConfigKey;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Collectors;

/**
 * How this process's user ids look from its parent user namespace, for messages that tell a user
 * which uid to allow or trust. A rootless container's root is, to a producer in the parent
 * namespace, the user who runs the container ({@code SO_PEERCRED} reports a peer's uid in the
 * reader's namespace). A file whose owner the namespace does not map shows up as the overflow
 * uid (65534): from inside, that cannot be told apart from a user the namespace maps to 65534.
 * A process that itself runs as that uid (a container run as nobody) cannot tell its own files
 * and peers from theirs by the uid either: {@code mayBeUnmapped(own uid)} is true for it, and its
 * importers prove ownership otherwise or refuse.
 *
 * <p>Reads {@code /proc/self/uid_map} (whose second column is the parent namespace's uid, for a
 * process that reads its own) and {@code /proc/sys/kernel/overflowuid}. Without {@code /proc},
 * this process is taken to be in the initial namespace; with an empty map (a namespace made
 * without one), in a namespace that maps nobody.
 */
public final class UserNamespace {

    private static final Path UID_MAP = Path.of("/proc/self/uid_map");
    private static final Path OVERFLOW_UID = Path.of("/proc/sys/kernel/overflowuid");
    private static final long DEFAULT_OVERFLOW_UID = 65534;
    private static final List<String> IDENTITY = List.of("0", "0", "4294967295");

    /** Lines of the uid map, or {@code null} when it could not be read. */
    private final List<String> uidMap;
    private final long overflowUid;

    /** Whether the map is other than the identity of every uid: see {@link #isNested()}. */
    private final boolean nested;

    private UserNamespace(List<String> uidMap, long overflowUid) {
        this.uidMap = uidMap == null ? null : List.copyOf(uidMap);
        this.overflowUid = overflowUid;
        this.nested = uidMap != null && !(uidMap.size() == 1 && IDENTITY.equals(fields(uidMap.getFirst())));
    }

    /** The largest user id: {@code (uid_t) -1} means "no user" to the kernel, so nobody can be allowed or trusted as it. */
    private static final long MAX_UID = 0xFFFF_FFFEL;

    /**
     * A key listing numeric user ids (memfd's allowed, posix's trusted), empty by default. An item
     * that is not one is refused by the key, so the {@code Conduit}'s build fails naming key,
     * variable, item and source, not the first export or import of a plugin that may never open.
     */
    public static ConfigKey<List<String>> uidListKey(String name, String doc) {
        return ConfigKey.list(name, List.of(), doc).withCheck("a comma-separated list of numeric user ids from 0 to " + MAX_UID
                + ", e.g. 1000,1001 (names are not accepted: they differ between containers)", items -> items.forEach(UserNamespace::uid));
    }

    /** The user ids of a {@link #uidListKey} value, as {@code SO_PEERCRED} and {@code stat} report them: unsigned 32-bit. */
    public static int[] uids(List<String> items) {
        return items.stream().mapToInt(UserNamespace::uid).toArray();
    }

    /** Whether {@code uids} (of a {@link #uidListKey}) lists {@code uid}. */
    public static boolean lists(int[] uids, int uid) {
        for (int listed : uids) {
            if (listed == uid) return true;
        }
        return false;
    }

    /** {@code uids} for a message, as the key takes them: {@code 1000,1001}, or {@code none}. */
    public static String describeUids(int[] uids) {
        return uids.length == 0 ? "none"
                : Arrays.stream(uids).mapToObj(Integer::toUnsignedString).collect(Collectors.joining(","));
    }

    private static int uid(String item) {
        long uid = -1;
        // ASCII digits, as ConfigKey.integer takes a number: Long.parseLong alone takes "+1000" and any script's digits too.
        if (!item.isEmpty() && item.length() <= 10 && item.chars().allMatch(c -> c >= '0' && c <= '9')) uid = Long.parseLong(item);
        if (uid < 0 || uid > MAX_UID) throw new IllegalArgumentException("item '" + item + "' is not a numeric user id");
        return (int) uid;
    }

    /** {@link #current()} once read with a written map; {@code null} until then. */
    private static volatile UserNamespace current;

    /**
     * This process's namespace. Read from {@code /proc} once and kept (two files, some 35 µs,
     * which an import that checks its file's owner would pay each time): a process with threads
     * cannot change its user namespace ({@code unshare(2)} and {@code setns(2)} refuse
     * {@code CLONE_NEWUSER} to it), and a namespace's {@code uid_map} is written only once. A map
     * not written yet (empty) or not readable is read again at the next call. Only a change of
     * {@code kernel.overflowuid} by the host's root goes unseen until the process restarts.
     */
    public static UserNamespace current() {
        UserNamespace known = current;
        if (known != null) return known;
        List<String> overflow = readLines(OVERFLOW_UID);
        List<String> uidMap = readLines(UID_MAP);
        UserNamespace read = new UserNamespace(uidMap, overflow == null || overflow.isEmpty() ? DEFAULT_OVERFLOW_UID
                : parseOrDefault(overflow.getFirst().trim()));
        if (uidMap != null && !uidMap.isEmpty()) current = read;
        return read;
    }

    /** A namespace with the given {@code uid_map} lines ({@code inside outside count}; {@code null}: unreadable): for tests. */
    public static UserNamespace of(List<String> uidMap, long overflowUid) {
        return new UserNamespace(uidMap, overflowUid);
    }

    /** Whether this is a user namespace other than the initial one: its map is not the identity of every uid. */
    public boolean isNested() {
        return nested;
    }

    /** The uid that {@code uid} is in the parent namespace, or {@code -1} where this namespace does not map it. */
    public long inParent(long uid) {
        if (!isNested()) {
            return uid;
        }
        for (String line : uidMap) {
            List<String> f = fields(line);
            if (f.size() != 3) {
                continue;
            }
            try {
                long inside = Long.parseLong(f.get(0));
                long outside = Long.parseLong(f.get(1));
                long count = Long.parseLong(f.get(2));
                if (uid >= inside && uid - inside < count) {
                    return outside + (uid - inside);
                }
            } catch (NumberFormatException e) {
                // not a mapping line
            }
        }
        return -1;
    }

    /**
     * {@code uid 1000}; in a nested namespace {@code uid 0 here, 1000 in the parent user namespace},
     * or {@code uid 65534 here, which the namespace maps to no uid of its parent}.
     */
    public String describe(long uid) {
        if (!isNested()) {
            return "uid " + uid;
        }
        long parent = inParent(uid);
        return parent < 0 ? "uid " + uid + " here, which this user namespace maps to no uid of its parent"
                : "uid " + uid + " here, " + parent + " in the parent user namespace";
    }

    /**
     * Whether a file owned by {@code owner}, as this process sees it, may belong to a user this
     * namespace does not map: it shows as the overflow uid, which then stands for every such user
     * (and for the namespace's own user of that id, if it maps one).
     */
    public boolean mayBeUnmapped(long owner) {
        return isNested() && owner == overflowUid;
    }

    /**
     * Whether this process owns the open file {@code file}: it may set {@code O_NOATIME} on the
     * descriptor, which only the file's owner may (or a holder of {@code CAP_FOWNER} in a namespace
     * that maps the owner, which an unmapped user is not). The proof where the owner's uid says
     * nothing: this process runs as the overflow uid ({@link #mayBeUnmapped} of its own uid), which
     * every user the namespace does not map shows as too. The VFS decides it, whatever the file
     * system; it changes nothing of the file and works through a read-only mount.
     *
     * @throws ErrnoException when {@code fcntl} fails otherwise than with {@code EPERM}: nothing proven
     */
    public static boolean ownsFile(Libc libc, FileDescriptor file) {
        try {
            libc.setFileStatusFlags(file, libc.fileStatusFlags(file) | OpenFlags.O_NOATIME);
            return true;
        } catch (ErrnoException e) {
            if (e.errno() == Errno.EPERM) return false;
            throw e;
        }
    }

    /**
     * Whether this process's user owns the file that {@code named}, an {@code O_PATH} descriptor,
     * names: a socket, which opens for no I/O, so that {@link #ownsFile} cannot set a flag on it.
     * It may set the file's owner to its own uid ({@code fchownat} with {@code AT_EMPTY_PATH}),
     * which without privilege only the owner may. Unlike {@link #ownsFile} it touches the file (its
     * ctime) and fails on a read-only mount ({@code EROFS}).
     *
     * @throws ErrnoException when {@code fchownat} fails otherwise than with {@code EPERM}: nothing proven
     */
    public static boolean ownsNamedFile(Libc libc, FileDescriptor named) {
        try {
            libc.fchownat(named, "", libc.geteuid(), -1, OpenFlags.AT_EMPTY_PATH);
            return true;
        } catch (ErrnoException e) {
            if (e.errno() == Errno.EPERM) return false;
            throw e;
        }
    }

    private static List<String> fields(String line) {
        String trimmed = line.trim();
        return trimmed.isEmpty() ? List.of() : List.of(trimmed.split("\\s+"));
    }

    private static long parseOrDefault(String text) {
        try {
            return Long.parseLong(text);
        } catch (NumberFormatException e) {
            return DEFAULT_OVERFLOW_UID;
        }
    }

    /** The file's lines, or {@code null} when it cannot be read (no {@code /proc}). */
    private static List<String> readLines(Path file) {
        try {
            return Files.readAllLines(file);
        } catch (IOException | UncheckedIOException | SecurityException e) {
            return null;
        }
    }
}
