package dev.conduit.shm;

import dev.conduit.spi.Config;
import dev.conduit.spi.ConfigKey;

import java.time.Duration;
import java.util.List;

/**
 * The settings of a shared-memory transport. Each plugin declares the keys under its own name
 * ({@code memfd.queue.size}, {@code posix.queue.size}, ...), so the two can be tuned apart.
 *
 * @param queueCapacity     ring bytes of a worker's receive queue (a power of two)
 * @param inlineMaximum     largest header + payload copied into the queue; larger payloads go through a bounce ring
 * @param bounceCapacity    bytes of a connection's bounce ring (a power of two): the largest payload
 * @param livenessInterval  how often peers' leases are checked
 * @param heartbeatTimeout  how long a receiver may make no progress while a sender waits on it before it is declared hung
 * @param unblockTimeout    how long a record may stay claimed but uncommitted before its sender's liveness is checked (never
 *                          taken, by the owner the queue's tail word names); a dead one's is skipped or taken back
 * @param inboundMaximum    connections from senders a worker keeps at once
 * @param inboundBounceMaximum bytes of senders' bounce rings a worker maps at once
 */
public record ShmTransportConfig(long queueCapacity, long inlineMaximum, long bounceCapacity, Duration livenessInterval,
                                 Duration heartbeatTimeout, Duration unblockTimeout, long inboundMaximum,
                                 long inboundBounceMaximum) {

    /**
     * The largest receive queue: record lengths are 32-bit. A power of two, so that rounding up stays within it. A sender
     * refuses an address that gives a longer one ({@code ShmTransport#connect}).
     */
    static final long MAX_QUEUE_SIZE = 1L << 30;
    /**
     * The largest bounce ring, and so the largest payload: one that must wait in the endpoint's
     * local queue, in a heap array of at most 2 GiB (the runtime's PendingQueue), still fits there
     * with its header. A power of two, so that rounding up stays within it. (Without a bound, a
     * ring past 2 GiB took payloads the local queue then refused, one of a TiB or more was refused
     * by every receiver, which maps at most 1 TiB, and one past 2^62 rounded up to a negative limit.)
     */
    static final long MAX_BOUNCE_SIZE = 1L << 30;

    /** The keys for {@code plugin} (declared in this order; {@code conduit info} sorts them by name). */
    public static List<ConfigKey<?>> keys(String plugin) {
        return List.of(queueSize(plugin), inlineMax(plugin), bounceSize(plugin), liveness(plugin), heartbeat(plugin), unblock(plugin),
                inboundMax(plugin), inboundBounceMax(plugin));
    }

    public static ShmTransportConfig read(Config config, String plugin) {
        return new ShmTransportConfig(
                config.get(queueSize(plugin)),
                config.get(inlineMax(plugin)),
                config.get(bounceSize(plugin)),
                config.get(liveness(plugin)),
                config.get(heartbeat(plugin)),
                config.get(unblock(plugin)),
                config.get(inboundMax(plugin)),
                config.get(inboundBounceMax(plugin)));
    }

    /** The key that bounds a worker's connections from senders, for messages that name it. */
    static String inboundMaxKey(String plugin) {
        return inboundMax(plugin).name();
    }

    /** The key that bounds the bounce rings a worker maps, for messages that name it. */
    static String inboundBounceMaxKey(String plugin) {
        return inboundBounceMax(plugin).name();
    }

    /** What raises an endpoint's largest payload, the sender's bounce ring ({@code TransportEndpoint.maxPayloadSizeRemedy}). */
    static String bounceSizeRemedy(String plugin) {
        return bounceSize(plugin).nameAndVariable() + " of this process, the sender, sets it (rounded up to a power of two); at most "
                + (MAX_BOUNCE_SIZE >> 30) + "g";
    }

    private static ConfigKey<Long> queueSize(String p) {
        return ConfigKey.powerOfTwoBytes(p + ".queue.size", 2L << 20, 64L << 10, MAX_QUEUE_SIZE,
                "Bytes of each worker's receive queue, shared by all its senders. "
                        + "When it is full, senders queue messages locally. The whole queue is written when the worker is "
                        + "created, so it takes this much memory from the start.");
    }

    private static ConfigKey<Long> inlineMax(String p) {
        return ConfigKey.bytes(p + ".inline.max", 8L << 10, 0,
                "Largest header plus payload copied into the receive queue (at most about half the peer's queue.size); a larger "
                        + "payload is copied once into the connection's bounce ring and read there by the receiver.");
    }

    private static ConfigKey<Long> bounceSize(String p) {
        return ConfigKey.powerOfTwoBytes(p + ".bounce.size", 4L << 20, 64L << 10, MAX_BOUNCE_SIZE,
                "Bytes of each connection's bounce ring, allocated on the first large "
                        + "message: the largest payload an endpoint can send. It holds the payloads the receiver has not released "
                        + "yet, so a ring of exactly the largest payload takes one at a time and the next waits in the local queue "
                        + "(heap): 2x the payload for payloads sent back to back. At most 1g, the largest message an endpoint's "
                        + "local queue also holds when the peer has no room for it.");
    }

    private static ConfigKey<Duration> liveness(String p) {
        // At least 1 ms, as keepalive.interval: an idle await wakes every interval and looks at every peer's lease.
        return ConfigKey.duration(p + ".liveness.interval", Duration.ofMillis(20), Duration.ofMillis(1),
                "How often a worker checks that its peers still hold their leases; a dead peer is detected within about "
                        + "this long while the worker progresses.");
    }

    private static ConfigKey<Duration> heartbeat(String p) {
        // At least 10 ms: a receiver asleep in await beats once a millisecond (HEAD_SLEEP_MAX_NANOS) and a sender looks once
        // per liveness interval, so a timeout near a millisecond fails a healthy sleeping receiver at a scheduling delay.
        return ConfigKey.duration(p + ".heartbeat.timeout", Duration.ofSeconds(10), Duration.ofMillis(10),
                "How long a peer that lives but makes no progress may keep a sender's messages waiting before its "
                        + "endpoint fails as hung. A peer beats at every progress() call, and at least every millisecond while "
                        + "it sleeps in await on a message it cannot read yet or while it keeps payloads; keep this above the "
                        + "longest its handlers, or its pauses between calls, take. At least 10ms.");
    }

    private static ConfigKey<Duration> unblock(String p) {
        return ConfigKey.duration(p + ".unblock.timeout", Duration.ofMillis(50),
                "How long a message claimed in the receive queue may stay uncommitted before the receiver checks whether "
                        + "its sender died mid-write, and skips it if so; space claimed but never taken is judged by the owner "
                        + "the queue's tail word names, and taken back once it is dead (a live sender's is waited for).");
    }

    private static ConfigKey<Long> inboundMax(String p) {
        return ConfigKey.integer(p + ".inbound.max", 4096, 1, 1 << 20,
                "Connections from senders each worker keeps at once (each holds a share of a lease watch and may map a "
                        + "bounce ring: one memory mapping, so keep well below vm.max_map_count). A connection beyond it is "
                        + "refused: progress() throws naming this key, none of its messages is delivered, and the sender's endpoint fails "
                        + "at its next liveness check.");
    }

    private static ConfigKey<Long> inboundBounceMax(String p) {
        return ConfigKey.bytes(p + ".inbound.bounce.max", 64L << 30, 1L << 20,
                "Bytes of senders' bounce rings each worker maps at once (address space, not memory: the rings are the "
                        + "senders'; a default ring is 4m and a 4k header). A ring beyond it is not mapped: progress() throws "
                        + "naming this key, its connection is refused (its later messages dropped too), and the sender's "
                        + "endpoint fails at its next liveness check.");
    }
}
