package dev.conduit.tck;

import java.text.MessageFormat;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.ResourceBundle;

/**
 * A logger that keeps the text of every message it is given, by level, for a plugin's unit tests
 * that check what the plugin says (give it with {@link TestContext#withLogger}). A message logged
 * with parameters is kept formatted as {@link MessageFormat} formats it. Thread-safe.
 */
public final class RecordingLogger implements System.Logger {

    private final Map<Level, List<String>> logged = new EnumMap<>(Level.class);
    private final Map<Level, List<Throwable>> thrown = new EnumMap<>(Level.class);

    public RecordingLogger() {
        for (Level level : Level.values()) {
            logged.put(level, Collections.synchronizedList(new ArrayList<>()));
            thrown.put(level, Collections.synchronizedList(new ArrayList<>()));
        }
    }

    /**
     * The throwables logged with a message at {@code level} so far, in order: a live, synchronized
     * list. A failure said with its throwable shows its stack and causes in an operator's log.
     */
    public List<Throwable> thrownAt(Level level) {
        return thrown.get(level);
    }

    /** The WARNINGs logged so far, in order: a live, synchronized list. */
    public List<String> warnings() {
        return at(Level.WARNING);
    }

    /** The messages logged so far at {@code level}, in order: a live, synchronized list. */
    public List<String> at(Level level) {
        return logged.get(level);
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
        logged.get(level).add(message);
        if (thrown != null) this.thrown.get(level).add(thrown);
    }

    @Override
    public void log(Level level, ResourceBundle bundle, String format, Object... params) {
        logged.get(level).add(params == null || params.length == 0 ? format : MessageFormat.format(format, params));
    }
}
