// Where this installation keeps what it ships (include/, tasks/, prompts/,
// runner/python/): next to the executable's installation, or in the source
// tree for a build that was never installed.
#ifndef CRL_COMMON_PATHS_H_
#define CRL_COMMON_PATHS_H_

#include <string>

namespace crl {

// The directory of the running executable ("." if unknown).
std::string ExecutableDir();

// A directory shipped with crl (e.g. "include", "tasks/native"), looked up
// under <exe>/.., <exe>/../.., <exe>/../share/crl and the source tree.
// Empty if not found.
std::string FindShippedDir(const std::string& relative);

}  // namespace crl

#endif  // CRL_COMMON_PATHS_H_
