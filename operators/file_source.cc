// file_source: reads a text file line by line (format `lines`), or as csv or jsonl records of
// the schema its `schema` parameter gives (engine/format/record_parser.h). With parallelism p,
// subtask i owns the records whose first byte lies in the i-th of p equal byte ranges of the
// file. Its operator state is the offset of the next unread record (and the file size, to
// detect a changed input on restore) and, for csv and jsonl, the number of malformed records
// skipped so far (on_error: skip), so that the count survives a restore.
//
// Record starts: in lines and jsonl every line is a record, so a range starts just past the
// first '\n' at or after its first byte. A csv record may hold '\n' inside quotes, so a csv
// range starts past the first '\n' preceded by an even number of '"' since the file start
// (engine/format/csv.h): finding it reads the file from its start up to there, once per subtask
// and range. A line number (for the message about a malformed record) is counted from the file
// start too, only when one is needed.
//
// Rescaling (split list state, docs/state.md): the items of a subtask's state are the byte
// ranges it has still to read, "lines starting in [from, to)" with `from` a line start. A
// subtask restored from a rescaled checkpoint reads its ranges one after another, and its
// state is then the list of what is left of them (the "range list" format below).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <deque>
#include <memory>
#include <vector>

#include "engine/base/coding.h"
#include "engine/dataflow/operator_capabilities.h"
#include "engine/format/csv.h"
#include "engine/format/record_parser.h"
#include "jobs/registry.h"
#include "operators/text_params.h"
#include "operators/rate_limiter.h"

namespace cairn {
namespace {

// The range-list state: magic, count, then per range (file size, from, to), then (csv and
// jsonl only) the skipped count.
constexpr uint64_t kRangeListMagic = 0x31474e5243727363ull;  // "csrcRNG1"
// A redistribution item that carries an old subtask's skipped count: magic, count.
constexpr uint64_t kSkippedMagic = 0x31504b5343727363ull;  // "csrcSKP1"

// Lines starting in [from, to) of a file of `size` bytes. `aligned`: `from` is a line start
// (else the range starts at the first line start at or after `from`).
struct ReadRange {
  uint64_t size, from, to, aligned;
};

void PutRange(std::string* s, const ReadRange& r) {
  PutFixed64(s, r.size);
  PutFixed64(s, r.from);
  PutFixed64(s, r.to);
  PutFixed64(s, r.aligned);
}

bool GetRange(Decoder* d, ReadRange* r) {
  return d->GetFixed64(&r->size) && d->GetFixed64(&r->from) && d->GetFixed64(&r->to) && d->GetFixed64(&r->aligned) &&
         r->aligned <= 1;
}

std::string EncodeRange(const ReadRange& r) {
  std::string s;
  PutRange(&s, r);
  return s;
}

bool DecodeRange(std::string_view bytes, ReadRange* r) {
  Decoder d(bytes);
  return GetRange(&d, r) && d.done();
}

bool IsRangeList(std::string_view bytes) {
  uint64_t magic = 0;
  return Decoder(bytes).GetFixed64(&magic) && magic == kRangeListMagic;
}

bool DecodeRangeList(std::string_view bytes, std::vector<ReadRange>* out, uint64_t* skipped = nullptr) {
  Decoder d(bytes);
  uint64_t magic, n;
  if (!d.GetFixed64(&magic) || magic != kRangeListMagic || !d.GetFixed64(&n)) return false;
  for (uint64_t i = 0; i < n; ++i) {
    ReadRange r;
    if (!GetRange(&d, &r)) return false;
    out->push_back(r);
  }
  uint64_t count = 0;
  if (!d.done() && !d.GetFixed64(&count)) return false;
  if (skipped != nullptr) *skipped = count;
  return d.done();
}

// `skipped` is written when `with_skipped` (csv and jsonl), so that the bytes of a lines
// source stay what they were before formats existed.
std::string EncodeRangeList(const std::vector<ReadRange>& ranges, bool with_skipped = false, uint64_t skipped = 0) {
  std::string s;
  PutFixed64(&s, kRangeListMagic);
  PutFixed64(&s, ranges.size());
  for (const ReadRange& r : ranges) PutRange(&s, r);
  if (with_skipped) PutFixed64(&s, skipped);
  return s;
}

// The plain state: next record, file size, then (csv and jsonl only) the skipped count.
bool DecodePosition(std::string_view bytes, uint64_t* pos, uint64_t* size, uint64_t* skipped) {
  Decoder d(bytes);
  *skipped = 0;
  if (!d.GetFixed64(pos) || !d.GetFixed64(size)) return false;
  if (!d.done() && !d.GetFixed64(skipped)) return false;
  return d.done();
}

// `cairn state dump`: "position=P size=S [skipped=K]" (the next byte to read of a file of S
// bytes), or, restored from a rescaled checkpoint, "ranges=FROM-TO/SIZE,... [skipped=K]".
bool DescribeFileSourceState(std::string_view bytes, std::string* text) {
  uint64_t skipped = 0;
  if (IsRangeList(bytes)) {
    std::vector<ReadRange> ranges;
    if (!DecodeRangeList(bytes, &ranges, &skipped)) return false;
    *text = "ranges=";
    for (size_t i = 0; i < ranges.size(); ++i)
      *text += (i ? "," : "") + std::to_string(ranges[i].from) + "-" + std::to_string(ranges[i].to) + "/" +
               std::to_string(ranges[i].size);
    if (ranges.empty()) *text += "none";
  } else {
    uint64_t pos, size;
    if (!DecodePosition(bytes, &pos, &size, &skipped)) return false;
    *text = "position=" + std::to_string(pos) + " size=" + std::to_string(size);
  }
  if (skipped > 0) *text += " skipped=" + std::to_string(skipped);
  return true;
}

struct SourceFormat {
  TextFormat format = TextFormat::kLines;
  bool header = false;
  char delimiter = ',';
  bool skip_errors = false;
};

SourceFormat FormatOf(const OperatorConfig& c) {
  SourceFormat f;
  (void)ParseTextFormat(c.GetString("format"), &f.format);
  f.header = c.GetBool("header");
  f.delimiter = c.GetString("delimiter").empty() ? ',' : c.GetString("delimiter")[0];
  f.skip_errors = c.GetString("on_error") == "skip";
  return f;
}

class FileSource final : public SourceOperator, public SkippedRecords {
 public:
  explicit FileSource(const OperatorConfig& c)
      : path_(c.GetString("path")), limiter_(c.GetInt("rate")), fmt_(FormatOf(c)) {}
  ~FileSource() override {
    if (fd_ >= 0) close(fd_);
  }

