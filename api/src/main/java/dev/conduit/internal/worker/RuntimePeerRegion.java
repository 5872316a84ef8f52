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

    private static final VarHandle CLOSED;

    static {
        try {
            CLOSED = MethodHandles.lookup().findVarHandle(RuntimePeerRegion.class, "closed", boolean.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    final RuntimeEndpoint owner;
    private final RemoteRegion remote;
    private final long size;
    @SuppressWarnings("unused") // through CLOSED
    private volatile boolean closed;
    /** Whether its endpoint's close closed it, for the error of a later use: the application never closed it itself. */
    private volatile boolean closedWithEndpoint;

    RuntimePeerRegion(RuntimeEndpoint owner, RemoteRegion remote) {
        this.owner = owner;
        this.remote = remote;
        this.size = remote.length();
    }

    /** The transport's view, for an operation; fails if closed. */
    RemoteRegion remote() {
        if (closed) {
            throw new IllegalStateException(closedWithEndpoint ? "this PeerRegion is closed: its endpoint was closed (or its worker), "
                    + "which closes the peer regions opened on it; open the region again on a live endpoint to the peer" : "this PeerRegion is closed: open the region again with Endpoint.peerRegion(handle) to use it");
        }
        return remote;
    }

    /**
     * What an operation throws for {@code failure}, an {@link IllegalStateException} from the transport: said as this region's
     * close, with {@code failure} as the cause, when it was closed meanwhile; else {@code failure} itself.
     */
    RuntimeException closedUnder(IllegalStateException failure) {
        if (!closed) return failure;
        return new IllegalStateException("this PeerRegion was closed during this operation, by another thread"
                + (closedWithEndpoint ? " closing its endpoint (or its worker)" : "") + ", which may unmap it under the operation: "
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
     * region the endpoint's failure closed (the mapping answers after its close, as ChunkMapping says).
     */
    @Override
    public ExporterState exporterState() {
        PeerFailedException failure = owner.failure();
        if (closed && !(closedWithEndpoint && failure != null)) remote(); // throws, saying how it was closed
        ExporterState mapped = IpcImports.exporterState(remote);
        if (mapped != null) return mapped;
        return failure != null && failure.reason() == PeerFailedException.Reason.DIED ? ExporterState.DEAD : ExporterState.UNKNOWN;
    }

    @Override
    public void close() {
        if (CLOSED.compareAndSet(this, false, true)) {
            try {
                remote.close();
            } finally {
                owner.regionClosed(this);
            }
        }
    }

    /** Releases the region without telling its endpoint (which is closing). */
    void closeByEndpoint() {
        if (CLOSED.compareAndSet(this, false, true)) {
            closedWithEndpoint = true;
            remote.close();
        }
    }

    @Override
    public String toString() {
        return "PeerRegion[" + remote.pluginName() + ", " + size + " B" + (closed ? ", closed" : "") + "]";
    }
}
