// cairn-micro-bench: Google Benchmark micro-benchmarks of the word count's hot paths, each on
// the real engine code: the batched channel hand-off between two threads, hash partitioning
// through an OutputGate, the tokenizer, the filter and map operators (expressions over batches
// of clicks), the keyed count update, the synchronous snapshot
// (TakeDelta) of 1M keys, persisting a delta to RocksDB, and restoring 1M keys.
//
// Inputs are the generator's seeded Zipf words (vocabulary 100000, as in the macro-benchmark).
// RocksDB files go to BUILD/bench-data/micro (the file system the engine runs use), removed at
// exit. Run: build/cairn-micro-bench [--benchmark_filter=REGEX] (see docs/benchmarks.md).
#include <cstdio>
#include <cstdlib>
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <future>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/dataflow/channel.h"
#include "engine/dataflow/operator_capabilities.h"
#include "engine/base/file_util.h"
#include "jobs/job_spec.h"
#include "engine/base/key_groups.h"
#include "engine/dataflow/output_gate.h"
#include "engine/dataflow/record_codec.h"
#include "engine/net/transport.h"
#include "engine/base/parker.h"
#include "operators/generator_source.h"
#include "jobs/registry.h"
#include "state/changelog_segment.h"
#include "state/keyed_state.h"
#include "state/rocksdb_state_store.h"

