#include "state/checkpoint_store.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/base/file_util.h"
#include "state/checkpoint_format.h"
#include "state/shared_files.h"
#include "tests/test_util.h"

namespace cairn {
namespace {

using testing::ScratchDir;
using testing::WriteText;

bool Contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A complete checkpoint `id` in `store` (state file, then _metadata), whose metadata says
// `metadata_id` (normally the same).
void MakeComplete(const CheckpointStore& store, CheckpointId id, CheckpointId metadata_id) {
  const std::string chk = store.CheckpointPath(id);
  ASSERT_TRUE(CreateDirs(chk + "/op-0").ok());
  ASSERT_TRUE(WriteChecksummedFile(chk + "/op-0/operator.state", "state").ok());
  CheckpointMetadata m;
  m.id = metadata_id;
  m.job_name = "test job";
  m.mode = "aligned";
  SubtaskStateHandle h;
  h.operator_id = "op";
  h.operator_state_file = "op-0/operator.state";
  m.subtasks.push_back(h);
  ASSERT_TRUE(WriteMetadata(chk, m).ok());
}
void MakeComplete(const CheckpointStore& store, CheckpointId id) { MakeComplete(store, id, id); }

// A checkpoint whose state was written but whose _metadata never was.
void MakeIncomplete(const CheckpointStore& store, CheckpointId id) {
  const std::string chk = store.CheckpointPath(id);
  ASSERT_TRUE(CreateDirs(chk + "/op-0").ok());
  WriteText(chk + "/op-0/operator.state", "partial");
  WriteText(chk + "/_metadata.tmp", "cairn-checkpoint 1\nid");
}

// A checkpoint whose _metadata exists but is damaged.
void MakeDamaged(const CheckpointStore& store, CheckpointId id) {
  MakeComplete(store, id);
  const std::string path = store.CheckpointPath(id) + "/_metadata";
  std::string bytes;
  ASSERT_TRUE(ReadFile(path, &bytes).ok());
  bytes[bytes.size() / 2] ^= 0x01;
  WriteText(path, bytes);
}

std::vector<CheckpointId> Ids(const std::vector<CompletedCheckpoint>& list) {
  std::vector<CheckpointId> ids;
  for (const CompletedCheckpoint& c : list) ids.push_back(c.metadata.id);
  return ids;
}

std::vector<CheckpointId> CompletedIds(const CheckpointStore& store) {
  std::vector<CompletedCheckpoint> list;
  Status s = store.ListCompleted(&list);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return Ids(list);
}

std::vector<std::string> Entries(const std::string& dir) {
  std::vector<std::string> names;
  EXPECT_TRUE(ListDir(dir, &names).ok());
  return names;
}

TEST(CheckpointStore, CheckpointPathIsDirSlashChkId) {
  CheckpointStore store("/data/ckpt");
  EXPECT_EQ(store.CheckpointPath(42), "/data/ckpt/chk-42");
}

TEST(CheckpointStore, ListCompletedOfMissingDirIsEmpty) {
  ScratchDir dir;
  CheckpointStore store(dir / "nope");
  std::vector<CompletedCheckpoint> list;
  ASSERT_TRUE(store.ListCompleted(&list).ok());
  EXPECT_TRUE(list.empty());
}

TEST(CheckpointStore, ListCompletedIgnoresIncompleteDamagedForeignAndWork) {
  ScratchDir dir;
  CheckpointStore store(dir.path());
  MakeComplete(store, 2);
  MakeComplete(store, 10);  // sorts before chk-2 as a name: the order must be numeric
  MakeIncomplete(store, 3);
  MakeDamaged(store, 4);
  ASSERT_TRUE(CreateDirs(dir / "_work/run-1/op-0").ok());
  ASSERT_TRUE(CreateDirs(dir / "chk-abc").ok());
  ASSERT_TRUE(CreateDirs(dir / "savepoint").ok());
  WriteText(dir / "chk-5", "a file, not a directory");
  WriteText(dir / "_lock", "");

  std::vector<CompletedCheckpoint> list;
  std::vector<Status> skipped;
  ASSERT_TRUE(store.ListCompleted(&list, &skipped).ok());
  EXPECT_EQ(Ids(list), (std::vector<CheckpointId>{2, 10}));
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].path, dir / "chk-2");
  EXPECT_EQ(list[0].metadata.job_name, "test job");
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_TRUE(skipped[0].IsCorruption());
  EXPECT_TRUE(Contains(skipped[0].message(), dir / "chk-4/_metadata: damaged")) << skipped[0].message();
}

