package dev.conduit.shm;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * How this process's user ids look from outside its user namespace, for messages that tell a
 * user which uid to allow or trust. A rootless container's root is, to a producer outside it,
 * the user who runs the container ({@code SO_PEERCRED} and file owners are reported in the
 * reader's namespace); and a file whose owner the namespace does not map shows up as the
 * overflow uid (65534), which stands for every unmapped user at once.
 *
 * <p>Reads {@code /proc/self/uid_map} and {@code /proc/sys/kernel/overflowuid} when asked; without
 * {@code /proc}, this process is taken to be in the initial namespace.
 */
public final class UserNamespace {

    private static final Path UID_MAP = Path.of("/proc/self/uid_map");
    private static final Path OVERFLOW_UID = Path.of("/proc/sys/kernel/overflowuid");
    private static final long DEFAULT_OVERFLOW_UID = 65534;

    private final List<String> uidMap;
    private final long overflowUid;

    private UserNamespace(List<String> uidMap, long overflowUid) {
        this.uidMap = List.copyOf(uidMap);
        this.overflowUid = overflowUid;
    }

    /** This process's namespace, as {@code /proc} shows it now. */
    public static UserNamespace current() {
        return new UserNamespace(readLines(UID_MAP), readLines(OVERFLOW_UID).stream().findFirst()
                .map(String::trim).map(UserNamespace::parseOrDefault).orElse(DEFAULT_OVERFLOW_UID));
    }

    /** A namespace with the given {@code uid_map} lines ({@code inside outside count}): for tests. */
    public static UserNamespace of(List<String> uidMap, long overflowUid) {
        return new UserNamespace(uidMap, overflowUid);
    }

    /** Whether this is a user namespace other than the initial one: its map is not the identity of every uid. */
    public boolean isNested() {
        return !(uidMap.isEmpty() || uidMap.size() == 1 && List.of("0", "0", "4294967295").equals(fields(uidMap.getFirst())));
    }

    /** The uid that {@code uid} maps to in the parent namespace, or {@code uid} itself where nothing maps it. */
    public long outside(long uid) {
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
        return uid;
    }

    /** {@code uid 1000}, or, in a nested namespace, {@code uid 1000, which is 0 inside this process's user namespace}. */
    public String describe(long uid) {
        long outside = outside(uid);
        return outside != uid ? "uid " + outside + ", which is " + uid + " inside this process's user namespace" : "uid " + uid;
    }

    /** Whether {@code owner}, as this process sees it, is the overflow uid of a nested namespace: some user it does not map. */
    public boolean isUnmapped(long owner) {
        return isNested() && owner == overflowUid;
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

    private static List<String> readLines(Path file) {
        try {
            return Files.readAllLines(file);
        } catch (IOException | UncheckedIOException e) {
            return List.of();
        }
    }
}
