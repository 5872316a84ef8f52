package dev.conduit.it;

import dev.conduit.spi.ConduitPlugin;

import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.stream.Stream;

/**
 * Builds modular jars at test time with {@link javax.tools.JavaCompiler}: a library, and plugins
 * that use it. Every plugin jar carries both {@code provides} (module path) and
 * {@code META-INF/services} (class path).
 */
final class PluginJars {

    private PluginJars() {
    }

    /** Where {@code dev.conduit.spi} was loaded from (a jar, or a classes directory in the reactor). */
    static Path spiLocation() {
        try {
            return Path.of(ConduitPlugin.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    /** Module {@code testlib}: {@code testlib.Lib.version()} returns {@code version}. */
    static Path testlib(Path work, String version, Path jar) throws IOException {
        return compileJar(work.resolve("testlib-" + version), jar, List.of(), Map.of(
                "module-info.java", "module testlib { exports testlib; }",
                "testlib/Lib.java", """
                        package testlib;
                        public final class Lib {
                            private Lib() {}
                            public static String version() { return "%s"; }
                        }
                        """.formatted(version)), null);
    }

    /**
     * A plugin named {@code pluginName} in module {@code module}, which requires {@code testlib}
     * and reports {@code testlib.Lib.version()} in its description and probe details. Its
     * constructor calls the library, so a missing library fails instantiation on the class path
     * just as it fails resolution on the module path.
     */
    static Path pluginUsingTestlib(Path work, String module, String pluginName, Path testlibJar, Path jar) throws IOException {
        String type = module + ".Plugin";
        return compileJar(work.resolve(module), jar, List.of(testlibJar), Map.of(
                "module-info.java", """
                        module %s {
                            requires dev.conduit.spi;
                            requires testlib;
                            provides dev.conduit.spi.ConduitPlugin with %s;
                        }
                        """.formatted(module, type),
                module + "/Plugin.java", """
                        package %s;

                        import dev.conduit.spi.*;
                        import java.util.*;

                        public final class Plugin implements ConduitPlugin {
                            private final String lib = testlib.Lib.version();

                            public String name() { return "%s"; }
                            public Version version() { return Version.parse("1.0.0"); }
                            public String spiVersion() { return SPI_VERSION; }
                            public String description() { return "%s using testlib " + lib; }
                            public Availability probe(PluginContext context) {
                                Map<String, String> details = new LinkedHashMap<>();
                                details.put("testlib", testlib.Lib.version());
                                details.put("loader", String.valueOf(testlib.Lib.class.getClassLoader()));
                                return Availability.available(details);
                            }
                            public Set<Capability> capabilities() { return Set.of(Capability.MEMORY); }
                            public Set<ThreadMode> threadModes() { return EnumSet.allOf(ThreadMode.class); }
                        }
                        """.formatted(module, pluginName, pluginName)), type);
    }

    /** A plugin with no dependency but the SPI. */
    static Path standalonePlugin(Path work, String module, String pluginName, Path jar) throws IOException {
        String type = module + ".Plugin";
        return compileJar(work.resolve(module), jar, List.of(), Map.of(
                "module-info.java", """
                        module %s {
                            requires dev.conduit.spi;
                            provides dev.conduit.spi.ConduitPlugin with %s;
                        }
                        """.formatted(module, type),
                module + "/Plugin.java", """
                        package %s;

                        import dev.conduit.spi.*;
                        import java.util.*;

                        public final class Plugin implements ConduitPlugin {
                            public String name() { return "%s"; }
                            public Version version() { return Version.parse("1.0.0"); }
                            public String spiVersion() { return SPI_VERSION; }
                            public Availability probe(PluginContext context) { return Availability.available(); }
                            public Set<Capability> capabilities() { return Set.of(Capability.MEMORY); }
                            public Set<ThreadMode> threadModes() { return EnumSet.allOf(ThreadMode.class); }
                        }
                        """.formatted(module, pluginName)), type);
    }

    private static Path compileJar(Path work, Path jar, List<Path> modulePath, Map<String, String> sources, String serviceProvider)
            throws IOException {
        Path src = work.resolve("src");
        Path classes = work.resolve("classes");
        List<Path> files = new ArrayList<>();
        for (var e : sources.entrySet()) {
            Path f = src.resolve(e.getKey());
            Files.createDirectories(f.getParent());
            Files.writeString(f, e.getValue());
            files.add(f);
        }
        Files.createDirectories(classes);

        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        if (javac == null) throw new IllegalStateException("no system Java compiler: run the tests on a JDK");
        List<Path> mp = new ArrayList<>(modulePath);
        mp.add(spiLocation());
        DiagnosticCollector<JavaFileObject> diagnostics = new DiagnosticCollector<>();
        try (StandardJavaFileManager fm = javac.getStandardFileManager(diagnostics, null, StandardCharsets.UTF_8)) {
            List<String> options = List.of("--release", "25", "-d", classes.toString(),
                    "--module-path", String.join(java.io.File.pathSeparator, mp.stream().map(Path::toString).toList()));
            boolean ok = javac.getTask(null, fm, diagnostics, options, null, fm.getJavaFileObjectsFromPaths(files)).call();
            if (!ok) throw new IllegalStateException("compiling " + work + " failed: " + diagnostics.getDiagnostics());
        }

        Files.createDirectories(jar.getParent());
        try (OutputStream out = Files.newOutputStream(jar); JarOutputStream j = new JarOutputStream(out);
             Stream<Path> walk = Files.walk(classes)) {
            for (Path p : walk.filter(Files::isRegularFile).sorted().toList()) {
                j.putNextEntry(new JarEntry(classes.relativize(p).toString().replace('\\', '/')));
                Files.copy(p, j);
                j.closeEntry();
            }
            if (serviceProvider != null) {
                j.putNextEntry(new JarEntry("META-INF/services/" + ConduitPlugin.class.getName()));
                j.write((serviceProvider + "\n").getBytes(StandardCharsets.UTF_8));
                j.closeEntry();
            }
        } catch (UncheckedIOException e) {
            throw e.getCause();
        }
        return jar;
    }
}
