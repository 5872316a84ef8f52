package dev.conduit.it.porting;

import dev.conduit.Conduit;
import dev.conduit.it.process.CommandLoop;

import java.util.Arrays;
import java.util.HexFormat;

/**
 * A child JVM that runs the map side of {@link JucxStyleShuffle}, driven by
 * {@link JucxStyleShuffleTest} over {@link CommandLoop}; its Conduit takes
 * {@code CONDUIT_SHARED_DIR} from the environment, as an application's does.
 *
 * <pre>
 * mapper &lt;plugin&gt; &lt;seed&gt; &lt;size,size,...&gt;   a mapper of blocks of these sizes on a thread of its own → address=&lt;hex&gt;
 * corrupt &lt;block&gt; &lt;at&gt;                      flips the byte at {@code at} of the block, after its CRC was taken
 * </pre>
 */
public final class JucxStyleShufflePeer {

    private JucxStyleShufflePeer() {
    }

    public static void main(String[] args) {
        JucxStyleShuffle.Mapper[] mapper = {null};
        new CommandLoop()
                .on("mapper", a -> {
                    long[] sizes = Arrays.stream(a.get(2).split(",")).mapToLong(Long::parseLong).toArray();
                    mapper[0] = new JucxStyleShuffle.Mapper(() -> Conduit.builder().transports(a.get(0)).build(), a.get(0), sizes,
                            Long.parseLong(a.get(1)));
                    return "address=" + HexFormat.of().formatHex(mapper[0].start().toBytes());
                })
                .on("corrupt", a -> {
                    mapper[0].corrupt(Integer.parseInt(a.get(0)), Long.parseLong(a.get(1)));
                    return "";
                })
                .run();
    }
}
