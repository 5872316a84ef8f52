package dev.conduit.it.transport;

import dev.conduit.Endpoint;
import dev.conduit.Message;
import dev.conduit.MessageHandler;
import dev.conduit.Worker;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The messages of the transport tests, made and checked the same way in every process.
 *
 * <p>A message of stream {@code s} with sequence number {@code n} has a 16-byte header
 * {@code [s: i32][profile: i32][n: i64]} (little-endian) and a payload whose size the profile
 * derives from {@code n} and whose bytes are a slice of {@link #SOURCE} — 4 MiB of seeded random
 * bytes, identical in every JVM — starting at an offset derived from {@code (s, n, size)}. So the
 * receiver knows, from the header alone, exactly which bytes must arrive: a lost, duplicated,
 * reordered, truncated or foreign message, or a payload read from the wrong place, is caught by
 * {@link Receiver}. Making a payload costs nothing (a slice) and checking one is a vectorized
 * {@link MemorySegment#mismatch}, so the tests measure the transport, not the pattern.
 */
final class Traffic {

    /** Message ids. */
    static final int DATA = 1;
    static final int ECHO = 2;

    static final int HEADER_SIZE = 16;
    static final long SOURCE_SIZE = 4L << 20;
    static final MemorySegment SOURCE = source();

    static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private Traffic() {
    }

    private static MemorySegment source() {
        MemorySegment s = Arena.global().allocate(SOURCE_SIZE, 64);
        SplittableRandom random = new SplittableRandom(0x5EED_C0DE_1DEAL);
        for (long i = 0; i < SOURCE_SIZE; i += 8) s.set(ValueLayout.JAVA_LONG, i, random.nextLong());
        return s;
    }

    /** How payload sizes follow sequence numbers. */
    enum Profile {
        /**
         * Mostly small, every size class of the transport: a cycle of 16 sizes from 0 B to 8 KiB
         * (8128 B is the largest that fits inline with this header, 8129 B the smallest that goes
         * through the bounce ring), every 100th message 64 KiB and every 1000th 1 MiB.
         */
        MIXED {
            private static final long[] CYCLE = {0, 8, 64, 8, 1024, 64, 8, 256, 0, 8, 64, 8128, 8, 64, 8129, 4096};

            @Override
            long size(long n) {
                if (n % 1000 == 999) return 1 << 20;
                if (n % 100 == 50) return 64 << 10;
                return CYCLE[(int) (n & 15)];
            }
        },
        /**
         * Only through the bounce ring (9000 B to 64 KiB): a sender spends most of its time between
         * claiming a record in the receiver's queue and committing it, copying a payload.
         */
        BULKY {
            private static final long[] CYCLE = {16 << 10, 9000, 64 << 10, 32 << 10};

            @Override
            long size(long n) {
                return CYCLE[(int) (n & 3)];
            }
        },
        /** Inline only: 0 to 1 KiB. */
        SMALL {
            private static final long[] CYCLE = {0, 8, 64, 8, 1024, 64, 8, 256};

            @Override
            long size(long n) {
                return CYCLE[(int) (n & 7)];
            }
        },
        /** Market-data ticks: 64 to 512 B, inline. */
        TICKS {
            private static final long[] CYCLE = {64, 128, 512, 64, 256, 64, 128, 96};

            @Override
            long size(long n) {
                return CYCLE[(int) (n & 7)];
            }
        };

        abstract long size(long n);
    }

    /** Where the payload of message {@code n} of stream {@code s} starts in {@link #SOURCE}. */
    static long offset(int s, long n, long size) {
        long x = (n + 1) * 0x9E3779B97F4A7C15L ^ (s + 1L) * 0xC2B2AE3D27D4EB4FL;
        x ^= x >>> 31;
        return Long.remainderUnsigned(x, SOURCE_SIZE - size + 1);
    }

    static MemorySegment payload(int s, Profile p, long n) {
        long size = p.size(n);
        return SOURCE.asSlice(offset(s, n, size), size);
    }

    /** A reusable header buffer for one sending thread. */
    static MemorySegment newHeader() {
        return Arena.ofAuto().allocate(HEADER_SIZE, 8);
    }

    static MemorySegment header(MemorySegment h, int s, Profile p, long n) {
        h.set(INT, 0, s);
        h.set(INT, 4, p.ordinal());
        h.set(LONG, 8, n);
        return h;
    }

    /**
     * Sends messages {@code from .. from + count - 1} of stream {@code s} on {@code ep}, on the
     * worker's thread. With {@code maxPending > 0} it keeps the local queue bounded the way an
     * application does: past {@code maxPending} queued messages it progresses the worker until
     * half drained. Stops early if the endpoint fails.
     *
     * @param sentSoFar set to the number of sends returned so far, after each (for a waiting
     *        thread's hang guard: how far the stream got)
     * @param issued called once every send returned, with the endpoint's {@code pending()} then
     * @return the number of messages sent
     */
    static long stream(Worker w, Endpoint ep, int s, Profile p, long from, long count, long maxPending,
                       AtomicLong sentSoFar, java.util.function.LongConsumer issued) {
        MemorySegment h = newHeader();
        long sent = 0;
        for (long n = from; n < from + count; n++) {
            if (ep.isFailed()) break;
            ep.send(DATA, header(h, s, p, n), payload(s, p, n));
            sent++;
            sentSoFar.lazySet(sent);
            if (maxPending > 0 && (n & 31) == 0 && ep.pending() > maxPending) {
                int empty = 0;
                while (ep.pending() > maxPending / 2 && !ep.isFailed()) {
                    empty = w.progress() == 0 ? idle(w, empty) : 0;
                }
            }
        }
        issued.accept(ep.isFailed() ? -1 : ep.pending());
        return sent;
    }

    /**
     * Ping-pong: sends message {@code n} of stream {@code s}, waits (progressing) until the peer's
     * echo of it arrived and was checked by {@code echoes} (installed for {@link #ECHO}), then the
     * next. Stops early if the endpoint fails.
     *
     * @return round trips completed
     */
    static long pingPong(Worker w, Endpoint ep, int s, Profile p, long count, Receiver echoes) {
        MemorySegment h = newHeader();
        int spins = 0;
        for (long n = 0; n < count; n++) {
            ep.send(DATA, header(h, s, p, n), payload(s, p, n));
            while (echoes.received(s) <= n) {
                if (ep.isFailed()) return n;
                if (w.progress() == 0 && (++spins & 255) == 0) Thread.yield(); // a busy machine: let the peer run
            }
        }
        return count;
    }

    /** How long one {@code await} of a side that sleeps between messages may sleep ({@link #pingPongAsleep}, {@link #takeAsleep}). */
    static final Duration AWAIT = Duration.ofSeconds(10);

    /**
     * The awaits of a side that slept between messages: how many messages it had once done, how
     * many awaits it made, how many ran out ({@code false}) with a message there, which the
     * progress after them delivered (lost wake-ups: it stops at the first), and how many returned
     * {@code true} before a message came (more than one per message is an await that does not sleep).
     */
    record Asleep(long messages, long awaits, long ranOut, long wokeEarly) {
        String summary() {
            return "messages=" + messages + " awaits=" + awaits + " ranOut=" + ranOut + " wokeEarly=" + wokeEarly;
        }
    }

    /**
     * Ping-pong as {@link #pingPong}, small messages, sleeping in {@code w.await(}{@link #AWAIT}{@code )}
     * → {@code progress()} until each echo arrives rather than spinning. The echo is the last
     * message until this side sends again, so nothing but its own wake-up ends the sleep: a lost
     * one leaves the await asleep for its whole timeout with the echo there. Stops at the first
     * such await, when the endpoint fails, or when no echo came for {@code guard} (a hang guard:
     * an await that ran out before the echo came lost nothing and waits on until then).
     */
    static Asleep pingPongAsleep(Worker w, Endpoint ep, int s, long count, Receiver echoes, Duration guard) {
        MemorySegment h = newHeader();
        long awaits = 0;
        long ranOut = 0;
        long wokeEarly = 0;
        for (long n = 0; n < count && ranOut == 0 && !ep.isFailed(); n++) {
            ep.send(DATA, header(h, s, Profile.SMALL, n), payload(s, Profile.SMALL, n));
            long waitingSince = System.nanoTime();
            while (echoes.received(s) <= n && ranOut == 0 && !ep.isFailed()) {
                awaits++;
                boolean woke = w.await(AWAIT);
                w.progress();
                if (!woke && echoes.received(s) > n) ranOut++;
                if (woke && echoes.received(s) <= n) wokeEarly++;
                if (System.nanoTime() - waitingSince > guard.toNanos()) {
                    throw new AssertionError("no echo of round trip " + n + " for the hang guard of " + guard);
                }
            }
        }
        return new Asleep(echoes.received(s), awaits, ranOut, wokeEarly);
    }

    /**
     * The other side of {@link #pingPongAsleep}: sleeps in {@code w.await(}{@link #AWAIT}{@code )}
     * → {@code progress()} until {@code r} (whose handler answers each message) took
     * {@code count} messages. Stops at the first await that ran out with a message there, or when
     * none came for {@code guard}.
     */
    static Asleep takeAsleep(Worker w, Receiver r, long count, Duration guard) {
        long awaits = 0;
        long ranOut = 0;
        long wokeEarly = 0;
        long lastTakenAt = System.nanoTime();
        while (r.messages() < count && ranOut == 0) {
            long before = r.messages();
            awaits++;
            boolean woke = w.await(AWAIT);
            w.progress();
            long taken = r.messages();
            if (!woke && taken > before) ranOut++;
            if (woke && taken == before) wokeEarly++;
            if (taken > before) {
                lastTakenAt = System.nanoTime();
            } else if (System.nanoTime() - lastTakenAt > guard.toNanos()) {
                throw new AssertionError("no message for the hang guard of " + guard + " after " + taken + " of " + count);
            }
        }
        return new Asleep(r.messages(), awaits, ranOut, wokeEarly);
    }

    /** Progresses until the endpoint's local queue is empty or the endpoint failed. */
    static void drain(Worker w, Endpoint ep) {
        int empty = 0;
        while (ep.pending() > 0 && !ep.isFailed()) {
            empty = w.progress() == 0 ? idle(w, empty) : 0;
        }
    }

    /**
     * What a sender waiting for room does after its {@code empty}-th fruitless progress in a row:
     * spin a little, then yield, then sleep in {@code await} (1 ms slices), so that a stalled
     * receiver does not cost a core per waiting sender.
     *
     * @return {@code empty + 1}
     */
    static int idle(Worker w, int empty) {
        if (empty < 1000) {
            Thread.onSpinWait();
        } else if (empty < 2000) {
            Thread.yield();
        } else {
            w.await(Duration.ofMillis(1));
        }
        return empty + 1;
    }

    /**
     * Checks every message of every stream it is given: header shape, sequence (in order, none
     * lost, none twice), payload size and bytes. Errors are counted and the first few kept. Runs
     * on the worker's progress thread; its counters may be read from any thread.
     */
    static final class Receiver implements MessageHandler {
        private static final int KEPT_ERRORS = 10;

        private final ConcurrentHashMap<Integer, AtomicLong> next = new ConcurrentHashMap<>();
        private final AtomicLong messages = new AtomicLong();
        private final AtomicLong bytes = new AtomicLong();
        private final AtomicLong errorCount = new AtomicLong();
        private final List<String> errors = new ArrayList<>();
        /** Called after a message was checked (e.g. to echo it). */
        private final MessageHandler then;

        Receiver() {
            this(null);
        }

        Receiver(MessageHandler then) {
            this.then = then;
        }

        @Override
        public void onMessage(Message m) {
            if (m.headerSize() != HEADER_SIZE) {
                error("header of " + m.headerSize() + " bytes, expected " + HEADER_SIZE);
                return;
            }
            int s = m.headerInt(0);
            int profile = m.headerInt(4);
            long n = m.headerLong(8);
            AtomicLong expected = next.computeIfAbsent(s, k -> new AtomicLong());
            long want = expected.get();
            if (n != want) error("stream " + s + ": message " + n + " arrived where " + want + " was due");
            if (profile < 0 || profile >= Profile.values().length) {
                error("stream " + s + " message " + n + ": unknown profile " + profile);
            } else {
                long size = Profile.values()[profile].size(n);
                if (m.payloadSize() != size) {
                    error("stream " + s + " message " + n + ": payload of " + m.payloadSize() + " bytes, expected " + size);
                } else if (size > 0) {
                    long off = offset(s, n, size);
                    long at = MemorySegment.mismatch(m.payload(), 0, size, SOURCE, off, off + size);
                    if (at != -1) error("stream " + s + " message " + n + " (" + size + " bytes): payload differs at byte " + at);
                }
                bytes.addAndGet(size);
            }
            messages.incrementAndGet();
            expected.set(n + 1); // resynchronize after an error, so one fault is reported once
            if (then != null) then.onMessage(m);
        }

        private synchronized void error(String what) {
            errorCount.incrementAndGet();
            if (errors.size() < KEPT_ERRORS) errors.add(what);
        }

        /** Messages of stream {@code s} received so far (its next expected sequence number). */
        long received(int s) {
            AtomicLong a = next.get(s);
            return a == null ? 0 : a.get();
        }

        long messages() {
            return messages.get();
        }

        long bytes() {
            return bytes.get();
        }

        long errorCount() {
            return errorCount.get();
        }

        synchronized List<String> errors() {
            return List.copyOf(errors);
        }

        /** {@code messages=… bytes=… errors=… streams=s:count,… firstErrors=…}, one line, no spaces inside values. */
        String summary() {
            StringBuilder b = new StringBuilder("messages=").append(messages()).append(" bytes=").append(bytes())
                    .append(" errors=").append(errorCount()).append(" streams=");
            List<Integer> ids = new ArrayList<>(next.keySet());
            ids.sort(null);
            if (ids.isEmpty()) b.append('-');
            for (int i = 0; i < ids.size(); i++) b.append(i == 0 ? "" : ",").append(ids.get(i)).append(':').append(next.get(ids.get(i)).get());
            List<String> e = errors();
            if (!e.isEmpty()) b.append(" firstErrors=").append(String.join("|", e).replace(' ', '_'));
            return b.toString();
        }
    }
}
