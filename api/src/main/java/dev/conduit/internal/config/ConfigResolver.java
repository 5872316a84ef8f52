package dev.conduit.internal.config;

import dev.conduit.ConfigEntry;
import dev.conduit.ConfigEntry.Source;
import dev.conduit.internal.install.PluginInstall;
import dev.conduit.spi.Config;
import dev.conduit.spi.ConfigException;
import dev.conduit.spi.ConfigKey;
import dev.conduit.spi.PayloadReader;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

/**
 * Resolves typed configuration from its sources, strongest first: the builder, system properties
 * ({@code conduit.x.y}), the environment ({@code CONDUIT_X_Y}), the key's default.
 *
 * <p>Values are parsed on first read and cached; the sources are snapshots taken when the
 * {@code Conduit} was built. Thread-safe.
 */
public final class ConfigResolver implements Config {

    /** The owner of the runtime's own keys ({@link ConfigEntry#owner}). */
    public static final String RUNTIME = "runtime";
    private static final String ENV_PREFIX = "CONDUIT_";
    private static final String PROPERTY_PREFIX = "conduit.";

    /**
     * {@code CONDUIT_*} variables that are not configuration: read by the launcher or by tests
     * ({@code CONDUIT_TEST_*}), never by the runtime, so never warned about.
     */
    private static final Set<String> NOT_CONFIG = Set.of("CONDUIT_JAVA_OPTS");
    private static final String TEST_PREFIX = "CONDUIT_TEST_";

    /** Unknown names already warned about in this process: each is warned about once. */
    private static final Set<String> WARNED = ConcurrentHashMap.newKeySet();

    private final Map<String, String> builder;
    private final Map<String, String> environment;
    /** Variables {@code CONDUIT_} in another case ({@code conduit_probe_timeout}): never read, but warned about. */
    private final List<String> otherCaseVariables = new ArrayList<>();
    /** Properties {@code conduit.} in another case ({@code Conduit.probe.timeout}): never read, warned about if a key's. */
    private final List<String> otherCaseProperties = new ArrayList<>();
    private final Map<String, String> properties;
    private final Map<String, Declared> declared = new LinkedHashMap<>();
    private final Map<String, Object> parsed = new ConcurrentHashMap<>();
    /** Plugins found but not usable (refused, broken), whose keys nothing declares: settings under their names are not unknown. */
    private final Set<String> unreadPlugins = new LinkedHashSet<>();
    /** By name, the keys of plugins left unread whose keys are known ({@link #leaveUnread(String, Collection, String)}). */
    private final Map<String, Declared> unreadKeys = new LinkedHashMap<>();
    /**
     * The names of the keys of every plugin whose keys are not read ({@link #forget}, {@link #leaveUnread(String, Collection,
     * String)}), kept when another copy of its name declares its own: a builder key only a copy left unread knows is that
     * copy's, left unread with it ({@link #rejectUnknownBuilderKeys}).
     */
    private final Set<String> keysOfUnreadCopies = new LinkedHashSet<>();
    /** Of each plugin in {@link #unreadKeys}, why its keys are not read, as "which is ..." ends: "left out by transports". */
    private final Map<String, String> whyUnread = new LinkedHashMap<>();
    /** Every plugin found, usable or not: an unknown setting under a name none of them has is for a plugin not installed here. */
    private final Set<String> pluginsFound = new java.util.TreeSet<>();

    private record Declared(ConfigKey<?> key, String owner) {
    }

    private record Raw(String value, Source source) {
    }

    public ConfigResolver(Map<String, String> builder, Map<String, String> environment, Properties systemProperties) {
        this.builder = Map.copyOf(builder);
        Map<String, String> env = new LinkedHashMap<>();
        environment.forEach((k, v) -> {
            // All of it in upper case, not the prefix alone: CONDUIT_probe_timeout is in another case too, and is to be told so.
            if (k.startsWith(ENV_PREFIX) && k.equals(k.toUpperCase(Locale.ROOT))) env.put(k, v);
            else if (k.regionMatches(true, 0, ENV_PREFIX, 0, ENV_PREFIX.length())) otherCaseVariables.add(k);
        });
        this.environment = env;
        Map<String, String> props = new LinkedHashMap<>();
        for (String name : systemProperties.stringPropertyNames()) {
            if (name.startsWith(PROPERTY_PREFIX)) props.put(name, systemProperties.getProperty(name));
            else if (name.regionMatches(true, 0, PROPERTY_PREFIX, 0, PROPERTY_PREFIX.length())) otherCaseProperties.add(name);
        }
        this.properties = props;
    }

