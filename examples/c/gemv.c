/* hone from C: checks the API version, runs gemv.f32 through the dispatcher, compares it with a
 * plain loop, and shows how an error reads. Build: cc gemv.c -I include -L build/lib -lhone.
 *
 *   $ ./gemv_c
 *   hone 0.1.0 (C API 1.0) on cpu: ...
 *   gemv.f32 rows=4 n=256 k=512: max |error| 0 ... ok
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "hone/hone.h"

int main(void) {
  if (hone_check_version(HONE_C_API_VERSION_MAJOR) != HONE_OK) {
    fprintf(stderr, "gemv_c: %s\n", hone_last_error());
    return 1;
  }
  hone_device_info info = {0};
  info.struct_size = sizeof info;
  if (hone_device_info_get("cpu", &info) != HONE_OK) {
    fprintf(stderr, "gemv_c: %s\n", hone_last_error());
    return 1;
  }
  const uint32_t api = hone_api_version();
  printf("hone %s (C API %u.%u) on %s: %s, %d threads, LLC %llu bytes\n", hone_version(),
         (unsigned)(api >> 16), (unsigned)(api & 0xffffu), info.backend, info.model,
         info.compute_units, (unsigned long long)info.llc_bytes);

  const int64_t rows = 4, n = 256, k = 512;
  float *x = malloc(sizeof(float) * rows * k);
  float *w = malloc(sizeof(float) * n * k);
  float *y = malloc(sizeof(float) * rows * n);
  if (!x || !w || !y)
    return 1;
  for (int64_t i = 0; i < rows * k; ++i)
    x[i] = (float)((i * 7) % 13) / 13.0f - 0.5f;
  for (int64_t i = 0; i < n * k; ++i)
    w[i] = (float)((i * 5) % 11) / 11.0f - 0.5f;

  if (hone_gemv_f32(x, w, y, rows, n, k) != HONE_OK) {
    fprintf(stderr, "gemv_c: %s\n", hone_last_error());
    return 1;
  }
  double max_error = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t i = 0; i < k; ++i)
        sum += (double)x[r * k + i] * (double)w[j * k + i];
      const double e = fabs(sum - (double)y[r * n + j]);
      max_error = e > max_error ? e : max_error;
    }
  const int ok = max_error < 1e-3;
  printf("gemv.f32 rows=%lld n=%lld k=%lld: max |error| %.3g against a float64 loop: %s\n",
         (long long)rows, (long long)n, (long long)k, max_error, ok ? "ok" : "FAILED");

  /* Errors are values with a message naming the bad input. */
  const hone_status s = hone_gemv_f32(x, w, y, 0, n, k);
  printf("rows=0 -> %s: %s\n", hone_status_name(s), hone_last_error());

  free(x);
  free(w);
  free(y);
  return ok && s == HONE_ERROR_INVALID_ARGUMENT ? 0 : 1;
}
