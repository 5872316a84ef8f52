package dev.conduit.it.transport;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.Worker;
import dev.conduit.WorkerAddress;
import dev.conduit.spi.PeerFailedException;
import dev.conduit.spi.ThreadMode;

import java.lang.foreign.MemorySegment;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A market-data publisher as a fan-out application writes one: a thread that owns a {@code SINGLE}
 * worker, one endpoint per subscriber, and sends every tick ({@link Traffic.Profile#TICKS}, 64 to
 * 512 B) to each of them in rounds, never waiting for any. Subscribers join and leave between
 * rounds ({@link #join}, {@link #leave}); subscriber {@code s} gets stream {@code s} of
 * {@link Traffic}, numbered from 0 at its join, so a {@link Traffic.Receiver} checks it.
 *
 * <p>A subscriber that falls behind is shed, as an application must do it (Conduit bounds no local
 * queue): once its endpoint's {@code pendingBytes()} passes {@code shedPastBytes} the publisher
 * closes that endpoint, which discards what waits, and publishes on to the others. A subscriber
 * whose endpoint fails (died, closed, judged hung) is dropped in the error handler.
 */
final class FanOutPublisher implements AutoCloseable {

    /** A subscriber the publisher sends to: its endpoint, the next sequence number, the largest backlog seen. */
    static final class Feed {
        final int subscriber;
        final Endpoint endpoint;
        long next;
        long maxPendingBytes;

        Feed(int subscriber, Endpoint endpoint) {
            this.subscriber = subscriber;
            this.endpoint = endpoint;
        }
    }

    /**
     * Why a subscriber stopped being published to: shed by the publisher (no reason), or its
     * endpoint's failure, with its reason (re-subscribe one that CLOSED, alarm on one that DIED);
     * the ticks sent to it and how many of them waited in the local queue and were discarded (by
     * the shedding close, or by the failure, whose message counts them).
     */
    record Gone(int subscriber, String why, PeerFailedException.Reason reason, long sent, long discarded, long nanoTime) {
    }

    /** The count a failure's message gives of the local queue's messages it discarded ("N messages (B bytes) waiting in the local queue were discarded"). */
    private static final Pattern DISCARDED = Pattern.compile("(\\d+) messages? \\(\\d+ bytes?\\) waiting in the local queue (?:was|were) discarded");

    static long discardedBy(String failure) {
        Matcher m = DISCARDED.matcher(failure);
        return m.find() ? Long.parseLong(m.group(1)) : 0;
    }

    private final Thread thread;
    private final ConcurrentLinkedQueue<Runnable> commands = new ConcurrentLinkedQueue<>();
    private final CompletableFuture<WorkerAddress> started = new CompletableFuture<>();
    private final Map<Integer, Feed> feeds = new LinkedHashMap<>();
    /** Subscribers that leave: sent nothing more, each closed once its local queue has drained, so that it gets every tick it was sent. */
    private final List<Feed> leaving = new ArrayList<>();
    private final List<Gone> gone = new CopyOnWriteArrayList<>();
    private final long shedPastBytes;
    private volatile Worker worker;
    private volatile long roundsToPublish;
    private volatile long rounds;
    private volatile boolean closing;
    private volatile Throwable error;

    /** A publisher on a worker of {@code conduit}; {@code shedPastBytes} 0 sheds nobody. */
    FanOutPublisher(Conduit conduit, long shedPastBytes) {
        this.shedPastBytes = shedPastBytes;
        this.thread = new Thread(() -> run(conduit), "publisher");
        thread.setDaemon(true);
        thread.start();
        started.join();
    }

    private void run(Conduit conduit) {
        try (Worker w = conduit.newWorker(ThreadMode.SINGLE)) {
            worker = w;
            started.complete(w.address());
            MemorySegment header = Traffic.newHeader();
            while (!closing) {
                Runnable command;
                while ((command = commands.poll()) != null) command.run();
                leaving.removeIf(f -> {
                    if (f.endpoint.pending() > 0 && !f.endpoint.isFailed()) return false;
                    f.endpoint.close();
                    return true;
                });
                int work;
                if (rounds < roundsToPublish) {
                    publishRound(header);
                    rounds++;
                    work = w.progress() + 1;
                } else {
                    work = w.progress();
                }
                if (work == 0) w.await(Duration.ofMillis(1));
            }
        } catch (Throwable t) {
            error = t;
            started.completeExceptionally(t);
        }
    }

    private void publishRound(MemorySegment header) {
        for (Feed f : List.copyOf(feeds.values())) {
            long n = f.next++;
            f.endpoint.send(Traffic.DATA, Traffic.header(header, f.subscriber, Traffic.Profile.TICKS, n),
                    Traffic.payload(f.subscriber, Traffic.Profile.TICKS, n));
            long backlog = f.endpoint.pendingBytes();
            f.maxPendingBytes = Math.max(f.maxPendingBytes, backlog);
            if (shedPastBytes > 0 && backlog > shedPastBytes) {
                feeds.remove(f.subscriber);
                long pending = f.endpoint.pending();
                f.endpoint.close();
                gone.add(new Gone(f.subscriber, "shed: " + backlog + " bytes waiting", null, f.next, pending, System.nanoTime()));
            }
        }
    }

    WorkerAddress address() {
        return started.join();
    }

    /** Runs {@code task} on the publisher's thread between two rounds and returns its result. */
    <T> T call(Function<Worker, T> task) {
        CompletableFuture<T> result = new CompletableFuture<>();
        commands.add(() -> {
            try {
                result.complete(task.apply(worker));
            } catch (Throwable t) {
                result.completeExceptionally(t);
            }
        });
        Worker w = worker;
        if (w != null) w.signal();
        try {
            return result.get(60, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new AssertionError("publisher task: " + e + (error == null ? "" : "; the publisher's thread failed: " + error), e);
        }
    }

    /** Connects to subscriber {@code s}; published to from the next round. */
    void join(int s, WorkerAddress subscriber) {
        call(w -> {
            Endpoint e = w.connect(subscriber, (failed, cause) -> {
                Feed f = feeds.remove(s);
                gone.add(new Gone(s, cause.getMessage(), cause.reason(), f == null ? -1 : f.next, discardedBy(cause.getMessage()), System.nanoTime()));
                failed.close();
            });
            if (feeds.putIfAbsent(s, new Feed(s, e)) != null) throw new IllegalArgumentException("subscriber " + s + " joined already");
            return null;
        });
    }

    /**
     * Stops publishing to subscriber {@code s} and closes its endpoint once what waits locally for
     * it has gone (a close would discard it); returns how many ticks it was sent.
     */
    long leave(int s) {
        return call(w -> {
            Feed f = feeds.remove(s);
            if (f == null) throw new IllegalArgumentException("subscriber " + s + " is not published to");
            leaving.add(f);
            return f.next;
        });
    }

    /** Whether every subscriber that left has had its endpoint closed. */
    boolean left() {
        return call(w -> leaving.isEmpty());
    }

    /** Publishes {@code count} more rounds, one tick to every subscriber per round, without waiting for them. */
    void publish(long count) {
        call(w -> roundsToPublish = rounds + count);
    }

    long rounds() {
        return rounds;
    }

    boolean publishing() {
        return rounds < roundsToPublish;
    }

    /** Ticks sent to each subscriber published to now. */
    Map<Integer, Long> sent() {
        return call(w -> {
            Map<Integer, Long> m = new LinkedHashMap<>();
            feeds.forEach((s, f) -> m.put(s, f.next));
            return m;
        });
    }

    /** The largest {@code pendingBytes()} seen per subscriber published to now. */
    Map<Integer, Long> maxPendingBytes() {
        return call(w -> {
            Map<Integer, Long> m = new LinkedHashMap<>();
            feeds.forEach((s, f) -> m.put(s, f.maxPendingBytes));
            return m;
        });
    }

    /** {@code pending()} per subscriber published to now. */
    Map<Integer, Long> pending() {
        return call(w -> {
            Map<Integer, Long> m = new LinkedHashMap<>();
            feeds.forEach((s, f) -> m.put(s, f.endpoint.pending()));
            return m;
        });
    }

    /** Subscribers shed or failed, in order. */
    List<Gone> gone() {
        return List.copyOf(gone);
    }

    Throwable error() {
        return error;
    }

    @Override
    public void close() {
        closing = true;
        Worker w = worker;
        if (w != null) w.signal();
        try {
            thread.join(60_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (thread.isAlive()) throw new IllegalStateException("the publisher's thread did not end");
    }
}
