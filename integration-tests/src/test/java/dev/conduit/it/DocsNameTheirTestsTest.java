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
 * The documents back what they say with the tests they name ({@code Class#method}, or
 * {@code #method} of the class named before it), and name the API or code a statement rests on the
 * same way (docs/guarantees.md a test for each promise); a reader looks it up to see what is
 * checked. A test renamed after a document was written leaves a name that finds nothing:
 * {@code ReceiveQueueTest#manyThreadsSendingLoseNothing} did in guarantees.md until 2026-12-06.
 */
class DocsNameTheirTestsTest {

    private static final Pattern QUALIFIED = Pattern.compile("`([A-Z][A-Za-z0-9]*)#([a-zA-Z0-9_]+)`");
    private static final Pattern BARE = Pattern.compile("`#([a-zA-Z0-9_]+)`");
    // A declaration: a return type (a word, a generic's '>' or an array's ']') before the name. Calls
    // after return, new or throw match too, which only lets a name pass that some source uses.
    private static final Pattern DECLARED = Pattern.compile("[\\w>\\]]\\s+([a-zA-Z0-9_]+)\\s*\\(");

    @Test
    void everyTestAndMethodTheDocumentsNameExists() throws IOException {
        Path root = ProjectDocuments.ROOT;
        List<Path> documents = ProjectDocuments.all();

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
        for (Path document : documents) {
            String text = Files.readString(document);
            String where = root.relativize(document) + ": ";
            Matcher qualified = QUALIFIED.matcher(text);
            while (qualified.find()) {
                if (qualified.group(1).equals("Class")) continue; // a document's own "Class#method"
                named++;
                Set<String> methods = byClass.get(qualified.group(1));
                if (methods == null) {
                    missing.add(where + qualified.group() + ": no class " + qualified.group(1));
                } else if (!methods.contains(qualified.group(2))) {
                    missing.add(where + qualified.group() + ": " + qualified.group(1) + " has no method " + qualified.group(2));
                }
            }
            Matcher bare = BARE.matcher(text);
            while (bare.find()) {
                named++;
                if (!anywhere.contains(bare.group(1))) missing.add(where + bare.group() + ": no such method in any source");
            }
        }
        assertThat(named).as("tests named").isGreaterThan(500);
        assertThat(missing).as("tests and methods the documents name that do not exist").isEmpty();
    }
}
