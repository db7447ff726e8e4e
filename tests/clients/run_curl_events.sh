#!/usr/bin/env bash
# CTest: `curl -N` against /v1/runs/{id}/events: an agent run of the shipped
# model on a generated incident, its live SSE journal events, resumption with
# Last-Event-ID, the run's state and journal file, and cancellation.
# usage: run_curl_events.sh TACHYON_BIN MODEL.gguf INCIDENT_WORLD_BIN AGENTS_DIR
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bin=$1
model=$2
world=$3
agents=$4
command -v curl >/dev/null || { echo "SKIP: curl is not installed (./tachyon.sh test installs it)"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }
source "$here/serve.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/tachyon-curl-XXXXXX")
"$world" generate --seed 1000003 --out "$work/incident" >/dev/null
rm -f "$work/incident/answer.json"
# The incident is the only place the run's path input may point.
start_server "$bin" --model "$model" --agents "$agents" --journal-dir "$work/runs" --data-root "$work/incident"

body=$(printf '{"agent": "incident-analyst", "task": "%s", "inputs": {"incident_dir": "%s"}}' \
    "$(tr -d '"\\\n' <"$work/incident/task.txt")" "$work/incident")
created=$(curl -sS -X POST "$BASE/v1/runs" -H 'Content-Type: application/json' -d "$body" -w '\n%{http_code}')
[ "$(tail -n1 <<<"$created")" = 201 ] || fail "POST /v1/runs: $created"
id=$(grep -o '"id":"[^"]*"' <<<"$created" | sed -n 1p | cut -d'"' -f4)
[ -n "$id" ] || fail "no run id in $created"
echo "run $id"

# The live stream: id/data pairs from 0, run_start first, run_end last.
curl -sSN --max-time 120 "$BASE/v1/runs/$id/events" >"$work/events.txt"
grep -q '^data: ' "$work/events.txt" || fail "no events: $(cat "$work/events.txt")"
[ "$(head -n1 "$work/events.txt")" = "id: 0" ] || fail "first line is not 'id: 0'"
# (No `grep | head` pipelines: under pipefail the writer's SIGPIPE would fail them at random.)
first=$(grep -m1 '^data: ' "$work/events.txt")
last=$(grep '^data: ' "$work/events.txt" | tail -n1)
[[ $first == *'"type":"run_start"'* ]] || fail "first event is not run_start: $first"
[[ $last == *'"type":"run_end"'* ]] || fail "last event is not run_end: $last"
n=$(grep -c '^data: ' "$work/events.txt")
[ "$(grep -c '^id: ' "$work/events.txt")" = "$n" ] || fail "every event needs an id"
[ "$(grep -c '^$' "$work/events.txt")" = "$n" ] || fail "every event ends with a blank line"
expected=$(seq 0 $((n - 1)) | sed 's/^/id: /')
[ "$(grep '^id: ' "$work/events.txt")" = "$expected" ] || fail "ids are not 0..$((n - 1)) in order"
echo "events: $n ($(grep -o '"type":"[a-z_]*"' "$work/events.txt" | cut -d'"' -f4 | sort | uniq -c | tr -s ' ' | tr '\n' ',' ))"

# Resume after event 1: the stream starts at 2 and holds the rest.
curl -sSN --max-time 30 -H 'Last-Event-ID: 1' "$BASE/v1/runs/$id/events" >"$work/resumed.txt"
[ "$(head -n1 "$work/resumed.txt")" = "id: 2" ] || fail "resume did not start at id 2: $(head -n3 "$work/resumed.txt")"
[ "$(grep -c '^data: ' "$work/resumed.txt")" = $((n - 2)) ] || fail "resume did not return the remaining $((n - 2)) events"

state=$(curl -sS "$BASE/v1/runs/$id")
grep -q '"state":"running"' <<<"$state" && fail "run still running after run_end: $state"
[ -s "$work/runs/$id.jsonl" ] || fail "no journal $work/runs/$id.jsonl"
grep -q '"type":"run_end"' "$work/runs/$id.jsonl" || fail "journal has no run_end"

# Cancel a second run right away: it ends (cancelled, unless it finished first).
created=$(curl -sS -X POST "$BASE/v1/runs" -d "$body")
id2=$(grep -o '"id":"[^"]*"' <<<"$created" | sed -n 1p | cut -d'"' -f4)
[ "$(curl -sS -o /dev/null -w '%{http_code}' -X POST "$BASE/v1/runs/$id2/cancel")" = 202 ] || fail "cancel did not answer 202"
last2=$(curl -sSN --max-time 60 "$BASE/v1/runs/$id2/events" | grep '^data: ' | tail -n1)
[[ $last2 == *'"type":"run_end"'* ]] || fail "cancelled run did not end: $last2"
echo "cancelled run: $(curl -sS "$BASE/v1/runs/$id2" | grep -o '"state":"[a-z_]*"')"

# Errors: unknown run and agent, an input outside the data roots.
[ "$(curl -sS -o /dev/null -w '%{http_code}' "$BASE/v1/runs/nope/events")" = 404 ] || fail "unknown run is not 404"
[ "$(curl -sS -o /dev/null -w '%{http_code}' -X POST "$BASE/v1/runs" -d '{"agent": "nobody", "task": "x"}')" = 404 ] || fail "unknown agent is not 404"
outside=$(curl -sS -X POST "$BASE/v1/runs" -d '{"agent": "incident-analyst", "task": "x", "inputs": {"incident_dir": "/etc"}}' -w '\n%{http_code}')
[ "$(tail -n1 <<<"$outside")" = 400 ] || fail "an input outside the data roots is not 400: $outside"
grep -q 'inputs.incident_dir' <<<"$outside" || fail "the 400 does not name the input: $outside"
stop_server
rm -rf "$work"
echo "ok"
