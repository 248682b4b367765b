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
// The Numerics mode spelled `text` ("batch_invariant" or "tolerance", as to_string(Numerics)
// prints it); throws Error(invalid_argument) naming `option` and the value otherwise.
Numerics parse_numerics(const std::string &text, std::string_view option);
// True when progress may be drawn on stderr (it is a terminal).
bool stderr_is_tty();
// Checks, before any work, that output file `path` (given with `option`, e.g. "--json") can be
// written: opens it for appending, and removes it again when it did not exist. Throws
// Error(invalid_argument) naming the option, the path and the reason otherwise.
void require_writable(const std::string &path, std::string_view option);

} // namespace hone::cli
