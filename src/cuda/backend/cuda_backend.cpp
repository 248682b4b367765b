#include "cuda/backend/cuda_backend.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>
#include <string_view>
#include <utility>

#include "cuda/backend/cuda_backend_impl.h"
#include "cuda/backend/cuda_check.h"
#include "cuda/backend/read_bandwidth_probe.h"
#include "hone/build_info.h"
#include "hone/error.h"
#include "hone/settings.h"

namespace hone::cuda {

namespace {

// "cudart 13000" style version text of a CUDA version integer.
std::string version_text(const char *what, int version) {
  return std::string(what) + " " + std::to_string(version);
}

// The kernel-module release ("580.159.04") when the driver exposes it, for cache
// metadata: cudaDriverGetVersion alone does not change between driver releases of one
// CUDA version.
std::string driver_release() {
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  if (!in || !std::getline(in, line))
    return {};
  // "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build ..."
  // The release is the first token made of digits and at least one dot.
  std::istringstream words(line);
  std::string word;
  while (words >> word) {
    const bool version_like = std::isdigit(static_cast<unsigned char>(word.front())) &&
                              word.find('.') != std::string::npos &&
                              word.find_first_not_of("0123456789.") == std::string::npos;
    if (version_like)
      return word;
  }
  return {};
}

// Ends a stream capture on scope exit when it is still open (an exception unwinding out of
// a launch), and owns the captured graph and its executable form.
class GraphCapture {
public:
  explicit GraphCapture(cudaStream_t stream) : stream_(stream) {
    // Relaxed: a launch function may legitimately query attributes while being captured.
    HONE_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeRelaxed));
    capturing_ = true;
  }
  ~GraphCapture() {
    if (capturing_) {
      cudaGraph_t g = nullptr;
      (void)cudaStreamEndCapture(stream_, &g);
      if (g)
        (void)cudaGraphDestroy(g);
      (void)cudaGetLastError();
    }
    if (exec_)
      (void)cudaGraphExecDestroy(exec_);
    if (graph_)
      (void)cudaGraphDestroy(graph_);
  }
  GraphCapture(const GraphCapture &) = delete;
  GraphCapture &operator=(const GraphCapture &) = delete;

  // Ends the capture, instantiates the graph and uploads it to the device.
  cudaGraphExec_t finish() {
    capturing_ = false;
    HONE_CUDA_CHECK(cudaStreamEndCapture(stream_, &graph_));
    HONE_CUDA_CHECK(cudaGraphInstantiate(&exec_, graph_, 0));
    HONE_CUDA_CHECK(cudaGraphUpload(exec_, stream_));
    return exec_;
  }

private:
  cudaStream_t stream_;
  bool capturing_ = false;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

} // namespace

TimingMethod timing_method(const Settings &settings) {
  // Settings::from_env() has refused any value but these.
  return settings.timing == "events" ? TimingMethod::events : TimingMethod::graph;
}

TimingMethod timing_method_from_env() { return timing_method(Settings::from_env()); }

const char *method_id(TimingMethod method) {
  return method == TimingMethod::graph ? "cuda.graph.v3" : "cuda.events.v3";
}

CudaBackend::CudaBackend(int device, TimingMethod timing) : device_(device), timing_(timing) {
  HONE_CUDA_CHECK(cudaSetDevice(device_));
  cudaDeviceProp prop{};
  HONE_CUDA_CHECK(cudaGetDeviceProperties(&prop, device_));
  int runtime = 0;
  int driver = 0;
  HONE_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  HONE_CUDA_CHECK(cudaDriverGetVersion(&driver));
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  HONE_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));

  info_.backend = "cuda";
  info_.model = prop.name;
  info_.llc_bytes = static_cast<size_t>(prop.l2CacheSize);
  info_.llc_known = prop.l2CacheSize > 0;
  info_.compute_units = prop.multiProcessorCount;
  info_.compute_capability = std::to_string(prop.major) + "." + std::to_string(prop.minor);
  info_.runtime_version = version_text("cudart", runtime);
  const std::string release = driver_release();
  info_.driver_version =
      release.empty() ? version_text("cuda", driver) : release + " " + version_text("cuda", driver);
  info_.memory_budget_bytes = free_bytes / 4;

  HONE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  timer_ = std::make_unique<EventTimer>(stream_);
}

CudaBackend::~CudaBackend() {
  timer_.reset();
  flush_buffer_ = DeviceBuffer();
  // NOTE: destructors do not throw; at process exit the runtime may already be unloaded.
  (void)cudaStreamDestroy(stream_);
  (void)cudaGetLastError();
}

void CudaBackend::sync() {
  HONE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  HONE_CUDA_CHECK(cudaDeviceSynchronize());
}

void CudaBackend::flush_llc() {
  const size_t bytes = 2 * std::max<size_t>(info_.llc_bytes, size_t{1} << 20);
  if (flush_buffer_.size() < bytes)
    flush_buffer_ = DeviceBuffer(bytes);
  HONE_CUDA_CHECK(cudaMemsetAsync(flush_buffer_.data(), 0, bytes, stream_));
  HONE_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

std::string CudaBackend::kernel_build_id() const { return HONE_CUDA_KERNEL_BUILD; }

double CudaBackend::time_batch(const LaunchFn &launch, int batch, int copies, int *next_copy) {
  if (timing_ == TimingMethod::graph)
    return time_graph(launch, batch, copies, next_copy);
  HONE_CUDA_CHECK(cudaStreamSynchronize(stream_)); // start from an idle stream
  return Backend::time_batch(launch, batch, copies, next_copy);
}

double CudaBackend::time_graph(const LaunchFn &launch, int batch, int copies, int *next_copy) {
  HONE_CHECK(batch >= 1 && copies >= 1, "time_batch needs batch >= 1 and copies >= 1");
  HONE_CUDA_CHECK(cudaStreamSynchronize(stream_));
  int copy = *next_copy >= copies ? 0 : *next_copy;
  // Capture, instantiation and upload stay outside the timed region; only the replay is
  // timed.
  GraphCapture capture(stream_);
  for (int i = 0; i < batch; ++i) {
    launch(copy);
    copy = copy + 1 >= copies ? 0 : copy + 1;
  }
  cudaGraphExec_t exec = capture.finish();
  HONE_CUDA_CHECK(cudaStreamSynchronize(stream_)); // the upload
  timer_->start();
  HONE_CUDA_CHECK(cudaGraphLaunch(exec, stream_));
  const double seconds = timer_->stop();
  *next_copy = copy;
  return seconds;
}

std::optional<double> CudaBackend::measure_read_bandwidth() {
  if (!read_bandwidth_)
    read_bandwidth_ = run_read_bandwidth_probe(stream_, info_.compute_units);
  return read_bandwidth_;
}

std::optional<size_t> CudaBackend::available_memory_bytes() const {
  HONE_CUDA_CHECK(cudaSetDevice(device_));
  size_t free_bytes = 0;
  size_t total_bytes = 0;
  HONE_CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total_bytes));
  return free_bytes;
}

bool device_present() {
  static const bool present = [] {
    int count = 0;
    const cudaError_t status = cudaGetDeviceCount(&count);
    (void)cudaGetLastError(); // no driver / no device leaves a non-sticky error behind
    return status == cudaSuccess && count > 0;
  }();
  return present;
}

CudaBackend &cuda_backend() {
  if (!device_present())
    HONE_RUNTIME_ERROR("no CUDA device is present (cudaGetDeviceCount found none)");
  static CudaBackend backend(0, timing_method(settings()));
  return backend;
}

Backend &backend() { return cuda_backend(); }

} // namespace hone::cuda
