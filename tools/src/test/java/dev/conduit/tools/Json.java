package dev.conduit.tools;

import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** Navigation in documents from {@link JsonParser}, failing the test when the shape is not as documented. */
final class Json {

    private Json() {
    }

    @SuppressWarnings("unchecked")
    static List<Object> list(Map<String, Object> object, String name) {
        assertThat(object).containsKey(name);
        assertThat(object.get(name)).as(name).isInstanceOf(List.class);
        return (List<Object>) object.get(name);
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> object(Map<String, Object> object, String name) {
        assertThat(object).containsKey(name);
        assertThat(object.get(name)).as(name).isInstanceOf(Map.class);
        return (Map<String, Object>) object.get(name);
    }

    @SuppressWarnings("unchecked")
    static List<Map<String, Object>> objects(Map<String, Object> object, String name) {
        List<Object> list = list(object, name);
        assertThat(list).allMatch(Map.class::isInstance);
        return (List<Map<String, Object>>) (List<?>) list;
    }

    /** The configuration entry for {@code key} in a {@code configuration} array. */
    @SuppressWarnings("unchecked")
    static Map<String, Object> entry(List<Object> configuration, String key) {
        return configuration.stream().map(e -> (Map<String, Object>) e).filter(e -> key.equals(e.get("key"))).findFirst()
                .orElseThrow(() -> new AssertionError("no configuration entry " + key + " in " + configuration));
    }

    /** The plugin called {@code name} in an {@code info} document. */
    static Map<String, Object> plugin(Map<String, Object> info, String name) {
        return objects(info, "plugins").stream().filter(p -> name.equals(p.get("name"))).findFirst()
                .orElseThrow(() -> new AssertionError("no plugin " + name + " in " + info));
    }
}
