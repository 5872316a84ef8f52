package dev.conduit.internal.threading;

import dev.conduit.ThreadPolicy;

/** {@code MULTI} over plugins that all declare {@code MULTI}: they are thread-safe themselves. */
public final class PassThrough extends ThreadGuard {

    @Override
    public void enter() {
    }

    @Override
    public boolean tryEnter() {
        return true;
    }

    @Override
    public void exit() {
    }

    @Override
    public ThreadPolicy policy() {
        return ThreadPolicy.PASS_THROUGH;
    }
}
