package dev.conduit.it;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The tables of the README and docs/ render as written: every row has as many cells as its header
 * (a '|' inside a cell, code included, is written "\|"), and no row goes on over a line that does
 * not start with '|', which Markdown renders as a row of its own. Such rows showed their text cut
 * into the wrong cells (tools.md's --shared-dir, guarantees.md's O_EXCL|O_NOFOLLOW until 2026-12-04),
 * and the tests that read key and option tables (ConfigKeysDocumentedTest, the tools'
 * OptionsDocumentedTest) read a row by its cells.
 */
class MarkdownTablesTest {

    private static final Pattern CELL_SEPARATOR = Pattern.compile("(?<!\\\\)\\|");
    private static final Pattern DELIMITER_ROW = Pattern.compile("^\\|[-:| ]+\\|?$");

    @Test
    void everyTableRowIsOneLineWithTheCellsOfItsHeader() throws IOException {
        Path root = ProjectDocuments.ROOT;
        List<Path> documents = ProjectDocuments.all();
        assertThat(documents).as("the documents read").hasSizeGreaterThan(5);

        List<String> broken = new ArrayList<>();
        int rowsRead = 0;
        for (Path document : documents) {
            List<String> lines = Files.readAllLines(document);
            String name = root.relativize(document).toString();
            boolean inCode = false;
            int headerCells = -1;
            for (int i = 0; i < lines.size(); i++) {
                String line = lines.get(i).strip();
                if (line.startsWith("```")) {
                    inCode = !inCode;
                    headerCells = -1;
                    continue;
                }
                if (inCode) continue;
                if (!line.startsWith("|")) {
                    if (headerCells >= 0 && !line.isEmpty()) {
                        broken.add(name + ":" + (i + 1) + " goes on a table row over a line that does not start with '|'");
                    }
                    headerCells = -1;
                    continue;
                }
                int cells = cells(line);
                if (headerCells < 0) {
                    headerCells = cells;
                } else if (!DELIMITER_ROW.matcher(line).matches()) {
                    rowsRead++;
                    if (cells != headerCells) {
                        broken.add(name + ":" + (i + 1) + " has " + cells + " cells where its header has " + headerCells
                                + " (write a '|' inside a cell as \\|)");
                    }
                }
            }
        }
        assertThat(rowsRead).as("table rows read").isGreaterThan(100);
        assertThat(broken).as("table rows that do not render as written").isEmpty();
    }

    private static int cells(String row) {
        String inner = row.substring(1, row.endsWith("|") && !row.endsWith("\\|") ? row.length() - 1 : row.length());
        return CELL_SEPARATOR.split(inner, -1).length;
    }
}
