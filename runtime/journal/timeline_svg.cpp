#include "runtime/journal/timeline_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <variant>

#include "runtime/common/json_util.h"
#include "runtime/journal/timeline.h"

namespace tachyon {

namespace {

using namespace journal;

// Layout in px.
constexpr double label_width = 190;  // lane names left of the plot
constexpr double plot_width = 900;
constexpr double right_margin = 30;
constexpr double header_height = 56;  // title and legend
constexpr double lane_height = 26;
constexpr double bar_height = 16;
constexpr double axis_height = 36;

// Colours.
constexpr const char* prefill_colour = "#4e79a7";
constexpr const char* decode_colour = "#59a14f";
constexpr const char* tool_colour = "#f28e2b";
constexpr const char* failed_colour = "#e15759";
constexpr const char* early_colour = "#b07aa1";
constexpr const char* idle_colour = "#9d9d9d";

std::string num(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", v);
    return buf;
}

// A tick step of 1, 2 or 5 times a power of ten giving about 8 ticks over `span`.
double tick_step(double span) {
    const double raw = span / 8;
    const double p = std::pow(10.0, std::floor(std::log10(raw)));
    for (double m : {1.0, 2.0, 5.0})
        if (raw <= m * p) return m * p;
    return 10 * p;
}

std::string rect(double x, double y, double w, double h, std::string_view fill, std::string_view extra = {}) {
    return "<rect x=\"" + num(x) + "\" y=\"" + num(y) + "\" width=\"" + num(std::max(w, 1.0)) + "\" height=\"" +
           num(h) + "\" fill=\"" + std::string(fill) + "\"" + (extra.empty() ? "" : " " + std::string(extra)) + "/>";
}

std::string text_at(double x, double y, std::string_view text, std::string_view extra = {}) {
    return "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\"" + (extra.empty() ? "" : " " + std::string(extra)) + ">" +
           xml_escape(text) + "</text>";
}

std::string title_of(std::string_view text) { return "<title>" + xml_escape(text) + "</title>"; }

}  // namespace

std::string xml_escape(std::string_view text) {
    const std::string clean = json::sanitize_utf8(text);
    std::string out;
    out.reserve(clean.size());
    for (char c : clean) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            case '\'': out += "&apos;"; break;
            default:
                if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') {
                    out += ' ';
                } else {
                    out += c;
                }
        }
    }
    return out;
}

