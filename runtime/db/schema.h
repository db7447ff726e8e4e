// The database schema of runs with `--db`, created and migrated by tachyon.
// Everything lives in the PostgreSQL schema "tachyon":
//
//   tachyon.schema_version  version, description, applied_at: one row per
//                           migration applied; the highest is the schema's
//   tachyon.runs            id, agent, task, inputs (JSON object), state
//                           (queued, running, then the run's end state:
//                           succeeded, failed, ... or a parked one),
//                           lease_owner, lease_epoch, lease_expires, result
//                           (JSON), created_at, started_at, finished_at,
//                           n_claims (how many times a worker took it),
//                           decisions (JSON array: a parked run sent back to
//                           the queue, with what its worker is to journal
//                           when it resumes it; NULL otherwise),
//                           cancel_requested (a serve node asked its worker
//                           to cancel it; NOTIFY tachyon_runs '<id> cancel')
//   tachyon.events          run_id, seq, epoch (the lease epoch of the
//                           writer), event (the journal line as JSON text,
//                           byte for byte what the file journal would hold)
//
// Migrations are numbered from 1 and applied in order, each once, in one
// transaction under an advisory lock: processes that start together on an
// empty database migrate it once. A database whose schema is newer than
// this build is refused (it may hold what this build cannot read).
#pragma once

#include <string>
#include <vector>

#include "base/result.h"
#include "runtime/db/pg_connection.h"

namespace tachyon::db {

struct migration {
    int version = 0;
    std::string description;
    std::string sql;  // one or more statements
};

// The migrations of this build, in order (version 1, 2, ...).
const std::vector<migration>& migrations();
// The version this build migrates to (the last migration's).
int schema_version_of_build();

// Brings the database to this build's schema; returns the version it had
// before (0: empty). Idempotent: a database already there is left as it is.
result<int> migrate(pg_connection& conn);
// The schema version the database has (0: none yet).
result<int> current_schema_version(pg_connection& conn);

}  // namespace tachyon::db
