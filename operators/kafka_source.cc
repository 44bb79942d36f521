// kafka_source: reads a Kafka topic's records (their values as `lines`, `csv` or `jsonl`,
// engine/format) and emits them with the metadata fields _partition, _offset, _timestamp and
// _key appended (docs/kafka.md).
//
// Assignment: on a fresh start partition q goes to subtask q mod p. Each subtask reads its
// partitions with a consumer of its own through rd_kafka_assign (no group rebalancing), from
// concrete offsets resolved at the first start (`start`), and its operator state is one split
// list item per partition (partition, next offset, end offset), so a restore resumes exactly
// after the last record a checkpoint covered, and a restore at another parallelism deals the
// partitions round-robin over the new subtasks (state/operator_list_state.h). A union list item
// holds the partition count the job knew; partitions added to the topic since (numbers at or
// past it) go, on restore, to subtask q mod p' and are read from their beginning (unbounded
// source only: a bounded source reads the partitions that existed when it first started).
//
// stop_at: latest stores, per partition, the end offset (high watermark) seen at the first
// start; a partition is done once its next offset reaches it (a transaction marker at the end is
// skipped with the end-of-partition event), and the subtask ends when all its partitions are.
//
// Event time (`watermark:`) is tracked per partition (SplitSource): the subtask's watermark is
// the minimum over its partitions that are not idle, so a partition read behind the others
// holds it back instead of having its records come late.
//
// `group` (optional): after each completed checkpoint the offsets it stored are committed to the
// group, for monitoring only (as Flink does); the job never reads them back but with
// `start: committed` on a fresh start.
#include <algorithm>
#include <cstdio>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <thread>
#include <vector>

#include "engine/dataflow/operator_capabilities.h"
#include "engine/format/record_parser.h"
#include "jobs/registry.h"
#include "operators/kafka_client.h"
#include "operators/rate_limiter.h"
#include "operators/text_params.h"
#include "state/operator_list_state.h"

namespace cairn {
namespace {

constexpr int kMetadataTimeoutMs = 10000;
// An empty poll parks the task this long before asking librdkafka again (the task's parker
// wakes earlier for a checkpoint or a cancel; librdkafka fetches in its own threads meanwhile).
constexpr auto kEmptyPollPark = std::chrono::milliseconds(5);

// One partition's read position: the split list item.
struct PartitionPosition {
  int64_t partition = 0;
  int64_t next = 0;  // offset of the next record to emit
  int64_t end = -1;  // stop_at: latest: the end offset; -1: unbounded
};

// The item's text (readable in `cairn state dump`): "topic=T partition=P next=N end=E".
std::string EncodePosition(const std::string& topic, const PartitionPosition& p) {
  return "topic=" + topic + " partition=" + std::to_string(p.partition) + " next=" + std::to_string(p.next) +
         " end=" + std::to_string(p.end);
}

bool DecodePosition(const std::string& text, std::string* topic, PartitionPosition* p) {
  long long a, b, c;
  int used = 0;
  size_t sp = text.find(' ');
  if (text.rfind("topic=", 0) != 0 || sp == std::string::npos) return false;
  *topic = text.substr(6, sp - 6);
  if (sscanf(text.c_str() + sp, " partition=%lld next=%lld end=%lld%n", &a, &b, &c, &used) != 3 ||
      sp + static_cast<size_t>(used) != text.size())
    return false;
  *p = PartitionPosition{a, b, c};
  return p->partition >= 0 && p->next >= 0 && p->end >= -1;
}

// The metadata fields, appended after the format's fields.
const std::vector<Field>& MetadataFields() {
  static const std::vector<Field> f = {{"_partition", FieldType::kInt64},
                                       {"_offset", FieldType::kInt64},
                                       {"_timestamp", FieldType::kTimestamp},
                                       {"_key", FieldType::kString}};
  return f;
}

class KafkaSource final : public SourceOperator, public SkippedRecords, public SplitSource {
 public:
  explicit KafkaSource(const OperatorConfig& c)
      : config_(c),
        topic_(c.GetString("topic")),
        start_(c.GetString("start")),
        group_(c.GetString("group")),
        bounded_(c.GetString("stop_at") == "latest"),
        skip_errors_(c.GetString("on_error") == "skip"),
        limiter_(c.GetInt("rate")) {
    (void)ParseTextFormat(c.GetString("format"), &format_);
    delimiter_ = c.GetString("delimiter").empty() ? ',' : c.GetString("delimiter")[0];
  }

