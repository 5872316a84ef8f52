package dev.conduit.it;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;
import java.io.File;
import java.io.IOException;
import java.lang.module.ResolvedModule;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * An application linked with Conduit into a run-time image by jlink, as README.md's "In a run-time
 * image (jlink)" tells: two processes started from the image's java exchange a message and a
 * region of memfd memory; a plugin directory is read by the image's java too; and an image run
 * without its plugins says to link them in. Run in the module-path execution only: the image is
 * the same whichever way this JVM loads Conduit, and jlink costs seconds.
 */
class RuntimeImageTest {

    /** The application: {@code respond} prints its address, then serves one region's handle; {@code call <address>} sends one. */
    private static final String PING = """
            package org.example.imaged;

            import dev.conduit.*;
            import dev.conduit.spi.ThreadMode;
            import java.lang.foreign.*;
            import java.util.HexFormat;
            import java.util.concurrent.atomic.AtomicLong;

            public final class Ping {
                public static void main(String[] args) {
                    try (Conduit conduit = Conduit.open(); Worker worker = conduit.newWorker(ThreadMode.SINGLE)) {
                        System.out.println("SELECTED " + conduit.selectedPlugins());
                        long deadline = System.nanoTime() + 60_000_000_000L; // a hang guard only
                        if (args[0].equals("respond")) {
                            AtomicLong read = new AtomicLong(-1);
                            Endpoint[] caller = new Endpoint[1];
                            worker.onMessage(1, m -> {
                                try (ImportedRegion r = conduit.importRegion(m.payloadToArray())) {
                                    read.set(r.segment().get(ValueLayout.JAVA_LONG, 0));
                                }
                                caller[0] = m.replyEndpoint();
                                caller[0].send(2, MemorySegment.NULL);
                            });
                            System.out.println("ADDRESS " + HexFormat.of().formatHex(worker.address().toBytes()));
                            System.out.flush();
                            while ((caller[0] == null || caller[0].pending() > 0) && System.nanoTime() < deadline) worker.progress();
                            System.out.println("READ " + read.get());
                        } else {
                            AtomicLong answers = new AtomicLong();
                            worker.onMessage(2, m -> answers.incrementAndGet());
                            Endpoint e = worker.connect(WorkerAddress.fromBytes(HexFormat.of().parseHex(args[1])));
                            try (Region region = conduit.pool("memfd").allocate(64)) {
                                region.segment().set(ValueLayout.JAVA_LONG, 0, 42);
                                e.send(1, MemorySegment.ofArray(region.exportHandle()));
                                while (answers.get() == 0 && System.nanoTime() < deadline) worker.progress();
                            }
                            System.out.println("ANSWERED " + answers.get() + " over " + e.transport());
                        }
                    }
                }
            }
            """;

    private static final String MAIN = "org.example.imaged/org.example.imaged.Ping";

    @TempDir
    static Path tmp;
    static Path linked;

    @BeforeAll
    static void link() throws Exception {
        assumeTrue(Loading.current() == Loading.MODULE_PATH, "jlinks once, in the module-path execution");
        // The modules this JVM runs: jars of the local repository, or classes directories in the reactor.
        List<String> modulePath = new ArrayList<>();
        for (String module : List.of("dev.conduit", "dev.conduit.spi", "com.github.benmanes.caffeine", "dev.conduit.linux",
                "dev.conduit.shm", "dev.conduit.plugin.memfd", "dev.conduit.plugin.posix")) {
            URI location = ModuleLayer.boot().configuration().findModule(module).map(ResolvedModule::reference)
                    .flatMap(r -> r.location()).orElseThrow(() -> new IllegalStateException(module + " is not in the boot layer"));
            modulePath.add(Path.of(location).toString());
        }
        Path app = compile(tmp.resolve("app"), String.join(File.pathSeparator, modulePath));
        modulePath.add(app.toString());
        String mp = String.join(File.pathSeparator, modulePath);
        linked = tmp.resolve("linked");
        run(List.of(jdkTool("jlink"), "--module-path", mp,
                "--add-modules", "org.example.imaged,dev.conduit.plugin.memfd,dev.conduit.plugin.posix",
                "--add-options=--enable-native-access=dev.conduit.linux", "--strip-debug", "--compress=zip-6", "--no-header-files",
                "--no-man-pages", "--output", linked.toString()), Map.of());
    }

