package dev.conduit.shm;

import dev.conduit.linux.Libc;
import dev.conduit.linux.Linux;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Owners come and go while others reclaim the files of dead ones: as when several workers open at
 * once on one shared directory, each reclaiming before it acquires its own lease.
 */
class OwnerLeaseTest {

    @TempDir
    Path shared;

    @Test
    void acquiringNeverFailsWhileOthersReclaimAndEveryLeaseStaysLive() throws Exception {
        Libc libc = Linux.libc();
        try (SharedDirectory directory = SharedDirectory.open(libc, shared, "shared.dir (CONDUIT_SHARED_DIR)")) {
            AtomicBoolean done = new AtomicBoolean();
            ExecutorService threads = Executors.newFixedThreadPool(4);
            try {
                List<Future<?>> reclaimers = new ArrayList<>();
                for (int r = 0; r < 2; r++) {
                    reclaimers.add(threads.submit(() -> {
                        while (!done.get()) OwnerLease.reclaimDead(libc, directory, "conduit-test");
                    }));
                }
                List<Future<Integer>> owners = new ArrayList<>();
                for (int o = 0; o < 2; o++) {
                    owners.add(threads.submit(() -> {
                        int live = 0;
                        for (int i = 0; i < 2_000; i++) {
                            try (OwnerLease lease = OwnerLease.acquire(libc, directory, "conduit-test")) {
                                if (OwnerLease.isAlive(libc, directory, OwnerLease.leaseName("conduit-test", lease.owner()))) live++;
                            }
                        }
                        return live;
                    }));
                }
                for (Future<Integer> owner : owners) assertThat(owner.get()).isEqualTo(2_000);
                done.set(true);
                for (Future<?> reclaimer : reclaimers) reclaimer.get();
            } finally {
                done.set(true);
                threads.shutdownNow();
            }
        }
        assertThat(shared).isEmptyDirectory();
    }
}
