package dev.conduit.plugin.verbs;

import dev.conduit.linux.OpenFlags;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_INT;
import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * {@link FfmVerbs}' reading of the asynchronous events, checked by C: {@code verbs_async_shim.c},
 * compiled against the installed {@code <infiniband/verbs.h>}, stands in for libibverbs (every
 * function the plugin binds) and fills {@code struct ibv_async_event} as rdma-core's
 * {@code ibv_get_async_event} does, from a pipe that is the context's {@code async_fd}. It checks
 * that the descriptor is made non-blocking at open (so that no event reads {@code EAGAIN}, not a
 * sleep), that the element is read for each kind of event and matched to the queue pair or
 * completion queue the device created, and that every event taken is acknowledged with the struct
 * it was read into. It says nothing about a real libibverbs, provider or adapter.
 */
class AsyncEventBindingTest {

    private static final Path GCC = Path.of("/usr/bin/gcc");
    private static final Path HEADER = Path.of("/usr/include/infiniband/verbs.h");

    @Test
    @SuppressWarnings("restricted") // the test module is granted native access, as the plugin is
    void eventsAreReadWithoutWaitingMatchedToTheirObjectsAndAcknowledged(@TempDir Path directory) throws Throwable {
        Path library = shim(directory);
        SymbolLookup shim = SymbolLookup.libraryLookup(library, Arena.global());
        Linker linker = Linker.nativeLinker();
        MethodHandle raise = linker.downcallHandle(shim.find("shim_raise").orElseThrow(), FunctionDescriptor.ofVoid(JAVA_LONG, JAVA_INT));
        MethodHandle flags = linker.downcallHandle(shim.find("shim_async_fd_flags").orElseThrow(), FunctionDescriptor.of(JAVA_INT));
        MethodHandle acknowledged = linker.downcallHandle(shim.find("shim_acknowledged").orElseThrow(), FunctionDescriptor.of(JAVA_INT));
        MethodHandle lastType = linker.downcallHandle(shim.find("shim_last_acknowledged_type").orElseThrow(), FunctionDescriptor.of(JAVA_INT));
        MethodHandle lastElement = linker.downcallHandle(shim.find("shim_last_acknowledged_element").orElseThrow(),
                FunctionDescriptor.of(ADDRESS));
        long qpAddress = ((MemorySegment) linker.downcallHandle(shim.find("shim_qp").orElseThrow(), FunctionDescriptor.of(ADDRESS))
                .invokeExact()).address();
        long cqAddress = ((MemorySegment) linker.downcallHandle(shim.find("shim_cq").orElseThrow(), FunctionDescriptor.of(ADDRESS))
                .invokeExact()).address();

        FfmVerbs verbs = FfmVerbs.load(library.toString());
        try (Verbs.Device device = verbs.open("shim0")) {
            assertThat((int) flags.invokeExact() & OpenFlags.O_NONBLOCK).as("async_fd is O_NONBLOCK once the device is open").isNotZero();
            assertThat(device.takeAsyncEvent()).as("no event: EAGAIN, not a wait").isNull();
            Verbs.ProtectionDomain pd = device.allocateProtectionDomain();
            Verbs.CompletionQueue cq = device.createCompletionQueue(16, null);
            Verbs.QueuePair qp = pd.createQueuePair(cq, cq, 4, 4);

            raise.invokeExact(qpAddress, VerbsAbi.IBV_EVENT_QP_FATAL);
            Verbs.AsyncEvent event = device.takeAsyncEvent();
            assertThat(event.type()).isEqualTo(VerbsAbi.IBV_EVENT_QP_FATAL);
            assertThat(event.queuePair()).as("the queue pair the device created at that address").isSameAs(qp);
            assertThat((int) acknowledged.invokeExact()).isEqualTo(1);
            assertThat((int) lastType.invokeExact()).isEqualTo(VerbsAbi.IBV_EVENT_QP_FATAL);
            assertThat(((MemorySegment) lastElement.invokeExact()).address()).as("acknowledged with the element it was read with")
                    .isEqualTo(qpAddress);

            raise.invokeExact(cqAddress, VerbsAbi.IBV_EVENT_CQ_ERR);
            raise.invokeExact(1L, VerbsAbi.IBV_EVENT_PORT_ERR);
            raise.invokeExact(0L, VerbsAbi.IBV_EVENT_DEVICE_FATAL);
            event = device.takeAsyncEvent();
            assertThat(event.type()).isEqualTo(VerbsAbi.IBV_EVENT_CQ_ERR);
            assertThat(event.completionQueue()).isSameAs(cq);
            event = device.takeAsyncEvent();
            assertThat(event.type()).isEqualTo(VerbsAbi.IBV_EVENT_PORT_ERR);
            assertThat(event.port()).isEqualTo(1);
            assertThat(event.queuePair()).isNull();
            assertThat(device.takeAsyncEvent().type()).isEqualTo(VerbsAbi.IBV_EVENT_DEVICE_FATAL);
            assertThat(device.takeAsyncEvent()).isNull();
            assertThat((int) acknowledged.invokeExact()).as("every event taken is acknowledged").isEqualTo(4);

            qp.close(); // the shim's ibv_destroy_qp returns EBUSY while an event is reported and not acknowledged
            raise.invokeExact(qpAddress, VerbsAbi.IBV_EVENT_COMM_EST);
            assertThat(device.takeAsyncEvent().queuePair()).as("a queue pair destroyed is no longer matched").isNull();
            cq.close();
            pd.close();
        }
    }

