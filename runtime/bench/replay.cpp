#include "runtime/bench/replay.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <utility>
#include <vector>

#include "runtime/journal/journal.h"

namespace tachyon {
namespace {

// The seed of ".../incident-<seed>", or nullopt.
std::optional<uint64_t> replay_seed_of(const std::string& incident_dir) {
    const std::string name = std::filesystem::path(incident_dir).filename().string();
    const std::string prefix = "incident-";
    if (name.rfind(prefix, 0) != 0 || name.size() == prefix.size()) return std::nullopt;
    uint64_t seed = 0;
    auto r = std::from_chars(name.data() + prefix.size(), name.data() + name.size(), seed);
    if (r.ec != std::errc() || r.ptr != name.data() + name.size()) return std::nullopt;
    return seed;
}

// `text` around byte `at`, for messages.
std::string replay_excerpt(const std::string& text, size_t at) {
    const size_t from = at > 20 ? at - 20 : 0;
    std::string s = text.substr(from, 48);
    for (char& c : s)
        if (c == '\n') c = ' ';
    return "\"" + s + "\"";
}

}  // namespace

result<std::map<uint64_t, replay_transcript>> load_transcripts(const std::filesystem::path& dir) {
    std::error_code ec;
    if (!std::filesystem::is_directory(dir, ec))
        return make_error(errc::not_found, "--replay " + dir.string() + ": not a directory (expected the journals of tachyon eval --journal-dir)");
    auto paths = journal::list_journals(dir);
    if (!paths) return paths.err();
    std::map<uint64_t, replay_transcript> out;
    for (const auto& path : *paths) {  // sorted by run id: a later run of a seed replaces an earlier one it can replay
        auto log = journal::read_journal(path);
        if (!log) return log.err();
        const journal::run_start_event* start = log->start();
        if (!start) continue;
        auto dir_input = start->inputs.find("incident_dir");
        if (dir_input == start->inputs.end()) continue;
        auto seed = replay_seed_of(dir_input->second);
        if (!seed) continue;
        replay_transcript t;
        t.seed = *seed;
        t.path = path;
        auto turns = std::make_shared<std::map<int, std::vector<int32_t>>>();
        for (const auto& e : log->events) {
            const auto* turn = std::get_if<journal::model_turn_event>(&e.body);
            if (!turn) continue;
            if (turn->tokens.empty() && turn->generated_tokens > 0 && t.error.empty())
                t.error = path.string() + ": turn " + std::to_string(turn->step) +
                          " has no token ids (a remote model's run, or a journal of an older tachyon): record it again with a local model";
            (*turns)[static_cast<int>(turn->step)] = turn->tokens;
            t.texts[static_cast<int>(turn->step)] = turn->text;
        }
        t.turns = std::move(turns);
        t.steps = static_cast<int>(t.texts.size());
        t.state = log->state();
        if (!log->end() && t.error.empty()) t.error = path.string() + ": the run did not end (interrupted): its replay has nothing to match";
        if (const journal::final_event* f = log->final_answer(); f && f->answer_json != "null") t.answer = f->answer_json;
        auto& slot = out[*seed];
        if (slot.path.empty() || !slot.error.empty() || t.error.empty()) slot = std::move(t);
    }
    return out;
}

status check_vocabulary(const replay_transcript& t, model_host& host) {
    const int n_vocab = host.eng().get_model().hparams().n_vocab;
    const auto& eot = host.end_of_turn();
    for (const auto& [step, tokens] : *t.turns) {
        std::vector<token_id> text_tokens;
        for (size_t i = 0; i < tokens.size(); ++i) {
            const int32_t id = tokens[i];
            if (id < 0 || id >= n_vocab)
                return make_error(errc::invalid_argument, "seed " + std::to_string(t.seed) + " (" + t.path.string() + ") turn " +
                                                              std::to_string(step) + " position " + std::to_string(i) + ": token " +
                                                              std::to_string(id) + " is outside the model's vocabulary of " +
                                                              std::to_string(n_vocab) +
                                                              " (make the model with the recording's tokenizer: tachyon bench synth-model --vocab-from)");
            if (std::find(eot.begin(), eot.end(), id) == eot.end()) text_tokens.push_back(id);
        }
        const std::string read = host.tok().decode(text_tokens, {.render_special = true, .strip_leading_space = false});
        const std::string& recorded = t.texts.at(step);
        if (read != recorded) {
            size_t at = 0;
            while (at < read.size() && at < recorded.size() && read[at] == recorded[at]) ++at;
            return make_error(errc::invalid_argument, "seed " + std::to_string(t.seed) + " (" + t.path.string() + ") turn " +
                                                          std::to_string(step) + ": its tokens read " + replay_excerpt(read, at) +
                                                          " in the model's vocabulary where the recording has " + replay_excerpt(recorded, at) +
                                                          " (byte " + std::to_string(at) +
                                                          "): make the model with the recording's tokenizer (tachyon bench synth-model --vocab-from)");
        }
    }
    return {};
}

status check_replayed(const replay_transcript& t, const run_outcome& out) {
    const std::string who = "seed " + std::to_string(t.seed) + " (" + t.path.string() + "): ";
    for (const auto& turn : out.turns) {
        auto it = t.turns->find(turn.step);
        if (it == t.turns->end()) return make_error(errc::internal, who + "the replay took a turn " + std::to_string(turn.step) + " the recording lacks");
        const auto& want = it->second;
        if (turn.tokens.empty() && !turn.text.empty()) {
            // A turn generated on a server (the run was its client): its
            // tokens stayed there, so the text it streamed is compared.
            const auto text = t.texts.find(turn.step);
            if (text != t.texts.end() && text->second == turn.text) continue;
            if (!out.error.empty()) return make_error(errc::internal, who + out.error);
            return make_error(errc::internal, who + "turn " + std::to_string(turn.step) + " streamed other text than the recording's");
        }
        const size_t n = std::min(want.size(), turn.tokens.size());
        size_t pos = 0;
        while (pos < n && want[pos] == turn.tokens[pos]) ++pos;
        if (pos < n || want.size() != turn.tokens.size()) {
            if (!out.error.empty()) return make_error(errc::internal, who + out.error);  // the engine's words: turn, position, why
            return make_error(errc::internal, who + "turn " + std::to_string(turn.step) + " diverged at position " + std::to_string(pos) +
                                                  ": " + std::to_string(turn.tokens.size()) + " tokens where the recording has " +
                                                  std::to_string(want.size()));
        }
    }
    if (static_cast<int>(out.turns.size()) != t.steps || out.state != t.state || out.answer != t.answer)
        return make_error(errc::internal, who + "the replay ended " + out.state + " after " + std::to_string(out.turns.size()) +
                                              " turns with answer " + (out.answer.empty() ? "none" : out.answer) + "; the recording " +
                                              t.state + " after " + std::to_string(t.steps) + " with " +
                                              (t.answer.empty() ? "none" : t.answer) + (out.error.empty() ? "" : " (" + out.error + ")"));
    return {};
}

namespace {

// Least squares over (context, ms) points; a slope the noise made negative
// is taken as flat (the mean).
engine_rates::line fit_line(const std::vector<std::pair<double, double>>& pts) {
    engine_rates::line l;
    if (pts.empty()) return l;
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    const auto n = static_cast<double>(pts.size());
    for (const auto& [x, y] : pts) {
        sx += x;
        sy += y;
        sxx += x * x;
        sxy += x * y;
    }
    const double den = n * sxx - sx * sx;
    const double slope = den > 0 ? (n * sxy - sx * sy) / den : 0;
    if (slope <= 0) {
        l.base_ms = sy / n;
        return l;
    }
    l.per_position_ms = slope;
    l.base_ms = (sy - slope * sx) / n;
    return l;
}

}  // namespace

engine_rates measure_engine_rates(engine& eng, int max_context) {
    constexpr int chunk = 256, steps = 8;
    const int n_vocab = eng.get_model().hparams().n_vocab;
    const auto token = [&](int64_t i) { return static_cast<int32_t>((i * 7919 + 13) % n_vocab); };
    // One chunk and its steps first, not kept: the first forwards of a model
    // fault its mapped weights in and would read several times slower.
    std::vector<std::pair<double, double>> prefill, decode;
    int context = 0;
    for (int round = 0; round < 2; ++round) {
        const session_id s = eng.create_session();
        context = 0;
        int64_t next = 0;
        do {
            request p;
            p.session = s;
            for (int i = 0; i < chunk; ++i) p.append.push_back(token(next++));
            const request_stats ps = eng.run(std::move(p));
            request d;
            d.session = s;
            d.append = {token(next++)};
            d.max_tokens = steps + 1;
            const request_stats ds = eng.run(std::move(d));
            if (round == 1) {
                if (ps.n_prefilled > 0) prefill.emplace_back(context + chunk / 2.0, ps.prefill_ms / ps.n_prefilled);
                if (ds.n_generated > 1) decode.emplace_back(context + chunk + 1 + ds.n_generated / 2.0, ds.decode_ms / (ds.n_generated - 1));
            }
            context += chunk + 1 + ds.n_generated;
            if (!ps.error.empty() || !ds.error.empty()) break;  // the session's context is full
        } while (round == 1 && context < max_context);
        eng.close_session(s);
        eng.clear_prefix_cache();  // the runs compute their prompts themselves
    }
    engine_rates r;
    r.prefill = fit_line(prefill);
    r.decode = fit_line(decode);
    r.measured_to = context;
    return r;
}

}  // namespace tachyon
