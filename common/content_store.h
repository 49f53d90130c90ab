// Content-addressed bytes: what the orchestrator keeps out of its database
// rows (candidate sources, completions, prompts, evaluation logs). An
// address is "sha256:<64 hex>" of the bytes, so identical code is kept once
// however many variants, events and runs refer to it, and a reader can tell
// when the bytes behind an address were changed.
#ifndef CRL_COMMON_CONTENT_STORE_H_
#define CRL_COMMON_CONTENT_STORE_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace crl {

// Thread-safe.
class ContentStoreInterface {
 public:
  virtual ~ContentStoreInterface() = default;
  // Keeps `data` (nothing to do when the same bytes are there) and returns
  // its address. The bytes are durable when this returns OK.
  virtual absl::StatusOr<std::string> Put(const std::string& data) = 0;
  // The bytes at `address`. INVALID_ARGUMENT for a malformed address,
  // NOT_FOUND when nothing is kept there, DATA_LOSS when the bytes kept no
  // longer hash to it; each names the address (and the file).
  virtual absl::StatusOr<std::string> Get(const std::string& address) = 0;
};

// The address `data` would have: "sha256:<hex>".
std::string ContentAddress(const std::string& data);

// Files under a directory: <dir>/sha256/<first 2 hex>/<64 hex>, each
// written to a temporary file, flushed to disk and renamed into place, so a
// process killed mid-write leaves no partial file under an address.
class DiskContentStore : public ContentStoreInterface {
 public:
  // Creates `dir` when missing; FAILED_PRECONDITION naming it when it
  // cannot be created or written.
  static absl::StatusOr<std::unique_ptr<DiskContentStore>> Open(const std::string& dir);

  absl::StatusOr<std::string> Put(const std::string& data) override;
  absl::StatusOr<std::string> Get(const std::string& address) override;

  // The file behind a well-formed address (for messages and tests).
  std::string PathOf(const std::string& address) const;

 private:
  explicit DiskContentStore(std::string dir) : dir_(std::move(dir)) {}
  std::string dir_;
};

}  // namespace crl

#endif  // CRL_COMMON_CONTENT_STORE_H_
