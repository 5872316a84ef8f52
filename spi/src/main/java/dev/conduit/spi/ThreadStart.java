package dev.conduit.spi;

/**
 * Starts the threads a plugin (or the runtime) needs, and says what to do when none can be had.
 *
 * <p>{@link Thread#start} throws an {@link OutOfMemoryError} ("unable to create native thread")
 * when the process, or its cgroup, is at its limit of threads ({@code ulimit -u}, a container's
 * {@code pids.max}, systemd's {@code TasksMax}) or the kernel has no memory for the thread's
 * stack. Unlike the JVM's other {@link VirtualMachineError}s ({@link Cleanup#isTheJvmsOwn}) it
 * is a shortage the user can end, and nothing of the JVM is broken by it: so it is reported as a
 * {@link ConduitException} that names the thread's purpose, the limit and the remedy, with the
 * JVM's error as its cause. A caller that made something for the thread (a socket, a file, a
 * lease) releases it when the start fails, as on any other failure. (Since SPI 1.1.)
 */
public final class ThreadStart {

    private ThreadStart() {
    }

    /**
     * Starts {@code unstarted}.
     *
     * @param purpose what the thread is for and whose it is, a clause a message starts with
     *                ({@code "memfd: cannot start the fd server that serves this process's exports"})
     * @return {@code unstarted}, started
     * @throws ConduitException when no thread can be started: {@link #failed}
     */
    public static Thread start(Thread unstarted, String purpose) {
        try {
            unstarted.start();
            return unstarted;
        } catch (OutOfMemoryError noThread) {
            throw failed(purpose + " (thread " + unstarted.getName() + ")", noThread);
        }
    }

    /**
     * The failure of a thread that could not be started ({@code noThread}, what {@link Thread#start}
     * threw, also from an executor that starts one): {@code purpose}, then the JVM's message, the
     * limit and the remedy.
     */
    public static ConduitException failed(String purpose, OutOfMemoryError noThread) {
        return new ConduitException(purpose + ": no thread could be started (" + noThread.getMessage() + "): this process, "
                + "or its cgroup, is at its limit of threads or short of memory for a thread's stack. Raise the limit (ulimit -u, "
                + "RLIMIT_NPROC; a container's pids limit: docker run --pids-limit, the cgroup's pids.max; systemd TasksMax) or "
                + "end threads the process no longer needs", noThread);
    }
}
