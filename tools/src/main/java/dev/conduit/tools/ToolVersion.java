package dev.conduit.tools;

import dev.conduit.internal.formats.RuntimeFormats;
import dev.conduit.spi.ConduitPlugin;
import picocli.CommandLine.IVersionProvider;

import java.io.IOException;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.CodeSource;
import java.util.jar.Attributes;
import java.util.jar.JarFile;
import java.util.jar.Manifest;

/** The version of this build, from the tools jar's manifest, for {@code conduit --version} and {@code conduit info}. */
final class ToolVersion implements IVersionProvider {

    private static final String UNKNOWN = "unknown (not run from a jar)";

    /**
     * {@code Implementation-Version} of the jar this class was loaded from. Read from that jar
     * itself: {@code Package.getImplementationVersion()} is always {@code null} in a named module,
     * and a class-loader lookup of {@code META-INF/MANIFEST.MF} may find another jar's manifest.
     * Outside a jar (tests, an IDE) the module's compiled-in version is the next best thing.
     */
    static String current() {
        String fromManifest = manifestVersion();
        if (fromManifest != null) {
            return fromManifest;
        }
        var descriptor = ToolVersion.class.getModule().getDescriptor();
        return descriptor == null ? UNKNOWN : descriptor.rawVersion().orElse(UNKNOWN);
    }

    private static String manifestVersion() {
        CodeSource source = ToolVersion.class.getProtectionDomain().getCodeSource();
        if (source == null || source.getLocation() == null) {
            return null;
        }
        try {
            Path location = Path.of(source.getLocation().toURI());
            if (!Files.isRegularFile(location)) {
                return null;
            }
            try (JarFile jar = new JarFile(location.toFile())) {
                Manifest manifest = jar.getManifest();
                return manifest == null ? null : manifest.getMainAttributes().getValue(Attributes.Name.IMPLEMENTATION_VERSION);
            }
        } catch (IOException | URISyntaxException | IllegalArgumentException e) {
            return null;
        }
    }

    @Override
    public String[] getVersion() {
        return new String[] {
                "conduit " + current(),
                "SPI " + ConduitPlugin.SPI_VERSION,
                // What two processes' runtimes must share; each plugin's formats are in conduit info.
                "runtime formats: " + RuntimeFormats.describe(),
                // What conduit perf's client and server must share.
                "conduit perf protocol " + PerfProtocol.VERSION,
                "Java " + Runtime.version() + " (" + System.getProperty("java.vendor") + ")"
        };
    }
}
