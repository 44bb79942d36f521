// Specification of the data plane between workers (engine/net): the frames, and remote
// channels over loopback TCP that look like local ones to the gate: order, multiplexing, credits
// that bound what the receiver holds, unaligned barriers that overtake data held back by credit,
// aligned barriers in band, and a lost connection that cancels the channels.
#include "engine/net/transport.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <asio.hpp>

#include <atomic>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/checkpoint/checkpointed_input_gate.h"
#include "engine/dataflow/channel.h"
#include "engine/net/acceptor.h"
#include "engine/net/frame.h"

namespace cairn::net {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

std::unique_ptr<RecordBatch> Keys(std::initializer_list<std::string_view> keys) {
  auto b = std::make_unique<RecordBatch>();
  for (std::string_view k : keys) b->Add(k);
  return b;
}

std::string KeysOf(const RecordBatch& b) {
  std::string s;
  for (size_t i = 0; i < b.size(); ++i) s += (i > 0 ? "," : "") + std::string(b.key(i));
  return s;
}

// Decodes the one frame at the front of `bytes`.
Status DecodeOne(std::string_view bytes, FrameHeader* h, std::string_view* payload) {
  Status s = DecodeFrameHeader(bytes, h);
  if (!s.ok()) return s;
  if (bytes.size() != kFrameHeaderBytes + h->length) return Status::Corruption("length");
  *payload = bytes.substr(kFrameHeaderBytes);
  return Status::OK();
}

TEST(NetFrameTest, RoundTripsEveryElementKind) {
  SchemaRef schema = MakeSchema(
      {{"s", FieldType::kString}, {"i", FieldType::kInt64}, {"d", FieldType::kDouble}, {"b", FieldType::kBool}});
  auto batch = std::make_unique<RecordBatch>(schema);
  for (int r = 0; r < 3; r++) {
    size_t row = batch->AddRow();
    batch->SetString(row, 0, "w" + std::to_string(r));
    batch->SetInt64(row, 1, -7 * r);
    if (r == 1) batch->SetNull(row, 2); else batch->SetDouble(row, 2, 0.5 * r);
    batch->SetBool(row, 3, r % 2 == 0);
  }
  RecordBatch expected = *batch;
  Barrier barrier{42, 1700000000123, CheckpointMode::kAligned, 250};

  std::string bytes;
  AppendElementFrame(7, StreamElement::OfBatch(std::move(batch)), &bytes);
  FrameHeader h;
  std::string_view payload;
  ASSERT_TRUE(DecodeOne(bytes, &h, &payload).ok());
  EXPECT_EQ(h.type, FrameType::kBatch);
  EXPECT_EQ(h.channel, 7u);
  StreamElement e;
  ASSERT_TRUE(DecodeElement(h, payload, std::make_unique<RecordBatch>(schema), &e).ok());
  ASSERT_EQ(e.kind, StreamElement::Kind::kBatch);
  ASSERT_EQ(e.batch->size(), 3u);
  for (size_t r = 0; r < 3; r++) {
    EXPECT_EQ(e.batch->GetString(r, 0), expected.GetString(r, 0));
    EXPECT_EQ(e.batch->GetInt64(r, 1), expected.GetInt64(r, 1));
    EXPECT_EQ(e.batch->IsNull(r, 2), expected.IsNull(r, 2));
    if (!expected.IsNull(r, 2)) {
      EXPECT_EQ(e.batch->GetDouble(r, 2), expected.GetDouble(r, 2));
    }
    EXPECT_EQ(e.batch->GetBool(r, 3), expected.GetBool(r, 3));
  }

  bytes.clear();
  AppendElementFrame(1, StreamElement::OfBarrier(barrier), &bytes);
  ASSERT_TRUE(DecodeOne(bytes, &h, &payload).ok());
  ASSERT_TRUE(DecodeElement(h, payload, nullptr, &e).ok());
  ASSERT_EQ(e.kind, StreamElement::Kind::kBarrier);
  EXPECT_EQ(e.barrier.id, 42u);
  EXPECT_EQ(e.barrier.trigger_time_ms, 1700000000123);
  EXPECT_EQ(e.barrier.mode, CheckpointMode::kAligned);
  EXPECT_EQ(e.barrier.aligned_timeout_ms, 250);

  bytes.clear();
  AppendElementFrame(1, StreamElement::OfWatermark(Watermark{-5, true}), &bytes);
  ASSERT_TRUE(DecodeOne(bytes, &h, &payload).ok());
  ASSERT_TRUE(DecodeElement(h, payload, nullptr, &e).ok());
  ASSERT_EQ(e.kind, StreamElement::Kind::kWatermark);
  EXPECT_EQ(e.watermark, (Watermark{-5, true}));

  for (auto kind : {StreamElement::Kind::kEndOfInput, StreamElement::Kind::kEndOfStream}) {
    bytes.clear();
    AppendElementFrame(3, kind == StreamElement::Kind::kEndOfInput ? StreamElement::EndOfInput() : StreamElement::EndOfStream(),
                       &bytes);
    ASSERT_TRUE(DecodeOne(bytes, &h, &payload).ok());
    ASSERT_TRUE(DecodeElement(h, payload, nullptr, &e).ok());
    EXPECT_EQ(e.kind, kind);
  }

  bytes.clear();
  PriorityEvent pe{PriorityEvent::Kind::kUnalignedBarrier, Barrier{9, 1, CheckpointMode::kUnaligned, 0}, 1234};
  AppendPriorityFrame(5, pe, &bytes);
  ASSERT_TRUE(DecodeOne(bytes, &h, &payload).ok());
  EXPECT_EQ(h.type, FrameType::kPriority);
  PriorityEvent got;
  ASSERT_TRUE(DecodePriority(payload, &got).ok());
  EXPECT_EQ(got.kind, pe.kind);
  EXPECT_EQ(got.barrier.id, 9u);
  EXPECT_EQ(got.barrier.mode, CheckpointMode::kUnaligned);
  EXPECT_EQ(got.position, 1234u);

  bytes.clear();
  AppendCreditFrame(5, 17, &bytes);
  ASSERT_TRUE(DecodeOne(bytes, &h, &payload).ok());
  uint64_t credit = 0;
  ASSERT_TRUE(DecodeCredit(payload, &credit).ok());
  EXPECT_EQ(credit, 17u);
}

TEST(NetFrameTest, RejectsMalformedFrames) {
  FrameHeader h;
  std::string bytes(kFrameHeaderBytes, '\0');
  bytes[0] = 99;  // unknown type
  EXPECT_TRUE(DecodeFrameHeader(bytes, &h).IsCorruption());
  bytes[0] = static_cast<char>(FrameType::kBatch);
  bytes[5] = bytes[6] = bytes[7] = bytes[8] = '\xff';  // 4 GiB payload
  EXPECT_TRUE(DecodeFrameHeader(bytes, &h).IsCorruption());

  std::string frame;
  AppendElementFrame(0, StreamElement::OfBatch(Keys({"a", "b"})), &frame);
  std::string_view payload;
  ASSERT_TRUE(DecodeOne(frame, &h, &payload).ok());
  StreamElement e;
  EXPECT_TRUE(DecodeElement(h, payload.substr(0, payload.size() - 1), std::make_unique<RecordBatch>(), &e).IsCorruption())
      << "a truncated row";
  EXPECT_TRUE(DecodeElement(h, std::string(payload) + "x", std::make_unique<RecordBatch>(), &e).IsCorruption())
      << "trailing bytes";
  PriorityEvent pe;
  EXPECT_TRUE(DecodePriority("short", &pe).IsCorruption());
  uint64_t n;
  EXPECT_TRUE(DecodeCredit("", &n).IsCorruption());
}

TEST(NetEndpointTest, ParsesHostAndPort) {
  Endpoint ep;
  ASSERT_TRUE(ParseEndpoint("127.0.0.1:7000", "--listen", &ep).ok());
  EXPECT_EQ(ep.host, "127.0.0.1");
  EXPECT_EQ(ep.port, 7000);
  ASSERT_TRUE(ParseEndpoint("[::1]:0", "--listen", &ep).ok());
  EXPECT_EQ(ep.host, "::1");
  EXPECT_EQ(ep.port, 0);
  for (const char* bad : {"localhost", ":80", "h:", "h:65536", "h:12x", "h:-1"}) {
    Status s = ParseEndpoint(bad, "--coordinator", &ep);
    EXPECT_TRUE(s.IsInvalidArgument()) << bad;
    EXPECT_THAT(s.message(), HasSubstr("--coordinator")) << bad;
    EXPECT_THAT(s.message(), HasSubstr("HOST:PORT")) << bad;
  }
}

// A worker's data port: held by a reservation, listened on by one generation after another,
// and refused to a socket that asks for it without SO_REUSEADDR (as a connection's local
// port would be taken).
TEST(PortReservationTest, HoldsAPortThatEachGenerationListensOnInTurn) {
  PortReservation reservation;
  ASSERT_TRUE(reservation.Reserve(Endpoint{"127.0.0.1", 0}).ok());
  const uint16_t port = reservation.port();
  ASSERT_NE(port, 0);
  for (int generation = 0; generation < 3; ++generation) {
    Transport t(0);
    Status s = t.Listen(Endpoint{"127.0.0.1", port});
    ASSERT_TRUE(s.ok()) << "generation " << generation << ": " << s.ToString();
    EXPECT_EQ(t.port(), port);
    asio::io_context io;
    asio::ip::tcp::socket client(io);
    asio::error_code ec;
    client.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
    EXPECT_FALSE(ec) << "generation " << generation << ": " << ec.message();
  }
  asio::io_context io;
  asio::ip::tcp::acceptor other(io);
  asio::error_code ec;
  other.open(asio::ip::tcp::v4(), ec);
  ASSERT_FALSE(ec);
  other.bind(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), port), ec);
  EXPECT_EQ(ec, asio::error::address_in_use);
}

