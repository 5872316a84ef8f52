package dev.conduit.plugin.devdax;

import dev.conduit.linux.ErrnoException;
import dev.conduit.linux.Libc;
import dev.conduit.linux.Linux;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Predicate;

/**
 * The real {@link Libc}, except for one call: it fails with one errno, answers without reaching
 * the kernel, or first runs something else. For what the kernel does here only with hardware this
 * machine lacks (a device disabled under its users), and for races that are otherwise too narrow
 * to hit. {@code when} sees the call's arguments, as {@link Libc} declares them.
 */
final class FailingLibc {

    private FailingLibc() {
    }

    /** {@code call} fails with {@code errno} whenever {@code when} holds for its arguments. */
    static Libc failing(String call, int errno, Predicate<Object[]> when) {
        return interpose(call, (real, args) -> {
            if (when.test(args)) throw new ErrnoException(call, errno, "fake", "injected by the test");
            return null;
        });
    }

    /** {@code call} returns {@code answer} without being made, as when the kernel would allow it. */
    static Libc answering(String call, Object answer) {
        return interpose(call, (real, args) -> answer);
    }

    /** The first {@code call} for whose arguments {@code when} holds first runs {@code action}, then is made. */
    static Libc runningBefore(String call, Predicate<Object[]> when, Runnable action) {
        AtomicBoolean ran = new AtomicBoolean();
        return interpose(call, (real, args) -> {
            if (when.test(args) && ran.compareAndSet(false, true)) action.run();
            return null;
        });
    }

    /** What replaces a call: a non-null result is its answer, {@code null} lets the real call go ahead. */
    private interface Step {
        Object apply(Libc real, Object[] args) throws Throwable;
    }

    private static Libc interpose(String call, Step step) {
        Libc real = Linux.libc();
        return (Libc) Proxy.newProxyInstance(Libc.class.getClassLoader(), new Class<?>[] {Libc.class}, (proxy, method, args) -> {
            if (method.getName().equals(call)) {
                Object answer = step.apply(real, args);
                if (answer != null) return answer;
            }
            try {
                return method.invoke(real, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
        });
    }
}
