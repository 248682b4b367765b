#include "hone/table.h"

#include <algorithm>

#include "hone/error.h"

namespace hone::cli {

Table::Table(std::vector<std::string> header, std::vector<bool> right_aligned)
    : header_(std::move(header)), right_(std::move(right_aligned)) {
  right_.resize(header_.size(), false);
}

void Table::add(std::vector<std::string> cells) {
  HONE_CHECK(cells.size() == header_.size(), "table row has " + std::to_string(cells.size()) +
                                                 " cells, header has " +
                                                 std::to_string(header_.size()));
  rows_.push_back(std::move(cells));
}

void Table::print(std::ostream &out) const {
  std::vector<size_t> width(header_.size());
  for (size_t c = 0; c < header_.size(); ++c) {
    width[c] = header_[c].size();
    for (const auto &row : rows_)
      width[c] = std::max(width[c], row[c].size());
  }
  const auto line = [&](const std::vector<std::string> &cells) {
    std::string text;
    for (size_t c = 0; c < cells.size(); ++c) {
      const std::string pad(width[c] - cells[c].size(), ' ');
      const bool last = c + 1 == cells.size();
      text += right_[c] ? pad + cells[c] : (last ? cells[c] : cells[c] + pad);
      if (!last)
        text += "  ";
    }
    out << text << '\n';
  };
  line(header_);
  std::vector<std::string> rule(header_.size());
  for (size_t c = 0; c < header_.size(); ++c)
    rule[c] = std::string(width[c], '-');
  line(rule);
  for (const auto &row : rows_)
    line(row);
}

} // namespace hone::cli
