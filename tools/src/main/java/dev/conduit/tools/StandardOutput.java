package dev.conduit.tools;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.FilterWriter;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.io.Writer;
import java.util.Optional;

/**
 * What the command prints to: a {@link PrintWriter}, as picocli wants, that keeps the first
 * failure to write. A PrintWriter only flags one, and {@code System.out} swallows it before that,
 * so a full disk or a pipe whose reader is gone would leave the output incomplete behind exit
 * code 0; {@link ConduitCommand} asks {@link #failure()} after every run.
 */
final class StandardOutput extends PrintWriter {

    private final FailureKeeping destination;

    /** Over file descriptor 1 itself: through {@code System.out} a failure would not reach this writer. */
    static StandardOutput ofProcess() {
        return new StandardOutput(new OutputStreamWriter(new FileOutputStream(FileDescriptor.out), System.out.charset()));
    }

    StandardOutput(Writer destination) {
        this(new FailureKeeping(destination));
    }

    private StandardOutput(FailureKeeping destination) {
        super(destination, true);
        this.destination = destination;
    }

    /** Why writing failed, once what was printed so far has been flushed; empty if everything was written. */
    Optional<IOException> failure() {
        flush();
        return Optional.ofNullable(destination.failure);
    }

    /** Passes everything on, and keeps the first exception it throws. */
    private static final class FailureKeeping extends FilterWriter {

        private IOException failure;

        FailureKeeping(Writer destination) {
            super(destination);
        }

        @Override
        public void write(int c) throws IOException {
            try {
                super.write(c);
            } catch (IOException e) {
                throw kept(e);
            }
        }

        @Override
        public void write(char[] text, int offset, int length) throws IOException {
            try {
                super.write(text, offset, length);
            } catch (IOException e) {
                throw kept(e);
            }
        }

        @Override
        public void write(String text, int offset, int length) throws IOException {
            try {
                super.write(text, offset, length);
            } catch (IOException e) {
                throw kept(e);
            }
        }

        @Override
        public void flush() throws IOException {
            try {
                super.flush();
            } catch (IOException e) {
                throw kept(e);
            }
        }

        private IOException kept(IOException e) {
            if (failure == null) failure = e;
            return e;
        }
    }
}
