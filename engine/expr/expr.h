// SQL-style expressions over records: the `where` of a filter and the `select` of a map
// (docs/configuration.md, "Expressions", has the grammar, the types and the functions).
//
// An ExprProgram is compiled once, when a job loads and again when its operator opens, against
// the Schema of the records it reads: the text is lexed, parsed (precedence OR < AND < NOT <
// comparison, LIKE, IS, IN < +, -, || < *, /, % < unary -) and type-checked into a flat list of
// typed instructions. It is then evaluated a batch at a time: each instruction fills one column
// (values plus null flags) for every row of the batch, one loop per instruction, so there is no
// tree walk and no virtual call per record, and no allocation per record once the columns have
// grown to the batch size.
//
// Errors: every problem of an expression (syntax, unknown field or function, wrong argument
// count, type mismatch) is found by Add and is InvalidArgument "<place>, column <c>: <what>",
// where `place` is what the caller passes (e.g. "job.yaml:12:15: operator 'big': where") and
// <c> is the 1-based column in the expression text. Evaluation never fails: division or modulo
// by zero, and a CAST whose value does not convert, give NULL.
//
// Contract: not thread-safe; one program per operator subtask. The columns returned by result()
// are valid until the next Evaluate and may point into the evaluated batch, which must outlive
// them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/status.h"
#include "engine/dataflow/record_batch.h"
#include "engine/dataflow/schema.h"

namespace cairn {

// The values of one expression for every row of a batch. Only the vector of the expression's
// type is meaningful: `i` for int64, timestamp and bool (0/1), `d` for double, `s` for string
// and bytes (views into the batch, a literal, or `arena`). A null row holds 0, 0.0 or "".
struct ExprColumn {
  std::vector<uint8_t> null;  // 1: the row's value is NULL
  std::vector<int64_t> i;
  std::vector<double> d;
  std::vector<std::string_view> s;
  std::string arena;  // bytes of computed strings
};

// The type of an expression: a FieldType, or NULL (the literal NULL, whose type nothing fixed).
struct ExprType {
  FieldType type = FieldType::kBool;
  bool null_literal = false;
  std::string ToString() const { return null_literal ? "NULL" : FieldTypeName(type); }
};

class ExprProgram {
 public:
  // A program over records of `input` (not null).
  explicit ExprProgram(SchemaRef input);
  ~ExprProgram();
  ExprProgram(ExprProgram&&) noexcept;
  ExprProgram& operator=(ExprProgram&&) noexcept;

  const SchemaRef& input_schema() const { return input_; }

  // Parses and type-checks `text` and adds it as expression number size() - 1 (see the file
  // comment for the errors; nothing is added on error).
  Status Add(std::string_view text, const std::string& place);
  size_t size() const;
  ExprType type(size_t k) const;

  // Evaluates every expression for every row of `batch`, which holds records of
  // input_schema() (or an equal schema).
  void Evaluate(const RecordBatch& batch);
  // Expression k's values from the last Evaluate.
  const ExprColumn& result(size_t k) const;

  struct Impl;

 private:
  SchemaRef input_;
  std::unique_ptr<Impl> impl_;
};

// For filters: true where `c` is TRUE (not FALSE, not NULL), for its first `n` rows, appended
// to *rows as row indices.
void SelectTrue(const ExprColumn& c, size_t n, std::vector<uint32_t>* rows);

// Writes rows [0, n) of `c`, of type `type`, into field `f` of rows [first, first + n) of *out
// (which exist and are of that field type); NULL rows set the field null.
void WriteColumn(const ExprColumn& c, FieldType type, size_t n, RecordBatch* out, size_t first, size_t f);

}  // namespace cairn
