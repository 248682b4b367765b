#include "shape_list.h"

#include <fstream>
#include <sstream>

#include "hone/error.h"

namespace hone::bench {

namespace {

std::string trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string_view::npos)
    return {};
  const size_t e = s.find_last_not_of(" \t\r");
  return std::string(s.substr(b, e - b + 1));
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    const size_t at = s.find(sep, start);
    out.push_back(trim(s.substr(start, at == std::string_view::npos ? s.npos : at - start)));
    if (at == std::string_view::npos)
      return out;
    start = at + 1;
  }
}

int64_t to_int(const std::string &text, const std::string &where) {
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(text, &used);
  } catch (const std::exception &) {
    used = 0;
  }
  if (text.empty() || used != text.size())
    HONE_INVALID_ARGUMENT(where + ": '" + text + "' is not an integer");
  return v;
}

// "1|2|4", "1..8" or a mix: "1..4|8|16".
std::vector<int64_t> values_of(const std::string &text, const std::string &where) {
  std::vector<int64_t> out;
  for (const std::string &item : split(text, '|')) {
    const size_t dots = item.find("..");
    if (dots == std::string::npos) {
      out.push_back(to_int(item, where));
      continue;
    }
    const int64_t lo = to_int(trim(item.substr(0, dots)), where);
    const int64_t hi = to_int(trim(item.substr(dots + 2)), where);
    if (hi < lo)
      HONE_INVALID_ARGUMENT(where + ": empty range '" + item + "'");
    for (int64_t v = lo; v <= hi; ++v)
      out.push_back(v);
  }
  return out;
}

std::string dimension_names(const BucketSpec &spec) {
  std::string out;
  for (const DimSpec &d : spec.dims)
    out += (out.empty() ? "" : ", ") + d.name;
  return out;
}

} // namespace

std::vector<Shape> parse_shape_list(std::string_view text, const TunableOp &op,
                                    std::string_view set, const std::string &source) {
  if (set != "full" && set != "quick")
    HONE_INVALID_ARGUMENT("shape set '" + std::string(set) + "' (expected full or quick)");
  const BucketSpec &spec = op.buckets();
  std::vector<Shape> shapes;
  std::istringstream in{std::string(text)};
  std::string raw;
  for (int line_no = 1; std::getline(in, raw); ++line_no) {
    const std::string where = source + ":" + std::to_string(line_no);
    std::string line = trim(raw.substr(0, raw.find('#')));
    if (line.empty())
      continue;
    std::string tag;
    if (const size_t colon = line.find(':'); colon != std::string::npos) {
      tag = trim(line.substr(0, colon));
      line = trim(line.substr(colon + 1));
      if (tag != "full" && tag != "quick")
        HONE_INVALID_ARGUMENT(where + ": unknown set '" + tag + "' (expected full or quick)");
    }
    std::vector<std::vector<int64_t>> values(spec.dims.size());
    for (const std::string &item : split(line, ',')) {
      const size_t eq = item.find('=');
      const std::string name = trim(item.substr(0, eq));
      const int index = eq == std::string::npos ? -1 : spec.index_of(name);
      if (index < 0)
        HONE_INVALID_ARGUMENT(where + ": '" + item + "' is not a dimension of " +
                              std::string(op.name()) + " (" + dimension_names(spec) + ")");
      if (!values[static_cast<size_t>(index)].empty())
        HONE_INVALID_ARGUMENT(where + ": dimension '" + name + "' given twice");
      values[static_cast<size_t>(index)] = values_of(trim(item.substr(eq + 1)), where);
    }
    for (size_t d = 0; d < values.size(); ++d)
      if (values[d].empty())
        HONE_INVALID_ARGUMENT(where + ": dimension '" + spec.dims[d].name + "' missing");
    if (!tag.empty() && tag != set)
      continue;
    // Every combination, the first dimension varying slowest.
    std::vector<size_t> at(values.size(), 0);
    while (true) {
      Shape s;
      s.dtype = op.dtype();
      for (size_t d = 0; d < values.size(); ++d)
        s.dims[d] = values[d][at[d]];
      s.rank = static_cast<int>(values.size());
      shapes.push_back(s);
      size_t d = values.size();
      while (d > 0 && ++at[d - 1] == values[d - 1].size())
        at[--d] = 0;
      if (d == 0)
        break;
    }
  }
  return shapes;
}

std::vector<Shape> read_shape_list(const std::filesystem::path &path, const TunableOp &op,
                                   std::string_view set) {
  std::ifstream in(path);
  if (!in)
    HONE_INVALID_ARGUMENT("cannot read shape list " + path.string());
  std::stringstream text;
  text << in.rdbuf();
  return parse_shape_list(text.str(), op, set, path.string());
}

} // namespace hone::bench