  Status Open(OperatorContext& ctx) override {
    id_ = ctx.operator_id;
    schema_ = ctx.output_schema;
    if (fmt_.format != TextFormat::kLines) parser_ = NewRecordParser(fmt_.format, schema_, fmt_.delimiter);
    fd_ = open(path_.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) {
      // A missing or unreadable input is bad input (exit 2), found before the job changes anything.
      Status s = Status::FromErrno("operator " + id_ + ": cannot open input", path_, errno);
      return s.IsNotFound() ? s : Status::InvalidArgument(s.message());
    }
    struct stat st;
    if (fstat(fd_, &st) != 0) return Status::FromErrno("operator " + id_ + ": cannot stat input", path_, errno);
    if (!S_ISREG(st.st_mode))
      return Status::InvalidArgument("operator " + id_ + ": input " + path_ + " is not a regular file");
    size_ = static_cast<uint64_t>(st.st_size);
    uint64_t begin = size_ * ctx.subtask / ctx.parallelism;
    end_ = size_ * (ctx.subtask + 1) / ctx.parallelism;
    if (ctx.restored_operator_state && IsRangeList(*ctx.restored_operator_state)) {
      std::vector<ReadRange> ranges;
      if (!DecodeRangeList(*ctx.restored_operator_state, &ranges, &skipped_))
        return Status::Corruption("operator " + id_ + ": damaged source ranges in the checkpoint");
      for (const ReadRange& r : ranges)
        if (r.size != size_)
          return Status::InvalidArgument("operator " + id_ + ": input " + path_ + " has " + std::to_string(size_) +
                                         " bytes but had " + std::to_string(r.size) +
                                         " when the checkpoint was taken; restore needs the same input");
      range_list_ = true;
      pending_.assign(ranges.begin(), ranges.end());
      pos_ = end_ = 0;
      if (!NextRange() && failed_) return read_status_;
    } else if (ctx.restored_operator_state) {
      uint64_t pos, size;
      if (!DecodePosition(*ctx.restored_operator_state, &pos, &size, &skipped_))
        return Status::Corruption("operator " + id_ + ": damaged source position in the checkpoint");
      if (size != size_)
        return Status::InvalidArgument("operator " + id_ + ": input " + path_ + " has " + std::to_string(size_) +
                                       " bytes but had " + std::to_string(size) +
                                       " when the checkpoint was taken; restore needs the same input");
      pos_ = pos;
    } else if (begin == 0) {
      pos_ = 0;
    } else if (!SeekRecordStart(begin)) {
      return read_status_;
    }
    buf_.clear();
    buf_off_ = pos_;
    eof_ = false;
    return Status::OK();
  }

