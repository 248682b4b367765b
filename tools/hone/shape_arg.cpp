#include "hone/shape_arg.h"

#include <algorithm>
#include <charconv>
#include <optional>

#include "hone/error.h"

namespace hone::cli {

namespace {

std::optional<int64_t> to_integer(std::string_view text, int64_t min) {
  int64_t value = 0;
  const char *end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value);
  if (ec != std::errc() || ptr != end || value < min)
    return std::nullopt;
  return value;
}

std::optional<int64_t> to_positive(std::string_view text) { return to_integer(text, 1); }

} // namespace

std::string dim_names(const TunableOp &op) {
  std::string out;
  for (const DimSpec &d : op.buckets().dims)
    out += (out.empty() ? "" : ", ") + d.name;
  return out;
}

std::vector<std::string> split_list(std::string_view text, std::string_view what) {
  std::vector<std::string> items;
  size_t start = 0;
  while (true) {
    const size_t comma = text.find(',', start);
    const std::string_view item = text.substr(
        start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    if (item.empty())
      HONE_INVALID_ARGUMENT(std::string(what) + " '" + std::string(text) + "' has an empty item");
    items.emplace_back(item);
    if (comma == std::string_view::npos)
      break;
    start = comma + 1;
  }
  return items;
}

Shape parse_shape(const TunableOp &op, std::string_view text) {
  const BucketSpec &spec = op.buckets();
  const int rank = static_cast<int>(spec.dims.size());
  std::vector<int64_t> values(spec.dims.size(), 0);
  std::vector<bool> given(spec.dims.size(), false);
  for (const std::string &token : split_list(text, "--shape")) {
    const size_t eq = token.find('=');
    if (eq == std::string::npos)
      HONE_INVALID_ARGUMENT("--shape: token '" + token + "' is not name=value (" +
                            std::string(op.name()) + " has " + dim_names(op) + ")");
    const std::string name = token.substr(0, eq);
    const int index = spec.index_of(name);
    if (index < 0)
      HONE_INVALID_ARGUMENT("--shape: unknown dimension '" + name + "' in '" + token + "' (" +
                            std::string(op.name()) + " has " + dim_names(op) + ")");
    if (given[static_cast<size_t>(index)])
      HONE_INVALID_ARGUMENT("--shape: dimension '" + name + "' given twice ('" + token + "')");
    // Zero only where the dimension admits it (a flag such as rmsnorm's residual=0, as a
    // cache key spells it); every other dimension is a positive count.
    const bool zero_ok = spec.dims[static_cast<size_t>(index)].lo <= 0;
    const std::optional<int64_t> value =
        to_integer(std::string_view(token).substr(eq + 1), zero_ok ? 0 : 1);
    if (!value)
      HONE_INVALID_ARGUMENT("--shape: value in '" + token + "' is not a " +
                            (zero_ok ? "non-negative" : "positive") + " integer");
    values[static_cast<size_t>(index)] = *value;
    given[static_cast<size_t>(index)] = true;
  }
  for (int i = 0; i < rank; ++i)
    if (!given[static_cast<size_t>(i)])
      HONE_INVALID_ARGUMENT("--shape: missing dimension '" +
                            spec.dims[static_cast<size_t>(i)].name + "' (" +
                            std::string(op.name()) + " needs " + dim_names(op) + ")");
  return Shape(std::span<const int64_t>(values), op.dtype());
}

std::vector<int64_t> parse_rows(std::string_view text) {
  std::vector<int64_t> rows;
  for (const std::string &token : split_list(text, "--rows")) {
    const size_t dash = token.find('-');
    std::optional<int64_t> lo = to_positive(std::string_view(token).substr(0, dash));
    std::optional<int64_t> hi =
        dash == std::string::npos ? lo : to_positive(std::string_view(token).substr(dash + 1));
    if (!lo || !hi || *hi < *lo)
      HONE_INVALID_ARGUMENT("--rows: '" + token +
                            "' is not a positive count or an ascending range like 1-16");
    if (*hi - *lo > 4096)
      HONE_INVALID_ARGUMENT("--rows: range '" + token + "' is too long");
    for (int64_t r = *lo; r <= *hi; ++r)
      rows.push_back(r);
  }
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  return rows;
}

} // namespace hone::cli
