#include "engine/dataflow/record_codec.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <ctime>

namespace cairn {

void EncodeSchema(const Schema& schema, std::string* out) {
  PutFixed64(out, schema.size());
  for (const Field& f : schema.fields()) {
    PutLengthPrefixed(out, f.name);
    out->push_back(static_cast<char>(f.type));
  }
}

bool DecodeSchema(Decoder* d, SchemaRef* out) {
  uint64_t n;
  if (!d->GetFixed64(&n) || n > Schema::kMaxFields) return false;
  std::vector<Field> fields(n);
  for (Field& f : fields) {
    uint8_t t;
    if (!d->GetLengthPrefixed(&f.name) || !d->GetByte(&t) || t > static_cast<uint8_t>(FieldType::kTimestamp)) return false;
    f.type = static_cast<FieldType>(t);
  }
  return Schema::Make(std::move(fields), out).ok();
}

void EncodeRow(const RecordBatch& b, size_t row, std::string* out) {
  const Schema& s = *b.schema();
  PutFixed64(out, b.null_bits(row));
  for (size_t f = 0; f < s.size(); ++f) {
    if (b.IsNull(row, f)) continue;
    if (IsVariableLength(s.field(f).type)) {
      PutLengthPrefixed(out, b.GetString(row, f));
    } else {
      PutFixed64(out, b.GetCell(row, f));
    }
  }
}

void EncodeRows(const RecordBatch& b, std::string* out) {
  const Schema& s = *b.schema();
  const size_t fields = s.size();
  bool var[Schema::kMaxFields];
  for (size_t f = 0; f < fields; ++f) var[f] = IsVariableLength(s.field(f).type);
  // The exact size first: each row's null bits, 8 bytes a present field, and each present
  // string's bytes (the low 32 bits of its cell).
  size_t bytes = 0;
  for (size_t r = 0; r < b.size(); ++r) {
    const uint64_t nulls = b.null_bits(r);
    bytes += 8;
    for (size_t f = 0; f < fields; ++f) {
      if ((nulls >> f) & 1) continue;
      bytes += 8;
      if (var[f]) bytes += static_cast<uint32_t>(b.GetCell(r, f));
    }
  }
  const size_t at = out->size();
  out->resize(at + bytes);
  char* p = out->data() + at;
  for (size_t r = 0; r < b.size(); ++r) {
    const uint64_t nulls = b.null_bits(r);
    EncodeFixed64(p, nulls);
    p += 8;
    for (size_t f = 0; f < fields; ++f) {
      if ((nulls >> f) & 1) continue;
      if (var[f]) {
        const std::string_view v = b.GetString(r, f);
        EncodeFixed64(p, v.size());
        std::memcpy(p + 8, v.data(), v.size());
        p += 8 + v.size();
      } else {
        EncodeFixed64(p, b.GetCell(r, f));
        p += 8;
      }
    }
  }
}

bool DecodeRow(Decoder* d, RecordBatch* b) {
  const Schema& s = *b->schema();
  uint64_t nulls;
  if (!d->GetFixed64(&nulls)) return false;
  if (s.size() < 64 && (nulls >> s.size()) != 0) return false;
  size_t r = b->AddRow();
  for (size_t f = 0; f < s.size(); ++f) {
    if ((nulls >> f) & 1) continue;
    FieldType t = s.field(f).type;
    if (IsVariableLength(t)) {
      std::string_view v;
      if (!d->GetLengthPrefixedView(&v)) return false;
      b->SetString(r, f, v);
      continue;
    }
    uint64_t c;
    if (!d->GetFixed64(&c)) return false;
    switch (t) {
      case FieldType::kDouble: {
        double v;
        std::memcpy(&v, &c, 8);
        b->SetDouble(r, f, v);
        break;
      }
      case FieldType::kBool:
        if (c > 1) return false;
        b->SetBool(r, f, c != 0);
        break;
      default: b->SetInt64(r, f, static_cast<int64_t>(c));
    }
  }
  return true;
}

Status KeySelector::Make(const Schema& schema, const std::vector<std::string>& fields, KeySelector* out) {
  KeySelector k;
  for (const std::string& name : fields) {
    int i = schema.IndexOf(name);
    if (i < 0) return Status::InvalidArgument("no field '" + name + "' in " + schema.ToString());
    k.fields_.push_back(i);
    k.types_.push_back(schema.field(static_cast<size_t>(i)).type);
  }
  k.single_bytes_ = k.fields_.size() == 1 && IsVariableLength(k.types_[0]);
  *out = std::move(k);
  return Status::OK();
}

void KeySelector::EncodeComposite(const RecordBatch& b, size_t row, std::string* out) const {
  for (size_t i = 0; i < fields_.size(); ++i) {
    size_t f = static_cast<size_t>(fields_[i]);
    if (b.IsNull(row, f)) {
      out->push_back('\0');
      continue;
    }
    out->push_back('\1');
    if (IsVariableLength(types_[i])) {
      PutLengthPrefixed(out, b.GetString(row, f));
    } else {
      PutFixed64(out, b.GetCell(row, f));
    }
  }
}

bool DecodeKeyInto(std::string_view key, const std::vector<FieldType>& types, const std::vector<int>& at,
                   RecordBatch* b, size_t row) {
  if (types.size() == 1 && IsVariableLength(types[0])) {
    b->SetString(row, static_cast<size_t>(at[0]), key);
    return true;
  }
  Decoder d(key);
  for (size_t i = 0; i < types.size(); ++i) {
    size_t f = static_cast<size_t>(at[i]);
    uint8_t tag;
    if (!d.GetByte(&tag) || tag > 1) return false;
    if (tag == 0) {
      b->SetNull(row, f);
      continue;
    }
    if (IsVariableLength(types[i])) {
      std::string_view v;
      if (!d.GetLengthPrefixedView(&v)) return false;
      b->SetString(row, f, v);
      continue;
    }
    uint64_t c;
    if (!d.GetFixed64(&c)) return false;
    if (types[i] == FieldType::kDouble) {
      double v;
      std::memcpy(&v, &c, 8);
      b->SetDouble(row, f, v);
    } else if (types[i] == FieldType::kBool) {
      b->SetBool(row, f, c != 0);
    } else {
      b->SetInt64(row, f, static_cast<int64_t>(c));
    }
  }
  return d.done();
}

void AppendTimestamp(int64_t ms, std::string* out) {
  int64_t secs = ms / 1000;
  int64_t millis = ms % 1000;
  if (millis < 0) {
    millis += 1000;
    secs -= 1;
  }
  std::time_t t = static_cast<std::time_t>(secs);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  int n = std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1,
                        tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(millis));
  out->append(buf, static_cast<size_t>(n));
}

