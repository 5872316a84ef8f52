package dev.conduit.it.process;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.FileInputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The harness's leak check, which the fault peers print as {@code descriptors-leaked}: a
 * descriptor open when the first look was taken and closed since is no leak (a count took it for
 * one freed, and reported -1, or hid a real leak of one); a descriptor opened since is one, also
 * where it took a number freed meanwhile. Only this test's files are looked at: the test JVM's
 * other threads may open and close descriptors of their own meanwhile.
 */
class OpenResourcesTest {

    @TempDir
    Path directory;

    @Test
    void aDescriptorClosedSinceTheFirstLookIsNoLeakAndOneOpenedSinceIsOne() throws Exception {
        Path transient_ = Files.writeString(directory.resolve("held-for-a-moment"), "x");
        Path leaked = Files.writeString(directory.resolve("left-open"), "x");
        Map<Integer, String> before;
        try (FileInputStream held = new FileInputStream(transient_.toFile())) {
            before = OpenResources.descriptorsOfThisProcess();
            assertThat(before).containsValue(transient_.toString());
        }
        assertThat(openedSinceIn(before)).as("the descriptor closed since the first look").isEmpty();

        // Most often at the number the closed descriptor had (the lowest free one), which the comparison tells apart by its target.
        try (FileInputStream kept = new FileInputStream(leaked.toFile())) {
            assertThat(openedSinceIn(before)).singleElement().asString().endsWith(" -> " + leaked);
        }
        assertThat(openedSinceIn(before)).isEmpty();
    }

    private List<String> openedSinceIn(Map<Integer, String> before) {
        return OpenResources.openedSince(before).stream().filter(d -> d.contains(directory.toString())).toList();
    }
}
