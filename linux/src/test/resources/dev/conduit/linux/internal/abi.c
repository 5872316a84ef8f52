/*
 * Prints what the C headers of this machine say about every struct, field and constant the
 * Java side of dev.conduit.linux encodes, one "key value" per line, for AbiTest to compare.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <linux/gfs2_ondisk.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>

#define STRUCT(s) printf("sizeof.%s %zu\n", #s, sizeof(struct s))
#define FIELD(s, f) printf("offsetof.%s.%s %zu\nsizeof.%s.%s %zu\n", #s, #f, offsetof(struct s, f), \
                           #s, #f, sizeof(((struct s *) 0)->f))
#define CONST(c) printf("const.%s %lld\n", #c, (long long) (c))

int main(void) {
    STRUCT(iovec); FIELD(iovec, iov_base); FIELD(iovec, iov_len);
    STRUCT(msghdr); FIELD(msghdr, msg_name); FIELD(msghdr, msg_namelen); FIELD(msghdr, msg_iov);
    FIELD(msghdr, msg_iovlen); FIELD(msghdr, msg_control); FIELD(msghdr, msg_controllen); FIELD(msghdr, msg_flags);
    STRUCT(cmsghdr); FIELD(cmsghdr, cmsg_len); FIELD(cmsghdr, cmsg_level); FIELD(cmsghdr, cmsg_type);
    STRUCT(sockaddr_un); FIELD(sockaddr_un, sun_family); FIELD(sockaddr_un, sun_path);
    STRUCT(ucred); FIELD(ucred, pid); FIELD(ucred, uid); FIELD(ucred, gid);
    STRUCT(pollfd); FIELD(pollfd, fd); FIELD(pollfd, events); FIELD(pollfd, revents);
    STRUCT(open_how); FIELD(open_how, flags); FIELD(open_how, mode); FIELD(open_how, resolve);
    STRUCT(dirent64); FIELD(dirent64, d_ino); FIELD(dirent64, d_off); FIELD(dirent64, d_reclen); FIELD(dirent64, d_type);
    FIELD(dirent64, d_name);
    STRUCT(timespec); FIELD(timespec, tv_sec); FIELD(timespec, tv_nsec);
    STRUCT(stat); FIELD(stat, st_dev); FIELD(stat, st_ino); FIELD(stat, st_nlink); FIELD(stat, st_mode);
    FIELD(stat, st_uid); FIELD(stat, st_gid); FIELD(stat, st_rdev); FIELD(stat, st_size);
    FIELD(stat, st_blksize); FIELD(stat, st_blocks); FIELD(stat, st_mtim);
    STRUCT(statx_timestamp); FIELD(statx_timestamp, tv_sec); FIELD(statx_timestamp, tv_nsec);
    STRUCT(statx); FIELD(statx, stx_mask); FIELD(statx, stx_btime);
    STRUCT(statfs); FIELD(statfs, f_type); FIELD(statfs, f_bsize); FIELD(statfs, f_blocks);
    FIELD(statfs, f_bfree); FIELD(statfs, f_bavail); FIELD(statfs, f_frsize);

    /* The control-message macros, for 0 to 4 descriptors. */
    unsigned char control[CMSG_SPACE(4 * sizeof(int))];
    struct cmsghdr *cmsg = (struct cmsghdr *) control;
    printf("cmsg.data %td\n", CMSG_DATA(cmsg) - control);
    for (int n = 0; n <= 4; n++) {
        printf("cmsg.space.%d %zu\ncmsg.len.%d %zu\n", n, (size_t) CMSG_SPACE(n * sizeof(int)),
               n, (size_t) CMSG_LEN(n * sizeof(int)));
    }

    /* Errno names and texts. */
    for (int e = 1; e <= EHWPOISON; e++) {
        const char *name = strerrorname_np(e);
        if (name != NULL) {
            printf("errno.%d %s|%s\n", e, name, strerrordesc_np(e));
        }
    }

    /* Public constants (dev.conduit.linux.*Flags, Seals, PollEvents, FileStatus). */
    CONST(O_RDONLY); CONST(O_WRONLY); CONST(O_RDWR); CONST(O_ACCMODE); CONST(O_CREAT); CONST(O_EXCL);
    CONST(O_NOCTTY); CONST(O_TRUNC); CONST(O_APPEND); CONST(O_NONBLOCK); CONST(O_DIRECTORY);
    CONST(O_NOFOLLOW); CONST(O_CLOEXEC); CONST(O_PATH); CONST(O_TMPFILE); CONST(O_NOATIME); CONST(AT_REMOVEDIR); CONST(AT_EMPTY_PATH);
    CONST(RESOLVE_NO_XDEV); CONST(RESOLVE_NO_MAGICLINKS); CONST(RESOLVE_NO_SYMLINKS);
    CONST(RESOLVE_BENEATH); CONST(RESOLVE_IN_ROOT);
    CONST(F_SEAL_SEAL); CONST(F_SEAL_SHRINK); CONST(F_SEAL_GROW); CONST(F_SEAL_WRITE); CONST(F_SEAL_FUTURE_WRITE);
    CONST(MFD_CLOEXEC); CONST(MFD_ALLOW_SEALING); CONST(MFD_HUGETLB);
    CONST(PROT_NONE); CONST(PROT_READ); CONST(PROT_WRITE);
    CONST(MAP_SHARED); CONST(MAP_PRIVATE); CONST(MAP_SHARED_VALIDATE); CONST(MAP_NORESERVE);
    CONST(MAP_POPULATE); CONST(MAP_SYNC);
    CONST(LOCK_SH); CONST(LOCK_EX); CONST(LOCK_NB); CONST(LOCK_UN);
    CONST(AF_UNIX); CONST(SOCK_STREAM); CONST(SOCK_DGRAM); CONST(SOCK_SEQPACKET); CONST(SOCK_NONBLOCK);
    CONST(SOCK_CLOEXEC); CONST(MSG_PEEK); CONST(MSG_CTRUNC); CONST(MSG_TRUNC); CONST(MSG_DONTWAIT);
    CONST(MSG_WAITALL); CONST(MSG_NOSIGNAL); CONST(MSG_CMSG_CLOEXEC);
    CONST(SOL_SOCKET); CONST(SO_ERROR); CONST(SO_PEERCRED); CONST(SCM_RIGHTS);
    printf("const.SUN_PATH_MAX %zu\n", sizeof(((struct sockaddr_un *) 0)->sun_path) - 1);
    CONST(POLLIN); CONST(POLLPRI); CONST(POLLOUT); CONST(POLLERR); CONST(POLLHUP); CONST(POLLNVAL); CONST(POLLRDHUP);
    CONST(EFD_SEMAPHORE); CONST(EFD_NONBLOCK); CONST(EFD_CLOEXEC);
    CONST(S_IFMT); CONST(S_IFSOCK); CONST(S_IFLNK); CONST(S_IFREG); CONST(S_IFBLK); CONST(S_IFDIR);
    CONST(S_IFCHR); CONST(S_IFIFO);

    /* Internal constants (dev.conduit.linux.internal.Abi). */
    CONST(SYS_futex); CONST(SYS_openat2); CONST(SYS_fstat); CONST(SYS_memfd_create); CONST(SYS_getdents64); CONST(SYS_statx); CONST(STATX_BTIME); CONST(FUTEX_WAIT); CONST(FUTEX_WAKE); CONST(HUGETLBFS_MAGIC); CONST(TMPFS_MAGIC); CONST(RAMFS_MAGIC);
    CONST(NFS_SUPER_MAGIC); CONST(SMB_SUPER_MAGIC); CONST(CIFS_SUPER_MAGIC); CONST(SMB2_SUPER_MAGIC); CONST(CEPH_SUPER_MAGIC);
    CONST(V9FS_MAGIC); CONST(FUSE_SUPER_MAGIC); CONST(AFS_SUPER_MAGIC); CONST(AFS_FS_MAGIC); CONST(CODA_SUPER_MAGIC);
    CONST(OCFS2_SUPER_MAGIC); CONST(GFS2_MAGIC);
    CONST(F_GETFL); CONST(F_SETFL); CONST(F_ADD_SEALS); CONST(F_GET_SEALS); CONST(MAP_FAILED);
    return 0;
}
