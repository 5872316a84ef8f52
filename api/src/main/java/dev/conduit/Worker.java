package dev.conduit;

import dev.conduit.spi.ThreadMode;

import java.time.Duration;

/**
 * A progress engine and the owner of a receive queue in every selected transport that works
 * here, as UCX's worker. Made by {@link Conduit#newWorker(ThreadMode)}.
 *
 * <pre>{@code
 * // receiver                                    // sender
 * worker.onMessage(7, m -> sum.add(m.payloadLong(0)));
 * publish(worker.address().toBytes());            Endpoint ep = worker.connect(WorkerAddress.fromBytes(bytes));
 * while (running) worker.progress();              ep.send(7, segmentHoldingALong);
 * }</pre>
 *
 * <p>Every call except {@link #signal()}, {@link #threadMode()}, {@link #threadPolicy()} and
 * {@link #unhandledMessages()} (which only read what the worker was created with, or a counter)
 * goes through the worker's thread-mode guard
 * ({@link #threadPolicy()}), and so does every call on its endpoints but {@link Endpoint#transport()},
 * {@link Endpoint#maxHeaderSize()} and {@link Endpoint#maxPayloadSize()} (which only read what the
 * endpoint was made with, on any thread, also after the close): in {@link ThreadMode#SINGLE}
 * a call from any thread but the owner (the thread that created the worker) throws
 * {@link WrongThreadException}; in {@link ThreadMode#SERIALIZED} overlapping calls throw
 * {@link dev.conduit.spi.ConcurrentUseException}; in {@link ThreadMode#MULTI} calls are serialized
 * by the runtime unless every transport declares {@code MULTI}.
 *
 * <p>Message handlers and endpoint error handlers run on the thread that calls {@link #progress()}
 * (or {@link #await}, which delivers the messages of the transports it does not sleep in, and none
 * of the one it sleeps in: call {@code progress()} after it), inside the guard, so they may send
 * and {@link #connect}; they may not call
 * {@code progress()}, {@code await} or {@link #close()} (which throw {@link IllegalStateException}).
 *
 * <p>Once the worker is closed ({@link #close()}, or its {@code Conduit}'s), every call that goes
 * through the guard throws {@link IllegalStateException} (saying so; when its {@code Conduit}'s
 * close closed it, naming the thread that called that), but {@code close()} itself, which does
 * nothing more. So do its endpoints' sends, {@link Endpoint#peerRegion}, RMA operations and
 * {@link Endpoint#flush()}. {@link #signal()} then does nothing, and {@link #threadMode()},
 * {@link #threadPolicy()} and {@link #unhandledMessages()} still answer.
 *
 * <p>An endpoint goes one way. To answer a message, a handler calls {@link Message#replyEndpoint()},
 * an endpoint to the sender's worker that needs no address from the application (over the
 * transports that name their senders: memfd, posix and verbs do); or the worker connects to the
 * sender's address, which the two exchanged out of band or the request carried, and keeps that
 * endpoint, with an error handler of its own, for later answers (docs/runtime.md, "Answering a
 * message").
 */
public interface Worker extends AutoCloseable {

    /** The mode the application asked for. */
    ThreadMode threadMode();

    /** How the runtime enforces {@link #threadMode()} on this worker's transports. */
    ThreadPolicy threadPolicy();

    /**
     * This worker's address, to give to peers out of band: every transport's own address, most
     * preferred transport first. Computed once.
     *
     * @throws dev.conduit.spi.ConduitException when the transports' addresses do not fit the format
     *         (at most 16 transports, 1 KiB each, 4 KiB in all)
     */
    WorkerAddress address();

    /**
     * Connects to a peer worker; its failure is only logged and visible through
     * {@link Endpoint#isFailed()}. See {@link #connect(WorkerAddress, EndpointErrorHandler)}.
     */
    Endpoint connect(WorkerAddress peer);

