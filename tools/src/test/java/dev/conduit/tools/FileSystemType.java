package dev.conduit.tools;

import dev.conduit.linux.FileSystemSpace;
import dev.conduit.linux.Libc;
import dev.conduit.linux.Linux;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;

/**
 * The real {@link Libc}, except that {@code fstatfs} answers one file system type: for the directories on file systems other
 * kernels may see too (NFS, 9p, FUSE, ...), which a test machine need not have mounted.
 */
final class FileSystemType {

    private FileSystemType() {
    }

    /** The real {@link Libc}, whose {@code fileSystemSpace} (fstatfs) says every file is on a file system of {@code type}. */
    static Libc answering(long type) {
        Libc real = Linux.libc();
        FileSystemSpace space = new FileSystemSpace(type, 4096, 1L << 30, 1L << 29);
        return (Libc) Proxy.newProxyInstance(Libc.class.getClassLoader(), new Class<?>[] {Libc.class}, (proxy, method, args) -> {
            if (method.getName().equals("fileSystemSpace")) return space;
            try {
                return method.invoke(real, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
        });
    }
}
