package dev.conduit.internal.worker;

import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;

import static org.assertj.core.api.Assertions.assertThat;

/** What a transport hands the dispatcher comes from a peer: an id no handler can have included. */
class MessageDispatchTest {

    @Test
    void idsOutsideTheHandlersRangeAreCountedWithoutMemoryGrowingWithTheId() {
        MessageDispatch dispatch = new MessageDispatch(false);
        long before = retainedHeap();
        for (int id : new int[] {Integer.MAX_VALUE, 65536, -1, Integer.MIN_VALUE, 1 << 30}) {
            dispatch.onMessage(id, MemorySegment.NULL, 0, 0, MemorySegment.NULL, 0, 0);
        }
        // Remembering which ids were warned about by their value took 256 MiB for Integer.MAX_VALUE.
        assertThat(retainedHeap() - before).as("heap kept after the hostile ids").isLessThan(64L << 20);
        assertThat(dispatch.unhandled()).isEqualTo(5);
    }

    private static long retainedHeap() {
        Runtime runtime = Runtime.getRuntime();
        System.gc();
        return runtime.totalMemory() - runtime.freeMemory();
    }
}
