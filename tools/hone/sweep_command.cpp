#include "hone/sweep_command.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <spawn.h>
#include <sys/wait.h>
#include <vector>

#include <CLI/CLI.hpp>

#include "hone/error.h"
#include "hone/progress.h"
#include "hone/step_command.h"
#include "hone/sweep_report.h"
#include "model/model_spec.h"
#if HONE_WITH_CUDA
#include "hone/dispatcher.h"
#include "hone/ops/cuda.h"
#include "model/decode_step.h"
#include "model/step_bench.h"
#endif

extern char **environ;

namespace hone::cli {

std::optional<std::string> plot_sweep(const std::filesystem::path &script,
                                      const std::filesystem::path &json,
                                      const std::filesystem::path &dir) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(script, ec))
    return "no plot script at " + script.string() + " (--plot-script names it)";
  std::vector<std::string> args{"python3", script.string(), json.string(), dir.string()};
  std::vector<char *> argv;
  for (std::string &a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int spawned = posix_spawnp(&pid, "python3", nullptr, nullptr, argv.data(), environ);
  if (spawned != 0)
    return std::string("cannot run python3 (") + std::strerror(spawned) + ")";
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      return std::string("waiting for python3 failed (") + std::strerror(errno) + ")";
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
    return std::nullopt;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
    return "python3 was not found";
  if (WIFEXITED(status) && WEXITSTATUS(status) == 3) // plot_sweep.py's own code for it
    return "python3 has no matplotlib (pip install matplotlib)";
  return "python3 " + script.string() + " failed (" +
         (WIFEXITED(status) ? "exit status " + std::to_string(WEXITSTATUS(status))
                            : std::string("killed by a signal")) +
         ")";
}

