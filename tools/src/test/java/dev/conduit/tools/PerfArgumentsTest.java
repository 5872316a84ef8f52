package dev.conduit.tools;

import dev.conduit.spi.ConfigKey;
import dev.conduit.tools.CommandRunner.Result;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@code conduit perf}'s command line: what it accepts, and the usage errors (exit code 2, a message
 * naming the problem, nothing on standard output) for what it does not. None of these runs measures
 * anything: argument errors are found before Conduit opens.
 */
class PerfArgumentsTest {

    private final CommandRunner conduit = CommandRunner.withPlugins(TestPlugin.alpha());

    private Result usageError(String... args) {
        Result result = conduit.run(args);
        assertThat(result.exitCode()).as(result.err()).isEqualTo(ConduitCommand.EXIT_USAGE);
        assertThat(result.out()).isEmpty();
        return result;
    }

    @ParameterizedTest
    @ValueSource(strings = {"8,4q", "0", "-1", "4kb", "2g", "k", "8,,4k", ",8", "", " ", "99999999999"})
    void aBadSizeIsAUsageError(String sizes) {
        Result result = usageError("perf", "-s", sizes);

        assertThat(result.err()).containsAnyOf("is not a size", "is outside 1 byte to 1g", "Invalid value");
    }

    /** picocli drops an empty size at the end: "-s 1m," measured 1m alone, "-s ," the default sizes. */
    @ParameterizedTest
    @ValueSource(strings = {"1m,", "8,4k,", ","})
    void anEmptySizeAtTheEndIsAUsageError(String sizes) {
        Result result = usageError("perf", "-s", sizes);

        assertThat(result.err()).contains("-s '" + sizes + "' names an empty size: give sizes separated by commas, e.g. -s 8,4k,1m");
    }