// Two workers (0 and 1) on loopback; the test plays the producer tasks of one and the consumer
// tasks of the other.
class RemotePair {
 public:
  RemotePair() {
    for (uint32_t w = 0; w < 2; w++) {
      t_[w] = std::make_unique<Transport>(w);
      EXPECT_TRUE(t_[w]->Listen(Endpoint{"127.0.0.1", 0}).ok());
    }
  }
  ~RemotePair() {
    for (auto& t : t_) t->Stop();
  }
  // A channel `id` from worker `from` to worker `to`: the producer's end and the consumer's end.
  struct Edge {
    std::unique_ptr<Channel> out;
    std::unique_ptr<Channel> in;
  };
  Edge& AddEdge(uint32_t id, uint32_t from, uint32_t to, size_t capacity, uint32_t credits, Parker* producer,
                Parker* consumer) {
    Edge& e = edges_[id];
    std::string name = "w" + std::to_string(from) + "->w" + std::to_string(to) + "#" + std::to_string(id);
    e.out = std::make_unique<Channel>(name, capacity, producer, t_[from]->SenderParker(to));
    e.in = std::make_unique<Channel>(name, capacity, t_[to]->ReceiverParker(from), consumer);
    t_[from]->AddOutbound(id, to, e.out.get());
    t_[to]->AddInbound(id, from, e.in.get(), credits);
    return e;
  }
  // Starts both (each connects to the other, then accepts: so on two threads).
  void Start() {
    std::map<uint32_t, Endpoint> peers{{0, {"127.0.0.1", t_[0]->port()}}, {1, {"127.0.0.1", t_[1]->port()}}};
    auto a = std::async(std::launch::async, [&] { return t_[0]->Start(peers); });
    Status b = t_[1]->Start(peers);
    Status sa = a.get();
    ASSERT_TRUE(sa.ok()) << sa.ToString();
    ASSERT_TRUE(b.ok()) << b.ToString();
  }
  Transport& t(uint32_t w) { return *t_[w]; }

