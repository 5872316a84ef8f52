package dev.conduit.plugin.memfd;

import java.io.IOException;
import java.net.StandardProtocolFamily;
import java.net.UnixDomainSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;

/**
 * Binds a Unix socket at the path it is given, as a user who took the name of a gone producer's
 * socket would, and counts the bytes its first client sends before closing: the test asks whether
 * an importer sent it a handle's token. Prints {@code listening}, then {@code received=<bytes>}.
 */
public final class ImpostorServer {
    private ImpostorServer() {}

    public static void main(String[] args) throws IOException {
        try (ServerSocketChannel server = ServerSocketChannel.open(StandardProtocolFamily.UNIX)) {
            server.bind(UnixDomainSocketAddress.of(Path.of(args[0])));
            System.out.println("listening");
            try (SocketChannel client = server.accept()) {
                ByteBuffer buffer = ByteBuffer.allocate(4096);
                long received = 0;
                for (int read; (read = client.read(buffer.clear())) > 0; ) received += read;
                System.out.println("received=" + received);
            }
        }
    }
}
