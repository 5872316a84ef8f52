package dev.conduit.it.process;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A {@link ConduitPeer} in a child JVM, as typed calls. Failures in the child fail the test with
 * the child's stderr, except where a method says it expects one.
 */
public final class RemotePeer implements AutoCloseable {

    private final ChildJvm child;

    private RemotePeer(ChildJvm child) {
        this.child = child;
    }

    /** Starts a peer seeing {@code sharedDirectory} (through {@code launcher}), with extra environment variables. */
    public static RemotePeer start(Path sharedDirectory, Launcher launcher, String... env) throws IOException {
        ChildJvm.Builder b = ChildJvm.builder(ConduitPeer.class).sharedDirectory(sharedDirectory).launcher(launcher);
        for (int i = 0; i + 1 < env.length; i += 2) b.env(env[i], env[i + 1]);
        return new RemotePeer(b.start());
    }

    public ChildJvm child() {
        return child;
    }

    /** {@code Conduit.open()} from the child's environment: {@code shared.dir}, its {@code source} and {@code selected}. */
    public Map<String, String> open(String... keys) {
        return ChildJvm.parseFields(child.call("open", (Object[]) keys));
    }

    public long pool(String plugin) {
        return Long.parseLong(ChildJvm.parseFields(child.call("pool", plugin)).get("pageSize"));
    }

    public void allocate(String name, String plugin, long size) {
        child.call("alloc", name, plugin, size);
    }

    public byte[] export(String name) {
        return HexFormat.of().parseHex(child.call("export", name));
    }

    public void free(String name) {
        child.call("free", name);
    }

    public void closePool(String plugin) {
        child.call("closepool", plugin);
    }

    /** Imports {@code handle} as {@code name}; returns the region's size. */
    public long importRegion(String name, byte[] handle) {
        Map<String, String> f = ChildJvm.parseFields(child.call("import", name, HexFormat.of().formatHex(handle)));
        return Long.parseLong(f.get("size"));
    }

    /** An import that must fail: how it failed. */
    public ChildJvm.Failure importFailure(byte[] handle) {
        return child.callExpectingFailure("import", "failed", HexFormat.of().formatHex(handle));
    }

    /** {@code ImportedRegion.exporterState()} of the child's import {@code name}: ALIVE, DEAD or UNKNOWN. */
    public String exporterState(String name) {
        return ChildJvm.parseFields(child.call("exporter", name)).get("state");
    }

    public void release(String name) {
        child.call("release", name);
    }

    public void fill(String name, long seed) {
        child.call("fill", name, seed);
    }

    /** Asserts that {@code name} holds the pattern of {@code seed} in the child. */
    public void assertPattern(String name, long seed) {
        assertThat(ChildJvm.parseFields(child.call("check", name, seed)).get("mismatch"))
                .as("first offset of %s that is not the pattern of seed %d, in the child", name, seed).isEqualTo("-1");
    }

    /** The child's IPC cache counters: hits, misses, entries, inUse, mappedBytes. */
    public Map<String, Long> cacheStats() {
        Map<String, String> f = ChildJvm.parseFields(child.call("stats"));
        return Map.of("hits", Long.parseLong(f.get("hits")), "misses", Long.parseLong(f.get("misses")),
                "entries", Long.parseLong(f.get("entries")), "inUse", Long.parseLong(f.get("inUse")),
                "mappedBytes", Long.parseLong(f.get("mappedBytes")));
    }

    public OpenResources resources() {
        return OpenResources.parse(child.call("resources"));
    }

    /** The names in the shared directory as the child sees it. */
    public List<String> sharedFiles() {
        String files = ChildJvm.parseFields(child.call("list")).get("files");
        return files.equals("-") ? List.of() : Arrays.asList(files.split(","));
    }

    public void closeConduit() {
        child.call("close");
    }

    /** Asks it to exit; returns the exit code. */
    public int exit() {
        return child.exit();
    }

    /** SIGKILL ({@link ChildJvm#kill()}). */
    public int kill() {
        return child.kill();
    }

    @Override
    public void close() {
        child.close();
    }
}
