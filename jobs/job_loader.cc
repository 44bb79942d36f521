// The job loader: YAML text -> overrides applied to the tree -> validated JobSpec.
//
// Loading happens in three passes: ApplyOverride edits the YAML tree (and remembers which
// nodes it made, so that errors in them say "--set <path>"), JobReader checks every key and
// value against the registry and fills the JobSpec, and CheckJobGraph (jobs/job_graph.h)
// checks the edges between operators. The first problem found ends the load.
#include "jobs/job_loader.h"

#include <fcntl.h>
#include <unistd.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string_view>
#include <utility>

#include "jobs/job_graph.h"
#include "jobs/job_schemas.h"
#include "jobs/registry.h"

namespace cairn {

namespace {

constexpr int64_t kMaxMaxParallelism = 32768;
constexpr int64_t kUint32Max = std::numeric_limits<uint32_t>::max();

const std::vector<std::string> kTopKeys = {"job", "parallelism", "max_parallelism", "checkpoint", "restart", "state", "operators"};
const std::vector<std::string> kRestartKeys = {"strategy", "attempts", "delay", "max_delay"};
const std::vector<std::string> kStateKeys = {"backend", "changelog", "materialize_interval", "materialize_ratio", "rocksdb"};
const std::vector<std::string> kStateRocksDbKeys = {"block_cache", "write_buffer"};
const char* const kBytesForms = "a size in bytes (e.g. 64MB, 512KB, 1GB, or a number of bytes)";
const std::vector<std::string> kCheckpointKeys = {
    "interval", "mode", "dir", "timeout", "min_pause", "max_concurrent", "tolerable_failures", "retain",
    "aligned_timeout", "history", "max_feedback_backlog", "max_drain_checkpoints", "savepoint_dir",
    "inline_state_threshold"};
const std::vector<std::string> kOperatorCommonKeys = {"id", "type", "parallelism", "inputs", "key_by"};
const char* const kDurationForms = "a duration (e.g. 250ms, 1s, 2m, 1h, or a number of milliseconds)";

std::string Join(const std::vector<std::string>& items, const char* sep = ", ") {
  std::string s;
  for (const auto& i : items) {
    if (!s.empty()) s += sep;
    s += i;
  }
  return s;
}

bool Contains(const std::vector<std::string>& v, const std::string& x) {
  for (const auto& i : v)
    if (i == x) return true;
  return false;
}

// The keys an operator of type `t` accepts: the common ones, then the type's parameters.
const std::vector<std::string> kWatermarkKeys = {"field", "max_out_of_orderness", "idle_timeout"};
const std::vector<std::string> kInputKeys = {"from", "partition"};

std::vector<std::string> OperatorKeys(const OperatorType& t) {
  std::vector<std::string> keys = kOperatorCommonKeys;
  if (t.role == OperatorRole::kSource) keys.push_back("watermark");
  for (const auto& p : t.params) keys.push_back(p.name);
  return keys;
}

std::string TypeNames() {
  std::vector<std::string> names;
  for (const auto& t : OperatorTypes()) names.push_back(t.name);
  return Join(names);
}

bool ParseInt(const std::string& text, int64_t* out) {
  const char* b = text.data();
  const char* e = b + text.size();
  if (b != e && *b == '+') ++b;
  if (b == e) return false;
  auto [p, ec] = std::from_chars(b, e, *out);
  return ec == std::errc() && p == e;
}

bool ParseDouble(const std::string& text, double* out) {
  if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) return false;
  char* end = nullptr;
  errno = 0;
  *out = std::strtod(text.c_str(), &end);
  return errno == 0 && end == text.c_str() + text.size() && std::isfinite(*out);
}

bool ParseBool(const std::string& text, bool* out) {
  static const std::set<std::string> kTrue = {"true", "True", "TRUE", "yes", "on"};
  static const std::set<std::string> kFalse = {"false", "False", "FALSE", "no", "off"};
  if (kTrue.count(text)) return *out = true, true;
  if (kFalse.count(text)) return *out = false, true;
  return false;
}

std::string Describe(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Scalar: return "'" + n.Scalar() + "'";
    case YAML::NodeType::Sequence: return n.size() == 0 ? "an empty list" : "a list";
    case YAML::NodeType::Map: return n.size() == 0 ? "an empty map" : "a map";
    default: return "nothing";
  }
}

// One key of a YAML map with its value; `key` locates the value when the value is null
// (yaml-cpp gives an empty value the position of whatever follows it).
struct Entry {
  bool present = false;
  YAML::Node key;
  YAML::Node value;
};

Entry Find(const YAML::Node& map, const std::string& name) {
  for (auto it = map.begin(); it != map.end(); ++it)
    if (it->first.IsScalar() && it->first.Scalar() == name) return Entry{true, it->first, it->second};
  return Entry{};
}

// Remembers the nodes that --set put into the tree, so that messages about them name the
// override instead of a file position.
class OverrideLog {
 public:
  void Add(const YAML::Node& n, const std::string& path) { nodes_.emplace_back(n, path); }
  const std::string* PathOf(const YAML::Node& n) const {
    for (auto it = nodes_.rbegin(); it != nodes_.rend(); ++it)
      if (it->first.is(n)) return &it->second;
    return nullptr;
  }

 private:
  std::vector<std::pair<YAML::Node, std::string>> nodes_;
};

// Turns nodes into "file:line:col" (or "--set path") and builds errors that start with it.
class Locator {
 public:
  Locator(std::string file, const OverrideLog* log) : file_(std::move(file)), log_(log) {}