    /** Declares {@code key} as owned by {@code owner} ({@code "runtime"} or a plugin name). The first declaration wins. */
    public void declare(ConfigKey<?> key, String owner) {
        declared.putIfAbsent(key.name(), new Declared(key, owner));
    }

    /**
     * Declares {@code keys} as owned by {@code owner}, whose keys are then read: a plugin that
     * stands in for a refused or broken one of its name (PluginRegistry) leaves unread no more.
     */
    public void declareAll(Collection<? extends ConfigKey<?>> keys, String owner) {
        keys.forEach(k -> declare(k, owner));
        unreadPlugins.remove(owner);
        whyUnread.remove(owner);
        unreadKeys.values().removeIf(d -> d.owner().equals(owner));
    }

    @Override
    @SuppressWarnings("unchecked")
    public <T> T get(ConfigKey<T> key) {
        Objects.requireNonNull(key, "key");
        Object value = parsed.get(key.name());
        if (value == null) {
            Raw raw = raw(key);
            value = raw == null ? Unset.INSTANCE : key.parse(raw.value(), describe(raw.source(), key));
            if (raw == null && key.defaultValue() != null) value = key.defaultValue();
            parsed.putIfAbsent(key.name(), value);
        }
        return value == Unset.INSTANCE ? null : (T) value;
    }

    /**
     * Where the value of {@code key} in force comes from, as a phrase an error message can name:
     * "the builder", "system property conduit.transports", "environment variable
     * CONDUIT_TRANSPORTS" or "the default".
     */
    @Override
    public String sourceOf(ConfigKey<?> key) {
        Raw raw = raw(key);
        return describe(raw == null ? Source.DEFAULT : raw.source(), key);
    }

    /**
     * Parses every declared key now, so a malformed value fails at build time, not at first use. A
     * check of a plugin's key that fails ({@link ConfigKey#parse}'s exception with a cause) is a
     * fault of that plugin, not of the value, and is returned instead, for the plugin alone to be
     * broken; the runtime's own fails the build.
     *
     * @return by plugin, the first failed check of one of its keys
     */
    public Map<String, ConfigException> validate() {
        Map<String, ConfigException> failedChecks = new LinkedHashMap<>();
        for (Declared d : declared.values()) {
            if (failedChecks.containsKey(d.owner())) continue;
            try {
                get(d.key());
            } catch (ConfigException e) {
                if (e.getCause() == null || d.owner().equals(RUNTIME)) throw e;
                failedChecks.put(d.owner(), e);
            }
        }
        return failedChecks;
    }

    /** Forgets the keys {@code plugin} declared, and leaves settings under its name unread: it is not used ({@link #leaveUnread}). */
    public void forget(String plugin) {
        // Their values too: a plugin that stands in for it may declare a key of one of their names with another type or check.
        declared.values().stream().filter(d -> d.owner().equals(plugin)).forEach(d -> {
            parsed.remove(d.key().name());
            keysOfUnreadCopies.add(d.key().name());
        });
        declared.values().removeIf(d -> d.owner().equals(plugin));
        leaveUnread(plugin);
    }

    /**
     * Leaves the settings under {@code plugin}'s name ({@code plugin.x}, {@code conduit.plugin.x},
     * {@code CONDUIT_PLUGIN_X}) unread without calling them unknown: the plugin was found but cannot
     * be used (refused, broken), so its keys are not declared, and its own WARNING says why. A
     * setting for it is no misspelling, and must not fail the build of an application that
     * configures a plugin which happens to be unusable here. Settings that a declared key's name or
     * variable also starts with (a plugin called {@code pool} beside the runtime's
     * {@code pool.chunk.size}) are still checked: there a misspelling is the likelier reading.
     */
    public void leaveUnread(String plugin) {
        unreadPlugins.add(plugin);
    }

