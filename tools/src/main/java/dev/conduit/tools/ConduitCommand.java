package dev.conduit.tools;

import dev.conduit.Conduit;
import dev.conduit.ConduitBuilder;
import dev.conduit.linux.Libc;
import dev.conduit.linux.Linux;
import dev.conduit.spi.ConduitException;
import dev.conduit.spi.ConfigException;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.ParseResult;
import picocli.CommandLine.Spec;

import java.io.IOException;
import java.io.PrintWriter;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * The {@code conduit} command. Each subcommand is a class of its own ({@code info},
 * {@code perf}, {@code reclaim}) that mixes in the shared options ({@code --set}, {@code --verbose}) and opens
 * Conduit through {@link #openConduit}, so configuration and failures work the same in all of them.
 *
 * <p>Exit codes: {@value #EXIT_OK} success, {@value #EXIT_FAILED} Conduit failed or the output could
 * not be written (the message goes to standard error), {@value #EXIT_USAGE} usage error,
 * {@value #EXIT_WOULD_REMOVE} a {@code reclaim --dry-run} that found something to remove.
 */
@Command(name = "conduit",
        mixinStandardHelpOptions = true,
        versionProvider = ToolVersion.class,
        subcommands = {InfoCommand.class, PerfCommand.class, ReclaimCommand.class, CommandLine.HelpCommand.class},
        description = {"Inspects Conduit in this process: the plugins it finds, their configuration,",
                "what it selects and what memfd and posix keep in the shared directory (info);",
                "measures it between two processes (perf); removes what dead processes left",
                "in the shared directory (reclaim)."},
        footerHeading = "%nExit codes:%n",
        footer = {
                // picocli wraps a footer line longer than the usage width (80) badly: keep each below it.
                "  0  success",
                "  1  Conduit failed (configuration error, plugin failure): the message goes",
                "     to standard error; --verbose adds the stack trace. Also when the output",
                "     could not be written (a full disk, a pipe whose reader is gone), and",
                "     when reclaim could not remove a dead owner's file or list a directory,",
                "     or found neither memfd nor posix to reclaim in",
                "  2  usage error: unknown option or subcommand, malformed argument",
                "  3  reclaim --dry-run found files that a reclaim would remove",
                "",
                "Configuration comes, strongest first, from a subcommand's --set, conduit.*",
                "system properties, CONDUIT_* environment variables and defaults.",
                "'conduit info' lists every key."})
public final class ConduitCommand implements Runnable {

    /** The command did what was asked. */
    public static final int EXIT_OK = 0;
    /** Conduit failed (bad configuration, a plugin failure, or a bug), or the output could not be written. */
    public static final int EXIT_FAILED = 1;
    /** The command line could not be parsed; picocli's own code for invalid input. */
    public static final int EXIT_USAGE = 2;
    /**
     * {@code conduit reclaim --dry-run} found files a reclaim would remove (it exits with {@value #EXIT_OK} when it found
     * none): as {@code diff} says that files differ, so that a script can act on it without reading the output.
     */
    public static final int EXIT_WOULD_REMOVE = 3;

    @Spec
    private CommandSpec spec;

    private final Supplier<ConduitBuilder> builders;
    private final Supplier<Libc> libc;

    /** The command as run from the command line: Conduit configured from the process's environment. */
    public ConduitCommand() {
        this(Conduit::builder, Linux::libc);
    }

    /** For tests: every Conduit this command opens starts from a builder made by {@code builders}. */
    ConduitCommand(Supplier<ConduitBuilder> builders) {
        this(builders, Linux::libc);
    }

    /**
     * For tests: as {@link #ConduitCommand(Supplier)}, and the shared directories
     * ({@code conduit info}'s SHARED FILES, {@code conduit reclaim}) are read through {@code libc}: one that answers
     * {@code fstatfs} as an NFS or 9p mount would, which a test machine need not have.
     */
    ConduitCommand(Supplier<ConduitBuilder> builders, Supplier<Libc> libc) {
        this.builders = Objects.requireNonNull(builders, "builders");
        this.libc = Objects.requireNonNull(libc, "libc");
    }

    /** Runs the command and exits the JVM with its exit code. */
    public static void main(String... args) {
        System.exit(new ConduitCommand().commandLine(StandardOutput.ofProcess()).execute(args));
    }

    /**
     * This command, ready to execute, printing to {@code out}: exceptions become exit code
     * {@value #EXIT_FAILED} with a one-line message, and so does output that could not be written.
     */
    CommandLine commandLine(StandardOutput out) {
        return new CommandLine(this)
                .setOut(out)
                .setExecutionStrategy(parsed -> executeCheckingOutput(parsed, out))
                .setExecutionExceptionHandler(this::reportFailure);
    }

    /**
     * Runs what was asked, help and version included; a success whose output was not all written is a failure.
     * An Error the command let through is reported here as a failure (exit code 1): picocli hands its handler
     * exceptions only, and an Error went out of main as a raw stack trace.
     */
    private int executeCheckingOutput(ParseResult parsed, StandardOutput out) {
        int exitCode;
        try {
            exitCode = new CommandLine.RunLast().execute(parsed);
        } catch (RuntimeException | Error e) {
            // Reported by picocli's handlers once this returns (exit code 1, or 2 for a usage error found in a command's
            // run). Until then a line the command had not ended is still in the buffer under the writer, which System.exit
            // would drop: flushed first, so that it comes before the failure, and a write that failed is said as well.
            reportIncompleteOutput(parsed, out);
            if (e instanceof Error error) return reportFailure(error, parsed.commandSpec().commandLine(), parsed);
            throw e;
        }
        // A dry run's "something would be removed" of a truncated document is no answer either.
        return reportIncompleteOutput(parsed, out) && (exitCode == EXIT_OK || exitCode == EXIT_WOULD_REMOVE) ? EXIT_FAILED : exitCode;
    }

    /** Flushes what the command printed; if any of it could not be written, says so on standard error. Whether it did. */
    private static boolean reportIncompleteOutput(ParseResult parsed, StandardOutput out) {
        Optional<IOException> failure = out.failure();
        if (failure.isEmpty()) return false;
        PrintWriter err = parsed.commandSpec().commandLine().getErr();
        IOException cause = failure.get();
        err.println("conduit: cannot write to standard output: " + (cause.getMessage() == null ? cause : cause.getMessage())
                + "; the output is incomplete");
        err.flush();
        return true;
    }

    /** Without a subcommand there is nothing to do but show what there is to do. */
    @Override
    public void run() {
        spec.commandLine().usage(spec.commandLine().getOut());
    }

    /** Opens Conduit with a subcommand's {@code --set} values on top of the usual sources. The caller closes it. */
    Conduit openConduit(ConduitOptions options) {
        return newBuilder(options).build();
    }

    /**
     * The system calls on memfd's and posix's directories.
     *
     * @throws dev.conduit.spi.ConduitException if they cannot be made here, saying why
     */
    Libc libc() {
        return libc.get();
    }

    /** A builder with a subcommand's {@code --set} values on top of the usual sources, for a subcommand that adds its own. */
    ConduitBuilder newBuilder(ConduitOptions options) {
        return options.applyTo(builders.get());
    }

    /**
     * A failure a command has said on standard error itself, where the command's report would come too late: a run
     * stopped by a signal, whose JVM exits as soon as its resources are closed. Or one that this command's report says:
     * a run that stopped because standard output could not be written ({@link #reportIncompleteOutput}). Its exit code
     * is all that is left to give.
     */
    static final class AlreadySaid extends ConduitException {
        AlreadySaid(Throwable said) {
            super(said.getMessage(), said);
        }
    }

    private int reportFailure(Throwable failure, CommandLine command, ParseResult parsed) {
        PrintWriter err = command.getErr();
        if (failure instanceof AlreadySaid) {
            if (verboseRequested(parsed)) failure.getCause().printStackTrace(err);
            err.flush();
            return EXIT_FAILED;
        }
        if (failure instanceof ConduitException) {
            // Conduit's messages name the key, value, plugin or system call and the remedy: enough on their own, but for a
            // setting's source: what this command was given with --set or -t, Conduit knows as set in its builder.
            String message = failure.getMessage();
            if (failure instanceof ConfigException && message.contains("the builder")) {
                message += " (this command passes --set, and perf's -t, to the builder)";
            }
            err.println("conduit: " + message);
        } else {
            err.println("conduit: unexpected failure: " + failure);
        }
        if (verboseRequested(parsed)) {
            failure.printStackTrace(err);
        } else if (!(failure instanceof ConduitException) || failure.getCause() instanceof Error) {
            // An Error that a command wrapped to add what it knows (perf: its server's output) is a bug all the same.
            err.println("conduit: run again with --verbose for the stack trace");
        }
        err.flush();
        return EXIT_FAILED;
    }

    /** Whether {@code --verbose} was given to any command on the command line. */
    private static boolean verboseRequested(ParseResult parsed) {
        for (ParseResult command = parsed; command != null; command = command.subcommand()) {
            if (command.hasMatchedOption(ConduitOptions.VERBOSE)) {
                return true;
            }
        }
        return false;
    }
}
