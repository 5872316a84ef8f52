package dev.conduit.shm;

import dev.conduit.spi.FormatVersions;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.security.MessageDigest;

/**
 * A worker's receive queue in shared memory: a bounded ring written by many senders in other
 * processes and read by one consumer, the worker (after Agrona's many-to-one ring buffer). This
 * class is a flyweight over the mapped segment; the receiver and every sender have their own.
 *
 * <h2>Layout</h2>
 * Native byte order: both sides are on one host.
 * <pre>
 * offset  size  field           written by                     how
 * ------  ----  --------------  -----------------------------  -----------------------------------------
 *      0     4  magic "CNDQ"    receiver, once                 before the queue is published
 *      4     4  version (8)     receiver, once
 *      8     8  capacity        receiver, once                 ring bytes, a power of two
 *     16    16  token           receiver, once                 random; a connector proves it reached this
 *                                                              queue by finding its address's token here
 *    128     8  tail            senders                        CAS to claim space (on one line with named up
 *                                                              to, which only senders write but for a dead
 *                                                              claimant's): the last claimant's owner tag in
 *                                                              the high 32 bits,
 *                                                              the tail position in lines (position / 64,
 *                                                              mod 2^32) in the low 32 ({@link #packTail})
 *    136     8  named up to     senders, receiver              release store: the end of the last claim whose
 *                                                              record is taken; the receiver's CAS releases a
 *                                                              dead last claimant's ({@link #unnamedClaimant})
 *    256     8  head            receiver                       release store after zeroing what it read
 *                                                              (zeroing is batched: see release)
 *    384     4  wake sequence   senders, receiver's signal()   getAndAdd, then FUTEX_WAKE
 *    388     4  sleeping        receiver                       1 while it waits on the wake sequence: an opaque
 *                                                              store and a full fence before it looks for work,
 *                                                              a release store of 0 once it wakes; senders read
 *                                                              it (volatile) after their claim's CAS
 *    512     8  heartbeat       receiver                       opaque store at every progress() call; also
 *                                                              around each pause, at most 1 ms, of an await on
 *                                                              a record at the head that cannot be read yet, and
 *                                                              while its close waits for peers to read
 *    520     4  closing         receiver                       release store of 1 when its worker starts to
 *                                                              close (senders stop waiting for it to read),
 *                                                              of 2 once it has closed all but the queue and
 *                                                              its lease (a peer tells an orderly close from
 *                                                              a death, also one during the close, by it);
 *                                                              of 3 when it found this header overwritten
 *                                                              (its senders fail); any other value while
 *                                                              its worker is open is header damage
 *    528     8  read position   receiver                       release store after each poll that read:
 *                                                              every record before it was handled (or dropped)
 *   1024     8  refusals        receiver                       release store: how many connections it refused
 *   1088  2048  refused         receiver                       the last 128 refusals, 16 bytes each: the
 *                                                              connection id (0 while the slot is rewritten,
 *                                                              then a release store) and the reason; a sender
 *                                                              that finds its connection here fails its endpoint
 *   4096     …  ring            senders write, receiver reads  records, 8-byte aligned (page-aligned start)
 * </pre>
 *
 * <h2>Records</h2>
 * <pre>
 * offset  size  field
 *      0     4  length          0 = free (or claimed, not yet taken); -length from take to commit;
 *                               +length (release, with the type) once complete
 *      4     4  type            free: the free word's mark for this position and lap; taken: the
 *                               sender's owner tag; complete: MSG, LARGE, CONNECT, BOUNCE, CLOSE, PAD
 *      8     8  connection      the sender's connection id
 *     16     4  message id      the active-message id (MSG, LARGE)
 *     20     4  header length
 *     24     8  payload length
 *     32     8  bounce end      LARGE: the sender's bounce-ring position after this payload
 *     40     8  bounce offset   LARGE: where the payload is in the sender's bounce ring
 *     48     …  header bytes, then payload bytes (MSG; CONNECT, BOUNCE, CLOSE carry a control payload)
 * </pre>
 * The payload length may be less than the record's room: a zero-copy send
 * ({@code ShmEndpoint.trySendEncoded}) claims room for the most its encoder may write, and an
 * encoder that throws leaves its record abandoned ({@link #abandon}: padding).
 *
 * <h2>Claiming, taking, committing</h2>
 * A sender claims {@code recordLength(48 + header + payload)} bytes (a multiple of 64: every
 * record starts on a cache line, and a small message is one line) by CAS on the tail word, which
 * it packs with its owner tag (the upper 32 bits of its connection id, which name its worker
 * lease: {@code OwnerLease.newConnectionId}): the tail word always names the last claimant. It
 * then <em>takes</em> the record by a plain store of {@code -length} and its owner tag into the
 * record's first word, writes its connection id, and release-stores the claim's end as
 * {@code named up to}. A sender claims only while {@code named up to} is the tail, so at most the
 * last claim is unnamed (claimed, not yet taken), and the tail word says whose it is; one that
 * finds the last claim unnamed spins a little, then finds no room for now. Only then does it
 * write the rest of the record, and finally {@code +length} with the type, in one release store.
 * The take is a plain store, not a CAS on the line the receiver polls, which would wait for that
 * line to come from the receiver's core: nobody else writes the line while it is claimed (the
 * receiver takes back only a dead claimant's space, "Senders that stop").
 *
 * <p>Positions are 64-bit everywhere but in the tail word, whose 32 bits of lines cover 256 GiB:
 * a reader rebuilds the tail from a head it knows to be within a ring of it ({@link #tailAbove}),
 * the receiver from its own, a sender from the shared head, which it reads at every claim.
 *
 * <p>Claimable space is zeroed, but for the first word of each cache line, its free word
 * ({@code freeWord}): length 0, so it is never taken for a record, and a mark that is a keyed
 * hash of the line's ring position (lap and offset), never 0. Fields a record does not use are
 * zero, but for the first word of each line after the first, which keeps its free word until the
 * payload covers it (an encoder's view of the room sees it). When the record does not fit before
 * the end of the ring, the claim also covers the rest of the ring, which the sender makes a PAD
 * record after its take, by the same CAS. A claimed record stops the receiver's head until it is
 * committed, and every sender's records behind it with it, so a LARGE record is claimed only once
 * its payload is in the sender's bounce ring, copied or encoded: under its claim only its fields
 * and header are written ({@code ShmEndpoint}, "Large messages"; {@link #hasRoomFor} spares a
 * copy into a full queue).
 *
 * <p>The receiver formats the ring with every line's free word. It reads records while their
 * length is positive, zeroes what it read and writes each line's free word for the next lap (in
 * batches, off the message's path), then moves the head with a release store. It never reads past
 * the shared head plus one ring: no sender can claim there yet, and an earlier lap's record, read
 * but not yet zeroed, still lies there.
 *
 * <h2>Refused connections</h2>
 * A connection of which the receiver dropped a message while its sender lived (it keeps too many
 * connections, cannot map the connection's bounce ring, or found a record of it that breaks the
 * protocol) is refused: the receiver drops every later record of it too (a CONNECT in its name,
 * which no sender writes twice, does not take it back while it is listed), so that what it
 * delivered of the connection is a prefix of what was sent, without a hole, and lists it under
 * {@code refused} ({@link #refuse}). A sender looks there when {@code refusals} changed, at its
 * liveness checks ({@link #refusalOf}), and fails its endpoint; one that closed its endpoint
 * before the receiver read its CONNECT waits for that (bounded), and logs a WARNING if it was
 * refused. A sender that checks less often than 128 refusals are made may miss its own: the
 * receiver lists it again at its next message if its owner's lease is held (one such look per
 * liveness interval), and its bounce ring tells it too, when a large message waits for room the
 * receiver never releases. A sender never gives a new connection an id listed here
 * ({@code OwnerLease.newConnectionId}).
 *
 * <h2>Senders that stop</h2>
 * A record taken but never committed names its sender's owner: the receiver turns it into padding
 * once that owner's lease shows it dead ({@link #skipDeadClaim}), never while it lives, for a live
 * sender may still be writing the record. A record claimed but not yet taken (its sender stopped,
 * or died, between its CAS and its take) is the last claim, and the tail word names its owner
 * ({@link #unnamedClaimant}): the receiver waits for it like for a taken record, and takes the
 * space back, cache line by cache line, only once that owner is dead
 * ({@link #takeBackUnnamedClaim}), for a live sender's take is a plain store that would land in
 * space given back. A sender stopped anywhere between its claim and its commit thus holds the
 * queue: every sender's next claim waits, until it resumes or dies. The receiver's take-back of a
 * dead last claimant's space, or skip of its record (one that ends at the tail), stores
 * {@code named up to} for it, or every sender would wait for ever. Unnamed space at the head while
 * {@code named up to} is the tail is no sender's claim (a process that maps the queue moved the
 * tail): the receiver takes it back by a CAS from each line's free word, which leaves alone a line
 * a sender took meanwhile.
 * A length no sender writes (a process that maps the queue wrote it) is skipped
 * up to the next cache line, where the next honest record starts: it costs what it covers, and the
 * queue goes on. A well-formed record written past every claim is read like any other, since
 * checking each record against the tail would cost every message a read of the line each claim
 * writes; the head then passes the tail, which {@link #headerDamage} reports, as it does a tail
 * word written.
 */
