package dev.conduit.tck.internal;

import dev.conduit.spi.PayloadReader;

/** A peer's transport address as the runtime hands it to {@code Transport.connect}. */
public final class Addresses {

    private Addresses() {
    }

    /**
     * A reader of {@code address} whose errors read as the runtime's do, {@code invalid Conduit
     * worker address: field 'address.<plugin>.…'} (plugin-authoring.md), so that the suites show an
     * author the words an application would see, not those of an IPC handle.
     */
    public static PayloadReader reader(String plugin, byte[] address) {
        return new PayloadReader(address, 0, address.length, "address." + plugin + ".", "Conduit worker address");
    }
}