namespace cairn {
namespace {

constexpr uint32_t kMaxParallelism = 128;

// Lines of the benchmark corpus (10 words each), generated once.
const std::vector<std::string>& Lines() {
  static const std::vector<std::string> lines = [] {
    GeneratorParams p;
    p.words = 2000000;
    WordGenerator gen(p);
    std::vector<std::string> out(static_cast<size_t>(gen.lines()));
    for (int64_t n = 0; n < gen.lines(); ++n) gen.Line(n, &out[static_cast<size_t>(n)]);
    return out;
  }();
  return lines;
}

// The corpus's words, tokenized, as one batch of (word, -, -) records.
const RecordBatch& Words() {
  static const RecordBatch words = [] {
    RecordBatch lines, out;
    for (const std::string& l : Lines()) lines.Add(l);
    std::unique_ptr<Operator> tok = FindOperatorType("tokenize")->create(OperatorConfig{});
    Status s = tok->Process(0, lines, &out);
    if (!s.ok()) {
      fprintf(stderr, "tokenize failed: %s\n", s.message().c_str());
      std::abort();
    }
    return out;
  }();
  return words;
}

// `n` distinct keys: the generator's pseudo-words of ranks 0..n-1.
std::vector<std::string> DistinctKeys(size_t n) {
  std::vector<std::string> keys(n);
  for (size_t i = 0; i < n; ++i) keys[i] = WordForRank(static_cast<int64_t>(i));
  return keys;
}

std::string ScratchDir() {
  static const std::string dir = [] {
    char buf[4096];
    ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
    std::string exe = n > 0 ? std::string(buf, static_cast<size_t>(n)) : "./cairn-micro-bench";
    return exe.substr(0, exe.rfind('/')) + "/bench-data/micro-" + std::to_string(getpid());
  }();
  return dir;
}

void Check(const Status& s, benchmark::State& state) {
  if (!s.ok()) state.SkipWithError(s.message().c_str());
}

// --- Channel: one producer thread hands batches of `range(0)` records to one consumer -------

// Pushes batches of `batch_records` words into `out` while a reader thread pops them from `in`
// (the same channel in one process; the two ends of a remote channel otherwise).
void Handoff(benchmark::State& state, Channel* out, Channel* in, Parker* consumer) {
  const size_t batch_records = static_cast<size_t>(state.range(0));
  std::atomic<uint64_t> consumed{0};
  std::thread reader([&] {
    for (;;) {
      StreamElement e;
      uint32_t t = consumer->Prepare();
      if (!in->TryPop(&e)) {
        consumer->Park(t);
        continue;
      }
      consumer->Cancel();
      if (e.kind == StreamElement::Kind::kEndOfStream) return;
      consumed.fetch_add(e.batch->size(), std::memory_order_relaxed);
      in->Recycle(std::move(e.batch));
    }
  });
  const RecordBatch& words = Words();
  size_t next = 0;
  for (auto _ : state) {
    std::unique_ptr<RecordBatch> b = out->TakeEmptyBatch();
    for (size_t i = 0; i < batch_records; ++i) {
      b->AddFrom(words, next);
      if (++next == words.size()) next = 0;
    }
    out->Push(StreamElement::OfBatch(std::move(b)));
  }
  out->Push(StreamElement::EndOfStream());
  reader.join();
  state.SetItemsProcessed(static_cast<int64_t>(consumed.load()));
  state.counters["batch"] = static_cast<double>(batch_records);
}

void BM_ChannelHandoff(benchmark::State& state) {
  Parker producer, consumer;
  Channel ch("bench", 32, &producer, &consumer);
  Handoff(state, &ch, &ch, &consumer);
}
BENCHMARK(BM_ChannelHandoff)->Arg(1)->Arg(64)->Arg(1024)->Arg(2048)->UseRealTime();

// The same over a remote channel (engine/net): two Transports on loopback TCP in this process,
// the batches encoded, sent against credits (as many as the channel's capacity) and decoded.
void BM_RemoteChannelHandoff(benchmark::State& state) {
  net::Transport t0(0), t1(1);
  Check(t0.Listen(net::Endpoint{"127.0.0.1", 0}), state);
  Check(t1.Listen(net::Endpoint{"127.0.0.1", 0}), state);
  Parker producer, consumer;
  Channel out("bench", 32, &producer, t0.SenderParker(1));
  Channel in("bench", 32, t1.ReceiverParker(0), &consumer);
  in.set_schema(Words().schema());
  t0.AddOutbound(1, 1, &out);
  t1.AddInbound(1, 0, &in, 32);
  std::map<uint32_t, net::Endpoint> peers{{0, {"127.0.0.1", t0.port()}}, {1, {"127.0.0.1", t1.port()}}};
  auto started = std::async(std::launch::async, [&] { return t0.Start(peers); });
  Check(t1.Start(peers), state);
  Check(started.get(), state);
  Handoff(state, &out, &in, &consumer);
  Check(t0.Drain(), state);
  t0.Stop();  // before the channels go
  t1.Stop();
}
BENCHMARK(BM_RemoteChannelHandoff)->Arg(64)->Arg(1024)->UseRealTime();

// --- OutputGate: hash partitioning words to 2 consumer threads (as tokenize -> count) -------

void BM_OutputGateHashEmit(benchmark::State& state) {
  Parker producer;
  Parker consumers[2];
  std::vector<std::unique_ptr<Channel>> chans;
  for (auto& c : consumers) chans.push_back(std::make_unique<Channel>("bench", 32, &producer, &c));
  OutputGate gate(kMaxParallelism);
  KeySelector key;
  if (!KeySelector::Make(*KeyValueSchema(), {"key"}, &key).ok()) std::abort();
  gate.AddHashEdge({chans[0].get(), chans[1].get()}, key);
  std::vector<std::thread> readers;
  for (int k = 0; k < 2; ++k)
    readers.emplace_back([&, k] {
      for (;;) {
        StreamElement e;
        uint32_t t = consumers[k].Prepare();
        if (!chans[k]->TryPop(&e)) {
          consumers[k].Park(t);
          continue;
        }
        consumers[k].Cancel();
        if (e.kind == StreamElement::Kind::kEndOfStream) return;
        chans[k]->Recycle(std::move(e.batch));
      }
    });
  const RecordBatch& words = Words();
  RecordBatch batch;
  size_t next = 0;
  int64_t items = 0;
  for (auto _ : state) {
    batch.clear();
    for (size_t i = 0; i < 1024; ++i) {
      batch.AddFrom(words, next);
      if (++next == words.size()) next = 0;
    }
    gate.Emit(&batch);
    items += 1024;
  }
  gate.Broadcast(StreamElement::EndOfStream());
  for (auto& t : readers) t.join();
  state.SetItemsProcessed(items);
}
BENCHMARK(BM_OutputGateHashEmit)->UseRealTime();

// KeyHash of the corpus's words, one after another (the hash edge's first pass over a batch).
void BM_KeyHash(benchmark::State& state) {
  const RecordBatch& words = Words();
  std::vector<std::string_view> w(words.size());
  for (size_t i = 0; i < w.size(); ++i) w[i] = words.GetString(i, 0);
  uint64_t sink = 0;
  for (auto _ : state) {
    for (std::string_view s : w) sink += KeyHash(s);
    benchmark::DoNotOptimize(sink);
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * w.size()));
}
BENCHMARK(BM_KeyHash);

// The rows of the corpus's words as an unaligned checkpoint's channel state (or a network
// frame) encodes them: row by row (EncodeRow), or the batch at once (EncodeRows, range(0) 1).
void BM_EncodeRows(benchmark::State& state) {
  const RecordBatch& words = Words();
  const bool whole = state.range(0) == 1;
  for (auto _ : state) {
    std::string out;  // as EncodeChannelState's: grown from empty
    if (whole) {
      EncodeRows(words, &out);
    } else {
      for (size_t r = 0; r < words.size(); ++r) EncodeRow(words, r, &out);
    }
    benchmark::DoNotOptimize(out.data());
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * words.size()));
}
BENCHMARK(BM_EncodeRows)->Arg(0)->Arg(1);

