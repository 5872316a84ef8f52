package dev.conduit.spi;

import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

class PayloadWriterTest {

    @Test
    void roundTripsEveryFieldType() {
        byte[] token = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
        byte[] bytes = new PayloadWriter()
                .u8(0).u8(255)
                .u16(0).u16(0xFFFF)
                .u32(0).u32(0xFFFF_FFFFL)
                .u64(0).u64(-1L).u64(Long.MIN_VALUE)
                .bytes(token)
                .string("memfd")
                .string("chunks/c-1")
                .string("ünïcode ✓")
                .toByteArray();

        PayloadReader r = new PayloadReader(bytes);
        assertThat(r.u8("a")).isZero();
        assertThat(r.u8("b")).isEqualTo(255);
        assertThat(r.u16("c")).isZero();
        assertThat(r.u16("d")).isEqualTo(0xFFFF);
        assertThat(r.u32("e")).isZero();
        assertThat(r.u32("f")).isEqualTo(0xFFFF_FFFFL);
        assertThat(r.u64("g")).isZero();
        assertThat(r.u64("h")).isEqualTo(-1L);
        assertThat(r.u64("i")).isEqualTo(Long.MIN_VALUE);
        assertThat(r.bytes("token", 16)).isEqualTo(token);
        assertThat(r.name("plugin", 32)).isEqualTo("memfd");
        assertThat(r.relativePath("path")).isEqualTo("chunks/c-1");
        assertThat(r.string("text", 100)).isEqualTo("ünïcode ✓");
        r.end("end");
    }

    @Test
    void writesLittleEndian() {
        assertThat(new PayloadWriter().u16(0x1234).u32(0x12345678L).toByteArray())
                .containsExactly(0x34, 0x12, 0x78, 0x56, 0x34, 0x12);
    }

    @Test
    void growsBeyondItsInitialBuffer() {
        PayloadWriter w = new PayloadWriter();
        for (int i = 0; i < 1000; i++) w.u64(i);
        w.bytes(new byte[5000]);
        assertThat(w.size()).isEqualTo(8000 + 5000);
        PayloadReader r = new PayloadReader(w.toByteArray());
        for (int i = 0; i < 1000; i++) assertThat(r.u64("v" + i)).isEqualTo(i);
        assertThat(r.remaining()).isEqualTo(5000);
    }

    @Test
    void stringsAreAU16ByteLengthThenUtf8() {
        byte[] b = new PayloadWriter().string("é").toByteArray();
        assertThat(b).containsExactly(2, 0, 0xC3, 0xA9);
        assertThat(new String(b, 2, 2, StandardCharsets.UTF_8)).isEqualTo("é");
    }

    @Test
    void refusesValuesThatDoNotFitTheirField() {
        assertThatIllegalArgumentException().isThrownBy(() -> new PayloadWriter().u8(256)).withMessageContaining("u8");
        assertThatIllegalArgumentException().isThrownBy(() -> new PayloadWriter().u8(-1)).withMessageContaining("u8");
        assertThatIllegalArgumentException().isThrownBy(() -> new PayloadWriter().u16(0x10000)).withMessageContaining("u16");
        assertThatIllegalArgumentException().isThrownBy(() -> new PayloadWriter().u16(-1));
        assertThatIllegalArgumentException().isThrownBy(() -> new PayloadWriter().u32(0x1_0000_0000L)).withMessageContaining("u32");
        assertThatIllegalArgumentException().isThrownBy(() -> new PayloadWriter().u32(-1));
        assertThatIllegalArgumentException().isThrownBy(() -> new PayloadWriter().string("x".repeat(0x10000)));
    }

    /**
     * Half a surrogate pair has no UTF-8 form: until 2026-12-07 it was written as '?', a string the
     * writer's caller never gave, and a peer read that text. A string too long for its u16 length
     * was refused as "u16 out of range: 65536", which names neither the string nor the limit.
     */
    @Test
    void refusesAStringUtf8CannotEncodeOrAU16CannotMeasureSayingWhy() {
        for (String halfAPair : List.of("a\uD800", "a\uDC00b", "a\uD800\uD800\uDC00")) {
            PayloadWriter w = new PayloadWriter().u8(1);
            assertThatIllegalArgumentException().isThrownBy(() -> w.string(halfAPair))
                    .withMessage("string '" + PayloadReader.printable(halfAPair) + "' has no UTF-8 form: char 1 is half a surrogate pair");
            assertThat(w.toByteArray()).containsExactly(1);
        }
        assertThatIllegalArgumentException().isThrownBy(() -> new PayloadWriter().string("é".repeat(0x8000)))
                .withMessage("string of 65536 UTF-8 bytes is longer than its u16 length can say (65535)");
        String emoji = "a\uD83D\uDE00";
        assertThat(new PayloadReader(new PayloadWriter().string(emoji).toByteArray()).string("s", 8)).isEqualTo(emoji);
        assertThat(new PayloadWriter().string("x".repeat(0xFFFF)).size()).isEqualTo(2 + 0xFFFF);
    }

    @Test
    void aRefusedWriteLeavesTheWriterUnchanged() {
        PayloadWriter w = new PayloadWriter().u8(1);
        assertThatIllegalArgumentException().isThrownBy(() -> w.u16(-5));
        assertThat(w.size()).isEqualTo(1);
    }

    @Test
    void toByteArrayIsACopy() {
        PayloadWriter w = new PayloadWriter().u8(7);
        byte[] first = w.toByteArray();
        first[0] = 0;
        assertThat(w.toByteArray()).containsExactly(7);
    }
}
