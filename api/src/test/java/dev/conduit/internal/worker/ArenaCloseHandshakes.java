package dev.conduit.internal.worker;

import javax.management.ObjectName;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * Counts the handshakes by which the JVM closes shared arenas ({@code "CloseScopedMemory"}: each
 * stops every Java thread), while a block runs. The JVM's handshake log ({@code -Xlog:handshake},
 * at info) is switched on into a file for the block through the {@code DiagnosticCommand} MBean
 * ({@code jcmd VM.log}), and off after. Every thread's closes count: assert fewer than the block
 * would make with one close per operation, never exactly none.
 */
final class ArenaCloseHandshakes {

    private ArenaCloseHandshakes() {
    }

    interface Block {
        void run() throws Exception;
    }

    static long during(Block block) throws Exception {
        // A directory of its own: the JVM's log output archives a file it finds at its path as <path>.0 (a rotation),
        // which a lone temporary file left behind in /tmp after every run.
        Path directory = Files.createTempDirectory("conduit-handshakes");
        Path log = directory.resolve("handshakes.log");
        try {
            vmLog("output=" + log, "what=handshake=info");
            try {
                block.run();
            } finally {
                vmLog("output=" + log, "what=all=off");
            }
            try (var lines = Files.lines(log)) {
                return lines.filter(line -> line.contains("\"CloseScopedMemory\"")).count();
            }
        } finally {
            try (var files = Files.list(directory)) {
                for (Path file : files.toList()) Files.delete(file);
            }
            Files.delete(directory);
        }
    }

    private static void vmLog(String... arguments) throws Exception {
        ManagementFactory.getPlatformMBeanServer().invoke(new ObjectName("com.sun.management:type=DiagnosticCommand"), "vmLog",
                new Object[]{arguments}, new String[]{String[].class.getName()});
    }
}
