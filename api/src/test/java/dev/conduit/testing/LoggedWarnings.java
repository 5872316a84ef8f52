package dev.conduit.testing;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/** What a logger logs at WARNING (or at another level) while a test's action runs. */
public final class LoggedWarnings {

    private LoggedWarnings() {
    }

    /** The WARNINGs that logger {@code logger} ({@code dev.conduit}, {@code dev.conduit.worker}) logs while {@code action} runs. */
    public static List<LogRecord> loggedWhile(String logger, Runnable action) {
        return loggedWhile(logger, Level.WARNING, action);
    }

    /** The records of exactly {@code level} that logger {@code logger} logs while {@code action} runs. */
    public static List<LogRecord> loggedWhile(String logger, Level level, Runnable action) {
        // Copy-on-write: a build's probe threads may log while the test thread reads.
        List<LogRecord> warnings = new CopyOnWriteArrayList<>();
        Logger log = Logger.getLogger(logger);
        Handler recording = new Handler() {
            @Override
            public void publish(LogRecord record) {
                if (record.getLevel() == level) warnings.add(record);
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        log.addHandler(recording);
        try {
            action.run();
        } finally {
            log.removeHandler(recording);
        }
        return warnings;
    }

    /**
     * Runs {@code action} while every record of logger {@code logger} fails as the JDK's logging
     * does out of descriptors: an {@link Error} at every record ({@code NoClassDefFoundError} once
     * its time-zone data failed to load).
     */
    public static void failingWhile(String logger, Runnable action) {
        Logger log = Logger.getLogger(logger);
        Handler failing = new Handler() {
            @Override
            public void publish(LogRecord record) {
                throw new NoClassDefFoundError("Could not initialize class java.time.zone.ZoneRulesProvider");
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        log.addHandler(failing);
        try {
            action.run();
        } finally {
            log.removeHandler(failing);
        }
    }
}
