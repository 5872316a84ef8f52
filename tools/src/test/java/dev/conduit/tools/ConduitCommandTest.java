package dev.conduit.tools;

import dev.conduit.tools.CommandRunner.Result;
import dev.conduit.spi.ConduitException;
import org.junit.jupiter.api.Test;
import picocli.CommandLine.Command;

import java.io.BufferedWriter;
import java.io.PrintWriter;
import java.io.StringWriter;

import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** Argument parsing, exit codes, version and usage: what every subcommand shares. */
class ConduitCommandTest {

    private final CommandRunner conduit = CommandRunner.withPlugins(TestPlugin.alpha(), TestPlugin.beta());

    @Test
    void anUnknownOptionIsAUsageError() {
        Result result = conduit.run("info", "--no-such-option");

        assertThat(result.exitCode()).isEqualTo(ConduitCommand.EXIT_USAGE).isEqualTo(2);
        assertThat(result.err()).contains("Unknown option", "--no-such-option");
        assertThat(result.out()).isEmpty();
    }

    @Test
    void anUnknownSubcommandIsAUsageError() {
        Result result = conduit.run("inof");

        assertThat(result.exitCode()).isEqualTo(ConduitCommand.EXIT_USAGE);
        assertThat(result.err()).contains("inof");
    }

    @Test
    void aSettingWithoutAValueIsAUsageError() {
        Result result = conduit.run("info", "--set", "transports");

        assertThat(result.exitCode()).isEqualTo(ConduitCommand.EXIT_USAGE);
        assertThat(result.err()).contains("transports");
    }

    /**
     * A setting whose key is empty, also once its conduit. prefix is dropped, is a usage error that
     * says so and shows the form: until 2026-12-07 {@code --set =x} reached the builder and failed
     * with exit code 1 as "unknown config key ''".
     */
    @Test
    void aSettingWithAnEmptyKeyIsAUsageErrorShowingTheForm() {
        for (String setting : List.of("=x", "=", " =x", "conduit.=x")) {
            Result result = conduit.run("info", "--set", setting);

            assertThat(result.exitCode()).as(setting).isEqualTo(ConduitCommand.EXIT_USAGE);
            assertThat(result.err()).as(setting).contains("the key before '=' is empty in '" + setting.substring(0, setting.indexOf('='))
                    + "=...'", "KEY=VALUE, e.g. --set transports=memfd").doesNotContain("unknown config key");
            assertThat(result.out()).as(setting).isEmpty();
        }
    }

    /**
     * A bad selection given with --set says where it was set, and that --set is what Conduit calls
     * its builder: a user of the command never touched one (found by review).
     */
    @Test
    void aBadSelectionGivenWithSetSaysThatSetIsTheBuilder() {
        Result result = conduit.run("info", "--set", "transports=nope");

        assertThat(result.exitCode()).isEqualTo(ConduitCommand.EXIT_FAILED);
        assertThat(result.err()).contains("transports=nope (from the builder) names plugin 'nope'")
                .contains("(this command passes --set, and perf's -t, to the builder)");
    }

    @Test
    void aMalformedValueFailsWithAMessageNamingTheKeyAndNoStackTrace() {
        Result result = conduit.run("info", "--set", "probe.timeout=soon");

        assertThat(result.exitCode()).isEqualTo(ConduitCommand.EXIT_FAILED).isEqualTo(1);
        assertThat(result.err()).startsWith("conduit: ").contains("conduit.probe.timeout", "CONDUIT_PROBE_TIMEOUT", "'soon'")
                .doesNotContain("\tat ", "Exception");
        assertThat(result.out()).isEmpty();
    }

    @Test
    void aMalformedValueOfAPluginKeyNamesThatKey() {
        Result result = conduit.run("info", "-D", "alpha.depth=deep");

        assertThat(result.exitCode()).isEqualTo(ConduitCommand.EXIT_FAILED);
        assertThat(result.err()).contains("conduit.alpha.depth", "'deep'", "a whole number from 1 to 64");
    }

    @Test
    void anUnknownKeyFailsNamingTheNearestKnownOne() {
        Result result = conduit.run("info", "--set", "alpha.dept=3");

        assertThat(result.exitCode()).isEqualTo(ConduitCommand.EXIT_FAILED);
        assertThat(result.err()).contains("alpha.dept", "alpha.depth");
    }

    @Test
    void selectingAPluginThatWasNotFoundFailsListingThoseFound() {
        Result result = conduit.run("info", "--set", "transports=omega");

        assertThat(result.exitCode()).isEqualTo(ConduitCommand.EXIT_FAILED);
        assertThat(result.err()).contains("omega", "alpha", "beta");
    }

