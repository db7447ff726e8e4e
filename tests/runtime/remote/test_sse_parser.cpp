#include "runtime/remote/sse_parser.h"

#include <doctest/doctest.h>

using namespace tachyon::remote;

TEST_CASE("sse_parser: events split anywhere, CRLF/CR/LF line ends, comments and other fields skipped, multi-line data joined") {
    const std::string body = ": keep-alive\r\ndata: {\"a\":1}\r\n\r\nevent: x\nid: 7\ndata: line one\ndata: line two\n\ndata:no-space\r\rdata: [DONE]\n\n";
    for (size_t split = 1; split < body.size(); ++split) {
        CAPTURE(split);
        sse_parser p;
        std::vector<std::string> events;
        REQUIRE(p.feed(std::string_view(body).substr(0, split), events).ok());
        REQUIRE(p.feed(std::string_view(body).substr(split), events).ok());
        REQUIRE(events.size() == 4);
        CHECK(events[0] == "{\"a\":1}");
        CHECK(events[1] == "line one\nline two");
        CHECK(events[2] == "no-space");
        CHECK(events[3] == "[DONE]");
    }
}

TEST_CASE("sse_parser: an event still open at the end is delivered by finish(), an event over the limit is an error") {
    sse_parser p;
    std::vector<std::string> events;
    REQUIRE(p.feed("data: tail", events).ok());
    CHECK(events.empty());
    CHECK(p.finish(events));
    REQUIRE(events.size() == 1);
    CHECK(events[0] == "tail");
    CHECK_FALSE(p.finish(events));

    sse_parser small(16);
    auto st = small.feed("data: " + std::string(64, 'x'), events);
    REQUIRE_FALSE(st.ok());
    CHECK(st.err().message == "event stream: an event longer than 16 bytes (expected one chat completion chunk per event)");
}
