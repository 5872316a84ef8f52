#!/usr/bin/env bash
# Conduit and its peers measured in one run, one after another: benchmarks/compare.sh
#
# Builds what it needs (the conduit command, benchmarks/target/benchmarks.jar, the C peers in
# benchmarks/peers/ with gcc into benchmarks/target/peers/), then measures, never two at once:
#   1. conduit perf am_lat am_bw put_bw -s 8,4k,64k,1m --json, with -t memfd and with -t posix;
#   2. the C limit: cross-process cache-line ping-pong (peers/pingpong.c) and memcpy (peers/memcpy_bw.c);
#   3. UCX's ucx_perftest on loopback, UCX_TLS=posix (sm if posix fails, and its rows then say sm):
#      ucp_am_lat, ucp_am_bw, ucp_put_bw (installs ucx-utils with apt-get when ucx_perftest is missing
#      and we are root);
#   4. the JDK's SocketChannel over a Unix-domain socket between two JVMs (compare.UnixSocketPeer);
#   5. Aeron IPC (embedded media driver) and Agrona's OneToOneRingBuffer over a mapped file, two
#      JVMs, ping-pong, the Java limit: the C limit's cache-line ping-pong between two JVMs,
#      through a mapped file with FFM, and Conduit's queue alone: the ReceiveQueue that memfd and
#      posix send through, with no transport or runtime on it (compare.IpcPeer).
# Before each latency peer and after the last, a short C ping-pong says in which placement of the VM's vCPUs on the
# host the peer ran (the report's Placement line).
# Then writes the table of ratios into docs/performance.md between <!-- compare:begin --> and
# <!-- compare:end --> (replacing the previous one) and the chart into docs/img/compare.png
# (compare.CompareReport, JFreeChart). Raw results: benchmarks/target/compare/.
# A peer that cannot run is recorded in the table's "Not measured" line; the others still run.
set -uo pipefail

# CDPATH='': with an exported CDPATH, cd of a relative path prints where it went (root held the path twice) or goes to
# another tree's directory of that name.
root="$(CDPATH='' cd -- "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$root/benchmarks/target/compare"
sizes=(8 4096 65536 1048576)

log() { printf 'compare.sh: %s\n' "$*" >&2; }

# It takes no arguments: any argument (a --help, an option of run.sh or conduit perf) used to be ignored, and the whole
# run started, minutes of both cores, writing docs/performance.md and docs/img/compare.png.
if [ $# -gt 0 ]; then
    case $1 in
        -h | --help | -help)
            sed -n '2,/^set -uo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'
            exit 0 ;;
        *)
            log "takes no arguments, not '$*' (it always measures every peer; benchmarks/compare.sh -h says what it does)"
            exit 2 ;;
    esac
fi

source "$root/scripts/jdk.sh"
JAVA_HOME=$(find_jdk25 benchmarks/compare.sh) || exit 1
export JAVA_HOME
command -v jq >/dev/null || { log "jq is needed to read conduit perf's JSON (apt-get install jq)"; exit 1; }

rm -rf "$out"
mkdir -p "$out" "$root/benchmarks/target/peers" "$root/docs/img"
results="$out/results.tsv"
facts="$out/facts.txt"
: >"$results"
: >"$facts"
fact() { printf '%s=%s\n' "$1" "$2" >>"$facts"; }
missing() { log "not measured: $*"; fact missing "$*"; }
# What a failed step said last, for its "Not measured" entry: a JVM's failure ends with its stack trace, whose last line
# ("at ...Main.main(...)") names no cause, and the JDK's warnings may follow. So the last uncaught exception's own line (its
# message says what the step was doing; a cause's, "No space left on device", does not), else the last line that is none
# of those.
failure_of() {
    local uncaught
    uncaught=$(grep '^Exception in thread ' "$1" | tail -n 1)
    if [ -n "$uncaught" ]; then
        printf '%s\n' "$uncaught"
    else
        grep -v -e '^WARNING' -e '^[[:space:]]*at ' -e '^[[:space:]]*\.\.\. [0-9]* more$' -e '^[[:space:]]*$' "$1" | tail -n 1
    fi
}
# What a failed conduit perf said, for its "Not measured" entry: its message, the first line "conduit: ..." (docs/tools.md,
# "Exit codes") but the launcher's notices that it builds or waits for another's build and the hint to run with --verbose,
# which name no cause. The spawned server's last lines follow the message, indented, and the last of them ("conduit perf
# server: session with pid N ...") names none either; before it the JDK's logging may have written INFO lines.
conduit_failure_of() {
    local message
    message=$(grep '^conduit: ' "$1" | grep -v -e '^conduit: building the conduit command (' \
        -e '^conduit: waiting for another conduit launcher' -e '^conduit: run again with --verbose' | head -n 1)
    if [ -n "$message" ]; then
        # "... the server process (pid N, ...) said: " ends the line when the server's lines follow.
        printf '%s\n' "${message%: }"
    else
        failure_of "$1"
    fi
}
# The "Not measured" entry of a JVM peer, NAME, that ended with STATUS under `timeout 300`, its standard error in ERRFILE
# (under $out): jvm_failed NAME STATUS ERRFILE.
jvm_failed() {
    if [ "$2" = 124 ]; then
        missing "$1: did not end within 300 s (timeout ended it; its output: benchmarks/target/compare/$3)"
    else
        missing "$1: $(failure_of "$out/$3")"
    fi
}
peers_ran=()

