package dev.conduit.internal.discovery;

import dev.conduit.spi.ConduitPlugin;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.Iterator;
import java.util.List;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.function.Predicate;

/**
 * Finds plugins with {@link ServiceLoader}: on the module layer of {@code dev.conduit} (module
 * path, {@code provides}) and through a class loader (class path, {@code META-INF/services}).
 * A provider that cannot be loaded or instantiated becomes a broken candidate; it never stops the
 * search.
 */
final class ServiceDiscovery {

    private ServiceDiscovery() {
    }

    static List<Candidate> discover(ClassLoader classLoader) {
        List<Candidate> found = new ArrayList<>();
        Set<Class<?>> seen = new HashSet<>();
        ModuleLayer layer = ServiceDiscovery.class.getModule().getLayer();
        if (layer != null) {
            collect(ServiceLoader.load(layer, ConduitPlugin.class), seen, found, "", type -> true);
        }
        collect(ServiceLoader.load(ConduitPlugin.class, classLoader), seen, found, "", type -> true);
        return found;
    }

    /**
     * Adds the providers of {@code loader} whose type passes {@code accept} and was not seen yet.
     * Iterates by hand so that one bad provider only costs its own entry.
     */
    static void collect(ServiceLoader<ConduitPlugin> loader, Set<Class<?>> seen, List<Candidate> found,
                        String layerDescription, Predicate<Class<?>> accept) {
        Iterator<ServiceLoader.Provider<ConduitPlugin>> it = loader.stream().iterator();
        while (true) {
            ServiceLoader.Provider<ConduitPlugin> provider;
            try {
                if (!it.hasNext()) break;
                provider = it.next();
            } catch (ServiceConfigurationError | LinkageError e) {
                // A class-path provider's class is loaded by hasNext(), which lets a LinkageError through (a class built for a
                // newer Java, a superclass in a jar that is missing): its name is used up, and the search goes on.
                found.add(Candidate.broken("?", layerDescription + "service configuration", describe(e)));
                continue;
            }
            Class<? extends ConduitPlugin> type;
            try {
                type = provider.type();
            } catch (ServiceConfigurationError | LinkageError e) {
                found.add(Candidate.broken("?", layerDescription + "service configuration", describe(e)));
                continue;
            }
            if (!accept.test(type) || !seen.add(type)) continue;
            String origin = Origins.of(type, layerDescription);
            try {
                found.add(Candidate.of(provider.get(), origin));
            } catch (ServiceConfigurationError | RuntimeException | LinkageError e) {
                found.add(Candidate.broken(type.getName(), origin, "could not instantiate " + type.getName() + ": " + describe(e)));
            }
        }
    }

    /**
     * A plugin's failure with its causes, each once: a cause chain may loop back on itself (Throwable
     * allows it), and a plugin's bad exception must not hang the discovery of the others.
     */
    static String describe(Throwable e) {
        StringBuilder b = new StringBuilder(String.valueOf(e.getMessage() != null ? e.getMessage() : e.getClass().getName()));
        Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        seen.add(e);
        for (Throwable c = e.getCause(); c != null && seen.add(c); c = c.getCause()) {
            b.append("; caused by ").append(c.getClass().getSimpleName()).append(": ").append(c.getMessage());
        }
        return b.toString();
    }
}
