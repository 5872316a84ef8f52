package dev.conduit.spi;

/**
 * How the JDK reports a fault on mapped memory: a page that is gone ({@code SIGBUS}: the file
 * was truncated by another process, or a full file system could not supply the page on first
 * touch) becomes {@code java.lang.InternalError: a fault occurred in an unsafe memory access
 * operation}, or, when compiled code gets it at its next safepoint check, "… in a recent unsafe
 * memory access operation in compiled Java code". For plugins that map files and catch it where
 * they access them, and for the runtime, which catches what reaches it after the plugin returned.
 */
public final class MappedMemoryFault {

    private MappedMemoryFault() {
    }

    /** Whether {@code error} is the JDK's report of a fault on mapped memory, not another {@code InternalError}. */
    public static boolean is(InternalError error) {
        String message = error.getMessage();
        return message != null && message.contains("fault occurred") && message.contains("memory access");
    }
}
