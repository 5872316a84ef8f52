package dev.conduit.benchmarks;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class JmhChartTest {

    /**
     * The empty result a failed, stopped or mistyped run leaves (benchmarks/run.sh's default file) is said to be one: it was
     * reported as "not a JMH JSON result: java.lang.IllegalArgumentException: JSON: unexpected end at offset 0".
     */
    @Test
    void anEmptyResultIsSaidToBeTheTraceOfARunThatDidNotEndWell(@TempDir Path dir) throws IOException {
        Path result = Files.createFile(dir.resolve("jmh-result.json"));
        Path chart = dir.resolve("jmh.png");
        assertThatThrownBy(() -> JmhChart.draw(result, chart))
                .isInstanceOf(IOException.class)
                .hasMessage(result + " is empty: the JMH run that wrote it failed, was stopped, or matched no benchmark "
                        + "(JMH empties the file as it starts and writes the results at its end); run the benchmarks again");
        assertThat(chart).doesNotExist();
    }
}
