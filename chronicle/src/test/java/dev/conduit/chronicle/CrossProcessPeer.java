package dev.conduit.chronicle;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.ImportedRegion;
import dev.conduit.Worker;
import dev.conduit.WorkerAddress;
import dev.conduit.spi.ThreadMode;
import net.openhft.chronicle.bytes.Bytes;
import net.openhft.chronicle.bytes.BytesStore;

import java.nio.file.Path;
import java.util.HexFormat;

/**
 * The other JVM of {@link CrossProcessTest}: one command per stdin line, one reply per command on
 * stdout ({@code OK ...} or {@code ERR <exception class> <message>}). First line: {@code READY}.
 *
 * <pre>
 * import HEX           imports the region whose handle is HEX
 * write SEQ            writes Quote(SEQ, ...) into the region with Chronicle
 * read                 reads the region with Chronicle and with MemorySegment: OK chronicle=... segment=...
 * cas OFFSET N         warms up on OFFSET+24, says it is ready (OFFSET+8), waits for go (OFFSET+16), then N increments of the
 *                      long at OFFSET by CAS through a Chronicle view: OK N interleaved=I
 * misuse               an out-of-bounds read, then a read after closing the import: OK oob=Class closed=Class
 * send HEX N PAD       connects to the worker address HEX, sends N Quotes (PAD padding bytes) with
 *                      ChronicleMessages, progresses until none waits locally
 * </pre>
 */
public final class CrossProcessPeer {

    private CrossProcessPeer() {
    }

    /** The region the last {@code import} imported. */
    private static ImportedRegion region;

    public static void main(String[] args) throws Exception {
        Path shared = Path.of(args[0]);
        try (Conduit conduit = Conduits.posix(shared)) {
            PeerCommands.serve(c -> switch (c[0]) {
                case "import" -> {
                    region = conduit.importRegion(HexFormat.of().parseHex(c[1]));
                    yield region.size();
                }
                case "write" -> {
                    Bytes<Void> bytes = ChronicleViews.bytes(region);
                    bytes.clear();
                    new Quote(Long.parseLong(c[1]), 1.5 * Long.parseLong(c[1]), 11, "CHILD", 16).writeMarshallable(bytes);
                    yield bytes.writePosition();
                }
                case "read" -> {
                    Quote q = new Quote();
                    q.readMarshallable(ChronicleViews.bytes(region));
                    yield "chronicle=" + q.describe() + " segment=" + CrossProcessTest.plainQuote(region.segment());
                }
                case "cas" -> {
                    BytesStore<?, Void> store = ChronicleViews.store(region);
                    long offset = Long.parseLong(c[1]);
                    long n = Long.parseLong(c[2]);
                    CrossProcessTest.increment(store, offset + 24, CrossProcessTest.WARM_UP); // compiled before the race, on a word of its own
                    store.writeOrderedLong(offset + 8, 1); // ready
                    while (store.readVolatileLong(offset + 16) == 0) Thread.onSpinWait(); // go
                    yield n + " interleaved=" + CrossProcessTest.increment(store, offset, n);
                }
                case "misuse" -> {
                    ImportedRegion imported = region;
                    Bytes<Void> bytes = ChronicleViews.bytes(imported);
                    String oob = thrown(() -> bytes.readLong(imported.size() - 4));
                    String oobStore = thrown(() -> ChronicleViews.store(imported).readLong(imported.size()));
                    imported.close();
                    yield "oob=" + oob + " oobStore=" + oobStore + " closed=" + thrown(() -> bytes.readLong(0));
                }
                case "send" -> {
                    Worker worker = conduit.newWorker(ThreadMode.SINGLE);
                    Endpoint endpoint = worker.connect(WorkerAddress.fromBytes(HexFormat.of().parseHex(c[1])));
                    ChronicleMessages messages = new ChronicleMessages();
                    int n = Integer.parseInt(c[2]);
                    int padding = Integer.parseInt(c[3]);
                    for (int i = 0; i < n; i++) {
                        messages.send(endpoint, CrossProcessTest.QUOTE, new Quote(i, i * 0.25, i, "Q" + i, padding), padding + 64L);
                        worker.progress();
                    }
                    while (endpoint.pending() > 0) worker.progress();
                    yield n;
                }
                default -> throw new IllegalArgumentException("unknown command " + c[0]);
            });
        }
    }

    private static String thrown(Runnable r) {
        try {
            r.run();
            return "none";
        } catch (RuntimeException e) {
            return e.getClass().getSimpleName();
        }
    }
}
