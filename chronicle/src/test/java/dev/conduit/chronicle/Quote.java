package dev.conduit.chronicle;

import net.openhft.chronicle.bytes.BytesIn;
import net.openhft.chronicle.bytes.BytesMarshallable;
import net.openhft.chronicle.bytes.BytesOut;

/**
 * A test payload with explicit marshalling, so its layout is known to plain {@code MemorySegment}
 * readers: sequence (8, native order), price (8, double), quantity (4), then the symbol as
 * Chronicle's 8-bit string (stop-bit length, bytes), then {@code padding} zero bytes (stop-bit
 * count first) to make it as large as a test needs.
 */
final class Quote implements BytesMarshallable {
    long sequence;
    double price;
    int quantity;
    String symbol = "";
    int padding;

    Quote() {
    }

    Quote(long sequence, double price, int quantity, String symbol, int padding) {
        this.sequence = sequence;
        this.price = price;
        this.quantity = quantity;
        this.symbol = symbol;
        this.padding = padding;
    }

    @Override
    public void writeMarshallable(BytesOut<?> bytes) {
        bytes.writeLong(sequence);
        bytes.writeDouble(price);
        bytes.writeInt(quantity);
        bytes.write8bit(symbol);
        bytes.writeStopBit(padding);
        for (int i = 0; i < padding; i++) bytes.writeByte((byte) i);
    }

    @Override
    public void readMarshallable(BytesIn<?> bytes) {
        sequence = bytes.readLong();
        price = bytes.readDouble();
        quantity = bytes.readInt();
        symbol = bytes.read8bit();
        padding = (int) bytes.readStopBit();
        for (int i = 0; i < padding; i++) {
            if (bytes.readByte() != (byte) i) throw new IllegalStateException("padding byte " + i + " is wrong");
        }
    }

    String describe() {
        return sequence + "/" + price + "/" + quantity + "/" + symbol + "/" + padding;
    }
}
