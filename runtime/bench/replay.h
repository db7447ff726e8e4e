// `tachyon bench agents --replay`: the model turns of recorded runs (the
// journals `tachyon eval --journal-dir` writes) replayed on a model of
// another size, so that each serving mode pays what it would with a real
// model of that size. The replayed model is an oracle: every token it
// generates costs a real forward and then is the recorded one (engine
// request::forced); prompts and tool results are prefilled for real, drafts
// and jump-forward text are kept exactly when they match the recording, the
// grammar and grounding run as usual and the tools run for real.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "runtime/agent/agent_run.h"
#include "runtime/chat/model_host.h"

namespace tachyon {

struct replay_transcript {
    uint64_t seed = 0;
    std::filesystem::path path;
    // The tokens each turn generated (end of turn included), by step.
    std::shared_ptr<const std::map<int, std::vector<int32_t>>> turns;
    std::map<int, std::string> texts;  // each turn's text as generated, by step
    std::string state;                 // how the recorded run ended (run_end)
    std::string answer;                // its final answer (minified JSON), empty if none
    int steps = 0;
    std::string error;                 // set: it cannot be replayed (why, naming the file)
};

// The journals of `dir` by the seed of their incident: run_start's input
// incident_dir ends in "incident-<seed>" (as eval's workspace names them).
// Where a seed has several, the latest run that can be replayed is taken;
// one without token ids (a remote model's, an older writer's) holds an error.
result<std::map<uint64_t, replay_transcript>> load_transcripts(const std::filesystem::path& dir);

// The recorded token ids mean the same in `host`'s model: every id is in
// its vocabulary and each turn's tokens read as the recorded text. The
// error names the seed, the turn and what differs.
status check_vocabulary(const replay_transcript& t, model_host& host);

// A replayed run did what the recording did: the same turns, end state and
// answer. The error names the seed and the first difference.
status check_replayed(const replay_transcript& t, const run_outcome& out);

// The engine's cost of one prompt token (a prefill chunk of
// max_batch_tokens) and of one decode step of a lone request, measured on
// a scratch session, warm (the prefix cache is cleared after).
struct engine_rates {
    double prefill_ms_per_token = 0;
    double decode_ms_per_step = 0;
};
engine_rates measure_engine_rates(engine& eng, int n_prompt, int n_decode);

}  // namespace tachyon
