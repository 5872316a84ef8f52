package dev.conduit.internal.worker;

import dev.conduit.Conduit;
import dev.conduit.ImportedRegion;
import dev.conduit.Pool;
import dev.conduit.Region;
import dev.conduit.internal.ipc.InProcessMemoryPlugin;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A Conduit, a Pool, a Region and an ImportedRegion say what they are when logged, as a Worker, an
 * Endpoint and a PeerRegion already did: they logged as the runtime's internal classes
 * ({@code dev.conduit.internal.memory.PoolRegion@7c041b41}), which told a user nothing.
 */
class PublicTypesToStringTest {

    private final Loopbacks loopbacks = new Loopbacks();

    @AfterEach
    void tearDown() {
        loopbacks.close();
    }

    @Test
    void eachSaysItsPluginItsLengthAndWhetherItIsClosed() {
        Conduit conduit = loopbacks.conduit(new LoopbackPlugin("lo", 8, false), new InProcessMemoryPlugin());
        Pool pool = conduit.pool("inproc");
        Region region = pool.allocate(100);
        ImportedRegion imported = conduit.importRegion(region.exportHandle());

        assertThat(conduit).hasToString("Conduit[[lo, inproc]]");
        assertThat(pool).hasToString("Pool[inproc]");
        assertThat(region).hasToString("Region[inproc, 100 B]");
        assertThat(imported).hasToString("ImportedRegion[inproc, 100 B]");

        imported.close();
        region.close();
        assertThat(imported).hasToString("ImportedRegion[inproc, 100 B, closed]");
        assertThat(region).hasToString("Region[inproc, 100 B, closed]");

        Region freedByThePool = pool.allocate(64);
        pool.close();
        assertThat(pool).hasToString("Pool[inproc, closed]");
        assertThat(freedByThePool).as("its pool's close freed it").hasToString("Region[inproc, 64 B, closed]");
        conduit.close();
        assertThat(conduit).hasToString("Conduit[[lo, inproc], closed]");
    }
}
