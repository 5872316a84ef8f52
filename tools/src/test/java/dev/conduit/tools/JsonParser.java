package dev.conduit.tools;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A strict JSON (RFC 8259) parser for tests: objects become {@code Map<String, Object>} in document
 * order, arrays {@code List<Object>}, numbers {@link BigDecimal}, {@code null} Java {@code null}.
 * Anything that is not valid JSON (trailing commas, unescaped control characters, bad escapes,
 * leading zeros, duplicate names, trailing text) is an {@link IllegalArgumentException}.
 */
final class JsonParser {

    private final String text;
    private int pos;

    private JsonParser(String text) {
        this.text = text;
    }

    static Object parse(String text) {
        JsonParser parser = new JsonParser(text);
        Object value = parser.value();
        parser.skipWhitespace();
        if (parser.pos != text.length()) {
            throw parser.error("trailing text");
        }
        return value;
    }

    @SuppressWarnings("unchecked")
    static Map<String, Object> parseObject(String text) {
        Object value = parse(text);
        if (!(value instanceof Map)) {
            throw new IllegalArgumentException("not a JSON object: " + text);
        }
        return (Map<String, Object>) value;
    }

    private Object value() {
        skipWhitespace();
        if (pos >= text.length()) {
            throw error("value expected");
        }
        char c = text.charAt(pos);
        return switch (c) {
            case '{' -> object();
            case '[' -> array();
            case '"' -> string();
            case 't' -> literal("true", Boolean.TRUE);
            case 'f' -> literal("false", Boolean.FALSE);
            case 'n' -> literal("null", null);
            default -> {
                if (c == '-' || (c >= '0' && c <= '9')) {
                    yield number();
                }
                throw error("unexpected character");
            }
        };
    }

    private Map<String, Object> object() {
        expect('{');
        Map<String, Object> members = new LinkedHashMap<>();
        skipWhitespace();
        if (peek() == '}') {
            pos++;
            return members;
        }
        do {
            skipWhitespace();
            String name = string();
            skipWhitespace();
            expect(':');
            Object value = value();
            if (members.containsKey(name)) {
                throw error("duplicate name " + name);
            }
            members.put(name, value);
            skipWhitespace();
        } while (consume(','));
        expect('}');
        return members;
    }

    private List<Object> array() {
        expect('[');
        List<Object> elements = new ArrayList<>();
        skipWhitespace();
        if (peek() == ']') {
            pos++;
            return elements;
        }
        do {
            elements.add(value());
            skipWhitespace();
        } while (consume(','));
        expect(']');
        return elements;
    }

    private String string() {
        expect('"');
        StringBuilder s = new StringBuilder();
        while (true) {
            if (pos >= text.length()) {
                throw error("unterminated string");
            }
            char c = text.charAt(pos++);
            if (c == '"') {
                return s.toString();
            }
            if (c < 0x20) {
                throw error("unescaped control character");
            }
            if (c != '\\') {
                s.append(c);
                continue;
            }
            if (pos >= text.length()) {
                throw error("unterminated escape");
            }
            char e = text.charAt(pos++);
            switch (e) {
                case '"', '\\', '/' -> s.append(e);
                case 'b' -> s.append('\b');
                case 'f' -> s.append('\f');
                case 'n' -> s.append('\n');
                case 'r' -> s.append('\r');
                case 't' -> s.append('\t');
                case 'u' -> {
                    if (pos + 4 > text.length()) {
                        throw error("short unicode escape");
                    }
                    String hex = text.substring(pos, pos + 4);
                    if (!hex.matches("[0-9a-fA-F]{4}")) {
                        throw error("bad unicode escape");
                    }
                    s.append((char) Integer.parseInt(hex, 16));
                    pos += 4;
                }
                default -> throw error("bad escape \\" + e);
            }
        }
    }

    private BigDecimal number() {
        int start = pos;
        consume('-');
        if (consume('0')) {
            if (pos < text.length() && Character.isDigit(text.charAt(pos))) {
                throw error("leading zero");
            }
        } else {
            digits();
        }
        if (consume('.')) {
            digits();
        }
        if (consume('e') || consume('E')) {
            if (!consume('+')) {
                consume('-');
            }
            digits();
        }
        return new BigDecimal(text.substring(start, pos));
    }

    private void digits() {
        int start = pos;
        while (pos < text.length() && text.charAt(pos) >= '0' && text.charAt(pos) <= '9') {
            pos++;
        }
        if (pos == start) {
            throw error("digit expected");
        }
    }

    private Object literal(String word, Object value) {
        if (!text.startsWith(word, pos)) {
            throw error("expected " + word);
        }
        pos += word.length();
        return value;
    }

    private void skipWhitespace() {
        while (pos < text.length() && " \t\n\r".indexOf(text.charAt(pos)) >= 0) {
            pos++;
        }
    }

    private char peek() {
        return pos < text.length() ? text.charAt(pos) : '\0';
    }

    private boolean consume(char c) {
        if (peek() == c && pos < text.length()) {
            pos++;
            return true;
        }
        return false;
    }

    private void expect(char c) {
        if (!consume(c)) {
            throw error("'" + c + "' expected");
        }
    }

    private IllegalArgumentException error(String problem) {
        return new IllegalArgumentException(problem + " at offset " + pos + " in: " + text);
    }
}
