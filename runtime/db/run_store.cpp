#include "runtime/db/run_store.h"

#include <simdjson.h>

#include <algorithm>

#include "runtime/common/json_util.h"

namespace tachyon::db {
namespace asio = boost::asio;

namespace {

// The statements and parameters of the coroutines below are built as locals
// before they are awaited: GCC 12 rejects temporaries built inside a
// co_await expression ("array used as initializer").

bool is_unique_violation(const error& e) { return e.message.find("SQLSTATE 23505") != std::string::npos; }

int64_t to_i64(const std::string& s) { return s.empty() ? 0 : std::stoll(s); }

}  // namespace

std::string inputs_json(const std::map<std::string, std::string>& inputs) {
    std::string out = "{";
    for (const auto& [k, v] : inputs) {
        if (out.size() > 1) out += ',';
        json::append_quoted(out, k);
        out += ':';
        json::append_quoted(out, v);
    }
    return out + "}";
}

result<std::map<std::string, std::string>> parse_inputs_json(const std::string& text, const std::string& run_id) {
    simdjson::dom::parser parser;
    simdjson::dom::object obj;
    if (parser.parse(text).get_object().get(obj) != simdjson::SUCCESS)
        return make_error(errc::parse_error, "run '" + run_id + "': inputs: expected a JSON object of strings");
    std::map<std::string, std::string> out;
    for (auto field : obj) {
        std::string_view v;
        if (field.value.get_string().get(v) != simdjson::SUCCESS)
            return make_error(errc::parse_error, "run '" + run_id + "': inputs." + std::string(field.key) + ": expected a string");
        out.emplace(std::string(field.key), std::string(v));
    }
    return out;
}

std::string decisions_json(const std::vector<call_decision>& decisions) {
    std::string out = "[";
    for (const auto& d : decisions) {
        if (out.size() > 1) out += ',';
        out += "{\"call_id\":";
        json::append_quoted(out, d.call_id);
        out += ",\"action\":";
        json::append_quoted(out, d.action);
        out += ",\"reason\":";
        json::append_quoted(out, d.reason);
        out += '}';
    }
    return out + "]";
}

result<std::vector<call_decision>> parse_decisions_json(const std::string& text, const std::string& run_id) {
    simdjson::dom::parser parser;
    simdjson::dom::array arr;
    const auto bad = [&] {
        return make_error(errc::parse_error, "run '" + run_id + "': decisions: expected a JSON array of {call_id, action, reason}");
    };
    if (parser.parse(text).get_array().get(arr) != simdjson::SUCCESS) return bad();
    std::vector<call_decision> out;
    for (auto item : arr) {
        std::string_view id, action, reason;
        if (item["call_id"].get_string().get(id) != simdjson::SUCCESS || item["action"].get_string().get(action) != simdjson::SUCCESS)
            return bad();
        if (item["reason"].get_string().get(reason) != simdjson::SUCCESS) reason = {};
        out.push_back({std::string(id), std::string(action), std::string(reason)});
    }
    return out;
}

asio::awaitable<status> enqueue(pg_connection& conn, const std::string& id, const std::string& agent, const std::string& task,
                                const std::map<std::string, std::string>& inputs, const std::string& traceparent) {
    std::string sql = "INSERT INTO tachyon.runs (id, agent, task, inputs, traceparent) VALUES ($1, $2, $3, $4, $5)";
    std::vector<pg_value> params = {id, agent, task, inputs_json(inputs), traceparent.empty() ? pg_value{} : pg_value{traceparent}};
    auto r = co_await conn.async_exec(std::move(sql), std::move(params));
    if (!r) {
        if (is_unique_violation(r.err())) co_return make_error(errc::invalid_argument, "run id '" + id + "': taken");
        co_return r.err();
    }
    co_return status{};
}

asio::awaitable<result<std::vector<claimed_run>>> claim(pg_connection& conn, const std::string& owner, std::chrono::milliseconds lease,
                                                        int max_runs) {
    // SKIP LOCKED: a row another worker is claiming right now is passed
    // over, not waited for, and never taken twice. The new epoch fences
    // off whoever held the run before.
    std::string sql = "WITH c AS (SELECT id FROM tachyon.runs"
        "           WHERE state = 'queued' OR (state = 'running' AND lease_expires < clock_timestamp())"
        "           ORDER BY created_at LIMIT $3 FOR UPDATE SKIP LOCKED)"
        " UPDATE tachyon.runs r SET state = 'running', lease_owner = $1, lease_epoch = r.lease_epoch + 1,"
        "   lease_expires = clock_timestamp() + $2::bigint * interval '1 millisecond',"
        "   started_at = coalesce(r.started_at, clock_timestamp()), n_claims = r.n_claims + 1"
        " FROM c WHERE r.id = c.id"
        " RETURNING r.id, r.agent, r.task, r.inputs, r.lease_epoch, r.n_claims, r.decisions, r.cancel_requested,"
        "   (SELECT count(*) FROM tachyon.events e WHERE e.run_id = r.id) AS n_events";
    std::vector<pg_value> params = {owner, std::to_string(lease.count()), std::to_string(std::max(1, max_runs))};
    auto r = co_await conn.async_exec(std::move(sql), std::move(params));
    if (!r) co_return r.err();
    std::vector<claimed_run> out;
    for (size_t i = 0; i < r->rows.size(); ++i) {
        claimed_run c;
        c.id = r->get(i, "id");
        c.agent = r->get(i, "agent");
        c.task = r->get(i, "task");
        auto inputs = parse_inputs_json(r->get(i, "inputs"), c.id);
        if (!inputs) co_return inputs.err();
        c.inputs = std::move(inputs).value();
        c.epoch = to_i64(r->get(i, "lease_epoch"));
        c.n_claims = static_cast<int>(to_i64(r->get(i, "n_claims")));
        c.n_events = to_i64(r->get(i, "n_events"));
        c.cancel_requested = r->get(i, "cancel_requested") == "t";
        if (const std::string d = r->get(i, "decisions"); !d.empty()) {
            auto decisions = parse_decisions_json(d, c.id);
            if (!decisions) co_return decisions.err();
            c.resume_requested = true;
            c.decisions = std::move(decisions).value();
        }
        out.push_back(std::move(c));
    }
    co_return out;
}

asio::awaitable<result<bool>> renew(pg_connection& conn, const std::string& id, int64_t epoch, std::chrono::milliseconds lease,
                                    bool* cancel_requested) {
    std::string sql = "UPDATE tachyon.runs SET lease_expires = clock_timestamp() + $3::bigint * interval '1 millisecond'"
        " WHERE id = $1 AND lease_epoch = $2 AND state = 'running' RETURNING cancel_requested";
    std::vector<pg_value> params = {id, std::to_string(epoch), std::to_string(lease.count())};
    auto r = co_await conn.async_exec(std::move(sql), std::move(params));
    if (!r) co_return r.err();
    if (cancel_requested) *cancel_requested = r->rows.size() == 1 && r->get(0, "cancel_requested") == "t";
    co_return r->rows.size() == 1;
}

asio::awaitable<result<bool>> finish(pg_connection& conn, const std::string& id, int64_t epoch, const std::string& state,
                                     const std::string& result_json) {
    std::string sql = "UPDATE tachyon.runs SET state = $3, result = $4, lease_owner = NULL, lease_expires = NULL, decisions = NULL,"
        " finished_at = clock_timestamp()"
        " WHERE id = $1 AND lease_epoch = $2 AND state = 'running'";
    std::vector<pg_value> params = {id, std::to_string(epoch), state, result_json};
    auto r = co_await conn.async_exec(std::move(sql), std::move(params));
    if (!r) co_return r.err();
    co_return r->affected == 1;
}

asio::awaitable<result<bool>> request_resume(pg_connection& conn, const std::string& id, int64_t epoch,
                                             const std::vector<call_decision>& decisions) {
    // Two nodes deciding at once: the row lock orders them, and the second
    // finds the run queued, not parked, and changes nothing.
    std::string sql = "UPDATE tachyon.runs SET state = 'queued', decisions = $3, result = NULL, finished_at = NULL, cancel_requested = false"
        " WHERE id = $1 AND lease_epoch = $2 AND state IN ('needs_attention', 'awaiting_approval')";
    std::vector<pg_value> params = {id, std::to_string(epoch), decisions_json(decisions)};
    auto r = co_await conn.async_exec(std::move(sql), std::move(params));
    if (!r) co_return r.err();
    co_return r->affected == 1;
}

asio::awaitable<result<std::optional<std::string>>> request_cancel(pg_connection& conn, const std::string& id) {
    // A queued run with no journal yet has nothing to journal: it ends here.
    // One with a journal (a parked run sent back to the queue) is resumed by
    // a worker that finds the request and ends it cancelled in its journal.
    // SET reads the row as it was; RETURNING gives it as it is now.
    std::string sql = "WITH u AS (UPDATE tachyon.runs r SET cancel_requested = true,"
        "   state = CASE WHEN r.state = 'queued' AND NOT EXISTS (SELECT 1 FROM tachyon.events e WHERE e.run_id = r.id)"
        "                THEN 'cancelled' ELSE r.state END,"
        "   result = CASE WHEN r.state = 'queued' AND NOT EXISTS (SELECT 1 FROM tachyon.events e WHERE e.run_id = r.id)"
        "                 THEN $2::json ELSE r.result END,"
        "   finished_at = CASE WHEN r.state = 'queued' AND NOT EXISTS (SELECT 1 FROM tachyon.events e WHERE e.run_id = r.id)"
        "                 THEN clock_timestamp() ELSE r.finished_at END"
        "   WHERE r.id = $1 AND r.state IN ('queued', 'running') RETURNING r.id, r.state)"
        " SELECT state, pg_notify('tachyon_runs', id || ' cancel') FROM u";
    std::vector<pg_value> params = {
        id, std::string(R"({"answer":null,"verified":false,"steps":0,"error":"cancelled before a worker started it","journal":null})")};
    auto r = co_await conn.async_exec(std::move(sql), std::move(params));
    if (!r) co_return r.err();
    if (r->rows.empty()) co_return std::optional<std::string>{};
    co_return std::optional<std::string>(r->get(0, "state"));
}

namespace {
run_row run_row_of(const pg_result& r, size_t i) {
    run_row row;
    row.id = r.get(i, "id");
    row.agent = r.get(i, "agent");
    row.task = r.get(i, "task");
    row.state = r.get(i, "state");
    row.lease_owner = r.get(i, "lease_owner");
    row.lease_epoch = to_i64(r.get(i, "lease_epoch"));
    row.result_json = r.get(i, "result");
    row.created = to_i64(r.get(i, "created"));
    row.n_claims = static_cast<int>(to_i64(r.get(i, "n_claims")));
    return row;
}
constexpr const char* run_columns = "id, agent, task, state, lease_owner, lease_epoch, coalesce(result::text, 'null') AS result,"
                                    "  extract(epoch FROM created_at)::bigint AS created, n_claims";
}  // namespace

asio::awaitable<result<std::pair<std::vector<run_row>, bool>>> list_runs(pg_connection& conn, const run_page_query& q) {
    // One more than asked: whether another page follows.
    const int limit = std::max(1, q.limit);
    std::string sql = std::string("SELECT ") + run_columns +
        ", (SELECT count(*) FROM tachyon.events e WHERE e.run_id = r.id) AS n_events FROM tachyon.runs r"
        " WHERE ($1::text IS NULL OR r.state = $1)"
        "   AND ($2::text IS NULL OR (r.created_at, r.id) < (SELECT c.created_at, c.id FROM tachyon.runs c WHERE c.id = $2))"
        " ORDER BY r.created_at DESC, r.id DESC LIMIT $3";
    std::vector<pg_value> params = {q.state.empty() ? pg_value{} : pg_value{q.state}, q.after.empty() ? pg_value{} : pg_value{q.after},
                                    std::to_string(limit + 1)};
    auto r = co_await conn.async_exec(std::move(sql), std::move(params));
    if (!r) co_return r.err();
    std::vector<run_row> rows;
    for (size_t i = 0; i < r->rows.size() && static_cast<int>(i) < limit; ++i) {
        rows.push_back(run_row_of(*r, i));
        rows.back().n_events = to_i64(r->get(i, "n_events"));
    }
    co_return std::make_pair(std::move(rows), static_cast<int>(r->rows.size()) > limit);
}

asio::awaitable<result<std::optional<run_row>>> get_run(pg_connection& conn, const std::string& id) {
    std::string sql = std::string("SELECT ") + run_columns + " FROM tachyon.runs WHERE id = $1";
    std::vector<pg_value> params = {id};
    auto r = co_await conn.async_exec(std::move(sql), std::move(params));
    if (!r) co_return r.err();
    if (r->rows.empty()) co_return std::optional<run_row>{};
    co_return std::optional<run_row>(run_row_of(*r, 0));
}

namespace {
std::vector<std::pair<int64_t, std::string>> event_rows(const pg_result& r) {
    std::vector<std::pair<int64_t, std::string>> out;
    out.reserve(r.rows.size());
    for (size_t i = 0; i < r.rows.size(); ++i) out.emplace_back(to_i64(r.get(i, "seq")), r.get(i, "event"));
    return out;
}
}  // namespace

asio::awaitable<result<std::vector<std::pair<int64_t, std::string>>>> events_since(pg_connection& conn, const std::string& id,
                                                                                   int64_t from) {
    std::string sql = "SELECT seq, event FROM tachyon.events WHERE run_id = $1 AND seq >= $2 ORDER BY seq";
    std::vector<pg_value> params = {id, std::to_string(from)};
    auto r = co_await conn.async_exec(std::move(sql), std::move(params));
    if (!r) co_return r.err();
    co_return event_rows(*r);
}

asio::awaitable<result<db_usage>> usage(pg_connection& conn) {
    std::string sql = "SELECT (SELECT count(*) FROM tachyon.runs) AS n_runs, (SELECT count(*) FROM tachyon.events) AS n_events,"
        " pg_total_relation_size('tachyon.runs') AS runs_bytes, pg_total_relation_size('tachyon.events') AS events_bytes";
    std::vector<pg_value> params = {};
    auto r = co_await conn.async_exec(std::move(sql), std::move(params));
    if (!r) co_return r.err();
    db_usage u;
    u.n_runs = to_i64(r->get(0, "n_runs"));
    u.n_events = to_i64(r->get(0, "n_events"));
    u.runs_bytes = to_i64(r->get(0, "runs_bytes"));
    u.events_bytes = to_i64(r->get(0, "events_bytes"));
    co_return u;
}

result<bool> append_event(pg_connection& conn, const std::string& id, int64_t epoch, int64_t seq, const std::string& line) {
    // Fencing: the row is written only while the run is held at `epoch`.
    // FOR SHARE makes the check and the insert one step against a claim:
    // a claim that commits first leaves this with no row to insert; one
    // that comes after waits for this insert and then moves the epoch on.
    auto r = conn.exec(
        "INSERT INTO tachyon.events (run_id, seq, epoch, event)"
        " SELECT id, $2, lease_epoch, $4 FROM tachyon.runs WHERE id = $1 AND lease_epoch = $3 AND state = 'running' FOR SHARE",
        {id, std::to_string(seq), std::to_string(epoch), line});
    if (!r) {
        if (is_unique_violation(r.err()))
            return make_error(errc::invalid_argument, "run '" + id + "': event seq " + std::to_string(seq) + " is in its journal already");
        return r.err();
    }
    return r->affected == 1;
}

result<bool> append_events(pg_connection& conn, const std::string& id, int64_t epoch, int64_t first_seq,
                           const std::vector<std::string_view>& lines) {
    if (lines.empty()) return true;
    // The lines as one JSON array: json_array_elements gives each back as
    // its text was, in order. Fenced as append_event is.
    std::string array = "[";
    for (size_t i = 0; i < lines.size(); ++i) {
        if (i) array += ',';
        array += lines[i];
    }
    array += ']';
    auto r = conn.exec(
        "INSERT INTO tachyon.events (run_id, seq, epoch, event)"
        " SELECT r.id, $2::bigint + l.n - 1, r.lease_epoch, l.event"
        " FROM tachyon.runs r, json_array_elements($4::json) WITH ORDINALITY AS l(event, n)"
        " WHERE r.id = $1 AND r.lease_epoch = $3 AND r.state = 'running' FOR SHARE OF r",
        {id, std::to_string(first_seq), std::to_string(epoch), array});
    if (!r) {
        if (is_unique_violation(r.err()))
            return make_error(errc::invalid_argument, "run '" + id + "': events from seq " + std::to_string(first_seq) + " are in its journal already");
        return r.err();
    }
    return r->affected == static_cast<int64_t>(lines.size());
}

result<std::vector<std::pair<int64_t, std::string>>> read_events(pg_connection& conn, const std::string& id) {
    auto r = conn.exec("SELECT seq, event FROM tachyon.events WHERE run_id = $1 ORDER BY seq", {id});
    if (!r) return r.err();
    return event_rows(*r);
}

}  // namespace tachyon::db