// --- Tokenizer: lines to words --------------------------------------------------------------

void BM_Tokenize(benchmark::State& state) {
  std::unique_ptr<Operator> tok = FindOperatorType("tokenize")->create(OperatorConfig{});
  const std::vector<std::string>& lines = Lines();
  std::vector<RecordBatch> batches;
  for (size_t i = 0; i < lines.size(); i += 1024) {
    batches.emplace_back();
    for (size_t j = i; j < std::min(lines.size(), i + 1024); ++j) batches.back().Add(lines[j]);
  }
  RecordBatch out;
  size_t next = 0;
  int64_t words = 0, bytes = 0;
  for (auto _ : state) {
    out.clear();
    Check(tok->Process(0, batches[next], &out), state);
    words += static_cast<int64_t>(out.size());
    bytes += static_cast<int64_t>(batches[next].arena_bytes());
    if (++next == batches.size()) next = 0;
  }
  state.SetItemsProcessed(words);
  state.SetBytesProcessed(bytes);
}
BENCHMARK(BM_Tokenize);

// --- Expressions: the filter and map operators over batches of clicks ---------------------

// Batches of 1024 clicks (user string, url string, bytes int64, ts timestamp): Zipf users from the
// corpus, half the urls under /api/, bytes 0..4999, every 10th bytes NULL.
const std::vector<RecordBatch>& ClickBatches() {
  static const std::vector<RecordBatch> batches = [] {
    const SchemaRef schema = MakeSchema({{"user", FieldType::kString},
                                         {"url", FieldType::kString},
                                         {"bytes", FieldType::kInt64},
                                         {"ts", FieldType::kTimestamp}});
    const RecordBatch& words = Words();
    std::vector<RecordBatch> out;
    for (size_t i = 0; i < 256 * 1024; ++i) {
      if (i % 1024 == 0) out.emplace_back(schema);
      RecordBatch& b = out.back();
      size_t r = b.AddRow();
      b.SetString(r, 0, words.key(i % words.size()));
      b.SetString(r, 1, (i % 2 ? "/api/v1/" : "/static/") + std::string(words.key((i * 7) % words.size())));
      if (i % 10 != 0) b.SetInt64(r, 2, static_cast<int64_t>((i * 7919) % 5000));
      b.SetInt64(r, 3, 1764570917123 + static_cast<int64_t>(i));
    }
    return out;
  }();
  return batches;
}

