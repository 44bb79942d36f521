// The compiled form of an ExprProgram (engine/expr/expr.h), shared by the compiler
// (compile.cc: lexer, parser, type checker) and the evaluator (eval.cc); nothing outside
// engine/expr includes it.
//
// A program is a list of instructions in evaluation order; instruction k fills register k (an
// ExprColumn) from registers of earlier instructions (`args`) for a whole batch. Every
// instruction is typed by the checker, so the evaluator only switches on the opcode, once per
// instruction and batch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/expr/expr.h"

namespace cairn {

enum class ExprOp : uint8_t {
  kField,        // field `field` of the batch, of type `type`
  kConst,        // the literal ci / cd / cs of type `type`
  kNull,         // NULL: every row null (of any type: every vector is sized and zero)
  kIntToDouble,  // args[0] int64 -> double
  kArithI,       // args[0] sub args[1], int64 (wrapping); / and % by 0 give NULL
  kArithD,       // the same for doubles
  kNegI,
  kNegD,
  kCmpI,         // compare int-like (int64, timestamp, bool) with `sub`
  kCmpD,
  kCmpS,
  kAnd,          // three-valued
  kOr,
  kNot,
  kIsNull,       // negate: IS NOT NULL
  kLike,         // negate: NOT LIKE; args: value, pattern
  kConcat,       // a || b (NULL if either is)
  kCase,         // args: cond1, val1, cond2, val2, ... [, else]; has_else
  kCast,         // args[0] of type `from` -> `type`; failures NULL
  kCall,         // function `fn` over args
};

// Binary operators (ExprInstr::sub).
enum class ExprSub : uint8_t { kAdd, kSub, kMul, kDiv, kMod, kEq, kNe, kLt, kLe, kGt, kGe };

enum class ExprFn : uint8_t {
  kLower, kUpper, kTrim, kLength, kSubstr, kConcat, kReplace, kStartsWith, kEndsWith,
  kAbs, kFloor, kCeil, kRound, kCoalesce,
};

struct ExprInstr {
  ExprOp op = ExprOp::kNull;
  ExprSub sub = ExprSub::kAdd;
  ExprFn fn = ExprFn::kLower;
  FieldType type = FieldType::kBool;  // of the result
  FieldType from = FieldType::kBool;  // kCast: of the operand; kCall: of the first argument
  bool negate = false;
  bool has_else = false;
  int field = -1;
  std::vector<int> args;  // registers
  int64_t ci = 0;
  double cd = 0;
  std::string cs;
};

struct ExprProgram::Impl {
  std::vector<ExprInstr> code;
  std::vector<int> outputs;        // register of each expression
  std::vector<ExprType> types;     // of each expression
  std::vector<ExprColumn> regs;    // one per instruction
};

// Runs `code` over `batch` into `regs` (eval.cc).
void RunProgram(const std::vector<ExprInstr>& code, const RecordBatch& batch, std::vector<ExprColumn>* regs);

// "2026-12-01T06:35:17.123Z", "2026-12-01 06:35:17", "2026-12-01T06:35:17.5" ... (ISO-8601,
// UTC; a trailing Z optional; fraction up to milliseconds) -> ms since the epoch; false if not.
bool ParseTimestamp(std::string_view s, int64_t* ms);

}  // namespace cairn
