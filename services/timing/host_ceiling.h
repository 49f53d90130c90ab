// The host backend's bandwidth ceiling for the physical-floor check
// (FLAG_BELOW_PHYSICAL_FLOOR): measured once at start-up, on a machine whose
// load then is unknown.
//
// A floor flags work a candidate skipped, so the ceiling must be one no
// honest program can beat: a GPU's is its datasheet peak; the host's is the
// best of every core reading at once (from the caches where the data fits:
// a staged call's inputs are written just before it runs) and a large copy
// (counted as the traffic it makes), times kHostCeilingMargin for what a
// start-up measurement on a busy machine misses. It catches work skipped
// wholesale; wrong outputs are the timed-output check's.
#ifndef CRL_SERVICES_TIMING_HOST_CEILING_H_
#define CRL_SERVICES_TIMING_HOST_CEILING_H_

namespace crl::timing {

inline constexpr double kHostCeilingMargin = 2.0;

// Bytes per second; takes about half a second and up to 256 MiB.
double MeasureHostBandwidthCeiling();

}  // namespace crl::timing

#endif  // CRL_SERVICES_TIMING_HOST_CEILING_H_