// Drives a filter or map (config `c`) over the click batches; items = input records.
void RunExprOperator(benchmark::State& state, OperatorConfig c) {
  const std::vector<RecordBatch>& batches = ClickBatches();
  const OperatorType* t = FindOperatorType(c.type);
  SchemaRef out_schema;
  Check(t->output_schema(c, {batches[0].schema()}, &out_schema), state);
  std::unique_ptr<Operator> op = t->create(c);
  OperatorContext ctx;
  ctx.operator_id = c.id;
  ctx.input_schemas = {batches[0].schema()};
  ctx.output_schema = out_schema;
  Check(op->Open(ctx), state);
  RecordBatch out(out_schema);
  size_t next = 0;
  int64_t items = 0, emitted = 0;
  for (auto _ : state) {
    out.clear();
    Check(op->Process(0, batches[next], &out), state);
    items += static_cast<int64_t>(batches[next].size());
    emitted += static_cast<int64_t>(out.size());
    if (++next == batches.size()) next = 0;
  }
  state.SetItemsProcessed(items);
  state.counters["selected"] = static_cast<double>(emitted) / static_cast<double>(std::max<int64_t>(items, 1));
}

void BM_FilterOperator(benchmark::State& state) {
  OperatorConfig c;
  c.id = "big";
  c.type = "filter";
  c.params["where"] = "bytes > 1000 AND url LIKE '/api/%'";
  RunExprOperator(state, c);
}
BENCHMARK(BM_FilterOperator);

void BM_MapOperator(benchmark::State& state) {
  OperatorConfig c;
  c.id = "shaped";
  c.type = "map";
  c.entries["select"] = {{"user", "lower(user)", "bench"}, {"kb", "bytes / 1024.0", "bench"}, {"ts", "ts", "bench"}};
  RunExprOperator(state, c);
}
BENCHMARK(BM_MapOperator);

// --- Keyed count: KeyedInt64State::Add, and the count operator around it --------------------

void BM_KeyedCountAdd(benchmark::State& state) {
  const RecordBatch& words = Words();
  KeyedInt64State kv(kMaxParallelism, KeyGroupRange{0, kMaxParallelism - 1});
  size_t next = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(kv.Add(words.key(next), 1));
    if (++next == words.size()) next = 0;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["keys"] = static_cast<double>(kv.size());
}
BENCHMARK(BM_KeyedCountAdd);

void BM_CountOperator(benchmark::State& state) {
  const RecordBatch& words = Words();
  std::vector<RecordBatch> batches;
  for (size_t i = 0; i < words.size(); i += 1024) {
    batches.emplace_back();
    for (size_t j = i; j < std::min(words.size(), i + 1024); ++j) batches.back().AddFrom(words, j);
  }
  KeyedInt64State kv(kMaxParallelism, KeyGroupRange{0, kMaxParallelism - 1});
  OperatorConfig oc;
  oc.key_by = {"key"};  // the words are KeyValueSchema records
  std::unique_ptr<Operator> count = FindOperatorType("count")->create(oc);
  OperatorContext ctx;
  ctx.keyed_state = &kv;
  Check(count->Open(ctx), state);
  RecordBatch out;
  size_t next = 0;
  int64_t items = 0;
  for (auto _ : state) {
    out.clear();
    Check(count->Process(0, batches[next], &out), state);
    items += static_cast<int64_t>(batches[next].size());
    if (++next == batches.size()) next = 0;
  }
  state.SetItemsProcessed(items);
}
BENCHMARK(BM_CountOperator);

