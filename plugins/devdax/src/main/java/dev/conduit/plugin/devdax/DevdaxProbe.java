package dev.conduit.plugin.devdax;

import dev.conduit.linux.ErrnoException;
import dev.conduit.linux.Libc;
import dev.conduit.linux.Linux;
import dev.conduit.linux.MmapFlags;
import dev.conduit.spi.Availability;
import dev.conduit.spi.Capability;
import dev.conduit.spi.Config;
import dev.conduit.spi.ConduitException;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.nio.file.DirectoryIteratorException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The devdax plugin's probe. Touches devices only to read them: it opens each one read-only, maps
 * its first unit read-only (asking for {@code MAP_SYNC}, to report whether the kernel accepts it),
 * reads the layout header, and looks the lock holder up in {@code /proc/locks}; the provider's
 * device it also opens read-write, as the provider does, and closes at once, so that one this
 * process may read but not write rules memory out. It never takes the lock, so probing cannot
 * make a provider starting at the same moment fail.
 *
 * <ul>
 *   <li>With a device table ({@code devdax.devices}): available when at least one alias leads to a
 *       usable device; the reason otherwise names each alias's problem.</li>
 *   <li>Without one: available when at least one {@code /dev/dax*} device is readable (the
 *       details then say how to configure it); otherwise unavailable, "no /dev/dax* devices; set
 *       CONDUIT_DEVDAX_DEVICES", the errno of the devices that exist, or, when {@code /dev} cannot
 *       be listed, why.</li>
 * </ul>
 *
 * <table class="striped">
 * <caption>Details shown by {@code conduit info}</caption>
 * <tr><th>key</th><th>value</th></tr>
 * <tr><td>{@code arch}, {@code kernel}</td><td>from {@link Linux#availability()}</td></tr>
 * <tr><td>{@code provider device}</td><td>the alias a provider would open, and the key that chose it, or why none</td></tr>
 * <tr><td>{@code on start}</td><td>{@code reset} or {@code recover}</td></tr>
 * <tr><td>{@code alias <name>} (or the path, without a table)</td><td>path, kind, size, alignment, whether
 *     {@code MAP_SYNC} is accepted, the layout's generation, the lock holder; or why it is unusable</td></tr>
 * </table>
 */
final class DevdaxProbe {

    private final Path devRoot;
    private final Sysfs sysfs;
    private final Path procLocks;
    /**
     * Why each device of the table leaves a provider nothing to allocate, by alias: too small at its
     * alignment ({@link DevdaxProvider#tooSmall}), or unusable (why {@link #inspect} failed).
     */
    private final Map<String, String> cannotAllocate = new HashMap<>();

    DevdaxProbe(Path devRoot, Sysfs sysfs, Path procLocks) {
        this.devRoot = devRoot;
        this.sysfs = sysfs;
        this.procLocks = procLocks;
    }

    Availability probe(Config config) {
        Availability linux = Linux.availability();
        if (!linux.isAvailable()) return linux;
        Map<String, String> details = new LinkedHashMap<>(linux.details());
        // The versions of what processes exchange (conduit info): docs/runtime.md, "Processes of different Conduit versions".
        details.put("formats", "device layout " + Layout.VERSION + ", handle payload " + DevdaxPayload.VERSION);
        Libc libc = Linux.libc();
        Map<String, Path> table;
        try {
            table = DevdaxConfig.deviceTable(config);
        } catch (ConduitException e) {
            return Availability.unavailable(e.getMessage(), details);
        }
        long fileAlignment = providerSettings(config, details);
        Availability found = table.isEmpty() ? probeDevDirectory(libc, fileAlignment, details) : probeTable(libc, table, fileAlignment, details);
        String provider = providerAlias(config);
        String providerCannotAllocate = provider == null ? null : cannotAllocate.get(provider);
        if (found.isAvailable() && providerCannotAllocate == null && table.containsKey(provider)) {
            providerCannotAllocate = cannotOpenForWriting(libc, provider, table.get(provider));
        }
        // Imports from the other devices still work: only allocating is ruled out here.
        return found.isAvailable() && providerCannotAllocate != null ? found.without(Capability.MEMORY, providerCannotAllocate) : found;
    }

    /**
     * Why the provider could not open its device, which it opens read-write where {@link #inspect} reads: a node of
     * mode 0644 or a read-only group ({@code EACCES}), a container's {@code :ro} mount ({@code EROFS}); {@code null}
     * when it can. Takes no lock, and closes the device at once.
     */
    private String cannotOpenForWriting(Libc libc, String alias, Path path) {
        try {
            Device.open(libc, alias, path, true, sysfs).close();
            return null;
        } catch (ConduitException e) {
            return e.getMessage();
        }
    }

    private static String providerAlias(Config config) {
        try {
            return DevdaxConfig.providerDevice(config).alias();
        } catch (ConduitException e) {
            return null;
        }
    }

    /** Records the provider's choices in {@code details}; returns the alignment for regular files. */
    private static long providerSettings(Config config, Map<String, String> details) {
        try {
            DevdaxConfig.DeviceChoice choice = DevdaxConfig.providerDevice(config);
            details.put("provider device", choice.alias() + " (set by " + choice.setBy() + ")");
        } catch (ConduitException e) {
            details.put("provider device", "none: " + e.getMessage());
        }
        try {
            details.put("on start", config.get(DevdaxConfig.ON_START).toString());
        } catch (ConduitException e) {
            details.put("on start", "invalid: " + e.getMessage());
        }
        try {
            return DevdaxConfig.fileAlignment(config);
        } catch (ConduitException e) {
            details.put("file alignment", "invalid: " + e.getMessage());
            return DevdaxConfig.FILE_ALIGN.defaultValue();
        }
    }

    private Availability probeTable(Libc libc, Map<String, Path> table, long fileAlignment, Map<String, String> details) {
        List<String> problems = new ArrayList<>();
        for (Map.Entry<String, Path> alias : table.entrySet()) {
            try {
                details.put("alias " + alias.getKey(), inspect(libc, alias.getKey(), alias.getValue(), fileAlignment, false));
            } catch (ConduitException e) {
                details.put("alias " + alias.getKey(), "unusable: " + e.getMessage());
                problems.add(alias.getKey() + ": " + e.getMessage());
                cannotAllocate.put(alias.getKey(), e.getMessage());
            }
        }
        if (problems.size() == table.size()) {
            return Availability.unavailable("no device of " + DevdaxConfig.DEVICES.nameAndVariable() + " can be used: "
                    + String.join("; ", problems), details);
        }
        return Availability.available(details);
    }

    private Availability probeDevDirectory(Libc libc, long fileAlignment, Map<String, String> details) {
        String configure = "set " + DevdaxConfig.DEVICES.environmentName() + " to alias=path pairs, e.g. pmem0=/dev/dax0.0 "
                + "(a regular file of the same shape works too, e.g. pmem0=/dev/shm/devdax.img)";
        List<Path> candidates;
        try {
            candidates = daxNodes();
        } catch (IOException | SecurityException e) {
            // Not "no devices": there may be some this process cannot see.
            return Availability.unavailable("cannot look for " + devRoot.resolve("dax") + "* devices: " + devRoot + " cannot be "
                    + "listed (" + e + "); " + configure + ", which names devices without listing " + devRoot, details);
        }
        if (candidates.isEmpty()) {
            return Availability.unavailable("no " + devRoot.resolve("dax") + "* devices; " + configure, details);
        }
        List<String> problems = new ArrayList<>();
        Path usable = null;
        for (Path node : candidates) {
            try {
                details.put(node.toString(), inspect(libc, node.getFileName().toString(), node, fileAlignment, true));
                if (usable == null) usable = node;
            } catch (ConduitException e) {
                details.put(node.toString(), "unusable: " + e.getMessage());
                problems.add(e.getMessage());
            }
        }
        if (usable == null) {
            return Availability.unavailable(String.join("; ", problems) + "; " + configure, details);
        }
        details.put("to use them", "set " + DevdaxConfig.DEVICES.environmentName() + " to alias=path pairs, e.g. pmem0=" + usable);
        return Availability.available(details);
    }

    /** {@code dax*} entries of the device directory, sorted; only names: what they are, {@link #inspect} finds out. */
    private List<Path> daxNodes() throws IOException {
        List<Path> nodes = new ArrayList<>();
        try (DirectoryStream<Path> entries = Files.newDirectoryStream(devRoot, "dax*")) {
            entries.forEach(nodes::add);
        } catch (DirectoryIteratorException e) {
            throw e.getCause();
        }
        nodes.sort(null);
        return nodes;
    }

    /**
     * One line on a device: path, kind, size, alignment, {@code MAP_SYNC}, layout, lock holder.
     *
     * @param daxOnly whether a regular file is refused: found in the device directory, only device DAX counts
     * @throws ConduitException if it cannot be opened read-only, is not a device-DAX device or
     *                          regular file, or cannot be mapped
     */
    private String inspect(Libc libc, String alias, Path path, long fileAlignment, boolean daxOnly) {
        try (Device device = Device.open(libc, alias, path, false, sysfs); Arena arena = Arena.ofConfined()) {
            if (daxOnly && device.kind() != Device.Kind.DEVICE_DAX) {
                throw new ConduitException(path + " is a " + device.kind() + ", not a device-DAX device");
            }
            long alignment = device.kind() == Device.Kind.DEVICE_DAX ? device.mapUnit() : fileAlignment;
            String small = DevdaxProvider.tooSmall(device, Layout.Geometry.of(device.size(), alignment));
            if (small != null) cannotAllocate.put(alias, small);
            Mapper.Mapped first;
            try {
                first = Mapper.mapPreferringSync(libc, device.fd(), 0, device.mapUnit(), MmapFlags.PROT_READ, arena);
            } catch (ErrnoException e) {
                throw new ConduitException("cannot map " + device.describe() + ": " + e.getMessage() + Device.mapRemedy(e, null), e);
            }
            String layout = describe(Layout.read(first.segment()));
            return path + ": " + device.kind() + ", " + device.size() + " bytes, alignment " + alignment + ", MAP_SYNC "
                    + (first.sync() ? "accepted" : "refused (" + first.syncRefusal() + "), chunks are mapped MAP_SHARED") + ", " + layout
                    + ", " + provider(device) + (small != null ? ", too small to allocate from at this alignment" : "");
        }
    }

    /** What a device's first unit holds, as its line says it: a state a device is seldom found in is worded here too. */
    static String describe(Layout.Found found) {
        return switch (found) {
            case Layout.Valid(Layout.Header header) -> "layout generation " + header.generation() + " (id "
                    + Long.toHexString(header.layoutId()) + ")";
            case Layout.Blank() -> "no layout yet";
            case Layout.BeingWritten(String reason) -> "a layout its owner is writing (" + reason + ")";
            case Layout.Damaged(String reason) -> "damaged layout (" + reason + "): a provider opened with "
                    + DevdaxConfig.ON_START.nameAndVariable() + " = reset rewrites it";
        };
    }

    /**
     * Who holds the device's lock, as far as {@code /proc/locks} shows: a lock it does not list may
     * still be held, by a provider in another PID namespace (another container), whose locks the
     * kernel leaves out of this namespace's listing.
     */
    private String provider(Device device) {
        long pid;
        try {
            pid = LockHolders.holderPid(Files.readString(procLocks), device.status().dev(), device.status().inode());
        } catch (IOException | SecurityException e) {
            return "provider unknown (" + procLocks + " unreadable)";
        }
        return pid > 0 ? "provider: pid " + pid : pid == 0 ? "provider: a process not visible here"
                : "no provider visible here (one in another PID namespace is not listed in " + procLocks + ")";
    }
}
