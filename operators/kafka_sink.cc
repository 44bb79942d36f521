// kafka_sink: writes records to a Kafka topic as `lines`, `csv` or `jsonl` values (engine/format),
// keyed by a field or not, with `delivery`:
//   none           produce and forget (flushed at the end of input only)
//   at_least_once  every checkpoint's snapshot waits until all records produced before it are
//                  acknowledged; a failed delivery fails the job
//   exactly_once   Flink's two-phase commit with Kafka transactions (docs/kafka.md)
//
// exactly_once. Each subtask writes the records of one checkpoint interval in one transaction
// of a producer of its own, under transactional.id "<prefix>-<subtask>-<slot>" (slot 0..3 in
// turn, so the prepared transaction of one checkpoint and the open one of the next have
// different ids). The snapshot flushes the transaction (prepare) and stores it, with the
// records, in the checkpoint; NotifyCheckpointComplete commits it. A commit also commits, in the
// same transaction, the offset <checkpoint id> of partition 0 of the topic to the consumer
// group named like the transactional id: a marker that says, atomically with the records,
// that the transaction of that checkpoint committed.
//
// Restore. librdkafka cannot resume another producer's transaction by id (Flink's KafkaSink
// does it through the Java client's internals, setting producer id and epoch by reflection), so
// "recommit" is done by rewriting: for each transaction the restored checkpoint holds, the
// subtask that owns its id first fences the id (init_transactions: an open transaction of it
// is aborted, a zombie holding it can no longer commit), then reads the marker, and when the
// transaction did not commit writes its records again in a new transaction of its own, with
// the marker, and commits it. Later transactions (of checkpoints after the restored one) are
// aborted by the same fencing: every subtask fences its own ids and those of the old subtasks
// that no new subtask has (old subtask s >= p' goes to s mod p'). The pending transactions are
// a union list state, so the owner of every id sees them all.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "engine/base/coding.h"
#include "engine/expr/expr.h"
#include "engine/format/record_writer.h"
#include "jobs/registry.h"
#include "operators/kafka_client.h"
#include "operators/text_params.h"
#include "state/operator_list_state.h"

namespace cairn {
namespace {

constexpr int kSlots = 4;                 // transactional ids per subtask
constexpr int kTransactionTimeoutMs = 30000;  // for init, commit and abort calls

enum class Delivery { kNone, kAtLeastOnce, kExactlyOnce };

Delivery DeliveryOf(const std::string& s) {
  if (s == "none") return Delivery::kNone;
  if (s == "at_least_once") return Delivery::kAtLeastOnce;
  return Delivery::kExactlyOnce;
}

// A prepared transaction as the checkpoint stores it.
struct Prepared {
  std::string id;          // its transactional.id (and marker group)
  uint64_t checkpoint = 0;
  uint64_t count = 0;
  std::string records;     // per record: has-key byte, key and value length-prefixed
};

std::string EncodePrepared(const Prepared& p) {
  std::string s;
  PutLengthPrefixed(&s, p.id);
  PutFixed64(&s, p.checkpoint);
  PutFixed64(&s, p.count);
  PutLengthPrefixed(&s, p.records);
  return s;
}

bool DecodePrepared(std::string_view bytes, Prepared* p) {
  Decoder d(bytes);
  return d.GetLengthPrefixed(&p->id) && d.GetFixed64(&p->checkpoint) && d.GetFixed64(&p->count) &&
         d.GetLengthPrefixed(&p->records) && d.done();
}

// Writes a line to the file CAIRN_KAFKA_SINK_TRACE names, if set: the sink's transaction calls,
// one line each ("<pid> <subtask> <call> id=<transactional.id> checkpoint=<n>"), appended with one
// write(2) so that subtasks and runs interleave whole lines. A hook for tests and debugging.
void Trace(uint32_t subtask, const char* call, const std::string& id, uint64_t checkpoint) {
  static const char* path = std::getenv("CAIRN_KAFKA_SINK_TRACE");
  if (path == nullptr || *path == '\0') return;
  std::string line = std::to_string(getpid()) + " " + std::to_string(subtask) + " " + call + " id=" + id + " checkpoint=" + std::to_string(checkpoint) +
                     "\n";
  int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  (void)!write(fd, line.data(), line.size());
  close(fd);
}

// `key` over the sink's input: an expression (engine/expr/expr.h) of any type but NULL; a bare
// field name is one.
Status CompileKey(const OperatorConfig& c, const SchemaRef& input, std::unique_ptr<ExprProgram>* out) {
  const std::string place = c.Where("key") + ": operator '" + c.id + "' (type kafka_sink): key";
  auto p = std::make_unique<ExprProgram>(input);
  CAIRN_RETURN_IF_ERROR(p->Add(c.GetString("key"), place));
  if (p->type(0).null_literal) return Status::InvalidArgument(place + ", column 1: key must not be the NULL literal");
  *out = std::move(p);
  return Status::OK();
}

class KafkaSink final : public Operator {
 public:
  explicit KafkaSink(const OperatorConfig& c)
      : config_(c),
        topic_(c.GetString("topic")),
        delivery_(DeliveryOf(c.GetString("delivery"))),
        prefix_(c.GetString("transactional_id_prefix")) {
    (void)ParseTextFormat(c.GetString("format"), &writer_.format);
    writer_.delimiter = c.GetString("delimiter").empty() ? ',' : c.GetString("delimiter")[0];
  }