public final class ReceiveQueue {

    public static final int MAGIC = 0x51444E43; // "CNDQ"
    /**
     * 8: a claim packs the claimant's owner tag into the tail word, a claimant takes its record by a
     * plain store and then stores {@code named up to} (offset 136), and senders claim only while it is the
     * tail (a sender of 7 takes by a CAS that a receiver of 8 never races, and claims past an unnamed claim);
     * 7: a receiver says in its senders' bounce rings how far it read ({@code BounceRing} offset 72)
     * while its application keeps payloads there unreleased (a sender of 6 took such payloads for a
     * ring the receiver could not map, and failed its endpoint); 6: a CONNECT carries the sender's own transport address after its lease (a receiver of 5
     * refuses the trailing bytes); 5: the refused connections (and, with no version of its own, the closing word's 3, which a
     * reader that does not know it takes for 1, closing); 4: the closing word's second value, 2 when the close is done (3: records are taken by a CAS on
     * their first word, which holds the line's free word while free, and records are whole lines;
     * 2: the closing word and the read position). A sender attaches to a queue of this version only
     * ({@link #attach} refuses another), so a change to what senders write or
     * receivers accept that breaks an honest peer of the previous layout takes a new version.
     */
    public static final int VERSION = 8;
    public static final int TOKEN_LENGTH = 16;

    static final long MAGIC_OFFSET = 0;
    static final long VERSION_OFFSET = 4;
    static final long CAPACITY_OFFSET = 8;
    static final long TOKEN_OFFSET = 16;
    static final long TAIL_OFFSET = 128;
    static final long NAMED_OFFSET = 136;
    static final long HEAD_OFFSET = 256;
    static final long WAKE_OFFSET = 384;
    static final long SLEEPING_OFFSET = 388;
    static final long HEARTBEAT_OFFSET = 512;
    static final long CLOSING_OFFSET = 520;
    /** The closing word's value when the receiver found its header overwritten: see {@link #markDamaged}. */
    private static final int DAMAGED = 3;
    static final long READ_OFFSET = 528;
    static final long REFUSALS_OFFSET = 1024;
    static final long REFUSED_OFFSET = 1088;
    static final int REFUSED_SLOTS = 128;
    static final long REFUSED_SLOT = 16;
    public static final long HEADER_LENGTH = 4096;

    public static final int RECORD_HEADER = 48;
    /** Senders start every record on a cache line; the receiver accepts any multiple of 8. */
    public static final int RECORD_ALIGNMENT = 64;
    /** A position's line count is the position shifted right by this: the unit of the tail word ({@link #packTail}). */
    private static final int LINE_SHIFT = Integer.numberOfTrailingZeros(RECORD_ALIGNMENT);
    static final long TYPE = 4;
    static final long CONNECTION = 8;
    static final long MESSAGE_ID = 16;
    static final long HEADER_SIZE = 20;
    static final long PAYLOAD_SIZE = 24;
    static final long BOUNCE_END = 32;
    static final long BOUNCE_OFFSET = 40;

    public static final int MSG = 1;
    public static final int LARGE = 2;
    public static final int CONNECT = 3;
    public static final int BOUNCE = 4;
    public static final int CLOSE = 5;
    public static final int PAD = 6;

    private static final VarHandle INT = ValueLayout.JAVA_INT.varHandle();
    private static final VarHandle LONG = ValueLayout.JAVA_LONG.varHandle();
    private static final MemorySegment ZEROS = Arena.global().allocate(64 << 10, 8);
    private static final boolean LITTLE_ENDIAN = java.nio.ByteOrder.nativeOrder() == java.nio.ByteOrder.LITTLE_ENDIAN;

    private final MemorySegment memory;
    private final long capacity;
    private final long mask;
    /** The key of the free words' marks ({@link #freeWord}): the first 8 bytes of the queue's random token. */
    private final long freeKey;
    /** Sender side: see {@link #claimedUpTo()}. */
    private long claimedUpTo;
    /** Sender side: the 4 KiB page of ring positions whose first claim this flyweight preceded with a read ({@link #readOncePerPage}). */
    private long pageRead = -1;
    /** Receiver side: where this consumer has read up to. */
    private long head;
    /**
     * Receiver side: the tail as it was when this receiver stored {@code named up to} for a dead last
     * claimant ({@link #releaseDeadLastClaim}): unnamed space below it is that dead sender's, and is
     * taken back without judging anyone again.
     */
    private long deadUpTo;
    /** Receiver side: up to where read bytes are zeroed, and so the shared head that senders see. */
    private long zeroed;
    /**
     * Receiver side: how far the shared head may lag what was read (the bound senders size their
     * records by: {@link #largestRecordThatAlwaysFits}). Past the first 64 KiB of a lap kept by
     * earlier versions, so a sender of any version finds room where it expects it.
     */
    private final long zeroBatch;
    /**
     * Receiver side: how many read bytes wait before they are zeroed and given back, at most
     * {@link #zeroBatch}: {@value #ZERO_SLICE} bytes. Zeroing 64 KiB at once, every 1,024th small
     * message, took one poll 2.5-2.7 µs (one thread, warm caches; more between two processes,
     * whose sender's copies it invalidates) and landed whole on the latency of the message that
     * came during it, past the 99.9th percentile of a ping-pong; a 16 KiB slice took 0.4-0.6 µs,
     * every 256th, with the mean per poll unchanged (docs/runtime.md, "What runs on the thread
     * that calls progress()").
     */
    private final long zeroSlice;
    static final long ZERO_SLICE = 16 << 10;
    /** Receiver side: the wake sequence as the last await left it; a newer one is a signal it has not returned for. */
    private int observedSequence;
    /** Receiver side: {@link #hasPending}, made once (await must not allocate). */
    private final java.util.function.BooleanSupplier pending = this::hasPending;

