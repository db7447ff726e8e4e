// A run's timeline as an SVG picture, plain text with no dependencies: one
// lane for the model (prefill and decode of every turn in two colours), one
// lane per tool call (a bar from start to end, marked when dispatched early or
// run speculatively), a lane of verify marks, a shared time axis in ms and a
// legend. Decode stretches are drawn as faint bands across the tool lanes, so
// tool work hidden under decoding shows at a glance; idle gaps (neither model
// nor tool busy) are shaded grey.
#pragma once

#include <string>
#include <string_view>

#include "runtime/journal/journal.h"

namespace tachyon {

// Text safe inside an XML attribute or element: & < > " ' escaped, invalid
// UTF-8 replaced, control characters (not allowed in XML 1.0) made spaces.
std::string xml_escape(std::string_view text);

// The whole document (starts with "<svg", valid XML). Every tool call's lane
// is a <g class="lane tool-lane" ...> element.
std::string render_timeline_svg(const journal::run_log& log);

}  // namespace tachyon