// The end-of-run summary (RunSummary::top_keys): the count operator's 10 largest keys over a
// table of range(0) keys, as the job runner asks for them once all subtasks have finished.
void BM_CountTopKeys(benchmark::State& state) {
  const std::vector<std::string> k = DistinctKeys(static_cast<size_t>(state.range(0)));
  KeyedInt64State kv(kMaxParallelism, KeyGroupRange{0, kMaxParallelism - 1});
  for (size_t i = 0; i < k.size(); ++i) kv.Add(k[i], static_cast<int64_t>(i % 1000) + 1);
  OperatorConfig oc;
  oc.key_by = {"key"};
  std::unique_ptr<Operator> count = FindOperatorType("count")->create(oc);
  OperatorContext ctx;
  ctx.keyed_state = &kv;
  Check(count->Open(ctx), state);
  const auto* summary = dynamic_cast<const KeyedSummary*>(count.get());
  std::vector<std::pair<std::string, int64_t>> top;
  for (auto _ : state) {
    top.clear();
    summary->TopKeys(10, &top);
    if (top.size() != 10 || top[0].second != 1000) state.SkipWithError("wrong top keys");
  }
  state.SetItemsProcessed(state.iterations() * state.range(0));
}
BENCHMARK(BM_CountTopKeys)->Arg(1000000)->Arg(2200000)->Unit(benchmark::kMillisecond);

// --- Synchronous snapshot: TakeDelta with range(0) of 1M keys changed -----------------------

void BM_SnapshotTakeDelta(benchmark::State& state) {
  const size_t keys = 1000000, dirty = static_cast<size_t>(state.range(0));
  const std::vector<std::string> k = DistinctKeys(keys);
  KeyedInt64State kv(kMaxParallelism, KeyGroupRange{0, kMaxParallelism - 1});
  for (const std::string& s : k) kv.Add(s, 1);
  kv.TakeDelta();
  for (auto _ : state) {
    state.PauseTiming();
    for (size_t i = 0; i < dirty; ++i) kv.Add(k[i * (keys / dirty)], 1);
    state.ResumeTiming();
    std::unique_ptr<StateDelta> d = kv.TakeDelta();
    benchmark::DoNotOptimize(d.get());
    if (d->entries.size() != dirty) state.SkipWithError("wrong delta size");
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(dirty));
}
BENCHMARK(BM_SnapshotTakeDelta)->Arg(1000000)->Arg(250000)->Arg(10000)->Unit(benchmark::kMillisecond);

// --- Encoding a changelog segment (state.changelog's asynchronous part, before its write) ---
// range(0) keys in the table, all changed: the delta's entries come in the table's slot order
// and point at their keys in the arena (in insertion order), so each key is a random access.

// The delta of a table of `keys` keys, every one changed.
std::unique_ptr<StateDelta> AllChangedDelta(size_t keys) {
  KeyedInt64State kv(kMaxParallelism, KeyGroupRange{0, kMaxParallelism - 1});
  for (const std::string& s : DistinctKeys(keys)) kv.Add(s, 1);
  return kv.TakeDelta();
}