    /**
     * As {@link #leaveUnread(String)}, for a plugin whose keys are known but not declared: one left
     * out by {@code transports}, or refused, because a key of it has the variable of a key of a
     * plugin in use ({@code dev-dax.path} of {@code dev-dax} and {@code dev.dax.path} of {@code dev},
     * both {@code CONDUIT_DEV_DAX_PATH}). The declared key under its variables' start hides them
     * from the rule by name, so its other keys' variables ({@code CONDUIT_DEV_DAX_MODE}) are left
     * unread by name instead: until 2026-12-02 they were warned about as unknown with "did you mean
     * CONDUIT_DEV_DAX_PATH?", the other plugin's key. A misspelling of one of its keys is suggested
     * that key, saying that the plugin is {@code why} and nothing reads it.
     *
     * @param why why its keys are not read, to end "plugin P, which is ...": "left out by transports"
     */
    public void leaveUnread(String plugin, Collection<? extends ConfigKey<?>> keys, String why) {
        leaveUnread(plugin);
        whyUnread.put(plugin, why);
        // A key not under the plugin's name (a cause of refusal) may be a misspelling of anyone's: its variable stays checked.
        keys.stream().filter(k -> k.name().startsWith(plugin + ".")).forEach(k -> {
            unreadKeys.putIfAbsent(k.name(), new Declared(k, plugin));
            keysOfUnreadCopies.add(k.name());
        });
    }

    /** Records that a plugin called {@code plugin} was found, so that an unknown setting under its name is not said to be for a plugin not installed. */
    public void pluginFound(String plugin) {
        pluginsFound.add(plugin);
    }

    /**
     * For an unknown setting whose first word ({@code verbs} of {@code verbs.device} or
     * {@code CONDUIT_VERBS_DEVICE}) is neither a plugin found here nor the start of a declared key:
     * that nothing reads it because no such plugin is installed, and what to do. Empty otherwise.
     * Without it, the "did you mean" alone sent a user who configured an absent plugin to another
     * plugin's key ({@code devdax.device} for {@code verbs.device}); beside it, no "did you mean" is
     * given: its first word is a letter or two from none found here, so the nearest key is another
     * plugin's or the runtime's ({@code CONDUIT_SHARED_DIR} for {@code CONDUIT_VERBS_DEVICE}).
     */
    private String forNoPluginHere(String setting, boolean variable) {
        // A plugin's keys are its name and more words: a setting of one word is no plugin's, nor one whose first word
        // no plugin can have as its name (Probe.timeout, a blank before it), which is a misspelt key, not an absent plugin.
        if ((variable ? setting.indexOf('_', ENV_PREFIX.length()) : setting.indexOf('.')) < 0) return "";
        if (!variable && !PayloadReader.isName(setting.substring(0, setting.indexOf('.')))) return "";
        Set<String> words = new LinkedHashSet<>(pluginsFound);
        words.addAll(unreadPlugins);
        for (String key : declared.keySet()) words.add(key.contains(".") ? key.substring(0, key.indexOf('.')) : key);
        List<String> parts = variable ? List.of(setting.substring(ENV_PREFIX.length()).toLowerCase(Locale.ROOT).split("_")) : List.of();
        for (String word : words) {
            String start = variable ? variablePrefix(word) : word + ".";
            if (setting.startsWith(start)) return "";
            // A first word a letter or two from one found here (prob.timeout) is likelier misspelt than an absent plugin's:
            // the "did you mean" speaks for it. A variable is compared by as many parts as the word has (dev-dax: DEV_DAX).
            String near = variable ? word.replace('-', '_') : word;
            String first = variable ? String.join("_", parts.subList(0, Math.min(parts.size(), near.split("_").length)))
                    : setting.substring(0, setting.indexOf('.'));
            if (Suggestions.distance(first, near) <= (first.length() >= 5 ? 2 : 1)) return "";
        }
        String named = variable ? "no plugin found here has the name it starts with"
                : "no plugin called '" + setting.substring(0, setting.indexOf('.')) + "' was found here";
        return noPluginHere(named, pluginsFound, PluginInstall.linkedIntoImage());
    }

    /**
     * {@link #forNoPluginHere}'s text, {@code named} saying which plugin was not found. Where to
     * install it is {@link PluginInstall}'s, as for every plugin not found: in a run-time image made
     * by jlink a plugin is linked in, which "install that plugin (module path, class path or
     * plugin.path)", this text's own until 2026-12-06, never said.
     */
    static String noPluginHere(String named, Collection<String> found, boolean linkedIntoImage) {
        return "; " + named + " (found: " + (found.isEmpty() ? "none" : String.join(", ", found))
                + "), so nothing reads it: leave the setting out, or " + PluginInstall.howToInstall("that plugin", linkedIntoImage);
    }

