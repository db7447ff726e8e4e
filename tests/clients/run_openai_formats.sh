#!/usr/bin/env bash
# CTest: the official `openai` npm package against `tachyon serve` on
# random-weight models of several chat families, written by
# `tachyon bench synth-model` with a family's template from the conformance
# folder: tool calls come back parsed from each family's own syntax.
# usage: run_openai_formats.sh TACHYON_BIN VOCAB.gguf TEMPLATES_DIR
# Exit 77 (skipped) when node/npm or the conformance templates are missing,
# or npm cannot reach its registry.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bin=$1
vocab=$2
templates=$3
if [ ! -d "$templates/jinja" ]; then
    echo "SKIP: conformance templates not found at $templates"
    exit 77
fi
source "$here/npm_packages.sh"
npm_packages "$here" "the openai package" openai/package.json
source "$here/serve.sh"
work=$(mktemp -d "${TMPDIR:-/tmp}/tachyon-formats-XXXXXX")
trap 'rm -rf "$work"' EXIT
key="formats-test-key-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
printf '%s\n' "$key" >"$work/key"
rc=0
# family name (as `tachyon inspect` reports it), the architecture the model is
# written in (llama where `bench synth-model` cannot write the family's own)
# and its template
for entry in llama3.1:llama:meta-llama-Llama-3.1-8B-Instruct qwen3:qwen3:Qwen-Qwen3-0.6B qwq:qwen2:Qwen-QwQ-32B \
    mistral:llama:mistralai-Mistral-Nemo-Instruct-2407 mistral-small3.2:llama:Mistral-Small-3.2-24B-Instruct-2506 \
    devstral:llama:unsloth-mistral-Devstral-Small-2507 ministral3:llama:mistralai-Ministral-3-14B-Reasoning-2512 \
    granite4.0:llama:ibm-granite-granite-4.0 granite4.1:llama:ibm-granite-granite-4.1; do
    family=${entry%%:*}
    rest=${entry#*:}
    arch=${rest%%:*}
    template=${rest#*:}
    model="$work/synthetic-$family.gguf"
    # A tiny shape: the test is about the formats, not the model.
    "$bin" bench synth-model "$model" --vocab-from "$vocab" --chat-template "$templates/jinja/$template.jinja" \
        --arch "$arch" --dim 64 --layers 2 --heads 4 --kv-heads 2 --ffn 128 --seed 7 >/dev/null
    if ! "$bin" inspect "$model" | grep -q "chat format *$family,"; then
        echo "FAIL: $model is not detected as $family:" >&2
        "$bin" inspect "$model" >&2
        rc=1
        continue
    fi
    start_server "$bin" --model "$model" --journal-dir "$work/runs-$family" --api-key-file "$work/key"
    TACHYON_URL="$BASE/v1" TACHYON_KEY="$key" TACHYON_MODEL="$(basename "$model" .gguf)" TACHYON_FAMILY="$family" \
        node "$here/openai_formats.mjs" || rc=$?
    stop_server
    trap 'rm -rf "$work"' EXIT
done
exit $rc
