// Specification of OutputGate: hash edges route every record to the subtask owning its key
// group, forward edges keep order, and barriers and end markers follow every record sent
// before them on every channel.
#include "engine/dataflow/output_gate.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/dataflow/channel.h"
#include "engine/base/key_groups.h"
#include "engine/base/parker.h"
#include "tests/test_util.h"

namespace cairn {
namespace {

// Hash edges of these tests partition KeyValueSchema records by their "key".
KeySelector KeyField() {
  KeySelector k;
  if (!KeySelector::Make(*KeyValueSchema(), {"key"}, &k).ok()) std::abort();
  return k;
}

constexpr uint32_t kMaxParallelism = 128;

// Channels from one producer subtask to `n` consumer subtasks, read back by the test.
class Downstream {
 public:
  explicit Downstream(size_t n, size_t capacity = 1024, const std::string& name = "down") {
    for (size_t i = 0; i < n; ++i)
      channels_.push_back(std::make_unique<Channel>("up[0]->" + name + "[" + std::to_string(i) + "]", capacity,
                                                    &producer_, &consumer_));
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
  // The positions stamped on the priority events of channel `i`, in order.
  std::vector<uint64_t> PriorityPositions(size_t i) {
    std::vector<uint64_t> out;
    PriorityEvent e;
    while (channels_[i]->TryPopPriority(&e)) out.push_back(e.position);
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
  gate.AddHashEdge(down.channels(), KeyField());

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

TEST(OutputGateTest, HashEdgeCutsALargeEmittedBatchIntoChannelBatchesOfAtMost2048Records) {
  // A batch of lines tokenized into words is ten times a batch: each channel still gets
  // batches of at most 2048 records (what its capacity in batches is sized for), in order.
  Downstream down(2);
  OutputGate gate(kMaxParallelism);
  gate.AddHashEdge(down.channels(), KeyField());
  RecordBatch batch;
  for (int i = 0; i < 20000; ++i) batch.Add(Key(i), i);
  ASSERT_TRUE(gate.Emit(&batch));
  ASSERT_TRUE(gate.Flush());
  size_t records = 0;
  for (uint32_t s = 0; s < 2; ++s) {
    std::vector<StreamElement> elements = down.Take(s);
    EXPECT_GE(elements.size(), 4u) << "subtask " << s << " gets about 10000 of the records";
    int64_t last = -1;
    for (const StreamElement& e : elements) {
      ASSERT_EQ(e.kind, StreamElement::Kind::kBatch);
      EXPECT_LE(e.batch->size(), 2048u);
      for (size_t i = 0; i < e.batch->size(); ++i, ++records) {
        EXPECT_GT(e.batch->a(i), last) << "out of order on channel " << s;
        last = e.batch->a(i);
        EXPECT_EQ(OwnerOf(e.batch->key(i), 2), s);
      }
    }
  }
  EXPECT_EQ(records, 20000u);
}

TEST(OutputGateTest, HashEdgeOfOneStringFieldCopiesEveryWordWithItsHashInOrder) {
  // Records of one string field (the word count's words) take a path of their own: each
  // target's rows copied in one pass. Words of every length up to 40 bytes, empty ones and
  // nulls (which stay null), over two emits, the second appending to partial batches.
  SchemaRef words = MakeSchema({{"word", FieldType::kString}});
  KeySelector key;
  ASSERT_TRUE(KeySelector::Make(*words, {"word"}, &key).ok());
  Downstream down(3);
  for (Channel* c : down.channels()) c->set_schema(words);
  OutputGate gate(kMaxParallelism);
  gate.AddHashEdge(down.channels(), key);
  std::vector<std::vector<std::pair<bool, std::string>>> expected(3);  // (null, word) per channel
  for (int round = 0; round < 2; ++round) {
    RecordBatch batch(words);
    for (int i = 0; i < 7000; ++i) {
      RecordBatch::RowWriter w = batch.AppendRow();
      const bool null = i % 97 == 5;
      std::string word(static_cast<size_t>((i * 7 + round) % 41), static_cast<char>('a' + i % 26));
      if (!word.empty()) word[0] = static_cast<char>('0' + i % 10);
      if (!null) w.SetString(0, word);
      const std::string_view k = null ? std::string_view() : std::string_view(word);
      const uint32_t owner = SubtaskForKeyGroup(KeyGroupOf(KeyHash(k), kMaxParallelism), kMaxParallelism, 3);
      expected[owner].emplace_back(null, null ? std::string() : word);
    }
    ASSERT_TRUE(gate.Emit(&batch));
  }
  ASSERT_TRUE(gate.Flush());
  for (uint32_t s = 0; s < 3; ++s) {
    std::vector<std::pair<bool, std::string>> got;
    for (const StreamElement& e : down.Take(s)) {
      ASSERT_EQ(e.kind, StreamElement::Kind::kBatch);
      EXPECT_LE(e.batch->size(), 2048u);
      ASSERT_TRUE(e.batch->HasKeyHashes(key.fields()));
      for (size_t i = 0; i < e.batch->size(); ++i) {
        EXPECT_EQ(e.batch->key_hash(i), KeyHash(e.batch->GetString(i, 0)));
        got.emplace_back(e.batch->IsNull(i, 0), std::string(e.batch->GetString(i, 0)));
      }
    }
    EXPECT_EQ(got, expected[s]) << "channel " << s;
  }
}

TEST(OutputGateTest, AFullChannelDoesNotHoldBackTheBatchesOfAnotherChannelOfTheSameEmit) {
  // Channel 0 holds one batch and is full; channel 1 is drained by a consumer. The emit's
  // batches for channel 1 all arrive while channel 0 stays full (an unaligned checkpoint's
  // consumer waiting for exactly those would otherwise wait for channel 0's consumer).
  Downstream down(2, /*capacity=*/1);
  std::vector<Channel*> ch = down.channels();
  ASSERT_TRUE(ch[0]->Push(StreamElement::OfBatch(std::make_unique<RecordBatch>())));
  OutputGate gate(kMaxParallelism);
  gate.AddHashEdge(ch, KeyField());
  RecordBatch batch;
  size_t for_1 = 0;
  for (int i = 0; i < 20000; ++i) {
    batch.Add(Key(i), i);
    for_1 += OwnerOf(Key(i), 2) == 1 ? 1 : 0;
  }
  // Pops what channel `c` holds now, counting its records into *got.
  auto drain = [&](int c, size_t* got) {
    for (StreamElement e; ch[c]->TryPop(&e);)
      if (e.kind == StreamElement::Kind::kBatch) *got += e.batch->size();
  };
  std::thread producer([&] { EXPECT_TRUE(gate.Emit(&batch)); });
  // Channel 1's consumer (this thread) gets its full batches; the rest waits in the gate for
  // the next emit or a flush. Channel 0 is not read meanwhile.
  size_t got_1 = 0;
  const size_t full_1 = for_1 / 2048 * 2048;
  EXPECT_TRUE(testing::PollUntil([&] {
    drain(1, &got_1);
    return got_1 == full_1;
  })) << got_1 << " of " << full_1;
  // Now channel 0's consumer takes what it holds; the emit completes.
  size_t got_0 = 0;
  const size_t full_0 = (20000 - for_1) / 2048 * 2048;
  EXPECT_TRUE(testing::PollUntil([&] {
    drain(0, &got_0);
    return got_0 >= full_0;
  })) << got_0 << " of " << full_0;
  producer.join();
  EXPECT_EQ(got_0, full_0);
}

TEST(OutputGateTest, HashEdgeBatchesCarryTheKeyHashOfEveryRecordAlsoInRecycledBatches) {
  constexpr uint32_t kParallelism = 3;
  Downstream down(kParallelism);
  OutputGate gate(kMaxParallelism);
  KeySelector key = KeyField();
  gate.AddHashEdge(down.channels(), key);
  size_t records = 0;
  for (int round = 0; round < 3; ++round) {  // later rounds append to batches given back
    RecordBatch batch;
    for (int i = 0; i < 3000; ++i) batch.Add(Key(round * 3000 + i), i);
    ASSERT_TRUE(gate.Emit(&batch));
    ASSERT_TRUE(gate.Flush());
    for (uint32_t s = 0; s < kParallelism; ++s)
      for (StreamElement& e : down.Take(s)) {
        if (e.kind != StreamElement::Kind::kBatch) continue;
        ASSERT_TRUE(e.batch->HasKeyHashes(key.fields()));
        for (size_t i = 0; i < e.batch->size(); ++i, ++records) {
          ASSERT_EQ(e.batch->key_hash(i), KeyHash(e.batch->key(i))) << e.batch->key(i);
          EXPECT_EQ(OwnerOf(e.batch->key(i), kParallelism), s);
        }
        down.channels()[s]->Recycle(std::move(e.batch));
      }
  }
  EXPECT_EQ(records, 9000u);
}

TEST(OutputGateTest, HashEdgeOfACompositeKeyCarriesItsSelectorsHash) {
  Downstream down(2);
  OutputGate gate(kMaxParallelism);
  KeySelector key;
  ASSERT_TRUE(KeySelector::Make(*KeyValueSchema(), {"a", "key"}, &key).ok());
  gate.AddHashEdge(down.channels(), key);
  RecordBatch batch;
  for (int i = 0; i < 500; ++i) batch.Add(Key(i % 7), i);
  ASSERT_TRUE(gate.Emit(&batch));
  ASSERT_TRUE(gate.Flush());
  std::string scratch;
  size_t records = 0;
  for (size_t s = 0; s < 2; ++s)
    for (const StreamElement& e : down.Take(s)) {
      ASSERT_TRUE(e.batch->HasKeyHashes(key.fields()));
      EXPECT_FALSE(e.batch->HasKeyHashes(KeyField().fields()));
      for (size_t i = 0; i < e.batch->size(); ++i, ++records) {
        uint64_t h = key.Hash(*e.batch, i, &scratch);
        EXPECT_EQ(e.batch->key_hash(i), h);
        EXPECT_EQ(SubtaskForKeyGroup(KeyGroupOf(h, kMaxParallelism), kMaxParallelism, 2), s);
      }
    }
  EXPECT_EQ(records, 500u);
}

TEST(OutputGateTest, HashEdgeKeepsTheValuesWithTheirKeys) {
  Downstream down(2);
  OutputGate gate(kMaxParallelism);
  gate.AddHashEdge(down.channels(), KeyField());
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
  gate.AddHashEdge(down.channels(), KeyField());
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
  gate.AddHashEdge(down.channels(), KeyField());
  ASSERT_TRUE(gate.Flush());
  EXPECT_TRUE(down.Take(0).empty());
  EXPECT_TRUE(down.Take(1).empty());
}

TEST(OutputGateTest, BroadcastFlushesPartialBatchesBeforeTheBarrierOnEveryChannel) {
  constexpr uint32_t kParallelism = 3;
  Downstream down(kParallelism);
  OutputGate gate(kMaxParallelism);
  gate.AddHashEdge(down.channels(), KeyField());

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
  gate.AddHashEdge(hashed.channels(), KeyField());
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

// Stands for a task blocked on a full output channel: on the first call it takes an unaligned
// snapshot (its state covers every record emitted so far, as a source's position would) and
// puts the barrier on every channel's priority lane; on every call it plays the consumers and
// drains the channels, so that the blocked push goes through.
class SnapshotWhileBlocked : public BlockedHandler {
 public:
  SnapshotWhileBlocked(OutputGate* gate, std::vector<Downstream*> consumers)
      : gate_(gate), consumers_(std::move(consumers)) {}
  bool OnBlocked(std::chrono::steady_clock::time_point* deadline) override {
    if (!snapshot_taken_) {
      snapshot_taken_ = true;
      covered_ = emitted;
      PriorityEvent pe;
      pe.kind = PriorityEvent::Kind::kUnalignedBarrier;
      pe.barrier.id = 1;
      gate_->BroadcastPriority(pe);
    }
    for (Downstream* d : consumers_)
      for (size_t i = 0; i < d->channels().size(); ++i)
        for (StreamElement& e : d->Take(i)) drained[d->channels()[i]->name()].push_back(std::move(e));
    return true;
  }
  uint64_t emitted = 0;          // records handed to Emit, counting the one in progress
  bool snapshot_taken_ = false;
  uint64_t covered_ = 0;         // what the snapshot's state covers
  std::map<std::string, std::vector<StreamElement>> drained;

 private:
  OutputGate* gate_;
  std::vector<Downstream*> consumers_;
};

// Issue: a producer with two outgoing edges pushed a batch edge by edge; when the push on the
// first edge blocked and the task took an unaligned snapshot there, the second edge's barrier
// was stamped without that batch while the snapshot covered it: after a restore those records
// were in neither the consumer's state nor the channel state.
void ExpectSnapshotNeverSplitsABatch(bool hash_first) {
  Downstream first(hash_first ? 2 : 1, /*capacity=*/1, "first");
  Downstream second(1, /*capacity=*/1, "second");
  OutputGate gate(kMaxParallelism);
  if (hash_first) {
    gate.AddHashEdge(first.channels(), KeyField());
  } else {
    gate.AddForwardEdge(first.channels()[0]);
  }
  gate.AddForwardEdge(second.channels()[0]);
  SnapshotWhileBlocked handler(&gate, {&first, &second});
  gate.set_blocked_handler(&handler);

  // Full batches, so that each Emit pushes on every channel and the channels fill up.
  int next = 0;
  for (int round = 0; round < 3 && !handler.snapshot_taken_; ++round) {
    RecordBatch batch;
    for (int i = 0; i < 4 * 2048; ++i) batch.Add(Key(next++));  // ~4096 per hash channel
    handler.emitted += batch.size();
    ASSERT_TRUE(gate.Emit(&batch));
  }
  ASSERT_TRUE(handler.snapshot_taken_) << "no push blocked: the test did not exercise a blocked fan-out";
  ASSERT_TRUE(gate.Flush());

  // Every record the snapshot covers must lie before the barrier on every edge: on the forward
  // edge the barrier's position is the count of records covered; on the hash edge the positions
  // add up to it.
  uint64_t first_positions = 0;
  for (size_t i = 0; i < first.channels().size(); ++i) {
    std::vector<uint64_t> pos = first.PriorityPositions(i);
    ASSERT_EQ(pos.size(), 1u);
    first_positions += pos[0];
  }
  std::vector<uint64_t> second_pos = second.PriorityPositions(0);
  ASSERT_EQ(second_pos.size(), 1u);
  EXPECT_EQ(first_positions, handler.covered_);
  EXPECT_EQ(second_pos[0], handler.covered_) << "the snapshot split the batch being emitted across the edges";

  // And every record still arrives once on each edge.
  for (StreamElement& e : second.Take(0)) handler.drained[second.channels()[0]->name()].push_back(std::move(e));
  for (size_t i = 0; i < first.channels().size(); ++i)
    for (StreamElement& e : first.Take(i)) handler.drained[first.channels()[i]->name()].push_back(std::move(e));
  size_t first_records = 0;
  for (size_t i = 0; i < first.channels().size(); ++i) first_records += KeysOf(handler.drained[first.channels()[i]->name()]).size();
  EXPECT_EQ(first_records, static_cast<size_t>(next));
  EXPECT_EQ(KeysOf(handler.drained[second.channels()[0]->name()]).size(), static_cast<size_t>(next));
}

TEST(OutputGateTest, SnapshotWhileAFanOutPushIsBlockedCoversTheBatchOnEveryForwardEdge) {
  ExpectSnapshotNeverSplitsABatch(/*hash_first=*/false);
}

TEST(OutputGateTest, SnapshotWhileAFanOutPushIsBlockedCoversTheBatchOnHashAndForwardEdges) {
  ExpectSnapshotNeverSplitsABatch(/*hash_first=*/true);
}

}  // namespace
}  // namespace cairn
