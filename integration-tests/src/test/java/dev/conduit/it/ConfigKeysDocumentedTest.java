package dev.conduit.it;

import dev.conduit.Conduit;
import dev.conduit.ConduitBuilder;
import dev.conduit.ConfigEntry;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The configuration keys the documentation lists are the keys the runtime and the real plugins
 * declare, with the defaults they have: every key {@code conduit info} shows has a row in a key
 * table of docs/runtime.md or docs/plugins.md, every row names a declared key, an environment
 * column names the key's variable, and a default column says the value the key has when nothing
 * sets it. The default is checked by the key's own parser: the documented text is set in a
 * builder and must resolve to the value the key has unset.
 *
 * <p>A key table is one whose header's first cell starts with {@code key} and that has a
 * {@code default} column; a header such as {@code key (`memfd.` or `posix.`)} says that each row
 * names a key of every one of those prefixes. A default cell starting with {@code unset} documents
 * a key without a default, one starting with {@code empty} an empty text or list.
 */
class ConfigKeysDocumentedTest {

    private static final List<String> DOCUMENTS = List.of("docs/runtime.md", "docs/plugins.md");
    /** The table cells: a '|' escaped as "\|" belongs to a cell. */
    private static final Pattern CELL_SEPARATOR = Pattern.compile("(?<!\\\\)\\|");
    private static final Pattern PREFIX = Pattern.compile("`([a-z][a-z0-9-]*\\.)`");
    /** A code span that sets a {@code conduit.} system property: group 1 is the key. */
    private static final Pattern SYSTEM_PROPERTY_SET = Pattern.compile("`-Dconduit\\.([a-z0-9.-]+)=");

    /** One row of a key table. */
    private record Row(String document, int line, String key, String environment, String defaultCell) {
        String where() {
            return document + ":" + line;
        }
    }

    @Test
    void everyDeclaredKeyIsDocumentedWithItsVariableAndDefaultAndEveryDocumentedKeyIsDeclared() throws IOException {
        List<Row> rows = new ArrayList<>();
        for (String document : DOCUMENTS) rows.addAll(keyRows(document));
        Map<String, List<Row>> documented = rows.stream().collect(Collectors.groupingBy(Row::key, LinkedHashMap::new, Collectors.toList()));

        Map<String, ConfigEntry> declared;
        try (Conduit conduit = Loading.isolatedBuilder().build()) {
            declared = conduit.configuration().stream()
                    .filter(e -> !e.owner().startsWith("it-")) // this module's test plugins, documented nowhere
                    .collect(Collectors.toMap(ConfigEntry::key, Function.identity(), (a, b) -> a, LinkedHashMap::new));
        }
        assertThat(declared.keySet()).as("the real plugins are found").contains("posix.dir", "memfd.allowed.uids",
                "devdax.devices", "verbs.device");

        List<String> undocumented = declared.values().stream().filter(e -> !documented.containsKey(e.key()))
                .map(e -> e.key() + " (declared by " + e.owner() + ")").toList();
        assertThat(undocumented).as("keys with no row in a key table of %s: add one with its default", DOCUMENTS).isEmpty();
        List<String> unknown = rows.stream().filter(r -> !declared.containsKey(r.key())).map(r -> r.key() + " at " + r.where()).toList();
        assertThat(unknown).as("documented keys that nothing declares").isEmpty();

        for (Row row : rows) {
            ConfigEntry entry = declared.get(row.key());
            if (row.environment() != null) {
                assertThat(row.environment()).as("environment variable of %s at %s", row.key(), row.where()).isEqualTo(entry.environment());
            }
            assertThat(entry.source()).as("%s resolved with no source setting it", row.key()).isEqualTo(ConfigEntry.Source.DEFAULT);
            if (row.defaultCell().startsWith("unset")) {
                assertThat(entry.value()).as("%s is documented unset at %s", row.key(), row.where()).isNull();
            }
        }

        // Each documented default, set in a builder, must resolve to the value the key has unset.
        ConduitBuilder builder = Loading.isolatedBuilder();
        Map<String, Row> set = new LinkedHashMap<>();
        for (Row row : rows) {
            if (row.defaultCell().startsWith("unset")) continue;
            Row before = set.putIfAbsent(row.key(), row);
            if (before != null) {
                assertThat(row.defaultCell()).as("default of %s at %s and at %s", row.key(), before.where(), row.where())
                        .isEqualTo(before.defaultCell());
                continue;
            }
            builder.set(row.key(), row.defaultCell().startsWith("empty") ? "" : row.defaultCell());
        }
        try (Conduit conduit = builder.build()) {
            for (ConfigEntry entry : conduit.configuration()) {
                Row row = set.get(entry.key());
                if (row == null) continue;
                assertThat(entry.value()).as("%s: the default documented at %s, '%s', is not the key's default",
                        entry.key(), row.where(), row.defaultCell()).isEqualTo(declared.get(entry.key()).value());
            }
        }
    }

