package dev.conduit.shm;

import dev.conduit.spi.MappedMemoryFault;

/**
 * What the JDK does when mapped memory disappears under an access, and how Conduit reports it.
 *
 * <p>A posix chunk is a file in the shared directory; any process that may write it may also
 * truncate it while others have it mapped, and their next access to a lost page raises
 * {@code SIGBUS}. So does the first touch of a page of a sparse chunk on a tmpfs that is full.
 * Measured on JDK 25 (docs/decisions.md, "SIGBUS on a truncated posix mapping"): for a
 * {@code MemorySegment} access — plain, volatile, {@code getAndAdd}, bulk copy, fill, mismatch —
 * in interpreted, C1- and C2-compiled code, HotSpot turns the signal into
 * {@code java.lang.InternalError: a fault occurred in an unsafe memory access operation} and the
 * JVM survives. One exception: a {@code compareAndSet}/{@code compareAndExchange} that runs in
 * the interpreter is not guarded and crashes the JVM, so Conduit reads a word before it CASes it
 * on peer memory (the read faults first; a truncation between the two is the remaining window),
 * and a sender reads the first record it takes in each page of a peer's ring before the CAS that
 * takes it (a truncation after that read is the window there: docs/decisions.md).
 *
 * <p>Conduit catches that error where it touches peer memory itself — sending into a peer's
 * queue, receiving from its own queue, RMA on a peer's region — and fails only the affected
 * endpoint or operation with a {@link dev.conduit.spi.ConduitException} saying what was truncated.
 * Application code that reads an imported posix region's segment sees the JDK's
 * {@code InternalError} itself. memfd chunks are sealed against shrinking, so neither can happen
 * there.
 *
 * <p>One more source of the same fault, on any plugin: an access that outlives the close of its
 * mapping on another thread, which the JDK's close handshake should have stopped (JDK-8364167).
 * It finds the closed range's placeholder ({@code dev.conduit.linux.Libc#mmap}), so the message
 * names that cause too.
 */
final class MappedMemoryFaults {

    private MappedMemoryFaults() {
    }

    /** Rethrows {@code error} unless it is a fault on mapped memory; then returns what to say about it. */
    static String describe(InternalError error, String plugin, String what) {
        if (!MappedMemoryFault.is(error)) throw error;
        return plugin + ": " + what + " was truncated by another process while mapped here, or lives on a full file system "
                + "that could not supply a page on first touch (SIGBUS, reported by the JVM as \"" + error.getMessage() + "\"). "
                + "Either a peer with write access to the shared directory shrank the file (use the memfd plugin, whose chunks are "
                + "sealed, when peers are not trusted), or the directory's file system is full (free space or enlarge it). "
                + "Or another thread closed it during this access, which the JDK should have prevented (JDK-8364167): "
                + "do not close a worker, region or Conduit while other threads use it";
    }
}
