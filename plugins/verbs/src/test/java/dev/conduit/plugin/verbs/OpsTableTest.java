package dev.conduit.plugin.verbs;

import dev.conduit.linux.Errno;
import dev.conduit.linux.ErrnoException;
import org.junit.jupiter.api.BeforeAll;
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
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The data path's calls through {@code context->ops} ({@code post_send}, {@code post_recv},
 * {@code poll_cq}, {@code req_notify_cq}), checked by C: {@code verbs_ops_shim.c}, compiled against
 * the installed {@code <infiniband/verbs.h>}, stands in for a provider; {@link FfmVerbs} posts and
 * polls through its ops table exactly as on a device, and the shim reports what it read from the
 * work requests and fills completions, all with the header's own field access. This checks the
 * bindings' marshalling without a device; it says nothing about a real provider or adapter.
 */
class OpsTableTest {

    private static final Path GCC = Path.of("/usr/bin/gcc");
    private static final Path HEADER = Path.of("/usr/include/infiniband/verbs.h");

    private static MemorySegment context;
    private static MemorySegment qp;
    private static MemorySegment cq;
    private static MethodHandle record;
    private static MethodHandle failPoll;
    private static MethodHandle failPost;
    private static FfmVerbs verbs;

    @BeforeAll
    @SuppressWarnings("restricted") // the test module is granted native access, as the plugin is
    static void buildTheShim(@TempDir Path directory) throws Throwable {
        assumeTrue(Files.isExecutable(GCC), "gcc is not installed at " + GCC);
        assumeTrue(Files.isRegularFile(HEADER), HEADER + " is missing: install libibverbs-dev");
        Path source = directory.resolve("verbs_ops_shim.c");
        try (InputStream in = OpsTableTest.class.getResourceAsStream("verbs_ops_shim.c")) {
            Files.copy(in, source);
        }
        Path library = directory.resolve("libverbs_ops_shim.so");
        Process gcc = new ProcessBuilder(GCC.toString(), "-std=gnu11", "-Wall", "-Werror", "-shared", "-fPIC", "-o", library.toString(),
                source.toString()).redirectErrorStream(true).start();
        String output = new String(gcc.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(gcc.waitFor(2, TimeUnit.MINUTES)).isTrue();
        assertThat(gcc.exitValue()).as(output).isZero();
        SymbolLookup shim = SymbolLookup.libraryLookup(library, Arena.global());
        Linker linker = Linker.nativeLinker();
        context = (MemorySegment) linker.downcallHandle(shim.find("shim_context").orElseThrow(), FunctionDescriptor.of(ADDRESS)).invokeExact();
        qp = (MemorySegment) linker.downcallHandle(shim.find("shim_qp").orElseThrow(), FunctionDescriptor.of(ADDRESS)).invokeExact();
        cq = (MemorySegment) linker.downcallHandle(shim.find("shim_cq").orElseThrow(), FunctionDescriptor.of(ADDRESS)).invokeExact();
        record = linker.downcallHandle(shim.find("shim_record").orElseThrow(), FunctionDescriptor.of(ADDRESS));
        failPoll = linker.downcallHandle(shim.find("shim_fail_poll").orElseThrow(), FunctionDescriptor.ofVoid(JAVA_INT, JAVA_INT));
        failPost = linker.downcallHandle(shim.find("shim_fail_post").orElseThrow(), FunctionDescriptor.ofVoid(JAVA_INT, JAVA_INT));
        try {
            verbs = FfmVerbs.load("libibverbs.so.1");
        } catch (FfmVerbs.Unavailable e) {
            assumeTrue(false, "libibverbs.so.1 is not installed: " + e.getMessage());
        }
    }

    @SuppressWarnings("restricted")
    private static String record() throws Throwable {
        return ((MemorySegment) record.invokeExact()).reinterpret(1024).getString(0);
    }

    @Test
    void aSendAnRdmaWriteAndAnAtomicReachTheProviderAsCWouldReadThem() throws Throwable {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment memory = arena.allocate(8192, 4096);
            Verbs.MemoryRegion mr = verbs.registrationOver(memory, 0x77, 0x99);
            Verbs.QueuePair queuePair = verbs.queuePairOver(context, qp);
            assertThat(queuePair.number()).isEqualTo(0x1234);
            long a = memory.address();

            queuePair.postSend(42, VerbsAbi.IBV_WR_SEND, mr, 128, 300, 0, 0, 0, 0);
            assertThat(record()).startsWith("send qp=4660 id=42 opcode=2 flags=2 num_sge=1 next=0 addr=" + (a + 128)
                    + " length=300 lkey=119 ");

            queuePair.postSend(1L << 48 | 7, VerbsAbi.IBV_WR_RDMA_WRITE, mr, 4096, 4096, 0x7F00_1234_5000L, 0xCAFE, 0, 0);
            assertThat(record()).isEqualTo("send qp=4660 id=" + (1L << 48 | 7) + " opcode=0 flags=2 num_sge=1 next=0 addr=" + (a + 4096)
                    + " length=4096 lkey=119 rdma.remote_addr=" + 0x7F00_1234_5000L + " rdma.rkey=51966 atomic.compare_add=51966"
                    + " atomic.swap=0 atomic.rkey=0");

            queuePair.postSend(9, VerbsAbi.IBV_WR_ATOMIC_CMP_AND_SWP, mr, 8, 8, 0x5000, 0xBEEF, -3, 17);
            assertThat(record()).isEqualTo("send qp=4660 id=9 opcode=5 flags=2 num_sge=1 next=0 addr=" + (a + 8)
                    + " length=8 lkey=119 rdma.remote_addr=20480 rdma.rkey=4294967293 atomic.compare_add=-3 atomic.swap=17"
                    + " atomic.rkey=48879");
        }
    }

