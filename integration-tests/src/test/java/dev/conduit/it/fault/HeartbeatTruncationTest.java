package dev.conduit.it.fault;

import com.sun.jdi.Bootstrap;
import com.sun.jdi.Method;
import com.sun.jdi.ReferenceType;
import com.sun.jdi.VirtualMachine;
import com.sun.jdi.connect.AttachingConnector;
import com.sun.jdi.connect.Connector;
import com.sun.jdi.event.BreakpointEvent;
import com.sun.jdi.event.ClassPrepareEvent;
import com.sun.jdi.event.Event;
import com.sun.jdi.event.EventSet;
import com.sun.jdi.event.VMDisconnectEvent;
import com.sun.jdi.request.BreakpointRequest;
import com.sun.jdi.request.ClassPrepareRequest;
import com.sun.jdi.request.EventRequest;
import dev.conduit.it.process.ChildJvm;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A peer's posix queue file truncated between a sender's liveness check's first reads of the
 * queue and its read of the peer's heartbeat (the check of a sender that waits on a full queue):
 * the sender's endpoint fails, saying the queue was truncated, and its progress() goes on. The
 * heartbeat was read outside the check's handling of a fault on mapped memory, so the JDK's
 * InternalError came out of progress(). The instant is made exact with a breakpoint (the JVM's
 * debugger interface, JDI) on {@code ReceiveQueue.heartbeat} called from the check: the test
 * truncates the file while the child's thread stands there.
 */
class HeartbeatTruncationTest {

    private static final Pattern LISTENING = Pattern.compile("Listening for transport dt_socket at address: (\\d+)");
    private static final String EOF = new String("<eof>"); // identity marks the end of the child's output

    @TempDir
    Path shared;

    @Test
    void aQueueTruncatedJustBeforeTheLivenessCheckReadsTheHeartbeatFailsTheEndpoint() throws Exception {
        List<String> command = ChildJvm.javaCommand(HeartbeatTruncationPeer.class,
                List.of("-agentlib:jdwp=transport=dt_socket,server=y,suspend=y,address=127.0.0.1:0"), List.of(shared.toString()));
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        BlockingQueue<String> lines = new LinkedBlockingQueue<>();
        Thread.ofPlatform().daemon().start(() -> {
            try (BufferedReader reader = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line; (line = reader.readLine()) != null; ) lines.add(line);
            } catch (Exception e) {
                lines.add("reading failed: " + e);
            } finally {
                lines.add(EOF);
            }
        });
        List<String> output = new ArrayList<>();
        try {
            Matcher port = awaitLine(lines, output, LISTENING);
            VirtualMachine vm = attach(Integer.parseInt(port.group(1)));
            boolean truncated = truncateAtTheCheck(vm, output, lines);
            assertThat(truncated).as("stopped at the check's read of the heartbeat: " + output).isTrue();
            for (String line; (line = lines.poll(60, TimeUnit.SECONDS)) != EOF; ) {
                assertThat(line).as("hang guard: the child's output ended, " + output).isNotNull();
                output.add(line);
            }
            assertThat(process.waitFor(60, TimeUnit.SECONDS)).as("hang guard").isTrue();
        } finally {
            process.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
        }
        String text = String.join("\n", output);
        assertThat(process.exitValue()).as(text).isZero();
        assertThat(text).contains("progress-B: ok", "alive: yes")
                .containsPattern("endpoint-to-A-failed: true: .*posix: the peer's receive queue or this connection's bounce ring was "
                        + "truncated by another process while mapped here")
                .doesNotContain("UNEXPECTED")
                .doesNotContain("A fatal error has been detected");
    }

    private static VirtualMachine attach(int port) throws Exception {
        AttachingConnector socket = Bootstrap.virtualMachineManager().attachingConnectors().stream()
                .filter(c -> c.name().equals("com.sun.jdi.SocketAttach")).findFirst().orElseThrow();
        Map<String, Connector.Argument> arguments = socket.defaultArguments();
        arguments.get("hostname").setValue("127.0.0.1");
        arguments.get("port").setValue(Integer.toString(port));
        return socket.attach(arguments);
    }

    /**
     * Runs the child until its thread calls {@code ReceiveQueue.heartbeat} from {@code ShmEndpoint.checkPeerOnce}, truncates
     * the queue files the child named there, and lets it go on without the debugger.
     */
    private static boolean truncateAtTheCheck(VirtualMachine vm, List<String> output, BlockingQueue<String> lines) throws Exception {
        ClassPrepareRequest prepare = vm.eventRequestManager().createClassPrepareRequest();
        prepare.addClassFilter("dev.conduit.shm.ReceiveQueue");
        prepare.enable();
        vm.resume();
        BreakpointRequest breakpoint = null;
        while (true) {
            EventSet events = vm.eventQueue().remove(TimeUnit.SECONDS.toMillis(60));
            assertThat(events).as("hang guard: no event from the child, " + output).isNotNull();
            for (Event event : events) {
                if (event instanceof ClassPrepareEvent prepared && breakpoint == null) {
                    ReferenceType queue = prepared.referenceType();
                    Method heartbeat = queue.methodsByName("heartbeat").getFirst();
                    breakpoint = vm.eventRequestManager().createBreakpointRequest(heartbeat.location());
                    breakpoint.setSuspendPolicy(EventRequest.SUSPEND_EVENT_THREAD);
                    breakpoint.enable();
                } else if (event instanceof BreakpointEvent hit && hit.thread().frame(1).location().method().name().equals("checkPeerOnce")) {
                    for (String line; (line = lines.poll()) != null; ) output.add(line);
                    List<Path> queues = output.stream().filter(l -> l.startsWith("queue-of-A: "))
                            .map(l -> Path.of(l.substring("queue-of-A: ".length()))).toList();
                    assertThat(queues).as(output.toString()).isNotEmpty();
                    for (Path queue : queues) {
                        try (FileChannel file = FileChannel.open(queue, StandardOpenOption.WRITE)) {
                            file.truncate(0);
                        }
                    }
                    vm.dispose(); // resumes every thread; the child goes on from the read
                    return true;
                } else if (event instanceof VMDisconnectEvent) {
                    return false;
                }
            }
            events.resume();
        }
    }

    private static Matcher awaitLine(BlockingQueue<String> lines, List<String> output, Pattern pattern) throws InterruptedException {
        while (true) {
            String line = lines.poll(60, TimeUnit.SECONDS);
            assertThat(line).as("hang guard: waiting for " + pattern + ", " + output).isNotNull().isNotSameAs(EOF);
            output.add(line);
            Matcher m = pattern.matcher(line);
            if (m.find()) return m;
        }
    }
}
