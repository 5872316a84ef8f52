package org.example.conduit.tcp;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Where a loopback address reaches: one network namespace, on one boot of one host. A peer that
 * publishes {@code 127.0.0.1} (the default {@code tcp.host}) from a container with a network of its
 * own, or from another host, names a loopback no process outside that namespace reaches: a connect
 * to it would be refused, and taken for the peer's death, or would reach whatever else listens on
 * that port here. So the transport publishes its scope in its address and connects to a loopback
 * address only from the same scope; anything else is "not reachable from here", and the runtime
 * tries the next transport both workers have (memfd or posix between a host and its container).
 */
final class LoopbackScope {

    private LoopbackScope() {
    }

    /**
     * This process's scope, {@code BOOT_ID/net:[INODE]}: the kernel's boot id (the same in every
     * container of a host, different on every host and boot) and this process's network namespace.
     * Empty where {@code /proc} does not say (not Linux): a peer with an empty scope is not judged.
     */
    static String current() {
        try {
            String boot = Files.readString(Path.of("/proc/sys/kernel/random/boot_id")).strip();
            String network = Files.readSymbolicLink(Path.of("/proc/self/ns/net")).toString();
            return boot + "/" + network;
        } catch (IOException | UnsupportedOperationException | SecurityException e) {
            return "";
        }
    }

    /** Whether a peer that published a loopback address from {@code peerScope} is reachable from {@code ownScope}. */
    static boolean reaches(String ownScope, String peerScope) {
        return ownScope.isEmpty() || peerScope.isEmpty() || ownScope.equals(peerScope);
    }
}
