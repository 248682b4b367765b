#include "hone/sweep_report.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "hone/error.h"
#include "hone/format.h"
#include "hone/step_command.h"

namespace hone::cli {

namespace {

// "1-16" -> {"1", "16"}; nullopt when `text` is not one range (no '-', or more than one).
std::optional<std::pair<std::string, std::string>> split_range(const std::string &text) {
  const size_t dash = text.find('-');
  if (dash == std::string::npos || text.find('-', dash + 1) != std::string::npos)
    return std::nullopt;
  return std::pair{text.substr(0, dash), text.substr(dash + 1)};
}

std::vector<std::string> split_commas(const std::string &text) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(text);
  while (std::getline(in, item, ','))
    out.push_back(item);
  if (!text.empty() && text.back() == ',')
    out.emplace_back();
  return out;
}

// `text` in single quotes (appended piece by piece: GCC 12 warns -Wrestrict, falsely, on
// "'" + std::string + "'").
std::string quoted(const std::string &text) {
  std::string out = "'";
  out += text;
  out += '\'';
  return out;
}

using ValueParser = int64_t (*)(const std::string &text, std::string_view option);

int64_t parse_batch_value(const std::string &text, std::string_view option) {
  static const std::regex re("[0-9]{1,9}");
  if (!std::regex_match(text, re) || std::stoll(text) <= 0)
    HONE_INVALID_ARGUMENT(std::string(option) + ": " + quoted(text) +
                          " is not a positive integer (e.g. 1, 16)");
  const int64_t v = std::stoll(text);
  if (v > model::kMaxStepBatch)
    HONE_INVALID_ARGUMENT(std::string(option) + ": batch " + text +
                          " is beyond the decode step's limit of " +
                          std::to_string(model::kMaxStepBatch));
  return v;
}

std::vector<int64_t> parse_grid(const std::string &text, std::string_view option,
                                ValueParser parse_value) {
  const std::string opt(option);
  if (text.empty())
    HONE_INVALID_ARGUMENT(opt + ": empty; expected a range a-b or a list a,b,c");
  std::vector<int64_t> out;
  if (text.find(',') == std::string::npos) {
    if (const auto range = split_range(text)) {
      // An endpoint's message names the range too.
      const auto endpoint = [&](const std::string &value) {
        try {
          return parse_value(value, option);
        } catch (const Error &e) {
          if (e.kind() != ErrorKind::invalid_argument)
            throw;
          HONE_INVALID_ARGUMENT(std::string(e.what()) + " (in the range " + quoted(text) + ")");
        }
      };
      const int64_t lo = endpoint(range->first);
      const int64_t hi = endpoint(range->second);
      if (lo > hi)
        HONE_INVALID_ARGUMENT(opt + ": range " + quoted(text) + " is reversed (" +
                              std::to_string(lo) + " > " + std::to_string(hi) + ")");
      for (int64_t p = 1; p <= hi; p *= 2)
        if (p >= lo)
          out.push_back(p);
      if (out.empty())
        HONE_INVALID_ARGUMENT(opt + ": range " + quoted(text) + " holds no power of two");
      return out;
    }
  }
  std::set<int64_t> seen;
  for (const std::string &item : split_commas(text)) {
    if (item.find('-') != std::string::npos && item == text)
      HONE_INVALID_ARGUMENT(opt + ": " + quoted(text) + " is not a range a-b");
    if (item.find('-') != std::string::npos)
      HONE_INVALID_ARGUMENT(opt + ": " + quoted(item) + " in " + quoted(text) +
                            " is not a value (a range a-b stands alone, not in a list)");
    const int64_t v = parse_value(item, option);
    if (!seen.insert(v).second)
      HONE_INVALID_ARGUMENT(opt + ": " + quoted(item) + " is listed twice in " + quoted(text));
    out.push_back(v);
  }
  return out;
}

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

std::string us(double seconds) { return fixed(seconds * 1e6, 1); }

// What the chain column says: the PDL setting picked, and why PDL lost when its check failed.
std::string chain_text(const SweepCell &cell) {
  const SweepVariant &t = cell.tuned();
  std::string text = t.pdl ? "pdl on" : "pdl off";
  if (const SweepVariant *pdl = cell.find("tuned+pdl"); pdl && pdl->mismatches > 0)
    text += " (PDL REJECTED: " + std::to_string(pdl->mismatches) + " words differ over " +
            std::to_string(pdl->check_replays) + " replays)";
  return text;
}

const char *to_string(SweepCell::Status s) {
  switch (s) {
  case SweepCell::Status::ok:
    return "ok";
  case SweepCell::Status::skipped:
    return "skipped";
  case SweepCell::Status::failed:
    return "failed";
  }
  return "?";
}

const nlohmann::json &field(const nlohmann::json &j, const char *name, const std::string &where) {
  if (!j.is_object() || !j.contains(name))
    HONE_INVALID_ARGUMENT(where + ": missing field '" + name + "'");
  return j.at(name);
}

int64_t positive_int(const nlohmann::json &j, const char *name, const std::string &where) {
  const nlohmann::json &v = field(j, name, where);
  if (!v.is_number_integer() || v.get<int64_t>() <= 0)
    HONE_INVALID_ARGUMENT(where + ": field '" + name + "' must be a positive integer, not " +
                          v.dump());
  return v.get<int64_t>();
}

std::string text_or(const nlohmann::json &j, const char *name, const std::string &fallback) {
  return j.contains(name) && j.at(name).is_string() ? j.at(name).get<std::string>() : fallback;
}

} // namespace

