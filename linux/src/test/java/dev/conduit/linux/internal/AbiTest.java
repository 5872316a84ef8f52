package dev.conduit.linux.internal;

import dev.conduit.linux.Errno;
import dev.conduit.linux.EventfdFlags;
import dev.conduit.linux.FileStatus;
import dev.conduit.linux.Libc;
import dev.conduit.linux.LockFlags;
import dev.conduit.linux.MemfdFlags;
import dev.conduit.linux.MmapFlags;
import dev.conduit.linux.OpenFlags;
import dev.conduit.linux.PollEvents;
import dev.conduit.linux.Seals;
import dev.conduit.linux.SocketFlags;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.MemoryLayout;
import java.lang.foreign.StructLayout;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Compares every struct layout and constant the FFM layer encodes with what the C headers of
 * this machine say, by compiling and running {@code abi.c}. This is the test that would catch
 * a missing padding field, a wrong flag value or an aarch64 difference.
 */
class AbiTest {

    private static final Path GCC = Path.of("/usr/bin/gcc");

    /** Constants that are Java conveniences or kernel-internal, not in any header. */
    private static final Set<String> NOT_IN_HEADERS = Set.of("FIXED_SIZE", "SCM_MAX_FD");

    private static Map<String, String> c;

    @BeforeAll
    static void runCProgram(@TempDir Path directory) throws IOException, InterruptedException {
        assumeTrue(Files.isExecutable(GCC), "gcc is not installed at " + GCC);
        Path source = directory.resolve("abi.c");
        try (InputStream in = AbiTest.class.getResourceAsStream("abi.c")) {
            assertThat(in).as("abi.c on the test class path").isNotNull();
            Files.copy(in, source);
        }
        Path binary = directory.resolve("abi");
        String compiled = run(GCC.toString(), "-std=gnu11", "-Wall", "-Werror", "-o", binary.toString(), source.toString());
        assertThat(Files.isExecutable(binary)).as("gcc output:\n" + compiled).isTrue();
        c = new HashMap<>();
        for (String line : run(binary.toString()).split("\n")) {
            int space = line.indexOf(' ');
            c.put(line.substring(0, space), line.substring(space + 1));
        }
    }

    @Test
    void structLayoutsMatchTheHeaders() {
        List<String> mismatches = new ArrayList<>();
        int checked = 0;
        for (StructLayout layout : Layouts.ALL) {
            String struct = layout.name().orElseThrow();
            checked += compare(mismatches, "sizeof." + struct, layout.byteSize());
            for (MemoryLayout member : layout.memberLayouts()) {
                if (member.name().isEmpty()) {
                    continue; // padding
                }
                String field = struct + "." + member.name().get();
                checked += compare(mismatches, "offsetof." + field,
                        layout.byteOffset(MemoryLayout.PathElement.groupElement(member.name().get())));
                checked += compare(mismatches, "sizeof." + field, member.byteSize());
            }
        }
        assertThat(mismatches).as("Java layout vs C header").isEmpty();
        assertThat(checked).as("fields compared").isGreaterThan(60);
    }

    @Test
    void controlMessageMacrosMatchTheHeaders() {
        List<String> mismatches = new ArrayList<>();
        compare(mismatches, "cmsg.data", Layouts.CMSG_DATA_OFFSET);
        for (int n = 0; n <= 4; n++) {
            compare(mismatches, "cmsg.space." + n, Layouts.cmsgSpace((long) n * Integer.BYTES));
            compare(mismatches, "cmsg.len." + n, Layouts.cmsgLen((long) n * Integer.BYTES));
        }
        assertThat(mismatches).isEmpty();
        assertThat(Layouts.cmsgSpace(Integer.BYTES)).as("CMSG_SPACE(4) holds two descriptors").isEqualTo(24);
    }

