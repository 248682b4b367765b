// A plain-text table: a header row, then rows of cells, printed with columns padded to their
// widest cell. Numeric columns are right-aligned.
//
//   hone::cli::Table t({"bucket", "pick", "ratio"}, {false, false, true});
//   t.add({"rows=8,n=4096,k=4096", "rows_per_block=4", "0.912x"});
//   t.print(std::cout);
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace hone::cli {

class Table {
public:
  explicit Table(std::vector<std::string> header, std::vector<bool> right_aligned = {});
  // REQUIRES: cells.size() == the header's size.
  void add(std::vector<std::string> cells);
  size_t rows() const { return rows_.size(); }
  void print(std::ostream &out) const;

private:
  std::vector<std::string> header_;
  std::vector<bool> right_;
  std::vector<std::vector<std::string>> rows_;
};

} // namespace hone::cli
