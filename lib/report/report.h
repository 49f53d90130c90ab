// A run's report: report.html (self-contained: the plots are embedded, no
// script, opens offline), the same plots as PNG files, summary.json (the
// numbers behind the plots, for the trained run and its untrained twin) and
// summary.txt (what `crl quickstart` prints at the end). What `crl run
// export --format report` writes for any run (docs/report.md).
#ifndef CRL_LIB_REPORT_REPORT_H_
#define CRL_LIB_REPORT_REPORT_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "crl/v1/orchestrator.pb.h"
#include "lib/report/summary.h"

namespace crl::report {

struct ReportInput {
  v1::Run run;
  std::vector<v1::Variant> variants;
  // The untrained twin (same spec, training: none), when there is one.
  bool has_twin = false;
  v1::Run twin;
  std::vector<v1::Variant> twin_variants;
  // The run's "training" events (the trainer's statistics at each sync):
  // its training curve, plotted as training.png when there are any.
  std::vector<v1::RunEvent> training;
};

// The PNG plots every report has, by file name (training.png comes on top
// when the run trained).
const std::vector<std::string>& PlotFiles();

// Writes the report into `out_dir` (created); returns the files written.
// Errors name the file.
absl::StatusOr<std::vector<std::string>> WriteReport(const ReportInput& input, const std::string& out_dir);

}  // namespace crl::report

#endif  // CRL_LIB_REPORT_REPORT_H_