  ~KafkaSource() override { CloseConsumer(); }

  Status Open(OperatorContext& ctx) override {
    what_ = "operator " + ctx.operator_id + " (kafka_source, subtask " + std::to_string(ctx.subtask) + ")";
    schema_ = ctx.output_schema;
    value_fields_ = schema_->size() - MetadataFields().size();
    if (format_ != TextFormat::kLines) {
      std::vector<Field> fields;
      for (size_t f = 0; f < value_fields_; ++f) fields.push_back(schema_->field(f));
      value_schema_ = MakeSchema(fields);
      parser_ = NewRecordParser(format_, value_schema_, delimiter_);
      scratch_.Reset(value_schema_);
    }
    CAIRN_RETURN_IF_ERROR(ctx.operator_state->GetListState("partitions", &positions_state_));
    CAIRN_RETURN_IF_ERROR(ctx.operator_state->GetUnionListState("known_partitions", &known_state_));
    CAIRN_RETURN_IF_ERROR(ctx.operator_state->GetListState("skipped", &skipped_state_));
    for (int64_t s : skipped_state_->items()) skipped_ += static_cast<uint64_t>(s);

    rd_kafka_conf_t* conf = nullptr;
    const std::string group = group_.empty() ? "cairn-" + ctx.job_name + "-" + ctx.operator_id : group_;
    CAIRN_RETURN_IF_ERROR(MakeKafkaConf(config_, "operator '" + ctx.operator_id + "' (type kafka_source)",
                                        {{"group.id", group},
                                         {"enable.auto.commit", "false"},
                                         {"enable.auto.offset.store", "false"},
                                         {"enable.partition.eof", "true"},
                                         // An offset gone (retention) fails the job instead of
                                         // skipping records silently.
                                         {"auto.offset.reset", "error"},
                                         {"log_level", "4"}},
                                        &conf));
    char err[512];
    rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof(err));
    if (rk == nullptr) {
      rd_kafka_conf_destroy(conf);
      return Status::InvalidArgument(what_ + ": cannot create a Kafka consumer: " + err);
    }
    consumer_.reset(rk);
    rd_kafka_poll_set_consumer(rk);

    int64_t count = 0;
    CAIRN_RETURN_IF_ERROR(PartitionCount(&count));
    const bool restored = !known_state_->items().empty() || !positions_state_->items().empty();
    int64_t known = 0;
    for (int64_t k : known_state_->items()) known = std::max(known, k);
    if (restored) {
      for (const std::string& item : positions_state_->items()) {
        PartitionPosition p;
        std::string topic;
        if (!DecodePosition(item, &topic, &p))
          return Status::Corruption(what_ + ": damaged partition position in the checkpoint: '" + item + "'");
        if (topic != topic_)
          return Status::InvalidArgument(what_ + ": the checkpoint holds offsets of topic '" + topic +
                                         "', not of '" + topic_ + "'; start without --restore to read another topic");
        if (p.partition >= count)
          return Status::InvalidArgument(what_ + ": the checkpoint holds partition " + std::to_string(p.partition) +
                                         " of topic '" + topic_ + "', which now has " + std::to_string(count) +
                                         " partitions");
        owned_.push_back(p);
      }
      // Partitions added since the checkpoint: dealt as on a fresh start, read from the beginning.
      if (!bounded_)
        for (int64_t q = known; q < count; ++q)
          if (q % ctx.parallelism == ctx.subtask) {
            PartitionPosition p{q, 0, -1};
            CAIRN_RETURN_IF_ERROR(ResolveStart(&p, "earliest"));
            owned_.push_back(p);
          }
      known_ = std::max(known, count);
    } else {
      for (int64_t q = ctx.subtask; q < count; q += ctx.parallelism) {
        PartitionPosition p{q, 0, -1};
        CAIRN_RETURN_IF_ERROR(ResolveStart(&p, start_));
        owned_.push_back(p);
      }
      known_ = count;
    }
    std::sort(owned_.begin(), owned_.end(),
              [](const PartitionPosition& a, const PartitionPosition& b) { return a.partition < b.partition; });
    for (size_t i = 0; i < owned_.size(); ++i) index_[static_cast<int32_t>(owned_[i].partition)] = i;
    return Assign();
  }

