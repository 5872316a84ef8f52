package dev.conduit.plugin.devdax;

import dev.conduit.spi.ConduitException;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * What sysfs says about a device-DAX instance, found by the major and minor number of its device
 * node ({@code st_rdev}), so that neither the node's name nor its directory matters (a container
 * may see {@code /dev/dax0.0} anywhere):
 *
 * <table class="striped">
 * <caption>Files read, below {@code <root>/dev/char/<major>:<minor>/}</caption>
 * <tr><th>file</th><th>content</th><th>use</th></tr>
 * <tr><td>{@code subsystem}</td><td>symbolic link to {@code .../bus/dax} or {@code .../class/dax}</td>
 *     <td>proves the node is device DAX, not {@code /dev/zero} or {@code /dev/mem}</td></tr>
 * <tr><td>{@code size}</td><td>decimal bytes</td><td>the device's size</td></tr>
 * <tr><td>{@code align}</td><td>decimal bytes, a power of two</td><td>the mapping and allocation unit
 *     (kernels since 5.10)</td></tr>
 * <tr><td>{@code device/align}</td><td>the same</td><td>where older kernels keep it, read only when
 *     {@code align} is missing</td></tr>
 * </table>
 *
 * <p>The root is {@code /sys} in production; tests give a fixture tree of the same shape.
 * Inside a container, sysfs must be mounted (read-only is enough) for device-DAX aliases; regular
 * files need no sysfs.
 */
final class Sysfs {

    /** The real one. */
    static final Sysfs SYSTEM = new Sysfs(Path.of("/sys"));

    /** The least alignment device DAX supports: the base page size. */
    private static final long MIN_ALIGNMENT = 4096;

    private final Path root;

    Sysfs(Path root) {
        this.root = root;
    }

    Path root() {
        return root;
    }

    /**
     * The size and alignment of device-DAX instance {@code major:minor}.
     *
     * @param device the device node, for messages
     * @throws ConduitException naming the sysfs file, what it held, and what to do
     */
    DaxAttributes daxAttributes(int major, int minor, Path device) {
        Path directory = root.resolve("dev/char/" + Integer.toUnsignedString(major) + ":" + Integer.toUnsignedString(minor));
        if (!Files.isDirectory(directory)) {
            throw new ConduitException("cannot identify character device " + device + " (" + Integer.toUnsignedString(major) + ":"
                    + Integer.toUnsignedString(minor) + "): " + directory + " does not exist. Device DAX is described in sysfs; "
                    + "in a container, mount /sys (read-only is enough)");
        }
        String subsystem = subsystem(directory);
        if (!"dax".equals(subsystem)) {
            throw new ConduitException(device + " is not a device-DAX device: it is a character device of subsystem '" + subsystem
                    + "' (" + directory.resolve("subsystem") + "). Point its alias in " + DevdaxConfig.describe(DevdaxConfig.DEVICES)
                    + " at a /dev/daxX.Y device (ndctl create-namespace --mode=devdax, or daxctl for CXL memory) or at a "
                    + "regular file");
        }
        Path sizeFile = directory.resolve("size");
        long size = number(sizeFile, device, "size");
        if (size <= 0) {
            throw new ConduitException("device-DAX device " + device + " has size " + size + " (" + sizeFile + "): it has no "
                    + "memory assigned; give it some (daxctl reconfigure-device or ndctl) or use another device");
        }
        Path alignFile = directory.resolve("align");
        if (!Files.exists(alignFile)) {
            alignFile = directory.resolve("device/align");
        }
        long alignment = number(alignFile, device, "alignment");
        if (alignment < MIN_ALIGNMENT || Long.bitCount(alignment) != 1) {
            throw new ConduitException("device-DAX device " + device + " reports alignment " + alignment + " (" + alignFile
                    + "), not a power of two of at least " + MIN_ALIGNMENT + "; refusing to guess how it may be mapped");
        }
        return new DaxAttributes(size, alignment, sizeFile, alignFile);
    }

    /** The name of the subsystem directory {@code subsystem} links to, or a description of why there is none. */
    private static String subsystem(Path directory) {
        Path link = directory.resolve("subsystem");
        try {
            Path target = Files.readSymbolicLink(link);
            Path name = target.getFileName();
            return name == null ? target.toString() : name.toString();
        } catch (IOException | UnsupportedOperationException e) {
            return "unknown: " + link + " is not a readable symbolic link";
        }
    }

    private static long number(Path file, Path device, String what) {
        String text;
        try {
            text = Files.readString(file, StandardCharsets.US_ASCII).trim();
        } catch (NoSuchFileException e) {
            throw new ConduitException("cannot read the " + what + " of device-DAX device " + device + ": " + file
                    + " does not exist (this kernel's device DAX does not describe it there)", e);
        } catch (IOException e) {
            throw new ConduitException("cannot read the " + what + " of device-DAX device " + device + " from " + file + ": " + e, e);
        }
        try {
            return Long.parseLong(text);
        } catch (NumberFormatException e) {
            throw new ConduitException("cannot read the " + what + " of device-DAX device " + device + ": " + file + " holds '"
                    + (text.length() > 40 ? text.substring(0, 40) + "..." : text) + "', not a decimal number of bytes", e);
        }
    }

    /**
     * @param size      the device's size in bytes
     * @param alignment its mapping and allocation unit in bytes, a power of two
     * @param sizeFile  where the size was read, for {@code conduit info}
     * @param alignFile where the alignment was read
     */
    record DaxAttributes(long size, long alignment, Path sizeFile, Path alignFile) {
    }
}
