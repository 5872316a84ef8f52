package dev.conduit.plugin.posix;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.ResourceBundle;

/** A logger that keeps the WARNINGs a transport logs, for tests that check what it says. */
final class RecordingLogger implements System.Logger {

    final List<String> warnings = Collections.synchronizedList(new ArrayList<>());

    @Override
    public String getName() {
        return "recording";
    }

    @Override
    public boolean isLoggable(Level level) {
        return true;
    }

    @Override
    public void log(Level level, ResourceBundle bundle, String message, Throwable thrown) {
        if (level == Level.WARNING) warnings.add(message);
    }

    @Override
    public void log(Level level, ResourceBundle bundle, String format, Object... params) {
        if (level == Level.WARNING) warnings.add(format);
    }
}
