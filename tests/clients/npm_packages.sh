# Sourced by the client tests that run npm packages:
#   npm_packages DIR WHAT FILE...
# installs DIR's pinned packages (package-lock.json, `npm ci`) unless every
# FILE (relative to DIR/node_modules) is there. Exits 77 (skipped) when
# node/npm are missing or npm cannot reach its registry, 1 when npm ci fails
# otherwise. WHAT names the packages in those messages. Tests sharing DIR run
# in parallel, so the check and the install hold DIR's lock: the first one
# installs, the others wait and then find the files there.
npm_packages() {
    local dir=$1 what=$2 missing=0 f
    shift 2
    if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
        echo "SKIP: node and npm are not installed (./tachyon.sh test installs them)"
        exit 77
    fi
    exec {npm_lock}>"$dir/.npm-install.lock"
    flock "$npm_lock"
    for f in "$@"; do
        [ -f "$dir/node_modules/$f" ] || missing=1
    done
    if [ "$missing" = 0 ]; then
        flock -u "$npm_lock"
        return 0
    fi
    if ! (cd "$dir" && timeout 300 npm ci --no-audit --no-fund >&2); then
        if ! timeout 30 npm ping >/dev/null 2>&1; then
            echo "SKIP: npm cannot reach its registry to install $what"
            exit 77
        fi
        echo "FAIL: npm ci failed in $dir" >&2
        exit 1
    fi
    flock -u "$npm_lock"
}