 private:
  std::unique_ptr<Transport> t_[2];
  std::map<uint32_t, Edge> edges_;
};

// Parks on `parker` until `ready()` holds (every push on the channels it consumes wakes it).
template <class F>
void WaitUntil(Parker* parker, F ready) {
  while (!ready()) {
    uint32_t ticket = parker->Prepare();
    if (ready()) {
      parker->Cancel();
      return;
    }
    parker->Park(ticket);
  }
}

// What a consumer task reads from a gate, until its end of stream, as strings; batches
// "b:<keys>" (processed at once), checkpoints "cp:<id> <mode>", channel state
// "cs:<id> [keys of channel 0] [keys of channel 1]...".
std::vector<std::string> ReadGate(CheckpointedInputGate* gate, Parker* consumer) {
  std::vector<std::string> events;
  for (;;) {
    GateEvent ev = gate->Poll();
    switch (ev.kind) {
      case GateEvent::Kind::kNone: {
        uint32_t ticket = consumer->Prepare();
        if (gate->HasWork()) consumer->Cancel(); else consumer->Park(ticket);
        continue;
      }
      case GateEvent::Kind::kBatch:
        events.push_back("b:" + KeysOf(*ev.batch));
        gate->MarkProcessed(ev.slot, *ev.batch, 0, ev.batch->size());
        ev.channel->Recycle(std::move(ev.batch));
        break;
      case GateEvent::Kind::kCheckpoint:
        events.push_back("cp:" + std::to_string(ev.barrier.id) + " " + SubtaskCheckpointModeName(ev.mode));
        break;
      case GateEvent::Kind::kChannelStateDone: {
        std::string s = "cs:" + std::to_string(ev.channel_state->id);
        for (const RecordBatch& b : ev.channel_state->records) s += " [" + KeysOf(b) + "]";
        events.push_back(s);
        break;
      }
      case GateEvent::Kind::kEndOfStream: return events;
      default: break;
    }
  }
}

