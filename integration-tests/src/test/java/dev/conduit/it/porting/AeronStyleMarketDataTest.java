package dev.conduit.it.porting;

import dev.conduit.Conduit;
import dev.conduit.it.ipc.ShmDir;
import dev.conduit.it.porting.AeronStyleMarketData.Publisher;
import dev.conduit.it.porting.AeronStyleMarketData.Subscriber;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.function.BooleanSupplier;
import java.util.function.IntSupplier;
import java.util.function.LongSupplier;
import java.util.stream.LongStream;

import static dev.conduit.it.porting.AeronStyleMarketData.BACK_PRESSURED;
import static dev.conduit.it.porting.AeronStyleMarketData.NOT_CONNECTED;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link AeronStyleMarketData}, an Aeron market-data program ported to the public API, in one
 * process: a publisher and three subscribers, each with a Conduit of its own on one shared
 * directory (as separate processes would be; docs/runtime.md), driven by one thread in duty cycles.
 * No {@code @Timeout} bounds a whole test: every wait, an offer retried while back-pressured
 * included, is a hang guard that runs from the last duty cycle that found work ({@link #cycleUntil}),
 * so a loaded machine's slower run passes and one that stops fails, naming what it waited for.
 */
class AeronStyleMarketDataTest {

    private static final int SUBSCRIBERS = 3;
    /** How long the duty cycles of a wait may find no work: a hang guard, not a speed check. */
    private static final Duration GUARD = Duration.ofSeconds(60);

    /** Runs {@code cycle} until {@code done}; fails naming {@code what} once no cycle has found work for {@link #GUARD}. */
    private static void cycleUntil(BooleanSupplier done, IntSupplier cycle, String what) {
        long deadline = System.nanoTime() + GUARD.toNanos();
        while (!done.getAsBoolean()) {
            if (cycle.getAsInt() > 0) {
                deadline = System.nanoTime() + GUARD.toNanos();
            } else if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("no work for the hang guard of " + GUARD + " waiting for " + what);
            }
        }
    }

    private static Conduit conduit(Path shared, String plugin, String... keys) {
        var b = Conduit.builder().environment(Map.of()).systemProperties(new Properties()).sharedDirectory(shared).transports(plugin);
        for (String kv : keys) b.set(kv.substring(0, kv.indexOf('=')), kv.substring(kv.indexOf('=') + 1));
        return b.build();
    }

    /** A publisher and its subscribers, each on a Conduit of its own, subscribed. */
    private record Market(List<Conduit> conduits, Publisher publisher, List<Subscriber> subscribers) implements AutoCloseable {
        static Market open(Path shared, String plugin, String... keys) {
            List<Conduit> conduits = new ArrayList<>();
            Conduit pc = conduit(shared, plugin, keys);
            conduits.add(pc);
            Publisher publisher = new Publisher(pc);
            List<Subscriber> subscribers = new ArrayList<>();
            for (int i = 0; i < SUBSCRIBERS; i++) {
                Conduit c = conduit(shared, plugin, keys);
                conduits.add(c);
                subscribers.add(new Subscriber(c, publisher.address(), 100 + i));
            }
            Market m = new Market(conduits, publisher, subscribers);
            m.cycleUntil(() -> publisher.feeds().size() == SUBSCRIBERS, "every SUBSCRIBE answered");
            return m;
        }

        /** One duty cycle of every party but those in {@code idle}. */
        int cycle(Subscriber... idle) {
            int work = publisher.doWork();
            for (Subscriber s : subscribers) if (!List.of(idle).contains(s)) work += s.poll();
            return work;
        }

        void cycleUntil(BooleanSupplier done, String what, Subscriber... idle) {
            AeronStyleMarketDataTest.cycleUntil(done, () -> cycle(idle), what);
        }

        /** Makes {@code offer} until it is not {@code BACK_PRESSURED}, cycling between tries, as Aeron's offer loop does. */
        void offerUntilTaken(LongSupplier offer, String what) {
            cycleUntil(() -> offer.getAsLong() != BACK_PRESSURED, "the subscriber to take " + what);
        }

        @Override
        public void close() {
            for (Conduit c : conduits.reversed()) c.close();
        }
    }

    private static boolean rising(List<Long> values) {
        for (int i = 1; i < values.size(); i++) if (values.get(i) <= values.get(i - 1)) return false;
        return true;
    }

    /**
     * 20 000 ticks (32 B, encoded into the endpoint's buffer) and, every 1 000, a book: 4 KiB
     * (written in place into the subscriber's queue) or 64 KiB (in place into the bounce ring),
     * offered to every subscriber, each offer retried while back-pressured; every subscriber
     * decodes every one, in order, from the payload's buffer at its offset.
     */
    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void everySubscriberDecodesEveryTickAndBookInOrderFromTheBufferAtItsOffset(String plugin, @TempDir(factory = ShmDir.class) Path shared) {
        int ticks = 20_000;
        List<Long> booksSent = new ArrayList<>();
        try (Market m = Market.open(shared, plugin)) {
            for (long seq = 1; seq <= ticks; seq++) {
                for (Publisher.Feed feed : m.publisher().feeds()) {
                    long s = seq;
                    m.offerUntilTaken(() -> m.publisher().offerTick(feed, s, (int) (s % 7), (int) s & 1023, 5_000 + s), "tick " + s);
                    if (seq % 1000 == 0) {
                        int levels = seq % 2000 == 0 ? 4096 : 256;
                        m.offerUntilTaken(() -> m.publisher().offerBook(feed, s, (int) (s % 7), levels), "book " + s);
                    }
                }
                if (seq % 1000 == 0) booksSent.add(seq);
                m.cycle();
            }
            m.cycleUntil(() -> m.subscribers().stream().allMatch(s -> s.ticks.size() == ticks && s.books.size() == booksSent.size()),
                    "every tick and book at every subscriber");
            for (Subscriber s : m.subscribers()) {
                assertThat(s.errors).as("subscriber %d's decoding", s.id).isEmpty();
                assertThat(s.ticks).as("subscriber %d's ticks", s.id).containsExactlyElementsOf(LongStream.rangeClosed(1, ticks).boxed().toList());
                assertThat(s.books).as("subscriber %d's books", s.id).containsExactlyElementsOf(booksSent);
            }
            for (Publisher.Feed feed : m.publisher().feeds()) {
                assertThat(feed.maxPending).as("messages waiting locally for subscriber %d, at most", feed.subscriber).isLessThanOrEqualTo(1);
            }
        }
    }

    /**
     * One subscriber stops polling. Its queue fills, one message waits locally and every later
     * offer to it is {@code BACK_PRESSURED}: its ticks are dropped and its books conflated (the
     * latest per instrument), while the other subscribers get every tick. Polling again, it gets
     * the conflated books, then the ticks from where it caught up, in order, and the last one.
     */
    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void aSlowSubscriberIsBackPressuredAloneItsTicksDroppedAndItsBooksConflated(String plugin, @TempDir(factory = ShmDir.class) Path shared) {
        int ticks = 10_000;
        try (Market m = Market.open(shared, plugin, plugin + ".queue.size=64k")) {
            Subscriber slow = m.subscribers().get(1);
            Publisher.Feed slowFeed = m.publisher().feeds().stream().filter(f -> f.subscriber == slow.id).findFirst().orElseThrow();
            for (long seq = 1; seq <= ticks; seq++) {
                for (Publisher.Feed feed : m.publisher().feeds()) {
                    long result = m.publisher().offerTick(feed, seq, (int) (seq % 7), 1, 5_000 + seq);
                    if (feed != slowFeed) assertThat(result).as("offer to a subscriber that keeps up").isPositive();
                    if (seq % 500 == 0) m.publisher().offerBook(feed, seq, (int) (seq % 3), 64);
                }
                if (seq > ticks / 2 && !slowFeed.conflatedBooks.isEmpty() && slowFeed.endpoint.pending() == 0) {
                    // Caught up: the conflated books go first, retried as Aeron's offer would be.
                    for (var e : List.copyOf(slowFeed.conflatedBooks.entrySet())) {
                        m.offerUntilTaken(() -> m.publisher().offerBook(slowFeed, e.getValue(), e.getKey(), 64), "conflated book " + e.getValue());
                        slowFeed.conflatedBooks.remove(e.getKey());
                    }
                }
                if (seq <= ticks / 2) m.cycle(slow);
                else m.cycle();
            }
            assertThat(slowFeed.backPressured).as("offers to the slow subscriber refused").isPositive();
            assertThat(slowFeed.maxPending).as("messages waiting locally for it, at most").isEqualTo(1);
            m.cycleUntil(() -> m.publisher().feeds().stream().allMatch(f -> f.endpoint.pending() == 0), "the local queues drained");
            long last = ticks + 1;
            for (Publisher.Feed feed : m.publisher().feeds()) {
                m.offerUntilTaken(() -> m.publisher().offerTick(feed, last, 0, 1, 1), "the last tick");
            }
            m.cycleUntil(() -> m.subscribers().stream().allMatch(s -> !s.ticks.isEmpty() && s.ticks.getLast() == last), "the last tick everywhere");

            for (Subscriber s : m.subscribers()) {
                assertThat(s.errors).isEmpty();
                assertThat(rising(s.ticks)).as("subscriber %d's ticks in order", s.id).isTrue();
                if (s != slow) assertThat(s.ticks).hasSize(ticks + 1);
            }
            assertThat(slow.ticks.size()).as("ticks the slow subscriber got").isLessThan(ticks).isGreaterThan(ticks / 2 - 1000);
            assertThat(slow.books).as("its books, in order, the conflated ones among them").isNotEmpty();
            assertThat(rising(slow.books)).isTrue();
            assertThat(slowFeed.conflatedBooks).isEmpty();
        }
    }

    /**
     * A subscriber that closes fails only its own feed (the publisher's error handler: an
     * unavailable image), which the publisher closes; the others go on. When the publisher
     * closes, every subscriber learns it through the endpoint it subscribed on.
     */
    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void aSubscriberThatLeavesFailsOnlyItsFeedAndEverySubscriberLearnsWhenThePublisherGoes(String plugin,
                                                                                          @TempDir(factory = ShmDir.class) Path shared) {
        try (Market m = Market.open(shared, plugin)) {
            Subscriber leaving = m.subscribers().get(0);
            Publisher.Feed leavingFeed = m.publisher().feeds().getFirst();
            leaving.close();
            m.cycleUntil(() -> m.publisher().gone().containsKey(leaving.id), "the publisher's error handler for the subscriber that left",
                    leaving);
            assertThat(m.publisher().gone().get(leaving.id)).contains("peer worker closed");
            assertThat(m.publisher().feeds()).hasSize(SUBSCRIBERS - 1);
            assertThat(m.publisher().offerTick(leavingFeed, 1, 0, 1, 1)).isEqualTo(NOT_CONNECTED);
            for (Publisher.Feed feed : m.publisher().feeds()) assertThat(m.publisher().offerTick(feed, 1, 0, 1, 1)).isPositive();
            List<Subscriber> staying = m.subscribers().subList(1, SUBSCRIBERS);
            m.cycleUntil(() -> staying.stream().allMatch(s -> s.ticks.size() == 1), "the tick at the subscribers that stayed", leaving);

            m.publisher().close();
            cycleUntil(() -> staying.stream().allMatch(s -> s.publisherGone() != null), () -> staying.stream().mapToInt(Subscriber::poll).sum(),
                    "the subscribers to learn that the publisher closed");
            for (Subscriber s : staying) assertThat(s.publisherGone()).hasMessageContaining("peer worker closed");
        }
    }
}
