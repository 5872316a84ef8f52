package dev.conduit.plugin.memfd;

import dev.conduit.spi.PayloadReader;
import dev.conduit.spi.Transport;
import dev.conduit.spi.ThreadMode;
import dev.conduit.tck.TestContext;

import java.nio.file.Path;
import java.util.HexFormat;

/**
 * The main class of a JVM with one memfd transport, started by {@link OtherUserImportTest} as
 * another user: {@code <shared dir> <peer's transport address, hex>}. Prints its own address
 * ({@code address=<hex>}), then what connecting to the peer did ({@code connected} or
 * {@code refused: <message>}), and keeps its transport, and so its lease, open until its standard
 * input ends: the peer connects to it meanwhile.
 */
public final class ConnectingProcess {

    private ConnectingProcess() {}

    public static void main(String[] args) throws Exception {
        Path shared = Path.of(args[0]);
        byte[] peer = HexFormat.of().parseHex(args[1]);
        try (Transport transport = new MemfdPlugin().openTransport(TestContext.of(shared).forTransport(ThreadMode.SINGLE,
                (id, h, ho, hl, p, po, pl) -> { }))) {
            System.out.println("address=" + HexFormat.of().formatHex(transport.address()));
            try {
                transport.connect(new PayloadReader(peer), cause -> { }).close();
                System.out.println("connected");
            } catch (RuntimeException e) {
                System.out.println("refused: " + e.getMessage());
            }
            System.out.flush();
            while (System.in.read() >= 0) {
                // until the test closes our standard input
            }
        }
    }
}
