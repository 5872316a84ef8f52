package dev.conduit.shm;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The kernel's account of the machine's memory, {@code /proc/meminfo}, read once: what shared
 * memory may still take.
 *
 * @param available {@code MemAvailable} in bytes; -1 when it does not say
 * @param swapFree  {@code SwapFree} in bytes; -1 when it does not say
 */
public record Meminfo(long available, long swapFree) {

    public static final Path PATH = Path.of("/proc/meminfo");

    /** The fields of {@code meminfo} ({@code "MemAvailable:   123 kB"}); each -1 when it does not say, both when it cannot be read. */
    public static Meminfo read(Path meminfo) {
        long available = -1;
        long swapFree = -1;
        try {
            for (String line : Files.readAllLines(meminfo)) {
                String[] fields = line.trim().split("\\s+");
                if (fields.length != 3 || !fields[2].equals("kB")) continue;
                if (fields[0].equals("MemAvailable:")) available = Long.parseLong(fields[1]) * 1024;
                else if (fields[0].equals("SwapFree:")) swapFree = Long.parseLong(fields[1]) * 1024;
            }
        } catch (IOException | NumberFormatException e) {
            return new Meminfo(-1, -1);
        }
        return new Meminfo(available, swapFree);
    }
}