  ~KafkaSink() override { DropProducers(); }

  Status Open(OperatorContext& ctx) override {
    subtask_ = ctx.subtask;
    parallelism_ = ctx.parallelism;
    what_ = "operator " + ctx.operator_id + " (kafka_sink, subtask " + std::to_string(ctx.subtask) + ")";
    if (prefix_.empty()) prefix_ = "cairn-" + ctx.job_name + "-" + ctx.operator_id;
    if (!config_.GetString("key").empty()) {
      CAIRN_RETURN_IF_ERROR(CompileKey(config_, ctx.input_schemas[0], &key_));
      key_type_ = key_->type(0).type;
    }
    if (delivery_ != Delivery::kExactlyOnce) {
      std::vector<std::pair<std::string, std::string>> defaults = {{"log_level", "4"}};
      if (delivery_ == Delivery::kAtLeastOnce) defaults.push_back({"enable.idempotence", "true"});
      CAIRN_RETURN_IF_ERROR(NewProducer(defaults, &producer_));
      return Status::OK();
    }
    CAIRN_RETURN_IF_ERROR(ctx.operator_state->GetUnionListState("transactions", &prepared_state_));
    CAIRN_RETURN_IF_ERROR(ctx.operator_state->GetUnionListState("parallelism", &parallelism_state_));
    int64_t known = ctx.parallelism;
    for (int64_t p : parallelism_state_->items()) known = std::max(known, p);
    known_parallelism_ = known;
    // Fence every id this subtask owns: its own, and those of old subtasks no new one has.
    std::set<std::string> owned;
    for (int64_t s = 0; s < known; ++s)
      if (Owner(s) == subtask_)
        for (int k = 0; k < kSlots; ++k) owned.insert(Id(s, k));
    for (const std::string& id : owned) CAIRN_RETURN_IF_ERROR(Fence(id));
    // The restored checkpoint's transactions of those ids: rewrite those that did not commit.
    for (const std::string& item : prepared_state_->items()) {
      Prepared p;
      if (!DecodePrepared(item, &p)) return Status::Corruption(what_ + ": damaged transaction in the checkpoint");
      if (!owned.count(p.id)) continue;
      int64_t marker = -1;
      CAIRN_RETURN_IF_ERROR(ReadMarker(p.id, &marker));
      if (marker >= static_cast<int64_t>(p.checkpoint)) {
        Trace(subtask_, "committed-before", p.id, p.checkpoint);
        continue;
      }
      CAIRN_RETURN_IF_ERROR(Rewrite(p));
    }
    prepared_state_->Clear();
    return Status::OK();
  }

