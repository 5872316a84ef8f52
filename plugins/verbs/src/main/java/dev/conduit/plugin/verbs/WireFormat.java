package dev.conduit.plugin.verbs;

import dev.conduit.spi.FormatVersions;
import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.PayloadWriter;

import java.net.Inet4Address;
import java.net.InetAddress;
import java.util.Arrays;

/**
 * What the verbs plugin writes for peers, and the validating decoders of it: every field of
 * bytes another process wrote is checked, and a bad one is an
 * {@link dev.conduit.spi.InvalidHandleException} naming it.
 *
 * <h2>Transport address (the worker address entry)</h2>
 * <pre>
 * field             encoding   rule on decode
 * version           u8         4 (3 until 2026-12-07: an address without context; 2 until then too: without
 *                              remote.atomics either; 1 until 2026-12-06: without responder.depth either)
 * token             16 bytes   random per transport; the wire-up request must present it
 * context           16 bytes   random per device context of the plugin (drawn when it opens the device): the one the
 *                              region payloads of its memory provider carry, which a peer's endpoint compares with it
 *                              before any RMA on a region, refusing one of another context
 * port              u8         1..255
 * link.layer        u8         0 (unspecified, i.e. InfiniBand), 1 (InfiniBand), 2 (Ethernet: RoCE)
 * lid               u16
 * gid               16 bytes
 * mtu               u8         enum ibv_mtu, 1..5
 * receive.buffers   u32        2..4096: the credits a sender starts with
 * buffer.size       u32        4096..2^30, a multiple of 64: the largest record one SEND may carry, and the
 *                              most bytes one RDMA WRITE or READ of the peer moves
 * responder.depth   u8         1..255: the RDMA READs and atomics the transport's queue pairs take in flight
 *                              (its device's max_qp_rd_atom, at most 255); a peer keeps no more in flight
 * remote.atomics    u8         0 or 1: whether the transport's device does RDMA atomics (atomic_cap not
 *                              IBV_ATOMIC_NONE), so that its pools' chunks and inbound queue pairs grant peers
 *                              IBV_ACCESS_REMOTE_ATOMIC; a peer refuses fetchAdd and compareAndSwap on its regions
 *                              when 0, before posting
 * wireup.host       string     an IPv4 or IPv6 literal (never a name to resolve)
 * wireup.port       u16        1..65535
 * </pre>
 *
 * <h2>Wire-up messages</h2> (over TCP, each a {@code u16} length, then:)
 * <pre>
 * field             encoding   rule on decode
 * magic             u32        0x55575643 ("CVWU")
 * version           u8         2 (1 until 2026-12-02: a request without sender.address)
 * kind              u8         1 request (connector to acceptor), 2 reply
 * token             16 bytes   the acceptor's address token
 * qpn               u32        1..2^24-1
 * psn               u32        0..2^24-1
 * lid               u16
 * gid               16 bytes
 * mtu               u8         1..5
 * credit.address    u64        request only: where the acceptor RDMA-writes the count of re-posted receives; not 0
 * credit.rkey       u32        request only
 * sender.address    u16 length request only: the connector's own transport address (above), 69..132 bytes, decoded
 *                   + bytes    as an address is (its fields named wireup.sender.address.*): what the acceptor's
 *                              senderAddress gives for the connection's messages, so that they can be answered
 * </pre>
 *
 * <p>Version 2 added {@code sender.address}. The version is read before anything else and another
 * one is refused naming both ({@link FormatVersions#refusal}): a version-1 acceptor refuses a
 * version-2 request that way in its log (and closes the connection, which the connector reports as
 * a refusal), where without the bump it would have read the new field as trailing bytes after
 * {@code credit.rkey} and named no version; a version-2 acceptor refuses a version-1 request the same way.
 *
 * <p>Address version 2 added {@code responder.depth}. A version-1 address (a peer's, or the
 * connector's in a wire-up request) is refused naming both versions, as a version-1 process refuses
 * a version-2 one; without the bump a version-1 reader would have read the field as the first byte
 * of {@code wireup.host}'s length. Address version 3 added {@code remote.atomics}, refused and
 * refusing the same way: without the bump a version-2 reader would have read it as the first byte
 * of {@code wireup.host}'s length, and a version-3 reader a version-2 address's host length as it.
 * Address version 4 added {@code context}, refused and refusing the same way (the wire-up request
 * carries the connector's address, so a version-4 acceptor refuses a version-3 connector naming
 * {@code wireup.sender.address.version}): without the bump a version-3 reader would have read the
 * context as the port, link layer, LID and GID, and a version-4 reader those fields as the context.
 *
 * <h2>Region payload</h2> (the plugin's part of an IPC handle of a chunk of the verbs memory provider)
 * <pre>
 * field             encoding   rule on decode
 * version           u8         2 (1 until 2026-12-07: a payload without context)
 * context           16 bytes   the exporter's device context ({@code context} of its transports' addresses): an
 *                              endpoint does RMA only on regions of its peer's context, since a remote key is
 *                              valid only in the protection domain it was registered in
 * address           u64        not 0
 * length            u64        &gt; 0, address + length not past the end of the address space
 * rkey              u32
 * </pre>
 *
 * <p>Region version 2 added {@code context}. A version-1 payload (an older exporter's handle) is
 * refused naming both versions, as an older process refuses a version-2 one: read otherwise, a
 * version-1 payload would have been too short, refused as truncated naming no version, and a
 * version-2 one read by a version-1 process would have taken the context for the address.
 */
