package dev.conduit.internal.ipc;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/** JFR events of the IPC path: exports, imports (hit or miss) and cache evictions. */
public final class IpcEvents {

    private IpcEvents() {
    }

    @Name("dev.conduit.Export")
    @Label("IPC Export")
    @Category({"Conduit", "IPC"})
    @Description("A chunk was exported for the first time, or a handle to a region in an exported chunk was made")
    @StackTrace(false)
    public static final class Export extends Event {
        @Label("Plugin") public String plugin;
        @Label("Export Id") public long exportId;
        @Label("Chunk Length") @DataAmount public long chunkLength;
        @Label("First Export Of Chunk") public boolean firstExport;
    }

    @Name("dev.conduit.Import")
    @Label("IPC Import")
    @Category({"Conduit", "IPC"})
    @Description("A handle was opened: from the cache (hit) or by mapping the chunk (miss)")
    @StackTrace(false)
    public static final class Import extends Event {
        @Label("Plugin") public String plugin;
        @Label("Export Id") public long exportId;
        @Label("Chunk Length") @DataAmount public long chunkLength;
        @Label("Hit") public boolean hit;
    }

    @Name("dev.conduit.Eviction")
    @Label("IPC Cache Eviction")
    @Category({"Conduit", "IPC"})
    @Description("An unused mapping was evicted from the IPC cache and unmapped")
    @StackTrace(false)
    public static final class Eviction extends Event {
        @Label("Plugin") public String plugin;
        @Label("Export Id") public long exportId;
        @Label("Chunk Length") @DataAmount public long chunkLength;
        @Label("Cause") public String cause;
    }
}
