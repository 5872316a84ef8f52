package dev.conduit.testing;

import dev.conduit.spi.EndpointEvents;
import dev.conduit.spi.NotSupportedException;
import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.Transport;
import dev.conduit.spi.TransportEndpoint;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A transport that records how it is called: how many threads are inside {@link #progress()} at
 * once (the most ever seen, and how often more than one was), the thread of every call, and when it
 * was closed. {@link #onProgress} runs inside {@code progress()}, e.g. to block on a latch.
 */
public class RecordingTransport implements Transport {

    private final AtomicInteger inside = new AtomicInteger();
    private final AtomicInteger maxInside = new AtomicInteger();
    private final AtomicLong overlaps = new AtomicLong();
    private final AtomicLong progressCalls = new AtomicLong();
    private final AtomicInteger closes = new AtomicInteger();
    public final List<Thread> callThreads = Collections.synchronizedList(new ArrayList<>());
    private volatile boolean recordThreads;
    private volatile Runnable onProgress = () -> { };
    private volatile Runnable onClose = () -> { };

    /** Records the thread of every call (off by default: the stress test makes a million calls). */
    public RecordingTransport recordThreads() {
        this.recordThreads = true;
        return this;
    }

    public RecordingTransport onProgress(Runnable r) {
        this.onProgress = r;
        return this;
    }

    public RecordingTransport onClose(Runnable r) {
        this.onClose = r;
        return this;
    }

    private void record() {
        if (recordThreads) callThreads.add(Thread.currentThread());
    }

    @Override
    public byte[] address() {
        record();
        return new byte[0];
    }

    @Override
    public TransportEndpoint connect(PayloadReader peerAddress, EndpointEvents events) {
        record();
        throw new NotSupportedException("test transport connects nowhere");
    }

    @Override
    public int progress() {
        int now = inside.incrementAndGet();
        try {
            if (now != 1) overlaps.incrementAndGet();
            maxInside.accumulateAndGet(now, Math::max);
            record();
            progressCalls.incrementAndGet();
            onProgress.run();
            return 1;
        } finally {
            inside.decrementAndGet();
        }
    }

    @Override
    public void close() {
        record();
        closes.incrementAndGet();
        onClose.run();
    }

    /** The most threads ever seen inside {@code progress()} at once. */
    public int maxInside() {
        return maxInside.get();
    }

    /** How many calls found another thread already inside. */
    public long overlaps() {
        return overlaps.get();
    }

    public long progressCalls() {
        return progressCalls.get();
    }

    public int closes() {
        return closes.get();
    }
}
