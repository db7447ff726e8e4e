// Sends finished spans to an OpenTelemetry collector as OTLP/HTTP JSON:
// POST {traces url} with Content-Type application/json, one
// ExportTraceServiceRequest per batch (span.h). The exporter has its own
// thread and event loop, so a run never waits for a collector:
// - submit() only appends to a bounded queue; when the queue is full the
//   span is dropped and counted (n_dropped, /metrics
//   tachyon_otel_spans_dropped_total).
// - A batch goes out when max_batch spans wait or batch_delay has passed.
// - Every export has a timeout (connect, write and read together); a
//   collector that answers 429, 502, 503 or 504 is asked again after its
//   Retry-After (seconds) or a doubling backoff, up to max_attempts; any
//   other failure (refused connection, timeout, 4xx) drops the batch,
//   counted. Plain http:// only (any host; use a local TLS proxy for https).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "runtime/telemetry/span.h"

namespace tachyon::telemetry {

struct exporter_options {
    std::string traces_url;  // "http://host:4318/v1/traces"
    std::map<std::string, std::string> headers;  // sent with every export (OTEL_EXPORTER_OTLP_HEADERS)
    size_t max_queue = 2048;                     // spans waiting; beyond: dropped
    size_t max_batch = 512;                      // spans per export
    std::chrono::milliseconds batch_delay{1000}; // the longest a span waits for its batch
    std::chrono::milliseconds timeout{10000};    // one export attempt, connect to response
    int max_attempts = 5;                        // 1 + retries on 429/502/503/504
    std::chrono::milliseconds first_backoff{500};  // doubled per retry when there is no Retry-After
    std::chrono::milliseconds max_retry_after{30000};  // a longer Retry-After is cut to this
};

class otlp_exporter {
public:
    // Starts the exporter's thread. Errors: a URL that is not http://host[:port]/path.
    static result<std::unique_ptr<otlp_exporter>> create(exporter_options options, resource_info resource);
    // Sends what is queued (waiting at most `shutdown_wait`), then stops.
    ~otlp_exporter();
    otlp_exporter(const otlp_exporter&) = delete;
    otlp_exporter& operator=(const otlp_exporter&) = delete;

    // Queues a finished span. Never blocks on the network; thread-safe.
    void submit(span s);
    // Sends everything queued now and waits until it is exported or
    // dropped, at most `wait`. True when nothing is left. For tests and
    // shutdown; never called on a run's path.
    bool flush(std::chrono::milliseconds wait);

    uint64_t n_dropped() const;   // spans lost: queue full, or their export failed
    uint64_t n_exported() const;  // spans the collector accepted (2xx)
    const exporter_options& options() const;

private:
    struct impl;
    explicit otlp_exporter(std::shared_ptr<impl> p);
    std::shared_ptr<impl> impl_;
};

}  // namespace tachyon::telemetry