SweepCommand::SweepCommand(CLI::App &parent, const GlobalOptions &global)
    : global_(global),
      app_(parent.add_subcommand("sweep",
                                 "Time a model's decode step over a batch x context grid (CUDA)")) {
  app_->add_option("--model", options_.model, "Hugging Face config.json (Llama, Qwen2)")
      ->required();
  app_->add_option("--batch", options_.batch,
                   "Requests per step: a-b (the powers of two in it) or a,b,c (at most 32)")
      ->capture_default_str();
  app_->add_option("--context", options_.context,
                   "Tokens cached per request: a-b (powers of two) or a,b,c (e.g. 1k-32k)")
      ->capture_default_str();
  app_->add_option("--quant", options_.quant, "Linear weights: bf16 or int<4|8>:g<group>")
      ->capture_default_str();
  app_->add_option("--page-size", options_.page_size, "KV cache page (16, 32, 64)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app_->add_option("--samples", options_.samples, "Interleaved samples per median (>= 3)")
      ->capture_default_str()
      ->check(CLI::Range(3, 1000));
  app_->add_option("--check-replays", options_.check_replays,
                   "Graph replays of each PDL step compared bit for bit with PDL off, per cell")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app_->add_option("--seed", options_.seed, "Weights, cache and inputs")->capture_default_str();
  app_->add_option("--out", options_.out, "Directory for sweep.md, sweep.json and the charts")
      ->capture_default_str();
  app_->add_option("--peer", options_.peer,
                   "JSON of bench/peers/decode_step_torch.py --json: the peer's step per cell");
  app_->add_option("--plot-script", options_.plot_script,
                   "The chart script (default: scripts/plot_sweep.py of hone's source tree)");
}

#if HONE_WITH_CUDA
namespace {

// [bytes] a cell needs beyond decode_step_bytes(): bench_decode_step's reference copies of the
// logits and the hidden state, plus room for the op workspaces (split-KV partial states) and
// the graphs.
size_t bench_headroom_bytes(const model::ModelSpec &spec, int64_t batch) {
  return 2 * size_t(batch) * size_t(spec.vocab + spec.hidden) * 2 + (size_t{256} << 20);
}

std::string gigabytes(size_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f GB", double(bytes) / 1e9);
  return buf;
}

std::string list_text(const std::vector<int64_t> &v) {
  std::string out;
  for (int64_t x : v)
    out += (out.empty() ? "" : ", ") + std::to_string(x);
  return out;
}

// Times one cell into `cell` (skipped when the device lacks the memory, failed on a runtime
// error). Throws Error(invalid_argument) for options no cell can run (a page size, a group).
void run_cell(const model::ModelSpec &spec, model::StepOptions so, Backend &backend,
              const std::vector<model::StepVariant> &variants, const model::StepBenchOptions &bench,
              SweepCell &cell) {
  so.batch = cell.batch;
  so.context = cell.context;
  cell.need_bytes = model::decode_step_bytes(spec, so);
  const size_t need = cell.need_bytes + bench_headroom_bytes(spec, cell.batch);
  if (const std::optional<size_t> free_bytes = backend.available_memory_bytes();
      free_bytes && need > *free_bytes) {
    cell.status = SweepCell::Status::skipped;
    cell.note = "needs " + gigabytes(need) + ", " + gigabytes(*free_bytes) + " free";
    return;
  }
  try {
    model::DecodeStep step(spec, so);
    const model::StepBenchResult r = model::bench_decode_step(step, variants, bench);
    cell.weight_bytes = step.weight_bytes();
    cell.kv_bytes = step.kv_bytes();
    cell.replays_per_sample = r.replays_per_sample;
    for (const model::StepVariantResult &v : r.variants)
      cell.variants.push_back(
          {v.name, v.launch.pdl, v.seconds, v.spread, v.mismatches, v.check_replays});
  } catch (const Error &e) {
    if (e.kind() == ErrorKind::invalid_argument)
      throw;
    cell.status = SweepCell::Status::failed;
    cell.note = e.what();
    cell.variants.clear();
  }
}

// The progress line of a finished cell.
std::string cell_line(const SweepCell &c) {
  std::string line = "batch " + std::to_string(c.batch) + ", context " + std::to_string(c.context);
  if (c.status != SweepCell::Status::ok)
    return line + ": " + (c.status == SweepCell::Status::skipped ? "skipped" : "FAILED") + " (" +
           c.note + ")";
  char buf[160];
  const SweepVariant &t = c.tuned();
  std::snprintf(buf, sizeof buf, ": default %.1f us, tuned %.1f us (pdl %s), %.3fx",
                c.default_seconds() * 1e6, t.seconds * 1e6, t.pdl ? "on" : "off", c.speedup());
  line += buf;
  if (c.peer_seconds) {
    std::snprintf(buf, sizeof buf, "; peer %.1f us, %.3fx", *c.peer_seconds * 1e6,
                  *c.peer_seconds / t.seconds);
    line += buf;
  }
  for (const SweepVariant &v : c.variants)
    if (v.mismatches > 0)
      line += "; " + v.name + ": " + std::to_string(v.mismatches) + " words differ (PDL REJECTED)";
  return line;
}

} // namespace
#endif

int SweepCommand::run() {
  // Everything given is judged before a file is written or the device is touched.
  SweepReport report;
  report.batches = parse_batch_grid(options_.batch);
  report.contexts = parse_context_grid(options_.context);
  const auto [bits, group] = parse_quant(options_.quant);
  const model::ModelSpec spec = model::load_model_spec(options_.model);
  if (!options_.peer.empty())
    report.peer = read_peer_steps(options_.peer, spec.name);
  if (!global_.backend.empty() && global_.backend != "cuda")
    HONE_INVALID_ARGUMENT("hone sweep runs on the cuda backend, not '" + global_.backend + "'");
#if HONE_WITH_CUDA
  Dispatcher &tuned = ops::cuda::dispatcher();
  Backend &backend = tuned.backend();
  Dispatcher defaults(backend, default_path_options());
  // The output directory once the device is there (and before any cell is timed).
  const std::filesystem::path dir = options_.out;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    HONE_INVALID_ARGUMENT("--out: cannot create " + dir.string() + " (" + ec.message() + ")");
  require_writable((dir / "sweep.md").string(), "--out");
  require_writable((dir / "sweep.json").string(), "--out");
  const std::filesystem::path script = options_.plot_script.empty()
                                           ? std::filesystem::path(HONE_PLOT_SWEEP_SCRIPT)
                                           : std::filesystem::path(options_.plot_script);

  const std::vector<model::StepVariant> variants = {
      model::step_variant("default", &defaults, false),
      model::step_variant("default+pdl", &defaults, true),
      model::step_variant("tuned", &tuned, false), model::step_variant("tuned+pdl", &tuned, true)};
  model::StepBenchOptions bench;
  bench.samples = options_.samples;
  bench.check_replays = options_.check_replays;
  bench.breakdown = false;
  const model::StepOptions so = quant_step_options(bits, group, options_.page_size, options_.seed);

  report.model = spec.name;
  report.family = spec.family;
  report.layers = spec.layers;
  report.quant = options_.quant;
  report.page_size = options_.page_size;
  report.seed = options_.seed;
  report.device = backend.info();
  report.samples = std::max(3, options_.samples);
  report.check_replays = options_.check_replays;
  const size_t total = report.batches.size() * report.contexts.size();
  std::ostream &out = std::cout;
  out << "sweep: " << spec.name << ", " << options_.quant << " weights: " << report.batches.size()
      << " batches (" << list_text(report.batches) << ") x " << report.contexts.size()
      << " contexts (" << list_text(report.contexts) << ") = " << total
      << " cells, 4 variants each; " << report.method() << ", " << report.check_replays
      << " PDL check replays per cell\n"
      << std::flush;
  report.read_bandwidth = backend.measure_read_bandwidth().value_or(0);
  out << "device: " << report.device.model << "; measured read bandwidth "
      << gigabytes(size_t(report.read_bandwidth)) << "/s\n"
      << std::flush;

  Progress progress(total, stderr_is_tty());
  int bad = 0;
  std::vector<std::filesystem::path> written; // rewritten after every cell: a cut run keeps them
  for (int64_t batch : report.batches)
    for (int64_t context : report.contexts) {
      SweepCell cell;
      cell.batch = batch;
      cell.context = context;
      const std::string what =
          "batch " + std::to_string(batch) + ", context " + std::to_string(context);
      progress.start(what);
      run_cell(spec, so, backend, variants, bench, cell);
      if (report.peer && cell.status == SweepCell::Status::ok) {
        const auto it = report.peer->seconds.find({batch, context});
        if (it != report.peer->seconds.end())
          cell.peer_seconds = it->second;
      }
      bool mismatch = false;
      for (const SweepVariant &v : cell.variants)
        mismatch = mismatch || v.mismatches > 0;
      bad += cell.status == SweepCell::Status::failed || mismatch ? 1 : 0;
      progress.clear();
      out << "[" << report.cells.size() + 1 << "/" << total << "] " << cell_line(cell) << "\n"
          << std::flush;
      progress.finish();
      report.cells.push_back(std::move(cell));
      written = write_sweep_report(report, dir);
    }

  out << "\n"
      << sweep_markdown(report) << "\nwrote " << written[0].string() << ", " << written[1].string()
      << "\n"
      << std::flush;
  if (std::optional<std::string> why = plot_sweep(script, written[1], dir))
    std::cerr << "hone: warning: no charts: " << *why << "; sweep.md and sweep.json are written\n";
  else
    out << "charts: " << dir.string() << "/*.png\n";
  if (bad > 0)
    out << bad << " cell(s) failed or had PDL replays that differ; see above\n";
  return bad > 0 ? 1 : 0;
#else
  (void)bits;
  (void)group;
  HONE_INVALID_ARGUMENT("hone sweep needs the CUDA backend; this build has none");
#endif
}

} // namespace hone::cli
