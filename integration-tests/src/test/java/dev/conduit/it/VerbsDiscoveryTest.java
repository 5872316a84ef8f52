package dev.conduit.it;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.PluginInfo;
import dev.conduit.Worker;
import dev.conduit.it.ipc.ShmDir;
import dev.conduit.spi.Capability;
import dev.conduit.spi.ThreadMode;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The verbs plugin as an application meets it, on the module path and on the class path: found by
 * {@link java.util.ServiceLoader}, granted native access by the same flags as the Linux layer, and
 * unavailable with its probe's reason on a machine without RDMA, while the shared-memory plugins
 * stay selected and carry messages.
 */
class VerbsDiscoveryTest {

    private static PluginInfo verbs(Conduit conduit) {
        return conduit.plugins().stream().filter(p -> p.name().equals("verbs")).findFirst()
                .orElseThrow(() -> new AssertionError("no verbs plugin in " + conduit.plugins()));
    }

    @Test
    void aMissingLibraryMakesVerbsUnavailableAndLeavesTheOtherPluginsWorking(@TempDir(factory = ShmDir.class) Path shared) {
        try (Conduit conduit = Loading.isolatedBuilder().sharedDirectory(shared)
                .set("verbs.library", "libibverbs-conduit-missing.so.1").build()) {
            PluginInfo verbs = verbs(conduit);
            assertThat(verbs.status()).isEqualTo(PluginInfo.Status.UNAVAILABLE);
            assertThat(verbs.reason()).startsWith("libibverbs-conduit-missing.so.1 not found (dlopen: ");
            assertThat(verbs.details()).containsEntry("library", "libibverbs-conduit-missing.so.1");
            assertThat(conduit.selectedPlugins()).contains("memfd", "posix").doesNotContain("verbs");

            AtomicReference<String> received = new AtomicReference<>();
            try (Worker a = conduit.newWorker(ThreadMode.SINGLE); Worker b = conduit.newWorker(ThreadMode.SINGLE);
                 Arena arena = Arena.ofConfined()) {
                b.onMessage(1, message -> received.set(new String(message.payload().toArray(ValueLayout.JAVA_BYTE), StandardCharsets.UTF_8)));
                Endpoint endpoint = a.connect(b.address());
                assertThat(endpoint.transport()).isNotEqualTo("verbs");
                MemorySegment payload = arena.allocateFrom("still here", StandardCharsets.UTF_8);
                endpoint.send(1, payload.asSlice(0, payload.byteSize() - 1));
                for (int i = 0; i < 1_000_000 && received.get() == null; i++) {
                    a.progress();
                    b.progress();
                }
            }
            assertThat(received.get()).isEqualTo("still here");
        }
    }

    @Test
    void theRealLibraryIsProbedWithNativeAccessGrantedAndNeverBreaksDiscovery(@TempDir(factory = ShmDir.class) Path shared) {
        try (Conduit conduit = Loading.isolatedBuilder().sharedDirectory(shared).build()) {
            PluginInfo verbs = verbs(conduit);
            assertThat(verbs.reason()).doesNotContain("native access");
            assertThat(verbs.capabilities()).containsExactlyInAnyOrder(Capability.MEMORY, Capability.AM, Capability.RMA,
                    Capability.ATOMICS, Capability.WAKEUP, Capability.CROSS_HOST);
            if (verbs.status() == PluginInfo.Status.UNAVAILABLE) {
                // No RDMA device (these machines: the kernel has no verbs, ENOSYS), or no libibverbs at all.
                assertThat(verbs.reason()).containsAnyOf("no RDMA devices", "no active RDMA port", "no usable RDMA device", "not found");
            } else {
                assertThat(verbs.details()).containsKey("devices");
            }
            assertThat(conduit.selectedPlugins()).contains("memfd", "posix");
        }
    }
}
