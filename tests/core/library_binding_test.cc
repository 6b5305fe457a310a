#include "core/library_binding.h"

#include <gtest/gtest.h>

namespace allot {
namespace {

// The CPU build links Debian's LibTorch, which exports no std::filesystem: the check must let
// it through (a check that refused it would stop every command of every user).
TEST(LibraryBindingTest, ThisBuildsFilesystemIsLibstdcxx) {
  const Status s = CheckStdFilesystemBinding();
  EXPECT_TRUE(s.ok()) << s.message();
  EXPECT_NE(DefiningObject(reinterpret_cast<const void*>(&CheckStdFilesystemBinding)), "");
}

TEST(LibraryBindingTest, LibtorchsCopyIsRefusedByName) {
  const Status s =
      CheckFilesystemProvider("/opt/venv/lib/python3.12/site-packages/torch/lib/libtorch.so",
                              "/srv/allot/build-gpu/apps/allot");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("torch/lib/libtorch.so"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("LD_PRELOAD"), std::string::npos) << s.message();
}

TEST(LibraryBindingTest, LibstdcxxOrTheProgramItselfIsAccepted) {
  EXPECT_TRUE(CheckFilesystemProvider("/lib/x86_64-linux-gnu/libstdc++.so.6", "/bin/allot").ok());
  EXPECT_TRUE(CheckFilesystemProvider("/opt/gcc/lib64/libstdc++.so.6.0.32", "/bin/allot").ok());
  EXPECT_TRUE(CheckFilesystemProvider("/bin/allot", "/bin/allot").ok());
  EXPECT_FALSE(CheckFilesystemProvider("/lib/libstdc++fs-not-really.so", "/bin/allot").ok());
}

}  // namespace
}  // namespace allot
