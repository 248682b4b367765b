#include "hone/tactic.h"

#include <gtest/gtest.h>

#include "hone/error.h"

namespace hone {
namespace {

TEST(Tactic, CanonicalStringRoundTrips) {
  Tactic t{"gemv.f32", {{"rows_per_block", 4}, {"threads", 2}}};
  EXPECT_EQ(t.str(), "gemv.f32:rows_per_block=4,threads=2");
  EXPECT_EQ(Tactic::parse(t.str()), t);
  EXPECT_EQ(Tactic::parse("plain").str(), "plain");
  EXPECT_EQ(Tactic::parse("k:neg=-3").param("neg"), -3);
}

TEST(Tactic, ParamOrderIsIdentity) {
  Tactic a{"k", {{"a", 1}, {"b", 2}}};
  Tactic b{"k", {{"b", 2}, {"a", 1}}};
  EXPECT_NE(a, b);
  EXPECT_NE(a.str(), b.str());
}

TEST(Tactic, LookupAndFallback) {
  Tactic t = Tactic::parse("k:x=7");
  EXPECT_EQ(t.param("x"), 7);
  EXPECT_EQ(t.param_or("y", 3), 3);
  EXPECT_THROW(t.param("y"), Error);
}

TEST(Tactic, MalformedTextNamesTheProblem) {
  for (const char *bad : {"", ":x=1", "k:x", "k:x=", "k:x=1,", "k:x=1y", "k:x=1,x=2", "k k:x=1"}) {
    try {
      Tactic::parse(bad);
      FAIL() << "accepted '" << bad << "'";
    } catch (const Error &e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
      EXPECT_NE(std::string(e.what()).find("malformed tactic"), std::string::npos) << e.what();
    }
  }
}

} // namespace
} // namespace hone
