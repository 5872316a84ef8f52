package dev.conduit.plugin.verbs;

import dev.conduit.linux.Errno;
import dev.conduit.linux.ErrnoException;
import dev.conduit.linux.EventfdFlags;
import dev.conduit.linux.FileDescriptor;
import dev.conduit.linux.Libc;
import dev.conduit.linux.Linux;
import dev.conduit.spi.ConduitException;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

import static dev.conduit.plugin.verbs.VerbsAbi.*;

/**
 * A <b>simulation</b> of an RDMA device behind the {@link Verbs} interface, for tests of the
 * transport's logic on machines without RDMA hardware. It is not a device and proves nothing about
 * {@link FfmVerbs} or a provider: it runs in one JVM, delivers a work request the moment it is
 * posted (unless asked to hold it), and models only what the transport relies on:
 *
 * <ul>
 *   <li>a SEND consumes the destination queue pair's oldest posted receive and completes on both
 *       completion queues; with no receive posted it fails with {@code IBV_WC_RNR_RETRY_EXC_ERR}
 *       (counted in {@link #receiverNotReady()}, which a correct sender never causes);</li>
 *   <li>RDMA WRITE, READ and the two atomics act on memory registered in the destination's
 *       protection domain with the right access, within its bounds, else
 *       {@code IBV_WC_REM_ACCESS_ERR}; a SEND's receive buffer must be in the receiver's domain
 *       and locally writable, else the same; such a refused request fails the responding queue
 *       pair as well as the requesting one (the error state, its receives flushed), as on a
 *       device;</li>
 *   <li>a work request's local buffer must be registered, in bounds, in the queue pair's
 *       protection domain, and locally writable where the adapter writes it (READ, atomics), else
 *       {@code IBV_WC_LOC_PROT_ERR};</li>
 *   <li>a queue pair takes as many receives posted, and as many send work requests whose completion
 *       was not polled yet, as it was created with ({@code max_recv_wr}, {@code max_send_wr}): one
 *       more is refused by {@code ibv_post_recv} or {@code ibv_post_send} with {@code ENOMEM} and
 *       nothing posted, as providers refuse a full work queue;</li>
 *   <li>a work request to a destroyed queue pair fails with {@code IBV_WC_RETRY_EXC_ERR}; a
 *       failed queue pair goes to the error state and flushes its receives
 *       ({@code IBV_WC_WR_FLUSH_ERR});</li>
 *   <li>a completion channel is an eventfd, signalled by the first completion after
 *       {@code requestNotification};</li>
 *   <li>a completion queue holds the entries it was created with, at most the device's
 *       {@code max_cqe}: a completion that finds it full is an overrun, which on a device is
 *       {@code IBV_EVENT_CQ_ERR} and a queue that cannot be used again; here it is lost and
 *       counted in {@link #completionQueueOverruns()}, which a correct transport never causes;</li>
 *   <li>on request ({@link #failNext}), {@code ibv_post_recv}, {@code ibv_post_send} of an RDMA
 *       write, {@code ibv_destroy_qp} and {@code ibv_dereg_mr} fail with an errno, as a provider's can, every
 *       {@code ibv_dereg_mr} of one region too ({@link #failDeregistrationsOf}); a queue pair or region that
 *       failed to go stays, as on a device, until a later close destroys it or {@link #reclaimLeftovers()}; while a queue pair
 *       stays, {@code ibv_destroy_cq} of its completion queues and {@code ibv_dealloc_pd} of its protection domain fail with
 *       {@code EBUSY}, as the kernel refuses them, and leave them open likewise, {@code ibv_dealloc_pd} also while a region
 *       of it stays, and {@code ibv_destroy_comp_channel} while a completion queue on it stays, as libibverbs refuses it;</li>
 *   <li>on request, {@code ibv_poll_cq} of one completion queue fails: every poll once the device is in
 *       error ({@link #failPollsAfter}), or one poll with an {@link Error} out of the call
 *       ({@link #throwFromNextPoll}).</li>
 *   <li>on request, the next {@code ibv_post_recv} ({@link #throwFromNextPostReceive}) or
 *       {@code ibv_post_send} ({@link #throwFromNextPostSend}) throws an {@link Error} out of the
 *       call and posts nothing; and the next {@code ibv_dereg_mr} ({@link #throwFromNextDeregister})
 *       throws one before the call, the region left registered until {@link #reclaimLeftovers()};</li>
 *   <li>{@code ibv_reg_mr} granting remote write or remote atomics without local write fails with
 *       {@code EINVAL}, as the kernel refuses it (the device could then write memory the process
 *       said it may not);</li>
 *   <li>a work request longer than its port's {@code max_msg_sz} ({@link #maxMessageSize}, of the
 *       device when it was opened) fails with {@code IBV_WC_LOC_LEN_ERR}, as an adapter fails it;
 *       an RDMA WRITE or READ longer than the responder's fails both queue pairs, the requester's
 *       with {@code IBV_WC_REM_INV_REQ_ERR}, as a responder NAKs it;</li>
 *   <li>each device reports the {@code max_qp_rd_atom} and {@code max_qp_init_rd_atom} set when it
 *       was opened ({@link #readAtomicDepths}); {@code ibv_modify_qp} to RTR with a
 *       {@code max_dest_rd_atomic} of 0 or above the first, or to RTS with a {@code max_rd_atomic}
 *       of 0 or above the second, fails with {@code EINVAL}, as providers refuse them, and what each
 *       queue pair was given is recorded ({@link #queuePairDepths});</li>
 *   <li>on request ({@link #holdReadsUntilPolled}), an RDMA READ or atomic, and every work request
 *       its queue pair posts after it, acts and completes only when its send queue is next polled,
 *       all together in posting order, as an adapter's READ responses come back while the
 *       requester does other work: what a transport posts between two polls is in flight at once.
 *       The most READs and atomics one queue pair had in flight is recorded
 *       ({@link #mostReadsInFlight}), not limited: an adapter holds back those beyond its
 *       {@code max_rd_atomic}, which a transport that keeps within it never sees;</li>
 *   <li>on request, an asynchronous event of the device ({@link #raise}, {@link #raisePortEvent},
 *       {@link #raiseCompletionQueueEvent}); a queue pair error event puts the queue pair in the
 *       error state first, as the adapter does. {@code takeAsyncEvent} reports one and acknowledges
 *       it as {@code ibv_get_async_event} and {@code ibv_ack_async_event} do; {@code ibv_destroy_qp}
 *       of a queue pair with an event reported and not acknowledged is refused, where the library
 *       would wait for ever, and drops its events not yet reported, as the kernel does; and the
 *       kernel's detaching of the contexts from a device removed or reset ({@link #detach}: events
 *       dropped, every read {@code EIO});</li>
 *   <li>on request, the completions of one completion queue come late ({@link #delayCompletions}): a
 *       work request still acts at once (a write lands), but its completion reaches the queue
 *       only at {@link #completeDelayed}, as a device's comes after the peer's acknowledgement.</li>
 *   <li>on request ({@link #holdNextPoll}), the next {@code ibv_poll_cq} of one completion queue takes its
 *       completions and stays inside the call until {@link #releaseHeldPoll}, as a thread preempted in the
 *       library does; a poll of a queue while another poll of it is under way is counted in
 *       {@link #overlappingPolls()}, which a transport whose polls have one owner at a time never causes
 *       (they share the queue's {@code ibv_wc} array and its caller's completion arrays).</li>
 *   <li>on request ({@link #holdNextDestroy}), the next {@code ibv_destroy_qp} stays inside the call, its queue pair
 *       still there, until {@link #releaseHeldDestroy}.</li>
 * </ul>
 * Every device opened from one instance is on the same simulated fabric. Thread-safe: every call
 * that reads or changes the fabric's state holds the instance's lock, as the transport builds
 * inbound queue pairs on its wire-up thread while its worker posts and polls.
 */
