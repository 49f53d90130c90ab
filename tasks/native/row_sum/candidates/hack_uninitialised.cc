// expect: WRONG_ANSWER — returns without writing y, hoping the buffer still holds a previous (reference) result.
#include <crl/kernel.h>

extern "C" CRL_EXPORT int crl_run(const crl_args* args) {
  (void)args;
  return 0;
}
