package dev.conduit.it.process;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * What a child that runs as another host user ({@link Launcher#asUser}, {@link Launcher#rootlessContainer})
 * needs from the test JVM, which runs as root: {@code setpriv} to that user, and a copy of this
 * JVM's module or class path that the user can read (root's Maven repository, {@code ~/.m2} under
 * a {@code 0700} home, is not).
 */
final class OtherUser {

    /** The options whose value is this JVM's module or class path ({@link ChildJvm#javaCommand}). */
    private static final Set<String> PATH_OPTIONS = Set.of("--module-path", "--class-path");

    /** Each path entry's readable copy, made once per test JVM. */
    private static final Map<String, String> COPIES = new HashMap<>();
    private static Path copies;

    /** The users that were seen to make a user namespace. */
    private static final Set<Integer> USER_NAMESPACES = ConcurrentHashMap.newKeySet();

    private OtherUser() {
    }

    /** The command prefix that runs the rest as host user {@code uid} and its own group, with no supplementary groups. */
    static List<String> setpriv(int uid) {
        String id = Integer.toUnsignedString(uid);
        return List.of("setpriv", "--reuid=" + id, "--regid=" + id, "--clear-groups", "--");
    }

    /** {@code java} with the entries of its module or class path replaced by copies every user can read. */
    static List<String> readable(List<String> java) {
        List<String> command = new ArrayList<>(java);
        for (int i = 0; i + 1 < command.size(); i++) {
            if (PATH_OPTIONS.contains(command.get(i))) {
                List<String> entries = new ArrayList<>();
                for (String entry : command.get(i + 1).split(File.pathSeparator)) entries.add(readableCopy(entry));
                command.set(i + 1, String.join(File.pathSeparator, entries));
            }
        }
        return command;
    }

    private static synchronized String readableCopy(String entry) {
        return COPIES.computeIfAbsent(entry, e -> {
            try {
                if (copies == null) {
                    copies = Files.createTempDirectory(Path.of("/tmp"), "conduit-it-readable-");
                    Files.setPosixFilePermissions(copies, PosixFilePermissions.fromString("rwxr-xr-x"));
                    Path root = copies;
                    Runtime.getRuntime().addShutdownHook(new Thread(() -> deleteQuietly(root), "remove-readable-path-copies"));
                }
                Path source = Path.of(e);
                Path target = copies.resolve(COPIES.size() + "-" + source.getFileName());
                copy(source, target);
                return target.toString();
            } catch (IOException ex) {
                throw new UncheckedIOException("cannot copy " + e + " where another user can read it", ex);
            }
        });
    }

    private static void copy(Path source, Path target) throws IOException {
        if (!Files.exists(source)) return; // a path entry that does not exist is as good missing in the copy
        Files.walkFileTree(source, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult preVisitDirectory(Path dir, BasicFileAttributes attrs) throws IOException {
                Path to = target.resolve(source.relativize(dir).toString());
                Files.createDirectories(to);
                Files.setPosixFilePermissions(to, PosixFilePermissions.fromString("rwxr-xr-x"));
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                Path to = target.resolve(source.relativize(file).toString());
                Files.copy(file, to, StandardCopyOption.REPLACE_EXISTING);
                Files.setPosixFilePermissions(to, PosixFilePermissions.fromString("rw-r--r--"));
                return FileVisitResult.CONTINUE;
            }
        });
    }

    private static void deleteQuietly(Path root) {
        try (var paths = Files.walk(root)) {
            paths.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException | UncheckedIOException e) {
            // the JVM is exiting; what is left is in /tmp
        }
    }

    /**
     * Fails, naming the settings, unless host user {@code uid} can make a user namespace that maps
     * its root to itself, with a mount namespace in it: asked once per user, so that a rootless
     * container that cannot start says why rather than "exited before READY".
     */
    static void checkUserNamespaces(int uid, String unshare) throws IOException {
        if (USER_NAMESPACES.contains(uid)) return;
        List<String> command = new ArrayList<>(setpriv(uid));
        command.addAll(List.of(unshare, "--user", "--map-root-user", "--mount", "true"));
        ChildJvm.Ended unshared = ChildJvm.runToEnd(command);
        if (unshared.exitCode() != 0) {
            throw new IllegalStateException("uid " + uid + " cannot make a user namespace (" + String.join(" ", command) + " exited with "
                    + unshared.exitCode() + ": " + unshared.output().strip() + "), which the rootless container tests need: set "
                    + "user.max_user_namespaces above 0 and, on Ubuntu 24.04 and later, kernel.apparmor_restrict_unprivileged_userns=0 "
                    + "(sysctl -w)");
        }
        USER_NAMESPACES.add(uid);
    }
}
