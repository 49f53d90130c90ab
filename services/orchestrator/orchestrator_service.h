// crl-orchestrator's gRPC edge: OrchestratorService over the Orchestrator.
// WatchRun streams a run's events from a sequence number until the run
// ends or the client leaves (one pump thread per watcher).
#ifndef CRL_SERVICES_ORCHESTRATOR_ORCHESTRATOR_SERVICE_H_
#define CRL_SERVICES_ORCHESTRATOR_ORCHESTRATOR_SERVICE_H_

#include "common/server.h"
#include "crl/v1/orchestrator.grpc.pb.h"
#include "services/orchestrator/orchestrator.h"

namespace crl {

class OrchestratorServiceImpl final : public v1::OrchestratorService::CallbackService {
 public:
  // `orchestrator` must outlive the service.
  OrchestratorServiceImpl(orchestrator::Orchestrator* orchestrator, CallEnv env)
      : orchestrator_(orchestrator), env_(env) {}

  grpc::ServerUnaryReactor* SubmitRun(grpc::CallbackServerContext* context, const v1::SubmitRunRequest* request,
                                      v1::Run* response) override;
  grpc::ServerUnaryReactor* GetRun(grpc::CallbackServerContext* context, const v1::GetRunRequest* request,
                                   v1::Run* response) override;
  grpc::ServerUnaryReactor* ListRuns(grpc::CallbackServerContext* context, const v1::ListRunsRequest* request,
                                     v1::ListRunsResponse* response) override;
  grpc::ServerWriteReactor<v1::RunEvent>* WatchRun(grpc::CallbackServerContext* context,
                                                   const v1::WatchRunRequest* request) override;
  grpc::ServerUnaryReactor* CancelRun(grpc::CallbackServerContext* context, const v1::CancelRunRequest* request,
                                      v1::Run* response) override;
  grpc::ServerUnaryReactor* GetBestVariants(grpc::CallbackServerContext* context,
                                            const v1::GetBestVariantsRequest* request,
                                            v1::GetBestVariantsResponse* response) override;
  grpc::ServerUnaryReactor* ExportRun(grpc::CallbackServerContext* context, const v1::ExportRunRequest* request,
                                      v1::ExportRunResponse* response) override;
  grpc::ServerUnaryReactor* ScoreCompletions(grpc::CallbackServerContext* context,
                                             const v1::ScoreCompletionsRequest* request,
                                             v1::ScoreCompletionsResponse* response) override;
  grpc::ServerUnaryReactor* ListHackCases(grpc::CallbackServerContext* context, const v1::ListHackCasesRequest* request,
                                          v1::ListHackCasesResponse* response) override;
  grpc::ServerUnaryReactor* GetHackCase(grpc::CallbackServerContext* context, const v1::GetHackCaseRequest* request,
                                        v1::HackCase* response) override;
  grpc::ServerUnaryReactor* RejudgeRun(grpc::CallbackServerContext* context, const v1::RejudgeRunRequest* request,
                                       v1::RejudgeRunResponse* response) override;
  // Parsed in a private folder under the temporary directory ($TMPDIR; the
  // chart's /tmp emptyDir), removed after the call.
  grpc::ServerUnaryReactor* ParseRunSpec(grpc::CallbackServerContext* context, const v1::ParseRunSpecRequest* request,
                                         v1::RunSpec* response) override;

 private:
  orchestrator::Orchestrator* orchestrator_;
  CallEnv env_;
};

}  // namespace crl

#endif  // CRL_SERVICES_ORCHESTRATOR_ORCHESTRATOR_SERVICE_H_
