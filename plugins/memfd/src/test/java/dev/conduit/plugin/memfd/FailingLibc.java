package dev.conduit.plugin.memfd;

import dev.conduit.linux.ErrnoException;
import dev.conduit.linux.Libc;
import dev.conduit.linux.Linux;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.util.function.BiFunction;
import java.util.function.BiPredicate;

/** The real {@link Libc}, except that chosen calls fail: for the error paths the kernel rarely takes. */
final class FailingLibc {

    private FailingLibc() {
    }

    /** The real libc, except that a call for which {@code fault} (given the method's name and arguments) gives an exception throws it. */
    static Libc throwing(BiFunction<String, Object[], RuntimeException> fault) {
        Libc libc = Linux.libc();
        return (Libc) Proxy.newProxyInstance(Libc.class.getClassLoader(), new Class<?>[] {Libc.class}, (proxy, method, args) -> {
            RuntimeException e = fault.apply(method.getName(), args);
            if (e != null) throw e;
            try {
                return method.invoke(libc, args);
            } catch (InvocationTargetException invoked) {
                throw invoked.getCause();
            }
        });
    }

    /**
     * The real libc, except that a call for which {@code answer} (given the method's name and arguments) gives a result returns
     * that result without reaching the kernel, and one for which it gives an exception throws it.
     */
    static Libc answering(BiFunction<String, Object[], Object> answer) {
        Libc libc = Linux.libc();
        return (Libc) Proxy.newProxyInstance(Libc.class.getClassLoader(), new Class<?>[] {Libc.class}, (proxy, method, args) -> {
            Object given = answer.apply(method.getName(), args);
            if (given instanceof RuntimeException e) throw e;
            if (given != null) return given;
            try {
                return method.invoke(libc, args);
            } catch (InvocationTargetException invoked) {
                throw invoked.getCause();
            }
        });
    }

    /** What a call returned, as a test would have it returned, or something done after it. */
    interface After {
        Object result(String call, Object[] args, Object result) throws Exception;
    }

    /** The real libc, each call's result passed through {@code after} (given the method's name, arguments and result). */
    static Libc after(After after) {
        Libc libc = Linux.libc();
        return (Libc) Proxy.newProxyInstance(Libc.class.getClassLoader(), new Class<?>[] {Libc.class}, (proxy, method, args) -> {
            Object result;
            try {
                result = method.invoke(libc, args);
            } catch (InvocationTargetException invoked) {
                throw invoked.getCause();
            }
            return after.result(method.getName(), args, result);
        });
    }

    /** The real libc, except that {@code call} fails with {@code errno}. */
    static Libc failing(String call, int errno) {
        return throwing((name, args) -> name.equals(call) ? new ErrnoException(call, errno, "fake", "injected by the test") : null);
    }

    /** The real libc, except that the calls {@code when} picks (by name and arguments) fail with {@code errno}, naming their path argument. */
    static Libc failing(int errno, BiPredicate<String, Object[]> when) {
        return throwing((name, args) -> when.test(name, args)
                ? new ErrnoException(name, errno, String.valueOf(args[args.length > 1 ? 1 : 0]), "injected by the test") : null);
    }
}
