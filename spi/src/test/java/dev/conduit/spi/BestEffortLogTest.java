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
}
