#include <catch2/catch.hpp>

#include "core/cupti_api.h"

TEST_CASE("CUPTI callback names lose their version suffix, nothing else", "[cupti]") {
  using nb::strip_cupti_version;
  CHECK(strip_cupti_version("cudaMemcpy_v3020") == "cudaMemcpy");
  CHECK(strip_cupti_version("cudaLaunchKernel_ptsz_v7000") == "cudaLaunchKernel_ptsz");
  CHECK(strip_cupti_version("__cudaLaunchKernel_v13000") == "__cudaLaunchKernel");
  CHECK(strip_cupti_version("cuMemcpyHtoD_v2") == "cuMemcpyHtoD_v2");
  CHECK(strip_cupti_version("cuMemcpyHtoD_v2_ptds") == "cuMemcpyHtoD_v2_ptds");
  CHECK(strip_cupti_version("cuLaunchKernel") == "cuLaunchKernel");
  CHECK(strip_cupti_version("x_v12a4") == "x_v12a4");
}
