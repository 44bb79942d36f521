// Specification of OutputGate: hash edges route every record to the subtask owning its key
// group, forward edges keep order, and barriers and end markers follow every record sent
// before them on every channel.
#include "engine/output_gate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/channel.h"
#include "engine/key_groups.h"
#include "engine/parker.h"

namespace cairn {
namespace {

constexpr uint32_t kMaxParallelism = 128;

// Channels from one producer subtask to `n` consumer subtasks, read back by the test.
class Downstream {
 public:
  explicit Downstream(size_t n) {
    for (size_t i = 0; i < n; ++i)
      channels_.push_back(std::make_unique<Channel>("up[0]->down[" + std::to_string(i) + "]", 1024, &producer_, &consumer_));
  }
  std::vector<Channel*> channels() {
    std::vector<Channel*> out;
    for (auto& c : channels_) out.push_back(c.get());
    return out;
  }
  // Every element queued on channel `i`, in order.
  std::vector<StreamElement> Take(size_t i) {
    std::vector<StreamElement> out;
    StreamElement e;
    while (channels_[i]->TryPop(&e)) out.push_back(std::move(e));
    return out;
  }

 private:
  Parker producer_;
  Parker consumer_;
  std::vector<std::unique_ptr<Channel>> channels_;
};

// The keys of the batches among `elements`, in order.
std::vector<std::string> KeysOf(const std::vector<StreamElement>& elements) {
  std::vector<std::string> keys;
  for (const StreamElement& e : elements)
    if (e.kind == StreamElement::Kind::kBatch)
      for (size_t i = 0; i < e.batch->size(); ++i) keys.emplace_back(e.batch->key(i));
  return keys;
}

uint32_t OwnerOf(std::string_view key, uint32_t parallelism) {
  return SubtaskForKeyGroup(KeyGroupOf(KeyHash(key), kMaxParallelism), kMaxParallelism, parallelism);
}

std::string Key(int i) { return "key-" + std::to_string(i); }

TEST(OutputGateTest, HashEdgePutsEveryRecordOnTheChannelOfTheSubtaskOwningItsKeyGroup) {
  constexpr uint32_t kParallelism = 3;
  Downstream down(kParallelism);
  OutputGate gate(kMaxParallelism);
  gate.AddHashEdge(down.channels());

  RecordBatch batch;
  for (int i = 0; i < 5000; ++i) batch.Add(Key(i), i);  // more than one full batch per channel
  ASSERT_TRUE(gate.Emit(&batch));
  ASSERT_TRUE(gate.Flush());

  std::map<std::string, int> seen;
  for (uint32_t s = 0; s < kParallelism; ++s) {
    std::vector<std::string> keys = KeysOf(down.Take(s));
    EXPECT_FALSE(keys.empty()) << "subtask " << s << " owns some of 5000 keys";
    for (const std::string& k : keys) {
      EXPECT_EQ(OwnerOf(k, kParallelism), s) << k;
      ++seen[k];
    }
  }
  ASSERT_EQ(seen.size(), 5000u);
  for (const auto& [k, n] : seen) EXPECT_EQ(n, 1) << k;
}

TEST(OutputGateTest, HashEdgeKeepsTheValuesWithTheirKeys) {
  Downstream down(2);
  OutputGate gate(kMaxParallelism);
  gate.AddHashEdge(down.channels());
  RecordBatch batch;
  for (int i = 0; i < 100; ++i) batch.Add(Key(i), i, -i);
  ASSERT_TRUE(gate.Emit(&batch));
  ASSERT_TRUE(gate.Flush());
  int records = 0;
  for (size_t s = 0; s < 2; ++s)
    for (const StreamElement& e : down.Take(s))
      for (size_t i = 0; i < e.batch->size(); ++i, ++records) {
        EXPECT_EQ(Key(static_cast<int>(e.batch->a(i))), e.batch->key(i));
        EXPECT_EQ(e.batch->b(i), -e.batch->a(i));
      }
  EXPECT_EQ(records, 100);
}

TEST(OutputGateTest, EmitTakesTheRecordsOutOfTheCallersBatch) {
  Downstream down(2);
  OutputGate gate(kMaxParallelism);
  gate.AddHashEdge(down.channels());
  RecordBatch batch;
  batch.Add("x");
  batch.Add("y");
  ASSERT_TRUE(gate.Emit(&batch));
  EXPECT_TRUE(batch.empty());
  EXPECT_EQ(gate.records_out(), 2u);
}

TEST(OutputGateTest, ForwardEdgeKeepsTheOrderOfRecordsAcrossBatchesOfEverySize) {
  Downstream down(1);
  OutputGate gate(kMaxParallelism);
  gate.AddForwardEdge(down.channels()[0]);

  // Small batches are buffered, large ones may be handed over whole; either way order holds.
  std::vector<std::string> expected;
  int next = 0;
  for (int size : {3, 1000, 1, 5000, 2047, 2, 600}) {
    RecordBatch batch;
    for (int i = 0; i < size; ++i) {
      expected.push_back(Key(next));
      batch.Add(Key(next++));
    }
    ASSERT_TRUE(gate.Emit(&batch));
    EXPECT_TRUE(batch.empty());
  }
  ASSERT_TRUE(gate.Flush());
  EXPECT_EQ(KeysOf(down.Take(0)), expected);
}

TEST(OutputGateTest, FlushWithNothingBufferedPushesNothing) {
  Downstream down(2);
  OutputGate gate(kMaxParallelism);
  gate.AddHashEdge(down.channels());
  ASSERT_TRUE(gate.Flush());
  EXPECT_TRUE(down.Take(0).empty());
  EXPECT_TRUE(down.Take(1).empty());
}

TEST(OutputGateTest, BroadcastFlushesPartialBatchesBeforeTheBarrierOnEveryChannel) {
  constexpr uint32_t kParallelism = 3;
  Downstream down(kParallelism);
  OutputGate gate(kMaxParallelism);
  gate.AddHashEdge(down.channels());

  RecordBatch batch;
  for (int i = 0; i < 30; ++i) batch.Add(Key(i));  // a few records: partial batches only
  ASSERT_TRUE(gate.Emit(&batch));
  Barrier b;
  b.id = 7;
  ASSERT_TRUE(gate.Broadcast(StreamElement::OfBarrier(b)));

  size_t records = 0;
  for (uint32_t s = 0; s < kParallelism; ++s) {
    std::vector<StreamElement> elements = down.Take(s);
    ASSERT_FALSE(elements.empty());
    const StreamElement& last = elements.back();
    ASSERT_EQ(last.kind, StreamElement::Kind::kBarrier) << "subtask " << s;
    EXPECT_EQ(last.barrier.id, 7u);
    for (size_t i = 0; i + 1 < elements.size(); ++i) EXPECT_EQ(elements[i].kind, StreamElement::Kind::kBatch);
    for (const std::string& k : KeysOf(elements)) EXPECT_EQ(OwnerOf(k, kParallelism), s) << k;
    records += KeysOf(elements).size();
  }
  EXPECT_EQ(records, 30u) << "every buffered record went out before the barrier";
}

TEST(OutputGateTest, BroadcastPutsTheMarkerOnEveryChannelOfEveryEdge) {
  Downstream hashed(2);
  Downstream forwarded(1);
  OutputGate gate(kMaxParallelism);
  gate.AddHashEdge(hashed.channels());
  gate.AddForwardEdge(forwarded.channels()[0]);

  RecordBatch batch;
  batch.Add("only");
  ASSERT_TRUE(gate.Emit(&batch));
  ASSERT_TRUE(gate.Broadcast(StreamElement::EndOfInput()));

  std::vector<StreamElement> f = forwarded.Take(0);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(KeysOf(f), std::vector<std::string>{"only"});
  EXPECT_EQ(f[1].kind, StreamElement::Kind::kEndOfInput);
  size_t hashed_records = 0;
  for (size_t s = 0; s < 2; ++s) {
    std::vector<StreamElement> h = hashed.Take(s);
    ASSERT_FALSE(h.empty());
    EXPECT_EQ(h.back().kind, StreamElement::Kind::kEndOfInput);
    hashed_records += KeysOf(h).size();
  }
  EXPECT_EQ(hashed_records, 1u);
}

}  // namespace
}  // namespace cairn