TEST(RemoteChannelTest, DeliversEveryChannelInOrderOverOneConnectionPerPairAndAlignsBarriers) {
  // Two channels 0 -> 1 and one 1 -> 0 (the other connection): batches, an aligned barrier,
  // more batches, the end of input and of stream; the consumer is an aligned gate.
  RemotePair pair;
  Parker prod_a, prod_b, prod1, cons0, cons1;  // a Parker per thread
  auto& a = pair.AddEdge(10, 0, 1, 2, 2, &prod_a, &cons1);
  auto& b = pair.AddEdge(11, 0, 1, 2, 2, &prod_b, &cons1);
  auto& back = pair.AddEdge(20, 1, 0, 2, 2, &prod1, &cons0);
  pair.Start();
  constexpr int kBefore = 40, kAfter = 30;
  auto produce = [](Channel* ch, const std::string& name) {
    for (int i = 0; i < kBefore + kAfter; i++) {
      if (i == kBefore) {
        ASSERT_TRUE(ch->Push(StreamElement::OfBarrier(Barrier{1, 0, CheckpointMode::kAligned, 0})));
      }
      ASSERT_TRUE(ch->Push(StreamElement::OfBatch(Keys({name + std::to_string(i), name + std::to_string(i) + "'"}))));
    }
    ASSERT_TRUE(ch->Push(StreamElement::EndOfInput()));
    ASSERT_TRUE(ch->Push(StreamElement::EndOfStream()));
  };
  // Two producer tasks on worker 0, one on worker 1.
  std::thread p0([&] {
    std::thread pa([&] { produce(a.out.get(), "a"); });
    produce(b.out.get(), "b");
    pa.join();
  });
  std::thread p1([&] { produce(back.out.get(), "z"); });

  CheckpointedInputGate gate1, gate0;
  gate1.AddInput(GateInput{a.in.get(), 0});
  gate1.AddInput(GateInput{b.in.get(), 0});
  gate0.AddInput(GateInput{back.in.get(), 0});
  std::vector<std::string> on0;
  std::thread c0([&] { on0 = ReadGate(&gate0, &cons0); });
  std::vector<std::string> on1 = ReadGate(&gate1, &cons1);
  c0.join();
  p0.join();
  p1.join();
  ASSERT_TRUE(pair.t(0).Drain().ok());
  ASSERT_TRUE(pair.t(1).Drain().ok());

  // Per channel, in order; the checkpoint after every record before the barriers, before any after.
  auto of = [](const std::vector<std::string>& events, const std::string& name) {
    std::vector<std::string> r;
    for (const auto& e : events)
      if (e.rfind("b:" + name, 0) == 0) r.push_back(e);
    return r;
  };
  auto expected = [](const std::string& name, int from, int to) {
    std::vector<std::string> r;
    for (int i = from; i < to; i++) r.push_back("b:" + name + std::to_string(i) + "," + name + std::to_string(i) + "'");
    return r;
  };
  EXPECT_THAT(of(on1, "a"), ElementsAreArray(expected("a", 0, kBefore + kAfter)));
  EXPECT_THAT(of(on1, "b"), ElementsAreArray(expected("b", 0, kBefore + kAfter)));
  EXPECT_THAT(of(on0, "z"), ElementsAreArray(expected("z", 0, kBefore + kAfter)));
  for (const auto* events : {&on0, &on1}) {
    auto cp = std::find(events->begin(), events->end(), "cp:1 aligned");
    ASSERT_NE(cp, events->end());
    size_t at = static_cast<size_t>(cp - events->begin());
    EXPECT_EQ(std::count(events->begin(), events->end(), "cp:1 aligned"), 1);
    for (size_t i = 0; i < events->size(); i++) {
      const std::string& e = (*events)[i];
      if (e.rfind("b:", 0) != 0) continue;
      int n = std::stoi(e.substr(3));
      if (n < kBefore) EXPECT_LT(i, at) << e;
      else EXPECT_GT(i, at) << e;
    }
  }
  EXPECT_TRUE(pair.t(0).status().ok());
  EXPECT_TRUE(pair.t(1).status().ok());
}

