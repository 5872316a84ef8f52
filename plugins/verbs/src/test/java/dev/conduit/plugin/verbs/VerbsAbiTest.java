package dev.conduit.plugin.verbs;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.GroupLayout;
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
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Compares every layout, offset and constant of {@link VerbsAbi} with the installed
 * {@code <infiniband/verbs.h>}, by compiling and running {@code verbs_abi.c} with gcc. Needs gcc
 * and libibverbs-dev, which {@code .ci/run} installs; elsewhere it is skipped with the reason.
 *
 * <p>The comparison mirrors the linux module's {@code AbiTest}; it is not shared through a test
 * jar because a test-jar dependency breaks the {@code -Dmaven.test.skip=true} build the
 * {@code ./conduit} launcher runs (docs/decisions.md).
 */
class VerbsAbiTest {

    private static final Path GCC = Path.of("/usr/bin/gcc");
    private static final Path HEADER = Path.of("/usr/include/infiniband/verbs.h");

    private static Map<String, String> c;

    @BeforeAll
    static void runCProgram(@TempDir Path directory) throws IOException, InterruptedException {
        assumeTrue(Files.isExecutable(GCC), "gcc is not installed at " + GCC);
        assumeTrue(Files.isRegularFile(HEADER), HEADER + " is missing: install libibverbs-dev");
        Path source = directory.resolve("verbs_abi.c");
        try (InputStream in = VerbsAbiTest.class.getResourceAsStream("verbs_abi.c")) {
            assertThat(in).as("verbs_abi.c on the test class path").isNotNull();
            Files.copy(in, source);
        }
        Path binary = directory.resolve("verbs_abi");
        // Only the header is needed: the program calls nothing in the library.
        run(GCC.toString(), "-std=gnu11", "-Wall", "-Werror", "-o", binary.toString(), source.toString());
        c = new HashMap<>();
        for (String line : run(binary.toString()).split("\n")) {
            int space = line.indexOf(' ');
            c.put(line.substring(0, space), line.substring(space + 1));
        }
    }

    @Test
    void structLayoutsMatchTheHeader() {
        List<String> mismatches = new ArrayList<>();
        int checked = 0;
        for (StructLayout layout : VerbsAbi.ALL) {
            String struct = layout.name().orElseThrow();
            checked += compare(mismatches, "sizeof." + struct, layout.byteSize());
            for (Map.Entry<String, long[]> field : fields(layout, "", 0).entrySet()) {
                checked += compare(mismatches, "offsetof." + struct + "." + field.getKey(), field.getValue()[0]);
                checked += compare(mismatches, "sizeof." + struct + "." + field.getKey(), field.getValue()[1]);
            }
        }
        assertThat(mismatches).as("Java layout vs C header").isEmpty();
        // 20 structs; 63 members of the probe's three, 140 (nested ones included) of the data path's, 5 of the async event's
        assertThat(checked).as("sizes and offsets compared").isEqualTo(20 + 2 * (63 + 140 + 5));
    }

    @Test
    void everyFieldTheCProgramPrintsIsInALayout() {
        List<String> named = new ArrayList<>();
        for (StructLayout layout : VerbsAbi.ALL) {
            for (String field : fields(layout, "", 0).keySet()) {
                named.add("offsetof." + layout.name().orElseThrow() + "." + field);
            }
        }
        assertThat(c.keySet().stream().filter(k -> k.startsWith("offsetof.")).sorted().toList())
                .containsExactlyInAnyOrderElementsOf(named);
    }

    @Test
    void constantsMatchTheHeader() throws IllegalAccessException {
        List<String> mismatches = new ArrayList<>();
        int checked = 0;
        for (Field field : VerbsAbi.class.getDeclaredFields()) {
            int modifiers = field.getModifiers();
            if (Modifier.isStatic(modifiers) && Modifier.isFinal(modifiers) && field.getType() == int.class
                    && field.getName().startsWith("IBV_")) {
                checked += compare(mismatches, "const." + field.getName(), field.getInt(null));
            }
        }
        assertThat(mismatches).as("Java constant vs C header").isEmpty();
        assertThat(checked).as("constants compared").isEqualTo(18 + 40 + 20);
    }

