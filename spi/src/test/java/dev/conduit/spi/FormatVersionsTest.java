package dev.conduit.spi;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class FormatVersionsTest {

    @Test
    void aNewerWritersFormatSaysToUpgradeThisProcessOrRunTheWriterWithTheOlderConduit() {
        assertThat(FormatVersions.refusal("example payload", 3, 2, "the producer")).isEqualTo("example payload version 3, where this "
                + "process's Conduit reads only version 2: the producer runs a newer Conduit than this process; upgrade this process, or "
                + "run the producer with the older one (docs/runtime.md, \"Processes of different Conduit versions\")");
    }

    @Test
    void anOlderWritersFormatSaysToUpgradeTheWriterOrRunThisProcessWithTheOlderConduit() {
        assertThat(FormatVersions.refusal("example payload", 1, 2, "the peer")).isEqualTo("example payload version 1, where this "
                + "process's Conduit reads only version 2: the peer runs an older Conduit than this process; upgrade the peer, or run "
                + "this process with the older one (docs/runtime.md, \"Processes of different Conduit versions\")");
    }
}
