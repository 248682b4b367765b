#include "hone/device_command.h"

#include <iostream>

#include <CLI/CLI.hpp>

#include "hone/error.h"
#include "hone/format.h"
#include "hone/key.h"
#include "hone/measurement.h"
#include "hone/registry.h"

namespace hone::cli {

DeviceCommand::DeviceCommand(CLI::App &parent, const GlobalOptions &global)
    : global_(global),
      app_(parent.add_subcommand("device", "Show the device, its cache facts and rotation plan")) {
  app_->add_option("--working-set", options_.working_set,
                   "Bytes one launch touches, for the rotation plan (e.g. 4096, 64K, 32M, 1G)")
      ->capture_default_str();
  app_->add_flag("--bandwidth", options_.bandwidth,
                 "Measure the achievable streaming-read bandwidth (backends with a probe)");
}

int DeviceCommand::run() {
  const std::optional<size_t> working_set = parse_bytes(options_.working_set);
  if (!working_set)
    HONE_INVALID_ARGUMENT("--working-set: '" + options_.working_set +
                          "' is not a positive byte count (e.g. 4096, 64K, 32M, 1G)");
  Backend &backend = selected_backend(global_);
  const DeviceInfo &info = backend.info();
  std::ostream &out = std::cout;

  std::string backends;
  for (const std::string &name : available_backends())
    backends += (backends.empty() ? "" : ", ") + name;
  std::string ops;
  for (const TunableOp *op : Registry::global().ops(info.backend))
    ops +=
        (ops.empty() ? "" : ", ") + std::string(op->name()) + "@" + std::to_string(op->version());

  const auto field = [&](const char *name, const std::string &value) {
    out << name << std::string(20 - std::string_view(name).size(), ' ') << value << '\n';
  };
  field("backend", info.backend + " (available: " + backends + ")");
  field("device", info.model);
  field("llc", format_bytes(info.llc_bytes) + " (" + std::to_string(info.llc_bytes) + " bytes, " +
                   (info.llc_known ? "measured" : "fallback guess") + ")");
  field("compute units", std::to_string(info.compute_units) +
                             (info.backend == "cuda" ? " SMs" : " hardware threads"));
  if (!info.compute_capability.empty())
    field("compute capability", info.compute_capability);
  field("runtime", info.runtime_version.empty() ? "-" : info.runtime_version);
  field("driver", info.driver_version.empty() ? "-" : info.driver_version);
  field("memory budget", format_bytes(info.memory_budget_bytes) + " for rotating inputs");
  field("timing method", backend.method_id());
  field("kernel build", backend.kernel_build_id());
  field("hone version", current_metadata(backend).hone_version);
  field("ops", ops.empty() ? "-" : ops);

  const RotationPlan plan =
      plan_rotation(info.llc_bytes, *working_set, info.memory_budget_bytes, /*cold=*/true);
  std::string rotation = std::to_string(plan.copies) + " copies of " + format_bytes(*working_set) +
                         " (footprint " + format_bytes(plan.footprint) + ")";
  if (plan.flush)
    rotation += "; " + std::to_string(plan.needed) +
                " needed exceed the budget, so one copy and an LLC flush between samples";
  field("rotation", rotation);

  // Read bandwidth: reported fractions of peak elsewhere are quoted against this figure.
  if (options_.bandwidth) {
    if (std::optional<double> bw = backend.measure_read_bandwidth()) {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.1f GB/s", *bw / 1e9);
      field("read bandwidth", std::string(buf) + " (streaming-read probe)");
    } else {
      field("read bandwidth", "no probe on backend " + info.backend);
    }
  }
  return 0;
}

} // namespace hone::cli