std::string render_timeline_svg(const run_log& log) {
    std::vector<const model_turn_event*> turns;
    std::vector<const journal::tool_call_event*> calls;
    std::vector<std::pair<double, const verify_event*>> verifies;
    std::vector<std::pair<double, std::string>> rejections;  // calls and answers that never got through, on the model lane
    for (const auto& e : log.events) {
        if (const auto* c = std::get_if<call_rejected_event>(&e.body))
            rejections.emplace_back(e.t_ms, "rejected call " + c->call_id + " " + c->name + ": " + c->error);
        if (const auto* a = std::get_if<answer_rejected_event>(&e.body))
            rejections.emplace_back(e.t_ms, "rejected answer (turn " + std::to_string(a->step) + "): " + a->error);
        if (const auto* t = std::get_if<model_turn_event>(&e.body)) turns.push_back(t);
        if (const auto* c = std::get_if<journal::tool_call_event>(&e.body)) calls.push_back(c);
        if (const auto* v = std::get_if<verify_event>(&e.body)) verifies.emplace_back(e.t_ms, v);
    }
    std::stable_sort(calls.begin(), calls.end(),
                     [](const journal::tool_call_event* a, const journal::tool_call_event* b) { return a->start_ms < b->start_ms; });

    const double span = std::max(run_span_ms(log), 1.0);
    const double step = tick_step(span);
    const double axis_end = std::ceil(span / step) * step;  // the axis ends on a tick
    const auto x_of = [&](double ms) { return label_width + std::clamp(ms, 0.0, axis_end) / axis_end * plot_width; };

    const size_t n_lanes = 1 + calls.size() + (verifies.empty() ? 0 : 1);
    const double lanes_top = header_height;
    const double lanes_bottom = lanes_top + static_cast<double>(n_lanes) * lane_height;
    const double width = label_width + plot_width + right_margin;
    const double height = lanes_bottom + axis_height;

    std::string svg;
    svg += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(width) + "\" height=\"" + num(height) +
           "\" viewBox=\"0 0 " + num(width) + " " + num(height) + "\" font-family=\"sans-serif\" font-size=\"11\">\n";
    svg += rect(0, 0, width, height, "#ffffff") + "\n";

    // Title: run id, agent, state, time to answer.
    std::string title = "run " + log.run_id();
    if (const auto* s = log.start()) title += "  agent " + s->agent + "  model " + s->model;
    title += "  " + log.state();
    if (const auto* f = log.final_answer()) title += "  answer at " + num(f->time_to_answer_ms) + " ms";
    svg += text_at(8, 16, title, "font-size=\"13\" font-weight=\"bold\"") + "\n";

    // Legend.
    {
        svg += "<g class=\"legend\">\n";
        double x = 8;
        const double y = 30;
        const auto item = [&](std::string_view swatch, std::string_view label) {
            svg += swatch;
            svg += text_at(x + 16, y + 10, label) + "\n";
            x += 16 + 7.0 * static_cast<double>(label.size()) + 16;
        };
        item(rect(x, y, 12, 12, prefill_colour), "prefill");
        item(rect(x, y, 12, 12, decode_colour), "decode");
        item(rect(x, y, 12, 12, tool_colour), "tool call");
        item(rect(x, y, 12, 12, failed_colour), "tool failed");
        item(rect(x, y, 12, 12, early_colour), "dispatched early");
        item(rect(x, y, 12, 12, tool_colour, "fill-opacity=\"0.45\" stroke=\"#333\" stroke-dasharray=\"3,2\""),
             "speculative");
        item("<polygon points=\"" + num(x + 6) + "," + num(y) + " " + num(x + 12) + "," + num(y + 6) + " " + num(x + 6) +
                 "," + num(y + 12) + " " + num(x) + "," + num(y + 6) + "\" fill=\"" + decode_colour + "\"/>",
             "verify pass/fail");
        item("<path d=\"M" + num(x + 1) + "," + num(y + 1) + " L" + num(x + 11) + "," + num(y + 11) + " M" + num(x + 1) + "," +
                 num(y + 11) + " L" + num(x + 11) + "," + num(y + 1) + "\" stroke=\"" + failed_colour + "\" stroke-width=\"2\"/>",
             "rejected call/answer");
        item(rect(x, y, 12, 12, idle_colour, "fill-opacity=\"0.35\""), "idle (nothing busy)");
        svg += "</g>\n";
    }

    // Background: idle gaps over every lane, decode bands over the tool lanes.
    svg += "<g class=\"background\">\n";
    for (const auto& gap : idle_gaps(log)) {
        svg += rect(x_of(gap.begin_ms), lanes_top, x_of(gap.end_ms) - x_of(gap.begin_ms), lanes_bottom - lanes_top,
                    idle_colour, "fill-opacity=\"0.35\" class=\"idle\"") +
               title_of("idle " + num(gap.length()) + " ms") + "\n";
    }
    for (const auto* t : turns) {
        svg += rect(x_of(t->prefill_end_ms), lanes_top + lane_height, x_of(t->decode_end_ms) - x_of(t->prefill_end_ms),
                    lanes_bottom - lanes_top - lane_height, decode_colour, "fill-opacity=\"0.12\"") +
               "\n";
    }
    for (size_t i = 0; i <= n_lanes; ++i) {
        const double y = lanes_top + static_cast<double>(i) * lane_height;
        svg += "<line x1=\"0\" y1=\"" + num(y) + "\" x2=\"" + num(width) + "\" y2=\"" + num(y) +
               "\" stroke=\"#e0e0e0\"/>\n";
    }
    svg += "</g>\n";

    const auto lane_y = [&](size_t lane) { return lanes_top + static_cast<double>(lane) * lane_height; };
    const double pad = (lane_height - bar_height) / 2;

    // Model lane.
    svg += "<g class=\"lane model-lane\">\n";
    svg += text_at(8, lane_y(0) + 17, "model") + "\n";
    for (const auto* t : turns) {
        const double y = lane_y(0) + pad;
        svg += "<g class=\"turn\">" + title_of("turn " + std::to_string(t->step) + ": prefill " +
                                               std::to_string(t->prefill_tokens) + " tok (reused " +
                                               std::to_string(t->reused_tokens) + "), decode " +
                                               std::to_string(t->generated_tokens) + " tok");
        svg += rect(x_of(t->prefill_start_ms), y, x_of(t->prefill_end_ms) - x_of(t->prefill_start_ms), bar_height,
                    prefill_colour, "class=\"prefill\"");
        svg += rect(x_of(t->prefill_end_ms), y, x_of(t->decode_end_ms) - x_of(t->prefill_end_ms), bar_height,
                    decode_colour, "class=\"decode\"");
        svg += "</g>\n";
    }
    for (const auto& [t_ms, what] : rejections) {
        // A cross: the model wrote it, the runtime sent it back.
        const double x = x_of(t_ms);
        const double y = lane_y(0) + lane_height / 2;
        svg += "<path class=\"rejected\" d=\"M" + num(x - 5) + "," + num(y - 5) + " L" + num(x + 5) + "," + num(y + 5) + " M" +
               num(x - 5) + "," + num(y + 5) + " L" + num(x + 5) + "," + num(y - 5) + "\" stroke=\"" + failed_colour +
               "\" stroke-width=\"2\">" + title_of(what) + "</path>\n";
    }
    svg += "</g>\n";

    // One lane per tool call.
    for (size_t i = 0; i < calls.size(); ++i) {
        const auto* c = calls[i];
        const double y = lane_y(1 + i);
        std::string label = c->name;
        if (c->early) label += " [early]";
        if (c->speculative) label += " [spec]";
        svg += "<g class=\"lane tool-lane\" data-call-id=\"" + xml_escape(c->call_id) + "\">" +
               title_of(c->name + " " + c->arguments_json + ": " + num(c->end_ms - c->start_ms) + " ms" +
                        (c->ok ? "" : " failed: " + c->error)) +
               "\n";
        svg += text_at(8, y + 17, c->call_id.empty() ? c->name : c->name + " #" + c->call_id) + "\n";
        std::string style = c->speculative ? "fill-opacity=\"0.45\" stroke=\"#333\" stroke-dasharray=\"3,2\"" : "";
        const double x0 = x_of(c->start_ms);
        const double w = x_of(c->end_ms) - x0;
        svg += rect(x0, y + pad, w, bar_height, c->ok ? tool_colour : failed_colour, style) + "\n";
        if (c->early) {
            // A notch at the start of the bar: dispatched while the turn was still decoding.
            svg += "<polygon points=\"" + num(x0) + "," + num(y + pad) + " " + num(x0 + 7) + "," + num(y + lane_height / 2) +
                   " " + num(x0) + "," + num(y + pad + bar_height) + "\" fill=\"" + early_colour + "\"/>\n";
        }
        svg += text_at(x0 + std::max(w, 1.0) + 4, y + 17, label) + "\n";
        svg += "</g>\n";
    }

    // Verify marks.
    if (!verifies.empty()) {
        const double y = lane_y(1 + calls.size()) + lane_height / 2;
        svg += "<g class=\"lane verify-lane\">\n";
        svg += text_at(8, y + 4, "verify") + "\n";
        for (const auto& [t_ms, v] : verifies) {
            const double x = x_of(t_ms);
            svg += "<polygon points=\"" + num(x) + "," + num(y - 7) + " " + num(x + 7) + "," + num(y) + " " + num(x) +
                   "," + num(y + 7) + " " + num(x - 7) + "," + num(y) + "\" fill=\"" +
                   (v->ok ? decode_colour : failed_colour) + "\">" +
                   title_of(v->check + (v->ok ? " pass" : " FAIL") + (v->message.empty() ? "" : ": " + v->message)) +
                   "</polygon>\n";
        }
        svg += "</g>\n";
    }

    // Time axis.
    svg += "<g class=\"axis\">\n";
    svg += "<line x1=\"" + num(label_width) + "\" y1=\"" + num(lanes_bottom) + "\" x2=\"" + num(label_width + plot_width) +
           "\" y2=\"" + num(lanes_bottom) + "\" stroke=\"#333\"/>\n";
    const auto n_ticks = static_cast<int>(std::llround(axis_end / step));
    for (int i = 0; i <= n_ticks; ++i) {
        const double ms = step * i;
        const double x = x_of(ms);
        svg += "<line x1=\"" + num(x) + "\" y1=\"" + num(lanes_bottom) + "\" x2=\"" + num(x) + "\" y2=\"" +
               num(lanes_bottom + 5) + "\" stroke=\"#333\"/>";
        char label[32];
        std::snprintf(label, sizeof label, step >= 1 ? "%.0f" : "%.2g", ms);
        svg += text_at(x, lanes_bottom + 17, label, "text-anchor=\"middle\"") + "\n";
    }
    svg += text_at(label_width + plot_width, lanes_bottom + 31, "ms", "text-anchor=\"end\"") + "\n";
    svg += "</g>\n";
    svg += "</svg>\n";
    return svg;
}

}  // namespace tachyon
