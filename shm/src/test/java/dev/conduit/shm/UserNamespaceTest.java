package dev.conduit.shm;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** uid_map lines as the kernel writes them: the initial namespace's identity, a rootless container's one line, ranges, none. */
class UserNamespaceTest {

    private static final UserNamespace INITIAL = UserNamespace.of(List.of("         0          0 4294967295"), 65534);
    private static final UserNamespace ROOTLESS = UserNamespace.of(List.of("         0       1000          1"), 65534);
    private static final UserNamespace SUBUIDS = UserNamespace.of(List.of("0 1000 1", "1 100000 65536"), 65534);

    /** Read once per process: an import that checks its file's owner asks for it each time, and two reads of /proc cost some 35 µs. */
    @Test
    void thisProcesssNamespaceIsReadOnceAndKept() {
        UserNamespace first = UserNamespace.current();
        assertThat(UserNamespace.current()).isSameAs(first);
        assertThat(first.isNested()).as("this JVM runs in the namespace its map shows")
                .isEqualTo(!"0 0 4294967295".equals(uidMapFields()));
    }

    /** This process's uid map, its fields joined by one blank. */
    private static String uidMapFields() {
        try {
            return String.join(" ", java.nio.file.Files.readString(java.nio.file.Path.of("/proc/self/uid_map")).trim().split("\\s+"));
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    @Test
    void theInitialNamespaceMapsEveryUidToItselfAndHasNoUnmappedOwners() {
        assertThat(INITIAL.isNested()).isFalse();
        assertThat(INITIAL.inParent(1000)).isEqualTo(1000);
        assertThat(INITIAL.describe(1000)).isEqualTo("uid 1000");
        assertThat(INITIAL.mayBeUnmapped(65534)).as("nobody, a real user here").isFalse();
    }

    @Test
    void aRootlessContainersRootIsTheUserWhoRunsItInTheParentNamespace() {
        assertThat(ROOTLESS.isNested()).isTrue();
        assertThat(ROOTLESS.inParent(0)).isEqualTo(1000);
        assertThat(ROOTLESS.describe(0)).isEqualTo("uid 0 here, 1000 in the parent user namespace");
        assertThat(ROOTLESS.inParent(1)).as("unmapped").isEqualTo(-1);
        assertThat(ROOTLESS.describe(65534)).isEqualTo("uid 65534 here, which this user namespace maps to no uid of its parent");
        assertThat(ROOTLESS.mayBeUnmapped(65534)).as("the overflow uid: some user the namespace does not map").isTrue();
        assertThat(ROOTLESS.mayBeUnmapped(0)).isFalse();
    }

    @Test
    void rangesOfSubordinateUidsAreMappedByOffsetAndTheirOwn65534IsStillAmbiguous() {
        assertThat(SUBUIDS.inParent(0)).isEqualTo(1000);
        assertThat(SUBUIDS.inParent(1005)).isEqualTo(101004);
        assertThat(SUBUIDS.inParent(65537)).as("past the last range").isEqualTo(-1);
        assertThat(SUBUIDS.inParent(65534)).as("the namespace's own nobody").isEqualTo(165533);
        assertThat(SUBUIDS.mayBeUnmapped(65534)).as("a file showing 65534 may be its nobody's or an unmapped user's").isTrue();
    }

    @Test
    void anEmptyMapIsANamespaceThatMapsNobodyAndAnUnreadableOneTheInitialNamespace() {
        UserNamespace unmapped = UserNamespace.of(List.of(), 65534);
        assertThat(unmapped.isNested()).as("unshare --user without a map").isTrue();
        assertThat(unmapped.inParent(65534)).isEqualTo(-1);
        assertThat(unmapped.mayBeUnmapped(65534)).isTrue();
        UserNamespace unreadable = UserNamespace.of(null, 65534);
        assertThat(unreadable.isNested()).as("no /proc").isFalse();
        assertThat(unreadable.inParent(7)).isEqualTo(7);
        UserNamespace garbage = UserNamespace.of(List.of("garbage", "a b c"), 65534);
        assertThat(garbage.isNested()).isTrue();
        assertThat(garbage.inParent(7)).isEqualTo(-1);
    }
    /**
     * A connect refused across users in a rootless container: its uid on the host, and that a lease showing the
     * overflow uid is of a user outside the map (the host process's), which no uid inside can match.
     */
    @Test
    void aRefusedConnectInAContainerNamesTheHostUidAndTheOverflowUid() {
        assertThat(ShmTransport.userNamespaceNote(INITIAL, 1000, 0)).as("the host's uids are the uids already").isEmpty();
        assertThat(ShmTransport.userNamespaceNote(ROOTLESS, 65534, 0))
                .contains("this process is uid 0 here, 1000 in the parent user namespace")
                .contains("uid 65534 is the overflow uid").contains("the host process's");
        assertThat(ShmTransport.userNamespaceNote(ROOTLESS, 5, 0)).contains("1000 in the parent").doesNotContain("overflow");
        assertThat(ShmTransport.userNamespaceNote(ROOTLESS, null, 0)).doesNotContain("overflow");
    }

    /**
     * A worker in a container run as nobody (host uid 1000 mapped to the overflow uid, 65534) connecting to a host
     * worker of another user: the host's lease shows as 65534, the worker's own uid, and does not open (EACCES, its
     * 0600 mode). It was called this worker's own user's lease, refused by a security module (SELinux, :z), which
     * no relabelling mends; it is a user outside the namespace's map, whose remedy is one user.
     */
    @Test
    void aRefusedLeaseShowingTheOverflowUidOfAWorkerRunAsItIsNotCalledItsOwnUsers() {
        UserNamespace nobody = UserNamespace.of(List.of("     65534       1000          1"), 65534);
        String refused = ShmTransport.refusedLease(nobody, 65534, 65534, 65534);
        assertThat(refused).doesNotContain("security module").contains("the peer worker belongs to another user")
                .contains("uid 65534 here, 1000 in the parent user namespace").contains("uid 65534 is the overflow uid")
                .contains("run both processes as one user");
        assertThat(ShmTransport.refusedLease(ROOTLESS, 0, 0, 0)).as("a lease of its own mapped user")
                .contains("security module").doesNotContain("belongs to another user");
        assertThat(ShmTransport.refusedLease(INITIAL, 65534, 65534, 65534)).as("nobody of the initial namespace is one user")
                .contains("security module");
        assertThat(ShmTransport.refusedLease(INITIAL, 1001, 1000, 1000)).contains("its lease belongs to uid 1001")
                .contains("run both processes as one user");
    }

    /**
     * An item is ASCII digits, as ConfigKey.integer takes a number: Long.parseLong alone took "+1000" and the digits of
     * any script ("\u0661\u0660\u0660\u0660", "\uff11\uff10\uff10\uff10"), which conduit info then showed as set, never as the user id
     * they were read as, against the form the key names.
     */
    @Test
    void aUidListKeyTakesAsciiDigitsOnlyAsItsFormSays() {
        var key = UserNamespace.uidListKey("x.uids", "doc");
        assertThat(UserNamespace.uids(key.parse(" 1000, 0 ,4294967294", "the builder"))).containsExactly(1000, 0, -2);
        for (String item : List.of("+1000", "\u0661\u0660\u0660\u0660", "\uff11\uff10\uff10\uff10", "-0")) {
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> key.parse("1001," + item, "the builder"))
                    .as(item).isInstanceOf(dev.conduit.spi.ConfigException.class)
                    .hasMessageContaining("item '" + item + "' is not a numeric user id");
        }
    }
}
