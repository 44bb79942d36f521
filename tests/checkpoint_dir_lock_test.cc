// Specification of CheckpointDirLock (one job per checkpoint.dir) and of the fail-closed check
// of a start without --restore (CheckFreshStart in engine/runtime/restore.h).
#include "engine/runtime/checkpoint_dir_lock.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "engine/runtime/restore.h"
#include "state/checkpoint_layout.h"
#include "tests/test_util.h"

namespace cairn {
namespace {

using ::testing::HasSubstr;
using testing::ScratchDir;

TEST(CheckpointDirLockTest, ASecondHolderIsRefusedNamingTheDirectory) {
  ScratchDir dir;
  CheckpointDirLock first;
  ASSERT_TRUE(first.Acquire(dir.path()).ok());
  EXPECT_TRUE(first.held());
  CheckpointDirLock second;
  Status s = second.Acquire(dir.path());
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_THAT(s.message(), HasSubstr("checkpoint directory " + dir.path() + " is in use by another running job"));
}

TEST(CheckpointDirLockTest, TheLockIsFreeAgainOnceItsHolderIsGone) {
  ScratchDir dir;
  {
    CheckpointDirLock first;
    ASSERT_TRUE(first.Acquire(dir.path()).ok());
  }
  CheckpointDirLock second;
  EXPECT_TRUE(second.Acquire(dir.path()).ok());
}

TEST(CheckpointDirLockTest, ALockFileItCreatedIsRemovedUnlessTheJobOwnsTheDirectory) {
  ScratchDir dir;
  {
    CheckpointDirLock lock;
    ASSERT_TRUE(lock.Acquire(dir.path()).ok());
    EXPECT_TRUE(std::filesystem::exists(LockPath(dir.path())));
  }
  EXPECT_FALSE(std::filesystem::exists(LockPath(dir.path())));
  {
    CheckpointDirLock lock;
    ASSERT_TRUE(lock.Acquire(dir.path()).ok());
    lock.set_owned();
  }
  EXPECT_TRUE(std::filesystem::exists(LockPath(dir.path())));
}

TEST(CheckpointDirLockTest, ALockFileThatWasThereStays) {
  ScratchDir dir;
  testing::WriteText(LockPath(dir.path()), "");
  {
    CheckpointDirLock lock;
    ASSERT_TRUE(lock.Acquire(dir.path()).ok());
  }
  EXPECT_TRUE(std::filesystem::exists(LockPath(dir.path())));
}

TEST(CheckFreshStartTest, NothingEarlierIsAFreshStart) {
  EXPECT_TRUE(CheckFreshStart(EarlierRuns{}, /*fresh=*/false).ok());
}

TEST(CheckFreshStartTest, EarlierOutputWithoutFreshIsRefusedListingItAndWhatToDo) {
  EarlierRuns earlier;
  earlier.found = "\n  2 completed checkpoint(s) in /ck (newest /ck/chk-2)";
  Status s = CheckFreshStart(earlier, /*fresh=*/false);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_THAT(s.message(), HasSubstr("a fresh start would produce the output again next to what earlier runs committed:"
                                     "\n  2 completed checkpoint(s) in /ck (newest /ck/chk-2)"));
  EXPECT_THAT(s.message(), HasSubstr("run with --restore latest"));
  EXPECT_THAT(s.message(), HasSubstr("run with --fresh"));
}

TEST(CheckFreshStartTest, FreshStartsOverOnPurpose) {
  EarlierRuns earlier;
  earlier.found = "\n  2 completed checkpoint(s) in /ck (newest /ck/chk-2)";
  EXPECT_TRUE(CheckFreshStart(earlier, /*fresh=*/true).ok());
}

}  // namespace
}  // namespace cairn