  std::string Where(const YAML::Node& n) const {
    if (const std::string* path = log_->PathOf(n)) return "--set " + *path;
    YAML::Mark m = n.Mark();
    if (m.is_null()) return file_;
    return file_ + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
  }
  std::string Where(const Entry& e) const {
    if (log_->PathOf(e.value) != nullptr || !e.value.IsNull()) return Where(e.value);
    return Where(e.key);
  }
  Status Error(const YAML::Node& at, const std::string& what) const {
    return Status::InvalidArgument(Where(at) + ": " + what);
  }
  Status Error(const Entry& at, const std::string& what) const {
    return Status::InvalidArgument(Where(at) + ": " + what);
  }

 private:
  std::string file_;
  const OverrideLog* log_;
};

// ---- Overrides ------------------------------------------------------------------------------

Status SetError(const std::string& path, const std::string& what) {
  return Status::InvalidArgument("--set " + path + ": " + what);
}

Status ApplyOverride(const std::string& arg, const Locator& loc, YAML::Node root, OverrideLog* log) {
  size_t eq = arg.find('=');
  if (eq == std::string::npos)
    return Status::InvalidArgument("--set " + arg + ": expected KEY=VALUE, e.g. --set checkpoint.interval=500ms");
  const std::string path = arg.substr(0, eq);
  const std::string text = arg.substr(eq + 1);
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    size_t dot = path.find('.', start);
    parts.push_back(path.substr(start, dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }

  // Resolve the map that receives the value and the key in it.
  YAML::Node target;  // assigned once: assigning a Node again would rewrite the tree
  bool found = false;
  std::string key;
  const std::string& head = parts[0];
  if (head == "job" || head == "parallelism" || head == "max_parallelism") {
    if (parts.size() != 1) return SetError(path, "'" + head + "' is a single value, not a map");
    target = root;
    found = true;
    key = head;
  } else if (head == "checkpoint") {
    const std::string known = "known keys: " + Join(kCheckpointKeys);
    if (parts.size() != 2) return SetError(path, "expected checkpoint.<key> (" + known + ")");
    key = parts[1];
    if (!Contains(kCheckpointKeys, key)) return SetError(path, "unknown key '" + key + "' in checkpoint (" + known + ")");
    Entry cp = Find(root, "checkpoint");
    if (cp.present && !cp.value.IsMap())
      return SetError(path, "checkpoint at " + loc.Where(cp) + " is not a map");
    if (!cp.present) root["checkpoint"] = YAML::Node(YAML::NodeType::Map);
    target = root["checkpoint"];
    found = true;
  } else if (head == "restart") {
    const std::string known = "known keys: " + Join(kRestartKeys);
    if (parts.size() != 2) return SetError(path, "expected restart.<key> (" + known + ")");
    key = parts[1];
    if (!Contains(kRestartKeys, key)) return SetError(path, "unknown key '" + key + "' in restart (" + known + ")");
    Entry rs = Find(root, "restart");
    if (rs.present && !rs.value.IsMap()) return SetError(path, "restart at " + loc.Where(rs) + " is not a map");
    if (!rs.present) root["restart"] = YAML::Node(YAML::NodeType::Map);
    target = root["restart"];
    found = true;
  } else if (head == "state") {
    const std::string known = "known keys: backend, changelog, materialize_interval, materialize_ratio, rocksdb.block_cache, rocksdb.write_buffer";
    const bool rocks = parts.size() == 3 && parts[1] == "rocksdb";
    if (!(parts.size() == 2 && parts[1] != "rocksdb") && !rocks)
      return SetError(path, "expected state.<key> (" + known + ")");
    key = parts.back();
    if (rocks ? !Contains(kStateRocksDbKeys, key) : !Contains(kStateKeys, key))
      return SetError(path, "unknown key '" + key + "' in state (" + known + ")");
    Entry st = Find(root, "state");
    if (st.present && !st.value.IsMap()) return SetError(path, "state at " + loc.Where(st) + " is not a map");
    if (!st.present) root["state"] = YAML::Node(YAML::NodeType::Map);
    if (rocks) {
      YAML::Node sm = root["state"];
      Entry r = Find(sm, "rocksdb");
      if (r.present && !r.value.IsMap()) return SetError(path, "state.rocksdb at " + loc.Where(r) + " is not a map");
      if (!r.present) sm["rocksdb"] = YAML::Node(YAML::NodeType::Map);
      target = sm["rocksdb"];
    } else {
      target = root["state"];
    }
    found = true;
  } else if (head == "operators") {
    if (parts.size() != 3 && parts.size() != 4)
      return SetError(path, "expected operators.<id>.<key> (or operators.<id>.<key>.<entry> for a map key)");
    const std::string& id = parts[1];
    key = parts[2];
    Entry ops = Find(root, "operators");
    std::vector<std::string> ids;
    if (ops.present && ops.value.IsSequence()) {
      for (YAML::Node op : ops.value) {
        if (!op.IsMap()) continue;
        Entry e = Find(op, "id");
        if (!e.present || !e.value.IsScalar()) continue;
        ids.push_back(e.value.Scalar());
        if (e.value.Scalar() == id && !found) {
          target = op;
          found = true;
        }
      }
    }
    if (!found) return SetError(path, "unknown operator id '" + id + "' (operators: " + Join(ids) + ")");
    Entry type = Find(target, "type");
    const OperatorType* t = type.present && type.value.IsScalar() ? FindOperatorType(type.value.Scalar()) : nullptr;
    // With an unknown type the job fails anyway, at the type; accept the common keys here.
    std::vector<std::string> known = t ? OperatorKeys(*t) : kOperatorCommonKeys;
    if (!Contains(known, key))
      return SetError(path, "unknown key '" + key + "' for operator '" + id + "'" +
                                (t ? " of type " + t->name : "") + " (known keys: " + Join(known) + ")");
    if (parts.size() == 4) {
      // One entry of a map-valued key: the source's watermark, or a map parameter.
      const std::string& entry = parts[3];
      bool is_map = key == "watermark";
      if (is_map && !Contains(kWatermarkKeys, entry))
        return SetError(path, "unknown key '" + entry + "' in watermark (known keys: " + Join(kWatermarkKeys) + ")");
      if (t != nullptr)
        for (const ParamSpec& p : t->params)
          if (p.name == key) is_map = p.type == ParamType::kMap || p.type == ParamType::kMapOfLists;
      if (!is_map) return SetError(path, "'" + key + "' of operator '" + id + "' is a single value, not a map");
      Entry m = Find(target, key);
      if (m.present && !m.value.IsMap())
        return SetError(path, key + " of operator '" + id + "' at " + loc.Where(m) + " is not a map");
      YAML::Node op = target;
      if (!m.present) op[key] = YAML::Node(YAML::NodeType::Map);
      YAML::Node value;
      try {
        YAML::Node loaded = YAML::Load(text);
        value = loaded.IsNull() ? YAML::Node(YAML::NodeType::Null) : loaded;
      } catch (const YAML::ParserException& e) {
        return SetError(path, "value is not valid YAML: " + e.msg);
      }
      log->Add(value, path);
      YAML::Node map = op[key];
      map[entry] = value;
      return Status::OK();
    }
  } else {
    return SetError(path, "unknown key '" + head +
                              "' (known: job, parallelism, max_parallelism, checkpoint.<key>, state.<key>, operators.<id>.<key>)");
  }

  // A node of its own (never the shared empty Node), so that the log can recognise it.
  const bool inputs = head == "operators" && key == "inputs";
  YAML::Node value(inputs ? YAML::NodeType::Sequence : YAML::NodeType::Null);
  if (inputs) {
    for (size_t start = 0; !text.empty();) {
      size_t comma = text.find(',', start);
      std::string id = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      while (!id.empty() && id.front() == ' ') id.erase(0, 1);
      while (!id.empty() && id.back() == ' ') id.pop_back();
      if (id.empty()) return SetError(path, "empty operator id in the list '" + text + "'");
      YAML::Node item(id);
      log->Add(item, path);
      value.push_back(item);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  } else {
    try {
      YAML::Node loaded = YAML::Load(text);
      if (!loaded.IsNull()) value = loaded;
    } catch (const YAML::ParserException& e) {
      return SetError(path, "value is not valid YAML: " + e.msg);
    }
  }
  log->Add(value, path);
  target[key] = value;
  return Status::OK();
}

// ---- Reading values -------------------------------------------------------------------------

// Reads keys and values of a job tree into a JobSpec, checking each against what it may be.
class JobReader {
 public:
  explicit JobReader(const Locator& loc) : loc_(loc) {}

  Status Read(const YAML::Node& root, JobSpec* spec);
  // Where the parts of each operator are, parallel to spec->operators, for CheckJobGraph.
  const std::vector<OperatorPlaces>& places() const { return places_; }
  const std::string& operators_place() const { return operators_place_; }

 private:
  Status CheckKeys(const YAML::Node& map, const std::vector<std::string>& known, const std::string& where);
  Status ReadCheckpoint(const Entry& e, CheckpointConfig* cp);
  Status ReadRestart(const Entry& e, RestartConfig* rc);
  Status ReadState(const Entry& e, StateBackendOptions* st);
  Status ReadOperator(const YAML::Node& n, const JobSpec& spec, OperatorConfig* op);
  Status ReadParam(const Entry& e, const ParamSpec& p, const std::string& label, std::string* out);
  Status ReadEntries(const Entry& e, const ParamSpec& p, const std::string& label, std::vector<ParamEntry>* out);

  Status Expected(const Entry& e, const std::string& label, const std::string& expected) const {
    return loc_.Error(e, label + " must be " + expected + ", got " + Describe(e.value));
  }
  Status Text(const Entry& e, const std::string& label, const std::string& expected, std::string* out) const {
    if (!e.value.IsScalar()) return Expected(e, label, expected);
    *out = e.value.Scalar();
    return Status::OK();
  }
  Status String(const Entry& e, const std::string& label, bool non_empty, std::string* out) const {
    CAIRN_RETURN_IF_ERROR(Text(e, label, non_empty ? "a non-empty string" : "a string", out));
    if (non_empty && out->empty()) return Expected(e, label, "a non-empty string");
    return Status::OK();
  }
  Status Int(const Entry& e, const std::string& label, int64_t min, int64_t max, int64_t* out) const {
    std::string expected = "an integer >= " + std::to_string(min);
    if (max != kUint32Max && max != std::numeric_limits<int64_t>::max())
      expected = "an integer from " + std::to_string(min) + " to " + std::to_string(max);
    std::string text;
    CAIRN_RETURN_IF_ERROR(Text(e, label, expected, &text));
    if (!ParseInt(text, out) || *out < min || *out > max) return Expected(e, label, expected);
    return Status::OK();
  }
  Status U32(const Entry& e, const std::string& label, int64_t min, uint32_t* out) const {
    int64_t v = 0;
    CAIRN_RETURN_IF_ERROR(Int(e, label, min, kUint32Max, &v));
    *out = static_cast<uint32_t>(v);
    return Status::OK();
  }
  Status Bytes(const Entry& e, const std::string& label, uint64_t min, uint64_t* out) const {
    std::string expected = std::string(kBytesForms) + ", at least " + std::to_string(min);
    std::string text;
    CAIRN_RETURN_IF_ERROR(Text(e, label, expected, &text));
    if (!ParseBytes(text, out) || *out < min) return Expected(e, label, expected);
    return Status::OK();
  }
  Status Duration(const Entry& e, const std::string& label, bool positive, Millis* out) const {
    std::string expected = positive ? std::string(kDurationForms) + " > 0" : kDurationForms;
    std::string text;
    CAIRN_RETURN_IF_ERROR(Text(e, label, expected, &text));
    if (!ParseDuration(text, out) || (positive && out->count() == 0)) return Expected(e, label, expected);
    return Status::OK();
  }

  const Locator& loc_;
  std::vector<OperatorPlaces> places_;
  std::string operators_place_;
};

Status JobReader::CheckKeys(const YAML::Node& map, const std::vector<std::string>& known, const std::string& where) {
  std::map<std::string, YAML::Node> seen;
  for (auto it = map.begin(); it != map.end(); ++it) {
    const YAML::Node k = it->first;  // a copy: `it->` returns a temporary proxy
    if (!k.IsScalar()) return loc_.Error(k, "a key " + where + " must be a name, got " + Describe(k));
    const std::string& name = k.Scalar();
    if (!Contains(known, name))
      return loc_.Error(k, "unknown key '" + name + "' " + where + " (known keys: " + Join(known) + ")");
    auto [first, inserted] = seen.emplace(name, k);
    if (!inserted)
      return loc_.Error(k, "duplicate key '" + name + "' " + where + " (first at " + loc_.Where(first->second) + ")");
  }
  return Status::OK();
}

Status JobReader::Read(const YAML::Node& root, JobSpec* spec) {
  CAIRN_RETURN_IF_ERROR(CheckKeys(root, kTopKeys, "at top level"));

  Entry job = Find(root, "job");
  if (!job.present) return loc_.Error(root, "missing required key 'job' (the job name)");
  CAIRN_RETURN_IF_ERROR(String(job, "job", true, &spec->name));

  if (Entry e = Find(root, "max_parallelism"); e.present) {
    int64_t v = 0;
    CAIRN_RETURN_IF_ERROR(Int(e, "max_parallelism", 1, kMaxMaxParallelism, &v));
    spec->max_parallelism = static_cast<uint32_t>(v);
  }
  if (Entry e = Find(root, "parallelism"); e.present) {
    CAIRN_RETURN_IF_ERROR(U32(e, "parallelism", 1, &spec->parallelism));
    if (spec->parallelism > spec->max_parallelism)
      return loc_.Error(e, "parallelism " + std::to_string(spec->parallelism) + " is greater than max_parallelism " +
                               std::to_string(spec->max_parallelism));
  }
  if (Entry e = Find(root, "checkpoint"); e.present) CAIRN_RETURN_IF_ERROR(ReadCheckpoint(e, &spec->checkpoint));
  if (Entry e = Find(root, "restart"); e.present) CAIRN_RETURN_IF_ERROR(ReadRestart(e, &spec->restart));
  if (Entry e = Find(root, "state"); e.present) CAIRN_RETURN_IF_ERROR(ReadState(e, &spec->state));

  Entry ops = Find(root, "operators");
  if (!ops.present) return loc_.Error(root, "missing required key 'operators' (the list of operators)");
  if (!ops.value.IsSequence() || ops.value.size() == 0)
    return Expected(ops, "operators", "a non-empty list of operators");
  operators_place_ = loc_.Where(ops);
  std::map<std::string, YAML::Node> first_id;
  for (const YAML::Node& n : ops.value) {
    OperatorConfig op;
    CAIRN_RETURN_IF_ERROR(ReadOperator(n, *spec, &op));
    const YAML::Node id_node = Find(n, "id").value;
    auto [first, inserted] = first_id.emplace(op.id, id_node);
    if (!inserted)
      return loc_.Error(id_node, "duplicate operator id '" + op.id + "' (first defined at " +
                                     loc_.Where(first->second) + ")");
    spec->operators.push_back(std::move(op));
  }
  return Status::OK();
}

Status JobReader::ReadState(const Entry& e, StateBackendOptions* st) {
  if (!e.value.IsMap()) return Expected(e, "state", "a map (keys: " + Join(kStateKeys) + ")");
  const YAML::Node& m = e.value;
  CAIRN_RETURN_IF_ERROR(CheckKeys(m, kStateKeys, "in state"));
  if (Entry v = Find(m, "backend"); v.present) {
    const char* expected = "one of heap, rocksdb";
    std::string backend;
    CAIRN_RETURN_IF_ERROR(Text(v, "state.backend", expected, &backend));
    if (backend == "heap") st->kind = StateBackendOptions::Kind::kHeap;
    else if (backend == "rocksdb") st->kind = StateBackendOptions::Kind::kRocksDb;
    else return Expected(v, "state.backend", expected);
  }
  if (Entry v = Find(m, "changelog"); v.present) {
    std::string text;
    CAIRN_RETURN_IF_ERROR(Text(v, "state.changelog", "a boolean (true or false)", &text));
    if (!ParseBool(text, &st->changelog)) return Expected(v, "state.changelog", "a boolean (true or false)");
  }
  if (Entry v = Find(m, "materialize_interval"); v.present) {
    Millis d{0};
    CAIRN_RETURN_IF_ERROR(Duration(v, "state.materialize_interval", true, &d));
    st->materialize_interval_ms = static_cast<uint64_t>(d.count());
  }
  if (Entry v = Find(m, "materialize_ratio"); v.present) {
    const char* expected = "a number >= 0 (0: materialize by state.materialize_interval only)";
    std::string text;
    CAIRN_RETURN_IF_ERROR(Text(v, "state.materialize_ratio", expected, &text));
    double r = 0;
    if (!ParseDouble(text, &r) || !(r >= 0) || r > 1e6) return Expected(v, "state.materialize_ratio", expected);
    st->materialize_ratio = r;
  }
  if (Entry r = Find(m, "rocksdb"); r.present) {
    if (!r.value.IsMap()) return Expected(r, "state.rocksdb", "a map (keys: " + Join(kStateRocksDbKeys) + ")");
    CAIRN_RETURN_IF_ERROR(CheckKeys(r.value, kStateRocksDbKeys, "in state.rocksdb"));
    if (Entry v = Find(r.value, "block_cache"); v.present)
      CAIRN_RETURN_IF_ERROR(Bytes(v, "state.rocksdb.block_cache", 1, &st->block_cache));
    if (Entry v = Find(r.value, "write_buffer"); v.present)
      CAIRN_RETURN_IF_ERROR(Bytes(v, "state.rocksdb.write_buffer", 64 << 10, &st->write_buffer));
  }
  return Status::OK();
}

Status JobReader::ReadRestart(const Entry& e, RestartConfig* rc) {
  if (!e.value.IsMap()) return Expected(e, "restart", "a map (keys: " + Join(kRestartKeys) + ")");
  const YAML::Node& m = e.value;
  CAIRN_RETURN_IF_ERROR(CheckKeys(m, kRestartKeys, "in restart"));
  if (Entry v = Find(m, "strategy"); v.present) {
    const char* expected = "one of none, fixed_delay, exponential_delay";
    std::string st;
    CAIRN_RETURN_IF_ERROR(Text(v, "restart.strategy", expected, &st));
    if (st == "none") rc->strategy = RestartConfig::Strategy::kNone;
    else if (st == "fixed_delay") rc->strategy = RestartConfig::Strategy::kFixedDelay;
    else if (st == "exponential_delay") rc->strategy = RestartConfig::Strategy::kExponentialDelay;
    else return Expected(v, "restart.strategy", expected);
  }
  if (Entry v = Find(m, "attempts"); v.present) CAIRN_RETURN_IF_ERROR(U32(v, "restart.attempts", 1, &rc->attempts));
  if (Entry v = Find(m, "delay"); v.present) CAIRN_RETURN_IF_ERROR(Duration(v, "restart.delay", false, &rc->delay));
  if (Entry v = Find(m, "max_delay"); v.present)
    CAIRN_RETURN_IF_ERROR(Duration(v, "restart.max_delay", false, &rc->max_delay));
  return Status::OK();
}

Status JobReader::ReadCheckpoint(const Entry& e, CheckpointConfig* cp) {
  if (!e.value.IsMap()) return Expected(e, "checkpoint", "a map (keys: " + Join(kCheckpointKeys) + ")");
  const YAML::Node& m = e.value;
  CAIRN_RETURN_IF_ERROR(CheckKeys(m, kCheckpointKeys, "in checkpoint"));
  if (Entry v = Find(m, "interval"); v.present)
    CAIRN_RETURN_IF_ERROR(Duration(v, "checkpoint.interval", false, &cp->interval));
  if (Entry v = Find(m, "mode"); v.present) {
    const char* expected = "one of aligned, unaligned, at_least_once";
    std::string mode;
    CAIRN_RETURN_IF_ERROR(Text(v, "checkpoint.mode", expected, &mode));
    if (mode == "aligned") cp->mode = CheckpointMode::kAligned;
    else if (mode == "unaligned") cp->mode = CheckpointMode::kUnaligned;
    else if (mode == "at_least_once") cp->mode = CheckpointMode::kAtLeastOnce;
    else return Expected(v, "checkpoint.mode", expected);
  }
  if (Entry v = Find(m, "dir"); v.present) CAIRN_RETURN_IF_ERROR(String(v, "checkpoint.dir", true, &cp->dir));
  if (Entry v = Find(m, "savepoint_dir"); v.present)
    CAIRN_RETURN_IF_ERROR(String(v, "checkpoint.savepoint_dir", true, &cp->savepoint_dir));
  if (Entry v = Find(m, "timeout"); v.present)
    CAIRN_RETURN_IF_ERROR(Duration(v, "checkpoint.timeout", true, &cp->timeout));
  if (Entry v = Find(m, "min_pause"); v.present)
    CAIRN_RETURN_IF_ERROR(Duration(v, "checkpoint.min_pause", false, &cp->min_pause));
  if (Entry v = Find(m, "max_concurrent"); v.present)
    CAIRN_RETURN_IF_ERROR(U32(v, "checkpoint.max_concurrent", 1, &cp->max_concurrent));
  if (Entry v = Find(m, "tolerable_failures"); v.present)
    CAIRN_RETURN_IF_ERROR(U32(v, "checkpoint.tolerable_failures", 0, &cp->tolerable_failures));
  if (Entry v = Find(m, "retain"); v.present) CAIRN_RETURN_IF_ERROR(U32(v, "checkpoint.retain", 1, &cp->retain));
  if (Entry v = Find(m, "aligned_timeout"); v.present)
    CAIRN_RETURN_IF_ERROR(Duration(v, "checkpoint.aligned_timeout", false, &cp->aligned_timeout));
  if (Entry v = Find(m, "history"); v.present) CAIRN_RETURN_IF_ERROR(U32(v, "checkpoint.history", 1, &cp->history));
  if (Entry v = Find(m, "max_feedback_backlog"); v.present) {
    int64_t n = 0;
    CAIRN_RETURN_IF_ERROR(Int(v, "checkpoint.max_feedback_backlog", 1, std::numeric_limits<int64_t>::max(), &n));
    cp->max_feedback_backlog = static_cast<uint64_t>(n);
  }
  if (Entry v = Find(m, "max_drain_checkpoints"); v.present)
    CAIRN_RETURN_IF_ERROR(U32(v, "checkpoint.max_drain_checkpoints", 1, &cp->max_drain_checkpoints));
  if (Entry v = Find(m, "inline_state_threshold"); v.present)
    CAIRN_RETURN_IF_ERROR(Bytes(v, "checkpoint.inline_state_threshold", 0, &cp->inline_state_threshold));
  return Status::OK();
}

bool ValidId(const std::string& id) {
  if (id.empty()) return false;
  for (unsigned char c : id)
    if (!std::isalnum(c) && c != '_' && c != '-') return false;
  return true;
}

Status JobReader::ReadOperator(const YAML::Node& n, const JobSpec& spec, OperatorConfig* op) {
  if (!n.IsMap()) return loc_.Error(n, "an operator must be a map with at least id and type, got " + Describe(n));
  Entry id = Find(n, "id");
  Entry type = Find(n, "type");
  // The id as far as it is known, for messages before it is checked.
  std::string what = id.present && id.value.IsScalar() ? "operator '" + id.value.Scalar() + "'" : "operator";
  if (!type.present) return loc_.Error(n, what + " is missing required key 'type' (known types: " + TypeNames() + ")");
  CAIRN_RETURN_IF_ERROR(String(type, "type of " + what, true, &op->type));
  const OperatorType* t = FindOperatorType(op->type);
  if (t == nullptr)
    return loc_.Error(type, what + " has unknown type '" + op->type + "' (known types: " + TypeNames() + ")");
  CAIRN_RETURN_IF_ERROR(CheckKeys(n, OperatorKeys(*t), "in " + what + " of type " + t->name));

  if (!id.present) return loc_.Error(n, "operator of type " + t->name + " is missing required key 'id'");
  CAIRN_RETURN_IF_ERROR(String(id, "id of operator", true, &op->id));
  if (!ValidId(op->id))
    return Expected(id, "an operator id", "made of letters, digits, '_' and '-'");
  what = "operator '" + op->id + "'";

  OperatorPlaces places;
  places.op = places.inputs = places.key_by = loc_.Where(n);
  op->parallelism = spec.parallelism;
  if (Entry e = Find(n, "parallelism"); e.present) {
    CAIRN_RETURN_IF_ERROR(U32(e, "parallelism of " + what, 1, &op->parallelism));
    if (op->parallelism > spec.max_parallelism)
      return loc_.Error(e, what + " has parallelism " + std::to_string(op->parallelism) +
                               ", greater than max_parallelism " + std::to_string(spec.max_parallelism));
  }
  if (Entry e = Find(n, "inputs"); e.present) {
    places.inputs = loc_.Where(e);
    const std::string label = "inputs of " + what;
    const char* expected = "an operator id or a list of operator ids";
    if (e.value.IsScalar()) {
      op->inputs.push_back(e.value.Scalar());
      places.input.push_back(places.inputs);
    } else if (e.value.IsSequence()) {
      for (const YAML::Node& item : e.value) {
        if (item.IsMap()) {
          // {from: ID, partition: rebalance}: a load-balanced edge (docs/configuration.md).
          CAIRN_RETURN_IF_ERROR(CheckKeys(item, kInputKeys, "in an input of " + what));
          Entry from = Find(item, "from");
          if (!from.present)
            return loc_.Error(item, "an input of " + what + " is missing required key 'from' (the operator id it reads)");
          std::string id_from, partition = "forward";
          CAIRN_RETURN_IF_ERROR(String(from, "from of an input of " + what, true, &id_from));
          Entry part = Find(item, "partition");
          if (part.present) {
            CAIRN_RETURN_IF_ERROR(String(part, "partition of an input of " + what, true, &partition));
            if (partition != "rebalance" && partition != "forward")
              return Expected(part, "partition of an input of " + what, "rebalance or forward");
          }
          op->inputs.push_back(id_from);
          op->rebalance_inputs.resize(op->inputs.size(), false);
          op->rebalance_inputs.back() = partition == "rebalance";
          places.input.push_back(loc_.Where(part.present ? part : from));
          continue;
        }
        if (!item.IsScalar())
          return loc_.Error(item, label + " must be operator ids, got " + Describe(item));
        op->inputs.push_back(item.Scalar());
        places.input.push_back(loc_.Where(item));
      }
      op->rebalance_inputs.resize(op->inputs.size(), false);
    } else {
      return Expected(e, label, expected);
    }
  }
  if (Entry e = Find(n, "key_by"); e.present) {
    places.key_by = loc_.Where(e);
    const std::string label = "key_by of " + what;
    std::vector<std::string> fields;
    if (e.value.IsScalar()) {
      fields.push_back(e.value.Scalar());
    } else if (e.value.IsSequence() && e.value.size() > 0) {
      for (const YAML::Node& item : e.value) {
        if (!item.IsScalar()) return loc_.Error(item, label + " must be field names, got " + Describe(item));
        fields.push_back(item.Scalar());
      }
    } else {
      return Expected(e, label, "a field name or a list of field names");
    }
    std::set<std::string> seen;
    for (const auto& f : fields) {
      if (f.empty()) return Expected(e, label, "non-empty field names");
      if (!seen.insert(f).second) return loc_.Error(e, label + " names field '" + f + "' twice");
    }
    op->key_by = std::move(fields);
  }
  if (Entry e = Find(n, "watermark"); e.present) {
    const std::string label = "watermark of " + what;
    if (!e.value.IsMap()) return Expected(e, label, "a map with field, max_out_of_orderness and idle_timeout");
    CAIRN_RETURN_IF_ERROR(CheckKeys(e.value, kWatermarkKeys, "in the watermark of " + what));
    WatermarkSpec& w = op->watermark;
    w.enabled = true;
    Entry f = Find(e.value, "field");
    if (!f.present) return loc_.Error(e, label + " is missing required key 'field' (the event-time field)");
    CAIRN_RETURN_IF_ERROR(String(f, "field of the " + label, true, &w.field));
    w.field_location = loc_.Where(f);
    if (Entry d = Find(e.value, "max_out_of_orderness"); d.present)
      CAIRN_RETURN_IF_ERROR(Duration(d, "max_out_of_orderness of the " + label, false, &w.max_out_of_orderness));
    if (Entry d = Find(e.value, "idle_timeout"); d.present)
      CAIRN_RETURN_IF_ERROR(Duration(d, "idle_timeout of the " + label, false, &w.idle_timeout));
  }
  for (const ParamSpec& p : t->params) {
    Entry e = Find(n, p.name);
    if (!e.present) {
      if (p.required)
        return loc_.Error(n, what + " (type " + t->name + ") is missing required parameter '" + p.name + "' (" +
                                 ParamTypeName(p.type) + ": " + p.doc + ")");
      op->params[p.name] = p.default_value;
      continue;
    }
    op->places[p.name] = loc_.Where(e);
    const std::string label = "parameter '" + p.name + "' of " + what;
    if (p.type == ParamType::kMap || p.type == ParamType::kList || p.type == ParamType::kMapOfLists) {
      CAIRN_RETURN_IF_ERROR(ReadEntries(e, p, label, &op->entries[p.name]));
      continue;
    }
    CAIRN_RETURN_IF_ERROR(ReadParam(e, p, label, &op->params[p.name]));
  }
  op->location = places.op;
  if (t->input_keys) {
    if (!op->key_by.empty())
      return Status::InvalidArgument(places.key_by + ": " + what + " (type " + t->name +
                                     ") names the key fields of each input in its parameters, not in key_by");
    CAIRN_RETURN_IF_ERROR(t->input_keys(op));
  }
  places_.push_back(std::move(places));
  return Status::OK();
}

Status JobReader::ReadParam(const Entry& e, const ParamSpec& p, const std::string& label, std::string* out) {
  switch (p.type) {
    case ParamType::kString: return String(e, label, p.required, out);
    case ParamType::kInt: {
      int64_t v = 0;
      CAIRN_RETURN_IF_ERROR(Int(e, label, p.min_int, std::numeric_limits<int64_t>::max(), &v));
      *out = std::to_string(v);
      return Status::OK();
    }
    case ParamType::kDouble: {
      double v = 0;
      CAIRN_RETURN_IF_ERROR(Text(e, label, "a number", out));
      if (!ParseDouble(*out, &v)) return Expected(e, label, "a number");
      return Status::OK();
    }
    case ParamType::kDuration: {
      Millis v{0};
      CAIRN_RETURN_IF_ERROR(Duration(e, label, false, &v));
      *out = e.value.Scalar();
      return Status::OK();
    }
    case ParamType::kMap:
    case ParamType::kList:
    case ParamType::kMapOfLists:
      return Status::Internal("map and list parameters are read by ReadEntries");
    case ParamType::kBool: {
      bool v = false;
      CAIRN_RETURN_IF_ERROR(Text(e, label, "a boolean (true or false)", out));
      if (!ParseBool(*out, &v)) return Expected(e, label, "a boolean (true or false)");
      *out = v ? "true" : "false";
      return Status::OK();
    }
  }
  return Status::Internal("unknown parameter type");
}

Status JobReader::ReadEntries(const Entry& e, const ParamSpec& p, const std::string& label,
                              std::vector<ParamEntry>* out) {
  if (p.type == ParamType::kList) {
    if (e.value.IsScalar()) {
      out->push_back(ParamEntry{"", e.value.Scalar(), loc_.Where(e)});
      return Status::OK();
    }
    if (!e.value.IsSequence()) return Expected(e, label, "a value or a list of values");
    for (const YAML::Node& item : e.value) {
      if (!item.IsScalar()) return loc_.Error(item, label + " must be a list of values, got " + Describe(item));
      out->push_back(ParamEntry{"", item.Scalar(), loc_.Where(item)});
    }
    return Status::OK();
  }
  if (!e.value.IsMap()) return Expected(e, label, "a map");
  std::set<std::string> seen;
  for (auto it = e.value.begin(); it != e.value.end(); ++it) {
    if (!it->first.IsScalar() || it->first.Scalar().empty())
      return loc_.Error(it->first, label + " must have non-empty names as keys, got " + Describe(it->first));
    if (!seen.insert(it->first.Scalar()).second)
      return loc_.Error(it->first, label + " has key '" + it->first.Scalar() + "' twice");
    if (p.type == ParamType::kMapOfLists && it->second.IsSequence()) {
      // A copy: `it->` gives a temporary, which a range-for over its member would outlive.
      const YAML::Node values = it->second;
      if (values.size() == 0)
        return loc_.Error(values, label + ": the list of '" + it->first.Scalar() + "' is empty");
      for (const YAML::Node& item : values) {
        if (!item.IsScalar())
          return loc_.Error(item, label + ": the values of '" + it->first.Scalar() + "' must be scalars, got " +
                                      Describe(item));
        out->push_back(ParamEntry{it->first.Scalar(), item.Scalar(), loc_.Where(item)});
      }
      continue;
    }
    if (!it->second.IsScalar())
      return loc_.Error(it->second, label + ": the value of '" + it->first.Scalar() + "' must be " +
                                        (p.type == ParamType::kMapOfLists ? "a scalar or a list of scalars" : "a scalar") +
                                        ", got " + Describe(it->second));
    out->push_back(ParamEntry{it->first.Scalar(), it->second.Scalar(), loc_.Where(it->second)});
  }
  return Status::OK();
}

// Where a document of a YAML stream starts. yaml-cpp 0.7's LoadAll never returns on some
// malformed input (a stray ',' at the start yields empty documents forever, the parser never
// moving on), so the loader walks the stream itself, one document at a time.
class DocumentStart : public YAML::EventHandler {
 public:
  YAML::Mark mark;       // where the document starts
  YAML::Mark root_mark;  // where its root node is (as the node's Mark() would say)
  void OnDocumentStart(const YAML::Mark& m) override { mark = m; }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark& m, YAML::anchor_t) override { Node(m); }
  void OnAlias(const YAML::Mark& m, YAML::anchor_t) override { Node(m); }
  void OnScalar(const YAML::Mark& m, const std::string&, YAML::anchor_t, const std::string&) override { Node(m); }
  void OnSequenceStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    Node(m);
  }
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark& m, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
    Node(m);
  }
  void OnMapEnd() override {}

 private:
  void Node(const YAML::Mark& m) {
    if (!seen_) root_mark = m;
    seen_ = true;
  }
  bool seen_ = false;
};