    /**
     * Connects to a peer worker through the first of this worker's transports, in this worker's
     * order of preference, that the peer also offers and that succeeds: each transport proves the
     * peer reachable (opens what the peer published, completes its handshake) or says why not. No
     * host id is compared.
     *
     * <p>On a virtual thread, a transport's wait for the peer in a native call (over memfd, the
     * exchange with the peer's descriptor server, up to {@code memfd.connect.timeout}) is made on a
     * platform thread of the runtime's while the virtual thread parks, and leaves its carrier to
     * other virtual threads; an interrupt does not end that wait, and is kept (docs/runtime.md,
     * "Virtual threads").
     *
     * @param onError called once, on the progress thread, if the peer later fails while the endpoint
     *                is open: an endpoint the application closed before a progress call reported
     *                its failure (a send had thrown it) is not called back, and still says it failed
     * @throws dev.conduit.spi.ConduitException listing each transport tried and why it failed, and the
     *         peer's transports this worker does not have, each with why (left out by {@code transports},
     *         unavailable here, not installed); a {@link dev.conduit.spi.PeerFailedException} when every
     *         transport tried found the peer failed (over memfd and posix: its worker died, or closed,
     *         or its files were reclaimed: its lease is there and not held, or gone from the very
     *         shared directory its address names). Over memfd and posix, a peer whose address names
     *         another shared directory than this process's is a plain {@code ConduitException}
     *         naming both; where the file system records no birth time for the directory (tmpfs
     *         before Linux 5.18), a worker whose lease is gone cannot be told from that, and its
     *         connect is a plain {@code ConduitException} too (docs/runtime.md, "Addresses and
     *         connecting")
     * @throws IllegalStateException when the worker is closed, also by a close that overtook the
     *         connect (its transport's failure the cause)
     */
    Endpoint connect(WorkerAddress peer, EndpointErrorHandler onError);

    /**
     * Sets the handler for active messages with {@code id}, replacing any earlier one; {@code null}
     * removes it. A message whose id has no handler is counted as unhandled
     * ({@link #unhandledMessages()}), dropped, and logged once per id (logger
     * {@code dev.conduit.worker}).
     *
     * @param id 0..65535
     * @throws IllegalArgumentException for an id outside 0..65535
     */
    void onMessage(int id, MessageHandler handler);

    /**
     * How many messages this worker dropped since it opened because their id had no handler
     * ({@link #onMessage}). Any thread may read it, in every thread mode, also after the close.
     */
    long unhandledMessages();

    /**
     * Makes progress: first hands the endpoints' locally queued messages to their transports (in
     * order, stopping at an endpoint's first refusal), then progresses every transport, which
     * delivers received messages to their handlers on this thread, completes operations and detects
     * failed peers, then calls the error handlers of endpoints that failed. Never blocks.
     *
     * <p>If a handler throws, the message still counts as delivered (never delivered again); the
     * transport finishes its progress step, and then this method rethrows the exception (later
     * ones of the same call are added to it as suppressed). If a transport throws (it could not
     * handle something, and says why: a shared-memory worker whose mapping faulted, or, over memfd and
     * posix, a sender's connection it refused or whose large message it could not map), the other
     * transports still progress and error handlers still run; then this method throws that exception,
     * with a handler's exception of the same call suppressed in it. The worker stays open: call
     * {@code progress()} again, as a loop that logs such exceptions and goes on does. A refused
     * connection is that sender's loss alone (its later messages are dropped, its endpoint fails at
     * the sender's side, naming why); other senders' messages keep arriving. An exception holds at most 16
     * suppressed ones, counted over every call: one object thrown again and again (a preallocated
     * exception) would otherwise grow for as long as the worker runs; what it has no room for is
     * logged instead (a WARNING, at most once a minute with the count of those left out).
     *
     * <p>A busy-polling loop gives the processor a spin-wait hint when a call found nothing, as
     * Agrona's {@code BusySpinIdleStrategy} does:
     * {@code while (running) if (worker.progress() == 0) Thread.onSpinWait();}. On x86 it is a
     * {@code pause}, which spares the loop the pipeline flush that leaving a spin on a cache line
     * another core writes costs; it took 8-12 ns off a one-way 8-byte message in the project's
     * measurements. This method does not pause by itself: a loop that polls several workers would
     * pay a pause per idle worker.
     *
     * @return the number of events handled: messages sent from local queues, plus what the
     *         transports report
     */
    int progress();

