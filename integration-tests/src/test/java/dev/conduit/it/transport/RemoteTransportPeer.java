package dev.conduit.it.transport;

import dev.conduit.WorkerAddress;
import dev.conduit.it.process.ChildJvm;
import dev.conduit.it.process.Launcher;
import dev.conduit.it.process.OpenResources;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;

/** A {@link TransportPeer} in a child JVM, as typed calls. */
final class RemoteTransportPeer implements AutoCloseable {

    private final ChildJvm child;

    private RemoteTransportPeer(ChildJvm child) {
        this.child = child;
    }

    /** Starts a peer that sees {@code shared} through {@code launcher}. */
    static RemoteTransportPeer start(Path shared, Launcher launcher, String... jvmOptions) throws IOException {
        return new RemoteTransportPeer(ChildJvm.builder(TransportPeer.class).sharedDirectory(shared).launcher(launcher)
                .jvmOptions(jvmOptions).start());
    }

    ChildJvm child() {
        return child;
    }

    /** A worker of a Conduit of its own (transports = plugin, and {@code keys} as key=value), in {@code mode}. */
    WorkerAddress worker(String w, String plugin, String mode, String... keys) {
        Object[] args = new Object[3 + keys.length];
        args[0] = w;
        args[1] = plugin;
        args[2] = mode;
        System.arraycopy(keys, 0, args, 3, keys.length);
        String hex = fields(child.call("worker", args)).get("address");
        return WorkerAddress.fromBytes(HexFormat.of().parseHex(hex));
    }

    void connect(String w, String ep, WorkerAddress peer) {
        child.call("connect", w, ep, HexFormat.of().formatHex(peer.toBytes()));
    }

    void receive(String w) {
        child.call("receive", w);
    }

    void echo(String w, String ep) {
        child.call("echo", w, ep);
    }

    /** Answers every DATA message on {@code w} with an ECHO through {@code Message.replyEndpoint()}: no address of the sender needed. */
    void reply(String w) {
        child.call("reply", w);
    }

    void stream(String job, String w, String ep, int stream, Traffic.Profile profile, long count, long maxPending) {
        child.call("stream", job, w, ep, stream, profile, count, maxPending);
    }

    void pingPong(String job, String w, String ep, int stream, Traffic.Profile profile, long count) {
        child.call("pingpong", job, w, ep, stream, profile, count);
    }

    void trickle(String job, String w, String ep, int stream, long count, long seed) {
        child.call("trickle", job, w, ep, stream, count, seed);
    }

    /** As {@link #trickle}, each message waiting until the peer counted it in the word at 0 of region {@code acks} of the child's. */
    void trickle(String job, String w, String ep, int stream, long count, long seed, String acks) {
        child.call("trickle", job, w, ep, stream, count, seed, acks);
    }

    /**
     * A job on {@code w}'s thread that sleeps in {@code await} between messages rather than spinning,
     * until its DATA receiver took {@code count} ({@link Traffic#takeAsleep}); its result's fields are
     * {@link Traffic.Asleep}'s.
     */
    void takeAsleep(String job, String w, long count, Duration guard) {
        child.call("asleep", job, w, count, guard.toMillis());
    }

    /** Joins a {@link #takeAsleep} job ({@link #join}) and returns what its awaits did. */
    Traffic.Asleep joinAsleep(String job, Duration guard) {
        Map<String, String> f = join(job, guard);
        return new Traffic.Asleep(Long.parseLong(f.get("messages")), Long.parseLong(f.get("awaits")), Long.parseLong(f.get("ranOut")),
                Long.parseLong(f.get("wokeEarly")));
    }

    /** The job's fields now: {@code done=false stage=…} or {@code done=true …}. */
    Map<String, String> status(String job) {
        return fields(child.call("status", job));
    }

