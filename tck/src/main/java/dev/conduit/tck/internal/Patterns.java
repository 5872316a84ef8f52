package dev.conduit.tck.internal;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/** Deterministic byte patterns, so that what arrives or is mapped elsewhere can be checked byte for byte. */
public final class Patterns {

    private Patterns() {
    }

    public static byte at(long seed, long index) {
        return (byte) (seed * 31 + index * 7 + (index >>> 8));
    }

    public static void fill(MemorySegment segment, long seed) {
        for (long i = 0; i < segment.byteSize(); i++) segment.set(ValueLayout.JAVA_BYTE, i, at(seed, i));
    }

    /** The index of the first byte that differs from the pattern, or -1. */
    public static long mismatch(MemorySegment segment, long seed) {
        for (long i = 0; i < segment.byteSize(); i++) {
            if (segment.get(ValueLayout.JAVA_BYTE, i) != at(seed, i)) return i;
        }
        return -1;
    }

    public static MemorySegment segment(long length, long seed) {
        MemorySegment s = Arena.ofAuto().allocate(Math.max(1, length)).asSlice(0, length);
        fill(s, seed);
        return s;
    }

    public static byte[] bytes(long length, long seed) {
        return segment(length, seed).toArray(ValueLayout.JAVA_BYTE);
    }

    public static String hex(byte[] bytes) {
        return java.util.HexFormat.of().formatHex(bytes);
    }

    public static byte[] unhex(String hex) {
        return java.util.HexFormat.of().parseHex(hex);
    }
}
