#include "services/timing/grpc_timing_client.h"

#include "common/status.h"

namespace crl {

absl::StatusOr<std::unique_ptr<GrpcTimingClient>> GrpcTimingClient::Create(
    const std::string& target, const ClientOptions& options) {
  CRL_ASSIGN_OR_RETURN(RpcClient client, RpcClient::Create(target, options));
  return std::unique_ptr<GrpcTimingClient>(new GrpcTimingClient(std::move(client)));
}

absl::StatusOr<v1::TimeResponse> GrpcTimingClient::Time(const v1::TimeRequest& request,
                                                        const RequestContext& context) {
  return client_.Call<v1::TimeResponse>(context, request,
                                        [this](auto... args) { stub_->async()->Time(args...); });
}

absl::StatusOr<v1::Baseline> GrpcTimingClient::GetBaseline(const v1::GetBaselineRequest& request,
                                                           const RequestContext& context) {
  return client_.Call<v1::Baseline>(context, request, [this](auto... args) {
    stub_->async()->GetBaseline(args...);
  });
}

absl::StatusOr<std::vector<std::string>> GrpcTimingClient::ListWorkers(const RequestContext& context) {
  auto listed = client_.Call<v1::WorkerAddresses>(context, v1::ListWorkersRequest(), [this](auto... args) {
    stub_->async()->ListWorkers(args...);
  });
  if (!listed.ok()) return listed.status();
  return std::vector<std::string>(listed->addresses().begin(), listed->addresses().end());
}

absl::StatusOr<v1::RewardResult> GrpcTimingClient::ComputeReward(
    const v1::ComputeRewardRequest& request, const RequestContext& context) {
  return client_.Call<v1::RewardResult>(context, request, [this](auto... args) {
    stub_->async()->ComputeReward(args...);
  });
}

}  // namespace crl