    private ReceiveQueue(MemorySegment memory, long capacity) {
        this.memory = memory;
        this.capacity = capacity;
        this.mask = capacity - 1;
        this.freeKey = memory.get(ValueLayout.JAVA_LONG, TOKEN_OFFSET);
        this.zeroBatch = Math.min(64 << 10, capacity / 16);
        this.zeroSlice = Math.min(ZERO_SLICE, zeroBatch);
    }

    /** The mapped length for a ring of {@code capacity} bytes. */
    public static long mappedLength(long capacity) {
        return HEADER_LENGTH + capacity;
    }

    /** Formats fresh (zeroed) memory as an empty queue; the receiver calls this before publishing it. */
    public static ReceiveQueue format(MemorySegment memory, byte[] token) {
        return formatFrom(memory, token, 0);
    }

    /**
     * As {@link #format}, with the ring's positions starting at {@code start}, a multiple of the
     * capacity, as if that many bytes had gone through it: how a test reaches the tail word's wrap
     * at 2^38 bytes, which a busy queue of small messages reaches in minutes.
     */
    static ReceiveQueue formatFrom(MemorySegment memory, byte[] token, long start) {
        long capacity = memory.byteSize() - HEADER_LENGTH;
        if (capacity < 4096 || Long.bitCount(capacity) != 1) {
            throw new IllegalArgumentException("ring capacity " + capacity + " must be a power of two of at least 4096");
        }
        if (token.length != TOKEN_LENGTH) throw new IllegalArgumentException("token must have " + TOKEN_LENGTH + " bytes");
        if (start < 0 || (start & (capacity - 1)) != 0) {
            throw new IllegalArgumentException("start " + start + " is not a multiple of the ring capacity " + capacity);
        }
        memory.set(ValueLayout.JAVA_LONG, CAPACITY_OFFSET, capacity);
        MemorySegment.copy(token, 0, memory, ValueLayout.JAVA_BYTE, TOKEN_OFFSET, TOKEN_LENGTH);
        memory.set(ValueLayout.JAVA_INT, VERSION_OFFSET, VERSION);
        ReceiveQueue queue = new ReceiveQueue(memory, capacity);
        queue.head = start;
        queue.zeroed = start;
        queue.deadUpTo = start;
        memory.set(ValueLayout.JAVA_LONG, HEAD_OFFSET, start);
        memory.set(ValueLayout.JAVA_LONG, READ_OFFSET, start);
        memory.set(ValueLayout.JAVA_LONG, NAMED_OFFSET, start);
        memory.set(ValueLayout.JAVA_LONG, TAIL_OFFSET, packTail(start, 0));
        queue.writeFreeWords(start, start + capacity); // the first lap's; this touches every page of the ring now, as the first lap would
        INT.setRelease(memory, MAGIC_OFFSET, MAGIC);
        return queue;
    }

    /**
     * A queue of another layout version: a peer of another Conduit version, whose refusal says what to do, unlike the
     * other refusals of {@link #attach}, which find an address that does not name a queue.
     */
    static final class OtherLayoutVersion extends IllegalStateException {
        OtherLayoutVersion(String message) {
            super(message);
        }
    }

    /**
     * Attaches to a queue a peer published, checking that it is one and that it carries
     * {@code token}: the proof that this is the queue the peer's address names.
     *
     * @throws IllegalStateException naming what does not match
     */
    public static ReceiveQueue attach(MemorySegment memory, byte[] token) {
        if (memory.byteSize() < HEADER_LENGTH + 4096) throw new IllegalStateException("mapping of " + memory.byteSize() + " bytes is too short for a queue");
        int magic = (int) INT.getAcquire(memory, MAGIC_OFFSET);
        if (magic != MAGIC) throw new IllegalStateException(String.format("no receive queue here (magic 0x%08x)", magic));
        int version = memory.get(ValueLayout.JAVA_INT, VERSION_OFFSET);
        if (version != VERSION) {
            // No translation between layouts: processes of two Conduit versions connect only when their queue layouts are the same.
            throw new OtherLayoutVersion(FormatVersions.refusal("its receive queue layout", Integer.toUnsignedLong(version), VERSION, "the peer"));
        }
        long capacity = memory.get(ValueLayout.JAVA_LONG, CAPACITY_OFFSET);
        if (capacity != memory.byteSize() - HEADER_LENGTH || Long.bitCount(capacity) != 1) {
            throw new IllegalStateException("receive queue says capacity " + capacity + " but " + memory.byteSize() + " bytes are mapped");
        }
        byte[] found = new byte[TOKEN_LENGTH];
        MemorySegment.copy(memory, ValueLayout.JAVA_BYTE, TOKEN_OFFSET, found, 0, TOKEN_LENGTH);
        if (!MessageDigest.isEqual(found, token)) {
            throw new IllegalStateException("the queue's token does not match the address: a stale or forged address");
        }
        return new ReceiveQueue(memory, capacity);
    }

    /**
     * Receiver side: what a process that maps this queue overwrote in its header, or null when the
     * header is as {@link #format} wrote it (magic, version, capacity, {@code token}), the closing
     * word still 0 (the receiver calls this only while its worker is open), the shared head where
     * this receiver last put it, the tail at most a ring ahead of that head, and {@code named up to}
     * between a ring behind that head and the tail, and the tail itself once this receiver read every
     * claim. Senders check the same when they attach or claim, and refuse; the receiver reads its own
     * queue through the head alone and would not notice. A shared head
     * written back, or a tail written far ahead, would otherwise make every sender find the queue
     * full for ever, while the receiver, beating, seems well.
     */
    public String headerDamage(byte[] token) {
        int magic = (int) INT.getAcquire(memory, MAGIC_OFFSET);
        if (magic != MAGIC) return String.format("its magic is 0x%08x", magic);
        int version = memory.get(ValueLayout.JAVA_INT, VERSION_OFFSET);
        if (version != VERSION) return "its version is " + version;
        long written = memory.get(ValueLayout.JAVA_LONG, CAPACITY_OFFSET);
        if (written != capacity) return "its capacity is " + written;
        for (int i = 0; i < TOKEN_LENGTH; i++) {
            if (memory.get(ValueLayout.JAVA_BYTE, TOKEN_OFFSET + i) != token[i]) return "its token changed";
        }
        int closing = (int) INT.getAcquire(memory, CLOSING_OFFSET);
        if (closing != 0) return "its closing word is " + closing + ", which this receiver, open, did not write";
        long sharedHead = (long) LONG.getVolatile(memory, HEAD_OFFSET);
        if (sharedHead != zeroed) return "its head is " + sharedHead + ", not " + zeroed + " where this receiver put it";
        // Named-up-to before the tail, as every reader of both: a claim named between the two reads would put it past the tail read first.
        long named = (long) LONG.getAcquire(memory, NAMED_OFFSET);
        long tail = tailAbove((long) LONG.getVolatile(memory, TAIL_OFFSET), zeroed);
        if (tail - zeroed > capacity) {
            // Also where this receiver's head passed the tail: poll reads a well-formed record without reading the tail,
            // whose line every claim writes (a read per message on the path), so one written past every claim is read.
            return "its tail " + tail + " is not within a ring of its head " + zeroed + " (its tail word was written, or this "
                    + "receiver read a well-formed record written into its ring past every claim)";
        }
        // At most a ring behind the shared head: a claim that pads the ring's end stores its padding before named-up-to,
        // and the receiver may read past that padding and zero it meanwhile.
        if (zeroed - named > capacity || tail - named < 0) {
            return "its named-up-to " + named + " is not between a ring behind its head " + zeroed + " and its tail " + tail;
        }
        // Every claim read: the last claimant stored named-up-to before its commit, which this receiver read (or the
        // receiver stored it for a dead one), and no claim came since, for the tail was read after named-up-to. Behind the
        // tail here, every sender would find the last claim unnamed for ever.
        if (tail == head && named != tail) {
            return "its named-up-to " + named + " is not its tail " + tail + ", though this receiver read every claim";
        }
        return null;
    }

