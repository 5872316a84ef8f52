package dev.conduit.chronicle;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.ImportedRegion;
import dev.conduit.Pool;
import dev.conduit.Region;
import dev.conduit.Worker;
import dev.conduit.WorkerAddress;
import dev.conduit.spi.ExporterState;
import dev.conduit.spi.ThreadMode;
import net.openhft.chronicle.bytes.Bytes;
import net.openhft.chronicle.bytes.BytesStore;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A database's storage layer over Conduit with Chronicle Bytes ({@link SharedLog}: a log of
 * length-prefixed records committed by an ordered write, and an index of keys to log offsets
 * updated by CAS), between this JVM and a child JVM that map the same region: the reader follows
 * every record in order, both processes insert into the index at once and lose no insert, and a
 * writer killed with {@code SIGKILL} in the middle of an append leaves no record a reader could
 * read torn, is seen dead through an endpoint to its worker, and leaves nothing in the shared
 * directory once the next pool there has reclaimed its files.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS) // a hang guard, not a speed check
class SharedLogAndIndexTest {

    static final int RECORDS = 1500;
    static final int SHARED_EVERY = 10;
    static final int RACE_KEYS = 4000;

    @TempDir
    Path shared;

    private Conduit conduit(String plugin) {
        return Conduit.builder().environment(Map.of()).systemProperties(new Properties())
                .sharedDirectory(shared).transports(plugin).build();
    }

    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void aReaderInAnotherJvmFollowsEveryRecordWhileBothProcessesIndexByCasAndNoInsertIsLost(String plugin) throws Exception {
        try (Conduit conduit = conduit(plugin); ChildPeer reader = new ChildPeer(SharedLogPeer.class, shared.toString(), plugin)) {
            Region region = conduit.pool(plugin).allocate(1 << 20);
            BytesStore<?, Void> store = ChronicleViews.store(region);
            Bytes<Void> log = ChronicleViews.bytes(region);
            SharedLog.format(store);
            reader.call("import", HexFormat.of().formatHex(region.exportHandle()));

            reader.start("follow", Integer.toString(RECORDS), Integer.toString(SHARED_EVERY));
            long[] offsets = new long[RECORDS];
            long wins = 0;
            long record = SharedLog.LOG_START;
            for (int seq = 0; seq < RECORDS; seq++) {
                offsets[seq] = record;
                long next = SharedLog.append(log, record, SharedLog.Entry.of(seq), true);
                SharedLog.insert(store, SharedLog.writerKey(seq), record);
                if (seq % SHARED_EVERY == 0 && SharedLog.insert(store, SharedLog.sharedKey(seq), record)) wins++;
                record = next;
            }
            String followed = reader.reply();

            int sharedKeys = (RECORDS + SHARED_EVERY - 1) / SHARED_EVERY;
            assertThat(followed).as("the reader read every record, in order, each as written").startsWith(RECORDS + " wins=");
            long readerWins = Long.parseLong(followed.substring(followed.indexOf('=') + 1));
            assertThat(wins + readerWins).as("each shared key inserted by exactly one of the two processes").isEqualTo(sharedKeys);

            reader.start("race", Integer.toString(RACE_KEYS));
            long inserted = SharedLog.race(store, RACE_KEYS);
            String raced = reader.reply();
            long readerInserted = Long.parseLong(raced.substring("inserted=".length()));
            // Informational: how the race split (both inserted each key; one insert of each won).
            System.out.println("index race over " + plugin + ": this JVM inserted " + inserted + ", the reader " + readerInserted);
            assertThat(inserted + readerInserted).as("each race key inserted by exactly one of the two processes").isEqualTo(RACE_KEYS);
            for (int i = 0; i < RACE_KEYS; i++) assertThat(SharedLog.lookup(store, SharedLog.raceKey(i))).as("race key %d", i).isEqualTo(i + 1);
            for (int seq = 0; seq < RECORDS; seq++) {
                assertThat(SharedLog.lookup(store, SharedLog.writerKey(seq))).as("writer's key of record %d", seq).isEqualTo(offsets[seq]);
                assertThat(SharedLog.lookup(store, SharedLog.readerKey(seq))).as("reader's key of record %d", seq).isEqualTo(offsets[seq]);
                if (seq % SHARED_EVERY == 0) assertThat(SharedLog.lookup(store, SharedLog.sharedKey(seq))).isEqualTo(offsets[seq]);
            }
            assertThat(SharedLog.occupied(store)).as("no key twice, none lost").isEqualTo(2 * RECORDS + sharedKeys + RACE_KEYS);
            assertThat(reader.call("lookup", Integer.toString(RECORDS), Integer.toString(SHARED_EVERY)))
                    .as("the reader finds every key too").isEqualTo("found=" + (2 * RECORDS + sharedKeys) + " wrong=0");

            SharedLog.Entry last = SharedLog.read(log, offsets[RECORDS - 1], SharedLog.committedLength(store, offsets[RECORDS - 1]), new SharedLog.Entry());
            assertThat(last.is(RECORDS - 1)).as("the last record, unmarshalled here: %s", last).isTrue();
        }
        assertThat(files()).isEmpty();
    }

    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void aWriterKilledMidAppendLeavesNoTornRecordIsSeenDeadThroughTheRegionAndAnEndpointAndLeavesNothingOnceReclaimed(String plugin)
            throws Exception {
        try (ChildPeer writer = new ChildPeer(SharedLogPeer.class, shared.toString(), plugin); Conduit conduit = conduit(plugin)) {
            String[] exported = writer.call("writer", Integer.toString(1 << 20)).split(" ");
            List<String> theirs = files();
            try (ImportedRegion region = conduit.importRegion(HexFormat.of().parseHex(exported[0]));
                 Worker worker = conduit.newWorker(ThreadMode.SINGLE)) {
                // The region says whether its exporter lives, with no worker (a reader behind a read-only mount has none);
                // an endpoint to the exporter's worker says so too.
                assertThat(region.exporterState()).as("the writer, appending").isEqualTo(ExporterState.ALIVE);
                Endpoint toWriter = worker.connect(WorkerAddress.fromBytes(HexFormat.of().parseHex(exported[1])));
                BytesStore<?, Void> store = ChronicleViews.store(region);
                Bytes<Void> log = ChronicleViews.bytes(region);

                writer.start("append", Integer.toString(RECORDS));
                long record = SharedLog.LOG_START;
                SharedLog.Entry entry = new SharedLog.Entry();
                long[] offsets = new long[RECORDS];
                for (int seq = 0; seq < RECORDS; seq++) {
                    int length;
                    while ((length = SharedLog.committedLength(store, record)) == 0) Thread.onSpinWait();
                    SharedLog.read(log, record, length, entry);
                    assertThat(entry.is(seq)).as("record %d at %d: %s", seq, record, entry).isTrue();
                    offsets[seq] = record;
                    record = SharedLog.next(record, length);
                }
                assertThat(writer.reply()).isEqualTo(Integer.toString(RECORDS));
                for (int seq = 0; seq < RECORDS; seq++) { // the writer indexes a record once it is committed
                    assertThat(SharedLog.lookup(store, SharedLog.writerKey(seq))).as("writer's key of record %d", seq).isEqualTo(offsets[seq]);
                }
                assertThat(writer.kill()).as("exit status of the writer killed by SIGKILL").isEqualTo(128 + 9);

                assertThat(store.readLong(record + 8)).as("the body of the record the writer was appending is there").isEqualTo(RECORDS);
                assertThat(SharedLog.committedLength(store, record)).as("but it was never committed: no reader reads it").isZero();
                assertThat(SharedLog.lookup(store, SharedLog.writerKey(RECORDS))).as("its key, claimed by CAS, has no value for good").isZero();

                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                while (region.exporterState() != ExporterState.DEAD && System.nanoTime() < deadline) Thread.sleep(20);
                assertThat(region.exporterState()).as("the killed writer, as its region tells").isEqualTo(ExporterState.DEAD);
                while (!toWriter.isFailed() && System.nanoTime() < deadline) worker.await(java.time.Duration.ofMillis(50));
                worker.progress();
                assertThat(toWriter.isFailed()).as("the endpoint to the killed writer's worker failed").isTrue();
                assertThat(toWriter.failure()).hasMessageContaining("died");

                long first = SharedLog.LOG_START;
                assertThat(SharedLog.read(log, first, SharedLog.committedLength(store, first), entry).is(0))
                        .as("the mapped log outlives its writer").isTrue();

                // The reader takes over as writer: it resumes at the first record not committed, over what the dead writer left.
                SharedLog.append(log, record, SharedLog.Entry.of(RECORDS + 7), true); // another entry than the torn one, of another length
                assertThat(SharedLog.read(log, record, SharedLog.committedLength(store, record), entry).is(RECORDS + 7))
                        .as("the record appended where the dead writer's was torn").isTrue();
            }
            // The reader's worker may have reclaimed them already, at the liveness check after the one that found the writer dead.
            try (Conduit next = conduit(plugin); Pool pool = next.pool(plugin)) { // opening a pool reclaims dead owners' files
                assertThat(files()).doesNotContainAnyElementsOf(theirs);
            }
        }
        assertThat(files()).as("nothing left in the shared directory").isEmpty();
    }

