package dev.conduit.it.fault;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.ImportedRegion;
import dev.conduit.Pool;
import dev.conduit.Region;
import dev.conduit.Worker;
import dev.conduit.it.process.OpenResources;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ThreadMode;

import java.io.File;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.module.ModuleReader;
import java.lang.module.ResolvedModule;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.function.Supplier;
import java.util.stream.Stream;

/**
 * A Conduit process that runs out of file descriptors ({@code EMFILE}): run by
 * {@link ResourceExhaustionTest} under a low {@code RLIMIT_NOFILE}. With every descriptor taken,
 * what needs one fails with a Conduit exception; what exists keeps working; once descriptors are
 * free again everything works and the failures left no descriptor behind. Prints
 * {@code key: value} lines. Arguments: the shared directory, the plugin.
 */
public final class DescriptorLimitPeer {

    private DescriptorLimitPeer() {
    }

    public static void main(String[] args) throws Exception {
        Path shared = Path.of(args[0]);
        String plugin = args[1];
        try (Conduit conduit = Conduit.builder().environment(Map.of()).systemProperties(new Properties())
                .sharedDirectory(shared).transports(plugin).build();
             Arena arena = Arena.ofConfined()) {
            Worker receiver = conduit.newWorker(ThreadMode.SINGLE);
            Worker sender = conduit.newWorker(ThreadMode.SINGLE);
            long[] received = {0};
            receiver.onMessage(1, m -> received[0]++);
            Endpoint endpoint = sender.connect(receiver.address());
            Pool pool = conduit.pool(plugin);
            Region region = pool.allocate(64 << 10);
            byte[] handle = region.exportHandle();

            OpenResources before = OpenResources.ofThisProcess();
            Map<Integer, String> descriptorsBefore = OpenResources.descriptorsOfThisProcess();
            loadConduitClasses();
            List<FileChannel> filler = exhaust();
            System.out.println("exhausted: " + filler.size());
            report("new-worker", () -> conduit.newWorker(ThreadMode.SINGLE));
            report("connect", () -> sender.connect(receiver.address()));
            report("allocate", () -> pool.allocate(1 << 20));
            report("import", () -> conduit.importRegion(handle));
            report("survivor-send", () -> {
                endpoint.send(1, arena.allocate(64));
                for (int i = 0; i < 10_000 && received[0] == 0; i++) {
                    sender.progress();
                    receiver.progress();
                }
                return "received " + received[0];
            });
            for (FileChannel channel : filler) channel.close();
            OpenResources after = OpenResources.ofThisProcess();
            List<String> leaked = OpenResources.openedSince(descriptorsBefore);
            System.out.println("descriptors-leaked: " + leaked.size() + " " + leaked);
            System.out.println("mappings-leaked: " + (after.conduitMappings() - before.conduitMappings()));

            report("import-after", () -> {
                try (ImportedRegion imported = conduit.importRegion(handle)) {
                    return imported.segment().byteSize();
                }
            });
            report("new-worker-after", () -> {
                try (Worker w = conduit.newWorker(ThreadMode.SINGLE); Endpoint e = w.connect(receiver.address())) {
                    return "connected";
                }
            });
            region.close();
            endpoint.close();
            sender.close();
            receiver.close();
        }
        try (Stream<Path> s = Files.list(shared)) {
            System.out.println("files-left: " + s.count());
        }
    }

    /**
     * Loads every class of Conduit's modules (and of this test), without initializing them, before
     * descriptors run out. From a jar a class loads through the jar's open descriptor; from a
     * build's class directory (the reactor's module path or class path under {@code mvn test}) it
     * needs a descriptor of its own, so the failures under test were {@code NoClassDefFoundError}s
     * there (of {@code Errno}, {@code MemfdFlags}, {@code ShmTransport$Inbound}, ...) instead of
     * the Conduit exceptions a deployment, which runs from jars, gets.
     */
    private static void loadConduitClasses() throws IOException {
        ClassLoader loader = DescriptorLimitPeer.class.getClassLoader();
        List<String> names = new ArrayList<>();
        for (ResolvedModule module : ModuleLayer.boot().configuration().modules()) {
            if (!module.name().startsWith("dev.conduit")) continue;
            try (ModuleReader reader = module.reference().open(); Stream<String> resources = reader.list()) {
                resources.forEach(names::add);
            }
        }
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            Path root = Path.of(entry);
            if (!Files.isDirectory(root.resolve("dev/conduit"))) continue;
            try (Stream<Path> files = Files.walk(root.resolve("dev/conduit"))) {
                files.forEach(f -> names.add(root.relativize(f).toString()));
            }
        }
        for (String name : names) {
            if (!name.endsWith(".class") || name.endsWith("module-info.class")) continue;
            try {
                Class.forName(name.substring(0, name.length() - ".class".length()).replace('/', '.'), false, loader);
            } catch (ClassNotFoundException | LinkageError e) {
                // A class this loader cannot see (another module's, not read by this one): not on the paths under test.
            }
        }
    }

    /** Opens /dev/null until the process may open no more. */
    private static List<FileChannel> exhaust() throws IOException {
        List<FileChannel> channels = new ArrayList<>();
        try {
            while (true) channels.add(FileChannel.open(Path.of("/dev/null")));
        } catch (IOException e) {
            if (!String.valueOf(e.getMessage()).contains("Too many open files")) throw e;
        }
        return channels;
    }

    private static void report(String step, Supplier<Object> action) {
        try {
            System.out.println(step + ": ok " + action.get());
        } catch (ConduitException e) {
            System.out.println(step + ": " + e.getClass().getSimpleName() + ": " + e.getMessage().replace('\n', ' '));
        } catch (RuntimeException | Error e) {
            System.out.println(step + ": UNEXPECTED " + e);
        }
    }
}