  PollResult Poll(RecordBatch* out, size_t max_records, Clock::time_point* resume_at) override {
    if (failed_) return PollResult::kFailed;
    if (AllDone()) return PollResult::kExhausted;
    size_t allowed = limiter_.Allowed(max_records, resume_at);
    if (allowed == 0) return PollResult::kWait;
    size_t n = 0;
    while (n < allowed) {
      rd_kafka_message_t* m = rd_kafka_consumer_poll(consumer_.get(), 0);
      if (m == nullptr) break;
      const bool ok = Take(m, out, &n);
      rd_kafka_message_destroy(m);
      if (!ok) {
        failed_ = true;
        limiter_.Consumed(n);
        return PollResult::kFailed;
      }
    }
    limiter_.Consumed(n);
    if (n > 0) return PollResult::kMore;
    if (AllDone()) return PollResult::kExhausted;
    *resume_at = Clock::now() + kEmptyPollPark;
    return PollResult::kWait;
  }

  Status SnapshotState(CheckpointId id, OperatorSnapshot*) override {
    if (failed_) return status_;
    std::vector<std::string> items;
    for (const PartitionPosition& p : owned_) items.push_back(EncodePosition(topic_, p));
    positions_state_->Update(std::move(items));
    known_state_->Update({known_});
    skipped_state_->Update(skip_errors_ ? std::vector<int64_t>{static_cast<int64_t>(skipped_)} : std::vector<int64_t>{});
    if (!group_.empty()) {
      pending_commits_[id] = owned_;
      while (pending_commits_.size() > 16) pending_commits_.erase(pending_commits_.begin());
    }
    return Status::OK();
  }

  // For monitoring only: the group's offsets follow the completed checkpoints (asynchronously;
  // a failed commit is not an error of the job, as in Flink).
  Status NotifyCheckpointComplete(CheckpointId id) override {
    auto it = pending_commits_.find(id);
    if (it == pending_commits_.end() || consumer_ == nullptr) return Status::OK();
    KafkaPartitionList list(rd_kafka_topic_partition_list_new(static_cast<int>(it->second.size())));
    for (const PartitionPosition& p : it->second)
      rd_kafka_topic_partition_list_add(list.get(), topic_.c_str(), static_cast<int32_t>(p.partition))->offset = p.next;
    if (list->cnt > 0) (void)rd_kafka_commit(consumer_.get(), list.get(), 1);
    last_notified_ = it->second;
    pending_commits_.erase(pending_commits_.begin(), std::next(it));
    return Status::OK();
  }

  Status Close() override {
    // The last completed checkpoint's offsets once more, synchronously: the asynchronous commit
    // of a bounded job's final checkpoint may not have been sent yet.
    if (!group_.empty() && !failed_ && consumer_ != nullptr && !last_notified_.empty()) {
      KafkaPartitionList list(rd_kafka_topic_partition_list_new(static_cast<int>(last_notified_.size())));
      for (const PartitionPosition& p : last_notified_)
        rd_kafka_topic_partition_list_add(list.get(), topic_.c_str(), static_cast<int32_t>(p.partition))->offset = p.next;
      (void)rd_kafka_commit(consumer_.get(), list.get(), 0);
    }
    CloseConsumer();
    return failed_ ? status_ : Status::OK();
  }

