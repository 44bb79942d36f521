// StridedPosition is the read position of a source whose subtask i of p produces the items
// i, i+p, i+2p, ... of a deterministic sequence: the index of the next item, restored from and
// saved to the subtask's operator state.
//
// Rescaling (split list state, docs/state.md): the items of a subtask's state are arithmetic
// progressions "next, next+step, ..." still to produce; an old subtask's state is one such
// progression (next, its old parallelism). A subtask restored from a rescaled checkpoint
// produces its progressions one after another and saves what is left of them as a
// progression list.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "engine/base/coding.h"
#include "engine/dataflow/operator.h"
#include "state/operator_state_redistribution.h"

namespace cairn {

class StridedPosition {
 public:
  static constexpr uint64_t kListMagic = 0x3147525072747363ull;  // "cstrPRG1"

  // Starts at the subtask's first item, or where the restored checkpoint left off. `what`
  // names the position in the message about damaged state ("generator position").
  Status Open(const OperatorContext& ctx, const std::string& what) {
    step_ = ctx.parallelism;
    next_ = ctx.subtask;
    if (!ctx.restored_operator_state) return Status::OK();
    if (IsList(*ctx.restored_operator_state)) {
      std::vector<Progression> list;
      if (!DecodeList(*ctx.restored_operator_state, &list))
        return Status::Corruption("operator " + ctx.operator_id + ": damaged " + what + " in the checkpoint");
      list_ = true;
      rest_.assign(list.begin(), list.end());
      next_ = 0;
      step_ = 1;
      exhausted_ = !Pop();
      return Status::OK();
    }
    Decoder d(*ctx.restored_operator_state);
    uint64_t next;
    if (!d.GetFixed64(&next) || !d.done())
      return Status::Corruption("operator " + ctx.operator_id + ": damaged " + what + " in the checkpoint");
    next_ = static_cast<int64_t>(next);
    return Status::OK();
  }
  void Snapshot(OperatorSnapshot* snap) const {
    if (!list_) {
      PutFixed64(&snap->operator_state, static_cast<uint64_t>(next_));
      return;
    }
    std::vector<Progression> left;
    if (!exhausted_) left.push_back(Progression{next_, step_});
    left.insert(left.end(), rest_.begin(), rest_.end());
    snap->operator_state = EncodeList(left);
  }
  // True when there is a next item below `limit` (moving on to the next progression when the
  // current one reached it); next() is then that item.
  bool Valid(int64_t limit) {
    if (!list_) return next_ < limit;
    while (!exhausted_ && next_ >= limit) exhausted_ = !Pop();
    return !exhausted_;
  }
  int64_t next() const { return next_; }
  void Advance() { next_ += step_; }

  // `cairn state dump` (OperatorType::describe_state): "next=N" (the next item; the subtask's
  // step is its parallelism) or, restored from a rescaled checkpoint, "progressions=N/S,...".
  static bool Describe(std::string_view bytes, std::string* text) {
    std::vector<Progression> list;
    if (IsList(bytes)) {
      if (!DecodeList(bytes, &list)) return false;
      *text = "progressions=";
      for (size_t i = 0; i < list.size(); ++i)
        *text += (i ? "," : "") + std::to_string(list[i].next) + "/" + std::to_string(list[i].step);
      return true;
    }
    Decoder d(bytes);
    uint64_t next;
    if (!d.GetFixed64(&next) || !d.done()) return false;
    *text = "next=" + std::to_string(next);
    return true;
  }

  static OperatorStateRule Rule() {
    OperatorStateRule r;
    r.mode = StateRedistribution::kSplit;
    r.to_items = [](std::string_view bytes, uint32_t, uint32_t parallelism, std::vector<std::string>* items) {
      std::vector<Progression> list;
      if (IsList(bytes)) {
        if (!DecodeList(bytes, &list)) return Status::Corruption("damaged position list");
      } else {
        Decoder d(bytes);
        uint64_t next;
        if (!d.GetFixed64(&next) || !d.done()) return Status::Corruption("damaged position");
        list.push_back(Progression{static_cast<int64_t>(next), static_cast<int64_t>(parallelism)});
      }
      for (const Progression& p : list) items->push_back(EncodeList({p}));
      return Status::OK();
    };
    // Scaling up: next, next+step, ... splits into the even and the odd terms.
    r.halve = [](const std::string& item, std::string* first, std::string* second) {
      std::vector<Progression> list;
      if (!DecodeList(item, &list) || list.size() != 1 || list[0].step > (int64_t{1} << 31)) return false;
      const Progression p = list[0];
      *first = EncodeList({Progression{p.next, 2 * p.step}});
      *second = EncodeList({Progression{p.next + p.step, 2 * p.step}});
      return true;
    };
    r.from_items = [](const std::vector<std::string>& items) {
      std::vector<Progression> list;
      for (const std::string& it : items) DecodeList(it, &list);
      return EncodeList(list);
    };
    return r;
  }

 private:
  struct Progression {
    int64_t next;
    int64_t step;
  };
  bool Pop() {
    if (rest_.empty()) return false;
    next_ = rest_.front().next;
    step_ = rest_.front().step;
    rest_.pop_front();
    return true;
  }
  static bool IsList(std::string_view bytes) {
    uint64_t magic = 0;
    return Decoder(bytes).GetFixed64(&magic) && magic == kListMagic;
  }
  // Appends the progressions of `bytes` to *out.
  static bool DecodeList(std::string_view bytes, std::vector<Progression>* out) {
    Decoder d(bytes);
    uint64_t magic, n;
    if (!d.GetFixed64(&magic) || magic != kListMagic || !d.GetFixed64(&n)) return false;
    for (uint64_t i = 0; i < n; ++i) {
      uint64_t next, step;
      if (!d.GetFixed64(&next) || !d.GetFixed64(&step) || step == 0 || step > (1ull << 32)) return false;
      out->push_back(Progression{static_cast<int64_t>(next), static_cast<int64_t>(step)});
    }
    return d.done();
  }
  static std::string EncodeList(const std::vector<Progression>& list) {
    std::string s;
    PutFixed64(&s, kListMagic);
    PutFixed64(&s, list.size());
    for (const Progression& p : list) {
      PutFixed64(&s, static_cast<uint64_t>(p.next));
      PutFixed64(&s, static_cast<uint64_t>(p.step));
    }
    return s;
  }

  bool list_ = false;       // restored from a rescaled checkpoint: the state is a progression list
  bool exhausted_ = false;  // list: every progression reached the limit
  std::deque<Progression> rest_;  // list: the progressions after the current one
  int64_t step_ = 1;
  int64_t next_ = 0;
};

}  // namespace cairn
