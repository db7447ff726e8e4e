// A run's timeline read from its journal: the spans when the model and each
// tool were busy, the idle gaps between them, and a plain-text rendering
// (`tachyon runs show`). The SVG picture (timeline_svg.h) draws the same spans.
#pragma once

#include <string>
#include <vector>

#include "runtime/journal/journal.h"

namespace tachyon {

struct time_span {
    double begin_ms = 0;
    double end_ms = 0;
    double length() const { return end_ms - begin_ms; }
};

// The end of the last thing that happened (event, turn or call), in ms.
double run_span_ms(const journal::run_log& log);

// Stretches of [0, run_span_ms) where neither the model (prefill or decode)
// nor any tool was busy, in time order.
std::vector<time_span> idle_gaps(const journal::run_log& log);

// One row per event, ordered by start time:
//   time_ms  lane      event        dur_ms  detail
// `width` caps the detail column (texts are shortened with "...").
std::string render_timeline_text(const journal::run_log& log, size_t width = 100);

}  // namespace tachyon
