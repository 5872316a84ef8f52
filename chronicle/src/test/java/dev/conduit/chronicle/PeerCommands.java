package dev.conduit.chronicle;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;

/**
 * The loop of a peer in a child JVM, the other end of {@link ChildPeer}: {@code READY} first, then
 * one reply per command line on stdin, {@code OK <what the command returned>} or
 * {@code ERR <exception class> <message>}, until stdin ends.
 */
final class PeerCommands {

    /** One command: its words in, what follows {@code OK} out. */
    @FunctionalInterface
    interface Command {
        Object run(String[] words) throws Exception;
    }

    private PeerCommands() {
    }

    static void serve(Command command) throws IOException {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        System.out.println("READY");
        System.out.flush();
        for (String line; (line = in.readLine()) != null; ) {
            String reply;
            try {
                reply = "OK " + command.run(line.split(" "));
            } catch (Exception e) {
                reply = "ERR " + e.getClass().getName() + " " + String.valueOf(e.getMessage()).replace('\n', ' ');
            }
            System.out.println(reply);
            System.out.flush();
        }
    }
}
