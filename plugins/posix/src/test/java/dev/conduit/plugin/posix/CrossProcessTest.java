package dev.conduit.plugin.posix;

import dev.conduit.linux.Linux;
import dev.conduit.spi.Chunk;
import dev.conduit.spi.ChunkMapping;
import dev.conduit.spi.IpcImporter;
import dev.conduit.spi.MemoryProvider;
import dev.conduit.spi.PayloadReader;
import dev.conduit.tck.TestContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static java.lang.foreign.ValueLayout.JAVA_LONG;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assumptions.assumeThat;

/** A second JVM as producer or consumer: what integration tests do at scale, here for this plugin alone. */
class CrossProcessTest {

    private static final long CHILD_TIMEOUT_SECONDS = 120; // a hung child fails the test instead of hanging the build

    @TempDir(factory = ShmTempDirFactory.class)
    Path shared;

    private final PosixPlugin plugin = new PosixPlugin();

    @SuppressWarnings("try") // providers only have to be open
    @Test
    void theFilesOfAKilledProducerAreReclaimedByTheNextProvider() throws Exception {
        Process child = start("produce", shared.toString());
        IpcImporter importer = plugin.ipcImporter(TestContext.of(shared));
        byte[] payload;
        long length;
        try {
            String[] export = readLine(child).split(" ");
            payload = HexFormat.of().parseHex(export[0]);
            length = Long.parseLong(export[1]);
            try (ChunkMapping mapping = importer.map(reader(payload), length)) {
                assertThat(mapping.segment().get(JAVA_LONG, 0)).isEqualTo(1234L);
            }
            assertThat(ProcessResources.files(shared)).hasSize(2); // its lease and its chunk
        } finally {
            child.destroyForcibly(); // SIGKILL: no close, no shutdown hook; the kernel drops its flock
            finish(child);
        }
        assertThat(ProcessResources.files(shared)).hasSize(2);

        try (MemoryProvider next = plugin.openMemoryProvider(TestContext.of(shared))) {
            assertThat(ProcessResources.files(shared)).singleElement().asString().endsWith(".lease");
            assertThatThrownBy(() -> importer.map(reader(payload), length))
                    .hasMessageStartingWith("export gone: ")
                    .hasMessageContaining("freed the chunk or died");
        }
        assertThat(ProcessResources.files(shared)).isEmpty();
    }

    /**
     * A sender killed with its connection kept (no CLOSE, no close of anything; the kernel drops
     * its lock): its messages, small and large, name one key, for which the receiver gives the
     * address the sender printed; once a liveness check finds it dead and its messages read, the
     * sink is told once, and the key has no address from then on.
     */
    @Test
    void aKilledSendersConnectionIsToldClosedOnceAndItsAddressIsGone() throws Exception {
        List<Long> keys = new ArrayList<>();
        List<Long> closed = new ArrayList<>();
        dev.conduit.spi.MessageSink sink = new dev.conduit.spi.MessageSink() {
            @Override
            public void onMessage(int id, java.lang.foreign.MemorySegment headerBuffer, long headerOffset, int headerLength,
                                  java.lang.foreign.MemorySegment payloadBuffer, long payloadOffset, long payloadLength) {
                throw new AssertionError("message " + id + " delivered without its sender's key");
            }

            @Override
            public void onMessage(int id, java.lang.foreign.MemorySegment headerBuffer, long headerOffset, int headerLength,
                                  java.lang.foreign.MemorySegment payloadBuffer, long payloadOffset, long payloadLength, long sender) {
                keys.add(sender);
            }

            @Override
            public void onSenderClosed(long sender) {
                closed.add(sender);
            }
        };
        try (dev.conduit.spi.Transport receiver = plugin.openTransport(TestContext.of(shared, "posix.liveness.interval", "1ms")
                .forTransport(dev.conduit.spi.ThreadMode.SINGLE, sink))) {
            Process child = start("send", shared.toString(), HexFormat.of().formatHex(receiver.address()));
            byte[] senderAddress;
            try {
                senderAddress = HexFormat.of().parseHex(readLine(child));
                for (int i = 0; i < 1_000_000 && keys.size() < 2; i++) progressOrPause(receiver);
                assertThat(keys).as("messages 1 and 2").hasSize(2);
                assertThat(keys.get(1)).isEqualTo(keys.getFirst());
                assertThat(receiver.senderAddress(keys.getFirst())).isEqualTo(senderAddress);
                assertThat(closed).as("while the sender lives").isEmpty();
            } finally {
                child.destroyForcibly(); // SIGKILL: no CLOSE, no close; the kernel drops its flock
                finish(child);
            }
            for (int i = 0; i < 1_000_000 && closed.isEmpty(); i++) progressOrPause(receiver);
            assertThat(closed).containsExactly(keys.getFirst());
            assertThat(receiver.senderAddress(keys.getFirst())).isNull();
            for (int i = 0; i < 1000; i++) progressOrPause(receiver);
            assertThat(closed).as("told once").hasSize(1);
        }
    }

