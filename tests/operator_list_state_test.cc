// Specification of operator list state (state/operator_list_state.h): typed lists per subtask,
// their bytes, what a restore hands back, and how a change of parallelism redistributes them.
#include "state/operator_list_state.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace cairn {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// The bytes of one subtask whose store holds split "offsets" and union "seen".
std::string SubtaskBytes(std::vector<int64_t> offsets, std::vector<std::string> seen) {
  OperatorStateStore store;
  OperatorListState<int64_t>* o = nullptr;
  OperatorListState<std::string>* s = nullptr;
  EXPECT_TRUE(store.GetListState("offsets", &o).ok());
  EXPECT_TRUE(store.GetUnionListState("seen", &s).ok());
  o->Update(std::move(offsets));
  s->Update(std::move(seen));
  return store.Snapshot();
}

// The items of split "offsets" and union "seen" in `bytes`, as a restore hands them back.
struct Restored {
  std::vector<int64_t> offsets;
  std::vector<std::string> seen;
};
Restored Restore(const std::string& bytes) {
  OperatorStateStore store;
  EXPECT_TRUE(store.Restore(bytes, "test").ok());
  OperatorListState<int64_t>* o = nullptr;
  OperatorListState<std::string>* s = nullptr;
  EXPECT_TRUE(store.GetListState("offsets", &o).ok());
  EXPECT_TRUE(store.GetUnionListState("seen", &s).ok());
  return Restored{o->items(), s->items()};
}

TEST(OperatorListState, AFreshStoreIsEmptyUntilAStateIsDeclared) {
  OperatorStateStore store;
  EXPECT_TRUE(store.empty());
  OperatorListState<int64_t>* o = nullptr;
  ASSERT_TRUE(store.GetListState("offsets", &o).ok());
  EXPECT_FALSE(store.empty()) << "a declared state is stored even while its list is empty";
  EXPECT_THAT(o->items(), IsEmpty());
}

TEST(OperatorListState, ASnapshotRestoresTheSameItemsInOrder) {
  Restored r = Restore(SubtaskBytes({7, -3, 7}, {"b", "", "a"}));
  EXPECT_THAT(r.offsets, ElementsAre(7, -3, 7));
  EXPECT_THAT(r.seen, ElementsAre("b", "", "a"));
}

TEST(OperatorListState, AddUpdateAndClearChangeWhatTheNextSnapshotStores) {
  OperatorStateStore store;
  OperatorListState<int64_t>* o = nullptr;
  ASSERT_TRUE(store.GetListState("offsets", &o).ok());
  o->Add(1);
  o->Add(2);
  std::string first = store.Snapshot();
  o->Clear();
  o->Add(9);
  std::string second = store.Snapshot();
  OperatorStateStore a, b;
  ASSERT_TRUE(a.Restore(first, "first").ok());
  ASSERT_TRUE(b.Restore(second, "second").ok());
  OperatorListState<int64_t>* ao = nullptr;
  OperatorListState<int64_t>* bo = nullptr;
  ASSERT_TRUE(a.GetListState("offsets", &ao).ok());
  ASSERT_TRUE(b.GetListState("offsets", &bo).ok());
  EXPECT_THAT(ao->items(), ElementsAre(1, 2));
  EXPECT_THAT(bo->items(), ElementsAre(9));
}

TEST(OperatorListState, DeclaringAgainReturnsTheSameStateAndAnotherModeOrTypeIsRefused) {
  OperatorStateStore store;
  OperatorListState<int64_t>* a = nullptr;
  OperatorListState<int64_t>* b = nullptr;
  ASSERT_TRUE(store.GetListState("x", &a).ok());
  ASSERT_TRUE(store.GetListState("x", &b).ok());
  EXPECT_EQ(a, b);
  OperatorListState<int64_t>* as_union = nullptr;
  Status s = store.GetUnionListState("x", &as_union);
  EXPECT_TRUE(s.IsInvalidArgument()) << s.ToString();
  EXPECT_THAT(s.ToString(), HasSubstr("list state 'x' is split of int64, not union of int64"));
  OperatorListState<std::string>* as_string = nullptr;
  s = store.GetListState("x", &as_string);
  EXPECT_THAT(s.ToString(), HasSubstr("list state 'x' is split of int64, not split of string"));
}

