// Options every subcommand shares, and the look-ups they resolve to.
#pragma once

#include <string>
#include <string_view>

#include "hone/backend.h"
#include "hone/op.h"

namespace hone::cli {

struct GlobalOptions {
  std::string backend; // "cpu" / "cuda"; empty selects hone::best_backend()
};

// The selected backend; throws Error(invalid_argument) when it is unknown or absent.
Backend &selected_backend(const GlobalOptions &options);
// The op `name` of `backend`; throws Error(invalid_argument) naming it and listing the ops
// the backend has when there is none.
const TunableOp &find_op(std::string_view name, const Backend &backend);
// True when progress may be drawn on stderr (it is a terminal).
bool stderr_is_tty();

} // namespace hone::cli
