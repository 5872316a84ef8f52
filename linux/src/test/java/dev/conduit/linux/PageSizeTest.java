package dev.conduit.linux;

import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

import static org.assertj.core.api.Assertions.assertThat;

class PageSizeTest {

    @Test
    void isThePageSizeOfThisProcess() {
        long pageSize = PageSize.get();
        assertThat(Long.bitCount(pageSize)).isOne();
        assertThat(pageSize).isGreaterThanOrEqualTo(PageSize.FALLBACK);
        if (System.getProperty("os.arch").equals("amd64")) {
            assertThat(pageSize).isEqualTo(4096);
        }
    }

    @Test
    void readsAtPageszFromAnAuxiliaryVector() {
        assertThat(PageSize.fromAuxiliaryVector(auxv(33, 0x7fff0000L, 6, 65536, 17, 100, 0, 0))).isEqualTo(65536);
        assertThat(PageSize.fromAuxiliaryVector(auxv(6, 16384))).isEqualTo(16384);
    }

    @Test
    void fallsBackWhenTheEntryIsMissingOrNonsense() {
        assertThat(PageSize.fromAuxiliaryVector(new byte[0])).isEqualTo(PageSize.FALLBACK);
        assertThat(PageSize.fromAuxiliaryVector(auxv(0, 0, 6, 65536))).isEqualTo(PageSize.FALLBACK);
        assertThat(PageSize.fromAuxiliaryVector(auxv(6, 12288))).isEqualTo(PageSize.FALLBACK);
        assertThat(PageSize.fromAuxiliaryVector(auxv(6, 1024))).isEqualTo(PageSize.FALLBACK);
        assertThat(PageSize.fromAuxiliaryVector(new byte[12])).isEqualTo(PageSize.FALLBACK);
    }

    private static byte[] auxv(long... words) {
        ByteBuffer buffer = ByteBuffer.allocate(words.length * Long.BYTES).order(ByteOrder.nativeOrder());
        for (long word : words) buffer.putLong(word);
        return buffer.array();
    }
}
