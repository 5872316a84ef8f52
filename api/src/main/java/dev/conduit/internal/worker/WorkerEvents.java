package dev.conduit.internal.worker;

import jdk.jfr.Category;
import jdk.jfr.DataAmount;
import jdk.jfr.Description;
import jdk.jfr.Event;
import jdk.jfr.Label;
import jdk.jfr.Name;
import jdk.jfr.StackTrace;

/** JFR events of workers: connects and endpoint failures. */
final class WorkerEvents {

    private WorkerEvents() {
    }

    @Name("dev.conduit.Connect")
    @Label("Connect")
    @Category({"Conduit", "Worker"})
    @Description("A worker connected to a peer worker, or failed to through every transport they share")
    @StackTrace(false)
    static final class Connect extends Event {
        @Label("Peer") String peer;
        @Label("Transport") @Description("The transport that connected; empty when none did") String transport;
        @Label("Transports Tried") int tried;
        @Label("Failures") @Description("Why each transport tried before, or instead of, the one that connected failed") String failures;
    }

    @Name("dev.conduit.EndpointFailure")
    @Label("Endpoint Failure")
    @Category({"Conduit", "Worker"})
    @Description("An endpoint's peer died, hung or broke the connection; the messages waiting locally were discarded")
    @StackTrace(false)
    static final class EndpointFailure extends Event {
        @Label("Transport") String transport;
        @Label("Peer") String peer;
        @Label("Reason") String reason;
        @Label("Discarded Messages") long discardedMessages;
        @Label("Discarded Bytes") @DataAmount long discardedBytes;
    }
}