    /**
     * For an unknown setting that is a plugin's key without the plugin's name
     * ({@code heartbeat.timeout}, {@code CONDUIT_QUEUE_SIZE}, {@code -Dconduit.liveness.interval}),
     * in {@code form}: "; a plugin's key starts with its name: did you mean" and every such key.
     * Empty for any other setting. Without it, {@code CONDUIT_HEARTBEAT_TIMEOUT}, the shared-memory
     * transport's key as its table names it ({@code heartbeat.timeout} under "key (memfd. or
     * posix.)"), was said to be for a plugin called {@code heartbeat} to install (helper h6).
     */
    private String forKeyWithoutItsPluginName(String setting, Function<ConfigKey<?>, String> form) {
        List<String> meant = new ArrayList<>();
        for (Declared d : declared.values()) {
            String name = d.key().name();
            if (d.owner().equals(RUNTIME) || name.indexOf('.') < 0) continue;
            String rest = name.substring(name.indexOf('.') + 1);
            if (form.apply(ConfigKey.string(rest, null, "")).equals(setting)) meant.add(form.apply(d.key()));
        }
        if (meant.isEmpty()) return "";
        String last = meant.removeLast();
        return "; a plugin's key starts with the plugin's name: did you mean "
                + (meant.isEmpty() ? last : String.join(", ", meant) + " or " + last) + "?";
    }

    /**
     * Whether {@code key} is under the name of a plugin left unread. Not where a declared key is
     * too: a refused plugin called {@code pool} must not make a misspelt {@code pool.chunk.siz}
     * pass as its setting when it is far likelier a typo of the runtime's {@code pool.chunk.size}.
     */
    private boolean isForUnreadPlugin(String key) {
        return unreadPlugins.stream().map(p -> p + ".")
                .anyMatch(start -> key.startsWith(start) && declared.keySet().stream().noneMatch(k -> k.startsWith(start)));
    }

    /**
     * As {@link #isForUnreadPlugin}, for a variable: {@code CONDUIT_POOL_CHUNK_SIZ} stays warned about
     * beside a refused {@code pool}; and the variable of any key of a plugin left unread whose keys
     * are known, which is no misspelling whatever other key's variable starts as it does.
     */
    private boolean isForUnreadPluginVariable(String variable) {
        return unreadKeys.values().stream().anyMatch(d -> d.key().environmentName().equals(variable))
                || unreadPlugins.stream().map(ConfigResolver::variablePrefix).anyMatch(start -> variable.startsWith(start)
                        && declared.values().stream().noneMatch(d -> d.key().environmentName().startsWith(start)));
    }

    /** How the variables of keys under {@code word} ({@code dev-dax}: {@code CONDUIT_DEV_DAX_}) start. */
    private static String variablePrefix(String word) {
        return ENV_PREFIX + word.replace('-', '_').toUpperCase(Locale.ROOT) + "_";
    }

    /**
     * Fails for a builder key that nothing declares, naming the nearest declared one: a key under the name of a plugin whose
     * keys are not read passes while no declared key is under that name, and one of the keys of such a plugin always. Called
     * before the plugins check their configuration, and again once a plugin stands in for one refused or broken
     * (PluginRegistry#checkConfig): until 2026-12-07 only before, when the name of the one refused still counted as a
     * plugin left unread, and a misspelling of a key of the one that stood in passed, read by nothing, without a word
     * (DiscoveryTest#aMisspeltBuilderKeyOfAStandInFailsTheBuildAsUnknown).
     */
    public void rejectUnknownBuilderKeys() {
        for (String name : builder.keySet()) {
            if (!declared.containsKey(name) && !isForUnreadPlugin(name) && !keysOfUnreadCopies.contains(name)) {
                // A key's variable is nowhere near its name by edit distance: CONDUIT_POSIX_DIR would get no suggestion.
                String variableOf = declared.values().stream().map(Declared::key).filter(k -> k.environmentName().equals(name))
                        .map(ConfigKey::name).findFirst().orElse(null);
                if (variableOf != null) {
                    throw new ConfigException("unknown config key '" + name + "' set in the builder: that is the environment variable "
                            + "of key '" + variableOf + "'; the builder takes the key: set(\"" + variableOf + "\", value)");
                }
                String withoutPlugin = forKeyWithoutItsPluginName(name, ConfigKey::name);
                String noPlugin = withoutPlugin.isEmpty() ? forNoPluginHere(name, false) : withoutPlugin;
                Suggestion nearest = noPlugin.isEmpty() ? nearest(name, ConfigKey::name) : null;
                throw new ConfigException("unknown config key '" + name + "' set in the builder" + noPlugin
                        + (nearest != null ? " (did you mean '" + nearest.name() + "'?" + nearest.unread() + ")" : "")
                        + "; known keys: " + declared.keySet());
            }
        }
    }