  PollResult Poll(RecordBatch* out, size_t max_records, Clock::time_point* resume_at) override {
    size_t allowed = limiter_.Allowed(max_records, resume_at);
    if (allowed == 0) return PollResult::kWait;
    size_t n = 0;
    size_t examined = 0;  // records emitted or dropped (header, blank, skipped): bounds one Poll
    while (examined < allowed && (pos_ < end_ || NextRange())) {
      size_t rel = pos_ - buf_off_;
      size_t nl = fmt_.format == TextFormat::kCsv ? CsvRecordEnd(buf_, rel) : buf_.find('\n', rel);
      if (nl == std::string::npos) {
        if (!eof_) {
          if (!Fill()) {
            failed_ = true;
            return PollResult::kExhausted;
          }
          continue;
        }
        if (rel >= buf_.size()) {
          pos_ = size_;
          break;
        }
        nl = buf_.size();  // last line without a newline
      }
      const std::string_view text(buf_.data() + rel, nl - rel);
      const uint64_t at = pos_;
      pos_ = buf_off_ + std::min(nl + 1, buf_.size());
      ++examined;
      if (parser_ == nullptr) {
        out->AppendRow().SetString(0, text);
        ++n;
        continue;
      }
      if ((at == 0 && fmt_.header) || IsBlank(text)) continue;  // the csv header; blank lines
      RecordError err;
      if (parser_->Parse(text, out, &err)) {
        ++n;
        continue;
      }
      if (fmt_.skip_errors) {
        ++skipped_;
        continue;
      }
      read_status_ = MalformedRecord(at, err);
      failed_ = true;
      pos_ = at;  // not past it: no checkpoint may cover a record that failed the job
      limiter_.Consumed(n);
      return PollResult::kFailed;
    }
    limiter_.Consumed(n);
    if ((pos_ >= end_ || pos_ >= size_) && pending_.empty()) return n > 0 ? PollResult::kMore : PollResult::kExhausted;
    return PollResult::kMore;
  }

  Status SnapshotState(CheckpointId, OperatorSnapshot* snap) override {
    if (failed_) return read_status_;
    if (range_list_) {
      std::vector<ReadRange> left;
      if (pos_ < end_ && pos_ < size_) left.push_back(ReadRange{size_, pos_, end_, 1});
      left.insert(left.end(), pending_.begin(), pending_.end());
      snap->operator_state = EncodeRangeList(left, parser_ != nullptr, skipped_);
      return Status::OK();
    }
    PutFixed64(&snap->operator_state, pos_);
    PutFixed64(&snap->operator_state, size_);
    if (parser_ != nullptr) PutFixed64(&snap->operator_state, skipped_);
    return Status::OK();
  }

  Status Close() override { return failed_ ? read_status_ : Status::OK(); }

  bool counts_skipped() const override { return fmt_.skip_errors; }
  uint64_t records_skipped() const override { return skipped_; }

 private:
  static bool IsBlank(std::string_view text) {
    for (char c : text)
      if (c != ' ' && c != '\t' && c != '\r') return false;
    return true;
  }