void BM_EncodeChangelogSegment(benchmark::State& state) {
  const size_t keys = static_cast<size_t>(state.range(0));
  const std::unique_ptr<StateDelta> delta = AllChangedDelta(keys);
  size_t bytes = 0;
  for (auto _ : state) {
    const std::string segment = EncodeChangelogSegment(*delta);
    bytes = segment.size();
    benchmark::DoNotOptimize(segment.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(keys));
  state.counters["MB"] = static_cast<double>(bytes) / 1e6;
}
BENCHMARK(BM_EncodeChangelogSegment)->Arg(100000)->Arg(1000000)->Unit(benchmark::kMillisecond);

// The same into one buffer kept across iterations, as a persister thread keeps it across
// checkpoints (state/rocksdb_state_store.cc): no fresh pages to fault in and zero-fill.
void BM_EncodeChangelogSegmentIntoBuffer(benchmark::State& state) {
  const size_t keys = static_cast<size_t>(state.range(0));
  const std::unique_ptr<StateDelta> delta = AllChangedDelta(keys);
  std::string buffer;
  size_t bytes = 0;
  for (auto _ : state) {
    const std::string_view segment = EncodeChangelogSegment(*delta, &buffer);
    bytes = segment.size();
    benchmark::DoNotOptimize(segment.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(keys));
  state.counters["MB"] = static_cast<double>(bytes) / 1e6;
}
BENCHMARK(BM_EncodeChangelogSegmentIntoBuffer)->Arg(100000)->Arg(1000000)->Unit(benchmark::kMillisecond);

// --- CRC-32C of a segment-sized buffer (every checkpoint file's checksum): the CRC32
// instruction where the CPU has it (range(0) = 1) against the tables (0) ---

void BM_Crc32c(benchmark::State& state) {
  std::string data(4 << 20, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>((i * 131 + 7) & 0xff);
  const bool instruction = state.range(0) == 1;
  for (auto _ : state) benchmark::DoNotOptimize(instruction ? Crc32c(data) : Crc32cPortable(data));
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(data.size()));
}
BENCHMARK(BM_Crc32c)->Arg(1)->Arg(0)->Unit(benchmark::kMicrosecond);

// --- Persisting a delta: WriteBatch + flush + RocksDB checkpoint (what the persister does) --

std::unique_ptr<StateDelta> DeltaOf(const std::vector<std::string>& keys, int64_t value) {
  KeyedInt64State kv(kMaxParallelism, KeyGroupRange{0, kMaxParallelism - 1});
  for (const std::string& s : keys) kv.Put(s, value);
  return kv.TakeDelta();
}

void BM_PersistDelta(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const std::unique_ptr<StateDelta> delta = DeltaOf(DistinctKeys(n), 7);
  const std::string root = ScratchDir() + "/persist-" + std::to_string(n);
  int i = 0;
  for (auto _ : state) {
    state.PauseTiming();
    RemoveAll(root).IgnoreError();  // scratch space: best effort
    std::unique_ptr<RocksDbStateStore> store;
    Check(RocksDbStateStore::Create(root + "/db", &store), state);
    state.ResumeTiming();
    uint64_t bytes = 0;
    Check(store->PersistAndCheckpoint(*delta, root + "/chk-" + std::to_string(i++), &bytes), state);
    state.PauseTiming();
    store.reset();
    state.ResumeTiming();
  }
  RemoveAll(root).IgnoreError();  // scratch space: best effort
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(n));
}
BENCHMARK(BM_PersistDelta)->Arg(10000)->Arg(100000)->Arg(500000)->Arg(1000000)->Unit(benchmark::kMillisecond)->UseRealTime();

// The same, with the delta first sorted into RocksDB key order (key group, then key bytes), sort
// included in the time: what the engine would gain by sorting before the WriteBatch (RocksDB's
// skip list inserts in-order keys much faster than random ones).
void BM_PersistDeltaSorted(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const std::unique_ptr<StateDelta> delta = DeltaOf(DistinctKeys(n), 7);
  const std::string root = ScratchDir() + "/persist-sorted-" + std::to_string(n);
  int i = 0;
  for (auto _ : state) {
    state.PauseTiming();
    RemoveAll(root).IgnoreError();  // scratch space: best effort
    std::unique_ptr<RocksDbStateStore> store;
    Check(RocksDbStateStore::Create(root + "/db", &store), state);
    StateDelta copy = *delta;
    state.ResumeTiming();
    std::sort(copy.entries.begin(), copy.entries.end(), [&](const StateDelta::Entry& a, const StateDelta::Entry& b) {
      return a.key_group != b.key_group ? a.key_group < b.key_group : copy.key(a) < copy.key(b);
    });
    uint64_t bytes = 0;
    Check(store->PersistAndCheckpoint(copy, root + "/chk-" + std::to_string(i++), &bytes), state);
    state.PauseTiming();
    store.reset();
    state.ResumeTiming();
  }
  RemoveAll(root).IgnoreError();  // scratch space: best effort
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(n));
}
BENCHMARK(BM_PersistDeltaSorted)->Arg(100000)->Arg(1000000)->Unit(benchmark::kMillisecond)->UseRealTime();