    /**
     * Warnings for {@code CONDUIT_*} variables and {@code conduit.*} properties that no declared key
     * reads, each naming the nearest known one, and for variables {@code CONDUIT_} and properties
     * {@code conduit.} in another case ({@code conduit_probe_timeout}, {@code Conduit.probe.timeout}),
     * which none reads. A name is reported once per process.
     */
    public List<String> unknownSettingWarnings() {
        List<String> warnings = new ArrayList<>();
        Map<String, String> knownEnv = new LinkedHashMap<>();
        Map<String, String> knownProps = new LinkedHashMap<>();
        for (Declared d : declared.values()) {
            knownEnv.put(d.key().environmentName(), d.key().name());
            knownProps.put(d.key().propertyName(), d.key().name());
        }
        for (String name : environment.keySet()) {
            if (NOT_CONFIG.contains(name) || name.startsWith(TEST_PREFIX)) continue;
            if (!knownEnv.containsKey(name) && !isForUnreadPluginVariable(name) && WARNED.add(name)) {
                String withoutPlugin = forKeyWithoutItsPluginName(name, ConfigKey::environmentName);
                warnings.add(unknownMessage("environment variable", name,
                        withoutPlugin.isEmpty() ? forNoPluginHere(name, true) : withoutPlugin, ConfigKey::environmentName));
            }
        }
        for (String name : otherCaseVariables) {
            String upper = name.toUpperCase(Locale.ROOT);
            if (NOT_CONFIG.contains(upper) || upper.startsWith(TEST_PREFIX)) continue;
            otherCaseMessage(name, true, knownEnv.keySet()).filter(m -> WARNED.add(name)).ifPresent(warnings::add);
        }
        for (String name : otherCaseProperties) {
            otherCaseMessage(name, false, knownProps.keySet()).filter(m -> WARNED.add(name)).ifPresent(warnings::add);
        }
        for (String name : properties.keySet()) {
            if (!knownProps.containsKey(name) && !isForUnreadPlugin(name.substring(PROPERTY_PREFIX.length())) && WARNED.add(name)) {
                String withoutPlugin = forKeyWithoutItsPluginName(name, ConfigKey::propertyName);
                warnings.add(unknownMessage("system property", name,
                        withoutPlugin.isEmpty() ? forNoPluginHere(name.substring(PROPERTY_PREFIX.length()), false) : withoutPlugin,
                        ConfigKey::propertyName));
            }
        }
        return warnings;
    }

    /**
     * The warning for {@code name}, a {@code CONDUIT_} variable ({@code variable}) or a
     * {@code conduit.} property in another case: variables are read in upper case alone, as UCX
     * ({@code UCX_TLS}) and libfabric ({@code FI_PROVIDER}) read theirs, and properties in lower case,
     * as keys are named, but one typed otherwise was skipped as another program's, so a user never
     * learnt why the setting had no effect. Names the one to set instead; for a variable that is no
     * key's in any case, the nearest known one. A property whose lower case is no key's gets none:
     * Java has no namespace for properties, and another library's {@code Conduit.*} is no mistake.
     */
    private Optional<String> otherCaseMessage(String name, boolean variable, Collection<String> known) {
        String read = variable ? name.toUpperCase(Locale.ROOT) : name.toLowerCase(Locale.ROOT);
        String head = (variable ? "environment variable " : "system property ") + name + " is ignored: Conduit reads its "
                + (variable ? "variables in upper case only" : "system properties in lower case only");
        // A plugin's left unread (refused) is the one meant all the same: set so, it is left unread with the plugin, as it should.
        if (known.contains(read)
                || (variable ? isForUnreadPluginVariable(read) : isForUnreadPlugin(read.substring(PROPERTY_PREFIX.length())))) {
            boolean alsoSet = (variable ? environment : properties).containsKey(read);
            return Optional.of(head + (alsoSet ? "; " + read + ", which is set too, is read" : "; set " + read + " instead"));
        }
        if (!variable) return Optional.empty();
        return Optional.of(head + ", and " + read + " is no known variable either" + didYouMean(read, ConfigKey::environmentName)
                + " ('conduit info' lists every key)");
    }

    private String unknownMessage(String kind, String name, String noPlugin, Function<ConfigKey<?>, String> form) {
        return "unknown " + kind + " " + name + " is ignored" + noPlugin + (noPlugin.isEmpty() ? didYouMean(name, form) : "")
                + " ('conduit info' lists every key)";
    }