  // "path:line: field 'x': why" for the malformed record at byte `at` (its first line).
  Status MalformedRecord(uint64_t at, const RecordError& err) {
    uint64_t line = 1;
    std::string chunk;
    for (uint64_t off = 0; off < at;) {
      size_t want = static_cast<size_t>(std::min<uint64_t>(kReadSize, at - off));
      chunk.resize(want);
      ssize_t r = pread(fd_, chunk.data(), want, static_cast<off_t>(off));
      if (r <= 0) break;
      line += static_cast<uint64_t>(std::count(chunk.data(), chunk.data() + r, '\n'));
      off += static_cast<uint64_t>(r);
    }
    std::string msg = std::string("malformed ") + TextFormatName(fmt_.format) + " record at " + path_ + ":" +
                      std::to_string(line) + ": ";
    if (err.field >= 0) msg += "field '" + schema_->field(static_cast<size_t>(err.field)).name + "': ";
    return Status::Aborted(msg + err.why + " (on_error: skip counts such records instead)");
  }

  // Sets pos_ to the first record start at or after `at` (size_ when there is none). False on
  // a read error (read_status_).
  bool SeekRecordStart(uint64_t at) {
    return fmt_.format == TextFormat::kCsv ? SeekCsvRecordStart(at) : SeekLineStart(at);
  }

  // csv: the first '\n' at or after at-1 that has an even number of '"' before it in the file.
  bool SeekCsvRecordStart(uint64_t at) {
    buf_.clear();
    eof_ = false;
    pos_ = buf_off_ = 0;
    if (at == 0) return true;
    uint64_t quotes = 0;
    bool found = false;
    while (!found) {
      if (!Fill()) return false;
      // Everything in buf_ is from pos_ (== buf_off_) on.
      size_t from = 0;
      if (buf_off_ < at - 1) {
        size_t skip = static_cast<size_t>(std::min<uint64_t>(at - 1 - buf_off_, buf_.size()));
        quotes += CountQuotes(std::string_view(buf_.data(), skip));
        from = skip;
      }
      for (size_t i = from; i < buf_.size(); ++i) {
        if (buf_[i] == '"') {
          ++quotes;
        } else if (buf_[i] == '\n' && quotes % 2 == 0) {
          pos_ = buf_off_ + i + 1;
          found = true;
          break;
        }
      }
      if (found) break;
      if (eof_ || buf_.empty()) {
        pos_ = size_;
        break;
      }
      pos_ = buf_off_ + buf_.size();
    }
    buf_.clear();
    buf_off_ = pos_;
    eof_ = false;
    return true;
  }

  // Sets pos_ to the first line start at or after `at` (size_ when there is none): just past
  // the first '\n' at or after at-1. False on a read error (read_status_).
  bool SeekLineStart(uint64_t at) {
    buf_.clear();
    eof_ = false;
    if (at == 0) {
      pos_ = buf_off_ = 0;
      return true;
    }
    pos_ = at - 1;
    buf_off_ = pos_;
    for (;;) {
      if (!Fill()) return false;
      size_t nl = buf_.find('\n', pos_ - buf_off_);
      if (nl != std::string::npos) {
        pos_ = buf_off_ + nl + 1;
        break;
      }
      if (eof_) {
        pos_ = size_;
        break;
      }
      pos_ = buf_off_ + buf_.size();
    }
    buf_.clear();
    buf_off_ = pos_;
    eof_ = false;
    return true;
  }

  // Range list: makes the next non-empty pending range current. False when none is left (or
  // on a read error: failed_ set).
  bool NextRange() {
    while (!pending_.empty()) {
      ReadRange r = pending_.front();
      pending_.pop_front();
      if (r.from >= r.to || r.from >= size_) continue;
      end_ = r.to;
      if (r.aligned) {
        pos_ = r.from;
        buf_.clear();
        buf_off_ = pos_;
        eof_ = false;
      } else if (!SeekRecordStart(r.from)) {
        failed_ = true;
        pending_.clear();
        return false;
      }
      if (pos_ < end_ && pos_ < size_) return true;
    }
    return false;
  }

