#!/usr/bin/env bash
# Runs in PostgreSQL, end to end with the built binaries: one `tachyon serve
# --db` and two `tachyon worker`s on one database of its own, 64 runs of the
# shipped model queued over HTTP on an incident of the incident world, one
# worker killed with SIGKILL three times (and started again). Then: every run
# ended exactly once (an end state, one run_end after its last resume, at
# most one final answer), no call with side effects started twice without a
# decision between, every journal has its seq in order, and serve answers a
# run and its events from the database: live to a client that followed it
# from the start, and from Last-Event-ID on once it ended; the list of
# runs by pages and states; a run cancelled through serve ends cancelled.
#
# usage: acceptance.sh TACHYON_BIN INCIDENT_WORLD_BIN SOURCE_DIR
# The server: TACHYON_TEST_PG (key=value settings; default the local
# socket). Exit 77 (skipped) when no server answers.
set -euo pipefail

bin=$1
world=$2
src=$3
pg=${TACHYON_TEST_PG:-host=/var/run/postgresql dbname=postgres}
n_runs=64

if ! psql "$pg" -qtAc 'SELECT 1' >/dev/null 2>&1; then
    echo "skipped: no PostgreSQL server (TACHYON_TEST_PG=$pg)"
    exit 77
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/tachyon-db-acceptance-XXXXXX")
db="tachyon_test_acceptance_$$"
url="$pg dbname=$db"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    psql "$pg" -qc "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
fail() {
    echo "FAILED: $*" >&2
    for f in "$work"/*.log; do echo "--- $f" >&2; tail -5 "$f" >&2; done
    exit 1
}
q() { psql "$url" -qtAc "$1"; }

psql "$pg" -qc "CREATE DATABASE $db" >/dev/null
"$world" generate --seed 7 --out "$work/incident" >/dev/null
rm -f "$work/incident/answer.json"
# The shipped agent with at most 3 steps a run: what is tested is how runs
# end, not how well (and the suite has a time budget).
mkdir -p "$work/agents"
sed -e "s#\"\.\./#\"$src/#g" -e 's#"max_steps": *[0-9]*#"max_steps": 3#' "$src/agents/incident-analyst.json" >"$work/agents/incident-analyst.json"

# serve: queues the runs and answers for them
"$bin" serve --db "$url" --port 0 --agents "$work/agents" --model "$src/examples/incident/model/incident-analyst.gguf" \
    --data-root "$work" >"$work/serve.out" 2>"$work/serve.log" &
pids+=($!)
port=
for _ in $(seq 200); do
    port=$(sed -n 's/.*listening on http:\/\/127.0.0.1:\([0-9]*\).*/\1/p' "$work/serve.out")
    [ -n "$port" ] && break
    sleep 0.05
done
[ -n "$port" ] || fail "serve did not start"
base="http://127.0.0.1:$port"

task="users report errors since the incident began; find the root cause"
body="{\"agent\": \"incident-analyst\", \"task\": \"$task\", \"inputs\": {\"incident_dir\": \"$work/incident\"}}"
first_id=
for i in $(seq $n_runs); do
    out=$(curl -sf "$base/v1/runs" -H 'Content-Type: application/json' -d "$body") || fail "POST /v1/runs $i"
    case $out in *'"state":"queued"'*) ;; *) fail "POST /v1/runs answered $out" ;; esac
    [ -n "$first_id" ] || first_id=$(printf '%s' "$out" | sed -n 's/^{"id":"\([^"]*\)".*/\1/p')
done
[ "$(q "SELECT count(*) FROM tachyon.runs WHERE state = 'queued'")" = "$n_runs" ] || fail "not $n_runs runs queued"

# A client following the first run live, from before any worker runs it
# (LISTEN/NOTIFY): the stream ends when the run does.
curl -sf -N --max-time 120 "$base/v1/runs/$first_id/events" >"$work/live.sse" 2>/dev/null &
live=$!