    /**
     * A writer killed at whatever point of its appends the kill finds it (it appends as fast as it
     * can, into a log it cannot fill before the kill): every record committed is read whole and in
     * order, and the first one not committed is never read, whatever of it was written.
     */
    @ParameterizedTest
    @ValueSource(strings = {"memfd", "posix"})
    void aWriterKilledWhereverItIsInItsAppendsLeavesEveryCommittedRecordWholeAndNoOtherReadable(String plugin) throws Exception {
        try (ChildPeer writer = new ChildPeer(SharedLogPeer.class, shared.toString(), plugin); Conduit conduit = conduit(plugin)) {
            String[] exported = writer.call("writer", Integer.toString(64 << 20)).split(" ");
            try (ImportedRegion region = conduit.importRegion(HexFormat.of().parseHex(exported[0]))) {
                BytesStore<?, Void> store = ChronicleViews.store(region);
                Bytes<Void> log = ChronicleViews.bytes(region);
                writer.start("appendUntilFull");
                long record = SharedLog.LOG_START;
                SharedLog.Entry entry = new SharedLog.Entry();
                int seq = 0;
                for (; seq < RECORDS; seq++) {
                    int length;
                    while ((length = SharedLog.committedLength(store, record)) == 0) Thread.onSpinWait();
                    assertThat(SharedLog.read(log, record, length, entry).is(seq)).as("record %d at %d: %s", seq, record, entry).isTrue();
                    record = SharedLog.next(record, length);
                }
                writer.kill();
                for (int length; (length = SharedLog.committedLength(store, record)) != 0; seq++) {
                    assertThat(SharedLog.read(log, record, length, entry).is(seq)).as("record %d at %d, after the kill: %s", seq, record, entry).isTrue();
                    record = SharedLog.next(record, length);
                }
                long logBytes = region.size() - SharedLog.LOG_START;
                // Informational: where the kill found the writer.
                System.out.println("killed writer over " + plugin + ": " + seq + " records committed, " + (record - SharedLog.LOG_START)
                        + " of the log's " + logBytes + " bytes; the next record's first body word: " + store.readLong(record + 8));
                assertThat(record - SharedLog.LOG_START).as("the writer was killed before it filled the log").isLessThan(logBytes - 4096);
            }
        }
    }

    private List<String> files() throws IOException {
        try (Stream<Path> list = Files.list(shared)) {
            return list.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }
}
