package dev.conduit.tck;

import java.text.MessageFormat;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.ResourceBundle;

/**
 * A logger that keeps the text of every WARNING it is given, for a plugin's unit tests that check
 * what the plugin says (give it with {@link TestContext#withLogger}). A message logged with
 * parameters is kept formatted as {@link MessageFormat} formats it. Thread-safe.
 */
public final class RecordingLogger implements System.Logger {

    private final List<String> warnings = Collections.synchronizedList(new ArrayList<>());

    /** The WARNINGs logged so far, in order: a live, synchronized list. */
    public List<String> warnings() {
        return warnings;
    }

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
        if (level == Level.WARNING) warnings.add(params == null || params.length == 0 ? format : MessageFormat.format(format, params));
    }
}