TEST(RemoteChannelTest, CreditsBoundTheBatchesTheReceiverHoldsAndTheProducerBlocks) {
  // The consumer pops a batch only once the receiver holds every batch its credits allow: if
  // the sender sent past its credits, the receiver would hold more.
  RemotePair pair;
  Parker prod, cons;
  constexpr uint32_t kCredits = 3;
  constexpr int kBatches = 60;
  auto& e = pair.AddEdge(1, 0, 1, 2, kCredits, &prod, &cons);
  pair.Start();
  struct CountBlocked : BlockedHandler {
    std::atomic<int> blocked{0};
    bool OnBlocked(std::chrono::steady_clock::time_point*) override {
      blocked++;
      return true;
    }
  } handler;
  std::thread producer([&] {
    for (int i = 0; i < kBatches; i++) ASSERT_TRUE(e.out->Push(StreamElement::OfBatch(Keys({"k" + std::to_string(i)})), &handler));
    ASSERT_TRUE(e.out->Push(StreamElement::EndOfStream()));
  });
  std::vector<std::string> got;
  for (int popped = 0; popped < kBatches; popped++) {
    size_t want = std::min<size_t>(kCredits, kBatches - popped);
    WaitUntil(&cons, [&] { return e.in->SizeApprox() >= want; });
    StreamElement el;
    ASSERT_TRUE(e.in->TryPop(&el));
    ASSERT_EQ(el.kind, StreamElement::Kind::kBatch);
    got.push_back(KeysOf(*el.batch));
  }
  WaitUntil(&cons, [&] { return e.in->HasData(); });
  StreamElement end;
  ASSERT_TRUE(e.in->TryPop(&end));
  EXPECT_EQ(end.kind, StreamElement::Kind::kEndOfStream);
  producer.join();
  ASSERT_TRUE(pair.t(0).Drain().ok());
  EXPECT_EQ(pair.t(1).max_unpopped(1), kCredits) << "never more than the credits, and all of them used";
  EXPECT_GT(handler.blocked.load(), 0) << "the producer felt the backpressure through the network";
  for (int i = 0; i < kBatches; i++) EXPECT_EQ(got[i], "k" + std::to_string(i));
}

