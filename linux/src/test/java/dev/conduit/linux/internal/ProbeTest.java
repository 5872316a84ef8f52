package dev.conduit.linux.internal;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** The availability decision, with the platform and the binding faked. */
class ProbeTest {
    private static final Module MODULE = ProbeTest.class.getModule();
    private static final Runnable BINDS = () -> {};

    @Test
    void availableOnLinuxX86AndArm() {
        assertThat(Probe.unavailabilityCause("Linux", "amd64", MODULE, BINDS)).isNull();
        assertThat(Probe.unavailabilityCause("Linux", "aarch64", MODULE, BINDS)).isNull();
    }

    @Test
    void otherOperatingSystemsAreNamed() {
        assertThat(Probe.unavailabilityCause("Mac OS X", "aarch64", MODULE, BINDS))
                .hasMessageContaining("Linux").hasMessageContaining("Mac OS X");
    }

    @Test
    void otherArchitecturesAreNamed() {
        assertThat(Probe.unavailabilityCause("Linux", "riscv64", MODULE, BINDS))
                .hasMessageContaining("riscv64").hasMessageContaining("x86_64 and aarch64");
    }

    @Test
    void deniedNativeAccessNamesTheFlag() {
        Runnable denied = () -> {
            throw new ExceptionInInitializerError(new IllegalCallerException("Illegal native access from module dev.conduit.linux"));
        };
        Throwable cause = Probe.unavailabilityCause("Linux", "amd64", MODULE, denied);
        assertThat(cause).hasMessage("the JVM denies native access to module dev.conduit.linux: "
                + "start it with --enable-native-access=dev.conduit.linux");
        assertThat(cause).hasRootCauseInstanceOf(IllegalCallerException.class);
    }

    @Test
    void missingSymbolIsReported() {
        Runnable missing = () -> {
            throw new UnsatisfiedLinkError("the C library lacks memfd_create");
        };
        assertThat(Probe.unavailabilityCause("Linux", "amd64", MODULE, missing)).hasMessageContaining("memfd_create");
    }

    /**
     * A JVM that could not load the JDK's libsyslookup.so (started, or first using FFM, out of
     * descriptors: ulimit -n 18) finds no function at all, and was told "the C library lacks
     * ftruncate, fallocate, fcntl, ..." (every one), blaming the C library. Found by a helper
     * playing an SRE. One missing function is still the C library's lack.
     */
    @Test
    void noFunctionFoundAtAllBlamesTheJdksLookupAndNamesTheDescriptorLimitNotTheCLibrary() {
        assertThat(Probe.missingSymbols(java.util.List.of("memfd_create"), 34)).isEqualTo("the C library lacks memfd_create");
        String none = Probe.missingSymbols(java.util.List.of("ftruncate", "close", "getpagesize"), 3);
        assertThat(none).doesNotContain("the C library lacks").contains("finds no C library function at all, not even getpagesize")
                .contains("libsyslookup.so").contains("ulimit -n").contains("restart the JVM");
    }
}
