package dev.conduit.shm;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

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
        Map<String, Long> fields = fields(meminfo);
        return new Meminfo(fields.getOrDefault("MemAvailable", -1L), fields.getOrDefault("SwapFree", -1L));
    }

    /**
     * Every field of {@code meminfo} by name, without its colon: in bytes where the kernel gives kB
     * ({@code "Hugepagesize:    2048 kB"}), as written where it gives a count ({@code "HugePages_Free:  3"}).
     * Empty when the file cannot be read or a value is not a number: what the kernel wrote is then
     * not what this reads.
     */
    static Map<String, Long> fields(Path meminfo) {
        Map<String, Long> fields = new HashMap<>();
        try {
            for (String line : Files.readAllLines(meminfo)) {
                String[] f = line.trim().split("\\s+");
                if (f.length < 2 || !f[0].endsWith(":")) continue;
                String name = f[0].substring(0, f[0].length() - 1);
                if (f.length == 2) fields.put(name, Long.parseLong(f[1]));
                else if (f.length == 3 && f[2].equals("kB")) fields.put(name, Long.parseLong(f[1]) * 1024);
            }
        } catch (IOException | NumberFormatException e) {
            return Map.of();
        }
        return fields;
    }
}
