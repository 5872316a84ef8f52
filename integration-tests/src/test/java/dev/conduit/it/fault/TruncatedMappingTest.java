package dev.conduit.it.fault;

import dev.conduit.it.process.ChildJvm;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A hostile process truncates posix files that a Conduit process has mapped (SIGBUS on the next
 * access): the receive queue of a worker and a region written by RMA. The Conduit process
 * ({@link TruncationPeer}) must survive — also interpreted only, where an unguarded CAS would kill
 * the JVM — with a Conduit exception for each affected operation, the survivors unaffected, and no
 * file left.
 */
class TruncatedMappingTest {

    @TempDir
    Path shared;

    @ParameterizedTest(name = "JVM options: {0}")
    @ValueSource(strings = {"-XX:TieredStopAtLevel=1", "-Xint", "-XX:-TieredCompilation", "-XX:+TieredCompilation"})
    void truncationFailsOnlyTheAffectedEndpointOrOperation(String jvmOption) throws IOException {
        ChildJvm.Ended child = ChildJvm.runToEnd(TruncationPeer.class, List.of(jvmOption), List.of(shared.toString()));
        String output = child.output();
        assertThat(child.exitCode()).as(output).isZero();
        String sigbus = "was truncated by another process while mapped here, or lives on a full file system";
        assertThat(output)
                .contains("before: A 1, C 1")
                .containsPattern("put: ConduitException: posix: the peer's region .*" + "was truncated")
                .containsPattern("get: ConduitException: .*" + "was truncated")
                .containsPattern("cas: ConduitException: .*" + "was truncated")
                .containsPattern("fetch-add: ConduitException: .*" + "was truncated")
                .contains("rma-after-truncation: " + 10_000 + " ConduitException, others []")
                .contains("endpoint-to-A-failed-after-rma: false")
                .containsPattern("send-to-A: PeerFailedException: .*the peer's receive queue.*" + java.util.regex.Pattern.quote(sigbus))
                .contains("endpoint-to-A-failed: true")
                .containsPattern("progress-A: ConduitException: posix: this worker's receive queue.*" + java.util.regex.Pattern.quote(sigbus))
                .containsPattern("signal-A: ConduitException: posix: this worker's receive queue.*" + java.util.regex.Pattern.quote(sigbus))
                .contains("survivor-C-received: 2")
                .contains("files-left: 0")
                .contains("alive: yes")
                .doesNotContain("UNEXPECTED")
                .doesNotContain("A fatal error has been detected");
    }
}