# --- build -------------------------------------------------------------------------------------
log "building benchmarks/target/benchmarks.jar and the conduit command"
if ! (cd "$root" && mvn -q -B -Dmaven.test.skip=true -pl benchmarks,tools -am package) >"$out/build.log" 2>&1; then
    cat "$out/build.log" >&2
    log "the build failed (Maven's output above)"
    exit 1
fi
jar="$root/benchmarks/target/benchmarks.jar"
# Why the C limit cannot run, for its "Not measured" entry; empty when both peers compiled. gcc's output goes to gcc.log,
# whose first error names the cause (a missing header, a compiler that cannot run).
c_unavailable=
if ! command -v gcc >/dev/null; then
    c_unavailable="gcc is not on the PATH: install it (Debian and Ubuntu: apt-get install gcc)"
elif ! gcc -O2 -Wall -o "$root/benchmarks/target/peers/pingpong" "$root/benchmarks/peers/pingpong.c" >"$out/gcc.log" 2>&1 ||
        ! gcc -O2 -Wall -o "$root/benchmarks/target/peers/memcpy_bw" "$root/benchmarks/peers/memcpy_bw.c" >>"$out/gcc.log" 2>&1; then
    gcc_error=$(grep -m 1 -i -e 'error' "$out/gcc.log")
    c_unavailable="gcc did not compile benchmarks/peers/ (${gcc_error:-$(tail -n 1 "$out/gcc.log")}; its output: benchmarks/target/compare/gcc.log)"
fi

# --- the vCPUs' placement ----------------------------------------------------------------------
# A VM's vCPUs may run on one core complex of the host or on two, and move between them during a run: the C ping-pong of
# 8 B then takes 0.05 or 0.2 µs one way, and every peer's latency moves with it. A short one (200,000 round trips, a
# fraction of a second) before each latency peer and after the last, "probe LABEL", says which placement each ran in; the
# report lists them, and says so when they lie 2.2x apart or more (docs/performance.md, "Peers side by side").
probe() {
    [ -z "$c_unavailable" ] || return 0
    local us
    us=$("$root/benchmarks/target/peers/pingpong" 8 200000 2>/dev/null | awk '{print $NF}')
    [ -n "$us" ] && fact placement "$1 $us"
    return 0
}

# --- the machine -------------------------------------------------------------------------------
fact date "$(date -u '+%Y-%m-%d %H:%M UTC')"
fact command "benchmarks/compare.sh"
# With the family and model numbers: a VM may name only the vendor's line ("AMD EPYC"), which two generations share.
fact cpu "$(lscpu | sed -n 's/^Model name: *//p' | head -n 1)$(awk -F': *' '/^cpu family/ && !f {f = $2} /^model[[:space:]]*:/ && !m {m = $2}
    END {if (f != "") printf " (family %s, model %s)", f, m}' /proc/cpuinfo 2>/dev/null)"
fact cores "$(nproc)"
fact kernel "$(uname -r)"
fact java "$("$JAVA_HOME/bin/java" -version 2>&1 | head -n 1)"
fact load_before "$(cut -d' ' -f1-3 /proc/loadavg)"
log "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"

