package dev.conduit.plugin.posix;

import java.io.IOException;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/** Mounts a file system on a test's directory and unmounts it, as root (which CI is): mount(8) and umount(8), which must succeed. */
final class Mounts {

    private Mounts() {
    }

    /** Mounts a file system of {@code type} with {@code options} ({@code mount -o}, "defaults" for none) on {@code directory}. */
    static void mount(String type, String options, Path directory) throws IOException, InterruptedException {
        run("mount", "-t", type, "-o", options, "none", directory.toString());
    }

    static void unmount(Path directory) throws IOException, InterruptedException {
        run("umount", directory.toString());
    }

    /** Runs {@code command} (mount(8), umount(8)), which must succeed. */
    static void run(String... command) throws IOException, InterruptedException {
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes());
        assertThat(process.waitFor()).as("%s: %s", String.join(" ", command), output).isZero();
    }
}
