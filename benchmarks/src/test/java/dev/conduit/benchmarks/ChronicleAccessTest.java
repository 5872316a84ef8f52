package dev.conduit.benchmarks;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A Chronicle benchmark in a JVM without Chronicle's flags, as this test JVM is (the build's test
 * options, {@code conduit.test.jvm.args}, grant native access only): it fails before Chronicle
 * loads, naming each flag it lacks and where a {@code -jvmArgsAppend} must repeat them.
 */
class ChronicleAccessTest {

    @Test
    void aJvmWithoutChroniclesFlagsIsToldWhichAndWhere() {
        assertThat(ChronicleAccess.missing()).containsExactly("--add-opens=java.base/java.lang.reflect=ALL-UNNAMED",
                "--add-exports=java.base/sun.nio.ch=ALL-UNNAMED", "--add-exports=java.base/jdk.internal.ref=ALL-UNNAMED");
        assertThatThrownBy(() -> ChronicleAccess.require(ChronicleViewBenchmark.class)).isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("ChronicleViewBenchmark needs Chronicle Bytes' flags, and this JVM lacks "
                        + "--add-opens=java.base/java.lang.reflect=ALL-UNNAMED --add-exports=java.base/sun.nio.ch=ALL-UNNAMED "
                        + "--add-exports=java.base/jdk.internal.ref=ALL-UNNAMED: a -jvmArgsAppend on JMH's command line replaces")
                .hasMessageContaining("docs/performance.md, \"Running\"");
    }
}
