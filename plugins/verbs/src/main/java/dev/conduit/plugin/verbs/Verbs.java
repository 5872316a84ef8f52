package dev.conduit.plugin.verbs;

import dev.conduit.linux.ErrnoException;

import java.lang.foreign.MemorySegment;
import java.util.List;

/**
 * The calls of {@code libibverbs} this plugin makes, in Java types. {@link FfmVerbs} is the one
 * implementation over the library; tests of the probe's logic use a double (which is not a device).
 *
 * <p>Failures are {@link ErrnoException}s naming the verbs call, the errno and the device, as
 * {@code ibv_open_device(rxe0): EACCES (Permission denied)}.
 *
 * <p>Every {@code close} here ({@code ibv_close_device}, {@code ibv_dealloc_pd},
 * {@code ibv_dereg_mr}, {@code ibv_destroy_*}) is thread-safe and a no-op once it succeeded; one
 * that failed leaves its object open, still held on the device, and a later close tries the call
 * again: the transport keeps a connection's teardown that failed and runs it again at its liveness
 * looks and in its close ({@link Teardown#retry}), and only then frees the memory the device may
 * write into. The close of a queue pair, completion queue or channel waits for a call of its data path
 * under way on another thread (a post, modify, poll, notification request or event taken), and
 * from its start, whether its destroy then succeeds or not, those calls throw
 * {@link IllegalStateException} without reaching the library. So does the close of a protection
 * domain for a registration or queue pair creation in it, and that of a completion queue for a
 * queue pair creation on it.
 */
interface Verbs {

    /** The library these calls go to, as it was named to {@code dlopen} ({@code libibverbs.so.1}). */
    String library();

    /**
     * The names of the RDMA devices the library finds ({@code ibv_get_device_list}), in its order.
     *
     * @throws ErrnoException when the list cannot be read, e.g. {@code ENOSYS} when the kernel has
     *                        no verbs support ({@code /sys/class/infiniband_verbs} is missing)
     */
    List<String> deviceNames();

    /**
     * Opens the device {@code name} ({@code ibv_open_device}).
     *
     * @throws ErrnoException           when it cannot be opened ({@code EACCES} on {@code /dev/infiniband/uverbs*})
     * @throws IllegalArgumentException when no device has that name
     */
    Device open(String name);

    /** An open device context. Not thread-safe, but for {@link #takeAsyncEvent} and {@link #close}. */
    interface Device extends AutoCloseable {

        /** {@code ibv_query_device}. */
        DeviceAttributes attributes();

        /** {@code ibv_query_port} of port {@code port} (1-based). */
        PortAttributes port(int port);

        /** {@code ibv_query_gid}: entry {@code index} of the GID table of port {@code port}, 16 bytes. */
        byte[] gid(int port, int index);

        /** {@code ibv_alloc_pd}. */
        ProtectionDomain allocateProtectionDomain();

        /** {@code ibv_create_comp_channel}. */
        CompletionChannel createCompletionChannel();

        /** {@code ibv_create_cq} with room for {@code entries} completions, notifying {@code channel} (or none). */
        CompletionQueue createCompletionQueue(int entries, CompletionChannel channel);

        /**
         * Takes one asynchronous event of the context if one is pending, without waiting
         * ({@code ibv_get_async_event} on the context's {@code async_fd}, made non-blocking when the
         * device was opened), and acknowledges it ({@code ibv_ack_async_event}) once it is copied
         * out: {@code ibv_destroy_qp} and {@code ibv_destroy_cq} wait until every event taken of
         * their object is acknowledged, so an event kept unacknowledged would hang their close.
         * Thread-safe.
         *
         * @return the event, or {@code null} when none is pending
         * @throws ErrnoException when the events cannot be read (other than {@code EAGAIN})
         */
        AsyncEvent takeAsyncEvent();

        /** {@code ibv_close_device}. */
        @Override
        void close();
    }

    /** A protection domain: memory registered in it is reachable through the queue pairs created in it. */
    interface ProtectionDomain extends AutoCloseable {

        /**
         * {@code ibv_reg_mr} of {@code memory} (native, stays valid until the region is closed)
         * with {@code access} ({@code IBV_ACCESS_*}).
         *
         * @param less what registering less is to the caller, the remedy beside a higher locked-memory limit when the
         *             device could not pin the memory: fewer buffers of a transport, fewer chunks of a pool
         */
        MemoryRegion register(MemorySegment memory, int access, String less);

        /** {@code ibv_create_qp}: a reliable-connected queue pair in {@code RESET}, every send signaled. */
        QueuePair createQueuePair(CompletionQueue sendQueue, CompletionQueue receiveQueue, int maxSendRequests, int maxReceiveRequests);

        /** {@code ibv_dealloc_pd}. */
        @Override
        void close();
    }

    /** A registered memory region ({@code struct ibv_mr}). */
    interface MemoryRegion extends AutoCloseable {
        /** The registered memory. */
        MemorySegment memory();

        int localKey();

        int remoteKey();

        /** {@code ibv_dereg_mr}: one that failed leaves the region registered (the device may write into it) and open. */
        @Override
        void close();
    }

    /** A completion channel: a file descriptor that becomes readable when an armed queue has a completion. */
    interface CompletionChannel extends AutoCloseable {
        /** The descriptor, non-blocking, owned by the library (closed by {@link #close()}). */
        int fd();

        /**
         * Takes one event if there is one ({@code ibv_get_cq_event} on the non-blocking
         * descriptor) and acknowledges it ({@code ibv_ack_cq_events}).
         *
         * @return whether an event was taken
         */
        boolean takeEvent();

