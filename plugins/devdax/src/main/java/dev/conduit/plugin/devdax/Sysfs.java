package dev.conduit.plugin.devdax;

import dev.conduit.spi.ConduitException;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

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
 *     (kernels since 5.10, which made it a per-device attribute)</td></tr>
 * <tr><td>{@code <real path>/../dax_region/align}</td><td>the same</td><td>kernels 5.1 to 5.9 (the dax
 *     bus): the region's alignment, in the parent of the directory {@code <major>:<minor>} links to
 *     (the same as {@code /sys/bus/dax/devices/daxX.Y}); read only when {@code align} is missing</td></tr>
 * <tr><td>{@code device/dax_region/align}</td><td>the same</td><td>kernels 4.x (the dax class): the
 *     region's alignment, through the {@code device} link to the parent; read only when both others
 *     are missing</td></tr>
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
                    + "' (" + directory.resolve("subsystem") + "). Point its alias in " + DevdaxConfig.DEVICES.nameAndVariable()
                    + " at a /dev/daxX.Y device (ndctl create-namespace --mode=devdax, or daxctl for CXL memory) or at a "
                    + "regular file");
        }
        Path sizeFile = directory.resolve("size");
        long size = number(sizeFile, device, "size");
        if (size <= 0) {
            throw new ConduitException("device-DAX device " + device + " has size " + size + " (" + sizeFile + "): it has no "
                    + "memory assigned; give it some (daxctl reconfigure-device or ndctl) or use another device");
        }
        Path alignFile = alignFile(directory, device);
        long alignment = number(alignFile, device, "alignment");
        if (alignment < MIN_ALIGNMENT || Long.bitCount(alignment) != 1) {
            throw new ConduitException("device-DAX device " + device + " reports alignment " + alignment + " (" + alignFile
                    + "), not a power of two of at least " + MIN_ALIGNMENT + "; refusing to guess how it may be mapped");
        }
        return new DaxAttributes(size, alignment, sizeFile, alignFile);
    }

    /**
     * The first of the places where kernels keep the alignment that exists. Before 5.10 only the
     * region had one: every device of a region shares it.
     *
     * @throws ConduitException naming every place looked at
     */
    private static Path alignFile(Path directory, Path device) {
        List<Path> tried = new ArrayList<>();
        tried.add(directory.resolve("align"));
        try {
            // The parent of the link's target, not of the link: "<major>:<minor>/.." would be /sys/dev/char.
            Path parent = directory.toRealPath().getParent();
            if (parent != null) tried.add(parent.resolve("dax_region/align"));
        } catch (IOException e) {
            // The link cannot be resolved (it vanished since isDirectory): the third place needs no resolving.
        }
        tried.add(directory.resolve("device/dax_region/align"));
        for (Path candidate : tried) {
            if (Files.exists(candidate)) return candidate;
        }
        throw new ConduitException("cannot read the alignment of device-DAX device " + device + ": none of " + tried + " exists "
                + "(align since kernel 5.10, the region's dax_region/align before). If /sys is mounted only in part here (a "
                + "container), mount all of it (read-only is enough); otherwise this kernel describes device DAX in a way this "
                + "plugin does not know: daxctl list -u shows the alignment, and a bug report with uname -r and that output helps");
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
