// The store's schema, one list of versioned migrations for every backend:
// migration i takes a database from schema version i to i + 1 (append only;
// a database newer than the binary is refused). The dialects differ only in
// type names, substituted here.
#ifndef CRL_SERVICES_ORCHESTRATOR_STORE_SCHEMA_H_
#define CRL_SERVICES_ORCHESTRATOR_STORE_SCHEMA_H_

#include <string>
#include <vector>

namespace crl::orchestrator {

enum class SqlDialect { kSqlite, kPostgres };

const std::vector<std::string>& StoreMigrations(SqlDialect dialect);

// The schema version this binary writes (the number of migrations).
int StoreSchemaVersion();

}  // namespace crl::orchestrator

#endif  // CRL_SERVICES_ORCHESTRATOR_STORE_SCHEMA_H_