    public MemorySegment memory() {
        return memory;
    }

    public long capacity() {
        return capacity;
    }

    // ------------------------------------------------------------------------------------- sender

    /**
     * The bytes a sender claims for a record of {@code bytes} (header included): rounded up to
     * {@link #RECORD_ALIGNMENT}, so that a small message occupies one cache line of its own and
     * costs one line transfer from sender to receiver, never two.
     */
    public static int recordLength(long bytes) {
        return (int) ((bytes + RECORD_ALIGNMENT - 1) & -RECORD_ALIGNMENT);
    }

    /**
     * The largest record a sender can always claim once the receiver has read everything: a multiple
     * of {@link #RECORD_ALIGNMENT}. A record that does not fit before the ring's end also claims the
     * padding up to it (less than the record), and the shared head may lag what the receiver read by
     * less than a zero batch; a record of at most half of what remains fits in every case.
     */
    public int largestRecordThatAlwaysFits() {
        return (int) Math.min(Integer.MAX_VALUE & -RECORD_ALIGNMENT, (capacity - zeroBatch) / 2 & -RECORD_ALIGNMENT);
    }

    /**
     * Claims and takes {@code length} bytes (a multiple of {@link #RECORD_ALIGNMENT}, at most the capacity) for one record
     * of a sender whose connection id is 0 ({@link #claim(int, long)}): for a queue no {@code ShmTransport} reads (one
     * process's tests, a benchmark's bare queue), since such a receiver takes an unnamed claim of owner tag 0 back at
     * once, as no sender's ({@link #unnamedClaimant}).
     *
     * @return the record's offset in {@link #memory()}, or -1 when the ring is full now
     */
    public long claim(int length) {
        return claim(length, 0);
    }

    /**
     * How many times a claim re-reads {@code named up to} while the last claim is not yet named
     * before it finds no room for now: a claimant stores it a few instructions after its CAS, so
     * under fan-in this waits about one transfer of the tail's line; one stopped there holds the
     * queue until it resumes or dies, and the caller keeps its message pending meanwhile.
     */
    static final int NAMING_SPINS = 128;

    /**
     * Claims {@code length} bytes (a multiple of {@link #RECORD_ALIGNMENT}, at most the capacity) for one record of
     * {@code connection} by CAS on the tail word (the new tail and the connection's owner tag), then takes the record
     * by a plain store of {@code -length} and the owner tag into its first word, writes the connection id, and stores
     * {@code named up to}, before the caller writes anything else (see "Claiming, taking, committing" above). It claims
     * only while the last claim is named ({@code named up to} is the tail): one that stays unnamed for
     * {@link #NAMING_SPINS} looks finds no room, as a full ring does. A receiver that finds the record taken but not
     * committed knows whose it is ({@link #blockedConnection()}) also while the sender still copies its payload, and so
     * never takes a slow live sender's record for a dead one's. Every other field of the record is zero until the
     * caller writes it; the caller commits with the type ({@link #commit}).
     *
     * @return the record's offset in {@link #memory()}, or -1 when the ring is full now, or the last claim unnamed
     * @throws IllegalArgumentException if {@code length} is not a positive multiple of {@link #RECORD_ALIGNMENT}
     * @throws CorruptQueueException if the tail is more than a ring ahead of the head
     */
    public long claim(int length, long connection) {
        if (length <= 0 || (length & (RECORD_ALIGNMENT - 1)) != 0) {
            // Records start on lines: taking back space that nobody took goes a line at a time, and would cover a record starting inside one.
            throw new IllegalArgumentException("record length " + length + " is not a positive multiple of " + RECORD_ALIGNMENT);
        }
        int owner = ownerTag(connection);
        // Fresh at every claim: the tail is rebuilt from it, which is exact only within a ring of it.
        long head = (long) LONG.getVolatile(memory, HEAD_OFFSET);
        int spins = 0;
        while (true) {
            long word = (long) LONG.getVolatile(memory, TAIL_OFFSET);
            long tail = tailAbove(word, head);
            if (tail - head > capacity) {
                long now = (long) LONG.getVolatile(memory, HEAD_OFFSET);
                if (now != head) {
                    // Other claims and the receiver moved on since the head was read: look again from where it is now.
                    head = now;
                    continue;
                }
                // Claims never take more than the room the head leaves: a tail further ahead (or a head past it) was written.
                throw new CorruptQueueException("its tail " + tail + " is more than a ring ahead of its head " + head
                        + " (or its head is past its tail): a process that maps the queue wrote one of them");
            }
            if ((long) LONG.getAcquire(memory, NAMED_OFFSET) != tail) {
                // The last claim is not yet taken: claiming past it would leave two unnamed, and the tail names one owner.
                if (++spins > NAMING_SPINS) return -1;
                Thread.onSpinWait();
                continue;
            }
            long tailIndex = tail & mask;
            long toEnd = capacity - tailIndex;
            long padding = length > toEnd ? toEnd : 0;
            long required = length + padding;
            if (required > capacity - (tail - head)) {
                long now = (long) LONG.getVolatile(memory, HEAD_OFFSET);
                if (now == head) return -1;
                head = now; // the receiver moved on since: look again
                continue;
            }
            long position = tail + padding;
            // Both pages before the CAS: a fault after it would leave a claim unnamed for as long as this process lives.
            if (padding != 0) readOncePerPage(tail);
            readOncePerPage(position);
            if (!LONG.compareAndSet(memory, TAIL_OFFSET, word, packTail(tail + required, owner))) continue;
            take(position, twoInts(-length, owner), connection);
            // After the take: until then the claim's first line is free, and a receiver that comes to it waits for this
            // sender (or takes the space back once it is dead). It may read past the padding before named-up-to moves,
            // which headerDamage allows for.
            if (padding != 0) LONG.set(memory, HEADER_LENGTH + tailIndex, twoInts((int) padding, PAD));
            claimedUpTo = tail + required;
            LONG.setRelease(memory, NAMED_OFFSET, claimedUpTo);
            return HEADER_LENGTH + (position & mask);
        }
    }