TEST(RemoteChannelTest, UnalignedBarrierOvertakesDataHeldBackByCreditAndRecordsItAsChannelState) {
  // The producer, blocked on a full channel (its consumer reads nothing yet), takes an unaligned
  // snapshot as a task does: the barrier goes on the priority lanes at the positions it had
  // reached, once everything that can be on its way is (the outbound channel full, one batch
  // held by the sender, the credits spent). It reaches the consumer's gate ahead of records the credits still hold back on the
  // producer's side; the gate records exactly the records before the barrier as channel state.
  RemotePair pair;
  Parker prod, cons;
  constexpr uint32_t kCredits = 2;
  constexpr size_t kCapacity = 2;
  constexpr int kBatches = 50;
  auto& a = pair.AddEdge(1, 0, 1, kCapacity, kCredits, &prod, &cons);
  auto& b = pair.AddEdge(2, 0, 1, kCapacity, kCredits, &prod, &cons);
  pair.Start();
  struct Snapshot : BlockedHandler {
    Channel* a = nullptr;
    Channel* b = nullptr;
    int pushed = 0;                  // records pushed on a so far (producer thread)
    std::atomic<int> position{-1};   // where the barrier went on a
    bool OnBlocked(std::chrono::steady_clock::time_point*) override {
      if (position.load() < 0 && pushed == static_cast<int>(kCapacity + 1 + kCredits)) {
        position.store(pushed);  // before the consumer can see the barrier
        PriorityEvent pe{PriorityEvent::Kind::kUnalignedBarrier, Barrier{1, 0, CheckpointMode::kUnaligned, 0}, 0};
        pe.position = static_cast<uint64_t>(pushed);
        a->PushPriority(pe);
        pe.position = 0;
        b->PushPriority(pe);
      }
      return true;
    }
  } snap;
  snap.a = a.out.get();
  snap.b = b.out.get();
  std::thread producer([&] {
    for (int i = 0; i < kBatches; i++) {
      ASSERT_TRUE(a.out->Push(StreamElement::OfBatch(Keys({"a" + std::to_string(i)})), &snap));
      snap.pushed++;
    }
    for (Channel* ch : {a.out.get(), b.out.get()}) {
      ASSERT_TRUE(ch->Push(StreamElement::EndOfInput()));
      ASSERT_TRUE(ch->Push(StreamElement::EndOfStream()));
    }
  });
  WaitUntil(&cons, [&] { return a.in->HasPriority() && b.in->HasPriority(); });
  int position = snap.position.load();
  ASSERT_GE(position, 0);
  EXPECT_LE(a.in->SizeApprox(), kCredits) << "the data behind the barrier is still held back by credit";
  EXPECT_GT(position, static_cast<int>(kCredits)) << "the barrier overtook records not yet sent";

  CheckpointedInputGate gate;
  gate.AddInput(GateInput{a.in.get(), 0});
  gate.AddInput(GateInput{b.in.get(), 0});
  std::vector<std::string> events = ReadGate(&gate, &cons);
  producer.join();
  ASSERT_TRUE(pair.t(0).Drain().ok());

  std::string in_flight;
  for (int i = 0; i < position; i++) in_flight += (i > 0 ? "," : "") + ("a" + std::to_string(i));
  std::vector<std::string> expected{"cp:1 unaligned"};
  for (int i = 0; i < kBatches; i++) {
    expected.push_back("b:a" + std::to_string(i));
  }
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.front(), "cp:1 unaligned") << "before any record";
  EXPECT_THAT(events, ::testing::Contains("cs:1 [" + in_flight + "] []"));
  std::vector<std::string> batches;
  for (const auto& e : events)
    if (e.rfind("b:", 0) == 0) batches.push_back(e);
  EXPECT_THAT(batches, ElementsAreArray(std::vector<std::string>(expected.begin() + 1, expected.end())));
}

