package dev.conduit.tck;

import dev.conduit.spi.MessageSink;
import dev.conduit.spi.Transport;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.IntPredicate;
import java.util.function.Predicate;

/**
 * A message sink that copies out every message it is given, in arrival order. Once it knows the
 * transport it belongs to ({@link #deliveredOnlyInsideProgressOf}), it also checks that every
 * message arrives inside that transport's {@code progress()}, called by the TCK on the delivering
 * thread ({@link #calling}): a message delivered anywhere else (from {@code trySend}, from a thread
 * of the plugin's own) makes every later look at the inbox fail, saying where it arrived.
 */
final class Inbox implements MessageSink {

    /**
     * A message as the sink got it: {@code named} when the transport gave the key of the connection
     * it came by ({@link MessageSink#onMessage(int, MemorySegment, long, int, MemorySegment, long, long, long)}),
     * which is then {@code sender}.
     */
    record Received(int id, byte[] header, byte[] payload, boolean named, long sender) {
    }

    /**
     * A call of {@link MessageSink#onSenderClosed}: the key, how many messages had arrived before
     * it, and what the receiver's {@code senderAddress} of the key gave when asked inside the call
     * ({@link #addressAtTheEnd}).
     */
    record SenderClosed(long sender, int after, String addressThen) {
    }

    /** {@link SenderClosed#addressThen} when the receiver gave {@code null}, as it must by then. */
    static final String NO_ADDRESS = "null";
    /** {@link SenderClosed#addressThen} when the receiver gives no addresses ({@code NotSupportedException}) or is not known. */
    static final String NOT_ASKED = "not asked";

    /**
     * What a handler did inside {@code onMessage} of message {@code id} ({@link #whileDelivering}), and the message's
     * header and payload read again as it returned, where the transport delivered them: both null when they could no
     * longer be read, {@code why} then saying what reading them threw.
     */
    record ReadAgain(int id, String handlerDid, byte[] header, byte[] payload, String why) {
    }

    /** A handler run inside {@code onMessage} ({@link #whileDelivering}): what it did, in words for a failure. */
    @FunctionalInterface
    interface Handler {
        String handle(int id, int headerLength, long payloadLength);
    }

    /** A call into the plugin that may throw what its body throws. */
    @FunctionalInterface
    interface Call<T, E extends Exception> {
        T call() throws E;
    }

    /** What the TCK is calling on this thread now: a transport (its {@code progress()}), or the name of another call. */
    private static final ThreadLocal<Object> CALLING = new ThreadLocal<>();

    private final List<Received> messages = new CopyOnWriteArrayList<>();
    private final List<SenderClosed> sendersClosed = new CopyOnWriteArrayList<>();
    private volatile Transport receiver;
    private volatile Predicate<Thread> testThreads = t -> false;
    /** When set, {@link #onSenderClosed} asks {@code senderAddress} on this executor's thread instead of its own. */
    private volatile ExecutorService asker;
    /** While set, the receiver is asked to keep each message's non-empty payload ({@code keepDelivered}) until one is kept. */
    private volatile boolean keepOne;
    /** The payload kept, as delivered (a view, not a copy), and the action that releases it; null until one is kept. */
    private volatile MemorySegment kept;
    private volatile Runnable keptRelease;
    private volatile int keptId = -1;
    /** While set, runs inside onMessage of each message whose id it takes, after the message was copied out. */
    private volatile Handler handler;
    private volatile IntPredicate handles = id -> false;
    private final List<ReadAgain> readAgain = new CopyOnWriteArrayList<>();
    /** The first throwable of a {@link #handler}, kept rather than thrown into the transport's progress(). */
    private final AtomicReference<Throwable> handlerFailure = new AtomicReference<>();
    /** The first delivery made outside the receiver's progress(), said as the failure says it. */
    private final AtomicReference<String> misdelivery = new AtomicReference<>();
    /** Whether a look at the inbox already failed for it: the check after the test then does not say it again. */
    private volatile boolean misdeliveryReported;

    /** Runs {@code call} marked as {@code what} on this thread: a transport for its progress(), else the call's name. */
    static <T, E extends Exception> T calling(Object what, Call<T, E> call) throws E {
        Object before = CALLING.get();
        CALLING.set(what);
        try {
            return call.call();
        } finally {
            CALLING.set(before);
        }
    }

    /** What the calling thread is in, marked by {@link #calling}: a call of the TCK's into the plugin; null outside one. */
    static Object callingNow() {
        return CALLING.get();
    }

    /**
     * Calls {@code transport.progress()}, marked so that its deliveries are known to be made there,
     * and fails a negative answer: the runtime adds a worker's transports' counts to tell the
     * application whether there was work, so one below zero would hide another's events (the
     * runtime fails the round naming the plugin).
     */
    static int progress(Transport transport) {
        int events = calling(transport, transport::progress);
        if (events < 0) {
            throw new AssertionError("progress() answered " + events + ": it returns the number of events it handled, 0 when there "
                    + "was nothing to do and never less (Transport#progress); the runtime fails the round of a negative answer as "
                    + "the plugin's fault");
        }
        return events;
    }

