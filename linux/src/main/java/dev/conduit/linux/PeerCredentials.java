package dev.conduit.linux;

/**
 * The process at the other end of a Unix socket, as the kernel recorded it when the connection
 * was made ({@code SO_PEERCRED}, see {@link Libc#peerCredentials}).
 *
 * <p>Used by the memfd plugin and the shared-memory transport to refuse peers of other users
 * before handing out descriptors, and in diagnostics. The pid is as seen from this process's PID
 * namespace: {@code 0} if the peer lives in a namespace this one cannot see, so never use it as
 * an identity (Conduit uses origin ids and tokens for that).
 *
 * @param pid the peer's process id in this PID namespace, or 0
 * @param uid the peer's effective user id (unsigned)
 * @param gid the peer's effective group id (unsigned)
 */
public record PeerCredentials(int pid, int uid, int gid) {}
