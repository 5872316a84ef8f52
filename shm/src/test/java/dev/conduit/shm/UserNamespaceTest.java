package dev.conduit.shm;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** uid_map lines as the kernel writes them: the initial namespace's identity, a rootless container's one line, ranges. */
class UserNamespaceTest {

    private static final UserNamespace INITIAL = UserNamespace.of(List.of("         0          0 4294967295"), 65534);
    private static final UserNamespace ROOTLESS = UserNamespace.of(List.of("         0       1000          1"), 65534);
    private static final UserNamespace SUBUIDS = UserNamespace.of(List.of("0 1000 1", "1 100000 65536"), 65534);

    @Test
    void theInitialNamespaceMapsEveryUidToItselfAndHasNoUnmappedOwners() {
        assertThat(INITIAL.isNested()).isFalse();
        assertThat(INITIAL.outside(1000)).isEqualTo(1000);
        assertThat(INITIAL.describe(1000)).isEqualTo("uid 1000");
        assertThat(INITIAL.isUnmapped(65534)).as("nobody, a real user here").isFalse();
    }

    @Test
    void aRootlessContainersRootIsTheUserWhoRunsItOutside() {
        assertThat(ROOTLESS.isNested()).isTrue();
        assertThat(ROOTLESS.outside(0)).isEqualTo(1000);
        assertThat(ROOTLESS.describe(0)).isEqualTo("uid 1000, which is 0 inside this process's user namespace");
        assertThat(ROOTLESS.outside(1)).as("unmapped: left as it is").isEqualTo(1);
        assertThat(ROOTLESS.isUnmapped(65534)).as("the overflow uid: some user the namespace does not map").isTrue();
        assertThat(ROOTLESS.isUnmapped(0)).isFalse();
    }

    @Test
    void rangesOfSubordinateUidsAreMappedByOffset() {
        assertThat(SUBUIDS.outside(0)).isEqualTo(1000);
        assertThat(SUBUIDS.outside(1005)).isEqualTo(101004);
        assertThat(SUBUIDS.outside(65537)).as("past the last range").isEqualTo(65537);
    }

    @Test
    void withoutProcOrWithLinesItCannotReadItTakesTheProcessToBeInTheInitialNamespace() {
        UserNamespace none = UserNamespace.of(List.of(), 65534);
        assertThat(none.isNested()).isFalse();
        assertThat(none.outside(7)).isEqualTo(7);
        UserNamespace garbage = UserNamespace.of(List.of("garbage", "a b c"), 65534);
        assertThat(garbage.outside(7)).isEqualTo(7);
    }
}
