package dev.conduit.linux;

/**
 * The fields of {@code struct statfs} that Conduit uses, from {@link Libc#fileSystemSpace}: what
 * a file system that holds an open file is, and how much room it has.
 *
 * <p>Asked of a directory's descriptor rather than its path, it measures the file system files
 * created through that descriptor land on, even after another file system was mounted over the
 * path or the directory was moved.
 *
 * @param type           the kind of file system ({@code f_type}), such as {@link Libc#HUGETLBFS_MAGIC} or {@link Libc#TMPFS_MAGIC}
 * @param blockSize      its block size ({@code f_bsize}): the huge page size on hugetlbfs
 * @param totalBytes     its size ({@code f_blocks} fragments of {@code f_frsize} bytes); 0 for one with
 *                       no size limit (ramfs, a tmpfs mounted {@code size=0}) or none of its own
 *                       (a hugetlbfs mounted without {@code size=})
 * @param availableBytes what an unprivileged user may still fill there ({@code f_bavail} fragments)
 */
public record FileSystemSpace(long type, long blockSize, long totalBytes, long availableBytes) {
}
