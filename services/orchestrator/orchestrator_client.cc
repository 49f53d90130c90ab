#include "services/orchestrator/orchestrator_client.h"

#include <atomic>
#include <thread>

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

absl::StatusOr<v1::ExportRunResponse> GrpcOrchestratorClient::ExportRun(const v1::ExportRunRequest& request,
                                                                        const RequestContext& context) {
  return client_.Call<v1::ExportRunResponse>(context, request,
                                             [this](auto... args) { stub_->async()->ExportRun(args...); });
}

absl::Status GrpcOrchestratorClient::WatchRun(const v1::WatchRunRequest& request, const RequestContext& context,
                                              const std::function<void(const v1::RunEvent&)>& on_event) {
  CRL_RETURN_IF_ERROR(context.Check());
  grpc::ClientContext call;
  const absl::Duration left = context.Remaining();
  client_.Prepare(&call, left == absl::InfiniteDuration() ? absl::Hours(24 * 30) : left);
  auto reader = stub_->WatchRun(&call, request);
  std::atomic<bool> finished{false};
  std::thread canceller([&] {
    while (!finished.load()) {
      if (context.IsCancelled()) {
        call.TryCancel();
        return;
      }
      absl::SleepFor(absl::Milliseconds(100));
    }
  });
  v1::RunEvent e;
  while (reader->Read(&e)) on_event(e);
  grpc::Status s = reader->Finish();
  finished.store(true);
  canceller.join();
  if (context.IsCancelled()) return absl::CancelledError("watch cancelled");
  return FromGrpcStatus(s);
}

}  // namespace crl
