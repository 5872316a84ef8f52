package dev.conduit.tools;

import dev.conduit.Conduit;
import dev.conduit.Endpoint;
import dev.conduit.Message;
import dev.conduit.PeerRegion;
import dev.conduit.Pool;
import dev.conduit.Region;
import dev.conduit.Worker;
import dev.conduit.WorkerAddress;
import dev.conduit.internal.formats.WorkerIdentity;
import dev.conduit.linux.Libc;
import dev.conduit.linux.Linux;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ConfigKey;
import dev.conduit.spi.PayloadEncoder;
import dev.conduit.spi.PeerFailedException;
import dev.conduit.spi.ThreadMode;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * The answering side of {@code conduit perf}: publishes its worker address and one exported region
 * per transport plugin (the bootstrap), then serves one client session — or, with {@code --keep},
 * one after another.
 *
 * <p>Everything runs on the thread that created the worker. Message handlers only answer or count;
 * what needs more (connecting back to a client, allocating and exporting a region, the put_lat
 * responder loop) runs in the main loop, outside any handler. In a session the main loop follows
 * the client's {@code --wakeup}: busy progress, or progress and {@code worker.await} when there was
 * nothing. While no client is connected, and during ipc_import (where the server only has to let
 * the memfd fd server's thread run), it waits with {@code worker.await}.
 */
final class PerfServer {

    /**
     * How the server runs.
     *
     * @param mode       its worker's thread mode
     * @param regionSize the size of each region it exports for RMA
     * @param keep       serve client after client instead of exiting after the first
     * @param sharedDir  where the bootstrap file goes (when {@code listen} is {@code null})
     * @param name       the bootstrap file's name part
     * @param listen     where to serve the bootstrap over TCP instead, or {@code null}
     * @param watchStdin exit when standard input ends: the spawning client is gone
     * @param timeout    how long one client's TCP bootstrap exchange may take once connected, and how long a client may
     *                   stay silent between phases before its session is ended
     */
    record Options(ThreadMode mode, long regionSize, boolean keep, Path sharedDir, String name, PerfParsing.HostPort listen,
                   boolean watchStdin, Duration timeout) {
    }

    private static final VarHandle BYTE = ValueLayout.JAVA_BYTE.varHandle();
    private static final Duration AWAIT_SLICE = Duration.ofMillis(100);
    private static final long CLOSE_WAIT_NANOS = 2_000_000_000L;
    /**
     * How many HELLOs wait to be refused while a session runs: each refusal connects to its client and waits up to
     * {@link #CLOSE_WAIT_NANOS} for the answer to leave, so an unbounded list let a flood of HELLOs grow the server's
     * memory and stall the session. Past it a HELLO is dropped unanswered (its client times out), and counted.
     */
    static final int MAX_WAITING_HELLOS = 16;
    /**
     * How long a shutdown hook, this server's or a client's, waits for the run to close what it opened: longer than a
     * session's own waits (ending one, refusing a client, a client's BYE: {@link #CLOSE_WAIT_NANOS} each) and a worker's close.
     */
    static final long SHUTDOWN_WAIT_NANOS = 15_000_000_000L;

    private final Conduit conduit;
    /** The system calls its bootstrap file's directory is judged through ({@link ConduitCommand#libc}). */
    private final Libc libc;
    private final Options options;
    private final PrintWriter out;
    private final PrintWriter err;
    private final Map<String, Pool> pools = new LinkedHashMap<>();
    private final Map<String, Region> regions = new LinkedHashMap<>();
    private Worker worker;
    private Arena arena;
    private MemorySegment buffer;
    private MemorySegment ack;
    /** The bootstrap file this server published, once it has: removed when it stops, also by the shutdown hook. */
    private volatile PerfBootstrap.Published published;
    /** Why it stops before its clients are done, once something stopped it ({@link #stop}); null while it serves. */
    private volatile String stoppedBecause;
    private volatile boolean stoppedByStdin;
    /** Counted down when {@link #run} has closed everything: the shutdown hook waits for it. */
    private final CountDownLatch closed = new CountDownLatch(1);
    private volatile PerfBootstrap.Listener listener;
    private volatile ConduitException listenerFailure;

    // The session; handlers run on this thread, inside progress().
    private Endpoint client;
    private PeerRegion clientRegion;
    private Region sessionRegion;
    private Pool sessionPool;
    private boolean sessionBusy;
    private PerfTest state;
    /**
     * When the client last had an answer that leaves no phase open (its WELCOME, a refusing READY, a phase's ENDED), or one of
     * its idle peers of {@code --peers} said PEER: from then until its next BEGIN or BYE it owes the server a message, and a client silent for {@code --timeout} is ended, so that a
     * {@code --keep} server is not held for good by one that went quiet, or by a HELLO naming another live worker.
     */
    private long quietSince;
    /** The sequence number of the open phase's BEGIN ({@link #state}'s). */
    private int phaseSeq;
    private long size;
    /** This thread's allocation when the phase's READY went out; -1 outside a phase or when the JVM does not say. */
    private long allocatedAtReady = -1;
    /** The PING being answered, for {@link #echo}: its payload is copied straight into the PONG's buffer. */
    private Message ping;
    /** Written for the ranged call, so that a PONG written in place in the bounce ring (above inline.max) makes no view. */
    private final PayloadEncoder echo = (PayloadEncoder.Ranged) (memory, offset, maxLength) -> {
        long n = ping.payloadSize();
        ping.copyPayload(0, memory, offset, n);
        return n;
    };
    private long count;
    private Region ipcRegion;
    private final List<PerfProtocol.Reader> hellos = new ArrayList<>();
    /** HELLOs dropped past {@link #MAX_WAITING_HELLOS} and not yet said on standard error. */
    private long hellosDropped;
    private PerfProtocol.Reader begin;
    private int endSeq = -1;
    private boolean bye;
    /** Why the client's run failed, as its BYE said; null when the run completed (an empty BYE, all an older client sends). */
    private String clientGaveUp;
    private PeerFailedException clientFailure;
    private String clientName;
    /** The served client's worker, as its HELLO named it: a HELLO of the same worker during its session is not a second client. */
    private WorkerAddress clientAddress;
    private int phases;
    /** The number of the session being served, counting from 1; WELCOME gives it, and the client's BEGIN, END and BYE carry it. */
    private long session;

    PerfServer(Conduit conduit, Options options, PrintWriter out, PrintWriter err) {
        this(conduit, Linux.libc(), options, out, err);
    }

    PerfServer(Conduit conduit, Libc libc, Options options, PrintWriter out, PrintWriter err) {
        this.conduit = conduit;
        this.libc = libc;
        this.options = options;
        this.out = out;
        this.err = err;
    }

    /** Whether it stopped because its standard input ended ({@code --exit-with-stdin}): the spawning client is gone. */
    boolean stoppedByStdin() {
        return stoppedByStdin;
    }

    private boolean stopped() {
        return stoppedBecause != null;
    }

    /** Ends the serving loop, from any thread: the server then closes what it opened and {@link #run} returns 1. */
    void stop(String because) {
        stoppedBecause = because;
        Worker w = worker;
        if (w != null) w.signal();
        PerfBootstrap.Listener l = listener;
        if (l != null) l.close();
    }

    /** Serves, and returns the exit code: 0 after a session the client ended, 1 when it failed or the spawning client went away. */
    int run() {
        // Ctrl-C or kill, also while starting: this stops serving and waits for run() to close what it opened (the worker's
        // queue and lease, the regions' chunk files); an exit without it left them in the shared directory until another
        // process reclaimed them.
        Thread cleanup = new Thread(() -> {
            stop("stopped by a signal");
            awaitQuietly(closed, SHUTDOWN_WAIT_NANOS);
            PerfBootstrap.Published file = published;
            if (file != null) file.close();
        }, "conduit-perf-server-cleanup");
        Runtime.getRuntime().addShutdownHook(cleanup);
        try {
            arena = Arena.ofShared();
            buffer = arena.allocate(options.regionSize(), 64);
            ack = arena.allocate(8, 8);
            worker = conduit.newWorker(options.mode());
            registerHandlers();
            List<String> transports = worker.address().transports();
            Map<String, byte[]> handles = new LinkedHashMap<>();
            for (String plugin : transports) {
                try {
                    Pool pool = conduit.pool(plugin);
                    pools.put(plugin, pool);
                    Region r = pool.allocate(options.regionSize(), 64);
                    r.segment().fill((byte) 0);
                    regions.put(plugin, r);
                    handles.put(plugin, r.exportHandle());
                } catch (ConduitException e) {
                    err.println("conduit perf server: no region through '" + plugin + "': " + e.getMessage());
                }
            }
            if (handles.isEmpty()) throw new ConduitException("no transport plugin of this worker " + transports + " could allocate and export a region");
            PerfBootstrap bootstrap = new PerfBootstrap(ProcessHandle.current().pid(), PerfCommand.hostName(), options.mode().name(),
                    options.regionSize(), worker.address().toBytes(), handles);
            String where;
            if (options.listen() != null) {
                listener = new PerfBootstrap.Listener(options.listen(), options.timeout(), err);
                listener.serveInBackground(bootstrap, failure -> listenerFailure = failure);
                where = "listening on " + listener.address();
            } else {
                published = bootstrap.publish(libc, options.sharedDir(), options.name());
                if (published.replaced() != null) {
                    err.println("conduit perf server: replaced " + published.file() + ", which a server that is gone left ("
                            + published.replaced() + "; it holds no lock on it)");
                    err.flush();
                }
                where = "published " + published.file();
            }
            out.println("conduit perf server: pid " + bootstrap.pid() + ", host " + bootstrap.host() + ", thread mode " + options.mode()
                    + " (" + worker.threadPolicy() + "), transports " + transports + ", regions of " + options.regionSize() + " bytes; "
                    + where + (options.keep() ? "; serving clients until stopped" : "; serving one client"));
            out.flush();
            if (options.watchStdin()) watchStdin();

            int exit;
            do {
                exit = session();
            } while (options.keep() && !stopped() && listenerFailure == null);
            if (listenerFailure != null && !stopped()) {
                // A --keep server whose listener failed during a session: no client can reach it any more.
                err.println("conduit perf server: " + listenerFailure.getMessage());
                return ConduitCommand.EXIT_FAILED;
            }
            if (stopped()) {
                err.println("conduit perf server: " + stoppedBecause + "; exiting");
                return ConduitCommand.EXIT_FAILED;
            }
            return exit;
        } finally {
            PerfBootstrap.Published file = published;
            if (file != null) file.close();
            PerfBootstrap.Listener l = listener;
            if (l != null) l.close();
            closeAll();
            out.flush();
            err.flush();
            closed.countDown();
            try {
                Runtime.getRuntime().removeShutdownHook(cleanup);
            } catch (IllegalStateException e) {
                // shutting down already: the hook, which waited for the close above, ends too
            }
        }
    }

    private void registerHandlers() {
        worker.onMessage(PerfProtocol.HELLO, m -> {
            if (hellos.size() < MAX_WAITING_HELLOS) hellos.add(new PerfProtocol.Reader(m, "HELLO"));
            else hellosDropped++;
        });
        // Every other message counts only in a session, and a measured one only in its test's phase: a --keep server's
        // previous client may still send after its session ended (a BYE crossing the server's end of it, what an older
        // client, which drops FAILED, sends after it, the rest of an am_bw stream). Taken in, such a message was a
        // NullPointerException (no client, no region) or an IndexOutOfBoundsException (a DATA larger than the last phase's
        // buffer) out of the serving loop, which ended the server, or a BYE, BEGIN or END that the next client's session
        // took as its own. It is dropped: the next HELLO starts afresh.
        worker.onMessage(PerfProtocol.BEGIN, m -> {
            if (ofThisSession(m)) begin = new PerfProtocol.Reader(m, "BEGIN");
        });
        worker.onMessage(PerfProtocol.END, m -> {
            if (ofThisSession(m)) endSeq = new PerfProtocol.Reader(m, "END").u32();
        });
        worker.onMessage(PerfProtocol.BYE, m -> {
            if (!ofThisSession(m)) return;
            clientGaveUp = m.payloadSize() == 0 ? null : new PerfProtocol.Reader(m, "BYE").string();
            bye = true;
        });
        // An idle worker of --peers: its connection is what counts, so that this worker tracks N senders. A client connects
        // them after its WELCOME and before its first BEGIN, together for longer than --timeout with --peers 1024 on a loaded
        // machine: each one's message says the client is at work, as a BEGIN or BYE would.
        worker.onMessage(PerfProtocol.PEER, m -> {
            if (client != null) quietSince = System.nanoTime();
        });
        // Every handler reads the payload it got, as the peers conduit perf is compared with do (a C ping-pong hop
        // copies the incoming slot into the outgoing one, UCX copies into its receive buffer): a zero-copy receive
        // that nobody read would be measured as free. A PING is answered with its own payload, one copy as in C's hop.
        worker.onMessage(PerfProtocol.PING, m -> {
            if (state != PerfTest.AM_LAT) return;
            checkMeasured(m, "PING"); // BEGIN judged the phase's size against what this server's endpoint carries; a PING's not
            ping = m;
            client.send(PerfProtocol.PONG, MemorySegment.NULL, m.payloadSize(), echo);
        });
        worker.onMessage(PerfProtocol.DATA, m -> {
            if (state != PerfTest.AM_BW) return;
            checkMeasured(m, "DATA");
            m.copyPayload(0, buffer, 0, m.payloadSize());
            count++;
        });
        worker.onMessage(PerfProtocol.LAST, m -> {
            if (state != PerfTest.AM_BW) return;
            checkMeasured(m, "LAST");
            m.copyPayload(0, buffer, 0, m.payloadSize());
            count++;
            ack.set(ValueLayout.JAVA_LONG, 0, count);
            count = 0;
            client.send(PerfProtocol.ACK, ack);
        });
        worker.onMessage(PerfProtocol.PUT_DONE, this::onPutDone);
    }

    /**
     * Whether BEGIN, END or BYE is the current client's: there is a session, and the message's header names it (the number
     * WELCOME gave), so that a previous client still sending after the next one's HELLO is not taken as it. A message
     * without that header, from an older client, is taken as the current session's.
     */
    private boolean ofThisSession(Message m) {
        return client != null && (m.headerSize() < Long.BYTES || m.headerLong(0) == session);
    }

    /**
     * A measured message of am_lat or am_bw carries the phase's size, at most: a larger DATA or LAST would not fit the
     * phase's buffer, a larger PING's PONG the server's endpoint.
     */
    private void checkMeasured(Message m, String what) {
        if (m.payloadSize() > size) {
            throw PerfProtocol.malformed(what, m.payloadSize() + " bytes in a phase of " + size);
        }
    }

    private void onPutDone(Message m) {
        if (state != PerfTest.PUT_BW) return;
        if (m.payloadSize() < Long.BYTES) throw PerfProtocol.malformed("PUT_DONE", m.payloadSize() + " bytes, not an end value's 8");
        ack.set(ValueLayout.JAVA_LONG, 0, PerfProtocol.endsWith(sessionRegion.segment(), size, m.payloadLong(0)) ? 1 : 0);
        client.send(PerfProtocol.ACK, ack);
    }

    /** Waits for a client's HELLO, serves it until BYE or its failure; returns the exit code. */
    private int session() {
        while (hellos.isEmpty() && !stopped() && listenerFailure == null) {
            if (worker.progress() == 0) worker.await(AWAIT_SLICE);
        }
        if (stopped()) return ConduitCommand.EXIT_FAILED;
        if (listenerFailure != null) {
            err.println("conduit perf server: " + listenerFailure.getMessage());
            return ConduitCommand.EXIT_FAILED;
        }
        PerfProtocol.Reader hello = hellos.removeFirst();
        try {
            welcome(hello);
        } catch (RuntimeException e) {
            err.println("conduit perf server: could not start a session: " + e.getMessage());
            endSession();
            return ConduitCommand.EXIT_FAILED;
        }
        try {
            while (true) {
                if (!hellos.isEmpty()) refuse(hellos.removeFirst());
                if (hellosDropped > 0) sayHellosDropped();
                if (begin != null) begin();
                if (endSeq >= 0) end();
                if (bye && clientGaveUp != null) {
                    err.println("conduit perf server: the session with " + clientName + " failed " + afterPhases() + ", on the client's "
                            + "side: " + SharedFiles.shown(clientGaveUp));
                    return ConduitCommand.EXIT_FAILED;
                }
                if (bye) {
                    err.println("conduit perf server: session with " + clientName + " ended " + afterPhases()
                            + " (each size of each test, and the warm-up of every size before a test's first)");
                    return ConduitCommand.EXIT_OK;
                }
                if (clientFailure != null) return clientFailed(clientFailure);
                // Only between phases: within one the client may send nothing for as long as it measures (get_lat's reads).
                if (state == null && begin == null && endSeq < 0 && System.nanoTime() - quietSince > options.timeout().toNanos()) {
                    return clientSilent();
                }
                if (stopped()) {
                    tellTheClient(stoppedBecause);
                    return ConduitCommand.EXIT_FAILED;
                }
                if (state == PerfTest.PUT_LAT) {
                    putResponder();
                } else if (sessionBusy && state != PerfTest.IPC_IMPORT) {
                    if (worker.progress() == 0) Thread.onSpinWait();
                } else if (worker.progress() == 0) {
                    worker.await(AWAIT_SLICE);
                }
            }
        } catch (PerfProtocol.Malformed e) {
            // The client's doing, not this server's: a --keep server serves the next client.
            err.println("conduit perf server: the session with " + clientName + " failed " + afterPhases() + ": the client "
                    + "broke the protocol: " + e.getMessage());
            tellTheClient("this server ended the session: " + e.getMessage());
            return ConduitCommand.EXIT_FAILED;
        } catch (PeerFailedException e) {
            // An operation on the client's endpoint found it failed before its error handler said so (a send that found the
            // client's queue gone or damaged): the same end as the handler's.
            return clientFailed(e);
        } catch (ConduitException e) {
            // A transport's own failure, whose message names the cause and the remedy: a message larger than inline.max
            // whose bounce ring cannot be made (a full shared directory), a put into mapped memory truncated under it.
            err.println("conduit perf server: the session with " + clientName + " failed " + afterPhases() + ", on this "
                    + "server's side: " + e.getMessage());
            tellTheClient(e.getMessage());
            return ConduitCommand.EXIT_FAILED;
        } catch (RuntimeException e) {
            // Only a bug gets here (of this server, or of a client that breaks the protocol its version checked): the trace
            // is what a report needs.
            err.println("conduit perf server: the session with " + clientName + " failed " + afterPhases() + " on a bug of "
                    + "conduit perf (report it with the stack trace below): " + e);
            e.printStackTrace(err);
            tellTheClient("a bug of conduit perf, whose stack trace the server printed (report it with that): " + e);
            return ConduitCommand.EXIT_FAILED;
        } finally {
            endSession();
        }
    }

    /** "after 1 phase", "after 3 phases": how far the session came, for its last line. */
    private String afterPhases() {
        return "after " + phases + (phases == 1 ? " phase" : " phases");
    }

    /**
     * FAILED: why the session ends on this server's side, before {@link #endSession} closes the endpoint (it waits for the
     * message to go). Without it a client started by hand ({@code --connect}) learned only that this worker closed.
     */
    private void tellTheClient(String why) {
        try {
            if (!client.isFailed()) client.send(PerfProtocol.FAILED, new PerfProtocol.Writer().string(PerfProtocol.abridged(why)).segment());
        } catch (RuntimeException e) {
            // Best effort: the server's own line has said why, and an endpoint that cannot carry it fails as the client sees.
        }
    }

    /**
     * Says that the client's endpoint failed (the client died, closed without BYE, or was judged hung), and why: which
     * session, as the other ends of one say it, for a {@code --keep} server's clients follow one another. The exit code.
     */
    private int clientFailed(PeerFailedException e) {
        err.println("conduit perf server: the session with " + clientName + " failed " + afterPhases() + ": the client "
                + "failed: " + e.getMessage());
        return ConduitCommand.EXIT_FAILED;
    }

    /** Ends the session of a client that sent nothing for {@code --timeout} between phases ({@link #quietSince}). The exit code. */
    private int clientSilent() {
        String why = "the client sent nothing for " + ConfigKey.durationText(options.timeout()) + " after "
                + (phases == 0 ? "its WELCOME" : "this server's answer to its last phase") + ", where it owes BEGIN or BYE (this server's --timeout)";
        err.println("conduit perf server: the session with " + clientName + " failed " + afterPhases() + ": " + why);
        tellTheClient("this server ended the session: " + why);
        return ConduitCommand.EXIT_FAILED;
    }

    private void welcome(PerfProtocol.Reader r) {
        int version = r.u8();
        if (version != PerfProtocol.VERSION) refuseOtherVersion(r, version);
        PerfProtocol.Hello hello = PerfProtocol.Hello.read(r);
        String transport = hello.transport();
        String wakeup = hello.wakeup();
        String shownTransport = SharedFiles.shown(transport); // the client's words, as the lines below show them
        WorkerAddress address = WorkerAddress.fromBytes(hello.workerAddress());
        if (WorkerIdentity.sameWorker(address, worker.address())) {
            // Connected to, this server served a session with itself, answering itself, until the client said BYE, and one
            // that never did kept it busy for good. Judged by what identifies the worker, not by the bytes: another worker id,
            // or an entry of a plugin this worker lacks before or after its own, named it as well. What the check cannot see
            // (WorkerIdentity) ends as any silent client's session does, at --timeout.
            throw new ConduitException("client " + hello.clientName() + " named this server's own worker address as its own: the "
                    + "client is not conduit perf's, or a broken one");
        }
        client = worker.connect(address, (ep, cause) -> clientFailure = cause);
        clientAddress = address;
        clientName = hello.clientName();
        phases = 0;
        session++;
        sessionRegion = regions.get(transport);
        sessionPool = pools.get(transport);
        if (sessionRegion == null) {
            sendWelcome("this server exported no region through '" + shownTransport + "'");
            throw new ConduitException("client " + clientName + " connected through '" + shownTransport + "', which has no region here");
        }
        clientRegion = client.peerRegion(hello.regionHandle());
        sessionBusy = !"await".equals(wakeup);
        err.println("conduit perf server: session with " + clientName + " (thread mode " + SharedFiles.shown(hello.threadMode()) + ", wakeup "
                + SharedFiles.shown(wakeup) + ", transport " + shownTransport + ")");
        sendWelcome("");
        quietSince = System.nanoTime();
    }

    /**
     * Refuses a HELLO of protocol {@code version}, judged before any other field: another version may
     * lay them out otherwise. The refusal reaches the client when its HELLO still carries its pid, host
     * and address where this version's does (so far every version's has); otherwise the server's line
     * alone says it, and the client's wait for WELCOME ends at its timeout.
     */
    private void refuseOtherVersion(PerfProtocol.Reader r, int version) {
        String refusal = PerfProtocol.otherVersion(version);
        WorkerAddress address;
        try {
            PerfProtocol.Hello hello = PerfProtocol.Hello.read(r);
            address = WorkerAddress.fromBytes(hello.workerAddress());
            clientName = hello.clientName();
        } catch (RuntimeException unreadable) {
            throw new ConduitException("a client's HELLO: " + refusal + " (its HELLO is laid out otherwise, so it was not told;"
                    + " it stops at its own timeout)");
        }
        client = worker.connect(address, (ep, cause) -> clientFailure = cause);
        sendWelcome(PerfProtocol.otherVersionForTheClient(version)); // read there, where "this process" is the client
        throw new ConduitException("client " + clientName + ": " + refusal);
    }

    private void sendWelcome(String error) {
        PerfProtocol.Writer w = new PerfProtocol.Writer().string(error);
        if (error.isEmpty()) {
            w.u64(ProcessHandle.current().pid()).string(PerfCommand.hostName()).string(options.mode().name())
                    .string(worker.threadPolicy().name()).string(String.join(",", worker.address().transports())).u64(session);
        }
        client.send(PerfProtocol.WELCOME, w.segment());
    }

    private void sayHellosDropped() {
        err.println("conduit perf server: dropped " + hellosDropped + (hellosDropped == 1 ? " HELLO" : " HELLOs") + " unanswered while "
                + MAX_WAITING_HELLOS + " clients already waited to be told it serves " + clientName + " (at most " + MAX_WAITING_HELLOS
                + " wait; a flood of HELLOs, or that many clients at once: start them one after another)");
        hellosDropped = 0;
    }

    /** A second client while one is served: tell it, and forget it. The served client's own HELLO is ignored, saying so. */
    private void refuse(PerfProtocol.Reader r) {
        if (ofTheServedClient(r)) {
            ignoreHelloOfTheServedClient();
            return;
        }
        try {
            r.u8();
            // Closed whatever its send does: left open, it kept mapping the refused client's queue for as long as that lived.
            try (Endpoint other = worker.connect(WorkerAddress.fromBytes(PerfProtocol.Hello.read(r).workerAddress()))) {
                other.send(PerfProtocol.WELCOME, new PerfProtocol.Writer().string("busy with another client (" + clientName + ")").segment());
                long deadline = System.nanoTime() + CLOSE_WAIT_NANOS;
                while (other.pending() > 0 && System.nanoTime() < deadline) worker.progress();
            }
        } catch (RuntimeException e) {
            err.println("conduit perf server: could not turn away a second client: " + e.getMessage());
        }
    }

    /**
     * Whether a waiting HELLO names the served client's worker, judged on a copy of it: one that cannot be read so is not,
     * and is refused, or served, as any other.
     */
    private boolean ofTheServedClient(PerfProtocol.Reader hello) {
        if (clientAddress == null) return false;
        try {
            PerfProtocol.Reader r = hello.fromTheStart();
            return r.u8() == PerfProtocol.VERSION
                    && WorkerIdentity.sameWorker(WorkerAddress.fromBytes(PerfProtocol.Hello.read(r).workerAddress()), clientAddress);
        } catch (RuntimeException unreadable) {
            return false;
        }
    }

    /**
     * A conduit perf client says HELLO once: another during its own session breaks the protocol. It is not answered: a
     * WELCOME would reach the client's worker in the middle of its run, and the busy answer to a second client told it
     * the server was busy with itself. The session goes on.
     */
    private void ignoreHelloOfTheServedClient() {
        err.println("conduit perf server: ignored a HELLO of " + clientName + " in its own session " + session + ": a conduit perf "
                + "client says HELLO once, before its session (the client is not conduit perf's, or a broken one)");
    }

    private void begin() {
        PerfProtocol.Reader r = begin;
        begin = null;
        quietSince = System.nanoTime(); // a phase refused in READY leaves none open, and the client owes the next BEGIN or BYE
        int seq = r.u32();
        phases++;
        int ordinal = r.u8();
        long requested = r.u64();
        PerfProtocol.Writer ready = new PerfProtocol.Writer().u32(seq);
        if (state != null) {
            // The open phase goes on: an ipc_import's next BEGIN replaced its exported region unclosed, so that a client could
            // make a --keep server hold region after region.
            client.send(PerfProtocol.READY, ready.u8(0).string("phase " + phaseSeq + " (" + state.label() + " " + size + ") is not "
                    + "ended: a conduit perf client ENDs each phase before its next BEGIN; the client is not conduit perf's, or a "
                    + "broken one").segment());
            return;
        }
        if (ordinal >= PerfTest.values().length) {
            client.send(PerfProtocol.READY, ready.u8(0).string("unknown test #" + ordinal + " (another version of conduit perf?)").segment());
            return;
        }
        PerfTest test = PerfTest.values()[ordinal];
        String badSize = PerfProtocol.sizeRefusal(test, requested);
        if (badSize != null) {
            client.send(PerfProtocol.READY, ready.u8(0).string(badSize).segment());
            return;
        }
        if (test.rma() && requested > sessionRegion.size()) {
            client.send(PerfProtocol.READY, ready.u8(0).string("larger than the server's region (" + sessionRegion.size()
                    + " bytes): start the server with --region-size " + PerfParsing.formatSize(requested) + " or more").segment());
            return;
        }
        if (test == PerfTest.PUT_LAT && requested > clientRegion.size()) {
            // A conduit perf client's region is as large as its largest size: the first answer would not have fitted.
            client.send(PerfProtocol.READY, ready.u8(0).string("larger than the region of " + clientRegion.size() + " bytes the client's "
                    + "HELLO named, into which the server puts its answers: the client is not conduit perf's, or a broken one").segment());
            return;
        }
        if (test == PerfTest.AM_LAT && requested > client.maxPayloadSize()) {
            client.send(PerfProtocol.READY, ready.u8(0).string(tooLargeToAnswer(requested)).segment());
            return;
        }
        size = requested;
        count = 0;
        if (test.activeMessages()) {
            if (buffer.byteSize() < size) buffer = arena.allocate(size, 64);
        }
        byte[] handle = new byte[0];
        if (test == PerfTest.PUT_LAT) {
            sessionRegion.segment().asSlice(0, size).fill((byte) 0);
        } else if (test == PerfTest.PUT_BW) {
            // What an earlier phase's puts left there would be the end value found, if this phase's puts landed nothing.
            PerfProtocol.clearEndValue(sessionRegion.segment(), size);
        } else if (test == PerfTest.IPC_IMPORT) {
            try {
                ipcRegion = sessionPool.allocate(size, 64);
                handle = ipcRegion.exportHandle();
            } catch (RuntimeException e) {
                client.send(PerfProtocol.READY, ready.u8(0).string("the server could not export a region of " + size + " bytes: "
                        + e.getMessage()).segment());
                return;
            }
        }
        state = test;
        phaseSeq = seq;
        client.send(PerfProtocol.READY, ready.u8(1).bytes(handle).segment());
        allocatedAtReady = ThreadAllocation.bytes();
    }

    /**
     * Why an am_lat size is refused: the PONG answering a PING of {@code requested} bytes would be larger than this server's
     * endpoint carries, a limit of the server's own settings (a server started with a smaller bounce ring than the client's),
     * which the client's check of its own limit did not see. Sent, the PONG was an IllegalArgumentException in the PING
     * handler, and the session ended as a bug of conduit perf. The key is named when the transport declares the
     * shared-memory transports' one.
     */
    private String tooLargeToAnswer(long requested) {
        String plugin = client.transport();
        String key = plugin + ".bounce.size";
        String remedy = conduit.plugins().stream().filter(p -> p.name().equals(plugin)).flatMap(p -> p.configuration().stream())
                .filter(e -> e.key().equals(key)).findFirst()
                .map(e -> "start the server with --set " + key + "=" + PerfParsing.formatSize(requested) + " or more (or " + e.property()
                        + ", " + e.environment() + ")")
                .orElse("start the server with a larger payload limit of '" + plugin + "' (docs/plugins.md gives each plugin's keys)");
        return "larger than the server can answer: its PONG of " + requested + " bytes would exceed the largest payload the "
                + "server's endpoint carries through '" + plugin + "' (" + client.maxPayloadSize() + " bytes); " + remedy;
    }

    private void end() {
        // First, so that the count covers the phase's messages and no more: the warm-up's and the measured loop's.
        long allocated = ThreadAllocation.since(allocatedAtReady);
        allocatedAtReady = -1;
        int seq = endSeq;
        endSeq = -1;
        state = null;
        if (ipcRegion != null) {
            ipcRegion.close();
            ipcRegion = null;
        }
        client.send(PerfProtocol.ENDED, new PerfProtocol.Writer().u32(seq).u64(allocated).segment());
        quietSince = System.nanoTime();
    }

    /**
     * put_lat's other half: poll the last byte of our region; when the client's put changed it,
     * put the same bytes back into the client's region and flush. Until END, or a BEGIN, which the
     * main loop refuses (the phase is open) before it comes back here.
     */
    private void putResponder() {
        MemorySegment local = sessionRegion.segment();
        MemorySegment source = buffer.byteSize() >= size ? buffer.asSlice(0, size) : arena.allocate(size, 64);
        long last = size - 1;
        byte seen = 0;
        while (endSeq < 0 && begin == null && clientFailure == null && !stopped() && !bye) {
            byte v = (byte) BYTE.getVolatile(local, last);
            if (v != seen) {
                seen = v;
                source.set(ValueLayout.JAVA_BYTE, last, v);
                client.put(source, clientRegion, 0);
                client.flush();
            } else if (worker.progress() == 0) {
                Thread.onSpinWait();
            }
        }
    }

    private void endSession() {
        allocatedAtReady = -1; // a phase the session left unended measures nothing for the next one
        // Read in the pass that ended the session (with its BYE), the client's own HELLO was left waiting, and became a second
        // session of that client; another client's HELLO read then is served next.
        hellos.removeIf(hello -> {
            boolean own = ofTheServedClient(hello);
            if (own) ignoreHelloOfTheServedClient();
            return own;
        });
        if (client != null) {
            try {
                long deadline = System.nanoTime() + CLOSE_WAIT_NANOS;
                while (clientFailure == null && !client.isFailed() && client.pending() > 0 && System.nanoTime() < deadline) {
                    worker.progress();
                }
                client.close(); // closes clientRegion too
            } catch (RuntimeException e) {
                err.println("conduit perf server: closing the session: " + e.getMessage());
            }
        }
        if (ipcRegion != null) ipcRegion.close();
        client = null;
        clientAddress = null;
        clientRegion = null;
        ipcRegion = null;
        sessionRegion = null;
        sessionPool = null;
        state = null;
        begin = null;
        endSeq = -1;
        bye = false;
        clientGaveUp = null;
        clientFailure = null;
        count = 0;
        ping = null;
    }

    /** A daemon thread that stops the server when standard input ends (the spawning process closed it or died). */
    private void watchStdin() {
        Thread t = new Thread(() -> {
            try (InputStream in = System.in) {
                byte[] b = new byte[256];
                while (in.read(b) >= 0) {
                    // nothing is ever sent; only the end matters
                }
            } catch (IOException e) {
                // treated as the end
            }
            stoppedByStdin = true;
            stop("standard input ended (the client that started this server is gone)");
        }, "conduit-perf-stdin-watch");
        t.setDaemon(true);
        t.start();
    }

    private void closeAll() {
        List<AutoCloseable> toClose = new ArrayList<>();
        if (worker != null) toClose.add(worker);
        toClose.addAll(regions.values());
        toClose.addAll(pools.values());
        if (arena != null) toClose.add(arena);
        for (AutoCloseable c : toClose) {
            try {
                c.close();
            } catch (Exception e) {
                err.println("conduit perf server: closing " + c + ": " + e.getMessage());
            }
        }
    }

    static void awaitQuietly(CountDownLatch latch, long nanos) {
        try {
            latch.await(nanos, TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

}
