#include "runtime/telemetry/otel_config.h"

#include <doctest/doctest.h>

#include <tuple>

#include <map>

using namespace tachyon::telemetry;

namespace {
struct fake_env {
    std::map<std::string, std::string> vars;
    env_reader reader() const {
        return [this](const char* name) -> const char* {
            auto it = vars.find(name);
            return it == vars.end() ? nullptr : it->second.c_str();
        };
    }
};
}  // namespace

TEST_CASE("tracing is off without an endpoint") {
    fake_env env;
    env.vars["OTEL_SERVICE_NAME"] = "x";
    auto c = config_from_env({}, env.reader());
    REQUIRE(c.ok());
    CHECK_FALSE(c->enabled());
}

TEST_CASE("the endpoint variables, the flag and the other settings are read") {
    fake_env env;
    env.vars["OTEL_EXPORTER_OTLP_ENDPOINT"] = "http://collector:4318/";
    env.vars["OTEL_EXPORTER_OTLP_HEADERS"] = "api-key=a%20b, x-team=sre";
    env.vars["OTEL_EXPORTER_OTLP_TRACES_HEADERS"] = "x-team=ops";
    env.vars["OTEL_EXPORTER_OTLP_TIMEOUT"] = "2500";
    env.vars["OTEL_SERVICE_NAME"] = "incident-bot";
    env.vars["OTEL_RESOURCE_ATTRIBUTES"] = "deployment.environment=test,service.name=ignored";
    env.vars["OTEL_TRACES_SAMPLER"] = "always_off";
    env.vars["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "true";
    auto c = config_from_env({}, env.reader());
    REQUIRE_MESSAGE(c.ok(), (c.ok() ? "" : c.err().message));
    CHECK(c->traces_url == "http://collector:4318/v1/traces");
    CHECK(c->headers.at("api-key") == "a b");
    CHECK(c->headers.at("x-team") == "ops");
    CHECK(c->timeout.count() == 2500);
    CHECK(c->service_name == "incident-bot");  // OTEL_SERVICE_NAME wins over the resource attribute
    REQUIRE(c->resource_attributes.size() == 1);
    CHECK(c->resource_attributes[0].key == "deployment.environment");
    CHECK_FALSE(c->sampler.should_sample(new_trace_id(), std::nullopt));
    CHECK(c->capture_content);

    env.vars["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = "http://other:4318/custom/path";
    auto t = config_from_env({}, env.reader());
    REQUIRE(t.ok());
    CHECK(t->traces_url == "http://other:4318/custom/path");  // used as given
    auto f = config_from_env("http://127.0.0.1:9999", env.reader());
    REQUIRE(f.ok());
    CHECK(f->traces_url == "http://127.0.0.1:9999/v1/traces");  // --otlp-endpoint wins

    env.vars["OTEL_SDK_DISABLED"] = "true";
    auto off = config_from_env({}, env.reader());
    REQUIRE(off.ok());
    CHECK_FALSE(off->enabled());
}

TEST_CASE("bad settings are errors that name the variable and what was expected") {
    const std::pair<std::map<std::string, std::string>, std::string> cases[] = {
        {{{"OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector:4318"}}, "OTEL_EXPORTER_OTLP_ENDPOINT 'https://collector:4318/v1/traces': expected an http:// URL"},
        {{{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"}, {"OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"}}, "OTEL_EXPORTER_OTLP_PROTOCOL 'grpc'"},
        {{{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"}, {"OTEL_EXPORTER_OTLP_HEADERS", "novalue"}}, "OTEL_EXPORTER_OTLP_HEADERS: 'novalue': expected key=value"},
        {{{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"}, {"OTEL_EXPORTER_OTLP_HEADERS", "k=%zz"}}, "two hex digits"},
        {{{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"}, {"OTEL_EXPORTER_OTLP_TIMEOUT", "soon"}}, "OTEL_EXPORTER_OTLP_TIMEOUT 'soon': expected a positive number of milliseconds"},
        {{{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"}, {"OTEL_TRACES_SAMPLER", "often"}}, "OTEL_TRACES_SAMPLER 'often'"},
        {{{"OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4318"}, {"OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "yes"}}, "expected true or false"},
    };
    for (const auto& elem : cases) {
        // named parts, not structured bindings, which clang 14 cannot take into a lambda (CAPTURE)
        const auto& vars = std::get<0>(elem); const auto& expected = std::get<1>(elem);
        CAPTURE(expected);
        fake_env env;
        env.vars = vars;
        auto c = config_from_env({}, env.reader());
        REQUIRE_FALSE(c.ok());
        CHECK(c.err().message.find(expected) != std::string::npos);
    }
    fake_env env;
    auto flag = config_from_env("ftp://x", env.reader());
    REQUIRE_FALSE(flag.ok());
    CHECK(flag.err().message.find("--otlp-endpoint") != std::string::npos);
}
