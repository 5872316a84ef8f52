package dev.conduit.tools;

import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class JsonWriterTest {

    @Test
    void escapesQuotesBackslashesAndControlCharacters() {
        String json = write(w -> w.value("say \"hi\"\\ \b\f\n\r\t \u0000 \u001f end"));

        assertThat(json).isEqualTo("\"say \\\"hi\\\"\\\\ \\b\\f\\n\\r\\t \\u0000 \\u001f end\"");
    }

    @Test
    void writesEverythingBeyondAsciiAsUnicodeEscapes() {
        String json = write(w -> w.value("é \u2028 \u007f 😀"));

        assertThat(json).isEqualTo("\"\\u00e9 \\u2028 \\u007f \\ud83d\\ude00\"");
        assertThat(json.chars()).allMatch(c -> c >= 0x20 && c < 0x7f);
    }

    @Test
    void everyCharacterSurvivesARoundTrip() {
        StringBuilder all = new StringBuilder();
        for (char c = 0; c < 0x800; c++) {
            all.append(c);
        }
        all.append("\ud83d\ude00\uffff\ud800");
        String text = all.toString();

        assertThat(JsonParser.parse(write(w -> w.value(text)))).isEqualTo(text);
    }

    @Test
    void nestsObjectsAndArraysWithCommasAndIndentation() {
        String json = write(w -> w.beginObject()
                .member("name", "alpha")
                .member("count", 3)
                .member("ok", true)
                .name("missing").nullValue()
                .name("list").beginArray().value("a").value(-7).beginObject().endObject().beginArray().endArray().endArray()
                .endObject());

        assertThat(json).isEqualTo(String.join(System.lineSeparator(),
                "{",
                "  \"name\": \"alpha\",",
                "  \"count\": 3,",
                "  \"ok\": true,",
                "  \"missing\": null,",
                "  \"list\": [",
                "    \"a\",",
                "    -7,",
                "    {},",
                "    []",
                "  ]",
                "}"));
        assertThat(JsonParser.parseObject(json)).containsEntry("name", "alpha").containsEntry("missing", null)
                .extractingByKey("list").isEqualTo(List.of("a", new java.math.BigDecimal(-7), Map.of(), List.of()));
    }

    @Test
    void refusesToWriteInvalidJson() {
        assertThatThrownBy(() -> new JsonWriter(new StringBuilder()).beginObject().value("no name"))
                .isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> new JsonWriter(new StringBuilder()).beginArray().name("x"))
                .isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> new JsonWriter(new StringBuilder()).beginObject().endArray())
                .isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> new JsonWriter(new StringBuilder()).beginObject().name("dangling").endObject())
                .isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> new JsonWriter(new StringBuilder()).value(1).value(2))
                .isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> new JsonWriter(new StringBuilder()).beginObject().finish())
                .isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> new JsonWriter(new StringBuilder()).finish())
                .isInstanceOf(IllegalStateException.class);
    }

    private static String write(java.util.function.Consumer<JsonWriter> document) {
        StringBuilder out = new StringBuilder();
        JsonWriter writer = new JsonWriter(out);
        document.accept(writer);
        writer.finish();
        return out.toString();
    }
}
