package dev.conduit.spi;

import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The small value types and defaults of the SPI. */
class ContractTypesTest {

    @Test
    void availabilityKeepsDetailsInInsertionOrderAndIsImmutable() {
        Map<String, String> details = new LinkedHashMap<>();
        details.put("z", "1");
        details.put("a", "2");
        details.put("m", "3");
        Availability a = Availability.available(details);
        details.put("late", "x");
        assertThat(a.isAvailable()).isTrue();
        assertThat(a.reason()).isEmpty();
        assertThat(a.details().keySet()).containsExactly("z", "a", "m");
        assertThatThrownBy(() -> a.details().put("b", "c")).isInstanceOf(UnsupportedOperationException.class);
    }

    @Test
    void anUnavailablePluginMustSayWhy() {
        assertThatIllegalArgumentException().isThrownBy(() -> Availability.unavailable(" "));
        Availability a = Availability.unavailable("no RDMA devices", Map.of("devices", "0"));
        assertThat(a.isAvailable()).isFalse();
        assertThat(a.reason()).isEqualTo("no RDMA devices");
        assertThat(a.details()).containsEntry("devices", "0");
    }

    @Test
    void anAvailablePluginRulesCapabilitiesOutHereSayingWhyInCapabilityOrder() {
        Availability a = Availability.available(Map.of("dir", "/mnt")).without(Capability.AM, "read-only").without(Capability.MEMORY, "read-only");
        assertThat(a.isAvailable()).isTrue();
        assertThat(a.details()).containsEntry("dir", "/mnt");
        assertThat(a.unsupportedHere().keySet()).containsExactly(Capability.MEMORY, Capability.AM);
        assertThat(a.unsupportedHere()).containsEntry(Capability.AM, "read-only");
        assertThatThrownBy(() -> a.unsupportedHere().put(Capability.IPC, "x")).isInstanceOf(UnsupportedOperationException.class);
        assertThat(Availability.available().unsupportedHere()).as("an SPI 1.0 availability rules nothing out").isEmpty();
        assertThat(new Availability(true, "", Map.of())).isEqualTo(Availability.available());
    }

    @Test
    void aCapabilityIsRuledOutOnlyByAnAvailablePluginAndOnlyWithAReason() {
        Availability unavailable = Availability.unavailable("no device: load its driver");
        assertThat(unavailable.without(Capability.AM, "no device")).as("an unavailable plugin keeps its reason").isEqualTo(unavailable);
        assertThatIllegalArgumentException().isThrownBy(() -> new Availability(false, "no device", Map.of(), Map.of(Capability.AM, "x")))
                .withMessageContaining("an unavailable plugin offers nothing");
        assertThatIllegalArgumentException().isThrownBy(() -> Availability.available().without(Capability.AM, " "))
                .withMessageContaining("say why AM is not supported here");
        assertThatThrownBy(() -> Availability.available().without(null, "why")).isInstanceOf(NullPointerException.class);
    }

    @Test
    void invalidHandleExceptionNamesItsField() {
        InvalidHandleException e = new InvalidHandleException("payload.path", "absolute path");
        assertThat(e.field()).isEqualTo("payload.path");
        assertThat(e).hasMessage("invalid handle: field 'payload.path': absolute path").isInstanceOf(ConduitException.class);
    }

    @Test
    void optionalPluginOperationsSayNotSupportedNamingPluginAndCapability() {
        ConduitPlugin plugin = new ConduitPlugin() {
            @Override public String name() { return "bare"; }
            @Override public Version version() { return Version.parse("1.0"); }
            @Override public String spiVersion() { return SPI_VERSION; }
            @Override public Availability probe(PluginContext context) { return Availability.available(); }
            @Override public Set<Capability> capabilities() { return Set.of(); }
            @Override public Set<ThreadMode> threadModes() { return Set.of(ThreadMode.SINGLE); }
        };
        assertThat(plugin.description()).isEmpty();
        assertThat(plugin.configKeys()).isEmpty();
        assertThat(plugin.priority()).isZero();
        assertThatThrownBy(() -> plugin.openMemoryProvider(null)).isInstanceOf(NotSupportedException.class)
                .hasMessageContaining("'bare'").hasMessageContaining("MEMORY");
        assertThatThrownBy(() -> plugin.ipcImporter(null)).isInstanceOf(NotSupportedException.class)
                .hasMessageContaining("'bare'").hasMessageContaining("IPC");
        assertThatThrownBy(() -> plugin.openTransport(null)).isInstanceOf(NotSupportedException.class)
                .hasMessageContaining("'bare'").hasMessageContaining("AM");
    }

