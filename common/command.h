// Output of a trusted command run through the shell (start-up probes and
// provenance: tool versions, nvidia-smi, the interpreter's torch).
#ifndef CRL_COMMON_COMMAND_H_
#define CRL_COMMON_COMMAND_H_

#include <string>

namespace crl {

// First (or last) non-empty line of `command`'s standard output, trailing
// whitespace removed; "" when it prints nothing or cannot start. Standard
// error is discarded.
std::string CommandLine(const std::string& command, bool last);

}  // namespace crl

#endif  // CRL_COMMON_COMMAND_H_
