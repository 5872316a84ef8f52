package dev.conduit.it.porting;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.Message;
import dev.conduit.Worker;
import dev.conduit.WorkerAddress;
import dev.conduit.spi.PayloadEncoder;
import dev.conduit.spi.PeerFailedException;
import dev.conduit.spi.ThreadMode;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A small Aeron program ported to Conduit's public API: a market-data publisher with several
 * subscribers, back-pressure handling, zero-copy encoding and decoders that read a buffer at an
 * offset.
 *
 * <p>In Aeron the publisher would {@code addPublication(channel, streamId)}, every subscriber
 * {@code addSubscription} to the same channel and stream, the publisher {@code offer} (or
 * {@code tryClaim} and write into the claimed {@code BufferClaim}) and react to
 * {@code BACK_PRESSURED}, subscribers {@code poll(fragmentHandler, limit)} with
 * {@code onFragment(buffer, offset, length, header)} under an idle strategy. Here:
 * <ul>
 * <li>there is no channel to subscribe to: a publisher is a worker, and a subscriber sends it
 *     SUBSCRIBE carrying its worker address; the publisher connects back from the handler and keeps
 *     one endpoint per subscriber. A stream id is an active-message id;</li>
 * <li>there is no shared log: each message is sent once per subscriber, on its endpoint;</li>
 * <li>{@code send} never refuses: it queues locally when the subscriber's queue is full, without
 *     bound. {@link #offer} turns that into Aeron's {@code BACK_PRESSURED} by refusing while
 *     {@code endpoint.pending() > 0}, so at most one message per subscriber waits locally, and the
 *     publisher conflates what it could not send (the latest book per instrument);</li>
 * <li>{@code tryClaim} + {@code commit} is the encoder send, {@code send(id, header, maxLength,
 *     encoder)}: one reusable {@link PayloadEncoder.Ranged} per message type, written into the
 *     subscriber's receive queue or bounce ring above 1 KiB, and into the endpoint's buffer (then
 *     copied) up to 1 KiB;</li>
 * <li>{@code onFragment(buffer, offset, length, header)} is {@code m.payloadBuffer()},
 *     {@code m.payloadOffset()}, {@code m.payloadSize()}, read with unaligned little-endian
 *     layouts (no alignment of the payload is promised); messages are never fragmented, so no
 *     {@code FragmentAssembler};</li>
 * <li>an image going unavailable is the error handler of an endpoint: the publisher's for a
 *     subscriber that left or died, a subscriber's (of its endpoint to the publisher) for the
 *     publisher.</li>
 * </ul>
 *
 * <pre>
 * SUBSCRIBE  subscriber → publisher  header: subscriber id (8)   payload: its worker address
 * TICK       publisher → subscriber  payload (32): sequence (8), instrument (4), quantity (4), price (8), checksum (8)
 * BOOK       publisher → subscriber  payload: sequence (8), instrument (4), levels (4), then per level price (8), quantity (8)
 * </pre>
 * Little-endian throughout; a TICK's checksum is {@code sequence * 31 + instrument * 7 + quantity + price}.
 */
final class AeronStyleMarketData {

    static final int SUBSCRIBE = 10;
    static final int TICK = 11;
    static final int BOOK = 12;

    /** As Aeron's {@code Publication.NOT_CONNECTED}: the subscriber is gone. */
    static final long NOT_CONNECTED = -1;
    /** As Aeron's {@code Publication.BACK_PRESSURED}: nothing was sent; try again later. */
    static final long BACK_PRESSURED = -2;

    static final int TICK_LENGTH = 32;

    static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private AeronStyleMarketData() {
    }

    static long tickChecksum(long sequence, int instrument, int quantity, long price) {
        return sequence * 31 + instrument * 7L + quantity + price;
    }

    static long levelPrice(long sequence, int level) {
        return 10_000 + sequence + level;
    }

    static long levelQuantity(long sequence, int level) {
        return sequence * 3 + level;
    }

    /** The publisher: a {@code SINGLE} worker of the calling thread and one endpoint per subscriber. */
    static final class Publisher implements AutoCloseable {

        /** One subscriber's publication: its endpoint, and what back-pressure made the publisher conflate. */
        static final class Feed {
            final long subscriber;
            final Endpoint endpoint;
            long sent;
            long backPressured;
            long maxPending;
            /** The latest book that could not be sent, by instrument: conflated, sent once the subscriber keeps up. */
            final Map<Integer, Long> conflatedBooks = new LinkedHashMap<>();

            Feed(long subscriber, Endpoint endpoint) {
                this.subscriber = subscriber;
                this.endpoint = endpoint;
            }
        }

        /** tryClaim's BufferClaim, as one reusable encoder: the fields are set before each send. */
        private static final class TickEncoder implements PayloadEncoder.Ranged {
            long sequence;
            int instrument;
            int quantity;
            long price;

            @Override
            public long encode(MemorySegment memory, long offset, long maxLength) {
                memory.set(LONG, offset, sequence);
                memory.set(INT, offset + 8, instrument);
                memory.set(INT, offset + 12, quantity);
                memory.set(LONG, offset + 16, price);
                memory.set(LONG, offset + 24, tickChecksum(sequence, instrument, quantity, price));
                return TICK_LENGTH;
            }
        }

        private static final class BookEncoder implements PayloadEncoder.Ranged {
            long sequence;
            int instrument;
            int levels;

            @Override
            public long encode(MemorySegment memory, long offset, long maxLength) {
                memory.set(LONG, offset, sequence);
                memory.set(INT, offset + 8, instrument);
                memory.set(INT, offset + 12, levels);
                long at = offset + 16;
                for (int level = 0; level < levels; level++, at += 16) {
                    memory.set(LONG, at, levelPrice(sequence, level));
                    memory.set(LONG, at + 8, levelQuantity(sequence, level));
                }
                return at - offset;
            }
        }

        private final Worker worker;
        private final Map<Long, Feed> feeds = new LinkedHashMap<>();
        private final Map<Long, String> gone = new LinkedHashMap<>();
        private final TickEncoder tick = new TickEncoder();
        private final BookEncoder book = new BookEncoder();

        Publisher(Conduit conduit) {
            this.worker = conduit.newWorker(ThreadMode.SINGLE);
            worker.onMessage(SUBSCRIBE, this::subscribe);
        }

        WorkerAddress address() {
            return worker.address();
        }

        private void subscribe(Message m) {
            long id = m.headerLong(0);
            WorkerAddress address = WorkerAddress.fromBytes(m.payloadToArray());
            Endpoint ep = worker.connect(address, (failed, cause) -> unavailable(id, failed, cause));
            feeds.put(id, new Feed(id, ep));
        }

        /** Aeron's unavailable image, on the publisher's side: the subscriber left or died. */
        private void unavailable(long id, Endpoint failed, PeerFailedException cause) {
            feeds.remove(id);
            failed.close();
            gone.put(id, String.valueOf(cause.getMessage()));
        }

        /**
         * As {@code Publication.offer} of a tick: {@link #BACK_PRESSURED} while a message waits
         * locally for this subscriber, {@link #NOT_CONNECTED} once it is gone; else sent (or, the
         * subscriber's queue being full right now, queued locally as the one message allowed) and
         * the subscriber's count of messages sent.
         */
        long offerTick(Feed feed, long sequence, int instrument, int quantity, long price) {
            if (feed.endpoint.isFailed()) return NOT_CONNECTED;
            if (feed.endpoint.pending() > 0) {
                feed.backPressured++;
                return BACK_PRESSURED;
            }
            tick.sequence = sequence;
            tick.instrument = instrument;
            tick.quantity = quantity;
            tick.price = price;
            feed.endpoint.send(TICK, MemorySegment.NULL, TICK_LENGTH, tick);
            feed.maxPending = Math.max(feed.maxPending, feed.endpoint.pending());
            return ++feed.sent;
        }

        /** As {@link #offerTick}, for a book of {@code levels} levels; a back-pressured book is conflated. */
        long offerBook(Feed feed, long sequence, int instrument, int levels) {
            if (feed.endpoint.isFailed()) return NOT_CONNECTED;
            if (feed.endpoint.pending() > 0) {
                feed.backPressured++;
                feed.conflatedBooks.put(instrument, sequence);
                return BACK_PRESSURED;
            }
            book.sequence = sequence;
            book.instrument = instrument;
            book.levels = levels;
            feed.endpoint.send(BOOK, MemorySegment.NULL, 16 + 16L * levels, book);
            feed.maxPending = Math.max(feed.maxPending, feed.endpoint.pending());
            return ++feed.sent;
        }

        /** One duty cycle: delivers what waits locally and answers subscriptions; the work done. */
        int doWork() {
            return worker.progress();
        }

        List<Feed> feeds() {
            return new ArrayList<>(feeds.values());
        }

        Map<Long, String> gone() {
            return gone;
        }

        Worker worker() {
            return worker;
        }

        @Override
        public void close() {
            worker.close();
        }
    }

    /** A subscriber: a {@code SINGLE} worker of the calling thread; handlers decode from the buffer at the payload's offset. */
    static final class Subscriber implements AutoCloseable {

        final long id;
        private final Worker worker;
        private final Endpoint publisher;
        final List<Long> ticks = new ArrayList<>();
        final List<Long> books = new ArrayList<>();
        final List<String> errors = new ArrayList<>();
        private PeerFailedException publisherGone;

        Subscriber(Conduit conduit, WorkerAddress publisherAddress, long id) {
            this.id = id;
            this.worker = conduit.newWorker(ThreadMode.SINGLE);
            worker.onMessage(TICK, this::onTick);
            worker.onMessage(BOOK, this::onBook);
            this.publisher = worker.connect(publisherAddress, (ep, cause) -> publisherGone = cause);
            MemorySegment header = MemorySegment.ofArray(new byte[8]);
            header.set(LONG, 0, id);
            publisher.send(SUBSCRIBE, header, MemorySegment.ofArray(worker.address().toBytes()));
        }

        /** {@code onFragment(buffer, offset, length, header)}. */
        private void onTick(Message m) {
            MemorySegment buffer = m.payloadBuffer();
            long offset = m.payloadOffset();
            if (m.payloadSize() != TICK_LENGTH) {
                errors.add("tick of " + m.payloadSize() + " bytes");
                return;
            }
            long sequence = buffer.get(LONG, offset);
            int instrument = buffer.get(INT, offset + 8);
            int quantity = buffer.get(INT, offset + 12);
            long price = buffer.get(LONG, offset + 16);
            if (buffer.get(LONG, offset + 24) != tickChecksum(sequence, instrument, quantity, price)) {
                errors.add("tick " + sequence + ": checksum");
            }
            ticks.add(sequence);
        }

        private void onBook(Message m) {
            MemorySegment buffer = m.payloadBuffer();
            long offset = m.payloadOffset();
            long sequence = buffer.get(LONG, offset);
            int levels = buffer.get(INT, offset + 12);
            if (m.payloadSize() != 16 + 16L * levels) {
                errors.add("book " + sequence + " of " + m.payloadSize() + " bytes for " + levels + " levels");
                return;
            }
            long at = offset + 16;
            for (int level = 0; level < levels; level++, at += 16) {
                if (buffer.get(LONG, at) != levelPrice(sequence, level) || buffer.get(LONG, at + 8) != levelQuantity(sequence, level)) {
                    errors.add("book " + sequence + ": level " + level);
                    return;
                }
            }
            books.add(sequence);
        }

        /** {@code subscription.poll}: one duty cycle; the work done. */
        int poll() {
            return worker.progress();
        }

        Worker worker() {
            return worker;
        }

        PeerFailedException publisherGone() {
            return publisherGone;
        }

        @Override
        public void close() {
            worker.close();
        }
    }
}
