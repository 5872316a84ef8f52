package dev.conduit.it;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * docs/guarantees.md backs each promise with a test it names ({@code Class#method}, or
 * {@code #method} of the class named before it), and the API or code a promise rests on the same
 * way; a reader looks it up to see what is checked. A test renamed after the document was written leaves a name that finds nothing:
 * {@code ReceiveQueueTest#manyThreadsSendingLoseNothing} did until 2026-12-06.
 */
class GuaranteesNameTheirTestsTest {

    private static final Pattern QUALIFIED = Pattern.compile("`([A-Z][A-Za-z0-9]*)#([a-zA-Z0-9_]+)`");
    private static final Pattern BARE = Pattern.compile("`#([a-zA-Z0-9_]+)`");
    // A declaration: a return type (a word, a generic's '>' or an array's ']') before the name. Calls
    // after return, new or throw match too, which only lets a name pass that some source uses.
    private static final Pattern DECLARED = Pattern.compile("[\\w>\\]]\\s+([a-zA-Z0-9_]+)\\s*\\(");

    @Test
    void everyTestTheGuaranteesNameExists() throws IOException {
        Path root = Path.of(System.getProperty("user.dir")).resolve("..").normalize();
        String guarantees = Files.readString(root.resolve("docs/guarantees.md"));

        // Methods declared per class (by file name), and in every source: a bare #method follows
        // its class in prose that the document does not always make the previous backtick.
        Map<String, Set<String>> byClass = new HashMap<>();
        Set<String> anywhere = new HashSet<>();
        try (Stream<Path> files = Files.walk(root)) {
            for (Path file : files.filter(p -> p.toString().endsWith(".java"))
                    .filter(p -> !root.relativize(p).toString().contains("target/")).toList()) {
                String name = file.getFileName().toString();
                Set<String> methods = byClass.computeIfAbsent(name.substring(0, name.length() - 5), k -> new HashSet<>());
                Matcher declared = DECLARED.matcher(Files.readString(file));
                while (declared.find()) {
                    methods.add(declared.group(1));
                    anywhere.add(declared.group(1));
                }
            }
        }

        List<String> missing = new ArrayList<>();
        int named = 0;
        Matcher qualified = QUALIFIED.matcher(guarantees);
        while (qualified.find()) {
            if (qualified.group(1).equals("Class")) continue; // the document's own "Class#method"
            named++;
            Set<String> methods = byClass.get(qualified.group(1));
            if (methods == null) {
                missing.add(qualified.group() + ": no class " + qualified.group(1));
            } else if (!methods.contains(qualified.group(2))) {
                missing.add(qualified.group() + ": " + qualified.group(1) + " has no method " + qualified.group(2));
            }
        }
        Matcher bare = BARE.matcher(guarantees);
        while (bare.find()) {
            named++;
            if (!anywhere.contains(bare.group(1))) missing.add(bare.group() + ": no such method in any source");
        }
        assertThat(named).as("tests named").isGreaterThan(200);
        assertThat(missing).as("tests and methods docs/guarantees.md names that do not exist").isEmpty();
    }
}
