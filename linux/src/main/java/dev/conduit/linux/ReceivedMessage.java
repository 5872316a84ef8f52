package dev.conduit.linux;

import java.util.List;

/**
 * What one {@link Libc#recvmsg recvmsg} returned: how many bytes arrived, and the descriptors
 * passed with them by {@code SCM_RIGHTS}, now owned by the caller.
 *
 * <p>Used by the memfd plugin's importer, which receives a chunk's memfd after presenting a
 * token. A message whose descriptors did not all fit ({@code MSG_CTRUNC}), or that carried more
 * than the caller asked for, is reported with {@link #controlTruncated()}; the descriptors that
 * did arrive were closed at once ({@link #closedFds()}) so that none leaks and none is mistaken
 * for the one that was meant.
 *
 * @param bytes            bytes received; 0 at end of stream (or, on a seqpacket or datagram
 *                         socket, for a message of no bytes: {@link #isEndOfStream()}); {@link Libc#WOULD_BLOCK} if a
 *                         non-blocking socket had nothing to read
 * @param fds              the descriptors received, to be closed by the caller
 * @param controlTruncated whether descriptors were lost: the kernel truncated the control data,
 *                         or more arrived than the caller made room for
 * @param closedFds        how many received descriptors were closed because of the truncation
 */
public record ReceivedMessage(int bytes, List<FileDescriptor> fds, boolean controlTruncated, int closedFds) {

    /** The result of a non-blocking receive that found nothing. */
    public static final ReceivedMessage WOULD_BLOCK = new ReceivedMessage(Libc.WOULD_BLOCK, List.of(), false, 0);

    public ReceivedMessage {
        fds = List.copyOf(fds);
    }

    /**
     * Whether the peer closed its end: no bytes and no descriptors. On a stream socket only: there a
     * send of no bytes delivers nothing (nor the descriptors it carried), so 0 bytes is the end of
     * stream and nothing else. On a seqpacket or datagram socket a message of no bytes reads the
     * same, and this cannot tell it from the peer's close. Conduit receives with {@code recvmsg} on
     * stream sockets only: the memfd plugin's fd protocol, whose importer's connect refuses a socket
     * of another type under the producer's name ({@code EPROTOTYPE}).
     */
    public boolean isEndOfStream() {
        return bytes == 0 && fds.isEmpty() && !controlTruncated;
    }

    /** Whether a non-blocking socket had nothing to read. */
    public boolean wouldBlock() {
        return bytes == Libc.WOULD_BLOCK;
    }
}
