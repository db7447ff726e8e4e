// W3C trace context (https://www.w3.org/TR/trace-context/): the ids of a
// span and the `traceparent` header that carries them between processes:
//   traceparent: 00-<32 hex trace id>-<16 hex parent span id>-<2 hex flags>
// tachyon continues an incoming one (`tachyon serve`) and sends its own on
// the requests a run makes (remote model calls, MCP over HTTP), so that a
// collector joins the spans of every process into one trace.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/result.h"

namespace tachyon::telemetry {

using trace_id = std::array<uint8_t, 16>;
using span_id = std::array<uint8_t, 8>;

struct span_context {
    trace_id trace{};
    span_id span{};
    bool sampled = false;  // flags bit 0: the caller records this trace

    // Both ids non-zero (an all-zero id is invalid in W3C and OTLP).
    bool valid() const;
};

// Lower-case hex, as traceparent and OTLP/JSON write ids.
std::string to_hex(const trace_id& id);
std::string to_hex(const span_id& id);

// Parses a traceparent header value. Version 00 is read exactly; a later
// version is read by its first four fields (the spec's forward
// compatibility); "ff", all-zero ids, upper-case hex and wrong lengths are
// errors naming the header and what was expected.
result<span_context> parse_traceparent(std::string_view header);
// "00-<trace>-<span>-01" (or -00 when not sampled).
std::string format_traceparent(const span_context& ctx);

// Fresh random ids (never all zero), from a per-thread generator seeded
// from the OS.
trace_id new_trace_id();
span_id new_span_id();

}  // namespace tachyon::telemetry
