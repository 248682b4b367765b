#include "hone/backend.h"

namespace hone {

double Backend::time_batch(const LaunchFn &launch, int batch, int copies, int *next_copy) {
  Timer &t = timer();
  int copy = *next_copy;
  t.start();
  for (int i = 0; i < batch; ++i) {
    launch(copy);
    copy = copy + 1 == copies ? 0 : copy + 1;
  }
  const double seconds = t.stop();
  *next_copy = copy;
  return seconds;
}

} // namespace hone