TEST(OperatorListState, ARestoredStateDeclaredWithAnotherTypeOrModeIsRefusedNamingTheCheckpoint) {
  const std::string bytes = SubtaskBytes({1}, {"a"});
  OperatorStateStore store;
  ASSERT_TRUE(store.Restore(bytes, "checkpoint /ck/chk-3, operator op[1]").ok());
  OperatorListState<std::string>* offsets = nullptr;
  Status s = store.GetListState("offsets", &offsets);
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_THAT(s.ToString(),
              HasSubstr("checkpoint /ck/chk-3, operator op[1]: list state 'offsets' is split of int64, not split of string"));
  OperatorListState<std::string>* seen = nullptr;
  s = store.GetListState("seen", &seen);
  EXPECT_THAT(s.ToString(), HasSubstr("list state 'seen' is union of string, not split of string"));
}

TEST(OperatorListState, ItemsThatDoNotReadAsTheTypeAreRefused) {
  // A state stored as int64 by its name, but with a 3-byte item.
  std::string bytes = EncodeListStates({ListStateBytes{ListStateMode::kSplit, "int64", "offsets", {"abc"}}});
  OperatorStateStore store;
  ASSERT_TRUE(store.Restore(bytes, "checkpoint c").ok());
  OperatorListState<int64_t>* o = nullptr;
  Status s = store.GetListState("offsets", &o);
  EXPECT_TRUE(s.IsInvalidArgument());
  EXPECT_THAT(s.ToString(), HasSubstr("checkpoint c: item 0 of list state 'offsets' does not read as int64"));
}

TEST(OperatorListState, ARestoredStateThatIsNotDeclaredIsStoredAgainUnchanged) {
  const std::string bytes = SubtaskBytes({4, 5}, {"a"});
  OperatorStateStore store;
  ASSERT_TRUE(store.Restore(bytes, "test").ok());
  OperatorListState<int64_t>* o = nullptr;
  ASSERT_TRUE(store.GetListState("offsets", &o).ok());
  o->Add(6);
  // "seen" is never declared in this run: the next checkpoint keeps it.
  Restored r = Restore(store.Snapshot());
  EXPECT_THAT(r.offsets, ElementsAre(4, 5, 6));
  EXPECT_THAT(r.seen, ElementsAre("a"));
}

TEST(OperatorListState, EveryTruncationAndEveryFlippedByteIsRejectedOrReadsBackSafely) {
  const std::string bytes = SubtaskBytes({1, 2, 3}, {"x", "yy"});
  std::vector<ListStateBytes> states;
  ASSERT_TRUE(DecodeListStates(bytes, &states));
  for (size_t n = 0; n < bytes.size(); ++n)
    EXPECT_FALSE(DecodeListStates(bytes.substr(0, n), &states)) << "truncated to " << n << " bytes";
  EXPECT_FALSE(DecodeListStates(bytes + "z", &states)) << "trailing bytes";
  for (size_t i = 0; i < bytes.size(); ++i) {
    std::string bad = bytes;
    bad[i] = static_cast<char>(bad[i] ^ 0x80);
    OperatorStateStore store;
    (void)store.Restore(bad, "flipped");  // may parse (a flipped item byte), must not crash
  }
}

TEST(OperatorListState, TheBytesAreTheDocumentedFormat) {
  std::string b = EncodeListStates({ListStateBytes{ListStateMode::kUnion, "int64", "n", {std::string(8, '\0')}}});
  std::string want;
  want += '\1';                                  // format
  want += std::string("\1\0\0\0\0\0\0\0", 8);    // one state
  want += '\1';                                  // union
  want += std::string("\5\0\0\0\0\0\0\0", 8) + "int64";
  want += std::string("\1\0\0\0\0\0\0\0", 8) + "n";
  want += std::string("\1\0\0\0\0\0\0\0", 8);    // one item
  want += std::string("\x8\0\0\0\0\0\0\0", 8) + std::string(8, '\0');
  EXPECT_EQ(b, want);
}

// ---- Redistribution ------------------------------------------------------------------------

std::map<uint32_t, std::string> Redistribute(const std::map<uint32_t, std::string>& old, uint32_t from, uint32_t to) {
  std::map<uint32_t, std::string> now;
  Status s = RedistributeListStates("op", from, old, to, "checkpoint c", &now);
  EXPECT_TRUE(s.ok()) << s.ToString();
  return now;
}

TEST(OperatorListStateRedistribution, AtTheSameParallelismSplitItemsStayAndUnionItemsReachEverySubtask) {
  std::map<uint32_t, std::string> old{{0, SubtaskBytes({1}, {"a"})}, {1, SubtaskBytes({2, 3}, {"b"})}};
  std::map<uint32_t, std::string> now = Redistribute(old, 2, 2);
  ASSERT_EQ(now.size(), 2u);
  EXPECT_THAT(Restore(now[0]).offsets, ElementsAre(1));
  EXPECT_THAT(Restore(now[1]).offsets, ElementsAre(2, 3));
  EXPECT_THAT(Restore(now[0]).seen, ElementsAre("a", "b"));
  EXPECT_THAT(Restore(now[1]).seen, ElementsAre("a", "b"));
}