    /** "; did you mean X?" for {@link #nearest}'s suggestion of {@code name}, if any, with what it says of a key not read. */
    private String didYouMean(String name, Function<ConfigKey<?>, String> form) {
        Suggestion nearest = nearest(name, form);
        return nearest == null ? "" : "; did you mean " + nearest.name() + "?" + nearest.unread();
    }

    /**
     * A key, in {@code form}, that {@code name} is likely a misspelling of, or {@code null}. The keys
     * of plugins left unread are candidates too: were they not, a misspelling of one
     * ({@code CONDUIT_DEV_DAX_MOD} beside a left-out {@code dev-dax}) was sent to another plugin's key
     * ({@code CONDUIT_DEV_DAX_PATH} of {@code dev}) until 2026-12-02. A declared key wins a tie.
     */
    private Suggestion nearest(String name, Function<ConfigKey<?>, String> form) {
        Map<String, String> unreadOwner = new LinkedHashMap<>();
        for (Declared d : declared.values()) unreadOwner.putIfAbsent(form.apply(d.key()), "");
        for (Declared d : unreadKeys.values()) unreadOwner.putIfAbsent(form.apply(d.key()), d.owner());
        String nearest = Suggestions.nearest(name, unreadOwner.keySet());
        if (nearest == null) return null;
        String plugin = unreadOwner.get(nearest);
        return new Suggestion(nearest, plugin.isEmpty() ? "" : " That is a key of plugin " + plugin + ", which is "
                + whyUnread.get(plugin) + ", so nothing reads it either");
    }

    /** A suggested key; {@code unread} says, for a key of a plugin left unread, that nothing reads it, and is empty otherwise. */
    private record Suggestion(String name, String unread) {
    }

    /** Every declared key with its value in force, by name. */
    public List<ConfigEntry> entries() {
        return declared.values().stream()
                .sorted(Comparator.comparing(d -> d.key().name()))
                .map(this::entry)
                .toList();
    }

    /** The entries of the keys {@code owner} declared, by name. */
    public List<ConfigEntry> entries(String owner) {
        return entries().stream().filter(e -> e.owner().equals(owner)).toList();
    }

    /**
     * Entries of {@code keys} of {@code owner}, a plugin whose keys are not declared, so not read:
     * each with what is set for it, as set (it is neither parsed nor checked), or its default, for
     * {@code conduit info} to show what would apply to nothing. Until 2026-12-02 such a plugin
     * showed "no keys".
     */
    public List<ConfigEntry> unreadEntries(Collection<? extends ConfigKey<?>> keys, String owner) {
        return keys.stream().sorted(Comparator.comparing(ConfigKey::name)).map(key -> {
            Raw raw = raw(key);
            return entry(key, owner, raw, raw == null ? text(key.defaultValue()) : raw.value());
        }).toList();
    }

    private ConfigEntry entry(Declared d) {
        return entry(d.key(), d.owner(), raw(d.key()), text(get(d.key())));
    }

    private static ConfigEntry entry(ConfigKey<?> key, String owner, Raw raw, String text) {
        return new ConfigEntry(key.name(), key.propertyName(), key.environmentName(), text,
                raw == null ? Source.DEFAULT : raw.source(), owner,
                key.doc() + " (" + key.expectedForm() + ")");
    }

    /** A value as its key accepts it back: a list comma-separated, a duration as {@link ConfigKey#durationText}. */
    private static String text(Object value) {
        return value == null ? null
                : value instanceof List<?> l ? String.join(",", l.stream().map(String::valueOf).toList())
                : value instanceof Duration duration ? ConfigKey.durationText(duration)
                : String.valueOf(value);
    }

    private Raw raw(ConfigKey<?> key) {
        String v = builder.get(key.name());
        if (v != null) return new Raw(v, Source.BUILDER);
        v = properties.get(key.propertyName());
        if (v != null) return new Raw(v, Source.SYSTEM_PROPERTY);
        v = environment.get(key.environmentName());
        if (v != null) return new Raw(v, Source.ENVIRONMENT);
        return null;
    }

    private static String describe(Source source, ConfigKey<?> key) {
        return switch (source) {
            case BUILDER -> "the builder";
            case SYSTEM_PROPERTY -> "system property " + key.propertyName();
            case ENVIRONMENT -> "environment variable " + key.environmentName();
            case DEFAULT -> "the default";
        };
    }

    /** Marks a key resolved to "no value" in the cache, which cannot hold {@code null}. */
    private enum Unset { INSTANCE }
}
