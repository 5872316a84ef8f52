# Finds a JDK 25 or newer: JAVA_HOME if it is one, else the first /usr/lib/jvm/* that is one, else
# the JDK of the javac on the PATH (SDKMAN, a tarball in /opt) if it is one.
# Sourced by ./conduit, .ci/run and the benchmark scripts:
#   source "$root/scripts/jdk.sh"
#   JAVA_HOME=$(find_jdk25 conduit) || exit 1; export JAVA_HOME

readonly CONDUIT_REQUIRED_JAVA=25

# The feature release of the JVM at $1/bin/java (25 for "25.0.1", 8 for "1.8.0"), or nothing.
# The JDK's release file says it without starting a JVM: one that cannot start here (a low
# address-space limit, ulimit -v, fails its 1 GiB class-space reservation) is still found, and
# its own error is what the user then sees, not "no JDK found". java -version when there is none.
java_feature_version() {
    local version=
    if [[ -r $1/release ]]; then
        version=$(sed -n 's/^JAVA_VERSION="\([^"]*\)".*/\1/p' "$1/release" | head -n 1) || version=
    fi
    if [[ -z $version ]]; then
        version=$("$1/bin/java" -version 2>&1 | sed -n 's/^[^"]*version "\([^"]*\)".*/\1/p' | head -n 1) || return 0
    fi
    case $version in
        1.*) version=${version#1.} ;;
    esac
    printf '%s\n' "${version%%[!0-9]*}"
}

describe_java() {
    local feature
    [[ -x $1/bin/java ]] || { printf 'no bin/java there'; return; }
    feature=$(java_feature_version "$1")
    printf 'Java %s' "${feature:-of unknown version}"
    [[ -x $1/bin/javac ]] || printf ', without bin/javac: a JRE, not a JDK'
}

is_suitable_jdk() {
    local feature
    [[ -x $1/bin/java && -x $1/bin/javac ]] || return 1
    feature=$(java_feature_version "$1")
    [[ -n $feature ]] && ((feature >= CONDUIT_REQUIRED_JAVA))
}

# Prints the JDK's absolute path; or, when there is none, says so on stderr (prefixed with "$1: ")
# and fails. Absolute because the scripts run Maven from the tree's root: a JAVA_HOME relative to
# the caller's directory would name nothing there.
find_jdk25() {
    local who=$1 candidate
    if [[ -n ${JAVA_HOME:-} ]] && is_suitable_jdk "$JAVA_HOME"; then
        (CDPATH='' cd -- "$JAVA_HOME" && pwd)
        return
    fi
    for candidate in /usr/lib/jvm/*; do
        if is_suitable_jdk "$candidate"; then
            printf '%s\n' "$candidate"
            return 0
        fi
    done
    local javac on_path='there is no javac on the PATH'
    if javac=$(command -v javac 2>/dev/null); then
        candidate=$(readlink -f "$javac") || candidate=$javac
        candidate=${candidate%/bin/javac}
        if is_suitable_jdk "$candidate"; then
            printf '%s\n' "$candidate"
            return 0
        fi
        on_path="the javac on the PATH, $javac, is of $candidate ($(describe_java "$candidate"))"
    fi
    local found=unset
    if [[ -n ${JAVA_HOME:-} ]]; then
        found="'$JAVA_HOME' ($(describe_java "$JAVA_HOME"))"
    fi
    printf '%s: no JDK %s or newer found: JAVA_HOME is %s, no /usr/lib/jvm/* holds one, and %s. Install a JDK %s, or set JAVA_HOME to one.\n' \
        "$who" "$CONDUIT_REQUIRED_JAVA" "$found" "$on_path" "$CONDUIT_REQUIRED_JAVA" >&2
    return 1
}
