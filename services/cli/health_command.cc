#include "services/cli/commands.h"

#include <cstdio>

#include "common/client.h"
#include "common/grpc_status.h"
#include "grpc/health/v1/health.grpc.pb.h"

namespace crl::cli {

int HealthCommand(int argc, char** argv) {
  ClientOptions client;
  client.timeout = absl::Seconds(5);
  std::string service;
  OptionSet flags("crl health ADDR",
                  "Checks a crl service's health. Exit 0 when SERVING; 1 when not serving, unknown or\n"
                  "unreachable (no answer within --timeout); 2 on bad usage; 3 on any other error\n"
                  "(e.g. refused credentials).");
  BindClientOptions(&flags, &client);
  flags.Add("service", &service, "health service name (\"\": liveness; e.g. crl.v1.EvalService)");
  std::vector<std::string> args;
  absl::Status s = flags.Parse(argc, argv, &args);
  if (s.ok() && !flags.help_requested() && args.size() != 1) {
    s = absl::InvalidArgumentError("expected exactly one address");
  }
  if (!s.ok() || flags.help_requested()) return UsageError(flags, s);

  auto rpc = RpcClient::Create(args[0], client);
  if (!rpc.ok()) return Fail(rpc.status());
  auto stub = grpc::health::v1::Health::NewStub(rpc->channel());
  grpc::ClientContext context;
  rpc->Prepare(&context);
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse response;
  grpc::Status status = stub->Check(&context, request, &response);
  if (!status.ok()) {
    std::fprintf(stderr, "crl health: %s: %s\n", args[0].c_str(),
                 FromGrpcStatus(status).ToString().c_str());
    switch (status.error_code()) {
      case grpc::StatusCode::NOT_FOUND:
      case grpc::StatusCode::UNAVAILABLE:
      case grpc::StatusCode::DEADLINE_EXCEEDED:
        return 1;
      default:
        return 3;
    }
  }
  std::printf("%s\n", grpc::health::v1::HealthCheckResponse::ServingStatus_Name(response.status()).c_str());
  return response.status() == grpc::health::v1::HealthCheckResponse::SERVING ? 0 : 1;
}

}  // namespace crl::cli