# --- 1. Conduit --------------------------------------------------------------------------------
for t in memfd posix; do
    probe "before Conduit $t"
    log "conduit perf am_lat am_bw put_bw -s 8,4k,64k,1m -t $t --json"
    (cd "$root" && ./conduit perf am_lat am_bw put_bw -s 8,4k,64k,1m -t "$t" --json) >"$out/conduit-$t.json" 2>"$out/conduit-$t.err"
    status=$?
    # A run that failed part-way still writes its JSON, with the rows measured before the failure (docs/tools.md, --json):
    # those rows are kept, and the Not measured line names the failure. No JSON at all (a usage error, a failed build) keeps none.
    rows=$(jq -r --arg t "$t" '.results[] | select(.skipped == null)
            | ["conduit", $t, .test, (.size|tostring),
               (if .kind == "latency" then "p50_us" else "MBps" end),
               (if .kind == "latency" then (.latencyMicros.p50|tostring) else (.megabytesPerSecond|tostring) end)]
            | @tsv' "$out/conduit-$t.json" 2>/dev/null)
    [ -n "$rows" ] && { printf '%s\n' "$rows" >>"$results"; peers_ran+=("Conduit $t"); }
    if [ "$status" -ne 0 ]; then
        measured=$(printf '%s' "$rows" | grep -c .)
        case $measured in 0) when="before its first row" ;; 1) when="after its first row, which the table keeps" ;;
            *) when="after its first $measured rows, which the table keeps" ;; esac
        missing "Conduit $t: conduit perf failed $when ($(conduit_failure_of "$out/conduit-$t.err"); its output: benchmarks/target/compare/conduit-$t.err)"
    fi
done

# --- 2. the C limit ----------------------------------------------------------------------------
# One run of a C peer, c_run PEER SIZE ARGS...: its row goes to the results; a failure to the "Not measured" line with how
# it ended and what it said (pingpong names how its child ended), its standard error kept as PEER-SIZE.err.
c_run() {
    local peer=$1 size=$2 rc said how
    shift 2
    "$root/benchmarks/target/peers/$peer" "$@" >>"$results" 2>"$out/$peer-$size.err"
    rc=$?
    if [ $rc = 0 ]; then
        rm -f "$out/$peer-$size.err"
        return 0
    fi
    how="exit $rc"
    [ $rc -gt 128 ] && how="ended by signal $((rc - 128)) (SIG$(kill -l $((rc - 128)) 2>/dev/null))"
    said=$(failure_of "$out/$peer-$size.err")
    if [ -n "$said" ]; then
        missing "C limit: $peer $size B failed ($how: $said; its output: benchmarks/target/compare/$peer-$size.err)"
    else
        rm -f "$out/$peer-$size.err"
        missing "C limit: $peer $size B failed ($how, printing nothing)"
    fi
    return 1
}
if [ -z "$c_unavailable" ]; then
    log "C cache-line ping-pong and memcpy"
    c_rows=0
    for s in "${sizes[@]}"; do
        case $s in 8) n=1000000 ;; 4096) n=200000 ;; 65536) n=20000 ;; *) n=2000 ;; esac
        c_run pingpong "$s" "$s" "$n" && c_rows=$((c_rows + 1))
    done
    for s in 4096 65536 1048576; do
        c_run memcpy_bw "$s" "$s" 1 && c_rows=$((c_rows + 1))
    done
    # Listed among the peers only when it measured something: its failures are in the Not measured line.
    [ "$c_rows" -gt 0 ] && peers_ran+=("C limit (gcc $(gcc -dumpfullversion))")
else
    missing "C limit: $c_unavailable"
fi

