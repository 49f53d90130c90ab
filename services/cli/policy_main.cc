// crl-policy: the CLI commands that load a policy with LibTorch (`crl
// policy ...` and `crl sample --policy DIR`); `crl` runs this binary for
// them, and it can be run directly the same way: crl-policy policy init ...
#include <cstdio>
#include <string>

#include "common/options.h"
#include "services/cli/commands.h"

int main(int argc, char** argv) {
  const std::string command = argc < 2 ? "" : argv[1];
  if (command == "policy") return crl::cli::PolicyCommand(argc - 1, argv + 1);
  if (command == "sample") return crl::cli::SampleCommand(argc - 1, argv + 1);
  std::fprintf(stderr, "usage: crl-policy policy SUBCOMMAND ... | crl-policy sample ... (as `crl policy`, `crl sample`)\n");
  return (argc == 2 && crl::IsHelpArg(argv[1])) ? 0 : 2;
}
