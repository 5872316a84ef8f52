package dev.conduit.it;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/** The project's Markdown documents that the documentation tests read: README, examples/README and every docs/*.md. */
final class ProjectDocuments {

    /** The source tree's root: this module's parent, where Maven runs its tests. */
    static final Path ROOT = Path.of(System.getProperty("user.dir")).resolve("..").normalize();

    private ProjectDocuments() {
    }

    static List<Path> all() throws IOException {
        List<Path> documents = new ArrayList<>(List.of(ROOT.resolve("README.md"), ROOT.resolve("examples/README.md")));
        try (Stream<Path> docs = Files.list(ROOT.resolve("docs"))) {
            docs.filter(p -> p.toString().endsWith(".md")).sorted().forEach(documents::add);
        }
        return documents;
    }
}