# --- 3. UCX ------------------------------------------------------------------------------------
# Why UCX cannot run, for its "Not measured" entry: which of the ways to get ucx_perftest failed, and what to do.
ucx_unavailable=
if ! command -v ucx_perftest >/dev/null; then
    if ! command -v apt-get >/dev/null; then
        ucx_unavailable="ucx_perftest is not on the PATH, and there is no apt-get to install it with: install UCX's ucx_perftest (Debian and Ubuntu: package ucx-utils)"
    elif [ "$(id -u)" != 0 ]; then
        ucx_unavailable="ucx_perftest is not on the PATH, and compare.sh installs it only when run as root: install ucx-utils (sudo apt-get install ucx-utils) or run compare.sh as root"
    else
        log "installing ucx-utils (ucx_perftest)"
        if apt-get install -y -qq ucx-utils >"$out/apt.log" 2>&1 ||
                { apt-get update -qq >>"$out/apt.log" 2>&1 && apt-get install -y -qq ucx-utils >>"$out/apt.log" 2>&1; }; then
            command -v ucx_perftest >/dev/null ||
                ucx_unavailable="apt-get installed ucx-utils, but ucx_perftest is not on the PATH: add its directory (dpkg -L ucx-utils names it)"
        else
            ucx_unavailable="apt-get could not install ucx-utils ($(tail -n 1 "$out/apt.log"); its output: benchmarks/target/compare/apt.log): install it by hand"
        fi
    fi
fi
# One ucx_perftest pair: ucx_run TLS TEST SIZE N; prints the client's "Final:" line.
ucx_port=13370
ucx_run() {
    local tls=$1 test=$2 size=$3 n=$4 server
    ucx_port=$((ucx_port + 1))
    UCX_TLS=$tls timeout 120 ucx_perftest -p "$ucx_port" >>"$out/ucx-server.log" 2>&1 &
    server=$!
    # The client must not start before the server listens (it would fail, and the server wait out its timeout); a probe
    # that connected would be taken for the client, so the kernel's table of listening sockets is read instead.
    local hexport tries=0
    hexport=$(printf '%04X' "$ucx_port")
    until awk -v p=":$hexport" '$4 == "0A" && substr($2, length($2) - 4) == p { found = 1 } END { exit !found }' \
            /proc/net/tcp /proc/net/tcp6 2>/dev/null; do
        tries=$((tries + 1))
        if [ $tries -gt 100 ] || ! kill -0 "$server" 2>/dev/null; then break; fi
        sleep 0.1
    done
    UCX_TLS=$tls timeout 90 ucx_perftest 127.0.0.1 -p "$ucx_port" -t "$test" -s "$size" -n "$n" >"$out/ucx-client.log" 2>&1
    local rc=$?
    wait "$server" 2>/dev/null
    cat "$out/ucx-client.log" >>"$out/ucx-all.log"
    [ $rc = 0 ] && grep '^Final:' "$out/ucx-client.log"
}
if command -v ucx_perftest >/dev/null; then
    probe "before UCX"
    fact ucx "$(ucx_info -v 2>/dev/null | sed -n 's/^# *Version */version /p' | head -n 1), ucx_perftest on loopback"
    tls=posix
    if ! ucx_run posix ucp_am_lat 8 1000 >/dev/null; then
        # Read before the sm run writes the client's log over it.
        posix_failure=$(tail -n 1 "$out/ucx-client.log")
        if ucx_run sm ucp_am_lat 8 1000 >/dev/null; then
            tls=sm
            fact ucx "UCX_TLS=posix failed ($posix_failure); UCX_TLS=sm used"
        else
            tls=""
            missing "UCX: ucx_perftest failed with UCX_TLS=posix ($posix_failure) and sm ($(tail -n 1 "$out/ucx-client.log"))"
        fi
    fi
    if [ -n "$tls" ]; then
        fact ucx "UCX_TLS=$tls; its MB/s (2^20 bytes) converted to 10^6 bytes"
        log "ucx_perftest, UCX_TLS=$tls"
        for test in am_lat am_bw put_bw; do
            for s in "${sizes[@]}"; do
                case $s in 8) n=200000 ;; 4096) n=100000 ;; 65536) n=20000 ;; *) n=2000 ;; esac
                if line=$(ucx_run "$tls" "ucp_$test" "$s" "$n"); then
                    # Final: iterations p50 average overall bw_avg bw_overall rate_avg rate_overall ($7: the whole
                    # run's bandwidth, what the table reports as UCX's). The transport column is the UCX_TLS used: the
                    # report labels UCX's column with it (UCX sm after posix failed, not UCX posix).
                    # $3, the p50 taken for am_lat, is not the whole run's: libperf keeps the last TIMING_QUEUE_SIZE (2048)
                    # iterations' times and takes the median of those, so at 8 B (-n 200000) it is the last ~1 % of the
                    # run, and with fewer than 2048 iterations (1 MiB: 2000) the queue's unfilled slots are counted too.
                    # Kept as it is: splitting the run into runs of 2048 would change what every recorded UCX figure
                    # measured, and could not be checked where this was written (no UCX there).
                    if [ "$test" = am_lat ]; then
                        awk -v s="$s" -v tls="$tls" '{printf "ucx\t%s\tam_lat\t%s\tp50_us\t%s\n", tls, s, $3}' <<<"$line" >>"$results"
                    else
                        awk -v s="$s" -v tls="$tls" -v test="$test" '{printf "ucx\t%s\t%s\t%s\tMBps\t%.1f\n", tls, test, s, $7 * 1.048576}' <<<"$line" >>"$results"
                    fi
                else
                    missing "UCX ucp_$test $s B: $(tail -n 1 "$out/ucx-client.log")"
                fi
            done
        done
        peers_ran+=("UCX UCX_TLS=$tls")
    fi
