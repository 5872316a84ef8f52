package dev.conduit.plugin.verbs;

import dev.conduit.spi.Config;
import dev.conduit.spi.ConfigKey;

import java.time.Duration;
import java.util.List;

/**
 * The verbs plugin's configuration keys (environment names are the key in upper case with
 * {@code CONDUIT_} in front and {@code _} for {@code .}).
 *
 * <table class="striped">
 * <caption>Keys</caption>
 * <tr><th>key</th><th>default</th></tr>
 * <tr><td>{@code verbs.library}</td><td>{@code libibverbs.so.1}</td></tr>
 * <tr><td>{@code verbs.device}</td><td>the first device with an active port</td></tr>
 * <tr><td>{@code verbs.port}</td><td>0: the device's first active port</td></tr>
 * <tr><td>{@code verbs.gid.index}</td><td>-1: on RoCE the first IPv4-mapped GID of type RoCE v2, else 0</td></tr>
 * <tr><td>{@code verbs.wireup.address}</td><td>empty: the GID's IPv4 on RoCE, else the first non-loopback interface</td></tr>
 * <tr><td>{@code verbs.wireup.timeout}</td><td>5 s</td></tr>
 * <tr><td>{@code verbs.buffer.size}</td><td>8 KiB (4 KiB to 1 GiB, a multiple of 64)</td></tr>
 * <tr><td>{@code verbs.receive.buffers}</td><td>64</td></tr>
 * <tr><td>{@code verbs.send.buffers}</td><td>64</td></tr>
 * <tr><td>{@code verbs.liveness.interval}</td><td>20 ms</td></tr>
 * <tr><td>{@code verbs.heartbeat.timeout}</td><td>10 s</td></tr>
 * </table>
 */
final class VerbsConfig {

    static final ConfigKey<String> LIBRARY = ConfigKey.string("verbs.library", "libibverbs.so.1",
            "The libibverbs the plugin opens with dlopen: a file name searched the way the dynamic loader searches "
                    + "(LD_LIBRARY_PATH, ld.so.cache), or an absolute path. rdma-core's library is libibverbs.so.1 "
                    + "(Debian and Ubuntu package libibverbs1).")
            // dlopen("") opens the program itself, which then lacks every ibv_ function: refused here, by name.
            .withCheck("a library file name or an absolute path, e.g. libibverbs.so.1", library -> {
                if (library.isBlank()) {
                    throw new IllegalArgumentException("no library named: remove the setting for libibverbs.so.1, or name the library");
                }
            });

    static final ConfigKey<String> DEVICE = ConfigKey.string("verbs.device", "",
            "The RDMA device transports and memory use (a name ibv_devices lists, e.g. mlx5_0 or rxe0); empty: the first "
                    + "device with an active port.");

    static final ConfigKey<Long> PORT = ConfigKey.integer("verbs.port", 0, 0, 255,
            "The port of verbs.device (1-based); 0: its first active port.");

    static final ConfigKey<Long> GID_INDEX = ConfigKey.integer("verbs.gid.index", -1, -1, 255,
            "The source GID index for connections (show_gids lists them); -1: on RoCE the first IPv4-mapped GID whose "
                    + "type is RoCE v2 (routable over IP; sysfs gid_attrs/types says which), or the first IPv4-mapped one "
                    + "where the kernel does not say or the port has only RoCE v1 ones (with a WARNING); else 0.");

    static final ConfigKey<String> WIREUP_ADDRESS = ConfigKey.string("verbs.wireup.address", "",
            "The IP address of the TCP listener peers connect to to exchange queue-pair numbers (and that stays open as "
                    + "the liveness channel); empty: on RoCE the IPv4 address in the port's GID, else the first up, "
                    + "non-loopback interface's address (loopback when there is none). It is also what peers connect "
                    + "to: the wildcard (0.0.0.0, ::), multicast groups and scoped IPv6 addresses are refused.");

    static final ConfigKey<Duration> WIREUP_TIMEOUT = ConfigKey.duration("verbs.wireup.timeout", Duration.ofSeconds(5),
            "How long each step of the wire-up may take: the TCP connection to the peer's wire-up listener, the "
                    + "peer's reply (an endpoint not answered in time fails), the acceptor's wait for a connector's "
                    + "request and the write of its reply; also how long an endpoint's close waits for its sends to "
                    + "complete.");

