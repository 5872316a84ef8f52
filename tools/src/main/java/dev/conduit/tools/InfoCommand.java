package dev.conduit.tools;

import dev.conduit.Conduit;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;

/** {@code conduit info}: every plugin found, every configuration key, and the selection. */
@Command(name = "info",
        mixinStandardHelpOptions = true,
        header = "Shows the plugins found, every configuration key, and the selection.",
        versionProvider = ToolVersion.class,
        description = {
                "Shows every plugin found (selected ones first, in preference order): version, SPI version, origin, "
                        + "status and the reason when it is not usable, capabilities, thread modes, priority, probe details "
                        + "and its configuration keys. Then the runtime's own configuration keys, then the selection "
                        + "(transports, CONDUIT_TRANSPORTS). Then what memfd and posix keep in their directories: each owner, "
                        + "whether it lives (its lease), its files and their bytes, and files no lease names; nothing is changed.",
                "Each key is shown with its value, where the value comes from, and what it does."})
final class InfoCommand implements Runnable {

    @Option(names = "--json", description = "Writes one JSON document with the same content, for scripts.")
    private boolean json;

    @Mixin
    private ConduitOptions options;

    @ParentCommand
    private ConduitCommand conduit;

    @Spec
    private CommandSpec spec;

    @Override
    public void run() {
        InfoReport report;
        // Only a snapshot is needed: close Conduit before printing, so nothing stays open if the output blocks.
        try (Conduit opened = conduit.openConduit(options)) {
            report = InfoReport.of(opened, ToolVersion.current(), conduit::libc);
        }
        PrintWriter out = spec.commandLine().getOut();
        if (json) {
            InfoJson.write(report, out);
        } else {
            InfoText.write(report, out);
        }
        out.flush();
    }
}