std::vector<int64_t> parse_batch_grid(const std::string &text, std::string_view option) {
  return parse_grid(text, option, parse_batch_value);
}

std::vector<int64_t> parse_context_grid(const std::string &text, std::string_view option) {
  return parse_grid(text, option, parse_tokens);
}

const SweepVariant *SweepCell::find(std::string_view name) const {
  for (const SweepVariant &v : variants)
    if (v.name == name)
      return &v;
  return nullptr;
}

double SweepCell::default_seconds() const {
  const SweepVariant *d = find("default");
  HONE_CHECK(d != nullptr, "a sweep cell without its default variant");
  return d->seconds;
}

const SweepVariant &SweepCell::tuned() const {
  const SweepVariant *off = find("tuned");
  HONE_CHECK(off != nullptr, "a sweep cell without its tuned variant");
  const SweepVariant *on = find("tuned+pdl");
  return on && pdl_chain_wins(off->seconds, on->seconds, on->mismatches) ? *on : *off;
}

double SweepCell::speedup() const { return default_seconds() / tuned().seconds; }

PeerSteps parse_peer_steps(const std::string &text, const std::string &source,
                           const std::string &model) {
  const std::string where = "--peer " + source;
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded())
    HONE_INVALID_ARGUMENT(where + ": not valid JSON");
  const std::string expected = "hone.peer.decode_step_torch";
  const nlohmann::json &format = field(doc, "format", where);
  if (!format.is_string() || format.get<std::string>() != expected)
    HONE_INVALID_ARGUMENT(where + ": field 'format' is " + format.dump() + ", not \"" + expected +
                          "\" (the JSON of bench/peers/decode_step_torch.py --json)");
  const nlohmann::json &results = field(doc, "results", where);
  if (!results.is_array())
    HONE_INVALID_ARGUMENT(where + ": field 'results' is not a list");
  PeerSteps out;
  out.source = source;
  out.peer = text_or(doc, "peer", "");
  out.device = text_or(doc, "device", "");
  std::set<std::string> models;
  for (size_t i = 0; i < results.size(); ++i) {
    const nlohmann::json &r = results[i];
    const std::string at = where + ": results[" + std::to_string(i) + "]";
    const nlohmann::json &name = field(r, "model", at);
    if (!name.is_string())
      HONE_INVALID_ARGUMENT(at + ": field 'model' is not a string");
    models.insert(name.get<std::string>());
    if (name.get<std::string>() != model)
      continue;
    const int64_t batch = positive_int(r, "batch", at);
    const int64_t context = positive_int(r, "context", at);
    const nlohmann::json &seconds = field(r, "seconds", at);
    if (!seconds.is_number() || !(seconds.get<double>() > 0))
      HONE_INVALID_ARGUMENT(at + ": field 'seconds' must be a positive number, not " +
                            seconds.dump());
    out.seconds[{batch, context}] = seconds.get<double>();
  }
  if (out.seconds.empty()) {
    std::string held;
    for (const std::string &m : models)
      held += (held.empty() ? "" : ", ") + m;
    HONE_INVALID_ARGUMENT(where + ": no result for model '" + model +
                          "' (it holds: " + (held.empty() ? "none" : held) + ")");
  }
  return out;
}

