# Sourced by the client tests: starts `tachyon serve` on an ephemeral
# loopback port and stops it gracefully (SIGTERM; the exit status must be 0).
#   start_server BIN [serve options...]   sets SERVER_PID, PORT, BASE
#   stop_server                           fails the test if the server crashed

start_server() {
    local bin=$1
    shift
    SERVER_LOG=$(mktemp "${TMPDIR:-/tmp}/tachyon-serve-XXXXXX")
    "$bin" serve --host 127.0.0.1 --port 0 "$@" >"$SERVER_LOG" 2>&1 &
    SERVER_PID=$!
    for _ in $(seq 1 100); do
        PORT=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$SERVER_LOG" | grep -o '[0-9]*$' || true)
        [ -n "$PORT" ] && break
        if ! kill -0 "$SERVER_PID" 2>/dev/null; then
            echo "FAIL: tachyon serve exited at start:" >&2
            cat "$SERVER_LOG" >&2
            exit 1
        fi
        sleep 0.1
    done
    [ -n "$PORT" ] || { echo "FAIL: tachyon serve did not start" >&2; cat "$SERVER_LOG" >&2; exit 1; }
    BASE="http://127.0.0.1:$PORT"
    trap 'kill -KILL $SERVER_PID 2>/dev/null || true' EXIT
}

stop_server() {
    kill -TERM "$SERVER_PID"
    local rc=0
    wait "$SERVER_PID" || rc=$?
    trap - EXIT
    if [ "$rc" -ne 0 ]; then
        echo "FAIL: tachyon serve exited with status $rc" >&2
        cat "$SERVER_LOG" >&2
        exit 1
    fi
    rm -f "$SERVER_LOG"
}
