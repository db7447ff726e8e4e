// Speculative tools: a read-only call the model is about to make is started
// before the model writes it, and its result is kept only if the real call
// matches it exactly (DESIGN.md, overlap mechanisms).
//
// The prediction is learned from the agent's own history, across its runs:
// after a turn whose calls were, say, "error_summary", the next turn's call
// is recorded as templates whose string arguments point at identifiers of
// that turn's results, each in every way it can be found again: the n-th
// distinct identifier, the n-th (or n-th from last) of its shape (hex id,
// time, line id, name), or the n-th on the line holding a word no other line
// holds, e.g.
//   get_trace {"trace_id": <the last hex id>}
//   search_logs {"service": <the 1st identifier of the line with "deepest">}
// The way that keeps finding the model's choice gathers the count.
// Once one template has followed the same kind of turn often enough (and
// most of the time), the next run's turn of that kind starts the call it
// predicts the moment the results arrive, while the model is still reading
// them. A wrong guess costs one tool call and nothing else.
//
// The same is learned two turns ahead, under the key two_ahead(kind): a call
// whose arguments the results of the turn before last already held (the
// logs of the service that failed first, listed by error_summary) starts
// with the call the model makes in between (the trace that names it), so
// the two tool latencies overlap instead of adding up.
//
// Thread-safe: runs on different strands share one predictor per agent.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tachyon {

// Identifier-like words of a text (ids, service names, timestamps, line ids),
// distinct, in order of first appearance.
std::vector<std::string> identifiers_in(std::string_view text);

struct predicted_call {
    std::string name;
    std::string arguments;  // minified JSON, as the model would write it
};

class call_predictor {
public:
    struct options {
        int min_support = 3;      // times a template must have been seen
        double min_share = 0.5;   // of the turns of that kind it followed
        // Two turns ahead, where a wrong guess also takes its tool's time
        // from the calls the model does make before it (a loaded machine).
        double min_share_two_ahead = 0.6;
        int max_calls = 2;        // predictions per turn
    };

    call_predictor() = default;
    explicit call_predictor(options o) : options_(o) {}

    // Records that after a turn of kind `key` (its calls' names) whose results
    // read `previous`, the model called `name` with `arguments` (minified JSON).
    void learn(const std::string& key, std::string_view previous, const std::string& name, const std::string& arguments);
    // Records a turn of kind `key` (counts the turns a template may follow).
    void count_turn(const std::string& key);

    // The key under which the calls made two turns after a turn of kind
    // `kind` are learned and predicted.
    static std::string two_ahead(const std::string& kind) { return two_ahead_prefix + kind; }

    // The calls that have followed a turn of this kind often enough (most
    // frequent first, one per call shape, at most max_calls), made from the
    // identifiers of `previous`; a template that finds no value there is skipped.
    std::vector<predicted_call> predict(const std::string& key, std::string_view previous) const;

private:
    static constexpr const char* two_ahead_prefix = "+2 ";
    struct context;
    options options_;
    mutable std::mutex mutex_;
    std::map<std::string, int> turns_;                         // key -> turns of that kind seen
    std::map<std::string, std::map<std::string, int>> seen_;   // key -> template -> times it followed (capped)
};

}  // namespace tachyon