    private static void progressOrPause(dev.conduit.spi.Transport receiver) {
        if (receiver.progress() == 0) java.util.concurrent.locks.LockSupport.parkNanos(50_000);
    }

    /**
     * An importer in a user namespace (a rootless container, here root mapped to itself) sees a
     * file of a user its namespace does not map as the overflow uid, 65534, which stands for every
     * unmapped user: the refusal says so, and does not advise trusting 65534.
     */
    @Test
    void aFileOfAUserTheImportersUserNamespaceDoesNotMapIsRefusedWithoutAdvisingToTrustTheOverflowUid() throws Exception {
        assumeThat(Linux.libc().getuid()).as("root can give files away").isZero();
        try (MemoryProvider provider = plugin.openMemoryProvider(TestContext.of(shared))) {
            Chunk chunk = provider.allocate(provider.pageSize());
            byte[] payload = provider.export(chunk);
            Path file = shared.resolve(PosixImporterTest.fileName(payload));
            Files.setAttribute(file, "unix:uid", 4321);
            try {
                // 0600: the namespace's root may not open it (it has no capability over users the namespace does not map).
                assertThat(importInUserNamespace(payload, provider.pageSize()))
                        .contains("shows as uid 65534, which in this process's user namespace stands for every user the namespace "
                                + "does not map").contains("run the producer as a user this namespace maps")
                        .doesNotContain("run producer and consumer as the same user");
                // Readable by all: it opens, and its owner is refused whatever the trusted uids say.
                Files.setPosixFilePermissions(file, java.nio.file.attribute.PosixFilePermissions.fromString("rw-rw-rw-"));
                assertThat(importInUserNamespace(payload, provider.pageSize()))
                        .contains("shows as uid 65534, which in this process's user namespace stands for every user the namespace "
                                + "does not map").contains("Trusting 65534 here would trust all of them").doesNotContain("add the uid to");
            } finally {
                Files.setAttribute(file, "unix:uid", 0); // the provider's close removes it
            }
        }
    }

    /** What a child importing {@code payload} as root of a new user namespace (mapped to root) printed to stderr; it must fail. */
    private String importInUserNamespace(byte[] payload, long length) throws Exception {
        Process child = start(List.of("unshare", "--user", "--map-root-user", "--"),
                "import", shared.toString(), HexFormat.of().formatHex(payload), Long.toString(length));
        String errors;
        try {
            child.getOutputStream().close();
            errors = new String(child.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        } finally {
            finish(child);
        }
        assertThat(child.exitValue()).as(errors).isNotZero();
        return errors;
    }

    /** A JVM on this test's module path, with this module's test classes patched in, running {@link PosixChild}. */
    private static Process start(String... args) throws Exception {
        return start(List.of(), args);
    }

    /** As {@link #start(String...)}, through {@code wrapper} (a command that runs the rest of its arguments). */
    private static Process start(List<String> wrapper, String... args) throws Exception {
        Path testClasses = Path.of(PosixChild.class.getResource("PosixChild.class").toURI()).getParent().getParent().getParent()
                .getParent().getParent();
        List<String> command = new ArrayList<>(wrapper);
        command.addAll(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=dev.conduit.linux", "--illegal-native-access=deny",
                "--module-path", System.getProperty("jdk.module.path"),
                "--patch-module", "dev.conduit.plugin.posix=" + testClasses,
                "-cp", TestContext.location().toString(), "--add-reads", "dev.conduit.plugin.posix=ALL-UNNAMED",
                "-m", "dev.conduit.plugin.posix/" + PosixChild.class.getName()));
        command.addAll(List.of(args));
        return new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.PIPE).start();
    }

    private static String readLine(Process child) throws IOException {
        BufferedReader out = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
        String line = out.readLine();
        if (line == null) {
            throw new IllegalStateException("the child printed nothing: " + errors(child));
        }
        return line;
    }

    private static String errors(Process child) {
        try {
            child.waitFor(CHILD_TIMEOUT_SECONDS, TimeUnit.SECONDS);
            return new String(child.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException | InterruptedException e) {
            return "(stderr unreadable: " + e + ")";
        }
    }

    /** Waits for the child to exit and closes the pipes to it, so that no descriptor of it outlives the test. */
    private static void finish(Process child) throws Exception {
        assertThat(child.waitFor(CHILD_TIMEOUT_SECONDS, TimeUnit.SECONDS)).as("child exited").isTrue();
        child.getOutputStream().close();
        child.getInputStream().close();
        child.getErrorStream().close();
    }

    private static PayloadReader reader(byte[] payload) {
        return new PayloadReader(payload, 0, payload.length, "payload.");
    }
}