TEST(RemoteChannelTest, AFeedbackEdgeNeverBlocksItsProducerAndKeepsItsBacklogLimit) {
  // A feedback channel (it closes a cycle) is unbounded on the producer's side with
  // checkpoint.max_feedback_backlog; across processes the inbound side adds at most its credits.
  struct Listener : BacklogListener {
    std::vector<Status> reports;
    void BacklogExceeded(const Status& s) override { reports.push_back(s); }
  } listener;
  RemotePair pair;
  Parker prod, cons;
  constexpr uint32_t kCredits = 2;
  constexpr uint64_t kLimit = 100;
  Channel feedback("op[0]->op[0]", 2, &prod, pair.t(0).SenderParker(1), /*unbounded=*/true, kLimit, &listener);
  Channel inbound("op[0]->op[0]", 2, pair.t(1).ReceiverParker(0), &cons);
  pair.t(0).AddOutbound(2, 1, &feedback);
  pair.t(1).AddInbound(2, 0, &inbound, kCredits);
  pair.Start();
  // Nothing is consumed: the producer goes on (it never blocks) until the backlog passes the limit.
  int pushed = 0;
  while (feedback.Push(StreamElement::OfBatch(Keys({"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"})))) pushed++;
  // At most kCredits batches went out, one is held by the sender: the backlog counts the rest.
  EXPECT_GE(pushed, static_cast<int>(kLimit / 10));
  EXPECT_LE(pushed, static_cast<int>(kLimit / 10 + kCredits + 1));
  ASSERT_EQ(listener.reports.size(), 1u);
  EXPECT_THAT(listener.reports[0].message(), HasSubstr("op[0]->op[0]"));
  EXPECT_THAT(listener.reports[0].message(), HasSubstr("checkpoint.max_feedback_backlog = 100"));
  EXPECT_LE(inbound.SizeApprox(), kCredits);
  pair.t(0).Stop();  // before the channels go
  pair.t(1).Stop();
}

TEST(RemoteChannelTest, StartNamesTheWorkerThatDidNotConnectByTheDeadline) {
  RemotePair pair;
  Parker prod, cons;
  pair.AddEdge(1, 1, 0, 2, 2, &prod, &cons);  // worker 0 waits for worker 1, which never starts
  Status s = pair.t(0).Start({{1, {"127.0.0.1", pair.t(1).port()}}}, Transport::Clock::now());
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_THAT(s.message(), HasSubstr("worker(s) 1 did not connect to worker 0"));
}

TEST(RemoteChannelTest, StartGivesUpOnAConnectionThatSendsNoHello) {
  Transport t(0);
  ASSERT_TRUE(t.Listen(Endpoint{"127.0.0.1", 0}).ok());
  Parker cons;
  Channel in("w1->w0", 2, t.ReceiverParker(1), &cons);
  t.AddInbound(1, 1, &in, 2);
  asio::io_context io;
  asio::ip::tcp::socket mute(io);  // connects, then says nothing
  mute.connect(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), t.port()));
  Status s = t.Start({}, Transport::Clock::now() + std::chrono::milliseconds(200));
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_THAT(s.message(), HasSubstr("sent no hello in time"));
  t.Stop();
}

TEST(RemoteChannelTest, StartRetriesARefusedConnectionUntilTheDeadline) {
  // A port bound but not listening refuses connections (and stays ours for the test).
  asio::io_context io;
  asio::ip::tcp::acceptor bound(io);
  bound.open(asio::ip::tcp::v4());
  bound.bind(asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
  uint16_t closed_port = bound.local_endpoint().port();
  Transport t(0);
  ASSERT_TRUE(t.Listen(Endpoint{"127.0.0.1", 0}).ok());
  Parker prod;
  Channel out("w0->w1", 2, &prod, t.SenderParker(1));
  t.AddOutbound(1, 1, &out);
  Status s = t.Start({{1, {"127.0.0.1", closed_port}}}, Transport::Clock::now());
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_THAT(s.message(), HasSubstr("cannot connect to worker 1 at 127.0.0.1:" + std::to_string(closed_port)));
  t.Stop();
}

TEST(RemoteChannelTest, ALostConnectionFailsTheTransportAndCancelsItsChannels) {
  RemotePair pair;
  Parker prod, cons;
  auto& e = pair.AddEdge(1, 0, 1, 2, 2, &prod, &cons);
  pair.Start();
  pair.t(1).Stop();  // worker 1 is gone before the channel ended its stream
  Status s = pair.t(0).Drain();
  EXPECT_TRUE(s.IsIOError()) << s.ToString();
  EXPECT_THAT(s.message(), HasSubstr("worker 1"));
  // A producer feeding the dead peer is released, not left blocked.
  bool pushed = true;
  for (int i = 0; i < 100 && pushed; i++) pushed = e.out->Push(StreamElement::OfBatch(Keys({"x"})));
  EXPECT_FALSE(pushed);
}

}  // namespace
}  // namespace cairn::net
