package dev.conduit.plugin.verbs;

import dev.conduit.linux.Errno;
import dev.conduit.linux.ErrnoException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;

import static java.lang.foreign.ValueLayout.JAVA_INT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * What {@link FfmVerbs} says when {@code ibv_reg_mr} or {@code ibv_alloc_pd} fails, against the stand-in libibverbs of
 * {@link AsyncEventBindingTest} ({@code verbs_async_shim.c}), which fails them with the errno the test sets: the locked-memory
 * limit is the remedy of a want of memory (ENOMEM, EAGAIN) only, and for a registration so is registering less, as its caller
 * words it; any other errno gets a remedy of its own. Every registration used to say to raise the limit or lower the transport's
 * buffer counts, an EINVAL or a pool's chunk too, and a failed protection domain gave no remedy.
 */
class FfmVerbsFailureTest {

    @Test
    @SuppressWarnings("restricted") // the test module is granted native access, as the plugin is
    void aFailedRegistrationGivesTheMemlockRemedyOnlyForAWantOfMemoryAndLessAsItsCallerWordsIt(@TempDir Path directory) throws Throwable {
        Path library = AsyncEventBindingTest.shim(directory);
        MethodHandle failRegistrations = shimFunction(library, "shim_fail_registrations");
        try (Arena arena = Arena.ofConfined(); Verbs.Device device = FfmVerbs.load(library.toString()).open("shim0")) {
            Verbs.ProtectionDomain pd = device.allocateProtectionDomain();
            for (int errno : new int[] {Errno.ENOMEM, Errno.EAGAIN}) {
                failRegistrations.invokeExact(errno);
                assertThat(catchThrowable(() -> pd.register(arena.allocate(4096, 4096), 0, "allocate fewer chunks")))
                        .isInstanceOf(ErrnoException.class).hasMessageContaining(Errno.name(errno))
                        .hasMessageContaining("raise the locked-memory limit (ulimit -l, LimitMEMLOCK=) or allocate fewer chunks")
                        .hasMessageNotContaining("verbs.send.buffers");
            }
            for (int errno : new int[] {Errno.EINVAL, Errno.EFAULT, Errno.EPERM}) {
                failRegistrations.invokeExact(errno);
                assertThat(catchThrowable(() -> pd.register(arena.allocate(4096, 4096), 0, "allocate fewer chunks")))
                        .as(Errno.name(errno)).isInstanceOf(ErrnoException.class).hasMessageContaining(Errno.name(errno) + " (")
                        .hasMessageNotContaining("ulimit").hasMessageNotContaining("fewer chunks")
                        .satisfies(e -> assertThat(e.getMessage()).matches("(?s).*\\): E[A-Z]+ \\([^)]*\\): .+"));
            }
            failRegistrations.invokeExact(0);
            pd.register(arena.allocate(4096, 4096), 0, "allocate fewer chunks").close();
            pd.close();
        }
    }

    @Test
    @SuppressWarnings("restricted") // the test module is granted native access, as the plugin is
    void aFailedProtectionDomainNamesTheMemlockLimitOrTheLostDevice(@TempDir Path directory) throws Throwable {
        Path library = AsyncEventBindingTest.shim(directory);
        MethodHandle failProtectionDomains = shimFunction(library, "shim_fail_protection_domains");
        try (Verbs.Device device = FfmVerbs.load(library.toString()).open("shim0")) {
            failProtectionDomains.invokeExact(Errno.ENOMEM);
            assertThat(catchThrowable(device::allocateProtectionDomain)).isInstanceOf(ErrnoException.class)
                    .hasMessageContaining("ibv_alloc_pd(shim0): ENOMEM").hasMessageContaining("ulimit -l");
            for (int errno : new int[] {Errno.EIO, Errno.ENODEV}) {
                failProtectionDomains.invokeExact(errno);
                assertThat(catchThrowable(device::allocateProtectionDomain)).as(Errno.name(errno)).isInstanceOf(ErrnoException.class)
                        .hasMessageContaining("ibv_alloc_pd(shim0): " + Errno.name(errno))
                        .hasMessageContaining("the device context is lost").hasMessageNotContaining("ulimit");
            }
            failProtectionDomains.invokeExact(0);
            device.allocateProtectionDomain().close();
        }
    }

    @SuppressWarnings("restricted")
    private static MethodHandle shimFunction(Path library, String name) {
        SymbolLookup shim = SymbolLookup.libraryLookup(library, Arena.global());
        return Linker.nativeLinker().downcallHandle(shim.find(name).orElseThrow(), FunctionDescriptor.ofVoid(JAVA_INT));
    }
}