  bool counts_skipped() const override { return skip_errors_; }
  uint64_t records_skipped() const override { return skipped_; }

  // Per-partition watermarks: each partition read and not at its end (stop_at: latest).
  int split_field() const override { return static_cast<int>(value_fields_); }  // _partition
  void ActiveSplits(std::vector<int64_t>* out) const override {
    out->clear();
    for (const PartitionPosition& p : owned_)
      if (!Done(p)) out->push_back(p.partition);
  }

 private:
  Status PartitionCount(int64_t* count) {
    rd_kafka_topic_t* t = rd_kafka_topic_new(consumer_.get(), topic_.c_str(), nullptr);
    const rd_kafka_metadata_t* md = nullptr;
    rd_kafka_resp_err_t e = rd_kafka_metadata(consumer_.get(), 0, t, &md, kMetadataTimeoutMs);
    rd_kafka_topic_destroy(t);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
      return Status::IOError(what_ + ": cannot read the metadata of topic '" + topic_ + "' from " +
                             config_.GetString("brokers") + ": " + rd_kafka_err2str(e));
    Status s;
    if (md->topic_cnt != 1 || md->topics[0].err != RD_KAFKA_RESP_ERR_NO_ERROR || md->topics[0].partition_cnt == 0)
      s = Status::InvalidArgument(what_ + ": topic '" + topic_ + "' does not exist at " + config_.GetString("brokers") +
                                  (md->topic_cnt == 1 ? std::string(" (") + rd_kafka_err2str(md->topics[0].err) + ")"
                                                      : std::string()));
    else
      *count = md->topics[0].partition_cnt;
    rd_kafka_metadata_destroy(md);
    return s;
  }