  Status Process(int, const RecordBatch& in, RecordBatch*) override {
    if (in.empty()) return Status::OK();
    if (!error_.ok()) return error_;
    if (delivery_ == Delivery::kExactlyOnce && current_ == nullptr) CAIRN_RETURN_IF_ERROR(BeginTransaction());
    rd_kafka_t* rk = delivery_ == Delivery::kExactlyOnce ? current_->rk.get() : producer_.get();
    if (key_ != nullptr) key_->Evaluate(in);
    for (size_t i = 0; i < in.size(); ++i) {
      value_.clear();
      AppendRecord(writer_, in, i, &scratch_, &value_);
      if (!value_.empty() && value_.back() == '\n') value_.pop_back();
      const bool has_key = key_ != nullptr && !key_->result(0).null[i];
      key_text_.clear();
      if (has_key) KeyText(i, &key_text_);
      CAIRN_RETURN_IF_ERROR(Produce(rk, has_key, key_text_, value_));
      if (delivery_ == Delivery::kExactlyOnce) {
        current_->records.push_back(has_key ? '\1' : '\0');
        PutLengthPrefixed(&current_->records, key_text_);
        PutLengthPrefixed(&current_->records, value_);
        ++current_->count;
      }
    }
    rd_kafka_poll(rk, 0);  // delivery reports
    return error_;
  }

  Status SnapshotState(CheckpointId id, OperatorSnapshot*) override {
    if (delivery_ == Delivery::kNone) return error_;
    if (delivery_ == Delivery::kAtLeastOnce) return FlushAll(producer_.get());
    if (current_ != nullptr) {
      if (pending_.size() >= kSlots - 1)
        return Status::Aborted(what_ + ": " + std::to_string(pending_.size()) +
                               " transactions await their checkpoint's completion; this checkpoint is declined");
      CAIRN_RETURN_IF_ERROR(FlushAll(current_->rk.get()));
      current_->checkpoint = id;
      Trace(subtask_, "prepare", current_->id, id);
      pending_.push_back(std::move(current_));
    }
    std::vector<std::string> items;
    for (const auto& t : pending_) items.push_back(EncodePrepared(Prepared{t->id, t->checkpoint, t->count, t->records}));
    prepared_state_->Update(std::move(items));
    parallelism_state_->Update({std::max<int64_t>(known_parallelism_, parallelism_)});
    return Status::OK();
  }

  Status NotifyCheckpointComplete(CheckpointId id) override {
    if (delivery_ != Delivery::kExactlyOnce) return error_;
    while (!pending_.empty() && pending_.front()->checkpoint <= id) {
      Transaction& t = *pending_.front();
      CAIRN_RETURN_IF_ERROR(Commit(t.rk.get(), t.id, t.checkpoint));
      Trace(subtask_, "commit", t.id, t.checkpoint);
      pending_.erase(pending_.begin());
    }
    return Status::OK();
  }

  Status Finish(RecordBatch*) override {
    if (delivery_ == Delivery::kNone) return FlushAll(producer_.get());
    return Status::OK();
  }

  Status Close() override {
    // An open transaction is left to the restore's fencing (or the broker's timeout); it is
    // aborted here only to release the broker's state sooner.
    if (current_ != nullptr) (void)rd_kafka_abort_transaction(current_->rk.get(), 5000);
    DropProducers();
    return Status::OK();
  }

 private:
  struct Transaction {
    std::string id;
    KafkaHandle rk;
    CheckpointId checkpoint = 0;
    uint64_t count = 0;
    std::string records;
  };

  std::string Id(int64_t subtask, int slot) const { return prefix_ + "-" + std::to_string(subtask) + "-" + std::to_string(slot); }
  uint32_t Owner(int64_t old_subtask) const {
    return static_cast<uint32_t>(old_subtask < parallelism_ ? old_subtask : old_subtask % parallelism_);
  }

