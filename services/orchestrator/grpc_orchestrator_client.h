// Orchestrator client over gRPC: the implementation of orchestrator_client.h's interface
// that the binaries and the CLI connect with. Code that only uses a client
// includes orchestrator_client.h, which is free of gRPC.
#ifndef CRL_SERVICES_ORCHESTRATOR_GRPC_ORCHESTRATOR_CLIENT_H_
#define CRL_SERVICES_ORCHESTRATOR_GRPC_ORCHESTRATOR_CLIENT_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/client.h"
#include "common/context.h"
#include "crl/v1/orchestrator.grpc.pb.h"
#include "services/orchestrator/orchestrator_client.h"

namespace crl {

class GrpcOrchestratorClient final : public OrchestratorClientInterface {
 public:
  static absl::StatusOr<std::unique_ptr<GrpcOrchestratorClient>> Create(const std::string& target,
                                                                        const ClientOptions& options);
  absl::StatusOr<v1::Run> SubmitRun(const v1::SubmitRunRequest& request, const RequestContext& context) override;
  absl::StatusOr<v1::Run> GetRun(const std::string& run_id, const RequestContext& context) override;
  absl::StatusOr<v1::ListRunsResponse> ListRuns(const v1::ListRunsRequest& request,
                                                const RequestContext& context) override;
  absl::StatusOr<v1::Run> CancelRun(const std::string& run_id, const RequestContext& context) override;
  absl::StatusOr<v1::GetBestVariantsResponse> GetBestVariants(const v1::GetBestVariantsRequest& request,
                                                              const RequestContext& context) override;
  absl::StatusOr<v1::ExportRunResponse> ExportRun(const v1::ExportRunRequest& request,
                                                  const RequestContext& context) override;
  absl::StatusOr<v1::ScoreCompletionsResponse> ScoreCompletions(const v1::ScoreCompletionsRequest& request,
                                                                const RequestContext& context) override;
  absl::StatusOr<v1::ListHackCasesResponse> ListHackCases(const v1::ListHackCasesRequest& request,
                                                          const RequestContext& context) override;
  absl::StatusOr<v1::HackCase> GetHackCase(const std::string& case_id, const RequestContext& context) override;
  absl::StatusOr<v1::RejudgeRunResponse> RejudgeRun(const std::string& run_id, const RequestContext& context) override;
  absl::Status WatchRun(const v1::WatchRunRequest& request, const RequestContext& context,
                        const std::function<void(const v1::RunEvent&)>& on_event) override;

 private:
  explicit GrpcOrchestratorClient(RpcClient client)
      : client_(std::move(client)), stub_(v1::OrchestratorService::NewStub(client_.channel())) {}
  RpcClient client_;
  std::unique_ptr<v1::OrchestratorService::Stub> stub_;
};

}  // namespace crl

#endif  // CRL_SERVICES_ORCHESTRATOR_GRPC_ORCHESTRATOR_CLIENT_H_