    /**
     * Sender side: whether a {@link #claim} of {@code length} bytes (a positive multiple of
     * {@link #RECORD_ALIGNMENT}) would find room now. A look, not a claim: it reserves nothing, so
     * other senders may take the room before this one claims it. A large message looks before it
     * copies its payload into its bounce ring, which it does before its claim (a claimed record
     * stops the receiver's head until it is committed), so that a full queue costs it no copy;
     * nor does a last claim that stays unnamed for {@link #NAMING_SPINS} looks, which the claim
     * would wait on as it does here (its claimant stopped or died between its CAS and its take:
     * until it resumes or its space is taken back, every send of a large message copied its
     * payload, then lost the claim and rolled the copy back, at each retry).
     * A tail or head no sender writes answers true: the claim that follows says what is wrong.
     */
    public boolean hasRoomFor(int length) {
        long head = (long) LONG.getVolatile(memory, HEAD_OFFSET);
        for (int spins = 0; ; spins++) {
            long tail = tailAbove((long) LONG.getVolatile(memory, TAIL_OFFSET), head);
            if (tail - head > capacity) return true;
            if ((long) LONG.getAcquire(memory, NAMED_OFFSET) != tail) {
                if (spins >= NAMING_SPINS) return false;
                Thread.onSpinWait();
                continue;
            }
            long toEnd = capacity - (tail & mask);
            long required = length + (length > toEnd ? toEnd : 0);
            return required <= capacity - (tail - head);
        }
    }

    /**
     * Takes the record claimed at ring position {@code position}: a plain store of {@code taken}
     * into its first word, then its connection id. No CAS: the claim is this sender's alone until it
     * stores {@code named up to}, for the receiver takes back only a dead claimant's space.
     */
    private void take(long position, long taken, long connection) {
        long offset = HEADER_LENGTH + (position & mask);
        LONG.set(memory, offset, taken);
        // At once, before the caller copies anything: the connection routes the record, and the owner tag alone
        // already names its sender to a receiver that finds it blocked.
        memory.set(ValueLayout.JAVA_LONG, offset + CONNECTION, connection);
    }

    /**
     * Reads the record's line at ring position {@code position} before the first claim in its 4 KiB
     * page, before the CAS on the tail: a page truncated away then raises InternalError
     * ({@code MappedMemoryFaults}) with nothing claimed, where a fault after the CAS would leave an
     * unnamed claim that holds every sender while this process lives; and an interpreted CAS that
     * touched such a page (takes were CASes until version 8) killed the JVM (SIGBUS in
     * Unsafe_CompareAndSetLong). Once per page, not per record: the read would cost a small message
     * one more transfer of its line between cores. So a page truncated after its first claim's read
     * faults at a later claim's take, after the CAS, and leaves that claim unnamed while this process
     * lives; the receiver's head faults on the same page. What it reads does not matter. The read is
     * followed by a native call ({@link dev.conduit.linux.Libc#deliverPendingFaults}): compiled code
     * gets the read's fault at its next safepoint check, which may lie past the CAS (until
     * 2026-12-07 a claim run compiled went through its CAS and faulted after it, its claim unnamed:
     * {@code ReceiveQueueTest#aClaimThatPadsTheRingsEndIntoATruncatedPageClaimedNothing} failed in
     * the project's CI); once per page, as the read.
     */
    private void readOncePerPage(long position) {
        if (position >>> 12 == pageRead) return;
        LONG.getVolatile(memory, HEADER_LENGTH + (position & mask));
        dev.conduit.linux.Linux.libc().deliverPendingFaults();
        pageRead = position >>> 12; // only once the read came back: after a fault, the next claim reads again
    }

    /** The tail word of a claim that ends at ring position {@code tail} (a multiple of {@link #RECORD_ALIGNMENT}) by {@code owner}. */
    static long packTail(long tail, int owner) {
        return (long) owner << 32 | (tail >>> LINE_SHIFT & 0xFFFF_FFFFL);
    }

    /**
     * The tail position that tail word {@code word} holds, rebuilt from {@code head}, a position
     * known to be at most a ring behind it (the receiver's, or the shared head): the first position
     * at or past {@code head}'s line whose line count is the word's, mod 2^32. A tail behind that
     * head comes out about 256 GiB ahead, which is more than a ring: a caller that checks the
     * distance finds it written.
     */
    static long tailAbove(long word, long head) {
        long line = head >>> LINE_SHIFT;
        return (line + ((word - line) & 0xFFFF_FFFFL)) << LINE_SHIFT;
    }

    /** The owner tag that tail word {@code word} holds: the last claimant's. */
    static int tailOwner(long word) {
        return (int) (word >>> 32);
    }

    /**
     * The first word of the free line at ring position {@code position} (a multiple of
     * {@link #RECORD_ALIGNMENT}; lap and offset): length 0, and a mark that a keyed hash of the
     * position makes, never 0, so that neither zeroed memory nor another lap's or another line's
     * free word is taken for it, nor, but by chance, a payload's bytes.
     */
    long freeWord(long position) {
        return twoInts(0, (int) (((position ^ freeKey) * 0x9E37_79B9_7F4A_7C15L) >>> 32) | 1);
    }

    /** Writes the free word of every line whose ring position lies in [{@code from}, {@code to}), at that position's line. */
    private void writeFreeWords(long from, long to) {
        for (long line = (from + RECORD_ALIGNMENT - 1) & -RECORD_ALIGNMENT; line < to; line += RECORD_ALIGNMENT) {
            memory.set(ValueLayout.JAVA_LONG, HEADER_LENGTH + (line & mask), freeWord(line));
        }
    }

    /** What a taken record's type field holds: the owner bits of {@code connection} ({@code OwnerLease.newConnectionId}). */
    static int ownerTag(long connection) {
        return (int) (connection >>> 32);
    }

    /** Two adjacent int fields, {@code first} at the lower address, as the native-order long that one store writes and one load reads. */
    static long twoInts(int first, int second) {
        return LITTLE_ENDIAN ? (long) second << 32 | (first & 0xFFFF_FFFFL) : (long) first << 32 | (second & 0xFFFF_FFFFL);
    }

    /** The int at the lower address of a long that {@link #twoInts} made or one load read. */
    static int firstInt(long pair) {
        return LITTLE_ENDIAN ? (int) pair : (int) (pair >>> 32);
    }

    /** The int at the higher address of such a long. */
    static int secondInt(long pair) {
        return LITTLE_ENDIAN ? (int) (pair >>> 32) : (int) pair;
    }

    /** Publishes the record at {@code offset} as a record of {@code type}: the receiver may read it from now on. */
    public void commit(long offset, int length, int type) {
        LONG.setRelease(memory, offset, twoInts(length, type));
    }

    /** Turns a claimed record into padding the receiver skips (a send abandoned after its claim). */
    public void abandon(long offset, int length) {
        commit(offset, length, PAD);
    }

    /**
     * Wakes the receiver if it sleeps; call after committing a record claimed through this
     * flyweight. No fence is needed here: the claim's CAS on the tail is a volatile write that
     * precedes this volatile read of the sleeping flag, and the receiver sets the flag and then a
     * full fence before it reads the tail (volatile) in {@link #awaitSignal}. The CAS, the fence and
     * the volatile accesses have one total order, so either the receiver sees the claimed tail and
     * does not sleep, or this sees the flag and wakes it: no lost wake-up, and no second full fence
     * per message.
     *
     * <p>That holds for a receiver that looks at the tail. One that waits for the record at its
     * head to be committed ({@link #awaitSignal} with {@code ShmTransport}'s head check) looks at
     * the commit, and the commit's release store is not ordered before this read: on x86 both are
     * plain moves and the read may pass the store, so such a receiver can go to sleep on a commit
     * this read missed. (On aarch64 a store-release and a later load-acquire, stlr and ldar, stay
     * in order.) It sleeps in pauses of at most a millisecond for that reason
     * ({@code ShmTransport#awaitBlockedHead}): the price of keeping the fence off every message.
     *
     * @return whether the receiver was sleeping
     */
    public boolean wakeIfSleeping(dev.conduit.linux.Libc libc) {
        if ((int) INT.getVolatile(memory, SLEEPING_OFFSET) == 0) return false;
        signal(libc);
        return true;
    }

