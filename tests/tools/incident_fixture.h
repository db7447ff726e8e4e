// A small hand-written incident directory for the tool tests: five log
// formats, multi-line stack traces, one trace tree, a changes file, a red
// herring service (search) and a poisoned answer.json that no tool may read.
// Root cause: payments-db (connection pool exhausted from 14:04:58).
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <unistd.h>

namespace incident_fixture {

inline void write_file(const std::filesystem::path& path, std::string_view text) {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << text;
}

// A fresh directory under the system temp dir, removed on destruction.
struct temp_root {
    std::filesystem::path path;
    explicit temp_root(std::string_view name) {
        path = std::filesystem::temp_directory_path() /
               ("tachyon_" + std::string(name) + "_" + std::to_string(::getpid()));
        std::filesystem::remove_all(path);
        std::filesystem::create_directories(path);
    }
    ~temp_root() { std::filesystem::remove_all(path); }
};

inline void write_incident(const std::filesystem::path& root) {
    write_file(root / "logs/api-gateway.log",
               R"X(10.0.3.7 - - [14/Mar/2026:14:00:01 +0000] "GET /api/search HTTP/1.1" 200 512 "-" "Mozilla/5.0" rt=0.010
10.0.3.7 - - [14/Mar/2026:14:05:20 +0000] "POST /api/checkout HTTP/1.1" 502 157 "-" "Mozilla/5.0" rt=1.250 trace=4bf92f3577b34da6
10.0.3.8 - - [14/Mar/2026:14:05:40 +0000] "POST /api/checkout HTTP/1.1" 502 157 "-" "Mozilla/5.0" rt=1.300
10.0.3.9 - - [14/Mar/2026:14:06:00 +0000] "POST /api/checkout HTTP/1.1" 504 0 "-" "Mozilla/5.0" rt=5.000
10.0.3.9 - - [14/Mar/2026:14:06:30 +0000] "GET /api/missing HTTP/1.1" 404 0 "-" "Mozilla/5.0" rt=0.001
)X");
    write_file(root / "logs/checkout.log",
               "2026-03-14T14:00:00.000Z checkout[812]: INFO started checkout worker pool size=8\n"
               "2026-03-14T14:02:00.000Z checkout[812]: INFO config reload: db.pool.max_size 50 -> 5\n"
               "2026-03-14T14:05:15.500Z checkout[812]: ERROR upstream timeout calling payments after 1200 ms trace=4bf92f3577b34da6\n"
               "java.net.SocketTimeoutException: Read timed out\n"
               "\tat java.net.SocketInputStream.read(SocketInputStream.java:150)\n"
               "\tat com.shop.PaymentsClient.charge(PaymentsClient.java:88)\n"
               "Caused by: java.io.IOException: connection reset\n"
               "\tat com.shop.Net.read(Net.java:12)\n"
               "2026-03-14T14:05:35.000Z checkout[812]: ERROR upstream timeout calling payments after 1300 ms trace=aaaa000011112222\n"
               "2026-03-14T14:05:55.000Z checkout[812]: ERROR upstream timeout calling payments after 1250 ms\n"
               "2026-03-14T14:06:10.000Z checkout[812]: WARN retry budget low\n");
    write_file(root / "logs/payments.log",
               R"X({"ts":"2026-03-14T14:00:05.000Z","level":"INFO","service":"payments","msg":"payments ready"}
{"ts":"2026-03-14T14:05:10.100Z","level":"ERROR","service":"payments","msg":"charge failed: could not get connection from pool (waited 1000 ms)","trace_id":"4bf92f3577b34da6"}
{"ts":"2026-03-14T14:05:30.200Z","level":"ERROR","service":"payments","msg":"charge failed: could not get connection from pool (waited 1000 ms)","trace_id":"aaaa000011112222"}
{"ts":"2026-03-14T14:05:50.300Z","level":"ERROR","service":"payments","msg":"charge failed: could not get connection from pool (waited 1000 ms)"}
{"ts":"2026-03-14T14:06:00.000Z","level":"warn","service":"payments","msg":"slow response 900 ms"}
)X");
    write_file(root / "logs/payments-db.log",
               "Mar 14 13:30:00 db1 payments-db[55]: ERROR checkpoint took too long (noise)\n"
               "Mar 14 14:00:00 db1 payments-db[55]: INFO accepting connections\n"
               "Mar 14 14:04:58 db1 payments-db[55]: ERROR connection pool exhausted (5 active, 12 waiting)\n"
               "Mar 14 14:05:05 db1 payments-db[55]: ERROR connection pool exhausted (5 active, 30 waiting)\n"
               "Mar 14 14:05:30 db1 payments-db[55]: ERROR connection pool exhausted (5 active, 41 waiting)\n"
               "Mar 14 14:06:00 db1 payments-db[55]: WARN pool wait time 2500 ms\n");
    write_file(root / "logs/search.log",
               "2026-03-14 14:20:00,123 ERROR search.indexer: reindex failed\n"
               "Traceback (most recent call last):\n"
               "  File \"indexer.py\", line 42, in run\n"
               "    self.flush()\n"
               "ValueError: shard 3 unavailable\n"
               "2026-03-14 14:20:30,000 ERROR search.indexer: reindex failed\n"
               "2026-03-14 14:21:00,000 ERROR search.indexer: reindex failed\n"
               "2026-03-14 14:21:30,000 INFO search.indexer: reindex ok\n");
    write_file(root / "traces/spans.jsonl",
               R"X({"trace_id":"4bf92f3577b34da6","span_id":"a0000001","parent_id":null,"service":"api-gateway","operation":"POST /api/checkout","start":"2026-03-14T14:05:09.000Z","duration_ms":1350.0,"status":"error","error":"502 from checkout"}
{"trace_id":"4bf92f3577b34da6","span_id":"a0000002","parent_id":"a0000001","service":"checkout","operation":"POST /checkout","start":"2026-03-14T14:05:09.100Z","duration_ms":1200.0,"status":"error","error":"payments timeout"}
{"trace_id":"4bf92f3577b34da6","span_id":"a0000003","parent_id":"a0000002","service":"inventory","operation":"reserve","start":"2026-03-14T14:05:09.110Z","duration_ms":12.5,"status":"ok","error":null}
{"trace_id":"4bf92f3577b34da6","span_id":"a0000004","parent_id":"a0000002","service":"payments","operation":"charge","start":"2026-03-14T14:05:09.200Z","duration_ms":1000.0,"status":"error","error":"could not get connection"}
{"trace_id":"4bf92f3577b34da6","span_id":"a0000005","parent_id":"a0000004","service":"payments-db","operation":"acquire","start":"2026-03-14T14:05:09.210Z","duration_ms":950.0,"status":"error","error":"pool exhausted"}
{"trace_id":"5ccc000011112222","span_id":"b0000001","parent_id":null,"service":"api-gateway","operation":"GET /api/search","start":"2026-03-14T14:00:01.000Z","duration_ms":10.0,"status":"ok","error":null}
{"trace_id":"5ccc000011112222","span_id":"b0000002","parent_id":"b0000001","service":"search","operation":"query","start":"2026-03-14T14:00:01.001Z","duration_ms":8.0,"status":"ok","error":null}
)X");
    write_file(root / "changes/changes.log",
               "2026-03-14T13:58:00Z deploy payments v2.14.1 -> v2.15.0 by ci-bot\n"
               "2026-03-14T14:01:30Z config payments-db max_connections 100 -> 5 by alice\n"
               "2026-03-14T14:10:00Z scale search replicas 3 -> 2 by autoscaler\n");
    // only the evaluator may read this; every value is marked so a leak shows
    write_file(root / "answer.json",
               R"X({"root_cause_service":"POISON-service","fault_type":"POISON_fault","first_bad_timestamp":"2026-03-14T14:04:58.120Z","evidence":["POISON:1"],"seed":7})X");
}

}  // namespace incident_fixture