    /**
     * Queue pairs and completion queues of one context are created and destroyed on the progress
     * threads of its workers. Once {@code ibv_destroy_qp} returns on one thread, the allocator may
     * give its address to an {@code ibv_create_qp} on another, which registers the new queue pair at
     * that address before the first thread unregisters the old one: unregistering by address alone
     * removed the new queue pair, whose events then named no queue pair and failed nothing. The shim
     * returns one address for every queue pair and queue, so creating the second before closing the
     * first leaves the registry as that interleaving does.
     */
    @Test
    void aQueuePairOrQueueDestroyedAfterItsAddressWasReusedLeavesTheNewOneMatched(@TempDir Path directory) throws Throwable {
        Path library = shim(directory);
        SymbolLookup shim = SymbolLookup.libraryLookup(library, Arena.global());
        Linker linker = Linker.nativeLinker();
        MethodHandle raise = linker.downcallHandle(shim.find("shim_raise").orElseThrow(), FunctionDescriptor.ofVoid(JAVA_LONG, JAVA_INT));
        long qpAddress = ((MemorySegment) linker.downcallHandle(shim.find("shim_qp").orElseThrow(), FunctionDescriptor.of(ADDRESS))
                .invokeExact()).address();
        long cqAddress = ((MemorySegment) linker.downcallHandle(shim.find("shim_cq").orElseThrow(), FunctionDescriptor.of(ADDRESS))
                .invokeExact()).address();

        try (Verbs.Device device = FfmVerbs.load(library.toString()).open("shim0")) {
            Verbs.ProtectionDomain pd = device.allocateProtectionDomain();
            Verbs.CompletionQueue oldCq = device.createCompletionQueue(16, null);
            Verbs.QueuePair oldQp = pd.createQueuePair(oldCq, oldCq, 4, 4);
            Verbs.CompletionQueue newCq = device.createCompletionQueue(16, null);
            Verbs.QueuePair newQp = pd.createQueuePair(newCq, newCq, 4, 4);
            oldQp.close();
            oldCq.close();

            raise.invokeExact(qpAddress, VerbsAbi.IBV_EVENT_QP_FATAL);
            assertThat(device.takeAsyncEvent().queuePair()).as("the queue pair now at the address").isSameAs(newQp);
            raise.invokeExact(cqAddress, VerbsAbi.IBV_EVENT_CQ_ERR);
            assertThat(device.takeAsyncEvent().completionQueue()).as("the queue now at the address").isSameAs(newCq);
            newQp.close();
            newCq.close();
            pd.close();
        }
    }

    /** The stand-in libibverbs, compiled into {@code directory} (the test is skipped without gcc or the header); {@link FfmVerbsCloseTest} uses it too. */
    static Path shim(Path directory) throws IOException, InterruptedException {
        assumeTrue(Files.isExecutable(GCC), "gcc is not installed at " + GCC);
        assumeTrue(Files.isRegularFile(HEADER), HEADER + " is missing: install libibverbs-dev");
        Path source = directory.resolve("verbs_async_shim.c");
        try (InputStream in = AsyncEventBindingTest.class.getResourceAsStream("verbs_async_shim.c")) {
            Files.copy(in, source);
        }
        Path library = directory.resolve("libverbs_async_shim.so");
        compile(source, library);
        return library;
    }

    private static void compile(Path source, Path library) throws IOException, InterruptedException {
        Process gcc = new ProcessBuilder(GCC.toString(), "-std=gnu11", "-Wall", "-Werror", "-shared", "-fPIC", "-o", library.toString(),
                source.toString()).redirectErrorStream(true).start();
        String output = new String(gcc.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(gcc.waitFor(2, TimeUnit.MINUTES)).isTrue();
        assertThat(gcc.exitValue()).as(output).isZero();
    }
}