    @Test
    void constantsMatchTheHeaders() throws IllegalAccessException {
        List<String> mismatches = new ArrayList<>();
        int checked = 0;
        for (Class<?> holder : List.of(OpenFlags.class, Seals.class, MemfdFlags.class, MmapFlags.class,
                LockFlags.class, SocketFlags.class, PollEvents.class, EventfdFlags.class, FileStatus.class, Abi.class)) {
            for (Field field : holder.getDeclaredFields()) {
                int modifiers = field.getModifiers();
                boolean constant = Modifier.isPublic(modifiers) && Modifier.isStatic(modifiers) && Modifier.isFinal(modifiers)
                        && (field.getType() == int.class || field.getType() == long.class);
                if (constant && !NOT_IN_HEADERS.contains(field.getName())) {
                    checked += compare(mismatches, "const." + field.getName(), ((Number) field.get(null)).longValue());
                }
            }
        }
        checked += compare(mismatches, "const.HUGETLBFS_MAGIC", Libc.HUGETLBFS_MAGIC);
        checked += compare(mismatches, "const.TMPFS_MAGIC", Libc.TMPFS_MAGIC);
        checked += compare(mismatches, "const.RAMFS_MAGIC", Libc.RAMFS_MAGIC);
        checked += compare(mismatches, "const.NFS_SUPER_MAGIC", Libc.NFS_SUPER_MAGIC);
        checked += compare(mismatches, "const.SMB_SUPER_MAGIC", Libc.SMB_SUPER_MAGIC);
        checked += compare(mismatches, "const.CIFS_SUPER_MAGIC", Libc.CIFS_SUPER_MAGIC);
        checked += compare(mismatches, "const.SMB2_SUPER_MAGIC", Libc.SMB2_SUPER_MAGIC);
        checked += compare(mismatches, "const.CEPH_SUPER_MAGIC", Libc.CEPH_SUPER_MAGIC);
        checked += compare(mismatches, "const.V9FS_MAGIC", Libc.V9FS_MAGIC);
        checked += compare(mismatches, "const.FUSE_SUPER_MAGIC", Libc.FUSE_SUPER_MAGIC);
        checked += compare(mismatches, "const.AFS_SUPER_MAGIC", Libc.AFS_SUPER_MAGIC);
        checked += compare(mismatches, "const.AFS_FS_MAGIC", Libc.AFS_FS_MAGIC);
        checked += compare(mismatches, "const.CODA_SUPER_MAGIC", Libc.CODA_SUPER_MAGIC);
        checked += compare(mismatches, "const.OCFS2_SUPER_MAGIC", Libc.OCFS2_SUPER_MAGIC);
        checked += compare(mismatches, "const.GFS2_MAGIC", Libc.GFS2_MAGIC);
        assertThat(mismatches).as("Java constant vs C header").isEmpty();
        assertThat(checked).as("constants compared").isGreaterThan(80);
    }

    @Test
    void errnoTableMatchesGlibc() {
        List<String> mismatches = new ArrayList<>();
        for (int errno = 1; errno <= Errno.EHWPOISON; errno++) {
            String expected = c.get("errno." + errno);
            String actual = Errno.isKnown(errno) ? Errno.name(errno) + "|" + Errno.description(errno) : null;
            if (!Objects.equals(expected, actual)) {
                mismatches.add("errno " + errno + ": C " + expected + ", Java " + actual);
            }
        }
        assertThat(mismatches).isEmpty();
    }

    private static int compare(List<String> mismatches, String key, long javaValue) {
        String cValue = c.get(key);
        if (cValue == null) {
            mismatches.add(key + ": not printed by abi.c");
        } else if (Long.parseLong(cValue) != javaValue) {
            mismatches.add(key + ": C " + cValue + ", Java " + javaValue);
        }
        return 1;
    }

    private static String run(String... command) throws IOException, InterruptedException {
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(process.waitFor(2, TimeUnit.MINUTES)).isTrue();
        assertThat(process.exitValue()).as(String.join(" ", command) + "\n" + output).isZero();
        return output;
    }
}