final class WireFormat {

    static final int ADDRESS_VERSION = 4;
    static final int TOKEN_LENGTH = 16;
    /** The bytes of a device context's identity, {@code context} in an address and a region payload. */
    static final int CONTEXT_LENGTH = 16;
    static final int WIREUP_MAGIC = 0x55575643;
    static final int WIREUP_VERSION = 2;
    static final int REQUEST = 1;
    static final int REPLY = 2;
    /** Longest wire-up message accepted. */
    static final int MAX_WIREUP = 256;
    static final int REGION_VERSION = 2;
    static final int MAX_QPN = 0xFF_FFFF;
    /** The most RDMA READs and atomics in flight a queue pair can be given: {@code max_rd_atomic} and {@code max_dest_rd_atomic} are u8. */
    static final int MAX_READ_DEPTH = 255;
    /**
     * Longest {@code wireup.host} in an address, a bound of the format: an IPv6 literal is at most
     * 45 characters (a scope id, which would follow, is refused: {@link #whyNoPeerConnectsTo}).
     */
    static final int MAX_HOST = 64;
    /**
     * An address's bytes before {@code wireup.host}: version, token, context, port, link layer, LID, GID, MTU, receive
     * buffers, buffer size, responder depth, remote atomics.
     */
    private static final int ADDRESS_FIXED = 1 + TOKEN_LENGTH + CONTEXT_LENGTH + 1 + 1 + 2 + 16 + 1 + 4 + 4 + 1 + 1;
    /** The shortest address: a host of one character ("1" is 0.0.0.1 to {@link InetAddress#ofLiteral}; "0", the wildcard, is refused). */
    static final int MIN_ADDRESS_LENGTH = ADDRESS_FIXED + 2 + 1 + 2;
    /** The longest address: a host of {@link #MAX_HOST} bytes. */
    static final int MAX_ADDRESS_LENGTH = ADDRESS_FIXED + 2 + MAX_HOST + 2;

    private WireFormat() {
    }

