package dev.conduit;

/**
 * Receives the active messages of one id on a worker ({@link Worker#onMessage(int, MessageHandler)}).
 *
 * <p>Called on the thread that calls {@link Worker#progress()} (or {@link Worker#await}, for a
 * transport it does not sleep in: it delivers none of the messages of the one it sleeps in), inside
 * the worker's thread-mode guard, once per message, in the order the sender sent them on its
 * endpoint. (Under {@link ThreadPolicy#CONFINED_THREAD}, a confined plugin's messages are handled
 * on its runtime-owned thread, which acts for the {@code progress()} caller while that waits.) The handler may send on any endpoint of the worker, and connect
 * new ones (guards are re-entrant), and answer the sender through {@link Message#replyEndpoint()}
 * (see {@link Worker}), but may not call {@link Worker#progress()}, {@link Worker#await} or
 * {@link Worker#close()} (those throw {@link IllegalStateException}).
 *
 * <p>The {@link Message} is valid only during the call; copy what must outlive it. An exception
 * thrown by the handler does not disturb the transport: the message counts as delivered (it is
 * not delivered again) and the exception is rethrown by the {@code progress()} call that
 * delivered it, once the transport's own progress step returned.
 */
@FunctionalInterface
public interface MessageHandler {

    /** Handles one message; {@code message} is invalid once this returns. */
    void onMessage(Message message);
}