    @Test
    void aReceiveReachesTheProviderAsCWouldReadIt() throws Throwable {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment memory = arena.allocate(8192, 4096);
            Verbs.MemoryRegion mr = verbs.registrationOver(memory, 0x55, 0);
            verbs.queuePairOver(context, qp).postReceive(5, mr, 4096, 4096);
            assertThat(record()).isEqualTo("recv qp=4660 id=5 num_sge=1 next=0 addr=" + (memory.address() + 4096) + " length=4096 lkey=85");
        }
    }

    @Test
    void completionsFilledByTheProviderAreReadField() throws Throwable {
        Verbs.CompletionQueue queue = verbs.completionQueueOver(context, cq);
        Verbs.Completions completions = new Verbs.Completions(32);
        assertThat(queue.poll(completions)).isEqualTo(2);
        assertThat(record()).isEqualTo("poll cqe=99 num_entries=32");
        assertThat(completions.requestId[0]).isEqualTo(1000);
        assertThat(completions.requestId[1]).isEqualTo(1001);
        assertThat(completions.status[0]).isEqualTo(VerbsAbi.IBV_WC_SUCCESS);
        assertThat(completions.status[1]).isEqualTo(VerbsAbi.IBV_WC_RETRY_EXC_ERR);
        assertThat(completions.opcode[0]).isEqualTo(VerbsAbi.IBV_WC_RECV);
        assertThat(completions.vendorError[1]).isEqualTo(0x52);
        assertThat(completions.byteLength[1]).isEqualTo(78);
        assertThat(completions.queuePair[0]).isEqualTo(0x4321);
        queue.requestNotification();
        assertThat(record()).isEqualTo("notify cqe=99 solicited_only=0");
    }

    /** Providers return a negative code from poll_cq and set no errno: the message named whatever errno an earlier call left (here EAGAIN). */
    @Test
    void aFailedPollReportsTheProvidersReturnValueNotAStaleErrno() throws Throwable {
        Verbs.CompletionQueue queue = verbs.completionQueueOver(context, cq);
        failPoll.invokeExact(-2, dev.conduit.linux.Errno.EAGAIN);
        assertThatThrownBy(() -> queue.poll(new Verbs.Completions(32))).isInstanceOf(dev.conduit.spi.ConduitException.class)
                .hasMessageContaining("ibv_poll_cq(shim cq) returned -2").hasMessageNotContaining("EAGAIN");
        assertThat(queue.poll(new Verbs.Completions(32))).as("the next poll").isEqualTo(2);
    }

    /**
     * post_send, post_recv and req_notify_cq return the errno itself (mlx5: ENOMEM for a full send queue), or its
     * negation, and set none: a message must name the returned code, not what errno held from an earlier call.
     */
    @Test
    void aFailedPostOrNotifyNamesTheErrnoTheProviderReturnedNotAStaleOne() throws Throwable {
        Verbs.QueuePair queuePair = verbs.queuePairOver(context, qp);
        Verbs.CompletionQueue queue = verbs.completionQueueOver(context, cq);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment memory = arena.allocate(8192, 4096);
            Verbs.MemoryRegion mr = verbs.registrationOver(memory, 0x77, 0x99);
            for (int code : new int[] {Errno.ENOMEM, -Errno.ENOMEM}) {
                failPost.invokeExact(code, Errno.EAGAIN);
                assertThat(catchThrowable(() -> queuePair.postSend(1, VerbsAbi.IBV_WR_SEND, mr, 0, 64, 0, 0, 0, 0)))
                        .as("ibv_post_send returning %d", code).isInstanceOf(ErrnoException.class)
                        .satisfies(e -> assertThat(((ErrnoException) e).errno()).isEqualTo(Errno.ENOMEM));
                failPost.invokeExact(code, Errno.EAGAIN);
                assertThat(catchThrowable(() -> queuePair.postReceive(2, mr, 0, 64)))
                        .as("ibv_post_recv returning %d", code).isInstanceOf(ErrnoException.class)
                        .satisfies(e -> assertThat(((ErrnoException) e).errno()).isEqualTo(Errno.ENOMEM));
                failPost.invokeExact(code, Errno.EAGAIN);
                assertThat(catchThrowable(queue::requestNotification))
                        .as("ibv_req_notify_cq returning %d", code).isInstanceOf(ErrnoException.class)
                        .satisfies(e -> assertThat(((ErrnoException) e).errno()).isEqualTo(Errno.ENOMEM));
            }
        }
    }
}
