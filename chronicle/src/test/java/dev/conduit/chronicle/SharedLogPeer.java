package dev.conduit.chronicle;

import dev.conduit.Conduit;
import dev.conduit.ImportedRegion;
import dev.conduit.Region;
import dev.conduit.Worker;
import dev.conduit.spi.ThreadMode;
import net.openhft.chronicle.bytes.Bytes;
import net.openhft.chronicle.bytes.BytesStore;

import java.nio.file.Path;
import java.util.HexFormat;
import java.util.Map;
import java.util.Properties;

/**
 * The other JVM of {@link SharedLogAndIndexTest}, on the shared directory and plugin of its
 * arguments: one command per stdin line, one reply per command on stdout ({@code OK ...} or
 * {@code ERR <exception class> <message>}). First line: {@code READY}.
 *
 * <pre>
 * import HEX            imports the region whose handle is HEX (a reader): OK size
 * follow N EVERY        follows the log from its start until it has read N records, checking each (content, order),
 *                       inserting readerKey(seq) and, every EVERY-th record, sharedKey(seq) into the index by CAS:
 *                       OK N wins=W (W: shared keys this process inserted)
 * race COUNT           inserts the COUNT race keys by CAS, in batches started with the other process: OK inserted=I
 * lookup N EVERY        looks up every key of the N records' writer, reader and shared keys: OK found=F wrong=X
 * writer SIZE           allocates a region of SIZE bytes from a pool, formats it, opens a worker (a writer):
 *                       OK HANDLE_HEX WORKER_ADDRESS_HEX
 * append N              appends and commits N records (inserting writerKey(seq)), then writes record N's body and
 *                       leaves it uncommitted, and claims writerKey(N) with no value, as a writer killed mid-append
 *                       does: OK N
 * appendUntilFull       appends and commits records (inserting writerKey(seq)) as fast as it can until the log is full:
 *                       OK N (unless killed first, as the test means it to be)
 * </pre>
 */
public final class SharedLogPeer {

    private SharedLogPeer() {
    }

    /** Views of the region this process imported or allocated. */
    private static BytesStore<?, Void> store;
    private static Bytes<Void> log;
    /** Where {@code follow} found each record. */
    private static long[] offsets = new long[0];

    public static void main(String[] args) throws Exception {
        Path shared = Path.of(args[0]);
        String plugin = args[1];
        try (Conduit conduit = Conduit.builder().environment(Map.of()).systemProperties(new Properties())
                .sharedDirectory(shared).transports(plugin).build()) {
            PeerCommands.serve(c -> switch (c[0]) {
                case "import" -> {
                    ImportedRegion region = conduit.importRegion(HexFormat.of().parseHex(c[1]));
                    store = ChronicleViews.store(region);
                    log = ChronicleViews.bytes(region);
                    yield region.size();
                }
                case "follow" -> {
                    int n = Integer.parseInt(c[1]);
                    int every = Integer.parseInt(c[2]);
                    offsets = new long[n];
                    long wins = 0;
                    long record = SharedLog.LOG_START;
                    SharedLog.Entry entry = new SharedLog.Entry();
                    for (int seq = 0; seq < n; seq++) {
                        int length;
                        while ((length = SharedLog.committedLength(store, record)) == 0) Thread.onSpinWait();
                        SharedLog.read(log, record, length, entry);
                        if (!entry.is(seq)) throw new IllegalStateException("record " + seq + " at " + record + " reads " + entry);
                        offsets[seq] = record;
                        SharedLog.insert(store, SharedLog.readerKey(seq), record);
                        if (seq % every == 0 && SharedLog.insert(store, SharedLog.sharedKey(seq), record)) wins++;
                        record = SharedLog.next(record, length);
                    }
                    yield n + " wins=" + wins;
                }
                case "race" -> "inserted=" + SharedLog.race(store, Integer.parseInt(c[1]));
                case "lookup" -> {
                    int n = Integer.parseInt(c[1]);
                    int every = Integer.parseInt(c[2]);
                    long found = 0;
                    long wrong = 0;
                    for (int seq = 0; seq < n; seq++) {
                        for (long key : new long[] {SharedLog.writerKey(seq), SharedLog.readerKey(seq), seq % every == 0 ? SharedLog.sharedKey(seq) : 0}) {
                            if (key == 0) continue;
                            long value = SharedLog.lookup(store, key);
                            if (value == offsets[seq]) found++;
                            else wrong++;
                        }
                    }
                    yield "found=" + found + " wrong=" + wrong;
                }
                case "writer" -> {
                    Region region = conduit.pool(plugin).allocate(Long.parseLong(c[1]));
                    store = ChronicleViews.store(region);
                    log = ChronicleViews.bytes(region);
                    SharedLog.format(store);
                    Worker worker = conduit.newWorker(ThreadMode.SINGLE);
                    yield HexFormat.of().formatHex(region.exportHandle()) + " " + HexFormat.of().formatHex(worker.address().toBytes());
                }
                case "append" -> {
                    int n = Integer.parseInt(c[1]);
                    long record = SharedLog.LOG_START;
                    for (int seq = 0; seq < n; seq++) {
                        long next = SharedLog.append(log, record, SharedLog.Entry.of(seq), true);
                        SharedLog.insert(store, SharedLog.writerKey(seq), record);
                        record = next;
                    }
                    SharedLog.append(log, record, SharedLog.Entry.of(n), false);
                    SharedLog.claim(store, SharedLog.writerKey(n));
                    yield n;
                }
                case "appendUntilFull" -> {
                    long record = SharedLog.LOG_START;
                    int seq = 0;
                    try {
                        for (; ; seq++) {
                            long next = SharedLog.append(log, record, SharedLog.Entry.of(seq), true);
                            SharedLog.insert(store, SharedLog.writerKey(seq), record);
                            record = next;
                        }
                    } catch (IllegalStateException | java.nio.BufferOverflowException full) {
                        yield seq;
                    }
                }
                default -> throw new IllegalArgumentException("unknown command " + c[0]);
            });
        }
    }
}
