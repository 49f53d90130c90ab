// The orchestrator's --store: which StoreInterface, from one string.
//   ""                          SQLite at <data_dir>/orchestrator.db (the default)
//   "sqlite:PATH"               SQLite at PATH
//   "postgresql://..." or "postgres://..."  PostgreSQL (a libpq URI; the
//                               password from the URI, PGPASSWORD or a
//                               passfile, as libpq reads them)
#ifndef CRL_SERVICES_ORCHESTRATOR_OPEN_STORE_H_
#define CRL_SERVICES_ORCHESTRATOR_OPEN_STORE_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "services/orchestrator/store.h"

namespace crl::orchestrator {

absl::StatusOr<std::unique_ptr<StoreInterface>> OpenStore(const std::string& store, const std::string& data_dir);

// Whether this build has the PostgreSQL store (libpqxx was found).
bool HasPostgresStore();

}  // namespace crl::orchestrator

#endif  // CRL_SERVICES_ORCHESTRATOR_OPEN_STORE_H_