  // The concrete first offset of a fresh partition, and its end offset when bounded.
  Status ResolveStart(PartitionPosition* p, const std::string& start) {
    int64_t lo = 0, hi = 0;
    rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR_NO_ERROR;
    // A leader change or a lost connection is retried (librdkafka refreshes the metadata
    // meanwhile) until the metadata timeout has passed.
    const auto deadline = Clock::now() + std::chrono::milliseconds(kMetadataTimeoutMs);
    for (;;) {
      e = rd_kafka_query_watermark_offsets(consumer_.get(), topic_.c_str(), static_cast<int32_t>(p->partition), &lo,
                                           &hi, kMetadataTimeoutMs);
      if (e == RD_KAFKA_RESP_ERR_NO_ERROR || !Retriable(e) || Clock::now() > deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));  // a retry's backoff
    }
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
      return Status::IOError(what_ + ": cannot read the offsets of " + topic_ + "/" + std::to_string(p->partition) +
                             ": " + rd_kafka_err2str(e));
    p->next = start == "latest" ? hi : lo;
    if (start == "committed") {
      KafkaPartitionList list(rd_kafka_topic_partition_list_new(1));
      rd_kafka_topic_partition_list_add(list.get(), topic_.c_str(), static_cast<int32_t>(p->partition));
      for (int attempt = 0; attempt < 50; ++attempt) {
        e = rd_kafka_committed(consumer_.get(), list.get(), kMetadataTimeoutMs);
        if (e == RD_KAFKA_RESP_ERR_NO_ERROR || !Retriable(e) || Clock::now() > deadline) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));  // a retry's backoff
      }
      if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
        return Status::IOError(what_ + ": cannot read the committed offsets of group '" + group_ + "': " +
                               rd_kafka_err2str(e));
      if (list->elems[0].offset >= 0) p->next = std::clamp(list->elems[0].offset, lo, hi);
    }
    if (bounded_) p->end = hi;
    return Status::OK();
  }

  Status Assign() {
    KafkaPartitionList list(rd_kafka_topic_partition_list_new(static_cast<int>(owned_.size()) + 1));
    for (const PartitionPosition& p : owned_)
      if (!Done(p))
        rd_kafka_topic_partition_list_add(list.get(), topic_.c_str(), static_cast<int32_t>(p.partition))->offset = p.next;
    rd_kafka_resp_err_t e = rd_kafka_assign(consumer_.get(), list.get());
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
      return Status::IOError(what_ + ": cannot assign partitions of '" + topic_ + "': " + rd_kafka_err2str(e));
    return Status::OK();
  }

  static bool Retriable(rd_kafka_resp_err_t e) {
    switch (e) {
      case RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION:
      case RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE:
      case RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT:
      case RD_KAFKA_RESP_ERR_NOT_COORDINATOR:
      case RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE:
      case RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS:
      case RD_KAFKA_RESP_ERR_UNSTABLE_OFFSET_COMMIT:
      case RD_KAFKA_RESP_ERR__TRANSPORT:
      case RD_KAFKA_RESP_ERR__TIMED_OUT:
      case RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION:
        return true;
      default:
        return false;
    }
  }

  static bool Done(const PartitionPosition& p) { return p.end >= 0 && p.next >= p.end; }
  bool AllDone() const {
    if (!bounded_) return false;
    for (const PartitionPosition& p : owned_)
      if (!Done(p)) return false;
    return true;
  }

  // One message or event of the consumer; false when it fails the job (status_).
  bool Take(rd_kafka_message_t* m, RecordBatch* out, size_t* n) {
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
      // The end of what the partition holds now: past any transaction markers before it.
      auto it = index_.find(m->partition);
      if (it != index_.end() && m->offset > owned_[it->second].next) {
        PartitionPosition& p = owned_[it->second];
        p.next = p.end >= 0 ? std::min(m->offset, std::max(p.end, p.next)) : m->offset;
      }
      return true;
    }
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      // Broker and transport errors are retried by librdkafka; only a fatal one ends the job.
      char why[512];
      if (rd_kafka_fatal_error(consumer_.get(), why, sizeof(why)) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        status_ = Status::IOError(what_ + ": Kafka consumer failed: " + why);
        return false;
      }
      if (m->err == RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE || m->err == RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET) {
        status_ = Status::IOError(what_ + ": offset " + std::to_string(m->offset) + " of " + topic_ + "/" +
                                  std::to_string(m->partition) +
                                  " is out of range (deleted by retention since the checkpoint?)");
        return false;
      }
      return true;
    }
    auto it = index_.find(m->partition);
    if (it == index_.end()) return true;
    PartitionPosition& p = owned_[it->second];
    if (m->offset < p.next || (p.end >= 0 && m->offset >= p.end)) return true;  // before the position or past the end
    std::string_view value(static_cast<const char*>(m->payload), m->payload ? m->len : 0);
    size_t r;
    if (parser_ == nullptr) {
      r = out->AddRow();
      out->SetString(r, 0, value);
    } else {
      scratch_.clear();
      RecordError err;
      if (!parser_->Parse(value, &scratch_, &err)) {
        if (!skip_errors_) {
          status_ = Status::Aborted("malformed " + std::string(TextFormatName(format_)) + " record at " + topic_ + "/" +
                                    std::to_string(m->partition) + "@" + std::to_string(m->offset) + ": " +
                                    (err.field >= 0 ? "field '" + value_schema_->field(err.field).name + "': " : "") +
                                    err.why + " (on_error: skip counts such records instead)");
          return false;
        }
        ++skipped_;
        p.next = m->offset + 1;
        return true;
      }
      r = out->AddRow();
      for (size_t f = 0; f < value_fields_; ++f) out->CopyFieldFrom(scratch_, 0, f, r, f);
    }
    const size_t base = value_fields_;
    out->SetInt64(r, base, m->partition);
    out->SetInt64(r, base + 1, m->offset);
    rd_kafka_timestamp_type_t tt;
    int64_t ts = rd_kafka_message_timestamp(m, &tt);
    if (tt != RD_KAFKA_TIMESTAMP_NOT_AVAILABLE) out->SetInt64(r, base + 2, ts);
    else out->SetNull(r, base + 2);
    if (m->key != nullptr) out->SetString(r, base + 3, std::string_view(static_cast<const char*>(m->key), m->key_len));
    else out->SetNull(r, base + 3);
    p.next = m->offset + 1;
    ++*n;
    return true;
  }

  void CloseConsumer() {
    if (consumer_ == nullptr) return;
    (void)rd_kafka_consumer_close(consumer_.get());
    consumer_.reset();
  }

  const OperatorConfig config_;
  const std::string topic_;
  const std::string start_;
  const std::string group_;
  const bool bounded_;
  const bool skip_errors_;
  TextFormat format_ = TextFormat::kLines;
  char delimiter_ = ',';
  RateLimiter limiter_;

  std::string what_;
  SchemaRef schema_;
  SchemaRef value_schema_;  // csv and jsonl: the format's fields
  size_t value_fields_ = 1;
  std::unique_ptr<RecordParser> parser_;
  RecordBatch scratch_;
  KafkaHandle consumer_;
  std::vector<PartitionPosition> owned_;   // by partition
  std::map<int32_t, size_t> index_;        // partition -> owned_ index
  int64_t known_ = 0;                      // partitions the job knows of
  uint64_t skipped_ = 0;
  OperatorListState<std::string>* positions_state_ = nullptr;
  OperatorListState<int64_t>* known_state_ = nullptr;
  OperatorListState<int64_t>* skipped_state_ = nullptr;
  std::map<CheckpointId, std::vector<PartitionPosition>> pending_commits_;  // `group` only
  std::vector<PartitionPosition> last_notified_;                            // `group` only
  bool failed_ = false;
  Status status_;
};