    /** Bumps the wake sequence and wakes the receiver: {@code Transport.signal()}. */
    public void signal(dev.conduit.linux.Libc libc) {
        INT.getAndAdd(memory, WAKE_OFFSET, 1);
        libc.futexWake(memory, WAKE_OFFSET, Integer.MAX_VALUE);
    }

    /** The receiver's heartbeat, for a sender that waits on a receiver that may be hung. */
    public long heartbeat() {
        return (long) LONG.getOpaque(memory, HEARTBEAT_OFFSET);
    }

    /** Whether the receiver's worker is closing: it will read nothing more, so waiting for it is pointless. */
    public boolean isClosing() {
        return (int) INT.getAcquire(memory, CLOSING_OFFSET) != 0;
    }

    // ----------------------------------------------------------------------------------- receiver

    /**
     * Reads one record at a time; {@link #poll} calls it for every complete, non-padding record. A
     * handler that cannot handle its record yet throws {@link RecordNotReady}.
     */
    @FunctionalInterface
    public interface RecordHandler {
        void onRecord(MemorySegment memory, long offset, int type, int length);
    }

    /**
     * Thrown by a {@link RecordHandler} that cannot handle its record yet, for a reason that may
     * pass (the receiver cannot map what the record points at: out of descriptors, say). The
     * record stays at the head, unconsumed, for the next poll, and poll rethrows this exception
     * ({@link #LATER}: returns). Records behind it wait too: the queue is in order, and a message
     * may not be lost.
     */
    public static final class RecordNotReady extends RuntimeException {
        @java.io.Serial private static final long serialVersionUID = 1L;

        /**
         * The record waits for work under way (its bounce ring being mapped), and nothing is wrong:
         * poll stops before it and returns, without throwing.
         */
        public static final RecordNotReady LATER = new RecordNotReady();

        public RecordNotReady(RuntimeException reason) {
            super(reason.getMessage(), reason, false, false);
        }

        private RecordNotReady() {
            super("not ready yet", null, false, false);
        }

        /** Why the record cannot be handled yet: what the receiver's caller is told; null for {@link #LATER}. */
        public RuntimeException reason() {
            return (RuntimeException) getCause();
        }
    }

    /**
     * Hands up to {@code limit} complete records to {@code handler}, in order, then releases their
     * space. A record's bytes are valid only during its call. If the handler throws, the records
     * before it and the one that threw are consumed (never redelivered) and the exception
     * propagates; unless it threw {@link RecordNotReady}: then that record stays at the head (and
     * for {@link RecordNotReady#LATER} poll returns instead of throwing).
     *
     * @return the number of records handed over
     * @throws CorruptQueueException when a record's length cannot be a record's
     */
    public int poll(RecordHandler handler, int limit) {
        long headIndex = head & mask;
        // Up to the end of the ring, and never past the shared head plus a ring: no sender can claim
        // there yet, and what lies there is an earlier lap's record, consumed but not yet zeroed.
        long contiguous = Math.min(capacity - headIndex, zeroed + capacity - head);
        long read = 0;
        int count = 0;
        try {
            while (read < contiguous && count < limit) {
                long offset = HEADER_LENGTH + headIndex + read;
                // Length and type in one load: a committed length makes the type written before it visible.
                long lengthAndType = (long) LONG.getVolatile(memory, offset);
                int length = firstInt(lengthAndType);
                if (length <= 0) break;
                if (length < 8 || (length & 7) != 0 || length > contiguous - read) {
                    // No sender writes this. The framing is lost up to the next cache line, where the next honest
                    // record starts: skip to it, so that one bad length word costs what it covers and never stops the queue.
                    long at = headIndex + read;
                    long claimedAhead = tailPosition() - (head + read);
                    // Past every claim it is no record: the claim that comes there overwrites it. Never read past the tail.
                    if (claimedAhead <= 0) break;
                    long room = contiguous - read;
                    long skip = Math.min(Math.min(toNextLine(at), room), Math.max(8, claimedAhead & -8));
                    read += skip;
                    throw new CorruptQueueException("record at ring offset " + at + " has length " + length + " (at most " + room
                            + ", a multiple of 8); the " + skip + " bytes up to the next cache line were skipped");
                }
                read += length;
                int type = secondInt(lengthAndType);
                if (type == PAD) continue;
                count++;
                try {
                    handler.onRecord(memory, offset, type, length);
                } catch (RecordNotReady e) {
                    read -= length;
                    if (e == RecordNotReady.LATER) {
                        count--;
                        break;
                    }
                    throw e;
                }
            }
        } finally {
            if (read > 0) release(headIndex, read);
        }
        return count;
    }

    /**
     * Consumes {@code read} bytes at the head. Zeroing them — so that no stale byte is ever taken
     * for a length — is deferred until {@link #zeroSlice} bytes have been read: zeroing a record
     * right after reading it would pull its cache lines back from the sender, who is writing the
     * next record beside it, and cost each message one more transfer between cores. The shared
     * head, which bounds the senders' claims, only moves past zeroed bytes, so senders never claim
     * unzeroed space; they see at most one slice less room, within the batch they allow for.
     */
    private void release(long headIndex, long read) {
        head += read;
        // After the handlers' releases of bounce-ring payloads: a sender that sees this position sees those too.
        LONG.setRelease(memory, READ_OFFSET, head);
        if (head - zeroed >= zeroSlice) zeroConsumed();
    }

    private void zeroConsumed() {
        long from = zeroed;
        while (from < head) {
            long index = from & mask;
            long n = Math.min(Math.min(head - from, capacity - index), ZEROS.byteSize());
            MemorySegment.copy(ZEROS, 0, memory, HEADER_LENGTH + index, n);
            from += n;
        }
        // Every line free for the next lap. Until then its first word is 0, which is no line's free word: a sender stopped
        // since a claim of this lap cannot take it meanwhile.
        writeFreeWords(zeroed + capacity, head + capacity);
        zeroed = head;
        LONG.setRelease(memory, HEAD_OFFSET, zeroed);
    }

    /** Receiver side: the tail, every record claimed so far starts before it. */
    public long tailPosition() {
        return tailAbove((long) LONG.getVolatile(memory, TAIL_OFFSET), head);
    }

    /** Whether a record (complete or not) waits at the head: the ring is not empty. */
    public boolean hasPending() {
        return tailPosition() - head > 0;
    }

    /** Whether the record at the head is claimed but not committed (taken or not). */
    public boolean isHeadBlocked() {
        return hasPending() && headLength() <= 0;
    }

    /** Whether the head is claimed but not yet taken: its sender is between its CAS and its take ({@link #claim}), or stopped or died there. */
    public boolean isHeadUnnamed() {
        return hasPending() && headLength() == 0;
    }

    /** The length word of the record at the head: positive once committed, negative while taken, 0 before. */
    private int headLength() {
        return (int) INT.getVolatile(memory, HEADER_LENGTH + (head & mask));
    }

