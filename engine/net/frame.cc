#include "engine/net/frame.h"

#include "engine/base/coding.h"
#include "engine/dataflow/record_codec.h"

namespace cairn::net {
namespace {

void PutFixed32(std::string* dst, uint32_t v) {
  char b[4];
  for (int i = 0; i < 4; i++) b[i] = static_cast<char>((v >> (8 * i)) & 0xff);
  dst->append(b, 4);
}

uint32_t GetFixed32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; i++) v |= static_cast<uint32_t>(static_cast<uint8_t>(p[i])) << (8 * i);
  return v;
}

// Starts a frame; FinishFrame fills in its length once the payload is appended.
size_t BeginFrame(FrameType t, uint32_t channel, std::string* out) {
  out->push_back(static_cast<char>(t));
  PutFixed32(out, channel);
  size_t at = out->size();
  PutFixed32(out, 0);
  return at;
}

void FinishFrame(size_t at, std::string* out) {
  uint32_t len = static_cast<uint32_t>(out->size() - at - 4);
  for (int i = 0; i < 4; i++) (*out)[at + i] = static_cast<char>((len >> (8 * i)) & 0xff);
}

void PutBarrier(const Barrier& b, std::string* out) {
  PutFixed64(out, b.id);
  PutFixed64(out, static_cast<uint64_t>(b.trigger_time_ms));
  out->push_back(static_cast<char>(b.mode));
  PutFixed64(out, static_cast<uint64_t>(b.aligned_timeout_ms));
}

bool GetBarrier(Decoder* d, Barrier* b) {
  uint64_t id, t, timeout;
  uint8_t mode;
  if (!d->GetFixed64(&id) || !d->GetFixed64(&t) || !d->GetByte(&mode) || !d->GetFixed64(&timeout)) return false;
  if (mode > static_cast<uint8_t>(CheckpointMode::kAtLeastOnce)) return false;
  b->id = id;
  b->trigger_time_ms = static_cast<int64_t>(t);
  b->mode = static_cast<CheckpointMode>(mode);
  b->aligned_timeout_ms = static_cast<int64_t>(timeout);
  return true;
}

Status Malformed(const char* what) { return Status::Corruption(std::string("malformed ") + what + " frame"); }

}  // namespace

void AppendElementFrame(uint32_t channel, const StreamElement& e, std::string* out) {
  size_t at = 0;
  switch (e.kind) {
    case StreamElement::Kind::kBatch: {
      at = BeginFrame(FrameType::kBatch, channel, out);
      const RecordBatch& b = *e.batch;
      PutFixed64(out, b.size());
      EncodeRows(b, out);
      break;
    }
    case StreamElement::Kind::kBarrier:
      at = BeginFrame(FrameType::kBarrier, channel, out);
      PutBarrier(e.barrier, out);
      break;
    case StreamElement::Kind::kWatermark:
      at = BeginFrame(FrameType::kWatermark, channel, out);
      PutFixed64(out, static_cast<uint64_t>(e.watermark.timestamp));
      out->push_back(e.watermark.idle ? 1 : 0);
      break;
    case StreamElement::Kind::kEndOfInput: at = BeginFrame(FrameType::kEndOfInput, channel, out); break;
    case StreamElement::Kind::kEndOfStream: at = BeginFrame(FrameType::kEndOfStream, channel, out); break;
  }
  FinishFrame(at, out);
}

void AppendPriorityFrame(uint32_t channel, const PriorityEvent& e, std::string* out) {
  size_t at = BeginFrame(FrameType::kPriority, channel, out);
  out->push_back(static_cast<char>(e.kind));
  PutBarrier(e.barrier, out);
  PutFixed64(out, e.position);
  FinishFrame(at, out);
}

void AppendCreditFrame(uint32_t channel, uint64_t batches, std::string* out) {
  size_t at = BeginFrame(FrameType::kCredit, channel, out);
  PutFixed64(out, batches);
  FinishFrame(at, out);
}

void AppendHelloFrame(uint32_t worker, std::string* out) { FinishFrame(BeginFrame(FrameType::kHello, worker, out), out); }

Status DecodeFrameHeader(std::string_view bytes, FrameHeader* h) {
  if (bytes.size() < kFrameHeaderBytes) return Malformed("short");
  uint8_t t = static_cast<uint8_t>(bytes[0]);
  if (t < static_cast<uint8_t>(FrameType::kHello) || t > static_cast<uint8_t>(FrameType::kCredit))
    return Status::Corruption("unknown frame type " + std::to_string(t));
  h->type = static_cast<FrameType>(t);
  h->channel = GetFixed32(bytes.data() + 1);
  h->length = GetFixed32(bytes.data() + 5);
  if (h->length > kMaxFramePayload)
    return Status::Corruption("frame of " + std::to_string(h->length) + " bytes is past the limit of " +
                              std::to_string(kMaxFramePayload));
  return Status::OK();
}

Status DecodeElement(const FrameHeader& h, std::string_view payload, std::unique_ptr<RecordBatch> batch,
                     StreamElement* e) {
  Decoder d(payload);
  switch (h.type) {
    case FrameType::kBatch: {
      uint64_t rows;
      if (!d.GetFixed64(&rows) || rows > payload.size()) return Malformed("batch");
      for (uint64_t r = 0; r < rows; r++)
        if (!DecodeRow(&d, batch.get())) return Malformed("batch");
      *e = StreamElement::OfBatch(std::move(batch));
      break;
    }
    case FrameType::kBarrier: {
      Barrier b;
      if (!GetBarrier(&d, &b)) return Malformed("barrier");
      *e = StreamElement::OfBarrier(b);
      break;
    }
    case FrameType::kWatermark: {
      uint64_t ts;
      uint8_t idle;
      if (!d.GetFixed64(&ts) || !d.GetByte(&idle) || idle > 1) return Malformed("watermark");
      *e = StreamElement::OfWatermark(Watermark{static_cast<int64_t>(ts), idle == 1});
      break;
    }
    case FrameType::kEndOfInput: *e = StreamElement::EndOfInput(); break;
    case FrameType::kEndOfStream: *e = StreamElement::EndOfStream(); break;
    default: return Status::Corruption("not a data-lane frame");
  }
  if (!d.done()) return Malformed("oversized");
  return Status::OK();
}

Status DecodePriority(std::string_view payload, PriorityEvent* e) {
  Decoder d(payload);
  uint8_t kind;
  if (!d.GetByte(&kind) || kind > static_cast<uint8_t>(PriorityEvent::Kind::kAnnouncement) ||
      !GetBarrier(&d, &e->barrier) || !d.GetFixed64(&e->position) || !d.done())
    return Malformed("priority");
  e->kind = static_cast<PriorityEvent::Kind>(kind);
  return Status::OK();
}

Status DecodeCredit(std::string_view payload, uint64_t* batches) {
  Decoder d(payload);
  if (!d.GetFixed64(batches) || !d.done()) return Malformed("credit");
  return Status::OK();
}

}  // namespace cairn::net
