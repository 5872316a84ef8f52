package dev.conduit.spi;

import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.charset.StandardCharsets;
import java.util.function.Consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

class PayloadReaderTest {

    private static PayloadReader reader(byte... bytes) {
        return new PayloadReader(bytes);
    }

    private static PayloadReader stringReader(String s) {
        return new PayloadReader(new PayloadWriter().string(s).toByteArray(), 0,
                2 + s.getBytes(StandardCharsets.UTF_8).length, "payload.");
    }

    /** Asserts that {@code read} fails with an {@link InvalidHandleException} naming {@code field}. */
    private static InvalidHandleException assertInvalid(PayloadReader r, Consumer<PayloadReader> read, String field) {
        InvalidHandleException e = catchThrowableOfType(InvalidHandleException.class, () -> read.accept(r));
        assertThat(e).as("expected InvalidHandleException for field %s", field).isNotNull();
        assertThat(e.field()).isEqualTo(field);
        assertThat(e).hasMessageStartingWith("invalid handle: field '" + field + "': ");
        return e;
    }

    @Nested
    class Integers {

        @Test
        void readsLittleEndian() {
            PayloadReader r = reader(
                    (byte) 0xAB,
                    (byte) 0x34, (byte) 0x12,
                    (byte) 0x78, (byte) 0x56, (byte) 0x34, (byte) 0x12,
                    (byte) 0x08, (byte) 0x07, (byte) 0x06, (byte) 0x05, (byte) 0x04, (byte) 0x03, (byte) 0x02, (byte) 0x01);
            assertThat(r.u8("a")).isEqualTo(0xAB);
            assertThat(r.u16("b")).isEqualTo(0x1234);
            assertThat(r.u32("c")).isEqualTo(0x12345678L);
            assertThat(r.u64("d")).isEqualTo(0x0102030405060708L);
            assertThat(r.remaining()).isZero();
            r.end("end");
        }