    @Test
    void verboseAddsTheStackTrace() {
        Result result = conduit.run("info", "--verbose", "--set", "probe.timeout=soon");

        assertThat(result.exitCode()).isEqualTo(ConduitCommand.EXIT_FAILED);
        assertThat(result.err()).contains("conduit.probe.timeout", "ConfigException", "\tat ");
    }

    /**
     * An Error out of a command (here the builder's, as a StackOverflowError or a LinkageError would come) is
     * reported as any failure is, naming it, with exit code 1: picocli's handler gets exceptions only, and the
     * Error went out of main as a raw stack trace.
     */
    @Test
    void anErrorIsReportedNamingItWithExitCodeOne() {
        Result result = conduit.runAlteringBuilder(1, b -> {
            throw new StackOverflowError("injected by the test");
        }, "info");

        assertThat(result.exitCode()).isEqualTo(ConduitCommand.EXIT_FAILED);
        assertThat(result.err()).isEqualTo("conduit: unexpected failure: java.lang.StackOverflowError: injected by the test"
                + System.lineSeparator() + "conduit: run again with --verbose for the stack trace" + System.lineSeparator());
    }

    @Test
    void verboseHasAShortForm() {
        Result result = conduit.run("info", "-v", "--set", "probe.timeout=soon");

        assertThat(result.err()).contains("\tat ");
    }

    @Test
    void settingsBelongToTheSubcommand() {
        Result result = conduit.run("--set", "transports=alpha", "info");

        assertThat(result.exitCode()).isEqualTo(ConduitCommand.EXIT_USAGE);
        assertThat(result.err()).contains("--set");
    }

    @Test
    void settingsApplyInEitherSpellingWithOrWithoutTheConduitPrefix() {
        Result result = conduit.run("info", "--set", "transports=alpha", "-Dconduit.probe.timeout=2s", "-D", "alpha.depth=8", "--json");

        assertThat(result.exitCode()).as(result.err()).isEqualTo(ConduitCommand.EXIT_OK);
        Map<String, Object> info = JsonParser.parseObject(result.out());
        assertThat(Json.entry(Json.list(info, "configuration"), "transports")).containsEntry("value", "alpha").containsEntry("source", "BUILDER");
        assertThat(Json.entry(Json.list(info, "configuration"), "probe.timeout")).containsEntry("value", "2s").containsEntry("source", "BUILDER");
        assertThat(Json.entry(Json.list(Json.plugin(info, "alpha"), "configuration"), "alpha.depth")).containsEntry("value", "8");
    }

    @Test
    void theLastValueOfARepeatedKeyWins() {
        Result result = conduit.run("info", "--set", "alpha.depth=8", "--set", "alpha.depth=9", "--json");

        Map<String, Object> alpha = Json.plugin(JsonParser.parseObject(result.out()), "alpha");
        assertThat(Json.entry(Json.list(alpha, "configuration"), "alpha.depth")).containsEntry("value", "9");
    }

    /**
     * A key given again in the other spelling, then again as at first, is still the last value
     * given: picocli keeps a repeated option's map entry where it was first put, so the builder
     * was given the plain spelling's last value first and the prefixed one after it, which won.
     */
    @Test
    void theLastValueOfAKeyWinsWhateverSpellingsItWasGivenIn() {
        Result result = conduit.run("info", "--set", "alpha.depth=8", "-Dconduit.alpha.depth=7", "--set", "alpha.depth=9", "--json");

        assertThat(result.exitCode()).as(result.err()).isEqualTo(ConduitCommand.EXIT_OK);
        Map<String, Object> alpha = Json.plugin(JsonParser.parseObject(result.out()), "alpha");
        assertThat(Json.entry(Json.list(alpha, "configuration"), "alpha.depth")).containsEntry("value", "9");
    }

    /**
     * Output that could not be written (a full disk, a pipe whose reader is gone) was a success:
     * PrintWriter, and System.out under it, only flag a failed write, so {@code conduit info --json
     * > info.json} on a full disk exited with 0 and left an empty or truncated file.
     */
    @Test
    void outputThatCannotBeWrittenIsAFailureNamingTheCause() {
        for (String[] args : List.of(new String[] {"info"}, new String[] {"info", "--json"}, new String[] {"--version"},
                new String[] {"info", "--help"})) {
            Result result = conduit.runWritingTo(new FullDisk(), args);

            assertThat(result.exitCode()).as(String.join(" ", args)).isEqualTo(ConduitCommand.EXIT_FAILED);
            assertThat(result.err()).as(String.join(" ", args))
                    .isEqualTo("conduit: cannot write to standard output: No space left on device; the output is incomplete"
                            + System.lineSeparator());
        }
    }