    @Test
    void twoProcessesOfTheImageExchangeAMessageAndARegionWithoutNativeAccessWarnings() throws Exception {
        Path shared = Files.createDirectories(tmp.resolve("shared"));
        Path plugins = tmp.resolve("plugins");
        PluginJars.standalonePlugin(tmp.resolve("work"), "imagedplugin", "dir-solo", plugins.resolve("solo.jar"));
        Path out = tmp.resolve("respond.out");
        Path err = tmp.resolve("respond.err");
        ProcessBuilder pb = new ProcessBuilder(java(linked), "-m", MAIN, "respond").redirectOutput(out.toFile()).redirectError(err.toFile());
        environment(pb, Map.of("CONDUIT_SHARED_DIR", shared.toString(), "CONDUIT_PLUGIN_PATH", plugins.toString()));
        Process responder = pb.start();
        try {
            String address = null;
            for (long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60); address == null && responder.isAlive()
                    && System.nanoTime() < deadline; ) {
                address = Files.readAllLines(out).stream().filter(l -> l.startsWith("ADDRESS ")).map(l -> l.substring(8))
                        .findFirst().orElse(null);
                if (address == null) Thread.sleep(50);
            }
            assertThat(address).as("the responder's address; its output %s, its errors %s", Files.readString(out), Files.readString(err))
                    .isNotNull();
            Result call = run(List.of(java(linked), "-m", MAIN, "call", address), Map.of("CONDUIT_SHARED_DIR", shared.toString()));
            assertThat(call.out()).contains("SELECTED [memfd, posix]").contains("ANSWERED 1 over memfd");
            assertThat(responder.waitFor(60, TimeUnit.SECONDS)).as("the responder ended").isTrue();
            String respond = Files.readString(out);
            assertThat(responder.exitValue()).as("the responder's exit; its errors %s", Files.readString(err)).isZero();
            // The plugin directory is read by the image's java: its plugin is found beside the linked ones.
            assertThat(respond).contains("SELECTED [memfd, posix, dir-solo]").contains("READ 42");
            // --add-options gave the image's JVMs native access: no warning about restricted methods.
            assertThat(call.err() + Files.readString(err)).doesNotContain("restricted method");
        } finally {
            responder.destroyForcibly();
        }
    }

    /** The plugins left out by {@code --limit-modules}, as an image linked without them would have none: one jlink, not two. */
    @Test
    void anImageRunWithoutItsPluginsSaysToLinkThemIn() throws Exception {
        Result r = runExpectingFailure(List.of(java(linked), "--limit-modules", "org.example.imaged", "-m", MAIN, "respond"),
                Map.of("CONDUIT_SHARED_DIR", Files.createDirectories(tmp.resolve("shared-none")).toString(),
                        "CONDUIT_VERBS_DEVICE", "mlx5_0"));
        assertThat(r.err()).contains("no Conduit plugin was found: link one (dev.conduit.plugin.memfd, dev.conduit.plugin.posix) "
                + "into this run-time image (jlink --add-modules with the plugin's module");
        // A setting for a plugin not found gives the same remedy (until 2026-12-06 "install that plugin (module path, ...)").
        assertThat(r.err()).contains("unknown environment variable CONDUIT_VERBS_DEVICE is ignored; no plugin found here has the name "
                + "it starts with (found: none), so nothing reads it: leave the setting out, or link that plugin into this run-time "
                + "image (jlink --add-modules");
    }

    private static Path compile(Path work, String modulePath) throws IOException {
        Path source = work.resolve("src/org/example/imaged/Ping.java");
        Files.createDirectories(source.getParent());
        Files.writeString(source, PING);
        Files.writeString(work.resolve("src/module-info.java"), "module org.example.imaged { requires dev.conduit; }");
        Path classes = work.resolve("org.example.imaged");
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        if (javac == null) throw new IllegalStateException("no system Java compiler: run the tests on a JDK");
        DiagnosticCollector<JavaFileObject> diagnostics = new DiagnosticCollector<>();
        try (StandardJavaFileManager fm = javac.getStandardFileManager(diagnostics, null, StandardCharsets.UTF_8)) {
            boolean ok = javac.getTask(null, fm, diagnostics, List.of("--release", "25", "-d", classes.toString(), "--module-path", modulePath),
                    null, fm.getJavaFileObjectsFromPaths(List.of(source, work.resolve("src/module-info.java")))).call();
            if (!ok) throw new IllegalStateException("compiling the application failed: " + diagnostics.getDiagnostics());
        }
        return classes;
    }

    private static String jdkTool(String name) {
        return Path.of(System.getProperty("java.home"), "bin", name).toString();
    }

    private static String java(Path image) {
        return image.resolve("bin/java").toString();
    }

    record Result(int exit, String out, String err) {
    }

    private static Result run(List<String> command, Map<String, String> environment) throws Exception {
        Result r = start(command, environment);
        assertThat(r.exit()).as("%s; its output %s, its errors %s", command, r.out(), r.err()).isZero();
        return r;
    }

    private static Result runExpectingFailure(List<String> command, Map<String, String> environment) throws Exception {
        Result r = start(command, environment);
        assertThat(r.exit()).as("%s; its output %s, its errors %s", command, r.out(), r.err()).isNotZero();
        return r;
    }

    private static Result start(List<String> command, Map<String, String> environment) throws Exception {
        Path out = Files.createTempFile(tmp, "out", ".txt");
        Path err = Files.createTempFile(tmp, "err", ".txt");
        ProcessBuilder pb = new ProcessBuilder(command).redirectOutput(out.toFile()).redirectError(err.toFile());
        environment(pb, environment);
        Process p = pb.start();
        try {
            assertThat(p.waitFor(120, TimeUnit.SECONDS)).as("%s ended (a hang guard)", command).isTrue();
            return new Result(p.exitValue(), Files.readString(out), Files.readString(err));
        } finally {
            p.destroyForcibly();
        }
    }

    /** This JVM's environment without its Conduit settings, which would otherwise reach the image's JVMs, plus {@code extra}. */
    private static void environment(ProcessBuilder pb, Map<String, String> extra) {
        pb.environment().keySet().removeIf(k -> k.startsWith("CONDUIT_"));
        pb.environment().putAll(extra);
    }
}