  static void OnDelivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
    auto* self = static_cast<KafkaSink*>(opaque);
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR && self->error_.ok())
      self->error_ = Status::IOError(self->what_ + ": a record was not delivered to topic '" + self->topic_ +
                                     "': " + rd_kafka_err2str(m->err));
  }

  Status NewProducer(const std::vector<std::pair<std::string, std::string>>& defaults, KafkaHandle* out) {
    rd_kafka_conf_t* conf = nullptr;
    CAIRN_RETURN_IF_ERROR(MakeKafkaConf(config_, "operator '" + config_.id + "' (type kafka_sink)", defaults, &conf));
    rd_kafka_conf_set_dr_msg_cb(conf, &KafkaSink::OnDelivery);
    rd_kafka_conf_set_opaque(conf, this);
    char err[512];
    rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof(err));
    if (rk == nullptr) {
      rd_kafka_conf_destroy(conf);
      return Status::InvalidArgument(what_ + ": cannot create a Kafka producer: " + err);
    }
    out->reset(rk);
    return Status::OK();
  }

  Status TransactionalProducer(const std::string& id, KafkaHandle* out) {
    CAIRN_RETURN_IF_ERROR(NewProducer({{"log_level", "4"}, {"transactional.id", id}}, out));
    rd_kafka_t* rk = out->get();
    return Retrying([&] { return rd_kafka_init_transactions(rk, kTransactionTimeoutMs); }, "init_transactions", id);
  }

  // Calls `call` again while it fails with an error librdkafka calls retriable (a coordinator
  // moving, a timeout), at most 10 times; then Check.
  template <class Call>
  Status Retrying(Call call, const char* name, const std::string& id) {
    rd_kafka_error_t* e = call();
    for (int attempt = 0; e != nullptr && rd_kafka_error_is_retriable(e) && attempt < 10; ++attempt) {
      rd_kafka_error_destroy(e);
      usleep(100000);  // a retry's backoff
      e = call();
    }
    return Check(e, name, id);
  }

  // A librdkafka transaction call's error as a Status (the error object is consumed).
  Status Check(rd_kafka_error_t* e, const char* call, const std::string& id) {
    if (e == nullptr) return Status::OK();
    Status s = Status::IOError(what_ + ": " + call + " of transactional.id '" + id + "' failed: " +
                               rd_kafka_error_string(e) +
                               (rd_kafka_error_is_fatal(e) ? " (fatal: a newer producer fenced this one?)" : ""));
    rd_kafka_error_destroy(e);
    return s;
  }

  Status Fence(const std::string& id) {
    KafkaHandle rk;
    CAIRN_RETURN_IF_ERROR(TransactionalProducer(id, &rk));
    Trace(subtask_, "fence", id, 0);
    return Status::OK();
  }

  // A consumer of consumer group `group` (a transactional id's marker group), never
  // auto-committing.
  Status MarkerConsumer(const std::string& group, KafkaHandle* out) {
    rd_kafka_conf_t* conf = nullptr;
    CAIRN_RETURN_IF_ERROR(MakeKafkaConf(config_, "operator '" + config_.id + "' (type kafka_sink)",
                                        {{"group.id", group}, {"enable.auto.commit", "false"}, {"log_level", "4"}},
                                        &conf));
    char err[512];
    rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
    if (rk == nullptr) {
      rd_kafka_conf_destroy(conf);
      return Status::InvalidArgument(what_ + ": cannot create a Kafka consumer: " + err);
    }
    out->reset(rk);
    return Status::OK();
  }

  Status ReadMarker(const std::string& group, int64_t* marker) {
    KafkaHandle consumer;
    CAIRN_RETURN_IF_ERROR(MarkerConsumer(group, &consumer));
    rd_kafka_t* rk = consumer.get();
    KafkaPartitionList list(rd_kafka_topic_partition_list_new(1));
    rd_kafka_topic_partition_list_add(list.get(), topic_.c_str(), 0);
    rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR_NO_ERROR;
    for (int attempt = 0; attempt < 50; ++attempt) {
      e = rd_kafka_committed(rk, list.get(), kTransactionTimeoutMs);
      if (e == RD_KAFKA_RESP_ERR_NO_ERROR && list->elems[0].err == RD_KAFKA_RESP_ERR_NO_ERROR) break;
      if (e == RD_KAFKA_RESP_ERR_NO_ERROR) e = list->elems[0].err;
      usleep(100000);  // a retry's backoff (a coordinator moving, a transaction being settled)
    }
    (void)rd_kafka_consumer_close(rk);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
      return Status::IOError(what_ + ": cannot read the commit marker of transactional.id '" + group + "': " +
                             rd_kafka_err2str(e));
    *marker = list->elems[0].offset;
    return Status::OK();
  }

  Status Produce(rd_kafka_t* rk, bool has_key, const std::string& key, const std::string& value) {
    for (;;) {
      rd_kafka_resp_err_t e = rd_kafka_producev(
          rk, RD_KAFKA_V_TOPIC(topic_.c_str()), RD_KAFKA_V_VALUE(const_cast<char*>(value.data()), value.size()),
          RD_KAFKA_V_KEY(has_key ? key.data() : nullptr, has_key ? key.size() : 0),
          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
      if (e == RD_KAFKA_RESP_ERR_NO_ERROR) return Status::OK();
      if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL)
        return Status::IOError(what_ + ": cannot produce to topic '" + topic_ + "': " + rd_kafka_err2str(e));
      rd_kafka_poll(rk, 100);  // the queue is full: wait for deliveries (backpressure)
      CAIRN_RETURN_IF_ERROR(error_);
    }
  }

  Status FlushAll(rd_kafka_t* rk) {
    for (;;) {
      rd_kafka_resp_err_t e = rd_kafka_flush(rk, kTransactionTimeoutMs);
      CAIRN_RETURN_IF_ERROR(error_);
      if (e == RD_KAFKA_RESP_ERR_NO_ERROR) return Status::OK();
      if (e != RD_KAFKA_RESP_ERR__TIMED_OUT)
        return Status::IOError(what_ + ": cannot flush to topic '" + topic_ + "': " + rd_kafka_err2str(e));
    }
  }

  Status BeginTransaction() {
    auto t = std::make_unique<Transaction>();
    t->id = Id(subtask_, next_slot_);
    next_slot_ = (next_slot_ + 1) % kSlots;
    CAIRN_RETURN_IF_ERROR(TransactionalProducer(t->id, &t->rk));
    CAIRN_RETURN_IF_ERROR(Check(rd_kafka_begin_transaction(t->rk.get()), "begin_transaction", t->id));
    Trace(subtask_, "begin", t->id, 0);
    current_ = std::move(t);
    return Status::OK();
  }

  // Commits the transaction of `rk` with the marker offset `checkpoint` for group `marker`.
  Status Commit(rd_kafka_t* rk, const std::string& marker, uint64_t checkpoint) {
    KafkaPartitionList offsets(rd_kafka_topic_partition_list_new(1));
    rd_kafka_topic_partition_list_add(offsets.get(), topic_.c_str(), 0)->offset = static_cast<int64_t>(checkpoint);
    rd_kafka_consumer_group_metadata_t* md = rd_kafka_consumer_group_metadata_new(marker.c_str());
    Status s = Retrying([&] { return rd_kafka_send_offsets_to_transaction(rk, offsets.get(), md, kTransactionTimeoutMs); },
                        "send_offsets_to_transaction", marker);
    rd_kafka_consumer_group_metadata_destroy(md);
    CAIRN_RETURN_IF_ERROR(s);
    CAIRN_RETURN_IF_ERROR(
        Retrying([&] { return rd_kafka_commit_transaction(rk, kTransactionTimeoutMs); }, "commit_transaction", marker));
    return MarkCommitted(marker, checkpoint);
  }

  // The same marker committed again, plainly, after the transaction committed. On a broker it
  // changes nothing (the transaction wrote it atomically); librdkafka 2.0.2's mock cluster does
  // not store offsets sent to a transaction, and there it is the only marker, written just
  // after the commit: a kill between the two makes a restore write the transaction again.
  Status MarkCommitted(const std::string& group, uint64_t checkpoint) {
    KafkaHandle& c = markers_[group];
    if (c == nullptr) CAIRN_RETURN_IF_ERROR(MarkerConsumer(group, &c));
    KafkaPartitionList offsets(rd_kafka_topic_partition_list_new(1));
    rd_kafka_topic_partition_list_add(offsets.get(), topic_.c_str(), 0)->offset = static_cast<int64_t>(checkpoint);
    rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR_NO_ERROR;
    for (int attempt = 0; attempt < 50; ++attempt) {
      e = rd_kafka_commit(c.get(), offsets.get(), 0);
      if (e == RD_KAFKA_RESP_ERR_NO_ERROR) break;
      usleep(100000);  // a retry's backoff (the group coordinator moving)
    }
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
      return Status::IOError(what_ + ": cannot commit the marker of transactional.id '" + group + "': " +
                             rd_kafka_err2str(e));
    Trace(subtask_, "marked", group, checkpoint);
    return Status::OK();
  }

  // The records of a prepared transaction that did not commit, written again in a transaction
  // of one of this subtask's ids, committed with the original's marker.
  Status Rewrite(const Prepared& p) {
    KafkaHandle rk;
    const std::string id = Id(subtask_, next_slot_);
    next_slot_ = (next_slot_ + 1) % kSlots;
    CAIRN_RETURN_IF_ERROR(TransactionalProducer(id, &rk));
    CAIRN_RETURN_IF_ERROR(Check(rd_kafka_begin_transaction(rk.get()), "begin_transaction", id));
    Decoder d(p.records);
    for (uint64_t i = 0; i < p.count; ++i) {
      uint8_t has_key;
      std::string key, value;
      if (!d.GetByte(&has_key) || !d.GetLengthPrefixed(&key) || !d.GetLengthPrefixed(&value))
        return Status::Corruption(what_ + ": damaged records of transaction " + p.id + " in the checkpoint");
      CAIRN_RETURN_IF_ERROR(Produce(rk.get(), has_key != 0, key, value));
    }
    CAIRN_RETURN_IF_ERROR(FlushAll(rk.get()));
    CAIRN_RETURN_IF_ERROR(Commit(rk.get(), p.id, p.checkpoint));
    Trace(subtask_, "recommit", p.id, p.checkpoint);
    return Status::OK();
  }

  // Row `row` of the key column (not null) as text: strings as they are, numbers in decimal
  // (timestamps as ms since the epoch), booleans as true/false.
  void KeyText(size_t row, std::string* out) const {
    const ExprColumn& k = key_->result(0);
    switch (key_type_) {
      case FieldType::kString:
      case FieldType::kBytes:
        out->assign(k.s[row]);
        break;
      case FieldType::kInt64:
      case FieldType::kTimestamp:
        *out = std::to_string(k.i[row]);
        break;
      case FieldType::kBool:
        *out = k.i[row] ? "true" : "false";
        break;
      case FieldType::kDouble: {
        char buf[32];
        snprintf(buf, sizeof buf, "%.17g", k.d[row]);
        *out = buf;
        break;
      }
    }
  }

  void DropProducers() {
    for (auto& [group, c] : markers_) (void)rd_kafka_consumer_close(c.get());
    markers_.clear();
    current_.reset();
    pending_.clear();
    if (producer_ != nullptr) {
      (void)rd_kafka_flush(producer_.get(), 0);
      producer_.reset();
    }
  }

  const OperatorConfig config_;
  const std::string topic_;
  const Delivery delivery_;
  std::string prefix_;
  RecordWriterOptions writer_;

  std::string what_;
  uint32_t subtask_ = 0;
  int64_t parallelism_ = 1;
  int64_t known_parallelism_ = 1;
  std::unique_ptr<ExprProgram> key_;  // `key`, when given
  FieldType key_type_ = FieldType::kString;
  std::string key_text_, value_, scratch_;
  KafkaHandle producer_;                             // none, at_least_once
  std::unique_ptr<Transaction> current_;             // exactly_once: the open transaction
  std::vector<std::unique_ptr<Transaction>> pending_;  // prepared, by checkpoint
  int next_slot_ = 0;
  std::map<std::string, KafkaHandle> markers_;       // group -> consumer that commits its marker
  OperatorListState<std::string>* prepared_state_ = nullptr;
  OperatorListState<int64_t>* parallelism_state_ = nullptr;
  Status error_;  // the first failed delivery (set by OnDelivery, on the task thread)
};

