/* fleet lab stand-in for torch/lib/libtorch_cpu.so. The Jetson-index build (LAB_NVPL) calls into
 * NVPL LAPACK/BLAS and cuDSS, so it is linked against them: DT_NEEDED libnvpl_lapack_lp64_gomp.so.0,
 * libnvpl_blas_lp64_gomp.so.0, libcudss.so.0, none of which the wheel declares or ships. */
#include <stdio.h>
#ifdef LAB_NVPL
int nvpl_lapack_get_version(void);
int nvpl_blas_get_version(void);
int cudssGetVersion(void);
#endif

const char *torch_cpu_backends(void) {
#include <stdio.h>
#ifdef LAB_NVPL
    static char text[128];
    int lapack = nvpl_lapack_get_version(), blas = nvpl_blas_get_version(), cudss = cudssGetVersion();
    snprintf(text, sizeof text, "lapack=nvpl-%d blas=nvpl-%d cudss=%d", lapack, blas, cudss);
    return text;
#else
    return "lapack=builtin blas=builtin";
#endif
}
