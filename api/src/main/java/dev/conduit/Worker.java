package dev.conduit;

import dev.conduit.spi.ThreadMode;

/**
 * A progress engine and the owner of a receive queue in every selected transport, as UCX's
 * worker. Made by {@link Conduit#newWorker(ThreadMode)}.
 *
 * <p>Every call goes through the worker's thread-mode guard ({@link #threadPolicy()}): in
 * {@link ThreadMode#SINGLE} a call from any thread but the owner (the thread that created the
 * worker, on which its transports were opened) throws {@link WrongThreadException}; in {@link ThreadMode#SERIALIZED} overlapping calls
 * throw {@link dev.conduit.spi.ConcurrentUseException}; in {@link ThreadMode#MULTI} calls are
 * serialized by the runtime unless every transport declares {@code MULTI}.
 */
public interface Worker extends AutoCloseable {

    /** The mode the application asked for. */
    ThreadMode threadMode();

    /** How the runtime enforces {@link #threadMode()} on this worker's transports. */
    ThreadPolicy threadPolicy();

    /**
     * Makes progress on every transport: delivers received messages to their handlers on this
     * thread, completes operations, detects failed peers. Never blocks.
     *
     * @return the number of events handled
     */
    int progress();

    /** Closes the worker's endpoints and transports. Idempotent. */
    @Override
    void close();
}
