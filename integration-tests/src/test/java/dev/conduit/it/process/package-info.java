/**
 * The multi-process harness of the integration tests: real JVMs, started like the test JVM, driven
 * over their stdin and stdout.
 *
 * <ul>
 *   <li>{@link dev.conduit.it.process.ChildJvm} — the test's side: starts a main class of this
 *       module on the same module path or class path, with the same native-access grant, the
 *       test's shared directory in {@code CONDUIT_SHARED_DIR} and chosen environment variables;
 *       sends commands and reads {@code OK}/{@code ERR} replies; captures stderr; {@code kill()}
 *       is {@code SIGKILL} to the JVM; {@code close()} always ends the child and asserts it ended.
 *       Every wait is bounded; no test asserts a duration.</li>
 *   <li>{@link dev.conduit.it.process.Launcher} — {@code direct()}, or {@code container()}: the
 *       child under {@code unshare} in new PID, IPC, UTS, mount and network namespaces, with
 *       hostname {@code conduit-container} and the shared directory bind-mounted at a fresh path
 *       under {@code /tmp}; the javadoc of {@link dev.conduit.it.process.Launcher.Container} says
 *       which process a signal reaches. {@code rootlessContainer(uid)}: the same, started by
 *       host user {@code uid} in a user namespace of its own whose root is {@code uid};
 *       {@code keepIdContainer(uid)}: that container with its JVM running as {@code uid} inside it
 *       too (podman's {@code --userns=keep-id}); {@code nobodyContainer(uid)}: started by {@code uid} in a
 *       user namespace that maps only its uid 65534 (nobody, the overflow uid) to {@code uid}, its JVM
 *       running as that uid without capabilities (rootless {@code podman run --user nobody});
 *       {@code asUser(uid)}: a direct child as that user, the host side of such a container.</li>
 *   <li>{@link dev.conduit.it.process.CommandLoop} — the child's side of the line protocol, with
 *       the {@code READY} line (pid, uid, hostname, shared directory, loading, namespaces).</li>
 *   <li>{@link dev.conduit.it.process.ConduitPeer} / {@link dev.conduit.it.process.RemotePeer} — a
 *       child that uses Conduit as an application does (open, pools, regions, handles, imports,
 *       patterns, IPC cache counters, what it holds open), and its typed client. Tests of workers
 *       and endpoints add their commands to {@code ConduitPeer}.</li>
 *   <li>{@link dev.conduit.it.process.OpenResources}, {@link dev.conduit.it.process.Patterns} —
 *       what a process holds open, from {@code /proc/self}, and which descriptors it opened since a
 *       first look; byte patterns checked on both sides.</li>
 * </ul>
 */
package dev.conduit.it.process;