namespace {

// The length of the well-formed UTF-8 sequence `s` starts with (2 to 4 bytes; no overlong
// forms, surrogates or code points above U+10FFFF), or 0.
size_t Utf8SequenceLength(std::string_view s) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  auto cont = [&](size_t i) { return i < s.size() && (byte(i) & 0xc0) == 0x80; };
  unsigned char c = byte(0);
  if (c >= 0xc2 && c <= 0xdf) return cont(1) ? 2 : 0;
  if (c >= 0xe0 && c <= 0xef) {
    if (!cont(1) || !cont(2)) return 0;
    if (c == 0xe0 && byte(1) < 0xa0) return 0;  // overlong
    if (c == 0xed && byte(1) > 0x9f) return 0;  // surrogates
    return 3;
  }
  if (c >= 0xf0 && c <= 0xf4) {
    if (!cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xf0 && byte(1) < 0x90) return 0;  // overlong
    if (c == 0xf4 && byte(1) > 0x8f) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

}  // namespace

void AppendJsonString(std::string_view s, std::string* out) {
  out->push_back('"');
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      default:
        if (c < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out->append(buf);
        } else if (c < 0x80) {
          out->push_back(static_cast<char>(c));
        } else if (size_t n = Utf8SequenceLength(s.substr(i)); n > 0) {
          out->append(s.data() + i, n);
          i += n - 1;
        } else {
          char buf[8];  // not UTF-8: the byte as the code point of the same number
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out->append(buf);
        }
    }
  }
  out->push_back('"');
}

namespace {

void AppendInt(int64_t v, std::string* out) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out->append(buf, r.ptr);
}

void AppendDouble(double v, std::string* out) {
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  out->append(buf, r.ptr);
}

}  // namespace

void AppendJsonValue(const RecordBatch& b, size_t row, size_t f, std::string* out) {
  if (b.IsNull(row, f)) {
    out->append("null");
    return;
  }
  switch (b.schema()->field(f).type) {
    case FieldType::kString:
    case FieldType::kBytes: AppendJsonString(b.GetString(row, f), out); return;
    case FieldType::kInt64: AppendInt(b.GetInt64(row, f), out); return;
    case FieldType::kDouble: {
      double v = b.GetDouble(row, f);
      if (std::isfinite(v)) {
        AppendDouble(v, out);
      } else {
        out->append("null");  // JSON has no NaN or infinity
      }
      return;
    }
    case FieldType::kBool: out->append(b.GetBool(row, f) ? "true" : "false"); return;
    case FieldType::kTimestamp:
      out->push_back('"');
      AppendTimestamp(b.GetInt64(row, f), out);
      out->push_back('"');
      return;
  }
}

void AppendJsonObject(const RecordBatch& b, size_t row, std::string* out) {
  const Schema& s = *b.schema();
  out->push_back('{');
  for (size_t f = 0; f < s.size(); ++f) {
    if (f > 0) out->push_back(',');
    AppendJsonString(s.field(f).name, out);
    out->push_back(':');
    AppendJsonValue(b, row, f, out);
  }
  out->push_back('}');
}

void AppendTextSlow(const RecordBatch& b, size_t row, size_t f, std::string* out) {
  if (b.IsNull(row, f)) return;
  switch (b.schema()->field(f).type) {
    case FieldType::kString:
    case FieldType::kBytes: out->append(b.GetString(row, f)); return;
    case FieldType::kInt64: AppendInt(b.GetInt64(row, f), out); return;
    case FieldType::kDouble: AppendDouble(b.GetDouble(row, f), out); return;
    case FieldType::kBool: out->append(b.GetBool(row, f) ? "true" : "false"); return;
    case FieldType::kTimestamp: AppendTimestamp(b.GetInt64(row, f), out); return;
  }
}

}  // namespace cairn
