// tokenize: splits lines into words at ASCII whitespace; every other byte (UTF-8 included) is
// part of a word and passes through untouched.
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <array>
#include <cstring>

#include "jobs/registry.h"
#include "operators/text_params.h"

namespace cairn {
namespace {

// Bit i set when byte i of p[0, 64) is ASCII whitespace (kIsAsciiSpace): space or \t..\r.
inline uint64_t SpaceMask64(const char* p) {
#if !defined(__SSE2__)
  uint64_t mask = 0;
  for (int j = 0; j < 64; ++j) mask |= static_cast<uint64_t>(kIsAsciiSpace[static_cast<unsigned char>(p[j])]) << j;
  return mask;
#else
  const __m128i space = _mm_set1_epi8(' '), tab = _mm_set1_epi8('\t'), four = _mm_set1_epi8(4);
  uint64_t mask = 0;
  for (int k = 0; k < 4; ++k) {
    __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 16 * k));
    __m128i d = _mm_sub_epi8(c, tab);  // \t..\r become 0..4
    __m128i ctl = _mm_cmpeq_epi8(_mm_min_epu8(d, four), d);
    __m128i ws = _mm_or_si128(ctl, _mm_cmpeq_epi8(c, space));
    mask |= static_cast<uint64_t>(static_cast<uint16_t>(_mm_movemask_epi8(ws))) << (16 * k);
  }
  return mask;
#endif
}

class Tokenize final : public Operator {
 public:
  Status Process(int, const RecordBatch& in, RecordBatch* out) override {
    // 64 bytes at a time: a whitespace bit mask whose edges are the words' starts and ends (the
    // last, partial block of a line is copied into a buffer padded with spaces).
    alignas(16) char tail[64];
    for (size_t i = 0; i < in.size(); ++i) {
      std::string_view line = in.GetString(i, 0);
      const char* p = line.data();
      const size_t n = line.size();
      bool in_word = false;
      size_t start = 0;
      for (size_t base = 0; base < n; base += 64) {
        const char* block = p + base;
        if (n - base < 64) {
          std::memset(tail, ' ', sizeof tail);
          std::memcpy(tail, block, n - base);
          block = tail;
        }
        const uint64_t word = ~SpaceMask64(block);
        // Bit j set where byte j differs in kind from byte j - 1 (a word starts or ends there).
        uint64_t edges = word ^ ((word << 1) | (in_word ? 1 : 0));
        while (edges != 0) {
          const size_t at = base + static_cast<size_t>(__builtin_ctzll(edges));
          edges &= edges - 1;
          if (!in_word) {
            start = at;
          } else {
            out->AppendRow().SetString(0, line.substr(start, at - start));
          }
          in_word = !in_word;
        }
      }
      if (in_word) out->AppendRow().SetString(0, line.substr(start, n - start));
    }
    return Status::OK();
  }
};

// Splits the first field, a string (a line); emits (word string).
Status TokenizeSchema(const OperatorConfig& c, const std::vector<SchemaRef>& inputs, SchemaRef* out) {
  for (const SchemaRef& in : inputs) {
    if (in != nullptr && (in->empty() || in->field(0).type != FieldType::kString))
      return Status::InvalidArgument(c.location + ": operator '" + c.id + "' (type tokenize) splits the first " +
                                     "field of its input, which must be a string, but its input carries " +
                                     in->ToString() + "; flat_map splits any string field");
  }
  static const SchemaRef schema = MakeSchema({{"word", FieldType::kString}});
  *out = schema;
  return Status::OK();
}

}  // namespace

CAIRN_REGISTER_OPERATOR({
    .name = "tokenize",
    .role = OperatorRole::kTransform,
    .output_schema = TokenizeSchema,
    .doc = "Splits each line (its input's first field, a string) into words: maximal runs of bytes that are not ASCII "
           "whitespace (space, \\t, \\n, \\r, \\v, \\f). Bytes pass through untouched.",
    .create = MakeOperator<Tokenize>,
});

}  // namespace cairn
