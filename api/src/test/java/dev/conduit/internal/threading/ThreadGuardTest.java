package dev.conduit.internal.threading;

import dev.conduit.ThreadPolicy;
import dev.conduit.spi.ConcurrentUseException;
import dev.conduit.spi.ThreadMode;
import org.junit.jupiter.api.Test;

import java.util.EnumSet;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The guards on their own: re-entry, release, and the choice of guard. */
class ThreadGuardTest {

    @Test
    void overlapCheckLetsTheThreadInsideReenter() throws Exception {
        OverlapCheck guard = new OverlapCheck("worker");
        guard.enter();
        guard.enter(); // a handler that sends, from inside progress()
        guard.exit();
        assertThatThrownBy(() -> CompletableFuture.runAsync(guard::enter).get(30, TimeUnit.SECONDS))
                .hasCauseInstanceOf(ConcurrentUseException.class);
        // Conduit.close() tries a SERIALIZED worker's guard to close it itself: never while another thread is inside.
        assertThat(CompletableFuture.supplyAsync(guard::tryEnter).get(30, TimeUnit.SECONDS)).as("tryEnter by another thread").isFalse();
        assertThat(guard.tryEnter()).as("tryEnter by the thread inside").isTrue();
        guard.exit();
        // That exit paired the tryEnter: the thread is still inside, as after the exit of an enter.
        assertThat(CompletableFuture.supplyAsync(guard::tryEnter).get(30, TimeUnit.SECONDS))
                .as("tryEnter by another thread once the inside thread's tryEnter was exited").isFalse();
        guard.exit();
        CompletableFuture.runAsync(() -> {
            guard.enter();
            guard.exit();
        }).get(30, TimeUnit.SECONDS);
    }

    @Test
    void ownerCheckAcceptsOnlyItsOwner() throws Exception {
        OwnerCheck guard = new OwnerCheck(Thread.currentThread(), "worker");
        guard.enter();
        guard.exit();
        assertThatThrownBy(() -> CompletableFuture.runAsync(guard::enter).get(30, TimeUnit.SECONDS))
                .hasCauseInstanceOf(WrongThreadException.class);
        assertThat(guard.tryEnter()).as("tryEnter by the owner").isTrue();
        guard.exit();
        assertThat(CompletableFuture.supplyAsync(guard::tryEnter).get(30, TimeUnit.SECONDS)).as("tryEnter by another thread").isFalse();
    }

    @Test
    void runtimeLockIsReentrant() throws Exception {
        RuntimeLock lock = new RuntimeLock();
        lock.enter();
        lock.enter();
        lock.exit();
        lock.exit();
        assertThat(lock.policy()).isEqualTo(ThreadPolicy.RUNTIME_LOCK);
        lock.enter();
        assertThat(lock.tryEnter()).as("tryEnter by the holder").isTrue();
        lock.exit();
        assertThat(CompletableFuture.supplyAsync(lock::tryEnter).get(30, TimeUnit.SECONDS))
                .as("tryEnter by another thread once the holder's tryEnter was exited").isFalse();
        lock.exit();
        assertThat(CompletableFuture.supplyAsync(() -> {
            boolean entered = lock.tryEnter();
            if (entered) lock.exit();
            return entered;
        }).get(30, TimeUnit.SECONDS)).as("tryEnter by another thread once the holder left").isTrue();
    }

    @Test
    void theGuardFollowsTheModeAndWhatThePluginsDeclare() {
        Set<ThreadMode> multi = EnumSet.of(ThreadMode.MULTI);
        Set<ThreadMode> serialized = EnumSet.of(ThreadMode.SERIALIZED);
        assertThat(ThreadPolicies.guard(ThreadMode.SINGLE, Map.of("a", serialized), "w").policy()).isEqualTo(ThreadPolicy.OWNER_CHECK);
        assertThat(ThreadPolicies.guard(ThreadMode.SERIALIZED, Map.of("a", multi), "w").policy()).isEqualTo(ThreadPolicy.OVERLAP_CHECK);
        assertThat(ThreadPolicies.guard(ThreadMode.MULTI, Map.of("a", multi, "b", multi), "w").policy()).isEqualTo(ThreadPolicy.PASS_THROUGH);
        assertThat(ThreadPolicies.guard(ThreadMode.MULTI, Map.of("a", multi, "b", serialized), "w").policy()).isEqualTo(ThreadPolicy.RUNTIME_LOCK);
    }

    @Test
    void supportsFollowsTheModeTable() {
        Set<ThreadMode> single = EnumSet.of(ThreadMode.SINGLE);
        assertThat(ThreadPolicies.supports(single, ThreadMode.SINGLE)).isTrue();
        assertThat(ThreadPolicies.supports(single, ThreadMode.SERIALIZED)).isFalse();
        assertThat(ThreadPolicies.supports(EnumSet.of(ThreadMode.MULTI), ThreadMode.SERIALIZED)).isTrue();
        assertThat(ThreadPolicies.supports(EnumSet.of(ThreadMode.SERIALIZED), ThreadMode.MULTI)).isFalse();
        assertThat(ThreadPolicies.needsConfinement("p", single, ThreadMode.SINGLE, false)).isFalse();
        assertThat(ThreadPolicies.needsConfinement("p", single, ThreadMode.MULTI, true)).isTrue();
        assertThat(ThreadPolicies.needsConfinement("p", EnumSet.of(ThreadMode.SERIALIZED), ThreadMode.MULTI, false)).isFalse();
    }

    @Test
    void confinementRunsCallsOnItsThreadAndPropagatesExceptionsUnchanged() {
        try (ThreadConfinement confinement = new ThreadConfinement("conduit-test-confined")) {
            Thread t = confinement.call(Thread::currentThread);
            assertThat(t.getName()).isEqualTo("conduit-test-confined");
            assertThat(confinement.call(() -> confinement.call(Thread::currentThread))).as("re-entry runs in place").isSameAs(t);
            IllegalStateException boom = new IllegalStateException("boom");
            assertThatThrownBy(() -> confinement.run(() -> {
                throw boom;
            })).isSameAs(boom);
        }
    }
}
