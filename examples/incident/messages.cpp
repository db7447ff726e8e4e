#include "examples/incident/messages.h"

#include <cstdio>

namespace incident {
namespace {

using strings = std::vector<std::string>;

const service& svc_of(const incident_plan& p, int i) { return p.services[static_cast<size_t>(i)]; }

std::string num(int64_t v) { return std::to_string(v); }

std::string fixed1(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", v);
    return buf;
}

// Java class-ish name of a service: "user-profile" -> "UserProfile"
std::string camel(const std::string& name) {
    std::string out;
    bool up = true;
    for (char c : name) {
        if (c == '-') {
            up = true;
            continue;
        }
        out += up ? static_cast<char>(c - 'a' + 'A') : c;
        up = false;
    }
    return out;
}
std::string package(const std::string& name) {
    std::string out;
    for (char c : name)
        if (c != '-') out += c;
    return out;
}

// The first callee of a kind, or any callee, or "" when none.
std::string callee_name(const incident_plan& p, int s, service_kind k) {
    for (int c : svc_of(p, s).callees)
        if (svc_of(p, c).kind == k) return svc_of(p, c).name;
    return "";
}
std::string any_callee(const incident_plan& p, int s, prng& rng) {
    const auto& c = svc_of(p, s).callees;
    return c.empty() ? std::string("config-server") : svc_of(p, rng.pick(c)).name;
}

std::string sql_statement(prng& rng) {
    return rng.pick(strings{
        "SELECT o.id, o.status, o.total FROM orders o JOIN order_items i ON i.order_id = o.id WHERE o.customer_id = $1",
        "UPDATE inventory_items SET reserved = reserved + $1 WHERE sku = $2",
        "SELECT * FROM payments WHERE merchant_id = $1 AND created_at > $2 ORDER BY created_at DESC",
        "SELECT p.id, p.price FROM products p WHERE p.category_id IN (SELECT id FROM categories WHERE path LIKE $1)",
        "INSERT INTO ledger_entries (account_id, amount, ref) VALUES ($1, $2, $3)"});
}

std::vector<std::string> java_frames(const std::string& svc, prng& rng, int n) {
    static const strings methods = {"handle", "process", "execute", "call", "apply", "doFilter", "invoke"};
    static const strings classes = {"Controller", "Service", "Repository", "Client", "Handler", "Gateway"};
    std::vector<std::string> out;
    for (int i = 0; i < n; ++i) {
        const std::string cls = camel(svc) + rng.pick(classes);
        out.push_back("\tat com.shop." + package(svc) + "." + cls + "." + rng.pick(methods) + "(" + cls + ".java:" +
                      num(rng.range(20, 480)) + ")");
    }
    out.push_back("\tat org.springframework.web.servlet.FrameworkServlet.service(FrameworkServlet.java:897)");
    out.push_back("\t... " + num(rng.range(18, 64)) + " more");
    return out;
}

std::vector<std::string> python_frames(const std::string& svc, prng& rng, int n) {
    static const strings mods = {"api", "handlers", "db", "service", "client", "models"};
    static const strings funcs = {"handle_request", "get_stock", "process", "fetch", "load", "run"};
    static const strings code = {"return self._pool.get(timeout=self.timeout)", "result = await client.call(payload)",
                                 "rows = session.execute(query).fetchall()", "data = resp.json()[\"items\"]",
                                 "return handler(request)"};
    std::vector<std::string> out = {"Traceback (most recent call last):"};
    for (int i = 0; i < n; ++i) {
        out.push_back("  File \"/app/" + package(svc) + "/" + rng.pick(mods) + ".py\", line " + num(rng.range(12, 420)) +
                      ", in " + rng.pick(funcs));
        out.push_back("    " + rng.pick(code));
    }
    return out;
}

// A choice fixed per (incident, service): how a service words a kind of
// message does not change from line to line.
uint64_t per_service_choice(const incident_plan& p, int s, uint64_t n) {
    uint64_t state = p.seed * 0x2545F4914F6CDD1Dull + static_cast<uint64_t>(s) * 0x9E3779B97F4A7C15ull;
    return splitmix64(state) % n;
}
std::string nth(uint64_t i, const strings& v) { return v[i % v.size()]; }

// Adds a stack trace to an error of a Java or Python service written as
// plain text (JSON services keep one line per entry).
void maybe_stack(const incident_plan& p, int s, prng& rng, log_message& m, double probability) {
    const service& sv = svc_of(p, s);
    if (sv.style == log_style::json || !rng.chance(probability)) return;
    if (sv.lang == runtime_lang::java) m.continuation = java_frames(sv.name, rng, static_cast<int>(rng.range(2, 5)));
    if (sv.lang == runtime_lang::python) m.continuation = python_frames(sv.name, rng, static_cast<int>(rng.range(1, 3)));
}

}  // namespace

std::string_view level_word(level l) {
    switch (l) {
        case level::debug: return "DEBUG";
        case level::info: return "INFO";
        case level::warn: return "WARN";
        case level::error: return "ERROR";
    }
    return "INFO";
}

bool fault_is_slow(fault_type f) {
    return f == fault_type::connection_pool_exhaustion || f == fault_type::slow_query || f == fault_type::deadlock ||
           f == fault_type::upstream_timeout || f == fault_type::cache_stampede;
}

log_message fault_message(const incident_plan& p, int s, prng& rng, time_ms now) {
    const service& sv = svc_of(p, s);
    const runtime_lang lang = sv.lang;
    log_message m;
    m.lvl = level::error;
    std::string& t = m.text;
    const std::string ext = sv.external;
    const std::string ip = "52." + num(rng.range(1, 250)) + "." + num(rng.range(1, 250)) + "." + num(rng.range(1, 250));
    switch (p.fault) {
        case fault_type::connection_pool_exhaustion: {
            const int max = static_cast<int>(10 * rng.range(2, 10));
            if (is_store(sv.kind)) {
                t = rng.pick(strings{"FATAL: sorry, too many clients already (max_connections=" + num(max) + ")",
                                     "FATAL: remaining connection slots are reserved for non-replication superuser connections",
                                     "connection rejected: too many clients already, " + num(max) + " of " + num(max) +
                                         " connection slots in use"});
                break;
            }
            const std::string db = callee_name(p, s, service_kind::sql_store);
            if (lang == runtime_lang::java) {
                t = rng.pick(strings{"HikariPool-1 - Connection is not available, request timed out after " +
                                         num(rng.range(3, 30) * 1000) + "ms.",
                                     "HikariPool-1 - Connection is not available (total=" +
                                         num(max) + ", active=" + num(max) + ", idle=0, waiting=" + num(rng.range(20, 400)) + "); CannotGetJdbcConnectionException"});
            } else if (lang == runtime_lang::python) {
                t = rng.pick(strings{"sqlalchemy.exc.TimeoutError: QueuePool limit of size " + num(max) +
                                         " overflow 10 reached, connection timed out, timeout 30.00",
                                     "could not obtain a connection to " + db + " from pool: pool exhausted (" + num(max) +
                                         "/" + num(max) + " in use, " + num(rng.range(20, 400)) + " waiting)"});
            } else {
                t = rng.pick(strings{"db pool: acquire timeout after " + num(rng.range(3, 30) * 1000) + "ms (active=" +
                                         num(max) + " idle=0 waiting=" + num(rng.range(20, 400)) + ") for " + db,
                                     "could not obtain a connection to " + db + " from pool: pool exhausted (" + num(max) +
                                         "/" + num(max) + " in use)"});
            }
            break;
        }
        case fault_type::oom_kill:
            if (sv.kind == service_kind::cache_store) {
                t = rng.pick(strings{"OOM command not allowed when used memory > 'maxmemory' (used_memory=" +
                                         num(rng.range(3900, 4100)) + "mb)",
                                     "Out Of Memory allocating " + num(rng.range(100000, 9000000)) + " bytes!"});
            } else if (lang == runtime_lang::java) {
                t = rng.pick(strings{"java.lang.OutOfMemoryError: Java heap space",
                                     "java.lang.OutOfMemoryError: GC overhead limit exceeded",
                                     "container " + sv.name + "-" + num(rng.range(100, 999)) +
                                         " OOMKilled (exit code 137), memory limit " + num(256 * rng.range(2, 8)) +
                                         "Mi exceeded; restarting"});
            } else if (lang == runtime_lang::python) {
                t = rng.pick(strings{"MemoryError: unable to allocate " + num(rng.range(64, 900)) + " MiB for request buffer",
                                     "worker pid " + num(rng.range(1000, 9000)) + " was killed by the OOM killer (signal 9); container OOMKilled, restarting"});
            } else if (lang == runtime_lang::node) {
                t = rng.pick(strings{"FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory",
                                     "container " + sv.name + "-" + num(rng.range(100, 999)) +
                                         " OOMKilled (exit code 137); restarting"});
            } else {
                t = rng.pick(strings{"fatal error: runtime: out of memory",
                                     "container " + sv.name + "-" + num(rng.range(100, 999)) +
                                         " OOMKilled (exit code 137), memory limit " + num(256 * rng.range(2, 8)) +
                                         "Mi exceeded; restarting"});
            }
            break;
        case fault_type::bad_deploy:
            if (lang == runtime_lang::java) {
                t = rng.pick(strings{"java.lang.NullPointerException: Cannot invoke \"com.shop." + package(sv.name) +
                                         ".LineItem.getPrice()\" because \"item\" is null",
                                     "java.lang.NoSuchMethodError: 'void com.shop." + package(sv.name) + "." +
                                         camel(sv.name) + "Request.<init>(java.lang.String)'",
                                     "java.lang.ClassCastException: class java.lang.String cannot be cast to class java.lang.Long"});
            } else if (lang == runtime_lang::python) {
                t = rng.pick(strings{"TypeError: 'NoneType' object is not subscriptable",
                                     "AttributeError: 'Order' object has no attribute 'currency_code'",
                                     "KeyError: 'line_items' in serializer output"});
            } else if (lang == runtime_lang::node) {
                t = rng.pick(strings{"TypeError: Cannot read properties of undefined (reading 'items')",
                                     "ReferenceError: formatPrice is not defined",
                                     "TypeError: cart.lines.map is not a function"});
            } else {
                t = rng.pick(strings{"panic: runtime error: invalid memory address or nil pointer dereference",
                                     "panic: assignment to entry in nil map",
                                     "panic: runtime error: index out of range [3] with length 3"});
            }
            break;
        case fault_type::certificate_expiry: {
            // one certificate, one expiry time: a little before the first failure
            const std::string not_after = iso_s((p.fault_start - static_cast<time_ms>(p.seed % 9) * 60000) / 60000 * 60000);
            t = rng.pick(strings{
                "x509: certificate has expired or is not yet valid: current time " + iso_s(now) + " is after " + not_after,
                lang == runtime_lang::java
                    ? "javax.net.ssl.SSLHandshakeException: PKIX path validation failed: java.security.cert.CertPathValidatorException: validity check failed (certificate expired)"
                    : "ssl.SSLCertVerificationError: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed: certificate has expired",
                "TLS handshake with " + ext + ":443 failed: client certificate /etc/certs/client.pem expired (notAfter=" +
                    not_after + ")"});
            break;
        }
        case fault_type::disk_full:
            switch (sv.kind) {
                case service_kind::sql_store:
                    t = rng.pick(strings{"could not extend file \"base/16384/" + num(rng.range(2000, 90000)) +
                                             "\": No space left on device",
                                         "could not write to file \"pg_wal/xlogtemp." + num(rng.range(100, 9999)) +
                                             "\": No space left on device",
                                         "PANIC: could not write to file \"pg_wal/000000010000000A000000" +
                                             num(rng.range(10, 99)) + "\": No space left on device"});
                    break;
                case service_kind::queue_store:
                    t = rng.pick(strings{"Error while appending records to orders-" + num(rng.range(0, 11)) +
                                             " in dir /var/lib/kafka/data (java.io.IOException: No space left on device)",
                                         "Shutdown broker because all log dirs in /var/lib/kafka/data have failed: No space left on device"});
                    break;
                case service_kind::search_store:
                    t = rng.pick(strings{"flood stage disk watermark [95%] exceeded on [es-node-" + num(rng.range(1, 3)) +
                                             "], all indices on this node will be marked read-only",
                                         "failed to write translog: java.io.IOException: No space left on device"});
                    break;
                case service_kind::cache_store:
                    t = rng.pick(strings{"Write error saving DB on disk: No space left on device",
                                         "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk (No space left on device)"});
                    break;
                default:
                    t = rng.pick(strings{"write /var/lib/" + sv.name + "/spool/batch-" + num(rng.range(100, 999)) +
                                             ".tmp: no space left on device",
                                         "OSError: [Errno 28] No space left on device: '/var/log/" + sv.name + "/app.log'",
                                         "ENOSPC: no space left on device, write"});
            }
            break;
        case fault_type::upstream_timeout:
            t = rng.pick(strings{"dial tcp " + ip + ":443: i/o timeout (" + ext + ")",
                                 "connect ETIMEDOUT " + ip + ":443 while calling " + ext,
                                 "dial tcp " + ip + ":443: connect: no route to host (" + ext + ")",
                                 "requests.exceptions.ConnectTimeout: HTTPSConnectionPool(host='" + ext +
                                     "', port=443): Max retries exceeded (connect timeout=5)",
                                 "connect to " + ext + " (" + ip + ":443) failed: network is unreachable"});
            break;
        case fault_type::rate_limited:
            t = rng.pick(strings{ext + " responded 429 Too Many Requests (retry-after=" + num(rng.range(5, 60)) + "s)",
                                 "rate limit exceeded for API key ****" + rng.hex(4) + " at " + ext + ": " +
                                     num(100 * rng.range(5, 50)) + " requests/min allowed",
                                 "RateLimitError: request throttled by " + ext + ", retry in " + num(rng.range(5, 60)) + "s",
                                 "HTTP 429 from https://" + ext + "/v1/requests: too many requests"});
            break;
        case fault_type::cache_stampede: {
            const std::string key = rng.pick(strings{"catalog:home", "price:index", "product:top100", "session:config",
                                                     "inventory:summary"});
            t = rng.pick(strings{"cache stampede on key '" + key + "': " + num(rng.range(80, 900)) + " concurrent recomputations",
                                 "timed out waiting for cache fill lock on '" + key + "' after " + num(rng.range(2, 9) * 1000) +
                                     "ms (" + num(rng.range(50, 600)) + " waiters)",
                                 "cache miss storm: hit ratio fell to 0.0" + num(rng.range(1, 9)) + " after mass expiry of '" +
                                     key.substr(0, key.find(':') + 1) + "*', " + num(rng.range(100, 900)) +
                                     " backend loads in flight",
                                 "recompute of hot key '" + key + "' took " + num(rng.range(3000, 12000)) + "ms; " +
                                     num(rng.range(50, 600)) + " requests blocked behind it"});
            break;
        }
        case fault_type::config_error:
            t = rng.pick(strings{"invalid configuration: key '" + p.config_key + "' has value '" + p.config_new +
                                     "', which is not valid",
                                 "failed to load config: " + p.config_key + ": cannot parse '" + p.config_new + "'",
                                 "configuration error: " + p.config_key + "=" + p.config_new +
                                     " rejected by validator; requests cannot be served",
                                 "config reload failed for " + p.config_key + " (value '" + p.config_new +
                                     "'); handler disabled"});
            break;
        case fault_type::slow_query:
            if (sv.kind == service_kind::search_store) {
                t = rng.pick(strings{"[index.search.slowlog.query] [products][" + num(rng.range(0, 4)) + "] took[" +
                                         fixed1(rng.real(5, 30)) + "s], took_millis[" + num(rng.range(5000, 30000)) +
                                         "], search timed out",
                                     "slow query: search on [products] took " + num(rng.range(5000, 30000)) +
                                         "ms (timeout 5000ms), shard query phase exceeded"});
            } else {
                t = rng.pick(strings{"canceling statement due to statement timeout; statement: " + sql_statement(rng),
                                     "slow query exceeded " + num(rng.range(3, 10) * 1000) + " ms: " + sql_statement(rng),
                                     "query took " + num(rng.range(5000, 40000)) + " ms (seq scan on orders, rows=" +
                                         num(rng.range(1000000, 9000000)) + "): " + sql_statement(rng)});
            }
            break;
        case fault_type::deadlock:
            t = rng.pick(strings{"deadlock detected: Process " + num(rng.range(1000, 30000)) +
                                     " waits for ShareLock on transaction " + num(rng.range(100000, 999999)) +
                                     "; blocked by process " + num(rng.range(1000, 30000)),
                                 "canceling statement due to lock timeout: relation \"inventory_items\" is locked by process " +
                                     num(rng.range(1000, 30000)),
                                 "deadlock detected while updating order_items; transaction " +
                                     num(rng.range(100000, 999999)) + " rolled back"});
            break;
        case fault_type::dns_failure: {
            const std::string dep = any_callee(p, s, rng);
            t = rng.pick(strings{"lookup " + dep + ".prod.svc.cluster.local on 10.96.0.10:53: no such host",
                                 lang == runtime_lang::java
                                     ? "java.net.UnknownHostException: " + dep + ".prod.svc.cluster.local: Name or service not known"
                                     : "getaddrinfo EAI_AGAIN " + dep + ".prod.svc.cluster.local",
                                 "socket.gaierror: [Errno -3] Temporary failure in name resolution (" + dep + ")"});
            break;
        }
    }
    maybe_stack(p, s, rng, m, 0.35);
    return m;
}

std::string fault_span_error(const incident_plan& p, int s, prng& rng) {
    const service& sv = svc_of(p, s);
    switch (p.fault) {
        case fault_type::connection_pool_exhaustion: return "connection pool exhausted";
        case fault_type::oom_kill: return rng.chance(0.5) ? "OOMKilled" : "out of memory";
        case fault_type::bad_deploy: return rng.chance(0.5) ? "500 Internal Server Error" : "unhandled exception";
        case fault_type::certificate_expiry: return "x509: certificate has expired";
        case fault_type::disk_full: return "No space left on device";
        case fault_type::upstream_timeout: return "dial tcp: i/o timeout (" + sv.external + ")";
        case fault_type::rate_limited: return "429 Too Many Requests from " + sv.external;
        case fault_type::cache_stampede: return "cache fill lock timeout";
        case fault_type::config_error: return "invalid configuration";
        case fault_type::slow_query: return "statement timeout";
        case fault_type::deadlock: return "deadlock detected";
        case fault_type::dns_failure: return "no such host";
    }
    return "error";
}

std::string fault_warning(const incident_plan& p, int s, prng& rng) {
    const service& sv = svc_of(p, s);
    switch (p.fault) {
        case fault_type::connection_pool_exhaustion:
            return "connection pool usage " + num(rng.range(96, 100)) + "% (waiting=" + num(rng.range(10, 300)) + ")";
        case fault_type::oom_kill: return "memory usage " + num(rng.range(92, 99)) + "% of limit";
        case fault_type::disk_full: return "disk usage " + num(rng.range(97, 100)) + "% on /var/lib/" + sv.name;
        case fault_type::rate_limited: return "retrying request to " + sv.external + " after 429 (attempt 2/3)";
        case fault_type::cache_stampede: return "cache hit ratio 0.0" + num(rng.range(1, 9)) + " (expected > 0.90)";
        case fault_type::slow_query:
        case fault_type::deadlock: return "lock wait queue length " + num(rng.range(20, 200));
        default: return "";
    }
}

log_message caller_error(const incident_plan& p, int caller, int callee, bool timeout, prng& rng) {
    const service& c = svc_of(p, callee);
    log_message m;
    m.lvl = level::error;
    const std::string url = "http://" + c.name + ":8080" + c.operation.substr(c.operation.find(' ') + 1);
    // a service's client code words its failures one way: one phrasing per caller
    const uint64_t style = per_service_choice(p, caller, 5);
    if (timeout) {
        m.text = nth(style, strings{"call to " + c.name + " timed out after " + num(rng.range(2, 5) * 1000) + "ms",
                                  "upstream timeout: " + c.operation + " on " + c.name + " exceeded deadline",
                                  "io.grpc.StatusRuntimeException: DEADLINE_EXCEEDED: deadline exceeded calling " + c.name,
                                  "error calling " + c.name + ": context deadline exceeded",
                                  "request to " + url + " failed: 504 Gateway Timeout"});
    } else {
        m.text = nth(style, strings{"upstream request failed: " + c.operation.substr(0, c.operation.find(' ')) + " " + url +
                                      " -> 503 Service Unavailable",
                                  "HTTP 502 from upstream " + c.name,
                                  "call to " + c.name + " failed with status 500",
                                  "circuit breaker '" + c.name + "' is OPEN, failing fast",
                                  "error calling " + c.name + ": unexpected status 500"});
    }
    maybe_stack(p, caller, rng, m, 0.15);
    return m;
}

std::string caller_span_error(const incident_plan& p, int callee, bool timeout, prng&) {
    const service& c = svc_of(p, callee);
    return timeout ? "timeout calling " + c.name : "upstream " + c.name + " returned 5xx";
}

std::string request_message(const incident_plan& p, int s, prng& rng, double duration_ms) {
    const service& sv = svc_of(p, s);
    switch (sv.kind) {
        case service_kind::sql_store:
            return "statement ok: " + sql_statement(rng).substr(0, 40) + "... (" + fixed1(duration_ms) + " ms)";
        case service_kind::cache_store: return "GET " + rng.pick(strings{"session:", "price:", "cart:"}) + rng.hex(6) + " hit";
        case service_kind::queue_store: return "appended batch to orders-" + num(rng.range(0, 11)) + " offset " + num(rng.range(100000, 999999));
        case service_kind::search_store: return "query on [products] took " + num(static_cast<int64_t>(duration_ms)) + "ms";
        default: break;
    }
    switch (rng.below(3)) {
        case 0: return "request completed op=\"" + sv.operation + "\" status=200 duration_ms=" + fixed1(duration_ms);
        case 1: return sv.operation + " 200 " + fixed1(duration_ms) + "ms";
        default: return "handled " + sv.operation + " in " + fixed1(duration_ms) + " ms";
    }
}

log_message background_message(const incident_plan& p, int s, prng& rng, bool allow_warn) {
    const service& sv = svc_of(p, s);
    log_message m;
    m.lvl = level::info;
    if (allow_warn && rng.chance(0.12)) {
        m.lvl = level::warn;
        // a chatty service repeats the same one or two warnings
        m.text = nth(per_service_choice(p, s, 7) + 3 * rng.below(2), strings{
            "slow request " + sv.operation + " took " + num(rng.range(600, 1500)) + "ms",
            "deprecated setting 'server.compression' is set; it will be removed in the next release",
            "heap usage " + num(rng.range(70, 85)) + "% after GC",
            "certificate for *.internal.shop.example expires in " + num(rng.range(9, 40)) + " days",
            "disk usage " + num(rng.range(70, 85)) + "% on /var/log",
            "connection pool usage " + num(rng.range(60, 80)) + "%",
            "retrying request after transient error (attempt 1/3) succeeded"});
        return m;
    }
    if (is_store(sv.kind)) {
        switch (sv.kind) {
            case service_kind::sql_store:
                m.text = rng.pick(strings{"checkpoint complete: wrote " + num(rng.range(100, 9000)) + " buffers",
                                          "automatic vacuum of table \"shop.public.orders\": index scans: 1",
                                          "connection authorized: user=app database=shop"});
                break;
            case service_kind::cache_store:
                m.text = rng.pick(strings{"DB saved on disk", "Background saving started by pid " + num(rng.range(100, 9999)),
                                          num(rng.range(1, 99)) + " changes in 60 seconds. Saving..."});
                break;
            case service_kind::queue_store:
                m.text = rng.pick(strings{"[GroupCoordinator 1]: Stabilized group orders-consumers generation " + num(rng.range(1, 90)),
                                          "Deleted log segment orders-" + num(rng.range(0, 11)) + "/000000000000" + num(rng.range(1000, 9999)) + ".log",
                                          "[ReplicaManager broker=1] ISR for partition orders-" + num(rng.range(0, 11)) + " is stable"});
                break;
            default:
                m.text = rng.pick(strings{"[gc][young] overhead, spent [" + num(rng.range(10, 90)) + "ms] collecting in the last [1s]",
                                          "cluster health status changed from [YELLOW] to [GREEN]",
                                          "refresh of index [products] took " + num(rng.range(5, 80)) + "ms"});
        }
        return m;
    }
    m.text = rng.pick(strings{"GET /healthz 200", "health check ok",
                              "metrics flushed: " + num(rng.range(50, 400)) + " series",
                              sv.lang == runtime_lang::java ? "GC pause (G1 Evacuation Pause) " + num(rng.range(3, 40)) + "ms"
                                                            : "goroutines=" + num(rng.range(40, 400)) + " heap_mb=" + num(rng.range(40, 300)),
                              "dependency health ok",
                              "scheduled job refresh-" + package(sv.name) + " finished in " + fixed1(rng.real(0.1, 3)) + "s"});
    return m;
}

log_message red_herring_message(const incident_plan& p, int s, prng& rng) {
    const service& sv = svc_of(p, s);
    log_message m;
    m.lvl = level::error;
    const std::string ext = sv.external.empty() ? std::string("smtp.mailgun.org") : sv.external;
    // one or two recurring messages, not a different one each time
    const uint64_t which = per_service_choice(p, s, 6) + (rng.chance(0.3) ? 1 : 0);
    m.text = nth(which, strings{
        "batch job nightly-export-" + package(sv.name) + " failed: destination bucket s3://exports-" + package(sv.name) +
            " access denied",
        "failed to refresh feature flags from flagd: connection refused (using cached flags)",
        "failed to send webhook to partner endpoint https://hooks.partner.example/" + rng.hex(6) + ": 404 Not Found",
        "metrics exporter: push to prometheus-pushgateway:9091 failed: context deadline exceeded",
        "background reindex of stale entries failed: invalid cursor " + rng.hex(8),
        "could not publish audit event to " + ext + ": 401 Unauthorized (token rotated?)"});
    return m;
}

}  // namespace incident