worker() {
    "$bin" worker --db "$url" --agents "$work/agents" --concurrency 8 --lease-ms 600 --poll-ms 50 --owner "$1" 2>>"$work/$1.log" &
    pids+=($!)
}
worker steady
worker victim
victim=${pids[-1]}
# Three kills, each when the victim holds runs mid-way, then a new victim.
for k in 1 2 3; do
    for _ in $(seq 400); do
        [ "$(q "SELECT count(*) FROM tachyon.runs r WHERE lease_owner = 'victim' AND state = 'running' AND EXISTS (SELECT 1 FROM tachyon.events e WHERE e.run_id = r.id)")" -gt 0 ] && break
        [ "$(q "SELECT count(*) FROM tachyon.runs WHERE state IN ('queued', 'running')")" = 0 ] && break
        sleep 0.02
    done
    kill -9 "$victim" 2>/dev/null || true
    wait "$victim" 2>/dev/null || true
    worker victim
    victim=${pids[-1]}
done

# Every run ends (the leases of the killed worker's runs expire and the others take them).
for _ in $(seq 1200); do
    [ "$(q "SELECT count(*) FROM tachyon.runs WHERE state IN ('queued', 'running')")" = 0 ] && break
    sleep 0.05
done
left=$(q "SELECT count(*) FROM tachyon.runs WHERE state IN ('queued', 'running')")
[ "$left" = 0 ] || fail "$left runs did not end"

n_resumed=$(q "SELECT count(*) FROM tachyon.runs WHERE n_claims > 1")
echo "$n_runs runs ended; $n_resumed were taken over from a killed worker"
[ "$n_resumed" -gt 0 ] || fail "no run was taken over (the kills came too late to test anything)"
[ "$(q "SELECT count(*) FROM tachyon.runs WHERE finished_at IS NULL OR result IS NULL")" = 0 ] || fail "a run ended without its result"

# Exactly once: one run_end after the last run_resume (or, for a run that
# never resumed, one in all), and never two final answers.
bad=$(q "SELECT r.id FROM tachyon.runs r WHERE
           (SELECT count(*) FROM tachyon.events e WHERE e.run_id = r.id AND e.event->>'type' = 'final') > 1
        OR (SELECT count(*) FROM tachyon.events e WHERE e.run_id = r.id AND e.event->>'type' = 'run_end'
              AND e.seq > coalesce((SELECT max(seq) FROM tachyon.events x WHERE x.run_id = r.id AND x.event->>'type' = 'run_resume'), -1)) <> 1")
[ -z "$bad" ] || fail "runs not ended exactly once: $bad"
# The end state in the table is the journal's.
bad=$(q "SELECT r.id FROM tachyon.runs r WHERE r.state <> (SELECT e.event->>'state' FROM tachyon.events e WHERE e.run_id = r.id
          AND e.event->>'type' = 'run_end' ORDER BY e.seq DESC LIMIT 1)")
[ -z "$bad" ] || fail "runs whose state is not their journal's: $bad"
# A call with side effects never started twice without a decision in between.
# (The incident agent's tools are all read-only: this holds the query to
# account; tests/runtime/agent/ drive tools with side effects.)
bad=$(q "SELECT s.run_id, s.call_id FROM (SELECT run_id, event->>'call_id' AS call_id FROM tachyon.events
          WHERE event->>'type' = 'tool_start' AND event->>'read_only' = 'false') s
          GROUP BY s.run_id, s.call_id HAVING count(*) > 1 AND NOT EXISTS (SELECT 1 FROM tachyon.events d
          WHERE d.run_id = s.run_id AND d.event->>'type' = 'decision' AND d.event->>'call_id' = s.call_id)")
[ -z "$bad" ] || fail "calls with side effects started twice without a decision: $bad"
# Each journal has seq 0..n-1 and one run_start.
bad=$(q "SELECT run_id FROM tachyon.events GROUP BY run_id HAVING max(seq) + 1 <> count(*)
          OR count(*) FILTER (WHERE event->>'type' = 'run_start') <> 1")
[ -z "$bad" ] || fail "journals with gaps or without one run_start: $bad"

# serve answers from the database, the events too, from Last-Event-ID on.
state=$(q "SELECT state FROM tachyon.runs WHERE id = '$first_id'")
status=$(curl -sf "$base/v1/runs/$first_id") || fail "GET /v1/runs/$first_id"
case $status in *"\"state\":\"$state\""*) ;; *) fail "GET /v1/runs/$first_id: $status (the database says $state)" ;; esac
n_events=$(q "SELECT count(*) FROM tachyon.events WHERE run_id = '$first_id'")
got=$(curl -sf -N --max-time 10 "$base/v1/runs/$first_id/events" -H 'Last-Event-ID: 1' | grep -c '^id: ') || fail "GET events"
[ "$got" = $((n_events - 2)) ] || fail "events after Last-Event-ID 1: $got, expected $((n_events - 2))"

