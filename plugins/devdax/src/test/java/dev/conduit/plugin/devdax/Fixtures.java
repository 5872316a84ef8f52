package dev.conduit.plugin.devdax;

import dev.conduit.spi.PayloadReader;
import dev.conduit.tck.TestContext;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.stream.Stream;

/** File-backed devices, payload readers, and what this process holds, for leak checks. */
final class Fixtures {

    static final long MIB = 1L << 20;
    /** The default alignment of a file-backed device ({@code devdax.file.align}). */
    static final long UNIT = 2 * MIB;

    /** A context whose device table has {@code alias=path} and nothing else, plus {@code keyValues}. */
    static TestContext device(String alias, Path path, String... keyValues) {
        String[] all = new String[keyValues.length + 2];
        all[0] = "devdax.devices";
        all[1] = alias + "=" + path;
        System.arraycopy(keyValues, 0, all, 2, keyValues.length);
        return TestContext.of(all);
    }

    private Fixtures() {
    }

    /** A sparse regular file of {@code size} bytes standing in for a device: reads as zeros, takes memory as it is written. */
    static Path deviceFile(Path directory, String name, long size) {
        Path path = directory.resolve(name);
        try (RandomAccessFile file = new RandomAccessFile(path.toFile(), "rw")) {
            file.setLength(size);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return path;
    }

    /** Truncates or extends {@code file} to {@code size} bytes, as another process with write access may. */
    static void resize(Path file, long size) {
        try (RandomAccessFile open = new RandomAccessFile(file.toFile(), "rw")) {
            open.setLength(size);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Overwrites the 8 bytes at {@code offset} of {@code file} with {@code value}, little-endian. */
    static void writeLong(Path file, long offset, long value) {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.WRITE)) {
            channel.write(ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(0, value), offset);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The 8 bytes at {@code offset} of {@code file}, little-endian. */
    static long readLong(Path file, long offset) {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            ByteBuffer buffer = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN);
            channel.read(buffer, offset);
            return buffer.getLong(0);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A reader as the runtime hands it to the importer: field names prefixed with {@code payload.}. */
    static PayloadReader reader(byte[] payload) {
        return new PayloadReader(payload, 0, payload.length, "payload.");
    }

    /** Entries of {@code /proc/self/fd}; the listing's own descriptor counts alike every time. */
    static long openDescriptors() {
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.count();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Descriptors of this process open on {@code file} (by its real path). */
    static long descriptorsOn(Path file) {
        Path real = realPath(file);
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            return fds.filter(fd -> {
                try {
                    return Files.readSymbolicLink(fd).equals(real);
                } catch (IOException e) {
                    return false; // the listing's own descriptor, closed by now
                }
            }).count();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Lines of {@code /proc/self/maps} that map {@code file} (by its real path). */
    static long mappingsOf(Path file) {
        String real = realPath(file).toString();
        try (Stream<String> lines = Files.lines(Path.of("/proc/self/maps"))) {
            return lines.filter(line -> line.endsWith(" " + real)).count();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static Path realPath(Path file) {
        try {
            return file.toRealPath();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A 32 MiB file-backed device for the TCK's suites, made on first use, in its own directory under /dev/shm. */
    static final class TckDevice {
        private Path file;

        java.util.Map<String, String> configuration() {
            if (file == null) {
                try {
                    file = deviceFile(ShmTempDirFactory.create(), "dax.img", 32 * MIB);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }
            return java.util.Map.of("devdax.devices", "pmem0=" + file);
        }

        void delete() throws IOException {
            if (file != null) {
                Files.deleteIfExists(file);
                Files.deleteIfExists(file.getParent());
            }
        }
    }
}