// Load time (exit 2): format, delivery and key.
Status KafkaSinkSchema(const OperatorConfig& c, const std::vector<SchemaRef>& inputs, SchemaRef* out) {
  *out = nullptr;
  const std::string what = "operator '" + c.id + "' (type kafka_sink)";
  TextFormat format;
  CAIRN_RETURN_IF_ERROR(CheckTextFormatParams(c, what, &format));
  const std::string& d = c.GetString("delivery");
  if (d != "exactly_once" && d != "at_least_once" && d != "none")
    return Status::InvalidArgument(c.Where("delivery") + ": " + what +
                                   ": delivery must be one of exactly_once, at_least_once, none, got '" + d + "'");
  if (c.GetString("brokers").empty())
    return Status::InvalidArgument(c.Where("brokers") + ": " + what + ": brokers is empty");
  if (c.GetString("topic").empty()) return Status::InvalidArgument(c.Where("topic") + ": " + what + ": topic is empty");
  if (!c.GetString("key").empty())
    for (const SchemaRef& in : inputs) {
      std::unique_ptr<ExprProgram> key;
      if (in != nullptr) CAIRN_RETURN_IF_ERROR(CompileKey(c, in, &key));
    }
  return Status::OK();
}

}  // namespace

CAIRN_REGISTER_OPERATOR({
    .name = "kafka_sink",
    .role = OperatorRole::kSink,
    .output_schema = KafkaSinkSchema,
    .params = {
        {.name = "brokers", .type = ParamType::kString, .required = true,
         .doc = "bootstrap servers, host:port[,host:port...]"},
        {.name = "topic", .type = ParamType::kString, .required = true, .doc = "the topic to write"},
        {.name = "format", .type = ParamType::kString, .default_value = "lines",
         .doc = "a record's value: `lines` (fields as text joined by TAB), `csv` or `jsonl`, without the line end"},
        {.name = "delimiter", .type = ParamType::kString, .default_value = ",",
         .doc = "csv: the field delimiter, one character"},
        {.name = "key", .type = ParamType::kString, .default_value = "",
         .doc = "an expression over the input (a field name is one, e.g. `word`, or `user || '-' || CAST(id AS string)`) whose value, "
                "as text, is each record's Kafka key (NULL: no key); empty: records have no key"},
        {.name = "delivery", .type = ParamType::kString, .default_value = "exactly_once",
         .doc = "`exactly_once` (a transaction per subtask per checkpoint, committed when the checkpoint completes), "
                "`at_least_once` (every snapshot waits for all acknowledgements) or `none`"},
        {.name = "transactional_id_prefix", .type = ParamType::kString, .default_value = "",
         .doc = "exactly_once: the transactional.id prefix, unique per sink among all jobs writing to the cluster; "
                "empty: cairn-JOB-OPERATOR"},
        {.name = "properties", .type = ParamType::kMap,
         .doc = "librdkafka producer properties, passed as is (they override the sink's own settings)"},
    },
    .doc = "Writes records to a Kafka topic (docs/kafka.md) as lines, csv or jsonl values, exactly once (Kafka "
           "transactions committed on checkpoint completion), at least once or with no guarantee.",
    .create = MakeOperator<KafkaSink>,
});

}  // namespace cairn
