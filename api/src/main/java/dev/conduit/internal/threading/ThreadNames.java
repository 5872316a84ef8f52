package dev.conduit.internal.threading;

/**
 * How an error names a thread. By its name, quoted; but a virtual thread has none unless the
 * application gives it one ({@code Executors.newVirtualThreadPerTaskExecutor()} does not), and a
 * message that said "belongs to thread '', ...; called from thread ''" told nothing: such a thread is
 * named by its id, which {@code Thread.toString()} and a thread dump show too.
 */
public final class ThreadNames {

    private ThreadNames() {
    }

    /** {@code 'name'}, or for an unnamed thread {@code #id (an unnamed virtual thread)} or {@code #id (unnamed)}. */
    public static String of(Thread t) {
        String name = t.getName();
        if (!name.isEmpty()) return "'" + name + "'";
        return "#" + t.threadId() + (t.isVirtual() ? " (an unnamed virtual thread)" : " (unnamed)");
    }
}
