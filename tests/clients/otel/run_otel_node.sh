#!/usr/bin/env bash
# CTest: the payload tachyon exports (OTLP/HTTP JSON) against the one the
# official OpenTelemetry JS exporter (@opentelemetry/exporter-trace-otlp-http)
# sends, on the same loopback receiver.
# usage: run_otel_node.sh TACHYON_BIN MODEL.gguf
# Exit 77 (skipped) only when node/npm are missing or npm cannot reach its registry.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bin=$1
model=$2
source "$here/../npm_packages.sh"
npm_packages "$here" "the OpenTelemetry packages" @opentelemetry/exporter-trace-otlp-http/package.json
work=$(mktemp -d "${TMPDIR:-/tmp}/tachyon-otel-XXXXXX")
rc=0
TACHYON_BIN="$bin" TACHYON_MODEL_PATH="$model" TACHYON_WORK="$work" node "$here/otel_shape.mjs" || rc=$?
rm -rf "$work"
exit $rc
