package dev.conduit.plugin.devdax;

import dev.conduit.linux.PageSize;
import dev.conduit.spi.Config;
import dev.conduit.spi.ConfigException;
import dev.conduit.spi.ConfigKey;
import dev.conduit.spi.PayloadReader;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The devdax plugin's configuration keys, and their values read into the forms the code uses.
 *
 * <p>Each side reads only what it needs: the importer the device table ({@link #DEVICES}), the
 * provider also {@link #DEVICE}, {@link #ON_START} and {@link #FILE_ALIGN}. Each key's value,
 * the items of the table and the alignment too, is checked when the {@code Conduit} is built.
 *
 * <table class="striped">
 * <caption>Keys</caption>
 * <tr><th>key</th><th>environment</th><th>default</th><th>read by</th></tr>
 * <tr><td>{@code devdax.devices}</td><td>{@code CONDUIT_DEVDAX_DEVICES}</td><td>empty</td><td>provider, importer, probe</td></tr>
 * <tr><td>{@code devdax.device}</td><td>{@code CONDUIT_DEVDAX_DEVICE}</td><td>the only alias</td><td>provider, probe</td></tr>
 * <tr><td>{@code devdax.on.start}</td><td>{@code CONDUIT_DEVDAX_ON_START}</td><td>{@code reset}</td><td>provider, probe</td></tr>
 * <tr><td>{@code devdax.file.align}</td><td>{@code CONDUIT_DEVDAX_FILE_ALIGN}</td><td>{@code 2m}</td><td>provider, probe</td></tr>
 * </table>
 */
final class DevdaxConfig {

    static final ConfigKey<List<String>> DEVICES = ConfigKey.list("devdax.devices", List.of(),
            "This process's device table: alias=path pairs, comma-separated, e.g. pmem0=/dev/dax0.0,cxl0=/dev/dax1.0. "
                    + "Handles name a device only by its alias; every process (host or container) maps the alias to the "
                    + "path where it sees the device, and an importer maps only devices listed here. A path may also be a "
                    + "regular file of the same shape (machines without DAX hardware, tests). Aliases are lower-case "
                    + "letters, digits and '-', start with a letter, at most 32 characters; paths are absolute.")
            .withCheck("a comma-separated list of alias=/absolute/path, e.g. pmem0=/dev/dax0.0, where the alias is lower-case "
                    + "letters, digits and '-', starts with a letter and has at most 32 characters, each alias once",
                    DevdaxConfig::table);

    static final ConfigKey<String> DEVICE = ConfigKey.string("devdax.device", null,
            "The alias (from devdax.devices) of the device this process's memory provider allocates from, e.g. pmem0. "
                    + "May stay unset when the table has exactly one alias. The provider holds an exclusive flock on it: "
                    + "a second provider that reaches the device through the same device node (any path or bind mount of "
                    + "it) is refused; one through another node made for the device (mknod, as docker run --device does) "
                    + "is not, and the first provider then fails at its next allocate or free.");

    static final ConfigKey<OnStart> ON_START = ConfigKey.enumeration("devdax.on.start", OnStart.class, OnStart.RESET,
            "What a provider does with the allocations it finds on its device when it opens: reset forgets them, so "
                    + "exports made before are refused from then on (and their memory is reused); recover re-adopts the "
                    + "allocations of a previous owner that did not close (a crash, kill -9), so that their exports keep "
                    + "importing until this provider closes.");

    static final ConfigKey<Long> FILE_ALIGN = ConfigKey.bytes("devdax.file.align", 2L << 20, 4096,
            "Allocation alignment and unit when the device is a regular file (a device-DAX device has its own, read "
                    + "from sysfs): a power of two and a multiple of the page size. The default, 2 MiB, is the usual "
                    + "device-DAX alignment, so that a file stands in for a device faithfully.")
            .withCheck("a size in bytes that is a power of two and a multiple of the page size, e.g. 64k, 2m, 1g",
                    alignment -> checkFileAlignment(alignment, PageSize.get()));

    static final List<ConfigKey<?>> KEYS = List.of(DEVICES, DEVICE, ON_START, FILE_ALIGN);

    private DevdaxConfig() {
    }

    /** This process's device table, alias to path, in the configured order (checked by {@link #DEVICES} when it was read). */
    static Map<String, Path> deviceTable(Config config) {
        return table(config.get(DEVICES));
    }

    /**
     * The device table of a {@link #DEVICES} value.
     *
     * @throws IllegalArgumentException saying which item is malformed, or which alias appears twice
     */
    private static Map<String, Path> table(List<String> items) {
        Map<String, Path> table = new LinkedHashMap<>();
        for (String item : items) {
            int equals = item.indexOf('=');
            String alias = equals < 0 ? "" : item.substring(0, equals).trim();
            String path = equals < 0 ? "" : item.substring(equals + 1).trim();
            if (equals < 0 || !PayloadReader.isName(alias) || path.isEmpty() || !path.startsWith("/")) {
                throw new IllegalArgumentException("item '" + item + "' is not alias=/absolute/path");
            }
            // Path.of would throw InvalidPathException: the environment and a command line cannot carry a NUL, Conduit.builder().set can.
            if (path.indexOf('\0') >= 0) {
                throw new IllegalArgumentException("the path of item '" + item + "' contains a NUL character, which no file name can hold");
            }
            if (table.putIfAbsent(alias, Path.of(path)) != null) {
                throw new IllegalArgumentException("alias '" + alias + "' appears twice: each alias names one device");
            }
        }
        return table;
    }

    /**
     * The alias and path of the provider's device: {@link #DEVICE}, or the only alias of the table.
     *
     * @throws ConfigException if no device is configured, the choice is ambiguous, or the alias is unknown
     */
    static DeviceChoice providerDevice(Config config) {
        Map<String, Path> table = deviceTable(config);
        String alias = config.get(DEVICE);
        if (alias == null || alias.isBlank()) {
            if (table.isEmpty()) {
                throw new ConfigException("the devdax provider has no device: set " + DEVICES.nameAndVariable()
                        + ", e.g. pmem0=/dev/dax0.0 (or a regular file of the same shape, e.g. pmem0=/dev/shm/devdax.img)");
            }
            if (table.size() > 1) {
                throw new ConfigException("the devdax device table has " + table.size() + " aliases " + table.keySet()
                        + ": set " + DEVICE.nameAndVariable() + " to the one this process's provider allocates from");
            }
            Map.Entry<String, Path> only = table.entrySet().iterator().next();
            return new DeviceChoice(only.getKey(), only.getValue(), DEVICES.name());
        }
        checkDeviceInTable(config);
        return new DeviceChoice(alias.trim(), table.get(alias.trim()), DEVICE.name());
    }

    /**
     * Refuses a {@link #DEVICE} that names no alias of {@link #DEVICES}: also in a process that only
     * imports, as the {@code Conduit}'s build checks it ({@link DevdaxPlugin#checkConfig}).
     *
     * @throws ConfigException naming both keys, the alias, its source and the remedy
     */
    static void checkDeviceInTable(Config config) {
        String alias = config.get(DEVICE);
        if (alias == null || alias.isBlank()) return;
        Map<String, Path> table = deviceTable(config);
        if (!table.containsKey(alias.trim())) {
            throw DEVICE.badValue(alias, config.sourceOf(DEVICE), "alias '" + alias.trim() + "' is not in " + DEVICES.nameAndVariable() + " "
                    + table.keySet() + ": add it there as " + alias.trim() + "=/dev/daxX.Y, or choose one of the listed aliases");
        }
    }

    /** {@link #FILE_ALIGN} (checked against this host's page size when it was read). */
    static long fileAlignment(Config config) {
        return config.get(FILE_ALIGN);
    }

    /** Refuses an {@code alignment} that is not a power of two or not a multiple of {@code pageSize}. */
    static void checkFileAlignment(long alignment, long pageSize) {
        if (Long.bitCount(alignment) != 1 || alignment % pageSize != 0) {
            throw new IllegalArgumentException(alignment + " bytes is not a power of two that is a multiple of this host's page size, "
                    + pageSize);
        }
    }

    /**
     * The device a provider allocates from.
     *
     * @param alias the alias its exports carry
     * @param path  where this process sees it
     * @param setBy the key that chose it, for {@code conduit info}
     */
    record DeviceChoice(String alias, Path path, String setBy) {
    }

    /** What a provider does with the allocation table it finds when it opens. */
    enum OnStart {
        /** Forget every allocation: their exports are refused from now on. */
        RESET,
        /** Re-adopt the allocations a previous owner left, so their exports stay valid. */
        RECOVER;

        /** As configured: {@code reset}, {@code recover}. */
        @Override
        public String toString() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }
    }
}