    /**
     * A command that fails after printing part of a line: that part reaches standard output before
     * the failure's message. Under the writer is a buffer, as over file descriptor 1 (the
     * OutputStreamWriter's encoder), and only a finished line was flushed, so the part was dropped
     * by System.exit (found by review).
     */
    @Test
    void aCommandThatFailsMidLineStillWritesWhatItPrinted() {
        StringWriter written = new StringWriter();
        StandardOutput out = new StandardOutput(new BufferedWriter(written));

        Result result = runFailing(out);

        assertThat(result.exitCode()).isEqualTo(ConduitCommand.EXIT_FAILED);
        assertThat(written.toString()).isEqualTo("a whole line" + System.lineSeparator() + "part of a line");
        assertThat(result.err()).isEqualTo("conduit: the command failed after printing" + System.lineSeparator());
    }

    /** ... and when that output could not be written, the failure to write is said as well: it was said only after a success. */
    @Test
    void aCommandThatFailsAfterOutputThatCouldNotBeWrittenSaysBoth() {
        Result result = runFailing(new StandardOutput(new FullDisk()));

        assertThat(result.exitCode()).isEqualTo(ConduitCommand.EXIT_FAILED);
        assertThat(result.err()).isEqualTo("conduit: cannot write to standard output: No space left on device; the output is incomplete"
                + System.lineSeparator() + "conduit: the command failed after printing" + System.lineSeparator());
    }

    /** Runs a subcommand {@code fails} that prints a line and part of another to {@code out}, then throws. */
    private Result runFailing(StandardOutput out) {
        StringWriter err = new StringWriter();
        int exitCode = new ConduitCommand(conduit::builder).commandLine(out)
                .addSubcommand("fails", new FailsMidLine(out))
                .setErr(new PrintWriter(err, true))
                .execute("fails");
        return new Result(exitCode, "", err.toString());
    }

    @Command(name = "fails")
    private record FailsMidLine(PrintWriter out) implements Runnable {
        @Override
        public void run() {
            out.println("a whole line"); // flushed: the writer flushes on println
            out.print("part of a line");
            throw new ConduitException("the command failed after printing");
        }
    }

    /** A destination that refuses every write, as a file on a full disk does ({@code ENOSPC}). */
    private static final class FullDisk extends java.io.Writer {
        @Override
        public void write(char[] text, int offset, int length) throws java.io.IOException {
            throw new java.io.IOException("No space left on device");
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
        }
    }

    @Test
    void withoutASubcommandItPrintsUsage() {
        Result result = conduit.run();

        assertThat(result.exitCode()).isEqualTo(ConduitCommand.EXIT_OK);
        assertThat(result.out()).contains("Usage: conduit", "info", "--set", "Exit codes:");
        assertThat(result.err()).isEmpty();
    }

    @Test
    void helpDocumentsTheExitCodes() {
        Result result = conduit.run("--help");

        assertThat(result.exitCode()).isEqualTo(ConduitCommand.EXIT_OK);
        assertThat(result.out()).contains("Exit codes:", "  0  success", "  1  Conduit failed", "  2  usage error");
    }

    @Test
    void subcommandHelpListsItsOptions() {
        Result result = conduit.run("info", "--help");

        assertThat(result.exitCode()).isEqualTo(ConduitCommand.EXIT_OK);
        assertThat(result.out()).contains("Usage: conduit info", "--json", "--set", "--verbose");
    }

    @Test
    void versionNamesTheBuildTheSpiTheRuntimesFormatsThePerfProtocolAndTheJvm() {
        Result result = conduit.run("--version");

        assertThat(result.exitCode()).isEqualTo(ConduitCommand.EXIT_OK);
        List<String> lines = result.out().lines().toList();
        assertThat(lines).hasSize(5);
        assertThat(lines.get(0)).isEqualTo("conduit " + ToolVersion.current()).doesNotEndWith(" ");
        assertThat(lines.get(1)).isEqualTo("SPI " + dev.conduit.spi.ConduitPlugin.SPI_VERSION);
        assertThat(lines.get(2)).as("what two processes' runtimes must share")
                .isEqualTo("runtime formats: worker address 1, IPC handle 1"); // version 1 in every build so far (runtime.md)
        assertThat(lines.get(3)).as("what a perf client and server must share").isEqualTo("conduit perf protocol " + PerfProtocol.VERSION);
        assertThat(lines.get(4)).startsWith("Java " + Runtime.version().feature());
    }
}
