#!/usr/bin/env bash
# Builds and runs the JMH suite: benchmarks/run.sh [--no-build] [-Dname=value...] [JMH options and benchmark regexps]
#
#   benchmarks/run.sh                                   # everything, JMH's default settings per class
#   benchmarks/run.sh GuardBenchmark -prof gc           # one class, with the GC profiler
#   benchmarks/run.sh -f 1 -wi 3 -w 1s -i 5 -r 1s       # quicker settings (as in docs/performance.md)
#   benchmarks/run.sh -h                                # this text, then JMH's own options
#
# Finds a JDK 25 ($JAVA_HOME if it is one, else the first under /usr/lib/jvm, else the javac on the PATH), builds the
# benchmarks and what they depend on quietly (Maven's output is shown only if the build fails),
# then runs benchmarks/target/benchmarks.jar with the arguments passed through unchanged.
# Results go to benchmarks/target/jmh-result.json (JSON) unless the arguments name -rf or -rff
# (a -rff without -rf still gets JSON). A failing benchmark stops the run with a non-zero exit
# (-foe true) unless the arguments name -foe.
# --no-build skips the build and runs the jar as it is.
# -Dname=value arguments before the first JMH argument (before or after --no-build) are system properties of JMH's host JVM (JMH has no -D option of
# its own): -Djmh.ignoreLock=true, the remedy JMH's "Unable to acquire the JMH lock" names. Its forks get theirs from
# -jvmArgsAppend, which JMH takes as it is.
set -euo pipefail

# CDPATH='': with an exported CDPATH, cd of a relative path prints where it went (root held the path twice) or goes to
# another tree's directory of that name.
root="$(CDPATH='' cd -- "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

source "$root/scripts/jdk.sh"
JAVA_HOME=$(find_jdk25 benchmarks/run.sh) || exit 1
export JAVA_HOME

# --no-build and the host JVM's -D arguments, in any order before the first JMH argument.
build=1
host_opts=()
while [ $# -gt 0 ]; do
    case "$1" in
        --no-build) build=0 ;;
        -D?*) host_opts+=("$1") ;;
        *) break ;;
    esac
    shift
done

jar="$root/benchmarks/target/benchmarks.jar"
# A help prints this script's options first, from the comment above (JMH's own help does not know them), then JMH's,
# which only the jar can print: it is built for that only when there is none.
help=0
for arg in "$@"; do
    case "$arg" in -h | --help | -help) help=1 ;; esac
done
if [ "$help" = 1 ]; then
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'
    [ -f "$jar" ] && build=0
fi


if [ "$build" = 1 ]; then
    log="$(mktemp "${TMPDIR:-/tmp}/conduit-benchmarks-build.XXXXXX")"
    # Also when the build is stopped (Ctrl-C, a closed terminal, timeout's SIGTERM).
    trap 'rm -f "$log"' EXIT
    echo "benchmarks/run.sh: building benchmarks/target/benchmarks.jar with $JAVA_HOME" >&2
    if ! (cd "$root" && mvn -q -B -Dmaven.test.skip=true -pl benchmarks -am package) >"$log" 2>&1; then
        cat "$log" >&2
        rm -f "$log"
        echo "benchmarks/run.sh: the build failed (Maven's output above)" >&2
        exit 1
    fi
    rm -f "$log"
elif [ ! -f "$jar" ]; then
    echo "benchmarks/run.sh: $jar does not exist; run without --no-build" >&2
    exit 1
fi

if [ "$help" = 1 ]; then
    echo
    exec "$JAVA_HOME/bin/java" -jar "$jar" -h
fi

# Results as JSON in benchmarks/target unless the caller chose a format (-rf) or a file (-rff).
# A benchmark that fails ends the run with a non-zero exit (JMH's -foe true) unless the caller chose -foe: by JMH's own
# default the run goes on, exits 0 and may write an empty result, which a script cannot tell from a good run.
result_args=()
has_rf=0
has_rff=0
has_foe=0
for arg in "$@"; do
    # JMH takes an option as -name value, -name=value, and with two dashes too.
    case "$arg" in
        -rf | --rf | -rf=* | --rf=*) has_rf=1 ;;
        -rff | --rff | -rff=* | --rff=*) has_rff=1 ;;
        -foe | --foe | -foe=* | --foe=*) has_foe=1 ;;
    esac
done
if [ "$has_foe" = 0 ]; then
    result_args+=(-foe true)
fi
if [ "$has_rf" = 0 ]; then
    result_args+=(-rf json)
    if [ "$has_rff" = 0 ]; then
        result_args+=(-rff "$root/benchmarks/target/jmh-result.json")
    fi
fi

exec "$JAVA_HOME/bin/java" "${host_opts[@]}" -jar "$jar" "${result_args[@]}" "$@"