        @Test
        void readsUnsignedValues() {
            PayloadReader r = reader((byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF, (byte) 0xFF);
            assertThat(r.u8("a")).isEqualTo(255);
            assertThat(r.u16("b")).isEqualTo(65535);
            assertThat(r.u32("c")).isEqualTo(0xFFFF_FFFFL);
        }

        @Test
        void truncationNamesTheFieldAndTheShortfall() {
            assertThat(assertInvalid(reader(), r -> r.u8("version"), "version")).hasMessageContaining("truncated: needs 1 bytes, 0 left");
            assertInvalid(reader((byte) 1), r -> r.u16("length"), "length");
            assertInvalid(reader(new byte[3]), r -> r.u32("crc"), "crc");
            assertThat(assertInvalid(reader(new byte[7]), r -> r.u64("export-id"), "export-id"))
                    .hasMessageContaining("needs 8 bytes, 7 left");
            assertInvalid(reader(new byte[3]), r -> r.bytes("origin", 4), "origin");
        }

        @Test
        void aFailedReadConsumesNothing() {
            PayloadReader r = reader(new byte[3]);
            assertInvalid(r, x -> x.u32("crc"), "crc");
            assertThat(r.remaining()).isEqualTo(3);
            assertThat(r.u16("ok")).isZero();
        }

        @Test
        void u64InRangeRefusesValuesOutsideTheRangeIncludingHugeUnsignedOnes() {
            byte[] five = new PayloadWriter().u64(5).u64(5).u64(11).u64(-1L).toByteArray();
            PayloadReader r = reader(five);
            assertThat(r.u64InRange("len", 0, 10)).isEqualTo(5);
            assertThat(assertInvalid(r, x -> x.u64InRange("offset", 6, 10), "offset")).hasMessageContaining("value 5 is outside [6, 10]");
            assertThat(assertInvalid(r, x -> x.u64InRange("count", 0, 10), "count")).hasMessageContaining("value 11 is outside [0, 10]");
            assertThat(assertInvalid(r, x -> x.u64InRange("size", 0, Long.MAX_VALUE), "size"))
                    .hasMessageContaining("18446744073709551615");
        }

        /** The range is closed: a peer's offset may be the least one allowed, its length the largest. */
        @Test
        void u64InRangeTakesBothEndsOfTheRange() {
            PayloadReader r = reader(new PayloadWriter().u64(6).u64(10).u64(11).toByteArray());
            assertThat(r.u64InRange("offset", 6, 10)).isEqualTo(6);
            assertThat(r.u64InRange("length", 6, 10)).isEqualTo(10);
            assertThat(assertInvalid(r, x -> x.u64InRange("count", 6, 10), "count")).hasMessageContaining("value 11 is outside [6, 10]");
        }

        /** The bounds are unsigned as the value is: compared signed, a max of 2^64 - 1 refused 5. */
        @Test
        void u64InRangeComparesItsBoundsUnsigned() {
            PayloadReader r = reader(new PayloadWriter().u64(5).u64(-1L).u64(Long.MIN_VALUE).toByteArray());
            assertThat(r.u64InRange("any", 0, -1L)).isEqualTo(5);
            assertThat(r.u64InRange("any", 0, -1L)).isEqualTo(-1L);
            assertThat(assertInvalid(r, x -> x.u64InRange("high", Long.MIN_VALUE + 1, -1L), "high"))
                    .hasMessageContaining("value 9223372036854775808 is outside [9223372036854775809, 18446744073709551615]");
        }

        @Test
        void endRefusesTrailingBytes() {
            PayloadReader r = reader(new byte[5]);
            r.u16("a");
            assertThat(assertInvalid(r, x -> x.end("crc"), "crc")).hasMessageContaining("3 unexpected trailing bytes");
        }

        @Test
        void bytesCopiesExactlyTheRequestedRange() {
            byte[] data = {1, 2, 3, 4};
            PayloadReader r = reader(data);
            byte[] out = r.bytes("token", 3);
            assertThat(out).containsExactly(1, 2, 3);
            out[0] = 9;
            assertThat(data[0]).isEqualTo((byte) 1);
            assertThat(r.remaining()).isEqualTo(1);
            assertInvalid(r, x -> x.bytes("negative", -1), "negative");
        }
    }

    @Nested
    class Windows {

        @Test
        void readsOnlyItsWindowAndPrefixesFieldNames() {
            byte[] data = {9, 9, 1, 2, 9, 9};
            PayloadReader r = new PayloadReader(data, 2, 2, "payload.");
            assertThat(r.remaining()).isEqualTo(2);
            assertThat(r.u8("a")).isEqualTo(1);
            assertThat(r.u8("b")).isEqualTo(2);
            assertInvalid(r, x -> x.u8("c"), "payload.c");
            assertThat(r.invalid("x", "why").field()).isEqualTo("payload.x");
        }

        @Test
        void errorsNameWhatTheBytesWereGivenAs() {
            PayloadReader r = new PayloadReader(new byte[] {1}, 0, 1, "address.shm.", "Conduit worker address");
            r.u8("version");
            assertThatThrownBy(() -> r.u8("lease")).isInstanceOf(InvalidHandleException.class)
                    .hasMessageStartingWith("invalid Conduit worker address: field 'address.shm.lease': ");
            assertThat(r.invalid("x", "why")).hasMessage("invalid Conduit worker address: field 'address.shm.x': why");
            assertThatThrownBy(() -> new PayloadReader(new byte[1], 0, 1, "", null)).isInstanceOf(NullPointerException.class);
        }

        @Test
        void refusesAWindowOutsideTheArray() {
            assertThatThrownBy(() -> new PayloadReader(new byte[4], 2, 3, "")).isInstanceOf(IndexOutOfBoundsException.class);
            assertThatThrownBy(() -> new PayloadReader(new byte[4], -1, 1, "")).isInstanceOf(IndexOutOfBoundsException.class);
            assertThatThrownBy(() -> new PayloadReader(new byte[4], 0, 1, null)).isInstanceOf(NullPointerException.class);
        }
    }

