package dev.conduit.linux.internal;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.StructLayout;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.VarHandle;
import java.util.ArrayList;
import java.util.List;

import static java.lang.foreign.MemoryLayout.PathElement.groupElement;

/**
 * The one place where C functions are bound: every downcall handle of this module is made here,
 * and every one of a function that can fail captures {@code errno}.
 *
 * <p>{@code errno} has to be captured by the linker ({@link Linker.Option#captureCallState}):
 * read afterwards through another downcall, it may already have been overwritten by the JVM
 * itself (GC, JIT, safepoint code running on the same thread). A capturing handle takes the
 * capture segment as an extra first argument. Each thread reuses one {@link CallState}, so a
 * call on the hot paths (futex, eventfd, read and write) allocates nothing of its own.
 */
public final class Native {
    private static final Linker LINKER = Linker.nativeLinker();
    private static final SymbolLookup LIBC = LINKER.defaultLookup();
    private static final Linker.Option CAPTURE_ERRNO = Linker.Option.captureCallState("errno");
    private static final StructLayout CAPTURE_LAYOUT = Linker.Option.captureStateLayout();
    private static final VarHandle ERRNO = CAPTURE_LAYOUT.varHandle(groupElement("errno"));

    /** Room for the largest struct a call keeps in its thread's scratch space ({@code struct statx}, 256 bytes). */
    static final long SCRATCH_SIZE = 256;

    private static final ThreadLocal<CallState> CALL_STATE = ThreadLocal.withInitial(CallState::new);

    private Native() {}

    /** Binds the C function {@code name}, with {@code errno} captured. */
    @SuppressWarnings("restricted") // this module is the one granted native access
    static MethodHandle function(String name, FunctionDescriptor descriptor) {
        return LINKER.downcallHandle(symbol(name), descriptor, CAPTURE_ERRNO);
    }

    /**
     * Binds the C function {@code name}, which cannot fail, without capturing {@code errno}: a
     * capturing call allocates about 40 bytes (JDK 25), one that captures nothing allocates none.
     */
    @SuppressWarnings("restricted") // this module is the one granted native access
    static MethodHandle infallible(String name, FunctionDescriptor descriptor) {
        return LINKER.downcallHandle(symbol(name), descriptor);
    }

    /**
     * Binds the variadic C function {@code name} ({@code open}, {@code fcntl}, {@code syscall}),
     * with {@code errno} captured. The variadic arguments must be passed as C would after default
     * promotion, and as the callee reads them: glibc's {@code fcntl} and {@code syscall} read
     * {@code long}s, so pass {@code long}s, or the upper halves of the registers are garbage.
     */
    @SuppressWarnings("restricted") // this module is the one granted native access
    static MethodHandle variadic(String name, int firstVariadicArgument, FunctionDescriptor descriptor) {
        return LINKER.downcallHandle(symbol(name), descriptor, CAPTURE_ERRNO,
                Linker.Option.firstVariadicArg(firstVariadicArgument));
    }

    /** The names among {@code names} that the C library does not export. */
    static List<String> missingSymbols(String... names) {
        List<String> missing = new ArrayList<>();
        for (String name : names) {
            if (LIBC.find(name).isEmpty()) {
                missing.add(name);
            }
        }
        return missing;
    }

    private static MemorySegment symbol(String name) {
        return LIBC.find(name).orElseThrow(() -> new UnsatisfiedLinkError("C library function not found: " + name));
    }

    /** The calling thread's capture and scratch space. */
    static CallState callState() {
        return CALL_STATE.get();
    }

    /**
     * Rethrows what {@code invokeExact} threw. With exact types it throws nothing checked;
     * unchecked exceptions (a heap segment passed where native memory is needed, a closed
     * arena) mean a caller's bug and propagate unchanged.
     */
    static RuntimeException propagate(Throwable thrown) {
        if (thrown instanceof RuntimeException e) {
            throw e;
        }
        if (thrown instanceof Error e) {
            throw e;
        }
        throw new AssertionError("a downcall threw a checked exception", thrown);
    }

    /**
     * Per-thread memory handed to downcalls: the {@code errno} capture segment, and a small
     * scratch area for the structs and out-parameters of one call at a time (timespec,
     * eventfd counter, pollfd, ucred, stat, sockaddr_un). Nothing may keep a reference to the
     * scratch area past the call that filled it. Freed by the GC once the thread is gone.
     */
    static final class CallState {
        final MemorySegment capture;
        final MemorySegment scratch;

        private CallState() {
            Arena arena = Arena.ofAuto();
            capture = arena.allocate(CAPTURE_LAYOUT);
            scratch = arena.allocate(SCRATCH_SIZE, 8);
        }

        /** The {@code errno} the last downcall on this thread left. */
        int errno() {
            return (int) ERRNO.get(capture, 0L);
        }
    }
}
