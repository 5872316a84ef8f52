package dev.conduit.linux;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * The Linux system calls Conduit's plugins need, one method per call, with Java types.
 *
 * <p>Used by the memfd, posix and devdax plugins and the shared-memory transport, never by
 * applications; obtained from {@link Linux#libc()}. An interface so that a plugin's tests can put
 * a fake in front of the kernel; the one implementation calls the C library through FFM.
 *
 * <p>Conventions, which every method follows:
 * <ul>
 *   <li>A failure throws {@link ErrnoException} naming the call, the errno and the path or
 *       descriptor, never returns {@code -1}. The exception is {@link #WOULD_BLOCK}: a
 *       non-blocking operation that would block returns it (or {@code null}, {@code false},
 *       {@code 0}, as documented), because for such descriptors it is the normal case.</li>
 *   <li>{@code EINTR} is retried wherever a retry is the same operation: I/O, {@code open},
 *       {@code flock}, {@code accept4}, {@code connect} (an interrupted AF_UNIX connect has not
 *       started, unlike TCP), {@code poll} (with the remaining time). It is never retried for
 *       {@code close}, and a futex wait reports it as a wake.</li>
 *   <li>Every descriptor created is close-on-exec ({@code O_CLOEXEC}, {@code MFD_CLOEXEC},
 *       {@code SOCK_CLOEXEC}, {@code EFD_CLOEXEC}, {@code MSG_CMSG_CLOEXEC} are added), so none
 *       leaks into a child process. Sends add {@code MSG_NOSIGNAL}: a gone peer is an
 *       {@code EPIPE}, not a signal.</li>
 *   <li>Buffers are {@link MemorySegment}s. {@link #read}, {@link #write}, {@link #send},
 *       {@link #recv} pass the segment itself to the kernel, so it must be native; its arena
 *       cannot be closed during the call. Paths are Java strings, encoded as UTF-8; a path
 *       containing NUL is refused with {@link IllegalArgumentException} instead of being cut
 *       short at the NUL.</li>
 *   <li>A call that blocks ({@code poll} or a futex wait without limit, {@code flock} without
 *       {@code LOCK_NB}, a read, {@code recv} or {@code accept} on a blocking descriptor that has
 *       nothing) is not ended by {@link Thread#interrupt()}: HotSpot interrupts a thread without a
 *       signal, so the kernel never learns of it. Give such a call a timeout, or poll an eventfd
 *       beside the descriptor and write it to stop the wait. A virtual thread in such a call holds
 *       its carrier thread for as long as it blocks.</li>
 * </ul>
 *
 * <p>The implementation is thread-safe: methods may be called from any thread, concurrently.
 */
public interface Libc {

    /** Returned by non-blocking reads and writes that would have blocked ({@code EAGAIN}/{@code EWOULDBLOCK}). */
    int WOULD_BLOCK = -1;

    // ---------------------------------------------------------------- memory files and mappings

    /**
     * {@code memfd_create(2)}: an anonymous file in memory, for a chunk that is shared by
     * passing its descriptor.
     *
     * @param name  shown in {@code /proc/<pid>/fd} and {@code /proc/<pid>/maps} as {@code memfd:name}; at most 249 bytes
     *              of UTF-8
     * @param flags {@link MemfdFlags}; {@code MFD_CLOEXEC} is added
     * @throws ErrnoException {@code EINVAL} before any system call for a longer name, naming its length and the
     *                        limit (until 2026-12-07 the kernel's bare {@code EINVAL})
     */
    FileDescriptor memfdCreate(String name, int flags);

    /** {@code ftruncate(2)}: sets the file's size. Fails with {@code EPERM} on a memfd sealed against it. */
    void ftruncate(FileDescriptor fd, long length);

    /**
     * {@code fallocate(fd, 0, offset, length)}: allocates the file's pages in that range now, so
     * that a shortage fails here with an errno ({@code ENOSPC}, {@code ENOMEM}) rather than as a
     * {@code SIGBUS} at the first touch of a mapping (a hugetlbfs file whose cgroup's
     * {@code hugetlb} limit is charged at fault time, say).
     */
    void fallocate(FileDescriptor fd, long offset, long length);

    /** {@code fcntl(fd, F_ADD_SEALS, seals)}: adds {@link Seals} to a memfd created with {@code MFD_ALLOW_SEALING}. */
    void addSeals(FileDescriptor fd, int seals);

    /** {@code fcntl(fd, F_GET_SEALS)}: the {@link Seals} on a memfd. */
    int seals(FileDescriptor fd);

    /** {@code fcntl(fd, F_GETFL)}: the file status flags (access mode, {@code O_NONBLOCK}, {@code O_APPEND}). */
    int fileStatusFlags(FileDescriptor fd);

    /**
     * {@code fcntl(fd, F_SETFL, flags)}: sets {@code O_NONBLOCK}, {@code O_APPEND} and
     * {@code O_NOATIME}; other bits are ignored by Linux.
     *
     * @throws ErrnoException {@code EPERM} when {@code O_NOATIME} is to be set on a file of another
     *                        user ({@link OpenFlags#O_NOATIME})
     */
    void setFileStatusFlags(FileDescriptor fd, int flags);

    /** Switches {@code O_NONBLOCK} on or off, keeping the other status flags. */
    default void setNonBlocking(FileDescriptor fd, boolean nonBlocking) {
        int flags = fileStatusFlags(fd);
        int updated = nonBlocking ? flags | OpenFlags.O_NONBLOCK : flags & ~OpenFlags.O_NONBLOCK;
        if (updated != flags) {
            setFileStatusFlags(fd, updated);
        }
    }

    /**
     * {@code mmap(2)}: maps {@code length} bytes of {@code fd} from {@code offset}, as a segment
     * of {@code arena}. Closing the arena releases the mapping; from then on any access through the
     * segment throws {@link IllegalStateException} instead of touching unmapped memory. There is
     * deliberately no public {@code munmap}: unmapping behind the arena's back would leave a
     * live segment over unmapped memory, and a JVM crash on the next access.
     *
     * <p>The close releases the file's pages at once, but keeps the address range for a second
     * before unmapping it: meanwhile it maps an empty memfd ({@code memfd:conduit-closed-mapping}
     * in {@code /proc/self/maps}), so an access that outlives the close faults with the JVM's
     * {@link InternalError} instead of crashing the JVM or reaching whatever is mapped there next
     * (except a compare-and-set the interpreter runs, which the JVM does not guard).
     * Such an access exists when the JDK's close handshake misses a thread (JDK-8364167). At most
     * 4096 closed ranges are kept; past that, the oldest is unmapped at once, and so is a range
     * whose placeholder cannot be made (out of descriptors, say) or when no thread can be started
     * to unmap it later.
     *
     * <p>A {@linkplain Arena#ofShared() shared} arena's close is costly (a handshake with every
     * thread): map chunks, not messages.
     *
     * <p>A file on hugetlbfs (an {@link MemfdFlags#MFD_HUGETLB} memfd among them) is mapped and
     * unmapped in whole huge pages only: a {@code length} that is not a multiple of its huge page
     * size ({@code fstatfs}'s {@code f_bsize}) is refused before anything is mapped. Until
     * 2026-12-07 such a mapping was made, and its close failed with {@code EINVAL}, leaving it, its
     * huge page and its file for the life of the process. Every mapping of a file asks
     * {@code fstatfs} which file system holds it.
     *
     * @param offset     a multiple of the page size (of the huge page size on hugetlbfs)
     * @param protection {@link MmapFlags} {@code PROT_*}
     * @param flags      {@link MmapFlags} {@code MAP_*}, normally {@code MAP_SHARED}
     * @throws IllegalArgumentException if {@code length} is not positive or {@code offset} negative,
     *                                  or the file is on hugetlbfs and {@code length} is not a multiple
     *                                  of its huge page size (the message names both)
     */
    MemorySegment mmap(FileDescriptor fd, long offset, long length, int protection, int flags, Arena arena);

    /**
     * As {@link #mmap}, at an address that is a multiple of {@code alignment}. The kernel aligns a
     * mapping only to its own page (a device-DAX character device to its unit, a regular file not):
     * this reserves {@code length + alignment} bytes of address space with no access, maps the file
     * over the aligned part of it, and gives the rest back. Closing the arena releases exactly
     * {@code length} bytes, as with {@link #mmap}; a file on hugetlbfs is refused a {@code length}
     * that is not whole huge pages, as with {@link #mmap}, before any address space is reserved.
     *
     * @param alignment a power of two; at most the kernel's page size makes this a plain {@link #mmap}
     * @throws IllegalArgumentException if {@code alignment} is not a power of two, {@code length}
     *                                  plus {@code alignment} is past {@link Long#MAX_VALUE} (until
     *                                  2026-12-07 an {@link ArithmeticException}), or as {@link #mmap}
     */
    MemorySegment mmapAligned(FileDescriptor fd, long offset, long length, long alignment, int protection, int flags, Arena arena);

    // ---------------------------------------------------------------- files

    /**
     * {@code open(2)}.
     *
     * @param flags {@link OpenFlags} {@code O_*}; {@code O_CLOEXEC} is added
     * @param mode  permissions of a created file (used with {@code O_CREAT}), such as {@code 0600}
     */
    FileDescriptor open(String path, int flags, int mode);

    /** {@code openat(2)}: opens {@code path} relative to {@code directory}; see {@link #open}. */
    FileDescriptor openat(FileDescriptor directory, String path, int flags, int mode);

    /**
     * {@code openat2(2)} (Linux 5.6): {@link #openat} with {@code RESOLVE_*} restrictions on how
     * the path may be resolved.
     *
     * <p>Under {@code RESOLVE_BENEATH} or {@code RESOLVE_IN_ROOT} the kernel answers a {@code ..}
     * that a rename or mount anywhere on the system raced with {@code EAGAIN}; a call for a path
     * with a {@code ..} is tried again, up to 16 times, before the {@code EAGAIN} is thrown. An
     * {@code EAGAIN} for a path without one has another cause and is thrown at once.
     *
     * @param resolve {@link OpenFlags} {@code RESOLVE_*}
     * @throws ErrnoException {@code EXDEV} for a path that leaves {@code directory} under
     *                        {@code RESOLVE_BENEATH}, {@code ELOOP} for a symbolic link under
     *                        {@code RESOLVE_NO_SYMLINKS}, {@code ENOSYS} on kernels before 5.6
     */
    FileDescriptor openat2(FileDescriptor directory, String path, int flags, int mode, long resolve);

    /**
     * Opens {@code path} only if it stays beneath {@code directory} and crosses no symbolic
     * link: what a path taken from an IPC handle needs (DESIGN §4). Uses {@link #openat2} with
     * {@code RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS}; only where {@code openat2} is missing
     * ({@code ENOSYS}, remembered for later opens) or refused with {@code EPERM} (what a container's
     * seccomp profile older than the call answers, Docker's before 20.10; tried again at the next
     * open, as an {@code EPERM} may be this open's own) it walks the path one
     * {@code openat(O_NOFOLLOW)} at a time instead, refusing {@code ..} and absolute paths itself. Either way: {@code EXDEV} for a path that
     * leaves the directory, {@code ELOOP} for a symbolic link on the path or at its end, except
     * that {@code O_PATH|O_NOFOLLOW} opens a link at its end itself, as {@code open(2)} does (a
     * descriptor to {@link #fstat} the link with, not to follow it).
     */
    FileDescriptor openBeneath(FileDescriptor directory, String path, int flags, int mode);

    /** {@code unlinkat(2)}: removes {@code path} relative to {@code directory}; {@code flags} may be {@code AT_REMOVEDIR}. */
    void unlinkat(FileDescriptor directory, String path, int flags);

    /**
     * {@code fchownat(2)}: sets the owner and group of {@code path} relative to {@code directory}
     * ({@code -1} leaves either as it is); with {@code AT_EMPTY_PATH} and an empty path, of the
     * file {@code directory} names itself, an {@code O_PATH} descriptor of a socket included.
     * Without privilege only the file's owner may set its owner, and only to itself: which proves
     * a file this user's where nothing else can be done with it (a socket opens for no I/O).
     *
     * @throws ErrnoException {@code EPERM} when this process may not (the file is another user's),
     *                        {@code EROFS} on a read-only mount
     */
    void fchownat(FileDescriptor directory, String path, int uid, int gid, int flags);

    /**
     * {@code renameat(2)}: renames {@code from} to {@code to}, both relative to {@code directory},
     * atomically, replacing what {@code to} names: a file made under a temporary name appears under
     * its own complete (a socket already listening, say).
     */
    void renameat(FileDescriptor directory, String from, String to);

    /** {@code mkdirat(2)}: creates directory {@code path} relative to {@code directory}, with permissions {@code mode} (less the umask). */
    void mkdirat(FileDescriptor directory, String path, int mode);

    /**
     * The names in {@code directory}, but {@code .} and {@code ..}, in the kernel's order: read
     * with {@code getdents64(2)} from a descriptor of the same directory opened for the listing
     * ({@code openat(directory, ".")}, so the given descriptor's file offset is not moved and
     * threads may list at once). Names are decoded as UTF-8, as paths are encoded. The directory
     * listed is the one the descriptor holds, also when its path now names another.
     *
     * @throws ErrnoException from {@code openat} (e.g. {@code EMFILE}: the listing takes a
     *                        descriptor) or {@code getdents64} ({@code ENOENT} once the directory
     *                        was removed, {@code EIO})
     */
    java.util.List<String> listDirectory(FileDescriptor directory);

    /** {@code fstat(2)}: size, type, owner and device numbers of an open file. */
    FileStatus fstat(FileDescriptor fd);

    /** {@code f_type} of {@code statfs(2)} for hugetlbfs: {@link #fileSystemType} of a file of huge pages, a {@code MFD_HUGETLB} memfd among them. */
    long HUGETLBFS_MAGIC = 0x958458f6L;

    /** {@code f_type} of {@code statfs(2)} for tmpfs (and a memfd's file system), as {@link FileSystemSpace#type}. */
    long TMPFS_MAGIC = 0x01021994L;

    /** {@code f_type} of {@code statfs(2)} for ramfs, as {@link FileSystemSpace#type}. */
    long RAMFS_MAGIC = 0x858458f6L;

    // File systems that more than one kernel may see at once (another host's, a VM's host or guest), each through a page
    // cache of its own: a file mapped MAP_SHARED through them is shared memory only among the processes of one kernel.

    /** {@code f_type} of {@code statfs(2)} for NFS (every version), as {@link FileSystemSpace#type}. */
    long NFS_SUPER_MAGIC = 0x6969L;

    /** {@code f_type} of {@code statfs(2)} for the old smbfs, as {@link FileSystemSpace#type}. */
    long SMB_SUPER_MAGIC = 0x517BL;

    /** {@code f_type} of {@code statfs(2)} for CIFS (the cifs client), as {@link FileSystemSpace#type}. */
    long CIFS_SUPER_MAGIC = 0xFF534D42L;

    /** {@code f_type} of {@code statfs(2)} for SMB2/3 (the smb3 client), as {@link FileSystemSpace#type}. */
    long SMB2_SUPER_MAGIC = 0xFE534D42L;

    /** {@code f_type} of {@code statfs(2)} for CephFS, as {@link FileSystemSpace#type}. */
    long CEPH_SUPER_MAGIC = 0x00c36400L;

    /** {@code f_type} of {@code statfs(2)} for 9p (v9fs: a VM's share from its host without DAX), as {@link FileSystemSpace#type}. */
    long V9FS_MAGIC = 0x01021997L;

    /** {@code f_type} of {@code statfs(2)} for FUSE, virtiofs among its file systems, as {@link FileSystemSpace#type}. */
    long FUSE_SUPER_MAGIC = 0x65735546L;

    /** {@code f_type} of {@code statfs(2)} for the AFS client (kAFS), as {@link FileSystemSpace#type}. */
    long AFS_SUPER_MAGIC = 0x5346414FL;

    /** {@code f_type} of {@code statfs(2)} for AFS's dynamic root and OpenAFS, as {@link FileSystemSpace#type}. */
    long AFS_FS_MAGIC = 0x6B414653L;

    /** {@code f_type} of {@code statfs(2)} for Coda, as {@link FileSystemSpace#type}. */
    long CODA_SUPER_MAGIC = 0x73757245L;

    /** {@code f_type} of {@code statfs(2)} for OCFS2, a cluster file system on a disk several hosts mount, as {@link FileSystemSpace#type}. */
    long OCFS2_SUPER_MAGIC = 0x7461636fL;

    /** {@code f_type} of {@code statfs(2)} for GFS2, a cluster file system on a disk several hosts mount, as {@link FileSystemSpace#type}. */
    long GFS2_MAGIC = 0x01161970L;

    /**
     * {@code fstatfs(2)}'s {@code f_type}: the kind of file system that holds an open file, such as
     * {@link #HUGETLBFS_MAGIC}. Tells what {@code fstat} cannot: a memfd of huge pages from one of
     * normal pages, which differ in what a hole punched into them does.
     */
    long fileSystemType(FileDescriptor fd);

    /**
     * {@code fstatfs(2)} of an open file: the kind, the block size and the size of the file system
     * that holds it, and the room left there ({@link FileSystemSpace}). Of a directory's descriptor, it measures
     * where files created through it go, which its path may no longer name.
     */
    FileSystemSpace fileSystemSpace(FileDescriptor fd);

    /**
     * {@code statx(2)} of an open file ({@code AT_EMPTY_PATH}) for its birth time
     * ({@code stx_btime}): when the file was made, in nanoseconds since the epoch; or
     * {@value #NO_BIRTH_TIME} when its file system does not record one ({@code STATX_BTIME}
     * left out of {@code stx_mask}: tmpfs before Linux 5.18, ...) or the kernel has no
     * {@code statx} ({@code ENOSYS}, before 4.11, or {@code EPERM} from a seccomp filter that
     * does not know it). An optional operation: "not recorded" is an answer, never a guess.
     *
     * @throws ErrnoException for any other failure ({@code EBADF})
     */
    long birthTimeNanos(FileDescriptor fd);

    /** What {@link #birthTimeNanos} returns for a file whose birth time is not recorded. */
    long NO_BIRTH_TIME = 0;

    /** {@code fchmod(2)}: sets the permissions of an open file (not affected by the umask). */
    void fchmod(FileDescriptor fd, int mode);

    /**
     * {@code flock(2)}: takes or releases an advisory lock on the whole file. The lock belongs to
     * the open file description: another {@code open} of the same file conflicts with it, a
     * duplicated or passed descriptor shares it.
     *
     * @param operation {@link LockFlags}: {@code LOCK_SH} or {@code LOCK_EX}, optionally with
     *                  {@code LOCK_NB}; or {@code LOCK_UN}
     * @throws ErrnoException {@code EWOULDBLOCK} if {@code LOCK_NB} was given and another open holds a conflicting lock
     */
    void flock(FileDescriptor fd, int operation);

    /**
     * Takes a lock without waiting: {@code flock(fd, operation|LOCK_NB)}.
     *
     * @return {@code false} if another open of the file holds a conflicting lock
     */
    boolean tryFlock(FileDescriptor fd, int operation);

    /**
     * {@code read(2)} into {@code buffer}.
     *
     * @return bytes read; 0 at end of file; {@link #WOULD_BLOCK} if a non-blocking descriptor has nothing
     * @throws IllegalArgumentException if {@code buffer} is read-only (the kernel would write into it anyway)
     */
    int read(FileDescriptor fd, MemorySegment buffer);

    /**
     * {@code write(2)} from {@code buffer}; may write fewer bytes than asked.
     *
     * @return bytes written, or {@link #WOULD_BLOCK} if a non-blocking descriptor has no room
     */
    int write(FileDescriptor fd, MemorySegment buffer);

    // ---------------------------------------------------------------- Unix sockets

    /**
     * {@code socket(AF_UNIX, type|SOCK_CLOEXEC, 0)}.
     *
     * @param type {@link SocketFlags} {@code SOCK_STREAM} (or another type), optionally with {@code SOCK_NONBLOCK}
     */
    FileDescriptor socket(int type);

    /** {@code socketpair(AF_UNIX, type|SOCK_CLOEXEC, 0)}: two connected sockets. */
    SocketPair socketpair(int type);

    /**
     * {@code bind(2)} to a path in the file system, which must not exist yet.
     *
     * @throws ErrnoException {@code ENAMETOOLONG} before any system call if the path is longer
     *                        than {@link SocketFlags#SUN_PATH_MAX} bytes of UTF-8
     */
    void bind(FileDescriptor socket, String path);

    /** {@code listen(2)}. */
    void listen(FileDescriptor socket, int backlog);

    /**
     * {@code accept4(2)}: the next connection on a listening socket.
     *
     * @param flags {@code SOCK_NONBLOCK} for a non-blocking connection, or 0; {@code SOCK_CLOEXEC} is added
     * @return the connection, or {@code null} if the listener is non-blocking and none is pending
     */
    FileDescriptor accept(FileDescriptor listener, int flags);

    /**
     * {@code connect(2)} to the socket bound at {@code path}.
     *
     * @throws ErrnoException {@code ENAMETOOLONG} before any system call if the path is longer
     *                        than {@link SocketFlags#SUN_PATH_MAX} bytes of UTF-8;
     *                        {@code ECONNREFUSED} if nobody listens there; {@code EAGAIN} if
     *                        the socket is non-blocking and the listener's backlog is full
     */
    void connect(FileDescriptor socket, String path);

    /**
     * {@code send(2)}; {@code MSG_NOSIGNAL} is added.
     *
     * @param flags {@link SocketFlags} {@code MSG_*}
     * @return bytes sent, or {@link #WOULD_BLOCK}
     */
    int send(FileDescriptor socket, MemorySegment buffer, int flags);

    /**
     * {@code recv(2)}. For a stream socket, what Conduit uses it on. On a datagram or seqpacket
     * socket a message longer than {@code buffer} is cut to it and the rest discarded, and
     * {@code recv(2)} says nothing of it (its {@code MSG_TRUNC} flag means another thing on TCP, and
     * is ignored on a stream of this family): receive such messages with {@link #recvmsg}, which
     * refuses one cut short.
     *
     * @param flags {@link SocketFlags} {@code MSG_*}
     * @return bytes received; 0 once the peer has closed; {@link #WOULD_BLOCK}
     * @throws IllegalArgumentException if {@code buffer} is read-only (the kernel would write into it anyway)
     */
    int recv(FileDescriptor socket, MemorySegment buffer, int flags);

    /**
     * {@code sendmsg(2)}: sends {@code data} and, with it, duplicates of {@code fds}
     * ({@code SCM_RIGHTS}). The descriptors travel with the first byte; on a stream socket a
     * short send has still delivered them, so send the rest with {@link #send}.
     *
     * <p>Meant for handshakes and descriptor passing, not bulk data: {@code data} is copied
     * through a private buffer, which is why it may be any segment, heap or native.
     *
     * @param fds at most 253 ({@code SCM_MAX_FD}); they stay open here
     * @return bytes sent, or {@link #WOULD_BLOCK}
     * @throws IllegalArgumentException if descriptors are to be sent with an empty {@code data}:
     *                                  the kernel would drop them
     */
    int sendmsg(FileDescriptor socket, MemorySegment data, FileDescriptor... fds);

    /**
     * {@code recvmsg(2)} with {@code MSG_CMSG_CLOEXEC}: receives bytes into {@code buffer} and up
     * to {@code maxFds} descriptors. If more descriptors arrived than there was room for, every
     * one that did arrive is closed and the result says so ({@link ReceivedMessage#controlTruncated()}).
     *
     * <p>{@code buffer} may be any writable segment, heap or native; the bytes are copied into it
     * from a private buffer. Should that copy fail (the buffer's arena closed, another thread's
     * confined segment), the descriptors received are closed before the failure is thrown.
     *
     * <p>On a datagram or seqpacket socket a message longer than {@code buffer} loses its tail in
     * the kernel ({@code MSG_TRUNC}): it is refused, never handed out cut short, and the
     * descriptors that came with it are closed. Until 2026-12-07 the part that fit was returned
     * as if it were the whole message.
     *
     * @throws IllegalArgumentException if {@code buffer} is read-only
     * @throws ErrnoException {@code EMSGSIZE} for a message longer than {@code buffer}, naming the
     *                        buffer's length (the message is gone; a stream socket never has one)
     */
    ReceivedMessage recvmsg(FileDescriptor socket, MemorySegment buffer, int maxFds);

    /** {@code getsockopt(SOL_SOCKET, SO_PEERCRED)}: who is at the other end of a connected Unix socket. */
    PeerCredentials peerCredentials(FileDescriptor socket);

    // ---------------------------------------------------------------- waiting and waking

    /**
     * {@code poll(2)} on one descriptor.
     *
     * @param events        {@link PollEvents}
     * @param timeoutMillis how long to wait; 0 to check without waiting; negative to wait without limit
     * @return the events that occurred ({@code revents}), 0 if the timeout passed
     */
    int poll(FileDescriptor fd, int events, int timeoutMillis);

    /**
     * {@code poll(2)} on several descriptors: {@code revents[i]} receives what happened on
     * {@code fds[i]}, of {@code events[i]} and the error conditions.
     *
     * @return how many descriptors have events, 0 if the timeout passed
     */
    int poll(FileDescriptor[] fds, int[] events, int[] revents, int timeoutMillis);

    /**
     * A wait of {@code nanos} as {@link #poll}'s timeout: whole milliseconds rounded up, so that a
     * wait never ends before its deadline; 0 for none left; and at most {@link Integer#MAX_VALUE}
     * (24.8 days), the longest poll takes, for a longer one (a duration key may say 292 years).
     * Rounding by {@code (nanos + 999_999) / 1_000_000} overflowed near {@link Long#MAX_VALUE} into
     * a negative timeout, which poll reads as "wait without limit".
     */
    static int pollTimeoutMillis(long nanos) {
        return (int) Math.min(Integer.MAX_VALUE, Math.ceilDiv(Math.max(0, nanos), 1_000_000L));
    }

    /**
     * {@code eventfd(2)}: a counter to signal a waiting thread or process with.
     *
     * @param flags {@link EventfdFlags}; {@code EFD_CLOEXEC} is added
     */
    FileDescriptor eventfd(int initialValue, int flags);

    /**
     * Reads an eventfd: the counter, which resets to 0 (or 1, decrementing it, with {@code EFD_SEMAPHORE}).
     *
     * @return the value read, or 0 if the eventfd is non-blocking and the counter is 0
     */
    long eventfdRead(FileDescriptor eventfd);

    /**
     * Adds {@code value} to an eventfd's counter, waking its readers.
     *
     * @return {@code false} if the eventfd is non-blocking and the counter would overflow
     */
    boolean eventfdWrite(FileDescriptor eventfd, long value);

    /**
     * {@code FUTEX_WAIT} on the 32-bit word at {@code offset} in {@code segment}: sleeps while the
     * word holds {@code expected}, until woken or the timeout passes. Not the private variant,
     * so it pairs with wakes through any mapping of the same memory, in any process.
     *
     * <p>The segment's arena stays acquired while the thread sleeps: closing a shared arena
     * then fails with {@link IllegalStateException}, so wake the waiters first.
     *
     * <p>A timeout of 0 only reads the word (no system call): {@link FutexResult#TIMED_OUT} if it
     * holds {@code expected}, else {@link FutexResult#VALUE_MISMATCH}. A positive timeout sleeps
     * on a kernel timer that may fire up to the thread's timer slack late (50 µs by default,
     * {@code prctl(PR_SET_TIMERSLACK)}), however short the timeout.
     *
     * @param timeoutNanos relative timeout; 0 to look without sleeping; negative to wait without limit
     * @throws IllegalArgumentException if the word is not 4-byte aligned
     * @throws IndexOutOfBoundsException if the word is not inside the segment
     */
    FutexResult futexWait(MemorySegment segment, long offset, int expected, long timeoutNanos);

    /**
     * {@code FUTEX_WAKE}: wakes up to {@code count} threads waiting on the word at {@code offset}
     * in {@code segment}, through any mapping of it.
     *
     * <p>Unlike {@link #futexWait}, the call does not keep the segment's arena acquired: a thread
     * it wakes may close that arena at once (a worker closing as it wakes), which would otherwise
     * fail while the waker is still returning from the kernel. The kernel reads no memory for a
     * wake. If the segment is closed meanwhile, the wake finds no page and wakes nobody (0); if
     * the range is mapped again by then, it may wake a waiter there early, which every futex
     * waiter must expect anyway.
     *
     * @param count how many waiters to wake at most, positive ({@link Integer#MAX_VALUE} for all)
     * @return how many were woken
     * @throws IllegalArgumentException if {@code count} is not positive (the kernel would wake one
     *                                  for 0), the word is not 4-byte aligned, or the segment is a heap
     *                                  segment, which no kernel call can reach (until 2026-12-07 the
     *                                  wake answered 0 woken)
     * @throws IndexOutOfBoundsException if the word is not inside the segment
     */
    int futexWake(MemorySegment segment, long offset, int count);

    // ---------------------------------------------------------------- the process, for diagnostics

    /** {@code getuid(2)}: the real user id, the user who started the process. */
    int getuid();

    /**
     * {@code geteuid(2)}: the effective user id, the one the files and sockets this process creates
     * carry (through the file-system uid, which follows it) and the one peers see through
     * {@link PeerCredentials#uid()}: this process's own user when judging a file's owner or a
     * peer. It differs from {@link #getuid()} only in a process started through a set-user-id
     * program that did not set both.
     */
    int geteuid();

    /** {@code getpid(2)}: for diagnostics only; Conduit never identifies a process by pid. */
    int getpid();

    /**
     * A native call that does nothing ({@code getpagesize}, which glibc answers from memory), for
     * what its return to Java does: HotSpot throws the {@code InternalError} of a {@code SIGBUS}
     * that compiled code took on mapped memory at the thread's next safepoint check or native
     * transition, which may lie past the access's {@code try} block, up in its caller (inside a
     * lock's unlock, whose waiters it then strands). Called right after an access to memory that
     * another process may truncate, it makes the error come out there.
     */
    void deliverPendingFaults();
}
