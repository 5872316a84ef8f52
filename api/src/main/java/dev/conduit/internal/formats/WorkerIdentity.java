package dev.conduit.internal.formats;

import dev.conduit.WorkerAddress;
import dev.conduit.internal.worker.AddressFormat;

import java.util.Arrays;

/**
 * Whether two worker addresses name one worker, which their bytes do not tell: a worker's connect reaches a peer through
 * the entry of the first of its own transports that the address lists, and looks at neither the worker id nor the other
 * entries ({@link dev.conduit.Worker#connect}), so one worker is named by its address with another id, its entries in
 * another order, fewer of them, or besides entries of plugins it lacks. Exported to the tools module only: conduit perf's
 * server refuses a client that names it as its own.
 */
public final class WorkerIdentity {

    private WorkerIdentity() {
    }

    /**
     * Whether {@code a} and {@code b} name one worker: they carry its id, or one transport's address that the worker gave it
     * (the same bytes for the same plugin: the shared-memory transports read theirs strictly, its lease's and its queue's
     * names, the queue's one mapped length and its token, nothing after them). An address that reaches the worker's queue by
     * bytes of its own (a second name of the queue's file, which a process that writes the shared directory could make) is
     * not seen: only the transport could tell.
     */
    public static boolean sameWorker(WorkerAddress a, WorkerAddress b) {
        AddressFormat.Decoded x = AddressFormat.decode(a.toBytes());
        AddressFormat.Decoded y = AddressFormat.decode(b.toBytes());
        if (x.idHigh() == y.idHigh() && x.idLow() == y.idLow()) return true;
        for (AddressFormat.Entry entry : x.entries()) {
            AddressFormat.Entry same = y.entry(entry.plugin());
            if (same != null && Arrays.equals(entry.address(), same.address())) return true;
        }
        return false;
    }

    /**
     * The address {@code address} gives the worker's transport of {@code plugin} (that transport's own format, unread here),
     * or null when it lists no such transport: conduit perf's server judges by it whether the worker of a bootstrap file
     * that no lock guards still runs (a server of a Conduit before 2026-12-04 locked nothing).
     */
    public static byte[] transportAddress(WorkerAddress address, String plugin) {
        AddressFormat.Entry entry = AddressFormat.decode(address.toBytes()).entry(plugin);
        return entry == null ? null : entry.address().clone();
    }
}