std::string MarkText(const std::string& name, const YAML::Mark& m) {
  return name + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
}

Status Load(const std::string& yaml, const std::string& name, const std::vector<std::string>& overrides,
            JobSpec* out) {
  OverrideLog log;
  Locator loc(name, &log);
  YAML::Node root;
  try {
    std::istringstream in(yaml);
    YAML::Parser parser(in);
    DocumentStart first, second;
    if (!parser.HandleNextDocument(first)) return Status::InvalidArgument(name + ": empty job file");
    if (parser.HandleNextDocument(second)) {
      if (second.mark.pos == first.mark.pos) {
        const char c = static_cast<size_t>(first.mark.pos) < yaml.size() ? yaml[first.mark.pos] : ' ';
        return Status::InvalidArgument(MarkText(name, first.mark) + ": YAML syntax error: unexpected '" +
                                       std::string(1, c) + "'");
      }
      return Status::InvalidArgument(MarkText(name, second.root_mark) +
                                     ": a job file holds one YAML document; found another one here");
    }
    root = YAML::Load(yaml);
  } catch (const YAML::ParserException& e) {
    return Status::InvalidArgument(MarkText(name, e.mark) + ": YAML syntax error: " + e.msg);
  }
  if (root.IsNull()) return Status::InvalidArgument(name + ": empty job file");
  if (!root.IsMap())
    return loc.Error(root, "a job file must be a map with keys " + Join(kTopKeys) + ", got " + Describe(root));

  try {
    for (const std::string& o : overrides) CAIRN_RETURN_IF_ERROR(ApplyOverride(o, loc, root, &log));
    JobSpec spec;
    spec.source_file = name;
    JobReader reader(loc);
    CAIRN_RETURN_IF_ERROR(reader.Read(root, &spec));
    CAIRN_RETURN_IF_ERROR(CheckJobGraph(spec, reader.places(), reader.operators_place()));
    CAIRN_RETURN_IF_ERROR(DeriveSchemas(&spec, reader.places()));
    *out = std::move(spec);
  } catch (const YAML::Exception& e) {  // a bug here rather than bad input, but say where
    return Status::InvalidArgument(name + ": " + e.what());
  }
  return Status::OK();
}

}  // namespace