    /**
     * Sleeps until work may have arrived, {@link #signal()} is called, or {@code timeout} passes,
     * for when an idle core matters more than latency (busy polling with {@link #progress()} is the
     * default and the fastest). Call {@code progress()} after it returns.
     *
     * <ul>
     * <li>It sleeps in the most preferred transport that can ({@link dev.conduit.spi.Capability#WAKEUP}).
     *     When the worker has other transports, it sleeps in slices of at most 10 ms and progresses
     *     the others between slices (delivering their messages, and calling the error handlers of
     *     endpoints that failed), returning {@code true} as soon as they had work or an error
     *     handler ran; so does it, in slices of at most 1 ms, while endpoints have locally queued
     *     messages, which it tries to send between slices. Under {@link ThreadPolicy#RUNTIME_LOCK}
     *     the sleep holds the worker's lock, in slices of at most 1 ms: a thread that comes to wait
     *     for the lock (to send, say) wakes the sleeper, and {@code await} returns, possibly
     *     without work, or hands the lock over between slices. A thread that comes to
     *     {@code await} too wakes nobody: the two take turns, a slice each. In
     *     {@link ThreadMode#SERIALIZED} the sleeping thread is inside the worker until it returns,
     *     up to the whole timeout: another thread's call throws
     *     {@link dev.conduit.spi.ConcurrentUseException}, which says so; {@code signal()} makes the
     *     await return.</li>
     * <li>When no transport can sleep, it parks in slices of at most 1 ms, progressing the
     *     transports between slices.</li>
     * <li>A {@code signal()} while no thread awaits makes the next {@code await} return at once:
     *     a wakeup is never lost, but one may be spurious.</li>
     * <li>A timeout of zero or less does not sleep: it returns at once, {@code false} (but
     *     {@code true} for an interrupt, below, or an endpoint's failure to report), and keeps a
     *     signal made before it for the next {@code await}, whichever transports the worker has.</li>
     * <li>An interrupt of the calling thread ends it, as it ends a {@code Selector.select}: it
     *     returns {@code true} at once (also when the thread was interrupted before the call) and
     *     keeps the interrupt status, which the caller clears or acts on.</li>
     * <li>A close of the worker by another thread meanwhile (under {@link ThreadPolicy#PASS_THROUGH},
     *     whose close may run while other threads use the worker, also its {@link Conduit}'s close)
     *     ends it: it throws {@link IllegalStateException}, as every call on a closed worker does.
     *     Under any other policy its {@code Conduit}'s close asks the threads inside the worker to
     *     close it, and the request ends the sleep: {@code await} returns {@code true}, and the
     *     worker closes on this thread as the call returns (the next call throws); only an await
     *     between two slices under {@link ThreadPolicy#RUNTIME_LOCK}, which let go of the lock, may
     *     find the worker closed by the closing thread and throw. Until 2026-12-07 this said that
     *     every such await threw
     *     (ConduitCloseTest#anAwaitAskedToCloseByTheConduitReturnsTrueAndTheWorkerIsClosedAsItReturns).</li>
     * <li>On a virtual thread, the sleep in a transport (a futex wait or a {@code poll}, native
     *     calls that would pin the virtual thread to its carrier for the whole sleep) is made on a
     *     platform thread of the runtime's while the virtual thread parks, so that awaiting virtual
     *     threads leave their carriers to the others. A wake-up then costs a thread hand-off more.
     *     A plugin that declares only {@code SINGLE} is called on the virtual thread itself, which
     *     stays pinned while it sleeps (docs/runtime.md, "Virtual threads").</li>
     * </ul>
     *
     * @return {@code true} when woken (by a transport, a signal, an interrupt, an endpoint's failure
     *         to report, or progress made between slices, an error handler's run included),
     *         {@code false} when the timeout passed
     */
    boolean await(Duration timeout);

    /**
     * Wakes a thread sleeping in {@link #await}. Callable from any thread, at any time: it does not
     * go through the thread-mode guard.
     *
     * @throws dev.conduit.spi.ConduitException when the memory the wake goes through faults (over
     *         posix, the worker's receive queue file truncated by another process, which its next
     *         {@code progress()} and {@code await} report too)
     */
    void signal();

    /**
     * Closes the worker's endpoints, newest first, then its transports. Errors are collected: one
     * {@code ConduitException} is thrown with every failure suppressed in it. Idempotent. Closing
     * the worker's {@link Conduit} closes it too ({@link Conduit#close()} says how, when another
     * thread is using it).
     *
     * @throws IllegalStateException when called from one of the worker's message or error
     *         handlers, or from a {@link dev.conduit.spi.PayloadEncoder} of a send on one of its
     *         endpoints (the send's message is under way in the peer's memory); it closes nothing
     */
    @Override
    void close();
}