    /**
     * Every system property a document gives to set (a code span {@code -Dconduit.K=...}) is a
     * key: a {@code conduit.*} property that is none is warned about as unknown by every Conduit
     * built from the JVM's properties. Until 2026-12-07 the fuzz module's switch was
     * {@code -Dconduit.fuzz=0}, which surefire passes on to the test JVM.
     */
    @Test
    void everySystemPropertyTheDocumentsSetIsADeclaredKey() throws IOException {
        Set<String> declared;
        try (Conduit conduit = Loading.isolatedBuilder().build()) {
            declared = conduit.configuration().stream().map(ConfigEntry::key).collect(Collectors.toSet());
        }
        List<String> notKeys = new ArrayList<>();
        for (Path document : ProjectDocuments.all()) {
            List<String> lines = Files.readAllLines(document);
            for (int i = 0; i < lines.size(); i++) {
                Matcher m = SYSTEM_PROPERTY_SET.matcher(lines.get(i));
                while (m.find()) {
                    if (!declared.contains(m.group(1))) {
                        notKeys.add("conduit." + m.group(1) + " at " + ProjectDocuments.ROOT.relativize(document) + ":" + (i + 1));
                    }
                }
            }
        }
        assertThat(notKeys).as("system properties the documents set that are no configuration key: name them outside 'conduit.'").isEmpty();
    }

    /** The rows of every key table in {@code document}, one per key a row names. */
    private static List<Row> keyRows(String document) throws IOException {
        List<String> lines = Files.readAllLines(Path.of(System.getProperty("user.dir")).resolve("..").resolve(document).normalize());
        List<Row> rows = new ArrayList<>();
        List<String> header = null;
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i).strip();
            if (!line.startsWith("|")) {
                header = null;
                continue;
            }
            List<String> cells = cells(line);
            if (header == null) {
                boolean keyTable = cells.getFirst().startsWith("key") && cells.contains("default");
                header = keyTable ? cells : List.of();
                i++; // the |---| line
                continue;
            }
            if (header.isEmpty()) continue;
            List<String> prefixes = new ArrayList<>();
            Matcher m = PREFIX.matcher(header.getFirst());
            while (m.find()) prefixes.add(m.group(1));
            if (prefixes.isEmpty()) prefixes.add("");
            String name = unquote(cells.getFirst().replace("(runtime)", ""));
            int environment = header.indexOf("environment");
            for (String prefix : prefixes) {
                rows.add(new Row(document, i + 1, prefix + name, environment < 0 ? null : unquote(cells.get(environment)),
                        unquote(cells.get(header.indexOf("default")))));
            }
        }
        return rows;
    }

    private static List<String> cells(String line) {
        String inner = line.substring(1, line.endsWith("|") ? line.length() - 1 : line.length());
        return Arrays.stream(CELL_SEPARATOR.split(inner, -1)).map(String::strip).toList();
    }

    private static String unquote(String cell) {
        return cell.replace("`", "").strip();
    }
}
