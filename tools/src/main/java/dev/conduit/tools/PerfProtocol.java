package dev.conduit.tools;

import dev.conduit.Message;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.FormatVersions;

import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ThreadLocalRandom;

/**
 * The active messages of a {@code conduit perf} session, after the bootstrap. The client drives;
 * the server answers. Control messages carry little-endian fields ({@link Writer}, {@link Reader});
 * the measured messages carry only their payload.
 *
 * <pre>
 * client -> server                               server -> client
 * HELLO   version, pid, host, thread mode,       WELCOME pid, host, thread mode, policy, transport,
 *         wakeup, transport, region handle,              worker transports, session number (absent
 *         worker address (the server connects back)      from an older server's)
 * BEGIN   seq, test, size                        READY   seq, ok, error or region handle (ipc_import)
 * END     seq                                    ENDED   seq, bytes the server's thread allocated from
 *                                                        READY to END (-1: the JVM does not say)
 * PING    size bytes (am_lat)                    PONG    size bytes
 * DATA    size bytes (am_bw)
 * LAST    size bytes (am_bw, the last one)       ACK     messages counted since BEGIN
 * PUT_DONE end value, 64 bits (put_bw)           ACK     1 when the region ends with the end value
 * PEER    (from an idle worker of --peers)       (counted, not answered)
 * BYE     (the session is over) empty when the
 *         run completed, else why it failed on
 *         the client's side (string): the server
 *         then ends the session as failed. An
 *         older server, which reads no payload,
 *         takes it as a completed run
 *                                                FAILED  why the session failed on the server's side
 *                                                        (string), sent before the server ends it. An
 *                                                        older client has no handler for it: its worker
 *                                                        drops it (logging one warning), and it learns
 *                                                        only that the server's worker closed
 * </pre>
 *
 * <p>BEGIN, END and BYE carry the session number WELCOME gave in their header (8 bytes; none when WELCOME had none),
 * for a {@code --keep} server's previous client may still send after its session ended: the server drops one of another
 * session, every message but HELLO while it serves no client, and a measured one outside its test's phase. The
 * measured messages carry no header, as the peers conduit perf is compared with send none; nor does an older client's
 * BEGIN, END or BYE, which the server takes as the current session's.
 */
final class PerfProtocol {

    /** 3: ENDED carries the server's allocation; 4: PUT_DONE carries 64 bits, not a byte ({@link #writeEndValue}). */
    static final int VERSION = 4;

    static final int HELLO = 0x7C01;
    static final int WELCOME = 0x7C02;
    static final int BEGIN = 0x7C03;
    static final int READY = 0x7C04;
    static final int END = 0x7C05;
    static final int ENDED = 0x7C06;
    static final int BYE = 0x7C07;
    static final int PEER = 0x7C08;
    static final int FAILED = 0x7C09;
    static final int PING = 0x7C10;
    static final int PONG = 0x7C11;
    static final int DATA = 0x7C12;
    static final int LAST = 0x7C13;
    static final int ACK = 0x7C14;
    static final int PUT_DONE = 0x7C15;

    /** The longest host a HELLO names, in bytes: a DNS name's limit (Linux's own host names stop at 64). */
    static final int MAX_HOST = 255;
    /** The longest thread mode, wakeup or transport a HELLO names, in bytes: each a word of a few letters. */
    static final int MAX_WORD = 64;
    /** The most characters of a reason that BYE or FAILED carries. */
    private static final int MAX_REASON = 2000;

    /** Every byte of an end value is odd, so none is the 0 that a put_bw's BEGIN leaves where it goes. */
    private static final long ODD_BYTES = 0x0101_0101_0101_0101L;

    private PerfProtocol() {
    }

    /**
     * A put_bw phase's end value: 64 random bits, every byte odd. The client's puts end with it and its PUT_DONE names it;
     * the server acknowledges the stream as whole when its region ends with it ({@link #endsWith}). A marker of one byte,
     * 1 to 255, was found by chance once in 255 phases in a region that no put reached.
     */
    static long newEndValue() {
        return ThreadLocalRandom.current().nextLong() | ODD_BYTES;
    }

    /** Ends {@code put} with {@code value}: its last 8 bytes, little-endian, or the value's low bytes in a shorter put. */
    static void writeEndValue(MemorySegment put, long value) {
        long start = endValueStart(put.byteSize());
        for (long i = start; i < put.byteSize(); i++) put.set(ValueLayout.JAVA_BYTE, i, (byte) (value >>> 8 * (i - start)));
    }

    /** Whether the first {@code size} bytes of {@code region} end with {@code value}, as {@link #writeEndValue} wrote it. */
    static boolean endsWith(MemorySegment region, long size, long value) {
        long start = endValueStart(size);
        for (long i = start; i < size; i++) {
            if (region.get(ValueLayout.JAVA_BYTE, i) != (byte) (value >>> 8 * (i - start))) return false;
        }
        return true;
    }

    /** Zeroes where an end value goes in the first {@code size} bytes of {@code region}, which no end value matches. */
    static void clearEndValue(MemorySegment region, long size) {
        long start = endValueStart(size);
        region.asSlice(start, size - start).fill((byte) 0);
    }

    private static long endValueStart(long size) {
        return size - Math.min(Long.BYTES, size);
    }

    /**
     * {@code reason} as BYE or FAILED carries it: a control message stays small, below any {@code inline.max}, so
     * that it needs no bounce ring (which may be what failed). The side that failed prints the whole reason itself.
     */
    static String abridged(String reason) {
        return reason.length() <= MAX_REASON ? reason : reason.substring(0, MAX_REASON) + " ...";
    }