else
    missing "UCX: $ucx_unavailable"
fi

# --- 4. Unix-domain socket, two JVMs -----------------------------------------------------------
probe "before the Unix socket"
log "SocketChannel over a Unix-domain socket, two JVMs"
# Under a timeout as the IPC peers: an echo that is alive but never answers (stopped) would hold a blocking read for good.
if timeout 300 "$JAVA_HOME/bin/java" -cp "$jar" dev.conduit.benchmarks.compare.UnixSocketPeer >>"$results" 2>"$out/uds.err"; then
    peers_ran+=("JDK SocketChannel over a Unix-domain socket")
else
    jvm_failed "Unix socket" $? uds.err
fi

# --- 5. Aeron IPC, Agrona's ring buffer, the Java limit and Conduit's queue alone, two JVMs ---------
# Agrona and Aeron reach into the JDK: the opens they need on JDK 25, and sun.misc.Unsafe's memory
# access allowed without the warning (JEP 498).
ipc_opts=(--add-opens java.base/jdk.internal.misc=ALL-UNNAMED --add-opens java.base/java.util.zip=ALL-UNNAMED
    --add-opens java.base/sun.nio.ch=ALL-UNNAMED --sun-misc-unsafe-memory-access=allow)
pom_version() { sed -n "s|.*<artifactId>$1</artifactId><version>\([^<]*\)</version>.*|\1|p" "$root/benchmarks/pom.xml" | head -n 1; }
for kind in aeron agrona line queue; do
    case $kind in aeron) probe "before Aeron IPC" ;; agrona) probe "before Agrona" ;; line) probe "before the Java limit" ;;
        *) probe "before the queue alone" ;; esac
    log "$kind ping-pong, two JVMs"
    if timeout 300 "$JAVA_HOME/bin/java" "${ipc_opts[@]}" -cp "$jar" dev.conduit.benchmarks.compare.IpcPeer "$kind" >>"$results" 2>"$out/$kind.err"; then
        case $kind in aeron) peers_ran+=("Aeron IPC $(pom_version aeron-driver)") ;;
            agrona) peers_ran+=("Agrona OneToOneRingBuffer $(pom_version agrona)") ;;
            line) peers_ran+=("Java limit (FFM cache-line ping-pong)") ;;
            *) peers_ran+=("Conduit queue alone (ReceiveQueue, no transport)") ;;
        esac
    else
        jvm_failed "$kind" $? "$kind.err"
    fi
done

probe "after the last peer"
fact load_after "$(cut -d' ' -f1-3 /proc/loadavg)"
# Joined here, not by IFS and a sed of every comma: a peer's label may hold one (the queue alone's does).
fact peers "$(printf '%s, ' "${peers_ran[@]}" | sed 's/, $//')"
fact noise "2 cores: both sides of every measurement spin on a core each, so anything else that runs (the JITs and GCs of the JVMs, other processes) preempts one of them; the measurements ran one after another and only figures of this one run are comparable, p50 and MB/s over a whole stream are what to read. Load average $(cut -d' ' -f1-3 /proc/loadavg) after the run."

# --- report ------------------------------------------------------------------------------------
"$JAVA_HOME/bin/java" -cp "$jar" dev.conduit.benchmarks.compare.CompareReport \
    "$results" "$facts" "$root/docs/performance.md" "$root/docs/img/compare.png"
