#include "services/orchestrator/grpc_orchestrator_client.h"

#include "common/grpc_status.h"
#include "common/status.h"

namespace crl {

absl::StatusOr<std::unique_ptr<GrpcOrchestratorClient>> GrpcOrchestratorClient::Create(
    const std::string& target, const ClientOptions& options) {
  CRL_ASSIGN_OR_RETURN(RpcClient client, RpcClient::Create(target, options));
  return std::unique_ptr<GrpcOrchestratorClient>(new GrpcOrchestratorClient(std::move(client)));
}

absl::StatusOr<v1::Run> GrpcOrchestratorClient::SubmitRun(const v1::SubmitRunRequest& request,
                                                          const RequestContext& context) {
  return client_.Call<v1::Run>(context, request, [this](auto... args) { stub_->async()->SubmitRun(args...); });
}

absl::StatusOr<v1::Run> GrpcOrchestratorClient::GetRun(const std::string& run_id, const RequestContext& context) {
  v1::GetRunRequest request;
  request.set_run_id(run_id);
  return client_.Call<v1::Run>(context, request, [this](auto... args) { stub_->async()->GetRun(args...); });
}

absl::StatusOr<v1::ListRunsResponse> GrpcOrchestratorClient::ListRuns(const v1::ListRunsRequest& request,
                                                                      const RequestContext& context) {
  return client_.Call<v1::ListRunsResponse>(context, request,
                                            [this](auto... args) { stub_->async()->ListRuns(args...); });
}

absl::StatusOr<v1::Run> GrpcOrchestratorClient::CancelRun(const std::string& run_id, const RequestContext& context) {
  v1::CancelRunRequest request;
  request.set_run_id(run_id);
  return client_.Call<v1::Run>(context, request, [this](auto... args) { stub_->async()->CancelRun(args...); });
}

absl::StatusOr<v1::GetBestVariantsResponse> GrpcOrchestratorClient::GetBestVariants(
    const v1::GetBestVariantsRequest& request, const RequestContext& context) {
  return client_.Call<v1::GetBestVariantsResponse>(
      context, request, [this](auto... args) { stub_->async()->GetBestVariants(args...); });
}

absl::StatusOr<v1::ScoreCompletionsResponse> GrpcOrchestratorClient::ScoreCompletions(
    const v1::ScoreCompletionsRequest& request, const RequestContext& context) {
  return client_.Call<v1::ScoreCompletionsResponse>(
      context, request, [this](auto... args) { stub_->async()->ScoreCompletions(args...); });
}

absl::StatusOr<v1::ListHackCasesResponse> GrpcOrchestratorClient::ListHackCases(
    const v1::ListHackCasesRequest& request, const RequestContext& context) {
  return client_.Call<v1::ListHackCasesResponse>(
      context, request, [this](auto... args) { stub_->async()->ListHackCases(args...); });
}

absl::StatusOr<v1::HackCase> GrpcOrchestratorClient::GetHackCase(const std::string& case_id,
                                                                 const RequestContext& context) {
  v1::GetHackCaseRequest request;
  request.set_case_id(case_id);
  return client_.Call<v1::HackCase>(context, request,
                                    [this](auto... args) { stub_->async()->GetHackCase(args...); });
}

absl::StatusOr<v1::RejudgeRunResponse> GrpcOrchestratorClient::RejudgeRun(const std::string& run_id,
                                                                          const RequestContext& context) {
  v1::RejudgeRunRequest request;
  request.set_run_id(run_id);
  return client_.Call<v1::RejudgeRunResponse>(context, request,
                                              [this](auto... args) { stub_->async()->RejudgeRun(args...); });
}

absl::StatusOr<v1::ExportRunResponse> GrpcOrchestratorClient::ExportRun(const v1::ExportRunRequest& request,
                                                                        const RequestContext& context) {
  return client_.Call<v1::ExportRunResponse>(context, request,
                                             [this](auto... args) { stub_->async()->ExportRun(args...); });
}

absl::Status GrpcOrchestratorClient::WatchRun(const v1::WatchRunRequest& request, const RequestContext& context,
                                              const std::function<void(const v1::RunEvent&)>& on_event) {
  return client_.ReadStream<v1::RunEvent>(
      context, [&](grpc::ClientContext* c) { return stub_->WatchRun(c, request); }, on_event);
}

}  // namespace crl
