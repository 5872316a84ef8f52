package dev.conduit.shm;

import dev.conduit.linux.Libc;
import dev.conduit.linux.Linux;

import java.nio.file.Path;

/**
 * A JVM of its own that reclaims the dead owners' files of prefix {@code args[1]} in directory
 * {@code args[0]} and prints what it removed, one name a line: for a reclaim in a user namespace
 * ({@link OwnerLeaseTest}), which a thread of the test's JVM cannot enter.
 */
public final class ReclaimingChild {

    private ReclaimingChild() {
    }

    public static void main(String[] args) {
        Libc libc = Linux.libc();
        try (SharedDirectory directory = SharedDirectory.open(libc, Path.of(args[0]), "shared.dir (CONDUIT_SHARED_DIR)")) {
            OwnerLease.reclaimDead(libc, directory, args[1]).forEach(System.out::println);
        }
    }
}