PeerSteps read_peer_steps(const std::string &path, const std::string &model) {
  std::ifstream in(path);
  if (!in)
    HONE_INVALID_ARGUMENT("--peer " + path + ": cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_peer_steps(text.str(), path, model);
}

std::string SweepReport::method() const {
  return "warm, CUDA graph, interleaved, median of " + std::to_string(samples);
}

bool SweepReport::has_peer_data() const {
  return std::any_of(cells.begin(), cells.end(),
                     [](const SweepCell &c) { return c.peer_seconds.has_value(); });
}

std::string sweep_markdown(const SweepReport &r) {
  const bool peer = r.peer.has_value();
  const bool representation_change = r.quant != "bf16";
  std::ostringstream out;
  out << "# hone sweep: " << r.model << ", " << r.quant << " weights, " << r.device.model << "\n\n";
  out << "Decode step of " << r.model << " (" << r.family << ", " << r.layers << " layers), "
      << r.quant << " weights, KV page " << r.page_size << ", seed " << r.seed
      << ". Method: " << r.method()
      << " (default, default+pdl, tuned and tuned+pdl in one round per sample; docs/benchmarks.md)."
         "\n\n";
  out << "- **default**: the ops' static defaults (no tuning cache, no lazy tune), PDL off.\n"
         "- **tuned**: the tuning cache's picks with the chain tactic: PDL on only where its "
      << r.check_replays
      << " checked replays were bit-identical to PDL off and it was at least 2 % faster.\n"
         "- **speed-up** = default us / tuned us (> 1: tuning helped).\n"
         "- **of read bw** = (weight + KV bytes per step) / tuned time / the measured read "
         "bandwidth";
  if (r.read_bandwidth > 0)
    out << " (" << fixed(r.read_bandwidth / 1e9, 0) << " GB/s)";
  out << ".\n";
  if (peer) {
    out << "- **peer**: " << (r.peer->peer.empty() ? "PyTorch" : r.peer->peer) << ", from "
        << r.peer->source;
    if (!r.peer->device.empty() && r.peer->device != r.device.model)
      out << " (measured on " << r.peer->device << ", not " << r.device.model << ")";
    out << "; **vs peer** = peer us / tuned us; '-': the peer has no such cell.\n";
    if (representation_change)
      out << "- The peer reads bf16 weights and this sweep " << r.quant
          << ": vs peer is a representation change, not a kernel speed-up.\n";
  }
  out << "\n| batch | context | default us | tuned us | chain | speed-up | of read bw |";
  if (peer)
    out << " peer us | vs peer |";
  out << "\n|---:|---:|---:|---:|---|---:|---:|";
  if (peer)
    out << "---:|---:|";
  out << "\n";
  for (const SweepCell &c : r.cells) {
    out << "| " << c.batch << " | " << c.context << " | ";
    if (c.status != SweepCell::Status::ok) {
      out << to_string(c.status) << ": " << c.note << " | | | | |" << (peer ? " | |" : "") << "\n";
      continue;
    }
    const double t = c.tuned().seconds;
    const double bytes = static_cast<double>(c.weight_bytes + c.kv_bytes);
    out << us(c.default_seconds()) << " | " << us(t) << " | " << chain_text(c) << " | "
        << format_ratio(c.speedup()) << " | "
        << (r.read_bandwidth > 0 ? fixed(bytes / t / r.read_bandwidth, 3) : "-") << " |";
    if (peer) {
      if (c.peer_seconds)
        out << " " << us(*c.peer_seconds) << " | " << format_ratio(*c.peer_seconds / t) << " |";
      else
        out << " - | - |";
    }
    out << "\n";
  }
  return out.str();
}

nlohmann::json sweep_json(const SweepReport &r) {
  nlohmann::json doc{{"format", "hone.sweep"},
                     {"format_version", 1},
                     {"model", r.model},
                     {"family", r.family},
                     {"layers", r.layers},
                     {"quant", r.quant},
                     {"page_size", r.page_size},
                     {"seed", r.seed},
                     {"device",
                      {{"model", r.device.model},
                       {"sms", r.device.compute_units},
                       {"l2_bytes", r.device.llc_bytes},
                       {"compute_capability", r.device.compute_capability},
                       {"runtime", r.device.runtime_version},
                       {"driver", r.device.driver_version}}},
                     {"mode", "warm"},
                     {"method", r.method()},
                     {"samples", r.samples},
                     {"check_replays", r.check_replays},
                     {"read_bandwidth_bytes_per_s", r.read_bandwidth},
                     {"batches", r.batches},
                     {"contexts", r.contexts},
                     {"peer", nullptr},
                     {"cells", nlohmann::json::array()}};
  if (r.peer)
    doc["peer"] = {{"source", r.peer->source},
                   {"peer", r.peer->peer},
                   {"device", r.peer->device},
                   {"representation_change", r.quant != "bf16"}};
  for (const SweepCell &c : r.cells) {
    nlohmann::json j{{"batch", c.batch},
                     {"context", c.context},
                     {"status", to_string(c.status)},
                     {"need_bytes", c.need_bytes}};
    if (c.status != SweepCell::Status::ok) {
      j["note"] = c.note;
      doc["cells"].push_back(std::move(j));
      continue;
    }
    const SweepVariant &t = c.tuned();
    const size_t bytes = c.weight_bytes + c.kv_bytes;
    j.update(
        {{"weight_bytes", c.weight_bytes},
         {"kv_bytes", c.kv_bytes},
         {"bytes_per_step", bytes},
         {"replays_per_sample", c.replays_per_sample},
         {"default_s", c.default_seconds()},
         {"tuned_s", t.seconds},
         {"chain", t.name},
         {"chain_pdl", t.pdl},
         {"speedup", c.speedup()},
         {"read_fraction",
          r.read_bandwidth > 0 ? static_cast<double>(bytes) / t.seconds / r.read_bandwidth : 0.0},
         {"peer_s", nullptr},
         {"speedup_vs_peer", nullptr},
         {"variants", nlohmann::json::array()}});
    if (c.peer_seconds) {
      j["peer_s"] = *c.peer_seconds;
      j["speedup_vs_peer"] = *c.peer_seconds / t.seconds;
    }
    for (const SweepVariant &v : c.variants)
      j["variants"].push_back(step_variant_json(v));
    doc["cells"].push_back(std::move(j));
  }
  return doc;
}

std::vector<std::filesystem::path> write_sweep_report(const SweepReport &report,
                                                      const std::filesystem::path &dir) {
  const std::filesystem::path md = dir / "sweep.md", json = dir / "sweep.json";
  for (const auto &[path, text] : {std::pair{md, sweep_markdown(report)},
                                   std::pair{json, sweep_json(report).dump(2) + "\n"}}) {
    std::ofstream out(path);
    out << text;
    out.close();
    if (!out)
      HONE_RUNTIME_ERROR("cannot write " + path.string());
  }
  return {md, json};
}

} // namespace hone::cli