// Load time (exit 2): the keys and the schema: the format's fields, then the metadata fields.
Status KafkaSourceSchema(const OperatorConfig& c, const std::vector<SchemaRef>&, SchemaRef* out) {
  const std::string what = "operator '" + c.id + "' (type kafka_source)";
  TextFormat format;
  CAIRN_RETURN_IF_ERROR(CheckTextFormatParams(c, what, &format));
  auto one_of = [&](const char* key, std::initializer_list<const char*> values) {
    const std::string& v = c.GetString(key);
    std::string list;
    for (const char* x : values) {
      if (v == x) return Status::OK();
      list += std::string(list.empty() ? "" : ", ") + x;
    }
    return Status::InvalidArgument(c.Where(key) + ": " + what + ": " + key + " must be one of " + list + ", got '" + v +
                                   "'");
  };
  CAIRN_RETURN_IF_ERROR(one_of("start", {"earliest", "latest", "committed"}));
  CAIRN_RETURN_IF_ERROR(one_of("stop_at", {"none", "latest"}));
  CAIRN_RETURN_IF_ERROR(one_of("on_error", {"fail", "skip"}));
  if (c.GetString("start") == "committed" && c.GetString("group").empty())
    return Status::InvalidArgument(c.Where("start") + ": " + what + ": start: committed needs a group");
  if (c.GetString("brokers").empty())
    return Status::InvalidArgument(c.Where("brokers") + ": " + what + ": brokers is empty");
  if (c.GetString("topic").empty()) return Status::InvalidArgument(c.Where("topic") + ": " + what + ": topic is empty");
  std::vector<Field> fields;
  if (format == TextFormat::kLines) {
    if (c.places.count("schema"))
      return Status::InvalidArgument(c.Where("schema") + ": " + what +
                                     ": schema is for formats csv and jsonl; format lines emits (line string)");
    fields.push_back({"line", FieldType::kString});
  } else {
    const std::vector<ParamEntry>& entries = c.GetEntries("schema");
    if (entries.empty())
      return Status::InvalidArgument(c.Where(c.places.count("schema") ? "schema" : "format") + ": " + what +
                                     ": format " + TextFormatName(format) +
                                     " needs a schema: a map of field name to type (" + FieldTypeNames() + ")");
    for (const ParamEntry& e : entries) {
      FieldType t;
      if (!ParseFieldType(e.value, &t))
        return Status::InvalidArgument(e.location + ": " + what + ": field '" + e.key + "' has unknown type '" +
                                       e.value + "'; types are " + FieldTypeNames());
      if (!e.key.empty() && e.key[0] == '_')
        return Status::InvalidArgument(e.location + ": " + what + ": field '" + e.key +
                                       "': names starting with '_' are the metadata fields'");
      fields.push_back({e.key, t});
    }
  }
  for (const Field& f : MetadataFields()) fields.push_back(f);
  Status s = Schema::Make(std::move(fields), out);
  if (!s.ok()) return Status::InvalidArgument(c.Where("schema") + ": " + what + ": schema: " + s.message());
  return Status::OK();
}

}  // namespace