    @Test
    void anEncodersRangedCallByDefaultWritesThroughAViewBoundedToTheRange() {
        MemorySegment memory = Arena.ofAuto().allocate(64);
        PayloadEncoder encoder = target -> {
            target.fill((byte) 7);
            return target.byteSize();
        };
        assertThat(encoder.encode(memory, 8, 16)).isEqualTo(16);
        for (int i = 0; i < 64; i++) {
            assertThat(memory.get(ValueLayout.JAVA_BYTE, i)).as("byte %d", i).isEqualTo((byte) (i >= 8 && i < 24 ? 7 : 0));
        }
        PayloadEncoder overreaching = target -> {
            target.set(ValueLayout.JAVA_BYTE, 16, (byte) 1);
            return 0;
        };
        assertThatThrownBy(() -> overreaching.encode(memory, 8, 16)).isInstanceOf(IndexOutOfBoundsException.class);
    }

    @Test
    void aRangedEncoderCalledWithAViewWritesAtItsStart() {
        MemorySegment memory = Arena.ofAuto().allocate(64);
        long[] seen = new long[2];
        PayloadEncoder encoder = (PayloadEncoder.Ranged) (target, offset, maxLength) -> {
            seen[0] = offset;
            seen[1] = maxLength;
            target.set(ValueLayout.JAVA_BYTE, offset, (byte) 9);
            return 1;
        };
        assertThat(encoder.encode(memory.asSlice(16, 8))).isEqualTo(1);
        assertThat(seen).containsExactly(0, 8);
        assertThat(memory.get(ValueLayout.JAVA_BYTE, 16)).isEqualTo((byte) 9);
    }

    /** Cleanup.run: a failing step, Error or not, is suppressed in the primary exception and the steps after it still run. */
    @Test
    void cleanupRunAddsAFailingStepToThePrimaryExceptionAndGoesOn() {
        RuntimeException primary = new IllegalStateException("open failed");
        List<String> ran = new ArrayList<>();
        Cleanup.run(primary, () -> {
            ran.add("unmap");
            throw new InternalError("a fault occurred in an unsafe memory access operation");
        });
        Cleanup.run(primary, () -> ran.add("close descriptor"));
        assertThat(ran).containsExactly("unmap", "close descriptor");
        assertThat(primary.getSuppressed()).singleElement().isInstanceOf(InternalError.class);
    }

    /**
     * Cleanup's promise, "one failing step neither stops the others nor hides the exception that
     * matters", held for collect only while steps threw RuntimeExceptions: an Error (a plugin missing
     * one of its classes, a fault on mapped memory) left the caller's loop, so the later steps never
     * ran, and the failure collected so far was lost with it. collect now keeps such an Error, as
     * the runtime's own close loops do; the JVM's own (out of memory, a stack overflow) it throws
     * at once, with what it had collected suppressed in it.
     */
    @Test
    void cleanupCollectGoesOnPastEveryFailureButTheJvmsOwnAndLosesNone() {
        assertThat(Cleanup.collect(null, () -> { })).isNull();
        RuntimeException first = new IllegalStateException("first");
        assertThat(Cleanup.collect(null, () -> { throw first; })).isSameAs(first);
        assertThat(Cleanup.collect(first, () -> { throw new IllegalArgumentException("second"); })).isSameAs(first);
        assertThat(first.getSuppressed()).singleElement().hasFieldOrPropertyWithValue("message", "second");

        List<String> ran = new ArrayList<>();
        NoClassDefFoundError missing = new NoClassDefFoundError("org/example/Missing");
        RuntimeException failure = Cleanup.collect(null, () -> {
            ran.add("release chunk");
            throw missing;
        });
        failure = Cleanup.collect(failure, () -> ran.add("close lease"));
        InternalError fault = new InternalError("a fault occurred in an unsafe memory access operation");
        failure = Cleanup.collect(failure, () -> {
            ran.add("close directory");
            throw fault;
        });
        assertThat(ran).as("every step ran").containsExactly("release chunk", "close lease", "close directory");
        assertThat(failure).isInstanceOf(ConduitException.class).hasCause(missing).hasMessageContaining("org/example/Missing");
        assertThat(failure.getSuppressed()).containsExactly(fault);

        RuntimeException collected = new IllegalStateException("collected before");
        OutOfMemoryError oom = new OutOfMemoryError("Java heap space");
        assertThatThrownBy(() -> Cleanup.collect(collected, () -> { throw oom; })).isSameAs(oom);
        assertThat(oom.getSuppressed()).containsExactly(collected);
    }