    @Nested
    class Strings {

        @Test
        void readsLengthPrefixedUtf8() {
            PayloadReader r = reader(new PayloadWriter().string("héllo").string("").toByteArray());
            assertThat(r.string("a", 100)).isEqualTo("héllo");
            assertThat(r.string("b", 0)).isEmpty();
            r.end("end");
        }

        @Test
        void refusesAStringLongerThanItsMaximum() {
            PayloadReader r = reader(new PayloadWriter().string("abcdef").toByteArray());
            assertThat(assertInvalid(r, x -> x.string("plugin", 5), "plugin")).hasMessageContaining("length 6 exceeds the maximum 5");
        }

        /**
         * Bytes that are not UTF-8 (a stray continuation byte, 0xFF, an overlong '/', an encoded
         * surrogate, a sequence cut short) are refused: decoded leniently, each became U+FFFD, so
         * that different bytes a peer sent read as one string.
         */
        @ParameterizedTest
        @ValueSource(strings = {"61 80", "61 ff", "61 c0 af", "61 ed a0 80", "61 e2 82"})
        void refusesBytesThatAreNotUtf8NamingTheFieldAndWhereTheyGoWrong(String hex) {
            byte[] body = java.util.HexFormat.ofDelimiter(" ").parseHex(hex);
            PayloadReader r = reader(new PayloadWriter().u16(body.length).bytes(body).u8(7).toByteArray());
            assertThat(assertInvalid(r, x -> x.string("host", 32), "host"))
                    .hasMessageContaining("is not UTF-8: byte 1 of its " + body.length + " begins a malformed sequence");
        }

        @Test
        void readsFourByteUtf8AsTheSurrogatePairItEncodes() {
            PayloadReader r = reader(new PayloadWriter().string("a\uD83D\uDE00").toByteArray());
            assertThat(r.string("a", 8)).isEqualTo("a\uD83D\uDE00");
            r.end("end");
        }

        @Test
        void truncatedLengthOrBodyNamesTheField() {
            assertInvalid(reader((byte) 3), r -> r.string("plugin", 32), "plugin.length");
            assertThat(assertInvalid(reader((byte) 5, (byte) 0, (byte) 'a'), r -> r.string("plugin", 32), "plugin"))
                    .hasMessageContaining("truncated: needs 5 bytes, 1 left");
        }
    }

    @Nested
    class Names {

        @ParameterizedTest
        @ValueSource(strings = {"memfd", "posix", "a", "dev-dax2", "abcdefghijklmnopqrstuvwxyz012345", "z9"})
        void acceptsLowerCaseNames(String name) {
            assertThat(stringReader(name).name("plugin", 32)).isEqualTo(name);
            assertThat(PayloadReader.isName(name)).isTrue();
        }

        @ParameterizedTest
        @ValueSource(strings = {"", "Memfd", "1abc", "-abc", "a_b", "a.b", "a b", "mémoire", "a\u0000"})
        void refusesOtherNamesNamingTheField(String name) {
            InvalidHandleException e = assertInvalid(stringReader(name), r -> r.name("plugin", 32), "payload.plugin");
            assertThat(e).hasMessageContaining("is not a name");
            assertThat(PayloadReader.isName(name)).isFalse();
        }

        /** Until 2026-12-07 the refusal said the name was not lower-case letters, digits and '-', which it is. */
        @Test
        void refusesNamesLongerThan32EvenIfTheFieldAllowsMoreSayingSo() {
            String name = "a".repeat(33);
            assertThat(PayloadReader.isName(name)).isFalse();
            assertThat(assertInvalid(stringReader(name), r -> r.name("alias", 64), "payload.alias"))
                    .hasMessageEndingWith("'" + name + "' is 33 characters long, and a name is at most 32");
        }

