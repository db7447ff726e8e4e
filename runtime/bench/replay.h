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

// The engine's cost of a prompt token and of a lone request's decode step
// at the context they run at. Attention grows with the context: on the
// replayed 0.5B shape a prompt token at 1,500 positions in costs 1.5x one
// at the start. So each is a line fitted over a scratch session grown to
// `max_context` (chunks of 256 prompt tokens, 8 decode steps after each),
// measured warm; the prefix cache is cleared after.
struct engine_rates {
    struct line {
        double base_ms = 0;          // at context 0
        double per_position_ms = 0;  // added by each position of context (>= 0)
        double at(double context) const { return base_ms + per_position_ms * context; }
    };
    line prefill;  // ms per prompt token, at the middle of its chunk
    line decode;   // ms per decode step
    int measured_to = 0;  // the longest context measured
};
engine_rates measure_engine_rates(engine& eng, int max_context);

}  // namespace tachyon