TEST(CheckpointStore, ListCompletedSkipsMetadataOfAnotherCheckpoint) {
  ScratchDir dir;
  CheckpointStore store(dir.path());
  MakeComplete(store, 1);
  MakeComplete(store, 5, 6);  // e.g. a chk-6 copied to chk-5 by hand
  std::vector<CompletedCheckpoint> list;
  std::vector<Status> skipped;
  ASSERT_TRUE(store.ListCompleted(&list, &skipped).ok());
  EXPECT_EQ(Ids(list), (std::vector<CheckpointId>{1}));
  ASSERT_EQ(skipped.size(), 1u);
  EXPECT_TRUE(skipped[0].IsCorruption());
  EXPECT_TRUE(Contains(skipped[0].message(), dir / "chk-5/_metadata")) << skipped[0].message();
  EXPECT_TRUE(Contains(skipped[0].message(), "checkpoint 6")) << skipped[0].message();
}

TEST(CheckpointStore, LatestIsTheNewestCompleted) {
  ScratchDir dir;
  CheckpointStore store(dir.path());
  MakeComplete(store, 9);
  MakeComplete(store, 11);
  MakeIncomplete(store, 12);
  MakeDamaged(store, 13);
  CompletedCheckpoint latest;
  ASSERT_TRUE(store.Latest(&latest).ok());
  EXPECT_EQ(latest.metadata.id, 11u);
  EXPECT_EQ(latest.path, dir / "chk-11");
}

TEST(CheckpointStore, LatestWithoutCompletedIsNotFound) {
  ScratchDir dir;
  CheckpointStore store(dir.path());
  MakeIncomplete(store, 1);
  CompletedCheckpoint latest;
  Status s = store.Latest(&latest);
  ASSERT_TRUE(s.IsNotFound()) << s.ToString();
  EXPECT_EQ(s.message(), "no completed checkpoint in " + dir.path());
}

TEST(CheckpointStore, MaxIdCountsEveryChkEntry) {
  ScratchDir dir;
  CheckpointStore store(dir.path());
  EXPECT_EQ(store.MaxId(), 0u);
  MakeComplete(store, 3);
  MakeIncomplete(store, 8);
  MakeDamaged(store, 5);
  ASSERT_TRUE(CreateDirs(dir / "chk-x9").ok());
  EXPECT_EQ(store.MaxId(), 8u);
  EXPECT_EQ(CheckpointStore(dir / "nope").MaxId(), 0u);
}

TEST(CheckpointStore, ResolveAcceptsACheckpointDirectory) {
  ScratchDir dir;
  CheckpointStore store(dir.path());
  MakeComplete(store, 4);
  CompletedCheckpoint c;
  ASSERT_TRUE(CheckpointStore::Resolve(dir / "chk-4", &c).ok());
  EXPECT_EQ(c.metadata.id, 4u);
  EXPECT_EQ(c.path, dir / "chk-4");
  ASSERT_TRUE(CheckpointStore::Resolve(dir / "chk-4/", &c).ok());
  EXPECT_EQ(c.path, dir / "chk-4");
}

TEST(CheckpointStore, ResolveAcceptsAMetadataFile) {
  ScratchDir dir;
  CheckpointStore store(dir.path());
  MakeComplete(store, 4);
  CompletedCheckpoint c;
  ASSERT_TRUE(CheckpointStore::Resolve(dir / "chk-4/_metadata", &c).ok());
  EXPECT_EQ(c.metadata.id, 4u);
  EXPECT_EQ(c.path, dir / "chk-4");
}

TEST(CheckpointStore, ResolveMissingPathIsNotFound) {
  ScratchDir dir;
  CompletedCheckpoint c;
  Status s = CheckpointStore::Resolve(dir / "chk-4", &c);
  ASSERT_TRUE(s.IsNotFound()) << s.ToString();
  EXPECT_TRUE(Contains(s.message(), dir / "chk-4")) << s.message();
}

TEST(CheckpointStore, ResolveIncompleteIsNotFound) {
  ScratchDir dir;
  CheckpointStore store(dir.path());
  MakeIncomplete(store, 4);
  CompletedCheckpoint c;
  Status s = CheckpointStore::Resolve(dir / "chk-4", &c);
  ASSERT_TRUE(s.IsNotFound()) << s.ToString();
  EXPECT_TRUE(Contains(s.message(), dir / "chk-4")) << s.message();
  EXPECT_TRUE(Contains(s.message(), "not a completed checkpoint")) << s.message();
}

TEST(CheckpointStore, ResolveDamagedIsCorruption) {
  ScratchDir dir;
  CheckpointStore store(dir.path());
  MakeDamaged(store, 4);
  CompletedCheckpoint c;
  Status s = CheckpointStore::Resolve(dir / "chk-4", &c);
  ASSERT_TRUE(s.IsCorruption()) << s.ToString();
  EXPECT_TRUE(Contains(s.message(), dir / "chk-4/_metadata: damaged")) << s.message();
}