    /**
     * A decoded transport address; {@code context}: the identity of the transport's device context,
     * which the region payloads of its memory carry; {@code remoteAtomics}: whether the transport's
     * device does RDMA atomics, so that its regions take a peer's fetchAdd and compareAndSwap.
     */
    record Address(byte[] token, byte[] context, int port, int linkLayer, int lid, byte[] gid, int mtu, int receiveBuffers, int bufferSize,
                   int responderDepth, boolean remoteAtomics, String host, int tcpPort) {

        byte[] encode() {
            return new PayloadWriter().u8(ADDRESS_VERSION).bytes(token).bytes(context).u8(port).u8(linkLayer).u16(lid).bytes(gid).u8(mtu)
                    .u32(receiveBuffers).u32(bufferSize).u8(responderDepth).u8(remoteAtomics ? 1 : 0).string(host).u16(tcpPort).toByteArray();
        }

        static Address decode(PayloadReader r) {
            int version = r.u8("version");
            if (version != ADDRESS_VERSION) {
                throw r.invalid("version", FormatVersions.refusal("verbs address", version, ADDRESS_VERSION, "the peer"));
            }
            byte[] token = r.bytes("token", TOKEN_LENGTH);
            byte[] context = r.bytes("context", CONTEXT_LENGTH);
            int port = r.u8("port");
            if (port == 0) {
                throw r.invalid("port", "port 0: ports are numbered from 1");
            }
            int linkLayer = r.u8("link.layer");
            if (linkLayer > VerbsAbi.IBV_LINK_LAYER_ETHERNET) {
                throw r.invalid("link.layer", "link layer " + linkLayer + " is none of 0 (unspecified), 1 (InfiniBand), 2 (Ethernet)");
            }
            int lid = r.u16("lid");
            byte[] gid = r.bytes("gid", 16);
            int mtu = readMtu(r, "mtu");
            long receiveBuffers = r.u32("receive.buffers");
            if (receiveBuffers < 2 || receiveBuffers > 4096) {
                throw r.invalid("receive.buffers", receiveBuffers + " is outside [2, 4096]");
            }
            long bufferSize = r.u32("buffer.size");
            if (bufferSize < 4096 || bufferSize > VerbsConfig.MAX_BUFFER_SIZE) {
                throw r.invalid("buffer.size", bufferSize + " is outside [4096, 2^30]");
            }
            if (bufferSize % VerbsConfig.BUFFER_ALIGNMENT != 0) {
                throw r.invalid("buffer.size", bufferSize + " is not a multiple of " + VerbsConfig.BUFFER_ALIGNMENT + " (records hold "
                        + "aligned 8-byte fields): the peer must set " + VerbsConfig.BUFFER_SIZE.nameAndVariable()
                        + " to a multiple of " + VerbsConfig.BUFFER_ALIGNMENT);
            }
            int responderDepth = r.u8("responder.depth");
            if (responderDepth == 0) {
                // A peer whose device takes none refuses to open: a 0 here would reach ibv_modify_qp as max_rd_atomic, an EINVAL.
                throw r.invalid("responder.depth", "0 RDMA READs and atomics in flight, where a peer takes 1 to " + MAX_READ_DEPTH);
            }
            int remoteAtomics = r.u8("remote.atomics");
            if (remoteAtomics > 1) {
                throw r.invalid("remote.atomics", remoteAtomics + " is neither 0 (the device does no RDMA atomics) nor 1");
            }
            String host = r.string("wireup.host", MAX_HOST);
            if (!isIpLiteral(host)) {
                throw r.invalid("wireup.host", "'" + PayloadReader.printable(host) + "' is not an IPv4 or IPv6 address (names are never resolved)");
            }
            String unreachable = whyNoPeerConnectsTo(host);
            if (unreachable != null) {
                throw r.invalid("wireup.host", "'" + host + "' is " + unreachable + ": the peer announced an address of no host to connect to");
            }
            int tcpPort = r.u16("wireup.port");
            if (tcpPort == 0) {
                throw r.invalid("wireup.port", "TCP port 0");
            }
            r.end("wireup.port");
            return new Address(token, context, port, linkLayer, lid, gid, mtu, (int) receiveBuffers, (int) bufferSize, responderDepth, remoteAtomics == 1, host,
                    tcpPort);
        }
    }

