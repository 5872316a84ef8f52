package dev.conduit.shm;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** The kernel's account of the machine's memory, {@code /proc/meminfo}: what shared memory may still take. */
public final class Meminfo {

    public static final Path PATH = Path.of("/proc/meminfo");

    private Meminfo() {
    }

    /** A field of {@code meminfo} ({@code "MemAvailable:   123 kB"}, named with its colon) in bytes; -1 when it does not say. */
    public static long bytes(Path meminfo, String field) {
        try {
            for (String line : Files.readAllLines(meminfo)) {
                String[] fields = line.trim().split("\\s+");
                if (fields.length == 3 && fields[0].equals(field) && fields[2].equals("kB")) return Long.parseLong(fields[1]) * 1024;
            }
        } catch (IOException | NumberFormatException e) {
            return -1;
        }
        return -1;
    }
}
