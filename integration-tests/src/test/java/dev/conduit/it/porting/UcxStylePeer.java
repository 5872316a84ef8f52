package dev.conduit.it.porting;

import dev.conduit.Conduit;
import dev.conduit.WorkerAddress;
import dev.conduit.it.process.CommandLoop;

import java.util.HexFormat;
import java.util.List;

/**
 * A child JVM that runs one side of {@link UcxStyleService}, driven by {@link UcxStyleServiceTest}
 * over {@link CommandLoop}; its Conduit takes {@code CONDUIT_SHARED_DIR} from the environment, as
 * an application's does.
 *
 * <pre>
 * server &lt;plugin&gt;                                        a server on a thread of its own → address=&lt;hex&gt;
 * client &lt;plugin&gt; &lt;server address hex&gt; &lt;id&gt; &lt;size&gt;   a client of this (the command) thread, after its HELLO → size=&lt;region size the server opened&gt;
 * put &lt;offset&gt; &lt;length&gt; &lt;seed&gt;                         the client's PUT → value=…
 * </pre>
 */
public final class UcxStylePeer {

    private UcxStylePeer() {
    }

    public static void main(String[] args) {
        UcxStyleService.Server[] server = {null};
        UcxStyleService.Client[] client = {null};
        new CommandLoop()
                .on("server", a -> {
                    server[0] = new UcxStyleService.Server(() -> Conduit.builder().transports(a.get(0)).build());
                    return "address=" + HexFormat.of().formatHex(server[0].start().toBytes());
                })
                .on("client", (List<String> a) -> {
                    client[0] = new UcxStyleService.Client(Conduit.builder().transports(a.get(0)).build(), a.get(0),
                            WorkerAddress.fromBytes(HexFormat.of().parseHex(a.get(1))), Long.parseLong(a.get(2)), Long.parseLong(a.get(3)));
                    return "size=" + client[0].hello();
                })
                .on("put", a -> "value=" + client[0].put(Long.parseLong(a.get(0)), Long.parseLong(a.get(1)), Long.parseLong(a.get(2))))
                .run();
    }
}