    /** Buffers must be a multiple of this: each starts a record whose 8-byte fields must be aligned (and keeps to its own cache lines). */
    static final int BUFFER_ALIGNMENT = 64;

    /** The largest buffer: the wire-up carries it as a u32, and peers refuse one above it (WireFormat). */
    static final long MAX_BUFFER_SIZE = 1L << 30;

    // Bounded and checked by the key, so that a value out of range or not a multiple of 64 fails the build naming it, not
    // only the first worker's transport (or never, on a host without RDMA devices).
    static final ConfigKey<Long> BUFFER_SIZE = ConfigKey.bytes("verbs.buffer.size", 8L << 10, 4L << 10, MAX_BUFFER_SIZE,
            "The size of each registered send and receive buffer, a multiple of 64: messages up to it (less a 24-byte "
                    + "record header) take one SEND; larger ones are cut into several, reassembled by the receiver.")
            .withCheck("a size in bytes from 4096 to " + MAX_BUFFER_SIZE + " and a multiple of " + BUFFER_ALIGNMENT + ", e.g. 8k",
                    buffer -> {
                        if (buffer % BUFFER_ALIGNMENT != 0) {
                            long down = buffer / BUFFER_ALIGNMENT * BUFFER_ALIGNMENT;
                            throw new IllegalArgumentException(buffer + " bytes is not a multiple of " + BUFFER_ALIGNMENT + " (each buffer "
                                    + "starts a record with 8-byte fields, which must be aligned): such as " + down + " or "
                                    + (down + BUFFER_ALIGNMENT));
                        }
                    });

    static final ConfigKey<Long> RECEIVE_BUFFERS = ConfigKey.integer("verbs.receive.buffers", 64, 2, 4096,
            "Receive buffers posted per inbound connection: the sender's credits. The largest message is this many "
                    + "buffers or the sender's verbs.send.buffers, whichever is fewer (less their record headers).");

    static final ConfigKey<Long> SEND_BUFFERS = ConfigKey.integer("verbs.send.buffers", 64, 2, 4096,
            "Registered send buffers per endpoint (also the staging buffers of put and get), and its send-queue depth.");

    static final ConfigKey<Duration> LIVENESS_INTERVAL = ConfigKey.duration("verbs.liveness.interval", Duration.ofMillis(20),
            "How often progress and await look at the wire-up connections for the end of stream of dead peers (new "
                    + "peers are taken at once) and try again a connection's teardown that failed; await sleeps at most this long.");

    static final ConfigKey<Duration> HEARTBEAT_TIMEOUT = ConfigKey.duration("verbs.heartbeat.timeout", Duration.ofSeconds(10),
            "How long a peer's host may stay silent (crashed, powered off, network cut) before its connections fail: "
                    + "TCP keepalive on the wire-up connections, in whole seconds, at least 4 s and at most 131068s (36 h 24 min "
                    + "28 s, the longest Linux's keepalive counts: a longer value is shortened to it, with a WARNING), plus up to one "
                    + "verbs.liveness.interval. A peer whose process dies is noticed at once; one that lives but stops "
                    + "progressing is not detected by this (its kernel answers the probes).");

    static final List<ConfigKey<?>> KEYS = List.of(LIBRARY, DEVICE, PORT, GID_INDEX, WIREUP_ADDRESS, WIREUP_TIMEOUT, BUFFER_SIZE,
            RECEIVE_BUFFERS, SEND_BUFFERS, LIVENESS_INTERVAL, HEARTBEAT_TIMEOUT);

    private VerbsConfig() {
    }

    /**
     * The value of {@link #LIBRARY}, {@link #DEVICE} or {@link #WIREUP_ADDRESS} without the blanks
     * at its ends, as every kind of key but text drops them and devdax strips its device's alias: a
     * library path, a device name or an IP address never has one, so a blank there is a quoting
     * mistake ({@code CONDUIT_VERBS_DEVICE=" mlx5_0"} from an environment file), not part of it.
     */
    static String text(Config config, ConfigKey<String> key) {
        return config.get(key).strip();
    }
}
