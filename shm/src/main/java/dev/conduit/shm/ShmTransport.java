package dev.conduit.shm;

import dev.conduit.linux.Errno;
import dev.conduit.linux.ErrnoException;
import dev.conduit.linux.Libc;
import dev.conduit.spi.BestEffortLog;
import dev.conduit.spi.Chunk;
import dev.conduit.spi.ChunkMapping;
import dev.conduit.spi.Cleanup;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.FormatVersions;
import dev.conduit.spi.MappedMemoryFault;
import dev.conduit.spi.EndpointEvents;
import dev.conduit.spi.InvalidHandleException;
import dev.conduit.spi.IpcImporter;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.spi.MessageSink;
import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.PayloadWriter;
import dev.conduit.spi.LongMap;
import dev.conduit.spi.PeerFailedException;
import dev.conduit.spi.PeerFailedException.Reason;
import dev.conduit.spi.RepeatedWarning;
import dev.conduit.spi.Transport;
import dev.conduit.spi.TransportContext;
import dev.conduit.spi.ThreadStart;
import dev.conduit.spi.TransportEndpoint;

import java.io.EOFException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The shared-memory transport of one worker, the same for every plugin that can allocate,
 * export and import shared memory (posix, memfd): the plugin gives its {@link MemoryProvider}
 * and {@link IpcImporter}; this class does the rest.
 *
 * <ul>
 *   <li><b>Receive queue</b>: one {@link ReceiveQueue} per worker, allocated from the plugin's
 *       provider and exported, so a peer maps it exactly as it would import a region.</li>
 *   <li><b>Address</b> (table below): where the queue is, how to map it, the token written in it,
 *       and the worker's lease. Paths are relative to the shared directory.</li>
 *   <li><b>Reachability by proof</b>: {@link #connect} maps the peer's queue with the plugin's
 *       importer — from this process's own view of the shared directory — and finds the address's
 *       token in it. Host ids, namespaces and {@code /proc} are never consulted.</li>
 *   <li><b>Liveness</b> without pids: every worker holds an {@link OwnerLease}; each side watches
 *       the other's ({@link LeaseWatch}) every {@code liveness.interval} while it progresses,
 *       through one descriptor per peer worker that the endpoint to it and the connections it
 *       sends on share ({@link PeerLeases}), looked at once per check. A
 *       receiver that lives but stops progressing while a sender waits on it fails that sender's
 *       endpoint after {@code heartbeat.timeout}. The files of dead peers are reclaimed, at the
 *       check after the one that failed their endpoints, so that the error handlers, which run as
 *       progress() or await() returns, do not wait for it ({@link #checkPeers}), and on the
 *       mapping thread, so that the progress thread does not either
 *       ({@link #reclaimOffTheProgressThread}).</li>
 *   <li><b>Wake-up</b>: a futex word in the queue; works across PID, IPC, UTS, mount and network
 *       namespaces, since it is keyed by the shared mapping, not by any namespace.</li>
 * </ul>
 *
 * <h2>Transport address</h2>
 * <pre>
 * field               encoding                    meaning
 * version             u8 (2)
 * lease               string                      the worker's lease file, relative to the shared directory
 * queue               u16 length + bytes          the plugin's export payload of the queue chunk
 * queue.chunk.length  u64                         the queue chunk's length
 * token               16 bytes                    random, also written in the queue header
 * directory.device    u64                         the shared directory's st_dev    } {@link DirectoryIdentity}: words a
 * directory.inode     u64                         the shared directory's st_ino    } connect that finds no lease,
 * directory.birth     u64                         its stx_btime in ns, or 0        } never decides reachability
 * </pre>
 * Version 2 added the three {@code directory} fields (2026-12-06); an address of version 1, which
 * ends at the token, is still taken, its directory unknown.
 *
 * <h2>Control records</h2> (payloads of queue records, {@link PayloadWriter} encoding)
 * <pre>
 * CONNECT   lease (string): the sender's worker lease, watched by the receiver;
 *           address (u16 length + bytes, at most 1,024): the sender's own transport address ({@link #address()}),
 *           kept while the connection is, for {@link #senderAddress} (since queue version 6)
 * BOUNCE    payload (u16 length + bytes), length (u64): the sender's bounce ring, exported by its plugin
 * CLOSE     (empty): the sender closed the connection
 * </pre>
 *
 * <h2>Closed from another thread</h2>
 * The transport is its owner's thread's, but {@code Conduit.close()} closes a worker whose owner
 * is still inside a call after a second, from its own thread, while that call runs on. Every
 * resource the worker holds is released exactly once, by the close or by that call
 * ({@link #handOff}): what the call hands over (a new sender's connection and its lease watch at
 * CONNECT, a watch opened later, a ring mapping it starts, a ring it adopts, an endpoint it
 * connects with its mapping of the peer's queue and its share of the watch of the peer's lease,
 * an endpoint's first bounce ring, a payload kept in a sender's ring, the unmap of a forgotten connection's ring
 * handed to the mapping thread, {@link #handOverUnmap}, and of a released endpoint's mapping of its peer's
 * queue with the free of its bounce ring, {@link #giveBackOffThisThread}) the close releases if handed over before
 * it (of those unmaps, it runs the ones that thread has not begun and waits for one under way), else the call
 * gives it back and fails with {@link IllegalStateException} (an unmap, it runs itself); what the call
 * takes away (a connection forgotten at a CLOSE, a refusal or a dead sender's reaping; an endpoint
 * it closes, moves to the closing ones or releases; a ring a forgotten connection left mapped for
 * kept payloads, {@link #releaseKept}) is released by whichever of the two takes it first from
 * the tables they share (the
 * connections and the endpoint lists, which change only holding that lock, and the connections
 * only on the owner's thread: the close gives a connection back in place, since the message path
 * looks them up unlocked; the lease watches'
 * table, {@link PeerLeases}, has a lock of its own), an endpoint both close at once one step of
 * its close at a time, each finding what the other did (its CLOSE sent once, its release claimed
 * once and never under the other's step: {@code ShmEndpoint#finishClose}; the close's unlocked
 * look at whether it waits for its peer, or the owner's liveness check, takes what it finds
 * unmapped or closed under it for nothing left to do, and does not fail), and a liveness check's
 * walk of the connections holds it
 * throughout, as any other look at a sender's lease does (for a large message whose ring could
 * not be mapped), so that the close waits for them (the check's look at the endpoints, which walks a
 * copy, fails on one the close released under it with {@code "<plugin> transport is closed"}, not
 * on its closed descriptor; a watch's close waits for a look at it under way: {@link LeaseWatch#close}).
 * All of that happens once per connection, ring, endpoint or check,
 * never per message. The message path itself is not locked, and must not pay for a close: a call
 * under way may still read or write what the close released
 * (this worker's queue, a sender's ring, a peer's queue, an endpoint's bounce ring), and then
 * fails, with the JDK's {@code IllegalStateException} ("Already closed") or a fault
 * ({@code InternalError}); it leaks nothing by it. The files of dead peers that a check had left
 * to the next one may be left to the next worker or pool opened on the directory
 * ({@link #reclaimDue}). A close the owner runs itself, when asked, meets none of this.
 *
 * <h2>Senders named</h2>
 * Every message is delivered with its connection id as the sender's key
 * ({@link MessageSink#onMessage(int, MemorySegment, long, int, MemorySegment, long, long, long)}):
 * an id is never 0, and no two connections this worker keeps share one (a second CONNECT of a kept
 * id refuses it). {@link #senderAddress} gives the address the connection's CONNECT announced. A
 * connection forgotten on the owner's thread (its CLOSE, its sender found dead, a refusal) is told
 * to the sink ({@link MessageSink#onSenderClosed}) once, inside {@link #progress()}, holding no
 * lock ({@link #tellSendersClosed}): one forgotten on a record's path before the next record is
 * read, so that a key is retired before a later connection of the same id delivers; one forgotten
 * under {@link #handOff} (a liveness check's or a reaping's walk) once the walk has left it, and
 * one a liveness check in {@link #await} forgot at the next progress(), as it begins (as a
 * message, a sender's close is told from progress() only). None is told once the worker is
 * closed, forced from another thread or not: its close closes every endpoint. An exception of the
 * sink's is thrown out of the progress() that told it, as one of {@code onMessage} is, once every
 * connection forgotten is told.
 */
public final class ShmTransport implements Transport {

    static final int ADDRESS_VERSION = 2;
    /** The address version before the shared directory's identity: taken, its directory unknown. */
    private static final int ADDRESS_VERSION_WITHOUT_DIRECTORY = 1;
    /** Why a connection was refused ({@link ReceiveQueue#refuse}, {@link #refusal}): {@code inbound.max}. */
    static final int REFUSED_PAST_INBOUND_MAX = 1;
    /** Why a connection was refused: its bounce ring could not be mapped, or not within {@code inbound.bounce.max}. */
    static final int REFUSED_RING = 2;
    /** Why a connection was refused: a message of a live sender's connection this worker does not keep. */
    static final int REFUSED_NOT_KEPT = 3;
    /** Why a connection was refused: a record of it broke the queue protocol. */
    static final int REFUSED_BROKEN_PROTOCOL = 4;
    private static final SecureRandom RANDOM = new SecureRandom();
    /** What to do when a peer worker belongs to another user: the part of a refused connect that says how to connect. */
    private static final String ONE_USER_REMEDY = "run both processes as one user (a container as the host process's uid: docker run "
            + "--user \"$(id -u):$(id -g)\", rootless Podman --userns=keep-id); memfd.allowed.uids and posix.trusted.uids admit other "
            + "users' imports of regions, not their workers; a container with a user namespace of its own (rootless, userns-remap) "
            + "runs as the host uid its uid_map takes its user to, which docker run --user inside it does not change";
    private static final int POLL_LIMIT = 64;
    /** How many closed endpoints may wait at once for their peer to read their CONNECT ({@link #enterConnectWait}). */
    private static final int MAX_CLOSES_AWAITING = 64;
    /** How long await spins on a head claimed and not yet committed, before it sleeps (awaitBlockedHead). */
    private static final long BLOCKED_SPIN_NANOS = 20_000;
    /** The first of await's sleeps while the head stays claimed and uncommitted (awaitBlockedHead). */
    private static final long BLOCKED_PAUSE_FIRST_NANOS = 100_000;
    /**
     * The longest await sleeps at once while the record at the head waits ({@link #sleepBeating}):
     * senders blocked behind it judge this worker by its beats, each with a {@code heartbeat.timeout}
     * of its own, which may be far shorter than this worker's; and a sender's wake after its commit
     * can miss a worker that waits for the head to be committed ({@link #awaitBlockedHead}).
     */
    private static final long HEAD_SLEEP_MAX_NANOS = 1_000_000;

    private final String plugin;
    private final Libc libc;
    private final TransportContext context;
    private final ShmTransportConfig config;
    private final MemoryProvider provider;
    private final IpcImporter importer;
    /**
     * Why a peer under another kernel is not reached through the files this transport maps (their file system is seen by
     * other kernels too, each through a page cache of its own), for the failures such a peer meets; null where one kernel
     * alone sees them or no peer under another is ever connected (memfd: its socket does not cross kernels).
     */
    private final String acrossKernels;
    private final SharedDirectory directory;
    /** Which directory {@link #directory} is, as this worker's address says. */
    private final DirectoryIdentity directoryIdentity;
    private final OwnerLease lease;
    /** The owner of this worker's lease file ({@link OwnerLease#fileOwner}): the user whose workers this one connects with. */
    private final int user;
    private final String leasePrefix;
    private final Chunk queueChunk;
    private final ReceiveQueue queue;
    /** The queue's memory as handlers see it, read-only: made once, so that a handler's {@code Message.payloadBuffer()} makes no view. */
    private final MemorySegment deliveredQueue;
    private final byte[] address;
    /** What every CONNECT of this worker's endpoints carries: made once ("Control records"). */
    private final byte[] connectPayload;
    /** The token written in this worker's queue header, checked at every liveness check. */
    private final byte[] token;
    /**
     * Set once the queue's header is found overwritten: the worker can serve nobody any more, and
     * says so at every call, each time with a new exception (the runtime attaches other failures
     * of a call to the one it throws, which would pile up on a shared one).
     */
    private String queueDamaged;
    private final MessageSink sink;
    private final ReceiveQueue.RecordHandler onRecord = this::onRecord;
    private final LongMap<Inbound> inbound = new LongMap<>();
    /**
     * Connections the owner's thread forgot whose sink is still to be told ({@link #tellSendersClosed}):
     * those forgotten under {@link #handOff} wait for the walk to leave it. Kept, so that telling allocates nothing.
     */
    private long[] sendersClosed = new long[16];
    private int sendersClosedCount;
    /** How many of {@link #sendersClosed} are told already, while they are being told. */
    private int sendersClosedTold;
    /**
     * The inbound connections' ids as the periodic checks iterate them (which may remove some);
     * kept, so a check allocates nothing. One array for {@code checkPeers}, {@code reapDeadSenders}
     * and {@code ownerTagAlive} (which runs after the check's walk): none runs inside another.
     */
    private long[] connections = new long[16];
    /**
     * Bytes of the senders' bounce rings reserved now (bounded by inbound.bounce.max): mapped, being
     * mapped, or waiting for a retry after a shortage.
     */
    private long inboundBounceBytes;
    /**
     * A connection this worker keeps ({@link #inbound}), the one of the last small message, or 0
     * (no connection id is 0): a small message of a connection not kept is dropped, and most are
     * of the same sender as the one before.
     */
    private long keptConnection;
    /** The connection of the last small message dropped as not kept ({@link #dropNotKept}), or 0. */
    private long droppedConnection;
    /** When {@link #dropNotKept} last looked whether a sender lives. */
    private long lastRelisting;
    /**
     * Closed endpoints waiting for their peer to read their CONNECT ({@link #enterConnectWait}). Unlocked: a close forced
     * from another thread changes it only once the worker is closed, when the count bounds nothing (it releases every endpoint).
     */
    private int closesAwaitingConnect;
    /**
     * Maps announced bounce rings off the progress thread, unmaps forgotten connections' rings and
     * reclaims dead peers' files there; made by the first large message or the first reclaim after
     * a death ({@link #mappingThread()}).
     */
    private MappingThread mappingThread;
    /** The mapping the record at the head of the queue waits for, if any: await() sleeps until it is done. */
    private CompletableFuture<?> headWaitsFor;
    /**
     * When the record at the head may try again to have its ring mapped, after no mapping thread
     * could be started (nanoTime), or 0: await() sleeps until then.
     */
    private long headTriesAgainAt;
    /** Whether that mapping is done, made once (await must not allocate). */
    private final java.util.function.BooleanSupplier headRingMapped = () -> {
        CompletableFuture<?> waiting = headWaitsFor;
        return waiting == null || waiting.isDone();
    };
    private long lastReap;
    /** The bytes {@link #touchPayload} read, kept only so that the compiler keeps the reads. */
    private byte touched;
    private final PeerLeases peerLeases;
    private final List<ShmEndpoint> endpoints = new ArrayList<>();
    /** The endpoints as a liveness check walks them ({@link EndpointWalk}): a check releases some. */
    private final EndpointWalk checking = new EndpointWalk();
    /** The closing endpoints as {@link #finishCloses} walks them, while a close waits on its peer. */
    private final EndpointWalk finishing = new EndpointWalk();
    /** The endpoints that hold a large message as {@link #postHeld} walks them, while one is held. */
    private final EndpointWalk posting = new EndpointWalk();

    /**
     * A walk of one of the endpoint lists on the owner's thread: a copy made holding
     * {@link #handOff}, since a close forced from another thread releases endpoints, and the walk's
     * own steps may too; into an array kept from walk to walk, so that a walk allocates nothing (a
     * copy each time was an allocation per progress() while a large message was held, and per check
     * while a close waited on its peer). The walk empties each entry as it takes it, so that the
     * kept array keeps no endpoint; a walk begun inside another (none is known) takes an array of
     * its own.
     */
    private static final class EndpointWalk {
        private ShmEndpoint[] spare = new ShmEndpoint[16];

        /** A copy of {@code list}, which the caller reads holding handOff, ended by a null; to be given back. */
        ShmEndpoint[] copy(List<ShmEndpoint> list) {
            ShmEndpoint[] copy = spare;
            spare = null;
            int n = list.size();
            if (copy == null || copy.length <= n) copy = new ShmEndpoint[Math.max(n + 1, copy == null ? 16 : 2 * copy.length)];
            return list.toArray(copy); // which sets the entry after the last to null
        }

        /** Keeps {@code copy} for the next walk, emptied of what the walk did not take (it threw). */
        void giveBack(ShmEndpoint[] copy) {
            for (int i = 0; i < copy.length && copy[i] != null; i++) copy[i] = null;
            spare = copy;
        }
    }
    /**
     * The connection ids a new connection must not take ({@link OwnerLease#newConnectionId}): those
     * of this worker's endpoints, open or closing, until they are released. A released endpoint's
     * receiver may not have read its CLOSE yet, but reads it before any later record of that id: an
     * endpoint is released once its CLOSE is committed in the receiver's queue, ahead of whatever is
     * claimed there after it, or once no receiver is left that knows the connection (never
     * announced, or the peer gone). One released without a CLOSE while its receiver may live (a
     * close whose look at the peer's lease failed, a peer's queue that faulted or was found
     * overwritten) may still be kept there: its id stays here for as long as this worker lives.
     */
    private final LongMap<Boolean> connectionsInUse = new LongMap<>();
    /** Closed endpoints whose peer still needs something of them (ShmEndpoint#close). */
    private final List<ShmEndpoint> closing = new ArrayList<>();
    /**
     * Endpoints, open or closing, that hold a large message whose record found no room in their
     * peer's queue (ShmEndpoint#hold): each progress() and await() posts what has room. Changed
     * holding {@link #handOff}, as the other lists, since a close forced from another thread
     * releases endpoints.
     */
    private final List<ShmEndpoint> holding = new ArrayList<>();
    private final long livenessNanos;
    private final long unblockNanos;
    private final long heartbeatNanos;
    private long progressCount;
    /** The connection whose large message the sink is being given now (its handler may keep the payload: {@link #keepDelivered}), else null. */
    private Inbound deliveringLarge;
    /**
     * The connections whose bounce rings hold payloads the application keeps ({@link #keepDelivered}),
     * also connections forgotten since, whose mappings stay for those payloads; under {@link #handOff}.
     */
    private final List<Inbound> keepingRings = new ArrayList<>();
    /** Set by the release of a kept payload, on any thread: the next progress() gives its ring's room back ({@link #releaseKept}). */
    private volatile boolean keptReleased;
    /**
     * {@link #progressCount} when {@link #await} last returned {@code true}, and how many awaits
     * in a row have returned {@code true} since with it unchanged: no {@code progress()} between
     * them. await delivers nothing (the runtime's {@code Worker.await} does not progress the
     * transport it sleeps in), so a caller that loops on it alone spins on a waiting message, and
     * its senders judge the worker hung after {@code heartbeat.timeout}, saying so only on their
     * side; this side says it once, at {@value #AWAITS_WITHOUT_PROGRESS_TO_WARN} such awaits (a
     * caller that progresses after each await never comes near: its count starts again at each).
     */
    private long progressCountAtWokenAwait = -1;
    private int wokenAwaitsWithoutProgress;
    private boolean warnedOfAwaitsWithoutProgress;
    public static final int AWAITS_WITHOUT_PROGRESS_TO_WARN = 10_000;
    private long lastLivenessCheck = System.nanoTime();
    /**
     * How many liveness checks there are to one look at this worker's own lease ({@link #checkOwnLease}):
     * the first check looks, then every 64th, 1.3 s apart at the default 20 ms. The look is an
     * fstat (and a monitor) on the thread that calls progress(), and only a WARNING depends on it;
     * at every check it was a third of a check's time while the check's code is not yet compiled
     * (docs/runtime.md, "What runs on the thread that calls progress()").
     */
    public static final int CHECKS_PER_OWN_LEASE_LOOK = 64;
    private int checksToOwnLeaseLook = 1;
    /** Who holds the lease, for {@link #checkOwnLease}'s warning: made once, not at each look. */
    private final String ownLeaseHolder;
    /**
     * Which polls read the clock (a mask of {@link #progressCount}), idle and busy: every 16th idle
     * and 256th busy poll while the calls come faster than {@link #SPACED_POLL_NANOS} apart (a
     * busy-polling loop, where 22 ns of clock on every spin would cost), every poll when they come
     * spaced (a timer, a loop that does other work), where counting to 16 would check a dead peer
     * 16 calls after its death, not a liveness interval. Judged at each read of the clock. Busy
     * polls are bounded by {@link #recordsBeforeClock} as well, which a count of polls is not.
     */
    private int idleClockMask = 15;
    private int busyClockMask = 255;
    /**
     * How many records (a message's handler each, or a control record) may still be handled before
     * the clock is read, at most {@value #POLL_LIMIT}: a poll handles no more than that
     * ({@link #progress()} passes it as the poll's limit), and the poll that brings it to 0 reads
     * the clock, whatever the masks say. So at most 64 handlers run between two reads, as many as
     * one poll of a worker that reads at every poll runs. The pace judged at a read says nothing
     * of the handlers to come: a burst judged fast (polls of a message each, nanoseconds apart)
     * whose handlers then took a millisecond each, 64 to a poll, went 255 polls without a liveness
     * check, 16 s where liveness.interval is 20 ms. A poll cut short by it returns what it handled,
     * and the next goes on; only a burst judged fast is cut so, and its polls rarely hold 64.
     */
    private int recordsBeforeClock = POLL_LIMIT;
    /**
     * Whether the last poll handled nothing. A poll that handles something after it narrows
     * {@link #busyClockMask} to {@link #idleClockMask}: read on a window of idle polls, the pace
     * said nothing of polls that run handlers, and 256 of those (64 messages each, a handler of a
     * millisecond) went 16 s without a liveness check.
     */
    private boolean lastPollIdle;
    private long lastClock = System.nanoTime();
    private long countAtLastClock;
    private static final long SPACED_POLL_NANOS = 1_000;
    /** When a liveness check first found the head blocked at {@link #blockedAt}; 0 when it was not. */
    private long blockedSince;
    /** Whether the last liveness check failed endpoints and left the rest of its work to the next ({@link #checkPeers}). */
    private boolean lastCheckCutShort;
    /**
     * Whether a check failed endpoints and the next check, or close, is to reclaim dead peers' files.
     * Volatile, as {@link #closed}: a close forced from another thread reads it. Best effort: one
     * that misses it (a check under way on the owner's thread sets it after the close read it)
     * leaves the files to the next worker or pool that opens on the directory.
     */
    private volatile boolean reclaimDue;
    /**
     * Set when a reclaim of dead peers' files is handed to the mapping thread
     * ({@link #reclaimOffTheProgressThread}), cleared as it begins there, when the close takes it
     * over (a close drops what that thread has not begun), or when the hand-over fails. One handed
     * over while another waits there is not: the one waiting lists the directory when it runs, and
     * finds them all.
     */
    private final AtomicBoolean reclaimHandedOver = new AtomicBoolean();
    /**
     * Held through a reclaim on the mapping thread, and by the close as it finishes the reclaims: a
     * close waits for one under way there (it uses the shared directory's descriptor, which the close then closes).
     */
    private final Object reclaiming = new Object();
    /** A live sender's record, taken or only claimed, that has held the head for heartbeat.timeout: said, at most once a minute. */
    private final RepeatedWarning headHeldByALiveSender;
    /** Said when a connection of a sender that is gone finds no room under inbound.max: nobody else would say it. */
    private final RepeatedWarning goneSendersPastInboundMax;
    /**
     * An endpoint's look at its peer's lease that fails, failed endpoint or not: it is made at every
     * liveness check (every 20 ms by default) until the peer goes, so a lasting cause is said at
     * most once a minute.
     */
    final RepeatedWarning failedEndpointLeaseChecks;
    /**
     * A closed endpoint's next step that fails (its look at its peer's lease, say): it is tried
     * again at every liveness check, so a lasting cause is said at most once a minute.
     */
    private final RepeatedWarning failedCloses;
    /** The ring position of the head that was blocked since {@link #blockedSince}: a block is one record's. */
    private long blockedAt;
    /**
     * The connection of the last record found taken at the head by a sender this worker keeps no
     * connection of, and the lease a listing found held for it ({@link OwnerLease#heldLeaseOf}),
     * or null: {@link #unknownTakerAlive}.
     */
    private long unknownTaker;
    private String unknownTakerLease;
    /** The head position await last found claimed and uncommitted, and its next sleep there (0: spin first). */
    private long awaitBlockedAt;
    private long awaitBlockedPause;
    /** Whether the head is no longer claimed and uncommitted, made once (await must not allocate). */
    private final java.util.function.BooleanSupplier headUnblocked = this::isHeadUnblocked;
    /** Whether a record waits in the queue, made once (await must not allocate). */
    private final java.util.function.BooleanSupplier recordPending = this::hasRecordPending;
    /**
     * Whether {@link #signal()} was called since a sleep on the head last took it: a wake of the
     * queue's futex is that or a sender's after its commit, and only that ends such a sleep while
     * the head cannot be read ({@link #sleepBeating}). Set before the wake, so a sleep the signal
     * woke sees it; left set when another await returned for the signal, it ends one such sleep
     * early, in vain, and loses nothing.
     */
    private final AtomicBoolean signalled = new AtomicBoolean();
    /** Volatile: a close forced past a stuck owner thread ({@code Conduit.close()}) may run while a progress() still does. */
    private volatile boolean closed;
    /**
     * Orders what the owner's thread hands over to this worker, or takes from it, against a close
     * forced from another thread, so that exactly one of them releases each resource. The close
     * sets {@link #closed} holding this lock, with its copy of the endpoint lists; the owner's thread
     * holds it while it looks at {@code closed} and hands over (a new sender's connection, a lease
     * watch, a ring mapping it starts or a ring it adopts, an endpoint it connects, an endpoint's
     * bounce ring), and while it changes the tables the close walks ({@link #inbound}, an endpoint's
     * move between {@link #endpoints} and {@link #closing}, an endpoint's release). Handed over
     * first, the close finds it (the lock makes the owner's writes visible to the close's later
     * reads); else the owner's thread sees the close and gives back what it holds itself. A flag
     * alone would not do: the owner's write and its read of {@code closed} may pass each other (x86
     * lets a load pass a store), and each side would miss the other. The close holds it only for
     * its steps on the tables, never through an unmap, so that a call of the owner's that forgets a
     * connection meanwhile waits for none. Taken only off the message path: once per connect,
     * connection, ring mapping, CLOSE, refusal, reaping, endpoint close or release, liveness check,
     * and large message held for want of room in its peer's queue ({@link #holding}); never for a
     * small message nor a large one whose ring is mapped and whose record finds room. What this does not cover is said under
     * "Closed from another thread" in the class's javadoc.
     */
    final Object handOff = new Object();
    /** Tests only: the connections the map holds (a close gives them back where they lie: {@link #giveBackConnection}). */
    int connectionsInMap() {
        synchronized (handOff) {
            return inbound.size();
        }
    }

    /** Tests only: this worker's lease, whose release alone is what a kill does to it. */
    OwnerLease lease() {
        return lease;
    }

    /** Tests only: run on the owner's thread as a ring mapping is about to start, before its hand-off (a test holds it there). */
    Runnable beforeRingMapping;

    /**
     * Tests only: run on the owner's thread as a ring mapping is handed to the mapping thread, where
     * a test throws what a mapping thread that cannot start throws.
     */
    Runnable beforeRingHandOver;

    /**
     * Tests only: run on the owner's thread as a reclaim is handed to the mapping thread, where a
     * test throws what a mapping thread that cannot start throws.
     */
    Runnable beforeReclaimHandOver;
    /** Tests only: run at each liveness check, as {@link #checkPeersIfDue} starts it, where a test counts them. */
    Runnable onLivenessCheck;

    /** A payload the application keeps in a sender's bounce ring ({@link #keepDelivered}). */
    private static final class KeptInRing {
        /** The ring's position before the payload: its release can go up to here while the payload is kept. */
        final long start;
        /** Set by the application's close, on any thread; applied by the owner's thread. */
        volatile boolean released;

        KeptInRing(long start) {
            this.start = start;
        }
    }

    /** A sender connected to this worker's queue. */
    private static final class Inbound {
        /** The connection's id, for a failure found where only its Inbound is at hand ({@link #releaseKept}). */
        final long connection;
        final String leaseName;
        /** The sender's transport address, as its CONNECT announced it ({@link #senderAddress}). */
        final byte[] senderAddress;
        /** The watch of the sender's lease (shared by its connections and this worker's endpoint to it: PeerLeases); null while it cannot be opened. */
        LeaseWatch lease;
        /** The sender's announcement of its bounce ring (the plugin's export payload and the ring's length), until it is mapped. */
        byte[] bounceExport;
        long bounceLength;
        /** The ring's mapping while it is under way (MappingThread), for the large message at the head of the queue. */
        CompletableFuture<ChunkMapping> pendingRing;
        /** Whether the ring's length counts against inbound.bounce.max: from the start of its mapping until it is refused or forgotten. */
        boolean budgeted;
        ChunkMapping bounceMapping;
        BounceRing bounce;
        /** Whether an access to the ring may fault ({@link ChunkMapping#mayFault}): its file may be truncated under this worker. */
        boolean ringMayFault;
        /**
         * Up to where this receiver read the ring ({@link BounceRing#follows}): 0, as the sender formatted it, until the first
         * large message. Released up to there too, unless the application keeps a payload of it ({@link #kept}).
         */
        long released;
        /**
         * The payloads of this ring the application keeps, oldest first, or null while it keeps none: the ring is released
         * only up to the start of the oldest, so that releases stay in order. Changed on the owner's thread under handOff.
         */
        java.util.ArrayDeque<KeptInRing> kept;
        /** The queue's tail when the sender was first found dead, else -1: all it ever claimed lies before it. */
        long deadAtTail = -1;
        /** Whether its ring's exporter once refused or reset the connection while its lease was held (a death under way). */
        boolean refusedWhileAlive;
        /** Whether the next try is to be made without a word: that refusal's, once. */
        boolean tryAgainQuietly;
        /** When the next try to map its ring may start, after no mapping thread could be started (nanoTime); 0 when none failed. */
        long startAgainAt;
        /** Whether its lease and rings were given back (under handOff): by the owner's thread, or by a close left in the map. */
        boolean forgotten;

        Inbound(long connection, String leaseName, byte[] senderAddress, LeaseWatch lease) {
            this.connection = connection;
            this.leaseName = leaseName;
            this.senderAddress = senderAddress;
            this.lease = lease;
        }
    }

    /**
     * Opens the transport: takes a lease, allocates and formats the receive queue, exports it.
     * On failure everything taken so far is released.
     */
    public ShmTransport(String plugin, Libc libc, TransportContext context, ShmTransportConfig config,
                        MemoryProvider provider, IpcImporter importer) {
        this(plugin, libc, context, config, provider, importer, null);
    }

    /**
     * Like {@link #ShmTransport(String, Libc, TransportContext, ShmTransportConfig, MemoryProvider, IpcImporter)}, over
     * queues and rings that are files of a file system other kernels may see too: {@code acrossKernels} says so, why a
     * peer under another kernel cannot be reached through them and what to do. A connect refused for a token its queue
     * does not hold and an endpoint failed as hung add it, as their likely cause where the peer runs under another kernel.
     */
    public ShmTransport(String plugin, Libc libc, TransportContext context, ShmTransportConfig config,
                        MemoryProvider provider, IpcImporter importer, String acrossKernels) {
        this.plugin = plugin;
        this.acrossKernels = acrossKernels;
        this.libc = libc;
        this.context = context;
        this.config = config;
        this.provider = provider;
        this.importer = importer;
        this.sink = context.messageSink();
        this.livenessNanos = config.livenessInterval().toNanos();
        this.ownLeaseHolder = plugin + ": this worker";
        this.lastReap = System.nanoTime() - livenessNanos;
        this.lastRelisting = lastReap;
        this.unblockNanos = config.unblockTimeout().toNanos();
        this.heartbeatNanos = config.heartbeatTimeout().toNanos();
        this.headHeldByALiveSender = new RepeatedWarning(context.logger(), java.time.Duration.ofMinutes(1));
        this.goneSendersPastInboundMax = new RepeatedWarning(context.logger(), java.time.Duration.ofMinutes(1));
        this.failedEndpointLeaseChecks = new RepeatedWarning(context.logger(), java.time.Duration.ofMinutes(1));
        this.failedCloses = new RepeatedWarning(context.logger(), java.time.Duration.ofMinutes(1));
        this.leasePrefix = workerLeasePrefix(plugin);
        SharedDirectory dir = null;
        OwnerLease ownLease = null;
        Chunk chunk = null;
        try {
            dir = SharedDirectory.open(libc, context.sharedDirectory(), "shared.dir (CONDUIT_SHARED_DIR)");
            reclaimDeadPeers(dir);
            ownLease = OwnerLease.acquire(libc, dir, leasePrefix, context.logger());
            try {
                chunk = provider.allocate(ReceiveQueue.mappedLength(config.queueCapacity()));
            } catch (ConduitException e) {
                // The provider names the directory and its space; only this says what the chunk is for and which key sizes it.
                throw new ConduitException(plugin + ": cannot create this worker's receive queue (" + plugin + ".queue.size, "
                        + config.queueCapacity() + " bytes): " + e.getMessage(), e);
            }
            byte[] token = new byte[ReceiveQueue.TOKEN_LENGTH];
            RANDOM.nextBytes(token);
            ReceiveQueue q;
            try {
                q = ReceiveQueue.format(chunk.segment(), token);
            } catch (InternalError e) {
                // Formatting touches every page of the ring: a full file system faults here, before anything is published.
                throw new ConduitException(MappedMemoryFaults.describe(e, plugin, "this worker's new receive queue"), e);
            }
            byte[] export = provider.export(chunk);
            DirectoryIdentity identity = DirectoryIdentity.of(libc, dir.fd());
            this.address = identity.writeTo(new PayloadWriter().u8(ADDRESS_VERSION)
                    .string(OwnerLease.leaseName(leasePrefix, ownLease.owner()))
                    .u16(export.length).bytes(export)
                    .u64(chunk.segment().byteSize())
                    .bytes(token))
                    .toByteArray();
            if (address.length > Transport.MAX_ADDRESS_LENGTH) {
                // A receiver refuses a CONNECT carrying it, and the runtime a worker address that would: said here, once.
                throw new ConduitException(plugin + ": this worker's transport address takes " + address.length + " bytes, more than the "
                        + Transport.MAX_ADDRESS_LENGTH + " a transport address may (Transport#address): its memory provider exported the receive "
                        + "queue in " + export.length + " bytes, a bug of the provider");
            }
            this.connectPayload = new PayloadWriter().string(OwnerLease.leaseName(leasePrefix, ownLease.owner()))
                    .u16(address.length).bytes(address)
                    .toByteArray();
            this.token = token;
            this.directory = dir;
            this.directoryIdentity = identity;
            this.lease = ownLease;
            this.user = ownLease.fileOwner(libc);
            this.peerLeases = new PeerLeases(libc, dir, user);
            this.queueChunk = chunk;
            this.queue = q;
            this.deliveredQueue = q.memory().asReadOnly();
        } catch (RuntimeException | Error e) {
            // Each step runs whatever the one before it threw, and what it threw goes with e, which stays the one thrown:
            // a free that could not remove the queue's file skipped the rest, and kept the worker's lease and the
            // provider's locked, with their descriptors and the directory's, for the life of the process.
            Chunk allocated = chunk;
            OwnerLease taken = ownLease;
            SharedDirectory opened = dir;
            if (allocated != null) Cleanup.run(e, () -> provider.free(allocated));
            if (taken != null) Cleanup.run(e, taken::close);
            Cleanup.run(e, provider::close);
            if (opened != null) Cleanup.run(e, opened::close);
            throw e;
        }
    }

    /**
     * Removes what dead workers and providers left in the shared directory: of this plugin, and of
     * the other plugins built on this module ({@link ShmPlugins#LEASE_PLUGINS}). A process that used
     * both (a worker over memfd, a pool of posix holding large regions) dies with files of each, and
     * its peers find the death over one: until 2026-12-06 the other's files (a posix pool's chunks:
     * gigabytes of tmpfs) stayed until a worker or pool of that plugin next opened on the directory.
     * Only the shared directory: posix chunks that {@code posix.dir} puts elsewhere wait for posix.
     */
    private void reclaimDeadPeers(SharedDirectory dir) {
        if (!OwnerLease.reclaimsUnasked(dir, context.logger())) return;
        for (String leasePlugin : ShmPlugins.LEASE_PLUGINS) {
            try {
                OwnerLease.reclaimDead(libc, dir, "conduit-" + leasePlugin);
            } catch (RuntimeException e) {
                warnBestEffort(() -> "could not reclaim dead peers' files (conduit-" + leasePlugin + "-*) in " + dir + ": " + e.getMessage(), e);
            }
        }
    }

    /** A WARNING where a failure to log must cost nothing (inside a record's handler, it would cost the record). */
    private void warnBestEffort(java.util.function.Supplier<String> message) {
        warnBestEffort(message, null);
    }

    /** {@link #warnBestEffort(java.util.function.Supplier)} of a failure, whose stack and causes the record carries. */
    private void warnBestEffort(java.util.function.Supplier<String> message, Throwable failure) {
        BestEffortLog.warn(context.logger(), message, failure);
    }

    @Override
    public byte[] address() {
        return address.clone();
    }

    /**
     * The transport address the sender of connection {@code sender} announced in its CONNECT, a
     * copy (the runtime may keep it), or null when this worker keeps no such connection (never
     * announced, or forgotten: its {@link MessageSink#onSenderClosed} was told, or is told at this
     * call of progress()). On the owner's thread, as every look at the connections.
     *
     * <p>The address is what the sender announced, not proven: a hostile sender, or a process that
     * writes this worker's queue, can name another worker's address it knows, as it could send
     * that address in a payload. Connecting to it proves what any connect proves, that the queue it
     * names is reachable and holds its token ({@link #connect}); not that it is the sender's.
     */
    @Override
    public byte[] senderAddress(long sender) {
        Inbound in = inbound.get(sender);
        // Given back in place by a close forced from another thread (giveBackConnection): nothing is delivered from it.
        if (in == null || in.forgotten) return null;
        return in.senderAddress.clone();
    }

    /**
     * Whether a connection this worker keeps was announced with lease {@code leaseName}: proof that
     * the lease was in this worker's shared directory. Walks the connections; called only by a
     * connect whose peer's lease is missing, on the owner's thread, which alone changes them.
     */
    private boolean keepsConnectionAnnouncedWith(String leaseName) {
        for (long connection : inbound.keys()) {
            Inbound in = inbound.get(connection);
            if (in != null && !in.forgotten && in.leaseName.equals(leaseName)) return true;
        }
        return false;
    }

    /**
     * A connect's answer for a peer whose lease is no longer in the shared directory, where a
     * connection it made to this worker found it ({@link #keepsConnectionAnnouncedWith}): the peer
     * is gone, not elsewhere. A PeerFailedException, as for a dead peer whose lease is still there:
     * an answer to a sender that closed its worker, or died and had its files reclaimed, is a peer
     * failure however it is noticed.
     */
    private PeerFailedException goneFromTheDirectory(String leaseName, ErrnoException notFound) {
        return new PeerFailedException(Reason.UNKNOWN, plugin + ": the peer is gone: its lease " + leaseName + " is no longer in the shared "
                + "directory, where the connection it made to this worker found it (its worker closed, or died and a "
                + "Conduit on the directory reclaimed its files)", notFound);
    }

    /** Whether nothing has the name {@code leaseName} in the shared directory any more ({@code ENOENT}). */
    private boolean leaseIsGone(String leaseName) {
        try {
            directory.status(leaseName);
            return false;
        } catch (ErrnoException e) {
            return e.errnoName().equals("ENOENT");
        }
    }

    /** The CONNECT payload of this worker's connections ({@link ShmEndpoint}): its lease, then its address. Not to be written. */
    byte[] connectPayload() {
        return connectPayload;
    }

    ShmTransportConfig config() {
        return config;
    }

    Libc libc() {
        return libc;
    }

    MemoryProvider provider() {
        return provider;
    }

    String ownLeaseName() {
        return OwnerLease.leaseName(leasePrefix, lease.owner());
    }

    /** This worker's lease: a test starts its count of connections where it needs it ({@link OwnerLease#countConnectionsFrom}). */
    OwnerLease ownLease() {
        return lease;
    }

    String plugin() {
        return plugin;
    }

    /**
     * {@code failure}'s likely cause where the peer runs under another kernel, to end a message with: "{@code . failure:
     * acrossKernels}"; empty where no such peer can be the cause ({@link #acrossKernels} is null).
     */
    String underAnotherKernel(String failure) {
        return acrossKernels == null ? "" : ". " + failure + ": " + acrossKernels;
    }

    /**
     * Why a peer judged dead for a lease nobody holds may live, for {@link #underAnotherKernel}: a lease held under another
     * kernel looks free here where the file system keeps locks to one kernel (OwnerLease#leasesAcrossKernels).
     */
    static final String LEASE_UNDER_ANOTHER_KERNEL = "If the peer runs under another kernel, it may be alive, its lease held there "
            + "and free here, where the file system keeps locks to one kernel (9p; virtiofs unless virtiofsd passes posix locks "
            + "through; NFS mounted nolock)";

    /** The prefix of the leases of {@code plugin}'s workers ({@link OwnerLease#isLeaseOf(String, String)}). */
    private static String workerLeasePrefix(String plugin) {
        return "conduit-" + plugin + "-worker";
    }

    /**
     * The name of the lease of the worker whose {@code plugin} transport address is {@code address} (of either version a
     * connect takes), in the shared directory it names; null when {@code address} is no such address. For conduit perf's
     * server, which judges by that lease whether a server of a Conduit before 2026-12-04, which locked its bootstrap file
     * not at all, still runs: nothing is mapped or connected.
     */
    public static String workerLeaseOf(String plugin, byte[] address) {
        try {
            PayloadReader reader = new PayloadReader(address);
            int version = reader.u8("version");
            if (version != ADDRESS_VERSION && version != ADDRESS_VERSION_WITHOUT_DIRECTORY) return null;
            String leaseName = reader.relativePath("lease");
            return OwnerLease.isLeaseOf(workerLeasePrefix(plugin), leaseName) ? leaseName : null;
        } catch (RuntimeException malformed) {
            return null;
        }
    }

    @Override
    public TransportEndpoint connect(PayloadReader peer, EndpointEvents events) {
        ensureOpen();
        finishCloses();
        int version = peer.u8("version");
        if (version != ADDRESS_VERSION && version != ADDRESS_VERSION_WITHOUT_DIRECTORY) {
            throw peer.invalid("version", FormatVersions.refusal("its " + plugin + " transport address", version, ADDRESS_VERSION, "the peer"));
        }
        String leaseName = peer.relativePath("lease");
        // As a receiver requires of a CONNECT: any other name (a pool's lease, one nothing has) would be taken for a peer
        // whose lease is there or gone, not for an address that was never a worker's.
        if (!OwnerLease.isLeaseOf(leasePrefix, leaseName)) {
            throw peer.invalid("lease", "'" + leaseName + "' is not a " + plugin + " worker lease (" + leasePrefix + "-<owner>.lease)");
        }
        int exportLength = peer.u16("queue.length");
        byte[] export = peer.bytes("queue", exportLength);
        // No worker makes a longer queue: a forged address had this process map what it gave, up to a TiB per connection.
        long queueLength = peer.u64InRange("queue.chunk.length", ReceiveQueue.HEADER_LENGTH + 4096,
                ReceiveQueue.mappedLength(ShmTransportConfig.MAX_QUEUE_SIZE));
        byte[] token = peer.bytes("token", ReceiveQueue.TOKEN_LENGTH);
        DirectoryIdentity peerDirectory = null;
        if (version == ADDRESS_VERSION) {
            peerDirectory = DirectoryIdentity.read(peer);
            peer.end("directory.birth");
        } else {
            peer.end("token");
        }

        LeaseWatch peerLease;
        try {
            // The watch of that worker's lease its connections to this worker use already, if any: one descriptor per peer.
            // A root sender could open another user's worker's files; that worker could never open its lease, and so never
            // tell it alive from dead (OwnerLease#isNoLeaseOf takes it for gone). Workers connect only within one user.
            peerLease = peerLeases.acquire(leaseName, owner -> new ConduitException(plugin + ": cannot connect to the peer: its lease "
                    + directory.path().resolve(leaseName) + " belongs to uid " + Integer.toUnsignedString(owner) + ", this worker's to uid "
                    + Integer.toUnsignedString(user) + userNamespaceNote(UserNamespace.current(), owner, user)
                    + ": workers connect only within one user; " + ONE_USER_REMEDY));
        } catch (ErrnoException e) {
            if (e.errnoName().equals("ENOENT") && keepsConnectionAnnouncedWith(leaseName)) {
                throw goneFromTheDirectory(leaseName, e); // its connection to this worker found that lease in this very directory
            }
            if (e.errnoName().equals("ENOENT") && OwnerLease.reclaimedHere(directory, leaseName)) {
                throw new PeerFailedException(Reason.DIED, plugin + ": the peer is dead: this process removed its files from the shared directory, "
                        + "its lease " + leaseName + " free, when a pool or worker of it opened there or found it dead", e);
            }
            DirectoryIdentity.Match where = peerDirectory == null ? DirectoryIdentity.Match.UNKNOWN : directoryIdentity.compare(peerDirectory);
            if (e.errnoName().equals("ENOENT") && where == DirectoryIdentity.Match.SAME) {
                throw new PeerFailedException(Reason.UNKNOWN, plugin + ": the peer is gone: its lease " + leaseName + " is no longer in the "
                        + "shared directory " + directory.path() + ", the very directory its address names (" + directoryIdentity.describe()
                        + "): its worker closed, or died and a Conduit on the directory reclaimed its files, or something removed them "
                        + "while it lives (a cleanup job: its log then says so, and no peer reaches that address again)", e);
            }
            if (e.errnoName().equals("ENOENT") && where == DirectoryIdentity.Match.OTHER) {
                throw new ConduitException(plugin + ": cannot reach the peer: its address names another shared directory than this "
                        + "process's " + directory.path() + " (shared.dir, CONDUIT_SHARED_DIR), where its lease " + leaseName + " is not "
                        + "found (ENOENT): the peer's directory is " + peerDirectory.describe() + ", this one " + directoryIdentity.describe()
                        + ". " + DirectoryIdentity.oneDirectoryRemedy("shared.dir") + ", or reach a peer on another host through a "
                        + "transport that crosses hosts", e);
            }
            throw new ConduitException(plugin + ": cannot reach the peer: its lease " + directory.path().resolve(leaseName) + " cannot be opened ("
                    + e.errnoName() + "); " + dev.conduit.linux.Errno.remedy(e.errno(), switch (e.errnoName()) {
                        case "EINVAL", "ELOOP" -> "what has that name is no lease (not a regular file): the address is forged, or something else took the name";
                        case "EACCES", "EPERM" -> refusedLease(leaseName);
                        default -> "the peer is gone, or this process sees another shared directory (shared.dir, CONDUIT_SHARED_DIR), "
                                + "or something removed the peer's files while it lives (a cleanup job: the peer's log then says so)";
                    }), e);
        }
        ChunkMapping mapping = null;
        boolean importing = false;
        try {
            if (!peerLease.ownerAlive()) {
                if (peerLease.ownerMarkedClosed()) throw closedMeanwhile(leaseName, null);
                // The watch its connections to this worker share outlives the lease's name: gone from the directory, the peer
                // is told gone as the open's ENOENT tells it (above), where it shares no watch.
                if (keepsConnectionAnnouncedWith(leaseName) && leaseIsGone(leaseName)) throw goneFromTheDirectory(leaseName, null);
                throw new PeerFailedException(Reason.DIED, plugin + ": the peer is dead (its lease " + leaseName + " is not held)"
                        + underAnotherKernel(LEASE_UNDER_ANOTHER_KERNEL));
            }
            importing = true;
            mapping = importer.map(new PayloadReader(export, 0, export.length, "queue.", "Conduit worker address"), queueLength);
            importing = false;
            ReceiveQueue peerQueue;
            try {
                peerQueue = ReceiveQueue.attach(mapping.segment(), token);
            } catch (IllegalStateException e) {
                // Not the queue the address names: a peer restarted has a new lease and queue, so this is an address altered
                // or pieced together, or a header overwritten, and only an address taken from the peer anew helps.
                throw new ConduitException(plugin + ": cannot reach the peer: " + e.getMessage() + (e instanceof ReceiveQueue.OtherLayoutVersion
                        ? "" : "; the chunk its address names (lease " + leaseName + ") is not that worker's receive queue: the address was "
                        + "altered or forged, or put together from two addresses, or a process that maps the queue overwrote its header. "
                        + "Connect with the address the peer's worker gives now (Worker.address().toBytes())" + underAnotherKernel(
                        "If the peer runs under another kernel, its queue's header may not have reached this one at all")), e);
            }
            if (peerQueue.isClosing()) throw readsNothingMore(peerQueue, leaseName);
            // Not an id this worker's count came round to while it is still taken: the receiver would take the two
            // connections for one (a second CONNECT refuses it), or refuse the new one at once (listed as refused).
            long connection = lease.newConnectionId(id -> connectionsInUse.get(id) != null || peerQueue.refusalOf(id) != 0);
            ShmEndpoint endpoint = new ShmEndpoint(this, peerQueue, mapping, peerLease, events, connection);
            synchronized (handOff) {
                // Closed from another thread meanwhile (Conduit.close() past an owner still in this call): the close walks
                // only the endpoints handed over before it, so this one's mapping of the peer's queue and its watch of the
                // peer's lease are given back below, or they would stay for the process's life.
                if (closed) throw closedError();
                // The endpoint holds the mapping and the watch once it is among the endpoints, and the catches below give them
                // back: so that goes last, and a failure before it (out of memory) leaves nothing to release twice.
                connectionsInUse.put(connection, Boolean.TRUE);
                try {
                    endpoints.add(endpoint);
                } catch (RuntimeException | Error notAdded) {
                    connectionsInUse.remove(connection);
                    throw notAdded;
                }
            }
            return endpoint;
        } catch (RuntimeException | InternalError failure) {
            // A peer killed after the look above fails the import of its queue ("producer gone": its fd server's socket
            // reset): that is its death, which a caller handling PeerFailedException (an answer's replyEndpoint()) must be
            // told as one, not as an importer's error naming pools and timeouts.
            // So is the end of its orderly close, which frees its queue before it releases its lease (the lease held or
            // not by now): it said the importer failed, or that the peer died.
            PeerFailedException died = null;
            PeerFailedException closedMeanwhile = null;
            if (failure instanceof ConduitException c && !(c instanceof PeerFailedException)) {
                try {
                    if (peerLease.ownerMarkedClosed()) {
                        closedMeanwhile = closedMeanwhile(leaseName, c);
                    } else if (!peerLease.ownerAlive()) {
                        died = new PeerFailedException(Reason.DIED, plugin + ": the peer died while this worker connected to it (its lease "
                                + leaseName + " is no longer held): " + c.getMessage() + underAnotherKernel(LEASE_UNDER_ANOTHER_KERNEL), c);
                    }
                } catch (RuntimeException lookFailure) {
                    // A look that fails (flock: ENOLCK) proves no death: the connect's own failure is what it says, and what it
                    // took of the peer is still given back below (thrown, the look left the mapping and the watch's descriptor).
                    c.addSuppressed(lookFailure);
                }
            }
            giveBack(mapping, peerLease, died != null ? died : closedMeanwhile != null ? closedMeanwhile : failure);
            if (closedMeanwhile != null) throw closedMeanwhile; // its close removes its files
            // Proven dead: its queue, leases and socket need not wait for the next worker or pool on the directory. One that
            // reads nothing more still lives, and its close removes its files.
            if (died != null || failure instanceof PeerFailedException p && p.reason() != Reason.CLOSED && p.reason() != Reason.DAMAGED) {
                reclaimDeadPeers(directory);
            }
            if (died != null) throw died;
            // A posix queue file truncated after the importer checked its length: the first read of its header faults.
            if (failure instanceof InternalError fault) {
                throw new ConduitException(plugin + ": cannot reach the peer: " + MappedMemoryFaults.describe(fault, plugin,
                        "its receive queue (lease " + leaseName + ")"), fault);
            }
            if (importing && failure instanceof ConduitException c && !(c instanceof PeerFailedException)
                    && !(c instanceof InvalidHandleException)) {
                // The importer speaks of a producer and its export: here they are the peer's worker and its receive queue
                // ("the producer's fd server ... did not answer" told an operator nothing of the worker it connected to).
                throw new ConduitException(plugin + ": cannot map the peer's receive queue, which its worker exports as a producer "
                        + "exports a region: " + c.getMessage(), c);
            }
            throw failure;
        } catch (Throwable failure) {
            // An Error (memfd's exchange for a virtual thread, made on a new platform thread, at the process's thread limit) or
            // an importer's checked exception (another JVM language's): nothing of the peer's to tell, thrown as it is.
            giveBack(mapping, peerLease, failure);
            throw failure;
        }
    }

    /**
     * The refusal of a connect that found the peer's receive queue gone, or its lease free, once
     * the peer's close had marked its lease ({@link OwnerLease#markClosed}): its worker closed in
     * the meantime, in order, as one whose queue says so ({@link #readsNothingMore}).
     */
    private PeerFailedException closedMeanwhile(String leaseName, ConduitException importFailure) {
        return new PeerFailedException(Reason.CLOSED, plugin + ": the peer worker closed while this worker connected to it: its close "
                + "had freed its receive queue (its lease " + leaseName + " says so); connect to the worker that takes its place, at "
                + "the address that one gives" + (importFailure == null ? "" : " (" + importFailure.getMessage() + ")"), importFailure);
    }

    /**
     * The refusal of a connect to a peer whose queue says it reads nothing more: its worker began to
     * close (the close marks the queue closing first, and frees it and releases the lease last), or
     * found its queue's header overwritten. Connected, its first send would fail.
     */
    private PeerFailedException readsNothingMore(ReceiveQueue peerQueue, String leaseName) {
        if (peerQueue.isDamaged()) {
            return new PeerFailedException(Reason.DAMAGED, plugin + ": the peer worker reads nothing more: it found its receive queue's "
                    + "header overwritten by a process that maps the queue (its lease " + leaseName + "; its worker's progress() said "
                    + "what changed)");
        }
        return new PeerFailedException(Reason.CLOSED, plugin + ": the peer worker closed: it marked its receive queue closing, and reads "
                + "nothing more (its lease " + leaseName + "); connect to the worker that takes its place, at the address that one gives");
    }

    /**
     * Gives back what a connect that failed with {@code failure} took of the peer: the mapping of
     * its queue, when made, and its use of the watch of the peer's lease, which otherwise stays
     * counted in {@link #peerLeases}, its descriptor open, for the process's life (the worker's
     * close gives back only what its endpoints hold). A step's own failure goes into
     * {@code failure}, suppressed.
     */
    private void giveBack(ChunkMapping mapping, LeaseWatch peerLease, Throwable failure) {
        if (mapping != null) Cleanup.run(failure, mapping::close);
        Cleanup.run(failure, () -> peerLeases.release(peerLease));
    }

    @Override
    public int progress() {
        ensureOpen();
        tellSendersClosed(); // those a liveness check in await(), or in a progress() that threw, forgot
        // Only this poll's record at the head may say it waits (a peer may have rewritten the one that did).
        headWaitsFor = null;
        headTriesAgainAt = 0;
        int handled;
        try {
            if (keptReleased) releaseKept();
            handled = queue.poll(onRecord, recordsBeforeClock);
        } catch (InternalError e) {
            throw new ConduitException(MappedMemoryFaults.describe(e, plugin, "this worker's receive queue or a sender's bounce ring"), e);
        } catch (RuntimeException e) {
            // A large message waits for a shortage of descriptors to pass, a peer wrote what no sender writes and the queue
            // went past it, or a record broke the protocol and its connection was refused (or a kept payload's ring
            // faulted): this worker is not hung, so it beats (senders waiting on its full queue keep their messages
            // queued), watches its peers and finishes its endpoints' closes. Until 2026-12-07 a broken record's throw did
            // none of it (ShmTransportTest#aProgressThatThrowsForABrokenRecordStillBeats). Neither step's failure (a close
            // from another thread unmapped the queue meanwhile) takes the place of what the caller is told.
            RuntimeException thrown = e instanceof ReceiveQueue.RecordNotReady notReady ? notReady.reason() : e;
            Cleanup.run(thrown, () -> queue.beat(++progressCount));
            Cleanup.run(thrown, this::checkPeersIfDue);
            throw thrown;
        }
        queue.beat(++progressCount);
        if (!holding.isEmpty()) postHeld();
        int clockMask;
        if (handled == 0) {
            lastPollIdle = true;
            clockMask = idleClockMask;
        } else {
            if (lastPollIdle) {
                // A burst after idle polls: the pace that set busyClockMask may be the idle spin's, and each of the burst's
                // polls runs handlers. Read the clock as often as idle polls do until a read judges the burst's own pace.
                lastPollIdle = false;
                busyClockMask = idleClockMask;
            }
            // 64 handlers since the last read: the next may take a millisecond each, whatever the pace judged so far.
            clockMask = (recordsBeforeClock -= handled) == 0 ? 0 : busyClockMask;
        }
        // The clock is read every 16th idle poll (and every 256th busy one, or 64th handler) of a busy-polling worker, not
        // on every spin.
        if ((progressCount & clockMask) == 0) {
            handled += checkPeersIfDue();
            tellSendersClosed(); // those the check forgot, now that it left the lock
        }
        return handled;
    }

    /**
     * Keeps a large payload in its sender's bounce ring: its room, and the room of every later
     * payload of that ring, is released only once it is closed, in order, at the next progress()
     * ({@link #releaseKept}); the sender's large messages meanwhile wait for room (backpressure).
     * Should the connection end first (CLOSE, the sender's death, a refusal), the ring stays mapped
     * until its last kept payload is closed. A payload inline in the queue is not kept (null: the
     * runtime copies it): its record is released with the queue's head, which every sender waits on.
     */
    @Override
    public Runnable keepDelivered() {
        Inbound in = deliveringLarge;
        if (in == null) return null;
        KeptInRing kept = new KeptInRing(in.released);
        synchronized (handOff) { // a close forced from another thread walks keepingRings
            if (closed) throw closedError();
            if (in.kept == null) {
                in.kept = new java.util.ArrayDeque<>();
                keepingRings.add(in);
            }
            in.kept.add(kept);
        }
        return () -> releaseLater(kept);
    }

    /** A kept payload's release, on any thread: marked for the owner's thread, which alone writes the ring's release. */
    private void releaseLater(KeptInRing kept) {
        kept.released = true;
        keptReleased = true;
        if (closed) return;
        try {
            signal(); // a worker asleep in await: its senders may wait for this room
        } catch (RuntimeException e) {
            // Closed meanwhile, or the queue faulted: the next progress() reports it; the release is marked all the same.
        }
    }

    /**
     * Releases the rings' room of the kept payloads closed since the last call, up to the oldest
     * still kept of each ring, and unmaps the ring of a forgotten connection once none of its
     * payloads is kept any more. The owner's thread, at the start of progress(). A ring whose file
     * was truncated under this worker faults at its release: its connection is refused, the other
     * rings are released all the same, and the first fault is thrown once they are.
     *
     * @throws ConduitException naming the connection of the first ring that faulted
     */
    private void releaseKept() {
        keptReleased = false;
        List<ChunkMapping> unmap = null;
        List<Inbound> faulted = null;
        ConduitException failure = null;
        synchronized (handOff) {
            if (closed) return; // the close unmapped every ring
            for (int i = keepingRings.size() - 1; i >= 0; i--) {
                Inbound in = keepingRings.get(i);
                while (!in.kept.isEmpty() && in.kept.peekFirst().released) in.kept.pollFirst();
                long releaseTo = in.kept.isEmpty() ? in.released : in.kept.peekFirst().start;
                if (in.kept.isEmpty()) {
                    in.kept = null;
                    keepingRings.remove(i);
                }
                if (!in.forgotten) {
                    InternalError fault = releaseRing(in, releaseTo);
                    if (fault != null) {
                        // Refused once the walk has left the lock (the sink is told of it holding none): the rings of the
                        // other senders, walked on, are no less theirs for this one's truncation.
                        if (faulted == null) faulted = new ArrayList<>();
                        faulted.add(in);
                        ConduitException unreleased = unreleasedRing(in, fault);
                        if (failure == null) failure = unreleased;
                        else failure.addSuppressed(unreleased);
                    }
                } else if (in.kept == null && in.bounceMapping != null) {
                    // Its connection ended while payloads were kept, and left the mapping to them (giveBackConnection).
                    releaseBudget(in);
                    if (unmap == null) unmap = new ArrayList<>();
                    unmap.add(in.bounceMapping);
                    in.bounceMapping = null;
                }
            }
        }
        if (unmap != null) {
            for (ChunkMapping mapping : unmap) {
                if (!handOverUnmap(mapping)) unmapQuietly(mapping); // closed since: the close no longer saw it
            }
        }
        if (faulted != null) {
            for (Inbound in : faulted) {
                // One refusal that fails (the sink's, a lease's close) keeps neither the fault nor the other refusals from coming.
                Cleanup.run(failure, () -> refuseRingOf(in));
            }
            throw failure;
        }
    }

    /**
     * Gives {@code in}'s ring room back up to {@code position} ({@link BounceRing#release}): the
     * fault of a ring whose file was truncated under this worker, else null. The fault of a
     * compiled write is made to come out here, not at a later safepoint past the caller's lock.
     */
    private InternalError releaseRing(Inbound in, long position) {
        try {
            in.bounce.release(position);
            if (in.ringMayFault) libc.deliverPendingFaults();
            return null;
        } catch (InternalError fault) {
            return fault;
        }
    }

    /**
     * The failure of a ring that faulted as its room was given back ({@link #releaseRing}), naming
     * its connection, which {@link #refuseRingOf} refuses: its room can no longer be given back,
     * nor its later large messages read.
     */
    private ConduitException unreleasedRing(Inbound in, InternalError fault) {
        return new ConduitException(plugin + ": could not give back the room of the payloads read from the bounce ring of connection "
                + Long.toHexString(in.connection) + ": " + MappedMemoryFaults.describe(fault, plugin, "its bounce ring")
                + "; the connection is refused: its later messages are dropped, and its endpoint fails at the sender's next "
                + "liveness check", fault);
    }

    /** Refuses {@code in}'s connection for its ring, unless a refusal or the worker's close forgot it already. */
    private void refuseRingOf(Inbound in) {
        if (!closed && inbound.get(in.connection) == in) refuseConnection(in.connection, REFUSED_RING);
    }

    /**
     * An endpoint's own look at its peer ({@link ShmEndpoint#checkPeer()}, the runtime's keepalive)
     * failed it: the next {@link #checkPeers} reclaims the dead peer's files, as after a failure it
     * found itself.
     */
    void peerFoundFailed() {
        reclaimDue = true;
    }

    /** Gives back an endpoint's share of the watch of its peer's lease ({@link PeerLeases}): the last user closes it. */
    void releasePeerLease(LeaseWatch watch) {
        peerLeases.release(watch);
    }

    /** Checks peers ({@link #checkPeers}) when a liveness interval has passed since the last check; the events found. */
    private int checkPeersIfDue() {
        long now = System.nanoTime();
        boolean spaced = now - lastClock > (progressCount - countAtLastClock) * SPACED_POLL_NANOS;
        idleClockMask = spaced ? 0 : 15;
        busyClockMask = spaced ? 0 : 255;
        recordsBeforeClock = POLL_LIMIT;
        lastClock = now;
        countAtLastClock = progressCount;
        if (now - lastLivenessCheck < livenessNanos) return 0;
        lastLivenessCheck = now;
        if (onLivenessCheck != null) onLivenessCheck.run();
        return checkPeers(now);
    }

    private void onRecord(MemorySegment m, long offset, int type, int length) {
        if (length < ReceiveQueue.RECORD_HEADER) {
            // Only padding may be shorter than a record header; the fields of this one would lie past it (or past the ring).
            String what = "record of type " + type + " has " + length + " bytes, less than the " + ReceiveQueue.RECORD_HEADER
                    + "-byte record header";
            throw length >= ReceiveQueue.CONNECTION + 8 ? brokenProtocol(m.get(ValueLayout.JAVA_LONG, offset + ReceiveQueue.CONNECTION), what)
                    : protocolError(0, what);
        }
        // Every record names its sender's connection, never 0 (OwnerLease#newConnectionId): 0 is what keptConnection holds
        // when it names none, and no key of the connections' map.
        long connection = m.get(ValueLayout.JAVA_LONG, offset + ReceiveQueue.CONNECTION);
        if (connection == 0) throw protocolError(0, "a record of connection 0, which no sender has (record type " + type + ")");
        if (type == ReceiveQueue.MSG) {
            // The path of every small message: the fewest loads, and a map lookup only when the sender changes.
            if (connection != keptConnection) {
                if (inbound.get(connection) == null) {
                    dropNotKept(connection);
                    return;
                }
                keptConnection = connection;
            }
            long idAndHeader = m.get(ValueLayout.JAVA_LONG, offset + ReceiveQueue.MESSAGE_ID);
            int headerLength = ReceiveQueue.secondInt(idAndHeader);
            long payloadLength = m.get(ValueLayout.JAVA_LONG, offset + ReceiveQueue.PAYLOAD_SIZE);
            long body = length - ReceiveQueue.RECORD_HEADER;
            if (headerLength < 0 || payloadLength < 0 || headerLength > body || payloadLength > body - headerLength) {
                throw brokenProtocol(connection, "message of " + headerLength + " + " + payloadLength + " bytes in a record of " + length);
            }
            long start = offset + ReceiveQueue.RECORD_HEADER;
            sink.onMessage(ReceiveQueue.firstInt(idAndHeader), deliveredQueue, start, headerLength, deliveredQueue, start + headerLength,
                    payloadLength, connection);
        } else {
            onControlOrLarge(m, offset, type, length, connection);
        }
    }

    private void onControlOrLarge(MemorySegment m, long offset, int type, int length, long connection) {
        switch (type) {
            case ReceiveQueue.LARGE -> {
                Inbound in = inbound.get(connection);
                if (in == null) {
                    dropNotKept(connection); // as a small message's
                    return;
                }
                if (in.bounce == null && !mapBounceOrRefuse(connection, in)) {
                    forgetConnection(connection); // its sender died: its later messages go with this one
                    tellSendersClosed();
                    return;
                }
                int id = m.get(ValueLayout.JAVA_INT, offset + ReceiveQueue.MESSAGE_ID);
                int headerLength = m.get(ValueLayout.JAVA_INT, offset + ReceiveQueue.HEADER_SIZE);
                long payloadLength = m.get(ValueLayout.JAVA_LONG, offset + ReceiveQueue.PAYLOAD_SIZE);
                long bounceOffset = m.get(ValueLayout.JAVA_LONG, offset + ReceiveQueue.BOUNCE_OFFSET);
                long bounceEnd = m.get(ValueLayout.JAVA_LONG, offset + ReceiveQueue.BOUNCE_END);
                if (headerLength < 0 || headerLength > length - ReceiveQueue.RECORD_HEADER
                        || !in.bounce.follows(in.released, bounceEnd, bounceOffset, payloadLength)) {
                    throw brokenProtocol(connection, "large message of " + payloadLength + " bytes at bounce offset " + bounceOffset
                            + " ending at ring position " + bounceEnd + " after a release at " + in.released);
                }
                if (in.ringMayFault) touchPayload(connection, in, bounceOffset, payloadLength);
                deliveringLarge = in;
                try {
                    sink.onMessage(id, deliveredQueue, offset + ReceiveQueue.RECORD_HEADER, headerLength, in.bounce.delivered(), bounceOffset,
                            payloadLength, connection);
                } finally {
                    deliveringLarge = null;
                    in.released = bounceEnd;
                    // Behind a kept payload, this one's room waits for it (releaseKept); the sender is told it was read, so that
                    // it does not take the ring for one this worker could not map.
                    if (in.kept == null) in.bounce.release(bounceEnd);
                    else in.bounce.markRead(bounceEnd);
                }
            }
            case ReceiveQueue.CONNECT -> {
                String leaseName;
                byte[] senderAddress;
                try {
                    PayloadReader r = control(m, offset, length, CONNECT_PAYLOAD_MAX, "connect.");
                    leaseName = r.relativePath("lease");
                    int addressLength = r.u16("address.length");
                    if (addressLength > Transport.MAX_ADDRESS_LENGTH) {
                        throw r.invalid("address.length", addressLength + " exceeds the " + Transport.MAX_ADDRESS_LENGTH
                                + " bytes a transport address may take");
                    }
                    senderAddress = r.bytes("address", addressLength);
                    r.end("address");
                } catch (InvalidHandleException e) {
                    // Thrown bare, it left the connection neither kept nor refused: its later messages were dropped as not
                    // kept, and its sender told only by a relisting.
                    throw brokenProtocol(connection, "connection announcement: " + e.getMessage());
                }
                if (inbound.get(connection) != null) throw brokenProtocol(connection, "connection announced twice");
                if (!OwnerLease.isLeaseOf(leasePrefix, leaseName, connection)) {
                    // Its liveness would be judged by whatever has that name: a socket, a link to a live worker's lease.
                    throw brokenProtocol(connection, "connection announced with lease " + PayloadReader.printable(leaseName)
                            + ", which is no lease " + leasePrefix + "-<owner>.lease of the owner "
                            + String.format("%08x", connection >>> 32) + " that made the connection");
                }
                if (queue.refusalOf(connection) != 0) {
                    // Kept anew, its messages after the refusal would follow the hole the refusal made. Listed already: no
                    // listing to spend. (A refusal 128 others pushed off the list is not known here any more.)
                    throw protocolError(connection, "connection announced again after this worker refused it, which no sender does: "
                            + "a process that maps this worker's queue wrote it; the connection stays refused");
                }
                LeaseWatch watch;
                boolean gone = false;
                try {
                    watch = peerLeases.acquire(leaseName);
                } catch (ErrnoException e) {
                    watch = null;
                    if (OwnerLease.isNoLeaseOf(directory, leaseName, user, e)) {
                        // The sender closed its worker, or died, after sending (or its lease never was one): what it sent before
                        // is delivered, and the connection forgotten once the head passes it (checkPeers finds no lease).
                        gone = true;
                        BestEffortLog.log(context.logger(), System.Logger.Level.DEBUG, () -> "connection from a peer that is already gone: "
                                + e.getMessage(), null);
                    } else {
                        // Out of descriptors, say. Its messages need none; its death is noticed once the lease can be opened
                        // (senderAlive). Only DEBUG, and best effort: out of descriptors, formatting a log record may itself fail
                        // (the JDK loads its time-zone data), and thrown here that failure consumed this CONNECT unkept.
                        BestEffortLog.log(context.logger(), System.Logger.Level.DEBUG, () -> plugin + ": cannot watch the lease of a new "
                                + "sender " + directory.path().resolve(leaseName) + " yet: " + e.getMessage() + "; its messages are "
                                + "delivered, and its death is noticed once the lease can be opened", null);
                    }
                }
                // A sender is free to connect again and again; each connection kept costs heap and may map a ring.
                if (inbound.size() >= config.inboundMaximum()) {
                    try {
                        reapDeadSenders();
                    } catch (RuntimeException | Error e) {
                        // A look at another sender's lease that failed, or a close forced from another thread: no Inbound holds
                        // this watch yet, and nothing else would give it back (its descriptor would stay open for good).
                        if (watch != null) peerLeases.release(watch);
                        throw e;
                    }
                }
                if (inbound.size() >= config.inboundMaximum()) {
                    if (gone) {
                        // Nobody to tell, and no listing to spend: its sender closed its worker, or died, after sending.
                        String key = ShmTransportConfig.inboundMaxKey(plugin);
                        goneSendersPastInboundMax.log(() -> plugin + ": dropped the messages of connection " + Long.toHexString(connection)
                                + " of a sender that closed its worker, or died, before this worker read them (its lease " + leaseName
                                + " is gone): this worker keeps " + inbound.size() + " connections from senders, the most " + key
                                + " allows. Raise " + key + ", or have senders close the endpoints they no longer use");
                        return;
                    }
                    if (watch != null) peerLeases.release(watch);
                    refuseConnection(connection, REFUSED_PAST_INBOUND_MAX);
                    String key = ShmTransportConfig.inboundMaxKey(plugin);
                    throw new ConduitException(plugin + ": refused connection " + Long.toHexString(connection) + " of the sender "
                            + "with lease " + leaseName + ": this worker keeps " + inbound.size() + " connections from senders, "
                            + "the most " + key + " allows. Its messages are dropped, and its endpoint fails at the sender's next "
                            + "liveness check. Raise " + key + ", or have senders close the endpoints they no longer use");
                }
                synchronized (handOff) {
                    if (!closed) {
                        inbound.put(connection, new Inbound(connection, leaseName, senderAddress, watch));
                        return;
                    }
                    // Closed from another thread meanwhile (Conduit.close() past an owner still in this call): the close forgets
                    // only the connections handed over before it (handOff), so this one's lease watch is given back here, or
                    // its descriptor would stay open for the process's life.
                    if (watch != null) peerLeases.release(watch);
                }
                throw closedError();
            }
            case ReceiveQueue.BOUNCE -> {
                Inbound in = inbound.get(connection);
                if (in == null) return; // sender already gone, or its connection refused (see CONNECT)
                if (in.bounce != null || in.bounceExport != null) {
                    throw brokenProtocol(connection, "bounce ring announced twice");
                }
                byte[] export;
                long ringLength;
                try {
                    PayloadReader r = control(m, offset, length, BOUNCE_PAYLOAD_MAX, "bounce.");
                    export = r.bytes("payload", r.u16("payload.length"));
                    // No sender makes a longer one (bounce.size): 1 TiB was taken, each a TiB of this worker's address space.
                    ringLength = r.u64InRange("length", BounceRing.HEADER_LENGTH + 4096,
                            BounceRing.mappedLength(ShmTransportConfig.MAX_BOUNCE_SIZE));
                    r.end("length");
                } catch (InvalidHandleException e) {
                    // As a CONNECT's: thrown bare, it left the connection kept without a ring, its next large message
                    // refused as one before any announcement, which named the wrong record.
                    throw brokenProtocol(connection, "bounce ring announcement: " + e.getMessage());
                }
                // Mapped when its first large message is at the head of the queue (mapBounce).
                in.bounceExport = export;
                in.bounceLength = ringLength;
            }
            case ReceiveQueue.CLOSE -> {
                forgetConnection(connection);
                tellSendersClosed();
            }
            default -> throw brokenProtocol(connection, "unknown record type " + type);
        }
    }

    /**
     * Starts mapping the bounce ring of {@code in} off this thread ({@link MappingThread}: a memfd
     * sender's fd server may take {@code memfd.connect.timeout} to answer), once its first large
     * message is at the head of the queue, which waits for it; within this worker's budget of
     * mapped rings ({@code inbound.bounce.max}), reserved now and kept while the ring is mapped.
     * Only the message at the head starts a mapping: announcements alone cost nothing but their
     * bytes, however many a sender makes.
     *
     * @return false when the ring does not fit the budget, or its own sender turned out dead
     *         ({@code inbound.get(connection) != in})
     * @throws ReceiveQueue.RecordNotReady when no mapping thread could be started: the record stays at the head, and
     *                                     {@link #mapBounce} starts another try a liveness interval later
     */
    private boolean startMapping(long connection, Inbound in, long delayNanos) {
        if (beforeRingMapping != null) beforeRingMapping.run();
        if (!in.budgeted) {
            // A sender may announce a ring of up to a TiB on every connection: mapped, they would use up the address space.
            if (!fitsBudget(in)) {
                reapDeadSenders();
                if (inbound.get(connection) != in || !fitsBudget(in)) return false;
            }
            inboundBounceBytes += in.bounceLength;
            in.budgeted = true;
        }
        CompletableFuture<ChunkMapping> ring;
        try {
            synchronized (handOff) {
                // A close from another thread that came first found no mapper to shut down, or a mapper and no mapping of this
                // connection to cancel: a mapper made or a mapping started now would map a ring nobody unmaps, for the life of
                // the process. So nothing is started; one started before the close is the close's (handOff).
                if (closed) throw closedError();
                if (beforeRingHandOver != null) beforeRingHandOver.run();
                ring = mappingThread().map(importer, in.bounceExport, in.bounceLength, delayNanos);
                in.pendingRing = ring;
            }
        } catch (OutOfMemoryError noThread) {
            // The mapping thread could not start (Thread.start: "unable to create native thread"), and nothing was handed
            // over. A shortage that passes, as one of descriptors does: refused, the connection lost this message and every
            // later one, and its sender's endpoint failed. So the record waits at the head, its budget still reserved.
            in.startAgainAt = headTriesAgainAt = (System.nanoTime() + livenessNanos) | 1; // never 0, which means no wait
            throw new ReceiveQueue.RecordNotReady(ThreadStart.failed(plugin + ": cannot map the bounce ring of connection "
                    + Long.toHexString(connection) + " to read its large message, which waits at the head of this worker's "
                    + "receive queue with every message behind it; another try starts every liveness.interval", noThread));
        }
        // This worker may sleep in await() meanwhile, its next record waiting for this ring.
        ring.whenComplete((mapping, failure) -> wakeSelf());
        return true;
    }

    /** Wakes this worker from await(); called on the ring mapper's thread, perhaps after the worker closed. */
    private void wakeSelf() {
        try {
            queue.signal(libc);
        } catch (RuntimeException | InternalError closedMeanwhile) {
            // Nothing to wake: the queue's memory went with the worker.
        }
    }

    private boolean fitsBudget(Inbound in) {
        return in.bounceLength <= config.inboundBounceMaximum() - inboundBounceBytes;
    }

    private String overBudget(Inbound in) {
        String key = ShmTransportConfig.inboundBounceMaxKey(plugin);
        return "this worker maps " + inboundBounceBytes + " bytes of senders' bounce rings, and this one's " + in.bounceLength
                + " would take that past " + key + " (" + config.inboundBounceMaximum() + "). Raise " + key + ", or lower the senders' " + plugin + ".bounce.size, or have them close the "
                + "endpoints they no longer use";
    }

    /**
     * When a bound is reached: forgets the connections of senders that died, at once, so that
     * their share of {@code inbound.max} and {@code inbound.bounce.max} goes to live senders, and
     * reclaims their files. ({@link #checkPeers} waits for an empty queue instead, so that what
     * dead senders left in it is still delivered; the messages of the connections forgotten here
     * that are still in the queue are dropped, and said so.) At most once per liveness
     * interval: it checks every sender's lease, and a live sender can make the bound be hit.
     */
    private void reapDeadSenders() {
        long now = System.nanoTime();
        if (now - lastReap < livenessNanos) return;
        lastReap = now;
        int reaped = 0;
        try {
            synchronized (handOff) { // the close, forced from another thread, forgets connections too: not in this walk
                if (closed) throw closedError();
                int senders = inbound.size();
                connections = inbound.keys(connections);
                for (int i = 0; i < senders; i++) {
                    long connection = connections[i];
                    if (!senderAlive(inbound.get(connection))) {
                        forgetConnection(connection);
                        reaped++;
                    }
                }
            }
        } finally {
            tellSendersClosed(); // out of the lock: the sink may close an endpoint
        }
        if (reaped > 0) {
            int n = reaped;
            warnBestEffort(() -> plugin + ": forgot " + n + " connections of dead senders to make room under "
                    + ShmTransportConfig.inboundMaxKey(plugin) + " or " + ShmTransportConfig.inboundBounceMaxKey(plugin)
                    + "; their messages still in the receive queue are dropped");
            reclaimOffTheProgressThread();
        }
    }

    /**
     * {@link #mapBounce}, refusing the connection on any failure it did not refuse for itself but
     * that leaves the message: the record is consumed once the failure leaves its handler, and a
     * later message of the connection would follow a hole. Such a failure is a look at the
     * sender's lease that fails ({@code flock}: {@code ENOLCK}). (A mapping thread that cannot
     * start, no native thread to be had, leaves the record at the head: {@link #startMapping}.)
     */
    private boolean mapBounceOrRefuse(long connection, Inbound in) {
        try {
            return mapBounce(connection, in);
        } catch (ReceiveQueue.RecordNotReady notYet) {
            throw notYet; // the record stays at the head
        } catch (RuntimeException | Error e) {
            // Refused already (it is no longer kept), or the worker closing from another thread, which forgets every connection.
            refuseRingOf(in);
            throw e;
        }
    }

    /**
     * Makes sure the bounce ring a large message of {@code in} needs is mapped. While its mapping
     * is under way the record waits at the head ({@link ReceiveQueue.RecordNotReady#LATER}). A
     * ring that does not fit the budget refuses the connection ({@link #refuseConnection}). A
     * sender that died took its unmapped ring with it: the record is dropped, and the caller
     * forgets the connection. A live sender frees its ring only after this process released every
     * payload in it, so when mapping it failed for a shortage of descriptors, or no thread could be
     * started to map it, the record stays at the head of the queue, progress() says why, and
     * another try starts a liveness interval later. Any other reason refuses the connection.
     *
     * @return whether the ring is mapped; false when the record is to be dropped (its sender is dead)
     * @throws ReceiveQueue.RecordNotReady while the mapping is under way, or when the sender lives and this process is
     *                                     short of descriptors or of threads
     */
    private boolean mapBounce(long connection, Inbound in) {
        if (in.pendingRing == null && in.bounceExport != null && in.startAgainAt != 0) {
            // No mapping thread could be started at the last try: the next waits out a liveness interval, without a word.
            if (System.nanoTime() - in.startAgainAt < 0) {
                headTriesAgainAt = in.startAgainAt;
                throw ReceiveQueue.RecordNotReady.LATER;
            }
            in.startAgainAt = 0;
            if (!senderAlive(in)) return false; // its sender died meanwhile, and took its ring with it
        }
        if (in.pendingRing == null && in.bounceExport != null && !startMapping(connection, in, 0)) {
            if (inbound.get(connection) != in || !senderAlive(in)) return false; // its sender died
            String why = overBudget(in);
            refuseConnection(connection, REFUSED_RING);
            throw droppedLargeMessage(connection, "its bounce ring is not mapped: " + why);
        }
        ConduitException failure = null;
        CompletableFuture<ChunkMapping> ring = in.pendingRing; // read once: a close from another thread may clear it
        if (ring != null) {
            if (!ring.isDone()) {
                headWaitsFor = ring;
                throw ReceiveQueue.RecordNotReady.LATER;
            }
            headWaitsFor = null;
            synchronized (handOff) {
                // Taken from the connection, its ring is this thread's to unmap if a close comes before adopt hands it over.
                if (closed) throw closedError(); // the close forgets the connection, and unmaps its ring with it
                in.pendingRing = null;
            }
            try {
                failure = adopt(connection, in, ring.join());
            } catch (CompletionException e) {
                failure = refuseOrKeep(connection, in, e.getCause());
            }
        }
        if (in.bounce != null) return true;
        if (!senderAlive(in)) {
            BestEffortLog.log(context.logger(), System.Logger.Level.DEBUG, () -> plugin + ": dropped a large message of a sender that died", null);
            return false;
        }
        if (in.bounceExport != null) {
            startMapping(connection, in, livenessNanos); // the next try; its budget is still reserved
            headWaitsFor = in.pendingRing;
            if (in.tryAgainQuietly) {
                in.tryAgainQuietly = false;
                throw ReceiveQueue.RecordNotReady.LATER; // by then its lease is most likely released: then dropped, above
            }
            String sender = in.lease != null ? "a live sender" : "a sender whose lease this process cannot open either, so that it "
                    + "cannot tell whether the sender lives";
            throw new ReceiveQueue.RecordNotReady(new ConduitException(plugin + ": cannot map the bounce ring of " + sender
                    + " (connection " + Long.toHexString(connection) + ") to read its large message, which waits at the head of this "
                    + "worker's receive queue with every message behind it; another try starts every liveness.interval: "
                    + failure.getMessage(), failure));
        }
        if (failure == null) throw brokenProtocol(connection, "large message before its bounce ring was announced");
        refuseConnection(connection, REFUSED_RING);
        throw droppedLargeMessage(connection, "its bounce ring cannot be mapped: " + failure.getMessage());
    }

    /**
     * Reads a payload's last byte in a ring that another process may truncate (posix), so that a
     * truncation faults here, where it refuses the connection and drops the message, and not in
     * the application's handler, which gets the JDK's bare {@code InternalError} and refuses
     * nothing: the connection's next message would follow a hole. A truncation between this and
     * the handler's read is still the handler's (docs/guarantees.md, §6).
     */
    private void touchPayload(long connection, Inbound in, long offset, long length) {
        try {
            touched ^= in.bounce.touch(offset, length);
            // Compiled code gets the fault at its next safepoint check, which may lie in the handler.
            libc.deliverPendingFaults();
        } catch (InternalError e) {
            String why = MappedMemoryFaults.describe(e, plugin, "its bounce ring");
            refuseConnection(connection, REFUSED_RING);
            throw droppedLargeMessage(connection, why);
        }
    }

    /**
     * A large message of a connection this worker refused ({@link #refuseConnection}), consumed
     * without delivering it, for a reason that is no broken protocol.
     */
    private ConduitException droppedLargeMessage(long connection, String why) {
        return new ConduitException(plugin + ": dropped a large message of connection " + Long.toHexString(connection) + ": " + why
                + "; the connection is refused: its later messages are dropped too, and its endpoint fails at the sender's next "
                + "liveness check");
    }

    /**
     * Refuses a connection of which a message is dropped while its sender may live: forgets it, so
     * that its later records are dropped too (what this worker delivered of it stays a prefix of
     * what was sent, without a hole), and lists it in the queue, where its sender finds it at its
     * next liveness check and fails its endpoint ({@link ReceiveQueue}, "Refused connections").
     */
    private void refuseConnection(long connection, int reason) {
        forgetConnection(connection);
        queue.refuse(connection, reason);
        droppedConnection = 0; // a listing may have gone with this one: the next small message not kept looks again
        tellSendersClosed(); // once listed: a sink that throws must not keep the sender from learning of its refusal
    }

    /** A record of {@code connection} that breaks the protocol: dropped, and the connection refused ({@link #refuseConnection}). */
    private ConduitException brokenProtocol(long connection, String what) {
        if (connection == 0) return protocolError(0, what); // no sender's: nothing to refuse, no listing to spend
        refuseConnection(connection, REFUSED_BROKEN_PROTOCOL);
        return protocolError(connection, what + "; the connection is refused: its later messages are dropped too");
    }

    /**
     * Drops a small message of a connection this worker does not keep (refused, forgotten as a
     * dead sender's, or never announced). A live sender's connection that is no longer listed
     * among the refused ones (128 refusals came after it) is listed again, so that its sender,
     * which may send only small messages, still learns. Once per run of messages of one such
     * connection ({@link #droppedConnection}), and at most once per liveness interval: a look
     * lists the shared directory.
     */
    private void dropNotKept(long connection) {
        if (connection == droppedConnection) return;
        if (queue.refusalOf(connection) != 0) { // listed: its sender learns
            droppedConnection = connection;
            return;
        }
        long now = System.nanoTime();
        if (now - lastRelisting < livenessNanos) return; // a look lists the directory: senders that interleave share one per interval
        lastRelisting = now;
        try {
            if (OwnerLease.anyOwnerAlive(libc, directory, leasePrefix, connection, user)) queue.refuse(connection, REFUSED_NOT_KEPT);
            droppedConnection = connection;
        } catch (RuntimeException e) {
            // Only DEBUG: this runs for dropped messages, maybe out of descriptors; the next look is an interval away.
            BestEffortLog.log(context.logger(), System.Logger.Level.DEBUG, () -> plugin + ": could not tell whether the sender of "
                    + "connection " + Long.toHexString(connection) + ", whose messages this worker drops, lives: " + e.getMessage(), null);
        }
    }

    /** Removes a connection this worker keeps, and so drops its later records: see {@link #keptConnection}. */
    private Inbound removeInbound(long connection) {
        if (connection == keptConnection) keptConnection = 0;
        return inbound.remove(connection);
    }

    /** The message of a sender whose connection {@code reason} refused ({@link ReceiveQueue#refusalOf}). */
    static String refusal(String plugin, int reason) {
        return switch (reason) {
            case REFUSED_PAST_INBOUND_MAX -> "it keeps the most connections from senders its " + ShmTransportConfig.inboundMaxKey(plugin)
                    + " allows; raise it there, or have senders close the endpoints they no longer use";
            case REFUSED_RING -> "it could not map this connection's bounce ring to read a large message (past its "
                    + ShmTransportConfig.inboundBounceMaxKey(plugin) + ", a failure its progress() named, or the ring's file "
                    + "truncated under it), and dropped it, or found the ring's file truncated as it gave back the room of payloads it "
                    + "had read";
            case REFUSED_NOT_KEPT -> "it does not keep this connection (refused, or forgotten as a dead sender's)";
            case REFUSED_BROKEN_PROTOCOL -> "a record of this connection broke the queue protocol (its progress() named it)";
            default -> "for a reason it gave as " + reason;
        };
    }

    /**
     * Judges why a ring could not be mapped: a shortage of descriptors keeps the announcement, for
     * a retry; so does, once per connection, a refusal by the ring's exporter while the sender's
     * lease is held (a sender being killed), for one quiet retry a liveness interval later, by
     * which time its death shows and its message is dropped; a malformed announcement breaks the
     * protocol; any other failure, whatever its type (an importer of another JVM language may throw
     * a checked exception), refuses the connection: its message is lost, and so must be every later
     * one of it. An {@code Error} of the JVM (out of memory) is thrown on once that is done.
     *
     * @return the failure as a {@link ConduitException}
     */
    private ConduitException refuseOrKeep(long connection, Inbound in, Throwable failure) {
        switch (failure) {
            case dev.conduit.spi.InvalidHandleException e -> throw brokenProtocol(connection, "bounce ring announcement: " + e.getMessage());
            case ConduitException e -> {
                if (isShortage(e)) return e;
                if (isRefusedByADyingExporter(e) && !in.refusedWhileAlive) {
                    // A killed process's descriptors close one at a time: its ring's server may refuse before its lease
                    // is released. Once, that is taken for a death under way and looked at again a liveness interval later.
                    in.refusedWhileAlive = true;
                    in.tryAgainQuietly = true;
                    return e;
                }
                in.bounceExport = null; // for good: mapBounce refuses the connection
                return e;
            }
            case VirtualMachineError e -> {
                // The record is consumed once this is thrown out of its handler: without the refusal, a hole.
                refuseConnection(connection, REFUSED_RING);
                throw e;
            }
            default -> {
                in.bounceExport = null;
                return new ConduitException(plugin + ": its importer failed: " + failure, failure);
            }
        }
    }

    /** Attaches a mapped ring: its header must be a bounce ring's. */
    private ConduitException adopt(long connection, Inbound in, ChunkMapping mapping) {
        try {
            in.bounce = BounceRing.attach(mapping.segment());
        } catch (IllegalStateException | InternalError e) { // a malformed header; a posix ring truncated under us (SIGBUS)
            ConduitException broken = brokenProtocol(connection, e.getMessage()); // forgets the connection, and its budget
            try {
                if (!handOverUnmap(mapping)) mapping.close();
            } catch (RuntimeException closing) {
                broken.addSuppressed(closing);
            }
            throw broken;
        }
        synchronized (handOff) {
            if (!closed) {
                in.bounceMapping = mapping;
                in.ringMayFault = mapping.mayFault();
                in.bounceExport = null;
                return null;
            }
        }
        // Closed from another thread since mapBounce took the ring: the close found it neither being mapped nor mapped, so
        // it is unmapped here, or it would stay mapped for the process's life. Nothing more is delivered.
        in.bounce = null;
        mapping.close();
        throw closedError();
    }

    /**
     * Whether the sender of {@code in} holds its lease. A lease its CONNECT could not open (out of
     * descriptors, say) is opened now; until it can be, the sender counts as alive unless there is
     * no lease by that name ({@link OwnerLease#isNoLeaseOf}).
     */
    private boolean senderAlive(Inbound in) {
        return senderAlive(in, false, 0);
    }

    /**
     * Whether the sender of {@code in} lives; at a liveness check ({@code atCheck}, whose clock read
     * is {@code now}), as that check's first look at the watch found it, the endpoint to the same
     * worker's or another connection's ({@link LeaseWatch#ownerAliveAtCheck}): one {@code flock}
     * per peer worker and check.
     */
    private boolean senderAlive(Inbound in, boolean atCheck, long now) {
        LeaseWatch opened = null;
        if (in.lease == null) {
            try {
                opened = peerLeases.acquire(in.leaseName);
            } catch (ErrnoException e) {
                return !OwnerLease.isNoLeaseOf(directory, in.leaseName, user, e);
            }
        }
        // The look itself holds the lock too (once per look, never per message): a close forced from another thread gives
        // the connection back under it, closing the watch, which a look under way would then flock closed, or by a number
        // the process may have given another file since.
        synchronized (handOff) {
            if (closed) {
                // A close from another thread that came first forgets this connection without this watch: given back here.
                if (opened != null) peerLeases.release(opened);
                throw closedError();
            }
            if (opened != null) in.lease = opened;
            return atCheck ? in.lease.ownerAliveAtCheck(now) : in.lease.ownerAlive();
        }
    }

    /**
     * Forgets a connection this worker keeps, if it still does, and releases what it holds: its share
     * of the lease watch, its ring and its budget. The sink is to be told ({@link #tellSendersClosed},
     * which the caller calls once it holds no lock), unless the worker is closed by then. Exactly once, whether the owner's thread (a
     * CLOSE, a refusal, a dead sender) or a close forced from another thread comes to it first: its
     * removal from {@link #inbound} (a map for one thread) and its watch's release are made holding
     * {@link #handOff}; its ring, this call's alone once removed, is unmapped after, so that a close
     * does not hold the lock through unmaps, and on the mapping thread while the worker is open
     * ({@link #handOverUnmap}), so that the owner's thread does not either. Once per forgotten connection: never on the message
     * path.
     *
     * <p>A ring is being mapped only for the large message at the head of the queue, which stays
     * there until the mapping is done and adopted, so no record (CLOSE), no liveness check (it waits
     * for the head to pass the sender's records) and no reaping (it runs for the record at the head)
     * forgets such a connection: only close does, or a CLOSE that a process which writes the queue
     * wrote over that record. Its mapping is then cancelled: one not started is never made, one
     * under way is unmapped as soon as it is done.
     */
    private void forgetConnection(long connection) {
        giveBackConnection(connection, true);
    }

    /**
     * Gives back what a connection holds, exactly once ({@link Inbound#forgotten}), removing it from
     * the connections ({@code remove}, the owner's thread) or leaving it there (a close, which may
     * run on another thread while the owner's message path looks connections up unlocked: a
     * removal's backward shift moves a key before its value, so a lookup under it could return the
     * entry being removed for another connection's, or miss one being moved).
     */
    private void giveBackConnection(long connection, boolean remove) {
        Inbound in;
        boolean keepRing;
        RuntimeException leaseFailure = null;
        synchronized (handOff) {
            in = remove ? removeInbound(connection) : inbound.get(connection);
            if (in == null || in.forgotten) return; // given back meanwhile by the other thread
            in.forgotten = true;
            // The owner's thread forgetting while the worker is open; a close, its own or forced, tells nobody (MessageSink).
            if (remove && !closed) senderClosed(connection);
            // Payloads of its ring the application keeps hold the mapping, and its share of inbound.bounce.max (releaseKept).
            keepRing = in.kept != null && !closed;
            if (!keepRing) releaseBudget(in);
            LeaseWatch lease = in.lease;
            in.lease = null;
            try {
                if (lease != null) peerLeases.release(lease);
            } catch (RuntimeException e) {
                leaseFailure = e; // close(2) failing (EIO) still closed the descriptor: the ring is unmapped all the same
            }
        }
        try {
            unmapRings(in, keepRing);
        } catch (RuntimeException e) {
            if (leaseFailure == null) throw e;
            leaseFailure.addSuppressed(e);
        }
        if (leaseFailure != null) throw leaseFailure;
    }

    /** Keeps {@code connection} for {@link #tellSendersClosed}; the owner's thread only. */
    private void senderClosed(long connection) {
        if (sendersClosedCount == sendersClosed.length) sendersClosed = java.util.Arrays.copyOf(sendersClosed, 2 * sendersClosedCount);
        sendersClosed[sendersClosedCount++] = connection;
    }

    /**
     * Tells the sink of every connection forgotten since the last call, in the order forgotten
     * ({@link MessageSink#onSenderClosed}): inside progress(), holding no lock, since the
     * runtime's sink closes the endpoint it answered that sender through. Each is told once, also
     * when the sink throws for one (the first exception is thrown once all are told, the others
     * suppressed by it) or tells again from inside (a nested call tells those left, each taken
     * before it is told). Nothing once the worker is closed: its close closes every endpoint.
     */
    private void tellSendersClosed() {
        if (sendersClosedCount == 0) return;
        RuntimeException failure = null;
        while (sendersClosedTold < sendersClosedCount) {
            long sender = sendersClosed[sendersClosedTold++];
            if (closed) continue;
            try {
                sink.onSenderClosed(sender);
            } catch (RuntimeException e) {
                failure = add(failure, e);
            }
        }
        sendersClosedCount = 0;
        sendersClosedTold = 0;
        if (failure != null) throw failure;
    }

    /**
     * Unmaps what a forgotten connection mapped: its ring, or the mapping of it under way, and its
     * bounce ring unless {@code keepRing} (payloads of it are kept: {@link #releaseKept} unmaps it).
     * While the worker is open, on the mapping thread ({@link #handOverUnmap}).
     */
    private void unmapRings(Inbound in, boolean keepRing) {
        CompletableFuture<ChunkMapping> ring = in.pendingRing;
        in.pendingRing = null;
        if (ring != null) {
            if (ring == headWaitsFor) headWaitsFor = null;
            // Cancelled, a mapping not yet made never is, and one under way is unmapped by the mapper once made; one made
            // already (its record at the head not yet read again) is unmapped as a mapped ring is.
            if (!ring.cancel(false)) ring.thenAccept(made -> {
                if (!handOverUnmap(made)) unmapQuietly(made);
            });
        }
        // Closed, the close's own unmap, whose failure it throws; or an owner's call forgetting it after a forced close.
        if (in.bounceMapping != null && !keepRing && !handOverUnmap(in.bounceMapping)) in.bounceMapping.close();
    }

    private void unmapQuietly(ChunkMapping mapping) {
        unmapQuietly(mapping, "a forgotten connection's bounce ring");
    }

    private void unmapQuietly(ChunkMapping mapping, String what) {
        try {
            mapping.close();
        } catch (RuntimeException | Error e) {
            warnOfAMappingThreadStep(e, () -> plugin + ": could not unmap " + what + ": " + e.getMessage());
        }
    }

    /**
     * Says the failure of an unmap or a free on the mapping thread, where nobody waits for it: an
     * Error of a provider as a RuntimeException (the posix provider's free rethrows one from its
     * release, and a provider in another JVM language may throw anything), as {@link MappingThread#map}
     * takes every one. Until 2026-12-07 an Error there ended the thread's task with only a trace on
     * stderr, and the unmap after a failed free never ran. The JVM's own ({@link Cleanup#isTheJvmsOwn}) goes on up.
     */
    private void warnOfAMappingThreadStep(Throwable failure, java.util.function.Supplier<String> message) {
        BestEffortLog.warnUnlessTheJvmsOwn(context.logger(), message, failure);
    }

    /**
     * Frees an endpoint's bounce ring ({@code bounceRing}, null when it never made one) and unmaps its
     * mapping of its peer's receive queue, which the endpoint gives back ({@link ShmEndpoint}: its
     * peer found gone at a liveness check or a keepalive probe, its close, once a live peer read its
     * large messages): while the worker is open, on the mapping thread
     * ({@link MappingThread#unmapMadeElsewhere}), after the unmaps and mappings handed over before them,
     * in one hand-over, and a failure is a WARNING. On the caller that checked the peer, the unmap of
     * a 2 MiB queue the endpoint had written took 420-695 µs at the median, and the free of a 4 MiB
     * ring it had written (an unmap, and the file's removal or the memfd's close) 441-492 µs, in which
     * the worker served none of its other peers; the hand-over takes 99-117 µs with the thread there,
     * 168-274 µs where it starts it, and the progress() that releases an endpoint with a ring took
     * 182-214 µs at the median, 611-1,186 µs with the ring freed on it (docs/performance.md, "A gone peer's queue unmapped off the
     * progress thread", "A released endpoint's bounce ring freed off the progress thread"). Given
     * back, the endpoint is failed or closed, so its sends throw and its checks return before they
     * touch the queue or the ring; one already under way on another thread meets the shared arena's
     * close (IllegalStateException), on whichever thread it runs. No one else reads the ring: a peer
     * that is gone mapped it in its own process, and a live one the endpoint's close waited for
     * ({@link ShmEndpoint#awaitsDrain}) keeps its own mapping. The providers' frees lock their own
     * bookkeeping. Closed, the caller frees and unmaps itself and a failure is thrown: the worker's
     * close, which waits for what was handed over before it ({@link MappingThread#unmapHandedOver})
     * before it closes the provider, or an owner's release after a close forced from another thread.
     */
    void giveBackOffThisThread(Chunk bounceRing, ChunkMapping peerQueue) {
        synchronized (handOff) {
            if (!closed) {
                mappingThread().unmapMadeElsewhere(() -> {
                    try {
                        if (bounceRing != null) freeQuietly(bounceRing);
                    } finally { // the JVM's own Error, which freeQuietly lets through, still leaves no queue mapped
                        unmapQuietly(peerQueue, "the mapping of a peer's receive queue");
                    }
                });
                return;
            }
        }
        try {
            if (bounceRing != null) provider.free(bounceRing);
        } finally {
            peerQueue.close();
        }
    }

    private void freeQuietly(Chunk bounceRing) {
        try {
            provider.free(bounceRing);
        } catch (RuntimeException | Error e) {
            warnOfAMappingThreadStep(e, () -> plugin + ": could not free a released connection's bounce ring: " + e.getMessage());
        }
    }

    /**
     * Hands the unmap of a forgotten connection's ring to the mapping thread ({@link MappingThread#unmap}):
     * the unmap of a ring the receiver read, its share of the JDK's handshake and the TLB shootdown
     * cost this thread hundreds of µs, which the worker's other peers waited through. Its failure is
     * said there ({@link #unmapQuietly}). The connection's budget is given back before: the rings
     * mapped still never exceed {@code inbound.bounce.max} (the mapping thread runs unmaps and
     * mappings in order: {@link MappingThread}).
     *
     * @return false when the worker is closed: the caller unmaps it itself (a close from another thread
     *         shut the thread down, and waits only for the unmaps handed over before it)
     */
    private boolean handOverUnmap(ChunkMapping mapping) {
        synchronized (handOff) {
            if (closed) return false;
            mappingThread().unmap(mapping);
            return true;
        }
    }

    /** The mapping thread, made at its first use; under {@link #handOff}, with the worker open. */
    private MappingThread mappingThread() {
        if (mappingThread == null) mappingThread = new MappingThread(plugin, this::unmapQuietly);
        return mappingThread;
    }

    private void releaseBudget(Inbound in) {
        if (in.budgeted) {
            inboundBounceBytes -= in.bounceLength;
            in.budgeted = false;
        }
    }

    /**
     * Whether {@code failure} is the ring's exporter refusing or resetting the connection
     * ({@code ECONNREFUSED}, {@code ECONNRESET}), or closing it without an answer (an
     * {@link EOFException} among the causes): memfd's fd server of a process being killed does
     * one of these before the kernel releases that process's lease.
     */
    private static boolean isRefusedByADyingExporter(Throwable failure) {
        String errno = firstErrno(failure);
        return "ECONNREFUSED".equals(errno) || "ECONNRESET".equals(errno) || firstCause(failure, EOFException.class) != null;
    }

    /**
     * Whether {@code failure} comes from a shortage of this process's (or the system's) file
     * descriptors ({@code EMFILE}, {@code ENFILE}), which passes once some are closed, rather than
     * from what a peer sent or did. {@code ENOMEM} is not one: a sender can provoke it by
     * announcing a huge ring, and must not be able to hold this worker's queue with it.
     */
    private static boolean isShortage(Throwable failure) {
        ErrnoException e = firstCause(failure, ErrnoException.class);
        return e != null && Errno.isShortage(e.errno());
    }

    /** The errno name of the first {@link ErrnoException} among {@code failure} and its causes, or null. */
    private static String firstErrno(Throwable failure) {
        ErrnoException e = firstCause(failure, ErrnoException.class);
        return e == null ? null : e.errnoName();
    }

    /** The first of {@code failure} and its causes that is a {@code type}, or null. */
    private static <T extends Throwable> T firstCause(Throwable failure, Class<T> type) {
        Throwable t = failure;
        for (int depth = 0; t != null && depth < 16; depth++, t = t.getCause()) { // bounded: a cycle of causes ends too
            if (type.isInstance(t)) return type.cast(t);
        }
        return null;
    }

    /**
     * Why a peer's lease did not open (EACCES, EPERM): another user's is its owner's 0600 file; one of
     * this worker's own user is refused by a security module (or a mode changed by hand), which
     * running both as one user would not mend.
     */
    private String refusedLease(String leaseName) {
        return refusedLease(UserNamespace.current(), OwnerLease.ownerOf(directory, leaseName), user, libc.geteuid());
    }

    /**
     * {@link #refusedLease(String)} for a lease showing {@code owner} (null: not known), to a worker
     * of {@code user} whose process runs as {@code self}. A lease showing the worker's own uid is its
     * own user's, unless that uid is the overflow uid of the worker's user namespace (a container run
     * as nobody): every user the namespace does not map shows as it too, the host process's user
     * typically, whose 0600 lease refuses this worker by its mode, not by a security module.
     */
    static String refusedLease(UserNamespace namespace, Integer owner, int user, int self) {
        if (owner != null && owner == user && !namespace.mayBeUnmapped(Integer.toUnsignedLong(owner))) {
            return "its lease is this worker's own user's (uid " + Integer.toUnsignedString(user) + "), so not another user's rule but "
                    + "usually a security module's refused it (SELinux on a container's bind mount: relabel a dedicated directory with :z, "
                    + "or label=disable; AppArmor; the audit log), else its mode was changed (a lease is made 0600)";
        }
        String leaseOwner = owner == null ? "" : (owner == self ? "its lease shows as uid " : "its lease belongs to uid ")
                + Integer.toUnsignedString(owner) + ", ";
        return "the peer worker belongs to another user (" + leaseOwner + "this process runs as uid "
                + Integer.toUnsignedString(self) + ")" + userNamespaceNote(namespace, owner, self)
                + ": a worker's lease is its owner's 0600 file, so workers connect only within one user; " + ONE_USER_REMEDY;
    }

    /**
     * In a user namespace of its own (a container's), what the uids of a refused connect are on the
     * host: this process's uid there, and that a lease showing the overflow uid is of a user the
     * namespace does not map (the host process's, typically), which no uid inside can match.
     * Empty outside a nested namespace, where the uids are the host's already.
     */
    static String userNamespaceNote(UserNamespace namespace, Integer owner, int self) {
        if (!namespace.isNested()) return "";
        StringBuilder note = new StringBuilder(" (in this user namespace: this process is ")
                .append(namespace.describe(Integer.toUnsignedLong(self)));
        if (owner != null && namespace.mayBeUnmapped(Integer.toUnsignedLong(owner))) {
            note.append("; uid ").append(Integer.toUnsignedString(owner)).append(" is the overflow uid, which every user this namespace "
                    + "does not map shows as: the peer runs as a user outside this namespace's map, such as the host process's");
        }
        return note.append(")").toString();
    }

    /** The longest CONNECT payload: the lease's relative path and the sender's address, each with its u16 length first. */
    private static final int CONNECT_PAYLOAD_MAX = 2 + PayloadReader.MAX_PATH_LENGTH + 2 + Transport.MAX_ADDRESS_LENGTH;
    /**
     * The longest export of a bounce ring: what any provider's export may be. Kept until the
     * connection's first large message: the u16 length allowed 64 KiB, 256 MiB of heap at 4,096
     * connections of a process that writes the queue.
     */
    static final int BOUNCE_EXPORT_MAX = MemoryProvider.MAX_EXPORT_LENGTH;
    /** The longest BOUNCE payload: the ring's export (u16 length first), then its length. */
    private static final int BOUNCE_PAYLOAD_MAX = 2 + BOUNCE_EXPORT_MAX + 8;

    /**
     * A reader of the control payload of the record at {@code offset}: at most {@code maxLength}
     * bytes, copied to the heap only once its length is known to be one a sender writes (a record
     * may be as long as the queue).
     *
     * @throws InvalidHandleException for a payload length no sender writes, which the caller refuses as a broken protocol
     */
    private static PayloadReader control(MemorySegment m, long offset, int length, int maxLength, String prefix) {
        long payloadLength = m.get(ValueLayout.JAVA_LONG, offset + ReceiveQueue.PAYLOAD_SIZE);
        if (payloadLength < 0 || payloadLength > length - ReceiveQueue.RECORD_HEADER || payloadLength > maxLength) {
            // The record's field, not the payload's: named as the queue's layout names it, without the payload's prefix.
            throw new InvalidHandleException("control record", "payload length", payloadLength + " bytes in a record of " + length
                    + " (at most " + maxLength + " for its type)");
        }
        byte[] bytes = new byte[(int) payloadLength];
        MemorySegment.copy(m, ValueLayout.JAVA_BYTE, offset + ReceiveQueue.RECORD_HEADER, bytes, 0, bytes.length);
        return new PayloadReader(bytes, 0, bytes.length, prefix, "control record");
    }

    private ConduitException protocolError(long connection, String what) {
        return new ConduitException(plugin + ": a peer (connection " + Long.toHexString(connection)
                + ") broke the queue protocol, its record was dropped: " + what);
    }

    /**
     * Checks leases and heartbeats; fails endpoints of dead or hung peers, forgets dead senders,
     * unblocks the queue, and has dead peers' files reclaimed off this thread
     * ({@link #reclaimOffTheProgressThread}).
     *
     * <p>A check that fails an endpoint returns as soon as it has failed them, and leaves the rest
     * to the next check, a liveness interval later: the runtime calls the error handlers when
     * progress() or await() returns, and the rest (releasing the failed endpoints' mappings, rings
     * and lease watches, forgetting dead senders, listing the shared directory to reclaim the dead
     * peers' files, with its INFO line, which has since left this thread) took 10 to 60 ms on the first death a process saw, and
     * 400 ms once, measured between kill -9 and the handler, all of it before the handler ran.
     * Only one check in two is cut short so: the one after a short check does the rest, whatever
     * it fails, so that deaths one interval apart cannot put the rest off for longer.
     */
    private int checkPeers(long now) {
        checkQueueHeader();
        checkOwnLease();
        int events = 0;
        ShmEndpoint[] walk;
        synchronized (handOff) { // a close forced from another thread releases endpoints, and so changes the list
            walk = checking.copy(endpoints);
        }
        try {
            for (int i = 0; walk[i] != null; i++) {
                ShmEndpoint ep = walk[i];
                walk[i] = null;
                if (ep.checkPeer(now)) events++; // one whose peer was found gone at an earlier check releases itself here
            }
        } finally {
            checking.giveBack(walk);
        }
        if (events > 0) {
            reclaimDue = true;
            if (!lastCheckCutShort) {
                lastCheckCutShort = true;
                return events;
            }
        }
        lastCheckCutShort = false;
        boolean someoneDied = reclaimDue; // cleared once reclaimed: a fault of what comes first leaves it to the next check
        // Those forgotten here are told by progress() as this check returns, out of the lock (the sink may close an
        // endpoint), or at the next progress() when await() ran the check: a sink is told from progress() only.
        synchronized (handOff) { // the close, forced from another thread, forgets connections and closes their watches: not in this walk
            if (closed) throw closedError();
            int senders = inbound.size();
            connections = inbound.keys(connections);
            for (int i = 0; i < senders; i++) {
                long connection = connections[i];
                Inbound in = inbound.get(connection);
                if (senderAlive(in, true, now)) {
                    in.deadAtTail = -1; // judged dead before without its lease (none could be opened): that bound was not one
                } else if (deadSendersRecordsAreRead(in)) {
                    forgetConnection(connection);
                    someoneDied = true;
                }
            }
        }
        if (queue.isHeadBlocked()) {
            if (blockedSince == 0 || blockedAt != queue.headPosition()) {
                blockedSince = now;
                blockedAt = queue.headPosition();
            }
            if (now - blockedSince >= unblockNanos && unblockHead(now)) {
                blockedSince = 0;
                events++;
            }
        } else {
            blockedSince = 0;
        }
        finishCloses();
        if (someoneDied) {
            reclaimOffTheProgressThread();
            reclaimDue = false;
        }
        return events;
    }

    /**
     * Hands the reclaim of dead peers' files to the mapping thread: listing the shared
     * directory, removing each dead owner's files and logging the INFO took 10 to 60 ms on the first
     * death a process saw, inside the progress() of a worker that serves its other peers meanwhile.
     * What it removes is no longer this worker's to read: a dead peer's files, whose mappings this
     * worker releases itself, on its own thread. A reclaim waits there behind a ring being mapped, and
     * a large message's ring behind a reclaim; the close runs one that never began ({@link #close}).
     */
    private void reclaimOffTheProgressThread() {
        synchronized (handOff) { // a close that came first finishes the reclaims itself, and shut the thread down
            if (closed || reclaimHandedOver.getAndSet(true)) return;
            try {
                if (beforeReclaimHandOver != null) beforeReclaimHandOver.run();
                mappingThread().run(() -> {
                    synchronized (reclaiming) {
                        if (reclaimHandedOver.getAndSet(false)) reclaimDeadPeers(directory); // which throws nothing
                    }
                });
            } catch (RuntimeException | Error e) {
                // Not handed over (a mapping thread that cannot start: no native thread to be had): left set, the flag made
                // every later check return here at once, and no dead peer's files were reclaimed again while the worker lived.
                reclaimHandedOver.set(false);
                reclaimDue = true; // the next check, or the close, tries again
                if (e instanceof OutOfMemoryError noThread) {
                    throw ThreadStart.failed(plugin + ": cannot start the thread that reclaims dead peers' files in " + directory.path()
                            + " (they are reclaimed at a later check, or at the worker's close)", noThread);
                }
                throw e;
            }
        }
    }

    /**
     * Whether the head has passed everything a dead sender could have claimed: the queue is empty,
     * or has moved past the tail as it was when the sender was first found dead (a dead sender
     * claims nothing more). Waiting for an empty queue alone kept the rings of senders killed
     * under sustained traffic mapped for as long as the traffic lasted.
     */
    private boolean deadSendersRecordsAreRead(Inbound in) {
        if (!queue.hasPending()) return true;
        if (in.deadAtTail < 0) {
            in.deadAtTail = queue.tailPosition();
            return false;
        }
        return queue.headPosition() - in.deadAtTail >= 0;
    }

    /**
     * Frees the head from a claim that stayed uncommitted for {@code unblock.timeout}, once its
     * sender is dead. A taken claim names its sender; one not yet taken is the last claim, and the
     * tail word names its owner (ReceiveQueue, "Senders that stop"). Either is judged the same way:
     * a taken record of a known connection by the lease its CONNECT gave, any other, and every
     * untaken claim (only its owner tag is known), by every owner of its tag: the known connections
     * of the tag, by their leases' watches, and the leases the tag points at in the shared directory
     * ({@link #ownerTagAlive}). A dead sender's taken record is
     * skipped, its untaken space taken back; a live one's is waited for, for its take is a plain
     * store that would land in space given back. Untaken space that no claim names (a process
     * that maps the queue moved the tail) is taken back at once.
     */
    private boolean unblockHead(long now) {
        try {
            return unblockHeadRecord(now);
        } catch (InternalError e) {
            // A take-back reads lines no poll has touched yet, on pages a truncation may have taken.
            throw new ConduitException(MappedMemoryFaults.describe(e, plugin, "this worker's receive queue"), e);
        }
    }

    private boolean unblockHeadRecord(long now) {
        boolean unnamed = queue.isHeadUnnamed();
        int unnamedOwner = unnamed ? queue.unnamedClaimant() : 0;
        if (unnamed && unnamedOwner == 0) {
            // No live sender's (named-up-to is the tail, or below a dead claimant's tail): a claim named since this look is
            // left alone by the take-back's CAS from each line's free word.
            if (!queue.takeBackUnnamedClaim(0)) return false;
            BestEffortLog.log(context.logger(), System.Logger.Level.INFO, () -> plugin + ": took back queue space at the head of this "
                    + "worker's receive queue that no live sender's claim names: a dead sender's, or a process that maps the queue moved "
                    + "its tail", null);
            return true;
        }
        // Of an untaken claim only the owner tag is known: every owner of it is looked at, for two owners may share those 32
        // bits, and a connection of the dead one found first would have a live one's claim taken back under it.
        long connection = unnamed ? (long) unnamedOwner << 32 : queue.blockedConnection();
        Inbound claimant;
        boolean dead;
        try {
            synchronized (handOff) { // the claimant's watch is not closed under this look by a close forced from another thread
                if (closed) throw closedError();
                claimant = unnamed ? null : inbound.get(connection);
                dead = claimant != null ? !senderAlive(claimant) : !ownerTagAlive(connection, now);
            }
        } catch (ErrnoException e) {
            // A lease that does not open, for a reason that proves nothing (OwnerLease#isNoLeaseOf: out of descriptors, a
            // permission), or a directory that does not list (OwnerLease#heldLeaseOf throws the listing's ErrnoException):
            // no telling now; the next liveness check looks again, and this one still finishes closes.
            return false;
        }
        if (!dead) {
            long held = System.nanoTime() - blockedSince;
            if (held >= heartbeatNanos) {
                headHeldByALiveSender.log(() -> plugin + ": a live sender (" + (unnamed ? "owner " + Integer.toHexString(unnamedOwner)
                        : "connection " + Long.toHexString(connection))
                        + (claimant != null ? ", lease " + directory.path().resolve(claimant.leaseName) : "") + ") has held the head "
                        + "of this worker's receive queue for " + held / 1_000_000 + " ms with a message it "
                        + (unnamed ? "claimed and has not taken" : "took and has not committed") + ": every message behind it, of "
                        + "every sender, waits until it resumes or dies (nothing is lost), and so does every sender's next claim. It is "
                        + "stopped (SIGSTOP, a debugger, a paused container) or its PayloadEncoder takes that long. "
                        + (claimant != null ? "Its process holds the write lock on that lease (lsof on the lease shows it with lock W, "
                        + "/proc/locks as FLOCK WRITE; the other processes that have it open are its peers): " : "")
                        + "resume it (kill -CONT, docker unpause) or end it, and its message is skipped at the next liveness check");
            }
            return false;
        }
        if (unnamed) {
            if (!queue.takeBackUnnamedClaim(unnamedOwner)) return false;
            warnBestEffort(() -> plugin + ": took back queue space that owner " + Integer.toHexString(unnamedOwner)
                    + " claimed and never took: its sender died mid-send");
            return true;
        }
        if (!queue.skipDeadClaim()) return false;
        warnBestEffort(() -> plugin + ": skipped a message that connection " + Long.toHexString(connection)
                + " claimed and never committed: its sender died mid-send");
        return true;
    }

    /**
     * Whether some owner of {@code connection}'s owner tag lives, for a record at the head that no
     * connection this worker keeps names (an untaken claim, of which only the tag is known, or a
     * record taken as a connection not kept): a connection kept of that tag whose sender holds its
     * lease, as this liveness check's look at the lease's watch found it ({@link #senderAlive}), or
     * else a lease of the tag held in the shared directory ({@link #unknownTakerAlive}). The watches
     * first, for they hold the descriptor the sender's CONNECT gave: a live sender whose lease file
     * lost its name (a cleaner, systemd's RemoveIPC: {@link OwnerLease#isRemoved}) is in no listing,
     * and space it claimed, taken back as a dead sender's, would have its plain take land in space
     * given back, and its named-up-to store move the word back below the tail, where no sender
     * claims again. Holding {@link #handOff}, after the check's walk of the connections.
     */
    private boolean ownerTagAlive(long connection, long now) {
        int tag = ReceiveQueue.ownerTag(connection);
        int senders = inbound.size();
        connections = inbound.keys(connections);
        for (int i = 0; i < senders; i++) {
            if (ReceiveQueue.ownerTag(connections[i]) != tag) continue;
            Inbound in = inbound.get(connections[i]);
            if (!in.forgotten && senderAlive(in, true, now)) return true;
        }
        return unknownTakerAlive(connection);
    }

    /**
     * Whether a sender this worker keeps no connection of, which took the record at the head as
     * {@code connection} (its first, which would introduce it; or one of a connection refused or
     * forgotten), lives: some lease of its owner tag is held ({@link OwnerLease#anyOwnerAlive}).
     * The first look lists the shared directory, since the tag names the owner only by its first
     * 32 bits; a later look at the same connection opens the lease that listing found held, by
     * its name, and lists again only once that one is no longer held (its owner died, or another
     * owner of the tag may have taken the record). Every liveness check past unblock.timeout looks
     * while a live sender holds the head (stopped, or slow between its take and its commit), and
     * each look used to list the directory: with thousands of files there, every liveness interval.
     */
    private boolean unknownTakerAlive(long connection) {
        if (connection == unknownTaker && unknownTakerLease != null) {
            try {
                if (OwnerLease.isAlive(libc, directory, unknownTakerLease, user)) return true;
            } catch (ErrnoException e) {
                // Judged with every other lease of the tag by the listing below, which throws when none is held and one
                // could not be judged.
            }
        }
        String held = OwnerLease.heldLeaseOf(libc, directory, leasePrefix, connection, user);
        unknownTaker = connection;
        unknownTakerLease = held;
        return held != null;
    }

    /**
     * Takes one of the {@value #MAX_CLOSES_AWAITING} places of closes that wait for their peer to
     * read their CONNECT (each keeps a mapping of the peer's queue and a descriptor), if one is
     * free; {@link #leaveConnectWait} gives it back.
     */
    boolean enterConnectWait() {
        if (closesAwaitingConnect >= MAX_CLOSES_AWAITING) return false;
        closesAwaitingConnect++;
        return true;
    }

    void leaveConnectWait() {
        closesAwaitingConnect--;
    }

    /**
     * Moves a closed endpoint whose peer still needs something of it to {@link #closing}, in one
     * step under {@link #handOff}: a close forced from another thread that lists both lists finds
     * it in one of them (between the two, it found it in neither, and released nothing of it).
     */
    void closing(ShmEndpoint endpoint) {
        finishCloses();
        synchronized (handOff) {
            endpoints.remove(endpoint);
            closing.add(endpoint);
        }
    }

    /**
     * Takes the next step of every close that waits for its peer. Runs at every liveness check,
     * connect and endpoint close, so that a worker that only sends still releases closed connections.
     */
    private void finishCloses() {
        if (closing.isEmpty()) return;
        ShmEndpoint[] unfinished;
        synchronized (handOff) { // which a close forced from another thread changes as it releases endpoints
            unfinished = finishing.copy(closing);
        }
        try {
            for (int i = 0; unfinished[i] != null; i++) {
                ShmEndpoint ep = unfinished[i];
                unfinished[i] = null;
                try {
                    ep.finishClose();
                } catch (RuntimeException e) {
                    failedCloses.log(() -> plugin + ": could not release a closed connection (tried again at each liveness check): "
                            + e.getMessage(), e);
                }
            }
        } finally {
            finishing.giveBack(unfinished);
        }
    }

    /** Lists an endpoint that holds a large message to post ({@link #holding}). */
    void holding(ShmEndpoint endpoint) {
        synchronized (handOff) {
            holding.add(endpoint);
        }
    }

    /** Forgets an endpoint's held large message: posted, or no longer to be (its endpoint failed or was released). */
    void heldPosted(ShmEndpoint endpoint) {
        synchronized (handOff) {
            holding.remove(endpoint);
        }
    }

    /** Posts the large messages that endpoints hold ({@link #holding}) where their peers' queues have room now. */
    private void postHeld() {
        ShmEndpoint[] held;
        synchronized (handOff) { // which a close forced from another thread changes as it releases endpoints
            held = posting.copy(holding);
        }
        try {
            for (int i = 0; held[i] != null; i++) {
                ShmEndpoint ep = held[i];
                held[i] = null;
                if (ep.postHeldAsTheTransportProgresses()) heldPosted(ep);
            }
        } finally {
            posting.giveBack(held);
        }
    }

    /**
     * Forgets a released endpoint. Its connection id is free again unless {@code receiverMayKeepIt}:
     * it was released without a CLOSE while its receiver may live (see {@link #connectionsInUse}).
     */
    void released(ShmEndpoint endpoint, boolean receiverMayKeepIt) {
        synchronized (handOff) { // an endpoint's release may be the owner's or a forced close's (ShmEndpoint#release)
            endpoints.remove(endpoint);
            closing.remove(endpoint);
            holding.remove(endpoint);
            if (!receiverMayKeepIt) connectionsInUse.remove(endpoint.connection());
        }
    }

    System.Logger logger() {
        return context.logger();
    }

    @Override
    public boolean await(long timeoutNanos) {
        ensureOpen();
        // Wake up at least every liveness interval and check peers as progress() would, so that a
        // worker that only sleeps still notices a dead peer: its endpoint fails and await says there
        // is work, so the caller progresses and the error handler runs. (Merely returning false
        // would not do: the runtime sleeps again until the caller's whole timeout has passed.)
        long slice = Math.min(timeoutNanos, livenessNanos);
        if (!holding.isEmpty()) {
            postHeld();
            // Nothing wakes this worker when a peer's queue gets room: it looks again after a pause.
            if (!holding.isEmpty()) slice = Math.min(slice, HEAD_SLEEP_MAX_NANOS);
        }
        CompletableFuture<?> waiting = headWaitsFor;
        long triesAgainAt = headTriesAgainAt;
        boolean woken;
        if (triesAgainAt != 0) {
            // The record at the head waits for a thread to map its ring: nothing wakes this worker when one could start, so
            // it sleeps until the next try is due, a signal() or a peer's check, and then says there is work.
            long untilTry = triesAgainAt - System.nanoTime();
            woken = untilTry <= 0 || sleepBeating(Math.min(slice, untilTry), () -> false) || triesAgainAt - System.nanoTime() <= 0;
        } else if (waiting != null && !waiting.isDone()) {
            // The record at the head waits for its ring: nothing here to do until the mapping is done (it wakes this
            // worker), a signal(), or a peer is due for a check. Records pending, or committed meanwhile, are no work yet.
            woken = sleepBeating(slice, headRingMapped);
        } else if (queue.isHeadBlocked()) {
            woken = awaitBlockedHead(slice);
        } else if (!keepingRings.isEmpty() && !queue.hasPending()) {
            // Its application keeps payloads: a sender whose ring they fill waits for room this worker gives back only
            // once they are closed, and judges it by its beats meanwhile, though its queue is empty and it has nothing
            // to do. (Only then: an idle worker that keeps nothing has no sender waiting on it, and sleeps unwoken.)
            woken = sleepBeating(slice, recordPending);
        } else {
            woken = queue.await(libc, slice);
        }
        // Also when woken: a worker that awaits between messages progresses once per message, and progress reads the
        // clock only every 256th busy call, which a trickle of messages 15 ms apart stretched to seconds past a death.
        boolean work = checkPeersIfDue() > 0 || woken;
        if (work) countWokenAwait();
        return work;
    }

    /** Counts an await that found work ({@link #wokenAwaitsWithoutProgress}), and warns once when they come with no progress() between. */
    private void countWokenAwait() {
        if (progressCount != progressCountAtWokenAwait) {
            progressCountAtWokenAwait = progressCount;
            wokenAwaitsWithoutProgress = 1;
        } else if (++wokenAwaitsWithoutProgress == AWAITS_WITHOUT_PROGRESS_TO_WARN && !warnedOfAwaitsWithoutProgress) {
            warnedOfAwaitsWithoutProgress = true;
            warnBestEffort(() -> plugin + ": await returned " + AWAITS_WITHOUT_PROGRESS_TO_WARN
                    + " times in a row with no progress() between: work waits in this worker's receive queue, and await delivers "
                    + "no message of the transport it sleeps in, so a loop of await alone spins and its senders fail this worker as "
                    + "hung after " + plugin + ".heartbeat.timeout. Call worker.progress() after each await (docs/runtime.md, "
                    + "\"Sleeping: await and signal\")");
        }
    }

    /**
     * Waits, at most {@code slice}, for the record at the head to be committed. A sender commits
     * what it claimed within a microsecond or so, so this spins first. One stopped between its
     * claim and its commit (SIGSTOP, a paused container, a debugger) holds the head for as long as
     * it stays stopped, so past the spin this sleeps. A sender's wake after its commit is ordered
     * after its claim's CAS, not after the commit (no fence between them: one less on every
     * message), and can miss a receiver that goes to sleep in that instant; so each sleep is a
     * pause, doubling up to {@link #HEAD_SLEEP_MAX_NANOS}, after which this looks again: a
     * wake-up lost there costs at most that. A signal wakes the sleep at once (the spin sees only
     * the head: a signal waits for its end); another sender's message, behind the head, only makes
     * it look at the head again ({@link #sleepBeating}). It beats, as progress()
     * would. (Taking the pending record for work, as before, spun a thread looping on await for as
     * long as its sender stayed stopped.)
     */
    private boolean awaitBlockedHead(long slice) {
        long position = queue.headPosition();
        if (position != awaitBlockedAt || awaitBlockedPause == 0) {
            awaitBlockedAt = position;
            long spinUntil = System.nanoTime() + Math.min(slice, BLOCKED_SPIN_NANOS);
            do {
                if (isHeadUnblocked()) return true;
                Thread.onSpinWait();
            } while (System.nanoTime() - spinUntil < 0);
            awaitBlockedPause = BLOCKED_PAUSE_FIRST_NANOS;
        }
        long pause = Math.min(slice, awaitBlockedPause);
        awaitBlockedPause = Math.min(2 * awaitBlockedPause, HEAD_SLEEP_MAX_NANOS);
        return sleepBeating(pause, headUnblocked) || isHeadUnblocked();
    }

    /**
     * Sleeps on the queue's futex ({@link ReceiveQueue#awaitSignal}) while the record at the head
     * waits for something, or while the queue is empty and payloads this worker keeps hold room in
     * senders' bounce rings ({@link #keepDelivered}), beating before, after, and at least every
     * {@link #HEAD_SLEEP_MAX_NANOS} between: no progress() runs meanwhile (the runtime's await loop
     * does not call it), and senders waiting on a queue full behind that record, or for room in
     * their bounce ring, must not judge this worker hung, whatever their heartbeat.timeout.
     * (Beating only before and after, a worker slept up to half its own heartbeat.timeout unbeaten,
     * and a sender whose timeout was shorter failed it as hung.) A sender's wake after a commit
     * behind that record is no work this worker can do: it sleeps on (returning, it made a caller's
     * await loop go round once per such message); only {@code ready} or a {@link #signal()} ends
     * the sleep early.
     */
    private boolean sleepBeating(long nanos, java.util.function.BooleanSupplier ready) {
        long deadline = System.nanoTime() + nanos;
        boolean woken;
        do {
            queue.beat(++progressCount);
            woken = queue.awaitSignal(libc, Math.min(deadline - System.nanoTime(), HEAD_SLEEP_MAX_NANOS), ready)
                    && (ready.getAsBoolean() || signalled.getAndSet(false));
        } while (!woken && deadline - System.nanoTime() > 0);
        queue.beat(++progressCount);
        return woken;
    }

    private boolean isHeadUnblocked() {
        return !queue.isHeadBlocked();
    }

    private boolean hasRecordPending() {
        return queue.hasPending();
    }

    /**
     * @throws ConduitException when this worker's receive queue faults (a posix queue file truncated
     *         by another process), as progress() and await() then do
     */
    @Override
    public void signal() {
        signalled.set(true);
        try {
            queue.signal(libc);
        } catch (InternalError e) {
            // Called on any thread, Worker.signal() among them, where no runtime conversion follows: the JDK's bare error
            // reached the application's thread.
            throw new ConduitException(MappedMemoryFaults.describe(e, plugin, "this worker's receive queue"), e);
        }
    }

    private void ensureOpen() {
        if (closed) throw closedError();
        if (queueDamaged != null) throw new ConduitException(queueDamaged);
    }

    IllegalStateException closedError() {
        return new IllegalStateException(plugin + " transport is closed");
    }

    /**
     * Fails this worker for good when a process that maps its queue overwrote the header: new
     * senders are refused at the header and current ones fail at the tail, so the worker would
     * otherwise wait for messages that can no longer come, without a word.
     */
    private void checkQueueHeader() {
        if (queueDamaged != null) throw new ConduitException(queueDamaged);
        if (closed) return; // a close under way wrote the closing word: not damage
        String damage;
        try {
            damage = queue.headerDamage(token);
        } catch (InternalError e) {
            if (!MappedMemoryFault.is(e)) throw e;
            return; // truncated, not overwritten: every poll says so
        }
        if (damage == null || closed) return; // a close that began meanwhile wrote the closing word
        queueDamaged = plugin + ": this worker's receive queue header was overwritten (" + damage + ") by a process that maps the "
                + "queue: no sender can reach this worker any more. Close it and open a new worker, whose address the peers must "
                + "connect to; look for the process that wrote it (any process of a user that may write the shared directory, for "
                + "posix; a connected peer, for memfd)";
        try {
            queue.markDamaged(); // so that its senders, whose messages it will never read, fail their endpoints, saying why
        } catch (InternalError truncated) {
            // Then their sends fault, and fail their endpoints that way.
        }
        throw new ConduitException(queueDamaged);
    }

    /**
     * Says once when this worker's lease lost its name in the shared directory. The worker goes on
     * serving the peers connected to it, whose watches hold the lease open, while every new connect
     * fails on the missing lease, and the peer's error can only guess why. A lease is never named
     * again (no name can be given back to an open file that has none), so the remedy is a new worker.
     * Looks at the first liveness check and every {@value #CHECKS_PER_OWN_LEASE_LOOK}th after it.
     */
    private void checkOwnLease() {
        if (--checksToOwnLeaseLook > 0) return;
        checksToOwnLeaseLook = CHECKS_PER_OWN_LEASE_LOOK;
        lease.warnOnceIfRemoved(ownLeaseHolder, "The peers connected to it are unaffected, but no new peer can connect "
                + "to it: a connect to its address fails finding no lease. Close this worker and open a new one, whose address "
                + "the peers must connect to");
    }

    /**
     * Closes every endpoint (freeing their bounce rings; a large message an endpoint holds is
     * posted first if its peer's queue has room, and its peer's reading of it waited for as of
     * every large message: {@link ShmEndpoint#postHeldBeforeTheWorkerCloses}), frees the receive queue, closes the
     * provider, then the worker's lease and the directory. Every step runs even if an earlier one
     * fails; the first failure is thrown with the others suppressed. A file the close cannot remove
     * (the queue's or a ring's, chunks of the provider) keeps the provider's lease, unlocked, so
     * that the next reclaim in the directory, by any Conduit process, removes it and then the lease
     * ({@link OwnerLease#close}, which warns naming the file and the errno). Idempotent.
     */
    @Override
    public void close() {
        List<ShmEndpoint> remaining;
        synchronized (handOff) {
            if (closed) return;
            // From here the owner's thread, if a forced close runs past it, hands nothing more over (handOff): what it
            // handed over before, this close sees below and releases. No endpoint is added from here on, and one that
            // moves between the lists moves in one step (closing).
            closed = true;
            remaining = new ArrayList<>(endpoints);
            remaining.addAll(closing);
        }
        long deadline = System.nanoTime() + heartbeatNanos;
        RuntimeException failure = null;
        try {
            queue.markClosing();
        } catch (InternalError queueFault) {
            // This worker's queue was truncated under it: no sender can read the word either.
        }
        // No ring is mapped from now on; one under way is waited for below, within the same bound as the peers.
        if (mappingThread != null) mappingThread.shutdown();
        // A large message an endpoint holds goes first where its peer's queue has room now, so that the wait covers it as
        // it covers every large message posted before it (posted only after the wait, its ring was freed at once).
        for (ShmEndpoint ep : remaining) ep.postHeldBeforeTheWorkerCloses();
        awaitPeersReading(remaining, deadline);
        int[] refused = {0};
        for (ShmEndpoint ep : remaining) {
            failure = Cleanup.collect(failure, () -> {
                if (ep.closeWithWorker()) refused[0]++;
            });
        }
        if (refused[0] > 0) {
            int n = refused[0];
            warnBestEffort(() -> plugin + ": closed " + n + " connections that their peer workers had refused; each dropped what "
                    + "was sent on it from its refusal on (its progress() named the reason)");
        }
        long[] kept;
        synchronized (handOff) {
            kept = inbound.keys();
        }
        for (long connection : kept) {
            // nothing, if the owner's call still under way forgot it meanwhile
            failure = Cleanup.collect(failure, () -> giveBackConnection(connection, false));
        }
        List<ChunkMapping> keptRings = new ArrayList<>();
        synchronized (handOff) {
            // Rings of connections forgotten while the application kept payloads of them: the close invalidates those
            // payloads (their views then throw IllegalStateException), as it does every ring it unmaps.
            for (Inbound in : keepingRings) {
                if (in.forgotten && in.bounceMapping != null) {
                    releaseBudget(in);
                    keptRings.add(in.bounceMapping);
                    in.bounceMapping = null;
                }
            }
            keepingRings.clear();
        }
        for (ChunkMapping mapping : keptRings) failure = Cleanup.collect(failure, mapping::close);
        // The unmaps handed over to the mapping thread (forgotten connections' rings, released endpoints' mappings of
        // their peers' queues): the shutdown above dropped those not begun, and one under way there is waited for. Handed over only while the worker was open, so that none comes after this.
        if (mappingThread != null) mappingThread.unmapHandedOver();
        synchronized (reclaiming) { // one under way on the mapping thread is waited for: the directory closes below
            // A check failed endpoints, and none came after it to reclaim (checkPeers); or a reclaim handed over never began.
            if (reclaimHandedOver.getAndSet(false) | reclaimDue) reclaimDeadPeers(directory);
        }
        if (mappingThread != null && !mappingThread.awaitIdle(Math.max(0, deadline - System.nanoTime()))) {
            warnBestEffort(() -> plugin + ": a sender's bounce ring was still being mapped when the "
                    + "worker closed (heartbeat.timeout passed, or the closing thread was interrupted); it is unmapped as soon as its "
                    + "mapping is done");
        }
        try {
            queue.markClosed(); // a kill from here on leaves only files to reclaim, and the lease goes last
        } catch (InternalError queueFault) {
            // Truncated under it, as above.
        }
        // Said where a connect that finds the queue freed below, with the lease still held or just released, reads it.
        lease.markClosed();
        // A step's failure, an Error of the provider too (one it rethrows from a release, a class missing out of
        // descriptors), leaves the steps after it to run: the lease held past a close would keep every file of this
        // worker from a cleaner for the process's life.
        failure = Cleanup.collect(failure, () -> provider.free(queueChunk));
        failure = Cleanup.collect(failure, provider::close);
        failure = Cleanup.collect(failure, lease::close);
        failure = Cleanup.collect(failure, directory::close);
        if (failure != null) throw failure;
    }

    /**
     * Waits, for all endpoints at once and at most {@code heartbeat.timeout} in all, while any of
     * them {@link ShmEndpoint#awaitsDrain awaits} its peer reading the large payloads in its bounce
     * ring, which closing frees. An interrupt ends the wait (and stays set).
     */
    private void awaitPeersReading(List<ShmEndpoint> endpoints, long deadline) {
        while (!Thread.currentThread().isInterrupted()) {
            long now = System.nanoTime();
            if (now - deadline >= 0) return;
            boolean waiting = false;
            for (ShmEndpoint ep : endpoints) waiting |= ep.awaitsDrain();
            if (!waiting) return;
            try {
                queue.beat(++progressCount); // alive while it waits: its senders wait for its lease's release, not for a hang
            } catch (InternalError truncated) {
                // Its own queue is gone: senders judge it by its lease.
            }
            java.util.concurrent.locks.LockSupport.parkNanos(50_000);
        }
    }

    private static RuntimeException add(RuntimeException failure, RuntimeException e) {
        if (failure == null) return e;
        failure.addSuppressed(e);
        return failure;
    }
}
