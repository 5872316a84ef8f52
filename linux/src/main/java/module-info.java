/**
 * Linux system calls for Conduit's plugins, through the FFM API: memfd and seals, mmap, files
 * and {@code flock}, AF_UNIX sockets with {@code SCM_RIGHTS} and {@code SO_PEERCRED}, futex,
 * eventfd and poll. Failures become {@link dev.conduit.linux.ErrnoException}s that name the
 * call, the errno and the path or descriptor.
 *
 * <p>Used by the memfd, posix and devdax plugins and the shared-memory transport, never by
 * applications. Entry point: {@link dev.conduit.linux.Linux}. The JVM must grant this module
 * native access ({@code --enable-native-access=dev.conduit.linux}); without it
 * {@link dev.conduit.linux.Linux#unavailabilityCause()} says so.
 */
module dev.conduit.linux {
    requires transitive dev.conduit.spi;

    exports dev.conduit.linux;
}
