package dev.conduit;

import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

import static dev.conduit.testing.TestConduits.isolated;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Every builder method refuses a null argument with a {@link NullPointerException} naming the
 * parameter, as {@code set}, {@code addPlugin} and {@code classLoader} did already: the JDK's own
 * message named its internal variables ("because \"m\" is null"), or nothing, and a null among
 * {@code transports} names became a plugin called "null".
 */
class ConduitBuilderNullArgumentTest {

    @Test
    void transportsRefusesANullArrayAndANullName() {
        assertThatThrownBy(() -> Conduit.builder().transports((String[]) null))
                .isInstanceOf(NullPointerException.class).hasMessage("names");
        assertThatThrownBy(() -> isolated().transports("memfd", null))
                .isInstanceOf(NullPointerException.class).hasMessage("names[1]");
    }

    @Test
    void sharedDirectoryAndPluginPathRefuseNull() {
        assertThatThrownBy(() -> Conduit.builder().sharedDirectory(null))
                .isInstanceOf(NullPointerException.class).hasMessage("directory");
        assertThatThrownBy(() -> Conduit.builder().pluginPath((Path[]) null))
                .isInstanceOf(NullPointerException.class).hasMessage("directories");
        assertThatThrownBy(() -> Conduit.builder().pluginPath(Path.of("/opt/plugins"), null))
                .isInstanceOf(NullPointerException.class).hasMessage("directories[1]");
    }

    @Test
    void environmentRefusesNullAndNamesTheVariableWithANullValue() {
        assertThatThrownBy(() -> Conduit.builder().environment(null))
                .isInstanceOf(NullPointerException.class).hasMessage("environment");
        Map<String, String> env = new HashMap<>();
        env.put("CONDUIT_SHARED_DIR", null);
        assertThatThrownBy(() -> Conduit.builder().environment(env))
                .isInstanceOf(NullPointerException.class).hasMessage("environment: the value of variable CONDUIT_SHARED_DIR");
        Map<String, String> nullName = new HashMap<>();
        nullName.put(null, "x");
        assertThatThrownBy(() -> Conduit.builder().environment(nullName))
                .isInstanceOf(NullPointerException.class).hasMessage("environment: a variable's name");
    }

    @Test
    void systemPropertiesRefusesNull() {
        assertThatThrownBy(() -> Conduit.builder().systemProperties(null))
                .isInstanceOf(NullPointerException.class).hasMessage("properties");
    }
}