    @Test
    void anUnknownTestIsAUsageErrorListingTheTests() {
        Result result = usageError("perf", "am_latt");

        assertThat(result.err()).contains("unknown test 'am_latt'", "am_lat", "am_bw", "put_lat", "put_bw", "get_lat", "atomic_lat",
                "ipc_import", "all");
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "perf --server --connect                         | --server and --connect exclude each other",
            "perf -n 10 -d 1s                                | -n and -d exclude each other",
            "perf --listen 127.0.0.1:7777                    | --listen is for --server",
            "perf --keep                                     | --keep is for --server",
            "perf --region-size 4m                           | --region-size is for --server",
            "perf --server -s 8                              | give these to the client",
            "perf --server am_lat                            | give these to the client",
            "perf --server --json                            | give these to the client",
            "perf --server --wakeup await                    | give these to the client",
            "perf --server --listen 7777 --name x            | does not use",
            "perf --connect 127.0.0.1:7777 --name x          | does not use",
            "perf --name x                                   | goes with --server or --connect",
            "perf --server --name a/b                        | must be 1 to 64 characters",
            "perf -n 0                                       | -n must be from 1",
            "perf --peers 0                                  | --peers must be from 1 to 1024",
            "perf --peers 1025                               | --peers must be from 1 to 1024",
            "perf --server --peers 8                         | give these to the client",
            "perf --server -n 1000000001                     | -n must be from 1 to 1000000000, not 1000000001",
            "perf --exit-with-stdin --name x                 | --exit-with-stdin is for --server",
            "perf --server -s 8 -n 10 -w 10 --plot p.png     | -s, -n, -w, --plot: the client chooses",
            "perf --server -s 8 -d 1s                        | -s, -d: the client chooses",
            "perf --connect 127.0.0.1:65536                  | --connect: '127.0.0.1:65536' is not HOST:PORT",
            "perf --connect 127.0.0.1:0                      | --connect 127.0.0.1:0: port 0 is no server's port",
    })
    void optionsThatExcludeEachOtherAreUsageErrors(String line, String message) {
        Result result = usageError(line.trim().split("\\s+"));

        assertThat(result.err()).contains(message.trim());
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "-d 2x              | is not a duration",
            "-d 0s              | must be longer than 0",
            "-w soon            | is not a warm-up",
            "--thread-mode many | is not a thread mode",
            "--wakeup sleepy    | is not a wakeup",
            "--timeout 5        | is not a duration",
    })
    void malformedValuesAreUsageErrors(String option, String message) {
        String[] parts = option.trim().split("\\s+");
        Result result = usageError("perf", parts[0], parts[1]);

        assertThat(result.err()).contains(message.trim());
    }

    /**
     * A warm-up of iterations has the bound of {@code -n}, the measurement it precedes: up to 9,999,999,999 were taken (a typo's
     * extra digit ran for hours before the first row), and eleven digits or more were "not a warm-up".
     */
    @ParameterizedTest
    @ValueSource(strings = {"1000000001", "9999999999", "10000000000", "99999999999999999999"})
    void aWarmUpOfMoreIterationsThanTheMeasurementMayHaveIsAUsageError(String iterations) {
        Result result = usageError("perf", "-w", iterations);

        assertThat(result.err()).contains("-w must be from 0 to 1000000000 iterations or a duration, not " + iterations);
    }

    @Test
    void aChartThatCouldNotBeWrittenIsAUsageErrorBeforeTheRun() {
        Result missing = usageError("perf", "am_lat", "--plot", "/nonexistent-conduit-perf/p.png");
        Result directory = usageError("perf", "am_lat", "--plot", System.getProperty("java.io.tmpdir"));

        assertThat(missing.err()).contains("--plot /nonexistent-conduit-perf/p.png: the directory /nonexistent-conduit-perf does not exist");
        assertThat(directory.err()).contains("is a directory");
    }

    /**
     * A directory that passes a permission check but holds no file (procfs, as root) is a usage error before the run: the
     * run measured everything, then failed writing the chart, with a remedy for a full disk (helper h4). Also one the
     * process may not write, as any user.
     */
    @Test
    void aChartInADirectoryThatHoldsNoFileIsAUsageErrorBeforeTheRun() {
        Result proc = usageError("perf", "am_lat", "--plot", "/proc/conduit-perf.png");

        assertThat(proc.err()).contains("--plot /proc/conduit-perf.png: the directory /proc cannot hold a file: ENOENT (No such file "
                        + "or directory), though it exists: its file system makes no new files (procfs, for one)")
                .contains("give a file in a writable directory of a file system that holds files")
                .doesNotContain("java.nio", ".probe");
    }

    /**
     * A symbolic link into a directory that holds no file is judged by that directory, where the plot lands, not by the
     * link's own: the check passed the link's writable directory, and the run failed only after measuring everything.
     */
    @Test
    void aChartThroughASymbolicLinkIsCheckedWhereItLandsBeforeTheRun(@TempDir Path dir) throws Exception {
        Path link = Files.createSymbolicLink(dir.resolve("latest.png"), Path.of("/proc/conduit-perf.png"));

        Result result = usageError("perf", "am_lat", "--plot", link.toString());

        assertThat(result.err()).contains("--plot " + link + ": the directory /proc cannot hold a file: ENOENT (No such file "
                + "or directory), though it exists");
    }

    /**
     * A directory this user may not write is named with EACCES in words: the error quoted the JDK's
     * "java.nio.file.AccessDeniedException: DIR/.conduit-perf-plot123.probe", a file the user never named.
     */
    @Test
    void aChartInADirectoryThisUserMayNotWriteNamesEaccesInWords(@TempDir Path dir) throws Exception {
        Path readOnly = Files.createDirectory(dir.resolve("ro"), PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("r-xr-xr-x")));
        ConduitProcess.Output result = ConduitProcess.runThrough(ConduitProcess.WITHOUT_DAC_OVERRIDE,
                "perf", "am_lat", "--plot", readOnly.resolve("p.png").toString());

        assertThat(result.exitCode()).as(result.output()).isEqualTo(ConduitCommand.EXIT_USAGE);
        assertThat(result.output()).contains("--plot " + readOnly.resolve("p.png") + ": the directory " + readOnly
                        + " cannot hold a file: EACCES (Permission denied), this user may not create files there")
                .doesNotContain("java.nio", ".probe");
        assertThat(readOnly).isEmptyDirectory();
    }

    @Test
    void anUnresolvableHostNamesTheHostAndTheOption() {
        Result result = conduit.run("perf", "--connect", "no-such-host.invalid:7777", "am_lat", "--timeout", "1s");

        assertThat(result.exitCode()).as(result.err()).isEqualTo(ConduitCommand.EXIT_FAILED);
        assertThat(result.err()).contains("cannot resolve the host 'no-such-host.invalid' of --connect no-such-host.invalid:7777");
    }

    @Test
    void theSpawnedServerGetsTheOptionsThatShapeAMeasurementButNoRecordingOrAgent() {
        assertThat(List.of("-Xmx256m", "-XX:+UseParallelGC", "-XX:TieredStopAtLevel=1", "-Xint", "-Xlog:gc", "-Xlog:gc:stderr",
                "-Xlog:gc*:stdout:uptime", "-Xlog:gc::uptime", "-Xlog:disable")).allMatch(PeerJvmOptions::isMeasuringOption);
        // -Xlog's output is a file when it is neither stdout nor stderr, named with file= or alone: -Xlog:gc:gc.log writes gc.log.
        assertThat(List.of("-XX:StartFlightRecording=filename=a.jfr", "-javaagent:x.jar", "-agentlib:jdwp=transport=dt_socket", "-Dfoo=bar",
                "-Xlog:gc:file=gc.log", "-Xlog:gc:gc.log", "-Xlog:gc*:/tmp/gc.log:uptime", "-Xloggc:gc.log", "-XX:HeapDumpPath=/tmp/h", "-XX:LogFile=x.log", "-XX:ArchiveClassesAtExit=a.jsa"))
                .as("options that name a file both JVMs would write").noneMatch(PeerJvmOptions::isMeasuringOption);
    }

    /**
     * A module patched with other classes is the code under test, and goes to the spawned server too (as the JVM lists it:
     * {@code --patch-module=MODULE=DIR}): a throw-away build swapped in with it ran in the measuring JVM alone, against a
     * server of the build it was compared with.
     */
    @Test
    void aPatchedModuleReachesTheSpawnedServerToo() {
        assertThat(PeerJvmOptions.passesToPeer("--patch-module=dev.conduit.shm=/tmp/build")).isTrue();
        assertThat(PeerJvmOptions.passesToPeer("--add-opens=java.base/java.lang=ALL-UNNAMED")).as("access, not code").isFalse();
    }

    @Test
    void aMalformedListenAddressIsAUsageError() {
        Result result = usageError("perf", "--server", "--listen", "localhost:http");

        assertThat(result.err()).contains("HOST:PORT");
    }

    @Test
    void connectTakesAValueOnlyWhenItLooksLikeHostAndPort(@TempDir Path empty) {
        // "--connect am_lat" reads the shared directory and runs am_lat: am_lat is not taken as an address.
        // Here the named file never appears, so the run fails (exit 1) after the timeout, having parsed both.
        Result result = conduit.run("perf", "--connect", "am_lat", "--shared-dir", empty.toString(), "--timeout", "1ms");

        assertThat(result.exitCode()).as(result.err()).isEqualTo(ConduitCommand.EXIT_FAILED);
        assertThat(result.err()).contains("no perf server published " + empty.resolve("conduit-perf-default.addr"));
    }

    /** A bare port after --connect is read as a test's name: the error says how to give an address. */
    @Test
    void aBarePortAfterConnectIsAnUnknownTestWithTheRightForm() {
        Result result = usageError("perf", "--connect", "7777");

        assertThat(result.err()).contains("unknown test '7777'").contains("to connect to a server's TCP port, give --connect HOST:PORT");
    }

    /**
     * A host without its port after --connect (or as --connect=HOST) was read as a test's name and said only "unknown test
     * '127.0.0.1'; the tests are ...": the error now says to give the port too.
     */
    @ParameterizedTest
    @ValueSource(strings = {"127.0.0.1", "localhost", "perf-server.example"})
    void aHostWithoutItsPortAfterConnectSaysToGiveThePort(String host) {
        for (List<String> args : List.of(List.of("perf", "--connect", host), List.of("perf", "--connect=" + host))) {
            Result result = usageError(args.toArray(String[]::new));

            assertThat(result.err()).as("%s", args).contains("unknown test '" + host + "'")
                    .contains("; to connect to a server on host '" + host + "', give its port too: --connect " + host
                            + ":PORT, the port of the server's --listen");
        }
        assertThat(usageError("perf", "am_latt").err()).doesNotContain("give its port too");
    }

    /**
     * A --shared-dir that does not exist is a usage error naming it, for each way to run: a server
     * used to fail with "no selected plugin provides a transport", and a client waited its whole
     * --timeout and then blamed the server (found by an audit).
     */
    @ParameterizedTest
    @ValueSource(strings = {"--server", "--connect", "am_lat"})
    void aSharedDirectoryThatDoesNotExistIsAUsageError(String way) {
        Result result = usageError("perf", way, "--shared-dir", "/nonexistent-conduit-perf");

        assertThat(result.err()).contains("--shared-dir /nonexistent-conduit-perf does not exist: give a directory both processes see");
    }

    @Test
    void helpListsTheTestsAndOptions() {
        Result result = conduit.run("perf", "--help");

        assertThat(result.exitCode()).isZero();
        assertThat(result.out()).contains("Usage: conduit perf", "--server", "--connect", "--listen", "--shared-dir", "--json", "--plot",
                "--thread-mode", "--wakeup", "-t, --transport", "-s, --sizes", "Exit codes:", "am_lat")
                .doesNotContain("--exit-with-stdin");
    }

    @Test
    void theTopCommandListsPerf() {
        Result result = conduit.run("--help");

        assertThat(result.out()).contains("perf", "Measures latency and bandwidth");
    }

    // ------------------------------------------------------------------ the parsers themselves

    @Test
    void sizesTakeSuffixesInPowersOf1024() {
        assertThat(PerfParsing.size("8")).isEqualTo(8);
        assertThat(PerfParsing.size("4k")).isEqualTo(4096);
        assertThat(PerfParsing.size("4K")).isEqualTo(4096);
        assertThat(PerfParsing.size("1m")).isEqualTo(1 << 20);
        assertThat(PerfParsing.size("1g")).isEqualTo(1 << 30);
        assertThat(PerfParsing.formatSize(65536)).isEqualTo("64k");
        assertThat(PerfParsing.formatSize(1000)).isEqualTo("1000");
        assertThatThrownBy(() -> PerfParsing.size("1025m")).hasMessageContaining("outside");
    }

    @Test
    void durationsNeedAUnit() {
        assertThat(PerfParsing.duration("500ms")).isEqualTo(Duration.ofMillis(500));
        assertThat(PerfParsing.duration("2s")).isEqualTo(Duration.ofSeconds(2));
        assertThat(PerfParsing.duration("1m")).isEqualTo(Duration.ofMinutes(1));
        assertThat(PerfParsing.duration("250us")).isEqualTo(Duration.ofNanos(250_000));
        assertThat(ConfigKey.durationText(Duration.ofMillis(1500))).isEqualTo("1500ms");
        assertThatThrownBy(() -> PerfParsing.duration("2")).hasMessageContaining("is not a duration");
        assertThat(PerfParsing.duration("24h")).isEqualTo(Duration.ofDays(1));
        assertThatThrownBy(() -> PerfParsing.duration("1441m")).hasMessageContaining("'1441m' is longer than a day");
    }

    @Test
    void aWarmupIsIterationsOrADuration() {
        assertThat(PerfParsing.warmup("100").iterations()).isEqualTo(100);
        assertThat(PerfParsing.warmup("0").isDuration()).isFalse();
        assertThat(PerfParsing.warmup("0").iterations()).isZero();
        assertThat(PerfParsing.warmup("300ms").duration()).isEqualTo(Duration.ofMillis(300));
    }

    @Test
    void anAddressIsHostAndPortOrAPortOnLoopback() {
        assertThat(PerfParsing.hostPort("7777")).isEqualTo(new PerfParsing.HostPort("127.0.0.1", 7777));
        assertThat(PerfParsing.hostPort("127.0.0.1:0")).isEqualTo(new PerfParsing.HostPort("127.0.0.1", 0));
        assertThat(PerfParsing.hostPort("[::1]:80")).isEqualTo(new PerfParsing.HostPort("::1", 80));
        assertThatThrownBy(() -> PerfParsing.hostPort("host:65536")).hasMessageContaining("HOST:PORT");
        assertThatThrownBy(() -> PerfParsing.hostPort(":7777")).hasMessageContaining("':7777' names no host");
        assertThat(PerfParsing.looksLikeHostPort("127.0.0.1:7777")).isTrue();
        assertThat(PerfParsing.looksLikeHostPort("am_lat")).isFalse();
    }

    @Test
    void defaultIterationsShrinkWithSize() {
        assertThat(PerfTest.AM_LAT.defaultIterations(8, false)).isEqualTo(20_000);
        assertThat(PerfTest.AM_LAT.defaultIterations(1 << 20, false)).isEqualTo(1_000);
        assertThat(PerfTest.AM_BW.defaultIterations(8, false)).isEqualTo(200_000);
        assertThat(PerfTest.AM_BW.defaultIterations(64 << 10, false)).isEqualTo(16_384);
        assertThat(PerfTest.IPC_IMPORT.defaultIterations(8, true)).isEqualTo(2_000);
        assertThat(PerfTest.DEFAULT_SUITE).doesNotContain(PerfTest.PUT_LAT).contains(PerfTest.AM_LAT, PerfTest.IPC_IMPORT);
    }
}