    /**
     * Every completion status of the header is named in what the transport reports: a ConnectX
     * adapter completes with {@code IBV_WC_BAD_RESP_ERR}, {@code IBV_WC_LOC_ACCESS_ERR},
     * {@code IBV_WC_REM_ABORT_ERR} or {@code IBV_WC_GENERAL_ERR} too, which used to read
     * "status 7", "status 8", "status 16", "status 21".
     */
    @Test
    void everyCompletionStatusOfTheHeaderIsNamed() {
        List<String> statuses = c.keySet().stream().filter(k -> k.startsWith("wcstatus.")).sorted().toList();
        assertThat(statuses).as("statuses printed by verbs_abi.c").hasSize(24);
        List<String> mismatches = new ArrayList<>();
        for (String key : statuses) {
            String name = key.substring("wcstatus.".length());
            String words = Completion.status(Integer.parseInt(c.get(key)));
            if (!words.startsWith(name + " (")) {
                mismatches.add(name + " = " + c.get(key) + ": \"" + words + "\"");
            }
        }
        assertThat(mismatches).as("statuses whose words do not start with their C name and a meaning").isEmpty();
    }

    /**
     * Every asynchronous event type of the header has its C name in what the transport logs and
     * fails endpoints with, and the element {@link FfmVerbs} reads for it is the one
     * {@code ibv_get_async_event} fills: the events the header has and the plugin does not know
     * of would read "IBV_EVENT 20".
     */
    @Test
    void everyAsyncEventTypeOfTheHeaderIsNamed() {
        List<String> types = c.keySet().stream().filter(k -> k.startsWith("eventtype.")).sorted().toList();
        assertThat(types).as("event types printed by verbs_abi.c").hasSize(20);
        List<String> mismatches = new ArrayList<>();
        for (String key : types) {
            String name = key.substring("eventtype.".length());
            String words = VerbsAbi.eventType(Integer.parseInt(c.get(key)));
            if (!words.equals(name)) {
                mismatches.add(name + " = " + c.get(key) + ": \"" + words + "\"");
            }
        }
        assertThat(mismatches).as("event types whose name is not their C name").isEmpty();
        assertThat(VerbsAbi.isQueuePairEvent(VerbsAbi.IBV_EVENT_QP_LAST_WQE_REACHED)).isTrue();
        assertThat(VerbsAbi.isPortEvent(VerbsAbi.IBV_EVENT_PORT_ERR)).isTrue();
        assertThat(VerbsAbi.isQueuePairEvent(VerbsAbi.IBV_EVENT_CQ_ERR) || VerbsAbi.isPortEvent(VerbsAbi.IBV_EVENT_CQ_ERR)).isFalse();
    }

    /**
     * The named members of {@code group} and, recursively, of its named struct and union members,
     * as C spells them ({@code wr.atomic.rkey}), with their offset from the outer struct and size.
     */
    private static Map<String, long[]> fields(GroupLayout group, String prefix, long base) {
        Map<String, long[]> fields = new java.util.LinkedHashMap<>();
        for (MemoryLayout member : group.memberLayouts()) {
            if (member.name().isEmpty()) {
                continue; // padding
            }
            String name = prefix + member.name().get();
            long offset = base + group.byteOffset(MemoryLayout.PathElement.groupElement(member.name().get()));
            fields.put(name, new long[] {offset, member.byteSize()});
            if (member instanceof GroupLayout nested) {
                fields.putAll(fields(nested, name + ".", offset));
            }
        }
        return fields;
    }

    private static int compare(List<String> mismatches, String key, long javaValue) {
        String cValue = c.get(key);
        if (cValue == null) {
            mismatches.add(key + ": not printed by verbs_abi.c");
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
