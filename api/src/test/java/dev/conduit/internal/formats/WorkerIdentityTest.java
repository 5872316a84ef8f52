package dev.conduit.internal.formats;

import dev.conduit.WorkerAddress;
import dev.conduit.internal.worker.AddressFormat;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

class WorkerIdentityTest {

    private static final AddressFormat.Entry POSIX = new AddressFormat.Entry("posix", new byte[] {1, 2, 3});
    private static final AddressFormat.Entry MEMFD = new AddressFormat.Entry("memfd", new byte[] {4, 5});

    private static WorkerAddress address(long id, AddressFormat.Entry... entries) {
        return WorkerAddress.fromBytes(AddressFormat.encode(id, ~id, List.of(entries)));
    }

    /** Bytes that differ and name one worker: what its connect reaches it by, or its id, is the same. */
    @Test
    void addressesOfOtherBytesNameOneWorkerWhenTheyShareItsIdOrATransportsAddress() {
        WorkerAddress worker = address(7, MEMFD, POSIX);

        assertThat(WorkerIdentity.sameWorker(worker, address(7, MEMFD, POSIX))).as("the same bytes").isTrue();
        assertThat(WorkerIdentity.sameWorker(worker, address(7, POSIX, MEMFD))).as("its entries in another order").isTrue();
        assertThat(WorkerIdentity.sameWorker(worker, address(8, POSIX))).as("another id, one of its entries").isTrue();
        assertThat(WorkerIdentity.sameWorker(worker, address(8, new AddressFormat.Entry("zz", new byte[] {9}), MEMFD)))
                .as("another id, an entry of a plugin it lacks besides one of its own").isTrue();
        assertThat(WorkerIdentity.sameWorker(worker, address(7, new AddressFormat.Entry("posix", new byte[] {9}))))
                .as("its id, another posix address").isTrue();
    }

    @Test
    void addressesOfAnotherIdAndOtherTransportAddressesNameAnotherWorker() {
        WorkerAddress worker = address(7, MEMFD, POSIX);

        assertThat(WorkerIdentity.sameWorker(worker, address(8, new AddressFormat.Entry("posix", new byte[] {1, 2, 3, 0})))).isFalse();
        assertThat(WorkerIdentity.sameWorker(worker, address(8, new AddressFormat.Entry("memfd", new byte[] {1, 2, 3})))).as(
                "posix's address under memfd").isFalse();
        assertThat(WorkerIdentity.sameWorker(worker, WorkerAddress.fromBytes(AddressFormat.encode(7, 7, List.of(new AddressFormat.Entry(
                "posix", new byte[] {9})))))).as("an id whose high half alone is its own").isFalse();
    }
}