    /**
     * The sender of the taken record blocking the head: its connection id, or, if the sender has
     * not written that yet, its owner tag in the upper 32 bits, which is what its liveness is judged
     * by ({@code OwnerLease.anyOwnerAlive}); 0 when the head holds no taken record.
     */
    public long blockedConnection() {
        long index = head & mask;
        long offset = HEADER_LENGTH + index;
        long word = (long) LONG.getVolatile(memory, offset);
        if (firstInt(word) >= 0) return 0;
        // A word no sender takes can lie in the ring's last 8 bytes (a process that maps the queue wrote it): no connection field follows.
        long connection = index + CONNECTION + 8 <= capacity ? memory.get(ValueLayout.JAVA_LONG, offset + CONNECTION) : 0;
        return connection != 0 ? connection : (long) secondInt(word) << 32;
    }

    /** The receiver's read position: the ring position of the record at the head. */
    public long headPosition() {
        return head;
    }

    /**
     * Skips the record at the head that a sender took and never committed, by turning it into
     * padding. Call only once that sender is known dead ({@link #blockedConnection}): a live one may
     * still be writing the record. When the record ends at the tail (it is the last claim) and
     * {@code named up to} is not the tail, that sender died after its take and before it stored it:
     * this stores it for the dead sender ({@link #releaseDeadLastClaim}), or every sender would wait
     * for ever. A record that ends before the tail releases nothing, even when the tail word names
     * the same owner tag: the last claim is then a later one, which two owners of one tag may make,
     * and it is judged on its own once it reaches the head.
     *
     * @return whether a blocked record was skipped
     */
    public boolean skipDeadClaim() {
        if (!hasPending()) return false;
        long headIndex = head & mask;
        long offset = HEADER_LENGTH + headIndex;
        long word = (long) LONG.getVolatile(memory, offset);
        int length = firstInt(word);
        if (length >= 0) return false; // committed meanwhile (or never taken: takeBackUnnamedClaim's)
        long named = (long) LONG.getAcquire(memory, NAMED_OFFSET); // before the tail: see unnamedClaimant
        long tailWord = (long) LONG.getVolatile(memory, TAIL_OFFSET);
        long tail = tailAbove(tailWord, head);
        long limit = Math.min(tail - head, capacity - headIndex);
        long claimed = -(long) length;
        // A length no claim writes (not a multiple of 8, or past the claims): skip to the next cache line instead.
        long gap = claimed >= 8 && (claimed & 7) == 0 && claimed <= limit ? claimed : Math.max(8, Math.min(toNextLine(headIndex), limit) & -8);
        if (!LONG.compareAndSet(memory, offset, word, twoInts((int) gap, PAD))) return false;
        // Only a record that ends at the tail is the last claim: the tail word's owner tag alone does not say so, for a later
        // claim, unnamed, may be another owner's of the same 32 bits, alive between its CAS and its take.
        if (head + gap == tail) releaseDeadLastClaim(named, tail);
        return true;
    }

    /**
     * Receiver side: the owner tag of the sender whose claim at the head is not yet taken, read from
     * the tail word (only the last claim can be unnamed: "Claiming, taking, committing"); 0 when the
     * head is not unnamed, or its space is no live sender's: {@code named up to} is the tail (a
     * process that maps the queue moved the tail), or it lies below the tail at which this receiver
     * stored {@code named up to} for a dead claimant. Judge the sender by its lease as a taken
     * record's ({@link #blockedConnection}), and take the space back only once it is dead
     * ({@link #takeBackUnnamedClaim}).
     */
    public int unnamedClaimant() {
        // Named-up-to before the tail: read after it, a claim made and named between the two reads would make it pass the
        // tail read, and equal to the tail it then proves the last claim named. Both before the head's line: a claim
        // after the one read here was made only once that line was taken, and the take is then seen.
        long named = (long) LONG.getAcquire(memory, NAMED_OFFSET);
        long word = (long) LONG.getVolatile(memory, TAIL_OFFSET);
        long tail = tailAbove(word, head);
        if (tail - head <= 0 || headLength() != 0 || head - deadUpTo < 0 || named == tail) return 0;
        return tailOwner(word);
    }

    /**
     * Takes back the claimed but untaken space at the head, one cache line at a time, up to the
     * first line a sender has taken, the tail or the shared head plus a ring: each line becomes a
     * PAD record by a CAS from its free word, which leaves alone a line a sender took meanwhile. The
     * space must be no live sender's, for a sender takes by a plain store: {@code deadOwner} is the
     * owner tag {@link #unnamedClaimant} gave, once its lease shows it dead, or 0 when it gave 0 (no
     * connection id of an owner tag 0 is given out: {@code OwnerLease}); this then stores
     * {@code named up to} for it ({@link #releaseDeadLastClaim}). Nothing is taken back when the
     * last claim is unnamed and of another owner than {@code deadOwner}.
     *
     * @return whether any space was taken back
     */
    public boolean takeBackUnnamedClaim(int deadOwner) {
        long named = (long) LONG.getAcquire(memory, NAMED_OFFSET); // before the tail: see unnamedClaimant
        long word = (long) LONG.getVolatile(memory, TAIL_OFFSET);
        long tail = tailAbove(word, head);
        long upTo;
        if (head - deadUpTo < 0) upTo = deadUpTo - tail < 0 ? deadUpTo : tail;
        else if (named == tail) upTo = tail;
        else if (tailOwner(word) == deadOwner) upTo = tail;
        else return false; // a claimant that may live
        // Never past the shared head plus a ring, as poll: a tail beyond it is no sender's.
        long claimed = Math.min(upTo - head, zeroed + capacity - head) & -8;
        long taken = 0;
        while (taken < claimed) {
            long index = (head + taken) & mask;
            long offset = HEADER_LENGTH + index;
            long line = (long) LONG.getVolatile(memory, offset);
            if (firstInt(line) != 0) break; // a record a sender took, or padding it wrote
            long room = Math.min(toNextLine(index), claimed - taken);
            if (!LONG.compareAndSet(memory, offset, line, twoInts((int) room, PAD))) break;
            taken += room;
        }
        if (tailOwner(word) == deadOwner) releaseDeadLastClaim(named, tail);
        return taken > 0;
    }

    /**
     * Stores {@code named up to} as the tail for a last claimant found dead (the tail, read after
     * {@code named}: its word names the dead owner of an unnamed claim, or a skipped record ends
     * there), by a CAS from what was read: it never will,
     * and every sender waits for it. Remembers that tail: unnamed space below it is the dead
     * sender's ({@link #unnamedClaimant}). Only ever forward: a named-up-to read past the tail (a live
     * sender claimed and named after the tail word was read) moved back would stop every claim for
     * good.
     */
    private void releaseDeadLastClaim(long named, long tail) {
        if (tail - named <= 0 || tail - head > capacity) return;
        if (LONG.compareAndSet(memory, NAMED_OFFSET, named, tail)) deadUpTo = tail;
    }

    /** Bytes from ring offset {@code at} (a multiple of 8) to the next record alignment boundary: 8 to {@link #RECORD_ALIGNMENT}. */
    private static long toNextLine(long at) {
        return RECORD_ALIGNMENT - (at & (RECORD_ALIGNMENT - 1));
    }

    /** Sender side: the ring position just past this flyweight's last claim. */
    public long claimedUpTo() {
        return claimedUpTo;
    }

    /** The position before which the receiver handled (or dropped) every record, as of its last poll. */
    public long readPosition() {
        return (long) LONG.getAcquire(memory, READ_OFFSET);
    }

    /**
     * Sender side: whether the receiver has handled every record claimed in its queue so far (its
     * {@link #readPosition} is at the tail): none waits there for it, any sender's.
     */
    public boolean readToTheTail() {
        long read = readPosition();
        return tailAbove((long) LONG.getVolatile(memory, TAIL_OFFSET), read) - read <= 0;
    }