TEST(OperatorListStateRedistribution, AtTheSameParallelismWithoutUnionStatesEverySubtaskGetsItsOwnBytes) {
  auto split_only = [](std::vector<std::string> items) {
    return EncodeListStates({ListStateBytes{ListStateMode::kSplit, "string", "s", std::move(items)}});
  };
  std::map<uint32_t, std::string> old{{0, split_only({"x"})}, {1, split_only({"y", "z"})}};
  EXPECT_EQ(Redistribute(old, 2, 2), old);
}

TEST(OperatorListStateRedistribution, ScalingUpSplitsItemKToSubtaskKModP) {
  // Old items in order: 10 11 (subtask 0), 20 21 22 (subtask 1).
  std::map<uint32_t, std::string> old{{0, SubtaskBytes({10, 11}, {"a"})}, {1, SubtaskBytes({20, 21, 22}, {"b", "c"})}};
  std::map<uint32_t, std::string> now = Redistribute(old, 2, 3);
  ASSERT_EQ(now.size(), 3u);
  EXPECT_THAT(Restore(now[0]).offsets, ElementsAre(10, 21));
  EXPECT_THAT(Restore(now[1]).offsets, ElementsAre(11, 22));
  EXPECT_THAT(Restore(now[2]).offsets, ElementsAre(20));
  for (uint32_t i = 0; i < 3; ++i) EXPECT_THAT(Restore(now[i]).seen, ElementsAre("a", "b", "c")) << "union, subtask " << i;
}

TEST(OperatorListStateRedistribution, ScalingDownKeepsEveryItemOnce) {
  std::map<uint32_t, std::string> old{
      {0, SubtaskBytes({1}, {})}, {1, SubtaskBytes({2}, {"x"})}, {2, SubtaskBytes({3, 4}, {"y"})}};
  std::map<uint32_t, std::string> now = Redistribute(old, 3, 1);
  ASSERT_EQ(now.size(), 1u);
  EXPECT_THAT(Restore(now[0]).offsets, ElementsAre(1, 2, 3, 4));
  EXPECT_THAT(Restore(now[0]).seen, ElementsAre("x", "y"));
}

TEST(OperatorListStateRedistribution, EveryNewSubtaskGetsEveryStateEvenWhenItHasNoItems) {
  std::map<uint32_t, std::string> old{{0, SubtaskBytes({5}, {})}};  // subtask 1 stored nothing
  std::map<uint32_t, std::string> now = Redistribute(old, 2, 4);
  ASSERT_EQ(now.size(), 4u);
  for (uint32_t i = 1; i < 4; ++i) {
    std::vector<ListStateBytes> states;
    ASSERT_TRUE(DecodeListStates(now[i], &states));
    ASSERT_EQ(states.size(), 2u);
    EXPECT_EQ(states[0].name, "offsets");
    EXPECT_THAT(states[0].items, IsEmpty());
  }
  EXPECT_THAT(Restore(now[0]).offsets, ElementsAre(5));
}

TEST(OperatorListStateRedistribution, DamagedBytesFailNamingTheOperatorAndSubtask) {
  std::map<uint32_t, std::string> old{{0, SubtaskBytes({1}, {})}, {1, "garbage"}};
  for (uint32_t to : {2u, 3u}) {
    std::map<uint32_t, std::string> now;
    Status s = RedistributeListStates("op", 2, old, to, "checkpoint c", &now);
    EXPECT_TRUE(s.IsCorruption()) << s.ToString();
    EXPECT_THAT(s.ToString(), HasSubstr("checkpoint c: list state of operator 'op' subtask 1 is damaged"));
  }
}

TEST(OperatorListStateRedistribution, SubtasksThatDisagreeOnAStateAreDamage) {
  std::map<uint32_t, std::string> old{
      {0, EncodeListStates({ListStateBytes{ListStateMode::kSplit, "int64", "n", {}}})},
      {1, EncodeListStates({ListStateBytes{ListStateMode::kUnion, "int64", "n", {}}})}};
  std::map<uint32_t, std::string> now;
  Status s = RedistributeListStates("op", 2, old, 3, "checkpoint c", &now);
  EXPECT_TRUE(s.IsCorruption());
  EXPECT_THAT(s.ToString(), HasSubstr("list state 'n' of operator 'op' is split of int64 in one subtask but union of int64 in subtask 1"));
}

}  // namespace
}  // namespace cairn