        @Test
        void escapesUnprintableCharactersInMessages() {
            InvalidHandleException e = assertInvalid(stringReader("a\u0007b"), r -> r.name("plugin", 32), "payload.plugin");
            assertThat(e).hasMessageContaining("a\\u0007b").hasMessageNotContaining("\u0007");
        }

        /** DEL is a control character as those below the space are (a terminal may act on it); the tilde before it is printable. */
        @Test
        void printableEscapesDelAndKeepsTheTilde() {
            assertThat(PayloadReader.printable("~\u007f")).isEqualTo("~\\u007f");
        }

        /** The space is the first printable character: a message that escaped it would be hard to read. */
        @Test
        void printableKeepsTheSpaceAndEscapesTheControlCharacterBeforeIt() {
            assertThat(PayloadReader.printable("\u001f ")).isEqualTo("\\u001f ");
        }

        /** Text is cut after 64 characters: text of exactly 64 is shown whole, with no "..." that would say some is missing. */
        @Test
        void printableShortensOnlyTextLongerThan64Characters() {
            assertThat(PayloadReader.printable("x".repeat(64))).isEqualTo("x".repeat(64));
            assertThat(PayloadReader.printable("x".repeat(65))).isEqualTo("x".repeat(64) + "...");
        }
    }

    @Nested
    class RelativePaths {

        @ParameterizedTest
        @ValueSource(strings = {"chunk-0001", "conduit/chunks/a.b_c-D9", "a/b/c", "...", "..a", "a..", ".hidden", "AZaz09._-"})
        void acceptsSafeRelativePaths(String path) {
            assertThat(stringReader(path).relativePath("path")).isEqualTo(path);
        }

        @ParameterizedTest
        @ValueSource(strings = {"..", "../etc/passwd", "a/../../b", "a/..", ".", "./a", "a/./b"})
        void refusesDotSegments(String path) {
            assertThat(assertInvalid(stringReader(path), r -> r.relativePath("path"), "payload.path"))
                    .hasMessageContaining("could leave the shared directory");
        }

        @ParameterizedTest
        @ValueSource(strings = {"/etc/passwd", "/", "//server/share"})
        void refusesAbsolutePaths(String path) {
            assertThat(assertInvalid(stringReader(path), r -> r.relativePath("path"), "payload.path"))
                    .hasMessageContaining("absolute path");
        }

        @ParameterizedTest
        @ValueSource(strings = {"a//b", "a/", "a/b/"})
        void refusesEmptySegments(String path) {
            assertThat(assertInvalid(stringReader(path), r -> r.relativePath("path"), "payload.path"))
                    .hasMessageContaining("refused");
        }

        @Test
        void refusesAnEmptyPath() {
            assertThat(assertInvalid(stringReader(""), r -> r.relativePath("path"), "payload.path")).hasMessageContaining("empty path");
        }

        @ParameterizedTest
        @ValueSource(strings = {"a b", "a\\b", "a:b", "chunk*", "é", "a\u0000b", "a\nb", "~/x", "$HOME"})
        void refusesCharactersOutsideThePortableSet(String path) {
            assertThat(assertInvalid(stringReader(path), r -> r.relativePath("path"), "payload.path"))
                    .hasMessageContaining("outside [A-Za-z0-9._-]");
        }

        @Test
        void refusesPathsLongerThanTheMaximum() {
            String ok = "a".repeat(PayloadReader.MAX_PATH_LENGTH);
            assertThat(stringReader(ok).relativePath("path")).isEqualTo(ok);
            String tooLong = "a".repeat(PayloadReader.MAX_PATH_LENGTH + 1);
            assertThat(assertInvalid(stringReader(tooLong), r -> r.relativePath("path"), "payload.path"))
                    .hasMessageContaining("exceeds the maximum 255");
        }

        @Test
        void longHostilePathsAreShortenedInMessages() {
            String hostile = "../" + "x".repeat(200);
            InvalidHandleException e = assertInvalid(stringReader(hostile), r -> r.relativePath("path"), "payload.path");
            assertThat(e.getMessage()).contains("...").hasSizeLessThan(300);
        }
    }
}
