package dev.conduit.internal.formats;

import dev.conduit.internal.ipc.IpcHandle;
import dev.conduit.internal.worker.AddressFormat;

/**
 * The versions of the formats the runtime itself writes and reads, as {@code conduit --version}
 * shows them: two builds whose versions agree here (and in each plugin's {@code formats} detail
 * of {@code conduit info}) exchange addresses and handles (docs/runtime.md, "Processes of
 * different Conduit versions"). Exported to the tools module only.
 */
public final class RuntimeFormats {

    private RuntimeFormats() {
    }

    /** For example {@code worker address 1, IPC handle 1}. */
    public static String describe() {
        return "worker address " + AddressFormat.VERSION + ", IPC handle " + IpcHandle.VERSION;
    }
}
