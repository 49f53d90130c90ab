// The orchestrator's --store: which StoreInterface, from one string.
//   ""                          SQLite at <data_dir>/orchestrator.db (the default)
//   "sqlite:PATH"               SQLite at PATH
//   "postgresql://..." or "postgres://..."  PostgreSQL (a libpq URI; the
//                               password from the URI, PGPASSWORD or a
//                               passfile, as libpq reads them)
// Whichever it is, code and logs are kept content-addressed on disk under
// `content_dir` (default <data_dir>/content; content_backed_store.h), and
// the rows hold their addresses.
#ifndef CRL_SERVICES_ORCHESTRATOR_OPEN_STORE_H_
#define CRL_SERVICES_ORCHESTRATOR_OPEN_STORE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "services/orchestrator/store.h"

namespace crl::orchestrator {

// INVALID_ARGUMENT when neither `data_dir` nor `content_dir` is given.
absl::StatusOr<std::unique_ptr<StoreInterface>> OpenStore(const std::string& store, const std::string& data_dir,
                                                          const std::string& content_dir = "");

// Whether this build has the PostgreSQL store (libpqxx was found).
bool HasPostgresStore();

}  // namespace crl::orchestrator

#endif  // CRL_SERVICES_ORCHESTRATOR_OPEN_STORE_H_