// A delta of range(0) keys onto a database that already holds 1M keys (an incremental checkpoint).
void BM_PersistIncrementalDelta(benchmark::State& state) {
  const size_t n = static_cast<size_t>(state.range(0));
  const std::vector<std::string> all = DistinctKeys(1000000);
  const std::string root = ScratchDir() + "/incremental-" + std::to_string(n);
  RemoveAll(root).IgnoreError();  // scratch space: best effort
  std::unique_ptr<RocksDbStateStore> store;
  Check(RocksDbStateStore::Create(root + "/db", &store), state);
  uint64_t bytes = 0;
  Check(store->PersistAndCheckpoint(*DeltaOf(all, 1), root + "/chk-base", &bytes), state);
  const std::unique_ptr<StateDelta> delta =
      DeltaOf(std::vector<std::string>(all.begin(), all.begin() + static_cast<long>(n)), 2);
  int i = 0;
  for (auto _ : state) Check(store->PersistAndCheckpoint(*delta, root + "/chk-" + std::to_string(i++), &bytes), state);
  store.reset();
  RemoveAll(root).IgnoreError();  // scratch space: best effort
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(n));
}
BENCHMARK(BM_PersistIncrementalDelta)->Arg(1000)->Arg(100000)->Unit(benchmark::kMillisecond)->UseRealTime();

// --- Restore: 1M keys from a RocksDB checkpoint into a fresh KeyedInt64State ----------------

void BM_Restore1M(benchmark::State& state) {
  const size_t n = 1000000;
  const std::string root = ScratchDir() + "/restore";
  RemoveAll(root).IgnoreError();  // scratch space: best effort
  const KeyGroupRange all{0, kMaxParallelism - 1};
  {
    std::unique_ptr<RocksDbStateStore> store;
    Check(RocksDbStateStore::Create(root + "/db", &store), state);
    uint64_t bytes = 0;
    Check(store->PersistAndCheckpoint(*DeltaOf(DistinctKeys(n), 3), root + "/chk", &bytes), state);
  }
  int i = 0;
  for (auto _ : state) {
    KeyedInt64State kv(kMaxParallelism, all);
    std::unique_ptr<RocksDbStateStore> store;
    Check(RocksDbStateStore::Restore({KeyedSnapshotHandle{root + "/chk", all}}, root + "/work-" + std::to_string(i++),
                                     &kv, &store),
          state);
    if (kv.size() != n) state.SkipWithError("wrong number of restored keys");
    state.PauseTiming();
    store.reset();
    RemoveAll(root + "/work-" + std::to_string(i - 1)).IgnoreError();  // scratch space: best effort
    state.ResumeTiming();
  }
  RemoveAll(root).IgnoreError();  // scratch space: best effort
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(n));
}
BENCHMARK(BM_Restore1M)->Unit(benchmark::kMillisecond)->UseRealTime();

// The hash-table half of a restore: inserting 1M new keys into an empty KeyedInt64State.
void BM_StateLoad1M(benchmark::State& state) {
  const std::vector<std::string> keys = DistinctKeys(1000000);
  for (auto _ : state) {
    KeyedInt64State kv(kMaxParallelism, KeyGroupRange{0, kMaxParallelism - 1});
    for (const std::string& k : keys) kv.LoadEntry(k, 1);
    benchmark::DoNotOptimize(kv.size());
  }
  state.SetItemsProcessed(state.iterations() * 1000000);
}
BENCHMARK(BM_StateLoad1M)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace cairn

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  cairn::RemoveAll(cairn::ScratchDir()).IgnoreError();  // scratch space: best effort
  return 0;
}
