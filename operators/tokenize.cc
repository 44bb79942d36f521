// tokenize: splits lines into words at ASCII whitespace; every other byte (UTF-8 included) is
// part of a word and passes through untouched.
#include <array>

#include "jobs/registry.h"

namespace cairn {
namespace {

constexpr std::array<bool, 256> MakeSpaceTable() {
  std::array<bool, 256> t{};
  t[' '] = t['\t'] = t['\n'] = t['\r'] = t['\v'] = t['\f'] = true;
  return t;
}
constexpr std::array<bool, 256> kIsSpace = MakeSpaceTable();

class Tokenize final : public Operator {
 public:
  Status Process(int, const RecordBatch& in, RecordBatch* out) override {
    for (size_t i = 0; i < in.size(); ++i) {
      std::string_view line = in.key(i);
      const unsigned char* p = reinterpret_cast<const unsigned char*>(line.data());
      size_t n = line.size(), j = 0;
      while (j < n) {
        while (j < n && kIsSpace[p[j]]) ++j;
        size_t start = j;
        while (j < n && !kIsSpace[p[j]]) ++j;
        if (j > start) out->Add(line.substr(start, j - start));
      }
    }
    return Status::OK();
  }
};

}  // namespace

CAIRN_REGISTER_OPERATOR({
    .name = "tokenize",
    .role = OperatorRole::kTransform,
    .output = Schema{"word", "", ""},
    .doc = "Splits each line into words: maximal runs of bytes that are not ASCII "
           "whitespace (space, \\t, \\n, \\r, \\v, \\f). Bytes pass through untouched.",
    .create = MakeOperator<Tokenize>,
});

}  // namespace cairn
