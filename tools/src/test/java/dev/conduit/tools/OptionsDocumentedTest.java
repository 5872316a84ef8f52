package dev.conduit.tools;

import dev.conduit.spi.ConfigKey;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.Model.PositionalParamSpec;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * docs/tools.md documents the {@code conduit} command picocli defines: every subcommand has a line in the
 * synopsis, every option that is not hidden a row in an option table (and its subcommand's synopsis names it),
 * every option and argument the tables or the synopsis name exists, and the default an option's help states is
 * the value its field starts with and is in its row.
 *
 * <p>An option table is one whose header's first cell is {@code option}. Its {@code where} column says which
 * commands a row is for ({@code everywhere}: {@code conduit} and its subcommands; {@code subcommands}; or the
 * subcommands named); a table without one is for the subcommand of its section ({@code ## `conduit perf`}).
 */
class OptionsDocumentedTest {

    private static final Pattern CELL_SEPARATOR = Pattern.compile("(?<!\\\\)\\|");
    private static final Pattern OPTION_NAME = Pattern.compile("(?<![\\w-])--?[A-Za-z][\\w-]*");
    private static final Pattern SUBCOMMAND_SECTION = Pattern.compile("^## `conduit (\\w+)`");
    /** A one-word default at the end of a sentence of an option's help: "Default: 30s." */
    private static final Pattern STATED_DEFAULT = Pattern.compile("Default: (\\S+)\\.(?:\\s|$)");

    /** A row of an option table: the commands it is for, the option names and argument labels it names, its text. */
    private record Row(int line, Set<String> commands, Set<String> names, String text) {
    }

    private static final CommandSpec CONDUIT = new CommandLine(new ConduitCommand()).getCommandSpec();

    /** {@code conduit} and the subcommands that have options of their own ({@code help} is picocli's). */
    private static Map<String, CommandSpec> commands() {
        Map<String, CommandSpec> commands = new LinkedHashMap<>();
        commands.put("conduit", CONDUIT);
        CONDUIT.subcommands().forEach((name, line) -> {
            if (!(line.getCommand() instanceof CommandLine.HelpCommand)) commands.put(name, line.getCommandSpec());
        });
        return commands;
    }

    private static List<String> toolsMd() throws IOException {
        return Files.readAllLines(Path.of(System.getProperty("user.dir")).resolve("../docs/tools.md").normalize());
    }

    @Test
    void everyOptionHasARowInAnOptionTableAndEveryRowNamesAnOptionThatExists() throws IOException {
        List<Row> rows = optionRows(toolsMd());
        assertThat(rows).as("option tables in docs/tools.md").isNotEmpty();
        for (Map.Entry<String, CommandSpec> command : commands().entrySet()) {
            Set<String> defined = new TreeSet<>();
            for (OptionSpec option : command.getValue().options()) {
                if (!option.hidden()) defined.addAll(Arrays.asList(option.names()));
            }
            for (PositionalParamSpec parameter : command.getValue().positionalParameters()) {
                if (!parameter.hidden()) defined.add(parameter.paramLabel());
            }
            Set<String> documented = new TreeSet<>();
            for (Row row : rows) {
                if (row.commands().contains(command.getKey())) documented.addAll(row.names());
            }
            assertThat(documented).as("the options and arguments docs/tools.md's tables give '%s' (left: documented, "
                    + "right: defined by picocli)", command.getKey()).isEqualTo(defined);
        }
    }

    @Test
    void theSynopsisHasALineForEverySubcommandNamingEveryOptionOfItAndNoOtherOption() throws IOException {
        Map<String, String> synopsis = synopsis(toolsMd());
        Set<String> subcommands = new LinkedHashSet<>(CONDUIT.subcommands().keySet());
        subcommands.add("conduit");
        assertThat(synopsis.keySet()).as("the commands of the synopsis in docs/tools.md").isEqualTo(subcommands);
        for (Map.Entry<String, CommandSpec> command : commands().entrySet()) {
            String text = synopsis.get(command.getKey());
            Set<String> named = names(text);
            for (OptionSpec option : command.getValue().options()) {
                // -h and -V are everywhere: the table says so once rather than every subcommand's synopsis line.
                if (option.hidden() || (command.getValue() != CONDUIT && (option.usageHelp() || option.versionHelp()))) continue;
                assertThat(named).as("the synopsis of '%s' names %s", command.getKey(), String.join(" or ", option.names()))
                        .containsAnyOf(option.names());
            }
            Set<String> defined = new TreeSet<>();
            command.getValue().options().forEach(o -> defined.addAll(Arrays.asList(o.names())));
            assertThat(defined).as("the options the synopsis of '%s' names exist", command.getKey()).containsAll(named);
        }
    }

    @Test
    void theDefaultAnOptionsHelpStatesIsTheOneItHasAndTheOneItsRowSays() throws IOException {
        List<Row> rows = optionRows(toolsMd());
        int checked = 0;
        for (Map.Entry<String, CommandSpec> command : commands().entrySet()) {
            for (OptionSpec option : command.getValue().options()) {
                String help = String.join(" ", option.description());
                Object initial = option.initialValue();
                if (initial != null && !(initial instanceof Boolean) && !(initial instanceof Collection<?>)
                        && !(initial instanceof Map<?, ?>)) {
                    assertThat(help).as("the help of %s states the value its field starts with", option.longestName())
                            .contains("Default: " + text(initial) + ".");
                }
                Matcher stated = STATED_DEFAULT.matcher(help);
                if (!stated.find()) continue;
                Row row = rows.stream().filter(r -> r.commands().contains(command.getKey()) && r.names().contains(option.longestName()))
                        .findFirst().orElseThrow(() -> new AssertionError("no row for " + option.longestName()));
                assertThat(row.text().replace("`", "").toLowerCase())
                        .as("docs/tools.md:%d, the row of %s, says its default, %s", row.line(), option.longestName(), stated.group(1))
                        .contains("default").contains(stated.group(1).toLowerCase());
                checked++;
            }
        }
        assertThat(checked).as("options whose help states a one-word default").isGreaterThanOrEqualTo(7);
    }

    /** How an option's help writes a value: a duration as a configuration key does, an enum constant in lower case. */
    private static String text(Object value) {
        if (value instanceof Duration duration) return ConfigKey.durationText(duration);
        if (value instanceof Enum<?> constant) return constant.name().toLowerCase();
        return value.toString();
    }

    /** The rows of every option table. */
    private static List<Row> optionRows(List<String> lines) {
        List<Row> rows = new ArrayList<>();
        String section = null;
        List<String> header = null;
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i).strip();
            Matcher heading = SUBCOMMAND_SECTION.matcher(line);
            if (heading.find()) section = heading.group(1);
            else if (line.startsWith("## ")) section = null;
            if (!line.startsWith("|")) {
                header = null;
                continue;
            }
            List<String> cells = cells(line);
            if (header == null) {
                header = cells.getFirst().equals("option") ? cells : List.of();
                i++; // the |---| line
                continue;
            }
            if (header.isEmpty()) continue;
            int where = header.indexOf("where");
            Set<String> commands = where < 0 ? Set.of(String.valueOf(section)) : commandsOf(cells.get(where));
            String first = cells.getFirst().replace("`", "");
            Set<String> names = names(first);
            if (names.isEmpty()) names = Set.of(first.replace("...", "").strip()); // an argument, by its label: TEST...
            rows.add(new Row(i + 1, commands, names, line));
        }
        return rows;
    }

    private static Set<String> commandsOf(String where) {
        Set<String> subcommands = new LinkedHashSet<>(commands().keySet());
        subcommands.remove("conduit");
        return switch (where) {
            case "everywhere" -> commands().keySet();
            case "subcommands" -> subcommands;
            default -> {
                Set<String> named = new LinkedHashSet<>();
                for (String part : where.split(",")) named.add(part.replace("`", "").strip());
                assertThat(subcommands).as("the subcommands of a where cell, '%s'", where).containsAll(named);
                yield named;
            }
        };
    }

    /** The synopsis block of "Commands and options": each command's lines, by the command's name. */
    private static Map<String, String> synopsis(List<String> lines) {
        int start = lines.indexOf("## Commands and options");
        assertThat(start).as("docs/tools.md has a section 'Commands and options'").isNotNegative();
        int open = start + 1;
        while (!lines.get(open).startsWith("```")) open++;
        Map<String, String> commands = new LinkedHashMap<>();
        String current = null;
        for (int i = open + 1; !lines.get(i).startsWith("```"); i++) {
            String line = lines.get(i);
            if (line.startsWith("conduit ")) {
                String word = line.split("\\s+")[1];
                current = word.startsWith("[") ? "conduit" : word;
                commands.put(current, line);
            } else {
                commands.merge(current, " " + line, String::concat);
            }
        }
        return commands;
    }

    private static Set<String> names(String text) {
        Set<String> names = new TreeSet<>();
        // Short options bundled in a synopsis: [-hV] is -h and -V.
        Matcher bundle = Pattern.compile("\\[-(\\w{2,})]").matcher(text);
        while (bundle.find()) bundle.group(1).chars().forEach(c -> names.add("-" + (char) c));
        Matcher m = OPTION_NAME.matcher(text.replaceAll("\\[-\\w{2,}]", ""));
        while (m.find()) names.add(m.group());
        return names;
    }

    private static List<String> cells(String line) {
        String inner = line.substring(1, line.endsWith("|") ? line.length() - 1 : line.length());
        return Arrays.stream(CELL_SEPARATOR.split(inner, -1)).map(String::strip).toList();
    }
}
