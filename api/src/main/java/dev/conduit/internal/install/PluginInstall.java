package dev.conduit.internal.install;

/**
 * The remedy for a plugin not found, in this JVM: every error and warning that says a plugin is
 * missing gives it from here. A package of its own, so that {@code config}, which {@code discovery}
 * uses, says the same as {@code discovery} without calling into it.
 */
public final class PluginInstall {

    /**
     * Whether {@code dev.conduit} runs from a run-time image made by jlink. There a plugin is found
     * only if it was linked in too: jlink adds no service provider it is not named
     * ({@code --add-modules}), and its {@code --bind-services} fails on a JDK without jmods, as it
     * then links jdk.jlink; a user who built the image is not helped by "put it on the module path".
     */
    private static final boolean LINKED_INTO_IMAGE = linkedIntoImage(PluginInstall.class.getModule());

    private PluginInstall() {
    }

    static boolean linkedIntoImage(Module module) {
        return module.getLayer() != null && module.getLayer().configuration().findModule(module.getName())
                .flatMap(m -> m.reference().location()).map(uri -> "jrt".equals(uri.getScheme())).orElse(false);
    }

    /**
     * Whether this JVM runs {@code dev.conduit} from a run-time image, for a message that passes it
     * on to {@link #howToInstall(String, boolean)} so that its image case is tested outside an image.
     */
    public static boolean linkedIntoImage() {
        return LINKED_INTO_IMAGE;
    }

    /** Where to install {@code it}, the plugin ("it", "that plugin"), in this JVM. */
    public static String howToInstall(String it) {
        return howToInstall(it, LINKED_INTO_IMAGE);
    }

    /** As {@link #howToInstall(String)}, in an image or not as {@code linkedIntoImage} says. */
    public static String howToInstall(String it, boolean linkedIntoImage) {
        if (linkedIntoImage) {
            return "link " + it + " into this run-time image (jlink --add-modules with the plugin's module: jlink links no "
                    + "plugin it is not named); the image's java also finds plugins on a module path (java -p) and in plugin.path "
                    + "(CONDUIT_PLUGIN_PATH)";
        }
        return "put " + it + " on the module path or the class path, or into plugin.path (CONDUIT_PLUGIN_PATH)";
    }

    /** Where to install one of Conduit's own plugins, when none was found: named as jlink wants them in an image, by artifact elsewhere. */
    public static String howToInstallOne() {
        return howToInstallOne(LINKED_INTO_IMAGE);
    }

    static String howToInstallOne(boolean linkedIntoImage) {
        return howToInstall(linkedIntoImage ? "one (dev.conduit.plugin.memfd, dev.conduit.plugin.posix)"
                : "one (conduit-plugin-memfd, conduit-plugin-posix)", linkedIntoImage);
    }
}