    /**
     * A decoded wire-up message: the sender's queue pair and where it is; a request also carries
     * the connector's credit word and its own transport address ({@code senderAddress}, the bytes
     * its {@link VerbsTransport#address()} returns; {@code null} in a reply).
     */
    record Wireup(int kind, byte[] token, int qpn, int psn, int lid, byte[] gid, int mtu, long creditAddress, int creditKey,
                  byte[] senderAddress) {

        /** A reply: this side's queue pair, and nothing of a request's. */
        static Wireup reply(byte[] token, int qpn, int psn, int lid, byte[] gid, int mtu) {
            return new Wireup(REPLY, token, qpn, psn, lid, gid, mtu, 0, 0, null);
        }

        byte[] encode() {
            PayloadWriter w = new PayloadWriter().u32(WIREUP_MAGIC).u8(WIREUP_VERSION).u8(kind).bytes(token).u32(qpn).u32(psn)
                    .u16(lid).bytes(gid).u8(mtu);
            if (kind == REQUEST) {
                w.u64(creditAddress).u32(Integer.toUnsignedLong(creditKey)).u16(senderAddress.length).bytes(senderAddress);
            }
            byte[] body = w.toByteArray();
            return new PayloadWriter().u16(body.length).bytes(body).toByteArray();
        }

        /** Decodes the message body (after its length), expecting {@code kind}. */
        static Wireup decode(byte[] body, int expectedKind) {
            PayloadReader r = new PayloadReader(body, 0, body.length, "wireup.", "Conduit verbs wire-up message");
            long magic = r.u32("magic");
            if (magic != WIREUP_MAGIC) {
                throw r.invalid("magic", "0x" + Long.toHexString(magic) + " is not a Conduit verbs wire-up message (0x"
                        + Integer.toHexString(WIREUP_MAGIC) + "): something else listens on that port");
            }
            int version = r.u8("version");
            if (version != WIREUP_VERSION) {
                throw r.invalid("version", FormatVersions.refusal("verbs wire-up", version, WIREUP_VERSION, "the peer"));
            }
            int kind = r.u8("kind");
            if (kind != expectedKind) {
                throw r.invalid("kind", "kind " + kind + " where " + expectedKind + " (" + (expectedKind == REQUEST ? "request" : "reply")
                        + ") was expected");
            }
            byte[] token = r.bytes("token", TOKEN_LENGTH);
            long qpn = r.u32("qpn");
            if (qpn == 0 || qpn > MAX_QPN) {
                throw r.invalid("qpn", "queue pair number " + qpn + " is outside [1, 2^24-1]");
            }
            long psn = r.u32("psn");
            if (psn > MAX_QPN) {
                throw r.invalid("psn", "packet sequence number " + psn + " has more than 24 bits");
            }
            int lid = r.u16("lid");
            byte[] gid = r.bytes("gid", 16);
            int mtu = readMtu(r, "mtu");
            long creditAddress = 0;
            int creditKey = 0;
            byte[] senderAddress = null;
            if (kind == REQUEST) {
                creditAddress = r.u64("credit.address");
                if (creditAddress == 0) {
                    throw r.invalid("credit.address", "null address");
                }
                creditKey = (int) r.u32("credit.rkey");
                senderAddress = readSenderAddress(r);
                r.end("sender.address");
            } else {
                r.end("mtu");
            }
            return new Wireup(kind, token, (int) qpn, (int) psn, lid, gid, mtu, creditAddress, creditKey, senderAddress);
        }

        /**
         * The connector's transport address: of a length an address can have, and one that
         * {@link Address#decode} accepts (its errors name {@code wireup.sender.address.<field>}),
         * since the acceptor hands it on as the address to answer the connection's messages at.
         * An address of another version is refused by its version whatever its length, an older
         * connector's being shorter (version 3, without {@code context}: 53 to 116 bytes).
         */
        private static byte[] readSenderAddress(PayloadReader r) {
            int length = r.u16("sender.address.length");
            byte[] address = r.bytes("sender.address", length);
            boolean thisVersion = length > 0 && (address[0] & 0xFF) == ADDRESS_VERSION;
            if (length == 0 || thisVersion && (length < MIN_ADDRESS_LENGTH || length > MAX_ADDRESS_LENGTH)) {
                throw r.invalid("sender.address", "an address of " + length + " bytes, where a verbs transport address has "
                        + MIN_ADDRESS_LENGTH + " to " + MAX_ADDRESS_LENGTH);
            }
            decodeSenderAddress(address);
            return address;
        }

        /** A request's {@link #senderAddress}, decoded: what the connector's transport announces of itself. */
        Address sender() {
            return decodeSenderAddress(senderAddress);
        }

        private static Address decodeSenderAddress(byte[] address) {
            return Address.decode(new PayloadReader(address, 0, address.length, "wireup.sender.address.", "Conduit verbs wire-up message"));
        }
    }

