// The control connection between workers and the coordinator (jobs/cli/control_link.h): JSON
// lines over loopback TCP, and the JSON form of acknowledgements and barriers.
#include "jobs/cli/control_link.h"

#include <gtest/gtest.h>

#include <thread>

namespace cairn {
namespace {

TEST(ControlLinkTest, AnAcknowledgementRoundTripsWithItsHandlesAndCounts) {
  TaskAck a;
  a.id = 7;
  a.task = 3;
  a.mode = SubtaskCheckpointMode::kAlignedThenUnaligned;
  SubtaskStateHandle h;
  h.operator_id = "count";
  h.operator_type = "count";
  h.subtask = 1;
  h.parallelism = 2;
  h.key_groups = KeyGroupRange{64, 127};
  h.keyed_dir = "count/1/keyed";
  h.channel_state_file = "count/1/channel.state";
  h.state_bytes = 1234;
  h.channel_state_bytes = 56;
  h.alignment_ms = 3;
  h.records_skipped = 9;
  // Inline state is bytes, not UTF-8: it crosses the JSON as _metadata writes it.
  h.operator_state_inline = std::string("\x00\xff\x80 =%\n", 7);
  h.list_state_inline = "-";
  a.handles.push_back(h);
  a.rebalance_counts.push_back(RebalanceCount{"source->tokenize", 10, 4, 6});
  TaskAck b;
  ASSERT_TRUE(AckFromJson(AckToJson(a), &b).ok());
  EXPECT_EQ(b.id, 7u);
  EXPECT_EQ(b.task, 3);
  EXPECT_TRUE(b.status.ok());
  EXPECT_EQ(b.mode, SubtaskCheckpointMode::kAlignedThenUnaligned);
  ASSERT_EQ(b.handles.size(), 1u);
  EXPECT_EQ(b.handles[0].operator_id, "count");
  EXPECT_EQ(b.handles[0].key_groups.first, 64u);
  EXPECT_EQ(b.handles[0].key_groups.last, 127u);
  EXPECT_EQ(b.handles[0].keyed_dir, "count/1/keyed");
  EXPECT_EQ(b.handles[0].channel_state_file, "count/1/channel.state");
  EXPECT_EQ(b.handles[0].state_bytes, 1234u);
  EXPECT_EQ(b.handles[0].records_skipped, 9);
  EXPECT_EQ(b.handles[0].records_late, -1);
  EXPECT_EQ(b.handles[0].operator_state_inline, h.operator_state_inline);
  EXPECT_EQ(b.handles[0].list_state_inline, "-");
  EXPECT_EQ(b.handles[0].channel_state_inline, "");
  ASSERT_EQ(b.rebalance_counts.size(), 1u);
  EXPECT_EQ(b.rebalance_counts[0].edge, "source->tokenize");
  EXPECT_EQ(b.rebalance_counts[0].received_after, 6u);

  TaskAck declined;
  declined.status = Status::IOError("disk full");
  TaskAck d;
  ASSERT_TRUE(AckFromJson(AckToJson(declined), &d).ok());
  EXPECT_TRUE(d.status.IsIOError());
  EXPECT_EQ(d.status.message(), "disk full");

  nlohmann::json broken = AckToJson(a);
  broken["handles"][0].erase("subtask");
  TaskAck e;
  EXPECT_TRUE(AckFromJson(broken, &e).IsInvalidArgument());
}

TEST(ControlLinkTest, ABarrierRoundTrips) {
  Barrier b{42, 1700000000000, CheckpointMode::kUnaligned, 0};
  Barrier c = BarrierFromJson(BarrierToJson(b));
  EXPECT_EQ(c.id, 42u);
  EXPECT_EQ(c.trigger_time_ms, 1700000000000);
  EXPECT_EQ(c.mode, CheckpointMode::kUnaligned);
}

TEST(ControlLinkTest, MessagesCrossALoopbackConnectionInOrderAndCloseEndsTheReader) {
  ControlListener listener;
  ASSERT_TRUE(listener.Listen(net::Endpoint{"127.0.0.1", 0}).ok());
  std::unique_ptr<ControlLink> server;
  std::thread accept([&] { ASSERT_TRUE(listener.Accept(&server).ok()); });
  std::unique_ptr<ControlLink> client;
  ASSERT_TRUE(ControlLink::Connect(net::Endpoint{"127.0.0.1", listener.port()},
                                   ControlLink::Clock::now() + std::chrono::seconds(60), &client)
                  .ok());
  accept.join();
  for (int i = 0; i < 100; ++i) ASSERT_TRUE(client->Send({{"type", "heartbeat"}, {"gen", 1}, {"seq", i}}).ok());
  for (int i = 0; i < 100; ++i) {
    nlohmann::json m;
    ASSERT_TRUE(server->Receive(&m).ok());
    EXPECT_EQ(m["seq"], i);
  }
  // A line that is not a message with a type and a generation is an error.
  ASSERT_TRUE(client->Send({{"type", "x"}}).ok());
  nlohmann::json m;
  EXPECT_TRUE(server->Receive(&m).IsIOError());
  // Close wakes a reader blocked in Receive.
  std::thread reader([&] {
    nlohmann::json r;
    EXPECT_FALSE(server->Receive(&r).ok());
  });
  server->Close();
  reader.join();
  listener.Close();
}

}  // namespace
}  // namespace cairn
