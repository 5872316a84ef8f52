package dev.conduit.internal.discovery;

import java.lang.module.ResolvedModule;
import java.net.URI;
import java.security.CodeSource;

/** Describes where a plugin class was loaded from, for {@code conduit info}. */
final class Origins {

    private Origins() {
    }

    static String of(Class<?> type, String layerDescription) {
        Module module = type.getModule();
        if (module.isNamed()) {
            String location = module.getLayer() == null ? "" : module.getLayer().configuration().findModule(module.getName())
                    .map(ResolvedModule::reference)
                    .flatMap(r -> r.location())
                    .map(URI::toString)
                    .map(s -> " (" + s + ")")
                    .orElse("");
            return layerDescription + "module " + module.getName() + location;
        }
        CodeSource source = type.getProtectionDomain().getCodeSource();
        return layerDescription + "class path" + (source != null && source.getLocation() != null ? " (" + source.getLocation() + ")" : "");
    }
}