wait "$live" || fail "the live event stream of $first_id did not end with the run"
live_ids=$(grep -c '^id: ' "$work/live.sse" || true)
[ "$live_ids" = "$n_events" ] || fail "the live stream of $first_id had $live_ids events, the database $n_events"
grep -q '"type":"run_end"' "$work/live.sse" || fail "the live stream of $first_id did not reach run_end"

# The list, from the database, newest first by pages.
page=$(curl -sf "$base/v1/runs?limit=10") || fail "GET /v1/runs?limit=10"
[ "$(printf '%s' "$page" | grep -o '"object":"run"' | wc -l)" = 10 ] || fail "GET /v1/runs?limit=10: $page"
case $page in *'"has_more":true'*) ;; *) fail "GET /v1/runs?limit=10 says no more: $page" ;; esac
page=$(curl -sf "$base/v1/runs?limit=1000&state=$state") || fail "GET /v1/runs?state=$state"
case $page in *"\"id\":\"$first_id\""*) ;; *) fail "GET /v1/runs?state=$state lacks $first_id" ;; esac
code=$(curl -s -o /dev/null -w '%{http_code}' "$base/v1/runs?state=done")
[ "$code" = 400 ] || fail "GET /v1/runs?state=done answered $code, expected 400"

# Cancelled through serve before a worker takes it: it ends cancelled, and
# no worker runs it once they go on. The workers are held stopped while it
# is queued and cancelled: a run of 3 steps on the shipped model can end
# between two requests, and the cancel of an ended run answers its end.
workers=("${pids[@]:1}")
kill -STOP "${workers[@]}" 2>/dev/null || true
out=$(curl -sf "$base/v1/runs" -H 'Content-Type: application/json' -d "$body") || { kill -CONT "${workers[@]}" 2>/dev/null; fail "POST /v1/runs (to cancel)"; }
cancel_id=$(printf '%s' "$out" | sed -n 's/^{"id":"\([^"]*\)".*/\1/p')
cancelled=$(curl -sf -X POST "$base/v1/runs/$cancel_id/cancel") || { kill -CONT "${workers[@]}" 2>/dev/null; fail "POST /v1/runs/$cancel_id/cancel"; }
kill -CONT "${workers[@]}" 2>/dev/null || true
case $cancelled in *'"state":"cancelled"'*) ;; *) fail "POST /v1/runs/$cancel_id/cancel of a queued run answered $cancelled" ;; esac
for _ in $(seq 400); do
    [ "$(q "SELECT state FROM tachyon.runs WHERE id = '$cancel_id'")" = cancelled ] && break
    sleep 0.02
done
sleep 1  # the workers poll every 50 ms: time to take it, were it still offered
[ "$(q "SELECT state FROM tachyon.runs WHERE id = '$cancel_id'")" = cancelled ] || fail "run $cancel_id did not end cancelled"
[ "$(q "SELECT count(*) FROM tachyon.events WHERE run_id = '$cancel_id' AND event->>'type' = 'run_end' AND event->>'state' <> 'cancelled'")" = 0 ] ||
    fail "run $cancel_id ended otherwise in its journal"

"$bin" worker --db "$url" --usage
echo "passed"