    /** The verbs part of an IPC handle: a registered chunk, and the device context it is registered in. */
    record Region(byte[] context, long address, long length, int rkey) {

        byte[] encode() {
            return new PayloadWriter().u8(REGION_VERSION).bytes(context).u64(address).u64(length).u32(Integer.toUnsignedLong(rkey)).toByteArray();
        }

        static Region decode(PayloadReader r) {
            int version = r.u8("version");
            if (version != REGION_VERSION) {
                throw r.invalid("version", FormatVersions.refusal("verbs region payload", version, REGION_VERSION, "the process that exported the region"));
            }
            byte[] context = r.bytes("context", CONTEXT_LENGTH);
            long address = r.u64("address");
            if (address == 0) {
                throw r.invalid("address", "null address");
            }
            long length = r.u64("length");
            if (length <= 0 || Long.compareUnsigned(address + length, address) < 0) {
                throw r.invalid("length", Long.toUnsignedString(length) + " bytes at 0x" + Long.toHexString(address) + " is not a range");
            }
            int rkey = (int) r.u32("rkey");
            r.end("rkey");
            return new Region(context, address, length, rkey);
        }
    }

    private static int readMtu(PayloadReader r, String field) {
        int mtu = r.u8(field);
        if (mtu < VerbsAbi.IBV_MTU_256 || mtu > VerbsAbi.IBV_MTU_4096) {
            throw r.invalid(field, "enum ibv_mtu " + mtu + " is none of 1 (256) .. 5 (4096)");
        }
        return mtu;
    }

    static boolean isIpLiteral(String host) {
        try {
            InetAddress.ofLiteral(host);
            return true;
        } catch (IllegalArgumentException e) {
            return false;
        }
    }

    /**
     * Why no peer can connect to {@code host}, an IP literal, as the wire-up listener of the host
     * that announces it, or {@code null} when one can: the wildcard, which listens on every
     * interface but, connected to, is the connector's own host; a multicast group, no host at all;
     * or a scoped IPv6 address, whose scope is an interface of the host that announces it and, taken
     * by the connector as one of its own, means nothing there, or another interface.
     */
    static String whyNoPeerConnectsTo(String host) {
        if (host.indexOf('%') >= 0) {
            return "a scoped IPv6 address, whose scope names an interface of the host that announces it and means nothing on a peer's";
        }
        InetAddress address = InetAddress.ofLiteral(host);
        if (address.isAnyLocalAddress()) {
            return "the wildcard address, which a peer connects to as its own host";
        }
        if (address.isMulticastAddress()) {
            return "a multicast group, not a host";
        }
        return null;
    }

    /** The IPv4 address of an IPv4-mapped GID ({@code ::ffff:a.b.c.d}, RoCE v2 over IPv4), or {@code null}. */
    static Inet4Address ipv4Of(byte[] gid) {
        for (int i = 0; i < 10; i++) {
            if (gid[i] != 0) {
                return null;
            }
        }
        if (gid[10] != (byte) 0xFF || gid[11] != (byte) 0xFF) {
            return null;
        }
        try {
            return (Inet4Address) InetAddress.getByAddress(Arrays.copyOfRange(gid, 12, 16));
        } catch (java.net.UnknownHostException e) {
            throw new AssertionError(e);
        }
    }
}
