package dev.conduit.it.process;

import dev.conduit.Conduit;
import dev.conduit.ConduitBuilder;
import dev.conduit.ConfigEntry;
import dev.conduit.ImportedRegion;
import dev.conduit.IpcCacheStats;
import dev.conduit.Pool;
import dev.conduit.Region;
import dev.conduit.Worker;
import dev.conduit.spi.ThreadMode;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * The main class of a child JVM that uses Conduit as an application does, driven by
 * {@link RemotePeer} over {@link CommandLoop}. It is configured by its own environment (its
 * {@code CONDUIT_SHARED_DIR}) unless {@code open} is given keys. Commands (names are the test's
 * labels for regions, imports and pools):
 *
 * <pre>
 * open [key=value…]                 Conduit.open(), or a builder with these keys → shared.dir=… source=… selected=a,b
 * pool &lt;plugin&gt;                     conduit.pool(plugin) → pageSize=…
 * alloc &lt;name&gt; &lt;plugin&gt; &lt;size&gt;      pool.allocate(size)
 * export &lt;name&gt;                     region.exportHandle() → hex
 * free &lt;name&gt;                       region.close()
 * closepool &lt;plugin&gt;                pool.close()
 * import &lt;name&gt; &lt;hex&gt;               conduit.importRegion(handle) → size=… plugin=…
 * release &lt;name&gt;                    importedRegion.close()
 * exporter &lt;name&gt;                   importedRegion.exporterState() → state=ALIVE|DEAD|UNKNOWN
 * fill &lt;name&gt; &lt;seed&gt;                {@link Patterns#fill} on a region or an import
 * check &lt;name&gt; &lt;seed&gt;               → mismatch=&lt;first wrong offset, or -1&gt;
 * stats                             conduit.ipcCacheStats() → hits=… misses=… entries=… inUse=… mappedBytes=…
 * resources                         {@link OpenResources#ofThisProcess()}
 * list                              → files=&lt;names in the shared directory, comma-separated, or -&gt;
 * worker                            conduit.newWorker(SINGLE), closed at once → transports=a,b
 * close                             conduit.close(); another open may follow
 * </pre>
 *
 * Later tests add their commands (workers, endpoints) here.
 */
public final class ConduitPeer {

    private Conduit conduit;
    private final Map<String, Pool> pools = new ConcurrentHashMap<>();
    private final Map<String, Region> regions = new ConcurrentHashMap<>();
    private final Map<String, ImportedRegion> imports = new ConcurrentHashMap<>();

    private ConduitPeer() {
    }

    public static void main(String[] args) {
        ConduitPeer peer = new ConduitPeer();
        new CommandLoop()
                .on("open", peer::open)
                .on("pool", a -> "pageSize=" + peer.pools.computeIfAbsent(a.get(0), p -> peer.conduit().pool(p)).pageSize())
                .on("alloc", a -> put(peer.regions, a.get(0), pool(peer, a.get(1)).allocate(Long.parseLong(a.get(2)))).toString())
                .on("export", a -> HexFormat.of().formatHex(get(peer.regions, a.get(0)).exportHandle()))
                .on("free", a -> { get(peer.regions, a.get(0)).close(); peer.regions.remove(a.get(0)); return ""; })
                .on("closepool", a -> { pool(peer, a.get(0)).close(); peer.pools.remove(a.get(0)); return ""; })
                .on("worker", a -> {
                    try (Worker w = peer.conduit().newWorker(ThreadMode.SINGLE)) {
                        return "transports=" + String.join(",", w.address().transports());
                    }
                })
                .on("import", a -> {
                    ImportedRegion r = peer.conduit().importRegion(HexFormat.of().parseHex(a.get(1)));
                    put(peer.imports, a.get(0), r);
                    return "size=" + r.size() + " plugin=" + r.plugin();
                })
                .on("exporter", a -> "state=" + get(peer.imports, a.get(0)).exporterState())
                .on("release", a -> { get(peer.imports, a.get(0)).close(); peer.imports.remove(a.get(0)); return ""; })
                .on("fill", a -> { Patterns.fill(peer.segment(a.get(0)), Long.parseLong(a.get(1))); return ""; })
                .on("check", a -> "mismatch=" + Patterns.firstMismatch(peer.segment(a.get(0)), Long.parseLong(a.get(1))))
                .on("stats", a -> {
                    IpcCacheStats s = peer.conduit().ipcCacheStats();
                    return "hits=" + s.hits() + " misses=" + s.misses() + " entries=" + s.entries() + " inUse=" + s.entriesInUse()
                            + " mappedBytes=" + s.mappedBytes();
                })
                .on("resources", a -> OpenResources.ofThisProcess().format())
                .on("list", a -> "files=" + list(Path.of(System.getenv("CONDUIT_SHARED_DIR"))))
                .on("close", a -> {
                    peer.conduit().close();
                    peer.conduit = null; // 'open' may follow
                    return "";
                })
                .run();
    }

    private String open(List<String> args) {
        if (conduit != null) throw new IllegalStateException("already open");
        if (args.isEmpty()) {
            conduit = Conduit.open();
        } else {
            ConduitBuilder b = Conduit.builder();
            for (String kv : args) {
                int eq = kv.indexOf('=');
                b.set(kv.substring(0, eq), kv.substring(eq + 1));
            }
            conduit = b.build();
        }
        ConfigEntry shared = conduit.configuration().stream().filter(e -> e.key().equals("shared.dir")).findFirst().orElseThrow();
        return "shared.dir=" + shared.value() + " source=" + shared.source() + " selected=" + String.join(",", conduit.selectedPlugins());
    }

    private Conduit conduit() {
        if (conduit == null) throw new IllegalStateException("send 'open' first");
        return conduit;
    }

    private MemorySegment segment(String name) {
        Region r = regions.get(name);
        if (r != null) return r.segment();
        return get(imports, name).segment();
    }

    private static Pool pool(ConduitPeer peer, String plugin) {
        return get(peer.pools, plugin);
    }

    private static <T> T get(Map<String, T> map, String name) {
        T t = map.get(name);
        if (t == null) throw new IllegalArgumentException("nothing called '" + name + "' here; known: " + map.keySet());
        return t;
    }

    private static <T> String put(Map<String, T> map, String name, T value) {
        if (map.putIfAbsent(name, value) != null) throw new IllegalArgumentException("'" + name + "' is taken");
        return "";
    }

    private static String list(Path directory) throws IOException {
        try (Stream<Path> files = Files.list(directory)) {
            String names = files.map(p -> p.getFileName().toString()).sorted().collect(Collectors.joining(","));
            return names.isEmpty() ? "-" : names;
        }
    }
}