        /** {@code ibv_destroy_comp_channel}. */
        @Override
        void close();
    }

    /** A completion queue. */
    interface CompletionQueue extends AutoCloseable {
        /** {@code ibv_poll_cq} (through the context's ops table): fills {@code into} from its start, returns how many. */
        int poll(Completions into);

        /** {@code ibv_req_notify_cq} (ops table): the next completion signals the channel. */
        void requestNotification();

        /** {@code ibv_destroy_cq}. */
        @Override
        void close();
    }

    /** What {@link CompletionQueue#poll} read: the fields of {@code struct ibv_wc} the transport uses, in arrays reused for every poll. */
    final class Completions {
        final long[] requestId;
        final int[] status;
        final int[] opcode;
        final int[] vendorError;
        final int[] byteLength;
        final int[] queuePair;

        Completions(int capacity) {
            requestId = new long[capacity];
            status = new int[capacity];
            opcode = new int[capacity];
            vendorError = new int[capacity];
            byteLength = new int[capacity];
            queuePair = new int[capacity];
        }

        int capacity() {
            return requestId.length;
        }
    }

    /**
     * An asynchronous event of a device context ({@code struct ibv_async_event}): its
     * {@code type} ({@code IBV_EVENT_*}, {@link VerbsAbi#eventType}) and what it is about, by type
     * ({@link VerbsAbi#isQueuePairEvent}, {@link VerbsAbi#isPortEvent}): the queue pair (one this
     * device created, or {@code null} for one it does not know), the completion queue
     * ({@code IBV_EVENT_CQ_ERR}), or the port; the others are 0 or {@code null}.
     */
    record AsyncEvent(int type, QueuePair queuePair, CompletionQueue completionQueue, int port) {

        @Override
        public String toString() {
            return VerbsAbi.eventType(type) + (queuePair != null ? " on qp " + queuePair.number() : "")
                    + (VerbsAbi.isPortEvent(type) ? " on port " + port : "");
        }
    }

    /** Where a queue pair sends to: what the peer's wire-up message said. */
    record PeerPath(int queuePair, int packetSequence, int lid, byte[] gid, int mtu, boolean global) {
    }

    /** A reliable-connected queue pair. Work requests are posted through the context's ops table, as verbs.h's inline functions do. */
    interface QueuePair extends AutoCloseable {
        /** The queue pair number ({@code qp_num}). */
        int number();

        /** The completion queue its sends complete on, given at its creation: which transport's queue pair it is. */
        CompletionQueue sendQueue();

        /** {@code ibv_modify_qp} to {@code INIT} on {@code port}, allowing the remote {@code access} ({@code IBV_ACCESS_*}). */
        void toInit(int port, int access);

        /**
         * {@code ibv_modify_qp} to {@code RTR} towards {@code peer}, with source GID {@code gidIndex},
         * taking up to {@code responderDepth} RDMA READs and atomics of the peer in flight
         * ({@code max_dest_rd_atomic}, 1..255: at most the device's {@code max_qp_rd_atom}).
         */
        void toReadyToReceive(PeerPath peer, int port, int gidIndex, int responderDepth);

        /**
         * {@code ibv_modify_qp} to {@code RTS} with send PSN {@code packetSequence}, keeping up to
         * {@code initiatorDepth} RDMA READs and atomics in flight ({@code max_rd_atomic}, 1..255: at
         * most the device's {@code max_qp_init_rd_atom} and the peer's responder depth).
         */
        void toReadyToSend(int packetSequence, int initiatorDepth);

        /** {@code ibv_post_recv} of one buffer: {@code length} bytes at {@code offset} in {@code region}. */
        void postReceive(long requestId, MemoryRegion region, long offset, int length);

        /**
         * {@code ibv_post_send} of one signaled work request: {@code opcode} ({@code IBV_WR_*}) on
         * {@code length} bytes at {@code offset} in {@code region}; {@code remoteAddress} and
         * {@code remoteKey} for RDMA and atomics; {@code compareAdd} and {@code swap} for atomics.
         */
        void postSend(long requestId, int opcode, MemoryRegion region, long offset, int length, long remoteAddress, int remoteKey,
                      long compareAdd, long swap);

        /** {@code ibv_destroy_qp}. */
        @Override
        void close();
    }

    /**
     * The fields of {@code struct ibv_device_attr} the plugin reports and uses: {@code maxQpRdAtom}
     * is {@code max_qp_rd_atom}, the RDMA READs and atomics a queue pair takes in flight as their
     * responder, and {@code maxQpInitRdAtom} is {@code max_qp_init_rd_atom}, those it keeps in flight
     * as their initiator.
     */
    record DeviceAttributes(String firmware, long nodeGuid, int vendorId, int vendorPartId, int maxQp, int maxCqe,
                            long maxMrSize, int atomicCap, int physicalPorts, int maxQpRdAtom, int maxQpInitRdAtom) {
    }

    /**
     * The fields of {@code struct ibv_port_attr} the plugin reports and checks: {@code maxMessageSize}
     * is {@code max_msg_sz}, the most bytes one work request moves on the port (unsigned).
     */
    record PortAttributes(int state, int maxMtu, int activeMtu, int gidTableLength, int lid, int physicalState,
                          int linkLayer, long maxMessageSize) {

        boolean isActive() {
            return state == VerbsAbi.IBV_PORT_ACTIVE;
        }
    }
}
