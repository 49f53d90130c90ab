// The one way the CLI, tests and other programs reach crl-orchestrator
// (OrchestratorService): an interface (free of gRPC) and its gRPC
// implementation in grpc_orchestrator_client.h.
#ifndef CRL_SERVICES_ORCHESTRATOR_ORCHESTRATOR_CLIENT_H_
#define CRL_SERVICES_ORCHESTRATOR_ORCHESTRATOR_CLIENT_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/context.h"
#include "crl/v1/orchestrator.pb.h"

namespace crl {

// Thread-safe.
class OrchestratorClientInterface {
 public:
  virtual ~OrchestratorClientInterface() = default;
  virtual absl::StatusOr<v1::Run> SubmitRun(const v1::SubmitRunRequest& request, const RequestContext& context) = 0;
  virtual absl::StatusOr<v1::Run> GetRun(const std::string& run_id, const RequestContext& context) = 0;
  virtual absl::StatusOr<v1::ListRunsResponse> ListRuns(const v1::ListRunsRequest& request,
                                                        const RequestContext& context) = 0;
  virtual absl::StatusOr<v1::Run> CancelRun(const std::string& run_id, const RequestContext& context) = 0;
  virtual absl::StatusOr<v1::GetBestVariantsResponse> GetBestVariants(const v1::GetBestVariantsRequest& request,
                                                                      const RequestContext& context) = 0;
  virtual absl::StatusOr<v1::ExportRunResponse> ExportRun(const v1::ExportRunRequest& request,
                                                          const RequestContext& context) = 0;
  virtual absl::StatusOr<v1::ScoreCompletionsResponse> ScoreCompletions(const v1::ScoreCompletionsRequest& request,
                                                                        const RequestContext& context) = 0;
  virtual absl::StatusOr<v1::ListHackCasesResponse> ListHackCases(const v1::ListHackCasesRequest& request,
                                                                  const RequestContext& context) = 0;
  virtual absl::StatusOr<v1::HackCase> GetHackCase(const std::string& case_id, const RequestContext& context) = 0;
  virtual absl::StatusOr<v1::RejudgeRunResponse> RejudgeRun(const std::string& run_id,
                                                            const RequestContext& context) = 0;
  // Calls `on_event` for each event after request.after_sequence until the
  // run ends (OK), the stream breaks (its status: reconnect from the last
  // sequence seen) or `context` is cancelled.
  virtual absl::Status WatchRun(const v1::WatchRunRequest& request, const RequestContext& context,
                                const std::function<void(const v1::RunEvent&)>& on_event) = 0;
};

}  // namespace crl

#endif  // CRL_SERVICES_ORCHESTRATOR_ORCHESTRATOR_CLIENT_H_
