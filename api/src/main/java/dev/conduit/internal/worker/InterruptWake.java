package dev.conduit.internal.worker;

import dev.conduit.internal.CloseFailures;
import dev.conduit.spi.Cleanup;

import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.spi.AbstractSelectableChannel;
import java.nio.channels.spi.AbstractSelector;
import java.nio.channels.spi.SelectorProvider;
import java.util.Set;

/**
 * Makes an interrupt of a thread asleep in {@code Worker.await} wake it, as an interrupt wakes a
 * thread blocked in {@link Selector#select()}: a transport may sleep where an interrupt does not
 * reach (the shared-memory transports in a futex wait, verbs in {@code poll}), so between
 * {@link #beginSleep()} and {@link #endSleep()} the JDK's hook for interruptible blocking
 * ({@link AbstractSelector#begin()}, public API for exactly this) turns an interrupt of the
 * sleeping thread into {@link #wakeup()}, which signals the worker. No selector is ever opened:
 * this one has no channels, keys or descriptors, and only its {@code wakeup} does anything.
 */
final class InterruptWake extends AbstractSelector {

    private final Runnable signal;

    /** @param signal what wakes the sleeping thread ({@code Worker.signal()}); called on the interrupting thread, never blocks */
    InterruptWake(Runnable signal) {
        super(SelectorProvider.provider());
        this.signal = signal;
    }

    /** From now on, until {@link #endSleep()}, an interrupt of the calling thread signals; so does one already pending. */
    void beginSleep() {
        begin();
    }

    /** Interrupts of the calling thread signal no more. */
    void endSleep() {
        end();
    }

    /**
     * Runs inside {@code Thread.interrupt()} of whichever thread interrupts the sleeper (an
     * executor's {@code shutdownNow} stops interrupting its other threads at the first exception),
     * and inside {@link #beginSleep()} for a thread interrupted before: it throws nothing but the
     * JVM's own errors ({@link Cleanup#isTheJvmsOwn}). A signal that fails (a ConduitException, a
     * fault of a queue's memory, a plugin's Error such as a class it misses) leaves the sleeper to
     * meet the broken transport itself, in its own sleep, and to see its interrupt when its slice
     * ends. Until 2026-12-07 an Error other than InternalError came out of {@code Thread.interrupt()}
     * (EndpointThreadingTest#aWakeOfAnAwaitingThreadWhoseSignalFailsWithAnErrorThrowsNothing), and
     * so did a checked exception that a plugin's signal threw undeclared, as one in Kotlin may
     * (#aWakeOfAnAwaitingThreadWhoseSignalThrowsACheckedExceptionThrowsNothingAndTheCloseStillClosesTheTransport).
     */
    @Override
    public Selector wakeup() {
        try {
            signal.run();
        } catch (Throwable notForTheInterrupter) { // a checked one too, thrown undeclared
            // the interrupt status is set: the sleeper returns at its next look
            CloseFailures.rethrowIfTheJvmsOwn(notForTheInterrupter);
        }
        return this;
    }

    @Override
    protected void implCloseSelector() {
    }

    @Override
    protected SelectionKey register(AbstractSelectableChannel ch, int ops, Object att) {
        throw new UnsupportedOperationException("not a selector for channels");
    }

    @Override
    public Set<SelectionKey> keys() {
        return Set.of();
    }

    @Override
    public Set<SelectionKey> selectedKeys() {
        return Set.of();
    }

    @Override
    public int selectNow() {
        throw new UnsupportedOperationException("not a selector for channels");
    }

    @Override
    public int select(long timeout) {
        throw new UnsupportedOperationException("not a selector for channels");
    }

    @Override
    public int select() {
        throw new UnsupportedOperationException("not a selector for channels");
    }
}
