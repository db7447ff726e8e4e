#include "runtime/telemetry/otlp_exporter.h"

#include <doctest/doctest.h>

#include <boost/asio/ip/tcp.hpp>

#include "tests/runtime/telemetry/otlp_receiver.h"

using namespace tachyon::telemetry;
using namespace std::chrono_literals;

namespace {

span make_span(const std::string& name) {
    span s;
    s.context = {new_trace_id(), new_span_id(), true};
    s.name = name;
    s.start_unix_nano = 1;
    s.end_unix_nano = 2;
    return s;
}

resource_info resource() {
    resource_info r;
    r.attributes.push_back({"service.name", std::string("exporter-test")});
    return r;
}

// A port nothing listens on: bound, then closed.
std::string dead_url() {
    boost::asio::io_context io;
    boost::asio::ip::tcp::acceptor a(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
    const auto port = a.local_endpoint().port();
    a.close();
    return "http://127.0.0.1:" + std::to_string(port) + "/v1/traces";
}

}  // namespace

TEST_CASE("spans are posted to /v1/traces as JSON with the configured headers") {
    otlp_test::receiver rx;
    exporter_options o;
    o.traces_url = rx.traces_url();
    o.headers = {{"x-api-key", "secret"}};
    auto ex = otlp_exporter::create(o, resource());
    REQUIRE(ex.ok());
    (*ex)->submit(make_span("one"));
    (*ex)->submit(make_span("two"));
    REQUIRE((*ex)->flush(5s));
    CHECK((*ex)->n_exported() == 2);
    CHECK((*ex)->n_dropped() == 0);
    auto reqs = rx.requests();
    REQUIRE(reqs.size() == 1);  // one batch
    CHECK(reqs[0].target == "/v1/traces");
    CHECK(reqs[0].headers.at("content-type") == "application/json");
    CHECK(reqs[0].headers.at("x-api-key") == "secret");
    auto spans = otlp_test::all_spans(reqs);
    REQUIRE(spans.size() == 2);
    CHECK(spans[0].name == "one");
}

TEST_CASE("a busy collector (429, 502, 503, 504) is asked again after Retry-After") {
    otlp_test::receiver rx;
    rx.script({{503, "0"}, {429, "0"}, {502, ""}, {504, "0"}});
    exporter_options o;
    o.traces_url = rx.traces_url();
    o.first_backoff = 1ms;
    auto ex = otlp_exporter::create(o, resource());
    REQUIRE(ex.ok());
    (*ex)->submit(make_span("retried"));
    REQUIRE((*ex)->flush(10s));
    CHECK((*ex)->n_exported() == 1);
    CHECK((*ex)->n_dropped() == 0);
    CHECK(rx.requests().size() == 5);
}

TEST_CASE("other answers are not retried: the batch is dropped and counted") {
    otlp_test::receiver rx;
    rx.script({{400, ""}});
    exporter_options o;
    o.traces_url = rx.traces_url();
    auto ex = otlp_exporter::create(o, resource());
    REQUIRE(ex.ok());
    (*ex)->submit(make_span("bad"));
    REQUIRE((*ex)->flush(5s));
    CHECK((*ex)->n_dropped() == 1);
    CHECK(rx.requests().size() == 1);
    // Retries are bounded too.
    rx.script({{503, "0"}, {503, "0"}, {503, "0"}});
    exporter_options few = o;
    few.max_attempts = 2;
    auto ex2 = otlp_exporter::create(few, resource());
    REQUIRE(ex2.ok());
    (*ex2)->submit(make_span("busy"));
    REQUIRE((*ex2)->flush(5s));
    CHECK((*ex2)->n_dropped() == 1);
    CHECK(rx.requests().size() == 3);
}

TEST_CASE("a dead collector drops spans, counted, and submit never blocks") {
    exporter_options o;
    o.traces_url = dead_url();
    auto ex = otlp_exporter::create(o, resource());
    REQUIRE(ex.ok());
    for (int i = 0; i < 3; ++i) (*ex)->submit(make_span("lost"));
    REQUIRE((*ex)->flush(5s));
    CHECK((*ex)->n_dropped() == 3);
    CHECK((*ex)->n_exported() == 0);
}

TEST_CASE("a collector that never answers: the export times out, a full queue drops what does not fit") {
    otlp_test::receiver rx;
    rx.hang(true);
    exporter_options o;
    o.traces_url = rx.traces_url();
    o.timeout = 200ms;
    o.max_queue = 2;
    o.max_batch = 1;
    auto ex = otlp_exporter::create(o, resource());
    REQUIRE(ex.ok());
    // The first span goes out at once (a full batch) and hangs; two fit in
    // the queue behind it; the rest are dropped on submit.
    (*ex)->submit(make_span("first"));
    for (int i = 0; i < 5 && rx.requests().empty(); ++i) std::this_thread::sleep_for(20ms);
    for (int i = 0; i < 6; ++i) (*ex)->submit(make_span("more"));
    CHECK((*ex)->n_dropped() >= 4);
    REQUIRE((*ex)->flush(5s));
    CHECK((*ex)->n_dropped() == 7);  // every span: the queue's overflow, then each timed-out export
    CHECK((*ex)->n_exported() == 0);
}

TEST_CASE("an endpoint that is not http:// is refused with a clear error") {
    exporter_options o;
    o.traces_url = "https://collector:4318/v1/traces";
    auto ex = otlp_exporter::create(o, resource());
    REQUIRE_FALSE(ex.ok());
    CHECK(ex.err().message.find("expected an http:// URL") != std::string::npos);
}