    /**
     * From now on, a message is accepted only inside {@code progress()} of {@code transport}, the
     * transport this sink was given to; {@code testThreads} tells the test's own threads (a delivery on
     * one of them outside any marked call) from the plugin's.
     */
    void deliveredOnlyInsideProgressOf(Transport transport, Predicate<Thread> testThreads) {
        this.testThreads = testThreads;
        this.receiver = transport;
    }

    @Override
    public void onMessage(int id, MemorySegment headerBuffer, long headerOffset, int headerLength,
                          MemorySegment payloadBuffer, long payloadOffset, long payloadLength) {
        receive(id, headerBuffer, headerOffset, headerLength, payloadBuffer, payloadOffset, payloadLength, false, 0);
    }

    @Override
    public void onMessage(int id, MemorySegment headerBuffer, long headerOffset, int headerLength,
                          MemorySegment payloadBuffer, long payloadOffset, long payloadLength, long sender) {
        receive(id, headerBuffer, headerOffset, headerLength, payloadBuffer, payloadOffset, payloadLength, true, sender);
    }

    private void receive(int id, MemorySegment headerBuffer, long headerOffset, int headerLength,
                         MemorySegment payloadBuffer, long payloadOffset, long payloadLength, boolean named, long sender) {
        Transport expected = receiver;
        Object calling = CALLING.get();
        if (expected != null && calling != expected) misdelivery.compareAndSet(null, misdelivered("message " + id, calling));
        messages.add(new Received(id,
                headerBuffer.asSlice(headerOffset, headerLength).toArray(ValueLayout.JAVA_BYTE),
                payloadBuffer.asSlice(payloadOffset, payloadLength).toArray(ValueLayout.JAVA_BYTE), named, sender));
        Handler during = handler;
        if (during != null && handles.test(id)) {
            handle(during, id, headerBuffer, headerOffset, headerLength, payloadBuffer, payloadOffset, payloadLength);
        }
        // Not an empty one: a payload of no bytes kept shows nothing of the memory a transport may reuse under it.
        if (keepOne && expected != null && payloadLength > 0) {
            Runnable release = expected.keepDelivered();
            if (release != null) {
                keepOne = false;
                kept = payloadBuffer.asSlice(payloadOffset, payloadLength);
                keptRelease = release;
                keptId = id;
            }
        }
    }

    /**
     * Runs {@code during} inside the call that delivers it, then reads the message's bytes again where they were
     * delivered: they are valid until the call returns (MessageSink), whatever the handler did meanwhile. A throwable of
     * the handler is kept ({@link #handlerFailure}), not thrown into the transport.
     */
    private void handle(Handler during, int id, MemorySegment headerBuffer, long headerOffset, int headerLength,
                        MemorySegment payloadBuffer, long payloadOffset, long payloadLength) {
        String did;
        try {
            did = during.handle(id, headerLength, payloadLength);
        } catch (Throwable e) {
            handlerFailure.compareAndSet(null, e);
            did = "threw " + e;
        }
        try {
            readAgain.add(new ReadAgain(id, did, headerBuffer.asSlice(headerOffset, headerLength).toArray(ValueLayout.JAVA_BYTE),
                    payloadBuffer.asSlice(payloadOffset, payloadLength).toArray(ValueLayout.JAVA_BYTE), null));
        } catch (RuntimeException e) {
            // A segment of memory the transport unmapped under the handler: IllegalStateException, never a crash.
            readAgain.add(new ReadAgain(id, did, null, null, e.toString()));
        }
    }

    /** From now on, runs {@code handler} inside onMessage of each message whose id {@code handles} takes. */
    void whileDelivering(IntPredicate handles, Handler handler) {
        this.handles = handles;
        this.handler = handler;
    }

    /** The bytes of each message handled ({@link #whileDelivering}), read again as its handler returned, in order. */
    List<ReadAgain> readAgain() {
        return readAgain;
    }

    /** What the first handler that threw threw ({@link #whileDelivering}), or null. */
    Throwable handlerFailure() {
        return handlerFailure.get();
    }

    /** Asks the receiver to keep the payload of each message from now on, until it keeps one ({@code Transport.keepDelivered}). */
    void keepOnePayload() {
        keepOne = true;
    }

    /** The payload kept where it was delivered, or null while none is. */
    MemorySegment kept() {
        return kept;
    }

    /** The id of the message whose payload is {@link #kept()}. */
    int keptId() {
        return keptId;
    }

    /** The receiver's action that releases {@link #kept()}. */
    Runnable keptRelease() {
        return keptRelease;
    }

