package dev.conduit.internal.worker;

import dev.conduit.PeerRegion;
import dev.conduit.internal.ipc.IpcImports;
import dev.conduit.spi.ExporterState;
import dev.conduit.spi.PeerFailedException;
import dev.conduit.spi.RemoteRegion;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/** An application's handle on a peer's region: the SPI's {@link RemoteRegion} (one IPC-cache count), released once. */
final class RuntimePeerRegion implements PeerRegion {

    private static final int OPEN = 0;
    private static final int CLOSED_BY_APPLICATION = 1;
    /** Closed by its endpoint's close (or its worker's, or the report of its failure): the application never closed it itself. */
    private static final int CLOSED_WITH_ENDPOINT = 2;
    private static final VarHandle STATE;

    static {
        try {
            STATE = MethodHandles.lookup().findVarHandle(RuntimePeerRegion.class, "state", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    final RuntimeEndpoint owner;
    private final RemoteRegion remote;
    private final long size;
    /**
     * Open, or who closed it, for the error of a later use: one field set by one CAS, so that another thread never sees it
     * closed without who did (with a flag set after the close, exporterState() could say the application closed it).
     */
    private volatile int state;

    RuntimePeerRegion(RuntimeEndpoint owner, RemoteRegion remote) {
        this.owner = owner;
        this.remote = remote;
        this.size = remote.length();
    }

    /** Whether the application closed it (not its endpoint's or worker's close). */
    boolean closedByApplication() {
        return state == CLOSED_BY_APPLICATION;
    }

    /** The transport's view, for an operation; fails if closed. */
    RemoteRegion remote() {
        int closedBy = state;
        if (closedBy != OPEN) {
            throw new IllegalStateException(closedBy == CLOSED_WITH_ENDPOINT ? "this PeerRegion is closed: its endpoint was closed (or its worker), "
                    + "which closes the peer regions opened on it; open the region again on a live endpoint to the peer" : "this PeerRegion is closed: open the region again with Endpoint.peerRegion(handle) to use it");
        }
        return remote;
    }

    /**
     * What an operation throws for {@code failure}, an {@link IllegalStateException} from the transport: said as this region's
     * close, with {@code failure} as the cause, when it was closed meanwhile; else {@code failure} itself.
     */
    RuntimeException closedUnder(IllegalStateException failure) {
        int closedBy = state;
        if (closedBy == OPEN) return failure;
        return new IllegalStateException("this PeerRegion was closed during this operation, by another thread"
                + (closedBy == CLOSED_WITH_ENDPOINT ? " closing its endpoint (or its worker)" : "") + ", which may unmap it under the operation: "
                + "close a region, or its endpoint, only once no thread uses it", failure);
    }

    @Override
    public long size() {
        return size;
    }

    @Override
    public String plugin() {
        return remote.pluginName();
    }

    /**
     * The mapping's judgement where the region is mapped here, else its endpoint's failure's; also on a
     * region the endpoint's failure closed (the mapping answers after its close, as ChunkMapping says). Its
     * endpoint's failure is read without the worker's guard, which PeerRegion promises this takes none of.
     */
    @Override
    public ExporterState exporterState() {
        PeerFailedException failure = owner.failureWithoutGuard();
        int closedBy = state;
        if (closedBy != OPEN && !(closedBy == CLOSED_WITH_ENDPOINT && failure != null)) remote(); // throws, saying how it was closed
        ExporterState mapped = IpcImports.exporterState(remote);
        if (mapped != null) return mapped;
        return failure != null && failure.reason() == PeerFailedException.Reason.DIED ? ExporterState.DEAD : ExporterState.UNKNOWN;
    }

    @Override
    public void close() {
        if (STATE.compareAndSet(this, OPEN, CLOSED_BY_APPLICATION)) {
            try {
                remote.close();
            } finally {
                owner.regionClosed(this);
            }
        }
    }

    /** Releases the region without telling its endpoint (which is closing). */
    void closeByEndpoint() {
        if (STATE.compareAndSet(this, OPEN, CLOSED_WITH_ENDPOINT)) {
            remote.close();
        }
    }

    @Override
    public String toString() {
        return "PeerRegion[" + remote.pluginName() + ", " + size + " B" + (state != OPEN ? ", closed" : "") + "]";
    }
}
