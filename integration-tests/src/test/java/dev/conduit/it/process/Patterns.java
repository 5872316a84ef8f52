package dev.conduit.it.process;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * A byte pattern that differs by seed and by position (so a region mapped at the wrong offset, or
 * another region's bytes, never passes for it), written and checked on both sides of a process
 * boundary.
 */
public final class Patterns {

    private Patterns() {
    }

    public static byte byteAt(long seed, long index) {
        long x = (index + 1) * 0x9E3779B97F4A7C15L ^ seed * 0xC2B2AE3D27D4EB4FL;
        return (byte) (x ^ x >>> 29 ^ x >>> 47);
    }

    public static void fill(MemorySegment segment, long seed) {
        for (long i = 0; i < segment.byteSize(); i++) segment.set(ValueLayout.JAVA_BYTE, i, byteAt(seed, i));
    }

    /** The first offset whose byte is not the pattern's, or -1. */
    public static long firstMismatch(MemorySegment segment, long seed) {
        for (long i = 0; i < segment.byteSize(); i++) {
            if (segment.get(ValueLayout.JAVA_BYTE, i) != byteAt(seed, i)) return i;
        }
        return -1;
    }
}
