package dev.conduit.spi;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class BestEffortLogTest {

    private final List<String> records = new ArrayList<>();
    private final System.Logger logger = TestLoggers.keeping(records);

    /** A plugin's Error on a path nobody waits for (a class it misses) is logged as its exceptions are, and the caller goes on. */
    @Test
    void aPluginsExceptionOrErrorIsLoggedWithItsFailure() {
        NoClassDefFoundError missing = new NoClassDefFoundError("dev/example/Gone");
        assertThat(BestEffortLog.warnUnlessTheJvmsOwn(logger, () -> "could not unmap", missing)).isTrue();
        assertThat(BestEffortLog.warnUnlessTheJvmsOwn(logger, () -> "could not free", new IllegalStateException("busy"))).isTrue();
        // InternalError is how the JDK reports a fault on mapped memory: the plugin's, not the JVM's own.
        assertThat(BestEffortLog.warnUnlessTheJvmsOwn(logger, () -> "could not read", new InternalError("a fault"))).isTrue();
        assertThat(records).containsExactly("WARNING could not unmap / " + missing,
                "WARNING could not free / java.lang.IllegalStateException: busy",
                "WARNING could not read / java.lang.InternalError: a fault");
    }

    @Test
    void theJvmsOwnErrorIsRethrownNotLogged() {
        OutOfMemoryError oom = new OutOfMemoryError("Java heap space");
        assertThatThrownBy(() -> BestEffortLog.warnUnlessTheJvmsOwn(logger, () -> "could not unmap", oom)).isSameAs(oom);
        StackOverflowError overflow = new StackOverflowError();
        assertThatThrownBy(() -> BestEffortLog.warnUnlessTheJvmsOwn(logger, () -> "could not unmap", overflow)).isSameAs(overflow);
        assertThat(records).isEmpty();
    }

    /** Out of descriptors the JDK's logging throws an Error at every record: the caller goes on all the same. */
    @Test
    void aLoggerThatFailsCostsTheCallerNothing() {
        System.Logger failing = TestLoggers.failingAsOutOfDescriptors();
        assertThat(BestEffortLog.warnUnlessTheJvmsOwn(failing, () -> "could not unmap", new IllegalStateException("x"))).isFalse();
        assertThat(BestEffortLog.warn(logger, () -> {
            throw new IllegalStateException("a message that cannot be made");
        }, null)).isFalse();
    }

    /**
     * A message made in Kotlin (which has no checked exceptions) or with Lombok's
     * {@code @SneakyThrows} may throw a checked exception its {@code Supplier} does not declare (it
     * reads a file to say what it found); a logger bridged to another framework may too. Until
     * 2026-12-07 log caught only RuntimeException and Error, so that it reached the caller, and
     * through RepeatedWarning a serving loop.
     */
    @Test
    void aCheckedExceptionThrownUndeclaredByTheMessageOrTheLoggerCostsTheCallerNothing() {
        java.io.IOException unreadable = new java.io.IOException("/proc/self/status: Too many open files");
        assertThat(BestEffortLog.warn(logger, () -> {
            throw sneaky(unreadable);
        }, null)).isFalse();
        System.Logger bridged = new System.Logger() {
            @Override public String getName() { return "bridged"; }
            @Override public boolean isLoggable(Level level) { return true; }
            @Override public void log(Level level, java.util.ResourceBundle bundle, String msg, Throwable thrown) { throw sneaky(unreadable); }
            @Override public void log(Level level, java.util.ResourceBundle bundle, String format, Object... params) { throw sneaky(unreadable); }
        };
        assertThat(BestEffortLog.warn(bridged, () -> "could not unmap", new IllegalStateException("busy"))).isFalse();
        assertThat(new RepeatedWarning(bridged, java.time.Duration.ofMinutes(1)).log(() -> "refused a peer")).isFalse();
        assertThat(records).isEmpty();
    }

    /** Throws {@code e}, checked or not, where the compiler would not let a checked one through: as Kotlin or Lombok do. */
    @SuppressWarnings("unchecked")
    private static <E extends Throwable> RuntimeException sneaky(Throwable e) throws E {
        throw (E) e;
    }
}
