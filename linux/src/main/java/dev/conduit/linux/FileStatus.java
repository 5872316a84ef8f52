package dev.conduit.linux;

/**
 * The fields of {@code struct stat} that Conduit uses, from {@link Libc#fstat}.
 *
 * <p>Used by the providers to check what they opened: the size of a shared file, that a
 * device-DAX path is a character device and which one ({@link #rdevMajor()}:{@link #rdevMinor()}
 * locates it under {@code /sys/dev/char}), that a file belongs to the expected user and is not
 * readable by others, how old a file left by a killed process is, whether a file still has a name
 * (an owner's lease that a cleaner removed from the shared directory while it was held). Also holds the {@code S_IF*} file-type constants.
 *
 * @param size  size in bytes ({@code st_size})
 * @param mode  file type and permission bits ({@code st_mode})
 * @param uid   owner user id ({@code st_uid}, unsigned)
 * @param gid   owner group id ({@code st_gid}, unsigned)
 * @param dev   the device that holds the file ({@code st_dev})
 * @param rdev  the device this file is, for device nodes ({@code st_rdev})
 * @param inode inode number ({@code st_ino})
 * @param modifiedMillis when the file's contents last changed, in milliseconds since the epoch ({@code st_mtim})
 * @param links how many names the file has ({@code st_nlink}): 0 once every name was removed while it is open
 */
public record FileStatus(long size, int mode, int uid, int gid, long dev, long rdev, long inode, long modifiedMillis, long links) {

    /**
     * A status of a file with one name: the record as it was before {@code links}, whose
     * constructor a plugin's test double may call.
     */
    public FileStatus(long size, int mode, int uid, int gid, long dev, long rdev, long inode, long modifiedMillis) {
        this(size, mode, uid, gid, dev, rdev, inode, modifiedMillis, 1);
    }

    /** Mask of the file-type bits of {@link #mode()}. */
    public static final int S_IFMT = 0170000;
    public static final int S_IFSOCK = 0140000;
    public static final int S_IFLNK = 0120000;
    public static final int S_IFREG = 0100000;
    public static final int S_IFBLK = 060000;
    public static final int S_IFDIR = 040000;
    public static final int S_IFCHR = 020000;
    public static final int S_IFIFO = 010000;

    /** The file type bits of {@link #mode()}, comparable with the {@code S_IF*} constants. */
    public int fileType() {
        return mode & S_IFMT;
    }

    /** The permission bits of {@link #mode()} (including set-user-id, set-group-id and sticky), such as {@code 0600}. */
    public int permissions() {
        return mode & 07777;
    }

    /** What the file is, for a message: "a regular file", "a FIFO", "a character device", ... */
    public String typeName() {
        return switch (fileType()) {
            case S_IFREG -> "a regular file";
            case S_IFDIR -> "a directory";
            case S_IFIFO -> "a FIFO";
            case S_IFSOCK -> "a socket";
            case S_IFCHR -> "a character device";
            case S_IFBLK -> "a block device";
            case S_IFLNK -> "a symbolic link";
            default -> "file type 0" + Integer.toOctalString(fileType());
        };
    }

    public boolean isRegularFile() {
        return fileType() == S_IFREG;
    }

    public boolean isDirectory() {
        return fileType() == S_IFDIR;
    }

    public boolean isCharacterDevice() {
        return fileType() == S_IFCHR;
    }

    /** The major number of {@link #rdev()}: the driver of a device node. */
    public int rdevMajor() {
        return major(rdev);
    }

    /** The minor number of {@link #rdev()}: the device instance within its driver. */
    public int rdevMinor() {
        return minor(rdev);
    }

    /** The major number of a {@code dev_t}, as glibc's {@code major(3)} computes it (12 bits low, 20 high). */
    public static int major(long dev) {
        return (int) (((dev >>> 8) & 0xfffL) | ((dev >>> 32) & ~0xfffL));
    }

    /** The minor number of a {@code dev_t}, as glibc's {@code minor(3)} computes it (8 bits low, 24 high). */
    public static int minor(long dev) {
        return (int) ((dev & 0xffL) | ((dev >>> 12) & ~0xffL));
    }

    /** The {@code dev_t} of a major and minor number, as glibc's {@code makedev(3)} computes it. */
    public static long makedev(int major, int minor) {
        long ma = Integer.toUnsignedLong(major);
        long mi = Integer.toUnsignedLong(minor);
        return ((ma & 0xfffL) << 8) | ((ma & ~0xfffL) << 32) | (mi & 0xffL) | ((mi & ~0xffL) << 12);
    }
}
