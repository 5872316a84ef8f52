/**
 * The {@code conduit} command: what Conduit finds, selects and is configured with in this
 * process ({@code conduit info}), with room for further subcommands such as {@code perf}.
 *
 * <p>Run it with {@code ./conduit} at the root of the source tree, or as
 * {@code java --module-path ... -m dev.conduit.tools/dev.conduit.tools.ConduitCommand}. This
 * module exports nothing: it is an application, not a library.
 */
module dev.conduit.tools {
    requires dev.conduit;
    requires info.picocli;

    // picocli fills options and builds usage help by reflection.
    opens dev.conduit.tools to info.picocli;
}
