package dev.conduit.linux;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** This process's mappings, as {@code /proc/self/maps} lists them. */
public final class ProcessMaps {
    private ProcessMaps() {}

    /** The line of {@code /proc/self/maps} that covers {@code address}, or {@code null}. */
    public static String mappingAt(long address) throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/maps"))) {
            String[] range = line.substring(0, line.indexOf(' ')).split("-");
            long start = Long.parseUnsignedLong(range[0], 16);
            long end = Long.parseUnsignedLong(range[1], 16);
            if (Long.compareUnsigned(address, start) >= 0 && Long.compareUnsigned(address, end) < 0) {
                return line;
            }
        }
        return null;
    }
}
