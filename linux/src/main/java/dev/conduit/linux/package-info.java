/**
 * Linux system calls for Conduit's plugins: {@link dev.conduit.linux.Linux} says whether they can
 * be made here and hands out the {@link dev.conduit.linux.Libc}; descriptors are owned
 * {@link dev.conduit.linux.FileDescriptor}s; failures are {@link dev.conduit.linux.ErrnoException}s;
 * C constants live in one class per family ({@link dev.conduit.linux.OpenFlags},
 * {@link dev.conduit.linux.Seals}, {@link dev.conduit.linux.MmapFlags}, ...), under their C names;
 * an {@code mmap} that fails with {@code ENOMEM} counts the mappings against their limit
 * ({@link dev.conduit.linux.MappingCount}).
 */
package dev.conduit.linux;