TEST(CheckpointStore, ResolveOtherFileIsInvalidArgument) {
  ScratchDir dir;
  WriteText(dir / "job.yaml", "job: x\n");
  CompletedCheckpoint c;
  Status s = CheckpointStore::Resolve(dir / "job.yaml", &c);
  ASSERT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_TRUE(Contains(s.message(), dir / "job.yaml")) << s.message();
}

TEST(CheckpointStore, RemoveIncompleteRemovesOnlyIncompleteCheckpointsAndWork) {
  ScratchDir dir;
  CheckpointStore store(dir.path());
  MakeComplete(store, 1);
  MakeIncomplete(store, 2);
  MakeDamaged(store, 3);
  MakeIncomplete(store, 4);
  ASSERT_TRUE(CreateDirs(dir / "_work/run-1/op-0").ok());
  WriteText(dir / "_work/run-1/op-0/CURRENT", "x");
  ASSERT_TRUE(CreateDirs(dir / "savepoint").ok());
  WriteText(dir / "_lock", "");

  ASSERT_TRUE(store.RemoveIncomplete().ok());
  EXPECT_EQ(Entries(dir.path()), (std::vector<std::string>{"_lock", "chk-1", "chk-3", "savepoint"}));
  EXPECT_TRUE(PathExists(dir / "chk-3/_metadata"));
  EXPECT_TRUE(PathExists(dir / "chk-1/op-0/operator.state"));
  EXPECT_EQ(CompletedIds(store), (std::vector<CheckpointId>{1}));
}

TEST(CheckpointStore, RemoveIncompleteOfMissingDirIsOk) {
  ScratchDir dir;
  EXPECT_TRUE(CheckpointStore(dir / "nope").RemoveIncomplete().ok());
}

TEST(CheckpointStore, RetainKeepsTheNewestN) {
  ScratchDir dir;
  CheckpointStore store(dir.path());
  for (CheckpointId id : {1, 2, 3, 10, 11}) MakeComplete(store, id);
  ASSERT_TRUE(store.Retain(2).ok());
  EXPECT_EQ(CompletedIds(store), (std::vector<CheckpointId>{10, 11}));
  EXPECT_EQ(Entries(dir.path()), (std::vector<std::string>{"chk-10", "chk-11"}));
  ASSERT_TRUE(store.Retain(5).ok());
  EXPECT_EQ(CompletedIds(store), (std::vector<CheckpointId>{10, 11}));
}

// A running job's retention counts only the checkpoints up to the newest it completed: a newer
// chk-<id> may be one whose commit is being written, or taken back, beside it.
TEST(CheckpointStore, RetainCountsAndRemovesOnlyCheckpointsUpToNewest) {
  ScratchDir dir;
  CheckpointStore store(dir.path());
  for (CheckpointId id : {1, 2, 3, 4, 5}) MakeComplete(store, id);
  ASSERT_TRUE(store.Retain(2, 3).ok());
  EXPECT_EQ(CompletedIds(store), (std::vector<CheckpointId>{2, 3, 4, 5}));
  ASSERT_TRUE(store.Retain(1, 4).ok());
  EXPECT_EQ(CompletedIds(store), (std::vector<CheckpointId>{4, 5}));
  ASSERT_TRUE(store.Retain(1).ok());  // no bound: every checkpoint counts
  EXPECT_EQ(CompletedIds(store), (std::vector<CheckpointId>{5}));
}

TEST(CheckpointStore, RetainNeverTouchesIncompleteOrDamaged) {
  ScratchDir dir;
  CheckpointStore store(dir.path());
  MakeIncomplete(store, 1);
  MakeDamaged(store, 2);
  MakeComplete(store, 3);
  MakeComplete(store, 4);
  MakeIncomplete(store, 5);
  MakeDamaged(store, 6);
  ASSERT_TRUE(store.Retain(1).ok());
  EXPECT_EQ(Entries(dir.path()), (std::vector<std::string>{"chk-1", "chk-2", "chk-4", "chk-5", "chk-6"}));
  EXPECT_TRUE(PathExists(dir / "chk-2/_metadata"));
  EXPECT_TRUE(PathExists(dir / "chk-6/_metadata"));
}

TEST(CheckpointStore, RetainOfMissingDirIsOk) {
  ScratchDir dir;
  CheckpointStore store(dir / "absent");
  EXPECT_TRUE(store.Retain(3).ok());
  EXPECT_FALSE(PathExists(dir / "absent"));
}

