package dev.conduit.testing;

import java.util.List;

/** The stacks of threads a test found stuck, for its failure message. */
public final class ThreadStacks {

    private ThreadStacks() {
    }

    /** Each thread's name and state, then its frames, one per line. */
    public static String of(List<Thread> threads) {
        StringBuilder text = new StringBuilder();
        for (Thread t : threads) {
            text.append(t.getName()).append(' ').append(t.getState()).append('\n');
            for (StackTraceElement e : t.getStackTrace()) text.append("    at ").append(e).append('\n');
        }
        return text.toString();
    }
}
