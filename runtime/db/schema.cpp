#include "runtime/db/schema.h"

namespace tachyon::db {
namespace {

// Taken by every migrating process: one migrates, the others then find
// the schema there. The number is "tachyon" in ASCII.
constexpr const char* migration_lock = "SELECT pg_advisory_xact_lock(7449359418046574)";

result<int> read_version(pg_connection& conn) {
    auto r = conn.exec("SELECT coalesce(max(version), 0) AS v FROM tachyon.schema_version");
    if (!r) return r.err();
    return std::stoi(r->get(0, "v"));
}

}  // namespace

const std::vector<migration>& migrations() {
    static const std::vector<migration> all = {
        {1, "runs and their journal events",
         R"sql(
CREATE TABLE tachyon.runs (
    id            text PRIMARY KEY,
    agent         text NOT NULL,
    task          text NOT NULL,
    inputs        json NOT NULL DEFAULT '{}',
    state         text NOT NULL DEFAULT 'queued',
    lease_owner   text,
    lease_epoch   bigint NOT NULL DEFAULT 0,
    lease_expires timestamptz,
    result        json,
    created_at    timestamptz NOT NULL DEFAULT clock_timestamp(),
    started_at    timestamptz,
    finished_at   timestamptz,
    n_claims      integer NOT NULL DEFAULT 0
);
-- what a worker may claim: queued runs, and running ones whose lease may have expired
CREATE INDEX runs_claimable ON tachyon.runs (created_at) WHERE state IN ('queued', 'running');
CREATE TABLE tachyon.events (
    run_id text NOT NULL REFERENCES tachyon.runs (id) ON DELETE CASCADE,
    seq    bigint NOT NULL,
    epoch  bigint NOT NULL,
    event  json NOT NULL,
    PRIMARY KEY (run_id, seq)
);
)sql"},
        {2, "notifications: a run's new events and state changes",
         R"sql(
CREATE FUNCTION tachyon.notify_event() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('tachyon_events', NEW.run_id);
    RETURN NULL;
END $$;
CREATE TRIGGER events_notify AFTER INSERT ON tachyon.events
    FOR EACH ROW EXECUTE FUNCTION tachyon.notify_event();
CREATE FUNCTION tachyon.notify_run() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('tachyon_runs', NEW.id || ' ' || NEW.state);
    RETURN NULL;
END $$;
CREATE TRIGGER runs_notify AFTER INSERT OR UPDATE OF state ON tachyon.runs
    FOR EACH ROW EXECUTE FUNCTION tachyon.notify_run();
)sql"},
        {3, "decisions and cancellation from any serve node; runs listed newest first",
         R"sql(
-- a parked run sent back to the queue: the decisions its worker journals when it resumes it ([] for none)
ALTER TABLE tachyon.runs ADD COLUMN decisions json;
ALTER TABLE tachyon.runs ADD COLUMN cancel_requested boolean NOT NULL DEFAULT false;
CREATE INDEX runs_newest ON tachyon.runs (created_at DESC, id DESC);
)sql"},
        {4, "the trace context a run was queued with",
         R"sql(
-- the W3C traceparent of the request that queued the run: its worker's spans continue that trace (NULL: a trace of its own)
ALTER TABLE tachyon.runs ADD COLUMN traceparent text;
)sql"},
    };
    return all;
}

int schema_version_of_build() { return migrations().back().version; }

result<int> current_schema_version(pg_connection& conn) {
    auto r = conn.exec("SELECT to_regclass('tachyon.schema_version') IS NOT NULL AS present");
    if (!r) return r.err();
    if (r->get(0, "present") != "t") return 0;
    return read_version(conn);
}

result<int> migrate(pg_connection& conn) {
    auto fail = [&](const error& e) -> error {
        (void)conn.exec("ROLLBACK");
        return make_error(e.code, "migrating the database '" + conn.name() + "': " + e.message);
    };
    if (auto st = conn.exec_script("BEGIN"); !st) return fail(st.err());
    if (auto r = conn.exec(migration_lock); !r) return fail(r.err());
    if (auto st = conn.exec_script("CREATE SCHEMA IF NOT EXISTS tachyon;"
                                   "CREATE TABLE IF NOT EXISTS tachyon.schema_version ("
                                   "  version integer PRIMARY KEY, description text NOT NULL,"
                                   "  applied_at timestamptz NOT NULL DEFAULT now())");
        !st)
        return fail(st.err());
    auto before = read_version(conn);
    if (!before) return fail(before.err());
    if (*before > schema_version_of_build())
        return fail(make_error(errc::unsupported, "schema version " + std::to_string(*before) + " is newer than this build's (" +
                                                      std::to_string(schema_version_of_build()) + "); expected a tachyon at least as new"));
    for (const auto& m : migrations()) {
        if (m.version <= *before) continue;
        if (auto st = conn.exec_script(m.sql); !st)
            return fail(make_error(st.err().code, "migration " + std::to_string(m.version) + " (" + m.description + "): " + st.err().message));
        auto r = conn.exec("INSERT INTO tachyon.schema_version (version, description) VALUES ($1, $2)",
                           {std::to_string(m.version), m.description});
        if (!r) return fail(r.err());
    }
    if (auto st = conn.exec_script("COMMIT"); !st) return fail(st.err());
    return *before;
}

}  // namespace tachyon::db
