// Specification of Channel (the bounded SPSC edge between two subtasks) and of Parker (where a
// thread sleeps until it is woken).
#include "engine/dataflow/channel.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "engine/base/parker.h"
#include "tests/test_util.h"

namespace cairn {
namespace {

pid_t ThreadId() { return static_cast<pid_t>(syscall(SYS_gettid)); }

// The scheduler state of thread `tid` of this process ('R' running, 'S' sleeping, ...).
char ThreadState(pid_t tid) {
  std::ifstream f("/proc/self/task/" + std::to_string(tid) + "/stat");
  std::string line;
  std::getline(f, line);
  size_t paren = line.rfind(')');
  return paren == std::string::npos || paren + 2 >= line.size() ? '?' : line[paren + 2];
}

// Waits until thread `tid` is asleep in the kernel. The threads this is used on make no
// blocking call except the futex wait of Parker::Park, so asleep means parked.
bool WaitUntilParked(pid_t tid) {
  return testing::PollUntil([&] { return ThreadState(tid) == 'S'; });
}

StreamElement BatchOf(std::initializer_list<std::string_view> keys) {
  auto b = std::make_unique<RecordBatch>();
  for (std::string_view k : keys) b->Add(k);
  return StreamElement::OfBatch(std::move(b));
}

StreamElement BarrierOf(CheckpointId id) {
  Barrier b;
  b.id = id;
  return StreamElement::OfBarrier(b);
}

class ChannelTest : public ::testing::Test {
 protected:
  Parker producer_;
  Parker consumer_;
};

TEST_F(ChannelTest, DeliversBatchesBarriersAndEndMarkersInTheOrderPushed) {
  Channel ch("a[0]->b[0]", 16, &producer_, &consumer_);
  ASSERT_TRUE(ch.Push(BatchOf({"one", "two"})));
  ASSERT_TRUE(ch.Push(BarrierOf(1)));
  ASSERT_TRUE(ch.Push(BatchOf({"three"})));
  ASSERT_TRUE(ch.Push(StreamElement::EndOfInput()));
  ASSERT_TRUE(ch.Push(BarrierOf(2)));
  ASSERT_TRUE(ch.Push(StreamElement::EndOfStream()));

  StreamElement e;
  ASSERT_TRUE(ch.TryPop(&e));
  ASSERT_EQ(e.kind, StreamElement::Kind::kBatch);
  ASSERT_EQ(e.batch->size(), 2u);
  EXPECT_EQ(e.batch->key(0), "one");
  EXPECT_EQ(e.batch->key(1), "two");
  ASSERT_TRUE(ch.TryPop(&e));
  ASSERT_EQ(e.kind, StreamElement::Kind::kBarrier);
  EXPECT_EQ(e.barrier.id, 1u);
  ASSERT_TRUE(ch.TryPop(&e));
  ASSERT_EQ(e.kind, StreamElement::Kind::kBatch);
  ASSERT_EQ(e.batch->size(), 1u);
  EXPECT_EQ(e.batch->key(0), "three");
  ASSERT_TRUE(ch.TryPop(&e));
  EXPECT_EQ(e.kind, StreamElement::Kind::kEndOfInput);
  ASSERT_TRUE(ch.TryPop(&e));
  ASSERT_EQ(e.kind, StreamElement::Kind::kBarrier);
  EXPECT_EQ(e.barrier.id, 2u);
  ASSERT_TRUE(ch.TryPop(&e));
  EXPECT_EQ(e.kind, StreamElement::Kind::kEndOfStream);
  EXPECT_FALSE(ch.TryPop(&e));
  EXPECT_FALSE(ch.HasData());
}

TEST_F(ChannelTest, TryPopOnAnEmptyChannelTakesNothing) {
  Channel ch("a[0]->b[0]", 4, &producer_, &consumer_);
  StreamElement e;
  EXPECT_FALSE(ch.TryPop(&e));
  EXPECT_FALSE(ch.HasData());
  EXPECT_EQ(ch.SizeApprox(), 0u);
}

TEST_F(ChannelTest, FullChannelBlocksTheProducerUntilTheConsumerPops) {
  Channel ch("a[0]->b[0]", 4, &producer_, &consumer_);
  constexpr uint64_t kTotal = 1000;  // far more than the channel can hold
  std::atomic<uint64_t> pushed{0};
  std::atomic<pid_t> producer_tid{0};
  std::thread producer([&] {
    producer_tid = ThreadId();
    for (uint64_t i = 1; i <= kTotal; ++i) {
      if (!ch.Push(BarrierOf(i))) return;
      pushed.store(i);
    }
  });
  ASSERT_TRUE(testing::PollUntil([&] { return producer_tid.load() != 0; }));

  // The producer fills the channel and parks: everything it pushed is still queued.
  ASSERT_TRUE(WaitUntilParked(producer_tid));
  const uint64_t held = pushed.load();
  EXPECT_GE(held, 4u) << "a channel holds at least its capacity";
  EXPECT_LT(held, kTotal);
  EXPECT_EQ(ch.SizeApprox(), held);

  // One pop frees one slot: the producer wakes and pushes exactly one more before parking again.
  StreamElement e;
  ASSERT_TRUE(ch.TryPop(&e));
  EXPECT_EQ(e.barrier.id, 1u);
  ASSERT_TRUE(testing::PollUntil([&] { return pushed.load() == held + 1; }));
  ASSERT_TRUE(WaitUntilParked(producer_tid));
  EXPECT_EQ(pushed.load(), held + 1);
  EXPECT_EQ(ch.SizeApprox(), held);

  // Draining lets the producer finish, and nothing was lost or reordered on the way.
  CheckpointId expected = 2;
  while (expected <= kTotal) {
    if (!ch.TryPop(&e)) {
      std::this_thread::yield();
      continue;
    }
    ASSERT_EQ(e.kind, StreamElement::Kind::kBarrier);
    ASSERT_EQ(e.barrier.id, expected);
    ++expected;
  }
  producer.join();
  EXPECT_EQ(pushed.load(), kTotal);
  EXPECT_FALSE(ch.HasData());
}

TEST_F(ChannelTest, CancelReleasesABlockedProducerWhosePushFails) {
  Channel ch("a[0]->b[0]", 4, &producer_, &consumer_);
  std::atomic<pid_t> producer_tid{0};
  std::atomic<bool> failed_push{false};
  std::atomic<uint64_t> pushed{0};
  std::thread producer([&] {
    producer_tid = ThreadId();
    for (uint64_t i = 1;; ++i) {
      if (!ch.Push(BarrierOf(i))) {
        failed_push = true;
        return;
      }
      pushed.store(i);
    }
  });
  ASSERT_TRUE(testing::PollUntil([&] { return producer_tid.load() != 0; }));
  ASSERT_TRUE(WaitUntilParked(producer_tid));

  ch.Cancel();
  producer.join();
  EXPECT_TRUE(failed_push.load());
  EXPECT_EQ(ch.SizeApprox(), pushed.load()) << "the dropped element was not enqueued";
}

TEST_F(ChannelTest, PushAfterCancelFailsEvenWithRoomInTheChannel) {
  Channel ch("a[0]->b[0]", 4, &producer_, &consumer_);
  ASSERT_TRUE(ch.Push(BarrierOf(1)));
  ch.Cancel();
  EXPECT_FALSE(ch.Push(BarrierOf(2)));
  EXPECT_FALSE(ch.Push(StreamElement::EndOfStream()));
  EXPECT_EQ(ch.SizeApprox(), 1u);
}

TEST_F(ChannelTest, RecycledBatchComesBackEmptyToTheProducer) {
  Channel ch("a[0]->b[0]", 4, &producer_, &consumer_);
  std::unique_ptr<RecordBatch> b = ch.TakeEmptyBatch();
  ASSERT_TRUE(b->empty());
  b->Add("alpha", 1, 2);
  b->Add("beta", 3, 4);
  RecordBatch* sent = b.get();
  ASSERT_TRUE(ch.Push(StreamElement::OfBatch(std::move(b))));

  StreamElement e;
  ASSERT_TRUE(ch.TryPop(&e));
  ASSERT_EQ(e.batch.get(), sent);
  ch.Recycle(std::move(e.batch));

  std::unique_ptr<RecordBatch> again = ch.TakeEmptyBatch();
  EXPECT_EQ(again.get(), sent) << "the recycled batch is reused";
  EXPECT_TRUE(again->empty());
  EXPECT_EQ(again->arena_bytes(), 0u);
}

TEST_F(ChannelTest, TakeEmptyBatchWithNothingRecycledMakesANewEmptyBatch) {
  Channel ch("a[0]->b[0]", 4, &producer_, &consumer_);
  std::unique_ptr<RecordBatch> first = ch.TakeEmptyBatch();
  std::unique_ptr<RecordBatch> second = ch.TakeEmptyBatch();
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  EXPECT_NE(first.get(), second.get());
  EXPECT_TRUE(first->empty());
  EXPECT_TRUE(second->empty());
}

TEST_F(ChannelTest, PushWakesTheParkedConsumer) {
  Channel ch("a[0]->b[0]", 4, &producer_, &consumer_);
  std::atomic<pid_t> consumer_tid{0};
  StreamElement got;
  std::thread consumer([&] {
    consumer_tid = ThreadId();
    for (;;) {
      uint32_t ticket = consumer_.Prepare();
      if (ch.TryPop(&got)) {
        consumer_.Cancel();
        return;
      }
      consumer_.Park(ticket);
    }
  });
  ASSERT_TRUE(testing::PollUntil([&] { return consumer_tid.load() != 0; }));
  ASSERT_TRUE(WaitUntilParked(consumer_tid));
  ASSERT_TRUE(ch.Push(BarrierOf(9)));
  consumer.join();
  EXPECT_EQ(got.kind, StreamElement::Kind::kBarrier);
  EXPECT_EQ(got.barrier.id, 9u);
}

// Records what a channel reports when its backlog limit is passed.
class RecordingBacklogListener : public BacklogListener {
 public:
  void BacklogExceeded(const Status& s) override { reports.push_back(s); }
  std::vector<Status> reports;
};

TEST_F(ChannelTest, FeedbackChannelGrowsPastItsCapacityWithoutBlocking) {
  Channel ch("count[0]->tokenize[0]", 2, &producer_, &consumer_, /*unbounded=*/true);
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(ch.Push(BatchOf({"w"}))) << i;  // no consumer: would block if bounded
  EXPECT_EQ(ch.SizeApprox(), 100u);
}

TEST_F(ChannelTest, FeedbackChannelPastItsBacklogLimitFailsThePushAndTellsTheListener) {
  RecordingBacklogListener listener;
  Channel ch("count[0]->tokenize[1]", 2, &producer_, &consumer_, /*unbounded=*/true, /*backlog_limit=*/5, &listener);
  ASSERT_TRUE(ch.Push(BatchOf({"a", "b"})));
  ASSERT_TRUE(ch.Push(BatchOf({"c", "d", "e"})));  // 5 queued: at the limit
  ASSERT_TRUE(ch.Push(BarrierOf(1)));              // markers carry no records
  EXPECT_TRUE(listener.reports.empty());
  EXPECT_FALSE(ch.Push(BatchOf({"f"})));  // 6 queued: past it
  ASSERT_EQ(listener.reports.size(), 1u);
  const std::string msg = listener.reports[0].message();
  EXPECT_NE(msg.find("feedback edge count[0]->tokenize[1]"), std::string::npos) << msg;
  EXPECT_NE(msg.find("checkpoint.max_feedback_backlog = 5 records"), std::string::npos) << msg;
  EXPECT_EQ(listener.reports[0].ExitCode(), 1) << "a job failure, not bad input";
  EXPECT_FALSE(ch.Push(BatchOf({"g"}))) << "the channel is cancelled";
  EXPECT_EQ(listener.reports.size(), 1u);
}

TEST_F(ChannelTest, FeedbackBacklogCountsOnlyWhatTheConsumerHasNotTaken) {
  RecordingBacklogListener listener;
  Channel ch("a[0]->a[0]", 2, &producer_, &consumer_, /*unbounded=*/true, /*backlog_limit=*/3, &listener);
  StreamElement e;
  // Ten times the limit goes through, since the consumer keeps up.
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(ch.Push(BatchOf({"x", "y", "z"}))) << i;
    ASSERT_TRUE(ch.TryPop(&e));
  }
  EXPECT_TRUE(listener.reports.empty());
}

TEST(ParkerTest, UnparkBeforeParkMakesParkReturnImmediately) {
  Parker p;
  uint32_t ticket = p.Prepare();
  p.Unpark();
  p.Park(ticket);  // would sleep forever if the wake-up were lost
  SUCCEED();
}

TEST(ParkerTest, UnparkFromAnotherThreadWakesAParkedThread) {
  Parker p;
  std::atomic<pid_t> tid{0};
  std::atomic<bool> woke{false};
  std::atomic<bool> go_to_sleep{true};
  std::thread sleeper([&] {
    tid = ThreadId();
    while (go_to_sleep.load()) {
      uint32_t ticket = p.Prepare();
      if (!go_to_sleep.load()) {
        p.Cancel();
        break;
      }
      p.Park(ticket);
    }
    woke = true;
  });
  ASSERT_TRUE(testing::PollUntil([&] { return tid.load() != 0; }));
  ASSERT_TRUE(WaitUntilParked(tid));
  EXPECT_FALSE(woke.load());
  go_to_sleep = false;
  p.Unpark();
  sleeper.join();
  EXPECT_TRUE(woke.load());
}

TEST(ParkerTest, TimedParkReturnsAtItsDeadline) {
  Parker p;
  const Parker::Clock::time_point deadline = Parker::Clock::now() + std::chrono::milliseconds(20);
  p.Park(p.Prepare(), deadline);
  EXPECT_GE(Parker::Clock::now(), deadline);
}

TEST(ParkerTest, TimedParkWithADeadlineInThePastReturnsAtOnce) {
  Parker p;
  p.Park(p.Prepare(), Parker::Clock::now() - std::chrono::seconds(1));
  SUCCEED();
}

}  // namespace
}  // namespace cairn
