// crl port-report A.json B.json ... [--out DIR] [--json]: the same candidates
// measured on different machines (crl bench results, with their provenance),
// compared as CUDA-L1 compares kernels across GPU kinds (lib/report/port.h).
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "lib/report/port.h"
#include "services/cli/commands.h"

namespace crl::cli {

int PortReportCommand(int argc, char** argv) {
  std::string out;
  bool json = false;
  OptionSet flags("crl port-report",
                  "Compares crl bench results of the same candidates measured on different machines: per candidate\n"
                  "the speedup on each, the ratio to the first, which stop being correct and which lose their\n"
                  "speedup; per machine the mean, median and geomean of the trusted speedups.\n"
                  "usage: crl port-report A.json B.json ... [--out DIR]");
  flags.Add("out", &out, "directory for report.html, report.json and speedups.png (empty: print only)");
  flags.Add("json", &json, "print the report as JSON");
  std::vector<std::string> files;
  absl::Status parsed = flags.Parse(argc, argv, &files);
  if (parsed.ok() && !flags.help_requested() && files.size() < 2) {
    parsed = absl::InvalidArgumentError("at least two results files (crl bench --out) are needed");
  }
  if (!parsed.ok() || flags.help_requested()) return UsageError(flags, parsed);
  std::vector<report::PortSet> sets;
  for (const auto& f : files) {
    auto set = report::ReadPortSet(f);
    if (!set.ok()) return UsageError(flags, set.status());
    sets.push_back(*std::move(set));
  }
  auto compared = report::ComparePorts(sets);
  if (!compared.ok()) return UsageError(flags, compared.status());
  if (json) {
    std::printf("%s\n", report::PortReportJson(*compared, sets).dump(2).c_str());
  } else {
    std::printf("%-40s %10s %8s %8s %9s %9s %9s   %s\n", "machine", "candidates", "correct", "trusted", "mean",
                "median", "geomean", "like for like (n, mean, geomean)");
    for (const auto& m : compared->machines) {
      std::printf("%-40s %10d %8d %8d %8.2fx %8.2fx %8.2fx   %d, %.2fx, %.2fx\n", m.label.c_str(), m.candidates,
                  m.correct, m.trusted, m.mean, m.median, m.geomean, m.common, m.common_mean, m.common_geomean);
    }
    int stops = 0, loses = 0;
    for (const auto& row : compared->rows) {
      for (size_t i = 1; i < row.on.size(); ++i) {
        stops += row.stops_correct[i];
        loses += row.loses_speedup[i];
      }
    }
    std::printf("against %s: %d candidate(s) stop being correct, %d lose their speedup\n",
                compared->machines[0].label.c_str(), stops, loses);
  }
  if (!out.empty()) {
    auto written = report::WritePortReport(*compared, sets, out);
    if (!written.ok()) return Fail(written.status());
    std::fprintf(stderr, "wrote %s\n", absl::StrJoin(*written, ", ").c_str());
  }
  return 0;
}

}  // namespace crl::cli