bool ParseBytes(const std::string& text, uint64_t* out) {
  size_t i = 0;
  uint64_t n = 0;
  while (i < text.size() && text[i] >= '0' && text[i] <= '9') {
    if (n > (uint64_t{1} << 62) / 10) return false;
    n = n * 10 + static_cast<uint64_t>(text[i] - '0');
    ++i;
  }
  if (i == 0) return false;
  const std::string unit = text.substr(i);
  uint64_t mult = 1;
  if (unit.empty() || unit == "B") mult = 1;
  else if (unit == "KB" || unit == "KiB") mult = uint64_t{1} << 10;
  else if (unit == "MB" || unit == "MiB") mult = uint64_t{1} << 20;
  else if (unit == "GB" || unit == "GiB") mult = uint64_t{1} << 30;
  else return false;
  if (n > (uint64_t{1} << 62) / mult) return false;
  *out = n * mult;
  return true;
}

bool ParseDuration(const std::string& text, Millis* out) {
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0) return false;
  int64_t n = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + digits, n);
  if (ec != std::errc()) return false;
  const std::string_view unit = std::string_view(text).substr(digits);
  int64_t scale = 0;
  if (unit.empty() || unit == "ms") scale = 1;
  else if (unit == "s") scale = 1000;
  else if (unit == "m") scale = 60 * 1000;
  else if (unit == "h") scale = 60 * 60 * 1000;
  else return false;
  if (n > std::numeric_limits<int64_t>::max() / scale) return false;
  *out = Millis(n * scale);
  return true;
}

Status LoadJobFromString(const std::string& yaml, const std::string& name,
                         const std::vector<std::string>& overrides, JobSpec* out) {
  return Load(yaml, name, overrides, out);
}

Status LoadJob(const std::string& path, const std::vector<std::string>& overrides, JobSpec* out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  std::string text;
  int err = 0;
  if (fd < 0) {
    err = errno;
  } else {
    char buf[65536];
    for (;;) {
      ssize_t n = ::read(fd, buf, sizeof buf);
      if (n > 0) {
        text.append(buf, static_cast<size_t>(n));
      } else if (n == 0) {
        break;
      } else if (errno != EINTR) {
        err = errno;
        break;
      }
    }
    ::close(fd);
  }
  if (err != 0) {
    std::string msg = path + ": cannot read: " + std::strerror(err);
    return err == ENOENT ? Status::NotFound(std::move(msg)) : Status::InvalidArgument(std::move(msg));
  }
  return Load(text, path, overrides, out);
}

}  // namespace cairn
