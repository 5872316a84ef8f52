package dev.conduit.tck;

import dev.conduit.spi.ConduitPlugin;
import dev.conduit.spi.MessageSink;
import org.junit.jupiter.api.Test;
import org.junit.platform.testkit.engine.EngineTestKit;
import org.junit.platform.testkit.engine.Events;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.channels.AsynchronousServerSocketChannel;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.platform.engine.discovery.DiscoverySelectors.selectMethod;

/**
 * The transport suite's descriptor check (2026-12-07) fails a test for every descriptor opened
 * during it and open after the close, but not for what the JDK opens on a first use and keeps for
 * the JVM's life. A transport built on the JDK's asynchronous channels in their default group
 * (AsynchronousServerSocketChannel.open()) closes every channel it opened, yet the first such open
 * in the JVM starts the group's event port (an epoll instance and its wake-up pipe), which no plugin
 * can close; its threads are the JDK's (InnocuousThread), which the thread check rightly does not
 * count. Until openWhatTheJdkKeepsOpen opened that group too (the day the check came), such a
 * correct transport failed its first test, named a leak (when no test before it in the JVM had
 * opened an asynchronous channel).
 */
class TckDescriptorCheckOfTheJdksOwnTest {

    /** Listens on an asynchronous server channel of the default group, opened with the transport and closed by its close. */
    public static final class ListensAsynchronously extends LoopbackPlugin {
        @Override
        LoopbackTransport newTransport(long id, MessageSink sink) {
            AsynchronousServerSocketChannel listener;
            try {
                listener = AsynchronousServerSocketChannel.open().bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
            return new LoopbackTransport(id, sink) {
                @Override
                public void close() {
                    super.close();
                    try {
                        listener.close();
                    } catch (IOException e) {
                        throw new UncheckedIOException(e);
                    }
                }
            };
        }
    }

    /** The transport suite on {@link ListensAsynchronously}. */
    public static final class ListensAsynchronouslySuite extends TransportContract {
        @Override
        protected ConduitPlugin newPlugin() {
            return new ListensAsynchronously();
        }
    }

    @Test
    void aTransportThatClosesEveryAsynchronousChannelItOpenedPassesTheDescriptorCheck() {
        Events tests = EngineTestKit.engine("junit-jupiter")
                .selectors(selectMethod(ListensAsynchronouslySuite.class, "deliversEveryMessageOnceInOrder"))
                .execute()
                .testEvents();
        tests.failed().list().forEach(event -> event.getPayload(org.junit.platform.engine.TestExecutionResult.class)
                .flatMap(org.junit.platform.engine.TestExecutionResult::getThrowable).ifPresent(Throwable::printStackTrace));
        tests.assertStatistics(stats -> stats.started(1).succeeded(1).failed(0));
    }
}