    /**
     * Why a server refuses a client of protocol {@code clientVersion}, on the server's own line:
     * both versions, whose {@code conduit} is the older, and what to do, "this process" being the
     * server.
     */
    static String otherVersion(int clientVersion) {
        return FormatVersions.refusal("the client's conduit perf protocol", clientVersion, VERSION, "the client");
    }

    /**
     * The same refusal as WELCOME carries it to the client, which prints it as its own: there
     * "this process" is the client, so it says the server's version and what the client's side is
     * to do ({@link #otherVersion} told a client of an older conduit to upgrade "this process's"
     * peer and run "this process" with the older one, the wrong way round).
     */
    static String otherVersionForTheClient(int clientVersion) {
        return FormatVersions.refusal("the server's conduit perf protocol", VERSION, clientVersion, "the server");
    }

    /** HELLO's fields after its version, which the server reads first: a client of another version may lay out the rest otherwise. */
    record Hello(long pid, String host, String threadMode, String wakeup, String transport, byte[] regionHandle, byte[] workerAddress) {
        /**
         * Its words are no longer than any a conduit perf client sends: the server repeats the host in its lines and in the
         * refusal of a second client, a control message that must stay small (a host of 1 MiB of control characters, six
         * characters each as the lines show them, made that answer larger than an endpoint carries, and the second client
         * was told nothing).
         */
        static Hello read(Reader r) {
            return new Hello(r.u64(), r.string(MAX_HOST, "its host"), r.string(MAX_WORD, "its thread mode"), r.string(MAX_WORD, "its wakeup"),
                    r.string(MAX_WORD, "its transport"), r.bytes(), r.bytes());
        }

        /** The client as the server's lines name it: its host escaped, as its other fields are where they are shown. */
        String clientName() {
            return "pid " + pid + " on " + SharedFiles.shown(host);
        }
    }

    /** Builds a control payload. */
    static final class Writer {
        private final ByteArrayOutputStream out = new ByteArrayOutputStream();

        Writer u8(int v) {
            out.write(v);
            return this;
        }

        Writer u32(int v) {
            out.writeBytes(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt(v).array());
            return this;
        }

        Writer u64(long v) {
            out.writeBytes(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(v).array());
            return this;
        }

        Writer bytes(byte[] b) {
            u32(b.length);
            out.writeBytes(b);
            return this;
        }

        Writer string(String s) {
            return bytes(s.getBytes(StandardCharsets.UTF_8));
        }

        MemorySegment segment() {
            return MemorySegment.ofArray(out.toByteArray());
        }
    }

    /** Reads a control payload; a malformed one is a {@link ConduitException} naming the message. */
    static final class Reader {
        private final ByteBuffer in;
        private final String what;

        Reader(Message message, String what) {
            this(ByteBuffer.wrap(message.payloadToArray()).order(ByteOrder.LITTLE_ENDIAN), what);
        }

        private Reader(ByteBuffer in, String what) {
            this.in = in;
            this.what = what;
        }

        /** A reader of the same message from its first byte, this one's position left where it is. */
        Reader fromTheStart() {
            return new Reader(in.duplicate().order(ByteOrder.LITTLE_ENDIAN).rewind(), what);
        }

        int u8() {
            need(1);
            return in.get() & 0xFF;
        }

        int u32() {
            need(4);
            return in.getInt();
        }

        long u64() {
            need(8);
            return in.getLong();
        }

        byte[] bytes() {
            int n = u32();
            if (n < 0) throw malformed();
            need(n);
            byte[] b = new byte[n];
            in.get(b);
            return b;
        }

        String string() {
            return new String(bytes(), StandardCharsets.UTF_8);
        }

        /** A string of at most {@code maxBytes} bytes, {@code field} naming it when it is longer. */
        String string(int maxBytes, String field) {
            byte[] b = bytes();
            if (b.length > maxBytes) throw PerfProtocol.malformed(what, field + " is " + b.length + " bytes long, more than " + maxBytes);
            return new String(b, StandardCharsets.UTF_8);
        }

        /** Whether fields follow: a later version may add them at the end, which an earlier one does not read. */
        boolean more() {
            return in.hasRemaining();
        }

        private void need(int n) {
            if (in.remaining() < n) throw malformed();
        }

        private Malformed malformed() {
            return PerfProtocol.malformed(what, null);
        }
    }

    /**
     * A message of the peer that its version's protocol does not lay out so: the peer broke the protocol (another version
     * of conduit perf, or no conduit perf at all), not this side. A server ends the session saying so, and a {@code --keep}
     * one serves the next client.
     */
    static final class Malformed extends ConduitException {
        private Malformed(String message) {
            super(message);
        }
    }

    /** Message {@code what} of the peer is malformed, {@code detail} saying how when not null. */
    static Malformed malformed(String what, String detail) {
        return new Malformed("malformed " + what + " message from the perf peer" + (detail == null ? "" : ": " + detail)
                + " (another version of conduit perf?)");
    }

    /**
     * Why a BEGIN of {@code test} for {@code size} bytes is refused, or null when a conduit perf client asks for such a
     * phase: from 1 byte to {@link PerfParsing#MAX_SIZE}, as its command line takes, or 0 for a test that puts nothing into
     * the server's region. A server that took any size allocated what it was told (an am_bw buffer of 2^62 bytes was an
     * OutOfMemoryError that ended a --keep server) or read its region at size - 1.
     */
    static String sizeRefusal(PerfTest test, long size) {
        long least = test.rma() ? 1 : 0;
        if (size >= least && size <= PerfParsing.MAX_SIZE) return null;
        return "size " + size + " is outside what a conduit perf client asks for " + test.label() + " (" + least + " to "
                + PerfParsing.MAX_SIZE + " bytes): the client is not conduit perf's, or a broken one";
    }
}
