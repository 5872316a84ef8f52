package dev.conduit.plugin.verbs;

import dev.conduit.linux.Errno;
import dev.conduit.linux.ErrnoException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * {@link FfmVerbs}' closes when the call fails, against the stand-in libibverbs of
 * {@link AsyncEventBindingTest} ({@code verbs_async_shim.c}), whose closes fail with the errno the
 * test sets: a failed {@code ibv_destroy_qp}, {@code ibv_dereg_mr}, {@code ibv_destroy_cq},
 * {@code ibv_destroy_comp_channel}, {@code ibv_dealloc_pd} or {@code ibv_close_device} leaves its
 * object on the device, so the Java side must stay open and usable, and a later close must call
 * the library again rather than return as if it had been closed.
 */
class FfmVerbsCloseTest {

    @Test
    @SuppressWarnings("restricted") // the test module is granted native access, as the plugin is
    void aCloseThatFailedLeavesItsObjectOpenAndALaterCloseDestroysIt(@TempDir Path directory) throws Throwable {
        Path library = AsyncEventBindingTest.shim(directory);
        SymbolLookup shim = SymbolLookup.libraryLookup(library, Arena.global());
        Linker linker = Linker.nativeLinker();
        MethodHandle failCloses = linker.downcallHandle(shim.find("shim_fail_closes").orElseThrow(), FunctionDescriptor.ofVoid(JAVA_INT));
        MethodHandle closes = linker.downcallHandle(shim.find("shim_closes").orElseThrow(), FunctionDescriptor.of(JAVA_INT));

        try (Arena arena = Arena.ofConfined()) {
            Verbs.Device device = FfmVerbs.load(library.toString()).open("shim0");
            Verbs.ProtectionDomain pd = device.allocateProtectionDomain();
            Verbs.MemoryRegion mr = pd.register(arena.allocate(4096, 4096), 0);
            Verbs.CompletionChannel channel = device.createCompletionChannel();
            Verbs.CompletionQueue cq = device.createCompletionQueue(16, channel);
            Verbs.QueuePair qp = pd.createQueuePair(cq, cq, 4, 4);
            Map<String, Runnable> inTeardownOrder = new LinkedHashMap<>();
            inTeardownOrder.put("queue pair", qp::close);
            inTeardownOrder.put("memory region", mr::close);
            inTeardownOrder.put("completion queue", cq::close);
            inTeardownOrder.put("completion channel", channel::close);
            inTeardownOrder.put("protection domain", pd::close);
            inTeardownOrder.put("device", device::close);

            failCloses.invokeExact(Errno.EBUSY);
            inTeardownOrder.forEach((what, close) -> assertThat(catchThrowable(close::run)).as("closing the %s", what)
                    .isInstanceOf(ErrnoException.class).satisfies(e -> assertThat(((ErrnoException) e).errno()).isEqualTo(Errno.EBUSY)));

            // Still there, so still usable: what posting and polling fill is not freed with a close that destroyed nothing.
            qp.postReceive(1, mr, 0, 64);
            qp.postSend(2, VerbsAbi.IBV_WR_SEND, mr, 64, 64, 0, 0, 0, 0);
            assertThat(cq.poll(new Verbs.Completions(4))).isZero();
            cq.requestNotification();
            assertThat(channel.takeEvent()).isFalse();
            assertThat(device.takeAsyncEvent()).isNull();

            failCloses.invokeExact(0);
            for (Map.Entry<String, Runnable> close : inTeardownOrder.entrySet()) {
                int before = (int) closes.invokeExact();
                close.getValue().run();
                assertThat((int) closes.invokeExact()).as("the %s's second close calls the library again", close.getKey())
                        .isEqualTo(before + 1);
                close.getValue().run();
                assertThat((int) closes.invokeExact()).as("the %s's close once it succeeded does nothing", close.getKey())
                        .isEqualTo(before + 1);
            }
        }
    }
}
