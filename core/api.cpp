#include "core/api.h"

namespace nb {

namespace {
#define NB_DRIVER_INFO(sym, base, since, variant, kind, params, args, fill) {#sym, #sym, false, Kind::kind},
#define NB_RUNTIME_INFO(sym, display, kind, params, args, fill) {#sym, display, true, Kind::kind},
const ApiInfo kInfo[] = {
    NB_DRIVER_HOOKS(NB_DRIVER_INFO)
    NB_RUNTIME_HOOKS(NB_RUNTIME_INFO)};
#undef NB_DRIVER_INFO
#undef NB_RUNTIME_INFO
const ApiInfo kUnknown = {"?", "unknown API", false, Kind::Other};
}  // namespace

static_assert(sizeof(kInfo) / sizeof(kInfo[0]) == kApiCount, "one info row per id");

const ApiInfo& api_info(uint16_t id) { return id < kApiCount ? kInfo[id] : kUnknown; }

}  // namespace nb
