// Specification of SQL-style expressions (engine/expr/expr.h): the parser's precedence and
// literals, the type checker's rules and its errors (each with its column), and evaluation over
// batches with NULLs: three-valued logic, LIKE, CASE, CAST, IN, division by zero, the functions.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <charconv>
#include <string>
#include <vector>

#include "engine/dataflow/record_codec.h"
#include "engine/expr/expr.h"

namespace cairn {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// (user string, url string, bytes int64, ts timestamp, score double, ok bool, a bool, b bool)
const SchemaRef& TestSchema() {
  static const SchemaRef s = MakeSchema({{"user", FieldType::kString},
                                         {"url", FieldType::kString},
                                         {"bytes", FieldType::kInt64},
                                         {"ts", FieldType::kTimestamp},
                                         {"score", FieldType::kDouble},
                                         {"ok", FieldType::kBool},
                                         {"a", FieldType::kBool},
                                         {"b", FieldType::kBool}});
  return s;
}

// One row: nullptr / INT64_MIN sentinel-free: every field given as text, "NULL" for null.
struct Row {
  const char* user;
  const char* url;
  const char* bytes;
  const char* ts;
  const char* score;
  const char* ok;
  const char* a;
  const char* b;
};

RecordBatch MakeBatch(const std::vector<Row>& rows) {
  RecordBatch batch(TestSchema());
  for (const Row& r : rows) {
    size_t i = batch.AddRow();
    const char* v[] = {r.user, r.url, r.bytes, r.ts, r.score, r.ok, r.a, r.b};
    for (size_t f = 0; f < 8; ++f) {
      std::string s = v[f];
      if (s == "NULL") continue;
      switch (TestSchema()->field(f).type) {
        case FieldType::kString: batch.SetString(i, f, s); break;
        case FieldType::kInt64:
        case FieldType::kTimestamp: batch.SetInt64(i, f, std::stoll(s)); break;
        case FieldType::kDouble: batch.SetDouble(i, f, std::stod(s)); break;
        case FieldType::kBool: batch.SetBool(i, f, s == "true"); break;
        default: break;
      }
    }
  }
  return batch;
}

// Two rows with values, one all NULL.
const RecordBatch& Sample() {
  static const RecordBatch b = MakeBatch({
      {"Alice", "/api/users", "1500", "1764570917123", "2.5", "true", "true", "false"},
      {"bob", "/index.html", "200", "0", "-1.25", "false", "false", "NULL"},
      {"NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL", "NULL"},
  });
  return b;
}

std::string Text(const ExprColumn& c, const ExprType& t, size_t k) {
  if (c.null[k]) return "NULL";
  if (t.null_literal) return "?";
  std::string out;
  char buf[32];
  switch (t.type) {
    case FieldType::kString:
    case FieldType::kBytes: return std::string(c.s[k]);
    case FieldType::kInt64: return std::to_string(c.i[k]);
    case FieldType::kBool: return c.i[k] ? "true" : "false";
    case FieldType::kTimestamp: AppendTimestamp(c.i[k], &out); return out;
    case FieldType::kDouble: {
      auto r = std::to_chars(buf, buf + sizeof buf, c.d[k]);
      return std::string(buf, r.ptr);
    }
  }
  return out;
}

// The values of `expr` over `batch`, as text ("NULL" for null). Fails the test on a compile error.
std::vector<std::string> Eval(const std::string& expr, const RecordBatch& batch = Sample()) {
  ExprProgram p(TestSchema());
  Status s = p.Add(expr, "test");
  EXPECT_TRUE(s.ok()) << s.message();
  if (!s.ok()) return {};
  p.Evaluate(batch);
  std::vector<std::string> out;
  for (size_t k = 0; k < batch.size(); ++k) out.push_back(Text(p.result(0), p.type(0), k));
  return out;
}

// The value of a constant expression (over a batch of one row).
std::string Value(const std::string& expr) {
  static const RecordBatch one = MakeBatch({{"x", "y", "1", "0", "0", "true", "true", "true"}});
  std::vector<std::string> v = Eval(expr, one);
  return v.empty() ? "<error>" : v[0];
}

std::string TypeOf(const std::string& expr) {
  ExprProgram p(TestSchema());
  Status s = p.Add(expr, "test");
  return s.ok() ? p.type(0).ToString() : "<error: " + s.message() + ">";
}

// The error of compiling `expr`, with the place "job.yaml:3:10: where".
std::string Error(const std::string& expr) {
  ExprProgram p(TestSchema());
  Status s = p.Add(expr, "job.yaml:3:10: where");
  EXPECT_FALSE(s.ok()) << expr << " compiled";
  EXPECT_TRUE(s.IsInvalidArgument()) << s.message();
  EXPECT_EQ(p.size(), 0u);
  return s.message();
}

// ---- parsing -----------------------------------------------------------------------------------

TEST(ExprParseTest, MultiplicationBindsTighterThanAdditionAndParenthesesOverride) {
  EXPECT_EQ(Value("1 + 2 * 3"), "7");
  EXPECT_EQ(Value("(1 + 2) * 3"), "9");
  EXPECT_EQ(Value("10 - 4 - 3"), "3");
  EXPECT_EQ(Value("2 * 3 % 4"), "2");
  EXPECT_EQ(Value("-2 * -3"), "6");
  EXPECT_EQ(Value("- (1 + 2) * 2"), "-6");
}

TEST(ExprParseTest, AndBindsTighterThanOrAndNotTighterThanAnd) {
  EXPECT_EQ(Value("TRUE OR TRUE AND FALSE"), "true");
  EXPECT_EQ(Value("(TRUE OR TRUE) AND FALSE"), "false");
  EXPECT_EQ(Value("NOT TRUE AND FALSE"), "false");
  EXPECT_EQ(Value("NOT FALSE AND TRUE"), "true");
  EXPECT_EQ(Value("NOT (FALSE AND TRUE)"), "true");
}

TEST(ExprParseTest, ComparisonBindsTighterThanNotAndLooserThanArithmetic) {
  EXPECT_EQ(Value("NOT 1 = 2"), "true");
  EXPECT_EQ(Value("1 + 2 = 3"), "true");
  EXPECT_EQ(Value("2 * 3 > 5 AND 1 < 2"), "true");
  EXPECT_EQ(Value("NOT bytes IS NULL"), "true");
}

TEST(ExprParseTest, KeywordsAndFunctionNamesAreCaseInsensitiveFieldNamesAreNot) {
  EXPECT_EQ(Value("not true or false"), "false");
  EXPECT_EQ(Value("bytes is not null"), "true");
  EXPECT_EQ(Value("LOWER('AbC')"), "abc");
  EXPECT_EQ(Value("Cast('5' as BIGINT)"), "5");
  EXPECT_THAT(Error("USER = 'x'"), HasSubstr("unknown field 'USER'"));
}

TEST(ExprParseTest, LiteralsOfEveryKind) {
  EXPECT_EQ(Value("'it''s'"), "it's");
  EXPECT_EQ(Value("length('it''s')"), "4");
  EXPECT_EQ(Value("''"), "");
  EXPECT_EQ(Value("1.5e2"), "150");
  EXPECT_EQ(Value(".5"), "0.5");
  EXPECT_EQ(Value("9223372036854775807"), "9223372036854775807");
  EXPECT_EQ(Value("-9223372036854775808"), "-9223372036854775808");
  EXPECT_EQ(TypeOf("1"), "int64");
  EXPECT_EQ(TypeOf("1.0"), "double");
  EXPECT_EQ(TypeOf("'x'"), "string");
  EXPECT_EQ(TypeOf("TRUE"), "bool");
  EXPECT_EQ(TypeOf("NULL"), "NULL");
}

TEST(ExprParseTest, DoubleQuotesNameAFieldEvenOneCalledLikeAKeyword) {
  const SchemaRef s = MakeSchema({{"end", FieldType::kInt64}, {"my field", FieldType::kString}});
  ExprProgram p(s);
  ASSERT_TRUE(p.Add("\"end\" + 1", "t").ok());
  ASSERT_TRUE(p.Add("\"my field\"", "t").ok());
  RecordBatch b(s);
  size_t r = b.AddRow();
  b.SetInt64(r, 0, 41);
  b.SetString(r, 1, "v");
  p.Evaluate(b);
  EXPECT_EQ(p.result(0).i[0], 42);
  EXPECT_EQ(p.result(1).s[0], "v");
  Status bare = p.Add("end + 1", "t");
  EXPECT_THAT(bare.message(), HasSubstr("column 1: unexpected keyword 'end' (a field of that name is written \"end\")"));
}

// ---- errors: each names the place, the column and what is wrong ------------------------------

TEST(ExprErrorTest, UnknownFieldListsTheFields) {
  EXPECT_EQ(Error("bytes > 1 AND bytez < 2"),
            "job.yaml:3:10: where, column 15: unknown field 'bytez' (fields: user, url, bytes, ts, score, ok, a, b)");
}

TEST(ExprErrorTest, TypeMismatchNamesBothSidesAtTheOperator) {
  EXPECT_EQ(Error("url > 1000"), "job.yaml:3:10: where, column 5: cannot compare string 'url' with int64");
  EXPECT_THAT(Error("ts = bytes"), HasSubstr("column 4: cannot compare timestamp 'ts' with int64 'bytes'"));
  EXPECT_THAT(Error("user + 1"), HasSubstr("column 6: cannot apply '+' to string 'user' and int64"));
  EXPECT_THAT(Error("ts + ts"), HasSubstr("column 4: cannot apply '+' to timestamp 'ts' and timestamp 'ts'"));
  EXPECT_THAT(Error("bytes - ts"), HasSubstr("column 7: cannot apply '-' to int64 'bytes' and timestamp 'ts'"));
  EXPECT_THAT(Error("ok AND bytes"), HasSubstr("column 8: an operand of AND must be bool, got int64 'bytes'"));
  EXPECT_THAT(Error("NOT user"), HasSubstr("column 5: the operand of NOT must be bool, got string 'user'"));
  EXPECT_THAT(Error("-user"), HasSubstr("column 1: cannot negate string 'user'"));
  EXPECT_THAT(Error("bytes LIKE 'x%'"), HasSubstr("column 1: LIKE needs a string, got int64 'bytes'"));
  EXPECT_THAT(Error("user || 1"), HasSubstr("column 6: cannot apply '||' to string 'user' and int64"));
  EXPECT_THAT(Error("bytes IN (1, 'x')"), HasSubstr("column 14: cannot compare int64 'bytes' with string"));
}

TEST(ExprErrorTest, CaseAndCoalesceNeedOneType) {
  EXPECT_THAT(Error("CASE WHEN ok THEN 1 ELSE 'x' END"), HasSubstr("column 26: CASE mixes int64 and string"));
  EXPECT_THAT(Error("CASE WHEN bytes THEN 1 END"), HasSubstr("column 11: a WHEN condition must be bool, got int64 'bytes'"));
  EXPECT_THAT(Error("coalesce(user, bytes)"), HasSubstr("column 16: coalesce mixes string 'user' and int64 'bytes'"));
}

TEST(ExprErrorTest, UnknownFunctionListsTheFunctions) {
  EXPECT_THAT(Error("bytes > 1 AND lowr(user) = 'a'"),
              HasSubstr("column 15: unknown function 'lowr' (functions: abs, ceil, coalesce, concat, ends_with, "
                        "floor, length, lower, replace, round, starts_with, substr, trim, upper)"));
}

TEST(ExprErrorTest, WrongArgumentCountOrType) {
  EXPECT_THAT(Error("lower(user, url)"), HasSubstr("column 1: function lower takes 1 argument, got 2"));
  EXPECT_THAT(Error("substr(user)"), HasSubstr("column 1: function substr takes 2 or 3 arguments, got 1"));
  EXPECT_THAT(Error("coalesce()"), HasSubstr("column 1: function coalesce takes at least 1 argument, got 0"));
  EXPECT_THAT(Error("upper(bytes)"), HasSubstr("column 7: argument 1 of upper must be string, got int64 'bytes'"));
  EXPECT_THAT(Error("substr(user, 1.5)"), HasSubstr("column 14: argument 2 of substr must be int64, got double"));
  EXPECT_THAT(Error("abs(user)"), HasSubstr("column 5: argument 1 of abs must be int64 or double, got string 'user'"));
}

TEST(ExprErrorTest, CastsThatCannotBeMadeAndUnknownTypes) {
  EXPECT_THAT(Error("CAST(ok AS timestamp)"), HasSubstr("column 1: cannot cast bool 'ok' to timestamp"));
  EXPECT_THAT(Error("CAST(bytes AS money)"), HasSubstr("column 15: unknown type 'money'"));
}

TEST(ExprErrorTest, SyntaxErrorsPointAtTheOffendingCharacter) {
  EXPECT_EQ(Error("bytes > "), "job.yaml:3:10: where, column 9: unexpected end of the expression");
  EXPECT_THAT(Error("bytes # 2"), HasSubstr("column 7: unexpected character '#'"));
  EXPECT_THAT(Error("1 2"), HasSubstr("column 3: unexpected '2' after a complete expression"));
  EXPECT_THAT(Error("url = 'abc"), HasSubstr("column 7: unterminated string literal"));
  EXPECT_THAT(Error("(bytes > 1"), HasSubstr("column 11: expected ')' but found the end of the expression"));
  EXPECT_THAT(Error("CASE ok THEN 1 END"), HasSubstr("column 9: expected WHEN but found 'THEN'"));
  EXPECT_THAT(Error("bytes IS 1"), HasSubstr("column 10: expected NULL but found '1'"));
  EXPECT_THAT(Error("99999999999999999999"), HasSubstr("column 1: integer 99999999999999999999 is out of range"));
  EXPECT_THAT(Error("12abc"), HasSubstr("column 1: malformed number"));
  EXPECT_THAT(Error(""), HasSubstr("column 1: unexpected end of the expression"));
}

// ---- evaluation ----------------------------------------------------------------------------------

TEST(ExprEvalTest, FieldsAndComparisonsPropagateNull) {
  EXPECT_THAT(Eval("bytes > 1000"), ElementsAre("true", "false", "NULL"));
  EXPECT_THAT(Eval("bytes / 1024.0"), ElementsAre("1.46484375", "0.1953125", "NULL"));
  EXPECT_THAT(Eval("score * 2"), ElementsAre("5", "-2.5", "NULL"));
  EXPECT_THAT(Eval("bytes = score"), ElementsAre("false", "false", "NULL"));
  EXPECT_THAT(Eval("user < url"), ElementsAre("false", "false", "NULL"));  // 'A' > '/', 'b' > '/'
  EXPECT_THAT(Eval("user <> 'bob'"), ElementsAre("true", "false", "NULL"));
  EXPECT_THAT(Eval("bytes IS NULL"), ElementsAre("false", "false", "true"));
  EXPECT_THAT(Eval("bytes IS NOT NULL"), ElementsAre("true", "true", "false"));
  EXPECT_THAT(Eval("ok = TRUE"), ElementsAre("true", "false", "NULL"));
  EXPECT_THAT(Eval("bytes + NULL"), ElementsAre("NULL", "NULL", "NULL"));
  EXPECT_EQ(TypeOf("bytes + NULL"), "int64");
}

TEST(ExprEvalTest, AndOrNotFollowThreeValuedLogic) {
  const RecordBatch b = MakeBatch({
      {"", "", "0", "0", "0", "true", "true", "true"},   {"", "", "0", "0", "0", "true", "true", "false"},
      {"", "", "0", "0", "0", "true", "true", "NULL"},   {"", "", "0", "0", "0", "true", "false", "true"},
      {"", "", "0", "0", "0", "true", "false", "false"}, {"", "", "0", "0", "0", "true", "false", "NULL"},
      {"", "", "0", "0", "0", "true", "NULL", "true"},   {"", "", "0", "0", "0", "true", "NULL", "false"},
      {"", "", "0", "0", "0", "true", "NULL", "NULL"},
  });
  EXPECT_THAT(Eval("a AND b", b), ElementsAre("true", "false", "NULL", "false", "false", "false", "NULL", "false", "NULL"));
  EXPECT_THAT(Eval("a OR b", b), ElementsAre("true", "true", "true", "true", "false", "NULL", "true", "NULL", "NULL"));
  EXPECT_THAT(Eval("NOT a", b), ElementsAre("false", "false", "false", "true", "true", "true", "NULL", "NULL", "NULL"));
  EXPECT_EQ(Value("NULL AND FALSE"), "false");
  EXPECT_EQ(Value("NULL OR TRUE"), "true");
  EXPECT_EQ(Value("NULL AND TRUE"), "NULL");
}

TEST(ExprEvalTest, IntegerDivisionTruncatesAndDivisionByZeroIsNull) {
  EXPECT_EQ(Value("7 / 2"), "3");
  EXPECT_EQ(Value("-7 / 2"), "-3");
  EXPECT_EQ(Value("7 % 3"), "1");
  EXPECT_EQ(Value("-7 % 3"), "-1");
  EXPECT_EQ(Value("7 / 2.0"), "3.5");
  EXPECT_EQ(Value("1 / 0"), "NULL");
  EXPECT_EQ(Value("1 % 0"), "NULL");
  EXPECT_EQ(Value("1.5 / 0"), "NULL");
  EXPECT_EQ(Value("5.5 % 2"), "1.5");
  EXPECT_EQ(Value("-9223372036854775808 / -1"), "-9223372036854775808");
  EXPECT_EQ(Value("9223372036854775807 + 1"), "-9223372036854775808");  // int64 arithmetic wraps
  EXPECT_THAT(Eval("bytes / (bytes - 200)"), ElementsAre("1", "NULL", "NULL"));
}

TEST(ExprEvalTest, TimestampArithmeticAndComparison) {
  EXPECT_THAT(Eval("ts + 1000"), ElementsAre("2025-12-01T06:35:18.123Z", "1970-01-01T00:00:01.000Z", "NULL"));
  EXPECT_THAT(Eval("ts - 1"), ElementsAre("2025-12-01T06:35:17.122Z", "1969-12-31T23:59:59.999Z", "NULL"));
  EXPECT_EQ(TypeOf("ts - ts"), "int64");
  EXPECT_EQ(TypeOf("1000 + ts"), "timestamp");
  EXPECT_THAT(Eval("ts > CAST('2025-01-01' AS timestamp)"), ElementsAre("true", "false", "NULL"));
}

TEST(ExprEvalTest, LikeMatchesPercentAndUnderscoreCaseSensitively) {
  EXPECT_THAT(Eval("url LIKE '/api/%'"), ElementsAre("true", "false", "NULL"));
  EXPECT_THAT(Eval("url NOT LIKE '/api/%'"), ElementsAre("false", "true", "NULL"));
  EXPECT_EQ(Value("'' LIKE '%'"), "true");
  EXPECT_EQ(Value("'' LIKE '_'"), "false");
  EXPECT_EQ(Value("'abc' LIKE 'a_c'"), "true");
  EXPECT_EQ(Value("'ac' LIKE 'a_c'"), "false");
  EXPECT_EQ(Value("'abbc' LIKE 'a_c'"), "false");
  EXPECT_EQ(Value("'abc' LIKE 'ABC'"), "false");
  EXPECT_EQ(Value("'abc' LIKE 'abc'"), "true");
  EXPECT_EQ(Value("'abc' LIKE 'ab'"), "false");
  EXPECT_EQ(Value("'aaab' LIKE '%a%b'"), "true");
  EXPECT_EQ(Value("'mississippi' LIKE '%iss%ppi'"), "true");
  EXPECT_EQ(Value("'mississippi' LIKE '%iss%pi%x'"), "false");
  EXPECT_EQ(Value("'é' LIKE '_'"), "true");  // one character, two bytes
  EXPECT_EQ(Value("'100%' LIKE '100\\%'"), "true");
  EXPECT_EQ(Value("'1000' LIKE '100\\%'"), "false");
  EXPECT_EQ(Value("'a_b' LIKE 'a\\_b'"), "true");
  EXPECT_EQ(Value("'axb' LIKE 'a\\_b'"), "false");
  EXPECT_EQ(Value("'x' LIKE NULL"), "NULL");
}

TEST(ExprEvalTest, CaseTakesTheFirstTrueBranchAndNullIsNotTrue) {
  EXPECT_THAT(Eval("CASE WHEN bytes > 1000 THEN 'big' WHEN bytes > 100 THEN 'mid' ELSE 'small' END"),
              ElementsAre("big", "mid", "small"));
  EXPECT_THAT(Eval("CASE WHEN bytes > 1000 THEN 'big' END"), ElementsAre("big", "NULL", "NULL"));
  EXPECT_THAT(Eval("CASE WHEN ok THEN 1 ELSE 0.5 END"), ElementsAre("1", "0.5", "0.5"));
  EXPECT_EQ(TypeOf("CASE WHEN ok THEN 1 ELSE 0.5 END"), "double");
  EXPECT_THAT(Eval("CASE user WHEN 'bob' THEN 1 WHEN 'Alice' THEN 2 ELSE 3 END"), ElementsAre("2", "1", "3"));
  EXPECT_THAT(Eval("CASE WHEN ok THEN NULL ELSE user END"), ElementsAre("NULL", "bob", "NULL"));
}

TEST(ExprEvalTest, CastConvertsAndGivesNullWhenAValueDoesNotConvert) {
  EXPECT_EQ(Value("CAST('12' AS int64)"), "12");
  EXPECT_EQ(Value("CAST('+12' AS int64)"), "12");
  EXPECT_EQ(Value("CAST('-12' AS int64)"), "-12");
  EXPECT_EQ(Value("CAST('12x' AS int64)"), "NULL");
  EXPECT_EQ(Value("CAST('' AS int64)"), "NULL");
  EXPECT_EQ(Value("CAST(' 12' AS int64)"), "NULL");
  EXPECT_EQ(Value("CAST('1.5' AS int64)"), "NULL");
  EXPECT_EQ(Value("CAST('99999999999999999999' AS int64)"), "NULL");
  EXPECT_EQ(Value("CAST(1.9 AS int64)"), "1");
  EXPECT_EQ(Value("CAST(-1.9 AS int64)"), "-1");
  EXPECT_EQ(Value("CAST(1e30 AS int64)"), "NULL");
  EXPECT_EQ(Value("CAST('1.5' AS double)"), "1.5");
  EXPECT_EQ(Value("CAST('abc' AS double)"), "NULL");
  EXPECT_EQ(Value("CAST(3 AS double) / 2"), "1.5");
  EXPECT_EQ(Value("CAST('TRUE' AS bool)"), "true");
  EXPECT_EQ(Value("CAST('f' AS boolean)"), "false");
  EXPECT_EQ(Value("CAST('yes' AS bool)"), "NULL");
  EXPECT_EQ(Value("CAST(2 AS bool)"), "true");
  EXPECT_EQ(Value("CAST(TRUE AS int)"), "1");
  EXPECT_EQ(Value("CAST(0.1 AS string)"), "0.1");
  EXPECT_EQ(Value("CAST(-42 AS varchar)"), "-42");
  EXPECT_EQ(Value("CAST(FALSE AS text)"), "false");
  EXPECT_EQ(Value("CAST(CAST(0 AS timestamp) AS string)"), "1970-01-01T00:00:00.000Z");
  EXPECT_EQ(Value("CAST(CAST('2026-12-01T06:35:17.123Z' AS timestamp) AS int64)"), "1796106917123");
  EXPECT_EQ(Value("CAST(CAST('2024-02-29 23:59:59.5' AS timestamp) AS int64)"), "1709251199500");
  EXPECT_EQ(Value("CAST('2023-02-29' AS timestamp)"), "NULL");
  EXPECT_EQ(Value("CAST('2026-13-01' AS timestamp)"), "NULL");
  EXPECT_EQ(Value("CAST(NULL AS int64)"), "NULL");
  EXPECT_EQ(TypeOf("CAST(NULL AS int64)"), "int64");
  EXPECT_EQ(Value("CAST(CAST('ab' AS bytes) AS string)"), "ab");
  EXPECT_THAT(Eval("CAST(bytes AS string)"), ElementsAre("1500", "200", "NULL"));
}

TEST(ExprEvalTest, InIsEqualityWithAnyItemUnderSqlNullRules) {
  EXPECT_THAT(Eval("bytes IN (200, 300)"), ElementsAre("false", "true", "NULL"));
  EXPECT_THAT(Eval("bytes NOT IN (200, 300)"), ElementsAre("true", "false", "NULL"));
  EXPECT_EQ(Value("1 IN (1, NULL)"), "true");
  EXPECT_EQ(Value("3 IN (1, NULL)"), "NULL");
  EXPECT_EQ(Value("3 NOT IN (1, NULL)"), "NULL");
  EXPECT_EQ(Value("1 IN (1.0, 2.5)"), "true");
  EXPECT_EQ(Value("'b' IN ('a', 'b')"), "true");
}

TEST(ExprEvalTest, StringFunctions) {
  EXPECT_THAT(Eval("lower(user)"), ElementsAre("alice", "bob", "NULL"));
  EXPECT_THAT(Eval("upper(user)"), ElementsAre("ALICE", "BOB", "NULL"));
  EXPECT_THAT(Eval("length(user)"), ElementsAre("5", "3", "NULL"));
  EXPECT_EQ(Value("length('héllo')"), "5");  // characters, not bytes
  EXPECT_EQ(Value("length(CAST('héllo' AS bytes))"), "6");
  EXPECT_EQ(Value("upper('héllo')"), "HéLLO");  // ASCII letters only
  EXPECT_EQ(Value("substr('hello', 2, 3)"), "ell");
  EXPECT_EQ(Value("substr('hello', 4)"), "lo");
  EXPECT_EQ(Value("substr('hello', 0, 2)"), "h");
  EXPECT_EQ(Value("substr('hello', -5, 7)"), "h");
  EXPECT_EQ(Value("substr('hello', 10)"), "");
  EXPECT_EQ(Value("substr('hello', 2, 0)"), "");
  EXPECT_EQ(Value("substr('hello', 2, -1)"), "NULL");
  EXPECT_EQ(Value("substr('héllo', 2, 2)"), "él");
  EXPECT_EQ(Value("substr('hello', 2, 9223372036854775807)"), "ello");
  EXPECT_EQ(Value("substr('hello', -9223372036854775808, 0)"), "");
  EXPECT_EQ(Value("substr('hello', -9223372036854775808, 9223372036854775807)"), "");
  EXPECT_THAT(Eval("substr(url, 2, 3)"), ElementsAre("api", "ind", "NULL"));
  EXPECT_THAT(Eval("concat(user, ':', bytes, ':', score, ':', ok)"),
              ElementsAre("Alice:1500:2.5:true", "bob:200:-1.25:false", ":::"));  // NULL counts as ''
  EXPECT_THAT(Eval("user || '@' || url"), ElementsAre("Alice@/api/users", "bob@/index.html", "NULL"));
  EXPECT_EQ(Value("trim('  a b \t')"), "a b");
  EXPECT_EQ(Value("replace('a-b-c', '-', '+-')"), "a+-b+-c");
  EXPECT_EQ(Value("replace('abc', '', 'x')"), "abc");
  EXPECT_THAT(Eval("starts_with(url, '/api')"), ElementsAre("true", "false", "NULL"));
  EXPECT_THAT(Eval("ends_with(url, '.html')"), ElementsAre("false", "true", "NULL"));
}

TEST(ExprEvalTest, NumericFunctions) {
  EXPECT_EQ(Value("abs(-3)"), "3");
  EXPECT_EQ(Value("abs(-2.5)"), "2.5");
  EXPECT_EQ(TypeOf("abs(-3)"), "int64");
  EXPECT_EQ(Value("floor(2.7)"), "2");
  EXPECT_EQ(Value("floor(-2.5)"), "-3");
  EXPECT_EQ(Value("ceil(2.1)"), "3");
  EXPECT_EQ(Value("ceil(5)"), "5");
  EXPECT_EQ(Value("round(2.5)"), "3");
  EXPECT_EQ(Value("round(-2.5)"), "-3");
  EXPECT_EQ(Value("round(3.14159, 2)"), "3.14");
  EXPECT_EQ(Value("round(1234.5, -2)"), "1200");
  EXPECT_EQ(Value("round(1234, -2)"), "1200");
  EXPECT_EQ(Value("round(1250, -2)"), "1300");
  EXPECT_EQ(Value("round(-1250, -2)"), "-1300");
  EXPECT_EQ(Value("round(1249, -2)"), "1200");
  EXPECT_EQ(Value("round(7, 2)"), "7");
  EXPECT_EQ(Value("round(2.5, NULL)"), "NULL");
  EXPECT_EQ(Value("round(1234.5, -9223372036854775808)"), "0");
  EXPECT_EQ(Value("round(1234, -9223372036854775808)"), "0");
  EXPECT_EQ(Value("round(1.5, 9223372036854775807)"), "1.5");
  EXPECT_THAT(Eval("abs(score)"), ElementsAre("2.5", "1.25", "NULL"));
}

TEST(ExprEvalTest, CoalesceTakesTheFirstNonNullArgument) {
  EXPECT_THAT(Eval("coalesce(bytes, 0)"), ElementsAre("1500", "200", "0"));
  EXPECT_THAT(Eval("coalesce(b, a, TRUE)"), ElementsAre("false", "false", "true"));
  EXPECT_THAT(Eval("coalesce(NULL, score, bytes)"), ElementsAre("2.5", "-1.25", "NULL"));
  EXPECT_EQ(TypeOf("coalesce(NULL, score, bytes)"), "double");
}

TEST(ExprEvalTest, ProgramsHoldSeveralExpressionsAndBatchesOfAnySize) {
  ExprProgram p(TestSchema());
  ASSERT_TRUE(p.Add("bytes * 2", "t").ok());
  ASSERT_TRUE(p.Add("upper(user)", "t").ok());
  ASSERT_EQ(p.size(), 2u);
  // A large batch, then a small one: each result has exactly the rows of its batch.
  std::vector<Row> rows;
  std::vector<std::string> users, bytes;
  for (int k = 0; k < 3000; ++k) {
    users.push_back(std::string(1, 'u').append(std::to_string(k)));
    bytes.push_back(std::to_string(k));
  }
  for (int k = 0; k < 3000; ++k)
    rows.push_back({users[k].c_str(), "x", k % 7 == 0 ? "NULL" : bytes[k].c_str(), "0", "0", "true", "true", "true"});
  const RecordBatch big = MakeBatch(rows);
  p.Evaluate(big);
  for (size_t k = 0; k < 3000; ++k) {
    ASSERT_EQ(p.result(0).null[k], k % 7 == 0) << k;
    if (k % 7 != 0) {
      ASSERT_EQ(p.result(0).i[k], static_cast<int64_t>(2 * k));
    }
    ASSERT_EQ(p.result(1).s[k], std::string(1, 'U').append(std::to_string(k)));
  }
  p.Evaluate(Sample());
  EXPECT_EQ(p.result(0).null.size(), 3u);
  EXPECT_EQ(p.result(1).s[0], "ALICE");
  EXPECT_EQ(p.result(0).i[1], 400);
}

TEST(ExprEvalTest, SelectTrueAndWriteColumn) {
  ExprProgram p(TestSchema());
  ASSERT_TRUE(p.Add("bytes > 100", "t").ok());
  ASSERT_TRUE(p.Add("lower(user)", "t").ok());
  p.Evaluate(Sample());
  std::vector<uint32_t> rows;
  SelectTrue(p.result(0), Sample().size(), &rows);
  EXPECT_THAT(rows, ElementsAre(0u, 1u));  // NULL is not selected
  const SchemaRef out_schema = MakeSchema({{"u", FieldType::kString}});
  RecordBatch out(out_schema);
  for (int k = 0; k < 3; ++k) out.AddRow();
  WriteColumn(p.result(1), FieldType::kString, 3, &out, 0, 0);
  EXPECT_EQ(out.GetString(0, 0), "alice");
  EXPECT_EQ(out.GetString(1, 0), "bob");
  EXPECT_TRUE(out.IsNull(2, 0));
}

}  // namespace
}  // namespace cairn