CAIRN_REGISTER_OPERATOR({
    .name = "kafka_source",
    .role = OperatorRole::kSource,
    .output_schema = KafkaSourceSchema,
    .params = {
        {.name = "brokers", .type = ParamType::kString, .required = true,
         .doc = "bootstrap servers, host:port[,host:port...] (librdkafka's bootstrap.servers)"},
        {.name = "topic", .type = ParamType::kString, .required = true, .doc = "the topic to read"},
        {.name = "format", .type = ParamType::kString, .default_value = "lines",
         .doc = "how a record's value reads: `lines` (the value is the `line` string field), `csv` or `jsonl` (one "
                "record per Kafka record, fields of `schema`)"},
        {.name = "schema", .type = ParamType::kMap,
         .doc = "csv and jsonl (required there, rejected with lines): the fields, a map of name to type"},
        {.name = "delimiter", .type = ParamType::kString, .default_value = ",",
         .doc = "csv: the field delimiter, one character"},
        {.name = "on_error", .type = ParamType::kString, .default_value = "fail",
         .doc = "csv and jsonl: a malformed record fails the job (`fail`, exit 1 naming topic, partition and offset) or "
                "is counted and dropped (`skip`)"},
        {.name = "start", .type = ParamType::kString, .default_value = "earliest",
         .doc = "where a fresh start reads each partition from: `earliest`, `latest`, or `committed` (the offsets "
                "committed to `group`, earliest where it has none); a restore always resumes from the checkpoint"},
        {.name = "group", .type = ParamType::kString, .default_value = "",
         .doc = "consumer group to which the offsets of each completed checkpoint are committed, for monitoring only; "
                "empty: none (the consumer's group.id is then cairn-JOB-OPERATOR, never committed to)"},
        {.name = "stop_at", .type = ParamType::kString, .default_value = "none",
         .doc = "`none` (unbounded) or `latest`: bounded at the end offsets seen when the job first started (kept in "
                "its state, so a restore ends at the same place); the job then finishes with its final checkpoint"},
        {.name = "rate", .type = ParamType::kInt, .default_value = "0",
         .doc = "records per second per subtask; 0 = unlimited"},
        {.name = "properties", .type = ParamType::kMap,
         .doc = "librdkafka consumer properties, passed as is (they override the source's own settings)"},
    },
    .doc = "Reads a Kafka topic (docs/kafka.md): partition q to subtask q mod p, each partition's next offset in the "
           "checkpoint (split list state, so a rescale redistributes partitions). Emits the value's fields (format "
           "lines, csv or jsonl) then _partition (int64), _offset (int64), _timestamp (timestamp; null when the "
           "record has none) and _key (string; null when the record has none).",
    .create = MakeOperator<KafkaSource>,
});

}  // namespace cairn
