package dev.conduit.plugin.posix;

import dev.conduit.linux.ErrnoException;
import dev.conduit.linux.Libc;
import dev.conduit.linux.Linux;
import dev.conduit.linux.OpenFlags;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;

/**
 * The real {@link Libc}, except that one call fails with one errno, or waits: for the error paths
 * the kernel rarely takes, and for calls that take long (as a memfd import waits on its producer).
 */
final class FailingLibc {

    private FailingLibc() {
    }

    static Libc failing(String call, int errno) {
        return failingWhile(call, errno, () -> true);
    }

    /**
     * Like {@link #failing}, but only while {@code when} says so. An {@code openBeneath} with
     * {@code O_PATH} is let through: the kernel checks no permission of the file it names (nor does
     * a security module), so the refusals these tests play would not refuse it. What it looked at
     * is then opened through {@code /proc/self/fd} ({@code SharedDirectory#openRegularFile}): that
     * {@code open} is refused as the {@code openBeneath} of the file by its name would be.
     */
    static Libc failingWhile(String call, int errno, BooleanSupplier when) {
        return beforeEvery((name, args) -> {
            boolean pathOnly = name.equals("openBeneath") && ((int) args[2] & OpenFlags.O_PATH) != 0;
            boolean reopen = call.equals("openBeneath") && name.equals("open") && String.valueOf(args[0]).startsWith("/proc/self/fd/");
            if ((name.equals(call) && !pathOnly || reopen) && when.getAsBoolean()) {
                throw new ErrnoException(call, errno, "fake", "injected by the test");
            }
        });
    }

    /** Like {@link #failing}, but only the calls whose arguments {@code which} accepts fail. */
    static Libc failingFor(String call, int errno, java.util.function.Predicate<Object[]> which) {
        return beforeEach(call, args -> {
            if (which.test(args)) throw new ErrnoException(call, errno, "fake", "injected by the test");
        });
    }

    /** The real one, counting the calls of {@code call} in {@code calls}. */
    static Libc counting(String call, AtomicInteger calls) {
        return beforeEach(call, args -> calls.incrementAndGet());
    }

    /** The real one, counting the calls of each method {@code calls} names in its count there. */
    static Libc counting(java.util.Map<String, AtomicInteger> calls) {
        return beforeEvery((call, args) -> {
            AtomicInteger count = calls.get(call);
            if (count != null) count.incrementAndGet();
        });
    }

    /**
     * The real one, adding to {@code opens} each open that is more than a look ({@code openBeneath} without
     * {@code O_PATH}, {@code open}): "openBeneath NAME" or "open PATH".
     */
    static Libc recordingOpens(java.util.List<String> opens) {
        return beforeEvery((call, args) -> {
            if (call.equals("open") || call.equals("openBeneath") && ((int) args[2] & OpenFlags.O_PATH) == 0) {
                opens.add(call + " " + args[call.equals("open") ? 0 : 1]);
            }
        });
    }

    /** The real one, showing {@code watcher} each call (its method's name and its arguments) before it is made. */
    static Libc seeing(java.util.function.BiConsumer<String, Object[]> watcher) {
        return beforeEvery(watcher::accept);
    }

    /** The real one, except that the calls of {@code call} whose arguments {@code which} accepts are not made, and answer {@code answer}. */
    static Libc answeringFor(String call, java.util.function.Predicate<Object[]> which, Object answer) {
        Libc real = Linux.libc();
        return (Libc) Proxy.newProxyInstance(Libc.class.getClassLoader(), new Class<?>[] {Libc.class}, (proxy, method, args) -> {
            if (method.getName().equals(call) && which.test(args)) return answer;
            try {
                return method.invoke(real, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
        });
    }

    /** Like the real one, but {@code call} first waits until {@code released} is counted down. */
    static Libc waitingIn(String call, CountDownLatch released) {
        return beforeEach(call, args -> released.await());
    }

    /** Like {@link #waitingIn}, but only the calls whose arguments {@code which} accepts wait. */
    static Libc waitingIn(String call, java.util.function.Predicate<Object[]> which, CountDownLatch released) {
        return beforeEach(call, args -> {
            if (which.test(args)) released.await();
        });
    }

    /** The real one, but {@code fstat} says that every file belongs to {@code uid} while {@code when} says so. */
    static Libc ownedBy(int uid, BooleanSupplier when) {
        Libc real = Linux.libc();
        return (Libc) Proxy.newProxyInstance(Libc.class.getClassLoader(), new Class<?>[] {Libc.class}, (proxy, method, args) -> {
            Object result;
            try {
                result = method.invoke(real, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
            if (result instanceof dev.conduit.linux.FileStatus s && method.getName().equals("fstat") && when.getAsBoolean()) {
                return new dev.conduit.linux.FileStatus(s.size(), s.mode(), uid, s.gid(), s.dev(), s.rdev(), s.inode(), s.modifiedMillis(), s.links());
            }
            return result;
        });
    }

    /** What runs before each call of one method; it may throw, in place of the call. */
    private interface Before {
        void run(Object[] args) throws Exception;
    }

    /** What runs before every call, given the method's name; it may throw, in place of the call. */
    private interface BeforeCall {
        void run(String call, Object[] args) throws Exception;
    }

    /** The real {@link Libc}, with {@code before} run before each call of {@code call}. */
    private static Libc beforeEach(String call, Before before) {
        return beforeEvery((name, args) -> {
            if (name.equals(call)) before.run(args);
        });
    }

    /** The real {@link Libc}, with {@code before} run before every call. */
    private static Libc beforeEvery(BeforeCall before) {
        Libc real = Linux.libc();
        return (Libc) Proxy.newProxyInstance(Libc.class.getClassLoader(), new Class<?>[] {Libc.class}, (proxy, method, args) -> {
            before.run(method.getName(), args);
            try {
                return method.invoke(real, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
        });
    }
}
