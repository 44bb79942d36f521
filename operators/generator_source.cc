#include "operators/generator_source.h"

#include <algorithm>
#include <cmath>

#include "jobs/registry.h"
#include "operators/rate_limiter.h"
#include "operators/strided_position.h"

namespace cairn {

std::string WordForRank(int64_t r) {
  static const char* kSyllables[16] = {"ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo",
                                       "de", "ba", "zu", "pe", "gi", "fo", "ha", "ju"};
  std::string w;
  int64_t x = r + 1;
  while (x > 0) {
    --x;
    w += kSyllables[x % 16];
    x /= 16;
  }
  return w;
}

static uint64_t SplitMix64(uint64_t* state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

WordGenerator::WordGenerator(const GeneratorParams& p) : p_(p) {
  lines_ = p.words_per_line > 0 ? (p.words + p.words_per_line - 1) / p.words_per_line : 0;
  cdf_.resize(static_cast<size_t>(p.vocabulary));
  double sum = 0;
  for (int64_t r = 0; r < p.vocabulary; ++r) {
    sum += 1.0 / std::pow(static_cast<double>(r + 1), p.zipf);
    cdf_[static_cast<size_t>(r)] = sum;
  }
  for (double& c : cdf_) c /= sum;
  words_.reserve(cdf_.size());
  for (int64_t r = 0; r < p.vocabulary; ++r) words_.push_back(WordForRank(r));
}

void WordGenerator::Line(int64_t n, std::string* out) const {
  uint64_t state = static_cast<uint64_t>(p_.seed) * 0x9e3779b97f4a7c15ull ^ static_cast<uint64_t>(n);
  int64_t count = std::min(p_.words_per_line, p_.words - n * p_.words_per_line);
  for (int64_t i = 0; i < count; ++i) {
    double u = static_cast<double>(SplitMix64(&state) >> 11) * 0x1.0p-53;
    size_t r = static_cast<size_t>(std::lower_bound(cdf_.begin(), cdf_.end(), u) - cdf_.begin());
    if (r >= words_.size()) r = words_.size() - 1;
    if (i > 0) out->push_back(' ');
    out->append(words_[r]);
  }
}

void WordGenerator::WriteText(FILE* f) const {
  std::string line;
  for (int64_t n = 0; n < lines_; ++n) {
    line.clear();
    Line(n, &line);
    line.push_back('\n');
    fwrite(line.data(), 1, line.size(), f);
  }
}

namespace {

// Subtask i of p emits lines i, i+p, i+2p, ...; its state is the next line index.
class GeneratorSource final : public SourceOperator {
 public:
  explicit GeneratorSource(const OperatorConfig& c)
      : gen_(GeneratorParams{c.GetInt("words"), c.GetInt("words_per_line"), c.GetInt("vocabulary"), c.GetDouble("zipf"),
                             c.GetInt("seed")}),
        limiter_(c.GetInt("rate")) {}

  Status Open(OperatorContext& ctx) override { return pos_.Open(ctx, "generator position"); }

  PollResult Poll(RecordBatch* out, size_t max_records, Clock::time_point* resume_at) override {
    if (!pos_.Valid(gen_.lines())) return PollResult::kExhausted;
    size_t allowed = limiter_.Allowed(max_records, resume_at);
    if (allowed == 0) return PollResult::kWait;
    size_t n = 0;
    for (; n < allowed && pos_.Valid(gen_.lines()); ++n, pos_.Advance()) {
      line_.clear();
      gen_.Line(pos_.next(), &line_);
      out->SetString(out->AddRow(), 0, line_);
    }
    limiter_.Consumed(n);
    return PollResult::kMore;
  }

  Status SnapshotState(CheckpointId, OperatorSnapshot* snap) override {
    pos_.Snapshot(snap);
    return Status::OK();
  }

 private:
  WordGenerator gen_;
  RateLimiter limiter_;
  StridedPosition pos_;
  std::string line_;
};

}  // namespace


CAIRN_REGISTER_OPERATOR({
    .name = "generator",
    .role = OperatorRole::kSource,
    .output_schema = FixedSchema({{"line", FieldType::kString}}),
    .params = {
        {.name = "words", .type = ParamType::kInt, .default_value = "10000000",
         .doc = "total words to generate (over all subtasks)"},
        {.name = "words_per_line", .type = ParamType::kInt, .default_value = "10", .min_int = 1,
         .doc = "words in each line"},
        {.name = "vocabulary", .type = ParamType::kInt, .default_value = "100000", .min_int = 1,
         .doc = "number of distinct words"},
        {.name = "zipf", .type = ParamType::kDouble, .default_value = "1.0",
         .doc = "Zipf exponent s of the word distribution"},
        {.name = "seed", .type = ParamType::kInt, .default_value = "42",
         .doc = "random seed; equal seeds give equal text"},
        {.name = "rate", .type = ParamType::kInt, .default_value = "0",
         .doc = "lines per second per subtask; 0 = unlimited"},
    },
    .doc = "Generates deterministic, seeded lines of Zipf-distributed words. Line n depends only on the "
           "seed and n, so any parallelism and any restore produce the same text.",
    .create = MakeOperator<GeneratorSource>,
    .state = StridedPosition::Rule(),
    .describe_state = StridedPosition::Describe,
});

}  // namespace cairn