final class LoopbackVerbs implements Verbs {

    static final byte[] GID = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, (byte) 0xFF, (byte) 0xFF, 127, 0, 0, 1};
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();

    private int atomicCap;
    private final int maxCqe;
    private int completionQueueOverruns;
    private final Libc libc = Linux.libc();
    private final Map<Integer, Qp> queuePairs = new HashMap<>();
    private final Map<Integer, Mr> regions = new HashMap<>();
    private int nextQpn = 0x11;
    private int nextKey = 0x100;
    private int receiverNotReady;
    final List<String> open = new ArrayList<>();
    private final Map<String, int[]> failures = new HashMap<>();
    private final List<Runnable> leftovers = new ArrayList<>();
    private final List<MemorySegment> registered = new ArrayList<>();
    /** The completion queue whose polls fail ({@link #failPollsAfter}, {@link #throwFromNextPoll}), or {@code null}. */
    private Cq failingQueue;
    private int goodPollsLeft;
    private int pollFailuresLeft;
    /** What a failing poll throws; {@code null}: the device's error, as {@link FfmVerbs} reports a negative return. */
    private Error pollError;
    private int failedPolls;
    /** What the next {@code ibv_post_recv} throws ({@link #throwFromNextPostReceive}), or {@code null}. */
    private Error postReceiveError;
    /** What the next {@code ibv_post_send} throws ({@link #throwFromNextPostSend}), or {@code null}. */
    private Error postSendError;
    /** What the next {@code ibv_reg_mr} throws ({@link #throwFromNextRegister}), or {@code null}. */
    private Error registerError;
    /** What the next {@code ibv_dereg_mr} throws ({@link #throwFromNextDeregister}), or {@code null}. */
    private Error deregisterError;
    /** The errno every {@code ibv_dereg_mr} of a region fails with, by the address of its memory ({@link #failDeregistrationsOf}). */
    private final Map<Long, Integer> stuckRegions = new HashMap<>();
    /** The memory of every {@code ibv_reg_mr} that failed ({@link #failNext}, {@link #throwFromNextRegister}, or refused as invalid). */
    private final List<MemorySegment> refusedRegistrations = new ArrayList<>();
    /** The completion queue whose completions {@link #delayCompletions} holds back, or {@code null}. */
    private Cq delayedQueue;
    private final List<Wc> delayed = new ArrayList<>();
    /** The devices open, each with its own queue of asynchronous events, as each context has. */
    private final List<LoopDevice> devices = new ArrayList<>();
    private int asyncEventsTaken;
    /** The port's {@code max_msg_sz}: 2 GiB, as mlx4, rxe and most providers report. */
    private long maxMessageSize = 1L << 31;
    /** The device's {@code max_qp_rd_atom} for devices opened from now on: 16, as mlx5 reports. */
    private int maxQpRdAtom = 16;
    /** The device's {@code max_qp_init_rd_atom} for devices opened from now on: 16, as mlx5 reports. */
    private int maxQpInitRdAtom = 16;
    /** What each queue pair was given, in the order they reached RTS. */
    private final List<Depths> depths = new ArrayList<>();
    /** Whether READs and atomics wait for a poll of their send queue ({@link #holdReadsUntilPolled}). */
    private boolean holdReads;
    private int mostReadsInFlight;
    /** The completion queue whose next poll {@link #holdNextPoll} holds inside the call, or {@code null}. */
    private Cq holdingQueue;
    /** Opened by {@link #releaseHeldPoll}: what the held poll waits for, outside the instance's lock. */
    private CountDownLatch pollRelease;
    /** Polls of {@link #holdingQueue} still to pass before the one held. */
    private int pollsBeforeHold;
    private boolean pollHeld;
    private int overlappingPolls;
    /** Opened by {@link #releaseHeldDestroy}: what the {@code ibv_destroy_qp} that {@link #holdNextDestroy} holds waits for. */
    private CountDownLatch destroyRelease;
    /** Whether the next {@code ibv_destroy_qp} is to be held ({@link #holdNextDestroy}). */
    private boolean holdDestroy;
    private boolean destroyHeld;

    /** The {@code max_rd_atomic} (initiator) and {@code max_dest_rd_atomic} (responder) a queue pair was given. */
    record Depths(int initiator, int responder) {
    }

    LoopbackVerbs(int atomicCap) {
        this(atomicCap, 1 << 20);
    }

    /** A fabric whose device has completion queues of at most {@code maxCqe} entries. */
    LoopbackVerbs(int atomicCap, int maxCqe) {
        this.atomicCap = atomicCap;
        this.maxCqe = maxCqe;
    }

    @Override
    public String library() {
        return "loopback simulation";
    }

    @Override
    public List<String> deviceNames() {
        return List.of("loop0");
    }

    @Override
    public Device open(String name) {
        if (!name.equals("loop0")) {
            throw new IllegalArgumentException("no RDMA device named '" + name + "' in the loopback simulation");
        }
        synchronized (this) {
            LoopDevice device = new LoopDevice();
            devices.add(device);
            return device;
        }
    }

    /** Completions that found their queue full, for checks. */
    synchronized int completionQueueOverruns() {
        return completionQueueOverruns;
    }

    /** SENDs that found no receive posted (credits overrun), for checks. */
    synchronized int receiverNotReady() {
        return receiverNotReady;
    }

    /** Queue pairs, regions, channels and queues still open, for leak checks. */
    synchronized int openObjects() {
        return open.size();
    }

    /**
     * Makes the next {@code count} calls of {@code call} ({@code ibv_reg_mr}, {@code ibv_post_recv}, {@code ibv_post_send} of an RDMA write,
     * {@code ibv_destroy_qp}, {@code ibv_dereg_mr}) fail with {@code errno}.
     */
    synchronized void failNext(String call, int count, int errno) {
        failures.put(call, new int[] {count, errno});
    }

    /** Makes the next {@code ibv_post_recv} throw {@code error}, as running out of memory in the middle of building a connection would. */
    synchronized void throwFromNextPostReceive(Error error) {
        postReceiveError = error;
    }

    /** Makes the next {@code ibv_post_send} throw {@code error}, as running out of memory or a fault in mapped memory in the call would. */
    synchronized void throwFromNextPostSend(Error error) {
        postSendError = error;
    }

    /** Makes the next {@code ibv_reg_mr} throw {@code error}, as an Error out of the downcall (a stack overflow) would. */
    synchronized void throwFromNextRegister(Error error) {
        registerError = error;
    }

    /**
     * Makes the next {@code ibv_dereg_mr} throw {@code error} before the call, the region left registered, as running out of
     * native memory for its capture state would.
     */
    synchronized void throwFromNextDeregister(Error error) {
        deregisterError = error;
    }

    /**
     * Makes every {@code ibv_dereg_mr} of the region of {@code memory} fail with {@code errno}, the region left registered,
     * until {@link #reclaimLeftovers()}: a registration the device never lets go, while the others go as usual.
     */
    synchronized void failDeregistrationsOf(MemorySegment memory, int errno) {
        stuckRegions.put(memory.address(), errno);
    }

    /** The memory of every {@code ibv_reg_mr} that failed so far, in order. */
    synchronized List<MemorySegment> refusedRegistrations() {
        return List.copyOf(refusedRegistrations);
    }

    /** Throws the failure {@link #failNext} asked for {@code call}, if one is due. */
    private void maybeFail(String call, String arguments) {
        int[] f = failures.get(call);
        if (f != null && f[0] > 0) {
            f[0]--;
            throw new ErrnoException(call, f[1], "loop0", arguments);
        }
    }

    /**
     * Puts the device in error for {@code queue}: after its next {@code goodPolls} polls, which succeed, every
     * {@code ibv_poll_cq} of it fails (returns the provider's -2, thrown as {@link FfmVerbs} throws it) and takes nothing
     * off the queue, until {@link #healPolls()}.
     */
    synchronized void failPollsAfter(CompletionQueue queue, int goodPolls) {
        failingQueue = (Cq) queue;
        goodPollsLeft = goodPolls;
        pollFailuresLeft = Integer.MAX_VALUE;
        pollError = null;
    }

    /** Makes the next {@code ibv_poll_cq} of {@code queue} throw {@code error}, as an Error out of the call (out of memory) would. */
    synchronized void throwFromNextPoll(CompletionQueue queue, Error error) {
        failingQueue = (Cq) queue;
        goodPollsLeft = 0;
        pollFailuresLeft = 1;
        pollError = error;
    }

    /** Ends {@link #failPollsAfter} and {@link #throwFromNextPoll}: polls succeed again. */
    synchronized void healPolls() {
        failingQueue = null;
    }

    /** Holds back the completions of {@code queue} until {@link #completeDelayed()}; its work requests still act at once. */
    synchronized void delayCompletions(CompletionQueue queue) {
        delayedQueue = (Cq) queue;
    }

    /** Ends {@link #delayCompletions}: what it held back reaches its queue now, in order, and signals an armed channel. */
    synchronized void completeDelayed() {
        Cq queue = delayedQueue;
        delayedQueue = null;
        delayed.forEach(queue::add);
        delayed.clear();
    }

    /** Makes the next {@code ibv_poll_cq} of {@code queue} take its completions and then stay inside the call until {@link #releaseHeldPoll}. */
    synchronized void holdNextPoll(CompletionQueue queue) {
        holdPollAfter(queue, 0);
    }

    /** As {@link #holdNextPoll}, for the poll of {@code queue} that comes after {@code polls} others of it, which return at once. */
    synchronized void holdPollAfter(CompletionQueue queue, int polls) {
        holdingQueue = (Cq) queue;
        pollsBeforeHold = polls;
        pollRelease = new CountDownLatch(1);
    }

    /** Whether a poll {@link #holdNextPoll} asked for is inside the call now. */
    synchronized boolean pollHeld() {
        return pollHeld;
    }

    /** Lets the held poll return what it took. */
    synchronized void releaseHeldPoll() {
        pollRelease.countDown();
    }

    /**
     * Makes the next {@code ibv_destroy_qp} stay inside the call, its queue pair not destroyed yet,
     * until {@link #releaseHeldDestroy}, as a thread preempted in the library does.
     */
    synchronized void holdNextDestroy() {
        holdDestroy = true;
        destroyRelease = new CountDownLatch(1);
    }

    /** Whether an {@code ibv_destroy_qp} {@link #holdNextDestroy} asked for is inside the call now. */
    synchronized boolean destroyHeld() {
        return destroyHeld;
    }

    /** Lets the held {@code ibv_destroy_qp} go on. */
    synchronized void releaseHeldDestroy() {
        destroyRelease.countDown();
    }

    /** Polls of a completion queue begun while another poll of the same queue was under way. */
    synchronized int overlappingPolls() {
        return overlappingPolls;
    }

    /** The thread whose allocation in the data path's calls is counted ({@link #accountAllocationOf}), or {@code null}. */
    private volatile Thread accounted;
    /** What the polls and posts of {@link #accounted} allocated so far; written and read by that thread only. */
    private long simulationBytes;

    /**
     * Counts from now on what {@code ibv_poll_cq}, {@code ibv_post_recv} and {@code ibv_post_send} allocate when
     * {@code thread} calls them ({@link #simulationBytes()}): the simulation keeps completions and posted receives as
     * objects, which a device does not, so a test of what the transport allocates takes them out of its count.
     */
    void accountAllocationOf(Thread thread) {
        simulationBytes = 0;
        accounted = thread;
    }

    /** What the simulation's polls and posts allocated on the thread {@link #accountAllocationOf} named; read on that thread. */
    long simulationBytes() {
        return simulationBytes;
    }

    /** {@link #threadAllocatedBytes()} when the calling thread is {@link #accounted}, else -1. */
    private long allocationMark() {
        return Thread.currentThread() == accounted ? threadAllocatedBytes() : -1;
    }

    private void accountSince(long mark) {
        if (mark >= 0) {
            simulationBytes += threadAllocatedBytes() - mark;
        }
    }

    /**
     * {@code com.sun.management.ThreadMXBean#getCurrentThreadAllocatedBytes}, bound once so that a call allocates nothing (a
     * reflective call boxes its answer); through a public lookup, as this module does not read java.management.
     */
    private static final java.lang.invoke.MethodHandle THREAD_ALLOCATED_BYTES;

    static {
        try {
            Object bean = Class.forName("java.lang.management.ManagementFactory").getMethod("getThreadMXBean").invoke(null);
            THREAD_ALLOCATED_BYTES = java.lang.invoke.MethodHandles.publicLookup().findVirtual(
                    Class.forName("com.sun.management.ThreadMXBean"), "getCurrentThreadAllocatedBytes",
                    java.lang.invoke.MethodType.methodType(long.class)).bindTo(bean);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** The bytes the calling thread has allocated on the heap so far. */
    static long threadAllocatedBytes() {
        try {
            return (long) THREAD_ALLOCATED_BYTES.invokeExact();
        } catch (Throwable e) {
            throw new AssertionError("cannot read this thread's allocated bytes", e);
        }
    }

    /** Polls that {@link #failPollsAfter} or {@link #throwFromNextPoll} made fail so far. */
    synchronized int failedPolls() {
        return failedPolls;
    }

    /** Throws the poll failure asked for {@code queue}, if one is due. */
    private void maybeFailPoll(Cq queue) {
        if (queue != failingQueue) {
            return;
        }
        if (goodPollsLeft > 0) {
            goodPollsLeft--;
            return;
        }
        if (pollFailuresLeft > 0) {
            pollFailuresLeft--;
            failedPolls++;
            if (pollError != null) {
                throw pollError;
            }
            throw new ConduitException("verbs: ibv_poll_cq(loop0 " + queue + ") returned -2: the simulated device is in error");
        }
    }

    /**
     * Raises asynchronous event {@code type} ({@code IBV_EVENT_QP_*}, {@code IBV_EVENT_COMM_EST}, …) on
     * {@code queuePair}; an error event ({@code IBV_EVENT_QP_FATAL}, {@code _REQ_ERR}, {@code _ACCESS_ERR})
     * puts it in the error state first, flushing its receives, as the adapter does.
     */
    synchronized void raise(int type, QueuePair queuePair) {
        Qp qp = (Qp) queuePair;
        if (type == IBV_EVENT_QP_FATAL || type == IBV_EVENT_QP_REQ_ERR || type == IBV_EVENT_QP_ACCESS_ERR) {
            qp.toError();
        }
        qp.pd.device.asyncEvents.add(new AsyncEvent(type, qp, null, 0));
    }

    /**
     * Raises asynchronous event {@code type} ({@code IBV_EVENT_PORT_ERR}, {@code IBV_EVENT_DEVICE_FATAL}, …) on {@code port},
     * for every context open: the device's events reach each of its contexts.
     */
    synchronized void raisePortEvent(int type, int port) {
        for (LoopDevice device : devices) {
            device.asyncEvents.add(new AsyncEvent(type, null, null, port));
        }
    }

    /**
     * Raises port event {@code type} on {@code port} for context {@code device} only: a port of one
     * host, whose going down the contexts of its peers, on other hosts, do not see.
     */
    synchronized void raisePortEvent(int type, int port, Device device) {
        ((LoopDevice) device).asyncEvents.add(new AsyncEvent(type, null, null, port));
    }

    /**
     * Detaches every open context from the device, as the kernel does when the device is removed or
     * reset: the events not read yet are dropped and every {@code ibv_get_async_event} fails with
     * {@code EIO}, also on a non-blocking descriptor (Linux's "IB/uverbs: Fix to consider event queue
     * closing also upon non-blocking mode", 2023). Nothing else of the contexts fails here: only what
     * the events say is simulated.
     */
    synchronized void detach() {
        for (LoopDevice device : devices) {
            device.asyncEvents.clear();
            device.detached = true;
        }
    }

    /** Raises {@code IBV_EVENT_CQ_ERR} on {@code queue}. */
    synchronized void raiseCompletionQueueEvent(CompletionQueue queue) {
        ((Cq) queue).device.asyncEvents.add(new AsyncEvent(IBV_EVENT_CQ_ERR, null, queue, 0));
    }

    /** Makes the port's {@code max_msg_sz} {@code bytes}, for devices opened from now on. */
    synchronized void maxMessageSize(long bytes) {
        maxMessageSize = bytes;
    }

    /** Makes the devices opened from now on report {@code atomic_cap} {@code cap}, as {@link #readAtomicDepths} their depths. */
    synchronized void atomicCap(int cap) {
        atomicCap = cap;
    }

    /**
     * Makes the devices opened from now on report {@code max_qp_rd_atom} {@code responder} and
     * {@code max_qp_init_rd_atom} {@code initiator}: each worker of a test opens its own device
     * context, so two workers can have devices of different limits.
     */
    synchronized void readAtomicDepths(int responder, int initiator) {
        maxQpRdAtom = responder;
        maxQpInitRdAtom = initiator;
    }

    /**
     * The depths each queue pair was given, in the order they reached RTS: of a connection, the
     * acceptor's, then the connector's, which reaches RTS when it reads the acceptor's reply.
     */
    synchronized List<Depths> queuePairDepths() {
        return List.copyOf(depths);
    }

    /**
     * From now on an RDMA READ or atomic, and every work request its queue pair posts after it,
     * acts (the READ's bytes land) and completes only when its send queue is next polled, all
     * those of the queue pair together and in posting order.
     */
    synchronized void holdReadsUntilPolled() {
        holdReads = true;
    }

    /** The most RDMA READs and atomics one queue pair had in flight at once, held by {@link #holdReadsUntilPolled}. */
    synchronized int mostReadsInFlight() {
        return mostReadsInFlight;
    }

    /** Asynchronous events raised and not taken yet. */
    synchronized int pendingAsyncEvents() {
        return devices.stream().mapToInt(d -> d.asyncEvents.size()).sum();
    }

    /** Asynchronous events taken (and acknowledged) so far. */
    synchronized int asyncEventsTaken() {
        return asyncEventsTaken;
    }

    /** Destroys the queue pairs and regions that failed to go, as the kernel does when the process exits. */
    synchronized void reclaimLeftovers() {
        leftovers.forEach(Runnable::run);
        leftovers.clear();
        stuckRegions.clear();
    }

    /** Every segment registered so far, in order (also those deregistered since). */
    synchronized List<MemorySegment> registeredMemory() {
        return List.copyOf(registered);
    }

    /** Whether {@code memory} is registered now. */
    synchronized boolean isRegistered(MemorySegment memory) {
        return regions.values().stream().anyMatch(mr -> mr.memory == memory);
    }

    /** Device contexts open ({@code ibv_open_device} not yet closed), for leak checks. */
    synchronized int contextsOpen() {
        return devices.size();
    }

    /** How many objects whose description starts with {@code kind} ("mr ", "qp ") are open. */
    synchronized long openOf(String kind) {
        return open.stream().filter(o -> o.startsWith(kind)).count();
    }

    private synchronized void opened(String what) {
        open.add(what);
    }

    private synchronized void closed(String what) {
        open.remove(what);
    }

    private final class LoopDevice implements Device {
        final ArrayDeque<AsyncEvent> asyncEvents = new ArrayDeque<>();
        /** Whether {@link #detach} detached it: its events read {@code EIO}. */
        boolean detached;
        final int maxQpRdAtom = LoopbackVerbs.this.maxQpRdAtom;
        final int maxQpInitRdAtom = LoopbackVerbs.this.maxQpInitRdAtom;
        final int atomicCap = LoopbackVerbs.this.atomicCap;
        final long maxMessageSize = LoopbackVerbs.this.maxMessageSize;

        @Override
        public DeviceAttributes attributes() {
            return new DeviceAttributes("loopback", 1L, 0, 0, 1024, maxCqe, 1L << 40, atomicCap, 1, maxQpRdAtom, maxQpInitRdAtom);
        }

        @Override
        public PortAttributes port(int port) {
            synchronized (LoopbackVerbs.this) {
                return new PortAttributes(IBV_PORT_ACTIVE, IBV_MTU_4096, IBV_MTU_1024, 4, 0, 5, IBV_LINK_LAYER_ETHERNET, this.maxMessageSize);
            }
        }

        @Override
        public byte[] gid(int port, int index) {
            return index == 0 ? GID.clone() : new byte[16];
        }

        @Override
        public ProtectionDomain allocateProtectionDomain() {
            Pd pd = new Pd(this);
            opened(pd.toString());
            return pd;
        }

        @Override
        public CompletionChannel createCompletionChannel() {
            Channel c = new Channel();
            opened(c.toString());
            return c;
        }

        @Override
        public CompletionQueue createCompletionQueue(int entries, CompletionChannel channel) {
            if (entries < 1 || entries > maxCqe) {
                throw new ErrnoException("ibv_create_cq", Errno.EINVAL, "loop0", "loop0, " + entries + " (max_cqe " + maxCqe + ")");
            }
            Cq cq = new Cq(this, (Channel) channel, entries);
            opened(cq.toString());
            return cq;
        }

        /** {@code ibv_get_async_event} (the event is reported: counted on its queue pair), then {@code ibv_ack_async_event}. */
        @Override
        public AsyncEvent takeAsyncEvent() {
            synchronized (LoopbackVerbs.this) {
                if (detached) {
                    throw new ErrnoException("ibv_get_async_event", Errno.EIO, "loop0", "loop0, &event");
                }
                AsyncEvent event = asyncEvents.poll();
                if (event == null) {
                    return null;
                }
                asyncEventsTaken++;
                if (event.queuePair() instanceof Qp qp) {
                    qp.eventsReported++;
                    qp.eventsAcknowledged++;
                }
                return event;
            }
        }

        @Override
        public void close() {
            synchronized (LoopbackVerbs.this) {
                devices.remove(this);
            }
        }
    }

    private final class Pd implements ProtectionDomain {
        final LoopDevice device;

        Pd(LoopDevice device) {
            this.device = device;
        }

        @Override
        public MemoryRegion register(MemorySegment memory, int access, String less) {
            if (!memory.isNative()) {
                throw new IllegalArgumentException("ibv_reg_mr of heap memory");
            }
            synchronized (LoopbackVerbs.this) {
                Error error = registerError;
                registerError = null;
                try {
                    if (error != null) {
                        throw error;
                    }
                    if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) != 0 && (access & IBV_ACCESS_LOCAL_WRITE) == 0) {
                        throw new ErrnoException("ibv_reg_mr", Errno.EINVAL, "loop0", "loop0 " + memory.byteSize() + " bytes, access "
                                + access + " (remote write or atomics without local write)");
                    }
                    maybeFail("ibv_reg_mr", "loop0 " + memory.byteSize() + " bytes");
                } catch (RuntimeException | Error e) {
                    refusedRegistrations.add(memory);
                    throw e;
                }
                Mr mr = new Mr(this, memory, access, nextKey++);
                regions.put(mr.key, mr);
                open.add(mr.toString());
                registered.add(memory);
                return mr;
            }
        }

        @Override
        public QueuePair createQueuePair(CompletionQueue sendQueue, CompletionQueue receiveQueue, int maxSendRequests, int maxReceiveRequests) {
            synchronized (LoopbackVerbs.this) {
                Qp qp = new Qp(this, (Cq) sendQueue, (Cq) receiveQueue, nextQpn++, maxSendRequests, maxReceiveRequests);
                queuePairs.put(qp.number, qp);
                open.add(qp.toString());
                return qp;
            }
        }

        /**
         * Refused with {@code EBUSY} while a queue pair or memory region of it is left, as {@code ibv_dealloc_pd} is (the
         * kernel's use count), and open until a later close or {@link #reclaimLeftovers()}.
         */
        @Override
        public void close() {
            synchronized (LoopbackVerbs.this) {
                refuseWhileUsed("ibv_dealloc_pd", this, queuePairs.values().stream().anyMatch(qp -> qp.pd == this) ? "a queue pair"
                        : regions.values().stream().anyMatch(mr -> mr.pd == this) ? "a memory region" : null);
                closed(toString());
            }
        }
    }

    /**
     * Throws {@code call}'s {@code EBUSY} when {@code user} (what still uses {@code object}: "a queue pair") is not
     * {@code null}, leaving {@code object} open until a later close or {@link #reclaimLeftovers()}.
     */
    private void refuseWhileUsed(String call, Object object, String user) {
        if (user != null) {
            leftovers.add(() -> closed(object.toString()));
            throw new ErrnoException(call, Errno.EBUSY, "loop0", "loop0 " + object + ", which " + user + " still uses");
        }
    }

    private final class Mr implements MemoryRegion {
        final Pd pd;
        final MemorySegment memory;
        final int access;
        final int key;

        Mr(Pd pd, MemorySegment memory, int access, int key) {
            this.pd = pd;
            this.memory = memory;
            this.access = access;
            this.key = key;
        }

        @Override
        public MemorySegment memory() {
            return memory;
        }

        @Override
        public int localKey() {
            return key;
        }

        @Override
        public int remoteKey() {
            return key;
        }

        @Override
        public void close() {
            synchronized (LoopbackVerbs.this) {
                Error error = deregisterError;
                if (error != null) {
                    deregisterError = null;
                    leftovers.add(this::deregister);
                    throw error;
                }
                try {
                    maybeFail("ibv_dereg_mr", "loop0 mr " + key);
                    Integer stuck = stuckRegions.get(memory.address());
                    if (stuck != null) {
                        throw new ErrnoException("ibv_dereg_mr", stuck, "loop0", "loop0 mr " + key);
                    }
                } catch (ErrnoException e) {
                    leftovers.add(this::deregister);
                    throw e;
                }
                deregister();
            }
        }

        private void deregister() {
            regions.remove(key);
            open.remove(toString());
        }

        @Override
        public String toString() {
            return "mr " + key;
        }
    }

    private final class Channel implements CompletionChannel {
        final FileDescriptor eventfd = libc.eventfd(0, EventfdFlags.EFD_NONBLOCK);
        /** The completion queues created on it and not destroyed: libibverbs' {@code refcnt} of the channel. */
        int queues;

        @Override
        public int fd() {
            return eventfd.fd();
        }

        @Override
        public boolean takeEvent() {
            return libc.eventfdRead(eventfd) > 0;
        }

        /**
         * Refused with {@code EBUSY} while a completion queue on it is left, as {@code ibv_destroy_comp_channel} is (the
         * library's reference count), and open until a later close or {@link #reclaimLeftovers()}.
         */
        @Override
        public void close() {
            synchronized (LoopbackVerbs.this) {
                if (queues > 0) {
                    leftovers.add(eventfd::close);
                }
                refuseWhileUsed("ibv_destroy_comp_channel", this, queues > 0 ? "a completion queue" : null);
                eventfd.close();
                closed(toString());
            }
        }

        @Override
        public String toString() {
            return "channel " + System.identityHashCode(this);
        }
    }

    private record Wc(long requestId, int status, int opcode, int byteLength, int queuePair) {
    }

    private final class Cq implements CompletionQueue {
        final LoopDevice device;
        final Channel channel;
        final int capacity;
        final ArrayDeque<Wc> entries = new ArrayDeque<>();
        boolean armed;
        boolean destroyed;

        Cq(LoopDevice device, Channel channel, int capacity) {
            this.device = device;
            this.channel = channel;
            this.capacity = capacity;
            if (channel != null) {
                synchronized (LoopbackVerbs.this) {
                    channel.queues++;
                }
            }
        }

        void add(Wc wc) {
            if (this == delayedQueue) {
                delayed.add(wc);
                return;
            }
            if (entries.size() >= capacity) {
                completionQueueOverruns++;
                return;
            }
            entries.add(wc);
            if (armed && channel != null) {
                armed = false;
                libc.eventfdWrite(channel.eventfd, 1);
            }
        }

        /** Polls of this queue under way. */
        int polling;

        @Override
        public int poll(Completions into) {
            long mark = allocationMark();
            try {
                return pollSimulated(into);
            } finally {
                accountSince(mark);
            }
        }

        private int pollSimulated(Completions into) {
            CountDownLatch hold;
            int n;
            synchronized (LoopbackVerbs.this) {
                if (polling++ > 0) {
                    overlappingPolls++;
                }
                try {
                    n = take(into);
                } catch (RuntimeException | Error e) {
                    polling--;
                    throw e;
                }
                hold = holdingQueue == this && pollsBeforeHold-- == 0 ? pollRelease : null;
                if (hold != null) {
                    holdingQueue = null;
                    pollHeld = true;
                }
            }
            try {
                if (hold != null) {
                    hold.await();
                }
                return n;
            } catch (InterruptedException e) {
                throw new AssertionError("interrupted while the poll was held", e);
            } finally {
                synchronized (LoopbackVerbs.this) {
                    polling--;
                    if (hold != null) {
                        pollHeld = false;
                    }
                }
            }
        }

        /** Takes what {@code into} holds off the queue, under the instance's lock. */
        private int take(Completions into) {
            maybeFailPoll(this);
            for (Qp qp : List.copyOf(queuePairs.values())) {
                if (qp.sendQueue == this) {
                    qp.actHeld();
                }
            }
            int n = 0;
            while (n < into.capacity() && !entries.isEmpty()) {
                Wc wc = entries.poll();
                Qp requester = wc.opcode == IBV_WC_RECV ? null : queuePairs.get(wc.queuePair);
                if (requester != null && requester.sendQueue == this) {
                    requester.sendsOutstanding--; // its send queue entry is free again once the completion is polled
                }
                into.requestId[n] = wc.requestId;
                into.status[n] = wc.status;
                into.opcode[n] = wc.opcode;
                into.vendorError[n] = 0;
                into.byteLength[n] = wc.byteLength;
                into.queuePair[n] = wc.queuePair;
                n++;
            }
            return n;
        }

        @Override
        public void requestNotification() {
            synchronized (LoopbackVerbs.this) {
                armed = true;
            }
        }

        /** Refused with {@code EBUSY} while a queue pair on it is left, as {@code ibv_destroy_cq} is (the kernel's use count). */
        @Override
        public void close() {
            synchronized (LoopbackVerbs.this) {
                refuseWhileUsed("ibv_destroy_cq", this, queuePairs.values().stream().anyMatch(qp -> qp.sendQueue == this || qp.receiveQueue == this)
                        ? "a queue pair" : null);
                if (!destroyed && channel != null) {
                    channel.queues--;
                }
                destroyed = true;
                closed(toString());
            }
        }

        @Override
        public String toString() {
            return "cq " + System.identityHashCode(this);
        }
    }

    private final class Qp implements QueuePair {
        final Pd pd;
        final Cq sendQueue;
        final Cq receiveQueue;
        final int number;
        final ArrayDeque<long[]> receives = new ArrayDeque<>();
        /** {@code max_send_wr} and {@code max_recv_wr}, as created. */
        final int maxSend;
        final int maxReceive;
        /** Send work requests posted whose completion was not polled yet. */
        int sendsOutstanding;
        int state = IBV_QPS_RESET;
        int access;
        int destination;
        int eventsReported;
        int eventsAcknowledged;
        int responderDepth;
        /** The work requests {@link #holdReadsUntilPolled} holds, in posting order. */
        final ArrayDeque<Runnable> held = new ArrayDeque<>();
        int readsInFlight;

        Qp(Pd pd, Cq sendQueue, Cq receiveQueue, int number, int maxSend, int maxReceive) {
            this.pd = pd;
            this.maxSend = maxSend;
            this.maxReceive = maxReceive;
            this.sendQueue = sendQueue;
            this.receiveQueue = receiveQueue;
            this.number = number;
        }

        @Override
        public int number() {
            return number;
        }

        @Override
        public CompletionQueue sendQueue() {
            return sendQueue;
        }

        @Override
        public void toInit(int port, int access) {
            synchronized (LoopbackVerbs.this) {
                expect(IBV_QPS_RESET, "INIT");
                this.access = access;
                state = IBV_QPS_INIT;
            }
        }

        @Override
        public void toReadyToReceive(PeerPath peer, int port, int gidIndex, int responderDepth) {
            synchronized (LoopbackVerbs.this) {
                expect(IBV_QPS_INIT, "RTR");
                if (responderDepth < 1 || responderDepth > pd.device.maxQpRdAtom) {
                    throw new ErrnoException("ibv_modify_qp", Errno.EINVAL, "loop0", "qp " + number + " to RTR with max_dest_rd_atomic "
                            + responderDepth + " (max_qp_rd_atom " + pd.device.maxQpRdAtom + ")");
                }
                this.responderDepth = responderDepth;
                destination = peer.queuePair();
                state = IBV_QPS_RTR;
            }
        }

        @Override
        public void toReadyToSend(int packetSequence, int initiatorDepth) {
            synchronized (LoopbackVerbs.this) {
                expect(IBV_QPS_RTR, "RTS");
                if (initiatorDepth < 1 || initiatorDepth > pd.device.maxQpInitRdAtom) {
                    throw new ErrnoException("ibv_modify_qp", Errno.EINVAL, "loop0", "qp " + number + " to RTS with max_rd_atomic "
                            + initiatorDepth + " (max_qp_init_rd_atom " + pd.device.maxQpInitRdAtom + ")");
                }
                depths.add(new Depths(initiatorDepth, responderDepth));
                state = IBV_QPS_RTS;
            }
        }

        private void expect(int from, String to) {
            if (state != from) {
                throw new ErrnoException("ibv_modify_qp", Errno.EINVAL, "loop0", "qp " + number + " from state " + state + " to " + to);
            }
        }

        @Override
        public void postReceive(long requestId, MemoryRegion region, long offset, int length) {
            long mark = allocationMark();
            try {
                postReceiveSimulated(requestId, region, offset, length);
            } finally {
                accountSince(mark);
            }
        }

        private void postReceiveSimulated(long requestId, MemoryRegion region, long offset, int length) {
            synchronized (LoopbackVerbs.this) {
                Error error = postReceiveError;
                if (error != null) {
                    postReceiveError = null;
                    throw error;
                }
                maybeFail("ibv_post_recv", "loop0 qp " + number);
                if (state == IBV_QPS_RESET) {
                    throw new ErrnoException("ibv_post_recv", Errno.EINVAL, "loop0", "qp " + number + " in RESET");
                }
                if (state == IBV_QPS_ERR) {
                    receiveQueue.add(new Wc(requestId, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV, 0, number));
                    return;
                }
                if (receives.size() >= maxReceive) {
                    throw new ErrnoException("ibv_post_recv", Errno.ENOMEM, "loop0", "qp " + number + ": " + maxReceive
                            + " receives posted already (max_recv_wr)");
                }
                receives.add(new long[] {requestId, ((Mr) region).key, offset, length});
            }
        }

        @Override
        public void postSend(long requestId, int opcode, MemoryRegion region, long offset, int length, long remoteAddress, int remoteKey,
                             long compareAdd, long swap) {
            long mark = allocationMark();
            try {
                postSendSimulated(requestId, opcode, region, offset, length, remoteAddress, remoteKey, compareAdd, swap);
            } finally {
                accountSince(mark);
            }
        }

        private void postSendSimulated(long requestId, int opcode, MemoryRegion region, long offset, int length, long remoteAddress,
                                       int remoteKey, long compareAdd, long swap) {
            synchronized (LoopbackVerbs.this) {
                Error error = postSendError;
                if (error != null) {
                    postSendError = null;
                    throw error;
                }
                if (state != IBV_QPS_RTS && state != IBV_QPS_ERR) {
                    throw new ErrnoException("ibv_post_send", Errno.EINVAL, "loop0", "qp " + number + " not in RTS");
                }
                if (opcode == VerbsAbi.IBV_WR_RDMA_WRITE) maybeFail("ibv_post_send", "loop0 qp " + number + " RDMA write");
                if (sendsOutstanding >= maxSend) {
                    throw new ErrnoException("ibv_post_send", Errno.ENOMEM, "loop0", "qp " + number + ": " + maxSend
                            + " send work requests outstanding already (max_send_wr)");
                }
                if (holdReads && (readOrAtomic(opcode) || !held.isEmpty())) {
                    sendsOutstanding++;
                    held.add(() -> act(requestId, opcode, region, offset, length, remoteAddress, remoteKey, compareAdd, swap));
                    if (readOrAtomic(opcode)) {
                        mostReadsInFlight = Math.max(mostReadsInFlight, ++readsInFlight);
                    }
                    return;
                }
                act(requestId, opcode, region, offset, length, remoteAddress, remoteKey, compareAdd, swap);
                sendsOutstanding++;
            }
        }

        /** Whether the adapter writes the work request's local buffer, and the responder answers it with data: a READ or an atomic. */
        private static boolean readOrAtomic(int opcode) {
            return opcode == IBV_WR_RDMA_READ || opcode == IBV_WR_ATOMIC_FETCH_AND_ADD || opcode == IBV_WR_ATOMIC_CMP_AND_SWP;
        }

        /** Acts on and completes the work requests held since the last poll of the send queue. */
        void actHeld() {
            for (Runnable request; (request = held.poll()) != null; ) {
                request.run();
            }
            readsInFlight = 0;
        }

        private void act(long requestId, int opcode, MemoryRegion region, long offset, int length, long remoteAddress, int remoteKey,
                         long compareAdd, long swap) {
            Mr local = (Mr) region;
            // As an adapter checks a work request's local buffer: registered, in bounds, in this queue pair's protection
            // domain, and writable locally where the adapter writes it (the result of a read or an atomic).
            if (offset < 0 || offset + length > local.memory.byteSize() || regions.get(local.key) != local || local.pd != pd
                    || readOrAtomic(opcode) && (local.access & IBV_ACCESS_LOCAL_WRITE) == 0) {
                fail(requestId, opcode, IBV_WC_LOC_PROT_ERR);
                return;
            }
            if (state == IBV_QPS_ERR) {
                sendQueue.add(new Wc(requestId, IBV_WC_WR_FLUSH_ERR, opcode, 0, number));
                return;
            }
            if (length > pd.device.maxMessageSize) {
                fail(requestId, opcode, IBV_WC_LOC_LEN_ERR);
                return;
            }
            Qp peer = queuePairs.get(destination);
            if (peer == null || peer.state == IBV_QPS_ERR || peer.destination != number) {
                fail(requestId, opcode, IBV_WC_RETRY_EXC_ERR);
                return;
            }
            MemorySegment source = local.memory.asSlice(offset, length);
            switch (opcode) {
                case IBV_WR_SEND -> {
                    long[] receive = peer.receives.poll();
                    if (receive == null) {
                        receiverNotReady++;
                        fail(requestId, opcode, IBV_WC_RNR_RETRY_EXC_ERR);
                        return;
                    }
                    Mr target = regions.get((int) receive[1]);
                    // The receive buffer is checked when a SEND lands in it: registered, writable, in the receiver's domain.
                    if (target == null || length > receive[3] || target.pd != peer.pd || (target.access & IBV_ACCESS_LOCAL_WRITE) == 0) {
                        failBoth(peer, requestId, opcode, IBV_WC_REM_ACCESS_ERR);
                        return;
                    }
                    MemorySegment.copy(source, 0, target.memory, receive[2], length);
                    peer.receiveQueue.add(new Wc(receive[0], IBV_WC_SUCCESS, IBV_WC_RECV, length, peer.number));
                }
                case IBV_WR_RDMA_WRITE, IBV_WR_RDMA_READ, IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_ATOMIC_CMP_AND_SWP -> {
                    int needed = opcode == IBV_WR_RDMA_WRITE ? IBV_ACCESS_REMOTE_WRITE
                            : opcode == IBV_WR_RDMA_READ ? IBV_ACCESS_REMOTE_READ : IBV_ACCESS_REMOTE_ATOMIC;
                    boolean atomic = needed == IBV_ACCESS_REMOTE_ATOMIC;
                    Mr target = regions.get(remoteKey);
                    long at = target == null ? -1 : remoteAddress - target.memory.address();
                    if (!atomic && length > peer.pd.device.maxMessageSize) {
                        failBoth(peer, requestId, opcode, IBV_WC_REM_INV_REQ_ERR);
                        return;
                    }
                    if (target == null || target.pd != peer.pd || (target.access & needed) == 0 || (peer.access & needed) == 0
                            || at < 0 || at + length > target.memory.byteSize() || atomic && (length != 8 || (remoteAddress & 7) != 0)) {
                        failBoth(peer, requestId, opcode, IBV_WC_REM_ACCESS_ERR);
                        return;
                    }
                    if (opcode == IBV_WR_RDMA_WRITE) {
                        MemorySegment.copy(source, 0, target.memory, at, length);
                    } else if (opcode == IBV_WR_RDMA_READ) {
                        MemorySegment.copy(target.memory, at, source, 0, length);
                    } else if (opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
                        source.set(ValueLayout.JAVA_LONG, 0, (long) LONG.getAndAdd(target.memory, at, compareAdd));
                    } else {
                        source.set(ValueLayout.JAVA_LONG, 0, (long) LONG.compareAndExchange(target.memory, at, compareAdd, swap));
                    }
                }
                default -> throw new ErrnoException("ibv_post_send", Errno.EINVAL, "loop0", "opcode " + opcode);
            }
            sendQueue.add(new Wc(requestId, IBV_WC_SUCCESS, opcode, length, number));
        }

        /**
         * A request the responder refused (a remote access error, InfiniBand's class C): the responder
         * answers with a NAK and goes to the error state too, flushing its receives, as rxe's
         * {@code do_class_ac_error} does and an adapter does; only then the requester fails.
         */
        private void failBoth(Qp responder, long requestId, int opcode, int status) {
            responder.toError();
            fail(requestId, opcode, status);
        }

        /** Completes the request with {@code status} and moves the queue pair to the error state, as a real RC queue pair does. */
        private void fail(long requestId, int opcode, int status) {
            sendQueue.add(new Wc(requestId, status, opcode, 0, number));
            toError();
        }

        private void toError() {
            state = IBV_QPS_ERR;
            for (long[] receive; (receive = receives.poll()) != null; ) {
                receiveQueue.add(new Wc(receive[0], IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV, 0, number));
            }
        }

        @Override
        public void close() {
            CountDownLatch hold;
            synchronized (LoopbackVerbs.this) {
                hold = holdDestroy ? destroyRelease : null;
                holdDestroy = false;
                destroyHeld |= hold != null;
            }
            if (hold != null) {
                try {
                    hold.await();
                } catch (InterruptedException e) {
                    throw new AssertionError("interrupted while ibv_destroy_qp was held", e);
                }
                synchronized (LoopbackVerbs.this) {
                    destroyHeld = false;
                }
            }
            synchronized (LoopbackVerbs.this) {
                if (eventsReported != eventsAcknowledged) {
                    throw new IllegalStateException("ibv_destroy_qp(loop0 qp " + number + ") would wait for ever: " + eventsReported
                            + " asynchronous events reported, " + eventsAcknowledged + " acknowledged");
                }
                try {
                    maybeFail("ibv_destroy_qp", "loop0 qp " + number);
                } catch (ErrnoException e) {
                    leftovers.add(this::destroy);
                    throw e;
                }
                destroy();
            }
        }

        private void destroy() {
            pd.device.asyncEvents.removeIf(e -> e.queuePair() == this);
            queuePairs.remove(number);
            open.remove(toString());
        }

        @Override
        public String toString() {
            return "qp " + number;
        }
    }
}