    /**
     * A step that throws the very exception being cleaned up after: a resource that keeps its first
     * failure and throws it again from every later call, its close among them (a plugin's "broken"
     * state). Throwable refuses to suppress itself (IllegalArgumentException: Self-suppression not
     * permitted); the clean-up must neither throw that in the primary's place nor stop the steps
     * after it, as a try-with-resources does not. Until 2026-12-07 both {@code run} and
     * {@code collect} threw that IllegalArgumentException.
     */
    @Test
    void aStepThatThrowsThePrimaryExceptionAgainNeitherHidesItNorStopsTheSteps() {
        RuntimeException broken = new IllegalStateException("device gone");
        List<String> ran = new ArrayList<>();
        Cleanup.run(broken, () -> {
            ran.add("close device");
            throw broken;
        });
        Cleanup.run(broken, () -> ran.add("close descriptor"));
        assertThat(ran).containsExactly("close device", "close descriptor");
        assertThat(Cleanup.collect(broken, () -> {
            throw broken;
        })).isSameAs(broken);
    }

    /**
     * A step of a plugin written in Kotlin (which has no checked exceptions) or with Lombok's
     * {@code @SneakyThrows} throws a checked exception its {@code Runnable} does not declare: a close
     * that fails with an {@code IOException}. Until 2026-12-07 both {@code run} and {@code collect}
     * caught only RuntimeException and Error, so that it left them in place of the failure being
     * cleaned up after (the runtime's refusal of a pool whose provider then failed to close), and
     * {@code collect}'s caller ran none of its later steps.
     */
    @Test
    void aStepsCheckedExceptionThrownUndeclaredIsCollectedAsAnyOtherFailureAndHidesNone() {
        java.io.IOException unclosable = new java.io.IOException("/dev/shm/conduit-x: Input/output error");
        RuntimeException primary = new IllegalStateException("open failed");
        List<String> ran = new ArrayList<>();
        Cleanup.run(primary, () -> {
            ran.add("close provider");
            throw sneaky(unclosable);
        });
        Cleanup.run(primary, () -> ran.add("close descriptor"));
        assertThat(ran).containsExactly("close provider", "close descriptor");
        assertThat(primary.getSuppressed()).containsExactly(unclosable);

        RuntimeException failure = Cleanup.collect(null, () -> {
            throw sneaky(unclosable);
        });
        assertThat(failure).isInstanceOf(ConduitException.class).hasCause(unclosable).hasMessageContaining("Input/output error");
        RuntimeException first = new IllegalStateException("first");
        assertThat(Cleanup.collect(first, () -> {
            throw sneaky(unclosable);
        })).isSameAs(first);
        assertThat(first.getSuppressed()).containsExactly(unclosable);
    }

    /** Throws {@code e}, checked or not, where the compiler would not let a checked one through: as Kotlin or Lombok do. */
    @SuppressWarnings("unchecked")
    private static <E extends Throwable> RuntimeException sneaky(Throwable e) throws E {
        throw (E) e;
    }

    /** MappedMemoryFault.is: both forms of the JDK's report of a fault on mapped memory, and no other InternalError. */
    @Test
    void aFaultOnMappedMemoryIsToldFromOtherInternalErrors() {
        assertThat(MappedMemoryFault.is(new InternalError("a fault occurred in an unsafe memory access operation"))).isTrue();
        assertThat(MappedMemoryFault.is(new InternalError(
                "a fault occurred in a recent unsafe memory access operation in compiled Java code"))).isTrue();
        assertThat(MappedMemoryFault.is(new InternalError("unexpected state in the interpreter"))).isFalse();
        assertThat(MappedMemoryFault.is(new InternalError((String) null))).isFalse();
    }

    /** PayloadEncoder.checkWritten: a length in 0..maxLength is returned; any other is an IllegalStateException naming both numbers. */
    @Test
    void checkWrittenPassesALengthTheTargetHoldsAndNamesBothNumbersOtherwise() {
        assertThat(PayloadEncoder.checkWritten(0, 64)).isZero();
        assertThat(PayloadEncoder.checkWritten(64, 64)).isEqualTo(64);
        assertThatThrownBy(() -> PayloadEncoder.checkWritten(65, 64)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("returned 65 bytes written, outside 0..64").hasMessageContaining("nothing was sent");
        assertThatThrownBy(() -> PayloadEncoder.checkWritten(-1, 64)).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("-1").hasMessageContaining("0..64");
    }
}
