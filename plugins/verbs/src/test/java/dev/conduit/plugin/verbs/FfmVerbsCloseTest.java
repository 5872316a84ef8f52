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
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.assertj.core.api.Assertions.fail;

/**
 * {@link FfmVerbs}' closes when the call fails, against the stand-in libibverbs of
 * {@link AsyncEventBindingTest} ({@code verbs_async_shim.c}), whose closes fail with the errno the
 * test sets: a failed {@code ibv_destroy_qp}, {@code ibv_dereg_mr}, {@code ibv_destroy_cq},
 * {@code ibv_destroy_comp_channel}, {@code ibv_dealloc_pd} or {@code ibv_close_device} leaves its
 * object on the device, so a later close must call the library again rather than return as if it
 * had been closed; and a close on one thread waits for a call of the data path under way on
 * another, which would otherwise go on in what the destroy freed.
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
            Verbs.MemoryRegion mr = pd.register(arena.allocate(4096, 4096), 0, "register less");
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

            // Still there, but refusing the data path from the close on: nothing is posted to or polled of an object being
            // closed (aCloseWaitsForACallOfTheDataPathUnderWayAndRefusesLaterOnes), and the refusal reaches no library call.
            for (Runnable call : new Runnable[] {() -> qp.postReceive(1, mr, 0, 64),
                    () -> qp.postSend(2, VerbsAbi.IBV_WR_SEND, mr, 64, 64, 0, 0, 0, 0), () -> cq.poll(new Verbs.Completions(4)),
                    cq::requestNotification, channel::takeEvent}) {
                assertThat(catchThrowable(call::run)).isInstanceOf(IllegalStateException.class).hasMessageContaining("is closed");
            }
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

    /**
     * A close on one thread while another is inside a call of the data path on the same object: the
     * runtime lets that happen when {@code Conduit.close()} closes a worker whose user is still
     * inside a call (a {@code flush} or {@code get} polling for a slow peer's completion) a second
     * after asking it to close. {@code ibv_destroy_qp}, {@code ibv_destroy_cq} and
     * {@code ibv_destroy_comp_channel} free what the call is using, so the close must wait for it,
     * and a call after the close must be refused before it reaches the library. The shim holds the
     * call inside until the close has come and either destroyed the object (as it did: the JVM
     * crashes there on a real library) or is waiting. The same holds for what a {@code connect} on
     * the user's thread creates as the worker closes under it: a registration or queue pair in a
     * protection domain that the close of the context's last user deallocates, and a queue pair on
     * a completion queue the worker's close destroys (until 2026-12-07 neither close waited, and the
     * create went on with a freed {@code struct ibv_pd} or {@code struct ibv_cq}).
     */
    @Test
    @SuppressWarnings("restricted") // the test module is granted native access, as the plugin is
    void aCloseWaitsForACallOfTheDataPathUnderWayAndRefusesLaterOnes(@TempDir Path directory) throws Throwable {
        Path library = AsyncEventBindingTest.shim(directory);
        SymbolLookup shim = SymbolLookup.libraryLookup(library, Arena.global());
        Linker linker = Linker.nativeLinker();
        MethodHandle hold = linker.downcallHandle(shim.find("shim_hold_calls").orElseThrow(), FunctionDescriptor.ofVoid(JAVA_INT));
        MethodHandle inFlight = linker.downcallHandle(shim.find("shim_calls_in_flight").orElseThrow(), FunctionDescriptor.of(JAVA_INT));
        MethodHandle destroyedUnder = linker.downcallHandle(shim.find("shim_destroyed_under_a_call").orElseThrow(),
                FunctionDescriptor.of(JAVA_INT));

        Shim calls = new Shim(hold, inFlight, destroyedUnder);
        try (Arena arena = Arena.ofConfined(); Verbs.Device device = FfmVerbs.load(library.toString()).open("shim0")) {
            Verbs.ProtectionDomain pd = device.allocateProtectionDomain();
            Verbs.MemoryRegion mr = pd.register(arena.allocate(4096, 4096), 0, "register less");
            Verbs.CompletionQueue cq = device.createCompletionQueue(16, null);
            Verbs.CompletionQueue polled = device.createCompletionQueue(16, null);
            calls.closeDuring("a poll of its completion queue", polled, () -> polled.poll(new Verbs.Completions(4)));
            Verbs.QueuePair sending = pd.createQueuePair(cq, cq, 4, 4);
            calls.closeDuring("a send posted on its queue pair", sending,
                    () -> sending.postSend(1, VerbsAbi.IBV_WR_SEND, mr, 0, 64, 0, 0, 0, 0));
            Verbs.QueuePair receiving = pd.createQueuePair(cq, cq, 4, 4);
            calls.closeDuring("a receive posted on its queue pair", receiving, () -> receiving.postReceive(1, mr, 0, 64));
            Verbs.CompletionChannel channel = device.createCompletionChannel();
            calls.closeDuring("an event taken of its completion channel", channel, channel::takeEvent);
            Verbs.ProtectionDomain registering = device.allocateProtectionDomain();
            java.lang.foreign.MemorySegment memory = Arena.ofAuto().allocate(4096, 4096); // registered on the caller's thread
            calls.closeDuring("a registration in its protection domain", registering, () -> registering.register(memory, 0, "register less"));
            Verbs.ProtectionDomain creating = device.allocateProtectionDomain();
            calls.closeDuring("a queue pair created in its protection domain", creating, () -> creating.createQueuePair(cq, cq, 4, 4));
            Verbs.CompletionQueue completing = device.createCompletionQueue(16, null);
            calls.closeDuring("a queue pair created on its completion queue", completing,
                    () -> pd.createQueuePair(completing, completing, 4, 4));
            cq.close();
            mr.close();
            pd.close();
        }
    }

    /** The shim's hold on the data path, and its count of objects destroyed under a call. */
    private record Shim(MethodHandle hold, MethodHandle inFlight, MethodHandle destroyedUnder) {

        /** Closes {@code object} on one thread while {@code call} on another is held inside the library. */
        void closeDuring(String what, AutoCloseable object, Runnable call) throws Throwable {
            hold.invokeExact(1);
            AtomicReference<Throwable> callFailed = new AtomicReference<>();
            Thread caller = Thread.ofPlatform().start(() -> {
                try {
                    call.run();
                } catch (Throwable t) {
                    callFailed.set(t);
                }
            });
            awaitOrFail(() -> callsInFlight() == 1, what + " inside the library");
            AtomicReference<Throwable> closeFailed = new AtomicReference<>();
            Thread closer = Thread.ofPlatform().start(() -> {
                try {
                    object.close();
                } catch (Throwable t) {
                    closeFailed.set(t);
                }
            });
            // Either it destroyed the object under the call (and returned), or it waits for the call.
            awaitOrFail(() -> !closer.isAlive() || closer.getState() == Thread.State.WAITING
                    || closer.getState() == Thread.State.TIMED_WAITING || closer.getState() == Thread.State.BLOCKED,
                    "the close to destroy or to wait");
            hold.invokeExact(0);
            caller.join(TimeUnit.MINUTES.toMillis(1));
            closer.join(TimeUnit.MINUTES.toMillis(1));
            assertThat(callFailed.get()).as("%s under way as the close came", what).isNull();
            assertThat(closeFailed.get()).as("the close during %s", what).isNull();
            assertThat((int) destroyedUnder.invokeExact()).as("destroyed while %s was inside the library", what).isZero();
            assertThat(catchThrowable(call::run)).as("%s after the close", what).isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("is closed");
        }

        private int callsInFlight() {
            try {
                return (int) inFlight.invokeExact();
            } catch (Throwable t) {
                throw new AssertionError(t);
            }
        }
    }

    /** Waits until {@code condition} holds; fails after a minute (a hang guard, not a measure). */
    private static void awaitOrFail(BooleanSupplier condition, String what) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(1);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                fail("waited a minute for " + what);
            }
            Thread.sleep(1);
        }
    }
}
