package dev.conduit.plugin.devdax;

import dev.conduit.linux.FileStatus;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Who holds the {@code flock} on a device, for the message that refuses a second provider.
 * Diagnostics only: the lock itself is what excludes, this only names the holder.
 *
 * <p>{@code /proc/locks} lists every lock of the machine, one per line; a {@code flock} reads
 * {@code 3: FLOCK  ADVISORY  WRITE 4711 00:1a:1234 0 EOF}: the holder's pid, translated into the
 * PID namespace of that {@code /proc}, then the locked file as the major and minor number (hex)
 * of the file system's device and the inode. A lock whose holder is not visible in that
 * namespace (in another container) is not listed at all (fs/locks.c, {@code locks_show}), so a
 * lock not listed may still be held. Lines of processes waiting for a lock carry {@code ->} after
 * the number and are skipped.
 */
final class LockHolders {

    static final Path PROC_LOCKS = Path.of("/proc/locks");

    private LockHolders() {
    }

    /**
     * How the refusal names the holder of the lock on the file {@code status} describes:
     * {@code held by pid N}, {@code held by pid N (this process)}, or that it cannot be seen.
     */
    static String describeHolder(Path procLocks, FileStatus status, long selfPid) {
        String locks;
        try {
            locks = Files.readString(procLocks, StandardCharsets.US_ASCII);
        } catch (IOException | SecurityException e) {
            return "held by another process (" + procLocks + " is not readable here: " + e.getMessage() + ")";
        }
        long pid = holderPid(locks, status.dev(), status.inode());
        if (pid <= 0) {
            return "held by another process (not visible here, e.g. another PID namespace)";
        }
        return "held by pid " + pid + (pid == selfPid ? " (this process)" : "");
    }

    /**
     * The pid that holds a {@code flock} on inode {@code inode} of the file system with device
     * number {@code dev}, as listed in {@code locks} (the text of {@code /proc/locks}); 0 if the
     * lock's line carries no pid that parses, -1 if it does not list one: no lock, or one whose
     * holder is in a PID namespace that listing cannot see.
     */
    static long holderPid(String locks, long dev, long inode) {
        String file = Integer.toHexString(FileStatus.major(dev)) + ":" + Integer.toHexString(FileStatus.minor(dev)) + ":"
                + Long.toUnsignedString(inode);
        for (String line : locks.split("\n")) {
            String[] fields = line.trim().split("\\s+");
            // number, FLOCK, ADVISORY, WRITE, pid, major:minor:inode, start, end; waiters have "->" after the number
            if (fields.length < 6 || !fields[1].equals("FLOCK")) continue;
            if (!matches(fields[5], file)) continue;
            try {
                return Long.parseLong(fields[4]);
            } catch (NumberFormatException e) {
                return 0;
            }
        }
        return -1;
    }

    /** Whether {@code field}, e.g. {@code 00:1a:1234}, names {@code file} (printed with at least two hex digits each). */
    private static boolean matches(String field, String file) {
        String[] parts = field.split(":");
        if (parts.length != 3) return false;
        try {
            return (Integer.toHexString(Integer.parseInt(parts[0], 16)) + ":" + Integer.toHexString(Integer.parseInt(parts[1], 16))
                    + ":" + Long.toUnsignedString(Long.parseUnsignedLong(parts[2]))).equals(file);
        } catch (NumberFormatException e) {
            return false;
        }
    }
}
