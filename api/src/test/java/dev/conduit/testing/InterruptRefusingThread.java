package dev.conduit.testing;

/**
 * A thread that refuses to interrupt itself, while another thread's interrupt of it goes through:
 * the stand-in for a restore of the interrupt status that fails (an {@code Error} while a waiter
 * takes a lock back), which no JDK thread does on its own.
 */
public final class InterruptRefusingThread extends Thread {

    public InterruptRefusingThread(Runnable r) {
        super(r);
    }

    @Override
    public void interrupt() {
        if (Thread.currentThread() == this) throw new UnsupportedOperationException("no interrupt of itself");
        super.interrupt();
    }
}
