package dev.conduit.shm;

import dev.conduit.linux.FileDescriptor;
import dev.conduit.linux.FileStatus;
import dev.conduit.linux.Libc;
import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.PayloadWriter;

import java.time.Instant;

/**
 * Which directory a worker's shared directory is, as its transport address carries it: the
 * directory's device and inode, and when it was made ({@code statx}'s {@code stx_btime}, to the
 * nanosecond) where its file system records that. The same directory, seen through any bind mount
 * and from any mount, PID, user or network namespace, gives the same three; another directory, on
 * this host or another, gives another device or inode, or another birth time.
 *
 * <p>Never a proof of reachability, and never asked whether a peer can be reached: a connect proves
 * that by opening what the peer published, as before. It words only the failure of a connect that
 * finds no lease ({@code ENOENT}): a lease gone from the very directory the address names is a peer
 * gone (its worker closed, or died and a Conduit reclaimed its files), a {@code PeerFailedException};
 * a lease not found in another directory is a peer this process cannot reach from its view of
 * {@code shared.dir}, and the message says so, naming both. The posix and memfd plugins' handle
 * payloads carry it for the same purpose: an import that finds no chunk file or fd server's socket
 * says whether it looked in the producer's directory. Device and inode alone do not tell a
 * directory of another host from this one (a tmpfs mounted at boot has inode 1 and a device number
 * from the same small range on every host), so where either side's file system records no birth
 * time (tmpfs before Linux 5.18) and the two agree on the rest, the connect cannot tell, and says
 * both causes as it did before addresses carried this.
 *
 * <p>Encoded as three {@code u64}: {@code directory.device}, {@code directory.inode},
 * {@code directory.birth} ({@link #writeTo}, {@link #read}).
 *
 * @param device     {@code st_dev} of the directory
 * @param inode      {@code st_ino} of the directory
 * @param birthNanos when it was made, in nanoseconds since the epoch, or {@link Libc#NO_BIRTH_TIME}
 */
public record DirectoryIdentity(long device, long inode, long birthNanos) {

    /** Its encoded length: three {@code u64}. */
    public static final int ENCODED_LENGTH = 24;

    /** What a comparison of a peer's directory with this process's can tell. */
    public enum Match {
        /** The same directory: device, inode and a recorded birth time agree. */
        SAME,
        /** Another directory: the device or the inode differ, or both birth times are recorded and differ. */
        OTHER,
        /** Device and inode agree, but a birth time is not recorded on one side: this host's directory, or another host's. */
        UNKNOWN
    }

    /** The identity of the directory {@code directory} holds open. */
    public static DirectoryIdentity of(Libc libc, FileDescriptor directory) {
        FileStatus status = libc.fstat(directory);
        return new DirectoryIdentity(status.dev(), status.inode(), libc.birthTimeNanos(directory));
    }

    /** Reads {@code directory.device}, {@code directory.inode} and {@code directory.birth}; any values are taken. */
    public static DirectoryIdentity read(PayloadReader reader) {
        return new DirectoryIdentity(reader.u64("directory.device"), reader.u64("directory.inode"), reader.u64("directory.birth"));
    }

    /** Writes the three fields {@link #read} reads. */
    public PayloadWriter writeTo(PayloadWriter writer) {
        return writer.u64(device).u64(inode).u64(birthNanos);
    }

    /** What {@code peer}, the directory a peer's address or handle names, is to this one. */
    public Match compare(DirectoryIdentity peer) {
        if (device != peer.device || inode != peer.inode) return Match.OTHER;
        if (birthNanos == Libc.NO_BIRTH_TIME || peer.birthNanos == Libc.NO_BIRTH_TIME) return Match.UNKNOWN;
        return birthNanos == peer.birthNanos ? Match.SAME : Match.OTHER;
    }

    /**
     * What to do when two processes look in different directories: set {@code keys} (as
     * {@code "shared.dir (CONDUIT_SHARED_DIR)"}) in each to the path at which it sees one.
     */
    public static String oneDirectoryRemedy(String keys) {
        return "Set " + keys + " in each process to the path at which it sees one directory (a host directory bind-mounted into a "
                + "container; a container's /dev/shm is its own unless the host's is mounted there)";
    }

    /** For a message: "device 0:26, inode 1, made 2026-12-05T18:05:47.710433752Z". */
    public String describe() {
        String made = birthNanos == Libc.NO_BIRTH_TIME ? "its birth time not recorded"
                : "made " + Instant.ofEpochSecond(Math.floorDiv(birthNanos, 1_000_000_000L), Math.floorMod(birthNanos, 1_000_000_000L));
        return "device " + FileStatus.major(device) + ":" + FileStatus.minor(device) + ", inode " + Long.toUnsignedString(inode) + ", " + made;
    }
}