    /**
     * Waits for the job, in slices of at most 10 s (each reply stays well within the harness's
     * reply timeout), up to {@code guard} — a hang guard, not a speed check. It bounds the whole
     * job: wait for a stream's messages first ({@link Setup#waitWhileProgressing}, from the last
     * one that arrived), and join for the job's tail.
     */
    Map<String, String> join(String job, Duration guard) {
        long deadline = System.nanoTime() + guard.toNanos();
        while (true) {
            Map<String, String> f = fields(child.call("join", job, 10_000));
            if (f.get("done").equals("true")) {
                if (f.containsKey("error")) throw new AssertionError("job " + job + " failed in the child: " + f.get("error") + "\n" + child.stderr());
                return f;
            }
            if (System.nanoTime() > deadline) throw new AssertionError("job " + job + " not done after " + guard + ": " + f);
        }
    }

    /** The DATA receiver's summary: messages, bytes, errors, streams (s:count,…), firstErrors. */
    Map<String, String> stats(String w) {
        return fields(child.call("stats", w));
    }

    /** How many messages the DATA receiver of {@code w} has taken so far (from {@link #stats}). */
    long messages(String w) {
        return Long.parseLong(stats(w).get("messages"));
    }

    /** How many sends of the stream job returned so far, whether it is done or not (from {@link #status}). */
    long sent(String job) {
        return Long.parseLong(status(job).get("sent"));
    }

    /** Error handler calls on {@code w}: endpoint, nanoTime, type, message (blanks as _). */
    List<String[]> failures(String w) {
        String list = fields(child.call("failures", w)).get("list");
        if (list.equals("-")) return List.of();
        return Arrays.stream(list.split(",")).map(s -> s.split("@")).toList();
    }

    /**
     * How many times {@code progress()} or {@code await} threw on {@code w}'s thread between tasks
     * (the child prints the first few on its stderr).
     */
    long progressErrors(String w) {
        return Long.parseLong(fields(child.call("failures", w)).get("progressErrors"));
    }

    /**
     * Asserts that nothing failed on {@code w}: no error handler call, and nothing thrown by
     * {@code progress()} or {@code await} on its thread — which a receiver's count cannot show,
     * since a progress call may throw after it delivered. Fails with the calls, or with how many
     * threw and the first's stack trace.
     */
    void assertNoFailures(String w) {
        Map<String, String> f = fields(child.call("failures", w));
        if (!f.get("list").equals("-")) throw new AssertionError("error handler calls on worker " + w + " in the child: " + f.get("list"));
        if (!f.get("progressErrors").equals("0")) {
            throw new AssertionError(f.get("progressErrors") + " exceptions from progress() or await on worker " + w
                    + " in the child; the first:\n" + new String(HexFormat.of().parseHex(f.get("firstProgressError")), StandardCharsets.UTF_8));
        }
    }

    byte[] region(String w, String name, long size) {
        return HexFormat.of().parseHex(fields(child.call("region", w, name, size)).get("handle"));
    }

    void fill(String name, long seed) {
        child.call("fill", name, seed);
    }

    String crc(String name) {
        return fields(child.call("crc", name)).get("crc");
    }

    long word(String name, long offset) {
        return Long.parseLong(fields(child.call("word", name, offset)).get("value"));
    }

    void adder(String job, String name, long offset, long count) {
        child.call("adder", job, name, offset, count);
    }

    List<String> files() {
        String f = fields(child.call("files")).get("files");
        return f.equals("-") ? List.of() : List.of(f.split(","));
    }

    /** What the child holds open: descriptors, Conduit's among them, and mappings of Conduit's files. */
    OpenResources resources() {
        return OpenResources.parse(child.call("resources"));
    }

    /** Starts a process of the child's own that outlives it ({@code sleep 600}); its pid. */
    long spawn() {
        return Long.parseLong(fields(child.call("spawn")).get("pid"));
    }

    void closeWorker(String w) {
        child.call("close", w);
    }

    /**
     * {@code SIGSTOP} to the child JVM: every thread freezes wherever it is, as a descheduled or
     * debugged process would. Returns once all have stopped ({@link ChildJvm#stop}).
     */
    void stop() {
        ChildJvm.stop(child.jvm().pid());
    }

    /** {@code SIGCONT}: the child JVM runs on from where {@link #stop()} froze it. */
    void resume() {
        ChildJvm.signal(child.jvm().pid(), "-CONT");
    }

    int kill() {
        return child.kill();
    }

    static Map<String, String> fields(String line) {
        return ChildJvm.parseFields(line);
    }

    @Override
    public void close() {
        child.close();
    }
}