    /**
     * Kept with the number of messages before it. Like a message, it comes on the progress thread:
     * inside the receiver's {@code progress()} (or an {@code await()}, where a transport may find a
     * connection ended), never from a thread of the plugin's own, the sender's calls or the
     * receiver's {@code close()}.
     */
    @Override
    public void onSenderClosed(long sender) {
        Transport expected = receiver;
        Object calling = CALLING.get();
        if (expected != null && calling != expected && !"await()".equals(calling)) {
            misdelivery.compareAndSet(null, misdelivered("onSenderClosed(" + sender + ")", calling));
        }
        ExecutorService other = asker;
        sendersClosed.add(new SenderClosed(sender, messages.size(),
                other == null ? addressAtTheEnd(expected, sender) : addressAtTheEndFrom(other, expected, sender)));
    }

    /**
     * From now on, {@link #onSenderClosed} asks the receiver's {@code senderAddress} on
     * {@code asker}'s thread while the callback waits, as a handler on another thread of a
     * {@code MULTI} worker may ask it while the progress thread tells the end.
     */
    void asksFromAnotherThreadAtTheEnd(ExecutorService asker) {
        this.asker = asker;
    }

    /** How long the callback waits for the other thread's answer: a lookup takes microseconds; a lock held across the callback, for ever. */
    static final long ASKER_WAIT_SECONDS = 5;

    /** {@link #addressAtTheEnd} asked on {@code asker}'s thread, or what kept it from answering. */
    private static String addressAtTheEndFrom(ExecutorService asker, Transport receiver, long sender) {
        Future<String> answer = asker.submit(() -> addressAtTheEnd(receiver, sender));
        try {
            return answer.get(ASKER_WAIT_SECONDS, TimeUnit.SECONDS);
        } catch (TimeoutException e) {
            return "held up: asked on another thread, senderAddress(" + sender + ") did not return within " + ASKER_WAIT_SECONDS
                    + " s while onSenderClosed(" + sender + ") ran on the progress thread; the transport holds a lock across the "
                    + "callback that senderAddress takes, which deadlocks a MULTI worker whose handler answers a sender on another "
                    + "thread (MessageSink.onSenderClosed)";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "not answered: the progress thread was interrupted while it waited";
        } catch (ExecutionException e) {
            return "threw " + e.getCause();
        }
    }

    /**
     * What {@code senderAddress(sender)} gives while its end is being told: the runtime connects a
     * handler's answer (another thread's, under MULTI) through the address it gives, so it must be
     * gone before the end is told, and the call must not wait for a lock the transport holds across
     * the callback (the test's timeout ends a wait that never ends).
     */
    private static String addressAtTheEnd(Transport receiver, long sender) {
        if (receiver == null) return NOT_ASKED;
        try {
            byte[] address = receiver.senderAddress(sender);
            return address == null ? NO_ADDRESS : address.length + " bytes";
        } catch (dev.conduit.spi.NotSupportedException e) {
            return NOT_ASKED;
        } catch (RuntimeException e) {
            return "threw " + e;
        }
    }

    private String misdelivered(String what, Object calling) {
        Thread thread = Thread.currentThread();
        String where;
        if (calling instanceof Transport) {
            where = "inside the progress() of another transport (the sender's)";
        } else if (calling != null) {
            where = "from inside " + calling + ", outside progress()";
        } else if (testThreads.test(thread)) {
            where = "outside progress() (a thread of the test, in a call other than progress())";
        } else {
            where = "outside progress() (a thread of the plugin's own: the TCK never calls the transport there)";
        }
        return "the transport delivered " + what + " on thread '" + thread.getName() + "' " + where
                + ": a transport hands messages (and the end of a sender, onSenderClosed) to its MessageSink only inside its own "
                + "progress(), on the thread that calls it (never from a thread of its own, never from trySend): the runtime's "
                + "thread modes and handlers rely on it";
    }

    /** The messages delivered so far, in order; fails when one was delivered outside the receiver's progress(). */
    List<Received> messages() {
        String wrong = misdelivery.get();
        if (wrong != null) {
            misdeliveryReported = true;
            throw new AssertionError(wrong);
        }
        return messages;
    }

    /** After the test: fails for a delivery outside progress() that no look at the inbox has failed for yet. */
    void checkDeliveredOnlyInsideProgress() {
        String wrong = misdelivery.get();
        if (wrong != null && !misdeliveryReported) throw new AssertionError(wrong);
    }

    int size() {
        return messages().size();
    }

    /** The calls of onSenderClosed so far, in order; fails as {@link #messages()} does. */
    List<SenderClosed> sendersClosed() {
        messages();
        return sendersClosed;
    }

    /** The calls of onSenderClosed so far, without failing for a delivery outside progress(): for a test that names that itself. */
    List<SenderClosed> sendersClosedAsCalled() {
        return sendersClosed;
    }

    /** How many times onSenderClosed({@code sender}) was called. */
    long timesClosed(long sender) {
        return sendersClosed().stream().filter(c -> c.sender() == sender).count();
    }
}
