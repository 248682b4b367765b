// The message of the Error(invalid_argument) a call throws, for tests that match it by
// pattern; fails the test when the call throws nothing or another kind.
//
//   EXPECT_NE(invalid_message([&] { parse(bad); }).find("'bad'"), std::string::npos);
#pragma once

#include <string>

#include <gtest/gtest.h>

#include "hone/error.h"

namespace hone::testing {

template <class F> std::string invalid_message(F call) {
  try {
    call();
  } catch (const Error &e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no invalid_argument thrown";
  return "";
}

} // namespace hone::testing
