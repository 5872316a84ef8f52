package dev.conduit.spi;

import java.util.List;
import java.util.ResourceBundle;

/** Loggers for the tests of the SPI's logging helpers. */
final class TestLoggers {

    private TestLoggers() {
    }

    /**
     * A logger of every level that keeps each record in {@code records} as its level and message, then
     * {@code " / "} and the throwable when it has one.
     */
    static System.Logger keeping(List<String> records) {
        return new System.Logger() {
            @Override
            public String getName() {
                return "kept";
            }

            @Override
            public boolean isLoggable(Level level) {
                return true;
            }

            @Override
            public void log(Level level, ResourceBundle bundle, String message, Throwable thrown) {
                records.add(level + " " + message + (thrown == null ? "" : " / " + thrown));
            }

            @Override
            public void log(Level level, ResourceBundle bundle, String format, Object... params) {
                records.add(level + " " + format);
            }
        };
    }

    /**
     * A logger that fails at every record as the JDK's does out of descriptors: it loads its
     * time-zone data with its first record, and then throws {@link NoClassDefFoundError} at each.
     */
    static System.Logger failingAsOutOfDescriptors() {
        return new System.Logger() {
            @Override
            public String getName() {
                return "failing";
            }

            @Override
            public boolean isLoggable(Level level) {
                return true;
            }

            @Override
            public void log(Level level, ResourceBundle bundle, String message, Throwable thrown) {
                throw new NoClassDefFoundError("Could not initialize class java.time.zone.ZoneRulesProvider");
            }

            @Override
            public void log(Level level, ResourceBundle bundle, String format, Object... params) {
                throw new NoClassDefFoundError("Could not initialize class java.time.zone.ZoneRulesProvider");
            }
        };
    }
}