    /**
     * Sender side, once the receiver reads nothing more (its worker closed or died): how many
     * messages (MSG and LARGE records) of {@code connection} lie between its {@link #readPosition}
     * and {@code upTo}, the end of that connection's last message, and so were never handled. Walks
     * the records there without trusting them: a length that is not a whole number of cache lines
     * (which no sender writes), or a line claimed and never taken, moves on by one line, where the
     * next record starts; never more than one ring, and never past {@code upTo}.
     */
    public long unreadMessagesOf(long connection, long upTo) {
        long from = readPosition();
        if (upTo - from <= 0) return 0;
        if (upTo - from > capacity) from = upTo - capacity; // a read position no receiver writes: at most a ring was claimed
        // Every record starts on a line, so does every read position a receiver writes: one off a line (a process that maps
        // the queue wrote it) would make the first read a misaligned access, which throws; the next record starts on the next.
        from = (from + RECORD_ALIGNMENT - 1) & -RECORD_ALIGNMENT;
        long count = 0;
        for (long at = from; upTo - at > 0; ) {
            long index = at & mask;
            long offset = HEADER_LENGTH + index;
            long lengthAndType = (long) LONG.getVolatile(memory, offset);
            // Taken and never committed: still a record's room (a length of Integer.MIN_VALUE stays negative, and is skipped).
            int length = Math.abs(firstInt(lengthAndType));
            // Only whole lines, so the walk stays on lines: a length of 8 bytes more than some lines landed inside the next
            // record, whose fields it then took for a length, and a ring of 8-byte lengths cost a step per 8 bytes.
            if (length <= 0 || (length & (RECORD_ALIGNMENT - 1)) != 0 || length > capacity - index) {
                at += RECORD_ALIGNMENT;
                continue;
            }
            int type = secondInt(lengthAndType);
            if (firstInt(lengthAndType) > 0 && (type == MSG || type == LARGE)
                    && (long) LONG.getVolatile(memory, offset + CONNECTION) == connection) {
                count++;
            }
            at += length;
        }
        return count;
    }

    /** Receiver side: lists {@code connection} as refused, for {@code reason} (not 0), over the oldest of the last {@value #REFUSED_SLOTS}. */
    public void refuse(long connection, int reason) {
        long refusals = (long) LONG.get(memory, REFUSALS_OFFSET);
        long slot = REFUSED_OFFSET + (refusals & (REFUSED_SLOTS - 1)) * REFUSED_SLOT;
        LONG.setRelease(memory, slot, 0L);
        LONG.setRelease(memory, slot + 8, (long) reason);
        LONG.setRelease(memory, slot, connection);
        LONG.setRelease(memory, REFUSALS_OFFSET, refusals + 1);
    }

    /** How many connections the receiver refused so far: a sender looks for its own ({@link #refusalOf}) when this changed. */
    public long refusals() {
        return (long) LONG.getAcquire(memory, REFUSALS_OFFSET);
    }

    /** The reason the receiver gave when it refused {@code connection}, among its last {@value #REFUSED_SLOTS} refusals; else 0. */
    public int refusalOf(long connection) {
        for (int i = 0; i < REFUSED_SLOTS; i++) {
            long slot = REFUSED_OFFSET + i * REFUSED_SLOT;
            if ((long) LONG.getAcquire(memory, slot) != connection) continue;
            long reason = (long) LONG.getAcquire(memory, slot + 8);
            if ((long) LONG.getAcquire(memory, slot) == connection) return (int) reason; // not rewritten meanwhile
        }
        return 0;
    }

    /** Tells senders that this receiver reads nothing more ({@link #isClosing}). */
    public void markClosing() {
        INT.setRelease(memory, CLOSING_OFFSET, 1);
    }

    /**
     * Tells senders that this receiver reads nothing more because it found its header overwritten
     * ({@link #headerDamage}): {@link #isClosing} as well, and {@link #isDamaged}. Its worker's
     * close, if it comes, writes over it.
     */
    public void markDamaged() {
        INT.setRelease(memory, CLOSING_OFFSET, DAMAGED);
    }

    /** Whether the receiver found its header overwritten and reads nothing more ({@link #markDamaged}). */
    public boolean isDamaged() {
        return (int) INT.getAcquire(memory, CLOSING_OFFSET) == DAMAGED;
    }

    /** Tells senders that this receiver's close got as far as its queue and lease: what follows cannot be killed halfway. */
    public void markClosed() {
        INT.setRelease(memory, CLOSING_OFFSET, 2);
    }

    /** Whether the receiver's close got as far as {@link #markClosed}: a lease released after it is an orderly close. */
    public boolean isClosed() {
        return (int) INT.getAcquire(memory, CLOSING_OFFSET) == 2;
    }

    /** Stores the receiver's heartbeat: called once per progress. */
    public void beat(long count) {
        LONG.setOpaque(memory, HEARTBEAT_OFFSET, count);
    }

    /**
     * Sleeps until a sender commits, {@link #signal} is called (also before this call: a signal is
     * never lost), or {@code timeoutNanos} pass; a timeout of 0 or less only looks.
     *
     * @return {@code true} if there may be work (a record, or a signal)
     */
    public boolean await(dev.conduit.linux.Libc libc, long timeoutNanos) {
        return awaitSignal(libc, timeoutNanos, pending);
    }

    /**
     * Sleeps until a sender commits, {@link #signal} is called (also before this call: a signal is
     * never lost), {@code ready} says so, or {@code timeoutNanos} pass; records already pending do
     * not end it (their handler waits for something else, which signals when it is done:
     * {@code ready}). A timeout of 0 or less has passed already: this only looks.
     *
     * @return {@code true} if there may be work
     */
    public boolean awaitSignal(dev.conduit.linux.Libc libc, long timeoutNanos, java.util.function.BooleanSupplier ready) {
        int sequence = (int) INT.getVolatile(memory, WAKE_OFFSET);
        if (sequence != observedSequence) {
            // signal() while nobody slept (or during the last sleep, after it woke): the next await returns at once.
            observedSequence = sequence;
            return true;
        }
        // One fence orders the flag before the reads of ready(): a volatile store would add a second one (x86: two locked
        // instructions where one does).
        INT.setOpaque(memory, SLEEPING_OFFSET, 1);
        VarHandle.fullFence();
        try {
            // After the flag: whoever makes this true later sees the flag, or signals after this reads the sequence.
            if (ready.getAsBoolean()) return true;
            // The futex takes a negative timeout for none at all: a caller's "time left" that ran out would sleep until woken.
            long timeout = Math.max(0, timeoutNanos);
            boolean woken = libc.futexWait(memory, WAKE_OFFSET, sequence, timeout) != dev.conduit.linux.FutexResult.TIMED_OUT;
            if (woken) observedSequence = (int) INT.getVolatile(memory, WAKE_OFFSET);
            return woken;
        } finally {
            // No fence: a sender that still sees 1 wakes nobody in vain but once, and the next sleep sets it again, fenced.
            INT.setRelease(memory, SLEEPING_OFFSET, 0);
        }
    }

    /** A record's length or framing is impossible: the queue was corrupted by a peer. */
    public static final class CorruptQueueException extends dev.conduit.spi.ConduitException {
        @java.io.Serial private static final long serialVersionUID = 1L;

        CorruptQueueException(String message) {
            super("receive queue corrupted: " + message);
        }
    }
}