  // Drops consumed bytes before pos_ and reads more. False on a read error (read_status_).
  bool Fill() {
    size_t rel = pos_ - buf_off_;
    if (rel > 0) {
      buf_.erase(0, rel);
      buf_off_ = pos_;
    }
    size_t old = buf_.size();
    buf_.resize(old + kReadSize);
    ssize_t r = pread(fd_, buf_.data() + old, kReadSize, static_cast<off_t>(buf_off_ + old));
    if (r < 0) {
      buf_.resize(old);
      read_status_ = Status::FromErrno("operator " + id_ + ": cannot read input", path_, errno);
      return false;
    }
    buf_.resize(old + static_cast<size_t>(r));
    if (r == 0) eof_ = true;
    return true;
  }

  static constexpr size_t kReadSize = 1 << 20;
  const std::string path_;
  std::string id_;
  RateLimiter limiter_;
  const SourceFormat fmt_;
  std::unique_ptr<RecordParser> parser_;  // csv and jsonl
  SchemaRef schema_;
  uint64_t skipped_ = 0;                  // malformed records skipped (on_error: skip)
  int fd_ = -1;
  uint64_t size_ = 0;
  uint64_t end_ = 0;
  uint64_t pos_ = 0;      // offset of the next line to emit
  bool range_list_ = false;          // restored from a rescaled checkpoint: state is a range list
  std::deque<ReadRange> pending_;    // range list: the ranges after [pos_, end_)
  std::string buf_;       // file bytes from buf_off_
  uint64_t buf_off_ = 0;
  bool eof_ = false;
  bool failed_ = false;
  Status read_status_;
};

}  // namespace

static OperatorStateRule FileSourceStateRule() {
  OperatorStateRule r;
  r.mode = StateRedistribution::kSplit;
  // A csv or jsonl source's skipped count travels as an item of its own (kSkippedMagic), which
  // from_items adds up.
  auto skipped_item = [](uint64_t count) {
    std::string s;
    PutFixed64(&s, kSkippedMagic);
    PutFixed64(&s, count);
    return s;
  };
  r.to_items = [skipped_item](std::string_view bytes, uint32_t subtask, uint32_t parallelism,
                              std::vector<std::string>* items) {
    if (IsRangeList(bytes)) {
      std::vector<ReadRange> ranges;
      uint64_t skipped = 0;
      if (!DecodeRangeList(bytes, &ranges, &skipped)) return Status::Corruption("damaged source ranges");
      for (const ReadRange& rr : ranges)
        if (rr.from < rr.to && rr.from < rr.size) items->push_back(EncodeRange(rr));
      if (bytes.size() > 16 + 32 * ranges.size()) items->push_back(skipped_item(skipped));
      return Status::OK();
    }
    // (next record, file size[, skipped]): what is left of the subtask's own byte range.
    uint64_t pos, size, skipped;
    if (!DecodePosition(bytes, &pos, &size, &skipped)) return Status::Corruption("damaged source position");
    uint64_t end = size * (subtask + 1) / parallelism;
    if (pos < end && pos < size) items->push_back(EncodeRange(ReadRange{size, pos, end, 1}));
    if (bytes.size() > 16) items->push_back(skipped_item(skipped));
    return Status::OK();
  };
  // Scaling up: a range splits at its middle byte; the second half starts at the first line
  // start at or after it, exactly as the byte ranges of a fresh start do.
  r.halve = [](const std::string& item, std::string* first, std::string* second) {
    ReadRange rr{};
    if (!DecodeRange(item, &rr) || rr.to <= rr.from || rr.to - rr.from < 2) return false;
    uint64_t mid = rr.from + (rr.to - rr.from) / 2;
    *first = EncodeRange(ReadRange{rr.size, rr.from, mid, rr.aligned});
    *second = EncodeRange(ReadRange{rr.size, mid, rr.to, 0});
    return true;
  };
  r.from_items = [](const std::vector<std::string>& items) {
    std::vector<ReadRange> ranges;
    bool with_skipped = false;
    uint64_t skipped = 0;
    for (const std::string& it : items) {
      ReadRange rr{};
      Decoder d(it);
      uint64_t magic, count;
      if (DecodeRange(it, &rr)) {
        ranges.push_back(rr);
      } else if (d.GetFixed64(&magic) && magic == kSkippedMagic && d.GetFixed64(&count) && d.done()) {
        with_skipped = true;
        skipped += count;
      }
    }
    return EncodeRangeList(ranges, with_skipped, skipped);
  };
  return r;
}

// Load time (exit 2): the format and its parameters, and the schema, which is what it emits.
static Status FileSourceSchema(const OperatorConfig& c, const std::vector<SchemaRef>&, SchemaRef* out) {
  const std::string what = "operator '" + c.id + "' (type file_source)";
  TextFormat format;
  CAIRN_RETURN_IF_ERROR(CheckTextFormatParams(c, what, &format));
  const std::string& on_error = c.GetString("on_error");
  if (on_error != "fail" && on_error != "skip")
    return Status::InvalidArgument(c.Where("on_error") + ": " + what + ": on_error must be fail or skip, got '" +
                                   on_error + "'");
  const std::vector<ParamEntry>& entries = c.GetEntries("schema");
  if (format == TextFormat::kLines) {
    if (c.places.count("on_error"))
      return Status::InvalidArgument(c.Where("on_error") + ": " + what +
                                     ": on_error is for formats csv and jsonl; format lines reads every line");
    if (c.places.count("schema"))
      return Status::InvalidArgument(c.Where("schema") + ": " + what +
                                     ": schema is for formats csv and jsonl; format lines emits (line string)");
    *out = MakeSchema({{"line", FieldType::kString}});
    return Status::OK();
  }
  if (entries.empty())
    return Status::InvalidArgument(c.Where(c.places.count("schema") ? "schema" : "format") + ": " + what + ": format " +
                                   TextFormatName(format) +
                                   " needs a schema: a map of field name to type (string, bytes, int64, double, bool, "
                                   "timestamp)");
  std::vector<Field> fields;
  for (const ParamEntry& e : entries) {
    FieldType t;
    if (!ParseFieldType(e.value, &t))
      return Status::InvalidArgument(e.location + ": " + what + ": field '" + e.key + "' has unknown type '" + e.value +
                                     "'; types are " + FieldTypeNames());
    fields.push_back({e.key, t});
  }
  Status s = Schema::Make(std::move(fields), out);
  if (!s.ok()) return Status::InvalidArgument(c.Where("schema") + ": " + what + ": schema: " + s.message());
  return Status::OK();
}

CAIRN_REGISTER_OPERATOR({
    .name = "file_source",
    .role = OperatorRole::kSource,
    .output_schema = FileSourceSchema,
    .params = {
        {.name = "path", .type = ParamType::kString, .required = true, .doc = "text file to read"},
        {.name = "rate", .type = ParamType::kInt, .default_value = "0",
         .doc = "records (lines) per second per subtask; 0 = unlimited"},
        {.name = "format", .type = ParamType::kString, .default_value = "lines",
         .doc = "`lines` (one `line` string field per line), `csv` (RFC 4180) or `jsonl` (one JSON object per line)"},
        {.name = "schema", .type = ParamType::kMap,
         .doc = "csv and jsonl (required there, rejected with lines): the fields, a map of name to type (string, bytes, "
                "int64, double, bool, timestamp), in csv column order"},
        {.name = "header", .type = ParamType::kBool, .default_value = "false",
         .doc = "csv: the first record is a header and is skipped"},
        {.name = "delimiter", .type = ParamType::kString, .default_value = ",",
         .doc = "csv: the field delimiter, one character"},
        {.name = "on_error", .type = ParamType::kString, .default_value = "fail",
         .doc = "csv and jsonl: a malformed record fails the job (`fail`, exit 1 naming file, line and field) or is "
                "counted and dropped (`skip`)"},
    },
    .doc = "Reads a text file as lines, csv or jsonl records (see Formats). With parallelism p, subtask i reads the "
           "records that start in the i-th of p equal byte ranges. Its read position (and count of skipped records) "
           "is part of the checkpoint.",
    .create = MakeOperator<FileSource>,
    .state = FileSourceStateRule(),
    .describe_state = DescribeFileSourceState,
});

}  // namespace cairn
