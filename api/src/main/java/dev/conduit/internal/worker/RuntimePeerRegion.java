package dev.conduit.internal.worker;

import dev.conduit.PeerRegion;
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

    @Override
    public long size() {
        return size;
    }

    @Override
    public String plugin() {
        return remote.pluginName();
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