TEST(CheckpointStore, RetainZeroIsInvalidAndRemovesNothing) {
  ScratchDir dir;
  CheckpointStore store(dir.path());
  MakeComplete(store, 1);
  EXPECT_TRUE(store.Retain(0).IsInvalidArgument());
  EXPECT_EQ(CompletedIds(store), (std::vector<CheckpointId>{1}));
}

// Shared files lose their last reference only when a checkpoint goes (retention, a failure):
// Retain collects them on its first call and after such events, and otherwise reads no
// checkpoint at all. A file a retained checkpoint lists is never collected.
TEST(CheckpointStore, RetainCollectsSharedFilesOnlyWhenOneMayHaveLostItsLastReference) {
  ScratchDir dir;
  CheckpointStore store(dir.path());
  const std::string shared = dir / "shared/op-0";
  ASSERT_TRUE(CreateDirs(shared).ok());
  auto orphan = [&](const std::string& name) {
    WriteText(shared + "/" + name, "x");
    return shared + "/" + name;
  };
  // Checkpoint 1 lists shared/op-0/kept.
  MakeComplete(store, 1);
  const std::string kept = orphan("kept");
  ASSERT_TRUE(CreateDirs(store.CheckpointPath(1) + "/op-0/keyed").ok());
  ASSERT_TRUE(WriteSharedList(store.CheckpointPath(1) + "/op-0/keyed", {SharedFileRef{"kept", kept}}).ok());
  MakeComplete(store, 2);

  const std::string first = orphan("first");
  ASSERT_TRUE(store.Retain(5).ok());
  EXPECT_FALSE(PathExists(first)) << "collected on the store's first call";
  EXPECT_TRUE(PathExists(kept));

  const std::string idle = orphan("idle");
  ASSERT_TRUE(store.Retain(5).ok());
  EXPECT_TRUE(PathExists(idle)) << "no checkpoint went since: nothing can have lost a reference";

  FailedCheckpoint f;
  f.id = 3;
  f.reason = "declined";
  ASSERT_TRUE(store.RecordFailure(f).ok());
  ASSERT_TRUE(store.Retain(5).ok());
  EXPECT_FALSE(PathExists(idle)) << "collected after a failure";

  const std::string late = orphan("late");
  store.MarkGarbagePossible();
  ASSERT_TRUE(store.Retain(5).ok());
  EXPECT_FALSE(PathExists(late)) << "collected when told";

  const std::string removal = orphan("removal");
  for (CheckpointId id : {4, 5, 6, 7}) MakeComplete(store, id);
  ASSERT_TRUE(store.Retain(5).ok());
  EXPECT_EQ(CompletedIds(store), (std::vector<CheckpointId>{2, 4, 5, 6, 7}));
  EXPECT_FALSE(PathExists(removal)) << "collected after retention removed a checkpoint";
  EXPECT_FALSE(PathExists(kept)) << "its only checkpoint was removed";
}

TEST(CheckpointStore, RecordFailureKeepsTheNewestFailuresAndListFailedSkipsTornLines) {
  ScratchDir dir;
  CheckpointStore store(dir.path());
  std::vector<FailedCheckpoint> list;
  ASSERT_TRUE(store.ListFailed(&list).ok());
  EXPECT_TRUE(list.empty());
  for (CheckpointId id = 1; id <= CheckpointStore::kFailedHistory + 5; ++id)
    ASSERT_TRUE(store.RecordFailure({id, id % 2 ? "checkpoint" : "savepoint", 1000 + static_cast<int64_t>(id), 7,
                                     "a task declined\nthe checkpoint\tbecause"})
                    .ok());
  ASSERT_TRUE(store.ListFailed(&list).ok());
  ASSERT_EQ(list.size(), CheckpointStore::kFailedHistory);
  EXPECT_EQ(list.front().id, 6u);
  EXPECT_EQ(list.back().id, CheckpointStore::kFailedHistory + 5);
  EXPECT_EQ(list.back().kind, "checkpoint");
  EXPECT_EQ(list.back().trigger_time_ms, 1105);
  EXPECT_EQ(list.back().duration_ms, 7);
  EXPECT_EQ(list.back().reason, "a task declined the checkpoint because");
  // A line a crash tore, and one that does not parse, are skipped.
  std::string text;
  ASSERT_TRUE(ReadFile(dir.path() + "/_failed", &text).ok());
  WriteText(dir.path() + "/_failed", "nonsense\n" + text + "200\tcheckpoint\t12");
  ASSERT_TRUE(store.ListFailed(&list).ok());
  EXPECT_EQ(list.size(), CheckpointStore::kFailedHistory);
  EXPECT_EQ(list.back().id, CheckpointStore::kFailedHistory + 5);
}

}  // namespace
}  // namespace cairn
